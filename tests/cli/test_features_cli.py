#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Pooled features through the CLI (issue 17): `vkvit run --features` and `vkvit classify --features --json`.

  - run: for every golden model, OUT holds `logits` (PyTorch's within 1e-4) and `features` [B, F]; the model's own
    head applied to those features in float64 (features @ W^T + b, W and b read from the model file) gives
    PyTorch's logits within the same 1e-4: the features are exactly what the reference's head reads.
  - classify: the bundled models' JSON "features" for the bundled photo, put through the head and a softmax,
    give the probabilities classify printed (within 1e-5), and --features without --json is a usage error.
Validation on; any validation message fails. Exit 0 passed, 1 failed, 77 skipped (no device or not built).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import vkvit_file as vf  # noqa: E402

CLI = os.path.join(os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build")), "vkvit")
TOL = 1e-4
failed = passed = 0


def check(ok, what):
    global failed, passed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL", what)


def run(args):
    env = dict(os.environ, VKVIT_VALIDATION="1")
    r = subprocess.run([CLI] + args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    check("Validation" not in r.stderr, f"validation message from {args}: {r.stderr}")
    return r.returncode, r.stdout, r.stderr


def head_of(model_path):
    tensors, _ = vf.read_model(model_path)
    w = tensors.get("head.weight", tensors.get("out_proj.weight"))
    b = tensors.get("head.bias", tensors.get("out_proj.bias"))
    return w.double(), (b.double() if b is not None else None)


def rel_err(got, want):
    return ((got.double() - want.double()).abs().max() / want.double().abs().max()).item()


def check_run():
    with tempfile.TemporaryDirectory() as tmp:
        for model in sorted(glob.glob(os.path.join(ROOT, "tests/golden/models/*.vkvit"))):
            stem = os.path.basename(model)[:-6]
            io = model[:-6] + ".io.safetensors"
            out = os.path.join(tmp, stem + ".out")
            rc, so, se = run(["run", "-m", model, "-i", io, "-o", out, "--features"])
            check(rc == 0, f"run {stem}: exit {rc}: {se}")
            if rc:
                continue
            got, _ = vf.read_safetensors(out)
            golden, _ = vf.read_safetensors(io)
            w, b = head_of(model)
            f = got["features"].double()
            check(f.shape == (golden["logits"].shape[0], w.shape[1]), f"{stem}: features {tuple(f.shape)}")
            again = f @ w.T + (b if b is not None else 0)
            e_logits, e_feat = rel_err(got["logits"], golden["logits"]), rel_err(again, golden["logits"])
            check(e_logits <= TOL and e_feat <= TOL, f"{stem}: logits {e_logits:.3g}, head(features) {e_feat:.3g}")
            print(f"{stem:40s} features {tuple(f.shape)}: logits {e_logits:.2g}, head(features) {e_feat:.2g}")


def check_classify():
    cat = os.path.join(ROOT, "assets/images/cat.png")
    for model in sorted(glob.glob(os.path.join(ROOT, "assets/models/*.vkvit"))):
        rc, so, se = run(["classify", "--model", model, "--top", "3", "--json", "--features", cat])
        check(rc == 0, f"classify --features {model}: exit {rc}: {se}")
        if rc:
            continue
        img = json.loads(so)["images"][0]
        w, b = head_of(model)
        logits = torch.tensor(img["features"], dtype=torch.float64) @ w.T + (b if b is not None else 0)
        probs = torch.softmax(logits, 0)
        for e in img["top"]:
            check(abs(probs[e["class"]].item() - e["probability"]) <= 1e-5,
                  f"{model}: class {e['class']} p {e['probability']} vs head(features) {probs[e['class']].item()}")
        print(f"{os.path.basename(model):40s} classify: {len(img['features'])} features, top-1 {img['top'][0]['label']}")
    rc, so, se = run(["classify", "--features", cat])
    check(rc == 1 and "--features needs --json" in se, f"--features without --json: exit {rc}: {se}")


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    if subprocess.run([CLI, "info"], capture_output=True).returncode == 3:
        print("SKIP: no Vulkan device")
        return 77
    check_run()
    check_classify()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
