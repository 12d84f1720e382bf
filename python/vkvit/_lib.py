# SPDX-License-Identifier: Apache-2.0
"""ctypes mirror of include/vkvit.h: the library, its structs (field for field), prototypes and feature probes.

Internal module; the public API is in vkvit/__init__.py. Every struct here must have the size and field offsets
of its C counterpart: tests/python/test_binding.py compiles a small C program against include/vkvit.h and
compares them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_size_t, c_uint8, c_uint32,
                    c_uint64, c_void_p)

# ------------------------------------------------------------------------------------------------------------
# Results (enum vkvit_result)
# ------------------------------------------------------------------------------------------------------------

VKVIT_OK = 0
VKVIT_ERROR_NO_LOADER = -1
VKVIT_ERROR_NO_DEVICE = -2
VKVIT_ERROR_OUT_OF_HOST_MEMORY = -3
VKVIT_ERROR_OUT_OF_DEVICE_MEMORY = -4
VKVIT_ERROR_INVALID_ARGUMENT = -5
VKVIT_ERROR_BAD_MODEL_FILE = -6
VKVIT_ERROR_IO = -7
VKVIT_ERROR_VULKAN = -8
VKVIT_ERROR_UNSUPPORTED = -9
VKVIT_ERROR_BAD_IMAGE = -10
VKVIT_ERROR_DEVICE_LOST = -11

VKVIT_PRECISION_DEFAULT = 0
VKVIT_PRECISION_FP32 = 1
VKVIT_PRECISION_FP16 = 2
VKVIT_PRECISION_FP16_MATH = 3

VKVIT_PIXEL_RGBA8 = 1
VKVIT_PIXEL_BGRA8 = 2
VKVIT_PIXEL_NV12 = 3
VKVIT_PIXEL_I420 = 4
VKVIT_MIRROR = 4

VKVIT_MAX_TOP_K = 32
VKVIT_MAX_IMAGE_SIDE = 16384

# ------------------------------------------------------------------------------------------------------------
# Structs, in header order. Vulkan handles are pointers (dispatchable and, on 64-bit, non-dispatchable alike).
# ------------------------------------------------------------------------------------------------------------

LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)


class vkvit_host_device(Structure):
    _fields_ = [
        ("instance", c_void_p),
        ("physical_device", c_void_p),
        ("device", c_void_p),
        ("queue_family_index", c_uint32),
        ("queue", c_void_p),
        ("get_instance_proc_addr", c_void_p),
        ("api_version", c_uint32),
        ("enabled_device_extensions", POINTER(c_char_p)),
        ("enabled_device_extension_count", c_uint32),
        ("enabled_features", c_void_p),
    ]


class vkvit_ctx_desc(Structure):
    _fields_ = [
        ("label", c_char_p),
        ("device", c_char_p),
        ("validation", c_int),
        ("pipeline_cache_dir", c_char_p),
        ("disable_f16", c_int),
        ("log", LOG_FN),
        ("log_user", c_void_p),
        ("host", POINTER(vkvit_host_device)),
        ("queue_priority", c_int),          # vkvit_queue_priority: 0 default
        ("queue_priority_strict", c_int),
    ]


class vkvit_memory_heap(Structure):
    _fields_ = [
        ("size", c_uint64),
        ("budget", c_uint64),
        ("usage", c_uint64),
        ("device_local", c_int),
    ]


VKVIT_MAX_MEMORY_HEAPS = 16


class vkvit_device_info(Structure):
    _fields_ = [
        ("name", c_char * 256),
        ("driver_name", c_char * 256),
        ("driver_info", c_char * 256),
        ("vendor_id", c_uint32),
        ("device_id", c_uint32),
        ("driver_version", c_uint32),
        ("api_version", c_uint32),
        ("device_type", c_int),
        ("fp16_storage", c_int),
        ("fp16_arithmetic", c_int),
        ("fp16_in_use", c_int),
        ("subgroup_size", c_uint32),
        ("subgroup_size_min", c_uint32),
        ("subgroup_size_max", c_uint32),
        ("subgroup_size_control", c_int),
        ("subgroup_arithmetic", c_int),
        ("cooperative_matrix", c_int),
        ("timeline_semaphore", c_int),
        ("timestamps", c_int),
        ("timestamp_period_ns", c_float),
        ("max_shared_memory", c_uint32),
        ("max_workgroup_invocations", c_uint32),
        ("device_local_bytes", c_uint64),
        ("max_storage_buffer_range", c_uint64),
        ("max_workgroup_count", c_uint32 * 3),
        ("workarounds", c_char * 512),
        ("validation", c_int),
        ("adopted", c_int),
        ("subgroup_in_use", c_int),
        ("cooperative_matrix_nv", c_int),
        ("cooperative_matrix_in_use", c_int),
        ("texel_reads_in_use", c_int),
        ("cooperative_matrix_khr_kernel", c_int),
        ("queue_family_index", c_uint32),
        ("queue_flags", c_uint32),
        ("queue_compute_only", c_int),
        ("queue_priority", c_int),
        ("queue_priority_fallback", c_int),
        ("memory_budget", c_int),
        ("memory_heap_count", c_uint32),
        ("memory_heaps", vkvit_memory_heap * VKVIT_MAX_MEMORY_HEAPS),
    ]


class vkvit_model_desc_v0(Structure):
    """vkvit_model_desc as include/vkvit.h 0.1.0 declares it (path + label)."""
    _fields_ = [
        ("path", c_char_p),
        ("label", c_char_p),
    ]


class vkvit_model_desc(Structure):
    """vkvit_model_desc with the in-memory model fields appended (`const void *data; size_t size;`). A library
    that predates them reads only the first two fields, so passing this larger struct is always safe."""
    _fields_ = vkvit_model_desc_v0._fields_ + [
        ("data", c_void_p),
        ("size", c_size_t),
    ]


class vkvit_model_info(Structure):
    _fields_ = [
        ("architecture", c_char_p),
        ("flavour", c_char_p),
        ("name", c_char_p),
        ("image_height", c_uint32),
        ("image_width", c_uint32),
        ("num_classes", c_uint32),
        ("num_labels", c_uint32),
        ("parameters", c_uint64),
        ("flops", c_uint64),
        ("weight_bytes", c_uint64),
        ("resize_shorter", c_uint32),
        ("bicubic", c_int),
        ("mean", c_float * 3),
        ("std", c_float * 3),
    ]


class vkvit_session_desc(Structure):
    _fields_ = [
        ("label", c_char_p),
        ("batch", c_uint32),
        ("precision", c_int),
        ("profile", c_int),
        ("top_k", c_uint32),
        ("max_image_pixels", c_uint64),
        ("features", c_int),
        ("tokens", c_int),                  # ignored by a library without vkvit_session_get_tokens
    ]


class vkvit_shape(Structure):
    _fields_ = [
        ("ndim", c_uint32),
        ("dims", c_uint32 * 4),
    ]

    def tuple(self) -> tuple:
        return tuple(int(self.dims[i]) for i in range(min(int(self.ndim), 4)))


class vkvit_token_layout(Structure):
    _fields_ = [
        ("patches", vkvit_shape),
        ("cls", vkvit_shape),
        ("registers", vkvit_shape),
        ("cls_offset", c_uint64),
        ("registers_offset", c_uint64),
        ("count", c_uint64),
    ]


class vkvit_session_stats(Structure):
    _fields_ = [
        ("arena_bytes", c_uint64),
        ("sum_activation_bytes", c_uint64),
        ("largest_activation_bytes", c_uint64),
        ("weight_bytes", c_uint64),
        ("nodes", c_uint32),
        ("barriers", c_uint32),
        ("pipelines", c_uint32),
        ("batch", c_uint32),
        ("sub_batch", c_uint32),
        ("largest_grid", c_uint32 * 3),
        ("largest_weight_binding", c_uint64),
    ]


class vkvit_profile_entry(Structure):
    _fields_ = [
        ("label", c_char_p),
        ("kind", c_char_p),
        ("ms", c_double),
    ]


class vkvit_image(Structure):
    _fields_ = [
        ("pixels", POINTER(c_uint8)),
        ("width", c_uint32),
        ("height", c_uint32),
        ("row_bytes", c_uint32),
        ("format", c_int),
        ("chroma", POINTER(c_uint8) * 2),   # camera frames (NV12, I420) and orientation: 0 for RGBA8 / BGRA8
        ("chroma_row_bytes", c_uint32),
        ("yuv", c_int),
        ("orientation", c_uint32),
    ]


# The structs test_binding.py checks against the C header: name -> ctypes class.
STRUCTS = {
    "vkvit_host_device": vkvit_host_device,
    "vkvit_ctx_desc": vkvit_ctx_desc,
    "vkvit_device_info": vkvit_device_info,
    "vkvit_model_desc": vkvit_model_desc,
    "vkvit_model_info": vkvit_model_info,
    "vkvit_session_desc": vkvit_session_desc,
    "vkvit_token_layout": vkvit_token_layout,
    "vkvit_shape": vkvit_shape,
    "vkvit_session_stats": vkvit_session_stats,
    "vkvit_profile_entry": vkvit_profile_entry,
    "vkvit_image": vkvit_image,
}

# ------------------------------------------------------------------------------------------------------------
# Finding and loading the library
# ------------------------------------------------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_DIR = os.path.dirname(os.path.dirname(_PKG_DIR))


def candidate_paths() -> list:
    """Where the library is looked for, in order: libvkvit.so inside this package (a wheel carries its own, built
    with the binding it came with, so the struct layouts here match it); $VKVIT_LIBRARY; build/ of the source tree
    this package sits in (python/vkvit -> ../../build/libvkvit.so); the system's (ctypes.util.find_library)."""
    out = [os.path.join(_PKG_DIR, "libvkvit.so")]
    env = os.environ.get("VKVIT_LIBRARY")
    if env:
        out.append(env)
    out.append(os.path.join(_REPO_DIR, "build", "libvkvit.so"))
    found = ctypes.util.find_library("vkvit")
    if found:
        out.append(found)
    return out


