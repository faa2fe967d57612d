// algebraic_simplify: identities that hold exactly in Iron's arithmetic — x+0, x-0, x*1, x/1,
// x|0, x^0, x<<0, x>>0 and x*0, x&0, x-x, x^x, x%1 on integers; x*1.0, x/1.0, x-0.0 and
// x+(-0.0) on floats (x+0.0 is not an identity: -0.0+0.0 is +0.0); true/false with and/or;
// not(not x), neg(neg x), select(c, a, a) and select on a constant condition. Divisibility
// (known_multiple_of: arithmetic, and scalars declared multiple_of(k)): x % m and x & (m-1) are 0
// and (x / m) * m is x when x is a multiple of the power of two m.
// Results are bit-exact. The replaced op is left for dead_store_elim.
// Does not handle: reassociation or distribution (they change float rounding), strength
// reduction of multiplies into shifts (the GPU compilers do it), comparisons of x with itself
// (false for NaN).
// Mutation for tests: algebraic_simplify.add_positive_zero also drops x + 0.0 (wrong for -0.0).
#include <cmath>
#include <cstring>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

struct Simplifier {
  ir::Kernel& k;
  PassContext& ctx;

  const ir::Inst* constant(Id v) const {
    const ir::Inst& in = k.insts[v];
    return in.op == Op::Const ? &in : nullptr;
  }
  bool is_int_const(Id v, int64_t x) const {
    const ir::Inst* c = constant(v);
    return c && is_integer(c->type) && c->attr(ir::Attr::Value) == x;
  }
  bool is_float_const(Id v, double x) const {
    const ir::Inst* c = constant(v);
    if (!c || !is_float(c->type)) return false;
    float f = float(c->fattr(ir::Attr::Value)), want = float(x);
    return std::memcmp(&f, &want, sizeof f) == 0;  // bitwise: distinguishes -0.0 from +0.0
  }
  bool is_bool_const(Id v, bool x) const {
    const ir::Inst* c = constant(v);
    return c && c->type == DType::Bool && (c->attr(ir::Attr::Value) != 0) == x;
  }

  // The value of a constant that is a power of two (2^0 .. 2^62) of an integer type, else 0.
  int64_t pow2_const(Id v) const {
    const ir::Inst* c = constant(v);
    if (!c || !is_integer(c->type)) return 0;
    const int64_t x = c->attr(ir::Attr::Value);
    return x > 0 && x <= (int64_t(1) << 62) && (x & (x - 1)) == 0 ? x : 0;
  }
  // x & mask with mask = m - 1 (m a power of two) and x a known multiple of m.
  bool low_mask_of_multiple(Id x, Id mask) const {
    const ir::Inst* c = constant(mask);
    if (!c || !is_integer(c->type)) return false;
    const int64_t v = c->attr(ir::Attr::Value);
    return v > 0 && v < (int64_t(1) << 62) && ((v + 1) & v) == 0 && known_multiple_of(k, x, v + 1);
  }
  // For q * m with q = x / m (m a power of two constant, the same one) and x a known multiple
  // of m: x, exactly (the division has no remainder); else kNone.
  Id exact_quotient(Id q, Id m) const {
    const int64_t mv = pow2_const(m);
    const ir::Inst& d = k.insts[q];
    if (mv < 2 || d.op != Op::Div || d.type != k.insts[m].type) return ir::kNone;
    const int64_t dv = pow2_const(d.operands[1]);
    if (dv != mv || !known_multiple_of(k, d.operands[0], mv)) return ir::kNone;
    return d.operands[0];
  }

