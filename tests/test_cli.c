/* test_cli: the real attnscope binary, run as a user would run it.
 *
 * ATTNSCOPE_BIN is the built binary. Each case spawns it with stdout and stderr redirected to
 * files in a scratch folder, then checks the exit status and the text. Scene files are written
 * by the test itself, so it depends on nothing but the binary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

extern char **environ;

static char *scratch; /* per-run folder, made in main() */

/* The book's MultiHeadAttention, as a user would write it (scenes/10-mha.yaml). */
static const char good_scene[] = "version: 1\n"
                                 "text: Your journey starts with one step\n"
                                 "seed: 123\n"
                                 "embeddings:\n"
                                 "  - [0.43, 0.15, 0.89]\n"
                                 "  - [0.55, 0.87, 0.66]\n"
                                 "  - [0.57, 0.85, 0.64]\n"
                                 "  - [0.22, 0.58, 0.33]\n"
                                 "  - [0.77, 0.25, 0.10]\n"
                                 "  - [0.05, 0.80, 0.55]\n"
                                 "attention:\n"
                                 "  d_out: 2\n"
                                 "  heads: 2\n"
                                 "  causal: true\n";

/* An unknown key on line 4, column 3. */
static const char bad_scene[] = "version: 1\n"
                                "text: Your journey starts with one step\n"
                                "attention:\n"
                                "  headz: 2\n";

struct run {
    int status; /* exit code, or 128 + signal */
    char *out, *err;
};

/* Drops from err the line work over 200 ms ends with off a terminal ("attnscope: computing: 32
 * heads in 0.2 s", progress.h): whether it is there depends on how busy the machine is. */
static void drop_progress(char *err)
{
    char *w = err;
    for (char *line = err; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        char what[64], unit[64];
        long done;
        double secs;
        int n = -1;
        sscanf(line, "attnscope: %63[^:]: %ld %63s in %lf s%n", what, &done, unit, &secs, &n);
        bool progress = n > 0 && (size_t)n == (end ? len - 1 : len);
        if (!progress) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = '\0';
}

/* The next run's standard input (RUN_IN), else /dev/null. */
static const char *stdin_from;

/* Runs ATTNSCOPE_BIN with args (NULL-terminated, without argv[0]), its standard output going
 * to stdout_to (NULL: a scratch file, read back into out). */
static struct run run_to(const char *stdout_to, const char *const *args)
{
    const char *bin = getenv("ATTNSCOPE_BIN");
    if (!bin)
        fail_msg("ATTNSCOPE_BIN is not set");
    char out_path[4200], err_path[4200];
    snprintf(out_path, sizeof(out_path), "%s/stdout", scratch);
    snprintf(err_path, sizeof(err_path), "%s/stderr", scratch);
    if (stdout_to)
        tu_write_text(out_path, "");

    const char *argv[32];
    int argc = 0;
    argv[argc++] = bin;
    for (int i = 0; args[i]; i++) {
        assert_true(argc < 31);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, stdin_from ? stdin_from : "/dev/null", O_RDONLY, 0);
    stdin_from = NULL;
    posix_spawn_file_actions_addopen(&fa, 1, stdout_to ? stdout_to : out_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fail_msg("cannot run %s: %s", bin, strerror(rc));
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);

    struct run r;
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    r.out = tu_must_read_file(out_path, NULL);
    r.err = tu_must_read_file(err_path, NULL);
    drop_progress(r.err);
    return r;
}

#define RUN(...)          run_to(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_TO(path, ...) run_to(path, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_IN(path, ...) (stdin_from = (path), RUN(__VA_ARGS__))

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

/* Fails with the whole output when the status is not the expected one. */
static void expect_status(const struct run *r, int status)
{
    if (r->status != status)
        fail_msg("exit status %d, expected %d\n--- stdout\n%s--- stderr\n%s", r->status, status,
                 r->out, r->err);
}

static void expect_contains(const char *text, const char *needle)
{
    if (!text || !strstr(text, needle))
        fail_msg("expected to find \"%s\" in:\n%s", needle, text ? text : "(nothing)");
}

static char *scratch_path(const char *name)
{
    static char path[4200];
    snprintf(path, sizeof(path), "%s/%s", scratch, name);
    return path;
}

/* ---- tests ------------------------------------------------------------------------------ */

/* Every help text, exactly as tests/help/NAME.txt has it: overview.txt is `attnscope --help`,
 * CMD.txt is `attnscope CMD --help`, which `attnscope help CMD` and `-h` print too.
 * ATTNSCOPE_UPDATE_HELP=1 rewrites the files (and fails). */
static void test_help_texts(void **state)
{
    (void)state;
    const char *dir = getenv("ATTNSCOPE_HELP");
    if (!dir)
        fail_msg("ATTNSCOPE_HELP is not set");
    bool update = tu_update_mode("ATTNSCOPE_UPDATE_HELP");
    int n;
    char **names = tu_list_names(dir, ".txt", &n);
    if (!names)
        fail_msg("%s: cannot list the help texts", dir);
    assert_true(n >= 10); /* the overview and nine commands */
    int differ = 0;
    char rewrote[1024] = "";
    for (int i = 0; i < n; i++) {
        char cmd[64], path[4300];
        snprintf(cmd, sizeof(cmd), "%.*s", (int)(strlen(names[i]) - 4), names[i]);
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        bool overview = strcmp(cmd, "overview") == 0;
        struct run r = overview ? RUN("--help") : RUN(cmd, "--help");
        expect_status(&r, 0);
        assert_string_equal(r.err, "");
        char *want = tu_read_file(path, NULL);
        if (!want || strcmp(want, r.out) != 0) {
            if (update) {
                tu_write_text(path, r.out);
                snprintf(rewrote + strlen(rewrote), sizeof(rewrote) - strlen(rewrote), " %s",
                         names[i]);
            } else {
                fprintf(stderr, "%s: `attnscope %s --help` differs:\n--- got\n%s", names[i],
                        overview ? "" : cmd, r.out);
            }
            differ++;
        }
        /* The other ways to ask print the same text. */
        struct run again = overview ? RUN("-h") : RUN("help", cmd);
        expect_status(&again, 0);
        assert_string_equal(again.out, r.out);
        run_free(&again);
        if (!overview) {
            again = RUN(cmd, "-h");
            assert_string_equal(again.out, r.out);
            run_free(&again);
        }
        free(want);
        run_free(&r);
    }
    /* Every command `attnscope --help` lists has its text here: a new command's is written by
       the update run, not left out unseen. */
    struct run listed = RUN("--help");
    const char *line = strstr(listed.out, "\ncommands:\n");
    assert_non_null(line);
    for (line += strlen("\ncommands:\n"); strncmp(line, "  ", 2) == 0 && strchr(line, '\n');
         line = strchr(line, '\n') + 1) {
        char cmd[64], file[80], path[4300];
        assert_int_equal(sscanf(line, "%63s", cmd), 1);
        snprintf(file, sizeof(file), "%s.txt", cmd);
        bool have = false;
        for (int i = 0; i < n; i++)
            have = have || strcmp(names[i], file) == 0;
        if (have)
            continue;
        if (update) {
            struct run c = RUN(cmd, "--help");
            snprintf(path, sizeof(path), "%s/%s", dir, file);
            tu_write_text(path, c.out);
            run_free(&c);
            snprintf(rewrote + strlen(rewrote), sizeof(rewrote) - strlen(rewrote), " %s", file);
        } else {
            fprintf(stderr, "%s: missing: `attnscope %s --help` has no text to compare\n", file,
                    cmd);
        }
        differ++;
    }
    run_free(&listed);
    tu_free_names(names, n);
    if (update)
        tu_update_done("ATTNSCOPE_UPDATE_HELP", differ, n, rewrote);
    if (differ)
        fail_msg("%d help texts differ from tests/help/ or are missing (ATTNSCOPE_UPDATE_HELP=1 "
                 "rewrites them)",
                 differ);

    /* `attnscope help` is the overview; an unknown command is wrong usage. */
    struct run r = RUN("help");
    struct run o = RUN("--help");
    expect_status(&r, 0);
    assert_string_equal(r.out, o.out);
    run_free(&r);
    run_free(&o);
    r = RUN("help", "frobnicate");
    expect_status(&r, 2);
    expect_contains(r.err, "unknown command 'frobnicate'");
    run_free(&r);
}

static void test_help_and_version(void **state)
{
    (void)state;

    struct run r = RUN("--version");
    expect_status(&r, 0);
    assert_int_equal(strncmp(r.out, "attnscope ", 10), 0);
    assert_true(isdigit((unsigned char)r.out[10]));
    /* the BLAS kernel the numbers come from, as OpenBLAS names it: forced here */
    expect_contains(r.out, "\nOpenBLAS ");
    run_free(&r);
    const char *was = getenv("OPENBLAS_CORETYPE"); /* scripts/test forces older kernels too */
    char *kept = was ? strdup(was) : NULL;
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    r = RUN("--version");
    expect_status(&r, 0);
    expect_contains(r.out, ", Prescott kernels, ");
    run_free(&r);
    r = RUN("bench", "--iters", "2");
    expect_contains(r.out, "blas: OpenBLAS ");
    expect_contains(r.out, ", Prescott kernels, ");
    run_free(&r);
    r = RUN("bench", "--tokens", "8", "--dim", "16", "--repeat", "1", "--json");
    expect_contains(r.out, "\"blas_kernel\": \"Prescott\"");
    run_free(&r);
    if (kept)
        setenv("OPENBLAS_CORETYPE", kept, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    free(kept);
}

static void test_usage_errors(void **state)
{
    (void)state;
    struct run r = RUN("frobnicate");
    expect_status(&r, 2);
    expect_contains(r.err, "'frobnicate' is neither a command nor a scene (looked in .");
    assert_string_equal(r.out, "");
    run_free(&r);

    r = RUN("print", "--bogus");
    expect_status(&r, 2);
    expect_contains(r.err, "unknown option '--bogus'");
    expect_contains(r.err, "Try 'attnscope print --help'.");
    run_free(&r);

    r = RUN("print", "--stage", "nope");
    expect_status(&r, 2);
    expect_contains(r.err, "unknown stage 'nope'");
    run_free(&r);

    r = RUN("print", "--head");
    expect_status(&r, 2);
    run_free(&r);

    r = RUN("check");
    expect_status(&r, 2);
    run_free(&r);

    r = RUN("export");
    expect_status(&r, 2);
    expect_contains(r.err, "-o");
    run_free(&r);

    r = RUN("bench", "--iters", "zero");
    expect_status(&r, 2);
    run_free(&r);
}

static void test_check_good_and_bad(void **state)
{
    (void)state;
    char good[4200], bad[4200];
    snprintf(good, sizeof(good), "%s", scratch_path("good.yaml"));
    snprintf(bad, sizeof(bad), "%s", scratch_path("bad.yaml"));
    tu_write_text(good, good_scene);
    tu_write_text(bad, bad_scene);

    struct run r = RUN("check", good);
    expect_status(&r, 0);
    char want[8800];
    snprintf(want, sizeof(want), "%s: ok\n", good);
    assert_string_equal(r.out, want);
    run_free(&r);

    r = RUN("check", bad);
    expect_status(&r, 1);
    /* file:line:col: message, then the line and a caret */
    snprintf(want, sizeof(want), "%s:4:3: ", bad);
    expect_contains(r.err, want);
    expect_contains(r.err, "headz");
    expect_contains(r.err, "^");
    run_free(&r);

    /* keys.yaml and colors.yaml are checked as configuration, with the same excerpt. */
    char keys_dir[4300], keys[4400];
    snprintf(keys_dir, sizeof(keys_dir), "%s", scratch_path("cfg"));
    mkdir(keys_dir, 0755);
    snprintf(keys, sizeof(keys), "%s/keys.yaml", keys_dir);
    tu_write_text(keys, "quit: q\nundoo: u\n");
    r = RUN("check", keys);
    expect_status(&r, 1);
    snprintf(want, sizeof(want),
             "%s:2:1: unknown action 'undoo' (did you mean 'undo'?)\n"
             "  undoo: u\n  ^\n",
             keys);
    assert_string_equal(r.err, want);
    run_free(&r);

    /* Every file is checked; one bad file fails the run. */
    r = RUN("check", good, bad);
    expect_status(&r, 1);
    snprintf(want, sizeof(want), "%s: ok\n", good);
    expect_contains(r.out, want);
    run_free(&r);
}

/* Fails when text holds a byte a terminal would act on: a control character other than the line
 * break, DEL, a C1 control, a bidi control or a line/paragraph separator, or bytes that are
 * not UTF-8 (written here from the bytes, not with the library's own escaper). */
static void expect_no_raw_controls(const char *what, const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; p[i]; i++) {
        const unsigned char *c = p + i;
        bool bad = (c[0] < 0x20 && c[0] != '\n') || c[0] == 0x7f ||
                   (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f) ||
                   (c[0] == 0xe2 && c[1] == 0x80 &&
                    ((c[2] >= 0xaa && c[2] <= 0xae) || c[2] == 0x8e || c[2] == 0x8f ||
                     c[2] == 0xa8 || c[2] == 0xa9)) ||
                   (c[0] == 0xe2 && c[1] == 0x81 && c[2] >= 0xa6 && c[2] <= 0xa9) ||
                   (c[0] == 0xd8 && c[1] == 0x9c);
        int len = c[0] < 0x80             ? 1
                  : (c[0] & 0xe0) == 0xc0 ? 2
                  : (c[0] & 0xf0) == 0xe0 ? 3
                  : (c[0] & 0xf8) == 0xf0 ? 4
                                          : 0;
        for (int k = 1; k < len && !bad; k++)
            bad = (c[k] & 0xc0) != 0x80;
        if (bad || len == 0)
            fail_msg("%s: a raw byte 0x%02x at %zu in:\n%s", what, c[0], i, text);
        i += (size_t)len - 1;
    }
}

/* Tokens, titles and keys with ESC, BEL, DEL, C1 and bidi controls reach the terminal only as
 * visible escapes (\e, \x07, <U+202E>): print, heads, diff, check's message and its echoed
 * line. tokens.csv keeps them as they are. */
static void test_control_characters_escaped(void **state)
{
    (void)state;
    char evil[4200], causal[4200], raw[4200], bidi[4200];
    snprintf(evil, sizeof(evil), "%s", scratch_path("evil.yaml"));
    snprintf(causal, sizeof(causal), "%s", scratch_path("evil-causal.yaml"));
    snprintf(raw, sizeof(raw), "%s", scratch_path("raw.yaml"));
    snprintf(bidi, sizeof(bidi), "%s", scratch_path("bidi.yaml"));
    const char *scene = "version: 1\n"
                        "title: \"Evil \\e]0;pwned\\a title \\u202Eright\"\n"
                        "text: \"Hi\\e[31m red\\a \\u202Eevil x\\x7f \\x9b1m\"\n"
                        "embeddings: {dim: 4, seed: 1}\n";
    char text[1000];
    snprintf(text, sizeof(text), "%sattention: {d_out: 4, heads: 2}\n", scene);
    tu_write_text(evil, text);
    snprintf(text, sizeof(text), "%sattention: {d_out: 4, heads: 2, causal: true}\n", scene);
    tu_write_text(causal, text);
    tu_write_text(raw, "version: 1\ntext: a\x1b[2Jb\n");
    tu_write_text(bidi, "version: 1\ntext: hi\nti\xe2\x80\xaetle: x\n");
    const char *tokens = "Hi\\e[31m red\\x07 <U+202E>evil x\\x7f <U+009B>1m";

    struct run r = RUN("print", evil, "--stage", "weights");
    expect_status(&r, 0);
    expect_no_raw_controls("print", r.out);
    char want[300];
    snprintf(want, sizeof(want), "# tokens: %s\n", tokens);
    expect_contains(r.out, want);
    run_free(&r);

    r = RUN("heads", evil);
    expect_status(&r, 0);
    expect_no_raw_controls("heads", r.out);
    expect_contains(r.out, want);
    run_free(&r);

    r = RUN("diff", evil, causal, "--top", "20");
    expect_status(&r, 0);
    expect_no_raw_controls("diff", r.out);
    expect_contains(r.out, "\"Hi\\e[31m\" \u00d7 col 1 \"red\\x07\"");
    expect_contains(r.out, "\"<U+202E>evil\"");
    run_free(&r);

    r = RUN("check", raw, bidi);
    expect_status(&r, 1);
    expect_no_raw_controls("check", r.err);
    expect_contains(r.err, "raw.yaml:2:8: not valid UTF-8 text: control characters are not "
                           "allowed (byte 0x1B)\n"
                           "  text: a\\e[2Jb\n"
                           "         ^\n");
    expect_contains(r.err, "bidi.yaml:3:1: unknown key 'ti<U+202E>tle' (did you mean 'title'?)\n"
                           "  ti<U+202E>tle: x\n");
    run_free(&r);

    /* tokens.csv: the token itself, quoted. */
    char dir[4300], csv[4400];
    snprintf(dir, sizeof(dir), "%s", scratch_path("evil-export"));
    r = RUN("export", evil, "-o", dir);
    expect_status(&r, 0);
    expect_no_raw_controls("export", r.out);
    run_free(&r);
    snprintf(csv, sizeof(csv), "%s/tokens.csv", dir);
    char *got = tu_must_read_file(csv, NULL);
    assert_string_equal(got, "position,id,token\r\n0,0,\"Hi\x1b[31m\"\r\n1,1,\"red\a\"\r\n"
                             "2,2,\xe2\x80\xae"
                             "evil\r\n3,3,\"x\x7f"
                             "\"\r\n"
                             "4,4,\xc2\x9b"
                             "1m\r\n");
    free(got);
}

/* check plays a lesson and checks every number its captions mark against what the explorer
 * shows at that step, each wrong one located at its mark (tests/fixtures/lessons). */
static void test_check_lesson_marks(void **state)
{
    (void)state;
    const char *fixtures = getenv("ATTNSCOPE_FIXTURES");
    assert_non_null(fixtures);
    char wrong[4200];
    snprintf(wrong, sizeof(wrong), "%s/lessons/wrong-marks.yaml", fixtures);
    struct run r = RUN("check", wrong);
    expect_status(&r, 1);
    assert_string_equal(r.out, "");
    const char *want[] = {
        ":19:58: step 1: the caption says 0.9999, but row 0, column 5 of the weights matrix is "
        "0.1510\n"
        "        Row 0 gives {0.1510 @ 0,5} to \"step\" (right), then {0.9999 @ 0,5} (wrong).\n"
        "                                                           ^\n",
        ":23:76: step 2: the caption says 0.5517, but row 1, column 1 of the weights matrix is "
        "0.4483 (the step's cell)\n",
        ":27:32: step 3: the caption says 0.3000, but no cell of row 1 of the masked matrix is "
        "0.3000 (to 4 decimals)\n",
        ":28:11: step 3: the caption says 0.5, but row 1, column 1 of the scores matrix is 0.2\n",
        ":28:41: step 3: the caption quotes 0.1659 without a mark: write {0.1659} so it is "
        "checked against the screen\n",
        ":30:42: step 4: the caption says 0.7777, but no cell of the weights matrix is 0.7777 (to "
        "4 decimals)\n",
        ":30:59: step 4: the caption says -inf, but row 0, column 1 of the weights matrix is 0\n",
    };
    const char *at = r.err;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char line[4200 + 600];
        snprintf(line, sizeof(line), "%s%s", wrong, want[i]);
        const char *hit = strstr(at, line);
        if (!hit)
            fail_msg("expected, in order:\n%s\nin:\n%s", line, r.err);
        at = hit + strlen(line);
    }
    /* the right marks (0.1510, 0.4483, 0.2041, 0.1218, 0.5517) are not reported */
    assert_null(strstr(r.err, "says 0.1510"));
    assert_null(strstr(r.err, "says 0.4483"));
    assert_null(strstr(r.err, "says 0.2041"));
    assert_null(strstr(r.err, "says 0.1218"));
    run_free(&r);

    /* The shipped lessons pass. */
    char lesson[4200];
    snprintf(lesson, sizeof(lesson), "%s/lessons/3-causal-mask.yaml",
             getenv("ATTNSCOPE_SCENES_DIR"));
    r = RUN("check", lesson);
    expect_status(&r, 0);
    assert_string_equal(r.err, "");
    run_free(&r);
}

