// Mutation testing of the kernel corpus: known-bad variants of the seven kernels, traced under the
// real kernel's name and parameters, must fail the real registered test cases on Vulkan while the
// real kernels pass them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "harness/runner.hpp"

using namespace iron;

// --- mutant bodies ----------------------------------------------------------------------------
// Each kernel family has one skeleton copied from its real body (kernels/*/*.cpp) with bug
// switches read at trace time. Parameter names, order, dtypes and extents are the real ones, so
// the registered cases bind unchanged. Configured with the real semantics and no bug, a skeleton is
// a control that must pass the corpus (else the copy has drifted and "caught" would mean nothing).
namespace {
namespace mutants {
using namespace iron::dsl;

// kernels/elementwise/per_thread.hpp: each thread owns 8 consecutive elements; a full run is
// unguarded, the one partial run at the end is guarded per element.
constexpr uint32_t kPerThread = 8;
struct TailBug {
  bool first_only = false;  // the partial run handles only its first element
};
TailBug g_tail;

void for_each_owned(Expr n, FnRef<void(Expr)> body) {
  Expr tid = thread_id(0);
  Expr full_runs = n / kPerThread;
  Expr base = tid * kPerThread;
  if_(tid < full_runs, [&] {
    for (uint32_t e = 0; e < kPerThread; ++e) body(base + e);
  }).else_([&] {
    if_(tid == full_runs, [&] {
      Expr left = n - base;
      for (uint32_t e = 0; e < (g_tail.first_only ? 1 : kPerThread); ++e) if_(e < left, [&] { body(base + e); });
    });
  });
}

// out[i] = g_binary(a[i], b[i]) for iron_add / iron_mul.
Expr (*g_binary)(const ElemRef& a, const ElemRef& b) = nullptr;
void binary_mutant() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  if (!g_binary) throw Error("binary_mutant traced without an element function");
  for_each_owned(n, [&](Expr i) { out[i] = g_binary(a[i], b[i]); });
}

// out[i] = cast<T>(g_unary(cast<f32>(x[i]))) for iron_exp / iron_silu.
Expr (*g_unary)(Expr v) = nullptr;
void unary_mutant() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  if (!g_unary) throw Error("unary_mutant traced without an element function");
  for_each_owned(n, [&](Expr i) { out[i] = cast<T>(g_unary(cast<f32>(x[i]))); });
}

// Not a runnable mutant: storing the f32 result into buf<T> without the cast back.
void exp_no_cast_back() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  for_each_owned(n, [&](Expr i) { out[i] = exp(cast<f32>(x[i])); });
}

struct RmsBug {
  bool no_mean = false;         // sum of squares not divided by d
  bool no_weight = false;       // w dropped from the output
  bool no_eps = false;          // eps dropped
  bool loop_from_zero = false;  // first loop starts at 0, not local_id: every thread sums the same elements
  bool lane_only = false;       // lane_sum instead of group_sum: one lane group's share only
};
RmsBug g_rms;

void rmsnorm_mutant() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Expr eps = constexpr_("eps", f32);
  Buffer x = input("x", T, {rows, d});
  Buffer w = input("w", T, {d});
  Buffer out = output("out", T, {rows, d});

  Expr base = program_id(0) * d;
  Var<f32> sumsq = 0.0f;
  auto accumulate = [&](Expr j) {
    Expr v = cast<f32>(x[base + j]);
    sumsq += v * v;
  };
  // Host `if`: the bug is chosen at trace time.
  if (g_rms.loop_from_zero) for_(0u, d, group_size(0), accumulate);
  else for_(local_id(0), d, group_size(0), accumulate);
  Expr total = g_rms.lane_only ? lane_sum(sumsq) : group_sum(sumsq);
  Expr mean = g_rms.no_mean ? total : total / cast<f32>(d);
  Expr scale = g_rms.no_eps ? rsqrt(mean) : rsqrt(mean + eps);
  for_(local_id(0), d, group_size(0), [&](Expr j) {
    Expr y = cast<f32>(x[base + j]) * scale;
    out[base + j] = cast<T>(g_rms.no_weight ? y : y * cast<f32>(w[j]));
  });
}

struct SoftmaxBug {
  bool no_max = false;           // exp(x) / sum exp(x): overflows f32 once x > ~88
  bool sum_without_max = false;  // numerator shifted by the max, denominator not
  bool thread_max = false;       // each thread's own max instead of the row max
};
SoftmaxBug g_softmax;

