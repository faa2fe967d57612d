// `iron test --mutate`'s catalogue (src/harness/mutate.*): every kind has sites in the standard
// library, enumeration is deterministic, every mutant verifies and differs from the kernel,
// equivalent mutants come with a proof (and only provable ones), and a mutant survives when the
// cases that would kill it are missing.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "harness/mutate.hpp"

using namespace iron;

namespace {

std::vector<const TestDecl*> cases_of(const std::string& kernel, const std::string& only_case = "") {
  std::vector<const TestDecl*> out;
  for (const TestDecl* t : registered_tests())
    if (kernel == t->kernel && (only_case.empty() || only_case == t->name)) out.push_back(t);
  return out;
}

}  // namespace

TEST(Mutate, EveryKindHasSitesAndEveryMutantVerifiesAndDiffers) {
  std::map<std::string, int> per_kind;
  for (const KernelDecl* kd : registered_kernels()) {
    const ir::Kernel& k = kernel_ir(kd->name);
    std::vector<mutate::Mutant> a = mutate::enumerate(k, 8, 1024), b = mutate::enumerate(k, 8, 1024);
    ASSERT_EQ(a.size(), b.size()) << kd->name;
    const std::string original = ir::print(k);
    // The GEMM families' kernels (hundreds of sites each, never run by CTest's mutate.* entries:
    // GemmMutation runs their known-bad variants) check every 8th mutant: the same kinds at the
    // same code, at an eighth of this test's time on CI's two cores.
    const size_t stride = std::string(kd->name).rfind("iron_gemm", 0) == 0 ? 8 : 1;
    for (size_t i = 0; i < a.size(); i += stride) {
      EXPECT_EQ(a[i].kind + a[i].site + a[i].detail, b[i].kind + b[i].site + b[i].detail) << kd->name;
      const std::string printed = ir::print(a[i].kernel);
      EXPECT_EQ(printed, ir::print(b[i].kernel)) << kd->name;
      ir::Diagnostics d;
      EXPECT_TRUE(ir::verify(a[i].kernel, d)) << kd->name << " " << a[i].kind << " " << a[i].detail << "\n"
                                              << d.render(a[i].kernel);
      EXPECT_NE(printed, original) << kd->name << " " << a[i].kind << " " << a[i].detail;
      EXPECT_NE(a[i].site.find(":"), std::string::npos) << a[i].site;
      ++per_kind[a[i].kind];
    }
  }
  for (const std::string& kind : mutate::catalogue()) EXPECT_GT(per_kind[kind], 0) << kind;
}

TEST(Mutate, EquivalentMutantsCarryAProof) {
  // The closing barrier of RMSNorm's one group_sum orders nothing; the first one orders the
  // partials' writes before their reads.
  std::vector<mutate::Mutant> ms = mutate::enumerate(kernel_ir("iron_rmsnorm"), 8, 1024);
  std::vector<const mutate::Mutant*> barriers;
  for (const mutate::Mutant& m : ms)
    if (m.kind == "dropped_barrier") barriers.push_back(&m);
  ASSERT_EQ(barriers.size(), 2u);
  EXPECT_EQ(barriers[0]->equivalent, "");
  EXPECT_NE(barriers[1]->equivalent.find("orders nothing"), std::string::npos) << barriers[1]->equivalent;
  EXPECT_NE(barriers[1]->equivalent.find("threadgroup array 'iron_group_sum_0' (read)"), std::string::npos);

  // a - a swapped is a - a.
  ir::Kernel k = ir::parse(
      "kernel same mode=Elementwise {\n"
      "  param out: out buf<f32> extent=1\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = cast %0 : f32\n"
      "  %2 = sub %1, %1 : f32\n"
      "  store<out> %0, %2\n"
      "}\n");
  std::vector<mutate::Mutant> same = mutate::enumerate(k, 8, 1024);
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].kind, "swapped_operands");
  EXPECT_EQ(same[0].equivalent, "both operands are the same value");

  // The partials loop of a group reduction: one trip per lane when lane groups <= lanes.
  int single = 0, multi = 0;
  for (const mutate::Mutant& m : mutate::enumerate(kernel_ir("iron_softmax"), 32, 1024))
    if (m.kind == "stride" && !m.equivalent.empty()) ++single;
  for (const mutate::Mutant& m : mutate::enumerate(kernel_ir("iron_softmax"), 8, 1024))
    if (m.kind == "stride" && !m.equivalent.empty()) ++multi;
  EXPECT_EQ(single, 2);
  EXPECT_EQ(multi, 0);
}

