/* folder: a Hugging Face model folder as a scene (see scenefile.h).
 *
 * People come with a downloaded folder and a sentence. The folder is made into the scene one
 * would write by hand beside it (title, text, tokenizer, model: the keys of docs/checkpoints.md's
 * scenes) as YAML in memory, and that YAML goes through the scene loader like any file: every
 * check and message of a checkpoint scene holds for a folder, and what --save-scene or `w`
 * writes of it reopens as the same scene. Its paths are the folder's as the user named it, so
 * a problem names the file the user can look at ("models/x/config.json:3:5: ...").
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/utf8.h"
#include "pretrained/pretrained.h"
#include "scenefile/scenefile.h"
#include "scenefile/yamlstr.h"

/* The in-memory scene's name for the loader: no '/', so the paths in it are read as written
 * (from the current folder), and no file the scene names can have it. */
#define MODEL_SCENE_NAME "attnscope-model-scene"

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* safetensors: an 8-byte little-endian header length (Hugging Face's library takes 100 MB at
 * most), then the header's '{'. A scene is text: its first 8 bytes as such a number are huge. */
static bool looks_like_safetensors(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    unsigned char b[9];
    bool yes = fread(b, 1, 9, f) == 9;
    fclose(f);
    uint64_t n = 0;
    for (int i = 7; yes && i >= 0; i--)
        n = n << 8 | b[i];
    return yes && n >= 2 && n <= 100000000 && b[8] == '{';
}

bool attn_scenefile_is_model(const char *path)
{
    if (is_dir(path))
        return true;
    return is_file(path) &&
           (ends_with(path, ".safetensors") || ends_with(path, ".safetensors.index.json") ||
            looks_like_safetensors(path));
}

/* dir/name into out; whether it is a regular file. */
static bool in_dir(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    return n > 0 && (size_t)n < size && is_file(out);
}

/* Marian's tokenizer files (opus-mt's folders have no tokenizer.json): the folder is the
 * tokenizer (kind hf, file: the folder). */
static bool is_marian(const char *dir)
{
    char path[4200];
    return in_dir(path, sizeof(path), dir, "source.spm") &&
           in_dir(path, sizeof(path), dir, "target.spm") &&
           in_dir(path, sizeof(path), dir, "vocab.json");
}

/* A tokenizer in dir: tokenizer.json, else vocab.json with merges.txt, else Marian's
 * source.spm, target.spm and vocab.json. */
static bool find_tokenizer(struct attn_model_files *m, const char *dir)
{
    if (in_dir(m->tokenizer, sizeof(m->tokenizer), dir, "tokenizer.json")) {
        m->merges[0] = '\0';
        return true;
    }
    if (in_dir(m->tokenizer, sizeof(m->tokenizer), dir, "vocab.json") &&
        in_dir(m->merges, sizeof(m->merges), dir, "merges.txt"))
        return true;
    m->merges[0] = '\0';
    if (is_marian(dir) &&
        snprintf(m->tokenizer, sizeof(m->tokenizer), "%s", dir) < (int)sizeof(m->tokenizer))
        return true;
    m->tokenizer[0] = '\0';
    return false;
}

/* --tokenizer PATH: a tokenizer.json (any name), a vocab.json with merges.txt beside it, or a
 * folder that holds either or Marian's files. */
static int given_tokenizer(struct attn_model_files *m, const char *path, struct diag *err)
{
    if (is_dir(path)) {
        if (find_tokenizer(m, path))
            return 0;
        return attn_diag_file(err, path,
                              "no tokenizer here for --tokenizer: a folder of one holds "
                              "tokenizer.json, or vocab.json with merges.txt, or Marian's "
                              "source.spm, target.spm and vocab.json");
    }
    if (!is_file(path))
        return attn_diag_file(err, path, "--tokenizer: %s", strerror(ENOENT));
    snprintf(m->tokenizer, sizeof(m->tokenizer), "%s", path);
    m->merges[0] = '\0';
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (strcmp(base, "vocab.json") == 0) { /* GPT-2's BPE: its merges beside it */
        int dir = (int)(base - path);
        snprintf(m->merges, sizeof(m->merges), "%.*smerges.txt", dir, path);
        if (is_file(m->merges))
            return 0;
        /* Marian's vocab.json, beside its SentencePiece models: the folder is the tokenizer */
        char folder[sizeof(m->tokenizer)];
        if (dir == 0)
            snprintf(folder, sizeof(folder), ".");
        else
            snprintf(folder, sizeof(folder), "%.*s", dir > 1 ? dir - 1 : 1, path);
        m->merges[0] = '\0';
        if (is_marian(folder)) {
            snprintf(m->tokenizer, sizeof(m->tokenizer), "%s", folder);
            return 0;
        }
        return attn_diag_file(err, path,
                              "--tokenizer: a vocab.json needs merges.txt beside it (GPT-2's) or "
                              "source.spm and target.spm (Marian's)");
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "config.json, tokenizer.json and pytorch_model.bin": what dir has of a model folder's files,
 * and of what a folder may hold instead (PyTorch's pickles; safetensors under other names: an
 * adapter, shards without their index), the first three of those by name. */
static void found_text(char *out, size_t size, const char *dir)
{
    static const char *const known[] = {"config.json",
                                        "model.safetensors",
                                        "model.safetensors.index.json",
                                        "tokenizer.json",
                                        "tokenizer_config.json",
                                        "vocab.json",
                                        "merges.txt",
                                        "source.spm",
                                        "target.spm",
                                        "pytorch_model.bin"};
    const char *names[16];
    char *others[64];
    int n = 0, n_others = 0, more = 0;
    char path[4200];
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (in_dir(path, sizeof(path), dir, known[i]))
            names[n++] = known[i];
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, "model.safetensors") == 0 || !ends_with(e->d_name, ".safetensors"))
            continue;
        char *copy = n_others < 64 ? strdup(e->d_name) : NULL;
        if (copy)
            others[n_others++] = copy;
        else
            more++;
    }
    if (d)
        closedir(d);
    qsort(others, (size_t)n_others, sizeof(others[0]), by_name);
    for (int i = 0; i < n_others; i++)
        if (i < 3)
            names[n++] = others[i];
        else
            more++;
    char rest[64];
    if (more) {
        snprintf(rest, sizeof(rest), "%d more .safetensors files", more);
        names[n++] = rest;
    }
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%.*s",
                              i == 0       ? ""
                              : i + 1 == n ? " and "
                                           : ", ",
                              (int)(size - o), names[i]);
    for (int i = 0; i < n_others; i++)
        free(others[i]);
}

