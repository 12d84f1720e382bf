# SPDX-License-Identifier: Apache-2.0
"""The model format's tensor tables agree wherever they are written out.

Four places list which tensors each architecture / flavour has, their shapes and order, and how the loader treats
them:

  (a) the C architecture rows, src/arch/<name>.c (the source of truth the library uses), through build/format_table
      (tests/tools/format_table.c: vkvit__model_tensor_table, and the rows' host_only / packed_after flags);
  (b) tools/vkvit_file.py, expected_tensors (the Python reader / writer);
  (c) tests/model_builder.h, the small models the C tests write (make_vit5, make_vil, make_resnet), through
      build/format_table builder;
  (d) docs/model-format.md, the markdown tables under `<!-- tensor-table ARCH ... -->` (their grammar is described
      above the vit5 table there).

For every config of a matrix (every architecture and flavour and every option the configs allow: ViT-5 with and
without registers, CLS, layer scale, QK-norm, GRN, each readout and each bias; ViL seed / nxai with both inner-dim
spellings; ResNet with each norm kind in front of each branch, each branch on and off, each MLP activation, the
condition mixer at 0, 1 and 3 condition tokens, pos_embed and biases; plus the config of every model file the
project ships) (a), (b) and (d) must list the same tensors in the same order with the same shapes, and (a) and (d)
the same loader flags; on the builder's own configs (c) must match too, its file must pass the C reader and its
parameter-count macros must be the C count. The dims are drawn at random (seed printed; VKVIT_SEED=N repeats a run).
The accepted dtypes and the architecture / flavour names must agree as well. Each disagreement is one sentence
naming the config, the tensor and the two sources. No GPU needed.
"""

import glob
import json
import os
import random
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
import cli_checks as cc  # noqa: E402

sys.path.insert(0, os.path.join(cc.ROOT, "tools"))
try:
    import vkvit_file as vf  # noqa: E402
except ImportError as e:  # tools/vkvit_file.py needs numpy and torch
    print(f"SKIP: tools/vkvit_file.py cannot be imported ({e}); run with /usr/bin/python3 (python3-numpy, python3-torch)")
    sys.exit(77)

TOOL = os.path.join(cc.BUILD, "format_table")
DOC = os.path.join(cc.ROOT, "docs", "model-format.md")
SRC_C = "the C row (src/arch/{arch}.c)"
SRC_PY = "tools/vkvit_file.py"
SRC_BUILDER = "tests/model_builder.h {what}"
SRC_DOC = "docs/model-format.md"


# ---------------------------------------------------------------------------------------------------------------
# (d) docs/model-format.md's tables
# ---------------------------------------------------------------------------------------------------------------

def doc_tables(text):
    """{arch: [(name pattern, shape cell, condition or None, loader cell)]} from the `tensor-table` markers."""
    tables = {}
    lines = text.splitlines()
    for k, line in enumerate(lines):
        m = re.match(r"<!-- tensor-table (\w+)\b", line)
        if not m:
            continue
        arch = m.group(1)
        if lines[k + 1].split("|")[1:5] != [" tensor ", " shape ", " present when ", " loader "]:
            raise SystemExit(f"{SRC_DOC}: the {arch} table's header is not | tensor | shape | present when | loader |")
        rows = []
        for row in lines[k + 3:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) != 4:
                raise SystemExit(f"{SRC_DOC}: the {arch} table has a row of {len(cells)} cells, not 4: {row}")
            name, shape, cond, loader = (c.strip("`") if i < 3 else c for i, c in enumerate(cells))
            rows.append((name, shape, cond or None, loader))
        tables[arch] = rows
    return tables


def doc_flavours(text):
    """{arch: [flavours]} from the `"flavour":` line of the vkvit entry's example."""
    line = next(x for x in text.splitlines() if x.strip().startswith('"flavour":'))
    comment = line.split("//", 1)[1]
    out = {}
    for part in comment.split(";"):
        arch, names = part.split(":", 1)
        out[arch.strip()] = re.findall(r'"(\w+)"', names)
    return out


def doc_dtypes(text):
    line = next(x for x in text.splitlines() if '"dtype":' in x)
    return re.findall(r'"(\w+)"', line.split('"dtype":', 1)[1].split(", \"shape\"")[0])


def lookup(doc, path):
    """The value at dotted `path` in {flavour, **config}; KeyError when it is not there."""
    v = {"flavour": doc["flavour"], **doc["config"]}
    for key in path.split("."):
        v = v[key]
    return v


