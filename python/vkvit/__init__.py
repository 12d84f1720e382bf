# SPDX-License-Identifier: Apache-2.0
"""vkvit — vision backbones (ViT-5, Vision-LSTM, conditioned ResNets) on any Vulkan GPU, from Python.

A pure-Python binding (ctypes, no compiled extension) over the C library libvkvit.so; include/vkvit.h is the
C manual this one follows.

QUICK START
    import numpy as np, vkvit
    from PIL import Image

    with vkvit.Context() as ctx:                                  # a Vulkan device ($VKVIT_DEVICE picks one)
        model = vkvit.Model(ctx, "assets/models/vil_cifar10.vkvit")   # a path, or the file's bytes
        print(model.describe())                                   # architecture, classes, FLOPs, preprocessing
        with vkvit.Session(model, batch=2, top_k=5) as s:
            print(s.classify([Image.open("cat.png"), "dog.jpg"]))  # PIL images (any mode) or paths
            # [[('cat', 3, 0.29), ('frog', 6, 0.26), ...], [...]]: one vkvit.Classification per image (.error)
            logits = s.run(np.zeros(s.input_shape, np.float32))  # [N <= B, H, W, 3] normalised -> [N, classes]

IMAGES
    PIL images and paths become the pixels `vkvit classify` decodes the same file to: every Pillow mode mapped as
    the CLI's decoder maps it (16-bit samples by their high byte, CMYK by stb_image's rule, ...) and EXIF
    orientation applied (vkvit._image has the table; vkvit.load_image / vkvit.image_pixels return them).

OBJECTS
    Context   a Vulkan device and queue               Context(device=None, validation=None, ...)
    Model     an architecture + weights on the device  Model(ctx, path_or_bytes)
    Session   one recorded graph for a batch size      Session(model, batch=1, precision='fp32', top_k=0)

FINDING THE LIBRARY
    libvkvit.so inside this package's folder (the wheel bundles it), else $VKVIT_LIBRARY (a path to libvkvit.so),
    else build/libvkvit.so of the source tree the package sits in (python/vkvit -> ../../build), else the system's
    (ctypes.util.find_library("vkvit"), e.g. after `cmake --install`). vkvit.library_path() says which one was loaded.

ERRORS
    Every failure raises a subclass of vkvit.Error, one per vkvit_result code (NoDeviceError, BadModelFileError,
    InvalidArgumentError, ...), carrying the library's sentence (vkvit_last_error) as its message and the code in
    .code / .name. Arguments the binding checks itself (dtype, shape, contiguity, a closed object, an integer
    outside its C type's range, which ctypes would silently truncate, a string or path with a NUL character, at
    which C would cut it) raise InvalidArgumentError or ClosedError before anything reaches the library; the
    sentence names the parameter and its range. LibraryNotFoundError means
    libvkvit.so itself could not be loaded. InvalidArgumentError is also a ValueError, ClosedError a ValueError,
    FileError and LibraryNotFoundError OSErrors, OutOfHostMemoryError a MemoryError.

LIFETIME
    A Session keeps its Model alive and a Model its Context (they hold references), so the garbage collector can
    never destroy a parent first. close() (or a `with` block) destroys an object now; using it afterwards raises
    ClosedError. Closing a Context or Model that still has open children CLOSES THE CHILDREN FIRST (sessions, then
    models, then the context: the order the C library requires). When the collector finalises objects of a
    reference cycle in an arbitrary order, a parent whose children are still alive in C is destroyed only after
    the last of them. At interpreter exit every open context is closed (atexit).

THREADS AND THE GIL
    Foreign calls go through ctypes.CDLL, which releases the GIL for the duration of every C call, so a run
    (vkvit_session_run: submit + wait for the GPU) lets other Python threads work meanwhile. The C objects are not
    internally synchronised; the binding enforces the C THREADING rules with locks:
      - each Session has a lock: one call at a time per session (run() = set_input + run + get_output is atomic);
      - each Context has a readers/writer lock: session calls share it, while creating or destroying a model or
        session, device queries and close() take it exclusively (the C library needs the whole ctx for those).
        It is fair: a waiting writer stops new readers, the readers queued behind a writer go before the next
        one, and writers go in arrival order, so neither a thread looping run() nor one looping
        Session(m).close() can starve the other, or close();
      - runs and set_images of different sessions of one Context are serialised on the Context's queue lock
        (Vulkan requires one submitter per VkQueue at a time);
      - Context creation and destruction take a process-wide lock (they load process-wide Vulkan entry points);
      - a log callback runs once the call that logged has let go of these locks, so it may call into vkvit.
    For parallel inference use one Context per thread (or per process, as tools/bulk_classify.py does).

ASYNC
    Session.classify_async(...) and Session.run_async(x) return a concurrent.futures.Future at once. Each session
    has one worker thread (started by the first async call), so its calls run one at a time in submission order,
    as the C library requires of a session, and never together with the session's synchronous calls (the
    session lock). fut.result() is what the synchronous call returns; a failure arrives as the same typed
    vkvit.Error through fut.result() / fut.exception(). fut.cancel() withdraws a call that has not started yet.
    run_async copies its input at submission; classify_async copies the list and any arrays in it, while PIL
    images are decoded by the worker, so keep them open until the future is done. close() cancels the calls
    still queued and waits for the running one; a call queued on a session whose Context or Model was closed
    meanwhile ends in ClosedError.

IN-MEMORY MODELS
    Model(ctx, data: bytes) hands the bytes to the library through vkvit_model_desc.data / .size when the loaded
    library has those fields (an addition to the C API); a library that predates them answers such a desc with
    VKVIT_ERROR_INVALID_ARGUMENT ("desc->path is required") and the binding then writes the bytes to a private
    temporary file, loads that and deletes it. The outcome is remembered for the process
    (vkvit.features()['model_from_bytes']).

ENVIRONMENT (read by the library)
    VKVIT_DEVICE (device index or name substring), VKVIT_VALIDATION=1 (validation layer), VKVIT_DISABLE_F16=1,
    VKVIT_CACHE_DIR (pipeline cache), VKVIT_ATTENTION=fused|gemm; VKVIT_LIBRARY (read by this binding).
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import ctypes
import json
import os
import tempfile
import threading
import weakref
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _image, _lib

__all__ = [
    "Context", "Model", "Session", "Error", "ClosedError", "NoLoaderError", "NoDeviceError", "OutOfHostMemoryError",
    "OutOfDeviceMemoryError", "InvalidArgumentError", "BadModelFileError", "FileError", "VulkanError",
    "UnsupportedError", "BadImageError", "DeviceLostError", "LibraryNotFoundError", "library_path", "features", "devices",
    "DeviceInfo", "Classification", "load_image", "image_pixels", "MAX_TOP_K", "__version__",
]

__version__ = "0.1.0"
MAX_TOP_K = _lib.VKVIT_MAX_TOP_K

# ------------------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------------------


class Error(Exception):
    """A vkvit failure. `code` is the vkvit_result (a negative int; None for errors found by the binding before
    calling the library), `name` its enum name, str(error) the library's sentence."""

    code: Optional[int] = None
    name: str = "VKVIT_ERROR"

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class NoLoaderError(Error):
    """No Vulkan loader (libvulkan.so.1) could be opened."""
    code, name = _lib.VKVIT_ERROR_NO_LOADER, "VKVIT_ERROR_NO_LOADER"


class NoDeviceError(Error):
    """No Vulkan device, or none matching the requested one."""
    code, name = _lib.VKVIT_ERROR_NO_DEVICE, "VKVIT_ERROR_NO_DEVICE"


class OutOfHostMemoryError(Error, MemoryError):
    """Host memory ran out."""
    code, name = _lib.VKVIT_ERROR_OUT_OF_HOST_MEMORY, "VKVIT_ERROR_OUT_OF_HOST_MEMORY"


class OutOfDeviceMemoryError(Error):
    """Device memory ran out."""
    code, name = _lib.VKVIT_ERROR_OUT_OF_DEVICE_MEMORY, "VKVIT_ERROR_OUT_OF_DEVICE_MEMORY"