int attn_scenefile_find_model(struct attn_model_files *m, const char *path, const char *tokenizer,
                              struct diag *err)
{
    memset(m, 0, sizeof(*m));
    attn_diag_clear(err);
    /* the folder, without the slashes a shell's completion leaves at its end */
    bool dir = is_dir(path);
    if (dir) {
        size_t len = strlen(path);
        while (len > 1 && path[len - 1] == '/')
            len--;
        if (len >= sizeof(m->folder))
            return attn_diag_file(err, path, "the path is too long");
        memcpy(m->folder, path, len);
        m->folder[len] = '\0';
        if (!in_dir(m->weights, sizeof(m->weights), m->folder, "model.safetensors") &&
            !in_dir(m->weights, sizeof(m->weights), m->folder, "model.safetensors.index.json"))
            m->weights[0] = '\0';
    } else {
        const char *slash = strrchr(path, '/');
        snprintf(m->folder, sizeof(m->folder), "%.*s", slash ? (int)(slash - path) : 1,
                 slash ? (slash == path ? "/" : path) : ".");
        if (snprintf(m->weights, sizeof(m->weights), "%s", path) >= (int)sizeof(m->weights))
            return attn_diag_file(err, path, "the path is too long");
    }
    char config[4200];
    bool has_config = in_dir(config, sizeof(config), m->folder, "config.json");
    bool has_tokenizer =
        tokenizer ? given_tokenizer(m, tokenizer, err) == 0 : find_tokenizer(m, m->folder);
    if (tokenizer && !has_tokenizer)
        return -1;
    if (has_config && m->weights[0] && has_tokenizer)
        return 0;