/* {p @ next P} marks: check compares them with the model's probability of position P's next
 * token after the step's ablation (attnscope predict's p: 0.9187 for " rain" at position 20 of
 * the induction scene; 0.0055 with its induction head off, as attnscope ablate and the panel
 * say), and refuses them past the last position and on drawn embeddings. */
static void test_check_next_marks(void **state)
{
    (void)state;
    const char *fixtures = getenv("ATTNSCOPE_FIXTURES");
    assert_non_null(fixtures);
    char path[4200], line[4800];
    snprintf(path, sizeof(path), "%s/lessons/next-marks.yaml", fixtures);
    struct run r = RUN("check", path);
    expect_status(&r, 1);
    const char *want[] = {
        ":19:34: step 2: the caption says 0.5000, but the model gives position 20's next token p "
        "0.9187\n",
        ":23:51: step 3: the caption quotes 0.9187, position 20's prediction, but the step does "
        "not show it: give the step panel: predictions and its row (or cell) on row 20\n",
        ":29:53: step 4: the caption says 0.9187, but the model gives position 20's next token p "
        "0.0055\n",
        ":34:45: step 5: the caption marks 0.5 @ next 31, but only positions 0 to 30 have a next "
        "token\n",
    };
    const char *at = r.err;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        snprintf(line, sizeof(line), "%s%s", path, want[i]);
        const char *hit = strstr(at, line);
        if (!hit)
            fail_msg("expected, in order:\n%s\nin:\n%s", line, r.err);
        at = hit + strlen(line);
    }
    assert_null(strstr(r.err, ":14:")); /* step 1's 0.9187s are right, and on screen */
    run_free(&r);

    /* check plays a lesson on the explorer's screen at 80x24: a quote out of the map's window
       is a problem, at its mark; so is one on the tiles of every head. */
    char hidden[4200], yaml[8192];
    const char *scenes = getenv("ATTNSCOPE_SCENES_DIR");
    snprintf(hidden, sizeof(hidden), "%s", scratch_path("hidden-lesson.yaml"));
    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "text: \"Your journey starts with one step\"\n"
             "tokenizer: {kind: gpt2, vocab: %s/../models/english/vocab.json, merges: "
             "%s/../models/english/merges.txt}\n"
             "model: {file: %s/../models/english/model.safetensors, arch: gpt2}\n"
             "lesson:\n"
             "  - {stage: weights, layer: 2, head: 4, cell: [0, 0],\n"
             "     caption: \"the last row gives {0.1423 @ 12,12} to itself\"}\n"
             "  - {stage: weights, layer: 2, all_heads: true,\n"
             "     caption: \"head 0 gives {1.0000 @ 0,0}\"}\n",
             scenes, scenes, scenes);
    tu_write_text(hidden, yaml);
    r = RUN("check", hidden);
    expect_status(&r, 1);
    snprintf(
        line, sizeof(line),
        "%s:7:35: step 1: the caption quotes 0.1423, row 12, column 12, which the map does not "
        "show at 80\u00d724 (out of its window, or zoomed out): quote a cell in view\n",
        hidden);
    expect_contains(r.err, line);
    snprintf(line, sizeof(line),
             "%s:9:29: step 2: the caption quotes 1.0000 from the view of every head; quote a cell "
             "on a step that shows one head (head: H), where its number is on screen\n",
             hidden);
    expect_contains(r.err, line);
    run_free(&r);

    snprintf(path, sizeof(path), "%s/lessons/next-drawn.yaml", fixtures);
    r = RUN("check", path);
    expect_status(&r, 1);
    snprintf(line, sizeof(line),
             "%s:7:28: step 1: the caption marks 0.5 @ next 2, but this scene has no vocabulary "
             "model to predict with\n",
             path);
    expect_contains(r.err, line);
    run_free(&r);
}

static void test_missing_scene_names_the_file(void **state)
{
    (void)state;
    const char *missing = scratch_path("no-such-scene.yaml");
    char path[4200];
    snprintf(path, sizeof(path), "%s", missing);
    const char *cmds[] = {"check", "print", "export", "bench"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        struct run r =
            i == 2 ? RUN(cmds[i], path, "-o", scratch_path("never")) : RUN(cmds[i], path);
        expect_status(&r, 1);
        expect_contains(r.err, path);
        run_free(&r);
    }
}

static void test_print_default(void **state)
{
    (void)state;
    struct run r = RUN("print");
    expect_status(&r, 0);
    assert_int_equal(strncmp(r.out, "# tokens: Your journey starts with one step\n# ", 46), 0);
    expect_contains(r.out, "# inputs (6\u00d73)\ntensor([[0.4300, 0.1500, 0.8900],\n");
    expect_contains(r.out, "# head 0 \u00b7 weights (6\u00d76)\ntensor([[1.0000, 0.0000,");
    expect_contains(r.out, "# head 1 \u00b7 context (6\u00d71)\n");
    /* the book's MultiHeadAttention output, first row */
    expect_contains(r.out, "# output (6\u00d72)\ntensor([[0.3190, 0.4858],\n");
    assert_string_equal(r.err, "");
    run_free(&r);
}

static void test_print_scene_file_and_filters(void **state)
{
    (void)state;
    char good[4200];
    snprintf(good, sizeof(good), "%s", scratch_path("good.yaml"));
    tu_write_text(good, good_scene);

    struct run r = RUN("print", good, "--stage", "output");
    expect_status(&r, 0);
    expect_contains(r.out, "[0.3190, 0.4858]");
    assert_null(strstr(r.out, "# inputs"));
    run_free(&r);

    r = RUN("print", "--stage", "softmax", "--head", "1");
    expect_status(&r, 0);
    expect_contains(r.out, "# head 1 \u00b7 weights (6\u00d76)");
    assert_null(strstr(r.out, "# head 0"));
    assert_null(strstr(r.out, "# head 1 \u00b7 keys"));
    run_free(&r);

    r = RUN("print", "--head=0");
    expect_status(&r, 0);
    expect_contains(r.out, "# head 0 \u00b7 queries");
    assert_null(strstr(r.out, "# head 1"));
    assert_null(strstr(r.out, "# output"));
    run_free(&r);

    /* every parameter matrix, x @ W orientation */
    r = RUN("print", "--stage", "params");
    expect_status(&r, 0);
    expect_contains(r.out, "# W_query (3\u00d72)\ntensor([[-0.2354,  0.2177],\n");
    expect_contains(r.out, "# W_out (2\u00d72)\n");
    expect_contains(r.out, "# b_out (1\u00d72)\n");
    run_free(&r);

    r = RUN("print", "--head", "7");
    expect_status(&r, 2);
    expect_contains(r.err, "head 7 out of range (scene has 2 heads)");
    assert_string_equal(r.out, "");
    run_free(&r);
}

/* Every one of files exists in dir as a regular file with something in it. */
static void expect_written(const char *dir, const char *const *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
            fail_msg("%s was not written", path);
    }
}

static void test_export_writes_files(void **state)
{
    (void)state;
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", scratch_path("export/one"));
    struct run r = RUN("export", "-o", dir);
    expect_status(&r, 0);
    run_free(&r);
    const char *files[] = {"scene.yaml",        "inputs.csv",       "params/W_query.csv",
                           "params/out.csv",    "head0/scores.csv", "head1/weights.csv",
                           "head1/context.csv", "context.csv",      "output.csv"};
    expect_written(dir, files, sizeof(files) / sizeof(files[0]));

    /* The resolved scene is a valid scene and prints the same output. */
    char yaml[8200];
    snprintf(yaml, sizeof(yaml), "%s/scene.yaml", dir);
    r = RUN("check", yaml);
    expect_status(&r, 0);
    run_free(&r);
    r = RUN("print", yaml, "--stage", "output");
    expect_status(&r, 0);
    expect_contains(r.out, "tensor([[0.3190, 0.4858],\n");
    run_free(&r);

    /* Scene first, -o last, and --output=DIR: all the same command. */
    char good[4200];
    snprintf(good, sizeof(good), "%s", scratch_path("good.yaml"));
    tu_write_text(good, good_scene);
    char opt[4400], two[4300];
    snprintf(two, sizeof(two), "%s", scratch_path("export/two"));
    snprintf(opt, sizeof(opt), "--output=%s", two);
    r = RUN("export", good, opt);
    expect_status(&r, 0);
    expect_contains(r.out, two);
    run_free(&r);
    /* It wrote good.yaml's export there: its scene prints exactly what good.yaml prints. */
    snprintf(yaml, sizeof(yaml), "%s/scene.yaml", two);
    struct run want = RUN("print", good), have = RUN("print", yaml);
    expect_status(&want, 0);
    expect_status(&have, 0);
    assert_string_equal(have.out, want.out);
    run_free(&want);
    run_free(&have);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s", two, files[i]);
        bool wrapper_only = strstr(files[i], "head1") || strstr(files[i], "out.csv");
        struct stat st;
        if (!wrapper_only && stat(path, &st) != 0)
            fail_msg("%s was not written", path);
    }
}

static void scene_path(char *out, size_t size, const char *name)
{
    const char *dir = getenv("ATTNSCOPE_SCENES_DIR");
    snprintf(out, size, "%s/%s", dir && *dir ? dir : "scenes", name);
}

/* The later systems through print and export: the KV cache line, stages a scene has not, and
 * a block scene's export that reproduces itself. */
static void test_systems_print_and_export(void **state)
{
    (void)state;
    char mla[4200], simple[4200], llama[4200], fused[4200];
    scene_path(mla, sizeof(mla), "26-mla.yaml");
    scene_path(simple, sizeof(simple), "01-simplified.yaml");
    scene_path(llama, sizeof(llama), "28-llama-block.yaml");
    scene_path(fused, sizeof(fused), "21-fused-qkv.yaml");

    struct run r = RUN("print", mla, "--stage", "latent");
    expect_status(&r, 0);
    expect_contains(r.out, "# KV cache per token: 2 floats (multi-head attention of this "
                           "shape: 16)\n");
    expect_contains(r.out, "# latent (6\u00d72)\ntensor([[-0.1465, -0.1633],\n");
    run_free(&r);

    r = RUN("print", simple, "--stage", "norm1");
    expect_status(&r, 2);
    expect_contains(r.err, "this scene has no stage norm1; its stages: inputs, queries,");
    assert_string_equal(r.out, "");
    run_free(&r);

    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", scratch_path("export/llama"));
    r = RUN("export", llama, "-o", dir);
    expect_status(&r, 0);
    run_free(&r);
    const char *files[] = {"block_output.csv",
                           "norm1.csv",
                           "ffn_hidden.csv",
                           "ffn_activated.csv",
                           "residual2.csv",
                           "norm2.csv",
                           "head3/queries_rotated.csv",
                           "head3/keys_rotated.csv",
                           "params/W_key.csv",
                           "params/ffn_W1.csv",
                           "params/ffn_b2.csv"};
    expect_written(dir, files, sizeof(files) / sizeof(files[0]));
    char yaml[4400];
    snprintf(yaml, sizeof(yaml), "%s/scene.yaml", dir);
    struct run want = RUN("print", llama), have = RUN("print", yaml);
    expect_status(&want, 0);
    expect_status(&have, 0);
    assert_string_equal(have.out, want.out);
    run_free(&want);
    run_free(&have);

    snprintf(dir, sizeof(dir), "%s", scratch_path("export/fused"));
    r = RUN("export", fused, "-o", dir);
    expect_status(&r, 0);
    run_free(&r);
    static const char *const fused_files[] = {"params/W_qkv.csv"};
    expect_written(dir, fused_files, 1);
}

/* heads: every head scored, the top of each score named, sorted and as CSV. */
static void test_heads(void **state)
{
    (void)state;
    char llama[4200];
    scene_path(llama, sizeof(llama), "28-llama-block.yaml");
    struct run r = RUN("heads", llama);
    expect_status(&r, 0);
    /* Two repeated words ("my", "are"): an induction score of 2 rows measures something
       else, and none is given (it ranked L0 H2 first, 0.18); the heading says how many rows
       each score averages, and the footer why induction has none. */
    expect_contains(r.out, "scored on the attention weights: rows 1 to 9 (9 rows), induction on "
                           "the 2 whose token occurred before\n");
    expect_contains(r.out, "    0     3     0.2430          -     0.1949     0.2240     1.6444\n");
    expect_contains(r.out, "# top: previous L0 H3 (0.24), induction -, first L0 H2 "
                           "(0.22), self L0 H3 (0.22), entropy L0 H2 (1.62)\n");
    expect_contains(r.out, "# induction -: 2 rows repeat an earlier token, fewer than the 8 the "
                           "score needs\n");
    run_free(&r);
    r = RUN("heads", llama, "--csv", "--sort", "induction");
    expect_status(&r, 0);
    expect_contains(r.out,
                    "layer,head,previous,induction,first,self,entropy,rows,induction_rows\r\n"
                    "0,0,0.225769,,0.212973,0.213459,1.646329,9,2\r\n");
    run_free(&r);
    /* The shipped English model on the book's sentence (scene 30): a layer-0 head ranked
       second by induction, 0.54, from 2 rows; now no head has a score there. */
    char english[4200];
    scene_path(english, sizeof(english), "30-english-journey.yaml");
    r = RUN("heads", english, "--sort", "induction");
    expect_status(&r, 0);
    expect_contains(r.out, "induction on the 2 whose token occurred before\n");
    expect_contains(r.out, "layer  head   previous  induction      first       self    entropy\n"
                           "    0     0 ");
    expect_contains(r.out, "# induction -: 2 rows repeat an earlier token");
    run_free(&r);
    r = RUN("heads", llama, "--sort", "bogus");
    expect_status(&r, 2);
    expect_contains(r.err, "unknown score 'bogus'");
    run_free(&r);
}

/* The shipped induction model (models/induction) names its two heads: layer 0's the previous-
 * token head, layer 1's the induction head, far above the other (README's table: 0.56, 0.77).
 * Bounds, not digits: another CPU's OpenBLAS kernels may move the last decimals. */
static void test_heads_of_the_shipped_model(void **state)
{
    (void)state;
    char scene[4200];
    scene_path(scene, sizeof(scene), "29-induction-head.yaml");
    struct run r = RUN("heads", scene, "--csv");
    expect_status(&r, 0);
    double v[2][5];
    const char *row0 = strstr(r.out, "\n0,0,"), *row1 = strstr(r.out, "\n1,0,");
    assert_non_null(row0);
    assert_non_null(row1);
    assert_int_equal(
        sscanf(row0 + 5, "%lf,%lf,%lf,%lf,%lf", &v[0][0], &v[0][1], &v[0][2], &v[0][3], &v[0][4]),
        5);
    assert_int_equal(
        sscanf(row1 + 5, "%lf,%lf,%lf,%lf,%lf", &v[1][0], &v[1][1], &v[1][2], &v[1][3], &v[1][4]),
        5);
    assert_true(v[1][1] > 0.75 && v[1][1] < 0.80); /* induction, layer 1 */
    assert_true(v[0][1] < 0.01);                   /* ... and not layer 0 */
    assert_true(v[0][0] > 0.54 && v[0][0] < 0.58); /* previous token, layer 0 */
    assert_true(v[1][0] < 0.05);                   /* ... and not layer 1 */
    assert_null(strstr(r.out, "\n2,"));            /* two layers, one head each */
    run_free(&r);
    r = RUN("heads", scene);
    expect_status(&r, 0);
    expect_contains(r.out, "# 2 layers \u00d7 1 head");
    expect_contains(r.out, "induction L1 H0 (0.77)");
    run_free(&r);
}

