// Codegen: deterministic emission, the dtype spellings of each dialect, and located diagnostics
// for ops a dialect cannot express.
#include <gtest/gtest.h>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "passes/pass.hpp"

using namespace iron;

// Every instantiation's GLSL is compiled to SPIR-V and validated by CTest's build.emit_all_sm_90a
// (`iron build --emit cuda,spirv,ir`), and run on lavapipe by corpus.vulkan; here, emission alone.
TEST(Codegen, EmissionIsDeterministicForEveryKernel) {
  for (const KernelDecl* d : registered_kernels()) {
    const ir::Kernel k = passes::optimize(kernel_ir(d->name));
    for (Instantiation t : ir::instantiations(k)) {
      // A warpgroup kernel (wgmma, CUDA only): GLSL refuses it by name (the tensor-map kernels
      // already at their tensor-map parameters).
      if (ir::uses_warpgroup_ops(k)) {
        codegen::Emitted g = codegen::emit(k, t, codegen::Target::Glsl);
        EXPECT_FALSE(g.ok()) << d->name;
        const std::string why = g.diags.render(k);
        EXPECT_TRUE(why.find("the GLSL dialect cannot express") != std::string::npos ||
                    why.find("is not expressible on GLSL 450; a tensor map is CUDA's") != std::string::npos)
            << why;
        ASSERT_TRUE(codegen::emit(k, t, codegen::Target::Cuda).ok()) << d->name;
        continue;
      }
      for (codegen::Target target : {codegen::Target::Cuda, codegen::Target::Glsl}) {
        codegen::Emitted a = codegen::emit(k, t, target);
        codegen::Emitted b = codegen::emit(k, t, target);
        ASSERT_TRUE(a.ok()) << a.diags.render(k);
        EXPECT_EQ(a.source, b.source) << d->name;
      }
    }
  }
}

// A store of a cast to the buffer's own narrow float dtype rounds once: the cast's rounding and
// the store's are the same, so the store rounds the f32 value itself (issue: every such store
// used to read __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(x)))).
TEST(Codegen, AStoreOfACastRoundsOnce) {
  for (const char* t : {"f16", "bf16", "f8e4m3", "f8e5m2"}) {
    const std::string text = std::string("kernel k mode=Elementwise {\n  param x : in buf<f32> extent=64\n") +
                             "  param y: out buf<" + t + "> extent=64\n" +
                             "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = mul %1, %1 : f32\n" +
                             "  %3 = cast %2 : " + t + "\n  store<y> %0, %3\n}\n";
    const ir::Kernel k = passes::optimize(ir::parse(text));
    const std::string cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda).source;
    const std::string glsl = codegen::emit(k, DType::F32, codegen::Target::Glsl).source;
    const std::string cuda_round = std::string(t) == "f16" ? "__float2half_rn(" : std::string(t) == "bf16" ? "__float2bfloat16_rn(" : std::string("iron_f32_to_") + (t + 2) + "(";
    const std::string glsl_round = std::string(t) == "f16" ? "iron_f32_to_f16(" : std::string(t) == "bf16" ? "iron_f32_to_bf16(" : std::string("iron_f32_to_") + (t + 2) + "(";
    auto count = [](const std::string& src, const std::string& what, size_t from) {
      size_t n = 0;
      for (size_t at = src.find(what, from); at != std::string::npos; at = src.find(what, at + 1)) ++n;
      return n;
    };
    // In the kernel body (after the helpers): one rounding call, the store's.
    const size_t cuda_body = cuda.find("__global__");
    EXPECT_EQ(count(cuda, cuda_round, cuda_body), 1u) << t << "\n" << cuda;
    EXPECT_EQ(cuda.find("2float(__float2"), std::string::npos) << cuda;
    const size_t glsl_body = glsl.find("void main()");
    const std::string stored = glsl.substr(glsl.find("p_y.data["));
    EXPECT_EQ(count(stored.substr(0, stored.find(';')), glsl_round, 0), 1u) << t << "\n" << glsl;
    EXPECT_EQ(stored.substr(0, stored.find(';')).find("_to_f32("), std::string::npos) << t << "\n" << glsl;
    (void)glsl_body;
  }
}

