/* keys: key names, codes and the keymap (see keys.h). */
#include "ui/keys.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

static const struct {
    const char *name;
    int codes[3];
} named[] = {
    {"Left", {KEY_LEFT}},
    {"Right", {KEY_RIGHT}},
    {"Up", {KEY_UP}},
    {"Down", {KEY_DOWN}},
    {"PgUp", {KEY_PPAGE}},
    {"PgDn", {KEY_NPAGE}},
    {"Home", {KEY_HOME}},
    {"End", {KEY_END}},
    {"Enter", {'\n', '\r', KEY_ENTER}},
    {"Tab", {'\t'}},
    {"BackTab", {KEY_BTAB}},
    {"Space", {' '}},
    {"Esc", {27}},
    {"Backspace", {KEY_BACKSPACE, 127, 8}},
    {"Delete", {KEY_DC}},
};

int keyname_codes(const char *name, int *codes, int max)
{
    size_t len = strlen(name);
    if (len == 1 && name[0] > ' ' && name[0] < 127) {
        codes[0] = name[0];
        return max > 0 ? 1 : 0;
    }
    if (len == 3 && name[0] == 'C' && name[1] == '-' && name[2] >= 'a' && name[2] <= 'z') {
        codes[0] = name[2] & 0x1f;
        return max > 0 ? 1 : 0;
    }
    if ((len == 2 || len == 3) && name[0] == 'F' && name[1] >= '1' && name[1] <= '9' &&
        (len == 2 || (name[2] >= '0' && name[2] <= '9'))) {
        int f = atoi(name + 1); /* digits only: F1x or F+1 are not keys */
        if (f >= 1 && f <= 12) {
            codes[0] = KEY_F(f);
            return max > 0 ? 1 : 0;
        }
    }
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (strcmp(named[i].name, name) == 0) {
            int n = 0;
            for (int j = 0; j < 3 && named[i].codes[j] && n < max; j++)
                codes[n++] = named[i].codes[j];
            return n;
        }
    return 0;
}

bool keyname_valid(const char *name)
{
    /* The terminal keeps these for itself (interrupt, suspend, flow control): a binding to
     * them could never fire. */
    static const char *const reserved[] = {"C-c", "C-z", "C-s", "C-q"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcmp(name, reserved[i]) == 0)
            return false;
    int codes[3];
    return keyname_codes(name, codes, 3) > 0;
}

/* Binds one key name to action a and lists it in the action's display string (whole names
 * only: a cut "F12" must never read as "F1"). */
static void bind_name(struct keymap *km, enum action a, const char *name)
{
    int codes[3];
    int n = keyname_codes(name, codes, 3);
    for (int i = 0; i < n; i++)
        if (codes[i] >= 0 && codes[i] < KEYMAP_SIZE)
            km->by_code[codes[i]] = a;
    size_t used = strlen(km->keys[a]);
    if (used + strlen(name) + 2 <= sizeof(km->keys[a]))
        snprintf(km->keys[a] + used, sizeof(km->keys[a]) - used, "%s%s", used ? " " : "", name);
}

/* Builds the code table and the display strings from a merged key configuration. */
static void build(struct keymap *km, const struct key_config *kc)
{
    for (int i = 0; i < KEYMAP_SIZE; i++)
        km->by_code[i] = ACTION_NONE;
    for (int a = 0; a < ACTION_COUNT && a < kc->n_actions; a++) {
        km->keys[a][0] = '\0';
        for (int k = 0; k < kc->n_keys[a]; k++)
            bind_name(km, (enum action)a, kc->keys[a][k]);
    }
}

void keymap_load(struct keymap *km, const char *shipped_path, const char *user_path,
                 struct diag_list *errs)
{
    const char *names[ACTION_COUNT], *defaults[ACTION_COUNT];
    for (int a = 0; a < ACTION_COUNT; a++) {
        names[a] = action_table[a].name;
        defaults[a] = action_table[a].default_keys;
    }
    struct key_config merged;
    key_config_from_strings(&merged, defaults, ACTION_COUNT);
    const char *paths[2] = {shipped_path, user_path};
    for (int p = 0; p < 2; p++) {
        if (!paths[p])
            continue;
        struct key_config kc;
        if (config_load_keys(&kc, paths[p], names, ACTION_COUNT, keyname_valid, errs) == CONFIG_OK)
            key_config_override(&merged, &kc);
        key_config_free(&kc);
    }
    build(km, &merged);
    key_config_free(&merged);
}

enum action keymap_lookup(const struct keymap *km, int code)
{
    if (code < 0 || code >= KEYMAP_SIZE)
        return ACTION_NONE;
    return km->by_code[code];
}
