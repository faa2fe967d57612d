// HIP: the CUDA dialect plus overrides. Wave64 spellings on CDNA, wave32 on RDNA; every kernel
// of the library emitted as HIP and compiled offline by clang++, at every dtype for gfx90a and at
// its first for gfx940 (the newest CDNA target LLVM 15 accepts: gfx942 needs LLVM 17), and the
// resources read back from each code object's metadata.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

using namespace iron;

namespace {

// A kernel with a lane reduction, a shuffle, a ballot and a vote, traced from text IR.
const char* kLaneKernel =
    "kernel lanes mode=Elementwise {\n"
    "  param x : in buf<f32> extent=256\n  param y : out buf<f32> extent=256\n  param z : out buf<u32> extent=256\n"
    "  %0 = thread_id<0> : u32\n  %1 = load<x> %0 : f32\n  %2 = lane_sum %1 : f32\n"
    "  %3 = const<1> : u32\n  %4 = lane_shuffle_xor %2, %3 : f32\n  store<y> %0, %4\n"
    "  %5 = const<0> : f32\n  %6 = gt %1, %5 : bool\n  %7 = lane_ballot %6 : u32\n"
    "  %8 = lane_any %6 : bool\n  %9 = cast %8 : u32\n  %10 = add %7, %9 : u32\n  store<z> %0, %10\n}\n";

}  // namespace

TEST(Hip, Wave64LaneOperationsTakeNoMaskAndSplitTheBallotByHalves) {
  const ir::Kernel k = ir::parse(kLaneKernel);
  const codegen::Emitted e = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Hip, "gfx90a"));
  ASSERT_TRUE(e.ok()) << e.diags.render(k);
  const std::string& src = e.source;
  EXPECT_NE(src.find("#include <hip/hip_runtime.h>"), std::string::npos) << src;
  EXPECT_EQ(src.find("_sync("), std::string::npos) << src;  // no CUDA mask forms
  EXPECT_EQ(src.find("0xffffffffu,"), std::string::npos) << src;
  EXPECT_NE(src.find("for (int o = 32; o > 0; o >>= 1) v += __shfl_xor(v, o);"), std::string::npos) << src;
  EXPECT_NE(src.find("i < 64u ? i : iron_lane()"), std::string::npos) << src;  // sources in 0..63
  EXPECT_NE(src.find("((unsigned)(__ballot(v7) >> (iron_flat_local_id() & 32u)))"), std::string::npos) << src;
  EXPECT_NE(src.find("(__any(v7) != 0)"), std::string::npos) << src;

  // RDNA (wave32): the same dialect over 32 lanes.
  const codegen::Emitted r = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Hip, "gfx1030"));
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r.source.find("for (int o = 16; o > 0; o >>= 1) v += __shfl_xor(v, o);"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("((unsigned)__ballot(v7))"), std::string::npos) << r.source;

  // CUDA keeps its 32-lane masks, now from its profile.
  const std::string cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda).source;
  EXPECT_NE(cuda.find("__shfl_xor_sync(0xffffffffu, v, o)"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("__ballot_sync(0xffffffffu, v7)"), std::string::npos) << cuda;
}

TEST(Hip, Bf16IsIronsOwnTypeWithTheInterpretersRounding) {
  const ir::Kernel k = passes::optimize(kernel_ir("iron_add"));
  const codegen::Emitted e = codegen::emit(k, DType::BF16, codegen::Target::Hip);
  ASSERT_TRUE(e.ok()) << e.diags.render(k);
  EXPECT_EQ(e.source.find("__nv_bfloat16"), std::string::npos) << e.source;
  EXPECT_EQ(e.source.find("cuda_bf16"), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("const iron_bf16* __restrict__ p_a"), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("if ((u & 0x7fffffffu) > 0x7f800000u) return iron_bf16_from_bits((unsigned short)((u >> 16) | 0x40u));"),
            std::string::npos);
}

// Every kernel of the library, as HIP, through clang++ for a CDNA target. The sources are
// compiled in a few translation units (each kernel in a namespace of its own, as the CUDA device
// batches NVRTC), two compiles at a time: the HIP headers dominate a single compile. gfx90a takes
// every kernel's first instantiation and gfx940 every later one except the GEMM families' (of
// which one kernel per body compiles: the others differ in constants only). The
// emitted source does not depend on which CDNA target it is for (both are wave64 with 64 KiB of
// LDS: codegen::profile_for), so the two cover every dtype of every kernel but the GEMM families
// (their first dtype only) and both clang backends, at the compile time CI's 2 cores can spend on
// it; `iron build --emit hip` compiles every instantiation for both on demand.
struct HipArchCase {
  const char* arch;
  bool even;  // every kernel's first instantiation (else the later ones of the non-GEMM kernels)
};
class HipArch : public ::testing::TestWithParam<HipArchCase> {};

