// IR: printer/parser round trip, parse errors, verifier diagnostics.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "ir_text.hpp"

using namespace iron;
using iron::test::parse_error;

TEST(Ir, EveryRegisteredKernelRoundTripsThroughText) {
  auto kernels = registered_kernels();
  ASSERT_GE(kernels.size(), 6u);
  for (const KernelDecl* d : kernels) {
    const ir::Kernel& k = kernel_ir(d->name);
    for (bool locs : {false, true}) {
      std::string text = ir::print(k, {locs});
      ir::Kernel back = ir::parse(text);
      ir::Diagnostics diags;
      EXPECT_TRUE(ir::verify(back, diags)) << d->name << "\n" << diags.render(back);
      EXPECT_EQ(ir::print(back, {locs}), text) << d->name;
    }
    EXPECT_EQ(ir::content_hash(ir::parse(ir::print(k))), ir::content_hash(k));
  }
}

namespace {
std::string verify_error(const std::string& text) {
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}
}  // namespace

TEST(IrParse, MalformedTextNamesTheLineAndColumn) {
  EXPECT_NE(parse_error("kernel k mode=Elementwise {\n  %0 = frobnicate : u32\n}\n").find("IR parse error at 2:8: unknown op 'frobnicate'"),
            std::string::npos);
  EXPECT_NE(parse_error("kernel k mode=Elementwise {\n  %1 = add %0, %0 : u32\n}\n").find("undefined value %0"),
            std::string::npos);
  EXPECT_NE(parse_error("kernel k mode=Elementwise {\n  %0 = thread_id<0> : u32\n").find("missing '}'"),
            std::string::npos);
  EXPECT_NE(parse_error("kernel k mode=Sideways {\n}\n").find("unknown mode"), std::string::npos);
  EXPECT_NE(parse_error("kernel k mode=Elementwise {\n  param a: in buf<f32> extent=m\n}\n").find("unknown scalar 'm'"),
            std::string::npos);
  EXPECT_NE(parse_error("kernel k mode=Elementwise {\n  %0 = const<1> : q8\n}\n").find("unknown dtype 'q8'"),
            std::string::npos);
}

TEST(IrVerify, ValuesDoNotEscapeTheirBlock) {
  std::string e = verify_error(
      "kernel k mode=Elementwise {\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<4> : u32\n"
      "  %2 = lt %0, %1 : bool\n"
      "  if %2 {\n"
      "    %3 = add %0, %1 : u32\n"
      "  }\n"
      "  %4 = add %3, %1 : u32\n"
      "}\n");
  EXPECT_NE(e.find("outside the scope"), std::string::npos) << e;
}

TEST(IrVerify, InductionVariableIsVisibleInsideTheLoopOnly) {
  std::string e = verify_error(
      "kernel k mode=Reduction {\n"
      "  %0 = local_id<0> : u32\n"
      "  %1 = const<64> : u32\n"
      "  %2 = group_size<0> : u32\n"
      "  %3 = for %0, %1, %2 : u32 {\n"
      "    %4 = add %3, %1 : u32\n"
      "  }\n"
      "  %5 = add %3, %1 : u32\n"
      "}\n");
  // Exactly one error: the use after the loop, not the one inside it.
  EXPECT_NE(e.find("operand 0 is used outside the scope"), std::string::npos) << e;
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
}

TEST(IrVerify, TypeRulesAreCollectedTogether) {
  std::string e = verify_error(
      "kernel k mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param x: in buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = add %1, %0 : f32\n"
      "  %3 = exp %0 : u32\n"
      "  store<x> %0, %1\n"
      "}\n");
  EXPECT_NE(e.find("operand 1 is u32 but the result is f32"), std::string::npos) << e;
  EXPECT_NE(e.find("'exp': is defined on floats only"), std::string::npos) << e;
  EXPECT_NE(e.find("writes input buffer 'x'"), std::string::npos) << e;
}

TEST(IrVerify, StructuralDamageIsReportedNotCrashedOn) {
  ir::Kernel k = ir::parse(
      "kernel k mode=Elementwise {\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<4> : u32\n"
      "  %2 = lt %0, %1 : bool\n"
      "  if %2 {\n"
      "    %3 = add %0, %1 : u32\n"
      "  }\n"
      "}\n");
  // Make the if's block appear twice and point an operand at a missing value.
  k.blocks[0].insts.push_back(k.blocks[0].insts.back());
  k.insts[2].operands[0] = 999;
  ir::Diagnostics d;
  EXPECT_FALSE(ir::verify(k, d));
  std::string e = d.render(k);
  EXPECT_NE(e.find("not a valid value id"), std::string::npos) << e;
  EXPECT_NE(e.find("more than one"), std::string::npos) << e;
}
