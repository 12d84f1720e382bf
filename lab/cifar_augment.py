# SPDX-License-Identifier: Apache-2.0
"""Batched CIFAR-10 augmentations on the training device (lab/train_cifar.py --recipe gpu).

Every function takes float images [B, 3, H, W] in [0, 1] (channels first, before normalisation) and a
torch.Generator on the same device, so a step's augmentation depends only on the seed it was given (resumable runs
repeat it exactly) and no image leaves the GPU.

  crop_flip(x, g)         random translation by up to 4 pixels with reflected borders (the 4-pixel padded crop of
                          the CIFAR recipes) and a horizontal flip with probability 1/2
  zoom(x, g, lo, p)       with probability p, a close-up: a random square of 50-100 % (lo-1) of the side, resampled
                          to full size
  trivial_augment(x, g)   TrivialAugment (Mueller & Hutter 2021), wide magnitudes: one operation per image, drawn
                          uniformly from identity, brightness, contrast, colour, sharpness, posterize, solarize,
                          autocontrast, rotate, shear x/y, translate x/y, with a uniform random strength
  mix(x, y, g, ...)       MixUp or CutMix (one of them per batch, with probability 1/2 each) with one-hot soft
                          labels; returns the mixed images and [B, classes] targets
"""

import math

import torch
import torch.nn.functional as F


def _uniform(n, g, lo=0.0, hi=1.0):
    return torch.rand(n, generator=g, device=g.device) * (hi - lo) + lo


def _affine(x, theta):
    """Resamples x [B, C, H, W] through the 2x3 affine maps theta [B, 2, 3] (normalised coordinates), bilinear,
    reflected borders."""
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


def crop_flip(x, g, pad=4):
    B, _, H, W = x.shape
    dx = torch.randint(-pad, pad + 1, (B,), generator=g, device=g.device).float() * 2 / W
    dy = torch.randint(-pad, pad + 1, (B,), generator=g, device=g.device).float() * 2 / H
    flip = torch.where(_uniform(B, g) < 0.5, -1.0, 1.0)
    theta = torch.zeros(B, 2, 3, device=x.device)
    theta[:, 0, 0], theta[:, 0, 2], theta[:, 1, 1], theta[:, 1, 2] = flip, dx, 1.0, dy
    return _affine(x, theta)      # integer shifts: bilinear sampling at pixel centres returns pixels exactly


def zoom(x, g, min_scale=0.5, p=0.5):
    """With probability p per image, a close-up: a random square of side s ~ U(min_scale, 1) of the image (at a
    random position inside it) resampled back to full size, bilinear with reflected borders; the other images are
    returned exactly. Photos of cats or birds resized to 32 pixels are often close-ups, which CIFAR-10's centred,
    whole-object framing rarely shows."""
    B = x.shape[0]
    on = _uniform(B, g) < p
    s = torch.where(on, _uniform(B, g, min_scale, 1.0), torch.ones(B, device=x.device))
    tx = _uniform(B, g, -1.0, 1.0) * (1.0 - s)
    ty = _uniform(B, g, -1.0, 1.0) * (1.0 - s)
    theta = torch.zeros(B, 2, 3, device=x.device)
    theta[:, 0, 0], theta[:, 0, 2], theta[:, 1, 1], theta[:, 1, 2] = s, tx, s, ty
    return torch.where(on.view(-1, 1, 1, 1), _affine(x, theta), x)


def _blend(a, b, f):
    """b + f (a - b) per image (f [B]), clamped to [0, 1]: f = 0 gives b, 1 gives a, > 1 extrapolates."""
    return (b + f.view(-1, 1, 1, 1) * (a - b)).clamp_(0.0, 1.0)


def _gray(x):
    return (0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]).expand_as(x)


_SMOOTH = torch.tensor([[1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 1.0]]) / 13.0  # PIL's SMOOTH filter


