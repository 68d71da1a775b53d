/* appstate: struct app's definition, for src/explore alone (tests/include_graph.py checks that
 * nothing else includes it). The front ends (src/ui, src/cli) see an opaque struct app and read
 * its parts through app.h's accessors, so no member of it is part of their API.
 */
#ifndef ATTNSCOPE_EXPLORE_APPSTATE_H
#define ATTNSCOPE_EXPLORE_APPSTATE_H

#include "common/diag.h"
#include "common/progress.h"
#include "engine/scene.h"
#include "explore/appparts.h"

/* The explorer's state, one part per job. */
struct app {
    struct app_doc doc;
    struct app_result result;
    struct app_caches cache;
    struct app_view view;
    struct app_baseline base;
    struct app_lesson lesson;
    struct app_prompt prompt;
    struct app_generate gen;
    struct app_status status;
    /* The front end's keys (explore/keys.h), so a message names the key a user's keys.yaml
       binds ("i explores freely"); NULL: the default keys. */
    const struct keymap *keymap;
};

/* Takes ownership of s (which must have passed attn_scene_check). Returns 0 or fills err.
 * progress hears of every compute: step 0 as soon as it is asked for, before its parameters are
 * resolved and its buffers made (seconds, for a long one: a front end shows its bar at once,
 * with compute_seconds and stoppable set), step 0 again when the forward pass starts, then
 * one step a head. */
int app_init(struct app *a, struct attn_scene *s, const char *path,
             const struct progress_sink *progress, struct diag *err);
void app_free(struct app *a);

#endif
