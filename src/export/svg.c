/* svg: heatmap pictures (see svg.h).
 *
 * The layout is computed first (cell size, blocks, what fits), then the file is written top to
 * bottom: background, titles, each tile's cells (one rect per cell or block, row by row), its
 * values, the labels, the legend. Every number goes through cnum (C locale); every piece of
 * text is escaped and made valid UTF-8, so a token like "<C3>" or "a&b" cannot break the XML.
 */
#include "export/svg.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cnum.h"
#include "common/fsutil.h"
#include "common/utf8.h"

#define MARGIN      24
#define MAP_W       960 /* the cells of every tile together fit this box */
#define MAP_H       840
#define CELL_MAX    40 /* a small matrix: cells this size */
#define CELL_MAX_V  56 /* with values: room for "-0.1385" */
#define TILE_GAP    28
#define LABEL_CHARS 24  /* longer labels are cut with "…" */
#define BAR_H       216 /* the legend's colour bar, in BAR_PIECES rects of the scale's colours */
#define BAR_PIECES  72
#define BAR_W       18
#define TICK_PX     11 /* position ticks (blocks, or cells too small for labels): font size */
#define TICK_GAP    40 /* px between ticks at least */
#define INK         "#222222"
#define MUTED       "#666666"
#define MASK_BG     "#d9d9d9"
#define MASK_LINE   "#9a9a9a"
#define DROP_FILL   "#f0f0f0"

/* What was decided before writing. */
struct layout {
    int rows, cols;         /* of each matrix */
    int block;              /* b: cells pooled per block side (1: every cell) */
    int grows, gcols;       /* cells (or blocks) drawn per side */
    int cell;               /* px a side */
    bool labels, values;    /* drawn at all */
    int label_px, value_px; /* font sizes */
    int decimals;           /* of the values */
    int per_row, tile_rows; /* tiles across, down */
    int tile_w, tile_h;     /* px of a tile's cells */
    int tile_label_h;       /* room under each tile for its label */
    int row_label_w;        /* px left of the map for row labels (and the axis name) */
    int col_label_h;        /* px above the map for rotated column labels (and the axis) */
    int overhang;           /* px the last rotated label reaches right of the map */
    int map_x, map_y;       /* top left of the first tile */
    int legend_x, legend_w;
    int width, height;
    struct palette_map map;
    int scale_id; /* the sequential or diverging scale in use (colors.yaml's) */
    int tick;     /* positions between ticks (0: labels instead) */
    bool has_inf, has_nan, has_dropped;
};

/* ---- text -------------------------------------------------------------------------------- */

/* Width of a code point in ems, roughly as a sans-serif face sets it: enough to leave room. */
static double char_em(uint32_t cp)
{
    if (cp < 0x80)
        return 0.62;
    if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
        (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
        (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
        (cp >= 0xFFE0 && cp <= 0xFFE6) || cp >= 0x1F300)
        return 1.0;
    return 0.7;
}

/* s as it will be written: valid UTF-8 (a bad byte or a control character becomes U+FFFD),
 * at most max_chars characters (then "…"). */
static void clean_text(char *out, size_t size, const char *s, int max_chars)
{
    size_t o = 0;
    int chars = 0;
    while (*s && o + 8 < size) {
        uint32_t cp;
        int n = attn_utf8_decode(s, &cp);
        if (chars == max_chars) {
            o += (size_t)attn_utf8_encode(0x2026, out + o);
            break;
        }
        if (n == 0 || cp < 0x20 || cp == 0x7F || (cp >= 0xFFFE && cp <= 0xFFFF)) {
            o += (size_t)attn_utf8_encode(0xFFFD, out + o);
            s += n ? n : 1;
        } else {
            memcpy(out + o, s, (size_t)n);
            o += (size_t)n;
            s += n;
        }
        chars++;
    }
    out[o] = '\0';
}

/* Estimated width in px of clean text at font size px. */
static double text_px(const char *s, int px)
{
    double em = 0;
    while (*s) {
        uint32_t cp;
        int n = attn_utf8_decode(s, &cp);
        em += char_em(n ? cp : '?');
        s += n ? n : 1;
    }
    return em * px;
}

/* Writes clean text with &, <, > and " escaped. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* <text x y [attrs]>text</text>, the text cleaned and escaped. */
static void put_text(FILE *f, double x, double y, const char *attrs, const char *text,
                     int max_chars)
{
    char clean[1024];
    clean_text(clean, sizeof(clean), text, max_chars);
    attn_cnum_fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"%s%s>", x, y, attrs[0] ? " " : "", attrs);
    put_escaped(f, clean);
    fputs("</text>\n", f);
}

