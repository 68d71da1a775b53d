/* test_screens: golden screens of the explorer.
 *
 * Each tests/screens/NAME.keys is a script: header lines set the scene, size, TERM and
 * NO_COLOR (`# no_color`) and the locale (`# locale: C`); then key names (keys.yaml notation: q
 * Left C-r Enter ...), `"text` lines to type text, `paste TEXT` for a bracketed paste of TEXT
 * (`\n` a line end), `resize COLSxLINES`, and `click X,Y` /
 * `wheel-down X,Y` (0-based screen cells). The script is played into the real UI through a pipe on
 * a virtual terminal (newterm), one key at a time like the event loop does, and the final screen
 * (its text, then every cell's look: see ui_dump) must equal NAME.screen. Set
 * ATTNSCOPE_UPDATE_SCREENS=1 to rewrite the .screen files after a deliberate change; that run
 * names the files it changed and fails, so it never passes by accident: review the diff, then
 * run again without it.
 */
#define _XOPEN_SOURCE_EXTENDED 1
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>

#include <cmocka.h>

#include "scenefile/scenefile.h"
#include "testutil.h"
#include "explore/appstate.h"
#include "ui/ui.h"

struct script {
    char scene[512];
    int cols, lines;
    char term[64];
    bool no_color;
    bool c_locale; /* LC_ALL=C, as over ssh: the explorer draws ASCII stand-ins */
};

/* Terminfo capability for each named special key. */
static const struct {
    const char *name, *cap;
} caps[] = {
    {"Left", "kcub1"},   {"Right", "kcuf1"},  {"Up", "kcuu1"},   {"Down", "kcud1"},
    {"PgUp", "kpp"},     {"PgDn", "knp"},     {"Home", "khome"}, {"End", "kend"},
    {"BackTab", "kcbt"}, {"Delete", "kdch1"}, {"F1", "kf1"},
};

/* The bytes a terminal sends for a key name. */
static int key_bytes(const char *name, char *out, size_t size)
{
    if (strlen(name) == 1)
        return snprintf(out, size, "%s", name);
    if (strlen(name) == 3 && name[0] == 'C' && name[1] == '-')
        return snprintf(out, size, "%c", name[2] & 0x1f);
    static const struct {
        const char *name, *bytes;
    } plain[] = {
        {"Enter", "\r"}, {"Tab", "\t"}, {"Space", " "}, {"Esc", "\033"}, {"Backspace", "\177"}};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        if (strcmp(name, plain[i].name) == 0)
            return snprintf(out, size, "%s", plain[i].bytes);
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
        if (strcmp(name, caps[i].name) == 0) {
            char *seq = tigetstr(caps[i].cap);
            if (seq && seq != (char *)-1)
                return snprintf(out, size, "%s", seq);
        }
    return -1;
}

/* Reads every key the terminal has decoded so far and hands it to the UI. */
static void drain(struct ui *ui, bool *quit)
{
    wint_t key;
    int rc;
    while ((rc = get_wch(&key)) != ERR) {
        int handled = ui_key(ui, key, rc == KEY_CODE_YES);
        if (handled & OUTCOME_QUIT)
            *quit = true;
        ui_mark(ui, handled);
        ui_draw(ui);
    }
}

/* Prints the lines where got differs from want, numbered, then the whole of got. */
static void report_difference(const char *name, const char *path, const char *want, const char *got)
{
    fprintf(stderr, "--- %s: screen differs from %s", name, path);
    if (!want) {
        fprintf(stderr, " (missing)\n");
    } else {
        fprintf(stderr, ":\n");
        int line = 1, shown = 0;
        const char *w = want, *g = got;
        while ((*w || *g) && shown < 30) {
            size_t wn = strcspn(w, "\n"), gn = strcspn(g, "\n");
            if (wn != gn || memcmp(w, g, wn) != 0) {
                fprintf(stderr, "line %d\n  want: %.*s\n  got:  %.*s\n", line, (int)wn, w, (int)gn,
                        g);
                shown++;
            }
            w += wn + (w[wn] == '\n');
            g += gn + (g[gn] == '\n');
            line++;
        }
    }
    fprintf(stderr, "--- got:\n%s\n", got);
}

/* A decimal number's text at s ("-5.3788", "0.79"): its length, its digits after the point in
 * *places and its value in units of the last place in *units; 0 when s holds none. */
