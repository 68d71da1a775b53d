/* test_config: keys.yaml and colors.yaml.
 *
 * Every fixtures/config/NAME.yaml is loaded (keys-* as keys, colors-* as colours): with a
 * NAME.expect beside it, the file must be refused with exactly those diagnostic lines, in order
 * (a missing, extra or reordered line fails, shown as a diff); without one it must load
 * cleanly. The shipped configs/ files must load cleanly, and keys.yaml must
 * bind exactly the default keys of explore/actions.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/diag.h"
#include "config/config.h"
#include "testutil.h"
#include "explore/actions.h"
#include "explore/keys.h"
#include "explore/roles.h"

/* The names and default keys of explore/actions.h's action_table, as the config API takes them. */
static const char *action_names[ACTION_COUNT];
static const char *default_keys[ACTION_COUNT];
static int action_layers[ACTION_COUNT]; /* the key layer of each (base, lesson) */

/* A name of the keys.yaml notation, exactly as the explorer accepts it (ui/keys.h). */
static bool valid_key(const char *name)
{
    return keyname_valid(name);
}

static char *env_dir(const char *var, const char *sub)
{
    const char *base = getenv(var);
    if (!base)
        fail_msg("%s is not set (run the test through meson test)", var);
    size_t n = strlen(base) + strlen(sub) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s%s%s", base, *sub ? "/" : "", sub);
    return p;
}

static int load_keys(struct key_config *k, const char *path, struct diag_list *errs)
{
    return config_load_keys(k, path, action_names, action_layers, ACTION_COUNT, valid_key, errs);
}

static int load_colors(struct color_config *c, const char *path, struct diag_list *errs)
{
    return config_load_colors(c, path, role_names, ROLE_COUNT, scale_names, n_scale_names,
                              diverging_names, n_diverging_names, errs);
}

/* The "file:line:col: message" line attn_diag_print gives for d, without its newline. */
static char *diag_line(const struct diag *d)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    assert_non_null(f);
    attn_diag_print(f, d, NULL, 0);
    fclose(f);
    if (size > 0 && buf[size - 1] == '\n')
        buf[size - 1] = '\0';
    return buf;
}

/* Checks one fixture (we are in its folder, so diagnostics name it by its base name); prints
 * what differs and returns false when it does not behave as its .expect says. */
/* .expect files an ATTNSCOPE_UPDATE_EXPECT=1 run rewrote. */
static int n_rewritten;

static bool check_fixture(const char *name)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    int rc;
    bool keys = strncmp(name, "keys-", 5) == 0;
    if (keys) {
        struct key_config k;
        rc = load_keys(&k, name, &errs);
        if (rc != CONFIG_OK)
            for (int a = 0; a < k.n_actions; a++)
                assert_false(k.set[a]); /* a refused file sets nothing */
        key_config_free(&k);
    } else {
        assert_int_equal(strncmp(name, "colors-", 7), 0);
        struct color_config c;
        rc = load_colors(&c, name, &errs);
        if (rc != CONFIG_OK) {
            for (int r = 0; r < c.n_roles; r++)
                assert_false(c.roles[r].set);
            assert_false(c.scale_set || c.diverging_set);
        }
        color_config_free(&c);
    }

    char expect_name[256];
    snprintf(expect_name, sizeof(expect_name), "%.*s.expect", (int)(strlen(name) - 5), name);
    char *expect = tu_read_file(expect_name, NULL);
    char *source = tu_read_file(name, NULL);
    printf("%s: %s, %d problem(s)\n", name, rc == CONFIG_OK ? "ok" : "refused", errs.n);
    for (int i = 0; i < errs.n; i++)
        attn_diag_print(stdout, &errs.items[i], source, source ? strlen(source) : 0);

    char **got = calloc((size_t)errs.n + 1, sizeof(*got));
    assert_non_null(got);
    for (int i = 0; i < errs.n; i++)
        got[i] = diag_line(&errs.items[i]);
    bool ok = true;
    if (!expect) {
        if (rc != CONFIG_OK || errs.n != 0) {
            fprintf(stderr, "%s: should load cleanly, or have a %s\n", name, expect_name);
            ok = false;
        }
    } else if (rc != CONFIG_ERROR) {
        fprintf(stderr, "%s: loaded, but %s lists problems\n", name, expect_name);
        ok = false;
    } else if (tu_update_mode("ATTNSCOPE_UPDATE_EXPECT")) {
        /* Rewrites the .expect from what the loader says; test_fixtures then fails the run:
         * read it before committing it. */
        FILE *f = fopen(expect_name, "w");
        assert_non_null(f);
        for (int i = 0; i < errs.n; i++)
            fprintf(f, "%s\n", got[i]);
        assert_int_equal(fclose(f), 0);
        fprintf(stderr, "%s: rewrote %s\n", name, expect_name);
        n_rewritten++;
    } else {
        ok = tu_same_lines(stderr, name, expect, got, errs.n);
    }
    tu_free_names(got, errs.n);
    free(expect);
    free(source);
    attn_diag_list_free(&errs);
    return ok;
}

