/* theme: colour roles and heatmap scales for 256, 8 and no colours (see theme.h). */
#include "ui/theme.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

/* Dark text on light cells and light text on dark ones, by perceived luminance. */
static int text_on(struct palette_rgb c)
{
    return palette_text_dark(c) ? COLOR_BLACK : 15;
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

/* Step s of a half-block pair's colour, -1 (the background) for HALF_STEPS - 1. */
static int half_color(const int *palette, int s)
{
    return s < SCALE_STEPS ? palette[s] : -1;
}

static void init_scales(struct theme *t)
{
    int seq[SCALE_STEPS], div[SCALE_STEPS];
    palette_xterm_indices(seq, t->scale, false);
    palette_xterm_indices(div, t->diverging, true);
    t->halves = t->mode == COLOR_MODE_256 && COLOR_PAIRS >= PAIR_HALF_END;
    for (int k = 0; t->halves && k < 2; k++)
        for (int u = 0; u < HALF_STEPS; u++)
            for (int l = 0; l < HALF_STEPS; l++)
                init_pair((short)(PAIR_HALF0 + (k * HALF_STEPS + u) * HALF_STEPS + l),
                          (short)half_color(k ? div : seq, u), (short)half_color(k ? div : seq, l));
    for (int s = 0; s < SCALE_STEPS; s++) {
        if (t->mode == COLOR_MODE_256) {
            struct palette_rgb c = palette_anchor_rgb(t->scale, false, s);
            struct palette_rgb d = palette_anchor_rgb(t->diverging, true, s);
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
    roles_load(roles, &t->scale, &t->diverging, shipped_path, user_path, errs);

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

int theme_cell_step(float v, float lo, float hi, bool diverging)
{
    return palette_step(palette_position(v, lo, hi, diverging));
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
    return theme_position_attr(t, palette_position(v, lo, hi, diverging), diverging, shade);
}

int theme_position_attr(const struct theme *t, double f, bool diverging, const char **shade)
{
    static const char *const shades[5] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
    int step = palette_step(f);
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
