// Dispatch validation on the real Vulkan device: every rejection class of Context::dispatch_with_grid
// (context.cpp, check()) names its rule and the offending value, launches nothing and leaves the
// context usable; valid dispatches compute correct results and reuse cached pipelines.
#include <gtest/gtest.h>

#include <cmath>

#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"

using namespace iron;

namespace {

// Kernels built in this file are traced with trace_kernel, never registered: IRON_KERNEL would
// add them to the corpus. The threadgroup allocation size is a file-level knob so one body can
// sit just at and just past the device limit.
uint32_t g_shared_floats = 1;

void shared_memory_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", f32, {n});
  TgBuffer scratch = threadgroup_alloc("scratch", f32, g_shared_floats);
  scratch[local_id(0)] = cast<f32>(local_id(0));
  barrier();
  Expr i = program_id(0) * group_size(0) + local_id(0);
  if_(i < n, [&] { out[i] = scratch[local_id(0)]; });
}

// An Elementwise kernel whose buffer extent is an i32 scalar, for the negative-extent rule.
void i32_extent_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", i32);
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < cast<u32>(n), [&] { out[i] = 1.0f; });
}

ir::Kernel shared_memory_kernel(uint32_t floats) {
  g_shared_floats = floats;
  return trace_kernel(KernelDecl{"dispatch_test_shared", &shared_memory_body, Mode::Reduction, {}, __FILE__, __LINE__});
}

