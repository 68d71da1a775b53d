/* header panel: the scene's title, its variant in words, sizes and the editable knobs. */
#ifndef ATTNSCOPE_UI_HEADER_H
#define ATTNSCOPE_UI_HEADER_H

#include "ui/panel.h"

void header_panel_init(struct panel *p);

#endif
