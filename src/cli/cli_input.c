/* cli_input: the scene a command line names, with its input options.
 *
 * SCENE is a scene file, a shipped scene's name, or a model: a Hugging Face folder (config.json,
 * the weights and a tokenizer) or its weights, made a scene in memory by the scene loader
 * (scenefile.h, attn_scenefile_load_model_report). Its sentence may come from the command line
 * (--text, twice for a pair), a file (--text-file; "-" is standard input, as for cat), and is
 * made as the explorer's `t` makes it: the engine's text edit, with the same rules. A text
 * longer than the model reads is refused, saying which limit and how to fit it (--truncate,
 * --window), never cut without being asked. --save-scene writes the scene that results through
 * the scene writer, as `w` does, so the file reopens as the same scene.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fsutil.h"
#include "common/utf8.h"
#include "engine/edit.h"
#include "scenefile/scenefile.h"

/* A sentence from a file, or standard input for "-": all of it but one last line end (a file
 * an editor saved, `echo`'s), refused when it holds a NUL (the text would end there). */
static int read_sentence(char **out, const char *file, const char *name)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    struct diag err;
    attn_diag_clear(&err);
    bool in = strcmp(file, "-") == 0;
    const char *shown = in ? "standard input" : file;
    if (!in && attn_fsutil_read_file(&text, &len, file, SCENEFILE_MAX_BYTES, &err) != 0) {
        fprintf(stderr, "%s: --text-file: ", name);
        attn_diag_print(stderr, &err, NULL, 0);
        return CLI_INVALID;
    }
    if (in) {
        size_t cap = 0;
        for (;;) {
            if (len + 65536 + 1 > cap) {
                cap = cap ? cap * 2 : 65536 * 2;
                char *grown = realloc(text, cap);
                if (!grown) {
                    free(text);
                    fprintf(stderr, "%s: standard input: out of memory\n", name);
                    return CLI_INVALID;
                }
                text = grown;
            }
            size_t got = fread(text + len, 1, 65536, stdin);
            len += got;
            if (len > SCENEFILE_MAX_BYTES) {
                free(text);
                fprintf(stderr, "%s: standard input: over %zu bytes of text\n", name,
                        (size_t)SCENEFILE_MAX_BYTES);
                return CLI_INVALID;
            }
            if (got == 0)
                break;
        }
        if (ferror(stdin)) {
            free(text);
            fprintf(stderr, "%s: standard input: %s\n", name, strerror(errno));
            return CLI_INVALID;
        }
        text[len] = '\0';
    }
    if (strlen(text) != len) {
        fprintf(stderr, "%s: ", name);
        attn_utf8_fputs_escaped(shown, stderr, 0);
        fprintf(stderr, ": a NUL byte at byte %zu: a sentence is text\n", strlen(text) + 1);
        free(text);
        return CLI_INVALID;
    }
    if (len > 0 && text[len - 1] == '\n')
        text[--len] = '\0';
    if (len > 0 && text[len - 1] == '\r')
        text[--len] = '\0';
    *out = text;
    return CLI_OK;
}

/* Where the sentence came from, for messages: "--text", "--text-file notes.txt", "standard
 * input", or the scene's own. */
static void source_text(char *out, size_t size, const struct cli_input *in)
{
    if (in->n_sentences == 0)
        snprintf(out, size, "its text");
    else if (!in->from_file[0])
        snprintf(out, size, "--text");
    else if (strcmp(in->sentence[0], "-") == 0)
        snprintf(out, size, "standard input");
    else
        snprintf(out, size, "--text-file %.*s", (int)size - 20, in->sentence[0]);
}

