# SPDX-License-Identifier: Apache-2.0
"""Session.run_async / classify_async (issue 57): concurrent.futures.Future results equal to the synchronous
calls', many futures from many threads on one session (one worker thread per session: the C library's one
caller at a time), typed errors through Future.exception(), cancellation of queued calls, close() with calls
queued, and a done-callback that closes the session. Validation layer on, zero messages (conftest.ctx).

Inputs are fresh random arrays from a printed seed (VKVIT_TEST_SEED reruns one). Tolerances: an async result must
equal the synchronous call's on the same session bit for bit (the same recorded graph runs both); against the
PyTorch golden logits 1e-4 relative (test_binding's bound)."""

import concurrent.futures
import os
import threading

import numpy as np
import pytest

import vkvit
from conftest import GOLDEN_MODELS, max_rel_err, read_safetensors

STEM = "resnet_mlp_only_gelu_nopos"                 # 8x8 input, 9k parameters: fast on lavapipe
TINY = os.path.join(GOLDEN_MODELS, STEM + ".vkvit")


@pytest.fixture
def rng():
    seed = int(os.environ.get("VKVIT_TEST_SEED", np.random.SeedSequence().entropy % (1 << 31)))
    print(f"test_async seed {seed} (VKVIT_TEST_SEED={seed} reruns it)")
    return np.random.default_rng(seed)


class GateImage:
    """A picture classify() reads as an 8x8 RGB PIL image, whose load() waits until `gate` is set: it keeps the
    session's worker busy so that the calls behind it stay queued."""

    mode = "RGB"
    info: dict = {}
    format = None

    def __init__(self, gate, pixels):
        self.gate, self.pixels, self.started = gate, pixels, threading.Event()

    def load(self):
        self.started.set()
        assert self.gate.wait(60), "the gate was never opened"

    def convert(self, mode):  # pragma: no cover - classify's duck test looks for it; never called for RGB
        raise AssertionError("convert called")

    def getexif(self):
        return {}

    def __array__(self, dtype=None):
        return self.pixels


def test_run_async_equals_run_and_the_golden(ctx, rng):
    io, _ = read_safetensors(os.path.join(GOLDEN_MODELS, STEM + ".io.safetensors"))
    batch = io["input"].shape[0]
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, batch=batch) as s:
        fut = s.run_async(io["input"])
        assert isinstance(fut, concurrent.futures.Future)
        got = fut.result(timeout=120)
        assert max_rel_err(got, io["logits"]) <= 1e-4
        xs = [rng.standard_normal((int(rng.integers(1, batch + 1)),) + s.input_shape[1:]).astype(np.float32)
              for _ in range(24)]
        futs = [s.run_async(x) for x in xs]
        for x in xs:                                # the buffers may be reused at once: inputs were copied
            x[...] = np.nan
        got = [f.result(timeout=120) for f in futs]
        for x, f, g in zip(xs, futs, got):
            assert f.done() and f.exception() is None
            assert g.shape == (x.shape[0], s.output_shape[1]) and np.isfinite(g).all()
        ys = [rng.standard_normal((batch,) + s.input_shape[1:]).astype(np.float32) for _ in range(8)]
        want = [s.run(y) for y in ys]
        futs = [s.run_async(y) for y in ys]
        for f, w in zip(futs, want):
            assert np.array_equal(f.result(timeout=120), w)
        assert not np.array_equal(want[0], want[1])  # distinct inputs gave distinct logits (no stale output)


def test_many_threads_many_futures(ctx, rng):
    """8 threads each queue 12 run_async calls and 2 classify_async calls on one session while the main thread
    runs synchronously on it: every result equals the synchronous result for its input."""
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, batch=2, top_k=3) as s:
        xs = [rng.standard_normal((2,) + s.input_shape[1:]).astype(np.float32) for _ in range(16)]
        pics = [rng.integers(0, 256, (int(rng.integers(4, 40)), int(rng.integers(4, 40)), 3), dtype=np.uint8)
                for _ in range(6)]
        want_run = [s.run(x) for x in xs]
        want_cls = s.classify(pics, top_k=3)
        submitted, errors = [], []
        lock = threading.Lock()

        def worker(t):
            try:
                local = []
                for k in range(12):
                    i = (t * 12 + k) % len(xs)
                    local.append(("run", i, s.run_async(xs[i])))
                for k in range(2):
                    local.append(("cls", None, s.classify_async(pics, top_k=3)))
                with lock:
                    submitted.extend(local)
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for x, w in zip(xs[:4], want_run[:4]):      # synchronous calls interleave with the worker's
            assert np.array_equal(s.run(x), w)
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(submitted) == 8 * 14
        for kind, i, f in submitted:
            if kind == "run":
                assert np.array_equal(f.result(timeout=300), want_run[i])
            else:
                r = f.result(timeout=300)
                assert r == want_cls and all(c.error is None for c in r)


