// Memory and launch arguments of the runtime (issue 11 item 4): bounds of buffer views on the
// interpreter, 64-bit scalar arguments and opt-in threadgroup memory through dispatch and
// prepared launch. Each backend runs where it opens: the interpreter and Vulkan (lavapipe) here,
// CUDA on a machine with a driver (skipped without one, never passed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "iron/collective.hpp"
#include "iron/dlpack.hpp"

using namespace iron;

namespace {

// out[i] = a[i + 1]: reads one element past its declared extent at i = n - 1. On the interpreter
// that element is outside the binding, however long the allocation behind it.
void shift_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i + 1u]; });
}

const ir::Kernel& shift_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"memory_test_shift", &shift_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

// out[i] = base + i * step (u64) and sout[i] = delta - i (i64): whole 64-bit scalars, values
// beyond 2^32 included.
void wide_scalars_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr base = constexpr_("base", u64);
  Expr step = constexpr_("step", u64);
  Expr delta = constexpr_("delta", i64);
  Buffer out = output("out", u64, {n});
  Buffer sout = output("sout", i64, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    out[i] = base + cast<u64>(i) * step;
    sout[i] = delta - cast<i64>(i);
  });
}

const ir::Kernel& wide_scalars_kernel() {
  static const ir::Kernel k =
      trace_kernel(KernelDecl{"memory_test_wide_scalars", &wide_scalars_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

// One threadgroup stages `m` u32 words in threadgroup memory sized at dispatch: word j = j * 3 +
// seed, written by thread j % tg; after a barrier each thread sums the words of its residue class
// from the far end (so every word is read by another thread than the one that wrote it).
void staged_body() {
  using namespace iron::dsl;
  Expr m = constexpr_("m", u32);
  Expr seed = constexpr_("seed", u32);
  Buffer out = output("out", u32, {64});
  TgBuffer words = threadgroup_alloc_dynamic("words", u32, m);
  Expr l = local_id(0);
  for_(l, m, 64u, [&](Expr j) { words[j] = j * 3u + seed; });
  barrier();
  Var<u32> sum = 0u;
  for_(l, m, 64u, [&](Expr j) { sum += words[m - 1u - j]; });
  out[l] = sum;
}

const ir::Kernel& staged_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"memory_test_staged", &staged_body, Mode::Reduction, {}, __FILE__, __LINE__});
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

}  // namespace

// A kernel bound to a view reaches only the view's elements on the interpreter: the element after
// the view is a bounds fault, by dispatch and by a prepared launch rebound to a view (before,
// the interpreter checked only against the allocation's end).
TEST(MemoryViews, TheInterpreterFaultsAnAccessPastAView) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const uint32_t n = 64;
  DeviceBuffer whole = ctx->alloc(DType::F32, 4 * n);
  std::vector<float> src(4 * n);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
  ctx->upload(whole, src.data(), src.size() * 4);
  DeviceBuffer out = ctx->alloc(DType::F32, n);
  const Dim3 tg{64, 1, 1};
  // n + 1 elements: every read is inside the binding.
  ctx->dispatch_with_grid(shift_kernel(), DType::F32, {{"a", ctx->view(whole, n, n + 1)}, {"out", out}}, {{"n", n}},
                          {1, 1, 1}, tg);
  std::vector<float> got(n);
  ctx->download(out, got.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], float(n + i + 1)) << "element " << i;
  // n elements: the last thread reads element n of the view, which the allocation has.
  const std::string e = message([&] {
    ctx->dispatch_with_grid(shift_kernel(), DType::F32, {{"a", ctx->view(whole, n, n)}, {"out", out}}, {{"n", n}},
                            {1, 1, 1}, tg);
  });
  EXPECT_NE(e.find("of buffer 'a' at index 64 is out of range: the buffer has 64 elements"), std::string::npos) << e;
  // The same through a prepared launch: validated with a long view, rebound to an exact one.
  PreparedLaunch p = ctx->prepare_launch(shift_kernel(), DType::F32, {{"a", ctx->view(whole, 0, n + 1)}, {"out", out}},
                                         {{"n", n}}, {1, 1, 1}, tg);
  p.launch();
  p.set_buffer(p.param("a"), ctx->view(whole, 2 * n, n));
  const std::string e2 = message([&] { p.launch(); });
  EXPECT_NE(e2.find("of buffer 'a' at index 64 is out of range: the buffer has 64 elements"), std::string::npos) << e2;
  // And on a created stream, where the fault is reported by the next wait.
  Stream s = ctx->create_stream();
  p.launch(s);
  const std::string e3 = message([&] { ctx->synchronize(s); });
  EXPECT_NE(e3.find("is out of range: the buffer has 64 elements"), std::string::npos) << e3;
}

