// u64 atomics (add, exchange, compare-and-swap on buffers and threadgroup memory), the packed
// 16-bit atomic add (atomic_add_pair) and bitcast at 16 and 64 bits (docs/semantics.md): their
// definitions on the interpreter against references written here, the order-free results and
// bit-exact agreement on every device backend (Vulkan: lavapipe here; CUDA: skipped with the
// reason where there is no NVIDIA driver), the verifier's located errors, and the spellings
// (the CUDA source compiles through NVRTC for sm_80 and sm_90a without a driver).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "passes/eval.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"
#include "device_run.hpp"
#include "ir_text.hpp"

using namespace iron;
using namespace iron::test;

namespace {

constexpr uint32_t kN = 128;  // threads of the one threadgroup
const Launch kOneGroup{{1, 1, 1}, {kN, 1, 1}, true};

std::string diags_of(const std::string& text) {
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}

uint64_t u64_at(const Buf& b, size_t i) { return uint64_t(b.words[2 * i]) | (uint64_t(b.words[2 * i + 1]) << 32); }
std::vector<uint32_t> u64_words(const std::vector<uint64_t>& v) {
  std::vector<uint32_t> w;
  for (uint64_t x : v) {
    w.push_back(uint32_t(x));
    w.push_back(uint32_t(x >> 32));
  }
  return w;
}
uint16_t u16_at(const Buf& b, size_t i) { return uint16_t(b.words[i / 2] >> (16 * (i % 2))); }

// ---- u64 atomics ---------------------------------------------------------------------------

// Every thread adds its value into acc[0] and swaps it into acc[1] (returned values kept);
// acc[2] is compare-and-swapped from its initial value to the thread's value (one winner);
// threadgroup memory gets the add and the cas too and is copied to tg_out after a barrier.
const char* const kU64AtomicIr =
    "kernel atom64 mode=Reduction {\n"
    "  param x: in buf<u64> extent=128\n"
    "  param acc: inout buf<u64> extent=4\n"
    "  param swapped: out buf<u64> extent=128\n"
    "  param won: out buf<u32> extent=128\n"
    "  param tg_out: out buf<u64> extent=2\n"
    "  %0 = tg_alloc<slots, 2> : u64\n"
    "  %1 = local_id<0> : u32\n"
    "  %2 = load<x> %1 : u64\n"
    "  %c0 = const<0> : u32\n"
    "  %c1 = const<1> : u32\n"
    "  %c2 = const<2> : u32\n"
    "  %3 = atomic_add<acc> %c0, %2 : u64\n"
    "  %4 = atomic_exchange<acc> %c1, %2 : u64\n"
    "  store<swapped> %1, %4\n"
    "  %5 = const<18446744073709551557> : u64\n"
    "  %6 = atomic_cas<acc> %c2, %5, %2 : u64\n"
    "  %7 = eq %6, %5 : bool\n"
    "  %8 = cast %7 : u32\n"
    "  store<won> %1, %8\n"
    "  %9 = eq %1, %c0 : bool\n"
    "  %z = const<0> : u64\n"
    "  if %9 {\n"
    "    tg_store %0, %c0, %5\n"
    "    tg_store %0, %c1, %z\n"
    "  }\n"
    "  barrier\n"
    "  %10 = tg_atomic_add %0, %c0, %2 : u64\n"
    "  %11 = tg_atomic_cas %0, %c1, %z, %2 : u64\n"
    "  barrier\n"
    "  %12 = lt %1, %c2 : bool\n"
    "  if %12 {\n"
    "    %13 = tg_load %0, %1 : u64\n"
    "    store<tg_out> %1, %13\n"
    "  }\n"
    "}\n";

const uint64_t kCasInitial = 18446744073709551557ull;  // 2^64 - 59

std::vector<Buf> u64_atomic_buffers() {
  std::vector<uint64_t> x(kN);
  // Values with both halves busy, so a carry out of the low word shows; all distinct and nonzero.
  for (uint32_t i = 0; i < kN; ++i) x[i] = (uint64_t(i + 1) * 0x9e3779b97f4a7c15ull) | 1u;
  return {{"x", DType::U64, false, u64_words(x)},
          {"acc", DType::U64, false, u64_words({0xfffffffffffff000ull, 7, kCasInitial, 0})},
          {"swapped", DType::U64, true, std::vector<uint32_t>(2 * kN)},
          {"won", DType::U32, true, std::vector<uint32_t>(kN)},
          {"tg_out", DType::U64, true, std::vector<uint32_t>(4)}};
}

// What every order gives: the sum modulo 2^64, an exchange chain that returns every value once,
// one compare-and-swap winner whose value is stored.
void check_u64_atomics(const std::vector<Buf>& got, const std::string& what) {
  const Buf& x = find(got, "x");
  const Buf& acc = find(got, "acc");
  uint64_t sum = 0;
  std::multiset<uint64_t> values = {7};
  for (uint32_t t = 0; t < kN; ++t) {
    sum += u64_at(x, t);
    values.insert(u64_at(x, t));
  }
  EXPECT_EQ(u64_at(acc, 0), 0xfffffffffffff000ull + sum) << what << ": the sum wraps modulo 2^64";
  std::multiset<uint64_t> seen = {u64_at(acc, 1)};
  for (uint32_t t = 0; t < kN; ++t) seen.insert(u64_at(find(got, "swapped"), t));
  EXPECT_TRUE(seen == values) << what << ": the exchanges return the initial value and all but the last one stored";
  int winners = 0;
  uint32_t winner = 0;
  for (uint32_t t = 0; t < kN; ++t)
    if (find(got, "won").words[t]) ++winners, winner = t;
  EXPECT_EQ(winners, 1) << what;
  EXPECT_EQ(u64_at(acc, 2), u64_at(x, winner)) << what << ": the winner's value is stored";
  EXPECT_EQ(u64_at(find(got, "tg_out"), 0), kCasInitial + sum) << what;
  bool tg_cas_value = false;
  for (uint32_t t = 0; t < kN; ++t) tg_cas_value = tg_cas_value || u64_at(find(got, "tg_out"), 1) == u64_at(x, t);
  EXPECT_TRUE(tg_cas_value) << what << ": one thread's value won the threadgroup compare-and-swap";
}

// ---- packed 16-bit atomic add --------------------------------------------------------------

// Thread t adds (lo[t] + lo2[t], hi[t]) into pair t % 8 of acc, a buffer of 16 f16 (or bf16)
// elements. lo + lo2 is an add in the 16-bit type: it rounds (docs/semantics.md), and the
// element then gets one rounding of its sum with that value.
std::string pair_ir(const char* dtype) {
  return std::string("kernel pairs mode=Elementwise {\n"
                     "  param lo: in buf<f32> extent=128\n"
                     "  param lo2: in buf<f32> extent=128\n"
                     "  param hi: in buf<f32> extent=128\n"
                     "  param acc: inout buf<") + dtype + "> extent=16\n"
         "  %0 = thread_id<0> : u32\n"
         "  %1 = load<lo> %0 : f32\n"
         "  %2 = load<hi> %0 : f32\n"
         "  %3 = cast %1 : " + dtype + "\n"
         "  %4 = cast %2 : " + dtype + "\n"
         "  %5 = const<7> : u32\n"
         "  %6 = and %0, %5 : u32\n"
         "  %7 = load<lo2> %0 : f32\n"
         "  %8 = cast %7 : " + dtype + "\n"
         "  %9 = add %3, %8 : " + dtype + "\n"
         "  atomic_add_pair<acc> %6, %9, %4\n"
         "}\n";
}

// Small multiples of a power of two, so every partial sum is exact in the 16-bit type and the
// result is the same in any order; pair 7 gets one thread's value only (threads 7, 15, ... add
// zero), a value with more precision than the type added to -1, so rounding it first shows.
std::vector<Buf> pair_buffers(DType d) {
  std::vector<uint32_t> lo(kN), hi(kN);
  for (uint32_t t = 0; t < kN; ++t) {
    lo[t] = bits_of(float(int(t % 13) - 6) * 0.25f);
    hi[t] = bits_of(float(int(t % 5) - 2) * -0.5f);
    if (t % 8 == 7) lo[t] = hi[t] = bits_of(t == 7 ? 1.0f : 0.0f);
  }
  // Thread 7's lo is 1 + (1/2 + 1/8) ulp of 1, just above half an ulp (both summands exact in
  // the type, the sum not): rounded, it is 1 + ulp and element 14 becomes ulp; adding the
  // unrounded value would give the exact, representable 5/8 ulp.
  std::vector<uint32_t> lo2(kN, 0);
  lo[7] = bits_of(1.0f);
  lo2[7] = bits_of(d == DType::F16 ? 0x1p-11f + 0x1p-13f : 0x1p-8f + 0x1p-10f);
  hi[7] = bits_of(-0.0f);
  std::vector<uint32_t> acc(8);
  for (uint32_t i = 0; i < 8; ++i) {
    const float a = i == 7 ? -1.0f : float(i) * 0.5f, b = -float(i);
    const uint16_t ha = d == DType::F16 ? num::f32_to_f16(a) : num::f32_to_bf16(a);
    const uint16_t hb = d == DType::F16 ? num::f32_to_f16(b) : num::f32_to_bf16(b);
    acc[i] = uint32_t(ha) | (uint32_t(hb) << 16);
  }
  return {{"lo", DType::F32, false, lo}, {"lo2", DType::F32, false, lo2}, {"hi", DType::F32, false, hi},
          {"acc", d, true, acc}};
}

// The definition: each element is the initial value plus every value rounded to the type, each
// add rounded once (exact here but for pair 7's rounding of lo).
std::vector<uint16_t> pair_reference(DType d, const std::vector<Buf>& in) {
  std::vector<float> e(16);
  const Buf& acc = find(in, "acc");
  auto widen = [&](uint16_t h) { return d == DType::F16 ? num::f16_to_f32(h) : num::bf16_to_f32(h); };
  auto narrow = [&](float f) { return d == DType::F16 ? num::f32_to_f16(f) : num::f32_to_bf16(f); };
  for (size_t i = 0; i < 16; ++i) e[i] = widen(u16_at(acc, i));
  for (uint32_t t = 0; t < kN; ++t) {
    const size_t p = t % 8;
    const float lo = widen(narrow(float_of(find(in, "lo").words[t]))) + widen(narrow(float_of(find(in, "lo2").words[t])));
    e[2 * p] = widen(narrow(e[2 * p] + widen(narrow(lo))));
    e[2 * p + 1] = widen(narrow(e[2 * p + 1] + widen(narrow(float_of(find(in, "hi").words[t])))));
  }
  std::vector<uint16_t> out;
  for (float f : e) out.push_back(narrow(f));
  return out;
}

void check_pairs(DType d, const std::vector<Buf>& in, const std::vector<Buf>& got, const std::string& what) {
  std::vector<uint16_t> want = pair_reference(d, in);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_EQ(u16_at(find(got, "acc"), i), want[i]) << what << ": element " << i << " (" << dtype_name(d) << ")";
}

// ---- bitcast at 16 and 64 bits -------------------------------------------------------------

// Every 16-bit pattern (two per u32 word, as u16 elements) through u16 -> f16 -> i16 -> bf16 ->
// u16, each step a bitcast; and i64 <-> u64. A 16-bit float NaN keeps "some NaN" only, so those
// patterns are compared as NaN-or-not (below).
const char* const kBitcastIr =
    "kernel bits16 mode=Elementwise {\n"
    "  param x: in buf<u16> extent=65536\n"
    "  param h: out buf<f16> extent=65536\n"
    "  param s: out buf<i16> extent=65536\n"
    "  param b: out buf<bf16> extent=65536\n"
    "  param back: out buf<u16> extent=65536\n"
    "  param w: in buf<i64> extent=65536\n"
    "  param uw: out buf<u64> extent=65536\n"
    "  %0 = thread_id<0> : u32\n"
    "  %1 = load<x> %0 : u16\n"
    "  %2 = bitcast %1 : f16\n"
    "  store<h> %0, %2\n"
    "  %3 = bitcast %2 : i16\n"
    "  store<s> %0, %3\n"
    "  %4 = bitcast %3 : bf16\n"
    "  store<b> %0, %4\n"
    "  %5 = bitcast %4 : u16\n"
    "  store<back> %0, %5\n"
    "  %6 = load<w> %0 : i64\n"
    "  %7 = bitcast %6 : u64\n"
    "  %8 = const<1> : u64\n"
    "  %9 = add %7, %8 : u64\n"
    "  %10 = bitcast %9 : i64\n"
    "  %11 = bitcast %10 : u64\n"
    "  store<uw> %0, %11\n"
    "}\n";

bool f16_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

std::vector<Buf> bitcast_buffers() {
  const uint32_t n = 65536;
  std::vector<uint32_t> x(n / 2), w(2 * n);
  for (uint32_t i = 0; i < n / 2; ++i) x[i] = (2 * i) | ((2 * i + 1) << 16);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t v = i == 0 ? 0xffffffffffffffffull : i == 1 ? 0x7fffffffffffffffull : (uint64_t(i) * 0xd1b54a32d192ed03ull);
    w[2 * i] = uint32_t(v);
    w[2 * i + 1] = uint32_t(v >> 32);
  }
  return {{"x", DType::U16, false, x},
          {"h", DType::F16, true, std::vector<uint32_t>(n / 2)},
          {"s", DType::I16, true, std::vector<uint32_t>(n / 2)},
          {"b", DType::BF16, true, std::vector<uint32_t>(n / 2)},
          {"back", DType::U16, true, std::vector<uint32_t>(n / 2)},
          {"w", DType::I64, false, w},
          {"uw", DType::U64, true, std::vector<uint32_t>(2 * n)}};
}

