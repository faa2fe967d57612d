// Streams, events and prepared launches (include/iron/runtime.hpp) on every backend: the
// interpreter and Vulkan (lavapipe) here, CUDA where a driver is (skipped without one, never
// passed). Every check compares exact results: the kernels add whole numbers in f32.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "iron/dlpack.hpp"

using namespace iron;

namespace {

// out[i] = a[i] + iters, one 1.0 at a time: a kernel whose run time grows with `iters` and whose
// result says whether it ran to the end (whole numbers below 2^24 are exact in f32). lavapipe
// stops a loop after 65,535 iterations: `iters` stays below that.
void spin_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr iters = constexpr_("iters", u32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Var<f32> acc = a[i];
    for_(0u, iters, [&](Expr) { acc += 1.0f; });
    out[i] = acc;
  });
}

// out[i] = a[i] * s: `s` sizes nothing, so a prepared launch may change it.
void scale_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr s = constexpr_("s", f32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] * s; });
}

// out[i] = a[i] + 1 with `a` declared aligned(16): a view must start on a 16-byte boundary.
void aligned_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", f32, {n}, aligned(16));
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] + 1.0f; });
}

const ir::Kernel& aligned_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"stream_test_aligned", &aligned_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

const ir::Kernel& spin_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"stream_test_spin", &spin_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}
const ir::Kernel& scale_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"stream_test_scale", &scale_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

constexpr Dim3 kTg{64, 1, 1};
Dim3 grid_for(size_t n) { return {uint32_t((n + kTg.x - 1) / kTg.x), 1, 1}; }

std::vector<float> iota(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + float(i % 1000);
  return v;
}

}  // namespace

class Streams : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    try {
      ctx_ = Context::create(GetParam());
    } catch (const Error& e) {
      // CUDA is optional on this machine (it runs on the GPU machine); the others must open.
      if (GetParam() == Backend::Cuda) {
        GTEST_SKIP() << "cuda unavailable: " << e.what();
      }
      FAIL() << "cannot open " << backend_name(GetParam()) << ": " << e.what();
    }
  }
  Context& ctx() { return *ctx_; }
  DeviceBuffer upload(const std::vector<float>& v, const Stream& s = {}) {
    DeviceBuffer b = ctx().alloc(DType::F32, v.size());
    ctx().upload(b, v.data(), v.size() * 4, s);
    return b;
  }
  std::vector<float> download(const DeviceBuffer& b) {
    std::vector<float> v(b.count());
    ctx().download(b, v.data(), v.size() * 4);
    return v;
  }
  void spin(const DeviceBuffer& a, const DeviceBuffer& out, uint32_t iters, const Stream& s) {
    ctx().dispatch_with_grid(spin_kernel(), DType::F32, {{"a", a}, {"out", out}},
                             {{"n", uint32_t(a.count())}, {"iters", iters}}, grid_for(a.count()), kTg, s);
  }
  // Loop iterations for a "long" launch: the interpreter runs some 20 million a second; lavapipe
  // stops loops at 65,535; on a GPU 100,000 dependent adds keep a launch busy for a fraction of a
  // millisecond, so the in-flight paths are really taken.
  uint32_t long_iters() const {
    return GetParam() == Backend::Interp ? 300 : GetParam() == Backend::Vulkan ? 3000 : 100000;
  }
  std::unique_ptr<Context> ctx_;
};

// A chain of launches on one stream, each reading the previous one's output: the stream runs them
// in order, and the download waits for the last.
TEST_P(Streams, LaunchesOnOneStreamRunInOrder) {
  const size_t n = 4096;
  Stream s = ctx().create_stream();
  DeviceBuffer x = upload(iota(n, 0));
  DeviceBuffer y = ctx().alloc(DType::F32, n);
  for (int step = 0; step < 10; ++step) {
    spin(x, y, 3, s);
    spin(y, x, 4, s);
  }
  const std::vector<float> got = download(x);
  const std::vector<float> start = iota(n, 0);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], start[i] + 70.0f) << "element " << i;
}

