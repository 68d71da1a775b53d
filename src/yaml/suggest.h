/* suggest: "did you mean" for names read from YAML files (scene keys, config names). */
#ifndef ATTNSCOPE_YAML_SUGGEST_H
#define ATTNSCOPE_YAML_SUGGEST_H

/* The index of the choice nearest to name, when it is close enough to be a likely typo; else
 * -1. Distance is the optimal string alignment distance ignoring ASCII case (an edit is one
 * letter inserted, removed, replaced, or two neighbours swapped); close enough is at most one
 * edit for names of up to 3 bytes, two up to 6, else three, and fewer edits than name has bytes.
 * Names of 64 bytes or more are never close. The first of equally near choices wins. When
 * distance is not NULL it gets the nearest choice's distance (used to rank several lists). */
int attn_suggest_nearest(const char *name, const char *const *choices, int n, int *distance);

#endif
