"""Iron from Python: list the kernels and families, call any kernel family through its selector on
torch CUDA tensors (zero-copy through DLPack, on the caller's current stream) or on numpy arrays
(any backend: uploaded, run, downloaded), and run Iron's tests and benchmarks.

    import iron
    out = iron.call("iron_rms_norm", x=x, w=w, rows=4, d=4096, eps=1e-6)

The binding is pure Python over libiron_c.so, Iron's C ABI, through ctypes: no compiled Python
extension, so one build serves every Python 3 (docs/python.md says why).
"""

import collections
import ctypes
import json
import os

from . import _arrays
from . import _native as _n
from ._cli import Report, bench, cli_path, test
from ._native import IronError

__all__ = ["IronError", "Context", "Plan", "Report", "call", "plan", "context", "kernels", "kernel", "families",
           "devices", "unavailable", "test", "bench", "cli_path", "__version__"]

__version__ = _n.text(_n.version())
LIB_PATH = _n.LIB_PATH


def kernels():
    """Every registered kernel: [{"name", "mode", "dtypes", "wtypes", "family", "variant", "file", "line"}]."""
    return _n.load_json(_n.kernels_json())


def kernel(name):
    """One kernel traced, with its parameters (name, kind, dtype, access, extent)."""
    out = ctypes.c_char_p()
    _n.check(_n.kernel_json(_n.encode(name), ctypes.byref(out)))
    return _n.load_json(out.value)


def families():
    """The names of every kernel family with a selector (what call() takes)."""
    return [f["family"] for f in _n.load_json(_n.families_json())]


def devices(backend=None):
    """The devices of one backend ("cuda", "vulkan", "interp", "hip"), or of all of them as
    {backend: [device, ...]}; a backend without devices gives [] (unavailable() says why)."""
    if backend is None:
        return {b: devices(b) for b in ("cuda", "vulkan", "interp", "hip")}
    out = ctypes.c_char_p()
    _n.check(_n.devices_json(_n.encode(backend), ctypes.byref(out)))
    return _n.load_json(out.value)


def unavailable(backend):
    """Why a backend has no device here ("" when it has one)."""
    out = ctypes.c_char_p()
    _n.check(_n.devices_json(_n.encode(backend), ctypes.byref(out)))
    return "" if _n.load_json(out.value) else _n.text(_n.last_error())


class Plan:
    """A family's plan for one logical call: what plan_launch chose (info["describe"],
    info["reason"], info["steps"]) and the buffers of the call (info["buffers"]: name, dtype,
    count, access, output)."""

    def __init__(self, handle, info):
        self._h = handle
        self.info = info

    def __repr__(self):
        return "<iron.Plan %s %s: %s>" % (self.info["family"], self.info["dtype"], self.info["describe"])

    def __del__(self):
        if getattr(self, "_h", None) and _n is not None and _n.plan_destroy is not None:
            _n.plan_destroy(self._h)
            self._h = None


