// The GEMM family on cooperative tiles: C = A B (+ a fused epilogue), A [m, k] and B [k, n] in
// f16 or bf16 (T) with any strides, f32 accumulation, C in f32, f16 or bf16 (the OUT axis).
//
// Kernels (mode Reduction; T in {f16, bf16}):
//   iron_gemm_<BM>x<BN>x<BK>_w<WM>x<WN>_<epi>_s<S>_<OUT>   one BM x BN block of C per
//       threadgroup (tile column program_id(0), tile row program_id(1), K split program_id(2)).
//       Element (i, kk) of A is a[a_off + i * a_rs + kk * a_cs], element (kk, j) of B is
//       b[b_off + kk * b_rs + j * b_cs] (row-major A: a_rs = lda, a_cs = 1; column-major: a_rs =
//       1, a_cs = lda; likewise B). Split s covers K elements [s * kc, min(k, (s + 1) * kc)) and
//       writes c[s, i, j] (c is [splits, m, n]; splits = 1 and kc >= k for one whole product).
//       Per BK-deep K step every thread stages part of A's BM x BK and B's BK x BN block into
//       threadgroup memory (elements past m, n or the split's K end are staged as 0): A as BM
//       rows of BK, B in the orientation its memory is contiguous in (the specialized scalar
//       b_col: 0 as BK rows of BN, 1 as BN rows of BK, read back by column-major fragment loads),
//       unpadded rows under an XOR swizzle of their 16-byte chunks (staged_swizzle) that the
//       copies write through and the fragment loads read through: rows contiguous in memory by
//       asynchronous 16-byte copies (cp.async on CUDA sm_80+, zero-filling the tails), other
//       strides (a column-major A) element by element, consecutive threads along A's rows. S stages deep: the step kt + S - 1 is staged while step kt
//       is multiplied, one async_wait and one barrier per step. Lane group w < (BM / WM) x
//       (BN / WN) multiplies warp tile w (WM x WN outputs, 16 x 16 fragments); further lane
//       groups only help stage. The threadgroup must hold a lane group per warp tile (gemm_for
//       sizes it so): with fewer, the missing warp tiles of C are not computed.
//       Epilogue, per fragment through a 16 x 16 f32 scratch slot per lane group: v = the f32
//       sum, then
//         none      v
//         bias      v + bias[j]
//         silu      u / (1 + exp(-u)), u = v + bias[j]
//         gelu      0.5 u (1 + erf(u / sqrt(2))), u = v + bias[j]       (the exact GELU)
//         residual  v + residual[i, j]
//         swiglu    silu(v) * u, u the same product with B2 (b2, same strides) in place of B
//       computed in f32 and rounded once to OUT (bias and residual hold OUT).
//   iron_gemm_reduce_<epi>_<OUT>   (mode Reduction, no lane operations) step 2 of split-K: v = partials[0, i, j] +
//       partials[1, i, j] + ... in that order (f32), then the epilogue as above (swiglu: u from
//       partials2), rounded once to OUT. No atomics: bit-exact run to run.
//   iron_gemm_<BM>x<BN>x<BK>_w<WM>x<WN>_sk_s<S>_<OUT>   (64x64 and 32x32) one-launch split-K:
//       the tile kernel above with C [m, n], an inout f32 `partials` [splits, m, n] and an inout
//       u32 `counters` [tiles] (tiles >= the grid's x * y; zero before the launch, and the
//       launch leaves it zero). Split s writes its raw f32 sums to partials[s, i, j]; then every
//       thread fences (device scope), and after a barrier thread 0 adds 1 to the tile's counter.
//       The threadgroup that sees splits - 1 (the last of the tile to arrive) sums partials[0, i,
//       j] + ... + partials[splits - 1, i, j] from memory in that order (the reduce kernel's sum:
//       the same bits as the two-launch path, whatever order the threadgroups ran in), applies
//       the epilogue, stores C and resets the counter to 0. `splits` is specialized. No SwiGLU.
// The specialized scalar `full` (gemm_for: A row-major, no tails, strides and offsets multiples
// of 8) takes the copies' unguarded path, whose indices the code generator proves 16-byte
// aligned (no run-time check). Threadgroups are ordered in groups of kGroupRows tile rows
// (grouped rasterization: program ids are renumbered, the blocks are the same).
// Dispatch: main kernels grid = {ceil(n / BN), ceil(m / BM), splits}, threadgroup = {warps *
// lane width, 1, 1} (more lane groups compute the same; fewer leave warp tiles out); reduce
// kernels any grid (a grid-stride loop over the elements of [m, n]). The family's selector
// gemm_for (gemm_select.cpp) plans both.
#include "gemm.hpp"
#include "epilogue.hpp"
#include "ws_loop.hpp"

#include <iron/iron.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

namespace iron::kernels::gemm {
using namespace iron::dsl;

const char* epi_name(Epi e) {
  switch (e) {
    case Epi::None: return "none";
    case Epi::Bias: return "bias";
    case Epi::Silu: return "silu";
    case Epi::Gelu: return "gelu";
    case Epi::Residual: return "residual";
    case Epi::Swiglu: return "swiglu";
  }
  return "?";
}

std::string Config::name() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "_w" + std::to_string(wm) + "x" +
         std::to_string(wn);
}

uint64_t threadgroup_bytes(const Config& c, uint32_t stages, bool swiglu) {
  const uint64_t a = uint64_t(stages) * c.bm * c.bk * 2;
  const uint64_t b = uint64_t(stages) * c.bk * c.bn * 2 * (swiglu ? 2 : 1);
  // The epilogue's scratch is an alias of B's stages (no memory of its own).
  // Each array starts 16-byte aligned.
  auto up = [](uint64_t x) { return (x + 15) / 16 * 16; };
  return up(a) + up(b);
}