/* The sentence and its fit said, then made: what `t` does in the explorer (engine/edit.h). */
static int apply_text(struct cli_scene *cs, const struct cli_input *in)
{
    struct attn_scene *s = &cs->scene;
    char *read[2] = {NULL, NULL}, *cut = NULL;
    int rc = CLI_OK;
    for (int i = 0; i < in->n_sentences && rc == CLI_OK; i++)
        if (in->from_file[i])
            rc = read_sentence(&read[i], in->sentence[i], cs->name);
    if (rc != CLI_OK)
        goto out;
    const char *text = s->text, *pair = s->text_pair;
    if (in->n_sentences > 0) {
        text = read[0] ? read[0] : in->sentence[0];
        pair = in->n_sentences == 2 ? (read[1] ? read[1] : in->sentence[1]) : NULL;
    }
    /* an encoder-decoder's: the source, then the target; one sentence is the source, to be
     * translated (the target starts empty) */
    if (s->encoder && in->n_sentences == 1) {
        pair = "";
    }
    if (s->encoder && in->n_sentences > 0) {
        struct diag serr;
        attn_diag_clear(&serr);
        if (attn_scene_set_text(s->encoder, text, &serr) != 0) {
            fprintf(stderr, "%s: the source: ", cs->name);
            attn_utf8_fputs_escaped(serr.msg, stderr, 0);
            fputc('\n', stderr);
            rc = CLI_INVALID;
            goto out;
        }
        text = pair;
        pair = NULL;
    }
    if (!text) {
        fprintf(stderr, "%s: --%s: the scene gives its tokens as a list, not a text to cut\n",
                cs->name, in->truncate ? "truncate" : "window");
        rc = CLI_USAGE;
        goto out;
    }
    char from[300], said[400];
    source_text(from, sizeof(from), in);
    struct attn_text_fit f;
    struct diag err;
    attn_diag_clear(&err);
    if (attn_scene_text_fit(&f, s, text, pair, &err) != 0) {
        fprintf(stderr, "%s: %s: ", cs->name, from);
        attn_utf8_fputs_escaped(err.msg, stderr, 0);
        fputc('\n', stderr);
        rc = CLI_INVALID;
        goto out;
    }
    /* RoPE reads past what it was trained on (a warning); asked to cut, it keeps to that */
    int keep = f.trained && f.trained < f.limit ? f.trained : f.limit;
    attn_text_fit_describe(said, sizeof(said), &f);
    if (in->window[1] > 0) {
        char before[16], kept[16];
        attn_count_text(before, sizeof(before), f.n);
        if (attn_scene_text_cut(&cut, s, text, TEXT_WINDOW, in->window[0], in->window[1], &err)) {
            fprintf(stderr, "%s: --window %d:%d: %s (the text has %s tokens)\n", cs->name,
                    in->window[0], in->window[1], err.msg, before);
            rc = CLI_INVALID;
            goto out;
        }
        if (attn_scene_text_fit(&f, s, cut, NULL, &err) == 0 && f.n > f.limit) {
            attn_text_fit_describe(said, sizeof(said), &f);
            fprintf(stderr, "%s: --window %d:%d: %s\n", cs->name, in->window[0], in->window[1],
                    said);
            rc = CLI_INVALID;
            goto out;
        }
        attn_count_text(kept, sizeof(kept), f.n);
        fprintf(stderr,
                "%s: --window %d:%d: the whole words in tokens %d to %d: %s token%s of the "
                "text's %s\n",
                cs->name, in->window[0], in->window[1], in->window[0], in->window[1] - 1, kept,
                f.n == 1 ? "" : "s", before);
        text = cut;
    } else if (f.n > f.limit || (in->truncate && f.n > keep)) {
        if (!in->truncate) {
            char limit[16];
            attn_count_text(limit, sizeof(limit), f.limit);
            fprintf(stderr,
                    "%s: %s: %s\n"
                    "  --truncate end cuts the end off (keeps the first %s tokens), --truncate "
                    "start the start (keeps the last %s); --window START:END keeps tokens START "
                    "to END-1\n",
                    cs->name, from, said, limit, limit);
            rc = CLI_INVALID;
            goto out;
        }
        if (pair) {
            fprintf(stderr, "%s: %s: %s: --truncate cuts one sentence; shorten the pair's\n",
                    cs->name, from, said);
            rc = CLI_INVALID;
            goto out;
        }
        bool end = strcmp(in->truncate, "end") == 0;
        if (attn_scene_text_cut(&cut, s, text, end ? TEXT_KEEP_FIRST : TEXT_KEEP_LAST, 0, keep,
                                &err)) {
            fprintf(stderr, "%s: --truncate %s: %s\n", cs->name, in->truncate, err.msg);
            rc = CLI_INVALID;
            goto out;
        }
        char before[16], trained[16], kept[16];
        attn_count_text(before, sizeof(before), f.n);
        attn_count_text(trained, sizeof(trained), keep);
        const char *key = f.key;
        if (attn_scene_text_fit(&f, s, cut, NULL, &err) != 0)
            f.n = 0;
        attn_count_text(kept, sizeof(kept), f.n);
        if (keep < f.limit) /* a RoPE model, cut to what it was trained on */
            fprintf(stderr,
                    "%s: --truncate %s: %s tokens, past the %s positions this model was trained "
                    "on (%s): kept the %s %s (whole words)\n",
                    cs->name, in->truncate, before, trained, key, end ? "first" : "last", kept);
        else
            fprintf(stderr, "%s: --truncate %s: %s: kept the %s %s (whole words)\n", cs->name,
                    in->truncate, said, end ? "first" : "last", kept);
        text = cut;
    } else if (in->n_sentences == 0) {
        goto out; /* its own text, and it fits: nothing to do */
    }
    /* sentences given replace both (one: no second); none keep the scene's pair */
    struct attn_edit e = {.kind = EDIT_TEXT,
                          .text = (char *)text,
                          .text_pair = in->n_sentences > 0 ? (pair ? pair : "") : NULL};
    struct attn_edit_effects fx;
    struct diag_list problems;
    attn_diag_list_init(&problems);
    if (attn_scene_check_edit(s, &e, &err) != 0 || attn_scene_apply_edit(s, &e, &fx, &err) != 0) {
        fprintf(stderr, "%s: %s: ", cs->name, from);
        attn_utf8_fputs_escaped(err.msg, stderr, 0);
        fputc('\n', stderr);
        rc = CLI_INVALID;
        goto out;
    }
    attn_scene_check(s, &problems);
    for (int i = 0; i < problems.n; i++) {
        fprintf(stderr, "%s: %s: ", cs->name, from);
        attn_utf8_fputs_escaped(problems.items[i].msg, stderr, 0);
        fputc('\n', stderr);
    }
    if (problems.n || problems.lost)
        rc = CLI_INVALID;
    attn_diag_list_free(&problems);
    if (rc != CLI_OK)
        goto out;
    char note[DIAG_MSG_MAX];
    if (attn_scene_positions_note(note, sizeof(note), s))
        fprintf(stderr, "%s: warning: %s\n", cs->name, note);
    /* Explicit embedding rows (the book's): a new word's row is made up, as the explorer says */
    char made_up[400] = "";
    for (size_t i = 0, o = 0; s->embed.kind == EMBED_EXPLICIT && i < (size_t)s->n_tokens; i++) {
        bool known = attn_scene_has_row(s, s->tokens[i]);
        for (size_t k = 0; k < i && !known; k++)
            known = strcmp(s->tokens[i], s->tokens[k]) == 0; /* said once */
        if (!known && o < sizeof(made_up))
            o += (size_t)snprintf(made_up + o, sizeof(made_up) - o, "%s%s", o ? ", " : "",
                                  s->tokens[i]);
    }
    if (made_up[0]) {
        fprintf(stderr, "%s: note: made-up embedding rows for new words: ", cs->name);
        attn_utf8_fputs_escaped(made_up, stderr, 0);
        fputc('\n', stderr);
    }
out:
    free(read[0]);
    free(read[1]);
    free(cut);
    return rc;
}