class InvalidArgumentError(Error, ValueError):
    """An argument broke a documented rule (wrong dtype, shape, count, a session in flight, ...)."""
    code, name = _lib.VKVIT_ERROR_INVALID_ARGUMENT, "VKVIT_ERROR_INVALID_ARGUMENT"


class BadModelFileError(Error):
    """The model file (or bytes) is malformed or inconsistent."""
    code, name = _lib.VKVIT_ERROR_BAD_MODEL_FILE, "VKVIT_ERROR_BAD_MODEL_FILE"


class FileError(Error, OSError):
    """A file could not be opened, read or written (VKVIT_ERROR_IO)."""
    code, name = _lib.VKVIT_ERROR_IO, "VKVIT_ERROR_IO"

    def __str__(self) -> str:  # OSError's __str__ would print the args tuple differently
        return str(self.args[0]) if self.args else ""


class VulkanError(Error):
    """A Vulkan call failed (the message names it and its VkResult)."""
    code, name = _lib.VKVIT_ERROR_VULKAN, "VKVIT_ERROR_VULKAN"


class UnsupportedError(Error):
    """The device, build or loaded library lacks something this request needs."""
    code, name = _lib.VKVIT_ERROR_UNSUPPORTED, "VKVIT_ERROR_UNSUPPORTED"


class BadImageError(Error):
    """An image could not be decoded or is out of limits."""
    code, name = _lib.VKVIT_ERROR_BAD_IMAGE, "VKVIT_ERROR_BAD_IMAGE"


class DeviceLostError(Error):
    """VK_ERROR_DEVICE_LOST: the context must be closed."""
    code, name = _lib.VKVIT_ERROR_DEVICE_LOST, "VKVIT_ERROR_DEVICE_LOST"


class LibraryNotFoundError(Error, OSError):
    """libvkvit.so itself could not be found or loaded (see FINDING THE LIBRARY)."""
    name = "library not found"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ClosedError(Error, ValueError):
    """The object (or its context / model) has been closed."""
    name = "closed"


_ERRORS = {cls.code: cls for cls in (NoLoaderError, NoDeviceError, OutOfHostMemoryError, OutOfDeviceMemoryError,
                                      InvalidArgumentError, BadModelFileError, FileError, VulkanError,
                                      UnsupportedError, BadImageError, DeviceLostError)}


def _raise(lib: _lib.Library, code: int, what: str = "") -> None:
    """Raises the Error subclass of `code` with the library's sentence (read right after the failing call, on the
    same thread: vkvit_last_error is thread-local)."""
    sentence = lib.last_error() or f"{what}: {lib.result_name(code)}"
    cls = _ERRORS.get(code, Error)
    raise cls(sentence, code)


def _check(lib: _lib.Library, code: int, what: str = "") -> None:
    if code != _lib.VKVIT_OK:
        _raise(lib, code, what)


def _lib_or_raise() -> _lib.Library:
    try:
        return _lib.load()
    except OSError as e:
        raise LibraryNotFoundError(str(e)) from None


def library_path() -> str:
    """The path of the libvkvit.so this process loaded (loading it if needed)."""
    return _lib_or_raise().path


def features() -> dict:
    """Which optional C API additions the loaded library has: 'describe_model' (vkvit_describe_model +
    vkvit_free), 'features' (vkvit_session_feature_shape + vkvit_session_get_features), 'model_from_bytes'
    (vkvit_model_desc.data/.size: True/False once a Model was created from bytes, None before)."""
    lib = _lib_or_raise()
    return {"describe_model": lib.has_describe, "features": lib.has_features,
            "model_from_bytes": lib.has_model_data}


def _str(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.decode("utf-8", "replace")


def _vulkan_version(v: int) -> str:
    """A packed Vulkan version (VK_MAKE_API_VERSION) as text: 4206830 -> '1.3.230'."""
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


class DeviceInfo:
    """One Vulkan device (vkvit_device_info) with named fields: d.name, d.driver_name, d.api_version ('1.3.230',
    text), d.api_version_number (the packed uint32), d.fp16_in_use, d.subgroup_size, ... (every field of
    vkvit_device_info, arrays as lists). Also read as the dict it used to be: d['name'], d.keys(), dict(d),
    d.get(...); d['api_version'] is the text too."""

    __slots__ = ("_values",)

    def __init__(self, values: dict):
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):                # no field starts so; keeps copy / pickle probes off _values
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"vkvit.DeviceInfo has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("vkvit.DeviceInfo is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeviceInfo):
            return self._values == other._values
        return NotImplemented

    def __dir__(self):
        return list(self._values) + ["keys", "values", "items", "get", "asdict"]

    def keys(self):
        return self._values.keys()

    def values(self):
        return self._values.values()

    def items(self):
        return self._values.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def asdict(self) -> dict:
        return dict(self._values)

    def __reduce__(self):
        return (DeviceInfo, (dict(self._values),))

    def __repr__(self) -> str:
        return (f"vkvit.DeviceInfo(name={self._values.get('name')!r}, "
                f"driver_name={self._values.get('driver_name')!r}, api_version={self._values.get('api_version')!r})")


def _device_info_dict(info: Any) -> DeviceInfo:
    out = {}
    for name, _ in type(info)._fields_:
        v = getattr(info, name)
        out[name] = v.decode("utf-8", "replace") if isinstance(v, bytes) else _plain(v)
    if "memory_heaps" in out:  # the heaps the device has, each a dict (size, budget, usage, device_local)
        out["memory_heaps"] = out["memory_heaps"][:out.get("memory_heap_count", 0)]
    if isinstance(out.get("api_version"), int):
        out["api_version_number"] = out["api_version"]
        out["api_version"] = _vulkan_version(out["api_version"])
    return DeviceInfo(out)


def _plain(v):
    """A ctypes field value as plain Python: arrays become lists, structs dicts."""
    if isinstance(v, ctypes.Structure):
        return {name: _plain(getattr(v, name)) for name, _ in v._fields_}
    return [_plain(x) for x in v] if isinstance(v, ctypes.Array) else v


# ------------------------------------------------------------------------------------------------------------
# Arguments handed to C: checked here, because ctypes passes on what does not fit without a word
# ------------------------------------------------------------------------------------------------------------

_UINT32_MAX = 2**32 - 1
_UINT64_MAX = 2**64 - 1


def _c_integer(value: Any, what: str, low: int, high: int) -> int:
    """`value` as a Python int for an integer the binding hands to C, whose C type (or rule) allows [low, high].
    ctypes keeps only the low bits of an int that does not fit its C type (2**64 + k arrives as k, -1 as the
    largest value), so anything outside the range is refused here; so are bools and non-integers."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{what} must be an int in [{low}, {high}], got {value!r}")
    v = int(value)
    if not low <= v <= high:
        raise InvalidArgumentError(f"{what} must be an int in [{low}, {high}], got {v}")
    return v


def _refuse_nul(b: bytes, what: str) -> bytes:
    """C strings end at the first NUL: a string with one inside would reach the library cut short (a path would
    name another file), so it is refused instead."""
    at = b.find(b"\0")
    if at >= 0:
        raise InvalidArgumentError(f"{what} contains a NUL character (at byte {at}), which C would take for the "
                                   "end of the string")
    return b


def _c_string(value: Any, what: str) -> bytes:
    """A str argument (a label, a device name) as the NUL-free UTF-8 bytes C reads. Surrogate escapes (text that
    came from undecodable bytes, e.g. a file name) go back to those bytes rather than failing."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a str, got {type(value).__name__}")
    return _refuse_nul(value.encode("utf-8", "surrogateescape"), what)


def _c_path(path: Any, what: str) -> bytes:
    """A path (str, bytes or os.PathLike) as the bytes the file system knows it by (os.fsencode: a name that is
    not UTF-8 arrives exactly as it is on disk), NUL-free."""
    return _refuse_nul(os.fsencode(path), what)