// Stream 2 consumes what stream 1 produces, ordered by an event; the consumer's download then
// waits for both. Repeated so that a missing order would show on a backend that runs streams
// concurrently (the interpreter's workers, CUDA).
TEST_P(Streams, AnEventOrdersTwoStreams) {
  const size_t n = 8192;
  Stream s1 = ctx().create_stream(), s2 = ctx().create_stream();
  for (int round = 0; round < 4; ++round) {
    DeviceBuffer a = upload(iota(n, float(round)));
    DeviceBuffer mid = ctx().alloc(DType::F32, n);
    DeviceBuffer out = ctx().alloc(DType::F32, n);
    spin(a, mid, long_iters(), s1);
    Event produced = ctx().record_event(s1);
    ctx().wait_event(s2, produced);
    spin(mid, out, 5, s2);
    const std::vector<float> got = download(out);
    const std::vector<float> start = iota(n, float(round));
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], start[i] + float(long_iters() + 5)) << "round " << round << " element " << i;
    EXPECT_TRUE(ctx().event_done(produced));
  }
}

// An event is done once synchronized, and a stream synchronize waits for its work.
TEST_P(Streams, SynchronizeAnEventAndAStream) {
  const size_t n = 2048;
  Stream s = ctx().create_stream();
  DeviceBuffer a = upload(iota(n, 1));
  DeviceBuffer out = ctx().alloc(DType::F32, n);
  spin(a, out, long_iters(), s);
  Event e = ctx().record_event(s);
  ctx().synchronize(e);
  EXPECT_TRUE(ctx().event_done(e));
  spin(out, a, 1, s);
  ctx().synchronize(s);
  EXPECT_EQ(download(a)[5], iota(n, 1)[5] + float(long_iters() + 1));
  Event empty = ctx().record_event(ctx().create_stream());  // nothing issued there: done at once
  EXPECT_TRUE(ctx().event_done(empty));
}

// Hazard: a host upload into a buffer that a launch in flight still reads must wait for it (the
// launch sees the old contents), on the launch's stream or any other.
TEST_P(Streams, UploadWaitsForTheLaunchThatReadsTheBuffer) {
  const size_t n = 8192;
  Stream s = ctx().create_stream();
  const std::vector<float> old_a = iota(n, 10);
  DeviceBuffer a = upload(old_a);
  DeviceBuffer out = ctx().alloc(DType::F32, n);
  spin(a, out, long_iters(), s);
  const std::vector<float> new_a(n, -1.0f);
  ctx().upload(a, new_a.data(), n * 4);  // default stream: waits for the read on s
  const std::vector<float> got = download(out);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], old_a[i] + float(long_iters())) << "element " << i;
  EXPECT_EQ(download(a)[7], -1.0f);
}

// Hazard: the last handle of a buffer dropped while a launch still writes it. The memory goes
// only after the launch (a crash or a corrupted later buffer otherwise); the next buffers work.
TEST_P(Streams, ABufferFreedInFlightOutlivesItsLaunch) {
  const size_t n = 8192;
  Stream s = ctx().create_stream();
  {
    DeviceBuffer a = upload(iota(n, 0));
    DeviceBuffer out = ctx().alloc(DType::F32, n);
    spin(a, out, long_iters(), s);
  }  // both handles gone while the launch may still run
  DeviceBuffer b = upload(std::vector<float>(n, 2.0f), s);
  DeviceBuffer out2 = ctx().alloc(DType::F32, n);
  spin(b, out2, 1, s);
  const std::vector<float> got = download(out2);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3.0f) << "element " << i;
}

