// Lane-level building blocks used whole: a threadgroup prefix sum (group_inclusive_sum /
// group_exclusive_sum, built from the lane prefix sums) and a per-row histogram counted with
// threadgroup atomics. Their results do not depend on the lane width (small-integer inputs make
// every f32 sum exact in any order; atomic counts are order-free), so one CPU oracle holds at
// lane widths 8 and 32.
// Dispatch: grid = {rows, 1, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width.
#include <cmath>
#include <vector>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

// inc[r, j] = x[r, 0] + .. + x[r, j] and exc[r, j] = x[r, 0] + .. + x[r, j-1] for rows of at
// most one threadgroup (d <= tg); threads past d contribute 0, so the last thread's inclusive
// sum is the row total, total[r].
static void group_scan() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Buffer x = input("x", f32, {rows, d});
  Buffer inc = output("inc", f32, {rows, d});
  Buffer exc = output("exc", f32, {rows, d});
  Buffer total = output("total", f32, {rows});
  Expr j = local_id(0);
  Expr at = program_id(0) * d + j;
  Var<f32> v = 0.0f;
  if_(j < d, [&] { v = cast<f32>(x[at]); });
  Expr i = group_inclusive_sum(v);
  Expr e = group_exclusive_sum(v);
  if_(j < d, [&] {
    inc[at] = i;
    exc[at] = e;
  });
  if_(j == group_size(0) - 1u, [&] { total[program_id(0)] = i; });
}
IRON_KERNEL(iron_group_scan, group_scan, Reduction);

// Its tests are in tests/unit/lane_test.cpp (GroupScan.*), not IRON_TEST_KERNEL cases: on
// lavapipe the lane groups of a threadgroup run one after another between barriers, so a group
// scan without its first barrier still reads every earlier group's total there, and the mutation
// catalogue would count that dropped barrier as a survivor; the interpreter's race detector,
// which the unit test runs at lane widths 8 and 32, does report it.

// hist[r, b] = the number of j < d with x[r, j] % 64 == b: the row's threadgroup of exactly 64
// threads (one per bin) zeroes the bins, strides the row counting into threadgroup memory with
// atomics, and copies the bins out, with a barrier before and after the counting.
static void tg_histogram() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Buffer x = input("x", u32, {rows, d});
  Buffer hist = output("hist", u32, {rows, 64});
  TgBuffer counts = threadgroup_alloc("counts", u32, 64);
  Expr l = local_id(0);
  counts[l] = 0u;
  barrier();
  Expr base = program_id(0) * d;
  for_(l, d, group_size(0), [&](Expr j) { atomic_add(counts[cast<u32>(x[base + j]) & 63u], 1u); });
  barrier();
  hist[program_id(0) * 64u + l] = counts[l];
}
IRON_KERNEL(iron_tg_histogram, tg_histogram, Reduction);

static TestSetup histogram_case(DType dt, uint32_t rows, uint32_t d, uint32_t tg) {
  std::vector<double> x = fixture::uniform(size_t(rows) * d, 0.0, 4000.0, 72);
  for (double& v : x) v = std::floor(v);
  return TestSetup(dt)
      .in("x", std::move(x))
      .out("hist", size_t(rows) * 64)
      .constexprs({{"rows", rows}, {"d", d}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .oracle([rows, d](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        auto& h = out.at("hist");
        for (double& v : h) v = 0;
        for (uint32_t r = 0; r < rows; ++r)
          for (uint32_t j = 0; j < d; ++j) h[size_t(r) * 64 + (uint64_t(x[size_t(r) * d + j]) & 63u)] += 1;
      });
}
// guards: threadgroup atomic counts (order-free), rows longer and shorter than the threadgroup
IRON_TEST_KERNEL(iron_tg_histogram, rows3_d1000, {u32}) { return histogram_case(dt, 3, 1000, 64); }
IRON_TEST_KERNEL(iron_tg_histogram, rows2_d77, {u32}) { return histogram_case(dt, 2, 77, 64); }

}  // namespace iron::kernels
