# SPDX-License-Identifier: Apache-2.0
"""Self-checks of the vkvit PyTorch reference against docs/math.md. One line per check; exit 0 only if all pass.

    /usr/bin/python3 tools/reference/selfcheck.py

Checks: chunkwise mLSTM == parallel form (float64, both numerics, several gate regimes); RoPE theta tables,
CLS identity rows and register positions (docs/math.md 1.4); pairing norm behaviour (docs/math.md 6.1, Appendix A);
FLOP and parameter counts (docs/math.md 5.2, 8); state_dict keys == docs/model-format.md tables; seed contract
details (ViT5 register pooling rejected, ResidualBlock identity assertion, QKVConditionMixer ndim errors, gate
floor); resnet (ClassificationResNet) state_dict == the `resnet` table, counts == tools/vkvit_file.py, identity
bypass, condition shapes, the one-way identity rule and the other config rules as load-time errors.
"""

import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))   # tools/, for vkvit_file

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import flops  # noqa: E402
from common import GRN, MLP, RMSNorm, RegisterPooling  # noqa: E402
from generic import (Attention, ClassificationResNet, QKVConditionMixer, QKVSequenceMixer,  # noqa: E402
                     ResidualBlock, build_grid_rope_tables)
from mlstm import (VisionLSTM, mLSTMCell, mlstm_chunkwise, mlstm_parallel_official,  # noqa: E402
                   mlstm_parallel_seed, seed_log_input_gate)
from vit5 import (ViT5Attention, ViT5ClassificationNet, ViT5ResidualBlock, apply_rope,  # noqa: E402
                  build_vit5_rope_tables, rope_theta, vit5_token_positions)

RESULTS = []


def check(name: str, ok: bool, detail: str = "") -> None:
    RESULTS.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}  {name}{': ' + detail if detail else ''}", flush=True)


def run(name: str, fn) -> None:
    """Run one check function; an exception is a failure with its message."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - a crashing check must fail, not abort the others
        check(name, False, f"raised {type(e).__name__}: {e}")
        traceback.print_exc(limit=3)


# ------------------------------------------------------------------------------------------------------------------
# mLSTM: chunkwise == parallel (docs/math.md 7.3, Appendix B)
# ------------------------------------------------------------------------------------------------------------------

GATE_REGIMES = {
    # name: (ipre mean, ipre std, fpre mean, fpre std, force one ipre above the fp32 exp overflow 88.72)
    "typical i~N(0,1) f~N(3,1)": (0.0, 1.0, 3.0, 1.0, False),
    "large input gates i~N(20,5), one i>88.7": (20.0, 5.0, 3.0, 1.0, True),
    "-10 clamp active i~N(-12,0.5)": (-12.0, 0.5, 3.0, 1.0, False),
    "strong forgetting f~N(-5,2)": (0.0, 1.0, -5.0, 2.0, False),
}


def scan_inputs(rng, S, regime):
    im, isd, fm, fsd, overflow = GATE_REGIMES[regime]
    B, NH, DH, DV = 2, 2, 6, 5
    q, k = (torch.from_numpy(rng.standard_normal((B, NH, S, DH))) for _ in range(2))
    v = torch.from_numpy(rng.standard_normal((B, NH, S, DV)))
    ipre = torch.from_numpy(rng.normal(im, isd, (B, NH, S)))
    fpre = torch.from_numpy(rng.normal(fm, fsd, (B, NH, S)))
    if overflow:
        ipre[:, :, S // 2] = 95.0
    return q, k, v, ipre, fpre


def check_chunkwise():
    rng = np.random.default_rng(7)
    for numerics, parallel in (("seed", mlstm_parallel_seed), ("nxai", mlstm_parallel_official)):
        for regime in GATE_REGIMES:
            worst_abs, worst_scaled, largest = 0.0, 0.0, 0.0
            for S in (1, 7, 37, 64, 100):
                q, k, v, ipre, fpre = scan_inputs(rng, S, regime)
                ref = parallel(q, k, v, ipre, fpre)
                assert torch.isfinite(ref).all(), "parallel form not finite"
                largest = max(largest, ref.abs().max().item())
                for L in (1, 4, 8, 16, 64):
                    diff = (mlstm_chunkwise(q, k, v, ipre, fpre, L, numerics) - ref).abs()
                    worst_abs = max(worst_abs, diff.max().item())
                    worst_scaled = max(worst_scaled, (diff / ref.abs().clamp(min=1.0)).max().item())
            # |h| stays O(1) for the seed (normaliser floor max(N~, e^m)); the official floor max(|N~|, 1) lets
            # |h| reach hundreds with large input gates, so the bound is on |diff| / max(1, |h|).
            check(f"mLSTM chunkwise == parallel [{numerics}] {regime}", worst_scaled <= 1e-12,
                  f"S in {{1,7,37,64,100}} x L in {{1,4,8,16,64}}, float64: max |diff| {worst_abs:.1e}, "
                  f"max |diff|/max(1,|h|) {worst_scaled:.1e} (<= 1e-12), max |h| {largest:.3g}")


def check_seed_gate_floor():
    """docs/math.md 9.11: max(ipre, ln 1e-6) equals the seed's log(max(exp(ipre), 1e-6)) wherever that is finite."""
    ipre = torch.linspace(-40, 80, 2001, dtype=torch.float64)
    literal = torch.log(torch.exp(ipre).clamp(min=1e-6))
    diff = (seed_log_input_gate(ipre) - literal).abs().max().item()
    big = seed_log_input_gate(torch.tensor([95.0], dtype=torch.float32))
    check("seed input-gate floor max(ipre, ln 1e-6) == log(max(exp(ipre), 1e-6))",
          diff <= 1e-13 and torch.isfinite(big).all().item(),
          f"max |diff| {diff:.1e} on [-40, 80] (float64); ipre=95 in fp32 -> {big.item():.1f} (finite)")


