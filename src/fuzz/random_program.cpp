// The random program generator behind fuzz_test.cpp and `iron fuzz`: builds IR instruction by
// instruction (the way src/dsl/tracer.cpp does) from a splitmix64 stream, choosing shapes that
// make each pass of the pipeline fire, while keeping every program verified and free of
// undefined behaviour: in-bounds indices, small loop trip counts, threadgroup memory written
// before it is read, and barriers and lane reductions only in threadgroup-uniform control flow.
// Integer division by zero and shifts of 32 or more are used freely: docs/semantics.md defines
// them.
#include "fuzz/random_program.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/numeric.hpp"
#include "passes/eval.hpp"
#include "passes/interpreter.hpp"

namespace iron::fuzz {
namespace {

using ir::Id;
using ir::Inst;
using ir::kNone;
using ir::Op;

struct Rng {  // splitmix64: tiny, seedable, identical on every machine
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint32_t below(size_t n) { return uint32_t(next() % n); }
  int range(int lo, int hi) { return lo + int(below(size_t(hi - lo + 1))); }  // inclusive
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
  template <class T>
  T pick(std::initializer_list<T> v) {
    return *(v.begin() + below(v.size()));
  }
};

// Parameter layout (fixed, so random_launch can bind any program, optimized or not).
enum P : uint32_t {
  kN,      // scalar u32: threads with index < n take the guarded paths
  kTotal,  // scalar u32: total threads of the launch (sizes the writable buffers)
  kM,      // scalar u32 in [0, 4]: a uniform loop bound
  kKs,     // scalar i32 in [-4, 4]
  kS,      // scalar f32
  kInF, kInI, kInU, kInH, kInT,      // in buffers: f32, i32, u32, f16, T (kInputLength elements)
  kOutF, kOutI, kIoU, kOutB, kOutT,  // out f32, out i32, inout u32, out bf16, out T (8 * total)
  kOutI8, kOutU16, kOutI64, kOutQ8,  // out i8, u16, i64, f8e4m3 (8 * total): stmt_width's stores
  kWide,   // scalar u64, any 64-bit value (after the f32 s: an 8-byte push constant needs padding)
  kWideS,  // scalar i64, any 64-bit value
  kOutU8, kOutI16, kOutU64, kOutQ5,  // out u8, i16, u64, f8e5m2 (8 * total): stmt_width's stores
  kInW, kOutW,                       // in W (kInputLength), out W (8 * total): stmt_w
  kAccU64,                           // inout u64 (8): u64 atomic adds only (stmt_atomic_u64)
  kAccF2, kAccB2,                    // inout f16, bf16 (8): atomic_add_pair only (stmt_atomic_pair)
  kParamCount
};

constexpr DType kValueTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Generic,
                                 DType::I32, DType::U32, DType::Bool};
constexpr int kMaxDepth = 3;
constexpr int kMaxTripProduct = 24;  // bound on nested trip counts: keeps every run short
constexpr size_t kMaxInsts = 230;

bool float_like(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Generic; }

struct Gen {
  Rng rng;
  Rng aux;  // threadgroup-array and register-array choices (see emit_hidden)
  Rng fp8r;  // f8e4m3 tile choices: their own stream, so programs without them stay as they were
  Rng mbr;   // mbarrier choices: their own stream too
  Rng layr;  // tile layouts (column-major, swizzle): their own stream, so the other draws stay as they were
  bool red;
  Mode mode;
  // Lane built-ins and lane operations exist in the program (Reduction, SimdGroup2D); Tile2D
  // programs have threadgroup memory and barriers only, on threadgroups of any x size.
  bool lanes;
  bool wc;
  bool xb;           // cross-backend: no transcendentals
  uint32_t exclude;  // OpClass bits kept out
  bool fg;           // flush guard after every float value (RandomProgramOptions::flush_guard)
  bool guarding = false;
  ir::Kernel k;

  struct Frame {
    Id block;
    bool uniform;             // every thread of the threadgroup executes this block together
    std::vector<Id> values;   // values defined here (visible in nested blocks too)
    std::vector<Id> vars;     // variables declared here
    Id induction = kNone;     // the loop variable when this is a for body
  };
  std::vector<Frame> frames;
  std::vector<uint8_t> uni;  // per instruction: the value is the same in every thread of a group
  int trip_product = 1;

  Id tid = kNone, base = kNone, lid = kNone, gsize = kNone, lane = kNone, simd_group = kNone;
  Id lane_w = kNone, n_simd = kNone, p_n = kNone, p_total = kNone, p_m = kNone, p_k = kNone, p_s = kNone;
  Id p_wide = kNone, p_swide = kNone, tid64 = kNone;
  std::vector<Id> tg_arrays;
  Id tg_half = kNone;  // the 16-bit threadgroup array (stmt_half_exchange), if any
  Id tg_u64 = kNone;   // the u64 threadgroup array (stmt_tg_atomic_u64), if any
  // One mbarrier (initialized for the whole group) and the parity of its next wait, a u32
  // variable: stmt_tg_exchange may order its exchange by an arrival and a wait instead of a barrier.
  Id tg_mbar = kNone, mbar_parity = kNone;
  Id tg_fp8 = kNone;   // the f8e4m3 threadgroup array f8e4m3 tiles load from (stmt_tile), if any
  static constexpr uint32_t kFp8TileElems = 1024;  // > 180 + 31 * 24 + 15, B's largest index

  Gen(uint64_t seed, bool reduction, const RandomProgramOptions& o)
      : rng{seed * 0x2545f4914f6cdd1dull + (reduction ? 17 : 5)},
        aux{seed * 0x9e3779b97f4a7c15ull + (reduction ? 0x74676d656d1ull : 0x74676d656d0ull)},
        fp8r{seed * 0xd1342543de82ef95ull + (reduction ? 0x66703831ull : 0x66703830ull)},
        mbr{seed * 0x9e3779b97f4a7c15ull + (reduction ? 0x6d626172ull : 0x6d626171ull)},
        layr{seed * 0xaf251af3b0f025b5ull + (reduction ? 0x6c61796full : 0x6c61796eull)},
        red(reduction),
        mode(seed_mode(seed, reduction)),
        lanes(mode == Mode::Reduction || mode == Mode::SimdGroup2D),
        wc(o.well_conditioned),
        xb(o.cross_backend),
        exclude(o.exclude),
        fg(o.flush_guard) {}
  bool excluded(OpClass c) const { return (exclude & c) != 0; }

  int depth() const { return int(frames.size()) - 1; }
  bool uniform_here() const { return frames.back().uniform; }
  // A guard adds five instructions per float value: guarded programs get room for them.
  bool full() const { return k.insts.size() >= (fg ? kMaxInsts * 3 : kMaxInsts); }

  // ---- emission -------------------------------------------------------------------------

  Id emit(Inst in, bool uniform = false) {
    // Scalars only: fragments reach no scalar op (a tile_get's value is guarded), and a pair is
    // made of guarded scalars whose elements come back through pair_get, which is guarded.
    const bool guard = fg && !guarding && in.type.is_scalar() && float_like(in.type.elem()) &&
                       ((ir::has_trait(in.op, ir::trait::P) && in.op != Op::Arg) || in.op == Op::Load ||
                        (ir::has_trait(in.op, ir::trait::L) && !ir::has_trait(in.op, ir::trait::P)));
    if (guard && (in.op == Op::LaneSum || in.op == Op::LaneInclusiveSum || in.op == Op::LaneExclusiveSum))
      in.operands[0] = flush_guard(in.operands[0], kLaneSumGuard, false);
    Id id = k.add_inst(in);
    k.blocks[frames.back().block].insts.push_back(id);
    uni.resize(k.insts.size(), 0);
    uni[id] = uniform;
    if (in.op == Op::Var) frames.back().vars.push_back(id);
    else if (in.type != DType::Void && in.op != Op::For && in.op != Op::TgAlloc && in.op != Op::LocalAlloc)
      frames.back().values.push_back(id);
    return guard ? flush_guard(id, kFlushGuard, true) : id;
  }

  // select(abs(x) < threshold, 0.0, x). On a flushing device a subnormal x reads as +-0, and
  // abs and < see 0 < threshold: the same true as the interpreter's subnormal, so both sides
  // continue with +0. Only the select stays visible to later picks, never the unguarded x
  // (hide_x: x was just made for this guard).
  Id flush_guard(Id x, double threshold, bool hide_x) {
    const DType t = k.insts[x].type.elem();
    const bool u = uni[x] != 0;
    guarding = true;
    Id a = emit(make(Op::Abs, t, {x}), u);
    Inst c = make(Op::Const, t);
    c.set_float(ir::Attr::Value, threshold);
    Id lt = emit(make(Op::Lt, DType::Bool, {a, emit(c, true)}), u);
    Inst z = make(Op::Const, t);
    z.set_float(ir::Attr::Value, 0.0);
    Id s = emit(make(Op::Select, t, {lt, emit(z, true), x}), u);
    guarding = false;
    std::vector<Id>& vals = frames.back().values;
    vals.erase(std::remove_if(vals.begin(), vals.end(), [&](Id v) { return (v >= a && v < s) || (hide_x && v == x); }),
               vals.end());
    return s;
  }

  static Inst make(Op op, DType t, std::initializer_list<Id> operands = {}) {
    Inst in;
    in.op = op;
    in.type = t;
    for (Id o : operands) in.operands.push_back(o);
    // Axis 0 of every built-in that has an axis (the mode's index set-up picks others itself).
    const ir::AttrSchema& schema = ir::attr_schema(op);
    if (schema.count > 0 && schema.slots[0].attr == ir::Attr::Axis) in.set(ir::Attr::Axis, 0);
    return in;
  }

  // A pure op: uniform when all its operands are. Ops the options keep out are replaced here,
  // by an op of the same signature, so every statement can ask for any op.
  Id op(Op o, DType t, std::initializer_list<Id> operands) {
    Inst in = make(o, t, operands);
    substitute(in);
    bool u = true;
    for (int i = 0; i < in.num_operands(); ++i) u = u && uni[in.operands[i]];
    return emit(in, u);
  }
  void substitute(Inst& in) {
    const bool fl = float_like(in.type.elem());
    if (xb && eval::is_bounded_math(in.op)) in.op = in.op == Op::Pow ? Op::Mul : Op::Abs;
    if (excluded(kSignedRem) && in.op == Op::Rem && is_signed_integer(in.type.elem())) in.op = Op::Div;
    if (excluded(kFloatMinMax) && fl && (in.op == Op::Min || in.op == Op::Max)) in.op = Op::Add;
    if (excluded(kFloatDiv) && fl && in.op == Op::Div) in.op = Op::Mul;
    if ((excluded(kFloatZero) || excluded(kZeroCast)) && fl && in.op == Op::Cast && k.insts[in.operands[0]].op == Op::Const &&
        !float_like(k.insts[in.operands[0]].type.elem()) && k.insts[in.operands[0]].attr(ir::Attr::Value) == 0)
      in.operands[0] = int_const(k.insts[in.operands[0]].type.elem(), 1);  // a constant 0.0 in disguise
    if (excluded(kFma) && in.op == Op::Fma) {
      in.op = Op::Mul;
      in.operands.resize(2);
    }
    if (excluded(kFma) && fl && in.op == Op::Add &&
        (k.insts[in.operands[0]].op == Op::Mul || k.insts[in.operands[1]].op == Op::Mul))
      in.op = Op::Sub;
    if (excluded(kFloatToInt) && in.op == Op::Cast && is_integer(in.type.elem()) &&
        float_like(k.insts[in.operands[0]].type.elem())) {
      // An integer source instead: a constant of the same value class keeps the op a cast.
      in.operands[0] = int_const(in.type == DType::I32 ? DType::U32 : DType::I32, rng.range(-3, 9));
    }
  }

  Id int_const(DType t, int64_t v) {
    Inst c = make(Op::Const, t);
    c.set(ir::Attr::Value, t == DType::Bool ? int64_t(v != 0) : int64_t(num::int_wrap(t, uint64_t(v))));
    return emit(c, true);
  }
  Id float_const(DType t, double v) {
    if (v == 0 && excluded(kFloatZero)) v = 0.25;
    if (v == 0 && std::signbit(v) && excluded(kNegZero)) v = 0.0;
    Inst c = make(Op::Const, t);
    c.set_float(ir::Attr::Value, v);
    return emit(c, true);
  }
  Id bool_const(bool b) { return int_const(DType::Bool, b); }
  Id u32(uint32_t v) { return int_const(DType::U32, v); }

