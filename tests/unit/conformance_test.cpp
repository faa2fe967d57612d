// The op conformance suite's generator and comparison (src/fuzz/conformance.hpp); the suite
// itself runs as the ctest entries conformance.* (`iron conformance --backend ...`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/ir.hpp"
#include "fuzz/conformance.hpp"
#include "passes/pass.hpp"

using namespace iron;

namespace {

const fuzz::ConformanceCase& find(const std::vector<fuzz::ConformanceCase>& cases, const std::string& name) {
  for (const fuzz::ConformanceCase& c : cases)
    if (c.name == name) return c;
  throw Error("no case " + name);
}

}  // namespace

TEST(Conformance, EveryComputationalOpHasCasesAtTheDtypesTheVerifierAdmits) {
  const std::vector<fuzz::ConformanceCase> cases = fuzz::conformance_cases();
  std::set<std::string> names, ops;
  for (const fuzz::ConformanceCase& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " twice";
    ops.insert(ir::mnemonic(c.op));
  }
  // Every pure op with operands that is not a built-in (or a packed pair), and every lane
  // operation with operands (reductions, scans, shuffles, votes), is in the suite.
  for (int o = 0; o < int(ir::Op::Count_); ++o) {
    const ir::Op op = ir::Op(o);
    if (ir::has_trait(op, ir::trait::B) || ir::op_info(op).arity < 1) continue;
    if (op == ir::Op::Pair || op == ir::Op::PairGet || op == ir::Op::Barrier || op == ir::Op::AtomicAddPair) continue;
    // Exchange and compare-and-swap return order-dependent values: AtomicsBitcastConformance.
    if (ir::is_atomic(op) && (ir::atomic_kind(op) == ir::Op::AtomicExchange || ir::atomic_kind(op) == ir::Op::AtomicCas))
      continue;
    const std::string m = ir::mnemonic(op);
    if (!ir::has_trait(op, ir::trait::P) && m.rfind("lane_", 0) != 0 && !ir::is_atomic(op)) continue;
    EXPECT_TRUE(ops.count(ir::mnemonic(op))) << ir::mnemonic(op) << " has no conformance case";
  }
  // The dtypes each op takes come from the verifier: arithmetic at every float register type and
  // integer width, never on a storage-only fp8 type or bool; casts between every pair.
  for (const char* n : {"conformance.add.f32", "conformance.add.f16", "conformance.add.bf16", "conformance.add.i8",
                        "conformance.add.u64", "conformance.div.i32", "conformance.shl.i16", "conformance.fma.bf16",
                        "conformance.exp.f32", "conformance.lt.u8", "conformance.select.bool", "conformance.not.bool",
                        "conformance.cast.f32.f8e4m3", "conformance.cast.f8e5m2.i64", "conformance.bitcast.f16.i16",
                        "conformance.clz.u32", "conformance.lane_sum.f32", "conformance.lane_shuffle_xor.bool",
                        "conformance.lane_ballot.bool", "conformance.lane_inclusive_sum.i32", "conformance.atomic_add.u64",
                        "conformance.tg_atomic_max.f32", "conformance.atomic_or.u32"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const char* n : {"conformance.add.f8e4m3", "conformance.add.bool", "conformance.exp.i32", "conformance.bitcast.f32.i64"})
    EXPECT_FALSE(names.count(n)) << n << " should not verify";
  EXPECT_GT(cases.size(), 300u);
}

TEST(Conformance, TheOracleIsTheOpsDefinitionOnEdgeValues) {
  const std::vector<fuzz::ConformanceCase> cases = fuzz::conformance_cases("conformance.div.i32");
  ASSERT_EQ(cases.size(), 1u);
  const fuzz::ConformanceCase& c = cases[0];
  // INT_MIN / -1 and x / 0 are defined (docs/semantics.md): INT_MIN and x.
  bool min_by_minus_one = false, by_zero = false;
  for (size_t i = 0; i < c.args.size(); ++i) {
    int32_t want;
    std::memcpy(&want, &c.want[i * 4], 4);
    const int32_t a = int32_t(c.args[i][0]), b = int32_t(c.args[i][1]);
    if (a == INT32_MIN && b == -1) min_by_minus_one = want == INT32_MIN;
    if (a == 7 && b == 0) by_zero = want == 7;
  }
  EXPECT_TRUE(min_by_minus_one);
  EXPECT_TRUE(by_zero);
}

TEST(Conformance, TheInterpreterAgreesAndACorruptedResultIsNamed) {
  const std::vector<fuzz::ConformanceCase> cases = fuzz::conformance_cases("conformance.m");  // max, min, mul, mulhi
  ASSERT_GE(cases.size(), 4u);
  for (const fuzz::ConformanceCase& c : cases) {
    auto got = fuzz::run_launch(passes::optimize(c.kernel), c.launch, 32);
    EXPECT_EQ(fuzz::conformance_difference(c, got.back(), false), "") << c.name;
  }
  const fuzz::ConformanceCase& c = find(cases, "conformance.min.f32");
  auto got = fuzz::run_launch(passes::optimize(c.kernel), c.launch, 32);
  // min(-0, +0) is -0: a result of +0 there is a difference, reported with its operands.
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (c.args[i][0] == 0x80000000u && c.args[i][1] == 0) {
      std::memset(&got.back()[i * 4], 0, 4);
      const std::string why = fuzz::conformance_difference(c, got.back(), false);
      EXPECT_NE(why.find("min(-0, 0) : f32 want -0, got 0"), std::string::npos) << why;
      return;
    }
  }
  FAIL() << "no min(-0, +0) element";
}