class MemoryArgs : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    try {
      ctx_ = Context::create(GetParam());
    } catch (const Error& e) {
      if (GetParam() == Backend::Cuda) GTEST_SKIP() << "cuda unavailable: " << e.what();
      FAIL() << "cannot open " << backend_name(GetParam()) << ": " << e.what();
    }
  }
  template <class T>
  std::vector<T> download(const DeviceBuffer& b) {
    std::vector<T> v(b.count());
    ctx_->download(b, v.data(), v.size() * sizeof(T));
    return v;
  }
  std::unique_ptr<Context> ctx_;
};

// u64 and i64 scalars reach the kernel whole (no truncation to 32 bits), at dispatch and when a
// prepared launch is rebound with new values; a value outside the parameter's range is refused.
TEST_P(MemoryArgs, SixtyFourBitScalarsReachTheKernelWhole) {
  Context& ctx = *ctx_;
  const uint32_t n = 100;
  DeviceBuffer out = ctx.alloc(DType::U64, n), sout = ctx.alloc(DType::I64, n);
  const uint64_t base = 0xfedcba9876543210ull, step = 0x100000001ull;
  const int64_t delta = -0x123456789abcll;
  ctx.dispatch_with_grid(wide_scalars_kernel(), DType::F32, {{"out", out}, {"sout", sout}},
                         {{"n", n}, {"base", base}, {"step", step}, {"delta", (long long)delta}}, {2, 1, 1}, {64, 1, 1});
  std::vector<uint64_t> u = download<uint64_t>(out);
  std::vector<int64_t> s = download<int64_t>(sout);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(u[i], base + uint64_t(i) * step) << "element " << i;
    ASSERT_EQ(s[i], delta - int64_t(i)) << "element " << i;
  }
  PreparedLaunch p = ctx.prepare_launch(wide_scalars_kernel(), DType::F32, {{"out", out}, {"sout", sout}},
                                        {{"n", n}, {"base", 1ull}, {"step", 1ull}, {"delta", 0ll}}, {2, 1, 1}, {64, 1, 1});
  p.set_scalar(p.param("base"), 0x8000000000000000ull);
  p.set_scalar(p.param("step"), 0xffffffffull + 2);
  p.set_scalar(p.param("delta"), (long long)INT64_MIN + 1000);
  p.launch();
  u = download<uint64_t>(out);
  s = download<int64_t>(sout);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(u[i], 0x8000000000000000ull + uint64_t(i) * (0xffffffffull + 2)) << "element " << i;
    ASSERT_EQ(s[i], INT64_MIN + 1000 - int64_t(i)) << "element " << i;
  }
  const std::string e = message([&] { p.set_scalar(p.param("base"), -1); });
  EXPECT_NE(e.find("constexpr 'base' = -1"), std::string::npos) << e;
  const std::string e2 = message([&] { p.set_scalar(p.param("delta"), 0x8000000000000000ull); });
  EXPECT_NE(e2.find("constexpr 'delta' = 9223372036854775808"), std::string::npos) << e2;
}

// Threadgroup memory sized at dispatch up to the device's limit: the opt-in limit where the
// device has one (CUDA: the launch sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; the
// interpreter models the H200's 227 KiB), the plain limit elsewhere (lavapipe: 32 KiB). The
// sizing scalar is fixed in a prepared launch; one word more than the limit is refused.
TEST_P(MemoryArgs, DynamicThreadgroupMemoryUpToTheOptInLimit) {
  Context& ctx = *ctx_;
  const DeviceInfo& d = ctx.info();
  const uint64_t limit = std::max(d.shared_memory_bytes, d.shared_memory_optin_bytes);
  const uint32_t m = uint32_t(limit / 4);
  DeviceBuffer out = ctx.alloc(DType::U32, 64);
  auto want = [&](uint32_t seed) {
    std::vector<uint32_t> w(64, 0);
    for (uint32_t j = 0; j < m; ++j) w[j % 64] += (m - 1 - j) * 3u + seed;
    return w;
  };
  PreparedLaunch p = ctx.prepare_launch(staged_kernel(), DType::F32, {{"out", out}}, {{"m", m}, {"seed", 5u}}, {1, 1, 1},
                                        {64, 1, 1});
  p.launch();
  EXPECT_EQ(download<uint32_t>(out), want(5)) << limit << " bytes of threadgroup memory on " << d.name;
  p.set_scalar(p.param("seed"), 11u);
  p.launch();
  EXPECT_EQ(download<uint32_t>(out), want(11));
  const std::string e = message([&] { p.set_scalar(p.param("m"), m - 1); });
  EXPECT_NE(e.find("it sizes threadgroup array 'words'"), std::string::npos) << e;
  const std::string e2 = message([&] {
    ctx.dispatch_with_grid(staged_kernel(), DType::F32, {{"out", out}}, {{"m", m + 1}, {"seed", 5u}}, {1, 1, 1}, {64, 1, 1});
  });
  EXPECT_NE(e2.find("the kernel needs " + std::to_string(uint64_t(m + 1) * 4) + " bytes of threadgroup memory; the device allows " +
                    std::to_string(limit)),
            std::string::npos)
      << e2;
}

