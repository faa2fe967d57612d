// Kernel-owned launch of the GEMM family: `iron_gemm` takes the logical call
//   m, n, k                     C [m, n] = A [m, k] B [k, n]
//   a_trans (0)                 0: A row-major, row stride lda (default k); 1: A column-major
//                               (stored as [k, m]), column stride lda (default m)
//   b_trans (0)                 0: B row-major, row stride ldb (default n); 1: B column-major
//                               (stored as [n, k], a linear layer's weight), ldb default k
//   a_off, b_off (0)            the element of A (0, 0) and of B (0, 0) in a and b (and b2)
//   epi (0)                     0 none, 1 bias, 2 silu(+bias), 3 gelu(+bias), 4 residual, 5 swiglu
//   out (0)                     C's dtype: 0 = T, 1 = f32, 2 = f16, 3 = bf16
//   splits, tile, stages        optional overrides (tests, benchmarks): the split count, the block
//                               tile (0 large 128x128, 1 medium 64x64, 2 small 32x32, 3 decode
//                               rows) and the pipeline depth of the medium tile (2-4)
//   ksplit                      decode rows only: K slices per 4 rows of W (1, 2, 4, 8, 16)
//   mma                         decode rows only: 0 the lanes body (default), 1 the tiles body, 2 the
//                               tiles where the device has room for them, else the lanes
//   unroll                      decode rows, lanes body only: 16-byte chunks of each W row a lane
//                               loads per step before it multiplies (1, 2 or 4; default 2, and 4
//                               at m = 1 where every lane has 4 steps of chunks)
//   wg                          the 128x128 tile only: 1 the warpgroup kernel (wgmma; on the CUDA and
//                               interpreter backends), 0 the mma.sync kernel; default: the
//                               warpgroup kernel for B column-major, A row-major, no SwiGLU on sm_90a
//   sk                          split-K: 1 one launch (below), 0 two launches (the default)
//   ws                          with tma 2: 1 the warp-specialized kernel (the default on CUDA), 0 not
//   tma                         the warpgroup kernel's operands by tensor-map copies, 4 stages: 0
//                               off, 1 the 128x128 tile, 2 the 128x256 tile; default on CUDA
//                               sm_90a where the layout allows it (A
//                               row-major, B a [n, k] weight, no offsets): 2 when the 128x256
//                               blocks fill every compute unit, else 1; decode rows: 0 the older
//                               bodies, 1 the warpgroup decode kernel (the default on CUDA sm_90a
//                               where it fits: below)
// with buffers a, b (T), c (out), and b2 (swiglu), bias [n] or residual [m, n] (out's dtype).
//
// Decode rows first: m <= 16 against B column-major (a [n, k] weight), A row-major, k, lda, ldb,
// a_off and b_off multiples of 8 and any epilogue but SwiGLU take iron_gemm_decode_<OUT>
// (gemm_decode.cpp), one kernel with the epilogue fused, its K slices chosen so the grid has
// about 16 lane groups per compute unit. On CUDA sm_90a, bf16 calls with C in f32 or bf16, no offsets and a
// 64-row box of W per compute unit at least take iron_gemm_decode_wg_tma_<OUT> instead (tensor-map
// copies, wgmma) at m >= 3, unless the call says tma 0, mma, ksplit or unroll. Otherwise gemm_for picks the block tile from the shape
// and the device (m <= 64: 32x32; fewer 128x128 blocks than compute units: 64x64; else 128x128;
// a device with under 64 KiB of threadgroup memory, lavapipe: 32x32 whatever `tile` and `stages`
// ask), and the split count from occupancy as in the seeds' §4.2: splits = clamp(ceil(2 * units
// / blocks), 1, k / 64), snapped so every split covers the same whole number of K steps. One
// split and a tile with that epilogue fused: one kernel (SwiGLU fuses at f16/bf16 outputs).
// With sk = 1 (several splits on the 64x64 tile at 3 stages or the 32x32 tile, no SwiGLU): one
// launch of iron_gemm_<tile>_sk_s<S>_<OUT>, whose last threadgroup per output tile (a u32 counter in zeroed
// scratch, which the kernel resets) sums the f32 partials in split order and applies the epilogue.
// Otherwise two steps: the f32 partials [splits, m, n] of every split (SwiGLU: of both
// products), then iron_gemm_reduce_<epi>, which sums them in split order (no atomics).
#include <algorithm>
#include <cstdlib>
#include <string>

#include <iron/blas.hpp>
#include <iron/iron.hpp>

#include "gemm.hpp"

