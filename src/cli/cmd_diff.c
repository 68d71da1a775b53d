/* diff: one stage of two scenes, cell by cell.
 *
 *   attnscope diff A.yaml B.yaml [--stage S] [--head H|all] [--layer L|all] [--top K] [--csv]
 *
 * Both scenes are computed; for each head compared it prints the shapes, max |Δ| and mean |Δ|
 * (Δ = B − A), the K largest changes sorted by |Δ|, and a text map of |Δ| in shade blocks
 * (ASCII without a UTF-8 locale), cell by cell up to 64×64, in blocks of their max above.
 * Two shapes that differ are refused (exit 1), naming both. --csv writes the top K of every
 * head as (layer, head, row, col, a, b, delta) instead. --layer all ranks every head of every
 * layer by its mean |Δ| (two checkpoints of one model: which heads training changed), the K
 * largest shown; with --csv as (layer, head, mean, max, row, col). Numbers go through cnum (C
 * locale).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cnum.h"
#include "common/utf8.h"
#include "export/export.h"

#define DIFF_MAP_MAX 64 /* cells a side the map shows one by one */

struct change {
    int row, col;
    float a, b, d; /* d = b − a (attn_cell_delta) */
};

/* Largest |Δ| first; ties in reading order, so the output never depends on qsort. */
static int by_size(const void *x, const void *y)
{
    const struct change *p = x, *q = y;
    float ap = fabsf(p->d), aq = fabsf(q->d);
    if (ap != aq)
        return ap > aq ? -1 : 1;
    if (p->row != q->row)
        return p->row < q->row ? -1 : 1;
    return (p->col > q->col) - (p->col < q->col);
}

/* The |Δ| map: one character a cell (or a block of cells, their max), 5 levels of max |Δ|. */
static void print_map(const struct change *cells, int rows, int cols, float max_abs, bool utf8)
{
    static const char *const shade_utf8[] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
    static const char *const shade_ascii[] = {" ", ".", ":", "*", "#"};
    const char *const *shade = utf8 ? shade_utf8 : shade_ascii;
    int big = rows > cols ? rows : cols;
    int bs = big > DIFF_MAP_MAX ? (big + DIFF_MAP_MAX - 1) / DIFF_MAP_MAX : 1;
    char top[32];
    attn_cnum_format(top, sizeof(top), "%.4f", max_abs);
    if (max_abs == 0) { /* nothing changed: a blank map says less than this */
        printf("|%s| map: no cell changed\n", utf8 ? "\u0394" : "d");
        return;
    }
    if (bs > 1)
        printf("|%s| map, each pair of characters a %d%s%d block, its max |%s| (%s%s = %s):\n",
               utf8 ? "\u0394" : "d", bs, utf8 ? "\u00d7" : "x", bs, utf8 ? "\u0394" : "d",
               shade[4], shade[4], top);
    else
        printf("|%s| map (%s%s = %s, blank = no change):\n", utf8 ? "\u0394" : "d", shade[4],
               shade[4], top);
    char line[4 * 2 * 4 * DIFF_MAP_MAX + 16]; /* a row of the map, its blanks at the end cut */
    for (int r0 = 0; r0 < rows; r0 += bs) {
        size_t o = (size_t)snprintf(line, sizeof(line), "%5d ", r0);
        for (int c0 = 0; c0 < cols; c0 += bs) {
            float m = 0.0f;
            for (int i = r0; i < r0 + bs && i < rows; i++)
                for (int j = c0; j < c0 + bs && j < cols; j++) {
                    float x = fabsf(cells[(size_t)i * (size_t)cols + (size_t)j].d);
                    m = x > m || isnan(x) ? x : m;
                }
            int level = 0;
            if (m > 0 && max_abs > 0) /* inf or nan: the top level */
                level = isfinite(m) && isfinite(max_abs) ? 1 + (int)(3.999f * (m / max_abs)) : 4;
            level = level > 4 ? 4 : level;
            /* two characters a cell: square to the eye */
            if (o < sizeof(line))
                o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s", shade[level],
                                      shade[level]);
        }
        o = strlen(line);
        while (o > 0 && line[o - 1] == ' ')
            line[--o] = '\0';
        puts(line);
    }
}

