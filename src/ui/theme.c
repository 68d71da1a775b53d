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

/* The shade glyphs by ink: none, a quarter, half, three quarters, all; and the lower blocks (an
 * eighth, three, five, seven), which tell a signed stage's negative values from its positive
 * ones without colour. */
static const char *const shades[5] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
static const char *const lows[5] = {" ", "\u2581", "\u2583", "\u2585", "\u2587"};

/* Ramps of 8 colours, brightness rising along each in xterm's defaults and every common palette
 * (black < blue < red < green < cyan < yellow < white): the weights from black through blue and
 * green to yellow, as viridis goes; a signed stage's negative values from black (0) through blue
 * to cyan, its positive ones through red to yellow. */
static const short seq8[] = {COLOR_BLACK, COLOR_BLUE, COLOR_GREEN, COLOR_YELLOW};
static const short neg8[] = {COLOR_BLACK, COLOR_BLUE, COLOR_CYAN};
static const short pos8[] = {COLOR_BLACK, COLOR_RED, COLOR_YELLOW};
static const char *const color8_names[8] = {"black", "red",     "green", "yellow",
                                            "blue",  "magenta", "cyan",  "white"};

/* Text that reads on an 8-colour background: white on the dark ones, black on the light ones. */
static short text8(short bg)
{
    return bg == COLOR_BLACK || bg == COLOR_BLUE || bg == COLOR_RED || bg == COLOR_MAGENTA
               ? COLOR_WHITE
               : COLOR_BLACK;
}

/* The next pair of a ramp, fg on bg, named for the golden screens' legends. */
static int ramp_pair(struct theme *t, const char *name, short fg, short bg)
{
    int pair = t->ramp_pair0 + t->n_ramp_pairs;
    snprintf(t->ramp_pair_names[t->n_ramp_pairs++], sizeof(t->ramp_pair_names[0]), "%s", name);
    return pair_attr(pair, fg, bg);
}

/* One side of a ramp of 8 colours, c[0] .. c[n - 1] by rising brightness: c[0] plain, then the
 * shades ░ ▒ ▓ of c[1] over c[0] (a quarter, half, three quarters of the way), c[1] plain, ...:
 * 4 (n - 1) + 1 levels, each brighter than the one before whatever the glyphs' ink, since a
 * glyph never covers its cell. Text on a level is the readable one on its background. */
static int ramp8_side(struct theme *t, struct theme_look *out, const short *c, int n,
                      const char *scale)
{
    int k = 0;
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s on %s", scale, color8_names[c[i]]);
        int text = ramp_pair(t, name, text8(c[i]), c[i]);
        out[k++] = (struct theme_look){text, text, shades[0]};
        if (i + 1 == n)
            break;
        snprintf(name, sizeof(name), "%s %s\u2192%s", scale, color8_names[c[i]],
                 color8_names[c[i + 1]]);
        int glyph = ramp_pair(t, name, c[i + 1], c[i]);
        for (int g = 1; g <= 3; g++)
            out[k++] = (struct theme_look){text, glyph, shades[g]};
    }
    return k;
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
    for (int s = 0; s < SCALE_STEPS && t->mode == COLOR_MODE_256; s++) { /* text on what shows */
        t->seq_attr[s] = pair_attr(PAIR_SEQ0 + s, text_on(palette_xterm_rgb(seq[s])), seq[s]);
        t->div_attr[s] = pair_attr(PAIR_DIV0 + s, text_on(palette_xterm_rgb(div[s])), div[s]);
    }
    struct theme_ramp *sr = &t->seq_ramp, *dr = &t->div_ramp;
    if (t->mode == COLOR_MODE_8) {
        t->ramp_pair0 = PAIR_SEQ0;
        sr->n = ramp8_side(t, sr->look, seq8, 4, "seq8");
        struct theme_look neg[RAMP_MAX], pos[RAMP_MAX];
        int half = ramp8_side(t, neg, neg8, 3, "div8 \u2212") - 1, zero = t->n_ramp_pairs;
        ramp8_side(t, pos, pos8, 3, "div8 +");
        snprintf(t->ramp_pair_names[zero], sizeof(t->ramp_pair_names[0]), "div8 0 on black");
        dr->n = 2 * half + 1;
        for (int m = 0; m <= half; m++) {
            dr->look[half - m] = neg[m];
            dr->look[half + m] = pos[m];
        }
    } else if (t->mode == COLOR_MODE_MONO) {
        sr->n = 5;
        dr->n = 9;
        for (int m = 0; m < 5; m++) {
            sr->look[m] = (struct theme_look){A_NORMAL, A_NORMAL, shades[m]};
            dr->look[4 - m] = (struct theme_look){A_NORMAL, A_NORMAL, lows[m]};
            dr->look[4 + m] = (struct theme_look){A_NORMAL, A_NORMAL, shades[m]};
        }
    }
}

bool theme_ramp_pair_name(const struct theme *t, int pair, char *out, size_t size)
{
    if (t->mode != COLOR_MODE_8 || pair < t->ramp_pair0 || pair >= t->ramp_pair0 + t->n_ramp_pairs)
        return false;
    snprintf(out, size, "%s", t->ramp_pair_names[pair - t->ramp_pair0]);
    return true;
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

struct theme_look theme_cell_look(const struct theme *t, float v, float lo, float hi,
                                  bool diverging)
{
    return theme_position_look(t, palette_position(v, lo, hi, diverging), diverging);
}

struct theme_look theme_position_look(const struct theme *t, double f, bool diverging)
{
    if (t->mode == COLOR_MODE_256) {
        int attr = diverging ? t->div_attr[palette_step(f)] : t->seq_attr[palette_step(f)];
        return (struct theme_look){attr, attr, shades[0]};
    }
    /* A ramp: the level of f, or on a signed stage of its magnitude, on its side of 0. */
    const struct theme_ramp *r = diverging ? &t->div_ramp : &t->seq_ramp;
    f = f >= 0 ? f <= 1 ? f : 1 : 0;
    if (!diverging)
        return r->look[(int)(f * (r->n - 1) + 0.5)];
    int half = (r->n - 1) / 2, m = (int)(fabs(f - 0.5) * 2 * half + 0.5);
    return r->look[f < 0.5 ? half - m : half + m];
}

int theme_cell_attr(const struct theme *t, float v, float lo, float hi, bool diverging,
                    const char **shade)
{
    return theme_position_attr(t, palette_position(v, lo, hi, diverging), diverging, shade);
}

int theme_position_attr(const struct theme *t, double f, bool diverging, const char **shade)
{
    struct theme_look look = theme_position_look(t, f, diverging);
    if (shade)
        *shade = look.shade;
    return look.attr;
}

int theme_cursor_attr(const struct theme *t, int cell_attr)
{
    if (!t->cursor_keeps_color)
        return t->role_attr[ROLE_CURSOR];
    return (cell_attr & ~A_DIM) | t->cursor_attrs;
}
