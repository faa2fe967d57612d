// Conformance kernels for the element types beyond f32/f16/bf16/i32/u32 (docs/semantics.md,
// "Element types"): integer arithmetic in the written width at every integer dtype, saturating
// float -> integer casts, and fp8 rounding and widening. Each oracle computes the rule on the
// host independently of eval. Dispatch: one element per thread, grid = {ceil(n / 64)} x {64}.
#include <cmath>
#include <cstdint>

#include <iron/iron.hpp>

#include "core/numeric.hpp"

namespace iron::kernels {
using namespace iron::dsl;

// Wrapping arithmetic, division and shifts in the width of T: each output names one rule.
static void int_arith() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer sum = output("sum", T, {n});      // a * b + a: wraps at the width
  Buffer quot = output("quot", T, {n});    // a / b, with x / 0 = x and MIN / -1 = MIN
  Buffer rest = output("rest", T, {n});    // a % b, with x % 0 = 0
  Buffer shifts = output("shifts", T, {n}); // (a << (b & 7)) ^ (a >> (b & 7)): arithmetic for signed T
  Buffer widen = output("widen", i64, {n}); // i64(a) - i64(b): a value conversion, exact
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Operand x = a[i], y = b[i];  // each loaded once
    sum[i] = x * y + x;
    quot[i] = x / y;
    rest[i] = x % y;
    Expr s = y & 7;
    shifts[i] = (x << s) ^ (x >> s);
    widen[i] = cast<i64>(x) - cast<i64>(y);
  });
}
IRON_KERNEL(iron_int_arith, int_arith, Elementwise, i8, u8, i16, u16, i32, u32, i64, u64);

// Float -> T: truncate toward zero, saturate to T's range, NaN -> 0; and T -> f32 back.
static void float_to_int() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", T, {n});
  Buffer back = output("back", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Expr v = cast<T>(x[i]);
    out[i] = v;
    back[i] = cast<f32>(v);
  });
}
IRON_KERNEL(iron_float_to_int, float_to_int, Elementwise, i8, u8, i16, u16, i64, u64);

// f32 -> fp8 (round to nearest even, saturating) stored, and the widened value computed with.
static void fp8_round_trip() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer q = output("q", T, {n});
  Buffer twice = output("twice", f32, {n});  // 2 * the fp8 value: arithmetic after a cast to f32
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Expr v = cast<T>(x[i]);
    q[i] = v;
    twice[i] = cast<f32>(v) * 2.0f;
  });
}
IRON_KERNEL(iron_fp8_round_trip, fp8_round_trip, Elementwise, f8e4m3, f8e5m2);

