// Routing of the decode families' selectors (gemv_for, argmax_for, topk_for, top_p_for and the
// KV-cache ones) with devices filled in by hand: the issue's M = 1 GEMV shapes, decode rows, small and
// large, odd tails, lane widths 32 and 64, a device without f16/bf16, small threadgroup memory.
#include <gtest/gtest.h>

#include <iron/iron.hpp>

namespace iron {
namespace {

DeviceInfo device(uint32_t lanes, bool halves = true) {
  DeviceInfo d;
  d.name = "test device";
  d.lane_width = lanes;
  d.max_threads_per_group = 1024;
  d.max_grid = {65535, 65535, 65535};
  d.shared_memory_bytes = 48 * 1024;
  d.f16 = d.bf16 = halves;
  return d;
}

LaunchPlan gemv(DType t, int64_t n, int64_t k, const DeviceInfo& d) {
  return plan_launch("iron_gemv", Call{t, {{"n", n}, {"k", k}}}, d);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The issue's decode shapes: K = 4096, N = 14336 (one lane group per row, 8 rows per threadgroup
// of 256 at 32 lanes); K = 14336, N = 4096 (one threadgroup per row); the small-K [10240, 320]
// (lane groups); 16-byte loads: VEC 8 at 16 bits, VEC 4 for f32.
TEST(DecodeSelector, GemvRoutesTheIssueShapes) {
  const DeviceInfo d = device(32);
  LaunchPlan p = gemv(DType::BF16, 14336, 4096, d);
  EXPECT_EQ(p.describe(), "iron_gemv_warp_rows_x8 grid 1792x1x1 tg 256x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("m").as_double(), 14336);
  p = gemv(DType::BF16, 4096, 14336, d);
  EXPECT_EQ(p.describe(), "iron_gemv_rows_x8 grid 4096x1x1 tg 256x1x1");
  p = gemv(DType::F16, 10240, 320, d);
  EXPECT_EQ(p.describe(), "iron_gemv_warp_rows_x8 grid 1280x1x1 tg 256x1x1");
  p = gemv(DType::F32, 10240, 320, d);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemv_warp_rows_x4");
  p = gemv(DType::F32, 4096, 14336, d);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemv_rows_x4");
}

// One decode row, odd tails (k = 4095, 8191), and few long rows: split-K in two steps through a
// scratch buffer of n * splits f32 partials.
TEST(DecodeSelector, GemvDecodeRowsTailsAndSplitK) {
  const DeviceInfo d = device(32);
  EXPECT_EQ(gemv(DType::BF16, 1, 4096, d).describe(), "iron_gemv_warp_rows_x8 grid 1x1x1 tg 256x1x1");
  EXPECT_EQ(gemv(DType::BF16, 7, 4095, d).describe(), "iron_gemv_warp_rows_x8 grid 1x1x1 tg 256x1x1");
  EXPECT_EQ(gemv(DType::BF16, 2049, 8191, d).steps[0].kernel, "iron_gemv_warp_rows_x8");
  LaunchPlan p = gemv(DType::BF16, 64, 65536, d);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.describe(), "iron_gemv_splitk_x8 grid 64x16x1 tg 256x1x1; iron_gemv_splitk_combine grid 1x1x1 tg 256x1x1");
  ASSERT_EQ(p.scratch.size(), 1u);
  EXPECT_EQ(p.scratch[0].name, "partials");
  EXPECT_EQ(p.scratch[0].count, 64u * 16u);
  EXPECT_EQ(step_buffer(p.steps[0], "partials"), "partials");
  EXPECT_EQ(p.steps[1].constexprs.at("splits").as_double(), 16);
  // One row of 14336: splits = min(32, 14336 / 4096) = 3.
  EXPECT_EQ(gemv(DType::F32, 1, 14336, d).describe(),
            "iron_gemv_splitk_x4 grid 1x3x1 tg 256x1x1; iron_gemv_splitk_combine grid 1x1x1 tg 256x1x1");
  // 1023 rows still split (2 each); 1024 rows take a threadgroup per row.
  EXPECT_EQ(gemv(DType::BF16, 1023, 9000, d).steps[0].grid.y, 2u);
  EXPECT_EQ(gemv(DType::BF16, 1024, 9000, d).steps[0].kernel, "iron_gemv_rows_x8");
}

// Lane width 64: four rows per threadgroup of 256; a device of 128 threads at most.
TEST(DecodeSelector, GemvLaneWidthAndThreadLimit) {
  DeviceInfo d = device(64);
  EXPECT_EQ(gemv(DType::BF16, 14336, 4096, d).describe(), "iron_gemv_warp_rows_x8 grid 3584x1x1 tg 256x1x1");
  d.max_threads_per_group = 128;
  EXPECT_EQ(gemv(DType::BF16, 14336, 4096, d).describe(), "iron_gemv_warp_rows_x8 grid 7168x1x1 tg 128x1x1");
  // More rows than the grid holds: lane groups stride over them.
  d = device(32);
  d.max_grid.x = 1000;
  EXPECT_EQ(gemv(DType::BF16, 100000, 16384, d).describe(), "iron_gemv_warp_rows_x8 grid 1000x1x1 tg 256x1x1");
}

TEST(DecodeSelector, GemvRefusesWhatCannotRun) {
  const DeviceInfo plain = device(32, false);
  std::string e = error_of([&] { gemv(DType::BF16, 4096, 4096, plain); });
  EXPECT_NE(e.find("has no bf16 support"), std::string::npos) << e;
  e = error_of([&] { gemv(DType::F16, 4096, 4096, plain); });
  EXPECT_NE(e.find("has no f16 support"), std::string::npos) << e;
  EXPECT_EQ(gemv(DType::F32, 4096, 4096, plain).steps[0].kernel, "iron_gemv_warp_rows_x4");
  e = error_of([&] { gemv(DType::F32, 0, 4096, plain); });
  EXPECT_NE(e.find("each must be at least 1"), std::string::npos) << e;
  e = error_of([&] { gemv(DType::F32, 70000, 70000, plain); });
  EXPECT_NE(e.find("below 2^32"), std::string::npos) << e;
  e = error_of([&] { plan_launch("iron_gemv", Call{DType::F32, {{"n", 4}}}, plain); });
  EXPECT_NE(e.find("'k'"), std::string::npos) << e;
}

// Sampling: a thread per chunk of 8 logits for argmax (few long rows split over threadgroups), a thread per logit for top-k, both up
// to 1024 and in whole lane groups; top-k's candidate capacity follows threadgroup memory; top-p
// up to 256 threads.
TEST(DecodeSelector, SamplingRoutes) {
  DeviceInfo d = device(32);
  auto argmax = [&](int64_t rows, int64_t vocab) {
    return plan_launch("iron_argmax", Call{DType::F32, {{"rows", rows}, {"vocab", vocab}}}, d).describe();
  };
  auto topk = [&](int64_t rows, int64_t vocab, int64_t k) {
    return plan_launch("iron_topk", Call{DType::F32, {{"rows", rows}, {"vocab", vocab}, {"k", k}}}, d);
  };
  // Few rows of many logits split: ceil(1024 / rows) parts, at most one per 128 chunks.
  EXPECT_EQ(argmax(1, 128256), "iron_argmax_parts grid 1x125x1 tg 128x1x1; iron_argmax_combine grid 1x1x1 tg 128x1x1");
  EXPECT_EQ(argmax(64, 128256), "iron_argmax_parts grid 64x16x1 tg 128x1x1; iron_argmax_combine grid 64x1x1 tg 32x1x1");
  EXPECT_EQ(argmax(3, 5000), "iron_argmax_parts grid 3x4x1 tg 128x1x1; iron_argmax_combine grid 3x1x1 tg 32x1x1");
  EXPECT_EQ(argmax(600, 128256), "iron_argmax_parts grid 600x2x1 tg 128x1x1; iron_argmax_combine grid 600x1x1 tg 32x1x1");
  EXPECT_EQ(argmax(1024, 128256), "iron_argmax grid 1024x1x1 tg 1024x1x1");
  EXPECT_EQ(argmax(3, 1003), "iron_argmax grid 3x1x1 tg 128x1x1");  // 126 chunks
  EXPECT_EQ(argmax(2, 5), "iron_argmax grid 2x1x1 tg 32x1x1");
  // Top-k splits few rows of many logits: parts of at least 2048 logits, about 512 threadgroups,
  // at most 1024 / k parts; the merge takes a thread per candidate.
  LaunchPlan p = topk(64, 128256, 50);
  EXPECT_EQ(p.describe(), "iron_topk_parts grid 64x8x1 tg 256x1x1; iron_topk_merge grid 64x1x1 tg 416x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("cap").as_double(), 2048);
  EXPECT_EQ(p.steps[1].constexprs.at("m").as_double(), 400);
  EXPECT_EQ(topk(1, 128256, 50).describe(), "iron_topk_parts grid 1x20x1 tg 256x1x1; iron_topk_merge grid 1x1x1 tg 1024x1x1");
  EXPECT_EQ(topk(2, 20000, 64).describe(), "iron_topk_parts grid 2x9x1 tg 256x1x1; iron_topk_merge grid 2x1x1 tg 576x1x1");
  EXPECT_EQ(topk(600, 128256, 50).describe(), "iron_topk grid 600x1x1 tg 1024x1x1");
  EXPECT_EQ(topk(1, 4000, 50).describe(), "iron_topk grid 1x1x1 tg 1024x1x1");  // one part of 2048 only
  EXPECT_EQ(topk(1, 300, 50).describe(), "iron_topk grid 1x1x1 tg 320x1x1");
  EXPECT_EQ(topk(1, 10, 50).describe(), "iron_topk grid 1x1x1 tg 64x1x1");  // k above the row: 64 threads
  d.lane_width = 64;
  EXPECT_EQ(argmax(3, 1003), "iron_argmax grid 3x1x1 tg 128x1x1");
  EXPECT_EQ(argmax(64, 128256), "iron_argmax_parts grid 64x16x1 tg 128x1x1; iron_argmax_combine grid 64x1x1 tg 64x1x1");
  EXPECT_EQ(topk(1, 300, 50).describe(), "iron_topk grid 1x1x1 tg 320x1x1");
  EXPECT_EQ(topk(1, 10, 5).describe(), "iron_topk grid 1x1x1 tg 64x1x1");
  d.lane_width = 32;
  d.shared_memory_bytes = 16384;  // (16384 - 5144) / 8 candidates
  EXPECT_EQ(topk(1, 128256, 50).steps[0].constexprs.at("cap").as_double(), 1405);
  std::string e = error_of([&] { topk(1, 128256, 0); });
  EXPECT_NE(e.find("k in 1..1024"), std::string::npos) << e;
  d.shared_memory_bytes = 4096;
  e = error_of([&] { topk(1, 128256, 50); });
  EXPECT_NE(e.find("bytes of threadgroup memory"), std::string::npos) << e;
  // Top-p: a thread per logit up to 256.
  auto top_p = [&](int64_t rows, int64_t vocab) {
    return plan_launch("iron_top_p", Call{DType::F32, {{"rows", rows}, {"vocab", vocab}, {"top_p", 0.9}}}, d).describe();
  };
  EXPECT_EQ(top_p(1, 128256), "iron_top_p grid 1x1x1 tg 256x1x1");
  EXPECT_EQ(top_p(4, 40), "iron_top_p grid 4x1x1 tg 64x1x1");
  d = device(32, false);
  e = error_of([&] { plan_launch("iron_argmax", Call{DType::BF16, {{"rows", 1}, {"vocab", 8}}}, d); });
  EXPECT_NE(e.find("has no bf16 support"), std::string::npos) << e;
  e = error_of([&] { argmax(70000, 8); });
  EXPECT_NE(e.find("grid"), std::string::npos) << e;
}

// KV cache: one thread per 8 elements of the copied rows, threadgroups of 256.
TEST(DecodeSelector, KvCacheRoutes) {
  DeviceInfo d = device(32);
  LaunchPlan p = plan_launch(
      "iron_kv_append", Call{DType::BF16, {{"tokens", 512}, {"max_seq", 4096}, {"kv_heads", 8}, {"head_dim", 128}}}, d);
  EXPECT_EQ(p.describe(), "iron_kv_append grid 256x1x1 tg 256x1x1");
  EXPECT_EQ(p.reason, "rows of a multiple of 8 elements: 16-byte copies");
  p = plan_launch("iron_kv_append_paged",
                  Call{DType::BF16, {{"tokens", 1}, {"seqs", 1}, {"blocks_per_seq", 8}, {"num_blocks", 8},
                                     {"block_size", 16}, {"kv_heads", 3}, {"head_dim", 10}}},
                  d);
  EXPECT_EQ(p.describe(), "iron_kv_append_paged grid 1x1x1 tg 256x1x1");
  EXPECT_EQ(p.reason, "element-by-element copies");
  p = plan_launch("iron_kv_gather_paged",
                  Call{DType::F32, {{"seq_len", 4096}, {"blocks_per_seq", 256}, {"num_blocks", 256},
                                    {"block_size", 16}, {"kv_heads", 8}, {"head_dim", 128}}},
                  d);
  EXPECT_EQ(p.describe(), "iron_kv_gather_paged grid 2048x1x1 tg 256x1x1");
  std::string e = error_of([&] {
    plan_launch("iron_kv_append", Call{DType::F32, {{"tokens", 0}, {"max_seq", 8}, {"kv_heads", 1}, {"head_dim", 8}}}, d);
  });
  EXPECT_NE(e.find("non-empty"), std::string::npos) << e;
}

}  // namespace
}  // namespace iron
