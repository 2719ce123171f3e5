/* Private layout of landscapes (sim/landscape*.c). */
#ifndef ACL_SIM_LANDSCAPE_INT_H
#define ACL_SIM_LANDSCAPE_INT_H

#include "sim/landscape.h"

#define ACL_LAND_H200_NSIZE 11 /* 1 KiB .. 1 GiB, x4 */
#define ACL_LAND_H200_NCOLL 3  /* measured: AllGather, ReduceScatter, AllReduce */
#define ACL_LAND_H200_NCH 7    /* channel counts measured: 1 2 4 8 16 24 32 */
#define ACL_LAND_SYN_NANCH 11  /* synthetic shape anchors: 1 KiB x 4^k */
#define ACL_LAND_MAX_CH 32

enum { ACL_LAND_H200 = 1, ACL_LAND_SYNTH = 2, ACL_LAND_TRACE = 3 };

/* ---- replay of recorded traces (sim/landscape_trace.c) ---- */
#define ACL_TR_NSZ 24  /* recorded sizes per (regime, collective) */
#define ACL_TR_NCFG 48 /* executed configs per size */
#define ACL_TR_MAXR 8  /* ranks per recorded iteration */
#define ACL_TR_NEV 32
#define ACL_TR_MAXEXCESS 256
#define ACL_TR_BUILT_CH 24 /* channels NCCL built by default on 2x H200 */
#define ACL_TR_1GPU_BUILT_CH 64 /* NCCL 2.30.7, 2 ranks on one H200 (P2P/CUMEM) */

typedef struct acl_tr_cfg {
  int8_t algo, proto;
  int16_t nch; /* what NCCL ran */
  /* recorded without "ran": algo/proto from the label (-1: a default run),
   * nch the channels asked (0: NCCL's own); resolved when the set is done */
  bool guess;
  int nranks;
  size_t n;                  /* steady iterations */
  float *v;                  /* n x nranks, us, iteration-major */
  double median_us, mean_us; /* of the slowest rank per iteration */
} acl_tr_cfg_t;

typedef struct acl_tr_pt {
  double bytes;
  int ncfg, def;                                 /* def: NCCL's default config, -1 unknown */
  int16_t auto_nch[ACL_NUM_ALGO][ACL_NUM_PROTO]; /* NCCL's own channel choice */
  acl_tr_cfg_t cfg[ACL_TR_NCFG];
} acl_tr_pt_t;

typedef struct acl_tr_set {
  bool present;
  int npts;
  acl_tr_pt_t pt[ACL_TR_NSZ];
  /* set-up, from each run's first call beyond its median: the default run's
   * and the sweep runs' (with their algo and channels) */
  bool has_def;
  double def_first_excess_us;
  int def_algo, def_nch;
  int nexcess;
  double excess_us[ACL_TR_MAXEXCESS];
  int8_t excess_algo[ACL_TR_MAXEXCESS];
  int16_t excess_nch[ACL_TR_MAXEXCESS];
  double conn_ch_us;                 /* per channel connected beyond those in use */
  double conn_algo_us[ACL_NUM_ALGO]; /* first use of an algorithm (beyond the default's) */
  int nev;
  double ev_bytes[ACL_TR_NEV], ev_us[ACL_TR_NEV];
} acl_tr_set_t;

typedef struct acl_land_tr {
  acl_tr_set_t set[2][ACL_LAND_H200_NCOLL]; /* [isolated, under GEMM][AG, RS, AR] */
  int files;
  bool derived;
  int built_ch; /* channels NCCL built: a config of unknown count ran with these */
  acl_landscape_t *h200; /* channel ratios below the recorded counts */
} acl_land_tr_t;

int acl_land_tr_load(acl_land_tr_t *tr, const char *dir, const char *launch, char *err,
                     size_t errlen);
void acl_land_tr_free(acl_land_tr_t *tr);
const acl_tr_set_t *acl_land_tr_set(const acl_land_tr_t *tr, int mcoll, int regime);
bool acl_land_tr_default(const acl_land_tr_t *tr, int mcoll, double bytes, acl_candidate_t *out);
bool acl_land_tr_valid(const acl_land_tr_t *tr, int mcoll, double bytes, int algo, int proto);
int acl_land_tr_exec_nch(const acl_land_tr_t *tr, int mcoll, double bytes, int algo, int proto,
                         int asked, int built);
