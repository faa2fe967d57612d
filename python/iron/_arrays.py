"""Arrays and tensors as Iron buffers: dtype names, output shapes, and the DLPack hand-over of a
torch CUDA tensor to libiron_c.so without a copy."""

import ctypes
import math
import sys

from . import _native as _n
from ._native import IronError

# Iron dtype name -> numpy dtype name (numpy has no bfloat16 or fp8 of its own: ml_dtypes adds them).
_NUMPY = {
    "f32": "float32", "f16": "float16", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
}
_ML_DTYPES = {"bf16": "bfloat16", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}
# Iron dtype name -> torch dtype attribute.
_TORCH = {
    "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i8": "int8", "i16": "int16", "i32": "int32",
    "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
}


def torch_module():
    """torch when the caller has imported it (Iron never imports torch itself)."""
    return sys.modules.get("torch")


def is_torch_tensor(v):
    torch = torch_module()
    return torch is not None and isinstance(v, torch.Tensor)


def is_array(v):
    if is_torch_tensor(v):
        return True
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.ndarray):
        return True
    return isinstance(v, (list, tuple)) or hasattr(v, "__array_interface__") or hasattr(v, "__array__")


def is_number(v):
    if isinstance(v, (bool, int, float)):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(v, np.generic) and v.ndim == 0 and v.dtype.kind in "biuf"


def scalar_value(name, v):
    """A call argument as JSON takes it: an int, or a finite float."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if not math.isfinite(v):
        raise IronError("call argument '%s' = %r is not finite" % (name, v))
    return float(v)


_torch_names = {}  # torch dtype -> Iron dtype name, filled on first use


def iron_dtype_of_torch(t):
    if not _torch_names:
        for iron_name, attr in _TORCH.items():
            d = getattr(torch_module(), attr, None)
            if d is not None:
                _torch_names[d] = iron_name
    return _torch_names.get(t.dtype)


def iron_dtype_of_numpy(dtype):
    for iron_name, np_name in _NUMPY.items():
        if dtype.name == np_name:
            return iron_name
    for iron_name, ml_name in _ML_DTYPES.items():
        if dtype.name == ml_name:
            return iron_name
    return None


def iron_dtype(name, v):
    """The Iron dtype name of a buffer argument; IronError naming it when Iron has none."""
    if is_torch_tensor(v):
        d = iron_dtype_of_torch(v)
        if d is None:
            raise IronError("buffer '%s': torch dtype %s has no Iron dtype" % (name, v.dtype))
        return d
    import numpy as np
    a = v if isinstance(v, np.ndarray) else np.asarray(v)
    d = iron_dtype_of_numpy(a.dtype)
    if d is None:
        raise IronError("buffer '%s': numpy dtype %s has no Iron dtype (f32, f16, bf16 through ml_dtypes, "
                        "i8..i64, u8..u64)" % (name, a.dtype))
    return d


def numpy_dtype(iron_name):
    import numpy as np
    if iron_name in _NUMPY:
        return np.dtype(_NUMPY[iron_name])
    if iron_name in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:
            raise IronError("numpy has no %s: install ml_dtypes, or call with torch tensors" % iron_name) from None
        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[iron_name]))
    raise IronError("Iron dtype %s has no numpy dtype" % iron_name)


def torch_dtype(iron_name):
    d = getattr(torch_module(), _TORCH.get(iron_name, ""), None)
    if d is None:
        raise IronError("Iron dtype %s has no torch dtype in this torch" % iron_name)
    return d


def output_shape(count, shapes):
    """The shape of an output of `count` elements from the shapes of the buffers passed: an
    input's shape when the counts match, else an input's leading dimensions (one value a row),
    else those leading dimensions and one more (k values a row), else 1-D."""
    def prod(s):
        return math.prod(int(x) for x in s)
    for s in shapes:
        if prod(s) == count:
            return tuple(s)
    for s in shapes:
        lead = tuple(s[:-1])
        if lead and prod(lead) == count:
            return lead
    for s in shapes:
        lead = tuple(s[:-1])
        if lead and prod(lead) > 0 and count % prod(lead) == 0:
            return lead + (count // prod(lead),)
    return (count,)


# PyCapsule access for DLPack (the capsule is named "dltensor" until a consumer takes it, then
# "used_dltensor", so its producer's destructor leaves the tensor to the consumer).
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DLTENSOR = b"dltensor"
_USED = b"used_dltensor"  # module-lifetime bytes: PyCapsule_SetName keeps the pointer


# Unsigned torch dtypes a torch without their DLPack export hands over as the signed type of the
# same width: the tensor is exported as that and its DLPack dtype code set back to unsigned.
_SIGNED_TWIN = {"u16": "int16", "u32": "int32", "u64": "int64"}
_DL_UINT = 1
_DTYPE_CODE_OFFSET = 20  # DLTensor: data (8), device (8), ndim (4), then dtype's code byte


def _legacy_capsule(t):
    """A legacy ("dltensor") capsule: torch.utils.dlpack.to_dlpack, else __dlpack__() without
    max_version (torch then keeps to the pre-1.0 ABI). No stream hand-shake: Iron launches on
    the stream torch is using."""
    to_dlpack = getattr(getattr(torch_module(), "utils", None), "dlpack", None)
    to_dlpack = getattr(to_dlpack, "to_dlpack", None)
    return to_dlpack(t) if to_dlpack is not None else t.__dlpack__()


def _capsule_of(t):
    torch = torch_module()
    try:
        return _legacy_capsule(t), False
    except (RuntimeError, TypeError, BufferError):
        twin = _SIGNED_TWIN.get(iron_dtype_of_torch(t))
        if twin is None:
            raise
        return _legacy_capsule(t.view(getattr(torch, twin))), True


def import_torch(ctx_handle, name, t):
    """A torch CUDA tensor as an Iron buffer over the same memory (DLPack, no copy)."""
    try:
        capsule, unsigned = _capsule_of(t.detach())
    except (RuntimeError, TypeError, BufferError) as e:
        raise IronError("buffer '%s': torch cannot export it through DLPack: %s" % (name, e)) from None
    return import_capsule(ctx_handle, name, capsule, unsigned)


def import_capsule(ctx_handle, name, capsule, unsigned=False):
    """A DLPack capsule ("dltensor") as an Iron buffer: Iron takes the tensor (the capsule is
    renamed "used_dltensor") and runs its deleter when the buffer is released; a tensor Iron
    refuses stays the capsule's."""
    if not _capsule_is_valid(capsule, _DLTENSOR):
        raise IronError("buffer '%s': the DLPack capsule is not an unused 'dltensor'" % name)
    ptr = _capsule_pointer(capsule, _DLTENSOR)
    if unsigned:
        ctypes.c_uint8.from_address(ptr + _DTYPE_CODE_OFFSET).value = _DL_UINT
    h = ctypes.c_void_p()
    # On failure the capsule still owns the tensor and frees it when it goes.
    _n.check(_n.buffer_from_dlpack(ctx_handle, ptr, ctypes.byref(h)), "buffer '%s': " % name)
    _capsule_set_name(capsule, _USED)
    return h
