/* inspect: a text explanation of the selected cell (see inspect.c). */
#ifndef ATTNSCOPE_INSPECT_H
#define ATTNSCOPE_INSPECT_H

#include <stddef.h>

#include "explore/app.h"

/* Writes lines separated by '\n' into out (always NUL-terminated). */
void inspect_explain(char *out, size_t size, const struct app *a);
/* "KV cache per token: ... floats", next to what plain multi-head attention would need. */
void inspect_kv_cache(char *out, size_t size, const struct app *a);
/* Which KV head query head `head` reads and who shares it ("" without GQA, MQA or MLA). */
void inspect_kv_sharing(char *out, size_t size, const struct app *a, int head);
/* Whether stage st is a layer's KV cache: the keys (rotated, with RoPE: the keys attention
 * reads), the values, or MLA's latent. */
bool inspect_is_kv_stage(enum attn_stage st);
/* The KV cache of the layer shown (a causal scene's): brief ("KV cache 4.6 KiB a layer · row 147
 * new (+)") for the map's heading, full (every layer's bytes, the rows a new token computes with
 * and without it, and the rows the last edit computed) for the inspector, after
 * inspect_kv_cache's line a token.
 * Returns the first row the last compute made when it kept the ones before it (a generated or
 * last-word token), 0 when it made them all, -1 when the scene has no cache (not causal, no
 * projection), both texts then empty. */
int inspect_kv_cache_rows(char *brief, size_t brief_size, char *full, size_t full_size,
                          const struct app *a);

#endif
