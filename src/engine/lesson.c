/* lesson: a scene's steps, shared between the scene's copies, and the marks of captions (see
 * lesson.h). */
#include "engine/lesson.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cnum.h"

struct attn_lesson *attn_lesson_new(int n_steps)
{
    struct attn_lesson *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->steps = calloc(n_steps > 0 ? (size_t)n_steps : 1, sizeof(*l->steps));
    if (!l->steps) {
        free(l);
        return NULL;
    }
    l->refs = 1;
    l->n_steps = n_steps;
    for (int i = 0; i < n_steps; i++) {
        struct attn_lesson_step *st = &l->steps[i];
        st->stage = STAGE_WEIGHTS;
        st->row = st->col = -1;
    }
    return l;
}

struct attn_lesson *attn_lesson_ref(struct attn_lesson *l)
{
    if (l)
        l->refs++;
    return l;
}

void attn_lesson_unref(struct attn_lesson *l)
{
    if (!l || --l->refs > 0)
        return;
    for (int i = 0; i < l->n_steps; i++) {
        free(l->steps[i].edit.text);
        free(l->steps[i].caption);
    }
    free(l->steps);
    free(l);
}

const char *attn_lesson_panel_name(enum attn_lesson_panel p)
{
    return p == LESSON_PANEL_PREDICTIONS ? "predictions"
           : p == LESSON_PANEL_TOKENS    ? "tokens"
                                         : "inspector";
}

/* ---- caption marks ------------------------------------------------------------------------ */

static const char *skip_blanks(const char *p)
{
    while (*p == ' ')
        p++;
    return p;
}

/* A whole number from 0 up, or -1. */
static int read_index(const char **p)
{
    if (!isdigit((unsigned char)**p))
        return -1;
    long v = 0;
    while (isdigit((unsigned char)**p) && v < 1000000)
        v = v * 10 + (*(*p)++ - '0');
    return isdigit((unsigned char)**p) ? -1 : (int)v;
}

/* The mark starting at p ('{'); fills m and returns the byte after its '}', or NULL. */
static const char *read_mark(const char *p, struct attn_caption_mark *m, char *why, size_t size)
{
    const char *q = skip_blanks(p + 1);
    const char *num = q;
    if (*q == '-')
        q++;
    if (strncmp(q, "inf", 3) == 0) {
        q += 3;
        m->value = -INFINITY;
        m->decimals = 0;
        if (*num != '-') {
            snprintf(why, size, "only -inf can be marked, not inf");
            return NULL;
        }
    } else {
        const char *digits = q;
        while (isdigit((unsigned char)*q))
            q++;
        if (q == digits) {
            snprintf(why, size, "a mark holds a number first, like {0.2379}");
            return NULL;
        }
        m->decimals = 0;
        if (*q == '.') {
            const char *frac = ++q;
            while (isdigit((unsigned char)*q))
                q++;
            m->decimals = (int)(q - frac);
            if (m->decimals == 0) {
                snprintf(why, size, "a number ends in digits, not in a point");
                return NULL;
            }
        }
        char text[32];
        if ((size_t)(q - num) >= sizeof(text)) {
            snprintf(why, size, "the number is too long");
            return NULL;
        }
        snprintf(text, sizeof(text), "%.*s", (int)(q - num), num);
        if (attn_cnum_parse_double(text, false, &m->value) != CNUM_OK) {
            snprintf(why, size, "'%s' is not a number", text);
            return NULL;
        }
    }
    snprintf(m->written, sizeof(m->written), "%.*s", (int)(q - num), num);
    m->stage = -1;
    m->row = m->col = -1;
    m->next = -1;
    q = skip_blanks(q);
    if (*q == '@') {
        q = skip_blanks(q + 1);
        char word[32] = "";
        if (isalpha((unsigned char)*q)) {
            const char *name = q;
            while (isalnum((unsigned char)*q) || *q == '_')
                q++;
            snprintf(word, sizeof(word), "%.*s", (int)(q - name), name);
            q = skip_blanks(q);
        }
        if (strcmp(word, "next") == 0 || strcmp(word, "top") == 0) {
            m->top = word[0] == 't';
            m->next = read_index(&q);
            if (m->next < 0) {
                snprintf(why, size, "after @ %s comes a position (0-based), like {0.9187 @ %s 20}",
                         word, word);
                return NULL;
            }
            q = skip_blanks(q);
        } else {
            if (word[0] && (m->stage = attn_stage_parse(word)) < 0) {
                snprintf(why, size, "'%.20s' is not a stage (inputs, queries, scores, ...)", word);
                return NULL;
            }
            m->row = read_index(&q);
            q = skip_blanks(q);
            m->col = -1;
            if (m->row >= 0 && *q == ',') {
                q = skip_blanks(q + 1);
                m->col = read_index(&q);
            }
            if (m->col < 0) {
                snprintf(why, size,
                         "after @ comes the cell: row,column (0-based), like {0.2379 @ 1,1}");
                return NULL;
            }
            q = skip_blanks(q);
        }
    }
    if (*q != '}') {
        snprintf(why, size,
                 "a mark is {number}, {number @ row,column}, {number @ stage row,column}, "
                 "{number @ next position} or {number @ top position}");
        return NULL;
    }
    return q + 1;
}

