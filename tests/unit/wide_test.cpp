// 64-bit indexing (docs/dsl.md, "64-bit indexing"; docs/semantics.md, "64-bit indexing"):
// i64 and u64 scalar parameters on every backend (CUDA kernel parameters, Vulkan push constants
// at 8-byte offsets, the interpreter), their dispatch-time conversion, the thread-count rule,
// per-backend grid limits, the Vulkan storage-buffer range, and a u8 buffer of 2^32 + 64
// elements written and read at indices >= 2^32 (skipped, with the reason, on a device without
// the memory or the range: run it on the H200).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "harness/runner.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"
#include "device_run.hpp"

using namespace iron;

namespace {

// Scalars of every width, declared so that the 8-byte ones need padding before them (u32 at 0,
// u64 at 8, f32 at 16, i64 at 24, i32 at 32): a push-constant block packed without the
// alignment would shift every value after the first.
void params_body() {
  using namespace iron::dsl;
  Expr a = constexpr_("a", u32);
  Expr b = constexpr_("b", u64);
  Expr c = constexpr_("c", f32);
  Expr d = constexpr_("d", i64);
  Expr e = constexpr_("e", i32);
  Buffer wide = output("wide", u64, {4});
  Buffer f = output("f", f32, {1});
  Buffer s = output("s", i32, {1});
  if_(thread_id(0) == 0u, [&] {
    wide[0u] = b;
    wide[1u] = cast<u64>(d);
    wide[2u] = cast<u64>(a);
    wide[3u] = b + cast<u64>(d);  // 64-bit arithmetic on the parameters
    f[0u] = c;
    s[0u] = e;
  });
}

// The same data movement with a 32-bit and with a 64-bit thread index (and one with both), and
// a Reduction kernel (no thread_id at all), for the thread-count rule.
void index32_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u8, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = cast<u8>(i); });
}
void index64_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u64);
  Buffer out = output("out", u8, {n});
  Expr i = thread_id64(0);
  if_(i < n, [&] { out[i] = cast<u8>(i); });
}
void mixed_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u64);
  Buffer out = output("out", u8, {n});
  Expr i = thread_id64(0);
  if_(i < n, [&] { out[i] = cast<u8>(thread_id(0)); });
}
void rows_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u8, {n});
  Expr i = program_id(0);
  if_(i < n, [&] { out[i] = cast<u8>(local_id(0)); });
}

// Every thread past `skip` writes its own u64 index: over a dispatch of more than 2^32 threads,
// the elements around 2^32 show whether thread_id64 wrapped.
void tail_body() {
  using namespace iron::dsl;
  Expr skip = constexpr_("skip", u64);
  Expr n = constexpr_("n", u64);
  Buffer out = output("out", u64, {n});
  Expr i = thread_id64(0);
  if_(i >= skip, [&] { if_(i - skip < n, [&] { out[i - skip] = i; }); });
}

// 64-bit loops: a grid-stride loop over u64 indices, and an i64 loop from a negative start
// whose induction variable crosses zero, each writing what it visits.
void loops_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u64);
  Expr stride = constexpr_("stride", u64);  // the dispatch's thread count
  Expr lo = constexpr_("lo", i64);
  Buffer out = output("out", u64, {n});
  Buffer signed_out = output("signed_out", i64, {16});
  for_(thread_id64(0), n, stride, [&](Expr j) { out[j] = j * j + 1u; });
  if_(thread_id64(0) == 0u, [&] {
    for_(lo, lo + 16, 1, [&](Expr j) { signed_out[j - lo] = j * 3; });
  });
}

ir::Kernel traced(const char* name, KernelBody body, Mode mode = Mode::Elementwise) {
  return trace_kernel(KernelDecl{name, body, mode, {}, __FILE__, __LINE__});
}

