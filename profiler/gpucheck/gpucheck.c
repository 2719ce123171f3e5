/* GPU check of the CUPTI sample source (scripts/gpu-check-profiler.sh).
 *
 * Default (one GPU): tagged launches of ncclDevKernel_Fake (a spin kernel
 * named like NCCL's) through acl_prof_on_call, with and without a concurrent
 * GEMM stream; checks attribution (each tagged launch gets exactly its
 * sample), overlap (~0 alone, clearly > 0 with the GEMM), CUPTI durations vs
 * CUDA events (within 5%), and measures call->sample latency. The cost of
 * each profiler mode is cost.c's (acl-gpucheck-profiler-cost).
 * --nccl (2 GPUs): the same with real ncclAllReduce calls, one thread a rank.
 * Prints "RESULT name value" lines and "CHECK name PASS|FAIL detail". */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "profiler/gpucheck/check.h"
#include "profiler/profiler.h"

#ifdef ACL_CHECK_NCCL
int acl_check_nccl_id(void *id, size_t len);
int acl_check_nccl_init(void **comm, int nranks, const void *id, int rank);
int acl_check_nccl_allreduce(float *buf, size_t count, void *comm, cudaStream_t s);
void acl_check_nccl_destroy(void *comm);
#endif

#define MAXCALLS 4096

static int failures;
static void check(const char *name, int ok, const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  printf("CHECK %s %s %s\n", name, ok ? "PASS" : "FAIL", buf);
  failures += !ok;
}

/* ---- samples, indexed by (rank, call) ---- */
typedef struct rec {
  atomic_int n;
  double seconds;
  float overlap;
  int kernels;
  int wrong; /* sample's tag does not match what that call sent */
} rec_t;
static rec_t recs[2][MAXCALLS];
static int rank_ids[2] = {0, 1};
static atomic_long nsamples;

static void sink(void *u, const acl_prof_sample_t *s)
{
  (void)u;
  if (s->seconds < 0.0)
    return; /* a fact (what NCCL's own choice runs), no sample */
  int r = s->tag.rank_ctx == &rank_ids[1] ? 1 : 0;
  if (s->tag.call_idx >= MAXCALLS)
    return;
  rec_t *x = &recs[r][s->tag.call_idx];
  if (atomic_fetch_add(&x->n, 1) == 0) {
    x->seconds = s->seconds;
    x->overlap = s->overlap;
    x->kernels = s->compute_kernels;
    x->wrong = s->tag.widx != (uint32_t)(s->tag.call_idx % 7) || s->tag.cand_id != 3;
  }
  atomic_fetch_add(&nsamples, 1);
}

static acl_call_tag_t mktag(int r, uint64_t i, uint64_t nbytes)
{
  acl_call_tag_t t;
  memset(&t, 0, sizeof(t));
  t.rank_ctx = &rank_ids[r];
  t.call_idx = i;
  t.widx = (uint32_t)(i % 7);
  t.cand_id = 3;
  t.coll = 4;
  t.nbytes = nbytes;
  t.cand.algo = ACL_ALGO_NCCL;
  return t;
}

/* ---- GEMM stream: cuBLAS when loadable, else a plain compute kernel ---- */
typedef int (*cublasCreate_t)(void **);
typedef int (*cublasSetStream_t)(void *, cudaStream_t);
typedef int (*cublasSgemm_t)(void *, int, int, int, int, int, const float *, const float *, int,
                             const float *, int, const float *, float *, int);
typedef struct gemm {
  void *h;
  cublasSgemm_t sgemm;
  float *a, *b, *c;
  int n;
  cudaStream_t s;
} gemm_t;

static const char *gemm_kind = "none";
static void gemm_init(gemm_t *g, cudaStream_t s, int n)
{
  memset(g, 0, sizeof(*g));
  g->s = s;
  g->n = n;
  size_t bytes = (size_t)n * n * sizeof(float);
  CK(cudaMalloc((void **)&g->a, bytes));
  CK(cudaMalloc((void **)&g->b, bytes));
  CK(cudaMalloc((void **)&g->c, bytes));
  CK(cudaMemset(g->a, 0, bytes));
  CK(cudaMemset(g->b, 0, bytes));
  void *lib = dlopen("libcublas.so.13", RTLD_NOW);
  if (!lib)
    lib = dlopen("libcublas.so", RTLD_NOW);
  if (lib) {
    cublasCreate_t cr = (cublasCreate_t)dlsym(lib, "cublasCreate_v2");
    cublasSetStream_t ss = (cublasSetStream_t)dlsym(lib, "cublasSetStream_v2");
    g->sgemm = (cublasSgemm_t)dlsym(lib, "cublasSgemm_v2");
    if (cr && ss && g->sgemm && cr(&g->h) == 0 && ss(g->h, s) == 0) {
      gemm_kind = "cublas_sgemm";
      return;
    }
  }
  g->sgemm = NULL;
  gemm_kind = "acl_check_compute";
}

