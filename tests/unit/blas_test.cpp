// The vendor GEMM path (include/iron/blas.hpp): the policy variables, the argument checks and the
// refusal of a non-CUDA Context run everywhere; the GEMMs themselves run where a CUDA driver and
// cuBLASLt are (the H200) and are skipped elsewhere with the reason, never passed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <limits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <iron/blas.hpp>
#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "harness/runner.hpp"
#include "harness/vendor_bench.hpp"

using namespace iron;
using blas::GemmArgs;
using blas::Order;
using blas::Policy;

namespace {

// Sets an environment variable for one scope and restores it afterwards.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvVar() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(BlasPolicy, ReadsTheEnvironment) {
  {
    EnvVar a("IRON_GEMM_ATOMICS", nullptr), b("IRON_GEMM_ALGO", nullptr);
    Policy p = Policy::from_env();
    EXPECT_FALSE(p.allow_atomics);
    EXPECT_EQ(p.algo, -1);
  }
  {
    EnvVar a("IRON_GEMM_ATOMICS", "1"), b("IRON_GEMM_ALGO", "3");
    Policy p = Policy::from_env();
    EXPECT_TRUE(p.allow_atomics);
    EXPECT_EQ(p.algo, 3);
  }
  {
    EnvVar a("IRON_GEMM_ATOMICS", "0"), b("IRON_GEMM_ALGO", "0");
    Policy p = Policy::from_env();
    EXPECT_FALSE(p.allow_atomics);
    EXPECT_EQ(p.algo, 0);
  }
}

TEST(BlasPolicy, BadValuesNameTheVariable) {
  for (const char* bad : {"yes", "2", "-1", " 1"}) {
    EnvVar a("IRON_GEMM_ATOMICS", bad), b("IRON_GEMM_ALGO", nullptr);
    EXPECT_EQ(error_of([] { Policy::from_env(); }),
              "IRON_GEMM_ATOMICS='" + std::string(bad) + "' is not 0 or 1 (1 allows cuBLASLt's atomic split-K reduction)");
  }
  for (const char* bad : {"-1", "x", "1.5", "3 ", "99999999"}) {
    EnvVar a("IRON_GEMM_ATOMICS", nullptr), b("IRON_GEMM_ALGO", bad);
    EXPECT_EQ(error_of([] { Policy::from_env(); }),
              "IRON_GEMM_ALGO='" + std::string(bad) +
                  "' is not a non-negative integer (the index of a candidate in cuBLASLt's heuristic list, 0 = its first choice)");
  }
}

class BlasArgs : public ::testing::Test {
 protected:
  void SetUp() override { ctx_ = Context::create(Backend::Interp); }
  // A well-formed 8 x 16 x 32 call: A row-major bf16 [8, 32], B col-major bf16, C row-major f32.
  GemmArgs good() {
    GemmArgs g;
    g.m = 8, g.n = 16, g.k = 32;
    g.a = {ctx_->alloc(DType::BF16, 8 * 32), Order::RowMajor, 0};
    g.b = {ctx_->alloc(DType::BF16, 32 * 16), Order::ColMajor, 0};
    g.c = {ctx_->alloc(DType::F32, 8 * 16), Order::RowMajor, 0};
    return g;
  }
  std::unique_ptr<Context> ctx_;
};

TEST_F(BlasArgs, AWellFormedCallPasses) { EXPECT_EQ(blas::check_args(good()), ""); }

