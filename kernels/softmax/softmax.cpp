// Numerically stable softmax over the last dimension: out[r, j] = exp(x[r, j] - m) / sum_k exp(x[r, k] - m)
// with m the row maximum, so exp never overflows. One threadgroup per row, f32 accumulation,
// fixed-order reductions (bit-exact run to run on one device, no atomics).
// Dispatch: grid = {rows, 1, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width.
#include <cmath>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

static void softmax() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Buffer x = input("x", T, {rows, d});
  Buffer out = output("out", T, {rows, d});

  Expr base = program_id(0) * d;
  Var<f32> local_max = -INFINITY;
  for_(local_id(0), d, group_size(0), [&](Expr j) { local_max = max(local_max, cast<f32>(x[base + j])); });
  Expr row_max = group_max(local_max);

  Var<f32> local_sum = 0.0f;
  for_(local_id(0), d, group_size(0), [&](Expr j) { local_sum += exp(cast<f32>(x[base + j]) - row_max); });
  Expr inv_sum = 1.0f / group_sum(local_sum);

  for_(local_id(0), d, group_size(0), [&](Expr j) {
    out[base + j] = cast<T>(exp(cast<f32>(x[base + j]) - row_max) * inv_sum);
  });
}
IRON_KERNEL(iron_softmax, softmax, Reduction, f32, f16, bf16);

// Tolerance (derived): the row sum is a group_sum of exps, each output one more exp, a subtract,
// the reciprocal and a multiply. The argument x - m is rounded in f32 before exp, which for the
// outputs above the floor (|x - m| below about 12) stays inside the per-op allowance.
static TestSetup softmax_setup(DType dt, uint32_t rows, uint32_t d, uint32_t tg, std::vector<double> x) {
  return TestSetup(dt)
      .in("x", std::move(x))
      .out("out", size_t(rows) * d)
      .constexprs({{"rows", rows}, {"d", d}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .error_floor(1e-4)  // probabilities: relative error down to 1e-4, absolute below
      .accumulation(group_sum_rounding(d, tg) + 4)
      .math_ops(2)
      .oracle([rows, d](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        auto& o = out.at("out");
        for (uint32_t r = 0; r < rows; ++r) {
          const double* row = x.data() + size_t(r) * d;
          double m = row[0];
          for (uint32_t j = 1; j < d; ++j) m = std::max(m, row[j]);
          double s = 0;
          for (uint32_t j = 0; j < d; ++j) s += std::exp(row[j] - m);
          for (uint32_t j = 0; j < d; ++j) o[size_t(r) * d + j] = std::exp(row[j] - m) / s;
        }
      });
}
static TestSetup softmax_case(DType dt, uint32_t rows, uint32_t d, uint32_t tg, double spread) {
  return softmax_setup(dt, rows, d, tg, fixture::uniform(size_t(rows) * d, -spread, spread, 41));
}

// The wide case spreads x over [-100, 100]: exp(x) overflows f32 past 88.7, so a softmax without
// the max subtraction returns NaN there.
IRON_TEST_KERNEL(iron_softmax, rows5_d1000, {f32}, {f16}, {bf16}) { return softmax_case(dt, 5, 1000, 256, 4.0); }
IRON_TEST_KERNEL(iron_softmax, rows3_d4097_wide, {f32}, {f16}, {bf16}) {
  return softmax_case(dt, 3, 4097, 128, 100.0);
}
// Extreme rows: every logit below -88 (exp of each underflows f32, so a row maximum that starts
// at 0 instead of -inf gives 0 / 0), huge magnitudes with the maximum in the last element (a max
// loop that stops one short overflows exp), tiny magnitudes (nearly uniform), exact ties
// everywhere (exactly 1/d), two tied maxima among spread logits, and three rows far below zero
// with one logit at 0, where a wrong max would overflow exp: element 64 (lane group 8 at lane
// width 8, which a partials loop with the wrong stride skips), element 128 (which a row loop
// with stride tg + 1 skips) and element 127 (the last lane group, which a partials loop that
// stops one short skips).
IRON_TEST_KERNEL(iron_softmax, rows8_d777_extreme, {f32}, {f16}, {bf16}) {
  const uint32_t rows = 8, d = 777;
  std::vector<double> x(size_t(rows) * d);
  auto u = fixture::uniform(x.size(), 0.0, 1.0, 42);
  for (uint32_t j = 0; j < d; ++j) {
    x[j] = -120.0 + 30.0 * u[j];                       // all in [-120, -90]
    x[d + j] = -3e4 + 6e4 * u[d + j];                  // huge
    x[2 * d + j] = 1e-6 * (u[2 * d + j] - 0.5);        // tiny
    x[3 * d + j] = -100.5;                             // all tied
    x[4 * d + j] = -8.0 + 12.0 * u[4 * d + j];         // spread, with two tied maxima below
  }
  x[4 * d + 17] = x[4 * d + 600] = 6.0;
  x[2 * d - 1] = 3.5e4;
  const uint32_t peak[3] = {64, 128, 127};
  for (uint32_t r = 5; r < 8; ++r) {
    for (uint32_t j = 0; j < d; ++j) x[r * d + j] = -200.0 + 50.0 * u[r * d + j];
    x[r * d + peak[r - 5]] = 0.0;
  }
  return softmax_setup(dt, rows, d, 128, std::move(x));
}

}  // namespace iron::kernels

// Benchmarks of this kernel (generic_*): attention-score rows (4096 x 4096) and a
// vocabulary-sized row batch (64 x 128256). The family iron_softmax (softmax_rows.cpp) benches
// the same shapes through its selector under the plain names.
// Unique bytes: x in, out once (the kernel re-reads x from cache); about 5 FLOPs per element.
namespace iron::kernels {
static BenchSetup softmax_bench(DType dt, uint32_t rows, uint32_t d) {
  TestSetup t = softmax_case(dt, rows, d, 256, 4.0);
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).out("out", size_t(rows) * d).constexprs(t.scalars());
  b.grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes(2.0 * rows * d * dtype_size(dt)).flops(5.0 * rows * d).sweep("iron_softmax_d" + std::to_string(d), rows);
}
IRON_BENCH(iron_softmax, generic_rows4096_d4096, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 4096, 4096); }
IRON_BENCH(iron_softmax, generic_rows64_d128256, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 64, 128256); }
}  // namespace iron::kernels
