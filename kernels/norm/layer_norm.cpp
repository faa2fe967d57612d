// LayerNorm over the last dimension, with weight and bias:
//   out[r, j] = (x[r, j] - mean_r) * rsqrt(var_r + eps) * w[j] + b[j],
//   mean_r = mean_j x[r, j],  var_r = mean_j (x[r, j] - mean_r)^2  (the biased variance),
// mean and variance in f32, the variance from the centred values (two passes over the row, not
// E[x^2] - mean^2, which cancels catastrophically when |mean| >> sigma).
// Variant families over VEC in {1, 8} (kernels/norm/rows.hpp):
//   iron_layer_norm_warp_x{VEC}: one lane group per row, num_simd_groups() rows a threadgroup;
//     grid = {ceil(rows / (tg / lane width)), 1, 1};
//   iron_layer_norm_block_x{VEC}: one threadgroup per row; grid = {rows, 1, 1};
// threadgroup = {tg, 1, 1}, tg a multiple of the lane width. The kernels take dv = d / VEC.
// Each thread keeps up to 32 elements of its row in registers, so a row that fits is read once
// (the second pass keeps the centred values there); chunks past that capacity are read again
// by each pass. Tails: the last chunks go to the first threads, threads past them idle; rows
// past the last do nothing. Fixed-order trees (lane_sum / group_sum): bit-exact run to run on
// one device.
#include <algorithm>
#include <cmath>

#include <iron/iron.hpp>

#include "rows.hpp"

namespace iron::kernels {
using namespace iron::dsl;
using rows::each_element;
using rows::RowWalk;
using rows::Split;

static void layer_norm_body(const KernelVariant& v, Split split) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr rows = constexpr_("rows", u32);
  Expr dv = constexpr_("dv", u32);
  Expr eps = constexpr_("eps", f32);
  Buffer x = input("x", T, {rows, dv, vec});
  Buffer w = input("w", T, {dv, vec});
  Buffer b = input("b", T, {dv, vec});
  Buffer out = output("out", T, {rows, dv, vec});

  RowWalk walk(split, rows, dv, vec, rows::row_regs("iron_layer_norm"));
  TgBuffer held = walk.registers("row");
  if_(walk.live(), [&] {
    Expr width = cast<f32>(dv * vec);
    Var<f32> sum = 0.0f;
    walk.held_chunks([&](Expr j, Expr slot) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) {
        Expr xv = cast<f32>(x[at + e]);
        held[slot + e] = xv;
        sum += xv;
      });
    });
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { sum += cast<f32>(x[at + e]); });
    });
    // x - mean is computed as x + (-mean), the same value in IEEE arithmetic: the rest loop only
    // squares it, and a square cannot tell x - mean from mean - x.
    Expr neg_mean = -(walk.sum(sum) / width);
    Var<f32> sumsq = 0.0f;
    walk.held_chunks([&](Expr, Expr slot) {
      each_element(vec, [&](Expr e) {
        Expr centred = held[slot + e] + neg_mean;
        held[slot + e] = centred;
        sumsq += centred * centred;
      });
    });
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) {
        Expr centred = cast<f32>(x[at + e]) + neg_mean;
        sumsq += centred * centred;
      });
    });
    Expr rstd = rsqrt(walk.sum(sumsq) / width + eps);
    // The chunks past the registers first: then every chunk the held loop covers is written by
    // it last.
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>((cast<f32>(x[at + e]) + neg_mean) * rstd * cast<f32>(w[j + e]) + cast<f32>(b[j + e])); });
    });
    walk.held_chunks([&](Expr j, Expr slot) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>(held[slot + e] * rstd * cast<f32>(w[j + e]) + cast<f32>(b[j + e])); });
    });
  });
}
static void layer_norm_warp(const KernelVariant& v) { layer_norm_body(v, Split::Warp); }
static void layer_norm_block(const KernelVariant& v) { layer_norm_body(v, Split::Block); }
IRON_KERNEL_VARIANTS(iron_layer_norm_warp, layer_norm_warp, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 8}));
IRON_KERNEL_VARIANTS(iron_layer_norm_block, layer_norm_block, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 8}));

