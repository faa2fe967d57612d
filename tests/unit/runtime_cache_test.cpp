// Context's compile caches end to end on the real Vulkan device (lavapipe here): a fresh Context
// finds a pipeline another Context stored on disk and skips the compiler; corrupt or unusable
// entries are rebuilt, never loaded; IRON_NO_DISK_CACHE turns the disk off; the interpreter
// never touches it. Each test uses its own cache directory through Context::set_disk_cache_dir,
// so the process-wide DiskCache::instance() (and the user's ~/.cache) is never involved.
// Also: the dispatch fast paths (per-kernel facts, registry-kernel pipeline look-up, Vulkan
// descriptor writes skipped for unchanged buffers) still bind the right buffers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "runtime/disk_cache.hpp"

using namespace iron;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("iron_runtime_cache_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".bin") out.push_back(e.path());
  return out;
}

// A Vulkan Context using `dir` as its disk cache (fresh memory cache). A missing device fails.
std::unique_ptr<Context> vulkan_context(const fs::path& dir, Backend backend = Backend::Vulkan) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(backend);
  } catch (const Error& e) {
    ADD_FAILURE() << "no " << backend_name(backend) << " context: " << e.what();
    return nullptr;
  }
  ctx->set_disk_cache_dir(dir.string());
  return ctx;
}

// Dispatches iron_add (f32) over n exactly representable elements, checks every element and
// returns the wall time of the dispatch + synchronize in milliseconds.
double add_and_check(Context& ctx, uint32_t n, Dim3 tg = {64, 1, 1}, Bindings* keep = nullptr) {
  std::vector<float> a(n), b(n), out(n, -1.0f);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = 0.5f * float(i);
    b[i] = float(n) - float(i);
  }
  Bindings bind = {{"a", ctx.alloc(DType::F32, n)}, {"b", ctx.alloc(DType::F32, n)}, {"out", ctx.alloc(DType::F32, n)}};
  ctx.upload(bind[0].second, a.data(), n * 4);
  ctx.upload(bind[1].second, b.data(), n * 4);
  ctx.upload(bind[2].second, out.data(), n * 4);
  const auto t0 = std::chrono::steady_clock::now();
  ctx.dispatch_with_grid("iron_add", DType::F32, bind, {{"n", n}}, {(n + tg.x - 1) / tg.x, 1, 1}, tg);
  ctx.synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ctx.download(bind[2].second, out.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(out[i], a[i] + b[i]) << "element " << i;
    if (out[i] != a[i] + b[i]) break;
  }
  if (keep) *keep = bind;
  return ms;
}

class RuntimeCache : public ::testing::Test {
 protected:
  // Contexts read IRON_NO_DISK_CACHE when they are created; these tests want the disk on.
  void SetUp() override { unsetenv("IRON_NO_DISK_CACHE"); }
  void TearDown() override {
    unsetenv("IRON_NO_DISK_CACHE");
    unsetenv("IRON_OPT_BISECT");
  }
};

}  // namespace

