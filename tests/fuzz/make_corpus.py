#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of tests/fuzz/fuzz_model_file.c into tests/fuzz/corpus/ (standard library only).

Small but complete vkvit model files (every option of each architecture switched on somewhere, F32 / F16 / BF16
tensors) and bare `vkvit` JSON documents. The tensor tables follow docs/model-format.md; the files are tiny so that
libFuzzer's mutations stay cheap. Run it again after a format change: python3 tests/fuzz/make_corpus.py
"""
import json
import math
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
PREPROCESS = {"image_size": [8, 8], "resize_shorter": 8, "interpolation": "bicubic",
              "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def vit5_doc(flavour, **over):
    paper = flavour == "paper"
    c = {"image_size": [8, 8], "patch_size": 4, "in_chans": 3, "dim": 8, "depth": 1, "num_heads": 2,
         "mlp_hidden": 8, "mlp_activation": "gelu", "num_registers": 1, "has_cls": True, "readout": "cls",
         "neck_dim": 0, "qk_norm": True, "norm_eps": 1e-6, "qk_norm_eps": 1e-6, "rope_base": 10000,
         "reg_rope_base": 100, "rope_pairing": "adjacent" if paper else "split_half",
         "token_layout": "cls_patches_regs" if paper else "patches_cls_regs", "layer_scale": True, "grn": True,
         "bias": {"patch_embed": True, "qkv": True, "proj": True, "mlp": True, "head": True}, "num_classes": 2}
    c.update(over)
    return {"format_version": 1, "architecture": "vit5", "flavour": flavour, "name": "seed-" + flavour,
            "config": c, "preprocess": PREPROCESS, "labels": ["cat", "dog"]}


def vit5_tensors(c):
    C, P, R, dk, Hd = c["dim"], c["patch_size"], c["num_registers"], c["dim"] // c["num_heads"], c["mlp_hidden"]
    b = c["bias"]
    np_ = (c["image_size"][0] // P) * (c["image_size"][1] // P)
    head_in = R * c["neck_dim"] if c["readout"] == "register_concat" else C
    t = [("patch_embed.weight", "F16", [C, 3, P, P])]
    t += [("patch_embed.bias", "F32", [C])] if b["patch_embed"] else []
    t += [("pos_embed", "F32", [1, np_, C])]
    t += [("cls_token", "F32", [1, 1, C])] if c["has_cls"] else []
    t += [("reg_token", "BF16", [1, R, C])] if R else []
    for i in range(c["depth"]):
        p = "blocks.%d." % i
        t += [(p + "input_norm.weight", "F32", [C]), (p + "sequence_mixer.qkv.weight", "F16", [3 * C, C])]
        t += [(p + "sequence_mixer.qkv.bias", "F32", [3 * C])] if b["qkv"] else []
        t += [(p + "sequence_mixer.proj.weight", "BF16", [C, C])]
        t += [(p + "sequence_mixer.proj.bias", "F32", [C])] if b["proj"] else []
        if c["qk_norm"]:
            t += [(p + "sequence_mixer.q_norm.weight", "F32", [dk]), (p + "sequence_mixer.k_norm.weight", "F32", [dk])]
        if c["grn"]:
            t += [(p + "grn.gamma", "F32", [C]), (p + "grn.beta", "F32", [C])]
        t += [(p + "mlp_norm.weight", "F32", [C]), (p + "mlp.layer1.weight", "F16", [Hd, C])]
        t += [(p + "mlp.layer1.bias", "F32", [Hd])] if b["mlp"] else []
        t += [(p + "mlp.layer2.weight", "F16", [C, Hd])]
        t += [(p + "mlp.layer2.bias", "F32", [C])] if b["mlp"] else []
        if c["layer_scale"]:
            t += [(p + "ls_attn.gamma", "F32", [C]), (p + "ls_mlp.gamma", "F32", [C])]
    t += [("neck.weight", "F32", [c["neck_dim"], C])] if c["readout"] == "register_concat" else []
    t += [("out_norm.weight", "F32", [head_in]), ("out_proj.weight", "F16", [c["num_classes"], head_in])]
    t += [("out_proj.bias", "F32", [c["num_classes"]])] if b["head"] else []
    return t


def vil_doc(flavour):
    c = {"image_size": [8, 8], "patch_size": 4, "in_chans": 3, "dim": 8, "depth": 1, "inner_dim": 64,
         "num_heads": 4, "qkv_block_size": 4, "conv_kernel": 4, "pooling": "bilateral_avg", "norm_eps": 1e-5,
         "head_norm_eps": 1e-6, "num_classes": 2}
    return {"format_version": 1, "architecture": "vil", "flavour": flavour, "name": "seed-vil-" + flavour,
            "config": c, "preprocess": PREPROCESS}


def vil_tensors(c, seed):
    D, E, P, NH, K = c["dim"], c["inner_dim"], c["patch_size"], c["num_heads"], c["conv_kernel"]
    g = c["image_size"][0] // P, c["image_size"][1] // P
    t = [("patch_embed.proj.weight", "F16", [D, 3, P, P]), ("patch_embed.proj.bias", "F32", [D]),
         ("pos_embed.embed", "F32", [1, g[0], g[1], D])]
    for i in range(c["depth"]):
        m = "blocks.%d.mlstm." % i
        t += [("blocks.%d.norm1.weight" % i, "F32", [D]), (m + "proj_up.weight", "F16", [2 * E, D]),
              (m + "conv1d.weight", "F32", [E, 1, K]), (m + "conv1d.bias", "F32", [E])]
        t += [(m + q + ".weight", "BF16", [E // 4, 4, 4]) for q in ("q_proj", "k_proj", "v_proj")]
        t += [(m + "igate.weight", "F16", [NH, 3 * E]), (m + "igate.bias", "F32", [NH]),
              (m + "fgate.weight", "F16", [NH, 3 * E]), (m + "fgate.bias", "F32", [NH]),
              (m + "outnorm.weight", "F32", [E])]
        t += [(m + "outnorm.bias", "F32", [E])] if seed else []
        t += [(m + "proj_down.weight", "F16", [D, E]), (m + "learnable_skip", "F32", [E])]
        t += [(m + "layerscale", "F32", [E])] if seed else []
    t += [("legacy_norm.weight", "F32", [D]), ("norm.weight", "F32", [D]), ("norm.bias", "F32", [D]),
          ("head.weight", "F32", [c["num_classes"], D]), ("head.bias", "F32", [c["num_classes"]])]
    return t


def resnet_doc():
    c = {"image_size": [8, 8], "patch_size": 4, "in_chans": 3, "dim": 8, "depth": 1, "pos_embed": True,
         "block": {"input_norm": {"type": "rmsnorm", "eps": 1e-6},
                   "sequence_mixer": {"type": "attention", "num_heads": 2, "qk_norm": True, "rope": True,
                                      "rope_base": 10000, "causal": True, "bias": True},
                   "condition_mixer_norm": {"type": "layernorm", "eps": 1e-5, "bias": True},
                   "condition_mixer": {"type": "attention", "num_heads": 2, "qk_norm": True, "causal": False},
                   "mlp_norm": {"type": "rmsnorm", "eps": 1e-6},
                   "mlp": {"type": "mlp", "activation": "swiglu", "hidden": 4, "bias": True}},
         "condition_tokens": 3, "condition_dim": 8, "readout": "gap",
         "out_norm": {"type": "layernorm", "eps": 1e-6, "bias": False},
         "bias": {"patch_embed": True, "head": True}, "num_classes": 2}
    return {"format_version": 1, "architecture": "resnet", "flavour": "generic", "name": "seed-resnet",
            "config": c, "preprocess": PREPROCESS, "labels": ["cat", "dog"]}


def resnet_tensors(c):
    C, P, hd = c["dim"], c["patch_size"], c["block"]["mlp"]["hidden"]
    t = [("patch_embed.weight", "F32", [C, 3, P, P]), ("patch_embed.bias", "F32", [C]),
         ("pos_embed", "F32", [1, 2, 2, C])]
    for i in range(c["depth"]):
        p = "blocks.%d." % i
        t += [(p + "input_norm.weight", "F32", [C]),
              (p + "sequence_mixer.qkv_proj.weight", "F16", [3 * C, C]),
              (p + "sequence_mixer.qkv_proj.bias", "F32", [3 * C]),
              (p + "sequence_mixer.out_proj.weight", "F32", [C, C]),
              (p + "sequence_mixer.out_proj.bias", "F32", [C]),
              (p + "condition_mixer_norm.weight", "F32", [C]), (p + "condition_mixer_norm.bias", "F32", [C]),
              (p + "condition_mixer.kv_proj.weight", "BF16", [2 * C, C]),
              (p + "condition_mixer.q_proj.weight", "F32", [C, C]),
              (p + "condition_mixer.out_proj.weight", "F32", [C, C]),
              (p + "mlp_norm.weight", "F32", [C]), (p + "mlp.layer1.weight", "F32", [2 * hd, C]),
              (p + "mlp.layer1.bias", "F32", [2 * hd]), (p + "mlp.layer2.weight", "F32", [C, hd]),
              (p + "mlp.layer2.bias", "F32", [C])]
    return t + [("out_norm.weight", "F32", [C]), ("out_proj.weight", "F32", [2, C]), ("out_proj.bias", "F32", [2])]


def safetensors(tensors, doc):
    header, data = {}, bytearray()
    if doc is not None:
        header["__metadata__"] = {"vkvit": json.dumps(doc, separators=(",", ":"))}
    for j, (name, dtype, shape) in enumerate(tensors):
        begin = len(data)
        for k in range(math.prod(shape)):
            v = ((j * 31 + k) % 17 - 8) / 8.0
            if dtype == "F32":
                data += struct.pack("<f", v)
            elif dtype == "F16":
                data += struct.pack("<e", v)
            else:
                data += struct.pack("<f", v)[2:]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [begin, len(data)]}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {}
    d = vit5_doc("nvsubq")
    files["vit5_nvsubq.vkvit"] = safetensors(vit5_tensors(d["config"]), d)
    d = vit5_doc("paper", readout="register_concat", num_registers=4, neck_dim=2, has_cls=False, grn=False,
                 qk_norm=False, bias={"patch_embed": True, "qkv": False, "proj": True, "mlp": False, "head": False})
    files["vit5_paper_concat.vkvit"] = safetensors(vit5_tensors(d["config"]), d)
    for flavour in ("seed", "nxai"):
        d = vil_doc(flavour)
        files["vil_%s.vkvit" % flavour] = safetensors(vil_tensors(d["config"], flavour == "seed"), d)
    d = resnet_doc()
    files["resnet_generic.vkvit"] = safetensors(resnet_tensors(d["config"]), d)
    files["config_resnet.json"] = json.dumps(resnet_doc()).encode()
    files["config_vit5.json"] = json.dumps(vit5_doc("nvsubq", readout="gap", has_cls=False)).encode()
    files["config_vil.json"] = json.dumps(vil_doc("seed")).encode()
    files["empty_header.safetensors"] = safetensors([], None)
    for name, blob in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
        print("%-28s %6d bytes" % (name, len(blob)))


if __name__ == "__main__":
    main()
