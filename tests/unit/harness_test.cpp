// The harness's comparison rules: tolerances derived from the output format (a 16-bit store that
// rounds toward zero fails), guard bands after every buffer (a write one past the end fails on
// every backend), dtype labels a kernel never uses, fractional values for integer buffers, and
// failures that compared nothing saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "harness/runner.hpp"

using namespace iron;

namespace {

const TestDecl* find_case(const std::string& kernel, const std::string& name) {
  for (const TestDecl* t : registered_tests())
    if (kernel == t->kernel && name == t->name) return t;
  return nullptr;
}

const double kDerived = std::numeric_limits<double>::quiet_NaN();

// 16-bit encodings of an f32 value: round to nearest even, or toward zero.
uint16_t to16(DType t, float f, bool toward_zero) {
  uint16_t h = t == DType::F16 ? num::f32_to_f16(f) : num::f32_to_bf16(f);
  if (toward_zero) {
    float back = t == DType::F16 ? num::f16_to_f32(h) : num::bf16_to_f32(h);
    if (std::fabs(back) > std::fabs(f) && (h & 0x7fff) != 0) --h;  // one step toward zero
  }
  return h;
}

// Writes what a device whose stores round `toward_zero` (or to nearest even) would leave in
// every output of `r` given the exact results, and checks the outputs.
Correctness check_rounded(Context& ctx, Resident& r, DType t, bool toward_zero, const TestSetup& s, double declared) {
  for (const GuardedBuffer& g : r.outputs) {
    std::vector<uint16_t> bits(g.count + kGuardElements, kGuardHalf[1]);
    const std::vector<double>& exact = r.expected.at(g.name);
    for (size_t i = 0; i < g.count; ++i) bits[i] = to16(t, float(exact[i]), toward_zero);
    ctx.upload(g.buffer, bits.data(), bits.size() * 2);
  }
  return check_outputs(ctx, r, s, declared);
}

// per_thread.hpp's shape with the tail guard written `e <= left` instead of `e < left`: every
// element is right, and the thread owning the tail also writes one element past the end.
void add_with_tail_past_the_end() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  Expr tid = thread_id(0);
  Expr full_runs = n / 8u;
  Expr base = tid * 8u;
  if_(tid < full_runs, [&] {
    for (uint32_t e = 0; e < 8; ++e) out[base + e] = a[base + e] + b[base + e];
  }).else_([&] {
    if_(tid == full_runs, [&] {
      Expr left = n - base;
      for (uint32_t e = 0; e < 8; ++e) if_(e <= left, [&] { out[base + e] = a[base + e] + b[base + e]; });
    });
  });
}

void integer_input_kernel() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer idx = input("idx", i32, {n});
  Buffer out = output("out", f32, {n});
  Expr t = thread_id(0);
  if_(t < n, [&] { out[t] = cast<f32>(idx[t]); });
}

TestSetup fractional_integer_case(DType dt, DType) {
  return TestSetup(dt)
      .in("idx", {1.0, 2.0, 2.5, 4.0})
      .out("out", 4)
      .constexprs({{"n", 4}})
      .grid({1, 1, 1}, {4, 1, 1})
      .oracle([](const Tensors& in, Tensors& out) { out.at("out") = in.at("idx"); });
}

std::vector<Backend> backends() {
  std::vector<Backend> out = {Backend::Interp};
  std::string why;
  if (!list_devices(Backend::Vulkan, &why).empty()) out.push_back(Backend::Vulkan);
  return out;
}

}  // namespace

