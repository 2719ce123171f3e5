/* Window rule; see duty.h. */
#include "profiler/duty.h"

#include <string.h>

void acl_duty_init(acl_duty_t *d, unsigned on_ms, unsigned period_ms, uint64_t now_ns)
{
  memset(d, 0, sizeof(*d));
  d->on_ns = (uint64_t)on_ms * 1000000ull;
  d->period_ns = period_ms > on_ms ? (uint64_t)period_ms * 1000000ull : 0;
  d->lead_ns = d->on_ns / 4 < ACL_DUTY_LEAD_MAX_NS ? d->on_ns / 4 : ACL_DUTY_LEAD_MAX_NS;
  d->state = ACL_DUTY_CLOSED;
  d->next_open_ns = now_ns;
  if (!d->period_ns) {
    d->state = ACL_DUTY_ALWAYS;
    d->opened_ns = now_ns;
    d->windows = 1;
  }
}

void acl_duty_align(acl_duty_t *d, uint64_t now_ns, uint64_t wall_ns)
{
  if (!d->period_ns || d->state != ACL_DUTY_CLOSED)
    return;
  d->next_open_ns = now_ns + (d->period_ns - wall_ns % d->period_ns) % d->period_ns;
}

void acl_duty_first_look(acl_duty_t *d, uint64_t now_ns)
{
  if (!d->period_ns || d->state != ACL_DUTY_CLOSED || d->windows)
    return;
  d->state = ACL_DUTY_LEAD;
  d->opened_ns = now_ns;
  d->windows = 1;
  while (d->next_open_ns < now_ns + d->period_ns)
    d->next_open_ns += d->period_ns;
}

acl_duty_state_t acl_duty_step(acl_duty_t *d, uint64_t now)
{
  for (;;) {
    switch (d->state) {
    case ACL_DUTY_ALWAYS:
      return d->state;
    case ACL_DUTY_CLOSED:
      if (now < d->next_open_ns)
        return d->state;
      if (now >= d->next_open_ns + d->on_ns) { /* missed whole: skip it */
        uint64_t k = (now - d->next_open_ns) / d->period_ns + 1;
        d->next_open_ns += k * d->period_ns;
        continue;
      }
      d->state = ACL_DUTY_LEAD;
      d->opened_ns = d->next_open_ns;
      d->next_open_ns += d->period_ns;
      d->windows++;
      continue;
    case ACL_DUTY_LEAD:
    case ACL_DUTY_OPEN:
      if (now >= d->opened_ns + d->on_ns) {
        d->on_total_ns += d->on_ns;
        d->state = ACL_DUTY_CLOSED;
        continue;
      }
      if (d->state == ACL_DUTY_LEAD && now >= d->opened_ns + d->lead_ns) {
        d->state = ACL_DUTY_OPEN;
        continue;
      }
      return d->state;
    }
    return d->state; /* not reached: every state returns or continues */
  }
}

uint64_t acl_duty_wait_ns(const acl_duty_t *d, uint64_t now)
{
  uint64_t at;
  switch (d->state) {
  case ACL_DUTY_ALWAYS:
    return UINT64_MAX;
  case ACL_DUTY_CLOSED:
    at = d->next_open_ns;
    break;
  case ACL_DUTY_LEAD:
    at = d->opened_ns + d->lead_ns;
    break;
  default:
    at = d->opened_ns + d->on_ns;
    break;
  }
  return at > now ? at - now : 0;
}

const char *acl_duty_state_name(acl_duty_state_t s)
{
  static const char *const n[] = {"closed", "lead", "open", "always"};
  return (unsigned)s < 4 ? n[s] : "?";
}
