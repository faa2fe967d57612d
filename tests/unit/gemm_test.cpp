// The GEMM family (kernels/gemm/): gemm_for's routes with devices filled in by hand (decode
// rows M = 1..64, the seeds' small split-K shapes, large prefill shapes, lavapipe's 32 KiB),
// its located errors for bad calls, and split-K's determinism: the same call run 100 times gives
// the same bits on every backend this machine has (interpreter, lavapipe, and CUDA on a GPU
// machine, where the shape is a production-sized split-K).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <iron/blas.hpp>
#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "harness/mutate.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace iron {
namespace {

DeviceInfo h200() {
  DeviceInfo d;
  d.backend = Backend::Cuda;
  d.name = "H200-like";
  d.lane_width = 32;
  d.max_threads_per_group = 1024;
  d.max_grid = {2147483647u, 65535, 65535};
  d.shared_memory_bytes = 48 * 1024;
  d.shared_memory_optin_bytes = 227 * 1024;
  d.compute_units = 132;
  d.f16 = d.bf16 = true;
  return d;
}

DeviceInfo lavapipe() {
  DeviceInfo d;
  d.backend = Backend::Vulkan;
  d.name = "lavapipe-like";
  d.lane_width = 8;
  d.max_threads_per_group = 1024;
  d.max_grid = {65535, 65535, 65535};
  d.shared_memory_bytes = 32 * 1024;
  d.f16 = d.bf16 = true;
  return d;
}

LaunchPlan gemm(const DeviceInfo& d, int64_t m, int64_t n, int64_t k, Constexprs extra = {}, DType t = DType::BF16) {
  Constexprs args{{"m", m}, {"n", n}, {"k", k}};
  for (auto& [name, v] : extra) args.insert_or_assign(name, v);
  return plan_launch("iron_gemm", Call{t, args}, d);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

uint32_t splits_of(const LaunchPlan& p) { return uint32_t(p.steps.front().constexprs.at("splits").as_double()); }

// Decode rows: m <= 16 against a [n, k] weight takes iron_gemm_decode, one kernel (no partials,
// no reduce), 4 lane groups of 32, one K slice when the 3584 row groups of 4 outnumber 16 lane
// groups per compute unit; N = 96 (24 row groups) slices K 16 ways (K = 5120 has 640 chunks, 20
// per lane group). A row-major B, an unaligned stride or SwiGLU take the 32x32 tile instead.
TEST(GemmSelector, DecodeRows) {
  const DeviceInfo d = h200();
  // m <= 9 on the lanes body: 2 K slices (3584 row groups x 2 reach 32 lane groups per compute
  // unit), 2 row groups per threadgroup of 4 lane groups. mma 0 forces it at any m.
  for (int64_t m : {1, 2, 7, 8, 9, 16}) {
    LaunchPlan p = gemm(d, m, 14336, 4096, m < 10 ? Constexprs{{"b_trans", 1}} : Constexprs{{"b_trans", 1}, {"mma", 0}});
    ASSERT_EQ(p.steps.size(), 1u) << p.describe();
    EXPECT_EQ(p.describe(), "iron_gemm_decode_bf16 grid 1792x1x1 tg 128x1x1");
    EXPECT_EQ(p.steps[0].constexprs.at("ksplit").as_double(), 2);
    EXPECT_EQ(p.steps[0].constexprs.at("mma").as_double(), 0);
    EXPECT_NE(p.reason.find("decode rows on the lanes (4 rows of W per lane group), 2 K slices,"), std::string::npos)
        << p.reason;
  }
  // 10 <= m <= 16 on the tiles body by default (and any m <= 16 when asked for): 16 rows of W per
  // lane group, 8 lane groups (2 K slices of 4 tile rows: 896 x 2 reach 132 x 8 lane groups),
  // one persistent threadgroup per compute unit; A's block staged with the row stride k + 8.
  for (const auto& [m, extra] : std::vector<std::pair<int64_t, Constexprs>>{
           {2, {{"mma", 1}}}, {8, {{"mma", 2}}}, {10, {}}, {16, {}}}) {
    Constexprs args{{"b_trans", 1}};
    args.insert(extra.begin(), extra.end());
    LaunchPlan p = gemm(d, m, 14336, 4096, args);
    EXPECT_EQ(p.describe(), "iron_gemm_decode_bf16 grid 132x1x1 tg 256x1x1") << m;
    const Constexprs& c = p.steps[0].constexprs;
    EXPECT_EQ(c.at("mma").as_double(), 1) << m;
    EXPECT_EQ(c.at("ksplit").as_double(), 2) << m;
    EXPECT_EQ(c.at("at_len").as_double(), (4096 + 8) * 16) << m;
    EXPECT_EQ(c.at("red_len").as_double(), 8 * 256) << m;
    EXPECT_EQ(c.at("ws_len").as_double(), 8 * 4 * 16 * 72) << m;
    EXPECT_NE(p.reason.find("decode rows on tiles (16 rows of W per lane group), 2 K slices, 8 lane groups"), std::string::npos)
        << p.reason;
  }
  // The lanes where the tiles do not fit (k not a multiple of 16, n < 16, lavapipe) or where W
  // has fewer tile rows than compute units (n = 2096: 131 for 132 units).
  EXPECT_EQ(gemm(d, 12, 4096, 4104, {{"b_trans", 1}}).steps[0].constexprs.at("mma").as_double(), 0);
  EXPECT_EQ(gemm(d, 12, 2096, 4096, {{"b_trans", 1}}).steps[0].constexprs.at("mma").as_double(), 0);
  EXPECT_EQ(gemm(d, 12, 2112, 4096, {{"b_trans", 1}}).steps[0].constexprs.at("mma").as_double(), 1);
  EXPECT_EQ(gemm(d, 12, 8, 4096, {{"b_trans", 1}}).steps[0].constexprs.at("mma").as_double(), 0);
  EXPECT_EQ(gemm(lavapipe(), 12, 64, 256, {{"b_trans", 1}}).steps[0].constexprs.at("mma").as_double(), 0);
  // k = 5120: A's block (164,096 bytes) and 8 lane groups' rings pass 227 KiB; 4 lane groups fit.
  {
    LaunchPlan p = gemm(d, 16, 96, 5120, {{"b_trans", 1}, {"mma", 1}});
    EXPECT_EQ(p.describe(), "iron_gemm_decode_bf16 grid 6x1x1 tg 128x1x1");
    EXPECT_EQ(p.steps[0].constexprs.at("ws_len").as_double(), 4 * 4 * 16 * 72);
    EXPECT_EQ(p.steps[0].constexprs.at("ksplit").as_double(), 4);
  }
  // Tiles need k a multiple of 16 and 64 KiB of threadgroup memory.
  EXPECT_NE(error_of([&] { gemm(d, 12, 64, 4104, {{"b_trans", 1}, {"mma", 1}}); }).find("mma = 1 (decode rows on tiles) needs"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(lavapipe(), 12, 64, 256, {{"b_trans", 1}, {"mma", 1}}); }).find("mma = 1"), std::string::npos);
  EXPECT_EQ(gemm(lavapipe(), 12, 64, 256, {{"b_trans", 1}, {"mma", 2}}).steps[0].constexprs.at("mma").as_double(), 0);
  EXPECT_EQ(gemm(d, 12, 64, 256, {{"b_trans", 1}, {"mma", 2}}).steps[0].constexprs.at("mma").as_double(), 1);
  // Tiles for m > 16 when forced: blocks of 16 rows of A along the grid's y.
  EXPECT_EQ(gemm(d, 49, 96, 5120, {{"b_trans", 1}, {"tile", 3}, {"mma", 1}}).describe(),
            "iron_gemm_decode_bf16 grid 6x4x1 tg 128x1x1");
  // 16 < m <= 64 at n <= 128: the lanes body too (blocks of 16 rows of A); n = 129: the tiles.
  EXPECT_EQ(gemm(d, 49, 96, 5120, {{"b_trans", 1}}).steps[0].kernel, "iron_gemm_decode_bf16");
  EXPECT_NE(gemm(d, 49, 96, 5120, {{"b_trans", 1}}).reason.find("m = 49 <= 64, n = 96 <= 128"), std::string::npos);
  // There the lanes take 16 K slices at every m (512 threads: CUDA's __launch_bounds__ caps the
  // body at 128 registers and m = 26 spills 72 bytes, yet 256 threads and 8 slices measured
  // slower on the H200: 20.4 us against 15.0 at m = 26).
  for (int64_t m : {9, 26, 49}) {
    LaunchPlan q = gemm(d, m, 96, 5120, {{"b_trans", 1}});
    EXPECT_EQ(q.steps[0].threadgroup.x, 512u) << m;
    EXPECT_EQ(q.steps[0].constexprs.at("ksplit").as_double(), 16) << m;
    EXPECT_EQ(q.steps[0].constexprs.at("mma").as_double(), 0) << m;
  }
  LaunchPlan p = gemm(d, 1, 96, 5120, {{"b_trans", 1}, {"epi", 1}, {"out", 1}});
  EXPECT_EQ(p.describe(), "iron_gemm_decode_f32 grid 24x1x1 tg 512x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("ksplit").as_double(), 16);
  EXPECT_EQ(p.steps[0].constexprs.at("bias_len").as_double(), 96);
  // Forced onto the decode kernel at m = 40: three blocks of 16 rows of A.
  p = gemm(d, 40, 96, 5120, {{"b_trans", 1}, {"tile", 3}, {"ksplit", 2}, {"mma", 0}});
  EXPECT_EQ(p.describe(), "iron_gemm_decode_bf16 grid 12x3x1 tg 128x1x1");
  // Not eligible: B row-major, lda not a multiple of 8, SwiGLU: the 32x32 tile and split-K.
  for (const Constexprs& extra : std::vector<Constexprs>{{}, {{"b_trans", 1}, {"lda", 4100}}, {{"b_trans", 1}, {"epi", 5}}}) {
    p = gemm(d, 4, 14336, 4096, extra);
    EXPECT_EQ(p.steps[0].kernel.rfind("iron_gemm_32x32x32_w16x16_s2_", 0), 0u) << p.describe();
    EXPECT_NE(p.reason.find("not a 16-byte aligned [n, k] weight"), std::string::npos) << p.reason;
  }
  EXPECT_NE(error_of([&] { gemm(d, 4, 64, 64, {{"tile", 3}}); }).find("tile 3 (decode rows) needs B column-major"),
            std::string::npos);
  // The lanes' chunks per step: 2 unless the call asks 1, 2 or 4, or m = 1 where each lane has 4
  // steps' worth of chunks at least (K 4096, 2 slices: 8; K 5120 at n = 96, 16 slices: 2); the
  // tiles body gets 1.
  EXPECT_EQ(gemm(d, 4, 14336, 4096, {{"b_trans", 1}}).steps[0].constexprs.at("unroll").as_double(), 2);
  EXPECT_EQ(gemm(d, 2, 14336, 4096, {{"b_trans", 1}}).steps[0].constexprs.at("unroll").as_double(), 2);
  EXPECT_EQ(gemm(d, 1, 14336, 4096, {{"b_trans", 1}}).steps[0].constexprs.at("unroll").as_double(), 4);
  EXPECT_EQ(gemm(d, 1, 14336, 4096, {{"b_trans", 1}, {"unroll", 2}}).steps[0].constexprs.at("unroll").as_double(), 2);
  EXPECT_EQ(gemm(d, 1, 96, 5120, {{"b_trans", 1}}).steps[0].constexprs.at("unroll").as_double(), 2);
  EXPECT_EQ(gemm(d, 1, 14336, 4096, {{"b_trans", 1}, {"ksplit", 16}}).steps[0].constexprs.at("unroll").as_double(), 2);
  EXPECT_EQ(gemm(d, 4, 14336, 4096, {{"b_trans", 1}, {"unroll", 4}}).steps[0].constexprs.at("unroll").as_double(), 4);
  EXPECT_EQ(gemm(d, 4, 14336, 4096, {{"b_trans", 1}, {"unroll", 1}}).steps[0].constexprs.at("unroll").as_double(), 1);
  EXPECT_EQ(gemm(d, 16, 14336, 4096, {{"b_trans", 1}, {"unroll", 4}}).steps[0].constexprs.at("unroll").as_double(), 1);
  EXPECT_NE(error_of([&] { gemm(d, 4, 14336, 4096, {{"b_trans", 1}, {"unroll", 3}}); }).find("unroll = 3: 1, 2 or 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 14336, 4096, {{"b_trans", 1}, {"unroll", 0}}); }).find("unroll = 0: 1, 2 or 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 14336, 4096, {{"b_trans", 1}, {"unroll", 8}}); }).find("unroll = 8 is out of range"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 64, 64, {{"tile", 3}, {"b_trans", 1}, {"b_off", 4}}); }).find("b_off = 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 64, 64, {{"b_trans", 1}, {"ksplit", 3}}); }).find("ksplit = 3: a power of two"),
            std::string::npos);
  // m = 17..64 with B row-major: the 32x32 tile, split-K.
  for (int64_t m : {17, 26, 49, 64}) {
    LaunchPlan p = gemm(d, m, 96, 5120);
    EXPECT_EQ(p.steps[0].kernel, "iron_gemm_32x32x32_w16x16_s2_f32") << m;
    // 3 or 6 blocks: ceil(264 / blocks) splits, at most k / 64 = 80, snapped to equal whole K
    // steps (160 of 32).
    const uint32_t blocks = uint32_t((m + 31) / 32) * 3;
    const uint32_t want = std::min(80u, (264 + blocks - 1) / blocks);
    const uint32_t per = (160 + want - 1) / want;
    EXPECT_EQ(splits_of(p), (160 + per - 1) / per) << m << " " << p.describe();
    EXPECT_EQ(p.steps[0].constexprs.at("kc").as_double(), per * 32.0);
  }
}