/* The shipped English model's named heads (models/english/README.md, table "Named heads": role,
 * head as "L2 H4", the score's name, the scene, the threshold the README claims, the figure it
 * measured): on that scene, `attnscope heads` scores each named head at or above its threshold.
 * A retrained model whose heads moved fails here until the README names them again. */
static void test_named_heads_of_the_english_model(void **state)
{
    (void)state;
    const char *dir = getenv("ATTNSCOPE_SCENES_DIR");
    char readme[4200];
    snprintf(readme, sizeof(readme), "%s/../models/english/README.md",
             dir && *dir ? dir : "scenes");
    char *text = tu_must_read_file(readme, NULL);
    const char *table = strstr(text, "## Named heads");
    assert_non_null(table);
    static const char *const scores[] = {"previous", "induction", "first"};
    bool seen[3] = {false, false, false};
    int rows = 0;
    for (const char *line = strchr(table, '\n'); line && line[1] && line[1] != '#';
         line = strchr(line + 1, '\n')) {
        int layer, head;
        char role[64], score[32], scene[256];
        double threshold, measured;
        if (sscanf(line + 1, "| %63[^|] | L%d H%d | %31[a-z] | `scenes/%255[^`]` | %lf | %lf |",
                   role, &layer, &head, score, scene, &threshold, &measured) != 7)
            continue;
        rows++;
        int col = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(score, scores[k]) == 0)
                col = k;
        assert_true(col >= 0);
        seen[col] = true;
        assert_true(threshold > 0 && measured >= threshold);
        char path[4600];
        scene_path(path, sizeof(path), scene);
        struct run r = RUN("heads", path, "--csv");
        expect_status(&r, 0);
        char key[32];
        snprintf(key, sizeof(key), "\n%d,%d,", layer, head);
        const char *row = strstr(r.out, key);
        assert_non_null(row);
        double v[3];
        assert_int_equal(sscanf(row + strlen(key), "%lf,%lf,%lf", &v[0], &v[1], &v[2]), 3);
        if (v[col] < threshold)
            fail_msg("%s: L%d H%d's %s score is %.4f, below the README's %.2f", scene, layer, head,
                     score, v[col], threshold);
        /* the README's measured figure is this run's, to the digits it prints */
        if (fabs(v[col] - measured) > 0.006)
            fail_msg("%s: L%d H%d's %s score is %.4f, the README says %.2f", scene, layer, head,
                     score, v[col], measured);
        run_free(&r);
    }
    assert_true(rows >= 3);
    assert_true(seen[0] && seen[1] && seen[2]);
    free(text);
}

/* A word the shipped model's vocabulary lacks falls apart into bytes: print and check say so
 * (the explorer's message line too: test_app). */
static void test_words_outside_the_vocabulary(void **state)
{
    (void)state;
    char models[4200], scene[4300], text[13000];
    snprintf(models, sizeof(models), "%s/../models/induction", getenv("ATTNSCOPE_SCENES_DIR"));
    snprintf(scene, sizeof(scene), "%s", scratch_path("oov.yaml"));
    snprintf(text, sizeof(text),
             "version: 1\n"
             "text: fish moon xylophone fish moon\n"
             "tokenizer: {kind: gpt2, vocab: %s/vocab.json, merges: %s/merges.txt}\n"
             "model: {file: %s/model.safetensors, arch: gpt2}\n",
             models, models, models);
    tu_write_text(scene, text);
    struct run r = RUN("print", scene, "--stage", "weights", "--layer", "0");
    expect_status(&r, 0);
    expect_contains(r.out, "# tokens: fish  moon   x y l o p h on e  fish  moon\n"
                           "# \u201cxylophone\u201d is not in this model's vocabulary: 9 tokens, "
                           "8 single bytes\n");
    run_free(&r);
    r = RUN("check", scene);
    expect_status(&r, 0);
    char want[9000];
    snprintf(want, sizeof(want),
             "%s: note: \u201cxylophone\u201d is not in this model's vocabulary: 9 tokens, 8 "
             "single bytes\n%s: ok\n",
             scene, scene);
    assert_string_equal(r.out, want);
    run_free(&r);
    /* words it has: nothing said */
    snprintf(text, sizeof(text),
             "version: 1\n"
             "text: fish moon cat fish moon cat\n"
             "tokenizer: {kind: gpt2, vocab: %s/vocab.json, merges: %s/merges.txt}\n"
             "model: {file: %s/model.safetensors, arch: gpt2}\n",
             models, models, models);
    tu_write_text(scene, text);
    r = RUN("print", scene, "--stage", "weights", "--layer", "0");
    expect_status(&r, 0);
    assert_null(strstr(r.out, "vocabulary"));
    run_free(&r);
}

/* A scene of the shipped induction model with text, written to the scratch folder. */
static const char *induction_scene(const char *name, const char *text)
{
    const char *data = getenv("ATTNSCOPE_DATA_DIR");
    char dir[2048], yaml[16384];
    snprintf(dir, sizeof(dir), "%.1900s/models/induction", data && *data ? data : ".");
    snprintf(yaml, sizeof(yaml),
             "version: 1\ntext: \"%s\"\ntokenizer: {kind: gpt2, vocab: %s/vocab.json, merges: "
             "%s/merges.txt}\nmodel: {file: %s/model.safetensors, arch: gpt2}\n",
             text, dir, dir, dir);
    const char *path = scratch_path(name);
    tu_write_text(path, yaml);
    return path;
}

/* predict on the shipped induction model: the repeated half is predicted (the induction head
 * at work), the next token's rank and probability, the summary; CSV; and bad input. Bounds,
 * not digits, as for heads: another CPU's OpenBLAS may move the last decimals. */
static void test_predict(void **state)
{
    (void)state;
    char scene[4200];
    scene_path(scene, sizeof(scene), "29-induction-head.yaml");
    struct run r = RUN("predict", scene, "--position", "20", "--top", "3");
    expect_status(&r, 0);
    expect_contains(r.out, "# next-token predictions: top 3 of 392 tokens, temperature 1\n");
    const char *at = strstr(r.out, "# position 20 ' gold' \u2192 next ' rain': rank 1, p ");
    assert_non_null(at);
    double p;
    assert_int_equal(sscanf(strstr(at, "p ") + 2, "%lf", &p), 1);
    assert_true(p > 0.90 && p < 0.94);
    expect_contains(r.out, "     1    347  ' rain'   ");
    expect_contains(r.out, "\u2190 next\n");
    assert_null(strstr(r.out, "# position 19")); /* only the one asked for */
    const char *sum = strstr(r.out, "# mean loss over positions 0 to 30: ");
    assert_non_null(sum);
    double loss, ppl;
    assert_int_equal(
        sscanf(sum, "# mean loss over positions 0 to 30: %lf nats, perplexity %lf", &loss, &ppl),
        2);
    assert_true(loss > 2.10 && loss < 2.15);
    assert_true(fabs(ppl - exp(loss)) < 1e-3 * ppl);
    run_free(&r);

    /* a lower temperature sharpens: the same top token, a higher probability */
    r = RUN("predict", scene, "-p", "20", "-k", "1", "-t", "0.5");
    expect_status(&r, 0);
    at = strstr(r.out, "next ' rain': rank 1, p ");
    assert_non_null(at);
    double sharp;
    assert_int_equal(sscanf(at + strlen("next ' rain': rank 1, p "), "%lf", &sharp), 1);
    assert_true(sharp > p);
    run_free(&r);

    r = RUN("predict", scene, "--csv", "--top", "2");
    expect_status(&r, 0);
    expect_contains(r.out, "position,rank,id,token,logit,prob\r\n0,1,");
    expect_contains(r.out, "\r\n20,1,347, rain,");
    int lines = 0;
    for (const char *c = r.out; (c = strchr(c, '\n')); c++)
        lines++;
    assert_int_equal(lines, 1 + 32 * 2);
    run_free(&r);

    /* any temperature a double holds: 1e38 gives every token alike (1 / 392), 1e-300 the top
     * token alone; a refusal names the range, as every numeric option's does */
    r = RUN("predict", scene, "-p", "20", "-k", "1", "-t", "1e38");
    expect_status(&r, 0);
    expect_contains(r.out, "next ' rain': rank 1, p 0.0026");
    run_free(&r);
    r = RUN("predict", scene, "-p", "20", "-k", "1", "-t", "1e-300");
    expect_status(&r, 0);
    expect_contains(r.out, "next ' rain': rank 1, p 1.0000");
    run_free(&r);
    static const char *const usage[][3] = {
        {"--top", "0", "invalid --top '0' (a whole number from 1 to 1000)"},
        {"--temperature", "-1", "invalid --temperature '-1' (a number above 0, at most 1.8e308)"},
        {"--temperature", "0", "invalid --temperature '0' (a number above 0, at most 1.8e308)"},
        {"--temperature", "1e400",
         "invalid --temperature '1e400' (a number above 0, at most "
         "1.8e308)"},
        {"--temperature", "abc", "invalid --temperature 'abc'"},
        {"--position", "x", "invalid position 'x' (a whole number from 0 to 8191)"},
    };
    for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
        r = RUN("predict", scene, usage[i][0], usage[i][1]);
        expect_status(&r, 2);
        expect_contains(r.err, usage[i][2]);
        expect_contains(r.err, "Try 'attnscope predict --help'.");
        run_free(&r);
    }
    r = RUN("predict");
    expect_status(&r, 2);
    expect_contains(r.err, "missing SCENE");
    run_free(&r);
    r = RUN("predict", scene, "--position", "32");
    expect_status(&r, 1);
    expect_contains(r.err,
                    "29-induction-head.yaml: --position 32: the scene has 32 tokens (0 to 31)\n");
    run_free(&r);
}

/* A forward pass that makes a value that is not a number (issue 26: PyTorch gives nan where the
 * softmax made weights of 0 of it). Two scenes: query and key weights of 3e38, and the llama-gqa
 * checkpoint under rope_scaling {linear, factor 5e-324} (its angles inf, their cosines nan). Every
 * command names the place: check, predict, lens, ablate, patch and heads refuse (exit 1, nothing
 * on stdout), print, export, render and diff warn and show the stages as computed. */
static void test_nonfinite(void **state)
{
    (void)state;
    const char *fixtures = getenv("ATTNSCOPE_FIXTURES");
    char big[4200], rope[4200], config[4200], model[4200], link[4200], out[4200], svg[4200];
    snprintf(big, sizeof(big), "%s", scratch_path("big.yaml"));
    tu_write_text(big, "text: the cat sat on the mat\n"
                       "embeddings: {dim: 3}\n"
                       "attention: {d_out: 2}\n"
                       "weights:\n"
                       "  query: [[3e38, 3e38], [3e38, 3e38], [3e38, 3e38]]\n"
                       "  key: [[3e38, -3e38], [3e38, 3e38], [-3e38, 3e38]]\n"
                       "  value: [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]\n");
    snprintf(config, sizeof(config), "%s", scratch_path("rope"));
    mkdir(config, 0755);
    snprintf(config, sizeof(config), "%s", scratch_path("rope/config.json"));
    snprintf(model, sizeof(model), "%s/../golden/families/llama-gqa/model.safetensors", fixtures);
    snprintf(link, sizeof(link), "%s", scratch_path("rope/model.safetensors"));
    unlink(link);
    assert_int_equal(symlink(model, link), 0);
    tu_write_text(config, "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\",\n"
                          " \"vocab_size\": 407, \"hidden_act\": \"silu\", \"hidden_size\": 32,\n"
                          " \"num_hidden_layers\": 2, \"num_attention_heads\": 4,\n"
                          " \"num_key_value_heads\": 2, \"intermediate_size\": 48,\n"
                          " \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0,\n"
                          " \"tie_word_embeddings\": false, \"max_position_embeddings\": 64,\n"
                          " \"rope_scaling\": {\"type\": \"linear\", \"factor\": 5e-324}}\n");
    snprintf(rope, sizeof(rope), "%s", scratch_path("rope.yaml"));
    char text[2048];
    snprintf(text, sizeof(text),
             "text: \"The river runs to the sea.\"\n"
             "tokenizer: {kind: gpt2, vocab: %s/../golden/gpt2/vocab.json, merges: "
             "%s/../golden/gpt2/merges.txt}\n"
             "model: {file: rope/model.safetensors}\n",
             fixtures, fixtures);
    tu_write_text(rope, text);
    static const char rope_at[] =
        "the forward pass makes a value that is not a number: nan at layer 0, head 0, "
        "queries_rotated, row 0 (\u201cThe\u201d), column 0";
    static const char big_at[] =
        "the forward pass makes a value that is not a number: -inf at layer 0, head 0, queries, "
        "row 1 (\u201ccat\u201d), column 0";

    struct run r = RUN("check", big, rope);
    expect_status(&r, 1);
    expect_contains(r.err, big_at);
    expect_contains(r.err, rope_at);
    assert_null(strstr(r.out, ": ok"));
    run_free(&r);

    const char *const refusing[][6] = {
        {"predict", rope, NULL}, {"lens", rope, NULL}, {"ablate", rope, NULL},
        {"heads", rope, NULL},   {"heads", big, NULL}, {"patch", rope, rope, "--metric", "loss"},
    };
    for (size_t i = 0; i < sizeof(refusing) / sizeof(refusing[0]); i++) {
        r = run_to(NULL, refusing[i]);
        expect_status(&r, 1);
        expect_contains(r.err, refusing[i][1] == big ? big_at : rope_at);
        assert_string_equal(r.out, "");
        run_free(&r);
    }

    r = RUN("print", big, "--stage", "weights");
    expect_status(&r, 0);
    expect_contains(r.err, "big.yaml: warning: ");
    expect_contains(r.err, big_at + strlen("the forward pass makes "));
    expect_contains(r.out, "tensor([[nan, nan, nan, nan, nan, nan],"); /* torch's answer */
    run_free(&r);
    snprintf(out, sizeof(out), "%s", scratch_path("nan-export"));
    r = RUN("export", big, "-o", out);
    expect_status(&r, 0);
    expect_contains(r.err, "warning: ");
    run_free(&r);
    char weights[4300];
    snprintf(weights, sizeof(weights), "%s/head0/weights.csv", out);
    char *csv = tu_must_read_file(weights, NULL);
    expect_contains(csv, "\r\nthe,nan,nan,nan,nan,nan,nan\r\n");
    free(csv);
    snprintf(svg, sizeof(svg), "%s", scratch_path("nan.svg"));
    r = RUN("render", big, "-o", svg);
    expect_status(&r, 0);
    expect_contains(r.err, "warning: ");
    run_free(&r);
    r = RUN("diff", big, big);
    expect_status(&r, 0);
    expect_contains(r.err, "warning: ");
    run_free(&r);
}

/* Scenes without a vocabulary model: every command of it says why and exits 1. */
static void test_no_vocabulary(void **state)
{
    (void)state;
    char mha[4200], simple[4200];
    scene_path(mha, sizeof(mha), "10-mha.yaml");
    scene_path(simple, sizeof(simple), "01-simplified.yaml");
    static const char *const cmds[] = {"predict", "lens", "ablate"};
    for (size_t i = 0; i < 3; i++) {
        struct run r = RUN(cmds[i], mha);
        expect_status(&r, 1);
        char want[256];
        snprintf(want, sizeof(want),
                 "10-mha.yaml: attnscope %s needs a vocabulary model: its "
                 "embeddings are rows written in the scene",
                 cmds[i]);
        expect_contains(r.err, want);
        assert_string_equal(r.out, "");
        run_free(&r);
    }
    struct run r = RUN("patch", mha, mha, "--metric", "loss");
    expect_status(&r, 1);
    expect_contains(r.err, "attnscope patch needs a vocabulary model");
    run_free(&r);
    char drawn[4200];
    snprintf(drawn, sizeof(drawn), "%s", scratch_path("drawn.yaml"));
    tu_write_text(drawn, "version: 1\ntext: the cat sat\n");
    r = RUN("predict", drawn);
    expect_status(&r, 1);
    expect_contains(r.err, "its embeddings are drawn for its own words");
    run_free(&r);
}

/* lens: every layer's top-1, as text and CSV. */
static void test_lens(void **state)
{
    (void)state;
    char scene[4200];
    scene_path(scene, sizeof(scene), "29-induction-head.yaml");
    struct run r = RUN("lens", scene, "--csv");
    expect_status(&r, 0);
    expect_contains(r.out, "layer,position,id,token,prob\r\n0,0,");
    /* layer 1 (the model's own guess) at position 20 is the induction's ' rain' */
    expect_contains(r.out, "\r\n1,20,347, rain,0.9");
    int lines = 0;
    for (const char *c = r.out; (c = strchr(c, '\n')); c++)
        lines++;
    assert_int_equal(lines, 1 + 2 * 32);
    run_free(&r);
    r = RUN("lens", scene);
    expect_status(&r, 0);
    expect_contains(r.out, "# the logit lens: each layer's residual stream");
    expect_contains(r.out, "  layer 0 ");
    expect_contains(r.out, "  layer 1\n");
    expect_contains(r.out, "' rain'     *0.9");
    run_free(&r);
    r = RUN("lens", scene, "--top", "3");
    expect_status(&r, 2);
    expect_contains(r.err, "unknown option '--top'");
    run_free(&r);
}

/* Reads the CSV rows "L,0,mode,loss,delta" of ablate into delta[L] (two layers). */
static void ablate_deltas(const char *out, double delta[2], const char *mode)
{
    for (int L = 0; L < 2; L++) {
        char key[32];
        snprintf(key, sizeof(key), "\n%d,0,%s,", L, mode);
        const char *row = strstr(out, key);
        assert_non_null(row);
        double loss;
        assert_int_equal(sscanf(row + strlen(key), "%lf,%lf", &loss, &delta[L]), 2);
    }
}

