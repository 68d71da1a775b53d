/* title: a scene's title kept true after edits (see title.h). Plain string work on the title's
 * words: a number the title names is rewritten only where it is the written scene's value. */
#include "explore/title.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cnum.h"
#include "common/utf8.h"

#define TITLE_MAX      1024
#define SENTENCE_CHARS 40 /* a new sentence in a title: longer ones end in "…" */

static const char *const number_words[] = {"zero", "one",    "two",   "three", "four",
                                           "five", "six",    "seven", "eight", "nine",
                                           "ten",  "eleven", "twelve"};
#define NUMBER_WORDS ((int)(sizeof(number_words) / sizeof(number_words[0])))

/* The sentence of s: its text, or its tokens joined by blanks. */
static void sentence_of(char *out, size_t size, const struct attn_scene *s)
{
    if (s->text) {
        snprintf(out, size, "%s", s->text);
        return;
    }
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < s->n_tokens && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%s", i ? " " : "", s->tokens[i]);
}

/* Everything about s but the values a title's words can be rewritten for: when any of it
 * differs, the title's other words cannot be trusted. */
static bool same_structure(const struct attn_scene *a, const struct attn_scene *b)
{
    const struct attn_config *x = &a->attn, *y = &b->attn;
    return attn_scene_eff_projection(a) == attn_scene_eff_projection(b) && x->layout == y->layout &&
           x->causal == y->causal && x->mask_mode == y->mask_mode && x->normalize == y->normalize &&
           attn_scene_eff_scale(a) == attn_scene_eff_scale(b) &&
           (attn_scene_eff_scale(a) != SCALE_DIVISOR || x->scale_divisor == y->scale_divisor) &&
           x->qkv == y->qkv && x->kv_heads == y->kv_heads && x->kv_latent == y->kv_latent &&
           attn_scene_eff_out_proj(a) == attn_scene_eff_out_proj(b) && x->qkv_bias == y->qkv_bias &&
           a->tokenizer == b->tokenizer && attn_scene_d_in(a) == attn_scene_d_in(b) &&
           a->embed.kind == b->embed.kind && a->pos.kind == b->pos.kind &&
           a->pos.pairs == b->pos.pairs && a->pos.base == b->pos.base &&
           a->pos.rotary_dims == b->pos.rotary_dims && a->block.on == b->block.on &&
           a->block.order == b->block.order && a->block.norm == b->block.norm &&
           a->block.activation == b->block.activation && a->layers == b->layers;
}

/* Replaces bytes [at, at + len) of t with repl. Returns false when it would not fit. */
static bool splice(char *t, size_t at, size_t len, const char *repl)
{
    size_t tl = strlen(t), rl = strlen(repl);
    if (tl - len + rl + 1 > TITLE_MAX)
        return false;
    memmove(t + at + rl, t + at + len, tl - at - len + 1);
    memcpy(t + at, repl, rl);
    return true;
}

static bool word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Every "<key><number>" in t whose number is `old` (case-insensitive key, the number a whole
 * word) becomes "<key><new>", unless the key is preceded by `unless` ("dropout " for "seed ").
 * Returns whether the title named the value. */
static bool rewrite_after(char *t, const char *key, const char *unless, unsigned long long old,
                          const char *new)
{
    bool named = false;
    size_t kl = strlen(key), ul = unless ? strlen(unless) : 0;
    for (size_t i = 0; t[i]; i++) {
        if (strncasecmp(t + i, key, kl) != 0 || (i > 0 && word_char(t[i - 1])))
            continue;
        if (unless && i >= ul && strncasecmp(t + i - ul, unless, ul) == 0)
            continue;
        size_t j = i + kl, k = j;
        while (isdigit((unsigned char)t[k]))
            k++;
        if (k == j || word_char(t[k]) || (t[k] == '.' && isdigit((unsigned char)t[k + 1])))
            continue;
        if (strtoull(t + j, NULL, 10) != old)
            continue;
        named = true;
        if (splice(t, j, k - j, new))
            i = j + strlen(new) - 1;
    }
    return named;
}