// check() lists each problem on its own "\n  - " line; counting them shows a rule fired alone.
size_t count_of(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

class Dispatch : public ::testing::Test {
 protected:
  // One device for the suite: opening lavapipe and compiling pipelines dominate the run time.
  static void SetUpTestSuite() {
    try {
      ctx_ = Context::create(Backend::Vulkan);
    } catch (const Error& e) {
      create_error_ = e.what();
    }
  }
  static void TearDownTestSuite() { ctx_.reset(); }
  // A missing device fails every test: it is never a pass or a skip.
  void SetUp() override { ASSERT_TRUE(ctx_) << "no Vulkan context: " << create_error_; }

  static Context& ctx() { return *ctx_; }
  static const DeviceInfo& info() { return ctx_->info(); }

  // Bindings for iron_add over n elements of dtype dt (contents unset).
  static Bindings add_buffers(size_t n, DType dt = DType::F32) {
    return {{"a", ctx().alloc(dt, n)}, {"b", ctx().alloc(dt, n)}, {"out", ctx().alloc(dt, n)}};
  }

  // Runs a dispatch that must be rejected; returns the iron::Error message ("" if none was thrown).
  template <class F>
  static std::string rejection(F&& dispatch) {
    try {
      dispatch();
    } catch (const Error& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw a non-iron exception: " << e.what();
      return "";
    }
    ADD_FAILURE() << "the dispatch was accepted";
    return "";
  }

  // A rejection of iron_add (f32, n = 1000) with one thing changed from a valid dispatch; the
  // message must name the kernel and device, contain `needle`, and list `problems` problems.
  static void expect_add_rejected(const Bindings& b, const Constexprs& c, Dim3 grid, Dim3 tg, const std::string& needle,
                                  size_t problems = 1, DType dt = DType::F32) {
    std::string msg = rejection([&] { ctx().dispatch_with_grid("iron_add", dt, b, c, grid, tg); });
    EXPECT_PRED_FORMAT2(testing::IsSubstring,
                        "invalid dispatch of iron_add (" + std::string(dtype_name(dt)) + ") on " + info().name, msg);
    EXPECT_PRED_FORMAT2(testing::IsSubstring, needle, msg);
    EXPECT_EQ(count_of(msg, "\n  - "), problems) << msg;
  }

  static inline const Constexprs kN{{"n", 1000}};
  static inline const Dim3 kGrid{4, 1, 1}, kTg{256, 1, 1};  // 1024 threads cover n = 1000

  static inline std::unique_ptr<Context> ctx_;
  static inline std::string create_error_;
};

// Dispatches iron_add (f32) on exactly representable inputs and checks every element; the sum
// of two small integers and halves is exact in f32, so the comparison is exact.
static void run_add_and_check(Context& ctx, uint32_t n, Dim3 tg) {
  std::vector<float> a(n), b(n), out(n, -1.0f);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = 0.5f * float(i);
    b[i] = float(n) - float(i);
  }
  Bindings bind = {{"a", ctx.alloc(DType::F32, n)}, {"b", ctx.alloc(DType::F32, n)}, {"out", ctx.alloc(DType::F32, n)}};
  ctx.upload(bind[0].second, a.data(), n * 4);
  ctx.upload(bind[1].second, b.data(), n * 4);
  ctx.upload(bind[2].second, out.data(), n * 4);
  Dim3 grid{(n + tg.x - 1) / tg.x, 1, 1};
  ctx.dispatch_with_grid("iron_add", DType::F32, bind, {{"n", n}}, grid, tg);
  ctx.synchronize();
  ctx.download(bind[2].second, out.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << "element " << i << " with threadgroup " << tg.x;
}

TEST_F(Dispatch, ValidAddProducesCorrectResults) { run_add_and_check(ctx(), 1000, kTg); }

// --- geometry ---------------------------------------------------------------------------------

TEST_F(Dispatch, RejectsZeroGridDimension) {
  expect_add_rejected(add_buffers(1000), kN, {4, 0, 1}, kTg, "grid {4, 0, 1} has a zero dimension");
}

TEST_F(Dispatch, RejectsZeroThreadgroupDimension) {
  expect_add_rejected(add_buffers(1000), kN, kGrid, {256, 1, 0}, "threadgroup {256, 1, 0} has a zero dimension");
}

TEST_F(Dispatch, RejectsMoreThanU32MaxThreads) {
  // Every axis is within the device's limits; only the product overflows a u32 thread id.
  Dim3 grid{info().max_grid.x, info().max_grid.y, 1};
  Dim3 tg{info().max_threads_per_group, 1, 1};
  ASSERT_LE(tg.x, info().max_group_size.x);
  uint64_t total = grid.product() * tg.product();
  ASSERT_GT(total, 0xffffffffull) << "device limits too small to overflow u32";
  expect_add_rejected(add_buffers(1000), kN, grid, tg,
                      "grid {" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", 1} x threadgroup {" +
                          std::to_string(tg.x) + ", 1, 1} = " + std::to_string(total) + " threads exceeds 2^32-1");
}

TEST_F(Dispatch, ThreadCountBoundaryIsU32Max) {
  // 2^32 threads is one too many; 2^32 - 2^22 is fine (validated only: far too many to run here).
  const ir::Kernel& k = kernel_ir("iron_add");
  Bindings b = add_buffers(1000);
  ASSERT_GE(info().max_grid.x, 32768u);
  ASSERT_GE(info().max_threads_per_group, 1024u);
  expect_add_rejected(b, kN, {32768, 128, 1}, {1024, 1, 1}, "= 4294967296 threads exceeds 2^32-1");
  // The count that fits needs a second grid axis, which an Elementwise kernel may not use
  // (docs/dsl.md, "Modes"); a Grid3D kernel may.
  std::string two_d = rejection([&] { ctx().validate_dispatch(k, DType::F32, b, kN, {32768, 128, 1}, {1023, 1, 1}); });
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "mode Elementwise indexes threads by the flat thread_id(0) alone", two_d);
  EXPECT_EQ(count_of(two_d, "\n  - "), 1u) << two_d;
  const ir::Kernel& rope = kernel_ir("iron_rope");
  Bindings rb = {{"x", ctx().alloc(DType::F32, 2)},
                 {"cos", ctx().alloc(DType::F32, 1)},
                 {"sin", ctx().alloc(DType::F32, 1)},
                 {"out", ctx().alloc(DType::F32, 2)}};
  Constexprs rc = {{"tokens", 1}, {"heads", 1}, {"half", 1}};
  EXPECT_NO_THROW(ctx().validate_dispatch(rope, DType::F32, rb, rc, {32768, 128, 1}, {1023, 1, 1}));
  std::string over = rejection([&] { ctx().validate_dispatch(rope, DType::F32, rb, rc, {32768, 128, 1}, {1024, 1, 1}); });
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "= 4294967296 threads exceeds 2^32-1", over);
}