void softmax_mutant() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Buffer x = input("x", T, {rows, d});
  Buffer out = output("out", T, {rows, d});

  Expr base = program_id(0) * d;
  Expr row_max;  // not traced at all for no_max
  if (!g_softmax.no_max) {
    Var<f32> local_max = -INFINITY;
    for_(local_id(0), d, group_size(0), [&](Expr j) { local_max = max(local_max, cast<f32>(x[base + j])); });
    row_max = g_softmax.thread_max ? local_max * 1.0f : group_max(local_max);
  }
  auto shifted = [&](Expr v) { return g_softmax.no_max ? v : v - row_max; };

  Var<f32> local_sum = 0.0f;
  for_(local_id(0), d, group_size(0), [&](Expr j) {
    Expr v = cast<f32>(x[base + j]);
    local_sum += exp(g_softmax.sum_without_max ? v : shifted(v));
  });
  Expr inv_sum = 1.0f / group_sum(local_sum);
  for_(local_id(0), d, group_size(0), [&](Expr j) {
    out[base + j] = cast<T>(exp(shifted(cast<f32>(x[base + j]))) * inv_sum);
  });
}

// Element functions the elementwise skeletons apply (real ones first, then the bugs).
using BinaryFn = Expr (*)(const ElemRef& a, const ElemRef& b);
using UnaryFn = Expr (*)(Expr v);
Expr add(const ElemRef& a, const ElemRef& b) { return a + b; }
Expr mul(const ElemRef& a, const ElemRef& b) { return a * b; }
Expr sub(const ElemRef& a, const ElemRef& b) { return a - b; }
Expr first(const ElemRef& a, const ElemRef&) { return a * 1.0f; }
Expr square_first(const ElemRef& a, const ElemRef&) { return a * a; }
Expr exp_f(Expr v) { return exp(v); }
Expr silu(Expr v) { return v / (1.0f + exp(-v)); }
Expr exp_minus_one(Expr v) { return exp(v) - 1.0f; }
Expr square(Expr v) { return v * v; }
Expr exp_flush_below_minus7(Expr v) { return select(v < -7.0f, 0.0f, exp(v)); }  // a wrong underflow cutoff
Expr silu_without_one_plus(Expr v) { return v / exp(-v); }
Expr sigmoid_only(Expr v) { return 1.0f / (1.0f + exp(-v)); }

// Resets every switch: the next trace is the control unless `configure` sets one.
// kernels/gemv/gemv_rows.cpp, the variant family over VEC: the skeleton reads VEC from g_gemv.
struct GemvRowsBug {
  uint32_t vec = 4;
  bool no_tail = false;           // the k % VEC elements after the last whole chunk are dropped
  bool chunk_short = false;       // each chunk reads VEC - 1 of its elements
  bool chunk_unscaled = false;    // chunk c starts at c, not c * VEC: chunks overlap
};
GemvRowsBug g_gemv;

void gemv_rows_mutant() {
  const uint32_t vec = g_gemv.vec;
  Expr m = constexpr_("m", u32);
  Expr k = constexpr_("k", u32);
  Buffer a = input("a", T, {m, k});
  Buffer x = input("x", T, {k});
  Buffer y = output("y", T, {m});
  Expr chunks = k / vec;
  Expr row = program_id(0);
  Expr base = row * k;
  Var<f32> acc = 0.0f;
  for_(local_id(0), chunks, group_size(0), [&](Expr c) {
    Expr j = g_gemv.chunk_unscaled ? c : c * vec;
    for (uint32_t e = 0; e < vec - (g_gemv.chunk_short ? 1 : 0); ++e) acc += cast<f32>(a[base + j + e]) * cast<f32>(x[j + e]);
  });
  if (vec > 1 && !g_gemv.no_tail)
    if_(local_id(0) == 0u, [&] {
      Expr whole = chunks * vec;
      for_(0u, k % vec, 1u, [&](Expr e) { acc += cast<f32>(a[base + whole + e]) * cast<f32>(x[whole + e]); });
    });
  Expr total = group_sum(acc);
  if_(local_id(0) == 0u, [&] { y[row] = cast<T>(total); });
}

void reset() {
  g_gemv = {};
  g_tail = {};
  g_rms = {};
  g_softmax = {};
  g_binary = nullptr;
  g_unary = nullptr;
}

}  // namespace mutants

// --- running registered cases against an explicit kernel ---------------------------------------

const DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};

struct CaseOutcome {
  bool pass = false;
  double max_error = 0;
  std::string message;
};

// The corpus's own runner, with the kernel passed in instead of looked up by name.
CaseOutcome run_case(Context& ctx, const ir::Kernel& k, const TestDecl& decl, DType dt, double tol) {
  TestOutcome o = run_test_case(ctx, decl, dt, tol, &k);
  return CaseOutcome{o.status == TestOutcome::Status::Pass, o.max_error, o.message};
}