/* ablate on the shipped induction model: both heads of the circuit raise the loss of the
 * repeated half far above the clean 0.38 nats (models/induction/README.md has the numbers). */
static void test_ablate(void **state)
{
    (void)state;
    char scene[4200];
    scene_path(scene, sizeof(scene), "29-induction-head.yaml");
    struct run r = RUN("ablate", scene, "--positions", "16:31", "--csv");
    expect_status(&r, 0);
    expect_contains(r.out, "layer,head,mode,loss,delta_loss\r\n");
    double zero[2], mean[2];
    ablate_deltas(r.out, zero, "zero");
    assert_true(zero[0] > 4.0 && zero[0] < 5.0); /* the previous-token head */
    assert_true(zero[1] > 4.5 && zero[1] < 5.2); /* the induction head */
    run_free(&r);
    r = RUN("ablate", scene, "-p", "16:", "--mode", "mean", "--csv");
    expect_status(&r, 0);
    ablate_deltas(r.out, mean, "mean");
    assert_true(mean[0] > 3.0 && mean[1] > 3.0);
    run_free(&r);
    /* the whole text: the first half has nothing to copy, so the rise is about half */
    r = RUN("ablate", scene, "--csv");
    expect_status(&r, 0);
    double all[2];
    ablate_deltas(r.out, all, "zero");
    assert_true(all[1] > 1.5 && all[1] < zero[1]);
    run_free(&r);
    r = RUN("ablate", scene, "--positions", "16:31", "--sort");
    expect_status(&r, 0);
    expect_contains(r.out, "# the loss with no head ablated: 0.38");
    expect_contains(r.out, "layer  head  mode      loss  delta_loss\n    1     0  zero ");
    run_free(&r);

    r = RUN("ablate", scene, "--mode", "half");
    expect_status(&r, 2);
    expect_contains(r.err, "--mode must be zero or mean, not 'half'");
    run_free(&r);
    r = RUN("ablate", scene, "--positions", "16");
    expect_status(&r, 2);
    expect_contains(r.err, "invalid --positions '16'");
    run_free(&r);
    r = RUN("ablate", scene, "--positions", "16:40");
    expect_status(&r, 1);
    expect_contains(r.err, "--positions 16:40: the positions with a next token are 0 to 30");
    run_free(&r);
    /* the scene's own ablate: key, and a head it names that does not exist */
    const char *bad = induction_scene("ablate-bad.yaml", "fish moon king");
    FILE *f = fopen(bad, "a");
    assert_non_null(f);
    fputs("ablate:\n  - {layer: 1, head: 0, mode: zero}\n  - {layer: 1, head: 2}\n", f);
    fclose(f);
    r = RUN("ablate", bad);
    expect_status(&r, 1);
    expect_contains(r.err, "ablate-bad.yaml:7:22: ablate: head 2 does not exist: the scene has 1 "
                           "head (0 to 0)\n");
    run_free(&r);
}

/* A masked LM (tests/golden/families/scenes: BERT with two [MASK]s, and without one): what
 * ablate, patch and lens score, and the options that do not apply, refused. */
/* A model in Hugging Face's cache: snapshots/REV/ holds links into blobs/, files named by their
 * hash. An export's scene names the snapshot's files (their folder resolved, their own names
 * kept), so it opens again with config.json beside its model: resolved whole, the model was
 * ../blobs/HASH, with no config.json beside it. */
static void test_hugging_face_cache(void **state)
{
    (void)state;
    const char *root = getenv("ATTNSCOPE_SCENES_DIR");
    char hub[4300], path[4400], blob[4400], scene[4400], out[4400], from[4300];
    snprintf(hub, sizeof(hub), "%s", scratch_path("hub"));
    mkdir(hub, 0755);
    snprintf(path, sizeof(path), "%s/blobs", hub);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/snapshots", hub);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/snapshots/0123abc", hub);
    mkdir(path, 0755);
    static const char *const files[][2] = {
        {"tests/golden/families/llama-gqa/model.safetensors", "model.safetensors"},
        {"tests/golden/families/llama-gqa/config.json", "config.json"},
        {"tests/golden/gpt2/vocab.json", "vocab.json"},
        {"tests/golden/gpt2/merges.txt", "merges.txt"}};
    for (int i = 0; i < 4; i++) {
        snprintf(from, sizeof(from), "%s/../%s", root, files[i][0]);
        size_t len;
        char *data = tu_must_read_file(from, &len);
        snprintf(blob, sizeof(blob), "%s/blobs/5e1f%d0c9a", hub, i);
        tu_write_file(blob, data, len);
        free(data);
        snprintf(path, sizeof(path), "%s/snapshots/0123abc/%s", hub, files[i][1]);
        unlink(path);
        char target[64];
        snprintf(target, sizeof(target), "../../blobs/5e1f%d0c9a", i);
        assert_int_equal(symlink(target, path), 0);
    }
    snprintf(scene, sizeof(scene), "%s/scene.yaml", hub);
    tu_write_text(scene, "text: the river runs\n"
                         "tokenizer: {kind: gpt2, vocab: snapshots/0123abc/vocab.json,\n"
                         "            merges: snapshots/0123abc/merges.txt}\n"
                         "model: {file: snapshots/0123abc/model.safetensors}\n");
    snprintf(out, sizeof(out), "%s/out", hub);
    struct run r = RUN("export", scene, "-o", out);
    expect_status(&r, 0);
    run_free(&r);
    snprintf(path, sizeof(path), "%s/out/scene.yaml", hub);
    char *saved = tu_must_read_file(path, NULL);
    expect_contains(saved, "\"../snapshots/0123abc/model.safetensors\"");
    expect_contains(saved, "\"../snapshots/0123abc/vocab.json\"");
    assert_null(strstr(saved, "blobs"));
    free(saved);
    r = RUN("predict", path);
    expect_status(&r, 0);
    expect_contains(r.out, "mean loss");
    run_free(&r);
}

/* A scene that makes a checkpoint compute otherwise than it was trained (attention.heads 4 of
 * the English model's 8, layers 2 of 4, no scaling) is allowed: check warns at each key, and
 * every command whose numbers are the model's says it is modified under its tokens; the scene
 * as trained says nothing. */
static void test_modified_model(void **state)
{
    (void)state;
    const char *data = getenv("ATTNSCOPE_DATA_DIR");
    char dir[2048], yaml[8192], modified[4200], clean[4200];
    snprintf(dir, sizeof(dir), "%.1900s/models/english", data && *data ? data : ".");
    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "text: \"Your journey starts with one step\"\n"
             "tokenizer: {kind: gpt2, vocab: %s/vocab.json, merges: %s/merges.txt}\n"
             "model: {file: %s/model.safetensors, arch: gpt2}\n"
             "attention: {heads: 4, scale: false}\n"
             "layers: 2\n",
             dir, dir, dir);
    snprintf(modified, sizeof(modified), "%s", scratch_path("modified.yaml"));
    tu_write_text(modified, yaml);
    snprintf(clean, sizeof(clean), "%s", scratch_path("as-trained.yaml"));
    char *cut = strstr(yaml, "attention:");
    *cut = '\0';
    tu_write_text(clean, yaml);

    struct run r = RUN("check", modified);
    expect_status(&r, 0);
    expect_contains(r.err, "modified.yaml:5:13: warning: 'attention.heads' modifies the "
                           "checkpoint (heads 8 \u2192 4): what it computes is not the model as "
                           "trained, nor are its predictions\n");
    expect_contains(r.err, "modified.yaml:5:23: warning: 'attention.scale' modifies the "
                           "checkpoint (scaling off)");
    expect_contains(r.err, "modified.yaml:6:1: warning: 'layers' modifies the checkpoint (layers 4 "
                           "\u2192 2)");
    expect_contains(r.out, "modified.yaml: ok\n");
    run_free(&r);
    const char *line = "# modified model: heads 8 \u2192 4, layers 4 \u2192 2, scaling off (not "
                       "the checkpoint as trained)\n";
    const char *const commands[][7] = {
        {"predict", modified, "--position", "2", "--top", "3"},
        {"lens", modified, NULL},
        {"ablate", modified, NULL},
        {"heads", modified, NULL},
        {"print", modified, "--stage", "weights", "--head", "0"},
    };
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        r = run_to(NULL, commands[i]);
        expect_status(&r, 0);
        expect_contains(r.out, line);
        expect_contains(r.err, "warning: 'attention.heads' modifies the checkpoint");
        run_free(&r);
        const char *as_trained[7];
        memcpy(as_trained, commands[i], sizeof(as_trained));
        as_trained[1] = clean;
        r = run_to(NULL, as_trained);
        expect_status(&r, 0);
        assert_null(strstr(r.out, "modified"));
        assert_string_equal(r.err, "");
        run_free(&r);
    }
    char corrupt[4200];
    snprintf(corrupt, sizeof(corrupt), "%s", scratch_path("modified-two.yaml"));
    char *text = tu_must_read_file(modified, NULL);
    char *one = strstr(text, "one step");
    memcpy(one, "two", 3);
    tu_write_text(corrupt, text);
    free(text);
    r = RUN("patch", modified, corrupt, "--metric", "loss");
    expect_status(&r, 0);
    expect_contains(r.out, "# clean: modified model: heads 8 \u2192 4");
    expect_contains(r.out, "# corrupted: modified model: heads 8 \u2192 4");
    run_free(&r);
}

/* attnscope(1) has EXAMPLES, made from the commands' declarations as --help's "examples:" are
 * (the manual had none), and every example runs as written, from a folder of its own with the
 * shipped scenes found by name; the explorer's are the ones whose second word is no command. */
static void test_examples_run(void **state)
{
    (void)state;
    struct run man = RUN("help", "--man", "attnscope");
    expect_status(&man, 0);
    const char *ex = strstr(man.out, "\n.SH EXAMPLES\n");
    assert_non_null(ex);
    const char *end = strstr(ex + 1, "\n.SH ");
    assert_non_null(end);
    char cwd[4200];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    char *dir = scratch_path("examples");
    mkdir(dir, 0755);
    assert_int_equal(chdir(dir), 0);
    int ran = 0, explorer = 0;
    for (const char *p = strstr(ex, "\\fBattnscope "); p && p < end;
         p = strstr(p + 1, "\\fBattnscope ")) {
        /* the line, its roff undone: \- is -, \fR ends it */
        char line[512];
        size_t n = 0;
        for (const char *q = p + 3; *q && strncmp(q, "\\fR", 3) != 0 && n + 1 < sizeof(line); q++)
            if (!(q[0] == '\\' && q[1] == '-'))
                line[n++] = *q;
        line[n] = '\0';
        char *words[16];
        int nw = 0;
        for (char *save = NULL, *w = strtok_r(line, " ", &save); w && nw < 15;
             w = strtok_r(NULL, " ", &save))
            words[nw++] = w;
        assert_true(nw >= 2);
        struct run r = RUN("help", words[1]);
        bool command = r.status == 0;
        run_free(&r);
        if (!command) { /* the explorer on a shipped scene: it exists */
            struct run c = RUN("check", words[1]);
            expect_status(&c, 0);
            run_free(&c);
            explorer++;
            continue;
        }
        words[nw] = NULL;
        r = run_to(NULL, (const char *const *)words + 1);
        if (r.status != 0)
            fail_msg("the example '%s' exits %d:\n%s", p, r.status, r.err);
        run_free(&r);
        ran++;
    }
    assert_int_equal(chdir(cwd), 0);
    assert_true(ran >= 10);
    assert_true(explorer >= 1);
    struct stat st;
    assert_int_equal(stat(scratch_path("examples/head1.svg"), &st), 0);
    run_free(&man);
    /* predict's help names both shipped models (it named models/induction alone) */
    struct run r = RUN("predict", "--help");
    expect_contains(r.out, "models/english");
    expect_contains(r.out, "models/induction");
    expect_contains(r.out, "examples:\n  attnscope predict 30-english-journey");
    run_free(&r);
}

/* What a checkpoint's config.json is read past without a refusal is said on stderr, by every
 * command, at its file:line:col; the command goes on (exit 0). A RoPE checkpoint past its
 * positions computes them, and says so. */
static void test_checkpoint_warnings(void **state)
{
    (void)state;
    char dir[4300], from[4200], path[4400], scene[4400];
    snprintf(dir, sizeof(dir), "%s", scratch_path("warned"));
    mkdir(dir, 0755);
    snprintf(from, sizeof(from), "%s/../tests/golden/families/llama-gqa/model.safetensors",
             getenv("ATTNSCOPE_SCENES_DIR"));
    size_t len;
    char *data = tu_must_read_file(from, &len);
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    tu_write_file(path, data, len);
    free(data);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    tu_write_text(path,
                  "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 407,\n"
                  " \"hidden_size\": 32, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,\n"
                  " \"num_key_value_heads\": 2, \"intermediate_size\": 48,\n"
                  " \"max_position_embeddings\": 4, \"flash_sparse\": true,\n"
                  " \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0,\n"
                  "                     \"beta_fast\": 32}}\n");
    snprintf(scene, sizeof(scene), "%s/scene.yaml", dir);
    char text[9000];
    snprintf(text, sizeof(text),
             "text: the cat sat\n"
             "tokenizer: {kind: gpt2, vocab: %s/../tests/golden/gpt2/vocab.json,\n"
             "            merges: %s/../tests/golden/gpt2/merges.txt}\n"
             "model: {file: model.safetensors}\n",
             getenv("ATTNSCOPE_SCENES_DIR"), getenv("ATTNSCOPE_SCENES_DIR"));
    tu_write_text(scene, text);
    char want[9000];
    snprintf(want, sizeof(want),
             "%s/config.json:4:32: warning: unknown key 'flash_sparse' (not in transformers' "
             "LlamaConfig): attnscope ignores it\n"
             "%s/config.json:6:22: warning: 'beta_fast' of rope_parameters: rope type default "
             "takes no such field (transformers ignores it, and so does attnscope)\n",
             dir, dir);
    struct run r = RUN("check", scene);
    expect_status(&r, 0);
    assert_string_equal(r.err, want);
    char ok[4500];
    snprintf(ok, sizeof(ok), "%s: ok\n", scene);
    assert_string_equal(r.out, ok);
    run_free(&r);
    /* 7 tokens past 4 positions: computed, and said */
    snprintf(text, sizeof(text),
             "text: the cat sat on the mat\n"
             "tokenizer: {kind: gpt2, vocab: %s/../tests/golden/gpt2/vocab.json,\n"
             "            merges: %s/../tests/golden/gpt2/merges.txt}\n"
             "model: {file: model.safetensors}\n",
             getenv("ATTNSCOPE_SCENES_DIR"), getenv("ATTNSCOPE_SCENES_DIR"));
    tu_write_text(scene, text);
    size_t o = strlen(want);
    snprintf(want + o, sizeof(want) - o,
             "%s: warning: 7 tokens, past the checkpoint's 4 positions "
             "(max_position_embeddings): computed as transformers computes them, on positions "
             "the model was not trained on\n",
             scene);
    r = RUN("predict", scene);
    expect_status(&r, 0);
    assert_string_equal(r.err, want);
    expect_contains(r.out, "rank");
    run_free(&r);
}

static void test_masked_lm(void **state)
{
    (void)state;
    char pair[4200], dog[4200], nomask[4200];
    const char *dir = getenv("ATTNSCOPE_SCENES_DIR");
    snprintf(pair, sizeof(pair), "%s/../tests/golden/families/scenes/bert-pair.yaml", dir);
    snprintf(dog, sizeof(dog), "%s/../tests/golden/families/scenes/bert-dog.yaml", dir);
    snprintf(nomask, sizeof(nomask), "%s/../tests/golden/families/scenes/bert-nomask.yaml", dir);
    /* the model's own answer at each [MASK], or the ones named */
    struct run r = RUN("ablate", pair);
    expect_status(&r, 0);
    expect_contains(r.out, "# the loss: -ln p of the answer at each [MASK]: 6 'river', 13 'river'\n"
                           "# the loss with no head ablated: 0.7406 nats\n");
    run_free(&r);
    r = RUN("ablate", pair, "--answer", "mat,#16", "--positions", "7:16");
    expect_status(&r, 0);
    expect_contains(r.out, "over positions 7 to 15\n# the loss: -ln p of the answer at each "
                           "[MASK]: 6 'mat', 13 'day'\n");
    run_free(&r);
    r = RUN("ablate", nomask);
    expect_status(&r, 0);
    expect_contains(r.out, "-ln p of each position's own token (the text has no [MASK])");
    run_free(&r);
    r = RUN("lens", pair);
    expect_status(&r, 0);
    expect_contains(r.out, "  pos  token        itself ");
    expect_contains(r.out, "    6  [MASK]       -  ");
    run_free(&r);
    r = RUN("patch", pair, dog, "--metric", "prob:mat");
    expect_status(&r, 0);
    expect_contains(r.out, "# metric: p('mat') at position 6 '[MASK]'\n");
    run_free(&r);
    r = RUN("patch", pair, dog, "--metric", "prob:mat", "--position", "13");
    expect_status(&r, 0);
    expect_contains(r.out, "# metric: p('mat') at position 13 '[MASK]'\n");
    run_free(&r);
    /* refused: the message says why, usage errors exit 2 */
    r = RUN("ablate", pair, "--answer", "mat,day,sea");
    expect_status(&r, 2);
    expect_contains(r.err, "--answer: 3 answers for 2 [MASK]s");
    run_free(&r);
    r = RUN("ablate", pair, "--answer", "zebra");
    expect_status(&r, 2);
    expect_contains(r.err, "--answer zebra: 'zebra' is not in the vocabulary: the tokenizer makes "
                           "[UNK] of it");
    run_free(&r);
    r = RUN("ablate", pair, "--answer", "#30");
    expect_status(&r, 2);
    expect_contains(r.err, "--answer #30: an id is #0 to #29");
    run_free(&r);
    r = RUN("ablate", nomask, "--answer", "mat");
    expect_status(&r, 2);
    expect_contains(r.err, "has no [MASK] to answer");
    run_free(&r);
    r = RUN("ablate", pair, "--positions", "0:6");
    expect_status(&r, 1);
    expect_contains(r.err, "positions 0 to 5 score no token");
    run_free(&r);
    r = RUN("patch", pair, dog, "--metric", "prob:mat", "--position", "16");
    expect_status(&r, 2);
    expect_contains(r.err, "invalid --position '16': the scenes have 16 tokens (0 to 15)");
    run_free(&r);
    r = RUN("patch", nomask, pair, "--metric", "prob:mat");
    expect_status(&r, 1);
    expect_contains(r.err, "reads the first [MASK], and the text has none");
    run_free(&r);
    r = RUN("patch", pair, dog, "--metric", "loss", "--position", "3");
    expect_status(&r, 2);
    expect_contains(r.err, "--position is for logit_diff and prob");
    run_free(&r);
    char gpt2[4200];
    snprintf(gpt2, sizeof(gpt2), "%s/../tests/golden/families/scenes/llama-gqa.yaml", dir);
    r = RUN("ablate", gpt2, "--answer", "the");
    expect_status(&r, 2);
    expect_contains(r.err, "--answer names what fills a [MASK] of a masked language model");
    run_free(&r);
}

