/* keys: key names, codes and the keymap (see keys.h). */
#include "explore/keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "config/config.h"

/* Named keys: key codes, or characters (Enter is C-m, C-j and the keypad's Enter). */
#define CODE(c)                                                                                    \
    {                                                                                              \
        true, (uint32_t)KEYCODE_##c                                                                \
    }
#define CHAR(c)                                                                                    \
    {                                                                                              \
        false, (uint32_t)(c)                                                                       \
    }
static const struct {
    const char *name;
    struct key keys[3];
    int n;
} named[] = {
    {"Left", {CODE(LEFT)}, 1},
    {"Right", {CODE(RIGHT)}, 1},
    {"Up", {CODE(UP)}, 1},
    {"Down", {CODE(DOWN)}, 1},
    {"PgUp", {CODE(PAGE_UP)}, 1},
    {"PgDn", {CODE(PAGE_DOWN)}, 1},
    {"Home", {CODE(HOME)}, 1},
    {"End", {CODE(END)}, 1},
    {"Enter", {CHAR('\n'), CHAR('\r'), CODE(ENTER)}, 3},
    {"Tab", {CHAR('\t')}, 1},
    {"BackTab", {CODE(BACKTAB)}, 1},
    {"Space", {CHAR(' ')}, 1},
    {"Esc", {CHAR(27)}, 1},
    {"Backspace", {CODE(BACKSPACE), CHAR(127), CHAR(8)}, 3},
    {"Delete", {CODE(DELETE)}, 1},
};

int keyname_keys(const char *name, struct key *keys, int max)
{
    if (max < 1)
        return 0;
    size_t len = strlen(name);
    uint32_t cp;
    int n = attn_utf8_decode(name, &cp);
    /* One printable character: ASCII, or any Unicode one past the C1 controls. */
    if (n > 0 && (size_t)n == len && ((cp > ' ' && cp < 127) || cp >= 0xA0)) {
        keys[0] = (struct key){false, cp};
        return 1;
    }
    if (len == 3 && name[0] == 'C' && name[1] == '-' && name[2] >= 'a' && name[2] <= 'z') {
        keys[0] = (struct key){false, (uint32_t)(name[2] & 0x1f)};
        return 1;
    }
    if ((len == 2 || len == 3) && name[0] == 'F' && name[1] >= '1' && name[1] <= '9' &&
        (len == 2 || (name[2] >= '0' && name[2] <= '9'))) {
        int f = atoi(name + 1); /* digits only: F1x or F+1 are not keys */
        if (f >= 1 && f <= 12) {
            keys[0] = (struct key){true, (uint32_t)(KEYCODE_F1 + f - 1)};
            return 1;
        }
    }
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (strcmp(named[i].name, name) == 0) {
            int k = 0;
            for (; k < named[i].n && k < max; k++)
                keys[k] = named[i].keys[k];
            return k;
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
    struct key keys[3];
    return keyname_keys(name, keys, 3) > 0;
}

static void bind_key(struct keymap *map, struct key k, enum action a)
{
    struct keylayer *km = &map->layers[action_key_layer(a)];
    if (k.is_code) {
        if (k.value < KEYCODE_COUNT)
            km->by_code[k.value] = a;
    } else if (k.value < 128) {
        km->by_char[k.value] = a;
    } else {
        for (int i = 0; i < km->n_wide; i++)
            if (km->wide[i].cp == k.value) {
                km->wide[i].action = a;
                return;
            }
        if (km->n_wide < KEYMAP_WIDE) {
            km->wide[km->n_wide].cp = k.value;
            km->wide[km->n_wide++].action = a;
        }
    }
}

/* Binds one key name to action a and lists it in the action's display string (whole names
 * only: a cut "F12" must never read as "F1"). */
static void bind_name(struct keymap *km, enum action a, const char *name)
{
    struct key keys[3];
    int n = keyname_keys(name, keys, 3);
    for (int i = 0; i < n; i++)
        bind_key(km, keys[i], a);
    size_t used = strlen(km->keys[a]);
    if (used + strlen(name) + 2 <= sizeof(km->keys[a]))
        snprintf(km->keys[a] + used, sizeof(km->keys[a]) - used, "%s%s", used ? " " : "", name);
}

/* Builds the code table and the display strings from a merged key configuration. */
static void build(struct keymap *km, const struct key_config *kc)
{
    for (int l = 0; l < KEYLAYER_COUNT; l++) {
        for (int i = 0; i < 128; i++)
            km->layers[l].by_char[i] = ACTION_NONE;
        for (int i = 0; i < KEYCODE_COUNT; i++)
            km->layers[l].by_code[i] = ACTION_NONE;
        km->layers[l].n_wide = 0;
    }
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
    int layers[ACTION_COUNT];
    for (int a = 0; a < ACTION_COUNT; a++) {
        names[a] = action_table[a].name;
        defaults[a] = action_table[a].default_keys;
        layers[a] = (int)action_key_layer((enum action)a);
    }
    struct key_config merged;
    key_config_from_strings(&merged, defaults, layers, ACTION_COUNT);
    const char *paths[2] = {shipped_path, user_path};
    for (int p = 0; p < 2; p++) {
        if (!paths[p])
            continue;
        struct key_config kc;
        if (config_load_keys(&kc, paths[p], names, layers, ACTION_COUNT, keyname_valid, errs) ==
            CONFIG_OK)
            key_config_override(&merged, &kc);
        key_config_free(&kc);
    }
    build(km, &merged);
    key_config_free(&merged);
}

static enum action lookup(const struct keylayer *km, struct key k)
{
    if (k.is_code)
        return k.value < KEYCODE_COUNT ? km->by_code[k.value] : ACTION_NONE;
    if (k.value < 128)
        return km->by_char[k.value];
    for (int i = 0; i < km->n_wide; i++)
        if (km->wide[i].cp == k.value)
            return km->wide[i].action;
    return ACTION_NONE;
}

enum action keymap_lookup(const struct keymap *km, struct key k)
{
    return lookup(&km->layers[KEYLAYER_BASE], k);
}

enum action keymap_lookup_mode(const struct keymap *km, struct key k, bool lesson)
{
    enum action a = lesson ? lookup(&km->layers[KEYLAYER_LESSON], k) : ACTION_NONE;
    return a != ACTION_NONE ? a : keymap_lookup(km, k);
}

void keymap_key_display(char *out, size_t size, const struct keymap *km, enum action a)
{
    static const struct {
        const char *name, *glyph;
    } glyphs[] = {{"Left", "\u2190"}, {"Right", "\u2192"}, {"Up", "\u2191"}, {"Down", "\u2193"}};
    const char *keys = a < 0 || a >= ACTION_COUNT ? ""
                       : km                       ? km->keys[a]
                                                  : action_table[a].default_keys;
    char first[32] = "";
    if (sscanf(keys, "%31s", first) != 1)
        snprintf(first, sizeof(first), "(unbound)");
    for (size_t i = 0; i < sizeof(glyphs) / sizeof(glyphs[0]); i++)
        if (strcmp(first, glyphs[i].name) == 0) {
            snprintf(out, size, "%s", glyphs[i].glyph);
            return;
        }
    snprintf(out, size, "%s", first);
}
