/* autoccl-top's full-screen view: header with totals and per-source status,
 * the workload table, the trajectory pane of the selected row, a help
 * overlay. Redraws on data, keys, resize, and once a second. */
#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/text.h"
#include "tui/view.h"

#define MIN_COLS 40
#define MIN_LINES 8
#define MAX_SRC_LINES 4

/* Each fits its header name plus the sort marker. */
/* STATE fits "validating"; SUBSPACE "RING/SIMPLE": 160 columns show all but SOURCE */
static const int col_width[ACL_TOP_COL_COUNT] = {16, 5, 13, 9, 10, 11, 18, 18, 8, 9, 8, 11, 9, 9};
/* Narrow terminals drop these first; COMM, RANK, COLLECTIVE, SIZE, STATE and
 * SPEEDUP (66 columns with the marker) always stay, so two ranks' rows never
 * look alike, and SAVED still fits at 80. */
static const acl_top_col_t drop_order[] = {
    ACL_TOP_COL_SOURCE, ACL_TOP_COL_CALLS, ACL_TOP_COL_SUBSPACE, ACL_TOP_COL_OVERLAP,
    ACL_TOP_COL_CAND,   ACL_TOP_COL_BUSBW, ACL_TOP_COL_BEST,     ACL_TOP_COL_SAVED};

struct acl_top_ui {
  acl_top_net_t *net;
  const acl_top_opts_t *o;
  bool color;
  acl_top_view_t view;
  acl_top_col_t sort;
  bool reverse;
  int sel, top;
  bool have_sel; /* identity of the selected row, kept across refreshes */
  int sel_source, sel_rank, sel_pipe;
  int64_t sel_bytes;
  char sel_comm[24], sel_coll[24];
  bool help, quit;
};

static const char *em(void) { return acl_top_utf8 ? "\xe2\x80\x94" : "-"; }

static void remember(acl_top_ui_t *u)
{
  u->have_sel = u->sel >= 0 && u->sel < u->view.nrows;
  if (!u->have_sel)
    return;
  const acl_top_row_t *r = &u->view.rows[u->sel];
  u->sel_source = r->source;
  u->sel_rank = r->w->rank;
  u->sel_pipe = r->w->pipe_ops;
  u->sel_bytes = r->w->bytes;
  snprintf(u->sel_comm, sizeof(u->sel_comm), "%s", r->w->comm);
  snprintf(u->sel_coll, sizeof(u->sel_coll), "%s", r->w->collective);
}

static void rebuild(acl_top_ui_t *u)
{
  const acl_top_model_t *models[ACL_TOP_MAX_URLS];
  for (int i = 0; i < u->net->n; i++)
    models[i] = u->net->src[i].has_model ? &u->net->src[i].model : NULL;
  acl_top_view_free(&u->view);
  if (acl_top_view_build(&u->view, models, u->net->n) < 0)
    return; /* out of memory: an empty table this round */
  acl_top_view_sort(&u->view, u->sort, u->reverse);
  if (u->have_sel)
    for (int i = 0; i < u->view.nrows; i++) {
      const acl_top_row_t *r = &u->view.rows[i];
      if (r->source == u->sel_source && r->w->rank == u->sel_rank && r->w->bytes == u->sel_bytes &&
          r->w->pipe_ops == u->sel_pipe && strcmp(r->w->comm, u->sel_comm) == 0 &&
          strcmp(r->w->collective, u->sel_coll) == 0) {
        u->sel = i;
        break;
      }
    }
  if (u->sel >= u->view.nrows)
    u->sel = u->view.nrows - 1;
  if (u->sel < 0 && u->view.nrows)
    u->sel = 0;
  remember(u);
}