constexpr float kInvSqrt2 = 0.70710678118654752f;

// The epilogue of one element: `v` the f32 product. SwiGLU kernels (`up` set) compute
// silu(v) * up(); the others branch on `epi` (0 none, 1 bias, 2 silu, 3 gelu, 4 residual), a
// specialized scalar, so each dispatch's code keeps one branch. `bias_at` / `res_at` read the
// OUT-typed bias and residual as f32, only where the epilogue uses them.
Expr apply_epilogue(Expr epi, Expr v, const std::function<Expr()>* up, const std::function<Expr()>& bias_at,
                    const std::function<Expr()>& res_at) {
  if (up) {
    Expr u = (*up)();
    return v / (1.0f + exp(-v)) * u;
  }
  Var<f32> r = v;
  if_((epi >= 1u) && (epi <= 3u), [&] { r = Operand(r).value + bias_at(); });
  if_(epi == 4u, [&] { r = Operand(r).value + res_at(); });
  if_(epi == 2u, [&] {
    Expr u = Operand(r).value;
    r = u / (1.0f + exp(-u));
  });
  if_(epi == 3u, [&] {
    Expr u = Operand(r).value;
    r = (0.5f * u) * (1.0f + erf(u * kInvSqrt2));
  });
  return Operand(r).value;
}

