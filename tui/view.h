/* The full-screen ncurses view of autoccl-top. */
#ifndef ACL_TUI_VIEW_H
#define ACL_TUI_VIEW_H

#include "tui/net.h"

/* Runs until q (or -n refreshes); returns the exit status. */
int acl_top_ui_run(acl_top_net_t *net, const acl_top_opts_t *o, bool color);

/* Drawing helpers shared by view.c and pane.c. */
typedef struct acl_top_ui acl_top_ui_t;
extern bool acl_top_utf8; /* the locale can show "—", "▼" */
/* Draws s at (y, x) in at most maxw columns: control characters and invalid
 * bytes become '?', wide characters count double. Returns columns used. */
int acl_top_put(int y, int x, const char *s, int maxw);
void acl_top_draw_pane(const acl_top_row_t *r, const char *url, int y0, int h, int w, bool color);

/* Colour pairs. */
enum {
  ACL_TOP_PAIR_GOOD = 1, /* converged, connected */
  ACL_TOP_PAIR_BUSY,     /* exploring */
  ACL_TOP_PAIR_RETUNE,   /* re-tuning */
  ACL_TOP_PAIR_WARM,     /* warm-up, baseline */
  ACL_TOP_PAIR_BAD,      /* disabled, disconnected */
  ACL_TOP_PAIR_SUB0,     /* plot subspaces: SUB0 .. SUB0+7 */
};

#endif
