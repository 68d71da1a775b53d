/* ui: the screen manager and event loop of the explorer (see ui.h).
 *
 * One loop reads keys, maps them to actions through the keymap, lets the focused panel or the
 * global handler act, and redraws only the dirty panels with a single doupdate. Signals only
 * set flags; all drawing happens in the loop. The terminal is restored on every way out.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui/ui.h"

#include <curses.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "common/cnum.h"
#include "common/fatal.h"
#include "common/fsutil.h"
#include "common/utf8.h"
#include "config/config.h"
#include "ui/input.h"
#include "export/export.h"
#include "scenefile/scenefile.h"

#ifndef ATTNSCOPE_DATA_CONFIGS_DIR
#define ATTNSCOPE_DATA_CONFIGS_DIR "/usr/local/share/attnscope/configs"
#endif

/* The installed binary reads the installed configs; the tests and scripts/run point
 * ATTNSCOPE_CONFIGS_DIR at the source tree's. Without either the built-in defaults, equal to
 * configs/ (test_config checks), are in force. */
const char *ui_configs_dir(void)
{
    const char *env = getenv("ATTNSCOPE_CONFIGS_DIR");
    return env && env[0] ? env : ATTNSCOPE_DATA_CONFIGS_DIR;
}

void ui_invalidate(struct ui *ui)
{
    for (int i = 0; i < PANEL_COUNT; i++)
        ui->panels[i].dirty = true;
}

/* Lays the panels out for the current size: header, stage bar, the map (with the inspector to
 * its right when there is room, else below it), the message line and the status line. */
void ui_resize(struct ui *ui)
{
    ui->lines = LINES;
    ui->cols = COLS;
    ui->too_small = ui->lines < UI_MIN_LINES || ui->cols < UI_MIN_COLS;
    struct panel *p = ui->panels;
    int w = ui->cols, h = ui->lines;
    p[PANEL_HEADER].area = (struct rect){0, 0, 2, w};
    p[PANEL_STAGEBAR].area = (struct rect){2, 0, 1, w};
    /* A blank row under the stage bar when there is room; on small screens every row counts. */
    int main_y = h >= 24 ? 4 : 3, main_h = h - main_y - 2;
    struct rect map, insp;
    /* Side by side when the map fits beside an inspector of at least 46 columns; the
     * inspector takes what the map leaves. Else stacked: the map takes the rows it needs
     * (title, axis, n rows, footer) and the inspector the rest, at least 9 rows. */
    int map_w = heatmap_min_width(ui);
    map_w = map_w < 70 ? 70 : map_w; /* the title and legend need about 70 columns */
    if (w - map_w >= 46) {
        int iw = w - map_w > 72 ? 72 : w - map_w;
        map = (struct rect){main_y, 0, main_h, w - iw};
        insp = (struct rect){main_y, w - iw, main_h, iw};
    } else {
        int need = ui->app.model.n + 3;
        int insp_min = main_h >= 20 ? 9 : main_h / 3;
        int mh = need < main_h - insp_min ? need : main_h - insp_min;
        mh = mh < 4 ? 4 : mh;
        map = (struct rect){main_y, 0, mh, w};
        insp = (struct rect){main_y + mh, 0, main_h - mh, w};
    }
    p[PANEL_HEATMAP].area = map;
    p[PANEL_GRID].area = map;
    p[PANEL_INSPECTOR].area = insp;
    p[PANEL_STATUS].area = (struct rect){h - 2, 0, 2, w};
    p[PANEL_HELP].area = (struct rect){1, 0, h - 3, w};
    ui_invalidate(ui);
}

