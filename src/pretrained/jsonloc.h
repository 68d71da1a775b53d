/* jsonloc: where a key is written in a JSON text, for messages located at file:line:col.
 *
 * jansson keeps no positions, so a checkpoint's config.json or sharded index, once parsed and
 * found wanting, is scanned again here for the key a message is about. The text must be JSON
 * jansson accepted.
 */
#ifndef ATTNSCOPE_JSONLOC_H
#define ATTNSCOPE_JSONLOC_H

#include <stddef.h>

/* The 1-based line and byte column of the opening quote of the member keys[n - 1] of the object
 * that is member keys[n - 2] of ... member keys[0] of the top-level object ({"rope_scaling":
 * {"type": ...}}: keys "rope_scaling", "type"). When the whole path is not there, the deepest
 * key of it that is; 0, 0 when not even keys[0] is. Keys compare with the JSON string decoded
 * (the escapes \" \\ \/ \b \f \n \r \t and \u00XX). */
void attn_json_locate(const char *text, size_t len, const char *const *keys, int n, int *line,
                      int *col);

#endif
