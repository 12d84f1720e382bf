# SPDX-License-Identifier: Apache-2.0
"""ViT-5 reference: RoPE tables, ViT5Attention (seed 001), ViT5ResidualBlock (seed 000), ViT5ClassificationNet.

docs/math.md sections 1, 2, 5, 6 and 9; tensor names and config keys of docs/model-format.md (`vit5`).
Two flavours share this code:
* nvsubq: tokens ``[patches, CLS, regs]``, split-half-per-axis RoPE pairing (c <-> c + dk/4, docs/math.md 1.4),
  no biases;
* paper:  tokens ``[CLS, patches, regs]``, adjacent RoPE pairing (2i <-> 2i+1, docs/math.md 6.1), biases per config.
"""

import math

import torch
import torch.nn as nn

from common import GRN, MLP, DropPath, LayerScale, RMSNorm, param_count

ROPE_PAIRINGS = ("split_half", "adjacent")
TOKEN_LAYOUTS = ("patches_cls_regs", "cls_patches_regs")
READOUTS = ("cls", "gap", "register_concat")


def instantiate(cfg):
    """Stand-in for the seeds' LazyConfig: a module is used as is, a callable is called, None stays None."""
    if cfg is None or isinstance(cfg, nn.Module):
        return cfg
    return cfg()


# ------------------------------------------------------------------------------------------------------------------
# RoPE (docs/math.md 1.4)
# ------------------------------------------------------------------------------------------------------------------

def rope_theta(axis_dim: int, base: float) -> torch.Tensor:
    """fp32 frequencies of one axis with ``axis_dim`` channels: ``1 / base^(arange(0, axis_dim, 2) / axis_dim)``.

    Upstream's exact op sequence (docs/math.md 1.4): fp32 division, fp32 pow, fp32 reciprocal. For a 2-D head of dk
    channels ``axis_dim = dh = dk/2`` and there are ``dk/4`` frequencies. Returns ``(axis_dim/2,)`` float32.
    """
    exponent = torch.arange(0, axis_dim, 2, dtype=torch.int64).float() / axis_dim   # fp32 division
    return 1.0 / (float(base) ** exponent)                                          # fp32 pow, fp32 reciprocal