// The seeds' split-K shapes [96, 2048] x [2048, 512] and [256, 2048] x [2048, 512], and N = 96,
// K = 5120 at M = 256: the 64x64 tile (fewer 128x128 blocks than compute units), split-K.
TEST(GemmSelector, SmallShapesSplitK) {
  const DeviceInfo d = h200();
  // Two launches by default (the one-launch kernels measured slower on the H200, docs/gemm.md):
  // the f32 partials, then the fixed-order reduce; no zeroed scratch.
  LaunchPlan p = gemm(d, 96, 512, 2048);
  ASSERT_EQ(p.steps.size(), 2u) << p.describe();
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_64x64x32_w32x32_s3_f32") << p.describe();
  EXPECT_EQ(p.steps[1].kernel, "iron_gemm_reduce_bf16");
  EXPECT_EQ(splits_of(p), 16u) << p.describe();  // 16 blocks: ceil(264 / 16) = 17 -> 64 / 4 = 16
  for (const ScratchBuffer& b : p.scratch) EXPECT_FALSE(b.zeroed) << b.name;
  EXPECT_NE(p.reason.find("fixed-order reduce"), std::string::npos) << p.reason;
  EXPECT_EQ(gemm(d, 96, 512, 2048, {{"sk", 0}}).describe(), p.describe());
  p = gemm(d, 256, 512, 2048);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_64x64x32_w32x32_s3_f32");
  EXPECT_EQ(splits_of(p), 8u) << p.describe();  // 32 blocks: ceil(264 / 32) = 9 -> 64 / 8 = 8
  p = gemm(d, 256, 96, 5120);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_64x64x32_w32x32_s3_f32");
  EXPECT_GT(splits_of(p), 1u);
  // sk = 1: one launch; the tile kernel writes the partials and the last threadgroup of each
  // tile reduces them; its counters (one per tile) are zeroed scratch.
  p = gemm(d, 96, 512, 2048, {{"sk", 1}});
  ASSERT_EQ(p.steps.size(), 1u) << p.describe();
  EXPECT_EQ(p.describe(), "iron_gemm_64x64x32_w32x32_sk_s3_bf16 grid 8x2x16 tg 128x1x1");
  EXPECT_EQ(splits_of(p), 16u) << p.describe();
  EXPECT_EQ(p.steps[0].constexprs.at("tiles").as_double(), 16);
  bool counters = false;
  for (const ScratchBuffer& b : p.scratch) {
    if (b.name == "sk_counters") counters = b.dtype == DType::U32 && b.count == 16 && b.zeroed;
    if (b.name == "partials") {
      EXPECT_FALSE(b.zeroed);
    }
  }
  EXPECT_TRUE(counters);
  EXPECT_NE(p.reason.find("one launch: f32 partials, the last threadgroup of each tile sums them in split order"),
            std::string::npos) << p.reason;
  // The 32x32 tile (m <= 64; lavapipe at any size) takes it too, with its tails.
  p = gemm(lavapipe(), 37, 45, 300, {{"splits", 5}, {"out", 1}, {"sk", 1}});
  EXPECT_EQ(p.describe(), "iron_gemm_32x32x32_w16x16_sk_s2_f32 grid 2x2x5 tg 32x1x1");
  // Where it does not apply (SwiGLU, the 128x128 tile, the 64x64 tile's other depths) asking is an error.
  EXPECT_NE(error_of([&] { gemm(d, 96, 512, 2048, {{"epi", 5}, {"sk", 1}}); })
                .find("sk = 1 (one-launch split-K) needs the 64x64 tile at 3 stages or the 32x32 tile and an epilogue "
                      "other than SwiGLU; this call has SwiGLU"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 512, 512, 512, {{"tile", 1}, {"stages", 2}, {"splits", 2}, {"sk", 1}}); })
                .find("this call has the 64x64x32_w32x32 tile at 2 stages"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 96, 512, 2048, {{"sk", 2}}); }).find("sk = 2 is out of range (0 .. 1)"),
            std::string::npos);
}

// Large prefill: the 128x128 tile, one split, the epilogue fused into the one kernel.
TEST(GemmSelector, LargePrefillOneKernel) {
  const DeviceInfo d = h200();
  LaunchPlan p = gemm(d, 2048, 14336, 4096, {{"vendor", 0}});
  EXPECT_EQ(p.describe(), "iron_gemm_128x128x64_w64x32_s3_bf16 grid 112x16x1 tg 256x1x1");
  EXPECT_NE(p.reason.find("vendor = 0: Iron's kernels, not cuBLASLt"), std::string::npos) << p.reason;
  p = gemm(d, 4096, 4096, 4096, {{"epi", 2}});
  EXPECT_EQ(p.describe(), "iron_gemm_128x128x64_w64x32_s3_bf16 grid 32x32x1 tg 256x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("epi").as_double(), 2);  // SiLU: a specialized scalar
  EXPECT_EQ(p.steps[0].constexprs.at("bias_len").as_double(), 4096);
  // SwiGLU fused: one kernel reads b and b2.
  p = gemm(d, 2048, 14336, 4096, {{"epi", 5}, {"b_trans", 1}});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x32_w64x32_swiglu_s3_bf16");
  EXPECT_EQ(p.steps[0].constexprs.at("b_rs").as_double(), 1);
  EXPECT_EQ(p.steps[0].constexprs.at("b_cs").as_double(), 4096);
  // f32 output with a bias: fused too. SwiGLU has 16-bit outputs only: at f32 the two f32
  // partials and the reduce (one split).
  p = gemm(d, 2048, 14336, 4096, {{"epi", 1}, {"out", 1}});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_w64x32_s3_f32");
  p = gemm(d, 2048, 14336, 4096, {{"epi", 5}, {"out", 1}});
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[2].kernel, "iron_gemm_reduce_swiglu_f32");
  EXPECT_EQ(splits_of(p), 1u);
}