static void fmt4(char *out, size_t size, float x)
{
    if (isinf(x))
        snprintf(out, size, "%s", x < 0 ? "-inf" : "inf");
    else if (isnan(x))
        snprintf(out, size, "nan");
    else
        attn_cnum_format(out, size, "%.4f", (double)x);
}

/* Position i's token as the changes name it: "\"cat\"", or where B's text has another token
 * there, both, "\"cat\" (B \"dog\")": a row of B's numbers is B's token's. Tokens come from
 * files: escaped (common/utf8.h), and cut when long. */
static void token_pair(char *out, size_t size, char *const *ta, char *const *tb, int i)
{
    char a[72], b[72];
    attn_utf8_esc(a, sizeof(a), ta[i]);
    if (strcmp(ta[i], tb[i]) == 0)
        snprintf(out, size, "\"%s\"", a);
    else
        snprintf(out, size, "\"%s\" (B \"%s\")", a, attn_utf8_esc(b, sizeof(b), tb[i]));
}

/* Positions where A's and B's tokens differ, for the header: "2 and 5", "9 positions". */
static int token_differences(char *out, size_t size, const struct attn_model *ma,
                             const struct attn_model *mb)
{
    int n = 0;
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < ma->n && i < mb->n; i++)
        if (strcmp(ma->tokens[i], mb->tokens[i]) != 0) {
            if (n < 4 && o < size)
                o += (size_t)snprintf(out + o, size - o, "%s%d", n ? ", " : "", i);
            n++;
        }
    if (n > 4)
        snprintf(out, size, "%d positions", n);
    return n;
}

/* What diff compares, the same for every head: one stage of one layer of two scenes. */
struct diff_job {
    const struct cli_scene *a, *b;
    int layer;
    enum attn_stage stage;
    int top;              /* the K largest changes */
    bool csv, utf8;       /* as CSV rows; in UTF-8's signs (else ASCII) */
    float *buf_a, *buf_b; /* cap floats each: a view's numbers where a stage keeps none */
    size_t cap;
};

