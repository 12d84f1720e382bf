#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""vkvit against PyTorch on a folder of labelled images: both accuracies and how often the two predictions agree.

    /usr/bin/python3 tools/eval_agreement.py --data DIR [--model FILE] [--limit N] [--cli build/vkvit]
    /usr/bin/python3 tools/eval_agreement.py --predictions P.tsv [--model FILE]   # reuse a `vkvit eval` run
    /usr/bin/python3 tools/eval_agreement.py --write-expected                     # refresh the CI expectation
    /usr/bin/python3 tools/eval_agreement.py --data DIR --lossless-copy           # both sides see the same pixels

vkvit side: `vkvit eval --model FILE --data DIR --predictions P.tsv` (stb_image decoding, GPU pre-processing,
GPU top-1), unless --predictions names the file of an earlier run. PyTorch side, for exactly the images listed
in that file: the model file's tensors loaded (tools/vkvit_file.py) into the reference network of
tools/reference/ (the code that writes the goldens), PIL decoding, and the pre-processing of the model's
`preprocess` entry as tools/reference/preprocess.py computes it (for 32x32 CIFAR images and a 32x32 model the
resize and crop are the identity). Prints both accuracies, the agreement rate and the images they disagree on.

JPEG decoders differ (stb_image vs PIL's libjpeg: ~0.1 grey level on average, up to 2), which moves borderline
images. --lossless-copy first decodes every image with PIL into a PNG copy of the folder (PNG decoding is exact
in both), so the agreement then measures the inference engines alone.

--write-expected runs all of it on tests/data/cifar10-subset with the bundled model
(assets/models/vit5_cifar10.vkvit) and writes tests/data/cifar10-subset/expected.json, which
tests/cli/test_classify_cli.py compares `vkvit eval` against. Run it again whenever the bundled model changes.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(1, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402

import vkvit_file  # noqa: E402
from generic import ClassificationResNet  # noqa: E402
from mlstm import VisionLSTM  # noqa: E402
from preprocess import preprocess  # noqa: E402
from vit5 import ViT5ClassificationNet  # noqa: E402

BUNDLED_MODEL = os.path.join(REPO, "assets", "models", "vit5_cifar10.vkvit")
SUBSET = os.path.join(REPO, "tests", "data", "cifar10-subset")
EXPECTED = os.path.join(SUBSET, "expected.json")
# vkvit may differ from PyTorch on a few borderline images (stb_image vs libjpeg decoding differs by ~0.1 grey
# level on average; fp32 summation order): the CI check allows this many images of difference in correct count.
TOLERANCE_IMAGES = 3


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_network(path):
    tensors, doc = vkvit_file.read_model(path)
    arch = doc["architecture"]
    if arch == "vit5":
        net = ViT5ClassificationNet.from_config(doc)
    elif arch == "vil":
        net = VisionLSTM.from_config(doc)
    else:
        net = ClassificationResNet.from_config(doc)
    net.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True)
    return net.eval(), doc


def read_predictions(path):
    """[(image path, true label, vkvit's label or None)] from a `vkvit eval --predictions` file."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            p, true, pred = line.rstrip("\n").split("\t")
            rows.append((p, true, None if pred == "-" else pred))
    return rows


def run_vkvit(cli, model, data, limit, out_path):
    cmd = [cli, "eval", "--model", model, "--data", data, "--predictions", out_path, "--json"]
    if limit:
        cmd += ["--limit", str(limit)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 2) or not os.path.exists(out_path):
        sys.exit(f"eval_agreement: {' '.join(cmd)} failed (exit {p.returncode}):\n{p.stderr}")
    sys.stderr.write(p.stderr)
    return json.loads(p.stdout)


def pytorch_predictions(net, doc, paths, batch=100):
    pp = doc["preprocess"]
    labels = doc["labels"]
    out = []
    for i in range(0, len(paths), batch):
        xs = []
        for p in paths[i:i + batch]:
            with Image.open(p) as im:  # EXIF orientation applied, as vkvit's decoder does
                rgb = np.asarray(ImageOps.exif_transpose(im).convert("RGB"), dtype=np.uint8)
            xs.append(preprocess(rgb, pp["image_size"], pp["resize_shorter"], pp["interpolation"], pp["mean"],
                                 pp["std"]))
        with torch.no_grad():
            logits = net(torch.from_numpy(np.stack(xs)))
        out += [labels[int(k)] for k in logits.argmax(dim=1)]
    return out


def lossless_copy(src, dst):
    """Mirror the <class>/ folders of src (or src/test/) into dst with every image decoded by PIL and saved as PNG."""
    root = os.path.join(src, "test") if os.path.isdir(os.path.join(src, "test")) else src
    for cls in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, cls)):
            continue
        os.makedirs(os.path.join(dst, cls))
        for name in sorted(os.listdir(os.path.join(root, cls))):
            try:
                with Image.open(os.path.join(root, cls, name)) as im:
                    ImageOps.exif_transpose(im).convert("RGB").save(os.path.join(dst, cls,
                                                                                 os.path.splitext(name)[0] + ".png"))
            except OSError:
                pass                                    # unreadable: vkvit eval reports it, PyTorch skips it
    return dst


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=BUNDLED_MODEL, help="vkvit model file (default: %(default)s)")
    ap.add_argument("--data", help="labelled images: DIR/test/<class>/* or DIR/<class>/*")
    ap.add_argument("--limit", type=int, default=0, help="only the first N images (vkvit eval's order)")
    ap.add_argument("--predictions", help="a `vkvit eval --predictions` file to use instead of running vkvit")
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "vkvit"), help="vkvit binary (default: %(default)s)")
    ap.add_argument("--lossless-copy", action="store_true",
                    help="evaluate both sides on a PNG copy of --data decoded once by PIL (same pixels)")
    ap.add_argument("--write-expected", action="store_true",
                    help=f"evaluate the bundled model on {os.path.relpath(SUBSET, REPO)} and write expected.json")
    args = ap.parse_args(argv)
    if args.write_expected:
        args.data, args.model, args.limit, args.predictions = SUBSET, BUNDLED_MODEL, 0, None
    if not args.data and not args.predictions:
        ap.error("give --data DIR (runs vkvit eval) or --predictions FILE")
    return args


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory(prefix="vkvit_eval_agreement_") as tmp:
        summary = None
        pred_path = args.predictions
        if not pred_path:
            data = lossless_copy(args.data, os.path.join(tmp, "data")) if args.lossless_copy else args.data
            pred_path = os.path.join(tmp, "predictions.tsv")
            summary = run_vkvit(args.cli, args.model, data, args.limit, pred_path)
        rows = read_predictions(pred_path)
        rows = [r for r in rows if r[2] is not None]    # images vkvit could not read are not compared
        net, doc = load_network(args.model)
        torch_pred = pytorch_predictions(net, doc, [r[0] for r in rows])
    n = len(rows)
    vk_correct = sum(1 for (p, t, v) in rows if v == t)
    pt_correct = sum(1 for (p, t, v), q in zip(rows, torch_pred) if q == t)
    agree = sum(1 for (p, t, v), q in zip(rows, torch_pred) if q == v)
    print(f"model      {os.path.relpath(args.model, REPO)} ({doc.get('name', '')})")
    print(f"images     {n}")
    print(f"vkvit      accuracy {100 * vk_correct / n:.2f} %  ({vk_correct} / {n})"
          + (f", {summary['device']}" if summary else ""))
    print(f"PyTorch    accuracy {100 * pt_correct / n:.2f} %  ({pt_correct} / {n})")
    print(f"agreement  {100 * agree / n:.2f} %  ({agree} / {n} images get the same top-1 class)")
    for (p, t, v), q in zip(rows, torch_pred):
        if q != v:
            print(f"  differ: {os.path.relpath(p, REPO)}: true {t}, vkvit {v}, PyTorch {q}")
    if args.write_expected:
        expected = {
            "model": os.path.relpath(args.model, REPO),
            "model_sha256": sha256(args.model),
            "model_name": doc.get("name", ""),
            "images": n,
            "pytorch_correct": pt_correct,
            "pytorch_accuracy": round(pt_correct / n, 6),
            "vkvit_correct": vk_correct,
            "agreement": round(agree / n, 6),
            "tolerance_images": TOLERANCE_IMAGES,
            "how": "tools/eval_agreement.py --write-expected: PyTorch reference network + PIL decoding on this "
                   "subset; tests/cli/test_classify_cli.py requires |vkvit eval correct - pytorch_correct| <= "
                   "tolerance_images",
        }
        with open(EXPECTED + ".tmp", "w", encoding="utf-8") as f:
            json.dump(expected, f, indent=2)
            f.write("\n")
        os.replace(EXPECTED + ".tmp", EXPECTED)
        print(f"wrote {os.path.relpath(EXPECTED, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
