// Specializable scalars and declared facts (docs/dsl.md#specialization, docs/semantics.md
// "Declared facts"): the text form and the verifier, the DSL spelling, the pipeline input that
// bakes a value in, the passes that use multiple_of and aligned, the dispatch validator that
// checks every fact (and what happens when it does not), and the per-kernel LRU of specialized
// pipelines on the interpreter and on Vulkan (lavapipe here), memory and disk.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>
#include <iron/launch.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace iron {
namespace {

using namespace iron::dsl;

void expect_contains(const std::string& text, const std::string& want) {
  EXPECT_NE(text.find(want), std::string::npos) << "missing \"" << want << "\" in:\n" << text;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

size_t count_op(const ir::Kernel& k, ir::Op op) {
  size_t n = 0;
  ir::walk(k, [&](ir::Id id) { n += k.insts[id].op == op; });
  return n;
}
size_t count_vector_groups(const ir::Kernel& k, int64_t width) {
  size_t n = 0;
  ir::walk(k, [&](ir::Id id) { n += k.insts[id].has(ir::Attr::Vec) && k.insts[id].attr(ir::Attr::Vec) == width; });
  return n;
}

ir::Kernel parse_verified(const std::string& text) {
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(k, d)) << d.render(k);
  return k;
}

std::string verify_errors(const ir::Kernel& k) {
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}

// ---- Text form and verifier ------------------------------------------------------------------

const char* kFactsIr = R"(kernel k mode=Elementwise {
  param d: scalar<u32> specialize multiple_of=8
  param eps: scalar<f32> specialize
  param a: in buf<f32> extent=d aligned=16
  param out: out buf<f32> extent=d aligned=8 aliases=a
  %0 = thread_id<0> : u32
  %1 = load<a> %0 : f32
  store<out> %0, %1
}
)";

TEST(Facts, TextFormRoundTrips) {
  const ir::Kernel k = parse_verified(kFactsIr);
  EXPECT_TRUE(k.params[0].specialize);
  EXPECT_EQ(k.params[0].multiple_of, 8u);
  EXPECT_TRUE(k.params[1].specialize);
  EXPECT_EQ(k.params[1].multiple_of, 0u);
  EXPECT_EQ(k.params[2].align, 16u);
  EXPECT_EQ(k.params[3].align, 8u);
  EXPECT_EQ(ir::print(k), kFactsIr);
  // The facts are part of the content hash: a kernel without them is another program.
  ir::Kernel plain = k;
  plain.params[0].multiple_of = 0;
  EXPECT_NE(ir::content_hash(plain), ir::content_hash(k));
  plain = k;
  plain.params[0].specialize = false;
  EXPECT_NE(ir::content_hash(plain), ir::content_hash(k));
}

TEST(Facts, ParserRejectsMalformedFacts) {
  const std::string head = "kernel k mode=Elementwise {\n  param d: scalar<u32>";
  auto parse_error = [&](const std::string& param_tail) {
    return error_of([&] { ir::parse(head + param_tail + "\n}\n"); });
  };
  expect_contains(parse_error(" specialize specialize"), "'specialize' given twice");
  expect_contains(parse_error(" multiple_of=8 multiple_of=4"), "'multiple_of' given twice");
  expect_contains(parse_error(" multiple_of=x"), "multiple_of 'x' is not an integer");
  expect_contains(parse_error(" aligned=16"), "unexpected 'aligned=16' after a scalar parameter");
  expect_contains(error_of([] {
                    ir::parse("kernel k mode=Elementwise {\n  param n: scalar<u32>\n  param a: in buf<f32> extent=n "
                              "specialize\n}\n");
                  }),
                  "unexpected 'specialize' after the extent");
}