  // The value an instruction reduces to, or kNone. `zero_of` requests a fresh constant.
  Id simplify(Id id, Id& make_zero_of) {
    const ir::Inst& in = k.insts[id];
    Id a = in.num_operands() > 0 ? in.operands[0] : ir::kNone;
    Id b = in.num_operands() > 1 ? in.operands[1] : ir::kNone;
    bool integer = is_integer(in.type), fl = ir::float_everywhere(k, in.type.elem());
    switch (in.op) {
      case Op::Add:
        if (integer && is_int_const(b, 0)) return a;
        if (integer && is_int_const(a, 0)) return b;
        if (fl && is_float_const(b, -0.0)) return a;
        if (fl && ctx.mutant("algebraic_simplify.add_positive_zero") && is_float_const(b, 0.0)) return a;
        if (fl && is_float_const(a, -0.0)) return b;
        break;
      case Op::Sub:
        if (integer && is_int_const(b, 0)) return a;
        if (fl && is_float_const(b, 0.0)) return a;
        if (integer && a == b) return make_zero_of = id, ir::kNone;
        break;
      case Op::Mul:
        if (integer && exact_quotient(a, b) != ir::kNone) return exact_quotient(a, b);  // (d / 8) * 8
        if (integer && exact_quotient(b, a) != ir::kNone) return exact_quotient(b, a);
        if (integer && is_int_const(b, 1)) return a;
        if (integer && is_int_const(a, 1)) return b;
        if (fl && is_float_const(b, 1.0)) return a;
        if (fl && is_float_const(a, 1.0)) return b;
        if (integer && (is_int_const(a, 0) || is_int_const(b, 0))) return make_zero_of = id, ir::kNone;
        break;
      case Op::Div:
        if (integer && is_int_const(b, 1)) return a;
        if (fl && is_float_const(b, 1.0)) return a;
        break;
      case Op::Rem:
        if (integer && is_int_const(b, 1)) return make_zero_of = id, ir::kNone;
        // d % 8 when d is a multiple of 8 (arithmetic, or a declared multiple_of fact).
        if (integer && pow2_const(b) > 1 && known_multiple_of(k, a, pow2_const(b))) return make_zero_of = id, ir::kNone;
        break;
      case Op::And:
        if (in.type == DType::Bool) {
          if (is_bool_const(b, true)) return a;
          if (is_bool_const(a, true)) return b;
          if (is_bool_const(b, false)) return b;
          if (is_bool_const(a, false)) return a;
        } else if (is_int_const(a, 0) || is_int_const(b, 0)) {
          return make_zero_of = id, ir::kNone;
        } else if (low_mask_of_multiple(a, b) || low_mask_of_multiple(b, a)) {
          return make_zero_of = id, ir::kNone;  // d & 7 when d is a multiple of 8
        }
        if (a == b) return a;
        break;
      case Op::Or:
        if (in.type == DType::Bool) {
          if (is_bool_const(b, false)) return a;
          if (is_bool_const(a, false)) return b;
          if (is_bool_const(b, true)) return b;
          if (is_bool_const(a, true)) return a;
        } else {
          if (is_int_const(b, 0)) return a;
          if (is_int_const(a, 0)) return b;
        }
        if (a == b) return a;
        break;
      case Op::Xor:
        if (integer && is_int_const(b, 0)) return a;
        if (integer && is_int_const(a, 0)) return b;
        if (in.type == DType::Bool && is_bool_const(b, false)) return a;
        if (in.type == DType::Bool && is_bool_const(a, false)) return b;
        if (integer && a == b) return make_zero_of = id, ir::kNone;
        break;
      case Op::Shl: case Op::Shr:
        if (is_int_const(b, 0)) return a;
        break;
      case Op::Not: case Op::Neg: {
        const ir::Inst& inner = k.insts[a];
        if (inner.op == in.op && inner.type == in.type) return inner.operands[0];
        break;
      }
      case Op::Select:
        if (in.operands[1] == in.operands[2]) return in.operands[1];
        if (is_bool_const(a, true)) return in.operands[1];
        if (is_bool_const(a, false)) return in.operands[2];
        break;
      default: break;
    }
    return ir::kNone;
  }

  bool run() {
    bool changed = false;
    std::vector<Id> ids;
    ir::walk(k, [&](Id id) { ids.push_back(id); });
    std::vector<Id> where = block_of(k);
    std::vector<Id> repl(k.insts.size(), ir::kNone);  // see map_operands
    for (Id id : ids) {
      map_operands(k.insts[id], repl);
      if (!is_pure_value(k.insts[id])) continue;
      Id zero_of = ir::kNone;
      Id to = simplify(id, zero_of);
      if (to == ir::kNone && zero_of == ir::kNone) continue;
      if (!ctx.allow_rewrite()) continue;
      if (zero_of != ir::kNone) {
        // Replace the op in place by the constant 0 of its dtype.
        ir::Inst& in = k.insts[id];
        DType t = in.type.elem();
        ir::SrcLoc loc = in.loc;
        in = ir::Inst{};
        in.op = Op::Const;
        in.type = t;
        in.set(ir::Attr::Value, 0);
        in.set_float(ir::Attr::Value, 0.0);
        in.loc = loc;
        ctx.stat("algebraic_simplify.to_zero");
      } else {
        repl[id] = to;
        ctx.stat("algebraic_simplify.identity");
      }
      changed = true;
    }
    return changed;
  }
};

}  // namespace

bool run_algebraic_simplify(ir::Kernel& k, PassContext& ctx) { return Simplifier{k, ctx}.run(); }

}  // namespace iron::passes
