/* Multi-host relay: the wire format (strict, fuzzed), the coordinator
 * address, and simulated hosts on loopback (distinct segment namespaces,
 * coordinator on 127.0.0.2). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "helpers.h"
#include "run.h"
#include "tuner/consensus/relay.h"

static acl_relay_req_t sample_req(void)
{
  acl_relay_req_t r;
  memset(&r, 0, sizeof(r));
  r.flags = ACL_RELAY_F_RESTRICT;
  r.rank = 3;
  r.comm_id = 0x1122334455667788ull;
  r.key = th_key(r.comm_id, 4, 1u << 20);
  r.key.num_pipe_ops = 2;
  r.call_idx = 12345;
  r.settings_hash = 0xdeadbeefcafef00dull;
  th_cost(r.cost, 1);
  r.host_id = 0x0123456789abcdefull;
  r.held_end = 777;
  return r;
}

Test(wire, request_roundtrip_and_strictness)
{
  acl_relay_req_t r = sample_req(), o;
  uint8_t buf[256];
  size_t n = acl_relay_encode_req(&r, buf, sizeof(buf));
  cr_assert_eq(n, 4 + ACL_RELAY_REQ_LEN);
  cr_assert_eq(acl_relay_encode_req(&r, buf, n - 1), 0);
  cr_assert_eq(acl_relay_decode_req(buf, n, &o), (long)n);
  cr_assert_eq(o.rank, 3);
  cr_assert_eq(o.call_idx, 12345);
  cr_assert_eq(o.key.nbytes, 1u << 20);
  cr_assert_eq(o.key.num_pipe_ops, 2);
  cr_assert_eq(o.key.comm_id, r.comm_id);
  cr_assert_eq(o.settings_hash, r.settings_hash);
  cr_assert_eq(memcmp(o.cost, r.cost, sizeof(o.cost)), 0);
  cr_assert_eq(o.host_id, r.host_id);
  cr_assert_eq(o.held_end, 777);
  for (size_t k = 0; k < n; k++)
    cr_assert_eq(acl_relay_decode_req(buf, k, &o), k < 4 ? 0 : (k < n ? 0 : (long)n));
  uint8_t bad[256];
  /* length, version (1: the format before the commit), type, flags, coll, reserved */
  const int flips[] = {0, 4, 5, 6, 7, 16};
  const uint8_t vals[] = {0x85, 1, 2, 0x80, 9, 1};
  for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
    memcpy(bad, buf, n);
    bad[flips[i]] = vals[i];
    cr_assert_eq(acl_relay_decode_req(bad, n, &o), -1, "byte %d accepted", flips[i]);
  }
  memcpy(bad, buf, n);
  float nan = __builtin_nanf("");
  memcpy(bad + 4 + 48, &nan, 4);
  cr_assert_eq(acl_relay_decode_req(bad, n, &o), -1, "NaN cost accepted");
  memcpy(bad, buf, n);
  memset(bad + 4 + 132, 0, 8);
  cr_assert_eq(acl_relay_decode_req(bad, n, &o), -1, "host id 0 accepted");
}