TEST(Facts, VerifierChecksEveryFact) {
  auto with = [](auto edit) {
    ir::Kernel k = ir::parse(kFactsIr);
    edit(k);
    return verify_errors(k);
  };
  expect_contains(with([](ir::Kernel& k) { k.params[0].multiple_of = 6; }),
                  "multiple_of(6) on 'd' must be a power of two from 2 to 2147483648");
  expect_contains(with([](ir::Kernel& k) { k.params[0].multiple_of = 1; }), "must be a power of two");
  expect_contains(with([](ir::Kernel& k) { k.params[1].multiple_of = 4; }),
                  "multiple_of(4) on 'eps', a f32 scalar (only integer scalars have divisibility facts)");
  expect_contains(with([](ir::Kernel& k) { k.params[2].align = 2; }),
                  "aligned(2) on 'a' is less than one f32 element (4 bytes)");
  expect_contains(with([](ir::Kernel& k) { k.params[2].align = 24; }), "aligned(24) on 'a' must be a power of two up to 256");
  expect_contains(with([](ir::Kernel& k) { k.params[2].align = 512; }), "must be a power of two up to 256");
  expect_contains(with([](ir::Kernel& k) { k.params[2].specialize = true; }), "buffer parameter 'a' cannot be specialized");
  expect_contains(with([](ir::Kernel& k) { k.params[2].multiple_of = 4; }), "buffer parameter 'a' cannot be multiple_of");
  expect_contains(with([](ir::Kernel& k) { k.params[0].align = 4; }), "scalar parameter 'd' cannot be aligned");
  // A generic buffer is checked at every dtype T may take.
  ir::Kernel generic = ir::parse(
      "kernel g mode=Elementwise dtypes=f16,f32 {\n  param n: scalar<u32>\n  param a: in buf<T> extent=n aligned=2\n}\n");
  expect_contains(verify_errors(generic), "aligned(2) on 'a' is less than one f32 element");
  generic.params[1].align = 4;
  EXPECT_EQ(verify_errors(generic), "");
}

// ---- DSL ----------------------------------------------------------------------------------------

// Each row r of `rows` sums its d elements (d specialized, a multiple of 8): out[r] = sum a[r*d+j].
void row_sum_body() {
  Expr rows = constexpr_("rows", u32);
  Expr d = constexpr_("d", u32, specialize() | multiple_of(8));
  Buffer a = input("a", f32, {rows, d}, aligned(16));
  Buffer out = output("out", f32, {rows});
  Expr r = thread_id(0);
  if_(r < rows, [&] {
    Expr base = r * d;
    Var<f32> acc = 0.0f;
    for_(0u, d, 1u, [&](Expr j) { acc += a[base + j]; });
    out[r] = acc;
  });
}
const int kRowSumLine = __LINE__ - 11;  // the line of the constexpr_ declaring d

ir::Kernel row_sum() {
  return trace_kernel(KernelDecl{"spec_row_sum", &row_sum_body, Mode::Elementwise, {}, __FILE__, __LINE__});
}

TEST(Facts, DslDeclaresFacts) {
  const ir::Kernel k = row_sum();
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_FALSE(k.params[0].specialize);
  EXPECT_TRUE(k.params[1].specialize);
  EXPECT_EQ(k.params[1].multiple_of, 8u);
  EXPECT_EQ(k.params[2].align, 16u);
  EXPECT_EQ(k.params[3].align, 0u);
  expect_contains(ir::print(k), "param d: scalar<u32> specialize multiple_of=8");
  expect_contains(ir::print(k), "param a: in buf<f32> extent=rows*d aligned=16");
  expect_contains(k.where(k.params[1].loc), "specialize_test.cpp:" + std::to_string(kRowSumLine));
}

void bad_facts_body() {
  Expr n = constexpr_("n", u32, multiple_of(12));
  Expr s = constexpr_("s", f32, multiple_of(4));
  Buffer a = input("a", f32, {n}, aligned(2));
  Buffer out = output("out", f32, {n});
  out[thread_id(0)] = a[thread_id(0)] * s;
}
const int kBadFactsLine = __LINE__ - 6;

TEST(Facts, DslRejectsBadFactsAtTheirDeclaration) {
  const std::string e =
      error_of([] { trace_kernel(KernelDecl{"spec_bad_facts", &bad_facts_body, Mode::Elementwise, {}, __FILE__, __LINE__}); });
  const std::string file = "specialize_test.cpp:";
  expect_contains(e, file + std::to_string(kBadFactsLine) + ": error: multiple_of(12) on 'n' must be a power of two");
  expect_contains(e, file + std::to_string(kBadFactsLine + 1) + ": error: multiple_of(4) on 's', a f32 scalar");
  expect_contains(e, file + std::to_string(kBadFactsLine + 2) + ": error: aligned(2) on 'a' is less than one f32 element");
}