static void load_configs(struct ui *ui)
{
    char keys_path[1024], colors_path[1024];
    snprintf(keys_path, sizeof(keys_path), "%s/keys.yaml", ui_configs_dir());
    snprintf(colors_path, sizeof(colors_path), "%s/colors.yaml", ui_configs_dir());
    char *user_keys = config_user_path("keys.yaml");
    char *user_colors = config_user_path("colors.yaml");
    struct diag_list errs;
    diag_list_init(&errs);
    keymap_load(&ui->keymap, keys_path, user_keys, &errs);
    theme_init(&ui->theme, colors_path, user_colors, &errs);
    if (errs.n > 0) {
        const struct diag *d = &errs.items[0];
        const char *base = strrchr(d->file, '/');
        snprintf(ui->config_error, sizeof(ui->config_error),
                 " \u2717 %.300s:%d:%d: %.400s \u2014 defaults in use%s (? lists all) ",
                 base ? base + 1 : d->file, d->line, d->col, d->msg,
                 errs.n > 1 ? ", more problems" : "");
    }
    ui->config_problems = errs;
    free(user_keys);
    free(user_colors);
}

int ui_open(struct ui *ui, struct scene *s, const char *path, struct diag *err)
{
    memset(ui, 0, sizeof(*ui));
    if (app_init(&ui->app, s, path, err))
        return -1;
    header_panel_init(&ui->panels[PANEL_HEADER]);
    stagebar_panel_init(&ui->panels[PANEL_STAGEBAR]);
    heatmap_panel_init(&ui->panels[PANEL_HEATMAP]);
    grid_panel_init(&ui->panels[PANEL_GRID]);
    inspector_panel_init(&ui->panels[PANEL_INSPECTOR]);
    status_panel_init(&ui->panels[PANEL_STATUS]);
    help_panel_init(&ui->panels[PANEL_HELP]);
    draw_init();
    load_configs(ui);
    curs_set(0);
    ui_resize(ui);
    return 0;
}

void ui_close(struct ui *ui)
{
    app_free(&ui->app);
    diag_list_free(&ui->config_problems);
}

