// The math ops of docs/semantics.md "More math": floor, ceil, rint, trunc, mulhi, popcount,
// clz and bitcast (exact on every backend), sin, cos, exp2, log2, erf and pow (bounded). One
// conformance kernel per op family runs over inputs that include the special values on the
// interpreter at lane widths 8 and 32 (unoptimized and through the pipeline, so const_fold is
// exercised), and on Vulkan (lavapipe here) and CUDA (skipped without a driver): exact ops bit
// for bit, the bounded ones within the stated bounds and their special values exactly. Also the
// scalar rules themselves, the verifier's type rules, the DSL, both dialects' spellings, and the
// GLSL erf and pow helpers compiled here as C++ from the very text the shaders get.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "harness/mutate.hpp"
#include "core/ir.hpp"
#include "device_run.hpp"
#include "glsl_cpu.hpp"
#include "ir_text.hpp"
#include "passes/eval.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace glsl_math_cpu {

using namespace iron::test::glsl_cpu;
// The driver functions the helpers start from: the host's (glibc's f32 libm).
inline float exp2(float x) { return std::exp2(x); }
inline float log2(float x) { return std::log2(x); }
inline float log(float x) { return std::log(x); }
inline float sin(float x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline void umulExtended(uint a, uint b, uint& hi, uint& lo) {
  uint64_t p = uint64_t(a) * b;
  hi = uint(p >> 32);
  lo = uint(p);
}

#define precise
#define IRON_GLSL_HELPER(name, ...) __VA_ARGS__
#include "codegen/glsl_math.inc"
#undef IRON_GLSL_HELPER
#undef precise

}  // namespace glsl_math_cpu

using namespace iron;
using iron::test::Buf;
using iron::test::bits_of;
using iron::test::is_nan_bits;
using iron::test::is_subnormal_bits;
using iron::test::parse_verified;
using iron::test::same_float;

