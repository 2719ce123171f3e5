/* A stand-in libcupti for the window tests (test_windows.c): every call
 * succeeds (cuptiSubscribe fails with FAKE_CUPTI_FAIL set, as on a machine
 * without a GPU, and as CUPTI does while another client holds a subscriber
 * once fake_cupti_set_other(1) said one arrived), no activity record ever
 * arrives, and it counts how often the kernel activity kind was enabled (a
 * window's attach) and disabled. Built only where
 * CUPTI's headers are, so the prototypes are CUPTI's own. */
#include <cupti.h>
#include <stdatomic.h>
#include <stdlib.h>

/* the project builds with -fvisibility=hidden; dlsym must find these */
#define EXPORT __attribute__((visibility("default")))

static atomic_int kernel_enables, kernel_disables, other;

EXPORT int fake_cupti_kernel_enables(void) { return atomic_load(&kernel_enables); }
EXPORT int fake_cupti_kernel_disables(void) { return atomic_load(&kernel_disables); }
EXPORT void fake_cupti_set_other(int on) { atomic_store(&other, on); }

EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
  *str = result == CUPTI_SUCCESS ? "ok (fake)" : "error (fake)";
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                    void *userdata)
{
  (void)callback, (void)userdata;
  if (getenv("FAKE_CUPTI_FAIL"))
    return CUPTI_ERROR_NOT_INITIALIZED;
  if (atomic_load(&other))
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  *subscriber = (CUpti_SubscriberHandle)&kernel_enables;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
  (void)subscriber;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    atomic_fetch_add(&kernel_enables, 1);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    atomic_fetch_add(&kernel_disables, 1);
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done)
{
  (void)req, (void)done;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
  (void)flag;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
  (void)buffer, (void)valid, (void)record;
  return CUPTI_ERROR_MAX_LIMIT_REACHED;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                       size_t *dropped)
{
  (void)context, (void)streamId;
  *dropped = 0;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t id)
{
  (void)kind, (void)id;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                           uint64_t *lastId)
{
  (void)kind;
  if (lastId)
    *lastId = 0;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain)
{
  (void)enable, (void)subscriber, (void)domain;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult CUPTIAPI cuptiFinalize(void) { return CUPTI_SUCCESS; }
