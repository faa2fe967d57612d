// Elementwise unary kernels: exp and SiLU (x * sigmoid(x)), 8 elements per thread
// (per_thread.hpp), computed in f32 and rounded once on store.
// Dispatch: grid = {groups_for(n, tg), 1, 1}, tg = {256, 1, 1}.
#include <cmath>

#include "per_thread.hpp"

namespace iron::kernels {
using namespace iron::dsl;

static void exp_kernel() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) { out[i] = cast<T>(exp(cast<f32>(x[i]))); });
}
IRON_KERNEL(iron_exp, exp_kernel, Elementwise, f32, f16, bf16);

// sigmoid(x) = 1 / (1 + exp(-x)), as a device function: kernels call it, kernel_inline inlines it.
static void sigmoid() {
  Expr x = arg(0, f32);
  ret(1.0f / (1.0f + exp(-x)));
}
IRON_DEVICE_FN(iron_sigmoid, sigmoid);

static void silu() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) {
    Expr v = cast<f32>(x[i]);
    out[i] = cast<T>(v * call("iron_sigmoid", {v}));
  });
}
IRON_KERNEL(iron_silu, silu, Elementwise, f32, f16, bf16);

// Tolerance (derived): one exp; SiLU adds three f32 roundings (add, divide, multiply).
static TestSetup unary_setup(DType dt, std::vector<double> x, bool is_silu) {
  const uint32_t n = uint32_t(x.size());
  return TestSetup(dt)
      .in("x", std::move(x))
      .out("out", n)
      .constexprs({{"n", n}})
      .grid({groups_for(n, 256), 1, 1}, {256, 1, 1})
      .error_floor(1e-4)  // outputs down to 1e-4 (exp(-8) = 3.4e-4) are checked relatively
      .math_ops(1)
      .accumulation(is_silu ? 3 : 0)
      .oracle([n, is_silu](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        auto& o = out.at("out");
        host_ranges(n, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) o[i] = is_silu ? x[i] / (1.0 + std::exp(-x[i])) : std::exp(x[i]);
        });
      });
}
static TestSetup unary_case(DType dt, uint32_t n, double lo, double hi, bool is_silu) {
  return unary_setup(dt, fixture::uniform(n, lo, hi, 21), is_silu);
}
// n = 64 + r: eight full runs and a tail of r elements; at 16 bits the tail's inputs are picked
// so the exact result rounds away from zero (fixture::rounds_away), which a store rounding
// toward zero gets wrong on every tail element.
static TestSetup unary_tail_case(DType dt, uint32_t r, bool is_silu) {
  const uint32_t n = 64 + r;
  auto x = fixture::uniform(n, -8.0, 8.0, 23 + r);
  if (dt != DType::F32) {
    auto c = fixture::uniform(4096, -8.0, 8.0, 24);
    uint32_t i = 64;
    for (size_t k = 0; k < c.size() && i < n; ++k) {
      double v = fixture::round_to(dt, c[k]);
      double exact = is_silu ? v / (1.0 + std::exp(-v)) : std::exp(v);
      if (std::fabs(exact) > 1e-3 && fixture::rounds_away(dt, exact)) x[i++] = v;
    }
  }
  return unary_setup(dt, std::move(x), is_silu);
}
// SiLU at extreme magnitudes: |x| from 2^-20 to 2^13 (exp(-x) overflows f32 for x < -88.7, so
// sigmoid must come out as 0, not NaN), exact ties (x and -x), and exact zeros. Error is
// relative down to 1e-6 (x > -16): below it exp's argument exceeds the |x| <= 12 the per-op
// allowance covers (Vulkan allows exp 3 + 2|x| ulp; lavapipe is 21 ulp off at x = -46).
static TestSetup silu_extreme_case(DType dt, uint32_t n) {
  auto x = fixture::magnitudes(n, -20, 13, 22);
  for (uint32_t i = 1; i < n; i += 7) x[i] = -x[i - 1];
  for (uint32_t i = 0; i < n; i += 97) x[i] = 0.0;
  return unary_setup(dt, std::move(x), true).error_floor(1e-6);
}

