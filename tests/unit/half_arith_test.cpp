// f16 and bf16 arithmetic in the type it is written in (docs/semantics.md "16-bit float
// arithmetic"): every op rounds to its dtype, fma rounds once. The scalar rules are checked
// against an independent model (exact integer arithmetic, then round to nearest even at the
// dtype's precision), the fma inputs that separate one rounding from two are searched for and
// run on every backend (the interpreter at lane widths 8 and 32, unoptimized and optimized, and
// Vulkan / CUDA where present), and the dialects' spellings are checked in the emitted source.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "ir_text.hpp"
#include "passes/eval.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"
#include "device_run.hpp"

namespace iron {
namespace {

using test::parse_verified;

struct Format {
  DType d;
  int p;     // significand bits, the hidden one included
  int emin;  // exponent of the smallest normal
  double max;
};
const Format kF16{DType::F16, 11, -14, 65504.0};
const Format kBf16{DType::BF16, 8, -126, 0x1.fep127};

// A finite double x rounded to nearest even at the format's precision, overflow to +-inf.
// Independent of num::: the quantum of x's binade (or of the subnormal range), then nearbyint.
double model_round(const Format& f, double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);
  const int q = std::max(e - 1, f.emin) - (f.p - 1);
  const double r = std::nearbyint(std::ldexp(x, -q));
  const double v = std::ldexp(r, q);
  if (std::fabs(v) > f.max) return std::copysign(INFINITY, x);
  return v;
}

// The exact a * b + c of three values of the format, rounded once by the model. Each value is
// an integer times a power of two; the sum is formed exactly in 128-bit integers (the test keeps
// exponents within reach: at most 2^-60 .. 2^40 for the operands below).
double model_fma(const Format& f, float a, float b, float c) {
  auto split = [](float x, int64_t& m, int& e) {
    int ex;
    double fr = std::frexp(double(x), &ex);
    m = int64_t(std::ldexp(fr, 24));
    e = ex - 24;
  };
  int64_t ma, mb, mc;
  int ea, eb, ec;
  split(a, ma, ea);
  split(b, mb, eb);
  split(c, mc, ec);
  __int128 prod = __int128(ma) * mb;
  int ep = ea + eb;
  if (ma == 0 || mb == 0) ep = ec;
  if (mc == 0) ec = ep;
  const int e0 = std::min(ep, ec);
  const bool fits = 48 + (ep - e0) < 126 && 24 + (ec - e0) < 126;
  EXPECT_TRUE(fits) << "model_fma: operands too far apart for 128 bits";
  if (!fits) return NAN;
  __int128 sum = (prod << (ep - e0)) + (__int128(mc) << (ec - e0));
  if (sum == 0) return (std::signbit(a) != std::signbit(b)) && std::signbit(c) ? -0.0 : 0.0;
  const bool neg = sum < 0;
  unsigned __int128 mag = neg ? -sum : sum;
  int msb = 127;
  while (!((mag >> msb) & 1)) --msb;
  const int q = std::max(msb + e0, f.emin) - (f.p - 1);  // the quantum's exponent
  const int shift = q - e0;
  unsigned __int128 kept = mag;
  if (shift > 0) {
    kept = mag >> shift;
    using u128 = unsigned __int128;
    const u128 rest = mag - (kept << shift), half = u128(1) << (shift - 1);
    if (rest > half || (rest == half && (kept & 1))) ++kept;
  } else {
    kept = mag << -shift;
  }
  double v = std::ldexp(double(uint64_t(kept)), q);
  if (v > f.max) v = INFINITY;
  return neg ? -v : v;
}

float value_of(const Format& f, uint16_t h) {
  return f.d == DType::F16 ? num::f16_to_f32(h) : num::bf16_to_f32(h);
}
uint16_t bits_in(const Format& f, float v) { return f.d == DType::F16 ? num::f32_to_f16(v) : num::f32_to_bf16(v); }

float eval_op(ir::Op op, DType t, std::vector<float> x) {
  eval::Scalar args[3], out;
  for (size_t i = 0; i < x.size(); ++i) args[i] = eval::Scalar::of_f32(x[i]);
  std::string error;
  EXPECT_TRUE(eval::eval_pure(op, t, t, args, int(x.size()), out, error)) << error;
  return out.f();
}

bool same(double want, float got) {
  if (std::isnan(want)) return std::isnan(got);
  return double(got) == want && std::signbit(want) == std::signbit(got);
}

// A random finite value of the format with the exponent in [lo, hi] (subnormals included when lo
// reaches them), either sign.
uint16_t random_value(const Format& f, std::mt19937& rng, int lo, int hi) {
  for (;;) {
    const int e = lo + int(rng() % uint32_t(hi - lo + 1));
    const double m = 1.0 + double(rng() % (1u << (f.p - 1))) / double(1u << (f.p - 1));
    const uint16_t h = bits_in(f, float(std::ldexp(rng() % 2 ? -m : m, e)));
    if (std::isfinite(value_of(f, h))) return h;
  }
}

TEST(HalfArith, AddSubMulDivSqrtRoundLikeNative16BitArithmetic) {
  for (const Format& f : {kF16, kBf16}) {
    std::mt19937 rng(7);
    const int lo = f.d == DType::F16 ? -24 : -133, hi = f.d == DType::F16 ? 15 : 127;
    int checked = 0;
    for (int i = 0; i < 200000; ++i) {
      // Half the pairs near each other (cancellation, subnormal sums), half over the whole range.
      const float a = value_of(f, random_value(f, rng, lo, hi));
      const float b = i % 2 ? value_of(f, random_value(f, rng, lo, hi)) : value_of(f, bits_in(f, a * (1.0f + float(int(rng() % 64) - 32) / 512.0f)));
      const double da = a, db = b;
      // Products and quotients of 16-bit values: the f64 result is exact or (÷, √) rounded with
      // 53 >= 2p + 2 bits, so model_round of it is the correctly rounded 16-bit result.
      ASSERT_TRUE(same(model_round(f, da + db), eval_op(ir::Op::Add, f.d, {a, b}))) << dtype_name(f.d) << " " << a << " + " << b;
      ASSERT_TRUE(same(model_round(f, da - db), eval_op(ir::Op::Sub, f.d, {a, b}))) << dtype_name(f.d) << " " << a << " - " << b;
      ASSERT_TRUE(same(model_round(f, da * db), eval_op(ir::Op::Mul, f.d, {a, b}))) << dtype_name(f.d) << " " << a << " * " << b;
      if (b != 0) {
        ASSERT_TRUE(same(model_round(f, da / db), eval_op(ir::Op::Div, f.d, {a, b}))) << dtype_name(f.d) << " " << a << " / " << b;
      }
      if (a >= 0) {
        ASSERT_TRUE(same(model_round(f, std::sqrt(da)), eval_op(ir::Op::Sqrt, f.d, {a}))) << dtype_name(f.d) << " sqrt " << a;
      }
      ++checked;
    }
    EXPECT_EQ(checked, 200000);
  }
  // Every op rounds, not only stores: 1 + 2^-11 is a tie in f16 (to 1), 2049 * 1 is not an f16.
  EXPECT_EQ(eval_op(ir::Op::Add, DType::F16, {1.0f, 0x1p-11f}), 1.0f);
  EXPECT_EQ(eval_op(ir::Op::Add, DType::F16, {1.0f, 0x1.8p-11f}), 1.0f + 0x1p-10f);
  EXPECT_EQ(eval_op(ir::Op::Mul, DType::BF16, {257.0f, 1.0f}), 256.0f);
  EXPECT_TRUE(std::isinf(eval_op(ir::Op::Mul, DType::F16, {256.0f, 256.0f})));  // f16 overflow
  EXPECT_EQ(eval_op(ir::Op::Exp, DType::F16, {1.0f}), num::round_to(DType::F16, std::exp(1.0f)));
  // f32 is unchanged: 1 + 2^-11 is exact there.
  EXPECT_EQ(eval_op(ir::Op::Add, DType::F32, {1.0f, 0x1p-11f}), 1.0f + 0x1p-11f);
}

// Triples whose f32 fma, rounded to the dtype, differs from the single rounding of the exact
// value: a * b (exact in f32) lies on a midpoint between two values of the dtype, and c is a value
// of the dtype too small to move the f32 result off it, on the side of the odd neighbour. The
// f32 fma then rounds to the midpoint and ties go to the even neighbour; the exact value is past
// the midpoint, so one rounding gives the odd one.
struct Triple {
  float a, b, c;
};
std::vector<Triple> separating_triples(const Format& f, int want) {
  std::mt19937 rng(f.d == DType::F16 ? 11 : 12);
  std::vector<Triple> out;
  for (int i = 0; i < 4000000 && int(out.size()) < want; ++i) {
    const float a = value_of(f, random_value(f, rng, 2, 7)), b = value_of(f, random_value(f, rng, 2, 7));
    const float p = a * b;  // exact: at most 22 significant bits
    const float even = num::round_to(f.d, p);
    if (even == p || !std::isfinite(even)) continue;
    const float odd = 2.0f * p - even;  // the other neighbour when p is a midpoint
    if (num::round_to(f.d, odd) != odd || odd - p != p - even) continue;
    const float c = value_of(f, bits_in(f, std::copysign(std::fabs(p) * 0x1p-27f, odd - even)));
    if (c == 0) continue;
    out.push_back({a, b, c});
  }
  return out;
}

TEST(HalfArith, FmaSeparatesSingleFromDoubleRounding) {
  for (const Format& f : {kF16, kBf16}) {
    const std::vector<Triple> sep = separating_triples(f, 64);
    ASSERT_GE(sep.size(), 16u) << dtype_name(f.d) << ": the search found too few separating inputs";
    for (const Triple& t : sep) {
      const double want = model_fma(f, t.a, t.b, t.c);
      ASSERT_TRUE(same(want, eval_op(ir::Op::Fma, f.d, {t.a, t.b, t.c})))
          << dtype_name(f.d) << " fma(" << t.a << ", " << t.b << ", " << t.c << "): want " << want;
    }
    // And on random triples over a wide range, including exact zeros and cancellation.
    std::mt19937 rng(f.d == DType::F16 ? 21 : 22);
    const int lo = f.d == DType::F16 ? -24 : -20, hi = f.d == DType::F16 ? 15 : 20;
    for (int i = 0; i < 200000; ++i) {
      const float a = value_of(f, random_value(f, rng, lo, hi)), b = value_of(f, random_value(f, rng, lo, hi));
      float c = value_of(f, random_value(f, rng, lo, hi));
      if (i % 5 == 0 && std::isfinite(value_of(f, bits_in(f, a * b))))
        c = -value_of(f, bits_in(f, a * b));  // cancellation, often exact zero
      if (i % 7 == 0) c = 0.0f;
      ASSERT_TRUE(same(model_fma(f, a, b, c), eval_op(ir::Op::Fma, f.d, {a, b, c})))
          << dtype_name(f.d) << " fma(" << a << ", " << b << ", " << c << ")";
    }
  }
  // Signs of zero as IEEE fma: -0 * 1 + -0 = -0, 1 * -1 + 1 = +0.
  EXPECT_TRUE(std::signbit(eval_op(ir::Op::Fma, DType::F16, {-0.0f, 1.0f, -0.0f})));
  EXPECT_FALSE(std::signbit(eval_op(ir::Op::Fma, DType::BF16, {1.0f, -1.0f, 1.0f})));
  // Overflow of the exact value gives inf; a product beyond f16 cancelled by c does not.
  EXPECT_TRUE(std::isinf(eval_op(ir::Op::Fma, DType::F16, {65504.0f, 2.0f, 0.0f})));
  EXPECT_EQ(eval_op(ir::Op::Fma, DType::F16, {65504.0f, 2.0f, -65504.0f}), 65504.0f);
  EXPECT_EQ(eval_op(ir::Op::Fma, DType::BF16, {0x1p64f, 0x1p64f, -0x1.fep127f}), 0x1p120f);
  EXPECT_TRUE(std::isinf(eval_op(ir::Op::Fma, DType::BF16, {0x1p100f, 0x1p100f, -0x1p120f})));
}

TEST(HalfArith, FmaRoundOddIsExactOrOddAndTruncated) {
  // num::fma_round_odd against the model at a 24-bit "format" with truncation: checked through
  // its defining property on random f32 triples, exact cases included.
  std::mt19937 rng(31);
  for (int i = 0; i < 100000; ++i) {
    // Exponents close enough that the exact a * b + c fits the 64-bit long double significand.
    auto r = [&] { return std::ldexp(float(int32_t(rng()) >> 8), int(rng() % 8) - 40); };
    // c within a few binades of a * b: the exact sum spans at most ~52 bits.
    const float a = r(), b = r(), c = i % 3 ? a * b * std::ldexp(float(int32_t(rng()) >> 8), -23 + int(rng() % 4)) : -a * b;
    const float got = num::fma_round_odd(a, b, c);
    const long double exact = (long double)a * b + c;  // 64-bit significand: exact for these
    if ((long double)got == exact) continue;
    // Inexact: the odd one of the two f32 values around the exact value (its truncation with
    // the last bit set), so strictly within one step of it on either side.
    uint32_t u;
    std::memcpy(&u, &got, 4);
    ASSERT_EQ(u & 1u, 1u) << a << " " << b << " " << c;
    const float below = std::nextafter(got, 0.0f), above = std::nextafter(got, got > 0 ? INFINITY : -INFINITY);
    ASSERT_LT(std::fabs((long double)below), std::fabs(exact)) << a << " " << b << " " << c;
    ASSERT_GT(std::fabs((long double)above), std::fabs(exact)) << a << " " << b << " " << c;
  }
  EXPECT_EQ(num::fma_round_odd(0x1p127f, 4.0f, 0.0f), 3.4028234663852886e38f);  // beyond f32: the largest
}

TEST(HalfArith, ConstantsAreValuesOfTheirDtype) {
  ir::Kernel k = parse_verified(
      "kernel c mode=Elementwise dtypes=f16,bf16 {\n"
      "  param out: out buf<T> extent=64\n"
      "  %0 = thread_id<0> : u32\n  %1 = const<0.1> : f16\n  %2 = const<0.1> : T\n  %3 = add %1, %1 : f16\n"
      "  %4 = cast %3 : T\n  %5 = add %4, %2 : T\n  store<out> %0, %5\n}\n");
  std::vector<ir::Id> consts, adds;
  ir::walk(k, [&](ir::Id id) {
    if (k.insts[id].op == ir::Op::Const) consts.push_back(id);
    if (k.insts[id].op == ir::Op::Add) adds.push_back(id);
  });
  ASSERT_EQ(consts.size(), 2u);
  ASSERT_EQ(adds.size(), 2u);
  EXPECT_EQ(eval::const_value(k.insts[consts[0]], DType::F32).f(), 0.0999755859375f);
  EXPECT_EQ(eval::const_value(k.insts[consts[1]], DType::BF16).f(), num::round_to(DType::BF16, 0.1f));
  // const_fold folds the f16 add with its rounding and leaves the T add alone (f16 or bf16).
  ir::Kernel o = k;
  passes::PassContext ctx;
  passes::run_const_fold(o, ctx);
  EXPECT_EQ(o.insts[adds[0]].op, ir::Op::Const);
  EXPECT_EQ(float(o.insts[adds[0]].fattr(ir::Attr::Value)), 0.199951171875f);  // 2 * 0x1.998p-4 in f16
  EXPECT_EQ(o.insts[adds[1]].op, ir::Op::Add);
}

// Emission: each 16-bit op is rounded (CUDA __float2half_rn / GLSL iron_f32_to_f16 around the
// f32 op), fma goes through the 16-bit fma, and a store of an op rounds once.
TEST(HalfArith, DialectsRoundEveryOpAndTheSourceCompiles) {
  ir::Kernel k = parse_verified(
      "kernel h mode=Elementwise dtypes=f16,bf16 {\n"
      "  param a: in buf<T> extent=64\n  param b: in buf<T> extent=64\n  param out: out buf<T> extent=64\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : T\n  %2 = load<b> %0 : T\n"
      "  %3 = mul %1, %2 : T\n  %4 = add %3, %1 : T\n  %5 = fma %4, %2, %1 : T\n  %6 = sqrt %5 : T\n"
      "  store<out> %0, %6\n}\n");
  for (DType t : {DType::F16, DType::BF16}) {
    codegen::Emitted cuda = codegen::emit(k, t, codegen::Target::Cuda);
    ASSERT_TRUE(cuda.ok()) << cuda.diags.render(k);
    const std::string round = t == DType::F16 ? "__half2float(__float2half_rn(" : "__bfloat162float(__float2bfloat16_rn(";
    EXPECT_NE(cuda.source.find(round + "("), std::string::npos) << cuda.source;  // the multiply, rounded
    EXPECT_NE(cuda.source.find(t == DType::F16 ? "iron_fma_f16(" : "iron_fma_bf16("), std::string::npos) << cuda.source;
    EXPECT_NE(cuda.source.find("__hfma("), std::string::npos) << cuda.source;
    codegen::Emitted glsl = codegen::emit(k, t, codegen::Target::Glsl);
    ASSERT_TRUE(glsl.ok()) << glsl.diags.render(k);
    const std::string gr = t == DType::F16 ? "iron_f16_to_f32(iron_f32_to_f16(" : "iron_bf16_to_f32(iron_f32_to_bf16(";
    EXPECT_NE(glsl.source.find(gr), std::string::npos) << glsl.source;
    EXPECT_NE(glsl.source.find(t == DType::F16 ? "iron_fma_odd_f16(" : "iron_fma_odd("), std::string::npos) << glsl.source;
    EXPECT_EQ(glsl.source.find("double"), t == DType::F16 ? std::string::npos : glsl.source.find("double")) << glsl.source;
    codegen::Spirv spv = codegen::compile_glsl(glsl.source, "h");
    EXPECT_TRUE(spv.ok) << spv.log << glsl.source;
    // Both arms of the bf16 fma helper: native on sm_80 / sm_90, iron_fma_odd on sm_75 (this
    // NVRTC compiles nothing below sm_53's f16 fma).
    for (const char* arch : {"sm_75", "sm_80", "sm_90a"}) {
      rt::NvrtcResult r = rt::nvrtc_compile(cuda.source, "h", arch);
      EXPECT_TRUE(r.ok) << arch << ": " << r.log.substr(0, 4000);
    }
  }
  // f32 keeps its plain spelling: no rounding helper, the native fma.
  ir::Kernel f = parse_verified(
      "kernel h32 mode=Elementwise {\n"
      "  param a: in buf<f32> extent=64\n  param out: out buf<f32> extent=64\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : f32\n  %2 = mul %1, %1 : f32\n  %3 = fma %2, %1, %1 : f32\n"
      "  store<out> %0, %3\n}\n");
  codegen::Emitted c32 = codegen::emit(f, DType::F32, codegen::Target::Cuda);
  EXPECT_EQ(c32.source.find("__float2half_rn"), std::string::npos) << c32.source;
  EXPECT_NE(c32.source.find("fmaf("), std::string::npos) << c32.source;
  // A store of an f16 op rounds once: the op's own rounding is the store's.
  ir::Kernel st = parse_verified(
      "kernel st mode=Elementwise {\n"
      "  param a: in buf<f16> extent=64\n  param out: out buf<f16> extent=64\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : f16\n  %2 = add %1, %1 : f16\n  store<out> %0, %2\n}\n");
  ir::Kernel sto = passes::optimize(st);
  codegen::Emitted cst = codegen::emit(sto, DType::F32, codegen::Target::Cuda);
  EXPECT_NE(cst.source.find("= __float2half_rn(("), std::string::npos) << cst.source;
  EXPECT_EQ(cst.source.find("__float2half_rn(__half2float"), std::string::npos) << cst.source;
  codegen::Emitted gst = codegen::emit(sto, DType::F32, codegen::Target::Glsl);
  EXPECT_EQ(gst.source.find("iron_f16_to_f32(iron_f32_to_f16("), std::string::npos) << gst.source;
  EXPECT_NE(gst.source.find("uint16_t(iron_f32_to_f16("), std::string::npos) << gst.source;
}

// The conformance kernel: every 16-bit op on inputs that include the separating fma triples,
// subnormals, ties, overflow and the special values, on every backend, bit for bit.
class HalfConformance : public test::DeviceTest {};

const char* const kHalfOpsIr =
    "kernel half_ops mode=Elementwise dtypes=f16,bf16 {\n"
    "  param a: in buf<T> extent=2048\n  param b: in buf<T> extent=2048\n  param c: in buf<T> extent=2048\n"
    "  param add: out buf<T> extent=2048\n  param mul: out buf<T> extent=2048\n  param div: out buf<T> extent=2048\n"
    "  param fma: out buf<T> extent=2048\n  param chain: out buf<f32> extent=2048\n"
    "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : T\n  %2 = load<b> %0 : T\n  %3 = load<c> %0 : T\n"
    "  %4 = sub %1, %2 : T\n  %5 = add %4, %3 : T\n  store<add> %0, %5\n"
    "  %6 = mul %1, %2 : T\n  store<mul> %0, %6\n"
    "  %7 = div %1, %2 : T\n  store<div> %0, %7\n"
    "  %8 = fma %1, %2, %3 : T\n  store<fma> %0, %8\n"
    // A chain kept in registers and widened at the end: the intermediate roundings show in f32.
    "  %9 = mul %1, %1 : T\n  %10 = add %9, %3 : T\n  %11 = sqrt %10 : T\n  %12 = neg %11 : T\n  %13 = min %12, %2 : T\n"
    "  %14 = const<0.1> : T\n  %15 = mul %13, %14 : T\n  %16 = cast %15 : f32\n  store<chain> %0, %16\n}\n";

TEST_P(HalfConformance, EveryOpRoundsToItsDtypeOnEveryBackend) {
  ir::Kernel k = parse_verified(kHalfOpsIr);
  Context& ctx = this->ctx();
  const uint32_t n = 2048;
  for (const Format& f : {kF16, kBf16}) {
    std::vector<Triple> in = separating_triples(f, 256);
    ASSERT_GE(in.size(), 64u);
    const size_t separating = in.size();
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, 0x1p-11f, 65504.0f, 0x1p-24f, 0x1p-133f};
    std::mt19937 rng(41);
    const int lo = f.d == DType::F16 ? -24 : -133, hi = f.d == DType::F16 ? 15 : 127;
    while (in.size() < n) {
      float x[3];
      for (float& v : x)
        v = rng() % 8 == 0 ? specials[rng() % std::size(specials)] : value_of(f, random_value(f, rng, lo, hi));
      in.push_back({x[0], x[1], x[2]});
    }
    std::vector<double> a(n), b(n), c(n);
    for (uint32_t i = 0; i < n; ++i) a[i] = in[i].a, b[i] = in[i].b, c[i] = in[i].c;
    // Interpreter at lane widths 8 and 32, unoptimized and optimized, and the device.
    auto run = [&](const ir::Kernel& kk, int where, uint32_t lanes) {
      std::vector<std::vector<uint16_t>> h(7, std::vector<uint16_t>(n));
      num::encode(f.d, a.data(), h[0].data(), n);
      num::encode(f.d, b.data(), h[1].data(), n);
      num::encode(f.d, c.data(), h[2].data(), n);
      std::vector<float> chain(n);
      if (where == 0) {
        std::vector<interp::BufferArg> args;
        for (int i = 0; i < 7; ++i) args.push_back({h[size_t(i)].data(), n * 2});
        args.push_back({chain.data(), n * 4});
        interp::Options opts;
        opts.lane_width = lanes;
        interp::run(kk, f.d, args, {}, {n / 64, 1, 1}, {64, 1, 1}, opts);
      } else {
        const char* names[] = {"a", "b", "c", "add", "mul", "div", "fma"};
        Bindings bind;
        for (int i = 0; i < 7; ++i) {
          DeviceBuffer d = ctx.alloc(f.d, n);
          ctx.upload(d, h[size_t(i)].data(), n * 2);
          bind.push_back({names[i], d});
        }
        DeviceBuffer dc = ctx.alloc(DType::F32, n);
        bind.push_back({"chain", dc});
        ctx.dispatch_with_grid(kk, f.d, bind, {}, {n / 64, 1, 1}, {64, 1, 1});
        ctx.synchronize();
        for (int i = 3; i < 7; ++i) ctx.download(bind[size_t(i)].second, h[size_t(i)].data(), n * 2);
        ctx.download(dc, chain.data(), n * 4);
      }
      std::vector<uint32_t> words;
      for (int i = 3; i < 7; ++i)
        for (uint16_t v : h[size_t(i)]) words.push_back(v);
      for (float v : chain) {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        words.push_back(u);
      }
      return words;
    };
    // Unoptimized: the interpreter at lane width 32 is the reference for lane width 8. The
    // device runs the pipeline, whose fma_fusion fuses the chain's mul and add (one rounding
    // instead of two, docs/semantics.md): the optimized interpreter is its reference.
    const std::vector<uint32_t> want = run(k, 0, 32);
    const ir::Kernel opt = passes::optimize(k);
    const std::vector<uint32_t> want_opt = run(opt, 0, 32);
    // The interpreter is right by the model on the separating rows: fma rounds once, mul per op.
    for (uint32_t i = 0; i < separating; ++i) {
      ASSERT_TRUE(same(model_fma(f, in[i].a, in[i].b, in[i].c), value_of(f, uint16_t(want[3 * n + i]))))
          << dtype_name(f.d) << " fma row " << i;
      ASSERT_TRUE(same(model_round(f, double(in[i].a) * in[i].b), value_of(f, uint16_t(want[n + i]))))
          << dtype_name(f.d) << " mul row " << i;
    }
    const bool flushes = ctx.info().f32_denormals_flushed;
    const std::vector<std::tuple<std::string, std::vector<uint32_t>, const std::vector<uint32_t>*>> runs = {
        {"interpreter, lane width 8", run(k, 0, 8), &want},
        {"optimized interpreter, lane width 8", run(opt, 0, 8), &want_opt},
        {ctx.info().name, run(k, 1, 0), &want_opt}};
    for (const auto& [where, got, ref] : runs) {
      int failures = 0;
      for (size_t i = 0; i < want.size() && failures < 8; ++i) {
        const bool f32 = i >= 4 * n;
        const uint32_t w = (*ref)[i], g = got[i];
        const bool nan_w = f32 ? (w & 0x7fffffffu) > 0x7f800000u : std::isnan(value_of(f, uint16_t(w)));
        const bool nan_g = f32 ? (g & 0x7fffffffu) > 0x7f800000u : std::isnan(value_of(f, uint16_t(g)));
        if (w == g || (nan_w && nan_g)) continue;
        // A device that flushes f32 subnormals: rows with a subnormal operand or result (a bf16
        // result, or the f32 output that widens one).
        const uint32_t row = uint32_t(i % n);
        auto sub = [](float v) { return v != 0 && std::fabs(v) < 0x1p-126f; };
        float wf;
        std::memcpy(&wf, &w, 4);
        const float wv = f32 ? wf : value_of(f, uint16_t(w));
        if (flushes && where == ctx.info().name && (sub(in[row].a) || sub(in[row].b) || sub(in[row].c) || sub(wv)))
          continue;
        ++failures;
        ADD_FAILURE() << dtype_name(f.d) << " on " << where << ": output " << i / n << " row " << row << " is 0x"
                      << std::hex << g << ", want 0x" << w << std::dec;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HalfConformance, ::testing::Values(Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) {
                           return std::string(i.param == Backend::Vulkan ? "Vulkan" : "Cuda");
                         });

}  // namespace
}  // namespace iron
