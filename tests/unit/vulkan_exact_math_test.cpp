// f32 division and sqrt and the f16 conversions through the GLSL dialect's exact helpers
// (glsl_exact_math.inc) on the Vulkan device (lavapipe in CI), against the interpreter, bit for
// bit over 65,536 operands per launch: every half (f16 loads), the f16 rounding edges (max
// finite, the overflow tie, ties to even, subnormal halves, NaN), quotients that are subnormal,
// overflow or halfway between two subnormals, and random bits. Two NaNs count as equal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "passes/interpreter.hpp"

using namespace iron;

namespace {

constexpr uint32_t kN = 65536;


struct Rng {  // splitmix64
  uint64_t s;
  uint32_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return uint32_t((z ^ (z >> 31)) >> 32);
  }
};

const char* kKernel =
    "kernel exact_math mode=Elementwise {\n"
    "  param x: in buf<f32> extent=65536\n"
    "  param y: in buf<f32> extent=65536\n"
    "  param hin: in buf<f16> extent=65536\n"
    "  param q: out buf<f32> extent=65536\n"
    "  param r: out buf<f32> extent=65536\n"
    "  param h: out buf<f16> extent=65536\n"
    "  param c: out buf<f32> extent=65536\n"
    "  param w: out buf<f32> extent=65536\n"
    "  %0 = thread_id<0> : u32\n"
    "  %1 = load<x> %0 : f32\n"
    "  %2 = load<y> %0 : f32\n"
    "  %3 = div %1, %2 : f32\n"
    "  store<q> %0, %3\n"
    "  %4 = sqrt %1 : f32\n"
    "  store<r> %0, %4\n"
    "  %5 = cast %1 : f16\n"
    "  store<h> %0, %5\n"
    "  %6 = mul %1, %2 : f32\n"
    "  %7 = cast %6 : f16\n"
    "  %8 = cast %7 : f32\n"
    "  store<c> %0, %8\n"
    "  %9 = load<hin> %0 : f16\n"
    "  %10 = cast %9 : f32\n"
    "  store<w> %0, %10\n"
    "}\n";

// Operand pairs: x / y hits the division edges, x alone the sqrt and f16 narrowing edges,
// x * y (narrowed to f16 in registers) the f16 edges again.
void fill(std::vector<uint32_t>& x, std::vector<uint32_t>& y) {
  const uint32_t edges[] = {0x00000000u, 0x00000001u, 0x00000003u, 0x007fffffu, 0x00800000u, 0x00ffffffu,
                            0x33000000u, 0x33000001u, 0x33400000u, 0x33c00000u, 0x387fe000u, 0x38800000u,
                            0x3f800000u, 0x3f801000u, 0x3f803000u, 0x3fffffffu, 0x40400000u, 0x477fe000u,
                            0x477fefffu, 0x477ff000u, 0x47800000u, 0x7f000000u, 0x7f7fffffu, 0x7f800000u,
                            0x7fc00000u, 0x3eaaaaabu, 0x0c000000u, 0x72800000u, 0x02000000u, 0x4b000001u};
  std::vector<uint32_t> e;
  for (uint32_t b : edges) {
    e.push_back(b);
    e.push_back(b | 0x80000000u);
  }
  Rng rng{42};
  size_t i = 0;
  for (uint32_t a : e)
    for (uint32_t b : e) {
      x[i] = a;
      y[i] = b;
      ++i;
    }
  // Quotients near the subnormal range and overflow: exponents chosen to land there.
  for (; i < kN / 2; ++i) {
    int ea = int(rng.next() % 254) + 1;
    int target = int(rng.next() % 40) - 20 + (i % 2 ? -127 : 127);
    int eb = ea - target;
    if (eb < 1) eb = 1;
    if (eb > 254) eb = 254;
    x[i] = (uint32_t(ea) << 23) | (rng.next() & 0x807fffffu);
    y[i] = (uint32_t(eb) << 23) | (rng.next() & 0x807fffffu);
  }
  for (; i < kN; ++i) {
    x[i] = rng.next();
    y[i] = rng.next();
  }
}

std::string hex(uint32_t u) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", u);
  return s;
}

bool subnormal32(uint32_t u) { return (u & 0x7f800000u) == 0 && (u & 0x007fffffu) != 0; }
bool same32(uint32_t a, uint32_t b) {
  bool an = (a & 0x7fffffffu) > 0x7f800000u, bn = (b & 0x7fffffffu) > 0x7f800000u;
  return an || bn ? an && bn : a == b;
}
bool same16(uint16_t a, uint16_t b) {
  bool an = (a & 0x7fffu) > 0x7c00u, bn = (b & 0x7fffu) > 0x7c00u;
  return an || bn ? an && bn : a == b;
}