TEST_F(Dispatch, RejectsThreadgroupOverDeviceMaxThreads) {
  // 2x the per-group maximum, spread over x and y so no single axis passes its own limit.
  uint32_t x = 64, y = 2 * info().max_threads_per_group / 64;
  ASSERT_LE(x, info().max_group_size.x);
  ASSERT_LE(y, info().max_group_size.y) << "cannot isolate the total-size rule on this device";
  expect_add_rejected(add_buffers(1000), kN, {1, 1, 1}, {x, y, 1},
                      "threadgroup {" + std::to_string(x) + ", " + std::to_string(y) + ", 1} has " +
                          std::to_string(x * y) + " threads; the device allows " +
                          std::to_string(info().max_threads_per_group));
}

TEST_F(Dispatch, RejectsThreadgroupOverPerAxisLimit) {
  // lavapipe's per-axis limits (1024 each) equal its per-group maximum, so a group one past the
  // z limit also breaks the total-size rule: both problems are reported.
  uint32_t z = info().max_group_size.z + 1;
  const Dim3& m = info().max_group_size;
  size_t problems = z > info().max_threads_per_group ? 2 : 1;
  expect_add_rejected(add_buffers(1000), kN, {1, 1, 1}, {1, 1, z},
                      "threadgroup {1, 1, " + std::to_string(z) + "} exceeds the device's per-axis limit {" +
                          std::to_string(m.x) + ", " + std::to_string(m.y) + ", " + std::to_string(m.z) + "}",
                      problems);
}

TEST_F(Dispatch, RejectsGridOverPerAxisLimit) {
  const Dim3& m = info().max_grid;
  expect_add_rejected(add_buffers(1000), kN, {1, m.y + 1, 1}, {1, 1, 1},
                      "grid {1, " + std::to_string(m.y + 1) + ", 1} exceeds the device's per-axis limit {" +
                          std::to_string(m.x) + ", " + std::to_string(m.y) + ", " + std::to_string(m.z) + "}");
}

TEST_F(Dispatch, LaneOpsNeedThreadgroupMultipleOfLaneWidth) {
  // 1.5 lane groups: {12, 1, 1} on lavapipe's lane width 8.
  uint32_t lane = info().lane_width;
  ASSERT_GE(lane, 2u);
  uint32_t tgx = lane + lane / 2;
  const uint32_t rows = 2, d = 16;
  Bindings b = {{"x", ctx().alloc(DType::F32, rows * d)},
                {"w", ctx().alloc(DType::F32, d)},
                {"out", ctx().alloc(DType::F32, rows * d)}};
  std::string msg = rejection([&] {
    ctx().dispatch_with_grid("iron_rmsnorm", DType::F32, b, {{"rows", rows}, {"d", d}, {"eps", 1e-6}}, {rows, 1, 1},
                             {tgx, 1, 1});
  });
  EXPECT_PRED_FORMAT2(testing::IsSubstring,
                      "threadgroup {" + std::to_string(tgx) + ", 1, 1}: x = " + std::to_string(tgx) +
                          " is not a positive multiple of the lane width " + std::to_string(lane),
                      msg);
  EXPECT_EQ(count_of(msg, "\n  - "), 1u) << msg;
}

