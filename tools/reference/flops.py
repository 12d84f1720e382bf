# SPDX-License-Identifier: Apache-2.0
"""Reference configurations and network FLOP / parameter counts (docs/math.md sections 5.2, 7.2 and 8).

The closed-form FLOP and parameter formulas live once in Python, in tools/vkvit_file.py (flops_breakdown,
count_params; the C copy is src/arch/<name>.c, and tests/format/test_reader_agreement.py checks that the two agree on every
model file). The modules' own ``flop_count`` / ``param_count`` methods here are the seeds' (seed-literal,
docs/math.md 8), and selfcheck.py checks the formula against them. This file holds the standard configs (in the
docs/model-format.md ``config`` shape) and a small CLI that prints both:

    /usr/bin/python3 tools/reference/flops.py            # ViT-5-S / ViT-5-B / ViL-S breakdown
"""

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tools/: vkvit_file

import torch  # noqa: E402
import vkvit_file  # noqa: E402

from mlstm import VisionLSTM  # noqa: E402
from vit5 import ViT5ClassificationNet  # noqa: E402

VIT5_S_NVSUBQ = {
    "image_size": [224, 224], "patch_size": 16, "in_chans": 3, "dim": 384, "depth": 12, "num_heads": 6,
    "mlp_hidden": 1536, "mlp_activation": "gelu", "num_registers": 4, "has_cls": True, "readout": "cls",
    "neck_dim": 0, "qk_norm": True, "norm_eps": 1e-6, "qk_norm_eps": 1e-6, "rope_base": 10000.0,
    "reg_rope_base": 100.0, "rope_pairing": "split_half", "token_layout": "patches_cls_regs", "layer_scale": True,
    "grn": False, "bias": {"patch_embed": False, "qkv": False, "proj": False, "mlp": False, "head": False},
    "num_classes": 1000,
}

VIT5_B_NVSUBQ = dict(copy.deepcopy(VIT5_S_NVSUBQ), dim=768, num_heads=12, mlp_hidden=3072)

VIT5_S_PAPER = dict(copy.deepcopy(VIT5_S_NVSUBQ), rope_pairing="adjacent", token_layout="cls_patches_regs",
                    bias={"patch_embed": True, "qkv": False, "proj": True, "mlp": True, "head": True})

VIL_S = {
    "image_size": [224, 224], "patch_size": 16, "in_chans": 3, "dim": 384, "depth": 24, "inner_dim": 768,
    "num_heads": 4, "qkv_block_size": 4, "conv_kernel": 4, "pooling": "bilateral_avg", "norm_eps": 1e-5,
    "head_norm_eps": 1e-6, "num_classes": 1000,
}


def vit5_flops(cfg: dict) -> int:
    return ViT5ClassificationNet.from_config(cfg).flop_count()


def vit5_breakdown(cfg: dict) -> dict:
    """Per-part numbers of docs/math.md 8 for one sample: attention and block of block 0, and the network total."""
    net = ViT5ClassificationNet.from_config(cfg)
    block = net.blocks[0]
    return {"tokens": net.num_tokens,
            "attention_per_block": block.sequence_mixer.flop_count(net.num_tokens),
            "block": block.flop_count(net.num_tokens),
            "total": net.flop_count(),
            "params": net.param_count()}


def document(arch: str, flavour: str, cfg: dict) -> dict:
    """A vkvit document for a config (ImageNet pre-processing at the config's size), for vkvit_file's formulas."""
    h, w = cfg["image_size"]
    pre = {"image_size": [h, w], "resize_shorter": max(h, w), "interpolation": "bicubic",
           "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    return vkvit_file.document(arch, flavour, "", cfg, pre)


def main() -> int:
    torch.set_num_threads(1)
    bad = 0
    for name, flavour, cfg in (("ViT-5-S nvsubq", "nvsubq", VIT5_S_NVSUBQ), ("ViT-5-B nvsubq", "nvsubq", VIT5_B_NVSUBQ),
                               ("ViT-5-S paper", "paper", VIT5_S_PAPER)):
        b = vit5_breakdown(cfg)
        f = vkvit_file.flops_breakdown(document("vit5", flavour, cfg))
        print(f"{name:16s} T={b['tokens']} attention/block {f['attention_per_block']:,} block {f['block']:,} "
              f"total {f['total']:,} FLOPs, {b['params']:,} params")
        bad += (f["attention_per_block"], f["block"], f["total"]) != (b["attention_per_block"], b["block"], b["total"])
    for numerics in ("seed", "nxai"):
        net = VisionLSTM.from_config(VIL_S, numerics=numerics)
        f = vkvit_file.flops_breakdown(document("vil", numerics, VIL_S))
        print(f"ViL-S {numerics:4s}       S={net.num_tokens} total {f['total']:,} FLOPs (parallel cell), "
              f"{net.flop_count(chunk_size=64):,} (chunkwise L=64), {net.param_count():,} params")
        bad += f["total"] != net.flop_count()
    if bad:
        print(f"{bad} configs where tools/vkvit_file.py's formula and the modules' flop_count disagree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
