/* attnscope.h: the library for other front ends: the attention engine and scene files.
 *
 *   #include <attnscope/attnscope.h>   cc prog.c $(pkg-config --cflags --libs attnscope)
 *
 * Load a scene (attn_scenefile_load_report), compute every stage of every head (attn_compute), read
 * any of them (attn_view). Every number is PyTorch's, as in the attnscope explorer; see
 * examples/print_head.c for a whole program.
 */
#ifndef ATTNSCOPE_H
#define ATTNSCOPE_H

#include "common/diag.h"
#include "engine/attention.h"
#include "engine/model.h"
#include "engine/net.h"
#include "engine/scene.h"
#include "engine/stage.h"
#include "scenefile/scenefile.h"

#endif
