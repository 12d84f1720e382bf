"""Batched CIFAR-10 augmentations on the training device (tools/train_cifar.py --recipe gpu).

Every function takes float images [B, 3, H, W] in [0, 1] (channels first, before normalisation) and a
torch.Generator on the same device, so a step's augmentation depends only on the seed it was given (resumable runs
repeat it exactly) and no image leaves the GPU.

  crop_flip(x, g)         random translation by up to 4 pixels with reflected borders (the 4-pixel padded crop of
                          the CIFAR recipes) and a horizontal flip with probability 1/2
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


def _blend(a, b, f):
    """b + f (a - b) per image (f [B]), clamped to [0, 1]: f = 0 gives b, 1 gives a, > 1 extrapolates."""
    return (b + f.view(-1, 1, 1, 1) * (a - b)).clamp_(0.0, 1.0)


def _gray(x):
    return (0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]).expand_as(x)


_SMOOTH = torch.tensor([[1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 1.0]]) / 13.0  # PIL's SMOOTH filter


def trivial_augment(x, g):
    B = x.shape[0]
    op = torch.randint(0, 13, (B,), generator=g, device=g.device)
    m = _uniform(B, g)                                           # strength in [0, 1]
    sign = torch.where(_uniform(B, g) < 0.5, -1.0, 1.0)
    out = x.clone()
    for k in range(1, 13):                                       # 0: identity
        sel = (op == k).nonzero(as_tuple=True)[0]
        if sel.numel() == 0:
            continue
        xs, ms, ss = x[sel], m[sel], sign[sel]
        n = xs.shape[0]
        if k == 1:                                               # brightness: factor 1 +- 0.99 m
            ys = _blend(xs, torch.zeros_like(xs), 1 + ss * 0.99 * ms)
        elif k == 2:                                             # contrast: towards the mean grey level
            mean = _gray(xs).mean(dim=(1, 2, 3), keepdim=True).expand_as(xs)
            ys = _blend(xs, mean, 1 + ss * 0.99 * ms)
        elif k == 3:                                             # colour (saturation)
            ys = _blend(xs, _gray(xs), 1 + ss * 0.99 * ms)
        elif k == 4:                                             # sharpness: away from / towards a smoothed copy
            w = _SMOOTH.to(xs.device).view(1, 1, 3, 3).repeat(3, 1, 1, 1)
            blur = F.conv2d(F.pad(xs, (1, 1, 1, 1), mode="replicate"), w, groups=3)
            ys = _blend(xs, blur, 1 + ss * 0.99 * ms)
        elif k == 5:                                             # posterize: keep 8 - round(6 m) bits
            bits = (8 - torch.round(6 * ms)).view(-1, 1, 1, 1)
            step = torch.pow(2.0, 8 - bits)
            ys = torch.floor(torch.round(xs * 255) / step) * step / 255
        elif k == 6:                                             # solarize: invert above a threshold 1 - m
            thr = (1 - ms).view(-1, 1, 1, 1)
            ys = torch.where(xs >= thr, 1 - xs, xs)
        elif k == 7:                                             # autocontrast: stretch each channel to [0, 1]
            lo = xs.amin(dim=(2, 3), keepdim=True)
            hi = xs.amax(dim=(2, 3), keepdim=True)
            ys = torch.where(hi > lo, (xs - lo) / (hi - lo).clamp_min(1e-6), xs)
        else:                                                    # geometric: rotate, shear x/y, translate x/y
            theta = torch.zeros(n, 2, 3, device=xs.device)
            theta[:, 0, 0] = theta[:, 1, 1] = 1.0
            if k == 8:                                           # rotate by up to 135 degrees
                a = ss * ms * math.radians(135)
                theta[:, 0, 0], theta[:, 0, 1] = torch.cos(a), -torch.sin(a)
                theta[:, 1, 0], theta[:, 1, 1] = torch.sin(a), torch.cos(a)
            elif k == 9:                                         # shear x up to 0.99
                theta[:, 0, 1] = ss * 0.99 * ms
            elif k == 10:                                        # shear y
                theta[:, 1, 0] = ss * 0.99 * ms
            elif k == 11:                                        # translate x by up to 32 pixels (wide)
                theta[:, 0, 2] = ss * ms * 2.0
            else:                                                # translate y
                theta[:, 1, 2] = ss * ms * 2.0
            grid = F.affine_grid(theta, list(xs.shape), align_corners=False)
            ys = F.grid_sample(xs, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        out[sel] = ys
    return out


def mix(x, y, g, num_classes, mixup_alpha=0.8, cutmix_alpha=1.0, smoothing=0.1):
    """MixUp (x' = l x + (1 - l) x[perm]) or CutMix (a random box of area 1 - l from x[perm]), one of the two per
    batch; targets are the same mixture of label-smoothed one-hot vectors."""
    B, _, H, W = x.shape
    perm = torch.randperm(B, generator=g, device=g.device)
    off = smoothing / num_classes
    onehot = torch.full((B, num_classes), off, device=x.device)
    onehot.scatter_(1, y.view(-1, 1), 1.0 - smoothing + off)
    use_cutmix = bool(_uniform(1, g) < 0.5)
    alpha = cutmix_alpha if use_cutmix else mixup_alpha
    ga, gb = _gamma_from_uniform(_uniform(2, g), alpha)          # lam ~ Beta(alpha, alpha) = Ga / (Ga + Gb)
    lam = float(ga / (ga + gb))
    if use_cutmix:
        cut = math.sqrt(1.0 - lam)
        ch, cw = int(H * cut), int(W * cut)
        cy = int(torch.randint(0, H, (1,), generator=g, device=g.device))
        cx = int(torch.randint(0, W, (1,), generator=g, device=g.device))
        y0, y1 = max(cy - ch // 2, 0), min(cy + ch // 2, H)
        x0, x1 = max(cx - cw // 2, 0), min(cx + cw // 2, W)
        x = x.clone()
        x[:, :, y0:y1, x0:x1] = x[perm, :, y0:y1, x0:x1]
        lam = 1.0 - (y1 - y0) * (x1 - x0) / (H * W)                # the area actually pasted
    else:
        x = lam * x + (1.0 - lam) * x[perm]
    return x, lam * onehot + (1.0 - lam) * onehot[perm]


def _gamma_from_uniform(u, alpha):
    """Approximate Gamma(alpha, 1) samples from uniforms u through the Wilson-Hilferty inverse CDF (torch's own
    samplers take no generator; mixing weights need no more accuracy than this)."""
    z = math.sqrt(2.0) * torch.erfinv(2.0 * u.clamp(1e-6, 1 - 1e-6) - 1.0)
    return (alpha * (1.0 - 1.0 / (9.0 * alpha) + z / (3.0 * math.sqrt(alpha))) ** 3).clamp_min(1e-6)
