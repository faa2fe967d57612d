"""Triton peers of Iron's memory-bound kernels, written the way a Triton user writes them: one
program per row with the row in registers (BLOCK = the next power of two of the row), an online
loop for rows too long for that, one block of elements per program for element-wise work, and
`triton.autotune` where a user would reach for it (GEMV). Imported by torch_peers.py only when
the `triton` source is selected; needs triton and a CUDA device.
"""
import torch
import triton
import triton.language as tl

# Rows up to this many elements are held in registers by one program; longer rows loop.
MAX_ROW_BLOCK = 16384


def _warps(block):
    return 4 if block <= 2048 else 8 if block <= 8192 else 16


# --- element-wise ------------------------------------------------------------------------------

@triton.jit
def _binary_kernel(a_ptr, b_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    if OP == 0:
        y = a + b
    elif OP == 1:
        y = a * b
    else:  # SwiGLU: silu(a) * b
        y = a / (1.0 + tl.exp(-a)) * b
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if OP == 0:
        y = tl.exp(x)
    elif OP == 1:
        y = x / (1.0 + tl.exp(-x))
    elif OP == 2:  # GELU, tanh form: tanh(z) = 1 - 2 / (exp(2z) + 1)
        z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * z) + 1.0))
    else:  # GELU, erf form
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def binary(a, b, op):
    out = torch.empty_like(a)
    n = a.numel()
    _binary_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, OP={"add": 0, "mul": 1, "swiglu": 2}[op], BLOCK=1024)
    return out


def unary(x, op):
    out = torch.empty_like(x)
    n = x.numel()
    _unary_kernel[(triton.cdiv(n, 1024),)](x, out, n, OP={"exp": 0, "silu": 1, "gelu_tanh": 2, "gelu_erf": 3}[op], BLOCK=1024)
    return out


# --- norms -------------------------------------------------------------------------------------

