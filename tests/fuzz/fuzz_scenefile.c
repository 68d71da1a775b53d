/* fuzz_scenefile: libFuzzer target for the scene loader (tests/fuzz/README.md).
 *
 * Any input: attn_scenefile_parse must return cleanly, with at least one located problem when it
 * refuses, and those problems must print with their caret excerpt. An accepted scene must
 * write back as YAML that loads again and writes the same text (the writer's output is what the
 * loader reads). A small accepted scene also runs the full forward pass, prints and exports
 * every stage, and its resolved form (export's scene.yaml) must reproduce every stage bit for
 * bit. A broken invariant aborts, so libFuzzer reports the input. The same entry point replays
 * tests/fuzz/regressions/scenefile/ in the normal test suite (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TARGET "fuzz_scenefile"
#include "fuzz_common.h"

#include "engine/attention.h"
#include "engine/model.h"
#include "engine/net.h"
#include "export/export.h"
#include "scenefile/scenefile.h"

/* Bounds on the scenes that run the forward pass, so one execution stays in the milliseconds. */
#define FUZZ_MAX_TOKENS  16
#define FUZZ_MAX_DIM     32
#define FUZZ_MAX_HEADS   8
#define FUZZ_MAX_POS_LEN 64
#define FUZZ_MAX_SKIP    4096
#define FUZZ_MAX_LAYERS  4

/* attn_scenefile_write into a malloc'ed string; returns NULL (with err) when the writer refuses. */
static char *write_text(const struct attn_scene *s, bool explicit, size_t *len, struct diag *err)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    INVARIANT(f != NULL, "open_memstream failed");
    int rc = attn_scenefile_write(f, s, explicit, err);
    INVARIANT(fclose(f) == 0, "fclose of a memory stream failed");
    if (rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Parses text that the writer produced: it must load, whatever the scene was. */
static void reparse(struct attn_scene *out, const char *text, size_t len, const char *what)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    if (attn_scenefile_parse(out, "written.yaml", text, len, &errs) != 0) {
        for (int i = 0; i < errs.n; i++)
            attn_diag_print(stderr, &errs.items[i], text, len);
        fprintf(stderr, "--- the writer wrote (%s):\n%.*s\n---\n", what, (int)len, text);
        INVARIANT(0, "the loader refuses what the writer wrote (%s)", what);
    }
    attn_diag_list_free(&errs);
}

static bool small_enough(const struct attn_scene *s)
{
    return s->n_tokens <= FUZZ_MAX_TOKENS && attn_scene_d_in(s) <= FUZZ_MAX_DIM &&
           attn_scene_eff_d_out(s) <= FUZZ_MAX_DIM && attn_scene_concat_dim(s) <= FUZZ_MAX_DIM &&
           s->attn.heads <= FUZZ_MAX_HEADS &&
           (s->pos.kind != POS_LEARNED || s->pos.max_len <= FUZZ_MAX_POS_LEN) &&
           (!s->block.on ||
            (attn_scene_ffn_hidden(s) <= 4 * FUZZ_MAX_DIM && s->block.ffn_skip <= FUZZ_MAX_SKIP)) &&
           s->layers <= FUZZ_MAX_LAYERS && s->model.file == NULL;
}

/* Every stage of every head of a and b, bit for bit (NaN from a zero row sum included). */
static void same_stages(const struct attn_model *ma, const struct attn_run *ra,
                        const struct attn_model *mb, const struct attn_run *rb)
{
    INVARIANT(ma->n == mb->n && ma->d_in == mb->d_in && ma->heads == mb->heads &&
                  ma->head_dim == mb->head_dim && ma->D == mb->D,
              "shapes differ");
    enum attn_stage order[STAGE_COUNT], order_b[STAGE_COUNT];
    int n_stages = attn_stage_order(order, ma);
    INVARIANT(n_stages == attn_stage_order(order_b, mb) &&
                  memcmp(order, order_b, (size_t)n_stages * sizeof(*order)) == 0,
              "the stages differ");
    for (int k = 0; k < n_stages; k++)
        for (int h = 0, st = order[k]; h < (attn_stage_is_per_head(order[k]) ? ma->heads : 1);
             h++) {
            struct attn_mat_view a = attn_view(ra, ma, (enum attn_stage)st, h);
            struct attn_mat_view b = attn_view(rb, mb, (enum attn_stage)st, h);
            INVARIANT(a.rows == b.rows && a.cols == b.cols, "stage %s: shapes differ",
                      attn_stage_name((enum attn_stage)st));
            for (int i = 0; i < a.rows; i++)
                INVARIANT(memcmp(a.data + (size_t)i * a.stride, b.data + (size_t)i * b.stride,
                                 (size_t)a.cols * sizeof(float)) == 0,
                          "stage %s head %d row %d differs", attn_stage_name((enum attn_stage)st),
                          h, i);
        }
}

/* Every layer of two nets, bit for bit. */
static void same_nets(const struct attn_net *a, const struct attn_net *b)
{
    INVARIANT(a->layers == b->layers, "%d layers, then %d", a->layers, b->layers);
    for (int L = 0; L < a->layers; L++)
        same_stages(&a->model[L], &a->run[L], &b->model[L], &b->run[L]);
}

