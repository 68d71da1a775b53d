/* textfit: a sentence against the model's context (see scene.h).
 *
 * The limit is what the scene can read: a checkpoint's learned position table (GPT-2's
 * n_positions, BERT's max_position_embeddings) ends there, and every scene ends at
 * SCENE_MAX_TOKENS. RoPE computes past the positions it was trained on, as transformers does
 * (a warning, attn_scene_positions_note), so those are said (trained), not a limit.
 *
 * A cut keeps whole words: the tokenizers attnscope reads cut their pre-tokens at white space,
 * so the words kept make the same tokens in the cut text as in the whole (the first with the
 * space before it where the tokenizer reads it so), and a word cut in half would be tokens the
 * text never had. Only a text whose first word alone is too long (no
 * spaces: Chinese, a long URL) is cut between characters. The cut is found by tokenising
 * candidate texts with the scene's own tokenizer, in a binary search: the count is exact for
 * the text kept, whatever the tokenizer adds ([CLS], <s>).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "engine/scene.h"
#include "engine/tokenize.h"

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The tokens text[from, to) makes with s's tokenizer: *ids (may be NULL) and their count. */
static int count(int *n, int **ids, const struct attn_scene *s, const char *text, size_t from,
                 size_t to, const char *pair, bool special, struct diag *err)
{
    char *part = malloc(to - from + 1);
    if (!part)
        return attn_diag_set(err, "text", "out of memory");
    memcpy(part, text + from, to - from);
    part[to - from] = '\0';
    char **tokens = NULL;
    int *got = NULL, *types = NULL, rc;
    *n = 0;
    if (attn_tokenizer_has_vocab(s->tokenizer) && s->backing && s->backing->tokenize)
        rc = s->backing->tokenize(s->backing, part, pair, special, &tokens, &got, &types, n, err);
    else if (pair)
        rc = attn_diag_set(err, "text",
                           "two sentences need a tokenizer with a template that joins them: "
                           "tokenizer: {kind: hf, file: tokenizer.json}");
    else
        rc = attn_tokenize(&tokens, n, part, s->tokenizer, err);
    free(part);
    if (rc == 0) {
        attn_tokens_free(tokens, *n);
        free(types);
        if (ids)
            *ids = got;
        else
            free(got);
    }
    return rc;
}

int attn_scene_text_fit(struct attn_text_fit *f, const struct attn_scene *s, const char *text,
                        const char *pair, struct diag *err)
{
    memset(f, 0, sizeof(*f));
    int offset = s->pos.offset > 0 ? s->pos.offset : 0;
    f->limit = SCENE_MAX_TOKENS;
    f->offset = offset;
    if (s->model.file && s->pos.kind == POS_LEARNED && s->pos.max_len - offset < f->limit) {
        f->limit = s->pos.max_len - offset > 0 ? s->pos.max_len - offset : 0;
        f->table = s->pos.max_len;
        f->key = s->model.positions_key ? s->model.positions_key : "positions";
    } else if (s->model.file && s->pos.kind == POS_ROPE && s->model.positions > 0) {
        f->trained = s->model.positions;
        f->key = s->model.positions_key ? s->model.positions_key : "max_position_embeddings";
    }
    return count(&f->n, NULL, s, text, 0, strlen(text), pair, true, err);
}

