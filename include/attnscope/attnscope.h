/* attnscope.h: libattnscope, the attention engine of attnscope for other front ends.
 *
 *   #include <attnscope/attnscope.h>   cc prog.c $(pkg-config --cflags --libs attnscope)
 *
 * Open a scene (a scene file, or a Hugging Face model folder), compute it, and copy out any
 * stage of any head of any layer: every number is the one PyTorch computes, as the explorer shows
 * it. examples/print_head.c is a whole program; docs/library.md is the reference.
 *
 * The handles are opaque and every name starts with attnscope_ or ATTNSCOPE_: the engine's own
 * types are not part of the API, so they can change without breaking a program. Functions that
 * can fail return 0, or -1 with an attnscope_error filled in (the error may be NULL). Call the
 * library from one thread at a time: the engine's pool of threads serves one caller.
 */
#ifndef ATTNSCOPE_ATTNSCOPE_H
#define ATTNSCOPE_ATTNSCOPE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong, and where: file:line:col of a scene file's problem (line and col 1-based, 0
 * when the problem has no line: a missing file, a model folder's, a compute's). A scene file with
 * several problems gives its first here; more counts the others (`attnscope check FILE` lists
 * them all). The text is as the files gave it, unescaped, as token texts are: a program that
 * prints it to a terminal escapes it as it would a file's. */
#define ATTNSCOPE_ERROR_FILE_MAX    512
#define ATTNSCOPE_ERROR_MESSAGE_MAX 512
typedef struct attnscope_error {
    char file[ATTNSCOPE_ERROR_FILE_MAX]; /* "" when no file is to blame */
    int line, col;
    char message[ATTNSCOPE_ERROR_MESSAGE_MAX];
    int more;
} attnscope_error;

/* The error as one line, "file:line:col: message" ("file: message" without a line, "message"
 * without a file), into out (size > 0, cut to fit; ATTNSCOPE_ERROR_TEXT_MAX always fits).
 * Returns out. */
#define ATTNSCOPE_ERROR_TEXT_MAX (ATTNSCOPE_ERROR_FILE_MAX + ATTNSCOPE_ERROR_MESSAGE_MAX + 32)
char *attnscope_error_text(char *out, size_t size, const attnscope_error *err);

/* The library's version, "0.1.0": attnscope's own. */
const char *attnscope_version(void);

/* ---- scenes ----------------------------------------------------------------------------- */

/* A scene: the sentence, the model and every option, as a scene file says them (see
 * attnscope-scene(5)). */
typedef struct attnscope_scene attnscope_scene;

/* Opens the scene at path: a YAML scene file, or a model (a Hugging Face folder with
 * config.json, its tokenizer and safetensors weights; or the weights file in one), read as the
 * scene one would write beside it with the book's sentence. A checkpoint stays mapped, not
 * read, until it is computed. Returns 0 and *out, or -1 with *out NULL and err. */
int attnscope_scene_open(attnscope_scene **out, const char *path, attnscope_error *err);
/* Frees the scene (NULL: nothing). Results computed from it stay valid. */
void attnscope_scene_delete(attnscope_scene *scene);

/* What the scene was opened past without a refusal, as `attnscope check` warns of it: a scene
 * key that makes a checkpoint compute otherwise than it was trained, a config.json key attnscope
 * does not read (each at its file:line:col), tokens past the positions a RoPE model was trained
 * on. attnscope_warnings returns how many; attnscope_warning fills *out with warning i (0 ..
 * count - 1; more is 0) and returns 0, or -1 with *out saying there is no such warning. */
int attnscope_warnings(const attnscope_scene *scene);
int attnscope_warning(attnscope_error *out, const attnscope_scene *scene, int i);

/* ---- results ------------------------------------------------------------------------------ */

/* Every stage of every head of every layer of a computed scene. */
typedef struct attnscope_result attnscope_result;

/* Computes scene: the forward pass of every layer, keeping every stage. Returns 0 and *out, or
 * -1 with *out NULL and err (out of memory, a checkpoint changed on disk since it was opened). */
int attnscope_compute(attnscope_result **out, const attnscope_scene *scene, attnscope_error *err);
/* Frees the result (NULL: nothing). */
void attnscope_result_delete(attnscope_result *result);

/* The shape of the result. */
int attnscope_tokens(const attnscope_result *result);
/* Token i's text as the tokenizer cut it (" cat", "<0A>"; UTF-8), or NULL when there is no
 * token i. Valid while the result is. */
const char *attnscope_token(const attnscope_result *result, int i);
int attnscope_layers(const attnscope_result *result);
int attnscope_heads(const attnscope_result *result);

/* The stages of a layer, in the order the forward pass makes them: "inputs", "queries", ...,
 * "scores", "scaled", "masked", "weights", ..., "context", "concat", "output", then the block's.
 * Which ones depends on the scene (no "masked" without a mask, RoPE's "queries_rotated", ...).
 * attnscope_stages returns how many layer has (0 when there is no such layer);
 * attnscope_stage_name the i-th's name, or NULL. */
int attnscope_stages(const attnscope_result *result, int layer);
const char *attnscope_stage_name(const attnscope_result *result, int layer, int i);
/* Whether stage (a name as above, in any case) is one matrix per head: 1 (queries, scores,
 * weights, context, ...), 0 (one matrix the heads share: inputs, concat, output, ...), or -1
 * when there is no such stage. */
int attnscope_stage_per_head(const char *stage);

/* The shape of stage's matrix in layer: (tokens, tokens) for scores and weights, (tokens, width)
 * for the others. Returns 0, or -1 with err when layer has no such stage. */
int attnscope_matrix_shape(size_t *rows, size_t *cols, const attnscope_result *result, int layer,
                           const char *stage, attnscope_error *err);
/* Copies stage's matrix of head in layer into out (rows, cols), row-major: rows and cols must
 * be its shape (attnscope_matrix_shape). head is 0 .. heads - 1; a stage the heads share is the
 * same for each. Masked scores are -INFINITY. Returns 0, or -1 with err (no such layer, stage or
 * head; a buffer of another shape), out untouched. */
int attnscope_matrix(float *out, size_t rows, size_t cols, const attnscope_result *result,
                     int layer, const char *stage, int head, attnscope_error *err);

#ifdef __cplusplus
}
#endif

#endif
