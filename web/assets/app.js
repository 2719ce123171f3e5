// autoccl dashboard: renders /api/v1/state, refreshed (throttled) on every
// event of the /api/v1/events stream. No libraries, no network but this host.
// With ?poll=1 it polls the state instead of holding the event stream open,
// so headless captures (chromium --virtual-time-budget) can finish.
// One view per host: /api/v1/host lists the host's processes; the state of
// each sibling is read from its own port on this host name (its endpoint
// answers this page's Origin), and the page shows them all with the host's
// totals. A sibling that does not answer is shown as such, never as zeros.
'use strict';

const REFRESH_MIN_MS = 500;    // at most two state fetches a second
const POLL_MS = 10000;         // fallback refresh when no events arrive
const POLL_ONLY_MS = 1000;     // ?poll=1: refresh period, no stream
const RECONNECT_MS = 3000;     // when the browser gave up on the stream
const HOST_MS = 10000;         // re-read the host's process list this often
const SIBLING_TIMEOUT_MS = 2000; // a sibling slower than this is "no answer"
const POLL_ONLY = new URLSearchParams(window.location.search).get('poll') === '1';

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2',
                 '#ca8a04', '#db2777', '#4b5563', '#65a30d', '#7c3aed', '#0d9488'];
const $ = (id) => document.getElementById(id);

let state = null;    // the merged view of every answering process of the host
let procs = [];      // this host's processes: {local_rank, pid, port, self, ok, error, state}
let hostReadAt = -Infinity;
let selectedKey = null;
let refreshTimer = null;
let lastRefresh = 0;
const subspaceColours = new Map();

function wkey(w) { return [w.comm, w.rank, w.collective, w.bytes, w.pipe_ops].join('|'); }
function isNum(v) { return typeof v === 'number' && isFinite(v); }
function dash(v, f) { return v === null || v === undefined ? '—' : f(v); }

function fmtBytes(b) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (Number.isInteger(b) ? b : b.toFixed(1)) + ' ' + u[i];
}
function fmtBw(v) { return (v / 1e9).toFixed(v >= 1e10 ? 1 : 2) + ' GB/s'; }
function fmtPct(v) { return (100 * v).toFixed(0) + '%'; }
function fmtSecs(v) {
  if (v < 1e-3) return (v * 1e6).toFixed(0) + ' µs';
  if (v < 1) return (v * 1e3).toFixed(1) + ' ms';
  return v.toFixed(2) + ' s';
}
function fmtSigned(v) { return (v > 0 ? '+' : v < 0 ? '−' : '') + fmtSecs(Math.abs(v)); }

