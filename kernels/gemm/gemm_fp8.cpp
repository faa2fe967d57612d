// The FP8 GEMM family (`iron_gemm_fp8`, docs/gemm.md "FP8"): C = scaled(A · B^T) with A [m, k]
// row-major and B a linear layer's weight [n, k] (both K-contiguous, row strides lda and ldb),
// both f8e4m3 or both f8e5m2 (the AB axis), f32 accumulation on the fp8 tiles (16x16x32,
// mma.sync m16n8k32 on CUDA sm_89+), C [m, n] in bf16 or f32 (the OUT axis). Two scalings, the
// specialized scalar `block`:
//   0 per-tensor   C = (sa[0] * sb[0]) * sum_k A[i, k] B[j, k]: one f32 accumulator per output,
//                  scaled once in the epilogue.
//   1 block        DeepSeek-style: sa [m, kb] holds one scale per row of A and 128-deep K block,
//                  sb [ceil(n / 128), kb] one per 128 x 128 block of B (kb = k / 128, 128 | k).
//                  Each K block's product is summed into a fresh f32 fragment, then promoted into
//                  the main accumulator with its row's scale sa[i, kblk] * sb[j / 128, kblk]
//                  (coop_tile_scale_add: acc + part * s, one fused multiply-add per element).
//
// Kernels (mode Reduction, no T): iron_gemm_fp8_<BM>x<BN>x128_w<WM>x<WN>_s<S>_<AB>_<OUT>: one BM x
// BN block of C per threadgroup, (BM / WM) x (BN / WN) lane groups of WM x WN outputs (16 x 16
// fragments), 128-deep K steps (one scale block each) staged S deep. A is staged as BM rows of
// 128 bytes, B as BN rows of 128 bytes (its own orientation), both by 16-byte async_copy (cp.async
// on CUDA; rows past m or n and K past k zero-filled by the copies) into unpadded rows under the
// XOR swizzle Swizzle{3, 4, 3} (16-byte chunk c of row r at chunk c ^ (r & 7)), which the
// fragment loads read through (ldmatrix on CUDA: A row-major, B column-major, both with the bytes
// along K). In block mode each K step also stages its BM row scales (sa times the block's sb; 0
// past m) into threadgroup memory beside the tiles; they are ordered by the same barrier.
// Dispatch: grid {ceil(n / BN), ceil(m / BM), 1}, threadgroup {lane groups x lane width}; the
// selector gemm_fp8_for below plans it.
// The warpgroup kernel iron_gemm_fp8_128x128x128_wg_s3_<AB>_<OUT> stages the same rows into one
// 1024-byte aligned array (A's stages, then B's): under Swizzle{3, 4, 3} a row of 128 fp8 bytes
// is wgmma's 128-byte mode, so two warpgroups of 64 rows issue 4 wgmma m64n128k32 per step
// straight from the stages (docs/gemm.md "FP8", "The warpgroup kernel").
// The warp-specialized kernels iron_gemm_fp8_128x{256,128}x128_wg_ws_s4_<AB>_bf16 bring the same
// rows by tensor-map copies (one thread of a copying warpgroup, per-stage full / empty mbarriers:
// ws_loop.hpp) to two multiplying warpgroups; block scales on the 128x128 one only (docs/gemm.md
// "The warp-specialized tensor-map kernels (fp8)").
#include "gemm_fp8.hpp"
#include "ws_loop.hpp"

#include <iron/iron.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace iron::kernels::gemm_fp8 {
using namespace iron::dsl;

