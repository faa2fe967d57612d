"""The iron package on numpy arrays: listing, families called through their selectors on the
interpreter and on Vulkan (lavapipe in CI), outputs of the right dtype and shape, results against
numpy, bad input raised as IronError with Iron's message, and the CLI's tests and benches from
Python.

IRON_TEST_BACKENDS (default "interp,vulkan") names the backends; one named there that is not
available fails the run (CI must not pass by skipping lavapipe). Unset, Vulkan is skipped where
it has no device.
"""

import os

import numpy as np
import pytest

import iron

_EXPLICIT = os.environ.get("IRON_TEST_BACKENDS")
BACKENDS = (_EXPLICIT or "interp,vulkan").split(",")


@pytest.fixture(scope="module", params=BACKENDS)
def ctx(request):
    backend = request.param
    why = iron.unavailable(backend)
    if why:
        if _EXPLICIT:
            pytest.fail("backend %s was asked for (IRON_TEST_BACKENDS) but is unavailable: %s" % (backend, why))
        pytest.skip("%s unavailable: %s" % (backend, why))
    return iron.context(backend)


def rng(seed):
    return np.random.default_rng(seed)


# --- listing --------------------------------------------------------------------------------


def test_lists_kernels_families_and_devices():
    fams = iron.families()
    for f in ("iron_rms_norm", "iron_softmax", "iron_add", "iron_argmax", "iron_cast"):
        assert f in fams
    ks = {k["name"]: k for k in iron.kernels()}
    assert ks["iron_add"]["dtypes"] == ["f32", "f16", "bf16"]
    assert ks["iron_rms_norm_warp_x8"]["family"] == "iron_rms_norm_warp"
    params = {p["name"]: p for p in iron.kernel("iron_add")["params"]}
    assert params["out"]["access"] == "out" and params["a"]["kind"] == "buffer"
    assert iron.devices("interp")[0]["backend"] == "interp"
    assert iron.__version__.count(".") == 2


def test_unknown_kernel_is_an_iron_error():
    with pytest.raises(iron.IronError, match="no kernel named 'iron_nope'"):
        iron.kernel("iron_nope")


# --- families on numpy arrays ---------------------------------------------------------------


def rms_norm_ref(x, w, eps):
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + np.float64(np.float32(eps))) * w.astype(np.float64)


@pytest.mark.parametrize("rows,d", [(4, 64), (3, 1000), (2, 4096)])
def test_rms_norm_f32_matches_numpy(ctx, rows, d):
    g = rng(rows * d)
    x = g.standard_normal((rows, d), dtype=np.float32)
    w = g.uniform(0.5, 1.5, d).astype(np.float32)
    out = iron.call("iron_rms_norm", backend=ctx.backend, x=x, w=w, rows=rows, d=d, eps=1e-6)
    assert out.dtype == np.float32 and out.shape == (rows, d)
    # f32 math: a sum of d squares (a fixed-order tree), one rsqrt, two multiplies.
    np.testing.assert_allclose(out, rms_norm_ref(x, w, 1e-6), rtol=2e-5, atol=1e-6)


def test_rms_norm_f16_keeps_dtype_and_shape(ctx):
    g = rng(7)
    x = g.standard_normal((5, 96)).astype(np.float16)
    w = g.uniform(0.5, 1.5, 96).astype(np.float16)
    out = iron.call("iron_rms_norm", backend=ctx.backend, x=x, w=w, rows=5, d=96, eps=1e-5)
    assert out.dtype == np.float16 and out.shape == (5, 96)
    # f32 inside, one rounding to f16 at the end: within an f16 ulp (2^-10 relative) of the exact value.
    ref = rms_norm_ref(x, w, 1e-5)
    assert np.all(np.abs(out.astype(np.float64) - ref) <= np.abs(ref) * 2.0 ** -10 + 2.0 ** -24)


@pytest.mark.parametrize("family", ["iron_softmax", "iron_softmax_split", "iron_softmax_online"])
def test_softmax_routes_match_numpy(ctx, family):
    g = rng(11)
    rows, d = 3, 1000
    x = (g.standard_normal((rows, d)) * 4).astype(np.float32)
    out = iron.call(family, backend=ctx.backend, x=x, rows=rows, d=d)
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    assert out.shape == (rows, d) and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-9)


def test_split_softmax_plan_uses_scratch(ctx):
    p = ctx.plan("iron_softmax_split", x=np.zeros((3, 1000), np.float32), rows=3, d=1000)
    assert len(p.info["steps"]) == 2 and p.info["scratch"][0]["name"] == "softmax_partials"
    assert [b["name"] for b in p.info["buffers"]] == ["x", "out"]


