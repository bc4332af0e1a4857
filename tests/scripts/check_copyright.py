#!/usr/bin/env python3
"""check_copyright.py COPYRIGHT SOURCE_DIR - the Debian copyright file
(machine-readable format 1.0, DEP-5) against the source tree it describes.

- The header paragraph names the format and the upstream name.
- Every Files paragraph has Copyright and License; every licence named
  has its text, in the paragraph or in a stand-alone License paragraph,
  and no stand-alone licence goes unused.
- The first Files paragraph is "*"; every other pattern matches at least
  one file git tracks (a paragraph for nothing is a stale one).
- Each tracked file's licence is that of the last paragraph matching it
  (the format's rule), and it agrees with what the file itself declares:
  an SPDX-License-Identifier line, and a BPF program's license string
  (the string in the "license" section), which the kernel reads.
- Each licence of the source tree (but tests/otlp, which carries its own)
  has its full text in LICENSES/ID.txt, and LICENSE names each of them.

Exit 0 when all hold, 1 otherwise (each finding printed)."""
import fnmatch
import os
import re
import subprocess
import sys

copyright_path, src = sys.argv[1], os.path.realpath(sys.argv[2])
FORMAT = "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
# SPDX ids as files write them, to the one the copyright file uses
SPDX_SAME = {"GPL-2.0": "GPL-2.0-only", "GPL-2.0-only": "GPL-2.0-only", "MIT": "MIT",
             "Apache-2.0": "Apache-2.0"}
# what the kernel accepts as GPL-compatible in a BPF object, by licence
BPF_OK = {"GPL-2.0-only": {"GPL", "GPL v2", "Dual BSD/GPL", "Dual MIT/GPL"}}
bad = []


def paragraphs(text):
    """The paragraphs: lists of (field, value) with continuation lines joined."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        fields = []
        for line in block.split("\n"):
            if line.startswith((" ", "\t")):
                if not fields:
                    bad.append(f"a continuation line opens a paragraph: {line!r}")
                    continue
                k, v = fields[-1]
                fields[-1] = (k, v + "\n" + line[1:])
            elif ":" in line:
                k, v = line.split(":", 1)
                fields.append((k.strip(), v.strip()))
            else:
                bad.append(f"not a field: {line!r}")
        out.append(fields)
    return out


with open(copyright_path, encoding="utf-8") as f:
    paras = paragraphs(f.read())
head = dict(paras[0])
if head.get("Format") != FORMAT:
    bad.append(f"header: Format is {head.get('Format')!r}, not {FORMAT}")
if not head.get("Upstream-Name"):
    bad.append("header: no Upstream-Name")

files_paras, licence_texts = [], {}
for p in paras[1:]:
    d = dict(p)
    if len(d) != len(p):
        bad.append(f"a field appears twice in {p[0]}")
    if "Files" in d:
        for need in ("Copyright", "License"):
            if not d.get(need):
                bad.append(f"Files: {d['Files']}: no {need}")
        lic = d.get("License", "")
        name, _, text = lic.partition("\n")
        files_paras.append((d["Files"].split(), name.strip(), bool(text.strip())))
    elif "License" in d:
        name, _, text = d["License"].partition("\n")
        if not text.strip():
            bad.append(f"License: {name}: a stand-alone paragraph without the text")
        licence_texts[name.strip()] = text
    else:
        bad.append(f"a paragraph that is neither Files nor License: {p[0]}")

used = {name for _, name, _ in files_paras}
for _, name, has_text in files_paras:
    if not has_text and name not in licence_texts:
        bad.append(f"License: {name}: no text (neither in its Files paragraph nor stand-alone)")
for name in licence_texts:
    if name not in used:
        bad.append(f"License: {name}: stand-alone but no Files paragraph uses it")

tracked = subprocess.run(["git", "-C", src, "ls-files", "-z"], stdout=subprocess.PIPE,
                         check=True).stdout.decode().split("\0")
tracked = [f for f in tracked if f]
if not files_paras or files_paras[0][0] != ["*"]:
    bad.append("the first Files paragraph is not \"*\"")


def matches(pattern, path):
    # the format's wildcards: * and ? match any characters, "/" included
    return fnmatch.fnmatchcase(path, pattern)


for patterns, name, _ in files_paras[1:]:
    for pat in patterns:
        if not any(matches(pat, f) for f in tracked):
            bad.append(f"Files: {pat}: matches no file of the repository")


def licence_of(path):
    lic = None
    for patterns, name, _ in files_paras:
        if any(matches(p, path) for p in patterns):
            lic = name
    return lic


SPDX = re.compile(r"SPDX-License-Identifier:\s*([\w.+-]+)")
BPF_LIC = re.compile(r'char\s+\w+\[\]\s+SEC\("license"\)\s*=\s*"([^"]*)"')
checked = 0
for f in tracked:
    path = os.path.join(src, f)
    if os.path.islink(path) or not os.path.isfile(path):
        continue
    try:
        with open(path, encoding="utf-8") as fh:
            head_text = fh.read(200000)
    except (UnicodeDecodeError, OSError):
        continue
    lic = licence_of(f)
    for m in SPDX.finditer(head_text[:2000]):
        checked += 1
        said = SPDX_SAME.get(m.group(1), m.group(1))
        if said != lic:
            bad.append(f"{f}: declares {m.group(1)}, the copyright file says {lic}")
    for m in BPF_LIC.finditer(head_text):
        checked += 1
        if m.group(1) not in BPF_OK.get(lic, set()):
            bad.append(f"{f}: BPF license string {m.group(1)!r} under {lic}")

source_lics = {licence_of(f) for f in tracked if not f.startswith("tests/otlp/")}
try:
    with open(os.path.join(src, "LICENSE"), encoding="utf-8") as fh:
        top = fh.read()
except OSError:
    top = ""
    bad.append("no LICENSE file at the top of the source tree")
for lic in sorted(x for x in source_lics if x):
    if not os.path.isfile(os.path.join(src, "LICENSES", lic + ".txt")):
        bad.append(f"{lic}: no LICENSES/{lic}.txt")
    if lic not in top:
        bad.append(f"{lic}: LICENSE does not name it")

for b in bad:
    print("FAIL:", b)
print(f"copyright: {len(files_paras)} Files paragraphs, {len(licence_texts)} licence texts, "
      f"{len(tracked)} files, {checked} licence declarations checked, {len(bad)} findings")
sys.exit(1 if bad else 0)