namespace {
// The XOR swizzle of a staged tile whose rows are `width` 16-bit elements (a power of two, at
// least 16): 16-byte chunks move within their row by the low bits of the row index, so the 8
// row addresses of one ldmatrix phase (8 rows at one chunk column) fall in 8 distinct bank quads,
// and a warp's 16-byte staging copies (whole rows) fill every quad once per 128 bytes.
Swizzle staged_swizzle(uint32_t width) {
  uint32_t chunks_log2 = 0;
  while ((8u << chunks_log2) < width) ++chunks_log2;  // log2(width / 8)
  return Swizzle{std::min(chunks_log2, 3u), 3, std::max(chunks_log2, 3u)};
}

// Tile rows per group of the threadgroup order (gemm_kernel's grouped rasterization).
constexpr uint32_t kGroupRows = 16;

// wg: the warpgroup body (iron_gemm_128x128x64_wg, docs/gemm.md "The warpgroup kernel"): A and B
// staged K-major (B as BN rows of BK whatever b_col says) into one 1024-byte aligned array under
// the 128-byte swizzle, two warpgroups of 64 rows x BN each issuing BK / 16 wgmma per stage into
// a 16 x BN accumulator per lane group, waited one stage later.
// one_launch: split-K in one launch (the `_sk_` kernels, docs/gemm.md "One-launch split-K").
// tma (with wg): the operands arrive by tensor-map copies instead (the `_wg_tma` kernels, docs/gemm.md
// "The tensor-map kernel"): one thread issues each stage's two boxes, completing on the stage's
// mbarrier, and every thread waits on that barrier before the stage's products.
// ws (with tma): warp-specialized (the `_wg_ws` kernels, docs/gemm.md "The warp-specialized
// kernel"): a third warpgroup, the first, only issues the copies; the two after it only multiply,
// and stages are handed back through per-stage `empty` barriers instead of a block barrier.
void gemm_kernel(const Config& cfg, bool swiglu, const KernelVariant& var, bool wg = false, bool one_launch = false,
                 bool tma = false, bool ws = false) {
  const uint32_t stages = uint32_t(var.i("S"));
  const DType out_t = var.type("OUT");
  const uint32_t BM = cfg.bm, BN = cfg.bn, BK = cfg.bk, WM = cfg.wm, WN = cfg.wn;
  const uint32_t FM = WM / 16, FN = WN / 16, NW = cfg.warps(), WCOLS = BN / WN;
  const uint32_t A_STAGE = BM * BK, B_STAGE = BK * BN;  // staged elements per K step

  Expr m = constexpr_("m", u32);
  Expr n = constexpr_("n", u32);
  Expr k = constexpr_("k", u32);
  Expr a_off = constexpr_("a_off", u32);
  Expr a_rs = constexpr_("a_rs", u32);
  Expr a_cs = constexpr_("a_cs", u32);
  Expr b_off = constexpr_("b_off", u32);
  Expr b_rs = constexpr_("b_rs", u32);
  Expr b_cs = constexpr_("b_cs", u32);
  Expr a_len = constexpr_("a_len", u32);
  Expr b_len = constexpr_("b_len", u32);
  // Specialized in the one-launch kernels, whose last threadgroup of a tile sums `splits`
  // partials per element (a loop of constant trip count).
  Expr splits = one_launch ? constexpr_("splits", u32, specialize()) : constexpr_("splits", u32);
  // K elements per split: a whole number of 32-deep K steps (gemm_for: the steps per split times
  // the tile's BK, every BK a multiple of 32), declared so the copies' K offsets are provably
  // 16-byte multiples.
  Expr kc = constexpr_("kc", u32, multiple_of(32));
  // How B is staged: 0 as BK rows of BN (B row-major, contiguous along N when b_cs = 1), 1 as
  // BN rows of BK (B column-major, a linear layer's weight [N, K], contiguous along K when b_rs
  // = 1). Specialized: each dispatch compiles one layout (the generic code holds both
  // multiplies). A is always staged as BM rows of BK.
  Expr b_col = constexpr_("b_col", u32, specialize());
  // 1 when every staged row is whole and 16-byte aligned: A row-major, m, n multiples of BM, BN,
  // every split's K range a whole number of BK steps, and the strides and offsets of A and B
  // multiples of 8 elements (gemm_for sets it; specialized). The copies then take no tail
  // guards and provably aligned addresses (cp.async with no run-time alignment check).
  Expr full = constexpr_("full", u32, specialize());
  Buffer a = input("a", T, {a_len});
  Buffer b = input("b", T, {b_len});
  // The tensor-map kernels read A and B only through these (A as [m, k] with K innermost, B as
  // [n, k]; boxes of BK x BM and BK x BN under the 128-byte swizzle, zeros outside the tensors);
  // a and b stay declared so a call binds the same buffers to every kernel of the family.
  Buffer a_map(0, T), b_map(0, T);
  if (tma) {
    a_map = tensor_map("a_map");
    b_map = tensor_map("b_map");
  }
  Expr epi, bias_len, res_len;
  // Parameters a kernel of the family does not declare stay unbound placeholders, never read.
  Buffer b2(0, T), bias(0, out_t), res(0, out_t);
  if (swiglu) {
    b2 = input("b2", T, {b_len});
  } else {
    epi = constexpr_("epi", u32, specialize());
    bias_len = constexpr_("bias_len", u32);  // n with a bias, else 1 (the buffer is not read)
    res_len = constexpr_("res_len", u32);    // m * n with a residual, else 1
    bias = input("bias", out_t, {bias_len});
    res = input("residual", out_t, {res_len});
  }
  // One launch: C is [m, n]; the splits' f32 partials go to `partials` and a u32 counter per
  // output tile (`tiles` of them, zero at the launch and left zero) picks the threadgroup that sums them.
  Expr tiles;
  Buffer c(0, out_t), partials(0, f32), counters(0, u32);
  if (one_launch) {
    tiles = constexpr_("tiles", u32);
    c = output("c", out_t, {m, n});
    partials = inout("partials", f32, {splits, m, n});
    counters = inout("counters", u32, {tiles});
  } else {
    c = output("c", out_t, {splits, m, n});
  }

  TileShape tile = coop_tile_setup(16, 16, 16, T);
  // The warpgroup body stages A and B in one array (B's stages after A's), 1024-byte aligned for
  // the wgmma descriptors; its epilogue scratch (the whole BM x BN block in f32) views all of it.
  TgBuffer as = wg ? threadgroup_alloc("st", T, stages * (A_STAGE + B_STAGE), 1024)
                   : threadgroup_alloc("as", T, stages * A_STAGE, 16);
  TgBuffer bs = wg ? as : threadgroup_alloc("bs", T, stages * B_STAGE * (swiglu ? 2 : 1), 16);
  const uint32_t B_BASE = wg ? stages * A_STAGE : 0;  // B's first stage in bs
  if (wg && (BM != 128 || BK != 64 || (BN != 64 && BN != 128 && BN != 256) || swiglu || uint64_t(BM) * BN * 4 > uint64_t(stages) * (A_STAGE + B_STAGE) * 2))
    throw Error("iron_gemm " + cfg.name() + ": the warpgroup body is BM 128 (two warpgroups), BK 64 (one 128-byte row), BN 64, "
                "128 or 256, no SwiGLU, and its f32 block must fit in the staging memory");
  // The epilogue's scratch (a 16 x 16 f32 slot per lane group, two for SwiGLU; the warpgroup
  // body: the BM x BN block) reuses B's staging memory, done with once the K loop ends (a barrier
  // separates them); every tile's B stages hold at least that many bytes.
  TgBuffer cs = threadgroup_alias("cs", bs, 0, f32, wg ? BM * BN : NW * 256 * (swiglu ? 2 : 1));
  const uint32_t B2_BASE = stages * B_STAGE;  // the SwiGLU gate's stages follow B's

  // Grouped rasterization: consecutive threadgroups walk down a group of kGroupRows tile rows
  // before moving one tile column right, so the blocks resident at once share a few columns of
  // B and a few rows of A in L2 (program_id(0) + program_id(1) * columns numbers them).
  Expr cols = num_programs(0);
  Expr rows = num_programs(1);
  Expr linear = program_id(1) * cols + program_id(0);
  Expr group_first = linear / (kGroupRows * cols) * kGroupRows;
  Expr group_rows = min(rows - group_first, kGroupRows);
  Expr in_group = linear % (kGroupRows * cols);
  Expr tile_m = group_first + in_group % group_rows;
  Expr tile_n = in_group / group_rows;
  Expr split = program_id(2);
  Expr row0 = tile_m * BM;
  Expr col0 = tile_n * BN;
  // This split's K range [k0, k1); empty past the end.
  Expr k0 = split * kc;
  Expr k1 = max(min(k, k0 + kc), k0);
  Expr steps = (k1 - k0 + (BK - 1)) / BK;

  // Stages one operand's block: `outer` rows of `inner` elements at tg[swizzle(base + o * inner
  // + i)], element (o, i) from src[off + (o0 + o) * os + (i0 + i) * is], 0 where o0 + o >=
  // o_end or i0 + i >= i_end. Rows contiguous in memory (is = 1) go as asynchronous 8-element
  // (16-byte) copies, the part past the ends zero-filled; other strides element by element.
  // `base` (a stage's first element) is a multiple of the swizzle's period, so it is added
  // outside the swizzle: swizzle(base + x) = base + swizzle(x) (checked below for every tile).
  // `k_outer`: the K step's start is o0 (B row-major, staged as BK rows), else i0.
  // `whole`: false when the rows are not contiguous even if `full` holds (the warpgroup body
  // staging a row-major B K-major), which skips the unguarded path.
  auto stage_block = [&](const Buffer& src, const TgBuffer& tg, Expr base, uint32_t outer, uint32_t inner, Expr o0,
                         Expr o_end, Expr i0, Expr i_end, Expr off, Expr os, Expr is, bool k_outer, bool whole = true) {
    const Swizzle sw = staged_swizzle(inner);
    const uint32_t period = 1u << (sw.bits + sw.base + sw.shift);
    if (A_STAGE % period != 0 || B_STAGE % period != 0)
      throw Error("iron_gemm " + cfg.name() + ": a stage of " + std::to_string(A_STAGE) + " / " +
                  std::to_string(B_STAGE) + " elements is not a multiple of the swizzle's period " +
                  std::to_string(period));
    auto guarded = [&] {
      if_(is == 1u, [&] {
        for_(local_id(0), outer * inner / 8, group_size(0), [&](Expr ch) {
          Expr o = ch / (inner / 8);
          Expr i = (ch % (inner / 8)) * 8u;
          Expr go = o0 + o;
          Expr gi = i0 + i;
          Expr valid = select((go < o_end) && (gi < i_end), min(i_end - gi, 8u), 0u);
          async_copy(tg[base + swizzle(sw, o * inner + i)], src[off + go * os + gi], 8, valid);
        });
      }).else_([&] {
        // Consecutive threads along the outer dimension, the contiguous one of a column-major A.
        for_(local_id(0), outer * inner, group_size(0), [&](Expr e) {
          Expr o = e % outer;
          Expr i = e / outer;
          Expr go = o0 + o;
          Expr gi = i0 + i;
          Expr ok = (go < o_end) && (gi < i_end);
          Expr at = select(ok, off + go * os + gi * is, 0u);
          tg[base + swizzle(sw, o * inner + i)] = cast<T>(select(ok, cast<f32>(src[at]), 0.0f));
        });
      });
    };
    if (!whole) return guarded();
    if_(full == 1u, [&] {
      // Whole aligned rows (`full`): no tails, and the source index provably a multiple of 8,
      // so the copies need no run-time check: the part fixed over the K loop with its low bits
      // cleared (a multiple of 8 already when `full` holds), plus the K step's offset (kb, a
      // multiple of 32: k0 = split * kc, kc declared a multiple of 32), times the row stride
      // when K runs along the rows.
      // A constant trip count (group_size is a compile-time constant), so the copies unroll into
      // straight-line code whose addresses, all but the K offset, the compiler keeps across steps.
      const uint32_t chunks = outer * inner / 8;
      for_(0u, (chunks + group_size(0) - 1u) / group_size(0), [&](Expr r) {
        Expr ch = local_id(0) + r * group_size(0);
        if_(ch < chunks, [&] {
          Expr o = ch / (inner / 8);
          Expr i = (ch % (inner / 8)) * 8u;
          Expr at = k_outer ? ((off + o * os + i0 + i) & 0xfffffff8u) + o0 * os
                            : ((off + (o0 + o) * os + i) & 0xfffffff8u) + i0;
          async_copy(tg[base + swizzle(sw, o * inner + i)], src[at], 8, 8u);  // whole: valid = count
        });
      });
    }).else_(guarded);
  };

  // Stages K step `step` into stage `stage`: A as BM rows of BK, B as BK rows of BN (b_col 0)
  // or BN rows of BK, then commits the thread's copies.
  auto stage_tiles = [&](Expr step, Expr stage) {
    Expr kb = k0 + step * BK;
    stage_block(a, as, stage * A_STAGE, BM, BK, row0, m, kb, k1, a_off, a_rs, a_cs, false);
    if (wg) {
      // K-major whatever the layout (a wgmma descriptor reads K-major B): BN rows of BK, by
      // 16-byte copies where B's rows are contiguous along K (b_rs = 1, a [n, k] weight).
      if_(b_col == 1u, [&] {
        stage_block(b, bs, B_BASE + stage * B_STAGE, BN, BK, col0, n, kb, k1, b_off, b_cs, b_rs, false);
      }).else_([&] { stage_block(b, bs, B_BASE + stage * B_STAGE, BN, BK, col0, n, kb, k1, b_off, b_cs, b_rs, false, false); });
      async_commit();
      return;
    }
    for (uint32_t which = 0; which < (swiglu ? 2u : 1u); ++which) {
      const Buffer& src = which == 0 ? b : b2;
      const uint32_t base = which == 0 ? 0 : B2_BASE;
      if_(b_col == 0u, [&] {
        stage_block(src, bs, base + stage * B_STAGE, BK, BN, kb, k1, col0, n, b_off, b_rs, b_cs, true);
      }).else_([&] {
        stage_block(src, bs, base + stage * B_STAGE, BN, BK, col0, n, kb, k1, b_off, b_cs, b_rs, false);
      });
    }
    async_commit();
  };

  if (wg) {
    // Warpgroup h (lane groups 4h .. 4h + 3) multiplies rows 64h .. 64h + 63 of the block into a
    // 16 x BN accumulator per lane group. Every lane group runs the products with no branch
    // around them (ptxas serializes wgmma issued or waited in a divergent path): further
    // warpgroups (gemm_for launches two) repeat rows of the first two and store nothing.
    const Swizzle sw{3, 3, 3};
    // The warp-specialized kernel's consumers are lane groups 4..11 (its first warpgroup copies).
    Expr w = ws ? simd_group_id() - 4u : simd_group_id();
    Expr active = ws ? simd_group_id() >= 4u && simd_group_id() < 12u : w < 8u;
    Expr half = ws ? (simd_group_id() / 4u + 1u) % 2u : (w / 4u) % 2u;
    FragVar acc(coop_tile_wg_fill(BN, 0.0f));
    // One stage's products, issued as one group: BK / 16 wgmma into the lane group's accumulator.
    auto issue_stage = [&](Expr stage) {
      wg_fence();
      for (uint32_t ks = 0; ks < BK / 16; ++ks)
        acc.set(coop_tile_wg_issue(as, stage * A_STAGE + half * (64u * BK) + ks * 16, bs, B_BASE + stage * B_STAGE + ks * 16,
                                   acc.get(), sw));
      wg_commit();
    };
    // Stage `stage` of K step `step` by two tensor-map copies, expecting their bytes on full_bar.
    const uint32_t elem = 2;  // f16 or bf16
    auto tma_load = [&](const TgBuffer& full_bar, Expr step, Expr stage) {
      Expr kb = k0 + step * BK;
      mbar_arrive_tx(full_bar[stage], (A_STAGE + B_STAGE) * elem);
      tma_load_2d(a_map, as[stage * A_STAGE], kb, row0, full_bar[stage]);
      tma_load_2d(b_map, bs[B_BASE + stage * B_STAGE], kb, col0, full_bar[stage]);
    };
    if (ws) {
      // Warp-specialized: warpgroup 0's thread 0 runs the copies as far ahead as the stages
      // allow, waiting on empty[s] (8 arrivals: lane 0 of each consumer lane group) before it
      // refills stage s from round r >= 1 (parity (r - 1) % 2); warpgroups 1 and 2 wait on
      // full[s] (parity r % 2), issue the stage's products, and once wg_wait(1) has retired the
      // previous step's products hand that step's stage back. No block barrier in the K loop.
      WsLoop loop;
      loop.stages = stages;
      loop.steps = steps;
      loop.full_arrivals = 1u;
      loop.empty_arrivals = 8u;
      loop.producer = [] { return local_id(0) == 0u; };
      loop.consumer = active;
      loop.produce = tma_load;
      loop.consume = [&](Expr, Expr stage) {
        issue_stage(stage);
        wg_wait(1);
      };
      ws_loop(loop);
    } else if (tma) {
      // Tensor-map copies: thread 0 issues stage s's boxes (A: BK x BM at column kb, row row0; B:
      // BK x BN at column kb, row col0; zeros past m, n, k), expecting their bytes on full[s];
      // everyone waits on full[s] with the parity of the round before the products. The copies
      // run `ahead` steps ahead: at step t thread 0 refills the stage of step t - 1 (3 stages:
      // ahead 2 after wg_wait(0)) or t - 2 (4 stages or more: wg_wait(1), ahead stages - 2),
      // whose products every lane group has retired by the barrier before it.
      const uint32_t keep = stages >= 4 ? 1 : 0, ahead = stages - 1 - keep;
      TgBuffer full_bar = mbarrier_alloc("full", stages);
      Expr leader = local_id(0) == 0u;
      if_(leader, [&] {
        for (uint32_t s = 0; s < stages; ++s) mbar_init(full_bar[s], 1u);
      });
      barrier();
      if_(leader, [&] {
        for (uint32_t s = 0; s < ahead; ++s) {
          Expr at = steps * 0u + s;
          if_(at < steps, [&] { tma_load(full_bar, at, at); });
        }
      });
      for_(0u, steps, [&](Expr step) {
        wg_wait(keep);
        barrier();
        Expr next = step + ahead;
        if_(leader && next < steps, [&] { tma_load(full_bar, next, next % stages); });
        Expr stage = step % stages;
        mbar_wait(full_bar[stage], (step / stages) % 2u);
        issue_stage(stage);
      });
      wg_wait(0);
      barrier();
    } else {
      // Per-thread copies, `ahead` steps ahead. 3 stages: 2 ahead, and each step's products are
      // retired before the barrier that lets the next copy overwrite their stage. 4 stages: 2
      // ahead too, and one step's products stay in flight across the next step (wg_wait(1)): the
      // copy of step + 2 overwrites the stage of step - 2, whose products are retired by then.
      const uint32_t ahead = 2, keep = stages >= 4 ? 1 : 0;
      for (uint32_t s = 0; s < ahead; ++s) {
        Expr at = steps * 0u + s;
        if_(at < steps, [&] { stage_tiles(at, at); }).else_([&] { async_commit(); });
      }
      for_(0u, steps, [&](Expr step) {
        // The products of step - 1 - keep retired (their stage is the next copy's), this thread's
        // copies of step `step` landed and fenced for the async proxy; after the barrier everyone's.
        wg_wait(keep);
        async_wait(ahead - 1);
        fence_proxy_async();
        barrier();
        Expr next = step + ahead;
        if_(next < steps, [&] { stage_tiles(next, next % stages); }).else_([&] { async_commit(); });
        issue_stage(step % stages);
      });
      wg_wait(0);
      async_wait(0);
      barrier();
    }
    // Epilogue: the block through the scratch (row-major BM x BN f32), then every thread takes
    // elements in order (consecutive threads along a row of C).
    if_(active, [&] { coop_tile_store(acc.get(), cs, w * (16u * BN), BN); });
    barrier();
    for_(local_id(0), BM * BN, group_size(0), [&](Expr e) {
      Expr gi = row0 + e / BN;
      Expr gj = col0 + e % BN;
      if_((gi < m) && (gj < n), [&] {
        Expr v = Operand(cs[e]).value;
        Expr out = apply_epilogue(epi, v, nullptr, [&] { return cast<f32>(bias[gj]); }, [&] { return cast<f32>(res[gi * n + gj]); });
        c[(split * m + gi) * n + gj] = cast_to(out, out_t);
      });
    });
    return;
  }

  // Lane group w computes warp tile w; groups past the last warp tile only stage and wait.
  {
    Expr w = simd_group_id();
    Expr active = w < NW;
    Expr wrow = w / WCOLS;
    Expr wcol = w % WCOLS;
    std::vector<std::unique_ptr<FragVar>> acc, gacc;
    for (uint32_t f = 0; f < FM * FN; ++f) {
      // `new` here, not make_unique: a FragVar takes its DSL line from where it is constructed.
      acc.push_back(std::unique_ptr<FragVar>(new FragVar(coop_tile_fill(tile, 0.0f))));
      if (swiglu) gacc.push_back(std::unique_ptr<FragVar>(new FragVar(coop_tile_fill(tile, 0.0f))));
    }
    // The fragments of one stage, read through the staged layouts' swizzles (the same map the
    // staging copies wrote through): row-major blocks with their rows' stride, transposed ones
    // as column-major tiles.
    auto multiply_as = [&](Expr stage, bool bt) {
      const TileLayout la{false, staged_swizzle(BK)}, lb{bt, staged_swizzle(bt ? BK : BN)};
      for (uint32_t ks = 0; ks < BK / 16; ++ks) {
        std::vector<Frag> fa;
        for (uint32_t fm = 0; fm < FM; ++fm) {
          Expr r = wrow * WM + fm * 16;
          fa.push_back(coop_tile_load_a(tile, as, stage * A_STAGE + r * BK + ks * 16, BK, la));
        }
        for (uint32_t which = 0; which < (swiglu ? 2u : 1u); ++which) {
          auto& sums = which == 0 ? acc : gacc;
          const uint32_t base = which == 0 ? 0 : B2_BASE;
          for (uint32_t fn = 0; fn < FN; ++fn) {
            Expr j = wcol * WN + fn * 16;
            Frag fb = bt ? coop_tile_load_b(tile, bs, base + stage * B_STAGE + j * BK + ks * 16, BK, lb)
                         : coop_tile_load_b(tile, bs, base + stage * B_STAGE + (ks * 16) * BN + j, BN, lb);
            for (uint32_t fm = 0; fm < FM; ++fm) {
              FragVar& s = *sums[fm * FN + fn];
              s.set(coop_tile_run(fa[fm], fb, s.get()));
            }
          }
        }
      }
    };
    auto multiply = [&](Expr stage) {
      if_(active, [&] {
        if_(b_col == 0u, [&] { multiply_as(stage, false); }).else_([&] { multiply_as(stage, true); });
      });
    };

    // Every stage_tiles call ends with async_commit, and every iteration commits one group
    // (empty past the last step), so async_wait(S - 2) means "step `step` has landed".
    {
      for (uint32_t s = 0; s + 1 < stages; ++s) {
        Expr at = steps * 0u + s;  // the constant s as a u32 value
        if_(at < steps, [&] { stage_tiles(at, at); }).else_([&] { async_commit(); });
      }
      for_(0u, steps, [&](Expr step) {
        // This thread's copies of step `step` have landed; after the barrier everyone's have,
        // and every lane group has finished step - 1, whose stage the next copy overwrites.
        async_wait(stages - 2);
        barrier();
        Expr next = step + (stages - 1);
        if_(next < steps, [&] { stage_tiles(next, next % stages); }).else_([&] { async_commit(); });
        multiply(step % stages);
      });
    }
    // The staging memory's last reads (the multiply) before the epilogue writes its alias; the
    // groups still in flight are empty (no copy lands later).
    async_wait(0);
    barrier();

    // Epilogue: one fragment at a time through the lane group's scratch slot, in a loop whose
    // body stores fragment f (each a uniform branch: fragments are registers, chosen when the
    // code is generated) and then runs the one epilogue.
    for_(0u, FM * FN, [&](Expr f) {
      if_(active, [&] {
        for (uint32_t fi = 0; fi < FM * FN; ++fi)
          if_(f == fi, [&] {
            coop_tile_store(acc[fi]->get(), cs, w * 256u, 16u);
            if (swiglu) coop_tile_store(gacc[fi]->get(), cs, NW * 256 + w * 256u, 16u);
          });
      });
      barrier();
      if_(active, [&] {
        Expr fm = f / FN;
        Expr fn = f % FN;
        for_(lane_id(), 256u, lane_width(), [&](Expr e) {
          Expr gi = row0 + wrow * WM + fm * 16u + e / 16u;
          Expr gj = col0 + wcol * WN + fn * 16u + e % 16u;
          if_((gi < m) && (gj < n), [&] {
            Expr v = Operand(cs[w * 256u + e]).value;
            if (one_launch) {
              partials[(split * m + gi) * n + gj] = v;  // the raw f32 sum; the epilogue comes after the reduction
              return;
            }
            const std::function<Expr()> up = [&] { return Operand(cs[NW * 256 + w * 256u + e]).value; };
            Expr out = apply_epilogue(
                epi, v, swiglu ? &up : nullptr, [&] { return cast<f32>(bias[gj]); },
                [&] { return cast<f32>(res[gi * n + gj]); });
            c[(split * m + gi) * n + gj] = cast_to(out, out_t);
          });
        });
      });
      barrier();
    });
  }
  if (one_launch) {
    // Every thread's partials are visible device-wide before thread 0 counts the threadgroup in;
    // the threadgroup that counts last (old == splits - 1, broadcast through threadgroup memory
    // so the branch is uniform) sums the tile's partials of every split in split order from memory
    // (0 + p[0] + p[1] + ..., the two-launch reduce's order and rounding: the same bits), applies
    // the epilogue, stores C and sets the counter back to 0 for the next launch.
    TgBuffer last = threadgroup_alloc("sk_last", u32, 1);
    Expr tile_id = tile_m * cols + tile_n;
    fence_device();
    barrier();
    if_(local_id(0) == 0u, [&] { last[0u] = atomic_add(counters[tile_id], 1u); });
    barrier();
    if_(Operand(last[0u]).value == splits - 1u, [&] {
      fence_device();
      // kSkRun consecutive elements of a tile row per thread and pass, each with its own sum,
      // so a thread has that many loads in flight per split.
      constexpr uint32_t kSkRun = 4;
      static_assert(kSkRun <= 16, "a run lies within one tile row");
      Expr mn = m * n;
      for_(local_id(0) * kSkRun, BM * BN, group_size(0) * kSkRun, [&](Expr e0) {
        Expr gi = row0 + e0 / BN;
        Expr gj0 = col0 + e0 % BN;
        // Past m or n (a tail tile) the index is clamped into C and the sum is not stored.
        Expr row_at = min(gi, m - 1u) * n;
        std::vector<std::unique_ptr<Var<f32>>> sum;
        std::vector<Expr> at;
        for (uint32_t j = 0; j < kSkRun; ++j) {
          sum.push_back(std::unique_ptr<Var<f32>>(new Var<f32>(0.0f)));
          at.push_back(row_at + min(gj0 + j, n - 1u));
        }
        for_(0u, splits, [&](Expr sp) {
          for (uint32_t j = 0; j < kSkRun; ++j) *sum[j] += partials[sp * mn + at[j]];
        });
        for (uint32_t j = 0; j < kSkRun; ++j) {
          Expr gj = gj0 + j;
          if_((gi < m) && (gj < n), [&] {
            Expr out = apply_epilogue(
                epi, Operand(*sum[j]).value, nullptr, [&] { return cast<f32>(bias[gj]); },
                [&] { return cast<f32>(res[gi * n + gj]); });
            c[gi * n + gj] = cast_to(out, out_t);
          });
        }
      });
      if_(local_id(0) == 0u, [&] { counters[tile_id] = 0u; });
    });
  }
}

void gemm_reduce(bool swiglu, const KernelVariant& var) {
  const DType out_t = var.type("OUT");
  Expr m = constexpr_("m", u32);
  Expr n = constexpr_("n", u32);
  Expr splits = constexpr_("splits", u32);
  Buffer partials = input("partials", f32, {splits, m, n});
  Expr epi, bias_len, res_len;
  Buffer partials2(0, f32), bias(0, out_t), res(0, out_t);
  if (swiglu) {
    partials2 = input("partials2", f32, {splits, m, n});
  } else {
    epi = constexpr_("epi", u32, specialize());
    bias_len = constexpr_("bias_len", u32);
    res_len = constexpr_("res_len", u32);
    bias = input("bias", out_t, {bias_len});
    res = input("residual", out_t, {res_len});
  }
  Buffer c = output("c", out_t, {m, n});
  Expr mn = m * n;
  for_(program_id(0) * group_size(0) + local_id(0), mn, num_programs(0) * group_size(0), [&](Expr i) {
    auto total = [&](const Buffer& p) {
      Var<f32> sum = 0.0f;
      for_(0u, splits, [&](Expr s) { sum += p[s * mn + i]; });
      return Operand(sum).value;
    };
    Expr v = total(partials);
    const std::function<Expr()> up = [&] { return total(partials2); };
    Expr out = apply_epilogue(
        epi, v, swiglu ? &up : nullptr, [&] { return cast<f32>(bias[i % n]); }, [&] { return cast<f32>(res[i]); });
    c[i] = cast_to(out, out_t);
  });
}

// The block tiles: 128 x 128 x 64 with 8 lane groups of 64 x 32 (large products; BK = 64 measured
// 3.6-8.4% faster than 32 on the H200; 128 x 256 with 64 x 64 warp tiles slower: one block per SM), 64 x 64 with 4 of 32 x 32
// (medium), 32 x 32 with 4 of 16 x 16 (small products, lavapipe's 32 KiB). Decode rows (m <= 16
// against a [n, k] weight) have their own kernel, gemm_decode.cpp.
constexpr Config kLarge{128, 128, 64, 64, 32};
// The warpgroup body (wgmma on sm_90a): 8 lane groups of 16 x 128, two warpgroups of 64 x 128.
constexpr Config kLargeWg{128, 128, 64, 16, 128};
// The tensor-map kernel's wide tile: two warpgroups of 64 x 256 (one m64n256k16 per k16 step).
constexpr Config kWideWg{128, 256, 64, 16, 256};
// The fused SwiGLU kernel keeps BK = 32: two B operands staged (72 KiB), and on the software tile
// path (HIP) its fragments at BK = 64 pass clang's stack frame limit.
constexpr Config kLargeSwiglu{128, 128, 32, 64, 32};
constexpr Config kMedium{64, 64, 32, 32, 32};
constexpr Config kSmall{32, 32, 32, 16, 16};

}  // namespace