/* The stem of the scene file ("scenes/07-dropout.yaml" -> "07-dropout"), or "default". */
static void scene_stem(char *out, size_t size, const char *path)
{
    if (!path) {
        snprintf(out, size, "default");
        return;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, size, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

static void do_export(struct ui *ui, const char *dir)
{
    struct diag err;
    diag_clear(&err);
    if (app_export(&ui->app, dir, &err)) {
        app_refuse(&ui->app, "export failed: %.200s: %.300s", err.file[0] ? err.file : dir,
                   err.msg);
        return;
    }
    snprintf(ui->app.message, sizeof(ui->app.message), "exported every stage as CSV to %s/%s", dir,
             ui->app.error[0] ? " (the last valid result: the edited scene is invalid)" : "");
    ui->app.message_is_error = false;
}

static void do_save(struct ui *ui, const char *path, bool overwrite)
{
    struct diag err;
    diag_clear(&err);
    if (app_save(&ui->app, path, overwrite, &err)) {
        app_refuse(&ui->app, "save failed: %.200s%s%.300s", err.file[0] ? err.file : "",
                   err.file[0] ? ": " : "", err.msg);
        return;
    }
    snprintf(ui->app.message, sizeof(ui->app.message), "saved the scene to %s", path);
    ui->app.message_is_error = false;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A typed value, without the blanks around it. */
static void trim_copy(char *out, size_t size, const char *text)
{
    while (*text == ' ')
        text++;
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == ' ')
        n--;
    snprintf(out, size, "%.*s", (int)n, text);
}

static void accept_knob(struct ui *ui, const char *typed)
{
    struct app *a = &ui->app;
    char text[64];
    trim_copy(text, sizeof(text), typed);
    if (ui->prompt_knob == KNOB_SEED) {
        /* Seeds are 64-bit, beyond a double's exact range: parse them as integers. */
        uint64_t v;
        bool neg;
        if (cnum_parse_u64(text, &v, &neg) != CNUM_OK || neg || text[0] == '+')
            app_refuse(a, "seed must be a whole number from 0 to 2^64 - 1, not '%.40s'", typed);
        else
            app_edit_seed(a, v);
        return;
    }
    /* A decimal comma is accepted as typed on a German keyboard ("0,5"); never hex or inf. */
    double v;
    if (strlen(typed) >= sizeof(text) - 1 || cnum_parse_double(text, true, &v) != CNUM_OK)
        app_refuse(a, "'%.40s' is not a number for %s", typed, knob_name(ui->prompt_knob));
    else
        app_edit_knob(a, ui->prompt_knob, v);
}

/* A path as typed, without the blanks around it (a trailing space is never meant). */
static const char *trim(char *text)
{
    while (*text == ' ' || *text == '\t')
        text++;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        text[--n] = '\0';
    return text;
}

void prompt_accept(struct ui *ui, enum prompt_kind kind, const char *typed)
{
    struct app *a = &ui->app;
    char buf[PROMPT_MAX * 4 + 1];
    snprintf(buf, sizeof(buf), "%s", typed);
    const char *text = kind == PROMPT_EXPORT || kind == PROMPT_SAVE ? trim(buf) : typed;
    switch (kind) {
    case PROMPT_TEXT:
        if (strcmp(text, ui->prompt_initial) != 0) /* Enter on the same text changes nothing */
            app_edit_text(a, text);
        break;
    case PROMPT_KNOB:
        accept_knob(ui, text);
        break;
    case PROMPT_EXPORT: {
        if (!text[0])
            break;
        struct diag err;
        if (export_check_target(text, &err) != 0) {
            app_refuse(a, "%.300s %.300s", text, err.msg);
        } else if (fsutil_exists(text)) {
            snprintf(ui->pending_path, sizeof(ui->pending_path), "%s", text);
            char label[1100];
            snprintf(label, sizeof(label), "%s holds an export: replace it? (y/n)", text);
            prompt_open(ui, PROMPT_CONFIRM_EXPORT, label, "");
        } else {
            do_export(ui, text);
        }
        break;
    }
    case PROMPT_SAVE:
        if (!text[0])
            break;
        if (is_dir(text)) {
            app_refuse(a, "%.300s is a folder; give a file name", text);
        } else if (fsutil_exists(text)) {
            snprintf(ui->pending_path, sizeof(ui->pending_path), "%s", text);
            char label[1100];
            snprintf(label, sizeof(label), "%s exists: overwrite it? (y/n)", text);
            prompt_open(ui, PROMPT_CONFIRM_SAVE, label, "");
        } else {
            do_save(ui, text, false);
        }
        break;
    case PROMPT_CONFIRM_EXPORT:
        do_export(ui, ui->pending_path);
        break;
    case PROMPT_CONFIRM_SAVE:
        do_save(ui, ui->pending_path, true);
        break;
    case PROMPT_CONFIRM_QUIT:
        ui->quit = true;
        break;
    case PROMPT_NONE:
        break;
    }
}

static void open_knob_prompt(struct ui *ui, enum knob k)
{
    char label[64], value[64];
    ui->app.knob = k;
    ui->prompt_knob = k;
    snprintf(label, sizeof(label), "new %s", knob_name(k));
    app_knob_text(value, sizeof(value), &ui->app, k);
    prompt_open(ui, PROMPT_KNOB, label, value);
}

static int stage_step(struct ui *ui, int dir)
{
    int s = (int)ui->app.stage + dir;
    if (s < 0 || s >= STAGE_COUNT)
        return HANDLED_YES; /* the pipeline has two ends; no wrapping round */
    ui->app.stage = (enum stage)s;
    app_clamp(&ui->app);
    return HANDLED_CURSOR;
}

/* One auto-play tick: the next stage that does something; stops at the output. */
static void play_tick(struct ui *ui)
{
    struct app *a = &ui->app;
    int s = (int)a->stage + 1;
    while (s < STAGE_COUNT && stage_is_off(&a->model, (enum stage)s))
        s++;
    if (s >= STAGE_COUNT) {
        a->playing = false;
        return;
    }
    a->stage = (enum stage)s;
    app_clamp(a);
}

/* Actions that do not belong to one panel. */
static int global_action(struct ui *ui, enum action act)
{
    struct app *a = &ui->app;
    switch (act) {
    case ACTION_QUIT:
        if (!app_unsaved(a))
            return HANDLED_QUIT;
        prompt_open(ui, PROMPT_CONFIRM_QUIT, "quit without saving your edits? (y/n)", "");
        return HANDLED_CURSOR;
    case ACTION_HELP:
        ui->help_open = true;
        return HANDLED_CURSOR;
    case ACTION_REDRAW:
        clearok(curscr, TRUE);
        ui_invalidate(ui);
        return HANDLED_CURSOR;
    case ACTION_STAGE_NEXT:
        return stage_step(ui, 1);
    case ACTION_STAGE_PREV:
        return stage_step(ui, -1);
    case ACTION_HEAD_NEXT:
    case ACTION_HEAD_PREV:
        a->head = (a->head + (act == ACTION_HEAD_NEXT ? 1 : -1) + a->model.heads) % a->model.heads;
        app_clamp(a);
        return HANDLED_CURSOR;
    case ACTION_ALL_HEADS:
        a->all_heads = !a->all_heads;
        return HANDLED_CURSOR;
    case ACTION_PLAY:
        a->playing = !a->playing;
        if (a->playing && a->stage == STAGE_OUTPUT)
            a->stage = STAGE_INPUTS; /* play from the start when at the end */
        app_clamp(a);
        return HANDLED_CURSOR;
    case ACTION_KNOB_NEXT:
        a->knob = (enum knob)((a->knob + 1) % KNOB_COUNT);
        return HANDLED_CURSOR;
    case ACTION_KNOB_PREV:
        a->knob = (enum knob)((a->knob + KNOB_COUNT - 1) % KNOB_COUNT);
        return HANDLED_CURSOR;
    case ACTION_KNOB_UP:
        app_step_knob(a, a->knob, 1);
        return HANDLED_SCENE;
    case ACTION_KNOB_DOWN:
        app_step_knob(a, a->knob, -1);
        return HANDLED_SCENE;
    case ACTION_KNOB_TYPE:
        open_knob_prompt(ui, a->knob);
        return HANDLED_CURSOR;
    case ACTION_SEED:
        open_knob_prompt(ui, KNOB_SEED);
        return HANDLED_CURSOR;
    case ACTION_D_OUT:
        open_knob_prompt(ui, KNOB_D_OUT);
        return HANDLED_CURSOR;
    case ACTION_HEADS:
        open_knob_prompt(ui, KNOB_HEADS);
        return HANDLED_CURSOR;
    case ACTION_DROPOUT:
        open_knob_prompt(ui, KNOB_DROPOUT);
        return HANDLED_CURSOR;
    case ACTION_EDIT_TEXT: {
        /* Edit the sentence; a scene given as a token list is edited as its tokens joined. */
        size_t need = a->scene.text ? strlen(a->scene.text) + 1 : 1;
        for (int i = 0; !a->scene.text && i < a->scene.n_tokens; i++)
            need += strlen(a->scene.tokens[i]) + 1;
        char *text = calloc(need, 1);
        if (!text)
            return HANDLED_NO;
        if (a->scene.text) {
            memcpy(text, a->scene.text, need);
        } else {
            for (int i = 0; i < a->scene.n_tokens; i++) {
                if (i)
                    strcat(text, " ");
                strcat(text, a->scene.tokens[i]);
            }
        }
        if (utf8_length(text) >= PROMPT_MAX) /* never edit a cut copy */
            app_refuse(a, "the sentence is too long to edit here; edit the scene file");
        else
            prompt_open(ui, PROMPT_TEXT, "sentence", text);
        free(text);
        return HANDLED_CURSOR;
    }
    case ACTION_CAUSAL:
        app_toggle_causal(a);
        return HANDLED_SCENE;
    case ACTION_PROJECTION:
        app_cycle_projection(a);
        return HANDLED_SCENE;
    case ACTION_LAYOUT:
        app_cycle_layout(a);
        return HANDLED_SCENE;
    case ACTION_MASK_MODE:
        app_cycle_mask_mode(a);
        return HANDLED_SCENE;
    case ACTION_UNDO:
        app_undo(a);
        return HANDLED_SCENE;
    case ACTION_REDO:
        app_redo(a);
        return HANDLED_SCENE;
    case ACTION_EXPORT: {
        char stem[256], dir[300];
        scene_stem(stem, sizeof(stem), a->scene_path);
        snprintf(dir, sizeof(dir), "attnscope-export-%s", stem);
        prompt_open(ui, PROMPT_EXPORT, "export to folder", dir);
        return HANDLED_CURSOR;
    }
    case ACTION_SAVE: {
        if (a->error[0]) {
            app_refuse(a, "the edited scene is invalid: fix it or undo (u) before saving");
            return HANDLED_CURSOR;
        }
        /* Never offer to overwrite the scene itself: saving writes fresh YAML, so the
         * original's comments would be lost. */
        char stem[256], path[1100];
        scene_stem(stem, sizeof(stem), a->scene_path);
        const char *slash = a->scene_path ? strrchr(a->scene_path, '/') : NULL;
        snprintf(path, sizeof(path), "%.*s%s-edited.yaml",
                 slash ? (int)(slash - a->scene_path + 1) : 0, a->scene_path ? a->scene_path : "",
                 stem);
        prompt_open(ui, PROMPT_SAVE, "save scene as", path);
        return HANDLED_CURSOR;
    }
    default:
        return HANDLED_NO;
    }
}

static int handle_mouse(struct ui *ui)
{
    MEVENT ev;
    if (getmouse(&ev) != OK)
        return HANDLED_NO;
    enum panel_id order[] = {PANEL_STAGEBAR, PANEL_HEATMAP, PANEL_GRID};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        struct panel *p = &ui->panels[order[i]];
        if (order[i] == PANEL_HEATMAP && ui->app.all_heads)
            continue;
        if (order[i] == PANEL_GRID && !ui->app.all_heads)
            continue;
        if (p->handle_mouse && rect_contains(p->area, ev.y, ev.x))
            return p->handle_mouse(p, ui, ev.y, ev.x, (unsigned long)ev.bstate);
    }
    return HANDLED_NO;
}

int ui_key(struct ui *ui, wint_t key, bool is_code)
{
    if (is_code && key == KEY_RESIZE) {
        ui_resize(ui);
        return HANDLED_CURSOR;
    }
    if (ui->too_small) /* nothing to act on that cannot be seen; C-c still quits */
        return HANDLED_NO;
    if (ui->prompt != PROMPT_NONE) {
        int r = prompt_key(ui, key, is_code) | HANDLED_CURSOR;
        return ui->quit ? HANDLED_QUIT : r;
    }
    if (is_code && key == KEY_MOUSE)
        return handle_mouse(ui);
    enum action act = keymap_lookup(&ui->keymap, input_decode(key, is_code));
    if (ui->app.message[0] && act != ACTION_NONE) {
        ui->app.message[0] = '\0';
        ui->app.message_is_error = false;
    }
    if (ui->config_error[0] && act != ACTION_NONE)
        ui->config_error[0] = '\0';
    if (ui->help_open) /* every key either scrolls the overlay or closes it */
        return ui->panels[PANEL_HELP].handle_key(&ui->panels[PANEL_HELP], ui, act);
    if (act == ACTION_NONE)
        return HANDLED_NO;
    struct panel *focus = &ui->panels[ui->app.all_heads ? PANEL_GRID : PANEL_HEATMAP];
    int r = focus->handle_key ? focus->handle_key(focus, ui, act) : HANDLED_NO;
    if (r == HANDLED_NO)
        r = global_action(ui, act);
    return r;
}

void ui_mark(struct ui *ui, int handled)
{
    if (handled & HANDLED_SCENE) {
        ui_resize(ui); /* the token count decides the stacked layout */
        return;
    }
    if (handled & HANDLED_MOVE) {
        /* A cursor move touches the map, the inspector and the status line, nothing else. */
        ui->panels[PANEL_HEATMAP].dirty = true;
        ui->panels[PANEL_GRID].dirty = true;
        ui->panels[PANEL_INSPECTOR].dirty = true;
        ui->panels[PANEL_STATUS].dirty = true;
    }
    if (handled & HANDLED_CURSOR) {
        /* A view change touches the map, the inspector, the bars; never the engine. */
        ui->panels[PANEL_HEADER].dirty = true;
        ui->panels[PANEL_STAGEBAR].dirty = true;
        ui->panels[PANEL_HEATMAP].dirty = true;
        ui->panels[PANEL_GRID].dirty = true;
        ui->panels[PANEL_INSPECTOR].dirty = true;
        ui->panels[PANEL_STATUS].dirty = true;
        ui->panels[PANEL_HELP].dirty = true;
    }
}

void ui_draw(struct ui *ui)
{
    if (ui->too_small) {
        /* Short lines, centred, so even a tiny window can read what it needs. */
        erase();
        char need[64], have[64];
        snprintf(need, sizeof(need), "needs %d\u00d7%d", UI_MIN_COLS, UI_MIN_LINES);
        snprintf(have, sizeof(have), "this is %d\u00d7%d", ui->cols, ui->lines);
        const char *lines[] = {"terminal too small", "attnscope", need, have,
                               "enlarge it to go on"};
        int n = sizeof(lines) / sizeof(lines[0]);
        int y0 = (ui->lines - n) / 2;
        for (int i = 0; i < n; i++) {
            int y = y0 + i, x = (ui->cols - text_width(lines[i])) / 2;
            if (y >= 0 && y < ui->lines)
                draw_text(y, x > 0 ? x : 0, ui->cols, i == 0 ? A_BOLD : A_NORMAL, lines[i]);
        }
        wnoutrefresh(stdscr);
        doupdate();
        ui_invalidate(ui);
        return;
    }
    ui->panels[PANEL_HEATMAP].visible = !ui->app.all_heads;
    ui->panels[PANEL_GRID].visible = ui->app.all_heads;
    ui->panels[PANEL_HELP].visible = ui->help_open;
    ui->panels[PANEL_INSPECTOR].visible = true;
    ui->panels[PANEL_HEADER].visible = ui->panels[PANEL_STAGEBAR].visible = true;
    ui->panels[PANEL_STATUS].visible = true;
    /* The row between the stage bar and the map stays blank (when there is one). */
    if (ui->panels[PANEL_HEATMAP].area.y == 4) {
        move(3, 0);
        clrtoeol();
    }
    /* Status last: when the prompt is open it leaves the cursor in the line editor. While the
     * help overlay covers the panels they are not drawn; they stay dirty until it closes. */
    static const enum panel_id order[] = {PANEL_HEADER, PANEL_STAGEBAR,  PANEL_HEATMAP,
                                          PANEL_GRID,   PANEL_INSPECTOR, PANEL_HELP,
                                          PANEL_STATUS};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        struct panel *p = &ui->panels[order[i]];
        bool covered = ui->help_open && order[i] != PANEL_HELP && order[i] != PANEL_STATUS &&
                       order[i] != PANEL_HEADER;
        if (!p->visible || !p->dirty || covered)
            continue;
        p->draw(p, ui);
        p->dirty = false;
    }
    /* The terminal cursor belongs in the line editor while it is open, hidden otherwise. */
    if (ui->prompt != PROMPT_NONE) {
        move(ui->prompt_y, ui->prompt_x);
        curs_set(1);
    } else {
        curs_set(0);
    }
    wnoutrefresh(stdscr);
    doupdate();
}