TEST_F(Dispatch, LaneOpsNeedTheXDimensionAMultipleOfLaneWidth) {
  // {lane/2, 2, 1} has a whole lane group of threads in total, but Vulkan forms full subgroups
  // only when x itself is a multiple of the subgroup size.
  uint32_t lane = info().lane_width;
  const uint32_t rows = 2, d = 16;
  Bindings b = {{"x", ctx().alloc(DType::F32, rows * d)},
                {"w", ctx().alloc(DType::F32, d)},
                {"out", ctx().alloc(DType::F32, rows * d)}};
  std::string msg = rejection([&] {
    ctx().dispatch_with_grid("iron_rmsnorm", DType::F32, b, {{"rows", rows}, {"d", d}, {"eps", 1e-6}}, {rows, 1, 1},
                             {lane / 2, 2, 1});
  });
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "is not a positive multiple of the lane width", msg);
}

TEST_F(Dispatch, RejectsNonFiniteF32Constexpr) {
  const uint32_t rows = 1, d = 16;
  Bindings b = {{"x", ctx().alloc(DType::F32, rows * d)},
                {"w", ctx().alloc(DType::F32, d)},
                {"out", ctx().alloc(DType::F32, rows * d)}};
  std::string msg = rejection([&] {
    ctx().dispatch_with_grid("iron_rmsnorm", DType::F32, b, {{"rows", rows}, {"d", d}, {"eps", std::nan("")}},
                             {rows, 1, 1}, {info().lane_width, 1, 1});
  });
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "constexpr 'eps' = nan is not finite", msg);
}

TEST_F(Dispatch, ElementwiseKernelAcceptsThreadgroupNotMultipleOfLaneWidth) {
  // The same geometry is fine without lane ops: iron_add really runs with 12-thread groups.
  uint32_t lane = info().lane_width;
  run_add_and_check(ctx(), 1000, {lane + lane / 2, 1, 1});
}

TEST_F(Dispatch, RejectsThreadgroupMemoryOverDeviceLimit) {
  uint64_t limit = info().shared_memory_bytes;
  ASSERT_GT(limit, 0u);
  uint32_t over = uint32_t(limit / 4 + 1);  // f32 slots: one past the limit
  ir::Kernel k = shared_memory_kernel(over);
  DeviceBuffer out = ctx().alloc(DType::F32, 64);
  std::string msg = rejection(
      [&] { ctx().dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"n", 64}}, {1, 1, 1}, {64, 1, 1}); });
  EXPECT_PRED_FORMAT2(testing::IsSubstring,
                      "the kernel needs " + std::to_string(uint64_t(over) * 4) +
                          " bytes of threadgroup memory; the device allows " + std::to_string(limit),
                      msg);
  EXPECT_EQ(count_of(msg, "\n  - "), 1u) << msg;
  // Exactly at the limit is accepted, and really runs.
  ir::Kernel at_limit = shared_memory_kernel(uint32_t(limit / 4));
  ASSERT_NO_THROW(ctx().dispatch_with_grid(at_limit, DType::F32, {{"out", out}}, {{"n", 64}}, {1, 1, 1}, {64, 1, 1}));
  ctx().synchronize();
  std::vector<float> got(64);
  ctx().download(out, got.data(), 64 * 4);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], float(i)) << "element " << i;
}

// --- dtype, buffers ---------------------------------------------------------------------------

TEST_F(Dispatch, RejectsDtypeTheKernelDoesNotDeclare) {
  // i32 buffers, so only the dtype rule fires (not the buffer dtype rule).
  expect_add_rejected(add_buffers(1000, DType::I32), kN, kGrid, kTg,
                      "the kernel is not declared for dtype i32 (declared: f32, f16, bf16)", 1, DType::I32);
}

TEST_F(Dispatch, RejectsUnboundBuffer) {
  Bindings b = add_buffers(1000);
  b.erase(b.begin() + 1);  // drop "b"
  expect_add_rejected(b, kN, kGrid, kTg, "buffer parameter 'b' is not bound");
}

TEST_F(Dispatch, RejectsUnknownBufferName) {
  Bindings b = add_buffers(1000);
  b.emplace_back("c", ctx().alloc(DType::F32, 1000));
  expect_add_rejected(b, kN, kGrid, kTg, "buffer 'c' is bound but the kernel has no buffer parameter of that name");
  // A scalar's name is not a buffer parameter either.
  b.back().first = "n";
  expect_add_rejected(b, kN, kGrid, kTg, "buffer 'n' is bound but the kernel has no buffer parameter of that name");
}

