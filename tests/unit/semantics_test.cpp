// docs/semantics.md end to end: kernels whose inputs are the edge cases of each op (division by
// zero, INT_MIN / -1, negative remainders, shifts >= 32, NaN / +-Inf / out-of-range float->int
// casts, min/max of signed zeros and NaNs, lane reductions over NaN lanes) run on the
// interpreter (unoptimized and through the pass pipeline, so const_fold is exercised) and on the
// Vulkan device (lavapipe in CI), and every output must agree bit for bit. Two NaNs count as
// equal (a NaN's payload is not specified); NaN against a number never does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "device_run.hpp"
#include "ir_text.hpp"

using namespace iron;
using iron::test::Buf;
using iron::test::bits_of;
using iron::test::expect_same;
using iron::test::is_nan_bits;
using iron::test::is_subnormal_bits;
using iron::test::parse_verified;

namespace {

constexpr uint32_t kN = 128;  // threads (and elements per buffer): 4 lane groups of 32, 16 of 8

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// One threadgroup of kN threads.
const test::Launch kOneGroup{{1, 1, 1}, {kN, 1, 1}, false};
std::vector<Buf> run_interp(const ir::Kernel& k, std::vector<Buf> bufs, uint32_t lane_width) {
  return test::run_interp(k, std::move(bufs), lane_width, kOneGroup);
}
std::vector<Buf> run_device(Context& ctx, const ir::Kernel& k, std::vector<Buf> bufs) {
  return test::run_device(ctx, k, std::move(bufs), kOneGroup);
}

std::vector<uint32_t> f32_words(const std::vector<float>& v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(bits_of(f));
  out.resize(kN, bits_of(1.0f));
  return out;
}
std::vector<uint32_t> i32_words(const std::vector<int32_t>& v, int32_t fill) {
  std::vector<uint32_t> out;
  for (int32_t i : v) out.push_back(uint32_t(i));
  out.resize(kN, uint32_t(fill));
  return out;
}

// Every test runs on Vulkan (lavapipe in CI: a missing device fails) and on CUDA (skipped with
// the reason where there is no NVIDIA driver; run it on the GPU machine).
class Semantics : public test::DeviceTest {
 protected:
  // Interpreter (raw and optimized) against the device, at the device's lane width.
  static void check_all_backends(const ir::Kernel& k, const std::vector<Buf>& bufs, const std::string& what) {
    uint32_t lanes = ctx().info().lane_width;
    std::vector<Buf> want = run_interp(k, bufs, lanes);
    expect_same(want, run_interp(passes::optimize(k), bufs, lanes), what + " (interpreter, optimized)");
    expect_same(want, run_device(ctx(), k, bufs), what + " (" + ctx().info().name + ")",
                ctx().info().f32_denormals_flushed);
  }
};

}  // namespace

