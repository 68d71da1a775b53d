/* stset: one safetensors file, or a sharded checkpoint's index and shards (see stset.h). */
#include "pretrained/stset.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/utf8.h"
#include "pretrained/jsonloc.h"
#include "pretrained/jsonoom.h"

/* s for a message: escaped, cut with "…" (common/utf8.h). */
static const char *show(char *out, size_t size, const char *s)
{
    attn_utf8_escape(out, size, s, (size_t)-1, 0);
    return out;
}

/* A problem of the index at the entry of tensor (or the key "weight_map" when tensor is NULL,
 * or the top when neither is there). Returns -1. */
static int index_error(struct diag *err, const char *path, const char *text, size_t len,
                       const char *tensor, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int index_error(struct diag *err, const char *path, const char *text, size_t len,
                       const char *tensor, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    attn_diag_file(err, path, "%s", msg);
    if (text) {
        const char *keys[2] = {"weight_map", tensor};
        attn_json_locate(text, len, keys, tensor ? 2 : 1, &err->line, &err->col);
    }
    return -1;
}

/* Twice the most shards, so a probe ends at an empty slot. */
#define SHARD_SLOTS (2 * STSET_MAX_SHARDS)
_Static_assert((SHARD_SLOTS & (SHARD_SLOTS - 1)) == 0, "a power of two");

static size_t shard_hash(const char *s)
{
    size_t h = 14695981039346656037u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h ^ (h >> 29);
}

void attn_stindex_free(struct st_index *ix)
{
    for (int i = 0; i < ix->n_shards; i++)
        free(ix->shards[i]);
    free(ix->shards);
    for (int i = 0; i < ix->n_entries; i++)
        free(ix->entries[i].tensor);
    free(ix->entries);
    memset(ix, 0, sizeof(*ix));
}

int attn_stindex_parse(struct st_index *out, const char *text, size_t len, const char *path,
                       struct diag *err)
{
    memset(out, 0, sizeof(*out));
    if (attn_json_has_bom(text, len)) {
        attn_diag_file(err, path, ATTN_JSON_BOM_MSG);
        err->line = err->col = 1;
        return -1;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root && attn_json_out_of_memory(&je, text, len))
        return attn_diag_file(err, path, "out of memory reading the JSON");
    if (!root) {
        char shown[2 * JSON_ERROR_TEXT_LENGTH]; /* jansson quotes the bytes as they are */
        attn_diag_file(err, path, "not valid JSON: %s",
                       attn_utf8_esc(shown, sizeof(shown), je.text));
        err->line = je.line > 0 ? je.line : 0;
        err->col = je.line > 0 && je.column > 0 ? je.column : 0;
        return -1;
    }
    int rc = -1;
    char shown[160], shard_shown[160];
    json_t *map = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(root)) {
        attn_diag_file(err, path,
                       "not a JSON object: a sharded checkpoint's index is {\"metadata\": "
                       "{...}, \"weight_map\": {tensor: shard file}}");
        goto out;
    }
    if (!json_is_object(map)) {
        index_error(err, path, text, len, NULL,
                    map ? "'weight_map' is not an object of tensor names and shard files"
                        : "there is no 'weight_map' (tensor name -> shard file): is it a "
                          "model.safetensors.index.json?");
        goto out;
    }
    size_t n = json_object_size(map);
    if (n == 0) {
        index_error(err, path, text, len, NULL, "'weight_map' names no tensor");
        goto out;
    }
    if (!(out->entries = calloc(n, sizeof(*out->entries))))
        goto oom;
    int slots[SHARD_SLOTS];
    for (int i = 0; i < SHARD_SLOTS; i++)
        slots[i] = -1;
    const char *name;
    json_t *v;
    json_object_foreach(map, name, v)
    {
        show(shown, sizeof(shown), name);
        if (!json_is_string(v) || json_string_length(v) == 0) {
            index_error(err, path, text, len, name,
                        "tensor '%s': its shard is not a file name (a string)", shown);
            goto out;
        }
        const char *file = json_string_value(v);
        show(shard_shown, sizeof(shard_shown), file);
        if (strlen(file) != json_string_length(v) || strchr(file, '/') || strcmp(file, ".") == 0 ||
            strcmp(file, "..") == 0) {
            index_error(err, path, text, len, name,
                        "tensor '%s': shard '%s' is not a file beside the index (a name without "
                        "'/')",
                        shown, shard_shown);
            goto out;
        }
        /* the shard's slot: open addressing on the name, since a search of every shard for
         * every entry is quadratic (a 60 MB index of 1,024 shards) */
        size_t slot = shard_hash(file) & (SHARD_SLOTS - 1);
        while (slots[slot] >= 0 && strcmp(out->shards[slots[slot]], file) != 0)
            slot = (slot + 1) & (SHARD_SLOTS - 1);
        int shard = slots[slot];
        if (shard < 0) {
            if (out->n_shards == STSET_MAX_SHARDS) {
                index_error(err, path, text, len, name, "tensor '%s': more than %d shards", shown,
                            STSET_MAX_SHARDS);
                goto out;
            }
            char **grown = realloc(out->shards, (size_t)(out->n_shards + 1) * sizeof(*grown));
            if (!grown)
                goto oom;
            out->shards = grown;
            if (!(out->shards[out->n_shards] = strdup(file)))
                goto oom;
            shard = slots[slot] = out->n_shards++;
        }
        if (!(out->entries[out->n_entries].tensor = strdup(name)))
            goto oom;
        out->entries[out->n_entries++].shard = shard;
    }
    rc = 0;
    goto out;
oom:
    attn_diag_file(err, path, "out of memory");
out:
    json_decref(root);
    if (rc)
        attn_stindex_free(out);
    return rc;
}

