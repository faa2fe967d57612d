// Matrix-vector product y = A x for A of shape [m, k] (row-major), x of k and y of m elements,
// one output row per lane group ("warp rows", seeds §3.1): at a small k a threadgroup per row
// leaves most threads idle, while a lane group per row keeps every lane busy and lets one
// threadgroup cover several rows. Mode SimdGroup2D. Each lane accumulates a strided slice of the
// row in f32 (elements lane, lane + width, ...), lane_sum combines the slices and lane 0 stores.
// The lane groups of the whole grid walk the rows with a grid stride, so every grid and every
// lane width covers all m rows; rows are uniform within a lane group, so the lane reduction
// always sees a whole group. Fixed-order reductions: bit-exact run to run on one device.
// Dispatch: grid = {g, 1, 1}, threadgroup = {multiple of the lane width, 1, 1}; with
// threadgroup 256 and g = ceil(m / 8), every lane group of a 32-lane device has one row.
#include <iron/iron.hpp>

#include "dot_chunks.hpp"

namespace iron::kernels {
using namespace iron::dsl;

static void gemv() {
  Expr m = constexpr_("m", u32);
  Expr k = constexpr_("k", u32);
  Buffer a = input("a", T, {m, k});
  Buffer x = input("x", T, {k});
  Buffer y = output("y", T, {m});

  Expr groups = num_simd_groups();
  Expr first_row = program_id(0) * groups + simd_group_id();
  Expr row_stride = num_programs(0) * groups;
  Expr lane = lane_id();
  for_(first_row, m, row_stride, [&](Expr row) {
    Expr base = row * k;
    Var<f32> acc = 0.0f;
    for_(lane, k, lane_width(), [&](Expr j) { acc += cast<f32>(a[base + j]) * cast<f32>(x[j]); });
    Expr total = lane_sum(acc);
    if_(lane == 0u, [&] { y[row] = cast<T>(total); });
  });
}
IRON_KERNEL(iron_gemv_warp_rows, gemv, SimdGroup2D, f32, f16, bf16);

// Tolerance (derived): each lane's serial sum of ceil(k / width) products (a multiply and an
// add each, or one fma) and the lane butterfly's log2(width) levels, counted for the narrowest
// lane group Iron runs (4 lanes). Mixed-sign inputs cancel, so the error is measured against
// the size of the terms: a floor of k / 4 (the expected sum of |a x| for uniform [-1, 1]).
static TestSetup gemv_setup(DType dt, uint32_t m, uint32_t k, uint32_t groups, uint32_t tg, std::vector<double> a,
                            std::vector<double> x, double floor) {
  return TestSetup(dt)
      .in("a", std::move(a))
      .in("x", std::move(x))
      .out("y", m)
      .constexprs({{"m", m}, {"k", k}})
      .grid({groups, 1, 1}, {tg, 1, 1})
      .accumulation(2.0 * ((k + 3) / 4) + 6)
      .error_floor(floor)
      .oracle([m, k](const Tensors& in, Tensors& out) {
        const auto& a = in.at("a");
        const auto& x = in.at("x");
        auto& y = out.at("y");
        for (uint32_t r = 0; r < m; ++r) {
          double s = 0;
          for (uint32_t j = 0; j < k; ++j) s += a[size_t(r) * k + j] * x[j];
          y[r] = s;
        }
      });
}
static TestSetup gemv_case(DType dt, uint32_t m, uint32_t k, uint32_t groups, uint32_t tg) {
  return gemv_setup(dt, m, k, groups, tg, fixture::uniform(size_t(m) * k, -1.0, 1.0, 71),
                    fixture::uniform(k, -1.0, 1.0, 72), std::max(1.0, k / 4.0));
}

// 13 rows of k = 1000 on 2 threadgroups of 128: at lane width 32 that is 8 lane groups, so the
// grid stride runs a second row for 5 of them; k is not a multiple of any lane width.
IRON_TEST_KERNEL(iron_gemv_warp_rows, m13_k1000, {f32}, {f16}, {bf16}) { return gemv_case(dt, 13, 1000, 2, 128); }
// k = 37 (fewer elements than a 64-wide lane group has lanes for twice), 29 rows on one
// threadgroup of 32 threads (one lane group at width 32: it walks all 29 rows).
IRON_TEST_KERNEL(iron_gemv_warp_rows, m29_k37_one_group, {f32}, {f16}, {bf16}) { return gemv_case(dt, 29, 37, 1, 32); }
// More lane groups than rows (3 rows, 4 x 256 threads): most lane groups have no row at all.
IRON_TEST_KERNEL(iron_gemv_warp_rows, m3_k300_idle_groups, {f32}, {f16}, {bf16}) { return gemv_case(dt, 3, 300, 4, 256); }
// k = 1: each row is one product (a single lane works, the butterfly adds zeros).
IRON_TEST_KERNEL(iron_gemv_warp_rows, m40_k1, {f32}, {f16}, {bf16}) { return gemv_case(dt, 40, 1, 3, 64); }
// Positive inputs (no cancellation), each output measured in ulps of its own magnitude: a store
// that rounds toward zero shows at 16 bits.
IRON_TEST_KERNEL(iron_gemv_warp_rows, m21_k64_positive, {f32}, {f16}, {bf16}) {
  return gemv_setup(dt, 21, 64, 2, 64, fixture::uniform(21 * 64, 0.25, 1.0, 73), fixture::uniform(64, 0.25, 1.0, 74),
                    0x1p-14);
}

// The same kernel reading VEC adjacent elements per lane and step, a variant family:
//   iron_gemv_warp_rows_x4, iron_gemv_warp_rows_x8
// Lane l of a row's lane group takes the whole chunks of VEC elements l, l + width, ...; when k
// is a multiple of VEC each chunk is one 16-byte load of A (VEC 8 at 16 bits; VEC 4 for f32) and
// of x (dot_chunks.hpp); lane 0 adds the k % VEC tail elements. Rows, grid stride, lane_sum and
// determinism as iron_gemv_warp_rows; the summation order depends on VEC. Dispatch as
// iron_gemv_warp_rows.
static void gemv_warp_rows_vec(const KernelVariant& v) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr m = constexpr_("m", u32);
  Expr k = constexpr_("k", u32);
  Buffer a = input("a", T, {m, k});
  Buffer x = input("x", T, {k});
  Buffer y = output("y", T, {m});