  Id random_const(DType t) {
    if (float_like(t)) {
      if (wc) return float_const(t, rng.pick({0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0}));
      return float_const(t, rng.chance(0.7) ? std::round(rng.uniform(-8, 8) * 4) / 4
                                            : rng.pick({0.0, -0.0, 1.0, -1.0, 0.5, 1e30, -3e38, 1e-40, 65520.0,
                                                        std::numeric_limits<double>::infinity()}));
    }
    if (t == DType::Bool) return bool_const(rng.chance(0.5));
    if (rng.chance(0.6)) return int_const(t, rng.range(-3, 9));
    if (t == DType::I32) return int_const(t, rng.pick<int64_t>({INT32_MIN, INT32_MAX, -1, 255, 1 << 20, -65536}));
    return int_const(t, rng.pick<int64_t>({0x80000000ll, 0xffffffffll, 255, 1 << 20, 0x7fffffffll}));
  }

  // ---- picking visible values -------------------------------------------------------------

  void visible_of(DType t, std::vector<Id>& out) const {
    out.clear();
    for (const Frame& f : frames)
      for (Id v : f.values)
        if (k.insts[v].type == t) out.push_back(v);
  }

  // A visible value of dtype t; biased to recent ones so that chains grow deep. Falls back to a
  // constant or a cast of another value when none exists.
  Id pick(DType t) {
    std::vector<Id> c;
    visible_of(t, c);
    if (c.empty() || rng.chance(0.06)) {
      if (c.empty() && !wc && rng.chance(0.5)) {
        DType from = no_f16(kValueTypes[rng.below(std::size(kValueTypes))]);
        std::vector<Id> src;
        visible_of(from, src);
        if (!src.empty() && from != t) return op(Op::Cast, t, {src[rng.below(src.size())]});
      }
      return random_const(t);
    }
    if (rng.chance(0.5)) return c[c.size() - 1 - rng.below(std::min<size_t>(c.size(), 6))];
    return c[rng.below(c.size())];
  }

  DType random_type() {
    if (wc) return rng.pick({DType::F32, DType::F32, DType::I32, DType::U32, DType::Bool});
    return no_f16(kValueTypes[rng.below(std::size(kValueTypes))]);
  }
  DType no_f16(DType t) const { return t == DType::F16 && excluded(kF16) ? DType::F32 : t; }
  DType int_type() { return rng.chance(0.5) ? DType::I32 : DType::U32; }

  // A divisor: often in [1, 127], else any value, zero and -1 included (x / 0 and INT_MIN / -1
  // are defined by docs/semantics.md, and the divisors every backend and pass must get right).
  Id safe_divisor(DType t) {
    if (rng.chance(0.4)) return rng.chance(0.3) ? int_const(t, rng.pick<int64_t>({0, -1, 0, 1})) : pick(t);
    return op(Op::Or, t, {op(Op::And, t, {pick(t), int_const(t, 127)}), int_const(t, 1)});
  }

  // A shift amount: often in [0, 31] (a constant, or a value masked to 5 bits), else any amount,
  // 32 and more included (defined: the result saturates).
  Id shift_amount() {
    DType st = int_type();
    if (rng.chance(0.35)) return rng.chance(0.5) ? int_const(st, rng.range(28, 40)) : pick(st);
    if (rng.chance(0.7)) return int_const(st, rng.range(0, 31));
    return op(Op::And, st, {pick(st), int_const(st, 31)});
  }

  // ---- pure values --------------------------------------------------------------------------

  // Keeps well-conditioned values in [2^-6, 2^6]: min and max are 1-Lipschitz, so clamping
  // never amplifies a rounding difference, and magnitudes cannot run off to inf or denormals.
  Id clamp_wc(Id v) {
    v = op(Op::Min, DType::F32, {v, float_const(DType::F32, 64.0)});
    return op(Op::Max, DType::F32, {v, float_const(DType::F32, 0.015625)});
  }

  Id wc_float() {
    const DType f = DType::F32;
    switch (rng.below(8)) {
      case 0: return clamp_wc(op(Op::Add, f, {pick(f), pick(f)}));
      case 1: return clamp_wc(op(Op::Mul, f, {pick(f), pick(f)}));
      case 2: return clamp_wc(op(Op::Div, f, {pick(f), pick(f)}));
      case 3: return clamp_wc(op(Op::Fma, f, {pick(f), pick(f), pick(f)}));
      case 4: return op(rng.chance(0.5) ? Op::Min : Op::Max, f, {pick(f), pick(f)});
      case 5: return op(Op::Sqrt, f, {pick(f)});
      case 6: return op(Op::Select, f, {pick(DType::Bool), pick(f), pick(f)});
      default: {  // a multiply-add with a single-use multiply: what fma_fusion fuses
        Id m = op(Op::Mul, f, {pick(f), pick(f)});
        Id c = pick(f);
        return clamp_wc(rng.chance(0.5) ? op(Op::Add, f, {m, c}) : op(Op::Add, f, {c, m}));
      }
    }
  }

  // Packed 16-bit pairs: two pairs of values of t, one to three element-wise pair ops on them,
  // and one element back as a scalar of t (docs/semantics.md "Packed 16-bit pairs").
  Id pair_value(DType t) {
    auto pair_op = [&](Op o, std::initializer_list<Id> operands) {
      Inst in = make(o, t, operands);
      in.type = Type::vector(t, 2);
      substitute(in);
      bool u = true;
      for (int i = 0; i < in.num_operands(); ++i) u = u && uni[in.operands[i]];
      return emit(in, u);
    };
    const Id a = pair_op(Op::Pair, {pick(t), pick(t)});
    const Id b = pair_op(Op::Pair, {pick(t), pick(t)});
    Id v = rng.chance(0.5) ? a : b;
    for (uint32_t n = 1 + rng.below(3); n > 0; --n) {
      switch (rng.below(8)) {
        case 0: v = pair_op(Op::Add, {v, rng.chance(0.5) ? a : b}); break;
        case 1: v = pair_op(Op::Sub, {v, rng.chance(0.5) ? a : b}); break;
        case 2: v = pair_op(Op::Mul, {v, rng.chance(0.5) ? a : b}); break;
        case 3: v = pair_op(Op::Fma, {v, a, b}); break;
        case 4: v = pair_op(Op::Min, {v, rng.chance(0.5) ? a : b}); break;
        case 5: v = pair_op(Op::Max, {v, rng.chance(0.5) ? a : b}); break;
        case 6: v = pair_op(Op::Neg, {v}); break;
        default: v = pair_op(Op::Abs, {v}); break;
      }
    }
    Inst g = make(Op::PairGet, t, {v});
    g.set(ir::Attr::Index, int64_t(rng.below(2)));
    return emit(g, uni[v]);
  }

  // A new pure value of dtype t. no_fault: nothing that could fault if executed speculatively
  // (no integer division, no variable shift), so if_conversion may flatten the arm it is in.
  Id value(DType t, bool no_fault = false) {
    if (float_like(t)) {
      if (wc) return wc_float();
      uint32_t r = rng.below(100);
      if (r < 30) {
        Op o = rng.pick({Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Min, Op::Max});
        return op(o, t, {pick(t), pick(t)});
      }
      if (r < 45) {
        if (rng.chance(0.45))
          return op(rng.pick({Op::Floor, Op::Ceil, Op::Rint, Op::Trunc, Op::Sin, Op::Cos, Op::Exp2, Op::Log2, Op::Erf}),
                    t, {pick(t)});
        if (rng.chance(0.1)) return op(Op::Pow, t, {pick(t), pick(t)});
        return op(rng.pick({Op::Neg, Op::Abs, Op::Exp, Op::Log, Op::Sqrt, Op::Rsqrt, Op::Tanh}), t, {pick(t)});
      }
      if (r < 55) return op(Op::Fma, t, {pick(t), pick(t), pick(t)});
      if (r < 62) {
        Id m = op(Op::Mul, t, {pick(t), pick(t)});
        Id c = pick(t);
        return rng.chance(0.5) ? op(Op::Add, t, {m, c}) : op(Op::Add, t, {c, m});
      }
      // bf16 pairs compute in f32 where subnormals may flush: not in guarded programs, whose
      // guard sits on scalars only (f16 values are never f32 subnormals).
      if (r < 67 && (t == DType::F16 || (t == DType::BF16 && !fg))) return pair_value(t);
      if (r < 72) return op(Op::Select, t, {pick(DType::Bool), pick(t), pick(t)});
      if (t == DType::F32 && rng.chance(0.15)) return op(Op::Bitcast, t, {pick(int_type())});
      return op(Op::Cast, t, {pick(random_type())});
    }
    if (t == DType::Bool) {
      uint32_t r = rng.below(100);
      if (r < 50) {
        DType ot = random_type();
        if (wc && ot == DType::F32) ot = DType::I32;  // no float comparisons: a rounding could flip them
        Op o = rng.pick({Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge});
        if (ot == DType::Bool && o != Op::Eq) o = Op::Ne;  // only eq and ne compare bools
        return op(o, DType::Bool, {pick(ot), pick(ot)});
      }
      if (r < 70) return op(rng.pick({Op::And, Op::Or, Op::Xor}), t, {pick(t), pick(t)});
      if (r < 78) return op(Op::Not, t, {pick(t)});
      if (r < 86) return op(Op::Select, t, {pick(DType::Bool), pick(t), pick(t)});
      DType from = random_type();
      if (wc && from == DType::F32) from = DType::U32;
      return op(Op::Cast, t, {pick(from)});
    }
    // i32 / u32
    uint32_t r = rng.below(100);
    if (r < 35) {
      Op o = rng.pick({Op::Add, Op::Sub, Op::Mul, Op::Min, Op::Max, Op::And, Op::Or, Op::Xor});
      return op(o, t, {pick(t), pick(t)});
    }
    if (r < 45) {
      if (no_fault) return op(Op::Add, t, {pick(t), pick(t)});
      return op(rng.chance(0.5) ? Op::Div : Op::Rem, t, {pick(t), safe_divisor(t)});
    }
    if (r < 55) {
      if (rng.chance(0.3)) return op(Op::MulHi, t, {pick(t), pick(t)});
      return op(rng.pick({Op::Neg, Op::Abs, Op::Not, Op::Popcount, Op::Clz}), t, {pick(t)});
    }
    if (r < 66) {
      Id amount = no_fault ? int_const(int_type(), rng.range(0, 31)) : shift_amount();
      return op(rng.chance(0.5) ? Op::Shl : Op::Shr, t, {pick(t), amount});
    }
    if (r < 75) return op(Op::Select, t, {pick(DType::Bool), pick(t), pick(t)});
    DType from = random_type();
    if (wc && from == DType::F32) from = t == DType::I32 ? DType::U32 : DType::I32;
    if (from == DType::F32 && rng.chance(0.3)) return bitcast_to_int(t, pick(from));
    return op(Op::Cast, t, {pick(from)});
  }

  // bitcast of an f32 to i32/u32. The bits of a NaN are not specified (docs/semantics.md), so
  // a NaN is replaced first: bitcast(select(x != x, 1.5, x)). Everything else keeps its bits.
  Id bitcast_to_int(DType t, Id x) {
    Id is_nan = op(Op::Ne, DType::Bool, {x, x});
    return op(Op::Bitcast, t, {op(Op::Select, DType::F32, {is_nan, float_const(DType::F32, 1.5), x})});
  }

  // ---- statements ---------------------------------------------------------------------------

  // Identities algebraic_simplify removes, and near-identities it must leave alone.
  void stmt_identity() {
    DType t = random_type();
    if (float_like(t)) {
      Id x = pick(t);
      if (wc) {
        double c = rng.pick({1.0, 0.0, -0.0});
        Op o = c == 1.0 ? rng.pick({Op::Mul, Op::Div}) : Op::Add;
        op(o, t, {x, float_const(t, c)});
        return;
      }
      switch (rng.below(7)) {
        case 0: op(Op::Mul, t, {x, float_const(t, 1.0)}); return;
        case 1: op(Op::Mul, t, {float_const(t, 1.0), x}); return;
        case 2: op(Op::Div, t, {x, float_const(t, 1.0)}); return;
        case 3: op(Op::Sub, t, {x, float_const(t, rng.pick({0.0, -0.0}))}); return;  // x - (-0.0) is not x
        case 4: op(Op::Add, t, {x, float_const(t, rng.pick({0.0, -0.0}))}); return;   // x + 0.0 is not x
        case 5: op(Op::Neg, t, {op(Op::Neg, t, {x})}); return;
        default: op(Op::Mul, t, {x, float_const(t, 0.0)}); return;  // not 0: NaN, inf and -0.0
      }
    }
    if (t == DType::Bool) {
      Id x = pick(t);
      switch (rng.below(5)) {
        case 0: op(Op::And, t, {x, bool_const(rng.chance(0.5))}); return;
        case 1: op(Op::Or, t, {bool_const(rng.chance(0.5)), x}); return;
        case 2: op(Op::Xor, t, {x, bool_const(false)}); return;
        case 3: op(Op::Not, t, {op(Op::Not, t, {x})}); return;
        default: op(Op::Select, t, {bool_const(rng.chance(0.5)), x, pick(t)}); return;
      }
    }
    Id x = pick(t);
    switch (rng.below(12)) {
      case 0: op(Op::Add, t, {x, int_const(t, 0)}); return;
      case 1: op(Op::Add, t, {int_const(t, 0), x}); return;
      case 2: op(Op::Sub, t, {x, rng.chance(0.5) ? int_const(t, 0) : x}); return;
      case 3: op(Op::Mul, t, {x, int_const(t, rng.pick({0, 1}))}); return;
      case 4: op(Op::Div, t, {x, int_const(t, 1)}); return;
      case 5: op(Op::Rem, t, {x, int_const(t, 1)}); return;
      case 6: op(rng.pick({Op::Or, Op::Xor}), t, {x, rng.chance(0.7) ? int_const(t, 0) : x}); return;
      case 7: op(Op::And, t, {x, rng.chance(0.5) ? int_const(t, 0) : x}); return;
      case 8: op(rng.pick({Op::Shl, Op::Shr}), t, {x, int_const(int_type(), 0)}); return;
      case 9: op(Op::Neg, t, {op(Op::Neg, t, {x})}); return;
      case 10: op(Op::Not, t, {op(Op::Not, t, {x})}); return;
      default: op(Op::Select, t, {pick(DType::Bool), x, x}); return;
    }
  }