def test_errors_arrive_typed_through_the_future(ctx, rng):
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, batch=2, top_k=3) as s:
        x = rng.standard_normal(s.input_shape).astype(np.float32)
        good1 = s.run_async(x)
        bad_shape = s.run_async(np.zeros((3,) + s.input_shape[1:], np.float32))   # more rows than the batch
        bad_dtype = s.run_async(x.astype(np.float64))
        bad_file = s.classify_async(["/nonexistent/cat.png"], errors="raise")
        entry = s.classify_async(["/nonexistent/cat.png", rng.integers(0, 256, (9, 9, 3), dtype=np.uint8)])
        bad_topk = s.classify_async([np.zeros((8, 8, 3), np.uint8)], top_k=0)
        good2 = s.run_async(x)
        assert isinstance(bad_shape.exception(timeout=60), vkvit.InvalidArgumentError)
        assert "batch" in str(bad_shape.exception())
        assert isinstance(bad_dtype.exception(timeout=60), vkvit.InvalidArgumentError)
        assert isinstance(bad_file.exception(timeout=60), vkvit.BadImageError)
        assert "/nonexistent/cat.png" in str(bad_file.exception())
        with pytest.raises(vkvit.BadImageError):
            bad_file.result()
        assert isinstance(bad_topk.exception(timeout=60), vkvit.InvalidArgumentError)
        r = entry.result(timeout=60)                # errors='entry': the bad image gets an entry, the call works
        assert r[0].error and "/nonexistent/cat.png" in r[0].error and r[1].error is None and len(r[1]) == 5  # top_k 5
        assert np.array_equal(good1.result(timeout=60), good2.result(timeout=60))  # errors left the session fine
        assert np.array_equal(good1.result(), s.run(x))


def test_cancel_queued_calls(ctx, rng):
    with vkvit.Model(ctx, TINY) as model, vkvit.Session(model, batch=1, top_k=3) as s:
        gate = threading.Event()
        gi = GateImage(gate, rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
        busy = s.classify_async([gi])
        assert gi.started.wait(60)                  # the worker is inside the first call
        xs = [rng.standard_normal(s.input_shape).astype(np.float32) for _ in range(6)]
        queued = [s.run_async(x) for x in xs]
        assert not busy.cancel()                    # running: cannot be withdrawn
        cancelled = [queued[i].cancel() for i in (1, 3, 4)]
        assert cancelled == [True, True, True]
        gate.set()
        assert busy.result(timeout=60)[0].error is None
        for i, f in enumerate(queued):
            if i in (1, 3, 4):
                assert f.cancelled()
                with pytest.raises(concurrent.futures.CancelledError):
                    f.result()
            else:
                assert np.array_equal(f.result(timeout=60), s.run(xs[i]))


def test_close_cancels_queued_and_waits_for_the_running_call(ctx, rng):
    model = vkvit.Model(ctx, TINY)
    s = vkvit.Session(model, batch=1, top_k=3)
    gate = threading.Event()
    gi = GateImage(gate, rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
    busy = s.classify_async([gi])
    assert gi.started.wait(60)
    queued = [s.run_async(rng.standard_normal(s.input_shape).astype(np.float32)) for _ in range(4)]
    closer = threading.Thread(target=s.close)
    closer.start()
    closer.join(0.5)
    assert closer.is_alive()                        # close() waits for the running call
    gate.set()
    closer.join(60)
    assert not closer.is_alive() and s.closed
    assert busy.done() and busy.exception() is None and busy.result()[0].error is None
    assert all(f.cancelled() for f in queued)
    with pytest.raises(vkvit.ClosedError):
        s.run_async(np.zeros(s.input_shape, np.float32))
    with pytest.raises(vkvit.ClosedError):
        s.classify_async([np.zeros((8, 8, 3), np.uint8)])
    model.close()


def test_closing_the_model_fails_queued_calls_with_closed_error(ctx, rng):
    """Model.close() closes its sessions; the call running on the worker and the one queued behind it then end in
    ClosedError, through their futures."""
    model = vkvit.Model(ctx, TINY)
    s = vkvit.Session(model, batch=1, top_k=3)
    gate = threading.Event()
    gi = GateImage(gate, rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
    busy = s.classify_async([gi], errors="raise")
    assert gi.started.wait(60)                      # decoding its picture, before any C call
    later = s.run_async(np.zeros(s.input_shape, np.float32))
    model.close()
    assert s.closed
    gate.set()
    assert isinstance(busy.exception(timeout=60), vkvit.ClosedError), busy.exception()
    assert isinstance(later.exception(timeout=60), vkvit.ClosedError), later.exception()
    with pytest.raises(vkvit.ClosedError):
        s.run_async(np.zeros(s.input_shape, np.float32))
    s.close()                                       # idempotent; ends the worker


def test_done_callback_may_close_the_session(ctx, rng):
    model = vkvit.Model(ctx, TINY)
    s = vkvit.Session(model, batch=1)
    closed = threading.Event()

    def close_it(fut):
        s.close()                                   # runs on the worker thread: must not wait for itself
        closed.set()

    f = s.run_async(rng.standard_normal(s.input_shape).astype(np.float32))
    f.add_done_callback(close_it)
    assert closed.wait(60) and s.closed
    assert f.result().shape == (1, s.output_shape[1])
    model.close()
