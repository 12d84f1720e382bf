#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a ViT-S-sized ClassificationResNet of generic ResidualBlocks with random weights as a vkvit model file:
224 x 224, patch 16, width 384, depth 12, attention with 6 heads of 64, RoPE, qk-norm and biases, GELU MLP 1536
(9.16 GFLOP per image, the size of ViT-5-S), so that the generic attention can be timed against ViT-5's:

    /usr/bin/python3 lab/make_resnet_s.py /tmp/resnet_s.vkvit
    ./build/vkvit bench --model /tmp/resnet_s.vkvit --repeat 10     # GPU time by node kind: attn_prep, attn_gemm, ...
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "reference"))

import torch  # noqa: E402
import vkvit_file  # noqa: E402
import make_goldens as mg  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 1
    cfg = mg.small_resnet(dim=384, image_size=(224, 224), patch_size=16, depth=12,
                          seq=mg.seq_attention(6, qk_norm=True, rope=True, bias=True),
                          mlp=mg.mlp_spec("gelu", 1536, bias=True), bias=mg.BIASES, num_classes=1000)
    torch.manual_seed(0)  # the same file every time
    net = mg.build_model("resnet", "generic", cfg).eval()
    meta = {"format_version": 1, "architecture": "resnet", "flavour": "generic", "name": "resnet_s16_224_random",
            "config": cfg, "preprocess": {"image_size": [224, 224], "resize_shorter": 224, "interpolation": "bicubic",
                                          "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
    vkvit_file.write_model(sys.argv[1], {k: v.detach().float().contiguous() for k, v in net.state_dict().items()},
                           meta)
    print(f"wrote {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
