/* status panel: the message line (the line editor when a prompt is open, else errors and
 * notes) and the line of the most useful keys, read from the keymap so a rebinding shows. It
 * owns the line editor. */
#ifndef ATTNSCOPE_UI_STATUS_H
#define ATTNSCOPE_UI_STATUS_H

#include <stddef.h>

#include "explore/keys.h"
#include "ui/panel.h"
#include "ui/prompt.h"

struct status_panel {
    struct panel base;
    struct prompt prompt;
};

void status_panel_init(struct status_panel *sp);
/* The first key bound to an action, as the status line shows it (arrows as glyphs). */
void key_display(char *out, size_t size, const struct keymap *km, enum action a);

#endif