TEST(Codegen, SixteenBitDtypesAreStoredNarrowAndComputedInF32) {
  const ir::Kernel k = passes::optimize(kernel_ir("iron_add"));
  std::string cuda_bf16 = codegen::emit(k, DType::BF16, codegen::Target::Cuda).source;
  EXPECT_NE(cuda_bf16.find("const __nv_bfloat16* __restrict__ p_a"), std::string::npos) << cuda_bf16;
  EXPECT_NE(cuda_bf16.find("__bfloat162float(p_a["), std::string::npos);  // the scalar tail path
  EXPECT_NE(cuda_bf16.find("__float2bfloat16_rn("), std::string::npos);
  EXPECT_NE(cuda_bf16.find("extern \"C\" __global__ void iron_add_bf16("), std::string::npos);

  std::string glsl_bf16 = codegen::emit(k, DType::BF16, codegen::Target::Glsl).source;
  EXPECT_NE(glsl_bf16.find("uint16_t data[]"), std::string::npos) << glsl_bf16;
  EXPECT_NE(glsl_bf16.find("iron_f32_to_bf16("), std::string::npos);
  EXPECT_NE(glsl_bf16.find("readonly buffer"), std::string::npos);

  std::string glsl_f16 = codegen::emit(k, DType::F16, codegen::Target::Glsl).source;
  // f16 is stored as 16 bits too and narrowed by Iron's own round-to-nearest-even helper:
  // GLSL's float16_t(x) rounding is the driver's (NVIDIA gives 65504 where inf is due).
  EXPECT_NE(glsl_f16.find("uint16_t data[]"), std::string::npos) << glsl_f16;
  EXPECT_NE(glsl_f16.find("iron_f32_to_f16("), std::string::npos);
  EXPECT_EQ(glsl_f16.find("float16_t"), std::string::npos);
  EXPECT_NE(glsl_f16.find("GL_EXT_shader_16bit_storage"), std::string::npos);
}

TEST(Codegen, GlslFloatDivisionAndSqrtUseTheExactHelpers) {
  // Vulkan allows 2.5 ulp for `/` and an inexact sqrt: GLSL calls the exact helpers instead
  // (glsl_exact_math.inc); CUDA's `/` and sqrtf are IEEE under NVRTC's defaults.
  const ir::Kernel k = ir::parse(
      "kernel div_sqrt mode=Elementwise {\n"
      "  param x: in buf<f32> extent=4\n"
      "  param y: out buf<f32> extent=4\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = sqrt %1 : f32\n"
      "  %3 = div %2, %1 : f32\n"
      "  store<y> %0, %3\n"
      "}\n");
  std::string glsl = codegen::emit(k, DType::F32, codegen::Target::Glsl).source;
  EXPECT_NE(glsl.find("iron_div_f32(v"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("iron_sqrt_f32(v"), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find(" / v"), std::string::npos) << glsl;
  std::string cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda).source;
  EXPECT_EQ(cuda.find("iron_div_f32"), std::string::npos) << cuda;
}

TEST(Codegen, VectorGroupsBecome128BitAccesses) {
  // vectorize groups the 8 elements a thread owns; each dtype gets accesses of 16 bytes.
  const ir::Kernel k = passes::optimize(kernel_ir("iron_add"));
  for (DType t : {DType::F16, DType::BF16}) {
    std::string cuda = codegen::emit(k, t, codegen::Target::Cuda).source;
    EXPECT_NE(cuda.find("*reinterpret_cast<const uint4*>(p_a + "), std::string::npos) << cuda;
    EXPECT_NE(cuda.find("*reinterpret_cast<uint4*>(p_out + "), std::string::npos) << cuda;
    std::string glsl = codegen::emit(k, t, codegen::Target::Glsl).source;
    EXPECT_NE(glsl.find("{ uvec4 data[]; } p_a_v8;"), std::string::npos) << glsl;
  }
  std::string cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda).source;
  EXPECT_NE(cuda.find("*reinterpret_cast<const float4*>(p_a + "), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("*reinterpret_cast<float4*>(p_out + "), std::string::npos) << cuda;
  std::string glsl = codegen::emit(k, DType::F32, codegen::Target::Glsl).source;
  EXPECT_NE(glsl.find("{ vec4 data[]; } p_out_v4;"), std::string::npos) << glsl;
}

