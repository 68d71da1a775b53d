#!/usr/bin/env python3
"""render_svg: `attnscope render` writes well-formed SVG in the scales' true colours.

The real binary renders scenes/10-mha.yaml (the book's MultiHeadAttention, whose weights
PyTorch computed into tests/golden/scenes/10-mha/) and this script checks the file as a reader
would: it parses as XML, has one rect per cell, the tokens as row and column labels, and every
cell's fill is the scale's colour at the cell's weight. The colour is worked out here from the
golden weight, independently of the C code: viridis from matplotlib's 256-entry table (below, as
8-bit hex), blue-red from ColorBrewer's 11-class RdBu reversed, each read by linear
interpolation; a fill may differ by 1 in a channel (the C code interpolates the table's floats,
this its 8-bit rounding). Also: masked cells, every head on one range, the row and log scales, a
1000-token matrix in blocks with position ticks, labels that need escaping, and the atomic write.

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
# matplotlib's _viridis_data (van der Walt and Smith, CC0), each entry rounded to 8 bits.
VIRIDIS = (
    "440154 440256 450457 450559 46075a 46085c 460a5d 460b5e 470d60 470e61 "
    "471063 471164 471365 481467 481668 481769 48186a 481a6c 481b6d 481c6e "
    "481d6f 481f70 482071 482173 482374 482475 482576 482677 482878 482979 "
    "472a7a 472c7a 472d7b 472e7c 472f7d 46307e 46327e 46337f 463480 453581 "
    "453781 453882 443983 443a83 443b84 433d84 433e85 423f85 424086 424186 "
    "414287 414487 404588 404688 3f4788 3f4889 3e4989 3e4a89 3e4c8a 3d4d8a "
    "3d4e8a 3c4f8a 3c508b 3b518b 3b528b 3a538b 3a548c 39558c 39568c 38588c "
    "38598c 375a8c 375b8d 365c8d 365d8d 355e8d 355f8d 34608d 34618d 33628d "
    "33638d 32648e 32658e 31668e 31678e 31688e 30698e 306a8e 2f6b8e 2f6c8e "
    "2e6d8e 2e6e8e 2e6f8e 2d708e 2d718e 2c718e 2c728e 2c738e 2b748e 2b758e "
    "2a768e 2a778e 2a788e 29798e 297a8e 297b8e 287c8e 287d8e 277e8e 277f8e "
    "27808e 26818e 26828e 26828e 25838e 25848e 25858e 24868e 24878e 23888e "
    "23898e 238a8d 228b8d 228c8d 228d8d 218e8d 218f8d 21908d 21918c 20928c "
    "20928c 20938c 1f948c 1f958b 1f968b 1f978b 1f988b 1f998a 1f9a8a 1e9b8a "
    "1e9c89 1e9d89 1f9e89 1f9f88 1fa088 1fa188 1fa187 1fa287 20a386 20a486 "
    "21a585 21a685 22a785 22a884 23a983 24aa83 25ab82 25ac82 26ad81 27ad81 "
    "28ae80 29af7f 2ab07f 2cb17e 2db27d 2eb37c 2fb47c 31b57b 32b67a 34b679 "
    "35b779 37b878 38b977 3aba76 3bbb75 3dbc74 3fbc73 40bd72 42be71 44bf70 "
    "46c06f 48c16e 4ac16d 4cc26c 4ec36b 50c46a 52c569 54c568 56c667 58c765 "
    "5ac864 5cc863 5ec962 60ca60 63cb5f 65cb5e 67cc5c 69cd5b 6ccd5a 6ece58 "
    "70cf57 73d056 75d054 77d153 7ad151 7cd250 7fd34e 81d34d 84d44b 86d549 "
    "89d548 8bd646 8ed645 90d743 93d741 95d840 98d83e 9bd93c 9dd93b a0da39 "
    "a2da37 a5db36 a8db34 aadc32 addc30 b0dd2f b2dd2d b5de2b b8de29 bade28 "
    "bddf26 c0df25 c2df23 c5e021 c8e020 cae11f cde11d d0e11c d2e21b d5e21a "
    "d8e219 dae319 dde318 dfe318 e2e418 e5e419 e7e419 eae51a ece51b efe51c "
    "f1e51d f4e61e f6e620 f8e621 fbe723 fde725 "
).split()
# ColorBrewer's RdBu (11 classes) reversed: blue for negative, red for positive.
RDBU_R = [(5, 48, 97), (33, 102, 172), (67, 147, 195), (146, 197, 222), (209, 229, 240),
          (247, 247, 247), (253, 219, 199), (244, 165, 130), (214, 96, 77), (178, 24, 43),
          (103, 0, 31)]
GREYS = ("#4e4e4e", "#444444", "#3a3a3a")  # the terminal's stand-ins pictures once drew

failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures += 1


def rgb(hexstr):
    return tuple(int(hexstr.lstrip("#")[k:k + 2], 16) for k in (0, 2, 4))


def viridis(position):
    """viridis at 0..1: entry k at k/255, linear between entries."""
    table = [rgb(h) for h in VIRIDIS]
    t = min(max(position, 0.0), 1.0) * 255
    i = min(int(t), 254)
    f = t - i
    return tuple(table[i][k] + (table[i + 1][k] - table[i][k]) * f for k in range(3))


def rdbu_r(position):
    t = min(max(position, 0.0), 1.0) * 10
    i = min(int(t), 9)
    f = t - i
    return tuple(RDBU_R[i][k] + (RDBU_R[i + 1][k] - RDBU_R[i][k]) * f for k in range(3))


def near(fill, want):
    """The fill is the wanted colour, within 1 of each channel (rounding)."""
    return fill.startswith("#") and all(abs(a - b) <= 1.01 for a, b in zip(rgb(fill), want))


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


def fills_match(name, rects, matrix, position, scale):
    """Each finite cell's fill against the scale at its position; -inf cells masked."""
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
            checked += 1
            want = scale(position(i, x))
            if not near(fill, want) or fill in GREYS:
                bad.append(f"({i},{j}) {x} is {fill}, want " +
                           "#%02x%02x%02x" % tuple(int(c + 0.5) for c in want))
    check(f"{name}: {checked} cell colours are the scale's true ones", not bad and checked > 0,
          "; ".join(bad[:5]))


