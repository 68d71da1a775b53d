/* print_head: open a scene, compute it, print one head's attention weights (libattnscope).
 *   cc print_head.c $(pkg-config --cflags --libs attnscope) -o print_head
 *   ./print_head scenes/10-mha.yaml 1 */
#include <stdio.h>
#include <stdlib.h>

#include <attnscope/attnscope.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    attnscope_scene *scene = NULL;
    attnscope_result *result = NULL;
    attnscope_error err = {.message = "out of memory"}; /* as it stays if malloc fails */
    size_t rows = 0, cols = 0;
    float *w = NULL; /* (rows, cols) = (tokens, tokens) */
    int head = argc > 2 ? atoi(argv[2]) : 0, status = 1;
    if (attnscope_scene_open(&scene, argv[1], &err) == 0 &&
        attnscope_compute(&result, scene, &err) == 0 &&
        attnscope_matrix_shape(&rows, &cols, result, 0, "weights", &err) == 0 &&
        (w = malloc(rows * cols * sizeof(*w))) != NULL &&
        attnscope_matrix(w, rows, cols, result, 0, "weights", head, &err) == 0) {
        for (size_t i = 0; i < rows; i++) {
            printf("%-10s", attnscope_token(result, (int)i));
            for (size_t j = 0; j < cols; j++)
                printf(" %.4f", (double)w[i * cols + j]);
            printf("\n");
        }
        status = 0;
    } else {
        char text[ATTNSCOPE_ERROR_TEXT_MAX]; /* file:line:col: message */
        fprintf(stderr, "%s\n", attnscope_error_text(text, sizeof(text), &err));
    }
    free(w);
    attnscope_result_delete(result);
    attnscope_scene_delete(scene);
    return status;
}
