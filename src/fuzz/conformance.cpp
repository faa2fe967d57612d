// The op conformance suite (conformance.hpp): one generated kernel per op and dtype, edge-value
// inputs, eval::eval_pure as the oracle, run on one backend by `iron conformance`.
#include "fuzz/conformance.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "codegen/codegen.hpp"
#include "core/numeric.hpp"
#include "core/protocol.hpp"
#include "iron/runtime.hpp"
#include "passes/eval.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace iron::fuzz {
namespace {

using nlohmann::json;

void send(const json& msg) { std::cout << protocol::encode(msg) << "\n" << std::flush; }

constexpr uint32_t kGroup = 64;  // threads per threadgroup; every buffer is a multiple of it

const DType kAllTypes[] = {DType::F32, DType::F16,  DType::BF16, DType::F8E4M3, DType::F8E5M2,
                           DType::I8,  DType::U8,   DType::I16,  DType::U16,    DType::I32,
                           DType::U32, DType::I64,  DType::U64,  DType::Bool};

// The computational ops: pure, with operands, not a built-in; pairs have their own types.
bool computational(ir::Op op) {
  if (!ir::has_trait(op, ir::trait::P) || ir::has_trait(op, ir::trait::B)) return false;
  if (op == ir::Op::Const || op == ir::Op::Param || op == ir::Op::Arg || op == ir::Op::Pair || op == ir::Op::PairGet)
    return false;
  return ir::op_info(op).arity >= 1;
}

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float f32_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Edge values of each dtype as storage bit patterns (the low dtype_size bytes), most telling
// first: binary ops take the first kBinary of them in every combination, ternary the first
// kTernary.
constexpr size_t kBinary = 24, kTernary = 10;

std::vector<uint64_t> edge_values(DType t) {
  std::vector<uint64_t> v;
  auto f32 = [&](std::initializer_list<float> list) {
    for (float f : list) v.push_back(f32_bits(f));
  };
  switch (t) {
    case DType::F32:
      f32({0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 0.5f, -2.5f, 2.5f, 1.5f, 0x1p-149f, -0x1p-149f,
           0x1p-126f, 3.4028235e38f, -3.4028235e38f, 3.0f, 0.1f, -7.25f, 100.5f, 65520.0f, 2147483648.0f,
           -2147483648.0f, 1e-30f,
           // for casts, rounding and math (unary and cast cases take all of these)
           0x1.fffffep-127f, 8388607.5f, -8388607.5f, 16777217.0f, 4294967296.0f, 4294967040.0f, 255.5f, -128.5f,
           -129.0f, 65535.5f, 32767.5f, -32768.5f, 9.2233720e18f, -9.2233720e18f, 1.8446744e19f, 1e20f, -1e20f,
           448.0f, 464.0f, 57344.0f, 61440.0f, 0.49999997f, 0x1p-24f, 0x1p-10f, 6.2831855f, 1e10f, -0.75f});
      break;
    case DType::F16:
      v = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x3c00, 0xbc00, 0x3800, 0xc100, 0x4100, 0x3e00, 0x0001, 0x8001,
           0x0400, 0x7bff, 0xfbff, 0x4200, 0x2e66, 0xc740, 0x5648, 0x03ff, 0x3bff, 0x6400, 0x1400,
           0x7a00, 0xd800, 0x4248, 0x3555, 0x0200, 0xe000};
      break;
    case DType::BF16:
      v = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x3f80, 0xbf80, 0x3f00, 0xc020, 0x4020, 0x3fc0, 0x0001, 0x8001,
           0x0080, 0x7f7f, 0xff7f, 0x4040, 0x3dcd, 0xc0e8, 0x42c9, 0x007f, 0x4f00, 0xcf00, 0x0d80,
           0x5f80, 0x4b00, 0x3eab, 0x4049, 0x7f00, 0xdf00};
      break;
    case DType::F8E4M3:
      v = {0x00, 0x80, 0x7f, 0xff, 0x7e, 0xfe, 0x38, 0xb8, 0x30, 0x3c, 0x42, 0xc2, 0x01, 0x81, 0x07, 0x08, 0x77, 0x5c};
      break;
    case DType::F8E5M2:
      v = {0x00, 0x80, 0x7c, 0xfc, 0x7e, 0x7b, 0xfb, 0x3c, 0xbc, 0x38, 0x3e, 0x41, 0xc1, 0x01, 0x81, 0x03, 0x04, 0x5b};
      break;
    case DType::Bool: v = {0, 1}; break;
    default: {
      // Integers: the same list wrapped to each width (num::int_wrap), then its own MIN and MAX.
      const int64_t raw[] = {0, 1, -1, 2, -2, 3, 7, -7, 31, 32, 33, 63, 64, 65, 100, -100, 127, 128, 255, 256,
                             32767, 32768, 65535, 2147483647, int64_t(0x80000000ull), int64_t(0xffffffffull),
                             0x5555555555555555ll, -0x5555555555555556ll, 0x123456789abcdefll, 1000000007};
      v.push_back(uint64_t(num::int_min(t)));
      v.push_back(num::int_max(t));
      for (int64_t r : raw) v.push_back(num::int_wrap(t, uint64_t(r)));
      break;
    }
  }
  // Distinct patterns, in first-seen order (wrapping makes some integers equal).
  std::vector<uint64_t> out;
  const uint64_t mask = dtype_size(t) >= 8 ? ~0ull : (1ull << (8 * dtype_size(t))) - 1;
  for (uint64_t x : v) {
    x &= mask;
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  return out;
}

// The register value a load of storage bits gives (docs/semantics.md: floats widen exactly to
// an f32 register, integers sign- or zero-extend).
uint64_t register_of(DType t, uint64_t bits) {
  switch (t) {
    case DType::F32: return bits & 0xffffffffull;
    case DType::F16: return f32_bits(num::f16_to_f32(uint16_t(bits)));
    case DType::BF16: return f32_bits(num::bf16_to_f32(uint16_t(bits)));
    case DType::F8E4M3: case DType::F8E5M2: return f32_bits(num::fp8_to_f32(t, uint8_t(bits)));
    case DType::Bool: return bits ? 1 : 0;
    default: return num::int_wrap(t, bits);
  }
}

// The storage bits a store of a register value writes (a 16-bit or fp8 register holds a value of
// its dtype, so the narrowing is exact).
uint64_t storage_of(DType t, uint64_t reg) {
  switch (t) {
    case DType::F32: return reg & 0xffffffffull;
    case DType::F16: return num::f32_to_f16(f32_of(uint32_t(reg)));
    case DType::BF16: return num::f32_to_bf16(f32_of(uint32_t(reg)));
    case DType::F8E4M3: case DType::F8E5M2: return num::f32_to_fp8(t, f32_of(uint32_t(reg)));
    case DType::Bool: return reg ? 1 : 0;
    default: return reg;
  }
}

// Booleans travel as u8 buffers (a buffer holds a float or integer dtype).
DType storage_dtype(DType t) { return t == DType::Bool ? DType::U8 : t; }

void put(std::vector<unsigned char>& buf, size_t i, DType t, uint64_t bits) {
  const size_t n = dtype_size(storage_dtype(t));
  for (size_t b = 0; b < n; ++b) buf[i * n + b] = (unsigned char)(bits >> (8 * b));
}
uint64_t get(const std::vector<unsigned char>& buf, size_t i, DType t) {
  const size_t n = dtype_size(storage_dtype(t));
  uint64_t bits = 0;
  for (size_t b = 0; b < n; ++b) bits |= uint64_t(buf[i * n + b]) << (8 * b);
  return bits;
}

// The kernel: load each operand, apply the op, store the result (bools through u8).
std::string kernel_text(const std::string& name, ir::Op op, const std::vector<DType>& operands, DType result, size_t n) {
  std::ostringstream s;
  const bool lane = ir::has_trait(op, ir::trait::L);
  s << "kernel " << name << (lane ? " mode=Reduction {\n" : " mode=Elementwise {\n");
  for (size_t i = 0; i < operands.size(); ++i)
    s << "  param x" << i << ": in buf<" << dtype_name(storage_dtype(operands[i])) << "> extent=" << n << "\n";
  s << "  param r: out buf<" << dtype_name(storage_dtype(result)) << "> extent=" << n << "\n";
  if (lane)  // lane operations need a mode with threadgroups: the index from the group's place
    s << "  %g = program_id<0> : u32\n  %gs = group_size<0> : u32\n  %l = local_id<0> : u32\n"
         "  %gb = mul %g, %gs : u32\n  %i = add %gb, %l : u32\n";
  else
    s << "  %i = thread_id<0> : u32\n";
  std::string args;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string x = "%x" + std::to_string(i);
    if (operands[i] == DType::Bool) {
      s << "  " << x << "w = load<x" << i << "> %i : u8\n  %z" << i << " = const<0> : u8\n";
      s << "  " << x << " = ne " << x << "w, %z" << i << " : bool\n";
    } else {
      s << "  " << x << " = load<x" << i << "> %i : " << dtype_name(operands[i]) << "\n";
    }
    args += (i ? ", " : " ") + x;
  }
  s << "  %v = " << ir::mnemonic(op) << args << " : " << dtype_name(result) << "\n";
  if (result == DType::Bool) {
    s << "  %vb = cast %v : u8\n  store<r> %i, %vb\n";
  } else {
    s << "  store<r> %i, %v\n";
  }
  s << "}\n";
  return s.str();
}

// The operand and result dtypes an op is tried at: every dtype for each operand (the verifier
// decides); comparisons give bool; cast and bitcast every pair; select a bool condition.
struct Signature {
  std::vector<DType> operands;
  DType result;
};
std::vector<Signature> signatures(ir::Op op) {
  std::vector<Signature> out;
  const int arity = ir::op_info(op).arity;
  const bool compare = op == ir::Op::Eq || op == ir::Op::Ne || op == ir::Op::Lt || op == ir::Op::Le ||
                       op == ir::Op::Gt || op == ir::Op::Ge;
  for (DType t : kAllTypes) {
    if (op == ir::Op::Cast || op == ir::Op::Bitcast) {
      for (DType to : kAllTypes)
        if (to != t) out.push_back({{t}, to});
      continue;
    }
    if (op == ir::Op::Select) {
      out.push_back({{DType::Bool, t, t}, t});
      continue;
    }
    out.push_back({std::vector<DType>(size_t(arity), t), compare ? DType::Bool : t});
  }
  return out;
}

