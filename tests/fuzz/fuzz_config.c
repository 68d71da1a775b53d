/* fuzz_config: libFuzzer target for keys.yaml and colors.yaml (tests/fuzz/README.md).
 *
 * Each input is read both as keys.yaml and as colors.yaml, with the explorer's own action
 * names, key-name validator and colour roles (as `attnscope check` and the explorer call them).
 * config_load_keys/colors are read_config + config_parse_keys/colors: the fuzzer calls the
 * parse half on the bytes, which spares a temporary file per execution. Invariants: a refused
 * file gives located reasons and sets nothing; an accepted one binds only valid key names, each
 * key once, which the explorer's merge over the defaults then finds; colours are 0-255 or the
 * default, attributes known, scales among the choices. A broken invariant aborts, so libFuzzer
 * reports the input. The same entry point replays tests/fuzz/regressions/config/ (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TARGET "fuzz_config"
#include "fuzz_common.h"

#include "config/config.h"
#include "explore/actions.h"
#include "explore/keys.h"
#include "explore/roles.h"

#define ALL_ATTRS (COLOR_ATTR_BOLD | COLOR_ATTR_DIM | COLOR_ATTR_REVERSE | COLOR_ATTR_UNDERLINE)

/* A refusal has reasons, each printable with its caret excerpt. */
static void check_refusal(const struct diag_list *errs, const uint8_t *data, size_t size)
{
    INVARIANT(errs->n > 0, "a refused file gives no reason");
    INVARIANT(errs->n <= CONFIG_MAX_ERRORS + 1, "%d problems listed", errs->n);
    for (int i = 0; i < errs->n; i++)
        fuzz_check_diag(&errs->items[i], data, size);
}

static bool in_list(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return true;
    return false;
}

static void fuzz_keys(const uint8_t *data, size_t size)
{
    const char *names[ACTION_COUNT], *defaults[ACTION_COUNT];
    int layers[ACTION_COUNT];
    for (int a = 0; a < ACTION_COUNT; a++) {
        names[a] = action_table[a].name;
        defaults[a] = action_table[a].default_keys;
        layers[a] = (int)action_key_layer((enum action)a);
    }
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct key_config kc;
    int rc = config_parse_keys(&kc, "keys.yaml", (const char *)data, size, names, layers,
                               ACTION_COUNT, keyname_valid, &errs);
    INVARIANT(rc == CONFIG_OK || rc == CONFIG_ERROR, "status %d", rc);
    INVARIANT(kc.n_actions == ACTION_COUNT, "n_actions %d", kc.n_actions);
    if (rc == CONFIG_ERROR) {
        check_refusal(&errs, data, size);
        for (int a = 0; a < ACTION_COUNT; a++)
            INVARIANT(!kc.set[a] && kc.n_keys[a] == 0, "a refused file set action %s", names[a]);
    } else {
        INVARIANT(errs.n == 0, "an accepted file has %d problems", errs.n);
        for (int a = 0; a < ACTION_COUNT; a++)
            for (int k = 0; k < kc.n_keys[a]; k++) {
                INVARIANT(kc.set[a], "keys for an unset action %s", names[a]);
                INVARIANT(keyname_valid(kc.keys[a][k]), "invalid key name bound");
                /* Each key once per layer: the first binding found there must be this one. */
                INVARIANT(key_config_find_in(&kc, kc.keys[a][k], layers[a]) == a,
                          "a key bound twice");
                for (int j = 0; j < k; j++)
                    INVARIANT(strcmp(kc.keys[a][j], kc.keys[a][k]) != 0, "a key listed twice");
            }
        /* The explorer's merge: the file's bindings win over the defaults. */
        struct key_config merged;
        key_config_from_strings(&merged, defaults, layers, ACTION_COUNT);
        key_config_override(&merged, &kc);
        for (int a = 0; a < ACTION_COUNT; a++)
            for (int k = 0; kc.set[a] && k < kc.n_keys[a]; k++)
                INVARIANT(key_config_find_in(&merged, kc.keys[a][k], layers[a]) == a,
                          "the merge lost a binding of %s", names[a]);
        key_config_free(&merged);
    }
    key_config_free(&kc);
    attn_diag_list_free(&errs);
}

static void fuzz_colors(const uint8_t *data, size_t size)
{
    struct diag_list errs;
    attn_diag_list_init(&errs);
    struct color_config cc;
    int rc =
        config_parse_colors(&cc, "colors.yaml", (const char *)data, size, role_names, ROLE_COUNT,
                            scale_names, n_scale_names, diverging_names, n_diverging_names, &errs);
    INVARIANT(rc == CONFIG_OK || rc == CONFIG_ERROR, "status %d", rc);
    INVARIANT(cc.n_roles == ROLE_COUNT, "n_roles %d", cc.n_roles);
    if (rc == CONFIG_ERROR) {
        check_refusal(&errs, data, size);
        INVARIANT(!cc.scale_set && !cc.diverging_set, "a refused file set a scale");
        for (int r = 0; r < ROLE_COUNT; r++)
            INVARIANT(!cc.roles[r].set, "a refused file set role %s", role_names[r]);
    } else {
        INVARIANT(errs.n == 0, "an accepted file has %d problems", errs.n);
        for (int r = 0; r < ROLE_COUNT; r++) {
            const struct color_spec *c = &cc.roles[r];
            INVARIANT(c->fg >= COLOR_DEFAULT && c->fg <= 255, "fg %d", c->fg);
            INVARIANT(c->bg >= COLOR_DEFAULT && c->bg <= 255, "bg %d", c->bg);
            INVARIANT((c->attrs & ~ALL_ATTRS) == 0, "attrs %#x", c->attrs);
        }
        INVARIANT(!cc.scale_set || in_list(cc.scale, scale_names, n_scale_names),
                  "unknown scale accepted");
        INVARIANT(!cc.diverging_set || in_list(cc.diverging, diverging_names, n_diverging_names),
                  "unknown diverging scale accepted");
    }
    color_config_free(&cc);
    attn_diag_list_free(&errs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_keys(data, size);
    fuzz_colors(data, size);
    return 0;
}