  // An op on constants only: const_fold's work (and a constant condition for branch folding).
  void stmt_const_expr() {
    DType t = random_type();
    if (t == DType::Bool) {
      DType ot = wc ? DType::I32 : random_type();
      if (ot == DType::Bool) ot = DType::U32;
      op(rng.pick({Op::Lt, Op::Eq, Op::Ge}), DType::Bool, {random_const(ot), random_const(ot)});
      return;
    }
    if (float_like(t)) {
      if (wc) {
        clamp_wc(op(rng.pick({Op::Add, Op::Mul}), t, {random_const(t), random_const(t)}));
        return;
      }
      if (rng.chance(0.3)) {
        op(rng.pick({Op::Exp, Op::Sqrt, Op::Tanh, Op::Neg}), t, {random_const(t)});
        return;
      }
      if (rng.chance(0.2)) {
        op(Op::Cast, t, {random_const(rng.pick({DType::F32, DType::I32, DType::U32}))});
        return;
      }
      op(rng.pick({Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max}), t, {random_const(t), random_const(t)});
      return;
    }
    switch (rng.below(4)) {
      case 0: op(Op::Shl, t, {random_const(t), int_const(int_type(), rng.range(0, 31))}); return;
      case 1: op(rng.pick({Op::Div, Op::Rem}), t, {random_const(t), int_const(t, rng.range(1, 9))}); return;
      case 2: op(Op::Cast, t, {random_const(wc ? DType::I32 : DType::F32)}); return;
      default: op(rng.pick({Op::Add, Op::Sub, Op::Mul, Op::Xor}), t, {random_const(t), random_const(t)}); return;
    }
  }

  // A second copy of a visible pure value or `in` load (cse unifies it with the first).
  void stmt_duplicate() {
    std::vector<Id> c;
    for (const Frame& f : frames)
      for (Id v : f.values) {
        const Inst& in = k.insts[v];
        bool pure = ir::has_trait(in.op, ir::trait::P) && !ir::has_trait(in.op, ir::trait::L);
        if (pure || (in.op == Op::Load && k.params[in.param()].access == ir::Access::Read)) c.push_back(v);
      }
    if (c.empty()) return;
    Id original = c[rng.below(c.size())];
    Inst copy = k.insts[original];
    if (ir::has_trait(copy.op, ir::trait::C) && rng.chance(0.5)) std::swap(copy.operands[0], copy.operands[1]);
    emit(copy, uni[original] != 0);
  }

  DType param_dtype(P p) const { return k.params[p].dtype; }

  // This thread's own slot `base + c`, written in one of the forms vectorize must see through.
  Id own_slot(uint32_t c) {
    if (c == 0 && rng.chance(0.7)) return base;
    Id cc = u32(c);
    return rng.chance(0.8) ? op(Op::Add, DType::U32, {base, cc}) : op(Op::Add, DType::U32, {cc, base});
  }
  // An own slot chosen by a run-time value: base + (x & 7).
  Id own_slot_dynamic() {
    Id x = frames.back().induction != kNone && rng.chance(0.6) ? frames.back().induction : pick(int_type());
    if (k.insts[x].type != DType::U32) x = op(Op::Cast, DType::U32, {x});
    return op(Op::Add, DType::U32, {base, op(Op::And, DType::U32, {x, u32(kSlotsPerThread - 1)})});
  }
  Id own_index() { return rng.chance(0.6) ? own_slot(rng.below(kSlotsPerThread)) : own_slot_dynamic(); }

  // Any index into an `in` buffer: an own slot, or any value reduced modulo the length.
  Id input_index() {
    uint32_t r = rng.below(10);
    if (r < 4) return own_index();
    if (r < 7) return op(Op::Rem, DType::U32, {pick(DType::U32), u32(kInputLength)});
    if (r < 9) return op(Op::And, DType::U32, {pick(DType::U32), u32(kInputLength - 1)});
    return op(Op::And, DType::I32, {pick(DType::I32), int_const(DType::I32, kInputLength - 1)});  // i32 index
  }

  Id load(P p, Id index) {
    Inst in = make(Op::Load, param_dtype(p), {index});
    in.set(ir::Attr::Param, p);
    return emit(in);
  }
  void store(P p, Id index, Id v) {
    Inst in = make(Op::Store, DType::Void, {index, v});
    in.set(ir::Attr::Param, p);
    emit(in);
  }

  P random_input() {
    if (wc) return rng.pick({kInF, kInF, kInI, kInU});
    P p = rng.pick({kInF, kInI, kInU, kInH, kInT});
    return p == kInH && excluded(kF16) ? kInF : p;
  }
  P random_output() {
    if (wc) return rng.pick({kOutF, kOutF, kOutI, kIoU});
    return rng.pick({kOutF, kOutI, kIoU, kOutB, kOutT});
  }

  void stmt_load() {
    if (rng.chance(0.15)) {
      load(kIoU, own_index());  // inout: own slots only (another thread's would race)
      return;
    }
    P p = random_input();
    Id v = load(p, input_index());
    if (wc && p == kInF) clamp_wc(v);
  }

  // A value of dtype t for a store: picked, or converted from another value.
  Id value_for(DType t) {
    if (!wc && rng.chance(0.25)) return op(Op::Cast, t, {pick(random_type())});
    return pick(t);
  }

  // The 8-, 16- and 64-bit integers and fp8 (docs/semantics.md, "Element types"): a value cast
  // to one of them, for an integer combined in that width with another (wrapping, division and
  // shift rules of the width), stored to its buffer, and sometimes converted back for later
  // statements to use.
  // The 16-bit integers are sometimes the bits of a 16-bit float (bitcast, NaN replaced first:
  // its bits are not specified), the 64-bit ones a bitcast of the other signedness; and a 16-bit
  // integer is sometimes read back as a 16-bit float for later statements.
  void stmt_width() {
    const P out = rng.pick({kOutI8, kOutU16, kOutI64, kOutQ8, kOutU8, kOutI16, kOutU64, kOutQ5});
    const DType t = param_dtype(out);
    Id x = op(Op::Cast, t, {pick(rng.pick({DType::F32, DType::I32, DType::U32}))});
    if (int_bits(t) == 16 && rng.chance(0.3)) {
      const DType h = excluded(kF16) ? DType::BF16 : rng.pick({DType::F16, DType::BF16});
      Id f = op(Op::Cast, h, {pick(DType::F32)});
      Id is_nan = op(Op::Ne, DType::Bool, {f, f});
      x = op(Op::Bitcast, t, {op(Op::Select, h, {is_nan, float_const(h, 1.5), f})});
    }
    if (int_bits(t) == 64 && rng.chance(0.3))
      x = op(Op::Bitcast, t, {op(Op::Bitcast, t == DType::I64 ? DType::U64 : DType::I64, {x})});
    if (is_integer(t)) {
      if (rng.chance(0.8)) {
        Id y = op(Op::Cast, t, {pick(rng.pick({DType::I32, DType::U32}))});
        static const Op kOps[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::Min, Op::Max,
                                  Op::Xor, Op::And, Op::Shl, Op::Shr};
        const Op o = kOps[rng.below(sizeof kOps / sizeof kOps[0])];
        x = rng.chance(0.5) ? op(o, t, {x, y}) : op(o, t, {y, x});
      }
      if (rng.chance(0.25)) x = op(rng.pick({Op::Neg, Op::Not, Op::Abs}), t, {x});
    }
    store(out, own_index(), x);
    if (int_bits(t) == 16 && rng.chance(0.3)) {
      op(Op::Bitcast, excluded(kF16) ? DType::BF16 : rng.pick({DType::F16, DType::BF16}), {x});
      return;
    }
    if (rng.chance(0.5)) op(Op::Cast, is_fp8(t) ? DType::F32 : rng.pick({DType::I32, DType::U32, DType::F32}), {x});
  }

  // 64-bit indexing (docs/semantics.md, "64-bit indexing"): an index made 64-bit (i64 or u64,
  // sometimes through arithmetic with the 64-bit parameters that cancels out), used to load and
  // store; the own slot from thread_id64; and the u64 / i64 parameters in 64-bit arithmetic.
  Id index64(Id index32) {
    const DType t = rng.chance(0.5) ? DType::U64 : DType::I64;
    Id x = op(Op::Cast, t, {index32});
    if (rng.chance(0.5)) {
      Id w = t == DType::U64 ? p_wide : p_swide;
      x = op(Op::Sub, t, {op(Op::Add, t, {x, w}), w});  // wraps and comes back: exact in 64 bits
    }
    return x;
  }
  void stmt_wide() {
    const uint32_t r = rng.below(4);
    if (r == 0) {
      P p = random_input();
      Id v = load(p, index64(input_index()));
      if (wc && p == kInF) clamp_wc(v);
    } else if (r == 1) {
      P p = random_output();
      store(p, index64(own_index()), value_for(param_dtype(p)));
    } else if (r == 2 && tid64 != kNone) {
      Id c = int_const(DType::U64, rng.below(kSlotsPerThread));
      Id slot = op(Op::Add, DType::U64, {op(Op::Mul, DType::U64, {tid64, int_const(DType::U64, kSlotsPerThread)}), c});
      store(kOutI64, slot, op(Op::Cast, DType::I64, {pick(rng.pick({DType::I32, DType::U32}))}));
    } else {
      const DType t = rng.chance(0.5) ? DType::U64 : DType::I64;
      Id w = t == DType::U64 ? p_wide : p_swide;
      Id y = op(Op::Cast, t, {pick(rng.pick({DType::I32, DType::U32}))});
      static const Op kOps[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::Min, Op::Max, Op::Xor, Op::Shr};
      const Op o = kOps[rng.below(sizeof kOps / sizeof kOps[0])];
      Id x = rng.chance(0.5) ? op(o, t, {w, y}) : op(o, t, {y, w});
      store(kOutI64, own_index(), t == DType::I64 ? x : op(Op::Cast, DType::I64, {x}));
      if (rng.chance(0.5)) op(Op::Cast, rng.pick({DType::I32, DType::U32, DType::F32}), {x});
    }
  }

  // The second type parameter W (random_launch picks it): a load of `in_w` converted to f32 (or
  // i32) for later statements, and a value converted to W stored to `out_w`.
  void stmt_w() {
    const DType to = excluded(kFloatToInt) ? DType::F32 : rng.pick({DType::F32, DType::I32});
    op(Op::Cast, to, {load(kInW, input_index())});
    // W may be an integer: with float -> int casts kept out, only integers are converted to it.
    const DType from = excluded(kFloatToInt) ? int_type() : rng.pick({DType::F32, DType::I32, DType::U32});
    store(kOutW, own_index(), op(Op::Cast, DType::GenericW, {pick(from)}));
  }

  // u64 atomic adds into `acc_u64`, which only atomics touch: the totals wrap modulo 2^64 and are
  // the same in every order; the returned values are dropped from the pool.
  void stmt_atomic_u64() {
    Id slot = op(Op::And, DType::U32, {pick(DType::U32), u32(7)});
    Inst a = make(Op::AtomicAdd, DType::U64, {slot, op(Op::Cast, DType::U64, {pick(int_type())})});
    a.set(ir::Attr::Param, kAccU64);
    emit(a);
    frames.back().values.pop_back();
  }