static size_t decimal_at(const char *s, int *places, long long *units)
{
    size_t i = s[0] == '-' ? 1 : 0, start = i;
    while (s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == start || s[i] != '.' || !(s[i + 1] >= '0' && s[i + 1] <= '9'))
        return 0;
    long long v = 0;
    for (size_t k = start; k < i; k++)
        v = v * 10 + (s[k] - '0');
    size_t point = i++;
    while (s[i] >= '0' && s[i] <= '9' && v < LLONG_MAX / 100)
        v = v * 10 + (s[i++] - '0');
    *places = (int)(i - point - 1);
    *units = s[0] == '-' ? -v : v;
    return i;
}

/* Whether screen got is screen want up to the last shown digit of its decimals: the same text
 * everywhere else (the layout, every integer, every label, every cell's look), and each decimal
 * either the same or one unit of its last place away. The numbers come from float32 products
 * whose last bit follows the BLAS kernel (docs/exactness.md): a value near a rounding boundary
 * prints 5.3788 on one CPU and 5.3789 on another, and a golden screen must not fail for that.
 * Every such pair is printed. */
static bool same_but_last_digits(const char *name, const char *want, const char *got)
{
    const char *legend = strstr(want, "\n-- attributes\n");
    size_t text_len = legend ? (size_t)(legend - want) : strlen(want);
    if (strlen(got) != strlen(want) || strcmp(want + text_len, got + text_len) != 0)
        return false; /* a look or the layout differs: not a rounding */
    int tolerated = 0;
    for (size_t i = 0; i < text_len;) {
        int pw, pg;
        long long uw, ug;
        bool boundary = i == 0 || !(want[i - 1] >= '0' && want[i - 1] <= '9');
        size_t lw = boundary ? decimal_at(want + i, &pw, &uw) : 0;
        size_t lg = boundary ? decimal_at(got + i, &pg, &ug) : 0;
        if (lw && lw == lg && pw == pg && (uw - ug == 1 || ug - uw == 1)) {
            printf("%s: %.*s on the golden screen, %.*s here: one unit of the last digit\n", name,
                   (int)lw, want + i, (int)lg, got + i);
            tolerated++;
            i += lw;
            continue;
        }
        if (want[i] != got[i])
            return false;
        i++;
    }
    return tolerated > 0;
}

/* Plays one script and compares the screen with its golden file; returns whether they matched.
 * With update, a golden file that differs is rewritten and named. */
