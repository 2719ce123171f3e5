/* Every tuning number of the search, in one place, with where its value
 * came from. "tunerbench" = `autoccl-sim --bench` (docs/benchmarks-tuner.md
 * has the measured alternatives); "2xH200" = docs/benchmarks.md. The
 * user-settable ones (AUTOCCL_WARMUP, AUTOCCL_SAMPLES, AUTOCCL_EXPLORE_BUDGET)
 * come from core/config.h. Private to tuner/search/ (via search_int.h). */
#ifndef ACL_TUNER_SEARCH_TUNABLES_H
#define ACL_TUNER_SEARCH_TUNABLES_H

/* ---- defaults of acl_search_params_t (docs/tuner.md, "Parameters") ---- */
/* Top of the channel axis when the caller gives no ceiling; the sweeps on
 * 2xH200 cover 1..32 channels. */
#define ACL_SEARCH_DEFAULT_MAX_CHANNELS 32
/* Communicator size when not given: it only scales bus bandwidth. */
#define ACL_SEARCH_DEFAULT_NRANKS 2
/* Drift: bandwidth below 80% of the decision's first window (search_conv.c,
 * slower_than). */
#define ACL_SEARCH_DEFAULT_DRIFT_RATIO 0.8
/* Drift window: 16 samples; outliers move its share of slower pairs by no
 * more than their own share. */
#define ACL_SEARCH_DEFAULT_DRIFT_WINDOW 16
/* Prune a subspace whose first point is > 1.15x the best (tunerbench: 1.10
 * lost H200 p5 0.9415 vs 0.9418, not kept). */
#define ACL_SEARCH_DEFAULT_PRUNE_RATIO 1.15
/* Limits acl_search_params_fix enforces: a median of fewer than 4 samples is
 * one or two samples; a prune ratio or budget beyond these is a typo (tests
 * of the descent alone lift the budget to 1e9). */
#define ACL_SEARCH_MIN_DRIFT_WINDOW 4
#define ACL_SEARCH_MAX_PRUNE_RATIO 1e6
#define ACL_SEARCH_MAX_BUDGET 1e9
/* Channel counts from profiler events above this are garbage (NCCL builds
 * at most 64 channels). */
#define ACL_SEARCH_MAX_SEEN_CHANNELS 4096

/* ---- exploration (search_explore.c, docs/tuner.md "Exploration") ---- */
#define ACL_SEARCH_BETTER_EPS                                                                      \
  0.02                              /* a move must beat the incumbent by 2%: about the noise
                                      * of a 5-sample trimmed mean at 10% per-call noise */
#define ACL_SEARCH_PROV_MARGIN 0.01 /* provisional decision: >1% better than cand 0 */
#define ACL_SEARCH_EARLY_N 3        /* samples before an early verdict */
#define ACL_SEARCH_EARLY_REJECT                                                                    \
  1.15                        /* median > 1.15x best so far: judged early
                                      * (tunerbench: p5 0.9446 vs 0.9424 at 1.25) */
#define ACL_SEARCH_EARLY2_N 2 /* first look at a candidate: 2 samples ... */
#define ACL_SEARCH_EARLY2_REJECT                                                                   \
  1.40 /* ... both > 1.40x best so far: judged at once
                                       * (tunerbench: 1 run < 0.99x vs 2 at 1.25) */
#define ACL_SEARCH_SKIP_PRIOR                                                                      \
  3.0 /* subspaces NCCL predicts > 3x the min: skipped
                                      * (its model errs by tens of percent, not 3x) */
#define ACL_SEARCH_MAX_STEPS                                                                       \
  40                                   /* candidates judged per (re)tuning: the grid has 12
                                      * channel points, a few subspaces survive pruning */