// A download waits for the buffer's own work and not for another stream's: while stream 1 runs a
// long chain, a buffer written on stream 2 comes back first. On the interpreter and CUDA the
// streams run side by side, so stream 1 is provably still busy; Vulkan's streams share one queue
// in submission order (its download of stream 2's buffer waits for stream 1's earlier
// submissions), so there the order alone is checked.
TEST_P(Streams, DownloadWaitsForItsBufferOnly) {
  const size_t n = GetParam() == Backend::Cuda ? 16384 : 8192;
  Stream busy = ctx().create_stream(), quick = ctx().create_stream();
  DeviceBuffer a = upload(iota(n, 0));
  DeviceBuffer b = ctx().alloc(DType::F32, n);
  DeviceBuffer small = upload(std::vector<float>(64, 1.0f));
  DeviceBuffer small_out = ctx().alloc(DType::F32, 64);
  spin(small, small_out, 1, quick);  // issued first, so on Vulkan's one queue it runs first too
  // CUDA: some 10 ms of dependent adds; the interpreter: about half a second.
  const int chain = GetParam() == Backend::Cuda ? 200 : 1;
  const uint32_t iters = GetParam() == Backend::Cuda ? 20000 : GetParam() == Backend::Interp ? 1200 : 100;
  for (int i = 0; i < chain; ++i) spin(i % 2 ? b : a, i % 2 ? a : b, iters, busy);
  Event busy_done = ctx().record_event(busy);
  EXPECT_EQ(download(small_out)[3], 2.0f);
  if (GetParam() != Backend::Vulkan) {
    EXPECT_FALSE(ctx().event_done(busy_done)) << "the download waited for the other stream's work";
  }
  ctx().synchronize();
  EXPECT_TRUE(ctx().event_done(busy_done));
}

// A stream or event of one Context is refused by another, naming the call.
TEST_P(Streams, AStreamOfAnotherContextIsRefused) {
  std::unique_ptr<Context> other = Context::create(Backend::Interp);
  Stream foreign = other->create_stream();
  DeviceBuffer a = upload(iota(64, 0));
  DeviceBuffer out = ctx().alloc(DType::F32, 64);
  try {
    spin(a, out, 1, foreign);
    FAIL() << "a foreign stream was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dispatch_with_grid: the stream belongs to another Context"), std::string::npos)
        << e.what();
  }
  Event foreign_event = other->record_event(foreign);
  EXPECT_THROW(ctx().synchronize(foreign_event), Error);
  EXPECT_THROW(ctx().event_done(Event{}), Error);
}

// ---------------------------------------------------------------------------------------------
// Prepared launches

TEST_P(Streams, APreparedLaunchRebindsBuffersAndScalars) {
  const size_t n = 1000;
  DeviceBuffer a = upload(iota(n, 1));
  DeviceBuffer out = ctx().alloc(DType::F32, n);
  PreparedLaunch p = ctx().prepare_launch(scale_kernel(), DType::F32, {{"a", a}, {"out", out}},
                                          {{"n", uint32_t(n)}, {"s", 2.0f}}, grid_for(n), kTg);
  Stream s = ctx().create_stream();
  p.launch(s);
  std::vector<float> got = download(out);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * iota(n, 1)[i]);
  // New buffers (larger than the extent is fine) and a new factor, by index.
  DeviceBuffer a2 = upload(iota(n + 5, 3));
  DeviceBuffer out2 = ctx().alloc(DType::F32, n + 5);
  p.set_buffer(p.param("a"), a2);
  p.set_buffer(p.param("out"), out2);
  p.set_scalar(p.param("s"), -0.5f);
  for (int i = 0; i < 3; ++i) p.launch(s);
  got = download(out2);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], -0.5f * iota(n + 5, 3)[i]);
  EXPECT_EQ(download(out)[9], 2.0f * iota(n, 1)[9]);  // the old output was left alone
}

// Validation happens once, at prepare_launch, with dispatch_with_grid's message.
TEST_P(Streams, PrepareLaunchValidatesLikeADispatch) {
  DeviceBuffer a = upload(iota(100, 0));
  DeviceBuffer out = ctx().alloc(DType::F32, 50);
  try {
    ctx().prepare_launch(scale_kernel(), DType::F32, {{"a", a}, {"out", out}}, {{"n", 100u}, {"s", 1.0f}}, grid_for(100), kTg);
    FAIL() << "an undersized buffer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid dispatch of stream_test_scale"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("buffer 'out' has 50 elements but the kernel may touch 100"), std::string::npos)
        << e.what();
  }
}