TEST(VulkanExactMath, DivisionSqrtAndF16ConversionsAgreeWithTheInterpreterBitForBit) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(Backend::Vulkan);
  } catch (const Error& e) {
    FAIL() << "no Vulkan context: " << e.what();
  }
  ir::Kernel k = ir::parse(kKernel);
  ir::Diagnostics d;
  ASSERT_TRUE(ir::verify(k, d)) << d.render(k);

  std::vector<uint32_t> x(kN), y(kN);
  fill(x, y);
  std::vector<uint16_t> hin(kN);
  for (uint32_t i = 0; i < kN; ++i) hin[i] = uint16_t(i);
  std::vector<uint32_t> q(kN, ~0u), r(kN, ~0u), c(kN, ~0u), w(kN, ~0u);
  std::vector<uint16_t> h(kN, 0xffffu);

  // The interpreter.
  std::vector<uint32_t> iq = q, ir_ = r, ic = c, iw = w;
  std::vector<uint16_t> ih = h;
  std::vector<interp::BufferArg> args = {{x.data(), kN * 4},  {y.data(), kN * 4},   {hin.data(), kN * 2},
                                         {iq.data(), kN * 4}, {ir_.data(), kN * 4}, {ih.data(), kN * 2},
                                         {ic.data(), kN * 4}, {iw.data(), kN * 4}};
  interp::Options opts;
  opts.lane_width = ctx->info().lane_width;
  interp::run(k, DType::F32, args, {}, {kN / 256, 1, 1}, {256, 1, 1}, opts);

  // The device.
  Bindings b;
  auto bind = [&](const char* name, DType t, const void* data, size_t bytes) {
    DeviceBuffer buf = ctx->alloc(t, bytes / dtype_size(t));
    ctx->upload(buf, data, bytes);
    b.push_back({name, buf});
  };
  bind("x", DType::F32, x.data(), kN * 4);
  bind("y", DType::F32, y.data(), kN * 4);
  bind("hin", DType::F16, hin.data(), kN * 2);
  bind("q", DType::F32, q.data(), kN * 4);
  bind("r", DType::F32, r.data(), kN * 4);
  bind("h", DType::F16, h.data(), kN * 2);
  bind("c", DType::F32, c.data(), kN * 4);
  bind("w", DType::F32, w.data(), kN * 4);
  ctx->dispatch_with_grid(k, DType::F32, b, {}, {kN / 256, 1, 1}, {256, 1, 1});
  ctx->synchronize();
  ctx->download(b[3].second, q.data(), kN * 4);
  ctx->download(b[4].second, r.data(), kN * 4);
  ctx->download(b[5].second, h.data(), kN * 2);
  ctx->download(b[6].second, c.data(), kN * 4);
  ctx->download(b[7].second, w.data(), kN * 4);

  int bad = 0;
  for (uint32_t i = 0; i < kN && bad < 12; ++i) {
    std::string at = "x = " + hex(x[i]) + ", y = " + hex(y[i]);
    if (!same32(iq[i], q[i])) ADD_FAILURE() << "div, " << at << ": want " << hex(iq[i]) << ", got " << hex(q[i]), ++bad;
    if (!same32(ir_[i], r[i])) ADD_FAILURE() << "sqrt, " << at << ": want " << hex(ir_[i]) << ", got " << hex(r[i]), ++bad;
    if (!same16(ih[i], h[i])) ADD_FAILURE() << "f16 store, " << at << ": want " << hex(ih[i]) << ", got " << hex(h[i]), ++bad;
    // x*y is plain f32 arithmetic: a device that flushes f32 subnormals reads a subnormal x or y as 0.
    const bool flushed_operand = ctx->info().f32_denormals_flushed && (subnormal32(x[i]) || subnormal32(y[i]));
    if (!flushed_operand && !same32(ic[i], c[i])) ADD_FAILURE() << "f16 cast of x*y, " << at << ": want " << hex(ic[i]) << ", got " << hex(c[i]), ++bad;
    if (!same32(iw[i], w[i])) ADD_FAILURE() << "f16 load of half " << i << ": want " << hex(iw[i]) << ", got " << hex(w[i]), ++bad;
  }
  EXPECT_EQ(bad, 0);
}

// DeviceInfo::f32_denormals_flushed says what a kernel on the device does: a subnormal product
// (2^-64 * 2^-64) and a subnormal operand (2^-130 + 2^-130) are kept exactly where the probe
// said preserved and are zero where it said flushed (lavapipe preserves; NVIDIA flushes).
TEST(VulkanExactMath, TheDenormalProbeMatchesWhatKernelsCompute) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(Backend::Vulkan);
  } catch (const Error& e) {
    FAIL() << "no Vulkan context: " << e.what();
  }
  const DeviceInfo& info = ctx->info();
  EXPECT_NE(info.float_controls.find(info.f32_denormals_flushed ? "probe: f32 subnormals flushed"
                                                                : "probe: f32 subnormals preserved"),
            std::string::npos)
      << info.float_controls;
  ir::Kernel k = ir::parse(
      "kernel denormal_check mode=Elementwise {\n"
      "  param x: in buf<f32> extent=2\n"
      "  param y: out buf<f32> extent=2\n"
      "  %0 = thread_id<0> : u32\n"
      "  %1 = load<x> %0 : f32\n"
      "  %2 = mul %1, %1 : f32\n"
      "  %3 = add %1, %1 : f32\n"
      "  %4 = const<0> : u32\n"
      "  %5 = eq %0, %4 : bool\n"
      "  %6 = select %5, %2, %3 : f32\n"
      "  store<y> %0, %6\n"
      "}\n");
  const float in[2] = {0x1p-64f, 0x1p-130f};
  float out[2] = {-1.0f, -1.0f};
  DeviceBuffer x = ctx->alloc(DType::F32, 2), y = ctx->alloc(DType::F32, 2);
  ctx->upload(x, in, sizeof in);
  ctx->upload(y, out, sizeof out);
  ctx->dispatch_with_grid(k, DType::F32, {{"x", x}, {"y", y}}, {}, {1, 1, 1}, {2, 1, 1});
  ctx->synchronize();
  ctx->download(y, out, sizeof out);
  if (info.f32_denormals_flushed) {
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 0.0f);
  } else {
    EXPECT_EQ(out[0], 0x1p-128f);
    EXPECT_EQ(out[1], 0x1p-129f);
  }
}

}  // namespace