static void test_fixtures(void **state)
{
    (void)state;
    char *dir = env_dir("ATTNSCOPE_FIXTURES", "config");
    char *cwd = getcwd(NULL, 0);
    assert_int_equal(chdir(dir), 0);
    int n;
    char **names = tu_list_names(".", ".yaml", &n);
    assert_non_null(names);
    assert_true(n >= 20);
    /* Every fixture is checked before failing, so one run names all that differ. */
    char *failed = NULL;
    size_t failed_len = 0;
    FILE *failed_f = open_memstream(&failed, &failed_len);
    assert_non_null(failed_f);
    int failures = 0;
    for (int i = 0; i < n; i++)
        if (!check_fixture(names[i]))
            fprintf(failed_f, "%s%s", failures++ ? ", " : "", names[i]);
    tu_free_names(names, n);
    /* An .expect without its fixture is left over from a rename or a removal. */
    names = tu_list_names(".", ".expect", &n);
    for (int i = 0; i < n; i++) {
        char yaml[256];
        snprintf(yaml, sizeof(yaml), "%.*s.yaml", (int)(strlen(names[i]) - 7), names[i]);
        if (access(yaml, F_OK) != 0) {
            fprintf(stderr, "%s: no fixture %s beside it\n", names[i], yaml);
            fprintf(failed_f, "%s%s", failures++ ? ", " : "", names[i]);
        }
    }
    tu_free_names(names, n);
    assert_int_equal(fclose(failed_f), 0);
    assert_int_equal(chdir(cwd), 0);
    free(cwd);
    if (failures)
        fail_msg("fixtures in %s that do not match their .expect (%d): %s", dir, failures, failed);
    free(failed);
    free(dir);
    if (tu_update_mode("ATTNSCOPE_UPDATE_EXPECT"))
        tu_update_done("ATTNSCOPE_UPDATE_EXPECT", n_rewritten, n, "");
}

