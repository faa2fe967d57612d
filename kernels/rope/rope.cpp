// Rotary position embedding over x of shape [tokens, heads, head_dim], rotating the two halves
// of each head ("rotate half"): with h = head_dim / 2 and i < h,
//   out[t, n, i]     = x[t, n, i] * cos[t, i] - x[t, n, i + h] * sin[t, i]
//   out[t, n, i + h] = x[t, n, i + h] * cos[t, i] + x[t, n, i] * sin[t, i]
// cos and sin are the caller's f32 tables of shape [tokens, h] (the angles depend on the
// position and the frequency base, which are the caller's choice). Mode Grid3D: one thread per
// (i, head, token), thread_id(0) = i, (1) = head, (2) = token; f32 arithmetic, one rounding to T.
// Dispatch: grid = {ceil(h / tg.x), ceil(heads / tg.y), ceil(tokens / tg.z)} with any
// threadgroup, e.g. {64, 4, 1}.
#include <cmath>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

static void rope() {
  Expr tokens = constexpr_("tokens", u32);
  Expr heads = constexpr_("heads", u32);
  Expr half = constexpr_("half", u32);  // head_dim / 2
  Buffer x = input("x", T, {tokens, heads, half, 2});
  Buffer cos_table = input("cos", f32, {tokens, half});
  Buffer sin_table = input("sin", f32, {tokens, half});
  Buffer out = output("out", T, {tokens, heads, half, 2});

  Expr i = thread_id(0), head = thread_id(1), token = thread_id(2);
  if_(i < half && head < heads && token < tokens, [&] {
    Expr lo = (token * heads + head) * (half * 2u) + i;  // element i of this head
    Expr hi = lo + half;                                  // its partner in the second half
    Expr angle = token * half + i;
    Expr c = cast<f32>(cos_table[angle]);
    Expr s = cast<f32>(sin_table[angle]);
    Expr a = cast<f32>(x[lo]);
    Expr b = cast<f32>(x[hi]);
    out[lo] = cast<T>(a * c - b * s);
    out[hi] = cast<T>(b * c + a * s);
  });
}
IRON_KERNEL(iron_rope, rope, Grid3D, f32, f16, bf16);

// The tables of a model with frequency base `base`: angle(t, i) = t * base^(-i / h), rounded to
// f32 as a caller would store them.
static void rope_tables(uint32_t tokens, uint32_t half, double base, std::vector<double>& cos_t,
                        std::vector<double>& sin_t) {
  cos_t.resize(size_t(tokens) * half);
  sin_t.resize(size_t(tokens) * half);
  for (uint32_t t = 0; t < tokens; ++t)
    for (uint32_t i = 0; i < half; ++i) {
      double angle = double(t) * std::pow(base, -double(i) / half);
      cos_t[size_t(t) * half + i] = double(float(std::cos(angle)));
      sin_t[size_t(t) * half + i] = double(float(std::sin(angle)));
    }
}

// Tolerance (derived): two products and a sum (or an fma and a product) in f32, then the store's
// rounding. The products can cancel: |a c| + |b s| <= sqrt(a^2 + b^2) <= 4 sqrt(2) with |x| <= 4,
// so against a floor of 1 the f32 error is at most about 3 * 5.7 / 2 ulps; 12 covers it.
static TestSetup rope_setup(DType dt, uint32_t tokens, uint32_t heads, uint32_t half, Dim3 tg, std::vector<double> x) {
  std::vector<double> cos_t, sin_t;
  rope_tables(tokens, half, 10000.0, cos_t, sin_t);
  Dim3 grid{(half + tg.x - 1) / tg.x, (heads + tg.y - 1) / tg.y, (tokens + tg.z - 1) / tg.z};
  return TestSetup(dt)
      .in("x", std::move(x))
      .in("cos", cos_t)
      .in("sin", sin_t)
      .out("out", size_t(tokens) * heads * half * 2)
      .constexprs({{"tokens", tokens}, {"heads", heads}, {"half", half}})
      .grid(grid, tg)
      .accumulation(12)
      .oracle([tokens, heads, half](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        const auto& c = in.at("cos");
        const auto& s = in.at("sin");
        auto& o = out.at("out");
        for (uint32_t t = 0; t < tokens; ++t)
          for (uint32_t n = 0; n < heads; ++n)
            for (uint32_t i = 0; i < half; ++i) {
              size_t lo = (size_t(t) * heads + n) * 2 * half + i, hi = lo + half, a = size_t(t) * half + i;
              o[lo] = x[lo] * c[a] - x[hi] * s[a];
              o[hi] = x[hi] * c[a] + x[lo] * s[a];
            }
      });
}
static TestSetup rope_case(DType dt, uint32_t tokens, uint32_t heads, uint32_t half, Dim3 tg) {
  return rope_setup(dt, tokens, heads, half, tg, fixture::uniform(size_t(tokens) * heads * half * 2, -4.0, 4.0, 61));
}

// Odd sizes on every axis, each with a partial threadgroup: 5 tokens over z groups of 2, 3 heads
// over y groups of 2, half = 5 over x groups of 4 (threads past the end on all three axes).
IRON_TEST_KERNEL(iron_rope, t5_h3_d10, {f32}, {f16}, {bf16}) { return rope_case(dt, 5, 3, 5, {4, 2, 2}); }
// A real head size (128) with 7 tokens and 9 heads; the threadgroup covers half the head.
IRON_TEST_KERNEL(iron_rope, t7_h9_d128, {f32}, {f16}, {bf16}) { return rope_case(dt, 7, 9, 64, {32, 4, 2}); }
// One token, one head, head_dim 2 (a single pair): the smallest shape, on a 1 x 1 x 1 group.
IRON_TEST_KERNEL(iron_rope, t1_h1_d2, {f32}, {f16}, {bf16}) { return rope_case(dt, 1, 1, 1, {1, 1, 1}); }
// Outputs of magnitude 1 and above where the rounding to 16 bits must be to nearest: inputs in
// [1, 4] of one sign per half, so the two products add rather than cancel in the second half.
IRON_TEST_KERNEL(iron_rope, t6_h4_d64_positive, {f32}, {f16}, {bf16}) {
  const uint32_t tokens = 6, heads = 4, half = 32;
  std::vector<double> x = fixture::uniform(size_t(tokens) * heads * half * 2, 1.0, 4.0, 62);
  return rope_setup(dt, tokens, heads, half, {16, 2, 3}, std::move(x));
}

}  // namespace iron::kernels

// Benchmarks: decode (1 token) and prefill (2048 tokens) of a 32-head, head_dim 128 model.
// Memory bound: x in and out once, plus the two f32 tables; 6 FLOPs per pair.
namespace iron::kernels {
static BenchSetup rope_bench(DType dt, uint32_t tokens, uint32_t heads, uint32_t half) {
  TestSetup t = rope_case(dt, tokens, heads, half, {64, 4, 1});
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).in("cos", t.inputs().at("cos")).in("sin", t.inputs().at("sin"));
  b.out("out", size_t(tokens) * heads * half * 2).constexprs(t.scalars());
  b.grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn());
  const double pairs = double(tokens) * heads * half;
  return b.bytes(4.0 * pairs * dtype_size(dt) + 2.0 * tokens * half * 4).flops(6.0 * pairs).sweep("iron_rope_h32_d128", tokens);
}
IRON_BENCH(iron_rope, t1_h32_d128, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rope_bench(dt, 1, 32, 64); }
IRON_BENCH(iron_rope, t2048_h32_d128, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rope_bench(dt, 2048, 32, 64); }
}  // namespace iron::kernels
