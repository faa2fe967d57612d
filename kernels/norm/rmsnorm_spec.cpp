// RMSNorm with the row length baked in: out[r, j] = x[r, j] * w[j] / sqrt(mean_j(x[r, j]^2) + eps),
// the same function as iron_rmsnorm, written for specialization (docs/dsl.md#specialization).
// `d` is declared specialize() | multiple_of(8): each dispatch's d is a constant of the code
// built for it, and every d is a multiple of 8 (the dispatch check rejects any other, naming
// this declaration). A row is d / 8 chunks of 8 adjacent elements; thread t of the threadgroup
// takes chunks t, t + tg, t + 2 tg, ... in ceil(d / 8 / tg) steps, and keeps the chunks of its
// first four steps in registers (a register array), so x is read once for d <= 32 tg and the
// steps beyond read it again. On CUDA and Vulkan, where tg is a compile-time constant too, the
// step count is a constant: the step guards fold, the loop of the steps beyond unrolls (or
// vanishes), and each chunk's 8 loads of x (and of w, and the 8 stores of out) become one
// vector group: 16-byte accesses for f16 and bf16, two of 16 bytes for f32 (`iron inspect
// iron_rmsnorm_spec --backend cuda --dtype bf16 --threadgroup 256 --specialize d=4096`). The
// interpreter, where tg is read at run time, runs the same guards and loop unfolded.
// Tails: a chunk index at or past d / 8 is skipped (d / 8 need not be a multiple of tg, and may
// be smaller than it); there is no element tail, d being a multiple of 8.
// Accumulation in f32, combined across the threadgroup by group_sum's fixed tree: bit-exact run
// to run on one device (no atomics).
// Dispatch: grid = {rows, 1, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width;
// the selector rmsnorm_spec_for (below; `iron run iron_rmsnorm_spec --dtype bf16 --arg rows=7
// --arg d=4096 --arg eps=1e-6`) picks tg so that the row fits the registers.
#include <algorithm>
#include <cmath>
#include <functional>

#include <iron/iron.hpp>

#include "rows.hpp"

namespace iron::kernels {
using namespace iron::dsl;

// The first kRegSteps steps of a thread keep their chunks in a register array, so x is read
// once when d <= 8 * kRegSteps * tg (4096 at 128 threads, 8192 at 256); later steps read x again.
constexpr uint32_t kRegSteps = 4;

static void rmsnorm_spec() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32, specialize() | multiple_of(8));
  Expr eps = constexpr_("eps", f32);
  Buffer x = input("x", T, {rows, d});
  Buffer w = input("w", T, {d});
  Buffer out = output("out", T, {rows, d});
  TgBuffer held = local_array("held", f32, 8 * kRegSteps);

  Expr base = program_id(0) * d;  // a multiple of 8: d is
  Expr chunks = d / 8u;           // exact: d is a multiple of 8
  // Runs `chunk(j, step)` for the first element j (a multiple of 8) of this thread's chunk in
  // step `step` (-1 past the registers): the register steps as host copies (constant register
  // indices), the rest in a strided loop. With d and tg constants the step guards fold: the
  // register steps a row needs are straight-line code and the loop is gone when d <= 32 tg.
  auto each_chunk = [&](const std::function<void(Expr, int)>& chunk) {
    for (uint32_t i = 0; i < kRegSteps; ++i)
      if_(chunks > group_size(0) * i, [&] {  // step i has chunks
        Expr c = group_size(0) * i + local_id(0);
        if_(c < chunks, [&] { chunk(c * 8u, int(i)); });
      });
    if_(chunks > group_size(0) * kRegSteps, [&] {
      for_(group_size(0) * kRegSteps + local_id(0), chunks, group_size(0), [&](Expr c) { chunk(c * 8u, -1); });
    });
  };
  Var<f32> sumsq = 0.0f;
  each_chunk([&](Expr j, int step) {
    for (uint32_t e = 0; e < 8; ++e) {
      Expr v = cast<f32>(x[base + j + e]);
      if (step >= 0) held[uint32_t(step) * 8 + e] = v;
      sumsq += v * v;
    }
  });
  Expr scale = rsqrt(group_sum(sumsq) / cast<f32>(d) + eps);
  each_chunk([&](Expr j, int step) {
    for (uint32_t e = 0; e < 8; ++e) {
      if (step >= 0) out[base + j + e] = cast<T>(held[uint32_t(step) * 8 + e] * scale * cast<f32>(w[j + e]));
      else out[base + j + e] = cast<T>(cast<f32>(x[base + j + e]) * scale * cast<f32>(w[j + e]));
    }
  });
}
IRON_KERNEL(iron_rmsnorm_spec, rmsnorm_spec, Reduction, f32, f16, bf16);