TEST_F(RuntimeCache, ASecondContextLoadsThePipelineFromDisk) {
  const fs::path dir = fresh_dir("hit");
  auto first = vulkan_context(dir);
  ASSERT_TRUE(first);
  const double miss_ms = add_and_check(*first, 1003);
  Context::CacheStats s = first->cache_stats();
  EXPECT_EQ(s.memory_misses, 1u);
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_EQ(s.disk_misses, 1u);
  EXPECT_EQ(s.disk_writes, 1u);
  EXPECT_EQ(entries(dir).size(), 1u);
  const double steady_ms = add_and_check(*first, 1003);  // the memory cache now
  EXPECT_EQ(first->cache_stats().memory_hits, 1u);
  EXPECT_EQ(first->cache_stats().disk_misses, 1u);

  // A fresh Context has an empty memory cache: it must find the binary on disk. Constexprs are
  // launch arguments, not part of the binary, so another n is the same entry.
  auto second = vulkan_context(dir);
  ASSERT_TRUE(second);
  const double hit_ms = add_and_check(*second, 517);
  s = second->cache_stats();
  EXPECT_EQ(s.memory_misses, 1u);
  EXPECT_EQ(s.disk_hits, 1u);
  EXPECT_EQ(s.disk_misses, 0u);
  EXPECT_EQ(s.disk_writes, 0u);
  EXPECT_EQ(entries(dir).size(), 1u);
  add_and_check(*second, 1003);
  EXPECT_EQ(second->cache_stats().memory_hits, 1u);
  // How much of a hit is reading the entry (read + checksum); the rest is the device building
  // its pipeline from the binary (lavapipe: vkCreateComputePipelines JIT-compiles the SPIR-V).
  rt::DiskCache reader(dir.string());
  const std::string key = entries(dir).at(0).stem().string();
  const auto r0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(reader.load(key));
  const double read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count();
  std::printf("[ RuntimeCache ] first dispatch of iron_add on a fresh Context: compile (disk miss) %.3f ms, "
              "disk hit %.3f ms (of which reading the entry %.3f ms); steady-state dispatch %.3f ms\n",
              miss_ms, hit_ms, read_ms, steady_ms);
  fs::remove_all(dir);
}

TEST_F(RuntimeCache, ACorruptEntryIsDetectedAndRebuilt) {
  const fs::path dir = fresh_dir("corrupt");
  {
    auto ctx = vulkan_context(dir);
    ASSERT_TRUE(ctx);
    add_and_check(*ctx, 1003);
  }
  std::vector<fs::path> files = entries(dir);
  ASSERT_EQ(files.size(), 1u);
  {  // flip one byte of the stored SPIR-V
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-10, std::ios::end);
    char c = 0;
    f.get(c);
    f.seekp(-10, std::ios::end);
    f.put(char(c ^ 0x5a));
  }
  auto ctx = vulkan_context(dir);
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 1003);
  Context::CacheStats s = ctx->cache_stats();
  EXPECT_EQ(s.disk_corrupt, 1u);
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_EQ(s.disk_misses, 1u);
  EXPECT_EQ(s.disk_writes, 1u);  // rebuilt and stored again

  auto again = vulkan_context(dir);  // the rebuilt entry is good
  ASSERT_TRUE(again);
  add_and_check(*again, 1003);
  EXPECT_EQ(again->cache_stats().disk_hits, 1u);
  EXPECT_EQ(again->cache_stats().disk_corrupt, 0u);
  fs::remove_all(dir);
}

TEST_F(RuntimeCache, ATruncatedEntryIsDetectedAndRebuilt) {
  const fs::path dir = fresh_dir("truncated");
  {
    auto ctx = vulkan_context(dir);
    ASSERT_TRUE(ctx);
    add_and_check(*ctx, 1003);
  }
  std::vector<fs::path> files = entries(dir);
  ASSERT_EQ(files.size(), 1u);
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);
  auto ctx = vulkan_context(dir);
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 1003);
  EXPECT_EQ(ctx->cache_stats().disk_corrupt, 1u);
  EXPECT_EQ(ctx->cache_stats().disk_hits, 0u);
  EXPECT_EQ(ctx->cache_stats().disk_writes, 1u);
  fs::remove_all(dir);
}

// An entry whose checksum is right but whose bytes the device cannot use (here: not SPIR-V) is
// a miss: the kernel is recompiled and the entry replaced.
TEST_F(RuntimeCache, AnEntryTheDeviceRejectsIsRebuilt) {
  const fs::path dir = fresh_dir("rejected");
  {
    auto ctx = vulkan_context(dir);
    ASSERT_TRUE(ctx);
    add_and_check(*ctx, 1003);
  }
  std::vector<fs::path> files = entries(dir);
  ASSERT_EQ(files.size(), 1u);
  const std::string key = files[0].stem().string();
  const std::string junk(64, 'x');
  rt::DiskCache(dir.string()).store(key, junk.data(), junk.size());

  auto ctx = vulkan_context(dir);
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 1003);
  Context::CacheStats s = ctx->cache_stats();
  EXPECT_EQ(s.disk_rejected, 1u);
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_EQ(s.disk_misses, 1u);
  EXPECT_EQ(s.disk_writes, 1u);

  auto again = vulkan_context(dir);
  ASSERT_TRUE(again);
  add_and_check(*again, 1003);
  EXPECT_EQ(again->cache_stats().disk_hits, 1u);
  fs::remove_all(dir);
}