/* A value as the cells and the legend write it: `decimals` decimals (4: print's). The legend
 * (exponent true) writes what those would show as 0 in the exponent form instead. */
static void format_value(char *out, size_t size, float x, int decimals, bool exponent)
{
    if (isnan(x))
        snprintf(out, size, "nan");
    else if (isinf(x))
        snprintf(out, size, x < 0 ? "\u2212\u221e" : "\u221e");
    else if (exponent && x != 0 && fabsf(x) < 0.5f * powf(10.0f, (float)-decimals))
        attn_cnum_format(out, size, "%.1e", (double)x);
    else
        attn_cnum_format(out, size, "%.*f", decimals, (double)x);
}

static void col_label(char *out, size_t size, const struct svg_picture *p, int j)
{
    if (p->col_labels)
        snprintf(out, size, "%s", p->col_labels[j]);
    else
        snprintf(out, size, "d%d", j);
}

/* ---- layout ------------------------------------------------------------------------------ */

static int ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

/* The finite range of every tile, and what kinds of special cells there are. */
static void scan(const struct svg_picture *p, struct layout *l, float *lo, float *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int t = 0; t < p->n_tiles; t++) {
        struct attn_mat_view v = p->tiles[t].v;
        for (int i = 0; i < v.rows; i++)
            for (int j = 0; j < v.cols; j++) {
                float x = v.data[(size_t)i * v.stride + j];
                if (p->tiles[t].keep && !p->tiles[t].keep[(size_t)i * v.cols + j])
                    l->has_dropped = true;
                else if (isnan(x))
                    l->has_nan = true;
                else if (isinf(x))
                    l->has_inf = true;
                if (isfinite(x)) {
                    *lo = x < *lo ? x : *lo;
                    *hi = x > *hi ? x : *hi;
                }
            }
    }
    if (*lo > *hi)
        *lo = *hi = 0.0f;
}

