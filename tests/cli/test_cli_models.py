#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every bundled and golden model through `vkvit classify`, `vkvit run` and `vkvit bench` (issue 12).

A use-after-free in graph building was only hit by `vkvit classify assets/images/cat.png --model
assets/models/vit5_cifar10.vkvit`, a command no sanitizer run executed. This test runs every model file of
assets/models/ and tests/golden/models/ through the three commands that build, plan, record and run a graph, at
several batch sizes, so the AddressSanitizer + UBSan pass of .ci/run (which runs the suite against build-asan through
VKVIT_BINARY_DIR) covers every architecture and readout the repository ships. For each model:

  - classify: 1 image (assets/images/cat.png, the issue's command) and 3 images (CIFAR-10 test JPEGs) as one batch;
    `--json` parses, one entry per image, min(5, classes) ranks sorted by probability, each in [0, 1]. Models that
    take a condition get `--condition` (row 0 of the golden `condition`, R = 1 for one image, R = 3 for three).
  - run: with the golden io file (tests/golden/models/<stem>.io.safetensors: `input`, optional `condition`) the
    written `logits` match the golden `logits` within max |got - want| / max |want| <= 1e-4 (the metric of
    tests/test_util.h); without one, random normalised input of batch 1 and 3, logits [B, classes], finite, and the
    batch-3 run's first row equals the batch-1 run on the same image (same metric, 1e-4).
  - bench: --batch 1, 2 and 5, --repeat 1 --warmup 0; `--json` parses and reports the batch and 1 run.
Every command runs with VKVIT_VALIDATION=1 and no pipeline cache; each must exit 0 with no validation message
(no "Validation" and no "warning:" on stderr) and no sanitizer report. ASAN_OPTIONS / UBSAN_OPTIONS get
halt_on_error=1 (and abort_on_error=1 for ASan) unless the caller set them, so a report can never look like a pass.

Run from the repository root:  /usr/bin/python3 tests/cli/test_cli_models.py [NAME_SUBSTRING...]
Exit status: 0 passed, 1 failed, 77 skipped (no Vulkan device, or the CLI is not built).
"""

import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, summary

MODELS = sorted(glob.glob(os.path.join(ROOT, "assets", "models", "*.vkvit"))) + \
    sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "models", "*.vkvit")))
GOLDEN = os.path.join(ROOT, "tests", "golden", "models")
ONE_IMAGE = [os.path.join(ROOT, "assets", "images", "cat.png")]
THREE_IMAGES = [os.path.join(ROOT, "tests", "data", "cifar10-subset", "test", c, "0000.jpg")
                for c in ("cat", "dog", "airplane")]
BENCH_BATCHES = (1, 2, 5)
TOLERANCE = 1e-4
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")

# ---------------------------------------------------------------------------------------------------------------
# safetensors, the few lines this test needs (F32 only: the golden files and what `vkvit run` writes)
# ---------------------------------------------------------------------------------------------------------------


def st_read(path):
    """{name: float32 array} and the metadata dict of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, t in header.items():
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {t['dtype']}, this reader knows F32 only")
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(t["shape"])
    return out, meta


def st_write(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def max_rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got - want))) / scale


# ---------------------------------------------------------------------------------------------------------------
# Running the CLI
# ---------------------------------------------------------------------------------------------------------------


def cli_env():
    env = dict(os.environ, VKVIT_VALIDATION="1", VKVIT_CACHE_DIR="")
    # detect_leaks=0: the Vulkan loader / driver leak a few bytes from modules they unload (as in .ci/run).
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:halt_on_error=1:abort_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


ENV = cli_env()
TIMES = {}  # command kind -> [seconds, count]


