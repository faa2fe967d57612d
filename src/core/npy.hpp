// NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian (or byte-order-free)
// booleans, signed and unsigned integers of 1, 2, 4 and 8 bytes and floats of 2, 4 and 8 bytes,
// C order. `iron run` reads a kernel's inputs from them and writes its outputs to them.
//
// Conversion to a buffer dtype (to_dtype) is value-preserving where it can be and refuses where
// it cannot: a float target rounds to nearest even once (from any source, f64 included, with no
// double rounding), keeps NaN and infinities, and refuses a finite value beyond its largest
// finite value; an integer target takes only integral values in its range; bool takes 0 and 1.
// A refused value is an iron::Error naming the file, the element and the range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iron/types.hpp"

namespace iron::npy {

struct Array {
  char kind = 'f';         // 'f' float, 'i' signed integer, 'u' unsigned integer, 'b' bool
  uint32_t itemsize = 4;   // bytes per element
  std::vector<uint64_t> shape;       // () for a 0-d array: one element
  std::vector<unsigned char> data;   // little-endian elements, C order
  uint64_t count() const;            // the product of the shape
  std::string type_name() const;     // "f64", "f16", "i32", "u8", "bool"
  std::string shape_text() const;    // "(13, 1000)", "(5,)", "()"
};

// Parses the bytes of a .npy file; `name` labels every error ("x.npy: ...").
Array parse(const void* bytes, size_t size, const std::string& name);
// Reads and parses a file; throws iron::Error naming it when it is missing, unreadable, not a
// regular file or not a .npy file Iron reads (big-endian, Fortran order, an object or string
// dtype, a header or data of the wrong size).
Array read(const std::string& path);
// The file's bytes: version 1.0 (2.0 when the header does not fit 1.0), header padded to a
// multiple of 64 bytes, as numpy.save writes it.
std::string serialize(const Array& a);

// What a conversion did, for the note `iron run` prints.
struct Conversion {
  uint64_t inexact = 0;  // elements whose value changed (rounded)
};
// Converts every element of `a` to storage of dtype `t` at `dst` (count() * dtype_size(t)
// bytes). Throws iron::Error naming `name`, the element's index and the range on a value `t`
// cannot hold.
void to_dtype(const Array& a, DType t, void* dst, Conversion& conv, const std::string& name);
// The array a buffer of dtype `t` is saved as: its own type where NumPy has one; bf16 and the
// fp8 formats as f32 (exact); bool as bool.
Array from_dtype(DType t, const void* src, uint64_t count, std::vector<uint64_t> shape);
// The NumPy type from_dtype writes for `t` ("f32" for bf16).
std::string saved_type(DType t);

}  // namespace iron::npy