// ---- Pipeline ----------------------------------------------------------------------------------

passes::Specialization spec_of(std::vector<std::pair<uint32_t, uint64_t>> values) {
  passes::Specialization s;
  s.values = std::move(values);
  return s;
}

TEST(Specialization, BakedValueUnrollsAndVectorizes) {
  const ir::Kernel k = row_sum();
  const ir::Kernel generic = passes::optimize(k);
  EXPECT_EQ(count_op(generic, ir::Op::For), 1u) << ir::print(generic);
  EXPECT_EQ(count_vector_groups(generic, 8), 0u);
  const ir::Kernel baked = passes::optimize(k, {}, spec_of({{1, 16}}));
  const std::string text = ir::print(baked);
  EXPECT_EQ(count_op(baked, ir::Op::For), 0u) << text;  // d = 16: a constant trip count, unrolled
  EXPECT_EQ(count_vector_groups(baked, 8), 2u) << text;  // two groups of 8 at base + 0, base + 8
  // d is no longer read (rows still is); the parameter stays in the signature.
  size_t reads_of_d = 0;
  ir::walk(baked, [&](ir::Id id) { reads_of_d += baked.insts[id].op == ir::Op::Param && baked.insts[id].param() == 1; });
  EXPECT_EQ(reads_of_d, 0u) << text;
  EXPECT_EQ(baked.params.size(), k.params.size());
}

// Every scalar dtype folds to the value the interpreter reads from the same launch bits.
TEST(Specialization, EveryScalarDtypeFoldsToItsLaunchValue) {
  const char* text = R"(kernel k mode=Elementwise {
  param a: scalar<i32> specialize
  param b: scalar<u32> specialize
  param c: scalar<f32> specialize
  param e: scalar<i64> specialize
  param f: scalar<u64> specialize
  param o32: out buf<i32> extent=3
  param o64: out buf<i64> extent=2
  %0 = const<0> : u32
  %1 = const<1> : u32
  %2 = const<2> : u32
  %3 = param<a> : i32
  store<o32> %0, %3
  %4 = param<b> : u32
  %5 = cast %4 : i32
  store<o32> %1, %5
  %6 = param<c> : f32
  %7 = bitcast %6 : i32
  store<o32> %2, %7
  %8 = param<e> : i64
  store<o64> %0, %8
  %9 = param<f> : u64
  %10 = bitcast %9 : i64
  store<o64> %1, %10
}
)";
  const ir::Kernel k = parse_verified(text);
  const float c = -0.375f;
  uint32_t cbits;
  std::memcpy(&cbits, &c, 4);
  const std::vector<uint64_t> bits = {uint64_t(uint32_t(-7)), 0xfffffff0u, cbits, uint64_t(int64_t(-5000000000)),
                                      0xfedcba9876543210ull};
  const ir::Kernel baked = passes::optimize(k, {}, spec_of({{0, bits[0]}, {1, bits[1]}, {2, bits[2]}, {3, bits[3]}, {4, bits[4]}}));
  EXPECT_EQ(count_op(baked, ir::Op::Param), 0u) << ir::print(baked);
  auto run = [&](const ir::Kernel& kk) {
    std::vector<int32_t> o32(3, 0);
    std::vector<int64_t> o64(2, 0);
    std::vector<interp::BufferArg> args = {{o32.data(), o32.size() * 4}, {o64.data(), o64.size() * 8}};
    interp::run(kk, DType::F32, args, bits, {1, 1, 1}, {1, 1, 1}, interp::Options{});
    return std::make_pair(o32, o64);
  };
  const auto want = run(k);
  EXPECT_EQ(want.first[0], -7);
  EXPECT_EQ(uint32_t(want.first[1]), 0xfffffff0u);
  EXPECT_EQ(uint32_t(want.first[2]), cbits);
  EXPECT_EQ(want.second[0], int64_t(-5000000000));
  EXPECT_EQ(uint64_t(want.second[1]), 0xfedcba9876543210ull);
  EXPECT_EQ(run(baked), want);
}