TEST_F(BlasArgs, EachRuleNamesTheArgument) {
  GemmArgs g = good();
  g.k = 0;
  EXPECT_EQ(blas::check_args(g), "m, n and k must be positive (m=8 n=16 k=0)");
  g = good();
  g.a.buffer = {};
  EXPECT_EQ(blas::check_args(g), "GemmArgs.a (8 x 32, row-major): no buffer");
  g = good();
  g.a.buffer = ctx_->alloc(DType::F32, 8 * 32);
  EXPECT_EQ(blas::check_args(g), "GemmArgs.a (8 x 32, row-major): dtype f32 (A and B must be f16 or bf16)");
  g = good();
  g.c.buffer = ctx_->alloc(DType::I32, 8 * 16);
  EXPECT_EQ(blas::check_args(g), "GemmArgs.c (8 x 16, row-major): dtype i32 (C must be f32, f16 or bf16)");
  g = good();
  g.b.buffer = ctx_->alloc(DType::F16, 32 * 16);
  EXPECT_EQ(blas::check_args(g), "GemmArgs.a is bf16 but GemmArgs.b is f16 (A and B must have one dtype)");
  g = good();
  g.c.buffer = ctx_->alloc(DType::F16, 8 * 16);
  EXPECT_EQ(blas::check_args(g),
            "GemmArgs.c is f16 but A and B are bf16 (C must be f32 or bf16: cuBLASLt has no bf16 x bf16 -> f16 GEMM)");
  g = good();
  g.a.ld = 31;
  EXPECT_EQ(blas::check_args(g),
            "GemmArgs.a (8 x 32, row-major): ld 31 < 32 columns (a row-major matrix needs ld >= its columns, a "
            "col-major one ld >= its rows)");
  g = good();
  g.b.ld = 16;  // col-major B [32, 16] needs ld >= 32 rows
  EXPECT_EQ(blas::check_args(g),
            "GemmArgs.b (32 x 16, col-major): ld 16 < 32 rows (a row-major matrix needs ld >= its columns, a "
            "col-major one ld >= its rows)");
  g = good();
  g.c.ld = 17;  // rows 0..7 at stride 17: 7 * 17 + 16 = 135 elements > 128
  EXPECT_EQ(blas::check_args(g), "GemmArgs.c (8 x 16, row-major): needs 135 elements with ld 17 but the buffer holds 128");
  g = good();
  g.a.ld = -4;
  EXPECT_EQ(blas::check_args(g), "GemmArgs.a (8 x 32, row-major): ld -4 is negative");
  g = good();
  g.b.buffer = ctx_->view(g.b.buffer, 1, 32 * 16 - 1);  // one element short
  EXPECT_EQ(blas::check_args(g), "GemmArgs.b (32 x 16, col-major): needs 512 elements with ld 32 but the buffer holds 511");
}

TEST_F(BlasArgs, ANonCudaContextIsRefused) {
  EXPECT_EQ(error_of([&] { blas::gemm(*ctx_, good(), {}, Policy{}); }),
            "iron::blas::gemm: cuBLASLt runs on a CUDA Context; this one is interp (" + ctx_->info().name + ")");
  std::string why;
  EXPECT_FALSE(blas::available(*ctx_, &why));
  EXPECT_EQ(why, "cuBLASLt runs on a CUDA Context; this one is interp");
  // A bad call is reported before the backend: the checks need no device.
  GemmArgs g = good();
  g.m = -1;
  EXPECT_EQ(error_of([&] { blas::gemm(*ctx_, g, {}, Policy{}); }),
            "iron::blas::gemm: m, n and k must be positive (m=-1 n=16 k=32)");
}

// ---------------------------------------------------------------------------------------------
// The sampled oracle (the benchmark oracle at production shapes): fixed indices, the first and
// the last always in; sampled elements compared, every element required to be finite.

