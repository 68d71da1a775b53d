/* theme: semantic colour roles and the heatmap colour scales.
 *
 * Three modes, chosen from the terminal: 256 colours (perceptual viridis-style sequential scale
 * and a diverging scale for signed stages), 8 colours (a ramp of colours of rising brightness,
 * shade blocks blending each into the next), and monochrome (NO_COLOR set, or no colour
 * support), where shade blocks and the numbers carry everything. In every mode a cell grows
 * brighter with its value, and on a signed stage with its magnitude, the sign told by hue (two
 * ramps from black in 8 colours) or by glyph (shades above 0, lower blocks below, without
 * colour); tests/test_theme.c measures it. Roles and scales are configurable in colors.yaml.
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
#define RAMP_MAX    17            /* levels of a ramp of 8 colours or none (theme_look) */

/* How a cell of the map looks: its attribute (for its text: a number, a token), its shade glyph
 * (" " when colour says it all) and the glyph's own attribute (in 8 colours the glyph blends the
 * cell's colour into the next of the ramp; elsewhere the cell's attribute). */
struct theme_look {
    int attr;
    int shade_attr;
    const char *shade;
};

/* The levels of a ramp (8 colours, monochrome), darkest first; a signed one has its 0 in the
 * middle, the negative side below it. */
struct theme_ramp {
    int n;
    struct theme_look look[RAMP_MAX];
};

struct theme {
    enum color_mode mode;
    int role_attr[ROLE_COUNT];            /* curses attributes incl. COLOR_PAIR */
    int seq_attr[SCALE_STEPS];            /* sequential scale cells (256 colours) */
    int div_attr[SCALE_STEPS];            /* diverging scale cells (256 colours) */
    struct theme_ramp seq_ramp, div_ramp; /* 8 colours and monochrome */
    int scale, diverging;                 /* indices into scale_names / diverging_names */
    bool cursor_keeps_color; /* the cursor role sets no colour: the cell keeps its own */
    int cursor_attrs;        /* the cursor role's attributes (bold, reverse, ...) */
    /* Half-block cells (256 colours, enough pairs): one pair for every two steps of a scale,
     * the upper block's colour in front of the lower's, so a text row shows two rows of
     * blocks. Pairs past 255 do not fit an attribute: draw them with draw_cell_pair. */
    bool halves;
    /* The colour pairs of the ramps of 8 colours, from ramp_pair0, each named for golden
     * screens' legends (theme_ramp_pair_name). */
    int ramp_pair0, n_ramp_pairs;
    char ramp_pair_names[2 * SCALE_STEPS][32];
};

/* Picks the mode (NO_COLOR, COLORS) and sets up colour pairs. Call after start_color().
 * Loads configs/colors.yaml then the user's colors.yaml over it; problems go to errs. The
 * 256-colour mode draws palette_xterm_indices of the chosen scales. */
void theme_init(struct theme *t, const char *shipped_path, const char *user_path,
                struct diag_list *errs);

/* The look of a cell with value v on a scale over [lo, hi]. Signed stages use the diverging
 * scale symmetric around 0. */
struct theme_look theme_cell_look(const struct theme *t, float v, float lo, float hi,
                                  bool diverging);
/* The same for a position 0..1 on the scale (palette_map_position). */
struct theme_look theme_position_look(const struct theme *t, double position, bool diverging);
/* Its attribute and shade glyph (NULL: not wanted), for a cell whose text is all there is. */
int theme_cell_attr(const struct theme *t, float v, float lo, float hi, bool diverging,
                    const char **shade);
int theme_position_attr(const struct theme *t, double position, bool diverging, const char **shade);
/* "seq8 blue→green" for a colour pair of a ramp of 8 colours (into out); false for any other. */
bool theme_ramp_pair_name(const struct theme *t, int pair, char *out, size_t size);
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