def devices() -> List[DeviceInfo]:
    """Every Vulkan device (vkvit_enumerate_devices), without a Context: DeviceInfo objects with named fields
    (d.name, d.api_version as text '1.3.230', ...), which also read as the dicts they used to be (d['name'])."""
    lib = _lib_or_raise()
    with _process_lock:
        count = ctypes.c_uint32(0)
        _check(lib, lib.vkvit_enumerate_devices(None, 0, ctypes.byref(count)), "vkvit_enumerate_devices")
        n = count.value
        arr = (_lib.vkvit_device_info * max(n, 1))()
        _check(lib, lib.vkvit_enumerate_devices(arr, n, ctypes.byref(count)), "vkvit_enumerate_devices")
    return [_device_info_dict(arr[i]) for i in range(min(n, count.value))]


# ------------------------------------------------------------------------------------------------------------
# Locks and the object tree
# ------------------------------------------------------------------------------------------------------------

# Log callbacks run outside the binding's locks. The library calls the log on the thread of the failing call, in
# the middle of that call, while this thread holds the locks the call needed (the ctx exclusively for a failing
# Model(), the ctx shared and the session's lock for a failing run). A callback that called back into vkvit there
# would wait for a lock its own thread holds, forever, and a re-entrant lock would be no better: it would let the
# callback into the C library in the middle of a call on the same ctx, which the C THREADING rules forbid. So a
# message that arrives while its thread holds a binding lock is queued, and delivered, on the same thread, as
# soon as that thread lets go of its last one: after the C call returned, before its error is raised.
_log_delivery = threading.local()           # .held: binding locks this thread holds; .queue: (log, level, text)


def _lock_taken() -> None:
    _log_delivery.held = getattr(_log_delivery, "held", 0) + 1


def _lock_released() -> None:
    """Called after a binding lock was released: delivers the queued messages when it was this thread's last."""
    _log_delivery.held -= 1
    if _log_delivery.held:
        return
    queue = getattr(_log_delivery, "queue", None)
    while queue:
        log, level, text = queue.popleft()  # popped one by one: a callback's own calls may deliver the rest
        log(level, text)


def _deliver_log(log: Any, level: int, text: str) -> None:
    if getattr(_log_delivery, "held", 0):
        queue = getattr(_log_delivery, "queue", None)
        if queue is None:
            queue = _log_delivery.queue = collections.deque()
        queue.append((log, level, text))
    else:
        log(level, text)


class _Lock:
    """A plain mutex that counts for the log delivery above (so a message logged under it waits for its
    release)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()
        _lock_taken()

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()
        _lock_released()


_process_lock = _Lock()                     # vkvit_ctx_create / _destroy / enumerate: one thread in the process


class _RWLock:
    """Readers/writer lock. Shared: session calls. Exclusive: whole-ctx calls (create/destroy children, close).

    Fair in both directions, because either side can loop: a thread calling run() in a loop must not keep close()
    out, nor a thread creating and closing sessions in a loop keep every run() out. A writer that arrives stops
    new readers from entering, so it waits only for the readers already in. When a writer releases the lock, the
    readers that queued behind it go in before the next writer (a "read phase"); writers go in the order they
    arrived (tickets). So every wait is bounded by the work queued ahead of it: a waiting writer by the readers
    in and the writers ahead, a waiting reader by the writers ahead of it when it came. No timeouts: a slow run is
    not a failure, and giving up would only turn the wait into a spurious error."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0                   # threads holding it shared
        self._writer: Optional[int] = None  # the thread holding it exclusively
        self._write_tickets = 0             # handed out to writers in arrival order ...
        self._write_turn = 0                # ... and the ticket that may go in now (== _write_tickets: no writer)
        self._read_phase = 0                # + 1 each time a writer hands over to the readers queued behind it
        self._readers_waiting = 0
        self._readers_admitted = 0          # of those, the ones a release let in: they go before the next writer
        self._abandoned_tickets: set = set()  # of writers whose wait was interrupted (KeyboardInterrupt)

    def acquire_shared(self) -> None:
        with self._cond:
            if self._writer is None and self._write_tickets == self._write_turn:   # no writer in or waiting
                self._readers += 1
            else:
                phase = self._read_phase
                self._readers_waiting += 1
                try:
                    while self._read_phase == phase:
                        self._cond.wait()
                except BaseException:       # interrupted: leave the queue as if never in it
                    self._readers_waiting -= 1
                    if self._read_phase != phase:
                        self._readers_admitted -= 1
                    self._cond.notify_all()
                    raise
                self._readers_waiting -= 1
                self._readers_admitted -= 1
                self._readers += 1
        _lock_taken()

    def release_shared(self) -> None:
        with self._cond:
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()
        _lock_released()

    def acquire_exclusive(self, blocking: bool = True) -> bool:
        me = threading.get_ident()
        with self._cond:
            if not blocking:
                # Only when nobody is in or waiting: a finaliser must not jump the queue either.
                if (self._writer is not None or self._readers or self._readers_admitted
                        or self._write_tickets != self._write_turn):
                    return False
                ticket = self._write_tickets
                self._write_tickets += 1
            else:
                ticket = self._write_tickets
                self._write_tickets += 1
                try:
                    while (self._write_turn != ticket or self._writer is not None or self._readers
                           or self._readers_admitted):
                        self._cond.wait()
                except BaseException:       # interrupted: the writers behind must not wait for this ticket
                    if self._write_turn == ticket:
                        self._next_turn()
                    else:
                        self._abandoned_tickets.add(ticket)
                    self._cond.notify_all()
                    raise
            self._writer = me
        _lock_taken()
        return True

    def _next_turn(self) -> None:
        self._write_turn += 1
        while self._write_turn in self._abandoned_tickets:
            self._abandoned_tickets.discard(self._write_turn)
            self._write_turn += 1

    def release_exclusive(self) -> None:
        with self._cond:
            self._writer = None
            self._next_turn()
            if self._readers_waiting:       # every reader waiting now queued behind a writer: their turn
                self._read_phase += 1
                self._readers_admitted = self._readers_waiting
            self._cond.notify_all()
        _lock_released()


class _Node:
    """The C handle of one object and its place in the tree (ctx -> models -> sessions). Nodes hold no reference
    to the Python wrappers, so finalising a wrapper in any order can never free a parent before its children:
    destroy() of a node with live children only marks it, and the last child's destruction then destroys it."""

    def __init__(self, kind: str, handle: int, parent: Optional["_Node"], ctx: Optional["_CtxNode"]):
        self.kind = kind
        self.handle: Optional[int] = handle
        self.parent = parent
        self.ctx = ctx if ctx is not None else self  # type: ignore[assignment]
        self.children: set = set()
        self.pending = False                # destroy requested while children were alive
        if parent is not None:
            parent.children.add(self)

    @property
    def closed(self) -> bool:
        return self.handle is None

    def _destroy_c(self, lib: _lib.Library) -> None:
        h, self.handle = self.handle, None
        if h is None:
            return
        if self.kind == "session":
            lib.vkvit_session_destroy(h)
        elif self.kind == "model":
            lib.vkvit_model_destroy(h)
        else:
            with _process_lock:
                lib.vkvit_ctx_destroy(h)
        if self.parent is not None:
            self.parent.children.discard(self)
            if self.parent.pending and not self.parent.children:
                self.parent._destroy_c(lib)

    def close_tree(self, lib: _lib.Library) -> None:
        """Destroys the children (deepest first), then this node. Caller holds the ctx exclusively."""
        for child in list(self.children):
            child.close_tree(lib)
        self._destroy_c(lib)

    def release(self, lib: _lib.Library) -> None:
        """Destroy on behalf of a finaliser: never blocks; defers when the ctx is busy or children are alive."""
        if self.handle is None:
            return
        ctx = self.ctx
        if not ctx.rw.acquire_exclusive(blocking=False):
            ctx.deferred.append(self)
            return
        try:
            if self.children:
                self.pending = True
            else:
                self._destroy_c(lib)
        finally:
            ctx.rw.release_exclusive()


class _CtxNode(_Node):
    def __init__(self, handle: int):
        super().__init__("ctx", handle, None, None)
        self.rw = _RWLock()
        self.queue_lock = threading.Lock()
        self.deferred: list = []            # nodes whose finaliser could not take the lock

    def drain_deferred(self, lib: _lib.Library) -> None:
        """Caller holds rw exclusively."""
        while self.deferred:
            node = self.deferred.pop()
            if node.handle is None:
                continue
            if node.children:
                node.pending = True
            else:
                node._destroy_c(lib)


