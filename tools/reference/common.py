# SPDX-License-Identifier: Apache-2.0
"""Shared building blocks of the vkvit PyTorch reference (docs/math.md sections 2 and 4).

Everything here is channels-last: the feature axis is always the LAST axis, any number of leading axes.
Every module works in float32 and in float64 (the golden generator runs the reference in float64 and rounds
the outputs to float32), so statistics are computed in ``compute_dtype(x)``: at least float32, float64 kept.
Each module with a cost exposes ``flop_count`` with the seed-literal formula of docs/math.md 8.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype statistics are computed in: float32 for half types (upstream's ``x.float()``), float64 kept."""
    return torch.promote_types(x.dtype, torch.float32)


# ------------------------------------------------------------------------------------------------------------------
# Norms
# ------------------------------------------------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """nvSubquadratic ``RMSNorm(dim, eps=1e-6)`` (docs/math.md 4.2): ``w * x * rsqrt(mean(x^2) + eps)``.

    Over the last axis; the weight multiplies the normalised value directly (no ``1 + w``). Key: ``weight [dim]``.
    """

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.to(compute_dtype(x))                                      # (..., dim)
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (self.weight.to(xf.dtype) * y).to(x.dtype)

    def flop_count(self, num_tokens: int) -> int:
        """docs/math.md 8: ``3 * T * dim``."""
        return 3 * num_tokens * self.dim


class LayerNorm(nn.Module):
    """LayerNorm over the last axis, biased variance, with the two weight parametrisations vkvit needs.

    * ``residual_weight=False``: the scale is ``weight`` itself. With ``bias=False`` this is the seed's
      ``nn.LayerNorm(D, bias=False)`` (docs/math.md 7.1, eps 1e-5, torch 1.13 has no ``bias=`` argument); with
      ``bias=True`` it is a standard affine ``nn.LayerNorm`` (ViL head norm, eps 1e-6).
    * ``residual_weight=True``: NX-AI ``LayerNorm`` ("LN_res", docs/math.md 7.2): the scale is ``1 + weight``, weight
      initialised to zeros; ``bias`` optional (absent in ViL v1).
    Keys: ``weight [dim]`` and ``bias [dim]`` when ``bias``.
    """

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = False, residual_weight: bool = False):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.residual_weight = residual_weight
        self.weight = nn.Parameter(torch.zeros(dim) if residual_weight else torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def scale(self) -> torch.Tensor:
        return 1.0 + self.weight if self.residual_weight else self.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (self.dim,), self.scale(), self.bias, self.eps)

    def flop_count(self, num_tokens: int) -> int:
        """docs/math.md 8 (derived, mLSTM block): ``5 * T * dim``."""
        return 5 * num_tokens * self.dim


class MultiHeadLayerNorm(nn.Module):
    """NX-AI ``MultiHeadLayerNorm`` (docs/math.md 7.2): per token, per memory head LayerNorm over DH = E/NH channels.

    ``F.group_norm`` on ``(B*S, E)`` with ``num_groups = NH``, eps 1e-5, scale ``1 + weight``, bias optional
    (absent in ViL v1). Input and output are channels-last ``(..., E)``. Keys: ``weight [E]`` (+ ``bias [E]``).
    """

    def __init__(self, dim: int, num_heads: int, eps: float = 1e-5, bias: bool = False):
        super().__init__()
        self.dim = dim
        self.num_heads = num_heads
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        xf = x.reshape(-1, self.dim)                                     # (B*S, E)
        y = F.group_norm(xf, self.num_heads, 1.0 + self.weight, self.bias, self.eps)
        return y.reshape(*lead, self.dim)


class SequenceGroupNorm(nn.Module):
    """The seed's ``nn.GroupNorm(NP, E)`` applied to the channels-last cell output (docs/math.md 7.1 quirk 6).

    The seed transposes ``(B, S, E)`` to ``(B, E, S)``, so each group's mean and biased variance are taken over its
    ``E/NP`` channels AND all S tokens (non-causal). Keys: ``weight [E]``, ``bias [E]`` (affine, eps 1e-5).
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5):
        super().__init__()
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.group_norm(x.transpose(1, 2), self.num_groups, self.weight, self.bias, self.eps)  # (B, E, S)
        return y.transpose(1, 2)                                                               # (B, S, E)


# ------------------------------------------------------------------------------------------------------------------
# Residual-branch helpers
# ------------------------------------------------------------------------------------------------------------------

