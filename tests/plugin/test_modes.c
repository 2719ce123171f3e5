/* Ranks whose AUTOCCL_MODE differs must not diverge silently: whichever
 * joins the communicator second fails its collectives with a clear message.
 * Two processes (each rank its own process, as under torchrun). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

TestSuite(modes, .timeout = 30);

/* Joins comm as rank `rank` of 2 in `mode`, then runs 50 calls; exit status
 * = number of calls that returned an error (capped at 100). */
static int run_rank(const char *mode, uint64_t comm, int rank, int go_fd, int ready_fd)
{
  setenv("AUTOCCL_MODE", mode, 1);
  acl_h_plugin_t P;
  acl_h_load(&P);
  void *pc = NULL, *tc = NULL;
  int mask = 0;
  char c = 0;
  if (go_fd >= 0 && read(go_fd, &c, 1) != 1)
    return 101;
  P.prof->init(&pc, comm, &mask, "modes", 1, 2, rank, acl_h_logger);
  P.v5->init(&tc, comm, 2, 1, acl_h_logger, NULL, NULL);
  if (ready_fd >= 0 && write(ready_fd, "r", 1) != 1)
    return 102;
  int errors = 0;
  for (int i = 0; i < 50; i++) {
    float t[7][3];
    acl_h_cost_table(ncclFuncAllReduce, 1 << 20, 2, t);
    int nch = 0;
    if (P.v5->getCollInfo(tc, ncclFuncAllReduce, 1 << 20, 1, (float **)(void *)t, 7, 3, 0, &nch) !=
        ncclSuccess)
      errors++;
  }
  if (errors)
    fprintf(stderr, "%s", acl_h_log_text());
  /* Stay attached until the other rank has joined and called. */
  if (go_fd >= 0 && read(go_fd, &c, 1) < 0)
    return 103;
  P.v5->finalize(tc);
  P.prof->finalize(pc);
  return errors;
}

static void mismatch(const char *first, const char *second)
{
  uint64_t comm = 0xabc000ull + (uint64_t)getpid();
  int go[2], ready[2];
  cr_assert_eq(pipe(go), 0);
  cr_assert_eq(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    close(go[1]);
    close(ready[0]);
    _exit(run_rank(first, comm, 0, go[0], ready[1]));
  }
  close(go[0]);
  close(ready[1]);
  cr_assert_eq(write(go[1], "g", 1), 1); /* child joins first */
  char c;
  cr_assert_eq(read(ready[0], &c, 1), 1);
  int mine = run_rank(second, comm, 1, -1, -1);
  close(go[1]); /* releases the child */
  int st = 0;
  waitpid(child, &st, 0);
  cr_assert(WIFEXITED(st), "first rank crashed");
  int theirs = WEXITSTATUS(st);
  cr_assert_eq(theirs, 0, "the first rank (%s) must not be disturbed: %d errors", first, theirs);
  cr_assert_eq(mine, 50,
               "the second rank (%s) joined a %s communicator and must fail every call, "
               "failed %d",
               second, first, mine);
}

Test(modes, off_joining_online_fails_loudly) { mismatch("online", "off"); }
Test(modes, online_joining_off_fails_loudly) { mismatch("off", "online"); }
Test(modes, static_joining_online_fails_loudly) { mismatch("online", "static"); }

Test(modes, all_off_is_clean)
{
  uint64_t comm = 0xdef000ull + (uint64_t)getpid();
  pid_t child = fork();
  if (child == 0)
    _exit(run_rank("off", comm, 0, -1, -1));
  int mine = run_rank("off", comm, 1, -1, -1);
  int st = 0;
  waitpid(child, &st, 0);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  cr_assert_eq(mine, 0);
}
