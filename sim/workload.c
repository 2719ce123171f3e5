#include "sim/workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/abi.h"
#include "sim/nccl_model.h"

/* Llama-3.1-8B: 32 layers of ~218.1M parameters (attention 41.9M with GQA,
 * SwiGLU MLP 176.2M), embeddings 128256 x 4096; bf16 parameters. */
#define LLAMA_LAYER_BYTES (218112000ull * 2)
#define LLAMA_EMBED_BYTES (525336576ull * 2)
#define MIB (1024ull * 1024ull)

typedef struct {
  uint8_t coll;
  uint64_t nbytes;
  int repeat;
} pattern_t;

typedef struct {
  pattern_t p;
  bool paired;   /* each repetition is one coalesced group with the next entry's */
  bool swap_odd; /* (acl_sim_call_t) */
  uint16_t comm; /* its communicator, when the run has that many (else 0) */
  float slow;    /* (acl_sim_call_t) */
} tpattern_t;

/* Full patterns; "lite" ones are what the mixed workload takes of each. */
static const pattern_t fsdp_full[] = {
    {ncclFuncAllGather, LLAMA_EMBED_BYTES, 1},
    {ncclFuncAllGather, LLAMA_LAYER_BYTES, 32},     /* forward */
    {ncclFuncAllGather, LLAMA_LAYER_BYTES, 32},     /* backward re-gather */
    {ncclFuncReduceScatter, LLAMA_LAYER_BYTES, 32}, /* gradients */
    {ncclFuncReduceScatter, LLAMA_EMBED_BYTES, 1},
};
static const pattern_t fsdp_lite[] = {
    {ncclFuncAllGather, LLAMA_EMBED_BYTES, 1},
    {ncclFuncAllGather, LLAMA_LAYER_BYTES, 4},
    {ncclFuncReduceScatter, LLAMA_LAYER_BYTES, 4},
};
/* DDP with 25 MiB buckets (PyTorch's default cap) and a small last bucket. */
static const pattern_t ddp_full[] = {
    {ncclFuncAllReduce, 25 * MIB, 4},
    {ncclFuncAllReduce, 1536 * 1024, 1},
};
/* TP over hidden 4096, bf16: 4096-token micro-batches (32 MiB), half-size
 * ones (16 MiB) and decode-sized activations (64 KiB). */
static const pattern_t tp_full[] = {
    {ncclFuncAllReduce, 32 * MIB, 8},
    {ncclFuncAllReduce, 16 * MIB, 2},
    {ncclFuncAllReduce, 64 * 1024, 4},
};
static const pattern_t tp_lite[] = {
    {ncclFuncAllReduce, 32 * MIB, 4},
    {ncclFuncAllReduce, 64 * 1024, 2},
};

/* The 2-rank FSDP2 job measured on one H200 (8 Llama-style layers, hidden
 * 2048, bf16 parameters, fp32 reduce; nBytes as its job report gave them):
 * forward gathers, then backward gathers each coalesced with a gradient
 * reduce-scatter, and a small AllReduce (the loss) on a second
 * communicator that comes before or after the last reduce-scatter. */
static const tpattern_t torch_fsdp[] = {
    {{ncclFuncAllGather, 262148096ull, 1}, false, false, 0, 0.0f},
    {{ncclFuncAllGather, 102768640ull, 8}, false, false, 0, 0.0f},
    {{ncclFuncAllGather, 102768640ull, 8}, true, false, 0, 0.0f},
    {{ncclFuncReduceScatter, 205537280ull, 8}, false, false, 0, 0.0f},
    {{ncclFuncAllReduce, 4096, 1}, false, true, 1, 0.0f},
    {{ncclFuncReduceScatter, 524296192ull, 1}, false, false, 0, 0.0f},
};

/* The FSDP2 job of examples/fsdp_llama.py on one H100 (2 ranks), nBytes
 * as its job reports gave them (315 calls of each once-per-step workload in
 * 300 steps and the warm-up): no call between the reduce-scatter that ends a
 * step and the gather that starts the next, so a workload waiting for its
 * budget there gets no profiler events from a neighbour's block. */
