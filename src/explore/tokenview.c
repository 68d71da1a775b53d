/* tokenview: the token view's top keys and sentence window (see tokenview.h). No curses. */
#include "explore/tokenview.h"
#include "explore/appstate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct attn_mat_view tokenview_matrix(struct app *a, int *head)
{
    if (a->view.rollout && !a->view.all_heads) {
        struct attn_mat_view r = app_shown_view(a);
        if (a->view.rollout) { /* still: it was computed */
            *head = TOKENVIEW_ROLLOUT;
            return r;
        }
    }
    /* The all-heads and model views draw heads, not their mean: the selected tile's head. */
    if (!a->view.all_heads && app_showing_mean(a)) {
        *head = TOKENVIEW_MEAN;
        return app_shown_view(a);
    }
    *head = a->view.head;
    return app_view(a, a->view.stage, a->view.head);
}

bool tokenview_applies(enum attn_stage s)
{
    return attn_stage_is_square(s);
}

bool tokenview_is_distribution(const struct attn_model *m, enum attn_stage s)
{
    return s == STAGE_WEIGHTS || s == STAGE_DROPOUT ||
           (s == STAGE_MASKED && m->causal && m->mask_mode == MASK_AFTER_SOFTMAX);
}

void tokenview_visible(const struct attn_model *m, enum attn_stage s, int row, int *start, int *end)
{
    /* what the mask hides, the weights and all that is made of them (dropout, weighted_norm)
       hide too: a 0 there is no key the query sees */
    bool masked =
        s == STAGE_MASKED || s == STAGE_WEIGHTS || s == STAGE_DROPOUT || s == STAGE_WEIGHTED_NORM;
    *end = m->causal && masked && row + 1 < m->n ? row + 1 : m->n_kv;
    *start = masked && m->window > 0 && row - m->window + 1 > 0 ? row - m->window + 1 : 0;
}

/* a ranks before b: larger, or as large and earlier. */
static bool ranks_before(const float *row, int a, int b)
{
    return row[a] > row[b] || (row[a] == row[b] && a < b);
}

/* Restores the heap below i: the root is the entry that ranks last, so a better one replaces
 * it. */
static void sift_down(int *heap, int size, int i, const float *row)
{
    for (;;) {
        int worst = i, l = 2 * i + 1, r = l + 1;
        if (l < size && ranks_before(row, heap[worst], heap[l]))
            worst = l;
        if (r < size && ranks_before(row, heap[worst], heap[r]))
            worst = r;
        if (worst == i)
            return;
        int t = heap[i];
        heap[i] = heap[worst];
        heap[worst] = t;
        i = worst;
    }
}

int tokenview_top_k(int *out, int k, const float *row, int start, int end)
{
    if (k <= 0)
        return 0;
    int size = 0;
    for (int j = start; j < end; j++) {
        if (!isfinite(row[j]))
            continue;
        if (size < k) { /* sift up */
            int i = size++;
            out[i] = j;
            while (i > 0 && ranks_before(row, out[(i - 1) / 2], out[i])) {
                int p = (i - 1) / 2, t = out[p];
                out[p] = out[i];
                out[i] = t;
                i = p;
            }
        } else if (ranks_before(row, j, out[0])) {
            out[0] = j;
            sift_down(out, size, 0, row);
        }
    }
    /* Heap sort in place: the root (the last-ranked) goes to the end each time. */
    for (int last = size - 1; last > 0; last--) {
        int t = out[0];
        out[0] = out[last];
        out[last] = t;
        sift_down(out, last, 0, row);
    }
    return size;
}

void tokenview_focus_free(struct tokenview_focus *f)
{
    free(f->top);
    memset(f, 0, sizeof(*f));
}

int tokenview_focus_get(struct tokenview_focus *f, const struct app *a, struct attn_mat_view v,
                        int head, int row, int k)
{
    k = k < v.cols ? k : v.cols;
    k = k > 0 ? k : 1;
    if (f->valid && f->generation == a->result.generation && f->layer == a->view.layer &&
        f->stage == (int)a->view.stage && f->head == head && f->row == row &&
        (f->k >= k || f->n_top < f->k))
        return 0;
    if (k > f->cap) {
        int *grown = realloc(f->top, (size_t)k * sizeof(int));
        if (!grown) {
            f->valid = false;
            return -1;
        }
        f->top = grown;
        f->cap = k;
    }
    const float *r = v.data + (size_t)row * (size_t)v.stride;
    tokenview_visible(app_model(a), a->view.stage, row, &f->visible_start, &f->visible_end);
    if (f->visible_end > v.cols)
        f->visible_end = v.cols;
    f->n_top = tokenview_top_k(f->top, k, r, f->visible_start, f->visible_end);
    /* One pass for the rest: the keys it sees and their range, the whole row's range. */
    f->seen = 0;
    float lo = INFINITY, hi = -INFINITY, rlo = INFINITY, rhi = -INFINITY;
    for (int j = 0; j < v.cols; j++) {
        float x = r[j];
        if (!isfinite(x))
            continue;
        rlo = fminf(rlo, x);
        rhi = fmaxf(rhi, x);
        if (j >= f->visible_start && j < f->visible_end) {
            f->seen++;
            lo = fminf(lo, x);
            hi = fmaxf(hi, x);
        }
    }
    f->lo = lo <= hi ? lo : 0.0f;
    f->hi = lo <= hi ? hi : 0.0f;
    f->distribution = tokenview_is_distribution(app_model(a), a->view.stage);
    f->row_lo = rlo <= rhi ? rlo : 0.0f;
    f->row_hi = rlo <= rhi ? rhi : 0.0f;
    f->generation = a->result.generation;
    f->layer = a->view.layer;
    f->stage = (int)a->view.stage;
    f->head = head;
    f->row = row;
    f->k = k;
    f->valid = true;
    f->computed++;
    return 0;
}