bool verifies(const ir::Kernel& k) {
  ir::Diagnostics d;
  if (!ir::verify(k, d)) return false;
  try {
    passes::optimize(k);  // type_check runs in the pipeline
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

bool is_subnormal_f32(uint64_t reg) {
  const uint32_t u = uint32_t(reg);
  return (u & 0x7f800000u) == 0 && (u & 0x7fffffu) != 0;
}

bool is_nan_f32(uint64_t reg) { return (uint32_t(reg) & 0x7fffffffu) > 0x7f800000u; }

// Is `bits` (the storage bits of a float dtype) a NaN of that dtype?
bool is_nan_bits(DType t, uint64_t bits) {
  switch (t) {
    case DType::F16: return (bits & 0x7fffu) > 0x7c00u;
    case DType::BF16: return (bits & 0x7fffu) > 0x7f80u;
    case DType::F32: return is_nan_f32(bits);
    default: return false;  // bitcast takes no 8-bit float (docs/semantics.md)
  }
}

std::string show(DType t, uint64_t reg) {
  std::ostringstream s;
  if (is_float(t)) {
    char b[64];
    std::snprintf(b, sizeof b, "%.9g", double(f32_of(uint32_t(reg))));
    s << b;
  } else if (t == DType::Bool) {
    s << (reg ? "true" : "false");
  } else if (is_signed_integer(t)) {
    s << int64_t(reg);
  } else {
    s << reg;
  }
  return s.str();
}

// docs/semantics.md's bound for a bounded op: is `got` close enough to `want` (f32 values) for
// input x (and y for pow)? Special inputs are exact.
bool within_bound(ir::Op op, DType result, float x, float y, float want, float got) {
  auto special = [](float v) { return v == 0 || std::isinf(v) || std::isnan(v); };
  bool exact = special(x);
  if (op == ir::Op::Pow) exact = special(x) || special(y) || x == 1.0f || (x < 0 && std::trunc(y) != y);
  if (op == ir::Op::Log2 || op == ir::Op::Log) exact = exact || x < 0;
  if (op == ir::Op::Log2 && (f32_bits(x) & 0x7fffffu) == 0) exact = true;  // log2(2^e) = e
  if (exact || std::isnan(want) || std::isinf(want)) {
    if (std::isnan(want)) return std::isnan(got);
    return f32_bits(want) == f32_bits(got);
  }
  const double err = std::fabs(double(got) - double(want)), aw = std::fabs(double(want));
  // A 16-bit result: the f32 results may round to neighbouring values of the dtype.
  const double slack = result == DType::F32 ? 0 : double(std::ldexp(1.0, std::ilogb(std::max(aw, 0x1p-14)) - (result == DType::F16 ? 10 : 7)));
  double bound = 0;
  switch (op) {
    case ir::Op::Sin: case ir::Op::Cos: bound = 0x1p-20; break;
    case ir::Op::Erf: bound = 0x1p-21 * aw; break;
    case ir::Op::Log2: bound = x >= 0.5f && x <= 2.0f ? 0x1p-17 : 0x1p-17 * aw; break;
    case ir::Op::Exp2: bound = std::max(0x1p-20 * aw, 0x1p-146); break;
    case ir::Op::Pow: bound = std::max((2 + std::fabs(double(y))) * 0x1p-17 * aw, 0x1p-146); break;
    case ir::Op::Exp: bound = aw < 0x1p-126 ? 0x1p-126 : 0x1p-16 * aw; break;
    case ir::Op::Log: bound = x >= 0.5f && x <= 2.0f ? 0x1p-17 : 0x1p-16 * aw; break;
    case ir::Op::Tanh: bound = 0x1p-20; break;
    case ir::Op::Rsqrt: bound = 2 * std::ldexp(1.0, std::ilogb(std::max(aw, 0x1p-126)) - 23); break;
    default: return f32_bits(want) == f32_bits(got);
  }
  return err <= bound + slack;
}

// Lane operations and their operand and result dtypes (the verifier decides which dtypes).
bool lane_op(ir::Op op) {
  return ir::has_trait(op, ir::trait::L) && !ir::has_trait(op, ir::trait::B) && ir::op_info(op).arity >= 1 &&
         op != ir::Op::Barrier && !ir::is_atomic(op) && op != ir::Op::TileFill && op != ir::Op::TileLoad &&
         op != ir::Op::TileTgLoad && op != ir::Op::TileMma && op != ir::Op::TileStore && op != ir::Op::TileTgStore &&
         op != ir::Op::TileGet && op != ir::Op::TileScaleAdd;
}
std::vector<Signature> lane_signatures(ir::Op op) {
  std::vector<Signature> out;
  if (op == ir::Op::LaneBallot) return {{{DType::Bool}, DType::U32}};
  if (op == ir::Op::LaneAny || op == ir::Op::LaneAll) return {{{DType::Bool}, DType::Bool}};
  const bool shuffle = op == ir::Op::LaneShuffle || op == ir::Op::LaneShuffleXor || op == ir::Op::LaneShuffleUp ||
                       op == ir::Op::LaneShuffleDown || op == ir::Op::LaneBroadcast;
  for (DType t : kAllTypes) out.push_back({shuffle ? std::vector<DType>{t, DType::U32} : std::vector<DType>{t}, t});
  return out;
}

// Source lanes of a shuffle: in range, the edges, just past a group of 8, 32 or 64, and huge.
const uint64_t kSourceLanes[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 0xffffffffu, 0x80000000u, 6, 4};
constexpr size_t kLaneElements = 256;  // four groups of 64: lane groups of 8, 32 and 64 all fit

void add_lane_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (int o = 0; o < int(ir::Op::Count_); ++o) {
    const ir::Op op = ir::Op(o);
    if (!lane_op(op)) continue;
    for (const Signature& sig : lane_signatures(op)) {
      const std::string name = std::string("conformance.") + ir::mnemonic(op) + "." + dtype_name(sig.operands[0]);
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      std::string kname = name;
      std::replace(kname.begin(), kname.end(), '.', '_');
      ConformanceCase c;
      try {
        c.kernel = ir::parse(kernel_text(kname, op, sig.operands, sig.result, kLaneElements));
      } catch (const std::exception&) {
        continue;
      }
      if (!verifies(c.kernel)) continue;
      c.name = name;
      c.op = op;
      c.operands = sig.operands;
      c.result = sig.result;
      c.lane = true;
      c.launch.dtype = DType::F32;
      c.launch.grid = {uint32_t(kLaneElements / kGroup), 1, 1};
      c.launch.threadgroup = {kGroup, 1, 1};
      for (DType t : sig.operands) c.launch.buffers.emplace_back(kLaneElements * dtype_size(storage_dtype(t)), 0);
      c.launch.buffers.emplace_back(kLaneElements * dtype_size(storage_dtype(sig.result)), 0xff);
      // Each lane its own edge value (a scrambled walk, so groups mix specials with ordinary
      // values); a shuffle's source lane from kSourceLanes.
      const std::vector<uint64_t> values = edge_values(sig.operands[0]);
      for (size_t i = 0; i < kLaneElements; ++i) {
        std::vector<uint64_t> regs;
        const uint64_t v = values[(i * 7 + i / 5) % values.size()];
        put(c.launch.buffers[0], i, sig.operands[0], v);
        regs.push_back(register_of(sig.operands[0], v));
        if (sig.operands.size() > 1) {
          // lane_broadcast's source is uniform over the lane group (one per threadgroup here).
          const uint64_t broadcast[] = {0, 5, 31, 0xffffffffu};
          const uint64_t src = op == ir::Op::LaneBroadcast
                                   ? broadcast[(i / kGroup) % 4]
                                   : kSourceLanes[(i * 5 + i / 3) % (sizeof kSourceLanes / sizeof kSourceLanes[0])];
          put(c.launch.buffers[1], i, DType::U32, src);
          regs.push_back(src);
        }
        c.args.push_back(std::move(regs));
      }
      cases.push_back(std::move(c));
    }
  }
}

// Atomics whose final memory does not depend on the order the threads reach it: add, min, max,
// and, or, on buffers and on threadgroup memory (exchange and compare-and-swap return values
// that do; AtomicsBitcastConformance covers them). 256 threads in 4 groups of 64: thread i
// applies its value to slot i % 4 of the buffer, or to slot local % 4 of its group's four
// threadgroup slots, which start from `init` and are copied out after a barrier.
constexpr size_t kAtomicThreads = 256;

std::string atomic_kernel_text(const std::string& name, ir::Op op, DType t) {
  const std::string T = dtype_name(t), m = ir::mnemonic(op);
  const bool tg = ir::is_tg_atomic(op);
  std::ostringstream s;
  s << "kernel " << name << " mode=Reduction {\n";
  s << "  param x0: in buf<" << T << "> extent=" << kAtomicThreads << "\n";
  if (tg) s << "  param init: in buf<" << T << "> extent=16\n  param r: out buf<" << T << "> extent=16\n";
  else s << "  param r: inout buf<" << T << "> extent=4\n";
  if (tg) s << "  %a = tg_alloc<slots, 4> : " << T << "\n";
  s << "  %g = program_id<0> : u32\n  %gs = group_size<0> : u32\n  %l = local_id<0> : u32\n"
       "  %gb = mul %g, %gs : u32\n  %i = add %gb, %l : u32\n";
  s << "  %x = load<x0> %i : " << T << "\n  %c4 = const<4> : u32\n";
  if (!tg) {
    s << "  %slot = rem %i, %c4 : u32\n  %v = " << m << "<r> %slot, %x : " << T << "\n}\n";
    return s.str();
  }
  s << "  %first = lt %l, %c4 : bool\n  %g4 = mul %g, %c4 : u32\n  %o = add %g4, %l : u32\n";
  s << "  if %first {\n    %iv = load<init> %o : " << T << "\n    tg_store %a, %l, %iv\n  }\n  barrier\n";
  s << "  %slot = rem %l, %c4 : u32\n  %v = " << m << " %a, %slot, %x : " << T << "\n  barrier\n";
  s << "  if %first {\n    %fv = tg_load %a, %l : " << T << "\n    store<r> %o, %fv\n  }\n}\n";
  return s.str();
}

void add_atomic_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (int o = 0; o < int(ir::Op::Count_); ++o) {
    const ir::Op op = ir::Op(o);
    if (!ir::is_atomic(op)) continue;
    const ir::Op kind = ir::atomic_kind(op);
    if (kind != ir::Op::AtomicAdd && kind != ir::Op::AtomicMin && kind != ir::Op::AtomicMax && kind != ir::Op::AtomicAnd &&
        kind != ir::Op::AtomicOr)
      continue;
    const ir::Op fold = kind == ir::Op::AtomicAdd ? ir::Op::Add : kind == ir::Op::AtomicMin ? ir::Op::Min
                        : kind == ir::Op::AtomicMax ? ir::Op::Max : kind == ir::Op::AtomicAnd ? ir::Op::And : ir::Op::Or;
    const bool tg = ir::is_tg_atomic(op);
    for (DType t : kAllTypes) {
      const std::string name = std::string("conformance.") + ir::mnemonic(op) + "." + dtype_name(t);
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      std::string kname = name;
      std::replace(kname.begin(), kname.end(), '.', '_');
      ConformanceCase c;
      try {
        c.kernel = ir::parse(atomic_kernel_text(kname, op, t));
      } catch (const std::exception&) {
        continue;
      }
      if (!verifies(c.kernel)) continue;
      // The values: the dtype's edge values without subnormals (a device may flush them); an
      // f32 add only values whose sums are exact in any order.
      std::vector<uint64_t> values;
      if (t == DType::F32 && kind == ir::Op::AtomicAdd) {
        for (float f : {1.0f, 2.0f, 0.5f, -3.0f, 0.0f, -0.0f, 1024.0f, -0.25f, 3.0f, -7.0f, 64.0f, 0.125f})
          values.push_back(f32_bits(f));
      } else {
        for (uint64_t v : edge_values(t))
          if (!(is_float(t) && is_subnormal_f32(register_of(t, v)))) values.push_back(v);
      }
      c.name = name;
      c.op = op;
      c.operands = {t};
      c.result = t;
      c.launch.dtype = DType::F32;
      c.launch.grid = {uint32_t(kAtomicThreads / kGroup), 1, 1};
      c.launch.threadgroup = {kGroup, 1, 1};
      const size_t outputs = tg ? 16 : 4, bytes = dtype_size(t);
      c.launch.buffers.emplace_back(kAtomicThreads * bytes, 0);
      std::vector<unsigned char> init(outputs * bytes, 0);
      for (size_t k = 0; k < outputs; ++k) put(init, k, t, values[(k * 3 + 1) % values.size()]);
      if (tg) {
        c.launch.buffers.push_back(init);
        c.launch.buffers.emplace_back(outputs * bytes, 0xff);
      } else {
        c.launch.buffers.push_back(init);
      }
      std::vector<eval::Scalar> acc(outputs);
      for (size_t k = 0; k < outputs; ++k) {
        acc[k] = eval::Scalar{register_of(t, get(init, k, t))};
        c.args.push_back({acc[k].bits});
      }
      bool evaluable = true;
      for (size_t i = 0; i < kAtomicThreads && evaluable; ++i) {
        const uint64_t bits = values[(i * 7 + i / 5) % values.size()];
        put(c.launch.buffers[0], i, t, bits);
        const size_t slot = tg ? (i / kGroup) * 4 + (i % kGroup) % 4 : i % 4;
        eval::Scalar args[2] = {acc[slot], eval::Scalar{register_of(t, bits)}}, out;
        std::string error;
        evaluable = eval::eval_pure(fold, t, t, args, 2, out, error);
        acc[slot] = out;
      }
      if (!evaluable) continue;
      c.want.assign(outputs * bytes, 0);
      for (size_t k = 0; k < outputs; ++k) put(c.want, k, t, storage_of(t, acc[k].bits));
      cases.push_back(std::move(c));
    }
  }
}

