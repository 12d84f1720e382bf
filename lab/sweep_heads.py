#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Whole-model sweep over odd widths and classifier-head sizes: vkvit's logits against the PyTorch reference.

What it checks: for each configuration it builds a small random-weight network from the reference modules
(tools/reference/vit5.py: ViT-5, nvSubquadratic flavour; tools/reference/mlstm.py: Vision-LSTM, seed numerics),
writes it as a .vkvit file (tools/vkvit_file.py), runs ``vkvit run --model M --input IN --output OUT --features``
on a random normalised channels-last input ``[B, H, W, 3]`` and compares vkvit's logits (and the pooled features
the head reads, which tells a wrong head GEMM from a wrong trunk) with the reference computed in float64 on the same
float32 weights and input. It prints, per configuration, the max relative error ``max|vkvit - ref| / max|ref|`` of
the logits and of the features, the output columns whose error is above the tolerance, and WRONG when either is
above ``--tol`` (default 1e-4; the goldens hold 2e-6). The exit status is 1 when anything is wrong.

It was written to look for the CPU GEMM's wrong classifier heads on AVX2 hosts (9, 11, 13, 15 classes at widths
128-512 at batch 2). On a real AVX2 host run it as it is, with a fresh MESA_SHADER_CACHE_DIR (code that an earlier
LP_NATIVE_VECTOR_WIDTH run left in Mesa 22.3's on-disk cache is loaded again at the default width: docs/kernels.md).
On an AVX-512 host, the closest is llvmpipe's AVX2 code generation, ``GALLIUM_OVERRIDE_CPU_CAPS=avx`` (it clears
AVX-512 only; the compiled code then uses no ymm16-31 or mask registers), and then also with a cache folder of its
own: on 2026-12-01 (Mesa 22.3.6, Zen 4) the override did change the cache keys (llvmpipe hashes part of its CPU caps
into the cache id) while LP_NATIVE_VECTOR_WIDTH did not, but a folder per setting costs little and leaves no doubt:

    /usr/bin/python3 lab/sweep_heads.py --vkvit build/vkvit                          # the default sweep
    GALLIUM_OVERRIDE_CPU_CAPS=avx MESA_SHADER_CACHE_DIR=/tmp/mesa-avx2 \\
        /usr/bin/python3 lab/sweep_heads.py --vkvit build/vkvit --json /tmp/avx2.json
    VKVIT_DISABLE_TEXEL=1 /usr/bin/python3 lab/sweep_heads.py --only vit5_w384_c11 vil_w128_c10   # rerun some
    /usr/bin/python3 lab/sweep_heads.py --arch vit5 --widths 128 384 --classes 9 11 --batch 1

Default sweep: ViT-5 (32x32, patch 8, 4 registers, CLS readout, head dim 64 where the width allows, MLP 4x, depth 2)
at widths 64 96 128 192 256 384 512 x classes 1 2 3 5 7 9 10 11 13 15 17 19 100 1000, and ViL (32x32, patch 4,
depth 2) at widths 128 256 x classes 9 10 11 13 15, all at batch 2: 108 configurations. Model files, inputs and
the reference logits are written once under ``--work`` (default /tmp/sweep_heads) and reused by later runs (the
weights and input are drawn from numpy streams seeded by the configuration, so they are the same on every
machine). About 5 minutes per sweep on a 2-vCPU Zen 4 with lavapipe (2-3 s a configuration). Environment variables
(VKVIT_DISABLE_TEXEL, VKVIT_DISABLE_UNROLLED, GALLIUM_OVERRIDE_CPU_CAPS, MESA_SHADER_CACHE_DIR, VKVIT_DEVICE ...)
pass through to vkvit.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tools", "reference"))
sys.path.insert(1, os.path.join(REPO, "tools"))

import torch  # noqa: E402

import make_goldens as mg  # noqa: E402  (build_model, randomise_, case_rng, randn, small_vit5, small_vil, ...)
import vkvit_file  # noqa: E402

VIT5_WIDTHS = [64, 96, 128, 192, 256, 384, 512]
VIT5_CLASSES = [1, 2, 3, 5, 7, 9, 10, 11, 13, 15, 17, 19, 100, 1000]
VIL_WIDTHS = [128, 256]
VIL_CLASSES = [9, 10, 11, 13, 15]


def vit5_heads(dim: int) -> int:
    """Head dim 64 where the width allows it (ViT-5-S: 384 / 6), else 48 or 32 (RoPE needs a multiple of 4)."""
    for hd in (64, 48, 32, 16, 8, 4):
        if dim % hd == 0:
            return dim // hd
    raise ValueError(f"width {dim}: no head dim that is a multiple of 4 divides it")


def vit5_config(dim, classes, depth, image, patch):
    return mg.small_vit5(image_size=[image, image], patch_size=patch, dim=dim, depth=depth,
                         num_heads=vit5_heads(dim), mlp_hidden=4 * dim, num_classes=classes)