namespace {

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
constexpr uint32_t kN = 128;

float from_bits(uint32_t u) { return test::float_of(u); }

// ---- scalar rules (eval: the interpreter and const_fold) --------------------------------------

eval::Scalar eval1(ir::Op op, DType rt, DType ot, eval::Scalar a) {
  eval::Scalar out;
  std::string error;
  EXPECT_TRUE(eval::eval_pure(op, rt, ot, &a, 1, out, error)) << error;
  return out;
}
eval::Scalar eval2(ir::Op op, DType t, eval::Scalar a, eval::Scalar b) {
  eval::Scalar args[2] = {a, b}, out;
  std::string error;
  EXPECT_TRUE(eval::eval_pure(op, t, t, args, 2, out, error)) << error;
  return out;
}
uint32_t fbits(ir::Op op, float x) { return eval1(op, DType::F32, DType::F32, eval::Scalar::of_f32(x)).bits; }

TEST(MathOps, RoundingOpsKeepSignedZerosAndRoundHalfToEven) {
  using ir::Op;
  EXPECT_EQ(fbits(Op::Floor, -0.5f), bits_of(-1.0f));
  EXPECT_EQ(fbits(Op::Floor, -0.0f), 0x80000000u);
  EXPECT_EQ(fbits(Op::Floor, 0x1p-149f), 0u);
  EXPECT_EQ(fbits(Op::Floor, -0x1p-149f), bits_of(-1.0f));
  EXPECT_EQ(fbits(Op::Ceil, -0.5f), 0x80000000u);  // a negative value rounding up to zero is -0
  EXPECT_EQ(fbits(Op::Ceil, 0x1p-149f), bits_of(1.0f));
  EXPECT_EQ(fbits(Op::Trunc, -0.7f), 0x80000000u);
  EXPECT_EQ(fbits(Op::Trunc, 2.9f), bits_of(2.0f));
  EXPECT_EQ(fbits(Op::Rint, 0.5f), 0u);
  EXPECT_EQ(fbits(Op::Rint, 1.5f), bits_of(2.0f));
  EXPECT_EQ(fbits(Op::Rint, 2.5f), bits_of(2.0f));
  EXPECT_EQ(fbits(Op::Rint, -2.5f), bits_of(-2.0f));
  EXPECT_EQ(fbits(Op::Rint, -0.5f), 0x80000000u);
  EXPECT_EQ(fbits(Op::Rint, 8388609.0f), bits_of(8388609.0f));  // 2^23 + 1: already integral
  for (Op op : {Op::Floor, Op::Ceil, Op::Rint, Op::Trunc}) {
    EXPECT_EQ(fbits(op, kInf), bits_of(kInf)) << ir::mnemonic(op);
    EXPECT_EQ(fbits(op, -kInf), bits_of(-kInf)) << ir::mnemonic(op);
    EXPECT_TRUE(is_nan_bits(fbits(op, kNan))) << ir::mnemonic(op);
  }
}

TEST(MathOps, IntegerBitOpsFollowTheStatedRules) {
  using ir::Op;
  using S = eval::Scalar;
  EXPECT_EQ(eval2(Op::MulHi, DType::U32, S::of_u32(0xffffffffu), S::of_u32(0xffffffffu)).u(), 0xfffffffeu);
  EXPECT_EQ(eval2(Op::MulHi, DType::U32, S::of_u32(0x10000u), S::of_u32(0x10000u)).u(), 1u);
  EXPECT_EQ(eval2(Op::MulHi, DType::I32, S::of_i32(-1), S::of_i32(-1)).i(), 0);   // 1
  EXPECT_EQ(eval2(Op::MulHi, DType::I32, S::of_i32(-1), S::of_i32(1)).i(), -1);   // -1: sign fill
  EXPECT_EQ(eval2(Op::MulHi, DType::I32, S::of_i32(INT32_MIN), S::of_i32(INT32_MIN)).i(), 0x40000000);
  EXPECT_EQ(eval2(Op::MulHi, DType::I32, S::of_i32(INT32_MIN), S::of_i32(INT32_MAX)).u(), 0xc0000000u);
  EXPECT_EQ(eval1(Op::Popcount, DType::U32, DType::U32, S::of_u32(0xffffffffu)).u(), 32u);
  EXPECT_EQ(eval1(Op::Popcount, DType::I32, DType::I32, S::of_i32(-2)).i(), 31);
  EXPECT_EQ(eval1(Op::Popcount, DType::U32, DType::U32, S::of_u32(0)).u(), 0u);
  EXPECT_EQ(eval1(Op::Clz, DType::U32, DType::U32, S::of_u32(0)).u(), 32u);
  EXPECT_EQ(eval1(Op::Clz, DType::U32, DType::U32, S::of_u32(1)).u(), 31u);
  EXPECT_EQ(eval1(Op::Clz, DType::I32, DType::I32, S::of_i32(-1)).i(), 0);
  EXPECT_EQ(eval1(Op::Clz, DType::I32, DType::I32, S::of_i32(0x00010000)).i(), 15);
  EXPECT_EQ(eval1(Op::Bitcast, DType::U32, DType::F32, S::of_f32(-0.0f)).u(), 0x80000000u);
  EXPECT_EQ(eval1(Op::Bitcast, DType::F32, DType::I32, S::of_i32(0x3f800000)).f(), 1.0f);
  EXPECT_EQ(eval1(Op::Bitcast, DType::I32, DType::U32, S::of_u32(0xffffffffu)).i(), -1);
  // A bitcast of anything but the three 32-bit dtypes is not evaluated (the verifier rejects it).
  eval::Scalar out;
  std::string error;
  eval::Scalar a = S::of_f32(1.0f);
  EXPECT_FALSE(eval::eval_pure(ir::Op::Bitcast, DType::U32, DType::F16, &a, 1, out, error));
}

TEST(MathOps, BoundedOpsHaveTheirExactSpecialValues) {
  using ir::Op;
  auto pow2 = [](float x, float y) {
    return eval2(ir::Op::Pow, DType::F32, eval::Scalar::of_f32(x), eval::Scalar::of_f32(y)).bits;
  };
  EXPECT_EQ(fbits(Op::Sin, -0.0f), 0x80000000u);
  EXPECT_TRUE(is_nan_bits(fbits(Op::Sin, kInf)));
  EXPECT_EQ(fbits(Op::Cos, 0.0f), bits_of(1.0f));
  EXPECT_TRUE(is_nan_bits(fbits(Op::Cos, -kInf)));
  EXPECT_EQ(fbits(Op::Exp2, -kInf), 0u);
  EXPECT_EQ(fbits(Op::Exp2, 10.0f), bits_of(1024.0f));
  EXPECT_EQ(fbits(Op::Log2, 0.0f), bits_of(-kInf));
  EXPECT_EQ(fbits(Op::Log2, 1024.0f), bits_of(10.0f));
  EXPECT_TRUE(is_nan_bits(fbits(Op::Log2, -1.0f)));
  EXPECT_EQ(fbits(Op::Erf, -kInf), bits_of(-1.0f));
  EXPECT_EQ(fbits(Op::Erf, -0.0f), 0x80000000u);
  EXPECT_EQ(pow2(kNan, 0.0f), bits_of(1.0f));
  EXPECT_EQ(pow2(1.0f, kNan), bits_of(1.0f));
  EXPECT_EQ(pow2(-2.0f, 3.0f), bits_of(-8.0f));
  EXPECT_TRUE(is_nan_bits(pow2(-2.0f, 0.5f)));
  EXPECT_EQ(pow2(-0.0f, -3.0f), bits_of(-kInf));
  EXPECT_EQ(pow2(-1.0f, kInf), bits_of(1.0f));
  EXPECT_EQ(pow2(-kInf, 3.0f), bits_of(-kInf));
  EXPECT_EQ(pow2(-kInf, -2.0f), 0u);
}

// ---- the GLSL helpers, as C++ ----------------------------------------------------------------

// iron_erf uses only f32 multiplies and adds; within 2 ulp of the correctly rounded erf
// (scripts/erf-coefficients.py) over every 64th f32 in [0, 4], 2^-30 .. 2^-1 and the specials.
TEST(MathOps, GlslErfHelperIsWithinTwoUlp) {
  int worst = 0;
  float worst_x = 0;
  auto check = [&](float x) {
    float got = glsl_math_cpu::iron_erf(x);
    float want = float(std::erf(double(x)));
    int ulps = std::abs(int(bits_of(std::fabs(got))) - int(bits_of(std::fabs(want))));
    if (std::signbit(got) != std::signbit(want)) ulps = 1 << 30;
    if (ulps > worst) worst = ulps, worst_x = x;
  };
  for (uint32_t u = 0; u <= bits_of(4.0f); u += 64) {
    check(from_bits(u));
    check(-from_bits(u));
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
  EXPECT_EQ(bits_of(glsl_math_cpu::iron_erf(-0.0f)), 0x80000000u);
  EXPECT_EQ(glsl_math_cpu::iron_erf(kInf), 1.0f);
  EXPECT_EQ(glsl_math_cpu::iron_erf(-kInf), -1.0f);
  EXPECT_EQ(glsl_math_cpu::iron_erf(100.0f), 1.0f);
  EXPECT_EQ(glsl_math_cpu::iron_erf(0x1p-149f), float(std::erf(0x1p-149)));
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_erf(kNan)));
}

