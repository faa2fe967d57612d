// Basic vocabulary shared by every layer of Iron: element dtypes, kernel modes, 3-D extents
// and the error type thrown at public boundaries. Deliberately tiny: every kernel file includes it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace iron {

// Element dtypes. `Generic` is the symbolic `T` of a dtype-generic kernel: it is traced once
// and substituted with a concrete dtype at emission time. New dtypes are appended (the values
// before Void keep their numbers). docs/semantics.md gives each its register and storage.
enum class DType : uint8_t {
  F32, F16, BF16, I32, U32, Bool, Generic, Void,
  I8, U8, I16, U16, I64, U64,
  F8E4M3,  // 8-bit float, 4 exponent bits, 3 mantissa bits, no infinities (OCP "E4M3FN"): storage only
  F8E5M2,  // 8-bit float, 5 exponent bits, 2 mantissa bits, IEEE-like: storage only
};
constexpr size_t kNumDTypes = size_t(DType::F8E5M2) + 1;

const char* dtype_name(DType d);                 // "f32", "f16", "bf16", "i32", "u32", "bool", "T", "void",
                                                 // "i8", "u8", "i16", "u16", "i64", "u64", "f8e4m3", "f8e5m2"
bool parse_dtype(std::string_view s, DType& out);
size_t dtype_size(DType d);                      // storage bytes; Bool is stored as 4 bytes (u32)
bool is_float(DType d);                          // F32, F16, BF16, the fp8 formats (Generic counts as float)
bool is_fp8(DType d);                            // F8E4M3, F8E5M2: storage only, no arithmetic
bool is_integer(DType d);                        // I8 .. I64, U8 .. U64
bool is_signed_integer(DType d);                 // I8, I16, I32, I64
unsigned int_bits(DType d);                      // 8, 16, 32, 64 for integers; 0 otherwise

// How a kernel maps threads onto work (seeds §2.5). The mode decides which built-ins the body may read.
enum class Mode : uint8_t { Elementwise, Reduction };
const char* mode_name(Mode m);

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  // Saturates at UINT64_MAX: three 32-bit factors can exceed 64 bits, and a wrapped product
  // would pass a size limit it should fail.
  uint64_t product() const {
    uint64_t xy = uint64_t(x) * y, r;  // two 32-bit factors always fit
    return __builtin_mul_overflow(xy, uint64_t(z), &r) ? UINT64_MAX : r;
  }
};

// Thrown at public boundaries (bad dispatch, bad kernel, missing backend). The message names
// what was wrong and where; callers show it to people as is.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace iron