def vkvit(kind, args, what, timeout=600):
    """Runs `vkvit ARGS`; checks exit 0, no validation message, no sanitizer report. (ok, stdout, stderr)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([CLI] + args, capture_output=True, text=True, env=ENV, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = "timeout", "", f"no exit within {timeout} s"
    dt = time.monotonic() - t0
    t = TIMES.setdefault(kind, [0.0, 0])
    t[0] += dt
    t[1] += 1
    cmd = "vkvit " + " ".join(os.path.relpath(a, ROOT) if os.path.isabs(a) and a.startswith(ROOT) else a
                              for a in args)
    ok = True
    for cond, why in ((rc == 0, f"exit {rc}"),
                      ("Validation" not in err and "warning:" not in err, "validation message"),
                      (not any(m in err for m in SANITIZER_MARKS), "sanitizer report")):
        check(cond, f"{what}: {why}: {cmd}\n{err[-4000:]}")
        ok = ok and cond
    print(f"  {'ok ' if ok else 'BAD'} {dt:6.2f} s  {cmd}", flush=True)
    return ok, out, err


def model_doc(path):
    """The `vkvit` metadata document of a model file."""
    _, meta = st_read_header(path)
    return json.loads(meta["vkvit"])


def st_read_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return header, header.get("__metadata__", {})


# ---------------------------------------------------------------------------------------------------------------
# The three commands
# ---------------------------------------------------------------------------------------------------------------


def condition_row_shape(model, stem):
    """The per-image condition shape `vkvit inspect --json` reports: (C,), (Tc, C), or None (no condition)."""
    p = subprocess.run([CLI, "inspect", model, "--json"], capture_output=True, text=True, env=ENV)
    check(p.returncode == 0, f"{stem}: inspect exit {p.returncode}\n{p.stderr}")
    try:
        d = json.loads(p.stdout)
    except ValueError:
        check(False, f"{stem}: inspect --json is not JSON: {p.stdout[:300]!r}")
        return None
    dim, tokens = d.get("condition_dim", 0), d.get("condition_tokens", 0)
    return None if not dim else ((tokens, dim) if tokens else (dim,))


def condition_data(io, row_shape, rows, seed=5):
    """`rows` condition rows: row i is the golden condition's row i % B, else random."""
    if io is not None and "condition" in io:
        cond = io["condition"]
        return np.stack([cond[i % cond.shape[0]] for i in range(rows)])
    return np.random.default_rng(seed).standard_normal((rows,) + row_shape).astype(np.float32)


def test_classify(model, stem, classes, io, cond_shape, has_condition_flag, tmp):
    if cond_shape and not has_condition_flag:
        print(f"  SKIP classify {stem}: the model takes a condition and this vkvit classify has no --condition")
        return
    for images in (ONE_IMAGE, THREE_IMAGES):
        args = ["classify"] + images + ["--model", model, "--json"]
        if cond_shape:
            cond_path = os.path.join(tmp, f"{stem}.cond{len(images)}.safetensors")
            st_write(cond_path, {"condition": condition_data(io, cond_shape, len(images))})
            args += ["--condition", cond_path]
        ok, out, _ = vkvit("classify", args, f"{stem}: classify {len(images)} image(s)")
        if not ok:
            continue
        try:
            doc = json.loads(out)
        except ValueError:
            check(False, f"{stem}: classify --json is not JSON: {out[:300]!r}")
            continue
        got = doc.get("images", [])
        check([g.get("image") for g in got] == images, f"{stem}: classify lists {len(got)} images, want {images}")
        want_k = min(5, classes)
        for g in got:
            top = g.get("top", [])
            p = [t.get("probability", -1) for t in top]
            check(len(top) == want_k and [t.get("rank") for t in top] == list(range(1, want_k + 1)) and
                  all(0 <= x <= 1 for x in p) and p == sorted(p, reverse=True) and
                  all(0 <= t.get("class", -1) < classes for t in top),
                  f"{stem}: classify {g.get('image')}: want {want_k} ranks, sorted probabilities in [0, 1]: {top}")


