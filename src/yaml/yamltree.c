/* yamltree: libyaml events -> a compact node tree with marks (see yamltree.h). */
#include "yaml/yamltree.h"

#include <stdlib.h>
#include <string.h>

#include <yaml.h>

struct open_node {
    int node; /* the container */
    int last; /* its last child so far, or -1 */
    int key;  /* the mapping key it is the value of, or -1 */
    int row;  /* its 1-based place in a parent sequence, or 0 */
};

/* An anchor seen so far (ytree_opts.aliases): its name in the arena and its node. */
struct anchor {
    uint32_t name;
    int node;
};

struct builder {
    struct ytree *t;
    struct open_node *stack;
    int depth, stack_cap, max_depth, max_nodes, max_items;
    bool stopped; /* a limit was reported: the build ends */
    bool aliases;
    struct anchor *anchors;
    int n_anchors, cap_anchors;
    ytree_report_fn report;
    void *ctx;
    bool oom;
};

const char *attn_ytree_type_name(int type)
{
    switch (type) {
    case YNODE_SCALAR:
        return "a scalar";
    case YNODE_SEQ:
        return "a sequence";
    case YNODE_MAP:
        return "a mapping";
    default:
        return "an alias";
    }
}

void attn_ytree_free(struct ytree *t)
{
    free(t->nodes);
    free(t->arena);
    free(t->lines.start);
    memset(t, 0, sizeof(*t));
    t->root = -1;
}

/* ---- positions ---------------------------------------------------------------------------- */

static bool build_lines(struct ytree *t)
{
    if (t->lines.start)
        return true;
    if (!t->text)
        return false;
    size_t n = 1;
    for (const char *p = t->text, *end = t->text + t->len; p < end; p++) {
        p = memchr(p, '\n', (size_t)(end - p));
        if (!p)
            break;
        n++;
    }
    t->lines.start = malloc(n * sizeof(*t->lines.start));
    if (!t->lines.start)
        return false;
    t->lines.start[0] = 0;
    t->lines.n = 1;
    for (size_t i = 0; i < t->len; i++)
        if (t->text[i] == '\n')
            t->lines.start[t->lines.n++] = i + 1;
    return true;
}

/* libyaml mark (0-based line, column in characters) -> 1-based line and byte column. */
static void locate_mark(struct ytree *t, size_t line0, size_t ccol0, int *line, int *col)
{
    *line = line0 >= 0x7fffffff ? 0x7fffffff : (int)line0 + 1;
    *col = ccol0 >= 0x7ffffffe ? 0x7fffffff : (int)ccol0 + 1;
    if (!build_lines(t) || line0 >= t->lines.n)
        return;
    size_t start = t->lines.start[line0];
    size_t end = line0 + 1 < t->lines.n ? t->lines.start[line0 + 1] : t->len;
    size_t p = start;
    /* libyaml skips a byte order mark without counting it. */
    if (line0 == 0 && t->len >= 3 && memcmp(t->text, "\xEF\xBB\xBF", 3) == 0)
        p = 3;
    for (size_t c = 0; c < ccol0 && p < end; c++) {
        p++;
        while (p < end && ((unsigned char)t->text[p] & 0xC0) == 0x80)
            p++;
    }
    size_t bcol = p - start + 1;
    *col = bcol > 0x7fffffff ? 0x7fffffff : (int)bcol;
}

