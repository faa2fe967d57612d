// The launch of the elementwise, cast and rotary families (kernels/elementwise, kernels/rope): what
// their selectors route to for a decode call, small and large calls, odd tails, lane widths 32
// and 64, and devices without 16-bit or 8-bit buffers; and the calls they refuse, by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <iron/iron.hpp>

namespace iron {
namespace {

// An H200-like device as CUDA reports it, with the lane width given.
DeviceInfo gpu(uint32_t lanes) {
  DeviceInfo d;
  d.backend = Backend::Cuda;
  d.name = "test gpu";
  d.lane_width = lanes;
  d.max_threads_per_group = 1024;
  d.max_grid = {2147483647u, 65535u, 65535u};
  d.f16 = d.bf16 = true;
  return d;
}

std::string plan_error(std::string_view family, const Call& call, const DeviceInfo& dev) {
  try {
    plan_launch(family, call, dev);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, want) EXPECT_NE(std::string(text).find(want), std::string::npos) << (text)

// guards: every elementwise family launches ceil(n / 8) threads in threadgroups of 256 with n as its only scalar, from one element (decode) to 2^30, at lane widths 32 and 64 alike
TEST(OpsSelector, ElementwiseFamiliesLaunchEightElementsPerThread) {
  const char* families[] = {"iron_add", "iron_mul", "iron_exp", "iron_silu", "iron_gelu_tanh", "iron_gelu_erf", "iron_swiglu"};
  for (const char* f : families)
    for (uint32_t lanes : {32u, 64u}) {
      LaunchPlan p = plan_launch(f, Call{DType::BF16, {{"n", 1}}}, gpu(lanes));
      ASSERT_EQ(p.steps.size(), 1u);
      EXPECT_EQ(p.steps[0].kernel, f);
      EXPECT_EQ(p.describe(), std::string(f) + " grid 1x1x1 tg 256x1x1");
      EXPECT_EQ(p.steps[0].constexprs.at("n").u(), 1u);
      // 1003 elements: 126 threads (the last one owns the tail of 3), one threadgroup.
      EXPECT_EQ(plan_launch(f, Call{DType::F32, {{"n", 1003}}}, gpu(lanes)).steps[0].grid.x, 1u);
      // 2^30: 2^27 threads, 2^19 threadgroups.
      EXPECT_EQ(plan_launch(f, Call{DType::BF16, {{"n", int64_t(1) << 30}}}, gpu(lanes)).steps[0].grid.x, 1u << 19);
    }
  // A device whose threadgroups hold 128 threads at most gets threadgroups of 128.
  DeviceInfo small = gpu(32);
  small.max_threads_per_group = 128;
  EXPECT_EQ(plan_launch("iron_add", Call{DType::F32, {{"n", 4097}}}, small).describe(), "iron_add grid 5x1x1 tg 128x1x1");
}

// guards: the cast families run at the call's pair (T, W) or its one dtype, and refuse a pair whose 16-bit or fp8 side the device cannot store
TEST(OpsSelector, CastsRouteByPairAndNeedTheirStorage) {
  LaunchPlan p = plan_launch("iron_cast", Call{Instantiation(DType::F32, DType::BF16), {{"n", 17}}}, gpu(32));
  EXPECT_EQ(p.describe(), "iron_cast grid 1x1x1 tg 256x1x1");
  EXPECT_EQ(plan_launch("iron_cast_to_fp8", Call{DType::BF16, {{"n", 17}}}, gpu(32)).steps[0].kernel, "iron_cast_to_fp8");
  EXPECT_EQ(plan_launch("iron_cast_from_fp8", Call{DType::F16, {{"n", 17}}}, gpu(32)).steps[0].kernel, "iron_cast_from_fp8");
  DeviceInfo no_bf16 = gpu(32);
  no_bf16.bf16 = false;
  EXPECT_HAS(plan_error("iron_cast", Call{Instantiation(DType::F32, DType::BF16), {{"n", 17}}}, no_bf16),
             "iron_cast: the device test gpu has no bf16 buffers");
  EXPECT_EQ(plan_error("iron_cast", Call{Instantiation(DType::F32, DType::F16), {{"n", 17}}}, no_bf16), "");
  DeviceInfo no_int8 = gpu(32);
  no_int8.int8 = false;
  EXPECT_HAS(plan_error("iron_cast_to_fp8", Call{DType::F32, {{"n", 17}}}, no_int8), "has no f8e4m3 buffers");
  EXPECT_HAS(plan_error("iron_cast_from_fp8", Call{DType::F32, {{"n", 17}}}, no_int8), "has no f8e4m3 buffers");
  // A pair the family never built fails loudly (fp8 goes through the fp8 families).
  EXPECT_HAS(plan_error("iron_cast", Call{Instantiation(DType::F32, DType::F8E4M3), {{"n", 17}}}, gpu(32)), "never built");
}

// guards: elementwise calls the kernels cannot serve are refused naming the family and the value: n = 0, n >= 2^32, a grid wider than the device's, 16-bit dtypes on a device without them
TEST(OpsSelector, ElementwiseRefusesWhatItCannotServe) {
  EXPECT_HAS(plan_error("iron_add", Call{DType::F32, {{"n", 0}}}, gpu(32)), "iron_add: n = 0: needs 1 <= n < 2^32");
  EXPECT_HAS(plan_error("iron_silu", Call{DType::F32, {{"n", int64_t(1) << 32}}}, gpu(32)), "n = 4294967296: needs 1 <= n < 2^32");
  DeviceInfo narrow = gpu(32);
  narrow.max_grid.x = 65535;
  EXPECT_HAS(plan_error("iron_add", Call{DType::BF16, {{"n", int64_t(1) << 30}}}, narrow),
             "needs 524288 threadgroups of 256 (8 elements per thread), more than the device's grid width 65535");
  DeviceInfo no_16 = gpu(32);
  no_16.f16 = no_16.bf16 = false;
  EXPECT_HAS(plan_error("iron_gelu_erf", Call{DType::F16, {{"n", 8}}}, no_16), "has no f16 buffers");
  EXPECT_HAS(plan_error("iron_swiglu", Call{DType::BF16, {{"n", 8}}}, no_16), "has no bf16 buffers");
  EXPECT_EQ(plan_error("iron_swiglu", Call{DType::F32, {{"n", 8}}}, no_16), "");
}

Call rope_call(DType dt, int64_t tokens, int64_t heads, int64_t head_dim, int64_t offset = 0) {
  return Call{dt, {{"tokens", tokens}, {"heads", heads}, {"head_dim", head_dim}, {"pos_offset", offset},
                   {"max_pos", tokens + offset}}};
}

// guards: RoPE routes head_dim to its variant; decode (1 token) and small calls get one head per thread in threadgroups of whole lane groups (32 or 64), large ones 4 heads per thread in threadgroups of 256
TEST(OpsSelector, RopeRoutesHeadDimAndSpreadsSmallCalls) {
  for (const char* f : {"iron_rope_neox", "iron_rope_gptj"}) {
    // Decode, [1, 32, 128]: 8 threads along x, one head each along y.
    LaunchPlan p = plan_launch(f, rope_call(DType::BF16, 1, 32, 128, 4095), gpu(32));
    EXPECT_EQ(p.describe(), std::string(f) + "_d128 grid 1x32x1 tg 32x1x1");
    EXPECT_EQ(p.steps[0].constexprs.at("pos_offset").u(), 4095u);
    EXPECT_EQ(plan_launch(f, rope_call(DType::BF16, 1, 32, 128), gpu(64)).describe(), std::string(f) + "_d128 grid 1x32x1 tg 64x1x1");
    // Odd and small, [7, 5, 64]: 28 threads along x.
    EXPECT_EQ(plan_launch(f, rope_call(DType::F16, 7, 5, 64), gpu(32)).describe(), std::string(f) + "_d64 grid 1x5x1 tg 32x1x1");
    // Large, [32768, 32, 128]: 2^18 threads along x, 8 head groups of 4.
    EXPECT_EQ(plan_launch(f, rope_call(DType::BF16, 32768, 32, 128), gpu(32)).describe(),
              std::string(f) + "_d128 grid 1024x8x1 tg 256x1x1");
    EXPECT_EQ(plan_launch(f, rope_call(DType::BF16, 4096, 32, 64), gpu(64)).describe(), std::string(f) + "_d64 grid 64x8x1 tg 256x1x1");
  }
  // On the fly: theta is passed through as the kernel's f32 scalar.
  Call c{DType::BF16, {{"tokens", 4096}, {"heads", 32}, {"head_dim", 128}, {"theta", 500000.0}}};
  LaunchPlan p = plan_launch("iron_rope_neox_theta", c, gpu(32));
  EXPECT_EQ(p.describe(), "iron_rope_neox_theta_d128 grid 128x8x1 tg 256x1x1");
  EXPECT_EQ(p.steps[0].constexprs.at("theta").f(), 500000.0);
  EXPECT_EQ(p.steps[0].constexprs.at("pos_offset").u(), 0u);  // the default
}

// guards: RoPE refuses, by name, a head_dim without a kernel, positions past the tables, a theta that is no frequency base, sizes past 32-bit indexing, and 16-bit dtypes the device lacks
TEST(OpsSelector, RopeRefusesWhatItCannotServe) {
  EXPECT_HAS(plan_error("iron_rope_neox", rope_call(DType::F32, 4, 8, 96), gpu(32)),
             "iron_rope_neox: head_dim = 96 has no kernel (built: 64 and 128)");
  Call past = rope_call(DType::F32, 4, 8, 64, 10);
  past.args["max_pos"] = 12;
  EXPECT_HAS(plan_error("iron_rope_gptj", past, gpu(32)), "pos_offset + tokens = 14 exceeds max_pos = 12");
  EXPECT_HAS(plan_error("iron_rope_neox", Call{DType::F32, {{"tokens", 4}, {"heads", 8}, {"head_dim", 64}}}, gpu(32)),
             "no argument 'max_pos'");
  Call bad_theta{DType::F32, {{"tokens", 4}, {"heads", 8}, {"head_dim", 64}, {"theta", 1.0}}};
  EXPECT_HAS(plan_error("iron_rope_gptj_theta", bad_theta, gpu(32)), "the frequency base must be a finite value above 1");
  EXPECT_HAS(plan_error("iron_rope_neox", rope_call(DType::F32, 1 << 20, 64, 128), gpu(32)), "needs a 64-bit index");
  EXPECT_HAS(plan_error("iron_rope_neox", rope_call(DType::F32, 0, 8, 64), gpu(32)), "tokens and heads must be at least 1");
  DeviceInfo no_bf16 = gpu(32);
  no_bf16.bf16 = false;
  EXPECT_HAS(plan_error("iron_rope_neox", rope_call(DType::BF16, 4, 8, 64), no_bf16), "has no bf16 buffers");
  EXPECT_EQ(plan_error("iron_rope_neox", rope_call(DType::F16, 4, 8, 64), no_bf16), "");
}

}  // namespace
}  // namespace iron
