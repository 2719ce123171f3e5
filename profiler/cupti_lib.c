/* dlopen'ed libcupti; see cupti_lib.h. */
#include "profiler/cupti_lib.h"

#ifdef ACL_HAVE_CUPTI
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

acl_cupti_lib_t acl_cu;

const char *acl_cupti_res_str(CUptiResult r)
{
  const char *s = NULL;
  if (acl_cu.cuptiGetResultString)
    acl_cu.cuptiGetResultString(r, &s);
  return s ? s : "?";
}

static bool try_load(const char *path, char *why, size_t whylen)
{
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(why, whylen, "dlopen(%s): %s", path, e ? e : "failed");
    return false;
  }
#define X(f, req)                                                                                  \
  acl_cu.f = (__typeof__(&f))dlsym(h, #f); /* NOLINT(bugprone-macro-parentheses): a member */      \
  if ((req) && !acl_cu.f) {                                                                        \
    snprintf(why, whylen, "%s lacks %s", path, #f);                                                \
    goto fail;                                                                                     \
  }
  CUPTI_FNS(X)
#undef X
  acl_cu.lib = h;
  snprintf(acl_cu.path, sizeof(acl_cu.path), "%s", path);
  return true;
fail:
  dlclose(h);
  memset(&acl_cu, 0, sizeof(acl_cu));
  return false;
}

bool acl_cupti_load(const char *only, char *why, size_t whylen)
{
  if (acl_cu.lib)
    return true;
  if (only)
    return try_load(only, why, whylen);
  const char *home = getenv("CUDA_HOME");
  char cands[8][512];
  int n = 0;
  snprintf(cands[n++], 512, "libcupti.so.13");
  snprintf(cands[n++], 512, "libcupti.so");
  if (home && *home) {
    snprintf(cands[n++], 512, "%s/extras/CUPTI/lib64/libcupti.so.13", home);
    snprintf(cands[n++], 512, "%s/lib64/libcupti.so.13", home);
  }
  snprintf(cands[n++], 512, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  snprintf(cands[n++], 512, "/usr/local/cuda/lib64/libcupti.so.13");
  snprintf(cands[n++], 512, "/usr/local/cuda/lib64/libcupti.so");
  char first[256] = "";
  for (int i = 0; i < n; i++) {
    if (try_load(cands[i], why, whylen))
      return true;
    if (!first[0])
      snprintf(first, sizeof(first), "%s", why);
  }
  snprintf(why, whylen, "libcupti not found (%s; also tried CUDA_HOME and /usr/local/cuda)", first);
  return false;
}
#endif