def test_run(model, stem, doc, classes, io, cond_shape, tmp):
    out_path = os.path.join(tmp, f"{stem}.logits.safetensors")
    if io is not None:
        io_path = os.path.join(GOLDEN, f"{stem}.io.safetensors")
        if os.path.exists(out_path):
            os.remove(out_path)
        ok, _, _ = vkvit("run", ["run", "--model", model, "--input", io_path, "--output", out_path],
                         f"{stem}: run (golden io)")
        if not ok:
            return
        got = st_read(out_path)[0].get("logits")
        err = max_rel_err(got, io["logits"])
        print(f"       logits [{', '.join(map(str, io['logits'].shape))}] vs golden: max rel err {err:.3g}")
        check(err <= TOLERANCE, f"{stem}: run: logits max rel err {err:.3g} > {TOLERANCE} vs the golden")
        return
    h, w = doc["preprocess"]["image_size"]
    x = np.random.default_rng(12).standard_normal((3, h, w, 3)).astype(np.float32)
    logits = {}
    for b in (1, 3):
        in_path = os.path.join(tmp, f"{stem}.in{b}.safetensors")
        tensors = {"input": x[:b]}
        if cond_shape:
            tensors["condition"] = condition_data(None, cond_shape, 3)[:b]
        st_write(in_path, tensors)
        if os.path.exists(out_path):
            os.remove(out_path)
        ok, _, _ = vkvit("run", ["run", "--model", model, "--input", in_path, "--output", out_path],
                         f"{stem}: run (random input, batch {b})")
        if not ok:
            return
        got = st_read(out_path)[0].get("logits")
        check(got is not None and got.shape == (b, classes) and np.all(np.isfinite(got)),
              f"{stem}: run batch {b}: logits {None if got is None else got.shape}, want finite [{b}, {classes}]")
        logits[b] = got
    if all(v is not None and v.shape[0] == b for b, v in logits.items()) and len(logits) == 2:
        err = max_rel_err(logits[3][:1], logits[1])
        print(f"       batch 3 row 0 vs batch 1: max rel err {err:.3g}")
        check(err <= TOLERANCE, f"{stem}: run: batch-3 row 0 differs from batch 1 by {err:.3g} (> {TOLERANCE})")


def test_bench(model, stem):
    for b in BENCH_BATCHES:
        ok, out, _ = vkvit("bench", ["bench", "--model", model, "--batch", str(b), "--repeat", "1", "--warmup", "0",
                                     "--json"], f"{stem}: bench batch {b}")
        if not ok:
            continue
        try:
            d = json.loads(out)
        except ValueError:
            check(False, f"{stem}: bench --json is not JSON: {out[:300]!r}")
            continue
        check(d.get("batch") == b and d.get("runs") == 1 and (d.get("median_ms") or 0) > 0,
              f"{stem}: bench batch {b}: reports batch {d.get('batch')}, runs {d.get('runs')}, "
              f"median {d.get('median_ms')} ms")


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    p = subprocess.run([CLI, "info"], capture_output=True, text=True, env=ENV)
    if p.returncode == 3:
        print(f"SKIP: no Vulkan device: {p.stderr.strip()}")
        return 77
    print(f"binary {CLI}; ASAN_OPTIONS={ENV['ASAN_OPTIONS']}")
    help_text = subprocess.run([CLI, "classify", "--help"], capture_output=True, text=True, env=ENV).stdout
    has_condition_flag = "--condition" in help_text
    models = [m for m in MODELS if not sys.argv[1:] or any(s in m for s in sys.argv[1:])]
    if not sys.argv[1:]:
        n_assets = sum(m.startswith(os.path.join(ROOT, "assets")) for m in models)
        check(n_assets >= 2 and len(models) - n_assets >= 13,
              f"found {n_assets} bundled and {len(models) - n_assets} golden model files, want >= 2 and >= 13")
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vkvit_test_cli_models_") as tmp:
        for model in models:
            stem = os.path.basename(model)[:-len(".vkvit")]
            doc = model_doc(model)
            classes = doc["config"]["num_classes"]
            io_path = os.path.join(GOLDEN, f"{stem}.io.safetensors")
            io = st_read(io_path)[0] if os.path.exists(io_path) else None
            cond_shape = condition_row_shape(model, stem)
            print(f"{stem} ({doc['architecture']}/{doc.get('flavour')}, {classes} classes"
                  f"{f', condition {list(cond_shape)} per image' if cond_shape else ''})", flush=True)
            if io is not None:
                check((cond_shape is not None) == ("condition" in io) and
                      (cond_shape is None or tuple(io["condition"].shape[1:]) == cond_shape),
                      f"{stem}: inspect says condition {cond_shape}, the golden io has "
                      f"{io['condition'].shape if 'condition' in io else None}")
            test_classify(model, stem, classes, io, cond_shape, has_condition_flag, tmp)
            test_run(model, stem, doc, classes, io, cond_shape, tmp)
            test_bench(model, stem)
    total = time.monotonic() - t_start
    print("time: " + ", ".join(f"{k} {v[0]:.1f} s / {v[1]} commands" for k, v in TIMES.items()) +
          f"; total {total:.1f} s for {len(models)} models")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
