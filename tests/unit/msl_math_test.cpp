// The MSL fma helpers (src/codegen/msl_math.inc) compiled as C++ and compared with
// num::fma_round_odd bit for bit: they are what makes an f16 or bf16 fma one rounding on Metal,
// which has no f64, and no Metal device runs them here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "core/numeric.hpp"

namespace msl_math_cpu {

using uint = unsigned;
template <class To, class From> To as_type(From f) {
  static_assert(sizeof(To) == sizeof(From), "as_type sizes");
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
inline int iron_find_msb(uint x) { return 31 - int(__builtin_clz(x)); }  // x != 0 where it is called

#define thread
#define IRON_MSL_HELPER(name, ...) __VA_ARGS__
#include "codegen/msl_math.inc"
#undef IRON_MSL_HELPER
#undef thread

}  // namespace msl_math_cpu

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
bool same(float want, float got) { return bits(want) == bits(got) || (std::isnan(want) && std::isnan(got)); }

// Every bf16 or f16 value class: zeros, subnormals, normals, extremes, infinities, NaN.
std::vector<float> edge_values(bool bf16) {
  std::vector<uint16_t> raw = bf16 ? std::vector<uint16_t>{0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80, 0xbf80,
                                                           0x3f81, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x4000, 0x3c00,
                                                           0x0100, 0x8100, 0x1f80, 0x5f80, 0x3fff, 0xbfff}
                                   : std::vector<uint16_t>{0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00,
                                                           0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x4000, 0x1400,
                                                           0x5bff, 0xdbff, 0x3bff};
  std::vector<float> v;
  for (uint16_t r : raw) v.push_back(bf16 ? iron::num::bf16_to_f32(r) : iron::num::f16_to_f32(r));
  return v;
}

template <class Fma>
void check(bool bf16, Fma fma, const char* what) {
  int failures = 0;
  auto one = [&](float a, float b, float c) {
    const float want = iron::num::fma_round_odd(a, b, c), got = fma(a, b, c);
    if (!same(want, got) && failures++ < 10)
      ADD_FAILURE() << what << "(" << a << ", " << b << ", " << c << "): want " << want << " (0x" << std::hex << bits(want)
                    << "), got " << got << " (0x" << bits(got) << std::dec << ")";
  };
  const std::vector<float> e = edge_values(bf16);
  for (float a : e)
    for (float b : e)
      for (float c : e) one(a, b, c);
  // Random operands over the whole range, and products near the addend (where the sum cancels).
  std::mt19937 rng(12345);
  auto value = [&]() {
    const uint16_t r = uint16_t(rng());
    return bf16 ? iron::num::bf16_to_f32(r) : iron::num::f16_to_f32(r);
  };
  for (int i = 0; i < 2000000; ++i) {
    const float a = value(), b = value();
    float c = value();
    if (i % 2) c = bf16 ? iron::num::round_to(iron::DType::BF16, -a * b) : iron::num::round_to(iron::DType::F16, -a * b);
    if (i % 7 == 0) c = bf16 ? iron::num::round_to(iron::DType::BF16, -a * b * 1.01f) : c;
    one(a, b, c);
  }
  EXPECT_EQ(failures, 0) << what;
}

}  // namespace

TEST(MslMath, Bf16FmaHelperRoundsToOddExactlyAsTheDefinition) {
  check(true, msl_math_cpu::iron_fma_odd_bf16, "iron_fma_odd_bf16");
}

TEST(MslMath, F16FmaHelperRoundsToOddExactlyAsTheDefinition) {
  check(false, msl_math_cpu::iron_fma_odd_f16, "iron_fma_odd_f16");
}