void attn_stset_close(struct st_set *s)
{
    for (int i = 0; i < s->n_files; i++)
        attn_st_close(&s->files[i]);
    free(s->files);
    free(s->refs);
    free(s->path);
    memset(s, 0, sizeof(*s));
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct st_ref *)a)->name, ((const struct st_ref *)b)->name);
}

const struct st_ref *attn_stset_find(const struct st_set *s, const char *name)
{
    struct st_ref key = {name, 0, NULL};
    return s->n ? bsearch(&key, s->refs, (size_t)s->n, sizeof(key), by_name) : NULL;
}

int attn_stset_check_unchanged(const struct st_set *s, struct diag *err)
{
    for (int i = 0; i < s->n_files; i++)
        if (attn_st_check_unchanged(&s->files[i], err) != 0)
            return -1;
    return 0;
}

/* refs of every tensor of every file, sorted; a name in two files is an error (of the index at
 * that tensor's entry when sharded). */
static int gather(struct st_set *s, const struct st_index *ix, const char *text, size_t len,
                  struct diag *err)
{
    size_t total = 0;
    for (int i = 0; i < s->n_files; i++)
        total += (size_t)s->files[i].n;
    if (!(s->refs = calloc(total ? total : 1, sizeof(*s->refs))))
        return attn_diag_file(err, s->path, "out of memory");
    for (int i = 0; i < s->n_files; i++)
        for (int j = 0; j < s->files[i].n; j++)
            s->refs[s->n++] =
                (struct st_ref){s->files[i].tensors[j].name, i, &s->files[i].tensors[j]};
    qsort(s->refs, (size_t)s->n, sizeof(*s->refs), by_name);
    if (!s->sharded) /* one file: its header has no name twice (attn_st_open) */
        return 0;
    char shown[160], a[160], b[160];
    for (int i = 1; i < s->n; i++)
        if (strcmp(s->refs[i - 1].name, s->refs[i].name) == 0)
            return index_error(err, s->path, text, len, s->refs[i].name,
                               "tensor '%s' is in two shards: '%s' and '%s'",
                               show(shown, sizeof(shown), s->refs[i].name),
                               show(a, sizeof(a), ix->shards[s->refs[i - 1].file]),
                               show(b, sizeof(b), ix->shards[s->refs[i].file]));
    /* The index and the shards agree, entry by entry; each ref an entry finds is marked, so a
     * tensor of a shard the index does not list is the first ref left unmarked (a search of the
     * entries for each ref was quadratic: 35 s for 100,000 tensors). */
    bool *listed = calloc((size_t)(s->n ? s->n : 1), sizeof(*listed));
    if (!listed)
        return attn_diag_file(err, s->path, "out of memory");
    int rc = 0;
    for (int e = 0; e < ix->n_entries && rc == 0; e++) {
        const struct st_ref *r = attn_stset_find(s, ix->entries[e].tensor);
        if (r && r->file == ix->entries[e].shard) {
            listed[r - s->refs] = true;
            continue;
        }
        show(shown, sizeof(shown), ix->entries[e].tensor);
        show(a, sizeof(a), ix->shards[ix->entries[e].shard]);
        if (!r)
            rc = index_error(err, s->path, text, len, ix->entries[e].tensor,
                             "tensor '%s' is not in its shard '%s'", shown, a);
        else
            rc = index_error(err, s->path, text, len, ix->entries[e].tensor,
                             "tensor '%s' is in shard '%s', not in '%s' as the index says", shown,
                             show(b, sizeof(b), ix->shards[r->file]), a);
    }
    for (int i = 0; i < s->n && rc == 0; i++)
        if (!listed[i])
            rc = index_error(err, s->path, text, len, NULL,
                             "tensor '%s' of shard '%s' is not in the index's weight_map",
                             show(shown, sizeof(shown), s->refs[i].name),
                             show(a, sizeof(a), ix->shards[s->refs[i].file]));
    free(listed);
    return rc;
}