// Asynchronous copies (docs/semantics.md "Asynchronous copies"): 256 threads in groups of 64;
// thread i copies `count` elements x0[i * count ..] into its slot of a threadgroup array with
// valid = i % (count + 1) (every tail length, 0 included), commits, waits for none in flight,
// passes a barrier and writes its partner's (local id ^ 1) slot to r[i * count ..]. Every dtype
// of 1, 2, 4 or 8 bytes at every count that makes 4, 8 or 16 bytes.
constexpr size_t kAsyncThreads = 256;

std::string async_kernel_text(const std::string& name, DType t, uint32_t count) {
  const std::string T = dtype_name(t), c = std::to_string(count);
  const size_t n = kAsyncThreads * count;
  std::ostringstream s;
  s << "kernel " << name << " mode=Reduction {\n";
  s << "  param x0: in buf<" << T << "> extent=" << n << "\n  param r: out buf<" << T << "> extent=" << n << "\n";
  s << "  %a = tg_alloc<slots, " << kGroup * count << "> : " << T << "\n";
  s << "  %g = program_id<0> : u32\n  %gs = group_size<0> : u32\n  %l = local_id<0> : u32\n"
       "  %gb = mul %g, %gs : u32\n  %i = add %gb, %l : u32\n";
  s << "  %cc = const<" << c << "> : u32\n  %cv = const<" << count + 1 << "> : u32\n  %c1 = const<1> : u32\n";
  s << "  %src = mul %i, %cc : u32\n  %dst = mul %l, %cc : u32\n  %valid = rem %i, %cv : u32\n";
  s << "  async_copy<x0, " << c << "> %a, %dst, %src, %valid\n  async_commit\n  async_wait<0>\n  barrier\n";
  s << "  %o = xor %l, %c1 : u32\n  %ob = mul %o, %cc : u32\n";
  for (uint32_t e = 0; e < count; ++e) {
    const std::string E = std::to_string(e);
    s << "  %e" << E << " = const<" << E << "> : u32\n  %s" << E << " = add %ob, %e" << E << " : u32\n";
    s << "  %v" << E << " = tg_load %a, %s" << E << " : " << T << "\n  %t" << E << " = add %src, %e" << E << " : u32\n";
    s << "  store<r> %t" << E << ", %v" << E << "\n";
  }
  s << "}\n";
  return s.str();
}

void add_async_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (DType t : kAllTypes) {
    for (uint32_t count : {1u, 2u, 4u, 8u, 16u}) {
      const size_t bytes = count * dtype_size(t);
      if (bytes != 4 && bytes != 8 && bytes != 16) continue;
      const std::string name = std::string("conformance.async_copy.") + dtype_name(t) + ".x" + std::to_string(count);
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      std::string kname = name;
      std::replace(kname.begin(), kname.end(), '.', '_');
      ConformanceCase c;
      try {
        c.kernel = ir::parse(async_kernel_text(kname, t, count));
      } catch (const std::exception&) {
        continue;
      }
      if (!verifies(c.kernel)) continue;  // not a dtype async copies take
      const std::vector<uint64_t> values = edge_values(t);
      const size_t n = kAsyncThreads * count;
      c.name = name;
      c.op = ir::Op::AsyncCopy;
      c.operands = {t};
      c.result = t;
      c.launch.dtype = DType::F32;
      c.launch.grid = {uint32_t(kAsyncThreads / kGroup), 1, 1};
      c.launch.threadgroup = {kGroup, 1, 1};
      c.launch.buffers.emplace_back(n * dtype_size(storage_dtype(t)), 0);
      c.launch.buffers.emplace_back(n * dtype_size(storage_dtype(t)), 0xff);
      for (size_t i = 0; i < n; ++i) put(c.launch.buffers[0], i, t, values[(i * 5 + i / 7) % values.size()]);
      c.want.assign(n * dtype_size(storage_dtype(t)), 0);
      for (size_t i = 0; i < kAsyncThreads; ++i) {
        const size_t partner = (i / kGroup) * kGroup + ((i % kGroup) ^ 1u), valid = partner % (count + 1);
        for (size_t e = 0; e < count; ++e) {
          // The copy moves the bytes; the read-back (tg_load, then store) is a store of the
          // register value, which saturates fp8 (e5m2's infinity stores as its largest finite).
          const uint64_t bits = e < valid ? get(c.launch.buffers[0], partner * count + e, t) : 0;
          put(c.want, i * count + e, t, storage_of(t, register_of(t, bits)));
          c.args.push_back({register_of(t, bits)});
        }
      }
      cases.push_back(std::move(c));
    }
  }
}

// mbarriers and the bulk copy (docs/semantics.md "mbarriers, bulk copies, ..."): 256 threads in
// groups of 64. Thread 0 of a group initializes barrier 0 for one arrival and barrier 1 for the
// group; after a barrier it expects the group's bytes on barrier 0 and bulk-copies the group's
// 128 elements of x0 into a threadgroup array. Every thread waits (parity 0), reads its
// partner's (local id ^ 1) two elements, arrives on barrier 1 and waits (parity 0) so every read
// is done, stores them reversed into its own slots, arrives and waits again (parity 1), reads
// its partner's slots, and after a third phase (parity 0) stores them into its own, fences the
// async proxy and arrives; after the fourth phase (parity 1) thread 0 bulk-stores the array to r
// and waits for it: r[2i + e] = x0[2i + 1 - e]. Every dtype the copies take.
std::string bulk_kernel_text(const std::string& name, DType t) {
  const std::string T = dtype_name(t);
  const size_t n = kAsyncThreads * 2, per_group = kGroup * 2;
  std::ostringstream s;
  s << "kernel " << name << " mode=Reduction {\n";
  s << "  param x0: in buf<" << T << "> extent=" << n << "\n  param r: out buf<" << T << "> extent=" << n << "\n";
  s << "  %a = tg_alloc<slots, " << per_group << ", align=16> : " << T << "\n  %b = tg_alloc<bars, 2> : u64\n";
  s << "  %g = program_id<0> : u32\n  %gs = group_size<0> : u32\n  %l = local_id<0> : u32\n";
  s << "  %c0 = const<0> : u32\n  %c1 = const<1> : u32\n  %c2 = const<2> : u32\n";
  s << "  %cpg = const<" << per_group << "> : u32\n  %bytes = const<" << per_group * dtype_size(storage_dtype(t)) << "> : u32\n";
  s << "  %is0 = eq %l, %c0 : bool\n";
  s << "  if %is0 {\n    mbar_init %b, %c0, %c1\n    mbar_init %b, %c1, %gs\n  }\n  barrier\n";
  s << "  %src = mul %g, %cpg : u32\n";
  s << "  if %is0 {\n    mbar_arrive_tx %b, %c0, %bytes\n    bulk_copy<x0, " << per_group
    << "> %a, %c0, %src, %b, %c0\n  }\n";
  s << "  mbar_wait %b, %c0, %c0\n";
  s << "  %o = xor %l, %c1 : u32\n  %ob = mul %o, %c2 : u32\n  %ob1 = add %ob, %c1 : u32\n";
  s << "  %mb = mul %l, %c2 : u32\n  %mb1 = add %mb, %c1 : u32\n";
  s << "  %v0 = tg_load %a, %ob : " << T << "\n  %v1 = tg_load %a, %ob1 : " << T << "\n";
  s << "  mbar_arrive %b, %c1\n  mbar_wait %b, %c1, %c0\n";
  s << "  tg_store %a, %mb, %v1\n  tg_store %a, %mb1, %v0\n";
  s << "  mbar_arrive %b, %c1\n  mbar_wait %b, %c1, %c1\n";
  s << "  %w0 = tg_load %a, %ob : " << T << "\n  %w1 = tg_load %a, %ob1 : " << T << "\n";
  s << "  mbar_arrive %b, %c1\n  mbar_wait %b, %c1, %c0\n";
  s << "  tg_store %a, %mb, %w0\n  tg_store %a, %mb1, %w1\n  fence_proxy_async\n";
  s << "  mbar_arrive %b, %c1\n  mbar_wait %b, %c1, %c1\n";
  s << "  if %is0 {\n    bulk_store<r, " << per_group << "> %a, %c0, %src\n    bulk_commit\n    bulk_wait<0>\n  }\n";
  s << "}\n";
  return s.str();
}

void add_bulk_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (DType t : kAllTypes) {
    const std::string name = std::string("conformance.bulk_copy.") + dtype_name(t);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    std::string kname = name;
    std::replace(kname.begin(), kname.end(), '.', '_');
    ConformanceCase c;
    try {
      c.kernel = ir::parse(bulk_kernel_text(kname, t));
    } catch (const std::exception&) {
      continue;
    }
    if (!verifies(c.kernel)) continue;  // not a dtype the copy takes (bool)
    const std::vector<uint64_t> values = edge_values(t);
    const size_t n = kAsyncThreads * 2, size = dtype_size(storage_dtype(t));
    c.name = name;
    c.op = ir::Op::BulkCopy;
    c.operands = {t};
    c.result = t;
    c.launch.dtype = DType::F32;
    c.launch.grid = {uint32_t(kAsyncThreads / kGroup), 1, 1};
    c.launch.threadgroup = {kGroup, 1, 1};
    c.launch.buffers.emplace_back(n * size, 0);
    c.launch.buffers.emplace_back(n * size, 0xff);
    for (size_t i = 0; i < n; ++i) put(c.launch.buffers[0], i, t, values[(i * 3 + i / 5) % values.size()]);
    c.want.assign(n * size, 0);
    for (size_t i = 0; i < n; ++i) {
      // The bytes move exactly; the reads and stores after the copy go through registers, which
      // saturate fp8 on the way back (e5m2's infinity stores as its largest finite).
      const uint64_t bits = get(c.launch.buffers[0], (i ^ 1u), t);
      put(c.want, i, t, storage_of(t, register_of(t, bits)));
      c.args.push_back({register_of(t, bits)});
    }
    cases.push_back(std::move(c));
  }
}

