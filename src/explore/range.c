/* range: cached colour ranges (see range.h). */
#include "explore/range.h"
#include "explore/appstate.h"

#include <math.h>

void range_get(struct range_cache *c, const struct app *a, int head, float *lo, float *hi)
{
    struct app_progress pr;
    app_compute_progress(a, &pr);
    if (!(c->valid && c->generation == a->result.generation && c->stage == (int)a->view.stage &&
          c->head == head && c->layer == a->view.layer && c->ready == pr.ready)) {
        c->ready = pr.ready;
        if (head == RANGE_ROLLOUT) { /* as app_shown_view made it, for this result and layer */
            struct attn_mat_view r =
                interp_rollout_kept(&a->cache.interp, a->result.generation, a->view.layer);
            zoom_range_of(r, &c->lo, &c->hi);
            c->generation = a->result.generation;
            c->layer = a->view.layer;
            c->stage = (int)a->view.stage;
            c->head = head;
            c->valid = r.data != NULL;
            *lo = c->lo;
            *hi = c->hi;
            return;
        }
        if (head == -3 ||
            (head <= -4 && head > RANGE_ROLLOUT)) { /* the mean over the heads (-3) or head -4 -
                             key's Δ against the baseline, as app_shown_view made it */
            struct attn_mat_view v = app_view(a, a->view.stage, 0);
            zoom_range_of(
                (struct attn_mat_view){head == -3 ? a->cache.mean.values : a->cache.delta.values,
                                       v.rows, v.cols, v.cols},
                &c->lo, &c->hi);
            c->generation = a->result.generation;
            c->layer = a->view.layer;
            c->stage = (int)a->view.stage;
            c->head = head;
            c->valid = true;
            *lo = c->lo;
            *hi = c->hi;
            return;
        }
        int h0 = head < 0 ? 0 : head;
        int h1 = head >= 0 || !attn_stage_is_per_head(a->view.stage) ? h0 + 1 : app_model(a)->heads;
        int l0 = head == -2 ? 0 : a->view.layer,
            l1 = head == -2 ? app_net(a)->layers : a->view.layer + 1;
        float l = INFINITY, u = -INFINITY;
        for (int L = l0; L < l1; L++) {
            if (!attn_stage_present(&app_net(a)->model[L], a->view.stage) ||
                !app_layer_ready(a, L)) /* the model view's scale: the layers done so far */
                continue;
            for (int h = h0; h < h1; h++) {
                float hl, hu;
                zoom_range_of(app_view_at(a, L, a->view.stage, h), &hl, &hu);
                l = hl < l ? hl : l;
                u = hu > u ? hu : u;
            }
        }
        if (l > u)
            l = u = 0.0f;
        c->generation = a->result.generation;
        c->layer = a->view.layer;
        c->stage = (int)a->view.stage;
        c->head = head;
        c->lo = l;
        c->hi = u;
        c->valid = true;
    }
    *lo = c->lo;
    *hi = c->hi;
}