/* patch: the induction model's clean and corrupted pair, every metric kind, and the errors. */
static void test_patch(void **state)
{
    (void)state;
    char clean[4300], corrupt[4300];
    snprintf(clean, sizeof(clean), "%s",
             induction_scene("clean.yaml", "fish moon king door gold rain lake tree wolf sand "
                                           "fish moon king door gold rain lake"));
    snprintf(corrupt, sizeof(corrupt), "%s",
             induction_scene("corrupt.yaml", "fish moon king door gold rain lake bird wolf sand "
                                             "fish moon king door gold rain lake"));
    struct run r = RUN("patch", clean, corrupt, "--metric", "logit_diff: tree: bird", "--csv");
    expect_status(&r, 0);
    expect_contains(r.out, "layer,head,metric,recovered\r\n0,0,");
    double metric[2], rec[2];
    for (int L = 0; L < 2; L++) {
        char key[16];
        snprintf(key, sizeof(key), "\n%d,0,", L);
        const char *row = strstr(r.out, key);
        assert_non_null(row);
        assert_int_equal(sscanf(row + strlen(key), "%lf,%lf", &metric[L], &rec[L]), 2);
        assert_true(rec[L] > -0.1 && rec[L] < 1.1);
    }
    /* the induction head reads the answer from the earlier "lake tree": patching it recovers
     * nearly everything */
    assert_true(rec[1] > 0.8);
    run_free(&r);
    r = RUN("patch", clean, corrupt, "--metric", "logit_diff: tree: bird");
    expect_status(&r, 0);
    expect_contains(r.out, "# metric: logit(' tree') - logit(' bird') at the last position\n");
    expect_contains(r.out, "layer  head      metric  recovered\n");
    run_free(&r);
    r = RUN("patch", clean, corrupt, "-m", "prob: tree");
    expect_status(&r, 0);
    expect_contains(r.out, "# metric: p(' tree') at the last position\n");
    run_free(&r);
    r = RUN("patch", clean, corrupt, "-m", "loss");
    expect_status(&r, 0);
    expect_contains(r.out, "# metric: the mean loss of the clean text's next tokens\n");
    run_free(&r);

    /* bad input: located, exit 1 */
    r = RUN("patch", clean, corrupt, "--metric", "prob: treez");
    expect_status(&r, 1);
    expect_contains(r.err, "clean.yaml: --metric prob: treez: ' treez' is not a single token: the "
                           "tokenizer makes 2 of it (' tree' + 'z')\n");
    run_free(&r);
    const char *shorter = induction_scene("shorter.yaml", "fish moon king");
    r = RUN("patch", clean, shorter, "--metric", "loss");
    expect_status(&r, 1);
    expect_contains(r.err, "clean.yaml and ");
    expect_contains(r.err, "shorter.yaml differ in length: 17 tokens, and 3");
    run_free(&r);
    /* the same text in another model: the shipped scene is the induction model too, so a copy
     * of its checkpoint elsewhere names another file */
    char other_dir[4300], other[4300];
    snprintf(other_dir, sizeof(other_dir), "%s", scratch_path("other-model"));
    mkdir(other_dir, 0755);
    const char *data = getenv("ATTNSCOPE_DATA_DIR");
    static const char *const files[] = {"model.safetensors", "config.json", "vocab.json",
                                        "merges.txt"};
    for (int i = 0; i < 4; i++) {
        char from[4300], to[4400];
        snprintf(from, sizeof(from), "%s/models/induction/%s", data && *data ? data : ".",
                 files[i]);
        snprintf(to, sizeof(to), "%s/%s", other_dir, files[i]);
        tu_copy_file(from, to);
    }
    snprintf(other, sizeof(other), "%.4200s/other.yaml", other_dir);
    char yaml[9000];
    snprintf(yaml, sizeof(yaml),
             "version: 1\ntext: \"fish moon king door gold rain lake bird wolf sand fish moon "
             "king door gold rain lake\"\ntokenizer: {kind: gpt2, vocab: vocab.json, merges: "
             "merges.txt}\nmodel: {file: model.safetensors, arch: gpt2}\n");
    tu_write_text(other, yaml);
    r = RUN("patch", clean, other, "--metric", "loss");
    expect_status(&r, 1);
    expect_contains(r.err, "differ in model: ");
    expect_contains(r.err, "patching needs one model\n");
    run_free(&r);
    /* wrong usage: exit 2 */
    static const char *const usage[][2] = {
        {"logit_diff: tree", "--metric logit_diff needs two tokens"},
        {"entropy", "unknown metric 'entropy' (logit_diff:A:B, prob:A or loss)"},
        {"loss: tree", "--metric loss takes no token"},
    };
    for (size_t i = 0; i < 3; i++) {
        r = RUN("patch", clean, corrupt, "--metric", usage[i][0]);
        expect_status(&r, 2);
        expect_contains(r.err, usage[i][1]);
        run_free(&r);
    }
    r = RUN("patch", clean, corrupt);
    expect_status(&r, 2);
    expect_contains(r.err, "missing --metric");
    run_free(&r);
    r = RUN("patch", clean, "--metric", "loss");
    expect_status(&r, 2);
    expect_contains(r.err, "needs two scenes");
    run_free(&r);
}

/* export of a vocabulary model: predictions.csv (--top), loss.csv, lens.csv, rollout; CSV in
 * the npy format too. A book scene has the rollout only. */
static void test_export_predictions(void **state)
{
    (void)state;
    char scene[4200], out[4300];
    scene_path(scene, sizeof(scene), "29-induction-head.yaml");
    snprintf(out, sizeof(out), "%s", scratch_path("exp-pred"));
    struct run r = RUN("export", scene, "-o", out, "--top", "3");
    expect_status(&r, 0);
    run_free(&r);
    char path[4400];
    snprintf(path, sizeof(path), "%s/predictions.csv", out);
    char *text = tu_must_read_file(path, NULL);
    expect_contains(text, "position,rank,id,token,logit,prob\r\n");
    expect_contains(text, "\r\n20,1,347, rain,");
    assert_null(strstr(text, "\r\n0,4,"));
    free(text);
    snprintf(path, sizeof(path), "%s/loss.csv", out);
    text = tu_must_read_file(path, NULL);
    expect_contains(text, "position,next_id,next_token,prob,loss\r\n0,360, moon,");
    expect_contains(text, "\r\n30,");
    assert_null(strstr(text, "\r\n31,"));
    free(text);
    snprintf(path, sizeof(path), "%s/lens.csv", out);
    text = tu_must_read_file(path, NULL);
    expect_contains(text, "layer,position,id,token,prob\r\n0,0,");
    free(text);
    static const char *const more[] = {"rollout.csv", "layer0/rollout.csv", "layer1/rollout.csv",
                                       "layer1/head0/weighted_norm.csv"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/%s", out, more[i]);
        free(tu_must_read_file(path, NULL));
    }
    r = RUN("export", scene, "-o", out, "--format", "npy");
    expect_status(&r, 0);
    run_free(&r);
    snprintf(path, sizeof(path), "%s/predictions.csv", out);
    text = tu_must_read_file(path, NULL);
    expect_contains(text, "\r\n0,10,"); /* the default top 10 */
    free(text);
    snprintf(path, sizeof(path), "%s/rollout.npy", out);
    free(tu_must_read_file(path, NULL));
    r = RUN("export", scene, "-o", out, "--top", "0");
    expect_status(&r, 2);
    expect_contains(r.err, "invalid --top '0'");
    run_free(&r);

    char mha[4200];
    scene_path(mha, sizeof(mha), "10-mha.yaml");
    snprintf(out, sizeof(out), "%s", scratch_path("exp-book"));
    r = RUN("export", mha, "-o", out);
    expect_status(&r, 0);
    run_free(&r);
    snprintf(path, sizeof(path), "%s/rollout.csv", out);
    text = tu_must_read_file(path, NULL);
    expect_contains(text, "token,Your,journey,starts,with,one,step\r\nYour,1,0,0,0,0,0\r\n");
    free(text);
    snprintf(path, sizeof(path), "%s/predictions.csv", out);
    assert_null(tu_read_file(path, NULL));
}

/* Output that never arrives is an error for every command: exit 1 and a message. */
static void test_stdout_errors(void **state)
{
    (void)state;
    char dir[4300], good[4300];
    snprintf(dir, sizeof(dir), "%s", scratch_path("export/full"));
    snprintf(good, sizeof(good), "%s", scratch_path("good.yaml"));
    tu_write_text(good, good_scene);
    const char *const cmds[][6] = {
        {"check", good, NULL},
        {"print", good, NULL},
        {"export", good, "-o", dir, NULL},
        {"bench", "-n", "3", good, NULL},
        {"keys", NULL},
        {"--help", NULL},
        {"--version", NULL},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        struct run r = run_to("/dev/full", cmds[i]);
        if (r.status != 1 || !strstr(r.err, "cannot write to standard output: No space left"))
            fail_msg("attnscope %s > /dev/full: status %d, stderr:\n%s", cmds[i][0], r.status,
                     r.err);
        run_free(&r);
    }
}

/* --format npy: the same layout with .npy matrices; --format=csv the default's; anything else
 * is wrong usage, refused before a file is written. Either export is a target for the other. */
static void test_export_format(void **state)
{
    (void)state;
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", scratch_path("export/npy"));
    struct run r = RUN("export", "-o", dir, "--format", "xml");
    expect_status(&r, 2);
    expect_contains(r.err, "--format must be csv or npy, not 'xml'");
    expect_contains(r.err, "Try 'attnscope export --help'.");
    run_free(&r);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0);

    r = RUN("export", "--format", "npy", "-o", dir);
    expect_status(&r, 0);
    run_free(&r);
    const char *npy[] = {"scene.yaml",         "tokens.csv",        "inputs.npy",
                         "params/W_query.npy", "params/out.npy",    "head0/scores.npy",
                         "head1/weights.npy",  "head1/context.npy", "context.npy",
                         "output.npy"};
    expect_written(dir, npy, sizeof(npy) / sizeof(npy[0]));
    char path[4400];
    snprintf(path, sizeof(path), "%s/output.csv", dir);
    assert_int_not_equal(stat(path, &st), 0);
    char yaml[4400];
    snprintf(yaml, sizeof(yaml), "%s/scene.yaml", dir);
    r = RUN("check", yaml);
    expect_status(&r, 0);
    run_free(&r);

    r = RUN("export", "-f", "csv", "-o", dir);
    expect_status(&r, 0);
    run_free(&r);
    const char *csv[] = {"output.csv", "head1/weights.csv"};
    expect_written(dir, csv, 2);
    snprintf(path, sizeof(path), "%s/output.npy", dir);
    assert_int_not_equal(stat(path, &st), 0);
}

/* A folder that is not an export is never replaced. */
static void test_export_refuses_foreign_folder(void **state)
{
    (void)state;
    char dir[4300], notes[4400];
    snprintf(dir, sizeof(dir), "%s", scratch_path("mine"));
    mkdir(dir, 0755);
    snprintf(notes, sizeof(notes), "%s/notes.txt", dir);
    tu_write_text(notes, "keep me\n");
    struct run r = RUN("export", "-o", dir);
    expect_status(&r, 1);
    expect_contains(r.err, "not an attnscope export: it holds notes.txt but no .attnscope-export");
    run_free(&r);
    char *kept = tu_must_read_file(notes, NULL);
    assert_string_equal(kept, "keep me\n");
    free(kept);
}

static void test_export_bad_output_path(void **state)
{
    (void)state;
    char file[4200], dir[4300];
    snprintf(file, sizeof(file), "%s", scratch_path("a-plain-file"));
    tu_write_text(file, "not a folder\n");
    snprintf(dir, sizeof(dir), "%s/out", file);
    struct run r = RUN("export", "-o", dir);
    expect_status(&r, 1);
    expect_contains(r.err, file);
    run_free(&r);
}

/* render: a picture written whole; wrong command lines exit 2 before anything is loaded, a bad
 * scene exits 1 at its line and column, and a file that is not an SVG is never replaced. */
static void test_render(void **state)
{
    (void)state;
    char good[4200], bad[4200], out[4200];
    snprintf(good, sizeof(good), "%s", scratch_path("render.yaml"));
    snprintf(bad, sizeof(bad), "%s", scratch_path("render-bad.yaml"));
    snprintf(out, sizeof(out), "%s", scratch_path("picture.svg"));
    tu_write_text(good, good_scene);
    tu_write_text(bad, bad_scene);

    struct run r = RUN("render", good, "--all-heads", "--values", "-o", out);
    expect_status(&r, 0);
    /* What was written, then what it shows: never "x.svg: wrote scene.yaml", which reads as if
       the scene had been overwritten. */
    char said[9000];
    snprintf(said, sizeof(said), "wrote %s (%s, weights, all heads)\n", out, good);
    assert_string_equal(r.out, said);
    char *svg = tu_must_read_file(out, NULL);
    assert_non_null(svg);
    assert_int_equal(strncmp(svg, "<?xml", 5), 0);
    expect_contains(svg, "all 2 heads");
    expect_contains(svg, "</svg>\n");
    free(svg);
    run_free(&r);

    r = RUN("render", good, "--head", "1", "--scale", "log", "-o", out); /* replaces an SVG */
    expect_status(&r, 0);
    snprintf(said, sizeof(said), "wrote %s (%s, weights, head 1, log scale)\n", out, good);
    assert_string_equal(r.out, said);
    svg = tu_must_read_file(out, NULL);
    assert_non_null(svg);
    expect_contains(svg, "head 1 of 2");
    expect_contains(svg, "colour scale: log");
    free(svg);
    run_free(&r);

    const char *usage[][8] = {
        {"render", good, NULL},                                          /* no -o */
        {"render", good, "--scale", "rows", "-o", out, NULL},            /* unknown scale */
        {"render", good, "--stage", "nope", "-o", out, NULL},            /* unknown stage */
        {"render", good, "--head", "1", "--all-heads", "-o", out, NULL}, /* two choices */
        {"render", good, "--head", "2", "-o", out, NULL},                /* the scene has 2 */
        {"render", good, "--layer", "1", "-o", out, NULL},               /* and 1 layer */
        {"render", good, "--stage", "ffn_out", "-o", out, NULL},         /* a stage it lacks */
        {"render", good, "-o", scratch, NULL},                           /* a folder */
    };
    for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
        r = run_to(NULL, usage[i]);
        expect_status(&r, 2);
        assert_true(r.err[0] != '\0');
        run_free(&r);
    }

    r = RUN("render", bad, "-o", out);
    expect_status(&r, 1);
    char want[8800];
    snprintf(want, sizeof(want), "%s:4:3: ", bad);
    expect_contains(r.err, want);
    run_free(&r);

    r = RUN("render", good, "-o", bad); /* a scene given by mistake is not overwritten */
    expect_status(&r, 1);
    expect_contains(r.err, "not an SVG");
    char *kept = tu_must_read_file(bad, NULL);
    assert_string_equal(kept, bad_scene);
    free(kept);
    run_free(&r);
}

/* The value at (row, col) of `attnscope print SCENE --stage weights --head 0`, as printed. */
static void printed_weight(char *out, size_t size, const char *scene, int row, int col)
{
    struct run r = RUN("print", scene, "--stage", "weights", "--head", "0");
    expect_status(&r, 0);
    const char *p = strstr(r.out, "tensor([");
    assert_non_null(p);
    for (int i = 0; i < row; i++)
        assert_non_null(p = strchr(p + 1, '\n'));
    p = strchr(p, '[');
    while (*p == '[')
        p++;
    for (int j = 0; j < col; j++)
        assert_non_null(p = strchr(p, ',') + 1);
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, ",]");
    snprintf(out, size, "%.*s", (int)n, p);
    run_free(&r);
}

/* diff: 04 and 05 are the same weights with and without the causal mask. The top change's
 * numbers are the ones `print` shows for each scene at that cell. */