static attr_t state_attr(const acl_top_ui_t *u, const char *st)
{
  if (!u->color)
    return 0;
  if (st && strcmp(st, ACL_CAPTURED_NAME) == 0)
    return COLOR_PAIR(ACL_TOP_PAIR_GOOD); /* replays run the proven decision (or NCCL's) */
  switch (acl_phase_parse(st)) {
  case ACL_PHASE_CONVERGED:
    return COLOR_PAIR(ACL_TOP_PAIR_GOOD);
  case ACL_PHASE_EXPLORING:
  case ACL_PHASE_VALIDATING:
  case ACL_PHASE_REFINING:
    return COLOR_PAIR(ACL_TOP_PAIR_BUSY);
  case ACL_PHASE_RETUNING:
    return COLOR_PAIR(ACL_TOP_PAIR_RETUNE);
  case ACL_PHASE_WARMUP:
  case ACL_PHASE_BASELINE:
  case ACL_PHASE_WAIT_BUDGET:
  case ACL_PHASE_WAIT_SAMPLES:
  case ACL_PHASE_PAUSED:
    return COLOR_PAIR(ACL_TOP_PAIR_WARM);
  case ACL_PHASE_DISABLED:
    return COLOR_PAIR(ACL_TOP_PAIR_BAD);
  default:
    return 0;
  }
}

/* Which columns fit in w, in table order. */
static int fit_columns(int w, bool show[ACL_TOP_COL_COUNT])
{
  int total = 2; /* selection marker */
  for (int c = 0; c < ACL_TOP_COL_COUNT; c++) {
    show[c] = true;
    total += col_width[c] + 1;
  }
  for (size_t k = 0; k < sizeof(drop_order) / sizeof(drop_order[0]) && total > w; k++) {
    show[drop_order[k]] = false;
    total -= col_width[drop_order[k]] + 1;
  }
  return total;
}

static int draw_header(acl_top_ui_t *u, int w)
{
  char line[1024], sp[24], cw[24], ns[24], nt[24];
  const acl_top_view_t *v = &u->view;
  /* Most important first; a part that does not fit whole is left out rather
   * than cut, so the header never ends mid-word. */
  char part[7][128], ex[24], exs[24];
  snprintf(part[0], sizeof(part[0]), "converged %d/%d", v->converged, v->total);
  snprintf(part[1], sizeof(part[1]), "speedup %s (time-weighted)",
           acl_top_fmt_ratio(v->weighted_speedup, sp, sizeof(sp)));
  /* per rank, as the job report (every rank waits for each collective); the
   * host's sum over its ranks is labelled a total */
  if (v->ranks > 1)
    snprintf(part[2], sizeof(part[2]), "net saved %s per rank (total %s, %d ranks)",
             acl_top_fmt_signed_seconds(v->time_saved_seconds / v->ranks, ns, sizeof(ns)),
             acl_top_fmt_signed_seconds(v->time_saved_seconds, nt, sizeof(nt)), v->ranks);
  else
    snprintf(part[2], sizeof(part[2]), "net saved %s per rank",
             acl_top_fmt_signed_seconds(v->time_saved_seconds, ns, sizeof(ns)));
  snprintf(part[3], sizeof(part[3]), "autoccl-top %s", ACL_TOP_VERSION);
  snprintf(part[4], sizeof(part[4]), "consensus wait %s",
           acl_top_fmt_seconds(v->consensus_wait_seconds, cw, sizeof(cw)));
  snprintf(part[5], sizeof(part[5]), "profiler %s", v->profiler);
  /* Next to the net saved: the most that tuning could ever give back. */
  snprintf(
      part[6], sizeof(part[6]), "exposed %s (%s)",
      acl_top_fmt_seconds(v->exposed_seconds, ex, sizeof(ex)),
      acl_top_fmt_pct(v->collective_seconds > 0 ? v->exposed_seconds / v->collective_seconds : NAN,
                      exs, sizeof(exs)));
  static const int order[] = {3, 0, 1, 2, 6, 4, 5}; /* display order */
  bool keep[7];
  int used = 0;
  for (int i = 0; i < 7; i++) { /* importance order */
    int len = (int)strlen(part[i]) + (used ? 3 : 0);
    keep[i] = used + len <= w;
    if (keep[i])
      used += len;
  }
  line[0] = '\0';
  for (int k = 0; k < 7; k++) {
    int i = order[k];
    if (!keep[i])
      continue;
    size_t l = strlen(line);
    snprintf(line + l, sizeof(line) - l, "%s%s", l ? "   " : "", part[i]);
  }
  attron(A_BOLD);
  acl_top_put(0, 0, line, w);
  attroff(A_BOLD);
  int y = 1, n = u->net->n;
  int shown = n <= MAX_SRC_LINES ? n : MAX_SRC_LINES - 1;
  for (int i = 0; i < shown; i++, y++) {
    const acl_top_src_t *s = &u->net->src[i];
    const char *label = acl_top_conn_label(s);
    char host[128] = "", url[ACL_TOP_URL_MAX], why[256];
    if (s->has_model)
      snprintf(host, sizeof(host), "host %s pid %lld", s->model.host[0] ? s->model.host : "-",
               (long long)s->model.pid);
    bool down = s->conn == ACL_TOP_CONN_DOWN;
    if (down && !acl_top_utf8)
      label = s->has_model ? "disconnected - retrying" : "no answer - retrying";
    acl_text_clean(url, sizeof(url), s->url); /* as typed, or from a server */
    acl_text_clean(why, sizeof(why), down ? s->error : "");
    const char *fields[] = {url, label, host, why};
    /* Cut at a field or a word, marked, never mid-word (80 columns). */
    char clean[sizeof(line)];
    acl_top_fit_fields(clean, sizeof(clean), fields, 4, w, acl_top_utf8);
    attr_t a = !u->color                    ? (down ? A_BOLD : 0)
               : down                       ? COLOR_PAIR(ACL_TOP_PAIR_BAD) | A_BOLD
               : s->conn == ACL_TOP_CONN_UP ? COLOR_PAIR(ACL_TOP_PAIR_GOOD)
                                            : 0;
    attron(a);
    acl_top_put(y, 0, clean, w);
    attroff(a);
  }
  if (shown < n) {
    int up = 0, down = 0;
    for (int i = shown; i < n; i++) {
      up += u->net->src[i].conn == ACL_TOP_CONN_UP;
      down += u->net->src[i].conn == ACL_TOP_CONN_DOWN;
    }
    snprintf(line, sizeof(line), "+%d more sources: %d connected, %d disconnected %s retrying",
             n - shown, up, down, em());
    acl_top_put(y++, 0, line, w);
  }
  return y;
}

