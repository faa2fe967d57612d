// Host-side 16-bit float conversions (round to nearest even, NaN preserved) shared by the
// emitters (rounding literals), the harness (fixtures and read-back) and the oracles, and the
// checked arithmetic every size, extent, count and literal boundary uses.
#pragma once

#include <cstdint>
#include <string_view>

#include "iron/types.hpp"

namespace iron::num {

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t b);

// Rounds an f32 value to the precision of `d` and back (identity for f32 and integers).
float round_to(DType d, float v);

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
// Reads a whole float literal as printed by the IR printer ("%.17g", "inf", "-inf", "nan").
// Returns false on a stray character or a finite value outside the double range.
bool parse_double(std::string_view text, double& out);

}  // namespace iron::num