static void locate_offset(struct ytree *t, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    if (!build_lines(t))
        return;
    size_t lo = 0, hi = t->lines.n; /* last line start <= off */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->lines.start[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    *line = lo + 1 > 0x7fffffff ? 0x7fffffff : (int)lo + 1;
    size_t bcol = off - t->lines.start[lo] + 1;
    *col = bcol > 0x7fffffff ? 0x7fffffff : (int)bcol;
}

void attn_ytree_locate(struct ytree *t, struct ypos pos, int *line, int *col)
{
    if (pos.is_offset)
        locate_offset(t, pos.offset, line, col);
    else
        locate_mark(t, pos.line, pos.col, line, col);
}

/* ---- building ----------------------------------------------------------------------------- */

static struct ypos pos_of_mark(yaml_mark_t m)
{
    struct ypos p = {.is_offset = false, .line = m.line, .col = m.column, .offset = 0};
    return p;
}

static bool report_kind(struct builder *b, enum yproblem_kind kind, yaml_mark_t m, const char *name)
{
    struct yproblem p = {.kind = kind, .pos = pos_of_mark(m), .byte = -1, .name = name};
    p.root = p.pos;
    p.limit = kind == YPROB_TOO_MANY_NODES ? b->max_nodes : b->max_depth;
    return b->report(b->ctx, &p);
}

/* A composer problem in libyaml's own words (as yaml_parser_load gives them). */
static void report_composer(struct builder *b, yaml_mark_t m, const char *problem,
                            const char *context, size_t context_line)
{
    struct yproblem p = {.kind = YPROB_SYNTAX, .pos = pos_of_mark(m), .byte = -1};
    p.problem = problem;
    p.context = context;
    p.context_line = context_line;
    p.root = p.pos;
    b->report(b->ctx, &p);
}

static void report_memory(ytree_report_fn report, void *ctx)
{
    struct yproblem p = {.kind = YPROB_MEMORY, .byte = -1};
    report(ctx, &p);
}

/* Appends len bytes and a NUL to the arena; returns their offset, or false. */
static bool arena_put(struct builder *b, const void *s, size_t len, uint32_t *off)
{
    struct ytree *t = b->t;
    if (len > UINT32_MAX - 1 || t->arena_len + len + 1 > UINT32_MAX) {
        b->oom = true;
        return false;
    }
    if (t->arena_len + len + 1 > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 4096;
        while (cap < t->arena_len + len + 1)
            cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a) {
            b->oom = true;
            return false;
        }
        t->arena = a;
        t->arena_cap = cap;
    }
    *off = (uint32_t)t->arena_len;
    memcpy(t->arena + t->arena_len, s, len);
    t->arena[t->arena_len + len] = '\0';
    t->arena_len += len + 1;
    return true;
}

/* The innermost open collection is too long: reported with the key it belongs to. */
static void report_too_long(struct builder *b)
{
    const struct open_node *top = &b->stack[b->depth - 1];
    const struct ynode *nd = &b->t->nodes[top->node];
    struct yproblem p = {.kind = YPROB_TOO_LONG, .byte = -1, .limit = b->max_items};
    p.pos = (struct ypos){false, (size_t)nd->line, (size_t)nd->col, 0};
    p.root = p.pos;
    p.row = top->key < 0 ? top->row : 0;
    for (int d = b->depth - 1; d >= 0 && !p.key; d--)
        if (b->stack[d].key >= 0)
            p.key = b->t->arena + b->t->nodes[b->stack[d].key].u.s.off;
    b->report(b->ctx, &p);
    b->stopped = true;
}

/* Appends a node and links it under the innermost open container (or makes it the root). */
static int add_node(struct builder *b, int type, yaml_mark_t m)
{
    struct ytree *t = b->t;
    if (t->n >= b->max_nodes) {
        report_kind(b, YPROB_TOO_MANY_NODES, m, NULL);
        b->stopped = true;
        return -1;
    }
    if (b->depth > 0) {
        const struct open_node *top = &b->stack[b->depth - 1];
        const struct ynode *parent = &t->nodes[top->node];
        int entries = parent->type == YNODE_MAP ? parent->u.c.count / 2 : parent->u.c.count;
        if (entries >= b->max_items) {
            report_too_long(b);
            return -1;
        }
    }
    if (t->n == t->cap) {
        if (t->cap > (1 << 29)) {
            b->oom = true;
            return -1;
        }
        int cap = t->cap ? t->cap * 2 : 256;
        struct ynode *nodes = realloc(t->nodes, (size_t)cap * sizeof(*nodes));
        if (!nodes) {
            b->oom = true;
            return -1;
        }
        t->nodes = nodes;
        t->cap = cap;
    }
    int i = t->n++;
    struct ynode *nd = &t->nodes[i];
    memset(nd, 0, sizeof(*nd));
    nd->type = (unsigned char)type;
    nd->line = m.line > (size_t)0x7fffffff ? 0x7fffffff : (int)m.line;
    nd->col = m.column > (size_t)0x7fffffff ? 0x7fffffff : (int)m.column;
    nd->next = -1;
    nd->u.c.first = -1;
    if (b->depth == 0) {
        t->root = i;
    } else {
        struct open_node *top = &b->stack[b->depth - 1];
        struct ynode *parent = &t->nodes[top->node];
        if (top->last < 0)
            parent->u.c.first = i;
        else
            t->nodes[top->last].next = i;
        top->last = i;
        parent->u.c.count++;
    }
    return i;
}