std::string dispatch_error(Context& ctx, const ir::Kernel& k, const Bindings& b, const Constexprs& c, Dim3 grid, Dim3 tg) {
  try {
    ctx.validate_dispatch(k, DType::F32, b, c, grid, tg);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// One Context per backend for the whole file; CUDA is skipped with the reason where there is no
// NVIDIA driver, the interpreter and Vulkan (lavapipe in CI) must exist.
class Wide : public test::DeviceTest {};

template <class T>
std::vector<T> download(Context& ctx, const DeviceBuffer& b, size_t count) {
  std::vector<T> v(count);
  ctx.download(b, v.data(), count * sizeof(T));
  return v;
}

}  // namespace

// Values that need all 64 bits (beyond 2^53, so no double could carry them) reach the kernel
// exactly, next to 32-bit ones at the offsets after them.
TEST_P(Wide, ScalarParametersOfEveryWidth) {
  const ir::Kernel k = traced("wide_params", &params_body);
  const uint64_t b = 0xfedcba9876543211ull;
  const int64_t d = -0x123456789abcdefll;
  DeviceBuffer wide = ctx().alloc(DType::U64, 4), f = ctx().alloc(DType::F32, 1), s = ctx().alloc(DType::I32, 1);
  ctx().dispatch_with_grid(k, DType::F32, {{"wide", wide}, {"f", f}, {"s", s}},
                           {{"a", 0xdeadbeefu}, {"b", (unsigned long long)b}, {"c", 1.5}, {"d", (long long)d}, {"e", -7}},
                           {1, 1, 1}, {1, 1, 1});
  ctx().synchronize();
  const std::vector<uint64_t> w = download<uint64_t>(ctx(), wide, 4);
  EXPECT_EQ(w[0], b);
  EXPECT_EQ(w[1], uint64_t(d));
  EXPECT_EQ(w[2], 0xdeadbeefull);
  EXPECT_EQ(w[3], b + uint64_t(d));
  EXPECT_EQ(download<float>(ctx(), f, 1)[0], 1.5f);
  EXPECT_EQ(download<int32_t>(ctx(), s, 1)[0], -7);
}

// A kernel with more than 2^32 - 1 threads: accepted only when its thread index is 64-bit
// (thread_id64 and never thread_id); the message names the kernel and the rule. Nothing is
// launched (validation only).
TEST_P(Wide, ThreadCountRule) {
  // 65535 x 257 threadgroups of 256 (2^32 + 16,711,424 threads) fit every backend's grid limits.
  const Dim3 tg{256, 1, 1}, grid{65535, 257, 1};
  const uint64_t threads = grid.product() * tg.product();
  ASSERT_GT(threads, 0xffffffffull);
  DeviceBuffer out = ctx().alloc(DType::U8, 1);
  const ir::Kernel k32 = traced("wide_index32", &index32_body, Mode::Grid3D);
  const ir::Kernel k64 = traced("wide_index64", &index64_body, Mode::Grid3D);
  const ir::Kernel mixed = traced("wide_mixed", &mixed_body, Mode::Grid3D);
  const ir::Kernel rows = traced("wide_rows", &rows_body, Mode::Reduction);
  EXPECT_EQ(dispatch_error(ctx(), k64, {{"out", out}}, {{"n", 1u}}, grid, tg), "");
  const std::string e32 = dispatch_error(ctx(), k32, {{"out", out}}, {{"n", 1u}}, grid, tg);
  EXPECT_NE(e32.find("= " + std::to_string(threads) + " threads exceeds 2^32-1, and kernel wide_index32 reads the 32-bit "
                     "thread_id"), std::string::npos) << e32;
  EXPECT_NE(e32.find("needs a kernel that reads thread_id64 and never thread_id"), std::string::npos) << e32;
  const std::string em = dispatch_error(ctx(), mixed, {{"out", out}}, {{"n", 1u}}, grid, tg);
  EXPECT_NE(em.find("kernel wide_mixed reads the 32-bit thread_id"), std::string::npos) << em;
  const std::string er = dispatch_error(ctx(), rows, {{"out", out}}, {{"n", 1u}}, grid, tg);
  EXPECT_NE(er.find("kernel wide_rows reads no 64-bit thread index"), std::string::npos) << er;
  // Just below the rule, the 32-bit kernel is fine.
  EXPECT_EQ(dispatch_error(ctx(), k32, {{"out", out}}, {{"n", 1u}}, {65535, 256, 1}, tg), "");
}

// The grid is checked against the backend's own per-axis limits (CUDA: grid.x < 2^31, y and z
// < 2^16; Vulkan: maxComputeWorkGroupCount), whatever the index width.
TEST_P(Wide, GridLimits) {
  const Dim3 max = ctx().info().max_grid;
  if (GetParam() == Backend::Cuda) {
    EXPECT_EQ(max.x, 2147483647u);
  }
  DeviceBuffer out = ctx().alloc(DType::U8, 1);
  const ir::Kernel k64 = traced("wide_index64", &index64_body);
  EXPECT_EQ(dispatch_error(ctx(), k64, {{"out", out}}, {{"n", 1u}}, {max.x, 1, 1}, {1, 1, 1}), "");
  if (max.x == UINT32_MAX) GTEST_SKIP() << "no grid.x beyond the limit " << max.x << " exists";
  const std::string e = dispatch_error(ctx(), k64, {{"out", out}}, {{"n", 1u}}, {max.x + 1, 1, 1}, {1, 1, 1});
  EXPECT_NE(e.find("exceeds the device's per-axis limit {" + std::to_string(max.x) + ", "), std::string::npos) << e;
}

// A u8 buffer of 2^32 + 64 elements: 64 values scattered to indices 2^32 .. 2^32 + 63 through
// u64 and i64 indices, gathered back, and the first 64 elements (where a 32-bit index would
// have wrapped to) still zero. Needs 4 GiB in one buffer: skipped with the reason on a device
// without the memory (the interpreter has 1 GiB unless IRON_INTERP_MEMORY_BYTES gives it more)
// or the range (Vulkan: maxStorageBufferRange).
TEST_P(Wide, BufferBeyondTwoTo32Elements) {
  const uint64_t len = (uint64_t(1) << 32) + 64, base = uint64_t(1) << 32;
  const DeviceInfo& info = ctx().info();
  if (info.max_buffer_bytes < len)
    GTEST_SKIP() << info.name << " binds at most " << info.max_buffer_bytes
                 << " bytes to one buffer parameter (maxStorageBufferRange); the test needs " << len;
  if (info.memory_bytes < len + 4096)
    GTEST_SKIP() << info.name << " reports " << info.memory_bytes << " bytes of memory; the test needs a buffer of "
                 << len << " bytes (the interpreter: IRON_INTERP_MEMORY_BYTES=4294971392 or more)";
  DeviceBuffer big = ctx().alloc(DType::U8, len);
  std::vector<uint8_t> zeros(64, 0), x(64);
  for (size_t i = 0; i < 64; ++i) x[i] = uint8_t(3 * i + 1);
  ctx().upload(big, zeros.data(), zeros.size());  // the first 64 bytes only
  DeviceBuffer small = ctx().alloc(DType::U8, 64), hi = ctx().alloc(DType::U8, 64), lo = ctx().alloc(DType::U8, 64),
               rev = ctx().alloc(DType::U8, 64);
  ctx().upload(small, x.data(), 64);
  auto c = [&](int64_t start, int64_t step) {
    return Constexprs{{"n", 64u}, {"len", (unsigned long long)len}, {"start", (long long)start}, {"step", (long long)step}};
  };
  ctx().dispatch_with_grid("iron_scatter64", DType::U8, {{"x", small}, {"out", big}}, c(int64_t(base), 1), {1, 1, 1},
                           {64, 1, 1});
  ctx().dispatch_with_grid("iron_gather64", DType::U8, {{"x", big}, {"out", hi}}, c(int64_t(base), 1), {1, 1, 1}, {64, 1, 1});
  ctx().dispatch_with_grid("iron_gather64", DType::U8, {{"x", big}, {"out", lo}}, c(0, 1), {1, 1, 1}, {64, 1, 1});
  ctx().dispatch_with_grid("iron_gather64", DType::U8, {{"x", big}, {"out", rev}}, c(int64_t(len) - 1, -1), {1, 1, 1},
                           {64, 1, 1});
  ctx().synchronize();
  const std::vector<uint8_t> h = download<uint8_t>(ctx(), hi, 64), l = download<uint8_t>(ctx(), lo, 64),
                             r = download<uint8_t>(ctx(), rev, 64);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(h[i], x[i]) << "element 2^32 + " << i;
    EXPECT_EQ(l[i], 0) << "element " << i << " (a 32-bit index would have wrapped here)";
    EXPECT_EQ(r[i], x[63 - i]) << "element 2^32 + " << 63 - i << ", read backwards";
  }
}