// iron_sin and iron_cos reduce the argument exactly: within 2^-22 of sin and cos (computed in
// f64) over the whole f32 range, the largest arguments and those nearest a multiple of pi/2
// included; sin(-0) = -0, cos(+-0) = 1, NaN for +-inf and NaN.
TEST(MathOps, GlslSinCosHelpersHoldTheirBoundOnTheWholeRange) {
  double worst = 0;
  float worst_x = 0;
  auto check = [&](float x) {
    double e = std::max(std::fabs(double(glsl_math_cpu::iron_sin(x)) - std::sin(double(x))),
                        std::fabs(double(glsl_math_cpu::iron_cos(x)) - std::cos(double(x))));
    if (e > worst) worst = e, worst_x = x;
  };
  for (uint32_t u = 0; u < 0x7f800000u; u += 4099) {
    check(from_bits(u));
    check(-from_bits(u));
  }
  // Near multiples of pi/2 (the hardest reductions), and the largest floats.
  for (int k = 1; k < 200000; k += 7) {
    float near = float(k * 1.5707963267948966);
    for (int d = -2; d <= 2; ++d) check(from_bits(bits_of(near) + uint32_t(d)));
  }
  check(3.4028235e38f);
  check(16367173.0f * 0x1p72f);  // f32's closest approach to a multiple of pi/2
  EXPECT_LE(worst, 0x1p-22) << "at x = " << worst_x;
  EXPECT_EQ(bits_of(glsl_math_cpu::iron_sin(-0.0f)), 0x80000000u);
  EXPECT_EQ(glsl_math_cpu::iron_cos(-0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_sin(kInf)));
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_cos(-kInf)));
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_sin(kNan)));
}

// iron_exp2 reaches subnormal results through a normal intermediate.
TEST(MathOps, GlslExp2HelperGivesSubnormalResults) {
  for (float x : {-126.5f, -130.0f, -140.25f, -149.0f, -149.5f, -151.0f, -kInf})
    EXPECT_LE(std::fabs(double(glsl_math_cpu::iron_exp2(x)) - std::exp2(double(x))), 0x1p-149) << x;
  EXPECT_EQ(glsl_math_cpu::iron_exp2(-149.0f), 0x1p-149f);
  EXPECT_EQ(glsl_math_cpu::iron_exp2(3.0f), 8.0f);
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_exp2(kNan)));
}

// iron_log2 reads the exponent from the bits (subnormals included) and log2 only the mantissa.
TEST(MathOps, GlslLog2HelperIsExactOnPowersOfTwoAndSpecials) {
  for (int e = -149; e <= 127; ++e) EXPECT_EQ(glsl_math_cpu::iron_log2(std::ldexp(1.0f, e)), float(e)) << e;
  EXPECT_EQ(glsl_math_cpu::iron_log2(0.0f), -kInf);
  EXPECT_EQ(glsl_math_cpu::iron_log2(-0.0f), -kInf);
  EXPECT_EQ(glsl_math_cpu::iron_log2(kInf), kInf);
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_log2(-1.0f)));
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_log2(-kInf)));
  EXPECT_TRUE(std::isnan(glsl_math_cpu::iron_log2(kNan)));
  double worst = 0;  // relative to max(1, |log2 x|): the sum e + log2(m) rounds once to f32
  for (uint32_t u = 1; u < 0x7f800000u; u += 997) {
    double x = double(from_bits(u)), want = std::log2(x);
    worst = std::max(worst, std::fabs(double(glsl_math_cpu::iron_log2(float(x))) - want) / std::max(1.0, std::fabs(want)));
  }
  EXPECT_LE(worst, 0x1p-22);
}

// iron_pow's special cases equal C's powf bit for bit on every pair of special and ordinary
// operands; elsewhere it is within 2^-16 relative of powf (the error of exp2(y * log2 x) in f32)
// (2^-148 absolute where the result is subnormal).
TEST(MathOps, GlslPowHelperMatchesCPowOnSpecialsAndIsCloseElsewhere) {
  const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 3.0f, -3.0f, 2.5f, -2.5f,
                          kInf, -kInf, kNan, 0x1p-149f, -0x1p-149f, 0x1p-130f, 16777216.0f, -16777217.0f,
                          1e30f, -1e30f, 0.999f, 1.001f, 127.5f, -149.0f, 1e-3f};
  for (float x : values)
    for (float y : values) {
      uint32_t got = bits_of(glsl_math_cpu::iron_pow(x, y)), want = bits_of(std::pow(x, y));
      float w = from_bits(want);
      bool ok = same_float(want, got);
      if (!ok && std::isfinite(w) && w != 0)
        ok = std::fabs(double(from_bits(got)) - w) <= std::max(0x1p-16 * std::fabs(double(w)), 0x1p-148);
      EXPECT_TRUE(ok) << "pow(" << x << ", " << y << ") = " << from_bits(got) << ", C gives " << w;
    }
  double worst = 0;
  uint64_t s = 7;
  for (int i = 0; i < 200000; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    float x = float(std::ldexp(double((s >> 40) & 0xffffff) / 16777216.0 + 0.5, int((s >> 20) % 40) - 20));
    float y = float((double((s >> 8) & 0xfff) - 2048.0) / 128.0);
    float w = std::pow(x, y), g = glsl_math_cpu::iron_pow(x, y);
    if (!std::isfinite(w) || std::fabs(w) < 0x1p-126f) continue;
    worst = std::max(worst, std::fabs(double(g) - w) / std::fabs(double(w)));
  }
  EXPECT_LE(worst, 0x1p-16);
  // pow(x, 1) and pow(x, -1) at the top of the range stay finite (t = 128 - 2^-23 for FLT_MAX:
  // a log2 or exp2 that rounds the fraction away gives inf; iron_pow uses neither).
  EXPECT_EQ(bits_of(glsl_math_cpu::iron_pow(FLT_MAX, 1.0f)), bits_of(FLT_MAX));
  for (uint32_t u = 0x7f7fffffu; u > 0x7f7f0000u; u -= 37) {
    const float x = from_bits(u);
    const double g = glsl_math_cpu::iron_pow(x, 1.0f), r = glsl_math_cpu::iron_pow(x, -1.0f);
    EXPECT_LE(std::fabs(g - x) / x, 3 * 0x1p-17) << "pow(" << x << ", 1) = " << g;
    EXPECT_LE(std::fabs(r * x - 1), 3 * 0x1p-17) << "pow(" << x << ", -1) = " << r;
  }
}

