/* generation: the explorer writing, a token at a time (g, G; app.h). The next token is chosen
 * from the last position's logits as `attnscope generate` chooses it (engine/generate.h) and
 * appended as an edit of the sentence: u takes it away again, and its row of every layer comes
 * from the last-word path, in the background for a large model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/progress.h"
#include "engine/generate.h"
#include "engine/logits.h"
#include "explore/app.h"
#include "explore/appstate.h"

/* Why the result cannot take a generated token now, into out; false when it can. */
static bool refused(char *out, size_t size, const struct app *a)
{
    const struct attn_scene *s = &a->doc.scene;
    const char *what;
    int ctx = attn_scene_context(s, &what);
    if (!a->result.have_result)
        snprintf(out, size, "no result yet to go on from");
    else if (attn_scene_why_no_next(out, size, s))
        return true;
    else if (a->result.nonfinite[0])
        snprintf(out, size,
                 "the result holds a value that is not a number, so its logits are "
                 "no distribution to choose from");
    else if (app_computing(a))
        snprintf(out, size, "still computing: the next token waits for the result");
    else if (!app_scenes_alike(s, &a->result.shown))
        snprintf(out, size,
                 "the result on screen is not the scene's (its last edit failed): u "
                 "first");
    else if (s->n_tokens >= ctx)
        snprintf(out, size, "at the model's context: %d tokens (%s)", ctx, what);
    else
        return false;
    return true;
}

/* One token chosen and appended; pace ("" or " · 30.1 tokens/s") follows its figures on the
 * message line. *ended: the model chose its end-of-text token. */
static int step(struct app *a, const char *who, const char *pace, bool *ended)
{
    char why[DIAG_MSG_MAX];
    *ended = false;
    if (refused(why, sizeof(why), a)) {
        app_refuse(a, "%s: %s", who, why);
        return -1;
    }
    const struct attn_net *net = &a->result.net;
    int last = net->layers - 1, n = net->model[0].n, vocab = net->model[last].vocab;
    float *logits = malloc((size_t)vocab * sizeof(float));
    int *scratch = malloc(2 * (size_t)vocab * sizeof(int));
    struct diag err;
    attn_diag_clear(&err);
    if (!logits || !scratch || attn_logits(logits, net, last, n - 1, 1, &err) != 0) {
        app_refuse(a, "%s: %s", who, logits && scratch ? err.msg : "out of memory");
        free(logits);
        free(scratch);
        return -1;
    }
    attn_scene_ban_tokens(&a->doc.scene, logits, vocab);
    double t = a->view.temperature;
    struct attn_sampling sp = {.greedy = t == 1.0, .temperature = t, .top_k = 0, .top_p = 1.0};
    struct attn_choice c;
    attn_choose_token(&c, logits, vocab, &sp,
                      sp.greedy ? 0 : attn_generation_draw(a->doc.scene.seed, n), scratch);
    free(logits);
    free(scratch);
    char label[4 * SCENE_MAX_TOKEN_BYTES], how[64];
    attn_scene_token_label(label, sizeof(label), &a->doc.scene, c.id);
    if (sp.greedy)
        snprintf(how, sizeof(how), "greedy");
    else
        snprintf(how, sizeof(how), "sampled at temperature %.3g", t);
    if (attn_scene_is_eos(&a->doc.scene, c.id)) {
        *ended = true;
        snprintf(a->status.message, sizeof(a->status.message),
                 "%s: the model chose its end-of-text token '%.100s' (p %.4f, %s): nothing "
                 "appended",
                 who, label, c.prob, how);
        a->status.message_is_error = false;
        return 0;
    }
    struct attn_scene next;
    if (attn_scene_copy(&next, &a->doc.scene) != 0 ||
        attn_scene_append_id(&next, c.id, &err) != 0) {
        app_refuse(a, "%s: %s", who, err.msg[0] ? err.msg : "out of memory");
        attn_scene_free(&next);
        return -1;
    }
    int rc = app_edit_scene(a, &next);
    attn_scene_free(&next);
    if (rc != 0)
        return -1;
    a->view.row = n - 1; /* the row that chose it: the predictions panel shows that step */
    snprintf(a->status.message, sizeof(a->status.message),
             "%s: '%.100s' at position %d (p %.4f, rank %d, %s)%s; u takes it away", who, label, n,
             c.prob, c.rank, how, pace);
    a->status.message_is_error = false;
    return 0;
}

int app_generate(struct app *a)
{
    bool ended;
    a->gen = (struct app_generate){0};
    return step(a, "g", "", &ended);
}

int app_generate_many(struct app *a, int count)
{
    a->gen = (struct app_generate){.left = count, .asked = count, .t0_ms = attn_now_ms()};
    return app_generate_tick(a) ? 0 : -1;
}

bool app_generating(const struct app *a)
{
    return a->gen.left > 0;
}

int app_generate_tick(struct app *a)
{
    if (a->gen.left <= 0 || app_computing(a))
        return 0;
    char who[32];
    snprintf(who, sizeof(who), "G %d/%d", a->gen.done + 1, a->gen.asked);
    /* the tokens whose rows are in, a second: every step before this one */
    char pace[48] = "";
    double seconds = (attn_now_ms() - a->gen.t0_ms) / 1e3;
    if (a->gen.done > 0 && seconds > 0)
        snprintf(pace, sizeof(pace), " \u00b7 %.1f tokens/s", a->gen.done / seconds);
    bool ended;
    if (step(a, who, pace, &ended) != 0 || ended) {
        a->gen.left = 0;
        return 1;
    }
    a->gen.done++;
    a->gen.left--;
    return 1;
}

void app_generate_stop(struct app *a, const char *key)
{
    if (a->gen.left <= 0)
        return;
    snprintf(a->status.message, sizeof(a->status.message),
             "%s: stopped generating after %d of %d tokens (u takes each away)", key, a->gen.done,
             a->gen.asked);
    a->status.message_is_error = false;
    a->gen.left = 0;
}
