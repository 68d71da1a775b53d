/* roles: the semantic colour roles of the explorer and the names of its colour scales.
 *
 * What a role is and what it looks like by default is the explorer's business; how a terminal
 * shows it (colour pairs, 8 colours, monochrome) is src/ui/theme's. colors.yaml names these,
 * so `attnscope check colors.yaml` and the config tests need them without curses.
 */
#ifndef ATTNSCOPE_EXPLORE_ROLES_H
#define ATTNSCOPE_EXPLORE_ROLES_H

#include "config/config.h"

#define ROLES(X)                                                                                   \
    X(HEADER, "header")                                                                            \
    X(STAGEBAR, "stagebar")                                                                        \
    X(STAGE_CURRENT, "stage_current")                                                              \
    X(STAGE_OFF, "stage_off")                                                                      \
    X(STATUS, "status")                                                                            \
    X(STATUS_KEY, "status_key")                                                                    \
    X(ERROR, "error")                                                                              \
    X(MASKED, "masked")                                                                            \
    X(CURSOR, "cursor")                                                                            \
    X(SELECTION, "selection")                                                                      \
    X(HELP, "help")                                                                                \
    X(HELP_KEY, "help_key")                                                                        \
    X(LABEL, "label")                                                                              \
    X(DIM, "dim")

enum role {
#define X(id, name) ROLE_##id,
    ROLES(X)
#undef X
        ROLE_COUNT
};

extern const char *const role_names[ROLE_COUNT];
/* The built-in roles, equal to configs/colors.yaml (test_config checks they agree). */
extern const struct color_spec role_defaults[ROLE_COUNT];
/* Heatmap scales: sequential (weights) and diverging (signed stages); the first is the default. */
extern const char *const scale_names[];
extern const int n_scale_names;
extern const char *const diverging_names[];
extern const int n_diverging_names;

/* The folder of the shipped keys.yaml and colors.yaml: $ATTNSCOPE_CONFIGS_DIR (the tests point
 * it at the source tree's), else the data folder's configs/ (common/datadir.h). */
const char *roles_configs_dir(void);
/* Adds a problem to errs when the shipped file path is not there: the built-in defaults then
 * serve, but an install that lost its data folder is said, not hidden. */
void roles_require_shipped(const char *path, struct diag_list *errs);
/* What the colour files say, the user's over the shipped one (either path may be NULL): every
 * role's look (starting from role_defaults) and the sequential and diverging scales (indices
 * into scale_names and diverging_names, 0 unless chosen). A file with a problem adds it to
 * errs and counts for nothing. The explorer's theme and `attnscope render` both use this. */
void roles_load(struct color_spec roles[ROLE_COUNT], int *scale, int *diverging,
                const char *shipped_path, const char *user_path, struct diag_list *errs);
/* roles_load of the shipped colors.yaml and the user's ($XDG_CONFIG_HOME/attnscope/). */
void roles_load_default(struct color_spec roles[ROLE_COUNT], int *scale, int *diverging,
                        struct diag_list *errs);

#endif
