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
/* The attribute of the cell under the cursor, given the cell's own. */
int theme_cursor_attr(const struct theme *t, int cell_attr);

#endif