TEST(HarnessSampledOracle, IndicesAreFixedSortedAndIncludeBothEnds) {
  const std::vector<size_t> a = oracle_sample_indices("out", 1000003, 64);
  EXPECT_EQ(a, oracle_sample_indices("out", 1000003, 64));
  ASSERT_EQ(a.size(), 64u);
  EXPECT_EQ(a.front(), 0u);
  EXPECT_EQ(a.back(), 1000002u);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_LT(a[i - 1], a[i]);
  EXPECT_NE(a, oracle_sample_indices("c", 1000003, 64));  // seeded by the output's name
  EXPECT_EQ(oracle_sample_indices("out", 5, 64), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(oracle_sample_indices("out", 0, 64), std::vector<size_t>{});
  EXPECT_EQ(error_of([] { TestSetup(DType::F32).sampled_oracle(1, {}); }),
            "sampled_oracle: sample at least 2 elements (the first and the last), not 1");
}

namespace {
// iron_add over n elements with a sampled oracle; counts the element oracle's calls.
TestSetup sampled_add(size_t n, size_t sample, size_t* calls) {
  TestSetup s(DType::F32);
  s.in("a", fixture::uniform(n, -4, 4, 1)).in("b", fixture::uniform(n, -4, 4, 2)).out("out", n);
  s.constexprs({{"n", uint32_t(n)}}).grid({uint32_t((n + 255) / 256), 1, 1}, {256, 1, 1}).accumulation(1);
  s.sampled_oracle(sample, [calls](const Tensors& in, const std::string& out, size_t i) {
    EXPECT_EQ(out, "out");
    ++*calls;
    return in.at("a")[i] + in.at("b")[i];
  });
  return s;
}
// Writes `values` (f32) into output `g` with its guard band intact.
void put(Context& ctx, const GuardedBuffer& g, const std::vector<float>& values) {
  std::vector<uint32_t> words(g.count + kGuardElements, kGuardWord[1]);
  std::memcpy(words.data(), values.data(), values.size() * 4);
  ctx.upload(g.buffer, words.data(), words.size() * 4);
}
}  // namespace

TEST(HarnessSampledOracle, ComparesTheSampleAndRequiresEveryElementFinite) {
  auto ctx = Context::create(Backend::Interp);
  const size_t n = 100000;
  size_t calls = 0;
  TestSetup s = sampled_add(n, 256, &calls);
  Resident r = make_resident(*ctx, kernel_ir("iron_add"), s, DType::F32);
  EXPECT_EQ(calls, 256u);  // the oracle ran for the sample only
  ctx->dispatch_with_grid(kernel_ir("iron_add"), DType::F32, r.bindings, s.scalars(), s.grid_size(), s.threadgroup());
  Correctness ok = check_outputs(*ctx, r, s, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(ok.pass) << ok.message;
  EXPECT_EQ(ok.compared, 256u);

  const std::vector<double> a = fixture::uniform(n, -4, 4, 1), b = fixture::uniform(n, -4, 4, 2);
  std::vector<float> right(n);
  for (size_t i = 0; i < n; ++i) right[i] = float(a[i]) + float(b[i]);
  const std::vector<size_t> at = oracle_sample_indices("out", n, 256);
  const size_t sampled = at[100];
  size_t unsampled = sampled + 1;
  while (std::binary_search(at.begin(), at.end(), unsampled)) ++unsampled;

  std::vector<float> wrong = right;
  wrong[sampled] += 1.0f;  // a sampled element off: caught, with the index
  put(*ctx, r.outputs[0], wrong);
  Correctness bad = check_outputs(*ctx, r, s, std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(bad.pass);
  EXPECT_NE(bad.message.find("output 'out'[" + std::to_string(sampled) + "]"), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find("sampled oracle, 256 of 100000 elements"), std::string::npos) << bad.message;

  std::vector<float> unwritten = right;
  unwritten[unsampled] = std::nanf("");  // an element never written (outputs start as NaN): caught
  put(*ctx, r.outputs[0], unwritten);
  Correctness nan = check_outputs(*ctx, r, s, std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(nan.pass);
  EXPECT_NE(nan.message.find("output 'out'[" + std::to_string(unsampled) + "] = nan (not finite"), std::string::npos)
      << nan.message;
}

// ---------------------------------------------------------------------------------------------
// On a CUDA device with cuBLASLt.

namespace {

struct Host {
  std::vector<double> values;  // the values as rounded to the buffer's dtype
  DeviceBuffer buf;
};

// `count` values uniform in [-1, 1], rounded to `t`, uploaded into a buffer of `count + extra`
// elements (the extra ones hold 7.0, which no correct result reads) from element `offset` of a
// larger allocation.
Host upload(Context& ctx, DType t, size_t count, uint64_t seed, size_t offset = 0) {
  Host h;
  h.values = fixture::uniform(count, -1.0, 1.0, seed);
  std::vector<double> all(offset + count, 7.0);
  for (size_t i = 0; i < count; ++i) all[offset + i] = h.values[i] = fixture::round_to(t, h.values[i]);
  std::vector<unsigned char> bytes(all.size() * dtype_size(t));
  num::encode(t, all.data(), bytes.data(), all.size());
  DeviceBuffer whole = ctx.alloc(t, all.size());
  ctx.upload(whole, bytes.data(), bytes.size());
  h.buf = offset ? ctx.view(whole, offset, count) : whole;
  return h;
}

std::vector<double> download(Context& ctx, const DeviceBuffer& b) {
  std::vector<unsigned char> bytes(b.bytes());
  ctx.download(b, bytes.data(), bytes.size());
  std::vector<double> out(b.count());
  num::decode(b.dtype(), bytes.data(), out.data(), out.size());
  return out;
}

std::vector<unsigned char> raw(Context& ctx, const DeviceBuffer& b) {
  std::vector<unsigned char> bytes(b.bytes());
  ctx.download(b, bytes.data(), bytes.size());
  return bytes;
}

size_t at(Order o, int64_t ld, int64_t r, int64_t c) { return size_t(o == Order::RowMajor ? r * ld + c : c * ld + r); }

class BlasCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      ctx_ = Context::create(Backend::Cuda);
    } catch (const Error& e) {
      GTEST_SKIP() << "cuda unavailable: " << e.what();
    }
    std::string why;
    if (!blas::available(*ctx_, &why)) GTEST_SKIP() << "cuBLASLt unavailable: " << why;
  }
  std::unique_ptr<Context> ctx_;
};

}  // namespace

// Every storage order of A, B and C, padded leading dimensions, a view at an odd element offset,
// odd M/N/K: each output within the f32 accumulation bound of an f64 reference.
TEST_F(BlasCuda, MatchesAnF64ReferenceInEveryLayout) {
  const int64_t m = 37, n = 45, k = 70;
  for (DType in : {DType::BF16, DType::F16})
    for (DType out : {DType::F32, DType::BF16, DType::F16})
      for (int orders = 0; orders < 8; ++orders) {
        if (out != DType::F32 && out != in) continue;  // refused by check_args (BlasArgs.EachRuleNamesTheArgument)
        const Order oa = (orders & 1) ? Order::ColMajor : Order::RowMajor;
        const Order ob = (orders & 2) ? Order::ColMajor : Order::RowMajor;
        const Order oc = (orders & 4) ? Order::ColMajor : Order::RowMajor;
        const int64_t lda = (oa == Order::RowMajor ? k : m) + 3, ldb = (ob == Order::RowMajor ? n : k) + 5,
                      ldc = (oc == Order::RowMajor ? n : m) + 1;
        const size_t na = size_t((oa == Order::RowMajor ? m : k) * lda), nb = size_t((ob == Order::RowMajor ? k : n) * ldb),
                     nc = size_t((oc == Order::RowMajor ? m : n) * ldc);
        Host a = upload(*ctx_, in, na, 11 + orders, 3), b = upload(*ctx_, in, nb, 29 + orders);
        Host c = upload(*ctx_, out, nc, 5);
        GemmArgs g;
        g.m = m, g.n = n, g.k = k;
        g.a = {a.buf, oa, lda};
        g.b = {b.buf, ob, ldb};
        g.c = {c.buf, oc, ldc};
        blas::GemmReport rep = blas::gemm(*ctx_, g, {}, Policy{});
        std::vector<double> got = download(*ctx_, c.buf);
        const double p = out == DType::F32 ? 24 : out == DType::F16 ? 11 : 8;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0, mag = 0;
            for (int64_t q = 0; q < k; ++q) {
              const double x = a.values[at(oa, lda, i, q)] * b.values[at(ob, ldb, q, j)];
              want += x, mag += std::fabs(x);
            }
            // f32 accumulation (k roundings of at most 2^-24 of the running magnitude) and one
            // rounding to the output format.
            const double bound = double(k) * std::ldexp(mag, -24) + std::ldexp(std::fabs(want), -int(p)) + 1e-30;
            const double err = std::fabs(got[at(oc, ldc, i, j)] - want);
            ASSERT_LE(err, bound) << dtype_name(in) << " -> " << dtype_name(out) << ", orders " << orders << ", C[" << i
                                  << ", " << j << "], " << rep.text();
          }
        // The padding of C is never written.
        for (int64_t i = 0; i < (oc == Order::RowMajor ? m : n); ++i)
          for (int64_t j = (oc == Order::RowMajor ? n : m); j < ldc; ++j)
            ASSERT_EQ(got[size_t(i * ldc + j)], c.values[size_t(i * ldc + j)]) << "padding of C written";
      }
}