Test(wire, response_roundtrip_and_strictness)
{
  acl_relay_resp_t r = {.status = ACL_RELAY_OK,
                        .phase = ACL_PHASE_EXPLORING,
                        .widx = 7,
                        .block_num = 99,
                        .start = 1000,
                        .len = 5,
                        .cand_id = 300,
                        .cand = {.algo = 1, .proto = 2, .nchannels = 24, .chunk_log2 = 0},
                        .commit = 0x0102030405060708ull,
                        .safe_id = 12,
                        .safe = {.algo = 1, .proto = 1, .nchannels = 16, .chunk_log2 = -2},
                        .fig = {.baseline_seconds = 1.5e-3f,
                                .best_seconds = 1.25e-3f,
                                .speedup = 1.08f,
                                .speedup_lo = 1.05f,
                                .speedup_hi = 1.11f,
                                .source = 1,
                                .paired = 1}};
  acl_relay_resp_t o;
  uint8_t buf[128];
  size_t n = acl_relay_encode_resp(&r, buf, sizeof(buf));
  cr_assert_eq(n, 4 + ACL_RELAY_RESP_LEN);
  cr_assert_eq(acl_relay_decode_resp(buf, n, &o), (long)n);
  cr_assert_eq(o.widx, 7);
  cr_assert_eq(o.block_num, 99);
  cr_assert_eq(o.start, 1000);
  cr_assert_eq(o.len, 5);
  cr_assert_eq(o.cand_id, 300);
  cr_assert(acl_candidate_eq(&o.cand, &r.cand));
  cr_assert_eq(o.commit, r.commit);
  cr_assert_eq(o.safe_id, 12);
  cr_assert(acl_candidate_eq(&o.safe, &r.safe));
  /* the leader's figures, for a follower host's views and report */
  cr_assert_eq(o.fig.baseline_seconds, r.fig.baseline_seconds);
  cr_assert_eq(o.fig.best_seconds, r.fig.best_seconds);
  cr_assert_eq(o.fig.speedup, r.fig.speedup);
  cr_assert_eq(o.fig.speedup_lo, r.fig.speedup_lo);
  cr_assert_eq(o.fig.speedup_hi, r.fig.speedup_hi);
  cr_assert_eq(o.fig.source, 1);
  cr_assert_eq(o.fig.paired, 1);
  uint8_t bad[128];
  memcpy(bad, buf, n);
  bad[4 + 76] = ACL_NUM_SOURCES; /* unknown source */
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4 + 59] = 0xff; /* baseline NaN */
  bad[4 + 58] = 0xc0;
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4 + 2] = ACL_RELAY_NSTATUS;
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4 + 30] = 7; /* algo out of range */
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4 + 24] = 0; /* len 0 */
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4 + 35] = 1; /* reserved */
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4 + 55] = 1; /* reserved */
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4 + 50] = 7; /* safe algo out of range */
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
  memcpy(bad, buf, n);
  bad[4] = 1; /* version 1: no commit */
  cr_assert_eq(acl_relay_decode_resp(bad, n, &o), -1);
}

Test(wire, push_roundtrip_and_strictness)
{
  acl_relay_push_t p = {.widx = 5, .comm_id = 0x1122334455667788ull, .commit = 4096}, o;
  uint8_t buf[64], bad[64];
  size_t n = acl_relay_encode_push(&p, buf, sizeof(buf));
  cr_assert_eq(n, 4 + ACL_RELAY_PUSH_LEN);
  cr_assert_eq(acl_relay_encode_push(&p, buf, n - 1), 0);
  cr_assert_eq(acl_relay_decode_push(buf, n, &o), (long)n);
  cr_assert(o.widx == 5 && o.comm_id == p.comm_id && o.commit == 4096);
  for (size_t k = 0; k < n; k++)
    cr_assert_eq(acl_relay_decode_push(buf, k, &o), 0);
  const int flips[] = {0, 4, 5, 6, 7}; /* length, version, type, reserved */
  const uint8_t vals[] = {ACL_RELAY_RESP_LEN, 1, 2, 1, 1};
  for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
    memcpy(bad, buf, n);
    bad[flips[i]] = vals[i];
    cr_assert_eq(acl_relay_decode_push(bad, n, &o), -1, "byte %d accepted", flips[i]);
  }
  /* an answer is never taken for a push, nor a push for an answer */
  acl_relay_resp_t ro;
  cr_assert_eq(acl_relay_decode_resp(buf, n, &ro), -1);
}

