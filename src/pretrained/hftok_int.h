/* hftok_int: the parts of a loaded tokenizer.json, shared by hftok_load.c (reads them),
 * hftok.c (runs them) and hftok_regex.c (Oniguruma patterns as PCRE2). Not installed. */
#ifndef ATTNSCOPE_HFTOK_INT_H
#define ATTNSCOPE_HFTOK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/diag.h"
#include "pretrained/bpemerge.h"
#include "pretrained/pieces.h"

/* A "pattern" of Split and Replace: {"String": s} or {"Regex": r}, both run as PCRE2 (a String
 * is matched literally, as the library escapes it). */
struct hf_pattern {
    pcre2_code *re;
};

enum hf_behavior { HF_REMOVED, HF_ISOLATED, HF_MERGED_PREV, HF_MERGED_NEXT, HF_CONTIGUOUS };

enum hf_norm_kind {
    HN_NFC, /* the four forms in uni_form's order */
    HN_NFD,
    HN_NFKC,
    HN_NFKD,
    HN_LOWERCASE,
    HN_STRIP_ACCENTS,
    HN_BERT,
    HN_PREPEND,
    HN_REPLACE,
    HN_STRIP,
    HN_PRECOMPILED,
    HN_SEQUENCE,
};

struct hf_norm {
    enum hf_norm_kind kind;
    bool clean_text, chinese, lowercase; /* BertNormalizer */
    int strip_accents;                   /* BertNormalizer: -1 null (follows lowercase), 0, 1 */
    char *str;                           /* Prepend's prepend, Replace's content */
    size_t str_len;
    struct hf_pattern pat;  /* Replace */
    bool left, right;       /* Strip */
    struct hf_charsmap map; /* Precompiled */
    struct hf_norm *items;  /* Sequence */
    int n;
};

enum hf_pre_kind {
    HP_BYTE_LEVEL,
    HP_SPLIT,
    HP_METASPACE,
    HP_BERT,
    HP_WHITESPACE,
    HP_WHITESPACE_SPLIT,
    HP_DIGITS,
    HP_PUNCTUATION,
    HP_SEQUENCE,
};

enum hf_prepend { HF_PREPEND_ALWAYS, HF_PREPEND_FIRST, HF_PREPEND_NEVER };

struct hf_pre {
    enum hf_pre_kind kind;
    bool add_prefix_space, use_regex; /* ByteLevel */
    struct hf_pattern pat;            /* Split (ByteLevel's own regex lives in struct hftok) */
    enum hf_behavior behavior;        /* Split, Punctuation */
    bool invert;                      /* Split */
    uint32_t replacement;             /* Metaspace */
    enum hf_prepend prepend;          /* Metaspace */
    bool split;                       /* Metaspace */
    bool individual_digits;           /* Digits */
    struct hf_pre *items;             /* Sequence */
    int n;
};

/* HM_SPM: no tokenizer.json but Marian's files: two SentencePiece models (spm.h), the source's
 * and the target's, whose pieces vocab.json turns into ids (hftok_load.c, attn_hftok_load_marian)
 */
enum hf_model_kind { HM_BPE, HM_WORDPIECE, HM_UNIGRAM, HM_SPM };

struct spm;

struct hf_model {
    enum hf_model_kind kind;
    /* BPE */
    struct bpe_merges merges; /* (id, id) -> rank, id */
    char *prefix, *suffix;    /* continuing_subword_prefix, end_of_word_suffix; NULL: none */
    size_t prefix_len, suffix_len;
    char *unk; /* unk_token, or NULL */
    size_t unk_len;
    int unk_id; /* -1 when unk is NULL or not in the vocabulary */
    bool fuse_unk, byte_fallback, ignore_merges;
    int byte_ids[256]; /* <0xXX> tokens, -1 where missing */
    /* WordPiece (prefix and unk above) */
    long max_chars;
    /* Unigram (unk_id and byte_fallback above): each piece's score (its log probability), by
     * id, and the lowest, which less 10 scores a character no piece covers */
    double *scores;
    double min_score;
    /* The vocabulary's token lengths in bytes, each once, longest first, with B^(len - the
     * prefix's length) (hf_hash below): the only lengths a match can have. */
    struct hf_len {
        size_t len;
        uint64_t pow;
    } * lens;
    int n_lens;
    /* SPM: the source's and the target's models (unk_id above: vocab.json's unk_token) */
    struct spm *spm[2];
};

enum hf_post_kind { HQ_TEMPLATE, HQ_BERT, HQ_ROBERTA, HQ_BYTE_LEVEL, HQ_SEQUENCE };

struct hf_tpiece {
    bool special; /* a special token of the map below, else a sequence */
    int seq;      /* 0 = A, 1 = B */
    int special_index;
    int type_id;
};

struct hf_special {
    char *name;
    int *ids;
    int n;
};

struct hf_post {
    enum hf_post_kind kind;
    struct hf_tpiece *single, *pair; /* TemplateProcessing */
    int n_single, n_pair;
    struct hf_special *specials;
    int n_specials;
    int cls_id, sep_id;    /* BertProcessing, RobertaProcessing */
    struct hf_post *items; /* Sequence */
    int n;
};

enum hf_dec_kind {
    HD_BYTE_LEVEL,
    HD_METASPACE,
    HD_WORDPIECE,
    HD_BYTE_FALLBACK,
    HD_FUSE,
    HD_STRIP,
    HD_REPLACE,
};

/* The decoder as a flat list of steps (a Sequence's members in order). */
struct hf_dec {
    enum hf_dec_kind kind;
    uint32_t replacement;  /* Metaspace; Strip's content */
    bool prepends;         /* Metaspace: its prepend_scheme is not never */
    long strip_start;      /* Strip: how many of content it strips from the start */
    struct hf_pattern pat; /* Replace */
    char *content;         /* Replace */
    size_t content_len;
};

struct hf_added {
    char *content, *norm; /* norm: the content through the normalizer (normalized tokens) */
    size_t len, norm_len;
    int id;
    bool special, single_word, lstrip, rstrip, normalized;
};

struct hftok {
    struct hf_vocab vocab; /* the model's */
    struct hf_model model;
    bool has_norm, has_pre, has_post;
    struct hf_norm norm;
    struct hf_pre pre;
    struct hf_post post;
    struct hf_dec *dec;
    int n_dec;
    struct hf_added *added;
    int n_added;
    int size;                  /* one more than the largest id */
    pcre2_code *byte_level_re; /* GPT-2's pattern, for ByteLevel with use_regex */
};

/* ---- hftok.c and hftok_load.c ---- */

/* The normaliser, for added tokens' normalized forms. */
int attn_hf_normalize_text(char **out, size_t *out_len, const struct hftok *t, const char *s,
                           size_t len, struct diag *err);

/* ---- hftok_regex.c ---- */

/* Compiles an Oniguruma pattern (the tokenizers library's regex engine) as PCRE2: what the two
 * spell differently is rewritten (\s, \h, \uHHHH, (?m), ...), what has no PCRE2 equivalent is
 * refused by name. literal: match the bytes as they are. Returns NULL with err ("..." without a
 * location: the caller adds the JSON path). */
pcre2_code *attn_hf_regex_compile(const char *pattern, size_t len, bool literal, struct diag *err);
/* The matches of re in s[0..len) as the library's onig crate finds them (an empty match right
 * after the previous match is skipped). Calls fn for each; stops with -1 when fn fails or when
 * PCRE2 does (its error in err). */
int attn_hf_regex_each(const pcre2_code *re, const char *s, size_t len,
                       int (*fn)(void *ctx, size_t start, size_t end), void *ctx, struct diag *err);

#endif
