#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Tests for tools/vkvit_file.py (safetensors + vkvit schema) and tools/convert.py (checkpoint conversion).

Run from the repository root:  /usr/bin/python3 tests/format/test_convert.py
Exit status: 0 all passed, 1 a test failed, 77 PyTorch is not importable (CTest: skipped).

Synthetic checkpoints use each source's real key layout with tiny dimensions (width 32, depth 2, patch 4, 8x8
images), so the whole file runs in a few seconds.
"""

import argparse
import contextlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import traceback

try:
    import torch
except ImportError:
    print("PyTorch is not importable by this interpreter; skipping (run with /usr/bin/python3)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import convert  # noqa: E402
import vkvit_file as vf  # noqa: E402

TESTS = []
TMP = tempfile.mkdtemp(prefix="vkvit_test_convert_")
GEN = torch.Generator().manual_seed(1234)


def test(fn):
    TESTS.append(fn)
    return fn


def tmp(name):
    return os.path.join(TMP, name)


def rand(*shape):
    return torch.randn(*shape, generator=GEN)


class Opaque:
    """A class that only exists in this test: the converter's restricted unpickler must stub it out."""

    def __init__(self):
        self.payload = [1, 2, 3]


# ---------------------------------------------------------------------------------------------------------------
# Synthetic models with vkvit names
# ---------------------------------------------------------------------------------------------------------------

C, DEPTH, P, IMG, HEADS, DK, MLP, R, NCLS = 32, 2, 4, 8, 2, 16, 64, 4, 10


