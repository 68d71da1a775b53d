/* range: cached colour ranges (see range.h). */
#include "explore/range.h"

#include <math.h>

void range_of(struct attn_mat_view v, float *lo, float *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < v.rows; i++)
        for (int j = 0; j < v.cols; j++) {
            float x = v.data[(size_t)i * v.stride + j];
            if (isfinite(x)) {
                *lo = x < *lo ? x : *lo;
                *hi = x > *hi ? x : *hi;
            }
        }
    if (*lo > *hi)
        *lo = *hi = 0.0f;
}

void range_get(struct range_cache *c, const struct app *a, int head, float *lo, float *hi)
{
    if (!(c->valid && c->generation == a->generation && c->stage == (int)a->stage &&
          c->head == head)) {
        int h0 = head < 0 ? 0 : head;
        int h1 = head >= 0 || !attn_stage_is_per_head(a->stage) ? h0 + 1 : a->model.heads;
        float l = INFINITY, u = -INFINITY;
        for (int h = h0; h < h1; h++) {
            float hl, hu;
            range_of(app_view(a, a->stage, h), &hl, &hu);
            l = hl < l ? hl : l;
            u = hu > u ? hu : u;
        }
        c->generation = a->generation;
        c->stage = (int)a->stage;
        c->head = head;
        c->lo = l;
        c->hi = u;
        c->valid = true;
    }
    *lo = c->lo;
    *hi = c->hi;
}