// 64-bit loops run the same on every backend: every element of the grid-stride loop once, and
// the i64 loop through negative values and zero.
TEST_P(Wide, SixtyFourBitLoops) {
  const ir::Kernel k = traced("wide_loops", &loops_body);
  const uint64_t n = 1000;
  DeviceBuffer out = ctx().alloc(DType::U64, n), sout = ctx().alloc(DType::I64, 16);
  ctx().dispatch_with_grid(k, DType::F32, {{"out", out}, {"signed_out", sout}},
                           {{"n", (unsigned long long)n}, {"stride", 128u}, {"lo", -7}}, {2, 1, 1}, {64, 1, 1});
  ctx().synchronize();
  const std::vector<uint64_t> o = download<uint64_t>(ctx(), out, n);
  for (uint64_t j = 0; j < n; ++j) ASSERT_EQ(o[j], j * j + 1) << j;
  const std::vector<int64_t> so = download<int64_t>(ctx(), sout, 16);
  for (int64_t j = 0; j < 16; ++j) EXPECT_EQ(so[size_t(j)], (j - 7) * 3) << j;
}

// A real dispatch of 2^32 + 512 threads (2^23 + 1 groups of 512): the 1024 threads from
// 2^32 - 512 on write their thread_id64, which must be exact on both sides of 2^32. A GPU runs
// it in milliseconds; the interpreter and a CPU Vulkan driver (lavapipe, whose grid.x stops at
// 65535 anyway) would take hours, so they are skipped with the reason.
TEST_P(Wide, MoreThanTwoTo32Threads) {
  const DeviceInfo& info = ctx().info();
  if (GetParam() == Backend::Interp || info.arch == "cpu")
    GTEST_SKIP() << info.name << " runs threads on the host CPU: 2^32 of them would take hours (run it on a GPU)";
  const Dim3 grid{(1u << 23) + 1, 1, 1}, tg{512, 1, 1};
  if (grid.x > info.max_grid.x) GTEST_SKIP() << info.name << " allows grid.x up to " << info.max_grid.x;
  const ir::Kernel k = traced("wide_tail", &tail_body);
  const uint64_t skip = (uint64_t(1) << 32) - 512, n = 1024;
  DeviceBuffer out = ctx().alloc(DType::U64, n);
  ctx().dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"skip", (unsigned long long)skip}, {"n", (unsigned long long)n}},
                           grid, tg);
  ctx().synchronize();
  const std::vector<uint64_t> got = download<uint64_t>(ctx(), out, n);
  for (uint64_t j = 0; j < n; ++j) ASSERT_EQ(got[j], skip + j) << "thread 2^32 - 512 + " << j;
}