#define ACL_SEARCH_MAX_EXPLORE_MULT 48 /* explore calls <= 48 x samples_per_cand */
/* Exploration's pick is the fastest of ~10 candidates on samples_per_cand
 * noisy samples each, so its time is biased fast (the winner's curse):
 * before it becomes the provisional decision it is measured up to this
 * many x samples_per_cand (at most ACL_SEARCH_MAX_SAMPLES) and picked
 * again. On tunerbench 8% of provisional decisions were slower than NCCL's
 * choice in truth, and at 256 MiB-1 GiB 38 runs ended on one while its
 * validation was still open (final/baseline min 0.958). 3 against 2
 * (tunerbench, seeds 1 and 2): p5 0.94965 / 0.9498 against 0.94957 /
 * 0.9485, final/baseline min 0.975 / 0.969 against 0.969 / 0.965, the
 * same overhead; 4: p5 0.94971, min 0.970, more runs below 0.99x. */
#define ACL_SEARCH_CONFIRM_MULT 3
/* The confirmed pick still beats NCCL's choice by luck where their gap is
 * a few percent (a neighbour of NCCL's own channel count): it becomes the
 * provisional decision only this many standard errors beyond the margin
 * (not on a late stream: it has no confirmation). Tunerbench, 51,000
 * runs: runs below 0.99x NCCL's choice 9 -> 3 (seed 2: 16 -> 14), p5
 * -0.001; at 1.0, 1 run below but the H200 landscape's 5-6 % channel gains
 * at 16-64 MiB lost (its p5 0.9424 -> 0.9374; 0.5: 0.9424). Measuring
 * NCCL's choice as often as the pick where the lead passed this bar but
 * not 2 SE (a second look that could only take the pick back) was tried
 * and not kept: runs below 0.99x 3 -> 3 with min 0.9755 -> 0.9693 (seed 2:
 * 14 -> 17), and the H200 landscape's median final/baseline 1.037 -> 1.023
 * (seed 2: 1.026 -> 1.000). */
#define ACL_SEARCH_PROV_Z 0.5
/* First step of a descent in grid units: from scratch 3 (x2.8 channels),
 * near a known optimum 1 (tunerbench: H200 p5 0.9418 with 3 vs 0.8250 with
 * 2 and 0.8253 with 4); later axes start at 2. */
#define ACL_SEARCH_FIRST_STEP 3
#define ACL_SEARCH_NEAR_STEP 1
/* A subspace's first point past the prune line but within this x the best gets one
 * more look, this many grid points towards where its protocol peaks
 * (search_explore.c, second_look). */
#define ACL_SEARCH_SECOND_LOOK 1.5
#define ACL_SEARCH_SECOND_LOOK_STEPS 2
#define ACL_SEARCH_AXIS_STEP 2
#define ACL_SEARCH_MAX_STEP 64 /* doubling stops here: more than any axis has points */
/* Bound on plan()'s loop: each turn judges, narrows a bracket or ends a
 * subspace, far fewer than 1024 on a 12-point axis x 21 subspaces. */
#define ACL_SEARCH_PLAN_GUARD 1024
/* Outliers: a sample > 4x its candidate's median, once 3 samples give a
 * median (counted only; the trimmed mean drops them). */
#define ACL_SEARCH_OUTLIER 4.0
#define ACL_SEARCH_OUTLIER_MIN_N 3

/* ---- decision, drift (search_conv.c) ---- */
/* Once settled, one consensus block covers 1024 calls: the per-call cost of
 * agreeing vanishes, and drift still shows within a block. */
#define ACL_SEARCH_CONVERGED_BLOCK 1024u
#define ACL_SEARCH_OVERLAP_SHIFT 0.3    /* sustained overlap change that re-tunes */
#define ACL_SEARCH_RETUNE_BACKOFF_MAX 6 /* drift evidence x 2^retunes, capped at x64 */

/* ---- one clock for the samples (search.c, acl_search_obs_t.cupti) ---- */
/* Samples of the incumbent on each clock before their offset is used: the
 * first CUPTI samples of a window go uncorrected until then, and 8 of them
 * in a drift window of 16 moved its median by half the offset. */
