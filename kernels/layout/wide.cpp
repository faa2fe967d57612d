// 64-bit indexing (docs/dsl.md, "64-bit indexing"): a strided gather and scatter whose sizes
// are u64 scalar parameters, whose start and step are i64 ones (a negative step walks
// backwards), whose thread index is thread_id64 and whose element indices are i64. Nothing in
// them is 32-bit, so they take buffers beyond 2^32 elements and dispatches of more than
// 2^32 - 1 threads. Dispatch: one element per thread, grid = {ceil(n / 64)} x {64}.
#include <cstdint>
#include <vector>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

// out[i] = x[start + i * step] for i < n.
static void gather64() {
  Expr n = constexpr_("n", u64);
  Expr len = constexpr_("len", u64);
  Expr start = constexpr_("start", i64);
  Expr step = constexpr_("step", i64);
  Buffer x = input("x", T, {len});
  Buffer out = output("out", T, {n});
  Expr i = thread_id64(0);
  if_(i < n, [&] { out[i] = x[start + cast<i64>(i) * step]; });
}
IRON_KERNEL(iron_gather64, gather64, Elementwise, f32, f16, u8, i64);

// out[start + i * step] = x[i] for i < n.
static void scatter64() {
  Expr n = constexpr_("n", u64);
  Expr len = constexpr_("len", u64);
  Expr start = constexpr_("start", i64);
  Expr step = constexpr_("step", i64);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {len});
  Expr i = thread_id64(0);
  if_(i < n, [&] { out[start + cast<i64>(i) * step] = x[i]; });
}
IRON_KERNEL(iron_scatter64, scatter64, Elementwise, f32, f16, u8, i64);

namespace {

std::vector<double> values(DType dt, uint64_t count, uint64_t seed) {
  if (dt == DType::U8) {
    std::vector<double> v = fixture::uniform(count, 0, 255, seed);
    for (double& e : v) e = double(uint64_t(e));
    return v;
  }
  if (dt == DType::I64) {  // beyond 32 bits, within the f64 fixtures' exact range
    std::vector<double> v = fixture::uniform(count, -0x1p50, 0x1p50, seed);
    for (double& e : v) e = double(int64_t(e));
    return v;
  }
  return fixture::uniform(count, -4, 4, seed);
}

// A gather of n elements from a source of len, from `start` by `step`.
TestSetup gather_case(DType dt, uint64_t n, uint64_t len, int64_t start, int64_t step) {
  return TestSetup(dt)
      .in("x", values(dt, len, 61))
      .out("out", n)
      .constexprs({{"n", (unsigned long long)n}, {"len", (unsigned long long)len}, {"start", (long long)start},
                   {"step", (long long)step}})
      .grid({uint32_t((n + 63) / 64), 1, 1}, {64, 1, 1})
      .oracle([n, start, step](const Tensors& in, Tensors& out) {
        for (uint64_t i = 0; i < n; ++i) out.at("out")[i] = in.at("x")[size_t(start + int64_t(i) * step)];
      });
}

// A scatter that writes every element of out (a permutation: step coprime to len, indices
// taken modulo len by choosing start and step so they stay in range).
TestSetup scatter_case(DType dt, uint64_t n, int64_t start, int64_t step) {
  return TestSetup(dt)
      .in("x", values(dt, n, 62))
      .out("out", n)
      .constexprs({{"n", (unsigned long long)n}, {"len", (unsigned long long)n}, {"start", (long long)start},
                   {"step", (long long)step}})
      .grid({uint32_t((n + 63) / 64), 1, 1}, {64, 1, 1})
      .oracle([n, start, step](const Tensors& in, Tensors& out) {
        for (uint64_t i = 0; i < n; ++i) out.at("out")[size_t(start + int64_t(i) * step)] = in.at("x")[i];
      });
}

}  // namespace

// Backwards by 3 from the last element; forwards by 2 from an offset; a single element.
IRON_TEST_KERNEL(iron_gather64, back_by_3, {f32}, {f16}, {u8}, {i64}) { return gather_case(dt, 333, 1000, 999, -3); }
IRON_TEST_KERNEL(iron_gather64, forward_by_2, {f32}, {u8}, {i64}) { return gather_case(dt, 200, 1000, 7, 2); }
IRON_TEST_KERNEL(iron_gather64, one, {f32}) { return gather_case(dt, 1, 5, 4, 0); }
// Reversal: out[n - 1 - i] = x[i].
IRON_TEST_KERNEL(iron_scatter64, reverse, {f32}, {f16}, {u8}, {i64}) { return scatter_case(dt, 1003, 1002, -1); }
IRON_TEST_KERNEL(iron_scatter64, identity, {f32}, {i64}) { return scatter_case(dt, 130, 0, 1); }

}  // namespace iron::kernels