// The warpgroup kernel: on CUDA sm_90a the 128x128 tile's products against a [n, k] weight with
// A row-major and no SwiGLU take iron_gemm_128x128x64_wg (same grid, threads and staging memory),
// and the reason says so; B row-major, A column-major, SwiGLU, sm_90 without "a" and `wg` 0 keep
// the mma.sync kernel; `wg` 1 asks for it on the interpreter, and where it cannot run (lavapipe's
// 32x32 tile, Vulkan) the reason says why not.
TEST(GemmSelector, WarpgroupKernelForWeightsOnSm90a) {
  DeviceInfo d = h200();
  d.arch = "sm_90a";
  // (tma 0: the per-thread copies; the tensor-map kernels' routing is the next test's.)
  LaunchPlan p = gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"tma", 0}});
  EXPECT_EQ(p.describe(), "iron_gemm_128x128x64_wg_s3_bf16 grid 112x16x1 tg 256x1x1");
  EXPECT_NE(p.reason.find("the warpgroup kernel (wgmma on sm_90a)"), std::string::npos) << p.reason;
  EXPECT_EQ(p.steps[0].constexprs.at("full").as_double(), 1);
  p = gemm(d, 4096, 4096, 4096, {{"epi", 1}, {"b_trans", 1}, {"out", 1}, {"tma", 0}});  // an epilogue: not the vendor's
  EXPECT_EQ(p.describe(), "iron_gemm_128x128x64_wg_s3_f32 grid 32x32x1 tg 256x1x1");
  // Split K at few blocks: the warpgroup kernel writes the f32 partials.
  p = gemm(d, 256, 256, 8192, {{"vendor", 0}, {"b_trans", 1}, {"tile", 0}, {"tma", 0}});
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_wg_s3_f32");
  for (const Constexprs& extra : {Constexprs{{"vendor", 0}}, Constexprs{{"vendor", 0}, {"b_trans", 1}, {"a_trans", 1}},
                                  Constexprs{{"epi", 5}, {"b_trans", 1}}, Constexprs{{"vendor", 0}, {"b_trans", 1}, {"wg", 0}}}) {
    p = gemm(d, 2048, 14336, 4096, extra);
    EXPECT_EQ(p.steps[0].kernel.find("_wg_"), std::string::npos) << p.describe();
    EXPECT_EQ(p.reason.find("warpgroup"), std::string::npos) << p.reason;
  }
  d.arch = "sm_90";
  p = gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_w64x32_s3_bf16");
  // wg 1: on the interpreter at any layout; not on Vulkan (the mma.sync kernel, said why).
  DeviceInfo interp = h200();
  interp.backend = Backend::Interp;
  p = gemm(interp, 70, 136, 150, {{"wg", 1}, {"tile", 0}, {"a_trans", 1}, {"splits", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_wg_s3_bf16");
  DeviceInfo vk = h200();
  vk.backend = Backend::Vulkan;
  p = gemm(vk, 70, 136, 150, {{"wg", 1}, {"tile", 0}, {"splits", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_w64x32_s3_bf16");
  EXPECT_NE(p.reason.find("wg 1 but not the CUDA or interpreter backend: the mma.sync kernel"), std::string::npos) << p.reason;
  p = gemm(lavapipe(), 70, 136, 150, {{"wg", 1}});
  EXPECT_NE(p.reason.find("wg 1 but not the 128x128 tile"), std::string::npos) << p.reason;
  // Its 4-stage pipeline (wg 1, stages 4): C in bf16 or f32; on Vulkan the mma.sync kernel keeps 3.
  d.arch = "sm_90a";
  p = gemm(d, 4096, 4096, 4096, {{"wg", 1}, {"stages", 4}, {"tile", 0}, {"b_trans", 1}, {"vendor", 0}, {"tma", 0}});
  EXPECT_EQ(p.describe(), "iron_gemm_128x128x64_wg_stages_s4_bf16 grid 32x32x1 tg 256x1x1");
  EXPECT_NE(error_of([&] { gemm(d, 4096, 4096, 4096, {{"wg", 1}, {"stages", 4}, {"tile", 0}}, DType::F16); })
                .find("stages = 4 on the warpgroup kernel: C in f32 or bf16"),
            std::string::npos);
  p = gemm(vk, 70, 136, 150, {{"wg", 1}, {"tile", 0}, {"stages", 4}, {"splits", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_w64x32_s3_bf16");
}

// The tensor-map kernels: by default on sm_90a for the warpgroup kernel's layout, the 128x256 tile
// where its blocks fill the compute units (else the 128x128), two maps over a and b (K innermost,
// 64-element boxes under the 128-byte swizzle); off for an f16 C in one split, an offset, a
// stride off the 16-byte grid; asked for where the layout does not allow it: a located error; on
// a backend without the warpgroup kernel: ignored and said.
TEST(GemmSelector, TensorMapKernelsForWeightsOnSm90a) {
  DeviceInfo d = h200();
  d.arch = "sm_90a";
  LaunchPlan p = gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}});
  EXPECT_EQ(p.describe(), "iron_gemm_128x256x64_wg_ws_s4_bf16 grid 56x16x1 tg 384x1x1");
  EXPECT_NE(p.reason.find("the tensor-map warpgroup kernel, 128x256 at 4 stages (wgmma on sm_90a), warp-specialized"),
            std::string::npos)
      << p.reason;
  ASSERT_EQ(p.steps[0].maps.size(), 2u);
  const LaunchStep::Map& am = p.steps[0].maps[0];
  const LaunchStep::Map& bm = p.steps[0].maps[1];
  EXPECT_EQ(am.param, "a_map");
  EXPECT_EQ(am.buffer, "a");
  EXPECT_EQ(am.dims, (std::vector<uint64_t>{4096, 2048}));
  EXPECT_EQ(am.strides, (std::vector<uint64_t>{8192}));
  EXPECT_EQ(am.box, (std::vector<uint32_t>{64, 128}));
  EXPECT_EQ(bm.param, "b_map");
  EXPECT_EQ(bm.dims, (std::vector<uint64_t>{4096, 14336}));
  EXPECT_EQ(bm.box, (std::vector<uint32_t>{64, 256}));
  EXPECT_EQ(am.swizzle, TensorMap::Swizzle::B128);
  EXPECT_EQ(bm.swizzle, TensorMap::Swizzle::B128);
  p = gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"tma", 2}, {"stages", 4}, {"wg", 1}, {"ws", 0}});
  EXPECT_EQ(p.describe(), "iron_gemm_128x256x64_wg_tma_s4_bf16 grid 56x16x1 tg 256x1x1");
  EXPECT_NE(error_of([&] { gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"tma", 2}, {"stages", 3}, {"wg", 1}}); })
                .find("stages = 3: the tensor-map kernels run 4"),
            std::string::npos);
  // ws 1 (the default with tma 2 on CUDA): the 128x256 tile warp-specialized (384 threads); only
  // with tma 2; on the interpreter asked for by name.
  p = gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"tma", 2}, {"ws", 1}});
  EXPECT_EQ(p.describe(), "iron_gemm_128x256x64_wg_ws_s4_bf16 grid 56x16x1 tg 384x1x1");
  EXPECT_EQ(p.steps[0].maps.size(), 2u);
  EXPECT_NE(p.reason.find("warp-specialized"), std::string::npos) << p.reason;
  EXPECT_NE(error_of([&] { gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"tma", 1}, {"ws", 1}}); })
                .find("ws = 1 needs the 128x256 tensor-map kernel (tma 2); this call has tma 1"),
            std::string::npos);
  {
    DeviceInfo in = h200();
    in.backend = Backend::Interp;
    p = gemm(in, 70, 200, 520, {{"wg", 1}, {"tile", 0}, {"splits", 1}, {"tma", 2}, {"b_trans", 1}});
    EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x256x64_wg_tma_s4_bf16");
    p = gemm(in, 70, 200, 520, {{"wg", 1}, {"tile", 0}, {"splits", 1}, {"tma", 2}, {"ws", 1}, {"b_trans", 1}});
    EXPECT_EQ(p.describe(), "iron_gemm_128x256x64_wg_ws_s4_bf16 grid 1x1x1 tg 384x1x1");
  }
  // Few blocks: the 128x128 tile, and with several splits it writes the f32 partials.
  p = gemm(d, 256, 1024, 8192, {{"vendor", 0}, {"b_trans", 1}, {"tile", 0}});
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_wg_tma_s4_f32");
  EXPECT_EQ(p.steps[0].maps.size(), 2u);
  EXPECT_TRUE(p.steps[1].maps.empty());
  // Not where the layout or C's dtype does not allow it.
  for (const Constexprs& extra : {Constexprs{{"vendor", 0}, {"b_trans", 1}, {"a_off", 8}},
                                  Constexprs{{"vendor", 0}, {"b_trans", 1}, {"ldb", 4100}},
                                  Constexprs{{"vendor", 0}, {"b_trans", 1}, {"out", 2}}}) {
    p = gemm(d, 2048, 14336, 4096, extra);
    EXPECT_EQ(p.steps[0].kernel.find("_tma_"), std::string::npos) << p.describe();
    EXPECT_TRUE(p.steps[0].maps.empty());
  }
  EXPECT_NE(error_of([&] { gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"a_off", 8}, {"tma", 1}}); }).find("this call has an offset"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"lda", 4100}, {"tma", 2}}); })
                .find("lda / ldb off the 8-element grid"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}, {"tma", 3}}); }).find("tma"), std::string::npos);
  // Off sm_90a, or on Vulkan, none (tma asked on Vulkan: ignored, and the reason says so).
  d.arch = "sm_90";
  p = gemm(d, 2048, 14336, 4096, {{"vendor", 0}, {"b_trans", 1}});
  EXPECT_EQ(p.steps[0].kernel.find("_tma_"), std::string::npos);
  DeviceInfo vk = h200();
  vk.backend = Backend::Vulkan;
  p = gemm(vk, 70, 136, 150, {{"wg", 1}, {"tile", 0}, {"splits", 1}, {"tma", 1}, {"b_trans", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_w64x32_s3_bf16");
  EXPECT_NE(p.reason.find("tma 1 but no warpgroup kernel"), std::string::npos) << p.reason;
  p = gemm(vk, 70, 200, 520, {{"wg", 1}, {"tile", 0}, {"splits", 1}, {"tma", 2}, {"ws", 1}, {"b_trans", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_w64x32_s3_bf16");
  EXPECT_NE(p.reason.find("ws 1 but no warpgroup kernel"), std::string::npos) << p.reason;
}

// The warpgroup decode kernel: by default on sm_90a for decode calls (m <= 16) of bf16 against a
// [n, k] weight with C in f32 or bf16 and a box row of W per compute unit at least; two maps (A
// as [m, k] in boxes of 16 rows, W as [n, k] in boxes of 64, K innermost, 64-element rows under
// the 128-byte swizzle), 8 lane groups. tma 0, mma, ksplit or unroll keep the older bodies; an f16
// operand or C, an offset, few box rows or sm_90 take them too; tma 1 asked where it does not
// fit: a located error; on Vulkan: ignored and said.
TEST(GemmSelector, DecodeRowsOnWarpgroupTilesOnSm90a) {
  DeviceInfo d = h200();
  d.arch = "sm_90a";
  // m = 1 keeps the lanes body (measured faster there); tma 1 asks for the warpgroup kernel.
  EXPECT_EQ(gemm(d, 1, 14336, 4096, {{"b_trans", 1}}).steps[0].kernel, "iron_gemm_decode_bf16");
  EXPECT_EQ(gemm(d, 2, 14336, 4096, {{"b_trans", 1}}).steps[0].kernel, "iron_gemm_decode_bf16");
  EXPECT_EQ(gemm(d, 1, 14336, 4096, {{"b_trans", 1}, {"tma", 1}}).describe(),
            "iron_gemm_decode_wg_tma_bf16 grid 224x1x1 tg 256x1x1");
  for (int64_t m : {3, 8, 16}) {
    LaunchPlan p = gemm(d, m, 14336, 4096, {{"b_trans", 1}});
    EXPECT_EQ(p.describe(), "iron_gemm_decode_wg_tma_bf16 grid 224x1x1 tg 256x1x1") << m;
    EXPECT_NE(p.reason.find("decode rows on the warpgroup tiles (64 rows of W per threadgroup, W and A by tensor-map "
                            "copies into 8 stages, wgmma m64n16k16), the none epilogue fused"),
              std::string::npos)
        << p.reason;
    ASSERT_EQ(p.steps[0].maps.size(), 2u);
    const LaunchStep::Map& am = p.steps[0].maps[0];
    const LaunchStep::Map& bm = p.steps[0].maps[1];
    EXPECT_EQ(am.param, "a_map");
    EXPECT_EQ(am.buffer, "a");
    EXPECT_EQ(am.dims, (std::vector<uint64_t>{4096, uint64_t(m)}));
    EXPECT_EQ(am.strides, (std::vector<uint64_t>{8192}));
    EXPECT_EQ(am.box, (std::vector<uint32_t>{64, 16}));
    EXPECT_EQ(bm.param, "b_map");
    EXPECT_EQ(bm.buffer, "b");
    EXPECT_EQ(bm.dims, (std::vector<uint64_t>{4096, 14336}));
    EXPECT_EQ(bm.strides, (std::vector<uint64_t>{8192}));
    EXPECT_EQ(bm.box, (std::vector<uint32_t>{64, 64}));
    EXPECT_EQ(am.swizzle, TensorMap::Swizzle::B128);
    EXPECT_EQ(bm.swizzle, TensorMap::Swizzle::B128);
  }
  // The fused epilogues and an f32 C; strides on the 16-byte grid.
  LaunchPlan p = gemm(d, 4, 14336, 4096, {{"b_trans", 1}, {"epi", 2}, {"out", 1}, {"lda", 4104}, {"ldb", 4112}});
  EXPECT_EQ(p.describe(), "iron_gemm_decode_wg_tma_f32 grid 224x1x1 tg 256x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("epi").as_double(), 2);
  EXPECT_EQ(p.steps[0].maps[0].strides, (std::vector<uint64_t>{8208}));
  EXPECT_EQ(p.steps[0].maps[1].strides, (std::vector<uint64_t>{8224}));
  // The older bodies: asked for, or where the new kernel does not fit or does not pay.
  for (const Constexprs& extra : {Constexprs{{"b_trans", 1}, {"tma", 0}}, Constexprs{{"b_trans", 1}, {"mma", 1}},
                                  Constexprs{{"b_trans", 1}, {"ksplit", 2}}, Constexprs{{"b_trans", 1}, {"unroll", 4}},
                                  Constexprs{{"b_trans", 1}, {"out", 2}}, Constexprs{{"b_trans", 1}, {"a_off", 8}},
                                  Constexprs{{"b_trans", 1}, {"b_off", 8}}}) {
    p = gemm(d, 8, 14336, 4096, extra);
    EXPECT_EQ(p.steps[0].kernel.rfind("iron_gemm_decode_", 0), 0u) << p.describe();
    EXPECT_EQ(p.steps[0].kernel.find("_wg_"), std::string::npos) << p.describe();
    EXPECT_TRUE(p.steps[0].maps.empty());
  }
  EXPECT_EQ(gemm(d, 8, 14336, 4096, {{"b_trans", 1}}, DType::F16).steps[0].kernel, "iron_gemm_decode_f16");
  EXPECT_EQ(gemm(d, 1, 96, 5120, {{"b_trans", 1}}).steps[0].kernel, "iron_gemm_decode_bf16");  // 2 box rows
  EXPECT_EQ(gemm(d, 20, 96, 5120, {{"b_trans", 1}}).steps[0].kernel, "iron_gemm_decode_bf16");  // m > 16
  // tma 1: where the default does not go (few box rows), and errors where it does not fit.
  p = gemm(d, 8, 96, 5120, {{"b_trans", 1}, {"tma", 1}});
  EXPECT_EQ(p.describe(), "iron_gemm_decode_wg_tma_bf16 grid 2x1x1 tg 256x1x1");
  EXPECT_NE(error_of([&] { gemm(d, 8, 14336, 4096, {{"b_trans", 1}, {"tma", 1}, {"a_off", 8}}); })
                .find("tma = 1 (decode rows on the warpgroup tiles) needs m <= 16, A and B in bf16, C in f32 or bf16, "
                      "a_off = b_off = 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 8, 14336, 4096, {{"b_trans", 1}, {"tma", 1}}, DType::F16); }).find("f16 A and B"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 8, 14336, 4096, {{"b_trans", 1}, {"tma", 2}}); }).find("tma = 2 is out of range"),
            std::string::npos);
  d.arch = "sm_90";
  EXPECT_EQ(gemm(d, 8, 14336, 4096, {{"b_trans", 1}}).steps[0].kernel, "iron_gemm_decode_bf16");
  // The interpreter by name, at its lane width; Vulkan: ignored, and the reason says so.
  DeviceInfo in = h200();
  in.backend = Backend::Interp;
  in.lane_width = 8;
  EXPECT_EQ(gemm(in, 8, 14336, 4096, {{"b_trans", 1}}).steps[0].kernel, "iron_gemm_decode_bf16");
  p = gemm(in, 16, 136, 200, {{"b_trans", 1}, {"tma", 1}, {"epi", 4}, {"out", 1}});
  EXPECT_EQ(p.describe(), "iron_gemm_decode_wg_tma_f32 grid 3x1x1 tg 64x1x1");
  p = gemm(lavapipe(), 16, 136, 200, {{"b_trans", 1}, {"tma", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_decode_bf16");
  EXPECT_NE(p.reason.find("tma 1 but no warpgroup kernel on this backend"), std::string::npos) << p.reason;
}

// `full` (the copies' unguarded, provably aligned path) only where every staged row is whole and
// 16-byte aligned: each condition broken once turns it off.
TEST(GemmSelector, FullBlocksOnlyWhereEveryRowIsWholeAndAligned) {
  const DeviceInfo d = h200();
  auto full = [&](uint32_t m, uint32_t n, uint32_t k, Constexprs extra) {
    extra.insert_or_assign("vendor", 0);
    LaunchPlan p = gemm(d, m, n, k, extra);
    return p.steps[0].constexprs.at("full").as_double();
  };
  EXPECT_EQ(full(4096, 4096, 4096, {}), 1);
  EXPECT_EQ(full(2048, 14336, 4096, {{"b_trans", 1}, {"ldb", 4104}, {"a_off", 8}, {"b_off", 16}}), 1);
  EXPECT_EQ(full(4096, 4096, 4096, {{"splits", 4}}), 1);   // kc = 1024 divides k
  EXPECT_EQ(full(4096, 4096, 4096, {{"splits", 3}}), 0);   // kc = 1376: the last split is short
  EXPECT_EQ(full(4000, 4096, 4096, {}), 0);                // m not a multiple of 128
  EXPECT_EQ(full(4096, 4000, 4096, {}), 0);                // n
  EXPECT_EQ(full(4096, 4096, 4040, {}), 0);                // k not a multiple of 32
  EXPECT_EQ(full(4096, 4096, 4096, {{"a_trans", 1}}), 0);  // A column-major: element copies
  EXPECT_EQ(full(4096, 4096, 4096, {{"lda", 4100}}), 0);
  EXPECT_EQ(full(4096, 4096, 4096, {{"ldb", 4100}}), 0);
  EXPECT_EQ(full(4096, 4096, 4096, {{"a_off", 4}}), 0);
  EXPECT_EQ(full(4096, 4096, 4096, {{"b_off", 1}}), 0);
}

// The vendor route: on CUDA, m, n, k >= 512 with no epilogue and C in f32 or T go to cuBLASLt
// (one library step, blas.gemm) when the library is found (it is on the build machines; where it
// is not, the reason says so and the tiles run). Each side of the rule: a dimension below 512,
// an epilogue, a C dtype cuBLASLt lacks, a tile asked for, vendor = 0, IRON_GEMM_VENDOR=0, a
// device that is not CUDA.
TEST(GemmSelector, VendorRouteForLargeDenseProducts) {
  const DeviceInfo d = h200();
  bool have = true;
  try {
    blas::library();
  } catch (const Error&) {
    have = false;
  }
  LaunchPlan p = gemm(d, 2048, 14336, 4096, {{"b_trans", 1}, {"ldb", 4104}, {"a_off", 3}, {"out", 1}});
  if (have) {
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_TRUE(p.steps[0].library);
    EXPECT_EQ(p.describe(), "blas.gemm (library) 2048x14336x4096");
    EXPECT_NE(p.reason.find("cuBLASLt (iron::blas::gemm, "), std::string::npos) << p.reason;
    const Constexprs& c = p.steps[0].constexprs;
    EXPECT_EQ(c.at("b_col").as_double(), 1);
    EXPECT_EQ(c.at("ldb").as_double(), 4104);
    EXPECT_EQ(c.at("a_off").as_double(), 3);
    EXPECT_EQ(c.at("out").as_double(), 1);
    const auto bufs = library_step_buffers(p.steps[0], Instantiation{DType::BF16});
    ASSERT_EQ(bufs.size(), 3u);
    EXPECT_EQ(bufs[2].second, DType::F32);
  } else {
    EXPECT_EQ(p.steps[0].kernel, "iron_gemm_128x128x64_w64x32_s3_f32");
    EXPECT_NE(p.reason.find("is not available"), std::string::npos) << p.reason;
  }
  EXPECT_EQ(gemm(d, 4096, 4096, 4096).steps[0].library, have);
  // The other side of each condition: Iron's kernels.
  for (const LaunchPlan& q : {gemm(d, 256, 512, 2048), gemm(d, 4096, 4096, 511), gemm(d, 4096, 4096, 4096, {{"epi", 1}}),
                              gemm(d, 4096, 4096, 4096, {{"out", 2}}), gemm(d, 4096, 4096, 4096, {{"tile", 1}}),
                              gemm(d, 4096, 4096, 4096, {{"vendor", 0}}), gemm(lavapipe(), 4096, 4096, 4096)})
    for (const LaunchStep& s : q.steps) EXPECT_FALSE(s.library) << q.describe();
  ::setenv("IRON_GEMM_VENDOR", "0", 1);
  p = gemm(d, 4096, 4096, 4096);
  EXPECT_FALSE(p.steps[0].library);
  EXPECT_NE(p.reason.find("IRON_GEMM_VENDOR=0"), std::string::npos) << p.reason;
  ::setenv("IRON_GEMM_VENDOR", "yes", 1);
  EXPECT_NE(error_of([&] { gemm(d, 4096, 4096, 4096); }).find("IRON_GEMM_VENDOR='yes' is not 0 or 1"), std::string::npos);
  ::unsetenv("IRON_GEMM_VENDOR");
  // A library step a plan cannot carry: a kernel sequence refuses it by name.
  if (have) {
    std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
    EXPECT_NE(error_of([&] { plan_launches(*ctx, gemm(d, 4096, 4096, 4096), Instantiation{DType::BF16}, {}); })
                  .find("runs the library routine blas.gemm, not a kernel"),
              std::string::npos);
  }
}

// lavapipe (32 KiB of threadgroup memory, 8 lanes): the 32x32 tile whatever the call asks, 4
// lane groups of 8; SwiGLU through the partials.
TEST(GemmSelector, SmallThreadgroupMemoryTakesTheSmallTile) {
  const DeviceInfo d = lavapipe();
  LaunchPlan p = gemm(d, 2048, 2048, 2048, {{"tile", 0}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_32x32x32_w16x16_s2_bf16") << p.describe();
  EXPECT_EQ(p.steps[0].threadgroup.x, 32u);
  EXPECT_NE(p.reason.find("whatever tile or stages the call asks for"), std::string::npos) << p.reason;
  p = gemm(d, 64, 64, 64, {{"epi", 5}});
  ASSERT_EQ(p.steps.size(), 3u) << p.describe();
  EXPECT_EQ(p.steps[2].kernel, "iron_gemm_reduce_swiglu_bf16");
  p = gemm(d, 64, 64, 64, {{"epi", 3}});
  EXPECT_EQ(p.describe(), "iron_gemm_32x32x32_w16x16_s2_bf16 grid 2x2x1 tg 32x1x1");
}

// The 64x64 tile's pipeline depths, and strides.
TEST(GemmSelector, OverridesAndStrides) {
  const DeviceInfo d = h200();
  for (int s : {2, 3, 4})
    EXPECT_EQ(gemm(d, 512, 512, 512, {{"tile", 1}, {"stages", s}, {"out", 1}, {"splits", 1}}).steps[0].kernel,
              std::string("iron_gemm_64x64x32_w32x32_") + (s == 3 ? "" : "stages_") + "s" + std::to_string(s) + "_f32");
  // A 16-bit output at 2 stages: the f32 kernel, then the reduce rounds.
  LaunchPlan two = gemm(d, 512, 512, 512, {{"tile", 1}, {"stages", 2}, {"splits", 1}});
  ASSERT_EQ(two.steps.size(), 2u);
  EXPECT_EQ(two.steps[1].kernel, "iron_gemm_reduce_bf16");
  LaunchPlan p = gemm(d, 100, 200, 300, {{"a_trans", 1}, {"lda", 104}, {"a_off", 3}, {"ldb", 203}, {"b_off", 5}});
  const Constexprs& c = p.steps[0].constexprs;
  EXPECT_EQ(c.at("a_rs").as_double(), 1);
  EXPECT_EQ(c.at("a_cs").as_double(), 104);
  EXPECT_EQ(c.at("a_len").as_double(), 3 + 299 * 104 + 100);
  EXPECT_EQ(c.at("b_rs").as_double(), 203);
  EXPECT_EQ(c.at("b_cs").as_double(), 1);
  EXPECT_EQ(c.at("b_len").as_double(), 5 + 299 * 203 + 200);
}

TEST(GemmSelector, BadCallsAreLocatedErrors) {
  const DeviceInfo d = h200();
  EXPECT_NE(error_of([&] { gemm(d, 4, 4, 4, {}, DType::F32); }).find("A and B must be f16 or bf16, not f32"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 4, 4, {{"lda", 3}}); }).find("lda = 3 is less than k = 4 (A row-major)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 4, 4, {{"b_trans", 1}, {"ldb", 2}}); })
                .find("ldb = 2 is less than k = 4 (B column-major)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 4, 4, {{"epi", 6}}); }).find("epi = 6 is out of range (0 .. 5)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 0, 4, 4); }).find("each must be at least 1"), std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 512, 512, 512, {{"tile", 0}, {"stages", 2}}); })
                .find("stages can be chosen for the 64x64 tile (tile 1) only"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 4, 4, 64, {{"splits", 3}}); }).find("splits = 3: between 1 and the 2 K steps"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemm(d, 70000, 70000, 16); }).find("must be below 2^32"), std::string::npos);
  // Every message names the family and the selector's file.
  EXPECT_NE(error_of([&] { gemm(d, 4, 4, 4, {{"lda", 3}}); }).find("iron_gemm"), std::string::npos);
}

// No step of any route adds values with an atomic: the one atomic is the one-launch split-K's
// u32 counter of the threadgroups of a tile that are done (which picks who reduces, never what the
// sum is), on the `counters` buffer; every other kernel has none.
TEST(GemmSelector, AtomicsOnlyCountTheTilesThreadgroups) {
  const DeviceInfo d = h200();
  for (int epi = 0; epi < 6; ++epi)
    for (int64_t m : {1, 40, 300})
      for (const LaunchPlan& p :
           {gemm(d, m, 512, 4096, {{"epi", epi}}), gemm(lavapipe(), m, 96, 512, {{"epi", epi}}),
            gemm(d, m, 512, 4096, {{"epi", epi}, {"sk", epi == 5 ? 0 : 1}}),
            gemm(lavapipe(), m, 96, 512, {{"epi", epi}, {"sk", epi == 5 ? 0 : 1}})})
        for (const LaunchStep& s : p.steps) {
          const ir::Kernel& k = kernel_ir(s.kernel);
          const bool sk = s.kernel.find("_sk_") != std::string::npos;
          int atomics = 0;
          ir::walk(k, [&](ir::Id id) {
            const ir::Inst& in = k.insts[id];
            if (!ir::is_atomic(in.op)) return;
            ++atomics;
            EXPECT_TRUE(sk) << s.kernel;
            EXPECT_EQ(in.op, ir::Op::AtomicAdd) << s.kernel;
            EXPECT_EQ(k.params[in.param()].name, "counters") << s.kernel;
          });
          EXPECT_EQ(atomics, sk ? 1 : 0) << s.kernel;
        }
}

// The same split-K (or decode-rows) call 100 times: identical bits each time. On CUDA a
// production-sized decode shape (m 16, n 4096, k 4096, 8 splits or 4 K slices); elsewhere a small
// one the interpreter runs quickly.
// `wg`: the warpgroup decode kernel (tma 1; on CUDA sm_90a only).
void repeat_bit_exact(Backend backend, bool decode, bool two_launch = false, bool wg = false) {
  std::string why;
  if (list_devices(backend, &why).empty()) GTEST_SKIP() << backend_name(backend) << ": " << why;
  std::unique_ptr<Context> ctx = Context::create(backend);
  if (wg && backend == Backend::Cuda && ctx->info().arch != "sm_90a")
    GTEST_SKIP() << "the warpgroup decode kernel needs sm_90a; this device is " << ctx->info().arch;
  const bool big = backend == Backend::Cuda;
  const int64_t m = big ? 16 : 5, n = big ? 4096 : 40, k = big ? 4096 : 256, splits = big ? 8 : 4;
  Call call{DType::BF16, {{"m", m}, {"n", n}, {"k", k}, {"b_trans", 1}, {"epi", 2}}};
  // Decode rows: the K slices' sums meet in threadgroup memory (4 slices here, 2 on the small
  // shape); split-K: the f32 partials and the reduce.
  if (decode && wg) call.args.emplace("tma", 1);
  else if (decode) call.args.emplace("ksplit", big ? 4 : 2);
  else call.args.emplace("splits", splits);
  // Split-K in one launch (sk 1) or two (sk 0, the default).
  if (!decode) call.args.emplace("sk", two_launch ? 0 : 1);
  const LaunchPlan plan = plan_launch("iron_gemm", call, ctx->info());
  if (decode) ASSERT_EQ(plan.steps.front().kernel, wg ? "iron_gemm_decode_wg_tma_bf16" : "iron_gemm_decode_bf16") << plan.describe();
  else ASSERT_EQ(splits_of(plan), uint32_t(splits)) << plan.describe();
  if (!decode) {
    ASSERT_EQ(plan.steps.size(), two_launch ? 2u : 1u) << plan.describe();
  }
  std::vector<uint16_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k)), bias(static_cast<size_t>(n));
  uint32_t x = 12345;
  auto bf16 = [&] {
    x = x * 1664525u + 1013904223u;
    const float f = float(int32_t(x >> 8) % 2001 - 1000) / 1000.0f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t(u >> 16);
  };
  for (std::vector<uint16_t>* v : {&a, &b, &bias})
    for (uint16_t& e : *v) e = bf16();
  DeviceBuffer da = ctx->alloc(DType::BF16, a.size()), db = ctx->alloc(DType::BF16, b.size());
  DeviceBuffer dbias = ctx->alloc(DType::BF16, bias.size()), dc = ctx->alloc(DType::BF16, size_t(m * n));
  ctx->upload(da, a.data(), a.size() * 2);
  ctx->upload(db, b.data(), b.size() * 2);
  ctx->upload(dbias, bias.data(), bias.size() * 2);
  const Bindings bind{{"a", da}, {"b", db}, {"bias", dbias}, {"c", dc}};
  std::vector<uint16_t> first(size_t(m * n)), again(size_t(m * n));
  for (int run = 0; run < 100; ++run) {
    run_plan(*ctx, plan, DType::BF16, bind);
    ctx->synchronize();
    ctx->download(dc, (run == 0 ? first : again).data(), first.size() * 2);
    if (run > 0) {
      ASSERT_EQ(std::memcmp(first.data(), again.data(), first.size() * 2), 0) << "run " << run;
    }
  }
  // And the result is the product: a spot check of element (m - 1, n - 1) against f64.
  auto f = [](uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float r;
    std::memcpy(&r, &u, 4);
    return double(r);
  };
  double s = f(bias[size_t(n - 1)]);
  for (int64_t kk = 0; kk < k; ++kk) s += f(a[size_t((m - 1) * k + kk)]) * f(b[size_t((n - 1) * k + kk)]);
  const double want = s / (1 + std::exp(-s));
  EXPECT_NEAR(f(first.back()), want, 0.02 * std::max(1.0, std::fabs(want)));
}

// On a CUDA device with cuBLASLt: the routed plan (one blas.gemm step, through run_plan and
// time_plan) against the same call on Iron's kernels (vendor = 0), B a [n, k] weight at an
// offset, C in f32: the two f32 accumulations agree to 1e-3 of the row's scale; time_plan
// returns the samples asked for.
TEST(GemmRoute, VendorPlanMatchesIronKernelsCuda) {
  std::string why;
  if (list_devices(Backend::Cuda, &why).empty()) GTEST_SKIP() << "cuda: " << why;
  std::unique_ptr<Context> ctx = Context::create(Backend::Cuda);
  if (!blas::available(*ctx, &why)) GTEST_SKIP() << why;
  const int64_t m = 512, n = 640, k = 768, b_off = 8;
  Constexprs args{{"m", m}, {"n", n}, {"k", k}, {"b_trans", 1}, {"b_off", b_off}, {"out", 1}};
  const LaunchPlan routed = plan_launch("iron_gemm", Call{DType::BF16, args}, ctx->info());
  ASSERT_TRUE(routed.has_library_step()) << routed.describe() << ": " << routed.reason;
  args["vendor"] = 0;
  const LaunchPlan own = plan_launch("iron_gemm", Call{DType::BF16, args}, ctx->info());
  ASSERT_FALSE(own.has_library_step()) << own.describe();
  std::vector<uint16_t> a(size_t(m * k)), b(size_t(b_off + n * k));
  uint32_t x = 777;
  for (std::vector<uint16_t>* v : {&a, &b})
    for (uint16_t& e : *v) {
      x = x * 1664525u + 1013904223u;
      const float f = float(int32_t(x >> 8) % 2001 - 1000) / 1000.0f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      e = uint16_t(u >> 16);
    }
  DeviceBuffer da = ctx->alloc(DType::BF16, a.size()), db = ctx->alloc(DType::BF16, b.size());
  DeviceBuffer c1 = ctx->alloc(DType::F32, size_t(m * n)), c2 = ctx->alloc(DType::F32, size_t(m * n));
  ctx->upload(da, a.data(), a.size() * 2);
  ctx->upload(db, b.data(), b.size() * 2);
  run_plan(*ctx, routed, DType::BF16, {{"a", da}, {"b", db}, {"c", c1}});
  run_plan(*ctx, own, DType::BF16, {{"a", da}, {"b", db}, {"c", c2}});
  ctx->synchronize();
  std::vector<float> r1(size_t(m * n)), r2(size_t(m * n));
  ctx->download(c1, r1.data(), r1.size() * 4);
  ctx->download(c2, r2.data(), r2.size() * 4);
  double worst = 0;
  for (size_t i = 0; i < r1.size(); ++i) worst = std::max(worst, std::fabs(double(r1[i]) - r2[i]) / (1.0 + std::fabs(r2[i])));
  EXPECT_LT(worst, 1e-3);
  TimingOptions o;
  o.warmup = 1;
  o.samples = 5;
  const Timing t = time_plan(*ctx, routed, DType::BF16, {{"a", da}, {"b", db}, {"c", c1}}, o);
  EXPECT_EQ(t.samples_us.size(), 5u);
  EXPECT_NE(t.compile_report.find("cuBLASLt algo"), std::string::npos) << t.compile_report;
}

TEST(GemmDeterminism, SplitKBitExactOver100RunsInterp) { repeat_bit_exact(Backend::Interp, false, true); }
TEST(GemmDeterminism, SplitKBitExactOver100RunsVulkan) { repeat_bit_exact(Backend::Vulkan, false, true); }
TEST(GemmDeterminism, SplitKBitExactOver100RunsCuda) { repeat_bit_exact(Backend::Cuda, false, true); }
TEST(GemmDeterminism, SplitKOneLaunchBitExactOver100RunsInterp) { repeat_bit_exact(Backend::Interp, false, false); }
TEST(GemmDeterminism, SplitKOneLaunchBitExactOver100RunsCuda) { repeat_bit_exact(Backend::Cuda, false, false); }
TEST(GemmDeterminism, DecodeRowsBitExactOver100RunsInterp) { repeat_bit_exact(Backend::Interp, true); }
TEST(GemmDeterminism, DecodeRowsBitExactOver100RunsCuda) { repeat_bit_exact(Backend::Cuda, true); }
TEST(GemmDeterminism, DecodeRowsWarpgroupBitExactOver100RunsCuda) { repeat_bit_exact(Backend::Cuda, true, false, true); }

// --- One-launch split-K -----------------------------------------------------------------------
// A split-K call with full-avalanche bf16 inputs (random signs, exponents across 2^-12 .. 2^12, so
// f32 sums in another order round differently) and C in f32: the partials' sums show bit for bit.
struct SkCall {
  std::unique_ptr<Context> ctx;
  LaunchPlan one, two;  // sk 1 and sk 0
  DeviceBuffer a, b, bias, c;
  size_t mn = 0;
};
SkCall sk_call(Backend backend, int64_t m, int64_t n, int64_t k, int64_t splits, int64_t tile) {
  SkCall s;
  s.ctx = Context::create(backend);
  Constexprs args{{"m", m}, {"n", n}, {"k", k}, {"b_trans", 1}, {"epi", 1}, {"out", 1}, {"splits", splits}, {"tile", tile}};
  args["sk"] = 1;
  s.one = plan_launch("iron_gemm", Call{DType::BF16, args}, s.ctx->info());
  args["sk"] = 0;
  s.two = plan_launch("iron_gemm", Call{DType::BF16, args}, s.ctx->info());
  std::vector<uint16_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k)), bias(static_cast<size_t>(n));
  uint32_t x = 4242;
  for (std::vector<uint16_t>* v : {&a, &b, &bias})
    for (uint16_t& e : *v) {
      x = x * 1664525u + 1013904223u;
      // sign, an exponent 115 .. 139 (2^-12 .. 2^12) and 7 random mantissa bits
      e = uint16_t(((x >> 31) << 15) | ((115u + (x >> 8) % 25u) << 7) | ((x >> 16) & 0x7fu));
    }
  s.mn = size_t(m * n);
  s.a = s.ctx->alloc(DType::BF16, a.size()), s.b = s.ctx->alloc(DType::BF16, b.size());
  // The bias holds C's dtype (f32): the same bf16 values widened.
  std::vector<uint32_t> bias32(bias.size());
  for (size_t j = 0; j < bias.size(); ++j) bias32[j] = uint32_t(bias[j]) << 16;
  s.bias = s.ctx->alloc(DType::F32, bias.size()), s.c = s.ctx->alloc(DType::F32, s.mn);
  s.ctx->upload(s.a, a.data(), a.size() * 2);
  s.ctx->upload(s.b, b.data(), b.size() * 2);
  s.ctx->upload(s.bias, bias32.data(), bias32.size() * 4);
  return s;
}
// Runs `plan` `runs` times on one set of launches (its scratch allocated, and the counters
// zeroed, once), with `replace` in place of the kernel of its name; C is set to a NaN pattern
// before each run. Returns C's bits after each run.
std::vector<std::vector<uint32_t>> sk_runs(SkCall& s, const LaunchPlan& plan, int runs,
                                           const ir::Kernel* replace = nullptr) {
  const std::vector<SequenceLaunch> seq =
      plan_launches(*s.ctx, plan, DType::BF16, {{"a", s.a}, {"b", s.b}, {"bias", s.bias}, {"c", s.c}});
  std::vector<std::vector<uint32_t>> out;
  const std::vector<uint32_t> poison(s.mn, 0x7fc0dead);
  for (int r = 0; r < runs; ++r) {
    s.ctx->upload(s.c, poison.data(), s.mn * 4);
    for (const SequenceLaunch& l : seq)
      s.ctx->dispatch_with_grid(replace && replace->name == l.kernel->name ? *replace : *l.kernel, l.dtype, l.buffers,
                                l.constexprs, l.grid, l.threadgroup);
    s.ctx->synchronize();
    out.emplace_back(s.mn);
    s.ctx->download(s.c, out.back().data(), s.mn * 4);
  }
  return out;
}

