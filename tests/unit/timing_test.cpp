// Context::time_dispatch on each backend: `samples` positive finite figures come back in order,
// the timed launches still compute the right answer (nothing is uploaded inside the timing, so
// the result is that of the last launch), the L2 flush and warmup 0 work, bad options are
// rejected by Context, and a bigger problem takes longer. Vulkan runs on lavapipe here and the
// interpreter everywhere; CUDA runs only where a driver and device exist (the H200 machine) and
// otherwise must report why it cannot open.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "../../kernels/elementwise/per_thread.hpp"

using namespace iron;

namespace {

constexpr uint32_t kTg = 256;

// iron_add (f32) over n elements, inputs uploaded once, `out` poisoned so a launch that did not
// run shows up in check().
struct AddProblem {
  Context& ctx;
  uint32_t n;
  std::vector<float> a, b;
  Bindings bind;

  AddProblem(Context& c, uint32_t count) : ctx(c), n(count), a(count), b(count) {
    for (uint32_t i = 0; i < n; ++i) {
      a[i] = 0.5f * float(i % 4096);  // small integers and halves: the f32 sum is exact
      b[i] = float(i % 1000) - 7.0f;
    }
    bind = {{"a", ctx.alloc(DType::F32, n)}, {"b", ctx.alloc(DType::F32, n)}, {"out", ctx.alloc(DType::F32, n)}};
    ctx.upload(bind[0].second, a.data(), size_t(n) * 4);
    ctx.upload(bind[1].second, b.data(), size_t(n) * 4);
    std::vector<float> poison(n, -12345.0f);
    ctx.upload(bind[2].second, poison.data(), size_t(n) * 4);
  }

  Timing time(const TimingOptions& opts) {
    Dim3 grid{kernels::groups_for(n, kTg), 1, 1};
    return ctx.time_dispatch(kernel_ir("iron_add"), DType::F32, bind, {{"n", double(n)}}, grid, {kTg, 1, 1}, opts);
  }

  // Checks the first and last elements and a stride through the middle.
  void check() {
    ctx.synchronize();
    std::vector<float> out(n);
    ctx.download(bind[2].second, out.data(), size_t(n) * 4);
    std::vector<uint32_t> idx = {0, 1, 7, 8, n / 2, n - 9, n - 8, n - 1};
    for (uint32_t i = 0; i < n; i += 9973) idx.push_back(i);
    for (uint32_t i : idx) ASSERT_EQ(out[i], a[i] + b[i]) << "element " << i << " of " << n;
  }
};

void expect_valid_samples(const Timing& t, int samples) {
  ASSERT_EQ(t.samples_us.size(), size_t(samples));
  for (size_t i = 0; i < t.samples_us.size(); ++i) {
    EXPECT_TRUE(std::isfinite(t.samples_us[i])) << "sample " << i;
    EXPECT_GT(t.samples_us[i], 0.0) << "sample " << i;
  }
}

void print_samples(const char* label, const Timing& t) {
  std::printf("[ %s ] us:", label);
  for (double us : t.samples_us) std::printf(" %.1f", us);
  std::printf("\n");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string rejection(Context& ctx, const TimingOptions& opts) {
  AddProblem p(ctx, 1000);
  try {
    p.time(opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::unique_ptr<Context> open(Backend backend) {
  try {
    return Context::create(backend);
  } catch (const Error& e) {
    ADD_FAILURE() << "cannot open " << backend_name(backend) << ": " << e.what();
    return nullptr;
  }
}

}  // namespace

// --- Vulkan (lavapipe here) ------------------------------------------------------------------

TEST(Timing, VulkanSamplesAreValidAndResultCorrect) {
  auto ctx = open(Backend::Vulkan);
  ASSERT_TRUE(ctx);
  AddProblem p(*ctx, 1u << 20);
  Timing t = p.time({/*warmup=*/2, /*samples=*/5, /*flush_l2=*/false});
  print_samples("lavapipe iron_add n=2^20", t);
  expect_valid_samples(t, 5);
  EXPECT_EQ(t.compile_report, "");  // Vulkan reports no compiler resources
  p.check();
}

TEST(Timing, VulkanFlushL2) {
  auto ctx = open(Backend::Vulkan);
  ASSERT_TRUE(ctx);
  AddProblem p(*ctx, 1u << 20);
  Timing t = p.time({1, 3, true});
  print_samples("lavapipe iron_add n=2^20 flush_l2", t);
  expect_valid_samples(t, 3);
  p.check();
  // The flush buffer is kept: a second flushed run on the same device works too.
  expect_valid_samples(p.time({0, 2, true}), 2);
  p.check();
}

TEST(Timing, VulkanWarmupZero) {
  auto ctx = open(Backend::Vulkan);
  ASSERT_TRUE(ctx);
  AddProblem p(*ctx, 1u << 20);
  expect_valid_samples(p.time({0, 3, false}), 3);
  p.check();
}

TEST(Timing, VulkanRejectsBadOptions) {
  auto ctx = open(Backend::Vulkan);
  ASSERT_TRUE(ctx);
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "timing needs warmup >= 0 and samples > 0", rejection(*ctx, {1, 0, false}));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "timing needs warmup >= 0 and samples > 0", rejection(*ctx, {-1, 3, false}));
  // The read flush is CUDA's only: refused by name, not silently timed another way.
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "read L2 flush (--flush-l2-read) is implemented on CUDA only",
                      rejection(*ctx, {0, 1, true, true}));
  // The context is still usable.
  AddProblem p(*ctx, 4096);
  expect_valid_samples(p.time({0, 1, false}), 1);
  p.check();
}

TEST(Timing, VulkanLargerProblemTakesLonger) {
  auto ctx = open(Backend::Vulkan);
  ASSERT_TRUE(ctx);
  AddProblem small(*ctx, 1u << 14), big(*ctx, 1u << 22);
  const double t_small = median(small.time({2, 7, false}).samples_us);
  const double t_big = median(big.time({2, 7, false}).samples_us);
  std::printf("[ lavapipe ] iron_add f32 median: n=2^14 %.1f us, n=2^22 %.1f us\n", t_small, t_big);
  EXPECT_GT(t_big, t_small);
  small.check();
  big.check();
}

// --- interpreter ------------------------------------------------------------------------------

TEST(Timing, InterpSamplesAreValidAndResultCorrect) {
  auto ctx = open(Backend::Interp);
  ASSERT_TRUE(ctx);
  AddProblem p(*ctx, 1u << 20);
  Timing t = p.time({1, 2, false});
  print_samples("interp iron_add n=2^20", t);
  expect_valid_samples(t, 2);
  EXPECT_EQ(t.compile_report, "");
  p.check();
}

TEST(Timing, InterpWarmupZeroAndFlushIgnored) {
  auto ctx = open(Backend::Interp);
  ASSERT_TRUE(ctx);
  AddProblem p(*ctx, 1u << 14);
  expect_valid_samples(p.time({0, 3, true}), 3);
  expect_valid_samples(p.time({0, 2, true, true}), 2);  // the interpreter has no cache to flush either way
  p.check();
}

TEST(Timing, InterpRejectsBadOptions) {
  auto ctx = open(Backend::Interp);
  ASSERT_TRUE(ctx);
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "timing needs warmup >= 0 and samples > 0", rejection(*ctx, {0, 0, false}));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "timing needs warmup >= 0 and samples > 0", rejection(*ctx, {-2, 5, false}));
}

