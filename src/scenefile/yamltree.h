/* yamltree: one YAML document as a compact node tree that remembers where each node starts.
 *
 * Built from libyaml's event API rather than yaml_parser_load so that nesting depth is bounded
 * (no recursion, no deep stacks), aliases and anchors are reported at their own position, a
 * second document is refused, and syntax errors keep the parser's problem text and mark.
 * Nodes live in one array and point to each other by index; scalar text lives in one arena.
 * Internal to src/scenefile.
 */
#ifndef ATTNSCOPE_SCENEFILE_YAMLTREE_H
#define ATTNSCOPE_SCENEFILE_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper documents are refused; a scene nests at most 6 levels (weights.heads[i].query rows). */
#define YTREE_MAX_DEPTH 64

enum ynode_type {
    YNODE_SCALAR,
    YNODE_SEQ,
    YNODE_MAP,
    YNODE_BAD, /* an alias: already reported, handlers skip it silently */
};

struct ynode {
    unsigned char type;  /* enum ynode_type */
    unsigned char plain; /* scalar written without quotes (so an empty one means "nothing") */
    int line, col;       /* libyaml mark: 0-based line, 0-based column in characters */
    int next;            /* next sibling, or -1 */
    union {
        struct {
            uint32_t off, len; /* text at arena + off, NUL-terminated, len bytes */
        } s;
        struct {
            int first, count; /* children; a mapping's are key, value, key, value, ... */
        } c;
    } u;
};

struct ytree {
    struct ynode *nodes;
    int n, cap;
    char *arena;
    size_t arena_len, arena_cap;
    int root; /* -1: the stream holds no document */
};

/* Where a problem is: a libyaml mark (0-based line, column in characters), or for problems the
 * reader finds before marks exist (bad UTF-8, control characters) a byte offset. */
struct ypos {
    bool is_offset;
    size_t line, col, offset;
};

/* Called for every problem; returns false to stop building. */
typedef bool (*ytree_report_fn)(void *ctx, struct ypos pos, const char *msg);

/* Builds the tree of the single document in text. Returns 0, or -1 when the text could not be
 * turned into a tree (syntax error, too deep, a second document, out of memory); problems that
 * do not stop the build (anchors, aliases) are reported but still return 0. */
int ytree_build(struct ytree *t, const char *text, size_t len, ytree_report_fn report, void *ctx);
void ytree_free(struct ytree *t);

static inline const struct ynode *ytree_node(const struct ytree *t, int i)
{
    return &t->nodes[i];
}

static inline const char *ytree_str(const struct ytree *t, int i)
{
    return t->arena + t->nodes[i].u.s.off;
}

/* "a scalar", "a sequence", "a mapping" (for "must be X, got Y" messages). */
const char *ytree_type_name(int type);

#endif