namespace {

constexpr uint32_t kBK = kBlockK;  // K elements (bytes) per staged step: one scale block
// Rows of 128 fp8 elements, 8 chunks of 16 bytes: chunk c of row r lands at c ^ (r & 7), so the
// eight rows one ldmatrix phase reads at one chunk column fall in eight distinct bank quads.
constexpr Swizzle kSwizzle{3, 4, 3};
constexpr uint32_t kGroupRows = 16;  // grouped rasterization (as iron_gemm)

// wg: the warpgroup body (wgmma; wm x wn = 16 x bn, one lane group per 16 rows). ws (with wg):
// its warp-specialized form on tensor maps (a copying warpgroup before the two multiplying ones).
struct Config {
  uint32_t bm, bn, wm, wn, stages;
  bool wg = false;
  bool ws = false;
  // Lane groups that multiply (the warp-specialized kernel launches a copying warpgroup more).
  uint32_t warps() const { return (bm / wm) * (bn / wn); }
  std::string name() const {
    return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(kBK) +
           (wg ? std::string(ws ? "_wg_ws" : "_wg") : "_w" + std::to_string(wm) + "x" + std::to_string(wn)) + "_s" +
           std::to_string(stages);
  }
  // Staging for `stages` K steps of A and B, the block scales' rows, each array 16-byte aligned
  // (the warpgroup body: A's and B's stages in one array, then the scales; ws: and two mbarriers
  // per stage); the epilogue's scratch is an alias of B's stages (the warpgroup body: of the
  // whole staging array).
  uint64_t threadgroup_bytes() const {
    auto up = [](uint64_t x) { return (x + 15) / 16 * 16; };
    return up(uint64_t(stages) * bm * kBK) + up(uint64_t(stages) * bn * kBK) + up(uint64_t(stages) * bm * 4) +
           (ws ? up(uint64_t(stages) * 16) : 0);
  }
};
// 128 x 128 with 8 lane groups of 64 x 32 (large products), 32 x 32 with 2 of 32 x 16 (small
// products, devices with little threadgroup memory: on lavapipe its 16.6 KiB of arrays and the
// two lane groups' 7 KiB of software fragment slots each fit the 32 KiB; four lane groups of
// 16 x 16 did not, at 4 KiB of slots each).
constexpr Config kLarge{128, 128, 64, 32, 3};
constexpr Config kSmall{32, 32, 32, 16, 2};
// The warpgroup body (CUDA sm_90a: wgmma m64n128k32 e4m3 / e5m2): 128 x 128, two warpgroups of 64
// rows, 3 stages of 32 KiB (A 128 rows and B 128 rows of 128 bytes).
constexpr Config kWg{128, 128, 16, 128, 3, true};
// The warp-specialized kernels on tensor maps (CUDA sm_90a): 128 x 256 (two warpgroups of 64 x
// 256, 4 wgmma m64n256k32 per step; 4 stages of 48 KiB), per-tensor scales only; 128 x 128 (4
// stages of 32 KiB, as the bf16 tensor-map kernels), per-tensor or block scales. 384 threads:
// warpgroup 0 copies.
constexpr Config kWsWide{128, 256, 16, 256, 4, true, true};
constexpr Config kWs{128, 128, 16, 128, 4, true, true};

// `defect` is Defect::None for every registered kernel; the others are the known-bad versions the
// mutation test builds (gemm_fp8.hpp).
void fp8_kernel(const Config& cfg, const KernelVariant& var, Defect defect) {
  const DType ab = var.type("AB");
  const DType out_t = var.type("OUT");
  const uint32_t BM = cfg.bm, BN = cfg.bn, WM = cfg.wm, WN = cfg.wn, S = cfg.stages;
  const uint32_t FM = WM / 16, FN = WN / 16, NW = cfg.warps(), WCOLS = BN / WN;
  const uint32_t A_STAGE = BM * kBK, B_STAGE = BN * kBK;
  const uint32_t period = 1u << (kSwizzle.bits + kSwizzle.base + kSwizzle.shift);
  if (A_STAGE % period != 0 || B_STAGE % period != 0)
    throw Error("iron_gemm_fp8 " + cfg.name() + ": a stage is not a multiple of the swizzle's period");

  Expr m = constexpr_("m", u32);
  Expr n = constexpr_("n", u32);
  Expr k = constexpr_("k", u32);
  // Row strides of A and B in elements (bytes), multiples of 16 so every 16-byte copy of a row
  // is aligned (gemm_fp8_for checks them).
  Expr lda = constexpr_("lda", u32, multiple_of(16));
  Expr ldb = constexpr_("ldb", u32, multiple_of(16));
  Expr a_len = constexpr_("a_len", u32);
  Expr b_len = constexpr_("b_len", u32);
  Expr sa_len = constexpr_("sa_len", u32);
  Expr sb_len = constexpr_("sb_len", u32);
  Expr kb = constexpr_("kb", u32);  // the scales' row length: k / 128 (block), 1 (per-tensor)
  Expr block = constexpr_("block", u32, specialize());
  Buffer a = input("a", ab, {a_len});
  Buffer b = input("b", ab, {b_len});
  Buffer sa = input("sa", f32, {sa_len});
  Buffer sb = input("sb", f32, {sb_len});
  Buffer c = output("c", out_t, {m, n});
  // The warp-specialized kernels read A and B only through these (A as [m, k], B as [n, k], K
  // innermost; boxes of 128 K bytes by BM and BN rows under the 128-byte swizzle, zeros outside
  // the tensors); a and b stay declared so a call binds the same buffers to every kernel.
  Buffer a_map(0, ab), b_map(0, ab);
  if (cfg.ws) {
    a_map = tensor_map("a_map");
    b_map = tensor_map("b_map");
  }

  TileShape tile = coop_tile_setup(16, 16, 32, ab);
  // The warpgroup body stages A and B in one array (B's stages after A's), 1024-byte aligned for
  // the wgmma descriptors (each stage of A or B is a whole number of 1024-byte swizzle atoms).
  const bool wg = cfg.wg;
  if (wg && (BM != 128 || BN % 64 != 0 || BN > 256 || uint64_t(BM) * BN * 4 > uint64_t(S) * (A_STAGE + B_STAGE)))
    throw Error("iron_gemm_fp8 " + cfg.name() + ": the warpgroup body is BM 128 (two warpgroups), BN 64, 128, 192 or 256, "
                "and its f32 block must fit in the staging memory");
  TgBuffer as = wg ? threadgroup_alloc("st", ab, S * (A_STAGE + B_STAGE), 1024) : threadgroup_alloc("as", ab, S * A_STAGE, 16);
  TgBuffer bs = wg ? as : threadgroup_alloc("bs", ab, S * B_STAGE, 16);
  const uint32_t B_BASE = wg ? S * A_STAGE : 0;  // B's first stage in bs
  TgBuffer ss = threadgroup_alloc("ss", f32, S * BM, 16);
  // The epilogue's scratch (a 16 x 16 f32 slot per lane group; the warpgroup body: the BM x BN
  // block) reuses B's staging once the K loop is done (a barrier separates them).
  TgBuffer cs = threadgroup_alias("cs", bs, 0, f32, wg ? BM * BN : NW * 256);

  Expr cols = num_programs(0);
  Expr rows = num_programs(1);
  Expr linear = program_id(1) * cols + program_id(0);
  Expr group_first = linear / (kGroupRows * cols) * kGroupRows;
  Expr group_rows = min(rows - group_first, kGroupRows);
  Expr in_group = linear % (kGroupRows * cols);
  Expr row0 = (group_first + in_group % group_rows) * BM;
  Expr col0 = in_group / group_rows * BN;
  Expr steps = (k + (kBK - 1)) / kBK;

  // Stages `count` rows of 128 bytes from src (row r at src[(r0 + r) * ld + k0]) at tg[base ..]:
  // 16-byte copies, rows past r_end and bytes past k zero-filled by the copy. A constant trip
  // count (group_size is a compile-time constant), so the loop unrolls.
  auto stage_rows = [&](const Buffer& src, const TgBuffer& tg, Expr base, uint32_t count, Expr r0, Expr r_end, Expr k0,
                        Expr ld) {
    const uint32_t chunks = count * kBK / 16;
    for_(0u, (chunks + group_size(0) - 1u) / group_size(0), [&](Expr it) {
      Expr ch = local_id(0) + it * group_size(0);
      if_(ch < chunks, [&] {
        Expr o = ch / (kBK / 16);
        Expr i = (ch % (kBK / 16)) * 16u;
        Expr go = r0 + o;
        Expr gi = k0 + i;
        Expr valid = select((go < r_end) && (gi < k), min(k - gi, 16u), 0u);
        async_copy(tg[base + swizzle(kSwizzle, o * kBK + i)], src[go * ld + gi], 16, valid);
      });
    });
  };
  // K step `step` into stage `stage`: A's and B's blocks, and in block mode the rows' scales for
  // this K block; then the thread's copies are committed.
  // The block scales of K step `step` into stage `stage` of ss: row r's sa[row0 + r, step] times
  // the block's sb (0 past m). By every thread (the cp.async kernels) or by the copying
  // warpgroup's (the warp-specialized kernels, `copier`).
  auto stage_scales = [&](Expr step, Expr stage, bool copier) {
    auto row = [&](Expr r) {
      Expr gi = row0 + r;
      Expr ok = gi < m;
      Expr ka = step, kbb = step, cb = col0 / 128u;
      if (defect == Defect::ScaleKBlock) ka = min(step + 1u, kb - 1u);       // A's scale of the next K block
      if (defect == Defect::KBlockBoundary) ka = kbb = step / 2u;            // 256-deep scale blocks
      if (defect == Defect::ScaleBColumn) cb = col0 * 0u;                   // B's first column block always
      Expr sa_at = select(ok, gi * kb + ka, 0u);
      Expr s = Operand(sa[sa_at]).value * Operand(sb[cb * kb + kbb]).value;
      ss[stage * BM + r] = select(ok, s, 0.0f);
    };
    if (copier)
      for_(local_id(0), BM, lane_width() * 4u, row);
    else
      for_(local_id(0), BM, group_size(0), row);
  };
  auto stage_step = [&](Expr step, Expr stage) {
    Expr k0 = step * kBK;
    stage_rows(a, as, stage * A_STAGE, BM, row0, m, k0, lda);
    stage_rows(b, bs, B_BASE + stage * B_STAGE, BN, col0, n, k0, ldb);
    if_(block == 1u, [&] { stage_scales(step, stage, false); });
    async_commit();
  };

  if (wg) {
    // Warpgroup h (lane groups 4h .. 4h + 3) multiplies rows 64h .. 64h + 63 of the block into a
    // 16 x BN accumulator per lane group (frag<acc, f32, 16xBNx32>): per 128-deep step, 4 wgmma
    // m64nBNk32 at K offsets 0, 32, 64, 96 of the stage's 128-byte rows (A and B K-major under
    // the 128-byte swizzle the copies wrote through). No branch surrounds the products or the
    // waits (ptxas serializes wgmma issued or waited on a divergent path; `block` is specialized).
    const Swizzle sw = defect == Defect::WgSwizzle64 ? Swizzle{2, 4, 3} : kSwizzle;
    const uint32_t kstep = defect == Defect::WgKStep16 ? 16 : 32;
    // The warp-specialized kernels' multiplying lane groups are 4..11 (warpgroup 0 copies).
    const bool ws = cfg.ws;
    Expr w = ws ? simd_group_id() - 4u : simd_group_id();
    Expr half = ws ? (simd_group_id() / 4u + 1u) % 2u : (w / 4u) % 2u;
    FragVar acc(coop_tile_wg_fill(BN, 0.0f, ab));
    // One step's products from stage `stage`: 4 wgmma of k 32, into a fresh accumulator `part`
    // (block scales) or the main one (per-tensor), fenced and committed; then `then(part)`.
    auto products = [&](Expr stage, const std::function<void(FragVar&)>& then) {
      Expr a0 = stage * A_STAGE + half * (64u * kBK), b0 = B_BASE + stage * B_STAGE;
      auto issue = [&](Frag into) {
        for (uint32_t ks = 0; ks < kBK / 32; ++ks) into = coop_tile_wg_issue(as, a0 + ks * kstep, bs, b0 + ks * kstep, into, sw);
        return into;
      };
      // Block scales: the step's product into a fresh accumulator (per-tensor: into the main one).
      FragVar part(coop_tile_wg_fill(BN, 0.0f, ab));
      wg_fence();
      if_(block == 1u, [&] { part.set(issue(part.get())); }).else_([&] { acc.set(issue(acc.get())); });
      wg_commit();
      then(part);
    };
    // Block scales: the product waited, then promoted into the main accumulator with its rows'
    // scales (ss: this stage's BM row scales; lane group w holds rows 16w .. 16w + 15).
    auto promote = [&](Expr stage, FragVar& part) {
      return if_(block == 1u, [&] {
        if (defect != Defect::WgNoWait) wg_wait(0);
        // (Lane groups past the 8th, in a larger threadgroup, repeat the rows of lane group w % 8.)
        acc.set(coop_tile_scale_add(ss, stage * BM + (w % 8u) * 16u, part.get(), acc.get()));
      });
    };
    Expr stores;  // the lane groups whose accumulators the epilogue stores (ws; else w < 8)
    if (ws) {
      // Warp-specialized (docs/gemm.md "FP8", "The warp-specialized kernels"): warpgroup 0's
      // thread 0 issues each stage's two boxes on full[s] (A: 128 K bytes x BM rows at column
      // 128 step, row row0; B: 128 x BN at row col0; zeros past m, n and k) once empty[s] has
      // handed it back; with block scales all of warpgroup 0 waits too and writes the stage's BM
      // row scales (sa times the block's sb) into ss before arriving on full[s], so a consumer's
      // wait on full[s] covers the scales as well as the boxes. Warpgroups 1 and 2 wait on
      // full[s], issue the step's products and retire the previous step's (wg_wait(1);
      // block scales: wg_wait(0) and the promotion) before its stage goes back.
      Expr active = simd_group_id() >= 4u && simd_group_id() < 12u;
      stores = active;
      gemm::WsLoop loop;
      loop.stages = S;
      loop.steps = steps;
      // Block scales: every thread of warpgroup 0 arrives (thread 0 with the boxes' bytes).
      loop.full_arrivals = select(block == 1u, lane_width() * 4u, 1u);
      loop.empty_arrivals = 8u;
      loop.producer = [&] { return local_id(0) == 0u || block == 1u; };
      loop.consumer = active;
      loop.produce = [&](const TgBuffer& full, Expr step, Expr stage) {
        if_(block == 1u, [&] { stage_scales(step, stage, true); });
        if_(local_id(0) == 0u, [&] {
          mbar_arrive_tx(full[stage], A_STAGE + B_STAGE);  // bytes: fp8 elements
          tma_load_2d(a_map, as[stage * A_STAGE], step * kBK, row0, full[stage]);
          tma_load_2d(b_map, bs[B_BASE + stage * B_STAGE], step * kBK, col0, full[stage]);
        }).else_([&] { mbar_arrive(full[stage]); });  // (block scales only: the others stay out of the loop)
      };
      loop.consume = [&](Expr, Expr stage) {
        products(stage, [&](FragVar& part) { promote(stage, part).else_([&] { wg_wait(1); }); });
      };
      gemm::ws_loop(loop);
    } else {
      // The copies run S - 1 steps ahead; each step's products are retired (wg_wait(0)) before the
      // barrier that lets the next copy overwrite their stage. Within a step the products are
      // issued first and the next step's copies after them, so the tensor cores work while the
      // threads issue the copies (the copies write the stage of step - 1, whose products the
      // wg_wait(0) at the top of this step retired, and the scales of another stage).
      const uint32_t ahead = S - 1;
      for (uint32_t st = 0; st < ahead; ++st) {
        Expr at = steps * 0u + st;
        if_(at < steps, [&] { stage_step(at, at); }).else_([&] { async_commit(); });
      }
      for_(0u, steps, [&](Expr step) {
        wg_wait(0);
        async_wait(ahead - 1);
        fence_proxy_async();
        barrier();
        Expr stage = step % S;
        products(stage, [&](FragVar& part) {
          Expr next = step + ahead;
          if_(next < steps, [&] { stage_step(next, next % S); }).else_([&] { async_commit(); });
          promote(stage, part);
        });
      });
      wg_wait(0);
      async_wait(0);
      barrier();
    }
    // Epilogue: the block through the scratch (row-major BM x BN f32), then every thread takes
    // elements in order (consecutive threads along a row of C); per-tensor scaling multiplies by
    // sa[0] * sb[0] (rounded to f32 once), then one rounding to OUT.
    Expr scale = select(block == 1u, 1.0f, Operand(sa[0u]).value * Operand(sb[0u]).value);
    if_(ws ? stores : w < 8u, [&] { coop_tile_store(acc.get(), cs, w * (16u * BN), BN); });  // further lane groups store nothing
    barrier();
    for_(local_id(0), BM * BN, group_size(0), [&](Expr e) {
      Expr gi = row0 + e / BN;
      Expr gj = col0 + e % BN;
      if_((gi < m) && (gj < n), [&] {
        Expr v = Operand(cs[e]).value;
        c[gi * n + gj] = cast_to(v * scale, out_t);
      });
    });
    return;
  }
  Expr w = simd_group_id();
  Expr active = w < NW;
  Expr wrow = w / WCOLS;
  Expr wcol = w % WCOLS;
  std::vector<std::unique_ptr<FragVar>> acc;
  for (uint32_t f = 0; f < FM * FN; ++f)
    acc.push_back(std::unique_ptr<FragVar>(new FragVar(coop_tile_fill(tile, 0.0f))));
  const TileLayout la{false, kSwizzle}, lb{true, kSwizzle};
  // One staged K step: 4 products of 32 per fragment. Per-tensor: straight into the
  // accumulators. Block: into fresh fragments, then each is promoted with its rows' scales.
  auto multiply = [&](Expr stage, bool promote) {
    std::vector<Frag> part;
    for (uint32_t f = 0; f < FM * FN; ++f) part.push_back(promote ? coop_tile_fill(tile, 0.0f) : acc[f]->get());
    for (uint32_t ks = 0; ks < kBK / 32; ++ks) {
      std::vector<Frag> fa;
      for (uint32_t fm = 0; fm < FM; ++fm)
        fa.push_back(coop_tile_load_a(tile, as, stage * A_STAGE + (wrow * WM + fm * 16) * kBK + ks * 32, kBK, la));
      for (uint32_t fn = 0; fn < FN; ++fn) {
        Frag fb = coop_tile_load_b(tile, bs, stage * B_STAGE + (wcol * WN + fn * 16) * kBK + ks * 32, kBK, lb);
        for (uint32_t fm = 0; fm < FM; ++fm) part[fm * FN + fn] = coop_tile_run(fa[fm], fb, part[fm * FN + fn]);
      }
    }
    for (uint32_t fm = 0; fm < FM; ++fm)
      for (uint32_t fn = 0; fn < FN; ++fn) {
        FragVar& s = *acc[fm * FN + fn];
        // The rows' scales; ScaleRow: those of the next 16 rows (cyclically).
        Expr rows_at = defect == Defect::ScaleRow ? stage * BM + (wrow * WM + fm * 16 + 16u) % BM : stage * BM + wrow * WM + fm * 16;
        if (promote)
          s.set(coop_tile_scale_add(ss, rows_at, part[fm * FN + fn], s.get()));
        else
          s.set(part[fm * FN + fn]);
      }
  };

  // The pipeline of iron_gemm: S - 1 steps in flight, one async_wait and one barrier per step.
  for (uint32_t st = 0; st + 1 < S; ++st) {
    Expr at = steps * 0u + st;
    if_(at < steps, [&] { stage_step(at, at); }).else_([&] { async_commit(); });
  }
  for_(0u, steps, [&](Expr step) {
    async_wait(S - 2);
    barrier();
    Expr next = step + (S - 1);
    if_(next < steps, [&] { stage_step(next, next % S); }).else_([&] { async_commit(); });
    if_(active, [&] {
      // ScaleOnceAtEnd: no promotion; the blocks' products summed unscaled, then scaled once below.
      if_(block == 1u, [&] { multiply(step % S, defect != Defect::ScaleOnceAtEnd); }).else_([&] { multiply(step % S, false); });
    });
  });
  if (defect == Defect::ScaleOnceAtEnd)
    if_(active && block == 1u, [&] {
      Frag zero = coop_tile_fill(tile, 0.0f);
      for (uint32_t fm = 0; fm < FM; ++fm)
        for (uint32_t fn = 0; fn < FN; ++fn) {
          FragVar& s = *acc[fm * FN + fn];
          s.set(coop_tile_scale_add(ss, (steps - 1u) % S * BM + wrow * WM + fm * 16, s.get(), zero));
        }
    });
  async_wait(0);
  barrier();

  // Epilogue: one fragment at a time through the lane group's scratch slot; per-tensor scaling
  // multiplies by sa[0] * sb[0] (rounded to f32 once) here, then one rounding to OUT.
  Expr scale = select(block == 1u, 1.0f, Operand(sa[0u]).value * Operand(sb[0u]).value);
  for_(0u, FM * FN, [&](Expr f) {
    if_(active, [&] {
      for (uint32_t fi = 0; fi < FM * FN; ++fi)
        if_(f == fi, [&] { coop_tile_store(acc[fi]->get(), cs, w * 256u, 16u); });
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
          c[gi * n + gj] = cast_to(v * scale, out_t);
        });
      });
    });
    barrier();
  });
}

}  // namespace

