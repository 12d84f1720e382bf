# SPDX-License-Identifier: Apache-2.0
"""The Python binding against a hostile caller: log callbacks that call back into vkvit, threads that hammer one
lock, integers ctypes would truncate, paths with NUL bytes, that are not UTF-8 or that name a /proc file, driver
manifests the Vulkan loader cannot use. Every scenario that could hang runs in a daemon thread joined with a timeout,
so a regression fails the test instead of hanging CI."""

import os
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import vkvit
from conftest import GOLDEN_MODELS, vulkan_or_skip

TINY = os.path.join(GOLDEN_MODELS, "resnet_mlp_only_gelu_nopos.vkvit")        # 8x8, 9k parameters
CONDITIONED = os.path.join(GOLDEN_MODELS, "resnet_cond_mlp_tc5_relu_layernorm.vkvit")


def finishes_within(seconds, fn, *args):
    """Runs fn(*args) in a daemon thread and returns what it returned; fails the test when it is still running
    after `seconds` (a deadlocked thread is left behind: daemon, so it cannot keep the interpreter alive)."""
    outcome = {}

    def body():
        try:
            outcome["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised on the test's thread
            outcome["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} still running after {seconds} s (deadlock or starvation)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def fast_context(log=None):
    """A private Context without the validation layer (these tests time threads, not Vulkan usage), with `log`
    as its callback when given; pytest.skip without a Vulkan device."""
    if log is None:
        return vulkan_or_skip(validation=False)
    vulkan_or_skip(validation=False).close()
    return vkvit.Context(validation=False, pipeline_cache_dir="", log=log)


# ------------------------------------------------------------------------------------------------------------
# 1. A log callback may call back into vkvit, even into the context (and session) whose call logged
# ------------------------------------------------------------------------------------------------------------

def test_log_callback_may_call_back_into_the_context(tmp_path):
    seen = []
    holder = {}

    def log(level, message):
        ctx, session = holder["ctx"], holder.get("session")
        seen.append((level, message, ctx.device_info()["name"], ctx.validation_messages(),
                     session.stats()["batch"] if session is not None else None))

    ctx = fast_context(log=log)
    holder["ctx"] = ctx
    try:
        def failing_model():        # the library logs its sentence while the binding holds the ctx exclusively
            with pytest.raises(vkvit.FileError, match="no_such_model"):
                vkvit.Model(ctx, str(tmp_path / "no_such_model.vkvit"))

        finishes_within(10, failing_model)
        assert seen and seen[0][0] == 0 and "no_such_model" in seen[0][1] and seen[0][2]

        model = vkvit.Model(ctx, CONDITIONED)
        session = vkvit.Session(model)
        holder["session"] = session
        del seen[:]

        def failing_run():          # logged while the binding holds the ctx shared and the session's lock
            with pytest.raises(vkvit.InvalidArgumentError, match="condition"):
                session.run(np.zeros(session.input_shape, np.float32))

        finishes_within(10, failing_run)
        assert seen and "condition" in seen[0][1] and seen[0][4] == 1
        # the error raised is still the failing call's sentence, not one of the callback's calls
        assert session.stats()["batch"] == 1
    finally:
        holder.clear()
        finishes_within(10, ctx.close)


# ------------------------------------------------------------------------------------------------------------
# 2. The context's readers/writer lock is fair: neither a loop of readers nor a loop of writers starves the other
# ------------------------------------------------------------------------------------------------------------

def _loop_until_closed(body, counter, key, stop):
    """Calls body() until `stop` is set or the object it uses is closed; counts the calls that completed (and
    keeps any other exception under key + " error")."""
    try:
        while not stop.is_set():
            body()
            counter[key] = counter.get(key, 0) + 1
    except vkvit.ClosedError:
        pass
    except BaseException as e:  # noqa: BLE001 - reported by the test's thread
        counter[key + " error"] = e


def test_context_close_is_not_starved_by_a_thread_looping_run():
    ctx = fast_context()
    session = vkvit.Session(vkvit.Model(ctx, TINY))
    x = np.zeros(session.input_shape, np.float32)
    counter, stop = {}, threading.Event()
    runner = threading.Thread(target=_loop_until_closed, args=(lambda: session.run(x), counter, "runs", stop),
                              daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 10
        while counter.get("runs", 0) < 20 and runner.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)                        # until the loop is going
        assert counter.get("runs", 0) >= 20, counter
        finishes_within(5, ctx.close)
        assert ctx.closed and session.closed
        runner.join(5)
        assert not runner.is_alive() and "runs error" not in counter, counter
    finally:
        stop.set()


def test_runs_make_progress_while_another_thread_loops_session_create_close():
    ctx = fast_context()
    model = vkvit.Model(ctx, TINY)
    sessions = [vkvit.Session(model) for _ in range(2)]
    x = np.zeros(sessions[0].input_shape, np.float32)
    counter, stop = {}, threading.Event()
    loops = [threading.Thread(target=_loop_until_closed, args=(lambda s=s: s.run(x), counter, f"runs{i}", stop),
                              daemon=True) for i, s in enumerate(sessions)]
    loops.append(threading.Thread(target=_loop_until_closed,
                                  args=(lambda: vkvit.Session(model).close(), counter, "sessions", stop),
                                  daemon=True))
    for t in loops:
        t.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and min(counter.get(k, 0) for k in ("runs0", "runs1", "sessions")) < 5:
            time.sleep(0.05)
        assert min(counter.get(k, 0) for k in ("runs0", "runs1", "sessions")) >= 5, counter
        finishes_within(5, ctx.close)               # one more writer, queued behind the looping one
        for t in loops:
            t.join(5)
            assert not t.is_alive(), f"a loop did not stop at ClosedError ({counter})"
        assert not [k for k in counter if k.endswith("error")], counter
    finally:
        stop.set()


# ------------------------------------------------------------------------------------------------------------
# 3. Integers ctypes would truncate to their C type are refused, naming the parameter and its range
# ------------------------------------------------------------------------------------------------------------

def test_integers_out_of_their_c_range_are_refused(ctx):
    with vkvit.Model(ctx, TINY) as model:
        cases = [
            (dict(max_image_pixels=2**64 + 4096), "max_image_pixels", "18446744073709551615"),
            (dict(max_image_pixels=2**64), "max_image_pixels", "18446744073709551615"),
            (dict(max_image_pixels=-1), "max_image_pixels", "18446744073709551615"),
            (dict(batch=2**32 + 1), "batch", "4294967295"),
            (dict(batch=np.int64(2**32 + 1)), "batch", "4294967295"),
            (dict(batch=0), "batch", "4294967295"),
            (dict(top_k=2**32 + 3), "top_k", "4294967295"),
            (dict(top_k=-2**32 + 3), "top_k", "4294967295"),
            (dict(top_k=True), "top_k", "4294967295"),
        ]
        for kwargs, name, top in cases:
            with pytest.raises(vkvit.InvalidArgumentError, match=rf"Session: {name} must be an int in \[\d+, "
                                                                 rf"{top}\]") as e:
                vkvit.Session(model, **kwargs)
            assert e.value.code == vkvit.InvalidArgumentError.code
        with vkvit.Session(model, max_image_pixels=np.uint64(64), batch=np.int32(1)) as s:   # numpy ints in range
            assert s.batch == 1
            for k in (0, 11, 2**64 + 1, -1):
                with pytest.raises(vkvit.InvalidArgumentError, match=r"classify: top_k must be an int in \[1, 10\]"):
                    s.classify([np.zeros((8, 8, 3), np.uint8)], top_k=k)
        assert model.label(9) == model.labels[9] and model.label(2**70) == str(2**70)   # past the labels: a number
        for index in (-1, -2**64 + 3, 1.0):
            with pytest.raises(vkvit.InvalidArgumentError, match="Model.label: index must be a non-negative int"):
                model.label(index)
    for device in (-1, 2**32, 2**64 + 0):
        with pytest.raises(vkvit.InvalidArgumentError, match=r"Context: device index must be an int in "
                                                             r"\[0, 4294967295\]"):
            vkvit.Context(device=device, validation=False)


# ------------------------------------------------------------------------------------------------------------
# 4. Paths: an embedded NUL is refused (C would read a shorter path); any bytes the file system takes are accepted
# ------------------------------------------------------------------------------------------------------------

class BytesPath:
    """An os.PathLike whose __fspath__ answers bytes (os.DirEntry of a bytes scandir does)."""

    def __init__(self, path: bytes):
        self.path = path

    def __fspath__(self) -> bytes:
        return self.path


def test_model_path_with_a_nul_is_refused(ctx, tmp_path):
    decoy = str(tmp_path / "m.vkvit")
    shutil.copyfile(TINY, decoy)                    # the file the path cut at its NUL would name
    for path in (decoy + "\0.other", BytesPath(os.fsencode(decoy) + b"\0.other")):
        with pytest.raises(vkvit.InvalidArgumentError, match=re.escape("Model: the path contains a NUL")):
            vkvit.Model(ctx, path)
    with pytest.raises(vkvit.InvalidArgumentError, match="Model: label contains a NUL"):
        vkvit.Model(ctx, decoy, label="a\0b")
    with vkvit.Model(ctx, decoy) as model:
        with pytest.raises(vkvit.InvalidArgumentError, match="Session: label contains a NUL"):
            vkvit.Session(model, label="s\0")
    with pytest.raises(vkvit.InvalidArgumentError, match="Context: device contains a NUL"):
        vkvit.Context(device="lavapipe\0", validation=False)


def test_model_path_that_is_not_utf8_loads(ctx, tmp_path):
    raw = os.fsencode(str(tmp_path)) + b"/m\xff\xfe.vkvit"     # not UTF-8: str paths carry it as surrogates
    with open(raw, "wb") as f, open(TINY, "rb") as src:
        f.write(src.read())
    import pathlib
    for path in (os.fsdecode(raw), pathlib.Path(os.fsdecode(raw)), BytesPath(raw)):
        with vkvit.Model(ctx, path) as model:
            assert model.num_classes == 10
            d = model.describe()
            assert d["architecture"] == "resnet"
    with pytest.raises(vkvit.FileError, match="m.*vkvit"):
        vkvit.Model(ctx, os.fsdecode(raw + b".missing"))


def test_model_path_under_proc_is_named_as_such(ctx):
    # /proc files report st_size 0 but read as data: the library says so instead of "0 bytes long".
    with pytest.raises(vkvit.FileError) as e:
        vkvit.Model(ctx, "/proc/self/status")
    assert "0 bytes long" not in str(e.value)
    assert "'/proc/self/status' is not a regular file with a size" in str(e.value)
    assert "as files under /proc and /sys do" in str(e.value)


# ------------------------------------------------------------------------------------------------------------
# 5. A driver manifest the Vulkan loader cannot use is refused by the library before the loader reads it
# ------------------------------------------------------------------------------------------------------------

def test_broken_driver_manifest_is_no_device_not_a_crash(tmp_path):
    vulkan_or_skip(validation=False).close()
    manifest = tmp_path / "icd.json"
    manifest.write_text("[1, 2]")                   # Debian 12's loader 1.3.239 crashes on a JSON array
    code = ("import vkvit\n"
            "try:\n"
            "    vkvit.Context(validation=False, pipeline_cache_dir='')\n"
            "except vkvit.NoDeviceError as e:\n"
            "    print('NoDeviceError:', e)\n")
    env = dict(os.environ, VK_DRIVER_FILES=str(manifest), VK_ICD_FILENAMES=str(manifest),
               PYTHONPATH=os.path.dirname(os.path.dirname(vkvit.__file__)))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("NoDeviceError:"), r.stdout + r.stderr
    assert f"'{manifest}' (from VK_DRIVER_FILES) is not a Vulkan driver manifest: it is JSON, but not an object" \
        in r.stdout