static bool run_script(const char *dir, const char *name, bool update)
{
    char path[1024];
    snprintf(path, sizeof(path), "%.500s/%.500s", dir, name);
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    struct script sc = {"", 100, 30, "xterm-256color", false, false};
    char *header = strdup(text);
    for (char *save = NULL, *line = strtok_r(header, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        sscanf(line, "# scene: %511s", sc.scene);
        sscanf(line, "# size: %dx%d", &sc.cols, &sc.lines);
        sscanf(line, "# term: %63s", sc.term);
        if (strncmp(line, "# no_color", 10) == 0)
            sc.no_color = true;
        if (strncmp(line, "# locale: C", 11) == 0)
            sc.c_locale = true;
    }
    free(header);

    char buf[32];
    snprintf(buf, sizeof(buf), "%d", sc.cols);
    setenv("COLUMNS", buf, 1);
    snprintf(buf, sizeof(buf), "%d", sc.lines);
    setenv("LINES", buf, 1);
    if (sc.no_color)
        setenv("NO_COLOR", "1", 1);
    else
        unsetenv("NO_COLOR");
    /* A fresh config home, so a developer's own keys.yaml cannot change the screens. */
    setenv("XDG_CONFIG_HOME", "/nonexistent-attnscope-test", 1);

    setlocale(LC_ALL, sc.c_locale ? "C" : "C.UTF-8");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    FILE *in = fdopen(fds[0], "r");
    FILE *out = fopen("/dev/null", "w");
    SCREEN *scr = newterm(sc.term, out, in);
    assert_non_null(scr);
    set_term(scr);
    ui_setup_terminal();
    nodelay(stdscr, TRUE);

    struct attn_scene s;
    if (sc.scene[0]) {
        char scene_path[1024];
        snprintf(scene_path, sizeof(scene_path), "%.500s/%.500s", getenv("ATTNSCOPE_SOURCE_ROOT"),
                 sc.scene);
        struct diag_list errs;
        attn_diag_list_init(&errs);
        if (attn_scenefile_load(&s, scene_path, &errs, NULL, NULL)) {
            fail_msg("%s: cannot load %s: %s", name, scene_path, errs.n ? errs.items[0].msg : "");
        }
        attn_diag_list_free(&errs);
    } else {
        attn_scene_init_default(&s);
    }
    struct ui *ui = calloc(1, sizeof(*ui));
    struct diag err;
    assert_int_equal(ui_open(ui, &s, sc.scene[0] ? sc.scene : NULL, &err), 0);
    ui_draw(ui);

    bool quit = false;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && !quit;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        if (line[0] == '"') { /* type the rest of the line literally */
            size_t len = strlen(line + 1);
            /* A short write would type part of the line and pass on a different screen. */
            assert_true(write(fds[1], line + 1, len) == (ssize_t)len);
            drain(ui, &quit);
            continue;
        }
        int c, l;
        char what[16];
        if (sscanf(line, "%15s %d,%d", what, &c, &l) == 3 &&
            (strcmp(what, "click") == 0 || strcmp(what, "wheel-down") == 0)) {
            /* An xterm SGR mouse report (1-based column, row): press, then release. */
            char seq[64];
            int button = what[0] == 'c' ? 0 : 65;
            int n = snprintf(seq, sizeof(seq), "\033[<%d;%d;%dM\033[<%d;%d;%dm", button, c + 1,
                             l + 1, button, c + 1, l + 1);
            assert_true(write(fds[1], seq, (size_t)n) == n);
            drain(ui, &quit);
            continue;
        }
        if (strncmp(line, "paste ", 6) == 0) { /* a bracketed paste of the rest, \n a line end */
            char seq[1024];
            size_t n = (size_t)snprintf(seq, sizeof(seq), "%s", tigetstr("PS"));
            for (const char *t = line + 6; *t && n + 16 < sizeof(seq); t++)
                seq[n++] = t[0] == '\\' && t[1] == 'n' ? (t++, '\n') : *t;
            n += (size_t)snprintf(seq + n, sizeof(seq) - n, "%s", tigetstr("PE"));
            assert_true(write(fds[1], seq, n) == (ssize_t)n);
            drain(ui, &quit);
            continue;
        }
        if (sscanf(line, "resize %dx%d", &c, &l) == 2) {
            resizeterm(l, c);
            ui_key(ui, KEY_RESIZE, true);
            ui_mark(ui, OUTCOME_VIEW_CHANGED);
            ui_draw(ui);
            drain(ui, &quit);
            continue;
        }
        for (char *save2 = NULL, *k = strtok_r(line, " \t", &save2); k;
             k = strtok_r(NULL, " \t", &save2)) {
            char bytes[32];
            int n = key_bytes(k, bytes, sizeof(bytes));
            if (n < 0)
                fail_msg("%s: unknown key name '%s'", name, k);
            assert_true(write(fds[1], bytes, (size_t)n) == n);
            drain(ui, &quit);
        }
    }

    char *got = NULL;
    size_t got_len = 0;
    FILE *mem = open_memstream(&got, &got_len);
    ui_dump(ui, mem);
    fclose(mem);
    setlocale(LC_ALL, "C.UTF-8");
    ui_close(ui);
    free(ui);
    endwin();
    delscreen(scr);
    fclose(in);
    close(fds[1]);
    fclose(out);

    char screen_path[1024];
    snprintf(screen_path, sizeof(screen_path), "%.500s/%.*s.screen", dir,
             (int)(strlen(name) - strlen(".keys")), name);
    char *want = tu_read_file(screen_path, NULL);
    bool same = want && (strcmp(want, got) == 0 || same_but_last_digits(name, want, got));
    if (same) {
        printf("%s: screen matches (%dx%d, %s%s)\n", name, sc.cols, sc.lines, sc.term,
               sc.no_color ? ", NO_COLOR" : "");
    } else if (update) {
        tu_write_text(screen_path, got);
        printf("%s: updated %s\n", name, screen_path);
    } else {
        report_difference(name, screen_path, want, got);
    }
    free(want);
    free(got);
    free(text);
    return same;
}

