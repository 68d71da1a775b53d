/* check: validate scene files and list every problem, not only the first.
 *
 * Output follows the compilers' convention so editors can jump to the spot:
 *   scene.yaml:12:5: unknown key 'headz' (did you mean 'heads'?)
 *     headz: 2
 *     ^
 * A good file prints "FILE: ok" on stdout. Exit 1 when any file has a problem. Files named
 * keys.yaml or colors.yaml are checked as the explorer's configuration instead. A scene with a
 * lesson is played step by step, as the explorer plays it, and every number a caption marks is
 * checked against the screen (explore/lessonmode.h), located at the mark:
 *   lesson.yaml:14:31: step 1: the caption says 0.9999, but row 0, column 5 of the weights is
 *   0.1510
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/fsutil.h"
#include "common/utf8.h"
#include "config/config.h"
#include "scenefile/scenefile.h"
#include "explore/actions.h"
#include "explore/app.h"
#include "explore/lessonmode.h"
#include "explore/keys.h"
#include "ui/theme.h"

/* keys.yaml and colors.yaml are the explorer's configuration, checked as such. */
static int check_config(const char *path, const char *base)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    int rc;
    if (strcmp(base, "keys.yaml") == 0) {
        const char *names[ACTION_COUNT];
        int layers[ACTION_COUNT];
        for (int a = 0; a < ACTION_COUNT; a++) {
            names[a] = action_table[a].name;
            layers[a] = (int)action_key_layer((enum action)a);
        }
        struct key_config kc;
        rc = config_load_keys(&kc, path, names, layers, ACTION_COUNT, keyname_valid, &errs);
        key_config_free(&kc);
    } else {
        struct color_config cc;
        rc = config_load_colors(&cc, path, role_names, ROLE_COUNT, scale_names, n_scale_names,
                                diverging_names, n_diverging_names, &errs);
        color_config_free(&cc);
    }
    /* The file again for the excerpts: the line and a caret, as for scene files. */
    char *source = NULL;
    size_t source_len = 0;
    if (errs.n > 0 && attn_fsutil_read_file(&source, &source_len, path, (size_t)1 << 20, NULL) != 0)
        source = NULL;
    for (int i = 0; i < errs.n; i++)
        attn_diag_print(stderr, &errs.items[i], source, source_len);
    attn_diag_list_print_lost(stderr, &errs, path);
    free(source);
    if (rc == CONFIG_MISSING)
        fprintf(stderr, "%s: no such file\n", path);
    attn_diag_list_free(&errs);
    if (rc != CONFIG_OK)
        return CLI_INVALID;
    printf("%s: ok\n", path);
    return CLI_OK;
}

int (*cli_lesson_screen_hook)(struct attn_scene *s, const char *path, const char *source,
                              size_t len, struct diag_list *problems, struct diag *err);

/* A lesson played from its first step to its last in the explorer, every step checked as
 * explore/lessonmode.h says: above all, every number its captions mark against the matrix the
 * explorer shows there, and on the explorer's screen at 80x24 (main.c's hook): each quoted cell
 * and prediction visible. Without a screen (none to be had) the numbers alone, said. Takes s. */
static int check_lesson(struct attn_scene *s, const char *path)
{
    int rc;
    struct diag_list problems;
    attn_diag_list_init(&problems);
    char *source = NULL;
    size_t len = 0;
    if (attn_fsutil_read_file(&source, &len, path, SCENEFILE_MAX_BYTES, NULL) != 0)
        source = NULL;
    struct diag err;
    attn_diag_clear(&err);
    bool on_screen = cli_lesson_screen_hook &&
                     cli_lesson_screen_hook(s, path, source, len, &problems, &err) >= 0;
    if (!on_screen) {
        if (cli_lesson_screen_hook) /* no terminfo: the numbers are still checked */
            fprintf(stderr, "%s: note: %s: the lesson's screen at 80\u00d724 is not checked\n",
                    path, err.msg);
        attn_diag_clear(&err);
        struct app *a;
        if (app_new(&a, s, path, NULL, &err) != 0) {
            if (!err.file[0])
                snprintf(err.file, sizeof(err.file), "%.*s", (int)sizeof(err.file) - 1, path);
            attn_diag_print(stderr, &err, NULL, 0);
            rc = CLI_INVALID;
            goto out;
        }
        if (lesson_open(a) != 0)
            attn_diag_list_add(&problems, path, 0, 0, "lesson", "out of memory for the lesson");
        else
            lesson_check_all(a, source, len, &problems);
        app_delete(a);
    }
    for (int i = 0; i < problems.n; i++)
        attn_diag_print(stderr, &problems.items[i], source, len);
    attn_diag_list_print_lost(stderr, &problems, path);
    rc = problems.n || problems.lost ? CLI_INVALID : CLI_OK;
out:
    attn_diag_list_free(&problems);
    free(source);
    return rc;
}