static void gemm_launch(gemm_t *g)
{
  float one = 1.0f, zero = 0.0f;
  if (g->sgemm)
    g->sgemm(g->h, 0, 0, g->n, g->n, g->n, &one, g->a, g->n, g->b, g->n, &zero, g->c, g->n);
  else
    acl_check_compute_launch(g->s, g->c, g->n * g->n, 2000);
}

static void wait_samples(acl_prof_t *p, long want)
{
  double t0 = acl_mono_s();
  while (atomic_load(&nsamples) < want && acl_mono_s() - t0 < 10.0)
    usleep(1000);
  acl_prof_flush(p);
}

typedef struct phase_res {
  int exact, missing, dup, wrong, dur_bad;
  double ov_mean, ov_max, ov_min, ratio_med, ratio_worst;
  int kernels_max;
} phase_res_t;

static int dcmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void evaluate(int r, int from, int to, const float *ev_ms, phase_res_t *o)
{
  memset(o, 0, sizeof(*o));
  o->ov_min = 1e9;
  double *ratios = calloc((size_t)(to - from), sizeof(double));
  int nr = 0, nov = 0;
  for (int i = from; i < to; i++) {
    rec_t *x = &recs[r][i];
    int n = atomic_load(&x->n);
    if (n == 0) {
      o->missing++;
      continue;
    }
    if (n > 1)
      o->dup++;
    if (x->wrong)
      o->wrong++;
    if (n == 1 && !x->wrong)
      o->exact++;
    double ev = ev_ms[i] * 1e-3;
    double ratio = x->seconds / ev;
    ratios[nr++] = ratio;
    if (fabs(ratio - 1.0) > 0.05)
      o->dur_bad++;
    if (fabs(ratio - 1.0) > fabs(o->ratio_worst - 1.0))
      o->ratio_worst = ratio;
    if (x->overlap >= 0) {
      o->ov_mean += x->overlap;
      nov++;
      if (x->overlap > o->ov_max)
        o->ov_max = x->overlap;
      if (x->overlap < o->ov_min)
        o->ov_min = x->overlap;
    }
    if (x->kernels > o->kernels_max)
      o->kernels_max = x->kernels;
  }
  o->ov_mean = nov ? o->ov_mean / nov : -1;
  if (nr) {
    qsort(ratios, (size_t)nr, sizeof(double), dcmp);
    o->ratio_med = ratios[nr / 2];
  }
  free(ratios);
}

static void report_phase(const char *tag, const phase_res_t *o, int n)
{
  printf("RESULT %s_exact %d/%d missing %d dup %d wrong %d\n", tag, o->exact, n, o->missing, o->dup,
         o->wrong);
  printf("RESULT %s_overlap mean %.4f min %.4f max %.4f compute_kernels_max %d\n", tag, o->ov_mean,
         o->ov_min, o->ov_max, o->kernels_max);
  printf("RESULT %s_cupti_over_events median %.4f worst %.4f outside_5pct %d\n", tag, o->ratio_med,
         o->ratio_worst, o->dur_bad);
}

