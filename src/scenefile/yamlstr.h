/* yamlstr: a string as YAML, for the writer (write.c) and the scene of a model folder
 * (folder.c): plain when YAML reads it back the same, else double-quoted with escapes. */
#ifndef ATTNSCOPE_SCENEFILE_YAMLSTR_H
#define ATTNSCOPE_SCENEFILE_YAMLSTR_H

#include <stdbool.h>
#include <stdio.h>

/* flow: inside a flow collection ({...}, [...]), where ',' and brackets need quotes too. */
void attn_scenefile_yaml_string(FILE *f, const char *s, bool flow);

#endif
