#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The CLI's option syntax, usage errors, help texts and messages (issue 16 items 1, 2, 5, 19; issue 12 item 9).

  - every subcommand parses options with one getopt_long helper: `--model=X`, `--model X`, short flags (-m, -k, -b,
    -i, -o, -h), options after operands, and `--` (a file named like an option) all work;
  - every usage error is exactly one line, "vkvit CMD: <what> (try 'vkvit CMD --help')", exit 1, and echoes the value
    it refused (`bench --batch 0`);
  - numbers are parsed with overflow checks (`bench gemm --shape 4294967297x1x1` is refused, not wrapped to 1x1x1);
  - help texts name the right default model, cite only documents the repository has (no SPEC.md), and `vkvit --help`
    and docs/cli.md list --version; docs/cli.md documents VKVIT_ATTENTION;
  - a failing ctx says "vkvit classify:" once (not again as the ctx label).

Run from the repository root:  /usr/bin/python3 tests/cli/test_cli_options.py
Exit status: 0 passed, 1 failed, 77 skipped (the CLI is not built, or no Vulkan device).
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, run, summary

GOLDEN = os.path.join(ROOT, "tests", "golden", "models", "vit5_nvsubq_cls_r4.vkvit")
CAT = os.path.join(ROOT, "assets", "images", "cat.png")
DOCS_CLI = os.path.join(ROOT, "docs", "cli.md")

USAGE_LINE = r"vkvit {cmd}: {what} \(try 'vkvit {cmd} --help'\)"


def usage_error(args, cmd, what, label=None):
    """`vkvit ARGS` must fail with exit 1 and exactly the one-line usage error `what` (a regex)."""
    rc, out, err = run(args)
    want = USAGE_LINE.format(cmd=re.escape(cmd), what=what)
    check(rc == 1 and out == "" and re.fullmatch(want + "\n", err) is not None,
          f"{label or ' '.join(args)}: exit {rc}, stderr {err!r}, want one line matching {want!r}")


