/* theme: colour roles and heatmap scales for 256, 8 and no colours (see theme.h). */
#include "ui/theme.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

struct rgb {
    unsigned char r, g, b;
};

/* Anchor colours of each scale, evenly spaced; interpolated to SCALE_STEPS. */
static const struct rgb scale_anchors[][5] = {
    {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}},     /* viridis */
    {{0, 0, 4}, {81, 18, 124}, {183, 55, 121}, {252, 137, 97}, {252, 253, 191}},     /* magma */
    {{28, 28, 28}, {78, 78, 78}, {128, 128, 128}, {188, 188, 188}, {238, 238, 238}}, /* gray */
};
static const struct rgb div_anchors[][5] = {
    {{33, 102, 172}, {103, 169, 207}, {247, 247, 247}, {239, 138, 98}, {178, 24, 43}},  /* RdBu */
    {{118, 42, 131}, {175, 141, 195}, {247, 247, 247}, {127, 191, 123}, {27, 120, 55}}, /* PRGn */
};

/* Nearest xterm-256 colour (6x6x6 cube or gray ramp) to an RGB value that `taken` (256 flags,
 * or NULL) does not mark: a scale gives every step its own palette index, so two values a step
 * apart never share a colour. */
static int xterm_index_free(struct rgb c, const bool *taken)
{
    static const int levels[6] = {0, 95, 135, 175, 215, 255};
    int best = 16;
    long best_d = -1;
    for (int i = 16; i < 256; i++) {
        if (taken && taken[i])
            continue;
        int r, g, b;
        if (i < 232) {
            int k = i - 16;
            r = levels[k / 36], g = levels[(k / 6) % 6], b = levels[k % 6];
        } else {
            r = g = b = 8 + (i - 232) * 10;
        }
        long d = (long)(r - c.r) * (r - c.r) * 3 + (long)(g - c.g) * (g - c.g) * 4 +
                 (long)(b - c.b) * (b - c.b) * 2;
        if (best_d < 0 || d < best_d)
            best_d = d, best = i;
    }
    return best;
}

static struct rgb lerp_anchor(const struct rgb *anchors, int step)
{
    double t = (double)step / (SCALE_STEPS - 1) * 4.0;
    int i = (int)t < 4 ? (int)t : 3;
    double f = t - i;
    struct rgb a = anchors[i], b = anchors[i + 1];
    return (struct rgb){(unsigned char)lround(a.r + (b.r - a.r) * f),
                        (unsigned char)lround(a.g + (b.g - a.g) * f),
                        (unsigned char)lround(a.b + (b.b - a.b) * f)};
}

/* Dark text on light cells and light text on dark ones, by perceived luminance. */
static int text_on(struct rgb c)
{
    return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 140 ? COLOR_BLACK : 15;
}

/* Pairs numbered compactly: an 8-colour xterm has only 64, and a pair past that is refused by
 * init_pair and drawn black on black. 1 + 14 roles + 2 x 24 steps = 63. */
enum { PAIR_ROLE0 = 1, PAIR_SEQ0 = PAIR_ROLE0 + ROLE_COUNT, PAIR_DIV0 = PAIR_SEQ0 + SCALE_STEPS };
_Static_assert(PAIR_DIV0 + SCALE_STEPS <= 64, "colour pairs must fit an 8-colour terminal");
/* Half-block pairs, only where the terminal has them (xterm-256color has 65536): for each
 * scale, every (upper, lower) of its steps and the background. */
#define HALF_STEPS (SCALE_STEPS + 1)
enum {
    PAIR_HALF0 = PAIR_DIV0 + SCALE_STEPS,
    PAIR_HALF_END = PAIR_HALF0 + 2 * HALF_STEPS * HALF_STEPS
};

static int pair_attr(int pair, int fg, int bg)
{
    init_pair((short)pair, (short)fg, (short)bg);
    return (int)COLOR_PAIR(pair);
}

void theme_scale_indices(int out[SCALE_STEPS], int scale, bool diverging)
{
    bool taken[256] = {false};
    for (int s = 0; s < SCALE_STEPS; s++) {
        struct rgb c =
            diverging ? lerp_anchor(div_anchors[scale], s) : lerp_anchor(scale_anchors[scale], s);
        out[s] = xterm_index_free(c, taken);
        taken[out[s]] = true;
    }
}

