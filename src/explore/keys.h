/* keys: key names (as written in keys.yaml and shown in help) <-> keys, and the keymap built
 * from the action table plus the user's configuration.
 *
 * A key is a character or a named key, never a bare int: as ints, curses' codes start at 0401,
 * so a typed 'ą' (U+0105) would be KEY_RIGHT and 'ć' KEY_BACKSPACE. Like tig's struct key, the
 * two kinds are kept apart from the terminal to the action. Named keys have codes of their own
 * here; src/ui translates the terminal's (curses') into them, so nothing here needs curses.
 */
#ifndef ATTNSCOPE_KEYS_H
#define ATTNSCOPE_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "explore/actions.h"

/* The named keys: arrows, paging, Enter on the keypad, F1 to F12. */
enum keycode {
    KEYCODE_NONE,
    KEYCODE_LEFT,
    KEYCODE_RIGHT,
    KEYCODE_UP,
    KEYCODE_DOWN,
    KEYCODE_PAGE_UP,
    KEYCODE_PAGE_DOWN,
    KEYCODE_HOME,
    KEYCODE_END,
    KEYCODE_ENTER, /* the keypad's; the main Enter is the character C-m */
    KEYCODE_BACKTAB,
    KEYCODE_BACKSPACE, /* the terminal's named key; many send the character 127 instead */
    KEYCODE_DELETE,
    KEYCODE_F1,
    KEYCODE_F12 = KEYCODE_F1 + 11,
    KEYCODE_COUNT
};

struct key {
    bool is_code;   /* value is an enum keycode; else a Unicode character (C-x included) */
    uint32_t value; /* the code, or the character's code point */
};

#define KEYMAP_WIDE 64 /* non-ASCII characters bound in keys.yaml (é, ą, ...) */

/* The actions of one key layer (explore/actions.h), by key. */
struct keylayer {
    enum action by_char[128];           /* ASCII characters, control characters included */
    enum action by_code[KEYCODE_COUNT]; /* named keys */
    struct {
        uint32_t cp;
        enum action action;
    } wide[KEYMAP_WIDE];
    int n_wide;
};

struct keymap {
    struct keylayer layers[KEYLAYER_COUNT];
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
/* The first key bound to action a, as the status line and messages name it: arrows as glyphs
 * (←), else the key's name (i, Space, C-l); "(unbound)" when none is. km NULL: the default
 * keys (explore/actions.h). */
void keymap_key_display(char *out, size_t size, const struct keymap *km, enum action a);
/* The action of key k outside lesson mode. */
enum action keymap_lookup(const struct keymap *km, struct key k);
/* The same in lesson mode (lesson true): a lesson key comes first, then the others. */
enum action keymap_lookup_mode(const struct keymap *km, struct key k, bool lesson);

#endif
