/* make_gpt2_shape: writes a checkpoint of GPT-2 small's exact shape with seeded weights.
 *
 *   make_gpt2_shape DIR      -> DIR/model.safetensors (F32, 498 MB), DIR/config.json
 *
 * The tensors, names, order and the attention buffers are those of Hugging Face's gpt2
 * model.safetensors: 12 layers, 12 heads, n_embd 768, 1024 positions, 50257 tokens. Without
 * OpenAI's weights (not redistributable, and CI has no network), this is how the suite runs
 * GPT-2 small's scene, name mapping and real tokenizer at full size on every machine.
 *
 * Every value is a function of the tensor's index k and the element's index i alone:
 *   u = splitmix64(0x9E3779B97F4A7C15 * (k + 1) ^ i), f = (u >> 40) / 2^24 in [0, 1),
 *   value = (float)(base + scale * (2 f - 1))   in double, rounded once to float,
 * so tests/golden/gen_gpt2_small_shape.py makes the same bits with NumPy and its PyTorch goldens
 * need no 500 MB file in the repository. (base, scale) per kind of tensor: LayerNorm weights
 * (1, 0.1); biases (0, 0.05); wte and wpe (0, 0.2); every other weight (0, 0.06). The attention
 * buffers h.L.attn.bias are the causal mask of ones, as GPT-2's file has it.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LAYER 12
#define N_EMBD  768
#define N_POS   1024
#define N_VOCAB 50257

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

struct tensor {
    char name[64];
    int rank;
    long shape[4];
    double base, scale; /* scale 0 with base -1: the causal mask buffer */
};

static struct tensor tensors[16 * N_LAYER + 8];
static int n_tensors;

static void add(const char *name, int rank, long a, long b, long c, long d, double base,
                double scale)
{
    struct tensor *t = &tensors[n_tensors++];
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->rank = rank;
    long s[4] = {a, b, c, d};
    memcpy(t->shape, s, sizeof(s));
    t->base = base;
    t->scale = scale;
}

static long numel(const struct tensor *t)
{
    long n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

/* The tensors in the order Hugging Face's file lists them: sorted by name. */
static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct tensor *)a)->name, ((const struct tensor *)b)->name);
}