Test(wire, held_roundtrip_and_strictness)
{
  acl_relay_held_t h = {.widx = 9, .comm_id = 77, .host_id = 0xabc, .held_end = 1 << 20}, o;
  uint8_t buf[64], bad[64];
  size_t n = acl_relay_encode_held(&h, buf, sizeof(buf));
  cr_assert_eq(n, 4 + ACL_RELAY_HELD_LEN);
  cr_assert_eq(acl_relay_encode_held(&h, buf, n - 1), 0);
  cr_assert_eq(acl_relay_decode_held(buf, n, &o), (long)n);
  cr_assert(o.widx == 9 && o.comm_id == 77 && o.host_id == 0xabc && o.held_end == 1 << 20);
  for (size_t k = 0; k < n; k++)
    cr_assert_eq(acl_relay_decode_held(buf, k, &o), 0);
  const int flips[] = {0, 4, 5, 6, 7}; /* length, version, type, reserved */
  const uint8_t vals[] = {ACL_RELAY_PUSH_LEN, 1, 3, 1, 1};
  for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
    memcpy(bad, buf, n);
    bad[flips[i]] = vals[i];
    cr_assert_eq(acl_relay_decode_held(bad, n, &o), -1, "byte %d accepted", flips[i]);
  }
  memcpy(bad, buf, n);
  memset(bad + 4 + 16, 0, 8);
  cr_assert_eq(acl_relay_decode_held(bad, n, &o), -1, "host id 0 accepted");
  acl_relay_req_t ro;
  cr_assert_eq(acl_relay_decode_req(buf, n, &ro), -1, "a held frame parsed as a request");
}

/* Random bytes and mutated valid frames: never a crash, never an
 * out-of-range accepted value. */
Test(wire, fuzz)
{
  uint64_t rng = 42;
  acl_relay_req_t r = sample_req(), o;
  uint8_t good[256], buf[256];
  size_t n = acl_relay_encode_req(&r, good, sizeof(good));
  int accepted = 0;
  for (int it = 0; it < 200000; it++) {
    size_t len = (size_t)(th_rand(&rng) % sizeof(buf));
    if (it & 1) {
      for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)th_rand(&rng);
    } else {
      memcpy(buf, good, n);
      len = n;
      int flips = 1 + (int)(th_rand(&rng) % 4);
      for (int f = 0; f < flips; f++)
        buf[th_rand(&rng) % n] ^= (uint8_t)(1u << (th_rand(&rng) % 8));
    }
    long rc = acl_relay_decode_req(buf, len, &o);
    cr_assert(rc == -1 || rc == 0 || rc == (long)n);
    if (rc > 0) {
      accepted++;
      cr_assert_lt(o.key.coll, ACL_NUM_COLL);
      cr_assert_eq(o.flags & ~ACL_RELAY_F_RESTRICT, 0);
      cr_assert_geq(o.rank, -1);
      cr_assert_neq(o.host_id, 0);
    }
    acl_relay_push_t po;
    rc = acl_relay_decode_push(buf, len, &po);
    cr_assert(rc == -1 || rc == 0 || rc == 4 + ACL_RELAY_PUSH_LEN);
    acl_relay_resp_t ro;
    rc = acl_relay_decode_resp(buf, len, &ro);
    cr_assert(rc == -1 || rc == 0 || rc == 4 + ACL_RELAY_RESP_LEN);
    if (rc > 0 && ro.status == ACL_RELAY_OK)
      cr_assert(ro.len > 0 && ro.cand.algo >= -1 && ro.cand.algo < ACL_NUM_ALGO);
  }
  cr_assert_gt(accepted, 0); /* flips in the payload values are legal */
}

Test(wire, coordinator_address)
{
  char host[64], err[256];
  int port = 0;
  cr_assert_eq(acl_relay_parse_addr("10.0.0.1:29501", NULL, NULL, host, sizeof(host), &port, err,
                                    sizeof(err)),
               0);
  cr_assert_str_eq(host, "10.0.0.1");
  cr_assert_eq(port, 29501);
  cr_assert_eq(
      acl_relay_parse_addr("[::1]:7000", NULL, NULL, host, sizeof(host), &port, err, sizeof(err)),
      0);
  cr_assert_str_eq(host, "::1");
  cr_assert_eq(port, 7000);
  cr_assert_eq(
      acl_relay_parse_addr("", "node-0", "29500", host, sizeof(host), &port, err, sizeof(err)), 0);
  cr_assert_str_eq(host, "node-0");
  cr_assert_eq(port, 29501);
  const char *bad[] = {"host",       "host:",    ":80",    "host:0",
                       "host:65536", "host:80x", "::1:80", "[::1]80"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cr_assert_eq(
        acl_relay_parse_addr(bad[i], NULL, NULL, host, sizeof(host), &port, err, sizeof(err)), -1,
        "%s accepted", bad[i]);
    cr_assert(strstr(err, "AUTOCCL_COORDINATOR"), "%s", err);
  }
  cr_assert_eq(
      acl_relay_parse_addr(NULL, "node-0", "65535", host, sizeof(host), &port, err, sizeof(err)),
      -1);
  cr_assert(strstr(err, "MASTER_PORT"), "%s", err);
  cr_assert_eq(acl_relay_parse_addr(NULL, NULL, NULL, host, sizeof(host), &port, err, sizeof(err)),
               -1);
}

