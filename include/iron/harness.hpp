// Kernel correctness tests. IRON_TEST_KERNEL registers a case next to its kernel: a function
// of the dtype returning a TestSetup (inputs from bounded deterministic fixtures, outputs,
// scalars, dispatch geometry and an f64 CPU oracle) plus a tolerance per dtype.
//
// Inputs are given as f64 values and rounded to the buffer's dtype once; the oracle sees the
// rounded values, the device sees the same bits. The tolerance is derived, not declared: a case
// states how its outputs are computed (accumulation(), math_ops()) and an output element passes
// when |device - oracle| <= tol * ulp(output dtype, max(floor, |oracle|)) with
//   tol = 1/2 + 2^(p - 24) * (accumulation + kMathOpUlps * math_ops)
// where p is the output format's precision (24 for f32, 11 for f16, 8 for bf16): half an ulp for
// the one rounding to the output format, plus the f32 arithmetic before it expressed in ulps of
// that format. `floor` (default 1) is the scale below which the error is measured absolutely.
// Integer outputs must be exact. See docs/testing.md#tolerance-policy.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
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
// `count` values sign * m * 2^e with m uniform in [1, 2) and e a uniform integer in
// [min_exp, max_exp], random signs: huge and tiny magnitudes side by side, deterministic.
std::vector<double> magnitudes(size_t count, int min_exp, int max_exp, uint64_t seed);
// `v` rounded to `t` to nearest even, as the harness rounds inputs (for fixtures that must
// know the values the kernel sees).
double round_to(DType t, double v);
// True when rounding `exact` to the float dtype `t` to nearest goes away from zero, with at
// least 0.1 ulp to spare either way (so f32 arithmetic before the rounding cannot change that):
// a result a store rounding toward zero gets wrong.
bool rounds_away(DType t, double exact);
}  // namespace fixture

class TestSetup {
 public:
  // `in`: the instantiation the case runs at (a DType for a kernel without W).
  explicit TestSetup(Instantiation in) : in_(in) {}
  TestSetup& in(const std::string& name, std::vector<double> values);
  TestSetup& out(const std::string& name, size_t count);
  TestSetup& constexprs(const Constexprs& values);
  TestSetup& grid(Dim3 grid, Dim3 threadgroup);
  // A case of a kernel family (registered against the family's name) gives the logical call
  // instead of a grid: sizes and scalars by name. The harness asks the family's selector
  // (launch.hpp) for the kernels, grids and threadgroups on the device it runs on.
  TestSetup& call(const Constexprs& args);
  TestSetup& oracle(std::function<void(const Tensors& inputs, Tensors& outputs)> fn);
  // The oracle of a production-size benchmark, where the whole f64 oracle would take minutes on
  // the CPU (a GEMM at 8192^3): `fn` computes ONE output element (output name, flat index) in f64
  // from the rounded inputs, and only `count` elements of each output are checked against it: the
  // first, the last, and a fixed seeded draw (oracle_sample_indices). Every other element must be
  // finite: outputs start as NaN, so an element the kernel never wrote still fails.
  using ElementOracle = std::function<double(const Tensors& inputs, const std::string& output, size_t index)>;
  TestSetup& sampled_oracle(size_t count, ElementOracle fn);
  TestSetup& error_floor(double floor);
  // The f32 roundings on the longest path into one output element: a serial sum of n terms
  // counts n, each other f32 op 1 (group_sum_rounding() gives a group_sum's share).
  TestSetup& accumulation(double roundings);
  // Transcendentals (exp, log, tanh, rsqrt, ...) on that path; each is allowed kMathOpUlps f32
  // ulps, which covers the op itself and the rounding of its argument amplified by |x| <= 12.
  TestSetup& math_ops(double count);