TEST(Codegen, LaneOperationsUseTheTargetsPrimitives) {
  const ir::Kernel k = passes::optimize(kernel_ir("iron_softmax"));
  std::string cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda).source;
  EXPECT_NE(cuda.find("__shfl_xor_sync"), std::string::npos);
  EXPECT_NE(cuda.find("__syncthreads();"), std::string::npos);
  EXPECT_NE(cuda.find("__shared__ float tg_iron_group_max_0[256];"), std::string::npos) << cuda;
  std::string glsl = codegen::emit(k, DType::F32, codegen::Target::Glsl).source;
  // Butterflies in the interpreter's order, never the driver-ordered subgroupAdd/subgroupMax.
  EXPECT_NE(glsl.find("subgroupShuffleXor("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("iron_lane_max("), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("subgroupMax("), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("subgroupAdd("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("gl_SubgroupSize"), std::string::npos);  // queried, never assumed
  // lane_max of f32 follows the float max rule (all-NaN lanes give NaN, -0 < +0) on both.
  EXPECT_NE(cuda.find("v = iron_fmax(v, __shfl_xor_sync("), std::string::npos) << cuda;
  EXPECT_NE(glsl.find("v = iron_fmax(v, subgroupShuffleXor("), std::string::npos) << glsl;
}

namespace {

// Emits `body` (IR lines after the params) of a one-thread kernel with an i32, a u32 and an f32
// input and an i32, u32, f32 output, for both targets; the GLSL must also compile and validate.
struct EdgeSources {
  std::string cuda, glsl;
};
EdgeSources emit_edge(const std::string& body) {
  ir::Kernel k = ir::parse(
      "kernel edge mode=Elementwise {\n"
      "  param ai: in buf<i32> extent=4\n"
      "  param au: in buf<u32> extent=4\n"
      "  param af: in buf<f32> extent=4\n"
      "  param oi: out buf<i32> extent=4\n"
      "  param ou: out buf<u32> extent=4\n"
      "  param of: out buf<f32> extent=4\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<ai> %0 : i32\n"
      "  %2 = load<au> %0 : u32\n"
      "  %3 = load<af> %0 : f32\n" +
      body + "}\n");
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(k, d)) << d.render(k);
  EdgeSources out;
  codegen::Emitted c = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  codegen::Emitted g = codegen::emit(k, DType::F32, codegen::Target::Glsl);
  EXPECT_TRUE(c.ok() && g.ok()) << c.diags.render(k) << g.diags.render(k);
  codegen::Spirv spv = codegen::compile_glsl(g.source, "edge");
  EXPECT_TRUE(spv.ok) << spv.log << g.source;
  out.cuda = c.source;
  out.glsl = g.source;
  return out;
}

}  // namespace

// docs/semantics.md: % truncates (the sign of the dividend). GLSL's % is OpSMod (the sign of the
// divisor), so the dialect must not emit it for i32.
TEST(Codegen, IntegerRemainderTruncatesOnBothTargets) {
  EdgeSources e = emit_edge("  %4 = rem %1, %1 : i32\n  store<oi> %0, %4\n  %5 = div %1, %1 : i32\n  store<oi> %0, %5\n");
  EXPECT_NE(e.glsl.find("iron_rem_i32(v1, v1)"), std::string::npos) << e.glsl;
  EXPECT_EQ(e.glsl.find(" % b"), std::string::npos) << e.glsl;  // the i32 helper has no OpSMod
  EXPECT_NE(e.glsl.find("if (b == 0 || b == -1) return 0;"), std::string::npos) << e.glsl;
  EXPECT_NE(e.glsl.find("if (b == 0) return a;"), std::string::npos) << e.glsl;
  EXPECT_NE(e.cuda.find("iron_rem_i32(v1, v1)"), std::string::npos) << e.cuda;
  EXPECT_NE(e.cuda.find("iron_div_i32(v1, v1)"), std::string::npos) << e.cuda;
}

// docs/semantics.md: float -> int truncates, saturates, NaN -> 0. GLSL int(f) is undefined out
// of range (lavapipe gives INT_MIN); CUDA spells the saturating cvt.rzi directly.
TEST(Codegen, FloatToIntCastsSaturateOnBothTargets) {
  EdgeSources e = emit_edge("  %4 = cast %3 : i32\n  store<oi> %0, %4\n  %5 = cast %3 : u32\n  store<ou> %0, %5\n");
  EXPECT_NE(e.cuda.find("__float2int_rz(v3)"), std::string::npos) << e.cuda;
  EXPECT_NE(e.cuda.find("__float2uint_rz(v3)"), std::string::npos) << e.cuda;
  EXPECT_NE(e.glsl.find("iron_f2i(v3)"), std::string::npos) << e.glsl;
  EXPECT_NE(e.glsl.find("iron_f2u(v3)"), std::string::npos) << e.glsl;
}

