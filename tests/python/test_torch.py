"""The iron package on torch CUDA tensors (the GPU machine: torch with CUDA; skipped elsewhere):
Iron's kernel families match torch's results, run on the caller's current stream, return
without waiting, and write the caller's memory in place (zero-copy: the output's data_ptr is the
tensor passed, or a tensor Iron allocated with torch).

Tolerances: Iron and the reference (torch in f32 on the same inputs, rounded once to the dtype)
compute the same f32 values up to accumulation order, so after the one rounding to the output
dtype they differ by at most one unit in the last place: a relative 2^-7 for bf16, 2^-10 for
f16; f32 allows the f32 accumulation differences (1e-5 relative). Near zero the unit is that of
the dtype's subnormals (2^-24 for f16), added as an absolute bound.
"""

import time

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch has no CUDA device here", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import iron  # noqa: E402

DEV = torch.device("cuda", 0)
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
RTOL = {torch.float32: 1e-5, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
SUBNORMAL_ULP = {torch.float32: 2.0 ** -149, torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -133}


def close(got, ref, dtype, atol=0.0):
    """|got - ref| <= rtol(dtype) * |ref| + atol, elementwise, with the worst element in the message."""
    got64, ref64 = got.double(), ref.double()
    err = (got64 - ref64).abs()
    bound = ref64.abs() * RTOL[dtype] + max(atol, SUBNORMAL_ULP[dtype])
    bad = err > bound
    if bad.any():
        i = int((err - bound).argmax())
        pytest.fail("%d of %d elements differ; worst at flat %d: got %r, reference %r"
                    % (int(bad.sum()), err.numel(), i, got64.flatten()[i].item(), ref64.flatten()[i].item()))


def gen(seed):
    g = torch.Generator(device=DEV)
    g.manual_seed(seed)
    return g


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,d", [(4, 4096), (33, 1000), (2, 128)])
def test_rms_norm_matches_torch(dtype, rows, d):
    g = gen(rows * d)
    x = torch.randn(rows, d, device=DEV, generator=g).to(dtype)
    w = (torch.rand(d, device=DEV, generator=g) + 0.5).to(dtype)
    out = iron.call("iron_rms_norm", x=x, w=w, rows=rows, d=d, eps=1e-6)
    assert out.dtype == dtype and out.shape == x.shape and out.device == x.device
    ref = F.rms_norm(x.float(), (d,), w.float(), eps=1e-6).to(dtype)
    close(out, ref, dtype, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("family,rows,d", [("iron_softmax", 8, 4096), ("iron_softmax", 3, 50000),
                                           ("iron_softmax_split", 3, 1000), ("iron_softmax_online", 130, 2048)])
def test_softmax_matches_torch(dtype, family, rows, d):
    x = (torch.randn(rows, d, device=DEV, generator=gen(d)) * 4).to(dtype)
    out = iron.call(family, x=x, rows=rows, d=d)
    assert out.dtype == dtype and out.shape == x.shape
    ref = torch.softmax(x.float(), dim=-1).to(dtype)
    close(out, ref, dtype, atol=1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_and_mul_are_bit_exact(dtype):
    g = gen(1)
    a = torch.randn(65537, device=DEV, generator=g).to(dtype)
    b = torch.randn(65537, device=DEV, generator=g).to(dtype)
    # torch computes a 16-bit add in f32 and rounds once, as Iron does: the same bits.
    assert torch.equal(iron.call("iron_add", a=a, b=b, n=a.numel()), a + b)
    assert torch.equal(iron.call("iron_mul", a=a, b=b, n=a.numel()), a * b)


def test_output_is_written_in_place_zero_copy():
    a = torch.randn(4096, device=DEV)
    out = torch.empty_like(a)
    ptr = out.data_ptr()
    got = iron.call("iron_add", a=a, b=a, out=out, n=a.numel())
    assert got is out and got.data_ptr() == ptr
    torch.testing.assert_close(out, a + a, rtol=0, atol=0)
    # A view of a larger tensor (contiguous, at an offset) is written where it lies.
    big = torch.zeros(3, 4096, device=DEV)
    iron.call("iron_add", a=a, b=a, out=big[1], n=a.numel())
    assert torch.equal(big[1], a + a) and not big[0].any() and not big[2].any()


def test_runs_on_the_current_stream_without_waiting():
    n = 1 << 20
    a = torch.zeros(n, device=DEV)
    out = torch.empty_like(a)
    iron.call("iron_add", a=a, b=a, out=out, n=n)  # compiled and planned before the timing
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time on s
        a.fill_(1.5)                     # runs on s after the sleep
        t0 = time.perf_counter()
        iron.call("iron_add", a=a, b=a, out=out, n=n)  # must read the filled a: ordered on s
        host_s = time.perf_counter() - t0
        done_at_return = s.query()
    s.synchronize()
    assert torch.all(out == 3.0), "Iron's launch did not run after the work already on the current stream"
    assert not done_at_return and host_s < 0.05, "the call waited for the stream (%.3f s)" % host_s


def test_default_stream():
    a = torch.arange(1000, device=DEV, dtype=torch.float32)
    assert torch.cuda.current_stream().cuda_stream == 0
    out = iron.call("iron_mul", a=a, b=a, n=a.numel())
    torch.cuda.synchronize()
    assert torch.equal(out, a * a)


def test_explicit_stream_argument():
    s = torch.cuda.Stream()
    a = torch.full((256,), 2.0, device=DEV)
    torch.cuda.synchronize()
    out = iron.call("iron_add", a=a, b=a, n=256, stream=s)
    s.synchronize()
    assert torch.all(out == 4.0)


def test_argmax_returns_one_index_a_row():
    x = torch.randn(4, 32000, device=DEV, generator=gen(9))
    idx = iron.call("iron_argmax", logits=x, rows=4, vocab=32000)
    assert idx.shape == (4,)
    assert torch.equal(idx.long(), x.argmax(dim=-1))


def test_cast_to_another_dtype():
    x = torch.randn(1003, device=DEV)
    y = iron.call("iron_cast", x=x, n=x.numel(), dtype=("f32", "bf16"))
    assert y.dtype == torch.bfloat16 and torch.equal(y, x.to(torch.bfloat16))


def test_bad_tensors_raise_iron_errors():
    x = torch.randn(8, 16, device=DEV)
    w = torch.ones(16, device=DEV)
    with pytest.raises(iron.IronError, match="buffer 'x': from_dlpack: the tensor is not compact row-major"):
        iron.call("iron_rms_norm", x=x.t(), w=w, rows=16, d=8, eps=1e-6)
    with pytest.raises(iron.IronError, match="buffer 'w' is not a torch CUDA tensor"):
        iron.call("iron_rms_norm", x=x, w=w.cpu(), rows=8, d=16, eps=1e-6)
    with pytest.raises(iron.IronError, match=r"(?s)invalid dispatch.*buffer 'x' has 128 elements but the kernel may touch 256"):
        iron.call("iron_rms_norm", x=x, w=w, rows=16, d=16, eps=1e-6)
    with pytest.raises(iron.IronError, match="'w'"):
        iron.call("iron_rms_norm", x=x, w=w.half(), rows=8, d=16, eps=1e-6)


def test_cli_runs_the_cuda_corpus_case():
    r = iron.test("iron_add/n1003", backend="cuda", dtype="f32")
    assert r.ok and [t["status"] for t in r.results] == ["pass"]
