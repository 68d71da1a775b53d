/* bench: how long one recomputation takes, the number that decides whether live editing in
 * the explorer feels instant.
 *
 * Two loops: attn_forward alone (no allocation inside: the buffers of struct attn_run are
 * reused), and model_resolve + attn_forward (what a change of seed or weights costs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli.h"
#include "common/cnum.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int cmd_bench(int argc, char **argv)
{
    const char *iters_arg = NULL;
    const struct cli_opt opts[] = {
        {"iters", 'n', true, &iters_arg},
    };
    const char *pos[1];
    int n_pos;
    bool help;
    int rc = cli_parse("bench", argc, argv, opts, 1, pos, 1, &n_pos, &help);
    if (rc != CLI_OK)
        return rc;
    if (help) {
        cli_print_help(stdout);
        return CLI_OK;
    }
    long iters = 10000;
    if (iters_arg) {
        char *end;
        errno = 0;
        iters = strtol(iters_arg, &end, 10);
        if (errno != 0 || end == iters_arg || *end != '\0' || iters < 1 || iters > 1000000000L)
            return cli_usage_error("bench", "invalid --iters '%s' (a number from 1)", iters_arg);
    }

    struct cli_scene cs;
    rc = cli_scene_open(&cs, n_pos ? pos[0] : NULL);
    if (rc != CLI_OK)
        return rc;

    /* The forward pass alone, on buffers sized once. */
    double t0 = now_us();
    for (long i = 0; i < iters; i++)
        attn_forward(&cs.run, &cs.model);
    double forward_us = (now_us() - t0) / (double)iters;

    /* Resolve (draw or copy every parameter) and forward, as a live edit does. */
    struct diag err;
    diag_clear(&err);
    t0 = now_us();
    for (long i = 0; i < iters; i++) {
        if (attn_compute(&cs.model, &cs.run, &cs.scene, &err) != 0) {
            if (err.file[0] == '\0')
                snprintf(err.file, sizeof(err.file), "%.*s", (int)sizeof(err.file) - 1, cs.name);
            diag_print(stderr, &err, NULL, 0);
            cli_scene_close(&cs);
            return CLI_INVALID;
        }
    }
    double full_us = (now_us() - t0) / (double)iters;

    printf("scene: %s (%d tokens, d_in %d, %d head%s x head_dim %d)\n", cs.name, cs.model.n,
           cs.model.d_in, cs.model.heads, cs.model.heads == 1 ? "" : "s", cs.model.head_dim);
    cnum_fprintf(stdout, "attn_forward        %12.3f us  (mean of %ld)\n", forward_us, iters);
    cnum_fprintf(stdout, "resolve + forward   %12.3f us  (mean of %ld)\n", full_us, iters);
    cli_scene_close(&cs);
    return CLI_OK;
}