def vit5_sd(bias=False, cls=True, regs=R, qk_norm=True, ls=True, grn=False, neck=0, classes=NCLS, img=(IMG, IMG)):
    np_ = (img[0] // P) * (img[1] // P)
    sd = {"patch_embed.weight": rand(C, 3, P, P), "pos_embed": rand(1, np_, C)}
    if bias:
        sd["patch_embed.bias"] = rand(C)
    if cls:
        sd["cls_token"] = rand(1, 1, C)
    if regs:
        sd["reg_token"] = rand(1, regs, C)
    for i in range(DEPTH):
        b = f"blocks.{i}."
        sd[b + "input_norm.weight"] = rand(C)
        sd[b + "sequence_mixer.qkv.weight"] = rand(3 * C, C)
        sd[b + "sequence_mixer.proj.weight"] = rand(C, C)
        if bias:
            sd[b + "sequence_mixer.proj.bias"] = rand(C)
        if qk_norm:
            sd[b + "sequence_mixer.q_norm.weight"] = rand(DK)
            sd[b + "sequence_mixer.k_norm.weight"] = rand(DK)
        if grn:
            sd[b + "grn.gamma"] = rand(C)
            sd[b + "grn.beta"] = rand(C)
        sd[b + "mlp_norm.weight"] = rand(C)
        sd[b + "mlp.layer1.weight"] = rand(MLP, C)
        sd[b + "mlp.layer2.weight"] = rand(C, MLP)
        if bias:
            sd[b + "mlp.layer1.bias"] = rand(MLP)
            sd[b + "mlp.layer2.bias"] = rand(C)
        if ls:
            sd[b + "ls_attn.gamma"] = rand(C)
            sd[b + "ls_mlp.gamma"] = rand(C)
    head_in = C
    if neck:
        sd["neck.weight"] = rand(neck, C)
        head_in = regs * neck
    sd["out_norm.weight"] = rand(head_in)
    sd["out_proj.weight"] = rand(classes, head_in)
    if bias:
        sd["out_proj.bias"] = rand(classes)
    return sd


D_VIL, E_VIL, NH_VIL = 32, 64, 4


def vil_sd(flavour="nxai", classes=NCLS):
    E = E_VIL
    sd = {"patch_embed.proj.weight": rand(D_VIL, 3, P, P), "patch_embed.proj.bias": rand(D_VIL),
          "pos_embed.embed": rand(1, IMG // P, IMG // P, D_VIL)}
    for i in range(DEPTH):
        b, m = f"blocks.{i}.", f"blocks.{i}.mlstm."
        sd[b + "norm1.weight"] = rand(D_VIL)
        sd[m + "proj_up.weight"] = rand(2 * E, D_VIL)
        sd[m + "conv1d.weight"] = rand(E, 1, 4)
        sd[m + "conv1d.bias"] = rand(E)
        for q in ("q_proj", "k_proj", "v_proj"):
            sd[m + q + ".weight"] = rand(E // 4, 4, 4)
        for g in ("igate", "fgate"):
            sd[m + g + ".weight"] = rand(NH_VIL, 3 * E)
            sd[m + g + ".bias"] = rand(NH_VIL)
        sd[m + "outnorm.weight"] = rand(E)
        if flavour == "seed":
            sd[m + "outnorm.bias"] = rand(E)
            sd[m + "layerscale"] = rand(E)
        sd[m + "proj_down.weight"] = rand(D_VIL, E)
        sd[m + "learnable_skip"] = rand(E)
    sd["legacy_norm.weight"] = rand(D_VIL)
    sd["norm.weight"] = rand(D_VIL)
    sd["norm.bias"] = rand(D_VIL)
    sd["head.weight"] = rand(classes, D_VIL)
    sd["head.bias"] = rand(classes)
    return sd


# --- the source layouts, built from vkvit-named dicts ---------------------------------------------------------


def lightning_ckpt(sd, prefix="network.", ema_live=None):
    ck = {
        "epoch": 7, "global_step": 1234, "pytorch-lightning_version": "2.5.0",
        "state_dict": {prefix + k: v for k, v in sd.items()},
        "hyper_parameters": {"args": argparse.Namespace(lr=1e-3), "thing": Opaque()},
        "optimizer_states": [{"state": {0: {"exp_avg": torch.zeros(3)}}, "param_groups": [{"lr": 0.1}]}],
        "callbacks": {"EMAWeightAveraging": {"latest_update_step": 1234}},
    }
    ck["state_dict"]["loss_fn.class_weights"] = torch.ones(NCLS)  # a non-network module: must be ignored
    if ema_live is not None:
        ck["current_model_state"] = {prefix + k: v for k, v in ema_live.items()}
        ck["averaging_state"] = {"n_averaged": torch.tensor(1234)}
    return ck


PAPER_RENAME = [
    ("patch_embed.weight", "patch_embed.proj.weight"), ("patch_embed.bias", "patch_embed.proj.bias"),
    ("out_norm.weight", "norm.weight"), ("out_proj.", "head."), (".input_norm.", ".norm1."),
    (".sequence_mixer.", ".attn."), (".ls_attn.gamma", ".gamma_1"), (".ls_mlp.gamma", ".gamma_2"),
    (".mlp_norm.", ".norm2."), (".mlp.layer1.", ".mlp.fc1."), (".mlp.layer2.", ".mlp.fc2."),
]


def to_paper(sd, rope_base=10000):
    out = {}
    for k, v in sd.items():
        for a, b in PAPER_RENAME:
            if a in k:
                k = k.replace(a, b)
                break
        out[k] = v
    for i in range(DEPTH):
        out[f"blocks.{i}.attn.rope.freqs"] = convert.rope_theta(rope_base, DK)
        out[f"blocks.{i}.attn.rope_reg.freqs"] = convert.rope_theta(100, DK)
    return out


def to_nxai_remapped(sd):
    out = {}
    for k, v in sd.items():
        k = k.replace(".norm1.", ".norm.").replace(".mlstm.conv1d.", ".layer.conv1d.conv.")
        for g in ("igate", "fgate", "outnorm"):
            k = k.replace(f".mlstm.{g}.", f".layer.mlstm_cell.{g}.")
        out[k.replace(".mlstm.", ".layer.")] = v
    return out


def to_nxai_raw(sd):
    out = {}
    for k, v in to_nxai_remapped(sd).items():
        if k.startswith("blocks."):
            k = "xlstm." + k.replace(".layer.", ".xlstm.").replace(".norm.", ".xlstm_norm.")
        k = {"legacy_norm.weight": "xlstm.post_blocks_norm.weight", "norm.weight": "head.0.weight",
             "norm.bias": "head.0.bias", "head.weight": "head.1.weight", "head.bias": "head.1.bias"}.get(k, k)
        out[k] = v
    return out


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


def run_convert(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = convert.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def convert_ok(src, *extra, out=None):
    out = out or tmp(os.path.basename(src) + ".vkvit")
    rc, so, se = run_convert([src, "-o", out, *extra])
    assert rc == 0, f"convert {os.path.basename(src)} {' '.join(map(str, extra))} failed (rc {rc}): {se.strip()}"
    assert se == "", f"unexpected stderr: {se!r}"
    tensors, vkvit = vf.read_model(out)
    return tensors, vkvit, so


def convert_fails(src, *extra, expect, status=2):
    """A refused conversion: exit `status` (2 bad input, 1 usage error) and one sentence on stderr."""
    rc, so, se = run_convert([src, "-o", tmp("fail.vkvit"), *extra])
    assert rc == status, f"expected exit {status}, got {rc} (stderr {se!r})"
    assert "Traceback" not in se, f"traceback in stderr: {se}"
    lines = se.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {lines}"
    for e in [expect] if isinstance(expect, str) else expect:
        assert e in se, f"stderr {se.strip()!r} does not mention {e!r}"
    return se


def save(obj, name):
    path = tmp(name)
    torch.save(obj, path)
    return path


def assert_same(tensors, ref, dtype=torch.float32, what=""):
    assert set(tensors) == set(ref), (f"{what}: tensor names differ: missing {sorted(set(ref) - set(tensors))[:4]}, "
                                      f"extra {sorted(set(tensors) - set(ref))[:4]}")
    for k in sorted(ref):
        t, r = tensors[k], ref[k]
        assert t.dtype == dtype, f"{what}: {k} has dtype {t.dtype}, expected {dtype}"
        assert tuple(t.shape) == tuple(r.shape), f"{what}: {k} shape {tuple(t.shape)} != {tuple(r.shape)}"
        want = r.to(dtype)
        if dtype == torch.bfloat16:
            same = torch.equal(t.view(torch.int16), want.view(torch.int16))
        else:
            same = torch.equal(t, want)
        assert same, f"{what}: {k} is not bit-exact (max diff {(t.float() - r.float()).abs().max().item():.3g})"
        if dtype != torch.float32:
            tol = 2.0 ** -10 if dtype == torch.float16 else 2.0 ** -7
            assert torch.allclose(t.float(), r, rtol=tol, atol=1e-6), f"{what}: {k} outside {dtype} rounding"


def vit5_doc(**over):
    cfg = {"image_size": [224, 224], "patch_size": 16, "in_chans": 3, "dim": 384, "depth": 12, "num_heads": 6,
           "mlp_hidden": 1536, "mlp_activation": "gelu", "num_registers": 4, "has_cls": True, "readout": "cls",
           "neck_dim": 0, "qk_norm": True, "norm_eps": 1e-6, "qk_norm_eps": 1e-6, "rope_base": 10000.0,
           "reg_rope_base": 100.0, "rope_pairing": "split_half", "token_layout": "patches_cls_regs",
           "layer_scale": True, "grn": False,
           "bias": {"patch_embed": False, "qkv": False, "proj": False, "mlp": False, "head": False},
           "num_classes": 1000}
    flavour = over.pop("flavour", "nvsubq")
    cfg.update(over)
    return {"format_version": 1, "architecture": "vit5", "flavour": flavour, "name": "vit5_small_patch16_224",
            "config": cfg,
            "preprocess": {"image_size": list(cfg["image_size"]), "resize_shorter": max(cfg["image_size"]),
                           "interpolation": "bicubic", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}


def vil_doc(dim=384, depth=24, flavour="nxai", **over):
    cfg = {"image_size": [224, 224], "patch_size": 16, "in_chans": 3, "dim": dim, "depth": depth,
           "inner_dim": vf.vil_inner_dim(dim), "num_heads": 4, "qkv_block_size": 4, "conv_kernel": 4,
           "pooling": "bilateral_avg", "norm_eps": 1e-5, "head_norm_eps": 1e-6, "num_classes": 1000}
    cfg.update(over)
    return {"format_version": 1, "architecture": "vil", "flavour": flavour, "name": "vil", "config": cfg,
            "preprocess": {"image_size": list(cfg["image_size"]), "resize_shorter": 224, "interpolation": "bicubic",
                           "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}


def raises(fn, *expect):
    try:
        fn()
    except ValueError as e:
        for x in expect:
            assert x in str(e), f"error {str(e)!r} does not mention {x!r}"
        return str(e)
    raise AssertionError(f"no ValueError raised (expected one mentioning {expect})")


# ---------------------------------------------------------------------------------------------------------------
# FLOPs and parameter counts (docs/math.md 8)
# ---------------------------------------------------------------------------------------------------------------


@test
def flops_vit5_small_seed_literal():
    fb = vf.flops_breakdown(vit5_doc())
    assert fb["attention_per_block"] == 299_551_104, f"attention per block {fb['attention_per_block']:,}"
    assert fb["block"] == 774_695_808, f"block {fb['block']:,}"
    assert fb["total"] == 9_412_799_616, f"ViT-5-S total {fb['total']:,}"
    assert vf.flops(vit5_doc()) == 9_412_799_616
    assert vf.count_params(vit5_doc()) == 22_010_112, f"ViT-5-S params {vf.count_params(vit5_doc()):,}"


@test
def flops_vit5_base_and_paper_params():
    base = vit5_doc(dim=768, num_heads=12, mlp_hidden=3072)
    assert vf.flops(base) == 35_896_538_880, f"ViT-5-B total {vf.flops(base):,}"
    assert round(vf.count_params(base) / 1e3) == 86_486, f"ViT-5-B params {vf.count_params(base):,}"
    paper = vit5_doc(flavour="paper", rope_pairing="adjacent", token_layout="cls_patches_regs",
                     bias={"patch_embed": True, "qkv": False, "proj": True, "mlp": True, "head": True})
    assert round(vf.count_params(paper) / 1e3) == 22_039, f"paper ViT-5-S params {vf.count_params(paper):,}"
    assert vf.flops(paper) == 9_412_799_616, "biases are not counted (upstream convention)"


@test
def flops_vit5_readout_variants():
    gap = vit5_doc(has_cls=False, readout="gap")
    fb = vf.flops_breakdown(gap)
    T = 196 + 4
    assert fb["readout"] == 196 * 384, "GAP readout adds Np*D"
    assert fb["attention_per_block"] == 8 * T * 384**2 + 4 * T * T * 384 + 4 * T * 384 + 6 * T * 64
    rc = vf.flops_breakdown(vit5_doc(readout="register_concat", neck_dim=96))
    assert rc["readout"] == 4 * 2 * 384 * 96 and rc["head"] == 2 * 384 * 1000 and rc["out_norm"] == 3 * 384
    g = vf.flops_breakdown(vit5_doc(grn=True))
    assert g["block"] - 774_695_808 == 6 * 201 * 384, "GRN adds 6*T*C"


@test
def flops_vil_small():
    fb = vf.flops_breakdown(vil_doc())
    S, D, E = 196, 384, 768
    block = (5 * S * D + 4 * S * D * E + 8 * S * E + 24 * S * E + 48 * S * E + 4 * S * S * E + 5 * 4 * S * S
             + 5 * S * E + 6 * S * E + 2 * S * E * D)
    assert fb["block"] == block, f"ViL-S block {fb['block']:,} != {block:,}"
    assert fb["total"] == 11_628_983_424, f"ViL-S nxai total {fb['total']:,}"
    # The breakdown carries vkvit_describe_model's names: readout = legacy_norm + bilateral_avg, out_norm = head LN.
    assert fb["readout"] == 5 * S * D + 2 * D and fb["out_norm"] == 5 * D and fb["cell_per_block"] == 4 * S * S * E \
        + 5 * 4 * S * S, fb
    assert vf.flops(vil_doc(flavour="seed")) == 11_628_983_424 + 24 * S * D, "seed adds layerscale S*D per block"
    assert vf.count_params(vil_doc()) == 22_792_360, f"ViL-S params {vf.count_params(vil_doc()):,}"
    assert vf.count_params(vil_doc(flavour="seed")) - vf.count_params(vil_doc()) == 24 * 2 * 768
    assert round(vf.count_params(vil_doc(dim=192)) / 1e4) == 609, "ViL-T 6.09 M"
    assert round(vf.count_params(vil_doc(dim=768)) / 1e4) == 8805, "ViL-B 88.05 M"


# ---------------------------------------------------------------------------------------------------------------
# Schema validation
# ---------------------------------------------------------------------------------------------------------------


@test
def schema_rejects_inconsistent_vit5():
    raises(lambda: vf.expected_tensors(vit5_doc(num_heads=5)), "config.dim 384", "num_heads 5")
    raises(lambda: vf.expected_tensors(vit5_doc(dim=48, num_heads=8, mlp_hidden=192)), "head dim 6", "multiple of 4")
    raises(lambda: vf.expected_tensors(vit5_doc(num_registers=2)), "num_registers 2", "perfect square")
    raises(lambda: vf.expected_tensors(vit5_doc(has_cls=False)), "readout is cls", "has_cls")
    raises(lambda: vf.expected_tensors(vit5_doc(readout="register_concat", num_registers=0, neck_dim=8)),
           "register_concat", "num_registers is 0")
    raises(lambda: vf.expected_tensors(vit5_doc(readout="register_concat")), "neck_dim is 0")
    raises(lambda: vf.expected_tensors(vit5_doc(neck_dim=8)), "neck_dim is 8")
    raises(lambda: vf.expected_tensors(vit5_doc(rope_pairing="adjacent")), "rope_pairing", "split_half", "nvsubq")
    raises(lambda: vf.expected_tensors(vit5_doc(flavour="paper")), "rope_pairing must be adjacent")
    raises(lambda: vf.expected_tensors(vit5_doc(image_size=[224, 200])), "image_size [224, 200]", "patch_size 16")
    raises(lambda: vf.expected_tensors(vit5_doc(dimm=3)), "unknown key 'dimm'")
    d = vit5_doc()
    del d["config"]["grn"]
    raises(lambda: vf.expected_tensors(d), "missing the key 'grn'")
    raises(lambda: vf.expected_tensors(vit5_doc(depth=12.0)), "config.depth")
    raises(lambda: vf.expected_tensors(vit5_doc(qk_norm=1)), "config.qk_norm")
    raises(lambda: vf.expected_tensors(vit5_doc(dim=True)), "config.dim")
    raises(lambda: vf.expected_tensors(vit5_doc(norm_eps=-1)), "config.norm_eps")
    raises(lambda: vf.expected_tensors(vit5_doc(bias={"patch_embed": False})), "config.bias", "missing")
    raises(lambda: vf.expected_tensors(vit5_doc(mlp_activation="relu")), "mlp_activation")
    raises(lambda: vf.expected_tensors(vit5_doc(in_chans=4)), "in_chans")


@test
def schema_rejects_bad_document():
    d = vit5_doc()
    d["format_version"] = 2
    raises(lambda: vf.expected_tensors(d), "format_version 2")
    d = vit5_doc()
    d["architecture"] = "resnet"
    d["flavour"] = "generic"
    raises(lambda: vf.expected_tensors(d), "config has an unknown key")   # a vit5 config is no resnet config
    d = vit5_doc(flavour="seed")
    raises(lambda: vf.expected_tensors(d), "flavour \"seed\"", "vit5")
    d = vit5_doc()
    d["labels"] = ["a", "b"]
    raises(lambda: vf.expected_tensors(d), "labels has 2 entries", "1000")
    d = vit5_doc()
    d["preprocess"]["image_size"] = [256, 256]
    raises(lambda: vf.expected_tensors(d), "preprocess.image_size")
    d = vit5_doc()
    d["preprocess"]["std"] = [0.2, 0.0, 0.2]
    raises(lambda: vf.expected_tensors(d), "preprocess.std")
    d = vit5_doc()
    d["preprocess"]["resize_shorter"] = 200
    raises(lambda: vf.expected_tensors(d), "resize_shorter 200")
    d = vit5_doc()
    d["architecture"] = ["vit5"]
    raises(lambda: vf.expected_tensors(d), "architecture [\"vit5\"] is unknown")
    d = vit5_doc(readout=["cls"])
    raises(lambda: vf.expected_tensors(d), "config.readout")
    raises(lambda: vf.expected_tensors([]), "not a JSON object")
    d = vit5_doc()
    d["unknown_top_level"] = {"ignored": True}
    vf.expected_tensors(d)  # unknown keys outside config are ignored


@test
def schema_rejects_inconsistent_vil():
    raises(lambda: vf.expected_tensors(vil_doc(inner_dim=700)), "inner_dim 700", "768")
    raises(lambda: vf.expected_tensors(vil_doc(num_heads=5)), "not divisible by config.num_heads 5")
    raises(lambda: vf.expected_tensors(vil_doc(pooling="mean")), "config.pooling")
    raises(lambda: vf.expected_tensors(vil_doc(image_size=[224, 225])), "image_size [224, 225]")
    raises(lambda: vf.expected_tensors(vil_doc(stride=8)), "unknown key 'stride'")
    assert vf.vil_inner_dim(192) == 384 and vf.vil_inner_dim(384) == 768 and vf.vil_inner_dim(100) == 256
    exp = vf.expected_tensors(vil_doc(dim=192, depth=2))
    assert exp["blocks.1.mlstm.q_proj.weight"] == (96, 4, 4) and exp["blocks.0.mlstm.igate.weight"] == (4, 1152)
    assert "blocks.0.mlstm.layerscale" not in exp and "blocks.0.mlstm.outnorm.bias" not in exp
    seed = vf.expected_tensors(vil_doc(dim=192, depth=2, flavour="seed"))
    assert seed["blocks.0.mlstm.layerscale"] == (384,) and seed["blocks.1.mlstm.outnorm.bias"] == (384,)
    assert exp["pos_embed.embed"] == (1, 14, 14, 192)


@test
def validate_model_names_the_tensor():
    doc = vit5_doc()
    shapes = dict(vf.expected_tensors(doc))
    vf.validate_model(shapes, doc)
    s = dict(shapes)
    del s["blocks.3.mlp_norm.weight"]
    raises(lambda: vf.validate_model(s, doc), "blocks.3.mlp_norm.weight is missing", "[384]")
    s = dict(shapes, **{"blocks.0.sequence_mixer.q_norm.weight": (32,)})
    raises(lambda: vf.validate_model(s, doc), "q_norm.weight has shape [32], expected [64]")
    s = dict(shapes, **{"blocks.0.sequence_mixer.rope_cos": (201, 64)})
    raises(lambda: vf.validate_model(s, doc), "rope_cos is not used by architecture vit5")


# ---------------------------------------------------------------------------------------------------------------
# safetensors writer and strict reader
# ---------------------------------------------------------------------------------------------------------------


@test
def safetensors_roundtrip_and_determinism():
    t = {"b": rand(3, 4), "a": rand(5).half(), "c": rand(2, 2).bfloat16(), "z": torch.zeros(0, 3),
         "s": torch.tensor(2.5)}
    p1, p2 = tmp("rt1.safetensors"), tmp("rt2.safetensors")
    vf.write_safetensors(p1, t, {"k": "v"})
    vf.write_safetensors(p2, dict(reversed(list(t.items()))), {"k": "v"})
    b1, b2 = open(p1, "rb").read(), open(p2, "rb").read()
    assert b1 == b2, "same input must give the same bytes"
    (n,) = struct.unpack("<Q", b1[:8])
    assert n % 8 == 0, f"header length {n} is not a multiple of 8"
    header = json.loads(b1[8:8 + n])
    assert b1[8:8 + n].endswith(b" ") or n == len(b1[8:8 + n].rstrip()), "padding must be spaces"
    names = [k for k in sorted(header) if k != "__metadata__"]
    off = 0
    for k in names:  # contiguous, in sorted-name order
        assert header[k]["data_offsets"][0] == off, f"{k} does not start at {off}"
        off = header[k]["data_offsets"][1]
    assert off == len(b1) - 8 - n, "data section must end with the last tensor"
    assert header["a"]["dtype"] == "F16" and header["c"]["dtype"] == "BF16" and header["b"]["dtype"] == "F32"
    back, meta = vf.read_safetensors(p1)
    assert meta == {"k": "v"}
    for k in t:
        assert back[k].dtype == t[k].dtype and back[k].shape == t[k].shape, k
        x, y = back[k], t[k]
        if x.dtype == torch.bfloat16:
            x, y = x.view(torch.int16), y.view(torch.int16)
        assert torch.equal(x, y), f"{k} did not round-trip"
    raises(lambda: vf.write_safetensors(tmp("f64.safetensors"), {"x": torch.zeros(2, dtype=torch.float64)}),
           "tensor x", "float64")
    raises(lambda: vf.write_safetensors(tmp("i.safetensors"), {"x": torch.zeros(2, dtype=torch.int32)}), "tensor x")
    assert not os.path.exists(tmp("f64.safetensors")) and not os.path.exists(tmp("f64.safetensors.tmp"))
    # little-endian bytes on disk
    vf.write_safetensors(tmp("le.safetensors"), {"x": torch.tensor([1.0])})
    raw = open(tmp("le.safetensors"), "rb").read()
    assert raw.endswith(struct.pack("<f", 1.0))


def raw_file(name, header, data=b"", n=None):
    hb = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp(name)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb) if n is None else n) + hb + data)
    return path


def good_header():
    return {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
            "b": {"dtype": "F16", "shape": [4], "data_offsets": [16, 24]}}


@test
def strict_reader_rejects_broken_files():
    data = bytes(24)
    vf.read_safetensors(raw_file("ok.st", good_header(), data))
    rd = vf.read_safetensors
    with open(tmp("short.st"), "wb") as f:
        f.write(b"\x10\x00\x00")
    raises(lambda: rd(tmp("short.st")), "too short")
    raises(lambda: rd(raw_file("trunc.st", good_header(), data[:20])), "tensor b", "past the end of the data")
    raises(lambda: rd(raw_file("hdrpast.st", good_header(), data, n=10_000)), "header length 10000",
           "past the end of the file")
    raises(lambda: rd(raw_file("hdrsmall.st", b"{", n=1)), "header length 1")
    raises(lambda: rd(raw_file("hdrhuge.st", b"{}", n=200 * 1024 * 1024)), "above the limit")
    h = good_header()
    h["b"]["data_offsets"] = [8, 16]
    h["b"]["shape"] = [4]
    raises(lambda: rd(raw_file("overlap.st", h, data)), "overlapping", "a", "b")
    h = good_header()
    h["a"]["dtype"] = "F64"
    raises(lambda: rd(raw_file("dtype.st", h, data)), "tensor a", "unknown dtype 'F64'")
    h = good_header()
    h["a"]["shape"] = [2, 3]
    raises(lambda: rd(raw_file("size.st", h, data)), "tensor a", "16 bytes", "needs 24")
    h = good_header()
    h["a"]["data_offsets"] = [16, 0]
    raises(lambda: rd(raw_file("order.st", h, data)), "tensor a", "begin 16 > end 0")
    h = good_header()
    h["a"]["shape"] = [2, -2]
    raises(lambda: rd(raw_file("neg.st", h, data)), "tensor a", "shape")
    h = good_header()
    h["a"]["shape"] = [1] * 9
    raises(lambda: rd(raw_file("dims.st", h, data)), "tensor a", "at most 8")
    h = good_header()
    h["a"]["data_offsets"] = [0, 16.0]
    raises(lambda: rd(raw_file("float.st", h, data)), "tensor a", "data_offsets")
    raises(lambda: rd(raw_file("notjson.st", b"{nope", data)), "not valid JSON")
    raises(lambda: rd(raw_file("array.st", b"[1, 2]", data)), "not a JSON object")
    raises(lambda: rd(raw_file("utf8.st", b"{\"\xff\": 1}", data)), "UTF-8")
    raises(lambda: rd(raw_file("dup.st", b'{"a": {}, "a": {}}', data)), "twice")
    raises(lambda: rd(raw_file("deep.st", b"[" * 100000, data)), "not valid JSON")
    raises(lambda: rd(raw_file("nan.st", b'{"__metadata__": {"x": NaN}}', data)), "NaN")
    raises(lambda: rd(raw_file("meta.st", {"__metadata__": {"vkvit": 3}}, b"")), "__metadata__ entry 'vkvit'")
    raises(lambda: rd(raw_file("entry.st", {"a": [1]}, b"")), "tensor a", "not a JSON object")
    raises(lambda: rd(tmp("does-not-exist.st")), "cannot open")


@test
def read_model_rejects_bad_metadata():
    p = tmp("nometa.vkvit")
    vf.write_safetensors(p, {"a": torch.zeros(1)})
    raises(lambda: vf.read_model(p), "no vkvit entry")
    vf.write_safetensors(p, {"a": torch.zeros(1)}, {"vkvit": "{not json"})
    raises(lambda: vf.read_model(p), "vkvit entry is not valid JSON")
    vf.write_safetensors(p, {"a": torch.zeros(1)}, {"vkvit": json.dumps(vit5_doc())})
    raises(lambda: vf.read_model(p), "tensor ", "missing")
    raises(lambda: vf.write_model(p, {"a": torch.zeros(1)}, vit5_doc()), "missing")


# ---------------------------------------------------------------------------------------------------------------
# Conversion: nvSubquadratic
# ---------------------------------------------------------------------------------------------------------------


def check_vit5_cfg(cfg, **want):
    base = {"image_size": [IMG, IMG], "patch_size": P, "in_chans": 3, "dim": C, "depth": DEPTH, "num_heads": HEADS,
            "mlp_hidden": MLP, "num_registers": R, "has_cls": True, "readout": "cls", "neck_dim": 0,
            "qk_norm": True, "layer_scale": True, "grn": False, "num_classes": NCLS,
            "rope_pairing": "split_half", "token_layout": "patches_cls_regs", "rope_base": 10000.0,
            "reg_rope_base": 100.0, "norm_eps": 1e-6, "qk_norm_eps": 1e-6, "mlp_activation": "gelu"}
    base.update(want)
    for k, v in base.items():
        assert cfg[k] == v, f"config.{k} = {cfg[k]!r}, expected {v!r}"


@test
def nvsubq_network_prefix():
    sd = vit5_sd()
    src = save(lightning_ckpt(sd), "nvsubq.ckpt")
    tensors, doc, out = convert_ok(src, "--num-heads", HEADS)
    assert doc["architecture"] == "vit5" and doc["flavour"] == "nvsubq"
    check_vit5_cfg(doc["config"], bias={k: False for k in vf.VIT5_BIAS_KEYS})
    assert_same(tensors, sd, what="nvsubq")
    assert doc["preprocess"] == {"image_size": [IMG, IMG], "resize_shorter": IMG, "interpolation": "bicubic",
                                 "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    assert "labels" not in doc
    assert "FLOPs" in out and f"{vf.flops(doc):,}" in out, "summary must print the FLOPs"
    assert "nvSubquadratic" in out and "live weights" in out


@test
def nvsubq_orig_mod_prefix_and_heads_from_qk_norm():
    sd = vit5_sd()
    src = save(lightning_ckpt(sd, prefix="network._orig_mod."), "nvsubq_compiled.ckpt")
    tensors, doc, out = convert_ok(src)  # no --num-heads: head dim 16 from q_norm.weight
    check_vit5_cfg(doc["config"])
    assert_same(tensors, sd, what="nvsubq _orig_mod")


@test
def nvsubq_ema_selection():
    ema, live = vit5_sd(), vit5_sd()
    src = save(lightning_ckpt(ema, ema_live=live), "nvsubq_ema.ckpt")
    tensors, doc, out = convert_ok(src, "--num-heads", HEADS)
    assert_same(tensors, ema, what="default = state_dict (EMA)")
    assert "EMA average" in out
    tensors, _, _ = convert_ok(src, "--ema", out=tmp("ema2.vkvit"))
    assert_same(tensors, ema, what="--ema")
    tensors, _, out = convert_ok(src, "--live", out=tmp("live.vkvit"))
    assert_same(tensors, live, what="--live = current_model_state")
    assert "current_model_state" in out
    no_ema = save(lightning_ckpt(ema), "nvsubq_noema.ckpt")
    convert_fails(no_ema, "--ema", expect="no EMA weights")
    tensors, _, _ = convert_ok(no_ema, "--live", out=tmp("live2.vkvit"))  # no EMA: live = state_dict
    assert_same(tensors, ema, what="--live without EMA")


@test
def nvsubq_without_qk_norm_needs_heads():
    sd = vit5_sd(qk_norm=False)
    src = save(lightning_ckpt(sd), "nvsubq_noqk.ckpt")
    convert_fails(src, expect=["--num-heads", "--preset"])
    tensors, doc, _ = convert_ok(src, "--num-heads", 4)
    assert doc["config"]["num_heads"] == 4 and doc["config"]["qk_norm"] is False
    convert_fails(src, "--num-heads", 3, expect="config.dim 32 is not divisible by config.num_heads 3")
    convert_fails(src, "--num-heads", 16, expect="head dim 2")


@test
def nvsubq_missing_tensor():
    sd = vit5_sd()
    del sd["blocks.1.mlp_norm.weight"]
    src = save(lightning_ckpt(sd), "nvsubq_missing.ckpt")
    convert_fails(src, expect="blocks.1.mlp_norm.weight is missing")
    sd = vit5_sd()
    sd["blocks.0.register_pooling.logits"] = rand(R)
    convert_fails(save(lightning_ckpt(sd), "nvsubq_regpool.ckpt"), expect="register pooling")
    sd = vit5_sd()
    sd["blocks.0.sequence_mixer.extra"] = rand(3)
    convert_fails(save(lightning_ckpt(sd), "nvsubq_extra.ckpt"), expect="sequence_mixer.extra is not used")
    sd = vit5_sd()
    sd["blocks.3.input_norm.weight"] = rand(C)
    convert_fails(save(lightning_ckpt(sd), "nvsubq_gap.ckpt"), expect="block 2 has no tensors")


@test
def nvsubq_options():
    sd = vit5_sd()
    src = save(lightning_ckpt(sd), "nvsubq_opts.ckpt")
    labels = tmp("labels.txt")
    with open(labels, "w") as f:
        f.write("".join(f"class {i}, with comma\n" for i in range(NCLS)))
    _, doc, _ = convert_ok(src, "--labels", labels, "--name", "tiny vit", "--source", "nvsubq")
    assert doc["labels"] == [f"class {i}, with comma" for i in range(NCLS)] and doc["name"] == "tiny vit"
    with open(tmp("labels_short.txt"), "w") as f:
        f.write("a\nb\n")
    convert_fails(src, "--labels", tmp("labels_short.txt"), expect="has 2 labels but the model has 10 classes")
    convert_fails(src, "--image-size", 8, 12, expect="--image-size 8 12 gives 6 patches")
    convert_fails(src, "--source", "paper", expect="looks like a nvSubquadratic Lightning checkpoint")
    convert_fails(src, "--flavour", "paper", expect="--flavour paper does not apply")
    convert_fails(src, "--preset", "vit5_small", expect="width 384")
    convert_fails(src, "--num-heads", 0, expect="--num-heads must be at least 1", status=1)
    convert_fails(src, "--dtype", "f8", expect="invalid choice", status=1)
    convert_fails(src, "--ema", "--live", expect="not allowed with argument", status=1)
    convert_fails(save(sd, "bare.pt"), "--live", expect="--live applies")


@test
def nvsubq_f16_bf16():
    sd = vit5_sd()
    src = save(lightning_ckpt(sd), "nvsubq_half.ckpt")
    tensors, doc, _ = convert_ok(src, "--dtype", "f16", out=tmp("h.vkvit"))
    assert_same(tensors, sd, dtype=torch.float16, what="f16")
    tensors, doc, _ = convert_ok(src, "--dtype", "bf16", out=tmp("bf.vkvit"))
    assert_same(tensors, sd, dtype=torch.bfloat16, what="bf16")
    big = vit5_sd()
    big["pos_embed"][0, 0, 0] = 1e6
    convert_fails(save(lightning_ckpt(big), "nvsubq_big.ckpt"), "--dtype", "f16", expect="beyond the float16 range")
    nan = vit5_sd()
    nan["out_norm.weight"][3] = float("nan")
    convert_fails(save(lightning_ckpt(nan), "nvsubq_nan.ckpt"), expect="out_norm.weight contains NaN")


@test
def nvsubq_non_square_image():
    sd = vit5_sd(img=(8, 16))
    src = save(lightning_ckpt(sd), "nvsubq_rect.ckpt")
    convert_fails(src, expect="not a square grid")
    tensors, doc, _ = convert_ok(src, "--image-size", 8, 16)
    assert doc["config"]["image_size"] == [8, 16] and doc["preprocess"]["resize_shorter"] == 16
    assert_same(tensors, sd, what="8x16")


# ---------------------------------------------------------------------------------------------------------------
# Conversion: ViT-5 paper
# ---------------------------------------------------------------------------------------------------------------


@test
def paper_model_and_model_ema():
    sd, sd_ema = vit5_sd(bias=True), vit5_sd(bias=True)
    ck = {"model": to_paper(sd), "model_ema": to_paper(sd_ema), "epoch": 299, "args": argparse.Namespace(lr=4e-3),
          "optimizer": {"state": {}, "param_groups": []}, "scaler": {"scale": 65536.0}}
    src = save(ck, "paper.pth")
    tensors, doc, out = convert_ok(src)  # heads from q_norm / rope.freqs
    assert doc["flavour"] == "paper"
    check_vit5_cfg(doc["config"], rope_pairing="adjacent", token_layout="cls_patches_regs",
                   bias={"patch_embed": True, "qkv": False, "proj": True, "mlp": True, "head": True})
    assert_same(tensors, sd, what="paper model")
    assert not any("freqs" in k for k in tensors), "rope.freqs buffers must be dropped"
    assert "4 rope freqs buffers matched" in out
    tensors, _, out = convert_ok(src, "--ema", out=tmp("paper_ema.vkvit"))
    assert_same(tensors, sd_ema, what="paper model_ema")
    assert "model_ema" in out
    only = save({"model": to_paper(sd)}, "paper_noema.pth")
    convert_fails(only, "--ema", expect="no model_ema entry")


@test
def paper_rope_checks():
    sd = vit5_sd(bias=True)
    bad = to_paper(sd, rope_base=1000)
    convert_fails(save({"model": bad}, "paper_badrope.pth"),
                  expect=["blocks.0.attn.rope.freqs does not match", "base 10000", "1000"])
    p = to_paper(sd)
    p["blocks.1.attn.rope_reg.freqs"] = p["blocks.1.attn.rope_reg.freqs"][:2]
    convert_fails(save({"model": p}, "paper_shortrope.pth"), expect="rope_reg.freqs has 2 entries, expected 4")
    p = to_paper(sd)
    del p["blocks.0.attn.rope.freqs"]
    convert_fails(save({"model": p}, "paper_norope.pth"), expect="blocks.0.attn.rope.freqs is missing")
    p = to_paper(vit5_sd(bias=True, qk_norm=False))  # heads from rope.freqs alone (dk = 4 * 4)
    _, doc, _ = convert_ok(save({"model": p}, "paper_noqk.pth"))
    assert doc["config"]["num_heads"] == HEADS
    convert_fails(save({"model": p}, "paper_noqk2.pth"), "--num-heads", 4,
                  expect="--num-heads gives 4 heads for width 32")


@test
def paper_deit_layernorm_rejected():
    p = to_paper(vit5_sd(bias=True))
    p["blocks.0.norm1.bias"] = rand(C)
    convert_fails(save({"model": p}, "deit.pth"), expect=["norm1.bias", "LayerNorm"])
    p = to_paper(vit5_sd(bias=True))
    p["blocks.0.attn.q_bias"] = rand(C)
    convert_fails(save({"model": p}, "paper_unknown.pth"), expect="blocks.0.attn.q_bias has no vkvit equivalent")


# ---------------------------------------------------------------------------------------------------------------
# Conversion: NX-AI Vision-LSTM v1
# ---------------------------------------------------------------------------------------------------------------


def check_vil_cfg(cfg):
    want = {"image_size": [IMG, IMG], "patch_size": P, "in_chans": 3, "dim": D_VIL, "depth": DEPTH,
            "inner_dim": E_VIL, "num_heads": NH_VIL, "qkv_block_size": 4, "conv_kernel": 4,
            "pooling": "bilateral_avg", "norm_eps": 1e-5, "head_norm_eps": 1e-6, "num_classes": NCLS}
    for k, v in want.items():
        assert cfg[k] == v, f"config.{k} = {cfg[k]!r}, expected {v!r}"


@test
def nxai_raw_hub_file():
    sd = vil_sd("nxai")
    raw = to_nxai_raw(sd)
    assert "xlstm.blocks.0.xlstm.mlstm_cell.igate.weight" in raw and "head.1.weight" in raw
    src = save({"state_dict": raw, "ctor_kwargs": {"dim": D_VIL}, "epoch": 400}, "vil_raw.th")
    tensors, doc, out = convert_ok(src)
    assert doc["architecture"] == "vil" and doc["flavour"] == "nxai"
    check_vil_cfg(doc["config"])
    assert_same(tensors, sd, what="nxai raw")
    assert "Vision-LSTM" in out
    # the same file with post_blocks_norm outside the xlstm prefix
    raw2 = {("post_blocks_norm.weight" if k == "xlstm.post_blocks_norm.weight" else k): v for k, v in raw.items()}
    tensors, _, _ = convert_ok(save({"state_dict": raw2}, "vil_raw2.th"))
    assert_same(tensors, sd, what="nxai raw (post_blocks_norm)")


@test
def nxai_remapped_state_dict():
    sd = vil_sd("nxai")
    rem = to_nxai_remapped(sd)
    assert "blocks.1.layer.conv1d.conv.weight" in rem and "blocks.0.norm.weight" in rem
    tensors, doc, _ = convert_ok(save(rem, "vil_remapped.pth"))
    check_vil_cfg(doc["config"])
    assert_same(tensors, sd, what="nxai remapped")
    convert_fails(save(rem, "vil_remapped2.pth"), "--flavour", "seed", expect="--flavour seed does not apply")
    convert_fails(save(rem, "vil_remapped3.pth"), "--ema", expect="--ema applies to nvsubq")
    convert_fails(save({"state_dict": to_nxai_raw(vil_sd())}, "vil_raw_live.th"), "--live", expect="--live applies")
    convert_fails(save(rem, "vil_remapped4.pth"), "--preset", "vil_tiny", expect="width 192")
    convert_fails(save(rem, "vil_remapped5.pth"), "--image-size", 16, 16, expect="stride-8")
    convert_fails(save(rem, "vil_remapped6.pth"), "--preset", "vit5_small", expect="is a vit5 preset")


@test
def nxai_v2_rejected():
    sd = to_nxai_remapped(vil_sd("nxai"))
    v2 = {}
    for k, v in sd.items():
        if k.startswith("blocks."):
            i = int(k.split(".")[1])
            sub = "rowwise_from_top_left" if i % 2 == 0 else "rowwise_from_bot_right"
            k = f"blocks.{i // 2}.{sub}." + k.split(".", 2)[2]
        v2[k] = v
    convert_fails(save(v2, "vil2.pth"), expect=["ViL v2", "not supported"])
    sd = to_nxai_raw(vil_sd("nxai"))
    sd["xlstm.blocks.0.xlstm.conv1d.conv.weight"] = rand(E_VIL, 1, 3, 3)
    convert_fails(save({"state_dict": sd}, "vil2_raw.th"), expect=["not supported"])
    sd = to_nxai_remapped(vil_sd("nxai"))
    sd["blocks.0.layer.proj_up.bias"] = rand(2 * E_VIL)
    convert_fails(save(sd, "vil2_bias.pth"), expect=["proj_up.bias", "not supported"])


# ---------------------------------------------------------------------------------------------------------------
# Conversion: plain state_dicts with vkvit names
# ---------------------------------------------------------------------------------------------------------------


@test
def plain_vil_seed_and_nxai():
    sd = vil_sd("seed")
    tensors, doc, _ = convert_ok(save(sd, "plain_vil_seed.pt"))
    assert doc["flavour"] == "seed", "outnorm.bias / layerscale mean seed flavour"
    check_vil_cfg(doc["config"])
    assert_same(tensors, sd, what="plain vil seed")
    sd = vil_sd("nxai")
    tensors, doc, _ = convert_ok(save({"state_dict": sd}, "plain_vil_nxai.pt"), "--source", "plain")
    assert doc["flavour"] == "nxai"
    assert_same(tensors, sd, what="plain vil nxai")
    convert_fails(save(sd, "plain_vil_nxai2.pt"), "--flavour", "seed", expect="mlstm.layerscale is missing")
    convert_fails(save(sd, "plain_vil_nxai3.pt"), "--flavour", "paper", expect="not a Vision-LSTM flavour")


@test
def plain_vit5_variants():
    sd = vit5_sd(cls=False, neck=8, grn=True, ls=False, bias=True)
    tensors, doc, _ = convert_ok(save({"model": sd}, "plain_vit5_rc.pt"), "--num-heads", HEADS)
    check_vit5_cfg(doc["config"], has_cls=False, readout="register_concat", neck_dim=8, grn=True,
                   layer_scale=False, bias={"patch_embed": True, "qkv": False, "proj": True, "mlp": True,
                                            "head": True})
    assert_same(tensors, sd, what="plain vit5 register_concat")
    sd = vit5_sd(cls=False, regs=0)
    tensors, doc, _ = convert_ok(save(sd, "plain_vit5_gap.pt"), "--flavour", "paper")
    check_vit5_cfg(doc["config"], has_cls=False, readout="gap", num_registers=0, rope_pairing="adjacent",
                   token_layout="cls_patches_regs", bias={k: False for k in vf.VIT5_BIAS_KEYS})
    assert_same(tensors, sd, what="plain vit5 gap")
    convert_fails(save(sd, "plain_vit5_gap2.pt"), "--flavour", "nxai", expect="not a ViT-5 flavour")
    # a vkvit file is a valid source too (re-conversion, e.g. to f16)
    tensors, doc2, _ = convert_ok(tmp("plain_vit5_gap.pt.vkvit"), "--flavour", "paper", out=tmp("again.vkvit"))
    assert_same(tensors, sd, what="vkvit -> vkvit")


@test
def plain_vit5_with_nvsubq_source():
    sd = vit5_sd()
    tensors, doc, _ = convert_ok(save(sd, "plain_as_nvsubq.pt"), "--source", "nvsubq")
    assert doc["flavour"] == "nvsubq"
    assert_same(tensors, sd, what="unprefixed nvsubq")
    convert_fails(save(sd, "plain_as_nxai.pt"), "--source", "nxai", expect="not --source nxai")


# ---------------------------------------------------------------------------------------------------------------
# resnet: schema, counts and plain ClassificationResNet state_dicts
# ---------------------------------------------------------------------------------------------------------------

RN_RMS = {"type": "rmsnorm", "eps": 1e-6}
RN_ID = {"type": "identity"}


def resnet_doc(seq=True, cond=True, mlp="swiglu", tc=4, pos=True, cond_norm=None, out_norm=None, **over):
    blk = {
        "input_norm": RN_RMS if seq else RN_ID,
        "sequence_mixer": {"type": "attention", "num_heads": 2, "qk_norm": True, "rope": True, "rope_base": 10000.0,
                           "causal": True, "bias": True} if seq else RN_ID,
        "condition_mixer_norm": (cond_norm or {"type": "layernorm", "eps": 1e-5, "bias": True}) if cond else RN_ID,
        "condition_mixer": {"type": "attention", "num_heads": 2, "qk_norm": False, "causal": True} if cond else RN_ID,
        "mlp_norm": RN_RMS if mlp else RN_ID,
        "mlp": {"type": "mlp", "activation": mlp, "hidden": 24, "bias": False} if mlp else RN_ID,
    }
    cfg = {"image_size": [IMG, IMG], "patch_size": 4, "in_chans": 3, "dim": 32, "depth": 2, "pos_embed": pos,
           "block": blk, "condition_tokens": tc if cond else 0, "condition_dim": 32 if cond else 0,
           "readout": "gap", "out_norm": out_norm or RN_RMS, "bias": {"patch_embed": True, "head": False},
           "num_classes": NCLS}
    cfg.update(over)
    cfg = json.loads(json.dumps(cfg))                                         # no shared norm dicts
    return {"format_version": 1, "architecture": "resnet", "flavour": "generic", "name": "rn", "config": cfg,
            "preprocess": {"image_size": list(cfg["image_size"]), "resize_shorter": max(cfg["image_size"]),
                           "interpolation": "bicubic", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}


def resnet_sd(doc):
    return {k: rand(*v) for k, v in vf.expected_tensors(doc).items()}


@test
def flops_resnet_derived_formula():
    doc = resnet_doc()
    T, C, Tc, Hd = 4, 32, 4, 24                                               # 8x8 image, patch 4
    seq = 2 * T * C * 3 * C + 4 * T * T * C + 2 * T * C * C
    cond = 2 * T * C * C + 4 * Tc * C * C + 4 * T * Tc * C + 2 * T * C * C
    mlp = 2 * T * C * 2 * Hd + T * 2 * Hd + 2 * T * Hd * C                      # swiglu: gf 2
    block = 3 * T * C + seq + 5 * T * C + cond + 3 * T * C + mlp
    want = 2 * 3 * C * 16 * T + T * C + 2 * block + T * C + 3 * C + 2 * C * NCLS
    fb = vf.flops_breakdown(doc)
    assert fb["sequence_mixer_per_block"] == seq and fb["condition_mixer_per_block"] == cond, fb
    assert fb["block"] == block and fb["total"] == want, f"{fb['total']:,} != {want:,}"
    # global condition: Tc = 1
    g = vf.flops_breakdown(resnet_doc(tc=0))
    assert g["condition_mixer_per_block"] == 2 * T * C * C + 4 * C * C + 4 * T * C + 2 * T * C * C
    assert vf.count_params(doc) == sum(t.numel() for t in resnet_sd(doc).values())


@test
def schema_rejects_inconsistent_resnet():
    def bad(mutate, *expect):
        doc = resnet_doc()
        mutate(doc["config"])
        raises(lambda: vf.expected_tensors(doc), *expect)

    blk = "block"
    bad(lambda c: c[blk].update(sequence_mixer=RN_ID), "config.block.sequence_mixer is identity",
        "config.block.input_norm must be identity too")
    bad(lambda c: c[blk].update(mlp=RN_ID), "config.block.mlp_norm must be identity too")
    bad(lambda c: c[blk].update(condition_mixer=RN_ID, condition_mixer_norm=RN_ID),
        "config.condition_tokens 4 and config.condition_dim 32 must be 0")
    bad(lambda c: c.update(condition_dim=16), "config.condition_dim 16 must equal config.dim 32")
    bad(lambda c: c.update(condition_tokens=-1), "config.condition_tokens must be an integer >= 0")
    bad(lambda c: c.update(spatial=2), "config has an unknown key 'spatial'")
    bad(lambda c: c[blk]["sequence_mixer"].update(rope_pairing="split_half"),
        "config.block.sequence_mixer has an unknown key 'rope_pairing'")
    bad(lambda c: c[blk]["condition_mixer"].update(num_heads=3), "config.block.condition_mixer.num_heads 3")
    bad(lambda c: c[blk]["sequence_mixer"].update(num_heads=16), "config.block.sequence_mixer.rope")
    bad(lambda c: c[blk]["mlp"].update(activation="tanh"), "config.block.mlp.activation")
    bad(lambda c: c[blk]["mlp_norm"].update(type="batchnorm"), "config.block.mlp_norm.type")
    bad(lambda c: c.update(readout="cls"), "config.readout")
    bad(lambda c: c.update(image_size=[8, 6]), "not divisible")
    bad(lambda c: c[blk].pop("mlp"), "config.block is missing the key 'mlp'")
    # the converse of the identity rule is allowed
    doc = resnet_doc()
    doc["config"]["block"]["input_norm"] = RN_ID
    assert "blocks.0.input_norm.weight" not in vf.expected_tensors(doc)


@test
def plain_resnet_all_branches():
    doc = resnet_doc()
    sd = resnet_sd(doc)
    flags = ["--num-heads", 2, "--activation", "swiglu", "--rope", "--qk-norm", "--causal", "--condition-causal",
             "--condition-tokens", 4]
    tensors, got, out = convert_ok(save({"state_dict": sd}, "plain_resnet.pt"), "--source", "plain", *flags)
    assert got["architecture"] == "resnet" and got["flavour"] == "generic"
    assert got["config"] == doc["config"], f"inferred {json.dumps(got['config'])}"
    assert_same(tensors, sd, what="plain resnet")
    assert "ClassificationResNet" in out and "condition [B, 4, 32]" in out, out
    # a global condition, and a vkvit resnet file as the source (re-conversion to bf16)
    tensors, got, _ = convert_ok(tmp("plain_resnet.pt.vkvit"), *flags[:-2], "--dtype", "bf16", out=tmp("rn16.vkvit"))
    assert got["config"]["condition_tokens"] == 0
    assert_same(tensors, sd, dtype=torch.bfloat16, what="resnet bf16")


@test
def plain_resnet_flags_that_cannot_be_inferred():
    doc = resnet_doc()
    src = save(resnet_sd(doc), "plain_resnet_flags.pt")
    convert_fails(src, "--activation", "swiglu", expect="pass --num-heads N")
    convert_fails(src, "--num-heads", 2, expect=["MLP activation cannot be inferred", "glu or swiglu"])
    convert_fails(src, "--num-heads", 2, "--activation", "gelu", expect="does not fit blocks.0.mlp.layer1.weight")
    convert_fails(src, "--num-heads", 3, "--activation", "glu", expect="num_heads 3 does not divide config.dim 32")
    convert_fails(src, "--num-heads", 2, "--activation", "glu", "--flavour", "paper",
                  expect="not a resnet flavour")
    convert_fails(src, "--num-heads", 2, "--activation", "glu", "--preset", "vit5_small",
                  expect="is a vit5 preset but the checkpoint is a resnet model")


@test
def plain_resnet_mlp_only_without_pos_embed():
    doc = resnet_doc(seq=False, cond=False, mlp="gelu", pos=False, out_norm=RN_ID)
    sd = resnet_sd(doc)
    src = save(sd, "plain_resnet_mlp.pt")
    convert_fails(src, "--activation", "gelu", expect="pass --image-size H W")
    convert_fails(src, "--activation", "gelu", "--condition-tokens", 2, "--image-size", IMG, IMG,
                  expect="has no condition mixer")
    tensors, got, _ = convert_ok(src, "--activation", "gelu", "--image-size", IMG, IMG)
    assert got["config"] == doc["config"], f"inferred {json.dumps(got['config'])}"
    assert_same(tensors, sd, what="mlp-only resnet")


@test
def plain_resnet_layernorm_without_bias_needs_norm_flag():
    ln = {"type": "layernorm", "eps": 1e-5, "bias": False}
    doc = resnet_doc(seq=False, mlp="relu", cond_norm=ln, tc=0)
    doc["config"]["block"]["mlp_norm"] = dict(ln)
    doc["config"]["out_norm"] = dict(ln)
    sd = resnet_sd(doc)
    tensors, got, _ = convert_ok(save(sd, "plain_resnet_ln.pt"), "--num-heads", 2, "--activation", "relu",
                                 "--norm", "layernorm", "--condition-causal")
    assert got["config"] == doc["config"], f"inferred {json.dumps(got['config'])}"
    tensors, got, _ = convert_ok(tmp("plain_resnet_ln.pt"), "--num-heads", 2, "--activation", "relu",
                                 "--condition-causal", out=tmp("rn_rms.vkvit"))
    assert got["config"]["out_norm"] == RN_RMS, "weight-only norms default to rmsnorm"


@test
def nvsubq_prefixed_resnet():
    doc = resnet_doc(tc=0)
    sd = resnet_sd(doc)
    tensors, got, _ = convert_ok(save(lightning_ckpt(sd), "nvsubq_resnet.ckpt"), "--num-heads", 2, "--activation",
                                 "swiglu", "--rope", "--qk-norm", "--causal", "--condition-causal")
    assert got["architecture"] == "resnet" and got["config"] == doc["config"]
    assert_same(tensors, sd, what="nvsubq resnet")


@test
def resnet_goldens_read_back():
    gdir = os.path.join(ROOT, "tests", "golden", "models")
    files = sorted(f for f in os.listdir(gdir) if f.startswith("resnet_") and f.endswith(".vkvit")) \
        if os.path.isdir(gdir) else []
    for f in files:
        tensors, doc = vf.read_model(os.path.join(gdir, f))
        io_t, _ = vf.read_safetensors(os.path.join(gdir, f.replace(".vkvit", ".io.safetensors")))
        c = doc["config"]
        has_cond = c["block"]["condition_mixer"]["type"] != "identity"
        assert ("condition" in io_t) == has_cond, f"{f}: condition tensor presence"
        if has_cond:
            B = io_t["input"].shape[0]
            want = (B, c["dim"]) if c["condition_tokens"] == 0 else (B, c["condition_tokens"], c["dim"])
            assert tuple(io_t["condition"].shape) == want, f"{f}: condition {tuple(io_t['condition'].shape)}"


# ---------------------------------------------------------------------------------------------------------------
# Bad input files
# ---------------------------------------------------------------------------------------------------------------


@test
def not_a_checkpoint():
    with open(tmp("text.pth"), "w") as f:
        f.write("hello, I am not a checkpoint\n")
    convert_fails(tmp("text.pth"), expect="is not a PyTorch checkpoint")
    with open(tmp("empty.pth"), "wb"):
        pass
    convert_fails(tmp("empty.pth"), expect="is not a PyTorch checkpoint")
    with open(tmp("junk.pth"), "wb") as f:
        f.write(bytes(range(256)) * 8)
    convert_fails(tmp("junk.pth"), expect="is not a PyTorch checkpoint")
    convert_fails(tmp("nothing-here.pth"), expect="does not exist")
    convert_fails(TMP, expect="is a directory")
    convert_fails(save([1, 2, 3], "list.pth"), expect="not a checkpoint dict")
    convert_fails(save({"epoch": 3, "lr": 0.1}, "nodict.pth"), expect="has no weights")
    convert_fails(save({"state_dict": {"foo.weight": torch.zeros(2)}}, "unknown.pth"),
                  expect="cannot recognise the checkpoint layout")
    convert_fails(save({"model": {"blocks.0.attn.qkv.weight": 3}}, "nontensor.pth"), expect="not a tensor")
    good = vit5_sd()
    good["blocks.0.input_norm.weight"] = torch.zeros(C, dtype=torch.int64)
    convert_fails(save(good, "inttensor.pt"), "--num-heads", HEADS, expect="blocks.0.input_norm.weight has dtype")
    convert_fails(raw_file("bad.safetensors", good_header(), bytes(20)), expect="not a valid safetensors file")
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), tmp("scripted.pt"))
    convert_fails(tmp("scripted.pt"), expect="TorchScript archive")


@test
def restricted_unpickler_stubs_unknown_classes():
    # A class the converter cannot import must become an inert stub, never be imported or executed.
    class_src = tmp("opaque_mod.py")
    with open(class_src, "w") as f:
        f.write("class Boom:\n    def __reduce__(self):\n        return (print, ('UNPICKLED CODE RAN',))\n")
    sys.path.insert(0, TMP)
    try:
        import opaque_mod
        sd = vit5_sd()
        ck = lightning_ckpt(sd)
        ck["hyper_parameters"]["boom"] = opaque_mod.Boom()
        ck["hyper_parameters"]["set"] = {("tuple", 1), frozenset([2])}
        src = save(ck, "boom.ckpt")
        legacy = tmp("boom_legacy.ckpt")
        torch.save(ck, legacy, _use_new_zipfile_serialization=False)
    finally:
        sys.path.remove(TMP)
        sys.modules.pop("opaque_mod", None)
    for path in (src, legacy):
        tensors, _, out = convert_ok(path, out=tmp("boom.vkvit"))
        assert "UNPICKLED CODE RAN" not in out, "print() from the checkpoint was executed"
        assert_same(tensors, sd, what=os.path.basename(path))
    obj, doc = convert.load_source(src)
    assert doc is None
    assert type(obj["hyper_parameters"]["thing"]).__name__ == "Opaque"
    assert isinstance(obj["hyper_parameters"]["thing"], convert._Stub)
    assert obj["hyper_parameters"]["args"].lr == 1e-3


@test
def cli_subprocess():
    sd = vit5_sd()
    src = save(lightning_ckpt(sd), "cli.ckpt")
    out = tmp("cli.vkvit")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "convert.py"), src, "-o", out],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, f"CLI conversion failed: {r.stderr}"
    assert "parameters" in r.stdout and "wrote" in r.stdout
    tensors, doc = vf.read_model(out)
    assert_same(tensors, sd, what="CLI")
    with open(tmp("cli_bad.pth"), "wb") as f:
        f.write(b"PK\x03\x04 truncated zip")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "convert.py"), tmp("cli_bad.pth"), "-o", out],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, f"exit {r.returncode}"
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ---------------------------------------------------------------------------------------------------------------
# Issue 16 items 2, 20, 21, 23, 24, 25: upstream names, activations, re-conversion, paper size, pre-processing
# ---------------------------------------------------------------------------------------------------------------

GOLDEN = os.path.join(ROOT, "tests", "golden", "models")
CLI = os.path.join(os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build")), "vkvit")


def vkvit_run(model, io_path):
    """The logits `vkvit run` computes for io_path's `input` (validation on), or None without a CLI / device."""
    if not os.path.exists(CLI):
        print(f"note: {CLI} is not built; `vkvit run` checks skipped")
        return None
    out = tmp("run_out.safetensors")
    env = dict(os.environ, VKVIT_VALIDATION="1", VKVIT_CACHE_DIR="")
    r = subprocess.run([CLI, "run", "--model", model, "--input", io_path, "--output", out], capture_output=True,
                       text=True, env=env, timeout=600)
    if r.returncode == 3:
        print(f"note: no Vulkan device; `vkvit run` checks skipped ({r.stderr.strip()})")
        return None
    assert r.returncode == 0 and "warning" not in r.stderr, f"vkvit run {model}: exit {r.returncode}: {r.stderr}"
    tensors, _ = vf.read_safetensors(out)
    return tensors["logits"]


def check_logits(model, golden_name):
    io_path = os.path.join(GOLDEN, golden_name + ".io.safetensors")
    got = vkvit_run(model, io_path)
    if got is None:
        return
    want = vf.read_safetensors(io_path)[0]["logits"]
    err = ((got - want).abs().max() / want.abs().max()).item()
    assert err < 1e-4, f"{os.path.basename(model)}: logits differ from golden {golden_name} by {err:.3g} (relative)"


@test
def nvsubq_register_neck_upstream_name():
    """Item 20: upstream's register_concat layer is `register_neck`; the golden model, renamed the upstream way and
    wrapped in a Lightning checkpoint, converts back to the same tensors and config and gives the golden logits."""
    gt, gdoc = vf.read_model(os.path.join(GOLDEN, "vit5_nvsubq_regconcat_r9.vkvit"))
    assert "neck.weight" in gt and gdoc["config"]["readout"] == "register_concat"
    up = {("register_neck.weight" if k == "neck.weight" else k): v for k, v in gt.items()}
    src = save(lightning_ckpt(up), "register_neck.ckpt")
    out = tmp("register_neck.vkvit")
    tensors, doc, _ = convert_ok(src, "--num-heads", gdoc["config"]["num_heads"], out=out)
    assert_same(tensors, gt, what="register_neck")
    assert doc["config"] == gdoc["config"], f"config differs: {doc['config']} vs {gdoc['config']}"
    check_logits(out, "vit5_nvsubq_regconcat_r9")
    both = dict(up, **{"neck.weight": up["register_neck.weight"]})
    convert_fails(save(lightning_ckpt(both), "both_necks.ckpt"), "--num-heads", 2,
                  expect="both register_neck.weight and neck.weight")
    biased = dict(up, **{"register_neck.bias": torch.zeros(up["register_neck.weight"].shape[0])})
    convert_fails(save(lightning_ckpt(biased), "neck_bias.ckpt"), "--num-heads", 2,
                  expect="register_neck.bias exists")


@test
def vit5_activations_other_than_gelu_refused():
    """Item 21: the runtime's vit5 has GELU only (config.mlp_activation accepts "gelu"): --activation relu / silu
    and gated MLPs are refused with a sentence instead of being written as GELU or failing on a shape."""
    src = save(lightning_ckpt(vit5_sd()), "act.ckpt")
    for act in ("relu", "silu"):
        convert_fails(src, "--activation", act, expect=[f"--activation {act}", "GELU MLPs only"])
    convert_fails(src, "--activation", "swiglu", expect="SwiGLU MLPs are not supported for vit5")
    convert_fails(src, "--activation", "glu", expect="GLU MLPs are not supported for vit5")
    _, doc, so = convert_ok(src, "--activation", "gelu")
    assert doc["config"]["mlp_activation"] == "gelu"
    _, _, so = convert_ok(src)
    assert "GELU only" in so, f"the default conversion does not say the activation is assumed: {so}"
    swiglu = vit5_sd()
    for i in range(DEPTH):
        swiglu[f"blocks.{i}.mlp.layer1.weight"] = rand(2 * MLP, C)
    convert_fails(save(lightning_ckpt(swiglu), "swiglu.ckpt"), expect="SwiGLU MLPs are not supported for vit5")
    convert_fails(save(swiglu, "swiglu_plain.pt"), expect="SwiGLU MLPs are not supported for vit5")


@test
def reconvert_keeps_labels_and_preprocess():
    """Item 23: re-converting a vkvit file carries its labels, pre-processing, name, flavour and config over."""
    src = save(lightning_ckpt(vit5_sd()), "reconv.ckpt")
    labels = tmp("reconv_labels.txt")
    with open(labels, "w") as f:
        f.write("".join(f"thing {i}\n" for i in range(NCLS)))
    first = tmp("reconv_a.vkvit")
    _, doc_a, _ = convert_ok(src, "--labels", labels, "--name", "tiny", "--mean", 0.5, 0.4, 0.3, "--std", 0.2,
                             0.25, 0.3, "--resize", 10, "--interpolation", "bilinear", out=first)
    tensors_b, doc_b, so = convert_ok(first, "--dtype", "f16", out=tmp("reconv_b.vkvit"))
    for key in ("labels", "preprocess", "name", "flavour", "architecture", "config"):
        assert doc_b.get(key) == doc_a.get(key), f"re-conversion changed {key}: {doc_a.get(key)} -> {doc_b.get(key)}"
    assert "labels from the source model file" in so, so
    # Options still override what is carried.
    _, doc_c, _ = convert_ok(first, "--mean", 0.1, 0.1, 0.1, "--name", "other", out=tmp("reconv_c.vkvit"))
    assert doc_c["preprocess"]["mean"] == [0.1, 0.1, 0.1] and doc_c["preprocess"]["std"] == [0.2, 0.25, 0.3]
    assert doc_c["name"] == "other" and doc_c["labels"] == doc_a["labels"]
    # A paper-flavour golden keeps its flavour (a plain re-inference would make it nvsubq) and its logits.
    out = tmp("reconv_paper.vkvit")
    gt, gdoc = vf.read_model(os.path.join(GOLDEN, "vit5_paper_cls_r4.vkvit"))
    tensors, doc, _ = convert_ok(os.path.join(GOLDEN, "vit5_paper_cls_r4.vkvit"), out=out)
    assert doc["flavour"] == "paper" and doc["config"] == gdoc["config"] and doc.get("labels") == gdoc.get("labels")
    assert_same(tensors, gt, what="re-converted paper golden")
    check_logits(out, "vit5_paper_cls_r4")
    # A config option re-infers the config, still with the labels and pre-processing of the source.
    _, doc_d, _ = convert_ok(first, "--num-heads", HEADS, out=tmp("reconv_d.vkvit"))
    assert doc_d["labels"] == doc_a["labels"] and doc_d["preprocess"] == doc_a["preprocess"]


@test
def nxai_vil_inner_dim_is_twice_dim():
    """Item 22: the official ViL uses inner_dim = 2*dim; at dim 80 that is 160, not ceil(160/64)*64 = 192. The
    converter infers 160 from proj_up, and the model format (tools/vkvit_file.py, src/arch/vil.c) accepts it
    for the nxai flavour; the C reader loads the result (vkvit inspect)."""
    global D_VIL, E_VIL
    saved = D_VIL, E_VIL
    D_VIL, E_VIL = 80, 160
    try:
        sd = vil_sd("nxai")
    finally:
        D_VIL, E_VIL = saved
    src = save(to_nxai_raw(sd), "nxai_d80.pth")
    rc, so, se = run_convert([src, "-o", tmp("nxai_d80.vkvit")])
    assert rc == 0, se
    _, doc = vf.read_model(tmp("nxai_d80.vkvit"))
    assert doc["config"]["inner_dim"] == 160 and doc["flavour"] == "nxai", doc["config"]
    r = subprocess.run([CLI, "inspect", tmp("nxai_d80.vkvit")], capture_output=True, text=True)
    assert r.returncode == 0 and "160" in r.stdout, r.stdout + r.stderr


@test
def paper_runs_only_at_its_square_size():
    """Item 24: the paper model builds its grid square; another --image-size would reinterpret pos_embed."""
    src = save({"model": to_paper(vit5_sd(bias=True))}, "paper_size.pth")
    convert_fails(src, "--image-size", 4, 16, expect=["--image-size 4 16", "square build size (2x2 patches"])
    _, doc, _ = convert_ok(src, "--image-size", IMG, IMG)
    assert doc["config"]["image_size"] == [IMG, IMG]
    convert_fails(save(vit5_sd(bias=True), "paper_plain_size.pt"), "--flavour", "paper", "--image-size", 4, 16,
                  expect="square build size")


@test
def preprocess_options_and_usage_errors():
    """Item 25: --mean, --std, --crop-pct, --interpolation, --resize; bad values are usage errors (exit 1); every
    option has help text. Item 2: the help and output cite the repository's docs, not SPEC.md."""
    src = save(lightning_ckpt(vit5_sd()), "pre.ckpt")
    _, doc, so = convert_ok(src, "--mean", 0.5, 0.5, 0.5, "--std", 0.25, 0.5, 1, "--crop-pct", 0.875,
                            "--interpolation", "bilinear")
    assert doc["preprocess"] == {"image_size": [IMG, IMG], "resize_shorter": 9, "interpolation": "bilinear",
                                 "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.5, 1.0]}, doc["preprocess"]
    assert "resize shorter side to 9 (bilinear)" in so and "mean [0.5, 0.5, 0.5]" in so, so
    _, doc, _ = convert_ok(src, "--resize", 12)
    assert doc["preprocess"]["resize_shorter"] == 12 and doc["preprocess"]["mean"] == [0.485, 0.456, 0.406]
    for extra, expect in ((["--resize", 4], "--resize 4 is smaller than the input size 8x8"),
                          (["--std", 0, 1, 1], "--std values must be greater than 0"),
                          (["--crop-pct", 1.5], "--crop-pct must be in (0, 1]"),
                          (["--mean", "nan", 0, 0], "--mean values must be finite"),
                          (["--resize", 10, "--crop-pct", 0.9], "not allowed with argument"),
                          (["--interpolation", "nearest"], "invalid choice"),
                          (["--frobnicate"], "unrecognized arguments")):
        convert_fails(src, *extra, expect=expect, status=1)
    rc, so, se = run_convert([src])
    assert rc == 1 and "-o/--output" in se, f"missing -o: exit {rc}: {se}"
    undocumented = [a.option_strings or [a.dest] for a in convert.build_parser()._actions if not a.help]
    assert not undocumented, f"options without help text: {undocumented}"
    rc, help_text, _ = run_convert(["--help"])
    assert rc == 0 and "docs/model-format.md" in help_text and "SPEC.md" not in help_text, "help cites SPEC.md"
    assert "SPEC.md" not in so, f"conversion output cites SPEC.md: {so}"
    assert os.path.exists(os.path.join(ROOT, "docs", "convert.md")), "docs/convert.md, cited by --help, is missing"


# ---------------------------------------------------------------------------------------------------------------


def main():
    passed = failed = 0
    for fn in TESTS:
        try:
            fn()
            passed += 1
        except Exception as e:  # report every failure, keep going
            failed += 1
            where = traceback.extract_tb(e.__traceback__)[-1]
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e} (line {where.lineno})")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    try:
        rc = main()
    finally:
        import shutil

        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(rc)