// One launch gives the two-launch path's bits (the same sums in the same order), run after run on
// one allocation of its counters (each launch leaves them zero). Interpreter and lavapipe: 37 x 45
// x 320 in 5 splits on the 32x32 tile (tails in M and N); CUDA: [96, 2048] x W [512, 2048] in 16
// splits on the 64x64 tile, the small shape of issue 12.
void sk_matches_two_launch(Backend backend) {
  std::string why;
  if (list_devices(backend, &why).empty()) GTEST_SKIP() << backend_name(backend) << ": " << why;
  const bool big = backend == Backend::Cuda;
  SkCall s = big ? sk_call(backend, 96, 512, 2048, 16, 1) : sk_call(backend, 37, 45, 320, 5, 2);
  ASSERT_EQ(s.one.steps.size(), 1u) << s.one.describe();
  ASSERT_NE(s.one.steps[0].kernel.find("_sk_"), std::string::npos) << s.one.describe();
  ASSERT_EQ(s.two.steps.size(), 2u) << s.two.describe();
  const std::vector<uint32_t> want = sk_runs(s, s.two, 1)[0];
  const std::vector<std::vector<uint32_t>> got = sk_runs(s, s.one, 3);
  for (size_t r = 0; r < got.size(); ++r) {
    size_t diff = 0;
    for (size_t i = 0; i < s.mn; ++i) diff += got[r][i] != want[i];
    EXPECT_EQ(diff, 0u) << "run " << r << ": elements whose bits differ from the two-launch path's";
  }
  size_t nan = 0;
  for (uint32_t v : want) nan += (v & 0x7f800000u) == 0x7f800000u;
  EXPECT_EQ(nan, 0u);
}
TEST(GemmSplitK, OneLaunchGivesTheTwoLaunchBitsInterp) { sk_matches_two_launch(Backend::Interp); }
TEST(GemmSplitK, OneLaunchGivesTheTwoLaunchBitsVulkan) { sk_matches_two_launch(Backend::Vulkan); }
TEST(GemmSplitK, OneLaunchGivesTheTwoLaunchBitsCuda) { sk_matches_two_launch(Backend::Cuda); }