// Totals over the workloads shown. Net value: sums of the per-workload
// figures (null when none is known). Speedup: the mean of the workloads'
// speedups weighted by the time their calls take with NCCL's choice
// (calls x baseline_seconds), as autoccl-top's header; workloads missing any
// input are left out.
function totals(ws) {
  let saved = null, cost = null, num = 0, den = 0, conv = 0, keptNccl = 0;
  for (const w of ws) {
    if (isNum(w.time_saved_seconds)) saved = (saved || 0) + w.time_saved_seconds;
    if (isNum(w.exploration_cost_seconds)) cost = (cost || 0) + w.exploration_cost_seconds;
    if (isNum(w.speedup) && isNum(w.baseline_seconds) && w.baseline_seconds > 0 && w.calls > 0) {
      num += w.calls * w.baseline_seconds * w.speedup;
      den += w.calls * w.baseline_seconds;
    }
    if (w.state === 'converged') conv++; // not still validating or refining
    if (keptNccl_(w)) keptNccl++;
  }
  return { saved, cost, speedup: den > 0 ? num / den : null, conv, keptNccl };
}
// A finished search that kept NCCL's own choice.
function keptNccl_(w) {
  return w.decided && w.best && w.best.algo === 'NCCL' && w.candidates_evaluated > 0;
}
function subspaceOf(c) { return !c || c.algo === 'NCCL' ? 'NCCL default' : c.algo + '/' + c.proto; }
function fmtCand(c) {
  if (!c) return '—';
  if (c.algo === 'NCCL') return 'NCCL default';
  return c.algo + '/' + c.proto + (c.channels > 0 ? ' ' + c.channels + 'ch' : '') + fmtChunk(c);
}
// Chunk size as a scale of NCCL's own (tuner v6, NCCL 2.30); '' when NCCL's.
function fmtChunk(c) {
  const k = c.chunk_log2 || 0;
  return k === 0 ? '' : ' chunk x' + (k < 0 ? '1/' + Math.pow(2, -k) : Math.pow(2, k));
}
function colourOf(subspace) {
  if (!subspaceColours.has(subspace))
    subspaceColours.set(subspace, subspace === 'NCCL default' ? '#111827'
                        : PALETTE[subspaceColours.size % PALETTE.length]);
  return subspaceColours.get(subspace);
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function commName(id) {
  const c = (state.communicators || []).find((x) => x.id === id);
  return c && c.name ? c.name : id;
}

function renderTable() {
  const tbody = $('workloads').tBodies[0];
  const rows = [];
  for (const w of state.workloads || []) {
    const tr = document.createElement('tr');
    const key = wkey(w);
    tr.dataset.key = key;
    tr.className = 'workload' + (key === selectedKey ? ' selected' : '');
    cell(tr, commName(w.comm));
    cell(tr, dash(w.rank, String));
    cell(tr, w.collective);
    cell(tr, fmtBytes(w.bytes), 'num');
    const st = cell(tr, w.state, 'state-' + w.state);
    // a wait for the budget: how long and what for (autoccl-top's words)
    if (isNum(w.budget_wait_calls))
      st.title = 'waits ~' + w.budget_wait_calls + ' calls' +
        (w.budget_wait_for ? ' for ' + w.budget_wait_for : '');
    cell(tr, dash(w.subspace, String));
    cell(tr, fmtCand(w.candidate));
    // the job report's and autoccl-top's spelling (ACL_KEPT_NCCL_FMT, core/types.h)
    cell(tr, keptNccl_(w) ? 'NCCL, ' + w.candidates_evaluated + ' tried' : fmtCand(w.best));
    cell(tr, dash(w.speedup, (v) => v.toFixed(3) + '×'), 'num');
    const s = w.time_saved_seconds;
    cell(tr, dash(s, fmtSigned), 'num' + (isNum(s) ? (s > 0 ? ' gain' : s < 0 ? ' loss' : '') : ''));
    cell(tr, dash(w.overlap, fmtPct), 'num');
    cell(tr, dash(w.busbw, fmtBw), 'num');
    cell(tr, dash(w.source, String), w.source ? 'source-' + w.source : undefined);
    tr.addEventListener('click', () => { selectedKey = key; render(); });
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
  $('empty').hidden = rows.length > 0;
  $('truncated').hidden = !state.workloads_truncated;
}

// Host totals of the processes that answered (null when none measured it).
function sumOpt(list, f) {
  let v = null;
  for (const x of list) if (isNum(f(x))) v = (v || 0) + f(x);
  return v;
}
function hostJob(sts) {
  const col = sumOpt(sts, (s) => (s.job || {}).collective_seconds);
  const exp = sumOpt(sts, (s) => (s.job || {}).exposed_seconds);
  return { collective_seconds: col, exposed_seconds: exp,
           exposed_share: col > 0 && exp !== null ? exp / col : null,
           time_saved_seconds: sumOpt(sts, (s) => (s.job || {}).time_saved_seconds),
           ranks: sts.reduce((n, s) => n + ranksOf(s), 0) };
}
// Ranks as the job report counts them: the process's own count, else the
// distinct ranks of its workloads. "Saved" is per rank: every rank waits for
// each collective, so the job's wall time gains the per-rank figure.
function ranksOf(s) {
  if (s.job && isNum(s.job.ranks) && s.job.ranks > 0) return s.job.ranks;
  return new Set((s.workloads || []).map((w) => w.rank)).size;
}

function renderHost() {
  const rows = procs.map((p) => {
    const tr = document.createElement('tr');
    tr.className = 'proc ' + (p.ok ? 'answering' : 'no-answer');
    tr.dataset.localRank = String(p.local_rank);
    cell(tr, String(p.local_rank) + (p.self ? ' (this page)' : ''));
    cell(tr, p.port === null ? '—' : String(p.port), 'num');
    cell(tr, String(p.pid), 'num');
    cell(tr, p.ok ? 'answering' : 'no answer' + (p.error ? ': ' + p.error : ''),
         p.ok ? 'ep-ok' : 'ep-none');
    const ws = p.ok ? p.state.workloads || [] : null;
    cell(tr, ws ? String(ws.length) : '—', 'num');
    const t = ws ? totals(ws) : null;
    const sv = t ? t.saved : null;
    cell(tr, dash(sv, fmtSigned), 'num' + (isNum(sv) ? (sv > 0 ? ' gain' : sv < 0 ? ' loss' : '') : ''));
    cell(tr, dash(t ? t.speedup : null, (v) => v.toFixed(3) + '×'), 'num');
    return tr;
  });
  $('host').tBodies[0].replaceChildren(...rows);
  const ok = procs.filter((p) => p.ok).length;
  $('host-summary').textContent = procs.length > 1
    ? ok + ' of ' + procs.length + ' local ranks answering; totals above are theirs' : '';
}

function renderHeadline() {
  const ws = state.workloads || [];
  const t = totals(ws);
  const ns = $('net-saved'), nr = Math.max(1, state.ranks || 1);
  const per = t.saved === null ? null : t.saved / nr;
  ns.textContent = per === null ? '—' : fmtSigned(per);
  ns.dataset.value = per === null ? '' : String(per);
  ns.dataset.total = t.saved === null ? '' : String(t.saved);
  ns.className = 'value' + (per > 0 ? ' gain' : per < 0 ? ' loss' : '');
  $('net-detail').textContent = (t.cost === null ? 'no baseline measured yet'
    : t.cost >= 0 ? 'after ' + fmtSecs(t.cost / nr) + ' spent exploring and validating'
    : 'exploration itself ran ' + fmtSecs(-t.cost / nr) + ' faster than NCCL') +
    (nr > 1 && t.saved !== null ? ' · total ' + fmtSigned(t.saved) + ' over ' + nr + ' ranks' : '');
  const sp = $('overall-speedup');
  sp.textContent = t.speedup === null ? '—' : t.speedup.toFixed(3) + '×';
  sp.dataset.value = t.speedup === null ? '' : String(t.speedup);
  $('speedup-detail').textContent = 'weighted by calls × NCCL time';
  // Exposed communication: the job totals the server computes (state.job).
  const job = state.job || {}, ex = $('exposed');
  ex.textContent = isNum(job.exposed_seconds) ? fmtSecs(job.exposed_seconds) : '—';
  ex.dataset.value = isNum(job.exposed_seconds) ? String(job.exposed_seconds) : '';
  $('exposed-detail').textContent = !isNum(job.exposed_seconds) ? 'no overlap measured yet'
    : (job.exposed_share * 100).toFixed(0) + '% of collective time' +
      (isNum(job.time_saved_seconds) && job.exposed_seconds > 0
        ? '; net saved is ' + (job.time_saved_seconds / job.exposed_seconds * 100).toFixed(1) +
          '% of it' : '');
  $('converged').textContent = t.conv + ' / ' + ws.length;
  $('converged-detail').textContent = t.keptNccl ? t.keptNccl + ' kept NCCL\'s choice' : '';
}

function renderComms() {
  const rows = (state.communicators || []).map((c) => {
    const tr = document.createElement('tr');
    cell(tr, c.name);
    cell(tr, c.id);
    cell(tr, dash(c.rank, String));
    cell(tr, String(c.nranks), 'num');
    cell(tr, c.role);
    cell(tr, dash(c.consensus_wait_seconds, fmtSecs), 'num');
    cell(tr, String(c.blocks_published), 'num');
    return tr;
  });
  $('comms').tBodies[0].replaceChildren(...rows);
  const p = state.profiler || {};
  $('profiler').textContent = 'profiler source: ' + p.source +
    (p.cupti_backed_off ? ' (CUPTI held by another tool: backed off)' : '') +
    ' · records ' + p.records + ' · dropped ' + p.records_dropped + ' · samples ' + p.samples +
    ' · mismatches ' + p.mismatches;
}

function sameCand(a, b) {
  return a && b && a.algo === b.algo && a.proto === b.proto && a.channels === b.channels &&
    (a.chunk_log2 || 0) === (b.chunk_log2 || 0);
}

// The left axis fits the data: the measured range plus a margin, on round
// ticks (1, 2, 2.5 or 5 x 10^k), never forced down to 0 (a 10% spread must
// show). Returns [min, max, tick].
function yRange(vals) {
  let lo = Math.min(...vals), hi = Math.max(...vals);
  if (!(hi > 0)) return [0, 1, 0.25];
  const pad = Math.max((hi - lo) * 0.08, hi * 0.01);
  lo = Math.max(0, lo - pad);
  hi = hi + pad;
  const raw = (hi - lo) / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  return [Math.floor(lo / step) * step, Math.ceil(hi / step) * step, step];
}

// The trajectory of w: busbw (left axis) and overlap (bars, right axis) per step.
function drawTrajectory(w) {
  const cv = $('trajectory');
  const dpr = window.devicePixelRatio || 1;
  const cssW = cv.clientWidth || 960, cssH = Math.round(cssW * 340 / 960);
  if (cv.width !== Math.round(cssW * dpr)) { cv.width = Math.round(cssW * dpr); cv.height = Math.round(cssH * dpr); }
  const g = cv.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, cssW, cssH);
  const L = 64, R = 48, T = 14, B = 34, W = cssW - L - R, H = cssH - T - B;
  const legend = $('legend');
  const pts = w ? (w.trajectory || []).filter((p) => isNum(p.busbw)) : [];
  cv.dataset.points = String(pts.length);
  cv.dataset.workload = w ? wkey(w) : '';
  g.font = '12px system-ui, sans-serif';
  g.fillStyle = '#687085';
  if (!pts.length) {
    g.fillText(w ? 'no measured candidate yet' : 'no workload selected', L + 10, T + 20);
    legend.replaceChildren();
    cv.dataset.current = '-1';
    return;
  }
  const s0 = pts[0].step, s1 = Math.max(pts[pts.length - 1].step, s0 + 1);
  const [ymin, ymax, ystep] = yRange(pts.map((p) => p.busbw));
  cv.dataset.ymin = String(ymin);
  cv.dataset.ymax = String(ymax);
  const x = (s) => L + (s - s0) / (s1 - s0) * W;
  const y = (v) => T + H - (v - ymin) / (ymax - ymin) * H;
  // Axes and grid: busbw ticks on the left, overlap 0..100% on the right.
  g.strokeStyle = '#dde1e8';
  g.lineWidth = 1;
  const digits = Math.max(0, Math.min(3, -Math.floor(Math.log10(ystep / 1e9) + 1e-9)));
  for (let v = ymin; v <= ymax + ystep / 2; v += ystep) {
    const yy = y(v);
    g.beginPath(); g.moveTo(L, yy); g.lineTo(L + W, yy); g.stroke();
    g.fillText((v / 1e9).toFixed(digits), 8, yy + 4);
  }
  for (let i = 0; i <= 4; i++) g.fillText(fmtPct((4 - i) / 4), L + W + 8, T + H * i / 4 + 4);
  g.fillText('GB/s', 8, cssH - 8);
  g.fillText('step', L + W / 2, cssH - 8);
  g.fillText(String(s0), L, T + H + 16);
  g.fillText(String(s1), L + W - 10, T + H + 16);
  // Overlap bars.
  const bw = Math.max(2, Math.min(12, W / (s1 - s0 + 1) * 0.5));
  g.fillStyle = 'rgba(107,114,128,0.25)';
  for (const p of pts)
    if (isNum(p.overlap)) g.fillRect(x(p.step) - bw / 2, T + H - p.overlap * H, bw, p.overlap * H);
  // The path, then the points coloured by subspace.
  g.strokeStyle = '#9ca3af';
  g.beginPath();
  pts.forEach((p, i) => (i ? g.lineTo(x(p.step), y(p.busbw)) : g.moveTo(x(p.step), y(p.busbw))));
  g.stroke();
  const seen = new Map();
  for (const p of pts) {
    const sub = subspaceOf(p);
    const col = colourOf(sub);
    seen.set(sub, col);
    g.fillStyle = col;
    g.beginPath(); g.arc(x(p.step), y(p.busbw), 4, 0, 2 * Math.PI); g.fill();
  }
  // The candidate under test: its latest point, ringed.
  let cur = -1;
  for (let i = pts.length - 1; i >= 0; i--) if (sameCand(pts[i], w.candidate)) { cur = i; break; }
  cv.dataset.current = String(cur);
  if (cur >= 0) {
    g.strokeStyle = '#111827';
    g.lineWidth = 2;
    g.beginPath(); g.arc(x(pts[cur].step), y(pts[cur].busbw), 8, 0, 2 * Math.PI); g.stroke();
  }
  legend.replaceChildren(...[...seen].map(([sub, col]) => {
    const item = document.createElement('span');
    const sw = document.createElement('span');
    sw.className = 'sw';
    sw.style.background = col;
    item.appendChild(sw);
    item.appendChild(document.createTextNode(sub));
    return item;
  }));
}

function render() {
  if (!state) return;
  const ok = procs.filter((p) => p.ok).length;
  $('proc').textContent = state.host + ' · ' +
    (procs.length > 1 ? ok + ' of ' + procs.length + ' local ranks'
                      : 'pid ' + state.pid + ' · local rank ' + state.local_rank) +
    ' · mode ' + state.mode + ' · up ' + dash(state.uptime_seconds, (v) => v.toFixed(0) + ' s');
  $('host').dataset.processes = String(procs.length);
  $('host').dataset.answering = String(ok);
  const ws = state.workloads || [];
  if (!ws.some((w) => wkey(w) === selectedKey)) {
    // First choice: a search under way with points to draw.
    const live = (w) => !w.decided && w.state !== 'warmup' && w.state !== 'disabled';
    const pick = ws.find((w) => live(w) && (w.trajectory || []).length) || ws.find(live) || ws[0];
    selectedKey = pick ? wkey(pick) : null;
  }
  renderHeadline();
  renderTable();
  renderHost();
  renderComms();
  const w = ws.find((x) => wkey(x) === selectedKey) || null;
  $('selected').textContent = w ? commName(w.comm) + ' · ' + w.collective + ' · ' +
    fmtBytes(w.bytes) + ' · ' + w.state : '';
  drawTrajectory(w);
  document.body.dataset.rendered = String((Number(document.body.dataset.rendered) || 0) + 1);
}

async function getJson(url, timeoutMs) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), timeoutMs);
  try {
    const r = await fetch(url, { cache: 'no-store', signal: ac.signal });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    return await r.json();
  } catch (e) {
    throw new Error(e.name === 'AbortError' ? 'timed out' : e.message);
  } finally {
    clearTimeout(t);
  }
}

