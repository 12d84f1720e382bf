#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What goes into and comes out of the CLI (issue 16 items 3, 4, 6-15; issue 12 items 7 and 9; issue 17 bench).

With the small golden models (tests/golden/models/, random weights, 32x32 / 8x8 inputs) and tiny batches:
  - inputs: `classify -` reads standard input, /dev/stdin and <(...) (pipes) are read to their end, `run --input -`;
  - outputs: `run --output -` writes the safetensors bytes to stdout; `--output /dev/full` is exit 4 and leaves the
    device node alone; a symlinked output is followed (the link stays, its target is written); a missing folder is
    exit 4; `classify/inspect/info > /dev/full` are exit 4 with one sentence, and so is a closed pipe (no SIGPIPE);
    a device as input (/dev/zero) is refused at once; an output that is the input or the condition (the same path,
    a symlink, a hard link) is exit 1 and the input keeps its bytes; SIGQUIT mid-run removes the temporary file,
    and the one a SIGKILL leaves is removed by the next run (and nothing else: live pids, other outputs, look-alike
    names, folders, symlinks); /proc files as models are "not a regular file with a size", not "0 bytes long"; an output that is the input or the condition (the same path,
    a symlink, a hard link) is exit 1 and the input keeps its bytes; SIGQUIT mid-run removes the temporary file,
    and the one a SIGKILL leaves is removed by the next run (and nothing else: live pids, other outputs, look-alike
    names, folders, symlinks); /proc files as models are "not a regular file with a size", not "0 bytes long";
  - classify streams: the first batch's results arrive while a later image (standard input) is still unread; a
    progress line with an ETA goes to stderr when it is a terminal;
  - a model without labels: `"label": null` in JSON, the table's columns as wide as "class N";
  - JSON is valid UTF-8 for a Latin-1 file name (U+FFFD), NaN probabilities are null with a warning (NaN in the
    table, with a warning), NaN logits still rank real classes; labels with
    ESC / BEL reach the terminal as '?';
  - `inspect` of a non-model names it by its magic bytes; `inspect --json` lists every label;
  - `run` of an NCHW tensor prints its shape and the permute hint; `run --precision fp16`;
  - conditioned resnet models: bench feeds a random condition, classify and run take --condition FILE;
  - `info --json`, and one "device / vkvit uses / why" table;
  - bench: p50 <= p90 <= p99 <= max and a standard deviation, --duration with its drift; bench and run print the
    validation layer's messages (the log callback) when VKVIT_VALIDATION=1.

