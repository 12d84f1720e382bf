# SPDX-License-Identifier: Apache-2.0
"""The Python binding (python/vkvit) against the C library: struct layouts, every golden model, bad input, lifetime,
threads and memory. Validation layer on; zero validation messages after every test (conftest.ctx)."""

import gc
import glob
import os
import re
import shutil
import subprocess
import threading

import numpy as np
import pytest

import vkvit
from vkvit import _lib
from conftest import GOLDEN_MODELS, ROOT, max_rel_err, read_safetensors

TINY = os.path.join(GOLDEN_MODELS, "resnet_mlp_only_gelu_nopos.vkvit")        # 8x8, 9k parameters
CONDITIONED = os.path.join(GOLDEN_MODELS, "resnet_cond_mlp_tc5_relu_layernorm.vkvit")
BUNDLED = os.path.join(ROOT, "assets", "models", "vil_cifar10.vkvit")


def golden_stems():
    stems = sorted(os.path.basename(p)[:-len(".vkvit")] for p in glob.glob(os.path.join(GOLDEN_MODELS, "*.vkvit")))
    return stems


# ------------------------------------------------------------------------------------------------------------
# ctypes structs vs the C header (no device needed)
# ------------------------------------------------------------------------------------------------------------

def test_struct_layouts_match_the_header(tmp_path):
    """sizeof, alignment and every field offset of each mirrored struct, as a C compiler sees include/vkvit.h."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler to compare the ctypes structs with")
    header = open(os.path.join(ROOT, "include", "vkvit.h"), encoding="utf-8").read()
    m = re.search(r"typedef struct vkvit_model_desc \{(.*?)\} vkvit_model_desc;", header, re.S)
    assert m, "vkvit_model_desc not found in include/vkvit.h"
    has_data = re.search(r"\bdata\s*;", m.group(1)) is not None
    structs = dict(_lib.STRUCTS)
    if not has_data:  # the header predates desc.data/size: check the prefix the binding shares with it
        structs["vkvit_model_desc"] = _lib.vkvit_model_desc_v0
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "vkvit.h"', "int main(void) {"]
    expected = []
    for cname, cls in structs.items():
        lines.append(f'    printf("{cname} size %zu align %zu\\n", sizeof({cname}), _Alignof({cname}));')
        expected.append(f"{cname} size {ctypes_sizeof(cls)} align {ctypes_alignment(cls)}")
        for fname, _ in cls._fields_:
            lines.append(f'    printf("{cname}.{fname} %zu\\n", offsetof({cname}, {fname}));')
            expected.append(f"{cname}.{fname} {getattr(cls, fname).offset}")
    lines += ["    return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    probe = tmp_path / "probe.c"  # vkvit.h includes the Vulkan headers: a machine may have a compiler without them
    probe.write_text("#include <vulkan/vulkan_core.h>\nint main(void) { return 0; }\n")
    if subprocess.run([cc, "-std=c11", "-c", str(probe), "-o", str(tmp_path / "probe.o")],
                      capture_output=True).returncode != 0:
        pytest.skip("the C compiler finds no Vulkan headers (Debian: libvulkan-dev)")
    r = subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "include"), str(src), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    assert got == expected
    if not has_data:  # the binding's full struct must still start with the header's fields
        assert _lib.vkvit_model_desc.path.offset == 0 and _lib.vkvit_model_desc.label.offset == 8


def ctypes_sizeof(cls):
    import ctypes
    return ctypes.sizeof(cls)


def ctypes_alignment(cls):
    import ctypes
    return ctypes.alignment(cls)


def test_every_result_code_has_an_error_class():
    for code in range(-11, 0):
        assert vkvit._ERRORS[code].code == code
        assert issubclass(vkvit._ERRORS[code], vkvit.Error)
        assert _lib.load().result_name(code) == vkvit._ERRORS[code].name


# ------------------------------------------------------------------------------------------------------------
# Goldens: every tests/golden/models/*.vkvit through the binding, fp32 within the C tests' 1e-4
# ------------------------------------------------------------------------------------------------------------

def test_goldens_are_all_found():
    assert len(golden_stems()) >= 13


@pytest.mark.parametrize("stem", golden_stems())
def test_golden_model(ctx, stem):
    io, _ = read_safetensors(os.path.join(GOLDEN_MODELS, stem + ".io.safetensors"))
    x, want = io["input"], io["logits"]
    with vkvit.Model(ctx, os.path.join(GOLDEN_MODELS, stem + ".vkvit")) as model:
        assert model.image_size == tuple(x.shape[1:3])
        assert model.num_classes == want.shape[1]
        with vkvit.Session(model, batch=x.shape[0]) as s:
            assert s.input_shape == x.shape and s.output_shape == want.shape
            if "condition" in io:
                assert s.condition_shape == io["condition"].shape
                with pytest.raises(vkvit.InvalidArgumentError, match="condition"):
                    s.run(x)                        # refused by the library until a condition is set
                s.set_condition(io["condition"])
            else:
                assert s.condition_shape is None
            got = s.run(x)
            assert got.dtype == np.float32 and got.shape == want.shape
            err = max_rel_err(got, want)
            assert err <= 1e-4, f"{stem}: max rel err {err:.3g}"
            assert np.array_equal(s.run(x), got), "a second run differs"


def test_golden_model_from_bytes_and_fp16(ctx):
    stem = "vit5_nvsubq_cls_r4"
    io, _ = read_safetensors(os.path.join(GOLDEN_MODELS, stem + ".io.safetensors"))
    data = open(os.path.join(GOLDEN_MODELS, stem + ".vkvit"), "rb").read()
    with vkvit.Model(ctx, data) as model:
        assert vkvit.features()["model_from_bytes"] in (True, False)
        with vkvit.Session(model, batch=io["input"].shape[0]) as s:
            assert max_rel_err(s.run(io["input"]), io["logits"]) <= 1e-4
        if ctx.device_info()["fp16_storage"]:
            with vkvit.Session(model, batch=io["input"].shape[0], precision="fp16") as s:
                assert max_rel_err(s.run(io["input"]), io["logits"]) <= 1e-2
        if ctx.device_info()["fp16_storage"] and ctx.device_info()["fp16_arithmetic"]:
            with vkvit.Session(model, batch=io["input"].shape[0], precision="fp16-math") as s:
                assert max_rel_err(s.run(io["input"]), io["logits"]) <= 1e-2


def test_describe(ctx):
    with vkvit.Model(ctx, BUNDLED) as model:
        d = model.describe()
    assert d["architecture"] == "vil" and d["flavour"] == "seed"
    assert d["image_size"] == [32, 32] and d["num_classes"] == 10
    assert d["labels"] == ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    assert d["parameters"] > 0 and d["flops"] > 0
    # fp32 on the device, less the tensors only the loader's folds read (ViL: q/k projections, gate weights), plus
    # the folds: within a few per cent of 4 bytes per parameter
    assert 0.9 * 4 * d["parameters"] <= d["weight_bytes"] <= 1.1 * 4 * d["parameters"]
    p = d["preprocessing"]
    assert set(p) == {"image_size", "resize_shorter", "interpolation", "mean", "std"}
    assert p["image_size"] == [32, 32] and p["interpolation"] in ("bicubic", "bilinear")


# ------------------------------------------------------------------------------------------------------------
# classify: GPU pre-processing + top-K, against run() on host-normalised pixels
# ------------------------------------------------------------------------------------------------------------

def test_classify_matches_run_on_normalised_pixels(ctx):
    from PIL import Image
    rng = np.random.default_rng(1)
    with vkvit.Model(ctx, BUNDLED) as model, vkvit.Session(model, batch=2, top_k=5) as s:
        pics = [rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(3)]
        mean = np.array(model.preprocessing["mean"], np.float32)
        std = np.array(model.preprocessing["std"], np.float32)
        # 32x32 into a 32x32 model: resize and crop are the identity, so set_images == (x/255 - mean)/std
        x = np.stack([(p.astype(np.float32) / 255 - mean) / std for p in pics[:2]]).astype(np.float32)
        logits = s.run(np.ascontiguousarray(x))
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        # a PIL RGB image, an RGBA array, an RGB array (3 images, batch 2: two chunks)
        rgba = np.concatenate([pics[1], np.full((32, 32, 1), 7, np.uint8)], axis=2)
        res = s.classify([Image.fromarray(pics[0]), rgba, pics[2]], top_k=3)
        assert len(res) == 3 and all(len(r) == 3 for r in res)
        for b in range(2):
            order = np.argsort(-probs[b], kind="stable")[:3]
            assert [c for _, c, _ in res[b]] == [int(c) for c in order]
            assert [lab for lab, _, _ in res[b]] == [model.labels[c] for c in order]
            assert np.allclose([p for _, _, p in res[b]], probs[b][order], atol=1e-5)
        # host softmax path (top_k above the session's) agrees with the GPU's
        host = s.classify([pics[0]], top_k=7)
        assert [c for _, c, _ in host[0][:3]] == [c for _, c, _ in res[0]]
        assert np.allclose([p for _, _, p in host[0][:3]], [p for _, _, p in res[0]], atol=1e-5)


def test_classify_any_size_photo(ctx):
    from PIL import Image
    img = Image.open(os.path.join(ROOT, "assets", "images", "cat.png"))
    with vkvit.Model(ctx, BUNDLED) as model, vkvit.Session(model) as s:
        res = s.classify([img], top_k=5)
        assert s.classify(img, top_k=5) == res      # one picture without a list
    assert res[0][0][0] == "cat"                    # as `vkvit classify assets/images/cat.png` says
    assert abs(sum(p for _, _, p in res[0]) - 1.0) < 0.1


# ------------------------------------------------------------------------------------------------------------
# Bad input raises, never crashes
# ------------------------------------------------------------------------------------------------------------

def test_bad_arrays_raise(ctx):
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, batch=2) as s:
        good = np.zeros(s.input_shape, np.float32)
        bad = [
            (good.astype(np.float64), "dtype float32"),
            (good.astype(np.float16), "dtype float32"),
            (np.zeros((3, 8, 8, 3), np.float32), "1 <= N <= 2"),        # more rows than the batch
            (np.zeros((0, 8, 8, 3), np.float32), "1 <= N <= 2"),
            (np.zeros((2, 8, 8, 4), np.float32), "shape"),
            (good.reshape(2, 8, 24), "shape"),
            (np.zeros((2, 8, 8, 6), np.float32)[..., ::2], "C-contiguous"),
            (np.asfortranarray(good), "C-contiguous"),
            (good.tolist(), "numpy.ndarray"),
            (None, "numpy.ndarray"),
        ]
        for a, what in bad:
            with pytest.raises(vkvit.InvalidArgumentError, match=re.escape(what)):
                s.run(a)
        with pytest.raises(vkvit.InvalidArgumentError, match="takes no condition"):
            s.set_condition(np.zeros((2, 4), np.float32))
        for images, what in [([np.zeros((4, 4, 3), np.float32)], "uint8"), ([np.zeros((4, 4), np.uint8)], "shape"),
                             ([np.zeros((4, 4, 5), np.uint8)], "shape"), ([np.zeros((0, 4, 3), np.uint8)], "empty"),
                             (["no_such_cat.png"], "no_such_cat.png"), ([42], "PIL image")]:
            # one bad image is an entry with the sentence; errors="raise" raises it, as classify used to
            (res,) = s.classify(images)
            assert res == [] and re.search(re.escape(what), res.error), res.error
            with pytest.raises(vkvit.Error, match=re.escape(what)):
                s.classify(images, errors="raise")
        with pytest.raises(vkvit.InvalidArgumentError, match="top_k"):
            s.classify([np.zeros((4, 4, 3), np.uint8)], top_k=11)
        assert np.array_equal(s.run(good), s.run(good))   # still usable after all of that


def test_bad_session_arguments_raise(ctx):
    with vkvit.Model(ctx, TINY) as model:
        for kwargs in [dict(batch=0), dict(batch=-1), dict(batch=1.5), dict(precision="fp8"), dict(top_k=-1)]:
            with pytest.raises(vkvit.InvalidArgumentError):
                vkvit.Session(model, **kwargs)
        with pytest.raises(vkvit.InvalidArgumentError) as e:       # refused by the library, with its sentence
            vkvit.Session(model, top_k=33)
        assert e.value.code == _lib.VKVIT_ERROR_INVALID_ARGUMENT and "top_k" in str(e.value)


def test_conditioned_model(ctx):
    with vkvit.Model(ctx, CONDITIONED) as model, vkvit.Session(model) as s:
        assert s.condition_shape == (1, 5, 32)
        with pytest.raises(vkvit.InvalidArgumentError, match="set_condition"):
            s.classify([np.zeros((12, 16, 3), np.uint8)])
        for c in [np.zeros((1, 5, 31), np.float32), np.zeros((1, 5, 32), np.float64),
                  np.zeros((1, 32, 5), np.float32).transpose(0, 2, 1)]:
            with pytest.raises(vkvit.InvalidArgumentError):
                s.set_condition(c)
        s.set_condition(np.ones((1, 5, 32), np.float32))
        assert len(s.classify([np.zeros((12, 16, 3), np.uint8)], top_k=2)[0]) == 2


def test_bad_model_files_raise(ctx, tmp_path):
    good = open(TINY, "rb").read()
    cases = [b"", b"\0" * 7, good[:100], good[: len(good) // 2], b"\xff" * 64,
             good[:8] + b"{not json" + good[17:], (2**40).to_bytes(8, "little") + good[8:]]
    for data in cases:
        with pytest.raises(vkvit.Error) as e:
            vkvit.Model(ctx, data)
        assert type(e.value) in (vkvit.BadModelFileError, vkvit.FileError), (data[:16], e.value)
        assert str(e.value)
    with pytest.raises(vkvit.FileError, match="no_such_model"):
        vkvit.Model(ctx, str(tmp_path / "no_such_model.vkvit"))
    with pytest.raises(vkvit.InvalidArgumentError):
        vkvit.Model(ctx, 42)
    with pytest.raises(vkvit.InvalidArgumentError):
        vkvit.Model("not a context", TINY)
    with vkvit.Model(ctx, good) as m:               # bytes that are a good file load
        assert m.num_classes == 10


def test_bad_device_name():
    import conftest
    conftest.vulkan_or_skip(validation=False).close()  # there is a device, just not this one
    with pytest.raises(vkvit.NoDeviceError, match="no such device name xyz"):
        vkvit.Context(device="no such device name xyz", validation=False)


# ------------------------------------------------------------------------------------------------------------
# Lifetime
# ------------------------------------------------------------------------------------------------------------

def test_closed_objects_raise(ctx):
    model = vkvit.Model(ctx, TINY)
    s = vkvit.Session(model)
    x = np.zeros(s.input_shape, np.float32)
    s.close()
    s.close()                                       # idempotent
    for call in (lambda: s.run(x), lambda: s.classify([np.zeros((8, 8, 3), np.uint8)]), s.stats):
        with pytest.raises(vkvit.ClosedError):
            call()
    s2 = vkvit.Session(model)
    model.close()                                   # closes its live session first
    assert s2.closed and model.closed
    with pytest.raises(vkvit.ClosedError):
        s2.run(x)
    with pytest.raises(vkvit.ClosedError):
        vkvit.Session(model)
    with pytest.raises(vkvit.ClosedError):
        model.describe()


def test_context_close_closes_children():
    c = pytest.importorskip("conftest").vulkan_or_skip()
    model = vkvit.Model(c, TINY)
    s = vkvit.Session(model)
    x = np.zeros(s.input_shape, np.float32)
    s.run(x)
    assert c.validation_messages() == 0
    c.close()
    assert c.closed and model.closed and s.closed
    with pytest.raises(vkvit.ClosedError):
        s.run(x)
    with pytest.raises(vkvit.ClosedError):
        vkvit.Model(c, TINY)
    with pytest.raises(vkvit.ClosedError):
        c.validation_messages()
    c.close()


def test_children_keep_parents_alive_and_cycles_are_safe():
    import conftest
    s = vkvit.Session(vkvit.Model(conftest.vulkan_or_skip(), TINY))    # only the session is referenced
    gc.collect()
    x = np.zeros(s.input_shape, np.float32)
    ref = s.run(x)
    ctx = s.model.context
    assert not ctx.closed and not s.model.closed
    # a reference cycle through all three: the collector finalises them in whatever order it likes
    for _ in range(3):
        m = vkvit.Model(ctx, TINY)
        s2 = vkvit.Session(m)
        m.cycle = s2
        s2.cycle = m
        del m, s2
        gc.collect()
    assert np.array_equal(s.run(x), ref)
    assert ctx.validation_messages() == 0
    s.cycle, ctx.cycle = ctx, s
    del s, ctx, x, ref
    gc.collect()                                    # the cycle holding the ctx goes too: no crash, no leak report


# ------------------------------------------------------------------------------------------------------------
# Threads: sessions of one ctx used from several threads (the binding's locks keep the C rules)
# ------------------------------------------------------------------------------------------------------------

def test_threads_share_a_context(ctx):
    stem = "vit5_nvsubq_gap_grn_r0"
    io, _ = read_safetensors(os.path.join(GOLDEN_MODELS, stem + ".io.safetensors"))
    model = vkvit.Model(ctx, os.path.join(GOLDEN_MODELS, stem + ".vkvit"))
    sessions = [vkvit.Session(model, batch=io["input"].shape[0]) for _ in range(2)]
    errors = []

    def work(s):
        try:
            for _ in range(10):
                assert max_rel_err(s.run(io["input"]), io["logits"]) <= 1e-4
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(sessions[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    extra = vkvit.Session(model)                    # a whole-ctx call while the runs go on
    extra.close()
    for t in threads:
        t.join()
    assert not errors, errors
    model.close()


# ------------------------------------------------------------------------------------------------------------
# Memory: 1,000 inferences keep the resident set flat
# ------------------------------------------------------------------------------------------------------------

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def test_thousand_inferences_keep_rss_flat(ctx):
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, batch=1, top_k=3) as s:
        x = np.random.default_rng(0).standard_normal(s.input_shape).astype(np.float32)
        pic = np.random.default_rng(1).integers(0, 256, (8, 8, 3), dtype=np.uint8)
        ref = s.run(x)
        for _ in range(100):                        # warm-up: allocator pools, first-use growth
            s.run(x)
            s.classify([pic], top_k=3)
        gc.collect()
        before = rss_kib()
        for i in range(1000):
            out = s.run(x)
            if i % 10 == 0:
                s.classify([pic], top_k=3)
        gc.collect()
        grown = rss_kib() - before
        assert np.array_equal(out, ref)
        assert grown < 2048, f"RSS grew by {grown} KiB over 1,000 inferences"


# ------------------------------------------------------------------------------------------------------------
# C API additions the binding uses when the loaded library has them, exercised through stand-ins for the
# symbols (so the binding's side of the contract is tested before the library gains them):
#   vkvit_model_desc { ...; const void *data; size_t size; }        model from bytes
#   vkvit_result vkvit_describe_model(const vkvit_model_desc *, char **json); void vkvit_free(void *);
#   vkvit_shape vkvit_session_feature_shape(const vkvit_session *);
#   vkvit_result vkvit_session_get_features(vkvit_session *, float *dst, size_t count);
# ------------------------------------------------------------------------------------------------------------

def test_model_bytes_go_through_desc_data_when_the_library_has_it(ctx, monkeypatch, tmp_path):
    import ctypes
    lib = _lib.load()
    real = lib.vkvit_model_create
    seen = []

    def new_library_model_create(ctx_handle, desc_ref, out):     # what a library with desc.data does
        desc = desc_ref._obj
        if desc.path is None:
            data = ctypes.string_at(desc.data, desc.size)
            seen.append((data, desc.label))
            path = tmp_path / f"from_data_{len(seen)}.vkvit"
            path.write_bytes(data)
            d = _lib.vkvit_model_desc(path=str(path).encode(), label=desc.label)
            return real(ctx_handle, ctypes.byref(d), out)
        return real(ctx_handle, desc_ref, out)

    monkeypatch.setattr(lib, "vkvit_model_create", new_library_model_create)
    monkeypatch.setattr(lib, "has_model_data", None)
    data = open(TINY, "rb").read()
    with vkvit.Model(ctx, data, label="tiny") as m:
        assert m.num_classes == 10
    assert seen == [(data, b"tiny")] and vkvit.features()["model_from_bytes"] is True
    with pytest.raises(vkvit.BadModelFileError):
        vkvit.Model(ctx, data[:200])
    assert len(seen) == 2 and seen[1][0] == data[:200]                 # no temporary-file fallback
    assert vkvit.features()["model_from_bytes"] is True


def test_describe_uses_vkvit_describe_model_when_present(ctx, monkeypatch):
    import ctypes
    lib = _lib.load()
    calls, freed, keep = [], [], []

    def describe_model(desc_ref, out_ref):
        desc = desc_ref._obj
        calls.append(desc.path)
        buf = ctypes.create_string_buffer(b'{"architecture": "ignored", "blocks": 2, "dtype": "F32"}')
        keep.append(buf)
        out_ref._obj.value = ctypes.addressof(buf)
        return 0

    monkeypatch.setattr(lib, "vkvit_describe_model", describe_model)
    monkeypatch.setattr(lib, "vkvit_free", lambda p: freed.append(p.value if hasattr(p, "value") else p))
    monkeypatch.setattr(lib, "has_describe", True)
    with vkvit.Model(ctx, TINY) as m:
        d = m.describe()
    assert calls == [TINY.encode()]
    assert freed == [ctypes.addressof(keep[0])]
    assert d["architecture"] == "resnet"                               # get_info wins for the common keys
    assert d["blocks"] == 2 and d["dtype"] == "F32"


def test_pooled_features(ctx):
    """Session(features=True): the head applied to the features reproduces PyTorch's logits (issue 17)."""
    stem = "vit5_nvsubq_regconcat_r9"
    io, _ = read_safetensors(os.path.join(GOLDEN_MODELS, stem + ".io.safetensors"))
    weights, _ = read_safetensors(os.path.join(GOLDEN_MODELS, stem + ".vkvit"))
    w, b = weights["out_proj.weight"].astype(np.float64), weights.get("out_proj.bias")
    with vkvit.Model(ctx, os.path.join(GOLDEN_MODELS, stem + ".vkvit")) as model:
        with vkvit.Session(model, batch=io["input"].shape[0], features=True) as s:
            assert s.feature_shape == (io["input"].shape[0], w.shape[1])
            s.run(io["input"])
            f = s.features()
    again = f.astype(np.float64) @ w.T + (b.astype(np.float64) if b is not None else 0)
    assert max_rel_err(again, io["logits"]) <= 1e-4


