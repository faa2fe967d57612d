// Basic vocabulary shared by every layer of Iron: element dtypes, kernel modes, 3-D extents
// and the error type thrown at public boundaries. Deliberately tiny: every kernel file includes it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace iron {

// Element dtypes. `Generic` is the symbolic `T` of a dtype-generic kernel: it is traced once
// and substituted with a concrete dtype at emission time.
enum class DType : uint8_t { F32, F16, BF16, I32, U32, Bool, Generic, Void };

const char* dtype_name(DType d);                 // "f32", "f16", "bf16", "i32", "u32", "bool", "T", "void"
bool parse_dtype(std::string_view s, DType& out);
size_t dtype_size(DType d);                      // storage bytes; Bool is stored as 4 bytes (u32)
bool is_float(DType d);                          // F32, F16, BF16 (Generic counts as float)
bool is_integer(DType d);                        // I32, U32

// How a kernel maps threads onto work (seeds §2.5). The mode decides which built-ins the body may
// read and which dispatch geometry is valid (docs/dsl.md, "Modes"; the table is src/core/modes.cpp).
enum class Mode : uint8_t { Elementwise, Reduction, Grid3D, Tile2D, SimdGroup2D };
const char* mode_name(Mode m);                   // "Elementwise", "Reduction", "Grid3D", ...
bool parse_mode(std::string_view s, Mode& out);

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
