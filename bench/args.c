/* Command line of autoccl-bench (nccl-tests style). No CUDA here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/bench.h"

void acl_bench_cfg_defaults(acl_bench_cfg_t *c)
{
  memset(c, 0, sizeof(*c));
  c->minbytes = 32u << 20;
  c->maxbytes = 32u << 20;
  c->factor = 2.0;
  c->iters = 20;
  c->warmup = 5;
  c->check = 0;
  c->dt = ACL_BENCH_DT_FLOAT;
  c->op = ACL_BENCH_OP_SUM;
  c->coll = ACL_BENCH_COLL_ALL_REDUCE;
  c->root = 0;
  c->ngpus = 1;
  c->ranks_per_gpu = 1;
  c->procs = true;
  c->gemm_duty = 1.0;
  c->gemm_n = 8192;
  c->reps = 3;
  snprintf(c->sweep_algos, sizeof(c->sweep_algos), "Ring,Tree,PAT,NVLS,NVLSTree");
  snprintf(c->sweep_protos, sizeof(c->sweep_protos), "LL,LL128,Simple");
  snprintf(c->sweep_channels, sizeof(c->sweep_channels), "0,16,32");
  c->sweep_warmup = 20;
  c->sweep_reps = 1;
  c->child_timeout = 600.0;
  c->stock_channels = ACL_BENCH_STOCK_CH_DEFAULT;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
  if (!s || !*s)
    return -1;
  errno = 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

static int parse_double(const char *s, double *out)
{
  if (!s || !*s)
    return -1;
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, ACL_BENCH_NAME ": error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '" ACL_BENCH_NAME " --help'.\n");
  va_end(ap);
  return ACL_BENCH_EXIT_USAGE;
}

enum {
  OPT_PROCS = 1000,
  OPT_SINGLE,
  OPT_INPLACE,
  OPT_INTERF,
  OPT_GEMM_SIZE,
  OPT_COMPARE,
  OPT_PLUGIN,
  OPT_TABLE,
  OPT_REPS,
  OPT_SWEEP,
  OPT_ADVISE,
  OPT_SWEEP_ALGOS,
  OPT_SWEEP_PROTOS,
  OPT_SWEEP_CH,
  OPT_SWEEP_WARMUP,
  OPT_WARMUP_TIME,
  OPT_SWEEP_REPS,
  OPT_MODE_ENV,
  OPT_CEILING,
  OPT_STOCK_CH,
  OPT_CHILD_TIMEOUT,
  OPT_JSON,
  OPT_INTERNAL,
  OPT_FAKE,
  OPT_LABEL,
  OPT_TRACE,
  OPT_TRACE_FILE,
  OPT_RANKS_PER_GPU,
  OPT_MPS,
  OPT_FAKE_NCCL
};

static int copy_str(char *dst, size_t len, const char *src, const char *what)
{
  if (strlen(src) >= len)
    return usage_error("%s is too long", what);
  memcpy(dst, src, strlen(src) + 1);
  return 0;
}

static int valid_list(const char *s)
{
  /* comma-separated names: letters, digits */
  if (!*s)
    return 0;
  int prev_comma = 1;
  for (; *s; s++) {
    if (*s == ',') {
      if (prev_comma)
        return 0;
      prev_comma = 1;
    } else if (isalnum((unsigned char)*s)) {
      prev_comma = 0;
    } else {
      return 0;
    }
  }
  return !prev_comma;
}

