/* keys: key names (as written in keys.yaml and shown in help) <-> keys, and the keymap built
 * from the action table plus the user's configuration.
 *
 * A key is a character or a curses key code, never a bare int: curses codes start at 0401, so
 * as ints a typed 'ą' (U+0105) would be KEY_RIGHT and 'ć' KEY_BACKSPACE. Like tig's struct key,
 * the two kinds are kept apart from the terminal to the action.
 */
#ifndef ATTNSCOPE_KEYS_H
#define ATTNSCOPE_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "ui/actions.h"

struct key {
    bool is_code;   /* value is a curses KEY_* code; else a Unicode character (C-x included) */
    uint32_t value; /* the code, or the character's code point */
};

#define KEYMAP_CODES 512 /* curses key codes are below KEY_MAX (0777) */
#define KEYMAP_WIDE  64  /* non-ASCII characters bound in keys.yaml (é, ą, ...) */

struct keymap {
    enum action by_char[128];          /* ASCII characters, control characters included */
    enum action by_code[KEYMAP_CODES]; /* curses key codes */
    struct {
        uint32_t cp;
        enum action action;
    } wide[KEYMAP_WIDE];
    int n_wide;
    char keys[ACTION_COUNT][64]; /* the bound key names, space-separated, for help and status */
};

/* True for a key name of the notation: a printable character (any Unicode one), Left, C-x, F5,
 * ... and not one the terminal keeps for itself (C-c, C-z, C-s, C-q). */
bool keyname_valid(const char *name);
/* Fills keys (up to max) with the keys a name stands for ("Enter" is three); returns how many,
 * 0 for an unknown name. */
int keyname_keys(const char *name, struct key *keys, int max);

/* Applies configs/keys.yaml and then the user's keys.yaml over the defaults. A file with errors
 * is ignored as a whole; its problems are appended to errs for the UI to show. */
void keymap_load(struct keymap *km, const char *shipped_path, const char *user_path,
                 struct diag_list *errs);
enum action keymap_lookup(const struct keymap *km, struct key k);

#endif