/* "dropout 0.5" (or "Dropout 0.5") where 0.5 is the old p: the new p as the header writes it. */
static bool rewrite_dropout(char *t, double old, double now)
{
    bool named = false;
    char p[32];
    attn_scene_format_p(p, sizeof(p), now);
    for (size_t i = 0; t[i]; i++) {
        if (strncasecmp(t + i, "dropout ", 8) != 0 || (i > 0 && word_char(t[i - 1])))
            continue;
        size_t j = i + 8, k = j;
        while (isdigit((unsigned char)t[k]) || t[k] == '.')
            k++;
        if (k == j || word_char(t[k]))
            continue;
        char num[32];
        snprintf(num, sizeof(num), "%.*s", (int)(k - j), t + j);
        double v;
        if (attn_cnum_parse_double(num, false, &v) != CNUM_OK || v != old)
            continue;
        named = true;
        if (splice(t, j, k - j, p))
            i = j + strlen(p) - 1;
    }
    return named;
}

/* "2 causal heads", "one head", "4 query heads" whose count is `old`: the count made `now`,
 * in the same form (a word up to twelve), and "head" or "heads" to agree. A count of something
 * else ("2 K/V heads") is not a word run and stays. Returns whether the title named it. */
static bool rewrite_heads(char *t, int old, int now)
{
    bool named = false;
    for (size_t i = 0; t[i]; i++) {
        if (i > 0 && word_char(t[i - 1]))
            continue;
        size_t k = i;
        int count = -1;
        bool as_word = false;
        if (isdigit((unsigned char)t[i])) {
            while (isdigit((unsigned char)t[k]))
                k++;
            count = atoi(t + i);
        } else {
            for (int w = 0; w < NUMBER_WORDS && count < 0; w++) {
                size_t wl = strlen(number_words[w]);
                if (strncasecmp(t + i, number_words[w], wl) == 0 && !word_char(t[i + wl])) {
                    count = w;
                    k = i + wl;
                    as_word = true;
                }
            }
        }
        if (count != old || t[k] != ' ')
            continue;
        /* an optional word between ("causal", "query"), then head or heads */
        size_t h = k + 1;
        size_t w = h;
        while (isalpha((unsigned char)t[w]))
            w++;
        if (t[w] == ' ' && w > h && strncasecmp(t + h, "head", 4) != 0)
            h = w + 1;
        size_t end = h;
        if (strncasecmp(t + h, "heads", 5) == 0 && !word_char(t[h + 5]))
            end = h + 5;
        else if (strncasecmp(t + h, "head", 4) == 0 && !word_char(t[h + 4]))
            end = h + 4;
        else
            continue;
        named = true;
        char noun[8], num[24];
        snprintf(noun, sizeof(noun), now == 1 ? "head" : "heads");
        if (!splice(t, h, end - h, noun))
            continue;
        if (as_word && now < NUMBER_WORDS)
            snprintf(num, sizeof(num), "%s", number_words[now]);
        else
            snprintf(num, sizeof(num), "%d", now);
        if (as_word && isupper((unsigned char)t[i]))
            num[0] = (char)toupper((unsigned char)num[0]);
        if (splice(t, i, k - i, num))
            i += strlen(num);
    }
    return named;
}

/* The sentence in a title: the written one (quoted or not) made the scene's, cut to
 * SENTENCE_CHARS. Returns whether the title quotes it. */
static bool rewrite_sentence(char *t, const char *old, const char *now)
{
    char *at = old[0] ? strstr(t, old) : NULL;
    if (!at)
        return false;
    char cut[4 * SENTENCE_CHARS + 8];
    if (attn_utf8_length(now) > SENTENCE_CHARS) {
        size_t o = 0;
        const char *p = now;
        for (int c = 0; c < SENTENCE_CHARS - 1 && *p; c++) {
            uint32_t cp;
            int n = attn_utf8_decode(p, &cp);
            n = n > 0 ? n : 1;
            memcpy(cut + o, p, (size_t)n);
            o += (size_t)n;
            p += n;
        }
        size_t blank = o; /* at a word's end, when one ends in the second half */
        while (*p && *p != ' ' && blank > 0 && cut[blank - 1] != ' ')
            blank--;
        if (*p && *p != ' ' && blank > o / 2)
            o = blank;
        while (o > 0 && cut[o - 1] == ' ')
            o--;
        snprintf(cut + o, sizeof(cut) - o, "\u2026");
    } else {
        snprintf(cut, sizeof(cut), "%.*s", (int)sizeof(cut) - 1, now); /* fits: short enough */
    }
    splice(t, (size_t)(at - t), strlen(old), cut);
    return true;
}

