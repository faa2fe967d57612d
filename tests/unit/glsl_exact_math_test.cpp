// The GLSL dialect's exact-math helpers (src/codegen/glsl_exact_math.inc), compiled here as C++
// from the same text the shaders get. The driver estimates they start from are replaced by the
// host's correctly rounded a / b and sqrt moved by a random number of ulps (up to +-8, beyond
// the 2.5 ulp Vulkan allows for division), so the correction logic, not a lucky estimate, has to
// produce the correctly rounded result: it must equal the host's IEEE result bit for bit on
// every operand (two NaNs count as equal). Lavapipe's own division is exact, so the device test
// (semantics_test.cpp) cannot show this.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/numeric.hpp"
#include "glsl_cpu.hpp"

namespace exact_cpu {

using namespace iron::test::glsl_cpu;

// The estimate hooks: the correctly rounded result moved by `g_ulps` ulps (operands are
// positive and normal here, so moving the bits moves the value).
int g_ulps = 0;
inline float moved(float x, int ulps) { return uintBitsToFloat(uint(int(floatBitsToUint(x)) + ulps)); }
inline float iron_div_estimate(float x, float y) { return moved(x / y, g_ulps); }
inline float iron_sqrt_estimate(float x) { return moved(std::sqrt(x), g_ulps); }

#define IRON_GLSL_HELPER(name, ...) __VA_ARGS__
#include "codegen/glsl_exact_math.inc"
#undef IRON_GLSL_HELPER

}  // namespace exact_cpu