namespace iron::kernels::gemm {

namespace {

constexpr Config kConfigs[3] = {{128, 128, 64, 64, 32}, {64, 64, 32, 32, 32}, {32, 32, 32, 16, 16}};
constexpr uint32_t kStages[3] = {3, 3, 2};
// The large tile's fused SwiGLU kernel stages 32-deep K steps (gemm.cpp, kLargeSwiglu); kc is a
// multiple of 64 there, so of its BK too.
constexpr Config kLargeSwiglu{128, 128, 32, 64, 32};

// Whether split-K plans of the 64x64 (3 stages) and 32x32 tiles without SwiGLU take the one-launch
// kernels when the call does not say (`sk`). No: on the H200 (2026-12-01, sk-s10) one launch took
// 19.5 / 17.0 / 35.0 us against the two launches' 12.6 / 12.9 / 14.5 at [96, 2048] x W [512,
// 2048] (16 splits), [256, 2048] x W [512, 2048] (8) and M256 N96 K5120 (32): the last
// threadgroup of a tile reads every split's partial tile alone, where the reduce kernel spreads
// the same reads over the whole device.
constexpr bool kSkByDefault = false;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

std::string num(int64_t v) { return std::to_string(v); }

int64_t flag(const Call& call, const char* name, int64_t fallback, int64_t most) {
  const int64_t v = call.size_or(name, fallback);
  if (v > most) throw Error(std::string(name) + " = " + num(v) + " is out of range (0 .. " + num(most) + ")");
  return v;
}

// IRON_GEMM_VENDOR: unset or "1" lets gemm_for route to cuBLASLt, "0" keeps Iron's kernels.
bool vendor_env_allows() {
  const char* v = std::getenv("IRON_GEMM_VENDOR");
  const std::string s = v ? v : "";
  if (s.empty() || s == "1") return true;
  if (s == "0") return false;
  throw Error("IRON_GEMM_VENDOR='" + s + "' is not 0 or 1 (0 keeps gemm_for on Iron's own kernels)");
}

}  // namespace

static LaunchPlan gemm_for(const Call& call, const DeviceInfo& dev) {
  const DType t = call.dtype.t;
  if (t != DType::F16 && t != DType::BF16)
    throw Error(std::string("A and B must be f16 or bf16, not ") + dtype_name(t));
  if ((t == DType::F16 && !dev.f16) || (t == DType::BF16 && !dev.bf16))
    throw Error("device " + dev.name + " has no " + dtype_name(t) + " support");
  const int64_t m = call.size("m"), n = call.size("n"), k = call.size("k");
  if (m < 1 || n < 1 || k < 1)
    throw Error("m = " + num(m) + ", n = " + num(n) + ", k = " + num(k) + ": each must be at least 1");
  const bool a_trans = flag(call, "a_trans", 0, 1) == 1, b_trans = flag(call, "b_trans", 0, 1) == 1;
  const Epi epi = Epi(flag(call, "epi", 0, kEpis - 1));
  const int64_t out_code = flag(call, "out", 0, 3);
  const DType out = out_code == 0 ? t : out_code == 1 ? DType::F32 : out_code == 2 ? DType::F16 : DType::BF16;
  // A is m x k: its contiguous extent is k (row-major) or m (column-major), the other is lda's.
  const int64_t a_inner = a_trans ? m : k, a_outer = a_trans ? k : m;
  const int64_t b_inner = b_trans ? k : n, b_outer = b_trans ? n : k;
  const int64_t lda = call.size_or("lda", a_inner), ldb = call.size_or("ldb", b_inner);
  if (lda < a_inner)
    throw Error("lda = " + num(lda) + " is less than " + (a_trans ? "m = " : "k = ") + num(a_inner) + " (A " +
                (a_trans ? "column" : "row") + "-major)");
  if (ldb < b_inner)
    throw Error("ldb = " + num(ldb) + " is less than " + (b_trans ? "k = " : "n = ") + num(b_inner) + " (B " +
                (b_trans ? "column" : "row") + "-major)");
  const int64_t a_off = call.size_or("a_off", 0), b_off = call.size_or("b_off", 0);
  const uint64_t a_len = uint64_t(a_off) + uint64_t(a_outer - 1) * uint64_t(lda) + uint64_t(a_inner);
  const uint64_t b_len = uint64_t(b_off) + uint64_t(b_outer - 1) * uint64_t(ldb) + uint64_t(b_inner);
  if (a_len > UINT32_MAX || b_len > UINT32_MAX)
    throw Error("A spans " + num(int64_t(a_len)) + " and B " + num(int64_t(b_len)) +
                " elements: each must be below 2^32 (the kernels index in u32)");

  LaunchPlan plan;
  // The epilogue scalars of the non-SwiGLU kernels; a bias or residual the epilogue does not
  // read binds a one-element scratch buffer.
  const bool uses_bias = epi == Epi::Bias || epi == Epi::Silu || epi == Epi::Gelu, uses_res = epi == Epi::Residual;
  auto epilogue = [&](Constexprs& c, std::vector<std::pair<std::string, std::string>>& bind, bool with_epi,
                      DType dt, LaunchPlan& plan) {
    c["epi"] = uint32_t(with_epi ? int(epi) : 0);
    c["bias_len"] = uint32_t(with_epi && uses_bias ? n : 1);
    c["res_len"] = uint32_t(with_epi && uses_res ? m * n : 1);
    auto unused = [&](const std::string& param) {
      const std::string scratch = "unused_" + param + "_" + dtype_name(dt);
      bool have = false;
      for (const ScratchBuffer& b : plan.scratch) have = have || b.name == scratch;
      if (!have) plan.scratch.push_back({scratch, dt, 1});
      bind.push_back({param, scratch});
    };
    if (!(with_epi && uses_bias)) unused("bias");
    if (!(with_epi && uses_res)) unused("residual");
  };

  // Decode rows: the streaming kernel (gemm_decode.cpp) for m <= 16 against B column-major (a
  // [n, k] weight) with A row-major, every row 16-byte aligned, any epilogue but SwiGLU. Forced
  // with tile 3 (then at any m: blocks of 16 rows of A, W re-read per block).
  const bool decode_fits = b_trans && !a_trans && k % 8 == 0 && lda % 8 == 0 && ldb % 8 == 0 && a_off % 8 == 0 &&
                           b_off % 8 == 0 && epi != Epi::Swiglu;
  const bool tile_asked = call.has("tile");
  const bool decode_asked = tile_asked && flag(call, "tile", 0, 3) == 3;
  if (decode_asked && !decode_fits)
    throw Error(std::string("tile 3 (decode rows) needs B column-major (b_trans 1), A row-major, k, lda, ldb, a_off "
                            "and b_off multiples of 8 and an epilogue other than SwiGLU; ") +
                (!b_trans ? "B is row-major" : a_trans ? "A is column-major" : epi == Epi::Swiglu ? "epi is SwiGLU"
                 : "k = " + num(k) + ", lda = " + num(lda) + ", ldb = " + num(ldb) + ", a_off = " + num(a_off) +
                       ", b_off = " + num(b_off)));
  // Also 16 < m <= 64 at n <= 128 (N = 96, K = 5120 on the H200: 15.2 / 15.4 us at m = 26 / 49
  // against 15.7 / 18.0 on the 32x32 tile's split-K).
  const bool decode_shape = m <= 16 || (m <= 64 && n <= 128);
  if (decode_asked || (!tile_asked && decode_shape && decode_fits && !call.has("splits") && !call.has("stages"))) {
    const uint32_t lanes = std::max(1u, dev.lane_width);
    const uint64_t units = dev.compute_units ? dev.compute_units : 8;
    const uint64_t shared_most = std::max(dev.shared_memory_bytes, dev.shared_memory_optin_bytes);
    // The warpgroup decode kernel (gemm_decode.cpp, iron_gemm_decode_wg_tma_<OUT>): 64 rows of W per
    // threadgroup, W and A by tensor-map copies into 8 stages, wgmma m64n16k16 products. It needs
    // m <= 16, bf16 A and W, C in f32 or bf16, A and W from their buffers' first element (the
    // maps cover the whole buffers) and the stages' 80 KiB; the CUDA and interpreter backends. The
    // default on CUDA sm_90a where it fits, W has a box of 64 rows for every compute unit at least
    // (one threadgroup streams one box row: fewer leave units idle, where the older bodies spread
    // K over more lane groups; n = 96 has 2) and the call names none of the older bodies'
    // arguments (mma, ksplit, unroll); `tma` 0 keeps the older bodies, 1 asks for it (an error
    // where it does not fit; ignored and said on a backend without warpgroup products).
    // The stages (1024-byte aligned) after the barriers and the 64 x 16 f32 scratch: 87040 bytes.
    const uint64_t wg_bytes = uint64_t(kDecodeWgStages) * (kDecodeWgRows + kDecodeBlock) * 64 * 2 +
                              ceil_div(16 * kDecodeWgStages + uint64_t(kDecodeWgRows) * kDecodeBlock * 4, 1024) * 1024;
    const bool wg_backend = dev.backend == Backend::Cuda || dev.backend == Backend::Interp;
    const bool wg_fits = m <= 16 && t == DType::BF16 && (out == DType::F32 || out == DType::BF16) && a_off == 0 &&
                         b_off == 0 && wg_bytes <= shared_most;
    // m <= 2 keeps the lanes body (m = 2: 32.5 µs against 33.5, trust-s13; m = 1, 4 chunks per
    // step): 30.8-30.9 µs against the warpgroup
    // kernel's 32.4-32.5 at K 4096, N 14336 on the H200 (read flush, same call; m = 4: 33.8-34.3
    // against 35.6-35.7, m = 8: 32.4-32.6 against 50.6-50.8, m = 16: 33.0-33.5 against 60.3-60.5;
    // docs/benchmarks/hopper-2026-12-02/decwg-s13).
    bool wg_decode = wg_fits && m >= 3 && dev.backend == Backend::Cuda && dev.arch == "sm_90a" &&
                     ceil_div(uint64_t(n), kDecodeWgRows) >= units && !call.has("mma") && !call.has("ksplit") &&
                     !call.has("unroll");
    std::string wg_decode_note;
    if (call.has("tma")) {
      const int64_t want = flag(call, "tma", 0, 1);
      wg_decode = want == 1 && wg_backend;
      if (want == 1 && !wg_backend) wg_decode_note = "; tma 1 but no warpgroup kernel on this backend";
      if (wg_decode && !wg_fits)
        throw Error("tma = 1 (decode rows on the warpgroup tiles) needs m <= 16, A and B in bf16, C in f32 or bf16, "
                    "a_off = b_off = 0 and " + num(int64_t(wg_bytes)) + " B of threadgroup memory; this call has m = " +
                    num(m) + ", " + dtype_name(t) + " A and B, C in " + dtype_name(out) + ", a_off = " + num(a_off) +
                    ", b_off = " + num(b_off) + " (device " + dev.name + ": " + num(int64_t(shared_most)) + " B)");
    }
    if (wg_decode) {
      LaunchStep step;
      step.kernel = std::string("iron_gemm_decode_wg_tma_") + dtype_name(out);
      step.grid = {uint32_t(ceil_div(uint64_t(n), kDecodeWgRows)), 1, 1};
      if (step.grid.x > dev.max_grid.x) throw Error("grid " + num(step.grid.x) + "x1x1 exceeds the device's limits");
      step.threadgroup = {8 * lanes, 1, 1};  // a copying warpgroup and a multiplying one
      step.constexprs = {{"m", uint32_t(m)}, {"n", uint32_t(n)}, {"k", uint32_t(k)}, {"a_len", uint32_t(a_len)},
                         {"b_len", uint32_t(b_len)}};
      // A as [m, k] and W as [n, k], K innermost: boxes of 64 K elements (128 bytes, the 128-byte
      // swizzle) by 16 rows of A (rows past m zero-filled) and 64 rows of W.
      step.maps = {{"a_map", "a", {uint64_t(k), uint64_t(m)}, {uint64_t(lda) * 2}, {64, kDecodeBlock}, TensorMap::Swizzle::B128},
                   {"b_map", "b", {uint64_t(k), uint64_t(n)}, {uint64_t(ldb) * 2}, {64, kDecodeWgRows}, TensorMap::Swizzle::B128}};
      epilogue(step.constexprs, step.bind, true, out, plan);
      plan.steps.push_back(step);
      plan.reason = (decode_asked ? std::string("tile 3 as asked") : "m = " + num(m) + " <= 16 against a [n, k] weight") +
                    ": decode rows on the warpgroup tiles (64 rows of W per threadgroup, W and A by tensor-map copies "
                    "into " + num(kDecodeWgStages) + " stages, wgmma m64n16k16), the " + epi_name(epi) +
                    " epilogue fused (one kernel)";
      return plan;
    }
    // The tiles body: m <= 16, k a multiple of 16, n >= 16, A's block (16 x (k + 8)) and the lane
    // groups' 16 x 16 f32 slots in threadgroup memory. The default from m = 10 (below), where the
    // lanes' f32 products cost more than reading W (at m = 16, 64 FMAs per 4 bytes of W).
    // 8 lane groups, each with its ring of staged W blocks (16 rows x 72 elements each).
    // A's block is staged row-major with the row stride k + 8. Lane groups are halved (down to 1)
    // while the threadgroup memory does not fit (k = 5120 on the H200: 4).
    const uint64_t at_len = (uint64_t(k) + 8) * kDecodeBlock;
    uint32_t tile_groups = std::max(1u, std::min(8u, dev.max_threads_per_group / lanes));
    auto tile_bytes_of = [&](uint32_t g) {
      return at_len * 2 + uint64_t(g) * kDecodeTileStages * 16 * kDecodeTileLd * 2 + uint64_t(g) * 256 * 4 + 48;
    };
    while (tile_groups > 1 && tile_bytes_of(tile_groups) > shared_most) tile_groups /= 2;
    const uint64_t ws_len = uint64_t(tile_groups) * kDecodeTileStages * 16 * kDecodeTileLd;
    const uint64_t tile_bytes = tile_bytes_of(tile_groups);
    // (Under 64 KiB of threadgroup memory, lavapipe and Vulkan generally, the tiles' software
    // fragments would need threadgroup memory too: the lanes body there.)
    const bool tiles_fit = k % 16 == 0 && n >= 16 && tile_bytes <= shared_most && shared_most >= 64 * 1024;
    // The lanes' f32 products (4 x m FMAs and m / 4 conversions of A per element of W) grow with
    // m; the tiles cost the same at every m <= 16 (measured on the H200, 2026-12-01, dec-s9, K
    // 4096, N 14336, no flush: tiles 60-65 us at m = 4, 8 and 16; lanes 53 us at m = 8 and 90 at
    // m = 16, about 4.6 us per row between): the tiles from m = 10. Up to m = 16 (beyond it every
    // block of 16 rows of A re-reads W), where they fit, and with a tile row of W for every compute
    // unit at least (n = 96 has 6: the lanes spread it over far more lane groups).
    bool tiles = m >= 10 && m <= 16 && tiles_fit && ceil_div(uint64_t(n), 16) >= units;
    if (call.has("mma")) {
      // 0 the lanes, 1 the tiles (an error where they do not fit), 2 the tiles where they fit.
      const int64_t want = flag(call, "mma", 0, 2);
      tiles = want == 1 || (want == 2 && tiles_fit);
      if (tiles && !tiles_fit)
        throw Error("mma = 1 (decode rows on tiles) needs k a multiple of 16, n >= 16 and " +
                    num(int64_t(std::max<uint64_t>(tile_bytes, 64 * 1024))) + " B of threadgroup memory (device " + dev.name + ": " +
                    num(int64_t(shared_most)) + "); m = " + num(m) + ", n = " + num(n) + ", k = " + num(k));
    }
    uint64_t ksplit = 1;
    const bool ksplit_asked = call.has("ksplit");
    if (ksplit_asked) {
      ksplit = uint64_t(call.size("ksplit"));
      const uint64_t most = tiles ? tile_groups : 16;
      if (ksplit < 1 || ksplit > most || (ksplit & (ksplit - 1)) != 0)
        throw Error("ksplit = " + num(int64_t(ksplit)) + ": a power of two from 1 to " + num(int64_t(most)));
    }
    // The lanes' chunks per step (1, 2 or 4): the call's, else kDecodeUnroll, or 4 at m = 1 (below).
    uint32_t unroll = kDecodeUnroll;
    const bool unroll_asked = call.has("unroll");
    if (unroll_asked) {
      const int64_t u = flag(call, "unroll", 1, int64_t(kDecodeUnrollMax));
      if (u != 1 && u != 2 && u != 4) throw Error("unroll = " + num(u) + ": 1, 2 or 4");
      unroll = uint32_t(u);
    }
    LaunchStep step;
    step.kernel = std::string("iron_gemm_decode_") + dtype_name(out);
    uint32_t groups;
    if (tiles) {
      // 16 rows of W per lane group; K slices doubled while the lane groups fall short of a full
      // threadgroup per compute unit and every slice has a 64-deep K block; persistent
      // threadgroups (one per unit at most) walk the tile rows.
      const uint64_t tile_rows = ceil_div(uint64_t(n), 16), kblocks = ceil_div(uint64_t(k), 64);
      if (!ksplit_asked)
        while (ksplit * 2 <= tile_groups && ksplit * 2 <= kblocks && tile_rows * ksplit < units * tile_groups) ksplit *= 2;
      groups = tile_groups;
      const uint64_t per = groups / ksplit;
      step.grid = {uint32_t(std::min<uint64_t>({units, ceil_div(tile_rows, per), dev.max_grid.x})),
                   uint32_t(ceil_div(uint64_t(m), kDecodeBlock)), 1};
      if (step.grid.y > dev.max_grid.y) throw Error("m = " + num(m) + " needs more blocks of 16 rows than the grid allows");
    } else {
      // 4 rows of W per lane group; K slices doubled while the lane groups fall short of 32 per
      // compute unit and every lane of a slice still has a chunk, at most 16 (on the H200 at
      // n = 14336: 2 slices, within 6% of the best count at every m from 1 to 16).
      const uint64_t row_groups = ceil_div(uint64_t(n), kDecodeRows);
      const uint64_t chunks = uint64_t(k) / 8;
      if (!ksplit_asked)
        while (ksplit * 2 <= 16 && ksplit * 2 * lanes <= chunks && row_groups * ksplit < 32 * units) ksplit *= 2;
      // m = 1: 4 chunks of each row per step where every lane has 4 steps' worth at least (on the
      // H200, K 4096, N 14336, 2 slices, read flush: 30.8 us against 33.3 with 2; m = 4 and 8
      // measured within 5% either way, so they keep 2: dec-s10).
      if (!unroll_asked && m == 1 && ceil_div(chunks, ksplit * lanes) >= 4) unroll = 4;
      groups = uint32_t(std::max<uint64_t>(4, ksplit));
      step.grid = {uint32_t(ceil_div(row_groups, groups / ksplit)), uint32_t(ceil_div(uint64_t(m), kDecodeBlock)), 1};
      if (step.grid.x > dev.max_grid.x || step.grid.y > dev.max_grid.y)
        throw Error("grid " + num(step.grid.x) + "x" + num(step.grid.y) + "x1 exceeds the device's limits");
    }
    const uint32_t threads = groups * lanes;
    if (threads > dev.max_threads_per_group)
      throw Error("decode rows with ksplit " + num(int64_t(ksplit)) + " need " + num(threads) +
                  " threads per threadgroup; device " + dev.name + " allows " + num(dev.max_threads_per_group));
    step.threadgroup = {threads, 1, 1};
    step.constexprs = {{"m", uint32_t(m)},
                       {"n", uint32_t(n)},
                       {"k", uint32_t(k)},
                       {"lda", uint32_t(lda)},
                       {"ldb", uint32_t(ldb)},
                       {"a_off", uint32_t(a_off)},
                       {"b_off", uint32_t(b_off)},
                       {"a_len", uint32_t(a_len)},
                       {"b_len", uint32_t(b_len)},
                       {"ksplit", uint32_t(ksplit)},
                       {"mma", uint32_t(tiles ? 1 : 0)},
                       {"unroll", tiles ? 1u : unroll},
                       {"red_len", uint32_t(groups * (tiles ? 256 : kDecodeRows * kDecodeBlock))},
                       {"at_len", uint32_t(tiles ? at_len : 1)},
                       {"ws_len", uint32_t(tiles ? ws_len : 1)}};
    epilogue(step.constexprs, step.bind, true, out, plan);
    plan.steps.push_back(step);
    plan.reason = (decode_asked ? std::string("tile 3 as asked")
                   : m <= 16   ? "m = " + num(m) + " <= 16 against a [n, k] weight"
                               : "m = " + num(m) + " <= 64, n = " + num(n) + " <= 128 against a [n, k] weight") +
                  ": decode rows " + (tiles ? "on tiles (16 rows of W" : "on the lanes (4 rows of W") + " per lane group), " +
                  num(int64_t(ksplit)) + " K slice" + (ksplit > 1 ? "s" : "") + ", " + num(groups) +
                  " lane groups per threadgroup, " +
                  (tiles ? std::string() : num(unroll) + " chunk" + (unroll > 1 ? "s" : "") + " of each W row per step, ") +
                  "the " + epi_name(epi) + " epilogue fused (one kernel)" + wg_decode_note;
    return plan;
  }

  // The vendor path: cuBLASLt (iron::blas::gemm) for large dense products on CUDA, where it is
  // the faster path (on the H200, 2026-12-01, Iron's 128x128 mma.sync tile reached 0.32x of it at
  // 4096^3 and M2048 K4096 N14336). Large dense: m, n and k at least 512, no epilogue (the routine
  // fuses none), C in f32 or T (cuBLASLt has no f16 x f16 -> bf16), no tile, stages or splits
  // asked for. `vendor` = 0 in the call or IRON_GEMM_VENDOR=0 keeps Iron's kernels.
  std::string vendor_note;
  const bool vendor_call = flag(call, "vendor", 1, 1) == 1;
  if (dev.backend == Backend::Cuda && m >= 512 && n >= 512 && k >= 512 && epi == Epi::None &&
      (out == DType::F32 || out == t) && !tile_asked && !call.has("stages") && !call.has("splits")) {
    if (!vendor_call) {
      vendor_note = "; vendor = 0: Iron's kernels, not cuBLASLt";
    } else if (!vendor_env_allows()) {
      vendor_note = "; IRON_GEMM_VENDOR=0: Iron's kernels, not cuBLASLt";
    } else {
      std::string lib, missing;
      try {
        lib = blas::library();
      } catch (const Error& e) {
        missing = e.what();
      }
      if (missing.empty()) {
        LaunchStep step{"blas.gemm",
                        {1, 1, 1},
                        {1, 1, 1},
                        {{"m", m},
                         {"n", n},
                         {"k", k},
                         {"a_col", a_trans ? 1 : 0},
                         {"lda", lda},
                         {"a_off", a_off},
                         {"b_col", b_trans ? 1 : 0},
                         {"ldb", ldb},
                         {"b_off", b_off},
                         {"out", out_code}},
                        {},
                        true};
        plan.steps.push_back(step);
        plan.reason = "m, n, k >= 512 with no epilogue on CUDA: cuBLASLt (iron::blas::gemm, " + lib +
                      ") is the faster path (vendor = 0 or IRON_GEMM_VENDOR=0 keeps Iron's kernels)";
        return plan;
      }
      vendor_note = "; cuBLASLt would be the faster path but is not available (" + missing + ")";
    }
  }

  // The block tile.
  const uint64_t shared = std::max(dev.shared_memory_bytes, dev.shared_memory_optin_bytes);
  int cfg_index;
  std::string why;
  if (shared < 64 * 1024) {
    cfg_index = 2;
    why = num(int64_t(shared)) + " B of threadgroup memory: the 32x32 tile" +
          (call.has("tile") || call.has("stages") ? " (whatever tile or stages the call asks for)" : "");
  } else if (call.has("tile")) {
    cfg_index = int(flag(call, "tile", 0, 3));
    why = "tile " + num(cfg_index) + " as asked";
  } else if (m <= 64) {
    cfg_index = 2;
    why = "m = " + num(m) + (m <= 16 && !decode_fits ? " <= 16 but not a 16-byte aligned [n, k] weight with row-major A" : " <= 64");
  } else {
    const uint64_t large = ceil_div(uint64_t(m), 128) * ceil_div(uint64_t(n), 128);
    const uint32_t units = std::max(1u, dev.compute_units);
    cfg_index = large >= units ? 0 : 1;
    why = num(int64_t(large)) + " blocks of 128x128 " + (large >= units ? ">=" : "<") + " " + num(units) + " compute units";
  }
  // The 128x128 tile's 96 KiB of staging where the device has less (sm_75's 64 KiB): the 64x64.
  if (cfg_index == 0 && !call.has("tile") && threadgroup_bytes(kConfigs[0], kStages[0], false) > shared) {
    cfg_index = 1;
    why += "; the 128x128 tile's " + num(int64_t(threadgroup_bytes(kConfigs[0], kStages[0], false))) +
           " B of threadgroup memory do not fit: 64x64";
  }
  const Config cfg = kConfigs[cfg_index];
  uint32_t stages = kStages[cfg_index];
  // The warpgroup kernel asked for (wg 1) on the 128x128 tile runs 3 or 4 stages (applied below
  // where it is taken; the mma.sync kernel keeps 3).
  const bool wg_stages = cfg_index == 0 && call.has("wg") && flag(call, "wg", 0, 1) == 1;
  uint32_t wg_stage_count = 3;
  if (call.has("stages") && shared >= 64 * 1024 && wg_stages) {
    wg_stage_count = uint32_t(flag(call, "stages", 3, 4));
    if (wg_stage_count < 3) throw Error("stages = " + num(wg_stage_count) + ": the warpgroup kernel runs 3 or 4");
  } else if (call.has("stages") && shared >= 64 * 1024) {
    if (cfg_index != 1) throw Error("stages can be chosen for the 64x64 tile (tile 1) only");
    stages = uint32_t(flag(call, "stages", 3, 4));
    if (stages < 2) throw Error("stages = " + num(stages) + ": the 64x64 tile runs 2, 3 or 4");
  }
  const uint64_t tg_bytes = threadgroup_bytes(cfg, std::max(stages, wg_stage_count), false);
  if (tg_bytes > shared)
    throw Error("the " + cfg.name() + " tile needs " + num(int64_t(tg_bytes)) + " B of threadgroup memory; device " +
                dev.name + " has " + num(int64_t(shared)));
  const uint32_t lanes = std::max(1u, dev.lane_width);
  const uint32_t threads = cfg.warps() * lanes;
  if (threads > dev.max_threads_per_group)
    throw Error("the " + cfg.name() + " tile needs " + num(threads) + " threads per threadgroup; device " + dev.name +
                " allows " + num(dev.max_threads_per_group));

  // The split count.
  const uint64_t blocks = ceil_div(uint64_t(m), cfg.bm) * ceil_div(uint64_t(n), cfg.bn);
  const uint64_t ksteps = ceil_div(uint64_t(k), cfg.bk);
  uint64_t splits;
  if (call.has("splits")) {
    splits = uint64_t(call.size("splits"));
    if (splits < 1 || splits > ksteps)
      throw Error("splits = " + num(int64_t(splits)) + ": between 1 and the " + num(int64_t(ksteps)) + " K steps of " +
                  num(cfg.bk));
  } else {
    const uint64_t units = dev.compute_units ? dev.compute_units : 8;
    splits = std::clamp<uint64_t>(ceil_div(2 * units, blocks), 1, std::max<uint64_t>(1, uint64_t(k) / 64));
    splits = std::min(splits, ksteps);
  }
  const uint64_t per = ceil_div(ksteps, splits);  // K steps per split
  splits = ceil_div(ksteps, per);
  const uint64_t kc = per * cfg.bk;
  if (splits * uint64_t(m) * uint64_t(n) > UINT32_MAX)
    throw Error("splits x m x n = " + num(int64_t(splits * m * n)) + " f32 partials: must be below 2^32");

  // --- The warpgroup kernel (gemm.cpp, iron_gemm_128x128x64_wg: one wgmma.mma_async m64n128k16
  // per k16 step and warpgroup on sm_90a), for the 128x128 tile: by default where B is a [n, k]
  // weight (K-major, staged by 16-byte copies), A row-major and the epilogue not SwiGLU, on CUDA
  // sm_90a; `wg` 1 asks for it at any layout on the CUDA and interpreter backends (composed from
  // mma.sync / software off sm_90a), `wg` 0 keeps the mma.sync kernel. Same staging memory (96
  // KiB), threads and call as the 128x128 tile.
  const int64_t wg_ask = call.has("wg") ? flag(call, "wg", 0, 1) : -1;
  const bool wg_backend = dev.backend == Backend::Cuda || dev.backend == Backend::Interp;
  const bool wg = cfg_index == 0 && epi != Epi::Swiglu &&
                  (wg_ask == 1 ? wg_backend
                               : wg_ask == -1 && dev.backend == Backend::Cuda && dev.arch == "sm_90a" && b_trans && !a_trans);
  std::string wg_note = wg ? "; the warpgroup kernel (wgmma on sm_90a)" : "";
  if (wg_ask == 1 && !wg)
    wg_note = std::string("; wg 1 but ") +
              (cfg_index != 0 ? "not the 128x128 tile" : epi == Epi::Swiglu ? "SwiGLU" : "not the CUDA or interpreter backend") +
              ": the mma.sync kernel";
  if (wg) stages = wg_stage_count;

  // --- The tensor-map kernels (gemm.cpp, iron_gemm_128x{128,256}x64_wg_tma_s<S>_<OUT>): the
  // warpgroup body with each stage's A and B boxes brought by two tensor-map copies that one
  // thread issues (no per-thread copies; tails zero-filled by the copy engine), 4 stages. They
  // need the warpgroup kernel's layout (A row-major, B a [n, k] weight), A and B starting at their
  // buffers' first element (the maps cover the whole buffer) and rows on the 16-byte grid. `tma`
  // 0 keeps the copies by every thread, 1 the 128x128 tile, 2 the 128x256 tile; default on CUDA
  // sm_90a where they fit: the 128x256 tile when its blocks fill every compute unit, else the
  // 128x128 (docs/benchmarks/hopper-2026-12-02: at 3 stages the 128x256 tile ran 13% slower).
  const bool tma_fits = wg && !a_trans && b_trans && a_off == 0 && b_off == 0 && lda % 8 == 0 && ldb % 8 == 0 &&
                        (out != DType::F16 || splits > 1);
  int64_t tma = 0;
  const uint64_t wide_blocks = ceil_div(uint64_t(m), 128) * ceil_div(uint64_t(n), 256);
  if (call.has("tma")) {
    tma = flag(call, "tma", 0, 2);
    if (tma != 0 && !wg) {
      // As with wg: the backends without the warpgroup kernel run the tile they have.
      wg_note += "; tma " + num(tma) + " but no warpgroup kernel";
      tma = 0;
    }
    if (tma != 0 && !tma_fits)
      throw Error("tma = " + num(tma) + " needs the warpgroup kernel (wg), A row-major, B column-major (b_trans 1), a_off = "
                  "b_off = 0, lda and ldb multiples of 8, and C in f32 or bf16 (or several splits); this call has" +
                  (out == DType::F16 && splits == 1 ? " C in f16" : "") +
                  (a_trans ? " A column-major" : "") + (b_trans ? "" : " B row-major") +
                  (a_off || b_off ? " an offset" : "") + (lda % 8 || ldb % 8 ? " lda / ldb off the 8-element grid" : ""));
  } else if (tma_fits && dev.backend == Backend::Cuda && dev.arch == "sm_90a" && shared >= 196 * 1024) {
    tma = wide_blocks >= std::max(1u, dev.compute_units) ? 2 : 1;
  }
  if (tma != 0) {
    if (call.has("stages") && flag(call, "stages", 2, 4) != 4)
      throw Error("stages = " + num(flag(call, "stages", 2, 4)) + ": the tensor-map kernels run 4");
    stages = 4;
    const uint64_t bytes = uint64_t(stages) * 64 * (128 + (tma == 2 ? 256 : 128)) * 2 + 8 * stages;
    if (bytes > shared)
      throw Error("the tensor-map kernel (tma " + num(tma) + ") needs " + num(int64_t(bytes)) +
                  " B of threadgroup memory; device " + dev.name + " has " + num(int64_t(shared)));
    wg_note = std::string("; the tensor-map warpgroup kernel, ") + (tma == 2 ? "128x256" : "128x128") + " at " +
              num(stages) + " stages (wgmma on sm_90a)";
  }
  // `ws` 1 (with tma 2): the 128x256 tile warp-specialized, 384 threads: a copying warpgroup
  // and two multiplying ones handing stages back through per-stage barriers; the default with
  // tma 2 on CUDA (3.3-3.5% faster on the H200: docs/benchmarks/hopper-2026-12-02/ws-s12), `ws`
  // 0 keeps the two-warpgroup kernel.
  bool ws = tma == 2 && dev.backend == Backend::Cuda;
  if (call.has("ws")) {
    ws = flag(call, "ws", 0, 1) == 1;
    if (ws && !wg) {
      // As with wg and tma: a backend without the warpgroup kernel runs the tile it has.
      wg_note += "; ws 1 but no warpgroup kernel";
      ws = false;
    }
    if (ws && tma != 2)
      throw Error("ws = 1 needs the 128x256 tensor-map kernel (tma 2); this call has tma " + num(tma));
  }
  if (ws) wg_note += ", warp-specialized (a copying warpgroup, 384 threads)";
  if (tma == 0 && wg && stages == 4 && out == DType::F16)
    throw Error("stages = 4 on the warpgroup kernel: C in f32 or bf16 (iron_gemm_128x128x64_wg_stages_s4_{f32,bf16})");
  vendor_note += wg_note;
  const uint32_t block_n = tma == 2 ? 256 : cfg.bn;
  const uint32_t tg_threads = ws ? 12 * lanes : threads;  // ws: 12 lane groups (384 threads on CUDA)
  const std::string tile_name = ws         ? std::string("iron_gemm_128x256x64_wg_ws_")
                                : tma != 0 ? std::string("iron_gemm_128x") + num(block_n) + "x64_wg_tma_"
                                : wg     ? std::string("iron_gemm_128x128x64_wg_")
                                         : "iron_gemm_" + cfg.name() + "_";
  // The 64x64 tile's 2- and 4-stage kernels are a family of their own (f32 output only).
  const std::string stage_part =
      std::string(tma == 0 && (cfg_index == 1 || wg) && stages != 3 ? "stages_" : "") + "s" + num(stages) + "_";
  // The tensor maps of the tensor-map kernels: A as [m, k] and B as [n, k], K innermost, boxes of
  // 64 K elements (128 bytes: the 128-byte swizzle) by the block's rows.
  std::vector<LaunchStep::Map> maps;
  if (tma != 0)
    maps = {{"a_map", "a", {uint64_t(k), uint64_t(m)}, {uint64_t(lda) * 2}, {64, 128}, TensorMap::Swizzle::B128},
            {"b_map", "b", {uint64_t(k), uint64_t(n)}, {uint64_t(ldb) * 2}, {64, block_n}, TensorMap::Swizzle::B128}};
  const bool swiglu = epi == Epi::Swiglu;
  // Every staged row whole and 16-byte aligned (the kernels' `full`): A row-major, no tails in
  // m, n or any split's K range, strides and offsets multiples of 8 elements.
  const bool full = !a_trans && m % cfg.bm == 0 && n % block_n == 0 && k % kc == 0 && lda % 8 == 0 &&
                    ldb % 8 == 0 && a_off % 8 == 0 && b_off % 8 == 0;
  // One kernel when there is one split and the tile fuses the epilogue: the 128x128, 64x64 and
  // 32x32 tiles fuse every epilogue at every output dtype, except SwiGLU (two products live),
  // which the 128x128 and 64x64 tiles fuse at f16/bf16 outputs on devices with 64 KiB of
  // threadgroup memory or more (not lavapipe, whose tile fragments live in it). The 64x64
  // tile's 2- and 4-stage kernels have f32 outputs only.
  const bool direct =
      splits == 1 &&
      (cfg_index <= 1
           ? !(swiglu && (shared < 64 * 1024 || out == DType::F32 ||
                          threadgroup_bytes(cfg_index == 0 ? kLargeSwiglu : cfg, stages, true) > shared))
           : !swiglu) &&
      (stages == 3 || cfg_index != 1 || out == DType::F32);
  Constexprs scalars{{"m", uint32_t(m)},
                     {"n", uint32_t(n)},
                     {"k", uint32_t(k)},
                     {"a_off", uint32_t(a_off)},
                     {"a_rs", uint32_t(a_trans ? 1 : lda)},
                     {"a_cs", uint32_t(a_trans ? lda : 1)},
                     {"b_off", uint32_t(b_off)},
                     {"b_rs", uint32_t(b_trans ? 1 : ldb)},
                     {"b_cs", uint32_t(b_trans ? ldb : 1)},
                     {"a_len", uint32_t(a_len)},
                     {"b_len", uint32_t(b_len)},
                     {"splits", uint32_t(splits)},
                     {"kc", uint32_t(kc)},
                     {"b_col", uint32_t(b_trans ? 1 : 0)},
                     {"full", uint32_t(full ? 1 : 0)}};
  const Dim3 grid{uint32_t(ceil_div(uint64_t(n), block_n)), uint32_t(ceil_div(uint64_t(m), cfg.bm)), uint32_t(splits)};
  if (grid.x > dev.max_grid.x || grid.y > dev.max_grid.y || grid.z > dev.max_grid.z)
    throw Error("grid " + num(grid.x) + "x" + num(grid.y) + "x" + num(grid.z) + " exceeds the device's limits");
  if (direct) {
    const std::string name = swiglu ? "iron_gemm_" + (cfg_index == 0 ? kLargeSwiglu : cfg).name() + "_swiglu_" : tile_name;
    LaunchStep step{name + stage_part + dtype_name(out), grid, {tg_threads, 1, 1}, scalars, {}};
    step.maps = maps;
    if (!swiglu) epilogue(step.constexprs, step.bind, true, out, plan);
    plan.steps.push_back(step);
    plan.reason = why + "; one split: " + cfg.name() + " with the " + epi_name(epi) + " epilogue fused" + vendor_note;
    return plan;
  }
  const size_t partial = size_t(splits) * size_t(m) * size_t(n);
  // One-launch split-K (the 64x64 tile at 3 stages and the 32x32 tile, no SwiGLU): the last
  // threadgroup of each output tile reduces the partials in split order behind a per-tile counter
  // (zeroed scratch the kernel leaves zero). `sk` = 1 asks for it (an error where it does not
  // apply), 0 keeps the two launches.
  const bool sk_fits = !swiglu && (cfg_index == 2 || (cfg_index == 1 && stages == 3));
  bool sk = sk_fits && kSkByDefault;
  if (call.has("sk")) {
    sk = flag(call, "sk", 0, 1) == 1;
    if (sk && !sk_fits)
      throw Error(std::string("sk = 1 (one-launch split-K) needs the 64x64 tile at 3 stages or the 32x32 tile and an "
                              "epilogue other than SwiGLU; this call has ") +
                  (swiglu ? "SwiGLU" : "the " + cfg.name() + " tile at " + num(stages) + " stages"));
  }
  if (sk) {
    const uint32_t tiles = grid.x * grid.y;
    plan.scratch.push_back({"partials", DType::F32, partial});
    plan.scratch.push_back({"sk_counters", DType::U32, tiles, true});
    LaunchStep step{tile_name + "sk_" + stage_part + dtype_name(out), grid, {threads, 1, 1}, scalars,
                    {{"partials", "partials"}, {"counters", "sk_counters"}}};
    step.constexprs["tiles"] = tiles;
    epilogue(step.constexprs, step.bind, true, out, plan);
    plan.steps.push_back(step);
    plan.reason = why + "; " + num(int64_t(splits)) + " split" + (splits > 1 ? "s" : "") + " of " + num(int64_t(kc)) +
                  " (" + num(int64_t(blocks)) + " blocks), one launch: f32 partials, the last threadgroup of each tile " +
                  "sums them in split order with the " + epi_name(epi) + " epilogue" + vendor_note;
    return plan;
  }
  const std::string partial_kernel = tile_name + stage_part + "f32";
  plan.scratch.push_back({"partials", DType::F32, partial});
  LaunchStep first{partial_kernel, grid, {tg_threads, 1, 1}, scalars, {{"c", "partials"}}};
  first.maps = maps;
  epilogue(first.constexprs, first.bind, false, DType::F32, plan);
  plan.steps.push_back(first);
  if (swiglu) {
    plan.scratch.push_back({"partials2", DType::F32, partial});
    LaunchStep second = first;
    second.bind.push_back({"b", "b2"});
    second.bind.front().second = "partials2";
    plan.steps.push_back(second);
  }
  const uint32_t red_tg = std::min(256u, dev.max_threads_per_group) / lanes * lanes;
  const uint32_t red_groups =
      uint32_t(std::min<uint64_t>(ceil_div(uint64_t(m) * uint64_t(n), std::max(1u, red_tg)), dev.max_grid.x));
  LaunchStep reduce{std::string("iron_gemm_reduce_") + (swiglu ? "swiglu_" : "") + dtype_name(out),
                    {std::max(1u, red_groups), 1, 1},
                    {std::max(lanes, red_tg), 1, 1},
                    {{"m", uint32_t(m)}, {"n", uint32_t(n)}, {"splits", uint32_t(splits)}},
                    {}};
  if (!swiglu) epilogue(reduce.constexprs, reduce.bind, true, out, plan);
  plan.steps.push_back(reduce);
  plan.reason = why + "; " + num(int64_t(splits)) + " split" + (splits > 1 ? "s" : "") + " of " + num(int64_t(kc)) +
                " (" + num(int64_t(blocks)) + " blocks), f32 partials, then a fixed-order reduce with the " +
                epi_name(epi) + " epilogue" + vendor_note;
  return plan;
}
IRON_SELECTOR(iron_gemm, gemm_for);

}  // namespace iron::kernels::gemm