static void draw_table(acl_top_ui_t *u, int y0, int h, int w)
{
  bool show[ACL_TOP_COL_COUNT];
  fit_columns(w, show);
  char cell[96];
  /* Column header, the sort column marked with its direction. */
  attron(A_REVERSE);
  mvhline(y0, 0, ' ', w);
  int x = 2;
  bool desc = acl_top_col_desc_default(u->sort) != u->reverse;
  for (int c = 0; c < ACL_TOP_COL_COUNT && x < w; c++) {
    if (!show[c])
      continue;
    if (c == (int)u->sort)
      snprintf(cell, sizeof(cell), "%s%s", acl_top_col_name(c),
               acl_top_utf8 ? (desc ? "\xe2\x96\xbc" : "\xe2\x96\xb2") : (desc ? "v" : "^"));
    else
      snprintf(cell, sizeof(cell), "%s", acl_top_col_name(c));
    acl_top_put(y0, x, cell, w - x < col_width[c] ? w - x : col_width[c]);
    x += col_width[c] + 1;
  }
  attroff(A_REVERSE);
  int rows = h - 1;
  if (rows <= 0)
    return;
  if (u->sel >= 0 && u->sel < u->top)
    u->top = u->sel;
  if (u->sel >= u->top + rows)
    u->top = u->sel - rows + 1;
  if (u->top > u->view.nrows - rows)
    u->top = u->view.nrows - rows > 0 ? u->view.nrows - rows : 0;
  if (u->view.nrows == 0) {
    acl_top_put(y0 + 1, 2, "no workloads yet", w - 2);
    return;
  }
  for (int i = 0; i < rows && u->top + i < u->view.nrows; i++) {
    int ri = u->top + i;
    const acl_top_row_t *r = &u->view.rows[ri];
    int y = y0 + 1 + i;
    bool sel = ri == u->sel;
    if (sel) {
      attron(A_REVERSE | A_BOLD);
      mvhline(y, 0, ' ', w);
      mvaddstr(y, 0, ">");
    }
    x = 2;
    for (int c = 0; c < ACL_TOP_COL_COUNT && x < w; c++) {
      if (!show[c])
        continue;
      attr_t a = c == ACL_TOP_COL_STATE ? state_attr(u, r->w->state) : 0;
      acl_top_cell(r, (acl_top_col_t)c, cell, sizeof(cell));
      bool right = c == ACL_TOP_COL_RANK || c == ACL_TOP_COL_SIZE || c >= ACL_TOP_COL_SPEEDUP;
      int cw = w - x < col_width[c] ? w - x : col_width[c];
      int len = (int)strlen(cell);
      int off = right && len < cw ? cw - len : 0;
      attron(a);
      acl_top_put(y, x + off, cell, cw - off);
      attroff(a);
      x += col_width[c] + 1;
    }
    if (sel)
      attroff(A_REVERSE | A_BOLD);
  }
}