// Tests: every concrete kernel on direct dispatches with tails, odd shapes, an offset row
// (|mean| several sigma) and a constant row (variance 0: eps alone sets the scale).
using rows::RowLaunch;

// Tolerance (derived), in f32 roundings relative to the size of the normalized terms, with the
// default floor of 1 (outputs are O(1); a small output is a cancellation of (x - mean) rstd w
// against b, measured against 1):
//  - the mean's absolute error is (R + 1) roundings of mean|x|, R = row_sum_rounding; through
//    x - mean and rstd it becomes A (R + 1) roundings of the output scale, A = mean|x| / sigma
//    (rounded up) of the worst row;
//  - the centred sum of squares: R + 2 roundings (a square and an add per term, the division);
//    its first-order sensitivity to the mean's error is zero (the centred values sum to 0);
//  - rsqrt (one transcendental), eps, the subtract, two multiplies and the add: 6;
//  - every term is up to K = max |(x - mean) rstd w| + |b| (rounded up) times the floor, so the
//    whole count is scaled by K.
static TestSetup layer_norm_setup(DType dt, const RowLaunch& l, uint32_t rows, std::vector<double> x, double eps,
                                  double sum_rounding = -1) {
  const uint32_t d = l.dv * l.vec;
  std::vector<double> w = fixture::uniform(d, 0.5, 1.5, 36), b = fixture::uniform(d, -0.5, 0.5, 37);
  for (auto& v : x) v = fixture::round_to(dt, v);
  for (auto& v : w) v = fixture::round_to(dt, v);
  for (auto& v : b) v = fixture::round_to(dt, v);
  double a = 1, k = 1;
  for (uint32_t r = 0; r < rows; ++r) {
    const double* row = x.data() + size_t(r) * d;
    double mean = 0, abs_mean = 0, var = 0;
    for (uint32_t j = 0; j < d; ++j) mean += row[j], abs_mean += std::fabs(row[j]);
    mean /= d, abs_mean /= d;
    for (uint32_t j = 0; j < d; ++j) var += (row[j] - mean) * (row[j] - mean);
    const double rstd = 1.0 / std::sqrt(var / d + double(float(eps)));
    a = std::max(a, std::ceil(abs_mean * rstd));
    for (uint32_t j = 0; j < d; ++j) k = std::max(k, std::ceil(std::fabs((row[j] - mean) * rstd * w[j]) + std::fabs(b[j])));
  }
  // sum_rounding: the reduction's roundings when the caller knows them (a family case: any plan).
  const double r = sum_rounding >= 0 ? sum_rounding : rows::row_sum_rounding(l.split, l.dv, l.vec, l.threadgroup.x);
  return TestSetup(dt)
      .in("x", std::move(x))
      .in("w", std::move(w))
      .in("b", std::move(b))
      .out("out", size_t(rows) * d)
      .constexprs({{"rows", rows}, {"dv", l.dv}, {"eps", eps}})
      .grid(l.grid, l.threadgroup)
      .accumulation(k * (a * (r + 1) + r + 2 + 6))
      .math_ops(k)
      .oracle([rows, d, eps](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        const auto& w = in.at("w");
        const auto& b = in.at("b");
        auto& o = out.at("out");
        for (uint32_t r = 0; r < rows; ++r) {
          const size_t at = size_t(r) * d;
          double mean = 0, var = 0;
          for (uint32_t j = 0; j < d; ++j) mean += x[at + j];
          mean /= d;
          for (uint32_t j = 0; j < d; ++j) var += (x[at + j] - mean) * (x[at + j] - mean);
          const double rstd = 1.0 / std::sqrt(var / d + double(float(eps)));
          for (uint32_t j = 0; j < d; ++j) o[at + j] = (x[at + j] - mean) * rstd * w[j] + b[j];
        }
      });
}
static TestSetup layer_norm_case(DType dt, Split split, uint32_t vec, uint32_t rows, uint32_t d, uint32_t tg,
                                 double offset = 0.0, double eps = 1e-5) {
  std::vector<double> x = fixture::uniform(size_t(rows) * d, offset - 2.0, offset + 2.0, 38);
  return layer_norm_setup(dt, rows::row_launch("iron_layer_norm", split, vec, rows, d, tg, 64), rows, std::move(x), eps);
}
// Rows of one repeated value but one: the variance is tiny next to eps, which then sets the scale
// (a kernel that drops eps divides by ~0), and a constant row (variance exactly 0, out = b).
static TestSetup layer_norm_flat(DType dt, Split split, uint32_t vec, uint32_t tg) {
  const uint32_t rows = 3, d = 520;
  std::vector<double> x(size_t(rows) * d, 0.75);
  for (uint32_t j = 0; j < d; ++j) x[2 * d + j] = -1.25;
  x[d + 7] = 0.75 + 1.0 / 64;
  return layer_norm_setup(dt, rows::row_launch("iron_layer_norm", split, vec, rows, d, tg, 64), rows, std::move(x), 1e-5);
}
constexpr auto kLnWarp = Split::Warp;
constexpr auto kLnBlock = Split::Block;