static void assert_keys(const struct key_config *k, enum action a, const char *want)
{
    char got[256] = "";
    for (int i = 0; i < k->n_keys[a]; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", k->keys[a][i]);
    if (strcmp(got, want) != 0)
        fail_msg("%s: keys \"%s\", expected \"%s\"", action_table[a].name, got, want);
}

static void test_keys_good_and_override(void **state)
{
    (void)state;
    char *path = env_dir("ATTNSCOPE_FIXTURES", "config/keys-good.yaml");
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct key_config user;
    assert_int_equal(load_keys(&user, path, &errs), CONFIG_OK);
    assert_int_equal(errs.n, 0);
    assert_int_equal(user.n_actions, ACTION_COUNT);
    assert_true(user.set[ACTION_QUIT] && user.set[ACTION_PLAY] && user.set[ACTION_LEFT]);
    assert_false(user.set[ACTION_ALL_HEADS] || user.set[ACTION_REDO]);
    assert_keys(&user, ACTION_QUIT, "q C-x");
    assert_keys(&user, ACTION_HELP, "?");
    assert_keys(&user, ACTION_PLAY, "");
    assert_int_equal(key_config_find(&user, "a"), ACTION_LEFT);
    assert_int_equal(key_config_find(&user, "F1"), -1);

    /* The user's file over the defaults: rebound actions replaced, stolen keys removed. */
    struct key_config base;
    key_config_from_strings(&base, default_keys, action_layers, ACTION_COUNT);
    key_config_override(&base, &user);
    assert_keys(&base, ACTION_QUIT, "q C-x");
    assert_keys(&base, ACTION_LEFT, "Left a");
    assert_keys(&base, ACTION_ALL_HEADS, ""); /* its 'a' went to left */
    assert_keys(&base, ACTION_PLAY, "");
    assert_keys(&base, ACTION_HELP, "?");
    assert_keys(&base, ACTION_REDO, "C-r");
    assert_keys(&base, ACTION_STAGE_NEXT, ". >");
    assert_int_equal(key_config_find(&base, "F1"), -1);
    assert_int_equal(key_config_find(&base, "a"), ACTION_LEFT);
    key_config_free(&base);
    key_config_free(&user);
    attn_diag_list_free(&errs);
    free(path);
}

static void test_colors_good(void **state)
{
    (void)state;
    char *path = env_dir("ATTNSCOPE_FIXTURES", "config/colors-good.yaml");
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct color_config c;
    assert_int_equal(load_colors(&c, path, &errs), CONFIG_OK);
    assert_int_equal(errs.n, 0);
    assert_true(c.scale_set && c.diverging_set);
    assert_string_equal(c.scale, "magma");
    assert_string_equal(c.diverging, "purple-green");
    const struct color_spec *header = &c.roles[ROLE_HEADER], *error = &c.roles[ROLE_ERROR];
    const struct color_spec *cursor = &c.roles[ROLE_CURSOR], *help = &c.roles[ROLE_HELP];
    const struct color_spec *label = &c.roles[ROLE_LABEL];
    assert_true(header->set);
    assert_int_equal(header->fg, 15);
    assert_int_equal(header->bg, 0);
    assert_int_equal(header->attrs, COLOR_ATTR_BOLD);
    assert_true(error->set);
    assert_int_equal(error->fg, 1);
    assert_int_equal(error->bg, COLOR_DEFAULT);
    assert_int_equal(error->attrs, COLOR_ATTR_BOLD | COLOR_ATTR_UNDERLINE);
    assert_true(cursor->set);
    assert_int_equal(cursor->attrs, COLOR_ATTR_REVERSE);
    assert_int_equal(cursor->fg, COLOR_DEFAULT);
    assert_true(help->set && label->set);
    assert_int_equal(help->attrs, 0);
    assert_int_equal(label->fg, COLOR_DEFAULT);
    assert_false(c.roles[ROLE_STAGEBAR].set); /* stagebar not given */

    /* Over the shipped defaults: given roles replaced whole, the others kept. */
    char *shipped = env_dir("ATTNSCOPE_CONFIGS_DIR", "colors.yaml");
    struct color_config base;
    assert_int_equal(load_colors(&base, shipped, &errs), CONFIG_OK);
    struct color_spec stagebar = base.roles[ROLE_STAGEBAR];
    color_config_override(&base, &c);
    assert_string_equal(base.scale, "magma");
    assert_int_equal(base.roles[ROLE_HEADER].fg, 15);
    assert_int_equal(base.roles[ROLE_CURSOR].attrs,
                     COLOR_ATTR_REVERSE); /* [reverse, bold] replaced */
    assert_memory_equal(&base.roles[ROLE_STAGEBAR], &stagebar, sizeof(stagebar));
    color_config_free(&base);
    free(shipped);
    color_config_free(&c);
    attn_diag_list_free(&errs);
    free(path);
}

static void test_shipped_keys_are_the_defaults(void **state)
{
    (void)state;
    char *path = env_dir("ATTNSCOPE_CONFIGS_DIR", "keys.yaml");
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct key_config k;
    int rc = load_keys(&k, path, &errs);
    for (int i = 0; i < errs.n; i++)
        attn_diag_print(stdout, &errs.items[i], NULL, 0);
    assert_int_equal(rc, CONFIG_OK);
    assert_int_equal(errs.n, 0);
    for (int a = 0; a < ACTION_COUNT; a++) {
        if (!k.set[a])
            fail_msg("configs/keys.yaml does not list the action %s", action_names[a]);
        assert_keys(&k, (enum action)a, default_keys[a]);
    }
    key_config_free(&k);

    /* ...and in the table's order, so the file reads like the help screen. */
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    const char *p = text;
    for (int a = 0; a < ACTION_COUNT; a++) {
        char entry[64];
        snprintf(entry, sizeof(entry), "\n%s:", action_names[a]);
        const char *at = strstr(p, entry);
        if (!at)
            fail_msg("configs/keys.yaml: %s is missing or out of the table's order",
                     action_names[a]);
        p = at + 1;
    }
    free(text);
    attn_diag_list_free(&errs);
    free(path);
}

static void test_shipped_colors_load(void **state)
{
    (void)state;
    char *path = env_dir("ATTNSCOPE_CONFIGS_DIR", "colors.yaml");
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct color_config c;
    int rc = load_colors(&c, path, &errs);
    for (int i = 0; i < errs.n; i++)
        attn_diag_print(stdout, &errs.items[i], NULL, 0);
    assert_int_equal(rc, CONFIG_OK);
    assert_int_equal(errs.n, 0);
    for (int r = 0; r < ROLE_COUNT; r++)
        if (!c.roles[r].set)
            fail_msg("configs/colors.yaml does not set the role %s", role_names[r]);
    assert_true(c.scale_set && c.diverging_set);
    assert_string_equal(c.scale, "viridis");
    assert_string_equal(c.diverging, "blue-red");
    color_config_free(&c);
    attn_diag_list_free(&errs);
    free(path);
}

static void test_missing_file_is_not_an_error(void **state)
{
    (void)state;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct key_config k;
    assert_int_equal(load_keys(&k, "/nonexistent/attnscope/keys.yaml", &errs), CONFIG_MISSING);
    assert_int_equal(k.n_actions, ACTION_COUNT);
    for (int a = 0; a < k.n_actions; a++)
        assert_false(k.set[a]);
    key_config_free(&k);
    assert_int_equal(load_keys(&k, NULL, &errs), CONFIG_MISSING);
    key_config_free(&k);
    struct color_config c;
    assert_int_equal(load_colors(&c, "/nonexistent/colors.yaml", &errs), CONFIG_MISSING);
    assert_int_equal(c.n_roles, ROLE_COUNT);
    assert_false(c.roles[ROLE_HEADER].set || c.scale_set);
    color_config_free(&c);
    assert_int_equal(errs.n, 0);
    attn_diag_list_free(&errs);
}

static void test_unreadable_and_too_large(void **state)
{
    (void)state;
    char *dir = tu_make_tmpdir("config");
    struct diag_list errs;
    attn_diag_list_init(&errs);

    /* A folder where the file should be. */
    struct key_config k;
    assert_int_equal(load_keys(&k, dir, &errs), CONFIG_ERROR);
    key_config_free(&k);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.items[0].file, dir);
    assert_non_null(strstr(errs.items[0].msg, "is a directory"));

    /* One byte over the limit: refused before it is parsed. */
    char path[512];
    snprintf(path, sizeof(path), "%s/keys.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("quit: q\n", f);
    for (size_t i = 8; i < CONFIG_MAX_BYTES + 1; i++)
        fputc(i % 64 == 63 ? '\n' : '#', f);
    fclose(f);
    struct color_config c;
    assert_int_equal(load_colors(&c, path, &errs), CONFIG_ERROR);
    color_config_free(&c);
    assert_int_equal(errs.n, 2);
    assert_non_null(strstr(errs.items[1].msg, "too large"));
    printf("%s\n", errs.items[1].msg);

    /* Exactly at the limit is fine. */
    assert_int_equal(truncate(path, (off_t)CONFIG_MAX_BYTES), 0);
    assert_int_equal(load_keys(&k, path, &errs), CONFIG_OK);
    assert_true(k.set[ACTION_QUIT]);
    key_config_free(&k);
    assert_int_equal(errs.n, 2);

    unlink(path);
    rmdir(dir);
    free(dir);
    attn_diag_list_free(&errs);
}

static void test_too_many_problems(void **state)
{
    (void)state;
    char text[8192] = "";
    for (int i = 0; i < 200; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "nope%d: x\n", i);
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct key_config k;
    assert_int_equal(config_parse_keys(&k, "many.yaml", text, strlen(text), action_names,
                                       action_layers, ACTION_COUNT, valid_key, &errs),
                     CONFIG_ERROR);
    key_config_free(&k);
    assert_int_equal(errs.n, CONFIG_MAX_ERRORS + 1);
    assert_string_equal(errs.items[CONFIG_MAX_ERRORS].msg,
                        "too many problems; stopped after the first 50");

    /* Deep nesting (libyaml is quadratic in it) is refused quickly, at the first level too
     * many. */
    enum { DEPTH = 500000 };
    static char deep[2 * DEPTH + 16];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof(deep), "quit: ");
    for (int i = 0; i < DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i < DEPTH; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    int before = errs.n;
    assert_int_equal(config_parse_keys(&k, "deep.yaml", deep, strlen(deep), action_names,
                                       action_layers, ACTION_COUNT, valid_key, &errs),
                     CONFIG_ERROR);
    key_config_free(&k);
    assert_int_equal(errs.n, before + 1);
    char *line = diag_line(&errs.items[before]);
    assert_string_equal(line, "deep.yaml:1:22: the document nests more than 16 levels deep");
    free(line);
    attn_diag_list_free(&errs);
}

static void test_user_path(void **state)
{
    (void)state;
    char *old_xdg = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

    setenv("XDG_CONFIG_HOME", "/x/conf/", 1);
    setenv("HOME", "/home/u", 1);
    char *p = config_user_path("keys.yaml");
    assert_string_equal(p, "/x/conf/attnscope/keys.yaml");
    free(p);
    setenv("XDG_CONFIG_HOME", "relative", 1); /* invalid per the XDG spec: ignored */
    p = config_user_path("colors.yaml");
    assert_string_equal(p, "/home/u/.config/attnscope/colors.yaml");
    free(p);
    unsetenv("XDG_CONFIG_HOME");
    p = config_user_path("keys.yaml");
    assert_string_equal(p, "/home/u/.config/attnscope/keys.yaml");
    free(p);
    unsetenv("HOME");
    assert_null(config_user_path("keys.yaml"));

    if (old_xdg)
        setenv("XDG_CONFIG_HOME", old_xdg, 1);
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_xdg);
    free(old_home);
}