// The definition: a non-NaN pattern goes through every step unchanged (the 16-bit float is
// exact, so rounding it back gives its bits); a NaN pattern gives some NaN of the type at the
// float steps and, after it, some pattern that is a NaN of the type it was read as. (Every bf16
// NaN pattern is an f16 NaN pattern too.) On a device that flushes f32 subnormals, a pattern
// that is a bf16 subnormal (an f32 subnormal in the register) is left out.
void check_bitcasts(const std::vector<Buf>& got, const std::string& what, bool flushes = false) {
  int failures = 0;
  for (uint32_t i = 0; i < 65536 && failures < 8; ++i) {
    if (flushes && (i & 0x7f80u) == 0 && (i & 0x7fu) != 0) continue;
    const uint16_t h = u16_at(find(got, "h"), i), s = u16_at(find(got, "s"), i), b = u16_at(find(got, "b"), i),
                   back = u16_at(find(got, "back"), i);
    bool ok;
    if (f16_nan(uint16_t(i))) ok = f16_nan(h) && f16_nan(s) && bf16_nan(b) == bf16_nan(back);
    else if (bf16_nan(uint16_t(i))) ok = h == i && s == i && bf16_nan(b) && bf16_nan(back);
    else ok = h == i && s == i && b == i && back == i;
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": pattern 0x" << std::hex << i << " gave f16 0x" << h << ", i16 0x" << s << ", bf16 0x"
                    << b << ", u16 0x" << back << std::dec;
    }
  }
  for (uint32_t i = 0; i < 65536 && failures < 16; ++i) {
    const uint64_t in = u64_at(find(got, "w"), i);
    if (u64_at(find(got, "uw"), i) != in + 1) {
      ++failures;
      ADD_FAILURE() << what << ": i64 element " << i << " gave 0x" << std::hex << u64_at(find(got, "uw"), i);
    }
  }
}