// Tolerance (derived): each thread's serial sum has 8 ceil(d / 8 / tg) squares and adds, then
// the group_sum tree (group_sum_rounding of that many terms per thread); then the mean, eps,
// rsqrt and two multiplies, as iron_rmsnorm. rsqrt halves the sum's relative error, so counting
// it whole is conservative.
static TestSetup rmsnorm_spec_setup(DType dt, uint32_t rows, uint32_t d, uint32_t tg, std::vector<double> x, double eps) {
  const uint64_t per_thread = 8ull * ((d / 8 + tg - 1) / tg);
  return TestSetup(dt)
      .in("x", std::move(x))
      .in("w", fixture::uniform(d, 0.5, 1.5, 42))
      .out("out", size_t(rows) * d)
      .constexprs({{"rows", rows}, {"d", d}, {"eps", eps}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .accumulation(2 * group_sum_rounding(per_thread * tg, tg) + 4)
      .math_ops(1)
      .oracle([rows, d, eps](const Tensors& in, Tensors& out) {
        rows::rms_norm_oracle(in.at("x"), in.at("w"), rows, d, eps, out.at("out"));
      });
}
static TestSetup rmsnorm_spec_case(DType dt, uint32_t rows, uint32_t d, uint32_t tg, double amplitude = 2.0,
                                   double eps = 1e-6) {
  return rmsnorm_spec_setup(dt, rows, d, tg, fixture::uniform(size_t(rows) * d, -amplitude, amplitude, 41), eps);
}

// 7 rows of 4096 (512 chunks: two whole steps of 256 threads); 13 rows of 1000 (125 chunks,
// fewer than the 128 threads: three threads idle); 3 rows of 4104 (513 chunks: a third step in
// which one thread works); 1 row of 8 (one chunk, one thread of 32); 3 rows of 2000 on 32
// threads (250 chunks: 8 steps, the last four beyond the registers, the last one partial).
// Each partial step ends with a thread whose next chunk would be the row's end: a guard that
// let it through would touch the next row (or, in the last row, past the buffer). The tail
// cases run at f32 and bf16 (the rounding of a 16-bit store shows at bf16 on every backend);
// the first two and the value cases below run at every dtype. Each d is a multiple of 8;
// a d that is not is rejected at dispatch (tests/unit/specialize_test.cpp).
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows7_d4096, {f32}, {f16}, {bf16}) { return rmsnorm_spec_case(dt, 7, 4096, 256); }
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows13_d1000, {f32}, {f16}, {bf16}) { return rmsnorm_spec_case(dt, 13, 1000, 128); }
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows3_d4104, {f32}, {bf16}) { return rmsnorm_spec_case(dt, 3, 4104, 256); }
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows1_d8, {f32}, {bf16}) { return rmsnorm_spec_case(dt, 1, 8, 32); }
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows3_d2000_tg32, {f32}, {bf16}) { return rmsnorm_spec_case(dt, 3, 2000, 32); }
// A partial last step at each register step: 69 chunks on 64 threads (step 1), 199 (step 3);
// 150 chunks on 32 threads: one partial step past the registers (the loop runs once).
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows2_d1200_tg32, {f32}, {bf16}) { return rmsnorm_spec_case(dt, 2, 1200, 32); }
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows3_d552_tg64, {f32}, {bf16}) { return rmsnorm_spec_case(dt, 3, 552, 64); }
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows2_d1592_tg64, {f32}, {bf16}) { return rmsnorm_spec_case(dt, 2, 1592, 64); }
// Tiny values (mean square ~3e-7) with eps = 1e-6: eps dominates the scale, so a kernel that
// drops or misplaces it fails.
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows5_d512_tiny, {f32}, {f16}, {bf16}) {
  return rmsnorm_spec_case(dt, 5, 512, 64, 1e-3, 1e-6);
}
// Extreme rows: huge magnitudes, tiny ones whose squares are f32 subnormals, an all-zero row, a
// row of exact ties, and a row mixing magnitudes over the dtype's range; each row's elements
// differ by position, so a kernel that reads the wrong chunk or the wrong w fails.
IRON_TEST_KERNEL(iron_rmsnorm_spec, rows5_d1000_extreme, {f32}, {f16}, {bf16}) {
  const uint32_t rows = 5, d = 1000;
  const bool half = dt == DType::F16;
  std::vector<double> x = fixture::uniform(size_t(rows) * d, -1.0, 1.0, 43);
  for (uint32_t j = 0; j < d; ++j) {
    x[j] *= half ? 6e4 : 1e17;
    x[d + j] *= half ? 1e-7 : 1e-20;
    x[2 * d + j] = 0.0;
    x[3 * d + j] = -3.0;
  }
  auto mixed = fixture::magnitudes(d, half ? -12 : -50, half ? 12 : 50, 44);
  std::copy(mixed.begin(), mixed.end(), x.begin() + 4 * d);
  return rmsnorm_spec_setup(dt, rows, d, 128, std::move(x), 1e-6).error_floor(half ? 0x1p-24 : 0x1p-100);
}