static void fill(float *out, long n, int k, const struct tensor *t)
{
    if (t->scale == 0 && t->base < 0) { /* tril(ones(1024, 1024)) as (1, 1, 1024, 1024) */
        for (long i = 0; i < n; i++)
            out[i] = (i % N_POS) <= (i / N_POS) ? 1.0f : 0.0f;
        return;
    }
    uint64_t key = 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1);
    for (long i = 0; i < n; i++) {
        double f = (double)(splitmix64(key ^ (uint64_t)i) >> 40) * 0x1p-24;
        out[i] = (float)(t->base + t->scale * (2.0 * f - 1.0));
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_gpt2_shape DIR\n");
        return 2;
    }
    add("wte.weight", 2, N_VOCAB, N_EMBD, 0, 0, 0, 0.2);
    add("wpe.weight", 2, N_POS, N_EMBD, 0, 0, 0, 0.2);
    add("ln_f.weight", 1, N_EMBD, 0, 0, 0, 1, 0.1);
    add("ln_f.bias", 1, N_EMBD, 0, 0, 0, 0, 0.05);
    for (int L = 0; L < N_LAYER; L++) {
        char n[64];
#define T(suffix, rank, a, b, base, scale)                                                         \
    snprintf(n, sizeof(n), "h.%d.%s", L, suffix);                                                  \
    add(n, rank, a, b, 0, 0, base, scale)
        T("ln_1.weight", 1, N_EMBD, 0, 1, 0.1);
        T("ln_1.bias", 1, N_EMBD, 0, 0, 0.05);
        T("attn.c_attn.weight", 2, N_EMBD, 3 * N_EMBD, 0, 0.06);
        T("attn.c_attn.bias", 1, 3 * N_EMBD, 0, 0, 0.05);
        T("attn.c_proj.weight", 2, N_EMBD, N_EMBD, 0, 0.06);
        T("attn.c_proj.bias", 1, N_EMBD, 0, 0, 0.05);
        T("ln_2.weight", 1, N_EMBD, 0, 1, 0.1);
        T("ln_2.bias", 1, N_EMBD, 0, 0, 0.05);
        T("mlp.c_fc.weight", 2, N_EMBD, 4 * N_EMBD, 0, 0.06);
        T("mlp.c_fc.bias", 1, 4 * N_EMBD, 0, 0, 0.05);
        T("mlp.c_proj.weight", 2, 4 * N_EMBD, N_EMBD, 0, 0.06);
        T("mlp.c_proj.bias", 1, N_EMBD, 0, 0, 0.05);
#undef T
        snprintf(n, sizeof(n), "h.%d.attn.bias", L);
        add(n, 4, 1, 1, N_POS, N_POS, -1, 0);
    }
    /* Seeds follow the order above (k), whatever order the file lists them in. */
    int seed_of[16 * N_LAYER + 8];
    struct tensor by_k[16 * N_LAYER + 8];
    memcpy(by_k, tensors, sizeof(struct tensor) * (size_t)n_tensors);
    qsort(tensors, (size_t)n_tensors, sizeof(tensors[0]), by_name);
    for (int i = 0; i < n_tensors; i++)
        for (int k = 0; k < n_tensors; k++)
            if (strcmp(by_k[k].name, tensors[i].name) == 0)
                seed_of[i] = k;

    /* The header: {"name": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}, ...}. */
    char *header = malloc(1 << 20);
    if (!header)
        return 1;
    size_t h = 0;
    long offset = 0;
    h += (size_t)sprintf(header + h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n_tensors; i++) {
        const struct tensor *t = &tensors[i];
        h += (size_t)sprintf(header + h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[", t->name);
        for (int r = 0; r < t->rank; r++)
            h += (size_t)sprintf(header + h, "%s%ld", r ? "," : "", t->shape[r]);
        long bytes = 4 * numel(t);
        h += (size_t)sprintf(header + h, "],\"data_offsets\":[%ld,%ld]}", offset, offset + bytes);
        offset += bytes;
    }
    header[h++] = '}';
    while (h % 8) /* the data starts 8-aligned, padded with spaces as the format allows */
        header[h++] = ' ';

    char path[4096];
    snprintf(path, sizeof(path), "%s/model.safetensors", argv[1]);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint64_t len = h;
    fwrite(&len, 8, 1, f); /* little-endian on every machine the suite runs on (x86_64, arm64) */
    fwrite(header, 1, h, f);
    float *buf = malloc(sizeof(float) * (size_t)N_VOCAB * N_EMBD);
    if (!buf)
        return 1;
    for (int i = 0; i < n_tensors; i++) {
        long n = numel(&tensors[i]);
        fill(buf, n, seed_of[i], &tensors[i]);
        if (fwrite(buf, sizeof(float), (size_t)n, f) != (size_t)n) {
            perror(path);
            return 1;
        }
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    free(buf);
    free(header);

    snprintf(path, sizeof(path), "%s/config.json", argv[1]);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "{\n  \"activation_function\": \"gelu_new\",\n  \"architectures\": "
               "[\"GPT2LMHeadModel\"],\n  \"layer_norm_epsilon\": 1e-05,\n  \"model_type\": "
               "\"gpt2\",\n  \"n_ctx\": 1024,\n  \"n_embd\": 768,\n  \"n_head\": 12,\n  "
               "\"n_inner\": null,\n  \"n_layer\": 12,\n  \"n_positions\": 1024,\n  "
               "\"vocab_size\": 50257\n}\n");
    return fclose(f) == 0 ? 0 : 1;
}
