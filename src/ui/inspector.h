/* inspector panel: the selected cell explained in real numbers (explore/inspect's text), wrapped.
 */
#ifndef ATTNSCOPE_UI_INSPECTOR_H
#define ATTNSCOPE_UI_INSPECTOR_H

#include "ui/panel.h"

void inspector_panel_init(struct panel *p);

#endif