static int single_gpu(void)
{
  const int N = 300;
  const unsigned long long SPIN = 200000; /* 200 us */
  cudaStream_t s1, s2;
  int lo, hi;
  CK(cudaSetDevice(0));
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CK(cudaStreamCreateWithPriority(&s1, cudaStreamNonBlocking, hi));
  CK(cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, lo));
  gemm_t g;
  gemm_init(&g, s2, 2048);
  printf("RESULT gemm_kind %s\n", gemm_kind);
  acl_check_fake_launch(s1, 1000);
  gemm_launch(&g);
  CK(cudaDeviceSynchronize());

  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_CUPTI; /* always attached: every call sampled */
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  void *pr = acl_prof_rank_attach(p, &rank_ids[0], 0x1234, 0, 1);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  printf("RESULT source %s\n", st.source);
  check("cupti_source", strcmp(st.source, "cupti") == 0, "source=%s", st.source);

  cudaEvent_t e0[2 * N], e1[2 * N];
  for (int i = 0; i < 2 * N; i++) {
    CK(cudaEventCreate(&e0[i]));
    CK(cudaEventCreate(&e1[i]));
  }
  /* Phase A: tagged launches alone. Phase B: with a GEMM stream. */
  for (int ph = 0; ph < 2; ph++) {
    for (int i = ph * N; i < (ph + 1) * N; i++) {
      if (ph == 1)
        gemm_launch(&g);
      acl_call_tag_t t = mktag(0, (uint64_t)i, 1 << 20);
      CK(cudaEventRecord(e0[i], s1));
      acl_prof_on_call(p, pr, &t, 0, false);
      acl_check_fake_launch(s1, SPIN);
      CK(cudaEventRecord(e1[i], s1));
    }
    CK(cudaDeviceSynchronize());
    wait_samples(p, (long)(ph + 1) * N);
  }
  float ev_ms[2 * N];
  for (int i = 0; i < 2 * N; i++)
    CK(cudaEventElapsedTime(&ev_ms[i], e0[i], e1[i]));
  phase_res_t A, B;
  evaluate(0, 0, N, ev_ms, &A);
  evaluate(0, N, 2 * N, ev_ms, &B);
  report_phase("alone", &A, N);
  report_phase("with_gemm", &B, N);
  check("attribution_alone", A.exact == N, "%d/%d exact", A.exact, N);
  check("attribution_gemm", B.exact == N, "%d/%d exact", B.exact, N);
  check("overlap_alone_zero", A.ov_max < 0.01 && A.ov_mean >= 0, "max %.4f", A.ov_max);
  check("overlap_gemm_positive", B.ov_mean > 0.3, "mean %.4f", B.ov_mean);
  check("duration_vs_events_alone", A.dur_bad <= N / 20 && fabs(A.ratio_med - 1) < 0.05,
        "median ratio %.4f, %d outside 5%%", A.ratio_med, A.dur_bad);
  check("duration_vs_events_gemm", B.dur_bad <= N / 20 && fabs(B.ratio_med - 1) < 0.05,
        "median ratio %.4f, %d outside 5%%", B.ratio_med, B.dur_bad);
  acl_prof_stats(p, &st);
  printf("RESULT sample_latency_median_s %.6f\n", st.sample_latency_seconds);
  printf("RESULT records %llu dropped %llu samples %llu ambiguous %llu\n",
         (unsigned long long)st.records, (unsigned long long)st.records_dropped,
         (unsigned long long)st.samples, (unsigned long long)st.ambiguous);
  acl_prof_stats_ex_t x;
  acl_prof_stats_ex(p, &x);
  printf("RESULT engine tags %llu nccl_records %llu compute_records %llu extcorr %llu "
         "untagged %llu lost %llu bad_clock %llu buffers %llu\n",
         (unsigned long long)x.tags, (unsigned long long)x.nccl_records,
         (unsigned long long)x.compute_records, (unsigned long long)x.extcorr,
         (unsigned long long)x.untagged, (unsigned long long)x.lost,
         (unsigned long long)x.bad_clock, (unsigned long long)x.cupti_buffers);

  /* Delivery latency, one call at a time: call -> sample for a 20 us kernel. */
  const int NL = 50;
  double lat[50] = {0};
  int nl = 0;
  for (int i = 2 * N; i < 2 * N + NL; i++) {
    acl_call_tag_t t = mktag(0, (uint64_t)i, 1 << 20);
    double t0 = acl_mono_s();
    acl_prof_on_call(p, pr, &t, 0, false);
    acl_check_fake_launch(s1, 20000);
    while (atomic_load(&recs[0][i].n) == 0 && acl_mono_s() - t0 < 1.0)
      usleep(50);
    if (atomic_load(&recs[0][i].n) > 0)
      lat[nl++] = acl_mono_s() - t0;
  }
  qsort(lat, (size_t)nl, sizeof(double), dcmp);
  printf("RESULT call_to_sample_latency_s median %.6f min %.6f max %.6f (n=%d, kernel 20 us)\n",
         nl ? lat[nl / 2] : -1, nl ? lat[0] : -1, nl ? lat[nl - 1] : -1, nl);
  check("latency_samples_arrive", nl == NL, "%d/%d within 1 s", nl, NL);
  char names[4][96];
  uint64_t counts[4];
  int nn = acl_prof_top_compute(p, names, counts, 4);
  for (int i = 0; i < nn; i++)
    printf("RESULT top_compute %llu %.80s\n", (unsigned long long)counts[i], names[i]);

  /* on_call CPU cost */
  double t0 = acl_mono_s();
  for (int i = 0; i < 100000; i++) {
    acl_call_tag_t t = mktag(0, MAXCALLS + 1, 1);
    acl_prof_on_call(p, pr, &t, 0, false);
  }
  printf("RESULT on_call_ns %.1f\n", (acl_mono_s() - t0) / 100000 * 1e9);
  acl_prof_flush(p);

  /* Cost per mode: acl-gpucheck-profiler-cost (scripts/gpu-profiler-cost.py). */
  acl_prof_flush(p);
  acl_prof_rank_detach(p, pr);
  acl_prof_destroy(p);
  return failures;
}

#ifdef ACL_CHECK_NCCL
typedef struct targ {
  int r;
  char id[256];
  acl_prof_t *p;
  int N;
  float ev_ms[2 * 512];
  int rc;
} targ_t;

