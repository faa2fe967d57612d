// The FP8 GEMM family (kernels/gemm/gemm_fp8.cpp, docs/gemm.md "FP8"): its selector's choices
// and located errors, the known-bad block-scaling variants its cases must catch on the
// interpreter, the op it promotes with (tile_scale_add: text IR, verifier, interpreter), and the
// CUDA it lowers to (fp8 ldmatrix, mma.sync m16n8k32 for e4m3 and e5m2; NVRTC for sm_90a).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "../../kernels/gemm/gemm_fp8.hpp"
#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "harness/mutate.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace iron {
namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

DeviceInfo h200() {
  DeviceInfo d;
  d.backend = Backend::Cuda;
  d.name = "H200-like";
  d.lane_width = 32;
  d.max_threads_per_group = 1024;
  d.max_grid = {2147483647u, 65535, 65535};
  d.shared_memory_bytes = 48 * 1024;
  d.shared_memory_optin_bytes = 227 * 1024;
  d.compute_units = 132;
  d.f16 = d.bf16 = true;
  return d;
}

DeviceInfo lavapipe() {
  DeviceInfo d = h200();
  d.backend = Backend::Vulkan;
  d.name = "lavapipe-like";
  d.lane_width = 8;
  d.shared_memory_bytes = 32 * 1024;
  d.shared_memory_optin_bytes = 0;
  return d;
}

LaunchPlan fp8(const DeviceInfo& d, int64_t m, int64_t n, int64_t k, Constexprs extra = {}, DType t = DType::F8E4M3) {
  Constexprs args{{"m", m}, {"n", n}, {"k", k}};
  for (auto& [name, v] : extra) args.insert_or_assign(name, v);
  return plan_launch("iron_gemm_fp8", Call{t, args}, d);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int64_t scalar(const LaunchStep& s, const char* name) { return int64_t(s.constexprs.at(name).as_double()); }

}  // namespace

TEST(GemmFp8Selector, TilesScalesAndOutputs) {
  LaunchPlan p = fp8(h200(), 8192, 8192, 8192);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x128x128_w64x32_s3_f8e4m3_bf16");
  EXPECT_EQ(p.steps[0].grid.x, 64u);
  EXPECT_EQ(p.steps[0].grid.y, 64u);
  EXPECT_EQ(p.steps[0].threadgroup.x, 256u);
  EXPECT_EQ(scalar(p.steps[0], "block"), 0);
  EXPECT_EQ(scalar(p.steps[0], "sa_len"), 1);
  // Block scales: sa [m, k / 128], sb [ceil(n / 128), k / 128].
  p = fp8(h200(), 300, 200, 512, {{"scale", 1}, {"out", 1}}, DType::F8E5M2);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x128x128_w64x32_s3_f8e5m2_f32");
  EXPECT_EQ(scalar(p.steps[0], "block"), 1);
  EXPECT_EQ(scalar(p.steps[0], "kb"), 4);
  EXPECT_EQ(scalar(p.steps[0], "sa_len"), 300 * 4);
  EXPECT_EQ(scalar(p.steps[0], "sb_len"), 2 * 4);
  EXPECT_TRUE(has(p.reason, "block scales")) << p.reason;
  // Small m, and a device with little threadgroup memory: the 32x32 tile.
  EXPECT_EQ(fp8(h200(), 64, 4096, 4096).steps[0].kernel, "iron_gemm_fp8_32x32x128_w32x16_s2_f8e4m3_bf16");
  p = fp8(lavapipe(), 1024, 1024, 256);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_32x32x128_w32x16_s2_f8e4m3_bf16");
  EXPECT_EQ(p.steps[0].threadgroup.x, 16u);
  EXPECT_TRUE(has(p.reason, "threadgroup memory")) << p.reason;
}