def test_one_launch_split_k_gemm_clears_its_counters_each_run(ctx):
    # sk 1: one launch whose per-tile counters are scratch the plan marks zeroed; the C API takes
    # scratch from its pool (a previous owner's bytes) and clears that buffer on every run.
    g = rng(9)
    m, n, k = 37, 45, 256
    a = g.integers(-3, 4, (m, k)).astype(np.float16)
    b = g.integers(-3, 4, (k, n)).astype(np.float16)
    args = dict(m=m, n=n, k=k, splits=4, sk=1, out=1)
    p = ctx.plan("iron_gemm", a=a, b=b, **args)
    assert len(p.info["steps"]) == 1 and "_sk_" in p.info["steps"][0]["kernel"]
    assert {s["name"]: s.get("zeroed", False) for s in p.info["scratch"]} == {
        "partials": False, "sk_counters": True, "unused_bias_f32": False, "unused_residual_f32": False}
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)  # exact: small integers
    for _ in range(3):
        c = ctx.call("iron_gemm", a=a, b=b, **args)
        np.testing.assert_array_equal(np.asarray(c).reshape(m, n), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_add_and_mul_are_exactly_rounded(ctx, dtype):
    g = rng(3)
    a = g.standard_normal(1003).astype(dtype)
    b = g.standard_normal(1003).astype(dtype)
    s = iron.call("iron_add", backend=ctx.backend, a=a, b=b, n=a.size)
    m = iron.call("iron_mul", backend=ctx.backend, a=a, b=b, n=a.size)
    assert s.dtype == dtype and s.shape == (1003,)
    # One rounding of the exact result: what numpy computes in float64 and rounds.
    np.testing.assert_array_equal(s, (a.astype(np.float64) + b).astype(dtype))
    np.testing.assert_array_equal(m, (a.astype(np.float64) * b).astype(dtype))


def test_passed_output_is_written_in_place(ctx):
    a = np.arange(64, dtype=np.float32)
    out = np.full(64, -1.0, np.float32)
    got = iron.call("iron_add", backend=ctx.backend, a=a, b=a, out=out, n=64)
    assert got is out
    np.testing.assert_array_equal(out, a * 2)


def test_argmax_split_plan_returns_one_index_a_row(ctx):
    g = rng(5)
    rows, vocab = 2, 4096
    x = g.permutation(rows * vocab).astype(np.float32).reshape(rows, vocab)
    p = ctx.plan("iron_argmax", logits=x, rows=rows, vocab=vocab)
    assert len(p.info["steps"]) == 2  # parts, then the combine, through a scratch buffer
    out = ctx.call("iron_argmax", logits=x, rows=rows, vocab=vocab)
    assert out.shape == (rows,)
    np.testing.assert_array_equal(out.astype(np.int64), x.argmax(axis=-1))


def test_cast_takes_t_and_w(ctx):
    x = np.linspace(-3, 3, 1003, dtype=np.float32)
    y = iron.call("iron_cast", backend=ctx.backend, dtype=("f32", "f16"), x=x, n=x.size)
    assert y.dtype == np.float16 and y.shape == x.shape
    np.testing.assert_array_equal(y, x.astype(np.float16))


def test_explicit_output_shape(ctx):
    a = np.ones(12, np.float32)
    out = iron.call("iron_add", backend=ctx.backend, a=a, b=a, n=12, shapes={"out": (3, 4)})
    assert out.shape == (3, 4) and np.all(out == 2)


def test_dlpack_capsule_is_taken_and_released():
    """The zero-copy hand-over of the torch path, with a host tensor on the interpreter (which
    imports host memory): Iron takes the capsule's tensor and its deleter runs at release."""
    import sys
    from iron import _arrays, _native
    ctx = iron.context("interp")
    a = np.arange(16, dtype=np.float32)
    before = sys.getrefcount(a)
    cap = a.__dlpack__()
    h = _arrays.import_capsule(ctx._handle(), "a", cap)
    assert _arrays._capsule_is_valid(cap, b"used_dltensor") and sys.getrefcount(a) > before
    del cap
    assert sys.getrefcount(a) > before  # the buffer still holds the tensor
    _native.buffer_release(h)
    assert sys.getrefcount(a) == before
    cap = a.__dlpack__()
    h = _arrays.import_capsule(ctx._handle(), "a", cap)
    with pytest.raises(iron.IronError, match="the DLPack capsule is not an unused 'dltensor'"):
        _arrays.import_capsule(ctx._handle(), "a", cap)  # a capsule is consumed once
    _native.buffer_release(h)
    assert sys.getrefcount(a) == before


# --- bad input: IronError carrying Iron's message -------------------------------------------


def test_unknown_family(ctx):
    with pytest.raises(iron.IronError, match=r"no kernel family 'iron_nope' has a selector \(registered: .*iron_add"):
        ctx.call("iron_nope", x=np.zeros(4, np.float32))


def test_missing_call_argument(ctx):
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(iron.IronError, match=r"family iron_rms_norm \(selector at .*rms_norm.cpp:\d+\) cannot serve the "
                                             r"call at f32: the call has no argument 'eps'"):
        ctx.call("iron_rms_norm", x=x, w=np.ones(8, np.float32), rows=2, d=8)


def test_buffer_too_small_names_the_parameter(ctx):
    x = np.zeros(10, np.float32)  # 2 x 8 = 16 elements wanted
    with pytest.raises(iron.IronError, match=r"(?s)step 1 \(iron_rms_norm_.*\): invalid dispatch.*buffer 'x' has 10 elements but the kernel may touch 16"):
        ctx.call("iron_rms_norm", x=x, w=np.ones(8, np.float32), rows=2, d=8, eps=1e-6)


def test_wrong_dtype_names_the_parameter(ctx):
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(iron.IronError, match=r"'w'.*f16.*f32|'w'.*f32.*f16"):
        ctx.call("iron_rms_norm", x=x, w=np.ones(8, np.float16), rows=2, d=8, eps=1e-6)


def test_missing_input_buffer(ctx):
    with pytest.raises(iron.IronError, match="the call does not pass buffer 'w', which the plan binds"):
        ctx.call("iron_rms_norm", x=np.zeros((2, 8), np.float32), rows=2, d=8, eps=1e-6)


def test_unknown_buffer_name(ctx):
    a = np.zeros(8, np.float32)
    with pytest.raises(iron.IronError, match=r"passes buffer 'c', which no step of the plan binds \(it binds: a, b, out\)"):
        ctx.call("iron_add", a=a, b=a, c=a, n=8)


def test_non_finite_scalar(ctx):
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(iron.IronError, match="call argument 'eps' = nan is not finite"):
        ctx.call("iron_rms_norm", x=x, w=np.ones(8, np.float32), rows=2, d=8, eps=float("nan"))


def test_scalar_out_of_range_for_the_kernel(ctx):
    a = np.zeros(8, np.float32)
    with pytest.raises(iron.IronError, match="n"):
        ctx.call("iron_add", a=a, b=a, n=-1)


def test_dtype_without_iron_equivalent(ctx):
    z = np.zeros(8, np.complex64)
    with pytest.raises(iron.IronError, match="buffer 'a': numpy dtype complex64 has no Iron dtype"):
        ctx.call("iron_add", a=z, b=z, n=8)


def test_written_buffer_must_be_contiguous(ctx):
    a = np.zeros(16, np.float32)
    out = np.zeros(32, np.float32)[::2]
    with pytest.raises(iron.IronError, match="buffer 'out' is written by iron_add: pass a writable C-contiguous array"):
        ctx.call("iron_add", a=a, b=a, out=out, n=16)


def test_not_an_array_or_number():
    with pytest.raises(TypeError, match="argument 'x' is a str"):
        iron.call("iron_add", x="zeros")


def test_bad_backend_and_dtype():
    with pytest.raises(iron.IronError, match="unknown backend 'metal'"):
        iron.Context("metal")
    with pytest.raises(iron.IronError, match="dtype 'f99' is not an instantiation"):
        iron.call("iron_add", dtype="f99", a=np.zeros(8, np.float32), b=np.zeros(8, np.float32), n=8)


@pytest.mark.skipif(bool(iron.devices("cuda")), reason="this machine has a CUDA device")
def test_cuda_without_a_driver_says_so():
    with pytest.raises(iron.IronError, match="no CUDA driver"):
        iron.Context("cuda")


# --- the CLI from Python --------------------------------------------------------------------


def test_cli_test_from_python():
    r = iron.test("iron_add/n1003", backend="interp", dtype="f32")
    assert r.ok and r.summary == {"failed": 0, "passed": 1, "skipped": 0, "type": "summary", "v": 1}
    assert [t["status"] for t in r.results] == ["pass"]


def test_cli_bench_from_python():
    r = iron.bench("iron_add/n4096", backend="interp", dtype="f32", samples=3, warmup=1)
    rows = r.results
    assert len(rows) == 1 and rows[0]["bench"] == "n4096" and len(rows[0]["samples_us"]) == 3


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "iron", "test", "--backend", "interp", "-f", "iron_add/n1003", "--dtype", "f32"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0 and "1 passed, 0 failed" in p.stdout, p.stdout


def test_cli_failure_raises_with_its_output():
    with pytest.raises(iron.IronError, match="exited with"):
        iron.test("iron_add/n1003", backend="cuda" if not iron.devices("cuda") else "hip", dtype="f32")
    r = iron.test("iron_add/n1003", backend="hip", dtype="f32", check=False)
    assert not r.ok and r.summary.get("failed") == 1