// beta = 1 accumulates into C (a residual add on the vendor path); beta = 0 ignores NaN in C.
TEST_F(BlasCuda, BetaAccumulatesAndBetaZeroNeverReadsC) {
  const int64_t m = 16, n = 24, k = 32;
  Host a = upload(*ctx_, DType::BF16, size_t(m * k), 1), b = upload(*ctx_, DType::BF16, size_t(k * n), 2);
  Host c = upload(*ctx_, DType::F32, size_t(m * n), 3);
  GemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.a = {a.buf, Order::RowMajor, 0};
  g.b = {b.buf, Order::RowMajor, 0};
  g.c = {c.buf, Order::RowMajor, 0};
  g.beta = 1.0f;
  blas::gemm(*ctx_, g, {}, Policy{});
  std::vector<double> got = download(*ctx_, c.buf);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = c.values[size_t(i * n + j)];
      for (int64_t q = 0; q < k; ++q) want += a.values[size_t(i * k + q)] * b.values[size_t(q * n + j)];
      ASSERT_NEAR(got[size_t(i * n + j)], want, 1e-4) << "C[" << i << ", " << j << "]";
    }
  std::vector<float> nan(size_t(m * n), std::nanf(""));
  ctx_->upload(c.buf, nan.data(), nan.size() * 4);
  g.beta = 0.0f;
  blas::gemm(*ctx_, g, {}, Policy{});
  for (double v : download(*ctx_, c.buf)) ASSERT_TRUE(std::isfinite(v));
}