// multiple_of feeds algebraic_simplify (d % 8, d & 7, (d / 8) * 8) and vectorize (a base of
// r * d); without the fact nothing changes.
TEST(Facts, MultipleOfFeedsTheSimplifierAndVectorize) {
  const char* with_fact = R"(kernel k mode=Elementwise {
  param d: scalar<u32> multiple_of=8
  param a: in buf<f32> extent=d
  param out: out buf<u32> extent=d
  param o2: out buf<f32> extent=d
  %0 = thread_id<0> : u32
  %1 = param<d> : u32
  %2 = const<8> : u32
  %3 = rem %1, %2 : u32
  store<out> %0, %3
  %4 = const<7> : u32
  %5 = and %1, %4 : u32
  store<out> %0, %5
  %6 = div %1, %2 : u32
  %7 = mul %6, %2 : u32
  store<out> %0, %7
  %8 = mul %0, %1 : u32
  %9 = load<a> %8 : f32
  %10 = const<1> : u32
  %11 = add %8, %10 : u32
  %12 = load<a> %11 : f32
  %13 = add %9, %12 : f32
  store<o2> %0, %13
}
)";
  const ir::Kernel k = parse_verified(with_fact);
  passes::PipelineOptions opts;
  opts.disabled = {"fusion"};  // keep every value its own instruction, to count them
  ir::Kernel a = k;
  passes::PipelineResult r = passes::run_pipeline(a, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(count_op(a, ir::Op::Rem), 0u) << ir::print(a);
  EXPECT_EQ(count_op(a, ir::Op::And), 0u) << ir::print(a);
  EXPECT_EQ(count_op(a, ir::Op::Div), 0u) << ir::print(a);
  EXPECT_EQ(count_vector_groups(a, 2), 1u) << ir::print(a);

  ir::Kernel without = k;
  without.params[0].multiple_of = 0;
  ir::Kernel b = without;
  ASSERT_TRUE(passes::run_pipeline(b, opts).ok());
  EXPECT_EQ(count_op(b, ir::Op::Rem), 1u) << ir::print(b);
  EXPECT_EQ(count_op(b, ir::Op::And), 1u) << ir::print(b);
  EXPECT_EQ(count_op(b, ir::Op::Div), 1u) << ir::print(b);
  EXPECT_EQ(count_vector_groups(b, 2), 0u) << ir::print(b);
}

// A buffer declaring a smaller alignment gets no wider accesses than it allows.
TEST(Facts, AlignedLimitsVectorWidth) {
  const ir::Kernel k = row_sum();
  for (auto [align, width8, width4, width2] :
       {std::tuple{16u, 2u, 0u, 0u}, std::tuple{8u, 0u, 0u, 8u}, std::tuple{4u, 0u, 0u, 0u}}) {
    ir::Kernel kk = k;
    kk.params[2].align = align;
    const ir::Kernel baked = passes::optimize(kk, {}, spec_of({{1, 16}}));
    EXPECT_EQ(count_vector_groups(baked, 8), width8) << "aligned=" << align << "\n" << ir::print(baked);
    EXPECT_EQ(count_vector_groups(baked, 4), width4) << "aligned=" << align;
    EXPECT_EQ(count_vector_groups(baked, 2), width2) << "aligned=" << align;
  }
}

// ---- Dispatch ----------------------------------------------------------------------------------

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

std::unique_ptr<Context> context(Backend b) {
  try {
    return Context::create(b);
  } catch (const Error& e) {
    ADD_FAILURE() << "no " << backend_name(b) << " context: " << e.what();
    return nullptr;
  }
}