// Tensor-map copies (docs/semantics.md "Tensor-map copies"). A tensor x0 of kTmaBoxes boxes'
// worth of elements, W x H, and a map over it with a box of w x h and a swizzle span S (0:
// none; the box row is then 48 bytes, else S); four threadgroups of kGroup threads, each
// loading one box at the coordinates c[2g], c[2g + 1] (runtime values, so a coordinate that
// became 0 shows) into a 1024-aligned array at element `at` (a multiple of the swizzle's
// pattern: a box at a non-zero offset). Loads: every thread reads box elements o = l, l + 64,
// ... through the swizzle (o's byte b read at b ^ (((b >> 7) & (S/16 - 1)) << 4)) and stores them
// to r[g * w * h + o]. Stores: the threads write box element o (x0's element at the box
// position, or its index where that is outside) at the swizzled place, fence, and thread 0
// stores the box through a map over r (elements outside the tensor not written).
struct TmaGeometry {
  uint32_t es, span, w, h, W, H, at;
  uint64_t n() const { return uint64_t(w) * h; }
};
TmaGeometry tma_geometry(DType t, uint32_t span) {
  TmaGeometry g;
  g.es = uint32_t(dtype_size(t));
  g.span = span;
  g.w = (span ? span : 48) / g.es;
  g.h = 10;                          // crosses the 8-row pattern
  g.W = 2 * g.w + 64 / g.es;         // a row of 2w + 64 bytes: a multiple of 16
  g.H = 2 * g.h + 3;
  g.at = (span ? 8 * span : 128) / g.es;  // one pattern (or 128 bytes) in
  return g;
}
// Where the four boxes lie: inside the tensor, past every side of it (edge), past its far sides
// only (far: x + w > W or y + h > H, every coordinate >= 0), or before its origin only (near: a
// negative x or y, nothing past W or H).
enum class TmaPlace : uint8_t { Inside, Edge, Far, Near };
const char* tma_place_suffix(TmaPlace p) {
  switch (p) {
    case TmaPlace::Inside: return "";
    case TmaPlace::Edge: return ".edge";
    case TmaPlace::Far: return ".far";
    case TmaPlace::Near: return ".near";
  }
  return "";
}
// The coordinates of the four boxes. Every x is a multiple of q = 16 bytes' worth of elements (a
// box row starts on a 16-byte boundary of the tensor, docs/semantics.md); y is free.
std::vector<int32_t> tma_coords(const TmaGeometry& g, TmaPlace place) {
  const int32_t q = int32_t(16 / g.es), half = int32_t(g.w / 2) / q * q;
  const int32_t W = int32_t(g.W), H = int32_t(g.H), w = int32_t(g.w), h = int32_t(g.h);
  switch (place) {
    case TmaPlace::Inside: return {0, 0, w, 0, half, h, W - w, H - h};
    case TmaPlace::Edge: return {-q, -2, W - half, 1, q, H - 4, W - q, H - 3};
    case TmaPlace::Far: return {W - half, 1, q, H - 4, W - q, H - 3, W - w, H - h + 1};
    case TmaPlace::Near: return {-q, 0, 0, -2, -half, -3, q, -1};
  }
  return {};
}

std::string tma_kernel_text(const std::string& name, DType t, const TmaGeometry& g, bool store) {
  const std::string T = dtype_name(t);
  const uint64_t n = g.n();
  std::ostringstream s;
  s << "kernel " << name << " mode=Reduction {\n";
  s << "  param x0: in buf<" << T << "> extent=" << uint64_t(g.W) * g.H << "\n  param c: in buf<i32> extent=8\n";
  s << "  param map: tensormap\n";
  if (store) s << "  param omap: tensormap\n  param r: inout buf<" << T << "> extent=" << uint64_t(g.W) * g.H << "\n";
  else s << "  param r: out buf<" << T << "> extent=" << 4 * n << "\n";
  s << "  %a = tg_alloc<box, " << g.at + n << ", align=1024> : " << T << "\n  %b = tg_alloc<bars, 1> : u64\n";
  s << "  %g = program_id<0> : u32\n  %l = local_id<0> : u32\n  %c0 = const<0> : u32\n  %c1 = const<1> : u32\n";
  s << "  %c2 = const<2> : u32\n  %at = const<" << g.at << "> : u32\n  %cn = const<" << n << "> : u32\n";
  s << "  %is0 = eq %l, %c0 : bool\n";
  s << "  %ci = mul %g, %c2 : u32\n  %x = load<c> %ci : i32\n  %ci1 = add %ci, %c1 : u32\n  %y = load<c> %ci1 : i32\n";
  s << "  %rb = mul %g, %cn : u32\n";
  if (!store) {
    s << "  if %is0 {\n    mbar_init %b, %c0, %c1\n  }\n  barrier\n";
    s << "  if %is0 {\n    %bytes = const<" << n * g.es << "> : u32\n    mbar_arrive_tx %b, %c0, %bytes\n";
    s << "    tma_load_2d<map> %a, %at, %x, %y, %b, %c0\n  }\n";
    s << "  mbar_wait %b, %c0, %c0\n";
  } else {
    s << "  %cw = const<" << g.w << "> : u32\n  %cW = const<" << g.W << "> : i32\n  %cH = const<" << g.H << "> : i32\n";
    s << "  %z = const<0> : i32\n";
  }
  const uint32_t base = g.es >= 16 ? 0 : uint32_t(__builtin_ctz(16 / g.es));
  for (uint64_t j = 0; j * kGroup < n; ++j) {
    const std::string J = std::to_string(j);
    s << "  %k" << J << " = const<" << j * kGroup << "> : u32\n  %o" << J << " = add %l, %k" << J << " : u32\n";
    s << "  %in" << J << " = lt %o" << J << ", %cn : bool\n  if %in" << J << " {\n";
    std::string e = "%o" + J;
    if (g.span) {
      s << "    %s1_" << J << " = const<" << base + 3 << "> : u32\n    %t1_" << J << " = shr %o" << J << ", %s1_" << J << " : u32\n";
      s << "    %m_" << J << " = const<" << g.span / 16 - 1 << "> : u32\n    %t2_" << J << " = and %t1_" << J << ", %m_" << J << " : u32\n";
      s << "    %s3_" << J << " = const<" << base << "> : u32\n    %t3_" << J << " = shl %t2_" << J << ", %s3_" << J << " : u32\n";
      s << "    %e_" << J << " = xor %o" << J << ", %t3_" << J << " : u32\n";
      e = "%e_" + J;
    }
    s << "    %p_" << J << " = add %at, " << e << " : u32\n";
    if (!store) {
      s << "    %v_" << J << " = tg_load %a, %p_" << J << " : " << T << "\n";
      s << "    %ri_" << J << " = add %rb, %o" << J << " : u32\n    store<r> %ri_" << J << ", %v_" << J << "\n";
    } else {
      // The box position (x + o mod w, y + o / w): x0's element there when it is inside, else
      // x0's element o (a value the copy must not write anywhere).
      s << "    %cr_" << J << " = div %o" << J << ", %cw : u32\n    %cc_" << J << " = rem %o" << J << ", %cw : u32\n";
      s << "    %ir_" << J << " = cast %cr_" << J << " : i32\n    %ic_" << J << " = cast %cc_" << J << " : i32\n";
      s << "    %gy_" << J << " = add %y, %ir_" << J << " : i32\n    %gx_" << J << " = add %x, %ic_" << J << " : i32\n";
      s << "    %a1_" << J << " = ge %gx_" << J << ", %z : bool\n    %a2_" << J << " = lt %gx_" << J << ", %cW : bool\n";
      s << "    %a3_" << J << " = ge %gy_" << J << ", %z : bool\n    %a4_" << J << " = lt %gy_" << J << ", %cH : bool\n";
      s << "    %b1_" << J << " = and %a1_" << J << ", %a2_" << J << " : bool\n    %b2_" << J << " = and %a3_" << J << ", %a4_" << J << " : bool\n";
      s << "    %ok_" << J << " = and %b1_" << J << ", %b2_" << J << " : bool\n";
      s << "    %gi_" << J << " = mul %gy_" << J << ", %cW : i32\n    %gj_" << J << " = add %gi_" << J << ", %gx_" << J << " : i32\n";
      s << "    %oi_" << J << " = cast %o" << J << " : i32\n    %src_" << J << " = select %ok_" << J << ", %gj_" << J << ", %oi_" << J << " : i32\n";
      s << "    %v_" << J << " = load<x0> %src_" << J << " : " << T << "\n    tg_store %a, %p_" << J << ", %v_" << J << "\n";
    }
    s << "  }\n";
  }
  if (store) {
    s << "  fence_proxy_async\n  barrier\n";
    s << "  if %is0 {\n    tma_store_2d<omap> %a, %at, %x, %y\n    bulk_commit\n    bulk_wait<0>\n  }\n";
  }
  s << "}\n";
  return s.str();
}

void add_tma_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  struct Variant {
    DType t;
    uint32_t span;
    TmaPlace place;
    bool store;
  };
  const TmaPlace in = TmaPlace::Inside, edge = TmaPlace::Edge, far = TmaPlace::Far, near = TmaPlace::Near;
  const Variant variants[] = {
      {DType::BF16, 0, in, false},    {DType::BF16, 32, in, false},    {DType::BF16, 64, in, false},
      {DType::BF16, 128, in, false},  {DType::BF16, 0, edge, false},   {DType::BF16, 128, edge, false},
      {DType::F32, 0, in, false},     {DType::F32, 64, edge, false},   {DType::U8, 128, in, false},
      {DType::F8E4M3, 32, edge, false}, {DType::BF16, 0, in, true},    {DType::BF16, 128, in, true},
      {DType::BF16, 0, far, true},    {DType::BF16, 128, far, true},   {DType::F32, 32, in, true},
      {DType::F32, 0, near, false},
  };
  // (A store before the origin is an error, docs/semantics.md; a load there zero-fills.)
  for (const Variant& v : variants) {
    const std::string name = std::string("conformance.") + (v.store ? "tma_store_2d." : "tma_load_2d.") + dtype_name(v.t) +
                             (v.span ? ".swizzle" + std::to_string(v.span) : std::string(".noswizzle")) +
                             tma_place_suffix(v.place);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    std::string kname = name;
    std::replace(kname.begin(), kname.end(), '.', '_');
    const TmaGeometry g = tma_geometry(v.t, v.span);
    ConformanceCase c;
    c.kernel = ir::parse(tma_kernel_text(kname, v.t, g, v.store));
    if (!verifies(c.kernel)) throw Error("conformance: the tensor-map kernel " + name + " does not verify");
    c.name = name;
    c.op = v.store ? ir::Op::TmaStore2D : ir::Op::TmaLoad2D;
    c.operands = {v.t};
    c.result = v.t;
    c.launch.dtype = DType::F32;
    c.launch.grid = {4, 1, 1};
    c.launch.threadgroup = {kGroup, 1, 1};
    const uint64_t elems = uint64_t(g.W) * g.H, n = g.n();
    const std::vector<uint64_t> values = edge_values(v.t);
    c.launch.buffers.emplace_back(elems * g.es, 0);
    for (uint64_t i = 0; i < elems; ++i) put(c.launch.buffers[0], i, v.t, values[(i * 2654435761u >> 5) % values.size()]);
    const std::vector<int32_t> xy = tma_coords(g, v.place);
    c.launch.buffers.emplace_back(8 * 4, 0);
    for (size_t i = 0; i < 8; ++i) put(c.launch.buffers[1], i, DType::I32, uint64_t(uint32_t(xy[i])));
    c.launch.maps.push_back({0, {g.W, g.H}, {g.w, g.h}, g.span});
    const auto inside = [&](int64_t x, int64_t y) { return x >= 0 && y >= 0 && x < int64_t(g.W) && y < int64_t(g.H); };
    if (!v.store) {
      c.launch.buffers.emplace_back(4 * n * g.es, 0xff);
      c.want.assign(4 * n * g.es, 0);
      for (uint64_t b = 0; b < 4; ++b)
        for (uint64_t o = 0; o < n; ++o) {
          const int64_t x = xy[2 * b] + int64_t(o % g.w), y = xy[2 * b + 1] + int64_t(o / g.w);
          const uint64_t bits = inside(x, y) ? get(c.launch.buffers[0], uint64_t(y) * g.W + uint64_t(x), v.t) : 0;
          // Through a register and a store (fp8 saturates on the way back, as in bulk_copy's case).
          put(c.want, b * n + o, v.t, storage_of(v.t, register_of(v.t, bits)));
          c.args.push_back({register_of(v.t, bits)});
        }
    } else {
      // r starts as x0's bytes with every element's lowest byte flipped: an element no box
      // covers keeps that, one a box covers is x0's element there.
      c.launch.maps.push_back({2, {g.W, g.H}, {g.w, g.h}, g.span});
      c.launch.buffers.push_back(c.launch.buffers[0]);
      for (uint64_t i = 0; i < elems; ++i) c.launch.buffers[2][i * g.es] ^= 0x5a;
      c.want = c.launch.buffers[2];
      for (uint64_t b = 0; b < 4; ++b)
        for (uint64_t o = 0; o < n; ++o) {
          const int64_t x = xy[2 * b] + int64_t(o % g.w), y = xy[2 * b + 1] + int64_t(o / g.w);
          if (!inside(x, y)) continue;
          const uint64_t at = uint64_t(y) * g.W + uint64_t(x);
          put(c.want, at, v.t, storage_of(v.t, register_of(v.t, get(c.launch.buffers[0], at, v.t))));
        }
      for (uint64_t i = 0; i < elems; ++i) c.args.push_back({register_of(v.t, get(c.want, i, v.t))});
    }
    cases.push_back(std::move(c));
  }
}