/* Two simulated hosts x two processes: followers apply relayed blocks. */
Test(hosts, two_hosts_agree, .timeout = 60)
{
  run_spec_t s = {.nprocs = 4,
                  .ranks_per_proc = 1,
                  .ncomms = 1,
                  .calls = 20000,
                  .keep_pct = 95,
                  .delay_per_mille = 3,
                  .bad_proto_rank = -1,
                  .nnodes = 2,
                  .lag = 200};
  run_result_t r;
  cr_assert_eq(run_consensus(&s, &r), 0);
  fprintf(stderr, "  2 hosts x 2 procs, 20000 calls: %.2f s, %llu distinct\n", r.seconds,
          (unsigned long long)r.distinct);
  cr_assert_eq(r.child_fail, 0, "%s", r.first_error);
  cr_assert_eq(r.recorded, 4 * 20000);
  cr_assert_eq(r.disagreements, 0);
  cr_assert_geq(r.distinct, 3);
}

/* Two hosts, each one process driving two ranks from one thread; the
 * follower host's rank 3 lacks RING/LL128. */
Test(hosts, two_hosts_grouped_with_mask, .timeout = 60)
{
  run_spec_t s = {.nprocs = 2,
                  .ranks_per_proc = 2,
                  .ncomms = 2,
                  .calls = 8000,
                  .keep_pct = 95,
                  .bad_proto_rank = 3,
                  .bad_proto = 1,
                  .nnodes = 2,
                  .lag = 200,
                  .permute = 1};
  run_result_t r;
  cr_assert_eq(run_consensus(&s, &r), 0);
  cr_assert_eq(r.child_fail, 0, "%s", r.first_error);
  cr_assert_eq(r.disagreements, 0);
  cr_assert_eq(r.bad_choice, 0);
  cr_assert_gt(r.non_nccl, 0);
}

typedef struct host_proc {
  pid_t pid;
  int ready[2], go[2];
} host_proc_t;

static void spawn_rank(host_proc_t *hp, uint64_t id, int rank, const char *ns, int port,
                       int timeout_ms, int warmup, int ncalls_before_ready)
{
  cr_assert_eq(pipe(hp->ready), 0);
  cr_assert_eq(pipe(hp->go), 0);
  hp->pid = fork();
  if (hp->pid)
    return;
  th_rank_t r;
  th_params(&r, id, rank, 2, 2, ns);
  snprintf(r.cfg.coordinator, sizeof(r.cfg.coordinator), "127.0.0.2:%d", port);
  r.cfg.timeout_ms = timeout_ms;
  r.cfg.warmup_calls = warmup;
  char err[256];
  acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
  if (!c)
    _exit(2);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  acl_wkey_t k = th_key(id, 4, 1u << 20);
  acl_decision_t d;
  for (int i = 0; i < ncalls_before_ready; i++)
    if (acl_cons_decide(c, &k, cost, &d, err, sizeof(err)) != 0)
      _exit(3);
  char b;
  if (write(hp->ready[1], "y", 1) != 1 || read(hp->go[0], &b, 1) != 1)
    _exit(4);
  acl_cons_destroy(c);
  _exit(0);
}

/* The leader host dies: the follower fails with a clear message within the
 * timeout instead of hanging. */
