#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A convolutional teacher for distilling the bundled CIFAR-10 models (lab/train_cifar.py --teacher).

    python3 lab/cifar_teacher.py --device cuda --epochs 40 --out teacher.pt     # trains, evaluates, saves

Small vision transformers trained from scratch on 50,000 images learn slowly what a convolution has built in
(locality, translation invariance); DeiT (Touvron et al. 2021) showed that a convnet teacher closes much of that gap.
The teacher here is the ResNet-9 of David Page's DAWNBench entry ("How to train your ResNet", 2018), which reaches
about 94 % on CIFAR-10 in 24 epochs of a few seconds each on a GPU (here, on the JPEG re-encoding of
../shared/data: 92.18 % after 40 epochs, 37 s on an H200, 2026-11-28):

    prep    conv 3x3 3->64, BN, ReLU                                                   [B, 64, 32, 32]
    layer1  conv 64->128, BN, ReLU, max-pool 2; + residual (2 x conv 128->128, BN, ReLU) [B, 128, 16, 16]
    layer2  conv 128->256, BN, ReLU, max-pool 2                                        [B, 256, 8, 8]
    layer3  conv 256->512, BN, ReLU, max-pool 2; + residual (2 x conv 512->512, BN, ReLU) [B, 512, 4, 4]
    head    global max-pool, linear 512->10 without bias, logits x 0.125