/* Compares head h of the job's stage; out of memory: CLI_INVALID. */
static int diff_head(const struct diff_job *job, int h)
{
    const struct cli_scene *ca = job->a, *cb = job->b;
    int L = job->layer;
    enum attn_stage st = job->stage;
    bool utf8 = job->utf8;
    struct attn_mat_view va =
        attn_view_buf(job->buf_a, job->cap, &ca->net.run[L], &ca->net.model[L], st, h);
    struct attn_mat_view vb =
        attn_view_buf(job->buf_b, job->cap, &cb->net.run[L], &cb->net.model[L], st, h);
    size_t n = (size_t)va.rows * (size_t)va.cols;
    struct change *cells = malloc((n ? n : 1) * sizeof(*cells));
    struct change *sorted = malloc((n ? n : 1) * sizeof(*sorted));
    int rc = CLI_OK;
    if (!cells || !sorted) {
        fprintf(stderr, "attnscope diff: out of memory\n");
        rc = CLI_INVALID;
        goto out;
    }
    struct attn_delta_stats stats = {0};
    for (int i = 0; i < va.rows; i++)
        for (int j = 0; j < va.cols; j++) {
            float a = va.data[(size_t)i * va.stride + j], b = vb.data[(size_t)i * vb.stride + j];
            struct change c = {i, j, a, b, attn_cell_delta(b, a)};
            size_t k = (size_t)i * (size_t)va.cols + (size_t)j;
            cells[k] = sorted[k] = c;
            attn_delta_stats_add(&stats, c.d, (int)k);
        }
    float max_abs = stats.max_abs;
    int max_i = stats.max_at;
    long finite = stats.finite;
    qsort(sorted, n, sizeof(*sorted), by_size);
    int k_top = job->top < (int)n ? job->top : (int)n;
    const struct attn_model *ma = &ca->net.model[L], *mb = &cb->net.model[L];
    bool square = attn_stage_is_square(st);
    if (job->csv) {
        for (int k = 0; k < k_top; k++) {
            char a[40], b[40], d[40];
            csv_format_float(a, sizeof(a), sorted[k].a);
            csv_format_float(b, sizeof(b), sorted[k].b);
            csv_format_float(d, sizeof(d), sorted[k].d);
            printf("%d,%d,%d,%d,%s,%s,%s\r\n", L, h, sorted[k].row, sorted[k].col, a, b, d);
        }
        goto out;
    }
    const char *times = utf8 ? "\u00d7" : "x", *arrow = utf8 ? "\u2192" : "->",
               *delta = utf8 ? "\u0394" : "d";
    char where[48] = "";
    if (ca->net.layers > 1 || cb->net.layers > 1)
        snprintf(where, sizeof(where), "layer %d %s ", L, utf8 ? "\u00b7" : "-");
    char mx[32], mean[32];
    fmt4(mx, sizeof(mx), max_abs);
    fmt4(mean, sizeof(mean), attn_delta_stats_mean(&stats));
    if (attn_stage_is_per_head(st))
        printf("\n# %shead %d %s %s: A %d%s%d, B %d%s%d\n", where, h, utf8 ? "\u00b7" : "-",
               attn_stage_name(st), va.rows, times, va.cols, vb.rows, times, vb.cols);
    else
        printf("\n# %s%s: A %d%s%d, B %d%s%d\n", where, attn_stage_name(st), va.rows, times,
               va.cols, vb.rows, times, vb.cols);
    printf("max |%s| %s at row %d %s col %d, mean |%s| %s", delta, mx,
           max_i / (va.cols ? va.cols : 1), times, max_i % (va.cols ? va.cols : 1), delta, mean);
    if (finite < (long)n)
        printf(" (over the %ld finite of %zu cells)", finite, n);
    putchar('\n');
    printf("top %d change%s (%s = B %s A):\n", k_top, k_top == 1 ? "" : "s", delta,
           utf8 ? "\u2212" : "-");
    for (int k = 0; k < k_top; k++) {
        const struct change *c = &sorted[k];
        char a[32], b[32], d[32];
        fmt4(a, sizeof(a), c->a);
        fmt4(b, sizeof(b), c->b);
        fmt4(d, sizeof(d), c->d);
        /* Each scene's own token: B's is named too where the texts differ there. */
        char col[160], row[160];
        /* a cross-attention's keys (its K and V rows, its columns) are the source's */
        token_pair(row, sizeof(row), attn_stage_row_tokens(ma, st), attn_stage_row_tokens(mb, st),
                   c->row);
        if (square)
            token_pair(col, sizeof(col), attn_model_key_tokens(ma), attn_model_key_tokens(mb),
                       c->col);
        else
            snprintf(col, sizeof(col), "d%d", c->col);
        printf("  row %d %s %s col %d %s: %s %s %s (%s%s)\n", c->row, row, times, c->col, col, a,
               arrow, b, c->d > 0 ? "+" : "", d);
    }
    print_map(cells, va.rows, va.cols, max_abs, utf8);
out:
    free(cells);
    free(sorted);
    return rc;
}

/* One head of one layer in --layer all's ranking. */
struct head_change {
    int layer, head;
    struct attn_delta_stats st;
    int cols;
};

/* Largest mean |Δ| first; ties by layer, then head. */
static int by_mean(const void *x, const void *y)
{
    const struct head_change *a = x, *b = y;
    float ma = attn_delta_stats_mean(&a->st), mb = attn_delta_stats_mean(&b->st);
    if (ma != mb)
        return ma > mb ? -1 : 1;
    return a->layer != b->layer ? a->layer - b->layer : a->head - b->head;
}

/* --layer all: every head of every layer (one row a layer for a stage that is not per head),
 * ranked by mean |Δ|, the top K printed. */
