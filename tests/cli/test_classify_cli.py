#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`vkvit classify` and `vkvit eval` as a user meets them (the built CLI, validation layer on).

Mechanics, with the random-weight golden model tests/golden/models/vit5_nvsubq_cls_r4.vkvit (32x32, labels
class_0..9; a copy relabelled with the CIFAR-10 class names for eval):
  - --help of every subcommand lists its flags with their defaults; `vkvit --help` lists classify/eval and the
    exit codes;
  - batching: 40 images in one run (a batch of 32, then 8 in slots padded with a repeat) give the same classes and
    probabilities (abs 1e-4) as two runs of 20; --top is clamped to the class count, probabilities sorted and
    summing to 1 (1e-4); the table has its header and one row per rank;
  - eval: --limit keeps the classes balanced, --predictions writes one line per image, --json parses, a folder that
    is not a label and a folder without images are exit 2 with one line, an unreadable image is one line and
    exit 2 while the others are still evaluated;
  - without --model, a copy of the binary in <prefix>/bin finds <prefix>/share/vkvit/models/vit5_cifar10.vkvit.
With the bundled model (assets/models/vit5_cifar10.vkvit; skipped while it does not exist):
  - `vkvit classify assets/images/cat.png` (no --model) prints `cat` first, in fp32 and fp16, and the table the
    README shows as its first command's output (classes in order, probabilities within 0.05 %);
  - `vkvit eval --data tests/data/cifar10-subset` is within tolerance_images of the PyTorch reference's correct
    count stored in tests/data/cifar10-subset/expected.json (written by tools/eval_agreement.py --write-expected
    for the same model file: its SHA-256 must match).