static int check_one(const char *arg, const struct cli_input *in)
{
    const char *base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
    if (strcmp(base, "keys.yaml") == 0 || strcmp(base, "colors.yaml") == 0)
        return check_config(arg, base);
    struct cli_scene cs;
    int rc = cli_scene_load(&cs, arg, in);
    if (rc != CLI_OK)
        return rc;
    struct attn_scene *s = &cs.scene;
    /* Not a problem, but worth knowing before a workshop: words the vocabulary lacks. */
    char unknown[600];
    if (s->tokenizer == TOKENIZER_GPT2 &&
        attn_tokens_unknown_words(unknown, sizeof(unknown), s->tokens, s->n_tokens) > 0) {
        attn_utf8_fputs_escaped(cs.path, stdout, 0);
        fputs(": note: ", stdout);
        attn_utf8_fputs_escaped(unknown, stdout, 0);
        fputc('\n', stdout);
    }
    /* A lesson takes the scene. Any other is computed once, a layer at a time: a value the
       forward pass makes that is not a number (an overflow, a RoPE scaling of 5e-324) is a
       problem of the scene, named with its place. */
    if (s->lesson)
        rc = check_lesson(s, cs.path);
    else if ((rc = cli_scene_compute(&cs, true, NULL, NULL)) == CLI_OK)
        rc = cli_scene_finite(&cs, true);
    cli_scene_close(&cs);
    if (rc != CLI_OK)
        return CLI_INVALID;
    printf("%s: ok\n", cs.name);
    return CLI_OK;
}

static const struct cli_example examples[] = {
    {"attnscope check lessons/7-trained-heads", "play a lesson at 80x24 and check every number its "
                                                "captions quote, and that each is on screen"},
    {NULL, NULL},
};

const struct cli_command cli_check = {
    "check",
    cmd_check,
    "SCENE...",
    "validate scene files (and keys.yaml, colors.yaml)",
    "Validate scene files and list every problem, not only the first, as file:line:col with\n"
    "the line and a caret under the spot, the way compilers do. A lesson is played step by\n"
    "step as the explorer plays it, and every number its captions mark is checked against\n"
    "the matrix on screen. Files named keys.yaml or colors.yaml are checked as the explorer's\n"
    "configuration. A good file prints \"FILE: ok\".",
    NULL,
    0,
    examples,
    true,
};

int cmd_check(int argc, char **argv)
{
    const char **files = calloc((size_t)argc + 1, sizeof(*files));
    if (!files) {
        fputs("attnscope check: out of memory\n", stderr);
        return CLI_INVALID;
    }
    int n_files;
    struct cli_input in;
    int rc = cli_begin_input(&cli_check, argc, argv, NULL, files, argc, &n_files, &in);
    if (rc == CLI_CONTINUE && n_files == 0)
        rc = cli_usage_error("check", "no scene file given");
    else if (rc == CLI_CONTINUE && n_files > 1 && in.save_scene)
        rc = cli_usage_error("check", "--save-scene saves one scene; %d given", n_files);
    else if (rc == CLI_CONTINUE) {
        rc = CLI_OK;
        for (int i = 0; i < n_files; i++) {
            int one = check_one(files[i], &in);
            if (one == CLI_USAGE)
                rc = CLI_USAGE;
            else if (one != CLI_OK && rc == CLI_OK)
                rc = CLI_INVALID;
        }
    }
    free(files);
    return rc;
}
