// Conformance of the lane operations, atomics and fences (docs/semantics.md): each kernel runs on
// the interpreter at lane widths 8 and 32 against a host reference that knows the width, and on
// the Vulkan device (lavapipe here: a missing device fails) and CUDA (skipped with the reason
// where there is no NVIDIA driver) against the interpreter at the device's width, bit for bit.
// Atomics are checked on what is order-free; the interpreter's race rules for atomics too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"
#include "device_run.hpp"
#include "ir_text.hpp"

using namespace iron;
using iron::test::Buf;
using iron::test::bits_of;
using iron::test::expect_same;
using iron::test::find;
using iron::test::float_of;
using iron::test::parse_verified;

namespace {

constexpr uint32_t kN = 128;  // one threadgroup: 4 lane groups of 32, 16 of 8

// One threadgroup of kN threads (or `groups` of them); an unwritten threadgroup slot read is an error.
std::vector<Buf> run_interp(const ir::Kernel& k, std::vector<Buf> bufs, uint32_t lane_width, uint32_t groups = 1) {
  return test::run_interp(k, std::move(bufs), lane_width, {{groups, 1, 1}, {kN, 1, 1}, true});
}
std::vector<Buf> run_device(Context& ctx, const ir::Kernel& k, std::vector<Buf> bufs, uint32_t groups = 1) {
  return test::run_device(ctx, k, std::move(bufs), {{groups, 1, 1}, {kN, 1, 1}, true});
}

// Deterministic words: lane-distinct values so a wrong source lane always shows.
std::vector<uint32_t> distinct_words(uint32_t salt) {
  std::vector<uint32_t> w(kN);
  for (uint32_t i = 0; i < kN; ++i) w[i] = (i + 1) * 2654435761u ^ salt;
  return w;
}

const char* const kShuffleIr =
    "kernel lanes mode=Reduction {\n"
    "  param x: in buf<u32> extent=128\n"
    "  param src: in buf<u32> extent=128\n"
    "  param idx: out buf<u32> extent=128\n"
    "  param bxor: out buf<u32> extent=128\n"
    "  param up: out buf<u32> extent=128\n"
    "  param down: out buf<u32> extent=128\n"
    "  %0 = local_id<0> : u32\n"
    "  %1 = load<x> %0 : u32\n"
    "  %2 = load<src> %0 : u32\n"
    "  %3 = lane_shuffle %1, %2 : u32\n"
    "  store<idx> %0, %3\n"
    "  %4 = lane_shuffle_xor %1, %2 : u32\n"
    "  store<bxor> %0, %4\n"
    "  %5 = lane_shuffle_up %1, %2 : u32\n"
    "  store<up> %0, %5\n"
    "  %6 = lane_shuffle_down %1, %2 : u32\n"
    "  store<down> %0, %6\n"
    "}\n";

// Per-thread source operands: in range, the edges, just past the group and huge.
std::vector<uint32_t> shuffle_sources() {
  const uint32_t picks[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 0xffffffffu, 0x80000000u, 6, 4};
  std::vector<uint32_t> w(kN);
  for (uint32_t i = 0; i < kN; ++i) w[i] = picks[(i * 7 + i / 5) % (sizeof picks / sizeof picks[0])];
  return w;
}

// docs/semantics.md: the source lane, computed exactly; outside 0..W-1 the lane keeps its value.
uint32_t reference_source(const std::string& op, uint32_t lane, uint32_t arg, uint32_t w) {
  uint64_t s = w;
  if (op == "idx") s = arg;
  if (op == "bxor") s = lane ^ arg;
  if (op == "up") s = arg <= lane ? lane - arg : w;
  if (op == "down") s = uint64_t(lane) + arg;
  return s < w ? uint32_t(s) : lane;
}

std::vector<Buf> shuffle_buffers() {
  return {{"x", DType::U32, false, distinct_words(0x5a5a)},
          {"src", DType::U32, false, shuffle_sources()},
          {"idx", DType::U32, true, std::vector<uint32_t>(kN)},
          {"bxor", DType::U32, true, std::vector<uint32_t>(kN)},
          {"up", DType::U32, true, std::vector<uint32_t>(kN)},
          {"down", DType::U32, true, std::vector<uint32_t>(kN)}};
}

const char* const kReduceIr =
    "kernel reds mode=Reduction {\n"
    "  param xi: in buf<i32> extent=128\n"
    "  param xf: in buf<f32> extent=128\n"
    "  param imin: out buf<i32> extent=128\n"
    "  param iand: out buf<i32> extent=128\n"
    "  param ior: out buf<i32> extent=128\n"
    "  param iinc: out buf<i32> extent=128\n"
    "  param iexc: out buf<i32> extent=128\n"
    "  param fmin: out buf<f32> extent=128\n"
    "  param finc: out buf<f32> extent=128\n"
    "  param fexc: out buf<f32> extent=128\n"
    "  param ballot: out buf<u32> extent=128\n"
    "  param any: out buf<u32> extent=128\n"
    "  param all: out buf<u32> extent=128\n"
    "  %0 = local_id<0> : u32\n"
    "  %1 = load<xi> %0 : i32\n"
    "  %2 = load<xf> %0 : f32\n"
    "  %3 = lane_min %1 : i32\n"
    "  store<imin> %0, %3\n"
    "  %4 = lane_and %1 : i32\n"
    "  store<iand> %0, %4\n"
    "  %5 = lane_or %1 : i32\n"
    "  store<ior> %0, %5\n"
    "  %6 = lane_inclusive_sum %1 : i32\n"
    "  store<iinc> %0, %6\n"
    "  %7 = lane_exclusive_sum %1 : i32\n"
    "  store<iexc> %0, %7\n"
    "  %8 = lane_min %2 : f32\n"
    "  store<fmin> %0, %8\n"
    "  %9 = lane_inclusive_sum %2 : f32\n"
    "  store<finc> %0, %9\n"
    "  %10 = lane_exclusive_sum %2 : f32\n"
    "  store<fexc> %0, %10\n"
    "  %11 = const<0> : i32\n"
    "  %12 = lt %1, %11 : bool\n"
    "  %13 = lane_ballot %12 : u32\n"
    "  store<ballot> %0, %13\n"
    "  %14 = lane_any %12 : bool\n"
    "  %15 = cast %14 : u32\n"
    "  store<any> %0, %15\n"
    "  %16 = lane_all %12 : bool\n"
    "  %17 = cast %16 : u32\n"
    "  store<all> %0, %17\n"
    "}\n";

std::vector<Buf> reduce_buffers() {
  std::vector<uint32_t> xi = distinct_words(0x1234), xf(kN);
  // Lane group 2 (of 8) and group 1 (of 32) hold only negative values, group 3 (of 8) only
  // non-negative ones, so any / all / ballot see every case at both widths.
  for (uint32_t i = 16; i < 24; ++i) xi[i] |= 0x80000000u;
  for (uint32_t i = 32; i < 64; ++i) xi[i] |= 0x80000000u;
  for (uint32_t i = 24; i < 32; ++i) xi[i] &= 0x7fffffffu;
  // f32: magnitudes that round differently in every addition order, signed zeros, a NaN lane.
  for (uint32_t i = 0; i < kN; ++i) xf[i] = bits_of(float(int32_t(xi[i] % 2001u) - 1000) * 1.37e-3f + 1.0f / float(i + 3));
  xf[5] = bits_of(-0.0f);
  xf[6] = bits_of(0.0f);
  xf[40] = 0x7fc00000u;
  std::vector<Buf> b = {{"xi", DType::I32, false, xi}, {"xf", DType::F32, false, xf}};
  for (const char* n : {"imin", "iand", "ior", "iinc", "iexc"}) b.push_back({n, DType::I32, true, std::vector<uint32_t>(kN)});
  for (const char* n : {"fmin", "finc", "fexc"}) b.push_back({n, DType::F32, true, std::vector<uint32_t>(kN)});
  for (const char* n : {"ballot", "any", "all"}) b.push_back({n, DType::U32, true, std::vector<uint32_t>(kN)});
  return b;
}

class LaneConformance : public test::DeviceTest {
 protected:
  // The interpreter (raw and optimized) at the device's lane width against the device.
  static void check_device(const ir::Kernel& k, const std::vector<Buf>& bufs, const std::string& what) {
    uint32_t lanes = ctx().info().lane_width;
    std::vector<Buf> want = run_interp(k, bufs, lanes);
    expect_same(want, run_interp(passes::optimize(k), bufs, lanes), what + " (interpreter, optimized)");
    expect_same(want, run_device(ctx(), k, bufs), what + " (" + ctx().info().name + ")");
  }
};

}  // namespace

