// Kernel-owned launch of the matrix-vector product y = A x, A [n, k] row-major (the M = 1
// GEMV y[N] = W[N, K] x[K]): the family iron_gemv takes the logical call {n, k} with buffers a,
// x and y, and gemv_for picks the route:
//   k <= 8192: one lane group per row (iron_gemv_warp_rows_x8 at 16 bits, _x4 for f32: 16-byte
//     loads of A and x when k is a multiple of VEC), 256 threads per threadgroup, the grid capped
//     at the device's limit (the kernel's grid stride covers the rest);
//   k > 8192 and n < 1024: split-K in two steps through a scratch buffer of n * splits f32
//     partials, splits = ceil(2048 / n) clamped to [2, min(32, k / 4096)] (each split at least
//     4096 elements): iron_gemv_splitk_x8 / _x4, then iron_gemv_splitk_combine (fixed order);
//   otherwise one threadgroup of 256 per row (iron_gemv_rows_x8 / _x4).
// A device without f16 (bf16) refuses those dtypes with a message naming the device; n and k
// must be at least 1 and n * k below 2^32 (the kernels index in u32).
#include <algorithm>
#include <cmath>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

namespace {

// `want` threads where the device allows them, else its largest multiple of the lane width.
uint32_t group_threads(const DeviceInfo& dev, uint32_t want) {
  const uint32_t lanes = std::max(1u, dev.lane_width);
  const uint32_t tg = std::min(want, dev.max_threads_per_group);
  return std::max(lanes, tg / lanes * lanes);
}

uint32_t ceil_div(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

}  // namespace

static LaunchPlan gemv_for(const Call& call, const DeviceInfo& dev) {
  const int64_t n = call.size("n"), k = call.size("k");
  if (n < 1 || k < 1 || uint64_t(n) * uint64_t(k) > UINT32_MAX)
    throw Error("n = " + std::to_string(n) + ", k = " + std::to_string(k) +
                ": each must be at least 1 and n * k below 2^32 (the kernels index A in u32)");
  const DType t = call.dtype.t;
  if ((t == DType::F16 && !dev.f16) || (t == DType::BF16 && !dev.bf16))
    throw Error("device " + dev.name + " has no " + dtype_name(t) + " support");
  const uint32_t rows = uint32_t(n), width = uint32_t(k);
  const uint32_t vec = t == DType::F32 ? 4 : 8;  // 16 bytes
  const std::string x = "_x" + std::to_string(vec);
  const uint32_t tg = group_threads(dev, 256);
  LaunchPlan plan;
  if (width <= 8192 || rows > dev.max_grid.x) {
    const uint32_t per_group = std::max(1u, tg / std::max(1u, dev.lane_width));
    const uint32_t groups = std::min(ceil_div(rows, per_group), dev.max_grid.x);
    plan.steps.push_back({"iron_gemv_warp_rows" + x, {groups, 1, 1}, {tg, 1, 1}, {{"m", rows}, {"k", width}}, {}});
    plan.reason = "k = " + std::to_string(width) + (width <= 8192 ? " <= 8192" : ", n past the grid limit") +
                  ": one lane group per row, " + std::to_string(per_group) + " rows per threadgroup, VEC " +
                  std::to_string(vec);
  } else if (rows < 1024) {
    const uint32_t most = std::min(32u, width / 4096);
    const uint32_t splits = std::clamp(ceil_div(2048, rows), 2u, most);
    plan.scratch.push_back({"partials", DType::F32, size_t(rows) * splits});
    plan.steps.push_back({"iron_gemv_splitk" + x, {rows, splits, 1}, {tg, 1, 1},
                          {{"m", rows}, {"k", width}, {"splits", splits}}, {}});
    plan.steps.push_back({"iron_gemv_splitk_combine", {ceil_div(rows, tg), 1, 1}, {tg, 1, 1},
                          {{"m", rows}, {"splits", splits}}, {}});
    plan.reason = "k = " + std::to_string(width) + " > 8192 with n = " + std::to_string(rows) +
                  " < 1024: split-K over " + std::to_string(splits) + " threadgroups per row, then a fixed-order combine";
  } else {
    plan.steps.push_back({"iron_gemv_rows" + x, {rows, 1, 1}, {tg, 1, 1}, {{"m", rows}, {"k", width}}, {}});
    plan.reason = "k = " + std::to_string(width) + " > 8192 with n = " + std::to_string(rows) +
                  " >= 1024: one threadgroup per row, VEC " + std::to_string(vec);
  }
  return plan;
}
IRON_SELECTOR(iron_gemv, gemv_for);

// ---- Family cases: through the selector on each route the interpreter can afford (the
// one-threadgroup-per-row route needs n >= 1024 and k > 8192, 8 M elements: its kernels have
// direct cases in gemv_rows.cpp). Tolerance (derived) for the route taken, with the selector's
// 256 threads: a lane's (thread's) serial sum of its chunks of VEC products and the tail (a
// multiply and an add each), the lane butterfly or group_sum tree, and for split-K the combine's
// serial sum over the splits; mixed signs cancel, so the floor is k / 4.
static TestSetup gemv_call_case(DType dt, uint32_t n, uint32_t k, double roundings) {
  return TestSetup(dt)
      .in("a", fixture::uniform(size_t(n) * k, -1.0, 1.0, 191))
      .in("x", fixture::uniform(k, -1.0, 1.0, 192))
      .out("y", n)
      .call({{"n", n}, {"k", k}})
      .accumulation(roundings)
      .error_floor(std::max(1.0, k / 4.0))
      .oracle([n, k](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < n; ++r) {
          double s = 0;
          for (uint32_t j = 0; j < k; ++j) s += in.at("a")[size_t(r) * k + j] * in.at("x")[j];
          out.at("y")[r] = s;
        }
      });
}
// The lane-group route: at lane width 4 (the narrowest Iron runs) a lane takes ceil(k / 32)
// chunks of 8; 6 butterfly levels.
static double warp_roundings(uint32_t k) { return 2.0 * ((k / 8 + 3) / 4 * 8 + 8) + 6; }
// Split-K: a partial is group_sum over ceil(k / splits) elements on 256 threads, then the combine.
static double split_roundings(uint32_t k, uint32_t splits) {
  return 2 * (group_sum_rounding((k + splits - 1) / splits, 256) + 16) + 1 + splits;
}
// k = 300 (tail of 4) over 37 rows; k = 4096 for a decode row (n = 1).
IRON_TEST_KERNEL(iron_gemv, call_n37_k300, {f32}, {f16}, {bf16}) { return gemv_call_case(dt, 37, 300, warp_roundings(300)); }
IRON_TEST_KERNEL(iron_gemv, call_n1_k4096, {f32}, {bf16}) { return gemv_call_case(dt, 1, 4096, warp_roundings(4096)); }
// k = 9001 (tail of 1) in 2 splits, k = 20000 in 4: split-K through the scratch partials.
IRON_TEST_KERNEL(iron_gemv, call_n5_k9001_split, {f32}, {f16}, {bf16}) {
  return gemv_call_case(dt, 5, 9001, split_roundings(9001, 2));
}
IRON_TEST_KERNEL(iron_gemv, call_n3_k20000_split, {f32}, {bf16}) {
  return gemv_call_case(dt, 3, 20000, split_roundings(20000, 4));
}

// Benchmarks through the selector: the M = 1 shapes (BENCH-NAMES: n14336_k4096,
// n4096_k14336, n10240_k320). Bytes: A once, x and y; 2 n k FLOPs.
static BenchSetup gemv_call_bench(DType dt, uint32_t n, uint32_t k) {
  TestSetup t = gemv_call_case(dt, n, k, 0);
  BenchSetup b(dt);
  b.in("a", t.inputs().at("a")).in("x", t.inputs().at("x")).out("y", n).call({{"n", n}, {"k", k}});
  b.oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes((double(n) * k + k + n) * dtype_size(dt)).flops(2.0 * n * k);
}
IRON_BENCH(iron_gemv, n14336_k4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_call_bench(dt, 14336, 4096); }
IRON_BENCH(iron_gemv, n4096_k14336, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_call_bench(dt, 4096, 14336); }
IRON_BENCH(iron_gemv, n10240_k320, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return gemv_call_bench(dt, 10240, 320); }
// Few long rows (split-K): 256 rows of 65536.
IRON_BENCH(iron_gemv, n256_k65536, {f32, 1e-5}, {bf16, 1e-2}) { return gemv_call_bench(dt, 256, 65536); }

}  // namespace iron::kernels
