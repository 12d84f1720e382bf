#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every source file that is vkvit's own carries `SPDX-License-Identifier: Apache-2.0` (tools/spdx_headers.py).

Checks, each first shown a case it must catch:
  1. the rules: which files are covered (data, Markdown, corpora and shaders/unroll.cfg are not), where the line
     goes (C/GLSL first, Python/shell after the shebang and coding cookie), that adding it twice changes nothing,
     that a Python file keeps its docstring and `from __future__` import, and that glslang accepts the comment
     before `#version` (while it refuses code there);
  2. every tracked file the rules cover has the line (a file added without it: run tools/spdx_headers.py).
"""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import spdx_headers as sp  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


TAG = "SPDX-License-Identifier: Apache-2.0"

# 1. Which files.
for path, want in [("src/ctx.c", "c"), ("include/vkvit.h", "c"), ("shaders/gemm.comp", "c"),
                   ("shaders/reduce.glsl", "c"), ("tools/convert.py", "hash"), ("tools/setup.sh", "hash"),
                   ("cmake/shaders.cmake", "hash"), ("cmake/vkvit.pc.in", "hash"), ("CMakeLists.txt", "hash"),
                   ("examples/CMakeLists.txt", "hash"), ("python/pyproject.toml", "hash"),
                   ("tests/golden/ops/x.py", None), ("tests/data/cifar10-subset/x.sh", None),
                   ("tests/fuzz/corpus/a.c", None), ("shaders/unroll.cfg", None), ("README.md", None),
                   ("docs/math.md", None), ("assets/models/x.vkvit", None), ("tests/fuzz/image.dict", None),
                   ("python/vkvit/py.typed", None)]:
    check(sp.style(path) == want, f"style({path!r}) is {sp.style(path)!r}, want {want!r}")

# 1. Where the line goes, and idempotence.
cases = [
    ("c", "/* ctx.c */\nint x;\n", f"// {TAG}\n/* ctx.c */\nint x;\n"),
    ("c", "#version 450\nvoid main() {}\n", f"// {TAG}\n#version 450\nvoid main() {{}}\n"),
    ("hash", "#!/usr/bin/python3\n\"\"\"Doc.\"\"\"\n", f"#!/usr/bin/python3\n# {TAG}\n\"\"\"Doc.\"\"\"\n"),
    ("hash", "#!/usr/bin/python3\n# -*- coding: utf-8 -*-\nx = 1\n",
     f"#!/usr/bin/python3\n# -*- coding: utf-8 -*-\n# {TAG}\nx = 1\n"),
    ("hash", "\"\"\"Doc.\"\"\"\n", f"# {TAG}\n\"\"\"Doc.\"\"\"\n"),
    ("hash", "#!/usr/bin/env bash\r\nset -e\r\n", f"#!/usr/bin/env bash\r\n# {TAG}\r\nset -e\r\n"),
    ("hash", "#!/bin/sh", f"#!/bin/sh\n# {TAG}\n"),
    ("hash", "cmake_minimum_required(VERSION 3.20)\n", f"# {TAG}\ncmake_minimum_required(VERSION 3.20)\n"),
    ("hash", "", f"# {TAG}\n"),
    ("hash", "#!/bin/sh\n# Does X.\n#   x.sh [-h]\n[ \"$1\" = -h ] && sed -n '2,3p' \"$0\"\n",
     f"#!/bin/sh\n# {TAG}\n# Does X.\n#   x.sh [-h]\n[ \"$1\" = -h ] && sed -n '3,4p' \"$0\"\n"),
]
for kind, before, want in cases:
    got = sp.with_tag(before, kind)
    check(got == want, f"with_tag({before!r}) = {got!r}, want {want!r}")
    check(sp.with_tag(got, kind) == got, f"with_tag is not idempotent on {before!r}")
check(not sp.has_tag("int x;\n"), "has_tag found a line in a file without one")
check(not sp.has_tag(f"a\nb\nc\n// {TAG}\n"), "has_tag accepted the line below the first three lines")
check(not sp.has_tag("// SPDX-License-Identifier: MIT\n"), "has_tag accepted another licence")
check(sp.has_tag(f"/* {TAG} */\n"), "has_tag refused the /* */ form")

src = sp.with_tag('#!/usr/bin/python3\n"""The docstring."""\nfrom __future__ import annotations\nX: int = 1\n', "hash")
ns = {}
exec(compile(src, "<tagged>", "exec"), ns)
check(ns.get("__doc__") == "The docstring.", f"a tagged Python file lost its docstring: {ns.get('__doc__')!r}")

glslang = shutil.which("glslangValidator")
if glslang:
    with tempfile.TemporaryDirectory() as tmp:
        def compiles(text):
            path = os.path.join(tmp, "probe.comp")
            with open(path, "w") as f:
                f.write(text)
            r = subprocess.run([glslang, "-V", path, "-o", os.path.join(tmp, "probe.spv")], capture_output=True,
                               text=True)
            return r.returncode == 0, r.stdout + r.stderr
        shader = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"
        ok, log = compiles(sp.with_tag(shader, "c"))
        check(ok, f"glslang refuses the SPDX comment before #version:\n{log}")
        ok, log = compiles("int x;\n" + shader)
        check(not ok, "glslang accepted code before #version, so the check above proves nothing")
else:
    print("note: no glslangValidator; the #version placement is checked by the shader build only")

# 2. The tree.
files = sp.tracked_files()
check(len(files) > 100, f"only {len(files)} files covered: is this a git checkout?")
missing = []
for rel in files:
    path = os.path.join(ROOT, rel)
    if not os.path.exists(path):
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        head = "".join(f.readline() for _ in range(3))
    if not sp.has_tag(head):
        missing.append(rel)
check(not missing, f"{len(missing)} files have no SPDX line (run tools/spdx_headers.py): " + ", ".join(missing[:20]))
print(f"{len(files)} files covered, {len(missing)} without the line")

if failures:
    print(f"test_spdx: {len(failures)} failures")
    sys.exit(1)
print("test_spdx: ok")
