// RMSNorm over the last dimension, and RMSNorm fused with the residual add before it:
//   iron_rms_norm_*:      out[r, j] = x[r, j] * w[j] / sqrt(mean_j(x[r, j]^2) + eps)
//   iron_residual_rms_norm_*:  h[r, j] = x[r, j] + residual[r, j] (rounded to T and stored), then
//                         out = RMSNorm(h) computed from the stored (rounded) h, as an unfused
//                         add followed by RMSNorm computes it.
// Four variant families over VEC in {1, 8}, the elements a thread moves side by side:
//   iron_rms_norm_warp_x{VEC}, iron_rms_norm_block_x{VEC},
//   iron_residual_rms_norm_warp_x{VEC}, iron_residual_rms_norm_block_x{VEC}.
// The kernels take the row width as dv = d / VEC chunks (kernels/norm/rows.hpp), so every row
// and chunk is VEC-aligned and a chunk is one 16-byte access (two for f32): rows of a width
// that is not a multiple of 8 take VEC = 1.
//  - warp: one lane group per row, num_simd_groups() rows per threadgroup; short rows
//    (d <= 32 lanes x 32 elements). Dispatch: grid = {ceil(rows / (tg / lane width)), 1, 1},
//    threadgroup = {tg, 1, 1}, tg a multiple of the lane width.
//  - block: one threadgroup per row; medium and long rows. Dispatch: grid = {rows, 1, 1},
//    threadgroup = {tg, 1, 1}, tg a multiple of the lane width.
// Each thread keeps up to 32 elements of its row in registers (f32), so a row of at most
// 32 * threads-per-row elements is read once; a longer row is finished by a strided loop that
// reads the chunks past that capacity again. Tails: the last chunks of a row go to the first
// threads; a thread whose chunk index reaches dv does nothing more; rows past the last (warp
// variants at the end of the grid) do nothing. Accumulation in f32; the sum of squares is a
// fixed-order tree (lane_sum or group_sum), so results are bit-exact run to run on one device.
// The selectors (rms_norm_geometry) pick the variant and geometry from the logical shape.
#include <algorithm>
#include <cmath>

#include <iron/iron.hpp>

#include "rows.hpp"

namespace iron::kernels {
using namespace iron::dsl;
using rows::each_element;
using rows::RowWalk;
using rows::Split;

static void rms_norm_body(const KernelVariant& v, Split split, bool residual) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr rows = constexpr_("rows", u32);
  Expr dv = constexpr_("dv", u32);  // the row width in chunks of VEC elements: d = dv * VEC
  Expr eps = constexpr_("eps", f32);
  Buffer x = input("x", T, {rows, dv, vec});
  Buffer res = residual ? input("residual", T, {rows, dv, vec}) : x;
  Buffer w = input("w", T, {dv, vec});
  Buffer h = residual ? output("h", T, {rows, dv, vec}) : x;
  Buffer out = output("out", T, {rows, dv, vec});

  RowWalk walk(split, rows, dv, vec, rows::row_regs(residual ? "iron_residual_rms_norm" : "iron_rms_norm"));
  TgBuffer held = walk.registers("row");
  // Element i of the row being normalized, in f32: x, or the sum h rounded to T (stored to h
  // on the first pass only).
  auto value = [&](Expr i, bool first_pass) -> Expr {
    if (!residual) return cast<f32>(x[i]);
    Expr sum = cast<T>(cast<f32>(x[i]) + cast<f32>(res[i]));
    if (first_pass) h[i] = sum;
    return cast<f32>(sum);
  };
  if_(walk.live(), [&] {
    Var<f32> sumsq = 0.0f;
    // The held chunks are loaded first, in a loop of loads alone (every slot's 16-byte load is
    // issued before any is used; empty slots hold 0), then summed from the registers.
    walk.load_held(held, [&](Expr i) { return value(i, true); }, 0.0f);
    walk.all_slots([&](Expr slot) {
      each_element(vec, [&](Expr e) {
        Expr v = cast<f32>(held[slot + e]);  // the load of the register, bound once
        sumsq += v * v;
      });
    });
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) {
        Expr v = value(at + e, true);
        sumsq += v * v;
      });
    });
    Expr scale = rsqrt(walk.sum(sumsq) / cast<f32>(dv * vec) + eps);
    // The chunks past the registers first: then every chunk the held loop covers is written by
    // it last.
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>(value(at + e, false) * scale * cast<f32>(w[j + e])); });
    });
    walk.held_chunks([&](Expr j, Expr slot) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>(held[slot + e] * scale * cast<f32>(w[j + e])); });
    });
  });
}
static void rms_norm_warp(const KernelVariant& v) { rms_norm_body(v, Split::Warp, false); }
static void rms_norm_block(const KernelVariant& v) { rms_norm_body(v, Split::Block, false); }
static void add_rms_norm_warp(const KernelVariant& v) { rms_norm_body(v, Split::Warp, true); }
static void add_rms_norm_block(const KernelVariant& v) { rms_norm_body(v, Split::Block, true); }
IRON_KERNEL_VARIANTS(iron_rms_norm_warp, rms_norm_warp, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 8}));
IRON_KERNEL_VARIANTS(iron_rms_norm_block, rms_norm_block, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 8}));
IRON_KERNEL_VARIANTS(iron_residual_rms_norm_warp, add_rms_norm_warp, Reduction, (f32, f16, bf16), "x{VEC}",
                     ::iron::int_axis("VEC", {1, 8}));