static int diff_every_layer(const struct diff_job *job)
{
    const struct cli_scene *ca = job->a, *cb = job->b;
    enum attn_stage st = job->stage;
    bool per_head = attn_stage_is_per_head(st), utf8 = job->utf8;
    int total = 0;
    for (int L = 0; L < ca->net.layers; L++)
        total += per_head ? ca->net.model[L].heads : 1;
    struct head_change *rows = malloc((size_t)(total ? total : 1) * sizeof(*rows));
    if (!rows) {
        fprintf(stderr, "attnscope diff: out of memory\n");
        return CLI_INVALID;
    }
    int k = 0;
    for (int L = 0; L < ca->net.layers; L++)
        for (int h = 0; h < (per_head ? ca->net.model[L].heads : 1); h++) {
            struct attn_mat_view va =
                attn_view_buf(job->buf_a, job->cap, &ca->net.run[L], &ca->net.model[L], st, h);
            struct attn_mat_view vb =
                attn_view_buf(job->buf_b, job->cap, &cb->net.run[L], &cb->net.model[L], st, h);
            struct head_change *r = &rows[k++];
            *r = (struct head_change){.layer = L, .head = h, .cols = va.cols ? va.cols : 1};
            for (int i = 0; i < va.rows; i++)
                for (int j = 0; j < va.cols; j++)
                    attn_delta_stats_add(&r->st,
                                         attn_cell_delta(vb.data[(size_t)i * vb.stride + j],
                                                         va.data[(size_t)i * va.stride + j]),
                                         i * va.cols + j);
        }
    qsort(rows, (size_t)total, sizeof(*rows), by_mean);
    int shown = job->top < total ? job->top : total;
    const char *delta = utf8 ? "\u0394" : "d", *times = utf8 ? "\u00d7" : "x";
    if (job->csv)
        fputs("layer,head,mean,max,row,col\r\n", stdout);
    else
        printf("\n# %s, %s of %d layers, by mean |%s| (%s = B %s A); the %d largest\n",
               attn_stage_name(st), per_head ? "every head" : "each", ca->net.layers, delta, delta,
               utf8 ? "\u2212" : "-", shown);
    if (!job->csv)
        printf("layer  head  mean |%s|   max |%s|  at\n", delta, delta);
    for (int i = 0; i < shown; i++) {
        const struct head_change *r = &rows[i];
        char mean[32], mx[32];
        int row = r->st.max_at / r->cols, col = r->st.max_at % r->cols;
        if (job->csv) {
            csv_format_float(mean, sizeof(mean), attn_delta_stats_mean(&r->st));
            csv_format_float(mx, sizeof(mx), r->st.max_abs);
            printf("%d,%d,%s,%s,%d,%d\r\n", r->layer, r->head, mean, mx, row, col);
            continue;
        }
        fmt4(mean, sizeof(mean), attn_delta_stats_mean(&r->st));
        fmt4(mx, sizeof(mx), r->st.max_abs);
        char head[16], rtok[160], ctok[160] = "";
        snprintf(head, sizeof(head), "%d", r->head);
        const struct attn_model *ma = &ca->net.model[r->layer], *mb = &cb->net.model[r->layer];
        token_pair(rtok, sizeof(rtok), attn_stage_row_tokens(ma, st), attn_stage_row_tokens(mb, st),
                   row);
        if (attn_stage_is_square(st))
            token_pair(ctok, sizeof(ctok), attn_model_key_tokens(ma), attn_model_key_tokens(mb),
                       col);
        else
            snprintf(ctok, sizeof(ctok), "d%d", col);
        printf("%5d  %4s  %10s  %9s  row %d %s %s col %d %s\n", r->layer, per_head ? head : "-",
               mean, mx, row, rtok, times, col, ctok);
    }
    free(rows);
    return CLI_OK;
}

/* A layer, head (-1: every head) or stage c lacks is a wrong command line for that scene: said,
 * CLI_USAGE. */
static int check_scene(const struct cli_scene *c, int layer, int head, enum attn_stage st)
{
    if (layer >= c->net.layers)
        fprintf(stderr, "%s: layer %d out of range (scene has %d layer%s)\n", c->name, layer,
                c->net.layers, c->net.layers == 1 ? "" : "s");
    else if (head >= c->net.model[layer].heads)
        fprintf(stderr, "%s: head %d out of range (scene has %d head%s)\n", c->name, head,
                c->net.model[layer].heads, c->net.model[layer].heads == 1 ? "" : "s");
    else if (!attn_stage_present(&c->net.model[layer], st))
        fprintf(stderr, "%s: this scene has no stage %s\n", c->name, attn_stage_name(st));
    else
        return CLI_OK;
    return CLI_USAGE;
}