void gemm_fp8_small_kernel(const KernelVariant& v, Defect defect) { fp8_kernel(kSmall, v, defect); }
void gemm_fp8_wg_kernel(const KernelVariant& v, Defect defect) { fp8_kernel(kWg, v, defect); }
void gemm_fp8_ws_kernel(const KernelVariant& v, bool wide, Defect defect) { fp8_kernel(wide ? kWsWide : kWs, v, defect); }

static void gemm_fp8_large(const KernelVariant& v) { fp8_kernel(kLarge, v, Defect::None); }
static void gemm_fp8_small(const KernelVariant& v) { fp8_kernel(kSmall, v, Defect::None); }
static void gemm_fp8_wg(const KernelVariant& v) { fp8_kernel(kWg, v, Defect::None); }
static void gemm_fp8_ws_wide(const KernelVariant& v) { fp8_kernel(kWsWide, v, Defect::None); }
static void gemm_fp8_ws(const KernelVariant& v) { fp8_kernel(kWs, v, Defect::None); }

#define IRON_GEMM_FP8_AB ::iron::type_axis("AB", {::iron::DType::F8E4M3, ::iron::DType::F8E5M2})
#define IRON_GEMM_FP8_OUT ::iron::type_axis("OUT", {::iron::DType::F32, ::iron::DType::BF16})

