// RMSNorm over the last dimension: out[r, j] = x[r, j] * w[j] / sqrt(mean_j(x[r, j]^2) + eps).
// One threadgroup per row; threads stride the row, accumulate in f32, and reduce with a
// fixed tree (group_sum), so the result is bit-exact run to run on one device (no atomics).
// Dispatch: grid = {rows, 1, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width.
#include <cmath>

#include <iron/iron.hpp>

#include "rows.hpp"

namespace iron::kernels {
using namespace iron::dsl;

static void rmsnorm() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Expr eps = constexpr_("eps", f32);
  Buffer x = input("x", T, {rows, d});
  Buffer w = input("w", T, {d});
  Buffer out = output("out", T, {rows, d});

  Expr row = program_id(0);
  Expr base = row * d;  // bound once, so every access shares one address base
  Var<f32> sumsq = 0.0f;
  for_(local_id(0), d, group_size(0), [&](Expr j) {
    Expr v = cast<f32>(x[base + j]);
    sumsq += v * v;
  });
  Expr scale = rsqrt(group_sum(sumsq) / cast<f32>(d) + eps);
  for_(local_id(0), d, group_size(0), [&](Expr j) {
    out[base + j] = cast<T>(cast<f32>(x[base + j]) * scale * cast<f32>(w[j]));
  });
}
IRON_KERNEL(iron_rmsnorm, rmsnorm, Reduction, f32, f16, bf16);

// Tolerance (derived): per element, a square and an add per term of the thread's strided sum
// and the group_sum tree; then the mean, eps, rsqrt and two multiplies. rsqrt halves the sum's
// relative error, so counting it whole is conservative.
static TestSetup rmsnorm_setup(DType dt, uint32_t rows, uint32_t d, uint32_t tg, std::vector<double> x, double eps) {
  return TestSetup(dt)
      .in("x", std::move(x))
      .in("w", fixture::uniform(d, 0.5, 1.5, 32))
      .out("out", size_t(rows) * d)
      .constexprs({{"rows", rows}, {"d", d}, {"eps", eps}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .accumulation(2 * group_sum_rounding(d, tg) + 4)
      .math_ops(1)
      .oracle([rows, d, eps](const Tensors& in, Tensors& out) {
        rows::rms_norm_oracle(in.at("x"), in.at("w"), rows, d, eps, out.at("out"));
      });
}
static TestSetup rmsnorm_case(DType dt, uint32_t rows, uint32_t d, uint32_t tg, double amplitude = 2.0,
                              double eps = 1e-6) {
  return rmsnorm_setup(dt, rows, d, tg, fixture::uniform(size_t(rows) * d, -amplitude, amplitude, 31), eps);
}

// 7 rows and d = 4096 / 1000: a row count that is not a power of two and a width that is not a
// multiple of the threadgroup size.
IRON_TEST_KERNEL(iron_rmsnorm, rows7_d4096, {f32}, {f16}, {bf16}) { return rmsnorm_case(dt, 7, 4096, 256); }
IRON_TEST_KERNEL(iron_rmsnorm, rows13_d1000, {f32}, {f16}, {bf16}) { return rmsnorm_case(dt, 13, 1000, 128); }
// Rows of tiny values (mean square ~3e-7) with eps = 1e-6: eps dominates the scale, so a kernel
// that drops or misplaces it fails. Outputs stay O(1) and f16 holds the 1e-3 inputs exactly enough.
IRON_TEST_KERNEL(iron_rmsnorm, rows5_d512_tiny, {f32}, {f16}, {bf16}) { return rmsnorm_case(dt, 5, 512, 64, 1e-3, 1e-6); }
// Extreme rows: huge magnitudes (the sum of squares stays finite in f32), tiny ones whose squares
// are f32 subnormals (eps dominates), an all-zero row, a row of exact ties, and a row mixing
// magnitudes over the dtype's whole range. Relative error is measured down to 2^-100.
IRON_TEST_KERNEL(iron_rmsnorm, rows5_d1000_extreme, {f32}, {f16}, {bf16}) {
  const uint32_t rows = 5, d = 1000;
  const bool half = dt == DType::F16;
  std::vector<double> x = fixture::uniform(size_t(rows) * d, -1.0, 1.0, 33);
  for (uint32_t j = 0; j < d; ++j) {
    x[j] *= half ? 6e4 : 1e17;            // huge
    x[d + j] *= half ? 1e-7 : 1e-20;      // tiny
    x[2 * d + j] = 0.0;                   // zeros
    x[3 * d + j] = -3.0;                  // ties
  }
  auto mixed = fixture::magnitudes(d, half ? -12 : -50, half ? 12 : 50, 34);
  std::copy(mixed.begin(), mixed.end(), x.begin() + 4 * d);
  return rmsnorm_setup(dt, rows, d, 128, std::move(x), 1e-6).error_floor(half ? 0x1p-24 : 0x1p-100);
}


// The same RMSNorm with the row staged in threadgroup memory: each x element is read from device
// memory once (iron_rmsnorm reads it twice). The staging array holds the row in T at its real
// width (2 bytes an element for f16 and bf16), 16-byte aligned, and is sized at dispatch by d:
// a dispatch needs d * sizeof(T) bytes plus group_sum's 1 KiB, so a row of 16384 f32 (65 KiB)
// needs the opt-in threadgroup memory of a CUDA device (227 KiB on the H200) and is skipped on
// lavapipe (32 KiB). Same rounding as iron_rmsnorm: staging a T value in T is exact.
// Dispatch: grid = {rows, 1, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width.
static void rmsnorm_staged() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Expr eps = constexpr_("eps", f32);
  Buffer x = input("x", T, {rows, d});
  Buffer w = input("w", T, {d});
  Buffer out = output("out", T, {rows, d});
  TgBuffer row = threadgroup_alloc_dynamic("row", T, d, 1, 16);

  Expr base = program_id(0) * d;
  Var<f32> sumsq = 0.0f;
  for_(local_id(0), d, group_size(0), [&](Expr j) {
    row[j] = x[base + j];
    Expr v = cast<f32>(row[j]);  // the thread's own element: no barrier needed yet
    sumsq += v * v;
  });
  Expr scale = rsqrt(group_sum(sumsq) / cast<f32>(d) + eps);  // ends with a barrier
  for_(local_id(0), d, group_size(0), [&](Expr j) {
    out[base + j] = cast<T>(cast<f32>(row[j]) * scale * cast<f32>(w[j]));
  });
}
IRON_KERNEL(iron_rmsnorm_staged, rmsnorm_staged, Reduction, f32, f16, bf16);

IRON_TEST_KERNEL(iron_rmsnorm_staged, rows7_d4096, {f32}, {f16}, {bf16}) { return rmsnorm_case(dt, 7, 4096, 256); }
IRON_TEST_KERNEL(iron_rmsnorm_staged, rows13_d1000, {f32}, {f16}, {bf16}) { return rmsnorm_case(dt, 13, 1000, 128); }
IRON_TEST_KERNEL(iron_rmsnorm_staged, rows5_d512_tiny, {f32}, {f16}, {bf16}) {
  return rmsnorm_case(dt, 5, 512, 64, 1e-3, 1e-6);
}
// 65 KiB (f32) and 33 KiB (f16, bf16) of threadgroup memory: beyond CUDA's 48 KiB static limit
// for f32 (dynamic shared memory with the opt-in attribute), beyond lavapipe's 32 KiB for all.
IRON_TEST_KERNEL(iron_rmsnorm_staged, rows3_d16384_big, {f32}, {f16}, {bf16}) {
  return rmsnorm_case(dt, 3, 16384, 256);
}

}  // namespace iron::kernels

