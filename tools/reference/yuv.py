# SPDX-License-Identifier: Apache-2.0
"""Reference camera-frame conversion (include/vkvit.h, vkvit_yuv_encoding and VKVIT_ROTATE_* / VKVIT_MIRROR): what
vkvit's horizontal pre-processing pass does to an NV12 or I420 frame before resizing it, in NumPy.

    y, cb, cr = rgb_to_yuv420(rgb, "bt601_limited")             # a test frame made from an 8-bit RGB photo
    rgb01 = yuv420_to_rgb(y, cb, cr, "bt601_limited")            # float [h, w, 3] in [0, 1]: what vkvit resizes
    x = preprocess_float(orient(rgb01, 1 | 4), (224, 224), 256, "bicubic", mean, std)   # turned 90, mirrored

    /usr/bin/python3 tools/reference/yuv.py photo.jpg            # prints the RGB -> YUV -> RGB round-trip error

Conversion (the header's formulas): limited range y = (Y - 16) / 219, c = (C - 128) / 224; full range y = Y / 255,
c = (C - 128) / 255; R = y + 2 (1 - Kr) cr, B = y + 2 (1 - Kb) cb, G = (y - Kr R - Kb B) / (1 - Kr - Kb), clamped to
[0, 1], no rounding to 8 bits; pixel (x, y) takes chroma sample (x // 2, y // 2). The frames a test makes go the
other way (rgb_to_yuv420): the chroma of each 2 x 2 block averaged, every sample rounded to a byte.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import preprocess as preprocess_ref  # noqa: E402

ENCODINGS = {  # name: (Kr, Kb, full range), in vkvit_yuv_encoding's order
    "bt601_limited": (0.299, 0.114, False),
    "bt601_full": (0.299, 0.114, True),
    "bt709_limited": (0.2126, 0.0722, False),
    "bt709_full": (0.2126, 0.0722, True),
}
ENCODING_VALUES = {name: i for i, name in enumerate(ENCODINGS)}


def rgb_to_yuv420(rgb: np.ndarray, encoding: str):
    """uint8 RGB [h, w, 3] -> (Y [h, w], Cb [ceil(h/2), ceil(w/2)], Cr [same]), uint8."""
    kr, kb, full = ENCODINGS[encoding]
    kg = 1.0 - kr - kb
    x = rgb.astype(np.float64) / 255.0
    yl = kr * x[..., 0] + kg * x[..., 1] + kb * x[..., 2]
    pb = (x[..., 2] - yl) / (2.0 * (1.0 - kb))
    pr = (x[..., 0] - yl) / (2.0 * (1.0 - kr))
    h, w = yl.shape
    # 2 x 2 box average of the chroma (edge blocks of an odd side average what they have).
    hh, hw = (h + 1) // 2, (w + 1) // 2
    pad = ((0, 2 * hh - h), (0, 2 * hw - w))
    counts = np.pad(np.ones((h, w)), pad).reshape(hh, 2, hw, 2).sum(axis=(1, 3))
    pb = np.pad(pb, pad).reshape(hh, 2, hw, 2).sum(axis=(1, 3)) / counts
    pr = np.pad(pr, pad).reshape(hh, 2, hw, 2).sum(axis=(1, 3)) / counts
    if full:
        Y, Cb, Cr = yl * 255.0, 128.0 + pb * 255.0, 128.0 + pr * 255.0
    else:
        Y, Cb, Cr = 16.0 + yl * 219.0, 128.0 + pb * 224.0, 128.0 + pr * 224.0
    to_u8 = lambda v: np.clip(np.rint(v), 0, 255).astype(np.uint8)  # noqa: E731
    return to_u8(Y), to_u8(Cb), to_u8(Cr)


def yuv420_to_rgb(Y: np.ndarray, Cb: np.ndarray, Cr: np.ndarray, encoding: str) -> np.ndarray:
    """uint8 planes -> float32 RGB [h, w, 3] in [0, 1], as vkvit's pre-processing reads a frame."""
    kr, kb, full = ENCODINGS[encoding]
    h, w = Y.shape
    cb = Cb.astype(np.float64)[np.arange(h)[:, None] // 2, np.arange(w)[None, :] // 2]
    cr = Cr.astype(np.float64)[np.arange(h)[:, None] // 2, np.arange(w)[None, :] // 2]
    y = Y.astype(np.float64)
    if full:
        y, cb, cr = y / 255.0, (cb - 128.0) / 255.0, (cr - 128.0) / 255.0
    else:
        y, cb, cr = (y - 16.0) / 219.0, (cb - 128.0) / 224.0, (cr - 128.0) / 224.0
    r = y + 2.0 * (1.0 - kr) * cr
    b = y + 2.0 * (1.0 - kb) * cb
    g = (y - kr * r - kb * b) / (1.0 - kr - kb)
    return np.clip(np.stack([r, g, b], axis=2), 0.0, 1.0).astype(np.float32)


def nv12_chroma(Cb: np.ndarray, Cr: np.ndarray) -> np.ndarray:
    """The interleaved Cb, Cr plane of NV12: [ceil(h/2), 2 ceil(w/2)] uint8."""
    return np.ascontiguousarray(np.stack([Cb, Cr], axis=2).reshape(Cb.shape[0], -1))


def orient(img: np.ndarray, orientation: int) -> np.ndarray:
    """The picture the model sees: turned clockwise by (orientation & 3) quarter turns, then mirrored left-right
    when orientation & 4 (VKVIT_MIRROR)."""
    out = np.rot90(img, k=-(orientation & 3), axes=(0, 1))
    if orientation & 4:
        out = out[:, ::-1]
    return np.ascontiguousarray(out)


def preprocess_float(rgb01: np.ndarray, image_size, resize_shorter: int, interpolation: str, mean,
                     std) -> np.ndarray:
    """tools/reference/preprocess.py's preprocess on a float image in [0, 1] (a converted frame) instead of bytes."""
    from PIL import Image
    h, w = rgb01.shape[:2]
    crop_h, crop_w = image_size
    new_w, new_h = preprocess_ref.resized_size(w, h, resize_shorter)
    planes = []
    for c in range(3):
        plane = Image.fromarray(np.ascontiguousarray(rgb01[:, :, c], dtype=np.float32), mode="F")
        if (new_w, new_h) != (w, h):
            plane = plane.resize((new_w, new_h), preprocess_ref.FILTERS[interpolation])
        planes.append(np.asarray(plane, dtype=np.float32))
    resized = np.stack(planes, axis=2)
    top, left = preprocess_ref.crop_offsets(new_w, new_h, crop_h, crop_w)
    crop = resized[top:top + crop_h, left:left + crop_w, :]
    return ((crop - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)).astype(np.float32)


def main() -> int:
    from PIL import Image
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("image")
    args = ap.parse_args()
    rgb = np.asarray(Image.open(args.image).convert("RGB"))
    for enc in ENCODINGS:
        back = yuv420_to_rgb(*rgb_to_yuv420(rgb, enc), enc)
        err = np.abs(back * 255.0 - rgb).mean()
        print(f"{enc:14s} {rgb.shape[1]}x{rgb.shape[0]}: mean |RGB -> YUV 4:2:0 -> RGB - RGB| = {err:.2f} / 255")
    return 0


if __name__ == "__main__":
    sys.exit(main())
