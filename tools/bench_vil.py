#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Vision-LSTM (ViL-S: D 384, depth 24, 224 x 224, patch 16) on PyTorch and on vkvit, side by side in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/bench_vil.py      # seed numerics, batch 1
    /usr/bin/python3 tools/bench_vil.py --flavour nxai --batch 8 --rounds 7 --json

Builds the reference VisionLSTM (tools/reference/mlstm.py) with random weights and writes it as a vkvit model file;
then
  1. picks PyTorch's fastest exact form of the mLSTM on --torch-device: the quadratic parallel form or the
     chunkwise scan at chunk 16, 32 or 64 (each checked against the parallel form's logits to 1e-4 relative,
     then timed once),
  2. alternates --rounds rounds of (that PyTorch forward: median of --repeat; `vkvit bench --precision P` for
     each P of --precision: median of --repeat) and reports the median and the minimum over the rounds of each
     and their ratios (on cuda also bf16 autocast and, with --compile, torch.compile),
  3. runs `vkvit run` on the same input and compares the logits with PyTorch's fp32 logits (tolerances in
     tools/bench_common.py; exit status 2 when one is exceeded, or the arena exceeds --max-arena-ratio).
Measure PyTorch at its best on a quiet machine: unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in this command only
(see tools/bench_common.py); the report names the OpenBLAS kernel used. Needs Debian's python3-torch (run with
/usr/bin/python3) and a built build/vkvit.
"""

import argparse
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "reference"))

import bench_common as bc  # noqa: E402  (before torch: it sets PyTorch's OpenMP wait policy)
import torch  # noqa: E402
from flops import VIL_S  # noqa: E402
from mlstm import VisionLSTM  # noqa: E402

FORMS = (None, 16, 32, 64)                    # mLSTM chunk size; None = the quadratic parallel form


def build_model(flavour: str, seed: int):
    cfg = copy.deepcopy(VIL_S)
    torch.manual_seed(seed)
    net = VisionLSTM.from_config(cfg, numerics=flavour).eval()
    with torch.no_grad():  # make every term matter: the position embedding is zero-initialised
        net.pos_embed.embed.normal_(0.0, 0.02)
    meta = {"format_version": 1, "architecture": "vil", "flavour": flavour, "name": f"vil_s_patch16_224_{flavour}_random",
            "config": cfg, "preprocess": {"image_size": [224, 224], "resize_shorter": 224, "interpolation": "bicubic",
                                          "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
    return net, meta


def set_form(net, chunk):
    for block in net.blocks:
        block.mlstm.chunk_size = chunk


def form_name(chunk) -> str:
    return "parallel" if chunk is None else f"chunkwise {chunk}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flavour", choices=["seed", "nxai"], default="seed")
    bc.add_common_args(ap)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    net, meta = build_model(args.flavour, seed=0)
    tmp, model_path = bc.write_model(net, meta, args, "vkvit-bench-vil-")

    x = torch.randn(args.batch, 224, 224, 3, generator=torch.Generator().manual_seed(1))
    dev = torch.device(args.torch_device)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == "cuda" else (lambda: None)
    forms, errors = {}, {}
    with torch.no_grad():
        set_form(net, None)
        want = net(x).float()
        netd, xd = net.to(dev), x.to(dev)
        for chunk in FORMS:
            set_form(netd, chunk)
            err = ((netd(xd).float().cpu() - want).abs().max() / want.abs().max()).item()
            errors[form_name(chunk)] = err
            if err <= 1e-4:
                forms[form_name(chunk)] = (chunk, bc.time_ms(lambda: netd(xd), args.warmup, 2, sync))
    if not forms:   # none within 1e-4 of the CPU reference: time the closest one, and say so
        closest = min(FORMS, key=lambda chunk: errors[form_name(chunk)])
        print("bench_vil.py: no PyTorch form within 1e-4 of the reference (%s); timing the closest, %s" %
              (", ".join("%s %.2g" % e for e in errors.items()), form_name(closest)), file=sys.stderr)
        set_form(netd, closest)
        forms[form_name(closest)] = (closest, bc.time_ms(lambda: netd(xd), args.warmup, 2, sync))
    best = min(forms, key=lambda name: forms[name][1])
    set_form(netd, forms[best][0])

    results = bc.side_by_side(netd, x, want, meta, model_path, tmp, args)
    results.update({"torch_forms_ms": {k: round(f[1], 3) for k, f in forms.items()}, "torch_form": best,
                    "torch_form_errors": {k: float("%.3g" % e) for k, e in errors.items()}})
    return bc.finish(results, args)


if __name__ == "__main__":
    sys.exit(main())
