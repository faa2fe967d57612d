// Shared by the sampling kernels (sampling.cpp: argmax, top-k; top_p.cpp): the order key of a
// logit, the strided pass over a row, a threadgroup maximum without an identity value, and the
// tests' sorted order and tied fixtures. See sampling.cpp for the order and the tie rule.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

constexpr uint32_t kNone = 0xFFFFFFFFu;  // "no element": an index past any vocabulary

// A u32 that orders like the logit: the sign bit flipped for a positive value, every bit for a
// negative one; -0 counts as +0 and every NaN as 0xFFFFFFFF (above +inf, 0xFF800000).
inline Expr order_key(Expr v) {
  Expr bits = bitcast<u32>(select(v == 0.0f, 0.0f, v));
  Expr key = select(bits >= 0x80000000u, ~bits, bits | 0x80000000u);
  return select(v != v, 0xFFFFFFFFu, key);
}

// visit(j, value) for the logits j = local_id, local_id + tg, ... of row `row`: one load per
// logit, coalesced across the threadgroup (top-k's passes, where one traced copy of the visit
// keeps the kernel and its test surface small).
inline void for_each_strided(Buffer logits, Expr row, Expr vocab, const std::function<void(Expr, Expr)>& visit) {
  Expr base = row * vocab;
  for_(local_id(0), vocab, group_size(0), [&](Expr j) { visit(j, cast<f32>(logits[base + j])); });
}

// The threadgroup's largest u32, as group_max computes it (lane_max per lane group, the partials
// through threadgroup memory, a fold, lane_max) but with no identity value: the fold starts from
// lane group 0's partial, which always exists. The partials are stored complemented (the fold
// takes their minimum), so a slot no lane group wrote, read as 0, would give the largest u32
// rather than vanish. Every thread must reach it; `scratch` names its threadgroup array (unique
// per call site), and a repeated call must cross a barrier before it runs again.
inline Expr group_max_u32(Operand x, const char* scratch) {
  TgBuffer partials = threadgroup_alloc(scratch, u32, 256);  // up to 1024 threads / 4 lanes
  Expr mine = lane_max(x);
  if_(lane_id() == 0u, [&] { partials[simd_group_id()] = ~mine; });
  barrier();
  Var<u32> least = cast<u32>(partials[0u]);
  for_(lane_id(), num_simd_groups(), lane_width(), [&](Expr g) { least = min(least, partials[g]); });
  // No closing barrier: a call site that runs again (top-k's rounds) passes other barriers
  // before it rewrites the partials.
  return lane_max(~least);
}

// Tests: the indices of row `row` sorted by value descending, ties by index ascending (-0 == +0).
inline std::vector<uint32_t> sorted_row(const std::vector<double>& x, size_t row, uint32_t vocab) {
  std::vector<uint32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0u);
  const double* r = x.data() + row * vocab;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return r[a] > r[b]; });
  return order;
}

// Logits with deliberate ties: row r repeats its maximum at several indices (the lowest must
// win), has -0 and +0 side by side when its maximum is 0, and runs of equal values.
inline std::vector<double> tied_logits(uint32_t rows, uint32_t vocab, uint64_t seed) {
  std::vector<double> x = fixture::uniform(size_t(rows) * vocab, -8.0, 8.0, seed);
  for (double& v : x) v = std::round(v * 4) / 4;  // a coarse grid: many equal values
  for (uint32_t r = 0; r < rows; ++r) {
    double* row = x.data() + size_t(r) * vocab;
    const uint32_t a = (r * 37 + 11) % vocab, b = (r * 53 + 5) % vocab;
    row[a] = row[b] = 9.5;  // the maximum twice: the lower of a and b wins
    if (r % 3 == 2) {        // a row whose maximum is zero, as -0 and +0
      for (uint32_t j = 0; j < vocab; ++j) row[j] = -std::fabs(row[j]) - 1;
      row[a] = -0.0;
      row[b] = 0.0;
    }
  }
  return x;
}

}  // namespace iron::kernels
