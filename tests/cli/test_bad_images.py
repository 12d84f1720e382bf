#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Bad input to `vkvit classify`: one clear line on stderr per bad file and a non-zero exit, never a crash.

Runs the built CLI (VKVIT_BINARY_DIR, else build/) with the validation layer on over:
  - missing files, a directory, an empty file, a text file named .jpg, a model file given as an image,
    a truncated JPEG (tests/data/truncated.jpg), truncated PNG, BMP, GIF and TGA files;
  - crafted headers: PNG and BMP claiming 0x0, 100000x100000 and 2^31-1 pixels, 16385x1 (one past the limit);
  - every corrupt PngSuite image x*.png (../shared/data/pngsuite/png; xcsn0g01.png, a CRC error in an IDAT chunk,
    may be accepted or refused);
  - bad model files: not a model (an image), an empty file, a missing file.
Checks: exit code 2 (bad input); stderr has exactly one line per bad file, naming it; the good image given in the
same run is still classified (stdout); no sanitizer report, no validation message. Then every valid PngSuite
image (b*, c*, f*, g*, ...) is classified in one run (several batches of 32) without an error.

Run from the repository root:  /usr/bin/python3 tests/cli/test_bad_images.py
Exit status: 0 passed, 1 failed, 77 skipped (no Vulkan device, or the CLI is not built).
"""

import glob
import json
import os
import struct
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, run, summary  # noqa: E402

MODEL = os.path.join(ROOT, "tests", "golden", "models", "vit5_nvsubq_cls_r4.vkvit")   # 32x32, random weights
GOOD = os.path.join(ROOT, "assets", "images", "cat.png")
PNGSUITE = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "pngsuite", "png"))
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")

def png(width, height, with_idat=False):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    if with_idat:
        out += chunk(b"IDAT", zlib.compress(b"\0" * (1 + 3 * max(width, 1))))
    return out + chunk(b"IEND", b"")


def bmp(width, height, pixel_bytes=16):
    header = struct.pack("<2sIHHI", b"BM", 54 + pixel_bytes, 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, pixel_bytes, 2835, 2835, 0, 0)
    return header + info + b"\x40" * pixel_bytes


def crafted(tmp):
    """{path: why} of bad files written into tmp."""
    files = {}

    def put(name, data, why):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        files[path] = why

    put("empty.png", b"", "empty file")
    put("text.jpg", b"hello, this is text\n" * 10, "text named .jpg")
    put("zero.png", png(0, 0, True), "PNG 0x0")
    put("huge.png", png(100000, 100000), "PNG 100000x100000")
    put("absurd.png", png(2**31 - 1, 2**31 - 1), "PNG 2^31-1 square")
    put("wide.png", png(16385, 1, True), "PNG one pixel over the side limit")
    put("zero.bmp", bmp(0, 0), "BMP 0x0")
    put("huge.bmp", bmp(100000, 100000), "BMP 100000x100000")
    put("negative.bmp", bmp(-(2**31), 5), "BMP width -2^31")
    with open(GOOD, "rb") as f:
        put("cut.png", f.read()[:5000], "truncated PNG")
    with open(os.path.join(ROOT, "assets", "images", "bird.bmp"), "rb") as f:
        put("cut.bmp", f.read()[:10000], "truncated BMP")
    with open(os.path.join(ROOT, "assets", "images", "dog.jpg"), "rb") as f:
        put("cut.jpg", f.read()[:20000], "truncated JPEG (mid-scan)")
    try:
        from PIL import Image
        cat = Image.open(GOOD).convert("RGB")
        for ext in ("gif", "tga"):
            full = os.path.join(tmp, "full." + ext)
            cat.save(full)
            with open(full, "rb") as f:
                data = f.read()
            put("cut." + ext, data[:len(data) // 2], f"truncated {ext.upper()}")
    except ImportError:
        print("note: PIL not importable; no truncated GIF / TGA cases")
    files[os.path.join(ROOT, "tests", "data", "truncated.jpg")] = "truncated JPEG (skimage)"
    files[os.path.join(tmp, "missing.png")] = "missing file"
    os.mkdir(os.path.join(tmp, "folder.png"))
    files[os.path.join(tmp, "folder.png")] = "a directory"
    files[MODEL] = "a model file given as an image"
    if os.path.isdir(PNGSUITE):
        for f in sorted(glob.glob(os.path.join(PNGSUITE, "x*.png"))):
            files[f] = "corrupt PngSuite " + os.path.basename(f)
    else:
        print(f"note: {PNGSUITE} not found; the PngSuite cases are not run")
    return files


def no_sanitizer_report(stderr, what):
    check(not any(m in stderr for m in SANITIZER_MARKS), f"{what}: sanitizer report:\n{stderr}")


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    rc, out, err = run(["info"])
    if rc == 3:
        print(f"SKIP: no Vulkan device: {err.strip()}")
        return 77

    with tempfile.TemporaryDirectory(prefix="vkvit_test_bad_images_") as tmp:
        bad = crafted(tmp)
        optional = {p for p in bad if os.path.basename(p) == "xcsn0g01.png"}

        # Every bad file with one good image in the middle, in one run.
        paths = list(bad)
        paths.insert(len(paths) // 2, GOOD)
        rc, out, err = run(["classify", "--model", MODEL, "--top", "2"] + paths)
        lines = [l for l in err.splitlines() if l.strip()]
        no_sanitizer_report(err, "bad images")
        check(rc == 2, f"bad images: exit {rc}, want 2\n{err}")
        check(GOOD in out and out.count("class_") == 2, f"bad images: the good image was not classified:\n{out}")
        for p, why in bad.items():
            n = sum(1 for l in lines if p in l)
            if p in optional:
                check(n <= 1, f"{why}: {n} stderr lines name it")
            else:
                check(n == 1, f"{why} ({p}): {n} stderr lines name it, want 1")
        n_optional_refused = sum(1 for p in optional if any(p in l for l in lines))
        check(len(lines) == len(bad) - len(optional) + n_optional_refused,
              f"bad images: {len(lines)} stderr lines for {len(bad)} bad files:\n{err}")
        check(all(l.startswith("vkvit classify: ") for l in lines), f"bad images: unexpected stderr lines:\n{err}")
        for l in lines:
            check(len(l) < 400, f"bad images: an error line is not one short sentence: {l}")
        print(f"{len(bad)} bad files, {len(lines)} error lines, e.g.:\n  " + "\n  ".join(lines[:4]), flush=True)

        # Each kind alone: exit 2, exactly one line, nothing on stdout (there is nothing to print).
        for p in [os.path.join(tmp, n) for n in ("missing.png", "folder.png", "empty.png", "huge.png")]:
            rc, out, err = run(["classify", "--model", MODEL, p])
            no_sanitizer_report(err, bad[p])
            check(rc == 2 and len(err.splitlines()) == 1 and out == "",
                  f"{bad[p]} alone: exit {rc}, stdout {out!r}, stderr {err!r}")
        # --json reports the bad image inside the document as well.
        rc, out, err = run(["classify", "--model", MODEL, "--json", GOOD, os.path.join(tmp, "zero.png")])
        try:
            doc = json.loads(out)
            check(rc == 2 and len(doc["images"]) == 2 and "top" in doc["images"][0] and "error" in doc["images"][1],
                  f"--json with a bad image: exit {rc}: {out}")
        except ValueError:
            check(False, f"--json with a bad image: stdout is not JSON: {out!r}")

        # Bad model files: one line, exit 2.
        empty_model = os.path.join(tmp, "empty.vkvit")
        open(empty_model, "wb").close()
        for model, why in ((GOOD, "an image as the model"), (empty_model, "an empty model file"),
                           (os.path.join(tmp, "none.vkvit"), "a missing model file"), (tmp, "a folder as the model")):
            rc, out, err = run(["classify", "--model", model, GOOD])
            no_sanitizer_report(err, why)
            check(rc == 2 and len(err.splitlines()) == 1 and err.startswith("vkvit classify: ") and out == "",
                  f"{why}: exit {rc}, stdout {out!r}, stderr {err!r}")

        # Usage errors: exit 1.
        for args in (["classify"], ["classify", "--top", "0", GOOD], ["classify", "--precision", "fp8", GOOD],
                     ["classify", "--frobnicate", GOOD], ["eval"], ["eval", "--data", tmp, "--batch", "0"]):
            rc, out, err = run(args)
            check(rc == 1 and err.strip(), f"{' '.join(args)}: exit {rc}, want 1; stderr {err!r}")

    # Every valid PngSuite image classifies, in one run of several batches.
    if os.path.isdir(PNGSUITE):
        valid = sorted(f for f in glob.glob(os.path.join(PNGSUITE, "*.png")) if not os.path.basename(f).startswith("x"))
        rc, out, err = run(["classify", "--model", MODEL, "--json", "--top", "1"] + valid)
        no_sanitizer_report(err, "valid PngSuite")
        check(rc == 0 and err == "", f"valid PngSuite: exit {rc}, stderr:\n{err}")
        try:
            doc = json.loads(out)
            ok = [im for im in doc["images"] if "top" in im and len(im["top"]) == 1]
            check(len(ok) == len(valid), f"valid PngSuite: {len(ok)} of {len(valid)} images classified")
            print(f"valid PngSuite: {len(ok)} of {len(valid)} images classified", flush=True)
        except ValueError:
            check(False, f"valid PngSuite: stdout is not JSON: {out[:500]!r}")

    return summary()


if __name__ == "__main__":
    sys.exit(main())
