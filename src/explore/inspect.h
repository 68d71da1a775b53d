/* inspect: a text explanation of the selected cell (see inspect.c). */
#ifndef ATTNSCOPE_INSPECT_H
#define ATTNSCOPE_INSPECT_H

#include <stddef.h>

#include "explore/app.h"

/* Writes lines separated by '\n' into out (always NUL-terminated). */
void inspect_explain(char *out, size_t size, const struct app *a);

#endif
