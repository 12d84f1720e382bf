# SPDX-License-Identifier: Apache-2.0
"""mLSTM / Vision-LSTM reference: seed 004 (numerics "seed") and NX-AI v1 (numerics "nxai"). docs/math.md 7.

Scan functions work on per-head tensors ``q, k, v: (B, NH, S, DH)`` and gate pre-activations
``ipre, fpre: (B, NH, S)`` in PROCESSING order (already flipped for reverse blocks):
* ``mlstm_parallel_seed``     seed 004's quadratic form, literal except the input-gate floor (docs/math.md 9.11);
* ``mlstm_parallel_official`` NX-AI ``parallel_stabilized_simple`` (docs/math.md 7.2);
* ``mlstm_chunkwise``         the chunkwise form of docs/math.md 7.3 for either variant (exact running max, -10 clamp
                              per output row only for the seed).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from common import LN_1E_MINUS_6, DropPath, LayerNorm, MultiHeadLayerNorm, SequenceGroupNorm, param_count

NUMERICS = ("seed", "nxai")


# ------------------------------------------------------------------------------------------------------------------
# Gates
# ------------------------------------------------------------------------------------------------------------------

def seed_log_input_gate(ipre: torch.Tensor) -> torch.Tensor:
    """``log(max(exp(ipre), 1e-6))`` computed as ``max(ipre, ln 1e-6)``: equal wherever the seed is finite, and it
    never overflows for ipre > 88.72 (docs/math.md 7.1 quirk 1, 9.11: the only deliberate deviation from seed 004)."""
    return torch.clamp(ipre, min=LN_1E_MINUS_6)


def seed_log_forget_gate(fpre: torch.Tensor) -> torch.Tensor:
    """``log(max(sigmoid(fpre), 1e-6))``, literal (docs/math.md 7.1 quirk 2)."""
    return torch.log(torch.sigmoid(fpre).clamp(min=1e-6))


def official_log_gates(ipre: torch.Tensor, fpre: torch.Tensor):
    """NX-AI: raw ``ipre`` and ``logsigmoid(fpre)`` (docs/math.md 7.2)."""
    return ipre, F.logsigmoid(fpre)


# ------------------------------------------------------------------------------------------------------------------
# Parallel (quadratic) forms
# ------------------------------------------------------------------------------------------------------------------

def mlstm_parallel_seed(q, k, v, ipre, fpre):
    """Seed 004's parallel mLSTM (docs/math.md 7.1): ``(B, NH, S, DH) -> (B, NH, S, DHv)``.

    -1e9 causal fill, row max clamped at -10, queries divided by sqrt(DH), normaliser ``max(sum_j A_ij, 1)`` on the
    stabilised SIGNED sum.
    """
    S, DH = q.shape[-2], q.shape[-1]
    log_i = seed_log_input_gate(ipre)                                          # (B, NH, S)
    log_f = seed_log_forget_gate(fpre)                                         # (B, NH, S)
    log_f_cumsum = torch.cumsum(log_f, dim=-1)                                 # F_t, inclusive
    log_D = log_f_cumsum.unsqueeze(-1) - log_f_cumsum.unsqueeze(-2)            # (B, NH, S, S): F_i - F_j
    causal = torch.tril(torch.ones(S, S, dtype=torch.bool, device=q.device))
    log_D = log_D.masked_fill(~causal, -1e9)
    log_D = log_D + log_i.unsqueeze(-2)                                        # + i~_j, broadcast over rows
    max_log_D = log_D.max(dim=-1, keepdim=True).values.clamp(min=-10)          # (B, NH, S, 1)
    D = torch.exp(log_D - max_log_D).masked_fill(~causal, 0.0)
    q_scaled = q / math.sqrt(DH)
    attn = torch.matmul(q_scaled, k.transpose(-1, -2)) * D                     # (B, NH, S, S)
    normalizer = attn.sum(dim=-1, keepdim=True).clamp(min=1.0)
    return torch.matmul(attn / normalizer, v)                                  # (B, NH, S, DHv)


def mlstm_parallel_official(q, k, v, ipre, fpre, eps: float = 1e-6):
    """NX-AI ``parallel_stabilized_simple`` (docs/math.md 7.2): ``(B, NH, S, DH) -> (B, NH, S, DHv)``.

    Zero-prepended cumsum of ``logsigmoid(f)``, -inf mask, raw ``ipre``, unclamped row max, KEYS divided by
    sqrt(DH), normaliser ``max(|sum_j C_ij|, exp(-m)) + eps``.
    """
    B, NH, S, DH = q.shape
    log_fgates = F.logsigmoid(fpre).unsqueeze(-1)                              # (B, NH, S, 1)
    ltr = torch.tril(torch.ones(S, S, dtype=torch.bool, device=q.device))
    zeros = torch.zeros(B, NH, 1, 1, dtype=q.dtype, device=q.device)
    log_fgates_cumsum = torch.cat([zeros, torch.cumsum(log_fgates, dim=-2)], dim=-2)   # (B, NH, S+1, 1)
    rep = log_fgates_cumsum.repeat(1, 1, 1, S + 1)                             # (B, NH, S+1, S+1)
    log_fg_matrix = torch.where(ltr, (rep - rep.transpose(-2, -1))[:, :, 1:, 1:], float("-inf"))
    log_D_matrix = log_fg_matrix + ipre.unsqueeze(-1).transpose(-2, -1)        # (B, NH, S, S)
    max_log_D = log_D_matrix.max(dim=-1, keepdim=True).values                  # (B, NH, S, 1)
    D_matrix = torch.exp(log_D_matrix - max_log_D)
    keys_scaled = k / math.sqrt(DH)
    C_matrix = torch.matmul(q, keys_scaled.transpose(-2, -1)) * D_matrix       # (B, NH, S, S)
    normalizer = torch.maximum(C_matrix.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_D))
    return torch.matmul(C_matrix / (normalizer + eps), v)                      # (B, NH, S, DHv)


# ------------------------------------------------------------------------------------------------------------------
# Chunkwise form (docs/math.md 7.3)
# ------------------------------------------------------------------------------------------------------------------

def mlstm_chunkwise(q, k, v, ipre, fpre, chunk_size: int, numerics: str = "seed", eps: float = 1e-6):
    """Chunkwise mLSTM scan, carried state ``(C, n, mu)`` (docs/math.md 7.3); equals the parallel form of ``numerics``.

    ``mu`` is the EXACT running max of the carried log-weights (it enters the seed result through the
    ``max(., 1)`` floor); the seed's -10 clamp is applied only to each output row, never fed back. ``chunk_size``
    L >= 1; L >= S is the quadratic form. Shapes: ``(B, NH, S, DH) -> (B, NH, S, DHv)``.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if numerics not in NUMERICS:
        raise ValueError(f"unknown numerics {numerics!r}; expected one of {NUMERICS}")
    B, NH, S, DH = q.shape
    DV = v.shape[-1]
    seed = numerics == "seed"
    if seed:
        log_i, log_f = seed_log_input_gate(ipre), seed_log_forget_gate(fpre)
        q = q / math.sqrt(DH)                                                  # seed scales queries
    else:
        log_i, log_f = official_log_gates(ipre, fpre)
        k = k / math.sqrt(DH)                                                  # official scales keys

    C = torch.zeros(B, NH, DH, DV, dtype=q.dtype, device=q.device)             # carried sum of w * k v^T
    n = torch.zeros(B, NH, DH, dtype=q.dtype, device=q.device)                 # carried sum of w * k
    mu = torch.full((B, NH), float("-inf"), dtype=q.dtype, device=q.device)    # exact running max (empty: -inf)
    out = torch.empty(B, NH, S, DV, dtype=q.dtype, device=q.device)
    for c0 in range(0, S, chunk_size):
        c1 = min(c0 + chunk_size, S)
        qc, kc, vc = q[:, :, c0:c1], k[:, :, c0:c1], v[:, :, c0:c1]            # (B, NH, L, .)
        ic = log_i[:, :, c0:c1]                                                # (B, NH, L)
        beta = torch.cumsum(log_f[:, :, c0:c1], dim=-1)                        # local inclusive cumsum
        L = c1 - c0
        causal = torch.tril(torch.ones(L, L, dtype=torch.bool, device=q.device))

        alpha = beta + mu[..., None]                                           # carried-state log-weight per row
        a = (beta[..., :, None] - beta[..., None, :] + ic[..., None, :])       # (B, NH, L, L) intra-chunk
        a = a.masked_fill(~causal, float("-inf"))
        M = torch.maximum(alpha, a.max(dim=-1).values)                         # unclamped row max
        m = M.clamp(min=-10.0) if seed else M                                  # seed clamp: this row only
        w_state = torch.exp(alpha - m)                                         # (B, NH, L)
        A = torch.matmul(qc, kc.transpose(-1, -2)) * torch.exp(a - m[..., None])      # (B, NH, L, L)
        num = w_state[..., None] * torch.matmul(qc, C) + torch.matmul(A, vc)   # (B, NH, L, DV)
        den = w_state * torch.einsum("bhld,bhd->bhl", qc, n) + A.sum(dim=-1)   # (B, NH, L)
        if seed:
            out[:, :, c0:c1] = num / den.clamp(min=1.0)[..., None]
        else:
            out[:, :, c0:c1] = num / (torch.maximum(den.abs(), torch.exp(-M)) + eps)[..., None]

        mu_new = M[..., -1]                                                    # exact max at the chunk's end
        g_state = torch.exp(beta[..., -1] + mu - mu_new)                       # (B, NH); 0 for the empty state
        g_keys = torch.exp(beta[..., -1:] - beta + ic - mu_new[..., None])     # (B, NH, L)
        kw = kc * g_keys[..., None]                                            # (B, NH, L, DH)
        C = g_state[..., None, None] * C + torch.matmul(kw.transpose(-1, -2), vc)
        n = g_state[..., None] * n + kw.sum(dim=-2)
        mu = mu_new
    return out


