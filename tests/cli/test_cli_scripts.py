#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The CLI for scripts and ImageNet users (issue 57, points 4, 7 and 8), on the bundled CIFAR-10 model:

  - `classify --format text|json|jsonl|csv|tsv` give the same images, ranks, classes, labels and probabilities as
    `--json` (csv read back with Python's csv module, RFC 4180; tsv unescaped); the text table names the image on
    every row; file names with a comma, a double quote, a tab and a newline survive csv and tsv;
  - `-o FILE` writes any format atomically: a run that fails (a bad model) leaves an existing file as it was, one that
    cannot create FILE is exit 4, a run with a bad image keeps the others, and SIGINT, SIGTERM and SIGQUIT remove the
    temporary file;
  - FOLDER operands: the top-level images only, `-r` the whole tree (a symlink loop ends), in the order
    tools/bulk_classify.py's list_images gives; `--files-from FILE` and `--files-from -` (comments, blank lines,
    CRLF); an empty folder is one bad entry;
  - `vkvit help classify` is `classify --help`, `vkvit help` is `--help`; a mistyped command gets "did you mean";
  - the progress line (stderr a pty) has escape sequences, and none under NO_COLOR=1 or TERM=dumb;
  - binary PPM / PGM and TIFF decode to the same pixels as the PNG they were made from; a truncated PPM, maxval 15
    or 65535, a TIFF without sides and a CMYK TIFF are refused, each with a sentence;
  - eval reports top-1 and top-5 (checked against classify's top-5 of the same images) and takes class folders named
    by index, by label in another case, or through --class-map (synset lines); a bad map line names its line;
  - a 48 MP and a 200 MP image (above lavapipe's 2^25-pixel limit) are reduced on the host and classify like the
    same picture made small (probabilities within 0.01), with the file's size in the JSON.

Run from the repository root:  /usr/bin/python3 tests/cli/test_cli_scripts.py
Exit status: 0 passed, 1 failed, 77 skipped (no Vulkan device, or the CLI / bundled model is missing).
"""

import csv
import io
import json
import os
import pty
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import BUILD, CLI, ROOT, check, env, run, run_bytes, summary  # noqa: E402

IMAGES = os.path.join(ROOT, "assets", "images")
CAT, DOG, BIRD = (os.path.join(IMAGES, n) for n in ("cat.png", "dog.jpg", "bird.bmp"))
BUNDLED = os.path.join(ROOT, "assets", "models", "vit5_cifar10.vkvit")
SUBSET = os.path.join(ROOT, "tests", "data", "cifar10-subset", "test")
DUMP = os.path.join(BUILD, "test_classify_decode")
PROB_TOL = 1e-6  # csv / tsv print 9 significant digits, as the JSON does


def json_images(args):
    rc, out, err = run(["classify", "--json"] + args)
    check(rc in (0, 2), f"classify --json {args}: exit {rc}\n{err}")
    check("warning:" not in err, f"classify --json {args}: a warning (validation is on):\n{err}")
    try:
        return json.loads(out)["images"]
    except (ValueError, KeyError) as e:
        check(False, f"classify --json {args}: not JSON ({e}): {out[:300]}")
        return []


def rows_of_json(images):
    """(image, rank, class, label, probability) per good image and rank."""
    return [(im["image"], t["rank"], t["class"], t["label"], t["probability"])
            for im in images if "top" in im for t in im["top"]]


def same_rows(got, want, what):
    ok = len(got) == len(want) and all(
        g[:4] == w[:4] and abs(g[4] - w[4]) <= PROB_TOL for g, w in zip(got, want))
    check(ok, f"{what}: rows differ from --json:\n{got[:6]}\nvs\n{want[:6]}")


def tsv_unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(s[i + 1], "\\" + s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def make_tree(tmp):
    """A folder with awkward names, a subfolder, a hidden file, a text file and a symlink loop."""
    tree = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(tree, "sub", "deeper"))
    os.makedirs(os.path.join(tree, ".hidden"))
    names = ['a,b "q".png', "tab\there.PNG", "nl\nname.png", "z.jpg"]
    for n, src in zip(names, (CAT, DOG, BIRD, DOG)):
        shutil.copy(src, os.path.join(tree, n))
    shutil.copy(BIRD, os.path.join(tree, "sub", "b.bmp"))
    shutil.copy(CAT, os.path.join(tree, "sub", "deeper", "c.png"))
    shutil.copy(CAT, os.path.join(tree, ".hidden", "h.png"))
    shutil.copy(CAT, os.path.join(tree, ".dot.png"))
    open(os.path.join(tree, "notes.txt"), "w").write("not an image\n")
    os.symlink("..", os.path.join(tree, "sub", "loop"))  # back to the top: the walk must end
    return tree


def test_formats_and_walk(tmp):
    tree = make_tree(tmp)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bulk_classify  # list_images needs no Dask
    want_order = bulk_classify.list_images([tree])
    top_only = sorted(os.path.join(tree, n) for n in os.listdir(tree)  # the folder's own files, no -r
                      if not n.startswith(".") and n.lower().endswith(bulk_classify.IMAGE_EXTENSIONS) and
                      os.path.isfile(os.path.join(tree, n)))

    ref = json_images([tree, "-r", "-k", "3"])
    got_order = [im["image"] for im in ref]
    check(got_order == want_order, f"classify -r order {got_order} is not bulk_classify's {want_order}")
    check(all("top" in im for im in ref), f"classify -r: some image failed: {ref}")
    want = rows_of_json(ref)
    print(f"classify -r: {len(ref)} images in bulk_classify.py's order, the symlink loop entered once")

    flat = json_images([tree, "-k", "1"])
    check([im["image"] for im in flat] == top_only, f"classify FOLDER (no -r): {[im['image'] for im in flat]}, "
          f"want {top_only}")

    # csv through -o (atomic), read back with the csv module
    out_csv = os.path.join(tmp, "out.csv")
    rc, out, err = run(["classify", tree, "-r", "-k", "3", "--format", "csv", "-o", out_csv])
    raw = open(out_csv, "rb").read() if os.path.exists(out_csv) else b""
    check(rc == 0 and out == "" and raw.startswith(b"image,rank,class,label,probability\r\n"),
          f"classify --format csv -o: exit {rc}, stdout {out!r}, file {raw[:80]!r}\n{err}")
    rows = list(csv.reader(io.StringIO(raw.decode(), newline="")))
    got = [(r[0], int(r[1]), int(r[2]), r[3], float(r[4])) for r in rows[1:]]
    same_rows(got, want, "--format csv")
    check(b'"' + tree.encode() + b'/a,b ""q"".png"' in raw and b'"' + tree.encode() + b'/nl\nname.png"' in raw,
          f"csv quoting (RFC 4180) of a comma, a quote and a newline: {raw[:400]!r}")
    check(not any(n.endswith(".tmp") or ".tmp." in n for n in os.listdir(tmp)), f"temporaries left: {os.listdir(tmp)}")

    # tsv on stdout: one line per row, escapes undone
    rc, out, err = run(["classify", tree, "-r", "-k", "3", "--format", "tsv"])
    lines = out.split("\n")
    check(rc == 0 and lines[0] == "image\trank\tclass\tlabel\tprobability" and lines[-1] == "" and
          all(len(l.split("\t")) == 5 for l in lines[1:-1]), f"--format tsv: exit {rc}\n{out[:500]}\n{err}")
    got = [(tsv_unescape(c[0]), int(c[1]), int(c[2]), tsv_unescape(c[3]), float(c[4]))
           for c in (l.split("\t") for l in lines[1:-1])]
    same_rows(got, want, "--format tsv")
    check("tab\\there.PNG" in out and "nl\\nname.png" in out, f"tsv escapes: {out[:400]!r}")

    # jsonl: one object per image
    rc, out, err = run(["classify", tree, "-r", "-k", "3", "--format", "jsonl", "--batch", "2"])
    objs = [json.loads(l) for l in out.splitlines()]
    check(rc == 0 and len(objs) == len(ref) and out.endswith("\n"), f"--format jsonl: exit {rc}\n{out[:300]}\n{err}")
    same_rows(rows_of_json(objs), want, "--format jsonl")

    # text: the image on every row (awk / cut), names cleaned of control characters
    rc, out, err = run(["classify", tree, "-r", "-k", "3"])
    lines = out.splitlines()
    check(rc == 0 and lines[0].split() == ["image", "rank", "class", "probability"] and
          len(lines) == 1 + 3 * len(ref), f"text: exit {rc}\n{out}\n{err}")
    for i, im in enumerate(ref):
        shown = "".join("?" if ord(ch) < 32 else ch for ch in im["image"])
        for k in range(3):
            row = lines[1 + 3 * i + k]
            check(row.startswith(shown) and row[len(shown):].split()[0] == str(k + 1),
                  f"text row {1 + 3 * i + k} does not name {shown!r} with rank {k + 1}: {row!r}")

    # --files-from: a file with comments, blank lines and CRLF; and standard input
    lst = os.path.join(tmp, "list.txt")
    open(lst, "wb").write(b"# photos\r\n\r\n" + CAT.encode() + b"\r\n  " + DOG.encode() + b"  \n")
    rc, out, err = run(["classify", "--files-from", lst, BIRD, "--format", "jsonl", "-k", "1"])
    names = [json.loads(l)["image"] for l in out.splitlines()]
    check(rc == 0 and names == [BIRD, CAT, DOG], f"--files-from FILE: exit {rc}, images {names}\n{err}")
    rc, outb, err = run_bytes(["classify", "--files-from", "-", "--format", "csv", "-k", "1"],
                              stdin=(DOG + "\n" + CAT + "\n").encode())
    names = [r[0] for r in csv.reader(io.StringIO(outb.decode(), newline=""))][1:]
    check(rc == 0 and names == [DOG, CAT], f"--files-from -: exit {rc}, images {names}\n{err}")
    rc, out, err = run(["classify", "--files-from", "-", "-", "-k", "1"])
    check(rc == 1 and "only once" in err, f"--files-from - with an image '-': exit {rc}\n{err}")

    # an empty folder is one bad entry; the others are still classified
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    rc, out, err = run(["classify", empty, CAT, "--format", "csv", "-k", "1"])
    check(rc == 2 and "holds no image files" in err and len(out.splitlines()) == 2,
          f"empty folder: exit {rc}\n{out}\n{err}")


def test_output_file(tmp):
    target = os.path.join(tmp, "keep.jsonl")
    open(target, "w").write("old\n")
    rc, out, err = run(["classify", CAT, "-o", target, "--model", os.path.join(IMAGES, "cat.png")])
    check(rc == 2 and open(target).read() == "old\n", f"-o with a bad model: exit {rc}, file {open(target).read()!r}")
    rc, out, err = run(["classify", CAT, "-o", os.path.join(tmp, "no", "such", "dir.csv")])
    check(rc == 4 and "cannot create" in err and len(err.splitlines()) == 1,
          f"-o in a missing folder: exit {rc}\n{err}")
    bad = os.path.join(tmp, "bad.png")
    open(bad, "wb").write(b"\x89PNG\r\n\x1a\nnot really")
    rc, out, err = run(["classify", bad, CAT, "--format", "jsonl", "-o", target, "-k", "1"])
    objs = [json.loads(l) for l in open(target)]
    check(rc == 2 and len(objs) == 2 and "error" in objs[0] and objs[1]["top"][0]["label"] == "cat",
          f"-o with one bad image: exit {rc}, {objs}\n{err}")

    # Signals: the temporary exists from the start (before the device); the signal removes it.
    many = [CAT] * 200
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
        out_path = os.path.join(tmp, f"sig{int(sig)}.csv")
        p = subprocess.Popen([CLI, "classify", "--format", "csv", "-o", out_path, "--batch", "1"] + many,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(),
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        deadline, seen = time.monotonic() + 30, False
        while time.monotonic() < deadline and p.poll() is None and not seen:
            seen = any(n.startswith(f"sig{int(sig)}.csv.tmp.") for n in os.listdir(tmp))
            time.sleep(0.01)
        p.send_signal(sig)
        p.wait(timeout=60)
        left = [n for n in os.listdir(tmp) if n.startswith(f"sig{int(sig)}.csv")]
        check(seen and p.returncode == -sig and left == [],
              f"{sig.name} during classify -o: temporary seen {seen}, status {p.returncode}, left {left}")
    print("classify -o: SIGINT, SIGTERM and SIGQUIT leave no temporary file behind")


def test_help_and_typos():
    rc1, a, _ = run(["help", "classify"])
    rc2, b, _ = run(["classify", "--help"])
    check(rc1 == rc2 == 0 and a == b and a.startswith("usage: vkvit classify"), "vkvit help classify != --help")
    rc1, a, _ = run(["help"])
    rc2, b, _ = run(["--help"])
    check(rc1 == rc2 == 0 and a == b and "classify" in a, "vkvit help != vkvit --help")
    rc, a, _ = run(["help", "bench", "gemm"])
    check(rc == 0 and a.startswith("usage: vkvit bench gemm"), f"vkvit help bench gemm: exit {rc}\n{a[:200]}")
    for typo, near in (("clasify", "classify"), ("Classify", "classify"), ("evl", "eval"), ("benhc", "bench"),
                       ("inspec", "inspect")):
        rc, out, err = run([typo])
        check(rc == 1 and f"did you mean '{near}'?" in err and len(err.splitlines()) == 1,
              f"vkvit {typo}: exit {rc}\n{err}")
    rc, out, err = run(["xyzzy"])
    check(rc == 1 and "unknown command 'xyzzy'" in err and "did you mean" not in err, f"vkvit xyzzy: {err}")
    rc, out, err = run(["help", "clasify"])
    check(rc == 1 and "did you mean 'classify'?" in err, f"vkvit help clasify: exit {rc}\n{err}")


def stderr_on_pty(args, extra_env):
    master, slave = pty.openpty()
    e = dict(env(), **extra_env)
    p = subprocess.Popen([CLI] + args, stdout=subprocess.PIPE, stderr=slave, env=e)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    p.stdout.read()
    p.wait(timeout=600)
    os.close(master)
    return p.returncode, err


def test_escapes():
    args = ["classify", "--batch", "1", "-k", "1", CAT, DOG, BIRD]
    for extra, want_escapes in (({"TERM": "xterm", "NO_COLOR": ""}, True), ({"TERM": "xterm", "NO_COLOR": "1"}, False),
                                ({"TERM": "dumb"}, False)):
        e = dict(extra)
        if "NO_COLOR" in e and e["NO_COLOR"] == "":
            e.pop("NO_COLOR")
        saved = os.environ.pop("NO_COLOR", None)
        try:
            rc, err = stderr_on_pty(args, e)
        finally:
            if saved is not None:
                os.environ["NO_COLOR"] = saved
        has = b"\x1b" in err
        check(rc == 0 and b"images/s" in err and has == want_escapes,
              f"progress with {extra}: exit {rc}, escapes {has} (want {want_escapes}): {err!r}")
    print("progress line: ESC [ K on a terminal, none under NO_COLOR=1 or TERM=dumb")


def png_bytes(w, h, rows, colour_type):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    c = zlib.compressobj(1)
    idat = b"".join(c.compress(b"\0" + r) for r in rows) + c.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)) +
            chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def dump(path, tmp):
    out = os.path.join(tmp, "dump.rgba")
    p = subprocess.run([DUMP, "--dump", path, out], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return None, p.stderr.strip()
    raw = open(out, "rb").read()
    return (struct.unpack("<II", raw[9:17]), raw[17:]), None


def test_pnm_and_tiff(tmp):
    w, h = 37, 23  # fresh random pixels (seeded by the clock, printed)
    seed = int(time.time())
    print(f"PPM / PGM pixels: seed {seed}")
    import random
    rnd = random.Random(seed)
    rgb = bytes(rnd.randrange(256) for _ in range(w * h * 3))
    grey = bytes(rnd.randrange(256) for _ in range(w * h))
    files = {"rgb.png": png_bytes(w, h, [rgb[y * w * 3:(y + 1) * w * 3] for y in range(h)], 2),
             "rgb.ppm": b"P6\n# comment\n%d %d\n255\n" % (w, h) + rgb,
             "grey.png": png_bytes(w, h, [grey[y * w:(y + 1) * w] for y in range(h)], 0),
             "grey.pgm": b"P5 %d %d 255\n" % (w, h) + grey}
    for n, data in files.items():
        open(os.path.join(tmp, n), "wb").write(data)
    for a, b in (("rgb.png", "rgb.ppm"), ("grey.png", "grey.pgm")):
        da, ea = dump(os.path.join(tmp, a), tmp)
        db, eb = dump(os.path.join(tmp, b), tmp)
        check(da is not None and db is not None and da == db, f"{b} decodes unlike {a}: {ea} {eb}")
    trunc = os.path.join(tmp, "short.ppm")
    open(trunc, "wb").write(files["rgb.ppm"][:-100])
    d, e = dump(trunc, tmp)
    check(d is None and "short.ppm" in (e or ""), f"a truncated PPM was not refused: {e}")
    for maxval, n in ((65535, 2 * w * h * 3), (15, w * h * 3)):  # 16-bit: stb 2.27 reads past its buffer
        odd = os.path.join(tmp, f"max{maxval}.ppm")
        open(odd, "wb").write(b"P6 %d %d %d\n" % (w, h, maxval) + bytes(n))
        d, e = dump(odd, tmp)
        check(d is None and f"maxval {maxval}" in (e or ""), f"a PPM with maxval {maxval} was not refused: {e}")
    def tiff(pixels, photometric, spp):  # one uncompressed strip; tests/python/tiff_writer.py has the variants
        entries = [(256, 4, w), (257, 4, h), (258, 3, 8), (259, 3, 1), (262, 3, photometric), (273, 4, 8),
                   (277, 3, spp), (278, 4, h), (279, 4, len(pixels))]
        ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", t, k, 1, v) for t, k, v in entries)
        return b"II*\0" + struct.pack("<I", 8 + len(pixels)) + pixels + ifd + b"\0\0\0\0"
    # (258 BitsPerSample holds one value for all samples: libtiff and Pillow take it so)
    for name, data in (("rgb.tif", tiff(rgb, 2, 3)), ("grey.tif", tiff(grey, 1, 1))):
        open(os.path.join(tmp, name), "wb").write(data)
        da, ea = dump(os.path.join(tmp, name.replace(".tif", ".png")), tmp)
        db, eb = dump(os.path.join(tmp, name), tmp)
        check(da is not None and db is not None and da == db, f"{name} decodes unlike its PNG: {ea} {eb}")
    refused = {"empty.tif": b"II*\0\x08\0\0\0" + b"\0" * 64, "cmyk.tif": tiff(rgb + grey, 5, 4)}
    for name, data in refused.items():
        path = os.path.join(tmp, name)
        open(path, "wb").write(data)
        d, e = dump(path, tmp)
        check(d is None and "TIFF" in (e or "") and name in (e or ""), f"{name} was not refused: {e}")
        print(f"{name}:", e)
    check("vkvit decodes baseline TIFF" in e, f"CMYK TIFF: the sentence does not say what vkvit decodes: {e}")
    print("PPM / PGM and TIFF decode as the PNG of the same pixels")


def test_eval(tmp):
    data = os.path.join(tmp, "evaldata")
    picks = {"airplane": "Airplane", "automobile": "1", "bird": "BIRD"}  # by label in another case, by index
    images = []
    for label, folder in picks.items():
        os.makedirs(os.path.join(data, folder))
        for f in sorted(os.listdir(os.path.join(SUBSET, label)))[:3]:
            shutil.copy(os.path.join(SUBSET, label, f), os.path.join(data, folder, f))
            images.append((os.path.join(data, folder, f), label))
    rc, out, err = run(["eval", "--data", data, "--json"])
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
    # top-1 and top-5 as classify sees the same images
    top = {im["image"]: [t["label"] for t in im["top"]] for im in json_images(["-k", "5"] + [p for p, _ in images])}
    want1 = sum(top[p][0] == lab for p, lab in images)
    want5 = sum(lab in top[p] for p, lab in images)
    check(rc == 0 and doc.get("images") == 9 and doc.get("correct") == want1 and doc.get("top5_correct") == want5
          and doc.get("top_k") == 5 and abs(doc.get("top5_accuracy", -1) - want5 / 9) < 1e-9 and
          doc.get("top1_accuracy") == doc.get("accuracy"),
          f"eval (folders Airplane, 1, BIRD): exit {rc}, {doc}, want top-1 {want1}, top-5 {want5}\n{err}")
    rc, out, err = run(["eval", "--data", data])
    check(rc == 0 and "top-1" in out and f"top-5       {100.0 * want5 / 9:.2f} %  ({want5} / 9)" in out,
          f"eval text: no top-5 line:\n{out}")
    print(f"eval: top-1 {want1} / 9, top-5 {want5} / 9, as classify's top-5 says")

    # ImageNet's synset folders through --class-map
    syn = os.path.join(tmp, "synsets")
    for label, wnid in (("airplane", "n02691156"), ("automobile", "n02958343"), ("bird", "n01503061")):
        shutil.copytree(os.path.join(data, picks[label]), os.path.join(syn, wnid))
    cmap = os.path.join(tmp, "map.txt")
    open(cmap, "w").write("# synset index\nn02691156 0\nn02958343 1\n\nn01503061 2\nn99999999 9\n")
    rc, out, err = run(["eval", "--data", syn, "--class-map", cmap, "--json"])
    try:
        doc2 = json.loads(out)
    except ValueError:
        doc2 = {}
    check(rc == 0 and doc2.get("correct") == want1 and doc2.get("top5_correct") == want5 and
          sorted(doc2.get("per_class", {})) == ["airplane", "automobile", "bird"],
          f"eval --class-map: exit {rc}, {doc2}\n{err}")
    rc, out, err = run(["eval", "--data", syn])
    check(rc == 2 and "n0" in err and "--class-map" in err, f"synset folders without a map: exit {rc}\n{err}")
    open(cmap, "w").write("n02691156 0\nn02958343 one\n")
    rc, out, err = run(["eval", "--data", syn, "--class-map", cmap])
    check(rc == 2 and "line 2" in err and len(err.splitlines()) == 1, f"a bad --class-map line: exit {rc}\n{err}")


def test_phone_photos(tmp):
    """Two-tone grey pictures (left 40 % dark): 8064x6048 (48 MP) and 16320x12240 (200 MP), above lavapipe's
    2^25-pixel limit, and the same picture at 806x604, which needs no reduction."""
    paths = []
    for w, h in ((8064, 6048), (16320, 12240), (806, 604)):
        k = w * 2 // 5
        row = bytes([40]) * k + bytes([200]) * (w - k)
        p = os.path.join(tmp, f"photo_{w}x{h}.png")
        open(p, "wb").write(png_bytes(w, h, [row] * h, 0))
        paths.append(p)
    t0 = time.monotonic()
    ims = json_images(["-k", "3", "--batch", "1"] + paths)
    dt = time.monotonic() - t0
    check(len(ims) == 3 and all("top" in im for im in ims), f"phone photos: {[im.get('error') for im in ims]}")
    if len(ims) == 3 and all("top" in im for im in ims):
        small = {t["class"]: t["probability"] for t in ims[2]["top"]}
        for im, (w, h) in zip(ims[:2], ((8064, 6048), (16320, 12240))):
            got = {t["class"]: t["probability"] for t in im["top"]}
            check(im["width"] == w and im["height"] == h, f"{w}x{h}: JSON size {im['width']}x{im['height']}")
            check(ims[2]["top"][0]["class"] == im["top"][0]["class"] and
                  all(abs(got.get(c, -1) - p) <= 0.01 for c, p in small.items()),
                  f"{w}x{h} reduced on the host classifies unlike 806x604: {got} vs {small} (tolerance 0.01)")
    print(f"48 MP and 200 MP PNGs reduced on the host and classified in {dt:.1f} s, as the 806x604 picture")


def main():
    if not os.path.exists(CLI) or not os.path.exists(BUNDLED):
        print(f"SKIP: {CLI} or {BUNDLED} is missing")
        return 77
    test_help_and_typos()
    rc, out, err = run(["info"])
    if rc == 3:
        print(f"SKIP: no Vulkan device: {err.strip()}")
        return summary() or 77
    with tempfile.TemporaryDirectory(prefix="vkvit_test_cli_scripts_") as tmp:
        for name, t in (("formats", test_formats_and_walk), ("output", test_output_file), ("pnm", test_pnm_and_tiff),
                        ("eval", test_eval), ("photos", test_phone_photos)):
            sub = os.path.join(tmp, name)
            os.makedirs(sub)
            t(sub)
    test_escapes()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