/* 0 when shard (a name beside the index) resolves, through any links, inside the folder dir the
 * index resolves into, or does not resolve (attn_st_open says why); else -1 with why. The user
 * names the index, and the index names its shards: a link from a downloaded folder to a file of
 * the user's elsewhere (~/.ssh/id_rsa) must not be read as a shard, nor its bytes quoted in a
 * message. */
static int shard_outside(struct diag *why, const char *shard, const char *dir)
{
    char *real = realpath(shard, NULL);
    if (!real)
        return errno == ENOMEM ? attn_diag_set(why, "", "out of memory") : 0;
    size_t n = strlen(dir);
    bool inside = strncmp(real, dir, n) == 0 && (real[n] == '/' || (n > 0 && dir[n - 1] == '/'));
    char to[160], in[160];
    if (!inside)
        attn_diag_set(why, "",
                      "it is a link to '%s', outside the folder of the index ('%s'); a shard is a "
                      "file beside the index",
                      show(to, sizeof(to), real), show(in, sizeof(in), dir));
    free(real);
    return inside ? 0 : -1;
}

int attn_stset_open(struct st_set *out, const char *path, struct diag *err)
{
    memset(out, 0, sizeof(*out));
    if (!(out->path = strdup(path)))
        return attn_diag_file(err, path, "out of memory");
    size_t plen = strlen(path);
    if (plen < 5 || strcmp(path + plen - 5, ".json") != 0) { /* one file */
        if (!(out->files = calloc(1, sizeof(*out->files))) ||
            attn_st_open(&out->files[0], path, err) != 0) {
            if (!out->files)
                attn_diag_file(err, path, "out of memory");
            free(out->files);
            out->files = NULL;
            attn_stset_close(out);
            return -1;
        }
        out->n_files = 1;
        struct st_index none = {0};
        if (gather(out, &none, NULL, 0, err) != 0) {
            attn_stset_close(out);
            return -1;
        }
        return 0;
    }
    out->sharded = true;
    char *text;
    size_t len;
    if (attn_fsutil_read_file(&text, &len, path, STSET_INDEX_MAX, err) != 0) {
        attn_stset_close(out);
        return -1;
    }
    struct st_index ix;
    if (attn_stindex_parse(&ix, text, len, path, err) != 0) {
        free(text);
        attn_stset_close(out);
        return -1;
    }
    int rc = 0;
    char *copy = strdup(path);
    const char *dir = copy ? dirname(copy) : NULL;
    /* The folder the index really is in (an index in Hugging Face's cache is a link into its
     * blobs/, and so are the shards beside it). */
    char *home = realpath(path, NULL);
    if (!home && errno != ENOMEM)
        rc = attn_diag_file(err, path, "cannot resolve its path: %s", strerror(errno));
    else if (!copy || !home || !(out->files = calloc((size_t)ix.n_shards, sizeof(*out->files))))
        rc = attn_diag_file(err, path, "out of memory");
    const char *home_dir = home ? dirname(home) : NULL;
    for (int i = 0; i < ix.n_shards && rc == 0; i++) {
        char shard[4200];
        snprintf(shard, sizeof(shard), "%s/%s", dir, ix.shards[i]);
        struct diag why;
        attn_diag_clear(&why);
        if (shard_outside(&why, shard, home_dir) != 0 ||
            attn_st_open(&out->files[i], shard, &why) != 0) {
            /* the first tensor the index puts in it: where the message points */
            const char *first = NULL;
            for (int e = 0; e < ix.n_entries && !first; e++)
                if (ix.entries[e].shard == i)
                    first = ix.entries[e].tensor;
            char shown[160];
            rc = index_error(err, path, text, len, first, "shard '%s': %s",
                             show(shown, sizeof(shown), ix.shards[i]), why.msg);
            break;
        }
        out->n_files++;
    }
    if (rc == 0)
        rc = gather(out, &ix, text, len, err);
    free(home);
    free(copy);
    free(text);
    attn_stindex_free(&ix);
    if (rc)
        attn_stset_close(out);
    return rc;
}
