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
#include <poll.h>
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
#include "common/progress.h"
#include "common/utf8.h"
#include "config/config.h"
#include "explore/commands.h"
#include "explore/lessonmode.h"
#include "ui/caption.h"
#include "ui/header.h"
#include "ui/input.h"
#include "ui/pending.h"
#include "ui/inspector.h"
#include "ui/predictions.h"
#include "ui/stagebar.h"
#include "scenefile/scenefile.h"

/* Bracketed paste (xterm's mode 2004): while it is on, the terminal sends a paste between
 * ESC[200~ and ESC[201~, so the explorer reads a paste as text (ui_paste), never as the keys it
 * is made of: a 100 KB paste was 100,000 keystrokes, each e an export. The sequences are
 * terminfo's BE, BD, PS and PE where it has them, else xterm's for a terminal that speaks xterm's
 * mouse (kmous); a terminal with neither gets none. */
enum { KEY_PASTE_BEGIN = KEY_MAX + 1, KEY_PASTE_END };
static struct {
    char on[32], off[32];
    size_t on_len, off_len;
} paste_mode;

static const char *cap_or(const char *name, const char *xterm, bool xterm_like)
{
    const char *s = tigetstr(name);
    if (s && s != (char *)-1 && s[0])
        return s;
    return xterm_like ? xterm : NULL;
}

static void paste_setup(void)
{
    const char *kmous = tigetstr("kmous");
    bool xterm_like = kmous && kmous != (char *)-1 && kmous[0];
    const char *on = cap_or("BE", "\033[?2004h", xterm_like);
    const char *off = cap_or("BD", "\033[?2004l", xterm_like);
    const char *begin = cap_or("PS", "\033[200~", xterm_like);
    const char *end = cap_or("PE", "\033[201~", xterm_like);
    paste_mode.on_len = paste_mode.off_len = 0;
    paste_mode.on[0] = paste_mode.off[0] = '\0';
    if (!on || !off || !begin || !end || strlen(on) >= sizeof(paste_mode.on) ||
        strlen(off) >= sizeof(paste_mode.off))
        return;
    paste_mode.on_len = (size_t)snprintf(paste_mode.on, sizeof(paste_mode.on), "%s", on);
    paste_mode.off_len = (size_t)snprintf(paste_mode.off, sizeof(paste_mode.off), "%s", off);
    define_key(begin, KEY_PASTE_BEGIN);
    define_key(end, KEY_PASTE_END);
}

void ui_invalidate(struct ui *ui)
{
    for (int i = 0; i < PANEL_COUNT; i++)
        ui->panels[i]->dirty = true;
}

/* Lays the panels out for the current size and view: header, stage bar, the map (with the
 * inspector, or the token view in its place, to its right when there is room, else below it), in
 * lesson mode the caption across the screen, the message line and the status line. Every view
 * change lays them out again: the rows go where they are used (every layer of the model view,
 * the step's own caption), not left blank. */
void ui_resize(struct ui *ui)
{
    ui->lines = ui->frame.lines = LINES;
    ui->cols = ui->frame.cols = COLS;
    ui->too_small = ui->lines < UI_MIN_LINES || ui->cols < UI_MIN_COLS;
    int w = ui->cols, h = ui->lines;
    bool lesson = caption_rows(ui->app, w, 1000) > 0;
    /* A blank row under the stage bar when there is room; on small screens (and under a
       lesson's caption on a short one) every row counts. */
    int main_y = h >= 24 && !(lesson && h < 30) ? 4 : 3, main_h = h - main_y - 2;
    /* The rows the map wants: one head's title, axis, rows and footer; every head (and in the
       model view every layer) at full size. */
    int least = 0;
    int need = app_view_state(ui->app)->all_heads
                   ? grid_rows_wanted(&ui->grid, &ui->frame, w, &least)
                   : app_model(ui->app)->n + 3;
    /* In a lesson the caption comes second to the map and before the inspector: it takes the
     * rows the step's caption needs, up to what the map leaves (a third at least). */
    int cap_max = main_h - need - 2 > main_h / 3 ? main_h - need - 2 : main_h / 3;
    int cap_h = caption_rows(ui->app, w, cap_max > 3 ? cap_max : 3);
    main_h -= cap_h;
    struct rect map, insp;
    /* Side by side when the map fits beside an inspector of at least 46 columns; the
     * inspector takes what the map leaves. Else stacked: the map takes the rows it needs
     * (title, axis, n rows, footer) and the inspector the rest, at least 9 rows (2 under a
     * caption); the token view at least 2/5 of them (a window of the sentence and its bars),
     * zoomed out the map fits whatever it gets. */
    int map_w =
        app_view_state(ui->app)->lens ? lens_min_width(ui->app) : heatmap_min_width(ui->app);
    map_w = map_w < 70 ? 70 : map_w; /* the title and legend need about 70 columns */
    if (w - map_w >= 46) {
        int iw = w - map_w > 72 ? 72 : w - map_w;
        map = (struct rect){main_y, 0, main_h, w - iw};
        insp = (struct rect){main_y, w - iw, main_h, iw};
    } else {
        int insp_min = cap_h > 0 ? 2 : main_h >= 20 ? 9 : main_h / 3;
        if (app_view_state(ui->app)->token_view && cap_h == 0 && main_h >= 20 &&
            main_h * 2 / 5 > insp_min)
            insp_min = main_h * 2 / 5;
        /* The predictions: a title, the next token's line and the top 10, when that leaves the
           map half the rows; under a lesson's caption, which quotes them, the top 3 at least
           (80x24: the map keeps 10 rows, 7 of the matrix). */
        bool preds = app_view_state(ui->app)->predictions || app_view_state(ui->app)->lens;
        if (preds && cap_h == 0 && insp_min < 2 + INTERP_TOP)
            insp_min = 2 + INTERP_TOP < main_h / 2 ? 2 + INTERP_TOP : main_h / 2;
        else if (preds && cap_h > 0 && main_h - 5 >= 6)
            insp_min = 5;
        int mh = need < main_h - insp_min ? need : main_h - insp_min;
        if (mh < least && least <= main_h - 5) /* every layer in view, the inspector smaller */
            mh = least;
        if (app_view_state(ui->app)->all_heads) /* what the heads' layout draws there, not more */
            mh = grid_rows_used(&ui->grid, &ui->frame, w, mh);
        mh = mh < 4 ? 4 : mh;
        map = (struct rect){main_y, 0, mh, w};
        insp = (struct rect){main_y + mh, 0, main_h - mh, w};
    }
    struct frame *f = &ui->frame;
    panel_resize(&ui->header, f, (struct rect){0, 0, 2, w});
    panel_resize(&ui->stagebar, f, (struct rect){2, 0, 1, w});
    for (int i = 0; i < PANEL_COUNT; i++)
        if (ui->panels[i]->slot != SLOT_OWN)
            panel_resize(ui->panels[i], f, ui->panels[i]->slot == SLOT_MAP ? map : insp);
    ui->tokens_laid_out = app_view_state(ui->app)->token_view;
    panel_resize(&ui->caption, f, (struct rect){main_y + main_h, 0, cap_h, w});
    panel_resize(&ui->status.base, f, (struct rect){h - 2, 0, 2, w});
    panel_resize(&ui->help.base, f, (struct rect){1, 0, h - 3, w});
    ui_invalidate(ui);
}