// Shuffles by index, xor, up and down follow one source rule at every lane width: exact lane
// arithmetic, and a source outside the lane group leaves the lane its own value.
TEST(LaneOps, ShufflesFollowTheSourceRuleAtWidths8And32) {
  ir::Kernel k = parse_verified(kShuffleIr);
  for (uint32_t w : {8u, 32u}) {
    std::vector<Buf> got = run_interp(k, shuffle_buffers(), w);
    const std::vector<uint32_t>& x = find(got, "x").words;
    const std::vector<uint32_t>& src = find(got, "src").words;
    for (const char* op : {"idx", "bxor", "up", "down"})
      for (uint32_t t = 0; t < kN; ++t) {
        uint32_t base = t / w * w, lane = t % w;
        EXPECT_EQ(find(got, op).words[t], x[base + reference_source(op, lane, src[t], w)])
            << op << " at lane width " << w << ", thread " << t << ", source operand " << src[t];
      }
  }
}

// lane_min/and/or, the prefix sums and the votes against their definitions (integers: exact at
// any order), and the f32 ones against a host model of the stated order.
TEST(LaneOps, ReductionsScansAndVotesMatchTheirDefinitions) {
  ir::Kernel k = parse_verified(kReduceIr);
  for (uint32_t w : {8u, 32u}) {
    std::vector<Buf> got = run_interp(k, reduce_buffers(), w);
    const std::vector<uint32_t>& xi = find(got, "xi").words;
    const std::vector<uint32_t>& xf = find(got, "xf").words;
    for (uint32_t g = 0; g < kN; g += w) {
      int32_t mn = INT32_MAX;
      uint32_t an = ~0u, orr = 0, ballot = 0;
      for (uint32_t l = 0; l < w; ++l) {
        mn = std::min(mn, int32_t(xi[g + l]));
        an &= xi[g + l];
        orr |= xi[g + l];
        if (l < 32 && int32_t(xi[g + l]) < 0) ballot |= 1u << l;
      }
      // f32 inclusive scan in the stated order: offsets 1, 2, .., W/2; lane l adds lane l - offset.
      std::vector<float> scan(w);
      for (uint32_t l = 0; l < w; ++l) scan[l] = float_of(xf[g + l]);
      for (uint32_t off = 1; off < w; off <<= 1) {
        std::vector<float> next = scan;
        for (uint32_t l = off; l < w; ++l) next[l] = scan[l - off] + scan[l];
        scan = next;
      }
      uint32_t sum = 0;
      for (uint32_t l = 0; l < w; ++l) {
        uint32_t t = g + l;
        SCOPED_TRACE("lane width " + std::to_string(w) + ", thread " + std::to_string(t));
        EXPECT_EQ(int32_t(find(got, "imin").words[t]), mn);
        EXPECT_EQ(find(got, "iand").words[t], an);
        EXPECT_EQ(find(got, "ior").words[t], orr);
        EXPECT_EQ(find(got, "iexc").words[t], sum);
        sum += xi[t];
        EXPECT_EQ(find(got, "iinc").words[t], sum);
        EXPECT_EQ(find(got, "ballot").words[t], ballot);
        EXPECT_EQ(find(got, "any").words[t], uint32_t(ballot != 0));
        EXPECT_EQ(find(got, "all").words[t], uint32_t(ballot == (w >= 32 ? ~0u : (1u << w) - 1)));
        bool nan_lane = std::isnan(scan[l]);
        uint32_t want_inc = bits_of(scan[l]);
        uint32_t got_inc = find(got, "finc").words[t];
        EXPECT_TRUE(nan_lane ? std::isnan(float_of(got_inc)) : got_inc == want_inc);
        uint32_t got_exc = find(got, "fexc").words[t];
        if (l == 0) EXPECT_EQ(got_exc, 0u);  // +0.0, whatever lane 0 holds
        else EXPECT_TRUE(std::isnan(scan[l - 1]) ? std::isnan(float_of(got_exc)) : got_exc == bits_of(scan[l - 1]));
      }
    }
  }
  // A 64-wide lane group gives each 32-lane half its own ballot mask.
  std::vector<Buf> got = run_interp(k, reduce_buffers(), 64);
  const std::vector<uint32_t>& xi = find(got, "xi").words;
  uint32_t upper = 0;
  for (uint32_t l = 0; l < 32; ++l) upper |= uint32_t(int32_t(xi[32 + l]) < 0) << l;
  EXPECT_EQ(find(got, "ballot").words[40], upper);
  EXPECT_EQ(upper, ~0u);
}