// Each rebinding rule rejects by name and leaves the launch as it was.
TEST_P(Streams, APreparedLaunchRejectsRebindingsThatChangeItsShapes) {
  const size_t n = 256;
  DeviceBuffer a = upload(iota(n, 1));
  DeviceBuffer out = ctx().alloc(DType::F32, n);
  PreparedLaunch p = ctx().prepare_launch(scale_kernel(), DType::F32, {{"a", a}, {"out", out}},
                                          {{"n", uint32_t(n)}, {"s", 3.0f}}, grid_for(n), kTg);
  auto rejects = [&](auto&& fn, const std::string& want) {
    try {
      fn();
      ADD_FAILURE() << "accepted; expected: " << want;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("invalid rebinding of the prepared launch of stream_test_scale"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  rejects([&] { p.set_buffer(p.param("a"), ctx().alloc(DType::F32, n - 1)); },
          "buffer 'a' has 255 elements but the kernel may touch 256");
  rejects([&] { p.set_buffer(p.param("a"), ctx().alloc(DType::I32, n)); }, "buffer 'a' holds i32 but the parameter is buf<f32>");
  rejects([&] { p.set_buffer(p.param("out"), a); },
          "buffers 'out' (out) and 'a' (in) would be bound to the same DeviceBuffer");
  rejects([&] { p.set_buffer(p.param("a"), DeviceBuffer{}); }, "buffer parameter 'a' is bound to an empty DeviceBuffer");
  rejects([&] { p.set_scalar(p.param("n"), 128u); }, "constexpr 'n' = 128: it sizes buffer 'a'");
  rejects([&] { p.set_scalar(p.param("n"), -1); }, "constexpr 'n' = -1 is not a u32");
  rejects([&] { p.set_scalar(p.param("s"), 1e300); }, "constexpr 's' = 1e+300 is out of f32 range");
  rejects([&] { p.set_scalar(p.param("a"), 1.0f); }, "parameter 2 ('a') is a buffer parameter, not a scalar one");
  rejects([&] { p.set_buffer(7, a); }, "parameter index 7 is out of range (the kernel has 4 parameters)");
  if (GetParam() != Backend::Interp) {  // interpreter buffers are host memory any interpreter may use
    std::unique_ptr<Context> other = Context::create(Backend::Interp);
    DeviceBuffer foreign = other->alloc(DType::F32, n);
    rejects([&] { p.set_buffer(p.param("a"), foreign); }, "buffer 'a' is from another device");
  }
  EXPECT_THROW(p.param("m"), Error);
  p.set_scalar(p.param("n"), uint32_t(n));  // the validated value itself is fine
  p.launch();
  EXPECT_EQ(download(out)[4], 3.0f * iota(n, 1)[4]);  // still bound as prepared
}

INSTANTIATE_TEST_SUITE_P(Backends, Streams, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(backend_name(i.param)); });

// ---------------------------------------------------------------------------------------------
// The caching pool

// Hazard: a pooled buffer freed while a launch on another stream still writes it must not be
// handed to a new owner then (the launch would overwrite the owner's data); once that launch is
// done it is reused.
TEST_P(Streams, APooledBufferStillInFlightIsNotHandedOut) {
  const size_t n = 8192;
  Stream s1 = ctx().create_stream(), s2 = ctx().create_stream();
  DeviceBuffer a = upload(iota(n, 0));
  const rt::BufferImpl* old = nullptr;
  {
    DeviceBuffer out = ctx().alloc_pooled(DType::F32, n, s1);
    old = out.impl();
    spin(a, out, long_iters(), s1);
  }  // freed while the launch may still run on s1
  DeviceBuffer mine = ctx().alloc_pooled(DType::F32, n, s2);
  Event e = ctx().record_event(s1);
  if (!ctx().event_done(e)) {
    EXPECT_NE(mine.impl(), old) << "a buffer still written on s1 was handed to a new owner on s2";
    EXPECT_GE(ctx().pool_stats().skipped_in_flight, 1u);
  }
  const std::vector<float> mine_values(n, 5.0f);
  ctx().upload(mine, mine_values.data(), n * 4, s2);
  ctx().synchronize();
  EXPECT_EQ(download(mine), mine_values);  // nothing else wrote it
  mine = DeviceBuffer{};
  // Both are free and idle now: the next two requests reuse them, allocating nothing.
  const uint64_t allocated = ctx().pool_stats().allocated;
  DeviceBuffer r1 = ctx().alloc_pooled(DType::F32, n, s2);
  DeviceBuffer r2 = ctx().alloc_pooled(DType::F32, n - 100, s2);  // the same size class
  EXPECT_EQ(ctx().pool_stats().allocated, allocated);
  EXPECT_TRUE(r1.impl() == old || r2.impl() == old);
}

// On the stream that last used it, a freed buffer is reused at once: later work on that stream
// runs after the old work, so the new owner's upload, launch and download see only its own data.
TEST_P(Streams, APooledBufferIsReusedAtOnceOnItsOwnStream) {
  const size_t n = 4096;
  Stream s = ctx().create_stream();
  DeviceBuffer a = upload(iota(n, 0));
  const rt::BufferImpl* old = nullptr;
  {
    DeviceBuffer out = ctx().alloc_pooled(DType::F32, n, s);
    old = out.impl();
    spin(a, out, long_iters(), s);
  }
  DeviceBuffer again = ctx().alloc_pooled(DType::F32, n, s);
  EXPECT_EQ(again.impl(), old);
  const std::vector<float> mine = iota(n, 100);
  ctx().upload(again, mine.data(), n * 4, s);
  DeviceBuffer out = ctx().alloc_pooled(DType::F32, n, s);
  spin(again, out, 1, s);
  const std::vector<float> got = download(out);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], mine[i] + 1.0f) << "element " << i;
  EXPECT_EQ(download(again), mine);
  ctx().trim_pool();
}

