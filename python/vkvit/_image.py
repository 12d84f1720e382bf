# SPDX-License-Identifier: Apache-2.0
"""Pictures to the RGBA8 pixels vkvit_session_set_images takes, as the CLI's decoder makes them.

The CLI (tools/cli/image_decode.c) decodes files with stb_image and libwebp to 8-bit RGBA and then applies the EXIF
orientation as PIL's ImageOps.exif_transpose does. This module makes the same pixels from what Pillow returns, for
every mode Pillow has, so that Session.classify on a PIL image or a path gives what `vkvit classify` gives:

    mode                    RGB (alpha)                          why
    RGB, RGBA               as they are (alpha kept, ignored)     the library ignores alpha: no compositing
    1, L, LA                grey replicated (LA: its alpha)       stb expands grey (and grey + alpha) so
    P, PA                   the palette colour (alpha from the    stb expands the palette; tRNS becomes alpha,
                            transparency)                         the colour under it stays
    I, I;16, I;16L, I;16B,  v >> 8 of the 16-bit sample, grey     stb's 16 -> 8 bit mapping (the high byte); a
    I;16N                   (I clipped to 0..65535 first)         16-bit grey PNG opens in mode I or I;16
    CMYK                    x = 255 - C, m = 255 - K,             stb's Adobe CMYK: blinn_8x8(x, m) per channel;
                            R = (t + (t >> 8)) >> 8, t = x*m+128  Pillow inverts Adobe CMYK JPEGs on decoding
    YCbCr                   stb's fixed-point JFIF conversion     stbi__YCbCr_to_RGB_row
    F                       rounded, clipped to 0..255, grey      no file the CLI reads decodes to F; Pillow's own
                                                                  F -> L rule
    LAB                     CIE L*a*b* (D50) to sRGB, ImageCms    no file the CLI reads decodes to LAB
    HSV, RGBX, RGBa, La,    Pillow's convert('RGBA')              no file the CLI reads decodes to them
    others

Multi-bit RGB(A) files (16-bit RGB PNGs) open in Pillow as 8-bit RGB / RGBA already, through the high byte, as stb
makes them. EXIF orientation: the Orientation tag Pillow reads (JPEG APP1, PNG eXIf, WebP EXIF), 1..8, anything else
taken as 1 (as image_decode.c's tiff_orientation does); numpy arrays are taken as they are.

TIFF: the CLI decodes baseline TIFF itself (image_decode.c's decode_tiff: 8- or 16-bit grey, grey + alpha, RGB,
RGBA, 8-bit palette; uncompressed, PackBits, LZW, Deflate; strips or tiles). Pillow reads more than that (CMYK,
1-bit, float, JPEG-compressed, separate planes, ...); tiff_refusal refuses those files here with the CLI's own
sentence, so a TIFF gives the same pixels or the same refusal in both. Within the subset the table above gives the
CLI's pixels (16-bit RGB(A) Pillow reads by the high byte; associated alpha Pillow unpremultiplies, as the CLI does).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

EXIF_ORIENTATION = 0x0112


class ImageError(Exception):
    """A picture that cannot be turned into pixels; str() is the sentence (the caller adds the image's name)."""


def _grey(g: np.ndarray, alpha: Any = None) -> np.ndarray:
    out = np.empty(g.shape + (4,), np.uint8)
    out[..., 0] = out[..., 1] = out[..., 2] = g
    out[..., 3] = 255 if alpha is None else alpha
    return out


def _rgb(rgb: np.ndarray, alpha: Any = None) -> np.ndarray:
    out = np.empty(rgb.shape[:2] + (4,), np.uint8)
    out[..., :3] = rgb
    out[..., 3] = 255 if alpha is None else alpha
    return out


def _blinn_8x8(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """stb_image's x * y / 255, rounded: t = x*y + 128; (t + (t >> 8)) >> 8."""
    t = x.astype(np.uint32) * y.astype(np.uint32) + 128
    return ((t + (t >> 8)) >> 8).astype(np.uint8)


def _ycbcr_to_rgb(a: np.ndarray) -> np.ndarray:
    """stbi__YCbCr_to_RGB_row: 20-bit fixed point, constants (int)(c * 4096 + 0.5) << 8."""
    def fixed(c: float) -> int:
        return int(c * 4096.0 + 0.5) << 8
    y = a[..., 0].astype(np.int64)
    cb = a[..., 1].astype(np.int64) - 128
    cr = a[..., 2].astype(np.int64) - 128
    y_fixed = (y << 20) + (1 << 19)
    r = y_fixed + cr * fixed(1.40200)
    g = y_fixed + cr * -fixed(0.71414) + ((cb * -fixed(0.34414)) & ~0xFFFF)
    b = y_fixed + cb * fixed(1.77200)
    out = np.stack([r >> 20, g >> 20, b >> 20], axis=-1)
    return np.clip(out, 0, 255).astype(np.uint8)


def orientation(image: Any) -> int:
    """The EXIF Orientation (1..8) of a PIL image; 1 when it has none or an invalid one."""
    try:
        exif = image.getexif()
        v = exif.get(EXIF_ORIENTATION, 1) if exif is not None else 1
    except Exception:  # noqa: BLE001 - a malformed EXIF block is no orientation (as image_decode.c takes it)
        return 1
    if isinstance(v, (tuple, list)):
        v = v[0] if v else 1
    try:
        v = int(v)
    except (TypeError, ValueError):
        return 1
    return v if 1 <= v <= 8 else 1


def apply_orientation(a: np.ndarray, o: int) -> np.ndarray:
    """[H, W, C] as PIL's exif_transpose turns it for orientation o (5..8 swap the sides); image_decode.c's
    apply_orientation, index for index."""
    if o == 2:
        a = a[:, ::-1]                      # FLIP_LEFT_RIGHT
    elif o == 3:
        a = a[::-1, ::-1]                   # ROTATE_180
    elif o == 4:
        a = a[::-1]                         # FLIP_TOP_BOTTOM
    elif o == 5:
        a = a.transpose(1, 0, 2)            # TRANSPOSE
    elif o == 6:
        a = np.rot90(a, -1)                 # ROTATE_270 (90 degrees clockwise)
    elif o == 7:
        a = a[::-1, ::-1].transpose(1, 0, 2)  # TRANSVERSE
    elif o == 8:
        a = np.rot90(a, 1)                  # ROTATE_90 (counter-clockwise)
    return np.ascontiguousarray(a)


TIFF_DECODES = ("vkvit decodes baseline TIFF (8- or 16-bit grey, grey + alpha, RGB or RGBA, or 8-bit palette; "
                "uncompressed, PackBits, LZW or Deflate; strips or tiles): convert it to PNG")
_TIFF_COMPRESSION_NAMES = {6: " (JPEG)", 7: " (JPEG)", 2: " (CCITT fax)", 3: " (CCITT fax)", 4: " (CCITT fax)",
                           34712: " (JPEG 2000)", 50000: " (Zstandard)", 34925: " (LZMA)", 50001: " (WebP)"}
_TIFF_PHOTOMETRIC_NAMES = {5: "5 (CMYK)", 6: "6 (YCbCr)", 8: "8 (CIE L*a*b*)", 4: "4 (transparency mask)"}


def tiff_refusal(image: Any) -> Any:
    """None for a TIFF the CLI decodes (or an image that is no TIFF), else the CLI's sentence for it without the
    leading "'name': " (image_decode.c's decode_tiff, check for check, in its order)."""
    if getattr(image, "format", None) != "TIFF" or not hasattr(image, "tag_v2"):
        return None
    tags = image.tag_v2
    if getattr(tags, "_bigtiff", False):
        return f"a BigTIFF file; {TIFF_DECODES}"

    def first(tag, default):
        v = tags.get(tag, default)
        if isinstance(v, (tuple, list)):
            return v[0] if v else default
        return v

    def same(tag, default):
        v = tags.get(tag, (default,))
        v = v if isinstance(v, (tuple, list)) else (v,)
        return v[0] if v and all(x == v[0] for x in v) else 0

    comp = int(first(259, 1))
    photo = first(262, None)
    bits = int(same(258, 1))
    fmt = int(same(339, 1))
    spp = int(first(277, 1))
    spp = 0 if spp > 8 else spp
    extra = int(first(338, 2)) if 338 in tags else 2
    if comp not in (1, 5, 8, 32946, 32773):
        return f"a TIFF of compression {comp}{_TIFF_COMPRESSION_NAMES.get(comp, '')}; {TIFF_DECODES}"
    if photo not in (0, 1, 2, 3):
        what = "(none given)" if photo is None else _TIFF_PHOTOMETRIC_NAMES.get(photo,
                                                                             "other than grey, RGB or palette")
        return f"a TIFF of photometric interpretation {what}; {TIFF_DECODES}"
    if bits not in (8, 16):
        what = {0: "mixed", 1: "1", 4: "4", 32: "32"}.get(bits, "other")
        return f"a TIFF of {what}-bit samples; {TIFF_DECODES}"
    if fmt != 1:
        what = {3: "floating-point", 2: "signed"}.get(fmt, "mixed or unknown")
        return f"a TIFF of {what} samples; {TIFF_DECODES}"
    colour = 3 if photo == 2 else 1
    if spp != colour and not (spp == colour + 1 and photo != 3):
        return (f"a TIFF of {int(first(277, 1))} samples per pixel for its photometric interpretation {photo}; "
                f"{TIFF_DECODES}")
    alpha = spp == colour + 1
    if alpha and extra > 2:
        return f"a TIFF whose extra sample is of kind {extra}; {TIFF_DECODES}"
    if photo in (0, 3) and bits != 8:
        return f"a 16-bit {'WhiteIsZero' if photo == 0 else 'palette'} TIFF; {TIFF_DECODES}"
    if alpha and extra == 1 and (bits != 8 or photo != 2):
        return f"a TIFF with associated alpha other than 8-bit RGBA; {TIFF_DECODES}"
    if alpha and photo <= 1 and (bits != 8 or extra == 0):
        return f"a {bits}-bit grey TIFF with an extra sample of kind {extra}; {TIFF_DECODES}"
    planar = int(first(284, 1))
    if planar != 1 and spp > 1:
        return f"a TIFF of separate colour planes (PlanarConfiguration {planar}); {TIFF_DECODES}"
    fill = int(first(266, 1))
    if fill != 1:
        return f"a TIFF of FillOrder {fill}; {TIFF_DECODES}"
    pred = int(first(317, 1))
    if comp in (5, 8, 32946) and pred not in (1, 2):
        return f"a TIFF of predictor {pred}{' (floating point)' if pred == 3 else ''}; {TIFF_DECODES}"
    if comp == 5:                           # libtiff reads TIFF 5's LSB-first LZW; the CLI does not
        offsets = tags.get(324, tags.get(273))
        fp = getattr(image, "fp", None)
        if offsets and fp is not None:
            try:
                at = fp.tell()
                fp.seek(offsets[0] if isinstance(offsets, (tuple, list)) else offsets)
                head = fp.read(2)
                fp.seek(at)
            except (OSError, ValueError):
                head = b""
            if len(head) == 2 and head[0] == 0 and head[1] & 1:
                return f"a TIFF of old-style (TIFF 5, LSB-first) LZW data; {TIFF_DECODES}"
    return None


def pil_to_rgba8(image: Any, exif: bool = True) -> np.ndarray:
    """A PIL image as C-contiguous uint8 [H, W, 4], the CLI's pixels for it (see the module's table), EXIF
    orientation applied when `exif`. Raises ImageError with a sentence."""
    refusal = tiff_refusal(image)
    if refusal is not None:
        raise ImageError(refusal)
    try:
        image.load()
    except Exception as e:  # noqa: BLE001 - a truncated or corrupt file
        raise ImageError(f"cannot decode it: {e}") from None
    mode = image.mode
    try:
        if mode == "RGBA":
            out = np.array(image, np.uint8)
        elif mode == "RGB":
            out = _rgb(np.asarray(image))
        elif mode == "L":
            out = _grey(np.asarray(image))
        elif mode == "1":
            out = _grey(np.asarray(image.convert("L")))
        elif mode == "LA":
            la = np.asarray(image)
            out = _grey(la[..., 0], la[..., 1])
        elif mode in ("P", "PA"):
            out = np.array(image.convert("RGBA"), np.uint8)
        elif mode == "I" or mode.startswith("I;16"):
            v = np.asarray(image)
            if mode == "I":
                v = np.clip(v, 0, 65535)
            out = _grey((v.astype(np.uint32) >> 8).astype(np.uint8))
        elif mode == "CMYK":
            c = 255 - np.asarray(image).astype(np.uint16)   # back to the stored (Adobe, inverted) samples
            k = c[..., 3]
            out = _rgb(np.stack([_blinn_8x8(c[..., i], k) for i in range(3)], axis=-1))
        elif mode == "YCbCr":
            out = _rgb(_ycbcr_to_rgb(np.asarray(image)))
        elif mode == "F":
            f = np.nan_to_num(np.asarray(image, np.float64), nan=0.0)
            out = _grey(np.clip(np.rint(f), 0, 255).astype(np.uint8))
        elif mode == "LAB":
            from PIL import ImageCms
            transform = ImageCms.buildTransform(ImageCms.createProfile("LAB"), ImageCms.createProfile("sRGB"),
                                                "LAB", "RGB")
            out = _rgb(np.asarray(ImageCms.applyTransform(image, transform)))
        else:
            out = np.array(image.convert("RGBA"), np.uint8)
    except ImageError:
        raise
    except Exception as e:  # noqa: BLE001 - a mode Pillow cannot convert
        raise ImageError(f"cannot convert a mode {mode!r} image to RGB: {e}") from None
    if out.ndim != 3 or out.shape[2] != 4:
        raise ImageError(f"a mode {mode!r} image gave pixels of shape {out.shape}, not [H, W, 4]")
    transparent = image.info.get("transparency")
    if getattr(image, "format", None) == "GIF" and mode in ("P", "L") and isinstance(transparent, int):
        # stb_image's GIF decoder starts the first frame from (0, 0, 0, 0) and skips the transparent pixels, so
        # they come out black (Pillow keeps the palette colour under them)
        out[np.asarray(image) == transparent] = 0
    if getattr(image, "format", None) == "TIFF" and getattr(image, "_tile_orientation", None):
        # Pillow 9+ turns a TIFF by its Orientation tag as it loads it (TiffImageFile.load_end) and leaves the tag
        # in place: turning it again would undo the CLI's single turn
        return np.ascontiguousarray(out)
    return apply_orientation(out, orientation(image)) if exif else np.ascontiguousarray(out)


def load_rgba8(path: Any) -> np.ndarray:
    """An image file (str, bytes or os.PathLike) decoded by Pillow to the CLI's RGBA8 pixels (pil_to_rgba8).
    Raises ImageError with a sentence that names the file."""
    try:
        from PIL import Image
    except ImportError:
        raise ImageError("decoding an image file needs Pillow (python3-pil / pip install pillow)") from None
    name = os.fsdecode(path)
    try:
        with Image.open(path) as im:
            return pil_to_rgba8(im)
    except ImageError as e:
        raise ImageError(f"'{name}': {e}") from None
    except OSError as e:
        why = e.strerror or str(e)
        raise ImageError(f"cannot read '{name}': {why}") from None
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds (DecompressionBombError, SyntaxError, ...)
        raise ImageError(f"cannot decode '{name}': {e}") from None