static void plan(const struct svg_picture *p, struct layout *l)
{
    memset(l, 0, sizeof(*l));
    l->rows = p->tiles[0].v.rows;
    l->cols = p->tiles[0].v.cols;
    float lo, hi;
    scan(p, l, &lo, &hi);
    palette_map_init(&l->map, p->scale, lo, hi);
    l->scale_id = l->map.diverging ? p->div_scale : p->seq_scale;

    /* Blocks: the smallest b that keeps every tile's cells within SVG_MAX_CELLS. */
    l->block = 1;
    while ((long)p->n_tiles * ceil_div(l->rows, l->block) * ceil_div(l->cols, l->block) >
           SVG_MAX_CELLS)
        l->block++;
    l->grows = ceil_div(l->rows, l->block);
    l->gcols = ceil_div(l->cols, l->block);
    l->per_row = p->n_tiles == 1 ? 1 : (int)ceil(sqrt((double)p->n_tiles));
    l->tile_rows = ceil_div(p->n_tiles, l->per_row);
    int cell = p->values && l->block == 1 ? CELL_MAX_V : CELL_MAX;
    int fit_w = MAP_W / (l->per_row * l->gcols), fit_h = MAP_H / (l->tile_rows * l->grows);
    cell = fit_w < cell ? fit_w : cell;
    cell = fit_h < cell ? fit_h : cell;
    l->cell = cell < 1 ? 1 : cell;

    l->labels = l->block == 1 && l->cell >= SVG_LABEL_MIN_PX;
    /* Without labels, ticks say where the positions are: every 1, 2 or 5 times a power of 10
       positions, at least TICK_GAP px apart. */
    l->tick = 0;
    for (int k = 1; !l->labels && !l->tick; k *= 10)
        for (int m = 1; m <= 5 && !l->tick; m = m == 1 ? 2 : m + 3)
            if ((double)k * m * l->cell / l->block >= TICK_GAP || k * m >= l->rows + l->cols)
                l->tick = k * m;
    l->label_px = l->cell - 2 < 13 ? l->cell - 2 : 13;
    l->values = p->values && l->block == 1 && l->cell >= SVG_VALUE_MIN_PX;
    l->value_px = l->cell >= 48 ? 11 : 9;
    l->decimals = l->cell >= 48 ? 4 : 2;

    /* Room for the labels: the longest one decides. */
    double row_w = 0, col_w = 0;
    char clean[256], raw[1024];
    for (int i = 0; l->labels && i < l->rows; i++) {
        clean_text(clean, sizeof(clean), p->row_labels[i], LABEL_CHARS);
        double w = text_px(clean, l->label_px);
        row_w = w > row_w ? w : row_w;
    }
    for (int j = 0; l->labels && j < l->cols; j++) {
        col_label(raw, sizeof(raw), p, j);
        clean_text(clean, sizeof(clean), raw, LABEL_CHARS);
        double w = text_px(clean, l->label_px);
        col_w = w > col_w ? w : col_w;
    }
    /* Column labels run up and to the right at 45 degrees from the top of their column. */
    double diag = col_w * 0.7072;
    int longest = l->rows > l->cols ? l->rows : l->cols;
    int digits = 1;
    for (int n = longest - 1; n >= 10; n /= 10)
        digits++;
    double tick_w = l->tick ? digits * 0.62 * TICK_PX + 12 : 0;
    l->row_label_w = 22 + (l->labels ? (int)ceil(row_w) + 8 : (int)ceil(tick_w));
    l->col_label_h = 22 + (l->labels ? (int)ceil(diag + l->label_px) + 6 : l->tick ? 20 : 0);
    l->overhang = l->labels ? (int)ceil(diag) : 0;

    l->tile_w = l->gcols * l->cell;
    l->tile_h = l->grows * l->cell;
    l->tile_label_h = p->n_tiles > 1 ? 24 : 0;
    l->map_x = MARGIN + l->row_label_w;
    l->map_y = MARGIN + 52 + l->col_label_h; /* under the title and subtitle */
    int grid_w = l->per_row * l->tile_w + (l->per_row - 1) * TILE_GAP;
    int grid_h = l->tile_rows * (l->tile_h + l->tile_label_h) + (l->tile_rows - 1) * TILE_GAP;
    int right = l->map_x + grid_w;
    /* The overhang of the last tile's labels only; the others run over the gap and tiles. */
    l->legend_x = right + (l->overhang > 32 ? l->overhang : 32);
    l->legend_w = 260;
    l->width = l->legend_x + l->legend_w + MARGIN;
    /* The legend's lines, as write_legend lays them out. */
    int legend_h = 40 + BAR_H + 32 + (l->has_inf || l->has_nan ? 20 : 0) +
                   (l->has_dropped ? 20 : 0) + 8 + (l->block > 1 ? 30 : 0) + (!l->labels ? 30 : 0) +
                   (p->values && !l->values ? 15 : 0);
    int bottom = l->map_y + grid_h;
    bottom = bottom > l->map_y + legend_h ? bottom : l->map_y + legend_h;
    l->height = bottom + MARGIN;
    /* The title must fit too. */
    char title[1024];
    clean_text(title, sizeof(title), p->title ? p->title : "", 200);
    int tw = MARGIN + (int)ceil(text_px(title, 18)) + MARGIN;
    clean_text(title, sizeof(title), p->subtitle ? p->subtitle : "", 200);
    int sw = MARGIN + (int)ceil(text_px(title, 13)) + MARGIN;
    l->width = tw > l->width ? tw : l->width;
    l->width = sw > l->width ? sw : l->width;
}

/* ---- cells ------------------------------------------------------------------------------- */

enum cell_kind { CELL_VALUE, CELL_MASKED, CELL_DROPPED };

/* Block (bi, bj) of tile t: its kind and, for a value, its position on the scale: the cell
 * farthest from the scale's neutral point (0, or the middle of a diverging scale), so where a
 * head attends strongly stays visible however far the matrix is pooled. row_range: each row's
 * lo and hi under the row scale (palette_row_range), else NULL. */