class _Exclusive:
    def __init__(self, node: _CtxNode, lib: _lib.Library):
        self.node, self.lib = node, lib

    def __enter__(self) -> None:
        self.node.rw.acquire_exclusive()
        self.node.drain_deferred(self.lib)

    def __exit__(self, *exc: Any) -> None:
        self.node.rw.release_exclusive()


class _Shared:
    def __init__(self, node: _CtxNode):
        self.node = node

    def __enter__(self) -> None:
        self.node.rw.acquire_shared()

    def __exit__(self, *exc: Any) -> None:
        self.node.rw.release_shared()


_live_contexts: "weakref.WeakSet[_CtxNode]" = weakref.WeakSet()


@atexit.register
def _close_all_at_exit() -> None:
    lib = _lib._library
    if lib is None:
        return
    for node in list(_live_contexts):
        if node.handle is not None and node.rw.acquire_exclusive(blocking=False):
            try:
                node.close_tree(lib)
            finally:
                node.rw.release_exclusive()


# ------------------------------------------------------------------------------------------------------------
# Context
# ------------------------------------------------------------------------------------------------------------


class Context:
    """A Vulkan device and queue (vkvit_ctx).

    Context(device=None, validation=None, pipeline_cache_dir=None, disable_f16=False, label=None, log=None)

    device              None: $VKVIT_DEVICE, else the first discrete, integrated, virtual, then CPU device; an int
                        (index) or a str (index, or case-insensitive name substring).
    validation          None: on when $VKVIT_VALIDATION=1; True: always (UnsupportedError without the layer);
                        False: never.
    pipeline_cache_dir  None: $VKVIT_CACHE_DIR, else $XDG_CACHE_HOME/vkvit, else ~/.cache/vkvit; "" disables it.
    disable_f16         never use fp16 storage/arithmetic.
    log                 None, or a callable(level: int, message: str) (0 error, 1 warning, 2 info), called on the
                        thread of the failing call (with the GIL) once that call has let go of the binding's locks
                        (before its error is raised), so it may call into vkvit, even this context.

    Raises NoLoaderError / NoDeviceError (no Vulkan), UnsupportedError, VulkanError. Use as a context manager or
    call close(); closing closes every model and session of the context first.
    """

    def __init__(self, device: Union[None, int, str] = None, validation: Optional[bool] = None,
                 pipeline_cache_dir: Optional[str] = None, disable_f16: bool = False, label: Optional[str] = None,
                 log: Optional[Any] = None):
        self._lib = lib = _lib_or_raise()
        self._node: Optional[_CtxNode] = None
        desc = _lib.vkvit_ctx_desc()
        self._keep = []                     # byte strings and the log trampoline, alive as long as the ctx
        if label is not None:
            desc.label = self._keep_bytes(_c_string(label, "Context: label"))
        if isinstance(device, (int, np.integer)):
            # bool too, refused there: True would otherwise become the name substring "True"
            device = str(_c_integer(device, "Context: device index", 0, _UINT32_MAX))
        if device is not None:
            desc.device = self._keep_bytes(_c_string(device, "Context: device"))
        desc.validation = 0 if validation is None else (1 if validation else -1)
        if pipeline_cache_dir is not None:
            desc.pipeline_cache_dir = self._keep_bytes(_c_path(pipeline_cache_dir, "Context: pipeline_cache_dir"))
        desc.disable_f16 = 1 if disable_f16 else 0
        if log is not None:
            if not callable(log):
                raise InvalidArgumentError("Context: log must be callable(level, message)")

            def call_log(level: int, text: str, _log: Any = log) -> None:
                try:
                    _log(level, text)
                except Exception:  # an exception cannot cross into C, nor out of a lock's release
                    pass

            def trampoline(_user: Any, level: int, message: bytes) -> None:
                _deliver_log(call_log, int(level), message.decode("utf-8", "replace") if message else "")

            cb = _lib.LOG_FN(trampoline)
            self._keep.append(cb)
            desc.log = cb
        handle = ctypes.c_void_p()
        with _process_lock:
            r = lib.vkvit_ctx_create(ctypes.byref(desc), ctypes.byref(handle))
            if r != _lib.VKVIT_OK:
                _raise(lib, r, "vkvit_ctx_create")
        self._node = _CtxNode(handle.value)
        _live_contexts.add(self._node)

    def _keep_bytes(self, b: bytes) -> bytes:
        self._keep.append(b)
        return b

    def _alive(self) -> _CtxNode:
        node = self._node
        if node is None or node.closed:
            raise ClosedError("vkvit.Context is closed")
        return node

    @property
    def closed(self) -> bool:
        """True after close()."""
        return self._node is None or self._node.closed

    def device_info(self) -> DeviceInfo:
        """The device vkvit uses and what it found there (vkvit_device_info as a DeviceInfo: named fields that
        also read as a dict: name, driver_name, api_version ('1.3.230'), fp16_in_use, subgroup_size, workarounds,
        validation, ...)."""
        node = self._alive()
        info = _lib.vkvit_device_info()
        with _Exclusive(node, self._lib):
            self._alive()
            _check(self._lib, self._lib.vkvit_ctx_device_info(node.handle, ctypes.byref(info)),
                   "vkvit_ctx_device_info")
        return _device_info_dict(info)

    def validation_messages(self, reset: bool = False) -> int:
        """Validation-layer messages (warnings and errors) seen since creation or the last reset; 0 with
        validation off. `reset` zeroes the count after reading it."""
        node = self._alive()
        with _Shared(node):
            self._alive()
            return int(self._lib.vkvit_ctx_validation_messages(node.handle, 1 if reset else 0))

    def close(self) -> None:
        """Closes every session and model of this context, then the context (waits for the queue to go idle).
        Idempotent."""
        node = self._node
        if node is None or node.closed:
            return
        with _Exclusive(node, self._lib):
            node.close_tree(self._lib)
        _live_contexts.discard(node)

    def __enter__(self) -> "Context":
        self._alive()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        ex = getattr(self, "_executor", None)
        if ex is not None:                  # idle (a queued call holds the session alive): let its thread end
            ex.shutdown(wait=False, cancel_futures=True)
        node = getattr(self, "_node", None)
        if node is not None and not node.closed:
            node.release(self._lib)

    def __repr__(self) -> str:
        return f"<vkvit.Context {'closed' if self.closed else hex(self._node.handle)}>"  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------------------------------------

PathOrBytes = Union[str, "os.PathLike[str]", "os.PathLike[bytes]", bytes, bytearray, memoryview]


