/* suggest: the nearest name, for "did you mean" (see suggest.h). */
#include "yaml/suggest.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

/* Optimal string alignment distance (Damerau-Levenshtein with adjacent swaps), ignoring case. */
static int distance_of(const char *a, const char *b)
{
    enum { MAXK = 64 };
    int n = (int)strnlen(a, MAXK), m = (int)strnlen(b, MAXK);
    if (n >= MAXK || m >= MAXK)
        return INT_MAX;
    int d[MAXK + 1][MAXK + 1];
    for (int i = 0; i <= n; i++)
        d[i][0] = i;
    for (int j = 0; j <= m; j++)
        d[0][j] = j;
    for (int i = 1; i <= n; i++) {
        for (int j = 1; j <= m; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[n][m];
}

int attn_suggest_nearest(const char *name, const char *const *choices, int n, int *distance)
{
    int best = -1, best_d = INT_MAX;
    for (int i = 0; i < n; i++) {
        int d = distance_of(name, choices[i]);
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    if (distance)
        *distance = best_d;
    size_t len = strlen(name);
    int limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
    return best >= 0 && best_d <= limit && (size_t)best_d < len ? best : -1;
}