INSTANTIATE_TEST_SUITE_P(Backends, Wide, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& p) { return std::string(backend_name(p.param)); });

// A buffer longer than the device's storage-buffer range is rejected before a launch, naming the
// limit (lavapipe's is 128 MiB, so a buffer one byte longer shows it here).
TEST(WideVulkan, BufferBeyondStorageRangeIsRejected) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(Backend::Vulkan);
  } catch (const Error& e) {
    FAIL() << "no Vulkan context: " << e.what();
  }
  const uint64_t range = ctx->info().max_buffer_bytes;
  if (range > (uint64_t(1) << 30))
    GTEST_SKIP() << ctx->info().name << " binds " << range << " bytes; a buffer beyond that is not allocated here "
                 << "(Wide.BufferBeyondTwoTo32Elements covers the large case)";
  const ir::Kernel k64 = traced("wide_index64", &index64_body);
  DeviceBuffer out = ctx->alloc(DType::U8, range + 1);
  const std::string e = dispatch_error(*ctx, k64, {{"out", out}}, {{"n", (unsigned long long)(range + 1)}}, {1, 1, 1}, {1, 1, 1});
  EXPECT_NE(e.find("buffer 'out' is " + std::to_string(range + 1) + " bytes; " + ctx->info().name + " binds at most " +
                   std::to_string(range) + " bytes to one buffer parameter (maxStorageBufferRange)"),
            std::string::npos)
      << e;
  // At the limit exactly it is accepted.
  DeviceBuffer fits = ctx->alloc(DType::U8, range);
  EXPECT_EQ(dispatch_error(*ctx, k64, {{"out", fits}}, {{"n", (unsigned long long)range}}, {1, 1, 1}, {1, 1, 1}), "");
}