class Model:
    """An architecture and its weights on the device (vkvit_model).

    Model(ctx, source, label=None)

    source  a path to a vkvit model file (a str, or an os.PathLike answering str or bytes; passed to C as
            os.fsencode spells it, so a name that is not UTF-8 opens too; InvalidArgumentError for one with a NUL),
            or the file's contents (bytes, bytearray, memoryview). The file is hostile input to the library: a
            corrupt one raises BadModelFileError with a sentence, never crashes.

    The model keeps `ctx` alive. Attributes: architecture, flavour, name, image_size (H, W), num_classes, labels
    (list of str, empty when the file has none), parameters, flops (per image), weight_bytes, preprocessing (dict).
    """

    def __init__(self, ctx: Context, source: PathOrBytes, label: Optional[str] = None):
        if not isinstance(ctx, Context):
            raise InvalidArgumentError("Model: ctx must be a vkvit.Context")
        self._lib = lib = ctx._lib
        self._node: Optional[_Node] = None
        self.context = ctx
        ctx_node = ctx._alive()
        self._source_path: Optional[bytes] = None      # as the file system spells it (os.fsencode)
        self._source_bytes: Optional[bytes] = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._source_bytes = bytes(source)
        elif isinstance(source, (str, os.PathLike)):
            self._source_path = _c_path(source, "Model: the path")
        else:
            raise InvalidArgumentError(f"Model: source must be a path or bytes, got {type(source).__name__}")
        label_b = _c_string(label, "Model: label") if label is not None else None
        with _Exclusive(ctx_node, lib):
            ctx._alive()
            handle = self._create(ctx_node.handle, label_b)
            self._node = _Node("model", handle, ctx_node, ctx_node)
            self._read_info()

    def _create(self, ctx_handle: int, label_b: Optional[bytes]) -> int:
        lib = self._lib
        handle = ctypes.c_void_p()
        if self._source_path is not None:
            desc = _lib.vkvit_model_desc(path=self._source_path, label=label_b)
            _check(lib, lib.vkvit_model_create(ctx_handle, ctypes.byref(desc), ctypes.byref(handle)),
                   "vkvit_model_create")
            return handle.value
        data = self._source_bytes
        assert data is not None
        if lib.has_model_data is not False:
            buf = ctypes.create_string_buffer(data, len(data)) if data else ctypes.create_string_buffer(1)
            desc = _lib.vkvit_model_desc(path=None, label=label_b or b"<bytes>",
                                         data=ctypes.cast(buf, ctypes.c_void_p), size=len(data))
            r = lib.vkvit_model_create(ctx_handle, ctypes.byref(desc), ctypes.byref(handle))
            if r == _lib.VKVIT_OK:
                lib.has_model_data = True
                return handle.value
            msg = lib.last_error()
            # A library that predates desc.data answers exactly this (src/model/model.c, vkvit 0.1.0); any other
            # answer comes from a library that read the bytes.
            if not (r == _lib.VKVIT_ERROR_INVALID_ARGUMENT and "desc->path are required" in msg):
                lib.has_model_data = True
                _raise(lib, r, "vkvit_model_create")
            lib.has_model_data = False       # a library without desc.data: fall back to a temporary file
        fd, tmp = tempfile.mkstemp(prefix="vkvit-model-", suffix=".vkvit")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            desc = _lib.vkvit_model_desc(path=os.fsencode(tmp), label=label_b or b"<bytes>")
            _check(lib, lib.vkvit_model_create(ctx_handle, ctypes.byref(desc), ctypes.byref(handle)),
                   "vkvit_model_create")
            return handle.value
        finally:
            os.unlink(tmp)

    def _read_info(self) -> None:
        lib, node = self._lib, self._node
        assert node is not None
        info = _lib.vkvit_model_info()
        _check(lib, lib.vkvit_model_get_info(node.handle, ctypes.byref(info)), "vkvit_model_get_info")
        self.architecture: str = _str(info.architecture) or ""
        self.flavour: str = _str(info.flavour) or ""
        self.name: str = _str(info.name) or ""
        self.image_size: Tuple[int, int] = (int(info.image_height), int(info.image_width))
        self.num_classes: int = int(info.num_classes)
        self.labels: List[str] = [_str(lib.vkvit_model_label(node.handle, i)) or str(i)
                                  for i in range(int(info.num_labels))]
        self.parameters: int = int(info.parameters)
        self.flops: int = int(info.flops)
        self.weight_bytes: int = int(info.weight_bytes)
        self.preprocessing: dict = {
            "image_size": list(self.image_size),
            "resize_shorter": int(info.resize_shorter),
            "interpolation": "bicubic" if info.bicubic else "bilinear",
            "mean": [float(v) for v in info.mean],
            "std": [float(v) for v in info.std],
        }

    def _alive(self) -> _Node:
        node = self._node
        if node is None or node.closed:
            raise ClosedError("vkvit.Model is closed (or its Context is)")
        return node

    @property
    def closed(self) -> bool:
        return self._node is None or self._node.closed

    def label(self, index: int) -> str:
        """The label of class `index` (its number as a string when the file has no labels)."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
            # a negative index would quietly count from the end of the list
            raise InvalidArgumentError(f"Model.label: index must be a non-negative int, got {index!r}")
        return self.labels[index] if index < len(self.labels) else str(index)

    def describe(self) -> dict:
        """What the model is: architecture, flavour, name, image_size [H, W], num_classes, labels, parameters,
        flops (per image, the seeds' formulas), weight_bytes, preprocessing {image_size, resize_shorter,
        interpolation, mean, std} — from vkvit_model_get_info and vkvit_model_label. When the library has
        vkvit_describe_model (the document `vkvit inspect --json` prints), its keys that are not above are added
        too: file, file_size, format_version, hyperparameters, params, flops_breakdown, tensors, ..."""
        self._alive()
        out = {
            "architecture": self.architecture, "flavour": self.flavour, "name": self.name,
            "image_size": list(self.image_size), "num_classes": self.num_classes, "labels": list(self.labels),
            "parameters": self.parameters, "flops": self.flops, "weight_bytes": self.weight_bytes,
            "preprocessing": dict(self.preprocessing),
        }
        lib = self._lib
        if lib.has_describe:
            doc = self._describe_json()
            if isinstance(doc, dict):
                for k, v in doc.items():
                    out.setdefault(k, v)
        return out

    def _describe_json(self) -> Any:
        """vkvit_describe_model's document. It reads desc->path only, so a model made from bytes is described
        from a private temporary copy."""
        if self._source_path is not None:
            return self._describe_path(self._source_path)
        fd, tmp = tempfile.mkstemp(prefix="vkvit-model-", suffix=".vkvit")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(self._source_bytes or b"")
            doc = self._describe_path(os.fsencode(tmp))
        finally:
            os.unlink(tmp)
        if isinstance(doc, dict) and "file" in doc:
            doc["file"] = None                  # not the temporary copy's name: the model came from memory
        return doc

    def _describe_path(self, path: bytes) -> Any:
        lib = self._lib
        desc = _lib.vkvit_model_desc(path=path)
        out = ctypes.c_void_p()
        _check(lib, lib.vkvit_describe_model(ctypes.byref(desc), ctypes.byref(out)), "vkvit_describe_model")
        try:
            text = ctypes.string_at(out.value).decode("utf-8", "replace") if out.value else "null"
        finally:
            if out.value:
                lib.vkvit_free(out)
        return json.loads(text)

    def close(self) -> None:
        """Closes the model's sessions, then the model. Idempotent."""
        node = self._node
        if node is None or node.closed:
            return
        with _Exclusive(node.ctx, self._lib):
            node.close_tree(self._lib)

    def __enter__(self) -> "Model":
        self._alive()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        ex = getattr(self, "_executor", None)
        if ex is not None:                  # idle (a queued call holds the session alive): let its thread end
            ex.shutdown(wait=False, cancel_futures=True)
        node = getattr(self, "_node", None)
        if node is not None and not node.closed:
            node.release(self._lib)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.architecture}/{self.flavour} {self.image_size}"
        return f"<vkvit.Model {self.name!r} {state}>"


# ------------------------------------------------------------------------------------------------------------
# Session
# ------------------------------------------------------------------------------------------------------------

_PRECISIONS = {"default": _lib.VKVIT_PRECISION_DEFAULT, "fp32": _lib.VKVIT_PRECISION_FP32,
               "fp16": _lib.VKVIT_PRECISION_FP16, "fp16-math": _lib.VKVIT_PRECISION_FP16_MATH}

ImageLike = Any  # a PIL.Image.Image, a path (str, os.PathLike), or a uint8 numpy array [H, W, 3|4]
Prediction = Tuple[str, int, float]


class Classification(list):
    """One image's result from Session.classify: a list of (label, class index, probability) tuples, most
    probable first (so it compares equal to the plain list classify returned before), and .error: None, or
    the sentence why this image could not be classified (then the list is empty)."""

    def __init__(self, predictions: Sequence[Prediction] = (), error: Optional[str] = None):
        super().__init__(predictions)
        self.error: Optional[str] = error

    def __repr__(self) -> str:
        return f"Classification(error={self.error!r})" if self.error is not None else super().__repr__()

    def __reduce__(self):
        return (Classification, (list(self), self.error))


def load_image(path: Any) -> np.ndarray:
    """An image file decoded by Pillow to the pixels `vkvit classify` decodes it to: uint8 [H, W, 4] RGBA, every
    Pillow mode mapped as the CLI's decoder maps it, EXIF orientation applied (vkvit._image has the table).
    BadImageError with a sentence naming the file."""
    try:
        return _image.load_rgba8(path)
    except _image.ImageError as e:
        raise BadImageError(str(e)) from None