// Broadcast reads one lane for the whole group; a lane index that differs across the group is
// an error naming both, and a lane operation with inactive lanes is one too.
TEST(LaneOps, BroadcastNeedsOneLaneAndEveryLaneActive) {
  auto kernel = [](const std::string& lane_expr, bool guarded) {
    return std::string("kernel bc mode=Reduction {\n"
                       "  param x: in buf<u32> extent=128\n"
                       "  param out: out buf<u32> extent=128\n"
                       "  %0 = local_id<0> : u32\n"
                       "  %1 = load<x> %0 : u32\n") +
           lane_expr + (guarded ? "  %9 = const<100> : u32\n  %10 = lt %0, %9 : bool\n  if %10 {\n" : "") +
           "  %3 = lane_broadcast %1, %2 : u32 @\"bc.cpp\":7\n  store<out> %0, %3\n" + (guarded ? "  }\n" : "") + "}\n";
  };
  std::vector<Buf> bufs = {{"x", DType::U32, false, distinct_words(7)}, {"out", DType::U32, true, std::vector<uint32_t>(kN)}};
  std::vector<Buf> got = run_interp(parse_verified(kernel("  %2 = const<3> : u32\n", false)), bufs, 8);
  for (uint32_t t = 0; t < kN; ++t) EXPECT_EQ(got[1].words[t], got[0].words[t / 8 * 8 + 3]);
  got = run_interp(parse_verified(kernel("  %2 = const<9> : u32\n", false)), bufs, 8);  // past the group
  EXPECT_EQ(got[1].words, got[0].words);
  try {
    run_interp(parse_verified(kernel("  %2 = lane_id : u32\n", false)), bufs, 8);
    ADD_FAILURE() << "a per-lane broadcast source was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lane_broadcast from a lane that differs across the lane group"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("bc.cpp:7"), std::string::npos) << e.what();
  }
  try {
    run_interp(parse_verified(kernel("  %2 = const<0> : u32\n", true)), bufs, 8);
    ADD_FAILURE() << "a partially active lane group was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("partially active lane group"), std::string::npos) << e.what();
  }
}

namespace {

// Every thread adds, mins, maxes, ands and ors its value into one global element per op, f32
// min/max into two more, and small-integer f32 adds (exact in any order); threadgroup memory
// gets the same through tg atomics and is copied out after a barrier. Thread 0 initializes
// the threadgroup slots, so an atomic on an unwritten slot cannot happen.
const char* const kAtomicIr =
    "kernel atom mode=Reduction {\n"
    "  param xi: in buf<i32> extent=128\n"
    "  param xf: in buf<f32> extent=128\n"
    "  param acc: inout buf<i32> extent=8\n"
    "  param facc: inout buf<f32> extent=4\n"
    "  param tg_out: out buf<i32> extent=8\n"
    "  param old: out buf<i32> extent=128\n"
    "  %0 = tg_alloc<slots, 8> : i32\n"
    "  %1 = local_id<0> : u32\n"
    "  %2 = load<xi> %1 : i32\n"
    "  %3 = load<xf> %1 : f32\n"
    "  %c0 = const<0> : u32\n"
    "  %c1 = const<1> : u32\n"
    "  %c2 = const<2> : u32\n"
    "  %c3 = const<3> : u32\n"
    "  %c4 = const<4> : u32\n"
    "  %c5 = const<5> : u32\n"
    "  %10 = atomic_add<acc> %c0, %2 : i32\n"
    "  %11 = atomic_min<acc> %c1, %2 : i32\n"
    "  %12 = atomic_max<acc> %c2, %2 : i32\n"
    "  %13 = atomic_and<acc> %c3, %2 : i32\n"
    "  %14 = atomic_or<acc> %c4, %2 : i32\n"
    "  %15 = atomic_min<facc> %c0, %3 : f32\n"
    "  %16 = atomic_max<facc> %c1, %3 : f32\n"
    "  %17 = cast %2 : f32\n"
    "  %18 = const<9.5367431640625e-07> : f32\n"
    "  %19 = mul %17, %18 : f32\n"
    "  %20 = cast %19 : i32\n"
    "  %21 = cast %20 : f32\n"
    "  %22 = atomic_add<facc> %c2, %21 : f32\n"
    "  %23 = cast %1 : i32\n"
    "  %24 = const<-1> : i32\n"
    "  %25 = atomic_cas<acc> %c5, %24, %23 : i32\n"
    "  store<old> %1, %25\n"
    "  %26 = eq %1, %c0 : bool\n"
    "  if %26 {\n"
    "    %27 = const<0> : i32\n"
    "    tg_store %0, %c0, %27\n"
    "    %28 = const<2147483647> : i32\n"
    "    tg_store %0, %c1, %28\n"
    "    %29 = const<-2147483648> : i32\n"
    "    tg_store %0, %c2, %29\n"
    "    %30 = const<-1> : i32\n"
    "    tg_store %0, %c3, %30\n"
    "    tg_store %0, %c4, %27\n"
    "    tg_store %0, %c5, %30\n"
    "  }\n"
    "  barrier\n"
    "  %40 = tg_atomic_add %0, %c0, %2 : i32\n"
    "  %41 = tg_atomic_min %0, %c1, %2 : i32\n"
    "  %42 = tg_atomic_max %0, %c2, %2 : i32\n"
    "  %43 = tg_atomic_and %0, %c3, %2 : i32\n"
    "  %44 = tg_atomic_or %0, %c4, %2 : i32\n"
    "  %45 = tg_atomic_cas %0, %c5, %30x, %23 : i32\n"
    "  barrier\n"
    "  %46 = const<6> : u32\n"
    "  %47 = lt %1, %46 : bool\n"
    "  if %47 {\n"
    "    %48 = tg_load %0, %1 : i32\n"
    "    store<tg_out> %1, %48\n"
    "  }\n"
    "}\n";

std::string atomic_ir() {
  std::string s = kAtomicIr;
  // The tg cas compares with -1, defined before the `if` (a value inside it is out of scope).
  s.replace(s.find("%30x"), 4, "%24");
  return s;
}

std::vector<Buf> atomic_buffers() {
  std::vector<uint32_t> xi = distinct_words(0x77), xf(kN);
  for (uint32_t i = 0; i < kN; ++i) xf[i] = bits_of(float(int32_t(xi[i])) * 1e-7f);
  xf[3] = bits_of(-0.0f);
  xf[4] = bits_of(0.0f);
  std::vector<uint32_t> acc = {0, uint32_t(INT32_MAX), uint32_t(INT32_MIN), ~0u, 0, ~0u, 0, 0};
  std::vector<uint32_t> facc = {0x7f800000u, 0xff800000u, 0, 0};
  return {{"xi", DType::I32, false, xi},
          {"xf", DType::F32, false, xf},
          {"acc", DType::I32, false, acc},
          {"facc", DType::F32, false, facc},
          {"tg_out", DType::I32, true, std::vector<uint32_t>(8)},
          {"old", DType::I32, true, std::vector<uint32_t>(kN)}};
}

// The order-free results of kAtomicIr over one threadgroup, checked against definitions.
void check_atomic_totals(const std::vector<Buf>& got, const std::string& what) {
  const std::vector<uint32_t>& xi = find(got, "xi").words;
  const std::vector<uint32_t>& xf = find(got, "xf").words;
  uint32_t sum = 0, an = ~0u, orr = 0, fsum_bits;
  int32_t mn = INT32_MAX, mx = INT32_MIN;
  float fmn = INFINITY, fmx = -INFINITY, fsum = 0;
  for (uint32_t t = 0; t < kN; ++t) {
    sum += xi[t];
    an &= xi[t];
    orr |= xi[t];
    mn = std::min(mn, int32_t(xi[t]));
    mx = std::max(mx, int32_t(xi[t]));
    fmn = std::min(fmn, float_of(xf[t]));
    fmx = std::max(fmx, float_of(xf[t]));
    fsum += float(int32_t(float(int32_t(xi[t])) * 9.5367431640625e-07f));
  }
  fsum_bits = bits_of(fsum);
  const std::vector<uint32_t>& acc = find(got, "acc").words;
  EXPECT_EQ(acc[0], sum) << what;
  EXPECT_EQ(int32_t(acc[1]), mn) << what;
  EXPECT_EQ(int32_t(acc[2]), mx) << what;
  EXPECT_EQ(acc[3], an) << what;
  EXPECT_EQ(acc[4], orr) << what;
  const std::vector<uint32_t>& facc = find(got, "facc").words;
  EXPECT_EQ(facc[0], bits_of(fmn)) << what;
  EXPECT_EQ(facc[1], bits_of(fmx)) << what;
  EXPECT_EQ(facc[2], fsum_bits) << what << ": the f32 adds of small integers are exact in any order";
  // Compare-and-swap: exactly one thread saw the initial -1 and wrote its id; every other saw it.
  const std::vector<uint32_t>& old = find(got, "old").words;
  int winners = 0;
  for (uint32_t t = 0; t < kN; ++t) winners += int32_t(old[t]) == -1;
  EXPECT_EQ(winners, 1) << what;
  ASSERT_LT(acc[5], kN) << what;
  EXPECT_EQ(int32_t(old[acc[5]]), -1) << what << ": the winner is the thread whose id was stored";
  for (uint32_t t = 0; t < kN; ++t)
    if (int32_t(old[t]) != -1) {
      EXPECT_EQ(old[t], acc[5]) << what << ": thread " << t;
    }
  const std::vector<uint32_t>& tg = find(got, "tg_out").words;
  EXPECT_EQ(tg[0], sum) << what;
  EXPECT_EQ(int32_t(tg[1]), mn) << what;
  EXPECT_EQ(int32_t(tg[2]), mx) << what;
  EXPECT_EQ(tg[3], an) << what;
  EXPECT_EQ(tg[4], orr) << what;
  EXPECT_LT(tg[5], kN) << what << ": one thread's id won the threadgroup compare-and-swap";
}

}  // namespace

