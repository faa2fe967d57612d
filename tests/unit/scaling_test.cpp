// Pipeline scaling: the whole optimization pipeline (and the verifier, printer and parser) on a
// 200,000-op kernel must finish within a bound that only near-linear passes meet. A quadratic
// pass (value_sink took 107 s here at this size) fails it by two orders of magnitude.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "passes/pass.hpp"

using namespace iron;

namespace {

// A straight-line Elementwise kernel of about `ops` instructions in its entry block: repeated
// groups of constants, arithmetic chains, values used only inside a later if (value_sink),
// redundant expressions (cse), identities (algebraic_simplify), and a short constant loop
// (unroll). Written as text so the parser is exercised at the same size.
std::string big_kernel_text(size_t ops) {
  std::string s =
      "kernel scaling mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param a: in buf<f32> extent=n\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = param<n> : u32\n"
      "  %2 = lt %0, %1 : bool\n"
      "  if %2 {\n"
      "    %3 = load<a> %0 : f32\n"
      "    store<out> %0, %3\n"
      "  }\n"
      "  %4 = const<0> : u32\n"
      "  %5 = load<a> %4 : f32\n";
  size_t v = 6, prev = 5, emitted = 10;
  auto def = [&](const std::string& rhs) {
    s += "  %" + std::to_string(v) + " = " + rhs + "\n";
    ++emitted;
    return v++;
  };
  for (size_t g = 0; emitted < ops; ++g) {
    size_t c = def("const<" + std::to_string(1 + g % 7) + ".5> : f32");
    size_t m = def("mul %" + std::to_string(prev) + ", %" + std::to_string(c) + " : f32");
    size_t m2 = def("mul %" + std::to_string(prev) + ", %" + std::to_string(c) + " : f32");  // cse
    size_t z = def("const<0> : f32");
    size_t a = def("add %" + std::to_string(m) + ", %" + std::to_string(z) + " : f32");  // x + 0
    size_t d = def("sub %" + std::to_string(a) + ", %" + std::to_string(m2) + " : f32");
    size_t e = def("add %" + std::to_string(d) + ", %5 : f32");  // used only in the if below
    s += "  if %2 {\n    store<out> %0, %" + std::to_string(e) + "\n  }\n";
    emitted += 2;
    if (g % 64 == 0) {
      size_t b = def("const<0> : u32"), en = def("const<3> : u32"), st = def("const<1> : u32");
      s += "  %" + std::to_string(v) + " = for %" + std::to_string(b) + ", %" + std::to_string(en) + ", %" +
           std::to_string(st) + " : u32 {\n    store<out> %" + std::to_string(v) + ", %" + std::to_string(e) +
           "\n  }\n";
      ++v;
      emitted += 2;
    }
    prev = a;
  }
  s += "}\n";
  return s;
}

// The other shape: mutable locals stored in ifs (copy_prop, if_conversion, dead_store_elim),
// loops with a dispatch-time bound whose bodies hold invariant arithmetic (licm) and loads,
// and nested ifs a few levels deep.
std::string loopy_kernel_text(size_t ops) {
  std::string s =
      "kernel scaling_loops mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param a: in buf<f32> extent=n\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = param<n> : u32\n"
      "  %2 = lt %0, %1 : bool\n"
      "  %3 = const<0> : u32\n"
      "  %4 = const<1> : u32\n"
      "  %5 = const<2.5> : f32\n";
  size_t v = 6, emitted = 10;
  auto name = [](size_t x) { return "%" + std::to_string(x); };
  while (emitted < ops) {
    size_t var = v++, ld = v++, sum = v++, loop = v++, inv = v++, body_ld = v++, prod = v++, fin = v++, inner = v++, fwd = v++;
    s += "  " + name(var) + " = var %5 : f32\n";
    s += "  if %2 {\n    " + name(ld) + " = load<a> %0 : f32\n    " + name(sum) + " = add " + name(ld) +
         ", %5 : f32\n    var_store " + name(var) + ", " + name(sum) + "\n    " + name(fwd) + " = var_load " + name(var) +
         " : f32\n    if %2 {\n      " + name(inner) + " = mul " + name(fwd) + ", %5 : f32\n      var_store " + name(var) + ", " + name(inner) + "\n    }\n  }\n";
    s += "  " + name(loop) + " = for %3, %1, %4 : u32 {\n    " + name(inv) + " = mul %5, %5 : f32\n    " + name(body_ld) +
         " = load<a> " + name(loop) + " : f32\n    " + name(prod) + " = mul " + name(inv) + ", " + name(body_ld) +
         " : f32\n    store<out> " + name(loop) + ", " + name(prod) + "\n  }\n";
    s += "  " + name(fin) + " = var_load " + name(var) + " : f32\n  store<out> %0, " + name(fin) + "\n";
    emitted += 16;
  }
  s += "}\n";
  return s;
}

// The third shape: groups of four adjacent loads and stores (vectorize, schedule), integer
// address arithmetic (cse, const_fold) and dead variable stores (dead_store_elim).
std::string vector_kernel_text(size_t ops) {
  std::string s =
      "kernel scaling_vectors mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param a: in buf<f32> extent=n\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<4> : u32\n"
      "  %2 = mul %0, %1 : u32\n"
      "  %3 = const<0.0> : f32\n"
      "  %4 = var %3 : f32\n";
  size_t v = 5, emitted = 5;
  auto name = [](size_t x) { return "%" + std::to_string(x); };
  while (emitted < ops) {
    size_t base = v;
    s += "  " + name(v) + " = const<" + std::to_string(emitted % 1000 * 4) + "> : u32\n";
    s += "  " + name(v + 1) + " = add %2, " + name(v) + " : u32\n";
    size_t idx[4], ld[4];
    v += 2;
    for (int j = 0; j < 4; ++j) {
      size_t c = v++;
      s += "  " + name(c) + " = const<" + std::to_string(j) + "> : u32\n";
      idx[j] = v++;
      s += "  " + name(idx[j]) + " = add " + name(base + 1) + ", " + name(c) + " : u32\n";
      ld[j] = v++;
      s += "  " + name(ld[j]) + " = load<a> " + name(idx[j]) + " : f32\n";
    }
    for (int j = 0; j < 4; ++j) s += "  store<out> " + name(idx[j]) + ", " + name(ld[3 - j]) + "\n";
    s += "  var_store %4, " + name(ld[0]) + "\n";
    emitted += 19;
  }
  s += "}\n";
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

class Scaling : public ::testing::TestWithParam<int> {};

TEST_P(Scaling, PipelineOn200kOpsIsNearLinear) {
  const char* env = std::getenv("IRON_SCALING_OPS");  // to measure growth by hand
  const size_t size = env && *env ? size_t(std::strtoull(env, nullptr, 10)) : 200000;
  std::string text = GetParam() == 0   ? big_kernel_text(size)
                     : GetParam() == 1 ? loopy_kernel_text(size)
                                       : vector_kernel_text(size);
  auto t0 = std::chrono::steady_clock::now();
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics d;
  ASSERT_TRUE(ir::verify(k, d)) << d.render(k);
  size_t before = passes::op_count(k);
  ASSERT_GE(before, size);
  passes::PipelineOptions opts;
  opts.time_passes = true;
  passes::PipelineResult r = passes::run_pipeline(k, opts);
  ASSERT_TRUE(r.ok()) << r.diags.render(k);
  ASSERT_TRUE(ir::verify(k, d)) << d.render(k);
  std::string printed = ir::print(k);
  double total = seconds_since(t0);
  std::string per_pass;
  for (const passes::PassRecord& p : r.passes) per_pass += "  " + p.name + ": " + std::to_string(p.ms) + " ms\n";
  // About 1 s on the 2-core CI machine under load; a quadratic pass takes minutes. The bound
  // leaves room for a slow, shared machine without letting O(n^2) through.
  EXPECT_LT(total, 10.0) << before << " ops, parse + verify + pipeline + print took " << total << " s\n" << per_pass;
  std::printf("%zu ops -> %zu ops: %.2f s (parse, verify, pipeline, print)\n%s", before, passes::op_count(k), total,
              per_pass.c_str());
  // The pipeline did its work at this size (straight line: values sunk, loops unrolled; loops:
  // invariants hoisted, stored values forwarded).
  auto changed = [&](const char* pass) {
    for (const passes::PassRecord& p : r.passes)
      if (p.name == pass) return p.changed;
    return false;
  };
  if (GetParam() == 0) {
    EXPECT_TRUE(changed("value_sink"));
    EXPECT_TRUE(changed("unroll"));
  } else if (GetParam() == 1) {
    EXPECT_TRUE(changed("licm"));
    EXPECT_TRUE(changed("copy_prop"));
  } else {
    EXPECT_TRUE(changed("vectorize"));
    EXPECT_TRUE(changed("dead_store_elim"));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Scaling, ::testing::Values(0, 1, 2), [](const auto& info) {
  return std::string(info.param == 0 ? "straight_line" : info.param == 1 ? "loops_and_locals" : "vector_groups");
});

// A chain of 100,000 single-use values: fusion used to inline it into one expression, which the
// emitter rebuilt as a string at every step (quadratic) and a GPU compiler would have to parse
// 100,000 parentheses deep. Fused chains are capped, so emission stays linear.
TEST(Scaling, LongChainEmitsInLinearTime) {
  std::string s;
  s = "kernel chain mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param a: in buf<f32> extent=n\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<a> %0 : f32\n";
  const size_t n = 100000;
  for (size_t i = 0; i < n; ++i)
    s += "  %" + std::to_string(i + 2) + " = mul %" + std::to_string(i + 1) + ", %1 : f32\n";
  s += "  store<out> %0, %" + std::to_string(n + 1) + "\n}\n";
  auto t0 = std::chrono::steady_clock::now();
  ir::Kernel k = passes::optimize(ir::parse(s));
  codegen::Emitted cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  codegen::Emitted glsl = codegen::emit(k, DType::F32, codegen::Target::Glsl);
  double total = seconds_since(t0);
  ASSERT_TRUE(cuda.ok());
  ASSERT_TRUE(glsl.ok());
  size_t deepest = 0, open = 0;
  for (char c : cuda.source) {
    if (c == '(') deepest = std::max(deepest, ++open);
    if (c == ')') --open;
  }
  std::printf("100k-op chain: optimize + emit %.2f s, %zu bytes of CUDA, parentheses %zu deep\n", total,
              cuda.source.size(), deepest);
  EXPECT_LT(total, 10.0);
  EXPECT_LT(deepest, 64u);
}

// 25,000 calls of a device function (about 200,000 ops once inlined): kernel_inline used to
// splice each body into the block and redirect the call's uses over the whole kernel, per call.
TEST(Scaling, InliningManyCallsIsNearLinear) {
  std::string s =
      "kernel calls mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param a: in buf<f32> extent=n\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<a> %0 : f32\n";
  const size_t calls = 25000;
  for (size_t i = 0; i < calls; ++i)
    s += "  %" + std::to_string(i + 2) + " = call<iron_sigmoid> %" + std::to_string(i + 1) + " : f32\n";
  s += "  store<out> %0, %" + std::to_string(calls + 1) + "\n}\n";
  ir::Kernel k = ir::parse(s);
  auto t0 = std::chrono::steady_clock::now();
  passes::PipelineOptions opts;
  opts.stop_after = "kernel_inline";
  passes::PipelineResult r = passes::run_pipeline(k, opts);
  double total = seconds_since(t0);
  ASSERT_TRUE(r.ok()) << r.diags.render(k);
  size_t ops = passes::op_count(k);
  std::printf("%zu calls inlined into %zu ops in %.2f s\n", calls, ops, total);
  EXPECT_GE(ops, 150000u);
  EXPECT_LT(total, 5.0);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(k, d)) << d.render(k);
}

// A dead chain of 100,000 values (dead_store_elim removed one link per round over the whole
// kernel) and 20,000 ifs on constant conditions (const_fold spliced each into the block).
TEST(Scaling, DeadChainsAndConstantBranchesAreLinear) {
  std::string s =
      "kernel dead mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param out: out buf<u32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<1> : bool\n";
  size_t v = 2;
  for (size_t i = 0; i < 20000; ++i) s += "  if %1 {\n    store<out> %0, %0\n  }\n";
  s += "  %" + std::to_string(v) + " = add %0, %0 : u32\n";
  for (size_t i = 0; i < 100000; ++i, ++v)
    s += "  %" + std::to_string(v + 1) + " = add %" + std::to_string(v) + ", %0 : u32\n";
  s += "}\n";
  ir::Kernel k = ir::parse(s);
  auto t0 = std::chrono::steady_clock::now();
  passes::PipelineResult r = passes::run_pipeline(k);
  double total = seconds_since(t0);
  ASSERT_TRUE(r.ok()) << r.diags.render(k);
  std::printf("dead chain and constant branches: %zu ops left, %.2f s\n", passes::op_count(k), total);
  EXPECT_LT(total, 5.0);
  EXPECT_LE(passes::op_count(k), 20002u);  // the stores stay, the chain and the ifs are gone
}
