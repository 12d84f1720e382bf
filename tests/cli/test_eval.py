#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`vkvit eval` mechanics (issue 16 items 7 and 16): the bundled CIFAR-10 model on a few copied CIFAR images.

  - a --predictions path that cannot be created (missing folder, a directory) fails at once: exit 4, one stderr
    line naming it, no image evaluated (a bad image in the data would print its own line if it were); an existing
    file keeps its content when the run fails, and the model or an image as --predictions is refused (exit 1);
    a report that cannot be written (stdout /dev/full) is exit 4;
  - files in class folders that are not supported images are counted and named: text ("2 files skipped") and
    JSON ("skipped", "skipped_files"), a non-UTF-8 file name included, and the JSON is valid UTF-8 (U+FFFD);
  - a remainder shorter than --batch runs in a session of its own size: --limit 10 --batch 4 gives runs
    [4 x 2, 2 x 1] and padded_slots 0, with the same predictions as one batch of 10;
  - numbers that are not finite are JSON null (accuracy when no image could be read);
  - with stderr a terminal (a pty) the progress line shows the rate and an ETA.

Run from the repository root:  /usr/bin/python3 tests/cli/test_eval.py
Exit status: 0 passed, 1 failed, 77 skipped (no Vulkan device, or the CLI / bundled model is missing).
"""

import glob
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, run, summary  # noqa: E402

SUBSET = os.path.join(ROOT, "tests", "data", "cifar10-subset", "test")
MODEL = os.path.join(ROOT, "assets", "models", "vil_cifar10.vkvit")


def run_bytes(args, stderr_tty=False):
    """(exit code, stdout bytes, stderr text) with validation on; stderr on a pty when stderr_tty."""
    env = dict(os.environ, VKVIT_VALIDATION="1", VKVIT_CACHE_DIR="", ASAN_OPTIONS="detect_leaks=0")
    if not stderr_tty:
        p = subprocess.run([CLI] + args, capture_output=True, env=env, timeout=600)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")
    master, slave = pty.openpty()
    p = subprocess.Popen([CLI] + args, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the pty
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read()
    p.wait(timeout=600)
    os.close(master)
    return p.returncode, out, err.decode("utf-8", "replace")


def make_data(tmp, per_class=4, classes=("cat", "dog", "frog")):
    root = os.path.join(tmp, "data")
    for c in classes:
        os.makedirs(os.path.join(root, c))
        for f in sorted(glob.glob(os.path.join(SUBSET, c, "*.jpg")))[:per_class]:
            shutil.copy(f, os.path.join(root, c))
    return root


def main():
    if not os.path.exists(CLI) or not os.path.exists(MODEL):
        print(f"SKIP: {CLI} or {MODEL} is missing")
        return 77
    rc, out, err = run(["info"])
    if rc == 3:
        print(f"SKIP: no Vulkan device: {err.strip()}")
        return 77
    with tempfile.TemporaryDirectory(prefix="vkvit_test_eval_") as tmp:
        data = make_data(tmp)

        # Item 7: output paths are checked before the work. A corrupt image in the data would print its own line
        # if any image were evaluated.
        with open(os.path.join(data, "cat", "zz_corrupt.png"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n not really")
        for bad in ("/nonexistent/vkvit/p.tsv", tmp):
            rc, out, err = run(["eval", "--data", data, "--predictions", bad])
            lines = err.strip().splitlines()
            check(rc == 4 and len(lines) == 1 and bad in lines[0] and out == "",
                  f"--predictions {bad}: exit {rc}, stdout {out!r}, stderr {err!r}")
        os.remove(os.path.join(data, "cat", "zz_corrupt.png"))
        # A predictions file that eval could not write is not left behind when the run fails early.
        pred = os.path.join(tmp, "new.tsv")
        rc, out, err = run(["eval", "--data", os.path.join(tmp, "nowhere"), "--predictions", pred])
        check(rc == 2 and not os.path.exists(pred), f"failed eval left {pred} behind (exit {rc})")
        # An existing one keeps its content until a run completes (it was emptied at start before), and is never
        # the model or one of the images.
        old = os.path.join(tmp, "old.tsv")
        with open(old, "w") as f:
            f.write("old predictions\n")
        rc, out, err = run(["eval", "--data", os.path.join(tmp, "nowhere"), "--predictions", old])
        check(rc == 2 and open(old).read() == "old predictions\n" and
              not [n for n in os.listdir(tmp) if ".tmp." in n], f"failed eval touched {old} (exit {rc})")
        model_copy = os.path.join(tmp, "model.vkvit")
        shutil.copy(MODEL, model_copy)
        image = sorted(glob.glob(os.path.join(data, "cat", "*.jpg")))[0]
        rc, out, err = run(["eval", "--data", data, "--predictions", "-"])
        check(rc == 1 and "--predictions wants a file" in err, f"--predictions -: exit {rc}: {err!r}")
        for target, what in ((model_copy, "the model file"), (image, "one of the images")):
            before = open(target, "rb").read()
            rc, out, err = run(["eval", "--data", data, "--model", model_copy, "--predictions", target])
            check(rc == 1 and what in err and open(target, "rb").read() == before,
                  f"--predictions naming {what}: exit {rc}: {err!r}")
        # A report that cannot be written is a runtime failure (exit 4), as for every command.
        with open("/dev/full", "w") as full:
            p = subprocess.run([CLI, "eval", "--data", data, "--limit", "2"], stdout=full, stderr=subprocess.PIPE,
                               text=True)
        check(p.returncode == 4 and "No space left on device" in p.stderr,
              f"eval > /dev/full: exit {p.returncode}: {p.stderr!r}")

        # Item 16: skipped files are counted and named; non-UTF-8 names give valid JSON.
        odd = os.path.join(data.encode(), b"dog", b"caf\xe9.txt")
        with open(odd, "wb") as f:
            f.write(b"not an image")
        with open(os.path.join(data, "cat", "notes.txt"), "w") as f:
            f.write("not an image")
        rc, out, err = run_bytes(["eval", "--data=" + data, "--limit=10", "--bat", "4", "--json",
                                  "--predictions", os.path.join(tmp, "p4.tsv")])
        check(rc == 0 and err == "", f"eval --json: exit {rc}: {err}")
        try:
            doc = json.loads(out.decode("utf-8"))  # strict: invalid UTF-8 raises
        except (UnicodeDecodeError, ValueError) as e:
            doc = {}
            check(False, f"eval --json: not valid UTF-8 JSON ({e}): {out[:300]!r}")
        if doc:
            check(doc.get("skipped") == 2, f"eval --json: skipped {doc.get('skipped')}, want 2")
            names = sorted(os.path.basename(p) for p in doc.get("skipped_files", []))
            check(names == sorted(["caf\ufffd.txt", "notes.txt"]), f"eval --json: skipped_files {names}")
            # The remainder: 10 = 4 + 4 + 2, the 2 in a batch-2 session, nothing padded.
            check(doc.get("runs") == [{"batch": 4, "count": 2}, {"batch": 2, "count": 1}],
                  f"eval --limit 10 --batch 4: runs {doc.get('runs')}")
            check(doc.get("padded_slots") == 0 and doc.get("images") == 10,
                  f"eval --limit 10 --batch 4: padded {doc.get('padded_slots')}, images {doc.get('images')}")
        rc, out, err = run(["eval", "--data", data, "--limit", "10", "--batch", "10",
                            "--predictions", os.path.join(tmp, "p10.tsv")])
        check(rc == 0 and "2 files skipped, not a supported image type" in out,
              f"eval text: skipped files not reported (exit {rc}):\n{out}\n{err}")
        check("batch-" not in out, f"eval --batch 10 of 10 images mentions a remainder session:\n{out}")
        p4 = open(os.path.join(tmp, "p4.tsv")).read()
        p10 = open(os.path.join(tmp, "p10.tsv")).read()
        check(p4 == p10 and p4.count("\n") == 11, f"predictions differ between --batch 4 and 10:\n{p4}\n{p10}")

        # Non-finite numbers are null: no image readable, so no accuracy.
        only_bad = os.path.join(tmp, "only_bad")
        os.makedirs(os.path.join(only_bad, "cat"))
        with open(os.path.join(only_bad, "cat", "bad.jpg"), "wb") as f:
            f.write(b"\xff\xd8\xff garbage")
        rc, out, err = run_bytes(["eval", "--data", only_bad, "--json"])
        try:
            doc = json.loads(out.decode("utf-8"))
            check(rc == 2 and doc["images"] == 0 and doc["unreadable"] == 1 and doc["accuracy"] is None,
                  f"eval of unreadable images: exit {rc}, {doc}")
        except (UnicodeDecodeError, ValueError, KeyError) as e:
            check(False, f"eval of unreadable images: bad JSON ({e}): {out!r}")

        # Names with terminal escapes (an unreadable image, a skipped file) reach the terminal without them.
        esc = os.path.join(tmp, "esc")
        os.makedirs(os.path.join(esc, "cat"))
        shutil.copy(sorted(glob.glob(os.path.join(SUBSET, "cat", "*.jpg")))[0], os.path.join(esc, "cat"))
        with open(os.path.join(esc, "cat", "bad\x1b[31mred.png"), "wb") as f:
            f.write(b"not a png")
        with open(os.path.join(esc, "cat", "skip\x1b]0;title\x07.txt"), "wb") as f:
            f.write(b"x")
        os.mkfifo(os.path.join(esc, "cat", "pipe.png"))  # a FIFO must be refused, never block eval
        rc, out, err = run(["eval", "--data", esc], timeout=300)
        check(rc == 2 and "\x1b" not in out + err and "\x07" not in out + err and "bad?[31mred.png" in err and
              "1 file skipped" in out, f"eval with escapes in names: exit {rc}, stdout {out!r}, stderr {err!r}")
        check("pipe.png' is a named pipe (FIFO), not a regular file" in err and "1 images (2 more unreadable)" in out,
              f"eval with a FIFO among the images: exit {rc}, stdout {out!r}, stderr {err!r}")

        # Option syntax (getopt_long): usage errors are one line and exit 1; a device error names the command once.
        for args, what in ((["--frobnicate"], "unknown option '--frobnicate'"),
                           (["--data", data, "--batch"], "option '--batch' needs a value"),
                           (["--data", data, "--batch=0"], "--batch wants an integer in [1, 1024], got '0'"),
                           (["--data", data, "-b", "0"], "-b wants an integer in [1, 1024], got '0'"),
                           (["--data", data, "-m"], "option '-m' needs a value"),
                           (["--data", data, "--json=1"], "option '--json' takes no value"),
                           (["--data", data, "stray"], "unexpected argument 'stray'"),
                           ([], "--data DIR is required")):
            rc, out, err = run(["eval"] + args)
            check(rc == 1 and err.count("\n") == 1 and what in err and "try 'vkvit eval --help'" in err,
                  f"eval {args}: exit {rc}, stderr {err!r}")
        os.environ["VKVIT_DEVICE"] = "no-such-device-anywhere"
        try:
            rc, out, err = run(["eval", "--data", data])
        finally:
            del os.environ["VKVIT_DEVICE"]
        check(rc == 3 and err.count("\n") == 1 and err.count("vkvit eval") == 1,
              f"eval on a missing device: exit {rc}, stderr {err!r}")

        # Progress on a terminal: rate and ETA.
        rc, out, err = run_bytes(["eval", "--data", data, "--limit", "6", "--batch", "3"], stderr_tty=True)
        check(rc == 0 and "images/s" in err and ("ETA" in err or "took" in err) and "6/6" in err,
              f"progress on a terminal: exit {rc}, stderr {err!r}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
