// Kernel benchmarks. IRON_BENCH registers a benchmark next to its kernel: a function of the
// dtype returning a BenchSetup — the inputs (uploaded once and kept resident), the outputs, the
// dispatch, the oracle that must PASS at this exact shape before anything is timed, and the
// bytes moved and FLOPs the kernel performs (declared, so metrics never depend on the timing).
#pragma once

#include <string>

#include "iron/harness.hpp"

namespace iron {

class BenchSetup {
 public:
  explicit BenchSetup(Instantiation in) : setup_(in) {}
  BenchSetup& in(const std::string& name, std::vector<double> values) { return setup_.in(name, std::move(values)), *this; }
  BenchSetup& out(const std::string& name, size_t count) { return setup_.out(name, count), *this; }
  BenchSetup& constexprs(const Constexprs& values) { return setup_.constexprs(values), *this; }
  BenchSetup& grid(Dim3 grid, Dim3 threadgroup) { return setup_.grid(grid, threadgroup), *this; }
  BenchSetup& call(const Constexprs& args) { return setup_.call(args), *this; }  // a family's logical call
  BenchSetup& oracle(std::function<void(const Tensors&, Tensors&)> fn) { return setup_.oracle(std::move(fn)), *this; }
  // Production shapes: `count` sampled elements against a one-element f64 oracle (TestSetup).
  BenchSetup& sampled_oracle(size_t count, TestSetup::ElementOracle fn) {
    return setup_.sampled_oracle(count, std::move(fn)), *this;
  }
  BenchSetup& error_floor(double floor) { return setup_.error_floor(floor), *this; }
  // Bytes the kernel must move to and from memory, and the floating-point operations it does.
  BenchSetup& bytes(double moved) { return bytes_ = moved, *this; }
  BenchSetup& flops(double count) { return flops_ = count, *this; }
  // Benchmarks sharing a sweep name form a latency-vs-size series with x = `size`.
  BenchSetup& sweep(const std::string& name, double size) { return sweep_ = name, size_ = size, *this; }

  const TestSetup& test() const { return setup_; }
  double bytes() const { return bytes_; }
  double flops() const { return flops_; }
  const std::string& sweep_name() const { return sweep_; }
  double sweep_size() const { return size_; }

 private:
  TestSetup setup_;
  double bytes_ = 0, flops_ = 0, size_ = 0;
  std::string sweep_;
};

using BenchBody = BenchSetup (*)(DType dt, DType wt);  // wt: what W is (Void: no W)

struct BenchDecl {
  const char* kernel;
  const char* name;
  BenchBody body;
  std::vector<DtypeTolerance> dtypes;  // tolerance of the correctness check before timing
  const char* file;
  int line;
};

int register_bench(const BenchDecl& decl);
std::vector<const BenchDecl*> registered_benches();  // sorted by kernel, then name

}  // namespace iron

// IRON_BENCH(iron_add, n16m, {f32, 1e-6}, {f16, 1e-3}) { return BenchSetup(dt)...; }
#define IRON_BENCH(kernel, bench_name, ...)                                                           \
  static ::iron::BenchSetup IRON_DETAIL_CAT(iron_bench_, IRON_DETAIL_CAT(kernel, __LINE__))(::iron::DType dt, ::iron::DType wt); \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_bench_reg_, IRON_DETAIL_CAT(kernel, __LINE__)) =     \
      ::iron::register_bench(::iron::BenchDecl{#kernel, #bench_name,                                  \
                                               &IRON_DETAIL_CAT(iron_bench_, IRON_DETAIL_CAT(kernel, __LINE__)), \
                                               {__VA_ARGS__}, __FILE__, __LINE__});                   \
  static ::iron::BenchSetup IRON_DETAIL_CAT(iron_bench_, IRON_DETAIL_CAT(kernel, __LINE__))([[maybe_unused]] ::iron::DType dt, \
                                                                                           [[maybe_unused]] ::iron::DType wt)
