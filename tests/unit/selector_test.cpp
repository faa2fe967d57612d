// Kernel-owned launch (launch.hpp): selector routing, plan checking, plan execution and timing,
// and family cases in the harness. The family here is the unit tests' own: y = F * x + x
// computed in two steps through a scratch buffer, F a variant axis.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "harness/runner.hpp"

namespace iron {
namespace {
using namespace iron::dsl;

void unit_sel_scale(const KernelVariant& v) {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = cast<T>(cast<f32>(x[i]) * float(v.i("F"))); });
}

void unit_sel_add() {
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] + b[i]; });
}

// Routes on the call's `factor` (2 or 3; 5 names a variant that was never built) and sizes the
// threadgroup from the lane width. `defect` plants one mistake in the plan, for the checks.
LaunchPlan unit_sel_for(const Call& call, const DeviceInfo& dev) {
  const int64_t n = call.size("n");
  const int64_t factor = call.size_or("factor", 2);
  const uint32_t tg = 2 * dev.lane_width;
  const uint32_t groups = uint32_t((n + tg - 1) / tg);
  LaunchPlan plan;
  plan.scratch.push_back({"scaled", DType::F32, size_t(n)});
  plan.steps.push_back({"unit_sel_scale_x" + std::to_string(factor), {groups, 1, 1}, {tg, 1, 1},
                        {{"n", uint32_t(n)}}, {{"out", "scaled"}}});
  plan.steps.push_back({"unit_sel_add", {groups, 1, 1}, {tg, 1, 1}, {{"n", uint32_t(n)}}, {{"a", "scaled"}, {"b", "x"}}});
  plan.reason = "scale by " + std::to_string(factor) + ", then add x";
  const std::string defect = call.has("defect") ? std::to_string(call.size("defect")) : "";
  if (defect == "1") plan.steps[0].grid.x = 0;
  if (defect == "2") plan.steps[0].constexprs["m"] = 1u;
  if (defect == "3") plan.steps[1].constexprs.clear();
  if (defect == "4") plan.steps[1].bind.push_back({"n", "x"});
  if (defect == "5") plan.scratch.push_back({"scaled", DType::F32, 4});
  if (defect == "6") plan.steps.clear();
  if (defect == "7") plan.steps[1].bind[0].second = "missing";
  return plan;
}

// Registered when a test first needs them, not by static initializers: every gtest runs in a
// process of its own (gtest_discover_tests), so the unit family never reaches the tests that
// walk every registered kernel.
void register_unit_family() {
  static const bool once = [] {
    register_variant_family(VariantFamilyDecl{"unit_sel_scale", &unit_sel_scale, Mode::Elementwise, {DType::F32}, "x{F}",
                                              {int_axis("F", {2, 3})}, __FILE__, __LINE__});
    register_kernel(KernelDecl{"unit_sel_add", &unit_sel_add, Mode::Elementwise, {DType::F32}, __FILE__, __LINE__});
    register_selector(SelectorDecl{"unit_sel", &unit_sel_for, __FILE__, __LINE__});
    return true;
  }();
  (void)once;
}

DeviceInfo device_with_lanes(uint32_t lanes) {
  DeviceInfo d;
  d.lane_width = lanes;
  return d;
}

std::string plan_error(const Call& call) {
  try {
    plan_launch("unit_sel", call, device_with_lanes(32));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Selector, RoutesByShapeAndDevice) {
  register_unit_family();
  LaunchPlan p = plan_launch("unit_sel", Call{DType::F32, {{"n", 100}, {"factor", 3}}}, device_with_lanes(32));
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].kernel, "unit_sel_scale_x3");
  EXPECT_EQ(p.steps[1].kernel, "unit_sel_add");
  EXPECT_EQ(p.steps[0].threadgroup.x, 64u);
  EXPECT_EQ(p.steps[0].grid.x, 2u);
  EXPECT_EQ(p.describe(), "unit_sel_scale_x3 grid 2x1x1 tg 64x1x1; unit_sel_add grid 2x1x1 tg 64x1x1");
  // A wave of 64 lanes gets groups of 128.
  p = plan_launch("unit_sel", Call{DType::F32, {{"n", 100}}}, device_with_lanes(64));
  EXPECT_EQ(p.steps[0].kernel, "unit_sel_scale_x2");
  EXPECT_EQ(p.steps[0].threadgroup.x, 128u);
  EXPECT_EQ(p.steps[0].grid.x, 1u);
}