def test_features_when_present(ctx, monkeypatch):
    import ctypes
    lib = _lib.load()
    with vkvit.Model(ctx, TINY) as model:
        with vkvit.Session(model) as s:
            with pytest.raises(vkvit.UnsupportedError):
                s.features()
        monkeypatch.setattr(lib, "vkvit_session_feature_shape",
                            lambda h: _lib.vkvit_shape(2, (ctypes.c_uint32 * 4)(1, 32, 0, 0)))

        def get_features(h, dst, count):
            assert count == 32
            ctypes.memmove(dst, np.arange(32, dtype=np.float32).ctypes.data, 128)
            return 0

        monkeypatch.setattr(lib, "vkvit_session_get_features", get_features)
        monkeypatch.setattr(lib, "has_features", True)
        with vkvit.Session(model) as s:
            assert s.feature_shape == (1, 32)
            s.run(np.zeros(s.input_shape, np.float32))
            assert np.array_equal(s.features(), np.arange(32, dtype=np.float32).reshape(1, 32))


def test_device_listing_stats_and_profile(ctx):
    info = ctx.device_info()
    assert info["name"] and info["validation"] == 1 and info["adopted"] == 0
    assert any(d["name"] == info["name"] for d in vkvit.devices())
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, profile=True) as s:
        s.run(np.zeros(s.input_shape, np.float32))
        st = s.stats()
        assert st["nodes"] > 0 and st["pipelines"] > 0 and st["weight_bytes"] == model.weight_bytes
        prof = s.profile()
        assert len(prof) == st["nodes"]
        assert all(label and kind and ms >= 0 for label, kind, ms in prof)


