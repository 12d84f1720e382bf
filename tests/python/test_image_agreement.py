# SPDX-License-Identifier: Apache-2.0
"""The Python binding, tools/bulk_classify.py and the CLI agree on odd images (issue 57, points 2 and 6).

Pillow writes a set of images whose modes Pillow reads back as something other than 8-bit RGB (16-bit grey, which
Pillow opens in mode I; grey + alpha; palette with and without transparency; 1-bit; CMYK JPEG; RGBA with random
alpha) and a real photo (assets/images/cat.png) under every EXIF orientation 1-8, as PNG (eXIf chunk) and JPEG
(APP1). On each:
  - pixels: vkvit.load_image(path) and vkvit.image_pixels(PIL image) against the CLI's own decode of the file
    (build/test_classify_decode --dump, tools/cli/image_decode.c): identical for lossless files; for JPEGs within
    the two decoders' difference (libjpeg vs stb_image: mean |d| <= 1.0, max |d| <= 12 of 255, as
    tests/cli/test_image_formats.py states it). In-memory modes (I;16, I;16B, a converted YCbCr, CMYK) are held
    to the CLI's decode of the file they came from;
  - classes: Session.classify (paths, pathlib.Path and PIL images), tools/bulk_classify.py and `vkvit classify
    --json --features` give the same top-1 class; on lossless files also the same probabilities (within 1e-4)
    and pooled features (max relative error 1e-5: the same pixels through the same kernels at batch 1).
The random parts (the low byte of the 16-bit samples, alpha) come from a seed printed at the start.
Before the fix the 16-bit PNG came out white in Python (airplane) while the CLI says cat, and the EXIF
orientations were ignored: test_old_conversion_disagrees keeps that case in view.
"""

import json
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

import vkvit
from conftest import ROOT, max_rel_err, vulkan_or_skip

Image = pytest.importorskip("PIL.Image")

BUILD = os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build"))
CLI = os.path.join(BUILD, "vkvit")
DUMP = os.path.join(BUILD, "test_classify_decode")
CAT = os.path.join(ROOT, "assets", "images", "cat.png")
MODEL = os.path.join(ROOT, "assets", "models", "vit5_cifar10.vkvit")
JPEG_MEAN_TOL, JPEG_MAX_TOL = 1.0, 12
PROB_TOL, FEATURE_TOL = 1e-4, 1e-5

# What turns an upright picture into the one stored under EXIF orientation o (exif_transpose undoes it).
INVERSE = {2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM, 5: Image.TRANSPOSE,
           6: Image.ROTATE_90, 7: Image.TRANSVERSE, 8: Image.ROTATE_270}


