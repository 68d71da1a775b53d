/* stagebar panel: every pipeline stage, the current one highlighted; a click picks one. */
#ifndef ATTNSCOPE_UI_STAGEBAR_H
#define ATTNSCOPE_UI_STAGEBAR_H

#include "ui/panel.h"

void stagebar_panel_init(struct panel *p);

#endif