def check_cell_chunkwise():
    """A whole cell (gates from real projections) with chunk_size equals the parallel cell, both numerics."""
    rng = np.random.default_rng(11)
    x = torch.from_numpy(rng.standard_normal((2, 37, 32)))
    for numerics in ("seed", "nxai"):
        torch.manual_seed(0)
        cell = mLSTMCell(32, numerics=numerics).double().eval()
        with torch.no_grad():
            for reverse in (False, True):
                ref = cell(x, reverse)
                worst = 0.0
                for L in (1, 5, 16, 64):
                    cell.chunk_size = L
                    worst = max(worst, (cell(x, reverse) - ref).abs().max().item())
                cell.chunk_size = None
                check(f"mLSTMCell chunkwise == parallel [{numerics}, reverse={reverse}]", worst <= 1e-12,
                      f"max |diff| {worst:.2e}")


# ------------------------------------------------------------------------------------------------------------------
# RoPE (docs/math.md 1.4, 6.1, Appendix A)
# ------------------------------------------------------------------------------------------------------------------

SPEC_THETA = {
    10000.0: [1, 0.562341, 0.316228, 0.177828, 0.1, 0.0562341, 0.0316228, 0.0177828, 0.01, 0.00562341,
              0.00316228, 0.00177828, 0.001, 0.000562341, 0.000316228, 0.000177828],
    100.0: [1, 0.749894, 0.562341, 0.421697, 0.316228, 0.237137, 0.177828, 0.133352, 0.1, 0.0749894,
            0.0562341, 0.0421696, 0.0316228, 0.0237137, 0.0177828, 0.0133352],
}


def check_theta():
    for base, listed in SPEC_THETA.items():
        theta = rope_theta(32, base)                          # dk = 64 -> dh = 32 channels per axis
        worst = 0.0
        for t, v in zip(theta.tolist(), listed):
            unit = 10.0 ** (math.floor(math.log10(v)) - 5)      # one unit in the 6th significant digit
            worst = max(worst, abs(t - v) / unit)
        ok = theta.dtype == torch.float32 and len(listed) == theta.numel() and worst <= 1.0
        check(f"RoPE theta base {base:g}, dk=64 matches SPEC 1.4", ok,
              f"{theta.numel()} fp32 values, worst |diff| {worst:.2f} units of the 6th significant digit")


def check_rope_rows():
    for layout, cls_row in (("patches_cls_regs", 14 * 14), ("cls_patches_regs", 0)):
        cos, sin = build_vit5_rope_tables(64, 14, 14, 4, True, token_layout=layout)
        ok = bool((cos[cls_row] == 1).all() and (sin[cls_row] == 0).all()) and cos.shape == (201, 64)
        check(f"RoPE CLS row {cls_row} is the identity ({layout})", ok, f"table {tuple(cos.shape)}")
    tokens = vit5_token_positions(14, 14, 4, True)
    regs = [(y, x) for kind, y, x in tokens if kind == "reg"]
    cos, sin = build_vit5_rope_tables(64, 14, 14, 4, True)
    theta = rope_theta(32, 100.0).double()
    reg1 = torch.cat([torch.zeros(32, dtype=torch.float64), theta.repeat_interleave(2)])   # reg1 = (0, 1)
    ok = regs == [(0, 0), (0, 1), (1, 0), (1, 1)] and bool((cos[197] == 1).all()) and \
        torch.allclose(cos[198].double(), reg1.cos(), atol=1e-7)
    check("RoPE R=4 register grid (0,0),(0,1),(1,0),(1,1), base 100", ok, f"positions {regs}")
    y, x = tokens[3 * 14 + 7][1:]
    check("RoPE patch t = py*Wp + px (row-major)", (y, x) == (3, 7), f"token 49 -> (y={y}, x={x})")
    grid_cos, grid_sin = build_grid_rope_tables((3, 5), 32, 10000.0)
    vit_cos, vit_sin = build_vit5_rope_tables(32, 3, 5, 0, False)
    check("generic 2-D grid RoPE tables == ViT5 patch tables (same recipe, SPEC 3.2)",
          torch.equal(grid_cos, vit_cos) and torch.equal(grid_sin, vit_sin), "3x5 grid, dk 32, bitwise")


def check_pairings():
    rng = np.random.default_rng(3)
    vec = torch.from_numpy(rng.standard_normal(64))
    cos, sin = build_vit5_rope_tables(64, 14, 14, 0, False)
    t = 8 * 14 + 8                                              # position (8, 8)
    ratios = {}
    for pairing in ("adjacent", "split_half"):
        y = apply_rope(vec, cos[t].double(), sin[t].double(), pairing)
        ratios[pairing] = (y.norm() / vec.norm()).item()
    worst_adj = 0.0
    for t in range(196):
        for _ in range(2):
            v = torch.from_numpy(rng.standard_normal(64))
            y = apply_rope(v, cos[t].double(), sin[t].double(), "adjacent")
            worst_adj = max(worst_adj, abs((y.norm() / v.norm()).item() - 1))
    check("paper (adjacent) pairing preserves norms on all 196 positions", worst_adj <= 1e-6,
          f"max | |y|/|x| - 1 | = {worst_adj:.1e}")
    check("nvsubq (split_half) pairing is not a rotation", abs(ratios["split_half"] - 1) > 1e-3,
          f"|y|/|x| at (8,8) = {ratios['split_half']:.4f} (adjacent {ratios['adjacent']:.6f})")


