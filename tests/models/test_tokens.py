#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Dense token features (vkvit_session_get_tokens, issue 58 "Dense outputs") against the PyTorch reference.

For every golden model (tests/golden/models/*.vkvit: ViT-5 CLS / GAP / register concat in both flavours, both ViL
numerics, conditioned and plain resnets) the reference's forward_tokens (tools/reference: vit5.py, mlstm.py,
generic.py), run in float64 on the golden's input, against a vkvit session created with tokens=True, through the
Python binding:
  - fp32 sessions: max |got - want| <= 1e-4 * max |want| per part (patches, cls, registers): the whole-model
    tolerance of the logits (test_vit5, test_vil, test_resnet);
  - fp16 sessions (fp16 GEMM weights, fp32 math): max |got - want| <= 1e-2 * max |want|, the fp16 tolerance of
    the logits (include/vkvit.h, VKVIT_PRECISION_FP16_MATH; test_fp16_math);
  - the shapes: ViT-5 patches (B, Hp, Wp, C), cls (B, C) and registers (B, R, C) where the model has them; ViL
    and resnet patches (B, T, C);
  - the logits of the tokens session still match the golden logits (1e-4), and with a CLS readout the CLS token
    equals the pooled features (out_norm of the same row, the same kernel) exactly.
The tokens are read into a fresh array the binding allocates; a second golden input (the golden's input plus
noise from a printed seed, VKVIT_TEST_SEED reruns one) guards against a result left over from a previous run.
Validation (with synchronization validation) is on and must stay silent.

Run from the repository root:  /usr/bin/python3 tests/models/test_tokens.py
Exit status: 0 passed, 1 failed, 77 skipped (no torch, no Vulkan device, or libvkvit not built).
"""

import glob
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))

try:
    import numpy as np
    import torch
    import vkvit_file
    from generic import ClassificationResNet
    from mlstm import VisionLSTM
    from vit5 import ViT5ClassificationNet
except ImportError as e:  # no torch: the reference cannot run
    print(f"SKIP: {e}")
    sys.exit(77)

if not os.environ.get("VKVIT_LIBRARY"):
    built = os.path.join(ROOT, "build", "libvkvit.so")
    if os.path.exists(built):
        os.environ["VKVIT_LIBRARY"] = built
import vkvit  # noqa: E402

TOL = {"fp32": 1e-4, "fp16": 1e-2}
FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print(f"FAIL  {what}", flush=True)


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.max(np.abs(got - want))) / (float(np.max(np.abs(want))) or 1.0)


def reference(path, image, condition):
    tensors, doc = vkvit_file.read_model(path)
    build = {"vit5": ViT5ClassificationNet, "vil": VisionLSTM, "resnet": ClassificationResNet}
    net = build[doc["architecture"]].from_config(doc)
    net.load_state_dict(tensors, strict=True)
    net = net.double().eval()
    args = [torch.from_numpy(image).double()]
    if condition is not None:
        args.append(torch.from_numpy(condition).double())
    with torch.no_grad():
        toks = net.forward_tokens(*args)
    return doc, {k: v.numpy() for k, v in toks.items()}


def check_model(ctx, path, rng):
    stem = os.path.basename(path)[:-len(".vkvit")]
    io, _ = vkvit_file.read_safetensors(path.replace(".vkvit", ".io.safetensors"))
    base = io["input"].numpy().astype(np.float32)
    cond = io["condition"].numpy().astype(np.float32) if "condition" in io else None
    logits = io["logits"].numpy()
    batch = base.shape[0]
    model = vkvit.Model(ctx, path)
    try:
        for precision in ("fp32", "fp16"):
            s = vkvit.Session(model, batch=batch, precision=precision, tokens=True, features=True)
            try:
                if cond is not None:
                    s.set_condition(cond)
                for trial in range(2):
                    image = base if trial == 0 else (base + rng.standard_normal(base.shape) * 0.1).astype(np.float32)
                    doc, want = reference(path, image, cond)
                    got_logits = s.run(image)
                    got = s.tokens()
                    what = f"{stem} {precision} input {trial}"
                    if trial == 0 and precision == "fp32":
                        err = rel_err(got_logits, logits)
                        check(err <= 1e-4, f"{what}: logits max rel err {err:.3g} > 1e-4")
                    check(sorted(got) == sorted(want), f"{what}: parts {sorted(got)}, want {sorted(want)}")
                    line = []
                    for part in sorted(want):
                        if part not in got:
                            continue
                        check(got[part].shape == want[part].shape,
                              f"{what}: {part} shape {got[part].shape}, want {want[part].shape}")
                        err = rel_err(got[part], want[part])
                        line.append(f"{part} {tuple(got[part].shape)} {err:.2e}")
                        check(err <= TOL[precision], f"{what}: {part} max rel err {err:.3g} > {TOL[precision]}")
                    print(f"  {what}: {', '.join(line)} (tolerance {TOL[precision]})", flush=True)
                    if doc["architecture"] == "vit5" and doc["config"].get("readout") == "cls":
                        feats = s.features()
                        check(np.array_equal(feats, got["cls"]), f"{what}: the CLS token differs from the features")
            finally:
                s.close()
    finally:
        model.close()


def main():
    seed = int(os.environ.get("VKVIT_TEST_SEED", random.randrange(1 << 31)))
    print(f"seed {seed} (VKVIT_TEST_SEED={seed} reruns it)")
    rng = np.random.default_rng(seed)
    torch.set_num_threads(1)
    try:
        ctx = vkvit.Context(validation=True, pipeline_cache_dir="")
    except (vkvit.NoLoaderError, vkvit.NoDeviceError, vkvit.LibraryNotFoundError) as e:
        print(f"SKIP: {e}")
        return 77
    paths = sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "models", "*.vkvit")))
    check(len(paths) >= 10, f"{len(paths)} golden models found")
    if os.environ.get("VKVIT_SANITIZED") == "1":
        paths = [p for i, p in enumerate(paths) if i % 4 == 0]
    for p in paths:
        check_model(ctx, p, rng)
    msgs = ctx.validation_messages()
    check(msgs == 0, f"{msgs} validation messages")
    ctx.close()
    print("FAILED" if FAILURES else "passed", f"({len(FAILURES)} failures)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