// A test case whose buffer is larger than the device binds is skipped naming both figures,
// before anything is allocated (like a case needing more threadgroup memory than there is).
uint64_t g_case_bytes = 0;
TestSetup oversized_case(DType dt, DType) {
  return TestSetup(dt)
      .out("out", size_t(g_case_bytes))
      .constexprs({{"n", (unsigned long long)g_case_bytes}})
      .grid({1, 1, 1}, {1, 1, 1})
      .oracle([](const Tensors&, Tensors&) {});
}

TEST(WideVulkan, CaseBeyondStorageRangeIsSkipped) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Vulkan);
  const uint64_t range = ctx->info().max_buffer_bytes;
  g_case_bytes = range + 1;
  const ir::Kernel k = traced("wide_index64", &index64_body);
  const TestDecl decl{"wide_index64", "oversized", &oversized_case, {{DType::U8}}, __FILE__, __LINE__};
  const TestOutcome r = run_test_case(*ctx, decl, DType::U8, std::numeric_limits<double>::quiet_NaN(), &k);
  EXPECT_EQ(r.status, TestOutcome::Status::Skip) << r.message;
  EXPECT_EQ(r.message, "the case binds " + std::to_string(range + 1) + " bytes to buffer 'out' of wide_index64; device " +
                           ctx->info().name + " binds at most " + std::to_string(range) + " (maxStorageBufferRange)");
}

// Every rule of the dispatch-time conversion of a 64-bit scalar: exact integers in range, from
// an integer or a whole float; a value out of range or not whole is rejected naming both.
TEST(WideScalars, ConversionRules) {
  uint64_t bits = 0;
  std::string why;
  EXPECT_TRUE(scalar_bits(DType::U64, ScalarValue((unsigned long long)UINT64_MAX), bits, why));
  EXPECT_EQ(bits, UINT64_MAX);
  EXPECT_TRUE(scalar_bits(DType::I64, ScalarValue((long long)INT64_MIN), bits, why));
  EXPECT_EQ(bits, uint64_t(INT64_MIN));
  EXPECT_TRUE(scalar_bits(DType::U64, ScalarValue(0x1p63), bits, why));
  EXPECT_EQ(bits, uint64_t(1) << 63);
  EXPECT_TRUE(scalar_bits(DType::I64, ScalarValue(-0x1p63), bits, why));
  EXPECT_EQ(bits, uint64_t(INT64_MIN));
  EXPECT_TRUE(scalar_bits(DType::I32, ScalarValue(-1), bits, why));
  EXPECT_EQ(bits, 0xffffffffull);  // 32-bit values in the low 4 bytes, zero above
  EXPECT_TRUE(scalar_bits(DType::F32, ScalarValue((unsigned long long)UINT64_MAX), bits, why));
  EXPECT_EQ(bits, 0x5f800000ull);  // 2^64, the nearest f32
  const struct {
    DType t;
    ScalarValue v;
  } bad[] = {{DType::U64, ScalarValue(-1)},
             {DType::U64, ScalarValue(0x1p64)},
             {DType::I64, ScalarValue(0x1p63)},
             {DType::I64, ScalarValue((unsigned long long)(uint64_t(1) << 63))},
             {DType::I64, ScalarValue(1.5)},
             {DType::U32, ScalarValue((unsigned long long)(uint64_t(1) << 32))},
             {DType::I32, ScalarValue((long long)INT32_MIN - 1)}};
  for (const auto& b : bad) {
    why.clear();
    EXPECT_FALSE(scalar_bits(b.t, b.v, bits, why)) << dtype_name(b.t) << " " << b.v.text();
    EXPECT_NE(why.find(std::string("is not a") + (b.t == DType::I32 || b.t == DType::I64 ? "n " : " ") + dtype_name(b.t)),
              std::string::npos)
        << why;
  }
}