static bool user_configs = true;

void ui_use_user_configs(bool on)
{
    user_configs = on;
}

static void load_configs(struct ui *ui)
{
    char keys_path[1024], colors_path[1024];
    snprintf(keys_path, sizeof(keys_path), "%s/keys.yaml", roles_configs_dir());
    snprintf(colors_path, sizeof(colors_path), "%s/colors.yaml", roles_configs_dir());
    char *user_keys = user_configs ? config_user_path("keys.yaml") : NULL;
    char *user_colors = user_configs ? config_user_path("colors.yaml") : NULL;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    roles_require_shipped(keys_path, &errs);
    keymap_load(&ui->keymap, keys_path, user_keys, &errs);
    theme_init(&ui->theme, colors_path, user_colors, &errs);
    /* Pictures (R) draw with the scales the screen does. */
    app_view_mut(ui->app)->palette_scale = ui->theme.scale;
    app_view_mut(ui->app)->palette_diverging = ui->theme.diverging;
    if (errs.n > 0) {
        const struct diag *d = &errs.items[0];
        const char *base = strrchr(d->file, '/');
        char where[400];
        if (d->line > 0) /* a problem inside a file: its name is enough */
            snprintf(where, sizeof(where), "%.300s:%d:%d", base ? base + 1 : d->file, d->line,
                     d->col);
        else /* a file that is not there: say where it was looked for */
            snprintf(where, sizeof(where), "%.380s", d->file);
        snprintf(ui->config_error, sizeof(ui->config_error),
                 " \u2717 %s: %.400s \u2014 defaults in use%s (? lists all) ", where, d->msg,
                 errs.n > 1 || errs.lost ? ", more problems" : "");
    } else if (errs.lost) {
        snprintf(ui->config_error, sizeof(ui->config_error),
                 " \u2717 out of memory reading the configuration \u2014 defaults in use ");
    }
    ui->config_problems = errs;
    free(user_keys);
    free(user_colors);
}

/* Signals only set flags; the loop notices them within one read (and a compute at its next
 * head). SIGTERM and SIGHUP end the explorer; C-c (SIGINT) stops what is running, or at rest asks
 * to quit when there are unsaved edits (ui_interrupt). */
static volatile sig_atomic_t quit_signal;
static volatile sig_atomic_t interrupts;

/* The bar on the message line: what is running, how far it got, how long it was estimated to
 * take, and whether q stops it, or why not. In reverse video: the theme may not be loaded yet. */