void attn_count_text(char *out, size_t size, int v)
{
    char digits[16];
    int n = snprintf(digits, sizeof(digits), "%d", v < 0 ? 0 : v), o = 0;
    for (int i = 0; i < n && o + 2 < (int)size; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

void attn_text_fit_describe(char *out, size_t size, const struct attn_text_fit *f)
{
    char n[16], limit[16], table[16];
    attn_count_text(n, sizeof(n), f->n);
    attn_count_text(limit, sizeof(limit), f->limit);
    attn_count_text(table, sizeof(table), f->table);
    if (!f->table)
        snprintf(out, size, "%s tokens, but attnscope reads at most %s", n, limit);
    else if (f->offset > 0)
        snprintf(out, size,
                 "%s tokens, but this model reads at most %s (%s %s, less the offset %d)", n, limit,
                 f->key, table, f->offset);
    else
        snprintf(out, size, "%s tokens, but this model reads at most %s (%s)", n, limit, f->key);
}

/* The units a cut keeps or drops, [start[k], end[k]): the words of text, or when fewer than 2,
 * its characters (text without spaces). */
struct units {
    size_t *start, *end;
    int n;
    bool words; /* each unit makes a token at least (characters may merge into one) */
};

static int split_units(struct units *u, const char *text, bool chars)
{
    size_t len = strlen(text);
    u->start = malloc((len + 1) * sizeof(size_t));
    u->end = malloc((len + 1) * sizeof(size_t));
    u->n = 0;
    u->words = !chars;
    if (!u->start || !u->end)
        return -1;
    for (size_t i = 0; i < len;) {
        if (blank(text[i])) {
            i++;
            continue;
        }
        size_t j = i;
        if (chars) {
            uint32_t cp;
            int k = attn_utf8_decode(text + i, &cp);
            j = i + (k > 0 ? (size_t)k : 1);
        } else {
            while (j < len && !blank(text[j]))
                j++;
        }
        u->start[u->n] = i;
        u->end[u->n++] = j;
        i = j;
    }
    return 0;
}

static void units_free(struct units *u)
{
    free(u->start);
    free(u->end);
}

/* The tokens units [a, b] make together (b < a: none), specials as asked. */
static int span_count(int *n, const struct attn_scene *s, const char *text, const struct units *u,
                      int a, int b, bool special, struct diag *err)
{
    if (b < a) {
        *n = 0;
        return 0;
    }
    return count(n, NULL, s, text, u->start[a], u->end[b], NULL, special, err);
}

/* Where the text's own tokens start among the scene's: 1 after a <s> or [CLS], else 0. */
static int specials_before(int *pre, const struct attn_scene *s, const char *text,
                           const struct units *u, struct diag *err)
{
    int *with = NULL, *without = NULL, n_with, n_without;
    *pre = 0;
    if (count(&n_with, &with, s, text, u->start[0], u->end[0], NULL, true, err) ||
        count(&n_without, &without, s, text, u->start[0], u->end[0], NULL, false, err)) {
        free(with);
        return -1;
    }
    for (int k = 0; k + n_without <= n_with; k++)
        if (memcmp(with + k, without, (size_t)n_without * sizeof(int)) == 0) {
            *pre = k;
            break;
        }
    free(with);
    free(without);
    return 0;
}

/* The units [*a, *b] the cut keeps; *b < *a when none fits. */
static int pick(int *a, int *b, const struct attn_scene *s, const char *text, const struct units *u,
                enum attn_text_cut how, int from, int to, struct diag *err)
{
    int n;
    if (how == TEXT_KEEP_FIRST) { /* the most units from the first whose tokens fit in `to` */
        int lo = -1, hi = u->words && to < u->n ? to - 1 : u->n - 1;
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            if (span_count(&n, s, text, u, 0, mid, true, err))
                return -1;
            if (n <= to)
                lo = mid;
            else
                hi = mid - 1;
        }
        *a = 0;
        *b = lo;
        return 0;
    }
    if (how == TEXT_KEEP_LAST) {
        int lo = u->words && u->n > to ? u->n - to : 0, hi = u->n;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (span_count(&n, s, text, u, mid, u->n - 1, true, err))
                return -1;
            if (n <= to)
                hi = mid;
            else
                lo = mid + 1;
        }
        *a = lo;
        *b = u->n - 1;
        return 0;
    }
    /* A window of the scene's positions [from, to): the text's own tokens start after the
       specials the tokenizer puts first. Unit i starts at position pre + tokens(units 0..i-1). */
    int pre;
    if (specials_before(&pre, s, text, u, err))
        return -1;
    int first = from - pre, last = to - pre; /* the text's own tokens [first, last) */
    int lo = 0, hi = u->n;                   /* the first unit starting at first or later */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (span_count(&n, s, text, u, 0, mid - 1, false, err))
            return -1;
        if (n >= first)
            hi = mid;
        else
            lo = mid + 1;
    }
    *a = lo;
    lo = *a - 1, hi = u->n - 1; /* the last unit ending at last or before */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (span_count(&n, s, text, u, 0, mid, false, err))
            return -1;
        if (n <= last)
            lo = mid;
        else
            hi = mid - 1;
    }
    *b = lo;
    return 0;
}

int attn_scene_text_cut(char **out, const struct attn_scene *s, const char *text,
                        enum attn_text_cut how, int from, int to, struct diag *err)
{
    *out = NULL;
    if (how == TEXT_WINDOW && (from < 0 || to <= from))
        return attn_diag_set(err, "text", "a window is START:END with 0 <= START < END");
    if (how != TEXT_WINDOW && to < 1)
        return attn_diag_set(err, "text", "no token fits");
    struct units u = {0};
    int a = 0, b = -1, rc = 0;
    /* words; a text of one word (no spaces) by its characters */
    for (int chars = 0; chars < 2 && rc == 0 && b < a; chars++) {
        units_free(&u);
        if (split_units(&u, text, chars)) {
            rc = attn_diag_set(err, "text", "out of memory");
            break;
        }
        if (u.n == 0) {
            rc = attn_diag_set(err, "text", "the text is blank");
            break;
        }
        rc = pick(&a, &b, s, text, &u, how, from, to, err);
        if (!chars && u.n > 1 && how == TEXT_WINDOW)
            break; /* whole words or nothing: a window between words is the user's to move */
    }
    if (rc == 0 && b < a)
        rc = how == TEXT_WINDOW
                 ? attn_diag_set(err, "text", "no whole word lies in tokens %d to %d", from, to - 1)
                 : attn_diag_set(err, "text", "not even the %s character fits in %d tokens",
                                 how == TEXT_KEEP_FIRST ? "first" : "last", to);
    /* The first word kept keeps the space before it when that is how the tokenizer saw it:
       GPT-2's byte-level BPE makes " two" one token and "two" others; a SentencePiece (Metaspace)
       adds its own and a BERT ignores it, so there fewer tokens come without. */
    size_t from_byte = rc == 0 ? u.start[a] : 0;
    if (rc == 0 && from_byte > 0 && blank(text[from_byte - 1])) {
        int with, without;
        if ((rc = count(&with, NULL, s, text, from_byte - 1, u.end[b], NULL, true, err)) == 0 &&
            (rc = count(&without, NULL, s, text, from_byte, u.end[b], NULL, true, err)) == 0 &&
            with < without)
            from_byte--;
    }
    if (rc == 0) {
        size_t len = u.end[b] - from_byte;
        if (!(*out = malloc(len + 1)))
            rc = attn_diag_set(err, "text", "out of memory");
        else {
            memcpy(*out, text + from_byte, len);
            (*out)[len] = '\0';
        }
    }
    units_free(&u);
    return rc;
}
