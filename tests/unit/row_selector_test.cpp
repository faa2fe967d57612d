// Routing of the row families' selectors (kernels/norm, kernels/softmax): which kernel, grid and
// threadgroup a logical call gets on a described device (seeds §5.4): decode (one row), small and
// large batches, odd widths, lane widths 32 and 64, a device of 256 threads a threadgroup, a
// device without 16-bit storage, and the split-row softmax plan.
#include <gtest/gtest.h>

#include <string>

#include <iron/iron.hpp>

namespace iron {
namespace {

DeviceInfo device(uint32_t lanes, uint32_t max_threads = 1024, bool halves = true) {
  DeviceInfo d;
  d.name = "test device";
  d.lane_width = lanes;
  d.max_threads_per_group = max_threads;
  d.f16 = d.bf16 = halves;
  return d;
}

LaunchPlan plan(const char* family, DType dt, int64_t rows, int64_t d, const DeviceInfo& dev) {
  return plan_launch(family, Call{dt, {{"rows", rows}, {"d", d}, {"eps", 1e-6}}}, dev);
}

std::string plan_error(const char* family, DType dt, int64_t rows, int64_t d, const DeviceInfo& dev) {
  try {
    plan(family, dt, rows, d, dev);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RowSelectors, RmsNormDecodeTakesOneWideThreadgroup) {
  // 1 x 4096 bf16: VEC 8, 512 chunks; few rows, so 4 x 128 threads, one chunk each.
  LaunchPlan p = plan("iron_rms_norm", DType::BF16, 1, 4096, device(32));
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.describe(), "iron_rms_norm_block_x8 grid 1x1x1 tg 512x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("dv").u(), 512u);
  EXPECT_EQ(p.steps[0].constexprs.at("rows").u(), 1u);
}

TEST(RowSelectors, RmsNormLargeBatchHoldsTheRowInRegisters) {
  // 4096 x 4096: 512 chunks over 128 threads, 4 chunks (32 elements) each; 16384 x 8192: 256.
  EXPECT_EQ(plan("iron_rms_norm", DType::BF16, 4096, 4096, device(32)).describe(),
            "iron_rms_norm_block_x8 grid 4096x1x1 tg 128x1x1");
  EXPECT_EQ(plan("iron_rms_norm", DType::BF16, 16384, 8192, device(32)).describe(),
            "iron_rms_norm_block_x8 grid 16384x1x1 tg 256x1x1");
  EXPECT_EQ(plan("iron_residual_rms_norm", DType::BF16, 32768, 4096, device(32)).describe(),
            "iron_residual_rms_norm_block_x8 grid 32768x1x1 tg 128x1x1");
  EXPECT_EQ(plan("iron_layer_norm", DType::F16, 4096, 4096, device(32)).describe(),
            "iron_layer_norm_block_x8 grid 4096x1x1 tg 128x1x1");
}

TEST(RowSelectors, ShortRowsTakeALaneGroupAtEveryLaneWidth) {
  // 100 x 1024: 128 chunks fit 32 lanes x 4; threadgroups of 256 hold 8 rows at 32 lanes, 4 at 64.
  EXPECT_EQ(plan("iron_rms_norm", DType::F32, 100, 1024, device(32)).describe(), "iron_rms_norm_warp_x8 grid 13x1x1 tg 256x1x1");
  EXPECT_EQ(plan("iron_rms_norm", DType::F32, 100, 1024, device(64)).describe(), "iron_rms_norm_warp_x8 grid 25x1x1 tg 256x1x1");
  // 2048 elements fit 64 lanes but not 32.
  EXPECT_EQ(plan("iron_softmax", DType::BF16, 100, 2048, device(64)).describe(), "iron_softmax_warp_x8 grid 25x1x1 tg 256x1x1");
  EXPECT_EQ(plan("iron_softmax", DType::BF16, 100, 2048, device(32)).describe(), "iron_softmax_block_x8 grid 100x1x1 tg 256x1x1");
}

TEST(RowSelectors, OddWidthsTakeVec1) {
  // 7 x 4095: no VEC 8; 4095 elements at 16 a thread (VEC 1 keeps 16 chunks) is 256 threads,
  // 4 x for 7 rows.
  LaunchPlan p = plan("iron_rms_norm", DType::F16, 7, 4095, device(32));
  EXPECT_EQ(p.describe(), "iron_rms_norm_block_x1 grid 7x1x1 tg 1024x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("dv").u(), 4095u);
  EXPECT_NE(p.reason.find("not a multiple of 8"), std::string::npos) << p.reason;
  // 4100 is a multiple of 4, not of 8: VEC 1 too.
  EXPECT_EQ(plan("iron_layer_norm", DType::BF16, 3, 4100, device(32)).steps[0].kernel, "iron_layer_norm_block_x1");
}

TEST(RowSelectors, ThreadgroupSizeFollowsTheDevice) {
  // A device of 256 threads a threadgroup: 16384 elements would need 512 threads at 32 each;
  // the device's 256 hold half and loop over the rest.
  EXPECT_EQ(plan("iron_rms_norm", DType::BF16, 4096, 16384, device(32, 256)).describe(),
            "iron_rms_norm_block_x8 grid 4096x1x1 tg 256x1x1");
  // A row past the registers of 1024 threads still runs, on the largest threadgroup.
  LaunchPlan p = plan("iron_rms_norm", DType::BF16, 4096, 65536, device(32));
  EXPECT_EQ(p.describe(), "iron_rms_norm_block_x8 grid 4096x1x1 tg 1024x1x1");
  EXPECT_NE(p.reason.find("past the registers"), std::string::npos) << p.reason;
}

TEST(RowSelectors, DeviceWithout16BitStorageIsRefused) {
  const DeviceInfo dev = device(32, 1024, false);
  std::string e = plan_error("iron_rms_norm", DType::BF16, 4, 4096, dev);
  EXPECT_NE(e.find("no bf16 storage"), std::string::npos) << e;
  e = plan_error("iron_softmax", DType::F16, 4, 4096, dev);
  EXPECT_NE(e.find("no f16 storage"), std::string::npos) << e;
  EXPECT_EQ(plan("iron_rms_norm", DType::F32, 4, 4096, dev).steps[0].kernel, "iron_rms_norm_block_x8");
}

TEST(RowSelectors, BadShapesAreRefusedNamingTheFamily) {
  std::string e = plan_error("iron_layer_norm", DType::F32, 0, 4096, device(32));
  EXPECT_NE(e.find("iron_layer_norm"), std::string::npos) << e;
  EXPECT_NE(e.find("rows = 0"), std::string::npos) << e;
  e = plan_error("iron_softmax", DType::F32, 70000, 70000, device(32));
  EXPECT_NE(e.find("2^32"), std::string::npos) << e;
  try {
    plan_launch("iron_rms_norm", Call{DType::F32, {{"rows", 4}, {"d", 64}}}, device(32));
    FAIL() << "a call without eps was planned";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("eps"), std::string::npos) << err.what();
  }
}

TEST(RowSelectors, SoftmaxLongRowsSplitOrStreamOnline) {
  // 64 x 128256: past the registers of 1024 threads, few rows: two steps through a scratch
  // buffer of per-part (max, sum), 16 parts a row.
  LaunchPlan p = plan("iron_softmax", DType::BF16, 64, 128256, device(32));
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.describe(),
            "iron_softmax_split_partials_x8 grid 64x16x1 tg 256x1x1; iron_softmax_split_out_x8 grid 64x16x1 tg 256x1x1");
  ASSERT_EQ(p.scratch.size(), 1u);
  EXPECT_EQ(p.scratch[0].dtype, DType::F32);
  EXPECT_EQ(p.scratch[0].count, 64u * 16 * 2);
  EXPECT_EQ(step_buffer(p.steps[0], "partials"), p.scratch[0].name);
  EXPECT_EQ(step_buffer(p.steps[1], "partials"), p.scratch[0].name);
  // One row: more parts (at most one per 256 chunks: 16032 / 256 = 62).
  EXPECT_EQ(plan("iron_softmax", DType::BF16, 1, 128256, device(32)).steps[0].grid.y, 62u);
  // Many long rows: the online kernel, one threadgroup of 1024 a row.
  EXPECT_EQ(plan("iron_softmax", DType::BF16, 4096, 128256, device(32)).describe(),
            "iron_softmax_online_x8 grid 4096x1x1 tg 1024x1x1");
  // 4096 x 4096 stays on the row kernels.
  EXPECT_EQ(plan("iron_softmax", DType::BF16, 4096, 4096, device(32)).describe(), "iron_softmax_block_x8 grid 4096x1x1 tg 128x1x1");
  // The forced routes.
  EXPECT_EQ(plan("iron_softmax_online", DType::F32, 4, 4095, device(64)).describe(), "iron_softmax_online_x1 grid 4x1x1 tg 1024x1x1");
  EXPECT_EQ(plan("iron_softmax_split", DType::F32, 2, 64, device(32)).describe(),
            "iron_softmax_split_partials_x8 grid 2x1x1 tg 256x1x1; iron_softmax_split_out_x8 grid 2x1x1 tg 256x1x1");
}

}  // namespace
}  // namespace iron
