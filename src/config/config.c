/* config: keys.yaml and colors.yaml (see config.h).
 *
 * The file is read into the node tree of src/yaml, like a scene file (an alias points at its
 * anchor's node, so nothing is expanded), and walked at most three levels deep. Every problem is
 * collected with its location, so a user sees all of them at once; any problem makes the whole file
 * ignored. Out of memory is attn_fatal_abort(): src/config is the program's, not libattnscope's
 * (whose functions return out of memory as an error), and a configuration loader has no sensible
 * way to go on.
 */
#include "config/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/cnum.h"
#include "common/fatal.h"
#include "common/fsutil.h"
#include "yaml/suggest.h"
#include "yaml/yamltree.h"
#include "yaml/ydiag.h"

/* ---- small helpers ------------------------------------------------------------------------ */

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        attn_fatal_abort("out of memory while reading the configuration");
    return q;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        attn_fatal_abort("out of memory while reading the configuration");
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xrealloc(NULL, n);
    memcpy(p, s, n);
    return p;
}

/* A name from the file as shown in a message: at most 40 characters, control characters
 * replaced, so a stray binary file cannot garble the error panel. */
struct shown {
    char s[64];
};

static struct shown show(const char *s)
{
    struct shown out;
    size_t i = 0;
    for (; s[i] && i < 40; i++)
        out.s[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    if (s[i]) {
        memcpy(out.s + i, "...", 3);
        i += 3;
    }
    out.s[i] = '\0';
    return out;
}

/* The choice nearest to name (see attn_suggest_nearest), or NULL when nothing is close enough to be
 * a likely typo. */
static const char *nearest(const char *name, const char *const *choices, int n)
{
    int i = attn_suggest_nearest(name, choices, n, NULL);
    return i >= 0 ? choices[i] : NULL;
}

static int index_of(const char *name, const char *const *choices, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, choices[i]) == 0)
            return i;
    return -1;
}