void ui_setup_terminal(void)
{
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    if (has_colors())
        start_color();
    /* Presses, not clicks: with mouseinterval(0) a press is reported at once. */
    mousemask(BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    mouseinterval(0);
    /* Home and End as tmux, screen, PuTTY and the Linux console send them, whatever TERM
     * claims, so they never arrive as a stray Esc followed by '[' and '1'. */
    static const struct {
        const char *seq;
        int key;
    } extra_keys[] = {{"\033[1~", KEY_HOME}, {"\033[4~", KEY_END}, {"\033[7~", KEY_HOME},
                      {"\033[8~", KEY_END},  {"\033[H", KEY_HOME}, {"\033[F", KEY_END},
                      {"\033OH", KEY_HOME},  {"\033OF", KEY_END}};
    for (size_t i = 0; i < sizeof(extra_keys) / sizeof(extra_keys[0]); i++)
        define_key(extra_keys[i].seq, extra_keys[i].key);
}

/* Signals only set flags; the loop notices them within one read. */
static volatile sig_atomic_t quit_signal;

static void on_quit_signal(int sig)
{
    quit_signal = sig;
}

static void restore_terminal(void)
{
    if (!isendwin())
        endwin();
    fatal_clear_terminal();
}

/* Hands common/fatal the bytes that undo what curses did (normal attributes and cursor, keypad
 * and mouse off, the alternate screen left) and the shell's terminal modes, so a crash restores
 * the terminal without calling curses from a signal handler. */
static void arm_crash_restore(const struct termios *saved)
{
    static const char *const caps[] = {"sgr0", "cnorm", "rmkx", "rmcup"};
    char reset[FATAL_RESET_MAX];
    size_t n = 0;
    const char *kmous = tigetstr("kmous");
    if (kmous && kmous != (char *)-1 && kmous[0]) {
        /* Every xterm mouse mode curses may have turned on, off again. */
        static const char mouse_off[] = "\033[?1006l\033[?1003l\033[?1002l\033[?1000l";
        memcpy(reset, mouse_off, sizeof(mouse_off) - 1);
        n = sizeof(mouse_off) - 1;
    }
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        const char *seq = tigetstr(caps[i]);
        size_t len = seq && seq != (char *)-1 ? strlen(seq) : 0;
        if (n + len <= sizeof(reset)) {
            memcpy(reset + n, seq, len);
            n += len;
        }
    }
    fatal_set_terminal(STDOUT_FILENO, saved, reset, n);
}