def test_usage_errors():
    for cmd in ("classify", "run", "bench", "info", "inspect"):
        usage_error([cmd, "--frobnicate"], cmd, "unknown option '--frobnicate'")
        usage_error([cmd, "-Z"], cmd, "unknown option '-Z'")
    usage_error(["bench", "gemm", "--frobnicate"], "bench gemm", "unknown option '--frobnicate'")
    usage_error(["classify", CAT, "--top"], "classify", "option '--top' needs a value")
    usage_error(["classify", CAT, "-k"], "classify", "option '-k' needs a value")
    usage_error(["classify", "--json=yes", CAT], "classify", "option '--json' takes no value")
    usage_error(["classify", "--top", "0", CAT], "classify", r"--top wants an integer in \[1, 1000000\], got '0'")
    usage_error(["classify", "--top=-3", CAT], "classify", r"--top wants an integer in \[1, 1000000\], got '-3'")
    usage_error(["classify", "--precision", "fp8", CAT], "classify",
                "--precision is fp32, fp16 or fp16-math, got 'fp8'")
    usage_error(["classify"], "classify", "no image given")
    usage_error(["classify", "-", "-"], "classify", r"standard input \('-'\) can be read only once")
    # 19: the refused value is echoed.
    usage_error(["bench", "--model", GOLDEN, "--batch", "0"], "bench", r"--batch wants an integer in \[1, 4096\], "
                "got '0'")
    usage_error(["bench", "-m", GOLDEN, "--repeat", "99999999999999999999"], "bench",
                r"--repeat wants an integer in \[1, 100000\], got '99999999999999999999'")
    usage_error(["bench", "-m", GOLDEN, "--duration", "-1"], "bench", r"--duration wants seconds in \(0, 86400\], "
                "got '-1'")
    usage_error(["bench"], "bench", r"--model FILE is required \(or: vkvit bench gemm\)")
    usage_error(["bench", "-m", GOLDEN, "--duration", "0x1p1"], "bench", r"--duration wants seconds in \(0, 86400\], "
                "got '0x1p1'")
    usage_error(["bench", "-m", GOLDEN, "--repeat", "3", "--duration", "1"], "bench",
                r"--repeat N and --duration S exclude each other")
    # 12.9: no wrap-around of 2^32 + 1 (or of 2^64 + 1) into 1.
    for shape in ("4294967297x1x1", "1x18446744073709551617x1", "1x1x-1", "8x8", "8x8x8x8", "+8x8x8", " 8x8x8"):
        usage_error(["bench", "gemm", "--shape", shape], "bench gemm",
                    r"--shape wants MxNxK with each in \[1, 65536\] and each matrix under 2\^28 elements, got "
                    + re.escape(f"'{shape}'"))
    # bench gemm --config / --versus CONFs: each bad item named; --rounds only with --versus.
    usage_error(["bench", "gemm", "--config", "foo"], "bench gemm", r"--config: unknown item 'foo' \(CONF: .*")
    usage_error(["bench", "gemm", "--versus", "bm=64,tile=3"], "bench gemm", r"--versus: unknown item 'tile=3' .*")
    usage_error(["bench", "gemm", "--config", "bm=x"], "bench gemm", r"--config: bm=x: a number in \[0, 4096\] .*")
    usage_error(["bench", "gemm", "--config", "tn=4097"], "bench gemm", r"--config: tn=4097: a number in .*")
    usage_error(["bench", "gemm", "--config", "kernel=gpu"], "bench gemm",
                "--config: kernel=gpu: not auto, cpu, shared or coopmat")
    for spec in ("", ",", "bm=64,", ",bm=64", "bm=64,,tn=4"):
        usage_error(["bench", "gemm", "--versus", spec], "bench gemm",
                    "--versus wants 'auto' or comma-separated items: .*got " + re.escape(f"'{spec}'"))
    usage_error(["bench", "gemm", "--rounds", "3"], "bench gemm", "--rounds goes with --versus")
    usage_error(["bench", "gemm", "--versus", "auto", "--rounds", "0"], "bench gemm",
                r"--rounds wants an integer in \[1, 100\], got '0'")
    usage_error(["bench", "gemm", "--versus", "auto", "--rounds", "3"], "bench gemm",
                r"--rounds 3: --versus runs rounds in pairs \(A B, then B A\), so an even number")
    usage_error(["bench", "gemm", "--versus", "bm=64", "--warmup", "0"], "bench gemm",
                "--versus needs --warmup of at least 1: .*")
    usage_error(["run", "-m", GOLDEN, "-i", "x"], "run", "--model, --input and --output are required")
    usage_error(["inspect"], "inspect", "no FILE given")
    usage_error(["inspect", GOLDEN, GOLDEN], "inspect", "one FILE only .*")
    usage_error(["info", "extra"], "info", "unexpected argument 'extra'")


def test_option_syntax(tmp):
    """The same classification through every spelling of the options."""
    base = None
    for args in (["classify", "--model", GOLDEN, "--top", "2", CAT],
                 ["classify", f"--model={GOLDEN}", "--top=2", CAT],
                 ["classify", "-m", GOLDEN, "-k", "2", CAT],
                 ["classify", f"-m{GOLDEN}", "-k2", CAT],
                 ["classify", CAT, "-k", "2", "--model", GOLDEN],   # options after the operand
                 ["classify", "--mod", GOLDEN, "--to", "2", CAT],   # unique prefixes
                 ["classify", "-m", GOLDEN, "-k", "2", "-b", "1", "--", CAT]):
        rc, out, err = run(args)
        check(rc == 0 and err == "" and out.count("class_") == 2, f"{args}: exit {rc}\n{out}\n{err}")
        if base is None:
            base = out
        check(out == base, f"{args}: output differs from the long form:\n{out}\nvs\n{base}")
    # `--` makes a file named like an option an operand.
    dash = os.path.join(tmp, "-k")
    with open(CAT, "rb") as f, open(dash, "wb") as g:
        g.write(f.read())
    os.chdir(tmp)
    try:
        rc, out, err = run(["classify", "-m", GOLDEN, "-k", "1", "--", "-k"])
        check(rc == 0 and out.splitlines()[1].split()[0] == "-k", f"classify -- -k: exit {rc}\n{out}\n{err}")
    finally:
        os.chdir(ROOT)


