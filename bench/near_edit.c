/* near_edit: the last-word edit of a causal checkpoint, the near path (net.near_ok: the edit's
 * rows alone) against the panel path (from the changed token's 128-row panel), in interleaved
 * rounds, and what attn_net_forward_exact costs after a near edit.
 *
 *   near_edit MODEL TOKENS [ROUNDS [BACK]]
 *
 * MODEL: a model folder (build/tests/make_gpt2_shape writes GPT-2 small's shape; its tokenizer
 * beside it). The text is "Hello world and the cat sat on the mat." repeated to TOKENS tokens,
 * ending in " cat"; the edits: its last token changed (" cat" -> " dog", and back), one token
 * appended (" sat", and taken away again), and the first word of the BACK-th sentence from the
 * end (default 1) changed, and back: a block of rows (near_ok takes at most ATTN_NEAR_ROWS).
 * Prints each edit's fastest time of the rounds (ms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/net.h"
#include "scenefile/scenefile.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "near_edit: %s: %s\n", what, msg);
    exit(1);
}

/* s with text, as the explorer's sentence edit makes it. */
static void with_text(struct attn_scene *out, const struct attn_scene *s, const char *text)
{
    struct diag err = {0};
    if (attn_scene_copy(out, s) || attn_scene_retext(out, text, &err))
        die("text", err.msg[0] ? err.msg : "out of memory");
}

/* Computes net for s and returns the milliseconds it took. */
static double timed(struct attn_net *net, const struct attn_scene *s)
{
    struct diag err = {0};
    double t0 = now_ms();
    if (attn_net_compute(net, s, &err))
        die("compute", err.msg);
    return now_ms() - t0;
}

enum { CHANGE, CHANGE_BACK, APPEND, TAKE_AWAY, EXACT, BLOCK, BLOCK_BACK, KINDS };
static const char *const kind_name[KINDS] = {"last token changed",
                                             "and back",
                                             "token appended",
                                             "taken away again",
                                             "forward_exact after it",
                                             "a sentence's first word",
                                             "and back "};

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: near_edit MODEL TOKENS [ROUNDS [BACK]]\n");
        return 2;
    }
    int tokens = atoi(argv[2]), rounds = argc > 3 ? atoi(argv[3]) : 5;
    int back = argc > 4 ? atoi(argv[4]) : 1;
    struct attn_model_files files;
    struct diag err = {0};
    if (attn_scenefile_find_model(&files, argv[1], NULL, &err))
        die(argv[1], err.msg);
    struct attn_scene model;
    if (attn_scenefile_load_model_report(&model, &files, stderr))
        return 1;
    /* the sentence repeated until TOKENS tokens, ending in " cat" */
    static const char sentence[] = " Hello world and the cat sat on the mat.";
    size_t cap = (size_t)tokens * 16 + 64;
    char *text = calloc(1, cap), *base = calloc(1, cap), *t2 = calloc(1, cap);
    if (!text || !base || !t2)
        die("text", "out of memory");
    struct attn_scene s;
    for (size_t len = 0;;) {
        len += (size_t)snprintf(text + len, cap - len, "%s", sentence);
        snprintf(base, cap, "%s the cat", text);
        with_text(&s, &model, base);
        int n = s.n_tokens;
        attn_scene_free(&s);
        if (n >= tokens || len + sizeof(sentence) + 16 > cap)
            break;
    }
    /* cut back to whole words until TOKENS: drop words from the text before " the cat" */
    for (;;) {
        snprintf(base, cap, "%s the cat", text);
        with_text(&s, &model, base);
        int n = s.n_tokens;
        attn_scene_free(&s);
        char *sp = strrchr(text, ' ');
        if (n <= tokens || !sp)
            break;
        *sp = '\0';
    }
    struct attn_scene sc[4];
    with_text(&sc[0], &model, base);
    snprintf(t2, cap, "%s the dog", text);
    with_text(&sc[1], &model, t2);
    snprintf(t2, cap, "%s the cat sat", text);
    with_text(&sc[2], &model, t2);
    /* the first word of the BACK-th sentence from the end changed: a block of rows */
    char *hello = NULL;
    for (char *at = text; (at = strstr(at, " Hello")) != NULL; at++)
        hello = at;
    for (int b = 1; hello && b < back; b++) {
        char *before = NULL;
        for (char *at = text; (at = strstr(at, " Hello")) != NULL && at < hello; at++)
            before = at;
        hello = before;
    }
    if (!hello)
        die("text", "no sentence");
    snprintf(t2, cap, "%.*s Howdy%s the cat", (int)(hello - text), text, hello + 6);
    with_text(&sc[3], &model, t2);
    int block = 0;
    while (block < sc[0].n_tokens && strcmp(sc[0].tokens[block], sc[3].tokens[block]) == 0)
        block++;
    block = sc[0].n_tokens - block;
    printf("near_edit: %s, %d tokens (appended: %d; a sentence's first word: %d rows), %d "
           "rounds\n",
           argv[1], sc[0].n_tokens, sc[2].n_tokens, block, rounds);

    double best[2][KINDS];
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < KINDS; k++)
            best[m][k] = 1e30;
    struct attn_net net[2];
    memset(net, 0, sizeof(net));
    for (int m = 0; m < 2; m++) {
        net[m].near_ok = m == 1;
        timed(&net[m], &sc[0]);
    }
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < 2; m++) { /* interleaved: the panels, then the near path */
            double t[KINDS];
            t[CHANGE] = timed(&net[m], &sc[1]);
            t[CHANGE_BACK] = timed(&net[m], &sc[0]);
            t[APPEND] = timed(&net[m], &sc[2]);
            t[TAKE_AWAY] = timed(&net[m], &sc[0]);
            double t0 = now_ms();
            attn_net_forward_exact(&net[m]);
            t[EXACT] = now_ms() - t0;
            t[BLOCK] = timed(&net[m], &sc[3]);
            t[BLOCK_BACK] = timed(&net[m], &sc[0]);
            for (int k = 0; k < KINDS; k++)
                if (t[k] < best[m][k])
                    best[m][k] = t[k];
        }
    printf("%-24s %10s %10s\n", "edit (fastest, ms)", "panels", "near");
    for (int k = 0; k < KINDS; k++)
        printf("%-24s %10.1f %10.1f\n", kind_name[k], best[0][k], best[1][k]);
    for (int m = 0; m < 2; m++)
        attn_net_free(&net[m]);
    for (int i = 0; i < 4; i++)
        attn_scene_free(&sc[i]);
    attn_scene_free(&model);
    free(text);
    free(base);
    free(t2);
    return 0;
}
