"""Generic nvSubquadratic blocks: Attention (inner mixer), QKVSequenceMixer, QKVConditionMixer (seed 003),
ResidualBlock (seed 002). SPEC.md section 3, 9.13.

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

    SPEC 3.2 says the generic Attention uses "the same table recipe as 1.4, single base"; upstream only has the
    2-D case. The n-D generalisation used here: the head is cut into n equal axis parts of ``da = dk/n``
    channels (axis 0 first); part a uses the grid coordinate along spatial axis a (row-major flattening) and
    ``theta = rope_theta(da, base)`` interleaved-repeated; the rotation partner is ``c +- da/2`` inside each part.
    For n = 2 this is exactly SPEC 1.4 (Y-half then X-half, partner c + dk/4). Needs ``dk % (2n) == 0``.
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
    """nvSubquadratic generic ``modules/attention.Attention`` (SPEC 3.2): a parameter-free inner mixer.

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
            q = F.normalize(q, dim=-1, eps=1e-12)                              # AFTER RoPE (SPEC 9.13)
            k = F.normalize(k, dim=-1, eps=1e-12)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                       # (B, H, T, dk)
        mask = None
        if self.is_causal:
            mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
        o = softmax_attention(q, k, v, self.scale, mask)                       # (B, H, Tq, dk)
        return o.transpose(1, 2).reshape(out_shape)                            # (B, *spatial_q, C)

    def flop_count(self, num_tokens: int, num_key_tokens: int = None) -> int:
        """SPEC 8 (derived; upstream has none): ``4 * Tq * Tk * C``."""
        tk = num_tokens if num_key_tokens is None else num_key_tokens
        return 4 * num_tokens * tk * self.hidden_dim


class QKVSequenceMixer(nn.Module):
    """``out_proj(mixer(chunk3(qkv_proj(x))))`` (SPEC 3.1). Keys: ``qkv_proj.*`` [3C, C], ``out_proj.*`` [C, C]."""

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
        """SPEC 8: ``2T*D*3D + mixer + 2T*D^2``."""
        d = self.hidden_dim
        return linear_flop_count(num_tokens, d, 3 * d) + self.mixer.flop_count(num_tokens) + \
            linear_flop_count(num_tokens, d, d)


class QKVConditionMixer(nn.Module):
    """Cross-attention condition mixer, seed 003 (SPEC 3.2).

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
        """SPEC 8 (derived): ``2TqC^2 + 4TcC^2 + mixer + 2TqC^2``."""
        d, tq, tc = self.hidden_dim, num_tokens, num_condition_tokens
        return 2 * tq * d * d + 4 * tc * d * d + self.mixer.flop_count(tq, tc) + 2 * tq * d * d


class ResidualBlock(nn.Module):
    """Pre-norm residual block with three optional branches, seed 002 (SPEC 3.1).

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
        """SPEC 8 (derived): the sum of the active branches (norms counted where they have a count)."""
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
