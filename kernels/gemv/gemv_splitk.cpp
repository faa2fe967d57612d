// Split-K matrix-vector product y = A x (A [m, k] row-major) for few long rows: a row is split
// over `splits` threadgroups so that more of the device reads it at once, in two steps.
//   iron_gemv_splitk_x1, _x4, _x8   step 1 (mode Reduction): threadgroup (r, s) writes the f32
//       partial sum of split s of row r to partials[r * splits + s]. The row's whole chunks of VEC
//       elements are divided into splits of ceil((k / VEC) / splits) chunks, split s taking chunks
//       [s * per, min((s + 1) * per, k / VEC)) (a split past the end writes 0); split 0 also adds
//       the k % VEC tail elements. Inside a split the threads take chunks local_id, local_id +
//       group_size, ... and group_sum combines them, as in iron_gemv_rows (VEC-wide loads of A and
//       x when k is a multiple of VEC, dot_chunks.hpp).
//       Dispatch: grid = {m, splits, 1}, threadgroup = {multiple of the lane width, 1, 1}.
//   iron_gemv_splitk_combine   step 2 (mode Elementwise): y[r] = sum of partials[r * splits + s]
//       for s = 0, 1, ... in that order, rounded once to T. Dispatch: one thread per row.
// No atomics: the partials are combined in a fixed order, so the result is bit-exact run to run
// on one device; it differs from iron_gemv_rows in the last bits (another summation order).
#include <algorithm>

#include <iron/iron.hpp>

#include "dot_chunks.hpp"

namespace iron::kernels {
using namespace iron::dsl;

static void gemv_splitk(const KernelVariant& v) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr m = constexpr_("m", u32);
  Expr k = constexpr_("k", u32);
  Expr splits = constexpr_("splits", u32);
  Buffer a = input("a", T, {m, k});
  Buffer x = input("x", T, {k});
  Buffer partials = output("partials", f32, {m, splits});

  Expr row = program_id(0);
  Expr split = program_id(1);
  Expr chunks = k / vec;
  Expr per = (chunks + splits - 1u) / splits;
  Expr first = split * per;
  Var<f32> acc = 0.0f;
  dot_chunks(a, x, row, k, vec, first + local_id(0), min(first + per, chunks), group_size(0), acc);
  if (vec > 1) if_((split == 0u) && (local_id(0) == 0u), [&] { add_tail(a, x, row, k, vec, acc); });
  Expr total = group_sum(acc);
  if_(local_id(0) == 0u, [&] { partials[row * splits + split] = total; });
}
IRON_KERNEL_VARIANTS(iron_gemv_splitk, gemv_splitk, Reduction, (f32, f16, bf16), "x{VEC}",
                     ::iron::int_axis("VEC", {1, 4, 8}));

static void gemv_splitk_combine() {
  Expr m = constexpr_("m", u32);
  Expr splits = constexpr_("splits", u32);
  Buffer partials = input("partials", f32, {m, splits});
  Buffer y = output("y", T, {m});
  Expr row = thread_id(0);
  if_(row < m, [&] {
    Expr base = row * splits;
    Var<f32> sum = 0.0f;
    for_(0u, splits, 1u, [&](Expr s) { sum += partials[base + s]; });
    y[row] = cast<T>(sum);
  });
}
IRON_KERNEL(iron_gemv_splitk_combine, gemv_splitk_combine, Elementwise, f32, f16, bf16);

// The partial sums step 1 computes (the oracle of the partition the header states).
static std::vector<double> split_sums(const std::vector<double>& a, const std::vector<double>& x, uint32_t m,
                                      uint32_t k, uint32_t splits, uint32_t vec) {
  const uint32_t chunks = k / vec, per = (chunks + splits - 1) / splits;
  std::vector<double> out(size_t(m) * splits, 0.0);
  for (uint32_t r = 0; r < m; ++r)
    for (uint32_t s = 0; s < splits; ++s) {
      const uint32_t lo = std::min(s * per, chunks) * vec, hi = std::min((s + 1) * per, chunks) * vec;
      double sum = 0;
      for (uint32_t j = lo; j < hi; ++j) sum += a[size_t(r) * k + j] * x[j];
      if (s == 0)
        for (uint32_t j = chunks * vec; j < k; ++j) sum += a[size_t(r) * k + j] * x[j];
      out[size_t(r) * splits + s] = sum;
    }
  return out;
}

// Tolerance (derived): a partial is a thread's serial sum of at most ceil(per / tg) chunks of VEC
// products plus the tail (a multiply and an add each), then the group_sum tree; mixed signs
// cancel, so the error is measured against the size of a split's terms (per * VEC / 4).
static TestSetup splitk_case(DType dt, uint32_t vec, uint32_t m, uint32_t k, uint32_t splits, uint32_t tg) {
  const uint32_t per = (k / vec + splits - 1) / splits;
  return TestSetup(dt)
      .in("a", fixture::uniform(size_t(m) * k, -1.0, 1.0, 181))
      .in("x", fixture::uniform(k, -1.0, 1.0, 182))
      .out("partials", size_t(m) * splits)
      .constexprs({{"m", m}, {"k", k}, {"splits", splits}})
      .grid({m, splits, 1}, {tg, 1, 1})
      .accumulation(2 * (group_sum_rounding(uint64_t(per) * vec, tg) + 2 * vec) + 1)
      .error_floor(std::max(1.0, per * vec / 4.0))
      .oracle([=](const Tensors& in, Tensors& out) { out.at("partials") = split_sums(in.at("a"), in.at("x"), m, k, splits, vec); });
}

