/* roles: role and scale names, and the built-in role colours (see roles.h). */
#include "explore/roles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/datadir.h"
#include "palette/palette.h"

const char *const role_names[ROLE_COUNT] = {
#define X(id, name) name,
    ROLES(X)
#undef X
};

/* In the order of palette/palette.c's anchor tables; the sizes make the two agree. */
const char *const scale_names[PALETTE_SEQUENTIAL] = {"viridis", "magma", "gray"};
const int n_scale_names = PALETTE_SEQUENTIAL;
const char *const diverging_names[PALETTE_DIVERGING] = {"blue-red", "purple-green"};
const int n_diverging_names = PALETTE_DIVERGING;

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

/* The installed binary reads the data folder's configs/; the tests point ATTNSCOPE_CONFIGS_DIR
 * at the source tree's. A missing shipped file is reported (ui.c), and the built-in defaults,
 * equal to configs/ (test_config checks), are then in force. */
const char *roles_configs_dir(void)
{
    static char dir[4096];
    const char *env = getenv("ATTNSCOPE_CONFIGS_DIR");
    if (env && env[0])
        return env;
    snprintf(dir, sizeof(dir), "%s/configs", attn_data_dir());
    return dir;
}

void roles_load(struct color_spec roles[ROLE_COUNT], int *scale, int *diverging,
                const char *shipped_path, const char *user_path, struct diag_list *errs)
{
    memcpy(roles, role_defaults, sizeof(role_defaults));
    *scale = *diverging = 0;
    const char *paths[2] = {shipped_path, user_path};
    for (int p = 0; p < 2; p++) {
        if (!paths[p])
            continue;
        struct color_config cc;
        if (config_load_colors(&cc, paths[p], role_names, ROLE_COUNT, scale_names, n_scale_names,
                               diverging_names, n_diverging_names, errs) == 0) {
            for (int r = 0; r < ROLE_COUNT && r < cc.n_roles; r++)
                if (cc.roles[r].set)
                    roles[r] = cc.roles[r];
            for (int i = 0; cc.scale_set && i < n_scale_names; i++)
                if (strcmp(cc.scale, scale_names[i]) == 0)
                    *scale = i;
            for (int i = 0; cc.diverging_set && i < n_diverging_names; i++)
                if (strcmp(cc.diverging, diverging_names[i]) == 0)
                    *diverging = i;
        }
        color_config_free(&cc);
    }
}

void roles_require_shipped(const char *path, struct diag_list *errs)
{
    struct stat st;
    if (stat(path, &st) != 0)
        attn_diag_list_add(
            errs, path, 0, 0, "",
            "missing: attnscope's data folder is not there (set ATTNSCOPE_DATA_DIR to "
            "the folder with configs/ and scenes/, or reinstall)");
}

void roles_load_default(struct color_spec roles[ROLE_COUNT], int *scale, int *diverging,
                        struct diag_list *errs)
{
    char shipped[1024];
    snprintf(shipped, sizeof(shipped), "%s/colors.yaml", roles_configs_dir());
    roles_require_shipped(shipped, errs);
    char *user = config_user_path("colors.yaml");
    roles_load(roles, scale, diverging, shipped, user, errs);
    free(user);
}
