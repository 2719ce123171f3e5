/* The host-time estimate per workload and the group that splits a GroupApi
 * span over its calls (profiler/hostcost.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

#include "profiler/hostcost.h"

Test(hostcost, the_estimate_is_the_shortest_call)
{
  acl_hostcost_t h = {0};
  acl_hostcost_note(&h, 3, 500000); /* a config's first call sets it up */
  cr_assert_eq(acl_hostcost_ns(&h, 3), 0, "one observation is no estimate");
  acl_hostcost_note(&h, 3, 9000);
  cr_assert_eq(acl_hostcost_ns(&h, 3), 9000);
  /* A launch blocked behind the GPU's queue (or a preempted thread). */
  for (int i = 0; i < 1000; i++)
    acl_hostcost_note(&h, 3, 900000);
  cr_assert_eq(acl_hostcost_ns(&h, 3), 9000, "blocked launches do not raise it");
  acl_hostcost_note(&h, 3, 6000);
  cr_assert_eq(acl_hostcost_ns(&h, 3), 6000);
  cr_assert_eq(acl_hostcost_ns(&h, 4), 0, "another workload has its own");
  acl_hostcost_note(&h, 3, 100000000); /* beyond any call's host time */
  cr_assert_eq(acl_hostcost_ns(&h, 3), 6000);
}

Test(hostcost, a_group_splits_its_span_over_its_calls)
{
  acl_hostcost_t a = {0}, b = {0};
  for (int i = 0; i < 2; i++) {
    void *g = acl_hostcost_group_start(1000000);
    cr_assert(acl_hostcost_is_group(g));
    acl_hostcost_group_call(&a, 0);
    acl_hostcost_group_call(&b, 5);
    acl_hostcost_group_stop(g, 1000000 + 20000);
  }
  cr_assert_eq(acl_hostcost_ns(&a, 0), 10000);
  cr_assert_eq(acl_hostcost_ns(&b, 5), 10000);
  /* A call decided outside an open group (another thread's, or none) is
   * not charged to one. */
  acl_hostcost_group_call(&a, 0);
  acl_hostcost_group_stop(acl_hostcost_group_start(0), 1);
  cr_assert_eq(acl_hostcost_ns(&a, 0), 10000);
  cr_assert_not(acl_hostcost_is_group(NULL));
  uint64_t other = 0;
  cr_assert_not(acl_hostcost_is_group(&other));
}

static void *other_thread_stops(void *g)
{
  cr_assert(acl_hostcost_is_group(g), "another thread's group is still a group");
  acl_hostcost_group_stop(g, 2000000);
  return NULL;
}

/* NCCL stops a group on the thread that started it; a stop from another
 * thread neither ends nor charges it. */
Test(hostcost, another_threads_stop_charges_nothing)
{
  acl_hostcost_t a = {0};
  void *g = acl_hostcost_group_start(1000000);
  acl_hostcost_group_call(&a, 0);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, other_thread_stops, g), 0);
  pthread_join(t, NULL);
  acl_hostcost_group_call(&a, 0); /* still open here */
  acl_hostcost_group_stop(g, 1000000 + 40000);
  cr_assert_eq(acl_hostcost_ns(&a, 0), 20000);
}
