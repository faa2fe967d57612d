// Casts between f32, f16, bf16 and f8e4m3: out[i] = x[i] converted, over n elements.
//   iron_cast           x in T, out in W, T and W any of f32, f16, bf16 (T = W is a copy)
//   iron_cast_to_fp8    x in T (f32, f16, bf16), out in f8e4m3
//   iron_cast_from_fp8  x in f8e4m3, out in T (f32, f16, bf16)
// Every ordered pair of distinct dtypes is one of them (an fp8 -> fp8 "cast" is a byte copy).
// One rounding, to nearest even, with the rules of docs/semantics.md: f16 overflow gives +-inf,
// bf16 keeps f32's range, f8e4m3 saturates to +-448 (no infinities), subnormals of the target
// are kept, a NaN stays a NaN. Widening (fp8 -> anything, f16 / bf16 -> f32) is exact.
// 8 elements per thread (per_thread.hpp): a thread whose 8 elements are in range reads and
// writes them as wide accesses (16 bytes of a 16-bit dtype, two of f32; fp8 buffers stay byte
// accesses); the thread that straddles the end guards each element. The fp8 side is a concrete
// dtype of its own kernel so that T and W of iron_cast are all dtypes the vectorize pass groups.
// Dispatch: grid = {groups_for(n, tg), 1, 1} threadgroups of tg threads. Deterministic: each
// output is a function of its input alone.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "per_thread.hpp"

namespace iron::kernels {
using namespace iron::dsl;

static void cast_kernel() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", W, {n});
  for_each_owned_element(n, [&](Expr i) { out[i] = cast<W>(x[i]); });
}
IRON_KERNEL_TW(iron_cast, cast_kernel, Elementwise, (f32, f16, bf16), (f32, f16, bf16));

static void cast_to_fp8() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", f8e4m3, {n});
  for_each_owned_element(n, [&](Expr i) { out[i] = cast<f8e4m3>(x[i]); });
}
IRON_KERNEL(iron_cast_to_fp8, cast_to_fp8, Elementwise, f32, f16, bf16);

static void cast_from_fp8() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f8e4m3, {n});
  Buffer out = output("out", T, {n});
  for_each_owned_element(n, [&](Expr i) { out[i] = cast<T>(x[i]); });
}
IRON_KERNEL(iron_cast_from_fp8, cast_from_fp8, Elementwise, f32, f16, bf16);

