#include "harness/vendor_bench.hpp"

#include <algorithm>
#include <cmath>

#include "iron/blas.hpp"

namespace iron::vendor {

namespace {
// Samples per output: the first, the last and 4094 seeded draws. At K = 8192 that is 33 M
// multiply-adds in f64 on the host (well under a second) instead of 5.5e11 for the whole output.
constexpr size_t kSample = 4096;
// Normwise, as the GEMM peers check: |device - oracle| / max |oracle over the sample|. A bf16
// output alone is off by up to 2^-9 of its value.
constexpr double kTolerance = 1e-2;
}  // namespace

std::vector<Job> jobs(const std::string& filter) {
  struct Shape {
    int64_t m, n, k;
    const char* sweep;
  };
  static const Shape shapes[] = {
      {96, 512, 2048, "gemm_n512_k2048"},    {256, 512, 2048, "gemm_n512_k2048"},
      {1, 96, 5120, "gemm_n96_k5120"},       {26, 96, 5120, "gemm_n96_k5120"},
      {49, 96, 5120, "gemm_n96_k5120"},      {256, 96, 5120, "gemm_n96_k5120"},
      {1, 14336, 4096, "gemm_n14336_k4096"}, {2, 14336, 4096, "gemm_n14336_k4096"},
      {4, 14336, 4096, "gemm_n14336_k4096"}, {8, 14336, 4096, "gemm_n14336_k4096"},
      {16, 14336, 4096, "gemm_n14336_k4096"}, {2048, 14336, 4096, "gemm_n14336_k4096"},
      {4096, 4096, 4096, "gemm_square"},     {8192, 8192, 8192, "gemm_square"},
  };
  std::vector<Job> out;
  for (const Shape& s : shapes) {
    Job j;
    j.name = "m" + std::to_string(s.m) + "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k);
    j.sweep = s.sweep;
    j.m = s.m, j.n = s.n, j.k = s.k;
    const std::string full = std::string(kKernel) + "/" + j.name;
    if (filter.empty() || full.find(filter) != std::string::npos) out.push_back(j);
  }
  return out;
}

struct Run::State {
  Context* ctx = nullptr;
  Job job;
  TestSetup setup{DType::BF16};
  Resident res;
  blas::GemmArgs args;
};

Run::Run(Context& ctx, const Job& job) : st_(std::make_unique<State>()) {
  State& s = *st_;
  s.ctx = &ctx;
  s.job = job;
  const int64_t m = job.m, n = job.n, k = job.k;
  // Bounded fixtures as the GEMM tests use them: uniform in [-1, 1], rounded to bf16 once.
  s.setup.in("a", fixture::uniform(size_t(m * k), -1.0, 1.0, 101));
  s.setup.in("w", fixture::uniform(size_t(n * k), -1.0, 1.0, 202));
  s.setup.out("c", size_t(m * n));
  s.setup.sampled_oracle(kSample, [n, k](const Tensors& in, const std::string&, size_t index) {
    const int64_t row = int64_t(index) / n, col = int64_t(index) % n;
    const double* a = in.at("a").data() + row * k;
    const double* w = in.at("w").data() + col * k;
    double acc = 0;
    for (int64_t q = 0; q < k; ++q) acc += a[q] * w[q];
    return acc;
  });
  s.res = make_resident(ctx, [](const std::string&, const char*) { return DType::BF16; }, s.setup);
  auto buffer = [&](const char* name) {
    for (const auto& [bn, b] : s.res.bindings)
      if (bn == name) return b;
    throw Error(std::string("vendor bench: no buffer ") + name);
  };
  s.args.m = m, s.args.n = n, s.args.k = k;
  s.args.a = {buffer("a"), blas::Order::RowMajor, k};
  s.args.b = {buffer("w"), blas::Order::ColMajor, k};  // B[k, n] = W[n, k]^T: column-major with ld k
  s.args.c = {buffer("c"), blas::Order::RowMajor, n};
  report_ = blas::gemm(ctx, s.args).text();
  ctx.synchronize();
}

Run::~Run() = default;

Correctness Run::check() {
  double floor = 0;
  for (double v : st_->res.expected.at("c")) floor = std::max(floor, std::fabs(v));
  return check_outputs(*st_->ctx, st_->res, std::max(floor, 1e-30), kTolerance);
}

Timing Run::time(const TimingOptions& opts) { return blas::time_gemm(*st_->ctx, st_->args, opts); }

double Run::bytes() const {
  const Job& j = st_->job;
  return double(j.m * j.k + j.n * j.k + j.m * j.n) * 2.0;
}

double Run::flops() const {
  const Job& j = st_->job;
  return 2.0 * double(j.m) * double(j.n) * double(j.k);
}

}  // namespace iron::vendor