static int usage(const char *fmt, const char *arg)
{
    return cli_usage_error("diff", fmt, arg);
}

enum { O_STAGE, O_HEAD, O_LAYER, O_TOP, O_CSV, O_COUNT };
static const struct cli_opt opts[O_COUNT] = {
    [O_STAGE] = {"stage", 's', "S", "the stage (default weights): @STAGES@"},
    [O_HEAD] = {"head", 'H', "H", "the head (default 0), or all"},
    [O_LAYER] =
        {"layer", 'l', "L",
         "the layer (default 0), or all: every head of every layer ranked by mean |\u0394|"},
    [O_TOP] = {"top", 'k', "K", "the K largest changes, or heads with --layer all (default 10)"},
    [O_CSV] = {"csv", 'c', NULL, "the top K as CSV: layer,head,row,col,a,b,delta"},
};

static const struct cli_example examples[] = {
    {"attnscope diff 04-self-attention-v2 05-causal --top 3",
     "what the causal mask changes in the weights"},
    {NULL, NULL},
};

const struct cli_command cli_diff = {
    "diff",
    cmd_diff,
    "A.yaml B.yaml [--stage S] [--head H|all] [--layer L|all] [--top K] [--csv]",
    "compare one stage of two scenes cell by cell",
    "Compare one stage of two scenes cell by cell (B minus A): the shapes, the largest and\n"
    "the mean |difference|, the K largest changes and a map of where they are.",
    opts,
    O_COUNT,
    examples,
    true,
};

