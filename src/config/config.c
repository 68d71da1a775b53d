/* config: keys.yaml and colors.yaml (see config.h).
 *
 * The file is loaded as a libyaml document (aliases become shared nodes, so nothing is
 * expanded) and walked at most three levels deep. Every problem is collected with its location,
 * so a user sees all of them at once; any problem makes the whole file ignored. Out-of-memory
 * aborts, as in diag_list_push: a configuration loader has no sensible way to go on.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <yaml.h>

#include "common/fsutil.h"

/* ---- small helpers ------------------------------------------------------------------------ */

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort();
    return q;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
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

/* Case-insensitive optimal-string-alignment distance (a swap of two letters counts as one),
 * for "did you mean". Names longer than 63 characters are never close to anything. */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 1000;
    int d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The choice nearest to name, or NULL when nothing is close enough to be a likely typo. */
static const char *nearest(const char *name, const char *const *choices, int n)
{
    const char *best = NULL;
    int best_d = 1000;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(name, choices[i]);
        if (d < best_d) {
            best_d = d;
            best = choices[i];
        }
    }
    if (!best || best_d >= (int)strlen(name) || best_d > 1 + (int)strlen(best) / 4)
        return NULL;
    return best;
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

struct ctx {
    const char *file; /* name used in diagnostics */
    const char *text;
    size_t len;
    struct diag_list *errs;
    int n_err;                /* problems found in this file */
    const yaml_node_t *where; /* the mapping key being checked (see located) */
};

