/* ui: the explorer's screen manager and event loop.
 *
 * ui_main() is what `attnscope [SCENE]` runs. The session functions below let tests drive the
 * very same code on a virtual terminal (newterm on a pipe): feed keys, draw, dump the screen.
 */
#ifndef ATTNSCOPE_UI_H
#define ATTNSCOPE_UI_H

#include <stdbool.h>
#include <stdio.h>
#include <wchar.h>

#include "common/diag.h"
#include "explore/app.h"
#include "explore/keys.h"
#include "ui/panel.h"
#include "ui/theme.h"

#define UI_MIN_COLS  64
#define UI_MIN_LINES 18
#define UI_PLAY_MS   900 /* auto-play: one stage per tick */

enum panel_id {
    PANEL_HEADER,
    PANEL_STAGEBAR,
    PANEL_HEATMAP,
    PANEL_GRID,
    PANEL_INSPECTOR,
    PANEL_STATUS,
    PANEL_HELP,
    PANEL_COUNT
};

/* What the prompt line is asking for; decides what Enter does with the text. */
enum prompt_kind {
    PROMPT_NONE,
    PROMPT_TEXT,
    PROMPT_KNOB,
    PROMPT_EXPORT,
    PROMPT_SAVE,
    PROMPT_CONFIRM_SAVE,
    PROMPT_CONFIRM_EXPORT,
    PROMPT_CONFIRM_QUIT
};

#define PROMPT_MAX 16384 /* characters the line editor holds: a 1024-token sentence fits */

struct ui {
    struct app app;
    struct theme theme;
    struct keymap keymap;
    struct panel panels[PANEL_COUNT];
    int lines, cols;
    bool too_small;
    bool help_open;
    char config_error[DIAG_MSG_MAX + DIAG_FILE_MAX + 32]; /* first config problem, if any */
    struct diag_list config_problems; /* all of them, listed again in the help overlay */
    bool quit;                        /* a confirmed quit */

    /* The one-line editor at the bottom. */
    enum prompt_kind prompt;
    enum knob prompt_knob;
    wchar_t prompt_buf[PROMPT_MAX];
    int prompt_len, prompt_cur;
    int prompt_y, prompt_x; /* where the terminal cursor goes while the prompt is open */
    char prompt_initial[PROMPT_MAX * 4]; /* the text the prompt opened with */
    char prompt_label[1200];
    char pending_path[1024]; /* path awaiting an overwrite confirmation */

    /* View state that is not the app's: scroll offsets and the grid layout. */
    int top_row, left_col;
    int grid_tile_w, grid_tile_h, grid_per_row;
    int grid_top; /* first row of tiles shown */

    /* The colour range of the matrix on screen, kept until the result, stage or head changes:
     * cursor moves never rescan n x n values. */
    struct {
        unsigned long generation;
        int stage, head; /* head -1: every head (the grid's shared scale) */
        float lo, hi;
        bool valid;
    } range;
};

/* Runs the explorer on a scene file (NULL: the built-in scene). Returns the exit status. */
int ui_main(const char *scene_path);

/* Modes, colours, mouse and extra key sequences of a fresh curses screen (ui_main and tests). */
void ui_setup_terminal(void);

/* Session API, shared by ui_main and the golden-screen tests. ui_open takes ownership of s.
 * The caller has set up curses (initscr or newterm). */
int ui_open(struct ui *ui, struct scene *s, const char *path, struct diag *err);
void ui_close(struct ui *ui);
/* Handles one key as returned by wget_wch (is_code: KEY_CODE_YES). Returns enum handled. */
int ui_key(struct ui *ui, wint_t key, bool is_code);
/* Marks the panels a handled event (enum handled) made stale. */
void ui_mark(struct ui *ui, int handled);
/* Re-lays out after a size change (reads LINES/COLS). */
void ui_resize(struct ui *ui);
/* Draws dirty panels and updates the terminal. */
void ui_draw(struct ui *ui);
/* Writes the screen for golden screens (dump.c): its text (UTF-8, trailing blanks trimmed), then
 * `-- attributes`, one letter per cell naming its look ('.' plain), then `-- legend`, a line per
 * letter: the theme role or scale step it is, its attribute flags and its pair's colours. */
void ui_dump(const struct ui *ui, FILE *out);
/* Marks every panel dirty. */
void ui_invalidate(struct ui *ui);

/* Where the shipped configs live: $ATTNSCOPE_CONFIGS_DIR, the source tree, or datadir. */
const char *ui_configs_dir(void);

/* Columns the heatmap needs to show n tokens with 4 decimals and the row sums. */
int heatmap_min_width(const struct ui *ui);
/* Finite min and max of a matrix (heatmap.c). */
void heatmap_range(struct mat_view v, float *lo, float *hi);
/* The colour range of the current stage for one head, or for every head (head -1), cached. */
void ui_stage_range(struct ui *ui, int head, float *lo, float *hi);
/* "min … [gradient] … max" ending at x_end on line y; returns its width (heatmap.c). */
int heatmap_legend(const struct ui *ui, int y, int x_end, float lo, float hi, bool diverging);
/* The first key bound to an action, as the status line shows it (arrows as glyphs). */
void key_display(char *out, size_t size, const struct keymap *km, enum action a);

/* Panels (one file each). */
void header_panel_init(struct panel *p);
void stagebar_panel_init(struct panel *p);
void heatmap_panel_init(struct panel *p);
void grid_panel_init(struct panel *p);
void inspector_panel_init(struct panel *p);
void status_panel_init(struct panel *p);
void help_panel_init(struct panel *p);

/* Prompt line (prompt.c). */
void prompt_open(struct ui *ui, enum prompt_kind kind, const char *label, const char *initial);
/* Returns enum handled; calls back into ui.c's prompt_accept on Enter. */
int prompt_key(struct ui *ui, wint_t key, bool is_code);
void prompt_draw(struct ui *ui, int y);
void prompt_accept(struct ui *ui, enum prompt_kind kind, const char *typed);

/* Drawing helpers (draw.c): UTF-8 strings clipped to a width in terminal columns. draw_init
 * picks ASCII stand-ins for every glyph when the locale is not UTF-8. */
void draw_init(void);
bool draw_ascii_only(void);
int draw_text(int y, int x, int width, int attr, const char *utf8);
int text_width(const char *utf8);
/* Abbreviates a token to at most width columns, ending with "…" when cut. */
void abbreviate(char *out, size_t out_size, const char *utf8, int width);
/* The same from the other end: "…/long/path/to/file.yaml", keeping the end. */
void abbreviate_start(char *out, size_t out_size, const char *utf8, int width);
/* Blanks a panel's area in one attribute. */
void draw_clear(struct rect r, int attr);
/* A token as a label: blanks shown as ␣ ⇥ ↵ so a space token is not an empty label. */
void display_token(char *out, size_t out_size, const char *token);
/* Formats a cell value in at most width columns: 0.138, -12.35, -∞, nan. */
void format_cell(char *out, size_t out_size, float v, int width);

#endif
