/* The window rule of the default sample source (profiler/duty.c). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "profiler/duty.h"

#define MS 1000000ull

Test(duty, one_window_each_period_with_a_lead)
{
  acl_duty_t d;
  acl_duty_init(&d, 100, 5000, 1000 * MS);
  cr_assert_eq(acl_duty_step(&d, 1000 * MS), ACL_DUTY_LEAD); /* the first opens at once */
  cr_assert_eq(acl_duty_step(&d, 1019 * MS), ACL_DUTY_LEAD); /* lead: min(100/4, 20) ms */
  cr_assert_eq(acl_duty_step(&d, 1020 * MS), ACL_DUTY_OPEN);
  cr_assert_eq(acl_duty_wait_ns(&d, 1020 * MS), 80 * MS);
  cr_assert_eq(acl_duty_step(&d, 1099 * MS), ACL_DUTY_OPEN);
  cr_assert_eq(acl_duty_step(&d, 1100 * MS), ACL_DUTY_CLOSED);
  cr_assert_eq(acl_duty_wait_ns(&d, 1100 * MS), 4900 * MS);
  cr_assert_eq(acl_duty_step(&d, 5999 * MS), ACL_DUTY_CLOSED);
  cr_assert_eq(acl_duty_step(&d, 6000 * MS), ACL_DUTY_LEAD);
  cr_assert_eq(acl_duty_step(&d, 6050 * MS), ACL_DUTY_OPEN);
  cr_assert_eq(acl_duty_step(&d, 6100 * MS), ACL_DUTY_CLOSED);
  cr_assert_eq(d.windows, 2u);
  cr_assert_eq(d.on_total_ns, 200 * MS);
}

/* Two ranks whose profilers start 1.3 s apart, with monotonic clocks of
 * different origins, open their windows at the same wall-clock moment. */
Test(duty, ranks_open_their_windows_together)
{
  const uint64_t wall0 = 1764000000123ull * MS / 1000ull; /* a wall time, in ns */
  acl_duty_t a, b;
  acl_duty_init(&a, 100, 5000, 7000 * MS);
  acl_duty_align(&a, 7000 * MS, wall0);
  acl_duty_init(&b, 100, 5000, 900000 * MS);
  acl_duty_align(&b, 900000 * MS, wall0 + 1300 * MS);
  uint64_t wa = wall0 + (a.next_open_ns - 7000 * MS);
  uint64_t wb = wall0 + 1300 * MS + (b.next_open_ns - 900000 * MS);
  cr_assert_eq(wa, wb, "rank a opens at wall %llu, rank b at %llu", (unsigned long long)wa,
               (unsigned long long)wb);
  cr_assert_eq(wa % (5000 * MS), 0u);
  cr_assert_lt(a.next_open_ns - 7000 * MS, 5000 * MS);
  cr_assert_eq(acl_duty_step(&a, a.next_open_ns - 1), ACL_DUTY_CLOSED);
  cr_assert_eq(acl_duty_step(&a, a.next_open_ns), ACL_DUTY_LEAD);
  /* always on has no phase */
  acl_duty_t c;
  acl_duty_init(&c, 100, 0, 5 * MS);
  acl_duty_align(&c, 5 * MS, wall0);
  cr_assert_eq(acl_duty_step(&c, 5 * MS), ACL_DUTY_ALWAYS);
}

Test(duty, short_window_lead_is_a_quarter)
{
  acl_duty_t d;
  acl_duty_init(&d, 40, 1000, 0);
  cr_assert_eq(d.lead_ns, 10 * MS);
  cr_assert_eq(acl_duty_step(&d, 9 * MS), ACL_DUTY_LEAD);
  cr_assert_eq(acl_duty_step(&d, 10 * MS), ACL_DUTY_OPEN);
}

/* Nobody asked for a long time (an idle job): the missed windows are
 * skipped, not caught up, so the attached share never exceeds on/period. */