IRON_TEST_KERNEL(iron_exp, n3001, {f32}, {f16}, {bf16}) {
  return unary_case(dt, 3001, -8.0, 8.0, false);
}
IRON_TEST_KERNEL(iron_silu, n3001, {f32}, {f16}, {bf16}) {
  return unary_case(dt, 3001, -8.0, 8.0, true);
}
IRON_TEST_KERNEL(iron_silu, n257, {f32}, {f16}, {bf16}) {
  return unary_case(dt, 257, -20.0, 20.0, true);
}
// Every tail length 0..7 (n = 64 + r): each tail guard, tail index and tail store is exercised.
IRON_TEST_KERNEL(iron_exp, tail0_n64, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 0, false); }
IRON_TEST_KERNEL(iron_exp, tail2_n66, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 2, false); }
IRON_TEST_KERNEL(iron_exp, tail3_n67, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 3, false); }
IRON_TEST_KERNEL(iron_exp, tail4_n68, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 4, false); }
IRON_TEST_KERNEL(iron_exp, tail5_n69, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 5, false); }
IRON_TEST_KERNEL(iron_exp, tail6_n70, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 6, false); }
IRON_TEST_KERNEL(iron_exp, tail7_n71, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 7, false); }
IRON_TEST_KERNEL(iron_silu, tail0_n64, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 0, true); }
IRON_TEST_KERNEL(iron_silu, tail2_n66, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 2, true); }
IRON_TEST_KERNEL(iron_silu, tail3_n67, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 3, true); }
IRON_TEST_KERNEL(iron_silu, tail4_n68, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 4, true); }
IRON_TEST_KERNEL(iron_silu, tail5_n69, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 5, true); }
IRON_TEST_KERNEL(iron_silu, tail6_n70, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 6, true); }
IRON_TEST_KERNEL(iron_silu, tail7_n71, {f32}, {f16}, {bf16}) { return unary_tail_case(dt, 7, true); }
IRON_TEST_KERNEL(iron_silu, n1001_extreme, {f32}, {f16}, {bf16}) { return silu_extreme_case(dt, 1001); }

// Selectors: the logical call {n} (per_thread.hpp: 8 elements per thread).
static LaunchPlan exp_for(const Call& call, const DeviceInfo& dev) { return per_thread_plan("iron_exp", "iron_exp", call, dev); }
static LaunchPlan silu_for(const Call& call, const DeviceInfo& dev) { return per_thread_plan("iron_silu", "iron_silu", call, dev); }
IRON_SELECTOR(iron_exp, exp_for);
IRON_SELECTOR(iron_silu, silu_for);

// A case through the selector, from the grid case's inputs, tolerance and oracle.
static TestSetup unary_call_case(DType dt, uint32_t n, bool is_silu) {
  TestSetup t = unary_case(dt, n, -8.0, 8.0, is_silu);
  return TestSetup(dt)
      .in("x", t.inputs().at("x"))
      .out("out", n)
      .call({{"n", n}})
      .accumulation(t.accumulation_roundings())
      .math_ops(t.math_op_count())
      .error_floor(t.floor())
      .oracle(t.oracle_fn());
}
// guards: the selector's launch of a call with a tail of 6 (n = 8 * 74 + 6)
IRON_TEST_KERNEL(iron_exp, call_n598, {f32}, {f16}, {bf16}) { return unary_call_case(dt, 598, false); }
// guards: the selector's launch of a call with a tail of 7 (n = 8 * 74 + 7)
IRON_TEST_KERNEL(iron_silu, call_n599, {f32}, {f16}, {bf16}) { return unary_call_case(dt, 599, true); }

}  // namespace iron::kernels

// Benchmarks: SwiGLU-sized activations (4096 tokens x 11008). 2 n elements move; exp counts as
// one FLOP, SiLU as four (negate, exp, add, divide-and-multiply).
namespace iron::kernels {
static BenchSetup unary_bench(DType dt, uint32_t n, bool is_silu) {
  TestSetup t = unary_case(dt, n, -8.0, 8.0, is_silu);
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).out("out", n).constexprs({{"n", n}}).grid(t.grid_size(), t.threadgroup());
  b.oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes(2.0 * n * dtype_size(dt)).flops((is_silu ? 4.0 : 1.0) * n).sweep(is_silu ? "iron_silu" : "iron_exp", n);
}
IRON_BENCH(iron_exp, t4096_h11008, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return unary_bench(dt, 4096u * 11008u, false); }
IRON_BENCH(iron_silu, t1_h11008, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return unary_bench(dt, 11008u, true); }
IRON_BENCH(iron_silu, t4096_h11008, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return unary_bench(dt, 4096u * 11008u, true); }
// 1 Gi elements (2^30, issue 9's streaming size), launched by the family's selector: 4 GiB move
// at bf16.
static BenchSetup unary_call_bench(DType dt, uint32_t n, bool is_silu) {
  TestSetup t = unary_case(dt, n, -8.0, 8.0, is_silu);
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).out("out", n).call({{"n", n}}).oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes(2.0 * n * dtype_size(dt)).flops((is_silu ? 4.0 : 1.0) * n);
}
IRON_BENCH(iron_exp, n1g, {bf16, 8e-3}) { return unary_call_bench(dt, 1u << 30, false); }
IRON_BENCH(iron_silu, n1g, {bf16, 8e-3}) { return unary_call_bench(dt, 1u << 30, true); }
}  // namespace iron::kernels
