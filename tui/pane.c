/* The bottom pane: the selected workload's search trajectory as a plot
 * (busbw against step, one glyph and colour per subspace) beside the last
 * candidates as text. */
#include <curses.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "tui/view.h"

bool acl_top_utf8;

int acl_top_put(int y, int x, const char *s, int maxw)
{
  if (maxw <= 0 || !s)
    return 0;
  wchar_t out[512];
  int n = 0, cols = 0;
  mbstate_t st;
  memset(&st, 0, sizeof(st));
  size_t len = strlen(s);
  while (len && n < (int)(sizeof(out) / sizeof(out[0])) - 1) {
    wchar_t wc;
    size_t k = mbrtowc(&wc, s, len, &st);
    if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
      memset(&st, 0, sizeof(st));
      wc = L'?';
      k = 1;
    }
    int cw = wcwidth(wc);
    if (cw < 0 || wc < 0x20 || wc == 0x7f) {
      wc = L'?';
      cw = 1;
    }
    if (cols + cw > maxw)
      break;
    out[n++] = wc;
    cols += cw;
    s += k;
    len -= k;
  }
  out[n] = L'\0';
  mvaddnwstr(y, x, out, n);
  return cols;
}

static void plot_area(const acl_top_workload_t *w, int y0, int x0, int h, int wd, bool color)
{
  char lab[32];
  int ylab = 11; /* "160.0 GB/s " */
  if (wd - ylab < 8 || h < 3)
    return;
  acl_top_plot_t p;
  if (acl_top_plot_build(&p, w, wd - ylab, h - 1) < 0)
    return;
  if (p.npoints == 0) {
    acl_top_put(y0 + h / 2, x0 + ylab, "no trajectory points yet", wd - ylab);
    acl_top_plot_free(&p);
    return;
  }
  acl_top_put(y0, x0, acl_top_fmt_bw(p.ymax, lab, sizeof(lab)), ylab - 1);
  acl_top_put(y0 + p.h - 1, x0, acl_top_fmt_bw(p.ymin, lab, sizeof(lab)), ylab - 1);
  for (int r = 0; r < p.h; r++)
    for (int c = 0; c < p.w; c++) {
      char g = p.glyph[r * p.w + c];
      if (g == ' ')
        continue;
      int sub = p.color[r * p.w + c];
      attr_t a = sub && color ? COLOR_PAIR(ACL_TOP_PAIR_SUB0 + sub - 1) | A_BOLD
                 : sub        ? A_BOLD
                              : A_DIM;
      attron(a);
      mvaddch(y0 + r, x0 + ylab + c, (chtype)(unsigned char)g);
      attroff(a);
    }
  /* x axis: first and last step, then the legend. */
  snprintf(lab, sizeof(lab), "step %lld", (long long)p.xmin);
  int x = x0 + ylab;
  acl_top_put(y0 + h - 1, x, lab, p.w);
  snprintf(lab, sizeof(lab), "%lld", (long long)p.xmax);
  int l = (int)strlen(lab);
  if (p.w > l + 12)
    acl_top_put(y0 + h - 1, x0 + ylab + p.w - l, lab, l);
  x += (int)strlen("step ") + 8;
  for (int s = 0; s < p.nsubs && x < x0 + wd - 4; s++) {
    char item[56];
    snprintf(item, sizeof(item), "%c %s", acl_top_plot_glyphs[s], p.subs[s]);
    if (color)
      attron(COLOR_PAIR(ACL_TOP_PAIR_SUB0 + s) | A_BOLD);
    int used = acl_top_put(y0 + h - 1, x, item, x0 + wd - (int)strlen(lab) - 2 - x);
    if (color)
      attroff(COLOR_PAIR(ACL_TOP_PAIR_SUB0 + s) | A_BOLD);
    x += used + 2;
  }
  acl_top_plot_free(&p);
}

static void history(const acl_top_workload_t *w, int y0, int x0, int h, int wd)
{
  char line[160], cand[48], bw[24], ov[16];
  acl_top_put(y0, x0, "STEP  CANDIDATE            BUSBW       OVL", wd);
  int rows = h - 1;
  int first = w->traj_len > rows ? w->traj_len - rows : 0;
  for (int i = first, y = y0 + 1; i < w->traj_len; i++, y++) {
    const acl_top_traj_t *t = &w->traj[i];
    char step[24];
    acl_top_fmt_int(t->step, step, sizeof(step));
    snprintf(line, sizeof(line), "%-5s %-20s %-11s %s", step,
             acl_top_fmt_cand(&t->cand, cand, sizeof(cand)),
             acl_top_fmt_bw(t->busbw, bw, sizeof(bw)), acl_top_fmt_pct(t->overlap, ov, sizeof(ov)));
    acl_top_put(y, x0, line, wd);
  }
  if (w->traj_len == 0)
    acl_top_put(y0 + 1, x0, "-", wd);
}

void acl_top_draw_pane(const acl_top_row_t *r, const char *url, int y0, int h, int w, bool color)
{
  char title[256], size[24], best[48], sp[16];
  if (h < 4)
    return;
  attron(A_BOLD);
  mvhline(y0, 0, acl_top_utf8 ? ACS_HLINE : '-', w);
  if (!r) {
    acl_top_put(y0, 2, " trajectory: no workload selected ", w - 4);
    attroff(A_BOLD);
    return;
  }
  const acl_top_workload_t *wl = r->w;
  /* The workload always; the best and the source URL only when they fit
   * whole, so the title is never cut mid-word. */
  char part[3][200];
  snprintf(title, sizeof(title), " trajectory: %s rank %d %s %s ", r->comm_label, wl->rank,
           wl->collective[0] ? wl->collective : "-",
           acl_top_fmt_bytes(wl->bytes, size, sizeof(size)));
  snprintf(part[0], sizeof(part[0]), " best %s %s ",
           acl_top_fmt_cand(&wl->best, best, sizeof(best)),
           acl_top_fmt_ratio(wl->speedup, sp, sizeof(sp)));
  snprintf(part[1], sizeof(part[1]), " %s ", sp); /* the speedup alone */
  snprintf(part[2], sizeof(part[2]), " (%s) ", url);
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(title), pl = strlen(part[i]);
    if ((int)(l + pl) <= w - 4 && l + pl < sizeof(title)) {
      memcpy(title + l - 1, part[i], pl + 1); /* one space between */
      if (i == 0)
        i++; /* the full best went in: skip the short form */
    } else if (i == 1) {
      break; /* no room for the speedup: no URL either */
    }
  }
  /* a wait for the budget says how long and what for, where it fits whole */
  char wait[96];
  if (acl_top_fmt_wait(wl, wait, sizeof(wait))[0]) {
    size_t l = strlen(title), pl = strlen(wait);
    if ((int)(l + pl + 1) <= w - 4 && l + pl + 1 < sizeof(title))
      snprintf(title + l, sizeof(title) - l, "%s ", wait);
  }
  acl_top_put(y0, 2, title, w - 4);
  attroff(A_BOLD);
  int hist_w = w >= 100 ? 46 : 0; /* the text history needs room */
  plot_area(wl, y0 + 1, 0, h - 1, w - hist_w - 1, color);
  if (hist_w) {
    mvvline(y0 + 1, w - hist_w - 1, acl_top_utf8 ? ACS_VLINE : '|', h - 1);
    history(wl, y0 + 1, w - hist_w + 1, h - 1, hist_w - 1);
  }
}