# ------------------------------------------------------------------------------------------------------------------
# FLOPs and parameters (docs/math.md 5.2, 8)
# ------------------------------------------------------------------------------------------------------------------

def check_flops():
    b = flops.vit5_breakdown(flops.VIT5_S_NVSUBQ)
    check("ViT-5-S/16 attention FLOPs per block", b["attention_per_block"] == 299_551_104,
          f"{b['attention_per_block']:,} (SPEC 299,551,104)")
    check("ViT-5-S/16 block FLOPs", b["block"] == 774_695_808, f"{b['block']:,} (SPEC 774,695,808)")
    check("ViT-5-S/16 network FLOPs", b["total"] == 9_412_799_616, f"{b['total']:,} (SPEC 9,412,799,616)")
    check("ViT-5-S nvsubq parameters ~ 22.010 M", round(b["params"] / 1e6, 3) == 22.010,
          f"{b['params']:,} (SPEC 5.2: 22.010 M)")
    total_b = flops.vit5_flops(flops.VIT5_B_NVSUBQ)
    check("ViT-5-B/16 (nvsubq-style) network FLOPs", total_b == 35_896_538_880,
          f"{total_b:,} (SPEC 35,896,538,880)")
    paper = ViT5ClassificationNet.from_config(flops.VIT5_S_PAPER).param_count()
    check("ViT-5-S paper parameters ~ 22.039 M", round(paper / 1e6, 3) == 22.039, f"{paper:,}")
    vil = {n: VisionLSTM.from_config(flops.VIL_S, numerics=n).param_count() for n in ("seed", "nxai")}
    per_block_seed = sum(p.numel() for p in mLSTMCell(384).parameters()) + 384
    check("ViL-S parameters: official 22.79 M, seed block 919,688",
          round(vil["nxai"] / 1e6, 2) == 22.79 and per_block_seed == 919_688,
          f"nxai {vil['nxai']:,}, seed {vil['seed']:,}, seed block {per_block_seed:,}")


# ------------------------------------------------------------------------------------------------------------------
# State-dict keys == docs/model-format.md (an independent transcription of its tables)
# ------------------------------------------------------------------------------------------------------------------

