#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Adds `SPDX-License-Identifier: Apache-2.0` to every source file that is vkvit's own, where it is missing.

    tools/spdx_headers.py           add the line where it is missing (idempotent: a second run changes nothing)
    tools/spdx_headers.py --check   change nothing; list the files without it and exit 1 if there are any

The files: those git tracks under src/, include/, tools/, shaders/, tests/, python/, lab/, cmake/ and examples/,
and the top-level CMakeLists.txt, with a source extension (C, GLSL, Python, shell, CMake, TOML, configure_file
templates). Not: data (tests/golden/, tests/data/, fuzz corpora and dictionaries, models, images), Markdown, and
shaders/unroll.cfg (a list of spirv-opt flags, with no comment syntax). Nothing third-party is tracked (the
dependencies are Debian packages), and generated files live in build/, which git ignores.

Where the line goes, so that every file still means what it did:
  C, GLSL (.c .h .comp .glsl)   `// SPDX-License-Identifier: Apache-2.0` as the first line: before the first comment,
                                and in GLSL before `#version` (comments may precede it: GLSL 4.50 section 3.3)
  Python, shell                 after the shebang, and after a coding cookie (`# -*- coding: ... -*-`) that follows
                                it, so both keep their places in the first two lines
  CMake, TOML, .in templates    `# SPDX-License-Identifier: Apache-2.0` as the first line
A shell script's `sed -n 'A,Bp' "$0"` (its header printed as --help) is moved down with its header.

The integrator re-runs it after merging branches that add files. tests/format/test_spdx.py checks the result.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LICENSE_ID = "Apache-2.0"
TAG = f"SPDX-License-Identifier: {LICENSE_ID}"

DIRS = ("src/", "include/", "tools/", "shaders/", "tests/", "python/", "lab/", "cmake/", "examples/")
TOP_FILES = ("CMakeLists.txt",)
C_STYLE = (".c", ".h", ".comp", ".glsl")
HASH_STYLE = (".py", ".sh", ".cmake", ".toml", ".in")
EXCLUDED_DIRS = ("tests/golden/", "tests/data/", "tests/fuzz/corpus/", "tests/fuzz/image_corpus/")
EXCLUDED_FILES = ("shaders/unroll.cfg",)

SELF_HELP = re.compile(r"""(sed -n ['"]?)(\d+),(\d+)(p['"]? "\$0")""")
CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
# The line, as this script writes it or in an equivalent form a file may already have.
HAS_TAG = re.compile(r"^\s*(//|#|/\*|\*)\s*SPDX-License-Identifier:\s*" + re.escape(LICENSE_ID) + r"\s*(\*/)?\s*$")


def style(path: str) -> str | None:
    """'c' or 'hash' for a file this script covers (a path relative to the root, with /), else None."""
    if path in EXCLUDED_FILES or any(path.startswith(d) for d in EXCLUDED_DIRS):
        return None
    if not (path in TOP_FILES or path.startswith(DIRS)):
        return None
    name = os.path.basename(path)
    if name.endswith(C_STYLE):
        return "c"
    if name.endswith(HASH_STYLE) or name == "CMakeLists.txt":
        return "hash"
    return None


def tracked_files(root: str = ROOT) -> list:
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], stdout=subprocess.PIPE, check=True).stdout
    return sorted(p for p in out.decode("utf-8").split("\0") if p and style(p))


def has_tag(text: str) -> bool:
    """True when one of the first three lines is the SPDX line (after a shebang and a coding cookie at most)."""
    return any(HAS_TAG.match(line) for line in text.splitlines()[:3])


def with_tag(text: str, kind: str) -> str:
    """The text with the SPDX line added in its place (unchanged when it is there already)."""
    if has_tag(text):
        return text
    newline = "\r\n" if "\r\n" in text.split("\n", 1)[0] + "\n" else "\n"
    if kind == "c":
        return f"// {TAG}{newline}" + text
    lines = text.splitlines(keepends=True)
    at = 0
    if lines and lines[0].startswith("#!"):
        at = 1
        if len(lines) > 1 and CODING.match(lines[1]):
            at = 2
    elif lines and CODING.match(lines[0]):
        at = 1
    if at and not lines[at - 1].endswith(("\n", "\r")):
        lines[at - 1] += newline
    lines.insert(at, f"# {TAG}{newline}")
    out = "".join(lines)
    # A shell script that prints its own header as its --help (`sed -n '2,17p' "$0"`) keeps printing the same lines.
    return SELF_HELP.sub(lambda m: m.group(0) if int(m.group(2)) <= at else
                         f"{m.group(1)}{int(m.group(2)) + 1},{int(m.group(3)) + 1}{m.group(4)}", out)


def main(argv: list) -> int:
    check = "--check" in argv[1:]
    missing, changed = [], []
    for rel in tracked_files():
        path = os.path.join(ROOT, rel)
        if not os.path.exists(path):          # deleted in the work tree, not yet in the index
            continue
        with open(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            print(f"spdx_headers: {rel} is not UTF-8; left alone", file=sys.stderr)
            missing.append(rel)
            continue
        if has_tag(text):
            continue
        if check:
            missing.append(rel)
            continue
        new = with_tag(text, style(rel))
        mode = os.stat(path).st_mode
        with open(path, "wb") as f:
            f.write(new.encode("utf-8"))
        os.chmod(path, mode)
        changed.append(rel)
    for rel in changed:
        print(f"spdx_headers: added to {rel}")
    if missing:
        print("spdx_headers: no SPDX-License-Identifier line in:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