// ---- verifier, text IR, DSL, const_fold, spellings -----------------------------------------

TEST(MathOps, VerifierRejectsEveryUndefinedOpDtypePair) {
  ir::Kernel k = ir::parse(
      "kernel bad mode=Elementwise {\n"
      "  param x: in buf<f32> extent=4\n"
      "  param y: in buf<i32> extent=4\n"
      "  param h: in buf<f16> extent=4\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = load<y> %0 : i32\n"
      "  %3 = load<h> %0 : f16\n"
      "  %4 = popcount %1 : f32\n"
      "  %5 = floor %2 : i32\n"
      "  %6 = bitcast %3 : u32\n"
      "  %7 = mulhi %2, %1 : i32\n"
      "  %8 = pow %1, %2 : f32\n"
      "  %9 = clz %1 : i32\n"
      "  %10 = bitcast %2 : bool\n"
      "}\n");
  ir::Diagnostics d;
  EXPECT_FALSE(ir::verify(k, d));
  std::string all = d.render(k);
  EXPECT_NE(all.find("'popcount': is defined on i32 and u32 only, not f32"), std::string::npos) << all;
  EXPECT_NE(all.find("'floor': is defined on floats only, not i32"), std::string::npos) << all;
  EXPECT_NE(all.find("'bitcast': bitcast converts between dtypes of one width (f32, i32, u32; f16, bf16, i16, u16; "
                     "i64, u64), not f16 to u32"),
            std::string::npos) << all;
  EXPECT_NE(all.find("'mulhi': operand 1 is f32 but the result is i32"), std::string::npos) << all;
  EXPECT_NE(all.find("'pow': operand 1 is i32 but the result is f32"), std::string::npos) << all;
  EXPECT_NE(all.find("'clz': operand 0 is f32 but the result is i32"), std::string::npos) << all;
  EXPECT_NE(all.find("not i32 to bool"), std::string::npos) << all;
  EXPECT_EQ(d.items.size(), 7u) << all;
}

TEST(MathOps, TextIrRoundTripsEveryMathOp) {
  const std::string text =
      "kernel rt mode=Elementwise {\n"
      "  param x: in buf<f32> extent=4\n"
      "  param y: out buf<u32> extent=4\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = floor %1 : f32\n"
      "  %3 = ceil %2 : f32\n"
      "  %4 = rint %3 : f32\n"
      "  %5 = trunc %4 : f32\n"
      "  %6 = sin %5 : f32\n"
      "  %7 = cos %6 : f32\n"
      "  %8 = exp2 %7 : f32\n"
      "  %9 = log2 %8 : f32\n"
      "  %10 = erf %9 : f32\n"
      "  %11 = pow %10, %1 : f32\n"
      "  %12 = bitcast %11 : u32\n"
      "  %13 = mulhi %12, %0 : u32\n"
      "  %14 = popcount %13 : u32\n"
      "  %15 = clz %14 : u32\n"
      "  store<y> %0, %15\n"
      "}\n";
  ir::Kernel k = parse_verified(text);
  EXPECT_EQ(ir::print(k), text);
  // Untyped values are inferred from their operands; a bitcast's dtype must be written.
  ir::Kernel u = ir::parse(
      "kernel inf mode=Elementwise {\n  param x: in buf<f32> extent=4\n  param y: out buf<f32> extent=4\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = pow %1, %1 : ?\n  %3 = popcount %0 : ?\n"
      "  store<y> %0, %2\n}\n");
  passes::PassContext ctx;
  passes::run_type_check(u, ctx);
  EXPECT_TRUE(ctx.diags.empty()) << ctx.diags.render(u);
  EXPECT_EQ(u.insts[2].type, DType::F32);
  EXPECT_EQ(u.insts[3].type, DType::U32);
  ir::Kernel b = ir::parse(
      "kernel inf mode=Elementwise {\n  param x: in buf<f32> extent=4\n  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n  %2 = bitcast %1 : ?\n}\n");
  passes::PassContext ctx2;
  passes::run_type_check(b, ctx2);
  EXPECT_NE(ctx2.diags.render(b).find("cannot infer the dtype of 'bitcast'"), std::string::npos);
}

