// Matrix-vector product y = A x for A of shape [m, k] (row-major), x of k and y of m elements,
// one threadgroup per output row: the large-k counterpart of iron_gemv_warp_rows (seeds §3.1).
// A variant family over VEC, the elements a thread reads side by side per step: VEC is a plain
// C++ value while the body is traced, so the inner loop is VEC copies of one statement at
// j, j + 1, ... with j a multiple of VEC, where the vectorize pass can form wide accesses.
//   iron_gemv_rows_x1, iron_gemv_rows_x4, iron_gemv_rows_x8
// Each thread accumulates in f32 the whole chunks of VEC elements local_id, local_id +
// group_size, ...; thread 0 adds the k % VEC tail elements; group_sum combines the threads and
// thread 0 stores. When k is a multiple of VEC, every chunk of A starts at a provably aligned
// element, so VEC 8 reads A and x with 16-byte loads (one per chunk at 16 bits, two float4s
// for f32); any other k takes an element-by-element loop over the same chunks (dot_chunks.hpp).
// Fixed-order reductions: bit-exact run to run on one device; the summation order depends on
// VEC, so the variants may differ in the last bits.
// Dispatch: grid = {m, 1, 1} (threadgroup r computes row r), threadgroup = {multiple of the lane
// width, 1, 1}.
#include <algorithm>

#include <iron/iron.hpp>

#include "dot_chunks.hpp"

namespace iron::kernels {
using namespace iron::dsl;

static void gemv_rows(const KernelVariant& v) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr m = constexpr_("m", u32);
  Expr k = constexpr_("k", u32);
  Buffer a = input("a", T, {m, k});
  Buffer x = input("x", T, {k});
  Buffer y = output("y", T, {m});

  Expr row = program_id(0);
  Var<f32> acc = 0.0f;
  dot_chunks(a, x, row, k, vec, local_id(0), k / vec, group_size(0), acc);
  // The k % VEC elements after the last whole chunk (fewer than VEC): thread 0 adds them. A
  // VEC of 1 leaves none, so its kernel has no tail code at all.
  if (vec > 1) if_(local_id(0) == 0u, [&] { add_tail(a, x, row, k, vec, acc); });
  Expr total = group_sum(acc);
  if_(local_id(0) == 0u, [&] { y[row] = cast<T>(total); });
}
IRON_KERNEL_VARIANTS(iron_gemv_rows, gemv_rows, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 4, 8}));

// Tolerance (derived): each thread's serial sum has at most ceil(k / tg) + 2 VEC products (a
// multiply and an add each), then the group_sum tree. Mixed-sign inputs cancel, so the error is
// measured against the size of the terms: a floor of k / 4 (the expected sum of |a x|).
static TestSetup gemv_rows_case(DType dt, uint32_t vec, uint32_t m, uint32_t k, uint32_t tg) {
  return TestSetup(dt)
      .in("a", fixture::uniform(size_t(m) * k, -1.0, 1.0, 81))
      .in("x", fixture::uniform(k, -1.0, 1.0, 82))
      .out("y", m)
      .constexprs({{"m", m}, {"k", k}})
      .grid({m, 1, 1}, {tg, 1, 1})
      .accumulation(2 * (group_sum_rounding(k, tg) + 2 * vec) + 1)
      .error_floor(std::max(1.0, k / 4.0))
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

// Every variant: k = 1003 (a tail of 3 for VEC 4 and VEC 8) on threadgroups of 64; k = 6, fewer
// elements than threads (VEC 8 has no whole chunk, VEC 4 one); k = 4096 on threadgroups of 256
// (no tail; more lane groups than lanes at lane width 8, so group_sum's partial loop takes two
// steps).
IRON_TEST_KERNEL(iron_gemv_rows_x1, m9_k1003, {f32}, {f16}, {bf16}) { return gemv_rows_case(dt, 1, 9, 1003, 64); }
IRON_TEST_KERNEL(iron_gemv_rows_x4, m9_k1003, {f32}, {f16}, {bf16}) { return gemv_rows_case(dt, 4, 9, 1003, 64); }
IRON_TEST_KERNEL(iron_gemv_rows_x8, m9_k1003, {f32}, {f16}, {bf16}) { return gemv_rows_case(dt, 8, 9, 1003, 64); }
IRON_TEST_KERNEL(iron_gemv_rows_x1, m5_k6, {f32}, {bf16}) { return gemv_rows_case(dt, 1, 5, 6, 32); }
IRON_TEST_KERNEL(iron_gemv_rows_x4, m5_k6, {f32}, {bf16}) { return gemv_rows_case(dt, 4, 5, 6, 32); }
IRON_TEST_KERNEL(iron_gemv_rows_x8, m5_k6, {f32}, {bf16}) { return gemv_rows_case(dt, 8, 5, 6, 32); }
IRON_TEST_KERNEL(iron_gemv_rows_x1, m3_k4096, {f32}, {f16}) { return gemv_rows_case(dt, 1, 3, 4096, 256); }
IRON_TEST_KERNEL(iron_gemv_rows_x4, m3_k4096, {f32}, {f16}) { return gemv_rows_case(dt, 4, 3, 4096, 256); }
IRON_TEST_KERNEL(iron_gemv_rows_x8, m3_k4096, {f32}, {f16}) { return gemv_rows_case(dt, 8, 3, 4096, 256); }

// Decode projection of a 4096-wide model ([4096, 4096]): A once, x and y; 2 m k FLOPs.
static BenchSetup gemv_rows_bench(DType dt, uint32_t vec, uint32_t m, uint32_t k) {
  TestSetup t = gemv_rows_case(dt, vec, m, k, 256);
  BenchSetup b(dt);
  b.in("a", t.inputs().at("a")).in("x", t.inputs().at("x")).out("y", m).constexprs(t.scalars());
  b.grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes((double(m) * k + k + m) * dtype_size(dt)).flops(2.0 * m * k);
}
IRON_BENCH(iron_gemv_rows_x1, m4096_k4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_rows_bench(dt, 1, 4096, 4096); }
IRON_BENCH(iron_gemv_rows_x8, m4096_k4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_rows_bench(dt, 8, 4096, 4096); }
// The decode shapes (M = 1: y[N] = W[N, K] x): N = 14336, K = 4096 and N = 4096, K = 14336.
IRON_BENCH(iron_gemv_rows_x8, m14336_k4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_rows_bench(dt, 8, 14336, 4096); }
IRON_BENCH(iron_gemv_rows_x8, m4096_k14336, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_rows_bench(dt, 8, 4096, 14336); }

}  // namespace iron::kernels