static void gemm_large(const KernelVariant& v) { gemm_kernel(kLarge, false, v); }
static void gemm_large_wg(const KernelVariant& v) { gemm_kernel(kLargeWg, false, v, true); }
static void gemm_large_wg_tma(const KernelVariant& v) { gemm_kernel(kLargeWg, false, v, true, false, true); }
static void gemm_wide_wg_tma(const KernelVariant& v) { gemm_kernel(kWideWg, false, v, true, false, true); }
static void gemm_wide_wg_ws(const KernelVariant& v) { gemm_kernel(kWideWg, false, v, true, false, true, true); }
static void gemm_large_swiglu(const KernelVariant& v) { gemm_kernel(kLargeSwiglu, true, v); }
static void gemm_medium(const KernelVariant& v) { gemm_kernel(kMedium, false, v); }
static void gemm_medium_swiglu(const KernelVariant& v) { gemm_kernel(kMedium, true, v); }
static void gemm_small(const KernelVariant& v) { gemm_kernel(kSmall, false, v); }
static void gemm_medium_sk(const KernelVariant& v) { gemm_kernel(kMedium, false, v, false, true); }
static void gemm_small_sk(const KernelVariant& v) { gemm_kernel(kSmall, false, v, false, true); }
static void gemm_reduce_plain(const KernelVariant& v) { gemm_reduce(false, v); }
static void gemm_reduce_swiglu(const KernelVariant& v) { gemm_reduce(true, v); }