class Context:
    """One device of a backend: "cuda" (torch tensors or numpy arrays), "vulkan" or "interp"
    (numpy arrays), "hip"."""

    _PLAN_CACHE = 256

    def __init__(self, backend="interp", index=0):
        h = ctypes.c_void_p()
        _n.check(_n.context_create(_n.encode(backend), int(index), ctypes.byref(h)))
        self._h = h
        self.backend = backend
        self.index = int(index)
        self._plans = collections.OrderedDict()
        info = ctypes.c_char_p()
        _n.check(_n.context_info_json(self._h, ctypes.byref(info)))
        self.info = _n.load_json(info.value)

    def __repr__(self):
        return "<iron.Context %s:%d %s>" % (self.backend, self.index, self.info.get("name", ""))

    def close(self):
        """Frees the device's context (pending work is waited for first). Buffers it handed out
        stay valid; the Context itself must not be used again."""
        if getattr(self, "_h", None):
            self._plans.clear()
            _n.context_destroy(self._h)
            self._h = None

    def __del__(self):
        if _n is not None and _n.context_destroy is not None:
            self.close()

    def synchronize(self):
        """Waits for every stream of the context; errors of work in flight are raised here."""
        _n.check(_n.context_synchronize(self._handle()))

    def _handle(self):
        if not getattr(self, "_h", None):
            raise IronError("this iron.Context was closed")
        return self._h

    def plan(self, family, dtype=None, **kwargs):
        """The family's plan for a call (the same arguments as call(); buffers only lend their
        dtypes, for inferring T)."""
        buffers, scalars = _split(kwargs)
        return self._plan(family, dtype, scalars, buffers)

    def _plan(self, family, dtype, scalars, buffers):
        if isinstance(dtype, (tuple, list)):
            dtype = ",".join(dtype)
        typed = [[name, _arrays.iron_dtype(name, v)] for name, v in buffers.items()]
        key = (family, dtype, tuple(sorted(scalars.items())), None if dtype else (typed[0][1] if typed else None))
        p = self._plans.get(key)
        if p is not None:
            self._plans.move_to_end(key)
            return p
        h = ctypes.c_void_p()
        args = json.dumps(scalars)
        _n.check(_n.plan_create(self._handle(), _n.encode(family), _n.encode(dtype), _n.encode(args),
                                _n.encode(json.dumps(typed)), ctypes.byref(h)))
        p = Plan(h, _n.load_json(_n.plan_json(h)))
        self._plans[key] = p
        if len(self._plans) > self._PLAN_CACHE:
            self._plans.popitem(last=False)
        return p

    def call(self, family, dtype=None, stream=None, shapes=None, **kwargs):
        """Runs kernel family `family` through its selector. Keyword arguments are the call's
        buffers (torch CUDA tensors, or numpy arrays / array-likes) and its sizes and scalars
        (numbers: rows=4, d=4096, eps=1e-6). dtype: "f16", or "f32,bf16" / ("f32", "bf16") for T and
        W; by default T is the dtype of the first buffer. An output buffer that is not passed is
        allocated (shapes={"out": (4, 8)} sets its shape; by default the shape of an input of as many
        elements, or its rows). Returns the written buffers: the one, or {name: buffer} in plan
        order when there are several. torch CUDA tensors: no copy, launched on `stream` (a
        torch.cuda.Stream or a CUstream handle; default the tensors' current stream), returning
        without waiting. numpy arrays: copied in and out; a passed buffer the plan writes is
        updated in place."""
        buffers, scalars = _split(kwargs)
        p = self._plan(family, dtype, scalars, buffers)
        if any(_arrays.is_torch_tensor(v) and v.is_cuda for v in buffers.values()):
            return self._call_torch(p, buffers, stream, shapes or {})
        if stream not in (None, 0):
            raise IronError("stream= applies to torch CUDA tensors; numpy calls run on the default stream")
        return self._call_host(p, buffers, shapes or {})

    def _outputs(self, p, buffers, make):
        """The plan's buffers the call leaves out and only writes first, made by make(name, dtype, shape)."""
        shapes_in = [tuple(v.shape) for v in buffers.values() if hasattr(v, "shape")]
        made = {}
        for b in p.info["buffers"]:
            if b["name"] not in buffers and b["output"]:
                made[b["name"]] = make(b["name"], b["dtype"], b["count"], shapes_in)
        return made

    def _result(self, p, arrays):
        written = [b["name"] for b in p.info["buffers"] if b["access"] != "in" and b["name"] in arrays]
        if len(written) == 1:
            return arrays[written[0]]
        return {name: arrays[name] for name in written}

    def _run(self, p, handles, stream):
        names = (ctypes.c_char_p * len(handles))(*[_n.encode(n) for n in handles])
        bufs = (ctypes.c_void_p * len(handles))(*[h.value for h in handles.values()])
        _n.check(_n.plan_run(self._handle(), p._h, len(handles), names, bufs, int(stream)))

    def _call_torch(self, p, buffers, stream, shapes):
        torch = _arrays.torch_module()
        if self.backend != "cuda":
            raise IronError("torch CUDA tensors need a cuda Context (this one is %s): iron.Context('cuda', index)"
                            % self.backend)
        device = None
        for name, v in buffers.items():
            if not (_arrays.is_torch_tensor(v) and v.is_cuda):
                raise IronError("buffer '%s' is not a torch CUDA tensor: a call on CUDA tensors takes CUDA tensors only"
                                % name)
            device = device or v.device
        if stream is None:
            stream = torch.cuda.current_stream(device).cuda_stream
        elif hasattr(stream, "cuda_stream"):
            stream = stream.cuda_stream

        def make(name, dtype, count, shapes_in):
            shape = tuple(shapes[name]) if name in shapes else _arrays.output_shape(count, shapes_in)
            return torch.empty(shape, dtype=_arrays.torch_dtype(dtype), device=device)

        tensors = dict(buffers)
        tensors.update(self._outputs(p, buffers, make))
        handles = collections.OrderedDict()
        try:
            for name, t in tensors.items():
                handles[name] = _arrays.import_torch(self._handle(), name, t)
            self._run(p, handles, stream)
        finally:
            for h in handles.values():
                _n.buffer_release(h)
        return self._result(p, tensors)

    def _call_host(self, p, buffers, shapes):
        import numpy as np
        arrays = {}
        for name, v in buffers.items():
            if _arrays.is_torch_tensor(v):
                v = v.detach().numpy()
            arrays[name] = v if isinstance(v, np.ndarray) else np.asarray(v)
        access = {b["name"]: b["access"] for b in p.info["buffers"]}

        def make(name, dtype, count, shapes_in):
            shape = tuple(shapes[name]) if name in shapes else _arrays.output_shape(count, shapes_in)
            return np.zeros(shape, dtype=_arrays.numpy_dtype(dtype))

        arrays.update(self._outputs(p, buffers, make))
        handles = collections.OrderedDict()
        ctx = self._handle()
        try:
            for name, a in arrays.items():
                written = access.get(name, "in") != "in"
                if written and not (a.flags.c_contiguous and a.flags.writeable):
                    raise IronError("buffer '%s' is written by %s: pass a writable C-contiguous array (or leave it "
                                    "out to have it allocated)" % (name, p.info["family"]))
                src = np.ascontiguousarray(a)
                h = ctypes.c_void_p()
                _n.check(_n.buffer_alloc(ctx, _n.encode(_arrays.iron_dtype(name, src)), src.size, ctypes.byref(h)),
                         "buffer '%s': " % name)
                handles[name] = h
                _n.check(_n.buffer_upload(ctx, h, src.ctypes.data, src.nbytes), "buffer '%s': " % name)
            self._run(p, handles, 0)
            for name, a in arrays.items():
                if access.get(name, "in") != "in":
                    _n.check(_n.buffer_download(ctx, handles[name], a.ctypes.data, a.nbytes), "buffer '%s': " % name)
        finally:
            for h in handles.values():
                _n.buffer_release(h)
        return self._result(p, arrays)