namespace {

// The value of integer v reduced to dtype t (two's complement modulo 2^bits).

double wrapped(DType t, __int128 v) {
  uint64_t c = num::int_wrap(t, uint64_t(v));
  return is_signed_integer(t) ? double(int64_t(c)) : double(c);
}
__int128 value_min(DType t) { return num::int_min(t); }

// Operands over the whole range of t, with the edge values every rule has: 0, 1, -1, MIN, MAX.
std::vector<double> operands(DType t, uint32_t n, uint64_t seed) {
  const double lo = double(num::int_min(t)), hi = double(num::int_max(t));
  // 64-bit dtypes: values up to 2^52 in magnitude, so the harness's f64 fixtures hold them exactly.
  const double span_lo = int_bits(t) == 64 ? (is_signed_integer(t) ? -0x1p52 : 0.0) : lo;
  const double span_hi = int_bits(t) == 64 ? 0x1p52 : hi;
  std::vector<double> v = fixture::uniform(n, span_lo, span_hi, seed);
  for (double& x : v) x = std::trunc(x);
  const double edges[] = {0, 1, is_signed_integer(t) ? -1.0 : 2.0, int_bits(t) == 64 ? span_lo : lo,
                          int_bits(t) == 64 ? span_hi : hi, 7, 3};
  for (uint32_t k = 0; k < n && k < 7 * 7; ++k) v[k] = edges[(seed & 1) ? k % 7 : k / 7];
  return v;
}

TestSetup int_arith_case(DType dt, uint32_t n) {
  return TestSetup(dt)
      .in("a", operands(dt, n, 41))
      .in("b", operands(dt, n, 42))
      .out("sum", n).out("quot", n).out("rest", n).out("shifts", n).out("widen", n)
      .constexprs({{"n", n}})
      .grid({(n + 63) / 64, 1, 1}, {64, 1, 1})
      .oracle([n, dt](const Tensors& in, Tensors& out) {
        const bool sgn = is_signed_integer(dt);
        for (uint32_t i = 0; i < n; ++i) {
          const __int128 x = __int128(in.at("a")[i]), y = __int128(in.at("b")[i]);
          out.at("sum")[i] = wrapped(dt, x * y + x);
          const bool min_by_minus_one = sgn && x == value_min(dt) && y == -1;
          out.at("quot")[i] = y == 0 || min_by_minus_one ? wrapped(dt, x) : wrapped(dt, x / y);
          out.at("rest")[i] = y == 0 || (sgn && y == -1) ? 0.0 : wrapped(dt, x % y);
          const int s = int(uint64_t(num::int_wrap(dt, uint64_t(y))) & 7);
          const __int128 left = x * (__int128(1) << s);
          __int128 right = x;  // arithmetic for signed (floor division), logical for unsigned
          for (int k = 0; k < s; ++k) right = right >= 0 ? right / 2 : (right - 1) / 2;
          const uint64_t l = num::int_wrap(dt, uint64_t(left)), r = num::int_wrap(dt, uint64_t(right));
          out.at("shifts")[i] = wrapped(dt, __int128(sgn ? __int128(int64_t(l ^ r)) : __int128(l ^ r)));
          out.at("widen")[i] = wrapped(DType::I64, x - y);
        }
      });
}

// Every finite value class of a float -> int cast: in range (fractions both signs), just
// outside, far outside, signed zeros (NaN and infinities, which fixtures cannot hold, are covered
// by tests/unit/semantics_test.cpp).
std::vector<double> float_inputs(DType t, uint32_t n) {
  const double hi = double(num::int_max(t)), lo = double(num::int_min(t));
  std::vector<double> v = fixture::uniform(n, lo - 0.25 * (hi - lo + 1) - 3, hi + 0.25 * (hi - lo + 1) + 3, 51);
  const double edges[] = {0.0, -0.0, 0.75, -0.75, -1.5, 2.5, hi, hi + 1, lo, lo - 1,
                          std::ldexp(1.0, int(int_bits(t))), -std::ldexp(1.0, int(int_bits(t))), 1e30, -1e30};
  for (size_t k = 0; k < sizeof edges / sizeof edges[0] && k < n; ++k) v[k] = edges[k];
  for (double& x : v) x = double(float(x));  // the f32 the kernel reads
  return v;
}

TestSetup float_to_int_case(DType dt, uint32_t n) {
  return TestSetup(dt)
      .in("x", float_inputs(dt, n))
      .out("out", n).out("back", n)
      .constexprs({{"n", n}})
      .grid({(n + 63) / 64, 1, 1}, {64, 1, 1})
      .oracle([n, dt](const Tensors& in, Tensors& out) {
        for (uint32_t i = 0; i < n; ++i) {
          const double x = in.at("x")[i];
          double r = 0;  // NaN -> 0
          if (!std::isnan(x)) r = std::min(std::max(std::trunc(x), double(num::int_min(dt))), double(num::int_max(dt)));
          out.at("out")[i] = r;
          out.at("back")[i] = double(float(r));  // one rounding to f32
        }
      });
}

TestSetup fp8_case(DType dt, uint32_t n, uint64_t seed) {
  const double max = dt == DType::F8E4M3 ? 448 : 57344;
  std::vector<double> x = fixture::magnitudes(n, dt == DType::F8E4M3 ? -12 : -20, dt == DType::F8E4M3 ? 10 : 17, seed);
  const double edges[] = {0.0, -0.0, max, -max, max * 1.03, max * 1.1, -max * 4, 1e30, -1e38,
                          std::ldexp(1.0, dt == DType::F8E4M3 ? -9 : -16), std::ldexp(1.0, dt == DType::F8E4M3 ? -10 : -17),
                          std::ldexp(3.0, dt == DType::F8E4M3 ? -11 : -18), 1.0625, 1.1875, 0.3};
  for (size_t k = 0; k < sizeof edges / sizeof edges[0] && k < n; ++k) x[k] = edges[k];
  for (double& v : x) v = double(float(v));
  return TestSetup(dt)
      .in("x", x)
      .out("q", n).out("twice", n)
      .constexprs({{"n", n}})
      .grid({(n + 63) / 64, 1, 1}, {64, 1, 1})
      .error_floor(std::ldexp(1.0, dt == DType::F8E4M3 ? -6 : -14))
      .oracle([n, dt](const Tensors& in, Tensors& out) {
        for (uint32_t i = 0; i < n; ++i) {
          const double q = num::fp8_to_f32(dt, num::f32_to_fp8(dt, float(in.at("x")[i])));
          out.at("q")[i] = q;
          out.at("twice")[i] = 2 * q;
        }
      });
}

}  // namespace

// 1000 elements: a partial last threadgroup; every integer width; the edge operands first.
IRON_TEST_KERNEL(iron_int_arith, n1000, {i8}, {u8}, {i16}, {u16}, {i32}, {u32}, {i64}, {u64}) {
  return int_arith_case(dt, 1000);
}
IRON_TEST_KERNEL(iron_float_to_int, n777, {i8}, {u8}, {i16}, {u16}, {i64}, {u64}) { return float_to_int_case(dt, 777); }
// 4000: not a multiple of the threadgroup, so threads past the end exist (the tail guard shows).
IRON_TEST_KERNEL(iron_fp8_round_trip, n4000, {f8e4m3}, {f8e5m2}) { return fp8_case(dt, 4000, 61); }

}  // namespace iron::kernels
