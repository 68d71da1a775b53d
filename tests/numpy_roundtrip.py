#!/usr/bin/env python3
"""numpy_roundtrip: attnscope and NumPy, both ways (docs/export.md, "NumPy").

1. Every scene of scenes/ exported twice, `--format csv` and `--format npy`: the .npy files are
   the CSV files' names and no others (tokens.csv, scene.yaml and the token tables of a
   vocabulary model, predictions.csv, loss.csv and lens.csv, stay as they are), each is what
   numpy.load reads as a 2-D little-endian float32 C-order array, and its numbers are the CSV's
   bit for bit (each CSV number read with the C library's strtof, as a C reader would).
2. Embeddings and Q/K/V weights written with numpy.save from a seeded NumPy generator (float64
   for W_query, so the rounding to float32 is checked; a Fortran-order W_value), named by a scene
   as {file: ...}, exported with --format npy: the parameters come back as the files' values
   rounded to float32, and every head's weights and the output match NumPy's own
   softmax(QK^T / sqrt(d_k)) with a causal mask within 1e-5. The same weights as CSV files
   (numpy.savetxt) give the same export bit for bit.

3. docs/export.md's "NumPy" section as written: its scene and its five lines of Python, run with
   the attnscope binary first on PATH.

Skipped (exit 77) when no python3 with NumPy is found: the plain python3 on PATH is tried, then
Debian's /usr/bin/python3 (python3-numpy).

Usage: numpy_roundtrip.py ATTNSCOPE_BINARY SCENES_DIR docs/export.md
"""
import ctypes
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    debian = "/usr/bin/python3"
    if os.path.exists(debian) and os.path.realpath(sys.executable) != os.path.realpath(debian) \
            and not os.environ.get("ATTNSCOPE_NUMPY_TRIED"):
        os.environ["ATTNSCOPE_NUMPY_TRIED"] = "1"
        os.execv(debian, [debian] + sys.argv)
    print("SKIP: no python3 with NumPy (apt-get install python3-numpy)")
    sys.exit(77)

TOLERANCE = 1e-5
failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + name + ("" if ok or not detail else ": " + detail))
    if not ok:
        failures += 1


def attnscope(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"attnscope {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
    return r.stdout


# ---- 1. the .npy export is the CSV export ------------------------------------------------------

LIBC = ctypes.CDLL(None)
LIBC.strtof.restype = ctypes.c_float
LIBC.strtof.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]


