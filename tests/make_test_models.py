#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Legal but hostile model files for the reliability tests (issue 12), written with tools/vkvit_file.py.

    make_test_models.py deep DEPTH OUT      a tiny ViT-5 (8x8 image, patch 4, width 8) DEPTH blocks deep
    make_test_models.py bigweight OUT       a ViT-5 whose patch embedding is one 192 MiB weight [64, 3*512*512]
    make_test_models.py hugeweight OUT      a ViT-5 (image and patch 8192, width 4) whose patch embedding rows are
                                            768 MiB each: no row block fits a 128 MiB descriptor (3 GiB file)
    make_test_models.py nan OUT             the bundled ViT-5's architecture with one NaN weight
    make_test_models.py inf OUT             ... with one +inf weight
    make_test_models.py nan-late OUT        a ViT-5 whose 48 MiB patch embedding [64, 3*256*256] ends in a NaN:
                                            element 12,582,911, converted in the third 16 MiB upload window
    make_test_models.py wide OUT            a ViT-5 of width 512, MLP 2048, depth 3 (8x8 image): 36 MiB of 2-D weights,
                                            whose fp16 copies are made in three 16 MiB windows
    make_test_models.py eps VALUE OUT       a tiny ViT-5 with norm_eps = VALUE (e.g. 1e300)
    make_test_models.py rope VALUE OUT      a tiny ViT-5 with rope_base = VALUE (e.g. 1e-300)
    make_test_models.py tokens OUT          a tiny ViT-5 with 4,097 tokens per image (128x128, patch 2, width 8): at
                                            batch 16 its norms need 65,552 workgroups, past the 65,535 of every device

eps and rope are written without the Python writer's validation (it refuses them, as the C reader must).

Weights are small random numbers (seeded), so the files are deterministic.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import vkvit_file as vf  # noqa: E402


def vit5_doc(image=8, patch=4, dim=8, depth=1, heads=1, mlp=16, classes=10, **over):
    cfg = {"image_size": [image, image], "patch_size": patch, "in_chans": 3, "dim": dim, "depth": depth,
           "num_heads": heads, "mlp_hidden": mlp, "mlp_activation": "gelu", "num_registers": 0, "has_cls": True,
           "readout": "cls", "neck_dim": 0, "qk_norm": True, "norm_eps": 1e-6, "qk_norm_eps": 1e-6,
           "rope_base": 10000.0, "reg_rope_base": 100.0, "rope_pairing": "split_half",
           "token_layout": "patches_cls_regs", "layer_scale": True, "grn": False,
           "bias": {"patch_embed": False, "qkv": False, "proj": False, "mlp": False, "head": False},
           "num_classes": classes}
    cfg.update(over)
    return {"format_version": 1, "architecture": "vit5", "flavour": "nvsubq", "name": "test model", "config": cfg,
            "preprocess": {"image_size": [image, image], "resize_shorter": image, "interpolation": "bicubic",
                           "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}


def random_tensors(doc, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shapes = vf.expected_tensors(doc)
    return {name: torch.randn(shape, generator=gen) * 0.05 for name, shape in shapes.items()}


def write(doc, out, tensors=None, validate=True):
    tensors = tensors if tensors is not None else random_tensors(doc)
    if validate:
        vf.write_model(out, tensors, doc)
    else:
        vf.write_safetensors(out, tensors, {"vkvit": json.dumps(doc, sort_keys=True)})


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    kind, out = argv[1], argv[-1]
    if kind == "deep":
        doc = vit5_doc(depth=int(argv[2]))
        # One shared block, repeated: random numbers for 16,384 blocks would take longer than the test itself.
        gen = torch.Generator().manual_seed(0)
        shared = {}
        tensors = {}
        for name, shape in vf.expected_tensors(doc).items():
            key = (name.split(".", 2)[2] if name.startswith("blocks.") else name, tuple(shape))
            if key not in shared:
                shared[key] = torch.randn(shape, generator=gen) * 0.05
            tensors[name] = shared[key]
        write(doc, out, tensors)
    elif kind == "bigweight":
        write(vit5_doc(image=512, patch=512, dim=64, heads=1, mlp=64), out)
    elif kind == "hugeweight":
        doc = vit5_doc(image=8192, patch=8192, dim=4, heads=1, mlp=4)
        write(doc, out, {name: torch.full(shape, 0.01) for name, shape in vf.expected_tensors(doc).items()})
    elif kind in ("nan", "inf"):
        doc = vit5_doc(image=32, patch=4, dim=16, depth=2, heads=2, mlp=32)
        t = random_tensors(doc)
        t["blocks.1.mlp.layer1.weight"][3, 5] = float("nan") if kind == "nan" else float("inf")
        write(doc, out, t)
    elif kind == "nan-late":
        doc = vit5_doc(image=256, patch=256, dim=64, heads=1, mlp=64)
        t = random_tensors(doc)
        t["patch_embed.weight"].view(-1)[-1] = float("nan")
        write(doc, out, t)
    elif kind == "wide":
        write(vit5_doc(dim=512, depth=3, heads=8, mlp=2048), out)
    elif kind in ("eps", "rope"):
        value = float(argv[2])
        legal = vit5_doc()
        tensors = random_tensors(legal)  # the tensor table does not depend on the value
        write(vit5_doc(**{"norm_eps" if kind == "eps" else "rope_base": value}), out, tensors, validate=False)
    elif kind == "tokens":
        write(vit5_doc(image=128, patch=2, dim=8, heads=1, mlp=16), out)
    else:
        sys.exit(f"unknown kind {kind}\n{__doc__}")


if __name__ == "__main__":
    main(sys.argv)
