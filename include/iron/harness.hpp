// Kernel correctness tests. IRON_TEST_KERNEL registers a case next to its kernel: a function
// of the dtype returning a TestSetup (inputs from bounded deterministic fixtures, outputs,
// scalars, dispatch geometry and an f64 CPU oracle) plus a tolerance per dtype.
//
// Inputs are given as f64 values and rounded to the buffer's dtype once; the oracle sees the
// rounded values, the device sees the same bits. An output element passes when
// |device - oracle| <= tol * max(floor, |oracle|): relative error, measured absolutely below
// `floor` (default 1; set it to the scale of the outputs, e.g. for probabilities).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "iron/runtime.hpp"
#include "iron/types.hpp"

namespace iron {

using Tensors = std::map<std::string, std::vector<double>, std::less<>>;

namespace fixture {
// `count` values uniform in [lo, hi] from a seeded splitmix64 stream: bounded, deterministic
// across machines, never NaN or infinite.
std::vector<double> uniform(size_t count, double lo, double hi, uint64_t seed);
}  // namespace fixture

class TestSetup {
 public:
  explicit TestSetup(DType dtype) : dtype_(dtype) {}
  TestSetup& in(const std::string& name, std::vector<double> values);
  TestSetup& out(const std::string& name, size_t count);
  TestSetup& constexprs(const Constexprs& values);
  TestSetup& grid(Dim3 grid, Dim3 threadgroup);
  TestSetup& oracle(std::function<void(const Tensors& inputs, Tensors& outputs)> fn);
  TestSetup& error_floor(double floor);

  DType dtype() const { return dtype_; }
  const Tensors& inputs() const { return inputs_; }
  const std::vector<std::pair<std::string, size_t>>& outputs() const { return outputs_; }
  const Constexprs& scalars() const { return scalars_; }
  Dim3 grid_size() const { return grid_; }
  Dim3 threadgroup() const { return tg_; }
  double floor() const { return floor_; }
  const std::function<void(const Tensors&, Tensors&)>& oracle_fn() const { return oracle_; }

 private:
  DType dtype_;
  Tensors inputs_;
  std::vector<std::pair<std::string, size_t>> outputs_;
  Constexprs scalars_;
  Dim3 grid_{0, 0, 0};
  Dim3 tg_{0, 0, 0};
  double floor_ = 1.0;
  std::function<void(const Tensors&, Tensors&)> oracle_;
};

struct DtypeTolerance {
  DType dtype;
  double tol;
};

using TestBody = TestSetup (*)(DType dt);

struct TestDecl {
  const char* kernel;
  const char* name;
  TestBody body;
  std::vector<DtypeTolerance> dtypes;
  const char* file;
  int line;
};

int register_test(const TestDecl& decl);
std::vector<const TestDecl*> registered_tests();  // sorted by kernel, then name

}  // namespace iron

// IRON_TEST_KERNEL(iron_add, n1000, {f32, 1e-6}, {f16, 1e-3}) { return TestSetup(dt)...; }
#define IRON_TEST_KERNEL(kernel, case_name, ...)                                                     \
  static ::iron::TestSetup IRON_DETAIL_CAT(iron_test_, IRON_DETAIL_CAT(kernel, __LINE__))(::iron::DType dt); \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_test_reg_, IRON_DETAIL_CAT(kernel, __LINE__)) =     \
      ::iron::register_test(::iron::TestDecl{#kernel, #case_name,                                    \
                                             &IRON_DETAIL_CAT(iron_test_, IRON_DETAIL_CAT(kernel, __LINE__)), \
                                             {__VA_ARGS__}, __FILE__, __LINE__});                    \
  static ::iron::TestSetup IRON_DETAIL_CAT(iron_test_, IRON_DETAIL_CAT(kernel, __LINE__))([[maybe_unused]] ::iron::DType dt)
