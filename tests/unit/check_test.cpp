// Checks at the boundaries: checked arithmetic (extents, allocation sizes, threadgroup bytes,
// loop steps, grid products, parser literals, the unroll trip count), the text parser's
// located errors, the nesting limit, and the disk cache's refusal to open anything but a
// regular file. Each test reproduces a reported overflow, crash or hang.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "passes/pass.hpp"
#include "runtime/disk_cache.hpp"
#include "ir_text.hpp"

using namespace iron;
using iron::test::parse_error;

namespace {

std::string verify_text(const ir::Kernel& k) {
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::unique_ptr<Context> interp_context() { return Context::create(Backend::Interp); }

const char* kHeader =
    "kernel k mode=Elementwise {\n"
    "  param n: scalar<u32>\n"
    "  param out: out buf<u32> extent=n\n";

}  // namespace

// --- checked arithmetic ------------------------------------------------------------------------

TEST(CheckedArithmetic, Helpers) {
  uint64_t u = 0;
  EXPECT_TRUE(num::checked_mul(uint64_t(1) << 32, uint64_t(1) << 31, u));
  EXPECT_FALSE(num::checked_mul(uint64_t(1) << 32, uint64_t(1) << 32, u));
  EXPECT_FALSE(num::checked_add(UINT64_MAX, uint64_t(1), u));
  EXPECT_EQ(num::saturating_mul(uint64_t(1) << 62, 4), UINT64_MAX);
  int64_t i = 0;
  EXPECT_TRUE(num::parse_int64("-9223372036854775808", i));
  EXPECT_EQ(i, INT64_MIN);
  EXPECT_FALSE(num::parse_int64("9223372036854775808", i));
  EXPECT_FALSE(num::parse_int64("12a", i));
  EXPECT_FALSE(num::parse_int64("", i));
  EXPECT_FALSE(num::parse_int64("-", i));
  double f = 0;
  EXPECT_TRUE(num::parse_double("-1.5e-3", f));
  EXPECT_TRUE(num::parse_double("inf", f));
  EXPECT_FALSE(num::parse_double("1e999", f));
  EXPECT_FALSE(num::parse_double("abc", f));
}

// 2^21 * 2^21 * 2^22 = 2^64 wrapped to 0, and a 16-element buffer was accepted for 2M stores.
TEST(CheckedArithmetic, ExtentProductOverflowIsRejected) {
  ir::Kernel k = ir::parse(
      "kernel k mode=Elementwise {\n"
      "  param a: scalar<u32>\n"
      "  param b: scalar<u32>\n"
      "  param c: scalar<u32>\n"
      "  param out: out buf<f32> extent=a*b*c\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = const<1> : f32\n"
      "  store<out> %0, %1\n"
      "}\n");
  auto ctx = interp_context();
  Bindings b{{"out", ctx->alloc(DType::F32, 16)}};
  Constexprs c{{"a", double(1u << 21)}, {"b", double(1u << 21)}, {"c", double(1u << 22)}};
  std::string e = what_of([&] { ctx->validate_dispatch(k, DType::F32, b, c, {8192, 1, 1}, {256, 1, 1}); });
  EXPECT_NE(e.find("buffer 'out' has 16 elements but the kernel may touch more than 2^64 (extent a*b*c)"),
            std::string::npos)
      << e;
}

TEST(CheckedArithmetic, ExtentLiteralsOverflow) {
  EXPECT_NE(parse_error(std::string(kHeader) +
                        "  param big: out buf<u32> extent=4294967296*4294967296\n}\n")
                .find("extent factor product overflows 64 bits"),
            std::string::npos);
}

// 2^62 + 1 u32 elements made a 4-byte buffer.
TEST(CheckedArithmetic, AllocationSizeOverflowIsRejected) {
  auto ctx = interp_context();
  std::string e = what_of([&] { ctx->alloc(DType::U32, (size_t(1) << 62) + 1); });
  EXPECT_NE(e.find("overflows 64 bits"), std::string::npos) << e;
}

// A 2^62-element threadgroup allocation is 2^64 bytes: it wrapped to 0 and passed.
TEST(CheckedArithmetic, ThreadgroupBytesSaturate) {
  ir::Kernel k = ir::parse(
      "kernel k mode=Reduction {\n"
      "  param n: scalar<u32>\n"
      "  param out: out buf<f32> extent=n\n"
      "  %0 = tg_alloc<scratch, 4> : f32\n"
      "  %1 = local_id<0> : u32\n"
      "  %2 = const<1> : f32\n"
      "  tg_store %0, %1, %2\n"
      "  store<out> %1, %2\n"
      "}\n");
  k.insts[0].set(ir::Attr::Count, int64_t(1) << 62);
  EXPECT_EQ(ir::threadgroup_bytes(k, DType::F32), UINT64_MAX);
  EXPECT_NE(verify_text(k).find("exceeds 2^32-1"), std::string::npos) << verify_text(k);
  auto ctx = interp_context();
  Bindings b{{"out", ctx->alloc(DType::F32, 32)}};
  std::string e = what_of([&] { ctx->validate_dispatch(k, DType::F32, b, {{"n", 32}}, {1, 1, 1}, {32, 1, 1}); });
  EXPECT_NE(e.find("bytes of threadgroup memory"), std::string::npos) << e;
}

// const<4294967296> as a u32 step is a zero step on every backend.
TEST(CheckedArithmetic, LoopStepIsReadAsItsType) {
  std::string text = std::string(kHeader) +
                     "  %0 = const<0> : u32\n"
                     "  %1 = const<4> : u32\n"
                     "  %2 = const<1> : u32\n"
                     "  %3 = for %0, %1, %2 : u32 {\n"
                     "    store<out> %3, %3\n"
                     "  }\n"
                     "}\n";
  std::string wide = text;
  wide.replace(wide.find("const<1> : u32"), 14, "const<4294967296> : u32");
  std::string e = parse_error(wide);
  EXPECT_NE(e.find("u32 constant 4294967296 is out of range [0, 4294967295]"), std::string::npos) << e;
  ir::Kernel k = ir::parse(text);
  k.insts[2].set(ir::Attr::Value, int64_t(1) << 32);  // as a pass or a hand-built kernel could hold it
  std::string v = verify_text(k);
  EXPECT_NE(v.find("loop step is 0 (constant 4294967296 read as u32)"), std::string::npos) << v;
}

// A u32 loop that wraps past 2^32-1 before reaching its end runs more than once; unroll made it
// one copy of its body.
TEST(CheckedArithmetic, UnrollLeavesAWrappingLoopAlone) {
  // i = 0xFFFFFFF0 (runs), 0x7FFFFFF4 (wrapped, runs), 0xFFFFFFF8 (stops): two iterations.
  ir::Kernel k = ir::parse(
      "kernel k mode=Elementwise {\n"
      "  param n: scalar<u32>\n"
      "  param out: out buf<u32> extent=n\n"
      "  %0 = const<4294967280> : u32\n"
      "  %1 = const<4294967288> : u32\n"
      "  %2 = const<2147483652> : u32\n"
      "  %3 = const<0> : u32\n"
      "  %4 = var %3 : u32\n"
      "  %5 = for %0, %1, %2 : u32 {\n"
      "    %6 = var_load %4 : u32\n"
      "    %7 = const<1> : u32\n"
      "    %8 = add %6, %7 : u32\n"
      "    var_store %4, %8\n"
      "  }\n"
      "  %9 = var_load %4 : u32\n"
      "  store<out> %3, %9\n"
      "}\n");
  auto ctx = interp_context();
  DeviceBuffer out = ctx->alloc(DType::U32, 1);
  ctx->dispatch_with_grid(k, DType::U32, {{"out", out}}, {{"n", 1}}, {1, 1, 1}, {1, 1, 1});
  uint32_t got = 0;
  ctx->download(out, &got, 4);
  EXPECT_EQ(got, 2u);
}

// Three 32-bit grid dimensions can multiply past 2^64; the product wrapped to 0 threads.
TEST(CheckedArithmetic, GridProductOverflowIsRejected) {
  ir::Kernel k = ir::parse(std::string(kHeader) + "  %0 = thread_id<0> : u32\n  store<out> %0, %0\n}\n");
  auto ctx = interp_context();
  Bindings b{{"out", ctx->alloc(DType::U32, 16)}};
  std::string e = what_of(
      [&] { ctx->validate_dispatch(k, DType::U32, b, {{"n", 16}}, {1u << 22, 1u << 21, 1u << 21}, {1, 1, 1}); });
  EXPECT_NE(e.find("= more than 2^64 threads exceeds 2^32-1"), std::string::npos) << e;
  EXPECT_EQ((Dim3{1u << 22, 1u << 21, 1u << 21}.product()), UINT64_MAX);
}

// --- the text parser ---------------------------------------------------------------------------

// Every malformed line is an error naming line:column and quoting the text, never a default.
TEST(CheckParse, MalformedTextIsALocatedError) {
  struct Case {
    std::string body, want;
  };
  const std::vector<Case> cases = {
      {"  %0 = const<abc> : u32\n", "IR parse error at 4:14: u32 constant 'abc' is not an integer (at 'abc')"},
      {"  %0 = const<99999999999999999999> : i32\n", "i32 constant 99999999999999999999 overflows 64 bits"},
      {"  %0 = const<2147483648> : i32\n", "i32 constant 2147483648 is out of range"},
      {"  %0 = const<-1> : u32\n", "u32 constant -1 is out of range"},
      {"  %0 = const<2> : bool\n", "bool constant 2 is out of range"},
      {"  %0 = const<1e39> : f32\n", "float constant 1e39 overflows f32"},
      {"  %0 = const<1.5x> : f32\n", "float constant '1.5x' is not a number"},
      {"  %0 = thread_id<x> : u32\n", "IR parse error at 4:18: axis 'x' is not an integer (at 'x')"},
      {"  %0 = thread_id<3> : u32\n", "axis 3 is out of range [0, 2]"},
      {"  %0 = tg_alloc<s, 0> : f32\n", "threadgroup element count 0 is out of range"},
      {"  %0 = tg_alloc<s, 4294967296> : f32\n", "threadgroup element count 4294967296 is out of range"},
      {"  %0 = thread_id<0> : u32\n  %1 = load<out, vec=x> %0 : u32\n", "vector group width 'x' is not an integer"},
      {"  %0 = thread_id<0> : u32 @\"f.cpp\":zz\n", "location line 'zz' is not an integer"},
      {"  param m: out buf<u32> extent=0\n", "IR parse error at 4:32: extent factor 0 is out of range"},
      {"  param m: out buf<u32> extent=n*\n", "empty extent term"},
      {"  param m: out buf<u32> extent=n junk\n", "unexpected 'junk' after the extent"},
      {"  param 9m: scalar<u32>\n", "parameter name '9m' is not an identifier"},
      {"  %0 = thread_id<0> : u32\n  %1 = lt %0, %0 : bool\n  if %1 {\n    param m: scalar<u32>\n  }\n",
       "IR parse error at 7:5: 'param' inside an if or for block"},
      {"  %0 = thread_id<0> : u32\n  param m: scalar<u32>\n", "'param' after the first instruction"},
      {"  %0 = add %0, %0 : u32\n", "use of undefined value %0"},
      {"  %0 = thread_id<0> : u32\n  %1 = add %0, : u32\n", "use of undefined value (empty operand)"},
  };
  for (const Case& c : cases) {
    std::string e = parse_error(std::string(kHeader) + c.body + "}\n");
    EXPECT_NE(e.find(c.want), std::string::npos) << c.body << "  ->  " << e;
    EXPECT_EQ(e.rfind("IR parse error at ", 0), 0u) << e;
  }
  EXPECT_NE(parse_error("kernel k mode=Elementwise dtypes=f32,,f16 {\n}\n").find("empty entry in dtypes="),
            std::string::npos);
  EXPECT_NE(parse_error("kernel k mode=Elementwise { junk\n}\n").find("unexpected 'junk' after '{'"), std::string::npos);
  EXPECT_NE(parse_error("").find("no kernel in the text"), std::string::npos);
}

// A parameter whose extent factor is 0 (built by hand, past the parser) is a verifier error.
TEST(CheckParse, ZeroExtentIsAVerifierError) {
  ir::Kernel k = ir::parse(std::string(kHeader) + "}\n");
  k.params[1].extent_factor = 0;
  EXPECT_NE(verify_text(k).find("extent of 'out' is 0"), std::string::npos) << verify_text(k);
}

// --- nesting --------------------------------------------------------------------------------

namespace {
std::string nested_ifs(size_t depth) {
  std::string s = std::string(kHeader) + "  %0 = thread_id<0> : u32\n  %1 = param<n> : u32\n  %2 = lt %0, %1 : bool\n";
  s.reserve(s.size() + depth * 12);
  for (size_t i = 0; i < depth; ++i) s += "if %2 {\n";
  s += "store<out> %0, %0\n";
  for (size_t i = 0; i < depth; ++i) s += "}\n";
  return s + "}\n";
}
}  // namespace

// 200k nested ifs overflowed the stack (signal 11).
TEST(CheckNesting, DeepTextIsAnErrorNotACrash) {
  std::string e = parse_error(nested_ifs(200000));
  EXPECT_NE(e.find("nested deeper than 256 levels"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(parse_error(nested_ifs(ir::kMaxNesting + 1)).find("nested deeper than"), std::string::npos);
}

// A kernel at the limit goes through every stage: verifier, printer, parser, the pipeline, both
// emitters and the interpreter.
TEST(CheckNesting, TheLimitItselfWorksEverywhere) {
  ir::Kernel k = ir::parse(nested_ifs(ir::kMaxNesting));
  EXPECT_EQ(ir::nesting_depth(k), ir::kMaxNesting);
  EXPECT_EQ(verify_text(k), "");
  EXPECT_EQ(ir::print(ir::parse(ir::print(k))), ir::print(k));
  ir::Kernel opt = passes::optimize(k);
  EXPECT_TRUE(codegen::emit(opt, DType::U32, codegen::Target::Cuda).ok());
  EXPECT_TRUE(codegen::emit(opt, DType::U32, codegen::Target::Glsl).ok());
  auto ctx = interp_context();
  DeviceBuffer out = ctx->alloc(DType::U32, 32);
  ctx->dispatch_with_grid(k, DType::U32, {{"out", out}}, {{"n", 32}}, {1, 1, 1}, {32, 1, 1});
  std::vector<uint32_t> got(32);
  ctx->download(out, got.data(), 128);
  EXPECT_EQ(got[31], 31u);
}

// A kernel built past the parser (by hand or by a pass) deeper than the limit is rejected by the
// verifier and the pipeline before anything recurses into it.
TEST(CheckNesting, DeepKernelBuiltByHandIsRejected) {
  ir::Kernel k = ir::parse(nested_ifs(1));
  ir::Id cond = 2, store = k.blocks[1].insts[0];
  ir::Id block = 1;
  for (int i = 0; i < 100000; ++i) {
    ir::Inst in;
    in.op = ir::Op::If;
    in.operands.resize(1);
    in.operands[0] = cond;
    ir::Id id = k.add_inst(in);
    k.blocks[block].insts = {id};
    ir::Id b = k.add_block(id);
    k.insts[id].blocks[0] = b;
    block = b;
  }
  k.blocks[block].insts = {store};
  EXPECT_EQ(ir::nesting_depth(k), 100001u);
  EXPECT_NE(verify_text(k).find("nesting is 100001 levels deep; the IR allows at most 256"), std::string::npos);
  passes::PipelineResult r = passes::run_pipeline(k);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.diags.render(k).find("before the pipeline: if/for nesting is 100001"), std::string::npos);
  EXPECT_NE(what_of([&] { ir::print(k); }).find("nesting is 100001 levels deep"), std::string::npos);
}

namespace {
int g_depth = 0;
void deep_body_at(int level) {
  using namespace iron::dsl;
  if (level == g_depth) return;
  if_(thread_id(0) < 4u, [&] { deep_body_at(level + 1); });
}
void deep_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u32, {n});
  (void)out;
  deep_body_at(0);
}
}  // namespace