// Tensor-map boxes read through a tile layout: an f16 tensor whose element i holds i (exact),
// a box of w x 32 with the swizzle span S = 2w bytes loaded at (x, y) = (8, 5); lane group 0
// loads the 16 x 16 fragment at row 16, column 16 mod w of the box with TileLayout swizzle
// {log2(S / 16), 3, 3} (the TMA's pattern for 16-bit elements; offset folded in first) and
// multiplies it by the identity, so r holds the box's elements there.
void add_tma_tile_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (uint32_t span : {32u, 64u, 128u}) {
    const std::string name = "conformance.tma_tile.f16.swizzle" + std::to_string(span);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    std::string kname = name;
    std::replace(kname.begin(), kname.end(), '.', '_');
    const uint32_t w = span / 2, h = 32, W = 160, H = 48, x = 8, y = 5;
    const int64_t code = 100 * (span == 32 ? 1 : span == 64 ? 2 : 3) + 33;
    const uint32_t off = 16 * w + (16 % w);
    std::ostringstream s;
    s << "kernel " << kname << " mode=Reduction {\n";
    s << "  param x0: in buf<f16> extent=" << W * H << "\n  param x1: in buf<f16> extent=256\n  param map: tensormap\n";
    s << "  param r: out buf<f32> extent=256\n";
    s << "  %a = tg_alloc<box, " << w * h << ", align=1024> : f16\n  %b = tg_alloc<bars, 1> : u64\n";
    s << "  %l = local_id<0> : u32\n  %c0 = const<0> : u32\n  %c1 = const<1> : u32\n  %c16 = const<16> : u32\n";
    s << "  %x = const<" << x << "> : i32\n  %y = const<" << y << "> : i32\n  %is0 = eq %l, %c0 : bool\n";
    s << "  if %is0 {\n    mbar_init %b, %c0, %c1\n  }\n  barrier\n";
    s << "  if %is0 {\n    %bytes = const<" << w * h * 2 << "> : u32\n    mbar_arrive_tx %b, %c0, %bytes\n";
    s << "    tma_load_2d<map> %a, %c0, %x, %y, %b, %c0\n  }\n  mbar_wait %b, %c0, %c0\n";
    s << "  %w = simd_group_id : u32\n  %first = eq %w, %c0 : bool\n  if %first {\n";
    s << "    %off = const<" << off << "> : u32\n    %st = const<" << w << "> : u32\n";
    s << "    %t = tile_tg_load<swizzle=" << code << "> %a, %off, %st : frag<a, f16, 16x16x16>\n";
    s << "    %i = tile_load<x1> %c0, %c16 : frag<b, f16, 16x16x16>\n";
    s << "    %zf = const<0> : f32\n    %z = tile_fill %zf : frag<acc, f32, 16x16x16>\n";
    s << "    %p = tile_mma %t, %i, %z : frag<acc, f32, 16x16x16>\n    tile_store<r> %p, %c0, %c16\n  }\n}\n";
    ConformanceCase c;
    c.kernel = ir::parse(s.str());
    if (!verifies(c.kernel)) throw Error("conformance: the tensor-map tile kernel " + name + " does not verify");
    c.name = name;
    c.op = ir::Op::TmaLoad2D;
    c.operands = {DType::U32};  // reported per element: the tensor index it holds
    c.result = DType::F32;
    c.launch.dtype = DType::F32;
    c.launch.grid = {1, 1, 1};
    c.launch.threadgroup = {kGroup, 1, 1};
    c.launch.buffers.emplace_back(W * H * 2, 0);
    c.launch.buffers.emplace_back(256 * 2, 0);
    c.launch.buffers.emplace_back(256 * 4, 0xff);
    for (uint32_t i = 0; i < W * H; ++i) put(c.launch.buffers[0], i, DType::F16, num::f32_to_f16(float(i % 2048)));
    for (uint32_t i = 0; i < 16; ++i) put(c.launch.buffers[1], i * 17, DType::F16, num::f32_to_f16(1.0f));
    c.launch.maps.push_back({0, {W, H}, {w, h}, span});
    c.want.assign(256 * 4, 0);
    for (uint32_t r = 0; r < 16; ++r)
      for (uint32_t col = 0; col < 16; ++col) {
        const uint32_t o = off + r * w + col;  // the box element the fragment's (r, col) is
        const uint32_t idx = (y + o / w) * W + x + o % w;
        put(c.want, r * 16 + col, DType::F32, eval::Scalar::of_f32(float(idx % 2048)).bits);
        c.args.push_back({uint64_t(idx)});
      }
    cases.push_back(std::move(c));
  }
}

// Tile layouts (docs/semantics.md "Tile layouts"): a threadgroup of kGroup threads stages 2048
// f16 values (element i holds i, exact in f16) into a threadgroup array by asynchronous 16-byte
// copies; lane group 0 then loads one fragment from it with a layout (offset, stride, column-major,
// swizzle) and multiplies it by the identity (a fragment of the other role read from x1), so r
// holds the loaded matrix. The oracle applies the definition here, not the interpreter.
constexpr uint32_t kLayoutElems = 2048;

struct TileLayoutCase {
  uint32_t off, stride;
  int64_t swizzle;  // 0: none
};
const TileLayoutCase kTileLayouts[] = {
    {0, 32, 233}, {528, 32, 233}, {1032, 64, 333}, {112, 128, 334}, {3, 40, 0}, {5, 32, 233}, {1024, 64, 0},
};

std::string tile_layout_kernel_text(const std::string& name, bool b_role, bool col_major, const TileLayoutCase& t) {
  std::ostringstream s;
  s << "kernel " << name << " mode=Reduction {\n";
  s << "  param x0: in buf<f16> extent=" << kLayoutElems << "\n  param x1: in buf<f16> extent=256\n";
  s << "  param r: out buf<f32> extent=256\n";
  s << "  %a = tg_alloc<stage, " << kLayoutElems << ", align=16> : f16\n";
  s << "  %l = local_id<0> : u32\n  %c0 = const<0> : u32\n  %c8 = const<8> : u32\n  %c16 = const<16> : u32\n";
  s << "  %d = mul %l, %c8 : u32\n";
  for (uint32_t j = 0; j < kLayoutElems / (kGroup * 8); ++j) {
    s << "  %o" << j << " = const<" << j * kGroup * 8 << "> : u32\n  %d" << j << " = add %d, %o" << j << " : u32\n";
    s << "  async_copy<x0, 8> %a, %d" << j << ", %d" << j << ", %c8\n";
  }
  s << "  async_commit\n  async_wait<0>\n  barrier\n";
  s << "  %w = simd_group_id : u32\n  %first = eq %w, %c0 : bool\n  if %first {\n";
  s << "    %off = const<" << t.off << "> : u32\n    %st = const<" << t.stride << "> : u32\n";
  std::string attrs;
  if (t.swizzle) attrs += "swizzle=" + std::to_string(t.swizzle);
  if (col_major) attrs += std::string(attrs.empty() ? "" : ", ") + "col_major=1";
  if (!attrs.empty()) attrs = "<" + attrs + ">";
  const char* role = b_role ? "b" : "a";
  const char* other = b_role ? "a" : "b";
  s << "    %t = tile_tg_load" << attrs << " %a, %off, %st : frag<" << role << ", f16, 16x16x16>\n";
  s << "    %i = tile_load<x1> %c0, %c16 : frag<" << other << ", f16, 16x16x16>\n";
  s << "    %zf = const<0> : f32\n    %z = tile_fill %zf : frag<acc, f32, 16x16x16>\n";
  s << "    %p = tile_mma " << (b_role ? "%i, %t" : "%t, %i") << ", %z : frag<acc, f32, 16x16x16>\n";
  s << "    tile_store<r> %p, %c0, %c16\n  }\n}\n";
  return s.str();
}

// Threadgroup aliases (docs/semantics.md "Threadgroup aliases"): kGroup threads write an f16
// array and read it back, then (after a barrier) write an f32 view of its bytes from byte 16 and
// read their partner's slot: r[l] = 2 * (l ^ 1) + 0.5, exact.
void add_tg_alias_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  const std::string name = "conformance.tg_alias.f16.f32";
  if (!filter.empty() && name.find(filter) == std::string::npos) return;
  std::ostringstream s;
  s << "kernel conformance_tg_alias_f16_f32 mode=Reduction {\n";
  s << "  param x0: in buf<f32> extent=" << kGroup << "\n  param r: out buf<f32> extent=" << kGroup << "\n";
  s << "  %a = tg_alloc<st, " << 4 * kGroup << ", align=16> : f16\n";
  s << "  %v = tg_alloc<sc, " << kGroup << ", alias=st, offset=16> : f32\n";
  s << "  %l = local_id<0> : u32\n  %c1 = const<1> : u32\n  %two = const<2.0> : f32\n";
  s << "  %h = cast %l : f16\n  tg_store %a, %l, %h\n  barrier\n";
  s << "  %y = tg_load %a, %l : f16\n  %y2 = cast %y : f32\n  %d = mul %y2, %two : f32\n  %x = load<x0> %l : f32\n";
  s << "  %e = add %d, %x : f32\n  barrier\n  tg_store %v, %l, %e\n  barrier\n";
  s << "  %p = xor %l, %c1 : u32\n  %z = tg_load %v, %p : f32\n  store<r> %l, %z\n}\n";
  ConformanceCase c;
  c.kernel = ir::parse(s.str());
  if (!verifies(c.kernel)) throw Error("conformance: the threadgroup alias kernel does not verify");
  c.name = name;
  c.op = ir::Op::TgAlloc;
  c.operands = {DType::F32};
  c.result = DType::F32;
  c.launch.dtype = DType::F32;
  c.launch.grid = {1, 1, 1};
  c.launch.threadgroup = {kGroup, 1, 1};
  c.launch.buffers.emplace_back(kGroup * 4, 0);
  c.launch.buffers.emplace_back(kGroup * 4, 0xff);
  c.want.assign(kGroup * 4, 0);
  for (uint32_t l = 0; l < kGroup; ++l) {
    put(c.launch.buffers[0], l, DType::F32, eval::Scalar::of_f32(0.5f).bits);
    const float v = float(2 * (l ^ 1u)) + 0.5f;
    put(c.want, l, DType::F32, eval::Scalar::of_f32(v).bits);
    c.args.push_back({eval::Scalar::of_f32(0.5f).bits});
  }
  cases.push_back(std::move(c));
}

