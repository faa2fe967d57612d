// IR: printer/parser round trip, parse errors, verifier diagnostics.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/builder.hpp"
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
  EXPECT_NE(parse_error("kernel k mode=Elementwise {\n  %0 = const<1> : q8\n}\n").find("unknown type 'q8'"),
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

// --- IR v2: types, attributes, operand lists --------------------------------------------------

TEST(IrTypes, EveryKindPrintsAndParsesBack) {
  const Type all[] = {Type(DType::F32),
                      Type(DType::Generic),
                      Type::vector(DType::F16, 2),
                      Type::vector(DType::BF16, 8),
                      Type::vector(DType::U32, 4),
                      Type::fragment(DType::F16, 16, 8, 16, FragRole::A),
                      Type::fragment(DType::BF16, 16, 8, 16, FragRole::B),
                      Type::fragment(DType::F32, 16, 8, 16, FragRole::Acc),
                      Type::token(),
                      Type()};
  for (Type t : all) {
    Type back;
    ASSERT_TRUE(parse_type(type_name(t), back)) << type_name(t);
    EXPECT_EQ(back, t) << type_name(t);
    EXPECT_EQ(back.code(), t.code());
    EXPECT_EQ(back.shape(), t.shape());
  }
  EXPECT_EQ(type_name(Type::fragment(DType::F32, 16, 8, 16, FragRole::Acc)), "frag<acc, f32, 16x8x16>");
  EXPECT_EQ(type_name(Type::vector(DType::F16, 2)), "vec2<f16>");
  // Canonical: equal types compare equal, different shapes or roles do not.
  EXPECT_EQ(Type::vector(DType::F16, 4), Type::vector(DType::F16, 4));
  EXPECT_NE(Type::vector(DType::F16, 4), Type::vector(DType::F16, 2));
  EXPECT_NE(Type::fragment(DType::F16, 16, 8, 16, FragRole::A), Type::fragment(DType::F16, 16, 8, 16, FragRole::B));
  EXPECT_NE(Type(DType::F32), Type::vector(DType::F32, 2));
  EXPECT_EQ(type_size(Type::vector(DType::F16, 8)), 16u);
  EXPECT_EQ(ir::resolve(Type::vector(DType::Generic, 4), DType::BF16), Type::vector(DType::BF16, 4));
  for (const char* bad : {"vec<f32>", "vec4<>", "vec4<q8>", "frag<c, f16, 16x8x16>", "frag<a, f16, 16x8>",
                          "frag<a, f16, 16x8x99999>", "vec4<void>", "tok", "vec4 <f32>"}) {
    Type t;
    EXPECT_FALSE(parse_type(bad, t)) << bad;
  }
}

TEST(IrTypes, NonScalarValuesRoundTripAndTheVerifierLocatesWhatNoOpTakes) {
  const std::string text =
      "kernel k mode=Elementwise {\n"
      "  param out: out buf<f32> extent=4\n"
      "  %0 = const<1> : f32\n"
      "  %1 = div %0, %0 : vec2<f16> @\"k.cpp\":7\n"
      "  %2 = mul %0, %0 : frag<acc, f32, 16x8x16> @\"k.cpp\":8\n"
      "}\n";
  ir::Kernel k = ir::parse(text);
  EXPECT_EQ(ir::print(k, {true}), text);
  std::string v = verify_error(text);
  EXPECT_NE(v.find("k.cpp:7: error: 'div': produces a vec2<f16> value; this op computes on scalars only"), std::string::npos) << v;
  EXPECT_NE(v.find("k.cpp:8: error: 'mul': produces a frag<acc, f32, 16x8x16> value"), std::string::npos) << v;
  // Both problems are reported: diagnostics are collected, not thrown one at a time.
  EXPECT_EQ(std::count(v.begin(), v.end(), '\n'), 2) << v;
}

TEST(IrAttrs, NamedAndPositionalFormsParseToTheSameInstruction) {
  const std::string positional =
      "kernel k mode=Elementwise {\n"
      "  param out: out buf<f32> extent=8\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<2.5> : f32\n"
      "  store<out> %0, %1\n"
      "}\n";
  std::string named = positional;
  named.replace(named.find("thread_id<0>"), 12, "thread_id<axis=0>");
  named.replace(named.find("const<2.5>"), 10, "const<value=2.5>");
  named.replace(named.find("store<out>"), 10, "store<param=out>");
  ir::Kernel a = ir::parse(positional), b = ir::parse(named);
  EXPECT_EQ(ir::print(b), positional);  // required attributes print positionally
  EXPECT_EQ(ir::content_hash(a), ir::content_hash(b));
  const ir::Inst& st = a.insts[a.blocks[0].insts[2]];
  EXPECT_EQ(st.param(), 0u);
  EXPECT_TRUE(st.has(ir::Attr::Param));
  EXPECT_FALSE(st.has(ir::Attr::Vec));
  EXPECT_EQ(a.insts[a.blocks[0].insts[1]].fattr(ir::Attr::Value), 2.5);
}

TEST(IrAttrs, MalformedAttributesAreLocatedErrors) {
  auto k = [](const std::string& body) {
    return "kernel k mode=Elementwise {\n  param out: out buf<f32> extent=8\n" + body + "}\n";
  };
  EXPECT_NE(parse_error(k("  %0 = thread_id<axis=0, axis=1> : u32\n")).find("IR parse error at 3:"), std::string::npos);
  EXPECT_NE(parse_error(k("  %0 = thread_id<axis=0, axis=1> : u32\n")).find("attribute 'axis' given twice"),
            std::string::npos);
  EXPECT_NE(parse_error(k("  %0 = thread_id<colour=1> : u32\n")).find("unknown attribute 'colour'"), std::string::npos);
  EXPECT_NE(parse_error(k("  %0 = thread_id<count=1> : u32\n")).find("'thread_id' takes no attribute 'count'"),
            std::string::npos);
  EXPECT_NE(parse_error(k("  %0 = thread_id : u32\n")).find("'thread_id' takes 1 attribute(s)"), std::string::npos);
  EXPECT_NE(parse_error(k("  %0 = thread_id<0> : u32\n  %1 = add<1> %0, %0 : u32\n")).find("'add' takes 0 attribute(s)"), std::string::npos);
  EXPECT_NE(parse_error(k("  %0 = thread_id<0> : u32\n  %1 = load<out, vec=9> %0 : f32\n"))
                .find("vector group width 9 is out of range [2, 8]"),
            std::string::npos);
}

TEST(IrAttrs, TheVerifierChecksHandBuiltInstructionsAgainstTheSchema) {
  ir::Kernel k = ir::parse(
      "kernel k mode=Elementwise {\n"
      "  param out: out buf<f32> extent=8\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<1> : f32\n"
      "  store<out> %0, %1\n"
      "}\n");
  ir::Inst& tid = k.insts[k.blocks[0].insts[0]];
  ir::Inst& st = k.insts[k.blocks[0].insts[2]];
  tid.erase(ir::Attr::Axis);
  tid.set(ir::Attr::Count, 3);
  st.set(ir::Attr::Param, 7);
  tid.loc = st.loc = {k.intern_file("hand.cpp"), 4};
  ir::Diagnostics d;
  EXPECT_FALSE(ir::verify(k, d));
  std::string v = d.render(k);
  EXPECT_NE(v.find("hand.cpp:4: error: 'thread_id': takes no attribute 'count'"), std::string::npos) << v;
  EXPECT_NE(v.find("'thread_id': needs attribute 'axis'"), std::string::npos) << v;
  EXPECT_NE(v.find("'store': attribute 'param' names no parameter"), std::string::npos) << v;
}

TEST(IrOperands, AnyNumberOfOperandsSurvivesCopiesAndTheVerifierChecksArity) {
  ir::Operands ops;
  for (ir::Id i = 0; i < 11; ++i) ops.push_back(i * 3);  // past the inline capacity
  ir::Operands copy = ops;
  ops[0] = 99;
  ASSERT_EQ(copy.size(), 11u);
  for (ir::Id i = 0; i < 11; ++i) EXPECT_EQ(copy[i], i * 3);
  EXPECT_EQ(ops[0], 99u);
  ir::Operands small{1, 2};
  small = copy;  // grows from inline storage into the heap
  EXPECT_EQ(small.size(), 11u);
  EXPECT_EQ(small[10], 30u);
  small.resize(2);
  EXPECT_EQ(small.size(), 2u);
  // A five-operand add parses (the text form has no operand limit) and the verifier names the arity.
  std::string v = verify_error(
      "kernel k mode=Elementwise {\n"
      "  %0 = const<1> : u32\n"
      "  %1 = add %0, %0, %0, %0, %0 : u32 @\"a.cpp\":3\n"
      "}\n");
  EXPECT_NE(v.find("a.cpp:3: error: 'add': expects 2 operand(s), has 5"), std::string::npos) << v;
}

TEST(IrBuilder, BuildsStructuredControlFlowThatVerifiesAndPrints) {
  ir::Kernel k;
  k.name = "built";
  k.mode = Mode::Reduction;
  ir::Param n;
  n.name = "n";
  n.kind = ir::ParamKind::Scalar;
  n.dtype = DType::U32;
  ir::Param out;
  out.name = "out";
  out.access = ir::Access::Write;
  out.extent_scalars = {0};
  k.params = {n, out};
  ir::Builder b(k);
  b.set_loc({k.intern_file("b.cpp"), 3});
  ir::Id count = b.param(0, DType::U32);
  ir::Id lid = b.builtin(ir::Op::LocalId, 0);
  ir::Id scratch = b.tg_alloc("scratch", DType::F32, 64);  // hoisted to the top of the entry block
  ir::Id acc = b.var(DType::F32, b.constant_float(DType::F32, 0.0));
  ir::Id i = b.begin_for(lid, count, b.builtin(ir::Op::GroupSize, 0));
  // Sequenced one per statement: C++ leaves the order of nested argument calls unspecified.
  ir::Id current = b.var_load(acc);
  ir::Id term = b.cast(i, DType::F32);
  b.var_store(acc, b.binary(ir::Op::Add, current, term));
  b.end();
  ir::Id in_range = b.binary(ir::Op::Lt, lid, b.constant_int(DType::U32, 64));
  ir::Id iff = b.begin_if(in_range);
  b.tg_store(scratch, lid, b.var_load(acc));
  b.begin_else(iff);
  b.store(1, lid, b.var_load(acc));
  b.end();
  b.barrier();
  EXPECT_EQ(b.depth(), 0u);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(k, d)) << d.render(k);
  EXPECT_EQ(ir::print(k),
            "kernel built mode=Reduction {\n"
            "  param n: scalar<u32>\n"
            "  param out: out buf<f32> extent=n\n"
            "  %0 = tg_alloc<scratch, 64> : f32\n"
            "  %1 = param<n> : u32\n"
            "  %2 = local_id<0> : u32\n"
            "  %3 = const<0> : f32\n"
            "  %4 = var %3 : f32\n"
            "  %5 = group_size<0> : u32\n"
            "  %6 = for %2, %1, %5 : u32 {\n"
            "    %7 = var_load %4 : f32\n"
            "    %8 = cast %6 : f32\n"
            "    %9 = add %7, %8 : f32\n"
            "    var_store %4, %9\n"
            "  }\n"
            "  %10 = const<64> : u32\n"
            "  %11 = lt %2, %10 : bool\n"
            "  if %11 {\n"
            "    %12 = var_load %4 : f32\n"
            "    tg_store %0, %2, %12\n"
            "  } else {\n"
            "    %13 = var_load %4 : f32\n"
            "    store<out> %2, %13\n"
            "  }\n"
            "  barrier\n"
            "}\n");
  for (ir::Id id : k.blocks[0].insts) EXPECT_EQ(k.where(k.insts[id].loc), "b.cpp:3");
}
