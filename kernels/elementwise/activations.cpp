// Elementwise activations of a transformer MLP, 8 elements per thread (per_thread.hpp), computed
// in f32 and rounded once on store:
//   iron_gelu_tanh  out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (the tanh approximation)
//   iron_gelu_erf   out = 0.5 x (1 + erf(x / sqrt(2)))                      (the exact GELU)
//   iron_swiglu     out = silu(a) * b = a / (1 + exp(-a)) * b                (fused SwiGLU)
// Dispatch: grid = {groups_for(n, tg), 1, 1} threadgroups of tg threads (ceil(n / 8) threads):
// a thread whose 8 elements are in range reads and writes them as 16-byte accesses (two for
// f32), the one thread that straddles the end guards each element. No reductions: every output
// depends on its own inputs alone, bit-exact run to run.
//
// The tanh form is computed through the identity 0.5 (1 + tanh(z)) = 1 / (1 + exp(-2 z)), so
// out = x / (1 + exp(-a)) with a = x (c0 + c1 x^2), c0 = 2 sqrt(2/pi), c1 = 0.044715 c0: one exp
// and one divide, and no cancellation for negative x, where 1 + tanh(z) would lose the digits of
// a small result. x^3 overflowing f32 gives a = +-inf, exp(-a) = 0 or inf and out = x or -0.
#include <cmath>

#include "per_thread.hpp"

namespace iron::kernels {
using namespace iron::dsl;

constexpr double kGeluC0 = 1.5957691216057308;   // 2 sqrt(2 / pi)
constexpr double kGeluC1 = 0.0713548162726009;   // 0.044715 * 2 sqrt(2 / pi)
constexpr double kInvSqrt2 = 0.70710678118654752;

static void gelu_tanh() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) {
    Expr v = cast<f32>(x[i]);
    Expr a = v * (float(kGeluC0) + float(kGeluC1) * (v * v));
    out[i] = cast<T>(v / (1.0f + exp(-a)));
  });
}
IRON_KERNEL(iron_gelu_tanh, gelu_tanh, Elementwise, f32, f16, bf16);

static void gelu_erf() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) {
    Expr v = cast<f32>(x[i]);
    out[i] = cast<T>((0.5f * v) * (1.0f + erf(v * float(kInvSqrt2))));
  });
}
IRON_KERNEL(iron_gelu_erf, gelu_erf, Elementwise, f32, f16, bf16);

static void swiglu() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) {
    Expr g = cast<f32>(a[i]);
    out[i] = cast<T>(g / (1.0f + exp(-g)) * cast<f32>(b[i]));
  });
}
IRON_KERNEL(iron_swiglu, swiglu, Elementwise, f32, f16, bf16);

namespace {

enum class Act { GeluTanh, GeluErf };

double gelu_exact(Act act, double x) {
  if (act == Act::GeluErf) return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  const double z = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(z));
}

// Tolerances (derived).
// tanh form: a = v (c0 + c1 v^2) takes 4 f32 roundings and the two constants' roundings to f32,
// so its relative error is at most 6 u (no cancellation: both terms of the sum are positive);
// exp(-a) turns that into an error of |a| 6 u, weighted by e / (1 + e) <= 1 in the sigmoid;
// then the add and the divide. For every output above the floor of 1e-4, |a| e / (1 + e) <= 12
// (negative x: |x| exp(-|a|) >= 1e-4 needs |a| < 10.5 for |x| <= 8; positive x: a e^-a <= 1/e),
// so accumulation = 2 + 6 * 12 and one transcendental. Below the floor the error is absolute,
// and |x| |a| exp(-|a|) only shrinks as |a| grows.
// erf form: erf is within 16 f32 ulps of a result near 1 (Iron's bound is relative 2^-21), its
// argument's two roundings (the constant and the product) move it by at most 2 u z erf'(z) <=
// 1.13 * 2 u, and 1 + erf rounds once; that error is absolute (1 + erf(z) cancels for negative
// x), then scaled by |x| / 2 <= 2 for |x| <= 4 and rounded once by the product. Errors are
// therefore measured against a floor of 2: accumulation = 1 + 3 + 1 (erf's argument, the add,
// the product) and one transcendental.
TestSetup gelu_setup(DType dt, Act act, std::vector<double> x) {
  const uint32_t n = uint32_t(x.size());
  TestSetup t = TestSetup(dt)
                    .in("x", std::move(x))
                    .out("out", n)
                    .constexprs({{"n", n}})
                    .grid({groups_for(n, 256), 1, 1}, {256, 1, 1})
                    .math_ops(1)
                    .oracle([n, act](const Tensors& in, Tensors& out) {
                      const auto& v = in.at("x");
                      auto& o = out.at("out");
                      host_ranges(n, [&](size_t b, size_t e) {
                        for (size_t i = b; i < e; ++i) o[i] = gelu_exact(act, v[i]);
                      });
                    });
  if (act == Act::GeluTanh) return t.accumulation(2 + 6 * 12).error_floor(1e-4);
  return t.accumulation(5).error_floor(2.0);
}
// The floor below which the case measures absolute error (see above).
double gelu_floor(Act act) { return act == Act::GeluTanh ? 1e-4 : 2.0; }

