// 16-bit and 8-bit float conversions with round-to-nearest-even, matching what the GPUs do on
// store, and the integer wrapping and saturation rules of docs/semantics.md.
#include "core/numeric.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
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

namespace {
// An fp8 format: mantissa bits, exponent bias, largest finite magnitude and its code.
struct Fp8Format {
  int mant;
  int bias;
  double max;
  uint8_t max_code;
};
Fp8Format fp8_format(DType d) {
  if (d == DType::F8E4M3) return {3, 7, 448.0, 0x7e};
  return {2, 15, 57344.0, 0x7b};
}
}  // namespace

uint8_t f32_to_fp8(DType d, float f) {
  const Fp8Format fmt = fp8_format(d);
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return uint8_t(sign | 0x7f);
  double mag = std::fabs(double(f));
  if (mag >= fmt.max) return uint8_t(sign | fmt.max_code);  // saturate (infinity included)
  if (mag == 0) return sign;
  // The quantum at mag's binade, never finer than the subnormal unit 2^(1 - bias - mant); the
  // quotient is exact (a power-of-two scaling) and nearbyint rounds it half to even.
  const int emin = 1 - fmt.bias;
  int e;
  std::frexp(mag, &e);
  const int binade = std::max(e - 1, emin);
  const double quantum = std::ldexp(1.0, binade - fmt.mant);
  const double r = std::nearbyint(mag / quantum) * quantum;
  if (r > fmt.max) return uint8_t(sign | fmt.max_code);
  if (r == 0) return sign;
  std::frexp(r, &e);
  const int re = e - 1;
  if (re < emin) return uint8_t(sign | uint8_t(r / std::ldexp(1.0, emin - fmt.mant)));  // subnormal
  const int m = int(r / std::ldexp(1.0, re - fmt.mant)) - (1 << fmt.mant);
  return uint8_t(sign | ((re + fmt.bias) << fmt.mant) | m);
}

float fp8_to_f32(DType d, uint8_t b) {
  if (d == DType::F8E5M2) return f16_to_f32(uint16_t(b << 8));  // e5m2 is the top byte of an f16
  const bool negative = (b & 0x80) != 0;
  const int e = (b >> 3) & 0xf, m = b & 7;
  if (e == 0xf && m == 7) return std::numeric_limits<float>::quiet_NaN();
  const float v = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(float(8 + m), e - 10);
  return negative ? -v : v;
}

float round_to(DType d, float v) {
  if (d == DType::F16) return f16_to_f32(f32_to_f16(v));
  if (d == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
  if (is_fp8(d)) return fp8_to_f32(d, f32_to_fp8(d, v));
  return v;
}

float fma_round_odd(float a, float b, float c) {
  // The product of two f32 values is exact in f64 (48 significant bits, exponents in range); the
  // sum is rounded once to nearest (s) and TwoSum gives its exact error, so s + err is exact.
  const double p = double(a) * double(b);
  const double dc = double(c);
  double s = p + dc;
  if (!std::isfinite(s)) return float(s);  // an inf or NaN operand (finite p + c stays finite)
  const double v = s - p;
  const double err = (p - (s - v)) + (dc - v);
  // To odd at f32. The exact value x = s + err is an f32 only when err == 0 and s is one. Else
  // the f32 nearest s is moved one step toward zero when it lies beyond x (x > FLT_MAX: the
  // largest finite f32), then its last bit is set. s and x have one sign (s == 0 only when x == 0).
  if (std::fabs(s) > double(FLT_MAX)) return s > 0.0 ? FLT_MAX : -FLT_MAX;
  const float f = float(s);
  const double df = double(f);
  if (err == 0.0 && df == s) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  // f - x = (df - s) - err: df - s is exact (Sterbenz) and the subtraction of err rounds the
  // nonzero difference without changing its sign.
  const double over = (df - s) - err;
  if ((over > 0.0) == (s > 0.0)) bits -= 1u;  // |f| > |x|: never f == 0 here
  bits |= 1u;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

int64_t int_min(DType t) {
  unsigned bits = int_bits(t);
  if (!is_signed_integer(t) || bits == 0) return 0;
  return bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
}
uint64_t int_max(DType t) {
  unsigned bits = int_bits(t);
  if (bits == 0) return 0;
  if (is_signed_integer(t)) return (uint64_t(1) << (bits - 1)) - 1;
  return bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
}

uint64_t int_wrap(DType t, uint64_t raw) {
  const unsigned bits = int_bits(t);
  if (bits == 0 || bits == 64) return raw;
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t v = raw & mask;
  if (is_signed_integer(t) && (v >> (bits - 1)) != 0) v |= ~mask;  // sign-extend
  return v;
}

int bitcast_width(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::I64: case DType::U64: return 8;
    default: return 0;
  }
}

uint64_t bitcast_register(DType from, DType to, uint64_t reg) {
  auto f32_of = [](uint64_t r) {
    const uint32_t u = uint32_t(r);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  auto reg_of = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint64_t(u);
  };
  uint64_t bits = reg;
  if (from == DType::F16) bits = f32_to_f16(f32_of(reg));
  else if (from == DType::BF16) bits = f32_to_bf16(f32_of(reg));
  const int width = bitcast_width(from);
  if (width < 8) bits &= (uint64_t(1) << (8 * width)) - 1;
  if (to == DType::F16) return reg_of(f16_to_f32(uint16_t(bits)));
  if (to == DType::BF16) return reg_of(bf16_to_f32(uint16_t(bits)));
  if (to == DType::F32) return bits;  // an f32 register is its 32 bits, zero-extended
  return int_wrap(to, bits);
}

uint64_t float_to_int(DType t, double x) {
  if (std::isnan(x)) return 0;
  const double lo = double(int_min(t));
  // 2^bits(-1): the first value above the range (exact in double for every width).
  const double above = is_signed_integer(t) ? -lo : std::ldexp(1.0, int(int_bits(t)));
  if (x >= above) return int_max(t);
  if (x <= lo) return uint64_t(int_min(t));
  const double tr = std::trunc(x);
  return is_signed_integer(t) ? uint64_t(int64_t(tr)) : uint64_t(tr);
}

void encode(DType d, const double* src, void* dst, size_t count) {
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < count; ++i) {
    if (is_fp8(d)) {
      out[i] = f32_to_fp8(d, float(src[i]));
      continue;
    }
    if (is_integer(d) && int_bits(d) != 32) {
      // Whole values in range are stored exactly; others follow the float -> int rule.
      uint64_t v = float_to_int(d, src[i]);
      std::memcpy(out + dtype_size(d) * i, &v, dtype_size(d));  // little-endian low bytes
      continue;
    }
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
    if (is_fp8(d)) {
      dst[i] = fp8_to_f32(d, in[i]);
      continue;
    }
    if (is_integer(d) && int_bits(d) != 32) {
      uint64_t v = 0;
      std::memcpy(&v, in + dtype_size(d) * i, dtype_size(d));
      v = int_wrap(d, v);
      dst[i] = is_signed_integer(d) ? double(int64_t(v)) : double(v);
      continue;
    }
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

bool parse_uint64(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, uint64_t(10), &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v)) return false;
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