// --- CUDA: on a GPU machine the same checks plus the ptxas report; elsewhere the reason ---------

TEST(Timing, CudaTimesOrReportsWhyNot) {
  std::string why;
  if (list_devices(Backend::Cuda, &why).empty()) {
    try {
      Context::create(Backend::Cuda);
      ADD_FAILURE() << "list_devices(Cuda) is empty (" << why << ") yet a CUDA context opened";
    } catch (const Error& e) {
      EXPECT_PRED_FORMAT2(testing::IsSubstring, "no CUDA", std::string(e.what()));
      GTEST_SKIP() << e.what();
    }
    return;
  }
  auto ctx = open(Backend::Cuda);
  ASSERT_TRUE(ctx);
  AddProblem p(*ctx, 1u << 20);
  Timing t = p.time({3, 10, false});
  expect_valid_samples(t, 10);
  p.check();
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "registers", t.compile_report);
  // ptxas's spill line, or, where NVRTC's log lacks the ptxas report (a program compiled before on
  // that machine: the H200's final call of session 10, after the corpus had compiled iron_add),
  // the loaded function's local memory from its attributes.
  EXPECT_TRUE(t.compile_report.find("bytes spill stores") != std::string::npos ||
              t.compile_report.find("bytes lmem (no ptxas report in the NVRTC log)") != std::string::npos)
      << t.compile_report;
  EXPECT_EQ(t.compile_report.find("Compile time"), std::string::npos) << t.compile_report;

  Timing flushed = p.time({0, 5, true});
  expect_valid_samples(flushed, 5);
  p.check();
  // The read flush (its kernel built by NVRTC on first use, then kept): valid samples, the result
  // untouched, and a second run on the same device.
  expect_valid_samples(p.time({0, 5, true, true}), 5);
  p.check();
  expect_valid_samples(p.time({1, 3, true, true}), 3);
  p.check();
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "timing needs warmup >= 0 and samples > 0", rejection(*ctx, {1, 0, false}));

  AddProblem small(*ctx, 1u << 14), big(*ctx, 1u << 24);
  const double t_small = median(small.time({5, 21, false}).samples_us);
  const double t_big = median(big.time({5, 21, false}).samples_us);
  const double t_big_cold = median(big.time({5, 21, true}).samples_us);
  const double t_big_read = median(big.time({5, 21, true, true}).samples_us);
  std::printf("[ CUDA ] iron_add f32 median: n=2^14 %.2f us, n=2^24 %.2f us (L2 flushed: %.2f us, by a read: %.2f us)\n",
              t_small, t_big, t_big_cold, t_big_read);
  std::printf("[ CUDA ] compile report:\n%s\n", t.compile_report.c_str());
  EXPECT_GT(t_big, t_small);
  small.check();
  big.check();
}
