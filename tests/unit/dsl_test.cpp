// The DSL: the mode gate, source locations on every op, literal typing and the errors a
// malformed kernel body produces (each naming the kernel and the DSL file:line).
#include <gtest/gtest.h>

#include <string>

#include "core/ir.hpp"
#include "iron/iron.hpp"

using namespace iron;
using namespace iron::dsl;

namespace {

// Traces `body` and returns the error message ("" when it traced cleanly).
std::string trace_error(KernelBody body, Mode mode, std::vector<DType> dtypes = {}) {
  try {
    trace_kernel(KernelDecl{"test_kernel", body, mode, std::move(dtypes), __FILE__, __LINE__});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int g_program_id_line = 0;
void reads_program_id() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u32, {n});
  g_program_id_line = __LINE__ + 1;
  Expr p = program_id(0);
  out[p] = p;
}

int g_thread_id_line = 0;
void reads_thread_id() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u32, {n});
  g_thread_id_line = __LINE__ + 1;
  Expr i = thread_id(0);
  out[i] = i;
}

}  // namespace

TEST(DslGate, ElementwiseKernelReadingProgramIdIsRejectedWithNameAndLocation) {
  std::string e = trace_error(&reads_program_id, Mode::Elementwise);
  EXPECT_NE(e.find("test_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("program_id"), std::string::npos) << e;
  EXPECT_NE(e.find("mode Elementwise"), std::string::npos) << e;
  EXPECT_NE(e.find("tests/unit/dsl_test.cpp:" + std::to_string(g_program_id_line)), std::string::npos) << e;
  EXPECT_EQ(trace_error(&reads_program_id, Mode::Reduction), "");
}

TEST(DslGate, ReductionKernelReadingThreadIdIsRejected) {
  std::string e = trace_error(&reads_thread_id, Mode::Reduction);
  EXPECT_NE(e.find("thread_id"), std::string::npos) << e;
  EXPECT_NE(e.find("dsl_test.cpp:" + std::to_string(g_thread_id_line)), std::string::npos) << e;
  EXPECT_EQ(trace_error(&reads_thread_id, Mode::Elementwise), "");
}

static void group_ops_in_elementwise() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  out[i] = group_sum(x[i]);
}
TEST(DslGate, LaneAndThreadgroupOperationsNeedReductionMode) {
  std::string e = trace_error(&group_ops_in_elementwise, Mode::Elementwise);
  EXPECT_NE(e.find("lane_sum"), std::string::npos) << e;
  EXPECT_NE(e.find("barrier"), std::string::npos) << e;
  EXPECT_NE(e.find("tg_alloc"), std::string::npos) << e;
}

TEST(DslLocations, EveryOpOfEveryRegisteredKernelCarriesItsDslLine) {
  for (const KernelDecl* d : registered_kernels()) {
    const ir::Kernel& k = kernel_ir(d->name);
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      EXPECT_NE(in.loc.line, 0u) << d->name << " op " << ir::mnemonic(in.op) << " has no location";
      EXPECT_NE(k.where(in.loc).find("kernels/"), std::string::npos) << d->name << ": " << k.where(in.loc);
    });
  }
}

// The three-argument async_copy (every element valid) places its constant at the caller's line,
// like every other DSL call, not at the tracer's.
static void copies_whole_chunks() {
  Buffer x = input("x", f32, {64u});
  Buffer out = output("out", f32, {64u});
  TgBuffer s = threadgroup_alloc("s", f32, 64u);
  Expr l = local_id(0);
  async_copy(s[l * 4u], x[l * 4u], 4);
  async_commit();
  async_wait(0);
  barrier();
  out[l] = s[l];
}
TEST(DslLocations, ACopyWithoutAValidCountIsLocatedAtItsCaller) {
  const ir::Kernel k = trace_kernel(KernelDecl{"copy_kernel", &copies_whole_chunks, Mode::Reduction, {}, __FILE__, __LINE__});
  size_t copies = 0;
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    EXPECT_NE(k.where(in.loc).find("tests/unit/dsl_test.cpp:"), std::string::npos)
        << ir::mnemonic(in.op) << " at " << k.where(in.loc);
    copies += in.op == ir::Op::AsyncCopy;
  });
  EXPECT_EQ(copies, 1u);
}

static void float_literal_with_u32() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u32, {n});
  Expr i = thread_id(0);
  out[i] = i * 0.5f;
}
static void mixes_f32_and_u32() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  out[i] = x[i] + i;
}
TEST(DslTyping, NoSilentIntFloatMixing) {
  std::string e = trace_error(&float_literal_with_u32, Mode::Elementwise);
  EXPECT_NE(e.find("float literal used with a u32 value"), std::string::npos) << e;
  e = trace_error(&mixes_f32_and_u32, Mode::Elementwise);
  EXPECT_NE(e.find("insert a cast"), std::string::npos) << e;
  EXPECT_NE(e.find("dsl_test.cpp:"), std::string::npos) << e;
}

static void literal_takes_other_operand_dtype() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = x[i] * 2 + 0.5; });
}
TEST(DslTyping, LiteralsTakeTheOtherOperandsDtype) {
  ir::Kernel k = trace_kernel(KernelDecl{"lit", &literal_takes_other_operand_dtype, Mode::Elementwise,
                                         {DType::F32, DType::F16}, __FILE__, __LINE__});
  int consts = 0;
  ir::walk(k, [&](ir::Id id) {
    if (k.insts[id].op == ir::Op::Const && k.insts[id].type == DType::Generic) ++consts;
  });
  EXPECT_EQ(consts, 2);
}

