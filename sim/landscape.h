/* Performance landscapes: how long a collective takes under a candidate.
 * The measured H200 landscape (sim/data/, embedded in the binary) is
 * interpolated between measured sizes; synthetic landscapes are random
 * unimodal surfaces. Noise is added by the caller (acl_land_noise). */
#ifndef ACL_SIM_LANDSCAPE_H
#define ACL_SIM_LANDSCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

typedef struct acl_landscape acl_landscape_t;

/* The measured 2x H200 NVLink data (NCCL 2.28.3). NULL + err on failure. */
acl_landscape_t *acl_land_create_h200(char *err, size_t errlen);
/* A random unimodal surface from seed (deterministic). */
acl_landscape_t *acl_land_create_synth(uint64_t seed);
/* Replay of recorded bench traces (docs/trace.md "Replay"): dir holds
 * <regime>-<launch>-<coll>/ folders of autoccl-bench traces; launch is
 * "procs" or "single". NULL + err on failure. */
acl_landscape_t *acl_land_create_traces(const char *dir, const char *launch, char *err,
                                        size_t errlen);
/* "h200-traces" or "h200-traces:single" -> the built-in trace set
 * (AUTOCCL_SIM_TRACES overrides the folder). NULL + err on failure. */
acl_landscape_t *acl_land_create_spec_traces(const char *spec, char *err, size_t errlen);
/* The landscape recorded on one H200 with two ranks on it (NCCL 2.30.7,
 * scripts/gpu-record.sh --ranks-per-gpu 2): its traces are always the shipped
 * ones (<traces>/h200-1gpu; AUTOCCL_SIM_TRACES is for h200-traces). */
#define ACL_LAND_1GPU "h200-1gpu-traces"
/* The same testbed on one H100 (2026-12-06; Ring sweeps only): <traces>/h100-1gpu. */
#define ACL_LAND_1GPU_H100 "h100-1gpu-traces"
/* Whether spec names a replay landscape (h200-traces, h200-1gpu-traces or
 * h100-1gpu-traces, each with its launch suffix). */
bool acl_land_is_trace_spec(const char *spec);
/* Whether spec names one of the one-GPU testbed's landscapes. */
bool acl_land_is_1gpu_spec(const char *spec);
void acl_land_destroy(acl_landscape_t *l); /* NULL ok */
const char *acl_land_name(const acl_landscape_t *l);

/* Whether NCCL would offer (algo, proto) for this call (cost table >= 0). */
bool acl_land_valid(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks, int algo,
                    int proto);
/* Channels NCCL builds at init (the clamp for nChannels). */
int acl_land_max_channels(const acl_landscape_t *l);
/* Noise-free seconds for one call. c->algo == ACL_ALGO_NCCL means NCCL's
 * default; c->nchannels == 0 means NCCL's default channel count.
 * interference in 0..1: compute running concurrently (changes the winner). */
double acl_land_time(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                     const acl_candidate_t *c, double interference);
/* What NCCL picks by default for this call (algo, proto and channels). */
void acl_land_nccl_default(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                           acl_candidate_t *out);
/* Best candidate the tuner could choose, and its time. */
double acl_land_oracle(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                       double interference, acl_candidate_t *best);
/* NCCL's cost table for this call as a plugin would receive it: predicted
 * microseconds for valid (algo, proto) pairs (NCCL's model: close to the
 * landscape, with a deterministic model error), -1 for the others; the
 * default's pair is the strict minimum, so NCCL's pick matches
 * acl_land_nccl_default. */
void acl_land_cost_table(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                         float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);
/* ---- replay extensions: measured behaviour (other kinds: neutral) ---- */
/* Trace files the landscape was built from (0 for other kinds). */
int acl_land_traces(const acl_landscape_t *l);
/* Whether a replay landscape recorded coll (NCCL's function index) up to
 * bytes in that regime (under a GEMM or isolated); true for the models. */
bool acl_land_trace_covers(const acl_landscape_t *l, int coll, double bytes, bool gemm);
/* Trace files recorded on GPUs (0 for the set derived from medians). */
int acl_land_traces_recorded(const acl_landscape_t *l);
bool acl_land_is_replay(const acl_landscape_t *l);
/* Channels NCCL runs for a decision of `asked` channels (0 = its own) of
 * (algo, proto): clamped to the built count, and for traces to what NCCL
 * ran with its own choice at that size (LL at small sizes). */
int acl_land_exec_channels(const acl_landscape_t *l, int coll, uint64_t nbytes, int algo, int proto,
                           int asked);
/* One call drawn from the recorded distribution: per_rank[0..nranks) (may
 * be NULL) gets each rank's seconds, the slowest is returned. Deterministic
 * in seed. Other kinds: acl_land_time for every rank. */
double acl_land_draw(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                     const acl_candidate_t *c, double interference, uint64_t seed,
                     double *per_rank);
/* Expected seconds of one call, outliers included (the mean of the draws). */
double acl_land_mean_time(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                          const acl_candidate_t *c, double interference);
/* One-time set-up (connections) to run `need` channels of algo when the
 * process has `have` of them connected (0: the algorithm never ran). */
double acl_land_connect_seconds(const acl_landscape_t *l, int coll, uint64_t nbytes,
                                double interference, int algo, int have, int need);
/* Per-call cost of NCCL profiler events (Coll/KernelCh) while they are on. */
double acl_land_event_seconds(const acl_landscape_t *l, int coll, uint64_t nbytes);

/* ---- chunk size (NCCL 2.30, tuner v6; sim/landscape_chunk.c) ---- */
/* Gives l a chunk-size model drawn from seed: amplitude 1 chunk-sensitive,
 * 0 chunk-insensitive (the axis changes nothing). Without it (default) a
 * candidate's chunk_log2 is ignored. */
void acl_land_chunk_enable(acl_landscape_t *l, uint64_t seed, double amplitude);
bool acl_land_chunk_on(const acl_landscape_t *l);
/* Time factor of chunk NCCL's own x 2^log2 for (algo, proto) (1 when off). */
double acl_land_chunk_factor(const acl_landscape_t *l, int coll, double bytes, int algo, int proto,
                             int log2);

/* Multiplicative noise factor (mean 1, relative sd `rel`), from *rng state. */
double acl_land_noise(uint64_t *rng, double rel);

#endif