TEST(HarnessTolerance, UlpsOfTheOutputFormat) {
  EXPECT_EQ(ulp_of(DType::F32, 1.0), 0x1p-23);
  EXPECT_EQ(ulp_of(DType::F32, 1.999), 0x1p-23);
  EXPECT_EQ(ulp_of(DType::F32, 2.0), 0x1p-22);
  EXPECT_EQ(ulp_of(DType::F16, 1.0), 0x1p-10);
  EXPECT_EQ(ulp_of(DType::F16, 1e-7), 0x1p-24);  // subnormal spacing
  EXPECT_EQ(ulp_of(DType::BF16, 3.0), 0x1p-6);
  EXPECT_EQ(ulp_of(DType::F32, 0.0), 0x1p-149);
  TestSetup s(DType::F32);
  s.accumulation(8).math_ops(1);
  EXPECT_EQ(case_tolerance(s, kDerived, DType::F32).value, 0.5 + 8 + kMathOpUlps);
  EXPECT_EQ(case_tolerance(s, kDerived, DType::F16).value, 0.5 + (8 + kMathOpUlps) / 8192);
  EXPECT_EQ(case_tolerance(s, kDerived, DType::BF16).value, 0.5 + (8 + kMathOpUlps) / 65536);
  EXPECT_EQ(case_tolerance(s, kDerived, DType::I32).value, 0.0);
  EXPECT_FALSE(case_tolerance(s, 1e-3, DType::F16).ulps);
  EXPECT_EQ(group_sum_rounding(1000, 128), 8 + 3 * 7);
}

// A device whose 16-bit stores round toward zero is off by up to a whole ulp: that must fail,
// while round-to-nearest-even passes. The old relative tolerances (1e-3 for f16, 8e-3 for bf16)
// let the toward-zero stores pass, which the last assertion keeps on record.
TEST(HarnessTolerance, SixteenBitStoresThatRoundTowardZeroFail) {
  auto ctx = Context::create(Backend::Interp);
  for (const char* name : {"n4097", "n1001_extreme"}) {
    const TestDecl* decl = find_case("iron_add", name);
    ASSERT_NE(decl, nullptr);
    for (DType t : {DType::F16, DType::BF16}) {
      TestSetup s = decl->body(t, DType::Void);
      Resident r = make_resident(*ctx, kernel_ir("iron_add"), s, t);
      Correctness nearest = check_rounded(*ctx, r, t, false, s, kDerived);
      EXPECT_TRUE(nearest.pass) << dtype_name(t) << ": " << nearest.message;
      Correctness toward_zero = check_rounded(*ctx, r, t, true, s, kDerived);
      EXPECT_FALSE(toward_zero.pass) << dtype_name(t);
      EXPECT_GT(toward_zero.max_error, 0.9) << dtype_name(t);
      if (std::string(name) == "n4097") {
        // Old rule: relative error 1e-3 (f16) / 8e-3 (bf16): blind to the rounding mode.
        Correctness old = check_outputs(*ctx, r, s.floor(), t == DType::F16 ? 1e-3 : 8e-3);
        EXPECT_TRUE(old.pass) << dtype_name(t) << ": " << old.message;
      }
    }
  }
}

// Every registered case passes on the interpreter with its derived tolerance; prints the margin.
TEST(HarnessTolerance, EveryCasePassesWithItsDerivedTolerance) {
  auto ctx = Context::create(Backend::Interp);
  for (const TestDecl* t : registered_tests())
    for (const DtypeTolerance& d : t->dtypes) {
      TestOutcome o = run_test_case(*ctx, *t, d.dtype, d.tol);
      EXPECT_EQ(o.status, TestOutcome::Status::Pass) << t->kernel << "/" << t->name << " [" << instantiation_name(d.dtype)
                                                     << "]: " << o.message;
      EXPECT_TRUE(std::isnan(d.tol)) << t->kernel << "/" << t->name << ": test cases derive their tolerance";
      std::cout << "[tolerance] " << t->kernel << "/" << t->name << " [" << instantiation_name(d.dtype) << "] max error "
                << o.max_error << " of " << o.tolerance << (o.ulps ? " ulp" : "") << "\n";
    }
}

TEST(HarnessGuards, AWriteOnePastTheEndFailsOnEveryBackend) {
  const TestDecl* decl = find_case("iron_add", "n1003");
  ASSERT_NE(decl, nullptr);
  const KernelDecl* real = find_kernel_decl("iron_add");
  ir::Kernel k = trace_kernel(KernelDecl{"iron_add", add_with_tail_past_the_end, real->mode, real->dtypes, __FILE__, __LINE__});
  for (Backend b : backends()) {
    auto ctx = Context::create(b);
    TestOutcome o = run_test_case(*ctx, *decl, DType::F32, kDerived, &k);
    EXPECT_EQ(o.status, TestOutcome::Status::Fail) << backend_name(b);
    EXPECT_NE(o.message.find("write outside the declared extent: output 'out' has 1003 elements and its guard "
                             "element [1003] (past the end) was overwritten"),
              std::string::npos)
        << backend_name(b) << ": " << o.message;
    TestOutcome real_run = run_test_case(*ctx, *decl, DType::F32, kDerived);
    EXPECT_EQ(real_run.status, TestOutcome::Status::Pass) << backend_name(b) << ": " << real_run.message;
  }
}