TEST_F(RuntimeCache, IronNoDiskCacheTurnsItOff) {
  const fs::path dir = fresh_dir("off");
  setenv("IRON_NO_DISK_CACHE", "1", 1);
  auto ctx = vulkan_context(dir);  // reads the variable now
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 1003);
  Context::CacheStats s = ctx->cache_stats();
  EXPECT_EQ(s.memory_misses, 1u);
  EXPECT_EQ(s.disk_hits + s.disk_misses + s.disk_writes, 0u);
  EXPECT_TRUE(entries(dir).empty());
  unsetenv("IRON_NO_DISK_CACHE");
  fs::remove_all(dir);
}

// IRON_OPT_BISECT / IRON_PASS_MUTATION change what the optimizer produces: the disk cache is
// bypassed both ways while one is set (a huge bisection budget changes nothing here).
TEST_F(RuntimeCache, OptimizerDebugSwitchesBypassTheDisk) {
  const fs::path dir = fresh_dir("bisect");
  {
    auto warm = vulkan_context(dir);
    ASSERT_TRUE(warm);
    add_and_check(*warm, 1003);
  }
  ASSERT_EQ(entries(dir).size(), 1u);
  setenv("IRON_OPT_BISECT", "1000000000", 1);
  auto ctx = vulkan_context(dir);
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 1003);
  add_and_check(*ctx, 1003, {128, 1, 1});
  unsetenv("IRON_OPT_BISECT");
  Context::CacheStats s = ctx->cache_stats();
  EXPECT_EQ(s.memory_misses, 2u);
  EXPECT_EQ(s.disk_hits + s.disk_misses + s.disk_writes, 0u);
  EXPECT_EQ(entries(dir).size(), 1u);
  fs::remove_all(dir);
}

TEST_F(RuntimeCache, AnEmptyDirectoryTurnsItOffForOneContext) {
  auto ctx = vulkan_context(fs::path());
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 100);
  EXPECT_EQ(ctx->cache_stats().disk_hits + ctx->cache_stats().disk_misses, 0u);
}

// Vulkan bakes the threadgroup shape into the pipeline: another shape or dtype is another entry.
TEST_F(RuntimeCache, ShapeAndDtypeAreSeparateEntries) {
  const fs::path dir = fresh_dir("shapes");
  auto ctx = vulkan_context(dir);
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 1003, {64, 1, 1});
  add_and_check(*ctx, 1003, {128, 1, 1});
  EXPECT_EQ(entries(dir).size(), 2u);
  Bindings f16 = {{"a", ctx->alloc(DType::F16, 64)}, {"b", ctx->alloc(DType::F16, 64)}, {"out", ctx->alloc(DType::F16, 64)}};
  ctx->dispatch_with_grid("iron_add", DType::F16, f16, {{"n", 64}}, {1, 1, 1}, {64, 1, 1});
  ctx->synchronize();
  EXPECT_EQ(entries(dir).size(), 3u);
  EXPECT_EQ(ctx->cache_stats().disk_writes, 3u);

  auto other = vulkan_context(dir);
  ASSERT_TRUE(other);
  add_and_check(*other, 1003, {128, 1, 1});
  add_and_check(*other, 1003, {64, 1, 1});
  EXPECT_EQ(other->cache_stats().disk_hits, 2u);
  EXPECT_EQ(other->cache_stats().disk_misses, 0u);
  fs::remove_all(dir);
}

