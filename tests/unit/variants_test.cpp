// Kernel variants (docs/dsl.md#variants): a family's expansion and names, the values as
// compile-time constants of the traced body, the located errors of bad declarations and name
// clashes, and a family over an int, a float and a type axis run on the interpreter and the
// devices against a CPU reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "device_run.hpp"
#include "harness/runner.hpp"

namespace iron {
namespace {

using namespace iron::dsl;

void expect_contains(const std::string& text, const std::string& want) {
  EXPECT_NE(text.find(want), std::string::npos) << "missing \"" << want << "\" in:\n" << text;
  // Also on stderr: in a child process (in_child) that is what the parent shows.
  if (text.find(want) == std::string::npos) std::cerr << "missing \"" << want << "\" in:\n" << text << "\n";
}

// Runs `body` in a child process (a death test in the threadsafe style, which re-runs this test
// alone) so the declarations it makes the registry refuse never reach this process's registry,
// where the tests that run after it would see them. The child exits 0 when `body` failed nothing.
void in_child(void (*body)()) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        body();
        std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

// The error expand_variants throws for `decl` (empty when it expands).
std::string expand_error(const VariantFamilyDecl& decl) {
  try {
    expand_variants(decl);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// out[i] = OUT(a[i] * S) for i < N: every axis kind, and N sizes the buffers.
void scale_body(const KernelVariant& v) {
  const uint32_t n = uint32_t(v.i("N"));
  const float s = float(v.f("S"));
  const DType out_type = v.type("OUT");
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", out_type, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = cast_to(a[i] * s, out_type); });
}

VariantFamilyDecl scale_family() {
  return VariantFamilyDecl{"test_scale",
                           &scale_body,
                           Mode::Elementwise,
                           {},
                           "{OUT}_s{S}_n{N}",
                           {type_axis("OUT", {DType::F32, DType::I32}), float_axis("S", {0.5, -3.25}),
                            int_axis("N", {37, 300})},
                           __FILE__,
                           __LINE__};
}

// A body that reads an axis its family does not declare.
void reads_unknown_axis(const KernelVariant& v) {
  Buffer out = output("out", f32, {uint32_t(v.i("TG"))});
  out[thread_id(0)] = 0.0f;
}

TEST(Variants, ExpandsTheProductInAxisOrderWithNamesFromTheTemplate) {
  std::vector<KernelVariant> vs = expand_variants(scale_family());
  std::vector<std::string> names;
  for (const KernelVariant& v : vs) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"test_scale_f32_s0p5_n37", "test_scale_f32_s0p5_n300",
                                             "test_scale_f32_sm3p25_n37", "test_scale_f32_sm3p25_n300",
                                             "test_scale_i32_s0p5_n37", "test_scale_i32_s0p5_n300",
                                             "test_scale_i32_sm3p25_n37", "test_scale_i32_sm3p25_n300"}));
  EXPECT_EQ(vs[2].describe(), "OUT=f32 S=-3.25 N=37");
  EXPECT_EQ(vs[2].i("N"), 37);
  EXPECT_EQ(vs[2].f("S"), -3.25);
  EXPECT_EQ(vs[2].type("OUT"), DType::F32);
  EXPECT_EQ(variant_value_text(VariantValue{VariantValue::Kind::Int, -3, DType::Void, 0}), "m3");
  EXPECT_EQ(variant_value_text(VariantValue{VariantValue::Kind::Float, 0, DType::Void, 1e-5}), "1em05");
}

TEST(Variants, TheStdlibFamilyIsRegisteredAndListed) {
  EXPECT_TRUE(registry_errors().empty()) << registry_errors().front();
  bool found = false;
  for (const VariantFamilyInfo& f : registered_variant_families()) {
    if (std::string(f.decl->family) != "iron_gemv_rows") continue;
    found = true;
    ASSERT_EQ(f.variants.size(), 3u);
    EXPECT_EQ(f.variants[0]->name, "iron_gemv_rows_x1");
    EXPECT_EQ(f.variants[2]->name, "iron_gemv_rows_x8");
    EXPECT_EQ(f.variants[2]->describe(), "VEC=8");
  }
  EXPECT_TRUE(found);
  for (const char* name : {"iron_gemv_rows_x1", "iron_gemv_rows_x4", "iron_gemv_rows_x8"}) {
    const KernelDecl* d = find_kernel_decl(name);
    ASSERT_NE(d, nullptr) << name;
    ASSERT_NE(d->variant, nullptr) << name;
    EXPECT_EQ(d->variant->family, "iron_gemv_rows");
    EXPECT_EQ(d->mode, Mode::Reduction);
  }
}

// VEC is a C++ value while the body is traced: x8's chunk loops (one for a k that is a multiple
// of VEC, one for any other) hold 8 loads of a and 8 of x each, x1's one loop one each; the tail
// loop adds one of each, except to x1, which has no tail code.
TEST(Variants, ValuesAreCompileTimeConstantsOfTheTracedBody) {
  auto loads = [](const char* name) {
    const ir::Kernel& k = kernel_ir(name);
    int n = 0;
    ir::walk(k, [&](ir::Id id) { n += k.insts[id].op == ir::Op::Load; });
    return n;
  };
  EXPECT_EQ(loads("iron_gemv_rows_x1"), 2);
  EXPECT_EQ(loads("iron_gemv_rows_x4"), 2 * 8 + 2);
  EXPECT_EQ(loads("iron_gemv_rows_x8"), 2 * 16 + 2);
  // N sizes the buffers and bounds the guard: the kernel has no scalar parameter at all.
  std::vector<KernelVariant> vs = expand_variants(scale_family());
  KernelDecl d{vs[1].name.c_str(), nullptr, Mode::Elementwise, {}, __FILE__, __LINE__};
  d.variant_body = &scale_body;
  d.variant = &vs[1];
  ir::Kernel k = trace_kernel(d);
  EXPECT_EQ(k.name, "test_scale_f32_s0p5_n300");
  ASSERT_EQ(k.params.size(), 2u);
  for (const auto& p : k.params) EXPECT_NE(p.name, "n");
}

TEST(Variants, BadDeclarationsAreLocatedErrorsNamingTheFamily) {
  struct Case {
    const char* what;
    VariantFamilyDecl decl;
    const char* want;
  };
  const int line = __LINE__;
  auto base = [&](const char* suffix, std::vector<VariantAxis> axes) {
    return VariantFamilyDecl{"fam", &scale_body, Mode::Elementwise, {}, suffix, std::move(axes), __FILE__, line};
  };
  std::vector<Case> cases = {
      {"unknown placeholder", base("{TG}x{VEC}", {int_axis("TG", {64, 128})}),
       "the suffix template \"{TG}x{VEC}\" names {VEC}, which is not an axis (its axes: TG)"},
      {"two variants, one name", base("{TG}", {int_axis("TG", {64, 128}), int_axis("VEC", {1, 4})}),
       "two variants have the name 'fam_64' (TG=64 VEC=1 and TG=64 VEC=4)"},
      {"empty axis", base("{TG}", {int_axis("TG", {})}), "axis 'TG' is empty"},
      {"no axis", base("x", {}), "declares no axis"},
      {"unclosed placeholder", base("{TG", {int_axis("TG", {64})}), "has an unclosed '{'"},
      {"bad character", base("{TG}-x", {int_axis("TG", {64})}), "has '-'; an entry name holds"},
      {"two axes of one name", base("{TG}", {int_axis("TG", {64}), int_axis("TG", {32})}), "two axes are named 'TG'"},
      {"generic type", base("{A}", {type_axis("A", {DType::Generic})}), "a type axis takes concrete dtypes"},
      {"infinite float", base("{E}", {float_axis("E", {INFINITY})}), "has a value that is not finite"},
      {"float values equal in a name", base("{E}", {float_axis("E", {0.1, 0.1000001})}),
       "two variants have the name 'fam_0p1'"},
  };
  const std::string located = source_path(__FILE__) + ":" + std::to_string(line) + ": variant family 'fam': ";
  for (const Case& c : cases) {
    std::string e = expand_error(c.decl);
    expect_contains(e, located);
    expect_contains(e, c.want);
  }
  EXPECT_EQ(expand_error(scale_family()), "");
}

TEST(Variants, ReadingAnUndeclaredAxisIsAnErrorAtTheRegistration) {
  VariantFamilyDecl fam{"fam", &reads_unknown_axis, Mode::Elementwise, {}, "{N}", {int_axis("N", {8})}, __FILE__, 7};
  std::vector<KernelVariant> vs = expand_variants(fam);
  KernelDecl d{vs[0].name.c_str(), nullptr, Mode::Elementwise, {}, __FILE__, 7};
  d.variant_body = &reads_unknown_axis;
  d.variant = &vs[0];
  try {
    trace_kernel(d);
    FAIL() << "traced";
  } catch (const Error& e) {
    expect_contains(e.what(), "kernel 'fam_8' is malformed (registered at " + source_path(__FILE__) + ":7)");
    expect_contains(e.what(), "variant family 'fam' has no axis 'TG' (its axes: N)");
  }
  KernelVariant v = vs[0];
  try {
    v.f("N");
    FAIL() << "read an int axis as a float";
  } catch (const Error& e) {
    expect_contains(e.what(), "axis 'N' is a int axis, read as a float axis");
  }
}

void name_clash() {
  ASSERT_NE(find_kernel_decl("iron_gemv_warp_rows"), nullptr);
  const size_t families = registered_variant_families().size();
  const int line = __LINE__;
  // Family iron_gemv_warp with the literal suffix "rows": its one kernel is iron_gemv_warp_rows.
  VariantFamilyDecl same{"iron_gemv_warp", &scale_body, Mode::Elementwise, {}, "rows", {int_axis("X", {1})}, __FILE__, line};
  EXPECT_EQ(register_variant_family(same), -1);
  std::vector<std::string> errors = registry_errors();
  ASSERT_EQ(errors.size(), 1u);
  expect_contains(errors[0], source_path(__FILE__) + ":" + std::to_string(line) + ": variant family 'iron_gemv_warp'");
  expect_contains(errors[0], "its kernel 'iron_gemv_warp_rows' (X=1) clashes with the kernel 'iron_gemv_warp_rows' registered at ");
  expect_contains(errors[0], "kernels/gemv/gemv.cpp:");
  for (const VariantFamilyInfo& f : registered_variant_families())  // nothing of the refused family
    EXPECT_NE(std::string(f.decl->family), "iron_gemv_warp");
  EXPECT_EQ(registered_variant_families().size(), families);
  // A plain kernel whose name a family's kernel has is refused too, naming the family.
  EXPECT_EQ(register_kernel(KernelDecl{"iron_gemv_rows_x4", nullptr, Mode::Reduction, {}, "k.cpp", 3}), -1);
  errors = registry_errors();
  ASSERT_EQ(errors.size(), 2u);
  expect_contains(errors.back(), "k.cpp:3: kernel 'iron_gemv_rows_x4' is registered twice: kernel 'iron_gemv_rows_x4' of variant family 'iron_gemv_rows' registered at ");
  expect_contains(errors.back(), "kernels/gemv/gemv_rows.cpp:");
  // The refused kernels are unknown, and asking for one says what the registry refused.
  try {
    kernel_ir("iron_gemv_warp_rows_x1");
    FAIL();
  } catch (const Error& e) {
    expect_contains(e.what(), "the registry refused:");
    expect_contains(e.what(), "variant family 'iron_gemv_warp'");
  }
}
TEST(VariantsDeathTest, ANameClashWithARegisteredKernelIsRefusedAndReported) { in_child(&name_clash); }

// Runs the runner in process with `args` (stdout captured); returns the exit code and messages.
int run_runner(std::vector<std::string> args, std::vector<nlohmann::json>& out) {
  args.insert(args.begin(), "iron-runner");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  int rc = runner_main(int(args.size()), argv.data());
  std::cout.rdbuf(old);
  std::istringstream lines(captured.str());
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  return rc;
}

// `list` sends each family with its axes and expansion, and the family and values of each of its
// kernels; once a declaration is refused, list, test and bench report it and exit 2.
void runner_refuses() {
  std::vector<nlohmann::json> msgs;
  ASSERT_EQ(run_runner({"list"}, msgs), 0);
  bool family = false, kernel = false;
  for (const auto& m : msgs) {
    if (m["type"] == "family" && m["name"] == "iron_gemv_rows") {
      family = true;
      EXPECT_EQ(m["suffix"], "x{VEC}");
      EXPECT_EQ(m["axes"].dump(), R"([{"name":"VEC","values":[1,4,8]}])");
      EXPECT_EQ(m["kernels"].size(), 3u);
      EXPECT_EQ(m["kernels"][1]["name"], "iron_gemv_rows_x4");
    }
    if (m["type"] == "kernel" && m["name"] == "iron_gemv_rows_x8") {
      kernel = true;
      EXPECT_EQ(m["family"], "iron_gemv_rows");
      EXPECT_EQ(m["variant"], "VEC=8");
    }
  }
  EXPECT_TRUE(family && kernel);
  VariantFamilyDecl bad{"iron_bad", &scale_body, Mode::Elementwise, {}, "{TG}x{VEC}", {int_axis("TG", {64})}, "bad.cpp", 9};
  EXPECT_EQ(register_variant_family(bad), -1);
  for (std::vector<std::string> args : {std::vector<std::string>{"list"}, {"test", "--backend", "interp", "-f", "iron_add"},
                                        {"bench", "--backend", "interp", "-f", "iron_add"}}) {
    msgs.clear();
    EXPECT_EQ(run_runner(args, msgs), 2) << args[0];
    bool reported = false;
    for (const auto& m : msgs)
      if (m["type"] == "error") {
        reported = true;
        expect_contains(m["message"].get<std::string>(), "bad.cpp:9: variant family 'iron_bad': the suffix template");
      }
    EXPECT_TRUE(reported) << args[0];
    if (!reported) std::cerr << args[0] << ": no error message\n";
  }
}
TEST(VariantsDeathTest, TheRunnerListsFamiliesAndRefusesToRunAfterABadDeclaration) { in_child(&runner_refuses); }

class VariantRun : public test::DeviceTest {};

// Every kernel of the test family on the backend against the CPU: f32 outputs bit-exact (one f32
// multiply), i32 outputs the truncation of that product.
TEST_P(VariantRun, EveryKernelOfAFamilyOverIntFloatAndTypeAxes) {
  std::vector<KernelVariant> vs = expand_variants(scale_family());
  for (const KernelVariant& v : vs) {
    KernelDecl d{v.name.c_str(), nullptr, Mode::Elementwise, {}, __FILE__, __LINE__};
    d.variant_body = &scale_body;
    d.variant = &v;
    ir::Kernel k = trace_kernel(d);
    const uint32_t n = uint32_t(v.i("N"));
    const float s = float(v.f("S"));
    std::vector<uint32_t> a(n), want(n);
    for (uint32_t i = 0; i < n; ++i) {
      float x = float(int(i * 37 % 201) - 100) + 0.375f;
      a[i] = test::bits_of(x);
      float p = x * s;
      want[i] = v.type("OUT") == DType::F32 ? test::bits_of(p) : uint32_t(int32_t(std::trunc(p)));
    }
    std::vector<test::Buf> bufs = {{"a", DType::F32, false, a}, {"out", v.type("OUT"), true, std::vector<uint32_t>(n, 0xdeadbeefu)}};
    test::Launch l;
    l.grid = {(n + 63) / 64, 1, 1};
    l.threadgroup = {64, 1, 1};
    std::vector<test::Buf> got = test::run_device(ctx(), k, bufs, l);
    std::vector<test::Buf> expected = bufs;
    expected[1].words = want;
    test::expect_same(expected, got, v.name);
  }
}
INSTANTIATE_TEST_SUITE_P(Backends, VariantRun, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace iron
