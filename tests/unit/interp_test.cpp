// The shared scalar semantics (passes/eval.hpp) and the SIMT interpreter (passes/interpreter.hpp)
// on hand-written IR: wraparound, defined division by zero and wide shifts, saturating casts,
// signed-zero min/max, 16-bit rounding; and
// bounds errors, divergent barriers, partial lane groups, the step guard, and exact threadgroup
// reductions at two lane widths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "passes/eval.hpp"
#include "passes/interpreter.hpp"
#include "ir_text.hpp"

using namespace iron;
using iron::test::parse_verified;
using iron::test::group_sum_ir;
using eval::Scalar;
using ir::Op;

namespace {

struct EvalResult {
  bool ok = false;
  Scalar value;
  std::string error;
};

EvalResult ev(Op op, DType result, DType operand, std::vector<Scalar> args) {
  EvalResult r;
  r.ok = eval::eval_pure(op, result, operand, args.data(), int(args.size()), r.value, r.error);
  return r;
}

Scalar F(float f) { return Scalar::of_f32(f); }
Scalar I(int32_t i) { return Scalar::of_i32(i); }
Scalar U(uint32_t u) { return Scalar::of_u32(u); }
Scalar B(bool b) { return Scalar::of_bool(b); }

int32_t eval_i32(Op op, std::vector<Scalar> args) {
  EvalResult r = ev(op, DType::I32, DType::I32, std::move(args));
  EXPECT_TRUE(r.ok) << r.error;
  return r.value.i();
}

std::string run_error(const ir::Kernel& k, DType dtype, const std::vector<interp::BufferArg>& buffers,
                      const std::vector<uint64_t>& scalars, Dim3 grid, Dim3 tg, interp::Options opts = {}) {
  try {
    interp::run(k, dtype, buffers, scalars, grid, tg, opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

template <class T>
interp::BufferArg arg(std::vector<T>& v) {
  return {v.data(), v.size() * sizeof(T)};
}

}  // namespace

// --- eval ----------------------------------------------------------------------------------

TEST(Eval, I32AndU32Wraparound) {
  EXPECT_EQ(eval_i32(Op::Add, {I(INT32_MAX), I(1)}), INT32_MIN);
  EXPECT_EQ(eval_i32(Op::Sub, {I(INT32_MIN), I(1)}), INT32_MAX);
  EXPECT_EQ(eval_i32(Op::Mul, {I(0x10000), I(0x10000)}), 0);
  EXPECT_EQ(eval_i32(Op::Neg, {I(INT32_MIN)}), INT32_MIN);
  EXPECT_EQ(eval_i32(Op::Abs, {I(INT32_MIN)}), INT32_MIN);
  EXPECT_EQ(eval_i32(Op::Abs, {I(-5)}), 5);
  EXPECT_EQ(ev(Op::Sub, DType::U32, DType::U32, {U(0), U(1)}).value.u(), UINT32_MAX);
  EXPECT_EQ(ev(Op::Neg, DType::U32, DType::U32, {U(1)}).value.u(), UINT32_MAX);
  // Signedness decides min/max: -1 is the largest u32.
  EXPECT_EQ(eval_i32(Op::Max, {I(-1), I(1)}), 1);
  EXPECT_EQ(ev(Op::Max, DType::U32, DType::U32, {U(UINT32_MAX), U(1)}).value.u(), UINT32_MAX);
}

TEST(Eval, IntegerDivisionTruncatesAndIsDefinedEverywhere) {
  EXPECT_EQ(eval_i32(Op::Div, {I(-7), I(2)}), -3);
  EXPECT_EQ(eval_i32(Op::Rem, {I(-7), I(2)}), -1);
  EXPECT_EQ(eval_i32(Op::Rem, {I(7), I(-2)}), 1);
  EXPECT_EQ(eval_i32(Op::Rem, {I(-7), I(-2)}), -1);
  EXPECT_EQ(ev(Op::Div, DType::U32, DType::U32, {U(UINT32_MAX), U(2)}).value.u(), 0x7fffffffu);
  // docs/semantics.md: x / 0 = x, x % 0 = 0, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
  EXPECT_EQ(eval_i32(Op::Div, {I(-5), I(0)}), -5);
  EXPECT_EQ(eval_i32(Op::Rem, {I(-5), I(0)}), 0);
  EXPECT_EQ(ev(Op::Div, DType::U32, DType::U32, {U(7), U(0)}).value.u(), 7u);
  EXPECT_EQ(ev(Op::Rem, DType::U32, DType::U32, {U(7), U(0)}).value.u(), 0u);
  EXPECT_EQ(eval_i32(Op::Div, {I(INT32_MIN), I(-1)}), INT32_MIN);
  EXPECT_EQ(eval_i32(Op::Rem, {I(INT32_MIN), I(-1)}), 0);
  EXPECT_EQ(eval_i32(Op::Div, {I(9), I(-1)}), -9);
  EXPECT_EQ(eval_i32(Op::Rem, {I(9), I(-1)}), 0);
}

TEST(Eval, ShiftsAreArithmeticOrLogicalAndDefinedFor32AndMore) {
  EXPECT_EQ(eval_i32(Op::Shr, {I(-8), U(1)}), -4);
  EXPECT_EQ(ev(Op::Shr, DType::U32, DType::U32, {U(0x80000000u), U(31)}).value.u(), 1u);
  EXPECT_EQ(eval_i32(Op::Shl, {I(-1), U(31)}), INT32_MIN);
  // Amounts >= 32 shift every bit out: 0, or the sign fill of an i32 right shift.
  EXPECT_EQ(ev(Op::Shl, DType::U32, DType::U32, {U(1), U(32)}).value.u(), 0u);
  EXPECT_EQ(ev(Op::Shr, DType::U32, DType::U32, {U(0xffffffffu), U(40)}).value.u(), 0u);
  EXPECT_EQ(eval_i32(Op::Shr, {I(-8), U(32)}), -1);
  EXPECT_EQ(eval_i32(Op::Shr, {I(8), U(1000)}), 0);
  EXPECT_EQ(eval_i32(Op::Shl, {I(-1), U(32)}), 0);
  // A negative i32 amount is a huge unsigned one.
  EXPECT_EQ(eval_i32(Op::Shr, {I(-1), I(-1)}), -1);
  EXPECT_EQ(eval_i32(Op::Shl, {I(1), I(-1)}), 0);
}

TEST(Eval, FloatMinMaxOrderSignedZerosAndIgnoreOneNan) {
  auto f2 = [](Op op, float x, float y) { return ev(op, DType::F32, DType::F32, {F(x), F(y)}).value.f(); };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::signbit(f2(Op::Min, -0.0f, 0.0f)));
  EXPECT_TRUE(std::signbit(f2(Op::Min, 0.0f, -0.0f)));
  EXPECT_FALSE(std::signbit(f2(Op::Max, -0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(f2(Op::Max, 0.0f, -0.0f)));
  EXPECT_EQ(f2(Op::Min, nan, 2.0f), 2.0f);
  EXPECT_EQ(f2(Op::Max, 2.0f, nan), 2.0f);
  EXPECT_TRUE(std::isnan(f2(Op::Min, nan, nan)));
  EXPECT_TRUE(std::isnan(f2(Op::Max, nan, nan)));
}

TEST(Eval, FloatToIntCastSaturatesAndMapsNanToZero) {
  auto to = [](DType t, float f) { return ev(Op::Cast, t, DType::F32, {F(f)}).value; };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(to(DType::I32, 3e9f).i(), INT32_MAX);
  EXPECT_EQ(to(DType::I32, -3e9f).i(), INT32_MIN);
  EXPECT_EQ(to(DType::I32, -2147483648.0f).i(), INT32_MIN);
  EXPECT_EQ(to(DType::I32, -2.7f).i(), -2);
  EXPECT_EQ(to(DType::I32, 2.7f).i(), 2);
  EXPECT_EQ(to(DType::I32, nan).i(), 0);
  EXPECT_EQ(to(DType::I32, INFINITY).i(), INT32_MAX);
  EXPECT_EQ(to(DType::U32, -1.5f).u(), 0u);
  EXPECT_EQ(to(DType::U32, 5e9f).u(), UINT32_MAX);
  EXPECT_EQ(to(DType::U32, 4294967040.0f).u(), 4294967040u);
  EXPECT_EQ(to(DType::U32, nan).u(), 0u);
  // int -> int keeps the bits; int -> float rounds to nearest.
  EXPECT_EQ(ev(Op::Cast, DType::U32, DType::I32, {I(-1)}).value.u(), UINT32_MAX);
  EXPECT_EQ(ev(Op::Cast, DType::F32, DType::U32, {U(UINT32_MAX)}).value.f(), 4294967296.0f);
  EXPECT_EQ(ev(Op::Cast, DType::F32, DType::I32, {I(16777217)}).value.f(), 16777216.0f);
}

TEST(Eval, CastTo16BitFloatsRoundsToNearestEven) {
  auto to = [](DType t, float f) { return ev(Op::Cast, t, DType::F32, {F(f)}).value.f(); };
  EXPECT_EQ(to(DType::F16, 1.0f + 0x1p-11f), 1.0f);                   // tie: to even (down)
  EXPECT_EQ(to(DType::F16, 1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);     // tie: to even (up)
  EXPECT_EQ(to(DType::F16, 1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);
  EXPECT_TRUE(std::isinf(to(DType::F16, 65520.0f)));
  EXPECT_EQ(to(DType::F16, 65504.0f), 65504.0f);
  EXPECT_EQ(to(DType::BF16, 1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(to(DType::BF16, 1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  // Widening is the identity: registers are f32 already.
  EXPECT_EQ(ev(Op::Cast, DType::F32, DType::F16, {F(1.0f + 0x1p-11f)}).value.f(), 1.0f + 0x1p-11f);
  EXPECT_EQ(ev(Op::Cast, DType::F16, DType::I32, {I(2049)}).value.f(), 2048.0f);
  // A cast to the generic T depends on the dtype: not evaluable.
  EXPECT_FALSE(ev(Op::Cast, DType::Generic, DType::F32, {F(1.0f)}).ok);
  // Every f16 / bf16 op rounds to its dtype (docs/semantics.md); f32 ops do not.
  EXPECT_EQ(ev(Op::Add, DType::F16, DType::F16, {F(1.0f), F(0x1p-20f)}).value.f(), 1.0f);
  EXPECT_EQ(ev(Op::Add, DType::F32, DType::F32, {F(1.0f), F(0x1p-20f)}).value.f(), 1.0f + 0x1p-20f);
}

TEST(Eval, BoolLogicComparisonsAndNan) {
  auto bin = [](Op op, bool a, bool b) { return ev(op, DType::Bool, DType::Bool, {B(a), B(b)}).value.bits; };
  EXPECT_EQ(bin(Op::And, true, false), 0u);
  EXPECT_EQ(bin(Op::Or, true, false), 1u);
  EXPECT_EQ(bin(Op::Xor, true, true), 0u);
  EXPECT_EQ(ev(Op::Not, DType::Bool, DType::Bool, {B(true)}).value.bits, 0u);
  EXPECT_EQ(ev(Op::Not, DType::I32, DType::I32, {I(0)}).value.i(), -1);
  EXPECT_EQ(ev(Op::Xor, DType::U32, DType::U32, {U(0xf0f0u), U(0xff00u)}).value.u(), 0x0ff0u);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto cmp = [&](Op op, float a, float b) { return ev(op, DType::Bool, DType::F32, {F(a), F(b)}).value.bits; };
  EXPECT_EQ(cmp(Op::Lt, nan, 1.0f), 0u);
  EXPECT_EQ(cmp(Op::Ge, nan, 1.0f), 0u);
  EXPECT_EQ(cmp(Op::Eq, nan, nan), 0u);
  EXPECT_EQ(cmp(Op::Ne, nan, nan), 1u);
  EXPECT_EQ(cmp(Op::Le, -0.0f, 0.0f), 1u);
  EXPECT_EQ(ev(Op::Lt, DType::Bool, DType::I32, {I(-1), I(0)}).value.bits, 1u);
  EXPECT_EQ(ev(Op::Lt, DType::Bool, DType::U32, {U(UINT32_MAX), U(0)}).value.bits, 0u);

  EXPECT_EQ(ev(Op::Cast, DType::Bool, DType::F32, {F(nan)}).value.bits, 1u);
  EXPECT_EQ(ev(Op::Cast, DType::Bool, DType::F32, {F(-0.0f)}).value.bits, 0u);
  EXPECT_EQ(ev(Op::Cast, DType::F32, DType::Bool, {B(true)}).value.f(), 1.0f);
  EXPECT_EQ(ev(Op::Cast, DType::I32, DType::Bool, {B(true)}).value.i(), 1);
  EXPECT_EQ(ev(Op::Select, DType::F32, DType::F32, {B(false), F(1.0f), F(2.0f)}).value.f(), 2.0f);
  // min/max are fmin/fmax: a NaN operand loses.
  EXPECT_EQ(ev(Op::Max, DType::F32, DType::F32, {F(nan), F(1.0f)}).value.f(), 1.0f);
  EXPECT_EQ(ev(Op::Rsqrt, DType::F32, DType::F32, {F(4.0f)}).value.f(), 0.5f);
  EXPECT_FALSE(ev(Op::Exp, DType::I32, DType::I32, {I(1)}).ok);
}

TEST(Eval, ConstValuesAreValuesOfTheirDtype) {
  ir::Inst c;
  c.op = Op::Const;
  c.type = DType::Generic;
  c.set_float(ir::Attr::Value, 0.1);
  EXPECT_EQ(eval::const_value(c, DType::F16).f(), 0.0999755859375f);  // the f16 nearest 0.1f
  EXPECT_EQ(eval::const_value(c, DType::F32).f(), 0.1f);
  c.type = DType::I32;
  c.set(ir::Attr::Value, -3);
  EXPECT_EQ(eval::const_value(c, DType::F32).i(), -3);
}

// --- interpreter ---------------------------------------------------------------------------

TEST(InterpErrors, OutOfBoundsLoadNamesBufferIndexCountAndLocation) {
  ir::Kernel k = parse_verified(
      "kernel oob mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param x: in buf<f32> extent=n\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32 @\"oob.cpp\":7\n"
      "  store<out> %0, %1\n"
      "}\n");
  std::vector<float> x(4, 1.0f), out(8, 0.0f);
  std::string e = run_error(k, DType::F32, {arg(x), arg(out)}, {8}, {1, 1, 1}, {8, 1, 1});
  EXPECT_NE(e.find("buffer 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("index 4 "), std::string::npos) << e;
  EXPECT_NE(e.find("4 elements"), std::string::npos) << e;
  EXPECT_NE(e.find("oob.cpp:7"), std::string::npos) << e;
  // Nothing after the faulting op ran (lock step: the load faults before any store).
  EXPECT_EQ(out[0], 0.0f);
}

TEST(InterpErrors, DivergentBarrier) {
  ir::Kernel k = parse_verified(
      "kernel bar mode=Reduction {\n"
      "  %0 = local_id<0> : u32\n"
      "  %1 = const<3> : u32\n"
      "  %2 = lt %0, %1 : bool\n"
      "  if %2 {\n"
      "    barrier @\"bar.cpp\":12\n"
      "  }\n"
      "}\n");
  std::string e = run_error(k, DType::F32, {}, {}, {1, 1, 1}, {8, 1, 1});
  EXPECT_NE(e.find("barrier reached by 3 of 8 threads (divergent barrier) at bar.cpp:12"), std::string::npos) << e;
}

namespace {
const char* kLaneSumUnderIf =
    "kernel lanes mode=Reduction {\n"
    "  param m: scalar<u32>\n"
    "  param out: out buf<f32> extent=16\n"
    "  %0 = local_id<0> : u32\n"
    "  %1 = param<m> : u32\n"
    "  %2 = lt %0, %1 : bool\n"
    "  if %2 {\n"
    "    %3 = cast %0 : f32\n"
    "    %4 = lane_sum %3 : f32 @\"lanes.cpp\":5\n"
    "    store<out> %0, %4\n"
    "  }\n"
    "}\n";
}

TEST(InterpErrors, PartiallyActiveLaneGroup) {
  ir::Kernel k = parse_verified(kLaneSumUnderIf);
  std::vector<float> out(16, -1.0f);
  interp::Options opts;
  opts.lane_width = 8;
  std::string e = run_error(k, DType::F32, {arg(out)}, {12}, {1, 1, 1}, {16, 1, 1}, opts);
  EXPECT_NE(e.find("lane_sum with a partially active lane group"), std::string::npos) << e;
  EXPECT_NE(e.find("at lanes.cpp:5"), std::string::npos) << e;

  // A whole lane group active and the other wholly inactive is fine.
  EXPECT_EQ(run_error(k, DType::F32, {arg(out)}, {8}, {1, 1, 1}, {16, 1, 1}, opts), "");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 28.0f) << i;
  for (int i = 8; i < 16; ++i) EXPECT_EQ(out[i], -1.0f) << i;
}

TEST(InterpErrors, InfiniteLoopHitsTheStepGuard) {
  ir::Kernel k = parse_verified(
      "kernel spin mode=Elementwise {\n"
      "  param step: scalar<u32>\n"
      "  %0 = const<0> : u32\n"
      "  %1 = const<10> : u32\n"
      "  %2 = param<step> : u32\n"
      "  %3 = for %0, %1, %2 : u32 @\"spin.cpp\":3 {\n"
      "  }\n"
      "}\n");
  // A constant zero step is rejected by the verifier; a step of 0 passed at dispatch is not.
  interp::Options opts;
  opts.max_steps = 1000;
  std::string e = run_error(k, DType::F32, {}, {0u}, {1, 1, 1}, {4, 1, 1}, opts);
  EXPECT_NE(e.find("kernel exceeded 1000 steps (infinite loop?)"), std::string::npos) << e;
  EXPECT_NE(e.find("spin.cpp:3"), std::string::npos) << e;
}

TEST(Interp, IntegerDivisionByZeroIsDefined) {
  ir::Kernel k = parse_verified(
      "kernel dz mode=Elementwise {\n"
      "  param out: out buf<u32> extent=4\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<2> : u32\n"
      "  %2 = sub %0, %1 : u32\n"
      "  %3 = div %1, %2 : u32 @\"dz.cpp\":9\n"
      "  store<out> %0, %3\n"
      "}\n");
  std::vector<uint32_t> out(4);
  EXPECT_EQ(run_error(k, DType::F32, {arg(out)}, {}, {1, 1, 1}, {4, 1, 1}), "");
  // 2 / (t - 2): t = 2 divides by zero and gets the dividend.
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 0, 2, 2}));
}


class InterpGroupSum : public ::testing::TestWithParam<uint32_t> {};

TEST_P(InterpGroupSum, ThreadgroupMemoryReductionIsExact) {
  ir::Kernel k = parse_verified(group_sum_ir(true));
  const uint32_t groups = 3, tg = 64;
  std::vector<float> x(groups * tg), out(groups, -1.0f);
  std::vector<double> want(groups, 0.0);
  for (uint32_t i = 0; i < x.size(); ++i) {
    x[i] = float(int(i % 7) - 3) + 0.25f * float(i % 4);  // sums of these are exact in f32
    want[i / tg] += x[i];
  }
  interp::Options opts;
  opts.lane_width = GetParam();
  interp::run(k, DType::F32, {arg(x), arg(out)}, {uint32_t(x.size())}, {groups, 1, 1}, {tg, 1, 1}, opts);
  for (uint32_t g = 0; g < groups; ++g) EXPECT_EQ(out[g], float(want[g])) << "group " << g;
}

INSTANTIATE_TEST_SUITE_P(InterpLaneWidths, InterpGroupSum, ::testing::Values(8u, 32u));

TEST(InterpLanes, SumFollowsTheXorButterflyOrder) {
  ir::Kernel k = parse_verified(
      "kernel lsum mode=Reduction {\n"
      "  param x: in buf<f32> extent=4\n"
      "  param out: out buf<f32> extent=4\n"
      "  %0 = local_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = lane_sum %1 : f32\n"
      "  store<out> %0, %2\n"
      "}\n");
  // Tree: (1e8 + -1e8) + (1 + 1) = 2 in every lane; a left-to-right sum would give 1.
  std::vector<float> x = {1e8f, 1.0f, -1e8f, 1.0f}, out(4);
  interp::Options opts;
  opts.lane_width = 4;
  interp::run(k, DType::F32, {arg(x), arg(out)}, {}, {1, 1, 1}, {4, 1, 1}, opts);
  for (float v : out) EXPECT_EQ(v, 2.0f);
}

TEST(InterpMemory, UnwrittenThreadgroupSlotsReadAllOnes) {
  ir::Kernel k = parse_verified(
      "kernel tgread mode=Reduction {\n"
      "  param out: out buf<u32> extent=4\n"
      "  param fout: out buf<f32> extent=4\n"
      "  %0 = tg_alloc<a, 8> : u32\n"
      "  %1 = tg_alloc<b, 8> : f32\n"
      "  %2 = local_id<0> : u32\n"
      "  %3 = tg_load %0, %2 : u32\n"
      "  store<out> %2, %3\n"
      "  %4 = tg_load %1, %2 : f32\n"
      "  store<fout> %2, %4\n"
      "}\n");
  std::vector<uint32_t> out(4);
  std::vector<float> fout(4);
  interp::run(k, DType::F32, {arg(out), arg(fout)}, {}, {1, 1, 1}, {4, 1, 1}, {});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i], 0xffffffffu);
    EXPECT_TRUE(std::isnan(fout[i]));
  }
}

// Threadgroup memory starts undefined on a GPU: with uninitialized_tg_reads_are_errors (the
// interpreter device's setting), reading a slot no thread of the group wrote is an error, in
// every threadgroup (a slot written by an earlier group does not count).
TEST(InterpMemory, ReadingAnUnwrittenThreadgroupSlotIsAnError) {
  ir::Kernel k = parse_verified(
      "kernel tgread mode=Reduction {\n"
      "  param out: out buf<u32> extent=8\n"
      "  %0 = tg_alloc<a, 8> : u32\n"
      "  %1 = local_id<0> : u32\n"
      "  %2 = program_id<0> : u32\n"
      "  %3 = const<0> : u32\n"
      "  %4 = eq %2, %3 : bool\n"
      "  if %4 {\n"
      "    tg_store %0, %1, %1\n"
      "  }\n"
      "  %5 = tg_load %0, %1 : u32 @\"tgread.cpp\":7\n"
      "  store<out> %1, %5\n"
      "}\n");
  std::vector<uint32_t> out(8);
  interp::Options strict;
  strict.uninitialized_tg_reads_are_errors = true;
  EXPECT_EQ(run_error(k, DType::F32, {arg(out)}, {}, {1, 1, 1}, {4, 1, 1}, strict), "");
  EXPECT_EQ(out[3], 3u);
  EXPECT_EQ(run_error(k, DType::F32, {arg(out)}, {}, {2, 1, 1}, {4, 1, 1}), "");  // off by default
  std::string e = run_error(k, DType::F32, {arg(out)}, {}, {2, 1, 1}, {4, 1, 1}, strict);
  EXPECT_NE(e.find("read of threadgroup slot 'a'[0] that no thread of this threadgroup has written (thread {0, 0, 0}"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("tgread.cpp:7"), std::string::npos) << e;
  EXPECT_NE(e.find("threadgroup {1, 0, 0}"), std::string::npos) << e;
}

TEST(InterpControl, NestedIfForWithVars) {
  ir::Kernel k = parse_verified(
      "kernel nest mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param out: out buf<i32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = param<n> : u32\n"
      "  %2 = lt %0, %1 : bool\n"
      "  if %2 {\n"
      "    %3 = cast %0 : i32\n"
      "    %4 = const<0> : i32\n"
      "    %5 = var %4 : i32\n"
      "    %6 = const<-3> : i32\n"
      "    %7 = const<1> : i32\n"
      "    %8 = for %6, %3, %7 : i32 {\n"
      "      %9 = const<2> : i32\n"
      "      %10 = rem %8, %9 : i32\n"
      "      %11 = eq %10, %4 : bool\n"
      "      if %11 {\n"
      "        %12 = var_load %5 : i32\n"
      "        %13 = add %12, %8 : i32\n"
      "        var_store %5, %13\n"
      "      } else {\n"
      "        %14 = for %4, %8, %7 : i32 {\n"
      "          %15 = var_load %5 : i32\n"
      "          %16 = mul %15, %9 : i32\n"
      "          var_store %5, %16\n"
      "        }\n"
      "        %17 = var_load %5 : i32\n"
      "        %18 = sub %17, %7 : i32\n"
      "        var_store %5, %18\n"
      "      }\n"
      "    }\n"
      "    %19 = var_load %5 : i32\n"
      "    store<out> %0, %19\n"
      "  }\n"
      "}\n");
  const uint32_t n = 13;
  std::vector<int32_t> out(n, 12345);
  interp::run(k, DType::F32, {arg(out)}, {n}, {2, 1, 1}, {8, 1, 1}, {});
  for (int32_t t = 0; t < int32_t(n); ++t) {
    uint32_t acc = 0;  // the same loop in C++, wrapping like the kernel
    for (int32_t i = -3; i < t; ++i) {
      if (i % 2 == 0) {
        acc += uint32_t(i);
      } else {
        for (int32_t j = 0; j < i; ++j) acc *= 2;
        acc -= 1;
      }
    }
    EXPECT_EQ(out[t], int32_t(acc)) << "thread " << t;
  }
}

TEST(InterpBuiltins, ThreeDimensionalIdsAndLaneIds) {
  ir::Kernel k = parse_verified(
      "kernel ids mode=Reduction {\n"
      "  param out: out buf<u32> extent=96\n"
      "  %0 = program_id<0> : u32\n"
      "  %1 = program_id<1> : u32\n"
      "  %2 = local_id<0> : u32\n"
      "  %3 = local_id<1> : u32\n"
      "  %4 = local_id<2> : u32\n"
      "  %5 = group_size<0> : u32\n"
      "  %6 = group_size<1> : u32\n"
      "  %7 = num_programs<0> : u32\n"
      "  %8 = mul %0, %5 : u32\n"
      "  %9 = add %8, %2 : u32\n"
      "  %10 = mul %1, %6 : u32\n"
      "  %11 = add %10, %3 : u32\n"
      "  %12 = mul %7, %5 : u32\n"
      "  %13 = mul %11, %12 : u32\n"
      "  %14 = add %13, %9 : u32\n"
      "  %15 = const<48> : u32\n"
      "  %16 = mul %4, %15 : u32\n"
      "  %17 = add %16, %14 : u32\n"
      "  %18 = lane_id : u32\n"
      "  %19 = simd_group_id : u32\n"
      "  %20 = const<100> : u32\n"
      "  %21 = mul %19, %20 : u32\n"
      "  %22 = add %21, %18 : u32\n"
      "  %23 = num_simd_groups : u32\n"
      "  %24 = const<10000> : u32\n"
      "  %25 = mul %23, %24 : u32\n"
      "  %26 = add %25, %22 : u32\n"
      "  %27 = thread_id<0> : u32\n"
      "  %28 = eq %27, %9 : bool\n"
      "  %29 = select %28, %26, %20 : u32\n"
      "  store<out> %17, %29\n"
      "}\n");
  // grid {2, 3, 1} x threadgroup {4, 2, 2}: global x in [0, 8), y in [0, 6), z = local z.
  std::vector<uint32_t> out(96, 0);
  interp::Options opts;
  opts.lane_width = 4;
  interp::run(k, DType::F32, {arg(out)}, {}, {2, 3, 1}, {4, 2, 2}, opts);
  for (uint32_t z = 0; z < 2; ++z)
    for (uint32_t y = 0; y < 6; ++y)
      for (uint32_t x = 0; x < 8; ++x) {
        uint32_t flat = (x % 4) + 4 * ((y % 2) + 2 * z);
        uint32_t want = 4 * 10000 + (flat / 4) * 100 + flat % 4;
        EXPECT_EQ(out[z * 48 + y * 8 + x], want) << x << "," << y << "," << z;
      }
}

TEST(InterpMemory, SixteenBitStoresRoundToNearestEven) {
  ir::Kernel k = parse_verified(
      "kernel scale mode=Elementwise dtypes=f32,f16,bf16 {\n"
      "  param n: scalar<u32>\n"
      "  param x: in buf<T> extent=n\n"
      "  param out: out buf<T> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = param<n> : u32\n"
      "  %2 = lt %0, %1 : bool\n"
      "  if %2 {\n"
      "    %3 = load<x> %0 : T\n"
      "    %4 = const<3> : T\n"
      "    %5 = mul %3, %4 : T\n"
      "    store<out> %0, %5\n"
      "  }\n"
      "}\n");
  const uint32_t n = 300;
  for (DType d : {DType::F16, DType::BF16}) {
    std::vector<uint16_t> x(n), out(n, 0);
    for (uint32_t i = 0; i < n; ++i) {
      float v = 0.37f * float(i) - 50.0f;
      x[i] = d == DType::F16 ? num::f32_to_f16(v) : num::f32_to_bf16(v);
    }
    interp::run(k, d, {arg(x), arg(out)}, {n}, {(n + 63) / 64, 1, 1}, {64, 1, 1}, {});
    for (uint32_t i = 0; i < n; ++i) {
      float wide = (d == DType::F16 ? num::f16_to_f32(x[i]) : num::bf16_to_f32(x[i])) * 3.0f;
      uint16_t want = d == DType::F16 ? num::f32_to_f16(wide) : num::f32_to_bf16(wide);
      ASSERT_EQ(out[i], want) << dtype_name(d) << " " << i;
    }
  }
}

TEST(InterpDevice, LaneWidthComesFromTheEnvironment) {
  const char* outer = std::getenv("IRON_INTERP_LANE_WIDTH");
  const std::string saved = outer ? outer : "";
  ::setenv("IRON_INTERP_LANE_WIDTH", "8", 1);
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  EXPECT_EQ(ctx->info().lane_width, 8u);
  EXPECT_EQ(ctx->info().name, "Iron SIMT interpreter");
  EXPECT_EQ(ctx->info().backend, Backend::Interp);
  ::setenv("IRON_INTERP_LANE_WIDTH", "12", 1);
  std::string e;
  try {
    Context::create(Backend::Interp);
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("'12'"), std::string::npos) << e;
  std::string why;
  EXPECT_TRUE(list_devices(Backend::Interp, &why).empty());
  EXPECT_NE(why.find("'12'"), std::string::npos) << why;
  ::unsetenv("IRON_INTERP_LANE_WIDTH");
  EXPECT_EQ(list_devices(Backend::Interp).size(), 1u);
  EXPECT_EQ(list_devices(Backend::Interp)[0].lane_width, 32u);
  if (outer) ::setenv("IRON_INTERP_LANE_WIDTH", saved.c_str(), 1);
}

TEST(InterpDevice, DispatchThroughTheContext) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const size_t n = 1000;
  DeviceBuffer a = ctx->alloc(DType::F32, n), b = ctx->alloc(DType::F32, n), out = ctx->alloc(DType::F32, n);
  std::vector<float> av(n), bv(n), ov(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    av[i] = float(i) * 0.5f;
    bv[i] = 3.0f - float(i);
  }
  ctx->upload(a, av.data(), n * 4);
  ctx->upload(b, bv.data(), n * 4);
  ctx->dispatch_with_grid("iron_add", DType::F32, {{"a", a}, {"b", b}, {"out", out}}, {{"n", double(n)}},
                          {4, 1, 1}, {256, 1, 1});
  ctx->download(out, ov.data(), n * 4);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(ov[i], av[i] + bv[i]) << i;
}

namespace {
// A vectorize group (leader vec2, member lane1) whose base is tid * m: aligned only for even m.
const char* kVectorGroup =
    "kernel vec mode=Elementwise {\n"
    "  param m: scalar<u32>\n"
    "  param step: scalar<u32>\n"
    "  param a: in buf<f32> extent=64\n"
    "  param out: out buf<f32> extent=64\n"
    "  %0 = thread_id<0> : u32\n"
    "  %1 = param<m> : u32\n"
    "  %2 = param<step> : u32\n"
    "  %3 = mul %0, %1 : u32\n"
    "  %4 = add %3, %2 : u32\n"
    "  %5 = load<a, vec=2> %3 : f32 @\"vec.cpp\":4\n"
    "  %6 = load<a, lane=1> %4 : f32 @\"vec.cpp\":5\n"
    "  %7 = add %5, %6 : f32\n"
    "  store<out> %0, %7\n"
    "}\n";
}

TEST(InterpMemory, VectorGroupsAreCheckedForAlignmentAndContiguity) {
  ir::Kernel k = parse_verified(kVectorGroup);
  std::vector<float> a(64), out(64, 0.0f);
  for (int i = 0; i < 64; ++i) a[i] = float(i);
  // Aligned and contiguous: runs as the scalar loads it stands for.
  EXPECT_EQ(run_error(k, DType::F32, {arg(a), arg(out)}, {2, 1}, {1, 1, 1}, {8, 1, 1}), "");
  for (int t = 0; t < 8; ++t) EXPECT_EQ(out[t], float(4 * t + 1)) << t;
  // Base tid * 3: thread 1 starts at index 3, which a 2-wide access cannot.
  std::string e = run_error(k, DType::F32, {arg(a), arg(out)}, {3, 1}, {1, 1, 1}, {8, 1, 1});
  EXPECT_NE(e.find("not a multiple of 2 (misaligned; thread {1, 0, 0})"), std::string::npos) << e;
  EXPECT_NE(e.find("vec.cpp:4"), std::string::npos) << e;
  // Member at base + 2 instead of base + 1.
  e = run_error(k, DType::F32, {arg(a), arg(out)}, {2, 2}, {1, 1, 1}, {8, 1, 1});
  EXPECT_NE(e.find("is at index 2, not 1 (the group is not contiguous"), std::string::npos) << e;
  EXPECT_NE(e.find("vec.cpp:5"), std::string::npos) << e;
}