  // u64 atomic adds on threadgroup memory between barriers (the array was zeroed with the
  // others), then a read of the slot: the total is order-free. Uniform control flow only.
  void stmt_tg_atomic_u64() {
    emit(make(Op::Barrier, DType::Void));
    Id slot = op(Op::Rem, DType::U32, {lid, u32(uint32_t(rng.range(1, 4)))});
    emit(make(Op::TgAtomicAdd, DType::U64, {tg_u64, slot, op(Op::Cast, DType::U64, {pick(int_type())})}));
    frames.back().values.pop_back();
    emit(make(Op::Barrier, DType::Void));
    op(Op::Cast, int_type(), {emit(make(Op::TgLoad, DType::U64, {tg_u64, slot}))});
    emit(make(Op::Barrier, DType::Void));  // before anyone updates the array again
  }

  // atomic_add_pair into `acc_f2` / `acc_b2` (starting at +0), which only these touch. Every add
  // into an even element adds +0 or 1, into an odd one +0 or -0.75: with one nonzero addend per
  // element the final value is the same in every order, roundings included.
  void stmt_atomic_pair() {
    // An addend of +0 must stay +0: where float zeros are kept out, the statement is skipped.
    if (excluded(kFloatZero) || excluded(kZeroCast)) return stmt_width();
    const P acc = excluded(kF16) || rng.chance(0.5) ? kAccB2 : kAccF2;
    const DType h = param_dtype(acc);
    Id pair = op(Op::And, DType::U32, {pick(DType::U32), u32(3)});
    auto addend = [&](double nonzero) {
      Id bit = op(Op::Eq, DType::Bool, {op(Op::And, DType::U32, {pick(DType::U32), u32(1)}), u32(1)});
      return op(Op::Select, h, {bit, float_const(h, nonzero), float_const(h, 0.0)});
    };
    Inst a = make(Op::AtomicAddPair, DType::Void, {pair, addend(1.0), addend(-0.75)});
    a.set(ir::Attr::Param, acc);
    emit(a);
  }

  void stmt_store() {
    P p = random_output();
    store(p, own_index(), value_for(param_dtype(p)));
  }

  void stmt_var_decl() {
    DType t = wc ? rng.pick({DType::F32, DType::I32, DType::U32}) : rng.pick({DType::F32, DType::I32, DType::U32,
                                                                              DType::Bool, DType::Generic, DType::F16});
    t = no_f16(t);
    emit(make(Op::Var, t, {pick(t)}));
  }

  std::vector<Id> visible_vars() const {
    std::vector<Id> v;
    for (const Frame& f : frames) v.insert(v.end(), f.vars.begin(), f.vars.end());
    return v;
  }

  Id var_load(Id var) { return emit(make(Op::VarLoad, k.insts[var].type.elem(), {var})); }
  void var_store(Id var, Id v) { emit(make(Op::VarStore, DType::Void, {var, v})); }

  void stmt_var() {
    std::vector<Id> vars = visible_vars();
    if (vars.empty() || rng.chance(0.2)) return stmt_var_decl();
    Id var = vars[rng.below(vars.size())];
    DType t = k.insts[var].type.elem();
    switch (rng.below(3)) {
      case 0: var_load(var); return;
      case 1: var_store(var, rng.chance(0.5) ? pick(t) : value(t)); return;
      default: {  // accumulate: var = var op x (a loop-carried value inside loops)
        Id cur = var_load(var);
        Id next;
        if (wc && t == DType::F32) next = clamp_wc(op(rng.pick({Op::Add, Op::Mul}), t, {cur, pick(t)}));
        else if (t == DType::Bool) next = op(Op::Xor, t, {cur, pick(t)});
        else next = op(rng.pick({Op::Add, Op::Max, Op::Mul}), t, {cur, pick(t)});
        var_store(var, next);
        return;
      }
    }
  }

  // ---- control flow -------------------------------------------------------------------------

  void open(Id owner, int slot, bool uniform) {
    Id b = k.add_block(owner);
    k.insts[owner].blocks[slot] = b;
    frames.push_back(Frame{b, uniform, {}, {}, kNone});
  }
  void close() { frames.pop_back(); }

  Id begin_if(Id cond) { return emit(make(Op::If, DType::Void, {cond})); }

  // A condition: any bool, a comparison, or (sometimes) a threadgroup-uniform one.
  Id condition(bool want_uniform) {
    if (want_uniform) {
      Id lhs = rng.chance(0.5) ? p_m : p_k;
      DType t = k.insts[lhs].type.elem();
      return op(rng.pick({Op::Lt, Op::Ge, Op::Ne}), DType::Bool, {lhs, int_const(t, rng.range(0, 3))});
    }
    if (rng.chance(0.5)) return pick(DType::Bool);
    return value(DType::Bool);
  }

  void stmt_if() {
    bool uniform_cond = uniform_here() && rng.chance(red ? 0.4 : 0.15);
    Id c = condition(uniform_cond);
    Id id = begin_if(c);
    bool u = uniform_here() && uni[c];
    open(id, 0, u);
    block(rng.range(1, 4));
    close();
    if (rng.chance(0.5)) {
      open(id, 1, u);
      block(rng.range(1, 3));
      close();
    }
  }

  // if c { v = <pure> } else { v = <pure> }: what if_conversion turns into a select.
  void stmt_if_assign() {
    std::vector<Id> vars = visible_vars();
    Id var;
    if (vars.empty() || rng.chance(0.4)) {
      stmt_var_decl();
      var = frames.back().vars.back();
    } else {
      var = vars[rng.below(vars.size())];
    }
    DType t = k.insts[var].type.elem();
    Id c = condition(false);
    Id id = begin_if(c);
    for (int arm = 0; arm < (rng.chance(0.7) ? 2 : 1); ++arm) {
      open(id, arm, false);
      int n = rng.range(0, 2);
      Id v = kNone;
      for (int i = 0; i < n; ++i) v = value(t, /*no_fault=*/true);
      var_store(var, v != kNone && rng.chance(0.8) ? v : pick(t));
      close();
    }
    if (rng.chance(0.6)) var_load(var);
  }

  // if false/true { ... }: const_fold splices the arm that runs.
  void stmt_if_const() {
    Id c = rng.chance(0.5) ? bool_const(rng.chance(0.5))
                           : op(Op::Lt, DType::Bool, {int_const(DType::I32, rng.range(-2, 2)), int_const(DType::I32, 0)});
    Id id = begin_if(c);
    open(id, 0, uniform_here());
    block(rng.range(1, 3));
    close();
    if (rng.chance(0.5)) {
      open(id, 1, uniform_here());
      block(rng.range(1, 2));
      close();
    }
  }

  // Accesses with tails: a load guarded by `idx < length` (idx may be anything), and stores
  // guarded per element like the corpus's partial run.
  void stmt_guarded() {
    if (rng.chance(0.5)) {
      Id idx = rng.chance(0.5) ? pick(DType::U32) : op(Op::Add, DType::U32, {base, u32(rng.range(0, 1100))});
      Id id = begin_if(op(Op::Lt, DType::Bool, {idx, u32(kInputLength)}));
      open(id, 0, false);
      P p = random_input();
      Id v = load(p, idx);
      if (wc && p == kInF) v = clamp_wc(v);
      P out = random_output();
      store(out, own_index(), k.insts[v].type == param_dtype(out) ? v : value_for(param_dtype(out)));
      close();
      return;
    }
    // for e in 0..8: if base + e < limit { out[base + e] = f(e) }
    Id limit = rng.chance(0.5) ? op(Op::Mul, DType::U32, {p_n, u32(kSlotsPerThread)})
                               : op(Op::Sub, DType::U32, {op(Op::Mul, DType::U32, {p_total, u32(kSlotsPerThread)}),
                                                          u32(rng.range(0, 20))});
    P out = random_output();
    uint32_t count = uint32_t(rng.range(1, int(kSlotsPerThread)));
    for (uint32_t e = 0; e < count && !full(); ++e) {
      Id idx = own_slot(e);
      Id id = begin_if(op(Op::Lt, DType::Bool, {idx, limit}));
      open(id, 0, false);
      store(out, idx, value_for(param_dtype(out)));
      close();
    }
  }

  // Ops that would fault if executed where the program does not execute them: an integer
  // division by a value that may be zero, a shift by a value that may be >= 32, guarded by an
  // if or by a loop that runs only when it is safe. A pass that speculates them (licm,
  // if_conversion, value_sink) makes the optimized program throw.
  void stmt_guarded_fault() {
    DType t = int_type();
    Id d = pick(t);
    Id x = pick(t);
    Id safe = t == DType::I32 ? op(Op::Gt, DType::Bool, {d, int_const(t, 0)})  // > 0: no INT_MIN / -1
                              : op(Op::Ne, DType::Bool, {d, int_const(t, 0)});
    std::vector<Id> vars = visible_vars();
    Id var = kNone;
    for (Id v : vars)
      if (k.insts[v].type == t) var = v;
    if (rng.chance(0.5)) {
      Id id = begin_if(safe);
      open(id, 0, false);
      Id q = op(rng.chance(0.5) ? Op::Div : Op::Rem, t, {x, d});
      if (var != kNone && rng.chance(0.6)) var_store(var, q);
      else store(t == DType::I32 ? kOutI : kIoU, own_index(), q);
      close();
    } else if (rng.chance(0.5)) {
      // A loop that runs twice when d is safe and never otherwise; the division is invariant.
      Id trips = op(Op::Select, DType::U32, {safe, u32(2), u32(0)});
      Inst f = make(Op::For, DType::U32, {u32(0), trips, u32(1)});
      Id id = emit(f);
      open(id, 0, false);
      frames.back().induction = id;
      frames.back().values.push_back(id);
      Id q = op(Op::Div, t, {x, d});
      store(t == DType::I32 ? kOutI : kIoU, own_slot_dynamic(), q);
      close();
    } else {
      Id s = pick(DType::U32);
      Id id = begin_if(op(Op::Lt, DType::Bool, {s, u32(32)}));
      open(id, 0, false);
      Id v = op(rng.chance(0.5) ? Op::Shl : Op::Shr, t, {x, s});
      store(t == DType::I32 ? kOutI : kIoU, own_index(), v);
      close();
    }
  }

  // Ops that fault when executed — a shift by a constant >= 32, an integer division by a
  // constant zero, an out-of-range load — placed where they never execute: under a condition
  // that is false at run time (m <= 4) or in a loop that runs zero times. Not undefined
  // behaviour (nothing faulting runs), but a pass that speculates them makes the program fault.
  void stmt_never_executed() {
    Id never = op(Op::Gt, DType::Bool, {p_m, u32(uint32_t(rng.range(5, 100)))});
    DType t = int_type();
    Id x = pick(t);
    auto faulting = [&]() -> Id {
      switch (rng.below(3)) {
        case 0: return op(rng.chance(0.5) ? Op::Shl : Op::Shr, t, {x, int_const(int_type(), rng.range(32, 40))});
        case 1: return op(rng.chance(0.5) ? Op::Div : Op::Rem, t, {x, int_const(t, 0)});
        default: return load(t == DType::I32 ? kInI : kInU, u32(kInputLength + uint32_t(rng.range(0, 5))));
      }
    };
    if (rng.chance(0.5)) {
      // if never { v = <faulting> }: an arm of pure assignments, which if_conversion flattens.
      std::vector<Id> vars = visible_vars();
      Id var = kNone;
      for (Id v : vars)
        if (k.insts[v].type == t) var = v;
      if (var == kNone) var = emit(make(Op::Var, t, {x}));
      Id id = begin_if(never);
      open(id, 0, false);
      var_store(var, faulting());
      close();
      return;
    }
    // for i in 0 .. select(never, 2, 0): the faulting value is loop-invariant (licm's).
    Id trips = op(Op::Select, DType::U32, {never, u32(2), u32(0)});
    Id id = emit(make(Op::For, DType::U32, {u32(0), trips, u32(1)}));
    open(id, 0, false);
    frames.back().induction = id;
    frames.back().values.push_back(id);
    store(t == DType::I32 ? kOutI : kIoU, own_slot_dynamic(), faulting());
    close();
  }

  // op(a, b) and op(b, a) for a commutative op, both observable: cse unifies them, which is
  // only right if the op really is commutative bit for bit. Operands are often signed zeros,
  // the classic case where float min/max implementations are not.
  void stmt_commuted_pair() {
    DType t = random_type();
    if (wc) t = DType::F32;
    Id a = pick(t), b = pick(t);
    if (float_like(t) && !wc && rng.chance(0.6)) {
      a = op(Op::Mul, t, {a, float_const(t, 0.0)});  // +0 or -0 (or NaN) by the sign of a
      b = rng.chance(0.5) ? op(Op::Neg, t, {a}) : float_const(t, rng.pick({0.0, -0.0}));
    }
    Op o;
    if (float_like(t)) o = wc ? rng.pick({Op::Min, Op::Max, Op::Add, Op::Mul}) : rng.pick({Op::Min, Op::Max, Op::Add, Op::Mul, Op::Eq, Op::Ne});
    else if (t == DType::Bool) o = rng.pick({Op::And, Op::Or, Op::Xor, Op::Eq, Op::Ne});
    else o = rng.pick({Op::Min, Op::Max, Op::Add, Op::Mul, Op::And, Op::Or, Op::Xor, Op::Eq});
    DType rt = o == Op::Eq || o == Op::Ne ? DType::Bool : t;
    Id x = op(o, rt, {a, b});
    Id y = op(o, rt, {b, a});
    if (wc) {
      x = clamp_wc(x);
      y = clamp_wc(y);
    }
    P out = rt == DType::Bool ? kOutI : random_output();
    DType ot = param_dtype(out);
    uint32_t slot = rng.below(kSlotsPerThread - 1);
    store(out, own_slot(slot), k.insts[x].type == ot ? x : op(Op::Cast, ot, {x}));
    store(out, own_slot(slot + 1), k.insts[y].type == ot ? y : op(Op::Cast, ot, {y}));
  }