// Atomics on global and threadgroup memory: the totals every order gives (integer add/min/max/
// and/or, f32 min/max with the NaN and signed-zero rule, f32 adds that are exact), and one
// compare-and-swap winner.
TEST(Atomics, OrderFreeTotalsAndOneCasWinnerOnTheInterpreter) {
  ir::Kernel k = parse_verified(atomic_ir());
  check_atomic_totals(run_interp(k, atomic_buffers(), 8), "interpreter, lane width 8");
  check_atomic_totals(run_interp(passes::optimize(k), atomic_buffers(), 32), "interpreter, optimized");
}

// Atomics on one threadgroup slot do not race with each other; a plain store to the slot by
// another thread without a barrier between does, in either order, naming both ops.
TEST(Atomics, PlainAccessesRaceWithAtomicsButAtomicsDoNot) {
  auto kernel = [](const std::string& body) {
    return "kernel ar mode=Reduction {\n"
           "  param out: out buf<u32> extent=128\n"
           "  %0 = tg_alloc<s, 4> : u32\n"
           "  %1 = local_id<0> : u32\n"
           "  %2 = const<0> : u32\n"
           "  %3 = const<1> : u32\n"
           "  %4 = eq %1, %2 : bool\n"
           "  if %4 {\n"
           "    tg_store %0, %2, %2\n"
           "  }\n"
           "  barrier\n" +
           body +
           "  barrier\n"
           "  %9 = tg_load %0, %2 : u32\n"
           "  store<out> %1, %9\n"
           "}\n";
  };
  std::vector<Buf> bufs = {{"out", DType::U32, true, std::vector<uint32_t>(kN)}};
  std::vector<Buf> got = run_interp(parse_verified(kernel("  %5 = tg_atomic_add %0, %2, %3 : u32 @\"ar.cpp\":5\n")), bufs, 8);
  EXPECT_EQ(got[0].words[0], kN);
  for (const char* body : {"  %5 = tg_atomic_add %0, %2, %3 : u32 @\"ar.cpp\":5\n"
                           "  if %4 {\n    tg_store %0, %2, %3 @\"ar.cpp\":6\n  }\n",
                           "  %6 = eq %1, %3 : bool\n  if %6 {\n    tg_store %0, %2, %3 @\"ar.cpp\":6\n  }\n"
                           "  %5 = tg_atomic_add %0, %2, %3 : u32 @\"ar.cpp\":5\n"}) {
    try {
      run_interp(parse_verified(kernel(body)), bufs, 8);
      ADD_FAILURE() << "no race reported for\n" << body;
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("threadgroup memory race"), std::string::npos) << m;
      EXPECT_NE(m.find("ar.cpp:5"), std::string::npos) << m;
      EXPECT_NE(m.find("ar.cpp:6"), std::string::npos) << m;
    }
  }
}

