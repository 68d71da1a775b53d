/* help panel: the `?` overlay listing every action and its keys, generated from the action
 * table and the live keymap, and the configuration's problems. Any key but a scroll closes it. */
#ifndef ATTNSCOPE_UI_HELP_H
#define ATTNSCOPE_UI_HELP_H

#include <stdbool.h>

#include "ui/panel.h"

struct help_panel {
    struct panel base;
    bool open;
    int scroll; /* first line shown when it is taller than the screen */
};

void help_panel_init(struct help_panel *hp);

#endif