// Bit-exact repeats: the seeds' split-K shapes, the N = 96 / K = 5120 decode shapes and a long-K
// shape (where split-K pays most), 100 runs each, every byte equal to the first run's.
TEST_F(BlasCuda, RepeatsAreBitExactOver100Runs) {
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{96, 512, 2048}, Shape{256, 512, 2048}, Shape{1, 96, 5120}, Shape{26, 96, 5120},
                        Shape{49, 96, 5120}, Shape{256, 96, 5120}, Shape{64, 64, 65536}})
    for (DType out : {DType::BF16, DType::F32}) {
      Host a = upload(*ctx_, DType::BF16, size_t(s.m * s.k), 7), b = upload(*ctx_, DType::BF16, size_t(s.k * s.n), 8);
      DeviceBuffer c = ctx_->alloc(out, size_t(s.m * s.n));
      GemmArgs g;
      g.m = s.m, g.n = s.n, g.k = s.k;
      g.a = {a.buf, Order::RowMajor, 0};
      g.b = {b.buf, Order::ColMajor, 0};  // B as a weight [N, K] row-major: the inference layout
      g.c = {c, Order::RowMajor, 0};
      const blas::GemmReport rep = blas::gemm(*ctx_, g, {}, Policy{});
      EXPECT_TRUE(rep.deterministic) << rep.text();
      const std::vector<unsigned char> first = raw(*ctx_, c);
      for (int run = 1; run <= 100; ++run) {
        std::vector<unsigned char> zero(c.bytes(), 0);
        ctx_->upload(c, zero.data(), zero.size());
        blas::gemm(*ctx_, g, {}, Policy{});
        ASSERT_EQ(raw(*ctx_, c), first) << "run " << run << " differs: m=" << s.m << " n=" << s.n << " k=" << s.k << " "
                                        << dtype_name(out) << ", " << rep.text();
      }
      std::cout << "m=" << s.m << " n=" << s.n << " k=" << s.k << " -> " << dtype_name(out) << ": " << rep.text() << "\n";
    }
}