// Runs row_sum over 5 rows of d elements (a[i] = i % 13, exact in f32 in any order) and checks it.
void row_sum_and_check(Context& ctx, const ir::Kernel& k, uint32_t d) {
  const uint32_t rows = 5;
  std::vector<float> a(size_t(rows) * d), out(rows, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13);
  Bindings bind = {{"a", ctx.alloc(DType::F32, a.size())}, {"out", ctx.alloc(DType::F32, rows)}};
  ctx.upload(bind[0].second, a.data(), a.size() * 4);
  ctx.upload(bind[1].second, out.data(), rows * 4);
  ctx.dispatch_with_grid(k, DType::F32, bind, {{"rows", rows}, {"d", d}}, {1, 1, 1}, {32, 1, 1});
  ctx.synchronize();
  ctx.download(bind[1].second, out.data(), rows * 4);
  for (uint32_t r = 0; r < rows; ++r) {
    double want = 0;
    for (uint32_t j = 0; j < d; ++j) want += a[size_t(r) * d + j];
    EXPECT_EQ(out[r], float(want)) << "d = " << d << ", row " << r;
  }
}

TEST(Specialization, OnePipelinePerValueWithAnLruPerKernel) {
  ScopedEnv limit("IRON_SPECIALIZE_LIMIT", "2");
  auto ctx = context(Backend::Interp);
  ASSERT_TRUE(ctx);
  const ir::Kernel k = row_sum();
  row_sum_and_check(*ctx, k, 8);
  row_sum_and_check(*ctx, k, 8);
  Context::CacheStats s = ctx->cache_stats();
  EXPECT_EQ(s.memory_misses, 1u);
  EXPECT_EQ(s.memory_hits, 1u);
  row_sum_and_check(*ctx, k, 24);  // a second value: its own pipeline
  row_sum_and_check(*ctx, k, 8);   // 8 is now the most recent
  s = ctx->cache_stats();
  EXPECT_EQ(s.memory_misses, 2u);
  EXPECT_EQ(s.memory_hits, 2u);
  EXPECT_EQ(ctx->pipeline_cache_size(), 2u);
  row_sum_and_check(*ctx, k, 40);  // a third: 24, the least recently used, goes
  s = ctx->cache_stats();
  EXPECT_EQ(s.memory_misses, 3u);
  EXPECT_EQ(s.specialized_evictions, 1u);
  EXPECT_EQ(ctx->pipeline_cache_size(), 2u);
  row_sum_and_check(*ctx, k, 8);  // kept
  EXPECT_EQ(ctx->cache_stats().memory_hits, 3u);
  row_sum_and_check(*ctx, k, 24);  // evicted: compiled again, still right
  s = ctx->cache_stats();
  EXPECT_EQ(s.memory_misses, 4u);
  EXPECT_EQ(s.specialized_evictions, 2u);  // 40 went
  EXPECT_EQ(ctx->pipeline_cache_size(), 2u);
}

TEST(Specialization, LimitMustBeACount) {
  for (const char* bad : {"0", "x", "-3", "65537", "16k"}) {
    ScopedEnv limit("IRON_SPECIALIZE_LIMIT", bad);
    expect_contains(error_of([] { Context::create(Backend::Interp); }),
                    std::string("IRON_SPECIALIZE_LIMIT='") + bad + "' is not a count from 1 to 65536");
  }
}

TEST(Facts, DispatchBreakingMultipleOfIsRejectedNamingTheDeclaration) {
  auto ctx = context(Backend::Interp);
  ASSERT_TRUE(ctx);
  const ir::Kernel k = row_sum();
  Bindings bind = {{"a", ctx->alloc(DType::F32, 5 * 12)}, {"out", ctx->alloc(DType::F32, 5)}};
  const std::string e = error_of([&] {
    ctx->dispatch_with_grid(k, DType::F32, bind, {{"rows", 5}, {"d", 12}}, {1, 1, 1}, {32, 1, 1});
  });
  expect_contains(e, "invalid dispatch of spec_row_sum");
  expect_contains(e, "constexpr 'd' = 12 breaks the fact multiple_of(8) that kernel spec_row_sum declares at ");
  expect_contains(e, "specialize_test.cpp:" + std::to_string(kRowSumLine));
  EXPECT_EQ(ctx->pipeline_cache_size(), 0u);  // rejected before anything was built
  // validate_dispatch says the same; a multiple of 8 passes.
  expect_contains(error_of([&] {
                    ctx->validate_dispatch(k, DType::F32, bind, {{"rows", 5}, {"d", 12}}, {1, 1, 1}, {32, 1, 1});
                  }),
                  "breaks the fact multiple_of(8)");
  EXPECT_EQ(error_of([&] { ctx->validate_dispatch(k, DType::F32, bind, {{"rows", 5}, {"d", 8}}, {1, 1, 1}, {32, 1, 1}); }), "");
}