static int add_scalar(struct builder *b, const yaml_event_t *e)
{
    uint32_t off;
    if (!arena_put(b, e->data.scalar.value, e->data.scalar.length, &off))
        return -1;
    int i = add_node(b, YNODE_SCALAR, e->start_mark);
    if (i < 0)
        return -1;
    struct ynode *nd = &b->t->nodes[i];
    nd->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    nd->u.s.off = off;
    nd->u.s.len = (uint32_t)e->data.scalar.length;
    return i;
}

static int open_container(struct builder *b, int type, yaml_mark_t m)
{
    if (b->depth >= b->max_depth) {
        report_kind(b, YPROB_TOO_DEEP, m, NULL);
        return -1;
    }
    /* Where it sits, for a "too long" report: the value of a key, or a row of a list. */
    int key = -1, row = 0;
    if (b->depth > 0) {
        const struct open_node *top = &b->stack[b->depth - 1];
        const struct ynode *parent = &b->t->nodes[top->node];
        if (parent->type == YNODE_MAP && parent->u.c.count % 2 == 1 &&
            b->t->nodes[top->last].type == YNODE_SCALAR)
            key = top->last;
        else if (parent->type == YNODE_SEQ)
            row = parent->u.c.count + 1;
    }
    int i = add_node(b, type, m);
    if (i < 0)
        return -1;
    if (b->depth == b->stack_cap) {
        int cap = b->stack_cap ? b->stack_cap * 2 : 16;
        struct open_node *s = realloc(b->stack, (size_t)cap * sizeof(*s));
        if (!s) {
            b->oom = true;
            return -1;
        }
        b->stack = s;
        b->stack_cap = cap;
    }
    b->stack[b->depth] = (struct open_node){.node = i, .last = -1, .key = key, .row = row};
    b->depth++;
    return i;
}

static int find_anchor(const struct builder *b, const char *name)
{
    for (int i = 0; i < b->n_anchors; i++)
        if (strcmp(b->t->arena + b->anchors[i].name, name) == 0)
            return i;
    return -1;
}

/* Remembers node as the anchor name; a name given twice is an error, as in yaml_parser_load. */
static int add_anchor(struct builder *b, const char *name, int node)
{
    int a = find_anchor(b, name);
    if (a >= 0) {
        const struct ynode *first = &b->t->nodes[b->anchors[a].node];
        const struct ynode *second = &b->t->nodes[node];
        yaml_mark_t m = {0, (size_t)second->line, (size_t)second->col};
        report_composer(b, m, "second occurrence", "found duplicate anchor; first occurrence",
                        (size_t)first->line);
        return -1;
    }
    if (b->n_anchors == b->cap_anchors) {
        int cap = b->cap_anchors ? b->cap_anchors * 2 : 16;
        struct anchor *s = realloc(b->anchors, (size_t)cap * sizeof(*s));
        if (!s) {
            b->oom = true;
            return -1;
        }
        b->anchors = s;
        b->cap_anchors = cap;
    }
    uint32_t off;
    if (!arena_put(b, name, strlen(name), &off))
        return -1;
    b->anchors[b->n_anchors++] = (struct anchor){off, node};
    return 0;
}

static int add_alias(struct builder *b, const yaml_event_t *e)
{
    const char *name = (const char *)e->data.alias.anchor;
    if (!b->aliases) {
        if (!report_kind(b, YPROB_ALIAS, e->start_mark, name) ||
            add_node(b, YNODE_BAD, e->start_mark) < 0)
            return -1;
        return 0;
    }
    int a = find_anchor(b, name);
    if (a < 0) {
        report_composer(b, e->start_mark, "found undefined alias", NULL, 0);
        return -1;
    }
    int i = add_node(b, YNODE_ALIAS, e->start_mark);
    if (i < 0)
        return -1;
    b->t->nodes[i].u.alias.target = b->anchors[a].node;
    return 0;
}

