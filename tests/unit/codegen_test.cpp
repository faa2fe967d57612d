// Codegen: deterministic emission, the dtype spellings of each dialect, SPIR-V validity of
// every kernel, and located diagnostics for ops a dialect cannot express.
#include <gtest/gtest.h>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "passes/pass.hpp"

using namespace iron;

TEST(Codegen, EmissionIsDeterministicAndEveryKernelCompilesToValidSpirv) {
  for (const KernelDecl* d : registered_kernels()) {
    const ir::Kernel k = passes::optimize(kernel_ir(d->name));
    for (DType t : k.dtypes) {
      for (codegen::Target target : {codegen::Target::Cuda, codegen::Target::Glsl}) {
        codegen::Emitted a = codegen::emit(k, t, target);
        codegen::Emitted b = codegen::emit(k, t, target);
        ASSERT_TRUE(a.ok()) << a.diags.render(k);
        EXPECT_EQ(a.source, b.source) << d->name;
      }
      codegen::Emitted g = codegen::emit(k, t, codegen::Target::Glsl);
      codegen::Spirv s = codegen::compile_glsl(g.source, d->name);
      EXPECT_TRUE(s.ok) << d->name << " " << dtype_name(t) << "\n" << s.log;
      EXPECT_EQ(codegen::validate_spirv(s.words), "");
    }
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
  EXPECT_NE(glsl_f16.find("float16_t data[]"), std::string::npos) << glsl_f16;
  EXPECT_NE(glsl_f16.find("GL_EXT_shader_16bit_storage"), std::string::npos);
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
  EXPECT_NE(glsl.find("subgroupMax("), std::string::npos);
  EXPECT_NE(glsl.find("subgroupAdd("), std::string::npos);
  EXPECT_NE(glsl.find("gl_SubgroupSize"), std::string::npos);  // queried, never assumed
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
