"""Reference configurations and network FLOP / parameter counts (SPEC.md sections 5.2, 7.2 and 8).

The counts themselves are the ``flop_count`` methods of the modules; this file holds the standard configs (in the
docs/model-format.md ``config`` shape) and a small CLI:

    /usr/bin/python3 tools/reference/flops.py            # ViT-5-S / ViT-5-B / ViL-S breakdown
"""

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

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
    """Per-part numbers of SPEC 8 for one sample: attention and block of block 0, and the network total."""
    net = ViT5ClassificationNet.from_config(cfg)
    block = net.blocks[0]
    return {"tokens": net.num_tokens,
            "attention_per_block": block.sequence_mixer.flop_count(net.num_tokens),
            "block": block.flop_count(net.num_tokens),
            "total": net.flop_count(),
            "params": net.param_count()}


def main() -> int:
    torch.set_num_threads(1)
    for name, cfg in (("ViT-5-S nvsubq", VIT5_S_NVSUBQ), ("ViT-5-B nvsubq", VIT5_B_NVSUBQ),
                      ("ViT-5-S paper", VIT5_S_PAPER)):
        b = vit5_breakdown(cfg)
        print(f"{name:16s} T={b['tokens']} attention/block {b['attention_per_block']:,} block {b['block']:,} "
              f"total {b['total']:,} FLOPs, {b['params']:,} params")
    for numerics in ("seed", "nxai"):
        net = VisionLSTM.from_config(VIL_S, numerics=numerics)
        print(f"ViL-S {numerics:4s}       S={net.num_tokens} total {net.flop_count():,} FLOPs (parallel cell), "
              f"{net.flop_count(chunk_size=64):,} (chunkwise L=64), {net.param_count():,} params")
    return 0


if __name__ == "__main__":
    sys.exit(main())