// The verifier's rules for the new ops, each a located diagnostic.
TEST(LaneOps, VerifierRejectsIllTypedLaneOpsAndAtomics) {
  auto diags = [](const std::string& body, const std::string& params = "") {
    ir::Kernel k = ir::parse("kernel v mode=Reduction {\n  param a: in buf<i32> extent=8\n"
                             "  param h: inout buf<f16> extent=8\n" + params + "  %0 = local_id<0> : u32\n"
                             "  %1 = load<a> %0 : i32\n" + body + "}\n");
    ir::Diagnostics d;
    ir::verify(k, d);
    return d.render(k);
  };
  EXPECT_NE(diags("  %2 = lane_shuffle %1, %1 : i32\n").find("source lane operand must be u32"), std::string::npos);
  EXPECT_NE(diags("  %2 = lane_ballot %1 : u32\n").find("votes on a bool"), std::string::npos);
  EXPECT_NE(diags("  %2 = lane_and %1 : i32\n  %3 = cast %2 : f32\n  %4 = lane_and %3 : f32\n").find("takes i32 or u32"),
            std::string::npos);
  EXPECT_NE(diags("  %2 = atomic_add<a> %0, %1 : i32\n").find("needs an inout buffer ('a' is in)"), std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : f16\n  %3 = atomic_add<h> %0, %2 : f16\n").find("atomics act on f32, i32 or u32 memory"),
            std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : f32\n  %3 = atomic_or<f> %0, %2 : f32\n", "  param f: inout buf<f32> extent=8\n")
                .find("is defined on i32 and u32 memory only"),
            std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : u32\n  %3 = atomic_add<b> %0, %2 : i32\n", "  param b: inout buf<i32> extent=8\n")
                .find("value is u32 but the memory holds i32"),
            std::string::npos);
}

// The element types beyond 32 bits and below (i8 .. u64, fp8) have no lane ops or atomics: the
// 64-bit registers carry i32/u32/f32 lane values and atomic words only.
TEST(LaneOps, VerifierKeepsLaneOpsAndAtomicsOnTheirWordDtypes) {
  auto diags = [](const std::string& body) {
    ir::Kernel k = ir::parse("kernel v mode=Reduction {\n  param a: in buf<i32> extent=8\n"
                             "  param q: inout buf<i64> extent=8\n  param b: inout buf<u8> extent=8\n"
                             "  %0 = local_id<0> : u32\n  %1 = load<a> %0 : i32\n" + body + "}\n");
    ir::Diagnostics d;
    ir::verify(k, d);
    return d.render(k);
  };
  EXPECT_EQ(diags("  %2 = lane_min %1 : i32\n  %3 = lane_shuffle %1, %0 : i32\n"), "");
  EXPECT_NE(diags("  %2 = cast %1 : i64\n  %3 = lane_shuffle %2, %0 : i64\n").find("shuffles move"), std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : f8e4m3\n  %3 = lane_broadcast %2, %0 : f8e4m3\n").find("shuffles move"),
            std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : i8\n  %3 = lane_min %2 : i8\n").find("takes f32, i32 or u32"), std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : u64\n  %3 = lane_or %2 : u64\n").find("takes i32 or u32"), std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : i64\n  %3 = atomic_add<q> %0, %2 : i64\n").find("atomics act on f32, i32 or u32"),
            std::string::npos);
  EXPECT_NE(diags("  %2 = cast %1 : u8\n  %3 = atomic_max<b> %0, %2 : u8\n").find("atomics act on f32, i32 or u32"),
            std::string::npos);
}

// Every backend: the shuffles, reductions, scans and votes, bit for bit with the interpreter at
// the device's lane width (8 on lavapipe, 32 on NVIDIA).
TEST_P(LaneConformance, LaneOpsAgreeWithTheInterpreter) {
  check_device(parse_verified(kShuffleIr), shuffle_buffers(), "shuffles");
  check_device(parse_verified(kReduceIr), reduce_buffers(), "reductions, scans and votes");
}

// Every backend: the order-free results of global and threadgroup atomics, and (over three
// threadgroups) fences that compile and leave results alone.
TEST_P(LaneConformance, AtomicsGiveTheOrderFreeTotals) {
  ir::Kernel k = parse_verified(atomic_ir());
  check_atomic_totals(run_device(ctx(), k, atomic_buffers()), ctx().info().name);
  ir::Kernel fenced = parse_verified(
      "kernel fenced mode=Reduction {\n"
      "  param x: in buf<u32> extent=128\n"
      "  param acc: inout buf<u32> extent=2\n"
      "  %0 = local_id<0> : u32\n"
      "  %1 = load<x> %0 : u32\n"
      "  fence_threadgroup\n"
      "  %2 = const<0> : u32\n"
      "  %3 = atomic_add<acc> %2, %1 : u32\n"
      "  fence_device\n"
      "  %4 = const<1> : u32\n"
      "  %5 = atomic_max<acc> %4, %3 : u32\n"
      "}\n");
  std::vector<Buf> bufs = {{"x", DType::U32, false, distinct_words(3)}, {"acc", DType::U32, true, {0, 0}}};
  std::vector<Buf> got = run_device(ctx(), fenced, bufs, 3);
  uint32_t sum = 0;
  for (uint32_t v : bufs[0].words) sum += v;
  EXPECT_EQ(got[1].words[0], sum * 3);
}

// Every backend: the standard library's iron_group_scan (group_inclusive_sum and
// group_exclusive_sum over rows of one threadgroup, threads past the row contributing 0) on
// integer-valued inputs, exact at any lane width, against the f64 definition.
TEST_P(LaneConformance, GroupScanOfTheStandardLibraryIsExact) {
  for (auto [rows, d, tg] : {std::tuple{3u, 256u, 256u}, std::tuple{5u, 201u, 256u}, std::tuple{2u, 64u, 64u}}) {
    std::vector<uint32_t> x(size_t(rows) * d);
    for (size_t i = 0; i < x.size(); ++i) x[i] = bits_of(float(int32_t((i * 2654435761u) % 17u) - 8));
    Bindings b;
    DeviceBuffer bx = ctx().alloc(DType::F32, x.size()), inc = ctx().alloc(DType::F32, x.size()),
                 exc = ctx().alloc(DType::F32, x.size()), total = ctx().alloc(DType::F32, rows);
    ctx().upload(bx, x.data(), x.size() * 4);
    ctx().dispatch_with_grid("iron_group_scan", DType::F32, {{"x", bx}, {"inc", inc}, {"exc", exc}, {"total", total}},
                             {{"rows", rows}, {"d", d}}, {rows, 1, 1}, {tg, 1, 1});
    ctx().synchronize();
    std::vector<uint32_t> gi(x.size()), ge(x.size()), gt(rows);
    ctx().download(inc, gi.data(), gi.size() * 4);
    ctx().download(exc, ge.data(), ge.size() * 4);
    ctx().download(total, gt.data(), gt.size() * 4);
    for (uint32_t r = 0; r < rows; ++r) {
      float s = 0;
      for (uint32_t j = 0; j < d; ++j) {
        size_t at = size_t(r) * d + j;
        EXPECT_EQ(float_of(ge[at]), s) << "exc, row " << r << ", " << j;
        s += float_of(x[at]);
        EXPECT_EQ(float_of(gi[at]), s) << "inc, row " << r << ", " << j;
      }
      EXPECT_EQ(float_of(gt[r]), s) << "total, row " << r;
    }
  }
}