const Launch kBitcastLaunch{{512, 1, 1}, {128, 1, 1}, false};

}  // namespace

// ---- the definitions on the interpreter and in eval ----------------------------------------

// u64 add wraps modulo 2^64, exchanges return every value once, one compare-and-swap wins; on
// buffers and threadgroup memory, unoptimized and optimized.
TEST(U64Atomics, OrderFreeResultsOnTheInterpreter) {
  ir::Kernel k = parse_verified(kU64AtomicIr);
  check_u64_atomics(run_interp(k, u64_atomic_buffers(), 8, kOneGroup), "interpreter, lane width 8");
  check_u64_atomics(run_interp(passes::optimize(k), u64_atomic_buffers(), 32, kOneGroup), "interpreter, optimized");
}

// u64 memory takes add, exchange and cas; min, max, and, or and i64 memory are located errors.
TEST(U64Atomics, VerifierAllowsAddExchangeCasAndNamesTheRest) {
  auto body = [](const std::string& op) {
    return "kernel v mode=Reduction {\n  param q: inout buf<u64> extent=8\n  param s: inout buf<i64> extent=8\n"
           "  %0 = local_id<0> : u32\n  %1 = cast %0 : u64\n" + op + "}\n";
  };
  EXPECT_EQ(diags_of(body("  %2 = atomic_add<q> %0, %1 : u64\n  %3 = atomic_exchange<q> %0, %1 : u64\n"
                          "  %4 = atomic_cas<q> %0, %1, %1 : u64\n")), "");
  for (const char* op : {"atomic_min", "atomic_max", "atomic_and", "atomic_or"}) {
    std::string d = diags_of(body(std::string("  %2 = ") + op + "<q> %0, %1 : u64 @\"k.cpp\":12\n"));
    EXPECT_NE(d.find("on u64 memory only add, exchange and cas are defined"), std::string::npos) << op << ": " << d;
    EXPECT_NE(d.find("k.cpp:12"), std::string::npos) << d;
  }
  std::string d = diags_of(body("  %2 = cast %1 : i64\n  %3 = atomic_add<s> %0, %2 : i64\n"));
  EXPECT_NE(d.find("atomics act on f32, i32 or u32 memory (u64: add, exchange and cas), not i64"), std::string::npos) << d;
}

