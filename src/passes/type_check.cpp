// type_check: infers the dtype of every value written as `: ?` in text IR (from its operands,
// its parameter or its variable), then checks every type rule of the verifier and reports
// violations as pipeline diagnostics with their DSL locations. Later passes (fma_fusion,
// const_fold) rely on checked dtypes: a kernel that fails here goes no further.
// Does not handle: inferring constants, casts, bitcasts and threadgroup allocations (their dtype is the
// point of writing them: it must be explicit), implicit conversions (Iron has none).
// Mutation for tests: type_check.skip_rules infers but never checks.
#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

// The dtype `in` must have given its operands, or Void when it cannot be inferred.
DType infer(const ir::Kernel& k, const ir::Inst& in) {
  auto operand = [&](int i) { return i < in.num_operands() ? k.insts[in.operands[i]].type.elem() : DType::Void; };
  switch (in.op) {
    case Op::Param: case Op::Load: return in.param() < k.params.size() ? k.params[in.param()].dtype : DType::Void;
    case Op::LaneBallot: return DType::U32;
    case Op::LaneAny: case Op::LaneAll: return DType::Bool;
    case Op::ThreadId: case Op::ProgramId: case Op::LocalId: case Op::GroupSize: case Op::NumPrograms:
    case Op::LaneId: case Op::LaneWidth: case Op::SimdGroupId: case Op::NumSimdGroups:
      return DType::U32;
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: return DType::Bool;
    case Op::Select: return operand(1) != DType::Void ? operand(1) : operand(2);
    case Op::Const: case Op::Cast: case Op::Bitcast: case Op::TgAlloc: case Op::LocalAlloc: case Op::Call: return DType::Void;
    case Op::AtomicAddPair: return DType::Void;  // defines no value
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Min: case Op::Max: case Op::Fma:
    case Op::And: case Op::Or: case Op::Xor: case Op::Pow: case Op::MulHi:
      for (int i = 0; i < in.num_operands(); ++i)
        if (operand(i) != DType::Void) return operand(i);
      return DType::Void;
    default:
      if (ir::is_global_atomic(in.op)) return in.param() < k.params.size() ? k.params[in.param()].dtype : DType::Void;
      return operand(0);  // unary math, shifts, var ops, tg loads and atomics, lane ops, for
  }
}

}  // namespace

bool run_type_check(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  std::vector<Id> ids;
  ir::walk(k, [&](Id id) { ids.push_back(id); });
  for (Id id : ids) {
    ir::Inst& in = k.insts[id];
    if (!(in.flags & ir::kUntyped)) continue;
    DType t = infer(k, in);
    if (t == DType::Void) {
      ctx.diags.error(in.loc, std::string("cannot infer the dtype of '") + ir::mnemonic(in.op) +
                                  "': write it explicitly");
      continue;
    }
    in.type = t;
    in.flags &= uint8_t(~ir::kUntyped);
    ctx.stat("type_check.inferred");
    changed = true;
  }
  if (ctx.diags.empty() && !ctx.mutant("type_check.skip_rules")) {
    ir::Diagnostics v;
    if (!ir::verify(k, v))
      for (const ir::Diagnostic& d : v.items) ctx.diags.error(d.loc, d.message);
  }
  ctx.stat("type_check.checked", int64_t(ids.size()));
  return changed;
}

}  // namespace iron::passes