Run from the repository root:  /usr/bin/python3 tests/cli/test_classify_cli.py
Exit status: 0 passed, 1 failed, 77 skipped (no Vulkan device / CLI not built, or everything ran but the bundled
model is missing).
"""

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, run, summary  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools"))
GOLDEN = os.path.join(ROOT, "tests", "golden", "models", "vit5_nvsubq_cls_r4.vkvit")
BUNDLED = os.path.join(ROOT, "assets", "models", "vit5_cifar10.vkvit")
SUBSET = os.path.join(ROOT, "tests", "data", "cifar10-subset")
IMAGES = os.path.join(ROOT, "assets", "images")
CIFAR = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

def run_json(args, what):
    rc, out, err = run(args)
    check(rc == 0 and "warning" not in err, f"{what}: exit {rc}\n{err}")
    try:
        return json.loads(out)
    except ValueError:
        check(False, f"{what}: stdout is not JSON: {out[:300]!r}")
        return None


def option_line(line, flag):
    """Whether `line` of a --help text documents `flag` ("  --top K ..." or "  -k, --top K ...")."""
    return re.match(r"\s+(-\w, )?" + re.escape(flag) + r"\b", line) is not None


def test_help():
    rc, out, _ = run(["--help"])
    check(rc == 0 and "classify" in out and "eval" in out and "exit codes" in out, f"vkvit --help:\n{out}")
    flags = {
        "classify": ["--model", "--top", "--json", "--precision", "--device"],
        "eval": ["--data", "--model", "--batch", "--limit", "--predictions", "--json", "--precision", "--device"],
        "run": ["--model", "--input", "--output", "--device"],
        "inspect": ["--json"],
        "info": [],
    }
    for cmd, want in flags.items():
        rc, out, _ = run([cmd, "--help"])
        check(rc == 0 and out.startswith(f"usage: vkvit {cmd}"), f"{cmd} --help: exit {rc}\n{out}")
        for flag in want:
            line = next((l for l in out.splitlines() if option_line(l, flag)), "")
            # A flag's description may continue on the next lines; look at its paragraph.
            para = out[out.find(line):].split("\n  -")[0] if line else ""
            check(line and ("default" in para or "required" in para),
                  f"{cmd} --help: {flag} is missing or has no default:\n{out}")
        if cmd != "info":
            check("exit codes" in out, f"{cmd} --help has no exit codes")
    for args in (["bench", "--help"], ["bench", "gemm", "--help"]):
        rc, out, _ = run(args)
        check(rc == 0 and "--repeat" in out and "default" in out, f"{' '.join(args)}: exit {rc}\n{out}")
    rc, out, _ = run(["bench", "--help"])
    for flag in ("--model", "--batch", "--precision", "--repeat", "--warmup", "--device", "--json", "--shape"):
        line = next((l for l in out.splitlines() if option_line(l, flag)), "")
        para = out[out.find(line):].split("\n  -")[0] if line else ""
        check(line and ("default" in para or "required" in para), f"bench --help: {flag} has no default:\n{out}")


def classify_json(model, paths, top, what):
    doc = run_json(["classify", "--model", model, "--json", "--top", str(top)] + paths, what)
    return {im["image"]: im["top"] for im in doc["images"]} if doc else {}


def test_batching(tmp):
    paths = sorted(glob.glob(os.path.join(SUBSET, "test", "*", "000[0-3].jpg")))
    check(len(paths) == 40, f"expected 40 subset images, found {len(paths)}")
    whole = classify_json(GOLDEN, paths, 3, "classify 40 images")
    halves = {**classify_json(GOLDEN, paths[:20], 3, "classify 20 images"),
              **classify_json(GOLDEN, paths[20:], 3, "classify the other 20")}
    worst = 0.0
    for p in paths:
        a, b = whole.get(p), halves.get(p)
        if not a or not b:
            check(False, f"batching: {p} missing from a result")
            continue
        check([e["class"] for e in a] == [e["class"] for e in b], f"batching: {p}: classes {a} vs {b}")
        worst = max([worst] + [abs(x["probability"] - y["probability"]) for x, y in zip(a, b)])
    check(worst <= 1e-4, f"batching: probabilities differ by {worst:.3g} between batch 32+8 and 20+20")
    print(f"batching: 40 images as 32+8 vs 20+20: same classes, max probability difference {worst:.2g}")

    res = classify_json(GOLDEN, [os.path.join(IMAGES, "cat.png")], 50, "--top 50")
    top = next(iter(res.values()), [])
    probs = [e["probability"] for e in top]
    check(len(top) == 10 and [e["rank"] for e in top] == list(range(1, 11)),
          f"--top 50 on 10 classes gives {len(top)} entries")
    check(abs(sum(probs) - 1.0) <= 1e-4 and probs == sorted(probs, reverse=True),
          f"--top 10: probabilities {probs} do not sum to 1 or are not sorted")
    check(sorted(e["class"] for e in top) == list(range(10)) and top[0]["label"] == f"class_{top[0]['class']}",
          f"--top 10: classes {top}")

    rc, out, err = run(["classify", "--model", GOLDEN, os.path.join(IMAGES, "cat.png"), os.path.join(IMAGES, "dog.jpg")])
    lines = out.splitlines()
    check(rc == 0 and lines and lines[0].split() == ["image", "rank", "class", "probability"] and len(lines) == 11
          and err == "", f"table: exit {rc}\n{out}\n{err}")


def relabelled_golden(tmp):
    try:
        import vkvit_file
    except ImportError as e:
        print(f"note: cannot import tools/vkvit_file.py ({e}); eval mechanics skipped")
        return None
    tensors, doc = vkvit_file.read_model(GOLDEN)
    doc["labels"] = CIFAR
    path = os.path.join(tmp, "golden_cifar_labels.vkvit")
    vkvit_file.write_model(path, tensors, doc)
    return path


def test_eval_mechanics(tmp):
    model = relabelled_golden(tmp)
    if not model:
        return
    preds = os.path.join(tmp, "p.tsv")
    doc = run_json(["eval", "--model", model, "--data", SUBSET, "--limit", "25", "--batch", "7", "--json",
                    "--predictions", preds], "eval --limit 25")
    if doc:
        counts = sorted(v["images"] for v in doc["per_class"].values())
        check(doc["images"] == 25 and counts == [2] * 5 + [3] * 5 and doc["unreadable"] == 0,
              f"eval --limit 25: {doc}")
        check(sum(v["correct"] for v in doc["per_class"].values()) == doc["correct"] and
              abs(doc["accuracy"] - doc["correct"] / 25) < 1e-6, f"eval: inconsistent counts {doc}")
        rows = [l.split("\t") for l in open(preds).read().splitlines() if not l.startswith("#")]
        check(len(rows) == 25 and all(len(r) == 3 and r[1] in CIFAR and r[2] in CIFAR for r in rows)
              and sum(r[1] == r[2] for r in rows) == doc["correct"], f"--predictions: {rows[:3]}")
        check(rows[0][0].endswith("airplane/0000.jpg") and rows[1][0].endswith("automobile/0000.jpg"),
              f"eval order does not cycle through the classes: {rows[:2]}")
    rc, out, err = run(["eval", "--model", model, "--data", SUBSET, "--limit", "10"])
    check(rc == 0 and "accuracy" in out and "per class" in out and "images/s" in out and err == "",
          f"eval text: exit {rc}\n{out}\n{err}")

    bad = os.path.join(tmp, "bad_data")
    os.makedirs(os.path.join(bad, "cat"))
    os.makedirs(os.path.join(bad, "unicorn"))
    rc, out, err = run(["eval", "--model", model, "--data", bad])
    check(rc == 2 and len(err.splitlines()) == 1 and "unicorn" in err and "not one of the model's labels" in err,
          f"eval with a folder that is not a label: exit {rc}\n{err}")
    os.rmdir(os.path.join(bad, "unicorn"))
    rc, out, err = run(["eval", "--model", model, "--data", bad])
    check(rc == 2 and len(err.splitlines()) == 1 and "no image files" in err, f"eval without images: {rc}\n{err}")
    rc, out, err = run(["eval", "--model", model, "--data", os.path.join(tmp, "nowhere")])
    check(rc == 2 and len(err.splitlines()) == 1, f"eval on a missing folder: exit {rc}\n{err}")

    # An unreadable image among good ones: one line, exit 2, the others evaluated, '-' in the predictions.
    shutil.copy(os.path.join(SUBSET, "test", "cat", "0000.jpg"), os.path.join(bad, "cat", "a.jpg"))
    shutil.copy(os.path.join(ROOT, "tests", "data", "truncated.jpg"), os.path.join(bad, "cat", "b.jpg"))
    shutil.copy(os.path.join(SUBSET, "test", "cat", "0001.jpg"), os.path.join(bad, "cat", "c.jpg"))
    rc, out, err = run(["eval", "--model", model, "--data", bad, "--json", "--predictions", preds])
    rows = [l.split("\t") for l in open(preds).read().splitlines() if not l.startswith("#")]
    check(rc == 2 and len(err.splitlines()) == 1 and "b.jpg" in err and json.loads(out)["images"] == 2 and
          json.loads(out)["unreadable"] == 1 and [r[2] == "-" for r in rows] == [False, True, False],
          f"eval with an unreadable image: exit {rc}\n{out}\n{err}\n{rows}")


def test_installed_layout(tmp):
    """Without --model, an installed binary (<prefix>/bin/vkvit) finds <prefix>/share/vkvit/models/."""
    prefix = os.path.join(tmp, "prefix")
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "share", "vkvit", "models"))
    shutil.copy(CLI, os.path.join(prefix, "bin", "vkvit"))
    installed_model = os.path.join(prefix, "share", "vkvit", "models", "vit5_cifar10.vkvit")
    shutil.copy(GOLDEN, installed_model)
    env = dict(os.environ, VKVIT_VALIDATION="1", VKVIT_CACHE_DIR="")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    p = subprocess.run([os.path.join(prefix, "bin", "vkvit"), "classify", "--json", os.path.join(IMAGES, "cat.png")],
                       capture_output=True, text=True, env=env, timeout=900)
    try:
        doc = json.loads(p.stdout)
        used = os.path.realpath(doc["model"])
    except (ValueError, KeyError):
        doc, used = None, None
    check(p.returncode == 0 and used == os.path.realpath(installed_model),
          f"installed layout: exit {p.returncode}, model used {used}, want {installed_model}\n{p.stderr}")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def table_rows(text):
    """(rank, class, probability %) of each row of a `vkvit classify` table."""
    rows = []
    for line in text.splitlines():
        m = re.search(r"\s(\d+)\s+(\S+)\s+([\d.]+) %$", line)
        if m:
            rows.append((int(m.group(1)), m.group(2), float(m.group(3))))
    return rows


def check_readme_sample():
    """The README's sample output of its first command is what the bundled model prints: the same class first, the
    same five classes, each probability within 0.05 % (another device may round the last digit otherwise, and so
    swap two classes whose probabilities are that close)."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"The first command prints.*?```\n(.*?)```", readme, re.S)
    if m is None:
        check(False, "README.md: no sample output after 'The first command prints'")
        return
    rc, out, err = run(["classify", os.path.join("assets", "images", "cat.png")])
    if rc != 0:
        check(False, f"classify assets/images/cat.png: exit {rc}: {err}")
        return
    want, got = table_rows(m.group(1)), table_rows(out)
    got_p = {c: p for _, c, p in got}
    same = (len(want) == len(got) == 5 and want[0][1] == got[0][1] and
            all(c in got_p and abs(p - got_p[c]) <= 0.05 for _, c, p in want))
    check(same, f"README.md's sample output of `vkvit classify assets/images/cat.png` is stale: it shows {want}, the "
          f"bundled model prints {got}; paste the current output into README.md")


