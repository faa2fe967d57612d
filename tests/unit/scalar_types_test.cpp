// The element types beyond f32/f16/bf16/i32/u32 (docs/semantics.md, "Element types"): fp8
// conversions against a brute-force f64 reference over every 8-bit code and every f16 and bf16
// value (and the f32 values just beside each bf16 one, which straddle the fp8 ties), integer
// narrowing, widening and saturating float -> integer conversion over every 8- and 16-bit input,
// and integer arithmetic in the written width over every pair of 8-bit operands, all through
// eval (what the interpreter and const_fold run) against references written independently here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "passes/eval.hpp"
#include "passes/pass.hpp"
#include "device_run.hpp"
#include "glsl_cpu.hpp"

// The emitted fp8 helpers (src/codegen/fp8_math.inc), compiled here as C++ from the same text.
namespace fp8_cpu {
using namespace iron::test::glsl_cpu;
#define IRON_FP8_HELPER(name, ...) __VA_ARGS__
#include "codegen/fp8_math.inc"
#undef IRON_FP8_HELPER
}  // namespace fp8_cpu

using namespace iron;
using eval::Scalar;
using ir::Op;

namespace {

float from_bits(uint32_t u) { return test::float_of(u); }
uint32_t to_bits(float f) { return test::bits_of(f); }

// Reference fp8 decoding from the format's definition: sign, exponent field e, mantissa m.
double ref_fp8_value(DType d, uint8_t c) {
  const bool e4m3 = d == DType::F8E4M3;
  const int mant = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, emax_field = e4m3 ? 15 : 31;
  const int e = (c & 0x7f) >> mant, m = c & ((1 << mant) - 1);
  double v;
  if (e4m3 && e == emax_field && m == (1 << mant) - 1) v = std::numeric_limits<double>::quiet_NaN();
  else if (!e4m3 && e == emax_field) v = m == 0 ? INFINITY : std::numeric_limits<double>::quiet_NaN();
  else if (e == 0) v = std::ldexp(double(m), 1 - bias - mant);
  else v = std::ldexp(double((1 << mant) + m), e - bias - mant);
  return (c & 0x80) ? -v : v;
}

// Reference f32 -> fp8: the nearest finite code by magnitude, ties to the even code (even
// mantissa), which also saturates everything beyond the largest finite value (infinities
// included) to it; a NaN gives a NaN; the sign is kept (a tiny negative gives -0).
uint8_t ref_to_fp8(DType d, float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return uint8_t(sign | 0x7f);
  const double a = std::fabs(double(x));
  const uint8_t max_code = d == DType::F8E4M3 ? 0x7e : 0x7b;
  if (a >= ref_fp8_value(d, max_code)) return uint8_t(sign | max_code);  // satfinite
  int best = -1;
  double best_err = 0;
  for (int c = 0; c < 0x80; ++c) {
    const double v = ref_fp8_value(d, uint8_t(c));
    if (!std::isfinite(v)) continue;
    const double err = std::fabs(a - v);
    if (best < 0 || err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return uint8_t(sign | best);
}

bool same_fp8(uint8_t a, uint8_t b, DType d) {
  const bool na = std::isnan(ref_fp8_value(d, a)), nb = std::isnan(ref_fp8_value(d, b));
  return na || nb ? na == nb : a == b;
}

void check_fp8_conversion(DType d, float x) {
  const uint8_t want = ref_to_fp8(d, x), got = num::f32_to_fp8(d, x);
  ASSERT_TRUE(same_fp8(got, want, d)) << dtype_name(d) << " of " << x << " (bits 0x" << std::hex << to_bits(x)
                                      << "): got 0x" << int(got) << ", want 0x" << int(want);
  // eval's cast (the interpreter and const_fold) gives the same value.
  Scalar out;
  std::string error;
  const Scalar in = Scalar::of_f32(x);
  ASSERT_TRUE(eval::eval_pure(Op::Cast, d, DType::F32, &in, 1, out, error)) << error;
  const float back = out.f();
  if (std::isnan(x)) EXPECT_TRUE(std::isnan(back));
  else ASSERT_EQ(to_bits(back), to_bits(float(ref_fp8_value(d, want)))) << dtype_name(d) << " cast of " << x;
}

TEST(ScalarTypes, Fp8DecodingOfEveryCodeIsExact) {
  for (DType d : {DType::F8E4M3, DType::F8E5M2})
    for (int c = 0; c < 256; ++c) {
      const double want = ref_fp8_value(d, uint8_t(c));
      const float got = num::fp8_to_f32(d, uint8_t(c));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << dtype_name(d) << " code " << c;
        continue;
      }
      EXPECT_EQ(double(got), want) << dtype_name(d) << " code " << c;
      EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << dtype_name(d) << " code " << c;
      // Every finite code survives a round trip, -0 included; e5m2's infinities saturate.
      const uint8_t back = num::f32_to_fp8(d, got);
      if (std::isinf(want)) EXPECT_EQ(back, (c & 0x80) | 0x7b) << dtype_name(d) << " code " << c;
      else EXPECT_EQ(back, uint8_t(c)) << dtype_name(d) << " code " << c;
    }
}

TEST(ScalarTypes, Fp8RoundingOfEveryHalfAndBfloatValueMatchesTheReference) {
  for (DType d : {DType::F8E4M3, DType::F8E5M2})
    for (uint32_t h = 0; h < 65536; ++h) {
      check_fp8_conversion(d, num::f16_to_f32(uint16_t(h)));
      const uint32_t b = h << 16;
      check_fp8_conversion(d, from_bits(b));
      // Just beside each bf16 value: the f32 values that straddle an fp8 tie.
      check_fp8_conversion(d, from_bits(b + 1));
      check_fp8_conversion(d, from_bits(b - 1));
      if (HasFatalFailure()) return;
    }
}

TEST(ScalarTypes, Fp8SaturatesToTheLargestFiniteValueAndKeepsNan) {
  EXPECT_EQ(num::f32_to_fp8(DType::F8E4M3, 448.0f), 0x7e);
  EXPECT_EQ(num::f32_to_fp8(DType::F8E4M3, 464.0f), 0x7e);  // the tie with 480 goes to the even 448
  EXPECT_EQ(num::f32_to_fp8(DType::F8E4M3, 1e30f), 0x7e);
  EXPECT_EQ(num::f32_to_fp8(DType::F8E4M3, -INFINITY), 0xfe);
  EXPECT_EQ(num::f32_to_fp8(DType::F8E5M2, INFINITY), 0x7b);  // 57344, not inf: satfinite
  EXPECT_EQ(num::f32_to_fp8(DType::F8E5M2, -1e9f), 0xfb);
  EXPECT_TRUE(std::isnan(num::fp8_to_f32(DType::F8E4M3, num::f32_to_fp8(DType::F8E4M3, NAN))));
  EXPECT_TRUE(std::isnan(num::fp8_to_f32(DType::F8E5M2, num::f32_to_fp8(DType::F8E5M2, NAN))));
  EXPECT_EQ(num::f32_to_fp8(DType::F8E4M3, -0.0f), 0x80);
  EXPECT_EQ(num::fp8_to_f32(DType::F8E4M3, 0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(num::fp8_to_f32(DType::F8E5M2, 0x01), std::ldexp(1.0f, -16));
}

TEST(ScalarTypes, EmittedFp8HelpersAgreeWithTheHostConversionsBitForBit) {
  for (int c = 0; c < 256; ++c) {
    for (DType d : {DType::F8E4M3, DType::F8E5M2}) {
      const float want = num::fp8_to_f32(d, uint8_t(c));
      const float got = d == DType::F8E4M3 ? fp8_cpu::iron_e4m3_to_f32(uint32_t(c)) : fp8_cpu::iron_e5m2_to_f32(uint32_t(c));
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << c;
      else EXPECT_EQ(to_bits(got), to_bits(want)) << dtype_name(d) << " code " << c;
    }
  }
  auto check = [](float x) {
    ASSERT_EQ(fp8_cpu::iron_f32_to_e4m3(x), num::f32_to_fp8(DType::F8E4M3, x)) << x << " bits 0x" << std::hex << to_bits(x);
    ASSERT_EQ(fp8_cpu::iron_f32_to_e5m2(x), num::f32_to_fp8(DType::F8E5M2, x)) << x << " bits 0x" << std::hex << to_bits(x);
  };
  for (uint32_t h = 0; h < 65536; ++h) {
    check(num::f16_to_f32(uint16_t(h)));
    for (int delta = -3; delta <= 3; ++delta) check(from_bits((h << 16) + uint32_t(delta)));
    if (testing::Test::HasFatalFailure()) return;
  }
  uint64_t s = 1;  // and 2^22 random f32 patterns
  for (int i = 0; i < (1 << 22); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    check(from_bits(uint32_t(s >> 32)));
    if (testing::Test::HasFatalFailure()) return;
  }
}

constexpr DType kInts[] = {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::U32, DType::I64, DType::U64};

// Reference canonical register of integer value v (any integer, as __int128) in dtype t: v
// modulo 2^bits, read signed or unsigned, as 64 bits.
uint64_t ref_wrap(DType t, __int128 v) {
  const unsigned bits = int_bits(t);
  const __int128 m = __int128(1) << bits;
  __int128 r = v % m;
  if (r < 0) r += m;
  if (is_signed_integer(t) && r >= m / 2) r -= m;
  return uint64_t(r);  // modulo 2^64: sign-extended for a negative signed value
}
__int128 value_of(DType t, uint64_t canonical) {
  return is_signed_integer(t) ? __int128(int64_t(canonical)) : __int128(canonical);
}

Scalar cast(DType to, DType from, Scalar x) {
  Scalar out;
  std::string error;
  EXPECT_TRUE(eval::eval_pure(Op::Cast, to, from, &x, 1, out, error)) << error;
  return out;
}

TEST(ScalarTypes, IntegerConversionsOfEverySixteenBitInputWrapOrExtend) {
  for (DType from : {DType::I16, DType::U16, DType::I8, DType::U8})
    for (uint32_t raw = 0; raw < (int_bits(from) == 16 ? 65536u : 256u); ++raw) {
      const uint64_t x = num::int_wrap(from, raw);
      ASSERT_EQ(x, ref_wrap(from, raw));
      for (DType to : kInts) {
        // C conversion: the source value modulo 2^bits(to).
        ASSERT_EQ(cast(to, from, Scalar{x}).bits, ref_wrap(to, value_of(from, x)))
            << dtype_name(from) << " " << raw << " -> " << dtype_name(to);
      }
    }
  // 64-bit sources narrow by keeping the low bits.
  EXPECT_EQ(cast(DType::I8, DType::I64, Scalar::of_i64(-129)).i64(), 127);
  EXPECT_EQ(cast(DType::U16, DType::U64, Scalar::of_u64(0x123456789abcdefull)).u64(), 0xcdefu);
  EXPECT_EQ(cast(DType::I64, DType::U32, Scalar::of_u32(0xffffffffu)).i64(), 4294967295ll);
  EXPECT_EQ(cast(DType::U64, DType::I32, Scalar::of_i32(-1)).u64(), UINT64_MAX);
}

// Reference float -> integer: NaN -> 0, else truncate and clamp to the dtype's range.
uint64_t ref_f2i(DType t, float x) {
  if (std::isnan(x)) return 0;
  const long double lo = is_signed_integer(t) ? -std::ldexp(1.0L, int(int_bits(t)) - 1) : 0.0L;
  const long double hi = is_signed_integer(t) ? std::ldexp(1.0L, int(int_bits(t)) - 1) - 1
                                              : std::ldexp(1.0L, int(int_bits(t))) - 1;
  long double v = std::trunc((long double)x);
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return is_signed_integer(t) ? uint64_t(int64_t(v)) : uint64_t(v);
}

TEST(ScalarTypes, FloatToIntegerOfEveryHalfAndBfloatValueTruncatesAndSaturates) {
  for (uint32_t h = 0; h < 65536; ++h)
    for (float x : {num::f16_to_f32(uint16_t(h)), num::bf16_to_f32(uint16_t(h))})
      for (DType to : kInts) {
        ASSERT_EQ(cast(to, DType::F32, Scalar::of_f32(x)).bits, ref_f2i(to, x)) << x << " -> " << dtype_name(to);
        ASSERT_EQ(num::float_to_int(to, double(x)), ref_f2i(to, x));
      }
}

TEST(ScalarTypes, IntegerToFloatRoundsToNearestEvenOnce) {
  EXPECT_EQ(cast(DType::F32, DType::I64, Scalar::of_i64((int64_t(1) << 40) + 1)).f(), std::ldexp(1.0f, 40));
  EXPECT_EQ(cast(DType::F32, DType::U64, Scalar::of_u64(UINT64_MAX)).f(), std::ldexp(1.0f, 64));
  EXPECT_EQ(cast(DType::F32, DType::I8, Scalar{num::int_wrap(DType::I8, 0x80)}).f(), -128.0f);
  EXPECT_EQ(cast(DType::F32, DType::U16, Scalar::of_u32(65535)).f(), 65535.0f);
  // Through f32 to fp8: 300 is exact in f32, then rounds to the e4m3 value 288.
  EXPECT_EQ(cast(DType::F8E4M3, DType::I16, Scalar::of_u32(300)).f(), 288.0f);
}

// Reference integer op in the written width: computed on the values, then reduced.
uint64_t ref_int_op(Op op, DType t, uint64_t xc, uint64_t yc) {
  const __int128 x = value_of(t, xc), y = value_of(t, yc);
  const __int128 w = int_bits(t);
  const __int128 minv = is_signed_integer(t) ? -(__int128(1) << (w - 1)) : 0;
  switch (op) {
    case Op::Add: return ref_wrap(t, x + y);
    case Op::Sub: return ref_wrap(t, x - y);
    case Op::Mul: return ref_wrap(t, x * y);
    case Op::Div:
      if (y == 0) return xc;
      if (x == minv && y == -1) return xc;
      return ref_wrap(t, x / y);  // __int128 division truncates toward zero
    case Op::Rem:
      if (y == 0 || y == -1) return 0;
      return ref_wrap(t, x % y);
    case Op::Min: return ref_wrap(t, x < y ? x : y);
    case Op::Max: return ref_wrap(t, x > y ? x : y);
    case Op::Shl: {
      const __int128 amount = yc;  // read as unsigned: a negative amount is huge
      return amount >= w ? 0 : ref_wrap(t, x * (__int128(1) << amount));
    }
    case Op::Shr: {
      const __int128 amount = yc;
      if (is_signed_integer(t)) {
        const __int128 n = amount >= w ? w - 1 : amount;
        __int128 q = x;
        for (__int128 i = 0; i < n; ++i) q = q >= 0 ? q / 2 : (q - 1) / 2;  // floor division
        return ref_wrap(t, q);
      }
      return amount >= w ? 0 : ref_wrap(t, x >> amount);
    }
    default: return 0;
  }
}

TEST(ScalarTypes, EightBitArithmeticOfEveryOperandPairWrapsAtEightBits) {
  const Op ops[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::Min, Op::Max, Op::Shl, Op::Shr};
  for (DType t : {DType::I8, DType::U8})
    for (Op op : ops)
      for (uint32_t a = 0; a < 256; ++a)
        for (uint32_t b = 0; b < 256; ++b) {
          Scalar args[2] = {Scalar{num::int_wrap(t, a)}, Scalar{num::int_wrap(t, b)}};
          Scalar out;
          std::string error;
          ASSERT_TRUE(eval::eval_pure(op, t, t, args, 2, out, error)) << error;
          ASSERT_EQ(out.bits, ref_int_op(op, t, args[0].bits, args[1].bits))
              << dtype_name(t) << " " << ir::mnemonic(op) << " " << a << ", " << b;
        }
}

TEST(ScalarTypes, SixteenAndSixtyFourBitEdgesFollowTheSameRules) {
  auto ev = [](Op op, DType t, uint64_t a, uint64_t b) {
    Scalar args[2] = {Scalar{num::int_wrap(t, a)}, Scalar{num::int_wrap(t, b)}};
    Scalar out;
    std::string error;
    EXPECT_TRUE(eval::eval_pure(op, t, t, args, 2, out, error)) << error;
    EXPECT_EQ(out.bits, ref_int_op(op, t, args[0].bits, args[1].bits)) << dtype_name(t) << " " << ir::mnemonic(op);
    return out.bits;
  };
  const uint64_t edges[] = {0, 1, 2, 7, 15, 16, 31, 32, 63, 64, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000u,
                            0xffffffffu, 0x7fffffffffffffffull, 0x8000000000000000ull, UINT64_MAX, UINT64_MAX - 1};
  const Op ops[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::Min, Op::Max, Op::Shl, Op::Shr};
  for (DType t : {DType::I16, DType::U16, DType::I64, DType::U64})
    for (Op op : ops)
      for (uint64_t a : edges)
        for (uint64_t b : edges) ev(op, t, a, b);
  EXPECT_EQ(int64_t(ev(Op::Div, DType::I64, 0x8000000000000000ull, UINT64_MAX)), INT64_MIN);  // MIN / -1 = MIN
  EXPECT_EQ(ev(Op::Mul, DType::U16, 0xffff, 0xffff), 1u);  // no signed-int promotion overflow
}

TEST(ScalarTypes, NamesSizesAndParsingCoverEveryDtype) {
  const DType all[] = {DType::I8, DType::U8, DType::I16, DType::U16, DType::I64, DType::U64, DType::F8E4M3, DType::F8E5M2};
  const size_t sizes[] = {1, 1, 2, 2, 8, 8, 1, 1};
  for (size_t i = 0; i < 8; ++i) {
    DType back;
    ASSERT_TRUE(parse_dtype(dtype_name(all[i]), back));
    EXPECT_EQ(back, all[i]);
    EXPECT_EQ(dtype_size(all[i]), sizes[i]) << dtype_name(all[i]);
  }
  EXPECT_TRUE(is_fp8(DType::F8E5M2));
  EXPECT_TRUE(is_float(DType::F8E4M3));
  EXPECT_FALSE(is_integer(DType::F8E4M3));
  EXPECT_TRUE(is_signed_integer(DType::I64));
  EXPECT_FALSE(is_signed_integer(DType::U8));
  EXPECT_EQ(num::int_max(DType::U64), UINT64_MAX);
  EXPECT_EQ(num::int_min(DType::I16), -32768);
}

// The verifier's rules for the new dtypes, each a located diagnostic.
std::string verify_text(const std::string& body, const std::string& header = "kernel k mode=Elementwise {\n") {
  ir::Kernel k = ir::parse(header + body + "}\n");
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}

TEST(ScalarTypes, ArithmeticOnFp8IsAVerifierErrorNamingTheCast) {
  const std::string e = verify_text(
      "  param x: in buf<f8e4m3> extent=4\n  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f8e4m3\n"
      "  %2 = add %1, %1 : f8e4m3\n  %3 = lt %1, %1 : bool\n  %4 = cast %1 : f32\n  %5 = add %4, %4 : f32\n");
  EXPECT_NE(e.find("'add': computes with f8e4m3, a storage format (cast to f32 first)"), std::string::npos) << e;
  EXPECT_NE(e.find("'lt': computes with f8e4m3"), std::string::npos) << e;
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 2) << "only the two errors, the f32 add is fine: " << e;
  // A generic kernel that may be emitted with T = fp8 is checked at that T.
  const std::string g = verify_text("  param x: in buf<T> extent=4\n  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : T\n"
                                    "  %2 = mul %1, %1 : T\n",
                                    "kernel k mode=Elementwise dtypes=f32,f8e5m2 {\n");
  EXPECT_NE(g.find("'mul': computes with f8e5m2, a storage format (cast to f32 first) (with T = f8e5m2)"), std::string::npos) << g;
  // An fp8 constant must be an fp8 value (registers hold exact fp8 values).
  EXPECT_NE(verify_text("  %0 = const<0.3> : f8e4m3\n").find("is not an f8e4m3 value"), std::string::npos);
  EXPECT_EQ(verify_text("  %0 = const<0.3125> : f8e4m3\n"), "");
}

TEST(ScalarTypes, IntegerConstantsAreCheckedAgainstTheirWidthAndU64RoundTrips) {
  for (const char* bad : {"const<-1> : u8", "const<128> : i8", "const<65536> : u16"}) {
    try {
      ir::parse(std::string("kernel k mode=Elementwise {\n  %0 = ") + bad + "\n}\n");
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("IR parse error at 2:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("is out of range"), std::string::npos) << e.what();
    }
  }
  // The verifier holds an instruction built in memory to the same range.
  ir::Kernel k8 = ir::parse("kernel k mode=Elementwise {\n  %0 = const<1> : i8\n}\n");
  k8.insts[k8.blocks[0].insts[0]].set(ir::Attr::Value, 200);
  ir::Diagnostics d8;
  EXPECT_FALSE(ir::verify(k8, d8));
  EXPECT_NE(d8.render(k8).find("i8 constant 200 is out of range"), std::string::npos) << d8.render(k8);
  const std::string text = "kernel k mode=Elementwise {\n  %0 = const<18446744073709551615> : u64\n"
                           "  %1 = const<-9223372036854775808> : i64\n  %2 = const<-32768> : i16\n}\n";
  const ir::Kernel k = ir::parse(text);
  EXPECT_EQ(ir::print(k), text);
  EXPECT_EQ(eval::const_value(k.insts[0], DType::F32).u64(), UINT64_MAX);
  // A T constant over integer dtypes: a float literal that is not a whole number is rejected.
  EXPECT_NE(verify_text("  %0 = const<0.5> : T\n", "kernel k mode=Elementwise dtypes=f32,i8 {\n")
                .find("T constant 0.500000 is not an integer"), std::string::npos);
}

TEST(ScalarTypes, ConstFoldComputesInTheWrittenWidth) {
  ir::Kernel k = ir::parse(
      "kernel k mode=Elementwise {\n  param y: out buf<i8> extent=1\n  %0 = const<100> : i8\n"
      "  %1 = add %0, %0 : i8\n  %2 = const<0> : u32\n  store<y> %2, %1\n}\n");
  ir::Kernel o = passes::optimize(k);
  EXPECT_NE(ir::print(o).find("const<-56> : i8"), std::string::npos) << ir::print(o);  // 200 wraps to -56
}

}  // namespace

// Registers are canonical 64-bit patterns: a bitcast to i32 sign-extends the 32 bits (so the
// value compares below zero and widens to a negative i64); to u32 or f32 it zero-extends.
TEST(ScalarTypes, BitcastGivesTheCanonicalRegisterOfItsResult) {
  std::string error;
  const Scalar minus_one = Scalar::of_f32(-1.0f), minus_two = Scalar::of_i32(-2);
  Scalar out;
  ASSERT_TRUE(eval::eval_pure(Op::Bitcast, DType::I32, DType::F32, &minus_one, 1, out, error)) << error;
  EXPECT_EQ(out.i64(), int64_t(int32_t(0xbf800000u)));
  const Scalar lt_args[2] = {out, Scalar::of_i32(0)};
  Scalar below;
  ASSERT_TRUE(eval::eval_pure(Op::Lt, DType::Bool, DType::I32, lt_args, 2, below, error)) << error;
  EXPECT_TRUE(below.b());
  Scalar wide;
  ASSERT_TRUE(eval::eval_pure(Op::Cast, DType::I64, DType::I32, &out, 1, wide, error)) << error;
  EXPECT_EQ(wide.i64(), int64_t(int32_t(0xbf800000u)));
  ASSERT_TRUE(eval::eval_pure(Op::Bitcast, DType::U32, DType::I32, &minus_two, 1, out, error)) << error;
  EXPECT_EQ(out.bits, 0xfffffffeull);
  ASSERT_TRUE(eval::eval_pure(Op::Bitcast, DType::F32, DType::I32, &minus_two, 1, out, error)) << error;
  EXPECT_EQ(out.bits, 0xfffffffeull);
}
