// The threadgroup size as a compile-time fact (docs/architecture.md "Launch facts"): const_fold
// folds group_size with the launch's shape, the CUDA source is emitted for one shape
// (__launch_bounds__, group_size constants) and compiles through NVRTC, every pipeline cache
// (memory and disk) keys by the shape so a dispatch with another shape never reuses code built
// for the last one, and a device refuses to launch code with a shape it was not built for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "ir_text.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

using namespace iron;
using iron::test::parse_verified;
namespace fs = std::filesystem;

namespace {

// out[thread_id(0)] = 1000 * group_size(0) + 10 * group_size(1) + group_size(2).
const char* const kSizesIr =
    "kernel tg_sizes mode=Reduction {\n"
    "  param out: out buf<u32> extent=256\n"
    "  %0 = thread_id<0> : u32\n"
    "  %1 = group_size<0> : u32\n"
    "  %2 = group_size<1> : u32\n"
    "  %3 = group_size<2> : u32\n"
    "  %4 = const<1000> : u32\n"
    "  %5 = mul %1, %4 : u32\n"
    "  %6 = const<10> : u32\n"
    "  %7 = mul %2, %6 : u32\n"
    "  %8 = add %5, %7 : u32\n"
    "  %9 = add %8, %3 : u32\n"
    "  %10 = local_id<1> : u32\n"
    "  %11 = local_id<2> : u32\n"
    "  %12 = or %10, %11 : u32\n"
    "  %13 = const<0> : u32\n"
    "  %14 = eq %12, %13 : bool\n"
    "  if %14 {\n"
    "    store<out> %0, %9\n"
    "  }\n"
    "}\n";

size_t count_op(const ir::Kernel& k, ir::Op op) {
  size_t n = 0;
  ir::walk(k, [&](ir::Id id) { n += k.insts[id].op == op; });
  return n;
}

// The interpreter's answer for `k` at grid {256 / tg.x, 1, 1} x `tg`.
std::vector<uint32_t> interp_sizes(const ir::Kernel& k, Dim3 tg) {
  std::vector<uint32_t> out(256, 0);
  interp::run(k, DType::F32, {{out.data(), out.size() * 4}}, {}, {256 / tg.x, 1, 1}, tg, interp::Options{});
  return out;
}

passes::LaunchFacts facts(Dim3 tg) {
  passes::LaunchFacts f;
  f.threadgroup[0] = tg.x;
  f.threadgroup[1] = tg.y;
  f.threadgroup[2] = tg.z;
  return f;
}

}  // namespace

TEST(LaunchFacts, ConstFoldFoldsGroupSizeOnlyWhenTheShapeIsKnown) {
  const ir::Kernel k = parse_verified(kSizesIr);
  const Dim3 tg{32, 2, 4};
  ir::Kernel unknown = passes::optimize(k);
  EXPECT_EQ(count_op(unknown, ir::Op::GroupSize), 3u) << ir::print(unknown);
  ir::Kernel known = passes::optimize(k, facts(tg));
  EXPECT_EQ(count_op(known, ir::Op::GroupSize), 0u) << ir::print(known);
  // The folded program computes what the unfolded one does at that shape.
  const std::vector<uint32_t> want = interp_sizes(k, tg);
  EXPECT_EQ(want[0], 32u * 1000 + 2 * 10 + 4);
  EXPECT_EQ(interp_sizes(known, tg), want);
  EXPECT_EQ(interp_sizes(unknown, tg), want);
}

// Known-bad: const_fold.group_size_x folds every axis to the x size; the interpreter comparison
// above sees it.
TEST(LaunchFacts, GroupSizeAxisMutationIsCaught) {
  const ir::Kernel k = parse_verified(kSizesIr);
  const Dim3 tg{32, 2, 4};
  ir::Kernel mutant = k;
  passes::PipelineOptions opts;
  opts.launch = facts(tg);
  opts.mutation = "const_fold.group_size_x";
  ASSERT_TRUE(passes::run_pipeline(mutant, opts).ok());
  EXPECT_NE(interp_sizes(mutant, tg), interp_sizes(k, tg));
}