std::vector<const TestDecl*> cases_of(const std::string& kernel) {
  std::vector<const TestDecl*> out;
  for (const TestDecl* t : registered_tests())
    if (kernel == t->kernel) out.push_back(t);
  return out;
}

double tolerance(const TestDecl& t, DType dt) {
  for (const DtypeTolerance& d : t.dtypes)
    if (d.dtype == dt) return d.tol;
  return -1;  // the case does not run at dt
}

// Traces a body under the real kernel's name, mode and dtypes, after setting its bug switches,
// and checks that it is a drop-in replacement (same parameters).
ir::Kernel trace_as(const std::string& kernel, KernelBody body, const std::function<void()>& configure) {
  const KernelDecl* real_decl = find_kernel_decl(kernel);
  if (!real_decl) throw Error("no registered kernel " + kernel);
  mutants::reset();
  if (configure) configure();
  ir::Kernel m =
      trace_kernel(KernelDecl{real_decl->name, body, real_decl->mode, real_decl->dtypes, __FILE__, __LINE__});
  const ir::Kernel& real = kernel_ir(kernel);
  EXPECT_EQ(m.params.size(), real.params.size()) << kernel;
  for (size_t i = 0; i < std::min(m.params.size(), real.params.size()); ++i) {
    const ir::Param &a = m.params[i], &b = real.params[i];
    EXPECT_TRUE(a.name == b.name && a.kind == b.kind && a.dtype == b.dtype && a.access == b.access &&
                a.extent_scalars == b.extent_scalars && a.extent_factor == b.extent_factor)
        << kernel << ": parameter " << i << " (" << a.name << ") differs from the real one";
  }
  return m;
}

// The outcome of every case of a kernel at one dtype, as text for failure messages.
struct DtypeRun {
  bool any_failed = false;
  std::string detail;
};

struct Mutant {
  std::string what;
  KernelBody body;
  std::function<void()> configure;  // sets the switches the body reads
};

Mutant binary(std::string what, mutants::BinaryFn f, bool tail_first_only = false) {
  return {std::move(what), &mutants::binary_mutant, [=] {
            mutants::g_binary = f;
            mutants::g_tail.first_only = tail_first_only;
          }};
}
Mutant unary(std::string what, mutants::UnaryFn f) {
  return {std::move(what), &mutants::unary_mutant, [=] { mutants::g_unary = f; }};
}
Mutant gemv_rows(std::string what, mutants::GemvRowsBug bug) {
  return {std::move(what), &mutants::gemv_rows_mutant, [=] { mutants::g_gemv = bug; }};
}
Mutant rmsnorm(std::string what, mutants::RmsBug bug) {
  return {std::move(what), &mutants::rmsnorm_mutant, [=] { mutants::g_rms = bug; }};
}
Mutant softmax(std::string what, mutants::SoftmaxBug bug) {
  return {std::move(what), &mutants::softmax_mutant, [=] { mutants::g_softmax = bug; }};
}

}  // namespace

class Mutation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      ctx_ = Context::create(Backend::Vulkan);
    } catch (const Error& e) {
      create_error_ = e.what();
    }
  }
  static void TearDownTestSuite() { ctx_.reset(); }
  void SetUp() override { ASSERT_TRUE(ctx_) << "no Vulkan context: " << create_error_; }

  // Runs every registered case of `kernel` at dt against k.
  static DtypeRun run_corpus(const std::string& kernel, const ir::Kernel& k, DType dt) {
    DtypeRun run;
    for (const TestDecl* t : cases_of(kernel)) {
      double tol = tolerance(*t, dt);
      if (tol < 0) continue;
      CaseOutcome o = run_case(*ctx_, k, *t, dt, tol);
      run.any_failed = run.any_failed || !o.pass;
      run.detail += std::string("\n    ") + t->name + " [" + dtype_name(dt) + "]: " + (o.pass ? "pass" : "FAIL") +
                    ", max error " + std::to_string(o.max_error) + (o.pass ? "" : " (" + o.message + ")");
    }
    return run;
  }

  // The real kernel passes its cases through this file's runner and through the library's
  // run_test_case (so the local runner is a faithful copy); the bug-free skeleton passes too.
  static void expect_baseline_passes(const std::string& kernel, const Mutant& skeleton) {
    auto cases = cases_of(kernel);
    ASSERT_FALSE(cases.empty()) << "no registered test cases for " << kernel;
    ir::Kernel control = trace_as(kernel, skeleton.body, skeleton.configure);
    for (DType dt : kDtypes) {
      DtypeRun real = run_corpus(kernel, kernel_ir(kernel), dt);
      EXPECT_FALSE(real.any_failed) << kernel << " itself fails:" << real.detail;
      for (const TestDecl* t : cases) {
        double tol = tolerance(*t, dt);
        if (tol < 0) continue;
        TestOutcome o = run_test_case(*ctx_, *t, dt, tol);
        EXPECT_EQ(o.status, TestOutcome::Status::Pass)
            << kernel << "/" << t->name << " [" << dtype_name(dt) << "] via run_test_case: " << o.message;
      }
      DtypeRun copy = run_corpus(kernel, control, dt);
      EXPECT_FALSE(copy.any_failed) << kernel << ": the bug-free mutant skeleton fails, so it no longer matches "
                                    << "the real kernel (update the copy in this file):" << copy.detail;
    }
  }

  // Every mutant must fail at least one registered case at every dtype.
  static void expect_all_caught(const std::string& kernel, const Mutant& skeleton, const std::vector<Mutant>& list) {
    expect_baseline_passes(kernel, skeleton);
    for (const Mutant& m : list) {
      ir::Kernel k = trace_as(kernel, m.body, m.configure);
      EXPECT_NE(ir::content_hash(k), ir::content_hash(kernel_ir(kernel))) << m.what << " equals the real kernel";
      for (DType dt : kDtypes) {
        DtypeRun run = run_corpus(kernel, k, dt);
        EXPECT_TRUE(run.any_failed) << kernel << " mutant '" << m.what << "' SURVIVES the corpus at "
                                    << dtype_name(dt) << ":" << run.detail;
      }
    }
  }

  static inline std::unique_ptr<Context> ctx_;
  static inline std::string create_error_;
};

