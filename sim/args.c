/* autoccl-sim's command line. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"

#define PLUGIN_NAME "libnccl-tuner-autoccl.so"

void acl_sim_usage(FILE *f)
{
  fputs("Usage: autoccl-sim [OPTIONS]\n"
        "Plays NCCL 2.28's part for N simulated ranks: forks rank processes that load\n"
        "the autoccl plugin and call its tuner (v5..v2) and profiler (v5) ABIs as NCCL\n"
        "would, \"run\" every collective on a performance landscape, and check that all\n"
        "ranks ran the same thing for every call.\n"
        "\n"
        "Cluster:\n"
        "  --ranks N              ranks (default 4, 1..256)\n"
        "  --hosts H              simulated hosts; N must divide evenly (default 1).\n"
        "                         Each host gets AUTOCCL_SHM_SALT=<host>, nNodes=H and\n"
        "                         AUTOCCL_COORDINATOR=127.0.0.1:<coordinator port>\n"
        "  --coordinator-port P   port for the multi-host relay (default: a free one)\n"
        "  --comms N              communicators per rank (default 1, 1..256)\n"
        "  --threads-per-proc K   ranks driven by one process, each on its own thread\n"
        "                         (default 1; ranks per host must be a multiple of K)\n"
        "  --group-mode           one thread drives the process's ranks NCCL-group style:\n"
        "                         getCollInfo for rank 0, then rank 1, ... (without\n"
        "                         --threads-per-proc: all ranks of a host in one process)\n"
        "  --nccl V               the NCCL to play: 2.28 (default; tuner v5..v2, profiler\n"
        "                         v5) or 2.30 (tuner v6 first, getChunkSize after each\n"
        "                         getCollInfo, profiler v6; synthetic landscapes get a\n"
        "                         chunk-size model)\n"
        "  --plugin PATH          plugin to load (default: " PLUGIN_NAME " from\n"
        "                         <exe dir>/../tuner/, <exe dir>/, <exe dir>/../lib/)\n"
        "\n"
        "Workload and performance:\n"
        "  --workload W           fsdp-llama8b | ddp | tp | mixed | torch-fsdp |\n"
        "                         torch-fsdp-1gpu | torch-ddp-1gpu (default mixed)\n"
        "  --landscape L          h200 | h200-traces[:single] (replay of recorded traces,\n"
        "                         docs/trace.md) | h200-1gpu-traces[:single] (recorded on\n"
        "                         one H200, 2 ranks, NCCL 2.30) | h100-1gpu-traces[:single]\n"
        "                         (the same on one H100) | synthetic[:SEED] (default h200)\n"
        "  --noise X              relative noise of every call, 0..1 (default 0.05)\n"
        "  --interference SPEC    compute overlapping the collectives, per training step:\n"
        "                         none (default) | demo (" ACL_SIM_INTERF_DEMO ") |\n"
        "                         comma list of FROM-TO=LEVEL (TO optional),\n"
        "                         every:PERIOD:LEN=LEVEL and every:PERIOD:FROM-TO=LEVEL;\n"
        "                         LEVEL in 0..1\n"
        "  --overlap-spread F     rank r's compute overlap is LEVEL x (1 - F r/(ranks-1)):\n"
        "                         ranks overlap differently (two ranks on one GPU), 0..1\n"
        "                         (default 0: every rank alike)\n"
        "  --stale-stamps F       NCCL's KernelCh stamps go stale for about a share F of each\n"
        "                         rank's calls, in runs of 256 calls, as NCCL 2.30 did with two\n"
        "                         ranks on one H200: a run repeats the stamps of the call 64\n"
        "                         earlier, or starts a channel 63 ms early, 0..1 (default 0)\n"
        "  --host-jitter US       random host delay before each call, 0..1000000 us\n"
        "  --capture-every N      call k of each communicator is captured into a CUDA graph\n"
        "                         when k % N == N-1: NCCL's profiler events say so before\n"
        "                         getCollInfo; the report counts captured calls that ran an\n"
        "                         exploratory candidate\n"
        "  --churn-every N        every N steps each rank destroys its communicators and\n"
        "                         creates them again under new ids (new_group, CommSplit),\n"
        "                         all but the first of several (the world communicator);\n"
        "                         the report gives each rank process's /dev/shm entries,\n"
        "                         descriptors, threads and RSS after the first and last churn\n"
        "  --seed N               seed of noise and jitter (default 1)\n"
        "\n"
        "Run:\n"
        "  --demo                 the README demo: --realtime --interference demo --port 9464\n"
        "                         --duration 600 (each overridable); prints where to watch\n"
        "  --duration S           wall-clock seconds (default 60)\n"
        "  --steps N              training steps instead of a duration\n"
        "  --realtime             sleep simulated durations (x --slowdown) and a simulated\n"
        "                         compute time per step, so a run can be watched\n"
        "  --slowdown X           wall seconds per simulated second with --realtime (default 1)\n"
        "  --step-compute-ms MS   simulated compute per training step (default 100)\n"
        "  --hang-timeout S       no call made for S seconds = hang: kill and fail (default 20)\n"
        "  --max-lag CALLS        how far a rank may run ahead of the slowest one (collectives\n"
        "                         synchronise; default 128, 1..100000)\n"
        "  --port P               AUTOCCL_HTTP_PORT for the rank processes: process i of a\n"
        "                         host serves P+i (hosts after the first: further up)\n"
        "  --json                 print the report as one JSON object on the last stdout line\n"
        "  -q, --quiet            no progress output\n"
        "  -v, --verbose          also print the plugin's INFO lines\n"
        "  --bench [ARGS]         run the landscape benchmark (--bench --help for its usage)\n"
        "  --dump-states          print the search's state machine (Mermaid) and exit\n"
        "  -h, --help             this text\n"
        "\n"
        "Exit status: 0 all ranks agreed on every call and the plugin returned no error;\n"
        "1 divergent decisions (a real NCCL would hang) or plugin errors; 2 bad usage,\n"
        "nothing run; 3 a rank crashed, hung or could not load the plugin.\n",
        f);
}

static bool num(const char *s, double lo, double hi, double *out)
{
  char *e;
  errno = 0;
  double v = strtod(s, &e);
  if (errno || e == s || *e || !isfinite(v) || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static bool inum(const char *s, long lo, long hi, long *out)
{
  char *e;
  errno = 0;
  long v = strtol(s, &e, 10);
  if (errno || e == s || *e || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static bool find_plugin(char *out, size_t len)
{
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return false;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return false;
  *slash = '\0';
  static const char *const rel[] = {"/../tuner/", "/", "/../lib/"};
  for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
    char cand[PATH_MAX + 64];
    snprintf(cand, sizeof(cand), "%s%s%s", exe, rel[i], PLUGIN_NAME);
    if (access(cand, R_OK) == 0) {
      char *real = realpath(cand, NULL);
      const char *use = real ? real : cand;
      size_t n = strlen(use);
      bool fits = n < len;
      if (fits)
        memcpy(out, use, n + 1);
      free(real);
      if (fits)
        return true;
    }
  }
  return false;
}

enum {
  OPT_RANKS = 256,
  OPT_HOSTS,
  OPT_COORD,
  OPT_COMMS,
  OPT_TPP,
  OPT_GROUP,
  OPT_PLUGIN,
  OPT_WORKLOAD,
  OPT_LAND,
  OPT_NOISE,
  OPT_INTERF,
  OPT_JITTER,
  OPT_SPREAD,
  OPT_STALE,
  OPT_SEED,
  OPT_DURATION,
  OPT_STEPS,
  OPT_LAG,
  OPT_REALTIME,
  OPT_SLOWDOWN,
  OPT_COMPUTE,
  OPT_HANG,
  OPT_PORT,
  OPT_JSON,
  OPT_DEMO,
  OPT_NCCL,
  OPT_CAPTURE,
  OPT_CHURN,
};

static const struct option longopts[] = {
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"hosts", required_argument, NULL, OPT_HOSTS},
    {"coordinator-port", required_argument, NULL, OPT_COORD},
    {"comms", required_argument, NULL, OPT_COMMS},
    {"threads-per-proc", required_argument, NULL, OPT_TPP},
    {"group-mode", no_argument, NULL, OPT_GROUP},
    {"plugin", required_argument, NULL, OPT_PLUGIN},
    {"workload", required_argument, NULL, OPT_WORKLOAD},
    {"landscape", required_argument, NULL, OPT_LAND},
    {"noise", required_argument, NULL, OPT_NOISE},
    {"interference", required_argument, NULL, OPT_INTERF},
    {"host-jitter", required_argument, NULL, OPT_JITTER},
    {"overlap-spread", required_argument, NULL, OPT_SPREAD},
    {"stale-stamps", required_argument, NULL, OPT_STALE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"max-lag", required_argument, NULL, OPT_LAG},
    {"realtime", no_argument, NULL, OPT_REALTIME},
    {"slowdown", required_argument, NULL, OPT_SLOWDOWN},
    {"step-compute-ms", required_argument, NULL, OPT_COMPUTE},
    {"hang-timeout", required_argument, NULL, OPT_HANG},
    {"port", required_argument, NULL, OPT_PORT},
    {"json", no_argument, NULL, OPT_JSON},
    {"demo", no_argument, NULL, OPT_DEMO},
    {"nccl", required_argument, NULL, OPT_NCCL},
    {"capture-every", required_argument, NULL, OPT_CAPTURE},
    {"churn-every", required_argument, NULL, OPT_CHURN},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define BAD(...)                                                                                   \
  do {                                                                                             \
    fprintf(stderr, "autoccl-sim: " __VA_ARGS__);                                                  \
    fputs("\n(autoccl-sim --help for usage)\n", stderr);                                           \
    return -1;                                                                                     \
  } while (0)

int acl_sim_parse_args(int argc, char **argv, acl_sim_opts_t *o, int *exit_code)
{
  memset(o, 0, sizeof(*o));
  o->nranks = 4;
  o->ncomms = 1;
  o->ranks_per_proc = 0;
  o->nhosts = 1;
  o->mix = ACL_SIM_MIX_MIXED;
  snprintf(o->landscape, sizeof(o->landscape), "h200");
  o->noise = 0.05;
  snprintf(o->interf_spec, sizeof(o->interf_spec), "none");
  o->duration_s = 60;
  o->port = -1;
  o->slowdown = 1.0;
  o->step_compute_s = 0.100;
  o->hang_timeout_s = 20;
  o->max_lag = 128;
  o->seed = 1;
  bool have_duration = false, have_steps = false, have_interf = false, have_port = false;
  long l;
  double d;
  char err[256];
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_RANKS:
      if (!inum(optarg, 1, ACL_SIM_MAX_RANKS, &l))
        BAD("--ranks '%s': expected an integer 1..%d", optarg, ACL_SIM_MAX_RANKS);
      o->nranks = (int)l;
      break;
    case OPT_HOSTS:
      if (!inum(optarg, 1, ACL_SIM_MAX_RANKS, &l))
        BAD("--hosts '%s': expected an integer 1..%d", optarg, ACL_SIM_MAX_RANKS);
      o->nhosts = (int)l;
      break;
    case OPT_COORD:
      if (!inum(optarg, 1, 65535, &l))
        BAD("--coordinator-port '%s': expected a port 1..65535", optarg);
      o->coord_port = (int)l;
      break;
    case OPT_COMMS:
      if (!inum(optarg, 1, ACL_SIM_MAX_COMMS, &l))
        BAD("--comms '%s': expected an integer 1..%d", optarg, ACL_SIM_MAX_COMMS);
      o->ncomms = (int)l;
      break;
    case OPT_TPP:
      if (!inum(optarg, 1, ACL_SIM_MAX_RANKS, &l))
        BAD("--threads-per-proc '%s': expected an integer 1..%d", optarg, ACL_SIM_MAX_RANKS);
      o->ranks_per_proc = (int)l;
      break;
    case OPT_GROUP:
      o->group_mode = true;
      break;
    case OPT_PLUGIN:
      if (strlen(optarg) >= sizeof(o->plugin))
        BAD("--plugin: path too long");
      snprintf(o->plugin, sizeof(o->plugin), "%s", optarg);
      break;
    case OPT_WORKLOAD:
      if ((l = acl_sim_mix_parse(optarg)) < 0)
        BAD("--workload '%s': expected fsdp-llama8b, ddp, tp, mixed, torch-fsdp, "
            "torch-fsdp-1gpu or torch-ddp-1gpu",
            optarg);
      o->mix = (acl_sim_mix_t)l;
      break;
    case OPT_LAND: {
      if (strcmp(optarg, "h200") != 0 && strcmp(optarg, "synthetic") != 0 &&
          !acl_land_is_trace_spec(optarg)) {
        char *e = NULL;
        errno = 0;
        if (strncmp(optarg, "synthetic:", 10) != 0 || !optarg[10] || optarg[10] == '-' ||
            ((void)strtoull(optarg + 10, &e, 0), errno || *e))
          BAD("--landscape '%s': expected h200, h200-traces[:single], "
              "h200-1gpu-traces[:single], h100-1gpu-traces[:single], synthetic or "
              "synthetic:SEED",
              optarg);
      }
      snprintf(o->landscape, sizeof(o->landscape), "%.63s", optarg);
      break;
    }
    case OPT_NCCL:
      if (strcmp(optarg, "2.28") != 0 && strcmp(optarg, "2.30") != 0)
        BAD("--nccl '%s': expected 2.28 or 2.30", optarg);
      o->nccl230 = strcmp(optarg, "2.30") == 0;
      break;
    case OPT_NOISE:
      if (!num(optarg, 0, 1, &o->noise))
        BAD("--noise '%s': expected a number 0..1", optarg);
      break;
    case OPT_INTERF:
      if (strlen(optarg) >= sizeof(o->interf_spec) ||
          !acl_sim_interf_parse(optarg, &o->interf, err, sizeof(err)))
        BAD("--interference: %s", strlen(optarg) >= sizeof(o->interf_spec) ? "too long" : err);
      snprintf(o->interf_spec, sizeof(o->interf_spec), "%s", optarg);
      have_interf = true;
      break;
    case OPT_JITTER:
      if (!num(optarg, 0, 1e6, &o->host_jitter_us))
        BAD("--host-jitter '%s': expected microseconds 0..1000000", optarg);
      break;
    case OPT_SPREAD:
      if (!num(optarg, 0, 1, &o->overlap_spread))
        BAD("--overlap-spread '%s': expected a share 0..1", optarg);
      break;
    case OPT_STALE:
      if (!num(optarg, 0, 1, &o->stale_stamps))
        BAD("--stale-stamps '%s': expected a share 0..1", optarg);
      break;
    case OPT_SEED: {
      char *e;
      errno = 0;
      unsigned long long v = strtoull(optarg, &e, 0);
      if (errno || e == optarg || *e || optarg[0] == '-')
        BAD("--seed '%s': expected a non-negative integer", optarg);
      o->seed = v;
      break;
    }
    case OPT_DURATION:
      if (!num(optarg, 1e-3, 7 * 86400.0, &o->duration_s))
        BAD("--duration '%s': expected seconds, 0.001..604800", optarg);
      have_duration = true;
      break;
    case OPT_STEPS:
      if (!inum(optarg, 1, LONG_MAX, &l))
        BAD("--steps '%s': expected a positive integer", optarg);
      o->steps = (uint64_t)l;
      have_steps = true;
      break;
    case OPT_LAG:
      if (!inum(optarg, 1, 100000, &l))
        BAD("--max-lag '%s': expected calls 1..100000", optarg);
      o->max_lag = (uint64_t)l;
      break;
    case OPT_REALTIME:
      o->realtime = true;
      break;
    case OPT_CAPTURE:
      if (!inum(optarg, 1, 1000000, &l))
        BAD("--capture-every '%s': expected calls 1..1000000", optarg);
      o->capture_every = (uint32_t)l;
      break;
    case OPT_CHURN:
      if (!inum(optarg, 1, 1000000, &l))
        BAD("--churn-every '%s': expected steps 1..1000000", optarg);
      o->churn_every = (uint32_t)l;
      break;
    case OPT_SLOWDOWN:
      if (!num(optarg, 1e-3, 1e6, &o->slowdown))
        BAD("--slowdown '%s': expected a number 0.001..1000000", optarg);
      break;
    case OPT_COMPUTE:
      if (!num(optarg, 0, 1e6, &d))
        BAD("--step-compute-ms '%s': expected milliseconds 0..1000000", optarg);
      o->step_compute_s = d / 1000.0;
      break;
    case OPT_HANG:
      if (!num(optarg, 0.1, 1e6, &o->hang_timeout_s))
        BAD("--hang-timeout '%s': expected seconds 0.1..1000000", optarg);
      break;
    case OPT_PORT:
      if (!inum(optarg, 1, 65535, &l))
        BAD("--port '%s': expected a port 1..65535", optarg);
      o->port = (int)l;
      have_port = true;
      break;
    case OPT_JSON:
      o->json = true;
      break;
    case OPT_DEMO:
      o->demo = true;
      break;
    case 'q':
      o->quiet = true;
      break;
    case 'v':
      o->verbose = true;
      break;
    case 'h':
      acl_sim_usage(stdout);
      *exit_code = 0;
      return 1;
    case ':':
      BAD("option '%s' needs a value", argv[optind - 1]);
    default:
      BAD("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    BAD("unexpected argument '%s'", argv[optind]);
  if (have_duration && have_steps)
    BAD("--duration and --steps exclude each other");
  if (o->demo) {
    o->realtime = true;
    if (!have_interf) {
      snprintf(o->interf_spec, sizeof(o->interf_spec), "demo");
      if (!acl_sim_interf_parse("demo", &o->interf, err, sizeof(err)))
        BAD("--demo: %s", err);
    }
    if (!have_port)
      o->port = 9464;
    if (!have_duration && !have_steps)
      o->duration_s = 600;
  }
  if (have_steps)
    o->duration_s = 0;
  if (o->nranks % o->nhosts)
    BAD("--ranks %d does not split evenly over --hosts %d", o->nranks, o->nhosts);
  int per_host = o->nranks / o->nhosts;
  if (o->ranks_per_proc == 0)
    o->ranks_per_proc = o->group_mode ? per_host : 1;
  if (per_host % o->ranks_per_proc)
    BAD("--threads-per-proc %d must divide the %d ranks of each host", o->ranks_per_proc, per_host);
  int nprocs = o->nranks / o->ranks_per_proc;
  if (o->port > 0 && o->port + nprocs - 1 > 65535)
    BAD("--port %d: the %d rank processes need ports up to %d", o->port, nprocs,
        o->port + nprocs - 1);
  if (!o->plugin[0]) {
    if (!find_plugin(o->plugin, sizeof(o->plugin)))
      BAD("cannot find %s next to the executable (build the 'plugin' target or pass "
          "--plugin PATH)",
          PLUGIN_NAME);
  } else if (access(o->plugin, R_OK) != 0) {
    BAD("--plugin %s: %s", o->plugin, strerror(errno));
  }
  return 0;
}
