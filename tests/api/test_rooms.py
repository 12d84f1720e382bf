#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The rooms of docs/architecture.md, enforced on the source tree (no build needed).

Each rule below is one "never touches" claim of docs/architecture.md. Comments are stripped before a rule looks at
the code (a comment may name what a room does not touch); string literals are kept (a string is code's behaviour).

  vulkan        vk* calls only in src/vk/ and src/graph/ (everything else goes through their functions, so the
                allocation counters see every object and every barrier is derived in one place)
  environment   getenv / secure_getenv only in src/policy/env.c (the one documented table, read once per ctx)
  arch names    no architecture name (vit5, vil, resnet) in identifiers or strings outside src/arch/, src/modules/
                and the converter and reference tools: everything else is driven by the architecture table
  cli           tools/cli/ includes only include/vkvit.h and its own headers (the build gives it no path into src/)
  policy        src/policy/ includes no Vulkan header: it reads facts (src/vk/facts.h), never the driver
  modules       src/modules/ and src/arch/ include nothing of src/vk/: networks are built from ops and graph nodes
  environment documented   every variable of env.c's table has its row in docs/environment.md

Exit 0 when every rule holds, 1 with one line per breach (file:line, the rule, the text).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def strip_comments(text):
    """C source with comments replaced by spaces (newlines kept, so line numbers stay); strings kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources(*folders, exts=(".c", ".h")):
    for folder in folders:
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in sorted(files):
                if f.endswith(exts):
                    path = os.path.join(dirpath, f)
                    yield os.path.relpath(path, ROOT), strip_comments(open(path, encoding="utf-8").read())


def inside(path, *prefixes):
    return any(path.startswith(p) for p in prefixes)


VK_CALL = re.compile(r"\bvk[A-Z][A-Za-z0-9]*\s*\(")
GETENV = re.compile(r"\b(secure_)?getenv\s*\(")
ARCH_NAME = re.compile(r"(?i)(vit5|resnet|(?<![a-z])vil(?![a-z]))")
# Names that contain an architecture's name but are not code that knows one: the bundled model's file name.
ARCH_NAME_ALLOWED = ('"vit5_cifar10.vkvit"',)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

RULES = []


def rule(name):
    def wrap(fn):
        RULES.append((name, fn))
        return fn
    return wrap


@rule("vulkan")
def vulkan_calls():
    for path, code in sources("src"):
        if inside(path, "src/vk/", "src/graph/"):
            continue
        for m in VK_CALL.finditer(code):
            yield path, code.count("\n", 0, m.start()) + 1, m.group(0)


@rule("environment")
def environment_reads():
    for path, code in sources("src"):
        if path == "src/policy/env.c":
            continue
        for m in GETENV.finditer(code):
            yield path, code.count("\n", 0, m.start()) + 1, m.group(0)


@rule("arch names")
def arch_names():
    for path, code in sources("src", "tools/cli"):
        if inside(path, "src/arch/", "src/modules/"):
            continue
        for allowed in ARCH_NAME_ALLOWED:
            code = code.replace(allowed, " " * len(allowed))
        for m in ARCH_NAME.finditer(code):
            yield path, code.count("\n", 0, m.start()) + 1, m.group(0)


@rule("cli")
def cli_includes():
    own = set(os.listdir(os.path.join(ROOT, "tools", "cli")))
    for path, code in sources("tools/cli"):
        for m in INCLUDE.finditer(code):
            if m.group(1) != "vkvit.h" and m.group(1) not in own:
                yield path, code.count("\n", 0, m.start()) + 1, m.group(0).strip()


@rule("policy")
def policy_includes():
    for path, code in sources("src/policy"):
        for m in INCLUDE.finditer(code):
            if m.group(1).startswith("vk/") and m.group(1) != "vk/facts.h" or "volk" in m.group(1):
                yield path, code.count("\n", 0, m.start()) + 1, m.group(0).strip()


@rule("modules")
def module_includes():
    for path, code in sources("src/modules", "src/arch"):
        for m in INCLUDE.finditer(code):
            if m.group(1).startswith("vk/"):
                yield path, code.count("\n", 0, m.start()) + 1, m.group(0).strip()


@rule("environment documented")
def environment_documented():
    """Every variable of src/policy/env.c's table has a row in docs/environment.md."""
    table = open(os.path.join(ROOT, "src", "policy", "env.c"), encoding="utf-8").read()
    doc = open(os.path.join(ROOT, "docs", "environment.md"), encoding="utf-8").read()
    names = re.findall(r'^\s*\{"([A-Z_0-9]+)",', table, re.M)
    if not names:
        yield "src/policy/env.c", 1, "no table rows found"
    for name in names:
        if f"| `{name}` |" not in doc:
            yield "docs/environment.md", 1, f"{name} (in src/policy/env.c's table) has no row"


def self_test():
    """The rules must be able to fail: each is shown a breach it has to find."""
    assert VK_CALL.search(strip_comments("x = vkCreateBuffer(dev, &i, NULL, &b);"))
    assert not VK_CALL.search(strip_comments("/* vkCreateBuffer( */ x = 1;"))
    assert GETENV.search(strip_comments('const char *v = getenv("HOME");'))
    assert ARCH_NAME.search(strip_comments('if (!strcmp(arch, "vit5")) return;'))
    assert ARCH_NAME.search("vkvit__vil_fold(") and not ARCH_NAME.search("civil_time")
    assert not ARCH_NAME.search(strip_comments("// ViL's 196 tokens\nx = 1;"))
    assert strip_comments('a = "/* not a comment */";') == 'a = "/* not a comment */";'


def main():
    self_test()
    breaches = 0
    for name, fn in RULES:
        found = list(fn())
        for path, line, text in found:
            print(f"{path}:{line}: rule '{name}': {text}")
        breaches += len(found)
        print(f"rule '{name}': {'holds' if not found else f'{len(found)} breach(es)'}")
    if breaches:
        print(f"FAIL: {breaches} breach(es) of the rooms of docs/architecture.md")
        return 1
    print("all rooms hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