// Block: 7 x 4095 (VEC 1) on 64 threads and 7 x 4096 (VEC 8) on 64 threads (rows past the
// register capacity: the loop runs), 13 x 1000 on 128 threads (all held), an offset row.
IRON_TEST_KERNEL(iron_layer_norm_block_x1, rows7_d4095, {f32}, {f16}, {bf16}) { return layer_norm_case(dt, kLnBlock, 1, 7, 4095, 64); }
IRON_TEST_KERNEL(iron_layer_norm_block_x8, rows7_d4096, {f32}, {f16}, {bf16}) { return layer_norm_case(dt, kLnBlock, 8, 7, 4096, 64); }
IRON_TEST_KERNEL(iron_layer_norm_block_x8, rows13_d1000_offset, {f32}, {f16}, {bf16}) {
  return layer_norm_case(dt, kLnBlock, 8, 13, 1000, 128, 6.0);
}
IRON_TEST_KERNEL(iron_layer_norm_block_x8, rows3_d520_flat, {f32}, {f16}, {bf16}) { return layer_norm_flat(dt, kLnBlock, 8, 64); }
// Warp: 7 x 1000, 9 x 999 (VEC 1), an offset row, the flat rows.
IRON_TEST_KERNEL(iron_layer_norm_warp_x8, rows7_d1000, {f32}, {f16}, {bf16}) { return layer_norm_case(dt, kLnWarp, 8, 7, 1000, 128); }
IRON_TEST_KERNEL(iron_layer_norm_warp_x1, rows9_d999_offset, {f32}, {f16}, {bf16}) {
  return layer_norm_case(dt, kLnWarp, 1, 9, 999, 128, -5.0);
}
// Short rows that a lane group holds in registers at lane widths 8 and 32.
IRON_TEST_KERNEL(iron_layer_norm_warp_x8, rows5_d96, {f32}, {f16}, {bf16}) { return layer_norm_case(dt, kLnWarp, 8, 5, 96, 64); }
IRON_TEST_KERNEL(iron_layer_norm_warp_x1, rows5_d100, {f32}, {f16}, {bf16}) { return layer_norm_case(dt, kLnWarp, 1, 5, 100, 64); }
// Rows past the registers of 64 lanes (VEC 8: 256 chunks; 330 here, so the loop takes several
// steps at lane width 32 and less), and a grid past the last row (on
// 256 threads: group_sum's partials loop takes two steps at lane width 8).
IRON_TEST_KERNEL(iron_layer_norm_warp_x8, rows3_d2640, {f32}, {f16}, {bf16}) { return layer_norm_case(dt, kLnWarp, 8, 3, 2640, 64); }
static TestSetup layer_norm_past_rows(DType dt, uint32_t vec) {
  TestSetup t = layer_norm_case(dt, kLnBlock, vec, 3, 1000, 256, 3.0);
  return t.grid({t.grid_size().x + 1, 1, 1}, t.threadgroup());
}
IRON_TEST_KERNEL(iron_layer_norm_block_x8, rows3_d1000_grid4, {f32}) { return layer_norm_past_rows(dt, 8); }
IRON_TEST_KERNEL(iron_layer_norm_block_x1, rows3_d1000_grid4, {f32}) { return layer_norm_past_rows(dt, 1); }
IRON_TEST_KERNEL(iron_layer_norm_warp_x1, rows3_d520_flat, {f32}, {f16}, {bf16}) { return layer_norm_flat(dt, kLnWarp, 1, 64); }

}  // namespace iron::kernels