// Warpgroup tiles (docs/semantics.md "Warpgroup tiles"): 256 threads stage A (128 x S, row-major)
// and B (N x S, a weight [N, K]; N 16, or a warpgroup accumulator's width) from x0 and x1 into 1024-byte aligned arrays through the
// swizzle (S the swizzle's row: 64, 32 or 16 elements) with ordinary stores, fence the async
// proxy and meet at a barrier; lane groups 0 .. 7 (two warpgroups at lane width 32) each
// accumulate their 16 rows of A x B^T over the S / 16 k steps with tile_wg_mma and store them to
// r (128 x N). The values are small integers, so every product and sum is exact: one answer on
// every path (wgmma, mma.sync, wmma, software), computed here from the definition. fp8 (f8e4m3,
// f8e5m2; codes {bits, 4, 3}): rows of 32, 64 or 128 elements, S / 32 k steps of 32 (m64nNk32),
// a 16xNx32 accumulator; the small integers are exact in both formats.
constexpr uint32_t kWgThreads = 256;

// rs: A from registers (tile_wg_mma_rs): each lane group loads its own 16 rows of the staged A
// as a fragment (tile_tg_load through the same swizzle) and passes it to the op.
// async: the products issued (tile_wg_mma<code, async=1>) back to back after a wg_fence, then
// wg_commit and wg_wait<0> before the store (the A fragments of rs loaded before the fence).
std::string wg_kernel_text(const std::string& name, DType t, int64_t code, bool rs, uint32_t N, bool async = false) {
  const uint32_t S = ir::wgmma_row_elems(code), bits = uint32_t(code / 100), K = ir::wgmma_k(code);
  const uint32_t base = uint32_t(code / 10 % 10), shift = uint32_t(code % 10);
  const std::string T = dtype_name(t);
  std::ostringstream s;
  s << "kernel " << name << " mode=Reduction {\n";
  s << "  param x0: in buf<" << T << "> extent=" << 128 * S << "\n  param x1: in buf<" << T << "> extent=" << N * S << "\n";
  s << "  param r: out buf<f32> extent=" << 128 * N << "\n";
  s << "  %A = tg_alloc<wa, " << 128 * S << ", align=1024> : " << T << "\n";
  s << "  %B = tg_alloc<wb, " << N * S << ", align=1024> : " << T << "\n";
  s << "  %l = local_id<0> : u32\n  %c3 = const<" << base << "> : u32\n  %c6 = const<" << base + shift << "> : u32\n";
  s << "  %cm = const<" << ((1u << bits) - 1u) << "> : u32\n";
  int n = 0;
  auto stage = [&](const char* arr, const char* buf, uint32_t count) {
    for (uint32_t j = 0; j < count / kWgThreads; ++j, ++n) {
      s << "  %o" << n << " = const<" << j * kWgThreads << "> : u32\n  %i" << n << " = add %l, %o" << n << " : u32\n";
      s << "  %v" << n << " = load<" << buf << "> %i" << n << " : " << T << "\n";
      s << "  %h" << n << " = shr %i" << n << ", %c6 : u32\n  %m" << n << " = and %h" << n << ", %cm : u32\n";
      s << "  %x" << n << " = shl %m" << n << ", %c3 : u32\n  %s" << n << " = xor %i" << n << ", %x" << n << " : u32\n";
      s << "  tg_store " << arr << ", %s" << n << ", %v" << n << "\n";
    }
  };
  stage("%A", "x0", 128 * S);
  stage("%B", "x1", N * S);
  s << "  fence_proxy_async\n  barrier\n";
  s << "  %g = simd_group_id : u32\n  %c8 = const<8> : u32\n  %run = lt %g, %c8 : bool\n  if %run {\n";
  s << "    %wg = shr %g, %c2sh : u32\n";
  s << "    %rows = const<" << 64 * S << "> : u32\n    %abase = mul %wg, %rows : u32\n";
  const std::string acc_t = "frag<acc, f32, 16x" + std::to_string(N) + "x" + std::to_string(K) + ">";
  s << "    %zf = const<0> : f32\n    %acc0 = tile_fill %zf : " << acc_t << "\n";
  if (rs) s << "    %cS = const<" << S << "> : u32\n    %rowS = const<" << 16 * S << "> : u32\n    %own = mul %g, %rowS : u32\n";
  const std::string attrs = std::to_string(code) + (async ? ", async=1>" : ">");
  for (uint32_t kc = 0; kc < S / K; ++kc) {
    s << "    %k" << kc << " = const<" << K * kc << "> : u32\n    %ao" << kc << " = add %abase, %k" << kc << " : u32\n";
    if (rs) {
      s << "    %fo" << kc << " = add %own, %k" << kc << " : u32\n";
      s << "    %fa" << kc << " = tile_tg_load<swizzle=" << code << "> %A, %fo" << kc << ", %cS : frag<a, " << T << ", 16x16x16>\n";
    }
  }
  if (async) s << "    wg_fence\n";
  for (uint32_t kc = 0; kc < S / K; ++kc) {
    if (rs)
      s << "    %acc" << kc + 1 << " = tile_wg_mma_rs<" << attrs << " %fa" << kc << ", %B, %k" << kc << ", %acc" << kc << " : "
        << acc_t << "\n";
    else
      s << "    %acc" << kc + 1 << " = tile_wg_mma<" << attrs << " %A, %ao" << kc << ", %B, %k" << kc << ", %acc" << kc << " : "
        << acc_t << "\n";
  }
  if (async) s << "    wg_commit\n    wg_wait<0>\n";
  s << "    %c16 = const<" << N << "> : u32\n    %c256 = const<" << 16 * N << "> : u32\n    %ro = mul %g, %c256 : u32\n";
  s << "    tile_store<r> %acc" << S / K << ", %ro, %c16\n  }\n}\n";
  std::string text = s.str();
  // %c2sh: the warpgroup of a lane group (g >> 2), declared with the constants above.
  text.replace(text.find("  %l = local_id"), 0, "  %c2sh = const<2> : u32\n");
  return text;
}

// The values of the warpgroup case: A(m, k) and B^T(n, k), small integers.
float wg_a(uint32_t m, uint32_t k) { return float(int((m * 7 + k * 3) % 9) - 4); }
float wg_b(uint32_t n, uint32_t k) { return float(int((n * 5 + k) % 7) - 3); }

// Each swizzle at N = 16; the warpgroup accumulators (N 64, 128, 256) under the 128-byte one; the
// issued (async) products at N 16 and 128 under it, both forms and types. fp8 (A from shared
// memory only; each case costs NVRTC about a second per 16 KiB staged, its staging converting
// every element): e4m3 under each fp8 swizzle and e5m2 under the 64-byte one at N = 16, and e5m2
// issued at N 128 under the 32-byte one.
void add_wg_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (int async = 0; async < 2; ++async)
  for (uint32_t N : {16u, 64u, 128u, 256u})
  for (int rs = 0; rs < 2; ++rs)
  for (DType t : {DType::BF16, DType::F16, DType::F8E4M3, DType::F8E5M2})
    for (int64_t code : {333, 233, 133, 343, 243, 143}) {
      const bool fp8 = is_fp8(t);
      if (fp8 != (ir::wgmma_elem_bytes(code) == 1)) continue;
      if (fp8) {
        if (rs || N == 64 || N == 256 || (!async && N == 128)) continue;
        if (async ? N != 128 || t != DType::F8E5M2 || code != 143 : t == DType::F8E5M2 && code != 243) continue;
      } else {
        if (N > 16 && code != 333) continue;
        if (async && (code != 333 || N == 64 || N == 256 || t != (rs ? DType::F16 : DType::BF16))) continue;
      }
      const std::string name = std::string(rs ? "conformance.tile_wg_mma_rs." : "conformance.tile_wg_mma.") +
                               (async ? "async." : "") + (N > 16 ? "n" + std::to_string(N) + "." : "") + dtype_name(t) +
                               ".swz" + std::to_string(code);
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      std::string kname = name;
      std::replace(kname.begin(), kname.end(), '.', '_');
      ConformanceCase c;
      c.kernel = ir::parse(wg_kernel_text(kname, t, code, rs == 1, N, async == 1));
      if (!verifies(c.kernel)) throw Error("conformance: the warpgroup tile kernel " + name + " does not verify");
      const uint32_t S = ir::wgmma_row_elems(code);
      c.name = name;
      c.op = rs ? ir::Op::TileWgMmaRs : ir::Op::TileWgMma;
      c.operands = {t};
      c.result = DType::F32;
      c.launch.dtype = DType::F32;
      c.launch.grid = {1, 1, 1};
      c.launch.threadgroup = {kWgThreads, 1, 1};
      const uint32_t eb = ir::wgmma_elem_bytes(code);
      c.launch.buffers.emplace_back(128 * S * eb, 0);
      c.launch.buffers.emplace_back(N * S * eb, 0);
      c.launch.buffers.emplace_back(128 * N * 4, 0xff);
      auto half = [&](float v) {
        return uint64_t(fp8 ? num::f32_to_fp8(t, v) : t == DType::BF16 ? num::f32_to_bf16(v) : num::f32_to_f16(v));
      };
      for (uint32_t m = 0; m < 128; ++m)
        for (uint32_t k = 0; k < S; ++k) put(c.launch.buffers[0], m * S + k, t, half(wg_a(m, k)));
      for (uint32_t nn = 0; nn < N; ++nn)
        for (uint32_t k = 0; k < S; ++k) put(c.launch.buffers[1], nn * S + k, t, half(wg_b(nn, k)));
      c.want.assign(128 * N * 4, 0);
      for (uint32_t m = 0; m < 128; ++m)
        for (uint32_t nn = 0; nn < N; ++nn) {
          double sum = 0;
          for (uint32_t k = 0; k < S; ++k) sum += double(wg_a(m, k)) * double(wg_b(nn, k));
          put(c.want, m * N + nn, DType::F32, eval::Scalar::of_f32(float(sum)).bits);
          c.args.push_back({uint64_t(m * N + nn)});
        }
      cases.push_back(std::move(c));
    }
}

void add_tile_layout_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (int role = 0; role < 2; ++role)
    for (int cm = 0; cm < 2; ++cm)
      for (const TileLayoutCase& t : kTileLayouts) {
        const std::string name = std::string("conformance.tile_layout.") + (role ? "b" : "a") + (cm ? ".col" : ".row") +
                                 ".off" + std::to_string(t.off) + ".s" + std::to_string(t.stride) +
                                 (t.swizzle ? ".swz" + std::to_string(t.swizzle) : "");
        if (!filter.empty() && name.find(filter) == std::string::npos) continue;
        std::string kname = name;
        std::replace(kname.begin(), kname.end(), '.', '_');
        ConformanceCase c;
        c.kernel = ir::parse(tile_layout_kernel_text(kname, role == 1, cm == 1, t));
        if (!verifies(c.kernel)) throw Error("conformance: the tile layout kernel " + name + " does not verify");
        c.name = name;
        c.op = ir::Op::TileTgLoad;
        c.operands = {DType::U32};  // reported per element: the index it reads (which holds that value)
        c.result = DType::F32;
        c.launch.dtype = DType::F32;
        c.launch.grid = {1, 1, 1};
        c.launch.threadgroup = {kGroup, 1, 1};
        c.launch.buffers.emplace_back(kLayoutElems * 2, 0);
        c.launch.buffers.emplace_back(256 * 2, 0);
        c.launch.buffers.emplace_back(256 * 4, 0xff);
        for (uint32_t i = 0; i < kLayoutElems; ++i) put(c.launch.buffers[0], i, DType::F16, num::f32_to_f16(float(i)));
        for (uint32_t i = 0; i < 16; ++i) put(c.launch.buffers[1], i * 17, DType::F16, num::f32_to_f16(1.0f));
        c.want.assign(256 * 4, 0);
        for (uint32_t r = 0; r < 16; ++r)
          for (uint32_t col = 0; col < 16; ++col) {
            uint32_t idx = cm ? t.off + col * t.stride + r : t.off + r * t.stride + col;
            if (t.swizzle) idx = ir::swizzle_index(idx, t.swizzle);
            const float v = float(idx);  // element idx holds idx; the product with I is exact
            put(c.want, r * 16 + col, DType::F32, eval::Scalar::of_f32(v).bits);
            c.args.push_back({uint64_t(idx)});
          }
        cases.push_back(std::move(c));
      }
}