def csv_numbers(path):
    """The numbers of an exported CSV (header row and row labels skipped) as float32."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    values = [[LIBC.strtof(cell.encode(), None) for cell in row[1:]] for row in rows[1:]]
    return np.array(values, dtype=np.float32).reshape(len(values), len(rows[0]) - 1)


def files_under(root):
    out = set()
    for d, _, names in os.walk(root):
        for name in names:
            out.add(os.path.relpath(os.path.join(d, name), root))
    return out


def same_bits(a, b):
    """Equal float32 bits, any NaN equal to any NaN (the CSV writes every NaN as "nan")."""
    nan = np.isnan(a) & np.isnan(b)
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | nan))


def check_scene_exports(binary, scenes, tmp):
    for name in sorted(os.listdir(scenes)):
        if not name.endswith(".yaml"):
            continue
        scene = os.path.join(scenes, name)
        csv_dir = os.path.join(tmp, name + ".csv")
        npy_dir = os.path.join(tmp, name + ".npy")
        attnscope(binary, "export", scene, "-o", csv_dir)
        attnscope(binary, "export", scene, "-o", npy_dir, "--format", "npy")
        csv_files, npy_files = files_under(csv_dir), files_under(npy_dir)
        # tokens.csv and a vocabulary model's tables of token text stay CSV
        text_tables = ("tokens.csv", "predictions.csv", "loss.csv", "lens.csv")
        twins = {f[:-4] + ".npy" if f.endswith(".csv") and f not in text_tables else f
                 for f in csv_files if not f.startswith("scene.data/")}
        npy_own = {f for f in npy_files if not f.startswith("scene.data/")}
        check(f"{name}: the .npy export has the CSV export's names", twins == npy_own,
              f"only CSV: {sorted(twins - npy_own)}, only npy: {sorted(npy_own - twins)}")
        for same in ("scene.yaml",) + tuple(f for f in text_tables if f in csv_files):
            with open(os.path.join(csv_dir, same), "rb") as a, \
                    open(os.path.join(npy_dir, same), "rb") as b:
                check(f"{name}: {same} is the CSV export's", a.read() == b.read())
        bad = []
        for f in sorted(npy_own):
            if not f.endswith(".npy"):
                continue
            path = os.path.join(npy_dir, f)
            with open(path, "rb") as fh:
                version = np.lib.format.read_magic(fh)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, fortran, dtype = read_header(fh)
            got = np.load(path)
            want = csv_numbers(os.path.join(csv_dir, f[:-4] + ".csv"))
            if dtype != np.dtype("<f4") or fortran or got.ndim != 2:
                bad.append(f"{f}: dtype {dtype}, fortran_order {fortran}, shape {shape}")
            elif got.shape != want.shape:
                bad.append(f"{f}: shape {got.shape}, the CSV's {want.shape}")
            elif not same_bits(got, want):
                bad.append(f"{f}: numbers differ from the CSV's")
        check(f"{name}: every .npy is the CSV's matrix, float32 bit for bit", not bad,
              "; ".join(bad[:5]))


# ---- 2. weights from NumPy, explored -------------------------------------------------------------

def softmax_attention(x, wq, wk, wv, heads):
    """(weights per head, output) in float64: softmax(Q K^T / sqrt(d_k)), causal, heads side by
    side (the split layout), no out_proj."""
    q, k, v = x @ wq, x @ wk, x @ wv
    n, d = q.shape
    dk = d // heads
    future = np.triu(np.ones((n, n), dtype=bool), 1)
    weights, context = [], []
    for h in range(heads):
        cols = slice(h * dk, (h + 1) * dk)
        scores = q[:, cols] @ k[:, cols].T / np.sqrt(dk)
        scores[future] = -np.inf
        scores -= scores.max(axis=1, keepdims=True)
        e = np.exp(scores)
        a = e / e.sum(axis=1, keepdims=True)
        weights.append(a)
        context.append(a @ v[:, cols])
    return weights, np.concatenate(context, axis=1)


SCENE = """title: weights from NumPy
text: the cat sat on the mat
embeddings: {{file: emb.{ext}}}
attention: {{d_out: 4, heads: 2, causal: true, out_proj: false}}
weights:
  query: {{file: wq.{ext}}}
  key: {{file: wk.{ext}}}
  value: {{file: wv.{ext}}}