// atomic_add_pair on f16 and bf16: each element one rounding of its sum with the value rounded
// to the type first, against a reference written from the definition.
TEST(AtomicAddPair, EachElementIsOneRoundingOfItsSumOnTheInterpreter) {
  for (DType d : {DType::F16, DType::BF16}) {
    ir::Kernel k = parse_verified(pair_ir(dtype_name(d)));
    std::vector<Buf> in = pair_buffers(d);
    const Launch l{{1, 1, 1}, {kN, 1, 1}, false};
    check_pairs(d, in, run_interp(k, in, 8, l), "interpreter");
    check_pairs(d, in, run_interp(passes::optimize(k), in, 32, l), "interpreter, optimized");
    // The value is rounded to the type before the add: element 14 is -1 + (1 + ulp) = ulp.
    std::vector<uint16_t> want = pair_reference(d, in);
    EXPECT_EQ(want[14], d == DType::F16 ? num::f32_to_f16(0x1p-10f) : num::f32_to_bf16(0x1p-7f));
  }
}

// Wrong buffers, dtypes and a result are located verifier errors; a pair past the buffer's last
// whole pair is a located interpreter error naming both elements.
TEST(AtomicAddPair, VerifierAndInterpreterGiveLocatedErrors) {
  auto body = [](const std::string& buf, const std::string& op) {
    return "kernel v mode=Elementwise {\n  param a: " + buf + "\n  %0 = thread_id<0> : u32\n"
           "  %1 = const<1> : f32\n  %2 = cast %1 : f16\n" + op + "}\n";
  };
  EXPECT_EQ(diags_of(body("inout buf<f16> extent=8", "  atomic_add_pair<a> %0, %2, %2\n")), "");
  std::string d = diags_of(body("in buf<f16> extent=8", "  atomic_add_pair<a> %0, %2, %2 @\"p.cpp\":4\n"));
  EXPECT_NE(d.find("needs an inout buffer ('a' is in)"), std::string::npos) << d;
  EXPECT_NE(d.find("p.cpp:4"), std::string::npos) << d;
  d = diags_of(body("inout buf<f32> extent=8", "  atomic_add_pair<a> %0, %1, %1\n"));
  EXPECT_NE(d.find("adds a pair into an f16 or bf16 buffer, not f32"), std::string::npos) << d;
  d = diags_of(body("inout buf<bf16> extent=8", "  atomic_add_pair<a> %0, %2, %2\n"));
  EXPECT_NE(d.find("lo is f16 but the buffer holds bf16 (insert a cast)"), std::string::npos) << d;
  d = diags_of(body("inout buf<f16> extent=8", "  %3 = atomic_add_pair<a> %0, %2, %2 : f16\n"));
  EXPECT_NE(d.find("defines no value"), std::string::npos) << d;
  // A pair index past the last whole pair is a located run-time error on the interpreter: a
  // 7-element buffer has pairs 0..2 (element 6 has no partner).
  ir::Kernel k = parse_verified(
      "kernel v mode=Elementwise {\n  param a: inout buf<f16> extent=7\n  %0 = thread_id<0> : u32\n"
      "  %1 = const<1> : f32\n  %2 = cast %1 : f16\n  atomic_add_pair<a> %0, %2, %2 @\"p.cpp\":9\n}\n");
  std::vector<uint32_t> words(4);
  std::vector<interp::BufferArg> args = {{words.data(), 14}};
  try {
    interp::run(k, DType::F32, args, {}, {1, 1, 1}, {4, 1, 1}, {});
    ADD_FAILURE() << "pair 3 of a 7-element buffer ran";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("at pair 3 (elements 6 and 7) is out of range: the buffer has 7 elements"), std::string::npos) << m;
    EXPECT_NE(m.find("p.cpp:9"), std::string::npos) << m;
  }
}