// Known-bad variants of the one-launch kernel on the interpreter (which runs the threadgroups in
// order, so split 4 of each tile counts last): each changes the bits of C against the two-launch
// path's on the avalanche call above, within 2 runs, without an error. (A reduction by the first threadgroup to
// arrive is no bug the interpreter can show: in its order every threadgroup would then reduce, the
// last one with every partial written.)
TEST(GemmMutation, OneLaunchSplitKKnownBadVariantsAreCaught) {
  SkCall s = sk_call(Backend::Interp, 37, 45, 320, 5, 2);
  const std::vector<uint32_t> want = sk_runs(s, s.two, 1)[0];
  const ir::Kernel& k = kernel_ir(s.one.steps[0].kernel);
  const int partials = k.find_param("partials"), counters = k.find_param("counters");
  ASSERT_GE(partials, 0);
  ASSERT_GE(counters, 0);
  // The reduction's loop over the splits: the For whose body loads `partials`.
  ir::Id loop = ir::kNone, last_test = ir::kNone, split_id = ir::kNone;
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if (in.op == ir::Op::For)
      for (ir::Id b : k.blocks[in.blocks[0]].insts)
        if (k.insts[b].op == ir::Op::Load && k.insts[b].param() == uint32_t(partials)) loop = id;
    if (in.op == ir::Op::Eq && k.insts[in.operands[0]].op == ir::Op::TgLoad && k.insts[in.operands[1]].op == ir::Op::Sub)
      last_test = id;
    if (in.op == ir::Op::ProgramId && in.attr(ir::Attr::Axis) == 2) split_id = id;
  });
  ASSERT_NE(loop, ir::kNone);
  ASSERT_NE(last_test, ir::kNone);
  ASSERT_NE(split_id, ir::kNone);
  struct Bad {
    std::string what;
    ir::Kernel k;
  };
  std::vector<Bad> bad;
  // 1. The counter is not reset: the second launch finds splits .. 2 splits - 1, and nobody reduces.
  {
    Bad b{"the counter is not reset", k};
    for (ir::Block& blk : b.k.blocks)
      blk.insts.erase(std::remove_if(blk.insts.begin(), blk.insts.end(),
                                     [&](ir::Id id) {
                                       return b.k.insts[id].op == ir::Op::Store && b.k.insts[id].param() == uint32_t(counters);
                                     }),
                      blk.insts.end());
    bad.push_back(std::move(b));
  }
  // 2. The last threadgroup sums only its own partial (the loop starts at its split).
  {
    Bad b{"only the own partial is summed", k};
    b.k.insts[loop].operands[0] = split_id;
    bad.push_back(std::move(b));
  }
  // 3. The splits summed in reverse order: split splits - 1 - s at step s.
  {
    Bad b{"the splits summed in reverse order", k};
    const ir::Id s_minus_1 = b.k.insts[last_test].operands[1];
    ir::Inst rev = b.k.insts[s_minus_1];
    rev.operands = {s_minus_1, loop};
    const ir::Id body = b.k.insts[loop].blocks[0];
    for (ir::Id id : b.k.blocks[body].insts)
      for (ir::Id& o : b.k.insts[id].operands)
        if (o == loop) o = ir::Id(b.k.insts.size());
    const ir::Id r = b.k.add_inst(rev);
    b.k.blocks[body].insts.insert(b.k.blocks[body].insts.begin(), r);
    bad.push_back(std::move(b));
  }
  ASSERT_EQ(bad.size(), 3u);
  for (const Bad& b : bad) {
    std::string err;
    size_t diff = 0;
    try {
      for (const std::vector<uint32_t>& got : sk_runs(s, s.one, 2, &b.k))
        for (size_t i = 0; i < s.mn; ++i) diff += got[i] != want[i];
    } catch (const Error& e) {
      err = e.what();
    }
    // Each runs (a valid kernel) and gives other bits.
    EXPECT_EQ(err, "") << b.what;
    EXPECT_GT(diff, 0u) << b.what << ": not caught";
  }
  // The kernel itself gives the two-launch bits on the same call, two runs.
  for (const std::vector<uint32_t>& got : sk_runs(s, s.one, 2)) EXPECT_EQ(got, want);
}