TEST(CheckNesting, DslTracerStopsAtTheLimit) {
  g_depth = 100000;
  std::string e = what_of([] { trace_kernel(KernelDecl{"check_deep", &deep_body, Mode::Elementwise, {}, __FILE__, __LINE__}); });
  EXPECT_NE(e.find("if_/for_ nested deeper than 256 levels"), std::string::npos) << e.substr(0, 400);
  g_depth = int(ir::kMaxNesting);
  EXPECT_EQ(what_of([] { trace_kernel(KernelDecl{"check_deep", &deep_body, Mode::Elementwise, {}, __FILE__, __LINE__}); }),
            "(no error)");
}

// --- disk cache ---------------------------------------------------------------------------

namespace {
std::filesystem::path cache_dir(const char* name) {
  auto d = std::filesystem::temp_directory_path() / ("iron_check_cache_" + std::string(name) + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}
}  // namespace

// A FIFO in place of an entry blocked the open (and `iron test` with it) forever.
TEST(CheckDiskCache, FifoEntryIsCorruptNotAHang) {
  auto dir = cache_dir("fifo");
  rt::DiskCache cache(dir.string());
  std::string key = rt::cache_key({"vulkan", "fifo"});
  std::string path = (dir / (key + ".bin")).string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  auto loaded = std::async(std::launch::async, [&] { return cache.load(key); });
  if (loaded.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    // Unblock the reader so the test can report instead of hanging.
    int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
    loaded.wait();
    FAIL() << "DiskCache::load blocked on a FIFO";
  }
  EXPECT_FALSE(loaded.get());
  EXPECT_EQ(cache.stats().corrupt, 1u);
  EXPECT_NE(cache.last_problem().find("is a FIFO, not a regular file; ignored and rebuilt"), std::string::npos)
      << cache.last_problem();
  // The rebuilt entry replaces it and loads.
  cache.store(key, "abc", 3);
  auto again = cache.load(key);
  ASSERT_TRUE(again);
  EXPECT_EQ(std::string(again->begin(), again->end()), "abc");
  std::filesystem::remove_all(dir);
}

TEST(CheckDiskCache, SymlinkAndDirectoryEntriesAreCorrupt) {
  auto dir = cache_dir("links");
  rt::DiskCache cache(dir.string());
  std::string key = rt::cache_key({"vulkan", "link"});
  std::string path = (dir / (key + ".bin")).string();
  cache.store(key, "abc", 3);
  std::filesystem::rename(path, dir / "real.bin");
  std::filesystem::create_symlink(dir / "real.bin", path);
  EXPECT_FALSE(cache.load(key));
  EXPECT_NE(cache.last_problem().find("is a symbolic link"), std::string::npos) << cache.last_problem();
  std::filesystem::create_directory(path);
  EXPECT_FALSE(cache.load(key));
  EXPECT_NE(cache.last_problem().find("is a directory"), std::string::npos) << cache.last_problem();
  std::filesystem::remove_all(dir);
}


// --- write aliasing ----------------------------------------------------------------------------

namespace {
void scale_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = x[i] * 2.0f; });
}
void scale_aliased_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  aliases("out", "x");
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = x[i] * 2.0f; });
}
void two_outputs_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = output("a", f32, {n});
  Buffer b = output("b", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    a[i] = 1.0f;
    b[i] = 2.0f;
  });
}
ir::Kernel traced(void (*body)(), const char* name) {
  return trace_kernel(KernelDecl{name, body, Mode::Elementwise, {}, __FILE__, __LINE__});
}
}  // namespace