"""


def check_numpy_weights(binary, tmp):
    rng = np.random.default_rng(20241123)
    n, d_in, d_out, heads = 6, 5, 4, 2
    x = rng.standard_normal((n, d_in)).astype(np.float32)
    wq = rng.standard_normal((d_in, d_out)) * 0.5  # float64: read rounded to float32
    wk = (rng.standard_normal((d_in, d_out)) * 0.5).astype(np.float32)
    wv = np.asfortranarray((rng.standard_normal((d_in, d_out)) * 0.5).astype(np.float32))

    folder = os.path.join(tmp, "from-numpy")
    os.makedirs(folder)
    np.save(os.path.join(folder, "emb.npy"), x)
    np.save(os.path.join(folder, "wq.npy"), wq)
    np.save(os.path.join(folder, "wk.npy"), wk)
    np.save(os.path.join(folder, "wv.npy"), wv)
    for stem, a in (("emb", x), ("wq", wq), ("wk", wk), ("wv", wv)):
        np.savetxt(os.path.join(folder, stem + ".csv"), a, delimiter=",")
    exports = {}
    for ext in ("npy", "csv"):
        scene = os.path.join(folder, f"scene-{ext}.yaml")
        with open(scene, "w") as f:
            f.write(SCENE.format(ext=ext))
        out = os.path.join(tmp, f"export-{ext}")
        attnscope(binary, "export", scene, "-o", out, "--format", "npy")
        exports[ext] = out

    out = exports["npy"]
    load = lambda rel: np.load(os.path.join(out, rel))  # noqa: E731
    wq32, wk32, wv32 = wq.astype(np.float32), wk, wv
    check("the embeddings come back as saved", same_bits(load("inputs.npy"), x))
    check("float64 W_query comes back rounded to float32",
          same_bits(load("params/W_query.npy"), wq32))
    check("W_key comes back as saved", same_bits(load("params/W_key.npy"), wk32))
    check("a Fortran-order W_value comes back as saved",
          same_bits(load("params/W_value.npy"), np.ascontiguousarray(wv32)))

    f64 = lambda a: a.astype(np.float64)  # noqa: E731
    weights, output = softmax_attention(f64(x), f64(wq32), f64(wk32), f64(wv32), heads)
    for h in range(heads):
        got = load(f"head{h}/weights.npy")
        err = float(np.max(np.abs(got - weights[h])))
        check(f"head {h}: weights equal NumPy's softmax(QK^T/sqrt(d_k)) within {TOLERANCE}",
              got.shape == (n, n) and err <= TOLERANCE, f"largest difference {err:.3g}")
        check(f"head {h}: rows sum to 1, the future masked to 0",
              np.allclose(got.sum(axis=1), 1, atol=TOLERANCE) and
              not np.any(np.triu(got, 1)))
    got = load("output.npy")
    err = float(np.max(np.abs(got - output)))
    check(f"the output equals NumPy's within {TOLERANCE}",
          got.shape == (n, d_out) and err <= TOLERANCE, f"largest difference {err:.3g}")

    # The same numbers through numpy.savetxt's CSV: the same export, bit for bit.
    other = exports["csv"]
    diff = []
    for f in sorted(files_under(out)):
        if f.endswith(".npy") and not f.startswith("scene.data/"):
            a, b = np.load(os.path.join(out, f)), np.load(os.path.join(other, f))
            if a.shape != b.shape or not same_bits(a, b):
                diff.append(f)
    check("the weights as numpy.savetxt CSV files give the same export", not diff, str(diff))


# ---- 3. docs/export.md's lines ---------------------------------------------------------------------

def readme_blocks(readme):
    """The first yaml and python blocks of docs/export.md's "## NumPy" section."""
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n## NumPy\n", 1)[1].split("\n## ", 1)[0]
    blocks = {}
    for lang in ("yaml", "python"):
        body = section.split(f"```{lang}\n", 1)[1].split("```", 1)[0]
        blocks[lang] = body
    return blocks


def check_readme(binary, readme, tmp):
    blocks = readme_blocks(readme)
    python_lines = blocks["python"].strip("\n").split("\n")
    check("docs/export.md's round trip is five lines of Python", len(python_lines) == 5,
          f"{len(python_lines)} lines")
    folder = os.path.join(tmp, "readme")
    os.makedirs(folder)
    with open(os.path.join(folder, "qkv.yaml"), "w") as f:
        f.write(blocks["yaml"])
    with open(os.path.join(folder, "roundtrip.py"), "w") as f:
        f.write(blocks["python"])
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(binary)) + os.pathsep + env.get("PATH", "")
    r = subprocess.run([sys.executable, "roundtrip.py"], cwd=folder, env=env,
                       capture_output=True, text=True)
    check("docs/export.md's NumPy lines run as written", r.returncode == 0, r.stderr[-2000:])
    weights = os.path.join(folder, "qkv", "head0", "weights.npy")
    if os.path.exists(weights):
        a = np.load(weights)
        check("and leave head0/weights.npy: 6 x 6, rows summing to 1",
              a.shape == (6, 6) and np.allclose(a.sum(axis=1), 1, atol=TOLERANCE))


def main():
    if len(sys.argv) != 4:
        raise SystemExit("usage: numpy_roundtrip.py ATTNSCOPE_BINARY SCENES_DIR docs/export.md")
    binary, scenes, readme = sys.argv[1], sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory(prefix="attnscope-numpy-") as tmp:
        check_scene_exports(binary, scenes, tmp)
        check_numpy_weights(binary, tmp)
        check_readme(binary, readme, tmp)
    print(f"numpy {np.__version__}: {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