static int cfg_error_at(struct ctx *c, int line, int col, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Records a problem at a 1-based line and column; returns -1. Past CONFIG_MAX_ERRORS only one
 * closing note is added. */
static int cfg_error_at(struct ctx *c, int line, int col, const char *path, const char *fmt, ...)
{
    c->n_err++;
    if (c->n_err > CONFIG_MAX_ERRORS + 1)
        return -1;
    struct diag d;
    diag_clear(&d);
    snprintf(d.file, sizeof(d.file), "%s", c->file);
    d.line = line;
    d.col = col;
    if (c->n_err == CONFIG_MAX_ERRORS + 1) {
        diag_set(&d, "", "too many problems; not checking the rest of the file");
    } else {
        va_list ap;
        va_start(ap, fmt);
        diag_vset(&d, path, fmt, ap);
        va_end(ap);
    }
    diag_list_push(c->errs, &d);
    return -1;
}

/* Where to report a problem with node. An alias (`undo: *k`) shares the node of its anchor,
 * which lies earlier in the file; then the mapping key being checked is the better place. */
static const yaml_mark_t *located(const struct ctx *c, const yaml_node_t *node)
{
    if (c->where && node->start_mark.index < c->where->start_mark.index)
        return &c->where->start_mark;
    return &node->start_mark;
}

#define cfg_error(c, node, path, ...)                                                              \
    cfg_error_at((c), (int)located((c), (node))->line + 1, (int)located((c), (node))->column + 1,  \
                 (path), __VA_ARGS__)

static bool too_many(const struct ctx *c)
{
    return c->n_err > CONFIG_MAX_ERRORS;
}

/* Line and column (1-based, in characters like libyaml's marks) of a byte offset. */
static void offset_to_line_col(const char *text, size_t len, size_t offset, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static void yaml_syntax_error(struct ctx *c, const yaml_parser_t *p)
{
    int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
    if (p->error == YAML_READER_ERROR)
        offset_to_line_col(c->text, c->len, p->problem_offset, &line, &col);
    if (p->error == YAML_MEMORY_ERROR)
        abort();
    const char *problem = p->problem ? p->problem : "cannot parse";
    if (p->context)
        cfg_error_at(c, line, col, "", "invalid YAML: %s (%s at line %d)", problem, p->context,
                     (int)p->context_mark.line + 1);
    else
        cfg_error_at(c, line, col, "", "invalid YAML: %s", problem);
}

/* Nothing in a configuration file nests deeper than this (colors.yaml needs 3 levels). */
#define MAX_DEPTH 16

/* Refuses deep nesting before the file is loaded as a document: libyaml's scanner takes time
 * quadratic in the depth of flow collections, so `[[[[...` filling 1 MiB would hang the
 * explorer at start. The events are read lazily, so this stops as soon as the limit is passed.
 * Syntax errors are left for load_document to report. */
static int check_depth(struct ctx *c)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        abort();
    yaml_parser_set_input_string(&p, (const unsigned char *)c->text, c->len);
    int depth = 0, rc = 0;
    for (bool done = false; !done;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break;
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > MAX_DEPTH) {
                cfg_error_at(c, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1, "",
                             "nested too deeply (more than %d levels)", MAX_DEPTH);
                rc = -1;
                done = true;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

/* Parses c->text into doc. A stream of more than one document is refused: only the first
 * would be read, silently. */
static int load_document(struct ctx *c, yaml_document_t *doc)
{
    if (check_depth(c) != 0)
        return -1;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        abort();
    yaml_parser_set_input_string(&p, (const unsigned char *)c->text, c->len);
    if (!yaml_parser_load(&p, doc)) {
        yaml_syntax_error(c, &p);
        yaml_parser_delete(&p);
        return -1;
    }
    yaml_document_t extra;
    if (!yaml_parser_load(&p, &extra)) {
        yaml_syntax_error(c, &p);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&extra);
        if (root)
            cfg_error(c, root, "", "only one YAML document is allowed in a configuration file");
        yaml_document_delete(&extra);
    }
    yaml_parser_delete(&p);
    if (c->n_err) {
        yaml_document_delete(doc);
        return -1;
    }
    return 0;
}

static const char *scalar_of(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* A scalar with a NUL inside ("a\0b") is never a valid name. */
static bool scalar_has_nul(const yaml_node_t *n)
{
    return strlen(scalar_of(n)) != n->data.scalar.length;
}

/* An empty plain scalar is how YAML writes "nothing" (`quit:`). */
static bool is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = scalar_of(n);
    return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0;
}

/* The mapping key as a name; reports and returns NULL when it is not a plain scalar. */
static const char *key_name(struct ctx *c, const yaml_node_t *k)
{
    if (k->type != YAML_SCALAR_NODE || scalar_has_nul(k)) {
        cfg_error(c, k, "", "expected a name here, not a %s",
                  k->type == YAML_MAPPING_NODE ? "mapping" : "list");
        return NULL;
    }
    return scalar_of(k);
}

/* ---- keys.yaml ---------------------------------------------------------------------------- */

static void key_config_alloc(struct key_config *k, int n_actions)
{
    if (n_actions < 0)
        n_actions = 0;
    k->n_actions = n_actions;
    k->keys = xcalloc((size_t)n_actions, sizeof(*k->keys));
    k->n_keys = xcalloc((size_t)n_actions, sizeof(*k->n_keys));
    k->set = xcalloc((size_t)n_actions, sizeof(*k->set));
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
    memset(k, 0, sizeof(*k));
}

int key_config_find(const struct key_config *k, const char *key)
{
    for (int a = 0; a < k->n_actions; a++)
        for (int i = 0; i < k->n_keys[a]; i++)
            if (strcmp(k->keys[a][i], key) == 0)
                return a;
    return -1;
}

void key_config_from_strings(struct key_config *out, const char *const *keys, int n_actions)
{
    key_config_alloc(out, n_actions);
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
            int owner = key_config_find(over, base->keys[b][i]);
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
    const char *key; /* points into the document */
    int action;
};

struct key_parse {
    struct ctx *c;
    struct key_config *out;
    const char *const *names;
    bool (*valid_key)(const char *);
    struct binding *bound;
    int n_bound, cap_bound;
};

static void parse_one_key(struct key_parse *kp, int a, const yaml_node_t *item)
{
    struct ctx *c = kp->c;
    const char *action = kp->names[a];
    if (item->type != YAML_SCALAR_NODE) {
        cfg_error(c, item, action, "each key of %s must be a key name, not a %s", action,
                  item->type == YAML_MAPPING_NODE ? "mapping" : "list");
        return;
    }
    const char *key = scalar_of(item);
    if (scalar_has_nul(item) || !kp->valid_key(key)) {
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

static void parse_keys_root(struct key_parse *kp, yaml_document_t *doc, yaml_node_t *root)
{
    struct ctx *c = kp->c;
    struct key_config *out = kp->out;
    if (root->type != YAML_MAPPING_NODE) {
        cfg_error(c, root, "",
                  "keys.yaml must be a mapping of action names to keys, like `quit: q`");
        return;
    }
    int *first_line = xcalloc((size_t)out->n_actions, sizeof(int));
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top && !too_many(c); pair++) {
        yaml_node_t *k = yaml_document_get_node(doc, pair->key);
        yaml_node_t *v = yaml_document_get_node(doc, pair->value);
        c->where = k;
        const char *name = key_name(c, k);
        if (!name)
            continue;
        int a = index_of(name, kp->names, out->n_actions);
        if (a < 0) {
            const char *near = nearest(name, kp->names, out->n_actions);
            if (near)
                cfg_error(c, k, name, "unknown action '%s' (did you mean '%s'?)", show(name).s,
                          near);
            else
                cfg_error(c, k, name, "unknown action '%s' (configs/keys.yaml lists them all)",
                          show(name).s);
            continue;
        }
        if (first_line[a]) {
            cfg_error(c, k, name, "duplicate key '%s' (first given at line %d)", name,
                      first_line[a]);
            continue;
        }
        first_line[a] = (int)k->start_mark.line + 1;
        out->set[a] = true; /* also for `quit: []`, which leaves quit without a key */
        if (is_null(v)) {
            cfg_error(c, v, name, "no key given for %s (write [] to leave it without a key)", name);
        } else if (v->type == YAML_SCALAR_NODE) {
            parse_one_key(kp, a, v);
        } else if (v->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top && !too_many(c); it++)
                parse_one_key(kp, a, yaml_document_get_node(doc, *it));
        } else {
            cfg_error(c, v, name, "%s must be a key name or a list of key names, not a mapping",
                      name);
        }
    }
    free(first_line);
}

int config_parse_keys(struct key_config *out, const char *name, const char *text, size_t len,
                      const char *const *action_names, int n_actions,
                      bool (*valid_key)(const char *name), struct diag_list *errs)
{
    key_config_alloc(out, n_actions);
    struct diag_list local;
    diag_list_init(&local);
    struct ctx c = {name ? name : "", text, len, errs ? errs : &local, 0, NULL};
    yaml_document_t doc;
    if (load_document(&c, &doc) == 0) {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root) {
            struct key_parse kp = {&c, out, action_names, valid_key, NULL, 0, 0};
            parse_keys_root(&kp, &doc, root);
            free(kp.bound);
        }
        yaml_document_delete(&doc);
    }
    diag_list_free(&local);
    if (c.n_err) {
        key_config_free(out);
        key_config_alloc(out, n_actions);
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
    diag_clear(&d);
    if (fsutil_read_file(text, len, path, CONFIG_MAX_BYTES, &d) != 0) {
        if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
            return CONFIG_MISSING; /* removed between the two calls */
        if (!d.file[0])
            snprintf(d.file, sizeof(d.file), "%s", path);
        if (errs)
            diag_list_push(errs, &d);
        return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

int config_load_keys(struct key_config *out, const char *path, const char *const *action_names,
                     int n_actions, bool (*valid_key)(const char *name), struct diag_list *errs)
{
    char *text;
    size_t len;
    int rc = read_config(&text, &len, path, errs);
    if (rc != CONFIG_OK) {
        key_config_alloc(out, n_actions);
        return rc;
    }
    rc = config_parse_keys(out, path, text, len, action_names, n_actions, valid_key, errs);
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
static int parse_color(struct ctx *c, const yaml_node_t *v, const char *path, int *out)
{
    if (v->type != YAML_SCALAR_NODE || is_null(v))
        return cfg_error(c, v, path, "%s must be a colour: a name such as red, or 0-255", path);
    const char *s = scalar_of(v);
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
    if (n > 0 && strspn(s, "0123456789") == n && !scalar_has_nul(v)) {
        size_t zeros = strspn(s, "0");
        long value = n - zeros > 3 ? 1000 : strtol(s, NULL, 10);
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

static int parse_attr(struct ctx *c, const yaml_node_t *v, const char *path, unsigned *attrs)
{
    if (v->type != YAML_SCALAR_NODE || is_null(v))
        return cfg_error(c, v, path,
                         "each attribute must be a name: bold, dim, reverse or underline");
    const char *s = scalar_of(v);
    int i = index_of(s, attr_names, 4);
    if (i >= 0 && !scalar_has_nul(v)) {
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

static void parse_role(struct ctx *c, yaml_document_t *doc, const char *role, yaml_node_t *v,
                       struct color_spec *spec)
{
    if (v->type != YAML_MAPPING_NODE) {
        cfg_error(c, v, role, "%s must be a mapping like {fg: white, bg: blue, attrs: [bold]}",
                  role);
        return;
    }
    *spec = (struct color_spec){COLOR_DEFAULT, COLOR_DEFAULT, 0, true};
    int first_line[3] = {0, 0, 0};
    const yaml_node_t *role_key = c->where;
    for (yaml_node_pair_t *pair = v->data.mapping.pairs.start;
         pair < v->data.mapping.pairs.top && !too_many(c); pair++) {
        yaml_node_t *k = yaml_document_get_node(doc, pair->key);
        yaml_node_t *fv = yaml_document_get_node(doc, pair->value);
        c->where = k;
        const char *name = key_name(c, k);
        if (!name)
            continue;
        char path[DIAG_PATH_MAX];
        snprintf(path, sizeof(path), "%s.%s", role, show(name).s);
        int f = index_of(name, field_names, 3);
        if (f < 0) {
            const char *near = nearest(name, field_names, 3);
            if (near)
                cfg_error(c, k, path, "unknown key '%s' in %s (did you mean '%s'?)", show(name).s,
                          role, near);
            else
                cfg_error(c, k, path, "unknown key '%s' in %s (write fg, bg or attrs)",
                          show(name).s, role);
            continue;
        }
        if (first_line[f]) {
            cfg_error(c, k, path, "duplicate key '%s' (first given at line %d)", name,
                      first_line[f]);
            continue;
        }
        first_line[f] = (int)k->start_mark.line + 1;
        if (f == 0) {
            parse_color(c, fv, path, &spec->fg);
        } else if (f == 1) {
            parse_color(c, fv, path, &spec->bg);
        } else if (fv->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = fv->data.sequence.items.start;
                 it < fv->data.sequence.items.top && !too_many(c); it++)
                parse_attr(c, yaml_document_get_node(doc, *it), path, &spec->attrs);
        } else if (fv->type == YAML_SCALAR_NODE && !is_null(fv)) {
            parse_attr(c, fv, path, &spec->attrs); /* attrs: bold */
        } else if (fv->type == YAML_MAPPING_NODE) {
            cfg_error(c, fv, path, "attrs must be a list such as [bold, underline]");
        }
        /* `attrs:` or `attrs: []` gives no attribute. */
    }
    c->where = role_key;
}

/* scale or diverging: one of choices, copied into out. */
static void parse_scale(struct ctx *c, const yaml_node_t *v, const char *what,
                        const char *const *choices, int n, char *out, size_t size, bool *set)
{
    char list[256];
    join_choices(list, sizeof(list), choices, n);
    if (v->type != YAML_SCALAR_NODE || is_null(v)) {
        cfg_error(c, v, what, "%s must be a scale name: %s", what, list);
        return;
    }
    const char *s = scalar_of(v);
    if (index_of(s, choices, n) < 0 || scalar_has_nul(v) || strlen(s) >= size) {
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
    diag_list_init(&local);
    struct ctx c = {name ? name : "", text, len, errs ? errs : &local, 0, NULL};
    yaml_document_t doc;
    if (load_document(&c, &doc) != 0)
        goto done;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && root->type != YAML_MAPPING_NODE) {
        cfg_error(&c, root, "",
                  "colors.yaml must be a mapping of roles to colours, like "
                  "`header: {fg: black, bg: cyan}`");
    } else if (root) {
        /* Every top-level name: the roles, then scale and diverging (for "did you mean"). */
        int n_top = n_roles + 2;
        const char **top = xcalloc((size_t)n_top, sizeof(*top));
        for (int r = 0; r < n_roles; r++)
            top[r] = role_names[r];
        top[n_roles] = "scale";
        top[n_roles + 1] = "diverging";
        int *first_line = xcalloc((size_t)n_top, sizeof(int));
        for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
             pair < root->data.mapping.pairs.top && !too_many(&c); pair++) {
            yaml_node_t *k = yaml_document_get_node(&doc, pair->key);
            yaml_node_t *v = yaml_document_get_node(&doc, pair->value);
            c.where = k;
            const char *key = key_name(&c, k);
            if (!key)
                continue;
            int i = index_of(key, top, n_top);
            if (i < 0) {
                const char *near = nearest(key, top, n_top);
                char list[512];
                if (near)
                    cfg_error(&c, k, key, "unknown role '%s' (did you mean '%s'?)", show(key).s,
                              near);
                else
                    cfg_error(&c, k, key, "unknown role '%s' (choose %s)", show(key).s,
                              join_choices(list, sizeof(list), role_names, n_roles));
                continue;
            }
            if (first_line[i]) {
                cfg_error(&c, k, key, "duplicate key '%s' (first given at line %d)", key,
                          first_line[i]);
                continue;
            }
            first_line[i] = (int)k->start_mark.line + 1;
            if (i < n_roles)
                parse_role(&c, &doc, key, v, &out->roles[i]);
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
    yaml_document_delete(&doc);
done:
    diag_list_free(&local);
    if (c.n_err) {
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
