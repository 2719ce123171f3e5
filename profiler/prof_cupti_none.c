/* Built when CUPTI's headers are absent: no CUPTI source, samples come from
 * NCCL's profiler events (prof_cupti.h). */
#include "profiler/prof_cupti.h"

#include <stdio.h>
#include <string.h>

acl_cupti_t *acl_cupti_start(const acl_cupti_opts_t *o, acl_attr_t *attr, acl_cupti_batch_fn batch,
                             void *u, char *why, size_t whylen)
{
  (void)o, (void)attr, (void)batch, (void)u;
  snprintf(why, whylen, "built without CUPTI headers");
  return NULL;
}
void acl_cupti_stop(acl_cupti_t *c, bool at_exit) { (void)c, (void)at_exit; }
bool acl_cupti_begin(acl_cupti_t *c)
{
  (void)c;
  return false;
}
void acl_cupti_push(acl_cupti_t *c, uint64_t ext) { (void)c, (void)ext; }
void acl_cupti_end(acl_cupti_t *c) { (void)c; }
int acl_cupti_thread_slot(acl_cupti_t *c)
{
  (void)c;
  return -1;
}
void acl_cupti_kick(acl_cupti_t *c) { (void)c; }
void acl_cupti_called(acl_cupti_t *c) { (void)c; }
void acl_cupti_flush(acl_cupti_t *c) { (void)c; }
bool acl_cupti_backed_off(const acl_cupti_t *c)
{
  (void)c;
  return false;
}
bool acl_cupti_unavailable(const acl_cupti_t *c)
{
  (void)c;
  return false;
}
uint64_t acl_cupti_buffers(const acl_cupti_t *c)
{
  (void)c;
  return 0;
}
bool acl_cupti_tagging(const acl_cupti_t *c)
{
  (void)c;
  return false;
}
void acl_cupti_window_stats(const acl_cupti_t *c, acl_cupti_win_t *w)
{
  (void)c;
  memset(w, 0, sizeof(*w));
}
void acl_cupti_retire(acl_cupti_t *c, const char *why) { (void)c, (void)why; }

