/* Training-step call lists (what one rank issues per step) and the
 * interference schedule. Pure: the same arguments give the same calls on
 * every rank, which is what makes call k of a workload the same call
 * everywhere. */
#ifndef ACL_SIM_WORKLOAD_H
#define ACL_SIM_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum acl_sim_mix {
  ACL_SIM_MIX_FSDP = 0, /* FSDP of a Llama-3.1-8B-like model */
  ACL_SIM_MIX_DDP = 1,  /* DDP gradient buckets */
  ACL_SIM_MIX_TP = 2,   /* tensor parallel activations */
  ACL_SIM_MIX_MIXED = 3,
  /* PyTorch FSDP2 as launched on one H200 (2 ranks): backward gathers and
   * reduce-scatters in coalesced groups, a second communicator's small
   * AllReduce whose place in the step differs every other step. */
  ACL_SIM_MIX_TORCH_FSDP = 4,
  /* The same job as measured on one H100 (2026-12-06): one communicator,
   * and the gather that starts each step and the reduce-scatter that ends
   * it are called once per step, with nothing else between them. */
  ACL_SIM_MIX_TORCH_FSDP_1GPU = 5,
  /* PyTorch DDP as measured on one H100 (2026-12-07): AllReduce buckets of
   * four sizes called 1, 8 or 16 times a step, the first ones of each size
   * slowed by the backward compute they overlap (acl_sim_call_t.slow). */
  ACL_SIM_MIX_TORCH_DDP_1GPU = 6,
} acl_sim_mix_t;

/* Parses "fsdp-llama8b" | "ddp" | "tp" | "mixed" | "torch-fsdp" |
 * "torch-fsdp-1gpu" | "torch-ddp-1gpu"; -1 when unknown. */
int acl_sim_mix_parse(const char *s);
const char *acl_sim_mix_name(acl_sim_mix_t m);
/* Name of a call group ("fsdp-llama8b", "ddp", "tp"). */
const char *acl_sim_group_name(int group);

typedef struct acl_sim_call {
  uint8_t coll;    /* ncclFunc_t */
  uint8_t group;   /* ACL_SIM_MIX_FSDP / DDP / TP: which part of the mix */
  uint16_t comm;   /* communicator index */
  uint32_t wid;    /* distinct workload index (comm, coll, bytes) */
  uint64_t nbytes; /* tuner nBytes (whole buffer for AllGather/ReduceScatter) */
  /* Non-zero: enqueued between ncclGroupStart/End with the calls next to it
   * of the same value (NCCL latches each one's event mask at enqueue, then
   * asks the tuner about all of them at ncclGroupEnd). */
  uint8_t cgroup;
  bool swap_odd; /* on odd steps this call and the next trade places */
  /* > 1: every config of this call runs that many times longer (its place
   * in the step overlaps compute, as a DDP bucket early in the backward);
   * 0 or 1: as the landscape says */
  float slow;
} acl_sim_call_t;

typedef struct acl_sim_step {
  acl_sim_call_t *calls; /* in issue order */
  size_t ncalls;
  size_t nworkloads; /* distinct wid values: 0..nworkloads-1 */
} acl_sim_step_t;

/* Builds one training step's calls. Mixes are split over communicators:
 * comm c carries group g when g % ncomms == c, and comms beyond the mix's
 * groups repeat them (c % ngroups). NULL on allocation failure. */
acl_sim_step_t *acl_sim_step_create(acl_sim_mix_t mix, int nranks, int ncomms);
void acl_sim_step_destroy(acl_sim_step_t *s); /* NULL ok */

/* Interference schedule over training steps: "none", "demo", or a comma list
 * of FROM-TO=LEVEL (steps, TO exclusive and optional: "200-=0.6"),
 * every:PERIOD:LEN=LEVEL (the first LEN steps of every PERIOD) and
 * every:PERIOD:FROM-TO=LEVEL (steps FROM..TO-1 of every PERIOD). Later items
 * win where they overlap. Levels in [0, 1]. */
/* "demo": quiet for the first 400 steps of every 1000 (the tuner converges),
 * overlapping compute at 0.6 for 300 (the decisions drift and re-tune), quiet
 * again (re-tuned back). About 2 minutes a period at the demo's pace. */
#define ACL_SIM_INTERF_DEMO "every:1000:400-700=0.6"
#define ACL_SIM_INTERF_MAX 16
typedef struct acl_sim_interf {
  int n;
  struct {
    uint64_t from, to; /* to == UINT64_MAX: open-ended */
    uint64_t period;   /* 0: a plain range */
    double level;
  } ep[ACL_SIM_INTERF_MAX];
} acl_sim_interf_t;

bool acl_sim_interf_parse(const char *s, acl_sim_interf_t *out, char *err, size_t errlen);
double acl_sim_interf_level(const acl_sim_interf_t *in, uint64_t step);

#endif