class CheckAliasing : public ::testing::TestWithParam<Backend> {};

// One buffer bound as an input and an output (or as two outputs) passed although the CUDA
// parameters are __restrict__; it is rejected unless the kernel declares the aliasing.
TEST_P(CheckAliasing, OneBufferInTwoWrittenParametersNeedsADeclaration) {
  std::unique_ptr<Context> ctx;
  std::string why = what_of([&] { ctx = Context::create(GetParam()); });
  ASSERT_TRUE(ctx) << why;
  const uint32_t n = 64;
  DeviceBuffer buf = ctx->alloc(DType::F32, n);
  std::vector<float> host(n);
  for (uint32_t i = 0; i < n; ++i) host[i] = float(i);
  ctx->upload(buf, host.data(), n * 4);
  Dim3 grid{1, 1, 1}, tg{64, 1, 1};

  ir::Kernel plain = traced(&scale_body, "check_alias_plain");
  std::string e = what_of([&] { ctx->dispatch_with_grid(plain, DType::F32, {{"x", buf}, {"out", buf}}, {{"n", n}}, grid, tg); });
  EXPECT_NE(e.find("buffers 'x' (in) and 'out' (out) are bound to the same DeviceBuffer, but the kernel does not declare "
                   "that they alias"),
            std::string::npos)
      << e;
  ir::Kernel two = traced(&two_outputs_body, "check_alias_two_outputs");
  e = what_of([&] { ctx->dispatch_with_grid(two, DType::F32, {{"a", buf}, {"b", buf}}, {{"n", n}}, grid, tg); });
  EXPECT_NE(e.find("buffers 'a' (out) and 'b' (out) are bound to the same DeviceBuffer"), std::string::npos) << e;

  // Declared: accepted, computed in place, printed and parsed with its declaration, and the
  // CUDA parameters lose __restrict__.
  ir::Kernel declared = traced(&scale_aliased_body, "check_alias_declared");
  ctx->dispatch_with_grid(declared, DType::F32, {{"x", buf}, {"out", buf}}, {{"n", n}}, grid, tg);
  ctx->synchronize();
  ctx->download(buf, host.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(host[i], 2.0f * float(i)) << i;
  std::string text = ir::print(declared);
  EXPECT_NE(text.find("param out: out buf<f32> extent=n aliases=x"), std::string::npos) << text;
  EXPECT_EQ(ir::print(ir::parse(text)), text);
  std::string cuda = codegen::emit(passes::optimize(declared), DType::F32, codegen::Target::Cuda).source;
  EXPECT_EQ(cuda.find("__restrict__"), std::string::npos) << cuda;
  EXPECT_NE(codegen::emit(passes::optimize(plain), DType::F32, codegen::Target::Cuda).source.find("__restrict__"),
            std::string::npos);
  // Separate buffers are unaffected.
  DeviceBuffer other = ctx->alloc(DType::F32, n);
  EXPECT_EQ(what_of([&] { ctx->dispatch_with_grid(plain, DType::F32, {{"x", buf}, {"out", other}}, {{"n", n}}, grid, tg); }),
            "(no error)");
}

INSTANTIATE_TEST_SUITE_P(Backends, CheckAliasing, ::testing::Values(Backend::Interp, Backend::Vulkan),
                         [](const auto& info) { return std::string(info.param == Backend::Interp ? "interp" : "vulkan"); });

TEST(CheckAliasingDsl, UnknownOrRepeatedNamesAreErrors) {
  auto body = [] {
    using namespace iron::dsl;
    Expr n = constexpr_("n", u32);
    Buffer out = output("out", f32, {n});
    (void)out;
    aliases("out", "nope");
  };
  static void (*fn)() = +body;
  std::string e = what_of([] { traced(fn, "check_alias_unknown"); });
  EXPECT_NE(e.find("aliases(\"out\", \"nope\"): 'nope' is not a buffer parameter declared before it"), std::string::npos)
      << e;
  EXPECT_NE(parse_error(std::string(kHeader) + "  param o2: out buf<u32> extent=n aliases=zz\n}\n")
                .find("aliases= names 'zz', which is not an earlier buffer parameter"),
            std::string::npos);
}