// k = 1003 in 4 splits (a tail of 3 for VEC 4 and 8, the element path); k = 4096 in 3 splits of
// unequal length (the aligned path); 10 chunks in 7 splits, the last two empty (they write 0);
// one split (the whole row, as iron_gemv_rows).
IRON_TEST_KERNEL(iron_gemv_splitk_x1, m5_k1003_s4, {f32}, {f16}, {bf16}) { return splitk_case(dt, 1, 5, 1003, 4, 64); }
IRON_TEST_KERNEL(iron_gemv_splitk_x4, m5_k1003_s4, {f32}, {f16}, {bf16}) { return splitk_case(dt, 4, 5, 1003, 4, 64); }
IRON_TEST_KERNEL(iron_gemv_splitk_x8, m5_k1003_s4, {f32}, {f16}, {bf16}) { return splitk_case(dt, 8, 5, 1003, 4, 64); }
IRON_TEST_KERNEL(iron_gemv_splitk_x1, m3_k4096_s3, {f32}, {bf16}) { return splitk_case(dt, 1, 3, 4096, 3, 128); }
IRON_TEST_KERNEL(iron_gemv_splitk_x4, m3_k4096_s3, {f32}, {bf16}) { return splitk_case(dt, 4, 3, 4096, 3, 128); }
IRON_TEST_KERNEL(iron_gemv_splitk_x8, m3_k4096_s3, {f32}, {bf16}) { return splitk_case(dt, 8, 3, 4096, 3, 128); }
IRON_TEST_KERNEL(iron_gemv_splitk_x1, m2_k10_s7_empty, {f32}, {bf16}) { return splitk_case(dt, 1, 2, 10, 7, 32); }
IRON_TEST_KERNEL(iron_gemv_splitk_x4, m2_k43_s7_empty, {f32}, {bf16}) { return splitk_case(dt, 4, 2, 43, 7, 32); }
IRON_TEST_KERNEL(iron_gemv_splitk_x8, m2_k85_s7_empty, {f32}, {bf16}) { return splitk_case(dt, 8, 2, 85, 7, 32); }
IRON_TEST_KERNEL(iron_gemv_splitk_x8, m4_k200_s1, {f32}, {f16}) { return splitk_case(dt, 8, 4, 200, 1, 64); }
// k = 4099 in 2 splits on 32 threads: the element path with several chunks per thread.
IRON_TEST_KERNEL(iron_gemv_splitk_x4, m2_k4099_s2, {f32}, {bf16}) { return splitk_case(dt, 4, 2, 4099, 2, 32); }
IRON_TEST_KERNEL(iron_gemv_splitk_x8, m2_k4099_s2, {f32}, {bf16}) { return splitk_case(dt, 8, 2, 4099, 2, 32); }

// Step 2 on its own: random partials, a serial f32 sum of `splits` terms rounded once to T.
static TestSetup combine_case(DType dt, uint32_t m, uint32_t splits, uint32_t tg, uint32_t groups) {
  return TestSetup(dt)
      .in("partials", fixture::uniform(size_t(m) * splits, -100.0, 100.0, 183))
      .out("y", m)
      .constexprs({{"m", m}, {"splits", splits}})
      .grid({groups, 1, 1}, {tg, 1, 1})
      .accumulation(splits)
      .error_floor(10.0)
      .oracle([m, splits](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < m; ++r) {
          double s = 0;
          for (uint32_t j = 0; j < splits; ++j) s += in.at("partials")[size_t(r) * splits + j];
          out.at("y")[r] = s;
        }
      });
}
IRON_TEST_KERNEL(iron_gemv_splitk_combine, m37_s5, {f32}, {f16}, {bf16}) { return combine_case(dt, 37, 5, 32, 2); }
IRON_TEST_KERNEL(iron_gemv_splitk_combine, m3_s1, {f32}, {bf16}) { return combine_case(dt, 3, 1, 32, 1); }

// Step 1 at the long-K decode shape (y[4096] = W[4096, 14336] x, 4 splits): A once, x per split.
static BenchSetup splitk_bench(DType dt, uint32_t vec, uint32_t m, uint32_t k, uint32_t splits) {
  TestSetup t = splitk_case(dt, vec, m, k, splits, 256);
  BenchSetup b(dt);
  b.in("a", t.inputs().at("a")).in("x", t.inputs().at("x")).out("partials", size_t(m) * splits).constexprs(t.scalars());
  b.grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes((double(m) * k + double(k) * splits) * dtype_size(dt) + 4.0 * m * splits).flops(2.0 * m * k);
}
IRON_BENCH(iron_gemv_splitk_x8, m4096_k14336_s4, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return splitk_bench(dt, 8, 4096, 14336, 4); }
IRON_BENCH(iron_gemv_splitk_x8, m1024_k65536_s16, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return splitk_bench(dt, 8, 1024, 65536, 16); }

}  // namespace iron::kernels
