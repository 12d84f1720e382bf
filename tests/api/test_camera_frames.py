#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Camera frames (issue 58): NV12 and I420 frames (BT.601 / BT.709, full / limited range) and the eight
orientations (VKVIT_ROTATE_* | VKVIT_MIRROR) through vkvit_session_set_images, against the NumPy reference
(tools/reference/yuv.py: the frame's conversion to RGB, the orientation, then tools/reference/preprocess.py's PIL
resize + crop + normalise).

The frames are the bundled photos (assets/images/: bird, cat, dog), each cropped to an odd size at a random offset
(seed printed; VKVIT_TEST_SEED=S reruns one) so that the last chroma column and row cover one pixel, converted to
YUV 4:2:0 by the reference (rgb_to_yuv420), with padded row strides on every other frame. The model is the bundled
CIFAR-10 ViT-5 (assets/models/vit5_cifar10.vkvit: 32 x 32 input, real weights), four slots per run:
  - the pre-processed input (vkvit_session_get_input, read into a NaN-poisoned array) matches the reference's within
    max |got - want| <= 2e-5 in normalised units (fp32 resampling against PIL's double weights; a chroma sample
    off by one pixel or a wrong matrix coefficient costs ~1e-2);
  - the logits match those of the reference's tensor through set_input within 1e-4 relative to their largest
    magnitude, with the same top-1 class;
  - RGBA8 and BGRA8 pictures in every orientation against orient(rgb / 255), the same checks;
  - an unknown format, encoding or orientation and a missing chroma plane are refused with a sentence.
Validation (with synchronization validation) is on and must stay silent.

Run from the repository root:  /usr/bin/python3 tests/api/test_camera_frames.py
Exit status: 0 passed, 1 failed, 77 skipped (no PIL, no Vulkan device, or libvkvit not built).
"""

import ctypes
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))

try:
    import numpy as np
    from PIL import Image
    import yuv as yuv_ref
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

if not os.environ.get("VKVIT_LIBRARY"):
    built = os.path.join(ROOT, "build", "libvkvit.so")
    if os.path.exists(built):
        os.environ["VKVIT_LIBRARY"] = built
import vkvit  # noqa: E402
from vkvit import _lib  # noqa: E402

MODEL = os.path.join(ROOT, "assets", "models", "vit5_cifar10.vkvit")
PHOTOS = [os.path.join(ROOT, "assets", "images", f) for f in ("bird.bmp", "cat.png", "dog.jpg")]
TENSOR_TOL = 2e-5
LOGIT_TOL = 1e-4
BATCH = 4
FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print(f"FAIL  {what}", flush=True)


class Frame:
    """One picture as set_images gets it (the numpy arrays stay alive with it) and the reference's input."""

    def __init__(self, what, fmt, width, height, orientation, planes, row_bytes, chroma_row_bytes=0, yuv=0):
        self.what, self.fmt, self.width, self.height = what, fmt, width, height
        self.orientation, self.planes, self.row_bytes = orientation, planes, row_bytes
        self.chroma_row_bytes, self.yuv = chroma_row_bytes, yuv

    def desc(self, d):
        u8 = ctypes.POINTER(ctypes.c_uint8)
        d.pixels = self.planes[0].ctypes.data_as(u8)
        d.width, d.height, d.row_bytes, d.format = self.width, self.height, self.row_bytes, self.fmt
        for i, p in enumerate(self.planes[1:]):
            d.chroma[i] = p.ctypes.data_as(u8)
        d.chroma_row_bytes, d.yuv, d.orientation = self.chroma_row_bytes, self.yuv, self.orientation


def padded(plane, pad):
    """plane [h, w(, c)] uint8 with `pad` bytes after each row: (the buffer, its row stride)."""
    h = plane.shape[0]
    row = plane.reshape(h, -1)
    out = np.zeros((h, row.shape[1] + pad), np.uint8)
    out[:, :row.shape[1]] = row
    return out, out.shape[1]


def make_frames(rng):
    frames = []
    for pi, path in enumerate(PHOTOS):
        rgb = np.asarray(Image.open(path).convert("RGB"))
        h, w = rgb.shape[:2]
        ch, cw = h - 1 - 2 * int(rng.integers(0, 4)) - (h % 2 == 0), w - 1 - 2 * int(rng.integers(0, 4)) - (w % 2 == 0)
        ch, cw = ch | 1, cw | 1  # odd sides
        y0, x0 = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        crop = np.ascontiguousarray(rgb[y0:y0 + ch, x0:x0 + cw])
        name = os.path.basename(path)
        for fi, fmt in enumerate(("nv12", "i420")):
            for ei, enc in enumerate(yuv_ref.ENCODINGS):
                n = len(frames)
                orientation = (pi * 8 + fi * 4 + ei) % 8
                Y, Cb, Cr = yuv_ref.rgb_to_yuv420(crop, enc)
                pad = 3 if n % 2 else 0
                y_buf, y_row = padded(Y, pad)
                if fmt == "nv12":
                    c_buf, c_row = padded(yuv_ref.nv12_chroma(Cb, Cr), 2 * pad)
                    chroma = [c_buf]
                else:
                    cb_buf, c_row = padded(Cb, pad)
                    cr_buf, _ = padded(Cr, pad)
                    chroma = [cb_buf, cr_buf]
                f = Frame(f"{name} {cw}x{ch} {fmt} {enc} orientation {orientation}",
                          _lib.VKVIT_PIXEL_NV12 if fmt == "nv12" else _lib.VKVIT_PIXEL_I420, cw, ch, orientation,
                          [y_buf] + chroma, y_row if pad else 0, c_row if pad else 0, yuv_ref.ENCODING_VALUES[enc])
                f.rgb01 = yuv_ref.orient(yuv_ref.yuv420_to_rgb(Y, Cb, Cr, enc), orientation)
                frames.append(f)
        # RGBA8 / BGRA8 in every orientation: the orientation on the plain path.
        for orientation in range(8):
            bgra = orientation % 2 == 1
            px = np.empty((ch, cw, 4), np.uint8)
            px[..., :3] = crop[..., ::-1] if bgra else crop
            px[..., 3] = 255
            f = Frame(f"{name} {cw}x{ch} {'bgra8' if bgra else 'rgba8'} orientation {orientation}",
                      _lib.VKVIT_PIXEL_BGRA8 if bgra else _lib.VKVIT_PIXEL_RGBA8, cw, ch, orientation,
                      [np.ascontiguousarray(px)], 0)
            f.rgb01 = yuv_ref.orient(crop.astype(np.float32) / np.float32(255.0), orientation)
            frames.append(f)
    return frames