/* The forward pass of text (written by the writer) equals the one of net. */
static void same_forward(const struct attn_net *net, const char *text, size_t len, const char *what)
{
    struct attn_scene again;
    reparse(&again, text, len, what);
    struct attn_net net2;
    memset(&net2, 0, sizeof(net2));
    struct diag err;
    attn_diag_clear(&err);
    INVARIANT(attn_net_compute(&net2, &again, &err) == 0, "the %s does not compute: %s", what,
              err.msg);
    same_nets(net, &net2);
    attn_net_free(&net2);
    attn_scene_free(&again);
}

/* What the explorer and the CLI do with a loaded scene: compute, print, CSV, describe. */
static void forward_pass(const struct attn_scene *s, const char *explicit_text, size_t explicit_len)
{
    struct attn_net net;
    memset(&net, 0, sizeof(net));
    struct diag err;
    attn_diag_clear(&err);
    /* A checked scene within the bounds above has nothing left to refuse. */
    INVARIANT(attn_net_compute(&net, s, &err) == 0, "attn_net_compute refused a checked scene: %s",
              err.msg);

    for (int L = 0; L < net.layers; L++) {
        const struct attn_model *m = &net.model[L];
        const struct attn_run *r = &net.run[L];
        enum attn_stage order[STAGE_COUNT];
        int n_stages = attn_stage_order(order, m);
        for (int k = 0; k < n_stages; k++)
            for (int h = 0, st = order[k]; h < (attn_stage_is_per_head(order[k]) ? m->heads : 1);
                 h++) {
                struct attn_mat_view v = attn_view(r, m, (enum attn_stage)st, h);
                torch_print_matrix(fuzz_sink(), v);
                csv_write_matrix(fuzz_sink(), v, m->tokens,
                                 attn_stage_is_square((enum attn_stage)st) ? m->tokens : NULL);
                (void)attn_stage_is_off(m, (enum attn_stage)st);
            }
    }
    char words[256];
    attn_scene_describe(words, sizeof(words), s);

    /* Every default written out changes nothing. */
    same_forward(&net, explicit_text, explicit_len, "scene written with every default");
    /* Export's scene.yaml: every drawn number written out must reproduce every stage. */
    struct attn_scene resolved;
    INVARIANT(attn_scene_from_layers(&resolved, s, net.model, net.layers) == 0,
              "scene_from_layers failed");
    size_t len;
    char *text = write_text(&resolved, true, &len, &err);
    INVARIANT(text != NULL, "the writer refuses the resolved scene: %s", err.msg);
    same_forward(&net, text, len, "resolved scene");
    free(text);
    attn_scene_free(&resolved);
    attn_net_free(&net);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct attn_scene s;
    if (attn_scenefile_parse(&s, "fuzz.yaml", (const char *)data, size, &errs) != 0) {
        INVARIANT(errs.n > 0, "a refused scene gives no reason");
        for (int i = 0; i < errs.n; i++)
            fuzz_check_diag(&errs.items[i], data, size);
        attn_diag_list_free(&errs);
        attn_scene_free(&s);
        return 0;
    }
    /* The loader runs scene_check: nothing is left for it to find. */
    INVARIANT(attn_scene_check(&s, &errs) == 0, "scene_check refuses a loaded scene: %s",
              errs.items[0].msg);
    attn_diag_list_free(&errs);

    /* The round trip: what the writer writes, the loader reads, and writes the same again. */
    struct diag err;
    attn_diag_clear(&err);
    size_t len1, len2;
    char *text1 = write_text(&s, false, &len1, &err);
    INVARIANT(text1 != NULL, "the writer refuses a scene the loader accepted: %s", err.msg);
    struct attn_scene again;
    reparse(&again, text1, len1, "scene");
    char *text2 = write_text(&again, false, &len2, &err);
    INVARIANT(text2 != NULL, "the writer refuses its own output: %s", err.msg);
    if (len1 != len2 || memcmp(text1, text2, len1) != 0) {
        fprintf(stderr, "--- first write:\n%s\n--- second write:\n%s\n---\n", text1, text2);
        INVARIANT(0, "writing a loaded scene again changes it");
    }
    free(text2);

    /* The explorer keeps a copy per undo step: a copy writes the same text. */
    struct attn_scene copy;
    INVARIANT(attn_scene_copy(&copy, &s) == 0, "scene_copy failed");
    text2 = write_text(&copy, false, &len2, &err);
    INVARIANT(text2 != NULL, "the writer refuses a copy: %s", err.msg);
    INVARIANT(len1 == len2 && memcmp(text1, text2, len1) == 0, "a copy writes other text");
    free(text2);
    free(text1);
    attn_scene_free(&copy);
    attn_scene_free(&again);

    /* With every default written out, too. */
    char *explicit_text = write_text(&s, true, &len1, &err);
    INVARIANT(explicit_text != NULL, "the writer refuses to write every default: %s", err.msg);
    if (small_enough(&s)) {
        forward_pass(&s, explicit_text, len1);
    } else {
        reparse(&again, explicit_text, len1, "scene written with every default");
        attn_scene_free(&again);
    }
    free(explicit_text);
    attn_scene_free(&s);
    return 0;
}
