#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""lab/cifar_augment.py, the on-device augmentations of lab/train_cifar.py --recipe gpu, on the CPU:

  - crop_flip shifts each image by whole pixels (up to 4) and flips it or not: the interior of every output equals
    the input shifted (and flipped) exactly;
  - zoom returns the other images exactly and resamples the chosen ones by a scale in [min_scale, 1];
  - trivial_augment keeps shapes and the [0, 1] range, leaves identity-drawn images untouched, changes most images;
  - mix returns probability vectors (each row sums to 1, no negative entry) whose mass lies on the two mixed labels,
    and MixUp's weight follows Beta(0.8, 0.8) (mean 0.5, standard deviation 0.31) over many draws;
  - every function gives the same result for the same generator seed (resumed runs repeat a step exactly).
Exit 77 without PyTorch."""
import itertools
import os
import statistics
import sys

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not importable (run with /usr/bin/python3, Debian python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lab"))
import cifar_augment as ca  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import check, summary  # noqa: E402  (the shared check counter)


def gen(seed):
    return torch.Generator().manual_seed(seed)


x = torch.rand(48, 3, 32, 32, generator=gen(7))
y = torch.randint(0, 10, (48,), generator=gen(8))

out = ca.crop_flip(x, gen(1))
exact = 0
for i in range(len(x)):
    for dy, dx, flip in itertools.product(range(-4, 5), range(-4, 5), (False, True)):
        src = x[i].flip(-1) if flip else x[i]
        if torch.allclose(out[i, :, 6:26, 6:26], src[:, 6 + dy:26 + dy, 6 + dx:26 + dx], atol=1e-5):
            exact += 1
            break
check(exact == len(x), f"crop_flip: {exact} of {len(x)} images are whole-pixel shifts (and flips) of the input")
check(torch.equal(out, ca.crop_flip(x, gen(1))), "crop_flip is not repeatable for the same seed")

zoomed = ca.zoom(x, gen(3), min_scale=0.5, p=0.5)
kept = [i for i in range(len(x)) if torch.equal(zoomed[i], x[i])]
check(8 <= len(kept) <= 40, f"zoom with p = 1/2 left {len(kept)} of {len(x)} images as they were")
check(torch.equal(zoomed, ca.zoom(x, gen(3), min_scale=0.5, p=0.5)), "zoom is not repeatable for the same seed")
# a close-up by s of a horizontal ramp has slope s: the zoomed image's columns step by s / 31 (x: 0 .. 1 over 32 px)
ramp = torch.linspace(0, 1, 32).view(1, 1, 1, 32).expand(16, 3, 32, 32).contiguous()
closeups = ca.zoom(ramp, gen(4), min_scale=0.5, p=1.0)
slopes = (closeups[:, 0, 16, 20] - closeups[:, 0, 16, 10]) / 10 * 31
check(bool(((slopes > 0.5 - 1e-3) & (slopes < 1.0 + 1e-3)).all()) and float(slopes.max() - slopes.min()) > 0.1,
      f"zoom: close-up scales {[round(float(v), 3) for v in slopes]} not spread over [0.5, 1]")

aug = ca.trivial_augment(x, gen(2))
check(aug.shape == x.shape and float(aug.min()) >= 0.0 and float(aug.max()) <= 1.0,
      f"trivial_augment: shape {tuple(aug.shape)}, range [{float(aug.min())}, {float(aug.max())}]")
same = sum(bool(torch.equal(aug[i], x[i])) for i in range(len(x)))
check(same < len(x) // 3, f"trivial_augment left {same} of {len(x)} images untouched (identity is 1 op of 13)")
check(torch.equal(aug, ca.trivial_augment(x, gen(2))), "trivial_augment is not repeatable for the same seed")

for seed in range(20):
    mixed, target = ca.mix(x, y, gen(100 + seed), 10, smoothing=0.1)
    rows = target.sum(dim=1)
    check(mixed.shape == x.shape and target.shape == (48, 10), f"mix seed {seed}: shapes")
    check(bool(torch.allclose(rows, torch.ones(48), atol=1e-5)) and float(target.min()) >= 0.0,
          f"mix seed {seed}: targets are not probability vectors (row sums {rows.min()}..{rows.max()})")
    # label smoothing 0.1 puts 0.01 on each class; the rest (0.9) goes to the two mixed labels
    # (same label twice: 0.91 on it, and 0.01 on the next)
    top2 = target.topk(2, dim=1).values.sum(dim=1)
    check(bool((top2 >= 0.92 - 1e-5).all()), f"mix seed {seed}: target mass is not on the mixed labels")
    on_labels = target.gather(1, y.view(-1, 1)).squeeze(1)
    check(bool((on_labels >= 0.01 - 1e-6).all()), f"mix seed {seed}: an image's own label lost all its mass")
lams = []
for seed in range(3000):
    u = ca._uniform(2, gen(seed))
    ga, gb = ca._gamma_from_uniform(u, 0.8)
    lams.append(float(ga / (ga + gb)))
mean, sd = statistics.mean(lams), statistics.pstdev(lams)
check(abs(mean - 0.5) < 0.03 and abs(sd - 0.31) < 0.03, f"MixUp weight mean {mean:.3f}, sd {sd:.3f} (want 0.5, 0.31)")

sys.exit(summary())