// tile_scale_add (docs/semantics.md "Cooperative tiles"): lane group 0 builds x and acc from f16
// tiles times the identity (exact), kScaleThreads threads stage as many f32 scales, and r =
// tile_scale_add of the scales from `off`: element (r, c) = fma(x(r, c), s[off + r], acc(r, c))
// with one rounding. The scales have full 24-bit significands, so a product rounded before the
// add differs from the fused result on some elements. 32 threads: on lavapipe's 8-wide
// subgroups the software fragments' slots (5 KiB per lane group) fit its 32 KiB.
constexpr uint32_t kScaleThreads = 32;
std::string scale_add_kernel_text(const std::string& name, uint32_t off) {
  std::ostringstream s;
  s << "kernel " << name << " mode=Reduction {\n";
  s << "  param x0: in buf<f16> extent=256\n  param x1: in buf<f16> extent=256\n  param x2: in buf<f16> extent=256\n";
  s << "  param x3: in buf<f32> extent=" << kScaleThreads << "\n  param r: out buf<f32> extent=256\n";
  s << "  %S = tg_alloc<scales, " << kScaleThreads << "> : f32\n";
  s << "  %l = local_id<0> : u32\n  %c0 = const<0> : u32\n  %c16 = const<16> : u32\n";
  s << "  %v = load<x3> %l : f32\n  tg_store %S, %l, %v\n  barrier\n";
  s << "  %w = simd_group_id : u32\n  %first = eq %w, %c0 : bool\n  if %first {\n";
  s << "    %zf = const<0> : f32\n    %z = tile_fill %zf : frag<acc, f32, 16x16x16>\n";
  s << "    %i = tile_load<x2> %c0, %c16 : frag<b, f16, 16x16x16>\n";
  s << "    %ta = tile_load<x0> %c0, %c16 : frag<a, f16, 16x16x16>\n";
  s << "    %tc = tile_load<x1> %c0, %c16 : frag<a, f16, 16x16x16>\n";
  s << "    %x = tile_mma %ta, %i, %z : frag<acc, f32, 16x16x16>\n";
  s << "    %acc = tile_mma %tc, %i, %z : frag<acc, f32, 16x16x16>\n";
  s << "    %off = const<" << off << "> : u32\n";
  s << "    %d = tile_scale_add %S, %off, %x, %acc : frag<acc, f32, 16x16x16>\n";
  s << "    tile_store<r> %d, %c0, %c16\n  }\n}\n";
  return s.str();
}

void add_scale_add_cases(const std::string& filter, std::vector<ConformanceCase>& cases) {
  for (uint32_t off : {0u, 13u}) {
    const std::string name = "conformance.tile_scale_add.f32.off" + std::to_string(off);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    std::string kname = name;
    std::replace(kname.begin(), kname.end(), '.', '_');
    ConformanceCase c;
    c.kernel = ir::parse(scale_add_kernel_text(kname, off));
    if (!verifies(c.kernel)) throw Error("conformance: the tile_scale_add kernel " + name + " does not verify");
    c.name = name;
    c.op = ir::Op::TileScaleAdd;
    c.operands = {DType::F32, DType::F32, DType::F32};  // x, the row scale, acc
    c.result = DType::F32;
    c.launch.dtype = DType::F32;
    c.launch.grid = {1, 1, 1};
    c.launch.threadgroup = {kScaleThreads, 1, 1};
    for (int b = 0; b < 3; ++b) c.launch.buffers.emplace_back(256 * 2, 0);
    c.launch.buffers.emplace_back(kScaleThreads * 4, 0);
    c.launch.buffers.emplace_back(256 * 4, 0xff);
    // x and acc: f16 values with full 11-bit significands, signed zeros, the largest finite
    // value and subnormals; the scales: full f32 significands of either sign, 0 and magnitudes
    // from 2^-12 to 2^12.
    auto xv = [](uint32_t e) {
      const float edge[] = {0.0f, -0.0f, 65504.0f, -0x1p-24f, 0x1.ffcp-15f};
      if (e % 17 == 0) return edge[(e / 17) % 5];
      return float((e % 2 ? -1 : 1) * (1 + (e * 389 % 1024) / 1024.0) * std::ldexp(1.0, int(e % 23) - 11));
    };
    auto cv = [](uint32_t e) { return float((e % 3 ? 1 : -1) * (1 + (e * 613 % 1024) / 1024.0) * std::ldexp(1.0, int(e % 19) - 9)); };
    auto sv = [](uint32_t i) {
      if (i % 11 == 5) return 0.0f;
      const double m = 1 + (uint64_t(i) * 2654435761u % 8388608u) / 8388608.0;
      return float((i % 2 ? -1 : 1) * m * std::ldexp(1.0, (int(i * 37 % 201) - 100) / 8));
    };
    for (uint32_t e = 0; e < 256; ++e) {
      put(c.launch.buffers[0], e, DType::F16, num::f32_to_f16(xv(e)));
      put(c.launch.buffers[1], e, DType::F16, num::f32_to_f16(cv(e)));
    }
    for (uint32_t i = 0; i < 16; ++i) put(c.launch.buffers[2], i * 17, DType::F16, num::f32_to_f16(1.0f));
    for (uint32_t i = 0; i < kScaleThreads; ++i) put(c.launch.buffers[3], i, DType::F32, eval::Scalar::of_f32(sv(i)).bits);
    c.want.assign(256 * 4, 0);
    for (uint32_t r = 0; r < 16; ++r)
      for (uint32_t col = 0; col < 16; ++col) {
        const uint32_t e = r * 16 + col;
        const float x = num::f16_to_f32(num::f32_to_f16(xv(e))), a = num::f16_to_f32(num::f32_to_f16(cv(e)));
        const float sc = sv(off + r);
        put(c.want, e, DType::F32, eval::Scalar::of_f32(std::fma(x, sc, a)).bits);
        c.args.push_back({eval::Scalar::of_f32(x).bits, eval::Scalar::of_f32(sc).bits, eval::Scalar::of_f32(a).bits});
      }
    cases.push_back(std::move(c));
  }
}

}  // namespace

std::string warpgroup_kernel_text(const std::string& name, DType t, int64_t code, bool rs, uint32_t n, bool async) {
  return wg_kernel_text(name, t, code, rs, n, async);
}

std::vector<ConformanceCase> conformance_cases(const std::string& filter) {
  std::vector<ConformanceCase> cases;
  for (int o = 0; o < int(ir::Op::Count_); ++o) {
    const ir::Op op = ir::Op(o);
    if (!computational(op)) continue;
    for (const Signature& sig : signatures(op)) {
      std::string name = std::string("conformance.") + ir::mnemonic(op);
      if (op == ir::Op::Cast || op == ir::Op::Bitcast)
        name += std::string(".") + dtype_name(sig.operands[0]) + "." + dtype_name(sig.result);
      else
        name += std::string(".") + dtype_name(op == ir::Op::Select ? sig.result : sig.operands[0]);
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      // The operand values: every combination of each operand's edge values.
      std::vector<std::vector<uint64_t>> sets;
      for (DType t : sig.operands) {
        std::vector<uint64_t> e = edge_values(t);
        const size_t keep = sig.operands.size() == 1 ? e.size() : sig.operands.size() == 2 ? kBinary : kTernary;
        if (e.size() > keep) e.resize(keep);
        sets.push_back(std::move(e));
      }
      size_t count = 1;
      for (const auto& e : sets) count *= e.size();
      const size_t n = (count + kGroup - 1) / kGroup * kGroup;
      // Identifier-safe kernel name (the case name with '.' as '_').
      std::string kname = name;
      std::replace(kname.begin(), kname.end(), '.', '_');
      ConformanceCase c;
      try {
        c.kernel = ir::parse(kernel_text(kname, op, sig.operands, sig.result, n));
      } catch (const std::exception&) {
        continue;
      }
      if (!verifies(c.kernel)) continue;  // not a dtype this op takes
      c.name = name;
      c.op = op;
      c.operands = sig.operands;
      c.result = sig.result;
      c.launch.dtype = DType::F32;
      c.launch.grid = {uint32_t(n / kGroup), 1, 1};
      c.launch.threadgroup = {kGroup, 1, 1};
      for (DType t : sig.operands) c.launch.buffers.emplace_back(n * dtype_size(storage_dtype(t)), 0);
      c.launch.buffers.emplace_back(n * dtype_size(storage_dtype(sig.result)), 0xff);
      c.want.assign(n * dtype_size(storage_dtype(sig.result)), 0);
      bool evaluable = true;
      for (size_t i = 0; i < n && evaluable; ++i) {
        // Element i: the mixed-radix digits of i mod count pick each operand's value.
        size_t rest = i % count;
        std::vector<eval::Scalar> args;
        std::vector<uint64_t> regs;
        for (size_t a = sig.operands.size(); a-- > 0;) {
          const uint64_t bits = sets[a][rest % sets[a].size()];
          rest /= sets[a].size();
          put(c.launch.buffers[a], i, sig.operands[a], bits);
          regs.insert(regs.begin(), register_of(sig.operands[a], bits));
        }
        for (uint64_t r : regs) args.push_back(eval::Scalar{r});
        eval::Scalar out;
        std::string error;
        const DType operand_type = op == ir::Op::Select ? sig.operands[1] : sig.operands[0];
        if (!eval::eval_pure(op, sig.result, operand_type, args.data(), int(args.size()), out, error)) {
          evaluable = false;
          break;
        }
        put(c.want, i, sig.result, storage_of(sig.result, out.bits));
        c.args.push_back(std::move(regs));
      }
      if (!evaluable) continue;
      cases.push_back(std::move(c));
    }
  }
  add_lane_cases(filter, cases);
  add_atomic_cases(filter, cases);
  add_async_cases(filter, cases);
  add_bulk_cases(filter, cases);
  add_tile_layout_cases(filter, cases);
  add_tg_alias_cases(filter, cases);
  add_tma_cases(filter, cases);
  add_tma_tile_cases(filter, cases);
  add_wg_cases(filter, cases);
  add_scale_add_cases(filter, cases);
  return cases;
}

