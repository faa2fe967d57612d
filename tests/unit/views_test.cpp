// Strided buffer views (issue 11 item 4) on every backend that opens here (the interpreter,
// Vulkan on lavapipe; CUDA where a driver is, skipped without one): a kernel that declares its
// stride scalar (strided=s) takes a strided view, every other parameter refuses one by name,
// the extent and the stride are checked at dispatch and in prepared launches, and the
// interpreter faults an access between a view's elements. Then Vulkan launch sequences rebound
// without recording again (update-after-bind descriptors), and the re-recording path beside it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"

using namespace iron;

namespace {

// out[i] = a[i * s] * 2 + 1: a strided input (a column of a row-major matrix, say).
void column_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr s = constexpr_("s", u32);
  Buffer a = input("a", f32, {n});
  strided("a", "s");
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i * s] * 2.0f + 1.0f; });
}
const ir::Kernel& column_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"views_test_column", &column_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

// out[i * s] = a[i * s] + 10: a strided input and a strided output of one stride (the real
// and imaginary parts of a complex array may be bound as the two).
void pairs_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr s = constexpr_("s", u32);
  Buffer a = input("a", f32, {n}, aligned(4));
  Buffer out = output("out", f32, {n}, aligned(4));
  strided("a", "s");
  strided("out", "s");
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i * s] = a[i * s] + 10.0f; });
}
const ir::Kernel& pairs_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"views_test_pairs", &pairs_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

// Reads a[i * s + 1]: between the elements of a strided view.
void between_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr s = constexpr_("s", u32);
  Buffer a = input("a", f32, {n});
  strided("a", "s");
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i * s + 1u]; });
}
const ir::Kernel& between_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"views_test_between", &between_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

// out[i] = a[i] + 1 on contiguous buffers.
void plain_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] + 1.0f; });
}
const ir::Kernel& plain_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"views_test_plain", &plain_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

class StridedViews : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    try {
      ctx_ = Context::create(GetParam());
    } catch (const Error& e) {
      if (GetParam() == Backend::Cuda) GTEST_SKIP() << "cuda unavailable: " << e.what();
      FAIL() << "cannot open " << backend_name(GetParam()) << ": " << e.what();
    }
  }
  std::vector<float> get(const DeviceBuffer& b) {
    std::vector<float> v(b.count());
    ctx_->download(b, v.data(), v.size() * 4);
    return v;
  }
  std::unique_ptr<Context> ctx_;
};

}  // namespace