def doc_vit5_table(c):
    C, P, R = c["dim"], c["patch_size"], c["num_registers"]
    dk, hd, b = C // c["num_heads"], c["mlp_hidden"], c["bias"]
    np_ = (c["image_size"][0] // P) * (c["image_size"][1] // P)
    head_in = R * c["neck_dim"] if c["readout"] == "register_concat" else C
    rows = [("patch_embed.weight", (C, c["in_chans"], P, P), True), ("patch_embed.bias", (C,), b["patch_embed"]),
            ("pos_embed", (1, np_, C), True), ("cls_token", (1, 1, C), c["has_cls"]),
            ("reg_token", (1, R, C), R > 0)]
    for i in range(c["depth"]):
        p = f"blocks.{i}."
        rows += [(p + "input_norm.weight", (C,), True), (p + "sequence_mixer.qkv.weight", (3 * C, C), True),
                 (p + "sequence_mixer.qkv.bias", (3 * C,), b["qkv"]),
                 (p + "sequence_mixer.proj.weight", (C, C), True),
                 (p + "sequence_mixer.proj.bias", (C,), b["proj"]),
                 (p + "sequence_mixer.q_norm.weight", (dk,), c["qk_norm"]),
                 (p + "sequence_mixer.k_norm.weight", (dk,), c["qk_norm"]),
                 (p + "grn.gamma", (C,), c["grn"]), (p + "grn.beta", (C,), c["grn"]),
                 (p + "mlp_norm.weight", (C,), True), (p + "mlp.layer1.weight", (hd, C), True),
                 (p + "mlp.layer1.bias", (hd,), b["mlp"]), (p + "mlp.layer2.weight", (C, hd), True),
                 (p + "mlp.layer2.bias", (C,), b["mlp"]), (p + "ls_attn.gamma", (C,), c["layer_scale"]),
                 (p + "ls_mlp.gamma", (C,), c["layer_scale"])]
    rows += [("neck.weight", (c["neck_dim"], C), c["readout"] == "register_concat"),
             ("out_norm.weight", (head_in,), True), ("out_proj.weight", (c["num_classes"], head_in), True),
             ("out_proj.bias", (c["num_classes"],), b["head"])]
    return {name: shape for name, shape, present in rows if present}


def doc_vil_table(c, flavour):
    D, E, P, k = c["dim"], c["inner_dim"], c["patch_size"], c["conv_kernel"]
    NH, NP = c["num_heads"], c["inner_dim"] // c["qkv_block_size"]
    bs = c["qkv_block_size"]
    seed = flavour == "seed"
    rows = [("patch_embed.proj.weight", (D, c["in_chans"], P, P), True), ("patch_embed.proj.bias", (D,), True),
            ("pos_embed.embed", (1, c["image_size"][0] // P, c["image_size"][1] // P, D), True)]
    for i in range(c["depth"]):
        p, m = f"blocks.{i}.", f"blocks.{i}.mlstm."
        rows += [(p + "norm1.weight", (D,), True), (m + "proj_up.weight", (2 * E, D), True),
                 (m + "conv1d.weight", (E, 1, k), True), (m + "conv1d.bias", (E,), True),
                 (m + "q_proj.weight", (NP, bs, bs), True), (m + "k_proj.weight", (NP, bs, bs), True),
                 (m + "v_proj.weight", (NP, bs, bs), True), (m + "igate.weight", (NH, 3 * E), True),
                 (m + "igate.bias", (NH,), True), (m + "fgate.weight", (NH, 3 * E), True),
                 (m + "fgate.bias", (NH,), True), (m + "outnorm.weight", (E,), True),
                 (m + "outnorm.bias", (E,), seed), (m + "proj_down.weight", (D, E), True),
                 (m + "learnable_skip", (E,), True), (m + "layerscale", (E,), seed)]
    rows += [("legacy_norm.weight", (D,), True), ("norm.weight", (D,), True), ("norm.bias", (D,), True),
             ("head.weight", (c["num_classes"], D), True), ("head.bias", (c["num_classes"],), True)]
    return {name: shape for name, shape, present in rows if present}


def small_vit5_configs():
    base = dict(flops.VIT5_S_NVSUBQ, image_size=[32, 48], patch_size=8, dim=64, depth=2, num_heads=2,
                mlp_hidden=128, num_classes=10)
    paper_bias = {"patch_embed": True, "qkv": False, "proj": True, "mlp": True, "head": True}
    return {
        "nvsubq cls R=4": base,
        "nvsubq gap R=0 grn no-cls no-ls": dict(base, num_registers=0, has_cls=False, readout="gap", grn=True,
                                                layer_scale=False, qk_norm=False),
        "nvsubq register_concat R=9": dict(base, num_registers=9, readout="register_concat", neck_dim=16),
        "paper cls R=4 biases": dict(base, rope_pairing="adjacent", token_layout="cls_patches_regs",
                                     bias=paper_bias),
        "paper qkv bias": dict(base, rope_pairing="adjacent", token_layout="cls_patches_regs",
                               bias=dict(paper_bias, qkv=True)),
    }


def compare_keys(name, model, expected):
    got = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(got) & set(expected) if got[k] != tuple(expected[k]))
    check(f"state_dict == docs/model-format.md table: {name}", not (missing or extra or wrong),
          f"{len(got)} tensors" + (f"; missing {missing[:3]} extra {extra[:3]} wrong shape {wrong[:3]}"
                                    if missing or extra or wrong else ""))
    return got


def check_state_dicts():
    try:
        import vkvit_file
    except ImportError:
        vkvit_file = None
    docs = []
    for name, cfg in small_vit5_configs().items():
        model = ViT5ClassificationNet.from_config(cfg)
        got = compare_keys(f"vit5 {name}", model, doc_vit5_table(cfg))
        flavour = "paper" if cfg["token_layout"] == "cls_patches_regs" else "nvsubq"
        docs.append((f"vit5 {name}", got, "vit5", flavour, cfg))
    vil_small = dict(flops.VIL_S, image_size=[32, 48], patch_size=8, dim=32, depth=3, inner_dim=64,
                     num_classes=10)
    for flavour in ("seed", "nxai"):
        for cfg in (vil_small, flops.VIL_S):
            model = VisionLSTM.from_config(cfg, numerics=flavour)
            tag = f"vil {flavour} D={cfg['dim']} depth={cfg['depth']}"
            got = compare_keys(tag, model, doc_vil_table(cfg, flavour))
            docs.append((tag, got, "vil", flavour, cfg))
    if vkvit_file is None:
        check("tools/vkvit_file.py expected_tensors agrees", False, "tools/vkvit_file.py is not importable")
        return
    bad, flop_bad = [], []
    for tag, got, arch, flavour, cfg in docs:
        vkvit = {"format_version": 1, "architecture": arch, "flavour": flavour, "name": tag, "config": cfg,
                 "preprocess": {"image_size": cfg["image_size"], "resize_shorter": max(cfg["image_size"]),
                                "interpolation": "bicubic", "mean": [0.485, 0.456, 0.406],
                                "std": [0.229, 0.224, 0.225]}}
        expected = {k: tuple(v) for k, v in vkvit_file.expected_tensors(vkvit).items()}
        if expected != got:
            bad.append(tag)
        net = ViT5ClassificationNet.from_config(vkvit) if arch == "vit5" else VisionLSTM.from_config(vkvit)
        if vkvit_file.flops(vkvit) != net.flop_count() or vkvit_file.count_params(vkvit) != net.param_count():
            flop_bad.append(f"{tag}: {vkvit_file.flops(vkvit):,} vs {net.flop_count():,}")
    check("tools/vkvit_file.py expected_tensors == reference state_dicts", not bad,
          f"{len(docs)} configs" + (f"; differ: {bad}" if bad else ""))
    check("tools/vkvit_file.py flops() and count_params() == reference flop_count / parameters", not flop_bad,
          f"{len(docs)} configs" + (f"; differ: {flop_bad}" if flop_bad else ""))


# ------------------------------------------------------------------------------------------------------------------
# Seed contract details
# ------------------------------------------------------------------------------------------------------------------

def raises(exc, fn) -> bool:
    try:
        fn()
    except exc:
        return True
    return False


def check_contracts():
    attn = lambda: ViT5Attention(32, 2, 2, 2, num_registers=4, has_cls=True)  # noqa: E731
    block = lambda pool: ViT5ResidualBlock(attn(), RMSNorm(32), MLP(32), RMSNorm(32), 32,  # noqa: E731
                                           register_pooling_cfg=pool, num_registers=4, register_start_idx=5)
    check("ViT5ResidualBlock rejects register pooling with ViT5Attention (SPEC 9.3)",
          raises(TypeError, lambda: block(RegisterPooling(4))) and block(None).register_pooling is None)
    check("ViT5Attention rejects R that is not 0 or a perfect square (SPEC 9.2)",
          raises(ValueError, lambda: ViT5Attention(32, 2, 2, 2, num_registers=5)) and
          ViT5Attention(32, 2, 2, 2, num_registers=0).num_tokens == 5)
    ok_assert = raises(AssertionError, lambda: ResidualBlock(nn.Identity(), RMSNorm(16), None, None, None, None))
    ok_converse = ResidualBlock(QKVSequenceMixer(16, Attention(16, 2)), nn.Identity(), None, None, None, None)
    check("ResidualBlock: mixer Identity => norm Identity asserted, converse allowed",
          ok_assert and ok_converse is not None)
    mixer = QKVConditionMixer(16, Attention(16, 2)).double()
    x3 = torch.zeros(2, 5, 16, dtype=torch.float64)
    ok = raises(ValueError, lambda: mixer(torch.zeros(2, 16, dtype=torch.float64), x3)) and \
        raises(ValueError, lambda: mixer(torch.zeros(2, 3, 4, 16, dtype=torch.float64), x3))
    with torch.no_grad():
        rng = np.random.default_rng(5)
        x = torch.from_numpy(rng.standard_normal((2, 3, 4, 16)))
        cond = torch.from_numpy(rng.standard_normal((2, 16)))
        y = mixer(x, cond)
        expect = mixer.out_proj(mixer.kv_proj(cond)[:, 16:])[:, None, None, :].expand_as(y)
    check("QKVConditionMixer: ndim errors; (B,C) condition -> out_proj(V) at every position",
          ok and torch.allclose(y, expect, atol=1e-12))
    cond_block = ResidualBlock(None, None, QKVConditionMixer(16, Attention(16, 2)), RMSNorm(16), MLP(16),
                               RMSNorm(16))
    check("ResidualBlock requires a condition when the condition branch is active",
          raises(AssertionError, lambda: cond_block(torch.zeros(1, 4, 16), None)))
    grn = GRN(8).double()
    with torch.no_grad():
        grn.gamma.fill_(0.5)
        grn.beta.fill_(0.25)
        x = torch.from_numpy(np.random.default_rng(1).standard_normal((2, 3, 5, 8)))
        g = x.pow(2).sum(dim=(1, 2), keepdim=True).sqrt()
        manual = 0.5 * x * (g / (g.mean(-1, keepdim=True) + 1e-6)) + 0.25 + x
    check("GRN: L2 over all spatial axes, eps on the channel mean (SPEC 2.5)",
          torch.allclose(grn(x), manual, atol=1e-14))


def literal_seed_cell(cell: mLSTMCell, x: torch.Tensor, reverse: bool) -> torch.Tensor:
    """Seed 004 ``mLSTMCell.forward`` transcribed line by line (einops replaced by reshapes), on ``cell``'s weights.

    Only the input-gate floor differs: ``log(exp(i).clamp(1e-6))`` is kept literally here, so inputs must keep
    ipre < 88 (float64 is used anyway)."""
    B, S, D = x.shape
    E, NH, NP = cell.inner_dim, cell.num_heads, cell.num_proj_heads
    if reverse:
        x = x.flip(1)
    up = F.linear(x, cell.proj_up.weight)
    x_mlstm, z = up[..., :E], up[..., E:]
    x_conv = F.conv1d(x_mlstm.transpose(1, 2), cell.conv1d.weight, cell.conv1d.bias, padding=cell.conv_kernel - 1,
                      groups=E)[..., :S].transpose(1, 2)
    x_conv_act = F.silu(x_conv)

    def headwise(t, w):
        return torch.einsum("bsnd,nod->bsno", t.reshape(B, S, NP, -1), w).reshape(B, S, E)

    q, k, v = headwise(x_conv_act, cell.q_proj.weight), headwise(x_conv_act, cell.k_proj.weight), \
        headwise(x_mlstm, cell.v_proj.weight)
    qkv_cat = torch.cat([q, k, v], dim=-1)
    i_gate = F.linear(qkv_cat, cell.igate.weight, cell.igate.bias)
    f_gate = F.linear(qkv_cat, cell.fgate.weight, cell.fgate.bias)
    i_tilde, f_tilde = torch.exp(i_gate), torch.sigmoid(f_gate)
    log_f = torch.log(f_tilde.clamp(min=1e-6))
    q, k, v = (t.reshape(B, S, NH, -1).transpose(1, 2) for t in (q, k, v))
    log_f_cumsum = torch.cumsum(log_f.permute(0, 2, 1), dim=-1)
    log_D = log_f_cumsum.unsqueeze(-1) - log_f_cumsum.unsqueeze(-2)
    causal_mask = torch.tril(torch.ones(S, S, dtype=torch.bool))
    log_D = log_D.masked_fill(~causal_mask, -1e9)
    log_D = log_D + torch.log(i_tilde.permute(0, 2, 1).clamp(min=1e-6)).unsqueeze(-2)
    max_log_D = log_D.max(dim=-1, keepdim=True).values.clamp(min=-10)
    Dm = torch.exp(log_D - max_log_D).masked_fill(~causal_mask, 0.0)
    attn = torch.matmul(q / math.sqrt(cell.head_dim), k.transpose(-1, -2)) * Dm
    attn = attn / attn.sum(dim=-1, keepdim=True).clamp(min=1.0)
    h = torch.matmul(attn, v).transpose(1, 2).reshape(B, S, E)
    h = F.group_norm(h.transpose(1, 2), NP, cell.outnorm.weight, cell.outnorm.bias, 1e-5).transpose(1, 2)
    out = F.linear((h + cell.learnable_skip * x_conv_act) * F.silu(z), cell.proj_down.weight)
    out = out * cell.layerscale[:D]
    return out.flip(1) if reverse else out


def check_literal_seed_cell():
    rng = np.random.default_rng(13)
    torch.manual_seed(1)
    cell = mLSTMCell(32).double().eval()
    with torch.no_grad():
        for p in cell.parameters():
            p.add_(torch.from_numpy(rng.normal(0, 0.2, tuple(p.shape))))
        x = torch.from_numpy(rng.standard_normal((2, 29, 32)))
        worst = max((cell(x, r) - literal_seed_cell(cell, x, r)).abs().max().item() for r in (False, True))
    check("mLSTMCell(numerics='seed') == seed 004 forward transcribed literally", worst <= 1e-12,
          f"max |diff| {worst:.1e} (forward and reverse, float64)")


def spec_pseudocode_attention(attn: ViT5Attention, x: torch.Tensor) -> torch.Tensor:
    """docs/math.md 1.5 per-element pseudo-code (one image at a time, explicit partner index), for either pairing."""
    T, C = x.shape[1], attn.hidden_dim
    H, dk = attn.num_heads, attn.head_dim
    dh, dq = dk // 2, dk // 4
    cos, sin = attn.rope_cos.double(), attn.rope_sin.double()

    def partner(c):          # (partner channel, sign)
        if attn.rope_pairing == "split_half":
            return (c + dq, -1.0) if (c % dh) < dq else (c - dq, 1.0)
        return (c + 1, -1.0) if c % 2 == 0 else (c - 1, 1.0)

    outs = []
    for xb in x:
        qkv = xb @ attn.qkv.weight.T + (attn.qkv.bias if attn.qkv.bias is not None else 0)
        o = torch.zeros(T, C, dtype=x.dtype)
        for h in range(H):
            heads = []
            for s in range(2):
                t_ = qkv[:, s * C + h * dk: s * C + (h + 1) * dk]
                if attn.qk_norm:
                    w = (attn.q_norm if s == 0 else attn.k_norm).weight
                    t_ = t_ * torch.rsqrt((t_ * t_).mean(-1, keepdim=True) + 1e-6) * w
                rot = torch.stack([sgn * t_[:, p] for p, sgn in map(partner, range(dk))], dim=1)
                heads.append(t_ * cos + rot * sin)
            v = qkv[:, 2 * C + h * dk: 2 * C + (h + 1) * dk]
            s_ = attn.scale * heads[0] @ heads[1].T
            p_ = torch.exp(s_ - s_.max(-1, keepdim=True).values)
            o[:, h * dk:(h + 1) * dk] = (p_ @ v) / p_.sum(-1, keepdim=True)
        outs.append(o @ attn.proj.weight.T + (attn.proj.bias if attn.proj.bias is not None else 0))
    return torch.stack(outs)


def check_spec_pseudocode():
    rng = np.random.default_rng(17)
    for pairing, layout, qkn, bias in (("split_half", "patches_cls_regs", True, False),
                                       ("adjacent", "cls_patches_regs", False, True)):
        attn = ViT5Attention(64, 2, 3, 5, num_registers=4, qk_norm=qkn, rope_pairing=pairing, token_layout=layout,
                             qkv_bias=bias, out_proj_bias=bias).double()
        with torch.no_grad():
            for name, p in attn.named_parameters():
                mean = 1.0 if "norm" in name else 0.0                      # q_norm / k_norm weights near 1
                p.copy_(torch.from_numpy(rng.normal(mean, 0.2, tuple(p.shape))))
            x = torch.from_numpy(rng.standard_normal((2, attn.num_tokens, 64)))
            diff = (attn(x) - spec_pseudocode_attention(attn, x)).abs().max().item()
        check(f"ViT5Attention == SPEC 1.5 per-element pseudo-code ({pairing}, qk_norm={qkn}, bias={bias})",
              diff <= 1e-12, f"max |diff| {diff:.1e}")


def check_layout_equivariance():
    """[P, CLS, R] and [CLS, P, R] give the same attention up to the CLS re-indexing (docs/math.md 6.2)."""
    rng = np.random.default_rng(9)
    for pairing in ("split_half", "adjacent"):
        a = ViT5Attention(64, 2, 3, 5, num_registers=4, qk_norm=True, rope_pairing=pairing).double()
        b = ViT5Attention(64, 2, 3, 5, num_registers=4, qk_norm=True, rope_pairing=pairing,
                          token_layout="cls_patches_regs").double()
        b.load_state_dict(a.state_dict())
        x = torch.from_numpy(rng.standard_normal((2, 20, 64)))                # [patches(15), CLS, regs(4)]
        perm = [15] + list(range(15)) + list(range(16, 20))                   # -> [CLS, patches, regs]
        diff = (a(x)[:, perm] - b(x[:, perm])).abs().max().item()
        check(f"ViT5Attention layouts agree up to the CLS move ({pairing})", diff <= 1e-12, f"max |diff| {diff:.1e}")


# ------------------------------------------------------------------------------------------------------------------
# resnet: state_dict == docs/model-format.md table, counts, identity bypass, the load-time rule
# ------------------------------------------------------------------------------------------------------------------

RN_RMS = {"type": "rmsnorm", "eps": 1e-6}
RN_LN = {"type": "layernorm", "eps": 1e-5, "bias": True}
RN_LN_NOBIAS = {"type": "layernorm", "eps": 1e-5, "bias": False}
RN_ID = {"type": "identity"}


def resnet_cfg(seq=True, cond=False, mlp="gelu", norm=RN_RMS, tc=0, pos=True, bias=False, dim=32, depth=2,
               out_norm=RN_RMS, input_norm=None):
    blk = {
        "input_norm": (input_norm or norm) if seq else RN_ID,
        "sequence_mixer": {"type": "attention", "num_heads": 2, "qk_norm": False, "rope": True, "rope_base": 10000.0,
                           "causal": False, "bias": bias} if seq else RN_ID,
        "condition_mixer_norm": norm if cond else RN_ID,
        "condition_mixer": {"type": "attention", "num_heads": 4, "qk_norm": True, "causal": False} if cond else RN_ID,
        "mlp_norm": norm if mlp else RN_ID,
        "mlp": {"type": "mlp", "activation": mlp, "hidden": 48, "bias": bias} if mlp else RN_ID,
    }
    return {"image_size": [16, 8], "patch_size": 4, "in_chans": 3, "dim": dim, "depth": depth, "pos_embed": pos,
            "block": blk, "condition_tokens": tc if cond else 0, "condition_dim": dim if cond else 0,
            "readout": "gap", "out_norm": out_norm, "bias": {"patch_embed": bias, "head": not bias},
            "num_classes": 5}


def doc_resnet_table(c):
    """docs/model-format.md `resnet` tensor table, transcribed independently of tools/vkvit_file.py."""
    C, P, blk = c["dim"], c["patch_size"], c["block"]
    hp, wp = c["image_size"][0] // P, c["image_size"][1] // P

    def norm(name, spec):
        return [(name + ".weight", (C,), spec["type"] != "identity"),
                (name + ".bias", (C,), spec["type"] == "layernorm" and spec["bias"])]
    seq, cond, mlp = (blk[k]["type"] != "identity" for k in ("sequence_mixer", "condition_mixer", "mlp"))
    sb = seq and blk["sequence_mixer"]["bias"]
    mb = mlp and blk["mlp"]["bias"]
    gf = 2 if mlp and blk["mlp"]["activation"] in ("glu", "swiglu") else 1
    hd = blk["mlp"]["hidden"] if mlp else 0
    rows = [("patch_embed.weight", (C, 3, P, P), True), ("patch_embed.bias", (C,), c["bias"]["patch_embed"]),
            ("pos_embed", (1, hp, wp, C), c["pos_embed"])]
    for i in range(c["depth"]):
        p = f"blocks.{i}."
        rows += norm(p + "input_norm", blk["input_norm"])
        rows += [(p + "sequence_mixer.qkv_proj.weight", (3 * C, C), seq), (p + "sequence_mixer.qkv_proj.bias",
                 (3 * C,), sb), (p + "sequence_mixer.out_proj.weight", (C, C), seq),
                 (p + "sequence_mixer.out_proj.bias", (C,), sb)]
        rows += norm(p + "condition_mixer_norm", blk["condition_mixer_norm"])
        rows += [(p + "condition_mixer.kv_proj.weight", (2 * C, C), cond),
                 (p + "condition_mixer.q_proj.weight", (C, C), cond),
                 (p + "condition_mixer.out_proj.weight", (C, C), cond)]
        rows += norm(p + "mlp_norm", blk["mlp_norm"])
        rows += [(p + "mlp.layer1.weight", (gf * hd, C), mlp), (p + "mlp.layer1.bias", (gf * hd,), mb),
                 (p + "mlp.layer2.weight", (C, hd), mlp), (p + "mlp.layer2.bias", (C,), mb)]
    rows += norm("out_norm", c["out_norm"])
    rows += [("out_proj.weight", (c["num_classes"], C), True), ("out_proj.bias", (c["num_classes"],),
             c["bias"]["head"])]
    return {name: shape for name, shape, present in rows if present}


def resnet_doc(cfg, name="resnet"):
    return {"format_version": 1, "architecture": "resnet", "flavour": "generic", "name": name, "config": cfg,
            "preprocess": {"image_size": cfg["image_size"], "resize_shorter": max(cfg["image_size"]),
                           "interpolation": "bicubic", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}


def resnet_configs():
    return {
        "seq only": resnet_cfg(mlp=None),
        "seq+cond global": resnet_cfg(cond=True, mlp=None),
        "cond+mlp Tc=5 layernorm swiglu": resnet_cfg(seq=False, cond=True, tc=5, norm=RN_LN, mlp="swiglu"),
        "mlp only glu no pos biases": resnet_cfg(seq=False, mlp="glu", pos=False, bias=True, out_norm=RN_ID),
        "all three relu LN no bias": resnet_cfg(cond=True, tc=3, mlp="relu", norm=RN_LN_NOBIAS, bias=True),
        "seq identity input norm + silu": resnet_cfg(mlp="silu", input_norm=RN_ID, depth=1, dim=64),
        "all identity": resnet_cfg(seq=False, mlp=None),
    }


def check_resnet():
    import vkvit_file
    bad = []
    for name, cfg in resnet_configs().items():
        net = ClassificationResNet.from_config(resnet_doc(cfg))
        got = compare_keys(f"resnet {name}", net, doc_resnet_table(cfg))
        doc = resnet_doc(cfg, name)
        if {k: tuple(v) for k, v in vkvit_file.expected_tensors(doc).items()} != got:
            bad.append(f"{name}: expected_tensors")
        if vkvit_file.flops(doc) != net.flop_count() or vkvit_file.count_params(doc) != net.param_count():
            bad.append(f"{name}: flops {vkvit_file.flops(doc):,} vs {net.flop_count():,}")
    check("resnet: tools/vkvit_file.py expected_tensors / flops / count_params == reference", not bad,
          f"{len(resnet_configs())} configs" + (f"; differ: {bad}" if bad else ""))

    # Identity bypass: an all-identity network is patch embed + pos + GAP + out_norm + head.
    rng = np.random.default_rng(11)
    net = ClassificationResNet.from_config(resnet_cfg(seq=False, mlp=None)).double()
    img = torch.from_numpy(rng.standard_normal((2, 16, 8, 3)))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape))))
        x = net.patch_embed(img.permute(0, 3, 1, 2)).permute(0, 2, 3, 1) + net.pos_embed
        manual = net.out_proj(net.out_norm(x.mean(dim=(1, 2))))
        diff = (net(img) - manual).abs().max().item()
    check("resnet: identity blocks are bypassed (no residual add, no parameters)",
          diff <= 1e-12 and all(not list(b.parameters()) for b in net.blocks), f"max |diff| {diff:.1e}")

    # Condition handling: (B, C) global vs (B, Tc, C) tokens; Tc = 1 tokens == the global vector.
    cfg_g = resnet_cfg(cond=True, mlp="gelu", tc=0)
    cfg_1 = resnet_cfg(cond=True, mlp="gelu", tc=1)
    ng, n1 = (ClassificationResNet.from_config(c).double() for c in (cfg_g, cfg_1))
    with torch.no_grad():
        for p in ng.parameters():
            p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape))) * 0.2)
        n1.load_state_dict(ng.state_dict())
        cond = torch.from_numpy(rng.standard_normal((2, 32)))
        diff = (ng(img, cond) - n1(img, cond[:, None])).abs().max().item()
    ok_shape = raises(ValueError, lambda: ng(img, cond[:, None])) and raises(ValueError, lambda: ng(img, None))
    check("resnet: condition [B, C] == one token [B, 1, C]; wrong condition shapes rejected",
          diff <= 1e-12 and ok_shape, f"max |diff| {diff:.1e}")

    # The one-way load-time rule, in the schema (FormatError sentence) and in the reference block (assertion).
    sentences = []
    for branch, norm in (("sequence_mixer", "input_norm"), ("condition_mixer", "condition_mixer_norm"),
                         ("mlp", "mlp_norm")):
        cfg = resnet_cfg(mlp="gelu")
        cfg["block"][branch] = RN_ID
        cfg["block"][norm] = RN_RMS
        try:
            vkvit_file.check_resnet_config(cfg)
        except vkvit_file.FormatError as e:
            sentences.append(str(e))
    converse = resnet_cfg(mlp="gelu", input_norm=RN_ID)
    vkvit_file.check_resnet_config(converse)
    check("resnet: mixer identity => norm identity is a load-time error (3 branches), converse allowed",
          len(sentences) == 3 and all("must be identity too" in m for m in sentences), sentences[0] if sentences
          else "no error")
    bad_cfgs = {
        "num_heads": lambda c: c["block"]["sequence_mixer"].update(num_heads=3),
        "condition_dim": lambda c: c.update(condition_dim=16),
        "condition_tokens": lambda c: (c["block"].update(condition_mixer=RN_ID, condition_mixer_norm=RN_ID),
                                       c.update(condition_tokens=4, condition_dim=0)),
        "unknown key 'heads'": lambda c: c["block"]["mlp"].update(heads=2),
        "rope": lambda c: c["block"]["sequence_mixer"].update(num_heads=16),
        "not divisible": lambda c: c.update(image_size=[16, 10]),
    }
    missing = []
    for want, mutate in bad_cfgs.items():
        cfg = resnet_cfg(cond=True, mlp="gelu")
        mutate(cfg)
        try:
            vkvit_file.check_resnet_config(cfg)
            missing.append(f"{want}: accepted")
        except vkvit_file.FormatError as e:
            if want not in str(e):
                missing.append(f"{want}: {e}")
    check("resnet: inconsistent configs rejected with a sentence naming the field", not missing,
          f"{len(bad_cfgs)} cases" + (f"; {missing}" if missing else ""))


