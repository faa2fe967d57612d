// Elementwise binary kernels: out[i] = a[i] (+|*) b[i] over n elements, 8 elements per thread
// (per_thread.hpp). Dispatch: grid = {groups_for(n, tg), 1, 1} threadgroups of tg threads.
// One op in T: exact in f32; at f16 / bf16 the op rounds to T once (docs/semantics.md).
#include "per_thread.hpp"

namespace iron::kernels {
using namespace iron::dsl;

static void add() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) { out[i] = a[i] + b[i]; });
}
IRON_KERNEL(iron_add, add, Elementwise, f32, f16, bf16);

static void mul() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) { out[i] = a[i] * b[i]; });
}
IRON_KERNEL(iron_mul, mul, Elementwise, f32, f16, bf16);

// Tolerance (derived): one f32 rounding (the add or multiply), then at 16 bits its rounding to T.
static TestSetup binary_setup(DType dt, uint32_t n, bool multiply, std::vector<double> a, std::vector<double> b) {
  return TestSetup(dt)
      .in("a", a)
      .in("b", b)
      .out("out", n)
      .constexprs({{"n", n}})
      .grid({groups_for(n, 256), 1, 1}, {256, 1, 1})
      .accumulation(1)
      // One correctly rounded op: every normal output is checked in ulps of its own magnitude
      // (a floor of 1 would hide a wrong rounding of every output below 1).
      .error_floor(dt == DType::F16 ? 0x1p-14 : 0x1p-126)
      .oracle([n, multiply](const Tensors& in, Tensors& out) {
        const auto& x = in.at("a");
        const auto& y = in.at("b");
        auto& o = out.at("out");
        host_ranges(n, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) o[i] = multiply ? x[i] * y[i] : x[i] + y[i];
        });
      });
}
static TestSetup binary_case(DType dt, uint32_t n, bool multiply) {
  return binary_setup(dt, n, multiply, fixture::uniform(n, -4.0, 4.0, 11), fixture::uniform(n, -4.0, 4.0, 12));
}
// n = 64 + r: eight full runs and a tail of r elements. At 16 bits the tail's operands are
// picked so the exact result rounds away from zero (fixture::rounds_away): every tail element
// then shows a store that rounds toward zero.
static TestSetup binary_tail_case(DType dt, uint32_t r, bool multiply) {
  const uint32_t n = 64 + r;
  auto a = fixture::uniform(n, -4.0, 4.0, 15 + r);
  auto b = fixture::uniform(n, -4.0, 4.0, 16 + r);
  if (dt != DType::F32) {
    auto ca = fixture::uniform(4096, -4.0, 4.0, 17), cb = fixture::uniform(4096, -4.0, 4.0, 18);
    uint32_t i = 64;
    for (size_t c = 0; c < ca.size() && i < n; ++c) {
      double x = fixture::round_to(dt, ca[c]), y = fixture::round_to(dt, cb[c]);
      if (fixture::rounds_away(dt, multiply ? x * y : x + y)) a[i] = x, b[i] = y, ++i;
    }
  }
  return binary_setup(dt, n, multiply, a, b);
}
// Extreme operands: magnitudes over the dtype's range (products and sums stay finite and
// normal) and every 5th pair an exact tie (b = -a for add: an exact zero; b = a for mul).
static TestSetup binary_extreme_case(DType dt, uint32_t n, bool multiply) {
  const int e = dt == DType::F16 ? 6 : 60;
  auto a = fixture::magnitudes(n, -e, e, 13);
  auto b = fixture::magnitudes(n, -e, e, 14);
  for (uint32_t i = 0; i < n; i += 5) b[i] = multiply ? a[i] : -a[i];
  return binary_setup(dt, n, multiply, a, b);
}

// 1003 and 4097 leave a partial run of 3 and 1 elements (the scalar tail path) and threads past
// the end; 1000 is an exact multiple of 8 (no tail); 65537 spans many threadgroups.
IRON_TEST_KERNEL(iron_add, n1003, {f32}, {f16}, {bf16}) { return binary_case(dt, 1003, false); }
IRON_TEST_KERNEL(iron_add, n4097, {f32}, {f16}, {bf16}) { return binary_case(dt, 4097, false); }
IRON_TEST_KERNEL(iron_mul, n1000, {f32}, {f16}, {bf16}) { return binary_case(dt, 1000, true); }
IRON_TEST_KERNEL(iron_mul, n65537, {f32}, {f16}, {bf16}) { return binary_case(dt, 65537, true); }
IRON_TEST_KERNEL(iron_mul, n1005, {f32}, {f16}, {bf16}) { return binary_case(dt, 1005, true); }
// Every tail length 0..7 (n = 64 + r; the grid overshoots, so n = 64 has a tail thread with
// nothing to do): each tail guard, tail index and tail store is exercised by one of them.
IRON_TEST_KERNEL(iron_add, tail0_n64, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 0, false); }
IRON_TEST_KERNEL(iron_add, tail2_n66, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 2, false); }
IRON_TEST_KERNEL(iron_add, tail4_n68, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 4, false); }
IRON_TEST_KERNEL(iron_add, tail5_n69, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 5, false); }
IRON_TEST_KERNEL(iron_add, tail6_n70, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 6, false); }
IRON_TEST_KERNEL(iron_add, tail7_n71, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 7, false); }
IRON_TEST_KERNEL(iron_mul, tail2_n66, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 2, true); }
IRON_TEST_KERNEL(iron_mul, tail3_n67, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 3, true); }
IRON_TEST_KERNEL(iron_mul, tail4_n68, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 4, true); }
IRON_TEST_KERNEL(iron_mul, tail6_n70, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 6, true); }
IRON_TEST_KERNEL(iron_mul, tail7_n71, {f32}, {f16}, {bf16}) { return binary_tail_case(dt, 7, true); }
IRON_TEST_KERNEL(iron_add, n1001_extreme, {f32}, {f16}, {bf16}) { return binary_extreme_case(dt, 1001, false); }
IRON_TEST_KERNEL(iron_mul, n1001_extreme, {f32}, {f16}, {bf16}) { return binary_extreme_case(dt, 1001, true); }

