// Host-side 16-bit float conversions (round to nearest even, NaN preserved) shared by the
// emitters (rounding literals), the harness (fixtures and read-back) and the oracles.
#pragma once

#include <cstdint>

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

}  // namespace iron::num
