#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Bash and zsh completion of the vkvit command, made from its --help texts (docs/man/gen_man.py reads them).

    tools/completion/gen_completion.py VKVIT OUTDIR     writes OUTDIR/vkvit.bash (bash-completion: installed as
                                                        <prefix>/share/bash-completion/completions/vkvit) and
                                                        OUTDIR/_vkvit (zsh: <prefix>/share/zsh/site-functions)

Completed: the commands (and `bench gemm`), each command's options, and an option's value where its --help names
its kind: FILE / IN / OUT -> files, DIR -> folders, P (--precision) -> the precisions the help lists.
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "docs", "man"))
import gen_man  # noqa: E402

FILE_ARGS = ("FILE", "IN", "OUT", "IN.safetensors", "OUT.safetensors")


def commands(vkvit: str) -> tuple:
    """(top-level help facts, {command name ('bench gemm' included): usage block})."""
    top = gen_man.top_level(vkvit)
    blocks = {}
    for name, _ in top["commands"]:
        for block in gen_man.parse_help(gen_man.run_help(vkvit, name, "--help")):
            blocks[block["name"]] = block
    return top, blocks


def choices(text: str) -> list:
    """The values an option's text lists as `word (default)` / `word (...)` / `or word`: fp32, fp16, fp16-math."""
    words = re.findall(r"(?:^|, | or )([a-z0-9][a-z0-9-]*) \(", text)
    return words if len(words) >= 2 else []


def option_words(block: dict) -> list:
    out = []
    for flags, arg, text in block["options"]:
        out += flags.split(", ")
    return out


def bash(top: dict, blocks: dict) -> str:
    names = [n for n, _ in top["commands"]]
    lines = ["# bash completion of vkvit, made from its --help texts by tools/completion/gen_completion.py",
             "# (generated at build time; do not edit)",
             "_vkvit() {",
             "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]:-}",
             "    COMPREPLY=()",
             "    if [ \"$COMP_CWORD\" -eq 1 ]; then",
             f"        COMPREPLY=($(compgen -W '{' '.join(names)} --help --version' -- \"$cur\"))",
             "        return",
             "    fi",
             "    local sub=\"\"",
             "    if [ \"$COMP_CWORD\" -ge 3 ]; then sub=${COMP_WORDS[2]}; fi",
             "    local key=\"$cmd\"",
             "    case \"$cmd $sub\" in"]
    for name in blocks:
        if " " in name:
            lines.append(f"        '{name}') key='{name}' ;;")
    lines += ["    esac", "    case \"$key\" in"]
    for name, block in blocks.items():
        nested = [n.split(" ", 1)[1] for n in blocks if n.startswith(name + " ")]
        lines.append(f"    '{name}')")
        lines.append("        case \"$prev\" in")
        for flags, arg, text in block["options"]:
            pattern = "|".join(flags.split(", "))
            if arg in FILE_ARGS:
                lines.append(f"        {pattern}) COMPREPLY=($(compgen -f -- \"$cur\")); compopt -o filenames; return ;;")
            elif arg == "DIR":
                lines.append(f"        {pattern}) COMPREPLY=($(compgen -d -- \"$cur\")); compopt -o filenames; return ;;")
            elif arg and choices(text):
                lines.append(f"        {pattern}) COMPREPLY=($(compgen -W '{' '.join(choices(text))}' -- \"$cur\")); "
                             "return ;;")
            elif arg:
                lines.append(f"        {pattern}) return ;;")
        lines.append("        esac")
        words = " ".join(option_words(block))
        if nested:
            lines.append(f"        if [ \"$COMP_CWORD\" -eq 2 ] && [[ \"$cur\" != -* ]]; then "
                         f"COMPREPLY=($(compgen -W '{' '.join(nested)}' -- \"$cur\")); return; fi")
        lines.append(f"        if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W '{words}' -- \"$cur\")); "
                     "else COMPREPLY=($(compgen -f -- \"$cur\")); compopt -o filenames; fi")
        lines.append("        ;;")
    lines += ["    esac", "}", "complete -F _vkvit vkvit", ""]
    return "\n".join(lines)


def zsh_text(s: str) -> str:
    s = re.sub(r"\s*\(.*", "", s.split(";")[0]).strip()   # the first clause, no parentheses
    return s.replace("\\", "").replace("'", "").replace("[", "").replace("]", "").replace(":", "")


def zsh(top: dict, blocks: dict) -> str:
    lines = ["#compdef vkvit", "# zsh completion of vkvit, made from its --help texts by "
             "tools/completion/gen_completion.py (generated at build time; do not edit)", "",
             "_vkvit() {", "    local -a commands", "    commands=("]
    for name, summary in top["commands"]:
        lines.append(f"        '{name}:{zsh_text(summary)}'")
    lines += ["    )", "    if (( CURRENT == 2 )); then", "        _describe -t commands 'vkvit command' commands",
              "        _arguments '--help[the commands]' '--version[the version]'", "        return", "    fi",
              "    local key=$words[2]", "    if [[ $words[2] == bench && $words[3] == gemm ]]; then key='bench gemm'; fi"
              if "bench gemm" in blocks else "    local key=$words[2]", "    case $key in"]
    for name, block in blocks.items():
        nested = [n.split(" ", 1)[1] for n in blocks if n.startswith(name + " ")]
        specs = []
        for flags, arg, text in block["options"]:
            fl = flags.split(", ")
            if arg in FILE_ARGS:
                action = f":{arg.lower()}:_files"
            elif arg == "DIR":
                action = ":folder:_files -/"
            elif arg and choices(text):
                action = f":{arg.lower()}:({' '.join(choices(text))})"
            elif arg:
                action = f":{arg.lower()}: "
            else:
                action = ""
            desc = f"one of {', '.join(choices(text))}" if arg and choices(text) else zsh_text(text)
            exclusive = f"({' '.join(fl)})" if len(fl) > 1 else ""
            for f in fl:
                repeat = "*" if "repeatable" in text else ""
                specs.append(f"'{repeat}{exclusive}{f}[{desc}]{action}'")
        if nested:
            specs.append("'1:subcommand or option:(" + " ".join(nested) + ")'")
        specs.append("'*:file:_files'")
        lines.append(f"    '{name}')")
        if " " in name:                  # a nested command: _arguments then sees `gemm` as the command word
            lines += ["        shift words", "        (( CURRENT-- ))"]
        lines.append("        _arguments -s \\")
        lines += [f"            {s} \\" for s in specs[:-1]] + [f"            {specs[-1]}", "        ;;"]
    lines += ["    esac", "}", "", "_vkvit \"$@\"", ""]
    return "\n".join(lines)


def main(argv: list) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 1
    top, blocks = commands(argv[1])
    os.makedirs(argv[2], exist_ok=True)
    with open(os.path.join(argv[2], "vkvit.bash"), "w", encoding="utf-8") as f:
        f.write(bash(top, blocks))
    with open(os.path.join(argv[2], "_vkvit"), "w", encoding="utf-8") as f:
        f.write(zsh(top, blocks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