TestSetup gelu_case(DType dt, Act act, uint32_t n, double lo, double hi, uint64_t seed) {
  return gelu_setup(dt, act, fixture::uniform(n, lo, hi, seed));
}
// n = 64 + r: eight full runs and a tail of r elements; at 16 bits the tail's inputs are picked
// so that the exact result is above the floor and rounds away from zero, which a store rounding
// toward zero gets wrong on every tail element.
TestSetup gelu_tail_case(DType dt, Act act, uint32_t r) {
  const uint32_t n = 64 + r;
  auto x = fixture::uniform(n, -4.0, 4.0, 71 + r);
  if (dt != DType::F32) {
    auto c = fixture::uniform(4096, -4.0, 4.0, 72);
    uint32_t i = 64;
    for (size_t k = 0; k < c.size() && i < n; ++k) {
      const double v = fixture::round_to(dt, c[k]), exact = gelu_exact(act, v);
      if (std::fabs(exact) > gelu_floor(act) && fixture::rounds_away(dt, exact)) x[i++] = v;
    }
  }
  return gelu_setup(dt, act, std::move(x));
}
// Magnitudes from 2^-20 to 2^13 (the tanh form's x^3 overflows f32 above 2^42.5 only, but exp
// overflows for a < -88.7 and must give -0, not NaN), exact ties x and -x, and zeros. The erf
// form keeps |x| <= 4 (its floor covers |x| / 2 <= 2).
TestSetup gelu_extreme_case(DType dt, Act act, uint32_t n) {
  auto x = fixture::magnitudes(n, -20, act == Act::GeluErf ? 1 : 13, 73);
  for (uint32_t i = 1; i < n; i += 7) x[i] = -x[i - 1];
  for (uint32_t i = 0; i < n; i += 97) x[i] = 0.0;
  return gelu_setup(dt, act, std::move(x));
}

// SwiGLU: the add and divide of the sigmoid, the product with b, and exp (gate in [-8, 8], so
// |exp's argument| <= 8 where the allowance holds). b scales the result without changing its
// relative error.
TestSetup swiglu_setup(DType dt, std::vector<double> a, std::vector<double> b) {
  const uint32_t n = uint32_t(a.size());
  return TestSetup(dt)
      .in("a", std::move(a))
      .in("b", std::move(b))
      .out("out", n)
      .constexprs({{"n", n}})
      .grid({groups_for(n, 256), 1, 1}, {256, 1, 1})
      .accumulation(3)
      .math_ops(1)
      .error_floor(1e-4)
      .oracle([n](const Tensors& in, Tensors& out) {
        const auto& g = in.at("a");
        const auto& u = in.at("b");
        auto& o = out.at("out");
        host_ranges(n, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) o[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        });
      });
}
TestSetup swiglu_case(DType dt, uint32_t n) {
  return swiglu_setup(dt, fixture::uniform(n, -8.0, 8.0, 74), fixture::uniform(n, -4.0, 4.0, 75));
}
TestSetup swiglu_tail_case(DType dt, uint32_t r) {
  const uint32_t n = 64 + r;
  auto a = fixture::uniform(n, -8.0, 8.0, 76 + r);
  auto b = fixture::uniform(n, -4.0, 4.0, 77 + r);
  if (dt != DType::F32) {
    auto ca = fixture::uniform(4096, -8.0, 8.0, 78), cb = fixture::uniform(4096, -4.0, 4.0, 79);
    uint32_t i = 64;
    for (size_t k = 0; k < ca.size() && i < n; ++k) {
      const double g = fixture::round_to(dt, ca[k]), u = fixture::round_to(dt, cb[k]);
      const double exact = g / (1.0 + std::exp(-g)) * u;
      if (std::fabs(exact) > 1e-3 && fixture::rounds_away(dt, exact)) a[i] = g, b[i] = u, ++i;
    }
  }
  return swiglu_setup(dt, std::move(a), std::move(b));
}
// Gates at extreme magnitudes (exp(-a) overflows for a < -88.7: the sigmoid must give 0, not
// NaN), exact zeros of a and of b, and |b| from 2^-8 to 2. Relative from 1e-6 up, as for SiLU:
// with |b| < 2 an output above it needs a > -16.5.
TestSetup swiglu_extreme_case(DType dt, uint32_t n) {
  auto a = fixture::magnitudes(n, -20, dt == DType::F16 ? 3 : 13, 80);
  auto b = fixture::magnitudes(n, -8, 0, 81);
  for (uint32_t i = 0; i < n; i += 97) a[i] = 0.0;
  for (uint32_t i = 5; i < n; i += 89) b[i] = 0.0;
  return swiglu_setup(dt, std::move(a), std::move(b)).error_floor(1e-6);
}

}  // namespace

