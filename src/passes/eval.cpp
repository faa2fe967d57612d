// Scalar semantics of the pure IR ops as docs/semantics.md defines them, which the CUDA and GLSL
// dialects emit exactly: f32 registers for every float dtype, integers of every width wrapping
// in their own width (computed on uint64_t: no C++ overflow UB), defined results for division
// by zero and shifts by the width or more, saturating float->int casts (PTX cvt.rzi),
// round-to-nearest-even where a Cast narrows to f16/bf16/fp8 (fp8 saturating), and f16/bf16
// arithmetic rounded to its dtype after every op (fma: one rounding of the exact result).
#include "passes/eval.hpp"

#include <climits>
#include <cmath>

#include "core/numeric.hpp"

namespace iron::eval {
namespace {

enum class Kind { Float, Int, Bool, Other };

Kind kind_of(DType t) {
  if (is_float(t)) return Kind::Float;
  if (is_integer(t)) return Kind::Int;
  if (t == DType::Bool) return Kind::Bool;
  return Kind::Other;
}

bool is_16bit_float(DType t) { return t == DType::F16 || t == DType::BF16; }

bool fail(std::string& error, std::string msg) {
  error = std::move(msg);
  return false;
}

bool bad_type(std::string& error, ir::Op op, DType t) {
  return fail(error, std::string("cannot evaluate ") + ir::mnemonic(op) + " of " + dtype_name(t));
}

// The value of a canonical integer register as a double (exact up to 2^53, else rounded to
// nearest even, as the int -> float conversion of every backend does in one step to f32 below).
float int_to_f32(DType t, uint64_t bits) {
  return is_signed_integer(t) ? float(int64_t(bits)) : float(bits);
}

bool eval_cast(DType to, DType from, Scalar x, Scalar& out, std::string& error) {
  Kind fk = kind_of(from), tk = kind_of(to);
  if (fk == Kind::Other) return bad_type(error, ir::Op::Cast, from);
  if (tk == Kind::Bool) {
    // x != 0: NaN is != 0, so a NaN casts to true.
    out = Scalar::of_bool(fk == Kind::Float ? x.f() != 0.0f : x.bits != 0);
    return true;
  }
  if (fk == Kind::Bool) {
    if (tk == Kind::Float) {
      if (is_type_param(to)) return fail(error, std::string("a cast to ") + dtype_name(to) + " depends on the concrete dtype");
      out = Scalar::of_f32(x.b() ? 1.0f : 0.0f);
    } else if (tk == Kind::Int) {
      out = Scalar::of_u64(x.b() ? 1u : 0u);
    } else {
      return bad_type(error, ir::Op::Cast, to);
    }
    return true;
  }
  switch (tk) {
    case Kind::Float: {
      if (is_type_param(to)) return fail(error, std::string("a cast to ") + dtype_name(to) + " depends on the concrete dtype");
      // An integer rounds to f32 once (nearest even), then, for a narrower float, once more.
      float v = fk == Kind::Float ? x.f() : int_to_f32(from, x.bits);
      // Registers stay f32; narrowing to a 16-bit float or fp8 rounds to nearest even, here.
      out = Scalar::of_f32(num::round_to(to, v));
      return true;
    }
    case Kind::Int:
      // float -> int truncates and saturates (NaN -> 0); int -> int keeps the value modulo 2^width.
      out.bits = fk == Kind::Float ? num::float_to_int(to, double(x.f())) : num::int_wrap(to, x.bits);
      return true;
    default:
      return bad_type(error, ir::Op::Cast, to);
  }
}

bool eval_float(ir::Op op, DType t, const Scalar* a, Scalar& out, std::string& error) {
  using ir::Op;
  float x = a[0].f();
  float y = 0.0f;
  if (ir::op_info(op).arity >= 2) y = a[1].f();
  float r;
  switch (op) {
    case Op::Add: r = x + y; break;
    case Op::Sub: r = x - y; break;
    case Op::Mul: r = x * y; break;
    case Op::Div: r = x / y; break;
    case Op::Min: r = fmin_ordered(x, y); break;
    case Op::Max: r = fmax_ordered(x, y); break;
    case Op::Neg: r = -x; break;
    case Op::Abs: r = std::fabs(x); break;
    // On f16 and bf16 one rounding of the exact a * b + c (as native 16-bit fma does): to odd at
    // f32, then to the dtype below; f32 rounding to nearest here would round twice.
    case Op::Fma: r = is_16bit_float(t) ? num::fma_round_odd(x, y, a[2].f()) : std::fma(x, y, a[2].f()); break;
    case Op::Exp: r = std::exp(x); break;
    case Op::Log: r = std::log(x); break;
    case Op::Sqrt: r = std::sqrt(x); break;
    case Op::Rsqrt: r = 1.0f / std::sqrt(x); break;
    case Op::Tanh: r = std::tanh(x); break;
    // Exact roundings to an integral value; -0, +-inf and NaN pass through, a negative value
    // that rounds to zero gives -0. rint is round-half-to-even (the default rounding mode).
    case Op::Floor: r = std::floor(x); break;
    case Op::Ceil: r = std::ceil(x); break;
    case Op::Rint: r = std::nearbyint(x); break;
    case Op::Trunc: r = std::trunc(x); break;
    // Bounded, not exact across backends (docs/semantics.md): the host's f32 libm is the oracle.
    case Op::Sin: r = std::sin(x); break;
    case Op::Cos: r = std::cos(x); break;
    case Op::Exp2: r = std::exp2(x); break;
    case Op::Log2: r = std::log2(x); break;
    case Op::Erf: r = std::erf(x); break;
    case Op::Pow: r = std::pow(x, y); break;
    default: return bad_type(error, op, t);
  }
  // f16 and bf16 arithmetic rounds to the dtype after every op (docs/semantics.md): the f32
  // result, correctly rounded, rounded once more to nearest even, which for + - * / sqrt equals
  // the 16-bit operation itself (24 >= 2p + 2). neg, abs, min, max, floor, ceil, rint and trunc
  // of a 16-bit value are 16-bit values already: the rounding changes nothing there.
  if (is_16bit_float(t)) r = num::round_to(t, r);
  out = Scalar::of_f32(r);
  return true;
}

bool eval_int(ir::Op op, DType t, const Scalar* a, Scalar& out, std::string& error) {
  using ir::Op;
  const bool is_signed = is_signed_integer(t);
  const uint64_t width = int_bits(t);
  const uint64_t x = a[0].u64();
  const uint64_t y = ir::op_info(op).arity >= 2 ? a[1].u64() : 0;
  const int64_t sx = int64_t(x), sy = int64_t(y);
  uint64_t r;
  switch (op) {
    case Op::Add: r = x + y; break;
    case Op::Sub: r = x - y; break;
    case Op::Mul: r = x * y; break;
    case Op::Div:
    case Op::Rem:
      // Defined on every input (docs/semantics.md): x / 0 = x, x % 0 = 0, MIN / -1 = MIN (the
      // wrapped quotient), MIN % -1 = 0; otherwise C truncation toward zero. The canonical
      // registers are the values themselves, so 64-bit division gives every width's quotient.
      if (y == 0) {
        r = op == Op::Div ? x : 0u;
      } else if (is_signed && sy == -1) {
        r = op == Op::Div ? 0u - x : 0u;
      } else if (is_signed) {
        r = uint64_t(op == Op::Div ? sx / sy : sx % sy);
      } else {
        r = op == Op::Div ? x / y : x % y;
      }
      break;
    case Op::Min: r = is_signed ? uint64_t(sx < sy ? sx : sy) : (x < y ? x : y); break;
    case Op::Max: r = is_signed ? uint64_t(sx > sy ? sx : sy) : (x > y ? x : y); break;
    case Op::Neg: r = 0u - x; break;
    // The high 32 bits of the exact 64-bit product (signed for i32, unsigned for u32); these
    // three are defined on i32 and u32 only (the verifier), read through the 32-bit views.
    case Op::MulHi:
      if (width != 32) return bad_type(error, op, t);
      r = is_signed ? uint64_t(int64_t(a[0].i()) * int64_t(a[1].i())) >> 32 : (uint64_t(a[0].u()) * a[1].u()) >> 32;
      break;
    case Op::Popcount:
      if (width != 32) return bad_type(error, op, t);
      r = uint64_t(__builtin_popcount(a[0].u()));
      break;
    case Op::Clz:  // clz(0) = 32
      if (width != 32) return bad_type(error, op, t);
      r = a[0].u() == 0 ? 32u : uint64_t(__builtin_clz(a[0].u()));
      break;
    case Op::Abs: r = is_signed && sx < 0 ? 0u - x : x; break;  // abs(MIN) wraps to MIN
    case Op::And: r = x & y; break;
    case Op::Or: r = x | y; break;
    case Op::Xor: r = x ^ y; break;
    case Op::Not: r = ~x; break;
    case Op::Shl:
    case Op::Shr:
      // The amount is read as unsigned (a negative amount is a huge shift). Amounts >= the
      // width shift every bit out: 0, or the sign fill for an arithmetic (signed) right shift.
      if (op == Op::Shl) r = y >= width ? 0u : x << y;
      else if (is_signed) r = uint64_t(sx >> (y >= width ? 63u : y));  // arithmetic (C++20), canonical
      else r = y >= width ? 0u : x >> y;
      break;
    default: return bad_type(error, op, t);
  }
  out.bits = num::int_wrap(t, r);
  return true;
}

bool eval_bool(ir::Op op, const Scalar* a, Scalar& out, std::string& error) {
  using ir::Op;
  bool x = a[0].b();
  bool y = ir::op_info(op).arity >= 2 ? a[1].b() : false;
  switch (op) {
    case Op::And: out = Scalar::of_bool(x && y); return true;
    case Op::Or: out = Scalar::of_bool(x || y); return true;
    case Op::Xor: out = Scalar::of_bool(x != y); return true;
    case Op::Not: out = Scalar::of_bool(!x); return true;
    default: return bad_type(error, op, DType::Bool);
  }
}

bool eval_compare(ir::Op op, DType t, const Scalar* a, Scalar& out, std::string& error) {
  using ir::Op;
  int c;  // -1, 0, 1; 2 when unordered (a NaN operand)
  switch (kind_of(t)) {
    case Kind::Float: {
      float x = a[0].f(), y = a[1].f();
      c = x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
      break;
    }
    case Kind::Int:
      if (is_signed_integer(t)) c = a[0].i64() < a[1].i64() ? -1 : a[0].i64() > a[1].i64() ? 1 : 0;
      else c = a[0].u64() < a[1].u64() ? -1 : a[0].u64() > a[1].u64() ? 1 : 0;
      break;
    case Kind::Bool:  // only eq and ne compare bools (the verifier rejects the ordering ones)
      if (op != Op::Eq && op != Op::Ne) return bad_type(error, op, t);
      c = a[0].b() == a[1].b() ? 0 : 1;
      break;
    default: return bad_type(error, op, t);
  }
  bool r;
  switch (op) {
    case Op::Eq: r = c == 0; break;
    case Op::Ne: r = c != 0; break;  // unordered: != is true
    case Op::Lt: r = c == -1; break;
    case Op::Le: r = c == -1 || c == 0; break;
    case Op::Gt: r = c == 1; break;
    case Op::Ge: r = c == 1 || c == 0; break;
    default: return bad_type(error, op, t);
  }
  out = Scalar::of_bool(r);
  return true;
}

}  // namespace

Scalar const_value(const ir::Inst& in, Instantiation concrete) {
  const DType t = ir::resolve(in.type.elem(), concrete);
  // Integers: the canonical register of the written width (u64 keeps its bits in Value).
  if (is_integer(t)) return Scalar{num::int_wrap(t, uint64_t(in.attr(ir::Attr::Value)))};
  if (t == DType::Bool) return Scalar::of_bool(in.attr(ir::Attr::Value) != 0);
  // A float constant is a value of its dtype: the attribute rounded to f32, then (f16, bf16)
  // to the dtype, both to nearest even (docs/semantics.md).
  const float f = float(in.fattr(ir::Attr::Value));
  return Scalar::of_f32(is_16bit_float(t) ? num::round_to(t, f) : f);
}

bool is_pure_evaluable(ir::Op op) {
  using ir::Op;
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::Min: case Op::Max:
    case Op::Neg: case Op::Abs: case Op::Fma: case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Rsqrt:
    case Op::Tanh: case Op::Floor: case Op::Ceil: case Op::Rint: case Op::Trunc: case Op::Sin: case Op::Cos:
    case Op::Exp2: case Op::Log2: case Op::Erf: case Op::Pow: case Op::MulHi: case Op::Popcount: case Op::Clz:
    case Op::Bitcast: case Op::And: case Op::Or: case Op::Xor: case Op::Not: case Op::Shl: case Op::Shr:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Select:
    case Op::Cast:
      return true;
    default:
      return false;
  }
}

