// Fixtures, TestSetup and the test registry.
#include "iron/harness.hpp"

#include "iron/bench.hpp"

#include "core/numeric.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <mutex>
#include <set>

namespace iron {

namespace fixture {
std::vector<double> uniform(size_t count, double lo, double hi, uint64_t seed) {
  std::vector<double> v(count);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (size_t i = 0; i < count; ++i) {
    // splitmix64: every output bit depends on every seed bit.
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double unit = double(z >> 11) * 0x1.0p-53;  // [0, 1)
    v[i] = lo + (hi - lo) * unit;
  }
  return v;
}
std::vector<double> magnitudes(size_t count, int min_exp, int max_exp, uint64_t seed) {
  std::vector<double> unit = uniform(count, 0.0, 1.0, seed);
  std::vector<double> pick = uniform(count, 0.0, 1.0, seed ^ 0x5bd1e995u);
  std::vector<double> v(count);
  const int span = max_exp - min_exp + 1;
  for (size_t i = 0; i < count; ++i) {
    int e = min_exp + std::min(span - 1, int(pick[i] * span));
    double m = 1.0 + unit[i];
    bool negative = (uint64_t(pick[i] * 0x1.0p40) & 1) != 0;
    v[i] = std::ldexp(negative ? -m : m, e);
  }
  return v;
}
double round_to(DType t, double v) {
  unsigned char bytes[8];
  num::encode(t, &v, bytes, 1);
  double back = 0;
  num::decode(t, bytes, &back, 1);
  return back;
}

bool rounds_away(DType t, double exact) {
  double u = ulp_of(t, exact);
  double below = std::trunc(exact / u) * u;  // the neighbour toward zero (exact in f64 for these formats)
  double frac = std::fabs(exact - below) / u;
  return frac > 0.6 && frac < 0.9;
}
}  // namespace fixture

TestSetup& TestSetup::in(const std::string& name, std::vector<double> values) {
  inputs_[name] = std::move(values);
  return *this;
}
TestSetup& TestSetup::out(const std::string& name, size_t count) {
  outputs_.emplace_back(name, count);
  return *this;
}
TestSetup& TestSetup::constexprs(const Constexprs& values) {
  for (const auto& [k, v] : values) scalars_[k] = v;
  return *this;
}
TestSetup& TestSetup::grid(Dim3 grid, Dim3 threadgroup) {
  grid_ = grid;
  tg_ = threadgroup;
  return *this;
}
TestSetup& TestSetup::call(const Constexprs& args) {
  call_ = args;
  has_call_ = true;
  return *this;
}
TestSetup& TestSetup::error_floor(double floor) {
  floor_ = floor > 0 ? floor : 1.0;
  return *this;
}
TestSetup& TestSetup::accumulation(double roundings) {
  accumulation_ = roundings > 0 ? roundings : 0;
  return *this;
}
TestSetup& TestSetup::math_ops(double count) {
  math_ops_ = count > 0 ? count : 0;
  return *this;
}

double group_sum_rounding(uint64_t n, uint32_t tg) {
  uint64_t per_thread = tg ? (n + tg - 1) / tg : n;
  double levels = 0;
  while ((1ull << uint64_t(levels)) < tg) ++levels;
  return double(per_thread) + 3 * levels;
}

namespace {
// Precision in bits (with the implicit bit) and the exponent of the smallest normal value.
bool float_format(DType t, int& precision, int& min_exponent) {
  switch (t) {
    case DType::F32: precision = 24, min_exponent = -126; return true;
    case DType::F16: precision = 11, min_exponent = -14; return true;
    case DType::BF16: precision = 8, min_exponent = -126; return true;
    case DType::F8E4M3: precision = 4, min_exponent = -6; return true;
    case DType::F8E5M2: precision = 3, min_exponent = -14; return true;
    default: return false;
  }
}
}  // namespace

double ulp_of(DType output, double m) {
  int p = 0, emin = 0;
  if (!float_format(output, p, emin)) return 1.0;  // integers: one unit
  m = std::fabs(m);
  int e = emin;
  if (m >= std::ldexp(1.0, emin)) {
    std::frexp(m, &e);  // m = f * 2^e, f in [0.5, 1)
    e -= 1;
  }
  return std::ldexp(1.0, e - (p - 1));
}

Tolerance case_tolerance(const TestSetup& setup, double declared, DType output) {
  if (!std::isnan(declared)) return Tolerance{false, declared};
  int p = 0, emin = 0;
  if (!float_format(output, p, emin)) return Tolerance{true, 0.0};  // integer outputs: exact
  double f32_ulps = setup.accumulation_roundings() + kMathOpUlps * setup.math_op_count();
  return Tolerance{true, 0.5 + std::ldexp(f32_ulps, p - 24)};
}

double element_error(const Tolerance& rule, DType output, double got, double want, double floor) {
  if (std::isnan(got) || std::isnan(want)) return INFINITY;
  if (got == want) return 0;  // exact, infinities of the same sign included
  double scale = std::max(floor, std::fabs(want));
  double err = std::fabs(got - want) / (rule.ulps ? ulp_of(output, scale) : scale);
  return std::isnan(err) ? INFINITY : err;
}

TestSetup& TestSetup::oracle(std::function<void(const Tensors&, Tensors&)> fn) {
  oracle_ = std::move(fn);
  return *this;
}

TestSetup& TestSetup::sampled_oracle(size_t count, ElementOracle fn) {
  if (count < 2) throw Error("sampled_oracle: sample at least 2 elements (the first and the last), not " + std::to_string(count));
  element_oracle_ = std::move(fn);
  sample_ = count;
  return *this;
}

std::vector<size_t> oracle_sample_indices(const std::string& output, size_t count, size_t sample) {
  std::vector<size_t> out;
  if (count == 0) return out;
  if (sample >= count) {
    out.resize(count);
    for (size_t i = 0; i < count; ++i) out[i] = i;
    return out;
  }
  std::set<size_t> picked{0, count - 1};
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (char c : output) state = (state ^ uint8_t(c)) * 0x100000001b3ull;  // FNV-style mix of the name
  while (picked.size() < sample) {
    state += 0x9e3779b97f4a7c15ull;  // splitmix64
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    picked.insert(size_t(z % count));
  }
  out.assign(picked.begin(), picked.end());
  return out;
}

namespace {
struct TestRegistry {
  std::mutex mu;
  std::deque<TestDecl> decls;
};
TestRegistry& tests() {
  static TestRegistry r;
  return r;
}
}  // namespace

int register_test(const TestDecl& decl) {
  TestRegistry& r = tests();
  std::lock_guard lock(r.mu);
  r.decls.push_back(decl);
  return int(r.decls.size() - 1);
}

std::vector<const TestDecl*> registered_tests() {
  TestRegistry& r = tests();
  std::lock_guard lock(r.mu);
  std::vector<const TestDecl*> out;
  for (const TestDecl& d : r.decls) out.push_back(&d);
  std::sort(out.begin(), out.end(), [](const TestDecl* a, const TestDecl* b) {
    int c = std::string_view(a->kernel).compare(b->kernel);
    return c != 0 ? c < 0 : std::string_view(a->name) < b->name;
  });
  return out;
}

namespace {
struct BenchRegistry {
  std::mutex mu;
  std::deque<BenchDecl> decls;
};
BenchRegistry& benches() {
  static BenchRegistry r;
  return r;
}
}  // namespace

int register_bench(const BenchDecl& decl) {
  BenchRegistry& r = benches();
  std::lock_guard lock(r.mu);
  r.decls.push_back(decl);
  return int(r.decls.size() - 1);
}

std::vector<const BenchDecl*> registered_benches() {
  BenchRegistry& r = benches();
  std::lock_guard lock(r.mu);
  std::vector<const BenchDecl*> out;
  for (const BenchDecl& d : r.decls) out.push_back(&d);
  std::sort(out.begin(), out.end(), [](const BenchDecl* a, const BenchDecl* b) {
    int c = std::string_view(a->kernel).compare(b->kernel);
    return c != 0 ? c < 0 : std::string_view(a->name) < b->name;
  });
  return out;
}

}  // namespace iron