def vil_config(dim, classes, depth, image, patch):
    return mg.small_vil(image_size=[image, image], patch_size=patch, dim=dim, depth=depth,
                        inner_dim=vkvit_file.vil_inner_dim(dim, "seed"), num_classes=classes)


def configurations(args):
    """[(name, architecture, flavour, config)] in sweep order."""
    out = []
    if "vit5" in args.arch:
        for w in args.widths:
            for c in args.classes:
                out.append((f"vit5_w{w}_c{c}", "vit5", "nvsubq",
                            vit5_config(w, c, args.depth, args.image, args.patch)))
    if "vil" in args.arch:
        for w in args.vil_widths:
            for c in args.vil_classes:
                out.append((f"vil_w{w}_c{c}", "vil", "seed",
                            vil_config(w, c, args.vil_depth, args.vil_image, args.vil_patch)))
    return out


def build_case(work, name, architecture, flavour, config, batch):
    """Write <work>/<tag>/{model.vkvit, in.safetensors, ref.safetensors}; returns their paths. Reuses them when the
    stored config matches (weights and input are seeded by the name, so a rebuild gives the same bytes)."""
    tag = f"{name}_b{batch}_{config['image_size'][0]}p{config['patch_size']}_d{config['depth']}"
    d = os.path.join(work, tag)
    paths = {k: os.path.join(d, f) for k, f in (("model", "model.vkvit"), ("input", "in.safetensors"),
                                                 ("ref", "ref.safetensors"), ("config", "config.json"))}
    want = json.dumps({"architecture": architecture, "flavour": flavour, "config": config, "batch": batch},
                      sort_keys=True)
    if all(os.path.exists(p) for p in paths.values()):
        with open(paths["config"]) as f:
            if f.read() == want:
                return tag, paths
    os.makedirs(d, exist_ok=True)
    net = mg.build_model(architecture, flavour, config)
    rng = mg.case_rng(tag)
    mg.randomise_(net, rng)
    if architecture == "vil":
        for block in net.blocks:
            mg.set_mlstm_gate_biases_(block.mlstm, rng)
    h, w = config["image_size"]
    image = mg.randn(rng, batch, h, w, 3)                    # the normalised input, channels-last
    tensors = {k: v.float().contiguous() for k, v in net.state_dict().items()}
    head = net.out_proj if architecture == "vit5" else net.head
    captured = {}
    hook = head.register_forward_hook(lambda m, inp, out: captured.__setitem__("features", inp[0]))
    with torch.no_grad():
        logits = net.double().eval()(image.double())
    hook.remove()
    vkvit_file.write_model(paths["model"], tensors, mg.vkvit_doc(architecture, flavour, tag, config))
    vkvit_file.write_safetensors(paths["input"], {"input": image.float()})
    vkvit_file.write_safetensors(paths["ref"], {"logits": logits.float(), "features": captured["features"].float()})
    with open(paths["config"], "w") as f:
        f.write(want)
    return tag, paths


def rel_error(got, ref):
    """(max|got - ref| / max|ref|, per-column max|got - ref| / max|ref|); inf when shapes differ or not finite."""
    got, ref = got.double(), ref.double()
    if got.shape != ref.shape:
        return float("inf"), None
    scale = max(ref.abs().max().item(), 1e-30)
    diff = (got - ref).abs()
    if not torch.isfinite(got).all():
        return float("inf"), torch.full((ref.shape[1],), float("inf"), dtype=torch.float64)
    return diff.max().item() / scale, diff.max(dim=0).values / scale


def ranges(cols):
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    out, start, prev = [], None, None
    for c in cols:
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = c
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