def main(binary, root):
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
    check("legend bar runs the scale, its top on top",
          len(bar) == 72 and all(near(f, viridis(1 - k / 71)) for k, f in enumerate(bar)),
          str(bar[:4]))
    # Known cells: "Your" -> "Your" is 1.0, the top of viridis; "journey" -> "Your" 0.4776.
    check("weight 1.0 is #fde725", tiles[0][0].get("fill") == "#fde725", tiles[0][0].get("fill"))
    check("weight 0.0 is #440154", tiles[0][1].get("fill") == "#440154", tiles[0][1].get("fill"))
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
                    lambda i, x: min(1.0, max(0.0, 0.5 + 0.5 * x / e)), rdbu_r)
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
        # Position ticks instead: every 50 positions (4 px a block of 5, 40 px apart at least).
        ticks = groups(svg, "ticks")
        rows_t = [t for t in ticks[0].iter(SVG + "text") if t.get("class") == "row-tick"] \
            if ticks else []
        cols_t = [t for t in ticks[0].iter(SVG + "text") if t.get("class") == "col-tick"] \
            if ticks else []
        want = [str(i) for i in range(0, 1000, 50)]
        check("row ticks every 50 positions", ["".join(t.itertext()) for t in rows_t] == want,
              str(["".join(t.itertext()) for t in rows_t]))
        check("column ticks every 50 positions", ["".join(t.itertext()) for t in cols_t] == want,
              str(["".join(t.itertext()) for t in cols_t]))
        top = float(cell_rects(svg)[0][0].get("y"))
        check("a tick sits at its position's row",
              rows_t and all(abs(float(t.get("y")) - (top + int("".join(t.itertext())) * 0.8))
                             < 0.06 for t in rows_t),
              str([t.get("y") for t in rows_t[:3]]))
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