Run from the repository root:  /usr/bin/python3 tests/cli/test_cli_io.py
Exit status: 0 passed, 1 failed, 77 skipped (the CLI is not built, no Vulkan device, or no PyTorch).
"""

import json
import os
import pty
import select
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, env, run, run_bytes, summary

MODELS = os.path.join(ROOT, "tests", "golden", "models")
GOLDEN = os.path.join(MODELS, "vit5_nvsubq_cls_r4.vkvit")
COND = os.path.join(MODELS, "resnet_seq_cond_global_qkn_causal")   # condition [B, 32], 8x8 input
IMAGES = os.path.join(ROOT, "assets", "images")
CAT, DOG, BIRD = (os.path.join(IMAGES, n) for n in ("cat.png", "dog.jpg", "bird.bmp"))

sys.path.insert(0, os.path.join(ROOT, "tools"))


def strict_json(text, what):
    """json.loads that refuses NaN / Infinity (Python accepts them by default); None after a failed check."""
    def bad(c):
        raise ValueError(f"non-standard constant {c}")
    try:
        return json.loads(text, parse_constant=bad)
    except ValueError as e:
        check(False, f"{what}: not valid JSON ({e}): {text[:300]!r}")
        return None


def read_logits(data):
    """logits from safetensors bytes."""
    import numpy as np
    n = int.from_bytes(data[:8], "little")
    head = json.loads(data[8:8 + n])
    t = head["logits"]
    b, e = t["data_offsets"]
    return np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").reshape(t["shape"])


# ------------------------------------------------------------------------------------------------------------------
# Inputs


def test_stdin(tmp):
    rc, out, err = run(["classify", "--model", GOLDEN, "--top", "1", CAT])
    want = out.splitlines()[1].split()[2] if rc == 0 else None
    cat = open(CAT, "rb").read()
    rc, out, err = run_bytes(["classify", "--model", GOLDEN, "--top", "1", "-"], stdin=cat)
    rows = out.decode().splitlines()
    check(rc == 0 and len(rows) == 2 and rows[1].split()[:3] == ["-", "1", want], f"classify -: exit {rc}\n{rows}\n{err}")
    rc, out, err = run_bytes(["classify", "--model", GOLDEN, "--top", "1", "/dev/stdin"], stdin=cat)
    check(rc == 0 and out.decode().splitlines()[1].split()[2] == want, f"classify /dev/stdin: exit {rc}\n{out}\n{err}")
    rc, out, err = run_bytes(f'"$VKVIT" classify --model {GOLDEN} --top 1 <(cat {CAT})', shell=True)
    check(rc == 0 and out.decode().splitlines()[1].split()[2] == want, f"classify <(...): exit {rc}\n{out}\n{err}")
    rc, out, err = run_bytes(["classify", "--model", GOLDEN, "-"], stdin=b"")
    check(rc == 2 and "'standard input' is empty" in err and out == b"", f"classify - (empty): exit {rc}: {err!r}")
    # A device is refused at once, not read to the size limit (/dev/zero never ends: 4 GiB of memory for --input).
    if os.path.exists("/dev/zero") and stat.S_ISCHR(os.stat("/dev/zero").st_mode):
        for args in (["classify", "--model", GOLDEN, "/dev/zero"],
                     ["run", "--model", GOLDEN, "--input", "/dev/zero", "--output", os.path.join(tmp, "z.st")]):
            rc, out, err = run_bytes(args, timeout=60)
            check(rc == 2 and "'/dev/zero' is a device" in err and len(err.splitlines()) == 1,
                  f"{args[0]} of /dev/zero: exit {rc}: {err!r}")
        with open("/dev/zero", "rb") as zero:  # the same device as standard input
            p = subprocess.run([CLI, "run", "--model", GOLDEN, "--input", "-", "--output", os.path.join(tmp, "z.st")],
                               stdin=zero, capture_output=True, text=True, env=env(), timeout=60)
        check(p.returncode == 2 and "is a device" in p.stderr, f"run --input - < /dev/zero: exit {p.returncode}: "
              f"{p.stderr!r}")


def test_run_stdio(tmp):
    io = f"{COND}.io.safetensors"
    out_file = os.path.join(tmp, "out.safetensors")
    rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", io, "--output", out_file])
    check(rc == 0, f"run to a file: exit {rc}\n{err}")
    rc, out, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", "-", "--output", "-"], stdin=open(io, "rb").read())
    check(rc == 0 and out == open(out_file, "rb").read() and "standard output" in err,
          f"run -i - -o -: exit {rc}, {len(out)} bytes on stdout\n{err}")
    try:
        master, slave = pty.openpty()  # a terminal as stdout: no binary bytes onto it
    except OSError as e:
        print(f"note: no pseudo-terminal ({e}); the terminal checks are not run")
        return
    rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", io, "--output", "-"], stdout=slave)
    os.close(slave)
    os.close(master)
    check(rc == 1 and "--output - writes a binary safetensors file" in err, f"run -o - on a terminal: {rc}: {err!r}")


# ------------------------------------------------------------------------------------------------------------------
# Outputs and write errors


def test_write_errors(tmp):
    io = f"{COND}.io.safetensors"
    # The devices are reached through symlinks in tmp: a binary that still renames a temporary file over its output
    # then replaces only the link, never /dev/full or /dev/null themselves (this test may run as root).
    for dev, want_rc in (("/dev/full", 4), ("/dev/null", 0)):
        link = os.path.join(tmp, os.path.basename(dev))
        os.symlink(dev, link)
        rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", io, "--output", link])
        check(rc == want_rc and os.path.islink(link) and stat.S_ISCHR(os.stat(link).st_mode) and
              (want_rc == 0 or "No space left on device" in err), f"run --output {dev}: exit {rc}: {err!r}")
    real, link = os.path.join(tmp, "real.st"), os.path.join(tmp, "link.st")
    open(real, "w").write("old")
    os.symlink("real.st", link)
    rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", io, "--output", link])
    check(rc == 0 and os.path.islink(link) and os.readlink(link) == "real.st" and
          read_logits(open(real, "rb").read()).shape[1] == 10 and
          not [n for n in os.listdir(tmp) if ".tmp." in n], f"run --output through a symlink: exit {rc}: {err!r}")
    model_copy = os.path.join(tmp, "model.vkvit")  # the output may not replace its own model
    with open(f"{COND}.vkvit", "rb") as f, open(model_copy, "wb") as g:
        g.write(f.read())
    rc, _, err = run_bytes(["run", "--model", model_copy, "--input", io, "--output", model_copy])
    check(rc == 1 and "is the model file" in err and open(model_copy, "rb").read() == open(f"{COND}.vkvit", "rb").read(),
          f"run --output = --model: exit {rc}: {err!r}")
    rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", io, "--output",
                            os.path.join(tmp, "no", "such", "x.st")])
    check(rc == 4 and len(err.splitlines()) == 1, f"run --output in a missing folder: exit {rc}: {err!r}")
    # A closed pipe (`vkvit classify ... | head -c1`): exit 4 with a sentence, not death by SIGPIPE (exit 141).
    r, w = os.pipe()
    os.close(r)
    try:
        rc, _, err = run_bytes(["classify", "--model", GOLDEN, "--batch", "1", CAT, DOG], stdout=w)
    finally:
        os.close(w)
    check(rc == 4 and "Broken pipe" in err and len(err.splitlines()) == 1, f"classify into a closed pipe: exit {rc}: "
          f"{err!r}")
    for args in (["classify", "--model", GOLDEN, CAT], ["classify", "--model", GOLDEN, "--json", CAT],
                 ["inspect", GOLDEN], ["inspect", "--json", GOLDEN], ["info"], ["info", "--json"], ["--version"]):
        with open("/dev/full", "wb") as full:
            rc, _, err = run_bytes(args, stdout=full)
        check(rc == 4 and err.endswith("cannot write the output to standard output: No space left on device\n")
              and len(err.splitlines()) == 1, f"{' '.join(args)} > /dev/full: exit {rc}: {err!r}")


def test_output_is_input(tmp):
    """`run --output` may not be the file it reads: the same path, a symlink to it or a hard link of it (the same
    device and inode) is a usage error, and the input keeps its bytes."""
    io = os.path.join(tmp, "in.safetensors")
    with open(f"{COND}.io.safetensors", "rb") as f, open(io, "wb") as g:
        g.write(f.read())
    original = open(io, "rb").read()
    link, hard = os.path.join(tmp, "link.safetensors"), os.path.join(tmp, "hard.safetensors")
    os.symlink("in.safetensors", link)
    os.link(io, hard)
    for what, out in (("the same path", io), ("a symlink", link), ("a hard link", hard)):
        rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", io, "--output", out])
        check(rc == 1 and "is the input file" in err and len(err.splitlines()) == 1 and
              open(io, "rb").read() == original, f"run --output = --input ({what}): exit {rc}: {err!r}")
    rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", f"{COND}.io.safetensors", "--condition",
                            io, "--output", link])
    check(rc == 1 and "is the condition file" in err and open(io, "rb").read() == original,
          f"run --output = --condition: exit {rc}: {err!r}")
    check(not [n for n in os.listdir(tmp) if ".tmp." in n], f"a refused run left a temporary: {os.listdir(tmp)}")


def test_interrupted_output(tmp):
    """SIGQUIT (Ctrl-\\) removes `run --output`'s temporary file as SIGINT and SIGTERM do; the temporary a SIGKILL
    leaves is removed by the next run that writes the same output, and only that: a live process's temporary,
    other outputs' and names that only look alike stay."""
    import resource
    import signal
    import time
    out = os.path.join(tmp, "out.safetensors")
    io = open(f"{COND}.io.safetensors", "rb").read()

    def start():
        # `--input -` from a pipe held open: the run waits on it with its temporary file created, so the signal
        # always arrives mid-run; no core file from SIGQUIT
        p = subprocess.Popen([CLI, "run", "--model", f"{COND}.vkvit", "--input", "-", "--output", out],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env(),
                             cwd=tmp, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        tmp_file = f"{out}.tmp.{p.pid}"
        deadline = time.monotonic() + 60
        while not os.path.exists(tmp_file) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return p, tmp_file

    open(out, "w").write("old")
    p, tmp_file = start()
    created = os.path.exists(tmp_file)
    p.send_signal(signal.SIGQUIT)
    p.wait(timeout=60)
    p.stdin.close()
    err = p.stderr.read().decode("utf-8", "replace")
    p.stderr.close()
    check(created and p.returncode == -signal.SIGQUIT and not os.path.exists(tmp_file) and
          open(out).read() == "old", f"run --output, SIGQUIT: created {created}, status {p.returncode}, "
          f"left {sorted(os.listdir(tmp))}: {err!r}")

    p, killed_tmp = start()
    created = os.path.exists(killed_tmp)
    p.kill()
    p.wait(timeout=60)
    p.stdin.close()
    p.stderr.close()
    check(created and os.path.exists(killed_tmp), f"run --output, SIGKILL: no temporary left to clean up "
          f"(created {created}): {sorted(os.listdir(tmp))}")
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = gone.pid                                       # a process that has exited: its pid is not alive
    stale_attempt = f"{out}.tmp.{dead}.3"                # the helper's second name form, dead too
    keep = [f"{out}.tmp.{os.getpid()}",                  # a live process's (this one's)
            f"{out}.tmp.{dead}x", f"{out}.tmp.{dead}.", f"{out}.tmp.", f"{out}.tmp.-{dead}",  # not the pattern
            os.path.join(tmp, f"other.safetensors.tmp.{dead}")]                               # another output
    for n in keep + [stale_attempt]:
        open(n, "w").write("x")
    not_regular = [f"{out}.tmp.{dead}.7", f"{out}.tmp.{dead}.5"]   # the pattern, but a folder and a symlink
    os.mkdir(not_regular[0])
    os.symlink(keep[-1], not_regular[1])
    keep += not_regular
    rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", f"{COND}.io.safetensors", "--output", out])
    left = sorted(os.listdir(tmp))
    check(rc == 0 and not os.path.exists(killed_tmp) and not os.path.exists(stale_attempt) and
          all(os.path.exists(n) for n in keep) and read_logits(open(out, "rb").read()).shape[1] == 10,
          f"run after a SIGKILLed run: exit {rc}, left {left}: {err!r}")


def test_pseudo_files(tmp):
    """Files of /proc and /sys say st_size 0 but hold data: as a model they are refused as what they are, not as
    "0 bytes long"; read as an input (a stream) their real length is reported."""
    proc = "/proc/sys/kernel/ostype"                      # "Linux\n": shorter than a safetensors header
    if not os.path.exists(proc) or os.stat(proc).st_size != 0:
        print(f"note: no {proc} with st_size 0; the pseudo-file checks are not run")
        return
    for args in (["inspect", proc], ["classify", "--model", proc, CAT],
                 ["run", "--model", proc, "--input", f"{COND}.io.safetensors", "--output", os.path.join(tmp, "o")],
                 ["bench", "--model", proc, "--repeat", "1"], ["inspect", "/proc/self/status"]):
        rc, _, err = run_bytes(args)
        check(rc == 2 and len(err.splitlines()) == 1 and "0 bytes long" not in err and
              "not a regular file with a size" in err and f"'{args[-1] if args[0] == 'inspect' else proc}'" in err,
              f"{' '.join(args)}: exit {rc}: {err!r}")
    rc, _, err = run_bytes(["run", "--model", f"{COND}.vkvit", "--input", proc, "--output", os.path.join(tmp, "o")])
    check(rc == 2 and "0 bytes long" not in err and "6 bytes long" in err, f"run --input {proc}: exit {rc}: {err!r}")


# ------------------------------------------------------------------------------------------------------------------
# classify output


def test_streaming():
    """-b 1 CAT -: CAT's row must arrive while standard input is still open."""
    p = subprocess.Popen([CLI, "classify", "--model", GOLDEN, "--top", "1", "--batch", "1", CAT, "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    got = b""
    try:
        while got.count(b"\n") < 2:
            ready, _, _ = select.select([p.stdout], [], [], 120)
            if not ready:
                break
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                break
            got += chunk
        check(got.count(b"\n") >= 2 and CAT.encode() in got, f"classify streaming: before the last image was "
              f"given, stdout held {got!r}")
        rest, err = p.communicate(input=open(DOG, "rb").read(), timeout=300)
        check(p.returncode == 0 and (got + rest).count(b"\n") == 3, f"classify streaming: exit {p.returncode}\n"
              f"{got + rest!r}\n{err!r}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_progress():
    try:
        master, slave = pty.openpty()
    except OSError as e:
        print(f"note: no pseudo-terminal ({e}); the progress-line check is not run")
        return
    p = subprocess.Popen([CLI, "classify", "--model", GOLDEN, "--top", "1", "--batch", "1", CAT, DOG, BIRD], stdout=subprocess.PIPE,
                         stderr=slave, env=env())
    os.close(slave)
    tty = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        tty += chunk
    out, _ = p.communicate(timeout=300)
    os.close(master)
    check(p.returncode == 0 and b"1 / 3 images" in tty and b"ETA" in tty and tty.endswith(b"\r\x1b[K"),
          f"progress on a terminal: exit {p.returncode}, stderr {tty!r}")
    rc, out, err = run(["classify", "--model", GOLDEN, "--top", "1", "--batch", "1", CAT, DOG])
    check(rc == 0 and err == "", f"no progress when stderr is not a terminal: {err!r}")


def test_labels(tmp):
    import torch
    import vkvit_file
    tensors, doc = vkvit_file.read_model(GOLDEN)
    # 9: no labels.
    nolabels = dict(doc)
    del nolabels["labels"]
    path = os.path.join(tmp, "nolabels.vkvit")
    vkvit_file.write_model(path, tensors, nolabels)
    rc, out, err = run(["classify", "--model", path, "--top", "3", "--json", CAT])
    d = strict_json(out, "classify --json without labels")
    check(rc == 0 and d and all(e["label"] is None for e in d["images"][0]["top"]), f"no labels, JSON: {out}")
    rc, out, err = run(["classify", "--model", path, "--top", "3", CAT])
    lines = out.splitlines()
    check(rc == 0 and len(lines) == 4 and lines[1].split()[2:4] == ["class", str(d["images"][0]["top"][0]["class"])]
          and len({len(l) for l in lines}) == 1 and lines[0].index("probability") == lines[1].index("%") - 10,
          f"no labels, table columns not sized to 'class N':\n{out}")
    # A label that appears twice (ImageNet has two "crane"s) is fine for classify, but eval cannot map a folder of
    # that name to one class: refused with a sentence instead of a silently wrong accuracy.
    dup = dict(doc)
    dup["labels"] = ["crane", "cat", "crane"] + [f"c{i}" for i in range(3, 10)]
    path = os.path.join(tmp, "dup.vkvit")
    vkvit_file.write_model(path, tensors, dup)
    data = os.path.join(tmp, "dupdata")
    for folder in ("crane", "cat"):
        os.makedirs(os.path.join(data, folder))
        with open(CAT, "rb") as f, open(os.path.join(data, folder, "x.png"), "wb") as g:
            g.write(f.read())
    rc, out, err = run(["eval", "--model", path, "--data", data])
    check(rc == 2 and "matches the model's labels 0 and 2" in err, f"eval with a duplicated label: exit {rc}: {err!r}")
    rc, out, err = run(["classify", "--model", path, "--top", "1", CAT])
    check(rc == 0, f"classify with a duplicated label: exit {rc}: {err!r}")
    # 12.7: terminal escapes in labels.
    esc = dict(doc)
    esc["labels"] = [f"\x1b]0;pwned\x07\x1b[31mred{i}\u202e" for i in range(10)]
    path = os.path.join(tmp, "esc.vkvit")
    vkvit_file.write_model(path, tensors, esc)
    rc, out, err = run(["classify", "--model", path, "--top", "2", CAT])
    check(rc == 0 and not any(c in out for c in "\x1b\x07\u202e") and "?]0;pwned??[31mred" in out,
          f"labels with escapes reach the terminal: {out!r}")
    rc, out, err = run(["inspect", path])
    check(rc == 0 and not any(c in out for c in "\x1b\x07\u202e"), f"inspect prints escapes: {out!r}")
    rc, out, err = run(["classify", "--model", path, os.path.join(tmp, "no\x1b]0;x\x07.png")])
    check(rc == 2 and "no?]0;x?.png" in err and "\x1b" not in err, f"an error line prints escapes: {err!r}")
    rc, out, err = run(["classify", "--model", path, "--top", "1", "--json", CAT])
    d = strict_json(out, "classify --json with escapes in labels")
    check(rc == 0 and d and d["images"][0]["top"][0]["label"].startswith("\x1b]0;pwned\x07"),
          f"JSON must keep the label exactly: {out!r}")
    # 10: non-finite logits -> null probabilities and a warning. NaN weights are refused at load (issue 12.6), so
    # the logits overflow instead: finite head weights of 3e38 make every logit +-inf, and softmax NaN.
    nan = dict(tensors)
    for k in nan:
        if k.startswith("out_proj"):
            nan[k] = torch.full_like(nan[k], 3e38)
    path = os.path.join(tmp, "nan.vkvit")
    vkvit_file.write_model(path, nan, doc)
    rc, out, err = run(["classify", "--model", path, "--top", "2", "--json", CAT])
    d = strict_json(out, "classify --json with NaN")
    check(rc == 0 and d and [e["probability"] for e in d["images"][0]["top"]] == [None, None] and
          "warning: 2 non-finite numbers (NaN or infinity) written as null" in err, f"NaN model: {out}\n{err}")
    # NaN logits themselves (head weights of alternating sign: +inf + -inf): the top-K still names real classes
    # (a NaN ranks as -inf; it once gave class 2147483648), and the table prints NaN with a warning.
    for k in nan:
        if k.startswith("out_proj") and nan[k].dim() == 2:
            sign = torch.ones(nan[k].shape[1])
            sign[1::2] = -1
            nan[k] = 3e38 * sign.expand_as(nan[k]).clone()
    vkvit_file.write_model(path, nan, doc)
    rc, out, err = run(["classify", "--model", path, "--top", "3", "--json", CAT])
    d = strict_json(out, "classify --json with NaN logits")
    top = d["images"][0]["top"] if d else []
    check(rc == 0 and len(top) == 3 and all(0 <= e["class"] < 10 and e["label"] is not None for e in top) and
          len({e["class"] for e in top}) == 3, f"NaN logits: classes {top}\n{err}")
    rc, out, err = run(["classify", "--model", path, "--top", "2", CAT])
    rows = out.splitlines()[1:]
    check(rc == 0 and len(rows) == 2 and all(r.split()[-1] == "NaN" for r in rows) and
          "warning: 2 probabilities printed as NaN" in err, f"NaN logits, table: {out!r}\n{err!r}")


def test_non_utf8_name(tmp):
    name = os.path.join(tmp.encode(), b"caf\xe9.png")
    with open(CAT, "rb") as f, open(name, "wb") as g:
        g.write(f.read())
    p = subprocess.run([CLI.encode(), b"classify", b"--model", GOLDEN.encode(), b"--top", b"1", b"--json", name],
                       capture_output=True, env=env(), timeout=300)
    try:
        text = p.stdout.decode("utf-8")  # strict: the document must be UTF-8
    except UnicodeDecodeError as e:
        text = None
        check(False, f"classify --json on a Latin-1 name: stdout is not UTF-8 ({e}): {p.stdout!r}")
    d = strict_json(text, "classify --json on a Latin-1 name") if text is not None else None
    check(p.returncode == 0 and d and d["images"][0]["image"].endswith("caf\ufffd.png"),
          f"Latin-1 name: exit {p.returncode}: {p.stdout!r}")
    # inspect --json describes the model through the library (vkvit_describe_model): its "file" is UTF-8 too.
    model = os.path.join(tmp.encode(), b"mod\xe8le.vkvit")
    with open(GOLDEN, "rb") as f, open(model, "wb") as g:
        g.write(f.read())
    p = subprocess.run([CLI.encode(), b"inspect", b"--json", model], capture_output=True, env=env(), timeout=300)
    try:
        d = strict_json(p.stdout.decode("utf-8"), "inspect --json on a Latin-1 name")
    except UnicodeDecodeError as e:
        d = None
        check(False, f"inspect --json on a Latin-1 name: stdout is not UTF-8 ({e}): {p.stdout!r}")
    check(p.returncode == 0 and d and d.get("file", "").endswith("mod\ufffdle.vkvit"),
          f"inspect --json, Latin-1 name: exit {p.returncode}: {p.stdout[:300]!r}")
    # The one-line JSON keeps ": " and ", " between fields (.ci/run greps '"rank": 1, "class": 3, "label": "cat"'),
    # never inside strings: a name with quotes, a backslash, colons and commas comes back exactly.
    odd = os.path.join(tmp, 'a"b\\c: d,e.png')
    with open(CAT, "rb") as f, open(odd, "wb") as g:
        g.write(f.read())
    rc, out, err = run(["classify", "--model", GOLDEN, "--top", "1", "--json", odd])
    d = strict_json(out, "classify --json with quotes in the name")
    check(rc == 0 and d and d["images"][0]["image"] == odd and '{"rank": 1, "class": ' in out,
          f"classify --json one-line format: {out!r}")
    p = subprocess.run([CLI.encode(), b"classify", b"--model", GOLDEN.encode(), b"--top", b"1", name], capture_output=True,
                       env=env(), timeout=300)
    check(p.returncode == 0 and b"caf?.png" in p.stdout and b"\xe9" not in p.stdout,
          f"Latin-1 name in the table: {p.stdout!r}")


# ------------------------------------------------------------------------------------------------------------------
# inspect, run, conditions, info, bench


def test_inspect(tmp):
    rc, out, err = run(["inspect", "--json", GOLDEN])
    d = strict_json(out, "inspect --json")
    check(rc == 0 and d and d["num_classes"] == 10 and d["labels"] == [f"class_{i}" for i in range(10)],
          f"inspect --json labels: {d and d['labels']}")
    fakes = {
        "cat.png": (open(CAT, "rb").read(), "a PNG image"),
        "dog.jpg": (open(DOG, "rb").read(), "a JPEG image"),
        "model.pt": (b"PK\x03\x04" + bytes(60), "a ZIP archive, as PyTorch's torch.save writes"),
        "old.pt": (b"\x80\x02\x8a\x0alo\x1c" + bytes(60), "a Python pickle"),
        "keras.h5": (b"\x89HDF\r\n\x1a\n" + bytes(60), "an HDF5 file"),
        "m.vkvit.gz": (b"\x1f\x8b\x08\x00" + bytes(60), "gzip-compressed data"),
        "m.onnx": (b"\x08\x07\x12\x07pytorch" + bytes(60), "an ONNX model"),
        "w.webp": (b"RIFF\x00\x00\x00\x00WEBPVP8 " + bytes(60), "a WebP image"),
    }
    for n, (data, what) in fakes.items():
        path = os.path.join(tmp, n)
        open(path, "wb").write(data)
        rc, out, err = run(["inspect", path])
        check(rc == 2 and out == "" and len(err.splitlines()) == 1 and f"is not a vkvit model" in err and
              f"it looks like {what}" in err, f"inspect {n}: exit {rc}: {err!r}")
    path = os.path.join(tmp, "junk.bin")
    open(path, "wb").write(b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a")
    rc, out, err = run(["inspect", path])
    check(rc == 2 and "this one with 01 02 03 04 05 06 07 08 09" in err, f"inspect junk: {err!r}")
    rc, out, err = run(["classify", "--model", CAT, CAT])
    check(rc == 2 and "it looks like a PNG image" in err, f"classify --model cat.png: {err!r}")
    rc, out, err = run(["run", "--model", GOLDEN, "--input", CAT, "--output", os.path.join(tmp, "o.st")])
    check(rc == 2 and "is not a safetensors file: it looks like a PNG image" in err, f"run --input cat.png: {err!r}")


def write_st(path, **tensors):
    import vkvit_file
    vkvit_file.write_safetensors(path, tensors)


def test_run(tmp):
    import torch
    nchw = os.path.join(tmp, "nchw.safetensors")
    write_st(nchw, input=torch.zeros(2, 3, 32, 32))
    rc, out, err = run(["run", "--model", GOLDEN, "--input", nchw, "--output", os.path.join(tmp, "o.st")])
    check(rc == 2 and "[2, 3, 32, 32]" in err and "NCHW" in err and "permute(0, 2, 3, 1)" in err
          and len(err.splitlines()) == 1, f"run on NCHW: exit {rc}: {err!r}")
    x = torch.randn(2, 32, 32, 3)
    nhwc = os.path.join(tmp, "nhwc.safetensors")
    write_st(nhwc, input=x)
    logits = {}
    for p in ("fp32", "fp16"):
        o = os.path.join(tmp, f"{p}.st")
        rc, out, err = run(["run", "--model", GOLDEN, "--input", nhwc, "--output", o, "--precision", p])
        check(rc == 0 and f", {p}: logits [2, 10]" in out, f"run --precision {p}: exit {rc}\n{out}\n{err}")
        logits[p] = read_logits(open(o, "rb").read()) if rc == 0 else None
    if logits["fp32"] is not None and logits["fp16"] is not None:
        diff = abs(logits["fp32"] - logits["fp16"]).max() / (abs(logits["fp32"]).max() + 1e-6)
        check(0 < diff < 2e-2, f"run --precision fp16 vs fp32: relative difference {diff:.3g}")
    rc, out, err = run(["run", "--model", GOLDEN, "--input", nhwc, "--output", os.path.join(tmp, "j.st"), "--json"])
    d = strict_json(out, "run --json")
    check(rc == 0 and d and d["logits_shape"] == [2, 10] and d["non_finite_logits"] == 0, f"run --json: {out}")


def test_conditions(tmp):
    import vkvit_file
    io, _ = vkvit_file.read_safetensors(f"{COND}.io.safetensors")
    c = io["condition"]
    one = os.path.join(tmp, "cond1.safetensors")
    write_st(one, condition=c[:1].contiguous())
    two = os.path.join(tmp, "cond2.safetensors")
    write_st(two, condition=(c[:1].repeat(2, 1) * torch_scale()).contiguous())
    model = f"{COND}.vkvit"
    rc, out, err = run(["classify", "--model", model, CAT])
    check(rc == 1 and "takes a condition [1, 32] per image: give it with --condition FILE" in err,
          f"classify a conditioned model without --condition: exit {rc}: {err!r}")
    rc, out, err = run(["classify", "--model", model, "--condition", one, "--json", "--top", "3", CAT])
    d1 = strict_json(out, "classify --condition (1 row)")
    check(rc == 0 and err == "", f"classify --condition: exit {rc}: {err!r}")
    rc, out, err = run(["classify", "--model", model, "--condition", two, "--json", "--top", "3", CAT, CAT])
    d2 = strict_json(out, "classify --condition (2 rows)")
    if d1 and d2:
        p1 = [e["probability"] for e in d1["images"][0]["top"]]
        a, b = ([e["probability"] for e in im["top"]] for im in d2["images"])
        check(max(abs(x - y) for x, y in zip(a, p1)) < 1e-5 and a != b,
              f"classify --condition rows: row 0 {a} (want {p1}), row 1 {b} (want different)")
    rc, out, err = run(["classify", "--model", model, "--condition", two, CAT])
    check(rc == 2 and "give 1 (for every image) or 1 (one per image)" in err, f"wrong row count: {err!r}")
    # run: --condition overrides the input file's; an input file without one works with it.
    x = os.path.join(tmp, "x.safetensors")
    write_st(x, input=io["input"])
    rc, out, err = run(["run", "--model", model, "--input", x, "--output", os.path.join(tmp, "c.st"), "--condition", one])
    check(rc == 0, f"run --condition: exit {rc}: {err!r}")
    rc, out, err = run(["bench", "--model", model, "--repeat", "2", "--warmup", "0"])
    check(rc == 0 and "random condition" in out, f"bench on a conditioned model: exit {rc}\n{out}\n{err}")


def torch_scale():
    import torch
    return torch.tensor([[1.0], [-3.0]])


def test_info():
    rc, out, err = run(["info", "--json"])
    d = strict_json(out, "info --json")
    if rc == 0 and d:
        dev = d["devices"][0]
        f = dev["features"]
        check(set(f) == {"fp16_storage", "fp16_arithmetic", "cooperative_matrix", "timestamps",
                      "subgroup_arithmetic", "texel_reads"} and
              all(set(v) == {"available", "used", "why"} for v in f.values()), f"info --json features: {f}")
        if "cpu-device" in " ".join(dev["workarounds"]) and "llvmpipe" in dev.get("name", ""):
            check(f["texel_reads"]["used"] is True, f"info --json: lavapipe without texel reads: {f['texel_reads']}")
        if "no-fp16-arithmetic" in " ".join(dev["workarounds"]):
            check(f["fp16_arithmetic"]["used"] is False and "no-fp16-arithmetic" in f["fp16_arithmetic"]["why"],
                  f"info --json: fp16 arithmetic used despite the workaround: {f['fp16_arithmetic']}")
    else:
        check(False, f"info --json: exit {rc}: {err!r}")
    rc, out, err = run(["info"])
    check(rc == 0 and "feature              device  vkvit uses  why" in out and "fp16 used" not in out,
          f"info text:\n{out}")


def test_bench():
    rc, out, err = run(["bench", "--model", GOLDEN, "--repeat", "12", "--warmup", "1", "--json"])
    d = strict_json(out, "bench --json")
    check(rc == 0 and d and "p90_ms" in d and d["runs"] == 12 and d["min_ms"] <= d["p50_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"]
          and d["stddev_ms"] >= 0 and d["drift"] is None and d["median_ms"] == d["p50_ms"], f"bench --json: {out}")
    rc, out, err = run(["bench", "--model", GOLDEN, "--duration", "0.5", "--warmup", "0", "--json"])
    d = strict_json(out, "bench --duration --json")
    check(rc == 0 and d and "drift" in d and d["duration_s"] == 0.5 and d["wall_s"] >= 0.5 and d["runs"] >= 1 and d["drift"] and
          d["drift"]["runs_each"] == max(1, d["runs"] // 10), f"bench --duration: {out}")
    rc, out, err = run(["bench", "--model", GOLDEN, "--duration", "0.3", "--warmup", "0"])
    check(rc == 0 and "latency     p50" in out and "p99" in out and "stddev" in out and "drift" in out,
          f"bench --duration text:\n{out}")
    rc, out, err = run(["bench", "gemm", "--shape", "8x8x8", "--repeat", "3", "--json"])
    d = strict_json(out, "bench gemm --json")
    check(rc == 0 and d and "p50_ms" in d and d["p50_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"],
          f"bench gemm --json: {out}")
    # --config and --versus: the kernels that ran are reported, the rounds alternate, the ratio is B over A.
    rc, out, err = run(["bench", "gemm", "--shape", "33x18x40", "--repeat", "2", "--json", "--config", "kernel=cpu,bm=16",
                        "--versus", "kernel=shared,bm=32,bn=32,bk=16,tm=2,tn=2", "--rounds", "4"])
    d = strict_json(out, "bench gemm --versus --json")
    ok = rc == 0 and d and d["rounds"] == 4 and d["a"]["kernel"] == "cpu" and d["a"]["tile"]["bm"] == 16
    ok = ok and d["b"]["kernel"] == "shared" and d["b"]["tile"] == {"bm": 32, "bn": 32, "bk": 16, "tm": 2, "tn": 2}
    ok = ok and len(d["a"]["gflops_per_round"]) == 4 and len(d["b"]["gflops_per_round"]) == 4
    ratios = sorted(b / a for a, b in zip(d["a"]["gflops_per_round"], d["b"]["gflops_per_round"])) if ok else []
    median = (ratios[1] + ratios[2]) / 2 if ok else 0
    check(ok and abs(d["ratio"] - median) <= 1e-9 * median and d["ratio_p25"] <= d["ratio"] <= d["ratio_p75"],
          f"bench gemm --versus --json: rc {rc} {out} {err}")
    rc, out, err = run(["bench", "gemm", "--shape", "20x20x21", "--repeat", "1", "--config", "kernel=cpu",
                        "--versus", "kernel=cpu,single-stores", "--rounds", "2"])
    check(rc == 0 and "A 'kernel=cpu' against B 'kernel=cpu,single-stores', 2 rounds" in out and "B / A" in out
          and "20x20x21" in out, f"bench gemm --versus text: rc {rc}\n{out}{err}")
    # A tile its kernel refuses is a usage error (exit 1) with the library's sentence naming the rule.
    rc, out, err = run(["bench", "gemm", "--shape", "8x8x8", "--repeat", "1", "--config", "kernel=cpu,bk=48"])
    check(rc == 1 and "config 'kernel=cpu,bk=48'" in err and "bk 32 or 64" in err, f"bench gemm bad tile: rc {rc} {err}")
    # 12.9: bench and run print validation messages (here: best-practices warnings) through the log callback.
    os.environ["VK_LAYER_ENABLES"] = "VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT"
    try:
        rc, out, err = run(["bench", "gemm", "--shape", "8x8x8", "--repeat", "1"])
        check("vkvit bench gemm: warning: Validation" in err, f"bench drops validation messages: {err[:300]!r}")
        rc, out, err = run(["run", "--model", f"{COND}.vkvit", "--input", f"{COND}.io.safetensors", "--output", "/dev/null"])
        check("vkvit run: warning: Validation" in err, f"run drops validation messages: {err[:300]!r}")
    finally:
        del os.environ["VK_LAYER_ENABLES"]


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    rc, out, err = run(["info"])
    if rc == 3:
        print(f"SKIP: no Vulkan device: {err.strip()}")
        return 77
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: no PyTorch (tools/vkvit_file.py needs it)")
        return 77
    with tempfile.TemporaryDirectory(prefix="vkvit_test_cli_io_") as tmp:
        for t in (test_stdin, test_run_stdio, test_write_errors, test_output_is_input, test_interrupted_output,
                  test_pseudo_files, test_labels, test_non_utf8_name, test_inspect, test_run, test_conditions):
            sub = os.path.join(tmp, t.__name__)
            os.mkdir(sub)
            t(sub)
    test_streaming()
    test_progress()
    test_info()
    test_bench()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