INSTANTIATE_TEST_SUITE_P(Backends, MemoryArgs, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(backend_name(i.param)); });

// IRON_CUDA_DEVICE points the Context every tool opens at another GPU; a value that is not an
// index is refused naming it (before any driver is asked), an index the driver lacks names the
// count. Other backends ignore it.
TEST(MemoryDevices, IronCudaDeviceSelectsTheGpu) {
  struct Restore {
    std::string old;
    bool had = false;
    Restore() {
      if (const char* v = std::getenv("IRON_CUDA_DEVICE")) old = v, had = true;
    }
    ~Restore() {
      if (had) setenv("IRON_CUDA_DEVICE", old.c_str(), 1);
      else unsetenv("IRON_CUDA_DEVICE");
    }
  } restore;
  setenv("IRON_CUDA_DEVICE", "one", 1);
  const std::string e = message([] { Context::create(Backend::Cuda); });
  EXPECT_NE(e.find("IRON_CUDA_DEVICE='one' is not a CUDA device index"), std::string::npos) << e;
  setenv("IRON_CUDA_DEVICE", "1000", 1);
  const std::string e2 = message([] { Context::create(Backend::Cuda); });
  EXPECT_TRUE(e2.find("CUDA device index 1000 out of range") != std::string::npos ||
              e2.find("no CUDA") != std::string::npos)
      << e2;
  EXPECT_NO_THROW(Context::create(Backend::Interp));  // not CUDA: device 0 regardless
  std::string why;
  const size_t gpus = list_devices(Backend::Cuda, &why).size();
  if (gpus < 2) return;
  setenv("IRON_CUDA_DEVICE", "1", 1);
  std::unique_ptr<Context> second = Context::create(Backend::Cuda);
  DLManagedTensor* t = second->to_dlpack(second->alloc(DType::F32, 4));
  EXPECT_EQ(t->dl_tensor.device.device_id, 1);  // the Context knows its device
  t->deleter(t);
}

// ---------------------------------------------------------------------------------------------
// Two GPUs through NCCL (include/iron/collective.hpp).

namespace {
bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
}  // namespace

// libnccl is found and versioned, or the reason it cannot be used starts "NCCL not available: ".
TEST(Collectives, TheNcclLibraryIsFoundOrTheReasonIsGiven) {
  const NcclLibrary& lib = nccl_library();
  if (lib.available) {
    EXPECT_FALSE(lib.path.empty());
    EXPECT_GE(lib.version.size(), 5u) << lib.version;  // "2.10.3" or later
    EXPECT_TRUE(lib.why.empty()) << lib.why;
  } else {
    EXPECT_TRUE(starts_with(lib.why, "NCCL not available: ")) << lib.why;
  }
}

// Fewer than two Contexts, a Context that is not CUDA: refused with the reason, before NCCL runs.
TEST(Collectives, CreateRefusesWhatNcclCannotJoin) {
  const NcclLibrary& lib = nccl_library();
  const std::string none = message([] { Collective::create({}); });
  std::unique_ptr<Context> a = Context::create(Backend::Interp), b = Context::create(Backend::Interp);
  const std::string interp = message([&] { Collective::create({a.get(), b.get()}); });
  if (!lib.available) {
    EXPECT_TRUE(starts_with(none, "NCCL not available: ")) << none;
    EXPECT_TRUE(starts_with(interp, "NCCL not available: ")) << interp;
    return;
  }
  EXPECT_TRUE(starts_with(none, "needs two GPUs: a collective joins at least two CUDA Contexts (given 0)")) << none;
  EXPECT_NE(interp.find("Context 0 is a interp Context; NCCL joins CUDA devices only"), std::string::npos) << interp;
}