  void stmt_for() {
    // Bounds: constant (unroll's), a uniform parameter, or per thread (non-uniform trip count).
    int kind = rng.below(red ? 5 : 4);
    DType t = DType::U32;
    Id b, e, s;
    int trips;
    bool uniform_trips = true;
    switch (kind) {
      case 0: {
        int lo = rng.range(0, 2), n = rng.range(0, 4), st = rng.range(1, 2);
        b = u32(lo);
        e = u32(lo + n);
        s = u32(st);
        trips = (n + st - 1) / st;
        break;
      }
      case 1: {
        t = DType::I32;
        int lo = rng.range(-3, 1), n = rng.range(0, 4);
        b = int_const(t, lo);
        e = rng.chance(0.3) ? p_k : int_const(t, lo + n);
        s = int_const(t, 1);
        trips = e == p_k ? 4 - lo : n;
        break;
      }
      case 2:
        b = u32(0);
        e = p_m;
        s = u32(rng.range(1, 2));
        trips = 4;
        break;
      case 3:
        // Per thread: 0 .. (x & 3).
        b = u32(0);
        e = op(Op::And, DType::U32, {pick(DType::U32), u32(3)});
        s = u32(1);
        trips = 3;
        uniform_trips = false;
        break;
      default:
        // The strided reduction loop: for j = local_id; j < n (or 96); j += group_size.
        b = lid;
        e = rng.chance(0.5) ? p_n : u32(96);
        s = gsize;
        trips = 4;  // n <= 128 threads, group size >= 32
        uniform_trips = false;
        break;
    }
    if (trips < 1) trips = 1;
    if (trip_product * trips > kMaxTripProduct) return;
    // A 64-bit loop (docs/semantics.md, "64-bit indexing"): the same bounds widened.
    if (rng.chance(0.2)) {
      t = t == DType::I32 ? DType::I64 : DType::U64;
      b = op(Op::Cast, t, {b});
      e = op(Op::Cast, t, {e});
      s = op(Op::Cast, t, {s});
    }
    Inst f = make(Op::For, t, {b, e, s});
    Id id = emit(f);
    bool u = uniform_here() && uniform_trips && uni[b] && uni[e] && uni[s];
    open(id, 0, u);
    uni[id] = u;
    frames.back().induction = id;
    frames.back().values.push_back(id);
    trip_product *= trips;
    block(rng.range(2, 5));
    trip_product /= trips;
    close();
  }

