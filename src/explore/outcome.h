/* outcome: what handling one input did, so a front end knows what to draw again.
 *
 * Flags, combined with |. Panels return them, and so do the explorer's commands.
 */
#ifndef ATTNSCOPE_EXPLORE_OUTCOME_H
#define ATTNSCOPE_EXPLORE_OUTCOME_H

enum outcome {
    OUTCOME_IGNORED = 0,            /* not for this handler: try the next one */
    OUTCOME_HANDLED = 1 << 0,       /* consumed; nothing visible changed */
    OUTCOME_CURSOR_MOVED = 1 << 1,  /* only the cursor moved: the map, inspector and status */
    OUTCOME_VIEW_CHANGED = 1 << 2,  /* stage, head, prompt, message: every panel, no recompute */
    OUTCOME_SCENE_CHANGED = 1 << 3, /* the scene was edited and recomputed: lay out again */
    OUTCOME_QUIT = 1 << 4,
};

#endif