def test_help_texts():
    # 1: the default model is the bundled ViT-5, not the Vision-LSTM.
    rc, out, _ = run(["classify", "--help"])
    para = out[out.find("--model"):].split("\n  -")[0]
    check(rc == 0 and "vit5_cifar10.vkvit" in para and "ViT-5" in para and "Vision-LSTM" not in para,
          f"classify --help: the --model default is described wrongly:\n{para}")
    # 2: help texts cite the repository's own documents, never SPEC.md (which it does not have).
    texts = {}
    for args in (["--help"], ["classify", "--help"], ["run", "--help"], ["bench", "--help"],
                 ["bench", "gemm", "--help"], ["info", "--help"], ["inspect", "--help"], ["eval", "--help"]):
        rc, out, _ = run(args)
        texts[" ".join(args)] = out
        check(rc == 0 and "SPEC" not in out, f"{' '.join(args)} cites SPEC.md:\n{out}")
        for doc in re.findall(r"docs/[\w.-]+\.md", out):
            check(os.path.exists(os.path.join(ROOT, doc)), f"{' '.join(args)} cites {doc}, which does not exist")
    check("docs/model-format.md" in texts["inspect --help"], "inspect --help does not cite docs/model-format.md")
    # Every command that runs on a device takes --device (bench gemm lacked it); a name no device has is exit 3.
    for cmd in ("classify", "eval", "run", "bench", "bench gemm"):
        check("--device DEV" in texts[cmd + " --help"], f"{cmd} --help does not list --device DEV")
    rc, out, err = run(["bench", "gemm", "--device", "no-such-device-anywhere", "--shape", "8x8x8"])
    check(rc == 3 and out == "" and len(err.splitlines()) == 1 and "no-such-device-anywhere" in err,
          f"bench gemm --device no-such-device-anywhere: exit {rc}, stdout {out!r}, stderr {err!r}")
    # 19: --version is in the usage text and in docs/cli.md, and works; VKVIT_ATTENTION is documented.
    check("--version" in texts["--help"], f"vkvit --help does not list --version:\n{texts['--help']}")
    rc, out, _ = run(["--version"])
    check(rc == 0 and re.fullmatch(r"vkvit \d+\.\d+\.\d+ \([A-Za-z0-9._+-]+\)\n", out), f"--version: exit {rc}: {out!r}")
    doc = open(DOCS_CLI).read()
    check("--version" in doc, "docs/cli.md does not document --version")
    check("VKVIT_ATTENTION" in doc, "docs/cli.md does not document VKVIT_ATTENTION")


def test_messages():
    # 19: "vkvit classify: vkvit_ctx_create 'vkvit classify': ..." repeated the prefix as the ctx label.
    os.environ["VKVIT_DEVICE"] = "no-such-device-anywhere"
    try:
        rc, out, err = run(["classify", "-m", GOLDEN, CAT])
    finally:
        del os.environ["VKVIT_DEVICE"]
    check(rc == 3 and len(err.splitlines()) == 1 and err.startswith("vkvit classify: ")
          and err.count("vkvit classify") == 1, f"classify on a missing device: exit {rc}: {err!r}")


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    rc, out, err = run(["info"])
    if rc == 3:
        print(f"SKIP: no Vulkan device: {err.strip()}")
        return 77
    import tempfile
    with tempfile.TemporaryDirectory(prefix="vkvit_test_cli_options_") as tmp:
        test_usage_errors()
        test_option_syntax(tmp)
    test_help_texts()
    test_messages()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
