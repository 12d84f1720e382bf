#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Train the bundled CIFAR-10 demo models (ViT-5 nvsubq and ViL seed) and export them as vkvit files.

    /usr/bin/python3 lab/train_cifar.py --arch vit5 --epochs 30            # trains, resumable, then exports
    /usr/bin/python3 lab/train_cifar.py --arch vit5 --epochs 30 --time-limit-min 50   # stop cleanly after 50 min
    /usr/bin/python3 lab/train_cifar.py --arch vit5 --epochs 30            # ... run again: resumes where it stopped
    /usr/bin/python3 lab/train_cifar.py --arch vit5 --export-only          # re-export the last checkpoint
    /usr/bin/python3 lab/train_cifar.py --arch vit5 --device cuda          # same recipe on a GPU machine
    /usr/bin/python3 lab/train_cifar.py --arch vit5 --time-budget-min 120  # schedule over wall-clock time
    python3 lab/train_cifar.py --arch vit5 --recipe gpu --device cuda      # the GPU recipe (issue 18), below

The networks are the reference modules of tools/reference/ (the same code that writes the goldens), so the
state_dict names ARE the vkvit tensor names (docs/model-format.md) and export is a plain copy.

Data: ../shared/data/cifar10-jpg.tar.gz (train/<class>/*.jpg, test/<class>/*.jpg). The first run decodes the
60,000 JPEGs once into uint8 arrays under the cache directory (~180 MB); later runs load those.

Recipe `cpu` (the default, chosen for a 2-core CPU budget; see --help for each knob): the demo-sized models, AdamW,
linear warm-up then cosine decay, label smoothing 0.1, random crop with 4-pixel reflect padding and horizontal flips.
Recipe `gpu` (--recipe gpu; each of its defaults below can still be overridden): the large models (ViT-5 width 192,
depth 12, 3 heads: 5.3 M parameters; ViL width 192, depth 12: 2.9 M), 200 epochs of 512 images, peak learning rate
2e-3 after 5 warm-up epochs, the whole training set on the device and every augmentation there
(lab/cifar_augment.py: close-ups of 50-100 % of the side for half the images, 4-pixel crops and flips,
TrivialAugment-wide, MixUp / CutMix with label smoothing; no step reads anything back to the host), bf16 autocast on
CUDA, torch.compile'd steps (eager if compiling fails), fused AdamW, an EMA of the weights (decay 0.9998, bounded by
the run's length) that is what gets evaluated and exported every 10 epochs, and fp16 weights in the exported file
(10.7 MB for ViT-5, 5.8 MB for ViL). Its checkpoints are named <arch>_large_cifar10.ckpt, apart from the demo
models' ones.

Measured on a lent H200 (2026-11-26, PyTorch 2.11, eager, before close-ups and torch.compile were added): 42 ms
per step for ViT-5 and 78 ms for ViL alone, 70 and 148 ms side by side; eight minutes of training each, side by
side, reached 80.4 % (ViT-5, 72 epochs) and 80.7 % (ViL, 34 epochs) with --time-budget-min 8. On a lent H100 the
same day, with torch.compile (about a minute to compile, counted as training time) and close-ups, side by side
(lab/gpu_train_cifar.sh --minutes 7.5): 34 ms per step for ViT-5 and 72 ms for ViL, 131 and 58 epochs, 83.78 %
and 82.45 %. Two later runs continued those (--init-from) for 7 and 3.3 minutes: 88.10 % and 86.16 %. The recipe's
200 epochs (19,400 steps) of ViT-5 would take 11 minutes at that side-by-side speed.

Distillation (--teacher T.pt, --distill w): a convolutional teacher (lab/cifar_teacher.py, a ResNet-9) sees every
augmented, mixed batch the student sees, and the loss becomes (1 - w) x the label loss + w x KL(teacher || student)
(student_loss). On a lent H200 (2026-11-28), a 92.18 % teacher (40 epochs, 37 s) distilled into the models of the
runs above for 6.6 minutes side by side (--lr 1e-3 --warmup-epochs 2) took ViT-5 from 88.10 to 91.18 % in 103
epochs and ViL from 86.16 to 88.59 % in 52; 2.3 more minutes of ViT-5 alone gave 91.21 %. Three teachers at
once (--teacher given three times: their mean probabilities, 92.65 %) then took ViT-5 to 92.01 % in 78 epochs and
ViL to 88.75 % in 39, side by side for 5.7 minutes: the bundled models (assets/models/README.md has the runs).

Checkpoints (model, optimiser, EMA, step) are written atomically every --ckpt-every-min minutes and at each
evaluation, so a run can be cut off at any point and resumed with the same command; the data order of an epoch
depends only on (seed, epoch), the on-device augmentation of a step only on (seed, step).

Schedules: with --epochs (default) warm-up and cosine decay run over a fixed number of steps, which is
reproducible. With --time-budget-min the cosine runs over the training time instead (accumulated across resumes,
evaluation excluded) and training stops when the budget is spent, fully annealed: the right choice on a shared
machine whose speed is unknown in advance, at the price of a step count that depends on that speed.
"""

import argparse
import contextlib
import io
import math
import os
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools", "reference"))
sys.path.insert(1, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "tools"))

# OpenBLAS's own thread pool spins; next to torch's threads on a busy 2-core machine it made a ViL step 10x slower.
# One BLAS thread per torch thread (set before torch loads OpenBLAS).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import vkvit_file  # noqa: E402
from mlstm import VisionLSTM  # noqa: E402
from vit5 import ViT5ClassificationNet  # noqa: E402

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
# Train-set channel statistics of the JPEG re-encoding (../shared/data/README.md gives the means).
CIFAR_MEAN = [0.4914, 0.4822, 0.4465]
CIFAR_STD = [0.2470, 0.2435, 0.2616]
DEFAULT_DATA = os.path.normpath(os.path.join(REPO, "..", "shared", "data", "cifar10-jpg.tar.gz"))

# The demo configurations. vit5: nvSubquadratic flavour with registers and QK-norm (issue 8); patch 4 on 32x32 gives
# 64 patches + CLS + 4 registers = 69 tokens. vil: seed numerics, 64 tokens.
CONFIGS = {
    "vit5": {
        "flavour": "nvsubq",
        "config": {
            "image_size": [32, 32], "patch_size": 4, "in_chans": 3, "dim": 64, "depth": 6, "num_heads": 2,
            "mlp_hidden": 256, "mlp_activation": "gelu", "num_registers": 4, "has_cls": True, "readout": "cls",
            "neck_dim": 0, "qk_norm": True, "norm_eps": 1e-6, "qk_norm_eps": 1e-6, "rope_base": 10000.0,
            "reg_rope_base": 100.0, "rope_pairing": "split_half", "token_layout": "patches_cls_regs",
            "layer_scale": True, "grn": False,
            "bias": {"patch_embed": True, "qkv": False, "proj": False, "mlp": False, "head": True},
            "num_classes": 10,
        },
    },
    "vil": {
        "flavour": "seed",
        "config": {
            "image_size": [32, 32], "patch_size": 4, "in_chans": 3, "dim": 64, "depth": 6, "inner_dim": 128,
            "num_heads": 4, "qkv_block_size": 4, "conv_kernel": 4, "pooling": "bilateral_avg", "norm_eps": 1e-5,
            "head_norm_eps": 1e-6, "num_classes": 10,
        },
    },
}


# The GPU recipe's models (issue 18: width 192-256, depth 8-12, patch 4, 2-6 M parameters).
LARGE = {
    "vit5": dict(CONFIGS["vit5"]["config"], dim=192, depth=12, num_heads=3, mlp_hidden=768),
    "vil": dict(CONFIGS["vil"]["config"], dim=192, depth=12, inner_dim=384),
}

# Defaults per recipe, for the options left unset on the command line.
RECIPES = {
    "cpu": {"size": "demo", "epochs": 8, "batch": 128, "lr": 1.5e-3, "warmup_epochs": 0.5, "augment": "crop-flip",
            "mix": False, "ema": 0.0, "amp": False, "export_dtype": "f32", "eval_every": 1,
            "compile": False, "zoom": 0.0},
    "gpu": {"size": "large", "epochs": 200, "batch": 512, "lr": 2e-3, "warmup_epochs": 5.0, "augment": "trivial",
            "mix": True, "ema": 0.9998, "amp": True, "export_dtype": "f16", "eval_every": 10,
            "compile": True, "zoom": 0.5},
}


def model_config(arch, size):
    return LARGE[arch] if size == "large" else CONFIGS[arch]["config"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------------------------

def decode_archive(tar_path):
    """{split: (images uint8 [N, 32, 32, 3], labels int64 [N])} from the JPEG tarball, in sorted member order."""
    from PIL import Image
    found = {"train": [], "test": []}
    with tarfile.open(tar_path, "r|gz") as tar:          # one sequential pass: gzip cannot seek backwards cheaply
        for m in tar:
            parts = m.name.split("/")
            if not m.isfile() or not m.name.lower().endswith(".jpg") or len(parts) < 3:
                continue
            if parts[-3] not in found or parts[-2] not in CLASSES:
                continue
            with Image.open(io.BytesIO(tar.extractfile(m).read())) as im:
                arr = np.asarray(im.convert("RGB"), dtype=np.uint8)
            if arr.shape != (32, 32, 3):
                raise ValueError(f"{m.name}: expected a 32x32 image, got {arr.shape}")
            found[parts[-3]].append((m.name, arr, CLASSES.index(parts[-2])))
    out = {}
    for split, items in found.items():                  # sorted by member name: the same order on every machine
        items.sort(key=lambda t: t[0])
        out[split] = ([t[1] for t in items], [t[2] for t in items])
    return {k: (np.stack(v[0]), np.array(v[1], dtype=np.int64)) for k, v in out.items()}


def load_data(tar_path, cache_dir):
    cache = os.path.join(cache_dir, "cifar10.npz")
    if not os.path.exists(cache):
        if not os.path.exists(tar_path):
            sys.exit(f"train_cifar: {tar_path} not found (pass --data)")
        log(f"decoding {tar_path} once into {cache}")
        d = decode_archive(tar_path)
        os.makedirs(cache_dir, exist_ok=True)
        np.savez(cache + ".tmp.npz", xtr=d["train"][0], ytr=d["train"][1], xte=d["test"][0], yte=d["test"][1])
        os.replace(cache + ".tmp.npz", cache)
    z = np.load(cache)
    if len(z["xtr"]) != 50000 or len(z["xte"]) != 10000:
        sys.exit(f"train_cifar: {cache} has {len(z['xtr'])}/{len(z['xte'])} images, expected 50000/10000")
    return z["xtr"], z["ytr"], z["xte"], z["yte"]


def normalise(x_uint8, device):
    """uint8 [B, H, W, 3] -> float [B, H, W, 3] normalised channels-last (the vkvit input layout)."""
    x = torch.from_numpy(x_uint8).to(device).float().div_(255.0)
    return (x - torch.tensor(CIFAR_MEAN, device=device)) / torch.tensor(CIFAR_STD, device=device)


def augment(x_uint8, rng, crop=True):
    """Random 32x32 crop of the 4-pixel reflect-padded image (when `crop`) and a horizontal flip with probability
    1/2. Short schedules (a few epochs) learn faster without the crops."""
    B = len(x_uint8)
    padded = np.pad(x_uint8, ((0, 0), (4, 4), (4, 4), (0, 0)), mode="reflect")
    oy, ox = (rng.integers(0, 9, B), rng.integers(0, 9, B)) if crop else (np.full(B, 4), np.full(B, 4))
    flip = rng.random(B) < 0.5
    out = np.empty_like(x_uint8)
    for i in range(B):
        crop = padded[i, oy[i]:oy[i] + 32, ox[i]:ox[i] + 32]
        out[i] = crop[:, ::-1] if flip[i] else crop
    return out


def zoom_augment(x, rng):
    """Random scale-and-translate crop + flip of normalised [B, H, W, 3] images, resampled bilinearly with
    reflection at the borders: each image shows a random square of 60-100 % of its side (a 'RandomResizedCrop'
    without aspect change), so the model also learns close-ups, as photos resized to 32 pixels often are."""
    B = x.shape[0]
    s = rng.uniform(0.6, 1.0, B)
    tx, ty = rng.uniform(-1, 1, B) * (1 - s), rng.uniform(-1, 1, B) * (1 - s)
    flip = np.where(rng.random(B) < 0.5, -1.0, 1.0)
    theta = np.zeros((B, 2, 3), dtype=np.float32)
    theta[:, 0, 0], theta[:, 0, 2], theta[:, 1, 1], theta[:, 1, 2] = s * flip, tx, s, ty
    theta = torch.from_numpy(theta).to(x.device)
    img = x.permute(0, 3, 1, 2)
    grid = F.affine_grid(theta, img.shape, align_corners=False)
    return F.grid_sample(img, grid, mode="bilinear", padding_mode="reflection",
                         align_corners=False).permute(0, 2, 3, 1).contiguous()


# ------------------------------------------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------------------------------------------

def build(arch, config):
    spec = CONFIGS[arch]
    doc = {"architecture": arch, "flavour": spec["flavour"], "config": config}
    if arch == "vit5":
        net = ViT5ClassificationNet.from_config(doc)
        init_vit5(net)
    else:
        net = VisionLSTM.from_config(doc)
        init_vil(net)
        for block in net.blocks:
            for proj in (block.mlstm.q_proj, block.mlstm.k_proj, block.mlstm.v_proj):
                proj.forward = _headwise_as_dense.__get__(proj)
    return net


def init_vit5(net):
    for m in net.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    for p in (net.pos_embed, net.cls_token, net.reg_token):
        if p is not None:
            nn.init.trunc_normal_(p, std=0.02)
    for block in net.blocks:   # LayerScale 0.1 (CaiT's value for shallow nets): learns fast in a short schedule
        for ls in (block.ls_attn, block.ls_mlp):
            if hasattr(ls, "gamma"):
                nn.init.constant_(ls.gamma, 0.1)


def _headwise_as_dense(self, x):
    """Training-speed replacement for LinearHeadwiseExpand.forward: the same block-diagonal map as one dense
    [E, E] matmul (einsum over 4x4 blocks becomes thousands of tiny batched GEMMs on a CPU, ~10x slower).
    dense[p*d + i, q*d + o] = (p == q) W[p, o, i], built by broadcasting (torch.block_diag copies block by block:
    hundreds of kernel launches per call on a GPU)."""
    P, O, I = self.weight.shape
    eye = torch.eye(P, dtype=self.weight.dtype, device=self.weight.device)
    dense = (eye[:, None, :, None] * self.weight.transpose(1, 2)[:, :, None, :]).reshape(P * I, P * O)
    y = x @ dense                                        # out p*d + o = sum_i W[p, o, i] x[p*d + i]
    return y + self.bias if self.bias is not None else y


def use_fused_kernels(device, amp):
    """On a CUDA device with PyTorch >= 2.4, trains through fused kernels where the reference modules spell the
    math out op by op (the modules stay the golden writers; only this process's copies are patched):
    scaled_dot_product_attention for vit5.softmax_attention, F.rms_norm for RMSNorm. Each replacement is first
    compared with the original on random inputs (fp32, and under bf16 autocast when `amp`) and kept only if it
    agrees; what is used is logged."""
    if device.type != "cuda":
        return
    import common
    import vit5

    def sdpa(q, k, v, scale, mask=None):
        q, k = q.to(v.dtype), k.to(v.dtype)   # RoPE's fp32 tables promote q, k; autocast leaves v in bf16
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)

    def rms_forward(self, x):
        return F.rms_norm(x.float(), (self.dim,), self.weight.float(), self.eps).to(x.dtype)

    g = torch.Generator(device=device).manual_seed(1)
    q, k, v = (torch.randn(4, 3, 69, 64, device=device, generator=g) for _ in range(3))
    norm = common.RMSNorm(64).to(device)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5, generator=g)
    cases = [("scaled_dot_product_attention", lambda: vit5.softmax_attention(q, k, v, 0.125),
              lambda: sdpa(q, k, v, 0.125), lambda: setattr(vit5, "softmax_attention", sdpa)),
             ("rms_norm", lambda: norm(q), lambda: rms_forward(norm, q),
              lambda: setattr(common.RMSNorm, "forward", rms_forward))]
    for name, original, fused, install in cases:
        try:
            ok = bool(torch.allclose(fused().float(), original().float(), rtol=1e-4, atol=1e-4))
            if ok and amp:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    ok = bool(torch.allclose(fused().float(), original().float(), rtol=3e-2, atol=3e-2))
        except Exception as e:                       # an older PyTorch: no such function or argument
            log(f"fused {name}: not used ({type(e).__name__}: {e})")
            continue
        if ok:
            install()
        log(f"fused {name}: {'used' if ok else 'not used, it disagrees with the reference'}")


def init_vil(net):
    """NX-AI's ViL init: small_init for the inputs, wang_init for proj_down, zero gate weights, forget-gate biases
    spread over [3, 6] so different heads start with different memory lengths."""
    dim, depth = net.dim, len(net.blocks)
    small = math.sqrt(2 / (5 * dim))
    for block in net.blocks:
        cell = block.mlstm
        nn.init.normal_(cell.proj_up.weight, std=small)
        for proj in (cell.q_proj, cell.k_proj, cell.v_proj):
            nn.init.normal_(proj.weight, std=small)
        nn.init.normal_(cell.proj_down.weight, std=2 / depth / math.sqrt(dim))
        nn.init.zeros_(cell.igate.weight)
        nn.init.zeros_(cell.fgate.weight)
        nn.init.normal_(cell.igate.bias, std=0.1)
        with torch.no_grad():
            cell.fgate.bias.copy_(torch.linspace(3.0, 6.0, cell.fgate.bias.numel()))
    nn.init.trunc_normal_(net.pos_embed.embed, std=0.02)
    nn.init.trunc_normal_(net.head.weight, std=0.02)
    nn.init.zeros_(net.head.bias)


def param_groups(net, weight_decay):
    """No weight decay on 1-D parameters (norms, biases, LayerScale, skips) or on tokens / position embeddings."""
    decay, no_decay = [], []
    for name, p in net.named_parameters():
        (no_decay if p.ndim <= 1 or "token" in name or "pos_embed" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def lr_at(step, total, warmup, peak):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))


def student_loss(logits, y, target, label_smoothing, soft=None, distill=0.0):
    """The training loss of logits [B, classes]: cross-entropy against the labels y [B] (smoothed) when target is y,
    else against the soft targets [B, classes] of MixUp / CutMix; with a teacher's probabilities soft [B, classes],
    (1 - distill) x that + distill x KL(soft || softmax(logits)), averaged over the batch (DeiT's soft distillation
    at temperature 1; its gradient on the logits is (1 - distill) (p - target) / B + distill (p - soft) / B)."""
    log_p = F.log_softmax(logits.float(), dim=1)
    if target is y:
        loss = F.cross_entropy(logits.float(), y, label_smoothing=label_smoothing)
    else:
        loss = torch.sum(-target * log_p, dim=1).mean()
    if soft is not None:
        loss = (1 - distill) * loss + distill * F.kl_div(log_p, soft, reduction="batchmean")
    return loss


@torch.no_grad()
def evaluate(net, x, y, device, batch=500):
    net.eval()
    correct = 0
    for i in range(0, len(x), batch):
        logits = net(normalise(x[i:i + batch], device))
        correct += int((logits.argmax(1).cpu() == torch.from_numpy(y[i:i + batch])).sum())
    net.train()
    return correct / len(x)


# ------------------------------------------------------------------------------------------------------------------
# Checkpoints and export
# ------------------------------------------------------------------------------------------------------------------

def save_checkpoint(path, state):
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def vkvit_document(arch, config, test_acc):
    spec = CONFIGS[arch]
    name = f"{arch}-{spec['flavour']}-cifar10"
    doc = {"format_version": 1, "architecture": arch, "flavour": spec["flavour"], "name": name,
           "config": config,
           "preprocess": {"image_size": [32, 32], "resize_shorter": 32, "interpolation": "bicubic",
                          "mean": CIFAR_MEAN, "std": CIFAR_STD},
           "labels": CLASSES}
    if test_acc is not None:
        doc["name"] = f"{name} (test accuracy {100 * test_acc:.2f} %)"
    return doc


def export(net, arch, config, out_path, test_acc, dtype="f32"):
    """The weights as a vkvit file, fp32 or fp16 (the runtime reads both; fp16 halves the file)."""
    to = torch.float16 if dtype == "f16" else torch.float32
    tensors = {k: v.detach().to(to).cpu().contiguous() for k, v in net.state_dict().items()}
    doc = vkvit_document(arch, config, test_acc)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    vkvit_file.write_model(out_path, tensors, doc)
    log(f"wrote {out_path} ({os.path.getsize(out_path) / 1e6:.2f} MB, {doc['name']})")


def init_weights(net, arch, config, path):
    """Loads an exported model file (fp16 or fp32 weights) into net, refusing another architecture or configuration:
    the names are the state dict's (export is a plain copy), so every tensor must be there with its shape."""
    tensors, doc = vkvit_file.read_model(path)
    if doc["architecture"] != arch or doc["config"] != config:
        sys.exit(f"train_cifar: {path} is a {doc['architecture']} with another configuration than --arch {arch} "
                 f"--size ({doc['config']})")
    state = net.state_dict()
    if set(tensors) != set(state):
        sys.exit(f"train_cifar: {path}: tensors differ from the network's "
                 f"(missing {sorted(set(state) - set(tensors))[:3]}, extra {sorted(set(tensors) - set(state))[:3]})")
    net.load_state_dict({k: v.to(state[k].dtype) for k, v in tensors.items()})
    log(f"initialised from {path} ({doc['name']})")


# ------------------------------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=sorted(CONFIGS), required=True)
    p.add_argument("--recipe", choices=sorted(RECIPES), default="cpu",
                   help="defaults for the options below that are not given (module docstring; default: %(default)s)")
    p.add_argument("--size", choices=("demo", "large"), help="model size (recipe cpu: demo, gpu: large)")
    p.add_argument("--data", default=DEFAULT_DATA, help="CIFAR-10 JPEG tarball (default: %(default)s)")
    p.add_argument("--cache", default=os.path.join(REPO, "build-train"),
                   help="decoded data and checkpoints (default: %(default)s)")
    p.add_argument("--out", help="model file to write (default: assets/models/<arch>_cifar10.vkvit)")
    p.add_argument("--epochs", type=int, help="length of the schedule (recipe cpu: 8, gpu: 200)")
    p.add_argument("--batch", type=int, help="batch size (recipe cpu: 128, gpu: 512)")
    p.add_argument("--lr", type=float, help="peak learning rate (recipe cpu: 1.5e-3, gpu: 2e-3)")
    p.add_argument("--weight-decay", type=float, default=0.05, help="AdamW weight decay (default: %(default)s)")
    p.add_argument("--warmup-epochs", type=float, help="linear warm-up (recipe cpu: 0.5, gpu: 5)")
    p.add_argument("--augment", choices=("crop-flip", "flip", "zoom", "trivial"),
                   help="training augmentation: 4-pixel crops + flips, flips only, random 60-100 %% zooms + flips, "
                        "or crops + flips + TrivialAugment-wide on the device (recipe cpu: crop-flip, gpu: trivial)")
    p.add_argument("--zoom", type=float,
                   help="with --augment trivial: half the images become close-ups of this much of the side or more "
                        "(0 = off; recipe gpu: 0.5)")
    p.add_argument("--mix", type=int, choices=(0, 1), help="MixUp / CutMix (recipe cpu: 0, gpu: 1)")
    p.add_argument("--ema", type=float, help="EMA decay of the weights per step, 0 = off (recipe cpu: 0, gpu: 0.9998)")
    p.add_argument("--amp", type=int, choices=(0, 1), help="bf16 autocast on CUDA (recipe cpu: 0, gpu: 1)")
    p.add_argument("--compile", type=int, choices=(0, 1),
                   help="torch.compile the training steps on CUDA, eager if it fails (recipe cpu: 0, gpu: 1)")
    p.add_argument("--export-dtype", choices=("f32", "f16"), help="weights in the exported file (cpu: f32, gpu: f16)")
    p.add_argument("--label-smoothing", type=float, default=0.1, help="(default: %(default)s)")
    p.add_argument("--teacher", metavar="TEACHER.pt", action="append",
                   help="distil from this convolutional teacher (lab/cifar_teacher.py): it sees every augmented "
                        "batch the student sees, and the loss becomes (1 - w) x the label loss + w x KL(teacher || "
                        "student) with w = --distill. Given more than once: the teachers' mean probabilities")
    p.add_argument("--distill", type=float, default=0.5,
                   help="with --teacher: the weight w of the teacher's term (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="(default: %(default)s)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads, 0 = all cores (default: 0)")
    p.add_argument("--device", default="cpu", help="torch device, e.g. cuda (default: %(default)s)")
    p.add_argument("--time-budget-min", type=float, default=0,
                   help="cosine schedule over this much training time instead of --epochs (default: 0 = off)")
    p.add_argument("--time-limit-min", type=float, default=0,
                   help="checkpoint and stop after this many minutes; 0 = no limit (default: 0)")
    p.add_argument("--ckpt-every-min", type=float, default=5.0, help="(default: %(default)s)")
    p.add_argument("--eval-every", type=int, help="evaluate, checkpoint and export every this many epochs "
                                                  "(recipe cpu: 1, gpu: 10)")
    p.add_argument("--export-only", action="store_true", help="export the last checkpoint and exit")
    p.add_argument("--init-from", metavar="MODEL.vkvit",
                   help="start from this model file's weights (same architecture and configuration) instead of a "
                        "random initialisation, when no checkpoint exists yet: a second schedule (warm-up, cosine) "
                        "continues a model exported earlier, e.g. one trained on an earlier lease")
    args = p.parse_args(argv)
    for k, v in RECIPES[args.recipe].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.mix, args.amp, args.compile = bool(args.mix), bool(args.amp), bool(args.compile)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    out_path = args.out or os.path.join(REPO, "assets", "models", f"{args.arch}_cifar10.vkvit")
    suffix = "" if args.size == "demo" else "_" + args.size
    ckpt_path = os.path.join(args.cache, f"{args.arch}{suffix}_cifar10.ckpt")
    os.makedirs(args.cache, exist_ok=True)
    config = model_config(args.arch, args.size)

    torch.manual_seed(args.seed)
    net = build(args.arch, config).to(device)
    if args.init_from and not os.path.exists(ckpt_path):
        init_weights(net, args.arch, config, args.init_from)
    # EMA of the weights (fp32 copies of every float tensor of the state dict), evaluated and exported instead of
    # the raw weights when on.
    ema = {k: v.detach().clone().float() for k, v in net.state_dict().items()} if args.ema else None

    # The state dict's tensors are the module's own (load_state_dict copies into them), so the pairs are made once.
    live = net.state_dict()
    ema_f32 = [k for k, v in live.items() if v.dtype == torch.float32] if ema is not None else []
    ema_other = [k for k, v in live.items() if v.dtype != torch.float32] if ema is not None else []

    def ema_update(step):
        """ema = d ema + (1 - d) weights, over every float tensor at once (multi-tensor kernels, not two launches per
        tensor: at a GPU's ~20 ms per step, 300 small launches would cost several ms). d = min(--ema, 1 - 1 / (1 +
        step / 10)): the average never reaches back over more than about the last tenth of the steps done, so a run
        shorter than the EMA's horizon (1 / (1 - 0.9998) = 5000 steps) does not keep its random initialisation in
        the average."""
        d = min(args.ema, 1.0 - 1.0 / (1.0 + step / 10.0))
        with torch.no_grad():
            avg = [ema[k] for k in ema_f32]
            torch._foreach_mul_(avg, d)
            torch._foreach_add_(avg, [live[k].detach() for k in ema_f32], alpha=1.0 - d)
            for k in ema_other:
                ema[k].copy_(live[k])

    def with_ema(fn):
        """Runs fn() with the EMA weights loaded into net (and the trained ones restored after)."""
        if ema is None:
            return fn()
        trained = {k: v.detach().clone() for k, v in net.state_dict().items()}
        net.load_state_dict(ema)
        try:
            return fn()
        finally:
            net.load_state_dict(trained)
    # fused: one kernel for all parameters on CUDA instead of a few per tensor
    fused = {"fused": True} if device.type == "cuda" and "fused" in torch.optim.AdamW.__init__.__code__.co_varnames \
        else {}
    opt = torch.optim.AdamW(param_groups(net, args.weight_decay), lr=args.lr, betas=(0.9, 0.999), **fused)
    steps_per_epoch = 50000 // args.batch
    total = steps_per_epoch * args.epochs
    warmup = int(args.warmup_epochs * steps_per_epoch)
    step, best, trained_s = 0, None, 0.0
    if os.path.exists(ckpt_path):
        state = torch.load(ckpt_path, map_location=device, weights_only=False)   # our own file: dicts, args
        if state["arch"] != args.arch or state["config"] != config:
            sys.exit(f"train_cifar: {ckpt_path} was trained with another configuration; move it away")
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        if ema is not None and state.get("ema") is not None:
            for k, v in state["ema"].items():
                ema[k].copy_(v)
        step, best, trained_s = state["step"], state.get("test_acc"), state.get("trained_s", 0.0)
        log(f"resumed {ckpt_path} at step {step} (epoch {step / steps_per_epoch:.2f}), last test acc {best}")
    if args.export_only:
        with_ema(lambda: export(net, args.arch, config, out_path, best, args.export_dtype))
        return 0

    xtr, ytr, xte, yte = load_data(args.data, args.cache)
    on_device = args.augment == "trivial"   # the whole training set on the device, augmented there
    if on_device:
        import cifar_augment
        xtr_dev = torch.from_numpy(xtr).to(device)                       # uint8 [50000, 32, 32, 3]
        ytr_dev = torch.from_numpy(ytr).to(device)
        mean = torch.tensor(CIFAR_MEAN, device=device).view(1, 3, 1, 1)
        std = torch.tensor(CIFAR_STD, device=device).view(1, 3, 1, 1)
    use_amp = args.amp and device.type == "cuda"   # (torch 1.13 checks CUDA even for a disabled autocast)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if use_amp else contextlib.nullcontext()
    n_params = sum(p.numel() for p in net.parameters())
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{torch.get_num_threads()} threads"
    log(f"{args.arch}: {n_params:,} parameters, {steps_per_epoch} steps/epoch, {args.epochs} epochs, "
        f"device {device} ({where}), PyTorch {torch.__version__}, AdamW {'fused' if fused else 'per tensor'}")
    use_fused_kernels(device, use_amp)
    teacher = None
    if args.teacher:
        import cifar_teacher
        teacher, accs = cifar_teacher.load_ensemble(args.teacher, device)
        # the ensemble's own test accuracy, on the students' test images (the teacher's NCHW view of them)
        together = cifar_teacher.evaluate(teacher, normalise(xte, device).permute(0, 3, 1, 2),
                                          torch.from_numpy(yte).to(device))
        log(f"distilling from {len(accs)} ResNet-9 teacher(s) {', '.join(args.teacher)} (test accuracy "
            f"{', '.join(f'{100 * a:.2f} %' for a in accs)}; their mean probabilities {100 * together:.2f} %), "
            f"weight {args.distill}")

    def checkpoint(test_acc):
        save_checkpoint(ckpt_path, {"arch": args.arch, "config": config, "ema": ema,
                                    "model": net.state_dict(), "opt": opt.state_dict(), "step": step,
                                    "test_acc": test_acc, "trained_s": trained_s, "args": vars(args)})

    def progress():
        """Fraction of the schedule done: by steps, or by training time with --time-budget-min."""
        if args.time_budget_min:
            return trained_s / (60 * args.time_budget_min)
        return step / total

    def finish(test_acc=None):
        """Evaluates (unless given), checkpoints and exports the EMA / trained weights."""
        acc = test_acc if test_acc is not None else with_ema(lambda: evaluate(net, xte, yte, device))
        checkpoint(acc)
        with_ema(lambda: export(net, args.arch, config, out_path, acc, args.export_dtype))
        return acc

    def teacher_probs(x):
        """The teacher's class probabilities [B, classes] for the student's input x [B, H, W, 3] (normalised,
        channels last: the NCHW view of it is the teacher's channels-last input)."""
        with torch.no_grad(), autocast:
            return teacher(x.permute(0, 3, 1, 2))

    def forward_backward(model, x, y, target, soft=None):
        with autocast:
            logits = model(x)
        loss = student_loss(logits, y, target, args.label_smoothing, soft, args.distill)
        loss.backward()
        return loss

    # The network the steps run: torch.compile's (--compile 1 on CUDA: the reference modules' op-by-op math fused
    # into a few Triton kernels per block; the first step compiles, and counts as training time) or the module.
    # Evaluation and export always use the module itself (same parameters).
    step_net = net
    if args.compile and device.type == "cuda":
        if hasattr(torch, "compile"):
            step_net = torch.compile(net)
            log("torch.compile: the training steps run compiled (the first one compiles)")
        else:
            log(f"torch.compile: not in PyTorch {torch.__version__}; training eagerly")

    t_start = t_ckpt = time.time()
    # The running loss stays on the device (reading it back every step would wait for the GPU every step).
    loss_sum, loss_n, t_log = torch.zeros((), device=device), 0, time.time()
    net.train()
    t_step = time.time()
    order_epoch = None
    while progress() < 1:
        epoch, k = divmod(step, steps_per_epoch)
        if order_epoch != epoch:          # the epoch's permutation, drawn (and uploaded) once per epoch
            order_epoch = epoch
            order = np.random.default_rng([args.seed, epoch]).permutation(50000)
            order_dev = torch.from_numpy(order).to(device) if on_device else None
        idx = order[k * args.batch:(k + 1) * args.batch]
        if on_device:                     # the step's indices are a slice on the device: nothing uploaded per step
            idx_dev = order_dev[k * args.batch:(k + 1) * args.batch]
            y = ytr_dev[idx_dev]
        else:
            aug_rng = np.random.default_rng([args.seed, epoch, k])
            y = torch.from_numpy(ytr[idx]).to(device)
        target = y
        if on_device:
            g = torch.Generator(device=device).manual_seed((args.seed * 1000003 + step) % (1 << 62))
            x = xtr_dev[idx_dev].permute(0, 3, 1, 2).float().div_(255.0)
            if args.zoom:
                x = cifar_augment.zoom(x, g, min_scale=args.zoom)
            x = cifar_augment.trivial_augment(cifar_augment.crop_flip(x, g), g)
            x = (x - mean) / std
            if args.mix:
                x, target = cifar_augment.mix(x, y, g, 10, smoothing=args.label_smoothing)
            x = x.permute(0, 2, 3, 1).contiguous()                        # channels last: the network's input
        elif args.augment == "zoom":
            x = zoom_augment(normalise(xtr[idx], device), aug_rng)
        else:
            x = normalise(augment(xtr[idx], aug_rng, crop=args.augment == "crop-flip"), device)
        if args.time_budget_min:      # warm-up by steps, then cosine over the remaining time budget
            p = progress()
            lr = args.lr * (step + 1) / warmup if step < warmup else args.lr * 0.5 * (1 + math.cos(math.pi * p))
        else:
            lr = lr_at(step, total, warmup, args.lr)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        soft = teacher_probs(x) if teacher is not None else None
        try:
            loss = forward_backward(step_net, x, y, target, soft)
        except Exception as e:
            if step_net is net:
                raise
            # torch.compile fails at the first call (tracing, the backend's compiler), not later: train eagerly
            log(f"torch.compile failed at step {step} ({type(e).__name__}: {str(e)[:300]}); training eagerly")
            step_net = net
            opt.zero_grad(set_to_none=True)
            loss = forward_backward(step_net, x, y, target, soft)
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        if ema is not None:
            ema_update(step)
        step += 1
        trained_s += time.time() - t_step
        loss_sum += loss.detach()
        loss_n += 1
        if time.time() - t_log > 60:
            log(f"step {step} ({100 * progress():.1f} % of the schedule) epoch {step / steps_per_epoch:.2f} "
                f"loss {float(loss_sum) / loss_n:.4f} lr {opt.param_groups[0]['lr']:.2e} "
                f"{(time.time() - t_log) / loss_n:.4f} s/step")
            loss_sum.zero_()
            loss_n, t_log = 0, time.time()
        if step % steps_per_epoch == 0 and (step // steps_per_epoch) % args.eval_every == 0:
            best = with_ema(lambda: evaluate(net, xte, yte, device))
            log(f"epoch {step // steps_per_epoch} done: test accuracy {100 * best:.2f} %"
                f"{' (EMA weights)' if ema is not None else ''}")
            checkpoint(best)
            with_ema(lambda: export(net, args.arch, config, out_path, best, args.export_dtype))
            t_ckpt = time.time()
        elif time.time() - t_ckpt > 60 * args.ckpt_every_min:
            checkpoint(best)
            t_ckpt = time.time()
        if args.time_limit_min and time.time() - t_start > 60 * args.time_limit_min:
            best = finish()
            log(f"time limit reached at step {step} (test accuracy {100 * best:.2f} %); run the same command again "
                f"to resume")
            return 0
        t_step = time.time()               # evaluation and checkpoints do not count as training time
    acc = with_ema(lambda: evaluate(net, xte, yte, device))
    raw = f", trained weights {100 * evaluate(net, xte, yte, device):.2f} %" if ema is not None else ""
    log(f"finished at step {step}, epoch {step / steps_per_epoch:.2f}: test accuracy {100 * acc:.2f} %"
        f"{' (EMA weights)' if ema is not None else ''}{raw}")
    finish(acc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