def _declare(lib, name, restype, argtypes, required=True):
    fn = getattr(lib, name, None)
    if fn is None:
        if required:
            raise OSError(f"{lib._name} has no symbol {name}: not a vkvit library, or too old")
        return None
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


class Library:
    """The loaded shared library with typed entry points. `has_*` say which optional additions it has."""

    def __init__(self, path: str):
        self.path = path
        # CDLL (not PyDLL): every foreign call releases the GIL for its duration.
        lib = ctypes.CDLL(path)
        self.cdll = lib
        R = c_int
        ctx_p, model_p, session_p = c_void_p, c_void_p, c_void_p
        d = lambda *a, **k: _declare(lib, *a, **k)  # noqa: E731
        self.vkvit_result_name = d("vkvit_result_name", c_char_p, [c_int])
        self.vkvit_last_error = d("vkvit_last_error", c_char_p, [])
        self.vkvit_ctx_create = d("vkvit_ctx_create", R, [POINTER(vkvit_ctx_desc), POINTER(ctx_p)])
        self.vkvit_ctx_destroy = d("vkvit_ctx_destroy", None, [ctx_p])
        self.vkvit_ctx_device_info = d("vkvit_ctx_device_info", R, [ctx_p, POINTER(vkvit_device_info)])
        self.vkvit_enumerate_devices = d("vkvit_enumerate_devices", R,
                                         [POINTER(vkvit_device_info), c_uint32, POINTER(c_uint32)])
        self.vkvit_ctx_validation_messages = d("vkvit_ctx_validation_messages", c_uint32, [ctx_p, c_int])
        self.vkvit_model_create = d("vkvit_model_create", R, [ctx_p, c_void_p, POINTER(model_p)])
        self.vkvit_model_destroy = d("vkvit_model_destroy", None, [model_p])
        self.vkvit_model_get_info = d("vkvit_model_get_info", R, [model_p, POINTER(vkvit_model_info)])
        self.vkvit_model_label = d("vkvit_model_label", c_char_p, [model_p, c_uint32])
        self.vkvit_session_create = d("vkvit_session_create", R,
                                      [model_p, POINTER(vkvit_session_desc), POINTER(session_p)])
        self.vkvit_session_destroy = d("vkvit_session_destroy", None, [session_p])
        self.vkvit_session_input_shape = d("vkvit_session_input_shape", vkvit_shape, [session_p])
        self.vkvit_session_output_shape = d("vkvit_session_output_shape", vkvit_shape, [session_p])
        self.vkvit_session_condition_shape = d("vkvit_session_condition_shape", vkvit_shape, [session_p])
        self.vkvit_session_set_input = d("vkvit_session_set_input", R, [session_p, c_void_p, c_size_t])
        self.vkvit_session_set_condition = d("vkvit_session_set_condition", R, [session_p, c_void_p, c_size_t])
        self.vkvit_session_run = d("vkvit_session_run", R, [session_p])
        self.vkvit_session_get_output = d("vkvit_session_get_output", R, [session_p, c_void_p, c_size_t])
        self.vkvit_session_get_stats = d("vkvit_session_get_stats", R, [session_p, POINTER(vkvit_session_stats)])
        self.vkvit_session_profile = d("vkvit_session_profile", R,
                                       [session_p, POINTER(vkvit_profile_entry), c_uint32, POINTER(c_uint32)])
        self.vkvit_session_set_images = d("vkvit_session_set_images", R,
                                          [session_p, c_uint32, POINTER(vkvit_image), c_uint32])
        self.vkvit_session_get_top_k = d("vkvit_session_get_top_k", R, [session_p, c_void_p, c_void_p, c_size_t])

        # Optional additions (being added to the C API in parallel; used when present):
        #   vkvit_result vkvit_describe_model(const vkvit_model_desc *desc, char **json);  void vkvit_free(void *p);
        self.vkvit_describe_model = d("vkvit_describe_model", R, [POINTER(vkvit_model_desc), POINTER(c_void_p)],
                                      required=False)
        self.vkvit_free = d("vkvit_free", None, [c_void_p], required=False)
        self.has_describe = self.vkvit_describe_model is not None and self.vkvit_free is not None
        #   vkvit_shape vkvit_session_feature_shape(const vkvit_session *s);
        #   vkvit_result vkvit_session_get_features(vkvit_session *s, float *dst, size_t count);
        self.vkvit_session_feature_shape = d("vkvit_session_feature_shape", vkvit_shape, [session_p],
                                             required=False)
        self.vkvit_session_get_features = d("vkvit_session_get_features", R, [session_p, c_void_p, c_size_t],
                                            required=False)
        self.has_features = (self.vkvit_session_feature_shape is not None
                             and self.vkvit_session_get_features is not None)
        #   vkvit_result vkvit_session_token_layout(const vkvit_session *s, vkvit_token_layout *out);
        #   vkvit_result vkvit_session_get_tokens(vkvit_session *s, float *dst, size_t count);
        self.vkvit_session_token_layout = d("vkvit_session_token_layout", R,
                                            [session_p, POINTER(vkvit_token_layout)], required=False)
        self.vkvit_session_get_tokens = d("vkvit_session_get_tokens", R, [session_p, c_void_p, c_size_t],
                                          required=False)
        #   vkvit_result vkvit_session_get_input(vkvit_session *s, float *dst, size_t count);
        self.vkvit_session_get_input = d("vkvit_session_get_input", R, [session_p, c_void_p, c_size_t],
                                         required=False)
        self.has_tokens = (self.vkvit_session_token_layout is not None
                           and self.vkvit_session_get_tokens is not None)
        # vkvit_model_desc.data/.size: a struct field cannot be seen from outside, so it is probed by behaviour on
        # the first Model created from bytes (see Model in __init__.py): None = not probed yet.
        self.has_model_data = None

    def last_error(self) -> str:
        s = self.vkvit_last_error()
        return s.decode("utf-8", "replace") if s else ""

    def result_name(self, code: int) -> str:
        s = self.vkvit_result_name(code)
        return s.decode("ascii", "replace") if s else f"vkvit_result {code}"


_library = None


def load() -> Library:
    """The library, loaded on first use from the first of candidate_paths() that loads. OSError if none does."""
    global _library
    if _library is not None:
        return _library
    tried = []
    for path in candidate_paths():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (missing)")
            continue
        try:
            _library = Library(path)
            return _library
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise OSError("vkvit: cannot load libvkvit.so; set VKVIT_LIBRARY to its path, or build it (tools/setup.sh). "
                  "Tried: " + "; ".join(tried) if tried else "vkvit: libvkvit.so not found")