// Selectors: the logical call {n} (per_thread.hpp: 8 elements per thread).
static LaunchPlan add_for(const Call& call, const DeviceInfo& dev) { return per_thread_plan("iron_add", "iron_add", call, dev); }
static LaunchPlan mul_for(const Call& call, const DeviceInfo& dev) { return per_thread_plan("iron_mul", "iron_mul", call, dev); }
IRON_SELECTOR(iron_add, add_for);
IRON_SELECTOR(iron_mul, mul_for);

// A case through the selector, from the grid case's inputs and oracle.
static TestSetup binary_call_case(DType dt, uint32_t n, bool multiply) {
  TestSetup t = binary_case(dt, n, multiply);
  return TestSetup(dt)
      .in("a", t.inputs().at("a"))
      .in("b", t.inputs().at("b"))
      .out("out", n)
      .call({{"n", n}})
      .accumulation(1)
      .error_floor(t.floor())
      .oracle(t.oracle_fn());
}
// guards: the selector's launch of a call with a tail of 5 (n = 8 * 125 + 5) over several threadgroups
IRON_TEST_KERNEL(iron_add, call_n1005, {f32}, {f16}, {bf16}) { return binary_call_case(dt, 1005, false); }
// guards: the selector's launch of a call with a tail of 3 (n = 8 * 125 + 3)
IRON_TEST_KERNEL(iron_mul, call_n1003, {f32}, {f16}, {bf16}) { return binary_call_case(dt, 1003, true); }

}  // namespace iron::kernels

// Benchmarks: residual-add shapes (tokens x hidden) from decode to long prefill. Memory bound:
// 3 n elements move (two reads, one write), n FLOPs.
namespace iron::kernels {
static BenchSetup binary_bench(DType dt, uint32_t n, bool multiply) {
  TestSetup t = binary_case(dt, n, multiply);
  BenchSetup b(dt);
  b.in("a", t.inputs().at("a")).in("b", t.inputs().at("b")).out("out", n).constexprs({{"n", n}});
  b.grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn());
  return b.bytes(3.0 * n * dtype_size(dt)).flops(n).sweep(multiply ? "iron_mul" : "iron_add", n);
}
IRON_BENCH(iron_add, n4096, {f32, 1e-6}, {f16, 1e-3}, {bf16, 8e-3}) { return binary_bench(dt, 4096, false); }
IRON_BENCH(iron_add, n262144, {f32, 1e-6}, {f16, 1e-3}, {bf16, 8e-3}) { return binary_bench(dt, 1u << 18, false); }
IRON_BENCH(iron_add, n4m, {f32, 1e-6}, {f16, 1e-3}, {bf16, 8e-3}) { return binary_bench(dt, 1u << 22, false); }
IRON_BENCH(iron_add, n16m, {f32, 1e-6}, {f16, 1e-3}, {bf16, 8e-3}) { return binary_bench(dt, 1u << 24, false); }
IRON_BENCH(iron_add, n64m, {f32, 1e-6}, {f16, 1e-3}, {bf16, 8e-3}) { return binary_bench(dt, 1u << 26, false); }
IRON_BENCH(iron_mul, n16m, {f32, 1e-6}, {f16, 1e-3}, {bf16, 8e-3}) { return binary_bench(dt, 1u << 24, true); }
// 1 Gi elements (2^30, issue 9's streaming size), launched by the family's selector: 6 GiB
// move at bf16.
static BenchSetup binary_call_bench(DType dt, uint32_t n, bool multiply) {
  TestSetup t = binary_case(dt, n, multiply);
  BenchSetup b(dt);
  b.in("a", t.inputs().at("a")).in("b", t.inputs().at("b")).out("out", n).call({{"n", n}}).oracle(t.oracle_fn());
  return b.bytes(3.0 * n * dtype_size(dt)).flops(n);
}
IRON_BENCH(iron_add, n1g, {bf16, 8e-3}) { return binary_call_bench(dt, 1u << 30, false); }
IRON_BENCH(iron_mul, n1g, {bf16, 8e-3}) { return binary_call_bench(dt, 1u << 30, true); }
}  // namespace iron::kernels
