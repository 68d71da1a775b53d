/* title: the scene's title kept true after edits, for the header and pictures.
 *
 * A scene file's title was written for the scene as written ("MultiHeadAttention (split heads,
 * out_proj, seed 123)", "Your journey starts with one step: multi-head attention"). After an
 * edit the values it names may no longer hold. The parts it names that an edit can change in
 * place are written anew: the sentence (when the title quotes it), "seed N", "d_out N", "N
 * heads" (or "two heads"), "dropout P", "shifted by N". Any other change the title cannot be
 * trusted about (the mask, the projection, the layout, the scaling, the tokenizer, a sentence
 * the title does not quote but may be about, ...) replaces it: the title becomes the scene's own
 * description (attn_scene_describe), and the old title is said to be where the scene came from.
 * Nothing is ever just marked "edited".
 */
#ifndef ATTNSCOPE_EXPLORE_TITLE_H
#define ATTNSCOPE_EXPLORE_TITLE_H

#include <stddef.h>

#include "engine/scene.h"

enum title_kind {
    TITLE_AS_GIVEN,  /* the title as written (or the description, without one) */
    TITLE_REWRITTEN, /* the title with the values it names made the scene's */
    TITLE_REPLACED,  /* the description: the title no longer fits */
};

/* The title of s, whose title was written for `written` (the scene as opened, saved, or as a
 * lesson step made it). out gets the title to show; from (when TITLE_REPLACED) gets "edited
 * from “<the old title>”", else "". */
enum title_kind title_for(char *out, size_t size, char *from, size_t from_size,
                          const struct attn_scene *s, const struct attn_scene *written);

#endif
