#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every golden and bundled model at precision fp16-math (VKVIT_PRECISION_FP16_MATH) through `vkvit run`.

fp16-math runs the GEMMs on fp16 weights with fp16 arithmetic (src/ops/gemm.h, VKVIT_GEMM_F16_CHUNK); attention,
norms, softmax and the mLSTM gates stay fp32. Lavapipe exposes shaderFloat16, so CI runs this path here.

  - goldens (tests/golden/models/<stem>.vkvit + .io.safetensors, PyTorch float64 logits rounded to float32): the
    fp16-math logits agree with the golden logits within max |got - want| <= 1e-2 * max |want| (the fp16 tolerance of
    VKVIT_PRECISION_FP16_MATH in include/vkvit.h and of the fp16-weight checks in test_vit5 / test_vil / test_resnet;
    measured on lavapipe: at most 1.9e-3, against 1e-3 for fp16 weights with fp32 math), and every row has the
    golden's top-1 class. Exact top-1 is a fair demand for these files: their smallest top-1 / top-2 gap is 1.9 % of
    max |want|, ten times the measured error (any weaker rule, such as "top-1 within the tolerance of the best",
    already follows from the first check).
  - bundled models (assets/models/*.vkvit, trained on CIFAR-10: real weight and activation ranges, which random
    golden weights do not have): ten CIFAR-10 test photos (one per class) at fp16-math against vkvit's fp32 path
    (itself checked against PyTorch to 1e-4 by test_cli_models), same tolerance, same top-1 per photo.
  - once per architecture, the fp16-math logits differ from the fp16-weights (fp32 math) ones: the path really ran.
  - the same goldens and photos on the cooperative-matrix GEMM (shaders/gemm_coopmat.comp): on a device whose NV
    kernel is in use, that kernel (and the scalar fp16-math baseline with VKVIT_DISABLE_COOPMAT=1); elsewhere, with
    VKVIT_COOPMAT_EMULATE=1, the same tiling with its matrix products in plain arithmetic, which lavapipe can run.
    Same tolerance; once per architecture its logits differ from the scalar fp16-math ones (that kernel really ran),
    and `vkvit info --json` reports cooperative matrices used (NV, or emulated).
  - refusals: with VKVIT_DISABLE_F16=1 a fp16-math session is refused (exit 2, the sentence names the override),
    and `vkvit info --json` reports fp16 arithmetic unused and why; on a device without shaderFloat16 or fp16
    storage, fp16-math is refused with a sentence naming the missing feature and the rest is skipped (exit 77).
  - `vkvit bench --precision fp16-math --json` reports precision "fp16-math", and `vkvit bench gemm --precision
    fp16-math --json` times the *_f16 kernel ("op": "gemm_f16").
Every command runs with VKVIT_VALIDATION=1 and must print no validation message. With VKVIT_SANITIZED=1 (the
sanitizer pass of .ci/run) the goldens and photos are the first golden of each architecture only.

Run from the repository root:  /usr/bin/python3 tests/models/test_fp16_math.py [NAME_SUBSTRING...]
Exit status: 0 passed, 1 failed, 77 skipped (no Vulkan device, no fp16 arithmetic, or the CLI is not built).
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, env, summary
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))  # tests/cli: the safetensors helpers
from test_cli_models import st_read, st_write  # noqa: E402

TOLERANCE = 1e-2
GOLDEN = os.path.join(ROOT, "tests", "golden", "models")
BUNDLED = sorted(glob.glob(os.path.join(ROOT, "assets", "models", "*.vkvit")))
PHOTOS = [os.path.join(ROOT, "tests", "data", "cifar10-subset", "test", c, "0000.jpg")
          for c in ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")]


def vkvit(args, what, extra_env=None, want_rc=0):
    """Runs `vkvit ARGS`; checks the exit code and that stderr has no validation message. (ok, stdout, stderr)."""
    e = env()
    e.update(extra_env or {})
    p = subprocess.run([CLI] + args, capture_output=True, text=True, env=e, timeout=900)
    ok = p.returncode == want_rc and "Validation" not in p.stderr and "warning:" not in p.stderr
    check(ok, f"{what}: exit {p.returncode} (want {want_rc}): vkvit {' '.join(args)}\n{p.stderr[-3000:]}")
    return ok, p.stdout, p.stderr


def compare(what, got, want, tolerance=TOLERANCE):
    """max |got - want| <= tolerance * max |want| and the same top-1 in every row (test_profile_goldens too)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        check(False, f"{what}: logits {got.shape} (finite: {np.all(np.isfinite(got))}), want finite {want.shape}")
        return
    scale = float(np.max(np.abs(want))) or 1.0
    err = float(np.max(np.abs(got - want))) / scale
    top = np.sort(want, axis=1)
    gap = float(np.min(top[:, -1] - top[:, -2])) / scale if want.shape[1] > 1 else 1.0
    same = got.argmax(axis=1) == want.argmax(axis=1)
    print(f"  {what}: max |dlogit| / max |logit| {err:.3g} (<= {tolerance}), top-1 {int(same.sum())}/{len(same)} "
          f"rows (smallest top-1/top-2 gap {gap:.3g})", flush=True)
    check(err <= tolerance, f"{what}: max |dlogit| / max |logit| {err:.3g} > {tolerance}")
    check(bool(same.all()), f"{what}: top-1 differs in rows {np.nonzero(~same)[0].tolist()}: got "
          f"{got.argmax(axis=1).tolist()}, want {want.argmax(axis=1).tolist()}")


EMULATE = {"VKVIT_COOPMAT_EMULATE": "1"}  # the emulated cooperative-matrix GEMM (a test path)
# Set in main() from the device: the environments of the cooperative-matrix runs and of the scalar fp16-math runs.
COOPMAT, SCALAR, COOP_NAME = dict(EMULATE), {}, "emulated"


def run_logits(model, inp, out, precision, what, extra_env=None):
    if os.path.exists(out):
        os.remove(out)
    ok, _, _ = vkvit(["run", "--model", model, "--input", inp, "--output", out, "--precision", precision], what,
                     extra_env)
    return st_read(out)[0].get("logits") if ok else None


def photo_batch(doc):
    """The ten photos as the model's normalised input [10, H, W, 3], or None when they need resizing (the bundled
    models take 32 x 32 CIFAR-10 images as they are)."""
    from PIL import Image
    h, w = doc["preprocess"]["image_size"]
    imgs = [np.asarray(Image.open(p).convert("RGB"), np.float32) / 255.0 for p in PHOTOS]
    if any(i.shape != (h, w, 3) for i in imgs):
        return None
    mean = np.asarray(doc["preprocess"]["mean"], np.float32)
    std = np.asarray(doc["preprocess"]["std"], np.float32)
    return (np.stack(imgs) - mean) / std


def model_doc(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    return json.loads(header["__metadata__"]["vkvit"])


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    p = subprocess.run([CLI, "info", "--json"], capture_output=True, text=True, env=env())
    if p.returncode == 3:
        print(f"SKIP: no Vulkan device: {p.stderr.strip()}")
        return 77
    dev = json.loads(p.stdout)["devices"][0]
    f16a, f16s = dev["features"]["fp16_arithmetic"], dev["features"]["fp16_storage"]
    print(f"device {dev['name']}: fp16 arithmetic {f16a}, fp16 storage {f16s['available']}")
    global COOPMAT, SCALAR, COOP_NAME
    if dev["features"]["cooperative_matrix"]["used"]:  # NV's or KHR's: emulation is only for devices without them
        COOPMAT, SCALAR = {}, {"VKVIT_DISABLE_COOPMAT": "1"}
        why = dev["features"]["cooperative_matrix"]["why"]
        COOP_NAME = "NV2" if "cooperative matrix 2" in why else "KHR" if "(KHR," in why else "NV"
    print(f"cooperative-matrix runs: the {COOP_NAME} kernel")
    stems = [os.path.basename(m)[:-len(".io.safetensors")]
             for m in sorted(glob.glob(os.path.join(GOLDEN, "*.io.safetensors")))]
    models = [(os.path.join(GOLDEN, s + ".vkvit"), s) for s in stems] + \
             [(m, os.path.basename(m)[:-len(".vkvit")]) for m in BUNDLED]
    models = [(m, s) for m, s in models if not sys.argv[1:] or any(a in s for a in sys.argv[1:])]
    if not sys.argv[1:]:
        check(len(stems) >= 13 and len(BUNDLED) >= 2,
              f"found {len(stems)} golden and {len(BUNDLED)} bundled models, want >= 13 and >= 2")
    if os.environ.get("VKVIT_SANITIZED", "") not in ("", "0") and not sys.argv[1:]:
        # The sanitizer pass of .ci/run: the first golden of each architecture, which takes every host-code path
        # of this precision (fp16 weight copies, the *_f16 and cooperative-matrix pipelines, the refusals); every
        # model's numerics were checked in the main pass, and test_cli_models runs every model here at fp32.
        first = {}
        for m, s in models:
            if os.path.exists(os.path.join(GOLDEN, s + ".io.safetensors")):
                first.setdefault(s.split("_")[0], (m, s))
        models = sorted(first.values())
        print("VKVIT_SANITIZED=1: " + ", ".join(s for _, s in models))
    first_io = os.path.join(GOLDEN, stems[0] + ".io.safetensors")

    with tempfile.TemporaryDirectory(prefix="vkvit_test_fp16_math_") as tmp:
        out = os.path.join(tmp, "logits.safetensors")
        # Refused where it cannot run: a device without the features, or fp16 disabled by request.
        if not (f16a["available"] and f16s["available"]):
            _, _, err = vkvit(["run", "--model", os.path.join(GOLDEN, stems[0] + ".vkvit"), "--input", first_io,
                               "--output", out, "--precision", "fp16-math"], "fp16-math without the features",
                              want_rc=2)
            check("shaderFloat16" in err or "storageBuffer16BitAccess" in err, f"refusal names no feature: {err}")
            print("SKIP: the device lacks shaderFloat16 or storageBuffer16BitAccess (refusal checked)")
            summary()
            return 77
        _, _, err = vkvit(["run", "--model", os.path.join(GOLDEN, stems[0] + ".vkvit"), "--input", first_io,
                           "--output", out, "--precision", "fp16-math"], "fp16-math with VKVIT_DISABLE_F16=1",
                          extra_env={"VKVIT_DISABLE_F16": "1"}, want_rc=2)
        check("fp16-math" in err and "VKVIT_DISABLE_F16" in err, f"VKVIT_DISABLE_F16=1 refusal: {err!r}")
        p = subprocess.run([CLI, "info", "--json"], capture_output=True, text=True,
                           env=dict(env(), VKVIT_DISABLE_F16="1"))
        off = json.loads(p.stdout)["devices"][0]["features"]["fp16_arithmetic"]
        check(off["used"] is False and "VKVIT_DISABLE_F16" in off["why"], f"info with VKVIT_DISABLE_F16=1: {off}")

        seen_arch = set()
        for model, stem in models:
            io_path = os.path.join(GOLDEN, stem + ".io.safetensors")
            if os.path.exists(io_path):
                want = st_read(io_path)[0]["logits"]
                got = run_logits(model, io_path, out, "fp16-math", f"{stem}: run fp16-math", SCALAR)
                if got is not None:
                    compare(f"{stem} fp16-math vs PyTorch golden", got, want)
                coop = run_logits(model, io_path, out, "fp16-math", f"{stem}: run fp16-math, {COOP_NAME} coopmat",
                                  COOPMAT)
                if coop is not None:
                    compare(f"{stem} fp16-math (coopmat, {COOP_NAME}) vs PyTorch golden", coop, want)
                arch = stem.split("_")[0]
                if got is not None and arch not in seen_arch:
                    # Once per architecture: the fp16-math kernels really ran (fp16 weights alone give other bits),
                    # and so did the cooperative-matrix one (fp32 sums: other bits than the 16-k fp16 chunks).
                    seen_arch.add(arch)
                    w16 = run_logits(model, io_path, out, "fp16", f"{stem}: run fp16")
                    check(w16 is not None and not np.array_equal(w16, got),
                          f"{stem}: fp16-math gave the fp16 (fp32 math) logits bit for bit")
                    check(coop is not None and not np.array_equal(coop, got),
                          f"{stem}: {COOP_NAME} coopmat gave the scalar fp16-math logits bit for bit")
                continue
            x = photo_batch(model_doc(model))
            if x is None:
                check(False, f"{stem}: the CIFAR-10 photos do not fit its input size")
                continue
            inp = os.path.join(tmp, stem + ".photos.safetensors")
            st_write(inp, {"input": x})
            want = run_logits(model, inp, out, "fp32", f"{stem}: run fp32")
            got = run_logits(model, inp, out, "fp16-math", f"{stem}: run fp16-math", SCALAR)
            if want is not None and got is not None:
                compare(f"{stem} fp16-math vs fp32, 10 photos", got, want)
            coop = run_logits(model, inp, out, "fp16-math", f"{stem}: run fp16-math, {COOP_NAME} coopmat", COOPMAT)
            if want is not None and coop is not None:
                compare(f"{stem} fp16-math (coopmat, {COOP_NAME}) vs fp32, 10 photos", coop, want)

        p = subprocess.run([CLI, "info", "--json"], capture_output=True, text=True, env=dict(env(), **EMULATE))
        cm = json.loads(p.stdout)["devices"][0]["features"]["cooperative_matrix"]
        check(cm["used"] is True and COOP_NAME in cm["why"],
              f"info with VKVIT_COOPMAT_EMULATE=1 ({COOP_NAME} kernel expected): {cm}")
        p = subprocess.run([CLI, "info", "--json"], capture_output=True, text=True,
                           env=dict(env(), VKVIT_DISABLE_COOPMAT="1", **EMULATE))
        cm = json.loads(p.stdout)["devices"][0]["features"]["cooperative_matrix"]
        check(cm["used"] is False and "VKVIT_DISABLE_COOPMAT" in cm["why"], f"info with both switches: {cm}")
        ok, text, _ = vkvit(["bench", "--model", os.path.join(GOLDEN, stems[0] + ".vkvit"), "--precision",
                             "fp16-math", "--repeat", "1", "--warmup", "0", "--json"], "bench fp16-math")
        if ok:
            d = json.loads(text)
            check(d.get("precision") == "fp16-math" and d.get("runs") == 1, f"bench fp16-math --json: {text[:300]}")
        ok, text, _ = vkvit(["bench", "gemm", "--shape", "33x70x40", "--precision", "fp16-math", "--repeat", "2",
                             "--json"], "bench gemm fp16-math")
        if ok:
            d = json.loads(text)
            check(d.get("op") == "gemm_f16" and d.get("precision") == "fp16-math" and d.get("p50_ms", 0) > 0,
                  f"bench gemm fp16-math --json: {text[:300]}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
