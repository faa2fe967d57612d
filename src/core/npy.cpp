// NumPy .npy reading, writing and conversion (see npy.hpp).
#include "core/npy.hpp"

#include <sys/stat.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/numeric.hpp"

namespace iron::npy {

static_assert(LDBL_MANT_DIG >= 64, "conversions hold every 64-bit integer exactly in a long double");

namespace {

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMaxHeader = 1 << 20;
constexpr size_t kMaxDims = 32;

// The header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(std::string& descr, bool& fortran, std::vector<uint64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    ws();
    expect('{');
    while (true) {
      ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      const std::string key = string();
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        descr = string();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_order = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      ws();
      expect('}');
      break;
    }
    ws();
    if (i_ != s_.size()) fail("text after the header dictionary");
    if (!have_descr || !have_order || !have_shape)
      fail(std::string("the header lacks '") + (!have_descr ? "descr" : !have_order ? "fortran_order" : "shape") + "'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(name_ + ": not a valid .npy header (" + why + " at byte " + std::to_string(i_) + ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') fail("an escape in a string");
      out += s_[i_++];
    }
    expect(q);
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") return i_ += 4, true;
    if (s_.substr(i_, 5) == "False") return i_ += 5, false;
    fail("expected True or False");
  }
  std::vector<uint64_t> tuple() {
    std::vector<uint64_t> dims;
    expect('(');
    while (true) {
      ws();
      if (peek() == ')') {
        ++i_;
        return dims;
      }
      if (peek() < '0' || peek() > '9') fail("expected a dimension");
      uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (!num::checked_mul(v, uint64_t(10), v) || !num::checked_add(v, uint64_t(peek() - '0'), v))
          fail("a dimension too large");
        ++i_;
      }
      if (peek() == 'L') ++i_;  // written by Python 2
      dims.push_back(v);
      if (dims.size() > kMaxDims) fail("more than " + std::to_string(kMaxDims) + " dimensions");
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      ws();
      expect(')');
      return dims;
    }
  }

  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

uint32_t read_le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Element i of `a` as an exact long double.
long double element(const Array& a, uint64_t i) {
  const unsigned char* p = a.data.data() + i * a.itemsize;
  uint64_t bits = 0;
  for (int b = int(a.itemsize) - 1; b >= 0; --b) bits = (bits << 8) | p[b];
  if (a.kind == 'b') return bits != 0 ? 1.0L : 0.0L;
  if (a.kind == 'u') return (long double)bits;
  if (a.kind == 'i') {
    const int shift = 64 - 8 * int(a.itemsize);
    return (long double)(int64_t(bits << shift) >> shift);
  }
  if (a.itemsize == 2) return num::f16_to_f32(uint16_t(bits));
  if (a.itemsize == 4) {
    float f;
    uint32_t u = uint32_t(bits);
    std::memcpy(&f, &u, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

// v rounded to f32 "to odd": exact when v is an f32, else the neighbour whose last significand
// bit is 1, so one more rounding to a format of at most 22 significand bits is v's correct
// rounding (no double rounding). |v| must not exceed FLT_MAX.
float f32_round_odd(long double v) {
  float f = float(v);
  if (std::isnan(v) || (long double)f == v) return f;
  if (std::fabs((long double)f) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= 1;
  std::memcpy(&f, &u, 4);
  return f;
}

long double largest_finite(DType t) {
  switch (t) {
    case DType::F32: return FLT_MAX;
    case DType::F16: return 65504.0L;
    case DType::BF16: return 0x1.fep127L;
    case DType::F8E4M3: return 448.0L;
    case DType::F8E5M2: return 57344.0L;
    default: return 0;
  }
}

std::string index_text(const Array& a, uint64_t flat) {
  if (a.shape.size() <= 1) return "element " + std::to_string(flat);
  std::vector<uint64_t> idx(a.shape.size());
  uint64_t rest = flat;
  for (size_t d = a.shape.size(); d-- > 0;) {
    idx[d] = a.shape[d] ? rest % a.shape[d] : 0;
    rest = a.shape[d] ? rest / a.shape[d] : 0;
  }
  std::string s = "element " + std::to_string(flat) + " (index [";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "])";
}

std::string value_text(long double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17Lg", v);
  return buf;
}

}  // namespace

uint64_t Array::count() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n = num::saturating_mul(n, d);
  return n;
}

std::string Array::type_name() const {
  if (kind == 'b') return "bool";
  return std::string(1, kind) + std::to_string(itemsize * 8);
}

std::string Array::shape_text() const {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Array parse(const void* bytes, size_t size, const std::string& name) {
  const auto* b = static_cast<const unsigned char*>(bytes);
  if (size < 10 || std::memcmp(b, kMagic, sizeof kMagic) != 0)
    throw Error(name + ": not a .npy file (no \\x93NUMPY magic at its start)");
  const int major = b[6], minor = b[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    throw Error(name + ": .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                " (iron reads 1.0, 2.0 and 3.0)");
  const size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) throw Error(name + ": truncated .npy header");
  const size_t header_len = read_le(b + 8, major == 1 ? 2 : 4);
  if (header_len > kMaxHeader || prefix + header_len > size)
    throw Error(name + ": truncated .npy header (it says " + std::to_string(header_len) + " bytes)");
  std::string descr;
  bool fortran = false;
  Array a;
  HeaderParser(std::string_view(reinterpret_cast<const char*>(b + prefix), header_len), name).parse(descr, fortran, a.shape);
  if (fortran)
    throw Error(name + ": the array is in Fortran order; iron reads C order (save numpy.ascontiguousarray(a))");
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '>' && descr[0] != '='))
    throw Error(name + ": dtype '" + descr + "' is not one iron reads (bool, int8..int64, uint8..uint64, float16, float32, float64)");
  const char kind = descr[1];
  const std::string width = descr.substr(2);
  const bool known = (kind == 'b' && width == "1") || ((kind == 'i' || kind == 'u') && (width == "1" || width == "2" || width == "4" || width == "8")) ||
                     (kind == 'f' && (width == "2" || width == "4" || width == "8"));
  if (!known)
    throw Error(name + ": dtype '" + descr + "' is not one iron reads (bool, int8..int64, uint8..uint64, float16, float32, float64)");
  a.kind = kind;
  a.itemsize = uint32_t(width[0] - '0');
  if (descr[0] == '>' && a.itemsize > 1)
    throw Error(name + ": dtype '" + descr + "' is big-endian; iron reads little-endian (save a.astype(a.dtype.newbyteorder('<')))");
  uint64_t bytes_needed = 0;
  if (!num::checked_mul(a.count(), uint64_t(a.itemsize), bytes_needed) || a.count() == UINT64_MAX)
    throw Error(name + ": shape " + a.shape_text() + " is too large");
  const size_t have = size - prefix - header_len;
  if (have != bytes_needed)
    throw Error(name + ": shape " + a.shape_text() + " of " + a.type_name() + " needs " + std::to_string(bytes_needed) +
                " data bytes, the file holds " + std::to_string(have) + (have < bytes_needed ? " (truncated)" : ""));
  a.data.assign(b + prefix + header_len, b + size);
  return a;
}

Array read(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(path + ": no such file");
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot be read");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Error(path + ": cannot be read");
  return parse(bytes.data(), bytes.size(), path);
}

std::string serialize(const Array& a) {
  std::string descr = a.kind == 'b' ? "|b1" : std::string(a.itemsize == 1 ? "|" : "<") + a.kind + std::to_string(a.itemsize);
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + a.shape_text() + ", }";
  const bool v2 = dict.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic, sizeof kMagic);
  out += char(v2 ? 2 : 1);
  out += char(0);
  const uint32_t len = uint32_t(dict.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += char((len >> (8 * i)) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  return out;
}

void to_dtype(const Array& a, DType t, void* dst, Conversion& conv, const std::string& name) {
  auto* out = static_cast<unsigned char*>(dst);
  const size_t size = dtype_size(t);
  const uint64_t n = a.count();
  auto refuse = [&](uint64_t i, long double v, const std::string& why) {
    throw Error(name + ": " + index_text(a, i) + " = " + value_text(v) + " " + why);
  };
  for (uint64_t i = 0; i < n; ++i) {
    const long double v = element(a, i);
    if (is_float(t)) {
      const long double top = largest_finite(t);
      if (std::isfinite(v) && std::fabs(v) > top)
        refuse(i, v, "is out of the range of " + std::string(dtype_name(t)) + " (largest finite " + value_text(top) + ")");
      if (std::isinf(v) && t == DType::F8E4M3) refuse(i, v, "cannot be held by f8e4m3 (it has no infinities)");
      float rounded;
      if (t == DType::F32) {
        rounded = float(v);
        std::memcpy(out + i * 4, &rounded, 4);
      } else if (t == DType::F16 || t == DType::BF16) {
        const float odd = f32_round_odd(v);
        const uint16_t h = t == DType::F16 ? num::f32_to_f16(odd) : num::f32_to_bf16(odd);
        rounded = t == DType::F16 ? num::f16_to_f32(h) : num::bf16_to_f32(h);
        std::memcpy(out + i * 2, &h, 2);
      } else {
        const uint8_t q = num::f32_to_fp8(t, f32_round_odd(v));
        rounded = num::fp8_to_f32(t, q);
        out[i] = q;
      }
      if (!(std::isnan(v) && std::isnan(rounded)) && (long double)rounded != v) ++conv.inexact;
    } else if (is_integer(t)) {
      if (!std::isfinite(v) || v != std::trunc(v))
        refuse(i, v, "is not an integer; " + std::string(dtype_name(t)) + " takes integers");
      const bool is_signed = t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
      const long double lo = is_signed ? (long double)num::int_min(t) : 0.0L, hi = (long double)num::int_max(t);
      if (v < lo || v > hi)
        refuse(i, v, "is out of the range of " + std::string(dtype_name(t)) + " (" + value_text(lo) + " to " + value_text(hi) + ")");
      const uint64_t bits = is_signed ? uint64_t(int64_t(v)) : uint64_t(v);
      for (size_t b = 0; b < size; ++b) out[i * size + b] = uint8_t(bits >> (8 * b));
    } else if (t == DType::Bool) {
      if (v != 0 && v != 1) refuse(i, v, "is not a bool (0 or 1)");
      const uint32_t b = v != 0;
      std::memcpy(out + i * 4, &b, 4);
    } else {
      throw Error(name + ": iron cannot store values as " + std::string(dtype_name(t)));
    }
  }
}

std::string saved_type(DType t) {
  if (t == DType::Bool) return "bool";
  if (t == DType::BF16 || is_fp8(t)) return "f32";
  return dtype_name(t);
}

Array from_dtype(DType t, const void* src, uint64_t count, std::vector<uint64_t> shape) {
  Array a;
  a.shape = std::move(shape);
  const auto* in = static_cast<const unsigned char*>(src);
  if (t == DType::Bool) {
    a.kind = 'b';
    a.itemsize = 1;
    a.data.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      uint32_t v;
      std::memcpy(&v, in + i * 4, 4);
      a.data[i] = v != 0;
    }
  } else if (t == DType::BF16 || is_fp8(t)) {
    a.kind = 'f';
    a.itemsize = 4;
    a.data.resize(count * 4);
    for (uint64_t i = 0; i < count; ++i) {
      float f;
      if (t == DType::BF16) {
        uint16_t h;
        std::memcpy(&h, in + i * 2, 2);
        f = num::bf16_to_f32(h);
      } else {
        f = num::fp8_to_f32(t, in[i]);
      }
      std::memcpy(a.data.data() + i * 4, &f, 4);
    }
  } else if (is_float(t) || is_integer(t)) {
    a.kind = is_float(t) ? 'f' : (t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64) ? 'i' : 'u';
    a.itemsize = uint32_t(dtype_size(t));
    a.data.assign(in, in + count * a.itemsize);
  } else {
    throw Error(std::string("iron cannot save values of dtype ") + dtype_name(t) + " as .npy");
  }
  return a;
}

}  // namespace iron::npy