// A 64 x 5 row-major matrix (5 columns: a stride Vulkan's offset alignment allows for column 0,
// the only column a Vulkan view may start at), read a column at a time.
TEST_P(StridedViews, AKernelThatDeclaresItsStrideReadsAColumn) {
  Context& ctx = *ctx_;
  const uint32_t rows = 64, cols = 5;
  DeviceBuffer m = ctx.alloc(DType::F32, rows * cols);
  std::vector<float> host(rows * cols);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  ctx.upload(m, host.data(), host.size() * 4);
  DeviceBuffer out = ctx.alloc(DType::F32, rows);
  const DeviceBuffer col0 = ctx.view(m, 0, rows, cols);
  EXPECT_EQ(col0.stride(), cols);
  EXPECT_EQ(col0.span_bytes(), uint64_t((rows - 1) * cols + 1) * 4);
  ctx.dispatch_with_grid(column_kernel(), DType::F32, {{"a", col0}, {"out", out}}, {{"n", rows}, {"s", cols}}, {1, 1, 1},
                         {64, 1, 1});
  std::vector<float> got = get(out);
  for (uint32_t r = 0; r < rows; ++r) ASSERT_EQ(got[r], float(r * cols) * 2 + 1) << "row " << r;
  // download gathers a strided view's elements; a strided view of a strided view composes.
  std::vector<float> gathered = get(col0);
  for (uint32_t r = 0; r < rows; ++r) ASSERT_EQ(gathered[r], float(r * cols));
  const DeviceBuffer every_other = ctx.view(col0, 0, rows / 2, 2);
  EXPECT_EQ(every_other.stride(), 2u * cols);
  gathered = get(every_other);
  for (uint32_t r = 0; r < rows / 2; ++r) ASSERT_EQ(gathered[r], float(2 * r * cols));
  // Prepared: rebound to a view of the same stride; the stride scalar is fixed.
  PreparedLaunch p = ctx.prepare_launch(column_kernel(), DType::F32, {{"a", col0}, {"out", out}}, {{"n", rows / 2}, {"s", cols}},
                                        {1, 1, 1}, {64, 1, 1});
  DeviceBuffer m2 = ctx.alloc(DType::F32, rows * cols);
  std::vector<float> host2(rows * cols, 3.0f);
  ctx.upload(m2, host2.data(), host2.size() * 4);
  p.set_buffer(p.param("a"), ctx.view(m2, 0, rows / 2, cols));
  p.launch();
  got = get(out);
  for (uint32_t r = 0; r < rows / 2; ++r) ASSERT_EQ(got[r], 7.0f);
  const std::string other = message([&] { p.set_buffer(p.param("a"), ctx.view(m2, 0, rows / 2, 2)); });
  EXPECT_NE(other.find("constexpr 's' = 5 but buffer 'a' is bound with stride 2"), std::string::npos) << other;
  const std::string fixed = message([&] { p.set_scalar(p.param("s"), 2u); });
  EXPECT_NE(fixed.find("it is the element stride of buffer 'a'"), std::string::npos) << fixed;
}

// What is refused, each by name: a view past its buffer, a strided view where the kernel needs
// contiguity, a stride scalar that is not the view's stride, a view too short for the extent,
// an upload into a strided view; and views of one stride that interleave do not alias.
TEST_P(StridedViews, TheRulesAreCheckedByName) {
  Context& ctx = *ctx_;
  DeviceBuffer m = ctx.alloc(DType::F32, 64 * 4);
  DeviceBuffer out = ctx.alloc(DType::F32, 64);
  const std::string past = message([&] { ctx.view(m, 0, 65, 4); });
  EXPECT_NE(past.find("its last element, 0 + (65 - 1) x 4 = 256, is outside the buffer"), std::string::npos) << past;
  EXPECT_NE(message([&] { ctx.view(m, 0, 4, 0); }).find("stride 0"), std::string::npos);
  const DeviceBuffer col = ctx.view(m, 0, 64, 4);
  const std::string contiguous = message([&] {
    ctx.dispatch_with_grid(plain_kernel(), DType::F32, {{"a", col}, {"out", out}}, {{"n", 64u}}, {1, 1, 1}, {64, 1, 1});
  });
  EXPECT_NE(contiguous.find("buffer 'a' is bound to a strided view (stride 4) but kernel views_test_plain needs it contiguous"),
            std::string::npos)
      << contiguous;
  EXPECT_NE(contiguous.find("views_test.cpp"), std::string::npos) << contiguous;
  const std::string mismatch = message([&] {
    ctx.dispatch_with_grid(column_kernel(), DType::F32, {{"a", col}, {"out", out}}, {{"n", 64u}, {"s", 3u}}, {1, 1, 1},
                           {64, 1, 1});
  });
  EXPECT_NE(mismatch.find("constexpr 's' = 3 but buffer 'a' is bound with stride 4 (strided=s"), std::string::npos) << mismatch;
  const std::string extent = message([&] {
    ctx.dispatch_with_grid(column_kernel(), DType::F32, {{"a", ctx.view(m, 0, 32, 4)}, {"out", out}}, {{"n", 64u}, {"s", 4u}},
                           {1, 1, 1}, {64, 1, 1});
  });
  EXPECT_NE(extent.find("buffer 'a' has 32 elements but the kernel may touch 64"), std::string::npos) << extent;
  float one = 1;
  EXPECT_NE(message([&] { ctx.upload(col, &one, 4); }).find("upload into a strided view (stride 4)"), std::string::npos);
  // A contiguous kernel still takes a contiguous buffer, and a stride-1 view is contiguous.
  ctx.dispatch_with_grid(column_kernel(), DType::F32, {{"a", ctx.view(m, 0, 64, 1)}, {"out", out}}, {{"n", 64u}, {"s", 1u}},
                         {1, 1, 1}, {64, 1, 1});
  if (ctx.info().min_view_offset_align > 4) return;  // Vulkan views start only at aligned offsets
  // Interleaved views of one stride share no element: bound as input and output at once.
  std::vector<float> host(128);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  DeviceBuffer cplx = ctx.alloc(DType::F32, 128);
  ctx.upload(cplx, host.data(), 512);
  ctx.dispatch_with_grid(pairs_kernel(), DType::F32, {{"a", ctx.view(cplx, 0, 64, 2)}, {"out", ctx.view(cplx, 1, 64, 2)}},
                         {{"n", 64u}, {"s", 2u}}, {1, 1, 1}, {64, 1, 1});
  std::vector<float> got(128);
  ctx.download(cplx, got.data(), 512);
  for (uint32_t i = 0; i < 64; ++i) {
    ASSERT_EQ(got[2 * i], float(2 * i));
    ASSERT_EQ(got[2 * i + 1], float(2 * i) + 10) << "pair " << i;
  }
  // The same slots twice (a view and itself) do alias.
  const std::string alias = message([&] {
    ctx.dispatch_with_grid(pairs_kernel(), DType::F32, {{"a", ctx.view(cplx, 0, 64, 2)}, {"out", ctx.view(cplx, 2, 63, 2)}},
                           {{"n", 63u}, {"s", 2u}}, {1, 1, 1}, {64, 1, 1});
  });
  EXPECT_NE(alias.find("are bound to the same DeviceBuffer"), std::string::npos) << alias;
}