static void busy_draw(struct ui *ui, const char *what, long done, long total, double t)
{
    /* One that cannot stop says so first: at 80 columns the end of the line is cut. */
    bool computing = strcmp(what, "computing") == 0,
         can_stop = !computing || app_result(ui->app)->stoppable;
    char cannot[200] = "";
    const char *note = app_result(ui->app)->stop_note, *paren = strstr(note, " (");
    if (!can_stop && note[0])
        snprintf(cannot, sizeof(cannot), ", cannot be stopped (%.*s)",
                 paren ? (int)(paren - note) : (int)strlen(note), note);
    else if (!can_stop) /* estimated too short to be worth fresh buffers, and it was not */
        snprintf(cannot, sizeof(cannot),
                 ", cannot be stopped (estimated short: computed in place)");
    enum { BAR = 24 };
    int width = can_stop ? BAR : BAR / 2;
    char bar[BAR + 1], line[400];
    int filled = total > 0 ? (int)((double)width * (double)done / (double)total) : 0;
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    char about[48] = "";
    if (computing && app_result(ui->app)->compute_seconds * 1000 > PROGRESS_QUIET_MS)
        attn_cnum_format(about, sizeof(about), " of about %.*f s",
                         app_result(ui->app)->compute_seconds < 9.5 ? 1 : 0,
                         app_result(ui->app)->compute_seconds);
    attn_cnum_format(line, sizeof(line), " %s%s [%s] %ld/%ld heads  %.1f s%s%s%s ", what, cannot,
                     bar, done, total, (t - ui->busy.t0) / 1e3, about,
                     can_stop ? " \u00b7 q stops" : "",
                     ui->busy.refused ? " \u00b7 C-c twice quits once it ends" : "");
    int y = LINES >= 2 ? LINES - 2 : 0;
    move(y, 0);
    clrtoeol();
    attron(A_REVERSE);
    mvaddnstr(y, 0, line, COLS > 0 ? COLS : 0);
    attroff(A_REVERSE);
    curs_set(0); /* the prompt that asked for it is closed */
    refresh();
    ui->busy.shown = true;
    ui->busy.drawn = t;
    ui->status.base.dirty = true; /* the frame after it draws the message line back */
}

/* A stop key (q, Esc; C-c when interrupt) while the bar is on screen: it stops what can stop;
 * one that cannot is never kept for after (a q would open "quit without saving?"): the bar says
 * why, and a second C-c quits once it ends. */
static void busy_stop_key(struct ui *ui, bool can_stop, bool interrupt, const char *key)
{
    if (can_stop) {
        ui->busy.stop = 1;
        if (interrupt)
            ui->busy.stop_signal = SIGINT;
        return;
    }
    if (interrupt && ui->busy.refused_interrupts++ > 0)
        quit_signal = SIGINT; /* C-c twice: out as soon as the compute lets go */
    ui->busy.refused++;
    ui->busy.refused_key = key;
    ui->busy.drawn = 0; /* the bar says so at the next head */
}

/* Keys typed while the bar is on screen: q, Esc or C-c stop what is running (or are dropped
 * when it cannot stop); any other key is put back, in order, for the loop to read after. Keys
 * typed before the bar shows (a compute too short to show one) stay typed-ahead keys. */
static void poll_stop(struct ui *ui, bool can_stop)
{
    if (quit_signal)
        ui->busy.stop = 1;
    /* C-c stops what can stop (an export, before its bar too); one before the bar of a compute
       that cannot is answered at rest (ui_interrupt). */
    if (interrupts && (ui->busy.shown || can_stop) && !ui->busy.stop) {
        interrupts = 0;
        busy_stop_key(ui, can_stop, true, "C-c");
    }
    if (!ui->busy.shown || ui->busy.stop || isendwin())
        return;
    int kept[64], n = 0, delay = wgetdelay(stdscr);
    nodelay(stdscr, TRUE);
    for (int ch; n < (int)(sizeof(kept) / sizeof(kept[0])) && (ch = getch()) != ERR;) {
        if (ch == KEY_PASTE_BEGIN) { /* a paste is text, never keys: left for the loop */
            kept[n++] = ch;
            break;
        }
        if (ch == 'q' || ch == 27 || ch == 3)
            busy_stop_key(ui, can_stop, ch == 3, ch == 'q' ? "q" : ch == 27 ? "Esc" : "C-c");
        else
            kept[n++] = ch;
        if (ui->busy.stop)
            break;
    }
    timeout(delay); /* as it was: the loop's (or a test's) own */
    while (n > 0)
        ungetch(kept[--n]);
}

/* The engine's (and the exporter's) progress sink, and app's: step 0 when a compute is asked
 * for and again when its pass starts, one step a head after. Past PROGRESS_QUIET_MS the message
 * line shows a bar, redrawn at most every 50 ms; a compute estimated past it shows its bar at
 * once, before its buffers are made. */
static void busy_step(struct ui *ui, const char *what, long done, long total)
{
    double t = attn_now_ms();
    bool computing = strcmp(what, "computing") == 0;
    if (done == 0) {
        if (ui->busy.active) { /* its pass starts, its buffers made: a stop is read there */
            poll_stop(ui, !computing || app_result(ui->app)->stoppable);
            return;
        }
        ui->busy.active = true;
        ui->busy.t0 = t;
        ui->busy.stop = quit_signal != 0;
        if (computing && app_result(ui->app)->compute_seconds * 1000 > PROGRESS_QUIET_MS &&
            !isendwin())
            busy_draw(ui, what, 0, total, t);
        return;
    }
    poll_stop(ui, !computing || app_result(ui->app)->stoppable);
    if (t - ui->busy.t0 < PROGRESS_QUIET_MS ||
        (ui->busy.shown && t - ui->busy.drawn < 50 && done < total))
        return;
    busy_draw(ui, what, done, total, t);
}

/* The stop keys a compute could not act on, said after what the key did: they were dropped. */
static void busy_said(struct ui *ui)
{
    const struct app_result *res = app_result(ui->app);
    struct app_status *st = app_status_mut(ui->app);
    size_t o = strlen(st->message);
    if (!ui->busy.refused || o >= sizeof(st->message))
        return;
    const char *key = ui->busy.refused_key ? ui->busy.refused_key : "q";
    if (res->stop_note[0])
        snprintf(st->message + o, sizeof(st->message) - o,
                 "%s%s: that compute could not be stopped: %s", o ? "; " : "", key, res->stop_note);
    else
        snprintf(st->message + o, sizeof(st->message) - o,
                 "%s%s: that compute could not be stopped (estimated short: computed in place)",
                 o ? "; " : "", key);
}

