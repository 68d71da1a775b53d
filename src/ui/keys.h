/* keys: key names (as written in keys.yaml and shown in help) <-> curses key codes, and the
 * keymap built from the action table plus the user's configuration. */
#ifndef ATTNSCOPE_KEYS_H
#define ATTNSCOPE_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/diag.h"
#include "ui/actions.h"

#define KEYMAP_SIZE 1024 /* curses key codes are below KEY_MAX (0777) */

struct keymap {
    enum action by_code[KEYMAP_SIZE];
    char keys[ACTION_COUNT][64]; /* the bound key names, space-separated, for help and status */
};

/* True for a key name of the notation: a printable character, Left, C-x, F5, ... */
bool keyname_valid(const char *name);
/* Fills codes (up to max) with the curses codes a name stands for; returns how many. */
int keyname_codes(const char *name, int *codes, int max);

/* Applies configs/keys.yaml and then the user's keys.yaml over the defaults. A file with errors
 * is ignored as a whole; its problems are appended to errs for the UI to show. */
void keymap_load(struct keymap *km, const char *shipped_path, const char *user_path,
                 struct diag_list *errs);
enum action keymap_lookup(const struct keymap *km, int code);

#endif
