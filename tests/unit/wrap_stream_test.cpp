// Context::wrap_stream: a stream another library owns (PyTorch's current stream, for the Python
// package). The interpreter and Vulkan have none (null is their default stream, anything else a
// clear error); CUDA wraps any CUstream, null (the legacy null stream) included, as the same
// Stream for the same handle. CUDA cases run where a driver is (skipped here, never passed).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "iron/dlpack.hpp"

using namespace iron;

namespace {

// out[i] = a[i] + 1.
void inc_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] + 1.0f; });
}

const ir::Kernel& inc_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"wrap_stream_test_inc", &inc_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

class WrapStream : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    try {
      ctx_ = Context::create(GetParam());
    } catch (const Error& e) {
      if (GetParam() == Backend::Cuda) GTEST_SKIP() << "cuda unavailable: " << e.what();
      FAIL() << "cannot open " << backend_name(GetParam()) << ": " << e.what();
    }
  }
  std::unique_ptr<Context> ctx_;
};

}  // namespace

// A launch on the wrapped null handle runs in order with a download, on every backend.
TEST_P(WrapStream, TheNullHandleLaunchesInOrder) {
  Context& c = *ctx_;
  const Stream s = c.wrap_stream(nullptr);
  EXPECT_EQ(s.is_default(), GetParam() != Backend::Cuda);  // CUDA wraps the legacy null stream as foreign
  const size_t n = 1000;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = float(i);
  DeviceBuffer a = c.alloc(DType::F32, n), out = c.alloc(DType::F32, n);
  c.upload(a, host.data(), n * 4, s);
  for (int r = 0; r < 3; ++r) {
    c.dispatch_with_grid(inc_kernel(), DType::F32, {{"a", a}, {"out", out}}, {{"n", uint32_t(n)}}, {16, 1, 1}, {64, 1, 1}, s);
    c.dispatch_with_grid(inc_kernel(), DType::F32, {{"a", out}, {"out", a}}, {{"n", uint32_t(n)}}, {16, 1, 1}, {64, 1, 1}, s);
  }
  std::vector<float> got(n);
  c.download(a, got.data(), n * 4);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], float(i) + 6.0f) << "element " << i;
  EXPECT_EQ(c.wrap_stream(nullptr).impl(), s.impl());  // one handle, one Stream
}

// Only CUDA has other libraries' streams: elsewhere a handle is refused, naming the device.
TEST_P(WrapStream, AForeignHandleNeedsCuda) {
  if (GetParam() == Backend::Cuda) GTEST_SKIP() << "CUDA takes any CUstream";
  int not_a_stream = 0;
  try {
    ctx_->wrap_stream(&not_a_stream);
    FAIL() << "a " << backend_name(GetParam()) << " Context wrapped a foreign stream";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no streams of other libraries to wrap: only a CUDA Context takes a CUstream"),
              std::string::npos)
        << e.what();
  }
}

// CUDA: memory someone else owns (here Iron's own buffer, exported and imported back through
// DLPack) launched on a wrapped stream is released without waiting and the results are intact;
// a stream of Iron's own still orders against the wrapped one through an event.
TEST_P(WrapStream, WrappedMemoryOnAWrappedStreamIsReleasedInOrder) {
  if (GetParam() != Backend::Cuda) GTEST_SKIP() << "external device memory is CUDA's";
  Context& c = *ctx_;
  const size_t n = 4096;
  std::vector<float> host(n, 2.0f);
  DeviceBuffer a = c.alloc(DType::F32, n), out = c.alloc(DType::F32, n);
  c.upload(a, host.data(), n * 4);
  c.synchronize();
  const Stream foreign = c.wrap_stream(nullptr);
  {
    DeviceBuffer wrapped_out = c.from_dlpack(c.to_dlpack(out));
    c.dispatch_with_grid(inc_kernel(), DType::F32, {{"a", a}, {"out", wrapped_out}}, {{"n", uint32_t(n)}}, {64, 1, 1},
                         {64, 1, 1}, foreign);
  }  // released here, the launch perhaps still running: `out` itself keeps the memory
  const Stream own = c.create_stream();
  c.wait_event(own, c.record_event(foreign));
  c.dispatch_with_grid(inc_kernel(), DType::F32, {{"a", out}, {"out", a}}, {{"n", uint32_t(n)}}, {64, 1, 1}, {64, 1, 1}, own);
  std::vector<float> got(n);
  c.download(a, got.data(), n * 4);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 4.0f) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Backends, WrapStream, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& p) { return std::string(backend_name(p.param)); });