def test_bundled():
    cat = os.path.join("assets", "images", "cat.png")
    for precision in ("fp32", "fp16"):
        rc, out, err = run(["classify", cat, "--precision", precision])
        rows = out.splitlines()
        first = rows[1].split() if len(rows) > 1 else []
        check(rc == 0 and len(first) >= 4 and first[0] == cat and first[2] == "cat" and "warning" not in err,
              f"classify {cat} --precision {precision} (bundled model): exit {rc}\n{out}\n{err}")
    print(out, end="")
    check_readme_sample()
    for name in ("dog.jpg", "bird.bmp"):
        rc, out, err = run(["classify", os.path.join("assets", "images", name), "--top", "1"])
        print(out.splitlines()[-1] if out else err)

    exp_path = os.path.join(SUBSET, "expected.json")
    if not os.path.exists(exp_path):
        check(False, f"{exp_path} is missing: run /usr/bin/python3 tools/eval_agreement.py --write-expected")
        return
    exp = json.load(open(exp_path))
    check(exp["model_sha256"] == sha256(BUNDLED),
          f"{exp_path} was written for another model file ({exp.get('model_name')}): run /usr/bin/python3 "
          "tools/eval_agreement.py --write-expected")
    doc = run_json(["eval", "--data", SUBSET, "--json"], "eval on the subset with the bundled model")
    if doc:
        diff = abs(doc["correct"] - exp["pytorch_correct"])
        print(f"eval on the CIFAR-10 subset: vkvit {doc['correct']} / {doc['images']} correct, PyTorch "
              f"{exp['pytorch_correct']}, tolerance {exp['tolerance_images']}; {doc['images_per_s']:.1f} images/s")
        check(doc["images"] == exp["images"] and diff <= exp["tolerance_images"],
              f"eval: vkvit {doc['correct']} correct, PyTorch {exp['pytorch_correct']} (tolerance "
              f"{exp['tolerance_images']})")


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    rc, out, err = run(["info"])
    if rc == 3:
        print(f"SKIP: no Vulkan device: {err.strip()}")
        return 77
    test_help()
    with tempfile.TemporaryDirectory(prefix="vkvit_test_classify_") as tmp:
        test_batching(tmp)
        test_eval_mechanics(tmp)
        test_installed_layout(tmp)
    bundled = os.path.exists(BUNDLED)
    if bundled:
        test_bundled()
    else:
        print(f"SKIP: {os.path.relpath(BUNDLED, ROOT)} does not exist yet; the bundled-model checks did not run")
    if summary():
        return 1
    return 0 if bundled else 77


if __name__ == "__main__":
    sys.exit(main())
