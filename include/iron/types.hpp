// Basic vocabulary shared by every layer of Iron: element dtypes, kernel modes, 3-D extents
// and the error type thrown at public boundaries. Deliberately tiny: every kernel file includes it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace iron {

// Element dtypes. `Generic` is the symbolic `T` of a dtype-generic kernel: it is traced once
// and substituted with a concrete dtype at emission time. `GenericW` is a second, independent
// type parameter `W` (weights beside activations `T`), substituted the same way. New dtypes are
// appended (the values before them keep their numbers). docs/semantics.md gives each its
// register and storage.
enum class DType : uint8_t {
  F32, F16, BF16, I32, U32, Bool, Generic, Void, GenericW,
  I8, U8, I16, U16, I64, U64,
  F8E4M3,  // 8-bit float, 4 exponent bits, 3 mantissa bits, no infinities (OCP "E4M3FN"): storage only
  F8E5M2,  // 8-bit float, 5 exponent bits, 2 mantissa bits, IEEE-like: storage only
};
constexpr size_t kNumDTypes = size_t(DType::F8E5M2) + 1;

const char* dtype_name(DType d);                 // "f32", "f16", "bf16", "i32", "u32", "bool", "T", "void", "W",
                                                 // "i8", "u8", "i16", "u16", "i64", "u64", "f8e4m3", "f8e5m2"
bool parse_dtype(std::string_view s, DType& out);
size_t dtype_size(DType d);                      // storage bytes; Bool is stored as 4 bytes (u32)
bool is_float(DType d);                          // F32, F16, BF16, the fp8 formats (Generic and GenericW count as float)
inline bool is_type_param(DType d) { return d == DType::Generic || d == DType::GenericW; }
bool is_fp8(DType d);                            // F8E4M3, F8E5M2: storage only, no arithmetic
bool is_integer(DType d);                        // I8 .. I64, U8 .. U64
bool is_signed_integer(DType d);                 // I8, I16, I32, I64
unsigned int_bits(DType d);                      // 8, 16, 32, 64 for integers; 0 otherwise

// One instantiation of a type-generic kernel: the concrete dtypes its type parameters take.
// `t` substitutes T, `w` substitutes W; Void where the kernel has no such parameter. Implicit
// from a DType: a kernel generic over T alone (or not generic) is instantiated by one dtype,
// exactly as before W existed, so its names, cache keys and records do not change.
struct Instantiation {
  DType t = DType::Void;
  DType w = DType::Void;
  constexpr Instantiation() = default;
  constexpr Instantiation(DType t_) : t(t_) {}  // NOLINT: a T-only instantiation
  constexpr Instantiation(DType t_, DType w_) : t(t_), w(w_) {}
  constexpr bool has_w() const { return w != DType::Void; }
  friend constexpr bool operator==(Instantiation a, Instantiation b) { return a.t == b.t && a.w == b.w; }
  friend constexpr bool operator!=(Instantiation a, Instantiation b) { return !(a == b); }
  friend constexpr bool operator<(Instantiation a, Instantiation b) {
    return a.t != b.t ? a.t < b.t : a.w < b.w;
  }
};
// "f16" for a T-only instantiation, "f16,bf16" (T, then W) when W is set.
std::string instantiation_name(Instantiation in);
// Parses instantiation_name's form; false (out untouched) on anything else.
bool parse_instantiation(std::string_view s, Instantiation& out);

// The type of an IR value. A canonical value: two equal types are equal field by field, so a
// type compares, hashes and copies as the few bytes it is (interning without a table).
//   scalar    one element of a DType                              f32, u32, T
//   vector    2, 4, 8 or 16 elements of one scalar DType           vec4<f16>
//   fragment  a cooperative tile operand held across a lane group:
//             element type, M x N x K shape and role (A, B, accumulator)  frag<acc, f32, 16x8x16>
//   token     the handle of an asynchronous operation             token
//   void      what an op without a result has
enum class TypeKind : uint8_t { Void, Scalar, Vector, Fragment, Token };
enum class FragRole : uint8_t { A, B, Acc };

class Type {
 public:
  constexpr Type() = default;
  // A scalar (DType::Void gives the void type). Implicit: a DType is a scalar type.
  constexpr Type(DType d) : kind_(d == DType::Void ? TypeKind::Void : TypeKind::Scalar), elem_(d) {}  // NOLINT
  static Type vector(DType elem, uint32_t lanes);
  static Type fragment(DType elem, uint32_t m, uint32_t n, uint32_t k, FragRole role);
  static constexpr Type token() {
    Type t;
    t.kind_ = TypeKind::Token;
    return t;
  }

  constexpr TypeKind kind() const { return kind_; }
  constexpr bool is_void() const { return kind_ == TypeKind::Void; }
  constexpr bool is_scalar() const { return kind_ == TypeKind::Scalar; }
  constexpr bool is_vector() const { return kind_ == TypeKind::Vector; }
  constexpr bool is_fragment() const { return kind_ == TypeKind::Fragment; }
  constexpr bool is_token() const { return kind_ == TypeKind::Token; }
  // The element dtype of a scalar, vector or fragment; Void for void and token.
  constexpr DType elem() const { return elem_; }
  constexpr uint32_t lanes() const { return kind_ == TypeKind::Vector ? lanes_ : 1; }
  constexpr uint32_t m() const { return m_; }
  constexpr uint32_t n() const { return n_; }
  constexpr uint32_t k() const { return k_; }
  constexpr FragRole role() const { return role_; }
  // Two words that identify the type exactly (keys of value-numbering tables and hashes).
  constexpr uint64_t code() const {
    return uint64_t(kind_) | uint64_t(elem_) << 8 | uint64_t(lanes_) << 16 | uint64_t(role_) << 24;
  }
  constexpr uint64_t shape() const { return uint64_t(m_) | uint64_t(n_) << 16 | uint64_t(k_) << 32; }
  // The same shape with another element dtype (resolving a generic T, or a cast's result).
  Type with_elem(DType d) const;

  friend constexpr bool operator==(const Type& a, const Type& b) {
    return a.kind_ == b.kind_ && a.elem_ == b.elem_ && a.lanes_ == b.lanes_ && a.role_ == b.role_ &&
           a.m_ == b.m_ && a.n_ == b.n_ && a.k_ == b.k_;
  }
  friend constexpr bool operator!=(const Type& a, const Type& b) { return !(a == b); }

 private:
  TypeKind kind_ = TypeKind::Void;
  DType elem_ = DType::Void;
  uint8_t lanes_ = 0;
  FragRole role_ = FragRole::A;
  uint16_t m_ = 0, n_ = 0, k_ = 0;
};

// "f32", "vec4<f16>", "frag<acc, f32, 16x8x16>", "token", "void".
std::string type_name(Type t);
// Parses type_name's form; false (out untouched) on anything else.
bool parse_type(std::string_view s, Type& out);
// Storage bytes of one value (a vector: lanes x element; fragment and token: 0, they live in
// registers only).
size_t type_size(Type t);
// A scalar type's predicates; false for every other kind.
inline bool is_float(Type t) { return t.is_scalar() && is_float(t.elem()); }
inline bool is_integer(Type t) { return t.is_scalar() && is_integer(t.elem()); }

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
