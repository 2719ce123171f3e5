/* autoccl-bench entry point: parse, then either measure (worker) or drive
 * a comparison of modes in child processes (compare). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench.h"

int main(int argc, char **argv) {
  struct bench_cfg c;
  cfg_defaults(&c);
  int rc = cfg_parse(&c, argc, argv);
  if (rc < 0) return BENCH_EXIT_OK; /* --help / --version */
  if (rc) return rc;
  if (c.nmodes > 0) return compare_main(&c);
  return worker_main(&c);
}