TEST(Conformance, BoundedOpsAreComparedWithinTheirStatedBound) {
  const std::vector<fuzz::ConformanceCase> cases = fuzz::conformance_cases("conformance.exp.f32");
  ASSERT_EQ(cases.size(), 1u);
  const fuzz::ConformanceCase& c = cases[0];
  std::vector<unsigned char> got = c.want;
  // exp(1) moved by 2^-18 relative passes (bound 2^-16); by 2^-14 it fails, naming the element.
  for (size_t i = 0; i < c.args.size(); ++i) {
    float x;
    std::memcpy(&x, &c.args[i][0], 4);
    if (x != 1.0f) continue;
    float w;
    std::memcpy(&w, &c.want[i * 4], 4);
    float near = w * (1 + 0x1p-18f), far = w * (1 + 0x1p-14f);
    std::memcpy(&got[i * 4], &near, 4);
    EXPECT_EQ(fuzz::conformance_difference(c, got, false), "");
    std::memcpy(&got[i * 4], &far, 4);
    EXPECT_NE(fuzz::conformance_difference(c, got, false).find("exp(1) : f32 want 2.71828"), std::string::npos);
    return;
  }
  FAIL() << "no exp(1) element";
}

TEST(Conformance, ABitcastOfANanMayGiveAnyNanPatternOfTheOperandsDtype) {
  // docs/semantics.md "bitcast": the bits of a NaN are the backend's. CUDA narrows an f16 NaN to
  // 0x7fff where the interpreter keeps 0x7e00; both are f16 NaNs. 0x3c00 is no NaN.
  // bf16 -> f16: every bf16 NaN reads as an f16 NaN, which a store may give as any f16 NaN
  // (NVIDIA's Vulkan stores 0x7e00, not a bf16 NaN pattern).
  for (const char* name : {"conformance.bitcast.f16.u16", "conformance.bitcast.bf16.i16", "conformance.bitcast.f16.bf16",
                           "conformance.bitcast.bf16.f16"}) {
    const std::vector<fuzz::ConformanceCase> cases = fuzz::conformance_cases(name);
    ASSERT_EQ(cases.size(), 1u) << name;
    const fuzz::ConformanceCase& c = cases[0];
    const uint16_t number = 0x3c00;  // f16 1.0, bf16 2^-7: a NaN in neither
    bool seen = false;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const uint32_t reg = uint32_t(c.args[i][0]);
      if ((reg & 0x7fffffffu) <= 0x7f800000u) continue;  // the operand's register is not a NaN
      seen = true;
      std::vector<unsigned char> got = c.want;
      const uint16_t other_nan = 0x7fff;
      std::memcpy(&got[i * 2], &other_nan, 2);
      EXPECT_EQ(fuzz::conformance_difference(c, got, false), "") << name;
      if (c.result == DType::F16) {
        const uint16_t f16_nan = 0x7e00;
        std::memcpy(&got[i * 2], &f16_nan, 2);
        EXPECT_EQ(fuzz::conformance_difference(c, got, false), "") << name;
      }
      std::memcpy(&got[i * 2], &number, 2);
      EXPECT_NE(fuzz::conformance_difference(c, got, false).find("element " + std::to_string(i) + ": bitcast(nan)"),
                std::string::npos)
          << name;
    }
    EXPECT_TRUE(seen) << name << " has no NaN operand";
  }
}

TEST(Conformance, AtomicOraclesAreTheFoldOfEveryThreadsValue) {
  const std::vector<fuzz::ConformanceCase> cases = fuzz::conformance_cases("conformance.atomic_max.i32");
  ASSERT_EQ(cases.size(), 1u);
  const fuzz::ConformanceCase& c = cases[0];
  // Slot k holds the maximum of its initial value and the values of threads k, k + 4, ...
  ASSERT_EQ(c.want.size(), 16u);
  for (size_t k = 0; k < 4; ++k) {
    int32_t want = int32_t(c.args[k][0]), got;
    for (size_t i = k; i < 256; i += 4) {
      int32_t x;
      std::memcpy(&x, &c.launch.buffers[0][i * 4], 4);
      want = std::max(want, x);
    }
    std::memcpy(&got, &c.want[k * 4], 4);
    EXPECT_EQ(got, want) << "slot " << k;
  }
  auto got = fuzz::run_launch(passes::optimize(c.kernel), c.launch, 32);
  EXPECT_EQ(fuzz::conformance_difference(c, got.back(), false), "");
}