TEST(GemmFp8Selector, BadCallsAreLocatedErrors) {
  const DeviceInfo d = h200();
  std::string e = error_of([&] { fp8(d, 256, 256, 200, {{"scale", 1}, {"lda", 208}, {"ldb", 208}}); });
  EXPECT_TRUE(has(e, "iron_gemm_fp8") && has(e, "k = 200") && has(e, "multiple of 128")) << e;
  EXPECT_TRUE(has(e, "gemm_fp8.cpp")) << e;
  e = error_of([&] { fp8(d, 256, 256, 200, {{"lda", 200}}); });
  EXPECT_TRUE(has(e, "multiples of 16")) << e;
  e = error_of([&] { fp8(d, 256, 256, 256, {{"ldb", 128}}); });
  EXPECT_TRUE(has(e, "at least k")) << e;
  e = error_of([&] { fp8(d, 256, 256, 256, {}, DType::BF16); });
  EXPECT_TRUE(has(e, "f8e4m3 or f8e5m2")) << e;
  e = error_of([&] { fp8(d, 256, 256, 256, {{"scale", 2}}); });
  EXPECT_TRUE(has(e, "scale = 2")) << e;
  e = error_of([&] { fp8(d, 256, 256, 256, {{"out", 3}}); });
  EXPECT_TRUE(has(e, "out = 3")) << e;
  e = error_of([&] { fp8(d, 0, 256, 256); });
  EXPECT_TRUE(has(e, "at least 1")) << e;
}

// Known-bad versions of the block-scaled 32x32 kernel (gemm_fp8.hpp's Defect: the wrong rows'
// scales, the wrong K block's, the wrong column block's, no per-block promotion, 256-deep scale
// blocks) must each fail the block cases on the interpreter, and the kernel itself pass them.
namespace {
template <kernels::gemm_fp8::Defect D>
void defective(const KernelVariant& v) {
  kernels::gemm_fp8::gemm_fp8_small_kernel(v, D);
}
}  // namespace

TEST(GemmFp8Mutation, KnownBadBlockScalingIsCaught) {
  using kernels::gemm_fp8::Defect;
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const char* name = "iron_gemm_fp8_32x32x128_w32x16_s2_f8e4m3_f32";
  const ir::Kernel& k = kernel_ir(name);
  const KernelDecl* decl = find_kernel_decl(name);
  ASSERT_NE(decl, nullptr);
  std::vector<const TestDecl*> cases;
  for (const TestDecl* t : registered_tests())
    if (std::string(t->kernel) == "iron_gemm_fp8" && std::string(t->name) == "block_m45_n150_k384") cases.push_back(t);
  ASSERT_EQ(cases.size(), 1u);
  struct Bad {
    const char* what;
    VariantBody body;
  };
  const Bad bad[] = {{"the next 16 rows' scales", &defective<Defect::ScaleRow>},
                     {"A's scale of the next K block", &defective<Defect::ScaleKBlock>},
                     {"B's first column block's scale", &defective<Defect::ScaleBColumn>},
                     {"no promotion: the last block's scales once at the end", &defective<Defect::ScaleOnceAtEnd>},
                     {"256-deep scale blocks", &defective<Defect::KBlockBoundary>}};
  // The kernel itself, traced the same way, passes.
  {
    KernelDecl good = *decl;
    good.variant_body = &defective<Defect::None>;
    const mutate::Mutant m{"none", "", "the kernel as registered", trace_kernel(good), ""};
    const mutate::Outcome o = mutate::run_mutant(*ctx, k, m, cases);
    EXPECT_NE(o.status, mutate::Outcome::Status::Killed) << o.by;
  }
  for (const Bad& b : bad) {
    KernelDecl d = *decl;
    d.variant_body = b.body;
    const mutate::Mutant m{"block_scaling", "", b.what, trace_kernel(d), ""};
    const mutate::Outcome o = mutate::run_mutant(*ctx, k, m, cases);
    EXPECT_EQ(o.status, mutate::Outcome::Status::Killed) << b.what << ": " << o.by;
  }
}

