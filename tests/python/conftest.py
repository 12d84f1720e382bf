# SPDX-License-Identifier: Apache-2.0
"""Shared by the pytest suite of the Python binding (tests/python/).

- The binding is imported from python/ of this source tree; the library from $VKVIT_LIBRARY (CTest sets it to the
  built target), else the binding's own search (build/libvkvit.so of this tree).
- `ctx`: one Context per test module with the validation layer on (synchronization validation included) and no
  on-disk pipeline cache; every test that uses it must leave zero validation messages (checked after each test).
- No Vulkan loader or device: the tests that need one are skipped, never passed, and the run exits 77 (CTest's
  SKIP_RETURN_CODE), as it does when every test was skipped; "no tests collected" (pytest's exit 5) is turned
  into a failure.
- goldens: a tiny pure-Python safetensors reader.
"""

import json
import os
import struct
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import vkvit  # noqa: E402

GOLDEN_MODELS = os.path.join(ROOT, "tests", "golden", "models")

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
           "U8": np.uint8, "I8": np.int8, "U32": np.uint32}


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (BF16 widened to float32), and its __metadata__."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        raw = data[base + begin: base + end]
        if t["dtype"] == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, np.dtype(_DTYPES[t["dtype"]]).newbyteorder("<"))
        out[name] = a.reshape(t["shape"]).copy()
    return out, meta


def max_rel_err(got, want):
    """max |got - want| / max |want| (tests/test_util.h vt_max_rel_err); NaN anywhere -> inf."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if np.isnan(got).any():
        return float("inf")
    scale = np.abs(want).max()
    d = np.abs(got - want).max()
    return float(d / scale) if scale > 0 else float(d)


def vulkan_or_skip(**kwargs):
    """A validation-on Context, or pytest.skip when there is no Vulkan loader or device."""
    kwargs.setdefault("validation", True)
    kwargs.setdefault("pipeline_cache_dir", "")
    messages = []
    try:
        ctx = vkvit.Context(log=lambda level, msg: messages.append(msg), **kwargs)
    except (vkvit.NoLoaderError, vkvit.NoDeviceError) as e:
        pytest.skip(f"no Vulkan device: {e}")
    ctx.log_messages = messages
    return ctx


@pytest.fixture(scope="module")
def module_ctx():
    ctx = vulkan_or_skip()
    yield ctx
    ctx.close()


@pytest.fixture
def ctx(module_ctx):
    """The module's validation-on Context; asserts after the test that it saw no validation message."""
    module_ctx.validation_messages(reset=True)
    yield module_ctx
    if not module_ctx.closed:
        n = module_ctx.validation_messages(reset=True)
        assert n == 0, f"{n} validation message(s); log: {module_ctx.log_messages[-5:]}"


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("\ntests/python: no tests collected - that is a failure, not a pass", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    if reporter is None or exitstatus != pytest.ExitCode.OK:
        return
    stats = reporter.stats
    passed = len(stats.get("passed", []))
    skipped = stats.get("skipped", [])
    no_vulkan = [r for r in skipped if "no Vulkan device" in str(getattr(r, "longrepr", ""))]
    if (passed == 0 and skipped) or no_vulkan:
        # Like the C tests' exit 77: without a Vulkan device the suite did not really run, so CTest must say
        # "skipped", not "passed" (the device-free checks that did pass are not the point of the suite).
        print(f"\ntests/python: {len(skipped)} tests skipped ({len(no_vulkan)} for want of a Vulkan device), "
              f"{passed} passed -> exit 77 (CTest: skipped)", file=sys.stderr)
        session.exitstatus = 77
