/* autoccl-bench entry point: parse, then either measure (worker) or drive
 * a comparison of modes in child processes (compare). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench/bench.h"

int main(int argc, char **argv)
{
  acl_bench_cfg_t c;
  acl_bench_cfg_defaults(&c);
  int rc = acl_bench_cfg_parse(&c, argc, argv);
  if (rc < 0)
    return ACL_BENCH_EXIT_OK; /* --help / --version */
  if (rc)
    return rc;
  if (c.mps == ACL_BENCH_MPS_START && !c.internal_child && (rc = acl_bench_mps_start()) != 0)
    return rc;
  rc = acl_bench_testbed_check(&c, acl_bench_nccl_version(&c));
  if (rc == 0)
    rc = c.nmodes > 0 ? acl_bench_compare_main(&c) : acl_bench_worker_main(&c);
  acl_bench_mps_stop();
  return rc;
}