int attn_caption_marks(const char *caption, struct attn_caption_mark *marks, int max,
                       struct diag *err)
{
    int n = 0;
    for (const char *p = caption; *p; p++) {
        if (*p == '}') {
            attn_diag_set(err, "", "caption: a '}' without its '{' (marks are {number})");
            return -1;
        }
        if (*p != '{')
            continue;
        struct attn_caption_mark m;
        memset(&m, 0, sizeof(m));
        char why[160];
        const char *end = read_mark(p, &m, why, sizeof(why));
        if (!end) {
            const char *close = strchr(p, '}');
            int len = close ? (int)(close - p + 1) : (int)strcspn(p, "\n");
            attn_diag_set(err, "", "caption: the mark '%.*s' is not one: %s", len > 40 ? 40 : len,
                          p, why);
            return -1;
        }
        m.start = (size_t)(p - caption);
        m.end = (size_t)(end - caption);
        if (marks && n < max)
            marks[n] = m;
        n++;
        p = end - 1;
    }
    return n;
}

void attn_caption_plain(char *out, size_t size, const char *caption)
{
    size_t o = 0;
    if (size == 0)
        return;
    for (const char *p = caption; *p && o + 1 < size;) {
        struct attn_caption_mark m;
        char why[160];
        const char *end = *p == '{' ? read_mark(p, &m, why, sizeof(why)) : NULL;
        if (end) {
            const char *shown = isinf(m.value) ? "\u2212\u221e" : m.written;
            size_t len = strlen(shown);
            if (o + len >= size)
                break;
            memcpy(out + o, shown, len);
            o += len;
            p = end;
        } else {
            out[o++] = *p++;
        }
    }
    while (o > 0 && (out[o - 1] == '\n' || out[o - 1] == ' '))
        o--;
    out[o] = '\0';
}

int attn_caption_chars(const char *caption)
{
    char plain[4 * LESSON_CAPTION_MAX_CHARS + 1024];
    attn_caption_plain(plain, sizeof(plain), caption);
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)plain; *p; p++)
        n += (*p & 0xC0) != 0x80;
    /* a caption longer than the buffer counts as at least its size */
    return strlen(caption) >= sizeof(plain) - 1 ? (int)strlen(caption) : n;
}

int attn_caption_lines(const char *caption)
{
    char plain[4 * LESSON_CAPTION_MAX_CHARS + 1024];
    attn_caption_plain(plain, sizeof(plain), caption);
    int n = plain[0] ? 1 : 0;
    for (const char *p = plain; *p; p++)
        n += *p == '\n';
    return n;
}

/* The piece of the caption at p that is looked for in the file: up to a blank, a line break or
 * (after a mark's '{') its '}', at most 40 bytes. */
static size_t needle_len(const char *p)
{
    size_t n = 0;
    while (p[n] && p[n] != ' ' && p[n] != '\n' && p[n] != '\t' && n < 40) {
        n++;
        if (p[n - 1] == '}')
            break;
    }
    return n ? n : 1;
}

/* How often needle (n bytes) starts in hay[0, end). */
static int occurrences(const char *hay, size_t end, const char *needle, size_t n)
{
    int count = 0;
    for (size_t i = 0; i + n <= end; i++)
        count += memcmp(hay + i, needle, n) == 0;
    return count;
}

void attn_caption_locate(int *line, int *col, const char *source, size_t len,
                         const struct attn_lesson_step *st, size_t at)
{
    *line = st->caption_line > 0 ? st->caption_line : st->line;
    *col = st->caption_line > 0 ? st->caption_col : 1;
    if (!source || !st->caption || st->caption_line <= 0 || at >= strlen(st->caption))
        return;
    /* The caption's start in the file. */
    size_t off = 0;
    for (int l = 1; l < st->caption_line && off < len; off++)
        l += source[off] == '\n';
    off += (size_t)(st->caption_col - 1);
    if (off >= len)
        return;
    const char *needle = st->caption + at;
    size_t n = needle_len(needle);
    int nth = occurrences(st->caption, at, needle, n);
    for (size_t i = off; i + n <= len; i++) {
        if (memcmp(source + i, needle, n) != 0 || nth-- > 0)
            continue;
        int l = 1;
        size_t line_start = 0;
        for (size_t k = 0; k < i; k++)
            if (source[k] == '\n')
                l++, line_start = k + 1;
        *line = l;
        *col = (int)(i - line_start) + 1;
        return;
    }
}
