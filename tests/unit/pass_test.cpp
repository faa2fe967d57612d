// Text-IR pass tests: each tests/passes/*.ir file names one pass, an input kernel and the
// expected output of that pass alone (or an expected diagnostic, or "unchanged" for a case the
// pass must leave alone), plus the pass's known-bad mutation: with it switched on the output
// must differ, proving the expectation catches a broken pass. IRON_UPDATE_PASS_TESTS=1 rewrites
// the expectations from the current output (review the diff before committing).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/ir.hpp"
#include "iron/iron.hpp"
#include "passes/pass.hpp"

using namespace iron;

namespace {

// A device function with three arguments, so argument order is observable in kernel_inline tests.
void sub_mul_body() {
  using namespace iron::dsl;
  Expr a = arg(0, f32), b = arg(1, f32), c = arg(2, f32);
  ret(a - b * c);
}
IRON_DEVICE_FN(test_sub_mul, sub_mul_body);

struct Case {
  std::filesystem::path path;
  std::string pass, mutation, input, expect, expect_error;
  // "; specialize: NAME=VALUE" lines: scalars baked in (PipelineOptions::specialize), integers.
  std::vector<std::pair<std::string, int64_t>> specialize;
  bool unchanged = false;
};

Case load(const std::filesystem::path& path) {
  Case c;
  c.path = path;
  std::ifstream f(path);
  std::string line;
  enum { Header, Input, Expect } state = Header;
  while (std::getline(f, line)) {
    if (line.rfind("; pass: ", 0) == 0) c.pass = line.substr(8);
    else if (line.rfind("; mutation: ", 0) == 0) c.mutation = line.substr(12);
    else if (line.rfind("; specialize: ", 0) == 0) {
      const std::string item = line.substr(14);
      const size_t eq = item.find('=');
      c.specialize.emplace_back(item.substr(0, eq), std::stoll(item.substr(eq + 1)));
    }
    else if (line.rfind("; expect-error: ", 0) == 0) c.expect_error = line.substr(16);
    else if (line == "; expect: unchanged") c.unchanged = true;
    else if (line == "; expect:") state = Expect;
    else if (line.rfind("kernel ", 0) == 0 && state == Header) state = Input;
    if (line.rfind(";", 0) == 0) continue;
    if (state == Input) c.input += line + "\n";
    if (state == Expect) c.expect += line + "\n";
  }
  return c;
}

// Runs only `pass` on the input; returns the printed IR or "error: <diagnostics>".
std::string run_one(const Case& c, const std::string& mutation) {
  ir::Kernel k = ir::parse(c.input);
  passes::PipelineOptions opts;
  for (const std::string& n : passes::pass_names())
    if (n != c.pass) opts.disabled.insert(n);
  opts.mutation = mutation;
  for (const auto& [name, value] : c.specialize) {
    const int p = k.find_param(name);
    if (p < 0) return "error: '; specialize: " + name + "' names no parameter";
    const uint64_t bits = int_bits(k.params[size_t(p)].dtype) == 64 ? uint64_t(value) : uint64_t(uint32_t(value));
    opts.specialize.values.emplace_back(uint32_t(p), bits);
  }
  passes::PipelineResult r = passes::run_pipeline(k, opts);
  if (!r.ok()) return "error: " + r.diags.render(k);
  ir::Diagnostics v;
  if (!ir::verify(k, v)) return "error: verifier: " + v.render(k);
  return ir::print(k);
}

std::vector<std::filesystem::path> case_files() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(IRON_TEST_DATA) + "/passes"))
    if (e.path().extension() == ".ir") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class PassText : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(PassText, ExpectedOutputAndMutationCaught) {
  Case c = load(GetParam());
  ASSERT_FALSE(c.pass.empty()) << c.path << ": no '; pass:' line";
  ASSERT_FALSE(c.input.empty()) << c.path << ": no input kernel";
  std::string canonical_input = ir::print(ir::parse(c.input));
  std::string actual = run_one(c, "");
  std::string want;
  if (!c.expect_error.empty()) {
    EXPECT_NE(actual.find(c.expect_error), std::string::npos) << c.path << "\nactual:\n" << actual;
  } else if (c.unchanged) {
    EXPECT_EQ(actual, canonical_input) << c.path;
    want = canonical_input;
  } else if (c.expect.empty() || std::getenv("IRON_UPDATE_PASS_TESTS")) {
    // Rewrite the file: everything before the old expectation, then the new one.
    std::ifstream in(c.path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t cut = text.find("; expect:\n");
    if (cut != std::string::npos) text.resize(cut);
    std::ofstream f(c.path, std::ios::trunc);
    f << text << "; expect:\n" << actual;
    ADD_FAILURE() << c.path << ": expectation written; review it:\n" << actual;
    return;
  } else {
    want = ir::print(ir::parse(c.expect));
    EXPECT_EQ(actual, want) << c.path;
  }
  if (!c.mutation.empty()) {
    std::string mutated = run_one(c, c.mutation);
    bool caught = c.expect_error.empty() ? mutated != want : mutated.find(c.expect_error) == std::string::npos;
    EXPECT_TRUE(caught) << c.path << ": the known-bad mutation " << c.mutation << " was not caught";
  }
}

INSTANTIATE_TEST_SUITE_P(Files, PassText, testing::ValuesIn(case_files()),
                         [](const testing::TestParamInfo<std::filesystem::path>& p) {
                           return p.param.stem().string();
                         });

TEST(PassText, EveryPassHasATextTestWithAMutation) {
  std::set<std::string> covered, mutated;
  for (const auto& path : case_files()) {
    Case c = load(path);
    covered.insert(c.pass);
    if (!c.mutation.empty()) mutated.insert(c.pass);
  }
  for (const std::string& n : passes::pass_names()) {
    EXPECT_TRUE(covered.count(n)) << "no text test for pass " << n;
    EXPECT_TRUE(mutated.count(n)) << "no known-bad mutation tested for pass " << n;
  }
}

}  // namespace
