# SPDX-License-Identifier: Apache-2.0
"""Reference image pre-processing (docs/preprocessing.md): what vkvit_session_set_images computes on the GPU.

torchvision's ``Resize(resize_shorter, interpolation, antialias=True)`` + ``CenterCrop(image_size)`` +
``Normalize(mean, std)`` applied to the float image ``x / 255`` (no intermediate uint8 rounding). That is PIL's
separable resampling in float: PIL's "F" (float32) mode runs libImaging/Resample.c on each channel with double
weights and accumulation and a float32 image between the horizontal and the vertical pass, so resizing the three
channels as "F" images *is* the algorithm, not an approximation of it.

    /usr/bin/python3 tools/reference/preprocess.py photo.jpg --size 224 --resize 256   # prints a summary

Used by make_goldens.py (the ``preprocess`` case group).
"""

import argparse
import sys

import numpy as np
from PIL import Image, ImageOps

FILTERS = {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR}


def resized_size(width: int, height: int, resize_shorter: int):
    """torchvision's output size for an int ``size``: the shorter side becomes resize_shorter, the longer
    ``int(resize_shorter * long / short)``."""
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = resize_shorter, int(resize_shorter * long / short)
    return (new_short, new_long) if width <= height else (new_long, new_short)


def crop_offsets(width: int, height: int, crop_h: int, crop_w: int):
    """torchvision's center_crop offsets: ``int(round((size - crop) / 2.0))`` with Python's round (half to even)."""
    return int(round((height - crop_h) / 2.0)), int(round((width - crop_w) / 2.0))


def preprocess(rgb: np.ndarray, image_size, resize_shorter: int, interpolation: str, mean, std) -> np.ndarray:
    """rgb: uint8 [h, w, 3]. Returns float32 [H, W, 3] (channels-last, as the vkvit input)."""
    assert rgb.dtype == np.uint8 and rgb.ndim == 3 and rgb.shape[2] == 3
    h, w = rgb.shape[:2]
    crop_h, crop_w = image_size
    new_w, new_h = resized_size(w, h, resize_shorter)
    x = rgb.astype(np.float32) / np.float32(255.0)
    planes = []
    for c in range(3):
        plane = Image.fromarray(np.ascontiguousarray(x[:, :, c]), mode="F")
        if (new_w, new_h) != (w, h):
            plane = plane.resize((new_w, new_h), FILTERS[interpolation])
        planes.append(np.asarray(plane, dtype=np.float32))
    resized = np.stack(planes, axis=2)
    top, left = crop_offsets(new_w, new_h, crop_h, crop_w)
    crop = resized[top:top + crop_h, left:left + crop_w, :]
    assert crop.shape == (crop_h, crop_w, 3), "resize_shorter must be at least max(image_size)"
    # torchvision's Normalize on a float32 tensor: (x - mean) / std in float32.
    return ((crop - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)).astype(np.float32)


def preprocess_torch(rgb: np.ndarray, image_size, resize_shorter: int, interpolation: str, mean, std) -> np.ndarray:
    """The same through PyTorch's antialiased interpolate in float64 (what torchvision's Resize does on tensors with
    antialias=True; its kernels are PIL's). An independent cross-check of ``preprocess``: they agree to ~6e-7."""
    import torch
    import torch.nn.functional as F
    h, w = rgb.shape[:2]
    new_w, new_h = resized_size(w, h, resize_shorter)
    x = torch.from_numpy(rgb.astype(np.float64) / 255.0).permute(2, 0, 1)[None]
    if (new_w, new_h) != (w, h):
        x = F.interpolate(x, size=(new_h, new_w), mode=interpolation, antialias=True, align_corners=False)
    y = x[0].permute(1, 2, 0).numpy()
    top, left = crop_offsets(new_w, new_h, image_size[0], image_size[1])
    y = y[top:top + image_size[0], left:left + image_size[1], :]
    return ((y - np.asarray(mean)) / np.asarray(std)).astype(np.float32)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("image")
    ap.add_argument("--size", type=int, nargs="+", default=[224], help="crop H [W] (default 224)")
    ap.add_argument("--resize", type=int, default=None, help="resize_shorter (default: the crop's larger side)")
    ap.add_argument("--interpolation", choices=sorted(FILTERS), default="bicubic")
    args = ap.parse_args()
    size = (args.size[0], args.size[-1])
    rgb = np.asarray(ImageOps.exif_transpose(Image.open(args.image)).convert("RGB"))  # as vkvit applies EXIF
    out = preprocess(rgb, size, args.resize or max(size), args.interpolation,
                     [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    print(f"{args.image}: {rgb.shape[1]}x{rgb.shape[0]} -> {out.shape}, mean {out.mean(axis=(0, 1))}, "
          f"min {out.min():.4f}, max {out.max():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
