/* csv: one matrix as an RFC 4180 table (CRLF line ends, quoted fields where needed).
 *
 * Numbers are written in the shortest %.Ng (N = 6..9) that reads back to the same float32,
 * so a reader gets the exact values and a person reads 0.5, not 0.500000000 (cnum_float.c
 * makes that text without printf). A matrix is formatted into a buffer and written in large
 * chunks: an export of n x n stages is hundreds of MB of it.
 */
#include "export/export.h"

#include "common/cnum.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int csv_format_float(char *out, size_t size, float x)
{
    return attn_cnum_format_float(out, size, x);
}

/* True when a field must be quoted: it holds a comma, a quote, a line break or any other
 * control character (RFC 4180 allows them only inside quotes), or it starts with = + - or @,
 * which a spreadsheet reads as a formula. Quoting keeps the text exactly as it is: the file is
 * for programs (pandas, numpy, csv), which get the token byte for byte; a spreadsheet should
 * import it as text (README: Export format). */
static bool csv_needs_quotes(const char *s)
{
    if (strchr("=+-@", s[0]) && s[0])
        return true;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == ',' || *p == '"' || *p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

/* One field, quoted when it must be (quotes doubled). */
static void csv_field(FILE *f, const char *s)
{
    if (!csv_needs_quotes(s)) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

/* Rows are formatted into a buffer of this size and written in one fwrite each time it
 * fills: per-character stdio calls (and their locks) cost more than the numbers did. */
#define CSV_CHUNK ((size_t)256 << 10)

/* out gets field s, quoted when it must be; returns the bytes written (at most 2 * len + 2). */
static size_t csv_field_put(char *out, const char *s)
{
    size_t n = strlen(s);
    if (!csv_needs_quotes(s)) {
        memcpy(out, s, n);
        return n;
    }
    char *p = out;
    *p++ = '"';
    for (const char *q = s; *q; q++) {
        if (*q == '"')
            *p++ = '"';
        *p++ = *q;
    }
    *p++ = '"';
    return (size_t)(p - out);
}

int csv_write_table(FILE *f, struct attn_mat_view v, const char *corner, char *const *row_labels,
                    char *const *col_labels)
{
    char buf[32];
    csv_field(f, corner);
    for (int j = 0; j < v.cols; j++) {
        fputc(',', f);
        if (col_labels) {
            csv_field(f, col_labels[j]);
        } else {
            snprintf(buf, sizeof(buf), "d%d", j);
            fputs(buf, f);
        }
    }
    fputs("\r\n", f);
    /* A row: its label (quoted, at most 2 * len + 2), then ",<number>" per column. */
    size_t label_max = 24;
    for (int i = 0; row_labels && i < v.rows; i++) {
        size_t n = 2 * strlen(row_labels[i]) + 2;
        label_max = n > label_max ? n : label_max;
    }
    size_t row_max = label_max + (size_t)v.cols * CNUM_FLOAT_MAX + 2;
    size_t cap = row_max > CSV_CHUNK ? row_max : CSV_CHUNK;
    char *out = malloc(cap);
    if (!out) {
        errno = ENOMEM;
        return -1;
    }
    size_t used = 0;
    for (int i = 0; i < v.rows; i++) {
        if (cap - used < row_max) {
            if (fwrite(out, 1, used, f) != used)
                break;
            used = 0;
        }
        char *p = out + used;
        if (row_labels)
            p += csv_field_put(p, row_labels[i]);
        else
            p += snprintf(p, 24, "%d", i);
        const float *row = v.data + (size_t)i * (size_t)v.stride;
        for (int j = 0; j < v.cols; j++) {
            *p++ = ',';
            p += attn_cnum_float_text(p, row[j]);
        }
        *p++ = '\r';
        *p++ = '\n';
        used = (size_t)(p - out);
    }
    if (used && !ferror(f))
        fwrite(out, 1, used, f);
    free(out);
    return ferror(f) ? -1 : 0;
}

int csv_write_matrix(FILE *f, struct attn_mat_view v, char *const *row_labels,
                     char *const *col_labels)
{
    return csv_write_table(f, v, "token", row_labels, col_labels);
}

int csv_write_tokens(FILE *f, char *const *tokens, const int *ids, int n)
{
    fputs("position,id,token\r\n", f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%d,%d,", i, ids[i]);
        csv_field(f, tokens[i]);
        fputs("\r\n", f);
    }
    return ferror(f) ? -1 : 0;
}

/* A vocabulary id's label as one field. */
static void token_field(FILE *f, const struct attn_scene *s, int id)
{
    char label[4 * SCENE_MAX_TOKEN_BYTES + 16];
    attn_scene_token_label(label, sizeof(label), s, id);
    csv_field(f, label);
}

int csv_write_predictions(FILE *f, const struct attn_predictions *p, const struct attn_scene *s)
{
    char logit[32], prob[32];
    fputs("position,rank,id,token,logit,prob\r\n", f);
    for (int i = 0; i < p->count; i++) {
        const struct attn_token_score *top = attn_predictions_top(p, i);
        for (int r = 0; r < p->k; r++) {
            csv_format_float(logit, sizeof(logit), top[r].logit);
            csv_format_float(prob, sizeof(prob), top[r].prob);
            fprintf(f, "%d,%d,%d,", p->pos0 + i, r + 1, top[r].id);
            token_field(f, s, top[r].id);
            fprintf(f, ",%s,%s\r\n", logit, prob);
        }
    }
    return ferror(f) ? -1 : 0;
}

int csv_write_step(FILE *f, int step, int position, int id, double prob, int rank,
                   const struct attn_scene *s)
{
    char p[32];
    if (step == 1)
        fputs("step,position,id,token,prob,rank\r\n", f);
    csv_format_float(p, sizeof(p), (float)prob);
    fprintf(f, "%d,%d,%d,", step, position, id);
    token_field(f, s, id);
    fprintf(f, ",%s,%d\r\n", p, rank);
    return ferror(f) ? -1 : 0;
}

int csv_write_loss(FILE *f, const struct attn_predictions *p, const struct attn_scene *s)
{
    char prob[32], loss[32];
    fputs("position,next_id,next_token,prob,loss\r\n", f);
    for (int i = 0; i < p->count; i++) {
        if (p->next_id[i] < 0)
            continue;
        csv_format_float(prob, sizeof(prob), (float)p->next_prob[i]);
        csv_format_float(loss, sizeof(loss), (float)p->next_loss[i]);
        fprintf(f, "%d,%d,", p->pos0 + i, p->next_id[i]);
        token_field(f, s, p->next_id[i]);
        fprintf(f, ",%s,%s\r\n", prob, loss);
    }
    return ferror(f) ? -1 : 0;
}

int csv_write_lens(FILE *f, const struct attn_predictions *layers, int n_layers,
                   const struct attn_scene *s)
{
    char prob[32];
    fputs("layer,position,id,token,prob\r\n", f);
    for (int L = 0; L < n_layers; L++) {
        const struct attn_predictions *p = &layers[L];
        for (int i = 0; i < p->count && p->k > 0; i++) {
            const struct attn_token_score *top = attn_predictions_top(p, i);
            csv_format_float(prob, sizeof(prob), top[0].prob);
            fprintf(f, "%d,%d,%d,", p->layer, p->pos0 + i, top[0].id);
            token_field(f, s, top[0].id);
            fprintf(f, ",%s\r\n", prob);
        }
    }
    return ferror(f) ? -1 : 0;
}
