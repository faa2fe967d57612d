// Host-side 16-bit and 8-bit float conversions (round to nearest even, NaN preserved, fp8
// saturating to its largest finite value), integer wrapping and saturating float -> integer
// conversion in every width, shared by eval (the interpreter and const_fold), the emitters
// (rounding literals), the harness (fixtures and read-back) and the oracles; and the checked
// arithmetic every size, extent, count and literal boundary uses.
#pragma once

#include <cstdint>
#include <string_view>

#include "iron/types.hpp"

namespace iron::num {

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t b);

// fp8 (d = F8E4M3 or F8E5M2). To fp8: round to nearest even; a result beyond the largest finite
// value saturates to it (+-448 for e4m3, +-57344 for e5m2, infinities included: "satfinite");
// a NaN stays a NaN (0x7f | sign). From fp8: exact (e4m3 0x7f / 0xff are NaN; e5m2 has +-inf).
uint8_t f32_to_fp8(DType d, float f);
float fp8_to_f32(DType d, uint8_t b);

// Rounds an f32 value to the precision of `d` and back (identity for f32 and integers).
float round_to(DType d, float v);

// a * b + c for f32 register values, rounded once to f32 "to odd": the exact value when it is an
// f32, else the one of the two f32 values around it whose last significand bit is 1 (its
// truncation toward zero with that bit set; beyond the f32 range, the largest finite f32).
// Rounding this to f16 or bf16 (nearest even) is the single rounding of the exact a * b + c,
// since 24 >= p + 2 (docs/semantics.md, "16-bit float arithmetic"). Inf and NaN results are
// those of IEEE fma. The dialects' iron_fma_odd helpers compute the same.
float fma_round_odd(float a, float b, float c);

// Integers of every width as 64-bit register patterns: the value reduced modulo 2^bits(t)
// (two's complement wrap), then sign-extended for a signed t and zero-extended for an unsigned
// one. Every integer value eval and the interpreter hold is in this canonical form.
uint64_t int_wrap(DType t, uint64_t raw);
// bitcast (docs/semantics.md): the dtypes it connects come in three widths, 4 bytes (f32, i32,
// u32), 2 bytes (f16, bf16, i16, u16) and 8 bytes (i64, u64); bitcast_width is that width, or 0
// for a dtype bitcast does not take. bitcast_register reads register `reg` of dtype `from` as
// its bits (a 16-bit float register narrowed to its dtype as a store does: exact for what it
// holds) and returns those bits as a canonical register of dtype `to`.
int bitcast_width(DType t);
uint64_t bitcast_register(DType from, DType to, uint64_t reg);
// Float -> integer of dtype t: truncate toward zero, saturate to t's range, NaN -> 0; canonical.
uint64_t float_to_int(DType t, double x);
// The smallest and largest value of integer dtype t (as int64 / uint64).
int64_t int_min(DType t);
uint64_t int_max(DType t);

// Writes `count` values into storage of dtype `d` at `dst` (dtype_size(d) bytes each), and back.
void encode(DType d, const double* src, void* dst, size_t count);
void decode(DType d, const void* src, double* dst, size_t count);

// Checked arithmetic: each returns false when the exact result does not fit (`out` is then
// unspecified). Every product or sum of sizes, extents, counts and grid dimensions goes
// through these, so a value that wraps is reported instead of used.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool checked_add(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }
inline bool checked_mul(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool checked_add(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }
// Saturating forms for totals that are compared against a limit afterwards: an overflow
// becomes UINT64_MAX, which exceeds every limit.
inline uint64_t saturating_mul(uint64_t a, uint64_t b) { uint64_t r; return checked_mul(a, b, r) ? r : UINT64_MAX; }
inline uint64_t saturating_add(uint64_t a, uint64_t b) { uint64_t r; return checked_add(a, b, r) ? r : UINT64_MAX; }

// Reads a whole decimal integer literal (optional leading '-', digits only, nothing else).
// Returns false on an empty text, a stray character or a value outside int64.
bool parse_int64(std::string_view text, int64_t& out);
// Reads a whole decimal integer literal in [0, 2^64-1] (digits only).
bool parse_uint64(std::string_view text, uint64_t& out);
// Reads a whole float literal as printed by the IR printer ("%.17g", "inf", "-inf", "nan").
// Returns false on a stray character or a finite value outside the double range.
bool parse_double(std::string_view text, double& out);

}  // namespace iron::num
