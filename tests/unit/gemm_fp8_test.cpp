// The FP8 GEMM family (kernels/gemm/gemm_fp8.cpp, docs/gemm.md "FP8"): its selector's choices
// and located errors, the known-bad block-scaling variants its cases must catch on the
// interpreter, the op it promotes with (tile_scale_add: text IR, verifier, interpreter), and the
// CUDA it lowers to (fp8 ldmatrix, mma.sync m16n8k32 for e4m3 and e5m2; NVRTC for sm_90a).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

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

// CUDA sm_90a takes the warpgroup kernel where the 128x128 tile is chosen; wg 0 keeps the
// mma.sync kernel, wg 1 asks for it on the interpreter (and CUDA elsewhere), other backends and
// calls that ask for a tile keep the mma.sync kernels and say why; m <= 64 keeps the 32x32 tile.
TEST(GemmFp8Selector, Sm90aTakesTheWarpgroupKernel) {
  DeviceInfo d = h200();
  d.arch = "sm_90a";
  // (tma 0: C in bf16 takes the tensor-map kernels below by default.)
  LaunchPlan p = fp8(d, 8192, 8192, 8192, {{"tma", 0}});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_bf16");
  EXPECT_EQ(p.steps[0].grid.x, 64u);
  EXPECT_EQ(p.steps[0].grid.y, 64u);
  EXPECT_EQ(p.steps[0].threadgroup.x, 256u);
  EXPECT_TRUE(has(p.reason, "the warpgroup kernel (wgmma m64n128k32 on sm_90a)")) << p.reason;
  p = fp8(d, 300, 200, 512, {{"scale", 1}, {"out", 1}}, DType::F8E5M2);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_s3_f8e5m2_f32");
  EXPECT_EQ(scalar(p.steps[0], "block"), 1);
  EXPECT_EQ(fp8(d, 8192, 8192, 8192, {{"wg", 0}}).steps[0].kernel, "iron_gemm_fp8_128x128x128_w64x32_s3_f8e4m3_bf16");
  EXPECT_EQ(fp8(d, 64, 4096, 4096).steps[0].kernel, "iron_gemm_fp8_32x32x128_w32x16_s2_f8e4m3_bf16");
  EXPECT_EQ(fp8(d, 4096, 4096, 4096, {{"tile", 0}}).steps[0].kernel, "iron_gemm_fp8_128x128x128_w64x32_s3_f8e4m3_bf16");
  // sm_90 (no "a") and sm_89: the mma.sync kernel.
  d.arch = "sm_90";
  EXPECT_EQ(fp8(d, 8192, 8192, 8192).steps[0].kernel, "iron_gemm_fp8_128x128x128_w64x32_s3_f8e4m3_bf16");
  // wg 1: on CUDA anywhere and the interpreter, whatever m; on Vulkan the mma.sync kernel, said.
  EXPECT_EQ(fp8(d, 40, 72, 96, {{"wg", 1}}).steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_bf16");
  DeviceInfo interp = h200();
  interp.backend = Backend::Interp;
  EXPECT_EQ(fp8(interp, 40, 72, 96, {{"wg", 1}}).steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_bf16");
  DeviceInfo vk = h200();
  vk.backend = Backend::Vulkan;
  p = fp8(vk, 4096, 4096, 4096, {{"wg", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x128x128_w64x32_s3_f8e4m3_bf16");
  EXPECT_TRUE(has(p.reason, "wg 1 but not the CUDA or interpreter backend: the mma.sync kernel")) << p.reason;
  p = fp8(interp, 4096, 4096, 4096, {{"wg", 1}, {"tile", 1}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_32x32x128_w32x16_s2_f8e4m3_bf16");
  EXPECT_TRUE(has(p.reason, "wg 1 but a tile asked for")) << p.reason;
  const std::string e = error_of([&] { fp8(interp, 256, 256, 256, {{"wg", 2}}); });
  EXPECT_TRUE(has(e, "wg = 2 is out of range")) << e;
}

// The warp-specialized tensor-map kernels: by default on CUDA sm_90a with C in bf16, 128x256 for
// per-tensor scales when its blocks fill every compute unit, else (and for block scales) 128x128;
// `tma` 0 keeps the cp.async warpgroup kernel; the maps and the 384 threads; the refusals.
TEST(GemmFp8Selector, Sm90aTakesTheWarpSpecializedTensorMapKernels) {
  DeviceInfo d = h200();
  d.arch = "sm_90a";
  LaunchPlan p = fp8(d, 8192, 8192, 8192);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x256x128_wg_ws_s4_f8e4m3_bf16");
  EXPECT_EQ(p.steps[0].grid.x, 32u);
  EXPECT_EQ(p.steps[0].grid.y, 64u);
  EXPECT_EQ(p.steps[0].threadgroup.x, 384u);
  EXPECT_TRUE(has(p.reason, "warp-specialized (a copying warpgroup, 384 threads), 128x256")) << p.reason;
  ASSERT_EQ(p.steps[0].maps.size(), 2u);
  EXPECT_EQ(p.steps[0].maps[0].param, "a_map");
  EXPECT_EQ(p.steps[0].maps[0].buffer, "a");
  EXPECT_EQ(p.steps[0].maps[0].dims, (std::vector<uint64_t>{8192, 8192}));
  EXPECT_EQ(p.steps[0].maps[0].strides, (std::vector<uint64_t>{8192}));
  EXPECT_EQ(p.steps[0].maps[0].box, (std::vector<uint32_t>{128, 128}));
  EXPECT_EQ(p.steps[0].maps[1].box, (std::vector<uint32_t>{128, 256}));
  EXPECT_EQ(p.steps[0].maps[1].swizzle, TensorMap::Swizzle::B128);
  // Fewer 128x256 blocks than compute units (4096 x 2048: 32 x 8 = 256 >= 132; 1024^2: 32 < 132).
  EXPECT_EQ(fp8(d, 1024, 1024, 4096).steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_ws_s4_f8e4m3_bf16");
  // Block scales: the 128x128 kernel whatever the grid.
  p = fp8(d, 8192, 8192, 8192, {{"scale", 1}}, DType::F8E5M2);
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_ws_s4_f8e5m2_bf16");
  EXPECT_EQ(p.steps[0].maps[1].box, (std::vector<uint32_t>{128, 128}));
  // tma 0 keeps the cp.async warpgroup kernel; C in f32 keeps it by default.
  EXPECT_EQ(fp8(d, 8192, 8192, 8192, {{"tma", 0}}).steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_bf16");
  EXPECT_TRUE(fp8(d, 8192, 8192, 8192, {{"tma", 0}}).steps[0].maps.empty());
  EXPECT_EQ(fp8(d, 8192, 8192, 8192, {{"out", 1}}).steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_f32");
  // Asked for on the interpreter (tma implies wg 1); on Vulkan ignored and said.
  DeviceInfo interp = h200();
  interp.backend = Backend::Interp;
  EXPECT_EQ(fp8(interp, 70, 200, 256, {{"tma", 2}}).steps[0].kernel, "iron_gemm_fp8_128x256x128_wg_ws_s4_f8e4m3_bf16");
  EXPECT_EQ(fp8(interp, 70, 200, 256, {{"tma", 1}, {"ws", 1}}).steps[0].kernel, "iron_gemm_fp8_128x128x128_wg_ws_s4_f8e4m3_bf16");
  DeviceInfo vk = h200();
  vk.backend = Backend::Vulkan;
  p = fp8(vk, 4096, 4096, 4096, {{"tma", 2}});
  EXPECT_EQ(p.steps[0].kernel, "iron_gemm_fp8_128x128x128_w64x32_s3_f8e4m3_bf16");
  EXPECT_TRUE(has(p.reason, "tma 2 but no warpgroup kernel")) << p.reason;
  // Refusals, each naming what the call has.
  std::string e = error_of([&] { fp8(d, 4096, 4096, 4096, {{"tma", 2}, {"scale", 1}}); });
  EXPECT_TRUE(has(e, "tma = 2 with block scales") && has(e, "tma 1")) << e;
  e = error_of([&] { fp8(d, 4096, 4096, 4096, {{"tma", 1}, {"out", 1}}); });
  EXPECT_TRUE(has(e, "C in bf16") && has(e, "out 1")) << e;
  e = error_of([&] { fp8(d, 4096, 4096, 4096, {{"tma", 1}, {"wg", 0}}); });
  EXPECT_TRUE(has(e, "needs the warpgroup kernel") && has(e, "wg 0")) << e;
  e = error_of([&] { fp8(d, 4096, 4096, 4096, {{"tma", 1}, {"ws", 0}}); });
  EXPECT_TRUE(has(e, "warp-specialized only")) << e;
  e = error_of([&] { fp8(d, 4096, 4096, 4096, {{"tma", 0}, {"ws", 1}}); });
  EXPECT_TRUE(has(e, "ws = 1 needs a tensor-map kernel")) << e;
  e = error_of([&] { fp8(d, 4096, 4096, 4096, {{"tma", 3}}); });
  EXPECT_TRUE(has(e, "tma = 3 is out of range")) << e;
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

// Known-bad versions of the warpgroup kernel (Defect::Wg*): the products stepping K by 16
// elements (the 16-bit k16 offset, a byte stride taken for an element stride), reading the stages
// under the 64-byte swizzle, and the block's product promoted before its wg_wait (read in
// flight) must each fail the block-scaled warpgroup case on the interpreter; the kernel passes.
namespace {
template <kernels::gemm_fp8::Defect D>
void defective_wg(const KernelVariant& v) {
  kernels::gemm_fp8::gemm_fp8_wg_kernel(v, D);
}
}  // namespace

TEST(GemmFp8Mutation, KnownBadWarpgroupKernelsAreCaught) {
  using kernels::gemm_fp8::Defect;
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const char* name = "iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_bf16";
  const ir::Kernel& k = kernel_ir(name);
  const KernelDecl* decl = find_kernel_decl(name);
  ASSERT_NE(decl, nullptr);
  std::vector<const TestDecl*> cases;
  for (const TestDecl* t : registered_tests())
    if (std::string(t->kernel) == "iron_gemm_fp8" && std::string(t->name) == "wg_block_m70_n150_k256") cases.push_back(t);
  ASSERT_EQ(cases.size(), 1u);
  struct Bad {
    const char* what;
    VariantBody body;
  };
  const Bad bad[] = {{"K stepped by 16 elements per product", &defective_wg<Defect::WgKStep16>},
                     {"the products under the 64-byte swizzle", &defective_wg<Defect::WgSwizzle64>},
                     {"the product promoted before its wg_wait", &defective_wg<Defect::WgNoWait>}};
  {
    KernelDecl good = *decl;
    good.variant_body = &defective_wg<Defect::None>;
    const mutate::Mutant m{"none", "", "the kernel as registered", trace_kernel(good), ""};
    const mutate::Outcome o = mutate::run_mutant(*ctx, k, m, cases);
    EXPECT_NE(o.status, mutate::Outcome::Status::Killed) << o.by;
  }
  for (const Bad& b : bad) {
    KernelDecl d = *decl;
    d.variant_body = b.body;
    const mutate::Mutant m{"warpgroup", "", b.what, trace_kernel(d), ""};
    const mutate::Outcome o = mutate::run_mutant(*ctx, k, m, cases);
    EXPECT_EQ(o.status, mutate::Outcome::Status::Killed) << b.what << ": " << o.by;
  }
}

// Known-bad versions of the warp-specialized kernels (IR edits): every mbarrier arrival dropped
// (in a per-tensor case the one that matters is the consumers' release on `empty`: the copier's
// wait for a stage's second round never completes, a deadlock the interpreter names), every
// mbar_wait dropped (products read a stage before its copies land, or a refill races the
// products), and the products' swizzle one mode narrower than the copies' (a wrong answer). Each
// must fail its case on the interpreter; the kernels pass.
namespace {
mutate::Mutant ws_without_every(const ir::Kernel& k, ir::Op op) {
  mutate::Mutant m{"dropped", "", std::string("every ") + ir::mnemonic(op) + " removed", k, ""};
  size_t n = 0;
  for (ir::Block& b : m.kernel.blocks) {
    const size_t before = b.insts.size();
    b.insts.erase(std::remove_if(b.insts.begin(), b.insts.end(), [&](ir::Id id) { return m.kernel.insts[id].op == op; }),
                  b.insts.end());
    n += before - b.insts.size();
  }
  EXPECT_GE(n, 1u) << ir::mnemonic(op);
  return m;
}
mutate::Mutant ws_product_swizzle_243(const ir::Kernel& k) {
  mutate::Mutant m{"swizzle", "", "the products' swizzle 343 -> 243", k, ""};
  for (ir::Inst& in : m.kernel.insts)
    if (in.op == ir::Op::TileWgMma) in.set(ir::Attr::Swizzle, 243);
  return m;
}
void expect_ws_mutants_killed(const char* kernel, const char* case_name) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir(kernel);
  std::vector<const TestDecl*> cases;
  for (const TestDecl* t : registered_tests())
    if (std::string(t->kernel) == "iron_gemm_fp8" && std::string(t->name) == case_name) cases.push_back(t);
  ASSERT_EQ(cases.size(), 1u) << case_name;
  const mutate::Outcome good = mutate::run_mutant(*ctx, k, mutate::Mutant{"none", "", "the kernel as registered", k, ""}, cases);
  EXPECT_NE(good.status, mutate::Outcome::Status::Killed) << good.by;
  for (const mutate::Mutant& m : {ws_without_every(k, ir::Op::MbarArrive), ws_without_every(k, ir::Op::MbarWait),
                                  ws_product_swizzle_243(k)}) {
    const mutate::Outcome o = mutate::run_mutant(*ctx, k, m, cases);
    EXPECT_EQ(o.status, mutate::Outcome::Status::Killed) << kernel << ": " << m.detail << ": " << o.by;
  }
}
}  // namespace

TEST(GemmFp8Mutation, WarpSpecializedKernelKnownBadVariantsAreCaught) {
  expect_ws_mutants_killed("iron_gemm_fp8_128x128x128_wg_ws_s4_f8e5m2_bf16", "wg_ws_tensor_m100_n72_k520");
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
  // The warpgroup kernel: MSL, GLSL and HIP refuse it by name (warpgroup products are CUDA's).
  {
    const ir::Kernel kw = passes::optimize(kernel_ir("iron_gemm_fp8_128x128x128_wg_s3_f8e4m3_f32"));
    for (codegen::Target t : {codegen::Target::Glsl, codegen::Target::Msl, codegen::Target::Hip}) {
      codegen::Emitted e = codegen::emit(kw, DType::F32, t);
      EXPECT_FALSE(e.ok());
      EXPECT_TRUE(has(e.diags.render(kw), "warpgroup")) << e.diags.render(kw);
    }
  }
  // MSL: the promotion as c + diag(s) x on simdgroup matrices, f8e5m2 staged as half.
  const ir::Kernel k = passes::optimize(kernel_ir("iron_gemm_fp8_32x32x128_w32x16_s2_f8e5m2_f32"));
  codegen::Emitted m = codegen::emit(k, DType::F32, codegen::Target::Msl);
  ASSERT_TRUE(m.ok()) << m.diags.render(k);
  EXPECT_TRUE(has(m.source, "iron_tile_scale_add(&")) << m.source;
  EXPECT_TRUE(has(m.source, "struct iron_tile_a_e5m2")) << m.source;
}

namespace {
// The SASS of a CUBIN by cuobjdump (IRON_CUOBJDUMP, else /opt/cudabin/cuobjdump, else on PATH);
// "" with `why` set when there is none.
std::string sass_of(const std::vector<char>& cubin, std::string& why) {
  std::string tool;
  if (const char* t = std::getenv("IRON_CUOBJDUMP"); t && *t) tool = t;
  else if (std::filesystem::exists("/opt/cudabin/cuobjdump")) tool = "/opt/cudabin/cuobjdump";
  else if (std::system("command -v cuobjdump > /dev/null 2>&1") == 0) tool = "cuobjdump";
  if (tool.empty()) {
    why = "cuobjdump not found (IRON_CUOBJDUMP, /opt/cudabin/cuobjdump or PATH)";
    return "";
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("iron_fp8wg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string bin = (dir / "k.cubin").string(), txt = (dir / "k.sass").string();
  std::ofstream(bin, std::ios::binary).write(cubin.data(), std::streamsize(cubin.size()));
  const int rc = std::system((tool + " -sass " + bin + " > " + txt + " 2>&1").c_str());
  std::ifstream in(txt);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  if (rc != 0) {
    why = tool + " failed: " + out.substr(0, 500);
    return "";
  }
  return out;
}

// The kernel with `block` specialized as a dispatch bakes it (gemm_fp8_for's plans do).
ir::Kernel specialized(const ir::Kernel& k, uint32_t block) {
  passes::Specialization spec;
  for (uint32_t p = 0; p < k.params.size(); ++p)
    if (k.params[p].name == "block") spec.values.push_back({p, block});
  return passes::optimize(k, {}, spec);
}
}  // namespace

// The warpgroup kernel on sm_90a (per-tensor and block scales, both formats): issued wgmma
// m64n128k32 .e4m3 / .e5m2 through 128-byte-mode descriptors (stride byte offset 1024: 8 rows of
// 128 fp8 elements), the group statements, cp.async staging and, with block scales, the
// promotion's fused multiply-adds on the warpgroup accumulator; NVRTC compiles each for sm_90a
// and the SASS shows QGMMA (skipped without NVRTC or cuobjdump).
TEST(GemmFp8Codegen, TheWarpgroupKernelIsQgmmaOnSm90a) {
  std::string no_sass;
  for (const char* ab : {"f8e4m3", "f8e5m2"})
    for (uint32_t block : {0u, 1u}) {
      const std::string name = std::string("iron_gemm_fp8_128x128x128_wg_s3_") + ab + "_bf16";
      const ir::Kernel k = specialized(kernel_ir(name), block);
      EXPECT_TRUE(ir::uses_warpgroup_ops(k));
      codegen::Emitted e = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_90a"), {});
      ASSERT_TRUE(e.ok()) << e.diags.render(k);
      const std::string sfx = std::string(ab) == "f8e4m3" ? "e4m3" : "e5m2";
      EXPECT_TRUE(has(e.source, "wgmma.mma_async.sync.aligned.m64n128k32.f32." + sfx + "." + sfx)) << name;
      EXPECT_TRUE(has(e.source, "iron_tile_wgmma_async_" + sfx + "_343_n128(")) << name;
      EXPECT_TRUE(has(e.source, "iron_tile_wg_desc(a, 1024u, 1ull)")) << name;
      EXPECT_TRUE(has(e.source, "wgmma.wait_group.sync.aligned 0;")) << name;
      EXPECT_TRUE(has(e.source, "cp.async")) << name;
      EXPECT_EQ(has(e.source, "iron_tile_scale_add("), block == 1) << name;
      rt::NvrtcResult r;
      try {
        r = rt::nvrtc_compile(e.source, k.name, "sm_90a");
      } catch (const Error& err) {
        GTEST_SKIP() << err.what();
      }
      if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
      ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
      std::string why;
      const std::string s = sass_of(r.cubin, why);
      if (s.empty()) {
        no_sass = why;
        continue;
      }
      std::string up = sfx;
      for (char& ch : up) ch = char(std::toupper(static_cast<unsigned char>(ch)));
      EXPECT_TRUE(has(s, "QGMMA.64x128x32.F32." + up)) << name << "\n" << s.substr(0, 6000);
      EXPECT_FALSE(has(s, "HMMA")) << name << "\n" << s.substr(0, 6000);
    }
  if (!no_sass.empty()) GTEST_SKIP() << "NVRTC compiled the warpgroup fp8 kernels for sm_90a; the SASS check is skipped: " << no_sass;
}

// The warp-specialized kernels on sm_90a: tensor-map copies (cp.async.bulk.tensor) completing on
// mbarriers and wgmma m64n256k32 / m64n128k32; NVRTC compiles them for sm_90a, and where
// cuobjdump is the SASS holds UTMALDG and QGMMA.64x256x32 (QGMMA.64x128x32 for the 128x128
// kernel's block scales) and no HMMA.
TEST(GemmFp8Codegen, TheWarpSpecializedKernelsAreUtmaldgAndQgmmaOnSm90a) {
  std::string no_sass;
  struct Want {
    const char* kernel;
    uint32_t block;
    const char* ptx;
    const char* sass;
  };
  const Want wants[] = {{"iron_gemm_fp8_128x256x128_wg_ws_s4_f8e4m3_bf16", 0, "m64n256k32.f32.e4m3.e4m3", "QGMMA.64x256x32.F32.E4M3"},
                        {"iron_gemm_fp8_128x128x128_wg_ws_s4_f8e4m3_bf16", 1, "m64n128k32.f32.e4m3.e4m3", "QGMMA.64x128x32.F32.E4M3"}};
  for (const Want& want : wants) {
    const ir::Kernel k = specialized(kernel_ir(want.kernel), want.block);
    EXPECT_TRUE(ir::uses_warpgroup_ops(k));
    codegen::Emitted e = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_90a"), {});
    ASSERT_TRUE(e.ok()) << e.diags.render(k);
    EXPECT_TRUE(has(e.source, std::string("wgmma.mma_async.sync.aligned.") + want.ptx)) << want.kernel;
    EXPECT_TRUE(has(e.source, "cp.async.bulk.tensor.2d")) << want.kernel;
    EXPECT_TRUE(has(e.source, "mbarrier")) << want.kernel;
    EXPECT_FALSE(has(e.source, "cp.async.cg")) << want.kernel;
    EXPECT_EQ(has(e.source, "iron_tile_scale_add("), want.block == 1) << want.kernel;
    rt::NvrtcResult r;
    try {
      r = rt::nvrtc_compile(e.source, k.name, "sm_90a");
    } catch (const Error& err) {
      GTEST_SKIP() << err.what();
    }
    if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
    ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
    std::string why;
    const std::string s = sass_of(r.cubin, why);
    if (s.empty()) {
      no_sass = why;
      continue;
    }
    EXPECT_TRUE(has(s, "UTMALDG")) << want.kernel << "\n" << s.substr(0, 6000);
    EXPECT_TRUE(has(s, want.sass)) << want.kernel << "\n" << s.substr(0, 6000);
    EXPECT_FALSE(has(s, "HMMA")) << want.kernel << "\n" << s.substr(0, 6000);
  }
  if (!no_sass.empty()) GTEST_SKIP() << "NVRTC compiled the warp-specialized fp8 kernels for sm_90a; the SASS check is skipped: " << no_sass;
}

}  // namespace iron