// Known-bad: IRON_PASS_MUTATION=dispatch.skip_facts drops the fact checks. The dispatch the test
// above rejects then runs code built on a fact its value breaks: d % 8 was folded to 0, so the
// output is silently wrong (a miscompile, which is why the check exists).
void rem_body() {
  Expr d = constexpr_("d", u32, multiple_of(8));
  Buffer out = output("out", u32, {1});
  if_(thread_id(0) == 0u, [&] { out[0u] = d % 8u; });
}

TEST(Facts, SkipFactsMutationMiscompiles) {
  const ir::Kernel k = trace_kernel(KernelDecl{"spec_rem", &rem_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  auto run = [&](Context& ctx, uint32_t d) {
    Bindings bind = {{"out", ctx.alloc(DType::U32, 1)}};
    uint32_t v = 99;
    ctx.upload(bind[0].second, &v, 4);
    ctx.dispatch_with_grid(k, DType::F32, bind, {{"d", d}}, {1, 1, 1}, {32, 1, 1});
    ctx.synchronize();
    ctx.download(bind[0].second, &v, 4);
    return v;
  };
  {
    auto ctx = context(Backend::Interp);
    ASSERT_TRUE(ctx);
    EXPECT_EQ(run(*ctx, 16), 0u);
    expect_contains(error_of([&] { run(*ctx, 12); }), "breaks the fact multiple_of(8)");
  }
  ScopedEnv mutation("IRON_PASS_MUTATION", "dispatch.skip_facts");
  auto ctx = context(Backend::Interp);
  ASSERT_TRUE(ctx);
  EXPECT_EQ(run(*ctx, 12), 0u);  // 12 % 8 is 4: the unchecked dispatch computes a wrong answer
}

TEST(Facts, BufferAlignmentIsChecked) {
  const ir::Kernel k = row_sum();
  // Declared aligned(16): an address aligned to 8 (a view at an odd offset) breaks it.
  expect_contains(rt::buffer_fact_problem(k, 2, 8),
                  "buffer 'a' is bound at an address aligned to 8 bytes, which breaks the fact aligned(16) that kernel "
                  "spec_row_sum declares at ");
  EXPECT_EQ(rt::buffer_fact_problem(k, 2, 16), "");
  EXPECT_EQ(rt::buffer_fact_problem(k, 2, 256), "");
  // Undeclared: the 16 bytes every allocation has, which vectorize assumes.
  expect_contains(rt::buffer_fact_problem(k, 3, 4),
                  "buffer 'out' is bound at an address aligned to 4 bytes, which breaks the 16-byte alignment kernel "
                  "spec_row_sum assumes of every buffer");
  // Every backend's allocations meet it (CUDA: 256).
  for (Backend b : {Backend::Interp, Backend::Vulkan}) {
    auto ctx = context(b);
    if (!ctx) continue;
    ir::Kernel wide = k;
    wide.params[2].align = 256;
    Bindings bind = {{"a", ctx->alloc(DType::F32, 5 * 8)}, {"out", ctx->alloc(DType::F32, 5)}};
    EXPECT_EQ(error_of([&] { ctx->validate_dispatch(k, DType::F32, bind, {{"rows", 5}, {"d", 8}}, {1, 1, 1}, {32, 1, 1}); }), "");
    expect_contains(error_of([&] {
                      ctx->validate_dispatch(wide, DType::F32, bind, {{"rows", 5}, {"d", 8}}, {1, 1, 1}, {32, 1, 1});
                    }),
                    "buffer 'a' is bound at an address aligned to 16 bytes, which breaks the fact aligned(256)");
  }
}

// ---- Vulkan and CUDA: the value is baked into the binary and is part of the disk key ------------

// Two values stored by one Context are loaded from disk by the next; a third value is compiled.
// CUDA runs where a driver is (the H200), and is skipped here.
void disk_keys_by_value(Backend b) {
  ScopedEnv disk("IRON_NO_DISK_CACHE", nullptr);
  std::unique_ptr<Context> first;
  try {
    first = Context::create(b);
  } catch (const Error& e) {
    if (b == Backend::Cuda) GTEST_SKIP() << "no CUDA: " << e.what();
    FAIL() << "no " << backend_name(b) << " context: " << e.what();
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("iron_specialize_test_" + std::string(backend_name(b)) + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const ir::Kernel k = row_sum();
  first->set_disk_cache_dir(dir.string());
  row_sum_and_check(*first, k, 8);
  row_sum_and_check(*first, k, 32);
  Context::CacheStats s = first->cache_stats();
  EXPECT_EQ(s.disk_misses, 2u);
  EXPECT_EQ(s.disk_writes, 2u);
  first.reset();
  auto ctx = context(b);
  ASSERT_TRUE(ctx);
  ctx->set_disk_cache_dir(dir.string());
  row_sum_and_check(*ctx, k, 32);  // from disk
  row_sum_and_check(*ctx, k, 8);   // from disk
  row_sum_and_check(*ctx, k, 16);  // a value never built: compiled
  s = ctx->cache_stats();
  EXPECT_EQ(s.disk_hits, 2u);
  EXPECT_EQ(s.disk_misses, 1u);
  std::filesystem::remove_all(dir);
}

TEST(Specialization, VulkanBakesTheValueAndKeysTheDiskCacheByIt) { disk_keys_by_value(Backend::Vulkan); }
TEST(Specialization, CudaBakesTheValueAndKeysTheDiskCacheByIt) { disk_keys_by_value(Backend::Cuda); }

// ---- iron_rmsnorm_spec: what specialization buys (kernels/norm/rmsnorm_spec.cpp) -----------------

// The CUDA of a dispatch with d = 4096 and 256 threads: no loop over the row is left (the two
// steps are straight-line code, the loop of steps beyond the registers is gone), x is read once (16
// elements a thread, kept in registers), and every chunk of 8 bf16 is one 16-byte access (x, w,
// out); the source compiles for the H200. Without the value the loops stay.
TEST(Specialization, RmsnormSpecCudaIsUnrolledWith16ByteAccesses) {
  const ir::Kernel& k = kernel_ir("iron_rmsnorm_spec");
  ASSERT_EQ(k.params[1].name, "d");
  passes::LaunchFacts tg;
  tg.threadgroup[0] = 256;
  tg.threadgroup[1] = 1;
  tg.threadgroup[2] = 1;
  codegen::EmitOptions opts;
  opts.threadgroup[0] = 256;
  opts.threadgroup[1] = 1;
  opts.threadgroup[2] = 1;
  const ir::Kernel baked = passes::optimize(k, tg, spec_of({{1, 4096}}));
  const ir::Kernel rolled = passes::optimize(k, tg);
  // group_sum's loop over the lane groups' partials stays in both (the lane width is not a
  // launch fact); the two loops over the steps beyond the registers are gone.
  EXPECT_EQ(count_op(baked, ir::Op::For), 1u) << ir::print(baked);
  EXPECT_EQ(count_op(rolled, ir::Op::For), 3u) << ir::print(rolled);
  // Per step: x (8 loads), then w (8 loads) and out (8 stores): 2 steps x 3 groups of 8.
  EXPECT_EQ(count_vector_groups(baked, 8), 6u) << ir::print(baked);
  size_t x_loads = 0;
  ir::walk(baked, [&](ir::Id id) { x_loads += baked.insts[id].op == ir::Op::Load && baked.insts[id].param() == 3; });
  EXPECT_EQ(x_loads, 16u) << ir::print(baked);
  codegen::Emitted e = codegen::emit(baked, DType::BF16, codegen::Target::Cuda, opts);
  ASSERT_TRUE(e.ok()) << e.diags.render(baked);
  size_t wide = 0;
  for (size_t p = e.source.find("uint4"); p != std::string::npos; p = e.source.find("uint4", p + 1)) ++wide;
  EXPECT_GE(wide, 6u) << e.source;
  EXPECT_NE(e.source.find("__launch_bounds__(256) " + e.entry + "("), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("/ 4096.0f"), std::string::npos) << e.source;  // the mean divides by the constant
  rt::NvrtcResult r;
  try {
    r = rt::nvrtc_compile(e.source, e.entry, "sm_90a");
  } catch (const Error& err) {
    GTEST_SKIP() << "NVRTC unavailable: " << err.what();
  }
  EXPECT_TRUE(r.ok) << r.log << "\n" << e.source;
}

// d = 4095 breaks the kernel's multiple_of(8): rejected, naming the declaration, on every backend.
TEST(Specialization, RmsnormSpecRejectsARowLengthThatIsNotAMultipleOf8) {
  for (Backend b : {Backend::Interp, Backend::Vulkan}) {
    auto ctx = context(b);
    if (!ctx) continue;
    Bindings bind = {{"x", ctx->alloc(DType::F32, 7 * 4095)}, {"w", ctx->alloc(DType::F32, 4095)},
                     {"out", ctx->alloc(DType::F32, 7 * 4095)}};
    const std::string e = error_of([&] {
      ctx->dispatch_with_grid("iron_rmsnorm_spec", DType::F32, bind, {{"rows", 7}, {"d", 4095}, {"eps", 1e-6}}, {7, 1, 1},
                              {256, 1, 1});
    });
    expect_contains(e, "constexpr 'd' = 4095 breaks the fact multiple_of(8) that kernel iron_rmsnorm_spec declares at ");
    const ir::Kernel& k = kernel_ir("iron_rmsnorm_spec");
    expect_contains(k.where(k.params[1].loc), "kernels/norm/rmsnorm_spec.cpp:");
    expect_contains(e, k.where(k.params[1].loc));  // the line of d's declaration
  }
}

// The selector (rmsnorm_spec_for): one row per threadgroup, enough threads for the row to fit
// the register steps, at least 256 (fewer for a row of fewer chunks), within the device.
TEST(Specialization, RmsnormSpecSelectorRoutes) {
  auto plan = [](int64_t rows, int64_t d, uint32_t lane, uint32_t max_threads) {
    DeviceInfo dev;
    dev.lane_width = lane;
    dev.max_threads_per_group = max_threads;
    Call call;
    call.dtype = DType::BF16;
    call.args = {{"rows", rows}, {"d", d}, {"eps", 1e-6}};
    return plan_launch("iron_rmsnorm_spec", call, dev);
  };
  auto tg = [&](int64_t rows, int64_t d, uint32_t lane = 32, uint32_t max_threads = 1024) {
    const LaunchPlan p = plan(rows, d, lane, max_threads);
    EXPECT_EQ(p.steps.size(), 1u);
    EXPECT_EQ(p.steps[0].kernel, "iron_rmsnorm_spec");
    EXPECT_EQ(p.steps[0].grid.x, uint32_t(rows));
    return p.steps[0].threadgroup.x;
  };
  EXPECT_EQ(tg(1, 4096), 256u);      // decode: one row
  EXPECT_EQ(tg(4096, 4096), 256u);   // two register steps
  EXPECT_EQ(tg(4096, 8192), 256u);   // four
  EXPECT_EQ(tg(4096, 16384), 512u);  // more threads, still in registers
  EXPECT_EQ(tg(7, 1000), 128u);      // 125 chunks: 128 threads
  EXPECT_EQ(tg(1, 8), 32u);          // one chunk: one lane group
  EXPECT_EQ(tg(1, 8, 64), 64u);      // lane width 64
  EXPECT_EQ(tg(3, 4104, 64), 256u);
  EXPECT_EQ(tg(2, 16384, 32, 256), 256u);  // a device of 256 threads: the row past 8192 is read twice
  expect_contains(plan(2, 16384, 32, 256).reason, "the row past 8192 read twice");
  expect_contains(plan(2, 8192, 32, 1024).reason, "the row in registers");
  expect_contains(error_of([&] { plan(0, 4096, 32, 1024); }), "rows = 0, d = 4096: each must be in 1..2^32-1");
  // d = 4095 is planned as it is: the dispatch's fact check rejects it (RmsnormSpecRejects... above).
  EXPECT_EQ(plan(7, 4095, 32, 1024).steps[0].constexprs.at("d").u(), 4095u);
}

}  // namespace
}  // namespace iron
