/* actions: the table behind ACTIONS (see actions.h). */
#include "explore/actions.h"

#include <stdio.h>
#include <string.h>

const struct action_info action_table[ACTION_COUNT] = {
#define X(id, name, keys, group, help, run) [ACTION_##id] = {name, keys, group, help},
    ACTIONS(X)
#undef X
};

enum key_layer action_key_layer(enum action a)
{
    return a >= 0 && a < ACTION_COUNT && strcmp(action_table[a].group, "lesson") == 0
               ? KEYLAYER_LESSON
               : KEYLAYER_BASE;
}

/* Key names as the README shows them: `Left` `h`. */
static void print_keys_md(FILE *out, const char *keys)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", keys);
    int first = 1;
    for (char *save = NULL, *k = strtok_r(buf, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
        fprintf(out, "%s`%s`", first ? "" : " ", strcmp(k, "|") == 0 ? "\\|" : k);
        first = 0;
    }
}

void actions_print_markdown(FILE *out)
{
    static const char *const groups[] = {"move", "view", "edit", "file", "lesson", "other"};
    fprintf(out, "| keys | action | what it does |\n| --- | --- | --- |\n");
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        for (int a = 0; a < ACTION_COUNT; a++) {
            if (strcmp(action_table[a].group, groups[g]) != 0)
                continue;
            fprintf(out, "| ");
            print_keys_md(out, action_table[a].default_keys);
            fprintf(out, " | %s | %s |\n", action_table[a].name, action_table[a].help);
        }
}
