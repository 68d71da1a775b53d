/* ui: the explorer's screen manager and event loop.
 *
 * ui_main() is what `attnscope [SCENE]` runs. The session functions below let tests drive the
 * very same code on a virtual terminal (newterm on a pipe): feed keys, draw, dump the screen.
 * The manager owns the panels and lays them out; what actions do is explore/commands'.
 */
#ifndef ATTNSCOPE_UI_UI_H
#define ATTNSCOPE_UI_UI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <wchar.h>

#include "common/diag.h"
#include "explore/app.h"
#include "explore/keys.h"
#include "ui/grid.h"
#include "ui/heatmap.h"
#include "ui/help.h"
#include "ui/lens.h"
#include "ui/panel.h"
#include "ui/status.h"
#include "ui/tokens.h"
#include "ui/theme.h"

#define UI_MIN_COLS  64
#define UI_MIN_LINES 18

enum panel_id {
    PANEL_HEADER,
    PANEL_STAGEBAR,
    PANEL_HEATMAP,
    PANEL_GRID,
    PANEL_INSPECTOR,
    PANEL_TOKENS,
    PANEL_STATUS,
    PANEL_HELP,
    PANEL_CAPTION,
    PANEL_LENS,
    PANEL_PREDICTIONS,
    PANEL_PENDING_MAP,  /* last: asked first for the map's place and the inspector's */
    PANEL_PENDING_SIDE, /* while what they show is computing (ui/pending.h) */
    PANEL_COUNT
};

struct ui {
    struct app *app; /* explore/app.h: its parts through the accessors */
    struct theme theme;
    struct keymap keymap;
    char config_error[DIAG_MSG_MAX + DIAG_FILE_MAX + 32]; /* first config problem, if any */
    struct diag_list config_problems; /* all of them, listed again in the help overlay */
    struct frame frame;               /* what the panels see of all this */
    int lines, cols;
    bool too_small;
    bool tokens_laid_out; /* the layout was made for the token view
                             (app_view_state(&app)->token_view) */

    /* The panels; panels[] points at each one's struct panel, in enum panel_id order. */
    struct panel header, stagebar, inspector, caption;
    struct panel predictions;               /* the predictions (p), where the inspector is */
    struct panel pending_map, pending_side; /* a layer still computing, in either place */
    double pending_drawn;                   /* when the compute's progress was last drawn (ms) */
    double play_due; /* auto-play's next stage (ms), while the loop wakes for a compute too */
    struct heatmap_panel heatmap;
    struct lens_panel lens; /* the logit lens (y), where the map is */
    struct grid_panel grid;
    struct tokens_panel tokens; /* the token view (v), where the inspector is */
    struct status_panel status;
    struct help_panel help;
    /* A compute or an export over PROGRESS_QUIET_MS (one estimated past it: at once) draws its
     * progress on the message line; what it is doing is reset at every key. */
    struct {
        bool active;      /* a compute or an export was asked for by this key */
        double t0, drawn; /* when it was asked for and the bar was last drawn (ms) */
        bool shown;       /* the bar is on screen: q, Esc and C-c typed now are meant for it */
        volatile sig_atomic_t stop; /* q, Esc or C-c seen: the engine's stop flag */
        int stop_signal;            /* SIGINT when C-c stopped it */
        int refused;                /* stop keys this compute could not act on */
        int refused_interrupts;     /* of them C-c: the second quits once it ends */
        const char *refused_key;    /* the last of them, as the message line names it */
    } busy;
    /* The status a quit exits with: 0 for q (or y), 130 for C-c. */
    int exit_status;
    struct panel *panels[PANEL_COUNT];
};

/* Runs the explorer on scene (taken: *scene is left empty), loaded from scene_path (NULL: the
 * built-in scene; a model's folder), which w and R write beside. Returns the exit status. */