/* --save-scene: the scene as `w` writes it, relative paths and all; never over the scene it
 * read (fresh YAML would lose the file's comments). */
static int save_scene(struct cli_scene *cs, const char *file)
{
    struct stat a, b;
    if (cs->from_file && !cs->model && stat(cs->path, &a) == 0 && stat(file, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        fprintf(stderr,
                "%s: --save-scene %s is the scene it reads: save under another name (the "
                "file would lose its comments)\n",
                cs->name, file);
        return CLI_USAGE;
    }
    struct diag err;
    attn_diag_clear(&err);
    if (attn_scenefile_save(file, &cs->scene, false, true, &err) != 0) {
        if (!err.file[0])
            snprintf(err.file, sizeof(err.file), "%.*s", (int)sizeof(err.file) - 1, file);
        fputs("--save-scene: ", stderr);
        attn_diag_print(stderr, &err, NULL, 0);
        return CLI_INVALID;
    }
    snprintf(cs->saved, sizeof(cs->saved), "%s", file);
    return CLI_OK;
}

bool cli_input_given(const struct cli_input *in)
{
    return in->n_sentences > 0 || in->tokenizer || in->truncate || in->window[1] > 0 ||
           in->save_scene;
}

/* A model's folder as the scene's name: without the slashes a shell's completion leaves. */
static void model_name(char *out, size_t size, const char *path)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    snprintf(out, size, "%.*s", (int)len, path);
    /* "." and "..": the folder's own name, which w names the saved scene after */
    const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
    char *real = strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ? realpath(out, NULL) : NULL;
    if (real)
        snprintf(out, size, "%s", real);
    free(real);
}