/* Step s of a half-block pair's colour, -1 (the background) for HALF_STEPS - 1. */
static int half_color(const int *palette, int s)
{
    return s < SCALE_STEPS ? palette[s] : -1;
}

static void init_scales(struct theme *t)
{
    int seq[SCALE_STEPS], div[SCALE_STEPS];
    theme_scale_indices(seq, t->scale, false);
    theme_scale_indices(div, t->diverging, true);
    t->halves = t->mode == COLOR_MODE_256 && COLOR_PAIRS >= PAIR_HALF_END;
    for (int k = 0; t->halves && k < 2; k++)
        for (int u = 0; u < HALF_STEPS; u++)
            for (int l = 0; l < HALF_STEPS; l++)
                init_pair((short)(PAIR_HALF0 + (k * HALF_STEPS + u) * HALF_STEPS + l),
                          (short)half_color(k ? div : seq, u), (short)half_color(k ? div : seq, l));
    for (int s = 0; s < SCALE_STEPS; s++) {
        if (t->mode == COLOR_MODE_256) {
            struct rgb c = lerp_anchor(scale_anchors[t->scale], s);
            struct rgb d = lerp_anchor(div_anchors[t->diverging], s);
            t->seq_attr[s] = pair_attr(PAIR_SEQ0 + s, text_on(c), seq[s]);
            t->div_attr[s] = pair_attr(PAIR_DIV0 + s, text_on(d), div[s]);
        } else if (t->mode == COLOR_MODE_8) {
            static const short seq8[4] = {COLOR_BLUE, COLOR_CYAN, COLOR_GREEN, COLOR_YELLOW};
            static const short div8[4] = {COLOR_BLUE, COLOR_CYAN, COLOR_YELLOW, COLOR_RED};
            int q = s * 4 / SCALE_STEPS;
            short fg = q >= 1 && q <= 2 ? COLOR_BLACK : COLOR_WHITE;
            t->seq_attr[s] = pair_attr(PAIR_SEQ0 + s,
                                       seq8[q] == COLOR_BLUE ? COLOR_WHITE : COLOR_BLACK, seq8[q]);
            t->div_attr[s] = pair_attr(PAIR_DIV0 + s, fg, div8[q]);
        } else {
            t->seq_attr[s] = A_NORMAL;
            t->div_attr[s] = A_NORMAL;
        }
    }
}

static int spec_attrs(unsigned attrs)
{
    int a = A_NORMAL;
    if (attrs & COLOR_ATTR_BOLD)
        a |= A_BOLD;
    if (attrs & COLOR_ATTR_DIM)
        a |= A_DIM;
    if (attrs & COLOR_ATTR_REVERSE)
        a |= A_REVERSE;
    if (attrs & COLOR_ATTR_UNDERLINE)
        a |= A_UNDERLINE;
    return a;
}

void theme_init(struct theme *t, const char *shipped_path, const char *user_path,
                struct diag_list *errs)
{
    memset(t, 0, sizeof(*t));
    const char *no_color = getenv("NO_COLOR");
    if ((no_color && no_color[0]) || !has_colors() || COLOR_PAIRS < PAIR_DIV0 + SCALE_STEPS)
        t->mode = COLOR_MODE_MONO;
    else
        t->mode = COLORS >= 256 ? COLOR_MODE_256 : COLOR_MODE_8;
    /* Even without colour, pair 0 must be the terminal's own colours, or a light terminal
     * turns black. */
    if (has_colors())
        use_default_colors();

    struct color_spec roles[ROLE_COUNT];
    memcpy(roles, role_defaults, sizeof(roles));
    const char *paths[2] = {shipped_path, user_path};
    for (int p = 0; p < 2; p++) {
        if (!paths[p])
            continue;
        struct color_config cc;
        if (config_load_colors(&cc, paths[p], role_names, ROLE_COUNT, scale_names, n_scale_names,
                               diverging_names, n_diverging_names, errs) == 0) {
            for (int r = 0; r < ROLE_COUNT && r < cc.n_roles; r++)
                if (cc.roles[r].set)
                    roles[r] = cc.roles[r];
            for (int i = 0; cc.scale_set && i < n_scale_names; i++)
                if (strcmp(cc.scale, scale_names[i]) == 0)
                    t->scale = i;
            for (int i = 0; cc.diverging_set && i < n_diverging_names; i++)
                if (strcmp(cc.diverging, diverging_names[i]) == 0)
                    t->diverging = i;
        }
        color_config_free(&cc);
    }