/* True when a title may describe its sentence: it quotes something, or speaks of words. */
static bool speaks_of_sentence(const char *t)
{
    static const char *const words[] = {"\"", "\u201c", "word", "sentence", "token", "text"};
    char low[TITLE_MAX];
    size_t n = 0;
    for (; t[n] && n + 1 < sizeof(low); n++)
        low[n] = (char)tolower((unsigned char)t[n]);
    low[n] = '\0';
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strstr(low, words[i]))
            return true;
    return false;
}

enum title_kind title_for(char *out, size_t size, char *from, size_t from_size,
                          const struct attn_scene *s, const struct attn_scene *written)
{
    from[0] = '\0';
    if (!s->title) {
        attn_scene_describe(out, size, s);
        return TITLE_AS_GIVEN;
    }
    char t[TITLE_MAX];
    snprintf(t, sizeof(t), "%s", s->title);
    bool replace = !written || !same_structure(s, written);
    bool changed = false;
    if (!replace) {
        char was[TITLE_MAX * 4], now[TITLE_MAX * 4];
        sentence_of(was, sizeof(was), written);
        sentence_of(now, sizeof(now), s);
        if (strcmp(was, now) != 0) {
            /* a sentence it does not quote: a title that quotes something else or speaks of
               words ("sixteen words, then the same sixteen again") may be about it */
            replace = !rewrite_sentence(t, was, now) && speaks_of_sentence(t);
            changed = true;
        }
        if (written->pos.offset != s->pos.offset) {
            char n[24];
            snprintf(n, sizeof(n), "%d", s->pos.offset);
            if (written->pos.offset >= 0) /* a shift the title does not name leaves it true */
                rewrite_after(t, "shifted by ", NULL, (unsigned long long)written->pos.offset, n);
            changed = true;
        }
        char n[32];
        if (written->seed != s->seed) {
            snprintf(n, sizeof(n), "%llu", (unsigned long long)s->seed);
            rewrite_after(t, "seed ", "dropout ", written->seed, n);
            changed = true;
        }
        if (written->attn.dropout_seed.set && s->attn.dropout_seed.set &&
            written->attn.dropout_seed.value != s->attn.dropout_seed.value) {
            snprintf(n, sizeof(n), "%llu", (unsigned long long)s->attn.dropout_seed.value);
            rewrite_after(t, "dropout seed ", NULL, written->attn.dropout_seed.value, n);
            changed = true;
        }
        if (attn_scene_eff_d_out(written) != attn_scene_eff_d_out(s)) {
            snprintf(n, sizeof(n), "%d", attn_scene_eff_d_out(s));
            rewrite_after(t, "d_out ", NULL, (unsigned long long)attn_scene_eff_d_out(written), n);
            changed = true;
        }
        if (written->attn.heads != s->attn.heads) {
            rewrite_heads(t, written->attn.heads, s->attn.heads);
            changed = true;
        }
        if (written->attn.dropout != s->attn.dropout) {
            rewrite_dropout(t, written->attn.dropout, s->attn.dropout);
            changed = true;
        }
    }
    if (replace) {
        attn_scene_describe(out, size, s);
        snprintf(from, from_size, "edited from \u201c%s\u201d", s->title);
        return TITLE_REPLACED;
    }
    snprintf(out, size, "%s", t);
    return changed && strcmp(t, s->title) != 0 ? TITLE_REWRITTEN : TITLE_AS_GIVEN;
}
