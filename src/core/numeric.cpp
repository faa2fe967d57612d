// 16-bit float conversions with round-to-nearest-even, matching what the GPUs do on store.
#include "core/numeric.hpp"

#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace iron::num {

static uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t x = bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return uint16_t(sign | 0x7e00u);              // NaN
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);             // overflow (rounds to inf)
  if (mag < 0x38800000u) {                                             // subnormal or zero in f16
    if (mag < 0x33000000u) return uint16_t(sign);                      // below half the smallest subnormal
    uint32_t e = mag >> 23;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // value = m * 2^(e-150); f16 subnormal unit is 2^-24
    uint32_t half = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t h = ((mag >> 13) - (112u << 10));                           // rebias exponent 127 -> 15
  uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) {
    if (m == 0) return from_bits(sign);
    float v = std::ldexp(float(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return from_bits(sign | 0x7f800000u | (m << 13));
  return from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t f32_to_bf16(float f) {
  uint32_t u = bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_to_f32(uint16_t b) { return from_bits(uint32_t(b) << 16); }

float round_to(DType d, float v) {
  if (d == DType::F16) return f16_to_f32(f32_to_f16(v));
  if (d == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
  return v;
}

void encode(DType d, const double* src, void* dst, size_t count) {
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < count; ++i) {
    switch (d) {
      case DType::F16: { uint16_t h = f32_to_f16(float(src[i])); std::memcpy(out + 2 * i, &h, 2); break; }
      case DType::BF16: { uint16_t h = f32_to_bf16(float(src[i])); std::memcpy(out + 2 * i, &h, 2); break; }
      case DType::I32: { int32_t v = int32_t(src[i]); std::memcpy(out + 4 * i, &v, 4); break; }
      case DType::U32: case DType::Bool: { uint32_t v = uint32_t(src[i]); std::memcpy(out + 4 * i, &v, 4); break; }
      default: { float v = float(src[i]); std::memcpy(out + 4 * i, &v, 4); break; }
    }
  }
}

void decode(DType d, const void* src, double* dst, size_t count) {
  const auto* in = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < count; ++i) {
    switch (d) {
      case DType::F16: { uint16_t h; std::memcpy(&h, in + 2 * i, 2); dst[i] = f16_to_f32(h); break; }
      case DType::BF16: { uint16_t h; std::memcpy(&h, in + 2 * i, 2); dst[i] = bf16_to_f32(h); break; }
      case DType::I32: { int32_t v; std::memcpy(&v, in + 4 * i, 4); dst[i] = v; break; }
      case DType::U32: case DType::Bool: { uint32_t v; std::memcpy(&v, in + 4 * i, 4); dst[i] = v; break; }
      default: { float v; std::memcpy(&v, in + 4 * i, 4); dst[i] = v; break; }
    }
  }
}

bool parse_int64(std::string_view text, int64_t& out) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && text[i] == '-') {
    negative = true;
    ++i;
  }
  if (i == text.size()) return false;
  // Accumulate as a negative number so INT64_MIN is representable.
  int64_t v = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    if (!checked_mul(v, int64_t(10), v) || !checked_add(v, -int64_t(c - '0'), v)) return false;
  }
  if (!negative) {
    if (v == INT64_MIN) return false;
    v = -v;
  }
  out = v;
  return true;
}

bool parse_double(std::string_view text, double& out) {
  if (text.empty() || text.size() > 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c == 'i' ||
          c == 'n' || c == 'f' || c == 'a'))
      return false;
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  // ERANGE on overflow (a literal beyond the double range); underflow to a denormal or zero is
  // a legitimate reading of a tiny literal.
  if (errno == ERANGE && std::isinf(v)) return false;
  out = v;
  return true;
}

}  // namespace iron::num