static void duplicate_threadgroup_names() {
  TgBuffer a = threadgroup_alloc("scratch", f32, 32);
  TgBuffer b = threadgroup_alloc("scratch", f32, 32);
  a[local_id(0)] = 1.0f;
  b[local_id(0)] = 2.0f;
}
TEST(DslErrors, ThreadgroupAllocationNamesMustBeUnique) {
  std::string e = trace_error(&duplicate_threadgroup_names, Mode::Reduction);
  EXPECT_NE(e.find("'scratch' declared twice"), std::string::npos) << e;
}

static void writes_input() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  x[thread_id(0)] = 1.0f;
}
TEST(DslErrors, StoringIntoAnInputBufferIsRejected) {
  std::string e = trace_error(&writes_input, Mode::Elementwise);
  EXPECT_NE(e.find("writes input buffer 'x'"), std::string::npos) << e;
}

static void bad_extent() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n + 1u});
  Buffer out = output("out", f32, {n});
  out[thread_id(0)] = x[thread_id(0)];
}
TEST(DslErrors, ExtentMustBeScalarsAndLiterals) {
  std::string e = trace_error(&bad_extent, Mode::Elementwise);
  EXPECT_NE(e.find("extent of 'x' must be a product"), std::string::npos) << e;
}

static void uses_t_without_dtypes() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", T, {n});
  out[thread_id(0)] = 1.0f;
}
TEST(DslErrors, GenericKernelMustDeclareItsDtypes) {
  std::string e = trace_error(&uses_t_without_dtypes, Mode::Elementwise);
  EXPECT_NE(e.find("declares no dtypes"), std::string::npos) << e;
  EXPECT_EQ(trace_error(&uses_t_without_dtypes, Mode::Elementwise, {DType::F32}), "");
}

static void throws_inside() { throw std::runtime_error("host code failed"); }
TEST(DslErrors, AnExceptionInTheBodyBecomesADiagnostic) {
  std::string e = trace_error(&throws_inside, Mode::Elementwise);
  EXPECT_NE(e.find("host code failed"), std::string::npos) << e;
}

TEST(DslErrors, DslCallOutsideATraceThrows) { EXPECT_THROW(thread_id(0), Error); }

TEST(Registry, HoldsTheStandardLibraryAndItsTests) {
  // A registry emptied by the linker would make every other test vacuous.
  auto kernels = registered_kernels();
  ASSERT_GE(kernels.size(), 6u);
  for (const char* name : {"iron_add", "iron_mul", "iron_exp", "iron_silu", "iron_rmsnorm", "iron_softmax"}) {
    ASSERT_NE(find_kernel_decl(name), nullptr) << name;
    int cases = 0;
    for (const TestDecl* t : registered_tests()) cases += std::string(t->kernel) == name;
    EXPECT_GE(cases, 1) << name << " has no test case";
  }
  EXPECT_GE(registered_tests().size(), 11u);
  EXPECT_THROW(kernel_ir("no_such_kernel"), Error);
}

static void logic_on_traced_values() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u32, {n});
  Expr i = thread_id(0);
  Expr inside = (i < n) && !(i == 3u);
  Expr either = (i < 2u) || (i > 5u);
  if_(inside && either, [&] { out[i] = i; });
}
TEST(DslTyping, LogicalOperatorsOnTracedValuesCompile) {
  ir::Kernel k = trace_kernel(KernelDecl{"logic", &logic_on_traced_values, Mode::Elementwise, {}, __FILE__, __LINE__});
  int ands = 0, ors = 0, nots = 0;
  ir::walk(k, [&](ir::Id id) {
    ands += k.insts[id].op == ir::Op::And;
    ors += k.insts[id].op == ir::Op::Or;
    nots += k.insts[id].op == ir::Op::Not;
  });
  EXPECT_EQ(ands, 2);
  EXPECT_EQ(ors, 1);
  EXPECT_EQ(nots, 1);
}

static void zero_step_loop() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u32, {n});
  for_(local_id(0), n, 0u, [&](Expr j) { out[j] = j; });
}
TEST(DslErrors, ALoopWithAConstantZeroStepIsRejected) {
  std::string e = trace_error(&zero_step_loop, Mode::Reduction);
  EXPECT_NE(e.find("loop step is 0; it must be positive"), std::string::npos) << e;
}

static void group_sum_in_a_loop() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  Var<f32> acc = 0.0f;
  for_(0u, 4u, [&](Expr r) { acc += group_sum(x[local_id(0) + r]); });
  out[local_id(0)] = acc;
}
TEST(DslReductions, AGroupReductionEndsWithABarrierSoALoopCannotOverwriteItsScratch) {
  ir::Kernel k = trace_kernel(KernelDecl{"gs", &group_sum_in_a_loop, Mode::Reduction, {}, __FILE__, __LINE__});
  // Inside the loop body: barrier (publish), then the lane sums, then the closing barrier last.
  ir::Id loop = ir::kNone;
  ir::walk(k, [&](ir::Id id) {
    if (k.insts[id].op == ir::Op::For && loop == ir::kNone) loop = id;
  });
  ASSERT_NE(loop, ir::kNone);
  const auto& body = k.blocks[k.insts[loop].blocks[0]].insts;
  int barriers = 0;
  for (ir::Id id : body) barriers += k.insts[id].op == ir::Op::Barrier;
  EXPECT_EQ(barriers, 2);
}