def rope_axis_angles(positions: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Angles of one axis: ``(T,)`` fp32 positions x ``(nf,)`` fp32 theta -> ``(T, 2*nf)`` fp32.

    The product is formed in fp32 and the frequencies are interleaved-repeated (theta0, theta0, theta1, theta1, ...),
    so local channel ``cl`` uses ``theta[cl >> 1]``.
    """
    angles = positions.float()[:, None] * theta.float()[None, :]          # (T, nf), fp32 product
    return angles.repeat_interleave(2, dim=1)                             # (T, 2*nf)


def cos_sin_from_angles(angles: torch.Tensor):
    """cos / sin of fp32 angles evaluated in float64 (libm, via ``math``) and rounded to fp32 (docs/math.md 1.4).

    ``math.cos`` rather than a vectorised torch kernel so the tables are bit-identical on every CPU and equal to
    what a C host computing ``(float)cos((double)a)`` gets.
    """
    flat = angles.double().flatten().tolist()
    cos = torch.tensor([math.cos(a) for a in flat], dtype=torch.float64).float().reshape(angles.shape)
    sin = torch.tensor([math.sin(a) for a in flat], dtype=torch.float64).float().reshape(angles.shape)
    return cos, sin


def vit5_token_positions(num_patches_h: int, num_patches_w: int, num_registers: int, has_cls: bool,
                         token_layout: str = "patches_cls_regs"):
    """Per-token RoPE descriptor ``(kind, pos_y, pos_x)`` in sequence order (docs/math.md 1.2, 1.4, 6.2).

    kind is ``"patch"`` (row-major grid position, base rope_base), ``"cls"`` (identity rotation) or ``"reg"``
    (``floor(sqrt R)`` x ``floor(sqrt R)`` grid, row-major, base reg_rope_base).
    """
    if token_layout not in TOKEN_LAYOUTS:
        raise ValueError(f"unknown token_layout {token_layout!r}; expected one of {TOKEN_LAYOUTS}")
    patches = [("patch", t // num_patches_w, t % num_patches_w) for t in range(num_patches_h * num_patches_w)]
    cls = [("cls", 0, 0)] if has_cls else []
    reg_w = int(math.isqrt(num_registers))
    regs = [("reg", r // reg_w, r % reg_w) for r in range(reg_w * reg_w)]
    return (patches + cls + regs) if token_layout == "patches_cls_regs" else (cls + patches + regs)


def build_vit5_rope_tables(head_dim: int, num_patches_h: int, num_patches_w: int, num_registers: int,
                           has_cls: bool, rope_base: float = 10000.0, reg_rope_base: float = 100.0,
                           token_layout: str = "patches_cls_regs"):
    """The ``[T, dk]`` fp32 cos and sin tables of ViT5Attention (docs/math.md 1.4, bit-for-bit recipe).

    Channel layout of a head: ``[Y-half (dk/2) | X-half (dk/2)]``; inside a half, channel ``cl`` uses
    ``theta[cl >> 1]``. Patches use ``rope_base``, registers ``reg_rope_base``, CLS is the identity (cos 1, sin 0).
    The same table serves both pairings (docs/math.md 6.1). Returns ``(cos, sin)``, each ``(T, dk)`` float32.
    """
    if head_dim % 4 != 0:
        raise ValueError(f"head_dim {head_dim} must be a multiple of 4 for 2-D RoPE")
    half = head_dim // 2
    tokens = vit5_token_positions(num_patches_h, num_patches_w, num_registers, has_cls, token_layout)
    pos_y = torch.tensor([float(y) for _, y, _ in tokens])                    # (T,) fp32
    pos_x = torch.tensor([float(x) for _, _, x in tokens])                    # (T,) fp32
    is_reg = torch.tensor([kind == "reg" for kind, _, _ in tokens])           # (T,)
    is_cls = torch.tensor([kind == "cls" for kind, _, _ in tokens])           # (T,)

    angles = torch.empty(len(tokens), head_dim, dtype=torch.float32)
    for base, rows in ((rope_base, ~is_reg), (reg_rope_base, is_reg)):
        theta = rope_theta(half, base)                                        # (dk/4,)
        ay = rope_axis_angles(pos_y[rows], theta)                             # (n, dk/2)
        ax = rope_axis_angles(pos_x[rows], theta)                             # (n, dk/2)
        angles[rows] = torch.cat([ay, ax], dim=1)
    cos, sin = cos_sin_from_angles(angles)                                    # (T, dk) each
    cos[is_cls] = 1.0
    sin[is_cls] = 0.0
    return cos, sin


def rotate_split_half(x: torch.Tensor, num_axes: int = 2) -> torch.Tensor:
    """nvsubq ``_rotate_half_per_axis`` generalised to ``num_axes`` equal channel parts (docs/math.md 1.4).

    Inside each part of ``da`` channels: ``rot[c] = -x[c + da/2]`` for the first half, ``+x[c - da/2]`` for the
    second. For 2-D heads ``da = dk/2`` and the partner is ``c + dk/4``.
    """
    shape = x.shape
    parts = x.reshape(*shape[:-1], num_axes, shape[-1] // num_axes)           # (..., n, da)
    first, second = parts.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1).reshape(shape)


def rotate_adjacent(x: torch.Tensor) -> torch.Tensor:
    """Paper/EVA ``rotate_half``: pairs (2i, 2i+1), ``rot[2i] = -x[2i+1]``, ``rot[2i+1] = x[2i]`` (docs/math.md 6.1)."""
    pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    return torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).reshape(x.shape)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str) -> torch.Tensor:
    """``y = x * cos + rot(x) * sin``; cos/sin broadcast against x (docs/math.md 1.3 step 3)."""
    if pairing == "split_half":
        rot = rotate_split_half(x, 2)
    elif pairing == "adjacent":
        rot = rotate_adjacent(x)
    else:
        raise ValueError(f"unknown rope_pairing {pairing!r}; expected one of {ROPE_PAIRINGS}")
    return x * cos + rot * sin


def softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
                      mask: torch.Tensor = None) -> torch.Tensor:
    """Explicit ``softmax(scale * q k^T) v`` on ``(B, H, T, dk)`` tensors (torch 1.13 has no SDPA).

    ``mask`` is a boolean ``(Tq, Tk)`` of allowed positions.
    """
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale                  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)                  # (B, H, Tq, dv)


# ------------------------------------------------------------------------------------------------------------------
# ViT5Attention (seed 001, docs/math.md 1)
# ------------------------------------------------------------------------------------------------------------------

class ViT5Attention(nn.Module):
    """ViT-5 multi-head self-attention: fused QKV, QK RMSNorm BEFORE RoPE, register-aware 2-D RoPE, scale dk^-0.5.

    Seed 001's constructor plus ``rope_pairing`` (``split_half`` | ``adjacent``) and ``token_layout``
    (``patches_cls_regs`` | ``cls_patches_regs``). ``qk_norm``: None/False (off), True (``RMSNorm(dk, qk_norm_eps)``)
    or a callable ``f(head_dim) -> module``. R must be 0 or a perfect square (docs/math.md 9.2: rejected at construction
    here, where upstream fails at the first forward). Keys: ``qkv.weight [3C, C]`` (+ ``qkv.bias``),
    ``proj.weight [C, C]`` (+ ``proj.bias``), ``q_norm.weight [dk]``, ``k_norm.weight [dk]``.
    """

    accepts_conditioning = False   # forward(x) has no `conditioning` argument (docs/math.md 2.2, 9.3)

    def __init__(self, hidden_dim: int, num_heads: int, num_patches_h: int, num_patches_w: int,
                 num_registers: int = 4, has_cls: bool = True, qk_norm=None, rope_base: float = 10000.0,
                 reg_rope_base: float = 100.0, attn_dropout: float = 0.0, proj_dropout: float = 0.0,
                 qkv_bias: bool = False, out_proj_bias: bool = False, scale: float = None,
                 rope_pairing: str = "split_half", token_layout: str = "patches_cls_regs",
                 qk_norm_eps: float = 1e-6):
        super().__init__()
        assert hidden_dim % num_heads == 0, f"hidden_dim {hidden_dim} not divisible by num_heads {num_heads}"
        if num_registers < 0 or math.isqrt(num_registers) ** 2 != num_registers:
            raise ValueError(f"num_registers {num_registers} must be 0 or a perfect square (SPEC 9.2)")
        if rope_pairing not in ROPE_PAIRINGS:
            raise ValueError(f"unknown rope_pairing {rope_pairing!r}; expected one of {ROPE_PAIRINGS}")
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.scale = self.head_dim ** -0.5 if scale is None else scale
        self.num_patches_h, self.num_patches_w = num_patches_h, num_patches_w
        self.num_registers = num_registers
        self.has_cls = has_cls
        self.rope_base, self.reg_rope_base = rope_base, reg_rope_base
        self.rope_pairing = rope_pairing
        self.token_layout = token_layout
        self.attn_dropout = attn_dropout

        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim, bias=qkv_bias)
        self.proj = nn.Linear(hidden_dim, hidden_dim, bias=out_proj_bias)
        self.proj_drop = nn.Dropout(proj_dropout) if proj_dropout > 0 else nn.Identity()
        self.qk_norm = bool(qk_norm)
        if self.qk_norm:
            make = (lambda dk: RMSNorm(dk, qk_norm_eps)) if qk_norm is True else qk_norm
            self.q_norm = make(self.head_dim)
            self.k_norm = make(self.head_dim)

        cos, sin = build_vit5_rope_tables(self.head_dim, num_patches_h, num_patches_w, num_registers, has_cls,
                                          rope_base, reg_rope_base, token_layout)
        self.register_buffer("rope_cos", cos, persistent=False)   # (T, dk)
        self.register_buffer("rope_sin", sin, persistent=False)   # (T, dk)

    @property
    def num_tokens(self) -> int:
        return self.num_patches_h * self.num_patches_w + int(self.has_cls) + self.num_registers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        H, dk = self.num_heads, self.head_dim
        qkv = self.qkv(x).reshape(B, T, 3, H, dk)                              # channel o = s*C + h*dk + d
        q, k, v = qkv.unbind(dim=2)                                            # (B, T, H, dk) each
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)                              # RMSNorm over dk, BEFORE RoPE
        cos = self.rope_cos.to(x.dtype)[None, :, None, :]                      # (1, T, 1, dk)
        sin = self.rope_sin.to(x.dtype)[None, :, None, :]
        q = apply_rope(q, cos, sin, self.rope_pairing)
        k = apply_rope(k, cos, sin, self.rope_pairing)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                       # (B, H, T, dk)
        if self.training and self.attn_dropout > 0:
            raise NotImplementedError("attention dropout is training-only; the reference runs in eval mode")
        o = softmax_attention(q, k, v, self.scale)                             # (B, H, T, dk)
        o = o.transpose(1, 2).reshape(B, T, C)                                 # channel h*dk + d
        return self.proj_drop(self.proj(o))                                    # (B, T, C)

    def flop_count(self, num_tokens: int, inference: bool = False) -> int:
        """Seed 001 / docs/math.md 1.6: ``8TD^2 + 4T^2 D + 4TD + q_norm(T) + k_norm(T)``.

        The QK norms report ``3*T*dk`` each, the literal upstream undercount by H (docs/math.md 8, 9.8).
        """
        t, d = num_tokens, self.hidden_dim
        qk = self.q_norm.flop_count(t) + self.k_norm.flop_count(t) if self.qk_norm else 0
        return 8 * t * d * d + 4 * t * t * d + 4 * t * d + qk


# ------------------------------------------------------------------------------------------------------------------
# ViT5ResidualBlock (seed 000, docs/math.md 2)
# ------------------------------------------------------------------------------------------------------------------

class ViT5ResidualBlock(nn.Module):
    """Two-branch pre-norm block with LayerScale, shared DropPath, optional GRN and register pooling (docs/math.md 2.2).

    ``*_cfg`` arguments are modules or zero-argument callables (LazyConfig stand-ins). Register pooling needs a
    mixer that accepts ``conditioning=`` (``accepts_conditioning``); with ViT5Attention it raises (docs/math.md 9.3).
    Keys: ``input_norm.*``, ``sequence_mixer.*``, ``grn.gamma/beta``, ``mlp_norm.*``, ``mlp.*``, ``ls_attn.gamma``,
    ``ls_mlp.gamma``, ``register_pooling.*``.
    """

    def __init__(self, sequence_mixer_cfg, sequence_mixer_norm_cfg, mlp_cfg, mlp_norm_cfg, hidden_dim: int,
                 layer_scale_init: float = 1e-4, drop_path_rate: float = 0.0, register_pooling_cfg=None,
                 num_registers: int = 0, register_start_idx: int = 1, grn_cfg=None):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.input_norm = instantiate(sequence_mixer_norm_cfg)
        self.sequence_mixer = instantiate(sequence_mixer_cfg)
        self.grn = instantiate(grn_cfg)
        self.mlp_norm = instantiate(mlp_norm_cfg)
        self.mlp = instantiate(mlp_cfg)
        use_ls = layer_scale_init > 0
        self.ls_attn = LayerScale(hidden_dim, layer_scale_init) if use_ls else nn.Identity()
        self.ls_mlp = LayerScale(hidden_dim, layer_scale_init) if use_ls else nn.Identity()
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate > 0 else nn.Identity()
        self.register_pooling = None
        self.num_registers = num_registers
        self.register_start_idx = register_start_idx
        if register_pooling_cfg is not None and num_registers > 0:
            if not getattr(self.sequence_mixer, "accepts_conditioning", False):
                raise TypeError(f"register pooling needs a sequence mixer that accepts `conditioning`; "
                                f"{type(self.sequence_mixer).__name__} does not (SPEC 9.3)")
            self.register_pooling = instantiate(register_pooling_cfg)

    def forward(self, x: torch.Tensor, condition=None) -> torch.Tensor:
        """``x (B, T, C) -> (B, T, C)``; ``condition`` is accepted and ignored (docs/math.md 2.2)."""
        xn = self.input_norm(x)                                                 # (B, T, C)
        if self.register_pooling is not None:
            s, r = self.register_start_idx, self.num_registers
            cond = self.register_pooling(xn[:, s:s + r, :])                     # normalised registers -> (B, C')
            y = self.sequence_mixer(xn, conditioning=cond)
        else:
            y = self.sequence_mixer(xn)
        if self.grn is not None:
            y = self.grn(y)
        x = x + self.drop_path(self.ls_attn(y))
        x = x + self.drop_path(self.ls_mlp(self.mlp(self.mlp_norm(x))))
        return x

    def flop_count(self, num_tokens: int, inference: bool = False) -> int:
        """Seed 000 / docs/math.md 2.7: the sum of the sub-module counts; residual adds and DropPath excluded."""
        t = num_tokens
        total = self.input_norm.flop_count(t)
        if self.register_pooling is not None:
            total += self.register_pooling.flop_count(self.input_norm.weight.shape[0])
        total += self.sequence_mixer.flop_count(t, inference)
        if self.grn is not None:
            total += self.grn.flop_count(t)
        for ls in (self.ls_attn, self.ls_mlp):
            if isinstance(ls, LayerScale):
                total += ls.flop_count(t)
        total += self.mlp_norm.flop_count(t) + self.mlp.flop_count(t)
        return total


# ------------------------------------------------------------------------------------------------------------------
# ViT5ClassificationNet (docs/math.md 5, docs/model-format.md `vit5`)
# ------------------------------------------------------------------------------------------------------------------

VIT5_CONFIG_KEYS = ("image_size", "patch_size", "in_chans", "dim", "depth", "num_heads", "mlp_hidden",
                    "mlp_activation", "num_registers", "has_cls", "readout", "neck_dim", "qk_norm", "norm_eps",
                    "qk_norm_eps", "rope_base", "reg_rope_base", "rope_pairing", "token_layout", "layer_scale",
                    "grn", "bias", "num_classes")
VIT5_BIAS_KEYS = ("patch_embed", "qkv", "proj", "mlp", "head")
VIT5_FLAVOURS = {"nvsubq": ("split_half", "patches_cls_regs"), "paper": ("adjacent", "cls_patches_regs")}


def unwrap_config(cfg: dict, architecture: str, flavours: dict):
    """Accept either the inner ``config`` dict or the whole ``vkvit`` metadata document; check flavour rules."""
    if "config" in cfg:
        if cfg.get("architecture") != architecture:
            raise ValueError(f"architecture {cfg.get('architecture')!r} is not {architecture!r}")
        if cfg.get("flavour") not in flavours:
            raise ValueError(f"unknown {architecture} flavour {cfg.get('flavour')!r}")
        return cfg["config"], cfg["flavour"]
    return cfg, None


class ViT5ClassificationNet(nn.Module):
    """ViT-5 classifier on channels-last ``[B, H, W, 3]`` normalised images (docs/math.md 5.1).

    patch embed -> + pos_embed (patches only) -> token layout -> blocks -> readout (cls / gap / register_concat)
    -> ``out_norm`` (RMSNorm AFTER readout) -> ``out_proj``. State-dict keys = docs/model-format.md `vit5` table.
    """

    def __init__(self, image_size=(224, 224), patch_size=16, in_chans=3, dim=384, depth=12, num_heads=6,
                 mlp_hidden=1536, mlp_activation="gelu", num_registers=4, has_cls=True, readout="cls", neck_dim=0,
                 qk_norm=True, norm_eps=1e-6, qk_norm_eps=1e-6, rope_base=10000.0, reg_rope_base=100.0,
                 rope_pairing="split_half", token_layout="patches_cls_regs", layer_scale=True, grn=False,
                 bias=None, num_classes=1000, layer_scale_init=1e-4):
        super().__init__()
        bias = dict.fromkeys(VIT5_BIAS_KEYS, False) if bias is None else dict(bias)
        img_h, img_w = image_size
        if img_h % patch_size or img_w % patch_size:
            raise ValueError(f"image_size {image_size} not divisible by patch_size {patch_size}")
        if readout not in READOUTS:
            raise ValueError(f"unknown readout {readout!r}; expected one of {READOUTS}")
        if readout == "cls" and not has_cls:
            raise ValueError("readout 'cls' needs has_cls")
        if readout == "register_concat" and (num_registers == 0 or neck_dim <= 0):
            raise ValueError("readout 'register_concat' needs num_registers > 0 and neck_dim > 0")
        if (dim // num_heads) % 4:
            raise ValueError(f"head dim {dim // num_heads} must be a multiple of 4")
        self.grid = (img_h // patch_size, img_w // patch_size)
        hp, wp = self.grid
        self.num_patches = hp * wp
        self.dim, self.patch_size, self.in_chans = dim, patch_size, in_chans
        self.num_registers, self.has_cls, self.readout = num_registers, has_cls, readout
        self.neck_dim = neck_dim if readout == "register_concat" else 0
        self.token_layout = token_layout
        self.num_tokens = self.num_patches + int(has_cls) + num_registers

        self.patch_embed = nn.Conv2d(in_chans, dim, patch_size, stride=patch_size, bias=bias["patch_embed"])
        self.pos_embed = nn.Parameter(torch.zeros(1, self.num_patches, dim))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim)) if has_cls else None
        self.reg_token = nn.Parameter(torch.zeros(1, num_registers, dim)) if num_registers > 0 else None

        def make_block():
            return ViT5ResidualBlock(
                sequence_mixer_cfg=ViT5Attention(
                    dim, num_heads, hp, wp, num_registers=num_registers, has_cls=has_cls, qk_norm=qk_norm,
                    rope_base=rope_base, reg_rope_base=reg_rope_base, qkv_bias=bias["qkv"],
                    out_proj_bias=bias["proj"], rope_pairing=rope_pairing, token_layout=token_layout,
                    qk_norm_eps=qk_norm_eps),
                sequence_mixer_norm_cfg=RMSNorm(dim, norm_eps),
                mlp_cfg=MLP(dim, mlp_activation, bias=bias["mlp"], hidden_dim=mlp_hidden),
                mlp_norm_cfg=RMSNorm(dim, norm_eps),
                hidden_dim=dim,
                layer_scale_init=layer_scale_init if layer_scale else 0.0,
                grn_cfg=GRN(dim) if grn else None)

        self.blocks = nn.ModuleList([make_block() for _ in range(depth)])
        self.neck = nn.Linear(dim, neck_dim, bias=False) if readout == "register_concat" else None
        self.head_in = num_registers * neck_dim if readout == "register_concat" else dim
        self.out_norm = RMSNorm(self.head_in, norm_eps)
        self.out_proj = nn.Linear(self.head_in, num_classes, bias=bias["head"])

    @classmethod
    def from_config(cls, cfg: dict) -> "ViT5ClassificationNet":
        """Build from the `vit5` ``config`` dict of docs/model-format.md (or the whole ``vkvit`` document)."""
        config, flavour = unwrap_config(cfg, "vit5", VIT5_FLAVOURS)
        missing = [k for k in VIT5_CONFIG_KEYS if k not in config]
        unknown = [k for k in config if k not in VIT5_CONFIG_KEYS]
        if missing or unknown:
            raise ValueError(f"vit5 config: missing keys {missing}, unknown keys {unknown}")
        if sorted(config["bias"]) != sorted(VIT5_BIAS_KEYS):
            raise ValueError(f"vit5 config: bias must have exactly the keys {VIT5_BIAS_KEYS}")
        if flavour is not None and VIT5_FLAVOURS[flavour] != (config["rope_pairing"], config["token_layout"]):
            raise ValueError(f"flavour {flavour} needs rope_pairing/token_layout {VIT5_FLAVOURS[flavour]}")
        return cls(**{k: (tuple(v) if k == "image_size" else v) for k, v in config.items()})

    # Token index ranges of the layout (docs/math.md 1.2 and 6.2).
    def patch_slice(self) -> slice:
        start = int(self.has_cls) if self.token_layout == "cls_patches_regs" else 0
        return slice(start, start + self.num_patches)

    def cls_index(self) -> int:
        return 0 if self.token_layout == "cls_patches_regs" else self.num_patches

    def register_slice(self) -> slice:
        start = self.num_patches + int(self.has_cls)
        return slice(start, start + self.num_registers)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        B = img.shape[0]
        x = self.patch_embed(img.permute(0, 3, 1, 2))                          # (B, C, Hp, Wp)
        x = x.flatten(2).transpose(1, 2) + self.pos_embed                      # (B, Np, C), t = py*Wp + px
        cls = [self.cls_token.expand(B, -1, -1)] if self.has_cls else []
        regs = [self.reg_token.expand(B, -1, -1)] if self.num_registers else []
        parts = [x] + cls + regs if self.token_layout == "patches_cls_regs" else cls + [x] + regs
        x = torch.cat(parts, dim=1)                                            # (B, T, C)
        for block in self.blocks:
            x = block(x)
        if self.readout == "cls":
            v = x[:, self.cls_index()]                                         # (B, C)
        elif self.readout == "gap":
            v = x[:, self.patch_slice()].mean(dim=1)                           # (B, C), patches only
        else:
            v = self.neck(x[:, self.register_slice()]).flatten(1)              # (B, R*neck)
        return self.out_proj(self.out_norm(v))                                 # (B, classes)

    def forward_tokens(self, img: torch.Tensor) -> dict:
        """The final tokens (vkvit_session_get_tokens; include/vkvit.h): out_norm on every token for the CLS and GAP
        readouts (timm's forward_features), the last block's output as is for register_concat (its out_norm is
        R*neck_dim wide). {"patches": (B, Hp, Wp, C), "cls": (B, C) if has_cls, "registers": (B, R, C) if R}."""
        B = img.shape[0]
        x = self.patch_embed(img.permute(0, 3, 1, 2))
        hp, wp = x.shape[2], x.shape[3]
        x = x.flatten(2).transpose(1, 2) + self.pos_embed
        cls = [self.cls_token.expand(B, -1, -1)] if self.has_cls else []
        regs = [self.reg_token.expand(B, -1, -1)] if self.num_registers else []
        parts = [x] + cls + regs if self.token_layout == "patches_cls_regs" else cls + [x] + regs
        x = torch.cat(parts, dim=1)
        for block in self.blocks:
            x = block(x)
        if self.readout != "register_concat":
            x = self.out_norm(x)
        out = {"patches": x[:, self.patch_slice()].reshape(B, hp, wp, -1)}
        if self.has_cls:
            out["cls"] = x[:, self.cls_index()]
        if self.num_registers:
            out["registers"] = x[:, self.register_slice()]
        return out

    def flop_count(self, inference: bool = True) -> int:
        """docs/math.md 8, one sample: patch embed + pos add + blocks + out_norm(1) + readout extras + head."""
        d, np_ = self.dim, self.num_patches
        total = 2 * self.in_chans * d * self.patch_size ** 2 * np_ + np_ * d
        total += sum(b.flop_count(self.num_tokens, inference) for b in self.blocks)
        total += self.out_norm.flop_count(1)
        if self.readout == "gap":
            total += np_ * d
        elif self.readout == "register_concat":
            total += self.num_registers * 2 * d * self.neck_dim
        return total + 2 * self.head_in * self.out_proj.out_features

    def param_count(self) -> int:
        return param_count(self)