// Integer division and remainder: C truncation, x / 0 = x, x % 0 = 0, INT_MIN / -1 = INT_MIN,
// INT_MIN % -1 = 0. GLSL's % on a negative dividend used to follow the divisor's sign (OpSMod).
TEST_P(Semantics, IntegerDivisionAndRemainderEdgesAgree) {
  ir::Kernel k = parse_verified(
      "kernel sem_div mode=Elementwise {\n"
      "  param a: in buf<i32> extent=128\n"
      "  param b: in buf<i32> extent=128\n"
      "  param q: out buf<i32> extent=128\n"
      "  param r: out buf<i32> extent=128\n"
      "  param uq: out buf<u32> extent=128\n"
      "  param ur: out buf<u32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<a> %0 : i32\n"
      "  %2 = load<b> %0 : i32\n"
      "  %3 = div %1, %2 : i32\n"
      "  store<q> %0, %3\n"
      "  %4 = rem %1, %2 : i32\n"
      "  store<r> %0, %4\n"
      "  %5 = cast %1 : u32\n"
      "  %6 = cast %2 : u32\n"
      "  %7 = div %5, %6 : u32\n"
      "  store<uq> %0, %7\n"
      "  %8 = rem %5, %6 : u32\n"
      "  store<ur> %0, %8\n"
      "}\n");
  const int32_t mn = INT32_MIN;
  std::vector<Buf> bufs = {
      {"a", DType::I32, false, i32_words({-7, 7, -7, 7, 5, -5, mn, mn, mn, 0, -1, 2147483647, 9, -9}, 3)},
      {"b", DType::I32, false, i32_words({2, -2, -2, 2, 0, 0, -1, 1, 0, 0, 0, -1, -1, mn}, 2)},
      {"q", DType::I32, true, std::vector<uint32_t>(kN)},
      {"r", DType::I32, true, std::vector<uint32_t>(kN)},
      {"uq", DType::U32, true, std::vector<uint32_t>(kN)},
      {"ur", DType::U32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  // The rule itself, not only agreement: -7 % 2 = -1 (not 1), 5 / 0 = 5, INT_MIN / -1 = INT_MIN.
  EXPECT_EQ(int32_t(want[3].words[0]), -1);
  EXPECT_EQ(int32_t(want[3].words[1]), 1);
  EXPECT_EQ(int32_t(want[2].words[4]), 5);
  EXPECT_EQ(int32_t(want[3].words[4]), 0);
  EXPECT_EQ(int32_t(want[2].words[6]), mn);
  EXPECT_EQ(int32_t(want[3].words[6]), 0);
  check_all_backends(k, bufs, "div/rem");
}

TEST_P(Semantics, ShiftsOf32OrMoreAndWrappingAbsNegAgree) {
  ir::Kernel k = parse_verified(
      "kernel sem_shift mode=Elementwise {\n"
      "  param a: in buf<i32> extent=128\n"
      "  param n: in buf<i32> extent=128\n"
      "  param l: out buf<i32> extent=128\n"
      "  param r: out buf<i32> extent=128\n"
      "  param ur: out buf<u32> extent=128\n"
      "  param an: out buf<i32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<a> %0 : i32\n"
      "  %2 = load<n> %0 : i32\n"
      "  %3 = shl %1, %2 : i32\n"
      "  store<l> %0, %3\n"
      "  %4 = shr %1, %2 : i32\n"
      "  store<r> %0, %4\n"
      "  %5 = cast %1 : u32\n"
      "  %6 = shr %5, %2 : u32\n"
      "  store<ur> %0, %6\n"
      "  %7 = abs %1 : i32\n"
      "  %8 = neg %1 : i32\n"
      "  %9 = add %7, %8 : i32\n"
      "  store<an> %0, %9\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"a", DType::I32, false, i32_words({-8, -8, 8, -1, 1, -8, 12345, -12345, INT32_MIN, INT32_MAX}, -3)},
      {"n", DType::I32, false, i32_words({1, 32, 32, 31, 33, -1, 100, 0x7fffffff, 1, 1}, 40)},
      {"l", DType::I32, true, std::vector<uint32_t>(kN)},
      {"r", DType::I32, true, std::vector<uint32_t>(kN)},
      {"ur", DType::U32, true, std::vector<uint32_t>(kN)},
      {"an", DType::I32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(int32_t(want[3].words[1]), -1);  // -8 >> 32: sign fill
  EXPECT_EQ(int32_t(want[2].words[1]), 0);   // -8 << 32
  EXPECT_EQ(want[5].words[8], 0u);           // abs(INT_MIN) + -INT_MIN = INT_MIN + INT_MIN, wrapped
  check_all_backends(k, bufs, "shifts");
}

// NaN, +-Inf and out-of-range values: truncating, saturating, NaN -> 0. Vulkan used to give
// INT_MIN / UINT_MAX for these.
TEST_P(Semantics, FloatToIntCastsOfNanInfAndOutOfRangeAgree) {
  ir::Kernel k = parse_verified(
      "kernel sem_f2i mode=Elementwise {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param i: out buf<i32> extent=128\n"
      "  param u: out buf<u32> extent=128\n"
      "  param b: out buf<u32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = cast %1 : i32\n"
      "  store<i> %0, %2\n"
      "  %3 = cast %1 : u32\n"
      "  store<u> %0, %3\n"
      "  %4 = cast %1 : bool\n"
      "  %5 = cast %4 : u32\n"
      "  store<b> %0, %5\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false,
       f32_words({kNan, -kNan, kInf, -kInf, 3e9f, -3e9f, 5e9f, -1.5f, 2.7f, -2.7f, 2147483648.0f, -2147483648.0f,
                  4294967040.0f, 4294967296.0f, -0.0f, 0.0f, 1e-45f, -0.99f})},
      {"i", DType::I32, true, std::vector<uint32_t>(kN)},
      {"u", DType::U32, true, std::vector<uint32_t>(kN)},
      {"b", DType::U32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[1].words[0], 0u);                        // NaN -> 0
  EXPECT_EQ(int32_t(want[1].words[2]), INT32_MAX);        // +Inf saturates
  EXPECT_EQ(int32_t(want[1].words[3]), INT32_MIN);
  EXPECT_EQ(want[2].words[6], UINT32_MAX);
  EXPECT_EQ(want[3].words[0], 1u);                        // NaN != 0: true
  check_all_backends(k, bufs, "float->int");
}

// min(-0, +0) = -0, max(-0, +0) = +0, one NaN operand loses, two give NaN.
TEST_P(Semantics, FloatMinMaxOfSignedZerosAndNansAgree) {
  ir::Kernel k = parse_verified(
      "kernel sem_minmax mode=Elementwise {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param y: in buf<f32> extent=128\n"
      "  param lo: out buf<f32> extent=128\n"
      "  param hi: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = load<y> %0 : f32\n"
      "  %3 = min %1, %2 : f32\n"
      "  store<lo> %0, %3\n"
      "  %4 = max %1, %2 : f32\n"
      "  store<hi> %0, %4\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words({-0.0f, 0.0f, kNan, 1.0f, kNan, -kInf, kInf, -0.0f, 1e-40f})},
      {"y", DType::F32, false, f32_words({0.0f, -0.0f, 1.0f, kNan, kNan, kNan, -kInf, -0.0f, -1e-40f})},
      {"lo", DType::F32, true, std::vector<uint32_t>(kN)},
      {"hi", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[2].words[0], 0x80000000u);  // min(-0, +0) = -0
  EXPECT_EQ(want[2].words[1], 0x80000000u);
  EXPECT_EQ(want[3].words[0], 0u);           // max(-0, +0) = +0
  EXPECT_EQ(want[3].words[1], 0u);
  EXPECT_EQ(want[2].words[2], bits_of(1.0f));
  EXPECT_TRUE(is_nan_bits(want[3].words[4]));
  check_all_backends(k, bufs, "min/max");
}

// Float negation flips the sign bit, also of a zero built from a bool: NVRTC rewrote
// `-(c ? 1.0f : 0.0f)` into a conversion of an integer and returned +0 for -0 (seen on the H200
// by the cross-backend fuzzer, seed 3852). The dialects now negate through the bits.
TEST_P(Semantics, NegationOfAZeroFromABoolKeepsItsSign) {
  ir::Kernel k = parse_verified(
      "kernel sem_neg_bool mode=Elementwise dtypes=f32,f16,bf16 {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param y: out buf<f32> extent=128\n"
      "  param z: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = const<1> : f32\n"
      "  %3 = eq %1, %2 : bool\n"
      "  %4 = cast %3 : bf16\n"
      "  %5 = neg %4 : bf16\n"
      "  %6 = cast %5 : f32\n"
      "  store<y> %0, %6\n"
      "  %7 = cast %3 : f32\n"
      "  %8 = neg %7 : f32\n"
      "  store<z> %0, %8\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words({1.0f, 0.0f, -0.0f, kNan, 2.0f})},
      {"y", DType::F32, true, std::vector<uint32_t>(kN)},
      {"z", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[1].words[0], bits_of(-1.0f));
  EXPECT_EQ(want[1].words[1], 0x80000000u);  // -(0.0) = -0
  EXPECT_EQ(want[2].words[1], 0x80000000u);
  check_all_backends(k, bufs, "neg of a bool-made zero");
}

// Lane reductions: the xor butterfly in the interpreter's order, lane_max with the float max
// rule (all-NaN lanes give NaN, a NaN lane loses to a number), f32 sums rounded alike.
TEST_P(Semantics, LaneReductionsOverNanAndCancellingLanesAgree) {
  ir::Kernel k = parse_verified(
      "kernel sem_lanes mode=Reduction {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param mx: out buf<f32> extent=128\n"
      "  param sm: out buf<f32> extent=128\n"
      "  %0 = local_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = lane_max %1 : f32\n"
      "  store<mx> %0, %2\n"
      "  %3 = lane_sum %1 : f32\n"
      "  store<sm> %0, %3\n"
      "}\n");
  uint32_t w = ctx().info().lane_width;
  ASSERT_TRUE(w >= 4 && kN % w == 0) << "lane width " << w;
  std::vector<float> x(kN);
  for (uint32_t l = 0; l < kN; ++l) {
    uint32_t g = l / w, j = l % w;
    g %= 4;
    if (g == 0) x[l] = kNan;                                   // all-NaN lanes
    else if (g == 1) x[l] = j == 1 ? 3.0f : kNan;              // one number among NaNs
    else if (g == 2) x[l] = j % 2 ? -0.0f : 0.0f;              // signed zeros
    else x[l] = j == 0 ? 1e8f : j == w / 2 ? -1e8f : 1.0f;     // cancellation: the order shows
  }
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words(x)},
      {"mx", DType::F32, true, std::vector<uint32_t>(kN)},
      {"sm", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, w);
  EXPECT_TRUE(is_nan_bits(want[1].words[0]));
  EXPECT_EQ(want[1].words[w], bits_of(3.0f));
  EXPECT_EQ(want[1].words[2 * w], 0u);  // max over -0 and +0 is +0
  check_all_backends(k, bufs, "lane reductions");
}

// A literal expression keeps its value at every optimization level: const_fold computes what the
// device computes (casts of NaN, +-Inf and out-of-range values; division by zero; wide shifts;
// min of signed zeros). The constants are set after parsing so no literal syntax is assumed.
TEST_P(Semantics, LiteralExpressionsDoNotChangeWithTheOptimizationLevel) {
  ir::Kernel k = parse_verified(
      "kernel sem_literals mode=Elementwise {\n"
      "  param i: out buf<i32> extent=128\n"
      "  param u: out buf<u32> extent=128\n"
      "  param f: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<1.0> : f32\n"
      "  %2 = const<1.0> : f32\n"
      "  %3 = const<1.0> : f32\n"
      "  %4 = const<1.0> : f32\n"
      "  %5 = cast %1 : i32\n"
      "  %6 = cast %2 : i32\n"
      "  %7 = cast %3 : u32\n"
      "  %8 = cast %4 : u32\n"
      "  %9 = const<-7> : i32\n"
      "  %10 = const<0> : i32\n"
      "  %11 = const<2> : i32\n"
      "  %12 = rem %9, %11 : i32\n"
      "  %13 = div %9, %10 : i32\n"
      "  %14 = const<40> : u32\n"
      "  %15 = shr %9, %14 : i32\n"
      "  %16 = add %5, %6 : i32\n"
      "  %17 = add %16, %12 : i32\n"
      "  %18 = add %17, %13 : i32\n"
      "  %19 = add %18, %15 : i32\n"
      "  store<i> %0, %19\n"
      "  %20 = add %7, %8 : u32\n"
      "  store<u> %0, %20\n"
      "  %21 = const<0.0> : f32\n"
      "  %22 = const<0.0> : f32\n"
      "  %23 = min %21, %22 : f32\n"
      "  store<f> %0, %23\n"
      "}\n");
  // %1 = NaN (-> 0), %2 = -Inf (-> INT_MIN), %3 = 5e9 (-> UINT32_MAX), %4 = NaN (-> 0), %21 = -0.
  std::vector<ir::Id> f32_consts;
  ir::walk(k, [&](ir::Id id) {
    if (k.insts[id].op == ir::Op::Const && k.insts[id].type == DType::F32) f32_consts.push_back(id);
  });
  ASSERT_EQ(f32_consts.size(), 6u);
  const double values[] = {kNan, -kInf, 5e9, kNan, -0.0, 0.0};
  for (size_t i = 0; i < 6; ++i) k.insts[f32_consts[i]].set_float(ir::Attr::Value, values[i]);
  ir::Diagnostics d;
  ASSERT_TRUE(ir::verify(k, d)) << d.render(k);
  std::vector<Buf> bufs = {
      {"i", DType::I32, true, std::vector<uint32_t>(kN)},
      {"u", DType::U32, true, std::vector<uint32_t>(kN)},
      {"f", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  // 0 + INT_MIN + (-1) + (-7) + (-1), wrapping.
  EXPECT_EQ(want[0].words[0], uint32_t(INT32_MIN) - 9u);
  EXPECT_EQ(want[1].words[0], UINT32_MAX);
  EXPECT_EQ(want[2].words[0], 0x80000000u);
  // The optimized kernel is all constants: const_fold decided every value.
  ir::Kernel opt = passes::optimize(k);
  size_t casts = 0;
  ir::walk(opt, [&](ir::Id id) {
    ir::Op op = opt.insts[id].op;
    casts += op == ir::Op::Cast || op == ir::Op::Rem || op == ir::Op::Div || op == ir::Op::Min;
  });
  EXPECT_EQ(casts, 0u) << ir::print(opt);
  check_all_backends(k, bufs, "literals");
}

// f32 add, mul and div round to nearest even with denormals kept (inputs, products and sums
// below 2^-126 are not flushed to zero), and Inf / NaN follow IEEE (0 / 0, Inf - Inf ...).
TEST_P(Semantics, DenormalsAndIeeeSpecialValuesAgree) {
  // A Vulkan driver that flushes f32 subnormals (NVIDIA's; measured by the device's probe)
  // cannot be asked to keep them: docs/semantics.md#vulkan-drivers records it.
  if (ctx().info().f32_denormals_flushed)
    GTEST_SKIP() << ctx().info().name << " flushes f32 subnormals (" << ctx().info().float_controls
                 << "): documented in docs/semantics.md#vulkan-drivers";
  ir::Kernel k = parse_verified(
      "kernel sem_denorm mode=Elementwise {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param y: in buf<f32> extent=128\n"
      "  param p: out buf<f32> extent=128\n"
      "  param s: out buf<f32> extent=128\n"
      "  param q: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = load<y> %0 : f32\n"
      "  %3 = mul %1, %2 : f32\n"
      "  store<p> %0, %3\n"
      "  %4 = add %1, %2 : f32\n"
      "  store<s> %0, %4\n"
      "  %5 = div %1, %2 : f32\n"
      "  store<q> %0, %5\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words({1e-40f, 1e-20f, 1e-40f, 3e-39f, 1.0f, 1.0f, 0.0f, -0.0f, kInf})},
      {"y", DType::F32, false, f32_words({1.0f, 1e-20f, 1e-40f, -1e-39f, 3.0f, 0.0f, 0.0f, 0.0f, kInf})},
      {"p", DType::F32, true, std::vector<uint32_t>(kN)},
      {"s", DType::F32, true, std::vector<uint32_t>(kN)},
      {"q", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  check_all_backends(k, bufs, "denormals");
}

// x + 0.0, x * 0.0 and 0.0 - x with a literal zero: lavapipe's code generator folds these to x,
// 0 and -x (wrong for -0, NaN, +-Inf, negative x) whenever it sees the constant.
TEST_P(Semantics, ArithmeticWithALiteralZeroKeepsIeeeResults) {
  ir::Kernel k = parse_verified(
      "kernel sem_zero mode=Elementwise {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param a: out buf<f32> extent=128\n"
      "  param m: out buf<f32> extent=128\n"
      "  param s: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = const<0.0> : f32\n"
      "  %3 = add %1, %2 : f32\n"
      "  store<a> %0, %3\n"
      "  %4 = mul %1, %2 : f32\n"
      "  store<m> %0, %4\n"
      "  %5 = sub %2, %1 : f32\n"
      "  store<s> %0, %5\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words({-0.0f, 0.0f, -1.0f, kInf, -kInf, kNan, 3.0f})},
      {"a", DType::F32, true, std::vector<uint32_t>(kN)},
      {"m", DType::F32, true, std::vector<uint32_t>(kN)},
      {"s", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[1].words[0], 0u);           // -0 + 0 = +0
  EXPECT_EQ(want[2].words[2], 0x80000000u);  // -1 * 0 = -0
  EXPECT_TRUE(is_nan_bits(want[2].words[3]));  // inf * 0 = NaN
  EXPECT_EQ(want[3].words[1], 0u);           // 0 - 0 = +0
  check_all_backends(k, bufs, "literal zero");
}

// A zero made by casting an integer or bool constant: -x * float(0) is -0 for positive x and
// float(false) + -0 is +0. A cast to the generic T stays in the IR (const_fold cannot fold it
// without the dtype), and lavapipe folded the converted constant into the multiply or add as it
// folds a literal +0.0 (giving +0 and -0).
TEST_P(Semantics, ArithmeticWithACastZeroKeepsIeeeResults) {
  ir::Kernel k = parse_verified(
      "kernel sem_zcast mode=Elementwise dtypes=f32 {\n"
      "  param x: in buf<T> extent=128\n"
      "  param m: out buf<T> extent=128\n"
      "  param a: out buf<T> extent=128\n"
      "  param u: out buf<T> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : T\n"
      "  %2 = const<0> : i32\n"
      "  %3 = cast %2 : T\n"
      "  %4 = neg %1 : T\n"
      "  %5 = mul %4, %3 : T\n"
      "  store<m> %0, %5\n"
      "  %6 = const<0> : bool\n"
      "  %7 = cast %6 : T\n"
      "  %8 = const<-0.0> : T\n"
      "  %9 = add %7, %8 : T\n"
      "  store<a> %0, %9\n"
      "  %10 = const<0> : u32\n"
      "  %11 = cast %10 : T\n"
      "  %12 = add %1, %11 : T\n"
      "  store<u> %0, %12\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words({2.0f, -0.0f, 0.0f, -3.0f, kInf, kNan})},
      {"m", DType::F32, true, std::vector<uint32_t>(kN)},
      {"a", DType::F32, true, std::vector<uint32_t>(kN)},
      {"u", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[1].words[0], 0x80000000u);  // -2 * 0 = -0
  EXPECT_EQ(want[2].words[0], 0u);           // 0 + -0 = +0
  EXPECT_EQ(want[3].words[1], 0u);           // -0 + 0 = +0
  check_all_backends(k, bufs, "cast zero");
}

// x - (-0.0) is x except for x = -0, where it is +0; lavapipe folded it to x.
TEST_P(Semantics, SubtractingALiteralNegativeZeroKeepsIeeeResults) {
  ir::Kernel k = parse_verified(
      "kernel sem_nzero mode=Elementwise {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param s: out buf<f32> extent=128\n"
      "  param a: out buf<f32> extent=128\n"
      "  param m: out buf<f32> extent=128\n"
      "  param r: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = const<-0.0> : f32\n"
      "  %3 = sub %1, %2 : f32\n"
      "  store<s> %0, %3\n"
      "  %4 = add %1, %2 : f32\n"
      "  store<a> %0, %4\n"
      "  %5 = mul %1, %2 : f32\n"
      "  store<m> %0, %5\n"
      "  %6 = sub %2, %1 : f32\n"
      "  store<r> %0, %6\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words({-0.0f, 0.0f, -1.0f, kInf, -kInf, kNan, 3.0f})},
      {"s", DType::F32, true, std::vector<uint32_t>(kN)},
      {"a", DType::F32, true, std::vector<uint32_t>(kN)},
      {"m", DType::F32, true, std::vector<uint32_t>(kN)},
      {"r", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[1].words[0], 0u);           // -0 - -0 = +0
  EXPECT_EQ(want[2].words[0], 0x80000000u);  // -0 + -0 = -0
  EXPECT_EQ(want[3].words[2], 0u);           // -1 * -0 = +0
  check_all_backends(k, bufs, "negative zero");
}

// fma with an exact zero result: the sum's sign follows IEEE (+0 unless both the product and c
// are -0). fma(-0, -0, -0) is +0: lavapipe folded the literal -0.0 operands and gave -0 (bf16,
// whose fma is the driver's own, and f32, whose fma is emulated).
TEST_P(Semantics, FmaOfAnExactZeroHasTheIeeeSign) {
  ir::Kernel k = parse_verified(
      "kernel sem_fma_zero mode=Elementwise {\n"
      "  param a: in buf<f32> extent=128\n"
      "  param b: in buf<f32> extent=128\n"
      "  param c: in buf<f32> extent=128\n"
      "  param r: out buf<f32> extent=128\n"
      "  param z: out buf<f32> extent=128\n"
      "  param h: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<a> %0 : f32\n"
      "  %2 = load<b> %0 : f32\n"
      "  %3 = load<c> %0 : f32\n"
      "  %4 = fma %1, %2, %3 : f32\n"
      "  store<r> %0, %4\n"
      "  %5 = const<-0.0> : f32\n"
      "  %6 = fma %5, %5, %3 : f32\n"
      "  store<z> %0, %6\n"
      "  %7 = cast %3 : bf16\n"
      "  %8 = const<-0.0> : bf16\n"
      "  %9 = fma %8, %8, %7 : bf16\n"
      "  %10 = cast %9 : f32\n"
      "  store<h> %0, %10\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"a", DType::F32, false, f32_words({-0.0f, -0.0f, 0.0f, -1.0f, 2.0f, -0x1p-100f, 0x1p-100f, -0.0f, 3.0f})},
      {"b", DType::F32, false, f32_words({1.0f, 1.0f, -1.0f, 0.0f, 3.0f, 0x1p-100f, 0x1p-100f, -0.0f, -0.0f})},
      {"c", DType::F32, false, f32_words({-0.0f, 0.0f, -0.0f, -0.0f, -6.0f, -0.0f, -0.0f, -0.0f, -0.0f})},
      {"r", DType::F32, true, std::vector<uint32_t>(kN)},
      {"z", DType::F32, true, std::vector<uint32_t>(kN)},
      {"h", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[3].words[0], 0x80000000u);  // -0 * 1 + -0 = -0
  EXPECT_EQ(want[3].words[1], 0u);           // -0 * 1 + 0 = +0
  EXPECT_EQ(want[3].words[4], 0u);           // 2 * 3 - 6 = +0
  EXPECT_EQ(want[3].words[5], 0x80000000u);  // -2^-200 rounds to -0
  EXPECT_EQ(want[4].words[0], 0u);           // -0 * -0 + -0 = +0
  EXPECT_EQ(want[5].words[0], 0u);           // the same in bf16
  check_all_backends(k, bufs, "fma zero");
}

// fma rounds once: a * b + c where the product's rounding would change the sum. lavapipe's fma is
// a multiply and an add (two roundings); the GLSL dialect emulates a single rounding there.
TEST_P(Semantics, FmaRoundsOnce) {
  ir::Kernel k = parse_verified(
      "kernel sem_fma mode=Elementwise {\n"
      "  param a: in buf<f32> extent=128\n"
      "  param b: in buf<f32> extent=128\n"
      "  param c: in buf<f32> extent=128\n"
      "  param r: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<a> %0 : f32\n"
      "  %2 = load<b> %0 : f32\n"
      "  %3 = load<c> %0 : f32\n"
      "  %4 = fma %1, %2, %3 : f32\n"
      "  store<r> %0, %4\n"
      "}\n");
  const float e = 1.0f + 0x1p-12f, big = 0x1p100f;
  std::vector<Buf> bufs = {
      {"a", DType::F32, false,
       f32_words({e, e, -e, 0x1p-75f, big, 3.0f, kInf, 0.0f, kNan, 1.0f, 0x1.fffffep127f, 0x1p-140f, 1.5f, -0.0f})},
      {"b", DType::F32, false,
       f32_words({e, -e, e, 0x1p-75f, big, 0.1f, 0.0f, kInf, 1.0f, 1.0f, 2.0f, 0x1p-10f, 0x1p-149f, 0.0f})},
      {"c", DType::F32, false,
       f32_words({-(1.0f + 0x1p-11f), 1.0f + 0x1p-11f, 1.0f + 0x1p-11f, 0x1p-149f, -kInf, -0.3f, 1.0f, 1.0f, 1.0f, -1.0f,
                  -0x1.fffffep127f, 0.0f, 0.0f, 0.0f})},
      {"r", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[3].words[0], bits_of(0x1p-24f));  // two roundings would give 0
  check_all_backends(k, bufs, "fma");
}

// Stores to f16 / bf16 buffers and casts to them round to nearest even, once: ties go to the
// even neighbour, f16 overflow gives infinity, f16 subnormals are kept.
TEST_P(Semantics, SixteenBitRoundingIsToNearestEven) {
  ir::Kernel k = parse_verified(
      "kernel sem_half mode=Elementwise {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param h: out buf<f16> extent=128\n"
      "  param b: out buf<bf16> extent=128\n"
      "  param c: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = cast %1 : f16\n"
      "  store<h> %0, %2\n"
      "  %3 = cast %1 : bf16\n"
      "  store<b> %0, %3\n"
      "  %4 = cast %2 : f32\n"
      "  store<c> %0, %4\n"
      "}\n");
  std::vector<Buf> bufs = {
      {"x", DType::F32, false,
       f32_words({1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65519.0f, 65520.0f, -65520.0f, 0x1p-25f, 0x1.8p-25f, 0x1p-24f,
                  3 * 0x1p-25f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, kInf, -0.0f, 1e-30f,
                  3.0e38f})},
      {"h", DType::F16, true, std::vector<uint32_t>(kN / 2)},
      {"b", DType::BF16, true, std::vector<uint32_t>(kN / 2)},
      {"c", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  std::vector<Buf> want = run_interp(k, bufs, 8);
  EXPECT_EQ(want[1].words[0], 0x3c023c00u);  // ties to even: 1 + 2^-11 -> 1, 1 + 3 * 2^-11 -> 1 + 2^-9
  check_all_backends(k, bufs, "16-bit rounding");
}

// div and sqrt are correctly rounded on every backend (the Vulkan specification alone would
// allow 2.5 ulp for div): 128 quotients and roots spread over the exponent range, bit for bit.
TEST_P(Semantics, DivisionAndSqrtAreCorrectlyRounded) {
  ir::Kernel k = parse_verified(
      "kernel sem_div_sqrt mode=Elementwise {\n"
      "  param x: in buf<f32> extent=128\n"
      "  param y: in buf<f32> extent=128\n"
      "  param q: out buf<f32> extent=128\n"
      "  param r: out buf<f32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = load<y> %0 : f32\n"
      "  %3 = div %1, %2 : f32\n"
      "  store<q> %0, %3\n"
      "  %4 = sqrt %1 : f32\n"
      "  store<r> %0, %4\n"
      "}\n");
  std::vector<float> x(kN), y(kN);
  uint32_t state = 12345u;
  for (uint32_t i = 0; i < kN; ++i) {
    // Mantissas from a fixed LCG, exponents from 2^-60 to 2^60 (quotients stay normal).
    state = state * 1664525u + 1013904223u;
    x[i] = std::ldexp(1.0f + float(state >> 9) * 0x1p-23f, int(i % 121) - 60);
    state = state * 1664525u + 1013904223u;
    y[i] = std::ldexp(1.0f + float(state >> 9) * 0x1p-23f, int((i * 7) % 121) - 60);
  }
  std::vector<Buf> bufs = {
      {"x", DType::F32, false, f32_words(x)},
      {"y", DType::F32, false, f32_words(y)},
      {"q", DType::F32, true, std::vector<uint32_t>(kN)},
      {"r", DType::F32, true, std::vector<uint32_t>(kN)},
  };
  check_all_backends(k, bufs, "div/sqrt");
}

namespace {

// Counts to n in one loop, or to n in each of two loops one after the other, per thread.
ir::Kernel counting_kernel(bool two_loops) {
  std::string text =
      "kernel sem_count mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param out: out buf<u32> extent=128\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = param<n> : u32\n"
      "  %2 = const<0> : u32\n"
      "  %3 = const<1> : u32\n"
      "  %4 = var %2 : u32\n"
      "  %5 = for %2, %1, %3 : u32 @\"count.cpp\":7 {\n"
      "    %6 = var_load %4 : u32\n"
      "    %7 = add %6, %3 : u32\n"
      "    var_store %4, %7\n"
      "  }\n";
  if (two_loops)
    text +=
        "  %8 = for %2, %1, %3 : u32 @\"count.cpp\":12 {\n"
        "    %9 = var_load %4 : u32\n"
        "    %10 = add %9, %3 : u32\n"
        "    var_store %4, %10\n"
        "  }\n";
  text +=
      "  %11 = var_load %4 : u32\n"
      "  store<out> %0, %11\n"
      "}\n";
  return parse_verified(text);
}

uint32_t count_on(Context& ctx, const ir::Kernel& k, uint32_t n) {
  DeviceBuffer out = ctx.alloc(DType::U32, kN);
  ctx.dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"n", double(n)}}, {1, 1, 1}, {kN, 1, 1});
  ctx.synchronize();
  std::vector<uint32_t> got(kN);
  ctx.download(out, got.data(), kN * 4);
  for (uint32_t v : got) EXPECT_EQ(v, got[0]);
  return got[0];
}

}  // namespace

// lavapipe ends the loops of a shader invocation after 65,535 iterations in all: a for_ to
// 100,000 used to return 65,535 silently. Now the run fails and names the limit and the loop;
// loops under the limit, and every loop on other drivers, give the exact count.
TEST_P(Semantics, LoopsPastLavapipesLimitFailNamingItNeverAWrongCount) {
  const bool lavapipe = ctx().info().driver.find("llvmpipe") != std::string::npos ||
                        ctx().info().name.find("llvmpipe") != std::string::npos;
  ir::Kernel one = counting_kernel(false), two = counting_kernel(true);
  EXPECT_EQ(count_on(ctx(), one, 60000), 60000u);
  EXPECT_EQ(count_on(ctx(), two, 30000), 60000u);
  for (auto [k, n, line] : {std::tuple{&one, 100000u, "count.cpp:7"}, std::tuple{&two, 40000u, "count.cpp:12"}}) {
    std::string error;
    uint32_t got = 0;
    try {
      got = count_on(ctx(), *k, n);
    } catch (const Error& e) {
      error = e.what();
    }
    if (!lavapipe) {
      EXPECT_EQ(error, "");
      EXPECT_EQ(got, k == &one ? n : 2 * n);
      continue;
    }
    EXPECT_NE(error.find("65,535"), std::string::npos) << error;
    EXPECT_NE(error.find("lavapipe"), std::string::npos) << error;
    EXPECT_NE(error.find(line), std::string::npos) << error;
    EXPECT_EQ(got, 0u);  // nothing returned, in particular not 65,535
  }
  // The context stays usable after the error.
  EXPECT_EQ(count_on(ctx(), one, 1000), 1000u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Semantics, ::testing::Values(Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return std::string(info.param == Backend::Vulkan ? "Vulkan" : "Cuda");
                         });

namespace {

int64_t ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t(INT32_MIN) - i : int64_t(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

}  // namespace

// The transcendentals stay within docs/semantics.md's bounds of the interpreter (glibc, within
// an ulp of the exact result) over 2^16 inputs each, and their special values (+-Inf, NaN, +-0)
// are exact.
TEST_P(Semantics, TranscendentalsStayWithinTheStatedBounds) {
  constexpr uint32_t n = 1u << 16, tg = 128;
  for (const char* op : {"exp", "log", "tanh", "rsqrt", "sqrt"}) {
    const std::string name = op;
    ir::Kernel k = parse_verified("kernel sem_" + name + " mode=Elementwise {\n  param x: in buf<f32> extent=65536\n"
                            "  param y: out buf<f32> extent=65536\n  %0 = thread_id<0> : u32\n"
                            "  %1 = load<x> %0 : f32\n  %2 = " + name + " %1 : f32\n  store<y> %0, %2\n}\n");
    std::vector<float> x(n), want(n), got(n);
    const float specials[] = {kInf, -kInf, kNan, 0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f};
    for (uint32_t i = 0; i < n; ++i) {
      double t = double(i) / n;
      x[i] = name == "exp" ? float(-87.0 + 175.0 * t) : name == "tanh" ? float(-10.0 + 20.0 * t)
                                                                         : float(std::exp(-80.0 + 160.0 * t));
    }
    for (uint32_t i = 0; i < 8; ++i) x[i] = specials[i];
    interp::run(k, DType::F32, {{x.data(), n * 4}, {want.data(), n * 4}}, {}, {n / tg, 1, 1}, {tg, 1, 1}, {});
    DeviceBuffer dx = ctx().alloc(DType::F32, n), dy = ctx().alloc(DType::F32, n);
    ctx().upload(dx, x.data(), n * 4);
    ctx().dispatch_with_grid(k, DType::F32, {{"x", dx}, {"y", dy}}, {}, {n / tg, 1, 1}, {tg, 1, 1});
    ctx().synchronize();
    ctx().download(dy, got.data(), n * 4);
    int failures = 0;
    for (uint32_t i = 0; i < n && failures < 5; ++i) {
      float w = want[i], g = got[i];
      bool ok;
      if (std::isnan(w) || std::isinf(w) || i < 5) ok = (std::isnan(w) && std::isnan(g)) || bits_of(w) == bits_of(g);
      else if (name == "log" && x[i] < 0x1p-126f) ok = true;  // subnormal input: no bound (lavapipe reads 2^-126)
      else if (ctx().info().f32_denormals_flushed && is_subnormal_bits(bits_of(x[i])))
        ok = true;  // a flushing device reads a subnormal input as 0 (docs/semantics.md#vulkan-drivers)
      else if (name == "exp") ok = std::fabs(double(g) - w) <= std::max(0x1p-16 * std::fabs(double(w)), 0x1p-126);
      else if (name == "log" && x[i] >= 0.5f && x[i] <= 2.0f) ok = std::fabs(double(g) - w) <= 0x1p-17;
      else if (name == "log") ok = std::fabs(double(g) - w) <= 0x1p-16 * std::fabs(double(w));
      else if (name == "tanh") ok = std::fabs(double(g) - w) <= 0x1p-20;
      else if (name == "rsqrt") ok = ulp_distance(w, g) <= 3;  // 2 ulp from exact, the interpreter's within 1
      else ok = bits_of(w) == bits_of(g);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << name << "(" << x[i] << ") on " << ctx().info().name << " is " << g << " (0x" << std::hex
                      << bits_of(g) << "), interpreter " << w << " (0x" << bits_of(w) << std::dec << "), "
                      << ulp_distance(w, g) << " ulp";
      }
    }
  }
}