bool eval_pure(ir::Op op, DType result_type, DType operand_type, const Scalar* args, int n, Scalar& out,
               std::string& error) {
  using ir::Op;
  if (!is_pure_evaluable(op)) return fail(error, std::string(ir::mnemonic(op)) + " is not a pure evaluable op");
  if (n != ir::op_info(op).arity)
    return fail(error, std::string(ir::mnemonic(op)) + " takes " + std::to_string(ir::op_info(op).arity) +
                           " operand(s), got " + std::to_string(n));
  switch (op) {
    case Op::Select:
      out = args[0].b() ? args[1] : args[2];
      return true;
    case Op::Cast:
      return eval_cast(result_type, operand_type, args[0], out, error);
    case Op::Bitcast:
      // The operand's bits (a 16-bit float narrowed to its dtype, as a store does), read as the result dtype
      // in its canonical register: 32, 16 or 64 bits (num::bitcast_register).
      if (num::bitcast_width(result_type) == 0 || num::bitcast_width(result_type) != num::bitcast_width(operand_type))
        return fail(error, std::string("bitcast of ") + dtype_name(operand_type) + " to " + dtype_name(result_type));
      out = Scalar{num::bitcast_register(operand_type, result_type, args[0].bits)};
      return true;
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return eval_compare(op, operand_type, args, out, error);
    default:
      break;
  }
  switch (kind_of(result_type)) {
    case Kind::Float:
      // fp8 is storage only: the verifier admits no arithmetic on it (cast to f32 first).
      if (is_fp8(result_type)) return bad_type(error, op, result_type);
      return eval_float(op, result_type, args, out, error);
    case Kind::Int: return eval_int(op, result_type, args, out, error);
    case Kind::Bool: return eval_bool(op, args, out, error);
    default: return bad_type(error, op, result_type);
  }
}

