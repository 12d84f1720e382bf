#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ViT-5 on PyTorch and on vkvit, side by side in one run, with a correctness check of the same logits.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/bench_vit5.py   # ViT-5-S/16, 224, batch 1
    /usr/bin/python3 tools/bench_vit5.py --batch 8 --rounds 7
    /usr/bin/python3 tools/bench_vit5.py --flavour paper --json

Builds the reference ViT5ClassificationNet (tools/reference/vit5.py) with random weights, writes it as a vkvit
model file, then
  1. alternates --rounds rounds of (the PyTorch forward: eval, no_grad, median of --repeat after --warmup, on
     --torch-device; `vkvit bench --model ... --json --precision P` for each P of --precision: median latency of
     vkvit_session_run) and reports the median and the minimum over the rounds of each, and their ratios; on cuda
     also eager bf16 autocast, and torch.compile (max-autotune) when --compile is given (timed after the rounds),
  2. runs `vkvit run` on the same input at each precision and compares the logits with PyTorch's fp32 logits
     (tolerances in tools/bench_common.py; exit status 2 when one is exceeded, or the arena exceeds --max-arena-ratio).
On the CPU, measure PyTorch at its best on a quiet machine: unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in this
command only (tools/bench_common.py); the report names the OpenBLAS kernel used. Needs Debian's python3-torch (run
it with /usr/bin/python3) and a built build/vkvit.
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
from flops import VIT5_S_NVSUBQ, VIT5_S_PAPER, VIT5_B_NVSUBQ  # noqa: E402
from vit5 import ViT5ClassificationNet  # noqa: E402

CONFIGS = {("s", "nvsubq"): VIT5_S_NVSUBQ, ("s", "paper"): VIT5_S_PAPER, ("b", "nvsubq"): VIT5_B_NVSUBQ}
PREPROCESS = {"image_size": [224, 224], "resize_shorter": 224, "interpolation": "bicubic",
              "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def build_model(size: str, flavour: str, seed: int):
    cfg = copy.deepcopy(CONFIGS[(size, flavour)])
    torch.manual_seed(seed)
    net = ViT5ClassificationNet.from_config(cfg).eval()
    with torch.no_grad():  # LayerScale 1e-4 would hide every block; make all branches matter
        for name, p in net.named_parameters():
            if name.endswith(("ls_attn.gamma", "ls_mlp.gamma")):
                p.normal_(0.5, 0.1)
            elif name.endswith("norm.weight"):
                p.normal_(1.0, 0.1)
    vkvit = {"format_version": 1, "architecture": "vit5", "flavour": flavour,
             "name": f"vit5_{size}_patch16_224_{flavour}_random", "config": cfg, "preprocess": PREPROCESS}
    return net, vkvit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["s", "b"], default="s")
    ap.add_argument("--flavour", choices=["nvsubq", "paper"], default="nvsubq")
    bc.add_common_args(ap)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    net, meta = build_model(args.size, args.flavour, seed=0)
    tmp, model_path = bc.write_model(net, meta, args, "vkvit-bench-")

    g = torch.Generator().manual_seed(1)
    x = torch.randn(args.batch, 224, 224, 3, generator=g)
    with torch.no_grad():
        want = net(x).float()

    results = bc.side_by_side(net, x, want, meta, model_path, tmp, args)
    return bc.finish(results, args)


if __name__ == "__main__":
    sys.exit(main())
