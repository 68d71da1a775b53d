/* view: a stage of a computed run as a matrix (attention.h declares attn_view and the stage
 * order); here the kept stages' view, which the forward pass's finite check reads. Internal to
 * the engine. */
#ifndef ATTNSCOPE_VIEW_H
#define ATTNSCOPE_VIEW_H

#include "engine/attention.h"

/* A kept stage, in place: s not derived (attn_stage_is_derived) and not one that equals another
 * (scaled without a divisor, masked without a mask, dropout without a keep-mask). */
struct attn_mat_view attn_kept_view(const struct attn_run *r, const struct attn_model *m,
                                    enum attn_stage s, int h);

#endif