    char found[400];
    found_text(found, sizeof(found), m->folder);
    const char *shown = dir ? m->folder : path;
    if (!dir && !has_config)
        return attn_diag_file(err, shown,
                              "no config.json beside it: a checkpoint's config.json says what "
                              "model it is (its architecture and sizes)");
    if (has_config && m->weights[0])
        return attn_diag_file(err, shown,
                              "no tokenizer: a model folder holds tokenizer.json, or vocab.json "
                              "with merges.txt, or Marian's source.spm, target.spm and "
                              "vocab.json%s%s%s; give one with --tokenizer PATH (a "
                              "tokenizer.json, or a folder that holds one)",
                              found[0] ? " (this one has " : "", found, found[0] ? ")" : "");
    const char *needs = "a model folder holds config.json, the weights (model.safetensors, or "
                        "model.safetensors.index.json and its shards) and a tokenizer "
                        "(tokenizer.json, or vocab.json with merges.txt, or Marian's "
                        "source.spm, target.spm and vocab.json)";
    if (!found[0])
        return attn_diag_file(err, shown, "not a model folder: %s; this one has none of them",
                              needs);
    const char *missing[3];
    int n_missing = 0;
    if (!has_config)
        missing[n_missing++] = "config.json";
    if (!m->weights[0])
        missing[n_missing++] = "model.safetensors";
    if (!has_tokenizer)
        missing[n_missing++] = "tokenizer";
    return attn_diag_file(err, shown, "not a model folder: %s; this one has %s, but no %s%s%s%s%s",
                          needs, found, missing[0], n_missing == 3 ? ", no " : "",
                          n_missing == 3 ? missing[1] : "", n_missing > 1 ? " and no " : "",
                          n_missing > 1 ? missing[n_missing - 1] : "");
}

/* The folder's name; in Hugging Face's cache (hub/models--ORG--NAME/snapshots/REV) the model's,
 * ORG/NAME, since REV is a hash. */
static void title_of(char *out, size_t size, const char *folder)
{
    char *real = realpath(folder, NULL);
    const char *p = real ? real : folder;
    const char *end = p + strlen(p), *parts[3] = {NULL, NULL, NULL};
    size_t lens[3] = {0, 0, 0};
    for (int k = 0; k < 3 && end > p; k++) { /* the last three names, the last first */
        const char *start = end;
        while (start > p && start[-1] != '/')
            start--;
        parts[k] = start;
        lens[k] = (size_t)(end - start);
        end = start > p ? start - 1 : p;
    }
    if (parts[2] && lens[1] == 9 && strncmp(parts[1], "snapshots", 9) == 0 && lens[2] > 8 &&
        strncmp(parts[2], "models--", 8) == 0) {
        size_t o = 0;
        for (size_t i = 8; i < lens[2] && o + 1 < size; i++) {
            if (parts[2][i] == '-' && i + 1 < lens[2] && parts[2][i + 1] == '-') {
                out[o++] = '/';
                i++;
            } else {
                out[o++] = parts[2][i];
            }
        }
        out[o] = '\0';
    } else {
        snprintf(out, size, "%.*s", parts[0] ? (int)lens[0] : 0, parts[0] ? parts[0] : "");
    }
    if (!out[0])
        snprintf(out, size, "%.*s", (int)size - 1, folder);
    free(real);
}