Training (Page's recipe): SGD with Nesterov momentum 0.9, weight decay 5e-4, a learning rate rising linearly to 0.4
over the first 5 epochs and falling linearly to 0, batch 512, label smoothing 0.2, 4-pixel crops, flips and an 8x8
cutout, bf16 autocast and channels-last on CUDA; the whole training set on the device, augmented there
(lab/cifar_augment.py). Input: the same normalised images as the students, channels first [B, 3, 32, 32].

The saved file is a dict {"arch": "resnet9", "width": float, "state": fp16 state dict, "test_acc": float, "epochs":
int} of about 13 MB at width 1 (a file without "width" is width 1); `load(path, device)` gives the network back in
eval mode.

Several teachers (trained with different --seed) make a stronger one: `load_ensemble(paths, device)` gives an
`Ensemble` whose output is the mean of their class probabilities (train_cifar.py --teacher A.pt --teacher B.pt ...).
An ensemble of networks trained from different initialisations is the cheapest way to a more accurate, better
calibrated teacher: each member costs one forward pass per student step (a ResNet-9's is ~0.75 GFLOP per image,
a third of a ViT-5 student's training step), and none of them is trained any longer. On a lent H200 (2026-11-28),
three teachers of 40 epochs trained side by side in 86 s (91.94, 91.64 and 91.44 %); their mean probabilities
reach 92.65 %.
"""

import argparse
import contextlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "reference"))
sys.path.insert(1, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "tools"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def conv_bn(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.res = nn.Sequential(conv_bn(c, c), conv_bn(c, c))

    def forward(self, x):
        return x + self.res(x)


class ResNet9(nn.Module):
    """width: a multiplier of every layer's channels (64, 128, 256, 512 at 1; --width); FLOPs grow as its square."""

    def __init__(self, num_classes=10, width=1.0):
        super().__init__()
        c1, c2, c3, c4 = (max(1, round(c * width)) for c in (64, 128, 256, 512))
        self.width = width
        self.net = nn.Sequential(
            conv_bn(3, c1),
            conv_bn(c1, c2), nn.MaxPool2d(2), Residual(c2),
            conv_bn(c2, c3), nn.MaxPool2d(2),
            conv_bn(c3, c4), nn.MaxPool2d(2), Residual(c4),
            nn.AdaptiveMaxPool2d(1), nn.Flatten(),
            nn.Linear(c4, num_classes, bias=False))

    def forward(self, x):                     # x: normalised [B, 3, 32, 32] -> logits [B, classes]
        return self.net(x) * 0.125


def cutout(x, g, size=8):
    """Zeroes (the normalised mean) one random size x size square per image, clipped at the borders."""
    B, _, H, W = x.shape
    y0 = torch.randint(0, H, (B, 1, 1), generator=g, device=g.device) - size // 2
    x0 = torch.randint(0, W, (B, 1, 1), generator=g, device=g.device) - size // 2
    rows = torch.arange(H, device=x.device).view(1, H, 1)
    cols = torch.arange(W, device=x.device).view(1, 1, W)
    box = (rows >= y0) & (rows < y0 + size) & (cols >= x0) & (cols < x0 + size)     # [B, H, W]
    return x.masked_fill(box.unsqueeze(1), 0.0)


def load(path, device):
    state = torch.load(path, map_location=device, weights_only=False)   # our own file: a dict of tensors and ints
    if state.get("arch") != "resnet9":
        sys.exit(f"cifar_teacher: {path} is not a resnet9 teacher")
    net = ResNet9(width=state.get("width", 1.0)).to(device)
    net.load_state_dict({k: v.float() for k, v in state["state"].items()})
    net.eval()
    if device.type == "cuda":
        net = net.to(memory_format=torch.channels_last)
    return net, state.get("test_acc")


class Ensemble(nn.Module):
    """Teachers whose class probabilities are averaged: normalised [B, 3, 32, 32] -> probabilities [B, classes]
    (fp32, each row sums to 1). One teacher is an ensemble of one."""

    def __init__(self, nets):
        super().__init__()
        self.nets = nn.ModuleList(nets)

    def forward(self, x):
        probs = F.softmax(self.nets[0](x).float(), dim=1)
        for net in self.nets[1:]:
            probs = probs + F.softmax(net(x).float(), dim=1)
        return probs / len(self.nets)


def load_ensemble(paths, device):
    """(Ensemble of the teachers in `paths`, in eval mode; [each one's saved test accuracy])."""
    nets, accs = zip(*(load(path, device) for path in paths))
    ensemble = Ensemble(list(nets))
    ensemble.eval()
    return ensemble, list(accs)


@torch.no_grad()
def evaluate(net, x_norm, y, batch=1000):
    """x_norm: normalised [N, 3, 32, 32] on the device; y: int64 [N] on the device. Top-1 accuracy of a network
    (its logits) or of an Ensemble (its probabilities)."""
    was_training = net.training
    net.eval()
    correct = 0
    for i in range(0, len(x_norm), batch):
        with amp_context(x_norm.device):
            correct += int((net(x_norm[i:i + batch]).argmax(1) == y[i:i + batch]).sum())
    net.train(was_training)
    return correct / len(x_norm)


def amp_context(device):
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else contextlib.nullcontext()


def train(xtr, ytr, xte, yte, device, epochs=40, batch=512, peak_lr=0.4, warmup_epochs=5, seed=0, width=1.0,
          log=print):
    """Trains a ResNet9 on uint8 [N, 32, 32, 3] images and returns (net in eval mode, test accuracy)."""
    import cifar_augment
    from train_cifar import CIFAR_MEAN, CIFAR_STD
    torch.manual_seed(seed)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    mean = torch.tensor(CIFAR_MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR_STD, device=device).view(1, 3, 1, 1)
    fmt = torch.channels_last if device.type == "cuda" else torch.contiguous_format

    def prepare(x_uint8):                                             # uint8 NHWC -> float NCHW in [0, 1]
        return torch.from_numpy(x_uint8).to(device).permute(0, 3, 1, 2).float().div_(255.0)

    xtr_dev, ytr_dev = prepare(xtr), torch.from_numpy(ytr).to(device)
    xte_dev = ((prepare(xte) - mean) / std).contiguous(memory_format=fmt)
    yte_dev = torch.from_numpy(yte).to(device)
    net = ResNet9(width=width).to(device).to(memory_format=fmt)
    decay = [p for p in net.parameters() if p.ndim > 1]
    no_decay = [p for p in net.parameters() if p.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=0.0, momentum=0.9, nesterov=True)
    steps_per_epoch = len(xtr) // batch
    total, warmup = epochs * steps_per_epoch, warmup_epochs * steps_per_epoch
    t0 = time.time()
    step = 0
    net.train()
    for epoch in range(epochs):
        order = torch.from_numpy(np.random.default_rng([seed, 7, epoch]).permutation(len(xtr))).to(device)
        for k in range(steps_per_epoch):
            lr = peak_lr * (step / warmup if step < warmup else (total - step) / (total - warmup))
            for group in opt.param_groups:
                group["lr"] = lr
            idx = order[k * batch:(k + 1) * batch]
            g = torch.Generator(device=device).manual_seed(seed * 7919 + step)
            x = cutout((cifar_augment.crop_flip(xtr_dev[idx], g) - mean) / std, g)
            with amp_context(device):
                logits = net(x.contiguous(memory_format=fmt))
            loss = F.cross_entropy(logits.float(), ytr_dev[idx], label_smoothing=0.2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
        if (epoch + 1) % 10 == 0 or epoch + 1 == epochs:
            acc = evaluate(net, xte_dev, yte_dev)
            log(f"teacher epoch {epoch + 1}/{epochs}: loss {float(loss.detach()):.4f}, "
                f"test accuracy {100 * acc:.2f} %, {time.time() - t0:.1f} s")
    net.eval()
    return net, acc


def save(net, path, test_acc, epochs):
    from train_cifar import save_checkpoint                     # written atomically, like the students' checkpoints
    save_checkpoint(path, {"arch": "resnet9", "width": net.width, "test_acc": test_acc, "epochs": epochs,
                           "state": {k: v.detach().half().cpu() for k, v in net.state_dict().items()}})


def main(argv=None):
    import train_cifar
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=train_cifar.DEFAULT_DATA, help="the CIFAR-10 JPEG tarball")
    p.add_argument("--cache", default=os.path.join(train_cifar.REPO, "build", "cifar10-cache"),
                   help="where the decoded arrays are kept (shared with train_cifar.py)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--epochs", type=int, default=40, help="(default: %(default)s)")
    p.add_argument("--train-limit", type=int, default=0,
                   help="train on N random images only, and evaluate on N / 5 (a quick check; 0 = all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--width", type=float, default=1.0,
                   help="channel multiplier (default: %(default)s; 2 = 128-1024 channels, 4x the FLOPs and 26 M "
                        "parameters, a 52 MB file)")
    p.add_argument("--out", required=True, help="the teacher file to write")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error("--epochs must be at least 1")
    if not 0 < args.width <= 8:
        p.error("--width must be in (0, 8]")
    xtr, ytr, xte, yte = train_cifar.load_data(args.data, args.cache)
    if args.train_limit:          # a random subset: the arrays are sorted by class
        rng = np.random.default_rng(args.seed)
        tr = rng.choice(len(xtr), args.train_limit, replace=False)
        te = rng.choice(len(xte), max(1, args.train_limit // 5), replace=False)
        xtr, ytr, xte, yte = xtr[tr], ytr[tr], xte[te], yte[te]
    device = torch.device(args.device)
    train_cifar.log(f"teacher: ResNet-9 (width x{args.width:g}), {args.epochs} epochs on {len(xtr)} images, "
                    f"device {device} "
                    f"({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}), "
                    f"PyTorch {torch.__version__}")
    net, acc = train(xtr, ytr, xte, yte, device, epochs=args.epochs, seed=args.seed, width=args.width,
                     batch=min(512, len(xtr)), log=train_cifar.log)
    save(net, args.out, acc, args.epochs)
    train_cifar.log(f"teacher: wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB), "
                    f"test accuracy {100 * acc:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