// ---------------------------------------------------------------------------------------------
// Views and external memory

// A view binds at its offset: a launch reads and writes only its range of the allocation, and an
// upload or download of a view copies that range.
TEST_P(Streams, AViewBindsAtItsOffset) {
  const size_t n = 4096, first = 1024, count = 2048;
  DeviceBuffer whole_in = upload(iota(n, 0));
  DeviceBuffer whole_out = upload(std::vector<float>(n, -7.0f));
  DeviceBuffer in = ctx().view(whole_in, first, count);
  DeviceBuffer out = ctx().view(whole_out, first + 256, count);
  EXPECT_EQ(in.offset_bytes(), first * 4);
  Stream s = ctx().create_stream();
  spin(in, out, 2, s);
  const std::vector<float> got = download(whole_out);
  const std::vector<float> src = iota(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const bool inside = i >= first + 256 && i < first + 256 + count;
    ASSERT_EQ(got[i], inside ? src[i - 256] + 2.0f : -7.0f) << "element " << i;
  }
  EXPECT_EQ(download(out)[0], src[first] + 2.0f);
  const std::vector<float> ones(count, 1.0f);
  ctx().upload(in, ones.data(), count * 4);
  EXPECT_EQ(download(whole_in)[first - 1], src[first - 1]);
  EXPECT_EQ(download(whole_in)[first], 1.0f);
}

