"""A Triton matmul written the way a Triton user writes one: one program per output tile, the
tiles visited in grouped order (GROUP_M rows of tiles share their B columns in L2), a K loop of
tl.dot into an f32 accumulator, masked edges, and `triton.autotune` over block shapes, warps and
pipeline stages keyed on (M, N, K). C = A @ W^T with A [M, K] and W [N, K] row-major (the
nn.Linear layout), C [M, N] in A's dtype. Imported by gemm_peers.py for the `triton` source;
needs triton and a CUDA device.
"""
import torch
import triton
import triton.language as tl


def _configs():
    out = []
    # Large tiles for the prefill and square shapes (Hopper: 8 warps, 3-4 stages) ...
    for bm, bn, bk, stages, warps in [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 8),
                                      (128, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4),
                                      (128, 128, 32, 4, 4), (64, 64, 64, 5, 4),
                                      # ... and thin ones for decode and the small-M shapes (16 is
                                      # tl.dot's smallest M).
                                      (16, 64, 128, 4, 4), (16, 128, 128, 4, 4), (32, 64, 128, 4, 4),
                                      (16, 256, 64, 4, 4), (32, 128, 64, 4, 4), (64, 64, 128, 3, 4)]:
        out.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                 num_stages=stages, num_warps=warps))
    return out


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def _matmul_kernel(a_ptr, w_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_wn, stride_wk, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped tile order: consecutive programs walk GROUP_M tile rows down one tile column band.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    w_tile = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn  # W^T: [BLOCK_K, BLOCK_N]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k0 * BLOCK_K
        a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        w = tl.load(w_tile, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, w, acc)
        a_tile += BLOCK_K * stride_ak
        w_tile += BLOCK_K * stride_wk
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, w, out=None):
    """a [M, K] @ w[N, K]^T -> [M, N] in a's dtype (into `out` when given)."""
    M, K = a.shape
    N, K2 = w.shape
    assert K == K2, "inner dimensions differ: %d vs %d" % (K, K2)
    c = out if out is not None else torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    _matmul_kernel[grid](a, w, c, M, N, K, a.stride(0), a.stride(1), w.stride(0), w.stride(1), c.stride(0), c.stride(1))
    return c


def best_config(a, w):
    """The block shape autotuning picked for this problem (after a first call), as text."""
    M, K = a.shape
    N = w.shape[0]
    cfg = _matmul_kernel.cache.get((M, N, K)) if hasattr(_matmul_kernel, "cache") else None
    if cfg is None:
        for key, value in getattr(_matmul_kernel, "cache", {}).items():
            if tuple(key[:3]) == (M, N, K):
                cfg = value
    if cfg is None:
        return "autotuned"
    kw = cfg.kwargs
    return "BLOCK %dx%dx%d, %d warps, %d stages" % (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], cfg.num_warps,
                                                   cfg.num_stages)