TEST(Selector, CombinationNeverBuiltFailsLoudly) {
  register_unit_family();
  std::string e = plan_error(Call{DType::F32, {{"n", 8}, {"factor", 5}}});
  EXPECT_NE(e.find("unit_sel_scale_x5"), std::string::npos) << e;
  EXPECT_NE(e.find("no kernel of that name was built"), std::string::npos) << e;
  EXPECT_NE(e.find("selector_test.cpp"), std::string::npos) << e;  // the selector's declaration
  e = plan_error(Call{DType::F16, {{"n", 8}}});
  EXPECT_NE(e.find("never built for f16"), std::string::npos) << e;
}

TEST(Selector, UnknownFamilyListsTheRegisteredOnes) {
  register_unit_family();
  try {
    plan_launch("unit_nope", Call{DType::F32, {}}, device_with_lanes(32));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unit_sel"), std::string::npos) << e.what();
  }
}

TEST(Selector, MalformedPlansAreRefusedNamingTheStep) {
  register_unit_family();
  const std::pair<int, const char*> defects[] = {
      {1, "has a zero axis"},           {2, "sets scalar 'm', which the kernel does not declare"},
      {3, "leaves the kernel's scalar 'n' unset"}, {4, "binds 'n', which is not a buffer parameter"},
      {5, "declared twice"},            {6, "no step"}};
  for (auto [defect, want] : defects) {
    std::string e = plan_error(Call{DType::F32, {{"n", 8}, {"defect", defect}}});
    EXPECT_NE(e.find(want), std::string::npos) << "defect " << defect << ": " << e;
  }
  // A call argument the selector needs and the call lacks: named.
  std::string e = plan_error(Call{DType::F32, {}});
  EXPECT_NE(e.find("no argument 'n'"), std::string::npos) << e;
}

TEST(Selector, CallArgumentsAreCheckedIntegers) {
  register_unit_family();
  Call c{DType::F32, {{"n", -3}, {"eps", 1e-6}, {"big", 7u}}};
  EXPECT_THROW(c.size("n"), Error);
  EXPECT_THROW(c.size("eps"), Error);
  EXPECT_EQ(c.size("big"), 7);
  EXPECT_DOUBLE_EQ(c.scalar("eps"), 1e-6);
  EXPECT_EQ(c.size_or("absent", 9), 9);
  EXPECT_THROW(c.scalar("absent"), Error);
}

TEST(Selector, DuplicateRegistrationIsRefused) {
  register_unit_family();
  EXPECT_EQ(register_selector(SelectorDecl{"unit_sel", &unit_sel_for, __FILE__, __LINE__}), -1);
  bool found = false;
  for (const std::string& e : registry_errors()) found = found || e.find("selector 'unit_sel' is already registered") != std::string::npos;
  EXPECT_TRUE(found);
}

std::vector<float> run_unit_sel(Context& ctx, const Call& call, const std::vector<float>& x) {
  DeviceBuffer in = ctx.alloc(DType::F32, x.size());
  DeviceBuffer out = ctx.alloc(DType::F32, x.size());
  ctx.upload(in, x.data(), x.size() * 4);
  launch(ctx, "unit_sel", call, {{"x", in}, {"out", out}});
  ctx.synchronize();
  std::vector<float> y(x.size());
  ctx.download(out, y.data(), y.size() * 4);
  return y;
}

TEST(Selector, PlanRunsInOrderThroughScratch) {
  register_unit_family();
  auto ctx = Context::create(Backend::Interp);
  std::vector<float> x(77);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 30.0f;
  std::vector<float> y = run_unit_sel(*ctx, Call{DType::F32, {{"n", 77}, {"factor", 3}}}, x);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], 4.0f * x[i]) << i;
  // A bind to a buffer nobody has: named before anything launches.
  DeviceBuffer in = ctx->alloc(DType::F32, 8), out = ctx->alloc(DType::F32, 8);
  try {
    launch(*ctx, "unit_sel", Call{DType::F32, {{"n", 8}, {"defect", 7}}}, {{"x", in}, {"out", out}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("buffer 'missing'"), std::string::npos) << e.what();
  }
  // Every step is validated: a call buffer too small for the plan's n is refused by step 1.
  EXPECT_THROW(launch(*ctx, "unit_sel", Call{DType::F32, {{"n", 100}}}, {{"x", in}, {"out", out}}), Error);
}