// Every 16-bit pattern through u16, f16, i16, bf16 and back, and i64 <-> u64, on the
// interpreter; eval rounds a 16-bit float register before taking its bits.
TEST(Bitcast, SixteenAndSixtyFourBitsOnTheInterpreterAndInEval) {
  ir::Kernel k = parse_verified(kBitcastIr);
  check_bitcasts(run_interp(k, bitcast_buffers(), 32, kBitcastLaunch), "interpreter");
  check_bitcasts(run_interp(passes::optimize(k), bitcast_buffers(), 32, kBitcastLaunch), "interpreter, optimized");
  // eval narrows a 16-bit float register value to its dtype as a store does (exact for the values
  // IR registers hold; an f32 value handed to eval directly shows the rounding):
  // 1 + 2^-11 (a tie in f16) gives 0x3c00, 1 + 2^-11 + 2^-20 gives 0x3c01; bf16 likewise.
  auto cast16 = [](DType from, DType to, float f) {
    eval::Scalar out;
    std::string error;
    const eval::Scalar in = eval::Scalar::of_f32(f);
    EXPECT_TRUE(eval::eval_pure(ir::Op::Bitcast, to, from, &in, 1, out, error)) << error;
    return out.bits;
  };
  EXPECT_EQ(cast16(DType::F16, DType::U16, 1.0f + 0x1p-11f), 0x3c00u);
  EXPECT_EQ(cast16(DType::F16, DType::U16, 1.0f + 0x1p-11f + 0x1p-20f), 0x3c01u);
  EXPECT_EQ(cast16(DType::BF16, DType::U16, 1.0f + 0x1p-8f + 0x1p-20f), 0x3f81u);
  EXPECT_EQ(cast16(DType::F16, DType::I16, -2.0f), 0xffffffffffffc000ull) << "an i16 register is sign-extended";
  EXPECT_EQ(cast16(DType::BF16, DType::F16, 1.0f), uint64_t(bits_of(num::f16_to_f32(0x3f80)))) << "bf16 1.0's bits as f16";
}

