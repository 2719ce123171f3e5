/* Trace record formatting: one JSON line per record (docs/trace.md). */
#include <stdio.h>

#include "profiler/trace_int.h"

static const char *src_name(int s)
{
  switch (s) {
  case 1:
    return "cupti";
  case 2:
    return "nccl";
  case 3:
    return "sim";
  default:
    return "?";
  }
}

static int fmt_cand(char *b, size_t n, const acl_candidate_t *c)
{
  if (c->algo == ACL_ALGO_NCCL)
    return snprintf(b, n, "null");
  return snprintf(b, n, "[\"%s\",\"%s\",%d]", acl_algo_name(c->algo), acl_proto_name(c->proto),
                  c->nchannels);
}

/* Decided vs ran: the profiler's mismatch kinds (docs/profiler.md). */
static const char *status_of(const rec_t *r)
{
  if (r->ran_algo < 0 || r->ran_proto < 0 || r->ran_nch <= 0)
    return acl_ran_kind_name(ACL_RAN_UNKNOWN);
  return acl_ran_kind_name(acl_ran_kind(&r->cand, r->ran_algo, r->ran_proto, r->ran_nch));
}

static int fmt_num(char *b, size_t n, double v)
{
  return v == v && v >= 0.0 ? snprintf(b, n, "%.9g", v) : snprintf(b, n, "null");
}

int acl_trace_fmt_rec(const rec_t *r, char *b, size_t n)
{
  char cand[64];
  fmt_cand(cand, sizeof(cand), &r->cand);
  if (r->type == REC_DECISION)
    return snprintf(b, n,
                    "{\"t\":\"d\",\"comm\":\"%016llx\",\"rank\":%d,\"nranks\":%d,\"coll\":\"%s\","
                    "\"bytes\":%llu,\"pipe\":%d,\"w\":%u,\"call\":%llu,\"cand\":%s,\"cid\":%u,"
                    "\"phase\":\"%s\",\"ns\":%llu}\n",
                    (unsigned long long)r->comm, r->rank, r->nranks, acl_coll_name(r->coll),
                    (unsigned long long)r->nbytes, r->pipe_ops, r->widx,
                    (unsigned long long)r->call_idx, cand, r->cand_id,
                    acl_phase_name((acl_phase_t)r->phase), (unsigned long long)r->emit_ns);
  char ran[64], sec[32], used[32], host[32], ov[32], lat[32];
  if (r->ran_algo >= 0 && r->ran_proto >= 0)
    snprintf(ran, sizeof(ran), "[\"%s\",\"%s\",%d]", acl_algo_name(r->ran_algo),
             acl_proto_name(r->ran_proto), r->ran_nch);
  else
    snprintf(ran, sizeof(ran), "null");
  fmt_num(sec, sizeof(sec), r->seconds);
  fmt_num(used, sizeof(used), r->used);
  fmt_num(host, sizeof(host), r->host > 0.0 ? r->host : -1.0);
  fmt_num(ov, sizeof(ov), r->overlap);
  fmt_num(lat, sizeof(lat),
          r->call_ns && r->emit_ns >= r->call_ns ? (double)(r->emit_ns - r->call_ns) * 1e-9 : -1.0);
  return snprintf(
      b, n,
      "{\"t\":\"s\",\"comm\":\"%016llx\",\"rank\":%d,\"nranks\":%d,\"coll\":\"%s\","
      "\"bytes\":%llu,\"pipe\":%d,\"w\":%u,\"call\":%llu,\"cand\":%s,\"cid\":%u,"
      "\"ran\":%s,\"status\":\"%s\",\"src\":\"%s\",\"gpu\":[%llu,%llu],"
      "\"call_ns\":%llu,\"emit_ns\":%llu,\"sec\":%s,\"used\":%s,\"host\":%s,\"overlap\":%s,"
      "\"kernels\":%u,\"lat\":%s}\n",
      (unsigned long long)r->comm, r->rank, r->nranks, acl_coll_name(r->coll),
      (unsigned long long)r->nbytes, r->pipe_ops, r->widx, (unsigned long long)r->call_idx, cand,
      r->cand_id, ran, status_of(r), src_name(r->source), (unsigned long long)r->gpu_start,
      (unsigned long long)r->gpu_stop, (unsigned long long)r->call_ns,
      (unsigned long long)r->emit_ns, sec, used, host, ov, r->kernels, lat);
}