int attn_scenefile_model_yaml(char **yaml, size_t *len, const struct attn_model_files *m,
                              struct diag *err)
{
    *yaml = NULL;
    *len = 0;
    FILE *f = open_memstream(yaml, len);
    if (!f)
        return attn_diag_set(err, "", "out of memory");
    char title[512];
    title_of(title, sizeof(title), m->folder);
    fputs("version: 1\ntitle: ", f);
    attn_scenefile_yaml_string(f, title, false);
    /* an encoder-decoder's: the sentence is the source, the target still to be written */
    bool two = attn_pretrained_encoder_decoder(m->weights);
    fputs(two ? "\ntext: {source: " : "\ntext: ", f);
    attn_scenefile_yaml_string(f, ATTN_MODEL_DEFAULT_TEXT, false);
    if (two)
        fputs(", target: \"\"}", f);
    if (m->merges[0]) {
        fprintf(f, "\ntokenizer: {kind: %s, vocab: ", attn_tokenizer_name(TOKENIZER_GPT2));
        attn_scenefile_yaml_string(f, m->tokenizer, true);
        fputs(", merges: ", f);
        attn_scenefile_yaml_string(f, m->merges, true);
    } else {
        fprintf(f, "\ntokenizer: {kind: %s, file: ", attn_tokenizer_name(TOKENIZER_HF));
        attn_scenefile_yaml_string(f, m->tokenizer, true);
    }
    fputs("}\nmodel: {file: ", f);
    attn_scenefile_yaml_string(f, m->weights, true);
    fputs("}\n", f);
    if (fclose(f) != 0 || !*yaml) {
        free(*yaml);
        *yaml = NULL;
        return attn_diag_set(err, "", "out of memory");
    }
    return 0;
}

/* A problem of the model's scene, said about the folder: the in-memory YAML's lines are nobody's
 * to read. A message about one of the folder's files already starts with its name ("path: ..."):
 * that name becomes the problem's file, so it prints as it reads. */
static void relocate_problem(struct diag *d, const struct attn_model_files *m)
{
    if (strcmp(d->file, MODEL_SCENE_NAME) != 0 && d->file[0])
        return;
    d->line = d->col = 0;
    const char *own[] = {m->weights, m->tokenizer, m->merges};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(own[i]);
        if (n && n < sizeof(d->file) && strncmp(d->msg, own[i], n) == 0 && d->msg[n] == ':' &&
            d->msg[n + 1] == ' ') {
            memcpy(d->file, own[i], n + 1);
            memmove(d->msg, d->msg + n + 2, strlen(d->msg + n + 2) + 1);
            return;
        }
    }
    snprintf(d->file, sizeof(d->file), "%.*s", (int)sizeof(d->file) - 1, m->folder);
}

int attn_scenefile_load_model(struct attn_scene *out, const struct attn_model_files *m,
                              struct diag_list *errs)
{
    struct diag err;
    attn_diag_clear(&err);
    char *yaml;
    size_t len;
    if (attn_scenefile_model_yaml(&yaml, &len, m, &err) != 0) {
        attn_scene_init(out);
        snprintf(err.file, sizeof(err.file), "%.*s", (int)sizeof(err.file) - 1, m->folder);
        attn_diag_list_push(errs, &err);
        return -1;
    }
    int first = errs->n;
    int rc = attn_scenefile_parse(out, MODEL_SCENE_NAME, yaml, len, errs);
    free(yaml);
    for (int i = first; i < errs->n; i++)
        relocate_problem(&errs->items[i], m);
    return rc;
}

int attn_scenefile_load_model_report(struct attn_scene *out, const struct attn_model_files *m,
                                     FILE *report)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    int rc = attn_scenefile_load_model(out, m, &errs);
    for (int i = 0; rc != 0 && i < errs.n; i++)
        attn_diag_print(report, &errs.items[i], NULL, 0);
    if (rc != 0 && !attn_diag_list_print_lost(report, &errs, m->folder) && errs.n == 0)
        fprintf(report, "%s: invalid model\n", m->folder);
    if (rc == 0)
        attn_scenefile_print_warnings(report, out, m->folder);
    attn_diag_list_free(&errs);
    return rc;
}