static void draw_help(int h, int w)
{
  static const char *const lines[] = {
      "autoccl-top keys",
      "",
      "Up/Down, j/k    select a workload",
      "PgUp/PgDn, g/G  page up/down, first/last",
      "s, F6           sort by the next column",
      "r               reverse the sort order",
      "h, ?            show/hide this help",
      "q               quit",
      "",
      "SPEEDUP: NCCL default time / best time (measured)",
      "SAVED: net time saved = decision's gain - exploration",
      "header speedup: mean weighted by calls x baseline time",
      "unknown values show as -",
      "",
      "press any key to close",
  };
  int n = (int)(sizeof(lines) / sizeof(lines[0]));
  int bw = 58 < w - 2 ? 58 : w - 2, bh = n + 2 < h - 1 ? n + 2 : h - 1;
  if (bw < 10 || bh < 3)
    return;
  int y0 = (h - bh) / 2, x0 = (w - bw) / 2;
  WINDOW *win = newwin(bh, bw, y0, x0);
  if (!win)
    return;
  werase(win);
  box(win, 0, 0);
  for (int i = 0; i < n && i < bh - 2; i++)
    mvwaddnstr(win, i + 1, 2, lines[i], bw - 4);
  wnoutrefresh(win);
  delwin(win);
}

static void draw(acl_top_ui_t *u)
{
  int h = LINES, w = COLS;
  erase();
  if (w < MIN_COLS || h < MIN_LINES) {
    char msg[64];
    snprintf(msg, sizeof(msg), "terminal too small (%dx%d)", w, h);
    acl_top_put(0, 0, (int)strlen(msg) <= w ? msg : "terminal too small", w);
    wnoutrefresh(stdscr);
    doupdate();
    return;
  }
  int y = draw_header(u, w);
  int footer = h - 1;
  /* The pane gets 40% of the screen, more when the table needs less. */
  int pane_h = 0;
  if (h >= 24) {
    int spare = footer - y - (u->view.nrows + 1);
    pane_h = (h * 2) / 5;
    if (spare > pane_h)
      pane_h = spare < (h * 3) / 5 ? spare : (h * 3) / 5;
  }
  int table_h = footer - y - pane_h;
  draw_table(u, y, table_h, w);
  if (pane_h) {
    const acl_top_row_t *r = u->sel >= 0 && u->sel < u->view.nrows ? &u->view.rows[u->sel] : NULL;
    acl_top_draw_pane(r, r ? u->net->src[r->source].url : "", y + table_h, pane_h, w, u->color);
  }
  char foot[200];
  snprintf(foot, sizeof(foot), "row %d/%d  sort %s %s  s/F6 sort  r reverse  h help  q quit",
           u->view.nrows ? u->sel + 1 : 0, u->view.nrows, acl_top_col_name(u->sort),
           acl_top_col_desc_default(u->sort) != u->reverse ? "desc" : "asc");
  attron(A_DIM);
  acl_top_put(footer, 0, foot, w);
  attroff(A_DIM);
  wnoutrefresh(stdscr);
  if (u->help)
    draw_help(h, w);
  doupdate();
}