  Expr groups = num_simd_groups();
  Expr first_row = program_id(0) * groups + simd_group_id();
  Expr row_stride = num_programs(0) * groups;
  Expr lane = lane_id();
  for_(first_row, m, row_stride, [&](Expr row) {
    Var<f32> acc = 0.0f;
    dot_chunks(a, x, row, k, vec, lane, k / vec, lane_width(), acc);
    if_(lane == 0u, [&] { add_tail(a, x, row, k, vec, acc); });
    Expr total = lane_sum(acc);
    if_(lane == 0u, [&] { y[row] = cast<T>(total); });
  });
}
IRON_KERNEL_VARIANTS(iron_gemv_warp_rows, gemv_warp_rows_vec, SimdGroup2D, (f32, f16, bf16), "x{VEC}",
                     ::iron::int_axis("VEC", {4, 8}));

// Tolerance (derived) as gemv_case, with each lane's serial sum up to ceil(k / (4 VEC)) chunks of
// VEC products plus the VEC - 1 tail products on lane 0.
static double warp_vec_roundings(uint32_t k, uint32_t vec) { return 2.0 * (((k / vec + 3) / 4) * vec + vec) + 6; }
static TestSetup gemv_vec_case(DType dt, uint32_t vec, uint32_t m, uint32_t k, uint32_t groups, uint32_t tg) {
  return gemv_case(dt, m, k, groups, tg).accumulation(warp_vec_roundings(k, vec));
}
// k = 1000 (a multiple of 8: the aligned path) and 1003 (a tail of 3: the element path) over a
// grid stride; k = 37 on one lane group walking 29 rows; k = 6 (fewer than one chunk of 8) and
// 2; positive inputs measured in ulps of each output.
IRON_TEST_KERNEL(iron_gemv_warp_rows_x4, m13_k1000, {f32}, {f16}, {bf16}) { return gemv_vec_case(dt, 4, 13, 1000, 2, 128); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x8, m13_k1000, {f32}, {f16}, {bf16}) { return gemv_vec_case(dt, 8, 13, 1000, 2, 128); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x4, m13_k1003, {f32}, {f16}, {bf16}) { return gemv_vec_case(dt, 4, 13, 1003, 2, 128); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x8, m13_k1003, {f32}, {f16}, {bf16}) { return gemv_vec_case(dt, 8, 13, 1003, 2, 128); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x4, m29_k37_one_group, {f32}, {bf16}) { return gemv_vec_case(dt, 4, 29, 37, 1, 32); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x8, m29_k37_one_group, {f32}, {bf16}) { return gemv_vec_case(dt, 8, 29, 37, 1, 32); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x4, m7_k6_idle_groups, {f32}, {bf16}) { return gemv_vec_case(dt, 4, 7, 6, 4, 64); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x8, m7_k6_idle_groups, {f32}, {bf16}) { return gemv_vec_case(dt, 8, 7, 6, 4, 64); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x8, m5_k2, {f32}, {bf16}) { return gemv_vec_case(dt, 8, 5, 2, 1, 32); }
IRON_TEST_KERNEL(iron_gemv_warp_rows_x4, m21_k64_positive, {f32}, {f16}, {bf16}) {
  return gemv_setup(dt, 21, 64, 2, 64, fixture::uniform(21 * 64, 0.25, 1.0, 73), fixture::uniform(64, 0.25, 1.0, 74),
                    0x1p-14).accumulation(warp_vec_roundings(64, 4));
}
IRON_TEST_KERNEL(iron_gemv_warp_rows_x8, m21_k64_positive, {f32}, {f16}, {bf16}) {
  return gemv_setup(dt, 21, 64, 2, 64, fixture::uniform(21 * 64, 0.25, 1.0, 73), fixture::uniform(64, 0.25, 1.0, 74),
                    0x1p-14).accumulation(warp_vec_roundings(64, 8));
}

}  // namespace iron::kernels

