// Shared inner loop of the GEMV kernels (y = A x, A [m, k] row-major): a thread's part of the dot
// product of row `row` with x, read in chunks of VEC adjacent elements.
#pragma once

#include <iron/iron.hpp>

namespace iron::kernels {

// acc += sum over the whole VEC-chunks c = first, first + step, ... < end of row `row`:
// a[row * k + c * VEC + e] * x[c * VEC + e] for e < VEC, in f32, in that order. When k is a
// multiple of VEC (tested with a mask: VEC is a power of two) every chunk starts at an element
// offset that is provably a multiple of VEC, (row * (k / VEC) + c) * VEC, so the vectorize pass
// turns the VEC loads of A and of x into 16-byte accesses; otherwise a row starts anywhere and the
// same loop reads element by element. The k % VEC elements after the last whole chunk are the
// caller's (add_tail).
inline void dot_chunks(dsl::Buffer a, dsl::Buffer x, dsl::Expr row, dsl::Expr k, uint32_t vec, dsl::Expr first,
                       dsl::Expr end, dsl::Expr step, dsl::Var<dsl::f32>& acc) {
  using namespace iron::dsl;
  auto chunk = [&](Expr at, Expr xat) {
    for (uint32_t e = 0; e < vec; ++e) acc += cast<f32>(a[at + e]) * cast<f32>(x[xat + e]);
  };
  if (vec == 1) {
    Expr base = row * k;
    for_(first, end, step, [&](Expr c) { chunk(base + c, c); });
    return;
  }
  if_((k & (vec - 1)) == 0u, [&] {
    Expr row_chunks = row * (k / vec);
    for_(first, end, step, [&](Expr c) { chunk((row_chunks + c) * vec, c * vec); });
  }).else_([&] {
    Expr base = row * k;
    for_(first, end, step, [&](Expr c) { chunk(base + c * vec, c * vec); });
  });
}

// acc += the k % VEC products after the last whole chunk of row `row` (none for VEC 1).
inline void add_tail(dsl::Buffer a, dsl::Buffer x, dsl::Expr row, dsl::Expr k, uint32_t vec, dsl::Var<dsl::f32>& acc) {
  using namespace iron::dsl;
  if (vec == 1) return;
  Expr whole = (k / vec) * vec;
  Expr base = row * k;
  for_(whole, k, 1u, [&](Expr j) { acc += cast<f32>(a[base + j]) * cast<f32>(x[j]); });
}

}  // namespace iron::kernels