def trivial_augment(x, g):
    """Every operation is computed on the whole batch and each image keeps the one it drew (torch.where): 13 cheap
    passes over 32x32 images instead of per-operation subsets, whose sizes would have to be read back to the host
    (a synchronisation per operation and step)."""
    B = x.shape[0]
    op = torch.randint(0, 13, (B,), generator=g, device=g.device)
    m = _uniform(B, g)                                           # strength in [0, 1]
    sign = torch.where(_uniform(B, g) < 0.5, -1.0, 1.0)
    sm = sign * m                                                # signed strength
    out = x
    photometric = {
        1: lambda: _blend(x, torch.zeros_like(x), 1 + 0.99 * sm),                        # brightness 1 +- 0.99 m
        2: lambda: _blend(x, _gray(x).mean(dim=(1, 2, 3), keepdim=True).expand_as(x),   # contrast: towards the
                          1 + 0.99 * sm),                                                #   mean grey level
        3: lambda: _blend(x, _gray(x), 1 + 0.99 * sm),                                   # colour (saturation)
        4: lambda: _blend(x, _smooth(x), 1 + 0.99 * sm),                                 # sharpness
        5: lambda: _posterize(x, m),                                                     # keep 8 - round(6 m) bits
        6: lambda: torch.where(x >= (1 - m).view(-1, 1, 1, 1), 1 - x, x),                # solarize above 1 - m
        7: lambda: _autocontrast(x),                                                     # each channel to [0, 1]
    }
    for k, fn in photometric.items():
        out = torch.where((op == k).view(-1, 1, 1, 1), fn(), out)
    # Geometric (8 rotate by up to 135 degrees, 9/10 shear x/y up to 0.99, 11/12 translate x/y by up to 32 pixels):
    # one affine map per image, the identity for the others, one resampling with zero borders.
    theta = torch.zeros(B, 2, 3, device=x.device)
    a = torch.where(op == 8, sm * math.radians(135), torch.zeros_like(sm))
    theta[:, 0, 0], theta[:, 0, 1] = torch.cos(a), -torch.sin(a)
    theta[:, 1, 0], theta[:, 1, 1] = torch.sin(a), torch.cos(a)
    theta[:, 0, 1] += torch.where(op == 9, 0.99 * sm, torch.zeros_like(sm))
    theta[:, 1, 0] += torch.where(op == 10, 0.99 * sm, torch.zeros_like(sm))
    theta[:, 0, 2] = torch.where(op == 11, 2.0 * sm, torch.zeros_like(sm))
    theta[:, 1, 2] = torch.where(op == 12, 2.0 * sm, torch.zeros_like(sm))
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    moved = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return torch.where((op >= 8).view(-1, 1, 1, 1), moved, out)


def _smooth(x):
    w = _SMOOTH.to(x.device).view(1, 1, 3, 3).repeat(3, 1, 1, 1)
    return F.conv2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), w, groups=3)


def _posterize(x, m):
    step = torch.pow(2.0, torch.round(6 * m)).view(-1, 1, 1, 1)         # 2^(8 - bits), bits = 8 - round(6 m)
    return torch.floor(torch.round(x * 255) / step) * step / 255


def _autocontrast(x):
    lo = x.amin(dim=(2, 3), keepdim=True)
    hi = x.amax(dim=(2, 3), keepdim=True)
    return torch.where(hi > lo, (x - lo) / (hi - lo).clamp_min(1e-6), x)


def mix(x, y, g, num_classes, mixup_alpha=0.8, cutmix_alpha=1.0, smoothing=0.1):
    """MixUp (x' = l x + (1 - l) x[perm]) or CutMix (a random box of area 1 - l from x[perm]), one of the two per
    batch; targets are the same mixture of label-smoothed one-hot vectors. Both are computed as tensors and the
    batch's choice taken with torch.where: nothing is read back to the host."""
    B, _, H, W = x.shape
    perm = torch.randperm(B, generator=g, device=g.device)
    off = smoothing / num_classes
    onehot = torch.full((B, num_classes), off, device=x.device)
    onehot.scatter_(1, y.view(-1, 1), 1.0 - smoothing + off)
    use_cutmix = _uniform(1, g) < 0.5                                       # [1] bool
    alpha = mixup_alpha + (cutmix_alpha - mixup_alpha) * use_cutmix.float()
    ga, gb = _gamma_from_uniform(_uniform(2, g), alpha)          # lam ~ Beta(alpha, alpha) = Ga / (Ga + Gb)
    lam = ga / (ga + gb)                                                    # [1]
    # CutMix box of side floor(H sqrt(1 - lam)) around a random centre, clipped to the image
    cut = torch.sqrt(1.0 - lam)
    ch, cw = torch.floor(H * cut), torch.floor(W * cut)
    cy = torch.randint(0, H, (1,), generator=g, device=g.device).float()
    cx = torch.randint(0, W, (1,), generator=g, device=g.device).float()
    y0, y1 = (cy - torch.floor(ch / 2)).clamp_min(0), (cy + torch.floor(ch / 2)).clamp_max(H)
    x0, x1 = (cx - torch.floor(cw / 2)).clamp_min(0), (cx + torch.floor(cw / 2)).clamp_max(W)
    rows = torch.arange(H, device=x.device).view(H, 1)
    cols = torch.arange(W, device=x.device).view(1, W)
    box = (rows >= y0) & (rows < y1) & (cols >= x0) & (cols < x1)           # [H, W]
    lam_cut = 1.0 - (y1 - y0) * (x1 - x0) / (H * W)                        # the area actually pasted
    other = x[perm]
    mixed = torch.where(use_cutmix.view(1, 1, 1, 1), torch.where(box, other, x), lam * x + (1.0 - lam) * other)
    lam = torch.where(use_cutmix, lam_cut, lam).view(1, 1)
    return mixed, lam * onehot + (1.0 - lam) * onehot[perm]


def _gamma_from_uniform(u, alpha):
    """Approximate Gamma(alpha, 1) samples from uniforms u through the Wilson-Hilferty inverse CDF (torch's own
    samplers take no generator; mixing weights need no more accuracy than this)."""
    alpha = torch.as_tensor(alpha, dtype=u.dtype, device=u.device)
    z = math.sqrt(2.0) * torch.erfinv(2.0 * u.clamp(1e-6, 1 - 1e-6) - 1.0)
    return (alpha * (1.0 - 1.0 / (9.0 * alpha) + z / (3.0 * torch.sqrt(alpha))) ** 3).clamp_min(1e-6)