static void *rank_main(void *arg)
{
  targ_t *a = arg;
  int r = a->r;
  CK(cudaSetDevice(r));
  void *comm = NULL;
  if (acl_check_nccl_init(&comm, 2, a->id, r) != 0) {
    a->rc = 1;
    return NULL;
  }
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  gemm_t g;
  gemm_init(&g, s2, 4096);
  size_t count = 16u << 20; /* 64 MiB of floats */
  float *buf;
  CK(cudaMalloc((void **)&buf, count * sizeof(float)));
  void *pr = acl_prof_rank_attach(a->p, &rank_ids[r], 0x77, r, 2);
  cudaEvent_t e0[2 * 512], e1[2 * 512];
  for (int i = 0; i < 2 * a->N; i++) {
    CK(cudaEventCreate(&e0[i]));
    CK(cudaEventCreate(&e1[i]));
  }
  for (int i = 0; i < 5; i++) /* warm-up, untagged */
    acl_check_nccl_allreduce(buf, count, comm, s1);
  CK(cudaStreamSynchronize(s1));
  for (int i = 0; i < 2 * a->N; i++) {
    if (i >= a->N)
      gemm_launch(&g);
    acl_call_tag_t t = mktag(r, (uint64_t)i, count * sizeof(float));
    t.nbytes = count * sizeof(float);
    CK(cudaEventRecord(e0[i], s1));
    acl_prof_on_call(a->p, pr, &t, 0, false);
    if (acl_check_nccl_allreduce(buf, count, comm, s1) != 0)
      a->rc = 1;
    CK(cudaEventRecord(e1[i], s1));
  }
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < 2 * a->N; i++)
    CK(cudaEventElapsedTime(&a->ev_ms[i], e0[i], e1[i]));
  acl_prof_rank_detach(a->p, pr);
  acl_check_nccl_destroy(comm);
  return NULL;
}

static int two_gpu_nccl(void)
{
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  if (ndev < 2) {
    check("nccl_two_gpus", 0, "%d GPU(s) visible", ndev);
    return failures;
  }
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_CUPTI; /* always attached: every call sampled */
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  check("cupti_source", strcmp(st.source, "cupti") == 0, "source=%s", st.source);
  targ_t a[2];
  char id[256];
  if (acl_check_nccl_id(id, sizeof(id)) != 0) {
    check("nccl_unique_id", 0, "ncclGetUniqueId failed");
    return failures;
  }
  pthread_t th[2];
  for (int r = 0; r < 2; r++) {
    memset(&a[r], 0, sizeof(a[r]));
    a[r].r = r;
    memcpy(a[r].id, id, sizeof(id));
    a[r].p = p;
    a[r].N = 200;
    pthread_create(&th[r], NULL, rank_main, &a[r]);
  }
  for (int r = 0; r < 2; r++) {
    pthread_join(th[r], NULL);
    check("nccl_rank_ran", a[r].rc == 0, "rank %d rc %d", r, a[r].rc);
  }
  wait_samples(p, 4L * a[0].N);
  for (int r = 0; r < 2; r++) {
    phase_res_t A, B;
    char n1[32], n2[32];
    int N = a[r].N;
    evaluate(r, 0, N, a[r].ev_ms, &A);
    evaluate(r, N, 2 * N, a[r].ev_ms, &B);
    snprintf(n1, sizeof(n1), "nccl_r%d_alone", r);
    snprintf(n2, sizeof(n2), "nccl_r%d_gemm", r);
    report_phase(n1, &A, N);
    report_phase(n2, &B, N);
    check(n1, A.exact == N && A.dur_bad <= N / 20 && A.ov_max < 0.01,
          "exact %d/%d, median ratio %.4f, %d outside 5%%, overlap max %.4f", A.exact, N,
          A.ratio_med, A.dur_bad, A.ov_max);
    check(n2, B.exact == N && B.dur_bad <= N / 20 && B.ov_mean > 0.3,
          "exact %d/%d, median ratio %.4f, %d outside 5%%, overlap mean %.4f", B.exact, N,
          B.ratio_med, B.dur_bad, B.ov_mean);
  }
  acl_prof_stats(p, &st);
  printf("RESULT nccl_sample_latency_median_s %.6f ambiguous %llu\n", st.sample_latency_seconds,
         (unsigned long long)st.ambiguous);
  acl_prof_destroy(p);
  return failures;
}
#endif

int main(int argc, char **argv)
{
  acl_log_set_prefix("gpucheck");
  acl_log_set_level(ACL_LOG_INFO);
  if (argc > 1 && strcmp(argv[1], "--nccl") == 0) {
#ifdef ACL_CHECK_NCCL
    two_gpu_nccl();
#else
    check("nccl_built", 0, "built without NCCL");
#endif
  } else {
    single_gpu();
  }
  printf("SUMMARY %s (%d failed)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