// Known-bad variants of the decode rows kernel, against its f32-output cases on the interpreter
// (both bodies, one and several K slices, several rounds of tile rows): every barrier dropped (the
// lanes' combine, the W ring's pipeline, which also orders A^T's staging and the previous round's
// combine, the tile sums before the combine) and every async_wait dropped must fail a case.
TEST(GemmMutation, DecodeRowsKnownBadVariantsAreCaught) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_gemm_decode_f32");
  std::vector<const TestDecl*> cases;
  for (const TestDecl* t : registered_tests())
    for (const char* name : {"decode_rows_m20_n9_k256_tile3_residual", "decode_rows_m16_n33_k200_int",
                             "decode_tiles_m16_n48_k160_int", "decode_tiles_m10_n80_k512_ksplit8_rounds"})
      if (std::string(t->kernel) == "iron_gemm" && std::string(t->name) == name) cases.push_back(t);
  ASSERT_EQ(cases.size(), 4u);
  std::vector<mutate::Mutant> bad;
  for (mutate::Mutant& m : mutate::enumerate(k, 32, 1024))
    if (m.kind == "dropped_barrier") bad.push_back(std::move(m));
  EXPECT_EQ(bad.size(), 3u);
  {
    mutate::Mutant m{"dropped_async_wait", "", "every async_wait removed", k, ""};
    for (ir::Block& b : m.kernel.blocks)
      b.insts.erase(std::remove_if(b.insts.begin(), b.insts.end(),
                                   [&](ir::Id id) { return m.kernel.insts[id].op == ir::Op::AsyncWait; }),
                    b.insts.end());
    bad.push_back(std::move(m));
  }
  for (const mutate::Mutant& m : bad) {
    const mutate::Outcome o = mutate::run_mutant(*ctx, k, m, cases);
    EXPECT_EQ(o.status, mutate::Outcome::Status::Killed) << m.kind << " " << m.site << " " << m.detail << ": " << o.by;
  }
}