def set_images(s, frames):
    descs = (_lib.vkvit_image * len(frames))()
    for d, f in zip(descs, frames):
        f.desc(d)
    return s._lib.vkvit_session_set_images(s._node.handle, 0, descs, len(frames))


def main():
    seed = int(os.environ.get("VKVIT_TEST_SEED", random.randrange(1 << 31)))
    print(f"seed {seed} (VKVIT_TEST_SEED={seed} reruns it)")
    rng = np.random.default_rng(seed)
    try:
        ctx = vkvit.Context(validation=True, pipeline_cache_dir="")
    except (vkvit.NoLoaderError, vkvit.NoDeviceError, vkvit.LibraryNotFoundError) as e:
        print(f"SKIP: {e}")
        return 77
    lib = ctx._lib
    if lib.vkvit_session_get_input is None:
        print("SKIP: the loaded libvkvit has no vkvit_session_get_input")
        return 77
    model = vkvit.Model(ctx, MODEL)
    pp = model.preprocessing
    frames = make_frames(rng)
    s = vkvit.Session(model, batch=BATCH, max_image_pixels=max(f.width * f.height for f in frames))
    plain = vkvit.Session(model, batch=BATCH)
    worst_t = worst_l = 0.0
    for first in range(0, len(frames), BATCH):
        chunk = frames[first:first + BATCH]
        want = np.zeros(s.input_shape, np.float32)
        for i, f in enumerate(chunk):
            want[i] = yuv_ref.preprocess_float(f.rgb01, tuple(pp["image_size"]), pp["resize_shorter"],
                                               pp["interpolation"], pp["mean"], pp["std"])
        r = set_images(s, chunk)
        check(r == 0, f"set_images: {lib.last_error()}")
        if len(chunk) < BATCH:  # the other slots: the reference's zeros through set_input first
            s._lib.vkvit_session_set_input(s._node.handle, want.ctypes.data, want.size)
            r = set_images(s, chunk)
        check(lib.vkvit_session_run(s._node.handle) == 0, f"run: {lib.last_error()}")
        got = np.full(s.input_shape, np.nan, np.float32)
        check(lib.vkvit_session_get_input(s._node.handle, got.ctypes.data, got.size) == 0,
              f"get_input: {lib.last_error()}")
        logits = np.full(s.output_shape, np.nan, np.float32)
        lib.vkvit_session_get_output(s._node.handle, logits.ctypes.data, logits.size)
        want_logits = plain.run(want)
        scale = float(np.max(np.abs(want_logits))) or 1.0
        for i, f in enumerate(chunk):
            e_t = float(np.max(np.abs(got[i].astype(np.float64) - want[i]))) if np.all(np.isfinite(got[i])) else 1e9
            e_l = float(np.max(np.abs(logits[i].astype(np.float64) - want_logits[i]))) / scale
            top, want_top = int(np.argmax(logits[i])), int(np.argmax(want_logits[i]))
            worst_t, worst_l = max(worst_t, e_t), max(worst_l, e_l)
            print(f"  {f.what:52s} input max err {e_t:.2e}, logits {e_l:.2e}, top-1 {model.labels[top]}", flush=True)
            check(e_t <= TENSOR_TOL, f"{f.what}: pre-processed input max |err| {e_t:.3g} > {TENSOR_TOL}")
            check(e_l <= LOGIT_TOL, f"{f.what}: logits max rel err {e_l:.3g} > {LOGIT_TOL}")
            check(top == want_top, f"{f.what}: top-1 {top}, the reference's {want_top}")
    print(f"worst: pre-processed input {worst_t:.3g} (<= {TENSOR_TOL}), logits {worst_l:.3g} (<= {LOGIT_TOL})")

    # Refusals, each with a sentence.
    base = frames[0]
    for what, change, words in (
            ("format 9", lambda d: setattr(d, "format", 9), "format = 9"),
            ("yuv 7", lambda d: setattr(d, "yuv", 7), "yuv = 7"),
            ("orientation 8", lambda d: setattr(d, "orientation", 8), "orientation = 8"),
            ("no chroma plane", lambda d: setattr(d, "chroma", (ctypes.POINTER(ctypes.c_uint8) * 2)()), "chroma[0]"),
            ("short chroma rows", lambda d: setattr(d, "chroma_row_bytes", 1), "chroma_row_bytes = 1")):
        descs = (_lib.vkvit_image * 1)()
        base.desc(descs[0])
        change(descs[0])
        r = lib.vkvit_session_set_images(s._node.handle, 0, descs, 1)
        check(r != 0 and words in lib.last_error(), f"refusal '{what}': result {r}, '{lib.last_error()}'")
    s.close()
    plain.close()
    model.close()
    msgs = ctx.validation_messages()
    check(msgs == 0, f"{msgs} validation messages")
    ctx.close()
    print("FAILED" if FAILURES else "passed", f"({len(FAILURES)} failures)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
