/* schema_walk: the walk of a mapping's keys (see schema.h). */
#include "scenefile/schema.h"

/* ---- keys ------------------------------------------------------------------------------- */

static int find_field(const struct mapping *m, const char *key)
{
    for (int i = 0; i < m->n_fields; i++)
        if (strcmp(m->fields[i].key, key) == 0)
            return i;
    return -1;
}

/* The field of m nearest to key, when close enough to suggest (see attn_suggest_nearest), or -1. */
static int nearest_field(const struct mapping *m, const char *key, int *distance)
{
    const char *keys[MAX_FIELDS];
    int n =
        m->n_fields < MAX_FIELDS ? m->n_fields : MAX_FIELDS; /* attn_schema_walk_map's limit too */
    for (int i = 0; i < n; i++)
        keys[i] = m->fields[i].key;
    return attn_suggest_nearest(key, keys, n, distance);
}

/* The key the message of an unknown key names is taken as given but unknown: its value is a
 * default, so checks that read it would complain about that default. */
void attn_schema_mark_meant(struct loader *l, const char *path, const char *key)
{
    char meant[DIAG_PATH_MAX];
    join(meant, path, key);
    attn_loader_mark_bad(l, meant);
}

static void unknown_key(struct loader *l, const struct mapping *m, int knode, const char *path)
{
    const char *key = str_of(l, knode);
    char in[DIAG_PATH_MAX + 8] = "";
    if (m->name[0])
        snprintf(in, sizeof(in), " in '%s'", m->name);
    char kpath[DIAG_PATH_MAX];
    join(kpath, path, key);

    int d;
    int best = nearest_field(m, key, &d);
    if (best >= 0) {
        attn_loader_error(l, knode, kpath, "unknown key '%.60s'%s (did you mean '%s'?)", key, in,
                          m->fields[best].key);
        attn_schema_mark_meant(l, path, m->fields[best].key);
        return;
    }
    if (m == &attn_schema_top_map) {
        /* A key of a nested mapping written at the top level, exactly or nearly. */
        const struct mapping *near_map = NULL;
        int near = -1, near_d = INT_MAX;
        for (size_t i = 0; i < ATTN_SCHEMA_N_NESTED; i++) {
            if (find_field(attn_schema_nested_maps[i], key) >= 0) {
                attn_loader_error(l, knode, kpath, "unknown key '%s' (it belongs under '%s')", key,
                                  attn_schema_nested_maps[i]->name);
                attn_schema_mark_meant(l, attn_schema_nested_maps[i]->name, key);
                return;
            }
            int j = nearest_field(attn_schema_nested_maps[i], key, &d);
            if (j >= 0 && d < near_d) {
                near_map = attn_schema_nested_maps[i];
                near = j;
                near_d = d;
            }
        }
        if (near_map) {
            attn_loader_error(l, knode, kpath,
                              "unknown key '%.60s' (did you mean '%s' under '%s'?)", key,
                              near_map->fields[near].key, near_map->name);
            attn_schema_mark_meant(l, near_map->name, near_map->fields[near].key);
            return;
        }
    } else if (find_field(&attn_schema_top_map, key) >= 0) {
        attn_loader_error(l, knode, kpath, "unknown key '%s'%s (it belongs at the top level)", key,
                          in);
        attn_schema_mark_meant(l, "", key);
        return;
    }
    char valid[384];
    size_t o = 0;
    valid[0] = '\0';
    for (int i = 0; i < m->n_fields && o < sizeof(valid); i++)
        o +=
            (size_t)snprintf(valid + o, sizeof(valid) - o, "%s%s", i ? ", " : "", m->fields[i].key);
    attn_loader_error(l, knode, kpath, "unknown key '%.60s'%s (valid keys: %s)", key, in, valid);
}

static bool type_ok(enum want w, int type)
{
    switch (w) {
    case WANT_SCALAR:
        return type == YNODE_SCALAR;
    case WANT_SEQ:
        return type == YNODE_SEQ;
    case WANT_MAP:
        return type == YNODE_MAP;
    case WANT_DATA:
        return type == YNODE_SEQ || type == YNODE_MAP;
    default:
        return true;
    }
}

void attn_schema_walk_map(struct loader *l, int node, const struct mapping *m, void *base,
                          const char *path)
{
    int found[MAX_FIELDS], keys[MAX_FIELDS];
    for (int i = 0; i < MAX_FIELDS; i++)
        found[i] = keys[i] = -1;
    char buf[LOADER_SHOW_MAX], kpath[DIAG_PATH_MAX];

    /* Keys, in file order. */
    int k = nd_of(l, node)->u.c.first;
    while (k >= 0 && !l->yd.stopped) {
        int v = nd_of(l, k)->next;
        int next = v >= 0 ? nd_of(l, v)->next : -1;
        const struct ynode *kn = nd_of(l, k);
        if (kn->type == YNODE_BAD) {
            /* an alias used as a key: already reported */
        } else if (kn->type != YNODE_SCALAR || attn_schema_has_nul(l, k)) {
            attn_loader_error(l, k, path, "keys must be plain names, got %s",
                              attn_loader_show(l, k, buf, sizeof(buf)));
        } else {
            const char *key = str_of(l, k);
            int i = find_field(m, key);
            join(kpath, path, key);
            if (i < 0)
                unknown_key(l, m, k, path);
            else if (found[i] >= 0)
                attn_loader_error(l, k, kpath, "duplicate key '%s' (first given at line %d)", key,
                                  attn_loader_line(l, keys[i]));
            else if (v >= 0) {
                found[i] = v;
                keys[i] = k;
                attn_loader_register(l, kpath, k, v);
            }
        }
        k = next;
    }

    /* Values, in table order. */
    for (int i = 0; i < m->n_fields && !l->yd.stopped; i++) {
        if (found[i] < 0)
            continue;
        const struct field *f = &m->fields[i];
        join(kpath, path, f->key);
        int type = nd_of(l, found[i])->type;
        if (type == YNODE_BAD)
            attn_loader_mark_bad(l, kpath);
        else if (!type_ok(f->want, type))
            attn_schema_must_be(l, f, found[i], kpath);
        else
            f->handler(l, f, found[i], base, kpath);
    }
    if (m->finish && !l->yd.stopped)
        m->finish(l, node, found, base, path);
}

void attn_schema_load_scene(struct loader *l, int root)
{
    attn_schema_walk_map(l, root, &attn_schema_top_map, l->s, "");
}
