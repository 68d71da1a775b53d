/* panel: one rectangle of the screen with its own draw and key handling (htop's model).
 *
 * The screen manager (ui.c) owns the panels, gives each an area on resize, routes actions to
 * the panel that wants them, and redraws only the panels marked dirty.
 */
#ifndef ATTNSCOPE_PANEL_H
#define ATTNSCOPE_PANEL_H

#include <stdbool.h>

#include "explore/actions.h"

struct ui;

struct rect {
    int y, x, h, w;
};

/* What a handler did, so the manager knows what to redraw. */
enum handled {
    HANDLED_NO = 0,
    HANDLED_YES = 1 << 0,    /* consumed; nothing visible changed */
    HANDLED_CURSOR = 1 << 1, /* the cursor or view moved: redraw views, no recompute */
    HANDLED_SCENE = 1 << 2,  /* the scene changed and was recomputed: redraw everything */
    HANDLED_QUIT = 1 << 3,
    HANDLED_MOVE = 1 << 4, /* only the cursor moved: redraw the map, inspector and status */
};

struct panel {
    const char *name;
    /* Draws the panel into its area of stdscr (never refreshes: the manager batches). */
    void (*draw)(struct panel *p, struct ui *ui);
    /* Handles an action; returns enum handled flags. May be NULL. */
    int (*handle_key)(struct panel *p, struct ui *ui, enum action a);
    /* Handles a click or wheel at screen (y, x) inside the area; may be NULL. */
    int (*handle_mouse)(struct panel *p, struct ui *ui, int y, int x, unsigned long buttons);
    struct rect area; /* set by the manager on every layout */
    int scroll;       /* first line shown, for panels taller than their area */
    bool visible;
    bool dirty;
};

static inline bool rect_contains(struct rect r, int y, int x)
{
    return y >= r.y && y < r.y + r.h && x >= r.x && x < r.x + r.w;
}

#endif