// The dispatch names the parameter and the value as written, for a value beyond 2^53 too.
TEST(WideScalars, DispatchNamesTheValue) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  const ir::Kernel k = traced("wide_params", &params_body);
  DeviceBuffer wide = ctx->alloc(DType::U64, 4), f = ctx->alloc(DType::F32, 1), s = ctx->alloc(DType::I32, 1);
  const std::string e = dispatch_error(*ctx, k, {{"wide", wide}, {"f", f}, {"s", s}},
                                       {{"a", 1u}, {"b", -3}, {"c", 0.5}, {"d", (unsigned long long)UINT64_MAX}, {"e", 1}},
                                       {1, 1, 1}, {1, 1, 1});
  EXPECT_NE(e.find("constexpr 'b' = -3 is not a u64 (a whole number in [0, 2^64-1])"), std::string::npos) << e;
  EXPECT_NE(e.find("constexpr 'd' = 18446744073709551615 is not an i64 (a whole number in [-2^63, 2^63-1])"),
            std::string::npos)
      << e;
}

// thread_id64 is gated like thread_id, and the message names it.
TEST(WideText, ThreadId64IsGatedByMode) {
  try {
    traced("wide_rows64", &index64_body, Mode::Reduction);
    FAIL() << "a Reduction kernel reading thread_id64 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'wide_rows64' (mode Reduction) uses thread_id64(0), which mode Reduction "
                                         "does not bind; declare a mode that does (Elementwise or Grid3D)"),
              std::string::npos)
        << e.what();
  }
}

// thread_id64 and 64-bit scalar parameters in the text IR: printed, parsed back, verified; a
// u16 thread index and a threadgroup array sized by a u64 parameter are verifier errors.
TEST(WideText, RoundTripAndVerifier) {
  const ir::Kernel k = traced("wide_index64", &index64_body);
  const std::string text = ir::print(k);
  EXPECT_NE(text.find("param n: scalar<u64>"), std::string::npos) << text;
  EXPECT_NE(text.find("thread_id<0> : u64"), std::string::npos) << text;
  ir::Kernel back = ir::parse(text);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(back, d)) << d.render(back);
  EXPECT_EQ(ir::print(back), text);

  ir::Kernel bad = ir::parse(
      "kernel k mode=Elementwise {\n"
      "  param n: scalar<u64>\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = thread_id<0> : u16\n"
      "}\n");
  ir::Diagnostics bd;
  EXPECT_FALSE(ir::verify(bad, bd));
  EXPECT_NE(bd.render(bad).find("'thread_id': result must be u32, is u16"), std::string::npos) << bd.render(bad);

  // A u64 loop with a constant step of 0 never ends: rejected like a 32-bit one.
  ir::Kernel zero = ir::parse(
      "kernel k mode=Elementwise {\n"
      "  param n: scalar<u64>\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = const<0> : u64\n"
      "  %1 = param<n> : u64\n"
      "  %2 = const<0> : u64\n"
      "  %3 = for %0, %1, %2 : u64 {\n"
      "  }\n"
      "}\n");
  ir::Diagnostics zd;
  EXPECT_FALSE(ir::verify(zero, zd));
  EXPECT_NE(zd.render(zero).find("loop step is 0; it must be positive"), std::string::npos) << zd.render(zero);

  ir::Kernel sized = ir::parse(
      "kernel k mode=Reduction {\n"
      "  param n: scalar<u64>\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = tg_alloc<t, 1, count_param=n> : f32\n"
      "}\n");
  ir::Diagnostics sd;
  EXPECT_FALSE(ir::verify(sized, sd));
  EXPECT_NE(sd.render(sized).find("which is not a u32 or i32 scalar parameter"), std::string::npos) << sd.render(sized);
}