#define ACL_SEARCH_CLOCK_MIN 4
/* A larger difference is no clock offset but the ranks' skew, which CUPTI's
 * kernel includes (NCCL's choice in a DDP job on one H100: 733 us on CUPTI
 * against 333 on KernelCh at 42.5 MiB): left alone. */
#define ACL_SEARCH_CLOCK_MAX_S 5e-6

/* ---- exploration budget (search_budget.c, docs/tuner.md; the share itself
 * is params.budget, AUTOCCL_EXPLORE_BUDGET) ---- */
/* A call with NCCL's profiler events costs the host 3-7 us (2xH200). */
#define ACL_SEARCH_EVENT_COST_S 5e-6
/* A config's first call sets it up (protocol buffers, channels). */
#define ACL_SEARCH_SETUP_COST_S 5e-4
/* NCCL's first profiled calls of a size cost 5-11 ms once (2xH200, NCCL
 * 2.28): charged before the baseline. */
#define ACL_SEARCH_FIRST_EVENTS_COST_S 6e-3
/* With NCCL 2.30 (params.events_per_comm) the first call with NCCL's
 * kernel events costs once per process, 25-37 ms on one H200 (PyTorch)
 * and 30-64 ms in autoccl-bench: charged once per communicator. */
#define ACL_SEARCH_FIRST_EVENTS_COMM_COST_S 30e-3
/* Waiting blocks: at least 16 calls (one probe sample per block at shift
 * 4), at most 8192 (a budget that grows slowly is looked at again). */
#define ACL_SEARCH_WAIT_MIN 16u
#define ACL_SEARCH_WAIT_MAX 8192u
/* A wait planned before any sample of NCCL's choice rests on the cost
 * table, 5x low on one H200 (FSDP's 96 MiB AllGather: 41 us against
 * 222 us): its block is at most 256 calls, so that the samples arriving
 * meanwhile (CUPTI's windows sample every call they cover) correct it;
 * each further one on the table alone twice that, up to
 * ACL_SEARCH_WAIT_MAX. */
#define ACL_SEARCH_WAIT_PRIOR_MAX 256u
/* ... and at most 16 calls, or a quarter of the calls planned so far
 * where that is more, while it owes the communicator's first profiler
 * events (params.events_per_comm): a neighbour may pay them meanwhile, and
 * then the wait needs next to nothing. On the H100's FSDP job the 250 MiB
 * AllGather (once per step) waited its first 256 calls, 81 % of the run,
 * in one block; with waits doubling from 16, the pooled budget covered the
 * events near step 150 and all four workloads looked again at step 256,
 * the 250 MiB ones (by a few calls) not until step 505. */
#define ACL_SEARCH_WAIT_EVENTS_MAX 16u
#define ACL_SEARCH_WAIT_EVENTS_SHARE 4u
#define ACL_SEARCH_PROBE_SHIFT 4 /* 1 call in 2^4 = ACL_SEARCH_WAIT_MIN sampled */
/* Wait blocks for a candidate's late samples before running it again: a
 * host far ahead of its GPU is 500 calls ahead at 1 GiB. */
#define ACL_SEARCH_SAMPLE_WAITS 64
/* Samples still missing after this many wait blocks (512 calls) are far
 * behind, not lost (a lost one is run again after a block or two, unless
 * probes are lost too: 8 blocks took the simulator's sparse probes at 1 GiB
 * for a late stream): the stream is late (acl_search_t.late). CUPTI on one
 * H200 is ~1,000 calls behind. */
#define ACL_SEARCH_LATE_WAITS 32
/* The baseline's samples this many wait blocks (32 calls) overdue: the
 * plan's first candidates go out meanwhile (search_explore.c, look-ahead);
 * a stream on time has them back within a block. */