// bitcast within one width is allowed; across widths, or of i8/u8/bool/fp8, is a located error.
TEST(Bitcast, VerifierNamesTheWidths) {
  auto d = [](const std::string& from, const std::string& to) {
    return diags_of("kernel v mode=Elementwise {\n  param a: in buf<" + from + "> extent=8\n"
                    "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : " + from + "\n  %2 = bitcast %1 : " + to +
                    " @\"b.cpp\":3\n}\n");
  };
  for (auto [from, to] : {std::pair{"f16", "u16"}, {"bf16", "i16"}, {"i16", "f16"}, {"f16", "bf16"}, {"i64", "u64"},
                          {"u64", "i64"}, {"f32", "u32"}})
    EXPECT_EQ(d(from, to), "") << from << " -> " << to;
  for (auto [from, to] : {std::pair{"f16", "u32"}, {"f32", "u16"}, {"u64", "f32"}, {"u8", "i8"}, {"i32", "i64"}}) {
    std::string m = d(from, to);
    EXPECT_NE(m.find("bitcast converts between dtypes of one width"), std::string::npos) << from << " -> " << to << ": " << m;
    EXPECT_NE(m.find("b.cpp:3"), std::string::npos) << m;
  }
}

// ---- the DSL and the text form -------------------------------------------------------------

