/* autoccl-top: live view of autoccl's tuning over its HTTP API.
 * Exit status: 0 ok, 1 an endpoint unreachable at start (or no memory),
 * 2 bad usage. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tui/view.h"

static void sleep_s(double s)
{
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) < 0)
    ;
}

/* Only the URLs the user gave: a sibling found through /api/v1/host that
 * does not answer is shown as such, not a reason to stop. */
static int report_unreachable(const acl_top_net_t *net, int nuser)
{
  for (int i = 0; i < nuser && i < net->n; i++) {
    const acl_top_src_t *s = &net->src[i];
    if (s->conn == ACL_TOP_CONN_UP)
      continue;
    /* An answer that was not a usable state is not "cannot reach". */
    bool answered = !strncmp(s->error, "HTTP ", 5) || !strncmp(s->error, "bad state", 9) ||
                    !strncmp(s->error, "state document", 14);
    if (answered)
      fprintf(stderr, "autoccl-top: %s: %s\n", s->url, s->error);
    else
      fprintf(stderr, "autoccl-top: cannot reach %s: %s\n", s->url, s->error);
  }
  return 1;
}

static int print_once(acl_top_net_t *net, const acl_top_opts_t *o, int iteration)
{
  const acl_top_model_t *models[ACL_TOP_MAX_URLS];
  acl_top_source_status_t st[ACL_TOP_MAX_URLS];
  for (int i = 0; i < net->n; i++) {
    acl_top_src_t *s = &net->src[i];
    models[i] = s->has_model ? &s->model : NULL;
    st[i].url = s->url;
    st[i].status = s->conn == ACL_TOP_CONN_UP ? "ok" : acl_top_conn_label(s);
    st[i].error = s->conn == ACL_TOP_CONN_UP ? NULL : s->error;
  }
  acl_top_view_t v;
  if (acl_top_view_build(&v, models, net->n) < 0) {
    fprintf(stderr, "autoccl-top: out of memory\n");
    return 1;
  }
  int rc = 0;
  if (o->json) {
    char *doc = acl_top_json_merged(&v, models, st, net->n);
    if (doc) {
      printf("%s\n", doc);
      fflush(stdout);
      free(doc);
    } else {
      fprintf(stderr, "autoccl-top: out of memory\n");
      rc = 1;
    }
  } else {
    acl_top_print_batch(stdout, &v, st, net->n, iteration);
  }
  acl_top_view_free(&v);
  return rc;
}

int main(int argc, char **argv)
{
  setlocale(LC_ALL, "");
  acl_top_opts_t *o = calloc(1, sizeof(*o)); /* 32 KiB of URLs: not on the stack */
  char err[256];
  int rc = 2;
  acl_top_net_t *net = NULL;
  if (!o) {
    fprintf(stderr, "autoccl-top: out of memory\n");
    return 1;
  }
  if (acl_top_parse_args(argc, argv, o, err, sizeof(err)) < 0) {
    fprintf(stderr, "autoccl-top: %s\nTry 'autoccl-top --help'.\n", err);
    goto out;
  }
  if (o->help) {
    fputs(acl_top_usage, stdout);
    rc = 0;
    goto out;
  }
  if (o->version) {
    printf("autoccl-top %s (state schema %d)\n", ACL_TOP_VERSION, ACL_TOP_SCHEMA_VERSION);
    rc = 0;
    goto out;
  }
  bool interactive = !o->batch && !o->once;
  if (interactive && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
    fprintf(stderr, "autoccl-top: not a terminal; use --batch or --once\n");
    goto out;
  }
  const char *nc = getenv("NO_COLOR");
  bool color = !o->no_color && !(nc && nc[0]);
  rc = 1;
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fprintf(stderr, "autoccl-top: cannot initialise libcurl\n");
    goto out;
  }
  if (o->local_ranks <= 1) /* one URL per host: the endpoint names its siblings */
    acl_top_discover(o);
  if (!(net = acl_top_net_create(o))) {
    fprintf(stderr, "autoccl-top: out of memory\n");
    goto out_curl;
  }
  acl_top_net_fetch_all(net);
  bool unreachable = false;
  for (int i = 0; i < o->nuser && i < net->n; i++)
    unreachable |= net->src[i].conn != ACL_TOP_CONN_UP;
  if (unreachable) {
    rc = report_unreachable(net, o->nuser);
    goto out_curl;
  }
  if (o->once) {
    rc = print_once(net, o, 1);
  } else if (o->batch) {
    rc = 0;
    for (long it = 1; rc == 0; it++) {
      rc = print_once(net, o, (int)it);
      if (o->iterations > 0 && it >= o->iterations)
        break;
      sleep_s(o->delay);
      acl_top_net_fetch_all(net); /* failures show as "disconnected" rows */
    }
  } else {
    rc = acl_top_ui_run(net, o, color);
  }
out_curl:
  acl_top_net_destroy(net);
  curl_global_cleanup();
out:
  free(o);
  return rc;
}