TEST(MathOps, ConstFoldFoldsTheExactOpsOnlyAndAgreesWithTheInterpreter) {
  ir::Kernel k = parse_verified(
      "kernel cf mode=Elementwise {\n"
      "  param y: out buf<f32> extent=8\n"
      "  param z: out buf<u32> extent=8\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<-2.5> : f32\n"
      "  %2 = rint %1 : f32\n"
      "  %3 = sin %1 : f32\n"
      "  %4 = add %2, %3 : f32\n"
      "  store<y> %0, %4\n"
      "  %5 = const<4294967295> : u32\n"
      "  %6 = mulhi %5, %5 : u32\n"
      "  %7 = clz %6 : u32\n"
      "  %8 = popcount %6 : u32\n"
      "  %9 = add %7, %8 : u32\n"
      "  %10 = bitcast %2 : u32\n"
      "  %11 = xor %9, %10 : u32\n"
      "  store<z> %0, %11\n"
      "}\n");
  ir::Kernel opt = passes::optimize(k);
  size_t sins = 0, exact = 0;
  ir::walk(opt, [&](ir::Id id) {
    ir::Op op = opt.insts[id].op;
    sins += op == ir::Op::Sin;
    exact += op == ir::Op::Rint || op == ir::Op::MulHi || op == ir::Op::Clz || op == ir::Op::Popcount ||
             op == ir::Op::Bitcast;
  });
  EXPECT_EQ(sins, 1u) << ir::print(opt);   // bounded: never folded
  EXPECT_EQ(exact, 0u) << ir::print(opt);  // exact: folded away
  for (const ir::Kernel* kk : {&k, &opt}) {
    std::vector<float> y(8);
    std::vector<uint32_t> z(8);
    interp::run(*kk, DType::F32, {{y.data(), 32}, {z.data(), 32}}, {}, {1, 1, 1}, {8, 1, 1}, {});
    EXPECT_EQ(y[3], -2.0f + std::sin(-2.5f));
    EXPECT_EQ(z[3], (0u + 31u) ^ bits_of(-2.0f));  // mulhi = 0xfffffffe: clz 0, popcount 31
  }
}

// The DSL spelling of every op, and a misuse located at its DSL line.
int g_bad_line = 0;
void dsl_math_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer y = output("y", f32, {n});
  Buffer z = output("z", u32, {n});
  Expr i = thread_id(0);
  Expr v = x[i] + 0.0f;
  y[i] = floor(v) + ceil(v) + rint(v) + trunc(v) + sin(v) + cos(v) + exp2(v) + log2(v) + erf(v) + pow(v, 2.0f);
  Expr b = bitcast<u32>(v);
  z[i] = mulhi(b, 3u) + popcount(b) + clz(b) + bitcast<u32>(bitcast<i32>(v));
}
void dsl_bad_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer z = output("z", u32, {n});
  Expr i = thread_id(0);
  g_bad_line = __LINE__ + 1;
  z[i] = popcount(x[i]);
}