static enum cell_kind block_at(const struct layout *l, const struct svg_tile *t,
                               const float *row_range, int bi, int bj, double *position)
{
    struct attn_mat_view v = t->v;
    int r0 = bi * l->block, r1 = r0 + l->block < v.rows ? r0 + l->block : v.rows;
    int c0 = bj * l->block, c1 = c0 + l->block < v.cols ? c0 + l->block : v.cols;
    double neutral = l->map.diverging ? 0.5 : 0.0; /* the log scale is never diverging */
    double best = -1, best_d = -1;
    bool masked = false;
    for (int i = r0; i < r1; i++) {
        const float *row = v.data + (size_t)i * v.stride;
        float row_lo = row_range ? row_range[2 * i] : l->map.lo;
        float row_hi = row_range ? row_range[2 * i + 1] : l->map.hi;
        for (int j = c0; j < c1; j++) {
            if (t->keep && !t->keep[(size_t)i * v.cols + j])
                continue;
            if (!isfinite(row[j])) {
                masked = true;
                continue;
            }
            double f = palette_map_position(&l->map, row[j], row_lo, row_hi);
            double d = fabs(f - neutral);
            if (d > best_d)
                best_d = d, best = f;
        }
    }
    *position = best;
    if (best_d >= 0)
        return CELL_VALUE;
    return masked ? CELL_MASKED : CELL_DROPPED;
}

static void put_rgb(FILE *f, struct palette_rgb c)
{
    attn_cnum_fprintf(f, "#%02x%02x%02x", c.r, c.g, c.b);
}

/* Returns 0, or -1 out of memory. */
static int write_tile(FILE *f, const struct svg_picture *p, const struct layout *l, int t)
{
    const struct svg_tile *tile = &p->tiles[t];
    int tx = l->map_x + (t % l->per_row) * (l->tile_w + TILE_GAP);
    int ty = l->map_y + (t / l->per_row) * (l->tile_h + l->tile_label_h + TILE_GAP);
    /* The row scale's ranges, once per row rather than once per block. */
    float *row_range = NULL;
    if (l->map.mode == SCALE_BY_ROW) {
        row_range = malloc(2 * (size_t)l->rows * sizeof(float));
        if (!row_range)
            return -1;
        for (int i = 0; i < l->rows; i++)
            palette_row_range(&row_range[2 * i], &row_range[2 * i + 1],
                              tile->v.data + (size_t)i * tile->v.stride, l->cols);
    }
    attn_cnum_fprintf(f, "<g class=\"tile\" id=\"tile-%d\">\n<g class=\"cells\">\n", t);
    for (int bi = 0; bi < l->grows; bi++)
        for (int bj = 0; bj < l->gcols; bj++) {
            double pos;
            enum cell_kind k = block_at(l, tile, row_range, bi, bj, &pos);
            attn_cnum_fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"",
                              tx + bj * l->cell, ty + bi * l->cell, l->cell, l->cell);
            if (k == CELL_MASKED)
                fputs("url(#masked)", f);
            else if (k == CELL_DROPPED)
                fputs(DROP_FILL, f);
            else
                put_rgb(f, palette_rgb_at(l->scale_id, l->map.diverging, pos));
            fputs("\"/>\n", f);
        }
    fputs("</g>\n", f);
    attn_cnum_fprintf(f,
                      "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                      "fill=\"none\" stroke=\"" INK "\" stroke-width=\"0.5\"/>\n",
                      tx, ty, l->tile_w, l->tile_h);

    if (l->values) {
        attn_cnum_fprintf(f,
                          "<g class=\"values\" font-size=\"%d\" text-anchor=\"middle\" "
                          "dominant-baseline=\"central\">\n",
                          l->value_px);
        struct attn_mat_view v = tile->v;
        for (int i = 0; i < l->rows; i++)
            for (int j = 0; j < l->cols; j++) {
                float x = v.data[(size_t)i * v.stride + j];
                char num[32];
                const char *ink = MUTED;
                if (tile->keep && !tile->keep[(size_t)i * v.cols + j]) {
                    snprintf(num, sizeof(num), "drop");
                } else {
                    format_value(num, sizeof(num), x, l->decimals, false);
                    double pos;
                    if (block_at(l, tile, row_range, i, j, &pos) == CELL_VALUE)
                        ink = palette_text_dark(palette_rgb_at(l->scale_id, l->map.diverging, pos))
                                  ? "#000000"
                                  : "#ffffff";
                }
                char attrs[64];
                snprintf(attrs, sizeof(attrs), "fill=\"%s\"", ink);
                put_text(f, tx + (j + 0.5) * l->cell, ty + (i + 0.5) * l->cell, attrs, num, 16);
            }
        fputs("</g>\n", f);
    }
    if (tile->label) {
        put_text(f, tx + l->tile_w / 2.0, ty + l->tile_h + 17,
                 "class=\"tile-label\" font-size=\"13\" font-weight=\"bold\" "
                 "text-anchor=\"middle\" fill=\"" INK "\"",
                 tile->label, 60);
    }
    fputs("</g>\n", f);
    free(row_range);
    return 0;
}

