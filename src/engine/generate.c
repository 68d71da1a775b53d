/* generate: choosing the next token, and a generation's steps (generate.h). */
#include "engine/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/logits.h"

/* a before b in the order of logit: higher first, ties to the lower id; NaN last */
static bool before(const float *logits, int a, int b)
{
    float x = logits[a], y = logits[b];
    if (isnan(x) || isnan(y))
        return !isnan(x) && isnan(y) ? true : isnan(x) && !isnan(y) ? false : a < b;
    return x > y || (x == y && a < b);
}

static void sift_down(int *heap, int n, int i, const float *logits)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, top = i;
        if (l < n && before(logits, heap[l], heap[top]))
            top = l;
        if (r < n && before(logits, heap[r], heap[top]))
            top = r;
        if (top == i)
            return;
        int t = heap[i];
        heap[i] = heap[top];
        heap[top] = t;
        i = top;
    }
}

/* Pops the next token in the order of logit off heap (n entries); returns it. */
static int pop(int *heap, int *n, const float *logits)
{
    int id = heap[0];
    heap[0] = heap[--*n];
    sift_down(heap, *n, 0, logits);
    return id;
}

/* The tokens in the order of logit, popped off a heap only as far as they are read: a step
 * sorts its nucleus, not the vocabulary. */
struct ordered {
    const float *logits;
    int *heap, n;  /* the tokens not yet in order */
    int *order, m; /* order[0 .. m - 1]: the first m tokens */
};

static int nth(struct ordered *o, int i)
{
    while (o->m <= i && o->n > 0)
        o->order[o->m++] = pop(o->heap, &o->n, o->logits);
    return o->order[i < o->m ? i : o->m - 1];
}

void attn_choose_token(struct attn_choice *out, const float *logits, int vocab,
                       const struct attn_sampling *sp, double u, int *scratch)
{
    double t = sp->greedy ? 1.0 : sp->temperature, z = 0;
    int best = 0;
    for (int i = 1; i < vocab; i++)
        if (before(logits, i, best))
            best = i;
    double top = (double)logits[best] / t;
    for (int i = 0; i < vocab; i++)
        if (!isnan(logits[i]))
            z += exp((double)logits[i] / t - top);
#define PROB(i) (exp((double)logits[(i)] / t - top) / z)
    if (sp->greedy) {
        *out = (struct attn_choice){best, logits[best], PROB(best), 1};
        return;
    }
    struct ordered o = {logits, scratch, vocab, scratch + vocab, 0};
    for (int i = 0; i < vocab; i++)
        o.heap[i] = i;
    for (int i = vocab / 2 - 1; i >= 0; i--)
        sift_down(o.heap, vocab, i, logits);
    /* the candidates: the first k, then the shortest prefix of them whose share of their
       probability reaches top_p */
    int k = sp->top_k > 0 && sp->top_k < vocab ? sp->top_k : vocab;
    double mass = 0;
    if (k < vocab)
        for (int i = 0; i < k; i++)
            mass += PROB(nth(&o, i));
    else
        mass = 1.0;
    int kept = k;
    double total = mass;
    if (sp->top_p < 1.0) {
        double run = 0;
        for (int i = 0; i < k; i++) {
            run += PROB(nth(&o, i));
            if (run >= sp->top_p * mass) {
                kept = i + 1;
                break;
            }
        }
        total = run;
    }
    /* the draw: the first candidate whose running sum passes u of their total */
    double target = u * total, run = 0;
    int pick = kept - 1;
    for (int i = 0; i < kept; i++) {
        run += PROB(nth(&o, i));
        if (run > target) {
            pick = i;
            break;
        }
    }
    int id = nth(&o, pick);
    *out = (struct attn_choice){id, logits[id], PROB(id), pick + 1};
#undef PROB
}

double attn_generation_draw(uint64_t seed, int position)
{
    struct attn_rng r;
    attn_rng_seed(&r, seed);
    float u = 0;
    for (int i = 0; i <= position; i++)
        attn_rng_uniform(&u, 1, 0.0f, 1.0f, &r);
    return u;
}

int attn_generation_begin(struct attn_generation *g, struct attn_net *net, struct attn_scene *scene,
                          const struct attn_sampling *sp, uint64_t seed, struct diag *err)
{
    memset(g, 0, sizeof(*g));
    if (!attn_net_has_vocab(net))
        return attn_diag_set(err, "", "the scene has no vocabulary model to generate with");
    g->net = net;
    g->scene = scene;
    g->sampling = *sp;
    g->vocab = net->model[net->layers - 1].vocab;
    g->seed = seed;
    g->logits = malloc((size_t)g->vocab * sizeof(float));
    g->heap = malloc(2 * (size_t)g->vocab * sizeof(int));
    if (!g->logits || !g->heap) {
        attn_generation_end(g);
        return attn_diag_set(err, "", "out of memory");
    }
    attn_generation_net(net);
    return 0;
}

void attn_generation_net(struct attn_net *net)
{
    /* a step is a row of every layer: no layer's n x n stages need keeping */
    net->stage_budget = 1;
    net->stage_pin = -1;
    net->near_ok = true;
}

int attn_generation_choose(struct attn_generation *g, struct attn_choice *out, struct diag *err)
{
    int n = g->net->model[0].n;
    if (attn_logits(g->logits, g->net, g->net->layers - 1, n - 1, 1, err) != 0)
        return -1;
    attn_scene_ban_tokens(g->scene, g->logits, g->vocab);
    double u = g->sampling.greedy ? 0 : attn_generation_draw(g->seed, n);
    attn_choose_token(out, g->logits, g->vocab, &g->sampling, u, g->heap);
    return 0;
}

int attn_generation_append(struct attn_generation *g, int id, struct diag *err)
{
    struct attn_scene next;
    if (attn_scene_copy(&next, g->scene) != 0)
        return attn_diag_set(err, "", "out of memory");
    if (attn_scene_append_id(&next, id, err) != 0 || attn_net_compute(g->net, &next, err) != 0) {
        attn_scene_free(&next);
        return -1;
    }
    attn_scene_free(g->scene);
    *g->scene = next;
    return 0;
}

void attn_generation_end(struct attn_generation *g)
{
    free(g->logits);
    free(g->heap);
    g->logits = NULL;
    g->heap = NULL;
}

int attn_scene_generate(struct attn_scene *s, int count, struct diag *err)
{
    struct attn_scene work;
    if (attn_scene_copy(&work, s) != 0)
        return attn_diag_set(err, "generate", "out of memory");
    struct attn_net net = {0};
    attn_generation_net(&net);
    struct attn_sampling greedy = {.greedy = true, .temperature = 1.0, .top_k = 0, .top_p = 1.0};
    struct attn_generation g;
    int rc = attn_net_compute(&net, &work, err);
    if (rc == 0 && (rc = attn_generation_begin(&g, &net, &work, &greedy, work.seed, err)) == 0) {
        for (int i = 0; i < count && rc == 0; i++) {
            struct attn_choice c;
            if ((rc = attn_generation_choose(&g, &c, err)) != 0 || attn_scene_is_eos(&work, c.id))
                break;
            rc = attn_generation_append(&g, c.id, err);
        }
        attn_generation_end(&g);
    }
    attn_net_free(&net);
    if (rc != 0) {
        attn_scene_free(&work);
        return -1;
    }
    attn_scene_free(s);
    *s = work;
    return 0;
}