def exif_bytes(orientation):
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def cli_decode(path, tmp):
    """The CLI decoder's RGBA8 pixels of a file [H, W, 4]."""
    out = os.path.join(tmp, "dump.rgba")
    p = subprocess.run([DUMP, "--dump", str(path), out], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"the CLI's decoder refused {path}: {p.stderr.strip()}"
    raw = open(out, "rb").read()
    assert raw[:9] == b"VKVITRGBA"
    w, h = struct.unpack("<II", raw[9:17])
    return np.frombuffer(raw[17:], dtype=np.uint8).reshape(h, w, 4)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """{name: (path, lossless)}, plus {name: (PIL image in memory, file it must decode like)}."""
    for tool in (CLI, DUMP):
        if not os.access(tool, os.X_OK):
            pytest.skip(f"not built: {tool}")
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"test_image_agreement: seed {seed}", file=sys.stderr)
    rng = np.random.default_rng(seed)
    tmp = tmp_path_factory.mktemp("odd-images")
    cat = Image.open(CAT).convert("RGB")
    grey8 = np.asarray(cat.convert("L")).astype(np.uint16)
    files, memory = {}, {}

    def save(name, im, lossless=True, **opts):
        path = tmp / name
        im.save(path, **opts)
        files[name] = (path, lossless)
        return path

    # 16-bit grey: the photo's grey levels as high bytes, random low bytes (the CLI keeps the high byte)
    g16 = (grey8 << 8) | rng.integers(0, 256, grey8.shape, dtype=np.uint16)
    p16 = save("gray16.png", Image.fromarray(g16.astype(np.uint16)))       # Pillow reads it back as mode I
    memory["I;16"] = (Image.fromarray(g16.astype(np.uint16), "I;16"), p16)
    memory["I;16B"] = (Image.frombytes("I;16B", cat.size, g16.astype(">u2").tobytes()), p16)
    # grey + alpha, RGBA: random alpha (the library ignores it; nobody composites)
    alpha = rng.integers(0, 256, grey8.shape, dtype=np.uint8)
    save("grey_alpha.png", Image.fromarray(np.dstack([grey8.astype(np.uint8), alpha]), "LA"))
    save("rgba.png", Image.fromarray(np.dstack([np.asarray(cat), alpha]), "RGBA"))
    # palette without and with transparency (one colour transparent, as a tRNS chunk)
    pal = cat.quantize(colors=64)
    save("palette.png", pal)
    save("palette_trns.png", pal, transparency=int(rng.integers(0, 64)))
    save("palette_trns.gif", pal, transparency=int(rng.integers(0, 64)))
    save("bilevel.png", cat.convert("1"))
    save("grey.png", cat.convert("L"))
    # CMYK JPEG (Adobe APP14): Pillow reads it as CMYK, stb_image converts it itself
    pc = save("cmyk.jpg", cat.convert("CMYK"), lossless=False, quality=95)
    with Image.open(pc) as im:
        im.load()
        memory["CMYK"] = (im.copy(), pc)
    save("grey.jpg", cat.convert("L"), lossless=False, quality=95)
    # YCbCr: stb's conversion back to RGB, against the RGB file: a lossy round trip, held to the JPEG tolerance
    memory["YCbCr"] = (cat.convert("YCbCr"), save("rgb.png", cat))
    # a real photo under every EXIF orientation, as PNG (eXIf) and JPEG (APP1)
    for o in range(1, 9):
        stored = cat if o == 1 else cat.transpose(INVERSE[o])
        save(f"exif{o}.png", stored, exif=exif_bytes(o))
        save(f"exif{o}.jpg", stored, lossless=False, quality=92, exif=exif_bytes(o))
    return files, memory, str(tmp)


def close_enough(got, want, lossless):
    """None when the pixels agree (exactly, or within the JPEG decoders' difference), else why not."""
    if got.shape != want.shape:
        return f"shape {got.shape} vs the CLI's {want.shape}"
    d = np.abs(got[..., :3].astype(int) - want[..., :3].astype(int))
    if lossless:
        if d.max() or not np.array_equal(got[..., 3], want[..., 3]):
            return f"{int((d.max(axis=-1) > 0).sum())} pixels differ (max {d.max()})"
    elif d.mean() > JPEG_MEAN_TOL or d.max() > JPEG_MAX_TOL:
        return f"mean |d| {d.mean():.3f}, max {d.max()} (tolerance {JPEG_MEAN_TOL}, {JPEG_MAX_TOL})"
    return None


def test_pixels_match_the_cli_decoder(cases):
    files, memory, tmp = cases
    bad = []
    for name, (path, lossless) in files.items():
        want = cli_decode(path, tmp)
        got = vkvit.load_image(path)
        with Image.open(path) as im:
            from_pil = vkvit.image_pixels(im)
        for what, pixels in (("load_image", got), ("image_pixels", from_pil)):
            assert pixels.dtype == np.uint8 and pixels.flags["C_CONTIGUOUS"]
            why = close_enough(pixels, want, lossless)
            if why:
                bad.append(f"{name} ({what}): {why}")
    for mode, (im, path) in memory.items():
        assert im.mode == mode
        lossless = not str(path).endswith(".jpg") and mode != "YCbCr"
        why = close_enough(vkvit.image_pixels(im), cli_decode(path, tmp), lossless)
        if why:
            bad.append(f"in-memory {mode} (like {os.path.basename(path)}): {why}")
    assert bad == [], "\n".join(bad)