static void test_diff(void **state)
{
    (void)state;
    char a_path[4200], b_path[4200], shoes[4200];
    scene_path(a_path, sizeof(a_path), "04-self-attention-v2.yaml");
    scene_path(b_path, sizeof(b_path), "05-causal.yaml");
    scene_path(shoes, sizeof(shoes), "12-shoes-single-head.yaml");
    setenv("LC_ALL", "C.UTF-8", 1);
    struct run r = RUN("diff", a_path, b_path, "--top", "3");
    expect_status(&r, 0);
    expect_contains(r.out, "# head 0 \u00b7 weights: A 6\u00d76, B 6\u00d76\n");
    expect_contains(r.out, "max |\u0394| 0.8079 at row 0 \u00d7 col 0");
    expect_contains(r.out, "top 3 changes");
    expect_contains(r.out, "\u2591"); /* the map, in shade blocks */
    /* The top change: row 0 "Your" x col 0, causal makes it 1. */
    char a[32], b[32], line[200];
    printed_weight(a, sizeof(a), a_path, 0, 0);
    printed_weight(b, sizeof(b), b_path, 0, 0);
    snprintf(line, sizeof(line), "  row 0 \"Your\" \u00d7 col 0 \"Your\": %s \u2192 %s (+0.8079)\n",
             a, b);
    expect_contains(r.out, line);
    assert_string_equal(b, "1.0000");
    /* the second: row 1 "journey" x col 0 */
    printed_weight(a, sizeof(a), a_path, 1, 0);
    printed_weight(b, sizeof(b), b_path, 1, 0);
    snprintf(line, sizeof(line), "  row 1 \"journey\" \u00d7 col 0 \"Your\": %s \u2192 %s (+", a,
             b);
    expect_contains(r.out, line);
    run_free(&r);

    /* ASCII under LC_ALL=C: the same numbers, no shade blocks. */
    setenv("LC_ALL", "C", 1);
    r = RUN("diff", a_path, b_path, "--top", "1");
    expect_status(&r, 0);
    expect_contains(r.out, "  row 0 \"Your\" x col 0 \"Your\": 0.1921 -> 1.0000 (+0.8079)\n");
    assert_null(strstr(r.out, "\u2591"));
    expect_contains(r.out, "|d| map (## = 0.8079");
    run_free(&r);
    unsetenv("LC_ALL");

    /* --csv: the top K, every number exact (b - a in float). */
    r = RUN("diff", a_path, b_path, "--top", "2", "--csv");
    expect_status(&r, 0);
    expect_contains(r.out, "layer,head,row,col,a,b,delta\r\n0,0,0,0,0.19212604,1,0.80787396\r\n"
                           "0,0,1,0,");
    run_free(&r);

    /* --head all on a one-head scene: head 0 only; the same scene twice: nothing changes. */
    r = RUN("diff", a_path, a_path, "--head", "all", "--stage", "masked");
    expect_status(&r, 0);
    expect_contains(r.out, "max |\u0394| 0.0000");
    run_free(&r);

    /* Two texts of one length: a change is named by both scenes' tokens where they differ,
       never by A's alone (B's row 2 is " rain"'s, not " king"'s). */
    char ka[4200], kb[4200];
    snprintf(ka, sizeof(ka), "%s",
             induction_scene("diff-a.yaml", "fish moon king door fish moon king door"));
    snprintf(kb, sizeof(kb), "%s",
             induction_scene("diff-b.yaml", "fish moon rain door fish moon rain door"));
    r = RUN("diff", ka, kb, "--layer", "1", "--top", "40");
    expect_status(&r, 0);
    expect_contains(r.out, "# the texts differ at positions 2, 6: a row or column there names "
                           "A's token, then B's\n");
    expect_contains(r.out, "  row 2 \" king\" (B \" rain\") \u00d7 col 0 \"fish\": ");
    expect_contains(r.out,
                    "  row 6 \" king\" (B \" rain\") \u00d7 col 2 \" king\" (B \" rain\"): ");
    assert_null(strstr(r.out, "row 3 \" door\" (B"));
    run_free(&r);
    /* the same text: no such line */
    r = RUN("diff", a_path, b_path, "--top", "1");
    assert_null(strstr(r.out, "texts differ"));
    run_free(&r);

    /* Shapes that differ: refused, naming both. */
    r = RUN("diff", a_path, shoes);
    expect_status(&r, 1);
    expect_contains(r.err, "the shapes differ");
    expect_contains(r.err, "04-self-attention-v2.yaml's weights is 6\u00d76");
    expect_contains(r.err, "12-shoes-single-head.yaml's is 8\u00d78");
    assert_string_equal(r.out, "");
    run_free(&r);

    /* Bad arguments: exit 2. */
    const char *bad[][6] = {
        {"diff", a_path, NULL},
        {"diff", a_path, b_path, shoes, NULL},
        {"diff", a_path, b_path, "--head", "x", NULL},
        {"diff", a_path, b_path, "--stage", "nope", NULL},
        {"diff", a_path, b_path, "--top", "-1", NULL},
        {"diff", a_path, b_path, "--head", "5", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = run_to(NULL, bad[i]);
        expect_status(&r, 2);
        run_free(&r);
    }
    /* A bad scene: exit 1 with file:line:col. */
    char *badp = scratch_path("bad-diff.yaml");
    tu_write_text(badp, bad_scene);
    r = RUN("diff", a_path, badp);
    expect_status(&r, 1);
    expect_contains(r.err, "bad-diff.yaml:4:3:");
    run_free(&r);
}

static void test_bench(void **state)
{
    (void)state;
    struct run r = RUN("bench", "--iters", "20");
    expect_status(&r, 0);
    expect_contains(r.out, "attn_forward");
    expect_contains(r.out, "model_resolve");
    expect_contains(r.out, "(mean of 20)");
    run_free(&r);
    r = RUN("bench", "--suite", "--time", "0.01");
    expect_status(&r, 0);
    expect_contains(r.out, "book: 6 tokens, 3 -> 2, 2 heads");
    expect_contains(r.out, "512 tokens, 768 -> 768, 12 heads");
    run_free(&r);
    r = RUN("bench", "--time", "-1");
    expect_status(&r, 2);
    run_free(&r);
}

/* The median and max of bench --ui's row for action (`  heads edit  1.23  4.56 ...`) in out:
 * true when the row is there with both, median <= max. */
static bool bench_ui_row(const char *out, const char *action)
{
    char key[64];
    snprintf(key, sizeof(key), "\n  %s ", action);
    const char *row = strstr(out, key);
    double median, max;
    return row && sscanf(row + strlen(key), " %lf %lf", &median, &max) == 2 && median > 0 &&
           median <= max;
}

/* bench --ui drives the explorer headless: every action's row is there and the heads edit ran
 * (a failed edit is an error, not a fast number). Timings are never asserted. */
static void test_bench_ui(void **state)
{
    (void)state;
    char scene[4200];
    snprintf(scene, sizeof(scene), "%s", scratch_path("bench-ui.yaml"));
    tu_write_text(scene, good_scene);
    struct run r = RUN("bench", "--ui", "--repeat", "3", scene);
    expect_status(&r, 0);
    expect_contains(r.out, "median (max) of 3");
    expect_contains(r.out, "x bound");
    expect_contains(r.out, "GFLOP/s");
    expect_contains(r.out, "peak RssAnon");
    expect_contains(r.out, "VmHWM");
    assert_non_null(strstr(r.out, scene));
    const char *actions[] = {"first frame", "cursor",         "stage",
                             "heads edit",  "last-word edit", "mid-sentence edit"};
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
        if (!bench_ui_row(r.out, actions[i]))
            fail_msg("bench --ui: no figures for %s in:\n%s", actions[i], r.out);
    assert_null(strstr(r.out, "skipped"));
    run_free(&r);
    r = RUN("bench", "--ui", "--repeat", "0");
    expect_status(&r, 2);
    expect_contains(r.err, "invalid --repeat '0'");
    run_free(&r);
    r = RUN("bench", "--ui", "no-such-scene.yaml");
    expect_status(&r, 1);
    expect_contains(r.err, "no-such-scene.yaml");
    run_free(&r);
}

/* A JSON number at *p (the JSON grammar, not strtod's: no inf, nan, hex or leading '+'). */
static bool json_number(const char **p, double *value)
{
    const char *s = *p;
    if (*s == '-')
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    while (isdigit((unsigned char)*s) || *s == '.' || *s == 'e' || *s == 'E' ||
           ((*s == '-' || *s == '+') && (s[-1] == 'e' || s[-1] == 'E')))
        s++;
    char *end;
    *value = strtod(*p, &end);
    if (end != s)
        return false;
    *p = s;
    return true;
}

/* True when text is one JSON object of string and number values on one line ending in "\n",
 * the shape `bench --json` prints; the numbers go to values[] by key (keys[], n of them), NAN
 * for a key that is not there. */
static bool flat_json(const char *text, const char *const *keys, double *values, int n)
{
    for (int k = 0; k < n; k++)
        values[k] = NAN;
    const char *p = text;
    if (*p++ != '{')
        return false;
    for (bool first = true;; first = false) {
        while (*p == ' ')
            p++;
        if (*p == '}' && first)
            break;
        if (*p++ != '"')
            return false;
        const char *key = p;
        while (*p && *p != '"' && *p != '\\' && *p != '\n')
            p++;
        if (*p != '"')
            return false;
        size_t key_len = (size_t)(p++ - key);
        while (*p == ' ')
            p++;
        if (*p++ != ':')
            return false;
        while (*p == ' ')
            p++;
        double v = NAN;
        if (*p == '"') {
            for (p++; *p && *p != '"' && *p != '\\' && *p != '\n'; p++)
                ;
            if (*p++ != '"')
                return false;
        } else if (!json_number(&p, &v)) {
            return false;
        }
        for (int k = 0; k < n; k++)
            if (strlen(keys[k]) == key_len && strncmp(keys[k], key, key_len) == 0)
                values[k] = v;
        while (*p == ' ')
            p++;
        if (*p == '}')
            break;
        if (*p++ != ',')
            return false;
    }
    return strcmp(p, "}\n") == 0;
}

/* bench --tokens: one JSON line with the keys bench/vs_torch reads, and sane values; bad shapes
 * are refused as usage errors. Timings are never compared with anything. */
static void test_bench_shape(void **state)
{
    (void)state;
    struct run r =
        RUN("bench", "--tokens", "8", "--dim", "16", "--heads", "2", "--repeat", "3", "--json");
    expect_status(&r, 0);
    static const char *const keys[] = {"tokens",       "dim",        "heads",  "repeat",
                                       "threads",      "forward_ms", "gflops", "sgemm_n",
                                       "sgemm_gflops", "peak_rss_mb"};
    enum { TOKENS, DIM, HEADS, REPEAT, THREADS, FORWARD_MS, GFLOPS, SGEMM_N, SGEMM, RSS, N_KEYS };
    double v[N_KEYS];
    if (!flat_json(r.out, keys, v, N_KEYS))
        fail_msg("not one line of JSON:\n%s", r.out);
    for (int k = 0; k < N_KEYS; k++)
        if (isnan(v[k]))
            fail_msg("no number for \"%s\" in:\n%s", keys[k], r.out);
    assert_true(v[TOKENS] == 8 && v[DIM] == 16 && v[HEADS] == 2 && v[REPEAT] == 3);
    assert_true(v[SGEMM_N] == 16 && v[THREADS] >= 1);
    assert_true(v[FORWARD_MS] > 0 && v[GFLOPS] > 0 && v[SGEMM] > 0);
    assert_true(v[RSS] > 1 && v[RSS] < 4096); /* MiB: the binary itself, far from gigabytes */
    expect_contains(r.out, "\"impl\": \"attnscope\"");
    assert_string_equal(r.err, "");
    run_free(&r);

    r = RUN("bench", "--tokens", "8", "--dim", "16", "--heads", "2", "--repeat", "3", "--threads",
            "1");
    expect_status(&r, 0);
    expect_contains(r.out, "8 tokens, dim 16, 2 heads, 1 thread: forward ");
    expect_contains(r.out, "(median of 3)");
    expect_contains(r.out, "sgemm 16x16x16 ");
    run_free(&r);

    static const struct {
        const char *args[12];
        const char *why;
    } bad[] = {
        {{"--tokens", "0", "--dim", "16"}, "invalid --tokens '0'"},
        {{"--tokens", "8", "--dim", "16", "--heads", "3"},
         "--dim 16 is not divisible by --heads 3"},
        {{"--tokens", "8", "--dim", "0"}, "invalid --dim '0'"},
        {{"--tokens", "8", "--dim", "16", "--repeat", "-1"}, "invalid --repeat '-1'"},
        {{"--tokens", "8", "--dim", "16", "--threads", "0"}, "invalid --threads '0'"},
        {{"--tokens", "8x", "--dim", "16"}, "invalid --tokens '8x'"},
        {{"--tokens", "8"}, "--tokens needs --dim"},
        {{"--dim", "16", "--json"}, "go with --tokens"},
        {{"--tokens", "8", "--dim", "16", "--suite"}, "no --suite"},
        {{"--tokens", "8", "--dim", "16", "--iters", "3"}, "--repeat instead of --iters"},
        {{"--tokens", "8192", "--dim", "4096", "--heads", "256"}, "over the bench's"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *args[16] = {"bench"};
        int n = 1;
        for (int k = 0; bad[i].args[k]; k++)
            args[n++] = bad[i].args[k];
        args[n] = NULL;
        r = run_to(NULL, args);
        if (r.status != 2 || !strstr(r.err, bad[i].why) || r.out[0])
            fail_msg("bench %s ...: status %d, stdout \"%s\", stderr:\n%s\n(expected 2 and \"%s\")",
                     bad[i].args[0], r.status, r.out, r.err, bad[i].why);
        run_free(&r);
    }
}

/* ---- a model folder and a sentence (issue 27) ------------------------------------------- */

/* A path under the source tree. */
static const char *src_path(const char *rel)
{
    static char paths[8][4300];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof(paths[0]), "%s/../%s", getenv("ATTNSCOPE_SCENES_DIR"), rel);
    return p;
}

/* Mean |B - A| of head h of layer L's weights in two cases' PyTorch goldens
 * (tests/golden/families/goldens/<case>/). */
static double golden_weights_change(const char *a, const char *b, int L, int h)
{
    char path[2][400], why[200];
    struct tu_csv csv[2];
    const char *cases[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        snprintf(path[k], sizeof(path[k]),
                 "tests/golden/families/goldens/%s/layer%d/head%d/weights.csv", cases[k], L, h);
        if (tu_csv_read(&csv[k], src_path(path[k]), why, sizeof(why)) != 0)
            fail_msg("%s: %s", path[k], why);
    }
    double sum = 0;
    long cells = 0;
    for (int i = 1; i < csv[0].rows; i++)
        for (int j = 1; j < csv[0].ncols[i]; j++, cells++)
            sum += fabs(strtod(csv[1].cells[i][j], NULL) - strtod(csv[0].cells[i][j], NULL));
    tu_csv_free(&csv[0]);
    tu_csv_free(&csv[1]);
    return sum / (double)cells;
}

/* diff --layer all on two checkpoints of one GPT-NeoX model (pythia-par and its later step,
 * gen_families.py): every head ranked by how much its weights moved, each mean |Δ| PyTorch's
 * (within twice the goldens' per-cell tolerance), in PyTorch's order. */
static void test_diff_checkpoints(void **state)
{
    (void)state;
    char a_path[4200], b_path[4200]; /* src_path's buffers are reused */
    snprintf(a_path, sizeof(a_path), "%s",
             src_path("tests/golden/families/scenes/pythia-par.yaml"));
    snprintf(b_path, sizeof(b_path), "%s",
             src_path("tests/golden/families/scenes/pythia-par-step2.yaml"));
    struct run r = RUN("diff", a_path, b_path, "--layer", "all", "--csv");
    expect_status(&r, 0);
    assert_non_null(strstr(r.out, "layer,head,mean,max,row,col\r\n"));
    const char *line = strchr(r.out, '\n') + 1;
    double last = INFINITY;
    int rows = 0;
    bool seen[2][4] = {{false}};
    for (; *line; line = strchr(line, '\n') + 1, rows++) {
        int L, h;
        double mean;
        assert_int_equal(sscanf(line, "%d,%d,%lf,", &L, &h, &mean), 3);
        assert_true(L >= 0 && L < 2 && h >= 0 && h < 4 && !seen[L][h]);
        seen[L][h] = true;
        double want = golden_weights_change("pythia-par", "pythia-par-step2", L, h);
        if (fabs(mean - want) > 2e-5)
            fail_msg("layer %d head %d: mean |delta| %.9g, PyTorch's %.9g", L, h, mean, want);
        assert_true(want <= last + 4e-5); /* ranked as PyTorch would rank them */
        last = want;
    }
    assert_int_equal(rows, 8); /* 2 layers x 4 heads, all under the default top 10 */
    run_free(&r);
    /* the table: the head that moved most first, named by its layer */
    r = RUN("diff", a_path, b_path, "--layer", "all", "--top", "2");
    expect_status(&r, 0);
    expect_contains(r.out, "# weights, every head of 2 layers, by mean |");
    expect_contains(r.out, "the 2 largest\nlayer  head  mean |");
    run_free(&r);
    /* --layer all ranks every head: a head of its own is a usage error */
    r = RUN("diff", a_path, b_path, "--layer", "all", "--head", "1");
    expect_status(&r, 2);
    expect_contains(r.err, "--layer all ranks every head: drop --head 1");
    run_free(&r);
}

/* bench --ui on a Llama checkpoint, whose heads come from it (RoPE, shared KV heads): the heads
 * edit is refused, so its row says it was skipped and why, and the rest is measured. A skip is
 * not a failure: exit 0 (issue 29). */
static void test_bench_ui_refused(void **state)
{
    (void)state;
    struct run r = RUN("bench", "--ui", "--repeat", "2",
                       src_path("tests/golden/families/scenes/llama-gqa.yaml"));
    expect_status(&r, 0);
    expect_contains(r.out, "  heads edit         skipped, the scene refused it: the heads come "
                           "from the checkpoint (llama): RoPE turns each head's pairs and its "
                           "KV heads are shared, so they cannot be cut again\n");
    const char *actions[] = {"first frame", "cursor", "stage", "last-word edit",
                             "mid-sentence edit"};
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
        if (!bench_ui_row(r.out, actions[i]))
            fail_msg("bench --ui: no figures for %s in:\n%s", actions[i], r.out);
    expect_contains(r.out, "peak RssAnon");
    run_free(&r);
}

static void expect_equal_runs(const struct run *a, const struct run *b)
{
    if (strcmp(a->out, b->out) != 0)
        fail_msg("the outputs differ:\n--- one\n%s--- the other\n%s", a->out, b->out);
}

/* "word0 word1 ... word{n-1}" */
static char *many_words(int n)
{
    size_t size = (size_t)n * 10 + 1, o = 0;
    char *t = malloc(size);
    assert_non_null(t);
    t[0] = '\0';
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(t + o, size - o, "%sword%d", i ? " " : "", i);
    return t;
}

/* attnscope predict FOLDER --text: a Hugging Face folder (config.json, the weights, a
 * tokenizer) is a scene. The same from its model.safetensors, and from the scene one would
 * write by hand; the book's sentence without --text. */
static void test_model_folder(void **state)
{
    (void)state;
    const char *english = src_path("models/english");
    struct run r = RUN("predict", english, "--text", "The capital of France is", "--top", "5");
    expect_status(&r, 0);
    expect_contains(r.out, "# tokens: The  cap it al  of  F r ance  is\n"
                           "# next-token predictions: top 5 of 1024 tokens, temperature 1\n");
    assert_string_equal(r.err, "");
    struct run file = RUN("predict", src_path("models/english/model.safetensors"), "--text",
                          "The capital of France is", "--top", "5");
    expect_status(&file, 0);
    expect_equal_runs(&r, &file);
    run_free(&file);
    /* the scene one writes by hand beside the folder */
    char scene[4400];
    snprintf(scene, sizeof(scene), "%s", scratch_path("english.yaml"));
    char yaml[9000];
    snprintf(yaml, sizeof(yaml),
             "text: The capital of France is\n"
             "tokenizer: {kind: gpt2, vocab: %s/vocab.json, merges: %s/merges.txt}\n"
             "model: {file: %s/model.safetensors}\n",
             english, english, english);
    tu_write_text(scene, yaml);
    struct run hand = RUN("predict", scene, "--top", "5");
    expect_status(&hand, 0);
    expect_equal_runs(&r, &hand);
    run_free(&hand);
    run_free(&r);

    r = RUN("predict", english, "--position", "0", "--top", "1");
    expect_status(&r, 0);
    expect_contains(r.out, "# tokens: Y our  j our ne y  st art s  with  one  st ep\n");
    run_free(&r);
    r = RUN("check", english);
    expect_status(&r, 0);
    char want[4400];
    snprintf(want, sizeof(want), "%s: ok\n", english);
    assert_string_equal(r.out, want);
    run_free(&r);
    /* a trailing slash (a shell's completion) is the same folder */
    snprintf(want, sizeof(want), "%s/", english);
    r = RUN("check", want);
    expect_status(&r, 0);
    snprintf(want, sizeof(want), "%s: ok\n", english);
    assert_string_equal(r.out, want);
    run_free(&r);
}

/* A folder that is not a model's says what a model folder holds and what it has; one without a
 * tokenizer (the golden families share tests/golden/gpt2's) says so and takes --tokenizer. */
static void test_not_a_model_folder(void **state)
{
    (void)state;
    char dir[4300], path[4400], want[8000];
    snprintf(dir, sizeof(dir), "%s", scratch_path("notamodel"));
    mkdir(dir, 0755);
    static const char needs[] =
        "not a model folder: a model folder holds config.json, the weights (model.safetensors, "
        "or model.safetensors.index.json and its shards) and a tokenizer (tokenizer.json, or "
        "vocab.json with merges.txt, or Marian's source.spm, target.spm and vocab.json)";
    struct run r = RUN(dir);
    expect_status(&r, 1);
    snprintf(want, sizeof(want), "%s: %s; this one has none of them\n", dir, needs);
    assert_string_equal(r.err, want);
    run_free(&r);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    tu_write_text(path, "{}");
    snprintf(path, sizeof(path), "%s/pytorch_model.bin", dir);
    tu_write_text(path, "");
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    tu_write_text(path, "");
    r = RUN("predict", dir, "--text", "hi");
    expect_status(&r, 1);
    snprintf(want, sizeof(want),
             "%s: %s; this one has config.json, pytorch_model.bin and "
             "adapter_model.safetensors, but no model.safetensors and no tokenizer\n",
             dir, needs);
    assert_string_equal(r.err, want);
    run_free(&r);

    const char *gqa = src_path("tests/golden/families/llama-gqa");
    r = RUN("predict", gqa, "--text", "the river");
    expect_status(&r, 1);
    snprintf(
        want, sizeof(want),
        "%s: no tokenizer: a model folder holds tokenizer.json, or vocab.json with merges.txt, "
        "or Marian's source.spm, target.spm and vocab.json (this one has config.json and "
        "model.safetensors); give one with --tokenizer PATH (a tokenizer.json, or a folder "
        "that holds one)\n",
        gqa);
    assert_string_equal(r.err, want);
    run_free(&r);
    /* --tokenizer: a folder, or its vocab.json (merges.txt beside it) */
    r = RUN("predict", gqa, "--text", "the river", "--tokenizer", src_path("tests/golden/gpt2"));
    expect_status(&r, 0);
    struct run v = RUN("predict", gqa, "--text", "the river", "--tokenizer",
                       src_path("tests/golden/gpt2/vocab.json"));
    expect_status(&v, 0);
    expect_equal_runs(&r, &v);
    run_free(&v);
    run_free(&r);
    r = RUN("predict", gqa, "--tokenizer", dir);
    expect_status(&r, 1);
    expect_contains(r.err, "no tokenizer here for --tokenizer");
    run_free(&r);
    /* a scene names its own tokenizer */
    r = RUN("print", "10-mha", "--tokenizer", src_path("tests/golden/gpt2"));
    expect_status(&r, 2);
    assert_string_equal(r.err, "attnscope: --tokenizer is for a model folder that has none; "
                               "10-mha names its own\n");
    run_free(&r);
    /* weights named alone need their config.json beside them */
    char lone[4400];
    snprintf(lone, sizeof(lone), "%s/weights.safetensors", dir);
    size_t len;
    char *bytes = tu_must_read_file(src_path("models/english/model.safetensors"), &len);
    tu_write_file(lone, bytes, len);
    free(bytes);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    unlink(path);
    r = RUN("predict", lone, "--text", "hi");
    expect_status(&r, 1);
    snprintf(want, sizeof(want),
             "%s: no config.json beside it: a checkpoint's config.json says what model it is (its "
             "architecture and sizes)\n",
             lone);
    assert_string_equal(r.err, want);
    run_free(&r);
    /* a file that is not there is still not there */
    r = RUN("predict", scratch_path("nothere"), "--text", "hi");
    expect_status(&r, 1);
    expect_contains(r.err, "No such file or directory");
    run_free(&r);
}

/* Every family of tests/golden/families as a folder gives what its golden scene gives: Llama
 * (and sharded), Qwen2, Qwen3, Mistral with the shared tokenizer, BERT with its own and two
 * sentences. */
static void test_family_folders(void **state)
{
    (void)state;
    static const char *const families[] = {"llama-gqa",     "llama-gqa-sharded", "qwen2-bias",
                                           "qwen3-qknorm",  "mistral-window",    "llama3-rope",
                                           "llama-gqa-bf16"};
    const char *river = "The river runs to the sea, and the children watch the water.";
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        char folder[200], scene[200];
        snprintf(folder, sizeof(folder), "tests/golden/families/%s", families[i]);
        snprintf(scene, sizeof(scene), "tests/golden/families/scenes/%s.yaml", families[i]);
        struct run a = RUN("predict", src_path(scene), "--top", "3");
        struct run b = RUN("predict", src_path(folder), "--text", river, "--tokenizer",
                           src_path("tests/golden/gpt2"), "--top", "3");
        expect_status(&a, 0);
        expect_status(&b, 0);
        expect_equal_runs(&a, &b);
        run_free(&a);
        run_free(&b);
    }
    struct run a = RUN("predict", src_path("tests/golden/families/scenes/bert-pair.yaml"));
    struct run b = RUN("predict", src_path("tests/golden/families/bert-pair"), "--text",
                       "The cat sat on the [MASK] .", "--text", "It was a sunny [MASK] .");
    expect_status(&a, 0);
    expect_status(&b, 0);
    expect_equal_runs(&a, &b);
    expect_contains(b.out, "# tokens: [CLS] the cat sat on the [MASK] . [SEP] it was a sunny "
                           "[MASK] . [SEP]\n");
    run_free(&a);
    run_free(&b);
    /* a folder's problem is said at its own file, as a scene's checkpoint's is */
    char want[4400];
    const char *bad = src_path("tests/golden/families/bad/no-embed");
    a = RUN("check", bad, "--tokenizer", src_path("tests/golden/gpt2"));
    expect_status(&a, 1);
    snprintf(want, sizeof(want),
             "%s/model.safetensors: tensor 'model.embed_tokens.weight' is missing (arch llama)\n",
             bad);
    assert_string_equal(a.err, want);
    run_free(&a);
    bad = src_path("tests/golden/families/bad/mamba");
    a = RUN("check", bad, "--tokenizer", src_path("tests/golden/gpt2"));
    expect_status(&a, 1);
    snprintf(want, sizeof(want),
             "%s/config.json:2:3: architecture \"MambaForCausalLM\" is not one "
             "attnscope reads",
             bad);
    expect_contains(a.err, want);
    run_free(&a);
    /* the index of a sharded checkpoint, named itself */
    a = RUN("heads",
            src_path("tests/golden/families/llama-gqa-sharded/model.safetensors.index.json"),
            "--tokenizer", src_path("tests/golden/gpt2"));
    expect_status(&a, 0);
    expect_contains(a.out, "# 2 layers × 4 heads");
    run_free(&a);
}