def check_golden_models():
    """The committed model goldens reload into the reference (from_config on the vkvit document) and reproduce
    their logits exactly; skipped when tests/golden/models/ is absent."""
    models = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "golden", "models")
    if not os.path.isdir(models):
        print("SKIP  golden model round trip: tests/golden/models/ not generated yet")
        return
    import vkvit_file
    for fname in sorted(f for f in os.listdir(models) if f.endswith(".vkvit")):
        tensors, doc = vkvit_file.read_model(os.path.join(models, fname))
        io, _ = vkvit_file.read_safetensors(os.path.join(models, fname.replace(".vkvit", ".io.safetensors")))
        build = {"vit5": ViT5ClassificationNet, "vil": VisionLSTM, "resnet": ClassificationResNet}
        net = build[doc["architecture"]].from_config(doc)
        net.load_state_dict(tensors, strict=True)
        args = [io["input"].double()] + ([io["condition"].double()] if "condition" in io else [])
        logits = net.double().eval()(*args).float()
        check(f"golden model {fname} reloads and reproduces its logits", torch.equal(logits, io["logits"]),
              f"{doc['architecture']}/{doc['flavour']}, logits {tuple(logits.shape)}")


def main() -> int:
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    for name, fn in (("chunkwise scan", check_chunkwise), ("gate floor", check_seed_gate_floor),
                     ("chunkwise cell", check_cell_chunkwise), ("theta", check_theta),
                     ("rope rows", check_rope_rows), ("pairings", check_pairings), ("flops", check_flops),
                     ("state dicts", check_state_dicts), ("contracts", check_contracts),
                     ("literal seed cell", check_literal_seed_cell), ("SPEC 1.5", check_spec_pseudocode),
                     ("layouts", check_layout_equivariance), ("resnet", check_resnet),
                     ("golden models", check_golden_models)):
        run(name, fn)
    failed = RESULTS.count(False)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    return 0 if failed == 0 and RESULTS else 1


if __name__ == "__main__":
    sys.exit(main())