// Two views of one allocation alias only where their ranges overlap; a view's alignment is that
// of its first byte, checked against the kernel's aligned() fact; a range outside the buffer is
// refused.
TEST_P(Streams, ViewsAliasByRangeAndCarryTheirAlignment) {
  const size_t n = 2048;
  DeviceBuffer whole = upload(iota(n, 0));
  Stream s = ctx().create_stream();
  spin(ctx().view(whole, 0, 1024), ctx().view(whole, 1024, 1024), 1, s);  // disjoint: fine
  EXPECT_EQ(download(whole)[1024 + 3], iota(n, 0)[3] + 1.0f);
  try {
    spin(ctx().view(whole, 0, 1024), ctx().view(whole, 512, 1024), 1, s);
    FAIL() << "overlapping views of one buffer were accepted as an input and an output";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("are bound to the same DeviceBuffer, but the kernel does not declare"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ctx().view(whole, 2000, 49), Error);
  const size_t shift = std::max<size_t>(1, ctx().info().min_view_offset_align / 4);  // the smallest view step
  DeviceBuffer out = ctx().alloc(DType::F32, 64);
  if (shift * 4 % 16 != 0) {
    try {
      ctx().dispatch_with_grid(aligned_kernel(), DType::F32, {{"a", ctx().view(whole, shift, 64)}, {"out", out}},
                               {{"n", 64u}}, {1, 1, 1}, kTg);
      FAIL() << "a view breaking aligned(16) was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("buffer 'a' is bound at an address aligned to " + std::to_string(shift * 4) +
                                           " bytes, which breaks the fact aligned(16)"),
                std::string::npos)
          << e.what();
    }
  } else {  // the device's views are 16-byte aligned anyway (and smaller steps are refused)
    EXPECT_THROW(ctx().view(whole, 1, 64), Error);
  }
  ctx().dispatch_with_grid(aligned_kernel(), DType::F32, {{"a", ctx().view(whole, 16, 64)}, {"out", out}}, {{"n", 64u}},
                           {1, 1, 1}, kTg);
  EXPECT_EQ(download(out)[0], download(whole)[16] + 1.0f);
}

namespace {
// A host array as a DLPack tensor whose deleter counts its calls.
struct HostTensor {
  std::vector<float> data;
  int64_t shape[2] = {0, 0};
  int64_t strides[2] = {0, 1};
  DLManagedTensor managed{};
  int deleted = 0;
  HostTensor(size_t rows, size_t cols, float start) : data(iota(rows * cols, start)) {
    shape[0] = int64_t(rows);
    shape[1] = int64_t(cols);
    strides[0] = int64_t(cols);
    managed.dl_tensor = {data.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, strides, 0};
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<HostTensor*>(self->manager_ctx)->deleted; };
  }
};
}  // namespace

