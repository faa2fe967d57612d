// iron_scale_by_weight: out[r, j] = x[r, j] * cast<T>(w[j]) over rows x d, activations x and
// out in T, the per-column weights w in W (the kernel is generic over both: every T x W pair of
// {f32, f16, bf16} is an instantiation). One thread per element; dispatch: grid =
// {ceil(rows * d / tg), 1, 1} threadgroups of tg threads; rows * d must stay below 2^32.
// The weight is rounded to T once (the cast), the product is a multiply in T, rounded to T
// (the store rounds nothing more).
#include <algorithm>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

static void scale_by_weight() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Buffer x = input("x", T, {rows, d});
  Buffer w = input("w", W, {d});
  Buffer out = output("out", T, {rows, d});
  Expr i = thread_id(0);
  if_(i < rows * d, [&] { out[i] = x[i] * cast<T>(w[i % d]); });
}
IRON_KERNEL_TW(iron_scale_by_weight, scale_by_weight, Elementwise, (f32, f16, bf16), (f32, f16, bf16));

// Tolerance (derived): the weight's rounding to T is part of the oracle (it rounds the weight
// exactly as the cast does), then one f32 multiply and the store's rounding.
static TestSetup scale_setup(DType dt, DType wt, uint32_t rows, uint32_t d, uint32_t tg) {
  const size_t n = size_t(rows) * d;
  std::vector<double> w = fixture::uniform(d, -3.0, 3.0, 52);
  // Weights that W holds exactly but T does not: a missing or wrong cast<T> shows.
  if (wt == DType::F32 && dt != DType::F32)
    for (uint32_t j = 0; j < d; j += 3) w[j] = 1.0 + 0x1p-20 * (j + 1);
  return TestSetup(Instantiation(dt, wt))
      .in("x", fixture::uniform(n, -4.0, 4.0, 51))
      .in("w", w)
      .out("out", n)
      .constexprs({{"rows", rows}, {"d", d}})
      .grid({uint32_t((n + tg - 1) / tg), 1, 1}, {tg, 1, 1})
      .accumulation(1)
      .error_floor(dt == DType::F16 ? 0x1p-14 : 0x1p-126)
      .oracle([rows, d, dt](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        const auto& wv = in.at("w");
        auto& o = out.at("out");
        for (uint32_t r = 0; r < rows; ++r)
          for (uint32_t j = 0; j < d; ++j) o[size_t(r) * d + j] = x[size_t(r) * d + j] * fixture::round_to(dt, wv[j]);
      });
}

// guards: x * cast<T>(w[j]) at every T x W pair of {f32, f16, bf16}: W resolved apart from T, the weight rounded to T once, the column index wrapping mid-threadgroup, threads past the end
IRON_TEST_KERNEL(iron_scale_by_weight, rows7_d333, {{f32, f32}}, {{f32, f16}}, {{f32, bf16}}, {{f16, f32}}, {{f16, f16}},
                 {{f16, bf16}}, {{bf16, f32}}, {{bf16, f16}}, {{bf16, bf16}}) {
  return scale_setup(dt, wt, 7, 333, 128);
}
// guards: the smallest shape (one element, one weight) at every T x W pair; the tail guard of a threadgroup of 64 with one live thread
IRON_TEST_KERNEL(iron_scale_by_weight, rows1_d1, {{f32, f32}}, {{f32, f16}}, {{f32, bf16}}, {{f16, f32}}, {{f16, f16}},
                 {{f16, bf16}}, {{bf16, f32}}, {{bf16, f16}}, {{bf16, bf16}}) {
  return scale_setup(dt, wt, 1, 1, 64);
}
// guards: several threadgroups whose rows start at a threadgroup boundary, W wider and narrower than T (f16,f32 and bf16,f16)
IRON_TEST_KERNEL(iron_scale_by_weight, rows33_d64, {{f16, f32}}, {{bf16, f16}}) { return scale_setup(dt, wt, 33, 64, 256); }

// Selector: the logical call {rows, d}. One thread per element in threadgroups of 256 (or the
// device's limit); rows * d must stay below 2^32 (the kernel's 32-bit thread index).
static LaunchPlan scale_by_weight_for(const Call& call, const DeviceInfo& dev) {
  const int64_t rows = call.size("rows"), d = call.size("d");
  const uint64_t n = uint64_t(rows) * uint64_t(d);
  if (rows == 0 || d == 0 || rows > int64_t(UINT32_MAX) || d > int64_t(UINT32_MAX) || n > UINT32_MAX)
    throw Error("rows = " + std::to_string(rows) + ", d = " + std::to_string(d) +
                ": needs 1 <= rows * d < 2^32 (one 32-bit thread index per element)");
  const uint32_t tg = std::min<uint32_t>(256, dev.max_threads_per_group);
  LaunchPlan plan;
  plan.steps.push_back({"iron_scale_by_weight", {uint32_t((n + tg - 1) / tg), 1, 1}, {tg, 1, 1},
                        {{"rows", uint32_t(rows)}, {"d", uint32_t(d)}}, {}});
  plan.reason = "one thread per element, " + std::to_string(tg) + " per threadgroup";
  return plan;
}
IRON_SELECTOR(iron_scale_by_weight, scale_by_weight_for);

// guards: the selector's launch at a tail (7 x 333 is not a multiple of 256) for a narrowing and a widening W
IRON_TEST_KERNEL(iron_scale_by_weight, call_rows7_d333, {{f16, f32}}, {{bf16, f16}}, {{f32, bf16}}) {
  TestSetup t = scale_setup(dt, wt, 7, 333, 1);
  return TestSetup(Instantiation(dt, wt))
      .in("x", t.inputs().at("x"))
      .in("w", t.inputs().at("w"))
      .out("out", 7 * 333)
      .call({{"rows", 7}, {"d", 333}})
      .accumulation(1)
      .error_floor(t.floor())
      .oracle(t.oracle_fn());
}

// Benchmark: a decode-size batch of activations scaled by per-channel weights. Memory bound:
// 2 rows * d elements of T and d of W move, rows * d FLOPs.
static BenchSetup scale_bench(DType dt, DType wt, uint32_t rows, uint32_t d) {
  TestSetup t = scale_setup(dt, wt, rows, d, 256);
  BenchSetup b(Instantiation(dt, wt));
  b.in("x", t.inputs().at("x")).in("w", t.inputs().at("w")).out("out", size_t(rows) * d);
  b.call({{"rows", rows}, {"d", d}}).oracle(t.oracle_fn());
  const double n = double(rows) * d;
  return b.bytes(2.0 * n * dtype_size(dt) + double(d) * dtype_size(wt)).flops(n);
}
IRON_BENCH(iron_scale_by_weight, rows4096_d4096, {{f32, f32}, 1e-6}, {{f16, f32}, 1e-3}, {{bf16, f16}, 8e-3}) {
  return scale_bench(dt, wt, 4096, 4096);
}

}  // namespace iron::kernels
