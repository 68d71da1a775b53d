/* config: the explorer's key and colour configuration files (keys.yaml, colors.yaml).
 *
 * Pure C over libyaml, no curses: the UI passes in the names it knows (actions, colour roles,
 * scales) and a key-name validator, and gets plain structs back. Shipped defaults live in
 * configs/; the user's files in $XDG_CONFIG_HOME/attnscope/ (or ~/.config/attnscope/) override
 * them entry by entry: an action or role given in a file replaces that entry as a whole.
 *
 * A file with any error is ignored as a whole: the loaders then return CONFIG_ERROR with nothing
 * set, and append every problem (file:line:col, like a bad scene) to errs for the UI's panel.
 * A missing file is not an error (CONFIG_MISSING). Every out struct is initialised whatever the
 * result, so the caller always frees it.
 */
#ifndef ATTNSCOPE_CONFIG_H
#define ATTNSCOPE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"

/* Largest configuration file read; anything bigger is refused as a mistake. */
#define CONFIG_MAX_BYTES ((size_t)1 << 20)
/* A file stops being checked after this many problems (a binary file would give thousands). */
#define CONFIG_MAX_ERRORS 50

enum config_status {
    CONFIG_ERROR = -1,  /* the file has problems (appended to errs); nothing is set */
    CONFIG_OK = 0,      /* read and valid; the entries it gives are set */
    CONFIG_MISSING = 1, /* no such file (or path NULL): not an error; nothing is set */
};

/* ---- keys.yaml: a mapping action-name -> key name or list of key names ---------------- */

struct key_config {
    int n_actions; /* length of the three arrays: the n_actions given to the loader */
    char ***keys;  /* keys[a][0..n_keys[a]-1]: the key names bound to action a (owned) */
    int *n_keys;   /* how many keys action a has; 0 with set[a] means "unbound" (`a: []`) */
    bool *set;     /* the file gives action a: its keys replace the defaults entirely */
    int *layer;    /* (n_actions) the key layer of each action (a copy), or NULL: one layer. A
                      key is bound once per layer: the explorer's lesson keys (Space, arrows)
                      shadow the others' only in lesson mode */
};

/* Loads keys.yaml at path. action_names[0..n_actions-1] are the valid action names (their index
 * is the action index of out), action_layers their key layers (NULL: all one); valid_key says
 * whether a key name is in the notation (a character, Left, C-x, F5...). Returns an enum
 * config_status. Errors: YAML syntax, top level not a mapping, unknown action (nearest suggested),
 * duplicate action, wrong node type, unknown key name (with a hint such as "write C-x" for
 * "Ctrl+x"), one key bound to two actions of a layer or twice to one, unreadable or oversized file.
 */
int config_load_keys(struct key_config *out, const char *path, const char *const *action_names,
                     const int *action_layers, int n_actions, bool (*valid_key)(const char *name),
                     struct diag_list *errs);
/* The same on text already in memory; name is the file name used in diagnostics. Returns
 * CONFIG_OK or CONFIG_ERROR. */
int config_parse_keys(struct key_config *out, const char *name, const char *text, size_t len,
                      const char *const *action_names, const int *action_layers, int n_actions,
                      bool (*valid_key)(const char *name), struct diag_list *errs);
/* Sets every action from space-separated key lists, e.g. the default-keys column of
 * explore/actions.h ("Left h"). NULL leaves an action unset. layers as for config_load_keys. */
void key_config_from_strings(struct key_config *out, const char *const *keys, const int *layers,
                             int n_actions);
/* Applies over on top of base: every action over sets replaces base's. A key over binds is
 * removed from the actions of base's layer that over leaves alone, so the user's binding wins.
 * Both must have the same n_actions. */
void key_config_override(struct key_config *base, const struct key_config *over);
/* The action index a key name is bound to (the first, in action order), or -1. */
int key_config_find(const struct key_config *k, const char *key);
/* The same among the actions of one layer. */
int key_config_find_in(const struct key_config *k, const char *key, int layer);
void key_config_free(struct key_config *k);

/* ---- colors.yaml: scale, diverging, and one {fg, bg, attrs} mapping per role ------------- */

#define COLOR_ATTR_BOLD      (1u << 0)
#define COLOR_ATTR_DIM       (1u << 1)
#define COLOR_ATTR_REVERSE   (1u << 2)
#define COLOR_ATTR_UNDERLINE (1u << 3)

#define COLOR_DEFAULT (-1) /* the terminal's own foreground or background */

struct color_spec {
    int fg, bg;     /* COLOR_DEFAULT, or 0-255 (0-7: black red green yellow blue magenta cyan
                       white, the curses order) */
    unsigned attrs; /* COLOR_ATTR_* bits */
    bool set;       /* the file gives this role; fields it leaves out are default / no attrs */
};

struct color_config {
    struct color_spec *roles; /* roles[r] for role_names[r] (owned) */
    int n_roles;
    char scale[32];     /* sequential scale for weights, one of scale_names; valid if scale_set */
    char diverging[32]; /* diverging scale for signed stages; valid if diverging_set */
    bool scale_set, diverging_set;
};

/* Loads colors.yaml at path. role_names, scale_names and diverging_names are the accepted
 * names; returns an enum config_status. Errors: YAML syntax, top level or a role not a mapping,
 * unknown role or field (nearest suggested), duplicates, bad colour (a name or 0-255), unknown
 * attribute, unknown scale (choices listed), unreadable or oversized file. */
int config_load_colors(struct color_config *out, const char *path, const char *const *role_names,
                       int n_roles, const char *const *scale_names, int n_scales,
                       const char *const *diverging_names, int n_div, struct diag_list *errs);
/* The same on text already in memory. Returns CONFIG_OK or CONFIG_ERROR. */
int config_parse_colors(struct color_config *out, const char *name, const char *text, size_t len,
                        const char *const *role_names, int n_roles, const char *const *scale_names,
                        int n_scales, const char *const *diverging_names, int n_div,
                        struct diag_list *errs);
/* Applies over on top of base: every role and scale over sets replaces base's. */
void color_config_override(struct color_config *base, const struct color_config *over);
void color_config_free(struct color_config *c);

/* ---- where the files are ------------------------------------------------------------------ */

/* The user's file: $XDG_CONFIG_HOME/attnscope/<name> (when set and absolute), else
 * $HOME/.config/attnscope/<name>; NULL if neither variable is usable. The caller frees it. */
char *config_user_path(const char *name);

#endif