/* Reports a libyaml error with its own words and position. */
static void report_parser_error(struct builder *b, const yaml_parser_t *p)
{
    struct yproblem pr = {.kind = YPROB_SYNTAX, .pos = pos_of_mark(p->problem_mark), .byte = -1};
    pr.problem = p->problem;
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        pr.kind = YPROB_MEMORY;
        pr.pos = (struct ypos){0};
        break;
    case YAML_READER_ERROR:
        /* The reader has no marks yet, only a byte offset. */
        pr.kind = YPROB_ENCODING;
        pr.pos.is_offset = true;
        pr.pos.offset = p->problem_offset;
        pr.byte = p->problem_value;
        break;
    default:
        pr.context = p->context;
        pr.context_line = p->context_mark.line;
        break;
    }
    pr.root = pr.pos;
    b->report(b->ctx, &pr);
}

/* A second document starts at m: reported with the start of its first node when that can be
 * read (a syntax error there is not reported: one problem with the stream is enough). */
static void report_second_document(struct builder *b, yaml_parser_t *parser, yaml_mark_t m)
{
    struct yproblem p = {.kind = YPROB_SECOND_DOCUMENT, .pos = pos_of_mark(m), .byte = -1};
    p.root = p.pos;
    yaml_event_t e;
    if (yaml_parser_parse(parser, &e)) {
        if (e.type == YAML_SCALAR_EVENT || e.type == YAML_SEQUENCE_START_EVENT ||
            e.type == YAML_MAPPING_START_EVENT || e.type == YAML_ALIAS_EVENT)
            p.root = pos_of_mark(e.start_mark);
        yaml_event_delete(&e);
    }
    b->report(b->ctx, &p);
}

int attn_ytree_build(struct ytree *t, const char *text, size_t len, const struct ytree_opts *opts,
                     ytree_report_fn report, void *ctx)
{
    memset(t, 0, sizeof(*t));
    t->root = -1;
    t->text = text;
    t->len = len;
    struct builder b = {.t = t, .report = report, .ctx = ctx};
    b.max_depth = opts && opts->max_depth > 0 ? opts->max_depth : YTREE_MAX_DEPTH;
    b.max_nodes = opts && opts->max_nodes > 0 ? opts->max_nodes : YTREE_MAX_NODES;
    b.max_items = opts && opts->max_items > 0 ? opts->max_items : YTREE_MAX_ITEMS;
    b.aliases = opts && opts->aliases;

    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        report_memory(report, ctx);
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    int rc = 0, documents = 0;
    bool done = false;
    while (!done) {
        yaml_event_t e;
        if (!yaml_parser_parse(&parser, &e)) {
            report_parser_error(&b, &parser);
            rc = -1;
            break;
        }
        const char *anchor = NULL;
        int node = -1;
        switch (e.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1) {
                report_second_document(&b, &parser, e.start_mark);
                rc = -1;
                done = true;
            }
            break;
        case YAML_ALIAS_EVENT:
            if (add_alias(&b, &e) < 0)
                rc = -1;
            break;
        case YAML_SCALAR_EVENT:
            anchor = (const char *)e.data.scalar.anchor;
            if ((node = add_scalar(&b, &e)) < 0)
                rc = -1;
            break;
        case YAML_SEQUENCE_START_EVENT:
            anchor = (const char *)e.data.sequence_start.anchor;
            if ((node = open_container(&b, YNODE_SEQ, e.start_mark)) < 0)
                rc = -1;
            break;
        case YAML_MAPPING_START_EVENT:
            anchor = (const char *)e.data.mapping_start.anchor;
            if ((node = open_container(&b, YNODE_MAP, e.start_mark)) < 0)
                rc = -1;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (b.depth > 0)
                b.depth--;
            break;
        default:
            break;
        }
        if (anchor && rc == 0) {
            if (b.aliases) {
                if (add_anchor(&b, anchor, node) < 0)
                    rc = -1;
            } else if (!report_kind(&b, YPROB_ANCHOR, e.start_mark, anchor)) {
                rc = -1;
            }
        }
        yaml_event_delete(&e);
        if (rc != 0)
            break;
    }
    if (b.oom && !b.stopped)
        report_memory(report, ctx);
    free(b.stack);
    free(b.anchors);
    yaml_parser_delete(&parser);
    return rc;
}