/* Every key starts afresh: what a compute or an export does is this key's. */
static void busy_reset(struct ui *ui)
{
    ui->busy.active = ui->busy.shown = false;
    ui->busy.stop = 0;
    ui->busy.stop_signal = 0;
    ui->busy.refused = ui->busy.refused_interrupts = 0;
    ui->busy.refused_key = NULL;
}

static void busy_computing(void *ctx, long done, long total)
{
    busy_step(ctx, "computing", done, total);
}

static void busy_exporting(void *ctx, long done, long total)
{
    busy_step(ctx, "exporting", done, total);
}

static bool background;

/* How often the loop looks at a compute running in the background (ms). */
#define COMPUTE_TICK_MS 30

void ui_use_background(bool on)
{
    background = on;
}

int ui_open(struct ui *ui, struct attn_scene *s, const char *path, struct diag *err)
{
    memset(ui, 0, sizeof(*ui));
    const struct progress_sink busy = {busy_computing, ui, &ui->busy.stop};
    if (background ? app_new_background(&ui->app, s, path, err)
                   : app_new(&ui->app, s, path, &busy, err))
        return -1;
    /* C-c, SIGTERM or SIGHUP during an export stop it (busy_step), as they stop the command's. */
    app_set_export_progress(ui->app, &(struct progress_sink){busy_exporting, ui, &ui->busy.stop});
    header_panel_init(&ui->header);
    stagebar_panel_init(&ui->stagebar);
    heatmap_panel_init(&ui->heatmap);
    grid_panel_init(&ui->grid);
    inspector_panel_init(&ui->inspector);
    tokens_panel_init(&ui->tokens);
    status_panel_init(&ui->status);
    help_panel_init(&ui->help);
    caption_panel_init(&ui->caption);
    lens_panel_init(&ui->lens);
    predictions_panel_init(&ui->predictions);
    pending_panel_init(&ui->pending_map, SLOT_MAP);
    pending_panel_init(&ui->pending_side, SLOT_SIDE);
    struct panel *order[PANEL_COUNT] = {
        [PANEL_HEADER] = &ui->header,
        [PANEL_STAGEBAR] = &ui->stagebar,
        [PANEL_HEATMAP] = &ui->heatmap.base,
        [PANEL_GRID] = &ui->grid.base,
        [PANEL_INSPECTOR] = &ui->inspector,
        [PANEL_TOKENS] = &ui->tokens.base,
        [PANEL_STATUS] = &ui->status.base,
        [PANEL_HELP] = &ui->help.base,
        [PANEL_CAPTION] = &ui->caption,
        [PANEL_LENS] = &ui->lens.base,
        [PANEL_PREDICTIONS] = &ui->predictions,
        [PANEL_PENDING_MAP] = &ui->pending_map,
        [PANEL_PENDING_SIDE] = &ui->pending_side,
    };
    memcpy(ui->panels, order, sizeof(order));
    lesson_open(ui->app); /* a scene with a lesson opens on its first step */
    draw_init();
    load_configs(ui);
    app_set_keymap(ui->app, &ui->keymap); /* messages name the keys as bound */
    ui->frame = (struct frame){ui->app,          &ui->theme, &ui->keymap, &ui->config_problems,
                               ui->config_error, LINES,      COLS};
    curs_set(0);
    ui_resize(ui);
    return 0;
}

void ui_close(struct ui *ui)
{
    heatmap_panel_free(&ui->heatmap);
    grid_panel_free(&ui->grid);
    tokens_panel_free(&ui->tokens);
    app_delete(ui->app);
    attn_diag_list_free(&ui->config_problems);
}

struct ui *ui_new(struct attn_scene *s, const char *path, struct ui_stop *stop, struct diag *err)
{
    if (stop)
        *stop = (struct ui_stop){false, 0};
    struct ui *ui = calloc(1, sizeof(*ui));
    if (!ui) {
        attn_scene_free(s); /* taken, as ui_open would have */
        attn_diag_set(err, "", "out of memory");
        return NULL;
    }
    if (ui_open(ui, s, path, err) != 0) { /* it took the scene over, and freed it */
        if (stop)
            *stop = (struct ui_stop){ui->busy.stop != 0, ui->busy.stop_signal};
        free(ui);
        return NULL;
    }
    return ui;
}

void ui_delete(struct ui *ui)
{
    if (!ui)
        return;
    ui_close(ui);
    free(ui);
}

/* The panel in the map's place: the lens, every head, or one head's map. */
/* The panel in a slot's place now (panel.h): the last of its panels that wants it, else its
 * own. */
static struct panel *ui_slot(struct ui *ui, enum panel_slot slot)
{
    struct panel *own = NULL;
    for (int i = PANEL_COUNT - 1; i >= 0; i--) {
        struct panel *p = ui->panels[i];
        if (p->slot != slot)
            continue;
        if (!p->wanted)
            own = p;
        else if (p->wanted(&ui->frame))
            return p;
    }
    return own;
}

static struct panel *ui_map(struct ui *ui)
{
    return ui_slot(ui, SLOT_MAP);
}

static struct panel *ui_side(struct ui *ui)
{
    return ui_slot(ui, SLOT_SIDE);
}