def image_pixels(image: Any) -> np.ndarray:
    """A PIL image (any mode) as the RGBA8 pixels [H, W, 4] Session.classify hands the library for it: the CLI's
    decode of the same file (EXIF orientation applied). BadImageError with a sentence."""
    try:
        return _image.pil_to_rgba8(image)
    except _image.ImageError as e:
        raise BadImageError(str(e)) from None


def _as_ndarray(x: Any, what: str) -> np.ndarray:
    """A numpy array as it is; an object with __dlpack__ (a torch tensor: no copy) or __array__ as the ndarray it
    exports; anything else refused with a sentence."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__") and hasattr(np, "from_dlpack"):
        try:
            return np.from_dlpack(x)
        except Exception as e:  # noqa: BLE001 - a tensor on a GPU, one that needs grad, a dtype numpy lacks
            if not hasattr(x, "__array__"):
                raise InvalidArgumentError(f"{what}: cannot read the {type(x).__name__} through DLPack: {e}") \
                    from None
    if hasattr(x, "__array__"):
        try:
            a = np.asarray(x)
        except Exception as e:  # noqa: BLE001 - torch: "Can't call numpy() on Tensor that requires grad", ...
            raise InvalidArgumentError(f"{what}: cannot read the {type(x).__name__} as an array: {e}") from None
        if not isinstance(a, np.ndarray) or a.dtype == object:
            raise InvalidArgumentError(f"{what}: the {type(x).__name__}'s __array__ gave no numeric array")
        return a
    raise InvalidArgumentError(f"{what}: expected a numpy.ndarray or an object with __array__ or __dlpack__ (a "
                               f"torch tensor), got {type(x).__name__}")


_async_worker = threading.local()           # .token: the session whose async worker this thread is


def _mark_async_worker(token: object) -> None:
    _async_worker.token = token


class Session:
    """One planned and recorded graph for a fixed batch size and precision (vkvit_session).

    Session(model, batch=1, precision='fp32', top_k=0, max_image_pixels=0, profile=False, label=None)

    precision         'fp32' (the reference path), 'fp16' (fp16 GEMM weights; UnsupportedError without
                      storageBuffer16BitAccess), 'fp16-math' (fp16 weights and fp16 GEMM products; also needs
                      shaderFloat16) or 'default' (fp32).
    top_k             0, or 1..min(32, classes): softmax + top-K on the GPU after every run (classify uses it).
    max_image_pixels  0, or the largest width*height classify() will see: sizes the GPU pre-processing up front.
    profile           per-node GPU timestamps, read with profile().
    features          also output the pooled pre-logits features, read with features().
    tokens            also output the final token features, read with tokens() (vkvit_session_get_tokens).

    The session keeps its model (and so the context) alive. Shapes: input_shape (B, H, W, 3), output_shape
    (B, classes), condition_shape (None, or (B, C) / (B, Tc, C) for conditioned models). run_async and
    classify_async return concurrent.futures.Future objects, run by the session's one worker thread (ASYNC in
    the module's manual).
    """

    def __init__(self, model: Model, batch: int = 1, precision: str = "fp32", top_k: int = 0,
                 max_image_pixels: int = 0, profile: bool = False, label: Optional[str] = None,
                 features: bool = False, tokens: bool = False):
        if not isinstance(model, Model):
            raise InvalidArgumentError("Session: model must be a vkvit.Model")
        self._lib = lib = model._lib
        self._node: Optional[_Node] = None
        self._lock = _Lock()
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None   # the async worker, made on demand
        self._executor_token = object()     # what the worker thread carries in _async_worker.token
        self._executor_lock = threading.Lock()
        self._closing = False               # close() has begun: no further async call is queued
        self.model = model
        if precision not in _PRECISIONS:
            raise InvalidArgumentError(f"Session: precision must be one of {sorted(_PRECISIONS)}, got {precision!r}")
        # The C types' ranges (uint32_t batch and top_k, uint64_t max_image_pixels); the library applies its own
        # limits within them (top_k <= 32 and num_classes, ...) and says so in its sentence.
        batch = _c_integer(batch, "Session: batch", 1, _UINT32_MAX)
        top_k = _c_integer(top_k, "Session: top_k", 0, _UINT32_MAX)
        max_image_pixels = _c_integer(max_image_pixels, "Session: max_image_pixels", 0, _UINT64_MAX)
        if features and not lib.has_features:
            raise UnsupportedError("Session: the loaded libvkvit has no pooled-feature output")
        if tokens and not lib.has_tokens:
            raise UnsupportedError("Session: the loaded libvkvit has no token output")
        desc = _lib.vkvit_session_desc(batch=batch, precision=_PRECISIONS[precision], profile=1 if profile else 0,
                                       top_k=top_k, max_image_pixels=max_image_pixels,
                                       features=1 if features else 0, tokens=1 if tokens else 0)
        label_b = _c_string(label, "Session: label") if label is not None else None
        desc.label = label_b
        model_node = model._alive()
        handle = ctypes.c_void_p()
        with _Exclusive(model_node.ctx, lib):
            model._alive()
            _check(lib, lib.vkvit_session_create(model_node.handle, ctypes.byref(desc), ctypes.byref(handle)),
                   "vkvit_session_create")
            self._node = _Node("session", handle.value, model_node, model_node.ctx)
            h = handle.value
            self.input_shape: Tuple[int, ...] = lib.vkvit_session_input_shape(h).tuple()
            self.output_shape: Tuple[int, ...] = lib.vkvit_session_output_shape(h).tuple()
            cond = lib.vkvit_session_condition_shape(h).tuple()
            self.condition_shape: Optional[Tuple[int, ...]] = cond if cond else None
            self.feature_shape: Optional[Tuple[int, ...]] = None
            if lib.has_features:
                f = lib.vkvit_session_feature_shape(h).tuple()
                self.feature_shape = f if f else None
            self._token_layout = None
            if tokens:
                layout = _lib.vkvit_token_layout()
                _check(lib, lib.vkvit_session_token_layout(h, ctypes.byref(layout)), "vkvit_session_token_layout")
                self._token_layout = layout
        self.batch: int = int(batch)
        self.precision: str = precision
        self.top_k: int = int(top_k)
        self._condition_set = False
        self._last_rows = 0                     # rows (images) of the last run: what features() returns

    # -- plumbing -----------------------------------------------------------------------------------------------

    def _alive(self) -> _Node:
        node = self._node
        if node is None or node.closed:
            raise ClosedError("vkvit.Session is closed (or its Model or Context is)")
        return node

    @property
    def closed(self) -> bool:
        return self._node is None or self._node.closed

    def _call(self, fn: Any, *args: Any, submit: bool = False, what: str = "") -> None:
        """One C call on this session: holds the ctx shared (and its queue lock when the call submits). The
        caller holds self._lock."""
        node = self._alive()
        ctx = node.ctx
        with _Shared(ctx):
            node = self._alive()
            if submit:
                with ctx.queue_lock:
                    r = fn(node.handle, *args)
            else:
                r = fn(node.handle, *args)
            # Read the sentence before the lock's release delivers the logged messages: a log callback's own
            # vkvit calls would overwrite the thread's vkvit_last_error.
            _check(self._lib, r, what)

    @staticmethod
    def _check_array(a: Any, shape: Tuple[int, ...], what: str, max_rows: int = 0) -> np.ndarray:
        """`a` (a numpy array, or any object with __dlpack__ / __array__: a torch tensor) as the float32
        C-contiguous ndarray C reads, of exactly `shape`, or, with max_rows, of shape[1:] with 1..max_rows rows."""
        a = _as_ndarray(a, what)
        if a.dtype != np.float32:
            raise InvalidArgumentError(f"{what}: expected dtype float32, got {a.dtype}")
        if max_rows:
            if a.ndim != len(shape) or tuple(a.shape[1:]) != tuple(shape[1:]) or not 1 <= a.shape[0] <= max_rows:
                raise InvalidArgumentError(f"{what}: expected shape (N,) + {tuple(shape[1:])} with 1 <= N <= "
                                           f"{max_rows} (the session's batch), got {tuple(a.shape)}")
        elif tuple(a.shape) != tuple(shape):
            raise InvalidArgumentError(f"{what}: expected shape {tuple(shape)}, got {tuple(a.shape)}")
        if not a.flags["C_CONTIGUOUS"]:
            raise InvalidArgumentError(f"{what}: the array must be C-contiguous (use numpy.ascontiguousarray, "
                                       "or .contiguous() on a torch tensor)")
        if not a.flags["ALIGNED"]:
            raise InvalidArgumentError(f"{what}: the array must be aligned")
        return a

    def _output(self) -> np.ndarray:
        out = np.empty(self.output_shape, np.float32)
        self._call(self._lib.vkvit_session_get_output, out.ctypes.data, out.size, what="vkvit_session_get_output")
        return out

    # -- inference ----------------------------------------------------------------------------------------------

    def set_condition(self, condition: np.ndarray) -> None:
        """Sets the condition of a conditioned model: float32, C-contiguous, exactly condition_shape. It stays
        set for later runs until replaced. InvalidArgumentError for a model that takes no condition."""
        if self.condition_shape is None:
            self._alive()
            raise InvalidArgumentError("Session.set_condition: this model takes no condition")
        a = self._check_array(condition, self.condition_shape, "Session.set_condition")
        with self._lock:
            self._call(self._lib.vkvit_session_set_condition, a.ctypes.data, a.size,
                       what="vkvit_session_set_condition")
            self._condition_set = True

    def run(self, x: Any) -> np.ndarray:
        """One inference on a normalised float32 input [N, H, W, 3] (C-contiguous, channels-last; H, W, 3 as in
        input_shape) with 1 <= N <= batch: a numpy array or any object with __dlpack__ or __array__ (a CPU torch
        tensor, read without a copy). Returns the logits, a new float32 array [N, num_classes]; a short batch
        runs with the remaining slots zero. The GIL is released while the GPU works."""
        a = self._check_array(x, self.input_shape, "Session.run", max_rows=self.batch)
        n = a.shape[0]
        if n < self.batch:
            full = np.zeros(self.input_shape, np.float32)
            full[:n] = a
            a = full
        with self._lock:
            self._call(self._lib.vkvit_session_set_input, a.ctypes.data, a.size, what="vkvit_session_set_input")
            self._call(self._lib.vkvit_session_run, submit=True, what="vkvit_session_run")
            self._last_rows = n
            return self._output()[:n]

    def features(self) -> np.ndarray:
        """The pooled features of the last run, [N, D] float32 (N: the images or rows that run had), for a
        session created with features=True; UnsupportedError otherwise, saying which."""
        if not self._lib.has_features:
            self._alive()
            raise UnsupportedError("Session.features: the loaded libvkvit has no pooled-feature output "
                                   "(vkvit_session_get_features)")
        if not self.feature_shape:
            self._alive()
            raise UnsupportedError("Session.features: this session was created without features=True; create "
                                   "it with vkvit.Session(model, ..., features=True) to read pooled features")
        out = np.empty(self.feature_shape, np.float32)
        with self._lock:
            self._call(self._lib.vkvit_session_get_features, out.ctypes.data, out.size,
                       what="vkvit_session_get_features")
            n = self._last_rows
        return out[:n] if n else out

    def tokens(self) -> dict:
        """The final token features of the last run (include/vkvit.h, vkvit_token_layout), float32:
        {'patches': (B, Hp, Wp, C) for ViT-5 or (B, T, C), 'cls': (B, C) and 'registers': (B, R, C) where the model
        has them}, B the session's batch. UnsupportedError for a session created without tokens=True."""
        layout = self._token_layout
        if layout is None:
            self._alive()
            raise UnsupportedError("Session.tokens: this session was created without tokens=True; create it with "
                                   "vkvit.Session(model, ..., tokens=True) to read token features")
        flat = np.empty(layout.count, np.float32)
        with self._lock:
            self._call(self._lib.vkvit_session_get_tokens, flat.ctypes.data, flat.size,
                       what="vkvit_session_get_tokens")
        out = {}
        for name, shape, at in (("patches", layout.patches, 0), ("cls", layout.cls, layout.cls_offset),
                                ("registers", layout.registers, layout.registers_offset)):
            dims = shape.tuple()
            if dims:
                n = int(np.prod(dims))
                out[name] = flat[at:at + n].reshape(dims)
        return out

    @staticmethod
    def _rgba(image: ImageLike, i: int) -> np.ndarray:
        """Image i of a classify() call as RGBA8 pixels [H, W, 4]; an Error with a sentence naming it."""
        what = f"Session.classify: image {i}"
        if isinstance(image, (str, os.PathLike)):
            try:
                a = _image.load_rgba8(image)
            except _image.ImageError as e:
                raise BadImageError(f"{what}: {e}") from None
        elif isinstance(image, np.ndarray):
            a = image
        elif hasattr(image, "convert") and hasattr(image, "mode"):     # PIL.Image.Image, without importing PIL
            try:
                a = _image.pil_to_rgba8(image)
            except _image.ImageError as e:
                raise BadImageError(f"{what}: {e}") from None
        else:
            raise InvalidArgumentError(f"{what} is a {type(image).__name__}, expected a PIL image, a path (str "
                                       "or pathlib.Path) or a uint8 array [H, W, 3|4]")
        if a.dtype != np.uint8:
            raise InvalidArgumentError(f"{what} has dtype {a.dtype}, expected uint8")
        if a.ndim != 3 or a.shape[2] not in (3, 4):
            raise InvalidArgumentError(f"{what} has shape {a.shape}, expected [H, W, 3|4]")
        if a.shape[0] < 1 or a.shape[1] < 1:
            raise BadImageError(f"{what} is empty ({a.shape[1]} x {a.shape[0]})")
        if a.shape[0] > _lib.VKVIT_MAX_IMAGE_SIDE or a.shape[1] > _lib.VKVIT_MAX_IMAGE_SIDE:
            raise BadImageError(f"{what} is {a.shape[1]} x {a.shape[0]}, larger than {_lib.VKVIT_MAX_IMAGE_SIDE} "
                                "on a side")
        if a.shape[2] == 3:
            rgba = np.empty(a.shape[:2] + (4,), np.uint8)
            rgba[..., :3] = a
            rgba[..., 3] = 255
            a = rgba
        return np.ascontiguousarray(a)

    def _classify_chunk(self, chunk: List[np.ndarray], top_k: int, gpu_top_k: bool) -> List[List[Prediction]]:
        """One set_images + run of up to `batch` pictures; the caller holds self._lock."""
        n = len(chunk)
        descs = (_lib.vkvit_image * n)()
        for d, a in zip(descs, chunk):
            d.pixels = a.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
            d.width, d.height = a.shape[1], a.shape[0]
            d.row_bytes = a.strides[0]
            d.format = _lib.VKVIT_PIXEL_RGBA8
        self._call(self._lib.vkvit_session_set_images, 0, descs, n, submit=True, what="vkvit_session_set_images")
        del descs
        self._call(self._lib.vkvit_session_run, submit=True, what="vkvit_session_run")
        self._last_rows = n
        out: List[List[Prediction]] = []
        if gpu_top_k:
            k = self.top_k
            cls = np.empty((self.batch, k), np.uint32)
            prob = np.empty((self.batch, k), np.float32)
            self._call(self._lib.vkvit_session_get_top_k, cls.ctypes.data, prob.ctypes.data, cls.size,
                       what="vkvit_session_get_top_k")
            for b in range(n):
                out.append([(self.model.label(int(c)), int(c), float(p))
                            for c, p in zip(cls[b, :top_k], prob[b, :top_k])])
        else:
            logits = self._output().astype(np.float64)
            for b in range(n):
                z = logits[b] - logits[b].max()
                p = np.exp(z)
                p /= p.sum()
                order = np.argsort(-p, kind="stable")[:top_k]
                out.append([(self.model.label(int(c)), int(c), float(p[c])) for c in order])
        return out

    def classify(self, images: Any, top_k: int = 5, errors: str = "entry") -> List["Classification"]:
        """Classifies pictures of any size: each is turned into 8-bit RGB(A) pixels exactly as `vkvit classify`
        decodes files (every Pillow mode, 16-bit samples by their high byte, EXIF orientation applied:
        vkvit._image), then resized, centre-cropped and normalised on the GPU as the model file says
        (vkvit_session_set_images, docs/preprocessing.md), in chunks of `batch`. Returns one Classification per
        image: a list of the top_k (label, class index, probability) tuples, most probable first (ties: lower
        class index first), whose .error is None; an image that cannot be read, decoded or used gives an empty
        Classification whose .error is the sentence why (errors='raise': that Error is raised instead, the
        behaviour before error entries). Uses the GPU's softmax/top-K when the session was created with
        top_k >= this top_k, else a softmax of the logits on the host.

        images  a list of PIL images (any mode), paths (str or pathlib.Path, decoded by Pillow the same way) or
                uint8 arrays [H, W, 3] (RGB) / [H, W, 4] (RGBA, alpha ignored; taken as they are); a single
                picture or path is taken as a list of one."""
        if (isinstance(images, np.ndarray) and images.ndim == 3) or hasattr(images, "convert") \
                or isinstance(images, (str, os.PathLike)):
            images = [images]                   # one picture rather than a list of them
        images = list(images)
        if errors not in ("entry", "raise"):
            raise InvalidArgumentError(f"Session.classify: errors must be 'entry' or 'raise', got {errors!r}")
        classes = self.output_shape[1] if len(self.output_shape) > 1 else 0
        top_k = _c_integer(top_k, "Session.classify: top_k", 1, classes)
        if self.condition_shape is not None and not self._condition_set:
            self._alive()
            raise InvalidArgumentError("Session.classify: this model takes a condition; call set_condition first")
        self._alive()
        results: List[Classification] = [Classification() for _ in images]
        good: List[Tuple[int, np.ndarray]] = []
        for i, im in enumerate(images):
            try:
                good.append((i, self._rgba(im, i)))
            except (InvalidArgumentError, BadImageError, OutOfHostMemoryError) as e:
                if errors == "raise":
                    raise
                results[i] = Classification(error=str(e))
            except MemoryError as e:
                if errors == "raise":
                    raise
                results[i] = Classification(error=f"Session.classify: image {i}: out of host memory ({e})")
        gpu_top_k = self.top_k >= top_k
        with self._lock:
            for start in range(0, len(good), self.batch):
                part = good[start:start + self.batch]
                try:
                    preds = self._classify_chunk([a for _, a in part], top_k, gpu_top_k)
                except (BadImageError, InvalidArgumentError) as e:
                    if errors == "raise":
                        raise
                    if len(part) == 1:
                        results[part[0][0]] = Classification(error=f"Session.classify: image {part[0][0]}: {e}")
                        continue
                    preds = None
                if preds is not None:
                    for (i, _), p in zip(part, preds):
                        results[i] = Classification(p)
                    continue
                for i, a in part:                  # the library refused the chunk: find the image, one at a time
                    try:
                        results[i] = Classification(self._classify_chunk([a], top_k, gpu_top_k)[0])
                    except (BadImageError, InvalidArgumentError) as e:
                        results[i] = Classification(error=f"Session.classify: image {i}: {e}")
        return results

    # -- async ----------------------------------------------------------------------------------------------------

    def _submit(self, fn: Any, *args: Any, **kwargs: Any) -> "concurrent.futures.Future":
        """fn(*args, **kwargs) queued on this session's one worker thread; ClosedError now when it is closed."""
        with self._executor_lock:
            if self._closing:
                raise ClosedError("vkvit.Session is closed (or its Model or Context is)")
            self._alive()
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="vkvit-session", initializer=_mark_async_worker,
                    initargs=(self._executor_token,))
            return self._executor.submit(fn, *args, **kwargs)

    @staticmethod
    def _failed(e: BaseException) -> "concurrent.futures.Future":
        fut: concurrent.futures.Future = concurrent.futures.Future()
        fut.set_exception(e)
        return fut

    def run_async(self, x: Any) -> "concurrent.futures.Future":
        """run(x) on the session's worker thread: returns a concurrent.futures.Future at once, whose result() is
        run's logits [N, num_classes] and whose exception() is the vkvit.Error run would raise (a bad shape or
        dtype included). The input is checked and copied now, so the caller may reuse its buffer at once.
        ClosedError (raised, not in the future) when the session is closed."""
        self._alive()
        try:
            a = np.array(self._check_array(x, self.input_shape, "Session.run_async", max_rows=self.batch),
                         copy=True)
        except Error as e:
            return self._failed(e)
        return self._submit(self.run, a)

    def classify_async(self, images: Any, top_k: int = 5, errors: str = "entry") -> "concurrent.futures.Future":
        """classify(images, top_k, errors) on the session's worker thread: returns a concurrent.futures.Future at
        once, whose result() is classify's list of Classification (equal to the synchronous call's) and whose
        exception() is the vkvit.Error classify would raise. The list and any numpy arrays in it are copied now;
        PIL images and files are read by the worker. ClosedError (raised) when the session is closed."""
        self._alive()
        if (isinstance(images, np.ndarray) and images.ndim == 3) or hasattr(images, "convert") \
                or isinstance(images, (str, os.PathLike)):
            images = [images]
        try:
            images = [np.array(im, copy=True) if isinstance(im, np.ndarray) else im for im in images]
        except TypeError as e:
            return self._failed(InvalidArgumentError(f"Session.classify_async: images must be a list: {e}"))
        return self._submit(self.classify, images, top_k=top_k, errors=errors)

    def _shutdown_executor(self) -> None:
        """Cancels the queued async calls and waits for the running one (not when called from the worker itself,
        e.g. by a done-callback: it cannot wait for itself)."""
        with self._executor_lock:
            self._closing = True
            ex, self._executor = self._executor, None
        if ex is None:
            return
        ex.shutdown(wait=getattr(_async_worker, "token", None) is not self._executor_token, cancel_futures=True)

    # -- introspection ------------------------------------------------------------------------------------------

    def stats(self) -> dict:
        """vkvit_session_stats as a dict: arena_bytes, sum_activation_bytes, largest_activation_bytes,
        weight_bytes, nodes, barriers, pipelines, batch, sub_batch (less than batch when a device limit split it),
        largest_grid, largest_weight_binding."""
        st = _lib.vkvit_session_stats()
        with self._lock:
            self._call(self._lib.vkvit_session_get_stats, ctypes.byref(st), what="vkvit_session_get_stats")
        return {name: _plain(getattr(st, name)) for name, _ in _lib.vkvit_session_stats._fields_}

    def profile(self) -> List[Tuple[str, str, float]]:
        """(label, kind, milliseconds) per node of the last run, in execution order (profile=True sessions)."""
        count = ctypes.c_uint32(0)
        with self._lock:
            self._call(self._lib.vkvit_session_profile, None, 0, ctypes.byref(count), what="vkvit_session_profile")
            n = count.value
            arr = (_lib.vkvit_profile_entry * max(n, 1))()
            self._call(self._lib.vkvit_session_profile, arr, n, ctypes.byref(count), what="vkvit_session_profile")
            return [(_str(arr[i].label) or "", _str(arr[i].kind) or "", float(arr[i].ms))
                    for i in range(min(n, count.value))]

    # -- lifetime -----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Destroys the session (waits for its own submissions): async calls still queued are cancelled, a
        running one is waited for. Idempotent."""
        self._shutdown_executor()
        node = self._node
        if node is None or node.closed:
            return
        with self._lock:
            with _Exclusive(node.ctx, self._lib):
                node.close_tree(self._lib)

    def __enter__(self) -> "Session":
        self._alive()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        ex = getattr(self, "_executor", None)
        if ex is not None:                  # idle (a queued call holds the session alive): let its thread end
            ex.shutdown(wait=False, cancel_futures=True)
        node = getattr(self, "_node", None)
        if node is not None and not node.closed:
            node.release(self._lib)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"batch {self.batch} {self.precision} in {self.input_shape}"
        return f"<vkvit.Session {state}>"