Test(hosts, dead_decider_times_out, .timeout = 30)
{
  uint64_t id = th_comm_id(21);
  int port = th_free_port("127.0.0.2");
  host_proc_t leader;
  spawn_rank(&leader, id, 0, "hA", port, 5000, 3, 1);
  char b;
  cr_assert_eq(read(leader.ready[0], &b, 1), 1);
  th_rank_t r;
  th_params(&r, id, 1, 2, 2, "hB");
  snprintf(r.cfg.coordinator, sizeof(r.cfg.coordinator), "127.0.0.2:%d", port);
  r.cfg.timeout_ms = 800;
  char err[256];
  acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
  cr_assert_not_null(c, "%s", err);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  acl_wkey_t k = th_key(id, 4, 1u << 20);
  acl_decision_t d;
  for (int i = 0; i < 10; i++)
    cr_assert_eq(acl_cons_decide(c, &k, cost, &d, err, sizeof(err)), 0, "%s", err);
  acl_cons_stats_t st;
  acl_cons_stats(c, &st);
  cr_assert_eq(st.role, 1);
  cr_assert_gt(st.relay_calls, 0);
  kill(leader.pid, SIGKILL);
  th_wait(leader.pid, 5000);
  char name[128]; /* the dead leader host's segment: nobody left there to remove it */
  snprintf(name, sizeof(name), "/autoccl-%u-%016llx-hA", (unsigned)getuid(),
           (unsigned long long)id);
  shm_unlink(name);
  double t0 = acl_mono_s();
  int rc = 0;
  for (int i = 0; i < 100000 && rc == 0; i++)
    rc = acl_cons_decide(c, &k, cost, &d, err, sizeof(err));
  double dt = acl_mono_s() - t0;
  cr_assert_neq(rc, 0, "the follower never needed the dead leader");
  cr_assert(strstr(err, "leader host") && strstr(err, "800 ms"), "%s", err);
  cr_assert_lt(dt, 3.0, "failed after %.2f s (timeout 0.8 s)", dt);
  acl_cons_destroy(c);
}

/* No leader at all: bounded failure. */
Test(hosts, no_leader_times_out, .timeout = 20)
{
  uint64_t id = th_comm_id(22);
  th_rank_t r;
  th_params(&r, id, 1, 2, 2, "hB");
  snprintf(r.cfg.coordinator, sizeof(r.cfg.coordinator), "127.0.0.2:%d", th_free_port("127.0.0.2"));
  r.cfg.timeout_ms = 500;
  char err[256];
  acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
  cr_assert_not_null(c, "%s", err);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  acl_wkey_t k = th_key(id, 4, 4096);
  acl_decision_t d;
  double t0 = acl_mono_s();
  cr_assert_neq(acl_cons_decide(c, &k, cost, &d, err, sizeof(err)), 0);
  cr_assert_lt(acl_mono_s() - t0, 2.0);
  cr_assert(strstr(err, "127.0.0.2"), "%s", err);
  acl_cons_destroy(c);
}

/* A follower host with other settings is refused by the leader host; garbage
 * on the relay port drops that connection only. */
Test(hosts, mismatch_and_garbage, .timeout = 30)
{
  uint64_t id = th_comm_id(23);
  int port = th_free_port("127.0.0.2");
  host_proc_t leader;
  spawn_rank(&leader, id, 0, "hA", port, 5000, 3, 1);
  char b;
  cr_assert_eq(read(leader.ready[0], &b, 1), 1);

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
  cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  cr_assert_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
  char rb[16];
  cr_assert_eq(read(fd, rb, sizeof(rb)), 0, "garbage got an answer");
  close(fd);

  th_rank_t r;
  th_params(&r, id, 1, 2, 2, "hB");
  snprintf(r.cfg.coordinator, sizeof(r.cfg.coordinator), "127.0.0.2:%d", port);
  r.cfg.warmup_calls = 9;
  char err[256];
  acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
  cr_assert_not_null(c, "%s", err);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  acl_wkey_t k = th_key(id, 4, 1u << 20);
  acl_decision_t d;
  cr_assert_neq(acl_cons_decide(c, &k, cost, &d, err, sizeof(err)), 0);
  cr_assert(strstr(err, "settings differ"), "%s", err);
  acl_cons_destroy(c);

  /* a matching follower still works after both */
  r.cfg.warmup_calls = 3;
  c = acl_cons_create(&r.p, err, sizeof(err));
  cr_assert_not_null(c, "%s", err);
  cr_assert_eq(acl_cons_decide(c, &k, cost, &d, err, sizeof(err)), 0, "%s", err);
  acl_cons_destroy(c);
  cr_assert_eq(write(leader.go[1], "g", 1), 1);
  cr_assert_eq(th_wait(leader.pid, 5000), 0);
}