TEST_F(Dispatch, RejectsBufferBoundTwice) {
  Bindings b = add_buffers(1000);
  b.emplace_back("a", ctx().alloc(DType::F32, 1000));
  expect_add_rejected(b, kN, kGrid, kTg, "buffer parameter 'a' is bound twice");
}

TEST_F(Dispatch, RejectsEmptyDeviceBuffer) {
  Bindings b = add_buffers(1000);
  b[1].second = DeviceBuffer();
  expect_add_rejected(b, kN, kGrid, kTg, "buffer parameter 'b' is bound to an empty DeviceBuffer");
}

TEST_F(Dispatch, RejectsBufferOfWrongDtype) {
  Bindings b = add_buffers(1000);
  b[0].second = ctx().alloc(DType::F16, 1000);
  expect_add_rejected(b, kN, kGrid, kTg, "buffer 'a' holds f16 but the parameter is buf<f32>");
}

TEST_F(Dispatch, RejectsBufferSmallerThanExtent) {
  Bindings b = add_buffers(1000);
  b[2].second = ctx().alloc(DType::F32, 999);
  expect_add_rejected(b, kN, kGrid, kTg, "buffer 'out' has 999 elements but the kernel may touch 1000 (extent n)");

  // A two-factor extent names its formula.
  Bindings r = {{"x", ctx().alloc(DType::F32, 3 * 16 - 1)},
                {"w", ctx().alloc(DType::F32, 16)},
                {"out", ctx().alloc(DType::F32, 3 * 16)}};
  std::string msg = rejection([&] {
    ctx().dispatch_with_grid("iron_rmsnorm", DType::F32, r, {{"rows", 3}, {"d", 16}, {"eps", 1e-6}}, {3, 1, 1},
                             {info().lane_width, 1, 1});
  });
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "buffer 'x' has 47 elements but the kernel may touch 48 (extent rows*d)",
                      msg);
}

// --- constexprs -------------------------------------------------------------------------------

TEST_F(Dispatch, RejectsNegativeI32Extent) {
  // -5 is a valid i32, but not a buffer size.
  ir::Kernel k =
      trace_kernel(KernelDecl{"dispatch_test_i32_extent", &i32_extent_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  DeviceBuffer out = ctx().alloc(DType::F32, 16);
  std::string msg = rejection(
      [&] { ctx().dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"n", -5}}, {1, 1, 1}, {16, 1, 1}); });
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "constexpr 'n' is negative but sizes buffer 'out'", msg);
  EXPECT_EQ(count_of(msg, "\n  - "), 1u) << msg;
}

TEST_F(Dispatch, RejectsMissingConstexpr) {
  expect_add_rejected(add_buffers(1000), {}, kGrid, kTg, "constexpr 'n' (u32) is not set");
}

TEST_F(Dispatch, RejectsNonIntegerConstexpr) {
  expect_add_rejected(add_buffers(1000), {{"n", 1.5}}, kGrid, kTg,
                      "constexpr 'n' = 1.5 is not a u32 (a whole number in [0, 2^32-1])");
}

TEST_F(Dispatch, RejectsNegativeU32Constexpr) {
  expect_add_rejected(add_buffers(1000), {{"n", -1}}, kGrid, kTg, "constexpr 'n' = -1 is not a u32");
}

TEST_F(Dispatch, RejectsUnknownConstexprName) {
  expect_add_rejected(add_buffers(1000), {{"n", 1000}, {"m", 1}}, kGrid, kTg,
                      "constexpr 'm' is set but the kernel has no scalar parameter of that name");
  // A buffer's name is not a scalar parameter either.
  expect_add_rejected(add_buffers(1000), {{"n", 1000}, {"a", 1}}, kGrid, kTg,
                      "constexpr 'a' is set but the kernel has no scalar parameter of that name");
}

// --- behaviour around rejection ---------------------------------------------------------------

