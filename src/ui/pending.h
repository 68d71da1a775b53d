/* pending panel: what takes the map's place, or the inspector's, while the layers it would show
 * are still computing (app_new_background): which layer, how far the compute is, and that every
 * key works meanwhile. One panel type, one instance per slot. */
#ifndef ATTNSCOPE_UI_PENDING_H
#define ATTNSCOPE_UI_PENDING_H

#include "ui/panel.h"

/* slot: SLOT_MAP or SLOT_SIDE. */
void pending_panel_init(struct panel *p, enum panel_slot slot);
/* True when the view in slot's place reads a layer not yet computed (what the pending panel
 * then shows instead). The model view is never pending as a whole: it draws each layer as it
 * comes. */
bool pending_wanted_map(const struct frame *f);
bool pending_wanted_side(const struct frame *f);

#endif