int ui_main(const char *scene_path)
{
    /* Only the character set comes from the environment (ncursesw needs it for wide
     * characters); numbers stay in the C locale, and common/cnum enforces that anyway. */
    setlocale(LC_CTYPE, "");
    struct scene s;
    if (scene_path) {
        if (scenefile_load_report(&s, scene_path, stderr))
            return 1;
    } else {
        scene_init_default(&s);
    }

    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "attnscope: the explorer needs a terminal; try `attnscope print%s%s`\n",
                scene_path ? " " : "", scene_path ? scene_path : "");
        scene_free(&s);
        return 2;
    }
    struct termios shell_modes;
    bool have_modes = tcgetattr(STDOUT_FILENO, &shell_modes) == 0;
    if (!newterm(NULL, stdout, stdin)) {
        fprintf(stderr, "attnscope: cannot open the terminal (TERM=%s)\n",
                getenv("TERM") ? getenv("TERM") : "");
        scene_free(&s);
        return 1;
    }
    atexit(restore_terminal);
    const char *cup = tigetstr("cup");
    if (!cup || cup == (char *)-1) {
        endwin();
        fprintf(stderr,
                "attnscope: this terminal (TERM=%s) cannot move the cursor; try `attnscope "
                "print%s%s`\n",
                getenv("TERM") ? getenv("TERM") : "", scene_path ? " " : "",
                scene_path ? scene_path : "");
        scene_free(&s);
        return 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_quit_signal; /* no SA_RESTART: a blocked read returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    ui_setup_terminal();
    if (have_modes)
        arm_crash_restore(&shell_modes);

    struct ui *ui = calloc(1, sizeof(*ui));
    struct diag err;
    diag_clear(&err);
    if (!ui || ui_open(ui, &s, scene_path, &err)) {
        restore_terminal();
        fprintf(stderr, "attnscope: %s\n", ui ? err.msg : "out of memory");
        free(ui);
        return 1;
    }
    int status = 0;
    ui_draw(ui);
    while (!quit_signal) {
        timeout(ui->app.playing ? UI_PLAY_MS : -1);
        wint_t key;
        int rc = get_wch(&key);
        if (quit_signal)
            break;
        if (rc == ERR) {
            if (ui->app.playing) {
                play_tick(ui);
                ui_mark(ui, HANDLED_CURSOR);
                ui_draw(ui);
            }
            continue;
        }
        int handled = ui_key(ui, key, rc == KEY_CODE_YES);
        if (handled & HANDLED_QUIT)
            break;
        ui_mark(ui, handled);
        ui_draw(ui);
    }
    ui_close(ui);
    free(ui);
    restore_terminal();
    if (quit_signal) /* the shell's convention: 130 for C-c, 143 for SIGTERM */
        status = 128 + quit_signal;
    return status;
}
