/* draw: width-aware text output for the panels.
 *
 * UTF-8 strings clipped to a width in terminal columns ("café" and "日本" take 4 and 4), never
 * bytes. draw_init picks ASCII stand-ins for every glyph when the locale is not UTF-8.
 */
#ifndef ATTNSCOPE_UI_DRAW_H
#define ATTNSCOPE_UI_DRAW_H

#include <stdbool.h>
#include <stddef.h>

/* A rectangle of the screen. */
struct rect {
    int y, x, h, w;
};

static inline bool rect_contains(struct rect r, int y, int x)
{
    return y >= r.y && y < r.y + r.h && x >= r.x && x < r.x + r.w;
}

/* The first of `visible` places (rows, columns, layers) shown out of `total` that keeps place
 * `at` in view, moving as little as it can from `first`; after a resize it uses the room (no
 * blanks past the end while some of the start is hidden). */
static inline int scroll_follow(int first, int at, int visible, int total)
{
    if (at < first)
        first = at;
    if (at >= first + visible)
        first = at - visible + 1;
    if (first > total - visible)
        first = total - visible;
    return first > 0 ? first : 0;
}

void draw_init(void);
bool draw_ascii_only(void);
/* The ASCII stand-in drawn for wc without a UTF-8 locale ("?" when it has none): the shades
 * ░ ▒ ▓ █ are . : # @, the lower blocks ▁ ▃ ▅ ▇ (a signed stage's negative values) _ = % W. */
const char *draw_ascii_for(wchar_t wc);
/* Draws utf8 at (y, x) in at most width columns; returns the columns used. */
int draw_text(int y, int x, int width, int attr, const char *utf8);
int text_width(const char *utf8);
/* Columns of a column of token labels: the widest of the n tokens' (at least 4, at most max),
 * and a blank after it. */
int tokens_label_width(char *const *tokens, int n, int max);
/* Abbreviates a token to at most width columns, ending with "…" when cut. */
void abbreviate(char *out, size_t out_size, const char *utf8, int width);
/* The same from the other end: "…/long/path/to/file.yaml", keeping the end. */
void abbreviate_start(char *out, size_t out_size, const char *utf8, int width);
/* Draws one glyph of width 1 at (y, x) in attributes attrs (no colour bits) and colour pair
 * `pair`, which may be past 255, the most an attribute holds (theme's half-block pairs). */
void draw_cell_pair(int y, int x, const char *utf8, int attrs, int pair);
/* Blanks an area in one attribute. */
void draw_clear(struct rect r, int attr);
/* A token as a label: blanks shown as ␣ ⇥ ↵ so a space token is not an empty label. */
void display_token(char *out, size_t out_size, const char *token);
/* A bar of frac (0..1) of width columns into out: full blocks, then an eighth block for the
 * rest (ASCII: whole cells of the full block's stand-in). The token view's and the
 * predictions' bars. */
void draw_bar_text(char *out, size_t size, double frac, int width);
/* Formats a cell value in at most width columns: 0.138, -12.35, -∞, nan. */
void format_cell(char *out, size_t out_size, float v, int width);

#endif
