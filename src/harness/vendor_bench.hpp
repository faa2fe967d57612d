// The vendor GEMM rows of `iron bench` (kernel "cublaslt_gemm"): cuBLASLt through Iron's runtime
// (include/iron/blas.hpp) at issue 12's performance shapes, checked by the sampled f64 oracle
// before they are timed, recorded like any kernel's bench so `iron diff` lines them up with
// iron_gemm and the peers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/runner.hpp"

namespace iron::vendor {

constexpr const char* kKernel = "cublaslt_gemm";

struct Job {
  std::string name;   // "m4096_n4096_k4096": the bench name iron_gemm and the peers use
  std::string sweep;  // rows of one sweep share N and K; x = M
  int64_t m = 0, n = 0, k = 0;
};
// The shapes whose kernel/bench name matches `filter` (empty: all).
std::vector<Job> jobs(const std::string& filter);

// One bench: C[M, N] bf16 = A[M, K] bf16 (row-major) x W[N, K]^T bf16 (row-major weights), f32
// accumulation. The constructor uploads the inputs and runs the GEMM once; check() compares 4096
// sampled outputs with f64 dot products (every output finite); time() times cuBLASLt calls.
class Run {
 public:
  Run(Context& ctx, const Job& job);
  ~Run();
  Correctness check();
  Timing time(const TimingOptions& opts);
  double bytes() const;
  double flops() const;
  const std::string& report() const { return report_; }  // the algorithm cuBLASLt runs

 private:
  struct State;
  std::unique_ptr<State> st_;
  std::string report_;
};

}  // namespace iron::vendor