TEST_F(RuntimeCache, TheInterpreterDoesNotUseTheDisk) {
  const fs::path dir = fresh_dir("interp");
  auto ctx = vulkan_context(dir, Backend::Interp);
  ASSERT_TRUE(ctx);
  add_and_check(*ctx, 1003, {32, 1, 1});
  EXPECT_EQ(ctx->cache_stats().disk_hits + ctx->cache_stats().disk_misses + ctx->cache_stats().disk_writes, 0u);
  EXPECT_TRUE(entries(dir).empty());
  fs::remove_all(dir);
}

// A traced copy of a registry kernel is not a registry kernel (no address fast path) but has the
// same content: it shares the pipeline, found by content hash.
TEST_F(RuntimeCache, ACopyOfARegistryKernelSharesItsPipeline) {
  auto ctx = vulkan_context(fs::path());
  ASSERT_TRUE(ctx);
  Bindings bind;
  add_and_check(*ctx, 256, {64, 1, 1}, &bind);
  const size_t pipelines = ctx->pipeline_cache_size();
  const KernelDecl* decl = find_kernel_decl("iron_add");
  ASSERT_NE(decl, nullptr);
  const ir::Kernel copy = trace_kernel(*decl);
  const uint64_t hits = ctx->cache_stats().memory_hits;
  ctx->dispatch_with_grid(copy, DType::F32, bind, {{"n", 256}}, {4, 1, 1}, {64, 1, 1});
  ctx->synchronize();
  EXPECT_EQ(ctx->pipeline_cache_size(), pipelines);
  EXPECT_EQ(ctx->cache_stats().memory_hits, hits + 1);
  // The same rules apply to both: a bad dispatch of the copy is still rejected.
  EXPECT_THROW(ctx->dispatch_with_grid(copy, DType::F32, bind, {{"n", 257}}, {5, 1, 1}, {64, 1, 1}), Error);
  EXPECT_THROW(ctx->validate_dispatch(kernel_ir("iron_add"), DType::F32, bind, {{"n", 257}}, {5, 1, 1}, {64, 1, 1}),
               Error);
}

// Vulkan skips vkUpdateDescriptorSets when a launch binds the same buffers as the last one. New
// buffers, swapped buffers, and buffers allocated where freed ones were (lavapipe reuses the
// handles) must all be bound afresh.
TEST_F(RuntimeCache, VulkanRebindsWhateverBuffersADispatchNames) {
  auto ctx = vulkan_context(fs::path());
  ASSERT_TRUE(ctx);
  const uint32_t n = 64;
  auto buffer = [&](float v) {
    DeviceBuffer b = ctx->alloc(DType::F32, n);
    std::vector<float> data(n, v);
    ctx->upload(b, data.data(), n * 4);
    return b;
  };
  auto sum = [&](const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& out) {
    ctx->dispatch_with_grid("iron_add", DType::F32, {{"a", a}, {"b", b}, {"out", out}}, {{"n", n}}, {1, 1, 1},
                            {64, 1, 1});
    ctx->synchronize();
    std::vector<float> got(n);
    ctx->download(out, got.data(), n * 4);
    return got[0] == got[n - 1] ? got[0] : -1.0f;
  };
  DeviceBuffer one = buffer(1), two = buffer(2), out1 = buffer(0), out2 = buffer(0);
  EXPECT_EQ(sum(one, two, out1), 3.0f);
  EXPECT_EQ(sum(one, two, out1), 3.0f);  // unchanged bindings
  EXPECT_EQ(sum(two, two, out2), 4.0f);  // one binding changed, and the output
  EXPECT_EQ(sum(one, one, out1), 2.0f);
  for (int round = 0; round < 5; ++round) {
    // Freed and reallocated: the new buffers may get the old handles.
    one = buffer(float(10 * round));
    two = buffer(float(round));
    out1 = buffer(0);
    EXPECT_EQ(sum(one, two, out1), float(11 * round)) << "round " << round;
  }
}