IRON_KERNEL_VARIANTS(iron_residual_rms_norm_block, add_rms_norm_block, Reduction, (f32, f16, bf16), "x{VEC}",
                     ::iron::int_axis("VEC", {1, 8}));

}  // namespace iron::kernels

// Tests: every concrete kernel on direct dispatches with tails and odd shapes, against an f64
// oracle.
namespace iron::kernels {
using rows::RowLaunch;

// Tolerance (derived): out is the longest path: per element a square and an add per term of
// the thread's serial sum and the tree (row_sum_rounding, counted twice as in iron_rmsnorm),
// then the mean, eps, rsqrt and two multiplies; rsqrt halves the sum's relative error, so
// counting it whole is conservative. The fused kernels round h = x + residual to T first; the
// oracle normalizes that same rounded h, so the rounding is not an error of out, and h itself
// is one correctly rounded add.
static TestSetup rms_norm_setup(DType dt, bool residual, const RowLaunch& l, uint32_t rows, std::vector<double> x,
                                double eps, double amplitude = 2.0) {
  const uint32_t d = l.dv * l.vec;
  TestSetup t(dt);
  t.in("x", std::move(x));
  if (residual) t.in("residual", fixture::uniform(size_t(rows) * d, -amplitude, amplitude, 35));
  t.in("w", fixture::uniform(d, 0.5, 1.5, 32));
  if (residual) t.out("h", size_t(rows) * d);
  t.out("out", size_t(rows) * d)
      .constexprs({{"rows", rows}, {"dv", l.dv}, {"eps", eps}})
      .grid(l.grid, l.threadgroup)
      .accumulation(2 * rows::row_sum_rounding(l.split, l.dv, l.vec, l.threadgroup.x) + 4)
      .math_ops(1)
      .oracle([dt, residual, rows, d, eps](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        if (!residual) return rows::rms_norm_oracle(x, in.at("w"), rows, d, eps, out.at("out"));
        // h = x + residual rounded to T is an output, and the norm's input.
        std::vector<double>& h = out.at("h");
        for (size_t i = 0; i < size_t(rows) * d; ++i) h[i] = fixture::round_to(dt, x[i] + in.at("residual")[i]);
        rows::rms_norm_oracle(h, in.at("w"), rows, d, eps, out.at("out"));
      });
  return t;
}
static TestSetup rms_norm_case(DType dt, const char* family, rows::Split split, uint32_t vec, uint32_t rows, uint32_t d,
                               uint32_t tg, double amplitude = 2.0, double eps = 1e-6) {
  const bool residual = std::string(family) == "iron_residual_rms_norm";
  RowLaunch l = rows::row_launch(family, split, vec, rows, d, tg, 64);
  return rms_norm_setup(dt, residual, l, rows, fixture::uniform(size_t(rows) * d, -amplitude, amplitude, 31), eps,
                        amplitude);
}
constexpr auto kWarp = rows::Split::Warp;
constexpr auto kBlock = rows::Split::Block;

// Block rows. 7 x 4095 (VEC 1) on 64 threads: 1024 elements in registers, the rest of each row
// in the strided loop; 7 x 4096 (VEC 8) on 64 threads: 256 of 512 chunks held, the rest looped;
// 13 x 1000 (VEC 8, 125 chunks) on 128 threads: three threads idle, all held.
IRON_TEST_KERNEL(iron_rms_norm_block_x1, rows7_d4095, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_rms_norm", kBlock, 1, 7, 4095, 64); }
IRON_TEST_KERNEL(iron_rms_norm_block_x8, rows7_d4096, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_rms_norm", kBlock, 8, 7, 4096, 64); }
IRON_TEST_KERNEL(iron_rms_norm_block_x8, rows13_d1000, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_rms_norm", kBlock, 8, 13, 1000, 128); }
// Rows of tiny values (mean square ~3e-7) with eps = 1e-6: eps dominates the scale.
IRON_TEST_KERNEL(iron_rms_norm_block_x8, rows5_d512_tiny, {f32}, {f16}, {bf16}) {
  return rms_norm_case(dt, "iron_rms_norm", kBlock, 8, 5, 512, 64, 1e-3, 1e-6);
}
// Warp rows: 7 x 1000 (VEC 8), 9 x 999 (VEC 1: past the 16 registers a lane holds at lane width 32 or
// less, so the loop runs), 3 x 8 (one chunk: a single lane works), on threadgroups of 128
// (2 rows each at lane width 64; at 32 or 8 lanes the last threadgroups have idle lane groups).
IRON_TEST_KERNEL(iron_rms_norm_warp_x8, rows7_d1000, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_rms_norm", kWarp, 8, 7, 1000, 128); }
IRON_TEST_KERNEL(iron_rms_norm_warp_x1, rows9_d999, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_rms_norm", kWarp, 1, 9, 999, 128); }
// 3 x 2056 (257 chunks): past the registers of 64 lanes, so the loop runs at every lane width.
IRON_TEST_KERNEL(iron_rms_norm_warp_x8, rows3_d2056, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_rms_norm", kWarp, 8, 3, 2056, 64); }
// A grid of more threadgroups than rows: the extra threadgroup must not touch memory. 256
// threads: more lane groups than lanes at lane width 8, so group_sum's partials loop takes two
// steps there.
static TestSetup rms_norm_past_rows(DType dt, const char* family, uint32_t vec) {
  TestSetup t = rms_norm_case(dt, family, kBlock, vec, 3, 1000, 256);
  return t.grid({t.grid_size().x + 1, 1, 1}, t.threadgroup());
}
IRON_TEST_KERNEL(iron_rms_norm_block_x8, rows3_d1000_grid4, {f32}) { return rms_norm_past_rows(dt, "iron_rms_norm", 8); }
IRON_TEST_KERNEL(iron_rms_norm_block_x1, rows3_d1000_grid4, {f32}) { return rms_norm_past_rows(dt, "iron_rms_norm", 1); }
IRON_TEST_KERNEL(iron_residual_rms_norm_block_x8, rows3_d1000_grid4, {f32}) { return rms_norm_past_rows(dt, "iron_residual_rms_norm", 8); }
IRON_TEST_KERNEL(iron_residual_rms_norm_block_x1, rows3_d1000_grid4, {f32}) { return rms_norm_past_rows(dt, "iron_residual_rms_norm", 1); }
// Short rows that a lane group holds in registers at lane widths 8 and 32.
IRON_TEST_KERNEL(iron_residual_rms_norm_warp_x8, rows5_d96, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_residual_rms_norm", kWarp, 8, 5, 96, 64); }
IRON_TEST_KERNEL(iron_residual_rms_norm_warp_x1, rows5_d100, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_residual_rms_norm", kWarp, 1, 5, 100, 64); }
IRON_TEST_KERNEL(iron_residual_rms_norm_warp_x8, rows3_d2056, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_residual_rms_norm", kWarp, 8, 3, 2056, 64); }
IRON_TEST_KERNEL(iron_rms_norm_warp_x8, rows3_d8, {f32}, {bf16}) { return rms_norm_case(dt, "iron_rms_norm", kWarp, 8, 3, 8, 128); }
IRON_TEST_KERNEL(iron_rms_norm_warp_x1, rows5_d64_tiny, {f32}, {f16}, {bf16}) {
  return rms_norm_case(dt, "iron_rms_norm", kWarp, 1, 5, 64, 64, 1e-3, 1e-6);
}
// Extreme rows (as iron_rmsnorm/rows5_d1000_extreme): huge magnitudes, squares in the f32
// subnormals, zeros, ties, and magnitudes over the dtype's range, on a block and a warp kernel.
static TestSetup rms_norm_extreme(DType dt, rows::Split split, uint32_t vec, uint32_t tg) {
  const uint32_t rows = 5, d = 1000;
  const bool half = dt == DType::F16;
  std::vector<double> x = fixture::uniform(size_t(rows) * d, -1.0, 1.0, 33);
  for (uint32_t j = 0; j < d; ++j) {
    x[j] *= half ? 6e4 : 1e17;
    x[d + j] *= half ? 1e-7 : 1e-20;
    x[2 * d + j] = 0.0;
    x[3 * d + j] = -3.0;
  }
  auto mixed = fixture::magnitudes(d, half ? -12 : -50, half ? 12 : 50, 34);
  std::copy(mixed.begin(), mixed.end(), x.begin() + 4 * d);
  RowLaunch l = rows::row_launch("iron_rms_norm", split, vec, rows, d, tg, 64);
  return rms_norm_setup(dt, false, l, rows, std::move(x), 1e-6).error_floor(half ? 0x1p-24 : 0x1p-100);
}
IRON_TEST_KERNEL(iron_rms_norm_block_x8, rows5_d1000_extreme, {f32}, {f16}, {bf16}) { return rms_norm_extreme(dt, kBlock, 8, 128); }
IRON_TEST_KERNEL(iron_rms_norm_warp_x8, rows5_d1000_extreme, {f32}, {f16}, {bf16}) { return rms_norm_extreme(dt, kWarp, 8, 64); }

// The fused kernels: both outputs, the same shapes.
IRON_TEST_KERNEL(iron_residual_rms_norm_block_x1, rows7_d4095, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_residual_rms_norm", kBlock, 1, 7, 4095, 64); }
IRON_TEST_KERNEL(iron_residual_rms_norm_block_x8, rows7_d4096, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_residual_rms_norm", kBlock, 8, 7, 4096, 64); }
IRON_TEST_KERNEL(iron_residual_rms_norm_block_x8, rows5_d512_tiny, {f32}, {f16}, {bf16}) {
  return rms_norm_case(dt, "iron_residual_rms_norm", kBlock, 8, 5, 512, 64, 1e-3, 1e-6);
}
IRON_TEST_KERNEL(iron_residual_rms_norm_warp_x8, rows7_d1000, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_residual_rms_norm", kWarp, 8, 7, 1000, 128); }
IRON_TEST_KERNEL(iron_residual_rms_norm_warp_x1, rows9_d999, {f32}, {f16}, {bf16}) { return rms_norm_case(dt, "iron_residual_rms_norm", kWarp, 1, 9, 999, 128); }

}  // namespace iron::kernels

namespace iron::kernels {
// Selectors: the logical call {rows, d, eps}. VEC 8 when d % 8 == 0; a lane group per row while
// the row fits its registers (32 elements a lane), else a threadgroup just large enough to hold
// the row in registers (4 times that for fewer than 128 rows), up to the device's limit
// (rows::pick_row_launch).
static LaunchPlan rms_norm_for(const Call& call, const DeviceInfo& dev) { return rows::row_family_plan("iron_rms_norm", call, dev, true); }
IRON_SELECTOR(iron_rms_norm, rms_norm_for);
static LaunchPlan add_rms_norm_for(const Call& call, const DeviceInfo& dev) {
  return rows::row_family_plan("iron_residual_rms_norm", call, dev, true);
}
IRON_SELECTOR(iron_residual_rms_norm, add_rms_norm_for);

// Family cases: the logical call, whatever kernel and geometry the selector picks on the device.
// Tolerance (derived): as the direct cases, for the most roundings any plan of the selector can
// have (rows::call_sum_rounding).
static TestSetup rms_norm_call(DType dt, const char* family, uint32_t rows, uint32_t d, double amplitude = 2.0) {
  const bool residual = std::string(family) == "iron_residual_rms_norm";
  RowLaunch l = rows::row_launch(family, rows::Split::Block, 1, rows, d, 64, 64);
  TestSetup t = rms_norm_setup(dt, residual, l, rows, fixture::uniform(size_t(rows) * d, -amplitude, amplitude, 31), 1e-6,
                               amplitude);
  TestSetup c(dt);
  for (const auto& [name, values] : t.inputs()) c.in(name, values);
  for (const auto& [name, count] : t.outputs()) c.out(name, count);
  return c.call({{"rows", rows}, {"d", d}, {"eps", 1e-6}})
      .accumulation(2 * rows::call_sum_rounding(d) + 4)
      .math_ops(1)
      .oracle(t.oracle_fn());
}
// 7 x 4095 (VEC 1, a threadgroup a row), 7 x 4096 (VEC 8), 13 x 1000 and 3 x 40 (a lane group a
// row), 1 x 4096 (decode: one row on a large threadgroup).
IRON_TEST_KERNEL(iron_rms_norm, call_rows7_d4095, {f32}, {f16}, {bf16}) { return rms_norm_call(dt, "iron_rms_norm", 7, 4095); }
IRON_TEST_KERNEL(iron_rms_norm, call_rows7_d4096, {f32}, {f16}, {bf16}) { return rms_norm_call(dt, "iron_rms_norm", 7, 4096); }
IRON_TEST_KERNEL(iron_rms_norm, call_rows13_d1000, {f32}, {f16}, {bf16}) { return rms_norm_call(dt, "iron_rms_norm", 13, 1000); }
IRON_TEST_KERNEL(iron_rms_norm, call_rows3_d40, {f32}, {f16}, {bf16}) { return rms_norm_call(dt, "iron_rms_norm", 3, 40); }
IRON_TEST_KERNEL(iron_rms_norm, call_rows1_d4096, {f32}, {bf16}) { return rms_norm_call(dt, "iron_rms_norm", 1, 4096); }
IRON_TEST_KERNEL(iron_residual_rms_norm, call_rows7_d4095, {f32}, {f16}, {bf16}) { return rms_norm_call(dt, "iron_residual_rms_norm", 7, 4095); }
IRON_TEST_KERNEL(iron_residual_rms_norm, call_rows7_d4096, {f32}, {f16}, {bf16}) { return rms_norm_call(dt, "iron_residual_rms_norm", 7, 4096); }
IRON_TEST_KERNEL(iron_residual_rms_norm, call_rows13_d1000, {f32}, {f16}, {bf16}) { return rms_norm_call(dt, "iron_residual_rms_norm", 13, 1000); }

// Benchmarks at the shapes (bf16 is the target; f32 and f16 run too), through the
// selector: decode (1 and 32 rows of 4096), prefill (4096 and 32768 rows of 4096) and a wide
// model (16384 x 8192). Bytes: x read once and out written once, w once (the fused kernels: x
// and residual read, h and out written).
static BenchSetup rms_norm_bench(DType dt, const char* family, uint32_t rows, uint32_t d) {
  const bool residual = std::string(family) == "iron_residual_rms_norm";
  RowLaunch l = rows::row_launch(family, rows::Split::Block, 1, rows, d, 64, 64);
  TestSetup t = rms_norm_setup(dt, residual, l, rows, fixture::uniform(size_t(rows) * d, -2.0, 2.0, 31), 1e-6);
  BenchSetup b(dt);
  for (const auto& [name, values] : t.inputs()) b.in(name, values);
  for (const auto& [name, count] : t.outputs()) b.out(name, count);
  b.call({{"rows", rows}, {"d", d}, {"eps", 1e-6}}).oracle(t.oracle_fn());
  const double streams = residual ? 4 : 2;
  return b.bytes((streams * rows * d + d) * dtype_size(dt)).flops(4.0 * rows * d).sweep(std::string(family) + "_d" + std::to_string(d), rows);
}
#define IRON_RMS_BENCH(family, R, D)                                                             \
  IRON_BENCH(family, rows##R##_d##D, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) {                   \
    return rms_norm_bench(dt, #family, R, D);                                                    \
  }
IRON_RMS_BENCH(iron_rms_norm, 1, 4096)
IRON_RMS_BENCH(iron_rms_norm, 32, 4096)
IRON_RMS_BENCH(iron_rms_norm, 4096, 4096)
IRON_RMS_BENCH(iron_rms_norm, 32768, 4096)
IRON_RMS_BENCH(iron_rms_norm, 16384, 8192)
IRON_RMS_BENCH(iron_residual_rms_norm, 1, 4096)
IRON_RMS_BENCH(iron_residual_rms_norm, 4096, 4096)
IRON_RMS_BENCH(iron_residual_rms_norm, 32768, 4096)
#undef IRON_RMS_BENCH
}  // namespace iron::kernels