static void test_golden_screens(void **state)
{
    (void)state;
    const char *dir = getenv("ATTNSCOPE_SCREENS");
    assert_non_null(dir);
    bool update = tu_update_mode("ATTNSCOPE_UPDATE_SCREENS");
    int n;
    char **names = tu_list_names(dir, ".keys", &n);
    assert_non_null(names);
    assert_true(n >= 5);
    /* Every script runs, so one failure names all the screens that differ. */
    char differ[4096] = "";
    int n_differ = 0;
    for (int i = 0; i < n; i++)
        if (!run_script(dir, names[i], update)) {
            size_t len = strlen(differ);
            snprintf(differ + len, sizeof(differ) - len, " %.*s.screen",
                     (int)(strlen(names[i]) - strlen(".keys")), names[i]);
            n_differ++;
        }
    tu_free_names(names, n);
    /* An update run fails even when nothing changed, so it can never stand in for a real run. */
    if (update)
        tu_update_done("ATTNSCOPE_UPDATE_SCREENS", n_differ, n, differ);
    if (n_differ)
        fail_msg("%d of %d screens differ from their golden files:%s", n_differ, n, differ);
}

/* ---- the stage bar's names, through print --stage ---------------------------------------- */

/* The words of screen line y (UTF-8), split at blanks and the padded bar's dots, "…" left out. */
static int line_words(char words[][64], int max, int y)
{
    wchar_t w[512];
    int n = mvinnwstr(y, 0, w, (int)(sizeof(w) / sizeof(w[0])) - 1);
    if (n < 0)
        return 0;
    w[n] = L'\0';
    char line[2048];
    if (wcstombs(line, w, sizeof(line)) == (size_t)-1)
        return 0;
    int count = 0;
    for (char *save = NULL, *t = strtok_r(line, " ", &save); t && count < max;
         t = strtok_r(NULL, " ", &save))
        if (strcmp(t, "\u00b7") != 0 && strcmp(t, "\u2026") != 0)
            snprintf(words[count++], sizeof(words[0]), "%s", t);
    return count;
}

/* Runs `attnscope print SCENE --stage NAME --head 0` (ATTNSCOPE_BIN); true when it exits 0. */
static bool print_takes(const char *scene, const char *name)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%.2000s' print '%.2000s' --stage '%.60s' --head 0 >/dev/null 2>&1",
             getenv("ATTNSCOPE_BIN"), scene, name);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

/* One name per stage, everywhere: every name the stage bar shows, of every shipped scene (and
 * the Qwen3 and Llama checkpoints' stages no shipped scene has) at 64, 80 and 100 columns,
 * walked through every stage so the bar's window shows each, is a name `print --stage` takes
 * for that scene, and the stage's own name (the bar wrote "res1", "hidden", "gelu_tanh",
 * "weighted", "final", "Q", which --stage refused). */