// The host's process list: this page's endpoint and its siblings. An
// endpoint without /api/v1/host (or failing) leaves this process alone.
async function readHost(own) {
  let list = null;
  try {
    const h = await getJson('/api/v1/host', SIBLING_TIMEOUT_MS);
    if (Array.isArray(h.processes)) list = h.processes;
  } catch (e) { /* an older endpoint: one process */ }
  if (!list || !list.some((p) => p.pid === own.pid))
    list = [{ local_rank: own.local_rank, pid: own.pid, port: null }];
  const prev = new Map(procs.map((p) => [p.pid, p]));
  procs = list.map((p) => Object.assign({ ok: false, error: 'not read yet', state: null },
                                        prev.get(p.pid) || {},
                                        { local_rank: p.local_rank, pid: p.pid,
                                          port: isNum(p.port) ? p.port : null,
                                          self: p.pid === own.pid }));
  hostReadAt = Date.now();
}

function siblingUrl(port) {
  const h = window.location.hostname;
  return 'http://' + (h.includes(':') ? '[' + h + ']' : h) + ':' + port + '/api/v1/state';
}

// Every process's state document merged into one: rows of all, totals of
// the host (of the processes that answered).
function merge() {
  const sts = procs.filter((p) => p.ok).map((p) => p.state);
  const own = procs.find((p) => p.self);
  const base = own && own.ok ? own.state : sts[0];
  const m = Object.assign({}, base);
  m.workloads = [].concat(...sts.map((s) => s.workloads || []));
  m.communicators = [].concat(...sts.map((s) => s.communicators || []));
  m.workloads_truncated = sts.some((s) => s.workloads_truncated);
  m.job = sts.length > 1 ? hostJob(sts) : base.job;
  m.ranks = sts.reduce((n, s) => n + ranksOf(s), 0);
  return m;
}