// tile_scale_add in text IR: printed and parsed back the same; the verifier names a scales array
// of another dtype and mismatched fragments.
TEST(TileScaleAdd, TextIrRoundTripsAndTheVerifierNamesBadOperands) {
  const std::string text =
      "kernel k mode=Reduction {\n"
      "  param r: out buf<f32> extent=256\n"
      "  %S = tg_alloc<s, 16> : f32\n"
      "  %c0 = const<0> : u32\n  %c16 = const<16> : u32\n  %one = const<1> : f32\n"
      "  %x = tile_fill %one : frag<acc, f32, 16x16x32>\n"
      "  %d = tile_scale_add %S, %c0, %x, %x : frag<acc, f32, 16x16x32>\n"
      "  tile_store<r> %d, %c0, %c16\n"
      "}\n";
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics diags;
  EXPECT_TRUE(ir::verify(k, diags)) << diags.render(k);
  EXPECT_EQ(ir::print(ir::parse(ir::print(k))), ir::print(k));
  EXPECT_TRUE(has(ir::print(k), "tile_scale_add %")) << ir::print(k);
  std::string bad = text;
  bad.replace(bad.find("tg_alloc<s, 16> : f32"), 21, "tg_alloc<s, 16> : f16");
  ir::Kernel kb = ir::parse(bad);
  ir::Diagnostics d2;
  EXPECT_FALSE(ir::verify(kb, d2));
  EXPECT_TRUE(has(d2.render(kb), "row scales from f16 threadgroup memory")) << d2.render(kb);
  bad = text;
  bad.replace(bad.find("%x, %x : frag<acc, f32, 16x16x32>"), 33, "%x, %x : frag<acc, f32, 16x16x16>");
  ir::Kernel kc = ir::parse(bad);
  ir::Diagnostics d3;
  EXPECT_FALSE(ir::verify(kc, d3));
  EXPECT_TRUE(has(d3.render(kc), "one accumulator type")) << d3.render(kc);
}

// The CUDA of the block-scaled kernels: fp8 fragments by ldmatrix (A row-major, B column-major
// through the swizzle, no run-time alignment check), mma.sync m16n8k32 e4m3 / e5m2, the
// promotion's fused multiply-adds; NVRTC compiles both for sm_90a. MSL expresses it too.
TEST(GemmFp8Codegen, CudaUsesLdmatrixAndMmaSyncAndNvrtcCompilesIt) {
  for (const char* ab : {"f8e4m3", "f8e5m2"}) {
    const std::string name = std::string("iron_gemm_fp8_128x128x128_w64x32_s3_") + ab + "_bf16";
    const ir::Kernel k = passes::optimize(kernel_ir(name));
    codegen::Emitted e = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_90a"), {});
    ASSERT_TRUE(e.ok()) << e.diags.render(k);
    const std::string sfx = std::string(ab) == "f8e4m3" ? "e4m3" : "e5m2";
    EXPECT_TRUE(has(e.source, "mma.sync.aligned.m16n8k32.row.col.f32." + sfx + "." + sfx + ".f32")) << name;
    EXPECT_TRUE(has(e.source, "iron_tile_ldmatrix8(")) << name;
    EXPECT_TRUE(has(e.source, "iron_tile_ldm8_col_cm()")) << name;
    EXPECT_TRUE(has(e.source, "iron_tile_scale_add(")) << name;
    EXPECT_TRUE(has(e.source, "cp.async")) << name;
    rt::NvrtcResult r;
    try {
      r = rt::nvrtc_compile(e.source, k.name, "sm_90a");
    } catch (const Error& err) {
      GTEST_SKIP() << err.what();
    }
    if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
    EXPECT_TRUE(r.ok) << r.log.substr(0, 4000);
  }
  // MSL: the promotion as c + diag(s) x on simdgroup matrices, f8e5m2 staged as half.
  const ir::Kernel k = passes::optimize(kernel_ir("iron_gemm_fp8_32x32x128_w32x16_s2_f8e5m2_f32"));
  codegen::Emitted m = codegen::emit(k, DType::F32, codegen::Target::Msl);
  ASSERT_TRUE(m.ok()) << m.diags.render(k);
  EXPECT_TRUE(has(m.source, "iron_tile_scale_add(&")) << m.source;
  EXPECT_TRUE(has(m.source, "struct iron_tile_a_e5m2")) << m.source;
}

}  // namespace iron