# ------------------------------------------------------------------------------------------------------------
# The wider API (issue 57): paths, error entries, __array__ / DLPack inputs, short batches, named device fields
# ------------------------------------------------------------------------------------------------------------

CAT = os.path.join(ROOT, "assets", "images", "cat.png")


def test_classify_takes_paths_and_gives_bad_images_an_entry(ctx, tmp_path):
    import pathlib
    from PIL import Image
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(20))
    with vkvit.Model(ctx, BUNDLED) as model, vkvit.Session(model, batch=2, top_k=3) as s:
        with Image.open(CAT) as im:
            want = s.classify([im], top_k=3)[0]
        res = s.classify([CAT, str(broken), pathlib.Path(CAT), np.zeros((4, 4, 3), np.float32), CAT], top_k=3)
        assert [r.error is None for r in res] == [True, False, True, False, True]
        for i in (0, 2, 4):
            assert res[i] == want and res[i][0][0] == "cat"
        assert "broken.png" in res[1].error and res[1] == []
        assert "image 3" in res[3].error and "uint8" in res[3].error
        assert s.classify(pathlib.Path(CAT), top_k=3) == [want]                   # one path without a list
        assert isinstance(res[0], vkvit.Classification) and isinstance(res[0], list)


def test_run_takes_array_likes_and_short_batches(ctx):
    rng = np.random.default_rng(seed := int.from_bytes(os.urandom(4), "little"))
    print(f"seed {seed}")
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, batch=3, features=True) as s:
        x = rng.standard_normal(s.input_shape).astype(np.float32)
        full = s.run(x)
        assert full.shape == (3, s.output_shape[1]) and np.isfinite(full).all()
        assert s.features().shape == (3, s.feature_shape[1])
        for n in (1, 2):                                   # a batch of n <= 3 rows: the same logits per row
            part = s.run(x[:n])
            assert part.shape == (n, s.output_shape[1])
            assert max_rel_err(part, full[:n]) <= 1e-6     # rows are independent; the same kernels
            assert s.features().shape == (n, s.feature_shape[1])

        class ArrayLike:                                   # any object with __array__
            def __array__(self, dtype=None):
                return x
        assert np.array_equal(s.run(ArrayLike()), full)
        torch = pytest.importorskip("torch")
        t = torch.from_numpy(x.copy())
        assert max_rel_err(s.run(t), full) == 0            # through DLPack (or __array__), no copy needed
        assert max_rel_err(s.run(t[:1]), full[:1]) <= 1e-6
        with pytest.raises(vkvit.InvalidArgumentError, match="float32"):
            s.run(t.double())
        with pytest.raises(vkvit.InvalidArgumentError, match="requires grad|gradient|Tensor"):
            s.run(t.clone().requires_grad_())
        with pytest.raises(vkvit.InvalidArgumentError, match="C-contiguous"):
            s.run(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 1, 3))).transpose(1, 2))


def test_devices_have_named_fields(ctx):
    devs = vkvit.devices()
    assert devs and all(isinstance(d, vkvit.DeviceInfo) for d in devs)
    d = devs[0]
    assert d.name == d["name"] and isinstance(d.name, str) and d.name
    assert re.fullmatch(r"\d+\.\d+\.\d+", d.api_version), d.api_version
    n = d.api_version_number
    assert d.api_version == f"{(n >> 22) & 0x7F}.{(n >> 12) & 0x3FF}.{n & 0xFFF}"
    assert "subgroup_size" in d and dict(d)["name"] == d.name
    info = ctx.device_info()
    assert info.name == info["name"] and info.api_version == info["api_version"]
    with pytest.raises(AttributeError):
        d.no_such_field


def test_features_without_features_says_so(ctx):
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model) as s:
        s.run(np.zeros(s.input_shape, np.float32))
        with pytest.raises(vkvit.UnsupportedError, match="without features=True"):
            s.features()