    for (int r = 0; r < ROLE_COUNT; r++) {
        int attr = spec_attrs(roles[r].attrs);
        if (t->mode == COLOR_MODE_MONO) {
            /* Without colour, bars and errors stand out in reverse video. */
            if (r == ROLE_HEADER || r == ROLE_STATUS || r == ROLE_ERROR || r == ROLE_STAGE_CURRENT)
                attr |= A_REVERSE;
            t->role_attr[r] = attr;
            continue;
        }
        int fg = roles[r].fg, bg = roles[r].bg;
        if (t->mode == COLOR_MODE_8) { /* 8-colour terminals: bright indices fold down */
            fg = fg >= 8 ? fg % 8 : fg;
            bg = bg >= 8 ? bg % 8 : bg;
        }
        t->role_attr[r] = attr | pair_attr(PAIR_ROLE0 + r, fg, bg);
    }
    /* A cursor role without colours keeps the cell's colour and adds its attributes, so the
     * value under the cursor stays on the scale. */
    t->cursor_keeps_color = t->mode == COLOR_MODE_MONO || (roles[ROLE_CURSOR].fg == COLOR_DEFAULT &&
                                                           roles[ROLE_CURSOR].bg == COLOR_DEFAULT);
    t->cursor_attrs = spec_attrs(roles[ROLE_CURSOR].attrs);
    init_scales(t);
}

/* The position of v on the scale, 0..1. */
static double scale_position(float v, float lo, float hi, bool diverging)
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

int theme_cell_step(float v, float lo, float hi, bool diverging)
{
    return (int)(scale_position(v, lo, hi, diverging) * (SCALE_STEPS - 1) + 0.5);
}

int theme_half_pair(const struct theme *t, bool diverging, int upper, int lower)
{
    if (!t->halves)
        return 0;
    upper = upper < 0 || upper >= SCALE_STEPS ? HALF_STEPS - 1 : upper;
    lower = lower < 0 || lower >= SCALE_STEPS ? HALF_STEPS - 1 : lower;
    return PAIR_HALF0 + ((diverging ? 1 : 0) * HALF_STEPS + upper) * HALF_STEPS + lower;
}

bool theme_half_pair_name(const struct theme *t, int pair, char *out, size_t size)
{
    if (!t->halves || pair < PAIR_HALF0 || pair >= PAIR_HALF_END)
        return false;
    int k = pair - PAIR_HALF0;
    int lower = k % HALF_STEPS, upper = k / HALF_STEPS % HALF_STEPS,
        div = k / HALF_STEPS / HALF_STEPS;
    char u[8] = "bg", l[8] = "bg";
    if (upper < SCALE_STEPS)
        snprintf(u, sizeof(u), "%d", upper);
    if (lower < SCALE_STEPS)
        snprintf(l, sizeof(l), "%d", lower);
    snprintf(out, size, "half %s %s/%s", div ? "div" : "seq", u, l);
    return true;
}

int theme_cell_attr(const struct theme *t, float v, float lo, float hi, bool diverging,
                    const char **shade)
{
    static const char *const shades[5] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
    double f = scale_position(v, lo, hi, diverging);
    int step = (int)(f * (SCALE_STEPS - 1) + 0.5);
    if (shade) {
        /* Shade blocks carry the level where colour cannot: magnitude for signed scales. */
        double level = diverging ? fabs(f - 0.5) * 2 : f;
        *shade = t->mode == COLOR_MODE_256 ? " " : shades[(int)(level * 4 + 0.5)];
    }
    return diverging ? t->div_attr[step] : t->seq_attr[step];
}

int theme_cursor_attr(const struct theme *t, int cell_attr)
{
    if (!t->cursor_keeps_color)
        return t->role_attr[ROLE_CURSOR];
    return (cell_attr & ~A_DIM) | t->cursor_attrs;
}