// The emitted code: CUDA takes 64-bit parameters as unsigned long long / long long and computes
// thread_id64 from a 64-bit product; GLSL declares the push constants at 8-byte aligned offsets
// and calls the helper that widens the group size. Both compile (NVRTC for sm_80 and sm_90a,
// glslang + spirv-val).
TEST(WideCodegen, EmittedSourceAndCompilers) {
  const ir::Kernel k = passes::optimize(traced("wide_params", &params_body));
  codegen::Emitted cu = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(cu.ok()) << cu.diags.render(k);
  EXPECT_NE(cu.source.find("unsigned p_a, unsigned long long p_b, float p_c, long long p_d, int p_e"),
            std::string::npos)
      << cu.source;
  const ir::Kernel g = passes::optimize(traced("wide_gather", &index64_body));
  codegen::Emitted gcu = codegen::emit(g, DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(gcu.ok());
  EXPECT_NE(gcu.source.find("((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x)"), std::string::npos)
      << gcu.source;
  const ir::Kernel loops = passes::optimize(traced("wide_loops", &loops_body));
  codegen::Emitted lcu = codegen::emit(loops, DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(lcu.ok());
  // The i64 loop steps on the unsigned type of its width (the step wraps).
  EXPECT_NE(lcu.source.find("= ((long long)(((unsigned long long)("), std::string::npos) << lcu.source;
  for (const codegen::Emitted* e : {&cu, &gcu, &lcu})
    for (const char* arch : {"sm_80", "sm_90a"}) {
      rt::NvrtcResult r = rt::nvrtc_compile(e->source, e->entry, arch);
      EXPECT_TRUE(r.ok) << arch << ":\n" << r.log.substr(0, 3000) << "\n" << e->source;
    }
  codegen::Emitted gl = codegen::emit(k, DType::F32, codegen::Target::Glsl);
  ASSERT_TRUE(gl.ok());
  EXPECT_NE(gl.source.find("layout(offset = 0) uint p_a; layout(offset = 8) uint64_t p_b; layout(offset = 16) float p_c; "
                           "layout(offset = 24) int64_t p_d; layout(offset = 32) int p_e;"),
            std::string::npos)
      << gl.source;
  std::vector<uint32_t> offsets;
  EXPECT_EQ(codegen::push_constant_layout(k, offsets), 36u);
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0, 8, 16, 24, 32}));
  EXPECT_TRUE(codegen::compile_glsl(gl.source, "wide_params").ok);
  codegen::Emitted ggl = codegen::emit(g, DType::F32, codegen::Target::Glsl);
  ASSERT_TRUE(ggl.ok());
  EXPECT_NE(ggl.source.find("iron_thread_id64(gl_WorkGroupID.x, gl_WorkGroupSize.x, gl_LocalInvocationID.x)"),
            std::string::npos)
      << ggl.source;
  EXPECT_NE(ggl.source.find("p_out.data[uint("), std::string::npos) << ggl.source;  // the narrowed u64 index
  codegen::Spirv sp = codegen::compile_glsl(ggl.source, "wide_gather");
  EXPECT_TRUE(sp.ok) << sp.log << ggl.source;
}