// Selector: the logical call {rows, d, eps}, as the RMSNorm families (rows::pick_row_launch).
namespace iron::kernels {
static LaunchPlan layer_norm_for(const Call& call, const DeviceInfo& dev) {
  return rows::row_family_plan("iron_layer_norm", call, dev, true);
}
IRON_SELECTOR(iron_layer_norm, layer_norm_for);

// Family cases: the logical call, whatever kernel the selector picks; the tolerance as the direct
// cases' with the most roundings any plan can have (rows::call_sum_rounding).
static TestSetup layer_norm_call(DType dt, uint32_t rows, uint32_t d, double offset = 0.0) {
  RowLaunch l = rows::row_launch("iron_layer_norm", Split::Block, 1, rows, d, 64, 64);
  TestSetup t = layer_norm_setup(dt, l, rows, fixture::uniform(size_t(rows) * d, offset - 2.0, offset + 2.0, 38), 1e-5,
                                 rows::call_sum_rounding(d));
  TestSetup c(dt);
  for (const auto& [name, values] : t.inputs()) c.in(name, values);
  return c.out("out", size_t(rows) * d)
      .call({{"rows", rows}, {"d", d}, {"eps", 1e-5}})
      .accumulation(t.accumulation_roundings())
      .math_ops(t.math_op_count())
      .oracle(t.oracle_fn());
}
IRON_TEST_KERNEL(iron_layer_norm, call_rows7_d4095, {f32}, {f16}, {bf16}) { return layer_norm_call(dt, 7, 4095); }
IRON_TEST_KERNEL(iron_layer_norm, call_rows7_d4096, {f32}, {f16}, {bf16}) { return layer_norm_call(dt, 7, 4096); }
IRON_TEST_KERNEL(iron_layer_norm, call_rows13_d1000_offset, {f32}, {f16}, {bf16}) { return layer_norm_call(dt, 13, 1000, 6.0); }
IRON_TEST_KERNEL(iron_layer_norm, call_rows3_d40, {f32}, {bf16}) { return layer_norm_call(dt, 3, 40); }

// Benchmarks at the shapes (4096 and 32768 rows of 4096) through the selector. Bytes: x
// read once, out written once, w and b once.
static BenchSetup layer_norm_bench(DType dt, uint32_t rows, uint32_t d) {
  RowLaunch l = rows::row_launch("iron_layer_norm", Split::Block, 1, rows, d, 64, 64);
  TestSetup t = layer_norm_setup(dt, l, rows, fixture::uniform(size_t(rows) * d, -2.0, 2.0, 38), 1e-5);
  BenchSetup b(dt);
  for (const auto& [name, values] : t.inputs()) b.in(name, values);
  b.out("out", size_t(rows) * d).call({{"rows", rows}, {"d", d}, {"eps", 1e-5}}).oracle(t.oracle_fn());
  return b.bytes((2.0 * rows * d + 2.0 * d) * dtype_size(dt)).flops(7.0 * rows * d).sweep("iron_layer_norm_d" + std::to_string(d), rows);
}
IRON_BENCH(iron_layer_norm, rows4096_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return layer_norm_bench(dt, 4096, 4096); }
IRON_BENCH(iron_layer_norm, rows32768_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return layer_norm_bench(dt, 32768, 4096); }
}  // namespace iron::kernels
