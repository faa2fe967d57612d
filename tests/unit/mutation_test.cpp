// Mutation testing of the kernel corpus: known-bad variants of the six kernels, traced under the
// real kernel's name and parameters, must fail the real registered test cases on Vulkan while the
// real kernels pass them. Mutants the corpus cannot catch are listed in KnownCorpusGaps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
// Each is a copy of the real body (kernels/*/*.cpp) with one deliberate bug; parameter names,
// order, dtypes and extents are kept so the registered test cases bind to them unchanged.
namespace {
namespace mutants {
using namespace iron::dsl;

void add_subtracts() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] - b[i]; });
}

void add_ignores_b() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  input("b", T, {n});  // declared, so the parameters match, but never read
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i]; });
}

// Off-by-one tail guard: the last element is never written (the harness pre-fills outputs with NaN).
void add_skips_last() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i + 1u < n, [&] { out[i] = a[i] + b[i]; });
}

void mul_adds() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] + b[i]; });
}

void mul_squares_a() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  input("b", T, {n});  // never read
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] * a[i]; });
}

// Not a runnable mutant: storing the f32 result into buf<T> without the cast back.
void exp_no_cast_back() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = exp(cast<f32>(x[i])); });
}

void exp_minus_one() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = cast<T>(exp(cast<f32>(x[i])) - 1.0f); });
}

void exp_squares() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Expr v = cast<f32>(x[i]);
    out[i] = cast<T>(v * v);
  });
}

// A wrong "underflow shortcut": exp(x) = 0 for x < -7, where the true value is still ~1e-3.
void exp_flushes_below_minus7() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Expr v = cast<f32>(x[i]);
    out[i] = cast<T>(select(v < -7.0f, 0.0f, exp(v)));
  });
}

void silu_drops_one_plus() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Expr v = cast<f32>(x[i]);
    out[i] = cast<T>(v / exp(-v));
  });
}

void silu_sigmoid_only() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Expr v = cast<f32>(x[i]);
    out[i] = cast<T>(1.0f / (1.0f + exp(-v)));
  });
}

// The rmsnorm mutants share the real kernel's skeleton; each flag removes or breaks one step.
struct RmsBug {
  bool no_mean = false;         // sum of squares not divided by d
  bool no_weight = false;       // w dropped from the output
  bool no_eps = false;          // eps dropped
  bool loop_from_zero = false;  // first loop starts at 0, not local_id: every thread sums the same elements
  bool lane_only = false;       // lane_sum instead of group_sum: only one lane group's share
};
RmsBug g_rms;

void rmsnorm_mutant() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32);
  Expr eps = constexpr_("eps", f32);
  Buffer x = input("x", T, {rows, d});
  Buffer w = input("w", T, {d});
  Buffer out = output("out", T, {rows, d});

  Expr row = program_id(0);
  Expr base = row * d;
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
  bool no_max = false;          // exp(x) / sum exp(x): overflows f32 once x > ~88
  bool sum_without_max = false; // numerator shifted by the max, denominator not
  bool thread_max = false;      // each thread's own max instead of the row max
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

}  // namespace mutants
}  // namespace

// --- running registered cases against an explicit kernel ---------------------------------------

namespace {

const DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};

struct CaseOutcome {
  bool pass = false;
  double max_error = 0;
  std::string message;
};