#define ACL_SEARCH_AHEAD_WAITS 2
/* A sample this many calls behind the end of its block marks the stream
 * late; a late stream's candidate waits for its samples until twice the lag
 * has passed since its block (a re-run sooner costs the lag again, and
 * re-runs ate the exploration's call cap at 64 MiB on one H200). The lag is
 * capped so that a wrong estimate delays a re-run by at most that much. */
#define ACL_SEARCH_LATE_CALLS 128u
/* A late stream's wait runs the explored pick instead of NCCL's choice
 * when it is this much faster (search_explore.c, interim): beyond the
 * winner's curse of a best of ~10 on 5 samples. */
#define ACL_SEARCH_INTERIM_MARGIN 0.05
#define ACL_SEARCH_LAG_MAX 8192u
/* A look-ahead's candidate with fewer channels than any measured is priced
 * at up to this many times the fewest's time (acl_search_spec_cost). */
#define ACL_SEARCH_SPEC_CH_MAX 16.0

/* ---- background validation and refinement (search_conv.c) ---- */
#define ACL_VAL_RUN                                                                                \
  12u                    /* decision calls between two challenger blocks: the
                              * challenger (maybe slower) runs 1 call in 4 */
#define ACL_VAL_BLOCK 4u /* challenger (cand 0) calls per block */
/* The decision's runs take ACL_VAL_RUN +- this many calls, varying from
 * block to block (acl_search_val_block): a job calls a workload 8 or 16
 * times a step, and with a fixed cycle of 16 the challenger ran at the same
 * 4 places of every step, whose overlap with compute decided the verdict
 * (simulated DDP with one H100's 7x between places: a decision 3.5x
 * slower than NCCL's choice kept as 187x faster). */
#define ACL_VAL_RUN_JITTER 4u
/* Pairing by place (search_place.c): periods looked for up to 32 calls,
 * each lag on at least 16 pairs of the decision's samples, a period only
 * where its pairs differ by under half the lags' median difference; looked
 * for every 64 samples of the decision, at most 4 times (where a workload
 * has no places, the look costs the sample path nothing after that). A
 * challenger sample is paired with the decision's up to 4 periods back,
 * its difference clipped at 4x; the paired estimate replaces the unpaired
 * one where its standard error is below 0.7 of it (with no places, pairs
 * are the noisier, about 1.2 of it). */
#define ACL_SEARCH_PLACE_MAX_PERIOD 32
#define ACL_SEARCH_PLACE_MIN_PAIRS 16
#define ACL_SEARCH_PLACE_CLEAR 0.5
#define ACL_SEARCH_PLACE_LOOK 64u
#define ACL_SEARCH_PLACE_MAX_LOOKS 4u
#define ACL_SEARCH_PLACE_BACK 4u
#define ACL_SEARCH_PLACE_CLIP 1.3862943611198906 /* log(4) */
#define ACL_SEARCH_PLACE_SE_SHARE 0.7
#define ACL_VAL_MIN 8u   /* challenger samples before any verdict */
#define ACL_VAL_MAX 96u  /* challenger samples: no verdict by then -> revert */
/* Samples not arriving: after twice the challenger blocks ACL_VAL_MAX needs,
 * validation ends on NCCL's choice. With a stream known late
 * (acl_search_t.late) only once the samples received show it has passed
 * half of those blocks' calls (samples arrive in call order: the
 * challenger's are lost, not late), and a refinement challenger is just
 * dropped (the decision is proven). Late
 * is not lost: on one H200 CUPTI's samples come ~1,000 calls behind, more
 * than the 768 calls of those blocks, and every challenger was dropped
 * before its first sample. Without any samples at all, after
 * ACL_VAL_LOST_BLOCKS. */
