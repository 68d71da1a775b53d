/* range: the colour range of what a view shows, cached.
 *
 * The range of an n x n stage takes a scan of every value; cursor moves must never pay it
 * again. A view keeps a struct range_cache and asks range_get, which scans only when the
 * result (app->result.generation), the stage or the head changed since the last call.
 */
#ifndef ATTNSCOPE_EXPLORE_RANGE_H
#define ATTNSCOPE_EXPLORE_RANGE_H

#include <stdbool.h>

#include "engine/attention.h"
#include "explore/app.h"

#define RANGE_ROLLOUT (-1000) /* range_get's head for the attention rollout of the layer */

struct range_cache {
    unsigned long generation;
    int layer, stage, head; /* head -1: every head of the layer (the all-heads view's shared
                               scale); -2: every head of every layer (the model view); -3: the
                               mean over the heads (app_shown_view's, made first);
                               -4 - h: head h's Δ against the baseline (the same);
                               RANGE_ROLLOUT: the rollout through the layer (app.h) */
    int ready;              /* the layers computed when it was made (a compute in the background) */
    float lo, hi;
    bool valid;
};

/* The range of the current stage for one head, every head (-1) or every layer's (-2). */
void range_get(struct range_cache *c, const struct app *a, int head, float *lo, float *hi);

#endif