// run_test_case (runner_core.cpp) with the kernel passed in instead of looked up by name: same
// input rounding, NaN-filled outputs and pass rule |got - want| <= tol * max(floor, |want|).
CaseOutcome run_case(Context& ctx, const ir::Kernel& k, const TestDecl& decl, DType dt, double tol) {
  CaseOutcome r;
  try {
    TestSetup setup = decl.body(dt);
    Tensors rounded, expected;
    Bindings bindings;
    std::vector<std::pair<std::string, DeviceBuffer>> outs;
    for (const auto& [name, values] : setup.inputs()) {
      DType t = ir::resolve(k.params.at(k.find_param(name)).dtype, dt);
      std::vector<unsigned char> bytes(values.size() * dtype_size(t));
      num::encode(t, values.data(), bytes.data(), values.size());
      std::vector<double> back(values.size());
      num::decode(t, bytes.data(), back.data(), values.size());
      DeviceBuffer buf = ctx.alloc(t, values.size());
      ctx.upload(buf, bytes.data(), bytes.size());
      bindings.emplace_back(name, buf);
      rounded[name] = std::move(back);
    }
    for (const auto& [name, count] : setup.outputs()) {
      DType t = ir::resolve(k.params.at(k.find_param(name)).dtype, dt);
      DeviceBuffer buf = ctx.alloc(t, count);
      std::vector<unsigned char> fill(buf.bytes(), 0xff);  // NaN: an unwritten element fails
      ctx.upload(buf, fill.data(), fill.size());
      bindings.emplace_back(name, buf);
      outs.emplace_back(name, buf);
      expected[name].assign(count, 0.0);
    }
    setup.oracle_fn()(rounded, expected);
    ctx.dispatch_with_grid(k, dt, bindings, setup.scalars(), setup.grid_size(), setup.threadgroup());
    ctx.synchronize();
    for (const auto& [name, buf] : outs) {
      std::vector<unsigned char> bytes(buf.bytes());
      ctx.download(buf, bytes.data(), bytes.size());
      std::vector<double> got(buf.count());
      num::decode(buf.dtype(), bytes.data(), got.data(), got.size());
      const std::vector<double>& want = expected[name];
      for (size_t i = 0; i < got.size(); ++i) {
        double err = std::fabs(got[i] - want[i]) / std::max(setup.floor(), std::fabs(want[i]));
        if (std::isnan(got[i]) || std::isnan(err)) err = INFINITY;
        r.max_error = std::max(r.max_error, err);
        if (err > tol && r.message.empty()) {
          std::ostringstream m;
          m << name << "[" << i << "] = " << got[i] << ", oracle " << want[i];
          r.message = m.str();
        }
      }
    }
    r.pass = r.message.empty();
  } catch (const std::exception& e) {
    r.message = e.what();
  }
  return r;
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

// Traces a mutant body under the real kernel's name, mode and dtypes, and checks that it really
// is a drop-in replacement (same parameters) and really is different (another content hash).
ir::Kernel trace_mutant(const std::string& kernel, KernelBody body) {
  const KernelDecl* real_decl = find_kernel_decl(kernel);
  if (!real_decl) throw Error("no registered kernel " + kernel);
  ir::Kernel m = trace_kernel(KernelDecl{real_decl->name, body, real_decl->mode, real_decl->dtypes, __FILE__, __LINE__});
  const ir::Kernel& real = kernel_ir(kernel);
  EXPECT_EQ(m.params.size(), real.params.size()) << kernel;
  for (size_t i = 0; i < std::min(m.params.size(), real.params.size()); ++i) {
    const ir::Param &a = m.params[i], &b = real.params[i];
    EXPECT_TRUE(a.name == b.name && a.kind == b.kind && a.dtype == b.dtype && a.access == b.access &&
                a.extent_scalars == b.extent_scalars && a.extent_factor == b.extent_factor)
        << kernel << ": mutant parameter " << i << " (" << a.name << ") differs from the real one";
  }
  EXPECT_NE(ir::content_hash(m), ir::content_hash(real)) << kernel << ": the mutant equals the real kernel";
  return m;
}

// Which cases a kernel fails at one dtype, as text for failure messages.
struct DtypeRun {
  bool any_failed = false;
  std::string detail;
};

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

  // The real kernel passes its cases through this file's runner, and the library's run_test_case
  // agrees (so the local runner is a faithful copy, not a stricter or looser one).
  static void expect_real_kernel_passes(const std::string& kernel) {
    auto cases = cases_of(kernel);
    ASSERT_FALSE(cases.empty()) << "no registered test cases for " << kernel;
    for (DType dt : kDtypes) {
      DtypeRun run = run_corpus(kernel, kernel_ir(kernel), dt);
      EXPECT_FALSE(run.any_failed) << kernel << " itself fails:" << run.detail;
      for (const TestDecl* t : cases) {
        double tol = tolerance(*t, dt);
        if (tol < 0) continue;
        TestOutcome o = run_test_case(*ctx_, *t, dt, tol);
        EXPECT_EQ(o.status, TestOutcome::Status::Pass) << kernel << "/" << t->name << " [" << dtype_name(dt)
                                                       << "] via run_test_case: " << o.message;
      }
    }
  }

  struct Mutant {
    const char* what;
    KernelBody body;
    void (*configure)() = nullptr;  // sets the bug flags a shared mutant body reads
  };

  // Every mutant must fail at least one registered case at every dtype.
  static void expect_all_caught(const std::string& kernel, const std::vector<Mutant>& list) {
    expect_real_kernel_passes(kernel);
    for (const Mutant& m : list) {
      if (m.configure) m.configure();
      ir::Kernel k = trace_mutant(kernel, m.body);
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

TEST_F(Mutation, Add) {
  expect_all_caught("iron_add", {{"a - b", &mutants::add_subtracts},
                                 {"out = a", &mutants::add_ignores_b},
                                 {"guard i + 1 < n (last element unwritten)", &mutants::add_skips_last}});
}

TEST_F(Mutation, Mul) {
  expect_all_caught("iron_mul", {{"a + b", &mutants::mul_adds}, {"a * a", &mutants::mul_squares_a}});
}

TEST_F(Mutation, Exp) {
  expect_all_caught("iron_exp", {{"exp(x) - 1", &mutants::exp_minus_one}, {"x * x", &mutants::exp_squares}});
}

TEST_F(Mutation, ExpWithoutCastBackIsRejectedByTheVerifier) {
  // This mutant never reaches the corpus: the store's dtype rule rejects it at trace time.
  try {
    trace_mutant("iron_exp", &mutants::exp_no_cast_back);
    ADD_FAILURE() << "an f32 value stored into buf<T> was traced without error";
  } catch (const Error& e) {
    EXPECT_PRED_FORMAT2(testing::IsSubstring, "stores f32 into buf<T> 'out' (insert a cast)", e.what());
  }
}

TEST_F(Mutation, Silu) {
  expect_all_caught("iron_silu",
                    {{"x / exp(-x) (missing 1 +)", &mutants::silu_drops_one_plus},
                     {"sigmoid(x) (missing x *)", &mutants::silu_sigmoid_only}});
}

TEST_F(Mutation, Rmsnorm) {
  expect_all_caught("iron_rmsnorm",
                    {{"no division by d", &mutants::rmsnorm_mutant, [] { mutants::g_rms = {.no_mean = true}; }},
                     {"weight dropped", &mutants::rmsnorm_mutant, [] { mutants::g_rms = {.no_weight = true}; }},
                     {"first loop from 0 (overlapping threads)", &mutants::rmsnorm_mutant,
                      [] { mutants::g_rms = {.loop_from_zero = true}; }},
                     {"lane_sum instead of group_sum", &mutants::rmsnorm_mutant,
                      [] { mutants::g_rms = {.lane_only = true}; }}});
}

TEST_F(Mutation, Softmax) {
  expect_all_caught("iron_softmax",
                    {{"denominator not shifted by the max", &mutants::softmax_mutant,
                      [] { mutants::g_softmax = {.sum_without_max = true}; }},
                     {"per-thread max instead of the row max", &mutants::softmax_mutant,
                      [] { mutants::g_softmax = {.thread_max = true}; }}});
}

// Real bugs the current corpus lets through, by dtype. Each expectation documents a hole; when a
// case is strengthened the expectation fails: then move the mutant into its kernel's test above.
TEST_F(Mutation, KnownCorpusGaps) {
  struct Gap {
    const char* kernel;
    const char* what;
    KernelBody body;
    void (*configure)();
    std::vector<DType> survives_at;  // the other dtypes must catch it
  };
  const std::vector<Gap> gaps = {
      // The exp cases use the default error floor 1, so outputs below 1 (every x < 0) are checked
      // absolutely: 0 instead of exp(-7) ~ 9e-4 is within the f16/bf16 tolerance.
      {"iron_exp", "exp(x) = 0 for x < -7", &mutants::exp_flushes_below_minus7, nullptr, {DType::F16, DType::BF16}},
      // No case has a zero (or tiny) row, so eps is never observable.
      {"iron_rmsnorm", "eps dropped", &mutants::rmsnorm_mutant, [] { mutants::g_rms = {.no_eps = true}; },
       {DType::F32, DType::F16, DType::BF16}},
      // The "wide" case spreads x over [-60, 60], but exp runs in f32 (overflow past ~88), so a
      // softmax without the max subtraction still passes.
      {"iron_softmax", "no max subtraction", &mutants::softmax_mutant, [] { mutants::g_softmax = {.no_max = true}; },
       {DType::F32, DType::F16, DType::BF16}},
  };
  for (const Gap& g : gaps) {
    if (g.configure) g.configure();
    ir::Kernel k = trace_mutant(g.kernel, g.body);
    for (DType dt : kDtypes) {
      DtypeRun run = run_corpus(g.kernel, k, dt);
      bool expect_survive = std::find(g.survives_at.begin(), g.survives_at.end(), dt) != g.survives_at.end();
      EXPECT_EQ(run.any_failed, !expect_survive)
          << g.kernel << " mutant '" << g.what << "' at " << dtype_name(dt)
          << (expect_survive ? ": now CAUGHT - the gap is closed, move it to the caught list" : ": SURVIVES")
          << run.detail;
      if (expect_survive && !run.any_failed)
        std::cout << "[ corpus gap ] " << g.kernel << " mutant '" << g.what << "' survives at " << dtype_name(dt)
                  << "\n";
    }
  }
}
