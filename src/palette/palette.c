/* palette: colour scales as numbers (see palette.h). */
#include "palette/palette.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* Anchor colours of each scale, evenly spaced; interpolated to PALETTE_STEPS. */
static const struct palette_rgb scale_anchors[PALETTE_SEQUENTIAL][5] = {
    {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}},     /* viridis */
    {{0, 0, 4}, {81, 18, 124}, {183, 55, 121}, {252, 137, 97}, {252, 253, 191}},     /* magma */
    {{28, 28, 28}, {78, 78, 78}, {128, 128, 128}, {188, 188, 188}, {238, 238, 238}}, /* gray */
};
static const struct palette_rgb div_anchors[PALETTE_DIVERGING][5] = {
    {{33, 102, 172}, {103, 169, 207}, {247, 247, 247}, {239, 138, 98}, {178, 24, 43}},  /* RdBu */
    {{118, 42, 131}, {175, 141, 195}, {247, 247, 247}, {127, 191, 123}, {27, 120, 55}}, /* PRGn */
};

static const char *const mode_names[SCALE_BY_COUNT] = {"matrix", "row", "log"};

const char *palette_scale_name(enum color_scale mode)
{
    return mode >= 0 && mode < SCALE_BY_COUNT ? mode_names[mode] : "?";
}

int palette_scale_parse(const char *name)
{
    for (int i = 0; i < SCALE_BY_COUNT; i++)
        if (strcmp(name, mode_names[i]) == 0)
            return i;
    return -1;
}

struct palette_rgb palette_anchor_rgb(int scale, bool diverging, int step)
{
    const struct palette_rgb *anchors = diverging ? div_anchors[scale] : scale_anchors[scale];
    double t = (double)step / (PALETTE_STEPS - 1) * 4.0;
    int i = (int)t < 4 ? (int)t : 3;
    double f = t - i;
    struct palette_rgb a = anchors[i], b = anchors[i + 1];
    return (struct palette_rgb){(unsigned char)lround(a.r + (b.r - a.r) * f),
                                (unsigned char)lround(a.g + (b.g - a.g) * f),
                                (unsigned char)lround(a.b + (b.b - a.b) * f)};
}

struct palette_rgb palette_xterm_rgb(int i)
{
    /* xterm's defaults for the 16 system colours. */
    static const struct palette_rgb system[16] = {
        {0, 0, 0},       {205, 0, 0},   {0, 205, 0},   {205, 205, 0},
        {0, 0, 238},     {205, 0, 205}, {0, 205, 205}, {229, 229, 229},
        {127, 127, 127}, {255, 0, 0},   {0, 255, 0},   {255, 255, 0},
        {92, 92, 255},   {255, 0, 255}, {0, 255, 255}, {255, 255, 255},
    };
    static const unsigned char levels[6] = {0, 95, 135, 175, 215, 255};
    if (i < 16)
        return system[i < 0 ? 0 : i];
    if (i < 232) {
        int k = i - 16;
        return (struct palette_rgb){levels[k / 36], levels[(k / 6) % 6], levels[k % 6]};
    }
    unsigned char g = (unsigned char)(8 + ((i > 255 ? 255 : i) - 232) * 10);
    return (struct palette_rgb){g, g, g};
}

/* Nearest xterm-256 colour (6x6x6 cube or gray ramp) to an RGB value that `taken` (256 flags)
 * does not mark: a scale gives every step its own palette index, so two values a step apart
 * never share a colour. */
static int xterm_index_free(struct palette_rgb c, const bool *taken)
{
    int best = 16;
    long best_d = -1;
    for (int i = 16; i < 256; i++) {
        if (taken[i])
            continue;
        struct palette_rgb x = palette_xterm_rgb(i);
        long d = (long)(x.r - c.r) * (x.r - c.r) * 3 + (long)(x.g - c.g) * (x.g - c.g) * 4 +
                 (long)(x.b - c.b) * (x.b - c.b) * 2;
        if (best_d < 0 || d < best_d)
            best_d = d, best = i;
    }
    return best;
}

void palette_xterm_indices(int out[PALETTE_STEPS], int scale, bool diverging)
{
    bool taken[256] = {false};
    for (int s = 0; s < PALETTE_STEPS; s++) {
        out[s] = xterm_index_free(palette_anchor_rgb(scale, diverging, s), taken);
        taken[out[s]] = true;
    }
}

bool palette_text_dark(struct palette_rgb c)
{
    return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 140;
}

double palette_position(float v, float lo, float hi, bool diverging)
{
    double f;
    if (diverging) {
        double m = fmax(fabs(lo), fabs(hi));
        f = m > 0 ? 0.5 + 0.5 * v / m : 0.5;
    } else {
        f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    }
    if (!(f >= 0))
        f = 0;
    if (f > 1)
        f = 1;
    return f;
}

int palette_step(double position)
{
    return (int)(position * (PALETTE_STEPS - 1) + 0.5);
}

void palette_map_init(struct palette_map *m, enum color_scale asked, float lo, float hi)
{
    m->diverging = lo < 0;
    m->mode = asked == SCALE_BY_LOG && m->diverging ? SCALE_BY_MATRIX : asked;
    m->lo = lo;
    m->hi = hi;
    /* The log scale's floor: four decades below the largest value. */
    m->log_lo = hi > 0 ? log10f(fmaxf(lo, hi * 1e-4f)) : 0;
    m->log_hi = hi > 0 ? log10f(hi) : 1;
}

void palette_row_range(float *lo, float *hi, const float *row, int n)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int j = 0; j < n; j++)
        if (isfinite(row[j])) {
            *lo = fminf(*lo, row[j]);
            *hi = fmaxf(*hi, row[j]);
        }
    if (*lo > *hi)
        *lo = *hi = 0;
}

double palette_map_position(const struct palette_map *m, float v, float row_lo, float row_hi)
{
    switch (m->mode) {
    case SCALE_BY_LOG:
        return palette_position(log10f(fmaxf(v, m->hi * 1e-4f)), m->log_lo, m->log_hi, false);
    case SCALE_BY_ROW:
        return palette_position(v, row_lo, row_hi, m->diverging);
    default:
        return palette_position(v, m->lo, m->hi, m->diverging);
    }
}

const char *palette_map_label(const struct palette_map *m, enum color_scale asked)
{
    if (asked == SCALE_BY_LOG && m->diverging)
        return "log: signed, linear";
    static const char *const labels[SCALE_BY_COUNT] = {NULL, "row scale", "log scale"};
    return labels[m->mode];
}