// The group scan's first barrier is load-bearing: without it the interpreter reports the race
// (at lane width 8 and 32), which lavapipe's in-order lane groups would not show.
TEST(GroupScan, WithoutItsFirstBarrierTheInterpreterReportsTheRace) {
  ir::Kernel k = iron::kernel_ir("iron_group_scan");
  std::vector<ir::Id> barriers;
  ir::walk(k, [&](ir::Id id) {
    if (k.insts[id].op == ir::Op::Barrier) barriers.push_back(id);
  });
  ASSERT_EQ(barriers.size(), 4u);
  auto& entry = k.blocks[0].insts;
  entry.erase(std::find(entry.begin(), entry.end(), barriers[0]));
  for (uint32_t w : {8u, 32u}) {
    std::vector<uint32_t> x(256, bits_of(1.0f)), o1(256), o2(256), o3(1);
    std::vector<interp::BufferArg> args = {{x.data(), 1024}, {o1.data(), 1024}, {o2.data(), 1024}, {o3.data(), 4}};
    interp::Options opts;
    opts.lane_width = w;
    try {
      interp::run(k, DType::F32, args, {1, 256}, {1, 1, 1}, {256, 1, 1}, opts);
      ADD_FAILURE() << "no race reported at lane width " << w;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("threadgroup memory race"), std::string::npos) << e.what();
    }
  }
}

namespace {

// Every atomic and shuffle spelling once per thread on the thread's own elements, so the result
// does not depend on any order and must match the interpreter bit for bit: f32 atomics (add,
// min, max, exchange, cas) on a buffer and on threadgroup memory over NaN, signed zeros,
// infinities and subnormals; u32 threadgroup exchange and cas; a bool shuffle; both fences.
const char* const kSpellingIr =
    "kernel spell mode=Reduction {\n"
    "  param x: in buf<f32> extent=128\n"
    "  param y: in buf<f32> extent=128\n"
    "  param facc: inout buf<f32> extent=640\n"
    "  param fo: out buf<f32> extent=1280\n"
    "  param uo: out buf<u32> extent=384\n"
    "  %0 = tg_alloc<tf, 640> : f32\n"
    "  %1 = tg_alloc<tu, 128> : u32\n"
    "  %2 = local_id<0> : u32\n"
    "  %3 = load<x> %2 : f32\n"
    "  %4 = load<y> %2 : f32\n"
    "  %k128 = const<128> : u32\n"
    "  %k10 = const<10> : u32\n"
    "  %a1 = add %2, %k128 : u32\n"
    "  %a2 = add %a1, %k128 : u32\n"
    "  %a3 = add %a2, %k128 : u32\n"
    "  %a4 = add %a3, %k128 : u32\n"
    "  %b0 = mul %2, %k10 : u32\n"
    "  %i1 = const<1> : u32\n"
    "  %i2 = const<2> : u32\n"
    "  %i3 = const<3> : u32\n"
    "  %i4 = const<4> : u32\n"
    "  %i5 = const<5> : u32\n"
    "  %i6 = const<6> : u32\n"
    "  %i7 = const<7> : u32\n"
    "  %i8 = const<8> : u32\n"
    "  %i9 = const<9> : u32\n"
    "  %b1 = add %b0, %i1 : u32\n"
    "  %b2 = add %b0, %i2 : u32\n"
    "  %b3 = add %b0, %i3 : u32\n"
    "  %b4 = add %b0, %i4 : u32\n"
    "  %b5 = add %b0, %i5 : u32\n"
    "  %b6 = add %b0, %i6 : u32\n"
    "  %b7 = add %b0, %i7 : u32\n"
    "  %b8 = add %b0, %i8 : u32\n"
    "  %b9 = add %b0, %i9 : u32\n"
    "  %5 = atomic_add<facc> %2, %3 : f32\n"
    "  store<fo> %b0, %5\n"
    "  %6 = atomic_min<facc> %a1, %3 : f32\n"
    "  store<fo> %b1, %6\n"
    "  %7 = atomic_max<facc> %a2, %3 : f32\n"
    "  store<fo> %b2, %7\n"
    "  %8 = atomic_exchange<facc> %a3, %3 : f32\n"
    "  store<fo> %b3, %8\n"
    "  %9 = atomic_cas<facc> %a4, %4, %3 : f32\n"
    "  store<fo> %b4, %9\n"
    "  fence_device\n"
    "  %10 = load<facc> %2 : f32\n"
    "  tg_store %0, %2, %4\n"
    "  tg_store %0, %a1, %4\n"
    "  tg_store %0, %a2, %4\n"
    "  tg_store %0, %a3, %4\n"
    "  tg_store %0, %a4, %3\n"
    "  %11 = tg_atomic_add %0, %2, %3 : f32\n"
    "  store<fo> %b5, %11\n"
    "  %12 = tg_atomic_min %0, %a1, %3 : f32\n"
    "  store<fo> %b6, %12\n"
    "  %13 = tg_atomic_max %0, %a2, %3 : f32\n"
    "  store<fo> %b7, %13\n"
    "  %14 = tg_atomic_exchange %0, %a3, %3 : f32\n"
    "  store<fo> %b8, %14\n"
    "  %15 = tg_atomic_cas %0, %a4, %4, %10 : f32\n"
    "  store<fo> %b9, %15\n"
    "  fence_threadgroup\n"
    "  %16 = cast %3 : u32\n"
    "  tg_store %1, %2, %16\n"
    "  %17 = cast %4 : u32\n"
    "  %18 = tg_atomic_exchange %1, %2, %17 : u32\n"
    "  %19 = tg_atomic_cas %1, %2, %17, %16 : u32\n"
    "  %20 = tg_load %1, %2 : u32\n"
    "  %u1 = add %2, %k128 : u32\n"
    "  %u2 = add %u1, %k128 : u32\n"
    "  store<uo> %2, %18\n"
    "  store<uo> %u1, %19\n"
    "  %21 = lt %3, %4 : bool\n"
    "  %22 = lane_shuffle_xor %21, %i1 : bool\n"
    "  %23 = cast %22 : u32\n"
    "  %24 = add %23, %20 : u32\n"
    "  store<uo> %u2, %24\n"
    "}\n";

// `subnormals` false: a device that flushes f32 subnormals (NVIDIA's Vulkan driver; see
// docs/semantics.md "Vulkan drivers") gets the smallest normals with a low mantissa bit set in
// their place, so every other special value is still compared bit for bit there.
std::vector<Buf> spelling_buffers(bool subnormals = true) {
  const uint32_t specials[] = {0x7fc00000u, 0xffc00000u, 0x80000000u, 0u, 0x7f800000u, 0xff800000u,
                               subnormals ? 1u : 0x00800001u, subnormals ? 0x80000001u : 0x80800001u,
                               0x3f800000u, 0xbf800000u, 0x00800000u, 0x7f7fffffu};
  std::vector<uint32_t> x(kN), y(kN), facc(640);
  for (uint32_t i = 0; i < kN; ++i) {
    x[i] = specials[i % 12];
    y[i] = i % 3 == 0 ? x[i] : specials[(i / 12 + i) % 12];
  }
  for (uint32_t i = 0; i < 640; ++i) facc[i] = specials[(i * 5 + 1) % 12];
  for (uint32_t i = 0; i < kN; ++i)
    if (i % 2 == 0) facc[512 + i] = y[i];  // half the compare-and-swaps match, NaN bits included
  return {{"x", DType::F32, false, x},
          {"y", DType::F32, false, y},
          {"facc", DType::F32, true, facc},
          {"fo", DType::F32, true, std::vector<uint32_t>(1280)},
          {"uo", DType::U32, true, std::vector<uint32_t>(384)}};
}

}  // namespace