  // Adjacent runs base + 0 .. base + W-1: loads from an `in` buffer and stores to an output,
  // in shuffled order with arithmetic in between (schedule moves the loads, vectorize groups).
  void stmt_vector_run() {
    uint32_t w = rng.pick<uint32_t>({8, 8, 4, 2});
    uint32_t start = w * rng.below(kSlotsPerThread / w);
    std::vector<uint32_t> order(w);
    for (uint32_t i = 0; i < w; ++i) order[i] = start + i;
    if (rng.chance(0.5))
      for (uint32_t i = w; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    P in = random_input();
    std::vector<Id> loaded(kSlotsPerThread, kNone);
    bool do_loads = rng.chance(0.8);
    if (do_loads)
      for (uint32_t e : order) {
        if (rng.chance(0.3)) value(random_type(), true);
        loaded[e] = load(in, own_slot(e));
        if (wc && in == kInF) loaded[e] = clamp_wc(loaded[e]);
      }
    if (!rng.chance(0.8)) return;
    P out = random_output();
    DType ot = param_dtype(out);
    for (uint32_t e : order) {
      Id v = loaded[e];
      if (v == kNone || k.insts[v].type != ot || rng.chance(0.3)) v = value_for(ot);
      store(out, own_slot(e), v);
    }
  }

  // ---- threadgroup operations (Reduction mode, uniform control flow only) --------------------

  // Every thread stores its slot, a barrier, then each reads another thread's slot. The arrays
  // were filled at the start (init_tg_arrays), so a slot whose thread skipped the store holds an
  // older value, never an unwritten one.
  void stmt_tg_exchange() {
    Id arr = tg_arrays[rng.below(tg_arrays.size())];
    DType t = k.insts[arr].type.elem();
    Id v = pick(t);
    // A 32-bit slot may instead arrive by an asynchronous copy of one element of an input of
    // its dtype (docs/semantics.md "Asynchronous copies"): valid 0 or 1, so a tail zero-fills.
    const P async_src = t == DType::I32 ? kInI : t == DType::U32 ? kInU : t == DType::F32 && !wc ? kInF : P(0);
    if (async_src != P(0) && rng.chance(0.25)) {
      Id valid = rng.chance(0.5) ? u32(1) : op(Op::And, DType::U32, {pick(DType::U32), u32(1)});
      Inst c = make(Op::AsyncCopy, DType::Void, {arr, lid, own_index(), valid});
      c.set(ir::Attr::Param, async_src);
      c.set(ir::Attr::Count, 1);
      emit(c);
      emit(make(Op::AsyncCommit, DType::Void));
      Inst w = make(Op::AsyncWait, DType::Void);
      w.set(ir::Attr::Count, 0);
      emit(w);
    } else if (rng.chance(0.2)) {  // only some threads write: the others' slots keep older values
      Id id = begin_if(pick(DType::Bool));
      open(id, 0, false);
      emit(make(Op::TgStore, DType::Void, {arr, lid, v}));
      close();
    } else {
      emit(make(Op::TgStore, DType::Void, {arr, lid, v}));
    }
    if (tg_mbar != kNone && mbr.chance(0.5)) {
      // Every thread arrives, then waits for the phase: it orders the stores before the reads.
      const Id zero = hidden_const(DType::U32, 0, 0.0);
      emit_hidden(make(Op::MbarArrive, DType::Void, {tg_mbar, zero}));
      const Id parity = emit_hidden(make(Op::VarLoad, DType::U32, {mbar_parity}));
      emit_hidden(make(Op::MbarWait, DType::Void, {tg_mbar, zero, parity}));
      emit_hidden(make(Op::VarStore, DType::Void,
                       {mbar_parity, hidden_op(Op::Xor, DType::U32, {parity, hidden_const(DType::U32, 1, 0.0)})}));
    } else {
      emit(make(Op::Barrier, DType::Void));
    }
    Id partner;
    switch (rng.below(4)) {
      case 0: partner = op(Op::Rem, DType::U32, {op(Op::Add, DType::U32, {lid, u32(rng.range(1, 40))}), gsize}); break;
      case 1: partner = op(Op::Xor, DType::U32, {lid, u32(1)}); break;
      case 2: partner = op(Op::Sub, DType::U32, {op(Op::Sub, DType::U32, {gsize, u32(1)}), lid}); break;
      default: partner = lid; break;
    }
    emit(make(Op::TgLoad, t, {arr, partner}));
    emit(make(Op::Barrier, DType::Void));  // before anyone overwrites the array again
  }

  void stmt_lane_op() {
    DType t = wc ? DType::F32 : rng.pick({DType::F32, DType::I32, DType::U32});
    if (excluded(kFloatLane) && t == DType::F32) t = int_type();
    switch (wc ? 0 : rng.below(6)) {
      case 0: case 1: emit(make(rng.chance(0.6) ? Op::LaneSum : Op::LaneMax, t, {pick(t)})); return;
      case 2:
        if (t == DType::F32) emit(make(rng.pick({Op::LaneMin, Op::LaneInclusiveSum, Op::LaneExclusiveSum}), t, {pick(t)}));
        else emit(make(rng.pick({Op::LaneMin, Op::LaneAnd, Op::LaneOr, Op::LaneInclusiveSum, Op::LaneExclusiveSum}), t, {pick(t)}));
        return;
      case 3: {
        // Sources in range, at the edges, past the lane group and arbitrary (docs/semantics.md:
        // a source outside the group leaves the lane its own value).
        Id src;
        switch (rng.below(4)) {
          case 0: src = u32(uint32_t(rng.pick({0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, -1}))); break;
          case 1: src = op(Op::Xor, DType::U32, {lane, u32(uint32_t(rng.range(0, 40)))}); break;
          case 2: src = op(Op::Add, DType::U32, {lane, u32(uint32_t(rng.range(0, 9)))}); break;
          default: src = pick(DType::U32); break;
        }
        emit(make(rng.pick({Op::LaneShuffle, Op::LaneShuffleXor, Op::LaneShuffleUp, Op::LaneShuffleDown}), t, {pick(t), src}));
        return;
      }
      case 4:  // broadcast needs one source lane per lane group: a constant
        emit(make(Op::LaneBroadcast, t, {pick(t), u32(uint32_t(rng.pick({0, 1, 5, 7, 31, 40})))}));
        return;
      default: {
        Op vote = rng.pick({Op::LaneBallot, Op::LaneAny, Op::LaneAll});
        emit(make(vote, vote == Op::LaneBallot ? DType::U32 : DType::Bool, {pick(DType::Bool)}));
        return;
      }
    }
  }

  // Threadgroup atomics between barriers, then a read of the updated slots. Only what every
  // order gives is kept: integer add/min/max/and/or totals and f32 min/max; the values the
  // atomics return are dropped from the pool (their order is the hardware's).
  void stmt_tg_atomic() {
    if (tg_u64 != kNone && aux.chance(0.3)) return stmt_tg_atomic_u64();
    Id arr = tg_arrays[rng.below(tg_arrays.size())];
    DType t = k.insts[arr].type.elem();
    Op a = t == DType::F32 ? rng.pick({Op::TgAtomicMin, Op::TgAtomicMax})
                           : rng.pick({Op::TgAtomicAdd, Op::TgAtomicMin, Op::TgAtomicMax, Op::TgAtomicAnd, Op::TgAtomicOr});
    if (t == DType::F32 && excluded(kFloatMinMax)) return;
    emit(make(Op::Barrier, DType::Void));
    Id slot = op(Op::Rem, DType::U32, {lid, u32(uint32_t(rng.range(1, 4)))});
    emit(make(a, t, {arr, slot, pick(t)}));
    frames.back().values.pop_back();
    emit(make(Op::Barrier, DType::Void));
    emit(make(Op::TgLoad, t, {arr, slot}));
    emit(make(Op::Barrier, DType::Void));  // before anyone writes the array again
  }

  // The tracer's group_sum: lane partials to threadgroup memory, one barrier, a second pass.
  void stmt_group_reduce() {
    if (excluded(kFloatLane)) return stmt_lane_op();
    Id arr = tg_arrays[0];  // f32
    Id partial = emit(make(Op::LaneSum, DType::F32, {pick(DType::F32)}));
    Id first = op(Op::Eq, DType::Bool, {lane, u32(0)});
    Id id = begin_if(first);
    open(id, 0, false);
    emit(make(Op::TgStore, DType::Void, {arr, simd_group, partial}));
    close();
    emit(make(Op::Barrier, DType::Void));
    Id acc = emit(make(Op::Var, DType::F32, {float_const(DType::F32, 0.0)}));
    Id loop = emit(make(Op::For, DType::U32, {lane, n_simd, lane_w}));
    open(loop, 0, false);
    frames.back().induction = loop;
    frames.back().values.push_back(loop);
    Id x = emit(make(Op::TgLoad, DType::F32, {arr, loop}));
    Id sum = op(Op::Add, DType::F32, {var_load(acc), x});
    var_store(acc, wc ? clamp_wc(sum) : sum);
    close();
    emit(make(Op::LaneSum, DType::F32, {var_load(acc)}));
    emit(make(Op::Barrier, DType::Void));
  }

  // Cooperative tiles (uniform control flow): A and B fragments from in_h (f16, 16x16x16) or
  // from tg_fp8 (f8e4m3, 16x16x32) at a constant or uniform run-time offset and a constant row
  // stride, one or two multiply-accumulates onto a fill of a uniform value, and one accumulator
  // element read back into the value pool. Every element index stays below kInputLength for in_h
  // (offset <= 180, stride <= 48: 180 + 15 * 48 + 15) and below kFp8TileElems for tg_fp8.
  // The fragments themselves never enter the pool: only tile ops take them.
  void stmt_tile() {
    // Cross-backend programs have them too: on Vulkan a fragment is a shared-memory slot per
    // lane group (three live at most here: 3 KiB per lane group, 24 KiB for the 8 lane groups of
    // a 64-thread group on lavapipe), compiled in a fraction of a second.
    if (excluded(kTile) || excluded(kF16) || wc) return stmt_group_reduce();
    std::vector<Id>& vals = frames.back().values;
    auto hidden = [&](Inst in) {
      Id id = emit(in, true);
      vals.erase(std::remove(vals.begin(), vals.end(), id), vals.end());
      return id;
    };
    // f8e4m3 tiles (16x16x32) from tg_fp8 where the program has it (chosen from `fp8r`; the
    // `rng` and `aux` draws are the same either way).
    const bool fp8 = tg_fp8 != kNone && fp8r.chance(0.5);
    const uint32_t K = fp8 ? 32 : 16;
    auto load = [&](FragRole role) {
      Id off = rng.chance(0.5) ? u32(uint32_t(rng.range(0, 180))) : op(Op::Mul, DType::U32, {p_m, u32(uint32_t(rng.range(1, 45)))});
      // f8e4m3 strides are 16..24 (rows of A may overlap: loads only read), so the largest index
      // stays below kFp8TileElems.
      const uint32_t drawn = uint32_t(rng.range(16, 48));
      Id stride = u32(fp8 ? 16 + drawn % 9 : drawn);
      Inst in = fp8 ? make(Op::TileTgLoad, DType::Void, {tg_fp8, off, stride}) : make(Op::TileLoad, DType::Void, {off, stride});
      in.type = Type::fragment(fp8 ? DType::F8E4M3 : DType::F16, 16, 16, K, role);
      if (!fp8) in.set(ir::Attr::Param, kInH);
      // Tile layouts (docs/semantics.md): column-major reads the same index range (rows and
      // columns swap, the bound above holds for both); a threadgroup load may swizzle, which only
      // changes index bits below 2^(base + bits) <= 2^5, inside the 1024 elements of tg_fp8.
      if (layr.chance(0.3)) in.set(ir::Attr::ColMajor, 1);
      if (fp8 && layr.chance(0.4)) {
        const int64_t bits = layr.range(1, 3), base = layr.range(0, 5 - bits + 0), shift = layr.range(bits, 5);
        in.set(ir::Attr::Swizzle, bits * 100 + base * 10 + shift);
      }
      return hidden(in);
    };
    Id fill_value = rng.chance(0.5) ? p_s : float_const(DType::F32, rng.pick({0.0, 1.5, -2.0}));
    Inst fill = make(Op::TileFill, DType::Void, {fill_value});
    fill.type = Type::fragment(DType::F32, 16, 16, K, FragRole::Acc);
    Id acc = hidden(fill);
    for (int step = 0, steps = rng.range(1, 2); step < steps; ++step) {
      Id a = load(FragRole::A);
      Id b = load(FragRole::B);
      Inst mma = make(Op::TileMma, DType::Void, {a, b, acc});
      mma.type = fill.type;
      acc = hidden(mma);
    }
    Inst get = make(Op::TileGet, DType::F32, {acc});
    get.set(ir::Attr::Row, rng.range(0, 15));
    get.set(ir::Attr::Col, rng.range(0, 15));
    emit(get, true);  // into the value pool (guarded by emit in guarded programs)
  }

  // Every thread writes its slot of every threadgroup array, then a barrier: no later read sees
  // memory nothing wrote (threadgroup memory starts undefined on a GPU). Slots past the group
  // size are never read: partners are taken modulo the group size.
  void init_tg_arrays() {
    for (Id arr : tg_arrays) {
      DType t = k.insts[arr].type.elem();
      emit(make(Op::TgStore, DType::Void, {arr, lid, t == DType::F32 ? float_const(t, 0.0) : int_const(t, 0)}));
    }
    if (tg_half != kNone)
      emit_hidden(make(Op::TgStore, DType::Void, {tg_half, lid, hidden_const(k.insts[tg_half].type.elem(), 0, 0.0)}));
    if (tg_u64 != kNone) emit_hidden(make(Op::TgStore, DType::Void, {tg_u64, lid, hidden_const(DType::U64, 0, 0.0)}));
    if (tg_mbar != kNone) {
      // Thread 0 initializes the barrier for the whole group before the barrier below.
      const Id zero = hidden_const(DType::U32, 0, 0.0);
      Id first = emit_hidden(make(Op::If, DType::Void, {hidden_op(Op::Eq, DType::Bool, {lid, zero})}));
      open(first, 0, false);
      emit_hidden(make(Op::MbarInit, DType::Void, {tg_mbar, zero, gsize}));
      close();
      mbar_parity = emit_hidden(make(Op::Var, DType::U32, {zero}));
    }
    if (tg_fp8 != kNone) {
      // The threads of the group fill every element: tg_fp8[e] = f8e4m3(in_h[e mod length]).
      Id loop = emit_hidden(make(Op::For, DType::U32, {lid, hidden_const(DType::U32, kFp8TileElems, 0), gsize}));
      open(loop, 0, false);
      Inst ld = make(Op::Load, DType::F16, {hidden_op(Op::Rem, DType::U32, {loop, hidden_const(DType::U32, kInputLength, 0)})});
      ld.set(ir::Attr::Param, kInH);
      const Id v = emit_hidden(ld);
      emit_hidden(make(Op::TgStore, DType::Void, {tg_fp8, loop, hidden_op(Op::Cast, DType::F8E4M3, {v})}));
      close();
    }
    if (!tg_arrays.empty()) emit(make(Op::Barrier, DType::Void));
  }

  // ---- threadgroup arrays at real width and register arrays (their own random stream) -------
  // These statements draw every choice from `aux` and add instructions pick() never sees, so a
  // program that has none of them is exactly the program the generator made before they
  // existed (the cross-backend corpus stays the same programs).

  Id emit_hidden(Inst in) {
    Id id = k.add_inst(in);
    k.blocks[frames.back().block].insts.push_back(id);
    uni.resize(k.insts.size(), 0);
    return id;
  }
  Id hidden_const(DType t, int64_t i, double f) {
    if (f == 0 && excluded(kFloatZero)) f = 0.25;  // as float_const does
    Inst c = make(Op::Const, t);
    if (float_like(t)) c.set_float(ir::Attr::Value, f);
    else c.set(ir::Attr::Value, i);
    return emit_hidden(c);
  }
  Id hidden_op(Op o, DType t, std::initializer_list<Id> operands) { return emit_hidden(make(o, t, operands)); }
  // A visible value of dtype t, or a small constant.
  Id aux_pick(DType t) {
    std::vector<Id> c;
    visible_of(t, c);
    if (!c.empty() && aux.chance(0.9)) return c[aux.below(c.size())];
    return hidden_const(t, aux.range(0, 99), aux.range(-32, 32) * 0.25);
  }
  // Stores v to one of this thread's own slots of the output buffer of v's dtype.
  void hidden_store(Id v) {
    const DType t = k.insts[v].type.elem();
    const P out = t == DType::F32 ? kOutF : t == DType::I32 ? kOutI : t == DType::BF16 ? kOutB : kIoU;
    Inst st = make(Op::Store, DType::Void, {hidden_op(Op::Add, DType::U32, {base, hidden_const(DType::U32, aux.below(kSlotsPerThread), 0)}), v});
    st.set(ir::Attr::Param, out);
    emit_hidden(st);
  }

  // A register array: every element written (in a loop of constant trip count, which unroll
  // turns into constant indices, or one store per element), then elements read at constant
  // indices or at indices computed from constants (register_arrays folds them) and stored.
  void stmt_register_array() {
    const DType t = aux.pick({DType::F32, DType::I32, DType::U32});
    const uint32_t count = uint32_t(aux.range(1, 6));
    Inst a = make(Op::LocalAlloc, t);
    a.set(ir::Attr::Name, k.intern_string("r" + std::to_string(k.insts.size())));
    a.set(ir::Attr::Count, count);
    Id arr = emit_hidden(a);
    if (aux.chance(0.5)) {
      Id loop = emit_hidden(make(Op::For, DType::U32, {hidden_const(DType::U32, 0, 0), hidden_const(DType::U32, count, 0),
                                                       hidden_const(DType::U32, 1, 0)}));
      open(loop, 0, false);
      Id v = t == DType::U32 && aux.chance(0.5) ? hidden_op(Op::Add, DType::U32, {aux_pick(t), loop}) : aux_pick(t);
      // Reversed, the index is a computation over the induction variable that only
      // register_arrays can fold (unroll runs after const_fold).
      Id idx = aux.chance(0.5) ? loop
                               : hidden_op(Op::Sub, DType::U32, {hidden_const(DType::U32, count - 1, 0), loop});
      emit_hidden(make(Op::LocalStore, DType::Void, {arr, idx, v}));
      close();
    } else {
      for (uint32_t e = 0; e < count; ++e)
        emit_hidden(make(Op::LocalStore, DType::Void, {arr, hidden_const(DType::U32, e, 0), aux_pick(t)}));
    }
    for (int reads = aux.range(1, 2); reads > 0; --reads) {
      Id idx = aux.chance(0.5) ? hidden_const(DType::U32, aux.below(count), 0)
                               : hidden_op(Op::Rem, DType::U32,
                                           {hidden_op(Op::Add, DType::U32, {hidden_const(DType::U32, aux.below(40), 0),
                                                                            hidden_const(DType::U32, aux.below(40), 0)}),
                                            hidden_const(DType::U32, count, 0)});
      hidden_store(emit_hidden(make(Op::LocalLoad, t, {arr, idx})));
    }
  }

  // The 16-bit threadgroup array: each thread stores a value (rounded to 16 bits by the store),
  // a barrier, then reads its neighbour's and stores it out.
  void stmt_half_exchange() {
    const DType t = k.insts[tg_half].type.elem();
    emit_hidden(make(Op::TgStore, DType::Void, {tg_half, lid, aux_pick(t)}));
    emit_hidden(make(Op::Barrier, DType::Void));
    Id partner = hidden_op(Op::Xor, DType::U32, {lid, hidden_const(DType::U32, 1, 0)});
    Id x = emit_hidden(make(Op::TgLoad, t, {tg_half, partner}));
    emit_hidden(make(Op::Barrier, DType::Void));  // before anyone overwrites the array again
    hidden_store(t == DType::BF16 ? x : hidden_op(Op::Cast, DType::F32, {x}));
  }

  // ---- blocks -------------------------------------------------------------------------------

  void statement() {
    bool nest = depth() < kMaxDepth && !full();
    bool tg = red && uniform_here();
    if (aux.chance(0.03)) stmt_register_array();
    if (tg && tg_half != kNone && aux.chance(0.06)) stmt_half_exchange();
    // 0..117 as below (100.. only where a threadgroup is uniform); 118.. (tg) or 100.. (not):
    // the element-width statements.
    uint32_t r = rng.below(tg ? 122 : 104);
    if (r >= 118 || (!tg && r >= 100)) {
      if (rng.chance(0.35)) {
        stmt_wide();
        return;
      }
      if (wc) return;
      const uint32_t w = rng.below(10);
      if (w < 6) stmt_width();
      else if (w < 8) stmt_w();
      else if (w < 9) {
        if (tg && tg_u64 != kNone && rng.chance(0.5)) stmt_tg_atomic_u64();
        else stmt_atomic_u64();
      } else {
        stmt_atomic_pair();
      }
      return;
    }
    if (r < 22) value(random_type());
    else if (r < 27) stmt_identity();
    else if (r < 31) stmt_const_expr();
    else if (r < 34) stmt_duplicate();
    else if (r < 35) stmt_commuted_pair();
    else if (r < 43) stmt_load();
    else if (r < 52) stmt_store();
    else if (r < 61) stmt_var();
    else if (r < 67) { if (nest) stmt_if(); }
    else if (r < 72) { if (nest) stmt_if_assign(); }
    else if (r < 74) { if (nest) stmt_if_const(); }
    else if (r < 78) { if (nest) stmt_guarded(); }
    else if (r < 80) { if (nest) stmt_guarded_fault(); }
    else if (r < 81) { if (nest && !wc) stmt_never_executed(); }
    else if (r < 89) { if (nest) stmt_for(); }
    else if (r < 95) stmt_vector_run();
    else if (r < 100) {
      Id m = op(Op::Mul, DType::F32, {pick(DType::F32), pick(DType::F32)});
      Id a = op(Op::Add, DType::F32, {m, pick(DType::F32)});
      if (wc) clamp_wc(a);
    }
    else if (r < 104 || !lanes) {
      if (rng.chance(0.3)) stmt_tg_atomic();
      else stmt_tg_exchange();
    }
    else if (r < 115) stmt_lane_op();
    else if (r < 117) stmt_group_reduce();
    else stmt_tile();
  }

  void block(int statements) {
    for (int i = 0; i < statements && !full(); ++i) statement();
  }

  Id param_value(P p) {
    Inst in = make(Op::Param, k.params[p].dtype);
    in.set(ir::Attr::Param, p);
    return emit(in, true);
  }

  void declare_params() {
    auto scalar = [&](const char* name, DType t) {
      ir::Param p;
      p.name = name;
      p.kind = ir::ParamKind::Scalar;
      p.dtype = t;
      k.params.push_back(p);
    };
    auto buffer = [&](const char* name, DType t, ir::Access a, bool per_thread) {
      ir::Param p;
      p.name = name;
      p.kind = ir::ParamKind::Buffer;
      p.dtype = t;
      p.access = a;
      if (per_thread) {
        p.extent_scalars = {kTotal};
        p.extent_factor = kSlotsPerThread;
      } else {
        p.extent_factor = kInputLength;
      }
      k.params.push_back(p);
    };
    scalar("n", DType::U32);
    scalar("total", DType::U32);
    scalar("m", DType::U32);
    scalar("k", DType::I32);
    scalar("s", DType::F32);
    buffer("in_f", DType::F32, ir::Access::Read, false);
    buffer("in_i", DType::I32, ir::Access::Read, false);
    buffer("in_u", DType::U32, ir::Access::Read, false);
    buffer("in_h", DType::F16, ir::Access::Read, false);
    buffer("in_t", DType::Generic, ir::Access::Read, false);
    buffer("out_f", DType::F32, ir::Access::Write, true);
    buffer("out_i", DType::I32, ir::Access::Write, true);
    buffer("io_u", DType::U32, ir::Access::ReadWrite, true);
    buffer("out_b", DType::BF16, ir::Access::Write, true);
    buffer("out_t", DType::Generic, ir::Access::Write, true);
    buffer("out_i8", DType::I8, ir::Access::Write, true);
    buffer("out_u16", DType::U16, ir::Access::Write, true);
    buffer("out_i64", DType::I64, ir::Access::Write, true);
    buffer("out_q8", DType::F8E4M3, ir::Access::Write, true);
    scalar("wide", DType::U64);
    scalar("swide", DType::I64);
    buffer("out_u8", DType::U8, ir::Access::Write, true);
    buffer("out_i16", DType::I16, ir::Access::Write, true);
    buffer("out_u64", DType::U64, ir::Access::Write, true);
    buffer("out_q5", DType::F8E5M2, ir::Access::Write, true);
    buffer("in_w", DType::GenericW, ir::Access::Read, false);
    buffer("out_w", DType::GenericW, ir::Access::Write, true);
    auto acc = [&](const char* name, DType t) {
      buffer(name, t, ir::Access::ReadWrite, false);
      k.params.back().extent_factor = 8;
    };
    acc("acc_u64", DType::U64);
    acc("acc_f2", DType::F16);
    acc("acc_b2", DType::BF16);
  }

  ir::Kernel build(uint64_t seed) {
    k.name = std::string("fuzz_") + (red ? "r" : "e") + (wc ? "wc_" : "_") + std::to_string(seed);
    k.mode = mode;
    k.dtypes = {DType::F32, DType::F16, DType::BF16};
    k.wtypes = {DType::F32, DType::F16, DType::BF16, DType::U8, DType::I16, DType::F8E5M2};
    declare_params();
    frames.push_back(Frame{0, true, {}, {}, kNone});
    if (red) {
      // Threadgroup arrays are declared first in the entry block, as the tracer hoists them.
      for (DType t : {DType::F32, DType::I32, DType::U32}) {
        if (t != DType::F32 && (wc || rng.chance(0.5))) continue;
        Inst a = make(Op::TgAlloc, t);
        a.set(ir::Attr::Name, k.intern_string("tg_" + std::string(dtype_name(t))));
        a.set(ir::Attr::Count, kMaxGroupSize);
        // Drawn from `aux` (see stmt_register_array): the f32 array is sometimes sized at
        // dispatch (by `total`, at least the group size), and arrays get alignments.
        if (t == DType::F32 && aux.chance(0.3)) {
          a.set(ir::Attr::Count, 1);
          a.set(ir::Attr::CountParam, kTotal);
        }
        if (const uint32_t align = aux.pick<uint32_t>({0, 0, 16, 128}); align) a.set(ir::Attr::Align, align);
        tg_arrays.push_back(emit(a));
      }
      // A 16-bit array at its real width, exchanged by stmt_half_exchange.
      if (!wc && aux.chance(0.4)) {
        const DType half = excluded(kF16) ? DType::BF16 : aux.pick({DType::F16, DType::BF16});
        Inst a = make(Op::TgAlloc, half);
        a.set(ir::Attr::Name, k.intern_string("tg_half"));
        a.set(ir::Attr::Count, kMaxGroupSize);
        if (aux.chance(0.5)) a.set(ir::Attr::Align, 64);
        tg_half = emit_hidden(a);
      }
      // A u64 array for threadgroup u64 atomics (stmt_tg_atomic_u64).
      if (!wc && aux.chance(0.4)) {
        Inst a = make(Op::TgAlloc, DType::U64);
        a.set(ir::Attr::Name, k.intern_string("tg_u64"));
        a.set(ir::Attr::Count, kMaxGroupSize);
        tg_u64 = emit_hidden(a);
      }
      if (!excluded(kMbar) && mbr.chance(0.3)) {
        Inst a = make(Op::TgAlloc, DType::U64);
        a.set(ir::Attr::Name, k.intern_string("tg_mbar"));
        a.set(ir::Attr::Count, 1);
        tg_mbar = emit_hidden(a);
      }
      // An f8e4m3 array for f8e4m3 tiles (16x16x32), filled from in_h before the first barrier.
      if (!wc && lanes && !excluded(kTile) && !excluded(kF16) && fp8r.chance(0.2)) {
        Inst a = make(Op::TgAlloc, DType::F8E4M3);
        a.set(ir::Attr::Name, k.intern_string("tg_fp8"));
        a.set(ir::Attr::Count, kFp8TileElems);
        tg_fp8 = emit_hidden(a);
      }
    }
    p_n = param_value(kN);
    p_total = param_value(kTotal);
    p_m = param_value(kM);
    p_k = param_value(kKs);
    p_s = param_value(kS);
    if (wc) clamp_wc(p_s);
    p_wide = param_value(kWide);
    p_swide = param_value(kWideS);
    // The flat thread index `tid` (and, with threadgroups, the flat local index `lid` and the
    // group size), from the built-ins each mode binds; random_launch gives each mode its geometry.
    auto builtin = [&](Op o, int axis, bool uniform) {
      Inst b = make(o, DType::U32);
      b.set(ir::Attr::Axis, axis);
      return emit(b, uniform);
    };
    auto mul_add = [&](Id a, Id b, Id c) { return op(Op::Add, DType::U32, {op(Op::Mul, DType::U32, {a, b}), c}); };
    if (mode == Mode::Tile2D) {
      // A 2-D threadgroup on a 2-D grid: lid = y * size.x + x, group = gy * groups.x + gx.
      Id lx = builtin(Op::LocalId, 0, false), ly = builtin(Op::LocalId, 1, false);
      Id sx = builtin(Op::GroupSize, 0, true), sy = builtin(Op::GroupSize, 1, true);
      lid = mul_add(ly, sx, lx);
      gsize = op(Op::Mul, DType::U32, {sx, sy});
      Id gx = builtin(Op::ProgramId, 0, true), gy = builtin(Op::ProgramId, 1, true);
      Id group = mul_add(gy, builtin(Op::NumPrograms, 0, true), gx);
      tid = mul_add(group, gsize, lid);
      init_tg_arrays();
    } else if (mode == Mode::SimdGroup2D) {
      // Whole lane groups along x (x is a multiple of the lane width), so the flat local index
      // is simd_group_id * lane_width + lane_id and the group size num_simd_groups * lane_width.
      lane = emit(make(Op::LaneId, DType::U32));
      simd_group = emit(make(Op::SimdGroupId, DType::U32));
      lane_w = emit(make(Op::LaneWidth, DType::U32), true);
      n_simd = emit(make(Op::NumSimdGroups, DType::U32), true);
      lid = mul_add(simd_group, lane_w, lane);
      gsize = op(Op::Mul, DType::U32, {n_simd, lane_w});
      tid = mul_add(builtin(Op::ProgramId, 0, true), gsize, lid);
      init_tg_arrays();
    } else if (red) {
      Inst b = make(Op::LocalId, DType::U32);
      lid = emit(b);
      gsize = emit(make(Op::GroupSize, DType::U32), true);
      Id group = emit(make(Op::ProgramId, DType::U32), true);
      tid = op(Op::Add, DType::U32, {op(Op::Mul, DType::U32, {group, gsize}), lid});
      lane = emit(make(Op::LaneId, DType::U32));
      simd_group = emit(make(Op::SimdGroupId, DType::U32));
      lane_w = emit(make(Op::LaneWidth, DType::U32), true);
      n_simd = emit(make(Op::NumSimdGroups, DType::U32), true);
      init_tg_arrays();
    } else if (mode == Mode::Grid3D) {
      // Global extents {total / 4, 2, 2} (random_launch): tid = (z * 2 + y) * (total / 4) + x.
      Id x = builtin(Op::ThreadId, 0, false), y = builtin(Op::ThreadId, 1, false), z = builtin(Op::ThreadId, 2, false);
      Id width = op(Op::Shr, DType::U32, {p_total, u32(2)});
      tid = mul_add(mul_add(z, u32(2), y), width, x);
    } else {
      tid = emit(make(Op::ThreadId, DType::U32));
      tid64 = emit(make(Op::ThreadId, DType::U64));  // thread_id64: the same index in 64 bits
    }
    uni[tid] = 0;
    base = op(Op::Mul, DType::U32, {tid, u32(kSlotsPerThread)});
    // A few starting values of each kind so the first statements have operands.
    load(kInF, own_slot(0));
    if (wc) clamp_wc(frames.back().values.back());
    load(kInI, own_slot(1));
    if (!wc) load(kInT, own_slot(2));
    if (!red && rng.chance(0.5)) {
      // The elementwise shape: everything under `if tid < n` (threads past n do nothing).
      Id id = begin_if(op(Op::Lt, DType::Bool, {tid, p_n}));
      open(id, 0, false);
      block(rng.range(14, 26));
      close();
      if (rng.chance(0.3)) {
        open(id, 1, false);
        block(rng.range(1, 3));
        close();
      }
    } else {
      block(rng.range(14, 26));
    }
    // Make sure the outputs see the final values.
    for (int i = 0; i < 3; ++i) stmt_store();
    return std::move(k);
  }
};

// ---- launch --------------------------------------------------------------------------------

double random_float(Rng& r, bool wc) {
  if (wc) return r.uniform(0.5, 2.0);
  if (r.chance(0.85)) return r.uniform(-4, 4);
  const double inf = std::numeric_limits<double>::infinity();
  return r.pick({0.0, -0.0, 1.0, -1.0, 1e30, -1e30, 1e-40, inf, -inf, std::nan(""), 70000.0, 3e38});
}
int64_t random_int(Rng& r) {
  if (r.chance(0.6)) return r.range(-16, 16);
  if (r.chance(0.5)) return int64_t(int32_t(uint32_t(r.next())));
  return r.pick<int64_t>({INT32_MIN, INT32_MAX, 1 << 20, 1023, 1024, 32, 31});
}

}  // namespace

ir::Kernel random_program(uint64_t seed, bool reduction_mode, const RandomProgramOptions& opts) {
  Gen g(seed, reduction_mode, opts);
  return g.build(seed);
}

namespace {
constexpr std::pair<const char*, OpClass> kOpClassNames[] = {
    {"rem", kSignedRem}, {"fcast", kFloatToInt}, {"fminmax", kFloatMinMax}, {"flane", kFloatLane},
    {"fma", kFma},       {"fzero", kFloatZero},  {"fdiv", kFloatDiv},    {"f16", kF16},
    {"zcast", kZeroCast}, {"nzero", kNegZero}, {"tile", kTile}, {"mbar", kMbar}};
}

std::string excluded_op_in(const ir::Kernel& k, uint32_t exclude) {
  uint32_t found = 0;
  auto fl = [&](ir::Id id) { return float_like(k.insts[id].type.elem()); };
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    const bool f = float_like(in.type.elem());
    if (in.op == Op::Rem && in.type == DType::I32) found |= kSignedRem;
    if (in.op == Op::Cast && (in.type == DType::I32 || in.type == DType::U32) && fl(in.operands[0])) found |= kFloatToInt;
    if (f && (in.op == Op::Min || in.op == Op::Max)) found |= kFloatMinMax;
    if (f && ir::has_trait(in.op, ir::trait::L) && !ir::has_trait(in.op, ir::trait::P)) found |= kFloatLane;
    if (f && (in.op == Op::TgAtomicMin || in.op == Op::TgAtomicMax)) found |= kFloatMinMax;
    if (in.op == Op::Fma) found |= kFma;
    if (in.type.is_fragment()) found |= kTile;
    if (ir::is_mbar_op(in.op)) found |= kMbar;
    if (f && in.op == Op::Div) found |= kFloatDiv;
    if (in.type == DType::F16) found |= kF16;
    const bool arith = in.op == Op::Add || in.op == Op::Sub || in.op == Op::Mul || in.op == Op::Div ||
                       in.op == Op::Fma || in.op == Op::Min || in.op == Op::Max;
    for (int i = 0; arith && f && i < in.num_operands(); ++i) {
      const ir::Inst& c = k.insts[in.operands[i]];
      if (c.op == Op::Const && float_like(c.type.elem()) && c.fattr(ir::Attr::Value) == 0) found |= kFloatZero;
      if (c.op == Op::Const && float_like(c.type.elem()) && c.fattr(ir::Attr::Value) == 0 && std::signbit(c.fattr(ir::Attr::Value))) found |= kNegZero;
      if (c.op == Op::Cast && k.insts[c.operands[0]].op == Op::Const && !fl(c.operands[0]) &&
          k.insts[c.operands[0]].attr(ir::Attr::Value) == 0)
        found |= kFloatZero | kZeroCast;  // a cast of an integer 0: a float zero a driver folds just the same
    }
  });
  found &= exclude;
  for (const auto& [n, c] : kOpClassNames)
    if (found & c) return n;
  return "";
}