int cli_scene_load(struct cli_scene *cs, const char *path, const struct cli_input *in)
{
    memset(cs, 0, sizeof(*cs));
    cs->name = path ? path : "default scene";
    cs->from_file = path != NULL;
    if (in && in->tokenizer && (!path || !attn_scenefile_is_model(path))) {
        fprintf(stderr,
                "attnscope: --tokenizer is for a model folder that has none; %s names its own\n",
                path ? path : "the built-in scene");
        return CLI_USAGE;
    }
    if (path && attn_scenefile_is_model(path)) {
        cs->model = true;
        struct attn_model_files m;
        struct diag err;
        if (attn_scenefile_find_model(&m, path, in ? in->tokenizer : NULL, &err) != 0) {
            attn_diag_print(stderr, &err, NULL, 0);
            return CLI_INVALID;
        }
        /* named as given (its weights, maybe), kept as its folder: where w saves */
        model_name(cs->path, sizeof(cs->path), m.folder);
        cs->name = strcmp(m.folder, path) == 0 || !m.weights[0] || strcmp(m.weights, path) != 0
                       ? cs->path
                       : path;
        if (attn_scenefile_load_model_report(&cs->scene, &m, stderr) != 0)
            return CLI_INVALID;
    } else if (path) {
        if (cli_find_scene(cs->path, sizeof(cs->path), path) != CLI_OK)
            return CLI_INVALID;
        cs->name = cs->path;
        if (attn_scenefile_load_report(&cs->scene, cs->path, stderr) != 0)
            return CLI_INVALID;
    } else if (attn_scene_init_default(&cs->scene) != 0) {
        fprintf(stderr, "attnscope: the default scene: out of memory\n");
        return CLI_INVALID;
    }
    int rc = CLI_OK;
    if (in && (in->n_sentences > 0 || in->truncate || in->window[1] > 0))
        rc = apply_text(cs, in);
    if (rc == CLI_OK && in && in->save_scene)
        rc = save_scene(cs, in->save_scene);
    if (rc != CLI_OK)
        attn_scene_free(&cs->scene);
    return rc;
}

int cli_scene_open(struct cli_scene *cs, const char *path, const struct cli_input *in)
{
    return cli_scene_open_lean(cs, path, in, false, NULL, NULL);
}

int cli_scene_open_lean(struct cli_scene *cs, const char *path, const struct cli_input *in,
                        bool lean, attn_net_visit visit, void *ctx)
{
    int rc = cli_scene_load(cs, path, in);
    return rc == CLI_OK ? cli_scene_compute(cs, lean, visit, ctx) : rc;
}