// 3001 = 375 full runs and a tail of 1, over 12 threadgroups (a partial last one); 257: a
// single live thread in the last threadgroup, owning one element.
IRON_TEST_KERNEL(iron_gelu_tanh, n3001, {f32}, {f16}, {bf16}) { return gelu_case(dt, Act::GeluTanh, 3001, -8.0, 8.0, 70); }
IRON_TEST_KERNEL(iron_gelu_tanh, n257, {f32}, {f16}, {bf16}) { return gelu_case(dt, Act::GeluTanh, 257, -3.0, 3.0, 69); }
IRON_TEST_KERNEL(iron_gelu_tanh, n1001_extreme, {f32}, {f16}, {bf16}) { return gelu_extreme_case(dt, Act::GeluTanh, 1001); }
IRON_TEST_KERNEL(iron_gelu_erf, n3001, {f32}, {f16}, {bf16}) { return gelu_case(dt, Act::GeluErf, 3001, -4.0, 4.0, 70); }
IRON_TEST_KERNEL(iron_gelu_erf, n257, {f32}, {f16}, {bf16}) { return gelu_case(dt, Act::GeluErf, 257, -3.0, 3.0, 69); }
IRON_TEST_KERNEL(iron_gelu_erf, n1001_extreme, {f32}, {f16}, {bf16}) { return gelu_extreme_case(dt, Act::GeluErf, 1001); }
IRON_TEST_KERNEL(iron_swiglu, n3001, {f32}, {f16}, {bf16}) { return swiglu_case(dt, 3001); }
IRON_TEST_KERNEL(iron_swiglu, n257, {f32}, {f16}, {bf16}) { return swiglu_case(dt, 257); }
IRON_TEST_KERNEL(iron_swiglu, n1001_extreme, {f32}, {f16}, {bf16}) { return swiglu_extreme_case(dt, 1001); }
// Every tail length 0..7 (n = 64 + r): each tail guard, tail index and tail store is exercised.
IRON_TEST_KERNEL(iron_gelu_tanh, tail0_n64, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 0); }
IRON_TEST_KERNEL(iron_gelu_tanh, tail1_n65, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 1); }
IRON_TEST_KERNEL(iron_gelu_tanh, tail2_n66, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 2); }
IRON_TEST_KERNEL(iron_gelu_tanh, tail3_n67, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 3); }
IRON_TEST_KERNEL(iron_gelu_tanh, tail4_n68, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 4); }
IRON_TEST_KERNEL(iron_gelu_tanh, tail5_n69, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 5); }
IRON_TEST_KERNEL(iron_gelu_tanh, tail6_n70, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 6); }
IRON_TEST_KERNEL(iron_gelu_tanh, tail7_n71, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluTanh, 7); }
IRON_TEST_KERNEL(iron_gelu_erf, tail0_n64, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 0); }
IRON_TEST_KERNEL(iron_gelu_erf, tail1_n65, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 1); }
IRON_TEST_KERNEL(iron_gelu_erf, tail2_n66, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 2); }
IRON_TEST_KERNEL(iron_gelu_erf, tail3_n67, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 3); }
IRON_TEST_KERNEL(iron_gelu_erf, tail4_n68, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 4); }
IRON_TEST_KERNEL(iron_gelu_erf, tail5_n69, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 5); }
IRON_TEST_KERNEL(iron_gelu_erf, tail6_n70, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 6); }
IRON_TEST_KERNEL(iron_gelu_erf, tail7_n71, {f32}, {f16}, {bf16}) { return gelu_tail_case(dt, Act::GeluErf, 7); }
IRON_TEST_KERNEL(iron_swiglu, tail0_n64, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 0); }
IRON_TEST_KERNEL(iron_swiglu, tail1_n65, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 1); }
IRON_TEST_KERNEL(iron_swiglu, tail2_n66, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 2); }
IRON_TEST_KERNEL(iron_swiglu, tail3_n67, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 3); }
IRON_TEST_KERNEL(iron_swiglu, tail4_n68, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 4); }
IRON_TEST_KERNEL(iron_swiglu, tail5_n69, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 5); }
IRON_TEST_KERNEL(iron_swiglu, tail6_n70, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 6); }
IRON_TEST_KERNEL(iron_swiglu, tail7_n71, {f32}, {f16}, {bf16}) { return swiglu_tail_case(dt, 7); }

