# SPDX-License-Identifier: Apache-2.0
"""Generic nvSubquadratic blocks: Attention (inner mixer), QKVSequenceMixer, QKVConditionMixer (seed 003),
ResidualBlock (seed 002), and the conditioned ClassificationResNet built from them (docs/model-format.md `resnet`).
docs/math.md 3, 8, 9.13.

All tensors are channels-last ``(B, *spatial, C)`` with 1 to 3 spatial dims; spatial dims are flattened row-major
into tokens wherever tokens interact.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from common import linear_flop_count
from vit5 import cos_sin_from_angles, instantiate, rope_axis_angles, rope_theta, rotate_split_half, \
    softmax_attention


def build_grid_rope_tables(spatial_shape, head_dim: int, base: float = 10000.0):
    """Single-base split-half RoPE tables over an n-D grid (n = 1, 2, 3), ``(T, dk)`` fp32 each.

    docs/math.md 3.2 says the generic Attention uses "the same table recipe as 1.4, single base"; upstream only has the
    2-D case. The n-D generalisation used here: the head is cut into n equal axis parts of ``da = dk/n``
    channels (axis 0 first); part a uses the grid coordinate along spatial axis a (row-major flattening) and
    ``theta = rope_theta(da, base)`` interleaved-repeated; the rotation partner is ``c +- da/2`` inside each part.
    For n = 2 this is exactly docs/math.md 1.4 (Y-half then X-half, partner c + dk/4). Needs ``dk % (2n) == 0``.
    """
    n = len(spatial_shape)
    if n not in (1, 2, 3) or head_dim % (2 * n):
        raise ValueError(f"grid RoPE needs 1-3 spatial dims and head_dim % (2*ndim) == 0; got {spatial_shape}, "
                         f"head_dim {head_dim}")
    axis_dim = head_dim // n
    theta = rope_theta(axis_dim, base)                                         # (da/2,)
    coords = torch.stack(torch.meshgrid(*[torch.arange(s) for s in spatial_shape], indexing="ij"), dim=-1)
    coords = coords.reshape(-1, n).float()                                     # (T, n), row-major
    angles = torch.cat([rope_axis_angles(coords[:, a], theta) for a in range(n)], dim=1)   # (T, dk)
    return cos_sin_from_angles(angles)


class Attention(nn.Module):
    """nvSubquadratic generic ``modules/attention.Attention`` (docs/math.md 3.2): a parameter-free inner mixer.

    ``forward(q, k, v)`` on channels-last tensors. Heads split as ``(h d)``; optional RoPE FIRST (grid split-half
    recipe, q and k must share a spatial shape); then optional parameter-free L2 norm ``F.normalize(eps=1e-12)``;
    scale exactly 1.0 under ``apply_qk_norm`` else ``dk^-0.5``; optional causal mask over the flattened tokens
    (top-left aligned ``tril``). The output has q's shape.
    """

    def __init__(self, hidden_dim: int, num_heads: int, apply_qk_norm: bool = False, use_rope: bool = False,
                 is_causal: bool = False, rope_base: float = 10000.0):
        super().__init__()
        assert hidden_dim % num_heads == 0, f"hidden_dim {hidden_dim} not divisible by num_heads {num_heads}"
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.apply_qk_norm = apply_qk_norm
        self.use_rope = use_rope
        self.is_causal = is_causal
        self.rope_base = rope_base
        self.scale = 1.0 if apply_qk_norm else self.head_dim ** -0.5

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B = x.shape[0]
        return x.reshape(B, -1, self.num_heads, self.head_dim)                  # (B, T, H, dk), row-major tokens

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out_shape = q.shape
        spatial_q, spatial_k = tuple(q.shape[1:-1]), tuple(k.shape[1:-1])
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        if self.use_rope:
            if spatial_q != spatial_k:
                raise ValueError(f"RoPE needs q and k of one spatial shape; got {spatial_q} and {spatial_k}")
            cos, sin = build_grid_rope_tables(spatial_q, self.head_dim, self.rope_base)
            cos = cos.to(q.dtype)[None, :, None, :]                            # (1, T, 1, dk)
            sin = sin.to(q.dtype)[None, :, None, :]
            n = len(spatial_q)
            q = q * cos + rotate_split_half(q, n) * sin
            k = k * cos + rotate_split_half(k, n) * sin
        if self.apply_qk_norm:
            q = F.normalize(q, dim=-1, eps=1e-12)                              # AFTER RoPE (docs/math.md 9.13)
            k = F.normalize(k, dim=-1, eps=1e-12)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                       # (B, H, T, dk)
        mask = None
        if self.is_causal:
            mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
        o = softmax_attention(q, k, v, self.scale, mask)                       # (B, H, Tq, dk)
        return o.transpose(1, 2).reshape(out_shape)                            # (B, *spatial_q, C)

    def flop_count(self, num_tokens: int, num_key_tokens: int = None) -> int:
        """docs/math.md 8 (derived; upstream has none): ``4 * Tq * Tk * C``."""
        tk = num_tokens if num_key_tokens is None else num_key_tokens
        return 4 * num_tokens * tk * self.hidden_dim


class QKVSequenceMixer(nn.Module):
    """``out_proj(mixer(chunk3(qkv_proj(x))))`` (docs/math.md 3.1).

    Keys: ``qkv_proj.*`` [3C, C], ``out_proj.*`` [C, C]."""

    def __init__(self, hidden_dim: int, mixer_cfg, bias: bool = False):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.qkv_proj = nn.Linear(hidden_dim, 3 * hidden_dim, bias=bias)
        self.mixer = instantiate(mixer_cfg)
        self.out_proj = nn.Linear(hidden_dim, hidden_dim, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)                            # (B, *spatial, C) each
        return self.out_proj(self.mixer(q, k, v))

    def flop_count(self, num_tokens: int, inference: bool = False) -> int:
        """docs/math.md 8: ``2T*D*3D + mixer + 2T*D^2``."""
        d = self.hidden_dim
        return linear_flop_count(num_tokens, d, 3 * d) + self.mixer.flop_count(num_tokens) + \
            linear_flop_count(num_tokens, d, d)


class QKVConditionMixer(nn.Module):
    """Cross-attention condition mixer, seed 003 (docs/math.md 3.2).

    ``Q = q_proj(x)``; a ``(B, C)`` condition becomes ONE token ``(B, 1, C)``; ``K, V = kv_proj(cond).chunk(2)``
    (K is the FIRST half); ``y = out_proj(mixer(Q, K, V))``. Keys (no biases): ``q_proj.weight [C, C]``,
    ``kv_proj.weight [2C, C]``, ``out_proj.weight [C, C]``.
    """

    def __init__(self, hidden_dim: int, mixer_cfg, init_method_in=None, init_method_out=None):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.mixer = instantiate(mixer_cfg)
        self.kv_proj = nn.Linear(hidden_dim, 2 * hidden_dim, bias=False)
        self.q_proj = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.out_proj = nn.Linear(hidden_dim, hidden_dim, bias=False)
        if init_method_in is not None:
            init_method_in(hidden_dim)(self.q_proj.weight)
            init_method_in(hidden_dim)(self.kv_proj.weight)
        if init_method_out is not None:
            init_method_out(hidden_dim)(self.out_proj.weight)

    def forward(self, x: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        if x.ndim < 3:
            raise ValueError(f"x must be (B, *spatial, C) with at least one spatial dim; got shape {tuple(x.shape)}")
        if condition.ndim == 2:
            condition = condition[:, None, :]                                  # (B, 1, C): one conditioning token
        elif condition.ndim != x.ndim:
            raise ValueError(f"condition must be (B, C) or have x's rank {x.ndim}; got shape "
                             f"{tuple(condition.shape)}")
        q = self.q_proj(x)                                                     # (B, *spatial, C)
        k, v = self.kv_proj(condition).chunk(2, dim=-1)                        # (B, *spatial_c, C) each
        return self.out_proj(self.mixer(q, k, v))

    def flop_count(self, num_tokens: int, num_condition_tokens: int = 1) -> int:
        """docs/math.md 8 (derived): ``2TqC^2 + 4TcC^2 + mixer + 2TqC^2``."""
        d, tq, tc = self.hidden_dim, num_tokens, num_condition_tokens
        return 2 * tq * d * d + 4 * tc * d * d + self.mixer.flop_count(tq, tc) + 2 * tq * d * d


class ResidualBlock(nn.Module):
    """Pre-norm residual block with three optional branches, seed 002 (docs/math.md 3.1).

    A branch whose module is ``nn.Identity`` (or None) is bypassed entirely, residual add included. One-way
    assertion: mixer/MLP Identity => its norm Identity. ``forward(x, condition)``: condition is positional and is
    required (asserted not None) only when the condition branch is active. One shared dropout (identity in eval).
    """

    def __init__(self, sequence_mixer_cfg, sequence_mixer_norm_cfg, condition_mixer_cfg, condition_mixer_norm_cfg,
                 mlp_cfg, mlp_norm_cfg, dropout_cfg=None):
        super().__init__()

        def make(cfg):
            m = instantiate(cfg)
            return nn.Identity() if m is None else m

        self.input_norm = make(sequence_mixer_norm_cfg)
        self.sequence_mixer = make(sequence_mixer_cfg)
        self.condition_mixer_norm = make(condition_mixer_norm_cfg)
        self.condition_mixer = make(condition_mixer_cfg)
        self.mlp_norm = make(mlp_norm_cfg)
        self.mlp = make(mlp_cfg)
        self.dropout = make(dropout_cfg)
        for branch, norm, name in ((self.sequence_mixer, self.input_norm, "sequence_mixer"),
                                   (self.condition_mixer, self.condition_mixer_norm, "condition_mixer"),
                                   (self.mlp, self.mlp_norm, "mlp")):
            if isinstance(branch, nn.Identity):
                assert isinstance(norm, nn.Identity), f"{name} is Identity, so its norm must be Identity too"

    def forward(self, x: torch.Tensor, condition) -> torch.Tensor:
        if not isinstance(self.sequence_mixer, nn.Identity):
            x = x + self.dropout(self.sequence_mixer(self.input_norm(x)))
        if not isinstance(self.condition_mixer, nn.Identity):
            assert condition is not None, "the condition branch is active, so a condition is required"
            x = x + self.dropout(self.condition_mixer(self.condition_mixer_norm(x), condition))
        if not isinstance(self.mlp, nn.Identity):
            x = x + self.dropout(self.mlp(self.mlp_norm(x)))
        return x

    def flop_count(self, num_tokens: int, num_condition_tokens: int = 1) -> int:
        """docs/math.md 8 (derived): the sum of the active branches (norms counted where they have a count)."""
        def norm_flops(norm):
            return norm.flop_count(num_tokens) if hasattr(norm, "flop_count") else 0

        total = 0
        if not isinstance(self.sequence_mixer, nn.Identity):
            total += norm_flops(self.input_norm) + self.sequence_mixer.flop_count(num_tokens)
        if not isinstance(self.condition_mixer, nn.Identity):
            total += norm_flops(self.condition_mixer_norm) + \
                self.condition_mixer.flop_count(num_tokens, num_condition_tokens)
        if not isinstance(self.mlp, nn.Identity):
            total += norm_flops(self.mlp_norm) + self.mlp.flop_count(num_tokens)
        return total


# ------------------------------------------------------------------------------------------------------------------
# ClassificationResNet (docs/model-format.md `resnet`): patch embed -> ResidualBlocks -> GAP -> out_norm -> out_proj
# ------------------------------------------------------------------------------------------------------------------

RESNET_CONFIG_KEYS = ("image_size", "patch_size", "in_chans", "dim", "depth", "pos_embed", "block",
                      "condition_tokens", "condition_dim", "readout", "out_norm", "bias", "num_classes")
RESNET_BLOCK_KEYS = ("input_norm", "sequence_mixer", "condition_mixer_norm", "condition_mixer", "mlp_norm", "mlp")
RESNET_BIAS_KEYS = ("patch_embed", "head")
NORM_KINDS = ("rmsnorm", "layernorm", "identity")


def make_norm(spec: dict, dim: int):
    """``{"type": "rmsnorm", "eps"}`` | ``{"type": "layernorm", "eps", "bias"}`` | ``{"type": "identity"}``."""
    kind = spec["type"]
    if kind == "rmsnorm":
        from common import RMSNorm
        return RMSNorm(dim, spec["eps"])
    if kind == "layernorm":
        from common import LayerNorm
        return LayerNorm(dim, spec["eps"], bias=spec["bias"])
    if kind == "identity":
        return nn.Identity()
    raise ValueError(f"unknown norm type {kind!r}; expected one of {NORM_KINDS}")


class ClassificationResNet(nn.Module):
    """Conditioned classifier built from generic ResidualBlocks (docs/model-format.md `resnet`, seeds 002 / 003).

    ``forward(img, condition)``: ``img`` channels-last ``[B, H, W, in_chans]``; ``condition`` ``[B, C]`` when
    ``condition_tokens == 0``, ``[B, Tc, C]`` when ``condition_tokens == Tc >= 1``, and ignored (may be None) when the
    condition mixer is Identity. Flow: ``patch_embed`` Conv2d(P, stride P) -> ``(B, Hp, Wp, C)`` (+ ``pos_embed``
    ``[1, Hp, Wp, C]``) -> ``depth`` ResidualBlocks on the 2-D grid (a ``[B, Tc, C]`` condition is passed as
    ``[B, 1, Tc, C]`` so it has x's rank; a ``[B, C]`` one as is) -> GAP over all Hp*Wp positions -> ``out_norm`` ->
    ``out_proj``. Every block has the same config. State-dict keys are the docs/model-format.md `resnet` table.
    """

    def __init__(self, image_size=(16, 16), patch_size=4, in_chans=3, dim=32, depth=2, pos_embed=True,
                 block=None, condition_tokens=0, condition_dim=0, readout="gap", out_norm=None, bias=None,
                 num_classes=10):
        super().__init__()
        from common import MLP
        block = block or {}
        bias = dict.fromkeys(RESNET_BIAS_KEYS, False) if bias is None else dict(bias)
        out_norm = out_norm or {"type": "rmsnorm", "eps": 1e-6}
        img_h, img_w = image_size
        if img_h % patch_size or img_w % patch_size:
            raise ValueError(f"image_size {image_size} not divisible by patch_size {patch_size}")
        if readout != "gap":
            raise ValueError(f"unknown readout {readout!r}; expected 'gap'")
        self.grid = (img_h // patch_size, img_w // patch_size)
        self.num_patches = self.grid[0] * self.grid[1]
        self.dim, self.patch_size, self.in_chans, self.depth = dim, patch_size, in_chans, depth
        self.condition_tokens = condition_tokens
        self.block_cfg = block

        def identity_spec(name):
            spec = block.get(name) or {"type": "identity"}
            return spec

        seq = identity_spec("sequence_mixer")
        cond = identity_spec("condition_mixer")
        mlp = identity_spec("mlp")
        self.has_condition = cond["type"] != "identity"
        if self.has_condition and condition_dim != dim:
            raise ValueError(f"condition_dim {condition_dim} must equal dim {dim} (seed 003)")
        if not self.has_condition and (condition_dim or condition_tokens):
            raise ValueError("condition_dim and condition_tokens must be 0 when the condition mixer is identity")

        def make_block():
            seq_mod = None
            if seq["type"] == "attention":
                seq_mod = QKVSequenceMixer(dim, Attention(dim, seq["num_heads"], seq["qk_norm"], seq["rope"],
                                                          seq["causal"], seq["rope_base"]), bias=seq["bias"])
            cond_mod = None
            if cond["type"] == "attention":
                cond_mod = QKVConditionMixer(dim, Attention(dim, cond["num_heads"], cond["qk_norm"], False,
                                                            cond["causal"]))
            mlp_mod = None
            if mlp["type"] == "mlp":
                mlp_mod = MLP(dim, mlp["activation"], bias=mlp["bias"], hidden_dim=mlp["hidden"])
            norms = [make_norm(identity_spec(k), dim) for k in ("input_norm", "condition_mixer_norm", "mlp_norm")]
            return ResidualBlock(seq_mod, norms[0], cond_mod, norms[1], mlp_mod, norms[2])

        self.patch_embed = nn.Conv2d(in_chans, dim, patch_size, stride=patch_size, bias=bias["patch_embed"])
        self.pos_embed = nn.Parameter(torch.zeros(1, *self.grid, dim)) if pos_embed else None
        self.blocks = nn.ModuleList([make_block() for _ in range(depth)])
        self.out_norm = make_norm(out_norm, dim)
        self.out_proj = nn.Linear(dim, num_classes, bias=bias["head"])

    @classmethod
    def from_config(cls, cfg: dict) -> "ClassificationResNet":
        """Build from the `resnet` ``config`` dict (or the whole ``vkvit`` document); validates it first with
        tools/vkvit_file.py when that is importable (the same rules the C reader applies)."""
        if "config" in cfg:
            if cfg.get("architecture") != "resnet" or cfg.get("flavour") != "generic":
                raise ValueError("not a resnet/generic document")
            config = cfg["config"]
        else:
            config = cfg
        try:
            import vkvit_file
        except ImportError:
            vkvit_file = None
        if vkvit_file is not None:
            vkvit_file.check_resnet_config(config)
        return cls(**{k: (tuple(v) if k == "image_size" else v) for k, v in config.items()})

    def _last_tokens(self, img: torch.Tensor, condition=None) -> torch.Tensor:
        """patch embed -> blocks: the tokens (B, Hp, Wp, C) the readout pools."""
        B = img.shape[0]
        x = self.patch_embed(img.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)      # (B, Hp, Wp, C)
        if self.pos_embed is not None:
            x = x + self.pos_embed
        if self.has_condition:
            want = (B, self.dim) if self.condition_tokens == 0 else (B, self.condition_tokens, self.dim)
            if condition is None or tuple(condition.shape) != want:
                got = None if condition is None else tuple(condition.shape)
                raise ValueError(f"condition must have shape {want}; got {got}")
            if condition.ndim == 3:
                condition = condition[:, None]                                 # (B, 1, Tc, C): x's rank
        else:
            condition = None
        for block in self.blocks:
            x = block(x, condition)
        return x

    def forward(self, img: torch.Tensor, condition=None) -> torch.Tensor:
        v = self._last_tokens(img, condition).mean(dim=(1, 2))                # (B, C), GAP over Hp*Wp
        return self.out_proj(self.out_norm(v))                                 # (B, classes)

    def forward_tokens(self, img: torch.Tensor, condition=None) -> dict:
        """The final tokens (vkvit_session_get_tokens): out_norm on every position. {"patches": (B, T, C)}."""
        x = self._last_tokens(img, condition)
        return {"patches": self.out_norm(x.reshape(x.shape[0], -1, x.shape[-1]))}

    def flop_count(self) -> int:
        """One sample (docs/model-format.md `resnet`): patch embed ``2 in_chans C P^2 T`` + pos add ``T C`` + blocks
        (``ResidualBlock.flop_count(T, max(Tc, 1))``) + GAP ``T C`` + ``out_norm.flop_count(1)`` + head
        ``2 C classes``."""
        t, d = self.num_patches, self.dim
        total = 2 * self.in_chans * d * self.patch_size ** 2 * t
        total += t * d if self.pos_embed is not None else 0
        total += sum(b.flop_count(t, max(self.condition_tokens, 1)) for b in self.blocks)
        total += t * d
        total += self.out_norm.flop_count(1) if hasattr(self.out_norm, "flop_count") else 0
        return total + 2 * d * self.out_proj.out_features

    def param_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
