/* ydiag: the wording and collection of YAML problems (see ydiag.h). */
#include "yaml/ydiag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"
#include "yaml/suggest.h"

void attn_ydiag_init(struct ydiag *d, const char *file, struct ytree *tree, struct diag_list *errs,
                     int max)
{
    memset(d, 0, sizeof(*d));
    d->file = file ? file : "";
    d->tree = tree;
    d->errs = errs;
    d->max = max;
}

/* Adds the problem unless the cap is reached; only a problem dropped stops the reading, so
 * exactly max problems end without a closing note. */
static bool vadd(struct ydiag *d, int line, int col, const char *path, const char *fmt, va_list ap)
{
    if (d->n >= d->max) {
        d->stopped = d->truncated = true;
        return false;
    }
    struct diag g;
    attn_diag_clear(&g);
    snprintf(g.file, sizeof(g.file), "%s", d->file);
    g.line = line;
    g.col = col;
    attn_diag_vset(&g, path, fmt, ap);
    attn_diag_list_push(d->errs, &g);
    d->n++;
    return true;
}

bool attn_ydiag_add(struct ydiag *d, struct ypos pos, const char *path, const char *fmt, ...)
{
    int line, col;
    attn_ytree_locate(d->tree, pos, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    bool more = vadd(d, line, col, path, fmt, ap);
    va_end(ap);
    return more;
}

bool attn_ydiag_add_line(struct ydiag *d, int line, int col, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool more = vadd(d, line, col, path, fmt, ap);
    va_end(ap);
    return more;
}

void attn_ydiag_finish(struct ydiag *d)
{
    if (d->truncated)
        attn_diag_list_add(d->errs, d->file, 0, 0, "",
                           "too many problems; stopped after the first %d", d->max);
}

bool attn_ydiag_stream(struct ydiag *d, const struct yproblem *p, const char *what)
{
    const char *problem = p->problem ? p->problem : "unknown problem";
    switch (p->kind) {
    case YPROB_MEMORY: /* nothing after it could be trusted: the reading stops here */
        attn_ydiag_add_line(d, 0, 0, "", "out of memory while reading the %s", what);
        d->stopped = true;
        return false;
    case YPROB_ENCODING:
        if (p->byte >= 0)
            return attn_ydiag_add(d, p->pos, "", "not valid UTF-8 text: %s (byte 0x%02X)", problem,
                                  (unsigned)p->byte);
        return attn_ydiag_add(d, p->pos, "", "not valid UTF-8 text: %s", problem);
    case YPROB_SYNTAX:
        if (p->context)
            return attn_ydiag_add(d, p->pos, "", "syntax error: %s (%s starting at line %zu)",
                                  problem, p->context, p->context_line + 1);
        return attn_ydiag_add(d, p->pos, "", "syntax error: %s", problem);
    case YPROB_TOO_DEEP:
        return attn_ydiag_add(d, p->pos, "", "the document nests more than %d levels deep",
                              p->limit);
    case YPROB_TOO_MANY_NODES:
        return attn_ydiag_add(d, p->pos, "",
                              "the file holds more than %d values; stopped reading here", p->limit);
    case YPROB_TOO_LONG: {
        char key[YDIAG_SHOW_MAX];
        if (p->key && p->row > 0)
            return attn_ydiag_add(d, p->pos, "", "%s row %d has more than %d values",
                                  attn_ydiag_show_str(p->key, key, sizeof(key)), p->row, p->limit);
        if (p->key)
            return attn_ydiag_add(d, p->pos, "", "%s has more than %d entries",
                                  attn_ydiag_show_str(p->key, key, sizeof(key)), p->limit);
        return attn_ydiag_add(d, p->pos, "", "a list with more than %d entries", p->limit);
    }
    case YPROB_SECOND_DOCUMENT:
        return attn_ydiag_add(d, p->pos, "",
                              "a %s holds one YAML document, but a second one starts here", what);
    case YPROB_ANCHOR:
        return attn_ydiag_add(d, p->pos, "",
                              "anchors (&%s) are not supported in %ss; write the value out",
                              p->name, what);
    case YPROB_ALIAS:
        return attn_ydiag_add(d, p->pos, "",
                              "aliases (*%s) are not supported in %ss; write the value out",
                              p->name, what);
    }
    return true;
}

/* 'text' shortened and escaped (common/utf8.h), into buf. */
static const char *show_bytes(const unsigned char *s, size_t len, char *buf, size_t size)
{
    if (size < 16) {
        snprintf(buf, size, "a value");
        return buf;
    }
    size_t lim = len;
    bool cut = false;
    if (lim > 40) {
        lim = 40;
        while (lim < len && (s[lim] & 0xC0) == 0x80)
            lim++;
        cut = true;
    }
    buf[0] = '\'';
    size_t o = 1 + attn_utf8_escape(buf + 1, size - 6, (const char *)s, lim, 0);
    memcpy(buf + o, cut ? "...'" : "'", cut ? 5 : 2);
    return buf;
}

const char *attn_ydiag_show(const struct ytree *t, int node, char *buf, size_t size)
{
    const struct ynode *nd = ytree_node(t, node);
    if (nd->type != YNODE_SCALAR) {
        snprintf(buf, size, "%s", attn_ytree_type_name(nd->type));
        return buf;
    }
    if (nd->plain && nd->u.s.len == 0) {
        snprintf(buf, size, "nothing");
        return buf;
    }
    return show_bytes((const unsigned char *)ytree_str(t, node), nd->u.s.len, buf, size);
}

const char *attn_ydiag_show_str(const char *s, char *buf, size_t size)
{
    return show_bytes((const unsigned char *)s, strlen(s), buf, size);
}

const char *attn_ydiag_unknown(char *out, size_t size, const char *what, const char *name,
                               const char *in, const char *const *choices, int n, const char *hint)
{
    char shown[YDIAG_SHOW_MAX], where[DIAG_PATH_MAX + 8] = "";
    attn_ydiag_show_str(name, shown, sizeof(shown));
    if (in && in[0])
        snprintf(where, sizeof(where), " in '%s'", in);
    int best = attn_suggest_nearest(name, choices, n, NULL);
    if (best >= 0) {
        snprintf(out, size, "unknown %s %s%s (did you mean '%s'?)", what, shown, where,
                 choices[best]);
        return out;
    }
    if (n > 16 && hint) {
        snprintf(out, size, "unknown %s %s%s (%s)", what, shown, where, hint);
        return out;
    }
    char list[512];
    size_t o = 0;
    list[0] = '\0';
    for (int i = 0; i < n && o < sizeof(list); i++)
        o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", choices[i]);
    snprintf(out, size, "unknown %s %s%s (valid %ss: %s)", what, shown, where, what, list);
    return out;
}

const char *attn_ydiag_duplicate(char *out, size_t size, const char *name, int first_line)
{
    char shown[YDIAG_SHOW_MAX];
    snprintf(out, size, "duplicate key %s (first given at line %d)",
             attn_ydiag_show_str(name, shown, sizeof(shown)), first_line);
    return out;
}
