// The vendor GEMM path: dense C = alpha * A B + beta * C through cuBLASLt on a CUDA Context's
// buffers and streams. cuBLASLt is opened at run time (dlopen; nothing links it), so Iron builds
// and starts without it and says why where it is missing. See docs/blas.md.
//
// Determinism: by default only algorithms whose split-K reduction is absent or a separate
// fixed-order pass are used (atomic, "in place" reduction into the output is filtered out of the
// heuristic), and the algorithm chosen for a problem is kept for the Context's lifetime, so equal
// inputs give bit-identical outputs run after run. IRON_GEMM_ATOMICS=1 allows the atomic
// reduction (for A/B timing only); IRON_GEMM_ALGO=N runs the N-th candidate of the heuristic's
// list (0 = its first choice) under the same atomics policy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iron/runtime.hpp"

namespace iron::blas {

enum class Order : uint8_t { RowMajor, ColMajor };

// One operand: a rows x cols matrix in `buffer` (from its first element; a view's offset counts).
// Element (r, c) is at r * ld + c (RowMajor) or c * ld + r (ColMajor). ld 0 means compact: cols
// for RowMajor, rows for ColMajor.
struct Matrix {
  DeviceBuffer buffer;
  Order order = Order::RowMajor;
  int64_t ld = 0;
};

// C[m, n] = alpha * A[m, k] B[k, n] + beta * C[m, n]. A and B: both f16 or both bf16; C: f32, f16 or
// bf16; accumulation in f32. beta = 0 never reads C (it may hold anything, NaN included).
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  Matrix a, b, c;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// The atomics policy and the algorithm pin. from_env() reads IRON_GEMM_ATOMICS ("0"/"1", unset =
// 0) and IRON_GEMM_ALGO (a non-negative integer, unset = the heuristic's first choice); any other
// value throws iron::Error naming the variable and the value.
struct Policy {
  bool allow_atomics = false;
  int algo = -1;  // -1: the heuristic's first candidate; N >= 0: the N-th candidate
  static Policy from_env();
};

// What ran: the candidate picked and its configuration as cuBLASLt reports it.
struct GemmReport {
  int candidate = 0;    // index into the candidates (IRON_GEMM_ALGO picks it)
  int candidates = 0;   // how many the heuristic offered under the policy
  int algo_id = 0;      // CUBLASLT_ALGO_CONFIG_ID
  int tile_id = 0;      // CUBLASLT_ALGO_CONFIG_TILE_ID
  int stages_id = 0;    // CUBLASLT_ALGO_CONFIG_STAGES_ID
  int splitk = 1;       // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  uint32_t reduction = 0;  // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME (0 none, 1 in place/atomic, 2, 4)
  uint64_t workspace_bytes = 0;
  bool deterministic = true;  // no in-place (atomic) split-K reduction
  // "cuBLASLt algo 21 tile 18 stages 8 split-K 1 (reduction none), candidate 0 of 8, deterministic"
  std::string text() const;
};

// Where cuBLASLt was found ("/usr/local/cuda/lib64/libcublasLt.so.13 (version 130000)"), or
// throws iron::Error saying where it was looked for. Loaded once per process. IRON_CUBLASLT_PATH
// names the file to use instead of searching.
std::string library();
// Whether gemm() can run on `ctx` (a CUDA Context and the library found); `why` says what is
// missing otherwise.
bool available(Context& ctx, std::string* why = nullptr);

// Checks the call (a clear iron::Error naming the argument and the rule: dtypes, sizes, leading
// dimensions, buffer extents, a Context that is not CUDA, an output overlapping an input), picks
// the algorithm (cached per problem and policy for this Context) and enqueues the GEMM on
// `stream`. Returns once enqueued; buffers are ordered like a kernel launch's.
GemmReport gemm(Context& ctx, const GemmArgs& args, const Stream& stream = {}, const Policy& policy = Policy::from_env());

// Validates and enqueues like gemm(), then times warmup + samples calls on the device clock (CUDA
// events around each call; opts.flush_l2 evicts L2 before every sample, outside the events).
Timing time_gemm(Context& ctx, const GemmArgs& args, const TimingOptions& opts, const Policy& policy = Policy::from_env(),
                 GemmReport* report = nullptr);

// The checks gemm() makes that need no device: the first problem found ("GemmArgs.a: lda 100 <
// k = 128 for a row-major A"), or "" when the call is well formed. Buffers are checked for
// presence, dtype and extent.
std::string check_args(const GemmArgs& args);

}  // namespace iron::blas