// Selectors: the logical call {n} (per_thread.hpp: 8 elements per thread).
static LaunchPlan gelu_tanh_for(const Call& call, const DeviceInfo& dev) {
  return per_thread_plan("iron_gelu_tanh", "iron_gelu_tanh", call, dev);
}
static LaunchPlan gelu_erf_for(const Call& call, const DeviceInfo& dev) {
  return per_thread_plan("iron_gelu_erf", "iron_gelu_erf", call, dev);
}
static LaunchPlan swiglu_for(const Call& call, const DeviceInfo& dev) { return per_thread_plan("iron_swiglu", "iron_swiglu", call, dev); }
IRON_SELECTOR(iron_gelu_tanh, gelu_tanh_for);
IRON_SELECTOR(iron_gelu_erf, gelu_erf_for);
IRON_SELECTOR(iron_swiglu, swiglu_for);

namespace {
// The grid case `t` as a case through the selector: its inputs, tolerance and oracle.
TestSetup as_call(DType dt, const TestSetup& t, uint32_t n) {
  TestSetup c(dt);
  for (const auto& [name, values] : t.inputs()) c.in(name, values);
  return c.out("out", n)
      .call({{"n", n}})
      .accumulation(t.accumulation_roundings())
      .math_ops(t.math_op_count())
      .error_floor(t.floor())
      .oracle(t.oracle_fn());
}
}  // namespace
// guards: each family's launch by its selector, at a call with a tail of 3 (n = 8 * 62 + 3)
IRON_TEST_KERNEL(iron_gelu_tanh, call_n499, {f32}, {f16}, {bf16}) {
  return as_call(dt, gelu_case(dt, Act::GeluTanh, 499, -6.0, 6.0, 68), 499);
}
IRON_TEST_KERNEL(iron_gelu_erf, call_n499, {f32}, {f16}, {bf16}) {
  return as_call(dt, gelu_case(dt, Act::GeluErf, 499, -4.0, 4.0, 68), 499);
}
IRON_TEST_KERNEL(iron_swiglu, call_n499, {f32}, {f16}, {bf16}) { return as_call(dt, swiglu_case(dt, 499), 499); }

}  // namespace iron::kernels

// Benchmarks. GELU: 2 n elements move (one read, one write); SwiGLU: 3 n (two reads, one
// write) at the MLP widths of 8B-class models, [tokens, 14336], from a prefill of 4096 tokens
// to one of 32768. n = 2^30 (1 Gi elements) is the streaming case of issue 9.
namespace iron::kernels {
namespace {
// `call`: launched by the family's selector (the issue-9 shapes) rather than a fixed grid.
BenchSetup gelu_bench(DType dt, Act act, uint32_t n, bool call = false) {
  TestSetup t = gelu_case(dt, act, n, -4.0, 4.0, 70);
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).out("out", n).oracle(t.oracle_fn()).error_floor(t.floor());
  if (call) b.call({{"n", n}});
  else b.constexprs(t.scalars()).grid(t.grid_size(), t.threadgroup());
  return b.bytes(2.0 * n * dtype_size(dt)).flops(8.0 * n);
}
BenchSetup swiglu_bench(DType dt, uint32_t n) {
  TestSetup t = swiglu_case(dt, n);
  BenchSetup b(dt);
  b.in("a", t.inputs().at("a")).in("b", t.inputs().at("b")).out("out", n).call({{"n", n}});
  b.oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes(3.0 * n * dtype_size(dt)).flops(5.0 * n).sweep("iron_swiglu_h14336", n / 14336);
}
}  // namespace
IRON_BENCH(iron_gelu_tanh, t4096_h11008, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return gelu_bench(dt, Act::GeluTanh, 4096u * 11008u); }
IRON_BENCH(iron_gelu_erf, t4096_h11008, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return gelu_bench(dt, Act::GeluErf, 4096u * 11008u); }
IRON_BENCH(iron_gelu_tanh, n1g, {bf16, 8e-3}) { return gelu_bench(dt, Act::GeluTanh, 1u << 30, true); }
IRON_BENCH(iron_gelu_erf, n1g, {bf16, 8e-3}) { return gelu_bench(dt, Act::GeluErf, 1u << 30, true); }
IRON_BENCH(iron_swiglu, t1_h14336, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return swiglu_bench(dt, 14336u); }
IRON_BENCH(iron_swiglu, t4096_h14336, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return swiglu_bench(dt, 4096u * 14336u); }
IRON_BENCH(iron_swiglu, t32768_h14336, {bf16, 8e-3}) { return swiglu_bench(dt, 32768u * 14336u); }
}  // namespace iron::kernels
