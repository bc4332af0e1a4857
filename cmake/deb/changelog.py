#!/usr/bin/env python3
"""changelog.py CHANGELOG.md VERSION MAINTAINER OUT.gz - the Debian changelog
of the package (qprof is a native package: its changelog.gz is the Debian
one), made from the project's CHANGELOG.md: one entry per released version
("## [X.Y.Z] - YYYY-MM-DD"), newest first, its bullets as the entry's items.
The newest entry must be VERSION, the version being packaged. Compressed
with no name and no time stamp, so that it is the same at every build."""
import email.utils
import datetime
import gzip
import re
import sys
import textwrap

src, version, maintainer, out = sys.argv[1:5]
with open(src, encoding="utf-8") as f:
    text = f.read()

HEAD = re.compile(r"^## \[(\d+(?:\.\d+)*)\] - (\d{4}-\d{2}-\d{2})\s*$", re.M)
heads = list(HEAD.finditer(text))
if not heads:
    sys.exit(f"changelog.py: no released version (## [X.Y.Z] - DATE) in {src}")
if heads[0].group(1) != version:
    sys.exit(f"changelog.py: the newest version of {src} is {heads[0].group(1)}, the package's {version}")


def items(body):
    """The entry's items: each bullet (its continuation lines joined), or
    the section's prose when it has no bullet; markdown code marks dropped."""
    out, cur = [], None
    for line in body.split("\n"):
        s = line.strip()
        if s.startswith("### ") or s.startswith("## "):
            continue
        if s.startswith("- "):
            if cur:
                out.append(cur)
            cur = s[2:]
        elif s and cur is not None:
            cur += " " + s
        elif s:
            out.append(s)
    if cur:
        out.append(cur)
    return [re.sub(r"`([^`]*)`", r"\1", i) for i in out] or ["No change recorded."]


entries = []
for i, m in enumerate(heads):
    end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
    body = text[m.end():end]
    day = datetime.datetime.strptime(m.group(2), "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
    lines = [f"qprof ({m.group(1)}) unstable; urgency=medium", ""]
    for it in items(body):
        lines += textwrap.wrap(it, width=78, initial_indent="  * ", subsequent_indent="    ",
                               break_on_hyphens=False)
    lines += ["", f" -- {maintainer}  {email.utils.format_datetime(day)}", ""]
    entries.append("\n".join(lines))

data = "\n".join(entries).encode()
with open(out, "wb") as f:
    f.write(gzip.compress(data, compresslevel=9, mtime=0))
