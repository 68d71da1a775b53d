/* edit: an edit to a scene, as data: what a key of the explorer or a lesson step changes.
 *
 * The rules of making one are written once, in engine/scene_edit.c (attn_scene_check_edit,
 * attn_scene_apply_edit in scene.h): the explorer's keys (explore/app.c), a lesson step played
 * in the explorer (explore/lessonmode.c) and `check` playing a lesson from its file (scenefile) all
 * go through them, each adding only its own concerns: the explorer its undo step and message
 * line, check its file:line:col.
 */
#ifndef ATTNSCOPE_EDIT_H
#define ATTNSCOPE_EDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"

/* Every edit: X(ID, the scene key a lesson step writes it with, or "" when a lesson cannot).
 * The lesson's kinds come first, in the order of a step's keys (engine/lesson.h). */
#define ATTN_EDITS(X)                                                                              \
    X(NONE, "")                                                                                    \
    X(CAUSAL, "causal")                                                                            \
    X(HEADS, "heads")                                                                              \
    X(D_OUT, "d_out")                                                                              \
    X(DROPOUT, "dropout")                                                                          \
    X(SEED, "seed")                                                                                \
    X(TEXT, "text")                                                                                \
    X(SCALE, "scale")                                                                              \
    X(MASK_MODE, "mask_mode")                                                                      \
    X(NORMALIZE, "normalize")                                                                      \
    X(LAYOUT, "head_layout")                                                                       \
    X(OFFSET, "offset")                                                                            \
    X(ABLATE, "ablate")     /* one head's ablation: zero, mean or off (X in the explorer) */       \
    X(GENERATE, "generate") /* greedy tokens appended (g in the explorer) */                       \
    X(DIM, "")              /* the width of drawn embeddings */                                    \
    X(SHAPE, "")            /* projection, layout, d_out, heads and qkv_bias at once (P, L) */     \
    X(TOKENIZER, "")        /* the sentence again under another built-in tokenizer (T) */

enum attn_edit_kind {
#define X(id, key) EDIT_##id,
    ATTN_EDITS(X)
#undef X
        EDIT_COUNT
};
/* The most tokens one generate edit writes: a lesson shows them arrive, it does not write pages. */
#define ATTN_EDIT_GENERATE_MAX 64

/* The kinds a lesson step may make: NONE .. GENERATE. */
#define EDIT_LESSON_COUNT (EDIT_GENERATE + 1)

/* One edit: its kind and the value of what it sets; the enums are scene.h's. */
struct attn_edit {
    enum attn_edit_kind kind;
    bool causal;
    int heads, d_out; /* HEADS, D_OUT, SHAPE; DIM: d_out too when above 0 */
    int dim;          /* DIM */
    double dropout;
    uint64_t seed;
    char *text;            /* TEXT, TOKENIZER: the sentence (the edit's own copy in a lesson) */
    const char *text_pair; /* TEXT: a pair's second sentence (BERT's text: [A, B]); NULL: the
                              scene's stays, "": none, one sentence */
    bool source;           /* TEXT: an encoder-decoder's source (its encoder's sentence), not
                              the target */
    int tokenizer;         /* TOKENIZER: enum attn_tokenizer */
    int scale;             /* enum attn_scale_kind: SCALE_SQRT_DK, SCALE_NONE or SCALE_DIVISOR */
    double scale_divisor;  /* SCALE_DIVISOR's */
    int mask_mode;         /* enum attn_mask_mode */
    int normalize;         /* enum attn_normalize */
    int layout;            /* LAYOUT, SHAPE: enum attn_head_layout */
    int offset;            /* the first token's position */
    int projection;        /* SHAPE: enum attn_projection */
    bool qkv_bias;         /* SHAPE */
    int layer, head;       /* ABLATE: the head */
    int head_mode;         /* ABLATE: enum attn_head_mode, HEAD_ZERO or HEAD_MEAN, HEAD_KEEP: off */
    int generate;          /* GENERATE: how many tokens, each the model's most likely */
};

/* What an edit took along besides what it set, for the caller to say. */
struct attn_edit_effects {
    bool weights_dropped;  /* explicit weights fit the old shape or seed only: drawn now */
    unsigned seeds_moved;  /* SEED: the part seeds that followed (enum attn_seed_part bits) */
    unsigned seeds_kept;   /* SEED: the parts with a seed of their own that stayed */
    bool positions_grew;   /* TEXT: a drawn position table grew to the sentence */
    int ablations_dropped; /* HEADS, SHAPE: ablated heads that no longer exist, taken off */
};

/* "causal", "heads", ...: the scene key of a lesson's edit; "" for the others. */
const char *attn_edit_key(enum attn_edit_kind k);

#endif