// Selector: the logical call {rows, d, eps}. One threadgroup per row, of tg threads: enough
// for the row to fit the register steps (tg >= d / 8 / 4), at least 256 (or the row's chunk
// count rounded up to the lane width, when smaller), at most the device's largest multiple of
// its lane width. d is passed through as it is: a d that is not a multiple of 8 reaches the
// dispatch check, which rejects it naming the fact.
static LaunchPlan rmsnorm_spec_for(const Call& call, const DeviceInfo& dev) {
  const int64_t rows = call.size("rows"), d = call.size("d");
  if (rows == 0 || d == 0 || rows > int64_t(UINT32_MAX) || d > int64_t(UINT32_MAX))
    throw Error("rows = " + std::to_string(rows) + ", d = " + std::to_string(d) + ": each must be in 1..2^32-1");
  const uint64_t lane = std::max<uint32_t>(dev.lane_width, 1);
  auto round_up = [&](uint64_t n) { return (n + lane - 1) / lane * lane; };
  const uint64_t chunks = std::max<uint64_t>(uint64_t(d) / 8, 1);
  const uint64_t most = std::max<uint64_t>(std::min<uint64_t>(dev.max_threads_per_group, 1024) / lane * lane, lane);
  uint64_t tg = round_up((chunks + kRegSteps - 1) / kRegSteps);
  tg = std::max(tg, std::min<uint64_t>(256, round_up(chunks)));
  tg = std::min(tg, most);
  LaunchPlan plan;
  plan.steps.push_back({"iron_rmsnorm_spec", {uint32_t(rows), 1, 1}, {uint32_t(tg), 1, 1},
                        {{"rows", uint32_t(rows)}, {"d", uint32_t(d)}, {"eps", call.scalar("eps")}}, {}});
  const bool held = chunks <= kRegSteps * tg;
  plan.reason = "one row per threadgroup of " + std::to_string(tg) + " threads, " +
                (held ? "the row in registers" : "the row past " + std::to_string(8 * kRegSteps * tg) + " read twice");
  return plan;
}
IRON_SELECTOR(iron_rmsnorm_spec, rmsnorm_spec_for);

// Through the selector: 7 rows of 4096 (256 threads), 5 rows of 1000 (128 threads). The
// tolerance is derived for the smallest threadgroup the selector may pick (32 threads): its
// longer serial sums outweigh the shorter group_sum tree.
static TestSetup rmsnorm_spec_call(DType dt, uint32_t rows, uint32_t d) {
  TestSetup t = rmsnorm_spec_case(dt, rows, d, 256);
  return TestSetup(dt)
      .in("x", t.inputs().at("x"))
      .in("w", t.inputs().at("w"))
      .out("out", size_t(rows) * d)
      .call({{"rows", rows}, {"d", d}, {"eps", 1e-6}})
      .accumulation(2 * group_sum_rounding(8ull * ((d / 8 + 31) / 32) * 32, 32) + 4)
      .math_ops(1)
      .oracle(t.oracle_fn());
}
IRON_TEST_KERNEL(iron_rmsnorm_spec, call_rows7_d4096, {f32}, {bf16}) { return rmsnorm_spec_call(dt, 7, 4096); }
IRON_TEST_KERNEL(iron_rmsnorm_spec, call_rows5_d1000, {f32}, {bf16}) { return rmsnorm_spec_call(dt, 5, 1000); }

}  // namespace iron::kernels

// Benchmarks, through the selector, at the RMSNorm shapes under the names the peers
// use (docs/benchmarks): decode (1 and 32 rows of 4096), prefill (4096 and 32768 rows) and a
// wide 8192 model. Bytes: x read once, w once, out written once (x is read once while the row
// fits the registers, which the selector arranges for every shape here).
namespace iron::kernels {
static BenchSetup rmsnorm_spec_bench(DType dt, uint32_t rows, uint32_t d) {
  TestSetup t = rmsnorm_spec_case(dt, rows, d, 256);
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).in("w", t.inputs().at("w")).out("out", size_t(rows) * d);
  b.call({{"rows", rows}, {"d", d}, {"eps", 1e-6}}).oracle(t.oracle_fn());
  return b.bytes((2.0 * rows * d + d) * dtype_size(dt))
      .flops(4.0 * rows * d)
      .sweep("iron_rmsnorm_spec_d" + std::to_string(d), rows);
}
IRON_BENCH(iron_rmsnorm_spec, rows1_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rmsnorm_spec_bench(dt, 1, 4096); }
IRON_BENCH(iron_rmsnorm_spec, rows32_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rmsnorm_spec_bench(dt, 32, 4096); }
IRON_BENCH(iron_rmsnorm_spec, rows4096_d4096, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) {
  return rmsnorm_spec_bench(dt, 4096, 4096);
}
IRON_BENCH(iron_rmsnorm_spec, rows32768_d4096, {bf16, 1e-2}) { return rmsnorm_spec_bench(dt, 32768, 4096); }
IRON_BENCH(iron_rmsnorm_spec, rows16384_d8192, {bf16, 1e-2}) { return rmsnorm_spec_bench(dt, 16384, 8192); }
}  // namespace iron::kernels
