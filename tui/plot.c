/* The search trajectory as a character grid: x = step, y = busbw, one glyph
 * and colour per subspace (algorithm/protocol), dots joining consecutive
 * points. Pure, so the tests check the geometry without a terminal. */
#include "tui/top.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char acl_top_plot_glyphs[ACL_TOP_PLOT_MAX_SUBS + 1] = "o+x*#@%&";

void acl_top_plot_free(acl_top_plot_t *p)
{
  if (!p)
    return;
  free(p->glyph);
  free(p->color);
  memset(p, 0, sizeof(*p));
}

static int sub_index(acl_top_plot_t *p, const acl_top_cand_t *c)
{
  char key[40];
  if (!c->known || !c->algo[0])
    snprintf(key, sizeof(key), "?");
  else if (c->proto[0])
    snprintf(key, sizeof(key), "%s/%s", c->algo, c->proto);
  else
    snprintf(key, sizeof(key), "%s", c->algo);
  for (int i = 0; i < p->nsubs; i++)
    if (strcmp(p->subs[i], key) == 0)
      return i;
  if (p->nsubs < ACL_TOP_PLOT_MAX_SUBS) {
    snprintf(p->subs[p->nsubs], sizeof(p->subs[0]), "%s", key);
    return p->nsubs++;
  }
  return ACL_TOP_PLOT_MAX_SUBS - 1; /* the rest share the last glyph */
}

static int to_row(const acl_top_plot_t *p, double y)
{
  if (p->ymax <= p->ymin)
    return p->h / 2;
  double f = (y - p->ymin) / (p->ymax - p->ymin);
  int r = (p->h - 1) - (int)lround(f * (p->h - 1));
  return r < 0 ? 0 : r >= p->h ? p->h - 1 : r;
}

static int to_col(const acl_top_plot_t *p, int64_t x, int idx, int n)
{
  if (p->xmax <= p->xmin)
    return n > 1 ? (int)((int64_t)idx * (p->w - 1) / (n - 1)) : 0;
  double f = (double)(x - p->xmin) / (double)(p->xmax - p->xmin);
  int c = (int)lround(f * (p->w - 1));
  return c < 0 ? 0 : c >= p->w ? p->w - 1 : c;
}

int acl_top_plot_build(acl_top_plot_t *p, const acl_top_workload_t *wl, int w, int h)
{
  memset(p, 0, sizeof(*p));
  if (w < 2 || h < 2 || w > 4096 || h > 4096)
    return -1;
  p->w = w;
  p->h = h;
  p->glyph = malloc((size_t)w * h);
  p->color = calloc((size_t)w * h, 1);
  if (!p->glyph || !p->color) {
    acl_top_plot_free(p);
    return -1;
  }
  memset(p->glyph, ' ', (size_t)w * h);
  p->ymin = p->ymax = NAN;

  /* Range over points with a known bandwidth; unknown steps use their index. */
  int idx[ACL_TOP_MAX_TRAJ];
  int n = 0;
  bool steps_known = true;
  for (int i = 0; wl && i < wl->traj_len; i++) {
    const acl_top_traj_t *t = &wl->traj[i];
    if (!isfinite(t->busbw))
      continue;
    idx[n++] = i;
    if (t->step < 0)
      steps_known = false;
    if (!(t->busbw >= p->ymin))
      p->ymin = t->busbw;
    if (!(t->busbw <= p->ymax))
      p->ymax = t->busbw;
  }
  p->npoints = n;
  if (n == 0)
    return 0;
  p->xmin = steps_known ? wl->traj[idx[0]].step : 0;
  p->xmax = steps_known ? wl->traj[idx[n - 1]].step : n - 1;
  if (!steps_known || p->xmax < p->xmin) { /* not monotonic: plot by order */
    p->xmin = 0;
    p->xmax = n - 1;
    steps_known = false;
  }

  int pc = -1, pr = -1;
  int cols[ACL_TOP_MAX_TRAJ], rows[ACL_TOP_MAX_TRAJ], subs[ACL_TOP_MAX_TRAJ];
  for (int k = 0; k < n; k++) {
    const acl_top_traj_t *t = &wl->traj[idx[k]];
    cols[k] = steps_known ? to_col(p, t->step, k, n) : to_col(p, k, k, n);
    rows[k] = to_row(p, t->busbw);
    subs[k] = sub_index(p, &t->cand);
    /* Join with dots, only through empty cells; glyphs are drawn after. */
    if (pc >= 0 && cols[k] - pc > 1) {
      for (int c = pc + 1; c < cols[k]; c++) {
        int r = pr + (int)lround((double)(rows[k] - pr) * (c - pc) / (cols[k] - pc));
        if (p->glyph[r * w + c] == ' ')
          p->glyph[r * w + c] = '.';
      }
    }
    pc = cols[k];
    pr = rows[k];
  }
  for (int k = 0; k < n; k++) {
    p->glyph[rows[k] * w + cols[k]] = acl_top_plot_glyphs[subs[k]];
    p->color[rows[k] * w + cols[k]] = (unsigned char)(subs[k] + 1);
  }
  return 0;
}
