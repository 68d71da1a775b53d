/* yamltree: one YAML document as a compact node tree that remembers where each node starts.
 *
 * Built from libyaml's event API rather than yaml_parser_load so that nesting depth is bounded
 * (no recursion, no deep stacks, and libyaml's scanner, quadratic in the depth of flow
 * collections, is stopped at the first level too many), a second document is refused, and
 * syntax errors keep the parser's problem text and mark. Anchors and aliases are refused at
 * their own position, or on request kept as alias nodes that point at their anchor's node
 * (shared, never copied, like yaml_parser_load). Nodes live in one array and point to each other
 * by index; scalar text lives in one arena.
 *
 * The tree does not word its problems: it hands each one to the caller as a struct yproblem, so
 * scene files and configuration files keep their own messages.
 */
#ifndef ATTNSCOPE_YAML_YAMLTREE_H
#define ATTNSCOPE_YAML_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default limits, checked while the tree is built so a hostile file is refused at the first
 * node too many instead of after a gigabyte of tree: a scene nests at most 6 levels
 * (weights.heads[i].query rows), no list of a scene is longer than a positional table
 * (8192 rows), and 2 Mi nodes (48 MiB) hold any scene written inline. */
#define YTREE_MAX_DEPTH 64
#define YTREE_MAX_NODES (1 << 21)
#define YTREE_MAX_ITEMS 8192

enum ynode_type {
    YNODE_SCALAR,
    YNODE_SEQ,
    YNODE_MAP,
    YNODE_BAD,   /* a refused alias: already reported, handlers skip it silently */
    YNODE_ALIAS, /* an accepted alias (ytree_opts.aliases): u.alias.target is its anchor's node */
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
        struct {
            int target; /* the anchored node (never itself an alias; may enclose the alias) */
        } alias;
    } u;
};

/* Line starts of the text, built on the first attn_ytree_locate. */
struct ylines {
    size_t *start; /* byte offset of each line start */
    size_t n;
};

struct ytree {
    struct ynode *nodes;
    int n, cap;
    char *arena;
    size_t arena_len, arena_cap;
    int root;         /* -1: the stream holds no document */
    const char *text; /* the text the tree was built from (not owned), for attn_ytree_locate */
    size_t len;
    struct ylines lines;
};

struct ytree_opts {
    int max_depth; /* collections open at once, the root included; 0: YTREE_MAX_DEPTH */
    int max_nodes; /* nodes in the whole tree; 0: YTREE_MAX_NODES */
    int max_items; /* entries of one sequence or mapping; 0: YTREE_MAX_ITEMS */
    bool aliases;  /* accept anchors and aliases (YNODE_ALIAS); else each is a problem */
};

/* Where a problem is: a libyaml mark (0-based line, column in characters), or for problems the
 * reader finds before marks exist (bad UTF-8, control characters) a byte offset. */
struct ypos {
    bool is_offset;
    size_t line, col, offset;
};

enum yproblem_kind {
    YPROB_MEMORY,          /* out of memory */
    YPROB_ENCODING,        /* libyaml's reader: not UTF-8, control characters (pos: offset) */
    YPROB_SYNTAX,          /* libyaml's scanner, parser, or (with aliases) composer */
    YPROB_TOO_DEEP,        /* a collection opens deeper than limit */
    YPROB_TOO_MANY_NODES,  /* the document has more than limit nodes (pos: the one too many) */
    YPROB_TOO_LONG,        /* a collection has more than limit entries (pos: its start; key,
                              row: where it is) */
    YPROB_SECOND_DOCUMENT, /* pos: where it starts; root: its first node (pos when unknown) */
    YPROB_ANCHOR,          /* an anchor, without ytree_opts.aliases (name) */
    YPROB_ALIAS,           /* an alias, without ytree_opts.aliases (name) */
};

struct yproblem {
    enum yproblem_kind kind;
    struct ypos pos;
    const char *problem; /* ENCODING, SYNTAX: libyaml's words, or NULL */
    const char *context; /* SYNTAX: what libyaml was reading, or NULL */
    size_t context_line; /* SYNTAX with a context: the 0-based line where that starts */
    int byte;            /* ENCODING: the offending byte, or -1 */
    int limit;           /* TOO_DEEP, TOO_MANY_NODES, TOO_LONG: the limit */
    const char *name;    /* ANCHOR, ALIAS: the anchor's name */
    const char *key;     /* TOO_LONG: the nearest mapping key above the collection, or NULL */
    int row;             /* TOO_LONG: 1-based place of the collection in a parent sequence
                            below key (a matrix row), or 0 */
    struct ypos root;    /* SECOND_DOCUMENT */
};

/* Called for every problem; returns false to stop building. */
typedef bool (*ytree_report_fn)(void *ctx, const struct yproblem *p);

/* Builds the tree of the single document in text (opts NULL: the defaults). Returns 0, or -1
 * when the text could not be turned into a tree (syntax error, too deep, a second document, out
 * of memory); problems that do not stop the build (refused anchors and aliases) are reported but
 * still return 0. The tree keeps a pointer to text, for attn_ytree_locate. */
int attn_ytree_build(struct ytree *t, const char *text, size_t len, const struct ytree_opts *opts,
                     ytree_report_fn report, void *ctx);
void attn_ytree_free(struct ytree *t);

/* pos as shown to users: 1-based line and 1-based byte column (attn_diag_print puts its caret by
 * bytes; libyaml counts characters, and skips a byte order mark). Needs the tree's text. */
void attn_ytree_locate(struct ytree *t, struct ypos pos, int *line, int *col);

static inline const struct ynode *ytree_node(const struct ytree *t, int i)
{
    return &t->nodes[i];
}

static inline const char *ytree_str(const struct ytree *t, int i)
{
    return t->arena + t->nodes[i].u.s.off;
}

/* The node an alias stands for; any other node itself. */
static inline int ytree_resolve(const struct ytree *t, int i)
{
    return t->nodes[i].type == YNODE_ALIAS ? t->nodes[i].u.alias.target : i;
}

/* Where node i starts, for attn_ytree_locate. */
static inline struct ypos ytree_pos(const struct ytree *t, int i)
{
    struct ypos p = {false, (size_t)t->nodes[i].line, (size_t)t->nodes[i].col, 0};
    return p;
}

/* "a scalar", "a sequence", "a mapping" (for "must be X, got Y" messages). */
const char *attn_ytree_type_name(int type);

#endif
