// HIP: the CUDA dialect plus overrides. Wave64 spellings on CDNA, wave32 on RDNA; every kernel
// and dtype of the library emitted as HIP and compiled offline by clang++ for gfx90a and gfx940
// (the newest CDNA target LLVM 15 accepts: gfx942 needs LLVM 17), and the resources read back
// from each code object's metadata.
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

// Every kernel of the library at every dtype, as HIP, through clang++ for one CDNA target. The
// sources are compiled in a few translation units (each kernel in a namespace of its own, as the
// CUDA device batches NVRTC), two compiles at a time: the HIP headers dominate a single compile.
class HipArch : public ::testing::TestWithParam<const char*> {};

TEST_P(HipArch, EveryKernelAndDtypeCompilesToACodeObject) {
  const codegen::HipToolchain tc = codegen::hip_toolchain();
  if (!tc.ok()) GTEST_SKIP() << tc.why;
  const std::string arch = GetParam();
  const codegen::TargetProfile profile = codegen::profile_for(codegen::Target::Hip, arch);
  std::vector<std::string> sources, entries;
  for (const KernelDecl* d : registered_kernels()) {
    const ir::Kernel k = passes::optimize(kernel_ir(d->name));
    for (Instantiation t : ir::instantiations(k)) {
      codegen::Emitted e = codegen::emit(k, t, profile);
      ASSERT_TRUE(e.ok()) << d->name << " " << instantiation_name(t) << ": " << e.diags.render(k);
      sources.push_back(std::move(e.source));
      entries.push_back(e.entry);
    }
  }
  ASSERT_GT(sources.size(), 200u);
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

INSTANTIATE_TEST_SUITE_P(Cdna, HipArch, ::testing::Values("gfx90a", "gfx940"));