static void test_stage_bar_names(void **state)
{
    (void)state;
    const char *root = getenv("ATTNSCOPE_SOURCE_ROOT");
    assert_non_null(root);
    assert_non_null(getenv("ATTNSCOPE_BIN"));
    char dir[1024];
    snprintf(dir, sizeof(dir), "%.900s/scenes", root);
    int n;
    char **names = tu_list_names(dir, ".yaml", &n);
    assert_non_null(names);
    assert_true(n >= 30);
    char scenes[68][1024];
    int n_scenes = 0;
    for (int i = 0; i < n && n_scenes < 62; i++)
        snprintf(scenes[n_scenes++], sizeof(scenes[0]), "%.500s/%.500s", dir, names[i]);
    tu_free_names(names, n);
    snprintf(scenes[n_scenes++], sizeof(scenes[0]),
             "%.900s/tests/golden/families/scenes/qwen3-qknorm.yaml", root);
    snprintf(scenes[n_scenes++], sizeof(scenes[0]),
             "%.900s/tests/golden/families/scenes/llama-gqa.yaml", root);
    /* soft-capping and the sandwich's post-norms; a mixture's router */
    snprintf(scenes[n_scenes++], sizeof(scenes[0]),
             "%.900s/tests/golden/families/scenes/gemma2.yaml", root);
    snprintf(scenes[n_scenes++], sizeof(scenes[0]),
             "%.900s/tests/golden/families/scenes/qwen2-moe.yaml", root);
    /* an encoder-decoder: T5's position bias, a decoder's self- and cross-attention */
    snprintf(scenes[n_scenes++], sizeof(scenes[0]), "%.900s/tests/golden/seq2seq/scenes/t5.yaml",
             root);
    bool printed[STAGE_COUNT] = {false};
    int shown = 0;
    setenv("XDG_CONFIG_HOME", "/nonexistent-attnscope-test", 1);
    unsetenv("NO_COLOR");
    for (int sc = 0; sc < n_scenes; sc++) {
        static const int widths[] = {64, 80, 100};
        for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++) {
            FILE *in = fopen("/dev/null", "r"), *out = fopen("/dev/null", "w");
            SCREEN *scr = newterm("xterm-256color", out, in);
            assert_non_null(scr);
            set_term(scr);
            resizeterm(30, widths[wi]);
            ui_setup_terminal();
            struct attn_scene s;
            struct diag_list errs;
            attn_diag_list_init(&errs);
            if (attn_scenefile_load(&s, scenes[sc], &errs, NULL, NULL))
                fail_msg("cannot load %s", scenes[sc]);
            attn_diag_list_free(&errs);
            struct ui *ui = calloc(1, sizeof(*ui));
            struct diag err;
            assert_int_equal(ui_open(ui, &s, scenes[sc], &err), 0);
            enum attn_stage order[STAGE_COUNT];
            int n_order = attn_stage_order(order, app_model(ui->app));
            /* from the first stage to the last, one '.' at a time */
            ui->app->view.stage = order[0];
            ui_mark(ui, OUTCOME_VIEW_CHANGED);
            for (int k = 0; k < n_order; k++) {
                ui_draw(ui);
                char words[STAGE_COUNT + 4][64];
                int nw = line_words(words, STAGE_COUNT + 4, 2);
                assert_true(nw > 0);
                for (int j = 0; j < nw; j++) {
                    int st = attn_stage_parse(words[j]);
                    if (st < 0 || strcmp(attn_stage_name((enum attn_stage)st), words[j]) != 0)
                        fail_msg("%s at %d columns: the stage bar shows '%s', not a stage's name",
                                 scenes[sc], widths[wi], words[j]);
                    shown++;
                    if (!printed[st]) {
                        if (!print_takes(scenes[sc], words[j]))
                            fail_msg("%s: print --stage %s, a name on its stage bar, fails",
                                     scenes[sc], words[j]);
                        printed[st] = true;
                    }
                }
                ui_mark(ui, ui_key(ui, '.', false));
            }
            ui_close(ui);
            free(ui);
            endwin();
            delscreen(scr);
            fclose(in);
            fclose(out);
        }
    }
    /* every stage was on some bar and went through print */
    for (int st = 0; st < STAGE_COUNT; st++)
        if (!printed[st])
            fail_msg("no stage bar showed %s", attn_stage_name((enum attn_stage)st));
    printf("stage bar: %d names shown, all %d stages printed by print --stage\n", shown,
           STAGE_COUNT);
}

/* Every step of every 256-colour scale has its own palette index, and the steps are fine enough
 * that attention weights 0.05 apart (on a 0..1 scale) always get different ones. */
static void test_scale_indices(void **state)
{
    (void)state;
    for (int diverging = 0; diverging < 2; diverging++)
        for (int scale = 0; scale < (diverging ? 2 : 3); scale++) {
            int idx[SCALE_STEPS];
            palette_xterm_indices(idx, scale, diverging);
            for (int a = 0; a < SCALE_STEPS; a++) {
                assert_true(idx[a] >= 16 && idx[a] < 256);
                for (int b = a + 1; b < SCALE_STEPS; b++)
                    if (idx[a] == idx[b])
                        fail_msg("scale %d%s: steps %d and %d share palette index %d", scale,
                                 diverging ? " (diverging)" : "", a, b, idx[a]);
            }
        }
    for (int k = 0; k + 5 <= 100; k++) { /* weights k/100 and k/100 + 0.05 */
        int s0 = (int)(k / 100.0 * (SCALE_STEPS - 1) + 0.5);
        int s1 = (int)((k + 5) / 100.0 * (SCALE_STEPS - 1) + 0.5);
        assert_true(s1 > s0);
    }
}

int main(void)
{
    setlocale(LC_ALL, "C.UTF-8");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden_screens),
                                       cmocka_unit_test(test_stage_bar_names),
                                       cmocka_unit_test(test_scale_indices)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