// lavapipe folds arithmetic with a constant zero (x - (-0.0) to x, x * float(0) to +0): GLSL
// spells the constants -0.0 and a cast of an integer constant 0 as zeros it cannot see (the
// kernel is emitted unoptimized, as const_fold would fold the cast to f32).
TEST(Codegen, GlslSpellsZeroConstantsOpaquely) {
  EdgeSources e = emit_edge(
      "  %4 = const<0> : i32\n  %5 = cast %4 : f32\n  %6 = mul %3, %5 : f32\n"
      "  %7 = const<-0.0> : f32\n  %8 = sub %6, %7 : f32\n  store<of> %0, %8\n");
  EXPECT_NE(e.glsl.find("iron_zero"), std::string::npos) << e.glsl;
  EXPECT_NE(e.glsl.find("iron_neg_zero"), std::string::npos) << e.glsl;
  EXPECT_EQ(e.glsl.find("float(0"), std::string::npos) << e.glsl;
  EXPECT_EQ(e.glsl.find("float(v4"), std::string::npos) << e.glsl;
  EXPECT_EQ(e.glsl.find("-0.0"), std::string::npos) << e.glsl;
  EXPECT_NE(e.cuda.find("-0.0f"), std::string::npos) << e.cuda;
}

// docs/semantics.md: min(-0, +0) = -0, max(-0, +0) = +0, one NaN operand loses. fminf/fmaxf
// and GLSL min/max do not promise that.
TEST(Codegen, FloatMinMaxUseTheOrderedHelpers) {
  EdgeSources e = emit_edge("  %4 = min %3, %3 : f32\n  %5 = max %4, %3 : f32\n  store<of> %0, %5\n");
  for (const std::string* src : {&e.cuda, &e.glsl}) {
    EXPECT_NE(src->find("iron_fmin(v3, v3)"), std::string::npos) << *src;
    EXPECT_NE(src->find("iron_fmax(v4, v3)"), std::string::npos) << *src;
    // Never the bare built-ins on values (CUDA's helpers call fminf / fmaxf behind their NaN
    // and signed-zero tests).
    EXPECT_EQ(src->find("fminf(v"), std::string::npos) << *src;
    EXPECT_EQ(src->find(" min(v"), std::string::npos) << *src;
  }
}

TEST(Codegen, ShiftsOf32OrMoreAreDefinedOnBothTargets) {
  EdgeSources e = emit_edge(
      "  %4 = shl %1, %2 : i32\n  %5 = shr %4, %1 : i32\n  store<oi> %0, %5\n"
      "  %6 = shr %2, %2 : u32\n  store<ou> %0, %6\n");
  for (const std::string* src : {&e.cuda, &e.glsl}) {
    EXPECT_NE(src->find("iron_shl_i32(v1, v2)"), std::string::npos) << *src;
    EXPECT_NE(src->find("iron_shr_i32(v4, "), std::string::npos) << *src;  // an i32 amount read as u32
    EXPECT_NE(src->find("iron_shr_u32(v2, v2)"), std::string::npos) << *src;
    EXPECT_NE(src->find("if (n >= 32u) n = 31u;"), std::string::npos) << *src;
  }
}

// glslang rejects an ordering comparison of bools with a raw error; the verifier rejects it
// first, located, and eq/ne of bools stay valid.
TEST(Codegen, OrderingComparisonsOnBoolAreRejectedByTheVerifier) {
  for (const char* op : {"lt", "le", "gt", "ge"}) {
    ir::Kernel k = ir::parse(std::string("kernel k mode=Elementwise {\n"
                                         "  %0 = const<1> : bool\n"
                                         "  %1 = const<0> : bool\n"
                                         "  %2 = ") + op + " %0, %1 : bool @\"kernels/b.cpp\":4\n}\n");
    ir::Diagnostics d;
    EXPECT_FALSE(ir::verify(k, d)) << op;
    std::string text = d.render(k);
    EXPECT_NE(text.find("kernels/b.cpp:4"), std::string::npos) << text;
    EXPECT_NE(text.find("only eq and ne compare bools"), std::string::npos) << text;
  }
  ir::Kernel ok = ir::parse("kernel k mode=Elementwise {\n  %0 = const<1> : bool\n  %1 = ne %0, %0 : bool\n}\n");
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(ok, d)) << d.render(ok);
}