#define ACL_VAL_MAX_BLOCKS (2u * ACL_VAL_MAX / ACL_VAL_BLOCK)
#define ACL_VAL_LOST_BLOCKS (8u * ACL_VAL_MAX_BLOCKS)
/* Keep: gain > 3.5 standard errors at every look; at the last look (one
 * test, ACL_VAL_MAX samples) 2.5 (tunerbench: 0 runs < 0.99x, p5 0.9478;
 * 3.0 at every look left 2 runs at 0.9813 and 0.9868). */
#define ACL_VAL_Z_KEEP 3.5
#define ACL_VAL_Z_LAST 2.5
#define ACL_VAL_Z_DROP 2.0     /* drop a refinement challenger: slower by 2 SE */
/* Revert an explored decision under validation: slower than NCCL's choice
 * by 1.5 SE. Its pick makes it 8% likely a loser, and at 256 MiB-1 GiB a
 * 1,000-call run ends ~150 calls into its validation (tunerbench, with the
 * straggler and confirmation changes: 8 runs < 0.99x at 1.5, 14 at 2.0, 5
 * at 1.0 with p5 0.9478 instead of 0.9480; median 0.9931 at all three). */
#define ACL_VAL_Z_DROP_UNPROVEN 1.5
/* Validation that lost NCCL's samples only keeps the decision when its
 * recent samples beat NCCL's choice's earlier ones by 10% (unpaired,
 * acl_search_val_unpaired_keep, with 3.5 SE besides): under 10% noise a
 * trimmed mean of 5-16 samples is good to 3-5%; the rest is for
 * interference that changed
 * between the two measurements. */
#define ACL_VAL_UNPAIRED_MARGIN 1.10
#define ACL_VAL_STRAGGLER 1.35 /* samples > 1.35x the robust time are stragglers */
/* Samples of a refinement challenger: as many as validation's challenger
 * blocks give before its samples count as lost (ACL_VAL_MAX_BLOCKS).
 * Around NCCL's own choice a challenger is promoted at 4 SE and 1%; with
 * the decision's 3 samples per challenger sample at 10% noise that bar is
 * a 7.7% gain at 48 samples, 4.3% at 192. The runs below p5 on tunerbench
 * mostly end on NCCL's choice with the oracle 5-8% away, its grid point
 * challenged and dropped undecided at 48 (tunerbench, seed 1: p5 0.94985
 * -> 0.9605, median 0.9934 -> 0.9950, overhead 2.65 -> 2.75%, runs below
 * 0.99x 8 -> the same 8; 96 samples: p5 0.9545 on 6,000 runs). A challenger
 * slower by 2 SE still goes at once; an even one costs nothing. */
#define ACL_REF_MAX (ACL_VAL_MAX_BLOCKS * ACL_VAL_BLOCK)
#define ACL_REF_Z 2.5          /* promote a challenger: faster by 2.5 standard errors */
#define ACL_REF_Z_BASE 4.0     /* ... over NCCL's own choice: 4 SE and 1% (many looks) */
#define ACL_REF_MAX_TRIES 6    /* refinement challengers per tuning */
#define ACL_REF_NEAR 1.10      /* other subspaces: only bests within 10% of the decision */
/* Around NCCL's own choice one grid step is a few percent at most, too
 * little to prove against it: challengers two steps away (tunerbench, kept:
 * p5 0.9459 vs 0.9457, H200 p5 0.9374 vs 0.9424). */
#define ACL_REF_REACH_NCCL 2
#define ACL_REF_REACH 1

/* Chunk axis (search_chunk.c, tuner v6): descended only in subspaces whose
 * best channel point is within 10% of the best so far. The chunk-sensitive
 * synthetic landscapes (sim/landscape_chunk.c) move a subspace by up to
 * ~1.7x, but the search's budget goes further on the near ones: 1.10 gave
 * the best oracle ratio at the smallest overhead growth of 1.05-1.25
 * (docs/benchmarks-tuner.md). */
#define ACL_SEARCH_CHUNK_NEAR 1.10

#endif