INSTANTIATE_TEST_SUITE_P(Backends, StridedViews, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(backend_name(i.param)); });

// The interpreter bounds a strided view to its elements: an index between them is a fault
// naming the view's stride, not a read of the neighbouring column.
TEST(StridedViewBounds, TheInterpreterFaultsAnAccessBetweenElements) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  DeviceBuffer m = ctx->alloc(DType::F32, 64 * 4);
  DeviceBuffer out = ctx->alloc(DType::F32, 64);
  const std::string e = message([&] {
    ctx->dispatch_with_grid(between_kernel(), DType::F32, {{"a", ctx->view(m, 0, 64, 4)}, {"out", out}},
                            {{"n", 64u}, {"s", 4u}}, {1, 1, 1}, {64, 1, 1});
  });
  EXPECT_NE(e.find("load of buffer 'a' at index 1 is not an element of its strided view (stride 4, 64 elements at indices 0, 4, "
                   "..., 252)"),
            std::string::npos)
      << e;
  // The last element is in bounds; one stride past it is past the view.
  PreparedLaunch p = ctx->prepare_launch(column_kernel(), DType::F32, {{"a", ctx->view(m, 0, 64, 4)}, {"out", out}},
                                         {{"n", 64u}, {"s", 4u}}, {1, 1, 1}, {64, 1, 1});
  p.launch();
}

namespace {

// Four independent steps (each reads one buffer and writes its own), then rebindings.
struct VulkanRebind {
  std::unique_ptr<Context> ctx;
  std::vector<DeviceBuffer> bufs;
  LaunchSequence seq;
  void build() {
    for (int i = 0; i < 8; ++i) {
      DeviceBuffer b = ctx->alloc(DType::F32, 64);
      std::vector<float> v(64, float(i * 100));
      ctx->upload(b, v.data(), 256);
      bufs.push_back(b);
    }
    seq = ctx->create_sequence();
    for (int i = 0; i < 4; ++i)
      seq.add(ctx->prepare_launch(plain_kernel(), DType::F32, {{"a", bufs[size_t(i)]}, {"out", bufs[size_t(4 + i)]}},
                                  {{"n", 64u}}, {1, 1, 1}, {64, 1, 1}));
  }
  float at(size_t b) {
    std::vector<float> v(64);
    ctx->download(bufs[b], v.data(), 256);
    return v[63];
  }
};

}  // namespace

