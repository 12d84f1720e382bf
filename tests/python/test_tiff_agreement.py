# SPDX-License-Identifier: Apache-2.0
"""TIFF: the CLI's decoder (tools/cli/image_decode.c, decode_tiff) against Pillow, pixel for pixel (issue 57).

Files: Pillow writes grey, grey + alpha, RGB, RGBA, 16-bit grey and palette TIFFs uncompressed, PackBits, LZW and
Deflate (libtiff's encoders); tests/python/tiff_writer.py writes what Pillow cannot: 8- and 16-bit grey, RGB,
RGBA (unassociated, associated, unspecified extra sample), grey + alpha, palette and WhiteIsZero, little- and
big-endian, in strips of 3 rows and in 16x16 tiles (37 x 29 pixels: the last column and row of tiles padded),
each compression, with and without horizontal differencing (Predictor 2) for LZW and Deflate. Pixels are random
(seed printed; VKVIT_TEST_SEED reruns one).

On each file the CLI's RGBA8 decode (build/test_classify_decode --dump) must equal, byte for byte:
  - Pillow's own decode of it, mapped to RGBA8 by the CLI's rules (16-bit samples by their high byte, grey
    replicated, A = 255 without alpha), and
  - vkvit.load_image(path) (the binding, and so tools/bulk_classify.py, which shares vkvit._image).
Files outside the subset (CMYK, 1-bit, float, JPEG-compressed, separate planes, old-style LZW, FillOrder 2, ...)
are refused by the CLI and by vkvit.load_image with the same sentence. Hostile files (truncated, offsets past the
end, absurd sides and tiles, corrupt LZW) are refused with a sentence, never a crash (ASan and the fuzzer cover
the rest: tests/fuzz/fuzz_image.c). The Orientation tag is applied as Pillow's exif_transpose applies it."""

import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import vkvit
from conftest import ROOT

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiff_writer import write_tiff  # noqa: E402

Image = pytest.importorskip("PIL.Image")

BUILD = os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build"))
DUMP = os.path.join(BUILD, "test_classify_decode")
W, H = 37, 29


def cli_decode(path, tmp):
    """(RGBA8 [H, W, 4], None) or (None, the CLI decoder's sentence)."""
    out = os.path.join(tmp, "dump.rgba")
    p = subprocess.run([DUMP, "--dump", str(path), out], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return None, p.stderr.strip()
    raw = open(out, "rb").read()
    assert raw[:9] == b"VKVITRGBA"
    w, h = struct.unpack("<II", raw[9:17])
    return np.frombuffer(raw[17:], dtype=np.uint8).reshape(h, w, 4).copy(), None


def pillow_rgba8(path):
    """Pillow's decode of the file as the CLI's RGBA8 (its rules written out, independent of vkvit._image)."""
    with Image.open(path) as im:
        im.load()
        mode = im.mode
        o = im.getexif().get(0x0112, 1)
        a = np.asarray(im)
        if mode in ("I;16", "I;16B", "I;16L", "I"):
            a = (np.clip(a, 0, 65535).astype(np.uint32) >> 8).astype(np.uint8)
            mode = "L"
        if mode == "L":
            rgba = np.dstack([a, a, a, np.full(a.shape, 255, np.uint8)])
        elif mode == "LA":
            rgba = np.dstack([a[..., 0]] * 3 + [a[..., 1]])
        elif mode == "RGB":
            rgba = np.dstack([a, np.full(a.shape[:2], 255, np.uint8)])
        elif mode == "RGBA":
            rgba = a
        else:                                           # P, RGBX
            rgba = np.asarray(im.convert("RGBA"))
        out = Image.fromarray(np.ascontiguousarray(rgba), "RGBA")
        if getattr(im, "_tile_orientation", None):      # Pillow 9+ turned the TIFF itself as it loaded it
            o = 1
        if o in range(2, 9):                            # PIL.ImageOps.exif_transpose's table
            out = out.transpose({2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM,
                                 5: Image.TRANSPOSE, 6: Image.ROTATE_270, 7: Image.TRANSVERSE,
                                 8: Image.ROTATE_90}[o])
        return np.asarray(out)


@pytest.fixture(scope="module")
def rng():
    if not os.access(DUMP, os.X_OK):
        pytest.skip(f"not built: {DUMP}")
    seed = int(os.environ.get("VKVIT_TEST_SEED", int.from_bytes(os.urandom(4), "little") >> 1))
    print(f"test_tiff_agreement: seed {seed} (VKVIT_TEST_SEED={seed} reruns it)", file=sys.stderr)
    return np.random.default_rng(seed)


def agree(path, tmp, failures, what):
    got, err = cli_decode(path, tmp)
    if err:
        failures.append(f"{what}: the CLI refused it: {err}")
        return
    try:
        want = pillow_rgba8(path)
    except Exception as e:  # noqa: BLE001 - the writer's file must be one Pillow reads
        failures.append(f"{what}: Pillow cannot read it ({e})")
        return
    if got.shape != want.shape or not np.array_equal(got, want):
        d = "shapes differ" if got.shape != want.shape else f"{int((got != want).any(-1).sum())} pixels differ"
        failures.append(f"{what}: CLI vs Pillow: {d} {got.shape} {want.shape}")
        return
    py = vkvit.load_image(path)
    if not np.array_equal(py, got):
        failures.append(f"{what}: vkvit.load_image differs from the CLI")


def test_pillow_written(tmp_path, rng):
    failures, n = [], 0
    modes = {"L": (H, W), "LA": (H, W, 2), "RGB": (H, W, 3), "RGBA": (H, W, 4)}
    for comp in ("raw", "packbits", "tiff_lzw", "tiff_adobe_deflate"):
        for mode, shape in modes.items():
            im = Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode)
            p = tmp_path / f"pil_{mode}_{comp}.tif"
            im.save(p, compression=comp)
            agree(p, tmp_path, failures, p.name)
            n += 1
        g16 = rng.integers(0, 65536, (H, W), dtype=np.uint16)
        p = tmp_path / f"pil_I16_{comp}.tif"
        Image.fromarray(g16, "I;16").save(p, compression=comp)
        agree(p, tmp_path, failures, p.name)
        pal = Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8), "RGB").quantize(colors=200)
        p = tmp_path / f"pil_P_{comp}.tif"
        pal.save(p, compression=comp)
        agree(p, tmp_path, failures, p.name)
        n += 2
    # several strips (Pillow's libtiff writer takes a strip size), and a big photo in LZW
    cat = Image.open(os.path.join(ROOT, "assets", "images", "cat.png")).convert("RGB")
    p = tmp_path / "cat_lzw.tif"
    cat.save(p, compression="tiff_lzw")
    agree(p, tmp_path, failures, p.name)
    for o in range(1, 9):                           # the Orientation tag, as the other formats' EXIF
        p = tmp_path / f"cat_orient{o}.tif"
        cat.save(p, tiffinfo={274: o}, compression="tiff_lzw" if o % 2 else "raw")
        agree(p, tmp_path, failures, p.name)
        n += 1
        want = cat.size[::-1] if o < 5 else cat.size
        assert cli_decode(p, tmp_path)[0].shape[:2] == want, o   # 5..8 swap the sides
    assert not failures, f"{len(failures)} of {n + 1} files:\n" + "\n".join(failures)