/* Position ticks where there are no labels (a long sequence in blocks): a short line at the
 * top edge of position i (row i at y, column i at x) every l->tick positions, and its number,
 * left of each row of tiles and above the first. */
static void write_ticks(FILE *f, const struct svg_picture *p, const struct layout *l)
{
    double per = (double)l->cell / l->block; /* px a position */
    attn_cnum_fprintf(f,
                      "<g class=\"ticks\" font-size=\"%d\" fill=\"" INK "\" stroke=\"" INK "\" "
                      "stroke-width=\"0.75\">\n",
                      TICK_PX);
    char num[32];
    for (int tr = 0; tr < l->tile_rows; tr++) {
        int ty = l->map_y + tr * (l->tile_h + l->tile_label_h + TILE_GAP);
        for (int i = 0; i < l->rows; i += l->tick) {
            double y = ty + i * per;
            attn_cnum_fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n",
                              l->map_x - 4, y, l->map_x, y);
            snprintf(num, sizeof(num), "%d", i);
            put_text(f, l->map_x - 6, y,
                     "class=\"row-tick\" stroke=\"none\" text-anchor=\"end\" "
                     "dominant-baseline=\"central\"",
                     num, 12);
        }
    }
    int across = l->per_row < p->n_tiles ? l->per_row : p->n_tiles;
    for (int tc = 0; tc < across; tc++) {
        int tx = l->map_x + tc * (l->tile_w + TILE_GAP);
        for (int j = 0; j < l->cols; j += l->tick) {
            double x = tx + j * per;
            attn_cnum_fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x,
                              l->map_y - 4, x, l->map_y);
            snprintf(num, sizeof(num), "%d", j);
            put_text(f, x, l->map_y - 7,
                     "class=\"col-tick\" stroke=\"none\" text-anchor=\"middle\"", num, 12);
        }
    }
    fputs("</g>\n", f);
}

/* Row labels left of each row of tiles, column labels above the first row of tiles. */
static void write_labels(FILE *f, const struct svg_picture *p, const struct layout *l)
{
    /* The axes' names, even when the labels themselves are left out. */
    int grid_h = l->tile_rows * l->tile_h + (l->tile_rows - 1) * (l->tile_label_h + TILE_GAP);
    char attrs[160];
    attn_cnum_format(attrs, sizeof(attrs),
                     "class=\"axis\" font-size=\"12\" fill=\"" MUTED "\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 %d %.1f)\"",
                     MARGIN + 10, l->map_y + grid_h / 2.0);
    put_text(f, MARGIN + 10, l->map_y + grid_h / 2.0, attrs, p->row_axis ? p->row_axis : "", 40);
    put_text(f, l->map_x, l->map_y - l->col_label_h + 14,
             "class=\"axis\" font-size=\"12\" fill=\"" MUTED "\"", p->col_axis ? p->col_axis : "",
             40);
    if (l->tick) {
        write_ticks(f, p, l);
        return;
    }
    if (!l->labels)
        return;
    attn_cnum_fprintf(f,
                      "<g class=\"row-labels\" font-size=\"%d\" fill=\"" INK "\" "
                      "text-anchor=\"end\" dominant-baseline=\"central\">\n",
                      l->label_px);
    for (int tr = 0; tr < l->tile_rows; tr++) {
        int ty = l->map_y + tr * (l->tile_h + l->tile_label_h + TILE_GAP);
        for (int i = 0; i < l->rows; i++)
            put_text(f, l->map_x - 6, ty + (i + 0.5) * l->cell, "", p->row_labels[i], LABEL_CHARS);
    }
    fputs("</g>\n", f);
    attn_cnum_fprintf(f, "<g class=\"col-labels\" font-size=\"%d\" fill=\"" INK "\">\n",
                      l->label_px);
    int across = l->per_row < p->n_tiles ? l->per_row : p->n_tiles;
    for (int tc = 0; tc < across; tc++) {
        int tx = l->map_x + tc * (l->tile_w + TILE_GAP);
        for (int j = 0; j < l->cols; j++) {
            char raw[1024];
            col_label(raw, sizeof(raw), p, j);
            double x = tx + (j + 0.5) * l->cell + l->label_px * 0.35, y = l->map_y - 6;
            attn_cnum_format(attrs, sizeof(attrs), "transform=\"rotate(-45 %.1f %.1f)\"", x, y);
            put_text(f, x, y, attrs, raw, LABEL_CHARS);
        }
    }
    fputs("</g>\n", f);
}