// Benchmarks: the small-k, large-m down-projection of seeds §3.1 ([10240, 320]) and a decode
// projection of a 4096-wide model ([4096, 4096]). Memory bound: A once, x and y; 2 m k FLOPs.
namespace iron::kernels {
static BenchSetup gemv_bench(DType dt, uint32_t m, uint32_t k) {
  TestSetup t = gemv_case(dt, m, k, (m + 7) / 8, 256);
  BenchSetup b(dt);
  b.in("a", t.inputs().at("a")).in("x", t.inputs().at("x")).out("y", m).constexprs(t.scalars());
  b.grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes((double(m) * k + k + m) * dtype_size(dt)).flops(2.0 * m * k).sweep("iron_gemv_warp_rows_k" + std::to_string(k), m);
}
IRON_BENCH(iron_gemv_warp_rows, m10240_k320, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_bench(dt, 10240, 320); }
IRON_BENCH(iron_gemv_warp_rows, m4096_k4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_bench(dt, 4096, 4096); }
// The decode shapes (M = 1: y[N] = W[N, K] x): N = 14336, K = 4096 (up-projection),
// N = 4096, K = 14336 (down-projection), and the small-K [10240, 320] again, 16-byte loads.
static BenchSetup gemv_vec_bench(DType dt, uint32_t vec, uint32_t m, uint32_t k) {
  BenchSetup b = gemv_bench(dt, m, k);
  return b.sweep("iron_gemv_warp_rows_x" + std::to_string(vec) + "_k" + std::to_string(k), m);
}
IRON_BENCH(iron_gemv_warp_rows_x8, m10240_k320, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_vec_bench(dt, 8, 10240, 320); }
IRON_BENCH(iron_gemv_warp_rows_x8, m14336_k4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_vec_bench(dt, 8, 14336, 4096); }
IRON_BENCH(iron_gemv_warp_rows_x8, m4096_k14336, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_vec_bench(dt, 8, 4096, 14336); }
IRON_BENCH(iron_gemv_warp_rows_x4, m10240_k320, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_vec_bench(dt, 4, 10240, 320); }
}  // namespace iron::kernels