static int handle_mouse(struct ui *ui)
{
    MEVENT ev;
    if (getmouse(&ev) != OK)
        return OUTCOME_IGNORED;
    struct panel *order[] = {&ui->stagebar, ui_map(ui), ui_side(ui)};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        struct panel *p = order[i];
        if (p->handle_mouse && rect_contains(p->area, ev.y, ev.x))
            return p->handle_mouse(p, &ui->frame, ev.y, ev.x, (unsigned long)ev.bstate);
    }
    return OUTCOME_IGNORED;
}

/* Opens the prompt a command asked for, if any. */
static int open_asked(struct ui *ui, struct ask *ask, int outcome)
{
    if (ask->kind != PROMPT_NONE) {
        prompt_open(&ui->status.prompt, ask->kind, ask->label, ask->initial);
        outcome |= OUTCOME_VIEW_CHANGED;
    }
    ask_clear(ask);
    return outcome;
}

/* A key while the line editor is open: edit, or hand the answer to explore/commands. */
static int prompt_input(struct ui *ui, struct key k)
{
    struct prompt *p = &ui->status.prompt;
    enum prompt_result r = prompt_key(p, k);
    if (r == PROMPT_EDITING)
        return OUTCOME_VIEW_CHANGED;
    enum prompt_kind kind = p->kind;
    int outcome;
    struct ask ask = {0};
    if (r == PROMPT_ACCEPTED) {
        static char text[PROMPT_MAX * 4 + 1];
        prompt_text(p, text, sizeof(text));
        prompt_close(p);
        outcome = command_answer(ui->app, kind, text, &ask);
    } else {
        prompt_close(p);
        outcome = command_cancel(ui->app, kind);
    }
    return open_asked(ui, &ask, outcome | OUTCOME_VIEW_CHANGED);
}

/* A paste whose end marker never comes ends after this long without a byte. */
#define PASTE_GAP_MS 1000

/* The rest of a bracketed paste, read as one piece of text up to its end marker: however long,
 * it is read through (the prompt keeps what fits, PROMPT_MAX characters at most, and says so), so
 * none of it is ever taken for keys. Into the open prompt, or with none open into the sentence
 * editor t opens (command_paste), empty: nothing changes until Enter. */
static int ui_paste(struct ui *ui)
{
    static wchar_t text[PROMPT_MAX];
    int n = 0;
    long more = 0;
    bool resized = false;
    int delay = wgetdelay(stdscr);
    timeout(PASTE_GAP_MS);
    for (;;) {
        wint_t key;
        int rc = get_wch(&key);
        if (rc == ERR || quit_signal)
            break;
        if (rc == KEY_CODE_YES) {
            if ((int)key == KEY_PASTE_END)
                break;
            resized |= (int)key == KEY_RESIZE;
            if ((int)key != KEY_ENTER)
                continue; /* a named key carries no text */
            key = L'\r';
        }
        if (n < PROMPT_MAX)
            text[n++] = (wchar_t)key;
        else
            more++;
    }
    timeout(delay);
    if (resized)
        ui_resize(ui);
    if (ui->too_small) /* nothing can be seen to paste into */
        return OUTCOME_VIEW_CHANGED;
    struct prompt *p = &ui->status.prompt;
    int outcome = OUTCOME_VIEW_CHANGED;
    bool as_sentence = !prompt_is_open(p);
    if (as_sentence) {
        ui->help.open = false;
        struct ask ask = {0};
        outcome = open_asked(ui, &ask, command_paste(ui->app, &ask));
    }
    prompt_paste(p, text, n, more, as_sentence);
    return outcome;
}

bool ui_ticking(const struct ui *ui)
{
    return app_computing(ui->app) || app_generating(ui->app) ||
           (ui->grid.unfinished && ui->grid.base.visible);
}

bool ui_compute_tick(struct ui *ui)
{
    if (ui->grid.unfinished && ui->grid.base.visible) /* its next tiles' turn */
        ui->grid.base.dirty = true;
    if (ui->grid.walk_wanted && ui->grid.base.visible) /* stream mode: every layer's tiles */
        app_request_thumbs(ui->app, &ui->grid.walk_want);
    int polled = app_poll(ui->app);
    if (polled != 1 && app_generate_tick(ui->app)) { /* G: the next token, its result in */
        ui_resize(ui);
        return true;
    }
    if (polled == 2) { /* through: the shapes and notes it makes (a not-a-number) may move */
        ui_resize(ui);
        return true;
    }
    if (polled == 1) { /* a layer came ready: the model view draws it, a pending place fills */
        ui_invalidate(ui);
        ui->pending_drawn = attn_now_ms();
        return true;
    }
    if (app_computing(ui->app) && attn_now_ms() - ui->pending_drawn >= 100) {
        ui->pending_drawn = attn_now_ms();
        ui->pending_map.dirty = ui->pending_side.dirty = ui->status.base.dirty = true;
        ui->grid.base.dirty |= app_view_state(ui->app)->all_heads;
        return true;
    }
    return ui->grid.base.dirty && ui->grid.base.visible;
}

int ui_play_tick(struct ui *ui)
{
    busy_reset(ui);
    return command_play_tick(ui->app);
}

/* Esc or C-c while a compute runs in the background, no prompt or overlay open: it stops, its
 * edit undone (app_stop_compute), or the message line says why it cannot. */
static bool stops_compute(const struct ui *ui)
{
    return app_computing(ui->app) && !prompt_is_open(&ui->status.prompt) && !ui->help.open;
}