Test(duty, missed_windows_are_skipped)
{
  acl_duty_t d;
  acl_duty_init(&d, 100, 5000, 0);
  acl_duty_step(&d, 0);
  cr_assert_eq(acl_duty_step(&d, 12345 * MS), ACL_DUTY_CLOSED);
  cr_assert_eq(d.on_total_ns, 100 * MS); /* the first window, closed late, counts 100 ms */
  cr_assert_eq(d.windows, 1u);
  cr_assert_eq(d.next_open_ns, 15000 * MS);
  /* a step inside a later window opens it, late, and closes it on time */
  cr_assert_eq(acl_duty_step(&d, 15050 * MS), ACL_DUTY_OPEN);
  cr_assert_eq(acl_duty_step(&d, 15100 * MS), ACL_DUTY_CLOSED);
  cr_assert_eq(d.windows, 2u);
}

Test(duty, attached_share_is_on_over_period)
{
  acl_duty_t d;
  acl_duty_init(&d, 100, 5000, 0);
  uint64_t on = 0, step = MS;
  for (uint64_t t = 0; t < 600000 * MS; t += step)
    on += acl_duty_step(&d, t) != ACL_DUTY_CLOSED ? step : 0;
  double share = (double)on / (double)(600000 * MS);
  cr_assert_float_eq(share, 0.02, 1e-9, "share %.6f", share);
}

Test(duty, always_on_without_a_period)
{
  acl_duty_t d;
  acl_duty_init(&d, 100, 0, 0);
  cr_assert_eq(acl_duty_step(&d, 0), ACL_DUTY_ALWAYS);
  cr_assert_eq(acl_duty_step(&d, UINT64_MAX / 2), ACL_DUTY_ALWAYS);
  cr_assert_eq(acl_duty_wait_ns(&d, 5), UINT64_MAX);
  acl_duty_init(&d, 100, 100, 0); /* on >= period: always */
  cr_assert_eq(acl_duty_step(&d, 0), ACL_DUTY_ALWAYS);
  cr_assert_str_eq(acl_duty_state_name(ACL_DUTY_OPEN), "open");
}

/* The first window opens at the process's first collective, whatever the
 * wall clock; the aligned ones go on from a whole period after it. */
Test(duty, first_look_at_the_first_collective)
{
  const uint64_t wall0 = 1764000001000ull * MS; /* 1 s past a multiple of 5 s */
  acl_duty_t d;
  acl_duty_init(&d, 100, 5000, 0);
  acl_duty_align(&d, 0, wall0);
  cr_assert_eq(d.next_open_ns, 4000 * MS);
  cr_assert_eq(acl_duty_step(&d, 300 * MS), ACL_DUTY_CLOSED);
  acl_duty_first_look(&d, 300 * MS);
  cr_assert_eq(acl_duty_step(&d, 300 * MS), ACL_DUTY_LEAD);
  cr_assert_eq(acl_duty_step(&d, 320 * MS), ACL_DUTY_OPEN);
  cr_assert_eq(acl_duty_step(&d, 400 * MS), ACL_DUTY_CLOSED);
  /* the aligned window 3.7 s later is skipped: the next is at 9 s */
  cr_assert_eq(d.next_open_ns, 9000 * MS);
  cr_assert_eq(acl_duty_step(&d, 4050 * MS), ACL_DUTY_CLOSED);
  cr_assert_eq(acl_duty_step(&d, 9000 * MS), ACL_DUTY_LEAD);
  cr_assert_eq(d.windows, 2u);
  /* once only, and never over an open window or always-on */
  acl_duty_first_look(&d, 9010 * MS);
  cr_assert_eq(d.opened_ns, 9000 * MS);
  acl_duty_t a;
  acl_duty_init(&a, 100, 0, 0);
  acl_duty_first_look(&a, 5 * MS);
  cr_assert_eq(acl_duty_step(&a, 5 * MS), ACL_DUTY_ALWAYS);
}
