/* roles: role and scale names, and the built-in role colours (see roles.h). */
#include "explore/roles.h"

const char *const role_names[ROLE_COUNT] = {
#define X(id, name) name,
    ROLES(X)
#undef X
};

const char *const scale_names[] = {"viridis", "magma", "gray"};
const int n_scale_names = 3;
const char *const diverging_names[] = {"blue-red", "purple-green"};
const int n_diverging_names = 2;

/* The 8 basic colours in the order of colors.yaml and curses. */
enum { BLACK, RED, GREEN, YELLOW, BLUE, MAGENTA, CYAN, WHITE };

const struct color_spec role_defaults[ROLE_COUNT] = {
    [ROLE_HEADER] = {BLACK, CYAN, COLOR_ATTR_BOLD, true},
    [ROLE_STAGEBAR] = {WHITE, BLUE, COLOR_ATTR_BOLD, true},
    [ROLE_STAGE_CURRENT] = {BLACK, YELLOW, COLOR_ATTR_BOLD, true},
    [ROLE_STAGE_OFF] = {CYAN, BLUE, 0, true},
    [ROLE_STATUS] = {BLACK, WHITE, 0, true},
    [ROLE_STATUS_KEY] = {BLUE, WHITE, COLOR_ATTR_BOLD, true},
    [ROLE_ERROR] = {RED, COLOR_DEFAULT, COLOR_ATTR_BOLD, true},
    [ROLE_MASKED] = {COLOR_DEFAULT, COLOR_DEFAULT, COLOR_ATTR_DIM, true},
    [ROLE_CURSOR] = {COLOR_DEFAULT, COLOR_DEFAULT, COLOR_ATTR_REVERSE | COLOR_ATTR_BOLD, true},
    [ROLE_SELECTION] = {COLOR_DEFAULT, COLOR_DEFAULT, COLOR_ATTR_BOLD | COLOR_ATTR_UNDERLINE, true},
    [ROLE_HELP] = {COLOR_DEFAULT, COLOR_DEFAULT, 0, true},
    [ROLE_HELP_KEY] = {COLOR_DEFAULT, COLOR_DEFAULT, COLOR_ATTR_BOLD, true},
    [ROLE_LABEL] = {CYAN, COLOR_DEFAULT, COLOR_ATTR_BOLD, true},
    [ROLE_DIM] = {COLOR_DEFAULT, COLOR_DEFAULT, COLOR_ATTR_DIM, true},
};