// DLPack import and export without copies where the device can address the memory (CUDA device
// memory, the interpreter's host memory); Vulkan refuses both with the reason.
TEST_P(Streams, DlpackImportAndExportShareMemory) {
  HostTensor host(4, 256, 3);
  DeviceBuffer out = ctx().alloc(DType::F32, 1024);
  if (GetParam() == Backend::Vulkan) {
    try {
      ctx().from_dlpack(&host.managed);
      FAIL() << "Vulkan imported host memory";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("from_dlpack: a Vulkan Context cannot address another library's memory"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(host.deleted, 0);  // a refused tensor stays the caller's
    EXPECT_THROW(ctx().to_dlpack(out), Error);
    return;
  }
  // Export: the tensor points at the buffer's memory; importing it back shares that memory.
  DLManagedTensor* exported = ctx().to_dlpack(out);
  ASSERT_NE(exported, nullptr);
  EXPECT_EQ(exported->dl_tensor.ndim, 1);
  EXPECT_EQ(exported->dl_tensor.shape[0], 1024);
  EXPECT_EQ(exported->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(exported->dl_tensor.device.device_type, GetParam() == Backend::Cuda ? kDLCUDA : kDLCPU);
  DeviceBuffer again = ctx().from_dlpack(exported);  // takes the tensor; its deleter runs later
  EXPECT_EQ(again.count(), 1024u);
  Stream s = ctx().create_stream();
  if (GetParam() == Backend::Interp) {
    // Import host memory: the kernel reads the caller's array in place.
    DeviceBuffer in = ctx().from_dlpack(&host.managed);
    EXPECT_EQ(in.count(), 1024u);
    spin(in, again, 5, s);  // writes through the imported alias of `out`
    ctx().synchronize(s);   // `out` itself did not take part: its download would not wait
    const std::vector<float> got = download(out);
    for (size_t i = 0; i < 1024; ++i) ASSERT_EQ(got[i], host.data[i] + 5.0f) << "element " << i;
    // And writes land in the caller's array.
    spin(out, in, 1, s);
    ctx().synchronize();
    EXPECT_EQ(host.data[10], iota(1024, 3)[10] + 6.0f);
    EXPECT_EQ(host.deleted, 0);
    in = DeviceBuffer{};
    EXPECT_EQ(host.deleted, 1);  // the last copy went: the deleter ran once
  } else {
    DeviceBuffer in = upload(iota(1024, 3));
    spin(in, again, 5, s);
    ctx().synchronize(s);
    EXPECT_EQ(download(out)[10], iota(1024, 3)[10] + 5.0f);
  }
  // Refusals name the problem and leave the tensor to the caller.
  HostTensor strided(4, 256, 0);
  strided.strides[0] = 512;
  strided.managed.dl_tensor.device.device_type = GetParam() == Backend::Cuda ? kDLCUDA : kDLCPU;
  try {
    ctx().from_dlpack(&strided.managed);
    FAIL() << "a strided tensor was imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not compact row-major (dimension 0 has stride 512, expected 256)"),
              std::string::npos)
        << e.what();
  }
  HostTensor complex(1, 8, 0);
  complex.managed.dl_tensor.dtype = {kDLComplex, 64, 1};
  complex.managed.dl_tensor.device.device_type = GetParam() == Backend::Cuda ? kDLCUDA : kDLCPU;
  EXPECT_THROW(ctx().from_dlpack(&complex.managed), Error);
  HostTensor elsewhere(1, 8, 0);
  elsewhere.managed.dl_tensor.device = {kDLCUDAHost, 0};
  EXPECT_THROW(ctx().from_dlpack(&elsewhere.managed), Error);
  EXPECT_EQ(strided.deleted + complex.deleted + elsewhere.deleted, 0);
}

// ---------------------------------------------------------------------------------------------
// Sequences

// A sequence uses one kernel in several steps with different bindings, replays in order on a
// stream, and takes a rebinding between replays (CUDA: a rebuilt graph).
TEST_P(Streams, ASequenceReplaysItsStepsAndTakesRebindings) {
  const size_t n = 2048;
  DeviceBuffer x = upload(iota(n, 0));
  DeviceBuffer y = ctx().alloc(DType::F32, n), z = ctx().alloc(DType::F32, n);
  auto step = [&](const DeviceBuffer& a, const DeviceBuffer& out, uint32_t iters) {
    return ctx().prepare_launch(spin_kernel(), DType::F32, {{"a", a}, {"out", out}}, {{"n", uint32_t(n)}, {"iters", iters}},
                                grid_for(n), kTg);
  };
  LaunchSequence seq = ctx().create_sequence();
  seq.add(step(x, y, 1));  // y = x + 1
  seq.add(step(y, z, 2));  // z = y + 2
  seq.add(step(z, y, 3));  // y = z + 3: the same kernel a third time
  EXPECT_EQ(seq.size(), 3u);
  Stream s = ctx().create_stream();
  seq.replay(s);
  std::vector<float> got = download(y);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], iota(n, 0)[i] + 6.0f) << "element " << i;
  // Replays chain through y: feed y back in as the first step's input.
  DeviceBuffer w = ctx().alloc(DType::F32, n);
  seq.step(0).set_buffer(seq.step(0).param("out"), w);  // first: a = y while out = y would alias
  seq.step(0).set_buffer(seq.step(0).param("a"), y);
  seq.step(1).set_buffer(seq.step(1).param("a"), w);
  seq.step(2).set_scalar(seq.step(2).param("iters"), 10u);
  for (int r = 0; r < 3; ++r) seq.replay(s);  // each adds 1 + 2 + 10
  got = download(y);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], iota(n, 0)[i] + 6.0f + 3 * 13.0f) << "element " << i;
  EXPECT_THROW(seq.step(3), Error);
  std::unique_ptr<Context> other = Context::create(Backend::Interp);
  DeviceBuffer oa = other->alloc(DType::F32, n), oo = other->alloc(DType::F32, n);
  EXPECT_THROW(seq.add(other->prepare_launch(spin_kernel(), DType::F32, {{"a", oa}, {"out", oo}},
                                             {{"n", uint32_t(n)}, {"iters", 1u}}, grid_for(n), kTg)),
               Error);
}
