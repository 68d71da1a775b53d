/* actions: every key action of the explorer, declared once.
 *
 * ACTIONS(X) expands to one X(ID, name, default keys, group, help, run) row per action. The
 * enum, the default key bindings, the `?` overlay, the README key table (`attnscope keys`) and
 * attnscope(1) are generated from this table (tig's approach), and `run` names the function of
 * explore/commands.c that carries the action out (NULL: the panel on screen moves its own
 * cursor, or the screen manager handles it), as htop binds keys to functions; test_config and
 * tests/readme.sh check that configs/keys.yaml and the README agree with it, so none can drift
 * apart. Default keys are a space-separated list in the notation of keys.yaml (see explore/keys.h):
 * a character, or a name such as Left, Enter, Tab, BackTab, PgDn, C-l, F1.
 * The actions of the group "lesson" act only in lesson mode (explore/lessonmode.h), and there their
 * keys come first: Space and the arrows step through the lesson instead of playing or moving.
 * Elsewhere those keys keep their own actions, so a key may be bound once in each layer.
 */
#ifndef ATTNSCOPE_ACTIONS_H
#define ATTNSCOPE_ACTIONS_H

#include <stdio.h>

#define ACTIONS(X)                                                                                 \
    X(LEFT, "left", "Left h", "move", "Move the cursor left", NULL)                                \
    X(RIGHT, "right", "Right l", "move", "Move the cursor right", NULL)                            \
    X(UP, "up", "Up k", "move", "Move the cursor up", NULL)                                        \
    X(DOWN, "down", "Down j", "move", "Move the cursor down", NULL)                                \
    X(PAGE_UP, "page-up", "PgUp", "move", "Scroll a page up", NULL)                                \
    X(PAGE_DOWN, "page-down", "PgDn", "move", "Scroll a page down", NULL)                          \
    X(ROW_START, "row-start", "Home", "move", "First column", act_jump)                            \
    X(ROW_END, "row-end", "End", "move", "Last column", act_jump)                                  \
    X(TOP, "top", "K", "move", "First row", act_jump)                                              \
    X(BOTTOM, "bottom", "J", "move", "Last row", act_jump)                                         \
    X(ROW_MAX, "row-max", "m", "move", "The row's largest value", act_row_max)                     \
    X(FIND, "find", "/", "move", "Find a token (type it)", act_find)                               \
    X(FIND_NEXT, "find-next", "n", "move", "Its next occurrence", act_find_next)                   \
    X(STAGE_NEXT, "stage-next", ". >", "view", "Next pipeline stage", act_stage)                   \
    X(STAGE_PREV, "stage-prev", ", <", "view", "Previous pipeline stage", act_stage)               \
    X(HEAD_NEXT, "head-next", "]", "view", "Next head", act_head)                                  \
    X(HEAD_PREV, "head-prev", "[", "view", "Previous head", act_head)                              \
    X(LAYER_NEXT, "layer-next", "}", "view", "Next layer", act_layer)                              \
    X(LAYER_PREV, "layer-prev", "{", "view", "Previous layer", act_layer)                          \
    X(ENCODER, "encoder", "E", "view", "An encoder-decoder's encoder / its decoder", act_encoder)  \
    X(ALL_HEADS, "all-heads", "a", "view", "All heads, every layer's (model view) / one head",     \
      act_all_heads)                                                                               \
    X(HEAD_MEAN, "head-mean", "A", "view", "The mean over every head / back to one head",          \
      act_head_mean)                                                                               \
    X(TOKEN_VIEW, "token-view", "v", "view",                                                       \
      "Token view: what the query looks at / the inspector", act_token_view)                       \
    X(PREDICTIONS, "predictions", "p", "view",                                                     \
      "Next-token predictions of the cursor's row / the inspector", act_predictions)               \
    X(LENS, "lens", "y", "view",                                                                   \
      "The logit lens: every layer's guess at the next token / the map", act_lens)                 \
    X(ROLLOUT, "rollout", "r", "view", "Attention rollout through the layer shown / the stage",    \
      act_rollout)                                                                                 \
    X(SCORE, "score", "S", "view", "Colour heads by a score: previous, induction, first, ...",     \
      act_score)                                                                                   \
    X(COLOR_SCALE, "color-scale", "C", "view", "Colour scale: per matrix, per row, logarithmic",   \
      act_color_scale)                                                                             \
    X(ZOOM_IN, "zoom-in", "z", "view",                                                             \
      "Zoom in (one head's map): around the cursor, to every number", act_zoom)                    \
    X(ZOOM_OUT, "zoom-out", "Z", "view",                                                           \
      "Zoom out (one head's map): blocks, down to the whole matrix", act_zoom)                     \
    X(BLOCKS, "blocks", "b", "view", "Zoomed-out blocks show their max / their mean", act_blocks)  \
    X(BASELINE, "baseline", "B", "view",                                                           \
      "Pin a baseline: later edits show \u0394 against it / unpin", act_baseline)                  \
    X(OPEN, "open", "Enter", "view", "Open the selected head large", act_open)                     \
    X(PLAY, "play", "Space", "view", "Auto-play through the stages", act_play)                     \
    X(PLAY_FASTER, "play-faster", ")", "view", "Auto-play faster", act_play_speed)                 \
    X(PLAY_SLOWER, "play-slower", "(", "view", "Auto-play slower", act_play_speed)                 \
    X(LESSON, "lesson", "i", "view", "Leave the lesson to explore freely / back to its step",      \
      act_lesson)                                                                                  \
    X(KNOB_NEXT, "knob-next", "Tab", "edit",                                                       \
      "Select a knob: seed, d_out, heads, dropout, dim, temp (the temperature)", act_knob_select)  \
    X(KNOB_PREV, "knob-prev", "BackTab", "edit", "Select the previous knob", act_knob_select)      \
    X(KNOB_UP, "knob-up", "+ =", "edit", "Increase the selected knob", act_knob_step)              \
    X(KNOB_DOWN, "knob-down", "- _", "edit", "Decrease the selected knob", act_knob_step)          \
    X(KNOB_TYPE, "knob-type", "#", "edit", "Type a value for the selected knob", act_knob_type)    \
    X(EDIT_TEXT, "edit-text", "t", "edit", "Edit the sentence", act_edit_text)                     \
    X(GENERATE, "generate", "g", "edit",                                                           \
      "Write the next token (greedy; sampled at the predictions' temperature when not 1)",         \
      act_generate)                                                                                \
    X(GENERATE_MANY, "generate-many", "G", "edit",                                                 \
      "Write N tokens, one after another (any key stops)", act_generate_many)                      \
    X(SEED, "seed", "s", "edit", "Type a new seed", act_knob_type)                                 \
    X(D_OUT, "d-out", "d", "edit", "Type a new d_out", act_knob_type)                              \
    X(HEADS, "heads", "H", "edit", "Type a new number of heads", act_knob_type)                    \
    X(DROPOUT, "dropout", "D", "edit", "Type a new dropout p", act_knob_type)                      \
    X(CAUSAL, "causal", "c", "edit", "Toggle the causal mask", act_causal)                         \
    X(PROJECTION, "projection", "P", "edit", "Cycle the projection: none, rand, linear",           \
      act_projection)                                                                              \
    X(LAYOUT, "layout", "L", "edit", "Cycle the head layout: split, wrapper", act_layout)          \
    X(MASK_MODE, "mask-mode", "M", "edit", "Cycle the mask mode: before/after softmax",            \
      act_mask_mode)                                                                               \
    X(SCALE, "scale", "x", "edit", "Scaling by \u221ad_k on/off", act_scale)                       \
    X(NORMALIZE, "normalize", "N", "edit", "Normalise rows by softmax or by their sum",            \
      act_normalize)                                                                               \
    X(TOKENIZER, "tokenizer", "T", "edit", "Cycle the tokenizer: whitespace, words, chars",        \
      act_tokenizer)                                                                               \
    X(SHIFT, "shift", "o", "edit", "Shift every position: type the first one", act_shift)          \
    X(ABLATE, "ablate", "X", "edit", "Ablate the head shown: zero, then its mean, then off",       \
      act_ablate)                                                                                  \
    X(UNDO, "undo", "u", "edit", "Undo the last edit", act_undo)                                   \
    X(REDO, "redo", "C-r", "edit", "Redo", act_redo)                                               \
    X(EXPORT, "export", "e", "file", "Export every stage as CSV", act_export)                      \
    X(SAVE, "save", "w", "file", "Save the edited scene as YAML", act_save)                        \
    X(RENDER, "render", "R", "file", "Write the view as an SVG picture", act_render)               \
    X(LESSON_NEXT, "lesson-next", "Space Right", "lesson", "The lesson's next step",               \
      act_lesson_next)                                                                             \
    X(LESSON_PREV, "lesson-prev", "Left", "lesson", "The step before (its edit undone)",           \
      act_lesson_prev)                                                                             \
    X(HELP, "help", "? F1", "other", "Show every key", NULL)                                       \
    X(REDRAW, "redraw", "C-l", "other", "Redraw the screen", NULL)                                 \
    X(QUIT, "quit", "q", "other", "Quit", act_quit)

enum action {
    ACTION_NONE = -1,
#define X(id, name, keys, group, help, run) ACTION_##id,
    ACTIONS(X)
#undef X
        ACTION_COUNT
};

struct action_info {
    const char *name;         /* as written in keys.yaml */
    const char *default_keys; /* space-separated key names */
    const char *group;        /* move, view, edit, file, lesson, other */
    const char *help;
};

extern const struct action_info action_table[ACTION_COUNT];

/* The key layers: an action of the lesson layer shadows the other layer's key in lesson mode. */
enum key_layer { KEYLAYER_BASE, KEYLAYER_LESSON, KEYLAYER_COUNT };
enum key_layer action_key_layer(enum action a);

/* The default key table in Markdown, grouped; the README's key table is this output
 * (`attnscope keys`), and a test keeps the two equal. */
void actions_print_markdown(FILE *out);

#endif