static int ui_stop_compute(struct ui *ui, const char *key)
{
    return app_stop_compute(ui->app, key) > 0 ? OUTCOME_SCENE_CHANGED : OUTCOME_VIEW_CHANGED;
}

int ui_interrupt(struct ui *ui)
{
    if (stops_compute(ui))
        return ui_stop_compute(ui, "C-c");
    struct prompt *p = &ui->status.prompt;
    if (prompt_is_open(p) && p->kind == PROMPT_CONFIRM_QUIT) { /* C-c twice */
        ui->exit_status = 128 + SIGINT;
        return OUTCOME_QUIT;
    }
    if (prompt_is_open(p)) { /* whatever it asked, as Esc leaves it */
        enum prompt_kind kind = p->kind;
        prompt_close(p);
        command_cancel(ui->app, kind);
    }
    ui->help.open = false;
    struct ask ask = {0};
    int outcome = command_interrupt(ui->app, &ask);
    if (outcome & OUTCOME_QUIT)
        ui->exit_status = 128 + SIGINT; /* the shell's convention for C-c */
    return open_asked(ui, &ask, outcome | OUTCOME_VIEW_CHANGED);
}

static int key_action(struct ui *ui, wint_t key, bool is_code)
{
    if (is_code && key == KEY_RESIZE) {
        ui_resize(ui);
        return OUTCOME_VIEW_CHANGED;
    }
    if (is_code && key == KEY_PASTE_BEGIN)
        return ui_paste(ui);
    if (ui->too_small) /* nothing to act on that cannot be seen; C-c still quits (ui_key) */
        return OUTCOME_IGNORED;
    if (prompt_is_open(&ui->status.prompt))
        return prompt_input(ui, input_decode(key, is_code));
    if (is_code && key == KEY_MOUSE)
        return handle_mouse(ui);
    enum action act =
        keymap_lookup_mode(&ui->keymap, input_decode(key, is_code), lesson_active(ui->app));
    struct app_status *st = app_status_mut(ui->app);
    if (st->message[0] && act != ACTION_NONE) { /* a key clears the last note */
        st->message[0] = '\0';
        st->message_is_error = false;
    }
    if (ui->config_error[0] && act != ACTION_NONE)
        ui->config_error[0] = '\0';
    if (ui->help.open) /* every key either scrolls the overlay or closes it */
        return ui->help.base.handle_key(&ui->help.base, &ui->frame, act);
    switch (act) {
    case ACTION_NONE:
        return OUTCOME_IGNORED;
    case ACTION_HELP:
        ui->help.open = true;
        return OUTCOME_VIEW_CHANGED;
    case ACTION_REDRAW:
        clearok(curscr, TRUE);
        ui_invalidate(ui);
        return OUTCOME_VIEW_CHANGED;
    default:
        break;
    }
    struct panel *focus = ui_map(ui);
    int r = focus->handle_key ? focus->handle_key(focus, &ui->frame, act) : OUTCOME_IGNORED;
    if (r != OUTCOME_IGNORED)
        return r;
    struct ask ask = {0};
    return open_asked(ui, &ask, command_run(ui->app, act, &ask));
}

int ui_key(struct ui *ui, wint_t key, bool is_code)
{
    busy_reset(ui);
    if (app_generating(ui->app)) { /* G: any key stops it, and does nothing else */
        app_generate_stop(ui->app, "a key");
        return OUTCOME_VIEW_CHANGED;
    }
    int outcome = !is_code && key == 3                         ? ui_interrupt(ui)
                  : !is_code && key == 27 && stops_compute(ui) ? ui_stop_compute(ui, "Esc")
                                                               : key_action(ui, key, is_code);
    busy_said(ui);
    return outcome;
}

void ui_mark(struct ui *ui, int outcome)
{
    if (outcome & OUTCOME_SCENE_CHANGED) {
        ui_resize(ui); /* the token count decides the stacked layout */
        return;
    }
    if (outcome & OUTCOME_CURSOR_MOVED) {
        /* A cursor move touches the map, the inspector (or token view) and the status line. */
        for (int i = 0; i < PANEL_COUNT; i++)
            if (ui->panels[i]->follows_cursor)
                ui->panels[i]->dirty = true;
    }
    if (app_view_state(ui->app)->token_view !=
        ui->tokens_laid_out) { /* v: the stacked layout changes */
        ui_resize(ui);
        return;
    }
    if (outcome & OUTCOME_VIEW_CHANGED) /* a view change touches every panel, and may want */
        ui_resize(ui); /* other rows (all heads, a lesson step); never the engine */
}