/* ---- legend ------------------------------------------------------------------------------ */

static void write_legend(FILE *f, const struct svg_picture *p, const struct layout *l)
{
    const struct palette_map *m = &l->map;
    int x = l->legend_x, y = l->map_y;
    char line[256], a[32], b[32];
    fputs("<g class=\"legend\" font-size=\"12\" fill=\"" INK "\">\n", f);
    const char *how = m->mode == SCALE_BY_ROW    ? "each row its own range"
                      : m->mode == SCALE_BY_LOG  ? "log\u2081\u2080, down to max/10\u2074"
                      : p->scale == SCALE_BY_LOG ? "signed: linear, not log"
                      : p->n_tiles > 1           ? "one range for every head"
                                                 : "one range for the matrix";
    snprintf(line, sizeof(line), "colour scale: %s", palette_scale_name(p->scale));
    put_text(f, x, y + 10, "class=\"scale-name\" font-weight=\"bold\"", line, 80);
    put_text(f, x, y + 26, "fill=\"" MUTED "\"", how, 80);

    /* The bar, the top of the scale on top: the pieces from the bottom colour to the top one. */
    int bar_y = y + 40, piece = BAR_H / BAR_PIECES;
    fputs("<g class=\"bar\">\n", f);
    for (int s = BAR_PIECES - 1; s >= 0; s--) {
        attn_cnum_fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"", x,
                          bar_y + (BAR_PIECES - 1 - s) * piece, BAR_W, piece);
        put_rgb(f, palette_rgb_at(l->scale_id, m->diverging, (double)s / (BAR_PIECES - 1)));
        fputs("\"/>\n", f);
    }
    fputs("</g>\n", f);
    int bar_h = BAR_H;
    int tx = x + BAR_W + 8;
    /* The ends of the bar, in the mode's terms. */
    if (m->mode == SCALE_BY_ROW) {
        snprintf(a, sizeof(a), "row max");
        snprintf(b, sizeof(b), "row min");
        if (m->diverging) {
            snprintf(a, sizeof(a), "+row max |x|");
            snprintf(b, sizeof(b), "\u2212row max |x|");
        }
    } else if (m->mode == SCALE_BY_LOG) {
        format_value(a, sizeof(a), m->hi, 4, true);
        format_value(b, sizeof(b), powf(10.0f, m->log_lo), 4, true);
    } else if (m->diverging) {
        float e = fabsf(m->lo) > fabsf(m->hi) ? fabsf(m->lo) : fabsf(m->hi);
        format_value(a, sizeof(a), e, 4, true);
        format_value(b, sizeof(b), -e, 4, true);
    } else {
        format_value(a, sizeof(a), m->hi, 4, true);
        format_value(b, sizeof(b), m->lo, 4, true);
    }
    put_text(f, tx, bar_y + 10, "class=\"bar-max\"", a, 40);
    put_text(f, tx, bar_y + bar_h, "class=\"bar-min\"", b, 40);
    if (m->diverging && m->mode != SCALE_BY_LOG)
        put_text(f, tx, bar_y + bar_h / 2.0 + 4, "class=\"bar-mid\"", "0", 40);

    int ly = bar_y + bar_h + 22;
    format_value(a, sizeof(a), m->lo, 4, true);
    format_value(b, sizeof(b), m->hi, 4, true);
    snprintf(line, sizeof(line), "min %s \u00b7 max %s", a, b);
    put_text(f, x, ly, "class=\"range\"", line, 80);
    ly += 10;
    if (l->has_inf || l->has_nan) {
        attn_cnum_fprintf(
            f,
            "<rect class=\"swatch-masked\" x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" "
            "fill=\"url(#masked)\" stroke=\"" MUTED "\" stroke-width=\"0.5\"/>\n",
            x, ly);
        put_text(f, x + 20, ly + 11, "",
                 l->has_inf && l->has_nan ? "masked (\u2212\u221e) or nan"
                 : l->has_inf             ? "masked (\u2212\u221e)"
                                          : "nan",
                 80);
        ly += 20;
    }
    if (l->has_dropped) {
        attn_cnum_fprintf(
            f,
            "<rect class=\"swatch-dropped\" x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" "
            "fill=\"" DROP_FILL "\" stroke=\"" MUTED "\" stroke-width=\"0.5\"/>\n",
            x, ly);
        put_text(f, x + 20, ly + 11, "", "dropped by dropout", 80);
        ly += 20;
    }
    /* What was left out or pooled, so nobody reads a block as a cell. */
    ly += 8;
    if (l->block > 1) {
        snprintf(line, sizeof(line), "%d\u00d7%d matrix in blocks of %d\u00d7%d:", l->rows, l->cols,
                 l->block, l->block);
        put_text(f, x, ly, "class=\"note\" fill=\"" MUTED "\"", line, 80);
        put_text(f, x, ly + 15, "class=\"note\" fill=\"" MUTED "\"",
                 "each shows its strongest cell", 80);
        ly += 30;
    }
    if (!l->labels) {
        snprintf(line, sizeof(line), "labels omitted: %s;",
                 l->block > 1 ? "blocks of tokens" : "cells too small");
        put_text(f, x, ly, "class=\"note\" fill=\"" MUTED "\"", line, 80);
        put_text(f, x, ly + 15, "class=\"note\" fill=\"" MUTED "\"",
                 "the ticks count positions from 0", 80);
        ly += 30;
    }
    if (p->values && !l->values) {
        snprintf(line, sizeof(line), "values omitted: %s",
                 l->block > 1 ? "blocks, not cells" : "cells too small");
        put_text(f, x, ly, "class=\"note\" fill=\"" MUTED "\"", line, 80);
    }
    fputs("</g>\n", f);
}