KINDS = {  # name: (photometric, samples, extra_samples tag or None, bit depths)
    "grey": (1, 1, None, (8, 16)),
    "white_is_zero": (0, 1, None, (8,)),
    "grey_alpha": (1, 2, (2,), (8,)),
    "rgb": (2, 3, None, (8, 16)),
    "rgba": (2, 4, (2,), (8, 16)),
    "rgba_no_extra_tag": (2, 4, None, (8,)),
    "rgba_associated": (2, 4, (1,), (8,)),
    "rgbx": (2, 4, (0,), (8,)),
    "palette": (3, 1, None, (8,)),
}


def test_written_variants(tmp_path, rng):
    failures, n = [], 0
    for kind, (photo, spp, extra, depths) in KINDS.items():
        for bits in depths:
            dtype = np.uint8 if bits == 8 else np.uint16
            for big in (False, True):
                for comp in (1, 32773, 5, 8):
                    for layout in ("strips", "tiles"):
                        for pred in ((1, 2) if comp in (5, 8) else (1,)):
                            s = rng.integers(0, 1 << bits, (H, W, spp), dtype=np.uint64).astype(dtype)
                            if kind == "rgba_associated":       # premultiplied: colour <= alpha
                                a = s[..., 3:4].astype(np.uint32)
                                s[..., :3] = (s[..., :3].astype(np.uint32) * a // 255).astype(dtype)
                            if kind == "grey" and bits == 8 and comp == 32773:
                                s[:, 5:20] = 77                          # runs for PackBits
                            cmap = rng.integers(0, 65536, 768).tolist() if photo == 3 else None
                            name = f"{kind}{bits}_{'be' if big else 'le'}_c{comp}_{layout}_p{pred}.tif"
                            p = write_tiff(tmp_path / name, s, photo, big=big, compression=comp, predictor=pred,
                                           rows_per_strip=3, tile=(16, 16) if layout == "tiles" else None,
                                           extra_samples=extra, colormap=cmap)
                            agree(p, tmp_path, failures, name)
                            n += 1
    assert not failures, f"{len(failures)} of {n} files:\n" + "\n".join(failures)


def test_outside_the_subset_both_refuse_alike(tmp_path, rng):
    rgb = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    files = {}

    def pil(name, im, **kw):
        files[name] = tmp_path / name
        im.save(files[name], **kw)

    pil("cmyk.tif", Image.fromarray(rgb, "RGB").convert("CMYK"))
    pil("bilevel.tif", Image.fromarray(rgb, "RGB").convert("1"))
    pil("float.tif", Image.fromarray(rgb[..., 0].astype(np.float32), "F"))
    pil("jpeg.tif", Image.fromarray(rgb, "RGB"), compression="jpeg")
    files["planar.tif"] = write_tiff(tmp_path / "planar.tif", rgb, 2, planar=2)
    files["old_lzw.tif"] = write_tiff(tmp_path / "old_lzw.tif", rgb, 2, compression=5, old_lzw=True)
    files["fill_order.tif"] = write_tiff(tmp_path / "fill_order.tif", rgb, 2, fill_order=2)
    files["signed.tif"] = write_tiff(tmp_path / "signed.tif", rgb, 2, sample_format=2)
    files["white16.tif"] = write_tiff(tmp_path / "white16.tif", rgb[..., :1].astype(np.uint16) * 257, 0)
    failures = []
    for name, path in files.items():
        got, err = cli_decode(path, tmp_path)
        if got is not None:
            failures.append(f"{name}: the CLI decoded it")
            continue
        if "vkvit decodes baseline TIFF" not in err:
            failures.append(f"{name}: the CLI's sentence does not say what it decodes: {err}")
        try:
            vkvit.load_image(path)
            failures.append(f"{name}: vkvit.load_image decoded it; the CLI says: {err}")
        except vkvit.BadImageError as e:
            py = str(e)
            if "vkvit decodes baseline TIFF" in py and py.split("': ", 1)[-1] != err.split("': ", 1)[-1]:
                failures.append(f"{name}: different sentences:\n  CLI:    {err}\n  Python: {py}")
            elif "vkvit decodes baseline TIFF" not in py and name not in ("signed.tif", "fill_order.tif",
                                                                          "white16.tif"):
                failures.append(f"{name}: Python refused it for another reason: {py}")
    assert not failures, "\n".join(failures)


def test_hostile_tiffs_get_a_sentence(tmp_path, rng):
    rgb = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    good = write_tiff(tmp_path / "good.tif", rgb, 2, compression=5, rows_per_strip=4).read_bytes()
    assert cli_decode(tmp_path / "good.tif", tmp_path)[0] is not None
    cases = {
        "truncated": good[:len(good) // 2],
        "header_only": good[:8],
        "ifd_past_end": good[:4] + struct.pack("<I", len(good) + 100) + good[8:],
    }
    data = bytearray(good)                          # strip 0's offset moved past the end of the file
    ifd = struct.unpack_from("<I", data, 4)[0]
    for e in range(struct.unpack_from("<H", data, ifd)[0]):
        at = ifd + 2 + 12 * e
        if struct.unpack_from("<H", data, at)[0] == 273:
            struct.pack_into("<I", data, struct.unpack_from("<I", data, at + 8)[0], len(good) - 10)
    cases["strip_past_end"] = bytes(data)
    bad = bytearray(good)
    for k in range(20, 200):                        # LZW data turned to garbage (codes the table lacks)
        bad[k] = 0xFF
    cases["corrupt_lzw"] = bytes(bad)
    # a directory claiming 16384 x 16384 pixels in a small file, and a tile of 2^30 pixels
    huge = write_tiff(tmp_path / "huge.tif", rgb, 2)
    data = bytearray(open(huge, "rb").read())
    ifd = struct.unpack_from("<I", data, 4)[0]
    for e in range(struct.unpack_from("<H", data, ifd)[0]):
        at = ifd + 2 + 12 * e
        if struct.unpack_from("<H", data, at)[0] in (256, 257):
            struct.pack_into("<I", data, at + 8, 16384)
    cases["huge_sides"] = bytes(data)
    tiled = open(write_tiff(tmp_path / "tiled.tif", rgb, 2, tile=(16, 16)), "rb").read()
    data = bytearray(tiled)
    ifd = struct.unpack_from("<I", data, 4)[0]
    for e in range(struct.unpack_from("<H", data, ifd)[0]):
        at = ifd + 2 + 12 * e
        if struct.unpack_from("<H", data, at)[0] in (322, 323):
            struct.pack_into("<H", data, at + 8, 16384)
    cases["huge_tiles"] = bytes(data)
    for name, blob in cases.items():
        p = tmp_path / f"{name}.tif"
        p.write_bytes(blob)
        got, err = cli_decode(p, tmp_path)
        assert got is None and err and "\n" not in err, (name, err)
        assert "TIFF" in err or "above the limit" in err, (name, err)   # check_sides's sentence for huge_sides
        print(f"{name}: {err.split(': ', 1)[-1]}")
