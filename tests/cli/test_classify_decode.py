#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The CLI's image decoder (tools/cli/image_decode.c, stb_image) against PIL, image by image.

Every valid PngSuite image (../shared/data/pngsuite/png, all but x*), the bundled example photos (assets/images) and
the CIFAR-10 subset JPEGs (tests/data/cifar10-subset) and GIF / TGA variants (RGB, palette, grey, RGBA, RLE,
animated) written by PIL are decoded by `test_classify_decode --dump` (the decoder
compiled into a test executable) and by PIL, and the RGB channels are compared (alpha is ignored by vkvit):
  - PNG, BMP, GIF, TGA: exactly equal (16-bit samples: the high byte, as stb_image keeps it);
  - JPEG: stb_image's and libjpeg's IDCT / chroma upsampling differ slightly, so the mean absolute difference must
    be at most 0.5 and the largest at most 8 (measured on these files: mean 0.135, max 2);
  - truncated GIF / TGA files (half of a valid one) are refused as truncated.

Run from the repository root:  /usr/bin/python3 tests/cli/test_classify_decode.py
Exit status: 0 passed, 1 failed, 77 skipped (no PIL/numpy, or the test executable is not built).
"""

import glob
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from PIL import Image
except ImportError:
    print("PIL / numpy not importable by this interpreter; skipping (run with /usr/bin/python3)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build"))
DUMP = os.path.join(BUILD, "test_classify_decode")
PNGSUITE = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "pngsuite", "png"))

JPEG_MEAN_TOL, JPEG_MAX_TOL = 0.5, 8


def decode_vkvit(path, tmp):
    out = os.path.join(tmp, "dump.rgba")
    p = subprocess.run([DUMP, "--dump", path, out], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    raw = open(out, "rb").read()
    if raw[:9] != b"VKVITRGBA":
        return None, "bad dump header"
    w, h = struct.unpack("<II", raw[9:17])
    return np.frombuffer(raw[17:], dtype=np.uint8).reshape(h, w, 4), None


def decode_pil(path):
    """RGB uint8 [H, W, 3] as PIL decodes it; 16-bit grey keeps its high byte (PIL's own conversion clips)."""
    with Image.open(path) as im:
        im.seek(0)
        if im.mode in ("I;16", "I;16B", "I;16L", "I"):
            a = (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
            return np.repeat(a[:, :, None], 3, axis=2)
        return np.asarray(im.convert("RGBA"))[:, :, :3]


def main():
    if not os.path.exists(DUMP):
        print(f"SKIP: {DUMP} is not built")
        return 77
    files = sorted(glob.glob(os.path.join(ROOT, "assets", "images", "*")))
    files += sorted(glob.glob(os.path.join(ROOT, "tests", "data", "cifar10-subset", "test", "*", "000[0-4].jpg")))
    if os.path.isdir(PNGSUITE):
        files += sorted(f for f in glob.glob(os.path.join(PNGSUITE, "*.png")) if not os.path.basename(f).startswith("x"))
    else:
        print(f"note: {PNGSUITE} not found; PngSuite images not compared (the test ends as skipped, not passed)")
    failed, worst_jpeg = [], (0.0, 0)
    with tempfile.TemporaryDirectory(prefix="vkvit_test_decode_") as tmp:
        # GIF and TGA variants written by PIL from the example cat (no such files ship with the project).
        cat = Image.open(os.path.join(ROOT, "assets", "images", "cat.png")).convert("RGB").crop((0, 0, 97, 61))
        variants = {"rgb.gif": (cat, {}), "palette.gif": (cat.convert("P"), {}), "rgb.tga": (cat, {}),
                    "grey.tga": (cat.convert("L"), {}), "rgba.tga": (cat.convert("RGBA"), {}),
                    "rle.tga": (cat, {"compression": "tga_rle"}),
                    "anim.gif": (cat, {"save_all": True, "append_images": [cat.rotate(180)]})}
        for name, (im, opts) in variants.items():
            im.save(os.path.join(tmp, name), **opts)
            files.append(os.path.join(tmp, name))
        # Cut in half, the uncompressed ones must be refused (stb_image alone would decode them).
        for name in ("rgb.gif", "rgb.tga", "grey.tga"):
            data = open(os.path.join(tmp, name), "rb").read()
            cut = os.path.join(tmp, "cut_" + name)
            open(cut, "wb").write(data[:len(data) // 2])
            got, err = decode_vkvit(cut, tmp)
            if got is not None or "truncated" not in (err or ""):
                failed.append(f"cut_{name}: a truncated file was not refused as truncated ({err})")
        for f in files:
            got, err = decode_vkvit(f, tmp)
            name = os.path.relpath(f, ROOT) if f.startswith(ROOT) else os.path.basename(f)
            if got is None:
                failed.append(f"{name}: vkvit refused a valid image: {err}")
                continue
            want = decode_pil(f)
            if got.shape[:2] != want.shape[:2]:
                failed.append(f"{name}: vkvit {got.shape[1]}x{got.shape[0]}, PIL {want.shape[1]}x{want.shape[0]}")
                continue
            diff = np.abs(got[:, :, :3].astype(np.int32) - want.astype(np.int32))
            if f.lower().endswith((".jpg", ".jpeg")):
                mean, mx = float(diff.mean()), int(diff.max())
                worst_jpeg = max(worst_jpeg, (mean, mx))
                if mean > JPEG_MEAN_TOL or mx > JPEG_MAX_TOL:
                    failed.append(f"{name}: JPEG differs from PIL by mean {mean:.3f} (tol {JPEG_MEAN_TOL}), "
                                  f"max {mx} (tol {JPEG_MAX_TOL})")
            elif diff.max() != 0:
                y, x, c = np.unravel_index(int(diff.argmax()), diff.shape)
                failed.append(f"{name}: differs from PIL at ({x}, {y}) channel {c}: vkvit {got[y, x, c]}, "
                              f"PIL {want[y, x, c]} ({int((diff > 0).sum())} values differ)")
    for line in failed:
        print("FAIL", line)
    print(f"{len(files)} images compared with PIL, {len(failed)} failed; worst JPEG: mean abs diff "
          f"{worst_jpeg[0]:.3f}, max {worst_jpeg[1]}")
    if failed:
        return 1
    return 0 if os.path.isdir(PNGSUITE) else 77  # without PngSuite the test checked less than it promises


if __name__ == "__main__":
    sys.exit(main())