IRON_KERNEL_VARIANTS(iron_gemm_fp8_128x128x128_w64x32_s3, gemm_fp8_large, Reduction, (), "{AB}_{OUT}", IRON_GEMM_FP8_AB,
                     IRON_GEMM_FP8_OUT);
IRON_KERNEL_VARIANTS(iron_gemm_fp8_32x32x128_w32x16_s2, gemm_fp8_small, Reduction, (), "{AB}_{OUT}", IRON_GEMM_FP8_AB,
                     IRON_GEMM_FP8_OUT);
// The warpgroup kernel (gemm_fp8_for routes CUDA sm_90a to it).
IRON_KERNEL_VARIANTS(iron_gemm_fp8_128x128x128_wg_s3, gemm_fp8_wg, Reduction, (), "{AB}_{OUT}", IRON_GEMM_FP8_AB,
                     IRON_GEMM_FP8_OUT);
// The warp-specialized kernels on tensor maps (gemm_fp8_for routes CUDA sm_90a calls with C in
// bf16 to them): 128x256 per-tensor, 128x128 per-tensor (fewer blocks than compute units) and
// block scales. C in bf16 only; an f32 C keeps the kernel above.
IRON_KERNEL_VARIANTS(iron_gemm_fp8_128x256x128_wg_ws_s4, gemm_fp8_ws_wide, Reduction, (), "{AB}_{OUT}", IRON_GEMM_FP8_AB,
                     ::iron::type_axis("OUT", {::iron::DType::BF16}));