bool parse_op_classes(const std::string& list, uint32_t& out, std::string& error) {
  out = 0;
  for (size_t pos = 0; pos <= list.size();) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(pos, end - pos);
    pos = end + 1;
    if (name.empty()) continue;
    bool found = false;
    for (const auto& [n, c] : kOpClassNames)
      if (name == n) {
        out |= c;
        found = true;
      }
    if (!found) {
      error = "unknown op class '" + name + "' (known: " + op_class_names(~0u) + ")";
      return false;
    }
  }
  return true;
}

std::string op_class_names(uint32_t classes) {
  std::string s;
  for (const auto& [n, c] : kOpClassNames)
    if (classes & c) s += (s.empty() ? "" : ",") + std::string(n);
  return s;
}

std::string RandomLaunch::describe() const {
  std::ostringstream s;
  s << "T=" << dtype_name(dtype.t) << (dtype.has_w() ? std::string(" W=") + dtype_name(dtype.w) : "") << " grid={" << grid.x << "," << grid.y << "," << grid.z << "} threadgroup={"
    << threadgroup.x << "," << threadgroup.y << "," << threadgroup.z << "} scalars=[";
  for (size_t i = 0; i < scalars.size(); ++i) s << (i ? "," : "") << "0x" << std::hex << scalars[i] << std::dec;
  s << "]";
  return s.str();
}