TEST(Selector, PlanIsTimedAsOneSequence) {
  register_unit_family();
  auto ctx = Context::create(Backend::Interp);
  DeviceBuffer in = ctx->alloc(DType::F32, 64), out = ctx->alloc(DType::F32, 64);
  LaunchPlan plan = plan_launch("unit_sel", Call{DType::F32, {{"n", 64}}}, ctx->info());
  TimingOptions o;
  o.warmup = 1;
  o.samples = 3;
  Timing t = time_plan(*ctx, plan, DType::F32, {{"x", in}, {"out", out}}, o);
  ASSERT_EQ(t.samples_us.size(), 3u);
  for (double us : t.samples_us) EXPECT_GT(us, 0.0);
}

// Family cases in the harness: planned on the device, run, checked against the oracle; a case
// that gives a grid to a family, or a call to a plain kernel, is refused by name.
TestSetup unit_sel_case(DType dt, DType) {
  std::vector<double> x(50);
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i) * 0.5 - 7.0;
  return TestSetup(dt).in("x", x).out("out", 50).call({{"n", 50}, {"factor", 2}}).accumulation(2).oracle(
      [](const Tensors& in, Tensors& out) {
        for (size_t i = 0; i < 50; ++i) out["out"][i] = 3.0 * in.at("x")[i];
      });
}
TestSetup unit_sel_wrong_oracle(DType dt, DType) {
  TestSetup t = unit_sel_case(dt, DType::Void);
  return t.oracle([](const Tensors& in, Tensors& out) {
    for (size_t i = 0; i < 50; ++i) out["out"][i] = 2.0 * in.at("x")[i];
  });
}
TestSetup unit_sel_with_grid(DType dt, DType) { return unit_sel_case(dt, DType::Void).grid({1, 1, 1}, {64, 1, 1}); }

TEST(Selector, FamilyCasesRunThroughThePlan) {
  register_unit_family();
  auto ctx = Context::create(Backend::Interp);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TestDecl good{"unit_sel", "n50", &unit_sel_case, {{DType::F32}}, __FILE__, __LINE__};
  TestOutcome r = run_test_case(*ctx, good, DType::F32, nan);
  EXPECT_EQ(r.status, TestOutcome::Status::Pass) << r.message;
  EXPECT_EQ(r.compared, 50u);
  EXPECT_TRUE(case_runs_kernel(*ctx, good, DType::F32, "unit_sel_scale_x2"));
  EXPECT_FALSE(case_runs_kernel(*ctx, good, DType::F32, "unit_sel_scale_x3"));

  TestDecl wrong{"unit_sel", "wrong", &unit_sel_wrong_oracle, {{DType::F32}}, __FILE__, __LINE__};
  r = run_test_case(*ctx, wrong, DType::F32, nan);
  EXPECT_EQ(r.status, TestOutcome::Status::Fail);
  EXPECT_NE(r.message.find("plan: unit_sel_scale_x2"), std::string::npos) << r.message;

  TestDecl grid{"unit_sel", "grid", &unit_sel_with_grid, {{DType::F32}}, __FILE__, __LINE__};
  r = run_test_case(*ctx, grid, DType::F32, nan);
  EXPECT_EQ(r.status, TestOutcome::Status::Fail);
  EXPECT_NE(r.message.find("its selector chooses the grid"), std::string::npos) << r.message;

  TestDecl plain{"unit_sel_add", "call", &unit_sel_case, {{DType::F32}}, __FILE__, __LINE__};
  r = run_test_case(*ctx, plain, DType::F32, nan);
  EXPECT_EQ(r.status, TestOutcome::Status::Fail);
  EXPECT_NE(r.message.find("no selector is registered as unit_sel_add"), std::string::npos) << r.message;
}

// A mutant of one step's kernel, substituted by name, changes the family case's result: what
// `iron test --mutate` relies on to reach kernels through their families.
TEST(Selector, KernelOverrideReachesThePlanStep) {
  register_unit_family();
  auto ctx = Context::create(Backend::Interp);
  TestDecl good{"unit_sel", "n50", &unit_sel_case, {{DType::F32}}, __FILE__, __LINE__};
  ir::Kernel other = kernel_ir("unit_sel_scale_x3");
  other.name = "unit_sel_scale_x2";  // x3's body under x2's name: the wrong factor
  TestOutcome r = run_test_case(*ctx, good, DType::F32, std::numeric_limits<double>::quiet_NaN(), &other);
  EXPECT_EQ(r.status, TestOutcome::Status::Fail) << r.message;
}

}  // namespace
}  // namespace iron