TEST_P(HipArch, EveryKernelCompilesToACodeObject) {
  const codegen::HipToolchain tc = codegen::hip_toolchain();
  if (!tc.ok()) GTEST_SKIP() << tc.why;
  const std::string arch = GetParam().arch;
  const codegen::TargetProfile profile = codegen::profile_for(codegen::Target::Hip, arch);
  std::vector<std::string> sources, entries;
  size_t kernels = 0, gemm_taken = 0;
  for (const KernelDecl* d : registered_kernels()) {
    const ir::Kernel k = passes::optimize(kernel_ir(d->name));
    // A warpgroup kernel (wgmma, CUDA only): HIP refuses it by name.
    if (ir::uses_warpgroup_ops(k)) {
      codegen::Emitted e = codegen::emit(k, ir::instantiations(k).front(), profile);
      EXPECT_FALSE(e.ok()) << d->name;
      EXPECT_TRUE(e.diags.render(k).find("cannot express") != std::string::npos ||
                  e.diags.render(k).find("a tensor map is CUDA's") != std::string::npos)  // the tensor-map kernels
          << e.diags.render(k);
      continue;
    }
    // The emitted source is the same for both CDNA targets: gfx90a compiles every kernel's first
    // instantiation, gfx940 every other instantiation, except the GEMM families' (iron_gemm*:
    // 2-5 s of clang each, nearly all of this test's time on CI's 2 cores), which compile their
    // first only.
    const std::vector<Instantiation> all = ir::instantiations(k);
    const std::string name = d->name;
    const bool gemm = name.rfind("iron_gemm", 0) == 0;
    // Of the GEMM families' kernels, the f32-output ones (their OUT axis changes only the final
    // cast) and the SwiGLU kernels' f16 one (they have no f32 output).
    const auto ends = [&](const std::string& tail) {
      return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (gemm && !ends("_f32") && !(name.find("swiglu") != std::string::npos && ends("_f16"))) continue;
    // Of those, one kernel per body (the tile sizes, stage counts and the fp8 format are
    // constants of the same code; each of these costs 3-10 s of clang on CI's cores).
    static const std::set<std::string> gemm_bodies = {
        "iron_gemm_32x32x32_w16x16_s2_f32",                // tiles, cp.async stages
        "iron_gemm_64x64x32_w32x32_sk_s3_f32",             // split-K partials
        "iron_gemm_64x64x32_w32x32_swiglu_s3_f16",         // the SwiGLU pair
        "iron_gemm_decode_f32",                            // decode rows (lanes and tiles)
        "iron_gemm_fp8_32x32x128_w32x16_s2_f8e4m3_f32",    // fp8 operands, block scales
        "iron_gemm_reduce_f32", "iron_gemm_reduce_swiglu_f16"};  // the split-K reductions
    if (gemm && !gemm_bodies.count(name)) continue;
    if (gemm) ++gemm_taken;
    ++kernels;
    for (size_t i = 0; i < all.size(); ++i) {
      const bool take = GetParam().even ? i == 0 : (!gemm && i >= 1);
      if (!take) continue;
      codegen::Emitted e = codegen::emit(k, all[i], profile);
      ASSERT_TRUE(e.ok()) << d->name << " " << instantiation_name(all[i]) << ": " << e.diags.render(k);
      sources.push_back(std::move(e.source));
      entries.push_back(e.entry);
    }
  }
  if (GetParam().even) {
    ASSERT_EQ(sources.size() >= kernels, true);  // every kernel once
  }
  ASSERT_GT(sources.size(), GetParam().even ? 80u : 30u);
  EXPECT_EQ(gemm_taken, 7u) << "a GEMM body named above is no longer registered";
  constexpr size_t kBatches = 8;
  std::vector<codegen::HipObject> objects(kBatches);
  std::vector<std::vector<size_t>> members(kBatches);
  for (size_t i = 0; i < sources.size(); ++i) members[i % kBatches].push_back(i);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (size_t w = 0; w < 2; ++w)
    workers.emplace_back([&, w] {
      for (size_t b = w; b < kBatches; b += 2) {
        std::vector<std::string> batch;
        for (size_t i : members[b]) batch.push_back(sources[i]);
        objects[b] = codegen::compile_hip(rt::combine_cuda_sources(batch), arch, "batch" + std::to_string(b));
      }
    });
  for (std::thread& t : workers) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::set<std::string> compiled;
  for (size_t b = 0; b < kBatches; ++b) {
    std::string names;
    for (size_t i : members[b]) names += " " + entries[i];
    ASSERT_TRUE(objects[b].ok) << arch << ", batch" << names << ":\n" << objects[b].log.substr(0, 6000);
    std::string why;
    for (const codegen::HipKernelResources& r : codegen::hip_resources(objects[b].code, why)) {
      EXPECT_EQ(r.wavefront, 64u) << r.name;
      EXPECT_GT(r.vgprs, 0u) << r.name;
      compiled.insert(r.name);
    }
    EXPECT_EQ(why, "");
  }
  for (const std::string& e : entries) EXPECT_TRUE(compiled.count(e)) << e << " is not in any code object";
  std::printf("%zu kernel instantiations compiled for %s in %zu translation units: %.1f s\n", sources.size(),
              arch.c_str(), kBatches, seconds);
}

INSTANTIATE_TEST_SUITE_P(Cdna, HipArch, ::testing::Values(HipArchCase{"gfx90a", true}, HipArchCase{"gfx940", false}),
                         [](const ::testing::TestParamInfo<HipArchCase>& i) {
                           return std::string(i.param.arch) + (i.param.even ? "_first_instantiation" : "_later_instantiations");
                         });

// The HIP device: libamdhip64 opened at run time. Where there is no AMD GPU (every machine Iron
// is built and tested on) it says so, through list_devices and Context::create alike.
TEST(Hip, TheDeviceSaysNoAmdGpuCleanly) {
  std::string why;
  const std::vector<DeviceInfo> devs = list_devices(Backend::Hip, &why);
  if (!devs.empty()) {
    // An AMD GPU: its architecture is one the HIP target knows, its wavefront 32 or 64.
    EXPECT_NO_THROW(codegen::profile_for(codegen::Target::Hip, devs[0].arch)) << devs[0].arch;
    EXPECT_TRUE(devs[0].lane_width == 32 || devs[0].lane_width == 64) << devs[0].lane_width;
    return;
  }
  EXPECT_EQ(why.rfind("no AMD GPU: ", 0), 0u) << why;
  try {
    Context::create(Backend::Hip);
    ADD_FAILURE() << "a HIP context without an AMD GPU";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no AMD GPU: ", 0), 0u) << e.what();
  }
  Backend b;
  ASSERT_TRUE(parse_backend("hip", b));
  EXPECT_EQ(b, Backend::Hip);
  EXPECT_STREQ(backend_name(Backend::Hip), "hip");
  codegen::Target t;
  ASSERT_TRUE(codegen::target_of_backend(backend_name(Backend::Hip), t));
  EXPECT_EQ(t, codegen::Target::Hip);
}

// The per-target lowering stage: lane_width folds where the profile fixes it, and what the
// target cannot take is a located error naming the kernel.
TEST(Hip, LoweringFoldsTheLaneWidthAndRefusesWhatTheTargetLacks) {
  ir::Kernel k = ir::parse(
      "kernel w mode=Elementwise {\n  param y : out buf<u32> extent=64\n"
      "  %0 = thread_id<0> : u32\n  %1 = lane_width : u32\n  store<y> %0, %1\n}\n");
  ir::Diagnostics d = codegen::lower_for_target(k, DType::F32, codegen::profile_for(codegen::Target::Hip, "gfx90a"));
  EXPECT_TRUE(d.empty()) << d.render(k);
  bool folded = false;
  for (const ir::Inst& in : k.insts) folded = folded || (in.op == ir::Op::Const && in.attr(ir::Attr::Value) == 64);
  EXPECT_TRUE(folded) << ir::print(k);

  ir::Kernel v = ir::parse(
      "kernel w mode=Elementwise {\n  param y : out buf<u32> extent=64\n"
      "  %0 = thread_id<0> : u32\n  %1 = lane_width : u32\n  store<y> %0, %1\n}\n");
  codegen::lower_for_target(v, DType::F32, codegen::profile_for(codegen::Target::Glsl));
  bool kept = false;
  for (const ir::Inst& in : v.insts) kept = kept || in.op == ir::Op::LaneWidth;
  EXPECT_TRUE(kept) << "Vulkan's subgroup size is the device's";

  codegen::TargetProfile no_bf16 = codegen::profile_for(codegen::Target::Hip);
  no_bf16.dtypes &= ~(1u << unsigned(DType::BF16));
  ir::Kernel add = passes::optimize(kernel_ir("iron_add"));
  d = codegen::lower_for_target(add, DType::BF16, no_bf16);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d.render(add).find("has no bf16"), std::string::npos) << d.render(add);
  EXPECT_NE(d.render(add).find("iron_add"), std::string::npos) << d.render(add);

  codegen::TargetProfile small = codegen::profile_for(codegen::Target::Hip);
  small.max_shared_bytes = 64;
  ir::Kernel rms = passes::optimize(kernel_ir("iron_rmsnorm"));
  d = codegen::lower_for_target(rms, DType::F32, small);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d.render(rms).find("bytes of threadgroup memory; HIP on gfx90a gives a threadgroup at most 64"),
            std::string::npos)
      << d.render(rms);
  EXPECT_NE(d.render(rms).find("kernels/norm/"), std::string::npos) << d.render(rms);  // the array's DSL line
}