#define IRON_GEMM_OUT ::iron::type_axis("OUT", {::iron::DType::F32, ::iron::DType::F16, ::iron::DType::BF16})
#define IRON_GEMM_OUT16 ::iron::type_axis("OUT", {::iron::DType::F16, ::iron::DType::BF16})

IRON_KERNEL_VARIANTS(iron_gemm_128x128x64_w64x32, gemm_large, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {3}), IRON_GEMM_OUT);
// The warpgroup kernel (gemm_for routes large K-major-B shapes on sm_90a to it).
IRON_KERNEL_VARIANTS(iron_gemm_128x128x64_wg, gemm_large_wg, Reduction, (f16, bf16), "s{S}_{OUT}", ::iron::int_axis("S", {3}),
                     IRON_GEMM_OUT);
// Its 4-stage pipeline (one step's products in flight across the next step's staging), bf16 out.
IRON_KERNEL_VARIANTS(iron_gemm_128x128x64_wg_stages, gemm_large_wg, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {4}), ::iron::type_axis("OUT", {::iron::DType::BF16, ::iron::DType::F32}));
// The tensor-map kernels (gemm_for routes large [n, k]-weight shapes on sm_90a to them).
// C in f32 (split-K partials, f32 outputs) or bf16; an f16 C keeps the cp.async kernels.
IRON_KERNEL_VARIANTS(iron_gemm_128x128x64_wg_tma, gemm_large_wg_tma, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {4}), ::iron::type_axis("OUT", {::iron::DType::BF16, ::iron::DType::F32}));
IRON_KERNEL_VARIANTS(iron_gemm_128x256x64_wg_tma, gemm_wide_wg_tma, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {4}), ::iron::type_axis("OUT", {::iron::DType::BF16, ::iron::DType::F32}));
// Its warp-specialized form: 384 threads, a copying warpgroup and two multiplying ones.
IRON_KERNEL_VARIANTS(iron_gemm_128x256x64_wg_ws, gemm_wide_wg_ws, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {4}), ::iron::type_axis("OUT", {::iron::DType::BF16, ::iron::DType::F32}));
IRON_KERNEL_VARIANTS(iron_gemm_128x128x32_w64x32_swiglu, gemm_large_swiglu, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {3}), IRON_GEMM_OUT16);
IRON_KERNEL_VARIANTS(iron_gemm_64x64x32_w32x32, gemm_medium, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {3}), IRON_GEMM_OUT);
// The other pipeline depths of the 64x64 tile, at f32 output only (a family of its own so the
// product of its axes stays small): iron_gemm_64x64x32_w32x32_stages_s2_f32 and _s4_f32.
IRON_KERNEL_VARIANTS(iron_gemm_64x64x32_w32x32_stages, gemm_medium, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {2, 4}), ::iron::type_axis("OUT", {::iron::DType::F32}));
IRON_KERNEL_VARIANTS(iron_gemm_64x64x32_w32x32_swiglu, gemm_medium_swiglu, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {3}), IRON_GEMM_OUT16);
IRON_KERNEL_VARIANTS(iron_gemm_32x32x32_w16x16, gemm_small, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {2}), IRON_GEMM_OUT);
// One-launch split-K (the last threadgroup of each output tile reduces; see the header).
IRON_KERNEL_VARIANTS(iron_gemm_64x64x32_w32x32_sk, gemm_medium_sk, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {3}), IRON_GEMM_OUT);
IRON_KERNEL_VARIANTS(iron_gemm_32x32x32_w16x16_sk, gemm_small_sk, Reduction, (f16, bf16), "s{S}_{OUT}",
                     ::iron::int_axis("S", {2}), IRON_GEMM_OUT);
IRON_KERNEL_VARIANTS(iron_gemm_reduce, gemm_reduce_plain, Reduction, (), "{OUT}", IRON_GEMM_OUT);
IRON_KERNEL_VARIANTS(iron_gemm_reduce_swiglu, gemm_reduce_swiglu, Reduction, (), "{OUT}", IRON_GEMM_OUT);

}  // namespace iron::kernels::gemm