int acl_bench_cfg_parse(acl_bench_cfg_t *c, int argc, char **argv)
{
  static const struct option lo[] = {
      {"minbytes", required_argument, 0, 'b'},
      {"maxbytes", required_argument, 0, 'e'},
      {"stepfactor", required_argument, 0, 'f'},
      {"iters", required_argument, 0, 'n'},
      {"warmup_iters", required_argument, 0, 'w'},
      {"warmup", required_argument, 0, 'w'},
      {"check", required_argument, 0, 'c'},
      {"datatype", required_argument, 0, 'd'},
      {"op", required_argument, 0, 'o'},
      {"coll", required_argument, 0, 'C'},
      {"gpus", required_argument, 0, 'g'},
      {"ngpus", required_argument, 0, 'g'},
      {"root", required_argument, 0, 'r'},
      {"procs", no_argument, 0, OPT_PROCS},
      {"single", no_argument, 0, OPT_SINGLE},
      {"inplace", no_argument, 0, OPT_INPLACE},
      {"interference", required_argument, 0, OPT_INTERF},
      {"gemm-size", required_argument, 0, OPT_GEMM_SIZE},
      {"compare", required_argument, 0, OPT_COMPARE},
      {"plugin", required_argument, 0, OPT_PLUGIN},
      {"table", required_argument, 0, OPT_TABLE},
      {"reps", required_argument, 0, OPT_REPS},
      {"sweep", no_argument, 0, OPT_SWEEP},
      {"advise", no_argument, 0, OPT_ADVISE},
      {"sweep-algos", required_argument, 0, OPT_SWEEP_ALGOS},
      {"sweep-protos", required_argument, 0, OPT_SWEEP_PROTOS},
      {"sweep-channels", required_argument, 0, OPT_SWEEP_CH},
      {"sweep-warmup", required_argument, 0, OPT_SWEEP_WARMUP},
      {"warmup-time", required_argument, 0, OPT_WARMUP_TIME},
      {"sweep-reps", required_argument, 0, OPT_SWEEP_REPS},
      {"mode-env", required_argument, 0, OPT_MODE_ENV},
      {"ceiling", required_argument, 0, OPT_CEILING},
      {"stock-channels", required_argument, 0, OPT_STOCK_CH},
      {"child-timeout", required_argument, 0, OPT_CHILD_TIMEOUT},
      {"json", no_argument, 0, OPT_JSON},
      {"quiet", no_argument, 0, 'q'},
      {"help", no_argument, 0, 'h'},
      {"version", no_argument, 0, 'V'},
      {"internal-child", no_argument, 0, OPT_INTERNAL},
      {"fake", no_argument, 0, OPT_FAKE},
      {"label", required_argument, 0, OPT_LABEL},
      {"trace", required_argument, 0, OPT_TRACE},
      {"trace-file", required_argument, 0, OPT_TRACE_FILE},
      {"ranks-per-gpu", required_argument, 0, OPT_RANKS_PER_GPU},
      {"mps", required_argument, 0, OPT_MPS},
      {"fake-nccl-version", required_argument, 0, OPT_FAKE_NCCL},
      {0, 0, 0, 0},
  };
  bool root_set = false;
  int opt;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":b:e:f:n:w:c:d:o:C:g:r:qhV", lo, NULL)) != -1) {
    const char *a = optarg;
    int rc = 0;
    switch (opt) {
    case 'b':
      if (acl_bench_parse_size(a, &c->minbytes))
        return usage_error("-b: bad size '%s' (e.g. 64K, 8M, 1G)", a);
      break;
    case 'e':
      if (acl_bench_parse_size(a, &c->maxbytes))
        return usage_error("-e: bad size '%s' (e.g. 64K, 8M, 1G)", a);
      break;
    case 'f':
      if (parse_double(a, &c->factor) || c->factor < 1.0 || c->factor > 1024.0)
        return usage_error("-f: step factor must be a number in [1, 1024], got '%s'", a);
      break;
    case 'n':
      if (parse_int(a, 1, 10000000, &c->iters))
        return usage_error("-n: iterations must be an integer >= 1, got '%s'", a);
      c->iters_set = true;
      break;
    case 'w':
      if (parse_int(a, 0, 10000000, &c->warmup))
        return usage_error("-w: warm-up iterations must be an integer >= 0, got '%s'", a);
      c->warmup_set = true;
      break;
    case 'c':
      if (parse_int(a, 0, 1, &c->check))
        return usage_error("-c: check must be 0 or 1, got '%s'", a);
      break;
    case 'd':
      if (acl_bench_parse_dtype(a, &c->dt))
        return usage_error("-d: unknown datatype '%s' (float, half, bfloat16, double, int8, uint8, "
                           "int32, uint32, int64, uint64)",
                           a);
      break;
    case 'o':
      if (acl_bench_parse_op(a, &c->op))
        return usage_error("-o: unknown reduction '%s' (sum, prod, max, min)", a);
      break;
    case 'C':
      if (acl_bench_parse_coll(a, &c->coll))
        return usage_error("-C: unknown collective '%s' (all_reduce, all_gather, reduce_scatter, "
                           "broadcast, reduce)",
                           a);
      break;
    case 'g':
      if (parse_int(a, 1, ACL_BENCH_MAX_RANKS, &c->ngpus))
        return usage_error("-g: rank count must be 1..%d, got '%s'", ACL_BENCH_MAX_RANKS, a);
      break;
    case OPT_RANKS_PER_GPU:
      if (parse_int(a, 1, ACL_BENCH_MAX_RANKS, &c->ranks_per_gpu))
        return usage_error("--ranks-per-gpu: expected 1..%d, got '%s'", ACL_BENCH_MAX_RANKS, a);
      break;
    case OPT_MPS:
      if (!strcmp(a, "detect"))
        c->mps = ACL_BENCH_MPS_DETECT;
      else if (!strcmp(a, "start"))
        c->mps = ACL_BENCH_MPS_START;
      else
        return usage_error("--mps: expected detect or start, got '%s'", a);
      break;
    case OPT_FAKE_NCCL:
      if (parse_int(a, 1, 1000000, &c->fake_nccl_version))
        return usage_error("--fake-nccl-version: expected a code like 23007, got '%s'", a);
      break;
    case 'r':
      if (parse_int(a, 0, ACL_BENCH_MAX_RANKS - 1, &c->root))
        return usage_error("-r: bad root rank '%s'", a);
      root_set = true;
      break;
    case OPT_PROCS:
      c->procs = true;
      break;
    case OPT_SINGLE:
      c->procs = false;
      break;
    case OPT_INPLACE:
      c->inplace = true;
      break;
    case OPT_INTERF:
      if (strcasecmp(a, "none") == 0) {
        c->gemm = false;
      } else if (strncmp(a, "gemm", 4) == 0 && (a[4] == 0 || a[4] == ':')) {
        c->gemm = true;
        c->gemm_duty = 1.0;
        if (a[4] == ':' &&
            (parse_double(a + 5, &c->gemm_duty) || c->gemm_duty <= 0.0 || c->gemm_duty > 1.0))
          return usage_error("--interference: duty must be a number in (0, 1], got '%s'", a + 5);
      } else {
        return usage_error("--interference: expected gemm[:DUTY] or none, got '%s'", a);
      }
      break;
    case OPT_GEMM_SIZE:
      if (parse_int(a, 128, 65536, &c->gemm_n))
        return usage_error("--gemm-size: expected 128..65536, got '%s'", a);
      break;
    case OPT_COMPARE: {
      char tmp[256];
      if (strlen(a) >= sizeof(tmp))
        return usage_error("--compare: list too long");
      memcpy(tmp, a, strlen(a) + 1);
      c->nmodes = 0;
      char *save = NULL;
      for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "default") != 0 && strcmp(t, "autoccl") != 0 && strcmp(t, "table") != 0 &&
            strcmp(t, "ceiling") != 0)
          return usage_error("--compare: unknown mode '%s' (default, ceiling, autoccl, table)", t);
        for (int i = 0; i < c->nmodes; i++)
          if (!strcmp(c->modes[i], t))
            return usage_error("--compare: mode '%s' given twice", t);
        if (c->nmodes >= ACL_BENCH_MAX_MODES)
          return usage_error("--compare: too many modes");
        snprintf(c->modes[c->nmodes++], sizeof(c->modes[0]), "%s", t);
      }
      if (c->nmodes == 0)
        return usage_error("--compare: empty mode list");
      break;
    }
    case OPT_PLUGIN:
      rc = copy_str(c->plugin, sizeof(c->plugin), a, "--plugin");
      break;
    case OPT_CEILING:
      if (parse_int(a, 1, 64, &c->ceiling))
        return usage_error("--ceiling: expected 1..64 channels, got '%s'", a);
      break;
    case OPT_STOCK_CH:
      if (parse_int(a, 1, 64, &c->stock_channels))
        return usage_error("--stock-channels: expected 1..64 channels, got '%s'", a);
      break;
    case OPT_TABLE:
      rc = copy_str(c->table, sizeof(c->table), a, "--table");
      break;
    case OPT_REPS:
      if (parse_int(a, 1, 1000, &c->reps))
        return usage_error("--reps: expected 1..1000, got '%s'", a);
      break;
    case OPT_SWEEP:
      c->sweep = true;
      break;
    case OPT_ADVISE:
      c->advise = true;
      break;
    case OPT_SWEEP_ALGOS:
      if (!valid_list(a))
        return usage_error("--sweep-algos: expected a comma list like Ring,Tree, got '%s'", a);
      rc = copy_str(c->sweep_algos, sizeof(c->sweep_algos), a, "--sweep-algos");
      break;
    case OPT_SWEEP_PROTOS:
      if (!valid_list(a))
        return usage_error("--sweep-protos: expected a comma list like LL,LL128,Simple, got '%s'",
                           a);
      rc = copy_str(c->sweep_protos, sizeof(c->sweep_protos), a, "--sweep-protos");
      break;
    case OPT_SWEEP_CH: {
      if (!valid_list(a))
        return usage_error("--sweep-channels: expected a comma list of integers, got '%s'", a);
      for (const char *p = a; *p; p++)
        if (!isdigit((unsigned char)*p) && *p != ',')
          return usage_error("--sweep-channels: expected a comma list of integers, got '%s'", a);
      rc = copy_str(c->sweep_channels, sizeof(c->sweep_channels), a, "--sweep-channels");
      break;
    }
    case OPT_SWEEP_WARMUP:
      if (parse_int(a, 0, 10000000, &c->sweep_warmup))
        return usage_error("--sweep-warmup: expected an integer >= 0, got '%s'", a);
      break;
    case OPT_WARMUP_TIME: {
      char *end;
      double v = strtod(a, &end);
      if (*end || end == a || !(v >= 0.0 && v <= 3600.0))
        return usage_error("--warmup-time: expected seconds in 0..3600, got '%s'", a);
      c->warmup_s = v;
      break;
    }
    case OPT_SWEEP_REPS:
      if (parse_int(a, 1, 1000, &c->sweep_reps))
        return usage_error("--sweep-reps: expected 1..1000, got '%s'", a);
      break;
    case OPT_MODE_ENV: {
      const char *colon = strchr(a, ':');
      const char *eq = colon ? strchr(colon + 1, '=') : NULL;
      if (!colon || !eq || colon == a || eq == colon + 1 ||
          (size_t)(colon - a) >= sizeof(c->mode_env[0].mode))
        return usage_error("--mode-env: expected MODE:VAR=VALUE, got '%s'", a);
      if (c->nmode_env >= ACL_BENCH_MAX_MODE_ENV)
        return usage_error("--mode-env: too many");
      acl_bench_mode_env_t *m = &c->mode_env[c->nmode_env++];
      snprintf(m->mode, sizeof(m->mode), "%.*s", (int)(colon - a), a);
      if (strcmp(m->mode, "*") != 0 && strcmp(m->mode, "default") != 0 &&
          strcmp(m->mode, "autoccl") != 0 && strcmp(m->mode, "table") != 0)
        return usage_error("--mode-env: unknown mode '%s'", m->mode);
      rc = copy_str(m->assign, sizeof(m->assign), colon + 1, "--mode-env");
      break;
    }
    case OPT_CHILD_TIMEOUT:
      if (parse_double(a, &c->child_timeout) || c->child_timeout < 0)
        return usage_error("--child-timeout: expected seconds >= 0, got '%s'", a);
      break;
    case OPT_JSON:
      c->json = true;
      break;
    case 'q':
      c->quiet = true;
      break;
    case 'h':
      acl_bench_print_help(stdout);
      return -1;
    case 'V':
      printf(ACL_BENCH_NAME " " ACL_BENCH_VERSION "\n");
      return -1;
    case OPT_INTERNAL:
      c->internal_child = true;
      break;
    case OPT_FAKE:
      c->fake = true;
      break;
    case OPT_LABEL:
      rc = copy_str(c->label, sizeof(c->label), a, "--label");
      break;
    case OPT_TRACE:
      rc = copy_str(c->trace_dir, sizeof(c->trace_dir), a, "--trace");
      break;
    case OPT_TRACE_FILE:
      rc = copy_str(c->trace_file, sizeof(c->trace_file), a, "--trace-file");
      break;
    case ':': {
      const char *o = argv[optind - 1];
      return usage_error("option '%s' needs an argument", o ? o : "?");
    }
    case '?':
    default: {
      if (optopt && optopt < 256)
        return usage_error("unknown option '-%c'", optopt);
      return usage_error("unknown option '%s'", argv[optind - 1]);
    }
    }
    if (rc)
      return rc;
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  if (c->minbytes == 0)
    return usage_error("-b: size must be > 0");
  if (c->minbytes > c->maxbytes)
    return usage_error("-b (%zu) is larger than -e (%zu)", c->minbytes, c->maxbytes);
  if (c->factor <= 1.0 && c->minbytes != c->maxbytes)
    return usage_error("-f must be > 1 when -b and -e differ");
  if (c->ranks_per_gpu > c->ngpus)
    return usage_error("--ranks-per-gpu %d is more than the %d rank%s of -g %d", c->ranks_per_gpu,
                       c->ngpus, c->ngpus == 1 ? "" : "s", c->ngpus);
  if (c->ngpus % c->ranks_per_gpu)
    return usage_error("-g %d is not a multiple of --ranks-per-gpu %d (every GPU runs K ranks)",
                       c->ngpus, c->ranks_per_gpu);
  if (c->root >= c->ngpus) {
    if (root_set || c->coll == ACL_BENCH_COLL_BROADCAST || c->coll == ACL_BENCH_COLL_REDUCE)
      return usage_error("-r %d: root must be < the number of ranks (%d)", c->root, c->ngpus);
  }
  if (c->advise &&
      (c->sweep || c->nmodes > 1 || (c->nmodes == 1 && strcmp(c->modes[0], "default") != 0)))
    return usage_error("--advise measures against NCCL's defaults: drop --sweep and --compare");
  if ((c->sweep || c->advise) && c->nmodes == 0) {
    c->nmodes = 1;
    snprintf(c->modes[0], sizeof(c->modes[0]), "default");
  }
  for (int i = 0; i < c->nmodes; i++)
    if (!strcmp(c->modes[i], "table") && !c->table[0])
      return usage_error("--compare table needs --table PATH");
  if (c->ceiling && c->ceiling <= c->stock_channels)
    return usage_error("--ceiling %d must be above --stock-channels %d (what NCCL builds as it "
                       "ships)",
                       c->ceiling, c->stock_channels);
  if (c->nmodes > 0 && c->internal_child)
    return usage_error("--compare cannot be used with --internal-child");
  if (c->nmodes > 0) {
    if (!c->warmup_set)
      c->warmup = 500;
    if (!c->iters_set)
      c->iters = 50;
  }
  if (!c->label[0])
    snprintf(c->label, sizeof(c->label), "%s", c->nmodes ? "compare" : "run");
  return 0;
}