// Rebinding a step's buffers between replays. With update-after-bind descriptors (NVIDIA's
// Vulkan driver has them; the lavapipe here reports descriptorBindingStorageBufferUpdateAfterBind
// false) the changed bindings are rewritten and the command buffer replays as recorded, and a
// rebinding that needs a barrier the recording lacks records again; without them, or with
// IRON_VULKAN_UPDATE_AFTER_BIND=0, every rebinding records again. Either way the replays give
// the launches' results, and recording() says which happened.
TEST(VulkanSequences, RebindingWithoutRecordingAgainWhereTheDeviceCan) {
  for (const bool off : {false, true}) {
    if (off) setenv("IRON_VULKAN_UPDATE_AFTER_BIND", "0", 1);
    VulkanRebind t;
    try {
      t.ctx = Context::create(Backend::Vulkan);
    } catch (const Error& e) {
      unsetenv("IRON_VULKAN_UPDATE_AFTER_BIND");
      FAIL() << "cannot open Vulkan: " << e.what();
    }
    unsetenv("IRON_VULKAN_UPDATE_AFTER_BIND");
    t.build();
    t.seq.replay();
    EXPECT_EQ(t.at(4), 1.0f);
    EXPECT_EQ(t.at(7), 301.0f);
    const bool uab = t.seq.recording().find("update-after-bind: ") != std::string::npos;
    if (off) {
      EXPECT_FALSE(uab) << t.seq.recording();
    }
    // Step 0 now reads buffer 2: no new hazard.
    t.seq.step(0).set_buffer(t.seq.step(0).param("a"), t.bufs[2]);
    t.seq.replay();
    EXPECT_EQ(t.at(4), 201.0f);
    std::string how = t.seq.recording();
    if (uab) {
      EXPECT_NE(how.find("recorded 1 times, 1 descriptor sets rewritten in place; update-after-bind: 1 rebindings without "
                         "recording again, 0 recorded again"),
                std::string::npos)
          << how;
    } else {
      EXPECT_NE(how.find("recorded 2 times, 1 descriptor sets rewritten in place; no update-after-bind descriptors: every "
                         "rebinding records again"),
                std::string::npos)
          << how;
    }
    // Step 3 now writes buffer 6, which step 2 writes too: a write after write that needs a
    // barrier before step 3, which the recording lacks.
    t.seq.step(3).set_buffer(t.seq.step(3).param("out"), t.bufs[6]);
    t.seq.replay();
    EXPECT_EQ(t.at(6), 301.0f);  // step 3 (a = buffer 3) wrote last
    how = t.seq.recording();
    EXPECT_NE(how.find("1 barriers between them"), std::string::npos) << how;
    if (uab) {
      EXPECT_NE(how.find("recorded 2 times, 2 descriptor sets rewritten in place; update-after-bind: 1 rebindings "
                         "without recording again, 1 recorded again"),
                std::string::npos)
          << how;
    } else {
      EXPECT_NE(how.find("recorded 3 times"), std::string::npos) << how;
    }
    // Back to reading buffer 0 in step 0: the barrier stays, the recording too where it can.
    t.seq.step(0).set_buffer(t.seq.step(0).param("a"), t.bufs[0]);
    t.seq.replay();
    EXPECT_EQ(t.at(4), 1.0f);
    how = t.seq.recording();
    if (uab) {
      EXPECT_NE(how.find("recorded 2 times, 3 descriptor sets rewritten in place; update-after-bind: 2 rebindings"),
                std::string::npos)
          << how;
    } else {
      EXPECT_NE(how.find("recorded 4 times"), std::string::npos) << how;
    }
  }
}