int cmd_diff(int argc, char **argv)
{
    const char *val[O_COUNT], *pos[2];
    int n_pos;
    struct cli_input in;
    int rc = cli_begin_input(&cli_diff, argc, argv, val, pos, 2, &n_pos, &in);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *stage_arg = val[O_STAGE], *head_arg = val[O_HEAD], *layer_arg = val[O_LAYER];
    const char *top_arg = val[O_TOP], *csv_arg = val[O_CSV];
    if (n_pos != 2)
        return cli_usage_error("diff", "needs two scene files (A.yaml B.yaml), got %d", n_pos);
    if (in.save_scene)
        return cli_usage_error("diff", "--save-scene saves one scene; diff reads two");
    int stage = STAGE_WEIGHTS, head = 0, layer = 0, top = 10;
    bool all_heads = head_arg && strcmp(head_arg, "all") == 0;
    bool all_layers = layer_arg && strcmp(layer_arg, "all") == 0;
    if (all_layers && head_arg && !all_heads)
        return cli_usage_error("diff", "--layer all ranks every head: drop --head %s", head_arg);
    if (stage_arg && (stage = attn_stage_parse(stage_arg)) < 0)
        return usage("unknown stage '%s' (see attnscope diff --help)", stage_arg);
    if (head_arg && !all_heads && cli_parse_int(head_arg, 0, SCENE_MAX_HEADS - 1, &head) != 0)
        return cli_usage_error("diff", "invalid head '%s' (a whole number from 0 to %d, or all)",
                               head_arg, SCENE_MAX_HEADS - 1);
    if ((layer_arg && !all_layers &&
         cli_int_option(&layer, "diff", "layer", layer_arg, 0, SCENE_MAX_LAYERS - 1) != CLI_OK) ||
        (top_arg && cli_int_option(&top, "diff", "--top", top_arg, 0, 1000000) != CLI_OK))
        return CLI_USAGE;

    struct cli_scene ca = {0}, cb = {0};
    float *buf_a = NULL, *buf_b = NULL;
    if ((rc = cli_scene_open(&ca, pos[0], &in)) != CLI_OK ||
        (rc = cli_scene_open(&cb, pos[1], &in)) != CLI_OK)
        goto out;
    cli_scene_finite(&ca, false);
    cli_scene_finite(&cb, false);
    enum attn_stage st = (enum attn_stage)stage;
    if (all_layers && ca.net.layers != cb.net.layers) {
        fprintf(stderr,
                "attnscope diff: %s has %d layer%s, %s has %d: --layer all needs the same "
                "number\n",
                ca.name, ca.net.layers, ca.net.layers == 1 ? "" : "s", cb.name, cb.net.layers);
        rc = CLI_INVALID;
        goto out;
    }
    for (int L = all_layers ? 1 : ca.net.layers; L < ca.net.layers; L++)
        if (ca.net.model[L].heads != cb.net.model[L].heads ||
            ca.net.model[L].n != cb.net.model[L].n) {
            fprintf(stderr,
                    "attnscope diff: layer %d of %s and %s differs in its heads or "
                    "tokens: --layer all needs the same\n",
                    L, ca.name, cb.name);
            rc = CLI_INVALID;
            goto out;
        }
    int one_head = all_heads ? -1 : head;
    if ((rc = check_scene(&ca, layer, one_head, st)) != CLI_OK ||
        (rc = check_scene(&cb, layer, one_head, st)) != CLI_OK)
        goto out;
    int heads = 1;
    if (attn_stage_is_per_head(st) && all_heads) {
        heads = ca.net.model[layer].heads;
        if (heads != cb.net.model[layer].heads) {
            fprintf(stderr,
                    "attnscope diff: %s has %d head%s, %s has %d: --head all needs the same "
                    "number\n",
                    ca.name, heads, heads == 1 ? "" : "s", cb.name, cb.net.model[layer].heads);
            rc = CLI_INVALID;
            goto out;
        }
    }
    /* The shapes first: a matrix of another shape has no cell-by-cell difference. */
    struct attn_mat_view va = attn_view(&ca.net.run[layer], &ca.net.model[layer], st, 0);
    struct attn_mat_view vb = attn_view(&cb.net.run[layer], &cb.net.model[layer], st, 0);
    if (va.rows != vb.rows || va.cols != vb.cols) {
        fprintf(stderr,
                "attnscope diff: the shapes differ: %s's %s is %d\u00d7%d, %s's is "
                "%d\u00d7%d; no cell-by-cell difference\n",
                ca.name, attn_stage_name(st), va.rows, va.cols, cb.name, vb.rows, vb.cols);
        rc = CLI_INVALID;
        goto out;
    }
    /* every layer's (n, n_kv) stage fits: --layer all walks them, cross-attention's too */
    size_t sq = attn_net_square_floats(&ca.net);
    size_t cap = sq > (size_t)va.rows * (size_t)va.cols ? sq : (size_t)va.rows * va.cols;
    buf_a = malloc((cap ? cap : 1) * sizeof(float));
    buf_b = malloc((cap ? cap : 1) * sizeof(float));
    if (!buf_a || !buf_b) {
        fprintf(stderr, "attnscope diff: out of memory\n");
        rc = CLI_INVALID;
        goto out;
    }
    const struct diff_job job = {.a = &ca,
                                 .b = &cb,
                                 .layer = layer,
                                 .stage = st,
                                 .top = top,
                                 .csv = csv_arg != NULL,
                                 .utf8 = cli_utf8_output(),
                                 .buf_a = buf_a,
                                 .buf_b = buf_b,
                                 .cap = cap};
    if (job.csv && !all_layers)
        fputs("layer,head,row,col,a,b,delta\r\n", stdout);
    if (!job.csv)
        printf("# A: %s\n# B: %s\n", ca.name, cb.name);
    char where[64];
    int differ =
        token_differences(where, sizeof(where), &ca.net.model[layer], &cb.net.model[layer]);
    if (!job.csv && differ)
        printf("# the texts differ at %s%s: a row or column there names A's token, then "
               "B's\n",
               differ == 1   ? "position "
               : differ <= 4 ? "positions "
                             : "",
               where);
    if (all_layers) {
        rc = diff_every_layer(&job);
        goto out;
    }
    int h0 = all_heads ? 0 : head, h1 = all_heads ? heads : head + 1;
    for (int h = h0; h < h1 && rc == CLI_OK; h++)
        rc = diff_head(&job, h);
out:
    free(buf_a);
    free(buf_b);
    cli_scene_close(&ca);
    cli_scene_close(&cb);
    return rc;
}