class LayerScale(nn.Module):
    """``y = x * gamma`` with ``gamma [C]`` initialised to ``init`` (docs/math.md 2.3). Key: ``gamma``."""

    def __init__(self, dim: int, init: float = 1e-4):
        super().__init__()
        self.dim = dim
        self.gamma = nn.Parameter(torch.full((dim,), float(init)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma

    def flop_count(self, num_tokens: int) -> int:
        """docs/math.md 8: ``T * C``."""
        return num_tokens * self.dim


class DropPath(nn.Module):
    """Stochastic depth (docs/math.md 2.4): per-sample Bernoulli mask, ``1/keep`` rescale; identity in eval."""

    def __init__(self, rate: float = 0.0):
        super().__init__()
        self.rate = rate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.rate == 0.0:
            return x
        keep = 1.0 - self.rate
        mask = torch.empty((x.shape[0],) + (1,) * (x.ndim - 1), dtype=x.dtype, device=x.device).bernoulli_(keep)
        return x * mask / keep

    def flop_count(self, num_tokens: int) -> int:
        return 0


class GRN(nn.Module):
    """Global Response Normalisation, ConvNeXt-V2 (docs/math.md 2.5), channels-last ``(B, *spatial, C)``.

    ``g = ||x||_2`` over ALL token/spatial axes per (b, c); ``nx = g / (mean_c g + eps)`` (eps on the channel mean);
    ``y = gamma * (x * nx) + beta + x``. Keys: ``gamma [C]``, ``beta [C]`` (zero init = identity).
    """

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.gamma = nn.Parameter(torch.zeros(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spatial = tuple(range(1, x.ndim - 1))
        g = torch.sqrt(x.pow(2).sum(dim=spatial, keepdim=True))          # (B, 1.., C)
        nx = g / (g.mean(dim=-1, keepdim=True) + self.eps)               # (B, 1.., C)
        return self.gamma * (x * nx) + self.beta + x

    def flop_count(self, num_tokens: int) -> int:
        """docs/math.md 8: ``6 * T * C``."""
        return 6 * num_tokens * self.dim


class RegisterPooling(nn.Module):
    """``c = sum_r softmax(logits)_r * regs[:, r]``: ``(B, R, C) -> (B, C)`` (docs/math.md 2.6). Key: ``logits [R]``."""

    def __init__(self, num_registers: int):
        super().__init__()
        self.num_registers = num_registers
        self.logits = nn.Parameter(torch.zeros(num_registers))

    def forward(self, regs: torch.Tensor) -> torch.Tensor:
        w = torch.softmax(self.logits, dim=0)                            # (R,)
        return torch.einsum("r,brc->bc", w, regs)                        # (B, C)

    def flop_count(self, dim: int) -> int:
        """docs/math.md 8: ``3R + 2RD``."""
        return 3 * self.num_registers + 2 * self.num_registers * dim


class RegisterCompressConcat(nn.Module):
    """``c = [W reg_0 | ... | W reg_{R-1}]``: ``(B, R, C) -> (B, R*c')`` (docs/math.md 2.6, 9.7).

    Key: ``compress.weight [c', C]`` (no bias).
    """

    def __init__(self, num_registers: int, hidden_dim: int, compressed_dim: int):
        super().__init__()
        self.num_registers = num_registers
        self.compressed_dim = compressed_dim
        self.compress = nn.Linear(hidden_dim, compressed_dim, bias=False)

    def forward(self, regs: torch.Tensor) -> torch.Tensor:
        return self.compress(regs).flatten(1)                            # (B, R*c')

    def flop_count(self, dim: int) -> int:
        """docs/math.md 8: ``R * 2 * D * c'``."""
        return self.num_registers * 2 * dim * self.compressed_dim


# ------------------------------------------------------------------------------------------------------------------
# MLP
# ------------------------------------------------------------------------------------------------------------------

ACTIVATIONS = ("relu", "gelu", "silu", "glu", "swiglu")


def apply_activation(a: torch.Tensor, activation: str) -> torch.Tensor:
    """docs/math.md 4.1. ``glu`` gates with the SECOND half, ``swiglu`` applies SiLU to the FIRST half."""
    if activation == "relu":
        return F.relu(a)
    if activation == "gelu":
        return F.gelu(a)                                                 # exact erf GELU (approximate='none')
    if activation == "silu":
        return F.silu(a)
    if activation == "glu":
        return F.glu(a, dim=-1)                                          # a[:h] * sigmoid(a[h:])
    if activation == "swiglu":
        u, g = a.chunk(2, dim=-1)
        return g * F.silu(u)                                             # SiLU on the FIRST half
    raise ValueError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")


class MLP(nn.Module):
    """nvSubquadratic ``MLP`` (docs/math.md 4.1): ``layer2(act(layer1(x)))``.

    ``hidden = int(dim * expansion_factor)`` unless ``hidden_dim`` is given; ``layer1`` is ``[hidden*gf, dim]`` with
    ``gf = 2`` for glu/swiglu. Keys: ``layer1.weight``, ``layer2.weight`` (+ ``.bias`` when ``bias``).
    """

    def __init__(self, dim: int, activation: str = "gelu", expansion_factor: float = 2.0, bias: bool = False,
                 hidden_dim: int = None):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")
        self.dim = dim
        self.activation = activation
        self.hidden_dim = int(dim * expansion_factor) if hidden_dim is None else int(hidden_dim)
        self.glu_factor = 2 if activation in ("glu", "swiglu") else 1
        self.layer1 = nn.Linear(dim, self.hidden_dim * self.glu_factor, bias=bias)
        self.layer2 = nn.Linear(self.hidden_dim, dim, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer2(apply_activation(self.layer1(x), self.activation))   # (..., dim)

    def flop_count(self, num_tokens: int) -> int:
        """docs/math.md 8: ``2 T C (Hd gf) + T Hd (2 if glu else 1) + 2 T Hd C``."""
        t, c, hd, gf = num_tokens, self.dim, self.hidden_dim, self.glu_factor
        return 2 * t * c * (hd * gf) + t * hd * (2 if gf == 2 else 1) + 2 * t * hd * c


def linear_flop_count(num_tokens: int, in_features: int, out_features: int) -> int:
    """1 MAC = 2 FLOPs, biases not counted (docs/math.md 8 convention)."""
    return 2 * num_tokens * in_features * out_features


def param_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


LN_1E_MINUS_6 = math.log(1e-6)   # the seed's gate floor log(1e-6) = -13.815510557964274