static const tpattern_t torch_fsdp_1gpu[] = {
    {{ncclFuncAllGather, 262148096ull, 1}, false, false, 0, 0.0f},
    {{ncclFuncAllGather, 100409344ull, 8}, false, false, 0, 0.0f},
    {{ncclFuncAllGather, 100409344ull, 8}, true, false, 0, 0.0f},
    {{ncclFuncReduceScatter, 100409344ull, 8}, false, false, 0, 0.0f},
    {{ncclFuncReduceScatter, 262148096ull, 1}, false, false, 0, 0.0f},
};

/* The DDP job of examples/ddp_buckets.py on one H100 (2 ranks), nBytes as
 * its job reports gave them: per step 16, 8 and 8 buckets of three sizes
 * and one of each of two 250 MiB ones. A bucket's time moved with its place
 * in the backward (64 MiB: 0.40 ms at the 10th percentile, 2.87 ms at the
 * median for NCCL's choice); here the first calls of each size overlap
 * compute and the rest do not: 64 MiB's first 5 of 8 at 7x, so its median
 * is a slow place's as there, the 42 MiB ones' first 3-4 at 3x. */
static const tpattern_t torch_ddp_1gpu[] = {
    {{ncclFuncAllReduce, 262144000ull, 1}, false, false, 0, 3.0f},
    {{ncclFuncAllReduce, 44564480ull, 4}, false, false, 0, 3.0f},
    {{ncclFuncAllReduce, 67117056ull, 5}, false, false, 0, 7.0f},
    {{ncclFuncAllReduce, 44572672ull, 3}, false, false, 0, 3.0f},
    {{ncclFuncAllReduce, 44564480ull, 12}, false, false, 0, 1.0f},
    {{ncclFuncAllReduce, 67117056ull, 3}, false, false, 0, 1.0f},
    {{ncclFuncAllReduce, 44572672ull, 5}, false, false, 0, 1.0f},
    {{ncclFuncAllReduce, 262152192ull, 1}, false, false, 0, 1.0f},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const mix_names[] = {"fsdp-llama8b",    "ddp",           "tp",
                                        "mixed",           "torch-fsdp",    "torch-fsdp-1gpu",
                                        "torch-ddp-1gpu"};

int acl_sim_mix_parse(const char *s)
{
  for (int i = 0; s && i < (int)N(mix_names); i++)
    if (strcmp(s, mix_names[i]) == 0)
      return i;
  if (s && strcmp(s, "fsdp") == 0)
    return ACL_SIM_MIX_FSDP;
  return -1;
}

const char *acl_sim_mix_name(acl_sim_mix_t m)
{
  return (unsigned)m < N(mix_names) ? mix_names[m] : "?";
}
const char *acl_sim_group_name(int g) { return g >= 0 && g < 3 ? mix_names[g] : "?"; }

static int add_call(acl_sim_step_t *s, size_t *cap, const tpattern_t *tp, int group, int comm,
                    int nranks, uint8_t cgroup)
{
  if (s->ncalls == *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    acl_sim_call_t *n = realloc(s->calls, ncap * sizeof(*n));
    if (!n)
      return -1;
    s->calls = n;
    *cap = ncap;
  }
  acl_sim_call_t *c = &s->calls[s->ncalls++];
  memset(c, 0, sizeof(*c));
  c->coll = tp->p.coll;
  c->group = (uint8_t)group;
  c->comm = (uint16_t)comm;
  c->nbytes = acl_sim_round_bytes(tp->p.coll, tp->p.nbytes, nranks, ACL_SIM_DTYPE_BYTES);
  c->cgroup = cgroup;
  c->swap_odd = tp->swap_odd;
  c->slow = tp->slow;
  return 0;
}

/* torch-fsdp: a paired entry and the next one go together, repetition by
 * repetition, each pair a coalesced group of its own. */
static int add_torch(acl_sim_step_t *s, size_t *cap, const tpattern_t *pat, size_t npat, int group,
                     int ncomms, int nranks)
{
  uint8_t g = 0;
  for (size_t i = 0; i < npat; i++) {
    const tpattern_t *p = &pat[i];
    int comm = p->comm < ncomms ? p->comm : 0;
    if (p->paired && i + 1 < npat) {
      for (int r = 0; r < p->p.repeat; r++) {
        g = (uint8_t)(g % 250 + 1);
        if (add_call(s, cap, p, group, comm, nranks, g) ||
            add_call(s, cap, &pat[i + 1], group, comm, nranks, g))
          return -1;
      }
      i++;
      continue;
    }
    for (int r = 0; r < p->p.repeat; r++)
      if (add_call(s, cap, p, group, comm, nranks, 0))
        return -1;
  }
  return 0;
}

static int add_calls(acl_sim_step_t *s, size_t *cap, const pattern_t *pat, size_t npat, int group,
                     int comm, int nranks)
{
  for (size_t i = 0; i < npat; i++) {
    const tpattern_t tp = {.p = pat[i]};
    for (int r = 0; r < pat[i].repeat; r++)
      if (add_call(s, cap, &tp, group, comm, nranks, 0))
        return -1;
  }
  return 0;
}

acl_sim_step_t *acl_sim_step_create(acl_sim_mix_t mix, int nranks, int ncomms)
{
  if ((unsigned)mix > ACL_SIM_MIX_TORCH_DDP_1GPU || nranks < 1 || ncomms < 1 || ncomms > 65535)
    return NULL;
  acl_sim_step_t *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  size_t cap = 0;
  if (mix == ACL_SIM_MIX_TORCH_FSDP || mix == ACL_SIM_MIX_TORCH_FSDP_1GPU) {
    bool h100 = mix == ACL_SIM_MIX_TORCH_FSDP_1GPU;
    if (add_torch(s, &cap, h100 ? torch_fsdp_1gpu : torch_fsdp,
                  h100 ? N(torch_fsdp_1gpu) : N(torch_fsdp), ACL_SIM_MIX_FSDP, ncomms, nranks))
      goto fail;
    goto ids;
  }
  if (mix == ACL_SIM_MIX_TORCH_DDP_1GPU) {
    if (add_torch(s, &cap, torch_ddp_1gpu, N(torch_ddp_1gpu), ACL_SIM_MIX_DDP, ncomms, nranks))
      goto fail;
    goto ids;
  }
  int groups[3], ngroups = 0;
  if (mix == ACL_SIM_MIX_MIXED) {
    groups[0] = ACL_SIM_MIX_FSDP;
    groups[1] = ACL_SIM_MIX_DDP;
    groups[2] = ACL_SIM_MIX_TP;
    ngroups = 3;
  } else {
    groups[0] = (int)mix;
    ngroups = 1;
  }
  bool lite = mix == ACL_SIM_MIX_MIXED;
  for (int c = 0; c < ncomms; c++)
    for (int gi = 0; gi < ngroups; gi++) {
      if (!(gi % ncomms == c || (c >= ngroups && c % ngroups == gi)))
        continue;
      int g = groups[gi], rc;
      if (g == ACL_SIM_MIX_FSDP)
        rc = lite ? add_calls(s, &cap, fsdp_lite, N(fsdp_lite), g, c, nranks)
                  : add_calls(s, &cap, fsdp_full, N(fsdp_full), g, c, nranks);
      else if (g == ACL_SIM_MIX_DDP)
        rc = add_calls(s, &cap, ddp_full, N(ddp_full), g, c, nranks);
      else
        rc = lite ? add_calls(s, &cap, tp_lite, N(tp_lite), g, c, nranks)
                  : add_calls(s, &cap, tp_full, N(tp_full), g, c, nranks);
      if (rc)
        goto fail;
    }
ids:
  /* Workload ids: distinct (comm, coll, nbytes), first appearance first. */
  for (size_t i = 0; i < s->ncalls; i++) {
    acl_sim_call_t *c = &s->calls[i];
    size_t j;
    for (j = 0; j < i; j++)
      if (s->calls[j].comm == c->comm && s->calls[j].coll == c->coll &&
          s->calls[j].nbytes == c->nbytes)
        break;
    c->wid = j < i ? s->calls[j].wid : (uint32_t)s->nworkloads++;
  }
  return s;
fail:
  acl_sim_step_destroy(s);
  return NULL;
}

void acl_sim_step_destroy(acl_sim_step_t *s)
{
  if (!s)
    return;
  free(s->calls);
  free(s);
}

static bool parse_u64(const char *s, const char *end, uint64_t *out)
{
  if (s == end || *s < '0' || *s > '9')
    return false;
  char *e;
  errno = 0;
  unsigned long long v = strtoull(s, &e, 10);
  if (errno || e != end)
    return false;
  *out = v;
  return true;
}

static bool parse_level(const char *s, double *out)
{
  char *e;
  errno = 0;
  double v = strtod(s, &e);
  if (errno || e == s || *e || !(v >= 0.0 && v <= 1.0))
    return false;
  *out = v;
  return true;
}

bool acl_sim_interf_parse(const char *spec, acl_sim_interf_t *out, char *err, size_t errlen)
{
  acl_sim_interf_t in = {0};
  if (!spec || !*spec) {
    snprintf(err, errlen, "empty interference schedule");
    return false;
  }
  if (strcmp(spec, "none") == 0) {
    *out = in;
    return true;
  }
  if (strcmp(spec, "demo") == 0)
    spec = ACL_SIM_INTERF_DEMO;
  char buf[512];
  if (strlen(spec) >= sizeof(buf)) {
    snprintf(err, errlen, "interference schedule too long");
    return false;
  }
  snprintf(buf, sizeof(buf), "%s", spec);
  size_t blen = strlen(buf);
  if (buf[0] == ',' || buf[blen - 1] == ',' || strstr(buf, ",,")) {
    snprintf(err, errlen, "empty item in interference schedule '%s'", spec);
    return false;
  }
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    if (in.n == ACL_SIM_INTERF_MAX) {
      snprintf(err, errlen, "more than %d interference episodes", ACL_SIM_INTERF_MAX);
      return false;
    }
    char *eq = strchr(item, '=');
    if (!eq || !parse_level(eq + 1, &in.ep[in.n].level)) {
      snprintf(err, errlen,
               "bad interference episode '%s': expected FROM-TO=LEVEL or "
               "every:PERIOD:LEN=LEVEL with LEVEL in [0,1]",
               item);
      return false;
    }
    *eq = '\0';
    uint64_t a, b;
    if (strncmp(item, "every:", 6) == 0) {
      /* every:PERIOD:LEN (steps 0..LEN-1 of each period) or
       * every:PERIOD:FROM-TO (steps FROM..TO-1 of each period). */
      char *p = item + 6, *colon = strchr(p, ':');
      char *dash = colon ? strchr(colon + 1, '-') : NULL;
      uint64_t from = 0;
      bool ok = colon && parse_u64(p, colon, &a) && a > 0;
      if (ok && dash)
        ok = parse_u64(colon + 1, dash, &from) && parse_u64(dash + 1, eq, &b) && b > from;
      else if (ok)
        ok = parse_u64(colon + 1, eq, &b);
      if (!ok || b > a) {
        snprintf(err, errlen,
                 "bad periodic episode 'every:%s': need every:PERIOD:LEN or "
                 "every:PERIOD:FROM-TO with FROM < TO <= PERIOD, PERIOD > 0",
                 p);
        return false;
      }
      in.ep[in.n].period = a;
      in.ep[in.n].from = from;
      in.ep[in.n].to = b;
    } else {
      char *dash = strchr(item, '-');
      bool ok = dash && parse_u64(item, dash, &a);
      if (ok && dash[1])
        ok = parse_u64(dash + 1, eq, &b);
      else if (ok)
        b = UINT64_MAX;
      if (!ok || b <= a) {
        snprintf(err, errlen,
                 "bad episode '%s': need FROM-TO steps with TO > FROM (TO optional), or "
                 "every:PERIOD:LEN",
                 item);
        return false;
      }
      in.ep[in.n].from = a;
      in.ep[in.n].to = b;
      in.ep[in.n].period = 0;
    }
    in.n++;
  }
  *out = in;
  return true;
}

double acl_sim_interf_level(const acl_sim_interf_t *in, uint64_t step)
{
  double level = 0.0;
  for (int i = 0; in && i < in->n; i++) {
    uint64_t s = in->ep[i].period ? step % in->ep[i].period : step;
    if (s >= in->ep[i].from && s < in->ep[i].to)
      level = in->ep[i].level;
  }
  return level;
}
