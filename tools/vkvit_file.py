# SPDX-License-Identifier: Apache-2.0
"""vkvit model files: safetensors I/O and the `vkvit` metadata schema of docs/model-format.md.

A vkvit model is one safetensors file:

    u64 little-endian N | N bytes of JSON header (space-padded to a multiple of 8) | raw little-endian tensors

This module is the Python side of that contract.  `src/model/` is the C side; both apply the same rules, so a file
this module writes is one the C reader accepts, and a file this module rejects is one the C reader rejects
(tests/format/test_reader_agreement.py checks both on a corpus of hostile files): strict JSON with the limits of
docs/model-format.md ("JSON"), the safetensors rules, the `vkvit` document and its limits, and regular files only.

Public API (other tools import it; keep it stable):

    write_safetensors(path, tensors, metadata=None)
    read_safetensors(path) -> (tensors, metadata)
    write_model(path, tensors, vkvit)
    read_model(path) -> (tensors, vkvit)
    expected_tensors(vkvit) -> {name: shape}
    validate_model(tensors_or_shapes, vkvit) -> {name: shape}
    count_params(vkvit) -> int
    flops(vkvit) -> int                    (seed flop_count formulas, docs/math.md 8)
    flops_breakdown(vkvit) -> {term: int}  (the same number, itemised; `vkvit inspect` prints these)
    document(arch, flavour, name, config, preprocess, labels=None) -> vkvit   (a new document)
    describe_config(vkvit) -> {key: value} (the hyperparameters vkvit_describe_model reports, derived ones included)
    describe(path) -> dict                 (the whole document of vkvit_describe_model / `vkvit inspect --json`)
    ARCHS[name] -> Arch                    (per architecture: flavours, check, tensors, flops, describe)
    check_vkvit(vkvit) -> config           (validates the document without the tensors)
    vil_inner_dim(dim, flavour) -> int     (E = ceil(2·D/64)·64; 2·D for nxai)
    check_resnet_config(config) -> config  (the `resnet` config rules alone; tools/reference uses it)

Every failure raises `FormatError` (a ValueError) whose message is one sentence naming the tensor or field.
Only `torch`, `numpy` and the standard library are used (Debian's python3-torch; there is no safetensors package).
"""

import json
import math
import os
import stat
import struct

import numpy as np
import torch

FORMAT_VERSION = 1
MAX_HEADER_BYTES = 100 * 1024 * 1024  # the reader rejects larger headers (docs/model-format.md)
MAX_DIMS = 8
MAX_DIM = 65536  # every dimension, depth, head, class or register count (docs/model-format.md, Limits)
MAX_IMAGE = 8192  # image sides, patch size, resize_shorter
MAX_FILE_BYTES = 4 << 30  # files at most 4 GiB
OFFSET_LIMIT = 2**53  # shape entries and data_offsets are below it (exact in the C reader's doubles)
JSON_MAX_DEPTH = 64  # arrays and objects nested at most this deep
JSON_MAX_NUMBER = 32  # characters in one JSON number

# safetensors dtype name -> (element size in bytes, torch dtype, little-endian numpy storage dtype)
DTYPES = {
    "F32": (4, torch.float32, "<f4"),
    "F16": (2, torch.float16, "<f2"),
    "BF16": (2, torch.bfloat16, "<i2"),  # numpy has no bfloat16: move the raw 16-bit patterns
}
_TORCH_TO_NAME = {v[1]: k for k, v in DTYPES.items()}


class FormatError(ValueError):
    """A vkvit / safetensors file, tensor set or metadata document breaks docs/model-format.md."""


# ---------------------------------------------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------------------------------------------


def _tensor_bytes(name, t):
    """Raw little-endian bytes of tensor `t`, and its safetensors dtype name."""
    if not isinstance(t, torch.Tensor):
        raise FormatError(f"tensor {name} is a {type(t).__name__}, not a torch.Tensor")
    dtype = _TORCH_TO_NAME.get(t.dtype)
    if dtype is None:
        raise FormatError(f"tensor {name} has dtype {t.dtype}; only float32, float16 and bfloat16 can be stored")
    if t.dim() > MAX_DIMS:
        raise FormatError(f"tensor {name} has {t.dim()} dimensions; at most {MAX_DIMS} are allowed")
    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    arr = t.numpy().astype(DTYPES[dtype][2], copy=False)
    return dtype, arr.tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Write `tensors` ({name: torch.Tensor}, F32/F16/BF16) and string `metadata` to a safetensors file.

    The output is deterministic: tensors are laid out back to back in sorted-name order, the header is compact JSON
    with sorted keys, padded with spaces to a multiple of 8 bytes.  The file is written to `path + ".tmp"` first and
    renamed, so a failed write never leaves a half-written model behind.
    """
    if not isinstance(tensors, dict):
        raise FormatError("tensors must be a dict of name -> torch.Tensor")
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise FormatError("metadata must be a dict of string -> string")
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        if not isinstance(name, str) or name == "" or name == "__metadata__":
            raise FormatError(f"tensor name {name!r} is not allowed")
        dtype, blob = _tensor_bytes(name, tensors[name])
        header[name] = {
            "dtype": dtype,
            "shape": [int(d) for d in tensors[name].shape],
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    text += b" " * (-len(text) % 8)
    tmp = str(path) + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for blob in blobs:
                f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _is_int(x):
    return type(x) is int  # JSON integers only: bool, 3.0 and 3e0 are not integers


def _reject_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise FormatError(f"the header has the key {k!r} twice")
        out[k] = v
    return out


def _reject_constant(name):
    raise FormatError(f"the JSON text contains the non-standard JSON number {name}")


def _number_lexeme(lexeme):
    if len(lexeme) > JSON_MAX_NUMBER:
        raise FormatError(f"the JSON text has a number of {len(lexeme)} characters; at most {JSON_MAX_NUMBER} "
                          f"are allowed")


def _parse_int(lexeme):
    _number_lexeme(lexeme)
    return int(lexeme)


def _parse_float(lexeme):
    _number_lexeme(lexeme)
    return float(lexeme)


def _parse_float_integral(lexeme):
    # Inside the vkvit entry a number is its value, as in the C reader (cJSON keeps no lexeme): 8.0 is the integer 8.
    _number_lexeme(lexeme)
    v = float(lexeme)
    return int(v) if v.is_integer() else v


def _check_tree(value, what):
    """The rules Python's json module does not apply itself: nesting depth, U+0000, lone surrogates."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > JSON_MAX_DEPTH:
                raise FormatError(f"{what} nests arrays and objects more than {JSON_MAX_DEPTH} deep")
            items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
            for k, x in items:
                if k is not None:
                    stack.append((k, depth))
                stack.append((x, depth + 1))
        elif isinstance(v, str):
            if "\0" in v:
                raise FormatError(f"{what} has a string holding U+0000, which vkvit refuses")
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise FormatError(f"{what} has a string with an unpaired UTF-16 surrogate escape") from None


