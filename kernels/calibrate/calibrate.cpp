// Calibration kernels for `iron calibrate` (src/harness/calibrate.cpp): a streaming copy that
// measures the device's sustainable memory bandwidth, and independent f32 fma chains that
// measure its FMA rate. They are ordinary registered kernels, tested against oracles like the rest.
#include "../elementwise/per_thread.hpp"

namespace iron::kernels {
using namespace iron::dsl;

// out[i] = x[i], 8 elements per thread (the vectorized path of per_thread.hpp).
// Dispatch: grid = {groups_for(n, tg), 1, 1}, threadgroup = {tg, 1, 1}.
static void calib_copy() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  for_each_owned_element(n, [&](Expr i) { out[i] = x[i]; });
}
IRON_KERNEL(iron_calib_copy, calib_copy, Elementwise);

// Per thread: kFmaChains independent accumulators, each advanced kFmaRounds times per loop trip
// by acc = fma(acc, a, b); `iters` trips. Independent chains hide the fma latency, so the rate
// is the pipe's throughput. a and b are dispatch scalars, so no compiler can fold the chain.
// FLOPs per thread: 2 * kFmaChains * kFmaRounds * iters. Dispatch: n threads, one per output.
constexpr uint32_t kFmaChains = 8;
constexpr uint32_t kFmaRounds = 4;
static void calib_fma() {
  Expr n = constexpr_("n", u32);
  Expr iters = constexpr_("iters", u32);
  Expr a = constexpr_("a", f32);
  Expr b = constexpr_("b", f32);
  Buffer out = output("out", f32, {n});
  Expr t = thread_id(0);
  // Different starting points per chain and per thread (t mod 16), so the output depends on both.
  Expr seed = cast<f32>(t & 15u) * 0.0625f;
  Var<f32> c0 = seed, c1 = seed + 0.125f, c2 = seed + 0.25f, c3 = seed + 0.375f;
  Var<f32> c4 = seed + 0.5f, c5 = seed + 0.625f, c6 = seed + 0.75f, c7 = seed + 0.875f;
  VarBase* chains[kFmaChains] = {&c0, &c1, &c2, &c3, &c4, &c5, &c6, &c7};
  for_(0u, iters, [&](Expr) {
    for (uint32_t r = 0; r < kFmaRounds; ++r)
      for (VarBase* c : chains) *c = fma(*c, a, b);
  });
  if_(t < n, [&] { out[t] = ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)); });
}
IRON_KERNEL(iron_calib_fma, calib_fma, Elementwise);

static TestSetup copy_case(DType dt, uint32_t n) {
  return TestSetup(dt)
      .in("x", fixture::uniform(n, -4.0, 4.0, 41))
      .out("out", n)
      .constexprs({{"n", n}})
      .grid({groups_for(n, 256), 1, 1}, {256, 1, 1})
      .oracle([](const Tensors& in, Tensors& out) { out.at("out") = in.at("x"); });  // exact: tolerance 1/2 ulp
}
// A partial run (4097 = 512 * 8 + 1) and threads past the end.
IRON_TEST_KERNEL(iron_calib_copy, n4097, {f32}) { return copy_case(dt, 4097); }
// Every other tail length (n = 64 + r): each tail guard and tail index is exercised.
IRON_TEST_KERNEL(iron_calib_copy, tail0_n64, {f32}) { return copy_case(dt, 64); }
IRON_TEST_KERNEL(iron_calib_copy, tail2_n66, {f32}) { return copy_case(dt, 66); }
IRON_TEST_KERNEL(iron_calib_copy, tail3_n67, {f32}) { return copy_case(dt, 67); }
IRON_TEST_KERNEL(iron_calib_copy, tail4_n68, {f32}) { return copy_case(dt, 68); }
IRON_TEST_KERNEL(iron_calib_copy, tail5_n69, {f32}) { return copy_case(dt, 69); }
IRON_TEST_KERNEL(iron_calib_copy, tail6_n70, {f32}) { return copy_case(dt, 70); }
IRON_TEST_KERNEL(iron_calib_copy, tail7_n71, {f32}) { return copy_case(dt, 71); }

// The oracle runs the same chain in f64. a = 1 - 2^-10 contracts the error of every step, so
// the f32 result stays within a few ulp of it however long the chain; the derived tolerance
// counts every fma of one chain and the 8-term sum.
static TestSetup fma_case(DType dt, uint32_t n, uint32_t iters) {
  const double a = 1.0 - 1.0 / 1024, b = 1.0 / 1024;
  return TestSetup(dt)
      .out("out", n)
      .constexprs({{"n", n}, {"iters", iters}, {"a", a}, {"b", b}})
      .grid({(n + 63) / 64, 1, 1}, {64, 1, 1})
      .accumulation(double(iters) * kFmaRounds + kFmaChains)
      .oracle([n, iters, a, b](const Tensors&, Tensors& out) {
        auto& o = out.at("out");
        for (uint32_t t = 0; t < n; ++t) {
          double sum = 0;
          for (uint32_t c = 0; c < kFmaChains; ++c) {
            double acc = (t & 15u) * 0.0625 + c * 0.125;
            for (uint32_t k = 0; k < iters * kFmaRounds; ++k) acc = acc * a + b;
            sum += acc;
          }
          o[t] = sum;
        }
      });
}
// 100 threads: a partial threadgroup (the guard on the store) and every t mod 16.
IRON_TEST_KERNEL(iron_calib_fma, n100_iters16, {f32}) { return fma_case(dt, 100, 16); }

}  // namespace iron::kernels