// The driver must honour IEEE f32: the module declares SignedZeroInfNanPreserve and float
// values are precise (no contraction the IR does not contain).
TEST(Codegen, GlslDeclaresFloatControlsAndPreciseValues) {
  EdgeSources e = emit_edge("  %4 = mul %3, %3 : f32\n  %5 = add %4, %3 : f32\n  store<of> %0, %5\n");
  EXPECT_NE(e.glsl.find("capabilities = [4466], 4461, 32)"), std::string::npos) << e.glsl;
  EXPECT_NE(e.glsl.find("precise float v4 = "), std::string::npos) << e.glsl;
  codegen::Spirv spv = codegen::compile_glsl(e.glsl, "edge");
  ASSERT_TRUE(spv.ok) << spv.log;
  bool mode = false;
  // OpExecutionMode (opcode 16, 4 words: entry, mode, literal) SignedZeroInfNanPreserve 32.
  for (size_t i = 5; i + 3 < spv.words.size(); ++i)
    mode = mode || (spv.words[i] == ((4u << 16) | 16u) && spv.words[i + 2] == 4461u && spv.words[i + 3] == 32u);
  EXPECT_TRUE(mode);

  // RoundingModeRTE for f16 when the device supports it and the kernel has f16 values; neither
  // mode when the device does not support them.
  ir::Kernel k = ir::parse(
      "kernel h mode=Elementwise {\n  param x: in buf<f32> extent=4\n  param o: out buf<f16> extent=4\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = cast %1 : f16\n  store<o> %0, %2\n}\n");
  codegen::EmitOptions rte;
  rte.f16_round_to_nearest_even = true;
  std::string g = codegen::emit(k, DType::F32, codegen::Target::Glsl, rte).source;
  EXPECT_NE(g.find("capabilities = [4467], 4462, 16)"), std::string::npos) << g;
  EXPECT_TRUE(codegen::compile_glsl(g, "h").ok);
  codegen::EmitOptions none;
  none.preserve_f32_specials = false;
  g = codegen::emit(k, DType::F32, codegen::Target::Glsl, none).source;
  EXPECT_EQ(g.find("spirv_execution_mode"), std::string::npos) << g;
}

TEST(Codegen, AnUninlinedCallIsALocatedError) {
  // iron_silu calls the device function iron_sigmoid; emitting it before kernel_inline ran
  // must say so rather than emit a call the target cannot resolve.
  const ir::Kernel& k = kernel_ir("iron_silu");
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.diags.render(k).find("call to 'iron_sigmoid' (kernel_inline must inline it first)"), std::string::npos)
      << e.diags.render(k);
}

TEST(Codegen, UndeclaredDtypeIsAnError) {
  codegen::Emitted e = codegen::emit(kernel_ir("iron_add"), DType::I32, codegen::Target::Cuda);
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.diags.render(kernel_ir("iron_add")).find("not declared for dtype i32"), std::string::npos);
}

TEST(Codegen, OpsADialectCannotExpressAreCollectedWithTheirLocation) {
  // exp of an integer and a lane sum of bool pass no verifier; emitting them anyway must give
  // one located diagnostic each (not a crash, not silently dropped).
  ir::Kernel k = ir::parse(
      "kernel k mode=Reduction {\n"
      "  %0 = local_id<0> : u32 @\"kernels/x.cpp\":7\n"
      "  %1 = exp %0 : u32 @\"kernels/x.cpp\":8\n"
      "  %2 = const<1> : bool @\"kernels/x.cpp\":9\n"
      "  %3 = lane_sum %2 : bool @\"kernels/x.cpp\":10\n"
      "}\n");
  for (codegen::Target target : {codegen::Target::Cuda, codegen::Target::Glsl}) {
    codegen::Emitted e = codegen::emit(k, DType::F32, target);
    ASSERT_EQ(e.diags.items.size(), 2u) << e.diags.render(k);
    std::string text = e.diags.render(k);
    EXPECT_NE(text.find("kernels/x.cpp:8: error:"), std::string::npos) << text;
    EXPECT_NE(text.find("exp of u32"), std::string::npos) << text;
    EXPECT_NE(text.find("kernels/x.cpp:10: error:"), std::string::npos) << text;
    EXPECT_NE(text.find("lane_sum of bool"), std::string::npos) << text;
  }
}

