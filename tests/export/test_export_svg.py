#!/usr/bin/env python3
"""Checks a qprof flame graph SVG: it parses as XML, needs no network, and
holds exactly the expected frames with widths proportional to samples.

usage: test_export_svg.py FILE.svg EXPECT.tsv WIDTH
EXPECT.tsv: one frame a line, "name<TAB>samples<TAB>depth" ("\\n" in names
stands for a newline); an empty file means the "no samples" SVG."""
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
errors = []


def fail(msg):
    errors.append(msg)


def main():
    svg, expect_path, width = sys.argv[1], sys.argv[2], float(sys.argv[3])
    raw = open(svg, "rb").read()
    root = ET.fromstring(raw)  # raises on malformed XML
    if root.tag != NS + "svg":
        fail("root is %s" % root.tag)
    text = raw.decode("utf-8")  # raises on invalid UTF-8
    for bad in ("href=", "src=", "@import", "url(http"):
        if bad in text:
            fail("external resource: %s" % bad)
    expect = []
    for line in open(expect_path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line:
            name, samples, depth = line.split("\t")
            expect.append((name.replace("\\n", "\n"), int(samples), int(depth)))
    if not expect:
        if not any((t.text or "") == "no samples" for t in root.iter(NS + "text")):
            fail("empty profile without 'no samples'")
        return
    if root.find(NS + "script") is None:
        fail("no script")
    frames = {}
    for g in root.iter(NS + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(NS + "title").text
        m = re.fullmatch(r"(.*) \((\d+) samples, ([\d.]+)%\)", title, re.S)
        if not m:
            fail("bad title %r" % title)
            continue
        rect, label = g.find(NS + "rect"), g.find(NS + "text")
        name = m.group(1)
        if name in frames:
            fail("frame %r twice (not merged)" % name)
        shown = label.text or ""
        if shown and shown != name and not (shown.endswith("..") and name.startswith(shown[:-2])):
            fail("label %r is not a prefix of %r" % (shown, name))
        frames[name] = (int(m.group(2)), float(m.group(3)), float(rect.get("x")),
                        float(rect.get("y")), float(rect.get("width")))
    total = next(s for n, s, d in expect if d == 0)
    plot = width - 20
    root_y = frames.get("all", (0, 0, 0, 0, 0))[3]
    for name, samples, depth in expect:
        if name not in frames:
            fail("missing frame %r" % name)
            continue
        s, pct, x, y, w = frames[name]
        if s != samples:
            fail("%r: %d samples, expected %d" % (name, s, samples))
        if abs(pct - 100.0 * samples / total) > 0.006:
            fail("%r: %.2f%%, expected %.2f%%" % (name, pct, 100.0 * samples / total))
        if abs(w - plot * samples / total) > 0.5:
            fail("%r: width %.2f, expected %.2f" % (name, w, plot * samples / total))
        if abs((root_y - y) - 16 * depth) > 0.01:
            fail("%r: y %.1f, expected depth %d" % (name, y, depth))
        if x < 10 - 0.01 or x + w > width - 10 + 0.5:
            fail("%r: outside the plot (x %.2f, width %.2f)" % (name, x, w))
    extra = set(frames) - {n for n, s, d in expect}
    if extra:
        fail("unexpected frames %r" % sorted(extra))


try:
    main()
except Exception as e:  # parse errors and the like
    fail("%s: %s" % (type(e).__name__, e))
for e in errors:
    print("test_export_svg.py: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