  DType dtype() const { return in_.t; }            // what T is
  DType wtype() const { return in_.w; }            // what W is (Void: the kernel has no W)
  Instantiation instantiation() const { return in_; }
  const Tensors& inputs() const { return inputs_; }
  const std::vector<std::pair<std::string, size_t>>& outputs() const { return outputs_; }
  const Constexprs& scalars() const { return scalars_; }
  bool has_call() const { return has_call_; }
  const Constexprs& call_args() const { return call_; }
  Dim3 grid_size() const { return grid_; }
  Dim3 threadgroup() const { return tg_; }
  double floor() const { return floor_; }
  double accumulation_roundings() const { return accumulation_; }
  double math_op_count() const { return math_ops_; }
  const std::function<void(const Tensors&, Tensors&)>& oracle_fn() const { return oracle_; }
  const ElementOracle& element_oracle() const { return element_oracle_; }
  size_t oracle_sample() const { return sample_; }
  bool has_oracle() const { return bool(oracle_) || bool(element_oracle_); }

 private:
  Instantiation in_;
  Tensors inputs_;
  std::vector<std::pair<std::string, size_t>> outputs_;
  Constexprs scalars_;
  Constexprs call_;
  bool has_call_ = false;
  Dim3 grid_{0, 0, 0};
  Dim3 tg_{0, 0, 0};
  double floor_ = 1.0;
  double accumulation_ = 0;
  double math_ops_ = 0;
  std::function<void(const Tensors&, Tensors&)> oracle_;
  ElementOracle element_oracle_;
  size_t sample_ = 0;
};

// The flat indices a sampled oracle checks in an output of `count` elements: 0, count - 1 and
// distinct indices from a splitmix64 stream seeded by the output's name, `sample` in all (every
// index when sample >= count), in increasing order. Deterministic across machines.
std::vector<size_t> oracle_sample_indices(const std::string& output, size_t count, size_t sample);

// f32 ulps allowed per transcendental op (see TestSetup::math_ops).
constexpr double kMathOpUlps = 16;

// The f32 roundings of group_sum over n values on tg threads: each thread's serial sum of
// ceil(n / tg) terms, the lane butterfly, the serial pass over the partials and the second
// butterfly (at most 3 * ceil(log2 tg) levels together).
double group_sum_rounding(uint64_t n, uint32_t tg);

// A dtype a case runs at. Test cases give the dtype alone ({f32}): the tolerance is derived from
// the output format and the case's accumulation. An explicit relative tolerance ({f32, 1e-6})
// is for benchmark declarations, whose check is relative.
// A kernel generic over W too names both: {{f16, bf16}} is T = f16, W = bf16.
struct DtypeTolerance {
  Instantiation dtype;
  double tol = std::numeric_limits<double>::quiet_NaN();  // NaN: derived
};

// How outputs are compared: in ulps of the output dtype (derived), or relative to
// max(floor, |oracle|) (an explicit tolerance).
struct Tolerance {
  bool ulps = true;
  double value = 0.5;
};
// The rule for one output of `setup`: `declared` NaN derives it in ulps of `output`.
Tolerance case_tolerance(const TestSetup& setup, double declared, DType output);
// The spacing of `output`'s values at magnitude |m| (its subnormal spacing below the normal range).
double ulp_of(DType output, double m);
// One element's error in the rule's unit (ulps or relative); infinite when either side is NaN.
double element_error(const Tolerance& rule, DType output, double got, double want, double floor);

// dt: what T is; wt: what W is (Void for a kernel without W).
using TestBody = TestSetup (*)(DType dt, DType wt);

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

// IRON_TEST_KERNEL(iron_add, n1000, {f32}, {f16}) { return TestSetup(dt)....accumulation(1); }
#define IRON_TEST_KERNEL(kernel, case_name, ...)                                                     \
  static ::iron::TestSetup IRON_DETAIL_CAT(iron_test_, IRON_DETAIL_CAT(kernel, __LINE__))(::iron::DType dt, ::iron::DType wt); \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_test_reg_, IRON_DETAIL_CAT(kernel, __LINE__)) =     \
      ::iron::register_test(::iron::TestDecl{#kernel, #case_name,                                    \
                                             &IRON_DETAIL_CAT(iron_test_, IRON_DETAIL_CAT(kernel, __LINE__)), \
                                             {__VA_ARGS__}, __FILE__, __LINE__});                    \
  static ::iron::TestSetup IRON_DETAIL_CAT(iron_test_, IRON_DETAIL_CAT(kernel, __LINE__))([[maybe_unused]] ::iron::DType dt, \
                                                                                         [[maybe_unused]] ::iron::DType wt)