namespace {

// A binary float format as the oracle needs it: precision p (significand bits, the implicit one
// included), the smallest normal exponent, the largest finite value, and what lies beyond it.
struct Format {
  int p, emin;
  double max;
  bool saturates;  // f8e4m3: beyond max -> +-max; the others: -> +-inf
};
Format format_of(DType t) {
  switch (t) {
    case DType::F16: return {11, -14, 65504.0, false};
    case DType::BF16: return {8, -126, 0x1.fep127, false};
    case DType::F8E4M3: return {4, -6, 448.0, true};
    default: return {24, -126, double(FLT_MAX), false};
  }
}

// x rounded to the format, to nearest with ties to even, written from the definition: the
// spacing at x's binade (the subnormal spacing below the normal range), nearest multiple of it.
double round_to_format(DType t, double x) {
  const Format f = format_of(t);
  if (x == 0.0) return x;
  int e = std::ilogb(x);
  if (e < f.emin) e = f.emin;
  const double spacing = std::ldexp(1.0, e - f.p + 1);
  const double r = std::nearbyint(x / spacing) * spacing;  // the default mode: ties to even
  if (std::fabs(r) > f.max) return f.saturates ? std::copysign(f.max, x) : std::copysign(INFINITY, x);
  return r == 0.0 ? std::copysign(0.0, x) : r;
}

// Values of T whose cast to W stays finite (an f16 target overflows to inf, which an oracle
// comparison cannot hold; semantics_test covers it): the bulk uniform over the range both
// share (an fp8 target sees values far beyond 448, which saturate), then edge values.
std::vector<double> cast_inputs(DType t, DType w, uint32_t n, uint64_t seed) {
  const double limit = std::min(format_of(t).max, w == DType::F16 ? 60000.0 : 1e30);
  std::vector<double> v = fixture::magnitudes(n, -30, int(std::ilogb(limit)) - 1, seed);
  const std::vector<double> small = fixture::uniform(n / 4, -8.0, 8.0, seed + 1000);
  std::copy(small.begin(), small.end(), v.begin());
  const Format fw = format_of(w), ft = format_of(t);
  // W's subnormals, for the targets whose subnormals are not f32's (f32 subnormals may be
  // flushed by a Vulkan driver: docs/semantics.md#vulkan-drivers); 0.75 for the others.
  const bool sub = fw.emin > -126;
  // Ties at 1: halfway between 1 and 1 + 2^(1-p) and between 1 + 2^(1-p) and 1 + 2^(2-p) (one
  // rounds down to the even 1, the other up), held exactly by any T finer than W.
  const double tie = std::ldexp(1.0, -fw.p);
  std::vector<double> edges = {0.0, -0.0, 1.0, -1.0, 1.0 + tie, -(1.0 + 3 * tie), 1.0 + 1.5 * tie, 1.0 + 0.5 * tie,
                               // the smallest normal of W, a subnormal of W and half its smallest subnormal
                               std::ldexp(1.0, fw.emin), sub ? -std::ldexp(3.0, fw.emin - 3) : -0.75,
                               sub ? std::ldexp(1.0, fw.emin - fw.p) : 0.75, sub ? std::ldexp(1.5, fw.emin - fw.p + 1) : -0.75,
                               // W's largest value, and just beyond it (saturates or stays finite)
                               std::min(fw.max, limit), -std::min(fw.max, limit), std::min(fw.max * 1.03, limit),
                               std::min(fw.max * 4, limit), -limit, limit, 448.0, 464.0, 465.0, -479.0};
  for (size_t k = 0; k < edges.size() && k < n; ++k) v[n / 2 + k] = edges[k];
  // What T holds: the harness rounds each input to T once, so the kernel reads these values;
  // values T cannot reach are clamped to its range and tiny ones below its subnormals vanish.
  host_ranges(v.size(), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) v[i] = round_to_format(t, std::fabs(v[i]) > ft.max ? std::copysign(ft.max, v[i]) : v[i]);
  });
  return v;
}

// The instantiation a from -> to pair runs at: T and W of iron_cast, T alone for the fp8 kernels.
Instantiation cast_instantiation(DType t, DType w) {
  if (w == DType::F8E4M3) return Instantiation(t);
  if (t == DType::F8E4M3) return Instantiation(w);
  return Instantiation(t, w);
}

TestSetup cast_setup(DType t, DType w, std::vector<double> x) {
  const uint32_t n = uint32_t(x.size());
  return TestSetup(cast_instantiation(t, w))
      .in("x", std::move(x))
      .out("out", n)
      .constexprs({{"n", n}})
      .grid({groups_for(n, 256), 1, 1}, {256, 1, 1})
      // One correct rounding: each output is the exactly rounded value (the half ulp the
      // tolerance allows), measured in ulps of itself down to W's subnormal spacing.
      .error_floor(std::ldexp(1.0, format_of(w).emin))
      .oracle([n, w](const Tensors& in, Tensors& out) {
        const auto& v = in.at("x");
        auto& o = out.at("out");
        host_ranges(n, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) o[i] = round_to_format(w, v[i]);
        });
      });
}
TestSetup cast_case(DType t, DType w, uint32_t n) { return cast_setup(t, w, cast_inputs(t, w, n, 91)); }
// n = 64 + r: eight full runs and a tail of r elements whose values round away from zero in W,
// so a store that rounds toward zero fails on each of them.
TestSetup cast_tail_case(DType t, DType w, uint32_t r) {
  const uint32_t n = 64 + r;
  auto x = cast_inputs(t, w, n, 92 + r);
  auto c = fixture::uniform(4096, -8.0, 8.0, 93);
  uint32_t i = 64;
  for (size_t k = 0; k < c.size() && i < n; ++k) {
    const double v = round_to_format(t, c[k]);
    if (fixture::rounds_away(w, v)) x[i++] = v;
  }
  return cast_setup(t, w, std::move(x));
}

}  // namespace