enum tokenview_bars tokenview_bars_kind(const struct tokenview_focus *f, bool per_row)
{
    if (f->lo < 0)
        return TOKENVIEW_BARS_RANGE;
    return f->distribution && !per_row && f->hi <= 1.0f ? TOKENVIEW_BARS_SHARE
                                                        : TOKENVIEW_BARS_LARGEST;
}

double tokenview_bar_fraction(const struct tokenview_focus *f, enum tokenview_bars kind, float v)
{
    if (!isfinite(v))
        return 0.0;
    double lo = kind == TOKENVIEW_BARS_RANGE ? (double)f->lo : 0.0;
    double hi = kind == TOKENVIEW_BARS_SHARE ? 1.0 : (double)f->hi;
    double frac = hi > lo ? ((double)v - lo) / (hi - lo) : hi > 0 ? 1.0 : 0.0;
    return frac < 0 ? 0.0 : frac > 1 ? 1.0 : frac;
}

int tokenview_place(int w, int width, int *row, int *x)
{
    w = w < width ? w : width;
    if (*x > 0 && *x + TOKENVIEW_GAP + w > width) {
        (*row)++;
        *x = 0;
    } else if (*x > 0) {
        *x += TOKENVIEW_GAP;
    }
    return w;
}

int tokenview_fill(const int *widths, int n, int first, int rows, int width)
{
    int row = 0, x = 0, last = first - 1;
    for (int i = first; i < n; i++) {
        int w = tokenview_place(widths[i], width, &row, &x);
        if (row >= rows)
            break;
        x += w;
        last = i;
    }
    return last;
}

/* The earliest start in [lo, hi] whose layout still reaches token `target` (hi does). Starting
 * later never puts a token further on (greedy wrapping), so the test is monotone: a binary
 * search, O(box log box) rather than a layout per step. */
static int earliest_reaching(const int *widths, int n, int lo, int hi, int target, int rows,
                             int width)
{
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (tokenview_fill(widths, n, mid, rows, width) >= target)
            hi = mid;
        else
            lo = mid + 1;
    }
    return hi;
}

void tokenview_window(struct tokenview_window *out, const int *widths, int n, int query, int rows,
                      int width, int prev_first)
{
    rows = rows > 0 ? rows : 1;
    width = width > 0 ? width : 1;
    int last = tokenview_fill(widths, n, 0, rows, width);
    if (last >= n - 1) {
        *out = (struct tokenview_window){0, n - 1, false};
        return;
    }
    int first = -1;
    if (prev_first >= 0 && prev_first <= query &&
        tokenview_fill(widths, n, prev_first, rows, width) >= query)
        first = prev_first; /* the query is still in view: the window stays */
    if (first < 0) {
        /* Half the box's room before the query, then from there on. */
        int room = rows * width / 2, used = widths[query] < width ? widths[query] : width;
        first = query;
        while (first > 0) {
            int w = widths[first - 1] < width ? widths[first - 1] : width;
            if (used + TOKENVIEW_GAP + w > room)
                break;
            used += TOKENVIEW_GAP + w;
            first--;
        }
        /* Wrapping may leave the query out: the earliest start that keeps it in. */
        if (tokenview_fill(widths, n, first, rows, width) < query)
            first = earliest_reaching(widths, n, first, query, query, rows, width);
    }
    last = tokenview_fill(widths, n, first, rows, width);
    /* At the end of the sentence, no row left empty: start as early as still reaches it (at
     * most a box of tokens earlier: each takes a column and a gap). */
    if (last >= n - 1 && first > 0) {
        int lo = first - (rows * width + 1) / (1 + TOKENVIEW_GAP) - 1;
        first = earliest_reaching(widths, n, lo > 0 ? lo : 0, first, n - 1, rows, width);
        last = tokenview_fill(widths, n, first, rows, width);
    }
    if (last < first) /* a box too small for even the query: the query alone */
        last = first = query;
    *out = (struct tokenview_window){first, last, first > 0 || last < n - 1};
}