namespace {

using exact_cpu::floatBitsToUint;
using exact_cpu::uintBitsToFloat;

struct Rng {  // splitmix64
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint32_t u32() { return uint32_t(next() >> 32); }
  int range(int lo, int hi) { return lo + int(next() % uint64_t(hi - lo + 1)); }
};

bool same(float want, float got) {
  uint32_t w = floatBitsToUint(want), g = floatBitsToUint(got);
  bool wn = (w & 0x7fffffffu) > 0x7f800000u, gn = (g & 0x7fffffffu) > 0x7f800000u;
  return wn || gn ? wn && gn : w == g;
}

// A float with the given unbiased exponent (clamped into the subnormal range below -126) and a
// random mantissa and sign.
float with_exponent(Rng& r, int e) {
  uint32_t mant = r.u32() & 0x7fffffu;
  uint32_t sign = r.u32() & 0x80000000u;
  if (e < -126) {
    int shift = -126 - e;  // a subnormal: fewer significant bits
    mant = shift >= 23 ? 1u : ((mant | 0x800000u) >> shift);
    if (mant == 0) mant = 1;
    return uintBitsToFloat(sign | mant);
  }
  return uintBitsToFloat(sign | (uint32_t(e + 127) << 23) | mant);
}

// Operands that stress the edges: signed zeros, the smallest and largest subnormals and
// normals, powers of two, all-ones mantissas, infinities and NaN.
std::vector<float> edge_values() {
  std::vector<float> v;
  const uint32_t bits[] = {0x00000000u, 0x00000001u, 0x00000002u, 0x00000003u, 0x007fffffu, 0x00400000u,
                           0x00800000u, 0x00800001u, 0x00ffffffu, 0x01000000u, 0x33800000u, 0x3f800000u,
                           0x3f800001u, 0x3fffffffu, 0x3f7fffffu, 0x40400000u, 0x40a00000u, 0x4b7fffffu,
                           0x7e800000u, 0x7effffffu, 0x7f000000u, 0x7f7ffffeu, 0x7f7fffffu, 0x7f800000u,
                           0x7fc00000u, 0x3eaaaaabu, 0x1f800000u, 0x5f800000u, 0x0c000000u, 0x72800000u};
  for (uint32_t b : bits) {
    v.push_back(uintBitsToFloat(b));
    v.push_back(uintBitsToFloat(b | 0x80000000u));
  }
  return v;
}

TEST(GlslExactMath, DivisionIsCorrectlyRoundedFromEstimatesOffByUpToEightUlps) {
  Rng r{7};
  uint64_t checked = 0, failures = 0;
  auto check = [&](float a, float b) {
    exact_cpu::g_ulps = r.range(-8, 8);
    float got = exact_cpu::iron_div_f32(a, b);
    ++checked;
    if (!same(a / b, got) && failures++ < 10)
      ADD_FAILURE() << std::hexfloat << a << " / " << b << ": want " << a / b << ", got " << got << " (estimate moved "
                    << exact_cpu::g_ulps << " ulps)";
  };
  std::vector<float> edges = edge_values();
  for (float a : edges)
    for (float b : edges)
      for (int i = 0; i < 4; ++i) check(a, b);
  for (int i = 0; i < 1500000; ++i) check(uintBitsToFloat(r.u32()), uintBitsToFloat(r.u32()));
  // Quotients around the subnormal range, the normal/subnormal boundary, exact ties of a
  // subnormal result, and overflow.
  for (int i = 0; i < 1500000; ++i) {
    int ea = r.range(-150, 127);
    int target = i % 3 == 0 ? r.range(-153, -120) : i % 3 == 1 ? r.range(122, 130) : r.range(-130, 130);
    int eb = std::max(-150, std::min(127, ea - target));
    check(with_exponent(r, ea), with_exponent(r, eb));
  }
  for (int i = 0; i < 200000; ++i) {  // a / 2^n: exact halves of the subnormal unit
    float b = uintBitsToFloat(uint32_t(r.range(100, 154)) << 23);
    check(with_exponent(r, r.range(-128, -100)), b);
  }
  EXPECT_EQ(failures, 0u) << "of " << checked;
}

TEST(GlslExactMath, SqrtIsCorrectlyRoundedFromEstimatesOffByUpToEightUlps) {
  Rng r{11};
  uint64_t checked = 0, failures = 0;
  auto check = [&](float x) {
    exact_cpu::g_ulps = r.range(-8, 8);
    float got = exact_cpu::iron_sqrt_f32(x);
    ++checked;
    if (!same(std::sqrt(x), got) && failures++ < 10)
      ADD_FAILURE() << std::hexfloat << "sqrt(" << x << "): want " << std::sqrt(x) << ", got " << got
                    << " (estimate moved " << exact_cpu::g_ulps << " ulps)";
  };
  for (float x : edge_values())
    for (int i = 0; i < 16; ++i) check(x);
  for (uint32_t u = 0; u < 0x01000000u; u += 3) check(uintBitsToFloat(u));  // subnormals and the lowest binades
  for (int i = 0; i < 2000000; ++i) check(uintBitsToFloat(r.u32() & 0x7fffffffu));
  for (int i = 0; i < 200000; ++i) check(uintBitsToFloat(r.u32()));  // negatives and NaNs too
  EXPECT_EQ(failures, 0u) << "of " << checked;
}

TEST(GlslExactMath, F16ConversionsMatchTheInterpretersRounding) {
  // Widening: all 65,536 halves.
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float want = iron::num::f16_to_f32(uint16_t(h));
    ASSERT_TRUE(same(want, exact_cpu::iron_f16_to_f32(h))) << std::hex << h;
  }
  // Narrowing: every f32 whose magnitude is in or near the f16 range in steps, the named edges,
  // and random bits.
  auto check = [](float x) {
    uint32_t want = iron::num::f32_to_f16(x), got = exact_cpu::iron_f32_to_f16(x);
    bool nan = (want & 0x7fffu) > 0x7c00u;
    if (nan) {
      ASSERT_GT(got & 0x7fffu, 0x7c00u) << std::hexfloat << x;
    } else {
      ASSERT_EQ(want, got) << std::hexfloat << x;
    }
  };
  for (uint32_t u = 0x32000000u; u < 0x48000000u; u += 7) {
    check(uintBitsToFloat(u));
    check(uintBitsToFloat(u | 0x80000000u));
  }
  const float named[] = {65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e30f, std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(), 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1.8p-24f,
                         0x1p-14f, 0x1.ffcp-15f, 1.0f + 0x1p-11f, 1.0f + 0x1.8p-11f, 0x1p-149f, 0.0f, -0.0f};
  for (float x : named) {
    check(x);
    check(-x);
  }
  Rng r{3};
  for (int i = 0; i < 2000000; ++i) check(uintBitsToFloat(r.u32()));
  EXPECT_EQ(exact_cpu::iron_f32_to_f16(65520.0f), 0x7c00u);   // the overflow tie rounds to inf
  EXPECT_EQ(exact_cpu::iron_f32_to_f16(65504.0f), 0x7bffu);   // max finite
  EXPECT_EQ(exact_cpu::iron_f32_to_f16(0x1p-25f), 0x0000u);   // half the smallest subnormal: tie to even 0
  EXPECT_EQ(exact_cpu::iron_f32_to_f16(0x1.8p-24f), 0x0002u); // 1.5 units: tie to even 2
}

}  // namespace
