/* edit: the scene keys of the edits a lesson step makes (see edit.h). */
#include "engine/edit.h"

static const char *const keys[EDIT_COUNT] = {
#define X(id, key) [EDIT_##id] = key,
    ATTN_EDITS(X)
#undef X
};

const char *attn_edit_key(enum attn_edit_kind k)
{
    return k >= 0 && k < EDIT_COUNT ? keys[k] : "";
}
