#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Convert a PyTorch checkpoint into a vkvit model file (docs/model-format.md).

    /usr/bin/python3 tools/convert.py SRC -o OUT.vkvit [--source auto|nvsubq|paper|nxai|plain] [--preset NAME]
        [--num-heads N] [--flavour F] [--ema | --live] [--labels FILE] [--image-size H W] [--dtype f32|f16|bf16]
        [--name STR] [--mean R G B] [--std R G B] [--resize N | --crop-pct F] [--interpolation bicubic|bilinear]
        [--activation A] [resnet: --rope --qk-norm --causal --rope-base B --condition-qk-norm --condition-causal
        --condition-tokens N --norm rmsnorm|layernorm --norm-eps E]

The model file format is described in docs/model-format.md, the converter in docs/convert.md.

Sources:

* nvsubq  nvSubquadratic Lightning `.ckpt`: `ckpt["state_dict"]` with keys prefixed `network.` or
          `network._orig_mod.` (torch.compile); other keys (loss modules, EMA bookkeeping) are ignored.
          The register_concat readout's layer is upstream's `register_neck` (vkvit's `neck`).
          With Lightning's EMAWeightAveraging callback, `state_dict` holds the EMA average and
          `current_model_state` the live weights.  Default: `state_dict` (what the checkpoint validates with).
          `--ema` insists on the EMA average (fails if the checkpoint has none); `--live` takes
          `current_model_state` (or `state_dict` when the checkpoint was trained without EMA).
* paper   ViT-5 paper repo (wangf3014/ViT-5) `.pth`: `ckpt["model"]`, or `ckpt["model_ema"]` with `--ema`.
          Keys are renamed to vkvit names; `rope.freqs` / `rope_reg.freqs` are checked against θ and dropped.
* nxai    NX-AI Vision-LSTM v1: the raw torch-hub training file (`ckpt["state_dict"]`, `xlstm.blocks.*`) or an
          already remapped `VisionLSTM` state_dict (`blocks.{i}.layer.*`).  Written as flavour `nxai` with the raw
          official weights (the runtime applies the `1 + w`).  ViL v2 is rejected.
* plain   a dict of tensors (possibly under `state_dict` / `model`) already using vkvit names, e.g. saved from
          tools/reference/.  A safetensors file is accepted too.  A vkvit model file is re-converted (to change
          its dtype, name, labels or pre-processing): its architecture, flavour, config, name, labels and
          pre-processing are carried over unless an option overrides them (an option that changes the config,
          such as --image-size, re-infers the config from the tensors).  This includes `resnet`
          (ClassificationResNet of generic ResidualBlocks, docs/model-format.md): its branches, biases, widths,
          MLP hidden size and GLU factor, image size (from pos_embed) and class count come from the tensors; what
          the weights cannot show comes from flags: --num-heads (both attentions), --activation, --rope,
          --qk-norm, --causal, --rope-base (sequence mixer), --condition-qk-norm, --condition-causal,
          --condition-tokens, --norm rmsnorm|layernorm (norms that have a weight but no bias; default rmsnorm),
          --norm-eps, and --image-size when the model has no pos_embed.

Hyperparameters are inferred from tensor shapes; the ViT-5 head count comes from `--num-heads`, a preset, or the
QK-norm / RoPE tensors (head dim).  A ViT-5 checkpoint does not record its MLP activation: vkvit's vit5 runs
GELU MLPs only, so `--activation relu|silu` is refused, and a gated (GLU / SwiGLU) MLP is recognised by its
layer1 shape and refused.  The ViT-5 paper model runs only at its square build size.

Pre-processing (the `preprocess` entry): resize the shorter side to `--resize N` (default: the larger input side,
or `floor(max(H, W) / --crop-pct F)`), `--interpolation` (default bicubic), centre crop to the input size,
normalise with `--mean` / `--std` (default ImageNet's).

Exit status: 0 success; 1 usage error (a bad option or option value); 2 bad input (the checkpoint, the labels
file, an unsupported model), each with one sentence on stderr.  Set VKVIT_DEBUG=1 to get a Python traceback
for unexpected errors.
"""

import argparse
import collections
import math
import os
import pickle
import re
import struct
import sys
import types

# PyTorch and tools/vkvit_file.py (which imports it) are loaded by _load_torch once the arguments are parsed, so
# that --help and usage errors answer at once, and on a Python without PyTorch.
torch = None
vf = None
_HERE = os.path.dirname(os.path.abspath(__file__))

PROG = "convert.py"
IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]

# name -> (architecture, width the checkpoint must have, attention heads or None)
PRESETS = {
    "vit5_small": ("vit5", 384, 6),
    "vit5_base": ("vit5", 768, 12),
    "vit5_large": ("vit5", 1024, 16),
    "vit5_xlarge": ("vit5", 1152, 16),
    "vil_tiny": ("vil", 192, None),
    "vil_small": ("vil", 384, None),
    "vil_base": ("vil", 768, None),
}

SOURCE_TEXT = {
    "nvsubq": "nvSubquadratic Lightning checkpoint",
    "paper": "ViT-5 paper checkpoint",
    "nxai": "NX-AI Vision-LSTM v1 checkpoint",
    "plain": "state_dict with vkvit names",
}


class ConvertError(Exception):
    """A bad input or option; the message is one sentence for the user."""


class UsageError(ConvertError):
    """An option value that does not fit the model (exit 1, as argparse's usage errors)."""


# ---------------------------------------------------------------------------------------------------------------
# Loading: a restricted unpickler, so a checkpoint can name any class without running its code
# ---------------------------------------------------------------------------------------------------------------


class _Stub(dict):
    """Stand-in for any class the checkpoint pickles that is not needed for the weights (hyper-parameter objects,
    callbacks, paths, ...).  It accepts every pickle construction protocol and does nothing."""

    __hash__ = object.__hash__  # stubs may be dict keys (enum members, ...)

    def __init__(self, *args, **kwargs):
        super().__init__()

    def __setstate__(self, state):
        self.__dict__["_state"] = state

    def append(self, item):
        pass

    def extend(self, items):
        pass


_SAFE_GLOBALS = {}


def _fill_safe_globals():
    """The globals a checkpoint's pickle may name (the rest become _Stub classes); torch's need torch loaded."""
    _SAFE_GLOBALS.update({
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "defaultdict"): collections.defaultdict,
        ("argparse", "Namespace"): argparse.Namespace,
        ("_codecs", "encode"): __import__("codecs").encode,
        ("torch", "Size"): torch.Size,
        ("torch", "device"): torch.device,
        ("torch.nn.parameter", "Parameter"): torch.nn.Parameter,
    })
    for n in ("set", "frozenset", "slice", "complex", "bytearray", "bytes", "int", "float", "str", "list", "dict",
              "tuple", "bool", "range"):
        _SAFE_GLOBALS[("builtins", n)] = getattr(__import__("builtins"), n)
    for mod, names in (("torch._utils", ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_parameter",
                                         "_rebuild_parameter_with_state")),
                       ("torch._tensor", ("_rebuild_from_type", "_rebuild_from_type_v2"))):
        for n in names:
            m = __import__(mod, fromlist=[n])
            if hasattr(m, n):
                _SAFE_GLOBALS[(mod, n)] = getattr(m, n)
    try:
        for mod, n in (("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
                       ("numpy", "ndarray"), ("numpy", "dtype")):
            _SAFE_GLOBALS[(mod, n)] = getattr(__import__(mod, fromlist=[n]), n)
    except (ImportError, AttributeError):  # pragma: no cover
        pass


def _load_torch():
    """Imports PyTorch and tools/vkvit_file.py (once). ConvertError with a sentence when this Python has no
    PyTorch: reading a checkpoint needs it, --help does not."""
    global torch, vf
    if torch is not None and vf is not None:
        return
    try:
        import torch as torch_module
    except ImportError as e:
        raise ConvertError(f"converting a checkpoint needs PyTorch, which this Python ({sys.executable}) cannot "
                           f"import ({e}); on Debian run /usr/bin/python3 with python3-torch installed, elsewhere "
                           f"pip install torch") from None
    torch = torch_module
    if _HERE not in sys.path:
        sys.path.insert(0, _HERE)
    import vkvit_file as vf_module
    vf = vf_module
    _fill_safe_globals()


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[(module, name)]
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        return type(name, (_Stub,), {"__module__": "vkvit_stub." + str(module)})


def _restricted_load(f, **kwargs):
    return _RestrictedUnpickler(f, **kwargs).load()


_SAFE_PICKLE = types.ModuleType("vkvit_safe_pickle")
_SAFE_PICKLE.Unpickler = _RestrictedUnpickler
_SAFE_PICKLE.load = _restricted_load
_SAFE_PICKLE.UnpicklingError = pickle.UnpicklingError


def _looks_like_safetensors(path):
    with open(path, "rb") as f:
        head = f.read(9)
    if len(head) < 9:
        return False
    (n,) = struct.unpack("<Q", head[:8])
    return 2 <= n <= vf.MAX_HEADER_BYTES and head[8:9] == b"{"


def _torch_load(path):
    """torch.load through the restricted unpickler.

    torch 1.13's torch.load replaces any `pickle_module` by `pickle` unless weights_only=True, and weights_only
    rejects ordinary Lightning / DeiT checkpoints (argparse.Namespace, hyper-parameter objects).  So call the
    loader torch.load itself dispatches to, with our unpickler; fall back to the public API on other versions.
    """
    ser = torch.serialization
    if not all(hasattr(ser, n) for n in ("_is_zipfile", "_open_zipfile_reader", "_is_torchscript_zip", "_load",
                                         "_legacy_load")):  # pragma: no cover - other torch versions
        return torch.load(path, map_location="cpu", pickle_module=_SAFE_PICKLE, weights_only=False)
    with open(path, "rb") as f:
        if ser._is_zipfile(f):
            with ser._open_zipfile_reader(f) as zf:
                if ser._is_torchscript_zip(zf):
                    raise ConvertError(f"{path} is a TorchScript archive, not a checkpoint; save the model's "
                                       f"state_dict() instead")
                return ser._load(zf, "cpu", _SAFE_PICKLE, encoding="utf-8")
        return ser._legacy_load(f, "cpu", _SAFE_PICKLE, encoding="utf-8")


def load_source(path):
    """Load SRC: a torch pickle (zip or legacy format) through the restricted unpickler, or a safetensors file.
    Returns (object, vkvit document or None): the document when SRC is a vkvit model file (re-conversion)."""
    _load_torch()
    if not os.path.exists(path):
        raise ConvertError(f"{path} does not exist")
    if os.path.isdir(path):
        raise ConvertError(f"{path} is a directory, not a checkpoint file")
    try:
        if _looks_like_safetensors(path):
            tensors, metadata = vf.read_safetensors(path)
            if "vkvit" in metadata:
                try:
                    _, doc = vf.read_model(path)
                except vf.FormatError as e:
                    raise ConvertError(f"{path} is a vkvit model file that does not validate: {e}") from None
                return tensors, doc
            return tensors, None
        return _torch_load(path), None
    except ConvertError:
        raise
    except vf.FormatError as e:
        raise ConvertError(f"{path} is not a valid safetensors file: {e}") from None
    except OSError as e:
        raise ConvertError(f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:  # any unpickling failure: the file is not a checkpoint
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConvertError(f"{path} is not a PyTorch checkpoint or safetensors file ({msg})") from None


# ---------------------------------------------------------------------------------------------------------------
# Finding the weights and the source layout
# ---------------------------------------------------------------------------------------------------------------


def _tensor_dict(d, what):
    """Return d if it is a non-empty {str: tensor} mapping (non-tensor entries are an error)."""
    if not isinstance(d, dict) or not d:
        raise ConvertError(f"{what} is not a non-empty dict of tensors")
    for k, v in d.items():
        if not isinstance(k, str):
            raise ConvertError(f"{what} has a non-string key {k!r}")
        if not isinstance(v, torch.Tensor):
            raise ConvertError(f"{what} entry {k} is a {type(v).__name__}, not a tensor")
    return d


def _is_weights(d):
    return isinstance(d, dict) and d and all(isinstance(v, torch.Tensor) for v in d.values())


def _strip_common(sd, prefix):
    if sd and all(k.startswith(prefix) for k in sd):
        return {k[len(prefix):]: v for k, v in sd.items()}
    return sd


_V2_MARKERS = ("rowwise_from_top_left", "rowwise_from_bot_right")


def _layout(sd):
    """Classify a flat state_dict by its key names."""
    keys = list(sd)
    if any(m in k for k in keys for m in _V2_MARKERS):
        return "vil2"
    if any(re.match(r"(xlstm\.)?blocks\.\d+\.(layer|xlstm)\.conv", k) and v.dim() == 4 for k, v in sd.items()):
        return "vil2"  # 2-D depthwise conv
    if any(k.startswith("network.") for k in keys):
        return "nvsubq"
    if any(re.match(r"(xlstm\.)?blocks\.\d+\.xlstm\.", k) for k in keys) or "post_blocks_norm.weight" in sd \
            or "xlstm.post_blocks_norm.weight" in sd:
        return "nxai_raw"
    if any(re.match(r"blocks\.\d+\.layer\.", k) for k in keys):
        return "nxai"
    if any(re.match(r"blocks\.\d+\.(attn\.|gamma_1$|norm1\.)", k) for k in keys) and \
            not any(re.match(r"blocks\.\d+\.mlstm\.", k) for k in keys):
        return "paper"
    if _is_resnet(sd):
        return "plain_resnet"
    if any(re.match(r"blocks\.\d+\.sequence_mixer\.", k) for k in keys) or "out_proj.weight" in sd:
        return "plain_vit5"
    if any(re.match(r"blocks\.\d+\.mlstm\.", k) for k in keys) or "pos_embed.embed" in sd:
        return "plain_vil"
    return None


def _is_resnet(sd):
    """A ClassificationResNet state_dict (vkvit names): QKV-mixer names, a 4-D pos_embed, or a head with no ViT-5
    attention at all (an MLP-only network)."""
    keys = list(sd)
    if any(re.match(r"blocks\.\d+\.(sequence_mixer\.(qkv_proj|out_proj)\.|condition_mixer(_norm)?\.)", k)
           for k in keys):
        return True
    if "pos_embed" in sd and sd["pos_embed"].dim() == 4:
        return True
    return "out_proj.weight" in sd and "patch_embed.weight" in sd and \
        not any(re.match(r"blocks\.\d+\.sequence_mixer\.", k) for k in keys)


def find_weights(obj, args, path):
    """Return (source kind, key layout, flat weights dict, note on which weights were taken)."""
    if not isinstance(obj, dict):
        raise ConvertError(f"{path} holds a {type(obj).__name__}, not a checkpoint dict")
    note = ""
    selected = False  # whether --ema / --live chose between two weight sets
    if _is_weights(obj):
        sd = obj
        where = "the top-level dict"
    elif isinstance(obj.get("state_dict"), dict) and any(str(k).startswith("network.") for k in obj["state_dict"]):
        # nvSubquadratic Lightning checkpoint.
        has_ema = "current_model_state" in obj
        if args.live and has_ema:
            sd, note = obj["current_model_state"], "current_model_state (live weights, not the EMA average)"
        else:
            if args.ema and not has_ema:
                raise ConvertError(f"{path} has no EMA weights (no current_model_state entry, so state_dict holds "
                                   f"the live weights); drop --ema")
            sd = obj["state_dict"]
            note = ("state_dict (EMA average; live weights are in current_model_state, use --live)" if has_ema
                    else "state_dict (trained without EMA: live weights)")
        where, selected = "state_dict", True
    elif "model" in obj or "model_ema" in obj:
        if args.ema:
            if "model_ema" not in obj:
                raise ConvertError(f"{path} has no model_ema entry; drop --ema")
            sd, note, where, selected = obj["model_ema"], "model_ema (EMA weights)", "model_ema", True
        elif "model" in obj:
            sd, note, where = obj["model"], "model (not the EMA weights" + (
                "; use --ema for model_ema)" if "model_ema" in obj else ")"), "model"
        else:
            sd, note, where = obj["model_ema"], "model_ema (the checkpoint has no model entry)", "model_ema"
    elif "state_dict" in obj:
        sd, where = obj["state_dict"], "state_dict"
    else:
        keys = ", ".join(sorted(str(k) for k in obj)[:6])
        raise ConvertError(f"{path} has no weights: expected a state_dict, model or model_ema entry or a dict of "
                           f"tensors, found keys {keys}")
    sd = _tensor_dict(sd, f"{path} {where}")
    sd = _strip_common(sd, "module.")
    sd = _strip_common(sd, "_orig_mod.")
    layout = _layout(sd)
    if layout == "vil2":
        raise ConvertError("ViL v2 checkpoints (VisionLSTM2: 2-D conv, rowwise_from_top_left / "
                           "rowwise_from_bot_right sub-blocks) are not supported; vkvit runs ViL v1 only")
    if layout is None:
        keys = ", ".join(sorted(sd)[:5])
        raise ConvertError(f"cannot recognise the checkpoint layout of {path} (first keys: {keys})")
    kind = {"nvsubq": "nvsubq", "nxai_raw": "nxai", "nxai": "nxai", "paper": "paper", "plain_vit5": "plain",
            "plain_vil": "plain", "plain_resnet": "plain"}[layout]
    if (args.ema or args.live) and not selected:
        flag = "--ema" if args.ema else "--live"
        if args.live and where != "state_dict":
            raise ConvertError(f"--live applies to nvsubq Lightning checkpoints only ({path} weights come from "
                               f"{where})")
        raise ConvertError(f"{flag} applies to nvsubq Lightning checkpoints and paper checkpoints with model_ema "
                           f"only ({path} weights come from {where})")
    if args.source != "auto" and args.source != kind:
        # nvSubquadratic network names are vkvit's ViT-5 names, so an unprefixed nvsubq dict is "plain".
        if not (args.source == "nvsubq" and layout == "plain_vit5"):
            raise ConvertError(f"{path} looks like a {SOURCE_TEXT[kind]}, not --source {args.source}")
        kind = "nvsubq"
    return kind, layout, sd, note


# ---------------------------------------------------------------------------------------------------------------
# Renaming to vkvit names
# ---------------------------------------------------------------------------------------------------------------


def map_nvsubq(sd):
    out = {}
    for k, v in sd.items():
        for prefix in ("network._orig_mod.", "network."):
            if k.startswith(prefix):
                out[k[len(prefix):]] = v
                break
    return out


_PAPER_BLOCK = [
    (r"norm1\.weight", "input_norm.weight"),
    (r"attn\.qkv\.(weight|bias)", r"sequence_mixer.qkv.\1"),
    (r"attn\.proj\.(weight|bias)", r"sequence_mixer.proj.\1"),
    (r"attn\.q_norm\.weight", "sequence_mixer.q_norm.weight"),
    (r"attn\.k_norm\.weight", "sequence_mixer.k_norm.weight"),
    (r"gamma_1", "ls_attn.gamma"),
    (r"gamma_2", "ls_mlp.gamma"),
    (r"norm2\.weight", "mlp_norm.weight"),
    (r"mlp\.fc1\.(weight|bias)", r"mlp.layer1.\1"),
    (r"mlp\.fc2\.(weight|bias)", r"mlp.layer2.\1"),
]
_PAPER_TOP = {
    "cls_token": "cls_token", "reg_token": "reg_token", "pos_embed": "pos_embed",
    "patch_embed.proj.weight": "patch_embed.weight", "patch_embed.proj.bias": "patch_embed.bias",
    "norm.weight": "out_norm.weight", "head.weight": "out_proj.weight", "head.bias": "out_proj.bias",
}


def map_paper(sd):
    """Paper names -> vkvit names; returns (tensors, {block index: {"rope": freqs, "rope_reg": freqs}})."""
    out, freqs = {}, {}
    for k, v in sd.items():
        if k in _PAPER_TOP:
            out[_PAPER_TOP[k]] = v
            continue
        m = re.fullmatch(r"blocks\.(\d+)\.(.+)", k)
        if m:
            i, rest = int(m.group(1)), m.group(2)
            f = re.fullmatch(r"attn\.(rope|rope_reg)\.freqs", rest)
            if f:
                freqs.setdefault(i, {})[f.group(1)] = v
                continue
            for pat, rep in _PAPER_BLOCK:
                if re.fullmatch(pat, rest):
                    out[f"blocks.{i}." + re.sub(pat, rep, rest)] = v
                    break
            else:
                if re.fullmatch(r"norm[12]\.bias", rest):
                    raise ConvertError(f"{k} exists: the block norms are LayerNorms with bias (a DeiT-style model), "
                                       f"not the RMSNorms of ViT-5")
                raise ConvertError(f"paper checkpoint tensor {k} has no vkvit equivalent")
            continue
        if k == "norm.bias":
            raise ConvertError("norm.bias exists: the final norm is a LayerNorm with bias (a DeiT-style model), "
                               "not the RMSNorm of ViT-5")
        raise ConvertError(f"paper checkpoint tensor {k} has no vkvit equivalent")
    return out, freqs


def rope_theta(base, dk):
    """θ_j = 1 / base^(2j / (dk/2)), j < dk/4, computed in fp32 exactly as both upstream repos do."""
    _load_torch()
    dh = dk // 2
    return 1.0 / (base ** (torch.arange(0, dh, 2).float() / dh))


def check_paper_freqs(freqs, depth, dk, num_registers):
    for i in range(depth):
        have = freqs.get(i, {})
        for which, base in (("rope", 10000), ("rope_reg", 100)):
            name = f"blocks.{i}.attn.{which}.freqs"
            if which not in have:
                if which == "rope_reg" and num_registers == 0:
                    continue
                raise ConvertError(f"{name} is missing, so the checkpoint was built without this RoPE, which vkvit's "
                                   f"vit5 always applies")
            got = have[which].detach().float().reshape(-1)
            want = rope_theta(base, dk)
            if got.numel() != want.numel():
                raise ConvertError(f"{name} has {got.numel()} entries, expected {want.numel()} (head dim {dk} / 4)")
            rel = ((got - want).abs() / want).max().item()
            if not rel <= 1e-5:
                hint = ""
                if got.numel() >= 2 and 0 < got[1].item() < 1:
                    guess = got[1].item() ** (-(dk // 2) / 2.0)
                    hint = f"; the values fit base {guess:.6g}"
                raise ConvertError(f"{name} does not match the RoPE frequencies for base {base} and head dim {dk} "
                                   f"(max relative difference {rel:.3g}{hint}), and vkvit computes θ from the base")
        for which in have:
            if which not in ("rope", "rope_reg"):  # pragma: no cover - map_paper only collects these two
                raise ConvertError(f"blocks.{i}.attn.{which}.freqs is unexpected")
    extra = sorted(i for i in freqs if i >= depth)
    if extra:
        raise ConvertError(f"blocks.{extra[0]}.attn.rope.freqs belongs to a block that has no weights")


def map_nxai(sd, raw):
    """NX-AI ViL v1 names -> vkvit vil names (raw hub names are first remapped exactly as hubconf.py does)."""
    if raw:
        sd = {k.replace(".xlstm.", ".layer."): v for k, v in sd.items()}
        sd = {k.replace("xlstm.", ""): v for k, v in sd.items()}
        sd = {k.replace(".xlstm_norm.", ".norm."): v for k, v in sd.items()}
        ren = {"post_blocks_norm.weight": "legacy_norm.weight", "head.0.weight": "norm.weight",
               "head.0.bias": "norm.bias", "head.1.weight": "head.weight", "head.1.bias": "head.bias"}
        sd = {ren.get(k, k): v for k, v in sd.items()}
    layer = {
        "proj_up.weight": "proj_up.weight", "conv1d.conv.weight": "conv1d.weight", "conv1d.conv.bias": "conv1d.bias",
        "q_proj.weight": "q_proj.weight", "k_proj.weight": "k_proj.weight", "v_proj.weight": "v_proj.weight",
        "mlstm_cell.igate.weight": "igate.weight", "mlstm_cell.igate.bias": "igate.bias",
        "mlstm_cell.fgate.weight": "fgate.weight", "mlstm_cell.fgate.bias": "fgate.bias",
        "mlstm_cell.outnorm.weight": "outnorm.weight", "learnable_skip": "learnable_skip",
        "proj_down.weight": "proj_down.weight",
    }
    top = {"patch_embed.proj.weight", "patch_embed.proj.bias", "pos_embed.embed", "legacy_norm.weight",
           "norm.weight", "norm.bias", "head.weight", "head.bias"}
    out = {}
    for k, v in sd.items():
        if k in top:
            out[k] = v
            continue
        m = re.fullmatch(r"blocks\.(\d+)\.(.+)", k)
        if m:
            i, rest = m.group(1), m.group(2)
            if rest == "norm.weight":
                out[f"blocks.{i}.norm1.weight"] = v
                continue
            if rest.startswith("layer.") and rest[6:] in layer:
                out[f"blocks.{i}.mlstm.{layer[rest[6:]]}"] = v
                continue
            if rest in ("norm.bias", "layer.proj_up.bias", "layer.proj_down.bias", "layer.q_proj.bias",
                        "layer.mlstm_cell.outnorm.bias"):
                raise ConvertError(f"{k} exists, but ViL v1 has no such bias (a ViL v2 checkpoint?); ViL v2 is not "
                                   f"supported")
        raise ConvertError(f"NX-AI checkpoint tensor {k} has no vkvit equivalent")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Hyperparameter inference
# ---------------------------------------------------------------------------------------------------------------


def _need(sd, name, ndim, why):
    if name not in sd:
        raise ConvertError(f"tensor {name} is missing, so the {why} cannot be inferred")
    t = sd[name]
    if t.dim() != ndim:
        raise ConvertError(f"tensor {name} has shape {list(t.shape)}, expected {ndim} dimensions")
    return t


def _depth(sd):
    idx = sorted({int(m.group(1)) for k in sd for m in [re.match(r"blocks\.(\d+)\.", k)] if m})
    if not idx:
        raise ConvertError("the checkpoint has no blocks.{i}.* tensors")
    if idx != list(range(len(idx))):
        missing = sorted(set(range(idx[-1] + 1)) - set(idx))
        raise ConvertError(f"blocks are not numbered 0..{idx[-1]} without gaps (block {missing[0]} has no tensors)")
    return len(idx)


def _grid(n_pos, patch, image_size, what):
    if image_size is not None:
        h, w = image_size
        if h % patch or w % patch:
            raise ConvertError(f"--image-size {h} {w} is not divisible by the patch size {patch}")
        if (h // patch) * (w // patch) != n_pos:
            raise ConvertError(f"--image-size {h} {w} gives {(h // patch) * (w // patch)} patches but {what} has "
                               f"{n_pos} positions (vkvit does not interpolate position embeddings)")
        return h, w
    s = math.isqrt(n_pos)
    if s * s != n_pos:
        raise ConvertError(f"{what} has {n_pos} positions, which is not a square grid; pass --image-size H W")
    return s * patch, s * patch


def _preset(args, arch, width):
    if not args.preset:
        return None
    p = PRESETS[args.preset]
    if p[0] != arch:
        raise ConvertError(f"--preset {args.preset} is a {p[0]} preset but the checkpoint is a {arch} model")
    if p[1] != width:
        raise ConvertError(f"--preset {args.preset} has width {p[1]} but the checkpoint has width {width}")
    return p


def rename_register_neck(sd):
    """nvSubquadratic names the register_concat readout's projection `register_neck`; vkvit calls it `neck`."""
    if "register_neck.weight" not in sd:
        return sd
    if "neck.weight" in sd:
        raise ConvertError("the checkpoint has both register_neck.weight and neck.weight; a ViT-5 has one neck")
    extra = sorted(k for k in sd if k.startswith("register_neck.") and k != "register_neck.weight")
    if extra:
        raise ConvertError(f"{extra[0]} exists, but the register_concat neck has no bias or other parameters in "
                           f"vkvit (register_neck.weight only)")
    return {("neck.weight" if k == "register_neck.weight" else k): v for k, v in sd.items()}


def check_vit5_mlp(sd, args):
    """vkvit's vit5 runs a GELU MLP (config.mlp_activation "gelu", the only value the runtime has). A checkpoint does
    not record its activation, so --activation is checked here, and a gated MLP is recognised by its shapes."""
    l1 = _need(sd, "blocks.0.mlp.layer1.weight", 2, "MLP width")
    if "blocks.0.mlp.layer2.weight" in sd:
        l2 = _need(sd, "blocks.0.mlp.layer2.weight", 2, "MLP hidden width")
        hidden = int(l2.shape[1])
        if hidden and int(l1.shape[0]) == 2 * hidden:
            raise ConvertError(f"SwiGLU MLPs are not supported for vit5: blocks.0.mlp.layer1.weight has "
                               f"{int(l1.shape[0])} outputs for layer2's hidden width {hidden} (a gated GLU / "
                               f"SwiGLU MLP), and vkvit's vit5 runs GELU MLPs only")
    act = args.activation
    if act in ("glu", "swiglu"):
        raise ConvertError(f"{'SwiGLU' if act == 'swiglu' else 'GLU'} MLPs are not supported for vit5 (--activation "
                           f"{act}); vkvit's vit5 runs GELU MLPs only")
    if act in ("relu", "silu"):
        raise ConvertError(f"--activation {act}: vkvit's vit5 runs GELU MLPs only (config.mlp_activation is "
                           f"\"gelu\", docs/model-format.md), so a ViT-5 with a {act} MLP would give wrong logits "
                           f"and is not converted")


def infer_vit5(sd, args, flavour, dk_hint=None):
    pe = _need(sd, "patch_embed.weight", 4, "width and patch size")
    C, in_chans, P, P2 = (int(d) for d in pe.shape)
    if P != P2:
        raise ConvertError(f"patch_embed.weight has a {P}x{P2} kernel; vkvit needs square patches")
    pos = _need(sd, "pos_embed", 3, "patch grid")
    n_pos = int(pos.shape[1])
    if flavour == "paper" and args.image_size is not None:
        # The paper model builds its patch grid and RoPE tables square from img_size and runs only at that size.
        s = math.isqrt(n_pos)
        h, w = args.image_size
        if s * s != n_pos or [h, w] != [s * P, s * P]:
            build = f"{s}x{s} patches, {s * P}x{s * P} pixels" if s * s == n_pos else f"{n_pos} positions"
            raise ConvertError(f"--image-size {h} {w} does not fit the paper ViT-5, which runs only at its square "
                               f"build size ({build}); vkvit would reinterpret pos_embed as a "
                               f"{h // P if P else 0}x{w // P if P else 0} grid")
    H, W = _grid(n_pos, P, args.image_size, "pos_embed")
    check_vit5_mlp(sd, args)
    depth = _depth(sd)
    for k in sd:
        if re.match(r"blocks\.\d+\.register_pooling\.", k):
            raise ConvertError(f"{k} exists, but register pooling cannot be used with ViT5Attention "
                               f"(its token layout does not allow it), so vkvit does not support it")
    R = int(_need(sd, "reg_token", 3, "number of registers").shape[1]) if "reg_token" in sd else 0
    has_cls = "cls_token" in sd
    if "neck.weight" in sd:
        readout, neck = "register_concat", int(sd["neck.weight"].shape[0])
    else:
        readout, neck = ("cls" if has_cls else "gap"), 0
    mlp_hidden = int(_need(sd, "blocks.0.mlp.layer1.weight", 2, "MLP width").shape[0])
    qk_norm = "blocks.0.sequence_mixer.q_norm.weight" in sd
    head = _need(sd, "out_proj.weight", 2, "number of classes")

    preset = _preset(args, "vit5", C)
    heads, how = None, ""
    if args.num_heads:
        heads, how = args.num_heads, "--num-heads"
    elif preset:
        heads, how = preset[2], f"preset {args.preset}"
    if qk_norm:
        dk_hint = int(sd["blocks.0.sequence_mixer.q_norm.weight"].reshape(-1).shape[0])
    if heads is None:
        if dk_hint is None:
            raise ConvertError("the number of attention heads cannot be inferred for this ViT-5 checkpoint; pass "
                               "--num-heads N or --preset NAME")
        if dk_hint <= 0 or C % dk_hint:
            raise ConvertError(f"the head dim {dk_hint} found in the checkpoint does not divide the width {C}")
        heads, how = C // dk_hint, f"head dim {dk_hint} of the QK norm / RoPE tensors"
    elif dk_hint is not None and heads * dk_hint != C:
        raise ConvertError(f"{how} gives {heads} heads for width {C}, but the checkpoint's QK norm / RoPE tensors "
                           f"have head dim {dk_hint}")
    rules = vf.VIT5_FLAVOUR_RULES[flavour]
    cfg = {
        "image_size": [H, W], "patch_size": P, "in_chans": in_chans, "dim": C, "depth": depth, "num_heads": heads,
        "mlp_hidden": mlp_hidden, "mlp_activation": "gelu", "num_registers": R, "has_cls": has_cls,
        "readout": readout, "neck_dim": neck, "qk_norm": qk_norm, "norm_eps": 1e-6, "qk_norm_eps": 1e-6,
        "rope_base": 10000.0, "reg_rope_base": 100.0, "rope_pairing": rules[0], "token_layout": rules[1],
        "layer_scale": "blocks.0.ls_attn.gamma" in sd, "grn": "blocks.0.grn.gamma" in sd,
        "bias": {
            "patch_embed": "patch_embed.bias" in sd,
            "qkv": "blocks.0.sequence_mixer.qkv.bias" in sd,
            "proj": "blocks.0.sequence_mixer.proj.bias" in sd,
            "mlp": "blocks.0.mlp.layer1.bias" in sd or "blocks.0.mlp.layer2.bias" in sd,
            "head": "out_proj.bias" in sd,
        },
        "num_classes": int(head.shape[0]),
    }
    return cfg, how


def infer_vil(sd, args):
    pe = _need(sd, "patch_embed.proj.weight", 4, "width and patch size")
    D, in_chans, P, P2 = (int(d) for d in pe.shape)
    if P != P2:
        raise ConvertError(f"patch_embed.proj.weight has a {P}x{P2} kernel; vkvit needs square patches")
    pos = _need(sd, "pos_embed.embed", 4, "patch grid")
    hp, wp = int(pos.shape[1]), int(pos.shape[2])
    if args.image_size is not None and list(args.image_size) != [hp * P, wp * P]:
        h, w = args.image_size
        raise ConvertError(f"--image-size {h} {w} does not match pos_embed.embed's {hp}x{wp} grid of {P}-pixel "
                           f"patches ({hp * P}x{wp * P}); vkvit does not interpolate position embeddings, and "
                           f"stride-8 ViL variants are not supported")
    depth = _depth(sd)
    _preset(args, "vil", D)
    up = _need(sd, "blocks.0.mlstm.proj_up.weight", 2, "inner width")
    q = _need(sd, "blocks.0.mlstm.q_proj.weight", 3, "qkv block size")
    ig = _need(sd, "blocks.0.mlstm.igate.weight", 2, "number of memory heads")
    conv = _need(sd, "blocks.0.mlstm.conv1d.weight", 3, "conv kernel")
    head = _need(sd, "head.weight", 2, "number of classes")
    cfg = {
        "image_size": [hp * P, wp * P], "patch_size": P, "in_chans": in_chans, "dim": D, "depth": depth,
        "inner_dim": int(up.shape[0]) // 2, "num_heads": int(ig.shape[0]), "qkv_block_size": int(q.shape[1]),
        "conv_kernel": int(conv.shape[2]), "pooling": "bilateral_avg", "norm_eps": 1e-5, "head_norm_eps": 1e-6,
        "num_classes": int(head.shape[0]),
    }
    return cfg


def _resnet_norm(sd, name, args):
    """The norm at `name` from its tensors: none -> identity, weight + bias -> layernorm with bias, weight only ->
    --norm (rmsnorm by default, or layernorm without bias)."""
    if name + ".weight" not in sd:
        if name + ".bias" in sd:
            raise ConvertError(f"tensor {name}.bias exists without {name}.weight")
        return {"type": "identity"}
    kind = "layernorm" if name + ".bias" in sd else args.norm
    eps = args.norm_eps if args.norm_eps is not None else (1e-6 if kind == "rmsnorm" else 1e-5)
    return {"type": "rmsnorm", "eps": eps} if kind == "rmsnorm" else \
        {"type": "layernorm", "eps": eps, "bias": name + ".bias" in sd}


def infer_resnet(sd, args):
    if args.preset:
        raise ConvertError(f"--preset {args.preset} is a {PRESETS[args.preset][0]} preset but the checkpoint is a "
                           f"resnet model")
    pe = _need(sd, "patch_embed.weight", 4, "width and patch size")
    C, in_chans, P, P2 = (int(d) for d in pe.shape)
    if P != P2:
        raise ConvertError(f"patch_embed.weight has a {P}x{P2} kernel; vkvit needs square patches")
    if "pos_embed" in sd:
        pos = _need(sd, "pos_embed", 4, "patch grid")
        hp, wp = int(pos.shape[1]), int(pos.shape[2])
        if args.image_size is not None and list(args.image_size) != [hp * P, wp * P]:
            h, w = args.image_size
            raise ConvertError(f"--image-size {h} {w} does not match pos_embed's {hp}x{wp} grid of {P}-pixel "
                               f"patches ({hp * P}x{wp * P}); vkvit does not interpolate position embeddings")
        H, W = hp * P, wp * P
    elif args.image_size is not None:
        H, W = args.image_size
        if H % P or W % P:
            raise ConvertError(f"--image-size {H} {W} is not divisible by the patch size {P}")
    else:
        raise ConvertError("this resnet has no pos_embed, so the input size cannot be inferred; pass --image-size H W")
    depth = _depth(sd)
    b0 = "blocks.0."
    heads_needed = []
    if b0 + "sequence_mixer.qkv_proj.weight" in sd:
        heads_needed.append("sequence_mixer")
        seq = {"type": "attention", "num_heads": args.num_heads, "qk_norm": args.qk_norm, "rope": args.rope,
               "rope_base": args.rope_base, "causal": args.causal,
               "bias": b0 + "sequence_mixer.qkv_proj.bias" in sd}
    else:
        seq = {"type": "identity"}
    if b0 + "condition_mixer.kv_proj.weight" in sd:
        heads_needed.append("condition_mixer")
        cond = {"type": "attention", "num_heads": args.num_heads, "qk_norm": args.condition_qk_norm,
                "causal": args.condition_causal}
    else:
        cond = {"type": "identity"}
    if heads_needed and not args.num_heads:
        raise ConvertError(f"the number of attention heads of the {' and '.join(heads_needed)} cannot be inferred "
                           f"from the weights; pass --num-heads N")
    if b0 + "mlp.layer1.weight" in sd:
        l1 = _need(sd, b0 + "mlp.layer1.weight", 2, "MLP width")
        l2 = _need(sd, b0 + "mlp.layer2.weight", 2, "MLP hidden width")
        hidden = int(l2.shape[1])
        gf = int(l1.shape[0]) // hidden if hidden else 0
        if gf not in (1, 2) or gf * hidden != int(l1.shape[0]):
            raise ConvertError(f"blocks.0.mlp.layer1.weight has {int(l1.shape[0])} outputs for a hidden width of "
                               f"{hidden} (layer2); expected {hidden} or {2 * hidden} (glu / swiglu)")
        gated = ("glu", "swiglu") if gf == 2 else ("relu", "gelu", "silu")
        if args.activation is None:
            raise ConvertError(f"the MLP activation cannot be inferred from the weights; pass --activation "
                               f"({' or '.join(gated)} for this layer1 shape)")
        if args.activation not in gated:
            raise ConvertError(f"--activation {args.activation} does not fit blocks.0.mlp.layer1.weight "
                               f"({int(l1.shape[0])} outputs for hidden {hidden}: expected {' or '.join(gated)})")
        mlp = {"type": "mlp", "activation": args.activation, "hidden": hidden,
               "bias": b0 + "mlp.layer1.bias" in sd or b0 + "mlp.layer2.bias" in sd}
    else:
        mlp = {"type": "identity"}
    cond_on = cond["type"] != "identity"
    if not cond_on and args.condition_tokens:
        raise ConvertError(f"--condition-tokens {args.condition_tokens} given, but the checkpoint has no condition "
                           f"mixer (no blocks.0.condition_mixer.kv_proj.weight)")
    head = _need(sd, "out_proj.weight", 2, "number of classes")
    cfg = {
        "image_size": [H, W], "patch_size": P, "in_chans": in_chans, "dim": C, "depth": depth,
        "pos_embed": "pos_embed" in sd,
        "block": {
            "input_norm": _resnet_norm(sd, b0 + "input_norm", args), "sequence_mixer": seq,
            "condition_mixer_norm": _resnet_norm(sd, b0 + "condition_mixer_norm", args), "condition_mixer": cond,
            "mlp_norm": _resnet_norm(sd, b0 + "mlp_norm", args), "mlp": mlp,
        },
        "condition_tokens": args.condition_tokens if cond_on else 0, "condition_dim": C if cond_on else 0,
        "readout": "gap", "out_norm": _resnet_norm(sd, "out_norm", args),
        "bias": {"patch_embed": "patch_embed.bias" in sd, "head": "out_proj.bias" in sd},
        "num_classes": int(head.shape[0]),
    }
    try:
        vf.check_resnet_config(cfg)
    except vf.FormatError as e:
        raise ConvertError(f"the inferred resnet config is inconsistent: {e}") from None
    return cfg, "--num-heads" if heads_needed else "n/a (no attention)"


# ---------------------------------------------------------------------------------------------------------------
# Conversion
# ---------------------------------------------------------------------------------------------------------------

DTYPE_ARG = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}  # torch dtype names


def cast(sd, dtype):
    out = {}
    for k, v in sd.items():
        v = v.detach()
        if not v.is_floating_point():
            raise ConvertError(f"tensor {k} has dtype {v.dtype}, not a floating-point type")
        if not torch.isfinite(v).all():
            raise ConvertError(f"tensor {k} contains NaN or infinite values")
        if dtype == torch.float16:
            m = v.abs().max().item() if v.numel() else 0.0
            if m > 65504.0:
                raise ConvertError(f"tensor {k} has values up to {m:.6g}, beyond the float16 range; use --dtype "
                                   f"f32 or bf16")
        out[k] = v.to(dtype).contiguous()
    return out


def read_labels(path, n):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ConvertError(f"cannot read the labels file {path}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConvertError(f"the labels file {path} is not UTF-8 text") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    labels = [ln.rstrip("\r") for ln in lines]
    for i, lab in enumerate(labels):
        if not lab.strip():
            raise ConvertError(f"the labels file {path} has an empty label on line {i + 1}")
    if len(labels) != n:
        raise ConvertError(f"the labels file {path} has {len(labels)} labels but the model has {n} classes")
    return labels


def _default_name(args, arch, cfg):
    if args.name:
        return args.name
    h, w = cfg["image_size"]
    size = f"{h}" if h == w else f"{h}x{w}"
    if args.preset:
        return f"{args.preset}_patch{cfg['patch_size']}_{size}"
    return os.path.splitext(os.path.basename(args.src))[0]


def _describe(vkvit, args=None):
    """A few lines about the model; the derived numbers (tokens, head dims, ...) are vkvit_file.describe_config's, the
    ones `vkvit inspect` reports."""
    arch, flavour, cfg = vkvit["architecture"], vkvit["flavour"], vkvit["config"]
    d = vf.describe_config(vkvit)
    if arch == "resnet":
        blk, C = cfg["block"], cfg["dim"]

        def norm(n):
            return n["type"] + (f" eps {n['eps']:g}" if n["type"] != "identity" else "") + \
                (" +bias" if n.get("bias") else "")
        seq, cond, mlp = blk["sequence_mixer"], blk["condition_mixer"], blk["mlp"]
        lines = [f"ClassificationResNet: dim {C}, depth {cfg['depth']}, patch {cfg['patch_size']}, image "
                 f"{cfg['image_size'][0]}x{cfg['image_size'][1]}, tokens {d['tokens']}, pos_embed "
                 f"{'yes' if cfg['pos_embed'] else 'no'}"]
        lines.append("sequence mixer " + ("identity" if seq["type"] == "identity" else
                     f"{norm(blk['input_norm'])} -> attention heads {seq['num_heads']}, rope {seq['rope']}, "
                     f"qk_norm {seq['qk_norm']}, causal {seq['causal']}, bias {seq['bias']}"))
        lines.append("condition mixer " + ("identity (no condition input)" if cond["type"] == "identity" else
                     f"{norm(blk['condition_mixer_norm'])} -> cross-attention heads {cond['num_heads']}, qk_norm "
                     f"{cond['qk_norm']}, causal {cond['causal']}; condition "
                     + (f"[B, {cfg['condition_tokens']}, {C}]" if cfg["condition_tokens"] else f"[B, {C}]")))
        lines.append("mlp " + ("identity" if mlp["type"] == "identity" else
                     f"{norm(blk['mlp_norm'])} -> {mlp['activation']} hidden {mlp['hidden']}, bias {mlp['bias']}"))
        lines.append(f"readout gap -> out_norm {norm(cfg['out_norm'])} -> head")
        return lines
    if arch == "vit5":
        toks = f"{d['patches']} patches" + (" + CLS" if cfg["has_cls"] else "") + (
            f" + {cfg['num_registers']} registers" if cfg["num_registers"] else "")
        biases = [k for k, v in cfg["bias"].items() if v]
        return [
            f"ViT-5: dim {d['dim']}, depth {cfg['depth']}, heads {d['num_heads']} (head dim {d['head_dim']}), MLP "
            f"{cfg['mlp_hidden']} gelu"
            + ("" if args is None or args.activation else " (a checkpoint does not record it; vkvit's vit5 runs "
                                                           "GELU only)"),
            f"patch {cfg['patch_size']}, image {cfg['image_size'][0]}x{cfg['image_size'][1]}, tokens "
            f"{d['tokens']} ({toks}), layout {cfg['token_layout']}",
            f"readout {cfg['readout']}" + (f" (neck {cfg['neck_dim']})" if cfg["neck_dim"] else "")
            + f", RoPE {cfg['rope_pairing']}, qk_norm {'yes' if cfg['qk_norm'] else 'no'}, layer_scale "
            f"{'yes' if cfg['layer_scale'] else 'no'}, grn {'yes' if cfg['grn'] else 'no'}, biases "
            + (", ".join(biases) if biases else "none"),
        ]
    return [
        f"Vision-LSTM v1: dim {d['dim']}, depth {cfg['depth']}, inner {d['inner_dim']}, memory heads {d['num_heads']} "
        f"(head dim {d['head_dim']}), qkv block size {d['qkv_block_size']} ({d['num_proj_heads']} blocks)",
        f"patch {cfg['patch_size']}, image {cfg['image_size'][0]}x{cfg['image_size'][1]}, tokens {d['tokens']}, conv "
        f"kernel {cfg['conv_kernel']}, pooling {cfg['pooling']}",
        "numerics " + ("official NX-AI (1+w norms, MultiHeadLayerNorm, no layerscale)" if flavour == "nxai"
                       else "seed-004 (GroupNorm over tokens, layerscale)"),
    ]


# Options that change the config: with one of them a vkvit source is re-inferred from its tensors, without them
# its config is carried over as it is.
_CONFIG_OPTIONS = (("image_size", None, "--image-size"), ("num_heads", None, "--num-heads"),
                   ("flavour", None, "--flavour"), ("preset", None, "--preset"), ("activation", None, "--activation"),
                   ("rope", False, "--rope"), ("qk_norm", False, "--qk-norm"), ("causal", False, "--causal"),
                   ("rope_base", 10000.0, "--rope-base"), ("condition_qk_norm", False, "--condition-qk-norm"),
                   ("condition_causal", False, "--condition-causal"), ("condition_tokens", 0, "--condition-tokens"),
                   ("norm", "rmsnorm", "--norm"), ("norm_eps", None, "--norm-eps"))


def _config_options_given(args):
    return [flag for name, default, flag in _CONFIG_OPTIONS if getattr(args, name) != default]


def _fill_from_source(args, doc):
    """Defaults for options the tensors cannot show, from the source model file's document (re-inference)."""
    cfg = doc.get("config", {})
    row = vf.ARCHS.get(doc.get("architecture"))
    if args.flavour is None and row is not None and len(row.flavours) > 1:
        args.flavour = doc.get("flavour")
    if args.num_heads is None and doc.get("architecture") == "vit5":
        args.num_heads = cfg.get("num_heads")
    if doc.get("architecture") == "resnet":
        blk = cfg.get("block", {})
        seq, cond, mlp = blk.get("sequence_mixer", {}), blk.get("condition_mixer", {}), blk.get("mlp", {})
        if args.num_heads is None:
            args.num_heads = seq.get("num_heads") or cond.get("num_heads")
        if args.activation is None:
            args.activation = mlp.get("activation")


def make_preprocess(args, cfg, src_doc):
    """The `preprocess` entry: the source model file's (re-conversion) or the defaults, then the options."""
    h, w = cfg["image_size"]
    pre = {"image_size": [h, w], "resize_shorter": max(h, w), "interpolation": "bicubic",
           "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD)}
    if src_doc is not None and isinstance(src_doc.get("preprocess"), dict):
        old = src_doc["preprocess"]
        for k in ("interpolation", "mean", "std"):
            pre[k] = old[k]
        oh, ow = old["image_size"]
        # The same crop fraction at a new input size.
        pre["resize_shorter"] = max(max(h, w), round(old["resize_shorter"] * max(h, w) / max(oh, ow)))
    if args.resize is not None:
        if args.resize < max(h, w):
            raise UsageError(f"--resize {args.resize} is smaller than the input size {h}x{w}: the shorter side "
                               f"must be resized to at least {max(h, w)} so that the centre crop fits")
        pre["resize_shorter"] = args.resize
    if args.crop_pct is not None:
        pre["resize_shorter"] = math.floor(max(h, w) / args.crop_pct)
    if args.interpolation:
        pre["interpolation"] = args.interpolation
    if args.mean:
        pre["mean"] = list(args.mean)
    if args.std:
        pre["std"] = list(args.std)
    return pre


def _describe_preprocess(pre):
    h, w = pre["image_size"]
    norm = ("ImageNet mean/std" if pre["mean"] == IMAGENET_MEAN and pre["std"] == IMAGENET_STD else
            "mean [" + ", ".join(f"{m:g}" for m in pre["mean"]) + "], std [" +
            ", ".join(f"{v:g}" for v in pre["std"]) + "]")
    return (f"resize shorter side to {pre['resize_shorter']} ({pre['interpolation']}), centre crop {h}x{w} "
            f"(crop {max(h, w) / pre['resize_shorter']:.3f}), {norm}")


def convert(args):
    obj, src_doc = load_source(args.src)
    kind, layout, sd, note = find_weights(obj, args, args.src)
    carried = src_doc is not None and not _config_options_given(args)
    if carried:
        # Re-conversion of a vkvit model file: its document holds everything the tensors cannot show.
        arch, flavour, cfg = src_doc["architecture"], src_doc["flavour"], src_doc["config"]
        heads_from = "the source model file"
        dropped = ""
    else:
        if src_doc is not None:
            _fill_from_source(args, src_doc)
        dropped = ""
        dk_hint = None
        if kind == "nvsubq" and layout == "nvsubq" and _is_resnet(map_nvsubq(sd)):
            sd, layout = map_nvsubq(sd), "plain_resnet"
        if layout == "plain_resnet":
            arch, flavour = "resnet", "generic"
            if args.flavour and args.flavour not in vf.ARCHS["resnet"].flavours:
                raise ConvertError(f"--flavour {args.flavour} is not a resnet flavour "
                                   f"({' or '.join(vf.ARCHS['resnet'].flavours)})")
            cfg, heads_from = infer_resnet(sd, args)
        elif kind in ("nvsubq", "paper", "plain") and layout != "plain_vil":
            arch = "vit5"
            if kind == "nvsubq":
                sd = rename_register_neck(map_nvsubq(sd) if layout == "nvsubq" else sd)
                flavour = "nvsubq"
            elif kind == "paper":
                sd, freqs = map_paper(sd)
                flavour = "paper"
                fl = [f for b in freqs.values() for f in b.values()]
                if fl:
                    dk_hint = 4 * int(fl[0].numel())
            else:
                sd = rename_register_neck(sd)
                flavour = args.flavour or "nvsubq"
                if flavour not in vf.ARCHS["vit5"].flavours:
                    raise ConvertError(f"--flavour {flavour} is not a ViT-5 flavour "
                                       f"({' or '.join(vf.ARCHS['vit5'].flavours)})")
            if args.flavour and args.flavour != flavour:
                raise ConvertError(f"--flavour {args.flavour} does not apply to a {SOURCE_TEXT[kind]} (its flavour is "
                                   f"{flavour})")
            cfg, heads_from = infer_vit5(sd, args, flavour, dk_hint)
            if kind == "paper":
                check_paper_freqs(freqs, cfg["depth"], cfg["dim"] // cfg["num_heads"], cfg["num_registers"])
                n = sum(len(b) for b in freqs.values())
                dropped = f"{n} rope freqs buffers matched the computed θ (bases 10000 / 100) and were dropped"
        else:
            arch = "vil"
            if kind == "nxai":
                sd = map_nxai(sd, raw=(layout == "nxai_raw"))
                flavour = "nxai"
            else:
                seedish = any(k.endswith(".mlstm.layerscale") or k.endswith(".mlstm.outnorm.bias") for k in sd)
                flavour = args.flavour or ("seed" if seedish else "nxai")
            if args.flavour and args.flavour != flavour:
                raise ConvertError(f"--flavour {args.flavour} does not apply to a {SOURCE_TEXT[kind]} (its flavour is "
                                   f"{flavour})")
            if flavour not in vf.ARCHS["vil"].flavours:
                raise ConvertError(f"--flavour {flavour} is not a Vision-LSTM flavour "
                                   f"({' or '.join(vf.ARCHS['vil'].flavours)})")
            cfg = infer_vil(sd, args)
            heads_from = "igate.weight"
            if args.num_heads and args.num_heads != cfg["num_heads"]:
                raise ConvertError(f"--num-heads {args.num_heads} disagrees with the checkpoint's {cfg['num_heads']} "
                                   f"memory heads (igate.weight)")

    h, w = cfg["image_size"]
    vkvit = vf.document(arch, flavour, args.name or (src_doc.get("name") if src_doc is not None and
                                                      src_doc.get("name") else None) or _default_name(args, arch, cfg),
                        cfg, make_preprocess(args, cfg, src_doc))
    labels_from = "none"
    if args.labels:
        vkvit["labels"] = read_labels(args.labels, cfg["num_classes"])
        labels_from = f"from {args.labels}"
    elif src_doc is not None and src_doc.get("labels"):
        if len(src_doc["labels"]) != cfg["num_classes"]:
            raise ConvertError(f"the source model file has {len(src_doc['labels'])} labels but the converted model has "
                               f"{cfg['num_classes']} classes; pass --labels FILE")
        vkvit["labels"] = list(src_doc["labels"])
        labels_from = "from the source model file"
    try:
        vf.validate_model(sd, vkvit)
    except vf.FormatError as e:
        raise ConvertError(f"the checkpoint does not match the inferred {arch} model: {e}") from None
    tensors = cast(sd, getattr(torch, DTYPE_ARG[args.dtype]))
    try:
        vf.write_model(args.output, tensors, vkvit)
    except OSError as e:
        raise ConvertError(f"cannot write {args.output}: {e.strerror or e}") from None

    fb = vf.flops_breakdown(vkvit)
    params = vf.count_params(vkvit)
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    print(f"source        {args.src}: " + ("vkvit model file (re-converted; config, labels and pre-processing "
                                            "carried over)" if carried else SOURCE_TEXT[kind])
          + (f", {note}" if note else ""))
    print(f"model         {arch} flavour {flavour}, name {vkvit['name']!r}" +
          (f", heads from {heads_from}" if arch in ("vit5", "resnet") else ""))
    for line in _describe(vkvit, args):
        print(f"              {line}")
    print(f"classes       {cfg['num_classes']}, labels {labels_from}")
    print(f"preprocess    {_describe_preprocess(vkvit['preprocess'])}")
    print(f"parameters    {params:,} ({params / 1e6:.3f} M)")
    print(f"FLOPs         {fb['total']:,} ({fb['total'] / 1e9:.2f} GFLOPs per image, the seeds' flop_count formulas "
          f"as `vkvit inspect` reports them)")
    if dropped:
        print(f"checked       {dropped}")
    print(f"wrote         {args.output}: {len(tensors)} tensors, {args.dtype}, {nbytes / 1e6:.1f} MB of weights "
          f"(format: docs/model-format.md)")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's convention: a usage error prints one line and exits 1 (argparse's own is 2, which
    this tool uses for bad input)."""

    def error(self, message):
        sys.stderr.write(f"{PROG}: error: {message} (see --help)\n")
        sys.exit(1)


def _positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{s!r} is not a finite number")
    return v


def build_parser():
    p = _Parser(prog=PROG, description="Convert a PyTorch checkpoint (or re-convert a vkvit model file) to a vkvit "
                "model file (docs/model-format.md; the converter: docs/convert.md).",
                epilog="Sources" + __doc__.split("Sources", 1)[1],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", metavar="SRC", help="checkpoint (.ckpt, .pth, .pt, .th, .safetensors) or a .vkvit model "
                   "file to re-convert")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output .vkvit file (required)")
    p.add_argument("--source", default="auto", choices=("auto", "nvsubq", "paper", "nxai", "plain"),
                   help="checkpoint layout (default auto: recognised from the key names)")
    p.add_argument("--preset", type=lambda s: s.replace("-", "_"), choices=sorted(PRESETS),
                   help="a named model size: checks the width and gives the ViT-5 head count")
    p.add_argument("--num-heads", type=int, metavar="N", help="attention heads (vit5 when the QK-norm / RoPE tensors "
                   "do not show the head dim; resnet attentions)")
    p.add_argument("--flavour", metavar="F",  # checked against tools/vkvit_file.py's ARCHS in main()
                   help="for plain state_dicts: vit5 nvsubq (default) or paper; vil seed or nxai (default: "
                        "inferred from outnorm.bias / layerscale)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--ema", action="store_true", help="take the EMA weights (paper model_ema; nvsubq: insist that "
                   "state_dict is the EMA average)")
    g.add_argument("--live", action="store_true", help="nvsubq: take current_model_state (live weights)")
    p.add_argument("--labels", metavar="FILE", help="class names, one per line (UTF-8; default: none, or the source "
                   "model file's)")
    p.add_argument("--image-size", type=int, nargs=2, metavar=("H", "W"),
                   help="input size when pos_embed's grid is not square (nvsubq) or there is no pos_embed (resnet); "
                        "default: from pos_embed")
    p.add_argument("--dtype", default="f32", choices=("f32", "f16", "bf16"), help="weight storage type (default f32)")
    p.add_argument("--name", metavar="STR", help="model name (default: the preset with patch and size, the source "
                   "model file's name, or the checkpoint's file name)")
    p.add_argument("--activation", choices=("relu", "gelu", "silu", "glu", "swiglu"),
                   help="MLP activation: required for resnet; vit5 runs gelu only (relu, silu, glu and swiglu are "
                        "refused)")
    q = p.add_argument_group("pre-processing (the model file's `preprocess`; docs/preprocessing.md)")
    q.add_argument("--mean", type=float, nargs=3, metavar=("R", "G", "B"),
                   help="per-channel mean of RGB in [0, 1] (default ImageNet's 0.485 0.456 0.406)")
    q.add_argument("--std", type=_positive_float, nargs=3, metavar=("R", "G", "B"),
                   help="per-channel std, > 0 (default ImageNet's 0.229 0.224 0.225)")
    rs = q.add_mutually_exclusive_group()
    rs.add_argument("--resize", type=int, metavar="N", help="resize the shorter image side to N pixels before the "
                    "centre crop; at least the larger input side (default: the larger input side)")
    rs.add_argument("--crop-pct", type=_positive_float, metavar="F", help="centre crop fraction in (0, 1]: the "
                    "shorter side is resized to floor(max(H, W) / F), e.g. 0.875 gives 256 for 224 (timm's crop_pct)")
    q.add_argument("--interpolation", choices=("bicubic", "bilinear"), help="resize filter, antialiased (default "
                   "bicubic)")
    r = p.add_argument_group("resnet options (what the weights cannot show)")
    r.add_argument("--rope", action="store_true", help="sequence mixer: 2-D RoPE")
    r.add_argument("--rope-base", type=float, default=10000.0, metavar="B", help="sequence mixer RoPE base (default 10000)")
    r.add_argument("--qk-norm", action="store_true", help="sequence mixer: L2 QK norm (cosine attention)")
    r.add_argument("--causal", action="store_true", help="sequence mixer: causal mask")
    r.add_argument("--condition-qk-norm", action="store_true", help="condition mixer: L2 QK norm")
    r.add_argument("--condition-causal", action="store_true", help="condition mixer: causal mask")
    r.add_argument("--condition-tokens", type=int, default=0, metavar="N",
                   help="condition tokens Tc (0: a [B, C] vector; default 0)")
    r.add_argument("--norm", choices=("rmsnorm", "layernorm"), default="rmsnorm",
                   help="kind of a norm that has a weight but no bias (default rmsnorm)")
    r.add_argument("--norm-eps", type=float, metavar="E",
                   help="eps of every norm (default 1e-6 for rmsnorm, 1e-5 for layernorm)")
    return p


def parse_args(argv):
    p = build_parser()
    args = p.parse_args(argv)
    if args.condition_tokens < 0:
        p.error("--condition-tokens must be 0 or more")
    if args.num_heads is not None and args.num_heads < 1:
        p.error("--num-heads must be at least 1")
    if args.image_size is not None and min(args.image_size) < 1:
        p.error("--image-size values must be positive")
    if args.mean is not None and not all(math.isfinite(m) for m in args.mean):
        p.error("--mean values must be finite numbers")
    if args.std is not None and min(args.std) <= 0:
        p.error("--std values must be greater than 0")
    if args.crop_pct is not None and not 0 < args.crop_pct <= 1:
        p.error(f"--crop-pct must be in (0, 1], got {args.crop_pct:g}")
    if args.resize is not None and args.resize < 1:
        p.error("--resize must be a positive number of pixels")
    return args


def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (1, one line already printed)
        return e.code if isinstance(e.code, int) else 1
    try:
        _load_torch()
        flavours = [f for a in vf.ARCHS.values() for f in a.flavours]
        if args.flavour is not None and args.flavour not in flavours:
            raise UsageError(f"argument --flavour: invalid choice: {args.flavour!r} (choose from "
                             f"{', '.join(repr(f) for f in flavours)})")
        return convert(args)
    except UsageError as e:
        sys.stderr.write(f"{PROG}: error: {e} (see --help)\n")
        return 1
    except ConvertError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        return 2
    except Exception as e:  # never a traceback for a bad input file
        if vf is not None and isinstance(e, vf.FormatError):
            sys.stderr.write(f"{PROG}: error: {e}\n")
            return 2
        if os.environ.get("VKVIT_DEBUG"):
            raise
        msg = str(e).splitlines()[0] if str(e) else ""
        sys.stderr.write(f"{PROG}: error: unexpected failure while converting {args.src} "
                         f"({type(e).__name__}: {msg}); set VKVIT_DEBUG=1 for a traceback\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