void ui_draw(struct ui *ui)
{
    /* Stream mode: a layer in view without its stages is recomputed first (a job: the pending
       panels take the places that read it) */
    bool computing = app_computing(ui->app);
    app_show_layer(ui->app);
    if (!computing && app_computing(ui->app))
        ui_invalidate(ui);
    if (ui->too_small) {
        /* Short lines, centred, so even a tiny window can read what it needs. */
        erase();
        char need[64], have[64];
        snprintf(need, sizeof(need), "needs %d\u00d7%d", UI_MIN_COLS, UI_MIN_LINES);
        snprintf(have, sizeof(have), "this is %d\u00d7%d", ui->cols, ui->lines);
        bool asked = ui->status.prompt.kind == PROMPT_CONFIRM_QUIT; /* by C-c: again quits */
        const char *lines[] = {"terminal too small", "attnscope", need, have,
                               asked ? "unsaved edits: C-c again quits" : "enlarge it to go on"};
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
    struct panel *map = ui_map(ui), *side = ui_side(ui);
    for (int i = 0; i < PANEL_COUNT; i++) {
        struct panel *p = ui->panels[i];
        if (p->slot != SLOT_OWN)
            p->visible = p == (p->slot == SLOT_MAP ? map : side);
    }
    ui->help.base.visible = ui->help.open;
    ui->header.visible = ui->stagebar.visible = true;
    ui->caption.visible = ui->caption.area.h > 0;
    ui->status.base.visible = true;
    /* The row between the stage bar and the map stays blank (when there is one). */
    if (ui->heatmap.base.area.y == 4) {
        move(3, 0);
        clrtoeol();
    }
    /* Status last: when the prompt is open it leaves the cursor in the line editor. While the
     * help overlay covers the panels they are not drawn; they stay dirty until it closes. */
    struct panel *order[PANEL_COUNT];
    int n = 0;
    order[n++] = &ui->header;
    order[n++] = &ui->stagebar;
    for (int i = 0; i < PANEL_COUNT; i++) /* the map's place, then the inspector's */
        if (ui->panels[i]->slot == SLOT_MAP)
            order[n++] = ui->panels[i];
    for (int i = 0; i < PANEL_COUNT; i++)
        if (ui->panels[i]->slot == SLOT_SIDE)
            order[n++] = ui->panels[i];
    order[n++] = &ui->caption;
    order[n++] = &ui->help.base;
    order[n++] = &ui->status.base;
    for (int i = 0; i < n; i++) {
        struct panel *p = order[i];
        bool covered =
            ui->help.open && p != &ui->help.base && p != &ui->status.base && p != &ui->header;
        if (!p->visible || !p->dirty || covered)
            continue;
        p->draw(p, &ui->frame);
        p->dirty = false;
    }
    /* The terminal cursor belongs in the line editor while it is open, hidden otherwise. */
    if (prompt_is_open(&ui->status.prompt)) {
        move(ui->status.prompt.cursor_y, ui->status.prompt.cursor_x);
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
    paste_setup();
}

int ui_vterm_open(struct ui_vterm *t, int cols, int lines, struct diag *err)
{
    *t = (struct ui_vterm){fopen("/dev/null", "r"), fopen("/dev/null", "w"), NULL};
    if (t->in && t->sink)
        t->scr = newterm("xterm-256color", t->sink, t->in);
    if (!t->scr) {
        if (t->in)
            fclose(t->in);
        if (t->sink)
            fclose(t->sink);
        *t = (struct ui_vterm){0};
        return attn_diag_set(err, "", "cannot open a virtual terminal (xterm-256color)");
    }
    set_term(t->scr);
    resizeterm(lines, cols);
    ui_setup_terminal();
    return 0;
}

void ui_vterm_close(struct ui_vterm *t)
{
    endwin();
    delscreen(t->scr);
    fclose(t->in);
    fclose(t->sink);
    *t = (struct ui_vterm){0};
}

static void on_quit_signal(int sig)
{
    if (sig == SIGINT)
        interrupts = interrupts + 1;
    else
        quit_signal = sig;
}

static void restore_terminal(void)
{
    if (!isendwin()) {
        if (paste_mode.off_len) {
            putp(paste_mode.off); /* putp writes through stdio */
            fflush(stdout);
        }
        endwin();
    }
    attn_fatal_clear_terminal();
    /* The loop that answered them is over: from here a hangup, SIGTERM or C-c ends the process
       at once. Kept as flags, the SIGHUP and SIGCONT a closed terminal sends were swallowed
       during ASan's leak check at exit, and when the SIGCONT cancelled the stop its ptrace
       waited for, the process spun on, orphaned. */
    signal(SIGHUP, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
}

/* C-z: curses' own SIGTSTP handler (endwin, stop, redraw on fg) between bracketed paste off and
 * on again, so the shell the explorer is suspended to gets plain pastes. Only write(2) here. */
static struct sigaction curses_tstp;

static void on_tstp(int sig)
{
    int saved = errno;
    if (paste_mode.off_len && write(STDOUT_FILENO, paste_mode.off, paste_mode.off_len) < 0)
        errno = saved;
    curses_tstp.sa_handler(sig);
    if (paste_mode.on_len && write(STDOUT_FILENO, paste_mode.on, paste_mode.on_len) < 0)
        errno = saved;
    errno = saved;
}

/* Bracketed paste on (restore_terminal and the crash path turn it off again). */
static void paste_on(void)
{
    if (!paste_mode.on_len)
        return;
    putp(paste_mode.on); /* through stdio */
    fflush(stdout);
    struct sigaction cur;
    if (sigaction(SIGTSTP, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN && cur.sa_handler != on_tstp) {
        curses_tstp = cur;
        struct sigaction sa = cur;
        sa.sa_handler = on_tstp;
        sigaction(SIGTSTP, &sa, NULL);
    }
}

/* Hands common/fatal the bytes that undo what curses did (normal attributes and cursor, keypad,
 * mouse and bracketed paste off, the alternate screen left) and the shell's terminal modes, so a
 * crash restores the terminal without calling curses from a signal handler. */
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
    if (n + paste_mode.off_len <= sizeof(reset)) {
        memcpy(reset + n, paste_mode.off, paste_mode.off_len);
        n += paste_mode.off_len;
    }
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        const char *seq = tigetstr(caps[i]);
        size_t len = seq && seq != (char *)-1 ? strlen(seq) : 0;
        if (n + len <= sizeof(reset)) {
            memcpy(reset + n, seq, len);
            n += len;
        }
    }
    attn_fatal_set_terminal(STDOUT_FILENO, saved, reset, n);
}

/* Whether the keys' terminal is gone: a read that ends without a key is a timer's or a signal's,
 * unless the terminal hung up (its ssh connection or tmux pane closed: a terminal that is not
 * the process's controlling one sends no SIGHUP, and every read then fails at once, which
 * spun the loop at full speed for hours). */
static bool terminal_gone(void)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    int n = poll(&p, 1, 0);
    return (n < 0 && errno != EINTR) || (n > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)));
}

