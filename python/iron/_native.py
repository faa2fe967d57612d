"""The ctypes binding of libiron_c.so (include/iron/c_api.h): where the library is found, the
functions' signatures, and IronError for every failure the library reports."""

import ctypes
import json
import os
import pathlib

_HERE = pathlib.Path(__file__).resolve().parent
_LIB_NAME = "libiron_c.so"


class IronError(RuntimeError):
    """A failure Iron reports: the message names what was wrong and where, as Iron's C++ API
    words it (a bad dispatch, an unknown family, a missing driver, ...)."""


def _candidates():
    """Where libiron_c.so may be, in the order tried."""
    env = os.environ.get("IRON_LIB")
    if env:
        yield pathlib.Path(env)
        return
    yield _HERE / "_lib" / _LIB_NAME  # an installed package (pip install .)
    build = os.environ.get("IRON_BUILD_DIR")
    if build:
        yield pathlib.Path(build) / "lib" / _LIB_NAME
    # A source checkout used in place (PYTHONPATH=python): the repository's build directory.
    yield _HERE.parent.parent / "build" / "lib" / _LIB_NAME


def _find_library():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            return path
    raise ImportError(
        "iron: libiron_c.so not found (tried: " + ", ".join(tried) + "). Install the package with "
        "`pip install --no-build-isolation .`, or build the C ABI (`cmake --build build --target iron_c`) "
        "and set IRON_BUILD_DIR, or point IRON_LIB at the library.")


LIB_PATH = _find_library()
_lib = ctypes.CDLL(str(LIB_PATH))

_c = ctypes.c_char_p
_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_ps = ctypes.POINTER(ctypes.c_char_p)


def _sig(name, restype, *argtypes):
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


api_version = _sig("iron_api_version", ctypes.c_int)
version = _sig("iron_version", _c)
last_error = _sig("iron_last_error", _c)
kernels_json = _sig("iron_kernels_json", _c)
families_json = _sig("iron_families_json", _c)
kernel_json = _sig("iron_kernel_json", ctypes.c_int, _c, _ps)
devices_json = _sig("iron_devices_json", ctypes.c_int, _c, _ps)
context_create = _sig("iron_context_create", ctypes.c_int, _c, ctypes.c_int, _pp)
context_destroy = _sig("iron_context_destroy", None, _p)
context_info_json = _sig("iron_context_info_json", ctypes.c_int, _p, _ps)
context_synchronize = _sig("iron_context_synchronize", ctypes.c_int, _p)
buffer_alloc = _sig("iron_buffer_alloc", ctypes.c_int, _p, _c, ctypes.c_uint64, _pp)
buffer_from_dlpack = _sig("iron_buffer_from_dlpack", ctypes.c_int, _p, _p, _pp)
buffer_upload = _sig("iron_buffer_upload", ctypes.c_int, _p, _p, _p, ctypes.c_uint64)
buffer_download = _sig("iron_buffer_download", ctypes.c_int, _p, _p, _p, ctypes.c_uint64)
# Releasing a buffer may run a DLPack deleter that touches Python objects (numpy's decrements the
# array's reference count): called through PyDLL, which keeps the GIL held.
_lib_gil = ctypes.PyDLL(str(LIB_PATH))
buffer_release = _lib_gil.iron_buffer_release
buffer_release.restype = None
buffer_release.argtypes = [_p]
plan_create = _sig("iron_plan_create", ctypes.c_int, _p, _c, _c, _c, _c, _pp)
plan_json = _sig("iron_plan_json", _c, _p)
plan_run = _sig("iron_plan_run", ctypes.c_int, _p, _p, ctypes.c_size_t, _ps, _pp, ctypes.c_uint64)
plan_destroy = _sig("iron_plan_destroy", None, _p)

EXPECTED_API = 1
if api_version() != EXPECTED_API:
    raise ImportError("iron: %s speaks C API version %d, this package version %d: rebuild the library"
                      % (LIB_PATH, api_version(), EXPECTED_API))


def check(rc, prefix=""):
    """Raises IronError with the library's message when a call failed."""
    if rc != 0:
        raise IronError(prefix + last_error().decode("utf-8", "replace"))


def text(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def load_json(b):
    return json.loads(text(b))


def encode(s):
    return s.encode("utf-8") if s is not None else None