namespace {

using namespace iron::dsl;

// Every DSL call of this slice in one Elementwise body.
void wide_probe() {
  Buffer x = input("x", u32, {128});
  Buffer acc = inout("acc", u64, {4});
  Buffer grad = inout("grad", bf16, {16});
  Buffer bits = output("bits", u16, {128});
  Buffer wide = output("wide", i64, {128});
  Expr i = thread_id(0);
  Expr v = cast<u32>(x[i]);
  atomic_add(acc[0u], cast<u64>(v));
  atomic_exchange(acc[1u], cast<u64>(v));
  atomic_cas(acc[2u], cast<u64>(0u), cast<u64>(v));
  atomic_add_pair(grad[v & 7u], cast<bf16>(cast<f32>(v & 1u)), cast<bf16>(-0.75f));
  bits[i] = bitcast<u16>(cast<f16>(cast<f32>(v & 255u)));
  wide[i] = bitcast<i64>(cast<u64>(v) << 40u);
}

void pair_into_f32() {
  Buffer a = inout("a", f32, {8});
  atomic_add_pair(a[0u], 1.0f, 2.0f);
}

std::string trace_error(KernelBody body) {
  try {
    trace_kernel(KernelDecl{"wide_probe", body, Mode::Elementwise, {}, __FILE__, __LINE__});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The DSL spellings trace into verified IR that runs; a pair add into an f32 buffer is an
// error at its line; the text form of the new ops prints and parses back to the same text.
TEST(AtomicsBitcast, DslTracesRunsAndRoundTripsAsText) {
  EXPECT_EQ(trace_error(&wide_probe), "");
  ir::Kernel k = trace_kernel(KernelDecl{"wide_probe", &wide_probe, Mode::Elementwise, {}, __FILE__, __LINE__});
  std::vector<uint32_t> x(kN);
  for (uint32_t t = 0; t < kN; ++t) x[t] = t * 3 + 1;
  std::vector<Buf> got = run_interp(k,
                                    {{"x", DType::U32, false, x},
                                     {"acc", DType::U64, true, std::vector<uint32_t>(8)},
                                     {"grad", DType::BF16, true, std::vector<uint32_t>(8)},
                                     {"bits", DType::U16, true, std::vector<uint32_t>(kN / 2)},
                                     {"wide", DType::I64, true, std::vector<uint32_t>(2 * kN)}},
                                    32, {{1, 1, 1}, {kN, 1, 1}, false});
  uint64_t sum = 0;
  for (uint32_t t = 0; t < kN; ++t) sum += x[t];
  EXPECT_EQ(u64_at(find(got, "acc"), 0), sum);
  // Thread t adds (x & 1, -0.75) into pair x & 7: small sums, exact in bf16.
  std::vector<float> grad(16, 0.0f);
  for (uint32_t t = 0; t < kN; ++t) {
    grad[2 * (x[t] & 7u)] += float(x[t] & 1u);
    grad[2 * (x[t] & 7u) + 1] -= 0.75f;
  }
  for (size_t e = 0; e < 16; ++e) EXPECT_EQ(u16_at(find(got, "grad"), e), num::f32_to_bf16(grad[e])) << e;
  EXPECT_EQ(u16_at(find(got, "bits"), 5), num::f32_to_f16(float((5 * 3 + 1) & 255)));
  EXPECT_EQ(u64_at(find(got, "wide"), 5), uint64_t(5 * 3 + 1) << 40);
  const std::string e = trace_error(&pair_into_f32);
  EXPECT_NE(e.find("adds a pair into an f16 or bf16 buffer, not f32"), std::string::npos) << e;
  EXPECT_NE(e.find("atomics_bitcast_test.cpp:"), std::string::npos) << e;
  for (const std::string& text : {std::string(kU64AtomicIr), pair_ir("f16"), pair_ir("bf16"), std::string(kBitcastIr)}) {
    ir::Kernel p = parse_verified(text);
    const std::string printed = ir::print(p);
    EXPECT_EQ(ir::print(parse_verified(printed)), printed);
  }
  EXPECT_NE(ir::print(parse_verified(pair_ir("f16"))).find("  atomic_add_pair<acc> %6, %9, %4"), std::string::npos);
}

// ---- spellings -----------------------------------------------------------------------------

// The spellings: CUDA's unsigned long long atomics and __half2 / __nv_bfloat162 atomicAdd with
// the compare-and-swap fallback under __CUDA_ARCH__, GLSL's int64 atomics extension and the word
// loop; the GLSL compiles to SPIR-V and the CUDA through NVRTC for sm_75, sm_80 and sm_90a.
TEST(AtomicsBitcast, DialectsSpellTheContractAndCudaCompiles) {
  ir::Kernel a = passes::optimize(parse_verified(kU64AtomicIr));
  std::string cu = codegen::emit(a, DType::F32, codegen::Target::Cuda).source;
  std::string gl = codegen::emit(a, DType::F32, codegen::Target::Glsl).source;
  EXPECT_NE(cu.find("atomicAdd(&p_acc["), std::string::npos) << cu;
  EXPECT_NE(cu.find("atomicExch(&p_acc["), std::string::npos) << cu;
  EXPECT_NE(cu.find("atomicCAS(&p_acc["), std::string::npos) << cu;
  EXPECT_NE(gl.find("#extension GL_EXT_shader_atomic_int64 : require"), std::string::npos) << gl;
  EXPECT_NE(gl.find("atomicAdd(tg_slots["), std::string::npos) << gl;
  EXPECT_NE(gl.find("atomicCompSwap(p_acc.data["), std::string::npos) << gl;
  EXPECT_TRUE(codegen::compile_glsl(gl, "atom64").ok);
  for (const char* dt : {"f16", "bf16"}) {
    ir::Kernel p = passes::optimize(parse_verified(pair_ir(dt)));
    std::string pc = codegen::emit(p, DType::F32, codegen::Target::Cuda).source;
    std::string pg = codegen::emit(p, DType::F32, codegen::Target::Glsl).source;
    const bool f16 = std::string(dt) == "f16";
    EXPECT_NE(pc.find(f16 ? "atomicAdd(reinterpret_cast<__half2*>(p), __floats2half2_rn(lo, hi))"
                          : "atomicAdd(reinterpret_cast<__nv_bfloat162*>(p), __floats2bfloat162_rn(lo, hi))"),
              std::string::npos) << pc;
    EXPECT_NE(pc.find(f16 ? "#if __CUDA_ARCH__ >= 600" : "#if __CUDA_ARCH__ >= 800"), std::string::npos) << pc;
    EXPECT_NE(pg.find("atomicCompSwap(p_acc_bits.data["), std::string::npos) << pg;
    EXPECT_TRUE(codegen::compile_glsl(pg, "pairs").ok) << pg;
    for (const char* arch : {"sm_75", "sm_80", "sm_90a"}) {
      rt::NvrtcResult r = rt::nvrtc_compile(pc, "pairs", arch);
      EXPECT_TRUE(r.ok) << dt << " " << arch << ":\n" << r.log.substr(0, 4000) << "\n" << pc;
    }
  }
  // A 64-bit pair index is narrowed for GLSL's 32-bit array indices, as for every access.
  {
    std::string text = pair_ir("bf16");
    const std::string call = "  atomic_add_pair<acc> %6, %9, %4";
    text.replace(text.find(call), call.size(), "  %w = cast %6 : u64\n  atomic_add_pair<acc> %w, %9, %4");
    ir::Kernel wide = passes::optimize(parse_verified(text));
    std::string wg = codegen::emit(wide, DType::F32, codegen::Target::Glsl).source;
    EXPECT_TRUE(codegen::compile_glsl(wg, "pairs64").ok) << wg;
    std::string wc = codegen::emit(wide, DType::F32, codegen::Target::Cuda).source;
    EXPECT_TRUE(rt::nvrtc_compile(wc, "pairs64", "sm_90a").ok) << wc;
  }
  ir::Kernel b = passes::optimize(parse_verified(kBitcastIr));
  std::string bc = codegen::emit(b, DType::F32, codegen::Target::Cuda).source;
  EXPECT_NE(bc.find("__ushort_as_half("), std::string::npos) << bc;
  EXPECT_NE(bc.find("__bfloat16_as_ushort(__float2bfloat16_rn("), std::string::npos) << bc;
  std::string bg = codegen::emit(b, DType::F32, codegen::Target::Glsl).source;
  EXPECT_TRUE(codegen::compile_glsl(bg, "bits16").ok) << bg;
  for (const ir::Kernel* k : {&a, &b}) {
    std::string src = codegen::emit(*k, DType::F32, codegen::Target::Cuda).source;
    for (const char* arch : {"sm_80", "sm_90a"}) {
      rt::NvrtcResult r = rt::nvrtc_compile(src, k->name, arch);
      EXPECT_TRUE(r.ok) << k->name << " " << arch << ":\n" << r.log.substr(0, 4000) << "\n" << src;
    }
  }
}

// A Vulkan device without 64-bit atomics (on buffers, or on threadgroup memory) rejects a
// kernel that needs them, naming the kernel, the memory and the feature; with them, or for a
// kernel without u64 atomics, nothing.
TEST(U64Atomics, AVulkanDeviceWithoutTheFeatureRejectsTheKernel) {
  ir::Kernel k = parse_verified(kU64AtomicIr);
  DeviceInfo dev;
  dev.name = "test device";
  EXPECT_EQ(rt::vulkan_u64_atomics_problem(k, DType::F32, dev), "");
  dev.int64_atomics_buffer = false;
  std::string why = rt::vulkan_u64_atomics_problem(k, DType::F32, dev);
  EXPECT_NE(why.find("kernel 'atom64' uses u64 atomics on a buffer; device 'test device' does not support them "
                     "(shaderBufferInt64Atomics"),
            std::string::npos) << why;
  dev.int64_atomics_buffer = true;
  dev.int64_atomics_shared = false;
  why = rt::vulkan_u64_atomics_problem(k, DType::F32, dev);
  EXPECT_NE(why.find("uses u64 atomics on threadgroup memory; device 'test device' does not support them "
                     "(shaderSharedInt64Atomics"),
            std::string::npos) << why;
  dev.int64_atomics_buffer = dev.int64_atomics_shared = false;
  EXPECT_EQ(rt::vulkan_u64_atomics_problem(parse_verified(pair_ir("f16")), DType::F32, dev), "");
}

// ---- every device --------------------------------------------------------------------------

class AtomicsBitcastConformance : public DeviceTest {};

// Every device: the u64 atomics' order-free results.
TEST_P(AtomicsBitcastConformance, U64AtomicsGiveTheOrderFreeResults) {
  ir::Kernel k = parse_verified(kU64AtomicIr);
  check_u64_atomics(run_device(ctx(), k, u64_atomic_buffers(), kOneGroup), ctx().info().name);
}

// Every device: atomic_add_pair bit for bit with the definition, f16 and bf16.
TEST_P(AtomicsBitcastConformance, AtomicAddPairMatchesTheDefinition) {
  for (DType d : {DType::F16, DType::BF16}) {
    std::vector<Buf> in = pair_buffers(d);
    const Launch l{{1, 1, 1}, {kN, 1, 1}, false};
    check_pairs(d, in, run_device(ctx(), parse_verified(pair_ir(dtype_name(d))), in, l), ctx().info().name);
  }
}

// Every device: the 16- and 64-bit bitcasts bit for bit with the interpreter (NaNs as NaNs).
TEST_P(AtomicsBitcastConformance, BitcastsAgreeBitForBit) {
  ir::Kernel k = parse_verified(kBitcastIr);
  std::vector<Buf> got = run_device(ctx(), k, bitcast_buffers(), kBitcastLaunch);
  const bool flushes = ctx().info().f32_denormals_flushed;
  check_bitcasts(got, ctx().info().name, flushes);
  // Beyond the NaN rule: every non-NaN pattern equal to the interpreter's, word for word.
  std::vector<Buf> want = run_interp(k, bitcast_buffers(), ctx().info().lane_width, kBitcastLaunch);
  for (const char* name : {"h", "s", "b", "back"})
    for (uint32_t i = 0; i < 65536; ++i)
      if (!f16_nan(uint16_t(i)) && !(flushes && (i & 0x7f80u) == 0 && (i & 0x7fu) != 0)) {
        ASSERT_EQ(u16_at(find(got, name), i), u16_at(find(want, name), i)) << name << "[" << i << "]";
      }
}

INSTANTIATE_TEST_SUITE_P(Backends, AtomicsBitcastConformance, ::testing::Values(Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(backend_name(i.param)); });