TEST(MathOps, DslTracesEveryOpAndLocatesAMisuse) {
  ir::Kernel k = trace_kernel(KernelDecl{"dsl_math", &dsl_math_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  std::string text = ir::print(k);
  for (const char* m : {"floor", "ceil", "rint", "trunc", "sin", "cos", "exp2", "log2", "erf", "pow", "mulhi",
                        "popcount", "clz", "bitcast"})
    EXPECT_NE(text.find(std::string(" = ") + m + " "), std::string::npos) << m << " in\n" << text;
  std::string error;
  try {
    trace_kernel(KernelDecl{"dsl_bad", &dsl_bad_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("math_ops_test.cpp:" + std::to_string(g_bad_line)), std::string::npos) << error;
  EXPECT_NE(error.find("'popcount': is defined on i32 and u32 only, not f32"), std::string::npos) << error;
}

// Each dialect's spelling of each op (a changed spelling must show here or in the conformance
// runs below), and the emitted source compiles: GLSL to valid SPIR-V, CUDA through NVRTC.
TEST(MathOps, DialectsSpellEveryOpAndTheSourceCompiles) {
  ir::Kernel k = trace_kernel(KernelDecl{"dsl_math", &dsl_math_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  codegen::Emitted cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(cuda.ok()) << cuda.diags.render(k);
  for (const char* s : {"floorf(", "ceilf(", "rintf(", "truncf(", "sinf(", "cosf(", "exp2f(", "log2f(", "erff(",
                        "powf(", "__umulhi(", "__popc(", "__clz(", "__float_as_uint(", "__float_as_int("})
    EXPECT_NE(cuda.source.find(s), std::string::npos) << s << " in\n" << cuda.source;
  codegen::Emitted glsl = codegen::emit(k, DType::F32, codegen::Target::Glsl);
  ASSERT_TRUE(glsl.ok()) << glsl.diags.render(k);
  for (const char* s : {"floor(", "ceil(", "roundEven(", "trunc(", "iron_erf(",
                        "iron_pow(", "iron_log2(", "iron_exp2(", "iron_sin(", "iron_cos(", "umulExtended(", "bitCount(", "31 - findMSB(uint(", "floatBitsToUint(",
                        "floatBitsToInt("})
    EXPECT_NE(glsl.source.find(s), std::string::npos) << s << " in\n" << glsl.source;
  codegen::Spirv spv = codegen::compile_glsl(glsl.source, "dsl_math");
  EXPECT_TRUE(spv.ok) << spv.log << "\n" << glsl.source;
  rt::NvrtcResult r = rt::nvrtc_compile(cuda.source, "dsl_math", "sm_90a");
  EXPECT_TRUE(r.ok) << r.log.substr(0, 4000);
  // i32 forms, and a bitcast of the constant 0 to f32, which GLSL spells opaquely (lavapipe
  // folds arithmetic with a literal +0.0).
  ir::Kernel ik = parse_verified(
      "kernel ints mode=Elementwise {\n  param x: in buf<i32> extent=4\n  param y: out buf<i32> extent=4\n"
      "  param f: out buf<f32> extent=4\n  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : i32\n"
      "  %2 = mulhi %1, %1 : i32\n  %3 = popcount %2 : i32\n  %4 = clz %3 : i32\n  store<y> %0, %4\n"
      "  %5 = const<0> : i32\n  %6 = bitcast %5 : f32\n  %7 = bitcast %1 : f32\n  %8 = add %6, %7 : f32\n"
      "  store<f> %0, %8\n}\n");
  codegen::Emitted ic = codegen::emit(ik, DType::F32, codegen::Target::Cuda);
  EXPECT_NE(ic.source.find("__mulhi("), std::string::npos) << ic.source;
  EXPECT_NE(ic.source.find("__int_as_float("), std::string::npos) << ic.source;
  EXPECT_TRUE(rt::nvrtc_compile(ic.source, "ints", "sm_90a").ok);
  codegen::Emitted ig = codegen::emit(ik, DType::F32, codegen::Target::Glsl);
  EXPECT_NE(ig.source.find("imulExtended("), std::string::npos) << ig.source;
  EXPECT_NE(ig.source.find("intBitsToFloat("), std::string::npos) << ig.source;
  EXPECT_EQ(ig.source.find("intBitsToFloat(0)"), std::string::npos) << ig.source;
  EXPECT_NE(ig.source.find("iron_zero"), std::string::npos) << ig.source;
  EXPECT_TRUE(codegen::compile_glsl(ig.source, "ints").ok);
}

// pow is not commutative: `iron test --mutate` swaps its operands like sub's and div's.
TEST(MathOps, MutationTestingSwapsTheOperandsOfPow) {
  ir::Kernel k = parse_verified(
      "kernel p mode=Elementwise {\n  param x: in buf<f32> extent=4\n  param out: out buf<f32> extent=4\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = const<3> : f32\n  %3 = pow %1, %2 : f32\n"
      "  store<out> %0, %3\n}\n");
  std::vector<mutate::Mutant> ms = mutate::enumerate(k, 8, 1024);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].kind, "swapped_operands");
  EXPECT_EQ(ms[0].kernel.insts[3].operands[0], 2u);
}

// ---- conformance kernels on every backend --------------------------------------------------

// n threads (the first buffer's word count) in threadgroups of 64.
test::Launch groups_of_64(const std::vector<Buf>& bufs) {
  return {{uint32_t(bufs[0].words.size()) / 64, 1, 1}, {64, 1, 1}, false};
}
std::vector<Buf> run_interp(const ir::Kernel& k, std::vector<Buf> bufs, uint32_t lane_width) {
  const test::Launch l = groups_of_64(bufs);
  return test::run_interp(k, std::move(bufs), lane_width, l);
}
std::vector<Buf> run_device(Context& ctx, const ir::Kernel& k, std::vector<Buf> bufs) {
  const test::Launch l = groups_of_64(bufs);
  return test::run_device(ctx, k, std::move(bufs), l);
}

// Inputs: the special values first, then `fill(i)` for the rest, n a multiple of 64.
std::vector<uint32_t> words(uint32_t n, const std::vector<uint32_t>& specials, uint32_t (*fill)(uint32_t)) {
  std::vector<uint32_t> w(n);
  for (uint32_t i = 0; i < n; ++i) w[i] = i < specials.size() ? specials[i] : fill(i);
  return w;
}
std::vector<uint32_t> f32s(const std::vector<float>& v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(bits_of(f));
  return out;
}
uint32_t mix(uint32_t i) {  // a scrambled pattern per index
  uint32_t z = i * 0x9e3779b9u;
  z ^= z >> 15;
  z *= 0x85ebca6bu;
  return z ^ (z >> 13);
}

const std::vector<float> kFloatSpecials = {0.0f, -0.0f, kInf, -kInf, kNan, -kNan, 0.5f, -0.5f, 1.5f, -1.5f,
                                           2.5f, -2.5f, 0x1p-149f, -0x1p-149f, 0x1p-127f, -0.9999999f,
                                           8388607.5f, -8388607.5f, 8388608.0f, 16777215.0f, 3.4028235e38f,
                                           -3.4028235e38f, 1.0f, -1.0f, 0.49999997f, 4194303.5f, 1e-8f};

class MathConformance : public test::DeviceTest {
 protected:
  // The interpreter at lane widths 8 and 32, unoptimized and optimized, and the device: every
  // output word equal (two NaNs count as equal). On a device that flushes f32 subnormals,
  // elements with a subnormal f32 input or expected output are left out (docs/semantics.md).
  // At most 8 mismatches per buffer and run are reported.
  static std::vector<Buf> check_exact(const ir::Kernel& k, const std::vector<Buf>& bufs, const std::string& what) {
    std::vector<Buf> want = run_interp(k, bufs, 32);
    test::expect_same(want, run_interp(k, bufs, 8), what + " on interpreter, lane width 8", false, 8);
    test::expect_same(want, run_interp(passes::optimize(k), bufs, 32), what + " on interpreter, optimized", false, 8);
    test::expect_same(want, run_device(ctx(), k, bufs), what + " on " + ctx().info().name,
                      ctx().info().f32_denormals_flushed, 8);
    return want;
  }
};

uint32_t random_float_bits(uint32_t i) {
  // Magnitudes around the integers (where rounding decides) and spread over the whole range.
  uint32_t m = mix(i);
  if (i % 2) return m;
  return bits_of(float(int32_t(m) >> 8) * 0.25f);
}

TEST_P(MathConformance, RoundingOpsAreExact) {
  ir::Kernel k = parse_verified(
      "kernel conf_round mode=Elementwise {\n"
      "  param x: in buf<f32> extent=4096\n"
      "  param fl: out buf<f32> extent=4096\n  param ce: out buf<f32> extent=4096\n"
      "  param ri: out buf<f32> extent=4096\n  param tr: out buf<f32> extent=4096\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n"
      "  %2 = floor %1 : f32\n  store<fl> %0, %2\n  %3 = ceil %1 : f32\n  store<ce> %0, %3\n"
      "  %4 = rint %1 : f32\n  store<ri> %0, %4\n  %5 = trunc %1 : f32\n  store<tr> %0, %5\n}\n");
  const uint32_t n = 4096;
  std::vector<Buf> bufs = {{"x", DType::F32, false, words(n, f32s(kFloatSpecials), random_float_bits)},
                           {"fl", DType::F32, true, std::vector<uint32_t>(n)},
                           {"ce", DType::F32, true, std::vector<uint32_t>(n)},
                           {"ri", DType::F32, true, std::vector<uint32_t>(n)},
                           {"tr", DType::F32, true, std::vector<uint32_t>(n)}};
  std::vector<Buf> want = check_exact(k, bufs, "floor/ceil/rint/trunc");
  // The rule, not only agreement: ceil(-0.5) = -0, rint(2.5) = 2, rint(-2.5) = -2, floor(-2^-149) = -1.
  EXPECT_EQ(want[2].words[7], 0x80000000u);
  EXPECT_EQ(want[3].words[10], bits_of(2.0f));
  EXPECT_EQ(want[3].words[11], bits_of(-2.0f));
  EXPECT_EQ(want[1].words[13], bits_of(-1.0f));
}

TEST_P(MathConformance, IntegerBitOpsAreExact) {
  ir::Kernel k = parse_verified(
      "kernel conf_bits mode=Elementwise {\n"
      "  param a: in buf<u32> extent=4096\n  param b: in buf<u32> extent=4096\n"
      "  param hu: out buf<u32> extent=4096\n  param hi: out buf<i32> extent=4096\n"
      "  param pc: out buf<u32> extent=4096\n  param lz: out buf<i32> extent=4096\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : u32\n  %2 = load<b> %0 : u32\n"
      "  %3 = mulhi %1, %2 : u32\n  store<hu> %0, %3\n"
      "  %4 = cast %1 : i32\n  %5 = cast %2 : i32\n  %6 = mulhi %4, %5 : i32\n  store<hi> %0, %6\n"
      "  %7 = popcount %1 : u32\n  %8 = popcount %5 : i32\n  %9 = cast %8 : u32\n  %10 = add %7, %9 : u32\n"
      "  store<pc> %0, %10\n"
      "  %11 = clz %4 : i32\n  %12 = clz %2 : u32\n  %13 = cast %12 : i32\n  %14 = mul %11, %13 : i32\n"
      "  %15 = const<64> : i32\n  %16 = mul %11, %15 : i32\n  %17 = add %16, %13 : i32\n  store<lz> %0, %17\n}\n");
  const uint32_t n = 4096;
  const std::vector<uint32_t> sa = {0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0x10000u, 3};
  const std::vector<uint32_t> sb = {0, 0xffffffffu, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x7fffffffu, 1, 0x10000u, 0};
  std::vector<Buf> bufs = {{"a", DType::U32, false, words(n, sa, mix)},
                           {"b", DType::U32, false, words(n, sb, [](uint32_t i) { return mix(i + 77777) >> (i % 32); })},
                           {"hu", DType::U32, true, std::vector<uint32_t>(n)},
                           {"hi", DType::I32, true, std::vector<uint32_t>(n)},
                           {"pc", DType::U32, true, std::vector<uint32_t>(n)},
                           {"lz", DType::I32, true, std::vector<uint32_t>(n)}};
  std::vector<Buf> want = check_exact(k, bufs, "mulhi/popcount/clz");
  EXPECT_EQ(want[2].words[2], 0xfffffffeu);                // mulhi u32 of UINT_MAX^2
  EXPECT_EQ(want[3].words[2], 0u);                         // i32: (-1) * (-1) = 1
  EXPECT_EQ(want[3].words[3], 0x40000000u);                // INT_MIN^2 = 2^62
  EXPECT_EQ(want[3].words[6], 0xffffffffu);                // -1 * 1: the high word is the sign fill
  EXPECT_EQ(want[4].words[2], 64u);                        // popcount 32 + 32
  EXPECT_EQ(want[5].words[0], 32u * 64u + 32u);            // clz(0) = 32 for both dtypes
  EXPECT_EQ(want[5].words[2], 0u * 64u + 0u);
}

TEST_P(MathConformance, BitcastsMoveTheBitsUnchanged) {
  ir::Kernel k = parse_verified(
      "kernel conf_bitcast mode=Elementwise {\n"
      "  param x: in buf<f32> extent=4096\n  param u: in buf<u32> extent=4096\n"
      "  param xu: out buf<u32> extent=4096\n  param xi: out buf<i32> extent=4096\n"
      "  param uf: out buf<f32> extent=4096\n  param rf: out buf<f32> extent=4096\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = load<u> %0 : u32\n"
      "  %3 = ne %1, %1 : bool\n  %4 = const<0.75> : f32\n  %5 = select %3, %4, %1 : f32\n"
      "  %6 = bitcast %5 : u32\n  store<xu> %0, %6\n  %7 = bitcast %5 : i32\n  store<xi> %0, %7\n"
      "  %8 = bitcast %2 : f32\n  store<uf> %0, %8\n"
      "  %9 = cast %2 : i32\n  %10 = const<2147483647> : i32\n  %11 = and %9, %10 : i32\n"
      "  %12 = bitcast %11 : f32\n  %13 = const<1> : f32\n  %14 = mul %12, %13 : f32\n  store<rf> %0, %14\n}\n");
  const uint32_t n = 4096;
  std::vector<Buf> bufs = {{"x", DType::F32, false, words(n, f32s(kFloatSpecials), mix)},
                           {"u", DType::U32, false, words(n, {0, 0x80000000u, 0x7f800000u, 0x7fc00000u, 1, 0x3f800000u}, mix)},
                           {"xu", DType::U32, true, std::vector<uint32_t>(n)},
                           {"xi", DType::I32, true, std::vector<uint32_t>(n)},
                           {"uf", DType::F32, true, std::vector<uint32_t>(n)},
                           {"rf", DType::F32, true, std::vector<uint32_t>(n)}};
  std::vector<Buf> want = check_exact(k, bufs, "bitcast");
  EXPECT_EQ(want[2].words[1], 0x80000000u);  // -0 keeps its sign bit
  EXPECT_EQ(want[4].words[1], 0x80000000u);
  for (uint32_t i = 0; i < n; ++i) {
    if (!is_nan_bits(bufs[0].words[i])) {
      ASSERT_EQ(want[2].words[i], bufs[0].words[i]) << i;
    }
  }
}

// The inputs whose results docs/semantics.md states exactly for the bounded ops.
bool exact_special(const std::string& op, float x, float y) {
  auto special = [](float v) { return v == 0 || std::isinf(v) || std::isnan(v); };
  if (op == "pow")
    return special(x) || special(y) || x == 1.0f || (x < 0 && std::trunc(y) != y);
  if (op == "log2") return special(x) || x < 0 || (bits_of(x) & 0x7fffffu) == 0;  // log2(2^e) = e
  return special(x);
}

// The bounded ops over 2^16 inputs each, against the interpreter (the host's f32 libm): special
// values bit for bit, the rest within Iron's bound (docs/semantics.md). Prints the largest
// error seen, the figures the bound table records.
TEST_P(MathConformance, TranscendentalsStayWithinTheStatedBounds) {
  constexpr uint32_t n = 1u << 16;
  struct Case {
    const char* op;
    double lo, hi;  // inputs spread over [lo, hi] (x; for pow: the exponent)
  };
  for (const Case& c : {Case{"sin", -1048576, 1048576}, Case{"cos", -1048576, 1048576}, Case{"sin", -3e38, 3e38}, Case{"exp2", -150, 127.9},
                        Case{"log2", -60, 60}, Case{"erf", -5, 5}, Case{"pow", -20, 20}}) {
    const std::string name = c.op;
    const bool binary = name == "pow";
    ir::Kernel k = parse_verified(
        "kernel conf_" + name + " mode=Elementwise {\n  param x: in buf<f32> extent=65536\n"
        "  param y: in buf<f32> extent=65536\n  param r: out buf<f32> extent=65536\n"
        "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = load<y> %0 : f32\n  %3 = " + name +
        (binary ? " %1, %2" : " %1") + " : f32\n  store<r> %0, %3\n}\n");
    std::vector<float> x(n), y(n, 1.0f);
    for (uint32_t i = 0; i < n; ++i) {
      double t = c.lo + (c.hi - c.lo) * (double(mix(i)) / 4294967296.0);
      if (name == "log2") {
        x[i] = float(std::exp2(t));
      } else if (binary) {
        x[i] = float(std::exp2(double(mix(i + 99)) / 4294967296.0 * 8 - 4));
        y[i] = float(t);
      } else {
        x[i] = float(t);
      }
    }
    // Special values first: for pow, every pair of them.
    const std::vector<float> sp = {0.0f, -0.0f, kInf, -kInf, kNan, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, 3.0f, -3.0f, 0x1p-149f};
    size_t specials = 0;
    if (binary) {
      for (float a : sp)
        for (float b : sp) x[specials] = a, y[specials] = b, ++specials;
    } else {
      for (float a : sp) x[specials++] = a;
    }
    std::vector<Buf> bufs = {{"x", DType::F32, false, f32s(x)}, {"y", DType::F32, false, f32s(y)},
                             {"r", DType::F32, true, std::vector<uint32_t>(n)}};
    std::vector<Buf> want = run_interp(k, bufs, 32);
    std::vector<Buf> got = run_device(ctx(), k, bufs);
    const bool flushes = ctx().info().f32_denormals_flushed;
    double worst = 0, worst_rel = 0;
    int failures = 0;
    for (uint32_t i = 0; i < n && failures < 5; ++i) {
      uint32_t wb = want[2].words[i], gb = got[2].words[i];
      float w = from_bits(wb), g = from_bits(gb);
      bool ok;
      if (flushes && (is_subnormal_bits(bits_of(x[i])) || is_subnormal_bits(bits_of(y[i])) || is_subnormal_bits(wb))) ok = true;
      else if (exact_special(name, x[i], y[i])) ok = same_float(wb, gb);
      else if (std::isnan(w) || std::isinf(w)) ok = same_float(wb, gb);
      else {
        double err = std::fabs(double(g) - double(w));
        worst = std::max(worst, err);
        if (std::fabs(w) >= 0x1p-126) worst_rel = std::max(worst_rel, err / std::fabs(double(w)));
        const double aw = std::fabs(double(w));
        if (name == "sin" || name == "cos") ok = err <= 0x1p-20;
        else if (name == "erf") ok = err <= 0x1p-21 * aw;
        else if (name == "log2") ok = err <= (x[i] >= 0.5f && x[i] <= 2.0f ? 0x1p-17 : 0x1p-17 * aw);
        else if (name == "exp2") ok = err <= std::max(0x1p-20 * aw, 0x1p-146);
        else ok = err <= std::max((2 + std::fabs(double(y[i]))) * 0x1p-17 * aw, 0x1p-146);  // pow
      }
      if (!ok) {
        ++failures;
        ADD_FAILURE() << name << "(" << x[i] << (binary ? ", " + std::to_string(y[i]) : "") << ") on "
                      << ctx().info().name << " is " << g << " (0x" << std::hex << gb << "), interpreter " << w << " (0x"
                      << wb << std::dec << ")";
      }
    }
    std::printf("[ measured ] %s on %s: largest error %.3g absolute, %.3g relative (%u inputs)\n", c.op,
                ctx().info().name.c_str(), worst, worst_rel, n);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, MathConformance, ::testing::Values(Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return std::string(p.param == Backend::Vulkan ? "Vulkan" : "Cuda");
                         });

}  // namespace