bool eval_pair(ir::Op op, DType elem, int64_t index, const Scalar* args, int n, Scalar& out, std::string& error) {
  using ir::Op;
  if (elem != DType::F16 && elem != DType::BF16) return bad_type(error, op, elem);
  auto widen = [&](uint32_t h) {
    return elem == DType::F16 ? num::f16_to_f32(uint16_t(h)) : num::bf16_to_f32(uint16_t(h));
  };
  auto narrow = [&](float f) -> uint32_t { return elem == DType::F16 ? num::f32_to_f16(f) : num::f32_to_bf16(f); };
  if (op == Op::Pair) {
    if (n != 2) return fail(error, "pair takes 2 operands");
    out.bits = narrow(args[0].f()) | uint64_t(narrow(args[1].f())) << 16;
    return true;
  }
  if (op == Op::PairGet) {
    if (n != 1 || (index != 0 && index != 1)) return fail(error, "pair_get takes a pair and index 0 or 1");
    out = Scalar::of_f32(widen(uint32_t(args[0].bits >> (16 * index)) & 0xffffu));
    return true;
  }
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Fma: case Op::Min: case Op::Max: case Op::Neg: case Op::Abs:
      break;
    default:
      return bad_type(error, op, elem);
  }
  if (n != ir::op_info(op).arity) return fail(error, std::string(ir::mnemonic(op)) + ": wrong operand count");
  uint64_t r = 0;
  for (int lane = 0; lane < 2; ++lane) {
    Scalar e[3], v;
    for (int i = 0; i < n; ++i) e[i] = Scalar::of_f32(widen(uint32_t(args[i].bits >> (16 * lane)) & 0xffffu));
    if (!eval_float(op, elem, e, v, error)) return false;
    r |= uint64_t(narrow(v.f())) << (16 * lane);
  }
  out.bits = r;
  return true;
}

bool is_bounded_math(ir::Op op) {
  using ir::Op;
  switch (op) {
    case Op::Exp: case Op::Log: case Op::Tanh: case Op::Rsqrt: case Op::Sin: case Op::Cos: case Op::Exp2:
    case Op::Log2: case Op::Erf: case Op::Pow:
      return true;
    default:
      return false;
  }
}

// NaN is tested explicitly: glibc's fmin / fmax return a NaN when the NaN operand is a
// signaling one (a loaded sNaN pattern), where the rule returns the other operand.
float fmin_ordered(float x, float y) {
  if (std::isnan(x)) return y;
  if (std::isnan(y)) return x;
  if (x == 0 && y == 0) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

float fmax_ordered(float x, float y) {
  if (std::isnan(x)) return y;
  if (std::isnan(y)) return x;
  if (x == 0 && y == 0) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

}  // namespace iron::eval