// Under the default policy no candidate uses the in-place (atomic) reduction, and every candidate
// can be pinned; one past the last is a clear error.
TEST_F(BlasCuda, EveryCandidateRespectsTheAtomicsPolicy) {
  const int64_t m = 96, n = 512, k = 2048;
  Host a = upload(*ctx_, DType::BF16, size_t(m * k), 1), b = upload(*ctx_, DType::BF16, size_t(k * n), 2);
  DeviceBuffer c = ctx_->alloc(DType::BF16, size_t(m * n));
  GemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.a = {a.buf, Order::RowMajor, 0};
  g.b = {b.buf, Order::RowMajor, 0};
  g.c = {c, Order::RowMajor, 0};
  const int total = blas::gemm(*ctx_, g, {}, Policy{}).candidates;
  ASSERT_GE(total, 1);
  for (int i = 0; i < total; ++i) {
    const blas::GemmReport r = blas::gemm(*ctx_, g, {}, Policy{false, i});
    EXPECT_EQ(r.candidate, i);
    EXPECT_TRUE(r.deterministic) << r.text();
    EXPECT_EQ(r.reduction & 1u, 0u) << r.text();
  }
  ctx_->synchronize();
  EXPECT_NE(error_of([&] { blas::gemm(*ctx_, g, {}, Policy{false, total}); })
                .find("iron::blas::gemm: IRON_GEMM_ALGO=" + std::to_string(total) + " but cuBLASLt offers " +
                      std::to_string(total) + " candidate(s)"),
            std::string::npos);
  // With atomics allowed the call still runs (possibly on an atomic algorithm).
  const blas::GemmReport any = blas::gemm(*ctx_, g, {}, Policy{true, -1});
  EXPECT_GE(any.candidates, total) << any.text();
  ctx_->synchronize();
}

// A GEMM on a created stream is ordered after an upload on that stream and before a download.
TEST_F(BlasCuda, RunsOnAStreamAndRefusesOverlap) {
  const int64_t m = 8, n = 8, k = 16;
  Stream s = ctx_->create_stream();
  std::vector<uint16_t> ones(size_t(m * k), 0x3f80);  // bf16 1.0
  DeviceBuffer a = ctx_->alloc(DType::BF16, ones.size()), b = ctx_->alloc(DType::BF16, ones.size());
  ctx_->upload(a, ones.data(), ones.size() * 2, s);
  ctx_->upload(b, ones.data(), ones.size() * 2, s);
  DeviceBuffer c = ctx_->alloc(DType::F32, size_t(m * n));
  GemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.a = {a, Order::RowMajor, 0};
  g.b = {b, Order::ColMajor, 0};
  g.c = {c, Order::RowMajor, 0};
  blas::gemm(*ctx_, g, s, Policy{});
  for (double v : download(*ctx_, c)) ASSERT_EQ(v, double(k));
  // C over A's memory (a bf16 view of A's allocation): refused before anything runs.
  DeviceBuffer big = ctx_->alloc(DType::BF16, 1024);
  GemmArgs h = g;
  h.a = {ctx_->view(big, 0, size_t(m * k)), Order::RowMajor, 0};
  h.c = {ctx_->view(big, 64, size_t(m * n)), Order::RowMajor, 0};
  EXPECT_EQ(error_of([&] { blas::gemm(*ctx_, h, s, Policy{}); }),
            "iron::blas::gemm: GemmArgs.c overlaps GemmArgs.a (the output is written while the inputs are read; use "
            "separate memory)");
}