TEST(HarnessLabels, ADtypeTheKernelNeverUsesIsRejected) {
  auto ctx = Context::create(Backend::Interp);
  const TestDecl* copy = find_case("iron_calib_copy", "n4097");
  ASSERT_NE(copy, nullptr);
  TestOutcome o = run_test_case(*ctx, *copy, DType::F16, kDerived);
  EXPECT_EQ(o.status, TestOutcome::Status::Fail);
  EXPECT_NE(o.message.find("case iron_calib_copy/n4097 is labelled f16, a dtype kernel iron_calib_copy never uses "
                           "(it is not generic and its buffers are f32)"),
            std::string::npos)
      << o.message;
  EXPECT_EQ(o.compared, 0u);
  const TestDecl* add = find_case("iron_add", "n1003");
  o = run_test_case(*ctx, *add, DType::I32, kDerived);
  EXPECT_NE(o.message.find("labelled i32, a dtype kernel iron_add is not declared for (it takes T = f32, f16, bf16)"),
            std::string::npos)
      << o.message;
  // Every registered label is one its kernel uses. A case of a family whose name is no kernel
  // (iron_rope_neox: its kernels are iron_rope_neox_d64 and _d128) runs through the selector,
  // whose plan is checked against the dtypes of the kernels it names.
  auto is_kernel = [](const char* name) {
    try {
      kernel_ir(name);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  for (const TestDecl* t : registered_tests()) {
    if (!is_kernel(t->kernel)) {
      EXPECT_NE(find_selector(t->kernel), nullptr) << t->kernel << "/" << t->name << " names neither a kernel nor a family";
      continue;
    }
    for (const DtypeTolerance& d : t->dtypes) EXPECT_EQ(dtype_label_problem(*t, kernel_ir(t->kernel), d.dtype), "");
  }
}

TEST(HarnessInputs, AFractionForAnIntegerBufferIsRejected) {
  auto ctx = Context::create(Backend::Interp);
  ir::Kernel k = trace_kernel(KernelDecl{"integer_input", integer_input_kernel, Mode::Elementwise, {}, __FILE__, __LINE__});
  TestDecl decl{"integer_input", "fractional", &fractional_integer_case, {{DType::F32}}, __FILE__, __LINE__};
  TestOutcome o = run_test_case(*ctx, decl, DType::F32, kDerived, &k);
  EXPECT_EQ(o.status, TestOutcome::Status::Fail);
  EXPECT_NE(o.message.find("input 'idx'[2] = 2.5 is not an integer, as i32 requires"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("nothing was compared"), std::string::npos) << o.message;
}

TEST(HarnessOutcome, AFailureBeforeTheComparisonSaysNothingWasCompared) {
  auto ctx = Context::create(Backend::Interp);
  const TestDecl* decl = find_case("iron_add", "n1003");
  const KernelDecl* real = find_kernel_decl("iron_mul");
  ir::Kernel wrong = trace_kernel(KernelDecl{"iron_mul", real->body, real->mode, real->dtypes, __FILE__, __LINE__});
  wrong.params.pop_back();  // no 'out' parameter: the setup cannot bind
  TestOutcome o = run_test_case(*ctx, *decl, DType::F32, kDerived, &wrong);
  EXPECT_EQ(o.status, TestOutcome::Status::Fail);
  EXPECT_EQ(o.compared, 0u);
  EXPECT_NE(o.message.find("(while preparing the buffers; nothing was compared)"), std::string::npos) << o.message;
  TestOutcome ok = run_test_case(*ctx, *decl, DType::F32, kDerived);
  EXPECT_EQ(ok.compared, 1003u);
}