using namespace mutants;

TEST_F(Mutation, Add) {
  expect_all_caught("iron_add", binary("control", add),
                    {binary("a - b", sub), binary("out = a", first),
                     binary("tail run handles only its first element", add, /*tail_first_only=*/true)});
}

TEST_F(Mutation, Mul) {
  expect_all_caught("iron_mul", binary("control", mul),
                    {binary("a + b", add), binary("a * a", square_first),
                     binary("tail run handles only its first element", mul, /*tail_first_only=*/true)});
}

TEST_F(Mutation, Exp) {
  expect_all_caught("iron_exp", unary("control", exp_f),
                    {unary("exp(x) - 1", exp_minus_one), unary("x * x", square),
                     unary("exp(x) = 0 for x < -7", exp_flush_below_minus7)});
}

TEST_F(Mutation, ExpWithoutCastBackIsRejectedByTheVerifier) {
  // This mutant never reaches the corpus: the store's dtype rule rejects it at trace time.
  try {
    trace_as("iron_exp", &exp_no_cast_back, nullptr);
    ADD_FAILURE() << "an f32 value stored into buf<T> was traced without error";
  } catch (const Error& e) {
    EXPECT_PRED_FORMAT2(testing::IsSubstring, "stores f32 into buf<T> 'out' (insert a cast)", e.what());
  }
}

TEST_F(Mutation, Silu) {
  expect_all_caught("iron_silu", unary("control", silu),
                    {unary("x / exp(-x) (missing 1 +)", silu_without_one_plus),
                     unary("sigmoid(x) (missing x *)", sigmoid_only)});
}

TEST_F(Mutation, Rmsnorm) {
  expect_all_caught("iron_rmsnorm", rmsnorm("control", {}),
                    {rmsnorm("no division by d", {.no_mean = true}),
                     rmsnorm("weight dropped", {.no_weight = true}),
                     rmsnorm("first loop from 0 (threads sum the same elements)", {.loop_from_zero = true}),
                     rmsnorm("lane_sum instead of group_sum", {.lane_only = true}),
                     rmsnorm("eps dropped", {.no_eps = true})});
}

// A variant family's kernels are ordinary registered kernels: each is mutated under its own name.
TEST_F(Mutation, GemvRowsVariants) {
  expect_all_caught("iron_gemv_rows_x4", gemv_rows("control", {.vec = 4}),
                    {gemv_rows("tail dropped", {.vec = 4, .no_tail = true}),
                     gemv_rows("chunk reads VEC - 1 elements", {.vec = 4, .chunk_short = true}),
                     gemv_rows("chunks overlap (start not scaled by VEC)", {.vec = 4, .chunk_unscaled = true})});
  expect_all_caught("iron_gemv_rows_x8", gemv_rows("control", {.vec = 8}),
                    {gemv_rows("tail dropped", {.vec = 8, .no_tail = true}),
                     gemv_rows("chunk reads VEC - 1 elements", {.vec = 8, .chunk_short = true})});
}

TEST_F(Mutation, Softmax) {
  expect_all_caught("iron_softmax", softmax("control", {}),
                    {softmax("denominator not shifted by the max", {.sum_without_max = true}),
                     softmax("per-thread max instead of the row max", {.thread_max = true}),
                     softmax("no max subtraction", {.no_max = true})});
}