def test_old_conversion_disagrees(cases):
    """The case that failed as a user: Pillow's own convert('RGBA') of the 16-bit PNG (the binding's old
    conversion) is white where the CLI's pixels are the photo, and the old conversion ignored EXIF 6."""
    files, _, tmp = cases
    with Image.open(files["gray16.png"][0]) as im:
        assert im.mode in ("I", "I;16")
        old = np.asarray(im.convert("RGBA"))
    assert close_enough(old, cli_decode(files["gray16.png"][0], tmp), True) is not None
    with Image.open(files["exif6.png"][0]) as im:
        old = np.asarray(im.convert("RGBA"))
    assert close_enough(old, cli_decode(files["exif6.png"][0], tmp), True) is not None


def cli_classify(paths, top_k):
    r = subprocess.run([CLI, "classify", *map(str, paths), "--json", "--features", "-k", str(top_k), "--batch", "1",
                        "--model", MODEL], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "validation" not in r.stderr.lower(), r.stderr      # VKVIT_VALIDATION=1 from the caller: silent
    doc = json.loads(r.stdout)
    assert len(doc["images"]) == len(paths)
    return doc["images"]


def test_classify_agrees_with_the_cli_and_bulk_classify(cases, tmp_path):
    files, memory, _ = cases
    names = list(files)
    paths = [files[n][0] for n in names]
    top_k = 3
    cli = cli_classify(paths, top_k)

    ctx = vulkan_or_skip()
    try:
        with vkvit.Model(ctx, MODEL) as model, \
                vkvit.Session(model, batch=1, top_k=top_k, features=True) as s:
            py, feats = [], []
            for i, p in enumerate(paths):
                # str paths, pathlib.Path and PIL images in turn: all three decode through the same helper
                arg = str(p) if i % 3 == 0 else pathlib.Path(p) if i % 3 == 1 else Image.open(p)
                (res,) = s.classify([arg], top_k=top_k)
                assert res.error is None, res.error
                py.append(res)
                f = s.features()
                assert f.shape[0] == 1 and np.isfinite(f).all()
                feats.append(f[0])
            in_memory = {mode: s.classify([im], top_k=top_k)[0] for mode, (im, _) in memory.items()}
        assert ctx.validation_messages() == 0
    finally:
        ctx.close()

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bulk_classify
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(str(p) for p in paths) + "\n")
    out = tmp_path / "bulk.jsonl"
    args = bulk_classify.parse_args([str(listing), "-o", str(out), "--batch", "4", "--top-k", str(top_k),
                                     "--workers", "1", "--quiet", "--model", MODEL])
    pytest.importorskip("distributed")
    stats = bulk_classify.run(args)
    assert stats["errors"] == 0 and stats["written"] == len(paths) and stats["validation_messages"] == 0
    bulk = {r["path"]: r for r in map(json.loads, open(out, encoding="utf-8"))}

    bad = []
    for name, path, c, p, f in zip(names, paths, cli, py, feats):
        lossless = files[name][1]
        want = [t["label"] for t in c["top"]]
        b = bulk[str(path)]
        if p[0][0] != want[0]:
            bad.append(f"{name}: Session.classify says {p[0][0]}, the CLI {want[0]}")
        if b["labels"][0] != want[0]:
            bad.append(f"{name}: bulk_classify says {b['labels'][0]}, the CLI {want[0]}")
        if not lossless:
            continue
        cli_probs = np.array([t["probability"] for t in c["top"]])
        for who, labels, probs in (("Session.classify", [t[0] for t in p], [t[2] for t in p]),
                                   ("bulk_classify", b["labels"], b["probabilities"])):
            if labels != want or np.abs(np.array(probs) - cli_probs).max() > PROB_TOL:
                bad.append(f"{name}: {who} gives {list(zip(labels, probs))}, the CLI "
                           f"{list(zip(want, cli_probs))} (tolerance {PROB_TOL})")
        err = max_rel_err(f, np.array(c["features"], np.float32))
        if err > FEATURE_TOL:
            bad.append(f"{name}: pooled features differ from the CLI's by {err:.2e} (tolerance {FEATURE_TOL})")
    for mode, (_, path) in memory.items():
        want = cli[paths.index(path)]["top"][0]["label"]
        if in_memory[mode][0][0] != want:
            bad.append(f"in-memory {mode}: Session.classify says {in_memory[mode][0][0]}, the CLI (on "
                       f"{os.path.basename(path)}) {want}")
    assert bad == [], "\n".join(bad)