static void key(acl_top_ui_t *u, int ch)
{
  if (u->help && ch != KEY_RESIZE) { /* any key closes the overlay */
    u->help = false;
    if (ch != 'q')
      return;
  }
  int page = LINES / 2 > 1 ? LINES / 2 : 1;
  switch (ch) {
  case 'q':
  case 'Q':
    u->quit = true;
    break;
  case KEY_DOWN:
  case 'j':
    u->sel++;
    break;
  case KEY_UP:
  case 'k':
    u->sel--;
    break;
  case KEY_NPAGE:
    u->sel += page;
    break;
  case KEY_PPAGE:
    u->sel -= page;
    break;
  case KEY_HOME:
  case 'g':
    u->sel = 0;
    break;
  case KEY_END:
  case 'G':
    u->sel = u->view.nrows - 1;
    break;
  case 's':
  case KEY_F(6):
    u->sort = (acl_top_col_t)((u->sort + 1) % ACL_TOP_COL_COUNT);
    break;
  case 'S':
    u->sort = (acl_top_col_t)((u->sort + ACL_TOP_COL_COUNT - 1) % ACL_TOP_COL_COUNT);
    break;
  case 'r':
    u->reverse = !u->reverse;
    break;
  case 'h':
  case '?':
  case KEY_F(1):
    u->help = true;
    break;
  default:
    return;
  }
  if (u->sel >= u->view.nrows)
    u->sel = u->view.nrows - 1;
  if (u->sel < 0)
    u->sel = 0;
  if (ch == 's' || ch == 'S' || ch == KEY_F(6) || ch == 'r') {
    remember(u);
    rebuild(u); /* re-sorts and keeps the same workload selected */
  } else {
    remember(u);
  }
}

static void init_colors(void)
{
  start_color();
  use_default_colors();
  init_pair(ACL_TOP_PAIR_GOOD, COLOR_GREEN, -1);
  init_pair(ACL_TOP_PAIR_BUSY, COLOR_YELLOW, -1);
  init_pair(ACL_TOP_PAIR_RETUNE, COLOR_MAGENTA, -1);
  init_pair(ACL_TOP_PAIR_WARM, COLOR_CYAN, -1);
  init_pair(ACL_TOP_PAIR_BAD, COLOR_RED, -1);
  static const short sub[ACL_TOP_PLOT_MAX_SUBS] = {COLOR_CYAN,    COLOR_YELLOW, COLOR_GREEN,
                                                   COLOR_MAGENTA, COLOR_BLUE,   COLOR_RED,
                                                   COLOR_WHITE,   COLOR_GREEN};
  for (int i = 0; i < ACL_TOP_PLOT_MAX_SUBS; i++)
    init_pair((short)(ACL_TOP_PAIR_SUB0 + i), sub[i], -1);
}

int acl_top_ui_run(acl_top_net_t *net, const acl_top_opts_t *o, bool color)
{
  acl_top_ui_t u = {.net = net, .o = o, .sort = ACL_TOP_COL_COMM};
  acl_top_view_free(&u.view); /* initialises the empty view */
  const char *cs = nl_langinfo(CODESET);
  acl_top_utf8 = cs && strcmp(cs, "UTF-8") == 0;
  /* newterm, unlike initscr, returns NULL on an unknown TERM instead of
   * exiting, and its screen can be freed. */
  SCREEN *scr = newterm(NULL, stdout, stdin);
  if (!scr) {
    const char *term = getenv("TERM");
    fprintf(stderr, "autoccl-top: cannot use terminal type '%s'; try --batch\n",
            term ? term : "(unset)");
    return 1;
  }
  set_term(scr);
  set_escdelay(25);
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  curs_set(0);
  u.color = color && has_colors();
  if (u.color)
    init_colors();
  rebuild(&u);
  draw(&u);
  double last_draw = acl_mono_s();
  unsigned long seen = 0;
  long refreshes = 0;
  while (!u.quit) {
    /* Short waits keep KEY_RESIZE (delivered via SIGWINCH) responsive. */
    bool changed = acl_top_net_step(net, 100, STDIN_FILENO);
    bool dirty = changed;
    unsigned long upd = 0;
    for (int i = 0; i < net->n; i++)
      upd += net->src[i].updates;
    if (changed || upd != seen) {
      rebuild(&u); /* models were replaced: rows must not point at old ones */
      if (upd != seen)
        refreshes++;
      seen = upd;
    }
    int ch;
    while ((ch = getch()) != ERR) {
      key(&u, ch);
      dirty = true;
    }
    double now = acl_mono_s();
    if (dirty || now - last_draw >= 1.0) {
      draw(&u);
      last_draw = now;
    }
    if (o->iterations > 0 && refreshes >= o->iterations)
      u.quit = true;
  }
  endwin();
  delscreen(scr);
  acl_top_view_free(&u.view);
  return 0;
}
