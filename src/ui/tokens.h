/* tokens panel: the token view (v), in place of the inspector. The sentence written out once,
 * the cursor's row (the query) marked, every key shaded by what the query gives it at this
 * head and stage, the future struck out as masked; under it the top keys as sorted bars with
 * their values. What it shows comes from explore/tokenview (kept per row, never per frame). */
#ifndef ATTNSCOPE_UI_TOKENS_H
#define ATTNSCOPE_UI_TOKENS_H

#include "explore/range.h"
#include "explore/tokenview.h"
#include "ui/panel.h"

#define TOKENS_CHIPS_MAX 2048 /* tokens a click can pick (a screen holds fewer) */

struct tokens_panel {
    struct panel base;
    struct tokenview_focus focus; /* the query's top keys and ranges */
    struct range_cache range;     /* the matrix's range, for the matrix and log scales */
    int *widths;                  /* every token's width on screen, marker included */
    int widths_cap;
    unsigned long widths_generation;
    int widths_n, widths_max; /* the tokens and the most columns a token got */
    char *const *widths_keys; /* whose: a layer's keys (cross-attention: the source's) */
    bool widths_valid;
    int first; /* the window's first token as last drawn; -1 before any */
    /* What the last draw put where, for clicks: a token of the sentence, a key's bar. */
    struct tokens_chip {
        int y, x, w, token;
    } chips[TOKENS_CHIPS_MAX];
    int n_chips;
    int bars_y, n_bars; /* the bars' first line and how many: focus.top[0 .. n_bars - 1] */
};

void tokens_panel_init(struct tokens_panel *tp);
void tokens_panel_free(struct tokens_panel *tp);

#endif
