/* theme: semantic colour roles and the heatmap colour scales.
 *
 * Three modes, chosen from the terminal: 256 colours (perceptual viridis-style sequential scale
 * and a diverging scale for signed stages), 8 colours (a few steps plus shade blocks), and
 * monochrome (NO_COLOR set, or no colour support), where shade blocks and the numbers carry
 * everything. Roles and scales are configurable in colors.yaml.
 */
#ifndef ATTNSCOPE_THEME_H
#define ATTNSCOPE_THEME_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "config/config.h"
#include "explore/roles.h"
#include "palette/palette.h"

enum color_mode { COLOR_MODE_MONO, COLOR_MODE_8, COLOR_MODE_256 };

#define SCALE_STEPS PALETTE_STEPS /* colour steps of a heatmap scale (palette/palette.h) */

struct theme {
    enum color_mode mode;
    int role_attr[ROLE_COUNT]; /* curses attributes incl. COLOR_PAIR */
    int seq_attr[SCALE_STEPS]; /* sequential scale cells */
    int div_attr[SCALE_STEPS]; /* diverging scale cells */
    int scale, diverging;      /* indices into scale_names / diverging_names */
    bool cursor_keeps_color;   /* the cursor role sets no colour: the cell keeps its own */
    int cursor_attrs;          /* the cursor role's attributes (bold, reverse, ...) */
    /* Half-block cells (256 colours, enough pairs): one pair for every two steps of a scale,
     * the upper block's colour in front of the lower's, so a text row shows two rows of
     * blocks. Pairs past 255 do not fit an attribute: draw them with draw_cell_pair. */
    bool halves;
};

/* Picks the mode (NO_COLOR, COLORS) and sets up colour pairs. Call after start_color().
 * Loads configs/colors.yaml then the user's colors.yaml over it; problems go to errs. The
 * 256-colour mode draws palette_xterm_indices of the chosen scales. */
void theme_init(struct theme *t, const char *shipped_path, const char *user_path,
                struct diag_list *errs);

/* The attribute and shade glyph of a cell with value v on a scale over [lo, hi]. Signed
 * stages use the diverging scale symmetric around 0. */
int theme_cell_attr(const struct theme *t, float v, float lo, float hi, bool diverging,
                    const char **shade);
/* The same for a position 0..1 on the scale (palette_map_position). */
int theme_position_attr(const struct theme *t, double position, bool diverging, const char **shade);
/* The step (0 .. SCALE_STEPS - 1) of value v on the scale, as theme_cell_attr picks it. */
int theme_cell_step(float v, float lo, float hi, bool diverging);
/* The pair of a half-block cell: the upper block's step in front, the lower's behind; a step of
 * -1 is the terminal's own background (a masked block, or none). 0 without t->halves. */
int theme_half_pair(const struct theme *t, bool diverging, int upper, int lower);
/* "half seq 3/12" for a pair theme_half_pair gives (into out); false for any other pair. */
bool theme_half_pair_name(const struct theme *t, int pair, char *out, size_t size);
/* The attribute of the cell under the cursor, given the cell's own. */
int theme_cursor_attr(const struct theme *t, int cell_attr);

#endif