// Every pair, 1003 elements (a tail of 3, a partial last threadgroup): the ranges the two dtypes
// share, saturation to +-448 for an fp8 target, ties to even, subnormals of the target, signed
// zeros.
IRON_TEST_KERNEL(iron_cast, n1003, {{f32, f32}}, {{f32, f16}}, {{f32, bf16}}, {{f16, f32}}, {{f16, f16}}, {{f16, bf16}},
                 {{bf16, f32}}, {{bf16, f16}}, {{bf16, bf16}}) {
  return cast_case(dt, wt, 1003);
}
IRON_TEST_KERNEL(iron_cast_to_fp8, n1003, {f32}, {f16}, {bf16}) { return cast_case(dt, DType::F8E4M3, 1003); }
IRON_TEST_KERNEL(iron_cast_from_fp8, n1003, {f32}, {f16}, {bf16}) { return cast_case(DType::F8E4M3, dt, 1003); }
// Every tail length 0..7 where a store rounds (f32 -> bf16, f16 -> f8e4m3) and where it is exact
// (f8e4m3 -> bf16): each tail guard, tail index and tail store is exercised, and a toward-zero
// rounding of a tail element shows.
IRON_TEST_KERNEL(iron_cast, tail0_n64, {{f32, bf16}}) { return cast_tail_case(dt, wt, 0); }
IRON_TEST_KERNEL(iron_cast, tail1_n65, {{f32, bf16}}) { return cast_tail_case(dt, wt, 1); }
IRON_TEST_KERNEL(iron_cast, tail2_n66, {{f32, bf16}}) { return cast_tail_case(dt, wt, 2); }
IRON_TEST_KERNEL(iron_cast, tail3_n67, {{f32, bf16}}) { return cast_tail_case(dt, wt, 3); }
IRON_TEST_KERNEL(iron_cast, tail4_n68, {{f32, bf16}}) { return cast_tail_case(dt, wt, 4); }
IRON_TEST_KERNEL(iron_cast, tail5_n69, {{f32, bf16}}) { return cast_tail_case(dt, wt, 5); }
IRON_TEST_KERNEL(iron_cast, tail6_n70, {{f32, bf16}}) { return cast_tail_case(dt, wt, 6); }
IRON_TEST_KERNEL(iron_cast, tail7_n71, {{f32, bf16}}) { return cast_tail_case(dt, wt, 7); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail0_n64, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 0); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail1_n65, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 1); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail2_n66, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 2); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail3_n67, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 3); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail4_n68, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 4); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail5_n69, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 5); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail6_n70, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 6); }
IRON_TEST_KERNEL(iron_cast_to_fp8, tail7_n71, {f16}) { return cast_tail_case(dt, DType::F8E4M3, 7); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail0_n64, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 0); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail1_n65, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 1); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail2_n66, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 2); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail3_n67, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 3); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail4_n68, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 4); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail5_n69, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 5); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail6_n70, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 6); }
IRON_TEST_KERNEL(iron_cast_from_fp8, tail7_n71, {bf16}) { return cast_tail_case(DType::F8E4M3, dt, 7); }