TEST(LaunchFacts, CudaSourceIsBuiltForOneThreadgroup) {
  const ir::Kernel k = parse_verified(kSizesIr);
  const Dim3 tg{64, 2, 1};
  codegen::EmitOptions any;
  codegen::Emitted generic = codegen::emit(passes::optimize(k), DType::F32, codegen::Target::Cuda, any);
  ASSERT_TRUE(generic.ok());
  EXPECT_EQ(generic.source.find("__launch_bounds__"), std::string::npos) << generic.source;
  EXPECT_NE(generic.source.find("blockDim.y"), std::string::npos) << generic.source;

  codegen::EmitOptions fixed;
  fixed.threadgroup[0] = tg.x;
  fixed.threadgroup[1] = tg.y;
  fixed.threadgroup[2] = tg.z;
  // Unoptimized IR: the dialect itself spells group_size as constants.
  codegen::Emitted raw = codegen::emit(k, DType::F32, codegen::Target::Cuda, fixed);
  ASSERT_TRUE(raw.ok());
  codegen::Emitted folded = codegen::emit(passes::optimize(k, facts(tg)), DType::F32, codegen::Target::Cuda, fixed);
  ASSERT_TRUE(folded.ok());
  for (const codegen::Emitted* e : {&raw, &folded}) {
    EXPECT_NE(e->source.find("__global__ void __launch_bounds__(128) " + e->entry + "("), std::string::npos) << e->source;
    EXPECT_EQ(e->source.find("blockDim"), std::string::npos) << e->source;
    for (const char* arch : {"sm_80", "sm_90a"}) {
      rt::NvrtcResult r;
      try {
        r = rt::nvrtc_compile(e->source, e->entry, arch);
      } catch (const Error& err) {
        GTEST_SKIP() << "NVRTC unavailable: " << err.what();
      }
      EXPECT_TRUE(r.ok) << arch << ":\n" << r.log.substr(0, 3000) << "\n" << e->source;
    }
  }
}

// Every backend: a dispatch with another threadgroup shape gets code built for that shape, from
// the memory cache and from the disk cache (a fresh Context over the same directory).
class TgShapes : public ::testing::TestWithParam<Backend> {};

TEST_P(TgShapes, EveryShapeGetsItsOwnPipeline) {
  const ir::Kernel k = parse_verified(kSizesIr);
  const fs::path dir = fs::temp_directory_path() / ("iron_tgconst_test_" + std::string(backend_name(GetParam())) + "_" +
                                                    std::to_string(::getpid()));
  fs::remove_all(dir);
  auto run = [&](Context& ctx, Dim3 tg) {
    Bindings bind = {{"out", ctx.alloc(DType::U32, 256)}};
    std::vector<uint32_t> out(256, 0);
    ctx.upload(bind[0].second, out.data(), out.size() * 4);
    ctx.dispatch_with_grid(k, DType::F32, bind, {}, {256 / tg.x, 1, 1}, tg);
    ctx.synchronize();
    ctx.download(bind[0].second, out.data(), out.size() * 4);
    const uint32_t want = tg.x * 1000 + tg.y * 10 + tg.z;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] != want) {
        ADD_FAILURE() << "threadgroup " << tg.x << "x" << tg.y << "x" << tg.z << ": element " << i << " is " << out[i]
                      << ", want " << want;
        break;
      }
  };
  const std::vector<Dim3> shapes = {{64, 1, 1}, {32, 1, 1}, {64, 1, 1}, {128, 1, 1}, {32, 2, 1}, {32, 1, 2}};
  try {
    Context::create(GetParam());
  } catch (const Error& e) {
    GTEST_SKIP() << backend_name(GetParam()) << " unavailable: " << e.what();
  }
  {
    std::unique_ptr<Context> ctx = Context::create(GetParam());
    ctx->set_disk_cache_dir(dir.string());
    for (Dim3 tg : shapes) run(*ctx, tg);
    const Context::CacheStats s = ctx->cache_stats();
    if (GetParam() == Backend::Interp) {
      EXPECT_EQ(s.memory_misses, 1u);  // one program for every shape: group_size is read at run time
    } else {
      EXPECT_EQ(s.memory_misses, 5u);  // five distinct shapes
      EXPECT_EQ(s.memory_hits, 1u);
      EXPECT_EQ(s.disk_writes, 5u);
    }
  }
  if (GetParam() != Backend::Interp) {
    // A fresh Context: each shape's binary from disk, the right one for each shape.
    std::unique_ptr<Context> ctx = Context::create(GetParam());
    ctx->set_disk_cache_dir(dir.string());
    for (Dim3 tg : {Dim3{128, 1, 1}, Dim3{32, 2, 1}, Dim3{64, 1, 1}}) run(*ctx, tg);
    EXPECT_EQ(ctx->cache_stats().disk_hits, 3u);
    run(*ctx, {16, 1, 1});  // never built: a disk miss, compiled for 16
    EXPECT_EQ(ctx->cache_stats().disk_misses, 1u);
  }
  fs::remove_all(dir);
}