def _parse_json(raw, what, integral_floats=False):
    """Strict JSON as both readers apply it (docs/model-format.md, "JSON"): UTF-8, RFC 8259 grammar, no key twice in
    any object, no NaN / Infinity, numbers of at most 32 characters, nesting at most 64 deep, no U+0000, no lone
    surrogate.  `raw` is bytes or str."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(f"{what} is not valid UTF-8") from None
    try:
        value = json.loads(raw, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant,
                           parse_int=_parse_int, parse_float=_parse_float_integral if integral_floats else _parse_float)
    except FormatError as e:
        raise FormatError(f"{what}: {e}") from None
    except (ValueError, RecursionError) as e:
        raise FormatError(f"{what} is not valid JSON ({str(e).splitlines()[0]})") from None
    _check_tree(value, what)
    return value


def _parse_header(raw):
    return _parse_json(raw, "the header")


def read_safetensors(path):
    """Read a safetensors file and return ({name: torch.Tensor}, {key: str}); the metadata dict may be empty.

    The file is treated as hostile (docs/model-format.md, reader paragraph): header length < 2, past the end of the
    file or above 100 MiB; a header that is not a JSON object; a tensor entry without a known dtype, a shape of at most
    8 non-negative integers or two integer data_offsets; begin > end; end past the data section;
    end - begin != product(shape) * sizeof(dtype); and overlapping byte ranges are all rejected with a FormatError,
    and so is a header that is not strict JSON (_parse_json) and a path that is not a regular file (a FIFO is opened
    without blocking and refused).
    """
    # Opened without blocking (a FIFO opened plainly waits for a writer forever) and refused unless it is a regular
    # file, as the C reader does.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise FormatError(f"cannot open {path}: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FormatError(f"{path} is not a regular file (a FIFO, device or directory); vkvit reads only regular files")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    f = os.fdopen(fd, "rb")
    with f:
        size = st.st_size
        if size > MAX_FILE_BYTES:
            raise FormatError(f"the file is {size} bytes, more than the limit of {MAX_FILE_BYTES} bytes")
        if size < 8:
            raise FormatError(f"the file is {size} bytes long, too short for the 8-byte header length")
        (n,) = struct.unpack("<Q", f.read(8))
        if n < 2:
            raise FormatError(f"the header length {n} is below the minimum of 2 bytes")
        if n > MAX_HEADER_BYTES:
            raise FormatError(f"the header length {n} is above the limit of {MAX_HEADER_BYTES} bytes")
        if 8 + n > size:
            raise FormatError(f"the header length {n} runs past the end of the file ({size} bytes)")
        header = _parse_header(f.read(n))
        if not isinstance(header, dict):
            raise FormatError("the header is not a JSON object")
        data_len = size - 8 - n

        metadata = header.get("__metadata__", {})
        if not isinstance(metadata, dict):
            raise FormatError("__metadata__ is not a JSON object")
        for k, v in metadata.items():
            if not isinstance(v, str):
                raise FormatError(f"__metadata__ entry {k!r} is not a string")

        entries = []
        for name, e in header.items():
            if name == "__metadata__":
                continue
            if not isinstance(e, dict):
                raise FormatError(f"tensor {name} has an entry that is not a JSON object")
            dtype = e.get("dtype")
            if not isinstance(dtype, str) or dtype not in DTYPES:
                raise FormatError(f"tensor {name} has unknown dtype {dtype!r} (expected F32, F16 or BF16)")
            shape = e.get("shape")
            if (
                not isinstance(shape, list)
                or len(shape) > MAX_DIMS
                or not all(_is_int(d) and 0 <= d < OFFSET_LIMIT for d in shape)
            ):
                raise FormatError(f"tensor {name} has a shape that is not a list of at most {MAX_DIMS} "
                                  f"non-negative integers below 2^53: {shape!r}")
            offs = e.get("data_offsets")
            if not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) and 0 <= o < OFFSET_LIMIT for o in offs):
                raise FormatError(f"tensor {name} has data_offsets that are not two non-negative integers: {offs!r}")
            begin, end = offs
            if begin > end:
                raise FormatError(f"tensor {name} has data_offsets begin {begin} > end {end}")
            if end > data_len:
                raise FormatError(f"tensor {name} ends at byte {end}, past the end of the data section "
                                  f"({data_len} bytes)")
            nbytes = math.prod(shape) * DTYPES[dtype][0]
            if end - begin != nbytes:
                raise FormatError(f"tensor {name} covers {end - begin} bytes but its shape {shape} of {dtype} "
                                  f"needs {nbytes}")
            entries.append((begin, end, name, dtype, shape))

        prev = None
        for begin, end, name, _, _ in sorted(e for e in entries if e[1] > e[0]):
            if prev is not None and begin < prev[1]:
                raise FormatError(f"tensors {prev[0]} and {name} have overlapping byte ranges "
                                  f"([{prev[2]}, {prev[1]}) and [{begin}, {end}))")
            prev = (name, end, begin)

        tensors = {}
        base = 8 + n
        for begin, end, name, dtype, shape in sorted(entries, key=lambda e: e[2]):
            f.seek(base + begin)
            raw = f.read(end - begin)
            if len(raw) != end - begin:
                raise FormatError(f"tensor {name} could not be read completely (file truncated while reading)")
            arr = np.frombuffer(raw, dtype=DTYPES[dtype][2]).astype(DTYPES[dtype][2][1:], copy=True)
            t = torch.from_numpy(arr)
            if dtype == "BF16":
                t = t.view(torch.bfloat16)
            tensors[name] = t.reshape(shape)
    return tensors, dict(metadata)


# ---------------------------------------------------------------------------------------------------------------
# The `vkvit` metadata document
# ---------------------------------------------------------------------------------------------------------------

VIT5_KEYS = (
    "image_size", "patch_size", "in_chans", "dim", "depth", "num_heads", "mlp_hidden", "mlp_activation",
    "num_registers", "has_cls", "readout", "neck_dim", "qk_norm", "norm_eps", "qk_norm_eps", "rope_base",
    "reg_rope_base", "rope_pairing", "token_layout", "layer_scale", "grn", "bias", "num_classes",
)
VIT5_BIAS_KEYS = ("patch_embed", "qkv", "proj", "mlp", "head")
VIL_KEYS = (
    "image_size", "patch_size", "in_chans", "dim", "depth", "inner_dim", "num_heads", "qkv_block_size",
    "conv_kernel", "pooling", "norm_eps", "head_norm_eps", "num_classes",
)
# flavour -> (rope_pairing, token_layout)
VIT5_FLAVOUR_RULES = {"nvsubq": ("split_half", "patches_cls_regs"), "paper": ("adjacent", "cls_patches_regs")}


def _int(d, key, where, lo=1, hi=MAX_DIM):
    v = d.get(key) if isinstance(d, dict) else None
    if not _is_int(v) or v < lo or v > hi:
        raise FormatError(f"{where}.{key} must be an integer >= {lo} and <= {hi}, got {json.dumps(v)}")
    return v


def _num(d, key, where, positive=True):
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
        kind = "a positive finite number" if positive else "a finite number"
        raise FormatError(f"{where}.{key} must be {kind}, got {json.dumps(v)}")
    return v


# Ranges of the real-valued hyperparameters, as in src/model/config.c (docs/model-format.md, "Limits").
EPS_RANGE = (1e-30, 1.0)
ROPE_BASE_RANGE = (1.0, 1e12)
# preprocess: x' = (x - mean) / std in fp32 (src/model/config.c, VKVIT_PREPROCESS_*): outside these, 0, inf or NaN
PREPROCESS_MEAN_MAX = 1e6
PREPROCESS_STD_RANGE = (1e-6, 1e6)


def _num_in(d, key, where, lo_hi):
    v = _num(d, key, where)
    lo, hi = lo_hi
    if not lo <= v <= hi:
        raise FormatError(f"{where}.{key} = {v:g} is outside the supported range [{lo:g}, {hi:g}]")
    return v


def _bool(d, key, where):
    v = d.get(key)
    if not isinstance(v, bool):
        raise FormatError(f"{where}.{key} must be true or false, got {json.dumps(v)}")
    return v


def _choice(d, key, where, choices):
    v = d.get(key)
    if not isinstance(v, str) or v not in choices:
        raise FormatError(f"{where}.{key} must be one of {', '.join(choices)}, got {json.dumps(v)}")
    return v


def _pair(d, key, where):
    v = d.get(key)
    if not isinstance(v, list) or len(v) != 2 or not all(_is_int(x) and 1 <= x <= MAX_IMAGE for x in v):
        raise FormatError(f"{where}.{key} must be [H, W] with two positive integers, got {json.dumps(v)}")
    return v


def _check_keys(cfg, allowed, where):
    for k in cfg:
        if k not in allowed:
            raise FormatError(f"{where} has an unknown key {k!r}")
    for k in allowed:
        if k not in cfg:
            raise FormatError(f"{where} is missing the key {k!r}")


def _check_image(cfg):
    h, w = _pair(cfg, "image_size", "config")
    p = _int(cfg, "patch_size", "config", hi=MAX_IMAGE)
    if h % p or w % p:
        raise FormatError(f"config.image_size [{h}, {w}] is not divisible by config.patch_size {p}")
    if _int(cfg, "in_chans", "config") != 3:
        raise FormatError(f"config.in_chans must be 3 (RGB), got {cfg['in_chans']}")
    return h // p, w // p


def _check_vit5(cfg, flavour):
    _check_keys(cfg, VIT5_KEYS, "config")
    _check_image(cfg)
    c = _int(cfg, "dim", "config")
    _int(cfg, "depth", "config")
    h = _int(cfg, "num_heads", "config")
    if c % h:
        raise FormatError(f"config.dim {c} is not divisible by config.num_heads {h}")
    if (c // h) % 4:
        raise FormatError(f"config head dim {c // h} (dim {c} / num_heads {h}) is not a multiple of 4, "
                          f"which 2-D RoPE needs")
    _int(cfg, "mlp_hidden", "config")
    _choice(cfg, "mlp_activation", "config", ("gelu",))
    r = _int(cfg, "num_registers", "config", lo=0)
    if r and math.isqrt(r) ** 2 != r:
        raise FormatError(f"config.num_registers {r} is neither 0 nor a perfect square (the register RoPE grid "
                          f"is square)")
    has_cls = _bool(cfg, "has_cls", "config")
    readout = _choice(cfg, "readout", "config", ("cls", "gap", "register_concat"))
    neck = _int(cfg, "neck_dim", "config", lo=0)
    if readout == "cls" and not has_cls:
        raise FormatError("config.readout is cls but config.has_cls is false")
    if readout == "register_concat":
        if r == 0:
            raise FormatError("config.readout is register_concat but config.num_registers is 0")
        if neck == 0:
            raise FormatError("config.readout is register_concat but config.neck_dim is 0")
        if r * neck > MAX_DIM:
            raise FormatError(f"config.num_registers * config.neck_dim = {r} * {neck} (the head width) is above "
                              f"{MAX_DIM}")
    elif neck != 0:
        raise FormatError(f"config.neck_dim is {neck} but must be 0 unless config.readout is register_concat")
    _bool(cfg, "qk_norm", "config")
    for k in ("norm_eps", "qk_norm_eps"):
        _num_in(cfg, k, "config", EPS_RANGE)
    for k in ("rope_base", "reg_rope_base"):
        _num_in(cfg, k, "config", ROPE_BASE_RANGE)
    pairing = _choice(cfg, "rope_pairing", "config", ("split_half", "adjacent"))
    layout = _choice(cfg, "token_layout", "config", ("patches_cls_regs", "cls_patches_regs"))
    want_pairing, want_layout = VIT5_FLAVOUR_RULES[flavour]
    if pairing != want_pairing:
        raise FormatError(f"config.rope_pairing must be {want_pairing} for flavour {flavour}, got {pairing}")
    if layout != want_layout:
        raise FormatError(f"config.token_layout must be {want_layout} for flavour {flavour}, got {layout}")
    _bool(cfg, "layer_scale", "config")
    _bool(cfg, "grn", "config")
    bias = cfg.get("bias")
    if not isinstance(bias, dict):
        raise FormatError(f"config.bias must be an object with keys {', '.join(VIT5_BIAS_KEYS)}")
    _check_keys(bias, VIT5_BIAS_KEYS, "config.bias")
    for k in VIT5_BIAS_KEYS:
        _bool(bias, k, "config.bias")
    _int(cfg, "num_classes", "config")


def vil_inner_dim(dim, flavour="seed"):
    """E = ceil(2·D/64)·64 (seed 004's mLSTMCell with proj_factor 2); exactly 2·D for NX-AI's official ViL."""
    return 2 * dim if flavour == "nxai" else -(-2 * dim // 64) * 64


def _check_vil(cfg, flavour):
    _check_keys(cfg, VIL_KEYS, "config")
    _check_image(cfg)
    d = _int(cfg, "dim", "config")
    _int(cfg, "depth", "config")
    e = _int(cfg, "inner_dim", "config", hi=2 * MAX_DIM)
    # nxai: the official 2*dim, or the rounded value earlier converters wrote (as src/arch/vil.c).
    if flavour == "nxai" and e not in (2 * d, vil_inner_dim(d)):
        raise FormatError(f"config.inner_dim {e} is neither 2*dim = {2 * d} nor ceil(2*dim/64)*64 = "
                          f"{vil_inner_dim(d)} (flavour nxai)")
    if flavour != "nxai" and e != vil_inner_dim(d):
        raise FormatError(f"config.inner_dim {e} does not equal ceil(2*dim/64)*64 = {vil_inner_dim(d)} "
                          f"for dim {d}")
    nh = _int(cfg, "num_heads", "config")
    if e % nh:
        raise FormatError(f"config.inner_dim {e} is not divisible by config.num_heads {nh}")
    bs = _int(cfg, "qkv_block_size", "config")
    if bs != 4:
        raise FormatError(f"config.qkv_block_size {bs} is not 4 (q/k/v projections are 4x4 blocks)")
    if e % bs:
        raise FormatError(f"config.inner_dim {e} is not divisible by config.qkv_block_size {bs}")
    _int(cfg, "conv_kernel", "config")
    _choice(cfg, "pooling", "config", ("bilateral_avg",))
    _num_in(cfg, "norm_eps", "config", EPS_RANGE)
    _num_in(cfg, "head_norm_eps", "config", EPS_RANGE)
    _int(cfg, "num_classes", "config")


# `resnet` (docs/model-format.md): one block config shared by all blocks; each branch is a typed object.
RESNET_KEYS = (
    "image_size", "patch_size", "in_chans", "dim", "depth", "pos_embed", "block", "condition_tokens",
    "condition_dim", "readout", "out_norm", "bias", "num_classes",
)
RESNET_BLOCK_KEYS = ("input_norm", "sequence_mixer", "condition_mixer_norm", "condition_mixer", "mlp_norm", "mlp")
RESNET_BIAS_KEYS = ("patch_embed", "head")
RESNET_NORM_KEYS = {"rmsnorm": ("type", "eps"), "layernorm": ("type", "eps", "bias"), "identity": ("type",)}
RESNET_MIXER_KEYS = {
    "sequence_mixer": {"attention": ("type", "num_heads", "qk_norm", "rope", "rope_base", "causal", "bias"),
                       "identity": ("type",)},
    "condition_mixer": {"attention": ("type", "num_heads", "qk_norm", "causal"), "identity": ("type",)},
    "mlp": {"mlp": ("type", "activation", "hidden", "bias"), "identity": ("type",)},
}
RESNET_NORM_OF = {"sequence_mixer": "input_norm", "condition_mixer": "condition_mixer_norm", "mlp": "mlp_norm"}
MLP_ACTIVATIONS = ("relu", "gelu", "silu", "glu", "swiglu")


def _typed(obj, where, kinds):
    """A JSON object whose "type" is one of `kinds` (a dict type -> allowed keys); all of that type's keys."""
    if not isinstance(obj, dict):
        raise FormatError(f"{where} must be an object with a \"type\" key, got {json.dumps(obj)}")
    kind = _choice(obj, "type", where, tuple(kinds))
    _check_keys(obj, kinds[kind], where)
    return kind


def _check_norm(obj, where):
    kind = _typed(obj, where, RESNET_NORM_KEYS)
    if kind != "identity":
        _num_in(obj, "eps", where, EPS_RANGE)
    if kind == "layernorm":
        _bool(obj, "bias", where)
    return kind


def check_resnet_config(cfg):
    """Validate a `resnet` config dict (docs/model-format.md); FormatError with one sentence otherwise."""
    if not isinstance(cfg, dict):
        raise FormatError("config must be a JSON object")
    _check_keys(cfg, RESNET_KEYS, "config")
    _check_image(cfg)
    c = _int(cfg, "dim", "config")
    _int(cfg, "depth", "config")
    _bool(cfg, "pos_embed", "config")
    blk = cfg.get("block")
    if not isinstance(blk, dict):
        raise FormatError(f"config.block must be an object with keys {', '.join(RESNET_BLOCK_KEYS)}")
    _check_keys(blk, RESNET_BLOCK_KEYS, "config.block")
    kinds = {}
    for name in RESNET_BLOCK_KEYS:
        where = f"config.block.{name}"
        kinds[name] = _check_norm(blk[name], where) if name.endswith("norm") else \
            _typed(blk[name], where, RESNET_MIXER_KEYS[name])
    for name, norm in RESNET_NORM_OF.items():
        if kinds[name] == "identity" and kinds[norm] != "identity":
            raise FormatError(f"config.block.{name} is identity, so config.block.{norm} must be identity too "
                              f"(seed 002: a bypassed branch has no norm), got {kinds[norm]}")
    for name in ("sequence_mixer", "condition_mixer"):
        if kinds[name] != "attention":
            continue
        m, where = blk[name], f"config.block.{name}"
        h = _int(m, "num_heads", where)
        if c % h:
            raise FormatError(f"{where}.num_heads {h} does not divide config.dim {c}")
        _bool(m, "qk_norm", where)
        _bool(m, "causal", where)
        if name == "sequence_mixer":
            _bool(m, "bias", where)
            _num_in(m, "rope_base", where, ROPE_BASE_RANGE)
            if _bool(m, "rope", where) and (c // h) % 4:
                raise FormatError(f"{where}.rope needs a head dim divisible by 4 (2-D RoPE rotates quarters), but "
                                  f"config.dim {c} / num_heads {h} = {c // h}")
    if kinds["mlp"] == "mlp":
        m = blk["mlp"]
        _choice(m, "activation", "config.block.mlp", MLP_ACTIVATIONS)
        _int(m, "hidden", "config.block.mlp")
        _bool(m, "bias", "config.block.mlp")
    tc = _int(cfg, "condition_tokens", "config", lo=0)
    cd = _int(cfg, "condition_dim", "config", lo=0)
    if kinds["condition_mixer"] != "identity":
        if cd != c:
            raise FormatError(f"config.condition_dim {cd} must equal config.dim {c} (the condition mixer projects "
                              f"C-channel conditions)")
    elif tc or cd:
        raise FormatError(f"config.condition_tokens {tc} and config.condition_dim {cd} must be 0 when "
                          f"config.block.condition_mixer is identity (the network takes no condition)")
    _choice(cfg, "readout", "config", ("gap",))
    _check_norm(cfg.get("out_norm"), "config.out_norm")
    bias = cfg.get("bias")
    if not isinstance(bias, dict):
        raise FormatError(f"config.bias must be an object with keys {', '.join(RESNET_BIAS_KEYS)}")
    _check_keys(bias, RESNET_BIAS_KEYS, "config.bias")
    for k in RESNET_BIAS_KEYS:
        _bool(bias, k, "config.bias")
    _int(cfg, "num_classes", "config")
    return cfg


def _check_preprocess(pp, cfg):
    if not isinstance(pp, dict):
        raise FormatError("preprocess must be a JSON object")
    size = _pair(pp, "image_size", "preprocess")
    if size != cfg["image_size"]:
        raise FormatError(f"preprocess.image_size {size} differs from config.image_size {cfg['image_size']}")
    rs = _int(pp, "resize_shorter", "preprocess", hi=MAX_IMAGE)
    if rs < max(size):
        raise FormatError(f"preprocess.resize_shorter {rs} is smaller than the {max(size)}-pixel crop "
                          f"preprocess.image_size {size}")
    _choice(pp, "interpolation", "preprocess", ("bicubic", "bilinear"))
    for key in ("mean", "std"):
        v = pp.get(key)
        if (
            not isinstance(v, list)
            or len(v) != cfg["in_chans"]
            or not all(not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) for x in v)
        ):
            raise FormatError(f"preprocess.{key} must be a list of {cfg['in_chans']} finite numbers, "
                              f"got {json.dumps(v)}")
        if key == "std" and not all(x > 0 for x in v):
            raise FormatError(f"preprocess.std must be positive, got {json.dumps(v)}")
        lo, hi = PREPROCESS_STD_RANGE if key == "std" else (-PREPROCESS_MEAN_MAX, PREPROCESS_MEAN_MAX)
        if not all(lo <= x <= hi for x in v):
            raise FormatError(f"preprocess.{key} = {json.dumps(v)} is outside the supported range [{lo:g}, {hi:g}]")


def check_vkvit(vkvit):
    """Validate the whole `vkvit` document (everything but the tensors); return its config dict."""
    if not isinstance(vkvit, dict):
        raise FormatError("the vkvit entry is not a JSON object")
    fv = vkvit.get("format_version")
    if not _is_int(fv) or fv != FORMAT_VERSION:
        raise FormatError(f"format_version {json.dumps(fv)} is not supported (expected {FORMAT_VERSION})")
    arch = vkvit.get("architecture")
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise FormatError(f"architecture {json.dumps(arch)} is unknown (expected vit5, vil or resnet)")
    flavour = vkvit.get("flavour")
    if not isinstance(flavour, str) or flavour not in ARCHITECTURES[arch]:
        raise FormatError(f"flavour {json.dumps(flavour)} is unknown for architecture {arch} "
                          f"(expected {' or '.join(ARCHITECTURES[arch])})")
    if "name" in vkvit and not isinstance(vkvit["name"], str):
        raise FormatError("name must be a string")
    cfg = vkvit.get("config")
    if not isinstance(cfg, dict):
        raise FormatError("config must be a JSON object")
    ARCHS[arch].check(cfg, flavour)
    if "preprocess" not in vkvit:
        raise FormatError("the vkvit entry is missing the key 'preprocess'")
    _check_preprocess(vkvit["preprocess"], cfg)
    if "labels" in vkvit:
        labels = vkvit["labels"]
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise FormatError("labels must be a list of strings")
        if len(labels) != cfg["num_classes"]:
            raise FormatError(f"labels has {len(labels)} entries but config.num_classes is {cfg['num_classes']}")
    return cfg


def _vit5_tensors(c):
    C, P, R, L = c["dim"], c["patch_size"], c["num_registers"], c["depth"]
    dk = C // c["num_heads"]
    Hd = c["mlp_hidden"]
    np_ = (c["image_size"][0] // P) * (c["image_size"][1] // P)
    b = c["bias"]
    neck = c["neck_dim"]
    head_in = R * neck if c["readout"] == "register_concat" else C
    t = {"patch_embed.weight": (C, c["in_chans"], P, P)}
    if b["patch_embed"]:
        t["patch_embed.bias"] = (C,)
    t["pos_embed"] = (1, np_, C)
    if c["has_cls"]:
        t["cls_token"] = (1, 1, C)
    if R > 0:
        t["reg_token"] = (1, R, C)
    for i in range(L):
        p = f"blocks.{i}."
        t[p + "input_norm.weight"] = (C,)
        t[p + "sequence_mixer.qkv.weight"] = (3 * C, C)
        if b["qkv"]:
            t[p + "sequence_mixer.qkv.bias"] = (3 * C,)
        t[p + "sequence_mixer.proj.weight"] = (C, C)
        if b["proj"]:
            t[p + "sequence_mixer.proj.bias"] = (C,)
        if c["qk_norm"]:
            t[p + "sequence_mixer.q_norm.weight"] = (dk,)
            t[p + "sequence_mixer.k_norm.weight"] = (dk,)
        if c["grn"]:
            t[p + "grn.gamma"] = (C,)
            t[p + "grn.beta"] = (C,)
        t[p + "mlp_norm.weight"] = (C,)
        t[p + "mlp.layer1.weight"] = (Hd, C)
        if b["mlp"]:
            t[p + "mlp.layer1.bias"] = (Hd,)
        t[p + "mlp.layer2.weight"] = (C, Hd)
        if b["mlp"]:
            t[p + "mlp.layer2.bias"] = (C,)
        if c["layer_scale"]:
            t[p + "ls_attn.gamma"] = (C,)
            t[p + "ls_mlp.gamma"] = (C,)
    if c["readout"] == "register_concat":
        t["neck.weight"] = (neck, C)
    t["out_norm.weight"] = (head_in,)
    t["out_proj.weight"] = (c["num_classes"], head_in)
    if b["head"]:
        t["out_proj.bias"] = (c["num_classes"],)
    return t


def _vil_tensors(c, flavour):
    D, E, P, L = c["dim"], c["inner_dim"], c["patch_size"], c["depth"]
    nh, bs, k = c["num_heads"], c["qkv_block_size"], c["conv_kernel"]
    hp, wp = c["image_size"][0] // P, c["image_size"][1] // P
    t = {
        "patch_embed.proj.weight": (D, c["in_chans"], P, P),
        "patch_embed.proj.bias": (D,),
        "pos_embed.embed": (1, hp, wp, D),
    }
    for i in range(L):
        p = f"blocks.{i}."
        m = p + "mlstm."
        t[p + "norm1.weight"] = (D,)
        t[m + "proj_up.weight"] = (2 * E, D)
        t[m + "conv1d.weight"] = (E, 1, k)
        t[m + "conv1d.bias"] = (E,)
        for q in ("q_proj", "k_proj", "v_proj"):
            t[m + q + ".weight"] = (E // bs, bs, bs)
        for g in ("igate", "fgate"):
            t[m + g + ".weight"] = (nh, 3 * E)
            t[m + g + ".bias"] = (nh,)
        t[m + "outnorm.weight"] = (E,)
        if flavour == "seed":
            t[m + "outnorm.bias"] = (E,)
        t[m + "proj_down.weight"] = (D, E)
        t[m + "learnable_skip"] = (E,)
        if flavour == "seed":
            t[m + "layerscale"] = (E,)
    t["legacy_norm.weight"] = (D,)
    t["norm.weight"] = (D,)
    t["norm.bias"] = (D,)
    t["head.weight"] = (c["num_classes"], D)
    t["head.bias"] = (c["num_classes"],)
    return t


def _resnet_norm_tensors(t, name, spec, C):
    if spec["type"] != "identity":
        t[name + ".weight"] = (C,)
    if spec["type"] == "layernorm" and spec["bias"]:
        t[name + ".bias"] = (C,)


def _resnet_tensors(c):
    C, P, L = c["dim"], c["patch_size"], c["depth"]
    hp, wp = c["image_size"][0] // P, c["image_size"][1] // P
    blk, b = c["block"], c["bias"]
    t = {"patch_embed.weight": (C, c["in_chans"], P, P)}
    if b["patch_embed"]:
        t["patch_embed.bias"] = (C,)
    if c["pos_embed"]:
        t["pos_embed"] = (1, hp, wp, C)
    seq, cond, mlp = blk["sequence_mixer"], blk["condition_mixer"], blk["mlp"]
    for i in range(L):
        p = f"blocks.{i}."
        _resnet_norm_tensors(t, p + "input_norm", blk["input_norm"], C)
        if seq["type"] == "attention":
            t[p + "sequence_mixer.qkv_proj.weight"] = (3 * C, C)
            if seq["bias"]:
                t[p + "sequence_mixer.qkv_proj.bias"] = (3 * C,)
            t[p + "sequence_mixer.out_proj.weight"] = (C, C)
            if seq["bias"]:
                t[p + "sequence_mixer.out_proj.bias"] = (C,)
        _resnet_norm_tensors(t, p + "condition_mixer_norm", blk["condition_mixer_norm"], C)
        if cond["type"] == "attention":
            t[p + "condition_mixer.kv_proj.weight"] = (2 * C, C)
            t[p + "condition_mixer.q_proj.weight"] = (C, C)
            t[p + "condition_mixer.out_proj.weight"] = (C, C)
        _resnet_norm_tensors(t, p + "mlp_norm", blk["mlp_norm"], C)
        if mlp["type"] == "mlp":
            hd = mlp["hidden"]
            gf = 2 if mlp["activation"] in ("glu", "swiglu") else 1
            t[p + "mlp.layer1.weight"] = (gf * hd, C)
            if mlp["bias"]:
                t[p + "mlp.layer1.bias"] = (gf * hd,)
            t[p + "mlp.layer2.weight"] = (C, hd)
            if mlp["bias"]:
                t[p + "mlp.layer2.bias"] = (C,)
    _resnet_norm_tensors(t, "out_norm", c["out_norm"], C)
    t["out_proj.weight"] = (c["num_classes"], C)
    if b["head"]:
        t["out_proj.bias"] = (c["num_classes"],)
    return t


def expected_tensors(vkvit):
    """The exact tensor table of docs/model-format.md for this `vkvit` document: {name: shape tuple}.

    Raises FormatError (a ValueError) with one sentence when a field is missing, unknown, of the wrong type or
    inconsistent with another (C % H, dk % 4, R, readout / has_cls / R, flavour rules, E, image divisibility, ...).
    """
    cfg = check_vkvit(vkvit)
    return ARCHS[vkvit["architecture"]].tensors(cfg, vkvit["flavour"])


def _fmt_shape(s):
    return "[" + ", ".join(str(int(d)) for d in s) + "]"


def validate_model(tensors, vkvit):
    """Check that `tensors` ({name: shape} or {name: tensor}) is exactly the tensor set `vkvit` describes.

    Every expected tensor must be present with the right shape and nothing else may be there.  Returns the expected
    table; raises FormatError naming the first offending tensor (in sorted order) otherwise.
    """
    exp = expected_tensors(vkvit)
    shapes = {k: tuple(int(d) for d in (v.shape if hasattr(v, "shape") else v)) for k, v in tensors.items()}
    where = f"architecture {vkvit['architecture']} (flavour {vkvit['flavour']})"
    for name in sorted(exp):
        if name not in shapes:
            raise FormatError(f"tensor {name} is missing (expected shape {_fmt_shape(exp[name])})")
        if shapes[name] != tuple(exp[name]):
            raise FormatError(f"tensor {name} has shape {_fmt_shape(shapes[name])}, expected "
                              f"{_fmt_shape(exp[name])}")
    for name in sorted(shapes):
        if name not in exp:
            raise FormatError(f"tensor {name} is not used by {where}")
    return exp


def write_model(path, tensors, vkvit):
    """Validate `vkvit` and the tensor set, then write a vkvit model file (metadata key "vkvit")."""
    validate_model(tensors, vkvit)
    write_safetensors(path, tensors, {"vkvit": json.dumps(vkvit, sort_keys=True)})


def read_model(path):
    """Read and fully validate a vkvit model file; return (tensors, vkvit dict)."""
    tensors, metadata = read_safetensors(path)
    if "vkvit" not in metadata:
        raise FormatError("the file has no vkvit entry in __metadata__ (not a vkvit model)")
    vkvit = _parse_json(metadata["vkvit"], "the vkvit entry", integral_floats=True)
    validate_model(tensors, vkvit)
    return tensors, vkvit


def count_params(vkvit):
    """Number of stored parameters (sum of the element counts of the expected tensors)."""
    return sum(math.prod(s) for s in expected_tensors(vkvit).values())


# ---------------------------------------------------------------------------------------------------------------
# FLOPs (docs/math.md 8; 1 MAC = 2 FLOPs, 1 FLOP per elementwise op; biases are not counted, as upstream)
# ---------------------------------------------------------------------------------------------------------------


def _vit5_flops(c):
    # Seed-literal upstream ViT5ClassificationNet.flop_count for one image.  T counts the tokens an attention block
    # sees (no Hyena padding).  The QK-norm term is the literal upstream 2·3·T·dk: the shipped RMSNorm(dk) reports
    # one head's cost, H times less than the all-heads count (docs/math.md 8 / 9.8).
    C, P, R, L = c["dim"], c["patch_size"], c["num_registers"], c["depth"]
    Hd, dk = c["mlp_hidden"], c["dim"] // c["num_heads"]
    Np = (c["image_size"][0] // P) * (c["image_size"][1] // P)
    T = Np + (1 if c["has_cls"] else 0) + R
    neck = c["neck_dim"]
    head_in = R * neck if c["readout"] == "register_concat" else C
    attn = 8 * T * C * C + 4 * T * T * C + 4 * T * C + (2 * 3 * T * dk if c["qk_norm"] else 0)
    ls = T * C if c["layer_scale"] else 0                                   # LayerScale.flop_count(T) = T·C
    mlp = 2 * T * C * Hd + T * Hd + 2 * T * Hd * C                            # MLP, gelu (glu factor 1)
    block = (3 * T * C                                                      # input_norm  (RMSNorm 3·T·C)
             + attn                                                         # sequence_mixer
             + (6 * T * C if c["grn"] else 0)                               # GRN 6·T·C
             + ls + 3 * T * C + mlp + ls)                                   # ls_attn, mlp_norm, mlp, ls_mlp
    out = {
        "patch_embed": 2 * c["in_chans"] * C * P * P * Np,
        "pos_embed": Np * C,
        "attention_per_block": attn,
        "block": block,
        "blocks": L * block,
        "readout": (Np * C if c["readout"] == "gap" else 0)
        + (R * 2 * C * neck if c["readout"] == "register_concat" else 0),
        "out_norm": 3 * head_in,                                           # out_norm.flop_count(1)
        "head": 2 * head_in * c["num_classes"],
    }
    out["total"] = sum(v for k, v in out.items() if k not in ("attention_per_block", "block"))
    return out


def _vil_flops(c, flavour):
    # Derived per-block count of docs/math.md 8 (mLSTM block, parallel form), with S = Hp·Wp tokens, D, E,
    # NH memory heads, K = conv kernel, bs = qkv block size:
    #   norm1 5SD | proj_up 2·S·D·2E = 4SDE | causal depthwise conv 2·K·S·E (8SE at K=4)
    #   headwise q,k,v 3·2·S·E·bs (24SE at bs=4) | gates 2·2·S·3E·NH (48SE at NH=4)
    #   cell, parallel form 4S²E + 5·NH·S² (gate matrix) | outnorm 5SE | skip, z-gate and SiLU 6SE
    #   proj_down 2SED | layerscale SD (seed flavour only; nxai has no layerscale)
    # Network (official v1 VisionLSTM, the same conventions as ViT-5): patch embed 2·in_chans·D·P²·S (conv bias not
    # counted), pos-embed add S·D, legacy_norm 5SD (it is applied to every token), bilateral_avg pooling 2D (add
    # and halve), head LayerNorm 5D, head 2·D·classes.
    D, E, P, L = c["dim"], c["inner_dim"], c["patch_size"], c["depth"]
    NH, K, bs = c["num_heads"], c["conv_kernel"], c["qkv_block_size"]
    S = (c["image_size"][0] // P) * (c["image_size"][1] // P)
    cell = 4 * S * S * E + 5 * NH * S * S
    block = (5 * S * D + 4 * S * D * E + 2 * K * S * E + 3 * 2 * S * E * bs + 2 * 2 * S * 3 * E * NH
             + cell + 5 * S * E + 6 * S * E + 2 * S * E * D + (S * D if flavour == "seed" else 0))
    out = {
        "patch_embed": 2 * c["in_chans"] * D * P * P * S,
        "pos_embed": S * D,
        "cell_per_block": cell,
        "block": block,
        "blocks": L * block,
        "readout": 5 * S * D + 2 * D,                                       # legacy_norm + bilateral_avg pooling
        "out_norm": 5 * D,                                                  # the head LayerNorm
        "head": 2 * D * c["num_classes"],
    }
    out["total"] = sum(v for k, v in out.items() if k not in ("cell_per_block", "block"))
    return out


def _norm_flops(spec, T, C):
    return {"rmsnorm": 3 * T * C, "layernorm": 5 * T * C, "identity": 0}[spec["type"]]


def _resnet_flops(c):
    # Derived (docs/math.md 8; seeds 002/003 define none), one image, T = Hp·Wp tokens, Tc = max(condition_tokens, 1):
    #   norms: RMSNorm 3·T·C, LayerNorm 5·T·C, identity 0 (each counted only where its branch is active)
    #   QKVSequenceMixer 2T·C·3C + 4·T·T·C (generic Attention: QKᵀ and AV; RoPE and L2 norm not counted) + 2T·C²
    #   QKVConditionMixer 2T·C² (q) + 4·Tc·C² (kv) + 4·T·Tc·C (attention) + 2T·C² (out)
    #   MLP 2·T·C·(Hd·gf) + T·Hd·(2 if glu/swiglu else 1) + 2·T·Hd·C
    # Network: patch embed 2·in_chans·C·P²·T, pos-embed add T·C, GAP T·C, out_norm(1), head 2·C·classes.
    C, P, L = c["dim"], c["patch_size"], c["depth"]
    T = (c["image_size"][0] // P) * (c["image_size"][1] // P)
    Tc = max(c["condition_tokens"], 1)
    blk = c["block"]
    seq = cond = 0
    block = 0
    if blk["sequence_mixer"]["type"] == "attention":
        seq = 2 * T * C * 3 * C + 4 * T * T * C + 2 * T * C * C
        block += _norm_flops(blk["input_norm"], T, C) + seq
    if blk["condition_mixer"]["type"] == "attention":
        cond = 2 * T * C * C + 4 * Tc * C * C + 4 * T * Tc * C + 2 * T * C * C
        block += _norm_flops(blk["condition_mixer_norm"], T, C) + cond
    if blk["mlp"]["type"] == "mlp":
        hd = blk["mlp"]["hidden"]
        glu = blk["mlp"]["activation"] in ("glu", "swiglu")
        gf = 2 if glu else 1
        block += _norm_flops(blk["mlp_norm"], T, C) + 2 * T * C * hd * gf + T * hd * gf + 2 * T * hd * C
    out = {
        "patch_embed": 2 * c["in_chans"] * C * P * P * T,
        "pos_embed": T * C if c["pos_embed"] else 0,
        "sequence_mixer_per_block": seq,
        "condition_mixer_per_block": cond,
        "block": block,
        "blocks": L * block,
        "readout": T * C,
        "out_norm": _norm_flops(c["out_norm"], 1, C),
        "head": 2 * C * c["num_classes"],
    }
    out["total"] = sum(v for k, v in out.items()
                       if k not in ("sequence_mixer_per_block", "condition_mixer_per_block", "block"))
    return out


def flops_breakdown(vkvit):
    """FLOPs of one image, itemised as vkvit_describe_model's flops_breakdown (plus `total`, what `flops` returns)."""
    cfg = check_vkvit(vkvit)
    return ARCHS[vkvit["architecture"]].flops(cfg, vkvit["flavour"])


def flops(vkvit):
    """FLOPs of one forward pass of one image (seed flop_count formulas; docs/math.md 8)."""
    return flops_breakdown(vkvit)["total"]



# ---------------------------------------------------------------------------------------------------------------
# describe: the JSON document of vkvit_describe_model (`vkvit inspect --json`), member for member and in the same
# order, so the two readers can be compared on any file (tests/format/test_reader_agreement.py)
# ---------------------------------------------------------------------------------------------------------------


def _grid(c):
    return [c["image_size"][0] // c["patch_size"], c["image_size"][1] // c["patch_size"]]


def _vit5_describe(c, flavour):
    hp, wp = _grid(c)
    np_ = hp * wp
    r, neck = c["num_registers"], c["neck_dim"]
    return {
        "image_size": list(c["image_size"]), "patch_size": c["patch_size"], "grid": [hp, wp], "patches": np_,
        "tokens": np_ + (1 if c["has_cls"] else 0) + r, "dim": c["dim"], "depth": c["depth"],
        "num_heads": c["num_heads"], "head_dim": c["dim"] // c["num_heads"], "mlp_hidden": c["mlp_hidden"],
        "num_registers": r, "has_cls": c["has_cls"], "readout": c["readout"], "neck_dim": neck,
        "head_in": r * neck if c["readout"] == "register_concat" else c["dim"], "qk_norm": c["qk_norm"],
        "layer_scale": c["layer_scale"], "grn": c["grn"], "rope_pairing": c["rope_pairing"],
        "token_layout": {"patches_cls_regs": "patches, CLS, registers",
                         "cls_patches_regs": "CLS, patches, registers"}[c["token_layout"]],
        "mlp_activation": c["mlp_activation"],
        "bias": {k: c["bias"][k] for k in VIT5_BIAS_KEYS},
    }


def _vil_describe(c, flavour):
    hp, wp = _grid(c)
    e = c["inner_dim"]
    return {
        "image_size": list(c["image_size"]), "patch_size": c["patch_size"], "grid": [hp, wp], "tokens": hp * wp,
        "dim": c["dim"], "depth": c["depth"], "inner_dim": e, "num_heads": c["num_heads"],
        "head_dim": e // c["num_heads"], "num_proj_heads": e // c["qkv_block_size"], "conv_kernel": c["conv_kernel"],
        "qkv_block_size": c["qkv_block_size"], "pooling": c["pooling"],
    }


def _resnet_norm_describe(spec):
    kind = spec["type"]
    return {"kind": kind, "eps": spec.get("eps", 0) if kind != "identity" else 0,
            "bias": bool(spec.get("bias", False)) if kind == "layernorm" else False}


def _resnet_describe(c, flavour):
    hp, wp = _grid(c)
    C, blk = c["dim"], c["block"]
    seq, cond, mlp = blk["sequence_mixer"], blk["condition_mixer"], blk["mlp"]
    sm = {"type": seq["type"]}
    if seq["type"] == "attention":
        sm.update(num_heads=seq["num_heads"], rope=seq["rope"], qk_norm=seq["qk_norm"], causal=seq["causal"],
                  bias=seq["bias"], head_dim=C // seq["num_heads"])
    cm = {"type": cond["type"]}
    if cond["type"] == "attention":
        cm.update(num_heads=cond["num_heads"], qk_norm=cond["qk_norm"], causal=cond["causal"],
                  head_dim=C // cond["num_heads"])
    mm = {"type": mlp["type"]}
    if mlp["type"] == "mlp":
        mm.update(activation=mlp["activation"], hidden=mlp["hidden"], bias=mlp["bias"],
                  glu_factor=2 if mlp["activation"] in ("glu", "swiglu") else 1)
    return {
        "image_size": list(c["image_size"]), "patch_size": c["patch_size"], "grid": [hp, wp], "tokens": hp * wp,
        "dim": C, "depth": c["depth"], "pos_embed": c["pos_embed"],
        "block": {"input_norm": blk["input_norm"]["type"], "sequence_mixer": sm,
                  "condition_mixer_norm": blk["condition_mixer_norm"]["type"], "condition_mixer": cm,
                  "mlp_norm": blk["mlp_norm"]["type"], "mlp": mm},
        "condition_tokens": c["condition_tokens"], "condition_dim": c["condition_dim"], "readout": c["readout"],
        "out_norm": c["out_norm"]["type"],
        "norms": {name: _resnet_norm_describe(spec) for name, spec in (
            ("input_norm", blk["input_norm"]), ("condition_mixer_norm", blk["condition_mixer_norm"]),
            ("mlp_norm", blk["mlp_norm"]), ("out_norm", c["out_norm"]))},
        "bias": {k: c["bias"][k] for k in RESNET_BIAS_KEYS},
    }


def document(architecture, flavour, name, config, preprocess, labels=None):
    """A `vkvit` document (docs/model-format.md): format_version, architecture, flavour, name, config, preprocess and,
    when given, labels.  Not validated here (write_model / check_vkvit do that)."""
    doc = {"format_version": FORMAT_VERSION, "architecture": architecture, "flavour": flavour, "name": name,
           "config": config, "preprocess": preprocess}
    if labels is not None:
        doc["labels"] = list(labels)
    return doc


def describe_config(vkvit):
    """The hyperparameters vkvit_describe_model reports for this document (derived numbers included: grid, tokens,
    head dims, ...), in its order: {"image_size": [H, W], "patch_size": P, "grid": [Hp, Wp], "tokens": T, ...}."""
    cfg = check_vkvit(vkvit)
    return ARCHS[vkvit["architecture"]].describe(cfg, vkvit["flavour"])


def describe(path):
    """The JSON document `vkvit inspect --json PATH` prints (vkvit_describe_model), as a dict: file, file_size,
    format_version, name, architecture, flavour, the hyperparameters, params, flops, flops_breakdown, num_classes,
    labels, preprocess and the tensors (dtype counts, data bytes, every name / dtype / shape in name order).  The file
    is read and validated completely first (read_model); a bad file raises FormatError."""
    tensors, vkvit = read_model(path)
    arch, flavour, cfg = vkvit["architecture"], vkvit["flavour"], vkvit["config"]
    fb = flops_breakdown(vkvit)
    doc = {"file": str(path), "file_size": os.path.getsize(path), "format_version": vkvit["format_version"],
           "name": vkvit.get("name", ""), "architecture": arch, "flavour": flavour}
    doc.update(ARCHS[arch].describe(cfg, flavour))
    doc["params"] = count_params(vkvit)
    doc["flops"] = fb["total"]
    doc["flops_breakdown"] = {k: v for k, v in fb.items() if k != "total"}
    doc["num_classes"] = cfg["num_classes"]
    doc["labels"] = list(vkvit.get("labels", []))
    pp = vkvit["preprocess"]
    doc["preprocess"] = {k: pp[k] for k in ("image_size", "resize_shorter", "interpolation", "mean", "std")}
    dtypes = {name: _TORCH_TO_NAME[t.dtype] for name, t in tensors.items()}
    doc["tensors"] = {"count": len(tensors), **{d: sum(v == d for v in dtypes.values()) for d in DTYPES},
                      "data_bytes": sum(t.numel() * DTYPES[dtypes[n]][0] for n, t in tensors.items()),
                      "list": [{"name": n, "dtype": dtypes[n], "shape": [int(d) for d in tensors[n].shape]}
                               for n in sorted(tensors)]}
    return doc


# ---------------------------------------------------------------------------------------------------------------
# The architectures: one row each, the Python mirror of src/arch/arch.h's table. A new architecture adds its
# check / tensors / flops / describe functions above and one row here.
# ---------------------------------------------------------------------------------------------------------------


class Arch:
    """One architecture: its flavours and the functions of its `config` (each takes the config dict and flavour)."""

    def __init__(self, flavours, check, tensors, flops, describe):
        self.flavours, self.check, self.tensors, self.flops, self.describe = flavours, check, tensors, flops, describe


ARCHS = {
    "vit5": Arch(("nvsubq", "paper"), _check_vit5, lambda c, f: _vit5_tensors(c), lambda c, f: _vit5_flops(c),
                 _vit5_describe),
    "vil": Arch(("seed", "nxai"), _check_vil, _vil_tensors, _vil_flops, _vil_describe),
    "resnet": Arch(("generic",), lambda c, f: check_resnet_config(c), lambda c, f: _resnet_tensors(c),
                   lambda c, f: _resnet_flops(c), _resnet_describe),
}
ARCHITECTURES = {name: a.flavours for name, a in ARCHS.items()}  # name -> flavours
