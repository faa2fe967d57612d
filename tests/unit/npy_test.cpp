// .npy reading, writing and conversion (core/npy.hpp): headers of every version numpy writes,
// malformed files rejected with the file's name, and conversions that round once or refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "core/npy.hpp"
#include "core/numeric.hpp"

using iron::DType;
namespace npy = iron::npy;

namespace {

// A file as numpy.save writes it: magic, version, little-endian header length, the dict padded
// with spaces to a multiple of 64 bytes, '\n', then the data.
std::string file(int major, const std::string& dict, const std::string& data) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s;
  for (float f : v) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

std::string error_of(const std::string& bytes) {
  try {
    npy::parse(bytes.data(), bytes.size(), "x.npy");
  } catch (const iron::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Npy, ReadsEveryHeaderVersion) {
  for (int major : {1, 2, 3}) {
    std::string f = file(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats({1, 2, 3, 4, 5, 6}));
    npy::Array a = npy::parse(f.data(), f.size(), "x.npy");
    EXPECT_EQ(a.kind, 'f');
    EXPECT_EQ(a.itemsize, 4u);
    EXPECT_EQ(a.shape, (std::vector<uint64_t>{2, 3}));
    EXPECT_EQ(a.count(), 6u);
    EXPECT_EQ(a.shape_text(), "(2, 3)");
  }
  // Keys in any order, double quotes, no trailing comma, a 1-d and a 0-d shape.
  std::string f = file(1, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i8\"}", std::string(24, '\0'));
  EXPECT_EQ(npy::parse(f.data(), f.size(), "x.npy").type_name(), "i64");
  f = file(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", std::string(1, '\x07'));
  npy::Array scalar = npy::parse(f.data(), f.size(), "x.npy");
  EXPECT_EQ(scalar.count(), 1u);
  EXPECT_EQ(scalar.shape_text(), "()");
}

TEST(Npy, SerializeIsWhatNumpyWrites) {
  npy::Array a;
  a.kind = 'f';
  a.itemsize = 2;
  a.shape = {4};
  a.data.assign(8, 0);
  const std::string bytes = npy::serialize(a);
  EXPECT_EQ(bytes, file(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", std::string(8, '\0')));
  EXPECT_EQ((bytes.size() - 8) % 64, 0u);
  npy::Array back = npy::parse(bytes.data(), bytes.size(), "y.npy");
  EXPECT_EQ(back.shape, a.shape);
  EXPECT_EQ(back.type_name(), "f16");
}

TEST(Npy, MalformedFilesNameTheFileAndTheProblem) {
  const std::string data = floats({1, 2});
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_EQ(error_of(file(1, dict, data)), "");
  EXPECT_NE(error_of("PK\x03\x04 a zip file").find("x.npy: not a .npy file"), std::string::npos);
  std::string v4 = file(1, dict, data);
  v4[6] = 4;
  EXPECT_NE(error_of(v4).find("x.npy: .npy format version 4.0"), std::string::npos);
  EXPECT_NE(error_of(file(1, dict, data).substr(0, 40)).find("truncated .npy header"), std::string::npos);
  EXPECT_NE(error_of(file(1, dict, data.substr(0, 6))).find("needs 8 data bytes, the file holds 6 (truncated)"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, dict, data + "xx")).find("needs 8 data bytes, the file holds 10"), std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data)).find("big-endian"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data)).find("Fortran order"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data))
                .find("dtype '<c8' is not one iron reads"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", data)).find("is not one iron reads"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<f4', 'shape': (2,), }", data)).find("lacks 'fortran_order'"), std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data)).find("unexpected key 'x'"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", data)).find("expected a dimension"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", data))
                .find("a dimension too large"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", data))
                .find("is too large"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, "{'descr': '<f4', 'fortran_order': Nope, 'shape': (2,), }", data)).find("expected True or False"),
            std::string::npos);
  // Every prefix of a valid file is refused with a message, never read past its end.
  const std::string whole = file(1, dict, data);
  for (size_t n = 0; n < whole.size(); ++n) EXPECT_NE(error_of(whole.substr(0, n)), "") << n;
}

TEST(Npy, MissingFileIsNamed) {
  try {
    npy::read("/nonexistent/dir/x.npy");
    FAIL() << "no error";
  } catch (const iron::Error& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/dir/x.npy: no such file");
  }
}