def mlstm_scan(q, k, v, ipre, fpre, numerics: str = "seed", chunk_size: int = None):
    """Dispatch: the parallel form of ``numerics`` when ``chunk_size`` is None, else the chunkwise form."""
    if chunk_size is not None:
        return mlstm_chunkwise(q, k, v, ipre, fpre, chunk_size, numerics)
    if numerics == "seed":
        return mlstm_parallel_seed(q, k, v, ipre, fpre)
    if numerics == "nxai":
        return mlstm_parallel_official(q, k, v, ipre, fpre)
    raise ValueError(f"unknown numerics {numerics!r}; expected one of {NUMERICS}")


# ------------------------------------------------------------------------------------------------------------------
# Modules
# ------------------------------------------------------------------------------------------------------------------

class LinearHeadwiseExpand(nn.Module):
    """Block-diagonal projection, seed 004: ``out[.., p*d + o] = sum_i W[p, o, i] in[.., p*d + i] (+ bias)``.

    Keys: ``weight [NP, d, d]`` (+ ``bias [in_features]``).
    """

    def __init__(self, in_features: int, num_heads: int, bias: bool = False):
        super().__init__()
        assert in_features % num_heads == 0, f"{in_features} not divisible by {num_heads}"
        self.in_features = in_features
        self.num_heads = num_heads
        self.head_dim = in_features // num_heads
        self.weight = nn.Parameter(torch.empty(num_heads, self.head_dim, self.head_dim))
        nn.init.normal_(self.weight, std=math.sqrt(2.0 / (5.0 * self.head_dim)))
        self.bias = nn.Parameter(torch.zeros(in_features)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xh = x.reshape(*x.shape[:-1], self.num_heads, self.head_dim)           # (..., NP, d)
        y = torch.einsum("...hd,hod->...ho", xh, self.weight).reshape(x.shape)
        return y + self.bias if self.bias is not None else y


class mLSTMCell(nn.Module):
    """mLSTM cell (ViL layer), seed 004 constructor plus ``numerics`` and ``chunk_size`` (docs/math.md 7.1, 7.2).

    numerics "seed": seed 004's cell, ``outnorm`` = sequence-wide GroupNorm(NP groups, affine), ``layerscale``.
    numerics "nxai": official ``parallel_stabilized_simple``, ``outnorm`` = MultiHeadLayerNorm (NH groups per token,
    scale 1 + w, no bias), no layerscale. ``chunk_size`` None = parallel form, else the chunkwise scan
    (docs/math.md 7.3). Keys: see docs/model-format.md `vil` (``blocks.{i}.mlstm.*``).
    """

    def __init__(self, dim: int = 384, proj_factor: float = 2.0, qkv_proj_blocksize: int = 4, num_heads: int = 4,
                 conv_kernel: int = 4, bias: bool = False, numerics: str = "seed", chunk_size: int = None):
        super().__init__()
        if numerics not in NUMERICS:
            raise ValueError(f"unknown numerics {numerics!r}; expected one of {NUMERICS}")
        self.dim = dim
        self.inner_dim = math.ceil(proj_factor * dim / 64) * 64                # E
        self.num_heads = num_heads                                             # NH memory heads
        self.head_dim = self.inner_dim // num_heads                            # DH
        self.num_proj_heads = self.inner_dim // qkv_proj_blocksize             # NP
        self.conv_kernel = conv_kernel
        self.numerics = numerics
        self.chunk_size = chunk_size
        E = self.inner_dim

        self.proj_up = nn.Linear(dim, 2 * E, bias=bias)
        self.conv1d = nn.Conv1d(E, E, kernel_size=conv_kernel, padding=conv_kernel - 1, groups=E, bias=True)
        self.q_proj = LinearHeadwiseExpand(E, self.num_proj_heads, bias=bias)
        self.k_proj = LinearHeadwiseExpand(E, self.num_proj_heads, bias=bias)
        self.v_proj = LinearHeadwiseExpand(E, self.num_proj_heads, bias=bias)
        self.igate = nn.Linear(3 * E, num_heads, bias=True)
        self.fgate = nn.Linear(3 * E, num_heads, bias=True)
        if numerics == "seed":
            self.outnorm = SequenceGroupNorm(self.num_proj_heads, E)
        else:
            self.outnorm = MultiHeadLayerNorm(E, num_heads)
        self.proj_down = nn.Linear(E, dim, bias=bias)
        self.learnable_skip = nn.Parameter(torch.ones(E))
        self.layerscale = nn.Parameter(torch.ones(E)) if numerics == "seed" else None
        with torch.no_grad():
            nn.init.zeros_(self.igate.bias)
            nn.init.constant_(self.fgate.bias, 3.0)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        B, S, _ = x.shape
        return x.reshape(B, S, self.num_heads, self.head_dim).transpose(1, 2)  # (B, NH, S, DH), ch = h*DH + d

    def forward_with_intermediates(self, x: torch.Tensor, reverse: bool = False):
        """``x (B, S, D) -> (y (B, S, D), aux)``; aux holds ``ipre``, ``fpre`` (B, S, NH) and ``hcell`` (B, S, E),
        the scan output before outnorm, all in ORIGINAL token order."""
        B, S, _ = x.shape
        E = self.inner_dim
        if reverse:
            x = x.flip(1)                                                      # processing order
        up = self.proj_up(x)                                                   # (B, S, 2E)
        x_mlstm, z = up[..., :E], up[..., E:]
        x_conv = self.conv1d(x_mlstm.transpose(1, 2))[..., :S].transpose(1, 2)  # causal depthwise, (B, S, E)
        x_conv_act = F.silu(x_conv)
        q = self.q_proj(x_conv_act)
        k = self.k_proj(x_conv_act)
        v = self.v_proj(x_mlstm)                                               # V from the pre-conv branch
        qkv_cat = torch.cat([q, k, v], dim=-1)                                 # (B, S, 3E)
        ipre = self.igate(qkv_cat)                                             # (B, S, NH)
        fpre = self.fgate(qkv_cat)
        h = mlstm_scan(self.heads(q), self.heads(k), self.heads(v), ipre.transpose(1, 2), fpre.transpose(1, 2),
                       self.numerics, self.chunk_size)                         # (B, NH, S, DH)
        hcell = h.transpose(1, 2).reshape(B, S, E)                             # (B, S, E), ch = h*DH + d
        hn = self.outnorm(hcell)
        out = (hn + self.learnable_skip * x_conv_act) * F.silu(z)              # output gate SiLU(z)
        out = self.proj_down(out)                                              # (B, S, D)
        if self.layerscale is not None:
            out = out * self.layerscale[:self.dim]                             # only the first D entries used
        aux = {"ipre": ipre, "fpre": fpre, "hcell": hcell}
        if reverse:
            out = out.flip(1)
            aux = {name: t.flip(1) for name, t in aux.items()}
        return out, aux

    def forward(self, x: torch.Tensor, reverse: bool = False) -> torch.Tensor:
        return self.forward_with_intermediates(x, reverse)[0]

    def flop_count(self, num_tokens: int, chunk_size: int = None) -> int:
        """docs/math.md 8 (derived, mLSTM block without its LayerNorm)."""
        s, d, e, nh, dh = num_tokens, self.dim, self.inner_dim, self.num_heads, self.head_dim
        total = 4 * s * d * e                                                  # proj_up
        total += 2 * self.conv_kernel * s * e                                  # depthwise conv (8SE for k=4)
        total += 3 * 2 * (e // self.num_proj_heads) * s * e                    # headwise q/k/v (24SE)
        total += 2 * 2 * s * 3 * e * nh                                        # gates
        if chunk_size is None:
            total += 4 * s * s * e + 5 * nh * s * s                            # parallel cell
        else:
            total += 2 * s * chunk_size * e + 4 * s * e * dh                   # chunkwise cell
        total += 5 * s * e + 6 * s * e + 2 * s * e * d                         # outnorm, skip/gate/SiLU, proj_down
        if self.layerscale is not None:
            total += s * d
        return total


class mLSTMBlock(nn.Module):
    """``x + drop_path(mlstm(norm1(x), reverse))`` (seed 004, docs/math.md 7.1). ``norm1`` = LayerNorm(D) without bias:
    weight used directly for "seed", ``1 + w`` for "nxai". Keys: ``norm1.weight``, ``mlstm.*``."""

    def __init__(self, dim: int = 384, proj_factor: float = 2.0, qkv_proj_blocksize: int = 4, num_heads: int = 4,
                 conv_kernel: int = 4, mlp_ratio: float = 4.0, drop_path: float = 0.0, bias: bool = False,
                 numerics: str = "seed", norm_eps: float = 1e-5, chunk_size: int = None):
        super().__init__()
        self.dim = dim
        self.norm1 = LayerNorm(dim, eps=norm_eps, bias=False, residual_weight=(numerics == "nxai"))
        self.mlstm = mLSTMCell(dim, proj_factor, qkv_proj_blocksize, num_heads, conv_kernel, bias, numerics,
                               chunk_size)
        self.drop_path = DropPath(drop_path)

    def forward(self, x: torch.Tensor, reverse: bool = False) -> torch.Tensor:
        return x + self.drop_path(self.mlstm(self.norm1(x), reverse=reverse))

    def flop_count(self, num_tokens: int, chunk_size: int = None) -> int:
        return self.norm1.flop_count(num_tokens) + self.mlstm.flop_count(num_tokens, chunk_size)


# ------------------------------------------------------------------------------------------------------------------
# VisionLSTM network (NX-AI v1 network, docs/math.md 7.2 and 9.12; docs/model-format.md `vil`)
# ------------------------------------------------------------------------------------------------------------------

VIL_CONFIG_KEYS = ("image_size", "patch_size", "in_chans", "dim", "depth", "inner_dim", "num_heads",
                   "qkv_block_size", "conv_kernel", "pooling", "norm_eps", "head_norm_eps", "num_classes")
VIL_FLAVOURS = {"seed": "seed", "nxai": "nxai"}


class PatchEmbed(nn.Module):
    """``proj``: Conv2d(in_chans, D, P, stride P, bias). Key: ``patch_embed.proj.weight/bias``."""

    def __init__(self, in_chans: int, dim: int, patch_size: int):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, patch_size, stride=patch_size, bias=True)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return self.proj(img.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)          # (B, Hp, Wp, D)


class LearnedPosEmbed2d(nn.Module):
    """``embed [1, Hp, Wp, D]`` added to the patch grid. Key: ``pos_embed.embed``."""

    def __init__(self, grid, dim: int):
        super().__init__()
        self.embed = nn.Parameter(torch.zeros(1, grid[0], grid[1], dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.embed


class VisionLSTM(nn.Module):
    """ViL v1 network on channels-last ``[B, H, W, 3]`` images with seed or NX-AI block numerics (docs/math.md 7.2).

    patch embed -> + pos_embed -> row-major tokens -> blocks (even i forward, odd i reversed) -> legacy_norm ->
    bilateral average of tokens 0 and S-1 -> ``norm`` (affine LayerNorm, eps head_norm_eps) -> ``head``.
    """

    def __init__(self, image_size=(224, 224), patch_size=16, in_chans=3, dim=384, depth=24, inner_dim=None,
                 num_heads=4, qkv_block_size=4, conv_kernel=4, pooling="bilateral_avg", norm_eps=1e-5,
                 head_norm_eps=1e-6, num_classes=1000, numerics="seed", chunk_size=None):
        super().__init__()
        expected_inner = math.ceil(2 * dim / 64) * 64
        if inner_dim is not None and inner_dim != expected_inner:
            raise ValueError(f"inner_dim {inner_dim} != ceil(2*dim/64)*64 = {expected_inner}")
        if pooling != "bilateral_avg":
            raise ValueError(f"unknown pooling {pooling!r}; only 'bilateral_avg' is supported")
        if image_size[0] % patch_size or image_size[1] % patch_size:
            raise ValueError(f"image_size {image_size} not divisible by patch_size {patch_size}")
        self.grid = (image_size[0] // patch_size, image_size[1] // patch_size)
        self.num_tokens = self.grid[0] * self.grid[1]
        self.dim, self.patch_size, self.in_chans = dim, patch_size, in_chans
        self.numerics = numerics
        self.patch_embed = PatchEmbed(in_chans, dim, patch_size)
        self.pos_embed = LearnedPosEmbed2d(self.grid, dim)
        self.blocks = nn.ModuleList([
            mLSTMBlock(dim, 2.0, qkv_block_size, num_heads, conv_kernel, numerics=numerics, norm_eps=norm_eps,
                       chunk_size=chunk_size)
            for _ in range(depth)])
        self.legacy_norm = LayerNorm(dim, eps=norm_eps, bias=False, residual_weight=(numerics == "nxai"))
        self.norm = LayerNorm(dim, eps=head_norm_eps, bias=True)
        self.head = nn.Linear(dim, num_classes, bias=True)

    @classmethod
    def from_config(cls, cfg: dict, numerics: str = None, chunk_size: int = None) -> "VisionLSTM":
        """Build from the `vil` ``config`` dict (then pass ``numerics``) or the whole ``vkvit`` document (its
        flavour gives the numerics)."""
        from vit5 import unwrap_config
        config, flavour = unwrap_config(cfg, "vil", VIL_FLAVOURS)
        missing = [k for k in VIL_CONFIG_KEYS if k not in config]
        unknown = [k for k in config if k not in VIL_CONFIG_KEYS]
        if missing or unknown:
            raise ValueError(f"vil config: missing keys {missing}, unknown keys {unknown}")
        numerics = numerics or flavour or "seed"
        if flavour is not None and numerics != flavour:
            raise ValueError(f"numerics {numerics!r} contradicts flavour {flavour!r}")
        args = {k: (tuple(v) if k == "image_size" else v) for k, v in config.items()}
        return cls(**args, numerics=numerics, chunk_size=chunk_size)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        x = self.pos_embed(self.patch_embed(img))                              # (B, Hp, Wp, D)
        x = x.flatten(1, 2)                                                    # (B, S, D), row-major
        for i, block in enumerate(self.blocks):
            x = block(x, reverse=(i % 2 == 1))
        x = self.legacy_norm(x)
        x = (x[:, 0] + x[:, -1]) / 2                                           # bilateral_avg, (B, D)
        return self.head(self.norm(x))                                         # (B, classes)

    def forward_tokens(self, img: torch.Tensor) -> dict:
        """The final tokens (vkvit_session_get_tokens): legacy_norm on every token. {"patches": (B, S, D)}."""
        x = self.pos_embed(self.patch_embed(img)).flatten(1, 2)
        for i, block in enumerate(self.blocks):
            x = block(x, reverse=(i % 2 == 1))
        return {"patches": self.legacy_norm(x)}

    def flop_count(self, chunk_size: int = None) -> int:
        """docs/math.md 8 (derived; the seeds give no network formula): patch embed ``2*3*D*P^2*S`` + pos add ``S*D`` +
        blocks + legacy_norm ``5*S*D`` + bilateral average ``2*D`` + head norm ``5*D`` + head ``2*D*classes``."""
        s, d = self.num_tokens, self.dim
        total = 2 * self.in_chans * d * self.patch_size ** 2 * s + s * d
        total += sum(b.flop_count(s, chunk_size) for b in self.blocks)
        total += self.legacy_norm.flop_count(s) + 2 * d + self.norm.flop_count(1)
        return total + 2 * d * self.head.out_features

    def param_count(self) -> int:
        return param_count(self)