/* Marian's folder as opus-mt's are downloaded (source.spm, target.spm, vocab.json; no
 * tokenizer.json) opens as its golden scene does; one --text is the source, the target empty;
 * a broken tokenizer file is named. */
static void test_marian_folder(void **state)
{
    (void)state;
    const char *marian = src_path("tests/golden/seq2seq/marian");
    const char *source = "The small dog sees the red ball in the green garden .";
    struct run a =
        RUN("predict", src_path("tests/golden/seq2seq/scenes/marian.yaml"), "--top", "3");
    struct run b =
        RUN("predict", marian, "--text", source, "--text", "Lo dovi sena balo .", "--top", "3");
    expect_status(&a, 0);
    expect_status(&b, 0);
    expect_equal_runs(&a, &b);
    /* the target read with target.spm: "dovi" whole (source.spm has no such piece) */
    expect_contains(b.out, "# tokens: <pad>  Lo  dovi  sena  bal o   .\n");
    run_free(&a);
    run_free(&b);
    a = RUN("print", marian, "--text", source, "--stage", "weights", "--layer", "1", "--head", "0");
    expect_status(&a, 0);
    expect_contains(a.out, "# tokens: <pad>\n");
    expect_contains(a.out, "over 16 source tokens");
    expect_contains(a.out, "cross-attention · head 0 · weights (1×16)");
    run_free(&a);
    /* the same folder as a scene's tokenizer: file names the folder */
    char dir[4300], path[4400], want[9000];
    snprintf(dir, sizeof(dir), "%s", scratch_path("opus"));
    mkdir(dir, 0755);
    static const char *const files[] = {"config.json", "model.safetensors",
                                        "source.spm",  "target.spm",
                                        "vocab.json",  "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char from[4400];
        snprintf(from, sizeof(from), "%s/%s", marian, files[i]);
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        tu_copy_file(from, path);
    }
    /* the weights alone, and --tokenizer naming Marian's vocab.json (or its folder) */
    char bare[4300], vocab[4400];
    snprintf(bare, sizeof(bare), "%s", scratch_path("opus-bare"));
    mkdir(bare, 0755);
    for (int i = 0; i < 2; i++) {
        char from[4400];
        snprintf(from, sizeof(from), "%s/%s", marian, files[i]);
        snprintf(path, sizeof(path), "%s/%s", bare, files[i]);
        tu_copy_file(from, path);
    }
    snprintf(vocab, sizeof(vocab), "%s/vocab.json", marian);
    a = RUN("predict", marian, "--text", source, "--top", "3");
    b = RUN("predict", bare, "--text", source, "--top", "3", "--tokenizer", vocab);
    expect_status(&a, 0);
    expect_status(&b, 0);
    expect_equal_runs(&a, &b);
    run_free(&b);
    b = RUN("predict", bare, "--text", source, "--top", "3", "--tokenizer", marian);
    expect_status(&b, 0);
    expect_equal_runs(&a, &b);
    run_free(&b);
    run_free(&a);
    /* opus-mt's bad_words_ids [[<pad>]]: a generation never chooses a banned token (here the
     * greedy second one, 'll' 53; 'en' 43 is next), its probability renormalised without it */
    const char *src = "The small dog sees the red ball .";
    a = RUN("generate", dir, "--text", src, "-n", "2", "--csv");
    expect_status(&a, 0);
    double p_all = 0, p_banned = 0;
    const char *step1 = strstr(a.out, "\r\n1,1,68,f,");
    assert_non_null(step1);
    p_all = strtod(step1 + strlen("\r\n1,1,68,f,"), NULL);
    expect_contains(a.out, "\r\n2,2,53,ll,");
    run_free(&a);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    char *config = tu_must_read_file(path, NULL);
    snprintf(want, sizeof(want), "{\n  \"bad_words_ids\": [[53], [7, 8]],%s", config + 1);
    free(config);
    tu_write_text(path, want);
    a = RUN("generate", dir, "--text", src, "-n", "2", "--csv");
    expect_status(&a, 0);
    step1 = strstr(a.out, "\r\n1,1,68,f,");
    assert_non_null(step1);
    p_banned = strtod(step1 + strlen("\r\n1,1,68,f,"), NULL);
    assert_true(p_banned > p_all); /* 53's share of the softmax given to the rest */
    expect_contains(a.out, "\r\n2,2,43,en,");
    assert_null(strstr(a.out, ",53,ll,"));
    snprintf(want, sizeof(want),
             "%s/config.json:2:3: warning: 'bad_words_ids' entry 1 is a sequence of 2 tokens: "
             "attnscope bans single tokens only, so a generation may make it\n",
             dir);
    expect_contains(a.err, want);
    run_free(&a);
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
    tu_write_text(path, "{\n  \"source_lang\": \"en\",\n  \"separate_vocabs\": true\n}\n");
    a = RUN("check", dir, "--text", "a dog");
    expect_status(&a, 1);
    snprintf(want, sizeof(want),
             "%s: %s/tokenizer_config.json:3:3: separate_vocabs: is true: a target_vocab.json of "
             "the target's own ids, which attnscope does not read yet\n",
             dir, dir);
    assert_string_equal(a.err, want);
    run_free(&a);
    tu_write_text(path, "{}");
    snprintf(path, sizeof(path), "%s/source.spm", dir);
    tu_write_text(path, "\x0a\x07\x0a\x03<un");
    char scene[4400];
    snprintf(scene, sizeof(scene), "%s", scratch_path("opus.yaml"));
    snprintf(want, sizeof(want),
             "version: 1\ntext: {source: \"a dog\", target: \"\"}\n"
             "tokenizer: {kind: hf, file: opus}\nmodel: {file: opus/model.safetensors}\n");
    tu_write_text(scene, want);
    a = RUN("check", scene);
    expect_status(&a, 1);
    snprintf(want, sizeof(want),
             "%s:3:29: opus/source.spm: not a SentencePiece model: the protobuf is broken at "
             "byte 2\n",
             scene);
    expect_contains(a.err, want);
    run_free(&a);
    snprintf(path, sizeof(path), "%s/target.spm", dir);
    unlink(path);
    a = RUN("check", dir);
    expect_status(&a, 1);
    expect_contains(a.err, "no tokenizer: a model folder holds tokenizer.json");
    run_free(&a);
}

/* --text replaces a scene's sentence (two: a pair), --text-file reads one (its last line end
 * dropped), and - is standard input. */