// Selectors: the logical call {n} at the pair's instantiation (per_thread.hpp: 8 elements per
// thread); a device without f16, bf16 or 8-bit buffers refuses a pair that needs them.
static LaunchPlan cast_for(const Call& call, const DeviceInfo& dev) { return per_thread_plan("iron_cast", "iron_cast", call, dev); }
static LaunchPlan cast_to_fp8_for(const Call& call, const DeviceInfo& dev) {
  Call c = call;
  c.dtype.w = DType::F8E4M3;  // the output's dtype, for the device check
  return per_thread_plan("iron_cast_to_fp8", "iron_cast_to_fp8", c, dev);
}
static LaunchPlan cast_from_fp8_for(const Call& call, const DeviceInfo& dev) {
  Call c = call;
  c.dtype.w = DType::F8E4M3;  // the input's dtype, for the device check
  return per_thread_plan("iron_cast_from_fp8", "iron_cast_from_fp8", c, dev);
}
IRON_SELECTOR(iron_cast, cast_for);
IRON_SELECTOR(iron_cast_to_fp8, cast_to_fp8_for);
IRON_SELECTOR(iron_cast_from_fp8, cast_from_fp8_for);

namespace {
TestSetup cast_call_case(DType t, DType w, uint32_t n) {
  TestSetup g = cast_case(t, w, n);
  return TestSetup(g.instantiation()).in("x", g.inputs().at("x")).out("out", n).call({{"n", n}}).error_floor(g.floor()).oracle(g.oracle_fn());
}
}  // namespace
// guards: each family's launch by its selector, at a call with a tail of 5 (n = 8 * 62 + 5)
IRON_TEST_KERNEL(iron_cast, call_n501, {{f32, bf16}}, {{bf16, f16}}, {{f16, f32}}) { return cast_call_case(dt, wt, 501); }
IRON_TEST_KERNEL(iron_cast_to_fp8, call_n501, {f32}, {bf16}) { return cast_call_case(dt, DType::F8E4M3, 501); }
IRON_TEST_KERNEL(iron_cast_from_fp8, call_n501, {f16}, {bf16}) { return cast_call_case(DType::F8E4M3, dt, 501); }

// Benchmarks: converting a [4096, 11008] activation and a 1 Gi element tensor. Bytes: n of the
// source dtype read and n of the target written.
namespace {
// `call`: launched by the family's selector rather than a fixed grid.
BenchSetup cast_bench(DType t, DType w, uint32_t n, bool call = false) {
  TestSetup s = cast_case(t, w, n);
  BenchSetup b(s.instantiation());
  b.in("x", s.inputs().at("x")).out("out", n).oracle(s.oracle_fn()).error_floor(s.floor());
  if (call) b.call({{"n", n}});
  else b.constexprs(s.scalars()).grid(s.grid_size(), s.threadgroup());
  return b.bytes(double(n) * (dtype_size(t) + dtype_size(w))).flops(0);
}
}  // namespace
// Exact: a cast is one correct rounding, which the oracle computes.
IRON_BENCH(iron_cast, t4096_h11008, {{f32, bf16}, 0.0}, {{bf16, f32}, 0.0}, {{f16, bf16}, 0.0}) {
  return cast_bench(dt, wt, 4096u * 11008u);
}
// 64 Mi elements (2^26) per pair, by the selector.
IRON_BENCH(iron_cast, n64m, {{f32, f16}, 0.0}, {{f32, bf16}, 0.0}, {{f16, f32}, 0.0}, {{f16, bf16}, 0.0}, {{bf16, f32}, 0.0},
           {{bf16, f16}, 0.0}) {
  return cast_bench(dt, wt, 1u << 26, true);
}
IRON_BENCH(iron_cast_to_fp8, n64m, {f32, 0.0}, {f16, 0.0}, {bf16, 0.0}) { return cast_bench(dt, DType::F8E4M3, 1u << 26, true); }
IRON_BENCH(iron_cast_from_fp8, n64m, {f32, 0.0}, {f16, 0.0}, {bf16, 0.0}) { return cast_bench(DType::F8E4M3, dt, 1u << 26, true); }
IRON_BENCH(iron_cast_to_fp8, n1g, {bf16, 0.0}) { return cast_bench(dt, DType::F8E4M3, 1u << 30, true); }
IRON_BENCH(iron_cast_from_fp8, n1g, {bf16, 0.0}) { return cast_bench(DType::F8E4M3, dt, 1u << 30, true); }

}  // namespace iron::kernels