def _split(kwargs):
    """Keyword arguments as (buffers, scalars), both in the order given; None values are left out."""
    buffers, scalars = collections.OrderedDict(), collections.OrderedDict()
    for name, v in kwargs.items():
        if v is None:
            continue
        if _arrays.is_number(v):
            scalars[name] = _arrays.scalar_value(name, v)
        elif _arrays.is_array(v):
            buffers[name] = v
        else:
            raise TypeError("argument '%s' is a %s: pass an array, a tensor or a number" % (name, type(v).__name__))
    return buffers, scalars


_contexts = {}


def context(backend=None, index=0):
    """The process's Context of a device (created on first use). backend: default $IRON_BACKEND,
    else "interp"."""
    backend = backend or os.environ.get("IRON_BACKEND") or "interp"
    key = (backend, int(index))
    if key not in _contexts:
        _contexts[key] = Context(backend, index)
    return _contexts[key]


def _context_for(kwargs, backend, index):
    if backend is None:
        for v in kwargs.values():
            if _arrays.is_torch_tensor(v) and v.is_cuda:
                return context("cuda", v.device.index if v.device.index is not None else 0)
    return context(backend, 0 if index is None else index)


def call(family, backend=None, index=None, dtype=None, stream=None, shapes=None, **kwargs):
    """Context.call on the process's Context: CUDA (of the tensors' device) for torch CUDA
    tensors, else `backend` (default $IRON_BACKEND, else "interp")."""
    return _context_for(kwargs, backend, index).call(family, dtype=dtype, stream=stream, shapes=shapes, **kwargs)


def plan(family, backend=None, index=None, dtype=None, **kwargs):
    """Context.plan on the process's Context (chosen as call() chooses it)."""
    return _context_for(kwargs, backend, index).plan(family, dtype=dtype, **kwargs)
