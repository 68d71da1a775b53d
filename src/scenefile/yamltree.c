/* yamltree: libyaml events -> a compact node tree with marks (see yamltree.h). */
#include "yamltree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

struct open_node {
    int node; /* the container */
    int last; /* its last child so far, or -1 */
};

struct builder {
    struct ytree *t;
    struct open_node *stack;
    int depth, stack_cap;
    ytree_report_fn report;
    void *ctx;
    bool oom;
};

const char *ytree_type_name(int type)
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

void ytree_free(struct ytree *t)
{
    free(t->nodes);
    free(t->arena);
    memset(t, 0, sizeof(*t));
    t->root = -1;
}

static struct ypos pos_of_mark(yaml_mark_t m)
{
    struct ypos p = {.is_offset = false, .line = m.line, .col = m.column, .offset = 0};
    return p;
}

static bool report_at(struct builder *b, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool report_at(struct builder *b, yaml_mark_t m, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return b->report(b->ctx, pos_of_mark(m), msg);
}

/* Appends a node and links it under the innermost open container (or makes it the root). */
static int add_node(struct builder *b, int type, yaml_mark_t m)
{
    struct ytree *t = b->t;
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
    struct ytree *t = b->t;
    size_t len = e->data.scalar.length;
    if (len > UINT32_MAX - 1 || t->arena_len + len + 1 > UINT32_MAX) {
        b->oom = true;
        return -1;
    }
    if (t->arena_len + len + 1 > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 4096;
        while (cap < t->arena_len + len + 1)
            cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a) {
            b->oom = true;
            return -1;
        }
        t->arena = a;
        t->arena_cap = cap;
    }
    int i = add_node(b, YNODE_SCALAR, e->start_mark);
    if (i < 0)
        return -1;
    struct ynode *nd = &t->nodes[i];
    nd->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    nd->u.s.off = (uint32_t)t->arena_len;
    nd->u.s.len = (uint32_t)len;
    memcpy(t->arena + t->arena_len, e->data.scalar.value, len);
    t->arena[t->arena_len + len] = '\0';
    t->arena_len += len + 1;
    return 0;
}

static int open_container(struct builder *b, int type, yaml_mark_t m)
{
    if (b->depth >= YTREE_MAX_DEPTH) {
        report_at(b, m, "the document nests more than %d levels deep", YTREE_MAX_DEPTH);
        return -1;
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
    b->stack[b->depth].node = i;
    b->stack[b->depth].last = -1;
    b->depth++;
    return 0;
}

/* Reports a libyaml error with its own words and position. */
static void report_parser_error(struct builder *b, const yaml_parser_t *p)
{
    char msg[512];
    struct ypos pos = pos_of_mark(p->problem_mark);
    const char *problem = p->problem ? p->problem : "unknown problem";
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        snprintf(msg, sizeof(msg), "out of memory while reading YAML");
        break;
    case YAML_READER_ERROR:
        /* The reader has no marks yet, only a byte offset. */
        pos.is_offset = true;
        pos.offset = p->problem_offset;
        if (p->problem_value >= 0)
            snprintf(msg, sizeof(msg), "not valid UTF-8 text: %s (byte 0x%02X)", problem,
                     (unsigned)p->problem_value);
        else
            snprintf(msg, sizeof(msg), "not valid UTF-8 text: %s", problem);
        break;
    default:
        if (p->context)
            snprintf(msg, sizeof(msg), "syntax error: %s (%s starting at line %zu)", problem,
                     p->context, p->context_mark.line + 1);
        else
            snprintf(msg, sizeof(msg), "syntax error: %s", problem);
        break;
    }
    b->report(b->ctx, pos, msg);
}

int ytree_build(struct ytree *t, const char *text, size_t len, ytree_report_fn report, void *ctx)
{
    memset(t, 0, sizeof(*t));
    t->root = -1;
    struct builder b = {.t = t, .report = report, .ctx = ctx};

    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        struct ypos pos = {0};
        report(ctx, pos, "out of memory while reading YAML");
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
        switch (e.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1) {
                report_at(&b, e.start_mark,
                          "a scene file holds one YAML document, but a second one starts here");
                rc = -1;
                done = true;
            }
            break;
        case YAML_ALIAS_EVENT:
            if (!report_at(&b, e.start_mark,
                           "aliases (*%s) are not supported in scene files; write the value out",
                           (const char *)e.data.alias.anchor) ||
                add_node(&b, YNODE_BAD, e.start_mark) < 0)
                rc = -1;
            break;
        case YAML_SCALAR_EVENT:
            anchor = (const char *)e.data.scalar.anchor;
            if (add_scalar(&b, &e) < 0)
                rc = -1;
            break;
        case YAML_SEQUENCE_START_EVENT:
            anchor = (const char *)e.data.sequence_start.anchor;
            if (open_container(&b, YNODE_SEQ, e.start_mark) < 0)
                rc = -1;
            break;
        case YAML_MAPPING_START_EVENT:
            anchor = (const char *)e.data.mapping_start.anchor;
            if (open_container(&b, YNODE_MAP, e.start_mark) < 0)
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
        if (anchor && rc == 0 &&
            !report_at(&b, e.start_mark,
                       "anchors (&%s) are not supported in scene files; write the value out",
                       anchor))
            rc = -1;
        yaml_event_delete(&e);
        if (rc != 0)
            break;
    }
    if (b.oom) {
        struct ypos pos = {0};
        report(ctx, pos, "out of memory while reading YAML");
    }
    free(b.stack);
    yaml_parser_delete(&parser);
    return rc;
}