/* Median us of an executed config at one regime; *src the recorded config
 * draws come from and *scale the factor from its median to this time. */
double acl_land_tr_time_regime(const acl_land_tr_t *tr, int mcoll, int regime, double bytes,
                               int algo, int proto, int nch, const acl_tr_cfg_t **src,
                               double *scale);
/* us to connect: first use of algo (have == 0) and need - have more channels. */
double acl_land_tr_connect_us(const acl_land_tr_t *tr, int mcoll, int regime, int algo, int have,
                              int need);
double acl_land_tr_event_us(const acl_land_tr_t *tr, int mcoll, double bytes);

/* Measured model at one size (see docs/tuner.md "H200 landscape"). */
typedef struct acl_land_h200_pt {
  double t_def;                      /* default config, out-of-place, us */
  double a_ratio[ACL_NUM_ALGO];      /* forced algo / default; 0 = not offered */
  double p_ratio[ACL_NUM_PROTO];     /* forced proto / default */
  double c_ratio[ACL_LAND_H200_NCH]; /* forced channels / default */
  int def_algo, def_proto, def_ch;   /* what the default ran (def_ch: a count) */
} acl_land_h200_pt_t;

typedef struct acl_land_syn_pt {
  float factor[ACL_NUM_ALGO][ACL_NUM_PROTO];   /* subspace offset >= 1; 0 = invalid */
  float peak[ACL_NUM_ALGO][ACL_NUM_PROTO];     /* channel count of the optimum */
  float al[ACL_NUM_ALGO][ACL_NUM_PROTO];       /* curvature below the peak */
  float ar[ACL_NUM_ALGO][ACL_NUM_PROTO];       /* curvature above the peak */
  float pred_err[ACL_NUM_ALGO][ACL_NUM_PROTO]; /* NCCL cost-model error */
  int def_algo, def_proto, def_ch;
} acl_land_syn_pt_t;

struct acl_landscape {
  int kind;
  char name[48];
  int max_channels;
  double interf_base;   /* slowdown per unit interference, any candidate */
  double interf_per_ch; /* extra per unit interference at max channels */
  /* H200 */
  double sizes[ACL_LAND_H200_NSIZE];
  acl_land_h200_pt_t h[ACL_LAND_H200_NCOLL][ACL_LAND_H200_NSIZE];
  /* synthetic */
  double lat_us[ACL_NUM_COLL];
  double busbw_gbs[ACL_NUM_COLL];
  acl_land_syn_pt_t s[ACL_NUM_COLL][ACL_LAND_SYN_NANCH];
  /* traces */
  acl_land_tr_t *tr;
  /* chunk size (sim/landscape_chunk.c), any kind; off unless enabled */
  bool chunk_on;
  float chunk_peak[ACL_NUM_COLL][ACL_LAND_SYN_NANCH][ACL_NUM_ALGO][ACL_NUM_PROTO];
  float chunk_curv[ACL_NUM_COLL][ACL_LAND_SYN_NANCH][ACL_NUM_ALGO][ACL_NUM_PROTO];
};

extern const int acl_land_h200_ch[ACL_LAND_H200_NCH];

/* Uniform draw in [0, 1) advancing *s (landscape.c's stream; the chunk
 * model draws from its own seed with it). */
double acl_land_unif(uint64_t *s);
/* Standard normal draw advancing *s (same stream). */
double acl_land_gauss(uint64_t *s);

/* Synthetic time (us, 2 ranks, no interference) with the shape of anchor k
 * (sim/landscape_synth.c). */
double acl_land_syn_at(const acl_landscape_t *l, int coll, int k, double bytes, int algo, int proto,
                       int nch);

/* Parses the embedded CSV into l (kind H200). 0 or -1 with err. */
int acl_land_h200_load(acl_landscape_t *l, const char *csv, char *err, size_t errlen);
/* Model time (us) at measured size index i, 2 ranks, no interference. */
double acl_land_h200_at(const acl_landscape_t *l, int mcoll, int i, int algo, int proto, int nch);

#endif