IRON_KERNEL_VARIANTS(iron_gemm_fp8_128x128x128_wg_ws_s4, gemm_fp8_ws, Reduction, (), "{AB}_{OUT}", IRON_GEMM_FP8_AB,
                     ::iron::type_axis("OUT", {::iron::DType::BF16}));

namespace {
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
std::string num(int64_t v) { return std::to_string(v); }
}  // namespace

// The family's selector: `iron_gemm_fp8` takes the logical call
//   m, n, k         C [m, n] = scaled(A [m, k] · B [n, k]^T)
//   lda, ldb (k)    the row strides of A and B, multiples of 16 elements (16-byte rows)
//   scale (0)       0 per-tensor (sa, sb hold one f32 each), 1 block (sa [m, k / 128], sb
//                   [ceil(n / 128), k / 128]; k must be a multiple of 128)
//   out (0)         C's dtype: 0 bf16, 1 f32
//   tile            optional: 0 the 128x128 tile, 1 the 32x32 tile
//   wg              optional: 1 the warpgroup kernel (wgmma on CUDA sm_90a; composed from
//                   mma.sync elsewhere on CUDA and on the interpreter), 0 the mma.sync kernels;
//                   by default the warpgroup kernel where the 128x128 tile is chosen on CUDA sm_90a
//   tma             optional: the warpgroup kernel's operands by tensor-map copies, warp-specialized
//                   (C in bf16): 0 off (the cp.async warpgroup kernel), 1 the 128x128 kernel, 2 the
//                   128x256 kernel (per-tensor scales only); asking implies wg 1. By default on CUDA
//                   sm_90a where the warpgroup kernel is taken with C in bf16: block scales 1,
//                   per-tensor 2 when the 128x256 blocks fill every compute unit, else 1
//   ws              optional, with tma: 1 (the tensor-map kernels are warp-specialized); 0 is refused
// with the call's dtype the fp8 format of A and B (f8e4m3 or f8e5m2) and buffers a, b (that
// format), sa, sb (f32) and c (out).
static LaunchPlan gemm_fp8_for(const Call& call, const DeviceInfo& dev) {
  const DType t = call.dtype.t;
  if (t != DType::F8E4M3 && t != DType::F8E5M2)
    throw Error(std::string("A and B must be f8e4m3 or f8e5m2 (both the same), not ") + dtype_name(t));
  if (!dev.int8) throw Error("device " + dev.name + " has no 8-bit storage (fp8 buffers)");
  const int64_t m = call.size("m"), n = call.size("n"), k = call.size("k");
  if (m < 1 || n < 1 || k < 1)
    throw Error("m = " + num(m) + ", n = " + num(n) + ", k = " + num(k) + ": each must be at least 1");
  const int64_t lda = call.size_or("lda", k), ldb = call.size_or("ldb", k);
  if (lda < k || ldb < k) throw Error("lda = " + num(lda) + ", ldb = " + num(ldb) + ": each must be at least k = " + num(k));
  if (lda % 16 != 0 || ldb % 16 != 0)
    throw Error("lda = " + num(lda) + ", ldb = " + num(ldb) + ": the row strides must be multiples of 16 elements (every "
                "row 16-byte aligned for the 16-byte copies)");
  const int64_t scale = call.size_or("scale", 0);
  if (scale > 1) throw Error("scale = " + num(scale) + " is out of range (0 per-tensor, 1 block)");
  const bool block = scale == 1;
  if (block && k % kBK != 0)
    throw Error("k = " + num(k) + " with block scales: k must be a multiple of 128 (one A scale per row and 128-deep K "
                "block, one B scale per 128 x 128 block)");
  const int64_t out_code = call.size_or("out", 0);
  if (out_code > 1) throw Error("out = " + num(out_code) + " is out of range (0 bf16, 1 f32)");
  const DType out = out_code == 1 ? DType::F32 : DType::BF16;
  const uint64_t a_len = uint64_t(m - 1) * uint64_t(lda) + uint64_t(k), b_len = uint64_t(n - 1) * uint64_t(ldb) + uint64_t(k);
  const uint64_t kblocks = block ? uint64_t(k) / kBK : 1;
  const uint64_t sa_len = block ? uint64_t(m) * kblocks : 1, sb_len = block ? ceil_div(uint64_t(n), 128) * kblocks : 1;
  // The copies index A and B with u32 arithmetic, tails included (a row past m: (m - 1 + BM) rows).
  if (uint64_t(m + 128) * uint64_t(lda) >= (1ull << 32) || uint64_t(n + 128) * uint64_t(ldb) >= (1ull << 32))
    throw Error("A or B spans 2^32 elements or more (u32 indices)");

  const uint64_t shared = std::max(dev.shared_memory_bytes, dev.shared_memory_optin_bytes);
  std::string why;
  Config cfg = kLarge;
  const int64_t tl = call.size_or("tile", -1);
  if (tl > 1) throw Error("tile = " + num(tl) + " is out of range (0 128x128, 1 32x32)");
  if (kLarge.threadgroup_bytes() > shared) {
    cfg = kSmall;
    why = num(int64_t(shared)) + " B of threadgroup memory: the 32x32 tile" + (tl >= 0 ? " (whatever tile the call asks for)" : "");
  } else if (tl >= 0) {
    cfg = tl == 0 ? kLarge : kSmall;
    why = "tile " + num(tl) + " as asked";
  } else if (m <= 64) {
    cfg = kSmall;
    why = "m = " + num(m) + " <= 64: the 32x32 tile";
  } else {
    why = "m = " + num(m) + " > 64: the 128x128 tile";
  }
  // The warpgroup kernel: where the 128x128 tile is chosen on CUDA sm_90a, or asked for (wg 1)
  // on CUDA and the interpreter with no tile asked for (its K loop is the 128x128 tile's, 4
  // wgmma m64n128k32 per step and warpgroup instead of 8 lane groups' mma.sync).
  int64_t wg_ask = call.size_or("wg", -1);
  if (wg_ask > 1) throw Error("wg = " + num(wg_ask) + " is out of range (0 the mma.sync kernels, 1 the warpgroup kernel)");
  const int64_t tma_ask = call.size_or("tma", -1);
  if (tma_ask > 2)
    throw Error("tma = " + num(tma_ask) + " is out of range (0 the cp.async warpgroup kernel, 1 the 128x128 tensor-map kernel, "
                "2 the 128x256 one)");
  if (tma_ask >= 1 && wg_ask == -1) wg_ask = 1;  // a tensor-map kernel is a warpgroup kernel
  const bool wg_backend = dev.backend == Backend::Cuda || dev.backend == Backend::Interp;
  const bool sm90a = dev.backend == Backend::Cuda && dev.arch == "sm_90a";
  const bool fits = kWg.threadgroup_bytes() <= shared;
  if (wg_ask == 1 && (!wg_backend || tl >= 0 || !fits)) {
    why += std::string("; wg 1 but ") +
           (!wg_backend ? "not the CUDA or interpreter backend" : tl >= 0 ? "a tile asked for" : "too little threadgroup memory") +
           ": the mma.sync kernel";
  } else if (wg_ask == 1 || (wg_ask == -1 && sm90a && cfg.bm == kLarge.bm && tl < 0)) {
    cfg = kWg;
    why += "; the warpgroup kernel (wgmma m64n128k32 on sm_90a)";
  }
  // The warp-specialized kernels on tensor maps (iron_gemm_fp8_128x{128,256}x128_wg_ws_s<S>_<AB>_bf16):
  // where the warpgroup kernel is taken. Block scales take the 128x128 kernel: the 128x256
  // block's columns span two of B's scale blocks, and a second 64 x 256 f32 accumulator per
  // warpgroup does not fit the registers.
  int64_t tma = 0;
  const int64_t ws_ask = call.size_or("ws", -1);
  if (ws_ask > 1) throw Error("ws = " + num(ws_ask) + " is out of range (1 the warp-specialized tensor-map kernels)");
  const uint64_t wide_blocks = ceil_div(uint64_t(m), 128) * ceil_div(uint64_t(n), 256);
  if (tma_ask >= 1) {
    if (cfg.wg) {
      tma = tma_ask;
    } else if (!wg_backend) {
      why += "; tma " + num(tma_ask) + " but no warpgroup kernel";
    } else {
      throw Error("tma = " + num(tma_ask) + " needs the warpgroup kernel; this call has " +
                  (wg_ask == 0 ? std::string("wg 0") : tl >= 0 ? std::string("a tile asked for") : std::string("too little threadgroup memory")));
    }
  } else if (tma_ask == -1 && sm90a && cfg.wg && out == DType::BF16 && ws_ask != 0 &&
             std::max(kWs.threadgroup_bytes(), kWsWide.threadgroup_bytes()) <= shared) {
    tma = block ? 1 : wide_blocks >= std::max(1u, dev.compute_units) ? 2 : 1;
  }
  if (tma != 0) {
    if (out != DType::BF16)
      throw Error("tma = " + num(tma) + ": the tensor-map kernels write C in bf16 (out 0); this call has out " + num(out_code) +
                  " (tma 0 keeps the cp.async warpgroup kernel)");
    if (tma == 2 && block)
      throw Error("tma = 2 with block scales: the 128x256 kernel is per-tensor only (its columns span two of B's 128 x 128 "
                  "scale blocks); block scales take tma 1");
    if (ws_ask == 0)
      throw Error("ws = 0 with tma " + num(tma) + ": the fp8 tensor-map kernels are warp-specialized only (tma 0 keeps the "
                  "cp.async warpgroup kernel)");
    cfg = tma == 2 ? kWsWide : kWs;
    why += std::string("; tensor-map copies, warp-specialized (a copying warpgroup, 384 threads), ") +
           (tma == 2 ? "128x256 (wgmma m64n256k32 on sm_90a)" : "128x128 (wgmma m64n128k32 on sm_90a)");
  } else if (ws_ask == 1 && wg_backend) {
    throw Error("ws = 1 needs a tensor-map kernel (tma 1 or 2); this call has tma 0");
  }
  if (cfg.threadgroup_bytes() > shared)
    throw Error("the " + cfg.name() + " tile needs " + num(int64_t(cfg.threadgroup_bytes())) +
                " B of threadgroup memory; device " + dev.name + " has " + num(int64_t(shared)));
  const uint32_t lanes = std::max(1u, dev.lane_width);
  // The warpgroup kernel: 8 lane groups, two warpgroups; warp-specialized: a copying warpgroup more.
  const uint32_t threads = (cfg.warps() + (cfg.ws ? 4 : 0)) * lanes;
  if (threads > dev.max_threads_per_group)
    throw Error("the " + cfg.name() + " tile needs " + num(threads) + " threads per threadgroup; device " + dev.name +
                " allows " + num(dev.max_threads_per_group));
  const Dim3 grid{uint32_t(ceil_div(uint64_t(n), cfg.bn)), uint32_t(ceil_div(uint64_t(m), cfg.bm)), 1};
  if (grid.x > dev.max_grid.x || grid.y > dev.max_grid.y)
    throw Error("grid " + num(grid.x) + "x" + num(grid.y) + " exceeds the device's limits");
  LaunchPlan plan;
  LaunchStep step{"iron_gemm_fp8_" + cfg.name() + "_" + dtype_name(t) + "_" + dtype_name(out),
                  grid,
                  {threads, 1, 1},
                  {{"m", uint32_t(m)},
                   {"n", uint32_t(n)},
                   {"k", uint32_t(k)},
                   {"lda", uint32_t(lda)},
                   {"ldb", uint32_t(ldb)},
                   {"a_len", uint32_t(a_len)},
                   {"b_len", uint32_t(b_len)},
                   {"sa_len", uint32_t(sa_len)},
                   {"sb_len", uint32_t(sb_len)},
                   {"kb", uint32_t(kblocks)},
                   {"block", uint32_t(block ? 1 : 0)}},
                  {}};
  // The tensor maps: A as [m, k] and B as [n, k], K innermost (1-byte elements, row strides lda
  // and ldb bytes), boxes of 128 K bytes (one 128-byte swizzle span) by the block's rows.
  if (cfg.ws)
    step.maps = {{"a_map", "a", {uint64_t(k), uint64_t(m)}, {uint64_t(lda)}, {kBK, cfg.bm}, TensorMap::Swizzle::B128},
                 {"b_map", "b", {uint64_t(k), uint64_t(n)}, {uint64_t(ldb)}, {kBK, cfg.bn}, TensorMap::Swizzle::B128}};
  plan.steps.push_back(step);
  plan.reason = why + (block ? "; block scales (1 x 128 for A, 128 x 128 for B), each K block promoted into the f32 "
                               "accumulator with its scales"
                             : "; per-tensor scales applied once in the epilogue");
  return plan;
}
IRON_SELECTOR(iron_gemm_fp8, gemm_fp8_for);

}  // namespace iron::kernels::gemm_fp8