// Context::precompile of one kernel at several shapes beside other kernels: on CUDA the batch
// is one NVRTC module per group, which cannot hold one entry name twice; every shape must still
// get its own code, ready before the first dispatch.
TEST_P(TgShapes, PrecompileBuildsEveryShape) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(GetParam());
  } catch (const Error& e) {
    GTEST_SKIP() << backend_name(GetParam()) << " unavailable: " << e.what();
  }
  const ir::Kernel k = parse_verified(kSizesIr);
  std::vector<ir::Kernel> others;
  for (int i = 0; i < 4; ++i) {
    others.push_back(k);
    others.back().name = "tg_sizes_other" + std::to_string(i);
  }
  const std::vector<Dim3> shapes = {{64, 1, 1}, {32, 1, 1}, {128, 1, 1}, {32, 2, 1}, {256, 1, 1}};
  std::vector<const ir::Kernel*> ks;
  std::vector<Instantiation> ds;
  std::vector<Dim3> tgs;
  for (Dim3 tg : shapes) {
    ks.push_back(&k);
    ds.push_back(DType::F32);
    tgs.push_back(tg);
  }
  for (const ir::Kernel& o : others) {
    ks.push_back(&o);
    ds.push_back(DType::F32);
    tgs.push_back({64, 1, 1});
  }
  ctx->precompile(ks, ds, tgs);
  for (size_t i = 0; i < ks.size(); ++i) {
    Bindings bind = {{"out", ctx->alloc(DType::U32, 256)}};
    std::vector<uint32_t> out(256, 0);
    ctx->upload(bind[0].second, out.data(), out.size() * 4);
    ctx->dispatch_with_grid(*ks[i], DType::F32, bind, {}, {256 / tgs[i].x, 1, 1}, tgs[i]);
    ctx->synchronize();
    ctx->download(bind[0].second, out.data(), out.size() * 4);
    const uint32_t want = tgs[i].x * 1000 + tgs[i].y * 10 + tgs[i].z;
    EXPECT_EQ(out[0], want) << ks[i]->name << " at " << tgs[i].x << "x" << tgs[i].y;
    EXPECT_EQ(out[255], want) << ks[i]->name << " at " << tgs[i].x << "x" << tgs[i].y;
  }
  const Context::CacheStats s = ctx->cache_stats();
  EXPECT_EQ(s.memory_misses, 0u) << "a precompiled shape was compiled again at its dispatch";
}

// Code built for one shape is refused with another; the message names both shapes.
TEST_P(TgShapes, DeviceRefusesALaunchWithAnotherShape) {
  if (GetParam() == Backend::Interp) GTEST_SKIP() << "the interpreter builds one program for every shape";
  std::unique_ptr<rt::Device> dev;
  try {
    dev = GetParam() == Backend::Cuda ? rt::make_cuda_device(0) : rt::make_vulkan_device(0);
  } catch (const Error& e) {
    GTEST_SKIP() << backend_name(GetParam()) << " unavailable: " << e.what();
  }
  const ir::Kernel k = parse_verified(kSizesIr);
  const Dim3 built{64, 1, 1};
  std::unique_ptr<rt::CompiledKernel> ck = dev->compile(passes::optimize(k, facts(built)), DType::F32, built);
  std::unique_ptr<rt::BufferImpl> buf = dev->alloc(256 * 4);
  rt::LaunchArgs args;
  args.buffers = {buf.get()};
  args.is_buffer = {1};
  dev->launch(*ck, args, {4, 1, 1}, built);
  dev->synchronize();
  try {
    dev->launch(*ck, args, {2, 1, 1}, {128, 1, 1});
    ADD_FAILURE() << "a launch with threadgroup 128x1x1 of code built for 64x1x1 was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("built for threadgroup 64x1x1"), std::string::npos) << m;
    EXPECT_NE(m.find("threadgroup 128x1x1"), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TgShapes, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& p) { return std::string(backend_name(p.param)); });