TEST_F(Dispatch, ReportsEveryProblemAtOnce) {
  Bindings b = add_buffers(1000);
  b.erase(b.begin());  // no "a"
  std::string msg = rejection([&] {
    ctx().dispatch_with_grid("iron_add", DType::F32, b, {{"n", 1.5}}, {0, 1, 1}, kTg);
  });
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "grid {0, 1, 1} has a zero dimension", msg);
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "constexpr 'n' = 1.5 is not a u32", msg);
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "buffer parameter 'a' is not bound", msg);
  EXPECT_EQ(count_of(msg, "\n  - "), 3u) << msg;
}

TEST_F(Dispatch, ValidateDispatchThrowsTheSameMessage) {
  Bindings b = add_buffers(1000);
  const ir::Kernel& k = kernel_ir("iron_add");
  std::string via_validate = rejection([&] { ctx().validate_dispatch(k, DType::F32, b, {{"n", -1}}, kGrid, kTg); });
  std::string via_dispatch = rejection([&] { ctx().dispatch_with_grid(k, DType::F32, b, {{"n", -1}}, kGrid, kTg); });
  EXPECT_FALSE(via_validate.empty());
  EXPECT_EQ(via_validate, via_dispatch);
}

TEST_F(Dispatch, RejectedDispatchLaunchesNothingAndLosesNothing) {
  const uint32_t n = 1000;
  Bindings b = add_buffers(n);
  std::vector<float> ones(n, 1.0f), sentinel(n, -7.0f), got(n);
  ctx().upload(b[0].second, ones.data(), n * 4);
  ctx().upload(b[1].second, ones.data(), n * 4);
  ctx().upload(b[2].second, sentinel.data(), n * 4);
  // A threadgroup shape never compiled before: a rejected dispatch must not even build a pipeline.
  Dim3 fresh_tg{200, 1, 1};
  size_t cached = ctx().pipeline_cache_size();
  EXPECT_FALSE(rejection([&] {
                 ctx().dispatch_with_grid("iron_add", DType::F32, b, {{"n", n}, {"bogus", 1}}, {5, 1, 1}, fresh_tg);
               }).empty());
  EXPECT_EQ(ctx().pipeline_cache_size(), cached);
  ctx().synchronize();
  ctx().download(b[2].second, got.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], -7.0f) << "a rejected dispatch wrote element " << i;

  // The same context and buffers still work.
  ctx().dispatch_with_grid("iron_add", DType::F32, b, {{"n", n}}, {5, 1, 1}, fresh_tg);
  ctx().synchronize();
  ctx().download(b[2].second, got.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f) << "element " << i;
  run_add_and_check(ctx(), 4097, kTg);
}

// --- pipeline cache ---------------------------------------------------------------------------

TEST_F(Dispatch, PipelineCacheReusesKernelDtypeThreadgroup) {
  Bindings b = add_buffers(1000);
  Dim3 tg{96, 1, 1};  // a shape no other test uses, so the first dispatch compiles
  auto dispatch = [&](Dim3 shape, const Bindings& bind, DType dt) {
    ctx().dispatch_with_grid("iron_add", dt, bind, kN, {(1000 + shape.x - 1) / shape.x, 1, 1}, shape);
  };
  size_t before = ctx().pipeline_cache_size();
  dispatch(tg, b, DType::F32);
  size_t after_first = ctx().pipeline_cache_size();
  EXPECT_EQ(after_first, before + 1);
  dispatch(tg, b, DType::F32);
  dispatch(tg, b, DType::F32);
  EXPECT_EQ(ctx().pipeline_cache_size(), after_first);
  // Another dtype is another pipeline; Vulkan bakes the threadgroup shape in, so another shape is too.
  dispatch(tg, add_buffers(1000, DType::F16), DType::F16);
  EXPECT_EQ(ctx().pipeline_cache_size(), after_first + 1);
  dispatch({160, 1, 1}, b, DType::F32);
  EXPECT_EQ(ctx().pipeline_cache_size(), after_first + 2);
}