/* baseline (NULL: none; taken): another scene pinned as the baseline at the start (--baseline),
 * named baseline_name in the Δ heading. */
int ui_main(struct attn_scene *scene, const char *scene_path, struct attn_scene *baseline,
            const char *baseline_name);

/* Whether ui_open reads the user's keys.yaml and colors.yaml (the default) or only the shipped
 * ones: a screen that checks a lesson is the one a workshop gets out of the box. */
void ui_use_user_configs(bool on);

/* Whether ui_open computes in the background (app_new_background: ui_main's, and bench --ui's
 * measures of a compute under way) or on the caller's thread (the default: the golden screens,
 * a lesson's check). */
void ui_use_background(bool on);
/* True while the loop has work between keys: a compute running, or model-view thumbnails left
 * to pool (grid_panel.unfinished). */
bool ui_ticking(const struct ui *ui);
/* Between frames while ui_ticking: polls the compute (app_poll) and marks what changed, the
 * progress at most every 100 ms, and the thumbnails' next turn. Returns true when there is
 * something to draw. */
bool ui_compute_tick(struct ui *ui);

/* Modes, colours, mouse and extra key sequences of a fresh curses screen (ui_main and tests). */
void ui_setup_terminal(void);

/* A virtual terminal of cols x lines (xterm-256color on /dev/null), made the current screen and
 * set up as ui_main's: what a lesson's check and bench --ui run the explorer on. */
struct ui_vterm {
    FILE *in, *sink;
    struct screen *scr; /* curses' SCREEN */
};
int ui_vterm_open(struct ui_vterm *t, int cols, int lines, struct diag *err);
/* Ends it and frees it (after ui_delete of what ran on it). */
void ui_vterm_close(struct ui_vterm *t);

/* Session API, shared by ui_main and the golden-screen tests. ui_open takes ownership of s.
 * The caller has set up curses (initscr or newterm). */
int ui_open(struct ui *ui, struct attn_scene *s, const char *path, struct diag *err);
void ui_close(struct ui *ui);
/* How ui_new's first compute was stopped, when that is why it failed. */
struct ui_stop {
    bool stopped; /* q, Esc, C-c or a signal stopped it */
    int signal;   /* SIGINT when C-c did, else 0 */
};
/* ui_open on a ui of its own on the heap, as ui_main, the bench and check's lesson screen run
 * it: s is taken in every case. NULL on failure, with err and s freed; stop (may be NULL) then
 * says whether the user stopped the first compute. */
struct ui *ui_new(struct attn_scene *s, const char *path, struct ui_stop *stop, struct diag *err);
/* ui_close, and ui freed (NULL: nothing). */
void ui_delete(struct ui *ui);
/* Handles one key as returned by wget_wch (is_code: KEY_CODE_YES). Returns enum outcome. C-c
 * (byte 3, as a pipe or a terminal without ISIG sends it) is ui_interrupt. */
int ui_key(struct ui *ui, wint_t key, bool is_code);
/* C-c (SIGINT) at rest: quits when nothing would be lost (ui->exit_status 130), else closes any
 * prompt and asks as q does; a second C-c, the question open, quits. Returns enum outcome. */
int ui_interrupt(struct ui *ui);
/* One auto-play tick (ui_main's timer). Returns enum outcome. */
int ui_play_tick(struct ui *ui);
/* Marks the panels an outcome made stale. */
void ui_mark(struct ui *ui, int outcome);
/* Re-lays out after a size change (reads LINES/COLS). */
void ui_resize(struct ui *ui);
/* Draws dirty panels and updates the terminal. */
void ui_draw(struct ui *ui);
/* Writes the screen for golden screens: its text (UTF-8, trailing blanks trimmed), then every
 * cell's look ("-- attributes") and what each look is ("-- legend"), see dump.c. */
void ui_dump(const struct ui *ui, FILE *out);
/* Marks every panel dirty. */
void ui_invalidate(struct ui *ui);

#endif