RandomLaunch random_launch(const ir::Kernel& k, uint64_t seed, const RandomProgramOptions& opts,
                           const std::vector<DType>& dtypes) {
  Rng r{seed ^ 0x5deece66dull};
  RandomLaunch L;
  DType t = r.pick({DType::F32, DType::F16, DType::BF16});
  if (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), t) == dtypes.end()) t = dtypes[(seed >> 1) % dtypes.size()];
  L.dtype = t;
  if (!k.wtypes.empty()) {
    // W from the launch seed's bits (not `r`: the rest of the launch is what it always was),
    // never f16 where f16 is kept out, nor a dtype a `dtypes` list (the device's) leaves out.
    std::vector<DType> ws;
    for (DType w : k.wtypes)
      if (!(w == DType::F16 && (opts.exclude & kF16)) &&
          !(is_float(w) && dtype_size(w) == 2 && !dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), w) == dtypes.end()))
        ws.push_back(w);
    L.dtype.w = ws.empty() ? DType::F32 : ws[(seed * 0x9e3779b97f4a7c15ull >> 40) % ws.size()];
  }
  if (k.mode == Mode::Reduction) {
    L.threadgroup = {r.pick<uint32_t>({32, 64}), 1, 1};
    L.grid = {uint32_t(r.range(1, 2)), 1, 1};
  } else if (k.mode == Mode::Tile2D) {
    // 32 to 64 threads in two dimensions (x need not be a multiple of the lane width), and up
    // to kMaxThreads in all.
    L.threadgroup = r.pick<Dim3>({{8, 4, 1}, {16, 2, 1}, {4, 8, 1}, {16, 4, 1}, {8, 8, 1}});
    L.grid = r.pick<Dim3>({{1, 1, 1}, {2, 1, 1}, {1, 2, 1}});
  } else if (k.mode == Mode::SimdGroup2D) {
    L.threadgroup = r.pick<Dim3>({{32, 1, 1}, {64, 1, 1}, {32, 2, 1}});
    L.grid = {uint32_t(r.range(1, 2)), 1, 1};
  } else if (k.mode == Mode::Grid3D) {
    // Global extents {t.x * g.x, 2, 2} (so total / 4 is the x extent the program computes),
    // with y and z split between the grid and the threadgroup in three ways.
    uint32_t tx = r.pick<uint32_t>({4, 8, 16}), gx = uint32_t(r.range(1, 2));
    switch (r.below(3)) {
      case 0: L.threadgroup = {tx, 2, 1}, L.grid = {gx, 1, 2}; break;
      case 1: L.threadgroup = {tx, 1, 2}, L.grid = {gx, 2, 1}; break;
      default: L.threadgroup = {tx, 2, 2}, L.grid = {gx, 1, 1}; break;
    }
  } else {
    L.threadgroup = {r.pick<uint32_t>({8, 16, 32, 64}), 1, 1};
    L.grid = {uint32_t(r.range(1, 2)), 1, 1};
  }
  const uint32_t total = uint32_t(L.grid.product() * L.threadgroup.product());
  std::vector<uint64_t> by_param(k.params.size(), 0);
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ir::Param& p = k.params[i];
    if (p.kind != ir::ParamKind::Scalar) continue;
    uint64_t bits = 0;
    if (p.name == "n") bits = total - uint32_t(r.range(0, int(std::min<uint32_t>(total, 12))));
    else if (p.name == "total") bits = total;
    else if (p.name == "m") bits = uint32_t(r.range(0, 4));
    else if (p.name == "k") bits = uint32_t(int32_t(r.range(-4, 4)));
    else if (p.name == "wide" || p.name == "swide") bits = r.next();  // any 64-bit pattern
    else {
      float f = float(opts.well_conditioned ? r.uniform(0.5, 2.0) : r.uniform(-3, 3));
      std::memcpy(&bits, &f, 4);
    }
    by_param[i] = bits;
    L.scalars.push_back(bits);
  }
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ir::Param& p = k.params[i];
    if (p.kind != ir::ParamKind::Buffer) continue;
    DType t = ir::resolve(p.dtype, L.dtype);
    uint64_t count = p.extent_factor;
    for (uint32_t s : p.extent_scalars) count *= by_param[s];
    std::vector<unsigned char> bytes(count * dtype_size(t), 0xff);
    if (p.name.rfind("acc_", 0) == 0) {
      std::fill(bytes.begin(), bytes.end(), 0);  // the atomics' accumulators start at 0 (+0)
    } else if (p.access != ir::Access::Write) {
      std::vector<double> v(count);
      for (double& x : v) x = is_float(t) ? random_float(r, opts.well_conditioned) : double(random_int(r));
      if (t == DType::U32)
        for (double& x : v) x = double(uint32_t(int64_t(x)));
      num::encode(t, v.data(), bytes.data(), count);
    }
    L.buffers.push_back(std::move(bytes));
  }
  return L;
}

std::vector<std::vector<unsigned char>> run_launch(const ir::Kernel& k, const RandomLaunch& launch,
                                                   uint32_t lane_width) {
  ir::Diagnostics d;
  if (!ir::verify(k, d)) throw Error("kernel " + k.name + " does not verify:\n" + d.render(k));
  std::vector<std::vector<unsigned char>> bufs = launch.buffers;
  std::vector<interp::BufferArg> args;
  // Buffers and tensormap parameters in declaration order; a map's 128 bytes are zeros (the
  // interpreter copies through its description).
  std::vector<interp::TensorMapArg> maps(launch.maps.size());
  std::vector<unsigned char> map_bytes(ir::kTensorMapBytes, 0);
  size_t bi = 0, mi = 0;
  for (const ir::Param& p : k.params) {
    if (p.kind == ir::ParamKind::Buffer) {
      if (bi >= bufs.size()) throw Error("launch of " + k.name + ": too few buffers");
      auto& b = bufs[bi++];
      args.push_back({b.data(), b.size()});
    } else if (p.kind == ir::ParamKind::Blob) {
      if (!p.tensor_map || mi >= launch.maps.size())
        throw Error("launch of " + k.name + ": blob parameter '" + p.name + "' has no value (launches carry tensor maps only)");
      const LaunchMap& lm = launch.maps[mi];
      if (lm.buffer >= bufs.size() || lm.dims.size() != lm.box.size() || lm.dims.empty() || lm.dims.size() > 5)
        throw Error("launch of " + k.name + ": tensor map '" + p.name + "' is malformed");
      const ir::Param* bp = nullptr;
      size_t j = 0;
      for (const ir::Param& q : k.params)
        if (q.kind == ir::ParamKind::Buffer && j++ == lm.buffer) bp = &q;
      interp::TensorMapArg& m = maps[mi++];
      m.dtype = ir::resolve(bp->dtype, launch.dtype);
      m.data = bufs[lm.buffer].data();
      m.bytes = bufs[lm.buffer].size();
      m.rank = uint32_t(lm.dims.size());
      for (uint32_t d = 0; d < m.rank; ++d) {
        m.dims[d] = lm.dims[d];
        m.box[d] = lm.box[d];
        m.strides[d] = d == 0 ? dtype_size(m.dtype) : m.strides[d - 1] * lm.dims[d - 1];
      }
      m.swizzle = lm.swizzle;
      args.push_back({map_bytes.data(), map_bytes.size(), 1, &m});
    }
  }
  interp::Options o;
  o.lane_width = lane_width;
  o.max_steps = 50'000'000;  // generous for these programs; a runaway loop fails fast
  interp::run(k, launch.dtype, args, launch.scalars, launch.grid, launch.threadgroup, o);
  return bufs;
}

bool same_bits(DType t, const unsigned char* a, const unsigned char* b, bool signed_zeros_equal) {
  const size_t es = dtype_size(t);
  if (std::memcmp(a, b, es) == 0) return true;
  if (!is_float(t)) return false;
  double x = 0, y = 0;
  num::decode(t, a, &x, 1);
  num::decode(t, b, &y, 1);
  return (std::isnan(x) && std::isnan(y)) || (signed_zeros_equal && x == 0 && y == 0);
}

std::string first_difference(const ir::Kernel& k, Instantiation dtype, const std::vector<std::vector<unsigned char>>& want,
                             const std::vector<std::vector<unsigned char>>& got, double tol, double floor,
                             bool signed_zeros_equal) {
  size_t b = 0;
  for (const ir::Param& p : k.params) {
    if (p.kind != ir::ParamKind::Buffer) continue;
    if (b >= want.size() || b >= got.size() || want[b].size() != got[b].size())
      return "buffer '" + p.name + "' has a different size";
    DType t = ir::resolve(p.dtype, dtype);
    size_t n = want[b].size() / dtype_size(t);
    std::vector<double> w(n), g(n);
    num::decode(t, want[b].data(), w.data(), n);
    num::decode(t, got[b].data(), g.data(), n);
    const size_t es = dtype_size(t);
    for (size_t i = 0; i < n; ++i) {
      bool same = same_bits(t, want[b].data() + i * es, got[b].data() + i * es, signed_zeros_equal);
      if (!same && tol > 0 && is_float(t) && !std::isnan(w[i]) && !std::isnan(g[i]))
        same = std::fabs(w[i] - g[i]) <= tol * std::max(floor, std::fabs(w[i]));
      if (same) continue;
      std::ostringstream s;
      s.precision(9);
      uint64_t wb = 0, gb = 0;
      std::memcpy(&wb, want[b].data() + i * es, es);
      std::memcpy(&gb, got[b].data() + i * es, es);
      s << "buffer '" << p.name << "' (" << dtype_name(t) << ")[" << i << "]: want " << w[i] << " (0x" << std::hex
        << wb << "), got " << std::dec << g[i] << " (0x" << std::hex << gb << ")";
      return s.str();
    }
    ++b;
  }
  return "";
}

}  // namespace iron::fuzz
