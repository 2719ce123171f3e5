/* The tuner benchmark: the search against the measured H200 landscape and
 * many synthetic unimodal landscapes, with noise and interference
 * (docs/benchmarks-tuner.md). Pure CPU, deterministic for a seed. */
#ifndef ACL_SIM_BENCH_H
#define ACL_SIM_BENCH_H

/* `autoccl-sim --bench [--json] [--landscapes N] [--seed S] [--samples K]
 * [--noise R] [--calls C]`: argv[0] is the program name; other arguments are
 * ignored only if they are "--bench". Prints a table (or one JSON object as
 * the last line with --json) on stdout, progress on stderr. Returns 0 when
 * every target is met, 1 when one is missed, 2 on bad arguments. */
int acl_sim_bench_main(int argc, char **argv);

#endif
