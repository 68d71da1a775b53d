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

#endif