typedef struct grown_log {
  int n;
  uint32_t widx[16];
  uint64_t commit[16];
} grown_log_t;

static void log_grown(void *ctx, uint32_t widx, uint64_t commit)
{
  grown_log_t *g = ctx;
  if (g->n < 16) {
    g->widx[g->n] = widx;
    g->commit[g->n] = commit;
  }
  g->n++;
}

/* The server's commit: the smallest held end over live hosts, never
 * lowered; a dead host stops counting at once; a late host catches up
 * before it counts. */
Test(commit, horizon_over_live_hosts)
{
  acl_relay_commit_t *rc = acl_relay_commit_create();
  cr_assert_not_null(rc);
  grown_log_t g = {0};
  int a = acl_relay_commit_join(rc, 0xa), b = acl_relay_commit_join(rc, 0xb);
  cr_assert(a >= 0 && b >= 0 && a != b);
  cr_assert_eq(acl_relay_commit_join(rc, 0xa), a, "a second connection of host a");
  cr_assert_eq(acl_relay_commit_held(rc, b, 3, 0, log_grown, &g), 0);
  cr_assert_eq(acl_relay_commit_held(rc, a, 3, 1024, log_grown, &g), 0, "b holds nothing yet");
  cr_assert_eq(g.n, 0);
  cr_assert_eq(acl_relay_commit_held(rc, b, 3, 512, log_grown, &g), 512);
  cr_assert(g.n == 1 && g.widx[0] == 3 && g.commit[0] == 512, "one push of the growth");
  cr_assert_eq(acl_relay_commit_held(rc, b, 3, 100, log_grown, &g), 512, "never lowered");
  cr_assert_eq(acl_relay_commit_held(rc, a, 4, 8, log_grown, &g), 8, "per workload");
  /* b dies (its only connection closes): the commit grows to a's */
  acl_relay_commit_leave(rc, b, log_grown, &g);
  cr_assert_eq(acl_relay_commit_held(rc, a, 3, 1024, log_grown, &g), 1024);
  cr_assert_eq(g.commit[g.n - 1], 1024);
  /* a restarted host (new id) holding less never lowers it nor holds it
   * back until it caught up */
  int c = acl_relay_commit_join(rc, 0xc);
  cr_assert_eq(acl_relay_commit_held(rc, c, 3, 4, log_grown, &g), 1024);
  cr_assert_eq(acl_relay_commit_held(rc, a, 3, 2048, log_grown, &g), 2048, "c is not in yet");
  cr_assert_eq(acl_relay_commit_held(rc, c, 3, 2048, log_grown, &g), 2048);
  cr_assert_eq(acl_relay_commit_held(rc, a, 3, 4096, log_grown, &g), 2048, "c counts now");
  /* a's first connection closing leaves it live through its second */
  acl_relay_commit_leave(rc, a, log_grown, &g);
  cr_assert_eq(acl_relay_commit_held(rc, c, 3, 3000, log_grown, &g), 3000);
  cr_assert_eq(acl_relay_commit_held(rc, -1, 3, 9999, log_grown, &g), 3000, "no slot: no say");
  cr_assert_eq(acl_relay_commit_held(rc, a, 1u << 20, 5, log_grown, &g), 0, "widx out of range");
  acl_relay_commit_destroy(rc);
  acl_relay_commit_destroy(NULL);
}