// The mutants of iron_add's loops (the full run of 8 and the tail loop of n % 8 steps): with
// only the case whose tail is 1 element, two survive: a full run of 9 (its ninth element is the
// next run's first, written with the same value) and the tail loop's step + 1 (it still reaches
// element 0); the registered cases (one per tail length; n = 64 has no tail, so the last full
// run's ninth element is past the end) kill every one of them.
TEST(Mutate, MissingCasesLeaveSurvivorsAndTheCorpusKillsThem) {
  auto ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_add");
  std::vector<const TestDecl*> weak = cases_of("iron_add", "n4097"), all = cases_of("iron_add");
  ASSERT_EQ(weak.size(), 1u);
  int survived_weak = 0, survived_all = 0, loops = 0;
  for (const mutate::Mutant& m : mutate::enumerate(k, ctx->info().lane_width, ctx->info().max_threads_per_group)) {
    if (m.detail.rfind("for #", 0) != 0) continue;
    ++loops;
    if (mutate::run_mutant(*ctx, k, m, weak, DType::F32).status == mutate::Outcome::Status::Survived) {
      ++survived_weak;
      EXPECT_TRUE(m.detail == "for #1: end -> end + 1" || m.detail == "for #2: step -> step + 1") << m.detail;
    }
    mutate::Outcome o = mutate::run_mutant(*ctx, k, m, all);
    if (o.status == mutate::Outcome::Status::Survived) ++survived_all;
    else EXPECT_EQ(o.status, mutate::Outcome::Status::Killed) << m.detail << ": " << o.by;
  }
  EXPECT_EQ(loops, 6);          // end + 1, end - 1 and step + 1 of each loop
  EXPECT_EQ(survived_weak, 2);
  EXPECT_EQ(survived_all, 0);
}

// A store whose value is a T value already cannot be changed by any rounding to T: the
// transpose's copy through a T threadgroup array is proven equivalent; a T threadgroup array
// that holds a sum (an f32 register value, not rounded when stored there) is not, and neither
// is the sum stored straight to a T buffer.
namespace {
void tg_sum_copy_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Buffer out2 = output("out2", T, {n});
  TgBuffer t = threadgroup_alloc("t", T, 64);
  Expr l = local_id(0);
  t[l] = x[l] + x[l];
  barrier();
  out[l] = t[l];
  out2[l] = x[l] + x[l];
}
}  // namespace

TEST(Mutate, RoundingOfAValueThatIsAlreadyTIsEquivalent) {
  int proven = 0;
  for (const mutate::Mutant& m : mutate::enumerate(kernel_ir("iron_transpose"), 8, 1024)) {
    if (m.kind != "rounding_toward_zero") continue;
    EXPECT_NE(m.equivalent.find("threadgroup array 'tile', every store to which holds a load from a T buffer"),
              std::string::npos)
        << m.detail << ": " << m.equivalent;
    ++proven;
  }
  EXPECT_EQ(proven, 1);
  ir::Kernel k = trace_kernel(KernelDecl{"tg_sum_copy", &tg_sum_copy_body, Mode::Reduction, {DType::F32, DType::F16},
                                         __FILE__, __LINE__});
  int unproven = 0;
  for (const mutate::Mutant& m : mutate::enumerate(k, 8, 1024))
    if (m.kind == "rounding_toward_zero") {
      EXPECT_EQ(m.equivalent, "") << m.detail;
      ++unproven;
    }
  EXPECT_EQ(unproven, 2);
}