int ui_main(struct attn_scene *scene, const char *scene_path, struct attn_scene *baseline,
            const char *baseline_name)
{
    /* Only the character set comes from the environment (ncursesw needs it for wide
     * characters); numbers stay in the C locale, and common/cnum enforces that anyway. */
    setlocale(LC_CTYPE, "");
    struct attn_scene s = *scene, base; /* ours now */
    attn_scene_init(scene);
    attn_scene_init(&base); /* freed on every way out, whether or not there is one */
    if (baseline) {
        base = *baseline;
        attn_scene_init(baseline);
    }

    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "attnscope: the explorer needs a terminal; try `attnscope print%s%s`\n",
                scene_path ? " " : "", scene_path ? scene_path : "");
        attn_scene_free(&s);
        attn_scene_free(&base);
        return 2;
    }
    struct termios shell_modes;
    bool have_modes = tcgetattr(STDOUT_FILENO, &shell_modes) == 0;
    if (!newterm(NULL, stdout, stdin)) {
        fprintf(stderr, "attnscope: cannot open the terminal (TERM=%s)\n",
                getenv("TERM") ? getenv("TERM") : "");
        attn_scene_free(&s);
        attn_scene_free(&base);
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
        attn_scene_free(&s);
        attn_scene_free(&base);
        return 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_quit_signal; /* no SA_RESTART: a blocked read returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    attn_fatal_install_quit_handler(); /* C-\: out at once, the terminal restored */
    ui_setup_terminal();
    paste_on();
    if (have_modes)
        arm_crash_restore(&shell_modes);

    struct diag err;
    attn_diag_clear(&err);
    struct ui_stop stop;
    ui_use_background(true); /* keys are answered while it computes, the first time too */
    struct ui *ui = ui_new(&s, scene_path, &stop, &err); /* takes s */
    if (!ui) {
        attn_scene_free(&base);
        restore_terminal();
        if (stop.stopped) /* q while the scene was first computed: quit, as q does */
            fprintf(stderr, "attnscope: stopped while computing %s\n",
                    scene_path ? scene_path : "the scene");
        else
            fprintf(stderr, "attnscope: %s\n", err.msg);
        return quit_signal    ? 128 + quit_signal
               : stop.signal  ? 128 + stop.signal
               : stop.stopped ? 0
                              : 1;
    }
    if (baseline) /* the first result is computed, then the baseline's: Δ from the first frame */
        app_pin_baseline_scene(ui->app, &base, baseline_name);
    int status = 0;
    ui_draw(ui);
    while (!quit_signal) {
        int outcome;
        if (interrupts) { /* C-c at rest (one during a compute stopped it) */
            interrupts = 0;
            outcome = ui_interrupt(ui);
        } else {
            /* While a compute runs the loop wakes every COMPUTE_TICK_MS to show the layers it
               has done; a key wakes it at once either way. */
            bool playing = app_view_state(ui->app)->playing, ticking = ui_ticking(ui);
            int wait = playing ? app_view_state(ui->app)->play_ms : -1;
            if (ticking && (wait < 0 || wait > COMPUTE_TICK_MS))
                wait = COMPUTE_TICK_MS;
            timeout(wait);
            wint_t key;
            int rc = get_wch(&key);
            if (quit_signal)
                break;
            if (rc == ERR && terminal_gone()) { /* as SIGHUP: nobody reads this screen */
                quit_signal = SIGHUP;
                break;
            }
            if (rc == ERR) { /* the auto-play timer, a compute's tick, or a signal (at the top) */
                bool draw = ticking && ui_compute_tick(ui);
                if (playing && !interrupts && (!ticking || attn_now_ms() >= ui->play_due)) {
                    ui_mark(ui, ui_play_tick(ui));
                    ui->play_due = attn_now_ms() + app_view_state(ui->app)->play_ms;
                    draw = true;
                }
                if (draw)
                    ui_draw(ui);
                continue;
            }
            outcome = ui_key(ui, key, rc == KEY_CODE_YES);
        }
        if (outcome & OUTCOME_QUIT) {
            status = ui->exit_status;
            break;
        }
        ui_mark(ui, outcome);
        if (app_computing(ui->app))
            ui_compute_tick(ui);
        ui_draw(ui);
    }
    /* The screen goes first: a compute still running is stopped and joined after, unseen. */
    bool computing = app_computing(ui->app);
    restore_terminal();
    if (computing && status == 0 && !quit_signal)
        fprintf(stderr, "attnscope: stopped while computing %s\n",
                scene_path ? scene_path : "the scene");
    ui_delete(ui);
    if (quit_signal) /* the shell's convention: 130 for C-c, 143 for SIGTERM */
        status = 128 + quit_signal;
    return status;
}
