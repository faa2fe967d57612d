// Helpers the device conformance tests share: buffers as 32-bit words (a 16-bit buffer holds two
// elements per word, a 64-bit one half an element), one kernel run on the interpreter or on a
// Context with the words uploaded and downloaded, the word comparison with NaN equality (and the
// subnormal rule of a flushing device), and a test fixture holding one Context per backend.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "passes/interpreter.hpp"

namespace iron::test {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }
inline bool is_subnormal_bits(uint32_t u) { return (u & 0x7f800000u) == 0 && (u & 0x007fffffu) != 0; }
inline bool same_float(uint32_t a, uint32_t b) { return a == b || (is_nan_bits(a) && is_nan_bits(b)); }

// Per buffer parameter: its name, dtype, whether the kernel writes it, and its contents as words.
struct Buf {
  std::string name;
  DType dtype;
  bool output;
  std::vector<uint32_t> words;
};

inline const Buf& find(const std::vector<Buf>& bufs, const std::string& name) {
  for (const Buf& b : bufs)
    if (b.name == name) return b;
  throw Error("no buffer " + name);
}

// How a test launches its kernel: grid and threadgroup, and whether the interpreter treats a read
// of unwritten threadgroup memory as an error.
struct Launch {
  Dim3 grid{1, 1, 1};
  Dim3 threadgroup{128, 1, 1};
  bool strict_tg_reads = false;
};

// Runs `k` on the interpreter at `lane_width` and returns the buffers afterwards.
inline std::vector<Buf> run_interp(const ir::Kernel& k, std::vector<Buf> bufs, uint32_t lane_width, const Launch& l) {
  std::vector<interp::BufferArg> args;
  for (Buf& b : bufs) args.push_back({b.words.data(), b.words.size() * 4});
  interp::Options opts;
  opts.lane_width = lane_width;
  opts.uninitialized_tg_reads_are_errors = l.strict_tg_reads;
  interp::run(k, DType::F32, args, {}, l.grid, l.threadgroup, opts);
  return bufs;
}

// Uploads the words, dispatches `k` on `ctx` and downloads every buffer.
inline std::vector<Buf> run_device(Context& ctx, const ir::Kernel& k, std::vector<Buf> bufs, const Launch& l) {
  Bindings bindings;
  for (const Buf& b : bufs) {
    DeviceBuffer d = ctx.alloc(b.dtype, b.words.size() * 4 / dtype_size(b.dtype));
    ctx.upload(d, b.words.data(), b.words.size() * 4);
    bindings.push_back({b.name, d});
  }
  ctx.dispatch_with_grid(k, DType::F32, bindings, {}, l.grid, l.threadgroup);
  ctx.synchronize();
  for (size_t i = 0; i < bufs.size(); ++i) ctx.download(bindings[i].second, bufs[i].words.data(), bufs[i].words.size() * 4);
  return bufs;
}

// Every output word of `got` equals `want` (in an f32 buffer two NaNs count as equal: a NaN
// result's sign and payload are not specified, docs/semantics.md). With flushes_subnormals (a
// device that flushes f32 subnormals, docs/semantics.md#vulkan-drivers), word i is left out
// where an f32 input word i or the expected f32 word is subnormal. At most `max_reports`
// mismatches per buffer are reported.
inline void expect_same(const std::vector<Buf>& want, const std::vector<Buf>& got, const std::string& what,
                        bool flushes_subnormals = false, int max_reports = 1 << 30) {
  ASSERT_EQ(want.size(), got.size());
  auto subnormal_input = [&](size_t i) {
    for (const Buf& b : want)
      if (!b.output && b.dtype == DType::F32 && i < b.words.size() && is_subnormal_bits(b.words[i])) return true;
    return false;
  };
  for (size_t b = 0; b < want.size(); ++b) {
    if (!want[b].output) continue;
    int reports = 0;
    for (size_t i = 0; i < want[b].words.size() && reports < max_reports; ++i) {
      uint32_t w = want[b].words[i], g = got[b].words[i];
      if (flushes_subnormals && (subnormal_input(i) || (want[b].dtype == DType::F32 && is_subnormal_bits(w)))) continue;
      bool same = want[b].dtype == DType::F32 ? same_float(w, g) : w == g;
      if (!same) {
        ++reports;
        ADD_FAILURE() << what << ": " << want[b].name << "[" << i << "] is 0x" << std::hex << g << ", want 0x" << w
                      << std::dec;
      }
    }
  }
}

// A test over the device backends: Vulkan (lavapipe in CI: a missing device fails) and CUDA
// (skipped with the reason where there is no NVIDIA driver). One Context per backend, opened by
// the first test that needs it and closed when the suite ends.
class DeviceTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void TearDownTestSuite() {
    for (size_t i = 0; i < kSlots; ++i) {
      contexts()[i].reset();
      errors()[i].clear();
    }
  }
  void SetUp() override {
    const size_t b = size_t(GetParam());
    if (!contexts()[b] && errors()[b].empty()) {
      try {
        contexts()[b] = Context::create(GetParam());
      } catch (const Error& e) {
        errors()[b] = e.what();
      }
    }
    if (!contexts()[b] && GetParam() == Backend::Cuda) GTEST_SKIP() << "no CUDA context: " << errors()[b];
    ASSERT_TRUE(contexts()[b]) << "no " << backend_name(GetParam()) << " context: " << errors()[b];
  }
  static Context& ctx() { return *contexts()[size_t(GetParam())]; }

 private:
  static constexpr size_t kSlots = 8;  // one per Backend value
  static std::unique_ptr<Context>* contexts() {
    static std::unique_ptr<Context> c[kSlots];
    return c;
  }
  static std::string* errors() {
    static std::string e[kSlots];
    return e;
  }
};

}  // namespace iron::test
