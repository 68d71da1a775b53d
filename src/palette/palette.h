/* palette: the heatmap's colour scales as numbers, for every front end.
 *
 * The explorer draws a value as one of PALETTE_STEPS colours of a scale: sequential (viridis,
 * magma, gray) for stages without negative values, diverging (blue-red, purple-green) symmetric
 * around 0 for signed ones. Where a value falls on it depends on the colour scale mode: one range
 * for the matrix, one per row, or logarithmic. A picture (export/svg) draws the scale's true
 * colour there, from the published data (matplotlib's viridis and magma tables, ColorBrewer's
 * RdBu and PRGn). The terminal has 256 colours at most: it shows PALETTE_STEPS steps of its own
 * design of each scale (five anchors of it, palette_anchor_rgb), each as the nearest free
 * xterm-256 colour. Nothing here draws: src/ui/theme turns steps into curses attributes.
 */
#ifndef ATTNSCOPE_PALETTE_H
#define ATTNSCOPE_PALETTE_H

#include <stdbool.h>

#define PALETTE_STEPS      24 /* colour steps of a scale: values 1/23 apart never share one */
#define PALETTE_SEQUENTIAL 3  /* viridis, magma, gray: explore/roles.c's scale_names */
#define PALETTE_DIVERGING  2  /* blue-red, purple-green: its diverging_names */

/* How values map to colours: one range for the matrix, one per row (each query's own
 * distribution: readable at any length), or logarithmic (weights spanning decades). */
enum color_scale { SCALE_BY_MATRIX, SCALE_BY_ROW, SCALE_BY_LOG, SCALE_BY_COUNT };

struct palette_rgb {
    unsigned char r, g, b;
};

/* "matrix", "row", "log": the modes as the command line names them. */
const char *palette_scale_name(enum color_scale mode);
/* The mode named name, or -1. */
int palette_scale_parse(const char *name);

/* The true colour of a scale at position 0..1 (outside, and NaN, clamp to the ends): viridis
 * and magma from matplotlib's 256-entry tables, interpolated linearly between entries (entry k
 * at k/255 exactly: viridis 0 is #440154, 1 is #fde725); gray a linear ramp from #1c1c1c to
 * #eeeeee; the diverging scales from ColorBrewer's 11 classes, linearly between them (blue-red
 * is RdBu reversed: 0 is #053061, 0.5 #f7f7f7, 1 #67001f; purple-green is PRGn). */
struct palette_rgb palette_rgb_at(int scale, bool diverging, double position);
/* The colour of step `step` of a scale as the terminal's design has it: five anchors of the
 * scale interpolated (the diverging ones stop a class short of the darkest, for which xterm's
 * palette has only teal or gray); palette_xterm_indices picks the terminal's colours from these. */
struct palette_rgb palette_anchor_rgb(int scale, bool diverging, int step);
/* The xterm-256 palette index of each step of a scale, all different: the nearest free colour
 * to the designed one whose luminance keeps the scale's order (a sequential scale brightens step
 * by step; a diverging one towards the step of 0 from either end). The explorer's 256-colour
 * mode draws these. */
void palette_xterm_indices(int out[PALETTE_STEPS], int scale, bool diverging);
/* The RGB xterm shows for palette index i (0..255): the 16 system colours, the 6x6x6 cube and
 * the gray ramp. */
struct palette_rgb palette_xterm_rgb(int i);
/* The relative luminance of c (sRGB made linear, then 0.2126 R + 0.7152 G + 0.0722 B): 0 black,
 * 1 white. */
double palette_luminance(struct palette_rgb c);
/* True when text on c should be dark (c is light by perceived luminance). */
bool palette_text_dark(struct palette_rgb c);

/* The position 0..1 of v on a linear scale over [lo, hi] (diverging: symmetric around 0, 0.5
 * is 0); NaN and values outside clamp to the ends. */
double palette_position(float v, float lo, float hi, bool diverging);
/* The step (0 .. PALETTE_STEPS - 1) of a position. */
int palette_step(double position);

/* A colour scale mode applied to one matrix (or several on a shared range). */
struct palette_map {
    enum color_scale mode; /* in force: a signed matrix has no log scale, it stays linear */
    bool diverging;        /* the matrix has negative values: the diverging scale */
    float lo, hi;          /* the finite range of the matrix */
    float log_lo, log_hi;  /* log10 of the log scale's ends: four decades below hi at most */
};

void palette_map_init(struct palette_map *m, enum color_scale asked, float lo, float hi);
/* Finite min and max of a row (0, 0 when none): the range SCALE_BY_ROW colours it by. */
void palette_row_range(float *lo, float *hi, const float *row, int n);
/* The position 0..1 of a finite v; row_lo and row_hi (palette_row_range) count only for
 * SCALE_BY_ROW. */
double palette_map_position(const struct palette_map *m, float v, float row_lo, float row_hi);
/* What a legend calls the mode in force: NULL for the matrix scale, "row scale", "log scale",
 * or "log: signed, linear" when the log scale was asked of a signed matrix. */
const char *palette_map_label(const struct palette_map *m, enum color_scale asked);

#endif
