/* datadir: the data folder and scenes by name (see datadir.h). */
#include "common/datadir.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef ATTNSCOPE_DATA_DIR
#define ATTNSCOPE_DATA_DIR "/usr/local/share/attnscope"
#endif

const char *attn_data_dir(void)
{
    const char *env = getenv("ATTNSCOPE_DATA_DIR");
    return env && env[0] ? env : ATTNSCOPE_DATA_DIR;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static bool has_yaml_suffix(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(name + n - 4, ".yml") == 0);
}

/* dir/name, then dir/name.yaml (when name has no suffix), into out when it is a file. */
static bool try_in(char *out, size_t size, const char *dir, const char *name)
{
    for (int suffix = 0; suffix < 2; suffix++) {
        if (suffix && has_yaml_suffix(name))
            break;
        int n = snprintf(out, size, "%s%s%s%s", dir ? dir : "", dir ? "/" : "", name,
                         suffix ? ".yaml" : "");
        if (n > 0 && (size_t)n < size && is_file(out))
            return true;
    }
    return false;
}

int attn_data_find_scene(char *out, size_t size, const char *name)
{
    bool pathlike = name[0] == '/' || strncmp(name, "./", 2) == 0 || strncmp(name, "../", 3) == 0;
    if (try_in(out, size, NULL, name) || pathlike) {
        if (pathlike && !is_file(out))
            snprintf(out, size, "%s", name);
        return is_file(out) ? 0 : -1;
    }
    char shipped[4096];
    snprintf(shipped, sizeof(shipped), "%s/scenes", attn_data_dir());
    if (try_in(out, size, "scenes", name) || try_in(out, size, shipped, name))
        return 0;
    snprintf(out, size, "., scenes/ and %s", shipped);
    return -1;
}