int svg_write(FILE *f, const struct svg_picture *p)
{
    struct layout l;
    plan(p, &l);
    attn_cnum_fprintf(f,
                      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                      "height=\"%d\" viewBox=\"0 0 %d %d\" "
                      "font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\">\n",
                      l.width, l.height, l.width, l.height);
    fputs("<title>", f);
    char clean[1024];
    clean_text(clean, sizeof(clean), p->title ? p->title : "", 200);
    put_escaped(f, clean);
    fputs("</title>\n<desc>", f);
    clean_text(clean, sizeof(clean), p->subtitle ? p->subtitle : "", 200);
    put_escaped(f, clean);
    fputs(" (attnscope render)</desc>\n", f);
    fputs("<defs>\n<pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\">\n<rect width=\"6\" height=\"6\" fill=\"" MASK_BG
          "\"/>\n<rect width=\"2\" height=\"6\" fill=\"" MASK_LINE "\"/>\n</pattern>\n</defs>\n",
          f);
    fputs("<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", f);
    put_text(f, MARGIN, MARGIN + 16,
             "class=\"title\" font-size=\"18\" font-weight=\"bold\" fill=\"" INK "\"",
             p->title ? p->title : "", 200);
    put_text(f, MARGIN, MARGIN + 38, "class=\"subtitle\" font-size=\"13\" fill=\"" MUTED "\"",
             p->subtitle ? p->subtitle : "", 200);
    for (int t = 0; t < p->n_tiles; t++)
        if (write_tile(f, p, &l, t) != 0)
            return SVG_NO_MEMORY;
    write_labels(f, p, &l);
    write_legend(f, p, &l);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}

static int write_cb(FILE *f, void *ctx, struct diag *err)
{
    int rc = svg_write(f, ctx);
    if (rc == SVG_NO_MEMORY)
        return attn_diag_set(err, NULL, "out of memory");
    if (rc != 0)
        return attn_diag_set(err, NULL, "write error: %s", strerror(errno ? errno : EIO));
    return 0;
}

int svg_write_file(const char *path, bool overwrite, const struct svg_picture *p, struct diag *err)
{
    return attn_fsutil_write_atomic(path, overwrite, write_cb, (void *)p, err);
}