static void test_valid_key_notation(void **state)
{
    (void)state;
    const char *good[] = {"q",   "?",   "#",   "Left", "PgDn", "BackTab", "F1",
                          "F12", "C-a", "C-y", "é",    "ą",    "日"};
    const char *bad[] = {"",    " ",    "F0",     "F13",      "C-A", "Ctrl+x",
                         "^x",  "left", "Left h", "pagedown", "C-c", "C-z",
                         "F1x", "F+1",  "éé",     "\xc2\x85", "\xff"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(valid_key(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(valid_key(bad[i]));
    /* Every default key of the table is in the notation. */
    struct key_config k;
    key_config_from_strings(&k, default_keys, action_layers, ACTION_COUNT);
    for (int a = 0; a < ACTION_COUNT; a++) {
        assert_true(k.n_keys[a] >= 1);
        for (int i = 0; i < k.n_keys[a]; i++)
            assert_true(valid_key(k.keys[a][i]));
    }
    key_config_free(&k);
}

/* A typed character and a named key are different keys: as curses numbers them, 'ą' (U+0105)
 * would be KEY_RIGHT (0405) and 'ć' (U+0107) KEY_BACKSPACE (0407). */
static void test_keymap_keeps_characters_and_codes_apart(void **state)
{
    (void)state;
    struct keymap km;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    keymap_load(&km, NULL, NULL, &errs);
    assert_int_equal(errs.n, 0);
    struct key right = {true, KEYCODE_RIGHT}, a_ogonek = {false, 0x105};
    assert_int_equal(keymap_lookup(&km, right), ACTION_RIGHT);
    assert_int_equal(keymap_lookup(&km, a_ogonek), ACTION_NONE);
    assert_int_equal(keymap_lookup(&km, (struct key){false, 0x107}), ACTION_NONE);
    assert_int_equal(keymap_lookup(&km, (struct key){false, 'l'}), ACTION_RIGHT);
    /* A Polish keyboard can bind its letters without losing the arrows. */
    char *dir = tu_make_tmpdir("keymap");
    char path[1024];
    snprintf(path, sizeof(path), "%s/keys.yaml", dir);
    tu_write_text(path, "left: [ą, Left]\nundo: [ć]\n");
    keymap_load(&km, NULL, path, &errs);
    assert_int_equal(errs.n, 0);
    assert_int_equal(keymap_lookup(&km, a_ogonek), ACTION_LEFT);
    assert_int_equal(keymap_lookup(&km, right), ACTION_RIGHT);
    assert_int_equal(keymap_lookup(&km, (struct key){false, 0x107}), ACTION_UNDO);
    assert_int_equal(keymap_lookup(&km, (struct key){true, KEYCODE_BACKSPACE}), ACTION_NONE);
    assert_string_equal(km.keys[ACTION_LEFT], "ą Left");
    tu_remove_tree(dir);
    free(dir);
    attn_diag_list_free(&errs);
}

/* The lesson keys are a layer of their own: Space and the arrows step through a lesson in lesson
 * mode and keep their actions elsewhere; a key may be bound once per layer, and a rebinding
 * takes a key away only from its own layer. */
static void test_lesson_key_layer(void **state)
{
    (void)state;
    struct keymap km;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    keymap_load(&km, NULL, NULL, &errs);
    assert_int_equal(errs.n, 0);
    struct key space = {false, ' '}, right = {true, KEYCODE_RIGHT}, left = {true, KEYCODE_LEFT};
    assert_int_equal(keymap_lookup(&km, space), ACTION_PLAY);
    assert_int_equal(keymap_lookup_mode(&km, space, false), ACTION_PLAY);
    assert_int_equal(keymap_lookup_mode(&km, space, true), ACTION_LESSON_NEXT);
    assert_int_equal(keymap_lookup_mode(&km, right, true), ACTION_LESSON_NEXT);
    assert_int_equal(keymap_lookup_mode(&km, left, true), ACTION_LESSON_PREV);
    assert_int_equal(keymap_lookup_mode(&km, left, false), ACTION_LEFT);
    /* a key no lesson action has acts as ever in lesson mode */
    assert_int_equal(keymap_lookup_mode(&km, (struct key){false, 'c'}, true), ACTION_CAUSAL);
    assert_int_equal(keymap_lookup_mode(&km, (struct key){false, 'i'}, true), ACTION_LESSON);

    char *dir = tu_make_tmpdir("layers");
    char path[1024];
    snprintf(path, sizeof(path), "%s/keys.yaml", dir);
    /* n steps on in a lesson and finds the next occurrence elsewhere; play takes Right from
     * right, not from lesson-next */
    tu_write_text(path, "lesson-next: [n, Space]\nplay: [Right]\n");
    keymap_load(&km, NULL, path, &errs);
    assert_int_equal(errs.n, 0);
    assert_int_equal(keymap_lookup_mode(&km, (struct key){false, 'n'}, true), ACTION_LESSON_NEXT);
    assert_int_equal(keymap_lookup_mode(&km, (struct key){false, 'n'}, false), ACTION_FIND_NEXT);
    assert_int_equal(keymap_lookup_mode(&km, right, false), ACTION_PLAY);
    assert_int_equal(keymap_lookup_mode(&km, right, true), ACTION_PLAY);
    assert_int_equal(keymap_lookup_mode(&km, space, false), ACTION_NONE);
    assert_string_equal(km.keys[ACTION_RIGHT], "l");
    assert_string_equal(km.keys[ACTION_LESSON_NEXT], "n Space");

    /* one key for two actions of one layer is still a mistake */
    tu_write_text(path, "lesson-next: x\nlesson-prev: [Left, x]\nplay: Space\n");
    struct key_config k;
    assert_int_equal(load_keys(&k, path, &errs), CONFIG_ERROR);
    key_config_free(&k);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.items[0].msg, "key 'x' is bound to both lesson-next and lesson-prev");
    tu_remove_tree(dir);
    free(dir);
    attn_diag_list_free(&errs);
}

/* The built-in colour fallback is the shipped colors.yaml, role for role. */
static void test_builtin_colors_match_configs(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%.1000s/colors.yaml", getenv("ATTNSCOPE_CONFIGS_DIR"));
    struct color_config cc;
    struct diag_list errs;
    attn_diag_list_init(&errs);
    assert_int_equal(config_load_colors(&cc, path, role_names, ROLE_COUNT, scale_names,
                                        n_scale_names, diverging_names, n_diverging_names, &errs),
                     CONFIG_OK);
    for (int r = 0; r < ROLE_COUNT; r++) {
        const struct color_spec *a = &cc.roles[r], *b = &role_defaults[r];
        if (!a->set || a->fg != b->fg || a->bg != b->bg || a->attrs != b->attrs)
            fail_msg("role %s: colors.yaml {fg %d, bg %d, attrs %u} != built-in {fg %d, bg %d, "
                     "attrs %u}",
                     role_names[r], a->fg, a->bg, a->attrs, b->fg, b->bg, b->attrs);
    }
    assert_string_equal(cc.scale, scale_names[0]);
    assert_string_equal(cc.diverging, diverging_names[0]);
    color_config_free(&cc);
    attn_diag_list_free(&errs);
}

int main(void)
{
    for (int a = 0; a < ACTION_COUNT; a++) {
        action_names[a] = action_table[a].name;
        default_keys[a] = action_table[a].default_keys;
        action_layers[a] = (int)action_key_layer((enum action)a);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_key_notation),
        cmocka_unit_test(test_keymap_keeps_characters_and_codes_apart),
        cmocka_unit_test(test_builtin_colors_match_configs),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_keys_good_and_override),
        cmocka_unit_test(test_colors_good),
        cmocka_unit_test(test_shipped_keys_are_the_defaults),
        cmocka_unit_test(test_lesson_key_layer),
        cmocka_unit_test(test_shipped_colors_load),
        cmocka_unit_test(test_missing_file_is_not_an_error),
        cmocka_unit_test(test_unreadable_and_too_large),
        cmocka_unit_test(test_too_many_problems),
        cmocka_unit_test(test_user_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
