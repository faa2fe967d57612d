// The MSL dialect: every kernel emits (deterministically), snapshots of one kernel per family,
// the Metal spellings that carry the semantics (bindings, built-ins, exact helpers, atomics,
// simdgroup matrices), located diagnostics for what Metal cannot express. tests/msl/check_msl.py
// (ctest msl.shim_check) compiles every emitted file against the Metal shim.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "passes/pass.hpp"

using namespace iron;

namespace {

codegen::Emitted msl(const char* kernel, Instantiation dtype) {
  return codegen::emit(passes::optimize(kernel_ir(kernel)), dtype, codegen::Target::Msl);
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST(Msl, EveryKernelAndDtypeEmitsDeterministically) {
  int files = 0;
  for (const KernelDecl* d : registered_kernels()) {
    const ir::Kernel k = passes::optimize(kernel_ir(d->name));
    for (Instantiation t : ir::instantiations(k)) {
      // A warpgroup kernel (wgmma, CUDA only): MSL refuses it by name.
      if (ir::uses_warpgroup_ops(k)) {
        codegen::Emitted e = codegen::emit(k, t, codegen::Target::Msl);
        EXPECT_FALSE(e.ok()) << d->name;
        EXPECT_TRUE(e.diags.render(k).find("cannot express") != std::string::npos ||
                    e.diags.render(k).find("a tensor map is CUDA's") != std::string::npos)  // the tensor-map kernels
            << e.diags.render(k);
        continue;
      }
      codegen::Emitted a = codegen::emit(k, t, codegen::Target::Msl);
      codegen::Emitted b = codegen::emit(k, t, codegen::Target::Msl);
      ASSERT_TRUE(a.ok()) << d->name << " " << instantiation_name(t) << "\n" << a.diags.render(k);
      EXPECT_EQ(a.source, b.source) << d->name;
      EXPECT_EQ(a.entry, codegen::entry_name(k, t));
      EXPECT_TRUE(has(a.source, "kernel void " + a.entry + "(")) << d->name;
      ++files;
    }
  }
  EXPECT_GT(files, 100);
}

// One kernel per family, compared with tests/msl/snapshots/<entry>.metal. After an intended
// change to the MSL, regenerate them with IRON_UPDATE_SNAPSHOTS=1 and review the diff.
TEST(Msl, SnapshotsOfOneKernelPerFamily) {
  struct Case {
    const char* kernel;
    Instantiation dtype;
  };
  const Case cases[] = {
      {"iron_add", DType::F16},              // elementwise, 16-byte vector groups
      {"iron_gelu_erf", DType::BF16},        // math helpers, bf16 storage
      {"iron_gemv_warp_rows", DType::BF16},  // lane sums
      {"iron_kv_append_paged", DType::F16},  // kv cache
      {"iron_group_scan", DType::F32},       // threadgroup memory, simdgroup ids
      {"iron_tg_histogram", DType::F32},     // threadgroup atomics
      {"iron_transpose", DType::F32},        // layout
      {"iron_rmsnorm_staged", DType::F32},   // norm, a threadgroup array sized at dispatch
      {"iron_rope", DType::F16},             // rope: sin, cos
      {"iron_top_p", DType::F32},            // sampling: u64 arithmetic
      {"iron_softmax", DType::F32},          // softmax: exp, lane max
      {"iron_tile_gemm", DType::F16},        // simdgroup_matrix, half inputs
      {"iron_tile_fp8_gemm", DType::F32},    // simdgroup_matrix, f8e4m3 inputs staged as half
      {"iron_int_arith", DType::I64},        // 64-bit integer helpers
  };
  const std::string dir = std::string(IRON_TEST_DATA) + "/msl/snapshots/";
  const bool update = std::getenv("IRON_UPDATE_SNAPSHOTS") != nullptr;
  for (const Case& c : cases) {
    const ir::Kernel& traced = kernel_ir(c.kernel);
    Instantiation t = c.dtype;
    if (traced.dtypes.empty()) t = ir::instantiations(traced).front();
    codegen::Emitted e = msl(c.kernel, t);
    ASSERT_TRUE(e.ok()) << c.kernel << "\n" << e.diags.render(traced);
    const std::string path = dir + e.entry + ".metal";
    if (update) {
      std::filesystem::create_directories(dir);
      std::ofstream(path, std::ios::binary) << e.source;
      continue;
    }
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(f) << "no snapshot " << path << " (IRON_UPDATE_SNAPSHOTS=1 writes it)";
    std::stringstream want;
    want << f.rdbuf();
    if (want.str() == e.source) continue;
    // The first line that differs, so the failure says where.
    std::istringstream a(want.str()), b(e.source);
    std::string la, lb;
    int line = 1;
    while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
    ADD_FAILURE() << path << ":" << line << ": the emitted MSL differs from the snapshot\n  snapshot: " << la
                  << "\n  emitted:  " << lb << "\n(IRON_UPDATE_SNAPSHOTS=1 rewrites the snapshots; review the diff)";
  }
}

TEST(Msl, BindingsFollowTheDocumentedConvention) {
  // Buffers first by their own index, then each scalar after the buffers; built-ins as kernel
  // parameters; threadgroup arrays in the one [[threadgroup(0)]] region.
  codegen::Emitted e = msl("iron_group_scan", DType::F32);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(has(e.source, "device const float* p_x [[buffer(0)]]")) << e.source;
  EXPECT_TRUE(has(e.source, "threadgroup uchar* iron_tg [[threadgroup(0)]]")) << e.source;
  EXPECT_TRUE(has(e.source, "[[simdgroup_index_in_threadgroup]]")) << e.source;
  codegen::Emitted add = msl("iron_add", DType::F32);
  EXPECT_TRUE(has(add.source, "constant uint& p_n [[buffer(3)]]")) << add.source;
  EXPECT_TRUE(has(add.source, "device float* p_out [[buffer(2)]]")) << add.source;
}

TEST(Msl, SixteenBitValuesAndExactArithmeticGoThroughIronsHelpers) {
  codegen::Emitted h = msl("iron_add", DType::F16);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(has(h.source, "device const half* p_a")) << h.source;
  EXPECT_TRUE(has(h.source, "as_type<half>(ushort(iron_f32_to_f16(")) << h.source;
  codegen::Emitted b = msl("iron_gelu_erf", DType::BF16);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(has(b.source, "#if __METAL_VERSION__ < 310")) << b.source;
  EXPECT_TRUE(has(b.source, "device const bfloat* p_x")) << b.source;
  EXPECT_TRUE(has(b.source, "float iron_erf(float x)")) << b.source;
  // Division and sqrt are exact whatever the GPU's own; no fast-math contraction.
  codegen::Emitted n = msl("iron_rmsnorm", DType::F32);
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(has(n.source, "#pragma clang fp contract(off)")) << n.source;
  EXPECT_TRUE(has(n.source, "iron_div_f32(")) << n.source;
  EXPECT_TRUE(has(n.source, "precise::divide(")) << n.source;
}

TEST(Msl, LaneReductionsOfFloatsRunInTheInterpretersOrder) {
  codegen::Emitted e = msl("iron_gemv_warp_rows", DType::F32);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(has(e.source, "for (uint o = w >> 1; o > 0u; o >>= 1) v = v + simd_shuffle_xor(v, ushort(o));")) << e.source;
  EXPECT_TRUE(has(e.source, "iron_lane_sum(")) << e.source;
  EXPECT_FALSE(has(e.source, "simd_sum(")) << "a float simd_sum sums in the hardware's order";
}

TEST(Msl, CooperativeTilesAreSimdgroupMatrices) {
  codegen::Emitted e = msl("iron_tile_gemm", DType::F16);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(has(e.source, "simdgroup_half8x8 m[4]")) << e.source;
  EXPECT_TRUE(has(e.source, "simdgroup_multiply_accumulate(")) << e.source;
  EXPECT_TRUE(has(e.source, "threadgroup float* iron_tile_scratch [[threadgroup(1)]]")) << e.source;
  codegen::Emitted b = msl("iron_tile_gemm", DType::BF16);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(has(b.source, "struct iron_tile_a_bf16 { simdgroup_float8x8 m[4]; };")) << b.source;
}

TEST(Msl, WhatMetalCannotExpressIsALocatedError) {
  // Metal's 64-bit atomics are min and max only: an atomic add of u64 names the op and its line.
  ir::Kernel k = ir::parse(
      "kernel k mode=Reduction {\n"
      "  param acc: inout buf<u64> extent=4\n"
      "  %0 = const<0> : u32 @\"kernels/x.cpp\":3\n"
      "  %1 = const<1> : u64 @\"kernels/x.cpp\":4\n"
      "  %2 = atomic_add<acc> %0, %1 : u64 @\"kernels/x.cpp\":5\n"
      "}\n");
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Msl);
  ASSERT_EQ(e.diags.items.size(), 1u) << e.diags.render(k);
  const std::string text = e.diags.render(k);
  EXPECT_TRUE(has(text, "kernels/x.cpp:5: error: the MSL dialect cannot express atomic_add of u64")) << text;
  EXPECT_TRUE(has(text, "min and max only")) << text;
}