// On a machine with two GPUs and NCCL: an Iron kernel's output on each GPU, all-reduced (sum, and
// max in place) and all-gathered on Iron's streams, exact; bad operands refused with the rank.
TEST(Collectives, AKernelsOutputAllReducedAndAllGatheredOnTwoGpus) {
  const NcclLibrary& lib = nccl_library();
  if (!lib.available) GTEST_SKIP() << lib.why;
  std::string why;
  const std::vector<DeviceInfo> gpus = list_devices(Backend::Cuda, &why);
  if (gpus.size() < 2) GTEST_SKIP() << "needs two GPUs: " << gpus.size() << " CUDA device(s) " << why;
  std::unique_ptr<Context> c0 = Context::create(Backend::Cuda, 0), c1 = Context::create(Backend::Cuda, 1);
  std::vector<Context*> ctxs{c0.get(), c1.get()};
  std::unique_ptr<Collective> coll = Collective::create(ctxs);
  ASSERT_EQ(coll->size(), 2);
  const uint32_t n = 5000;  // not a multiple of any chunk size
  std::vector<Stream> streams;
  std::vector<DeviceBuffer> out, sum, gathered;
  std::vector<float> a(n);
  for (uint32_t i = 0; i < n; ++i) a[i] = float(i % 977);
  for (int r = 0; r < 2; ++r) {
    Context& c = *ctxs[size_t(r)];
    streams.push_back(c.create_stream());
    DeviceBuffer in = c.alloc(DType::F32, n);
    c.upload(in, a.data(), n * 4, streams.back());
    out.push_back(c.alloc(DType::F32, n));
    sum.push_back(c.alloc(DType::F32, n));
    gathered.push_back(c.alloc(DType::F32, 2 * n));
    // out[i] = a[i + 1] for i < n - 1 (the kernel writes a view of n - 1 elements), then the last
    // element is the rank's own: 0 on rank 0, 1000 on rank 1.
    c.dispatch_with_grid(shift_kernel(), DType::F32, {{"a", c.view(in, 0, n)}, {"out", c.view(out.back(), 0, n - 1)}},
                         {{"n", n - 1}}, {(n + 63) / 64, 1, 1}, {64, 1, 1}, streams.back());
    float last = float(r * 1000);
    c.upload(c.view(out.back(), n - 1, 1), &last, 4, streams.back());
  }
  coll->all_reduce(out, sum, ReduceOp::Sum, streams);
  coll->all_gather(out, gathered, streams);
  coll->all_reduce(out, out, ReduceOp::Max, streams);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> s(n), g(2 * n), m(n);
    ctxs[size_t(r)]->download(sum[size_t(r)], s.data(), s.size() * 4);
    ctxs[size_t(r)]->download(gathered[size_t(r)], g.data(), g.size() * 4);
    ctxs[size_t(r)]->download(out[size_t(r)], m.data(), m.size() * 4);
    for (uint32_t i = 0; i < n; ++i) {
      const float of0 = i + 1 < n ? a[i + 1] : 0.0f, of1 = i + 1 < n ? a[i + 1] : 1000.0f;
      ASSERT_EQ(s[i], of0 + of1) << "rank " << r << " element " << i;
      ASSERT_EQ(g[i], of0) << "rank " << r << " element " << i;
      ASSERT_EQ(g[n + i], of1) << "rank " << r << " element " << i;
      ASSERT_EQ(m[i], std::max(of0, of1)) << "rank " << r << " element " << i;
    }
  }
  // Bad operands: named with the rank, nothing enqueued.
  const std::string e = message([&] { coll->all_reduce({out[0], out[1]}, {sum[0]}, ReduceOp::Sum, streams); });
  EXPECT_NE(e.find("invalid all_reduce: one send and one recv buffer per rank"), std::string::npos) << e;
  const std::string e2 = message([&] { coll->all_reduce({out[0], out[0]}, sum, ReduceOp::Sum, streams); });
  EXPECT_NE(e2.find("rank 1: a buffer that is not of that rank's Context"), std::string::npos) << e2;
  const std::string e3 = message([&] { coll->all_gather(out, sum, streams); });
  EXPECT_NE(e3.find("rank 0: recv holds 5000 elements; the result has 10000"), std::string::npos) << e3;
  DeviceBuffer i0 = c0->alloc(DType::I32, n), i1 = c1->alloc(DType::I32, n);
  const std::string e4 = message([&] { coll->all_reduce({i0, i1}, {i0, i1}, ReduceOp::Avg, streams); });
  EXPECT_NE(e4.find("avg of i32 (avg is for float dtypes)"), std::string::npos) << e4;
  const std::string e5 = message([&] { Collective::create({c0.get(), c0.get()}); });
  EXPECT_NE(e5.find("are both CUDA device 0 (one Context per device)"), std::string::npos) << e5;
}