std::string conformance_difference(const ConformanceCase& c, const std::vector<unsigned char>& got, bool skip_subnormals,
                                   const std::vector<unsigned char>* want_override) {
  const std::vector<unsigned char>& want = want_override ? *want_override : c.want;
  const DType rt = c.result;
  const size_t n = c.args.size();
  if (got.size() != want.size()) return "output has " + std::to_string(got.size()) + " bytes, want " + std::to_string(want.size());
  const bool bounded = eval::is_bounded_math(c.op);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t wb = get(want, i, rt), gb = get(got, i, rt);
    const uint64_t wr = register_of(rt, wb), gr = register_of(rt, gb);
    if (skip_subnormals) {
      bool sub = is_float(rt) && is_subnormal_f32(wr);
      for (size_t a = 0; a < c.operands.size(); ++a) sub = sub || (is_float(c.operands[a]) && is_subnormal_f32(c.args[i][a]));
      if (sub) continue;
    }
    bool ok;
    const DType from = c.operands.empty() ? rt : c.operands[0];
    if (c.op == ir::Op::Bitcast && is_float(from) && is_nan_f32(c.args[i][0])) {
      // docs/semantics.md "bitcast": the bits of a NaN are the backend's, so the result is some
      // NaN pattern of the operand's dtype (exponent all ones, mantissa nonzero) read as the
      // result's; where that is a NaN of a float result too (every bf16 NaN is an f16 NaN, 0x7fff
      // is both), storing it gives any NaN of the result's dtype.
      ok = is_nan_bits(from, gb) || (is_float(rt) && is_nan_bits(rt, gb));
    } else if (bounded) {
      const float x = f32_of(uint32_t(c.args[i][0])), y = c.args[i].size() > 1 ? f32_of(uint32_t(c.args[i][1])) : 1.0f;
      ok = within_bound(c.op, rt, x, y, f32_of(uint32_t(wr)), f32_of(uint32_t(gr)));
    } else if (is_float(rt)) {
      ok = wb == gb || (is_nan_f32(wr) && is_nan_f32(gr));  // NaN payloads are unspecified
    } else {
      ok = wb == gb;
    }
    if (ok) continue;
    std::string operands;
    for (size_t a = 0; a < c.operands.size(); ++a) operands += (a ? ", " : "") + show(c.operands[a], c.args[i][a]);
    return "element " + std::to_string(i) + (c.lane ? " (lane " + std::to_string(i % kGroup) + " of its threadgroup)" : "") +
           ": " + ir::mnemonic(c.op) + "(" + operands + ") : " + dtype_name(rt) + " want " + show(rt, wr) + ", got " +
           show(rt, gr);
  }
  return "";
}

int conformance_main(int argc, char** argv) {
  std::string backend = "interp", filter, out_dir;
  try {
    for (int i = 2; i < argc; ++i) {
      const std::string s = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw Error("option " + s + " needs a value");
        return argv[++i];
      };
      if (s == "--backend") backend = value();
      else if (s == "-f" || s == "--filter") filter = value();
      else if (s == "-o") out_dir = value();
      else throw Error("conformance: unknown option '" + s + "'");
    }
    if (backend != "interp" && backend != "vulkan" && backend != "cuda" && backend != "msl" && backend != "nvrtc")
      throw Error("conformance: --backend takes interp, vulkan, cuda, msl or nvrtc, not '" + backend + "'");
  } catch (const std::exception& e) {
    send({{"type", "error"}, {"message", e.what()}});
    return 2;
  }
  send({{"type", "hello"}, {"runner_version", "0.1.0"}});
  const std::vector<ConformanceCase> cases = conformance_cases(filter);
  if (cases.empty()) {
    send({{"type", "error"}, {"message", "conformance: no case matches '" + filter + "'"}});
    return 2;
  }
  std::unique_ptr<Context> ctx;
  bool flushes = false;
  // The interpreter's lane width: IRON_INTERP_LANE_WIDTH (as for the corpus), else 32.
  uint32_t interp_lanes = 32;
  if (const char* w = std::getenv("IRON_INTERP_LANE_WIDTH"); w && *w) interp_lanes = uint32_t(std::strtoul(w, nullptr, 10));
  if (interp_lanes == 0 || interp_lanes > kGroup || kGroup % interp_lanes != 0) {
    send({{"type", "error"}, {"message", std::string("IRON_INTERP_LANE_WIDTH=") + std::getenv("IRON_INTERP_LANE_WIDTH") +
                                             ": the conformance suite takes a lane width that divides " +
                                             std::to_string(kGroup)}});
    return 2;
  }
  if (backend == "vulkan" || backend == "cuda") {
    Backend b;
    parse_backend(backend, b);
    try {
      ctx = Context::create(b);
    } catch (const std::exception& e) {
      send({{"type", "conformance_summary"}, {"backend", backend}, {"cases", cases.size()}, {"passed", 0},
            {"failed", cases.size()}, {"unavailable", std::string("backend unavailable: ") + backend + ": " + e.what()}});
      return 1;
    }
    const DeviceInfo& info = ctx->info();
    flushes = info.f32_denormals_flushed;
    send({{"type", "device"}, {"backend", backend}, {"available", true}, {"name", info.name}, {"driver", info.driver}, {"arch", info.arch},
          {"lane_width", info.lane_width}, {"f32_denormals", flushes ? "flushed" : "preserved"}});
  }
  size_t passed = 0, failed = 0;
  const auto start = std::chrono::steady_clock::now();
  if (backend == "nvrtc") {
    // No GPU needed: every case's CUDA compiled by NVRTC for sm_90a, kNvrtcBatch kernels per
    // module (rt::combine_cuda_sources); a module that fails is compiled case by case, so the
    // message names the case, its kernel and the compiler's words.
    constexpr size_t kNvrtcBatch = 64;
    std::vector<std::string> why(cases.size());
    std::vector<std::string> sources(cases.size());
    std::vector<bool> cannot(cases.size(), false);
    for (size_t i = 0; i < cases.size(); ++i) {
      const ir::Kernel optimized = passes::optimize(cases[i].kernel);
      codegen::Emitted e = codegen::emit(optimized, cases[i].launch.dtype, codegen::Target::Cuda);
      if (!e.ok()) why[i] = e.diags.render(optimized), cannot[i] = true;
      sources[i] = e.source;
    }
    for (size_t b = 0; b < cases.size(); b += kNvrtcBatch) {
      std::vector<std::string> batch;
      for (size_t i = b; i < std::min(cases.size(), b + kNvrtcBatch); ++i)
        if (why[i].empty()) batch.push_back(sources[i]);
      try {
        if (batch.empty() || rt::nvrtc_compile(rt::combine_cuda_sources(batch), "conformance_batch", "sm_90a").ok) continue;
        for (size_t i = b; i < std::min(cases.size(), b + kNvrtcBatch); ++i) {
          if (!why[i].empty()) continue;
          rt::NvrtcResult r = rt::nvrtc_compile(sources[i], cases[i].kernel.name, "sm_90a");
          if (!r.ok) why[i] = "NVRTC (sm_90a) rejects it:\n" + r.log;
        }
      } catch (const std::exception& e) {
        for (size_t i = b; i < std::min(cases.size(), b + kNvrtcBatch); ++i)
          if (why[i].empty()) why[i] = e.what();
      }
    }
    size_t unexpressible = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      (cannot[i] ? unexpressible : why[i].empty() ? passed : failed)++;
      json m = {{"type", "conformance_case"}, {"name", cases[i].name}, {"kernel", cases[i].kernel.name},
                {"backend", backend}, {"ok", why[i].empty()}, {"values", cases[i].args.size()}};
      if (cannot[i]) m["expressible"] = false;
      if (!why[i].empty()) m["message"] = why[i];
      send(m);
    }
    send({{"type", "conformance_summary"}, {"backend", backend}, {"cases", cases.size()}, {"passed", passed},
          {"failed", failed}, {"unexpressible", unexpressible},
          {"ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()}});
    return failed == 0 ? 0 : 1;
  }
  size_t unexpressible = 0;
  for (const ConformanceCase& c : cases) {
    std::string why;
    bool expressible = true;
    size_t values = c.args.size();
    try {
      const ir::Kernel optimized = passes::optimize(c.kernel);
      if (backend == "msl") {
        // No Metal device here: the case is emitted (and written for the shim check).
        codegen::Emitted e = codegen::emit(optimized, c.launch.dtype, codegen::Target::Msl);
        if (!e.ok()) {
          // A documented limit of the target, not a wrong answer: named, counted apart.
          expressible = false;
          why = e.diags.render(optimized);
        } else if (!out_dir.empty()) {
          const std::filesystem::path p = std::filesystem::path(out_dir) / "msl" / (e.entry + ".metal");
          std::filesystem::create_directories(p.parent_path());
          std::ofstream(p, std::ios::binary) << e.source;
        }
      } else {
        std::vector<std::vector<unsigned char>> got;
        // Ops only some targets have (ir::is_hopper_op: CUDA sm_90+): where the device's target
        // cannot express them, the case is counted apart with the emitter's located reason.
        bool hopper = false;
        ir::walk(optimized, [&](ir::Id id) { hopper = hopper || ir::is_hopper_op(optimized.insts[id].op); });
        if (ctx && hopper) {
          const bool cuda = ctx->info().backend == Backend::Cuda;
          const codegen::TargetProfile prof = cuda ? codegen::profile_for(codegen::Target::Cuda, ctx->info().arch)
                                                   : codegen::profile_for(codegen::Target::Glsl);
          codegen::Emitted e = codegen::emit(optimized, c.launch.dtype, prof);
          if (!e.ok()) {
            expressible = false;
            why = e.diags.render(optimized);
          }
        }
        if (!expressible) {
          // the device's target has no such op
        } else if (!ctx) {
          got = run_launch(optimized, c.launch, interp_lanes);
        } else {
          Bindings bindings;
          size_t bi = 0;
          for (const ir::Param& prm : c.kernel.params) {
            if (prm.kind != ir::ParamKind::Buffer) continue;
            const DType t = prm.dtype;
            const std::vector<unsigned char>& bytes = c.launch.buffers[bi++];
            DeviceBuffer b = ctx->alloc(t, bytes.size() / dtype_size(t));
            ctx->upload(b, bytes.data(), bytes.size());
            bindings.emplace_back(prm.name, b);
          }
          // Tensor maps over the bound buffers (LaunchMap), by parameter name.
          Constexprs values;
          size_t mi = 0;
          for (const ir::Param& prm : c.kernel.params) {
            if (!prm.tensor_map || mi >= c.launch.maps.size()) continue;
            const LaunchMap& lm = c.launch.maps[mi++];
            TensorMap m;
            m.buffer = bindings.at(lm.buffer).second;
            m.dims = lm.dims;
            m.box = lm.box;
            m.swizzle = lm.swizzle == 32 ? TensorMap::Swizzle::B32 : lm.swizzle == 64 ? TensorMap::Swizzle::B64
                      : lm.swizzle == 128 ? TensorMap::Swizzle::B128 : TensorMap::Swizzle::None;
            values[prm.name] = ScalarValue(m);
          }
          ctx->dispatch_with_grid(c.kernel, c.launch.dtype, bindings, values, c.launch.grid, c.launch.threadgroup);
          for (auto& [pname, b] : bindings) {
            got.emplace_back(b.bytes());
            ctx->download(b, got.back().data(), b.bytes());
          }
        }
        if (!expressible) {
          // counted apart below, with the reason
        } else if (c.lane) {
          // The interpreter at the device's lane width is the definition of a lane operation.
          const uint32_t lw = ctx ? ctx->info().lane_width : interp_lanes;
          const std::vector<unsigned char> want = run_launch(c.kernel, c.launch, lw).back();
          why = conformance_difference(c, got.back(), flushes, &want);
        } else {
          why = conformance_difference(c, got.back(), flushes);
        }
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    (!expressible ? unexpressible : why.empty() ? passed : failed)++;
    json m = {{"type", "conformance_case"}, {"name", c.name}, {"kernel", c.kernel.name}, {"backend", backend},
              {"ok", why.empty()}, {"values", values}};
    if (!expressible) m["expressible"] = false;
    if (!why.empty()) m["message"] = why;
    send(m);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  send({{"type", "conformance_summary"}, {"backend", backend}, {"cases", cases.size()}, {"passed", passed},
        {"failed", failed}, {"unexpressible", unexpressible}, {"ms", ms}});
  return failed == 0 ? 0 : 1;
}

}  // namespace iron::fuzz