// ---------------------------------------------------------------------------------------------
// Finding the library. The load is once per process, so each rule runs in a process of its own:
// tests/CMakeLists.txt runs these with IRON_CUBLASLT_PATH set (blas.library_pinned_missing) and
// without it; in the ordinary run they skip when the variable says otherwise.

TEST(BlasLibrary, APinnedPathThatDoesNotExistIsNamed) {
  const char* pinned = std::getenv("IRON_CUBLASLT_PATH");
  if (!pinned || std::string(pinned) != "/nonexistent/libcublasLt.so.13")
    GTEST_SKIP() << "runs as ctest blas.library_pinned_missing (IRON_CUBLASLT_PATH=/nonexistent/libcublasLt.so.13)";
  const std::string e = error_of([] { blas::library(); });
  EXPECT_EQ(e.rfind("cuBLASLt not found: IRON_CUBLASLT_PATH=/nonexistent/libcublasLt.so.13 could not be loaded:\n  "
                    "/nonexistent/libcublasLt.so.13: cannot open shared object file",
                    0),
            0u)
      << e;
}

// Where the CUDA toolkit is installed (this machine, the H200), the search finds cuBLASLt 12 or
// 13 and names the file it loaded.
TEST(BlasLibrary, TheToolkitsLibraryIsFound) {
  if (std::getenv("IRON_CUBLASLT_PATH")) GTEST_SKIP() << "IRON_CUBLASLT_PATH is set: the search is not used";
  if (access("/usr/local/cuda/lib64/libcublasLt.so.13", R_OK) != 0 && access("/usr/local/cuda/lib64/libcublasLt.so.12", R_OK) != 0)
    GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  const std::string where = blas::library();
  EXPECT_NE(where.find("libcublasLt.so.1"), std::string::npos) << where;
  EXPECT_NE(where.find("(version 1"), std::string::npos) << where;
}

// The cublaslt_gemm rows of `iron bench`: the shapes, and (on CUDA) a row's sampled oracle passing
// for cuBLASLt's output.
TEST(BlasVendorBench, TheIssueShapesAndTheFilter) {
  EXPECT_EQ(vendor::jobs("").size(), 14u);
  const std::vector<vendor::Job> decode = vendor::jobs("_n14336_k4096");
  ASSERT_EQ(decode.size(), 6u);
  EXPECT_EQ(decode.front().name, "m1_n14336_k4096");
  EXPECT_EQ(decode.back().name, "m2048_n14336_k4096");
  EXPECT_EQ(vendor::jobs("cublaslt_gemm/m4096_n4096_k4096").size(), 1u);
  EXPECT_TRUE(vendor::jobs("iron_gemm").empty());
}

TEST_F(BlasCuda, AVendorBenchRowPassesItsSampledOracle) {
  for (const vendor::Job& j : vendor::jobs("_k2048")) {
    vendor::Run run(*ctx_, j);
    const Correctness ok = run.check();
    EXPECT_TRUE(ok.pass) << j.name << ": " << ok.message << " (" << run.report() << ")";
    EXPECT_EQ(ok.compared, 4096u) << j.name;
    TimingOptions o;
    o.warmup = 2, o.samples = 3;
    EXPECT_EQ(run.time(o).samples_us.size(), 3u);
  }
}