/* "a, b or c" into buf. */
static const char *join_choices(char *buf, size_t size, const char *const *choices, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < size; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        int w = snprintf(buf + used, size - used, "%s%s", sep, choices[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

/* ---- one file being checked --------------------------------------------------------------- */

/* Nothing in a configuration file nests deeper than this (colors.yaml needs 3 levels). The tree
 * refuses a deeper file as soon as the limit is passed: libyaml's scanner takes time quadratic
 * in the depth of flow collections, so `[[[[...` filling 1 MiB would hang the explorer at start.
 */
#define MAX_DEPTH 16

struct ctx {
    const char *file;  /* name used in diagnostics */
    struct ydiag yd;   /* its problems, in src/yaml's words */
    struct ytree tree; /* the file's document; node indices below point into it */
    int where;         /* the mapping key being checked (see located), or -1 */
};

static int cfg_error_at(struct ctx *c, struct ypos pos, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records a problem at pos; returns -1. */
static int cfg_error_at(struct ctx *c, struct ypos pos, const char *path, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    attn_ydiag_add(&c->yd, pos, path, "%s", msg);
    return -1;
}

static const struct ynode *node_of(const struct ctx *c, int i)
{
    return ytree_node(&c->tree, i);
}

/* Where to report a problem with node. An alias (`undo: *k`) stands for the node of its anchor,
 * which lies earlier in the file; then the mapping key being checked is the better place. */
static struct ypos located(const struct ctx *c, int node)
{
    const struct ynode *n = node_of(c, node);
    if (c->where >= 0) {
        const struct ynode *w = node_of(c, c->where);
        if (n->line < w->line || (n->line == w->line && n->col < w->col))
            return ytree_pos(&c->tree, c->where);
    }
    return ytree_pos(&c->tree, node);
}

#define cfg_error(c, node, path, ...) cfg_error_at((c), located((c), (node)), (path), __VA_ARGS__)

static bool too_many(const struct ctx *c)
{
    return c->yd.stopped;
}

/* A problem of the YAML text itself: syntax, encoding, depth, a second document. Anchors and
 * aliases are accepted here (ytree_opts.aliases), so they are never reported. */
static bool yaml_problem(void *ctx, const struct yproblem *p)
{
    struct ctx *c = ctx;
    return attn_ydiag_stream(&c->yd, p, "configuration file");
}

/* Reads text into c->tree, refusing a second document; -1 when the text is not one well-formed
 * YAML document (the problems are reported). The caller frees c->tree either way. */
static int load_tree(struct ctx *c, const char *text, size_t len)
{
    /* A configuration is a few hundred values: anything far beyond is not one. */
    const struct ytree_opts opts = {
        .max_depth = MAX_DEPTH, .max_nodes = 1 << 16, .max_items = 4096, .aliases = true};
    if (attn_ytree_build(&c->tree, text, len, &opts, yaml_problem, c) != 0 || c->yd.n)
        return -1;
    return 0;
}

/* Node i, an alias replaced by its anchor's node. */
static int resolved(const struct ctx *c, int i)
{
    return ytree_resolve(&c->tree, i);
}

/* Steps through a mapping's children: the key and value at *at (aliases resolved), then moves
 * *at to the next pair. Returns false after the last pair. */
static bool next_pair(const struct ctx *c, int *at, int *k, int *v)
{
    if (*at < 0 || node_of(c, *at)->next < 0)
        return false;
    int value = node_of(c, *at)->next;
    *k = resolved(c, *at);
    *v = resolved(c, value);
    *at = node_of(c, value)->next;
    return true;
}

static const char *scalar_of(const struct ctx *c, int n)
{
    return ytree_str(&c->tree, n);
}

/* A scalar with a NUL inside ("a\0b") is never a valid name. */
static bool scalar_has_nul(const struct ctx *c, int n)
{
    return strlen(scalar_of(c, n)) != node_of(c, n)->u.s.len;
}

/* An empty plain scalar is how YAML writes "nothing" (`quit:`). */
static bool is_null(const struct ctx *c, int n)
{
    if (node_of(c, n)->type != YNODE_SCALAR || !node_of(c, n)->plain)
        return false;
    const char *s = scalar_of(c, n);
    return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0;
}

/* The mapping key as a name; reports and returns NULL when it is not a plain scalar. */
static const char *key_name(struct ctx *c, int k)
{
    if (node_of(c, k)->type != YNODE_SCALAR || scalar_has_nul(c, k)) {
        char shown[YDIAG_SHOW_MAX];
        cfg_error(c, k, "", "keys must be plain names, got %s",
                  attn_ydiag_show(&c->tree, k, shown, sizeof(shown)));
        return NULL;
    }
    return scalar_of(c, k);
}

/* ---- keys.yaml ---------------------------------------------------------------------------- */

static void key_config_alloc(struct key_config *k, int n_actions, const int *layers)
{
    if (n_actions < 0)
        n_actions = 0;
    k->n_actions = n_actions;
    k->keys = xcalloc((size_t)n_actions, sizeof(*k->keys));
    k->n_keys = xcalloc((size_t)n_actions, sizeof(*k->n_keys));
    k->set = xcalloc((size_t)n_actions, sizeof(*k->set));
    k->layer = NULL;
    if (layers) {
        k->layer = xcalloc((size_t)n_actions ? (size_t)n_actions : 1, sizeof(*k->layer));
        memcpy(k->layer, layers, (size_t)n_actions * sizeof(*k->layer));
    }
}

static int layer_of(const struct key_config *k, int a)
{
    return k->layer ? k->layer[a] : 0;
}

static void key_config_clear_action(struct key_config *k, int a)
{
    for (int i = 0; i < k->n_keys[a]; i++)
        free(k->keys[a][i]);
    free(k->keys[a]);
    k->keys[a] = NULL;
    k->n_keys[a] = 0;
    k->set[a] = false;
}

static void key_config_add(struct key_config *k, int a, const char *key)
{
    k->keys[a] = xrealloc(k->keys[a], (size_t)(k->n_keys[a] + 1) * sizeof(*k->keys[a]));
    k->keys[a][k->n_keys[a]++] = xstrdup(key);
    k->set[a] = true;
}

void key_config_free(struct key_config *k)
{
    if (k->keys)
        for (int a = 0; a < k->n_actions; a++)
            key_config_clear_action(k, a);
    free(k->keys);
    free(k->n_keys);
    free(k->set);
    free(k->layer);
    memset(k, 0, sizeof(*k));
}

int key_config_find(const struct key_config *k, const char *key)
{
    return key_config_find_in(k, key, -1);
}

int key_config_find_in(const struct key_config *k, const char *key, int layer)
{
    for (int a = 0; a < k->n_actions; a++)
        if (layer < 0 || layer_of(k, a) == layer)
            for (int i = 0; i < k->n_keys[a]; i++)
                if (strcmp(k->keys[a][i], key) == 0)
                    return a;
    return -1;
}

void key_config_from_strings(struct key_config *out, const char *const *keys, const int *layers,
                             int n_actions)
{
    key_config_alloc(out, n_actions, layers);
    for (int a = 0; a < n_actions; a++) {
        if (!keys[a])
            continue;
        out->set[a] = true;
        const char *p = keys[a];
        while (*p) {
            while (*p == ' ')
                p++;
            size_t n = strcspn(p, " ");
            if (n == 0)
                break;
            char *name = xcalloc(n + 1, 1);
            memcpy(name, p, n);
            key_config_add(out, a, name);
            free(name);
            p += n;
        }
    }
}

void key_config_override(struct key_config *base, const struct key_config *over)
{
    int n = base->n_actions < over->n_actions ? base->n_actions : over->n_actions;
    /* First take the keys over binds away from the actions it leaves alone. */
    for (int b = 0; b < n; b++) {
        if (over->set[b])
            continue;
        int kept = 0;
        for (int i = 0; i < base->n_keys[b]; i++) {
            /* only a binding in b's own layer takes the key away from b */
            int owner = key_config_find_in(over, base->keys[b][i], layer_of(base, b));
            if (owner >= 0 && owner != b)
                free(base->keys[b][i]);
            else
                base->keys[b][kept++] = base->keys[b][i];
        }
        base->n_keys[b] = kept;
    }
    for (int a = 0; a < n; a++) {
        if (!over->set[a])
            continue;
        key_config_clear_action(base, a);
        for (int i = 0; i < over->n_keys[a]; i++)
            key_config_add(base, a, over->keys[a][i]);
        base->set[a] = true;
    }
}

/* A hint for a key name the notation does not know, e.g. "Ctrl+x" -> "C-x", "pgdn" -> "PgDn".
 * Candidates are checked with valid_key, so the hint is never itself wrong. */
static bool key_hint(char *out, size_t size, const char *name, bool (*valid_key)(const char *))
{
    static const char *const prefixes[] = {"Ctrl+", "Ctrl-", "Control+", "Control-", "C+", "^"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t n = strlen(prefixes[i]);
        if (strncasecmp(name, prefixes[i], n) == 0 && name[n] && !name[n + 1]) {
            snprintf(out, size, "C-%c", tolower((unsigned char)name[n]));
            if (valid_key(out))
                return true;
        }
    }
    if (name[0] == 'C' && name[1] == '-' && name[2] && !name[3]) {
        snprintf(out, size, "C-%c", tolower((unsigned char)name[2]));
        if (valid_key(out))
            return true;
    }
    static const struct {
        const char *alias, *name;
    } aliases[] = {
        {"left", "Left"},
        {"right", "Right"},
        {"up", "Up"},
        {"down", "Down"},
        {"pgup", "PgUp"},
        {"pageup", "PgUp"},
        {"page-up", "PgUp"},
        {"page_up", "PgUp"},
        {"prior", "PgUp"},
        {"pgdn", "PgDn"},
        {"pgdown", "PgDn"},
        {"pagedown", "PgDn"},
        {"page-down", "PgDn"},
        {"page_down", "PgDn"},
        {"next", "PgDn"},
        {"home", "Home"},
        {"end", "End"},
        {"enter", "Enter"},
        {"return", "Enter"},
        {"ret", "Enter"},
        {"cr", "Enter"},
        {"tab", "Tab"},
        {"backtab", "BackTab"},
        {"s-tab", "BackTab"},
        {"shift-tab", "BackTab"},
        {"shift+tab", "BackTab"},
        {"space", "Space"},
        {" ", "Space"},
        {"spc", "Space"},
        {"esc", "Esc"},
        {"escape", "Esc"},
        {"backspace", "Backspace"},
        {"bs", "Backspace"},
        {"delete", "Delete"},
        {"del", "Delete"},
    };
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcasecmp(name, aliases[i].alias) == 0 && valid_key(aliases[i].name)) {
            snprintf(out, size, "%s", aliases[i].name);
            return true;
        }
    if ((name[0] == 'f' || name[0] == 'F') && isdigit((unsigned char)name[1]) &&
        strlen(name) <= 3) {
        snprintf(out, size, "F%s", name + 1);
        if (strcmp(out, name) != 0 && valid_key(out))
            return true;
    }
    return false;
}

/* Where each key is bound so far in this file, to catch one key given to two actions. */
struct binding {
    const char *key; /* points into the tree */
    int action;
};

struct key_parse {
    struct ctx *c;
    struct key_config *out;
    const char *const *names;
    const int *layers; /* NULL: all one layer */
    bool (*valid_key)(const char *);
    struct binding *bound;
    int n_bound, cap_bound;
};

static void parse_one_key(struct key_parse *kp, int a, int item)
{
    struct ctx *c = kp->c;
    const char *action = kp->names[a];
    if (node_of(c, item)->type != YNODE_SCALAR) {
        char shown[YDIAG_SHOW_MAX];
        cfg_error(c, item, action, "each key of '%s' must be a key name, got %s", action,
                  attn_ydiag_show(&c->tree, item, shown, sizeof(shown)));
        return;
    }
    const char *key = scalar_of(c, item);
    if (scalar_has_nul(c, item) || !kp->valid_key(key)) {
        /* The terminal keeps these for interrupt, suspend and flow control; they never reach a
         * program in cbreak mode, so a binding to one could never fire. */
        static const char *const reserved[] = {"C-c", "C-z", "C-s", "C-q"};
        for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
            if (strcmp(key, reserved[i]) == 0) {
                cfg_error(c, item, action,
                          "key '%s' belongs to the terminal (interrupt, suspend, flow control) "
                          "and cannot be bound",
                          key);
                return;
            }
        char hint[64];
        if (key_hint(hint, sizeof(hint), key, kp->valid_key))
            cfg_error(c, item, action, "unknown key name '%s' (write %s)", show(key).s, hint);
        else if (strchr(key, ' '))
            cfg_error(c, item, action,
                      "unknown key name '%s' (several keys are written as a list: [a, b])",
                      show(key).s);
        else
            cfg_error(c, item, action,
                      "unknown key name '%s' (write a character like q, a name like Left, "
                      "PgDn or Enter, C-x, or F1)",
                      show(key).s);
        return;
    }
    for (int i = 0; i < kp->n_bound; i++) {
        if (strcmp(kp->bound[i].key, key) != 0)
            continue;
        if (kp->layers && kp->layers[kp->bound[i].action] != kp->layers[a])
            continue; /* another layer's: it acts in another mode */
        if (kp->bound[i].action == a)
            cfg_error(c, item, action, "key '%s' is given twice for %s", show(key).s, action);
        else
            cfg_error(c, item, action, "key '%s' is bound to both %s and %s", show(key).s,
                      kp->names[kp->bound[i].action], action);
        return;
    }
    if (kp->n_bound == kp->cap_bound) {
        kp->cap_bound = kp->cap_bound ? 2 * kp->cap_bound : 64;
        kp->bound = xrealloc(kp->bound, (size_t)kp->cap_bound * sizeof(*kp->bound));
    }
    kp->bound[kp->n_bound++] = (struct binding){key, a};
    key_config_add(kp->out, a, key);
}

static void parse_keys_root(struct key_parse *kp, int root)
{
    struct ctx *c = kp->c;
    struct key_config *out = kp->out;
    if (node_of(c, root)->type != YNODE_MAP) {
        cfg_error(c, root, "",
                  "keys.yaml must be a mapping of action names to keys, like `quit: q`");
        return;
    }
    int *first_line = xcalloc((size_t)out->n_actions, sizeof(int));
    for (int at = node_of(c, root)->u.c.first, k, v; !too_many(c) && next_pair(c, &at, &k, &v);) {
        c->where = k;
        const char *name = key_name(c, k);
        if (!name)
            continue;
        int a = index_of(name, kp->names, out->n_actions);
        char msg[DIAG_MSG_MAX];
        if (a < 0) {
            cfg_error(c, k, name, "%s",
                      attn_ydiag_unknown(msg, sizeof(msg), "action", name, NULL, kp->names,
                                         out->n_actions, "configs/keys.yaml lists them all"));
            continue;
        }
        if (first_line[a]) {
            cfg_error(c, k, name, "%s",
                      attn_ydiag_duplicate(msg, sizeof(msg), name, first_line[a]));
            continue;
        }
        first_line[a] = node_of(c, k)->line + 1;
        out->set[a] = true; /* also for `quit: []`, which leaves quit without a key */
        if (is_null(c, v)) {
            cfg_error(c, v, name, "no key given for %s (write [] to leave it without a key)", name);
        } else if (node_of(c, v)->type == YNODE_SCALAR) {
            parse_one_key(kp, a, v);
        } else if (node_of(c, v)->type == YNODE_SEQ) {
            for (int it = node_of(c, v)->u.c.first; it >= 0 && !too_many(c);
                 it = node_of(c, it)->next)
                parse_one_key(kp, a, resolved(c, it));
        } else {
            cfg_error(c, v, name, "'%s' must be a key name or a list of key names, got a mapping",
                      name);
        }
    }
    free(first_line);
}

int config_parse_keys(struct key_config *out, const char *name, const char *text, size_t len,
                      const char *const *action_names, const int *action_layers, int n_actions,
                      bool (*valid_key)(const char *name), struct diag_list *errs)
{
    key_config_alloc(out, n_actions, action_layers);
    struct diag_list local;
    attn_diag_list_init(&local);
    struct ctx c = {.file = name ? name : "", .where = -1};
    attn_ydiag_init(&c.yd, c.file, &c.tree, errs ? errs : &local, CONFIG_MAX_ERRORS);
    if (load_tree(&c, text, len) == 0 && c.tree.root >= 0) {
        struct key_parse kp = {&c, out, action_names, action_layers, valid_key, NULL, 0, 0};
        parse_keys_root(&kp, resolved(&c, c.tree.root));
        free(kp.bound);
    }
    attn_ydiag_finish(&c.yd);
    attn_ytree_free(&c.tree);
    attn_diag_list_free(&local);
    if (c.yd.n) {
        key_config_free(out);
        key_config_alloc(out, n_actions, action_layers);
        return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

/* Reads path; CONFIG_MISSING when it does not exist. */
static int read_config(char **text, size_t *len, const char *path, struct diag_list *errs)
{
    *text = NULL;
    *len = 0;
    if (!path)
        return CONFIG_MISSING;
    struct stat st;
    if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
        return CONFIG_MISSING;
    struct diag d;
    attn_diag_clear(&d);
    if (attn_fsutil_read_file(text, len, path, CONFIG_MAX_BYTES, &d) != 0) {
        if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
            return CONFIG_MISSING; /* removed between the two calls */
        if (!d.file[0])
            snprintf(d.file, sizeof(d.file), "%s", path);
        if (errs)
            attn_diag_list_push(errs, &d);
        return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

int config_load_keys(struct key_config *out, const char *path, const char *const *action_names,
                     const int *action_layers, int n_actions, bool (*valid_key)(const char *name),
                     struct diag_list *errs)
{
    char *text;
    size_t len;
    int rc = read_config(&text, &len, path, errs);
    if (rc != CONFIG_OK) {
        key_config_alloc(out, n_actions, action_layers);
        return rc;
    }
    rc = config_parse_keys(out, path, text, len, action_names, action_layers, n_actions, valid_key,
                           errs);
    free(text);
    return rc;
}

/* ---- colors.yaml -------------------------------------------------------------------------- */

static const char *const color_names[] = {"black", "red",     "green", "yellow",
                                          "blue",  "magenta", "cyan",  "white"};
static const char *const attr_names[] = {"bold", "dim", "reverse", "underline"};
static const unsigned attr_bits[] = {COLOR_ATTR_BOLD, COLOR_ATTR_DIM, COLOR_ATTR_REVERSE,
                                     COLOR_ATTR_UNDERLINE};
static const char *const field_names[] = {"fg", "bg", "attrs"};

static void color_config_alloc(struct color_config *c, int n_roles)
{
    memset(c, 0, sizeof(*c));
    if (n_roles < 0)
        n_roles = 0;
    c->n_roles = n_roles;
    c->roles = xcalloc((size_t)n_roles, sizeof(*c->roles));
    for (int r = 0; r < n_roles; r++)
        c->roles[r] = (struct color_spec){COLOR_DEFAULT, COLOR_DEFAULT, 0, false};
}

void color_config_free(struct color_config *c)
{
    free(c->roles);
    memset(c, 0, sizeof(*c));
}

void color_config_override(struct color_config *base, const struct color_config *over)
{
    int n = base->n_roles < over->n_roles ? base->n_roles : over->n_roles;
    for (int r = 0; r < n; r++)
        if (over->roles[r].set)
            base->roles[r] = over->roles[r];
    if (over->scale_set) {
        memcpy(base->scale, over->scale, sizeof(base->scale));
        base->scale_set = true;
    }
    if (over->diverging_set) {
        memcpy(base->diverging, over->diverging, sizeof(base->diverging));
        base->diverging_set = true;
    }
}

/* fg or bg: default, a colour name, or 0-255. */
static int parse_color(struct ctx *c, int v, const char *path, int *out)
{
    if (node_of(c, v)->type != YNODE_SCALAR || is_null(c, v)) {
        char shown[YDIAG_SHOW_MAX];
        return cfg_error(c, v, path, "'%s' must be a colour: a name such as red, or 0-255, got %s",
                         path, attn_ydiag_show(&c->tree, v, shown, sizeof(shown)));
    }
    const char *s = scalar_of(c, v);
    if (strcmp(s, "default") == 0) {
        *out = COLOR_DEFAULT;
        return 0;
    }
    int i = index_of(s, color_names, 8);
    if (i >= 0) {
        *out = i;
        return 0;
    }
    size_t n = strlen(s);
    if (n > 0 && strspn(s, "0123456789") == n && !scalar_has_nul(c, v)) {
        long long value = 1000;
        if (attn_cnum_parse_ll(s, &value) != CNUM_OK || value > 1000)
            value = 1000; /* a long run of digits */
        if (value > 255)
            return cfg_error(c, v, path, "colour %s is out of range (0-255)", show(s).s);
        *out = (int)value;
        return 0;
    }
    static const char *const all_names[] = {"default", "black",   "red",  "green", "yellow",
                                            "blue",    "magenta", "cyan", "white"};
    const char *near = nearest(s, all_names, 9);
    if (near)
        return cfg_error(c, v, path, "bad colour '%s' (did you mean '%s'?)", show(s).s, near);
    return cfg_error(c, v, path,
                     "bad colour '%s' (write default, black, red, green, yellow, blue, magenta, "
                     "cyan, white or a number 0-255)",
                     show(s).s);
}

static int parse_attr(struct ctx *c, int v, const char *path, unsigned *attrs)
{
    if (node_of(c, v)->type != YNODE_SCALAR || is_null(c, v)) {
        char shown[YDIAG_SHOW_MAX];
        return cfg_error(c, v, path,
                         "each attribute must be a name: bold, dim, reverse or underline, got %s",
                         attn_ydiag_show(&c->tree, v, shown, sizeof(shown)));
    }
    const char *s = scalar_of(c, v);
    int i = index_of(s, attr_names, 4);
    if (i >= 0 && !scalar_has_nul(c, v)) {
        *attrs |= attr_bits[i];
        return 0;
    }
    const char *near = nearest(s, attr_names, 4);
    if (near)
        return cfg_error(c, v, path, "unknown attribute '%s' (did you mean '%s'?)", show(s).s,
                         near);
    return cfg_error(c, v, path, "unknown attribute '%s' (choose bold, dim, reverse or underline)",
                     show(s).s);
}

static void parse_role(struct ctx *c, const char *role, int v, struct color_spec *spec)
{
    if (node_of(c, v)->type != YNODE_MAP) {
        char shown[YDIAG_SHOW_MAX];
        cfg_error(c, v, role,
                  "'%s' must be a mapping like {fg: white, bg: blue, attrs: [bold]}, got %s", role,
                  attn_ydiag_show(&c->tree, v, shown, sizeof(shown)));
        return;
    }
    *spec = (struct color_spec){COLOR_DEFAULT, COLOR_DEFAULT, 0, true};
    int first_line[3] = {0, 0, 0};
    int role_key = c->where;
    for (int at = node_of(c, v)->u.c.first, k, fv; !too_many(c) && next_pair(c, &at, &k, &fv);) {
        c->where = k;
        const char *name = key_name(c, k);
        if (!name)
            continue;
        char path[DIAG_PATH_MAX];
        snprintf(path, sizeof(path), "%s.%s", role, show(name).s);
        int f = index_of(name, field_names, 3);
        char msg[DIAG_MSG_MAX];
        if (f < 0) {
            cfg_error(
                c, k, path, "%s",
                attn_ydiag_unknown(msg, sizeof(msg), "key", name, role, field_names, 3, NULL));
            continue;
        }
        if (first_line[f]) {
            cfg_error(c, k, path, "%s",
                      attn_ydiag_duplicate(msg, sizeof(msg), name, first_line[f]));
            continue;
        }
        first_line[f] = node_of(c, k)->line + 1;
        if (f == 0) {
            parse_color(c, fv, path, &spec->fg);
        } else if (f == 1) {
            parse_color(c, fv, path, &spec->bg);
        } else if (node_of(c, fv)->type == YNODE_SEQ) {
            for (int it = node_of(c, fv)->u.c.first; it >= 0 && !too_many(c);
                 it = node_of(c, it)->next)
                parse_attr(c, resolved(c, it), path, &spec->attrs);
        } else if (node_of(c, fv)->type == YNODE_SCALAR && !is_null(c, fv)) {
            parse_attr(c, fv, path, &spec->attrs); /* attrs: bold */
        } else if (node_of(c, fv)->type == YNODE_MAP) {
            cfg_error(c, fv, path,
                      "'attrs' must be a list such as [bold, underline], got a mapping");
        }
        /* `attrs:` or `attrs: []` gives no attribute. */
    }
    c->where = role_key;
}

/* scale or diverging: one of choices, copied into out. */
static void parse_scale(struct ctx *c, int v, const char *what, const char *const *choices, int n,
                        char *out, size_t size, bool *set)
{
    char list[256];
    join_choices(list, sizeof(list), choices, n);
    if (node_of(c, v)->type != YNODE_SCALAR || is_null(c, v)) {
        char shown[YDIAG_SHOW_MAX];
        cfg_error(c, v, what, "'%s' must be a scale name: %s, got %s", what, list,
                  attn_ydiag_show(&c->tree, v, shown, sizeof(shown)));
        return;
    }
    const char *s = scalar_of(c, v);
    if (index_of(s, choices, n) < 0 || scalar_has_nul(c, v) || strlen(s) >= size) {
        cfg_error(c, v, what, "unknown %s scale '%s' (choose %s)",
                  strcmp(what, "scale") == 0 ? "colour" : "diverging", show(s).s, list);
        return;
    }
    snprintf(out, size, "%s", s);
    *set = true;
}

int config_parse_colors(struct color_config *out, const char *name, const char *text, size_t len,
                        const char *const *role_names, int n_roles, const char *const *scale_names,
                        int n_scales, const char *const *diverging_names, int n_div,
                        struct diag_list *errs)
{
    color_config_alloc(out, n_roles);
    struct diag_list local;
    attn_diag_list_init(&local);
    struct ctx c = {.file = name ? name : "", .where = -1};
    attn_ydiag_init(&c.yd, c.file, &c.tree, errs ? errs : &local, CONFIG_MAX_ERRORS);
    if (load_tree(&c, text, len) != 0 || c.tree.root < 0)
        goto done;
    int root = resolved(&c, c.tree.root);
    if (node_of(&c, root)->type != YNODE_MAP) {
        cfg_error(&c, root, "",
                  "colors.yaml must be a mapping of roles to colours, like "
                  "`header: {fg: black, bg: cyan}`");
    } else {
        /* Every top-level name: the roles, then scale and diverging (for "did you mean"). */
        int n_top = n_roles + 2;
        const char **top = xcalloc((size_t)n_top, sizeof(*top));
        for (int r = 0; r < n_roles; r++)
            top[r] = role_names[r];
        top[n_roles] = "scale";
        top[n_roles + 1] = "diverging";
        int *first_line = xcalloc((size_t)n_top, sizeof(int));
        for (int at = node_of(&c, root)->u.c.first, k, v;
             !too_many(&c) && next_pair(&c, &at, &k, &v);) {
            c.where = k;
            const char *key = key_name(&c, k);
            if (!key)
                continue;
            int i = index_of(key, top, n_top);
            char msg[DIAG_MSG_MAX];
            if (i < 0) {
                cfg_error(&c, k, key, "%s",
                          attn_ydiag_unknown(msg, sizeof(msg), "key", key, NULL, top, n_top, NULL));
                continue;
            }
            if (first_line[i]) {
                cfg_error(&c, k, key, "%s",
                          attn_ydiag_duplicate(msg, sizeof(msg), key, first_line[i]));
                continue;
            }
            first_line[i] = node_of(&c, k)->line + 1;
            if (i < n_roles)
                parse_role(&c, key, v, &out->roles[i]);
            else if (i == n_roles)
                parse_scale(&c, v, "scale", scale_names, n_scales, out->scale, sizeof(out->scale),
                            &out->scale_set);
            else
                parse_scale(&c, v, "diverging", diverging_names, n_div, out->diverging,
                            sizeof(out->diverging), &out->diverging_set);
        }
        free(first_line);
        free(top);
    }
done:
    attn_ydiag_finish(&c.yd);
    attn_ytree_free(&c.tree);
    attn_diag_list_free(&local);
    if (c.yd.n) {
        color_config_free(out);
        color_config_alloc(out, n_roles);
        return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

int config_load_colors(struct color_config *out, const char *path, const char *const *role_names,
                       int n_roles, const char *const *scale_names, int n_scales,
                       const char *const *diverging_names, int n_div, struct diag_list *errs)
{
    char *text;
    size_t len;
    int rc = read_config(&text, &len, path, errs);
    if (rc != CONFIG_OK) {
        color_config_alloc(out, n_roles);
        return rc;
    }
    rc = config_parse_colors(out, path, text, len, role_names, n_roles, scale_names, n_scales,
                             diverging_names, n_div, errs);
    free(text);
    return rc;
}

/* ---- where the files are ------------------------------------------------------------------ */

static char *path_join3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a);
    while (la > 0 && a[la - 1] == '/')
        la--; /* "$XDG_CONFIG_HOME/" */
    size_t n = la + strlen(b) + strlen(c) + 1;
    char *p = xcalloc(n, 1);
    snprintf(p, n, "%.*s%s%s", (int)la, a, b, c);
    return p;
}

char *config_user_path(const char *name)
{
    /* The XDG spec says a relative $XDG_CONFIG_HOME is invalid and must be ignored. */
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && xdg[0] == '/')
        return path_join3(xdg, "/attnscope/", name);
    const char *home = getenv("HOME");
    if (home && home[0])
        return path_join3(home, "/.config/attnscope/", name);
    return NULL;
}