def evaluate(cond, doc):
    """A `present when` condition: terms joined by `and`; a term is `path`, or `path OP literal` (==, !=, >, <=)."""
    for term in cond.split(" and "):
        m = re.fullmatch(r"([\w.]+)(?: (==|!=|>|<=) ([\w.]+))?", term.strip())
        if not m:
            raise ValueError(f"cannot read the condition term {term!r}")
        value = lookup(doc, m.group(1))
        if m.group(2) is None:
            if not isinstance(value, bool):
                raise ValueError(f"{m.group(1)} is not a boolean")
            ok = value
        else:
            lit = m.group(3)
            lit = int(lit) if re.fullmatch(r"-?\d+", lit) else lit
            ok = {"==": value == lit, "!=": value != lit,
                  ">": isinstance(lit, int) and value > lit, "<=": isinstance(lit, int) and value <= lit}[m.group(2)]
        if not ok:
            return False
    return True


def legend(doc):
    """The symbols of the tables' shapes, as each section's legend defines them (docs/model-format.md)."""
    c, arch = doc["config"], doc["architecture"]
    P = c["patch_size"]
    s = {"P": P, "Hp": c["image_size"][0] // P, "Wp": c["image_size"][1] // P}
    s["Np"] = s["Hp"] * s["Wp"]
    if arch == "vit5":
        s.update(C=c["dim"], H=c["num_heads"], dk=c["dim"] // c["num_heads"], R=c["num_registers"])
        s["head_in"] = s["R"] * c["neck_dim"] if c["readout"] == "register_concat" else s["C"]
    elif arch == "vil":
        s.update(D=c["dim"], E=c["inner_dim"], NH=c["num_heads"], NP=c["inner_dim"] // 4)
    elif arch == "resnet":
        mlp = c["block"]["mlp"]
        s.update(C=c["dim"], Hd=mlp.get("hidden", 0), gf=2 if mlp.get("activation") in ("glu", "swiglu") else 1)
    return s


def shape_of(cell, doc):
    """`[3C, gf·Hd, 4]` -> (3·C, gf·Hd, 4): each dim a product of factors, a factor an integer, a legend symbol or a
    config key, or an integer written straight before a symbol (`3C`, `2E`)."""
    if not (cell.startswith("[") and cell.endswith("]")):
        raise ValueError(f"the shape {cell!r} is not in brackets")
    syms = legend(doc)
    dims = []
    for dim in cell[1:-1].split(","):
        v = 1
        for factor in dim.strip().split("·"):
            m = re.fullmatch(r"(\d*)([A-Za-z_]\w*)?", factor.strip())
            if not m or not (m.group(1) or m.group(2)):
                raise ValueError(f"cannot read the factor {factor!r} of the shape {cell!r}")
            if m.group(1):
                v *= int(m.group(1))
            if m.group(2):
                name = m.group(2)
                if name in syms:
                    v *= syms[name]
                elif isinstance(doc["config"].get(name), int) and not isinstance(doc["config"][name], bool):
                    v *= doc["config"][name]
                else:
                    raise ValueError(f"the shape {cell!r} names {name}, which is neither a legend symbol nor an "
                                     f"integer config key")
        dims.append(v)
    return tuple(dims)


def doc_table(rows, doc):
    """[(name, shape, host_only, packed_after)] of docs/model-format.md's table for this document."""
    depth = doc["config"]["depth"]
    out = []
    # The table lists a block's rows once; the file repeats them per block, in block order, between the rows before
    # the first blocks.{i} row and those after the last.
    first = next(k for k, r in enumerate(rows) if r[0].startswith("blocks.{i}."))
    last = max(k for k, r in enumerate(rows) if r[0].startswith("blocks.{i}."))
    order = ([(None, r) for r in rows[:first]] + [(i, r) for i in range(depth) for r in rows[first:last + 1]]
             + [(None, r) for r in rows[last + 1:]])
    for i, (name, shape, cond, loader) in order:
        if cond is not None and not evaluate(cond, doc):
            continue
        host_only, packed = False, None
        m = re.fullmatch(r"host-only(?: when `([^`]*)`)?", loader)
        if m:
            host_only = m.group(1) is None or evaluate(m.group(1), doc)
        elif loader.startswith("packed after "):
            packed = loader[len("packed after "):].strip("`")
        elif loader:
            raise ValueError(f"cannot read the loader cell {loader!r} of {name}")
        sub = (lambda n: n.replace("{i}", str(i))) if i is not None else (lambda n: n)
        out.append((sub(name), shape_of(shape, doc), host_only, sub(packed) if packed else None))
    return out


# ---------------------------------------------------------------------------------------------------------------
# (a) the C rows, (b) tools/vkvit_file.py, (c) tests/model_builder.h
# ---------------------------------------------------------------------------------------------------------------

def c_tables(docs):
    """format_table's answer for each document: [(name, shape, host_only, packed_after)] or the refusal sentence."""
    text = "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs)
    p = subprocess.run([TOOL], input=text, capture_output=True, text=True, timeout=300)
    lines = p.stdout.splitlines()
    if p.returncode != 0 or len(lines) != len(docs):
        raise SystemExit(f"format_table failed (exit {p.returncode}, {len(lines)} lines for {len(docs)} documents): "
                         f"{p.stderr[-500:]}")
    out = []
    for line in lines:
        r = json.loads(line)
        if not r["ok"]:
            out.append(r["error"])
        else:
            out.append(([(t["name"], tuple(int(d) for d in t["shape"]), t["host_only"], t["packed_after"])
                         for t in r["tensors"]], r["params"]))
    return out


def tool_json(arg):
    p = subprocess.run([TOOL, arg], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise SystemExit(f"format_table {arg} failed (exit {p.returncode}): {p.stderr[-500:]}")
    return [json.loads(x) for x in p.stdout.splitlines()]


def py_table(doc):
    """[(name, shape, None, None)] from tools/vkvit_file.py (which has no loader flags), or its refusal."""
    try:
        return [(n, tuple(s), None, None) for n, s in vf.expected_tensors(doc).items()]
    except vf.FormatError as e:
        return str(e)


# ---------------------------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------------------------

def fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def compare(label, ref_name, ref, other_name, other):
    """Checks that `other` lists the tensors of `ref` in the same order with the same shapes (and flags, where
    `other` has them); one sentence per disagreement."""
    a = {t[0]: t for t in ref}
    b = {t[0]: t for t in other}
    good = True
    for name in a:
        if name not in b:
            cc.check(False, f"{label}: tensor {name} {fmt(a[name][1])} is in {ref_name} but not in {other_name}")
            good = False
    for name in b:
        if name not in a:
            cc.check(False, f"{label}: tensor {name} {fmt(b[name][1])} is in {other_name} but not in {ref_name}")
            good = False
    for name in a:
        if name not in b:
            continue
        ta, tb = a[name], b[name]
        if ta[1] != tb[1]:
            cc.check(False, f"{label}: tensor {name} has shape {fmt(ta[1])} in {ref_name} but {fmt(tb[1])} in "
                            f"{other_name}")
            good = False
        if tb[2] is not None and ta[2] != tb[2]:
            cc.check(False, f"{label}: tensor {name} is {'' if ta[2] else 'not '}host-only in {ref_name} but "
                            f"{'' if tb[2] else 'not '}in {other_name}")
            good = False
        if tb[2] is not None and ta[3] != tb[3]:
            where = lambda t, src: f"packed after {t[3]} in {src}" if t[3] else f"not packed after another in {src}"
            cc.check(False, f"{label}: tensor {name} is {where(ta, ref_name)} but {where(tb, other_name)}")
            good = False
    if good:
        names_a = [t[0] for t in ref]
        names_b = [t[0] for t in other]
        if names_a != names_b:
            k = next(k for k in range(len(names_a)) if names_a[k] != names_b[k])
            cc.check(False, f"{label}: tensor {names_a[k]} comes at position {k} in {ref_name} but "
                            f"{names_b[k]} does in {other_name} (the order differs)")
            good = False
    if good:
        cc.check(True, f"{label}: {ref_name} and {other_name} agree")
    return good


# ---------------------------------------------------------------------------------------------------------------
# The matrix of configs
# ---------------------------------------------------------------------------------------------------------------

def preprocess(image):
    return {"image_size": list(image), "resize_shorter": max(image), "interpolation": "bicubic",
            "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def document(arch, flavour, config, name):
    return {"format_version": 1, "architecture": arch, "flavour": flavour, "name": name, "config": config,
            "preprocess": preprocess(config["image_size"])}


def image(rng, P):
    return [P * rng.randint(1, 3), P * rng.randint(1, 3)]


BIAS_VIT5 = ("patch_embed", "qkv", "proj", "mlp", "head")


def vit5_matrix(rng):
    """Every combination of flavour, registers (0, 1, 4), CLS, readout, qk_norm, layer_scale and grn that the rules
    allow; the 32 bias patterns in turn."""
    out, k = [], 0
    for flavour in ("nvsubq", "paper"):
        for R in (0, 1, 4):
            for has_cls in (False, True):
                for readout in ("cls", "gap", "register_concat"):
                    if (readout == "cls" and not has_cls) or (readout == "register_concat" and R == 0):
                        continue
                    for qk_norm in (False, True):
                        for layer_scale in (False, True):
                            for grn in (False, True):
                                heads = rng.randint(1, 3)
                                dim = heads * 4 * rng.randint(1, 3)
                                P = rng.choice((2, 4))
                                nv = flavour == "nvsubq"
                                cfg = {
                                    "image_size": image(rng, P), "patch_size": P, "in_chans": 3, "dim": dim,
                                    "depth": rng.randint(1, 3), "num_heads": heads,
                                    "mlp_hidden": rng.randint(1, 20), "mlp_activation": "gelu",
                                    "num_registers": R, "has_cls": has_cls, "readout": readout,
                                    "neck_dim": rng.randint(1, 4) if readout == "register_concat" else 0,
                                    "qk_norm": qk_norm, "norm_eps": 1e-6, "qk_norm_eps": 1e-6, "rope_base": 10000,
                                    "reg_rope_base": 100, "rope_pairing": "split_half" if nv else "adjacent",
                                    "token_layout": "patches_cls_regs" if nv else "cls_patches_regs",
                                    "layer_scale": layer_scale, "grn": grn,
                                    "bias": {b: bool((k >> j) & 1) for j, b in enumerate(BIAS_VIT5)},
                                    "num_classes": rng.randint(1, 5),
                                }
                                k += 1
                                out.append(document("vit5", flavour, cfg, f"vit5 #{k}"))
    return out


def vil_matrix(rng):
    """seed (E rounded up to 64) and nxai with E = 2D and with the rounded E, at drawn widths (some a multiple of
    32, where the two spellings meet)."""
    out = []
    for k in range(12):
        flavour = ("seed", "nxai", "nxai")[k % 3]
        D = 32 * rng.randint(1, 2) if k % 4 == 0 else 4 * rng.randint(1, 12)
        rounded = -(-2 * D // 64) * 64
        E = 2 * D if k % 3 == 1 else rounded
        heads = rng.choice([h for h in (1, 2, 4, 8) if E % h == 0])
        P = rng.choice((2, 4))
        cfg = {"image_size": image(rng, P), "patch_size": P, "in_chans": 3, "dim": D, "depth": rng.randint(1, 3),
               "inner_dim": E, "num_heads": heads, "qkv_block_size": 4, "conv_kernel": rng.randint(1, 5),
               "pooling": "bilateral_avg", "norm_eps": 1e-5, "head_norm_eps": 1e-6, "num_classes": rng.randint(1, 5)}
        out.append(document("vil", flavour, cfg, f"vil #{k + 1}"))
    return out


NORMS = ({"type": "identity"}, {"type": "rmsnorm", "eps": 1e-6}, {"type": "layernorm", "eps": 1e-5, "bias": True},
         {"type": "layernorm", "eps": 1e-5, "bias": False})
ACTIVATIONS = ("relu", "gelu", "silu", "glu", "swiglu")


def resnet_axes(heads):
    """Each axis: its options, each a function (rng, config) that sets it. A branch and its norm are one axis (a
    bypassed branch has no norm, seed 002)."""
    def seq(norm, bias):
        def f(rng, c):
            c["block"]["input_norm"] = dict(norm)
            c["block"]["sequence_mixer"] = {"type": "attention", "num_heads": heads, "qk_norm": rng.random() < 0.5,
                                            "rope": rng.random() < 0.5, "rope_base": 10000,
                                            "causal": rng.random() < 0.5, "bias": bias}
        return f

    def cond(norm, tokens):
        def f(rng, c):
            c["block"]["condition_mixer_norm"] = dict(norm)
            c["block"]["condition_mixer"] = {"type": "attention", "num_heads": heads, "qk_norm": rng.random() < 0.5,
                                             "causal": rng.random() < 0.5}
            c["condition_tokens"], c["condition_dim"] = tokens, c["dim"]
        return f

    def mlp(norm, act, bias):
        def f(rng, c):
            c["block"]["mlp_norm"] = dict(norm)
            c["block"]["mlp"] = {"type": "mlp", "activation": act, "hidden": rng.randint(1, 20), "bias": bias}
        return f

    def off(norm_key, mixer_key, cond_keys=False):
        def f(rng, c):
            c["block"][norm_key], c["block"][mixer_key] = {"type": "identity"}, {"type": "identity"}
            if cond_keys:
                c["condition_tokens"], c["condition_dim"] = 0, 0
        return f

    def setter(path, value):
        def f(rng, c):
            obj = c
            for key in path[:-1]:
                obj = obj[key]
            obj[path[-1]] = value
        return f

    return [
        ("sequence_mixer", [off("input_norm", "sequence_mixer")] + [seq(n, b) for n in NORMS for b in (False, True)]),
        ("condition_mixer", [off("condition_mixer_norm", "condition_mixer", True)]
         + [cond(n, t) for n in NORMS for t in (0, 1, 3)]),
        ("mlp", [off("mlp_norm", "mlp")] + [mlp(n, a, b) for n in NORMS for a in ACTIVATIONS for b in (False, True)]),
        ("out_norm", [setter(("out_norm",), dict(n)) for n in NORMS]),
        ("pos_embed", [setter(("pos_embed",), v) for v in (False, True)]),
        ("bias.patch_embed", [setter(("bias", "patch_embed"), v) for v in (False, True)]),
        ("bias.head", [setter(("bias", "head"), v) for v in (False, True)]),
    ]


def resnet_matrix(rng, extra=40):
    """Every option of every axis once (the other axes drawn), then `extra` configs drawn on all axes."""
    out = []

    def make(fixed_axis=None, fixed_option=None):
        heads = rng.randint(1, 2)
        dim = heads * 4 * rng.randint(1, 3)
        P = rng.choice((2, 4))
        c = {"image_size": image(rng, P), "patch_size": P, "in_chans": 3, "dim": dim, "depth": rng.randint(1, 3),
             "pos_embed": False, "block": {}, "condition_tokens": 0, "condition_dim": 0, "readout": "gap",
             "out_norm": {"type": "identity"}, "bias": {"patch_embed": False, "head": False},
             "num_classes": rng.randint(1, 5)}
        for k, (axis, options) in enumerate(resnet_axes(heads)):
            (options[fixed_option] if k == fixed_axis else rng.choice(options))(rng, c)
        # vkvit_file.py and the C parser read the block's keys in this order; keep the documented one
        c["block"] = {key: c["block"][key] for key in ("input_norm", "sequence_mixer", "condition_mixer_norm",
                                                        "condition_mixer", "mlp_norm", "mlp")}
        out.append(document("resnet", "generic", c, f"resnet #{len(out) + 1}"))

    for k, (axis, options) in enumerate(resnet_axes(1)):
        for j in range(len(options)):
            make(k, j)
    for _ in range(extra):
        make()
    return out


def shipped_docs():
    """The vkvit entries of every model file the project ships (goldens, bundled models, the fuzz corpus)."""
    out = []
    for pattern in ("tests/golden/models/*.vkvit", "assets/models/*.vkvit", "tests/fuzz/corpus/*.vkvit"):
        for path in sorted(glob.glob(os.path.join(cc.ROOT, pattern))):
            with open(path, "rb") as f:
                head = f.read(8)
                if len(head) < 8:
                    continue
                (n,) = struct.unpack("<Q", head)
                try:
                    header = json.loads(f.read(n))
                    doc = json.loads(header["__metadata__"]["vkvit"])
                except (ValueError, KeyError, TypeError):
                    continue  # a corpus file that is hostile on purpose
            if isinstance(doc, dict) and isinstance(doc.get("config"), dict):
                doc["name"] = os.path.relpath(path, cc.ROOT)
                out.append(doc)
    return out


# ---------------------------------------------------------------------------------------------------------------

def main():
    if not os.access(TOOL, os.X_OK):
        print(f"FAIL: {TOOL} is not built (cmake --build build --target format_table)")
        return 1
    seed = int(os.environ.get("VKVIT_SEED", random.randrange(1 << 31)))
    print(f"seed {seed} (VKVIT_SEED={seed} repeats this matrix)")
    rng = random.Random(seed)
    text = open(DOC, encoding="utf-8").read()
    tables = doc_tables(text)

    # Names: architectures, flavours, dtypes.
    c_archs = tool_json("archs")[0]["archs"]
    py_archs = {a: list(f) for a, f in vf.ARCHITECTURES.items()}
    cc.check(py_archs == c_archs, f"the architectures and flavours differ: {SRC_PY} has {py_archs}, the C rows "
                                  f"(src/arch/arch.h) have {c_archs}")
    doc_fl = doc_flavours(text)
    cc.check(doc_fl == c_archs, f"the architectures and flavours differ: {SRC_DOC} (the \"flavour\" line) has "
                                f"{doc_fl}, the C rows (src/arch/arch.h) have {c_archs}")
    cc.check(sorted(tables) == sorted(c_archs), f"{SRC_DOC} has tensor tables for {sorted(tables)}, the C rows are "
                                                f"{sorted(c_archs)}")
    c_dtypes = tool_json("dtypes")[0]["dtypes"]
    cc.check(list(vf.DTYPES) == c_dtypes, f"the dtypes differ: {SRC_PY} has {list(vf.DTYPES)}, the C reader "
                                          f"(src/model/safetensors.c) {c_dtypes}")
    cc.check(doc_dtypes(text) == c_dtypes, f"the dtypes differ: {SRC_DOC} has {doc_dtypes(text)}, the C reader "
                                           f"(src/model/safetensors.c) {c_dtypes}")

    builders = tool_json("builder")
    shipped = shipped_docs()
    docs = vit5_matrix(rng) + vil_matrix(rng) + resnet_matrix(rng) + shipped + [b["doc"] for b in builders]
    shipped_ids = {id(d) for d in shipped}
    seen = {(d["architecture"], d["flavour"]) for d in docs}
    want = {(a, f) for a, fl in c_archs.items() for f in fl}
    cc.check(seen == want, f"the matrix covers {sorted(seen)}, the C rows have {sorted(want)}")
    c_out = c_tables(docs)

    agreed = 0
    for doc, c in zip(docs, c_out):
        arch = doc["architecture"]
        label = f"config '{doc['name']}' ({arch}, {doc['flavour']})"
        src_c = SRC_C.format(arch=arch)
        py = py_table(doc)
        if isinstance(c, str) and isinstance(py, str) and id(doc) in shipped_ids:
            continue  # a corpus file that both readers refuse (tests/format/test_reader_agreement.py's business)
        if isinstance(c, str) or isinstance(py, str):
            cc.check(False, f"{label}: the matrix holds only valid configs, but "
                            + (f"{src_c} refuses it: {c}" if isinstance(c, str) else f"{SRC_PY} refuses it: {py}")
                            + f"\n    {json.dumps(doc['config'])}")
            continue
        c_table, c_params = c
        ok = compare(label, src_c, c_table, SRC_PY, py)
        try:
            d_table = doc_table(tables[arch], doc)
        except (ValueError, KeyError) as e:
            cc.check(False, f"{label}: {SRC_DOC}'s {arch} table cannot be read: {e!r}")
            continue
        ok &= compare(label, src_c, c_table, SRC_DOC, d_table)
        py_params = vf.count_params(doc)
        cc.check(c_params == py_params, f"{label}: the parameter count is {c_params} in {src_c} but {py_params} in "
                                        f"{SRC_PY}")
        agreed += bool(ok and c_params == py_params)

    # (c) the builder's models, on their own configs
    builder_out = c_out[len(docs) - len(builders):]
    for b, c in zip(builders, builder_out):
        label = f"config '{b['doc']['name']}' ({b['doc']['architecture']}, {b['doc']['flavour']})"
        src_b = SRC_BUILDER.format(what=b["builder"])
        src_c = SRC_C.format(arch=b["doc"]["architecture"])
        if isinstance(c, str):
            continue  # reported above
        table = [(t["name"], tuple(int(d) for d in t["shape"]), None, None) for t in b["tensors"]]
        compare(label, src_c, c[0], src_b, table)
        cc.check(b["c_reader"] == "ok", f"{label}: the C reader refuses the file {src_b} writes: {b['c_reader']}")
        cc.check(b["params_macro"] == c[1], f"{label}: {src_b}'s parameter-count macro is {b['params_macro']}, "
                                            f"{src_c} counts {c[1]}")
        for t in b["tensors"]:
            cc.check(t["dtype"] in c_dtypes, f"{label}: tensor {t['name']} has dtype {t['dtype']} in {src_b}, "
                                             f"which the C reader does not accept ({c_dtypes})")

    print(f"{len(docs)} configs ({len(builders)} of them tests/model_builder.h's), {agreed} with all tables agreeing")
    return cc.summary()


if __name__ == "__main__":
    sys.exit(main())
