// Fixtures, TestSetup and the test registry.
#include "iron/harness.hpp"

#include "iron/bench.hpp"

#include <algorithm>
#include <deque>
#include <mutex>

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
TestSetup& TestSetup::error_floor(double floor) {
  floor_ = floor > 0 ? floor : 1.0;
  return *this;
}
TestSetup& TestSetup::oracle(std::function<void(const Tensors&, Tensors&)> fn) {
  oracle_ = std::move(fn);
  return *this;
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
