/* datadir: where attnscope's shipped files are, and scenes found by name.
 *
 * The data folder holds configs/ (keys.yaml, colors.yaml), scenes/ (with lessons/) and models/.
 * It is $ATTNSCOPE_DATA_DIR when set, else the installed one (meson's datadir/attnscope). The
 * source tree has the same layout, so scripts/run points ATTNSCOPE_DATA_DIR at it.
 */
#ifndef ATTNSCOPE_DATADIR_H
#define ATTNSCOPE_DATADIR_H

#include <stddef.h>

/* The data folder (no trailing slash). */
const char *attn_data_dir(void);

/* Finds the scene a command line names: name itself when it is a file, else name or
 * name.yaml in the current folder's scenes/, then in the data folder's scenes/ ("10-mha",
 * "lessons/3-causal-mask"). Returns 0 with the path in out, or -1 with out holding the places
 * looked in, for the message. An absolute name, or one starting with ./ or ../, is only ever
 * itself. */
int attn_data_find_scene(char *out, size_t size, const char *name);

#endif
