/* commands: what the explorer's actions and prompts do, without a terminal.
 *
 * A front end maps keys to actions, lets its panels take the ones that are theirs (moving the
 * cursor in the map, picking a tile), and hands every other action to command_run. When an
 * action needs a line of text (a sentence, a number, a file name, a yes or no) the command
 * asks for it through struct ask; the front end shows a prompt and gives the answer back to
 * command_answer. Nothing here calls back into the front end.
 */
#ifndef ATTNSCOPE_EXPLORE_COMMANDS_H
#define ATTNSCOPE_EXPLORE_COMMANDS_H

#include <stdbool.h>

#include "explore/actions.h"
#include "explore/app.h"
#include "explore/outcome.h"

/* What a prompt asks for; decides what its answer does. */
enum prompt_kind {
    PROMPT_NONE,
    PROMPT_TEXT,           /* the sentence (of a pair: the first, then PROMPT_TEXT_PAIR) */
    PROMPT_TEXT_PAIR,      /* a pair's second sentence, the first in app->prompt.sentence */
    PROMPT_KNOB,           /* a value for app->prompt.knob */
    PROMPT_OFFSET,         /* the first token's position */
    PROMPT_GENERATE,       /* how many tokens G writes */
    PROMPT_FIND,           /* a token to find */
    PROMPT_EXPORT,         /* a folder to export to */
    PROMPT_SAVE,           /* a file to save the scene as */
    PROMPT_CONFIRM_SAVE,   /* y/n: overwrite app->prompt.path */
    PROMPT_CONFIRM_EXPORT, /* y/n: replace the export in app->prompt.path */
    PROMPT_CONFIRM_QUIT,   /* y/n: drop unsaved edits */
    PROMPT_FIT_TEXT        /* f/l/e: app->prompt.text is longer than the model reads */
};

static inline bool prompt_is_question(enum prompt_kind k)
{
    return k == PROMPT_CONFIRM_SAVE || k == PROMPT_CONFIRM_EXPORT || k == PROMPT_CONFIRM_QUIT ||
           k == PROMPT_FIT_TEXT;
}

/* An answer a question takes: its key and what it does, for the prompt and the key hints. */
struct prompt_answer {
    char key;         /* 0 ends the list: what any other key does */
    const char *what; /* "yes", "keep the first" */
};
/* The answers of question k (NULL for a prompt that is not one): 'y' for the y/n questions. */
const struct prompt_answer *prompt_answers(enum prompt_kind k);

#define ASK_LABEL_MAX 1200

/* A prompt a command wants opened. */
struct ask {
    enum prompt_kind kind; /* PROMPT_NONE: nothing to ask */
    char label[ASK_LABEL_MAX];
    char *initial; /* the text it opens with, or NULL; ask_clear frees it */
};

void ask_clear(struct ask *ask);

/* Carries out act on a (stages, heads, knobs, edits, undo, export, save, quit, play). Returns
 * enum outcome flags; ask (cleared first) says whether to open a prompt. */
int command_run(struct app *a, enum action act, struct ask *ask);
/* The text typed into a prompt of kind (for a question: "y" when answered yes). May ask again
 * (an existing file: overwrite it?). Returns enum outcome flags. */
int command_answer(struct app *a, enum prompt_kind kind, const char *text, struct ask *ask);
/* The prompt was dismissed without an answer. */
int command_cancel(struct app *a, enum prompt_kind kind);
/* z and Z on the heatmap: one zoom level in (dir < 0) or out (dir > 0) on a heatmap with room
 * for down x across cells zoomed out (zoom.h); the message line says what a cell now stands for,
 * in the legend's words, or that it is at either end. Returns enum outcome flags. */
int command_zoom(struct app *a, int dir, int down, int across);
/* A paste (the terminal's bracketed paste) is text, never keys: a pasted e would export and a
 * line end accept a prompt. With a prompt open the front end inserts it there (a question takes
 * none); with none open, command_paste asks for the sentence editor t opens, empty, for the
 * paste to go into: nothing changes until Enter, Esc drops it. Returns enum outcome flags. */
int command_paste(struct app *a, struct ask *ask);
/* C-c at rest (nothing is computing): quits when nothing would be lost, else asks as q does
 * ("quit without saving your edits?"), and the front end quits on a second C-c. Returns enum
 * outcome flags. */
int command_interrupt(struct app *a, struct ask *ask);
/* One step of auto-play: the next stage that does something; stops at the output. */
int command_play_tick(struct app *a);

#endif
