#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Man pages of the vkvit command, made from its --help texts (so they never drift from the program).

    docs/man/gen_man.py VKVIT OUTDIR      VKVIT: the built vkvit binary; writes OUTDIR/vkvit.1 and one
                                          OUTDIR/vkvit-<command>.1 per usage block of each command's --help
                                          (`vkvit bench --help` has two: vkvit-bench.1, vkvit-bench-gemm.1)

The build runs it (CMakeLists.txt, target vkvit-man) and `cmake --install` puts the pages into
<prefix>/share/man/man1. tools/completion/gen_completion.py reads the same texts through parse_help() here.

A --help text is read as: a `usage: vkvit <command> ...` line; paragraphs of description; an `options:` block of
`  -s, --long ARG   text` rows (text continued on deeper-indented lines); then paragraphs, of which one starting
`exit codes:` becomes EXIT STATUS, `examples:` EXAMPLES and `environment:` ENVIRONMENT.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

OPTION_ROW = re.compile(r"^  (?P<flags>-[^\s,]+(?:, -[^\s,]+)*)(?P<arg>(?: [A-Z][A-Za-z.]*)?)(?:\s{2,}(?P<text>.*))?$")


def run_help(vkvit: str, *args: str) -> str:
    r = subprocess.run([vkvit, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"gen_man: `{vkvit} {' '.join(args)}` exited with {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def top_level(vkvit: str) -> dict:
    """{'text': the `vkvit --help` text, 'commands': [(name, summary)], 'version': 'vkvit x.y.z ...'}."""
    text = run_help(vkvit, "--help")
    commands, in_commands = [], False
    for line in text.splitlines():
        if line.strip() == "commands:":
            in_commands = True
            continue
        if in_commands:
            m = re.match(r"^  (\S+)\s+(.*)$", line)
            if not m:
                break
            commands.append((m.group(1), m.group(2)))
    if not commands:
        raise SystemExit(f"gen_man: `{vkvit} --help` lists no commands")
    version = run_help(vkvit, "--version").strip()
    return {"text": text, "commands": commands, "version": version}


def parse_help(text: str) -> list:
    """The usage blocks of one --help text: [{'name': 'bench gemm', 'synopsis': '[options]', 'description': [...],
    'options': [(flags, arg, text)], 'sections': [(title, [lines])]}]."""
    blocks = []
    for chunk in re.split(r"(?m)^(?=usage: vkvit )", text):
        if not chunk.startswith("usage: vkvit "):
            continue
        lines = chunk.rstrip("\n").splitlines()
        words = lines[0][len("usage: vkvit "):].split(" ")
        name_words = []
        while words and re.fullmatch(r"[a-z][a-z0-9-]*", words[0]):
            name_words.append(words.pop(0))
        block = {"name": " ".join(name_words), "synopsis": " ".join(words), "description": [], "options": [],
                 "sections": []}
        part = "description"
        paragraph: list = []
        for line in lines[1:]:
            if line.strip() == "options:":
                part = "options"
                continue
            if part == "options":
                m = OPTION_ROW.match(line)
                if m:
                    block["options"].append([m.group("flags"), m.group("arg").strip(), m.group("text") or ""])
                    continue
                if line.startswith("    ") and block["options"]:
                    block["options"][-1][2] += " " + line.strip()
                    continue
                part = "after"
            if part == "description":
                if line.strip():
                    paragraph.append(line.strip())
                elif paragraph:
                    block["description"].append(" ".join(paragraph))
                    paragraph = []
                continue
            if not line.strip():
                continue
            m = re.match(r"^([a-z][a-z ]*):\s*(.*)$", line)
            if m and not line.startswith(" "):
                block["sections"].append((m.group(1), [m.group(2)] if m.group(2) else []))
            elif block["sections"] and block["sections"][-1][0] in ("examples", "environment"):
                block["sections"][-1][1].append(line)
            elif block["sections"] and not line.startswith(" ") and block["sections"][-1][0] != "examples":
                block["sections"][-1][1].append(line.strip())
            else:
                block["sections"].append(("", [line.strip()]))
        if paragraph:
            block["description"].append(" ".join(paragraph))
        blocks.append(block)
    return blocks


def esc(s: str) -> str:
    """Text for roff: backslashes and hyphens escaped, no line starting with a control character."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"(?m)^([.'])", r"\\&\1", s)


SECTION_TITLES = {"exit codes": "EXIT STATUS", "examples": "EXAMPLES", "environment": "ENVIRONMENT",
                  "options": "OPTIONS", "docs": "SEE ALSO"}


def page(name: str, summary: str, version: str, block: dict, see_also: list) -> str:
    title = name.upper()
    out = [f'.TH "{esc(title)}" 1 "" "{esc(version)}" "vkvit manual"', ".SH NAME", f"{esc(name)} \\- {esc(summary)}",
           ".SH SYNOPSIS", f".B vkvit {esc(block['name'])}".rstrip()]
    if block["synopsis"]:
        out.append(esc(block["synopsis"]))
    if block["description"]:
        out.append(".SH DESCRIPTION")
        for i, para in enumerate(block["description"]):
            if i:
                out.append(".PP")
            out.append(esc(para))
    if block["options"]:
        out.append(".SH OPTIONS")
        for flags, arg, text in block["options"]:
            out.append(".TP")
            b = ", ".join(f"\\fB{esc(f)}\\fR" for f in flags.split(", "))
            out.append(b + (f" \\fI{esc(arg)}\\fR" if arg else ""))
            out.append(esc(text))
    other = []
    for heading, lines in block["sections"]:
        if heading in ("examples", "environment") and len(lines) > 1 or heading == "examples":
            out.append(f".SH {SECTION_TITLES.get(heading, heading.upper())}")
            out += [".nf"] + [esc(l) for l in lines] + [".fi"]
        elif heading in SECTION_TITLES:
            out.append(f".SH {SECTION_TITLES[heading]}")
            out.append(esc(" ".join(lines)))
        else:
            other.append(esc(" ".join(lines) if not heading else f"{heading}: " + " ".join(lines)))
    if other:
        out.append(".SH NOTES")
        out.append("\n.PP\n".join(other))
    if see_also:
        out.append(".SH SEE ALSO")
        out.append(",\n".join(f"\\fB{esc(p)}\\fR(1)" for p in see_also))
    return "\n".join(out) + "\n"


def top_page(top: dict, pages: list) -> str:
    lines = top["text"].splitlines()
    out = [f'.TH "VKVIT" 1 "" "{esc(top["version"])}" "vkvit manual"', ".SH NAME",
           "vkvit \\- vision transformers (ViT-5, Vision-LSTM) on any Vulkan GPU", ".SH SYNOPSIS",
           ".B vkvit", "\\fIcommand\\fR [\\fIoptions\\fR]", ".br", ".B vkvit", "\\fB\\-\\-version\\fR | "
           "\\fB\\-\\-help\\fR", ".SH COMMANDS"]
    for name, summary in top["commands"]:
        out += [".TP", f"\\fBvkvit {esc(name)}\\fR (\\fBvkvit\\-{esc(name)}\\fR(1))", esc(summary)]
    sections, seen = [], False           # the paragraphs after the command list: "exit codes: ...", ...
    for line in lines:
        m = re.match(r"^([a-z][a-z ]*):\s+(\S.*)$", line)
        if m and (seen or m.group(1) == "exit codes"):
            seen = True
            sections.append((m.group(1), [m.group(2).strip()]))
        elif seen and line.strip():
            sections[-1][1].append(line.strip())
    out.append(".SH DESCRIPTION")
    out.append("Each command prints its options with \\fBvkvit\\fR \\fIcommand\\fR \\fB\\-\\-help\\fR, "
               "the text its manual page is made from.")
    docs = []
    for heading, body in sections:
        if heading == "docs":
            docs = body
            continue
        out.append(f".SH {SECTION_TITLES.get(heading, heading.upper())}")
        out.append(esc(" ".join(body)))
    out.append(".SH SEE ALSO")
    out.append(",\n".join(f"\\fB{esc(p)}\\fR(1)" for p in pages))
    if docs:
        out += [".PP", esc("In the source tree: " + " ".join(docs))]
    return "\n".join(out) + "\n"


def _summary(block: dict) -> str:
    """A nested command's one-line summary: its description's first clause, lower-cased."""
    first = re.split(r" \(|, |\. ", block["description"][0] if block["description"] else block["name"])[0]
    return first[:1].lower() + first[1:]


def main(argv: list) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 1
    vkvit, outdir = argv[1], argv[2]
    os.makedirs(outdir, exist_ok=True)
    top = top_level(vkvit)
    pages = {}
    for name, summary in top["commands"]:
        blocks = parse_help(run_help(vkvit, name, "--help"))
        if not blocks:
            raise SystemExit(f"gen_man: `vkvit {name} --help` has no usage line")
        for block in blocks:
            pages["vkvit-" + block["name"].replace(" ", "-")] = (summary if block["name"] == name else
                                                                  _summary(block), block)
    for page_name, (summary, block) in pages.items():
        see = ["vkvit"] + [p for p in pages if p != page_name and p.startswith(page_name + "-")]
        with open(os.path.join(outdir, page_name + ".1"), "w", encoding="utf-8") as f:
            f.write(page(page_name, summary, top["version"], block, see))
    with open(os.path.join(outdir, "vkvit.1"), "w", encoding="utf-8") as f:
        f.write(top_page(top, sorted(pages)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