// Every backend: each atomic and shuffle spelling on special values, bit for bit (no order is
// involved: every thread works on its own elements).
TEST_P(LaneConformance, EveryAtomicSpellingKeepsSpecialValues) {
  ir::Kernel k = parse_verified(kSpellingIr);
  const bool subnormals = !ctx().info().f32_denormals_flushed;
  std::vector<Buf> want = run_interp(k, spelling_buffers(subnormals), ctx().info().lane_width);
  // The rule itself: cas matched NaN bits in thread 0 (x = y = NaN, memory = y) and stored x.
  EXPECT_EQ(find(want, "facc").words[512], 0x7fc00000u);
  // min(+inf, NaN) keeps +inf (a NaN operand loses); -0 < +0 for max: thread 3 (x = +0) over -0.
  expect_same(want, run_device(ctx(), k, spelling_buffers(subnormals)), "atomic spellings (" + ctx().info().name + ")");
}


// The spellings that carry the contract: shuffles from a computed in-range source (never an
// out-of-range GLSL shuffle), scans in the interpreter's order, ballots of the lane's segment,
// f32 atomics as compare-and-swap loops, fences at the right scope; the CUDA source compiles
// through NVRTC in build.emit_all.
TEST(LaneOps, DialectsSpellTheContract) {
  ir::Kernel k = passes::optimize(parse_verified(kReduceIr));
  ir::Kernel s = passes::optimize(parse_verified(kShuffleIr));
  ir::Kernel a = passes::optimize(parse_verified(atomic_ir()));
  std::string cu = codegen::emit(s, DType::F32, codegen::Target::Cuda).source;
  std::string gl = codegen::emit(s, DType::F32, codegen::Target::Glsl).source;
  EXPECT_NE(cu.find("d <= l ? l - d : l"), std::string::npos) << cu;
  EXPECT_NE(cu.find("d < 32u - l ? l + d : l"), std::string::npos) << cu;
  EXPECT_NE(cu.find("m < 32u ? (iron_lane() ^ m)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("i < 32u ? i : iron_lane()"), std::string::npos) << cu;
  EXPECT_NE(gl.find("d <= l ? l - d : l"), std::string::npos) << gl;
  EXPECT_NE(gl.find("d < gl_SubgroupSize - l ? l + d : l"), std::string::npos) << gl;
  EXPECT_NE(gl.find("subgroupShuffle("), std::string::npos) << gl;
  std::string cur = codegen::emit(k, DType::F32, codegen::Target::Cuda).source;
  std::string glr = codegen::emit(k, DType::F32, codegen::Target::Glsl).source;
  EXPECT_NE(cur.find("__shfl_up_sync(0xffffffffu, v, o);\n    if (l >= o) v = t + v;"), std::string::npos) << cur;
  EXPECT_NE(cur.find("__ballot_sync"), std::string::npos) << cur;
  EXPECT_NE(glr.find("if (l >= o) v = t + v;"), std::string::npos) << glr;
  EXPECT_NE(glr.find("subgroupBallot(") , std::string::npos) << glr;
  EXPECT_NE(glr.find("[gl_SubgroupInvocationID >> 5]"), std::string::npos) << glr;
  EXPECT_EQ(glr.find("subgroupMin"), std::string::npos) << glr;
  std::string cua = codegen::emit(a, DType::F32, codegen::Target::Cuda).source;
  std::string gla = codegen::emit(a, DType::F32, codegen::Target::Glsl).source;
  EXPECT_NE(cua.find("atomicCAS(q, seen, __float_as_uint(iron_fmin(__uint_as_float(seen), v)))"), std::string::npos) << cua;
  EXPECT_EQ(cua.find("atomicAdd(&p_facc"), std::string::npos) << cua << ": atom.add.f32 flushes subnormals";
  EXPECT_NE(cua.find("atomicCAS(q, seen, __float_as_uint(__uint_as_float(seen) + v))"), std::string::npos) << cua;
  EXPECT_NE(gla.find("buffer IronBuffer3bits { uint data[]; } p_facc_bits;"), std::string::npos) << gla;
  EXPECT_NE(gla.find("atomicCompSwap(p_facc_bits.data["), std::string::npos) << gla;
  ir::Kernel sp = passes::optimize(parse_verified(kSpellingIr));
  std::string cus = codegen::emit(sp, DType::F32, codegen::Target::Cuda).source;
  std::string gls = codegen::emit(sp, DType::F32, codegen::Target::Glsl).source;
  EXPECT_NE(cus.find("__threadfence();"), std::string::npos) << cus;
  EXPECT_NE(cus.find("__threadfence_block();"), std::string::npos) << cus;
  EXPECT_NE(gls.find("memoryBarrier();"), std::string::npos) << gls;
  EXPECT_NE(gls.find("groupMemoryBarrier();"), std::string::npos) << gls;
  EXPECT_NE(gls.find("coherent buffer IronBuffer2 "), std::string::npos) << gls << ": fence_device needs coherent buffers";
  EXPECT_NE(gls.find("shared uint tg_tf[640u];"), std::string::npos) << gls;
}

// Every CUDA spelling of the lane slice compiles with NVRTC for sm_90a (no driver needed).
TEST(LaneOps, CudaSpellingsCompileWithNvrtc) {
  for (const std::string& text : {std::string(kShuffleIr), std::string(kReduceIr), atomic_ir(), std::string(kSpellingIr)}) {
    ir::Kernel k = passes::optimize(parse_verified(text));
    codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Cuda);
    ASSERT_TRUE(e.ok()) << e.diags.render(k);
    rt::NvrtcResult r = rt::nvrtc_compile(e.source, k.name, "sm_90a");
    EXPECT_TRUE(r.ok) << k.name << ":\n" << r.log.substr(0, 4000) << "\n" << e.source;
  }
}

namespace {

using namespace iron::dsl;

// Every DSL call of the lane slice in one Reduction body: traced, gated and verified, then run.
void every_lane_call() {
  Buffer x = input("x", u32, {128});
  Buffer acc = inout("acc", i32, {8});
  Buffer out = output("out", u32, {128});
  TgBuffer t = threadgroup_alloc("t", u32, 128);
  Expr l = local_id(0);
  Expr v = cast<u32>(x[l]);
  t[l] = v;
  barrier();
  Expr a = lane_shuffle(v, 3u) + lane_shuffle_xor(v, 1u) + lane_shuffle_up(v, 2u) + lane_shuffle_down(v, 2u) +
           lane_broadcast(v, 0u);
  Expr b = lane_min(v) + lane_and(v) + lane_or(v) + lane_inclusive_sum(v) + lane_exclusive_sum(v);
  Expr c = lane_ballot(v > 100u) + cast<u32>(lane_any(v > 100u)) + cast<u32>(lane_all(v > 100u));
  Expr g = cast<u32>(group_inclusive_sum(cast<f32>(v & 7u)) + group_exclusive_sum(cast<f32>(v & 7u)));
  atomic_add(acc[0u], cast<i32>(v & 15u));
  atomic_max(acc[1u], cast<i32>(v));
  atomic_cas(acc[2u], 0, 1);
  fence_device();
  atomic_or(t[l], 1u);
  fence_threadgroup();
  barrier();
  out[l] = a + b + c + g + t[l];
}

void shuffle_in_elementwise() {
  Buffer x = input("x", u32, {128});
  Buffer out = output("out", u32, {128});
  Expr i = thread_id(0);
  out[i] = lane_shuffle(cast<u32>(x[i]), 0u);
}

void global_atomic_in_elementwise() {
  Buffer x = input("x", u32, {128});
  Buffer hist = inout("hist", u32, {16});
  Expr i = thread_id(0);
  atomic_add(hist[cast<u32>(x[i]) & 15u], 1u);
  fence_device();
}

void atomic_on_input() {
  Buffer x = input("x", u32, {128});
  atomic_add(x[thread_id(0)], 1u);
}

std::string trace_error(KernelBody body, Mode mode) {
  try {
    trace_kernel(KernelDecl{"lane_probe", body, mode, {}, __FILE__, __LINE__});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The DSL surface traces into verified IR and runs; the mode gate keeps lane ops out of
// Elementwise kernels (global atomics and fences are allowed there); an atomic on an `input`
// buffer is a located error.
TEST(LaneDsl, EveryCallTracesRunsAndIsGated) {
  EXPECT_EQ(trace_error(&every_lane_call, Mode::Reduction), "");
  ir::Kernel k = trace_kernel(KernelDecl{"lane_probe", &every_lane_call, Mode::Reduction, {}, __FILE__, __LINE__});
  std::vector<Buf> bufs = {{"x", DType::U32, false, distinct_words(9)},
                           {"acc", DType::I32, true, std::vector<uint32_t>(8)},
                           {"out", DType::U32, true, std::vector<uint32_t>(kN)}};
  std::vector<Buf> got = run_interp(k, bufs, 8);
  EXPECT_EQ(got[1].words[2], 1u) << "atomic_cas(acc[2], 0, 1) stored once";
  std::string e = trace_error(&shuffle_in_elementwise, Mode::Elementwise);
  EXPECT_NE(e.find("uses lane_shuffle, which mode Elementwise does not bind"), std::string::npos) << e;
  EXPECT_NE(e.find("lane_test.cpp:"), std::string::npos) << e;
  EXPECT_EQ(trace_error(&global_atomic_in_elementwise, Mode::Elementwise), "");
  // Lane ops need lane groups (not Tile2D); threadgroup atomics follow threadgroup memory (Tile2D
  // binds it, Elementwise does not).
  e = trace_error(&every_lane_call, Mode::Tile2D);
  EXPECT_NE(e.find("uses lane_shuffle, which mode Tile2D does not bind"), std::string::npos) << e;
  EXPECT_EQ(e.find("uses tg_atomic_or"), std::string::npos) << e;
  e = trace_error(&every_lane_call, Mode::Elementwise);
  EXPECT_NE(e.find("uses tg_atomic_or, which mode Elementwise does not bind"), std::string::npos) << e;
  e = trace_error(&atomic_on_input, Mode::Elementwise);
  EXPECT_NE(e.find("needs an inout buffer ('x' is in)"), std::string::npos) << e;
  EXPECT_NE(e.find("lane_test.cpp:"), std::string::npos) << e;
}

// The text form of every new op prints and parses back to the same text.
TEST(LaneOps, TextFormRoundTrips) {
  for (const std::string& text : {std::string(kShuffleIr), std::string(kReduceIr), atomic_ir(), std::string(kSpellingIr)}) {
    ir::Kernel k = parse_verified(text);
    std::string printed = ir::print(k);
    EXPECT_EQ(ir::print(parse_verified(printed)), printed);
    EXPECT_NE(printed.find(k.name == "atom" ? "atomic_cas<acc> " : "%"), std::string::npos) << printed;
  }
}

// Every backend: the DSL probe (every call of the slice, group scans included) agrees with the
// interpreter at the device's lane width; its CUDA source compiles with NVRTC.
TEST_P(LaneConformance, TheDslProbeAgreesWithTheInterpreter) {
  ir::Kernel k = trace_kernel(KernelDecl{"lane_probe", &every_lane_call, Mode::Reduction, {}, __FILE__, __LINE__});
  std::vector<Buf> bufs = {{"x", DType::U32, false, distinct_words(9)},
                           {"acc", DType::I32, true, std::vector<uint32_t>(8)},
                           {"out", DType::U32, true, std::vector<uint32_t>(kN)}};
  check_device(k, bufs, "DSL probe");
  codegen::Emitted e = codegen::emit(passes::optimize(k), DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(e.ok()) << e.diags.render(k);
  rt::NvrtcResult r = rt::nvrtc_compile(e.source, "lane_probe", "sm_90a");
  EXPECT_TRUE(r.ok) << r.log.substr(0, 4000);
}

INSTANTIATE_TEST_SUITE_P(Backends, LaneConformance, ::testing::Values(Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return std::string(info.param == Backend::Cuda ? "Cuda" : "Vulkan");
                         });
