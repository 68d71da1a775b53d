/* stset: a checkpoint's tensors, from one safetensors file or from the shards a sharded
 * checkpoint's model.safetensors.index.json names.
 *
 * Hugging Face writes a large model as shards (model-00001-of-00002.safetensors, ...) beside an
 * index whose "weight_map" says which shard holds each tensor. attn_stset_open maps every shard
 * the index names (each validated by attn_st_open) and checks the index against them: every
 * tensor it lists is in its shard and in no other, and no shard holds a tensor the index does
 * not list. Errors name the index with line:col of the entry at fault, or the shard. Shards are
 * files in the index's own folder: a name with a '/' is refused, and so is a shard that is a link
 * to a file outside the folder the index itself resolves into (in Hugging Face's cache the index
 * and its shards are all links into the same blobs/). The index, which the user names, may be a
 * link to anywhere.
 */
#ifndef ATTNSCOPE_STSET_H
#define ATTNSCOPE_STSET_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "pretrained/safetensors.h"

#define STSET_INDEX_MAX  ((size_t)64 << 20) /* an index's bytes: Llama 3 405B's is under 1 MB */
#define STSET_MAX_SHARDS 1024

/* One tensor of the set: its shard and its entry in that shard's header. */
struct st_ref {
    const char *name; /* the shard's copy */
    int file;         /* index into files */
    const struct st_tensor *t;
};

struct st_set {
    char *path;            /* the safetensors file or the index, as opened */
    bool sharded;          /* opened from an index */
    struct st_file *files; /* (n_files) */
    int n_files;
    struct st_ref *refs; /* (n) every tensor of every file, sorted by name */
    int n;
};

/* The index's content: shards (the file names, in order of first mention) and every entry. */
struct st_index {
    char **shards;
    int n_shards;
    struct st_index_entry {
        char *tensor;
        int shard; /* into shards */
    } * entries;
    int n_entries;
};

/* Parses an index's bytes (path names it in messages): a JSON object with a "weight_map" object
 * of tensor name -> shard file name (an optional "metadata" object beside it is ignored).
 * Errors are located at path:line:col. On failure *out is empty. */
int attn_stindex_parse(struct st_index *out, const char *text, size_t len, const char *path,
                       struct diag *err);
void attn_stindex_free(struct st_index *ix);

/* path: a .safetensors file, or an index (its name ends in .json). On failure *out is empty
 * (attn_stset_close is harmless). */
int attn_stset_open(struct st_set *out, const char *path, struct diag *err);
void attn_stset_close(struct st_set *s);
/* The tensor called name, or NULL. */
const struct st_ref *attn_stset_find(const struct st_set *s, const char *name);
/* attn_st_check_unchanged of every shard. */
int attn_stset_check_unchanged(const struct st_set *s, struct diag *err);

#endif