async function refresh() {
  refreshTimer = null;
  lastRefresh = Date.now();
  let own;
  try {
    own = await getJson('/api/v1/state', SIBLING_TIMEOUT_MS);
  } catch (e) {
    $('proc').textContent = 'state unavailable: ' + e.message;
    return;
  }
  if (Date.now() - hostReadAt >= HOST_MS || !procs.some((p) => p.pid === own.pid))
    await readHost(own);
  await Promise.all(procs.map(async (p) => {
    if (p.self) {
      Object.assign(p, { ok: true, error: null, state: own });
      return;
    }
    if (p.port === null) {
      Object.assign(p, { ok: false, error: 'no endpoint', state: null });
      return;
    }
    try {
      const st = await getJson(siblingUrl(p.port), SIBLING_TIMEOUT_MS);
      if (st.pid !== p.pid) throw new Error('port ' + p.port + ' is served by pid ' + st.pid);
      Object.assign(p, { ok: true, error: null, state: st });
    } catch (e) {
      Object.assign(p, { ok: false, error: e.message, state: null });
    }
  }));
  state = merge();
  render();
}

function scheduleRefresh() {
  if (refreshTimer !== null) return;
  const wait = Math.max(0, REFRESH_MIN_MS - (Date.now() - lastRefresh));
  refreshTimer = setTimeout(refresh, wait);
}

function setStream(up) {
  $('banner').hidden = up;
  const s = $('status');
  s.textContent = up ? 'live' : 'disconnected';
  s.className = 'pill ' + (up ? 'live' : 'down');
}

function connect() {
  const es = new EventSource('/api/v1/events');
  es.onopen = () => { setStream(true); scheduleRefresh(); };
  es.onerror = () => {
    setStream(false);
    // The browser retries by itself unless the stream is closed for good.
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, RECONNECT_MS);
  };
  es.addEventListener('sample', scheduleRefresh);
  es.addEventListener('decision', scheduleRefresh);
}

window.addEventListener('resize', () => render());
if (POLL_ONLY) {
  const s = $('status');
  s.textContent = 'polling';
  s.className = 'pill live';
  setInterval(scheduleRefresh, POLL_ONLY_MS);
  refresh();
} else {
  setInterval(scheduleRefresh, POLL_MS);
  refresh();
  connect();
}