// --- Asynchronous copies on the interpreter (docs/semantics.md "Asynchronous copies") -------
// 64 threads; thread l owns slots 4l .. 4l + 3 and 256 + 4l .. of a threadgroup array, set to -1
// before a barrier; `body` copies, commits, waits and reads. valid[l] = l % 5 (0 to 4 of the 4
// elements come from x, the rest are 0); x[j] = j + 0.5.
std::string run_async(const std::string& body, std::vector<float>& out) {
  std::string text =
      "kernel k mode=Reduction {\n"
      "  param x: in buf<f32> extent=256\n"
      "  param r: out buf<f32> extent=64\n"
      "  param valid: in buf<u32> extent=64\n"
      "  %a = tg_alloc<s, 512> : f32\n"
      "  %l = local_id<0> : u32\n"
      "  %c0 = const<0> : u32\n  %c1 = const<1> : u32\n  %c4 = const<4> : u32\n  %c256 = const<256> : u32\n"
      "  %i = mul %l, %c4 : u32\n  %j = add %i, %c256 : u32\n"
      "  %p = xor %l, %c1 : u32\n  %pi = mul %p, %c4 : u32\n  %last = add %pi, %c1 : u32\n"
      "  %v = load<valid> %l : u32\n"
      "  %m1 = const<-1.0> : f32\n";
  for (int e = 0; e < 4; ++e)
    text += "  %o" + std::to_string(e) + " = const<" + std::to_string(e) + "> : u32\n  %s" + std::to_string(e) +
            " = add %i, %o" + std::to_string(e) + " : u32\n  tg_store %a, %s" + std::to_string(e) + ", %m1\n  %t" +
            std::to_string(e) + " = add %j, %o" + std::to_string(e) + " : u32\n  tg_store %a, %t" + std::to_string(e) +
            ", %m1\n";
  text += "  barrier\n" + body + "}\n";
  try {
    ir::Kernel k = ir::parse(text);
    ir::Diagnostics d;
    if (!ir::verify(k, d)) return "verify: " + d.render(k);
    std::vector<float> x(256);
    for (size_t q = 0; q < x.size(); ++q) x[q] = float(q) + 0.5f;
    std::vector<uint32_t> valid(64);
    for (uint32_t q = 0; q < 64; ++q) valid[q] = q % 5;
    out.assign(64, 0.0f);
    std::vector<interp::BufferArg> args{{x.data(), x.size() * 4}, {out.data(), out.size() * 4}, {valid.data(), 256}};
    interp::Options o;
    o.lane_width = 32;
    interp::run(k, DType::F32, args, {}, {1, 1, 1}, {64, 1, 1}, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(AsyncCopy, DataLandsAtTheWaitAndTailsAreZero) {
  std::vector<float> out;
  const std::string copy = "  async_copy<x, 4> %a, %i, %i, %v\n  async_commit\n";
  const std::string read_partner = "  %got = tg_load %a, %last : f32\n  store<r> %l, %got\n";
  // Wait, barrier, then the partner's second element: x[4p + 1] when 2 or more are valid, else 0.
  EXPECT_EQ(run_async(copy + "  async_wait<0>\n  barrier\n" + read_partner, out), "");
  for (uint32_t l = 0; l < 64; ++l) {
    const uint32_t p = l ^ 1u;
    EXPECT_EQ(out[l], p % 5 >= 2 ? float(4 * p + 1) + 0.5f : 0.0f) << l;
  }
  // The thread's own slot before its wait: still -1, the copy has not landed.
  EXPECT_EQ(run_async(copy + "  %early = tg_load %a, %i : f32\n  store<r> %l, %early\n  async_wait<0>\n", out), "");
  for (uint32_t l = 0; l < 64; ++l) EXPECT_EQ(out[l], -1.0f) << l;
  // The wait after the barrier: the partner's elements land after it, a race.
  std::string e = run_async(copy + "  barrier\n  async_wait<0>\n" + read_partner, out);
  EXPECT_TRUE(has(e, "threadgroup memory race (read after write) on 's'")) << e;
  // No wait: an error naming the copy.
  e = run_async(copy + "  barrier\n", out);
  EXPECT_TRUE(has(e, "async_copy whose group no async_wait completed before the kernel ended")) << e;
  // Two groups, async_wait<1>: the older has landed, the newer not.
  EXPECT_EQ(run_async(copy + "  async_copy<x, 4> %a, %j, %i, %c4\n  async_commit\n  async_wait<1>\n"
                             "  %x1 = tg_load %a, %i : f32\n  %x2 = tg_load %a, %j : f32\n  %sum = add %x1, %x2 : f32\n"
                             "  store<r> %l, %sum\n  async_wait<0>\n",
                      out),
            "");
  for (uint32_t l = 0; l < 64; ++l) EXPECT_EQ(out[l], (l % 5 >= 1 ? float(4 * l) + 0.5f : 0.0f) - 1.0f) << l;
  // Bad copies: located verifier errors.
  e = run_async("  async_copy<x, 3> %a, %i, %i, %v\n  async_commit\n  async_wait<0>\n", out);
  EXPECT_TRUE(has(e, "an asynchronous copy moves 4, 8 or 16")) << e;
  e = run_async("  %ci = const<1> : i32\n  async_copy<x, 4> %a, %i, %ci, %v\n  async_commit\n  async_wait<0>\n", out);
  EXPECT_TRUE(has(e, "the source index must be u32")) << e;
  // A destination past the array's end: an error naming the thread.
  e = run_async("  %c510 = const<510> : u32\n  async_copy<x, 4> %a, %c510, %i, %v\n  async_commit\n  async_wait<0>\n", out);
  EXPECT_TRUE(has(e, "async_copy of 4 elements into threadgroup array 's' at index 510 is out of range")) << e;
}

// Threadgroup aliases (docs/semantics.md "Threadgroup aliases"): 32 threads write st (f16) and
// read it back, then write an f32 view of its bytes from byte 16 and read their partner's slot.
std::string alias_kernel(const std::string& between_views, const std::string& tail, const std::string& view = "sc, 32, alias=st, offset=16") {
  return "kernel alias mode=Reduction {\n"
         "  param r: out buf<f32> extent=32\n"
         "  %a = tg_alloc<st, 128, align=16> : f16\n"
         "  %v = tg_alloc<" + view + "> : f32\n"
         "  %l = local_id<0> : u32\n  %c1 = const<1> : u32\n  %two = const<2.0> : f32\n"
         "  %h = cast %l : f16\n  tg_store %a, %l, %h\n  barrier\n"
         "  %y = tg_load %a, %l : f16\n  %y2 = cast %y : f32\n  %d = mul %y2, %two : f32\n" +
         between_views +
         "  tg_store %v, %l, %d\n  barrier\n"
         "  %p = xor %l, %c1 : u32\n  %z = tg_load %v, %p : f32\n  store<r> %l, %z\n" + tail + "}\n";
}
std::string run_alias(const std::string& text, std::vector<float>& out) {
  try {
    ir::Kernel k = ir::parse(text);
    ir::Diagnostics d;
    if (!ir::verify(k, d)) return "verify: " + d.render(k);
    out.assign(32, -1.0f);
    std::vector<interp::BufferArg> args{{out.data(), out.size() * 4}};
    interp::Options o;
    o.lane_width = 32;
    interp::run(k, DType::F32, args, {}, {1, 1, 1}, {32, 1, 1}, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TgAlias, ViewsTakeTurnsAcrossABarrierAndLowerIntoTheBasesBytes) {
  std::vector<float> out;
  const std::string good = alias_kernel("  barrier\n", "");
  ASSERT_EQ(run_alias(good, out), "");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(out[l], float(2 * (l ^ 1u))) << l;
  // The text form round-trips.
  ir::Kernel k = ir::parse(good);
  EXPECT_TRUE(has(ir::print(k), "tg_alloc<sc, 32, alias=st, offset=16> : f32")) << ir::print(k);
  EXPECT_EQ(ir::print(ir::parse(ir::print(k))), ir::print(k));
  // No barrier between st's reads and sc's writes: the verifier names both accesses.
  std::string e = run_alias(alias_kernel("", ""), out);
  EXPECT_TRUE(has(e, "writes threadgroup memory through 'sc' after a read of it through 'st'")) << e;
  // A loop's next iteration counts: st written at the top of the body after sc's read below.
  // (the body is straight-line here; the rule also holds across iterations, see semantics.md)
  // Reading bytes through st that sc wrote (a barrier between, so the verifier lets it pass):
  // the interpreter's error.
  e = run_alias(alias_kernel("  barrier\n", "  barrier\n  %c8 = const<8> : u32\n  %w = tg_load %a, %c8 : f16\n"
                                            "  %w2 = cast %w : f32\n  store<r> %l, %w2\n"), out);
  EXPECT_TRUE(has(e, "reads byte 16 of 'st' through 'st', last written through 'sc'")) << e;
  // Bad views: misaligned, past the base, of an unknown allocation.
  e = run_alias(alias_kernel("  barrier\n", "", "sc, 32, alias=st, offset=8"), out);
  EXPECT_TRUE(has(e, "threadgroup alias 'sc' starts at byte 8 of 'st', not a multiple of 16")) << e;
  e = run_alias(alias_kernel("  barrier\n", "", "sc, 64, alias=st, offset=16"), out);
  EXPECT_TRUE(has(e, "threadgroup alias 'sc' covers bytes 16 to 272 of 'st', which has 256 bytes")) << e;
  e = run_alias(alias_kernel("  barrier\n", "", "sc, 32, alias=nope, offset=16"), out);
  EXPECT_TRUE(has(e, "views 'nope', which is no threadgroup allocation of this kernel")) << e;
  // CUDA points into st's bytes (NVRTC compiles it); GLSL gives sc an array of its own.
  codegen::Emitted cu = codegen::emit(k, DType::F32, codegen::Target::Cuda, {});
  ASSERT_TRUE(cu.ok()) << cu.diags.render(k);
  EXPECT_TRUE(has(cu.source, "float* const tg_sc = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(tg_st) + 16u);"))
      << cu.source;
  rt::NvrtcResult r = rt::nvrtc_compile(cu.source, "alias", "sm_90");
  EXPECT_TRUE(r.ok) << r.log.substr(0, 2000);
  codegen::Emitted gl = codegen::emit(k, DType::F32, codegen::Target::Glsl, {});
  ASSERT_TRUE(gl.ok()) << gl.diags.render(k);
  EXPECT_TRUE(has(gl.source, "shared float tg_sc[32u];")) << gl.source;
}

// The GEMM's epilogue scratch is an alias of B's staging memory: no memory of its own.
TEST(TgAlias, TheGemmEpilogueReusesTheStagingMemory) {
  const ir::Kernel& k = kernel_ir("iron_gemm_128x128x64_w64x32_s3_bf16");
  size_t aliases = 0;
  for (ir::Id id : ir::threadgroup_aliases(k)) {
    ++aliases;
    EXPECT_EQ(k.strings[size_t(k.insts[ir::tg_alias_base(k, k.insts[id])].attr(ir::Attr::Name))], "bs");
  }
  EXPECT_EQ(aliases, 1u);
  // 3 stages of A (128 x 64) and B (64 x 128) in bf16: 96 KiB, the scratch inside it.
  EXPECT_EQ(ir::threadgroup_bytes(k, DType::BF16), 3u * (128 * 64 + 64 * 128) * 2);
}

// The CUDA lowering: cp.async (16 bytes, .cg) with its run-time alignment check and the byte-copy
// fallback, commit and wait_group, for the GEMM's tiles; every MMA strategy compiles through
// NVRTC for sm_80 and sm_90 (and below sm_80, where the copies are plain).
TEST(GemmCodegen, CudaCompilesThroughNvrtcDownEveryMmaPath) {
  struct Case {
    const char* kernel;
    codegen::CudaMma m;
    const char* arch;
  } cases[] = {{"iron_gemm_64x64x32_w32x32_s3_bf16", codegen::CudaMma::MmaSync, "sm_90"},
               {"iron_gemm_128x128x64_w64x32_s3_f16", codegen::CudaMma::MmaSync, "sm_80"},
               {"iron_gemm_32x32x32_w16x16_s2_f32", codegen::CudaMma::Wmma, "sm_80"},
               {"iron_gemm_32x32x32_w16x16_s2_f32", codegen::CudaMma::Software, "sm_90"},
               {"iron_gemm_32x32x32_w16x16_s2_f16", codegen::CudaMma::Wmma, "sm_75"},
               {"iron_gemm_decode_bf16", codegen::CudaMma::MmaSync, "sm_90"}};
  for (const Case& c : cases) {
    ir::Kernel k = passes::optimize(kernel_ir(c.kernel));
    codegen::EmitOptions o;
    o.cuda_mma = c.m;
    const DType t = c.m == codegen::CudaMma::Wmma && std::string(c.arch) == "sm_75" ? DType::F16 : DType::BF16;
    codegen::Emitted e = codegen::emit(k, t, codegen::Target::Cuda, o);
    ASSERT_TRUE(e.ok()) << e.diags.render(k);
    if (has(c.kernel, "decode")) {
      // The decode kernel's lanes body reads W and A in 16-byte loads; its tiles body stages W with
      // 16-byte cp.async copies.
      EXPECT_TRUE(has(e.source, "*reinterpret_cast<const uint4*>(p_b + ")) << c.kernel;
      EXPECT_TRUE(has(e.source, "cp.async.cg.shared.global [%0], [%1], 16, %2;")) << c.kernel;
    } else {
      EXPECT_TRUE(has(e.source, "cp.async.cg.shared.global [%0], [%1], 16, %2;")) << c.kernel;
      EXPECT_TRUE(has(e.source, "cp.async.commit_group;")) << c.kernel;
      EXPECT_TRUE(has(e.source, "cp.async.wait_group")) << c.kernel;
      EXPECT_TRUE(has(e.source, "& 15ull) == 0ull) {")) << c.kernel;
    }
    rt::NvrtcResult r = rt::nvrtc_compile(e.source, c.kernel, c.arch);
    if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;  // no NVRTC on this machine
    EXPECT_TRUE(r.ok) << c.kernel << " " << codegen::cuda_mma_name(c.m) << " " << c.arch << ":\n" << r.log.substr(0, 3000);
  }
}

// Known-bad variants of the 32x32 tile (the one the interpreter's small cases reach) must fail the
// family's cases there: the K loop's barrier dropped,
// every async_wait dropped, the staged rows' stride off by one where the copies write them or
// the fragments read them (the padded layout the ldmatrix rule and the bank spread rely on),
// and the stage a step is multiplied from off by one. The whole catalogue is not run on the
// GEMM kernels in CI (docs/gemm.md "Mutation testing").
TEST(GemmMutation, KnownBadVariantsAreCaught) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_gemm_32x32x32_w16x16_s2_f32");
  std::vector<const TestDecl*> cases;
  for (const TestDecl* t : registered_tests())
    // Every staged layout: A and B row-major, both column-major, A column-major with B
    // row-major, and A row-major with B column-major (a_col / b_col); and whole aligned blocks
    // (`full`, the copies' unguarded path) with B in either layout.
    for (const char* name : {"int_m37_n45_k170", "avalanche_m33_n40_k150_strided", "epi_gelu_fused", "epi_residual_fused",
                             "epi_silu_fused", "full_small_m32_n64_k192_split3_strided",
                             "full_small_m32_n32_k128_weight_split2"})
      if (std::string(t->kernel) == "iron_gemm" && std::string(t->name) == name) cases.push_back(t);
  ASSERT_EQ(cases.size(), 7u);
  // The element-by-element staging path (an operand with neither stride 1) is one no gemm_for
  // call takes: its stores' lines are left out of the stride mutants below.
  std::set<std::string> element_path;
  for (const ir::Inst& in : k.insts)
    if (in.op == ir::Op::TgStore) element_path.insert(k.where(in.loc));
  std::vector<mutate::Mutant> bad;
  for (mutate::Mutant& m : mutate::enumerate(k, 32, 1024)) {
    // The K loop's barrier (the first): the epilogue's two only order each lane group's reads of
    // its own scratch slot, which the semantics already orders (below).
    const bool barrier = m.kind == "dropped_barrier" && m.detail == "barrier #1: removed";
    // The staged rows' length (32 elements: BK for A and B's row width BN) off by one where the
    // copies write or the fragments read.
    const bool row_stride = m.kind == "stride" && has(m.detail, "constant 32 -> 33") && !element_path.count(m.site);
    if (barrier || row_stride) bad.push_back(std::move(m));
  }
  // The fragment loads read through another swizzle than the copies wrote through: the shift
  // one larger (the wrong row bits choose the chunk), the XOR taken from one bit fewer, and no
  // swizzle at all (docs/gemm.md "Threadgroup layout").
  auto reswizzle = [&](const char* what, const std::function<int64_t(int64_t)>& code) {
    mutate::Mutant m{"swizzle", "", what, k, ""};
    size_t loads = 0;
    for (ir::Inst& in : m.kernel.insts)
      if (in.op == ir::Op::TileTgLoad && in.has(ir::Attr::Swizzle)) {
        const int64_t c = code(in.attr(ir::Attr::Swizzle));
        if (c) in.set(ir::Attr::Swizzle, c);
        else in.attrs.erase(std::remove_if(in.attrs.begin(), in.attrs.end(),
                                           [](const ir::AttrEntry& e) { return e.key == ir::Attr::Swizzle; }),
                            in.attrs.end());
        ++loads;
      }
    EXPECT_GE(loads, 2u) << what;
    bad.push_back(std::move(m));
  };
  reswizzle("the loads' swizzle shift + 1", [](int64_t c) { return c + 1; });
  reswizzle("the loads' swizzle one bit narrower", [](int64_t c) { return c - 100; });
  reswizzle("the loads' swizzle dropped", [](int64_t) { return int64_t(0); });
  // Every async_wait dropped at once; then the multiply reading the stage after the right one.
  {
    mutate::Mutant m{"dropped_async_wait", "", "every async_wait removed", k, ""};
    for (ir::Block& b : m.kernel.blocks)
      b.insts.erase(std::remove_if(b.insts.begin(), b.insts.end(),
                                   [&](ir::Id id) { return m.kernel.insts[id].op == ir::Op::AsyncWait; }),
                    b.insts.end());
    bad.push_back(std::move(m));
  }
  size_t barriers = 0, strides = 0, swizzles = 0;
  for (const mutate::Mutant& m : bad) {
    barriers += m.kind == "dropped_barrier";
    swizzles += m.kind == "swizzle";
    const mutate::Outcome o = mutate::run_mutant(*ctx, k, m, cases);
    // A stride mutant the pipeline proves equivalent (the prologue's step 0 times the row
    // length) is no bug; every other one must be killed.
    if (m.kind == "stride" && o.status == mutate::Outcome::Status::Equivalent) continue;
    strides += m.kind == "stride";
    EXPECT_EQ(o.status, mutate::Outcome::Status::Killed) << m.kind << " " << m.site << " " << m.detail << ": " << o.by;
  }
  // The epilogue's barriers are left out: each lane reads back only the slot elements the
  // semantics has it store (docs/semantics.md "Cooperative tiles"), so no case can tell them
  // apart; the kernel keeps them for the hardware's fragment layouts.
  EXPECT_EQ(barriers, 1u);
  EXPECT_GE(strides, 4u);
  EXPECT_EQ(swizzles, 3u);
}

// The warpgroup kernels' known-bad variants: `k` with every `op` removed from every block (the
// kernel must hold one), or with its products reading under another swizzle; each must fail the
// one iron_gemm case named `case_name` on the interpreter.
mutate::Mutant without_every(const ir::Kernel& k, const char* kind, ir::Op op) {
  mutate::Mutant m{kind, "", std::string("every ") + ir::mnemonic(op) + " removed", k, ""};
  size_t n = 0;
  for (ir::Block& b : m.kernel.blocks) {
    const size_t before = b.insts.size();
    b.insts.erase(std::remove_if(b.insts.begin(), b.insts.end(), [&](ir::Id id) { return m.kernel.insts[id].op == op; }),
                  b.insts.end());
    n += before - b.insts.size();
  }
  EXPECT_GE(n, 1u) << kind;
  return m;
}
mutate::Mutant with_product_swizzle_233(const ir::Kernel& k) {
  mutate::Mutant m{"swizzle", "", "the products' swizzle 333 -> 233", k, ""};
  for (ir::Inst& in : m.kernel.insts)
    if (in.op == ir::Op::TileWgMma) in.set(ir::Attr::Swizzle, 233);
  return m;
}
void expect_killed_by_case(Context& ctx, const ir::Kernel& k, const std::vector<mutate::Mutant>& bad,
                           const char* case_name) {
  std::vector<const TestDecl*> cases;
  for (const TestDecl* t : registered_tests())
    if (std::string(t->kernel) == "iron_gemm" && std::string(t->name) == case_name) cases.push_back(t);
  ASSERT_EQ(cases.size(), 1u) << case_name;
  for (const mutate::Mutant& m : bad) {
    const mutate::Outcome o = mutate::run_mutant(ctx, k, m, cases);
    EXPECT_EQ(o.status, mutate::Outcome::Status::Killed) << m.kind << " " << m.detail << ": " << o.by;
  }
}

// Known-bad variants of the warpgroup kernel fail its cases on the interpreter: every wg_wait
// dropped (the epilogue reads the accumulator in flight: a located error), the wg_fence dropped
// (an issue reads registers a fill wrote), the fence_proxy_async after the copies dropped (wgmma
// reads through the async proxy) and the products' descriptor swizzle one mode narrower than the
// staging's (a wrong answer).
TEST(GemmMutation, WarpgroupKernelKnownBadVariantsAreCaught) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_gemm_128x128x64_wg_s3_f32");
  expect_killed_by_case(*ctx, k,
                        {without_every(k, "dropped_wg_wait", ir::Op::WgWait), without_every(k, "dropped_wg_fence", ir::Op::WgFence),
                         without_every(k, "dropped_fence_proxy_async", ir::Op::FenceProxyAsync), with_product_swizzle_233(k)},
                        "wg_m70_n136_k150_weight");
}

// The tensor-map kernel: its copies' barrier wait, the block barrier that orders a stage's refill
// after every lane group retired its products, the products' wait, and the swizzle the products
// read under (the copies write the 128-byte one), each dropped or changed, fail its case.
TEST(GemmMutation, TensorMapKernelKnownBadVariantsAreCaught) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_gemm_128x128x64_wg_tma_s4_f32");
  expect_killed_by_case(*ctx, k,
                        {without_every(k, "dropped_mbar_wait", ir::Op::MbarWait), without_every(k, "dropped_barrier", ir::Op::Barrier),
                         without_every(k, "dropped_wg_wait", ir::Op::WgWait), with_product_swizzle_233(k)},
                        "wg_tma_m70_n120_k520_weight");
}

// The warp-specialized kernel: the consumers' releases (mbar_arrive on `empty`) dropped is a
// deadlock naming the producer's wait; every mbar_wait dropped lets a refill or a product race
// the copies; the products' wait dropped reads an accumulator in flight.
TEST(GemmMutation, WarpSpecializedKernelKnownBadVariantsAreCaught) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_gemm_128x256x64_wg_ws_s4_f32");
  expect_killed_by_case(*ctx, k,
                        {without_every(k, "dropped", ir::Op::MbarArrive), without_every(k, "dropped", ir::Op::MbarWait),
                         without_every(k, "dropped", ir::Op::WgWait)},
                        "wg_ws_m70_n200_k520_weight");
}

// The warpgroup decode kernel (10 K steps through 8 stages: every stage's barriers flip): the
// consumers' releases (mbar_arrive on `empty`) dropped is a deadlock; every mbar_wait dropped
// lets the copier refill a stage whose previous boxes are still in flight (and the products read
// a stage before its boxes land); the products' wait dropped reads the accumulator in flight; the
// products' swizzle one mode off the copies' 128-byte one is a wrong answer.
TEST(GemmMutation, DecodeWarpgroupKernelKnownBadVariantsAreCaught) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_gemm_decode_wg_tma_f32");
  expect_killed_by_case(*ctx, k,
                        {without_every(k, "dropped", ir::Op::MbarArrive), without_every(k, "dropped", ir::Op::MbarWait),
                         without_every(k, "dropped", ir::Op::WgWait), with_product_swizzle_233(k)},
                        "decode_wg_m8_n72_k584_int");
}

}  // namespace
}  // namespace iron