@triton.jit
def _rmsnorm_kernel(x_ptr, r_ptr, w_ptr, h_ptr, out_ptr, d, eps, RESIDUAL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    x = tl.load(x_ptr + row * d + cols, mask=mask, other=0.0).to(tl.float32)
    if RESIDUAL:  # h = x + residual, rounded to the dtype, is both an output and the norm's input
        x = x + tl.load(r_ptr + row * d + cols, mask=mask, other=0.0).to(tl.float32)
        h = x.to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + row * d + cols, h, mask=mask)
        x = h.to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / d + eps)
    tl.store(out_ptr + row * d + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, w, eps, residual=None):
    rows, d = x.shape
    block = triton.next_power_of_2(d)
    out = torch.empty_like(x)
    h = torch.empty_like(x) if residual is not None else out
    _rmsnorm_kernel[(rows,)](x, residual if residual is not None else x, w, h, out, d, eps,
                             RESIDUAL=residual is not None, BLOCK=block, num_warps=_warps(block))
    return (h, out) if residual is not None else out


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, d, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    x = tl.load(x_ptr + row * d + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / d
    xc = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / d + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * d + cols, (xc * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


def layernorm(x, w, b, eps):
    rows, d = x.shape
    block = triton.next_power_of_2(d)
    out = torch.empty_like(x)
    _layernorm_kernel[(rows,)](x, w, b, out, d, eps, BLOCK=block, num_warps=_warps(block))
    return out


# --- softmax -----------------------------------------------------------------------------------

@triton.jit
def _softmax_row_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    x = tl.load(x_ptr + row * d + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * d + cols, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_online_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    # Pass 1: a running max and a rescaled running sum per lane; pass 2 writes exp(x - m) / s.
    row = tl.program_id(0).to(tl.int64)
    m_i = tl.full([BLOCK], float("-inf"), tl.float32)
    s_i = tl.zeros([BLOCK], tl.float32)
    for start in range(0, d, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * d + cols, mask=cols < d, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        alive = m_new > float("-inf")
        s_i = tl.where(alive, s_i * tl.exp(m_i - m_new) + tl.exp(x - m_new), 0.0)
        m_i = m_new
    m = tl.max(m_i, axis=0)
    s = tl.sum(tl.where(m_i > float("-inf"), s_i * tl.exp(m_i - m), 0.0), axis=0)
    for start in range(0, d, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < d
        x = tl.load(x_ptr + row * d + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_ptr + row * d + cols, (tl.exp(x - m) / s).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    rows, d = x.shape
    out = torch.empty_like(x)
    if d <= MAX_ROW_BLOCK:
        block = triton.next_power_of_2(d)
        _softmax_row_kernel[(rows,)](x, out, d, BLOCK=block, num_warps=_warps(block))
    else:
        _softmax_online_kernel[(rows,)](x, out, d, BLOCK=4096, num_warps=16)
    return out


# --- RoPE (NeoX: rotate halves) ----------------------------------------------------------------

@triton.jit
def _rope_neox_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, heads, HALF: tl.constexpr, BLOCK_H: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    h = tl.arange(0, BLOCK_H)
    i = tl.arange(0, HALF)
    mask = (h < heads)[:, None]
    base = t * heads * 2 * HALF + h[:, None] * (2 * HALF) + i[None, :]
    c = tl.load(cos_ptr + t * HALF + i)[None, :]
    s = tl.load(sin_ptr + t * HALF + i)[None, :]
    x1 = tl.load(x_ptr + base, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + base + HALF, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + base, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + base + HALF, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty), mask=mask)


def rope_neox(x, cos, sin):
    tokens, heads, dim = x.shape
    out = torch.empty_like(x)
    _rope_neox_kernel[(tokens,)](x, cos, sin, out, heads, HALF=dim // 2, BLOCK_H=triton.next_power_of_2(heads))
    return out


# --- argmax ------------------------------------------------------------------------------------

@triton.jit
def _argmax_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    # Per lane: the largest value seen and its lowest index; then the row's best, lowest index on ties.
    row = tl.program_id(0).to(tl.int64)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_i = tl.full([BLOCK], 2147483647, tl.int32)
    for start in range(0, d, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * d + cols, mask=cols < d, other=float("-inf")).to(tl.float32)
        take = (x > best) & (cols < d)
        best_i = tl.where(take, cols, best_i)
        best = tl.where(take, x, best)
    m = tl.max(best, axis=0)
    idx = tl.min(tl.where(best == m, best_i, 2147483647), axis=0)
    tl.store(out_ptr + row, idx.to(tl.int64))


def argmax(x):
    rows, d = x.shape
    out = torch.empty(rows, dtype=torch.int64, device=x.device)
    _argmax_kernel[(rows,)](x, out, d, BLOCK=4096, num_warps=8)
    return out


# --- GEMV: y[N] = W[N, K] x[K] -----------------------------------------------------------------

@triton.autotune(configs=[triton.Config({"BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w)
                          for bn, bk, w in [(4, 512, 4), (8, 256, 4), (8, 512, 4), (16, 256, 4), (16, 512, 8),
                                            (32, 128, 4), (32, 256, 8), (64, 128, 8)]],
                 key=["N", "K"])
@triton.jit
def _gemv_kernel(w_ptr, x_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < N
    acc = tl.zeros([BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        kmask = ks < K
        w = tl.load(w_ptr + rows[:, None].to(tl.int64) * K + ks[None, :], mask=rmask[:, None] & kmask[None, :],
                    other=0.0).to(tl.float32)
        x = tl.load(x_ptr + ks, mask=kmask, other=0.0).to(tl.float32)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(y_ptr + rows, acc.to(y_ptr.dtype.element_ty), mask=rmask)


def gemv(w, x):
    n, k = w.shape
    y = torch.empty(n, dtype=w.dtype, device=w.device)
    _gemv_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)](w, x, y, n, k)
    return y
