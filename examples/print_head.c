/* print_head: load a scene, compute it, print one head's attention weights (libattnscope).
 *   cc print_head.c $(pkg-config --cflags --libs attnscope) -o print_head
 *   ./print_head scenes/10-mha.yaml 1 */
#include <stdio.h>
#include <stdlib.h>

#include <attnscope/attnscope.h>

int main(int argc, char **argv)
{
    struct attn_scene scene;
    if (argc < 2 || attn_scenefile_load_report(&scene, argv[1], stderr) != 0) /* file:line:col */
        return argc < 2 ? 2 : 1;
    struct attn_model model = {0};
    struct attn_run run = {0};
    struct diag err;
    int head = argc > 2 ? atoi(argv[2]) : 0, ok = attn_compute(&model, &run, &scene, &err) == 0;
    int status = ok && head >= 0 && head < model.heads ? 0 : 1;
    if (status)
        fprintf(stderr, "%s: %s\n", argv[1], ok ? "no such head" : err.msg);
    else
        for (int i = 0; i < model.n; i++) {
            struct attn_mat_view w = attn_view(&run, &model, STAGE_WEIGHTS, head); /* (n, n) */
            printf("%-10s", model.tokens[i]);
            for (int j = 0; j < w.cols; j++)
                printf(" %.4f", (double)w.data[(size_t)i * w.stride + j]);
            printf("\n");
        }
    attn_run_free(&run);
    attn_model_free(&model);
    attn_scene_free(&scene);
    return status;
}