namespace {
npy::Array array_of(char kind, uint32_t size, const std::string& data) {
  npy::Array a;
  a.kind = kind;
  a.itemsize = size;
  a.shape = {data.size() / size};
  a.data.assign(data.begin(), data.end());
  return a;
}
std::string doubles(std::initializer_list<double> v) {
  std::string s;
  for (double d : v) s.append(reinterpret_cast<const char*>(&d), 8);
  return s;
}
std::string convert_error(const npy::Array& a, DType t) {
  std::vector<unsigned char> out(a.count() * iron::dtype_size(t));
  npy::Conversion c;
  try {
    npy::to_dtype(a, t, out.data(), c, "x.npy");
  } catch (const iron::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 lies just above the midpoint between two f16
// values, so it rounds up; through an intermediate f32 rounding to nearest (1 + 2^-11, a tie) it
// would round to even, down to 1.
TEST(Npy, F64ToF16RoundsOnce) {
  const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  npy::Array a = array_of('f', 8, doubles({v, 0.5, -0.0, NAN, INFINITY}));
  std::vector<uint16_t> out(5);
  npy::Conversion c;
  npy::to_dtype(a, DType::F16, out.data(), c, "x.npy");
  EXPECT_EQ(iron::num::f16_to_f32(out[0]), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(out[1], 0x3800);
  EXPECT_EQ(out[2], 0x8000);
  EXPECT_TRUE(std::isnan(iron::num::f16_to_f32(out[3])));
  EXPECT_EQ(out[4], 0x7c00);
  EXPECT_EQ(c.inexact, 1u);
}

TEST(Npy, ValuesATypeCannotHoldAreRefusedByElement) {
  EXPECT_EQ(convert_error(array_of('f', 8, doubles({1.0, 70000.0})), DType::F16),
            "x.npy: element 1 = 70000 is out of the range of f16 (largest finite 65504)");
  EXPECT_NE(convert_error(array_of('f', 8, doubles({1e39})), DType::F32).find("is out of the range of f32"), std::string::npos);
  EXPECT_EQ(convert_error(array_of('f', 8, doubles({2.5})), DType::I32),
            "x.npy: element 0 = 2.5 is not an integer; i32 takes integers");
  EXPECT_EQ(convert_error(array_of('f', 8, doubles({NAN})), DType::U32), "x.npy: element 0 = nan is not an integer; u32 takes integers");
  EXPECT_EQ(convert_error(array_of('f', 8, doubles({-1.0})), DType::U32),
            "x.npy: element 0 = -1 is out of the range of u32 (0 to 4294967295)");
  EXPECT_EQ(convert_error(array_of('f', 8, doubles({INFINITY})), DType::F8E4M3),
            "x.npy: element 0 = inf cannot be held by f8e4m3 (it has no infinities)");
  // A 2-d index names the row and column.
  npy::Array m = array_of('f', 8, doubles({0, 1, 2, 300, 4, 5}));
  m.shape = {2, 3};
  EXPECT_EQ(convert_error(m, DType::I8), "x.npy: element 3 (index [1, 0]) = 300 is out of the range of i8 (-128 to 127)");
}

TEST(Npy, IntegersConvertExactlyAtEveryWidth) {
  // u64 2^64 - 1 and i64 -2^63 survive: no detour through a double.
  std::string u(8, '\xff'), i(8, '\0');
  i[7] = '\x80';
  std::vector<uint64_t> out(1);
  npy::Conversion c;
  npy::to_dtype(array_of('u', 8, u), DType::U64, out.data(), c, "x.npy");
  EXPECT_EQ(out[0], UINT64_MAX);
  npy::to_dtype(array_of('i', 8, i), DType::I64, out.data(), c, "x.npy");
  EXPECT_EQ(int64_t(out[0]), INT64_MIN);
  EXPECT_EQ(c.inexact, 0u);
  EXPECT_NE(convert_error(array_of('u', 8, u), DType::I64).find("out of the range of i64"), std::string::npos);
  // A 64-bit integer that f32 cannot hold exactly is rounded and counted.
  npy::to_dtype(array_of('u', 8, u), DType::F32, out.data(), c, "x.npy");
  EXPECT_EQ(c.inexact, 1u);
}

TEST(Npy, SavedTypes) {
  const uint16_t bf[2] = {0x3f80, 0xc000};  // 1, -2
  npy::Array a = npy::from_dtype(DType::BF16, bf, 2, {2});
  EXPECT_EQ(a.type_name(), "f32");
  float f[2];
  std::memcpy(f, a.data.data(), 8);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(npy::saved_type(DType::BF16), "f32");
  EXPECT_EQ(npy::saved_type(DType::F16), "f16");
  EXPECT_EQ(npy::from_dtype(DType::I16, bf, 2, {2}).type_name(), "i16");
}
