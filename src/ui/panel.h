/* panel: one rectangle of the screen with its own state, drawing and input (htop's model).
 *
 * Each panel is a struct that starts with a struct panel, holding whatever the panel alone
 * needs (scroll offsets, tiles, colour-range caches, the line editor). The screen manager
 * (ui.c) owns them, gives each its area through resize, routes actions and clicks to the one
 * that wants them, and redraws only the ones marked dirty. A panel sees the explorer through
 * struct frame, never the manager itself.
 */
#ifndef ATTNSCOPE_UI_PANEL_H
#define ATTNSCOPE_UI_PANEL_H

#include <stdbool.h>

#include "common/diag.h"
#include "explore/actions.h"
#include "explore/app.h"
#include "explore/keys.h"
#include "explore/outcome.h"
#include "ui/draw.h"
#include "ui/theme.h"

/* What every panel may read (and, for app, change). */
struct frame {
    struct app *app;
    const struct theme *theme;
    const struct keymap *keymap;
    const struct diag_list *config_problems; /* listed in the help overlay */
    const char *config_error;                /* the first one, for the message line, or "" */
    int lines, cols;                         /* the screen's size */
};

/* Where a panel goes. The map's place and the inspector's are each taken by one panel at a
 * time: the one whose wanted() says so (the panels later in enum panel_id asked first), else the
 * slot's panel without wanted(). The screen manager lays out, shows and routes by slot, so a
 * panel that takes one of them needs no code of its own there. */
enum panel_slot {
    SLOT_OWN,  /* a place of its own, laid out by the screen manager (header, status, ...) */
    SLOT_MAP,  /* the map's place: heatmap, all heads, the lens */
    SLOT_SIDE, /* the inspector's place: inspector, token view, predictions */
};

struct panel {
    const char *name;
    enum panel_slot slot;
    /* SLOT_MAP, SLOT_SIDE: whether the view asks for this panel now; NULL: the slot's own,
       shown when no other panel wants the place. */
    bool (*wanted)(const struct frame *f);
    bool follows_cursor; /* drawn again on every cursor move */
    /* Draws the panel into its area of stdscr (never refreshes: the manager batches). */
    void (*draw)(struct panel *p, struct frame *f);
    /* Handles an action; returns enum outcome flags (OUTCOME_IGNORED: not this panel's). */
    int (*handle_key)(struct panel *p, struct frame *f, enum action a);
    /* Handles a click or wheel at screen (y, x) inside the area; may be NULL. */
    int (*handle_mouse)(struct panel *p, struct frame *f, int y, int x, unsigned long buttons);
    /* Takes a new area (a terminal resize, a new layout); NULL: only area is set. */
    void (*resize)(struct panel *p, struct frame *f, struct rect area);
    struct rect area;
    bool visible;
    bool dirty;
};

/* Gives p its area, through its resize hook when it has one. */
static inline void panel_resize(struct panel *p, struct frame *f, struct rect area)
{
    if (p->resize)
        p->resize(p, f, area);
    else
        p->area = area;
    p->dirty = true;
}

#endif