// Benchmarks: decode (1 row) and prefill (4096 rows) at hidden 4096, and a wide 8192 model.
// Moves x once in, out once, w once; about 4 FLOPs per element.
namespace iron::kernels {
static BenchSetup rmsnorm_bench(DType dt, uint32_t rows, uint32_t d) {
  TestSetup t = rmsnorm_case(dt, rows, d, 256);
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).in("w", t.inputs().at("w")).out("out", size_t(rows) * d);
  b.constexprs(t.scalars()).grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn());
  return b.bytes((2.0 * rows * d + d) * dtype_size(dt)).flops(4.0 * rows * d).sweep("iron_rmsnorm_d" + std::to_string(d), rows);
}
IRON_BENCH(iron_rmsnorm, rows1_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rmsnorm_bench(dt, 1, 4096); }
IRON_BENCH(iron_rmsnorm, rows4096_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rmsnorm_bench(dt, 4096, 4096); }
IRON_BENCH(iron_rmsnorm, rows4096_d8192, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rmsnorm_bench(dt, 4096, 8192); }
// The staged variant reads x once (the bytes figure counts that), and at d = 16384 needs 65 KiB
// of threadgroup memory in f32: the opt-in path on CUDA.
static BenchSetup rmsnorm_staged_bench(DType dt, uint32_t rows, uint32_t d) {
  BenchSetup b = rmsnorm_bench(dt, rows, d);
  return b.sweep("iron_rmsnorm_staged_d" + std::to_string(d), rows);
}
IRON_BENCH(iron_rmsnorm_staged, rows4096_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) {
  return rmsnorm_staged_bench(dt, 4096, 4096);
}
IRON_BENCH(iron_rmsnorm_staged, rows1024_d16384, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) {
  return rmsnorm_staged_bench(dt, 1024, 16384);
}
}  // namespace iron::kernels