def run_case(vkvit, paths, tol, extra_args, timeout):
    out = os.path.join(os.path.dirname(paths["model"]), f"out-{os.getpid()}.safetensors")
    cmd = [vkvit, "run", "--model", paths["model"], "--input", paths["input"], "--output", out, "--features"]
    cmd += extra_args
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    secs = time.time() - t0
    res = {"rc": proc.returncode, "seconds": round(secs, 2)}
    if proc.returncode != 0:
        res["error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        res["wrong"] = True
        return res
    got, _ = vkvit_file.read_safetensors(out)
    ref, _ = vkvit_file.read_safetensors(paths["ref"])
    os.unlink(out)
    lrel, lcols = rel_error(got["logits"], ref["logits"])
    frel, _ = rel_error(got["features"], ref["features"])
    res.update(logits_rel=lrel, features_rel=frel, classes=int(ref["logits"].shape[1]))
    if lcols is not None:
        res["bad_columns"] = ranges([i for i, v in enumerate(lcols.tolist()) if not v <= tol])
    res["wrong"] = not (lrel <= tol and frel <= tol)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--vkvit", default=os.path.join(REPO, "build", "vkvit"), help="the vkvit CLI (build/vkvit)")
    ap.add_argument("--work", default="/tmp/sweep_heads", help="model files, inputs, reference logits")
    ap.add_argument("--arch", nargs="+", default=["vit5", "vil"], choices=["vit5", "vil"])
    ap.add_argument("--widths", nargs="+", type=int, default=VIT5_WIDTHS, help="ViT-5 widths")
    ap.add_argument("--classes", nargs="+", type=int, default=VIT5_CLASSES, help="ViT-5 class counts")
    ap.add_argument("--depth", type=int, default=2, help="ViT-5 depth")
    ap.add_argument("--image", type=int, default=32, help="ViT-5 image side")
    ap.add_argument("--patch", type=int, default=8, help="ViT-5 patch size")
    ap.add_argument("--vil-widths", nargs="+", type=int, default=VIL_WIDTHS)
    ap.add_argument("--vil-classes", nargs="+", type=int, default=VIL_CLASSES)
    ap.add_argument("--vil-depth", type=int, default=2)
    ap.add_argument("--vil-image", type=int, default=32)
    ap.add_argument("--vil-patch", type=int, default=4)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--tol", type=float, default=1e-4, help="max relative error allowed (default 1e-4)")
    ap.add_argument("--only", nargs="+", help="run only these configuration names (e.g. vit5_w384_c11)")
    ap.add_argument("--precision", default=None, help="passed to vkvit run --precision")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per vkvit run")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)

    if not os.access(args.vkvit, os.X_OK):
        sys.exit(f"sweep_heads: {args.vkvit} is not an executable (build vkvit first, or pass --vkvit)")
    if (os.environ.get("GALLIUM_OVERRIDE_CPU_CAPS") or os.environ.get("LP_NATIVE_VECTOR_WIDTH")) and \
            not os.environ.get("MESA_SHADER_CACHE_DIR") and os.environ.get("MESA_SHADER_CACHE_DISABLE") != "true":
        print("sweep_heads: warning: GALLIUM_OVERRIDE_CPU_CAPS / LP_NATIVE_VECTOR_WIDTH without a "
              "MESA_SHADER_CACHE_DIR of their own: Mesa may load code compiled for other CPU features "
              "(docs/kernels.md)", file=sys.stderr)
    env_keys = ("GALLIUM_OVERRIDE_CPU_CAPS", "LP_NATIVE_VECTOR_WIDTH", "MESA_SHADER_CACHE_DIR",
                "MESA_SHADER_CACHE_DISABLE", "VKVIT_DISABLE_TEXEL", "VKVIT_DISABLE_UNROLLED",
                "VKVIT_DISABLE_SUBGROUP", "VKVIT_ATTENTION", "VKVIT_DEVICE")
    env = {k: os.environ[k] for k in env_keys if k in os.environ}
    print(f"sweep_heads: {args.vkvit}, batch {args.batch}, tol {args.tol:g}, env {env or '{}'}")
    torch.set_num_threads(1)

    cases = configurations(args)
    if args.only:
        known = {c[0] for c in cases}
        missing = [n for n in args.only if n not in known]
        if missing:
            sys.exit(f"sweep_heads: unknown configuration(s) {missing} (names look like vit5_w384_c11; "
                     f"--widths / --classes / --vil-widths / --vil-classes add others)")
        cases = [c for c in cases if c[0] in args.only]
    extra = ["--precision", args.precision] if args.precision else []
    results = []
    print(f"{'configuration':16s} {'tokens':>6s} {'logits rel':>11s} {'features rel':>12s}  {'s':>5s}  verdict")
    for name, arch, flavour, config in cases:
        tag, paths = build_case(args.work, name, arch, flavour, config, args.batch)
        res = run_case(args.vkvit, paths, args.tol, extra, args.timeout)
        res.update(name=name, tag=tag, architecture=arch, dim=config["dim"], num_classes=config["num_classes"])
        results.append(res)
        if "error" in res:
            print(f"{name:16s} vkvit exit {res['rc']}: {res['error'][0]}  WRONG", flush=True)
            continue
        verdict = "WRONG" if res["wrong"] else "ok"
        cols = f" (columns above tol: {res['bad_columns']} of {res['classes']})" if res.get("bad_columns") else ""
        g = config["image_size"][0] // config["patch_size"]
        tokens = g * g + (5 if arch == "vit5" else 0)
        print(f"{name:16s} {tokens:6d} {res['logits_rel']:11.2e} {res['features_rel']:12.2e}  {res['seconds']:5.1f}"
              f"  {verdict}{cols}", flush=True)
    wrong = [r for r in results if r["wrong"]]
    print(f"sweep_heads: {len(results)} configurations, {len(wrong)} wrong"
          + (": " + " ".join(r["name"] for r in wrong) if wrong else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": env, "vkvit": args.vkvit, "batch": args.batch, "tol": args.tol,
                       "results": results}, f, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
