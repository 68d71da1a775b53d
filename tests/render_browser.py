#!/usr/bin/env python3
"""render_browser: a picture from `attnscope render`, as a browser draws it.

Headless Chromium takes a screenshot of the SVG at its own size (device scale 1); the PNG is
decoded here with zlib (no imaging library needed) and checked: its size is the SVG's, the
pixel at the centre of every cell has the cell's fill, known cells show viridis's true colours
(matplotlib's: weight 1 is #fde725, 0 is #440154, 0.4776 is #238b8d; never the grays
#4e4e4e/#444444/#3a3a3a the terminal's stand-ins once gave), the masked cells are the neutral
hatching and not a colour of the scale, and the legend bar runs through the scale. Skipped (exit 77) when neither `chromium` nor `chromium-headless-shell` is installed;
`apt-get install chromium` enables it (scripts/bootstrap does not install it).

Usage: render_browser.py ATTNSCOPE_BINARY SOURCE_ROOT.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"
MASK_GREYS = ((0xD9, 0xD9, 0xD9), (0x9A, 0x9A, 0x9A))  # export/svg.c's hatching
# matplotlib's viridis (its _cm_listed.py table) at 1, 0 and 0.4776 (between entries 121 and 122)
VIRIDIS_TOP, VIRIDIS_BOTTOM, VIRIDIS_04776 = (0xFD, 0xE7, 0x25), (0x44, 0x01, 0x54), (0x23, 0x8B, 0x8D)
GREYS = ("#4e4e4e", "#444444", "#3a3a3a")  # the xterm stand-ins pictures drew before
TOLERANCE = 2  # per channel: rounding in the compositor, never a neighbouring step

failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else ": " + detail))
    if not ok:
        failures += 1


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"PNG depth {depth} colour type {colour} interlace {interlace}")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ft == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def hex_rgb(fill):
    return tuple(int(fill[k:k + 2], 16) for k in (1, 3, 5))


def close(a, b):
    return all(abs(x - y) <= TOLERANCE for x, y in zip(a, b))


def screenshot(browser, svg_path, png_path, width, height, profile):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", "--force-color-profile=srgb",
           f"--user-data-dir={profile}", f"--window-size={width},{height}",
           f"--screenshot={png_path}", "file://" + os.path.abspath(svg_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    if p.returncode != 0 or not os.path.exists(png_path):
        check(f"{os.path.basename(browser)} takes a screenshot", False,
              f"exit {p.returncode}\n{p.stderr[-2000:]}")
        return False
    return True


def picture(binary, browser, tmp, name, args):
    """Renders args, screenshots it; returns (svg root, png rows) or None."""
    svg_path, png_path = os.path.join(tmp, name + ".svg"), os.path.join(tmp, name + ".png")
    p = subprocess.run([binary, "render", *args, "-o", svg_path], capture_output=True, text=True)
    if p.returncode != 0:
        check(f"render {name}", False, p.stderr)
        return None
    root = ET.parse(svg_path).getroot()
    w, h = int(root.get("width")), int(root.get("height"))
    if not screenshot(browser, svg_path, png_path, w, h, os.path.join(tmp, "profile")):
        return None
    pw, ph, rows = read_png(png_path)
    check(f"{name}: the PNG is the SVG's size ({w}x{h})", (pw, ph) == (w, h), f"{pw}x{ph}")
    return root, rows


def centre(rect):
    x, y = float(rect.get("x")), float(rect.get("y"))
    return int(x + float(rect.get("width")) / 2), int(y + float(rect.get("height")) / 2)


def check_cells(name, root, rows):
    bad, n, masked = [], 0, 0
    for g in root.iter(SVG + "g"):
        if g.get("class") != "cells":
            continue
        for r in g.iter(SVG + "rect"):
            x, y = centre(r)
            got = rows[y][x]
            fill = r.get("fill")
            n += 1
            if fill == "url(#masked)":
                masked += 1
                if not any(close(got, m) for m in MASK_GREYS) and not (
                        got[0] == got[1] == got[2] and 0x9A <= got[0] <= 0xD9):
                    bad.append(f"masked cell at ({x},{y}) is {got}")
            elif not close(got, hex_rgb(fill)):
                bad.append(f"cell at ({x},{y}) is {got}, its fill {fill}")
    check(f"{name}: the centres of {n} cells ({masked} masked) show their colours",
          not bad and n > 0, "; ".join(bad[:5]))
    return n, masked


def main(binary, root):
    browser = shutil.which("chromium") or shutil.which("chromium-headless-shell")
    if not browser:
        print("SKIP: neither chromium nor chromium-headless-shell is installed "
              "(apt-get install chromium enables this test)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="attnscope-browser-")
    os.environ["HOME"] = tmp  # no user colors.yaml; the browser's profile stays in tmp
    os.environ.pop("XDG_CONFIG_HOME", None)
    scene = os.path.join(root, "scenes", "10-mha.yaml")

    got = picture(binary, browser, tmp, "weights", [scene, "--stage", "weights"])
    if got:
        svg, rows = got
        n, _ = check_cells("weights head 0", svg, rows)
        check("36 cells", n == 36, str(n))
        # The legend bar: the scale from its top (viridis 1) down to its bottom (viridis 0).
        bar = [r for g in svg.iter(SVG + "g") if g.get("class") == "bar"
               for r in g.iter(SVG + "rect")]
        wrong = [(centre(r), rows[centre(r)[1]][centre(r)[0]], r.get("fill")) for r in bar
                 if not close(rows[centre(r)[1]][centre(r)[0]], hex_rgb(r.get("fill")))]
        check("legend bar: 72 pieces drawn in their colours", len(bar) == 72 and not wrong,
              str(wrong[:3]))
        if bar:
            (bx, by), (ex, ey) = centre(bar[0]), centre(bar[-1])
            check("legend bar's top is viridis's #fde725", close(rows[by][bx], VIRIDIS_TOP),
                  str(rows[by][bx]))
            check("legend bar's bottom is viridis's #440154", close(rows[ey][ex], VIRIDIS_BOTTOM),
                  str(rows[ey][ex]))
        # Known cells, as the browser shows them: head 0 of the book's MultiHeadAttention,
        # weights on 0..1. "Your" -> "Your" is 1.0, "Your" -> "journey" 0 (masked by
        # causality after the softmax), "journey" -> "Your" 0.4776.
        cells = [r for g in svg.iter(SVG + "g") if g.get("class") == "cells"
                 for r in g.iter(SVG + "rect")]
        for k, want, what in ((0, VIRIDIS_TOP, "1.0"), (1, VIRIDIS_BOTTOM, "0.0"),
                              (6, VIRIDIS_04776, "0.4776")):
            x, y = centre(cells[k])
            check(f"weight {what} shows viridis's #%02x%02x%02x" % want, close(rows[y][x], want),
                  f"{rows[y][x]}")
        grey = [centre(r) for r in cells
                if any(close(rows[centre(r)[1]][centre(r)[0]], hex_rgb(g)) for g in GREYS)]
        check("no cell is a terminal gray", not grey, str(grey[:3]))

    got = picture(binary, browser, tmp, "masked", [scene, "--stage", "masked", "--all-heads"])
    if got:
        svg, rows = got
        n, masked = check_cells("masked scores, every head", svg, rows)
        check("72 cells, 30 of them masked", (n, masked) == (72, 30), f"{n}, {masked}")

    print(f"{failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
