#!/usr/bin/env python3
"""render_svg: `attnscope render` writes well-formed SVG with the explorer's colours.

The real binary renders scenes/10-mha.yaml (the book's MultiHeadAttention, whose weights
PyTorch computed into tests/golden/scenes/10-mha/) and this script checks the file as a reader
would: it parses as XML, has one rect per cell, the tokens as row and column labels, and every
cell's fill is the colour the explorer shows for that weight. The colour is worked out here from
the golden weight, independently of the C code: the scale's anchors interpolated to 24 steps,
each step's nearest free xterm-256 colour, that colour's RGB (palette/palette.c does the same in
C; any drift between the two fails here). Also: masked cells, every head on one range, the row
and log scales, a 1000-token matrix in blocks, labels that need escaping, and the atomic write.

Usage: render_svg.py ATTNSCOPE_BINARY SOURCE_ROOT. Prints one line per check; exits 1 on a
failure.
"""
import csv
import math
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
STEPS = 24
VIRIDIS = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
RDBU = [(33, 102, 172), (103, 169, 207), (247, 247, 247), (239, 138, 98), (178, 24, 43)]

failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures += 1


def xterm_rgb(i):
    levels = [0, 95, 135, 175, 215, 255]
    if i < 232:
        k = i - 16
        return (levels[k // 36], levels[(k // 6) % 6], levels[k % 6])
    g = 8 + (i - 232) * 10
    return (g, g, g)


def ramp(anchors):
    """The RGB of every step as the terminal shows it: the nearest free xterm-256 colour to
    each interpolated anchor colour (weights 3, 4, 2 on the channel differences)."""
    taken, out = set(), []
    for s in range(STEPS):
        t = s / (STEPS - 1) * 4.0
        i = min(int(t), 3)
        f = t - i
        a, b = anchors[i], anchors[i + 1]
        # C's lround: halves away from zero
        c = [int(math.floor(a[k] + (b[k] - a[k]) * f + 0.5)) for k in range(3)]
        best, best_d = None, None
        for x in range(16, 256):
            if x in taken:
                continue
            r = xterm_rgb(x)
            d = (r[0] - c[0]) ** 2 * 3 + (r[1] - c[1]) ** 2 * 4 + (r[2] - c[2]) ** 2 * 2
            if best_d is None or d < best_d:
                best, best_d = x, d
        taken.add(best)
        out.append("#%02x%02x%02x" % xterm_rgb(best))
    return out


def step_of(position):
    """The step of a position, or None within rounding noise of a step boundary (the golden
    is PyTorch's float, attnscope's may differ in the last bit)."""
    x = position * (STEPS - 1)
    if abs(x - math.floor(x) - 0.5) < 1e-3:
        return None
    return int(x + 0.5)


def read_matrix(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return [r[0] for r in rows[1:]], [[float(x) for x in r[1:]] for r in rows[1:]]


def render(binary, out, *args, expect=0):
    p = subprocess.run([binary, "render", *args, "-o", out], capture_output=True, text=True)
    if p.returncode != expect:
        check(f"render {' '.join(args)} exits {expect}", False,
              f"exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def parse(path):
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as e:
        check(f"{os.path.basename(path)} is well-formed XML", False, str(e))
        return None


def groups(root, cls):
    return [g for g in root.iter(SVG + "g") if g.get("class") == cls]


def cell_rects(root):
    """Every tile's cell rects, tile by tile, row by row."""
    return [[r for r in g.iter(SVG + "rect")] for g in groups(root, "cells")]


def texts(group):
    return ["".join(t.itertext()) for t in group.iter(SVG + "text")]


def fills_match(name, rects, matrix, position, palette):
    """Each finite cell's fill against the palette at its position; -inf cells masked."""
    n = len(matrix)
    bad, checked = [], 0
    for i in range(n):
        for j in range(len(matrix[i])):
            fill = rects[i * len(matrix[i]) + j].get("fill")
            x = matrix[i][j]
            if math.isinf(x):
                if fill != "url(#masked)":
                    bad.append(f"({i},{j}) -inf is {fill}")
                continue
            s = step_of(position(i, x))
            if s is None:
                continue
            checked += 1
            if fill != palette[s]:
                bad.append(f"({i},{j}) {x} is {fill}, want step {s} {palette[s]}")
    check(f"{name}: {checked} cell colours are the explorer's", not bad and checked > 0,
          "; ".join(bad[:5]))


def main(binary, root):
    viridis, rdbu = ramp(VIRIDIS), ramp(RDBU)
    scene = os.path.join(root, "scenes", "10-mha.yaml")
    golden = os.path.join(root, "tests", "golden", "scenes", "10-mha")
    tokens, w0 = read_matrix(os.path.join(golden, "head0", "weights.csv"))
    _, w1 = read_matrix(os.path.join(golden, "head1", "weights.csv"))
    _, m0 = read_matrix(os.path.join(golden, "head0", "masked.csv"))
    _, m1 = read_matrix(os.path.join(golden, "head1", "masked.csv"))
    tmp = tempfile.mkdtemp(prefix="attnscope-render-")
    os.environ.pop("XDG_CONFIG_HOME", None)
    os.environ["HOME"] = tmp  # no user colors.yaml: the shipped scales

    # One head, the weights: XML, rects, labels, colours, values.
    out = os.path.join(tmp, "w.svg")
    render(binary, out, scene, "--stage", "weights", "--head", "0", "--values")
    svg = parse(out)
    if svg is None:
        return
    check("root is an svg with a size", svg.tag == SVG + "svg" and
          int(svg.get("width")) > 0 and int(svg.get("height")) > 0, svg.tag)
    tiles = cell_rects(svg)
    check("one tile of 36 cell rects", len(tiles) == 1 and len(tiles[0]) == 36,
          str([len(t) for t in tiles]))
    rows = texts(groups(svg, "row-labels")[0])
    cols = texts(groups(svg, "col-labels")[0])
    check("row labels are the query tokens", rows == tokens, str(rows))
    check("column labels are the key tokens", cols == tokens, str(cols))
    check("column labels are rotated", all("rotate(-45" in t.get("transform", "")
                                           for t in groups(svg, "col-labels")[0].iter(SVG + "text")))
    title = "".join(svg.find(SVG + "title").itertext())
    sub = [t for t in svg.iter(SVG + "text") if t.get("class") == "subtitle"]
    check("title is the scene's", title.startswith("MultiHeadAttention"), title)
    check("subtitle names stage, head and layer",
          sub and "".join(sub[0].itertext()).startswith("weights \u00b7 head 0 of 2") and
          "head 0 of 2" in "".join(sub[0].itertext()) and
          "layer 0 of 1" in "".join(sub[0].itertext()), str(sub and "".join(sub[0].itertext())))
    lo = min(min(r) for r in w0)
    hi = max(max(r) for r in w0)
    fills_match("weights head 0", tiles[0], w0, lambda i, x: (x - lo) / (hi - lo), viridis)
    values = texts(groups(svg, "values")[0])
    check("values in the cells, 4 decimals", values[6:8] == ["%.4f" % w0[1][0], "%.4f" % w0[1][1]],
          str(values[:8]))
    legend = groups(svg, "legend")[0]
    ltext = " ".join(texts(legend))
    check("legend names the scale and its ends", "colour scale: matrix" in ltext and
          "1.0000" in ltext and "0.0000" in ltext, ltext)
    bar = [r.get("fill") for r in groups(svg, "bar")[0].iter(SVG + "rect")]
    check("legend bar is the 24 steps, highest on top", bar == viridis[::-1], str(bar))
    check("no masked swatch without masked cells", "masked" not in ltext, ltext)

    # Every head on one range, the masked scores: -inf hatched, the legend says so.
    out = os.path.join(tmp, "m.svg")
    render(binary, out, scene, "--stage", "masked", "--all-heads")
    svg = parse(out)
    if svg is None:
        return
    tiles = cell_rects(svg)
    check("two tiles of 36", [len(t) for t in tiles] == [36, 36], str([len(t) for t in tiles]))
    labels = [t for t in svg.iter(SVG + "text") if t.get("class") == "tile-label"]
    check("a label per head", ["".join(t.itertext()) for t in labels] == ["head 0", "head 1"])
    finite = [x for m in (m0, m1) for r in m for x in r if not math.isinf(x)]
    e = max(abs(min(finite)), abs(max(finite)))  # signed: diverging, symmetric around 0
    for t, m in ((0, m0), (1, m1)):
        fills_match(f"masked head {t} (diverging, shared range)", tiles[t], m,
                    lambda i, x: min(1.0, max(0.0, 0.5 + 0.5 * x / e)), rdbu)
    masked = sum(r.get("fill") == "url(#masked)" for t in tiles for r in t)
    check("30 masked cells hatched", masked == 30, str(masked))
    ltext = " ".join(texts(groups(svg, "legend")[0]))
    check("legend shows the masked swatch", "masked (\u2212\u221e)" in ltext, ltext)

    # The row scale: each row on its own range.
    out = os.path.join(tmp, "r.svg")
    render(binary, out, scene, "--head", "1", "--scale", "row")
    svg = parse(out)
    if svg is not None:
        def row_pos(i, x):
            r_lo, r_hi = min(w1[i]), max(w1[i])
            return (x - r_lo) / (r_hi - r_lo) if r_hi > r_lo else 0.5
        fills_match("row scale, head 1", cell_rects(svg)[0], w1, row_pos, viridis)
        ltext = " ".join(texts(groups(svg, "legend")[0]))
        check("legend names the row scale", "colour scale: row" in ltext and "row max" in ltext,
              ltext)

    # The log scale: four decades below the largest value.
    out = os.path.join(tmp, "l.svg")
    render(binary, out, scene, "--scale", "log")
    svg = parse(out)
    if svg is not None:
        top = math.log10(hi)
        floor = math.log10(max(lo, hi * 1e-4))
        fills_match("log scale, head 0", cell_rects(svg)[0], w0,
                    lambda i, x: (math.log10(max(x, hi * 1e-4)) - floor) / (top - floor), viridis)

    # 1000 tokens: blocks, no labels, the legend says both; the file stays small.
    big = os.path.join(tmp, "long.yaml")
    with open(big, "w") as f:
        words = " ".join("w%d" % (i * 7 % 97) for i in range(1000))
        f.write(f"version: 1\ntitle: long\ntext: {words}\nembeddings: {{dim: 4}}\n"
                "attention: {causal: true}\n")
    out = os.path.join(tmp, "long.svg")
    render(binary, out, big, "--stage", "masked", "--values")
    svg = parse(out)
    if svg is not None:
        n = sum(len(t) for t in cell_rects(svg))
        check("1000 tokens: 200x200 blocks of 5x5", n == 40000, str(n))
        check("no labels, no values", not groups(svg, "row-labels") and not groups(svg, "values"))
        ltext = " ".join(texts(groups(svg, "legend")[0]))
        check("legend says blocks, labels and values omitted",
              "blocks of 5\u00d75" in ltext and "labels omitted" in ltext and
              "values omitted" in ltext, ltext)
        size = os.path.getsize(out)
        check("file stays under 3 MB", size < 3 << 20, str(size))

    # Tokens that need escaping in XML, a blank made visible, a one-character token.
    odd = os.path.join(tmp, "odd.yaml")
    with open(odd, "w") as f:
        f.write('version: 1\ntokens: ["a&b", "<c>", "\\"q\\"", "x y", ","]\n')
    out = os.path.join(tmp, "odd.svg")
    render(binary, out, odd)
    svg = parse(out)
    if svg is not None:
        rows = texts(groups(svg, "row-labels")[0])
        check("labels escaped and read back", rows == ["a&b", "<c>", '"q"', "x\u2423y", ","],
              str(rows))

    # All or nothing: no temporary file is left beside the picture.
    left = [f for f in os.listdir(tmp) if f.startswith(".")]
    check("no temporary files left", not left, str(left))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
    print(f"{failures} failed")
    sys.exit(1 if failures else 0)