static void test_text_options(void **state)
{
    (void)state;
    struct run r =
        RUN("print", "10-mha", "--text", "Your journey ends", "--stage", "weights", "--head", "0");
    expect_status(&r, 0);
    expect_contains(r.out, "# tokens: Your journey ends\n");
    expect_contains(r.err, "scenes/10-mha.yaml: note: made-up embedding rows for new words: "
                           "ends\n");
    run_free(&r);
    const char *english = src_path("models/english");
    struct run want = RUN("predict", english, "--text", "The capital of France is");
    expect_status(&want, 0);
    char file[4400];
    snprintf(file, sizeof(file), "%s", scratch_path("sentence.txt"));
    tu_write_text(file, "The capital of France is\n");
    r = RUN("predict", english, "--text-file", file);
    expect_status(&r, 0);
    expect_equal_runs(&want, &r);
    run_free(&r);
    r = RUN_IN(file, "predict", english, "--text-file", "-");
    expect_status(&r, 0);
    expect_equal_runs(&want, &r);
    run_free(&r);
    run_free(&want);
    /* a pair from a file and standard input */
    const char *bert = src_path("tests/golden/families/bert-pair");
    want = RUN("predict", bert, "--text", "the cat sat on the [MASK] .", "--text", "it was a day");
    expect_status(&want, 0);
    tu_write_text(file, "it was a day\r\n");
    r = RUN_IN(file, "predict", bert, "--text", "the cat sat on the [MASK] .", "--text-file", "-");
    expect_status(&r, 0);
    expect_equal_runs(&want, &r);
    run_free(&r);
    run_free(&want);

    r = RUN("predict", english, "--text", "a", "--text", "b", "--text", "c");
    expect_status(&r, 2);
    assert_string_equal(r.err, "attnscope predict: at most two sentences (--text A --text B: a "
                               "pair, as BERT reads)\nTry 'attnscope predict --help'.\n");
    run_free(&r);
    r = RUN("predict", english, "--text-file", "-", "--text-file", "-");
    expect_status(&r, 2);
    expect_contains(r.err, "standard input (--text-file -) holds one sentence");
    run_free(&r);
    r = RUN("predict", english, "--text", "one", "--text", "two");
    expect_status(&r, 1);
    char msg[9000];
    snprintf(msg, sizeof(msg),
             "%s: --text: two sentences (text: [A, B]) need a tokenizer with a template that "
             "joins them (kind: hf); GPT-2's BPE has none\n",
             english);
    assert_string_equal(r.err, msg);
    run_free(&r);
    r = RUN("predict", english, "--text-file", scratch_path("no-such.txt"));
    expect_status(&r, 1);
    expect_contains(r.err, "--text-file: ");
    expect_contains(r.err, "no-such.txt");
    run_free(&r);
    tu_write_file(file, "one\0two", 7);
    r = RUN("predict", english, "--text-file", file);
    expect_status(&r, 1);
    snprintf(msg, sizeof(msg), "%s: %s: a NUL byte at byte 4: a sentence is text\n", english, file);
    assert_string_equal(r.err, msg);
    run_free(&r);
    /* and a scene read once with a sentence of its own gives it to every command */
    r = RUN("heads", english, "--text", "the cat and the cat");
    expect_status(&r, 0);
    expect_contains(r.out, "# tokens: the  c at  and  the  c at\n");
    run_free(&r);
}

/* A text longer than the model reads: the limit said in the user's words with how to fit it;
 * --truncate keeps the first or the last whole words, --window a part; RoPE reads past its
 * trained positions with a warning, and --truncate keeps to them. */
static void test_context_limit(void **state)
{
    (void)state;
    const char *english = src_path("models/english");
    char *text = many_words(300);
    struct run r = RUN("predict", english, "--text", text);
    expect_status(&r, 1);
    char want[4400];
    snprintf(want, sizeof(want),
             "%s: --text: 1,362 tokens, but this model reads at most 128 (n_positions)\n"
             "  --truncate end cuts the end off (keeps the first 128 tokens), --truncate start the "
             "start (keeps the last 128); --window START:END keeps tokens START to END-1\n",
             english);
    assert_string_equal(r.err, want);
    assert_string_equal(r.out, "");
    run_free(&r);
    r = RUN("predict", english, "--text", text, "--truncate", "end", "--position", "0");
    expect_status(&r, 0);
    snprintf(want, sizeof(want),
             "%s: --truncate end: 1,362 tokens, but this model reads at most 128 (n_positions): "
             "kept the first 128 (whole words)\n",
             english);
    assert_string_equal(r.err, want);
    expect_contains(r.out, "# tokens: w ord 0  wor d 1  wor d 2 ");
    run_free(&r);
    r = RUN("predict", english, "--text", text, "--truncate", "start", "--position", "0");
    expect_status(&r, 0);
    snprintf(want, sizeof(want),
             "%s: --truncate start: 1,362 tokens, but this model reads at most 128 (n_positions): "
             "kept the last 125 (whole words)\n",
             english);
    assert_string_equal(r.err, want);
    expect_contains(r.out, "wor d 2 9 8  wor d 2 9 9\n");
    run_free(&r);
    r = RUN("predict", english, "--text", text, "--window", "10:40", "--position", "0");
    expect_status(&r, 0);
    snprintf(want, sizeof(want),
             "%s: --window 10:40: the whole words in tokens 10 to 39: 26 tokens of the text's "
             "1,362\n",
             english);
    assert_string_equal(r.err, want);
    expect_contains(r.out, "# tokens: w ord 4  wor d 5 ");
    run_free(&r);
    /* usage: the words and numbers these take */
    r = RUN("predict", english, "--text", text, "--truncate", "middle");
    expect_status(&r, 2);
    expect_contains(r.err, "invalid --truncate 'middle' (end: cut the end off, keeping the first "
                           "tokens; start: cut the start off, keeping the last)");
    run_free(&r);
    r = RUN("predict", english, "--window", "40:10");
    expect_status(&r, 2);
    expect_contains(r.err, "invalid --window '40:10' (START:END, the tokens START to END-1 of the "
                           "text, 0 <= START < END)");
    run_free(&r);
    r = RUN("predict", english, "--window", "0:10", "--truncate", "end");
    expect_status(&r, 2);
    expect_contains(r.err, "--truncate or --window, not both");
    run_free(&r);
    r = RUN("predict", english, "--text", "a", "--text", "b", "--truncate", "end");
    expect_status(&r, 2);
    expect_contains(r.err, "--truncate cuts one sentence; shorten a pair's sentences yourself");
    run_free(&r);

    /* RoPE: llama-gqa was trained on 64 positions and reads past them, saying so */
    const char *gqa = src_path("tests/golden/families/llama-gqa");
    const char *tok = src_path("tests/golden/gpt2");
    char *eighty = many_words(20);
    r = RUN("predict", gqa, "--tokenizer", tok, "--text", eighty, "--position", "0");
    expect_status(&r, 0);
    snprintf(want, sizeof(want),
             "%s: warning: 90 tokens, past the checkpoint's 64 positions "
             "(max_position_embeddings): computed as transformers computes them, on positions the "
             "model was not trained on\n",
             gqa);
    assert_string_equal(r.err, want);
    run_free(&r);
    r = RUN("predict", gqa, "--tokenizer", tok, "--text", eighty, "--truncate", "end", "--position",
            "0");
    expect_status(&r, 0);
    snprintf(want, sizeof(want),
             "%s: --truncate end: 90 tokens, past the 64 positions this model was trained on "
             "(max_position_embeddings): kept the first 60 (whole words)\n",
             gqa);
    assert_string_equal(r.err, want);
    run_free(&r);
    free(eighty);

    /* BERT's learned table: [CLS] and [SEP] count */
    const char *bert = src_path("tests/golden/families/bert-pair");
    r = RUN("predict", bert, "--text",
            "the cat sat on the mat the cat sat on the mat the cat sat "
            "on the mat the cat sat on the mat the cat sat on the mat "
            "the cat sat on the mat the cat sat on the mat");
    expect_status(&r, 1);
    snprintf(want, sizeof(want),
             "%s: --text: 44 tokens, but this model reads at most 40 (max_position_embeddings)\n",
             bert);
    expect_contains(r.err, want);
    run_free(&r);
    free(text);
}

/* --save-scene writes the scene the run made; it reopens and predicts the same, its paths
 * relative to it; it never replaces the scene it read. */
static void test_save_scene(void **state)
{
    (void)state;
    const char *english = src_path("models/english");
    char saved[4400];
    snprintf(saved, sizeof(saved), "%s", scratch_path("saved/english.yaml"));
    mkdir(scratch_path("saved"), 0755);
    struct run a =
        RUN("predict", english, "--text", "The capital of France is", "--save-scene", saved);
    expect_status(&a, 0);
    struct run b = RUN("predict", saved);
    expect_status(&b, 0);
    expect_equal_runs(&a, &b);
    run_free(&a);
    run_free(&b);
    char *yaml = tu_must_read_file(saved, NULL);
    expect_contains(yaml, "version: 1\ntitle: english\ntext: The capital of France is\n");
    expect_contains(yaml, "tokenizer: {kind: gpt2, vocab: \"");
    expect_contains(yaml, "/models/english/vocab.json\", merges: \"");
    expect_contains(yaml, "model: {file: \"");
    expect_contains(yaml, "/models/english/model.safetensors\", arch: gpt2}\n");
    free(yaml);
    /* the cut text is what is saved */
    char *text = many_words(300);
    a = RUN("predict", english, "--text", text, "--truncate", "start", "--save-scene", saved);
    expect_status(&a, 0);
    b = RUN("predict", saved);
    expect_status(&b, 0);
    expect_equal_runs(&a, &b);
    assert_string_equal(b.err, "");
    run_free(&a);
    run_free(&b);
    free(text);
    /* a pair, and a scene file with a new sentence */
    a = RUN("predict", src_path("tests/golden/families/bert-pair"), "--text", "a [MASK] .",
            "--text", "the sea", "--save-scene", saved);
    expect_status(&a, 0);
    yaml = tu_must_read_file(saved, NULL);
    expect_contains(yaml, "text: [\"a [MASK] .\", the sea]\n");
    expect_contains(yaml, "tokenizer: {kind: hf, file: \"");
    free(yaml);
    b = RUN("predict", saved);
    expect_equal_runs(&a, &b);
    run_free(&a);
    run_free(&b);
    a = RUN("print", "10-mha", "--text", "Your journey ends", "--save-scene", saved);
    expect_status(&a, 0);
    b = RUN("print", saved);
    expect_equal_runs(&a, &b);
    run_free(&a);
    run_free(&b);
    /* never over the scene it reads */
    struct run r = RUN("print", saved, "--text", "Your step", "--save-scene", saved);
    expect_status(&r, 2);
    expect_contains(r.err, "is the scene it reads: save under another name");
    run_free(&r);
    r = RUN("diff", saved, saved, "--save-scene", scratch_path("x.yaml"));
    expect_status(&r, 2);
    expect_contains(r.err, "--save-scene saves one scene; diff reads two");
    run_free(&r);
    /* the explorer saves before it needs a terminal: the scene is there to reopen */
    snprintf(saved, sizeof(saved), "%s", scratch_path("saved/explorer.yaml"));
    r = RUN(english, "--text", "fish", "--save-scene", saved);
    expect_status(&r, 2);
    expect_contains(r.err, "the explorer needs a terminal");
    run_free(&r);
    r = RUN("check", saved);
    expect_status(&r, 0);
    run_free(&r);
}

/* A folder in Hugging Face's cache (models--ORG--NAME/snapshots/REV, links into blobs/) is
 * titled ORG/NAME, and its saved scene names the snapshot's files, not the blobs. */
static void test_cache_folder(void **state)
{
    (void)state;
    char hub[4300], path[4600], blob[4400], from[4300], snap[4400];
    snprintf(hub, sizeof(hub), "%s", scratch_path("hub2"));
    mkdir(hub, 0755);
    snprintf(path, sizeof(path), "%s/models--Org--Tiny", hub);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/models--Org--Tiny/blobs", hub);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/models--Org--Tiny/snapshots", hub);
    mkdir(path, 0755);
    snprintf(snap, sizeof(snap), "%s/models--Org--Tiny/snapshots/0123abc", hub);
    mkdir(snap, 0755);
    static const char *const files[][2] = {
        {"models/english/model.safetensors", "model.safetensors"},
        {"models/english/config.json", "config.json"},
        {"models/english/vocab.json", "vocab.json"},
        {"models/english/merges.txt", "merges.txt"}};
    for (int i = 0; i < 4; i++) {
        snprintf(from, sizeof(from), "%s", src_path(files[i][0]));
        size_t len;
        char *data = tu_must_read_file(from, &len);
        snprintf(blob, sizeof(blob), "%s/models--Org--Tiny/blobs/9f%d", hub, i);
        tu_write_file(blob, data, len);
        free(data);
        snprintf(path, sizeof(path), "%s/%s", snap, files[i][1]);
        char target[64];
        snprintf(target, sizeof(target), "../../blobs/9f%d", i);
        assert_int_equal(symlink(target, path), 0);
    }
    char saved[4400];
    snprintf(saved, sizeof(saved), "%s/tiny.yaml", hub);
    struct run r = RUN("check", snap, "--save-scene", saved);
    expect_status(&r, 0);
    run_free(&r);
    char *yaml = tu_must_read_file(saved, NULL);
    expect_contains(yaml, "title: Org/Tiny\n");
    expect_contains(yaml, "model: {file: models--Org--Tiny/snapshots/0123abc/model.safetensors, "
                          "arch: gpt2}\n");
    assert_null(strstr(yaml, "blobs"));
    free(yaml);
    r = RUN("check", saved);
    expect_status(&r, 0);
    run_free(&r);
}

/* predict, lens, ablate and patch print the scene's own tokens, which a tokenizer.json's
 * vocabulary can make of anything: each reaches the terminal escaped, as print's and heads' do
 * (U+202E as <U+202E>; an ESC is already <1B> in the token's label). The checkpoint is
 * llama-gqa's, its tokenizer a WordPiece vocabulary of such words. */
static void test_vocab_commands_escape_tokens(void **state)
{
    (void)state;
    char dir[4300], path[4400];
    snprintf(dir, sizeof(dir), "%s", scratch_path("evil-model"));
    mkdir(dir, 0755);
    static const char *const files[] = {"model.safetensors", "config.json"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char from[128];
        snprintf(from, sizeof(from), "tests/golden/families/llama-gqa/%s", files[i]);
        size_t len;
        char *data = tu_must_read_file(src_path(from), &len);
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        tu_write_file(path, data, len);
        free(data);
    }
    snprintf(path, sizeof(path), "%s/tokenizer.json", dir);
    tu_write_text(path,
                  "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,"
                  " \"added_tokens\": [], \"normalizer\": null,"
                  " \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"}, \"post_processor\": null,"
                  " \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": false},"
                  " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\","
                  "  \"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100,"
                  "  \"vocab\": {\"[UNK]\": 0, \"fish\": 1, \"\\u202eevil\": 2, \"moon\": 3,"
                  "   \"a\\u001b[31mb\": 4, \"king\": 5}}}\n");
    const char *text = "fish \xe2\x80\xae"
                       "evil moon a\x1b[31mb king fish";
    const char *tokens = "# tokens: fish <U+202E>evil moon a<1B>[31mb king fish\n";

    struct run r = RUN("predict", dir, "--text", text, "--top", "2");
    expect_status(&r, 0);
    expect_no_raw_controls("predict", r.out);
    expect_contains(r.out, tokens);
    expect_contains(r.out, "\n# position 1 '<U+202E>evil' ");
    run_free(&r);

    r = RUN("ablate", dir, "--text", text);
    expect_status(&r, 0);
    expect_no_raw_controls("ablate", r.out);
    expect_contains(r.out, tokens);
    run_free(&r);

    /* the token column is 12 characters of what is shown */
    r = RUN("lens", dir, "--text", text);
    expect_status(&r, 0);
    expect_no_raw_controls("lens", r.out);
    expect_contains(r.out, "\n    1  <U+202E>evil 'moon'  ");
    expect_contains(r.out, "\n    3  a<1B>[31mb   'king'  ");
    run_free(&r);

    /* two scenes of the folder's model, the words in another order */
    char clean[4400], corrupt[4400], yaml[9000];
    const char *order[2] = {"fish \\u202eevil moon king", "fish moon \\u202eevil king"};
    for (int i = 0; i < 2; i++) {
        char *scene = i ? corrupt : clean;
        snprintf(scene, sizeof(clean), "%s/%s.yaml", dir, i ? "corrupt" : "clean");
        snprintf(yaml, sizeof(yaml),
                 "text: \"%s\"\ntokenizer: {kind: hf, file: tokenizer.json}\n"
                 "model: {file: model.safetensors}\n",
                 order[i]);
        tu_write_text(scene, yaml);
    }
    char metric[64];
    snprintf(metric, sizeof(metric),
             "prob:\xe2\x80\xae"
             "evil");
    r = RUN("patch", clean, corrupt, "--metric", metric, "--position", "1");
    expect_status(&r, 0);
    expect_no_raw_controls("patch", r.out);
    expect_contains(r.out, "# metric: p('<U+202E>evil') at position 1 '<U+202E>evil'\n");
    run_free(&r);
}

int main(void)
{
    scratch = tu_make_tmpdir("cli");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_texts),
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_check_good_and_bad),
        cmocka_unit_test(test_missing_scene_names_the_file),
        cmocka_unit_test(test_control_characters_escaped),
        cmocka_unit_test(test_check_lesson_marks),
        cmocka_unit_test(test_check_next_marks),
        cmocka_unit_test(test_print_default),
        cmocka_unit_test(test_print_scene_file_and_filters),
        cmocka_unit_test(test_export_writes_files),
        cmocka_unit_test(test_systems_print_and_export),
        cmocka_unit_test(test_heads),
        cmocka_unit_test(test_heads_of_the_shipped_model),
        cmocka_unit_test(test_named_heads_of_the_english_model),
        cmocka_unit_test(test_words_outside_the_vocabulary),
        cmocka_unit_test(test_export_bad_output_path),
        cmocka_unit_test(test_export_format),
        cmocka_unit_test(test_stdout_errors),
        cmocka_unit_test(test_export_refuses_foreign_folder),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_diff_checkpoints),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_bench_ui),
        cmocka_unit_test(test_bench_ui_refused),
        cmocka_unit_test(test_bench_shape),
        cmocka_unit_test(test_predict),
        cmocka_unit_test(test_no_vocabulary),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_hugging_face_cache),
        cmocka_unit_test(test_lens),
        cmocka_unit_test(test_ablate),
        cmocka_unit_test(test_checkpoint_warnings),
        cmocka_unit_test(test_modified_model),
        cmocka_unit_test(test_examples_run),
        cmocka_unit_test(test_masked_lm),
        cmocka_unit_test(test_patch),
        cmocka_unit_test(test_export_predictions),
        cmocka_unit_test(test_model_folder),
        cmocka_unit_test(test_not_a_model_folder),
        cmocka_unit_test(test_marian_folder),
        cmocka_unit_test(test_family_folders),
        cmocka_unit_test(test_text_options),
        cmocka_unit_test(test_context_limit),
        cmocka_unit_test(test_save_scene),
        cmocka_unit_test(test_cache_folder),
        cmocka_unit_test(test_vocab_commands_escape_tokens),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tu_remove_tree(scratch);
    free(scratch);
    return failed;
}