TEST(Spirv, InvalidGlslGivesTheCompilerMessageAndTheName) {
  codegen::Spirv s = codegen::compile_glsl("#version 450\nvoid main() { undefined_thing = 1; }\n", "broken_kernel");
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.log.find("broken_kernel"), std::string::npos) << s.log;
  EXPECT_NE(s.log.find("undefined_thing"), std::string::npos) << s.log;
}

// The target registry: one row per target, names that parse back, backends that map to their
// target, and the profiles of the architectures each target knows.
TEST(Codegen, TheTargetRegistryTiesNamesBackendsAndProfiles) {
  for (size_t i = 0; i < codegen::kNumTargets; ++i) {
    const codegen::TargetInfo& row = codegen::target_infos()[i];
    EXPECT_EQ(size_t(row.target), i);
    codegen::Target parsed;
    ASSERT_TRUE(codegen::parse_target(row.name, parsed)) << row.name;
    EXPECT_EQ(parsed, row.target);
    EXPECT_EQ(codegen::profile_for(row.target).arch, row.default_arch);
  }
  codegen::Target t;
  ASSERT_TRUE(codegen::parse_target("spirv", t));
  EXPECT_EQ(t, codegen::Target::Glsl);
  ASSERT_TRUE(codegen::target_of_backend("vulkan", t));
  EXPECT_EQ(t, codegen::Target::Glsl);
  ASSERT_TRUE(codegen::target_of_backend("cuda", t));
  EXPECT_EQ(t, codegen::Target::Cuda);
  EXPECT_FALSE(codegen::target_of_backend("interp", t));
  EXPECT_FALSE(codegen::parse_target("metal2", t));

  EXPECT_EQ(codegen::profile_for(codegen::Target::Cuda).lane_width, 32u);
  EXPECT_EQ(codegen::profile_for(codegen::Target::Cuda, "sm_80").max_shared_bytes, 163u * 1024);
  EXPECT_EQ(codegen::profile_for(codegen::Target::Hip, "gfx90a").lane_width, 64u);
  EXPECT_EQ(codegen::profile_for(codegen::Target::Hip, "gfx90a").full_lane_mask(), "0xffffffffffffffffull");
  EXPECT_EQ(codegen::profile_for(codegen::Target::Hip, "gfx1030").lane_width, 32u);
  EXPECT_EQ(codegen::profile_for(codegen::Target::Glsl).lane_width, 0u);  // the device's subgroup size
  EXPECT_TRUE(codegen::profile_for(codegen::Target::Cuda).supports(DType::BF16));
  try {
    codegen::profile_for(codegen::Target::Hip, "sm_90a");
    ADD_FAILURE() << "an NVIDIA architecture for HIP must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown AMD GPU architecture 'sm_90a'"), std::string::npos) << e.what();
  }
}

// The op table's fifth column is every dialect's default spelling; a dialect overrides by name.
TEST(Codegen, OpsSpellFromTheOpTableUnlessTheDialectOverrides) {
  EXPECT_STREQ(ir::default_spelling(ir::Op::Add), "(%0 + %1)");
  EXPECT_STREQ(ir::default_spelling(ir::Op::Floor), "floor(%0)");
  EXPECT_STREQ(ir::default_spelling(ir::Op::Barrier), "");
  const ir::Kernel k = ir::parse(
      "kernel k mode=Elementwise {\n  param x : in buf<f32> extent=64\n  param y: out buf<f32> extent=64\n"
      "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = rint %1 : f32\n  %3 = rsqrt %2 : f32\n"
      "  %4 = floor %3 : f32\n  store<y> %0, %4\n}\n");
  const std::string cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda).source;
  const std::string glsl = codegen::emit(k, DType::F32, codegen::Target::Glsl).source;
  for (const char* f : {"rintf(", "rsqrtf(", "floorf("})  // the table's, with CUDA's suffix
    EXPECT_NE(cuda.find(f), std::string::npos) << f << "\n" << cuda;
  EXPECT_NE(glsl.find("inversesqrt("), std::string::npos) << glsl;           // GLSL's overrides
  EXPECT_NE(glsl.find("roundEven("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("floor("), std::string::npos) << glsl;
}
