// const_fold: evaluates pure ops whose operands are all constants, using the same scalar
// semantics as the interpreter (passes/eval.hpp), so folding is bit-exact with execution. An if
// on a constant condition is replaced by the arm that runs (its instructions move into the
// enclosing block). Folded ops are rewritten in place into constants; their now-unused
// operands are left for dead_store_elim.
// Every pure op has a defined result (docs/semantics.md), so division by zero or a shift by 32
// folds to the value every backend computes. Does not handle: casts to the generic T (the
// rounding depends on the dtype chosen at emission) except of an integer or bool constant 0,
// which is 0 (+0.0) in every dtype, ops on T (or W) when it may be a dtype other than f32 (an
// integer, or a 16-bit float whose ops round to it), transcendentals
// (exp, log, tanh, rsqrt, sin, cos, exp2, log2, erf, pow:
// their results are bounded, not bit-exact, across backends, so a fold would change a value
// with the optimization level), loops (unroll does those).
// Launch facts: with the threadgroup size known (PassContext::launch), group_size(axis) folds
// to that axis's size, so loops strided by it get constant trip counts for unroll.
// Specialization: a scalar parameter with a value in PassContext::specialize folds to that
// constant (statistic const_fold.specialized) before its uses are visited, so everything
// computed from it folds in the same walk.
// Mutations for tests: const_fold.sub_reversed folds a - b as b - a; const_fold.group_size_x
// folds group_size of every axis to the x size.
#include <cstring>

#include "core/numeric.hpp"
#include "passes/eval.hpp"
#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

// A cast of an integer or bool constant 0 to T: 0 whatever dtype T becomes (+0.0 for floats).
bool fold_zero_to_generic(ir::Kernel& k, Id id, PassContext& ctx) {
  ir::Inst& in = k.insts[id];
  if (in.op != Op::Cast || in.type != DType::Generic) return false;
  const ir::Inst& o = k.insts[in.operands[0]];
  if (o.op != Op::Const || o.type == DType::Generic || is_float(o.type) || o.attr(ir::Attr::Value) != 0) return false;
  if (!ctx.allow_rewrite()) return false;
  ir::SrcLoc loc = in.loc;
  uint8_t flags = in.flags;
  in = ir::Inst{};
  in.op = Op::Const;
  in.type = DType::Generic;
  in.loc = loc;
  in.flags = flags;
  in.set(ir::Attr::Value, 0);
  in.set_float(ir::Attr::Value, 0.0);
  ctx.stat("const_fold.folded");
  return true;
}

// group_size(axis) -> the launch's threadgroup size along that axis, where it is known.
bool fold_group_size(ir::Kernel& k, Id id, PassContext& ctx) {
  ir::Inst& in = k.insts[id];
  if (in.op != Op::GroupSize || !ctx.launch.known()) return false;
  int64_t axis = in.attr(ir::Attr::Axis);
  if (axis < 0 || axis > 2) return false;
  if (ctx.mutant("const_fold.group_size_x")) axis = 0;
  const uint32_t size = ctx.launch.threadgroup[axis];
  if (size == 0 || !ctx.allow_rewrite()) return false;
  const auto t = in.type;
  ir::SrcLoc loc = in.loc;
  uint8_t flags = in.flags;
  in = ir::Inst{};
  in.op = Op::Const;
  in.type = t;
  in.loc = loc;
  in.flags = flags;
  in.set(ir::Attr::Value, int64_t(size));
  ctx.stat("const_fold.group_size");
  return true;
}

// param<p> -> its specialized value (PassContext::specialize), from the launch bits: an f32
// from the low 4 bytes, an integer as its dtype's canonical register (i32 sign-extends).
bool fold_specialized(ir::Kernel& k, Id id, PassContext& ctx) {
  ir::Inst& in = k.insts[id];
  uint64_t bits = 0;
  if (in.op != Op::Param || ctx.specialize.empty() || !ctx.specialize.find(in.param(), bits)) return false;
  const DType t = in.type.elem();
  if (t != DType::F32 && !is_integer(t)) return false;
  if (!ctx.allow_rewrite()) return false;
  ir::SrcLoc loc = in.loc;
  uint8_t flags = in.flags;
  in = ir::Inst{};
  in.op = Op::Const;
  in.type = t;
  in.loc = loc;
  in.flags = flags;
  if (t == DType::F32) {
    float f;
    const uint32_t lo = uint32_t(bits);
    std::memcpy(&f, &lo, 4);
    in.set_float(ir::Attr::Value, f);
  } else {
    in.set(ir::Attr::Value, int64_t(num::int_wrap(t, bits)));
  }
  ctx.stat("const_fold.specialized");
  return true;
}

bool fold_value(ir::Kernel& k, Id id, PassContext& ctx) {
  ir::Inst& in = k.insts[id];
  if (fold_specialized(k, id, ctx)) return true;
  if (fold_group_size(k, id, ctx)) return true;
  if (fold_zero_to_generic(k, id, ctx)) return true;
  if (!is_pure_value(in) || in.op == Op::Const || !eval::is_pure_evaluable(in.op)) return false;
  if (eval::is_bounded_math(in.op)) return false;
  // T and W fold as f32, which is only their meaning when every dtype they may take is f32:
  // at f16 or bf16 every op rounds to that dtype (an integer dtype is another meaning again).
  auto param_not_float = [&](DType d) {
    if (!is_type_param(d)) return false;
    for (DType c : d == DType::Generic ? k.dtypes : k.wtypes)
      if (c != DType::F32) return true;
    return false;
  };
  if (param_not_float(in.type.elem())) return false;
  for (int i = 0; i < in.num_operands(); ++i)
    if (param_not_float(k.insts[in.operands[i]].type.elem())) return false;
  eval::Scalar args[3];
  for (int i = 0; i < in.num_operands(); ++i) {
    const ir::Inst& o = k.insts[in.operands[i]];
    if (o.op != Op::Const) return false;
    args[i] = eval::const_value(o, DType::F32);
  }
  DType operand_type = k.insts[in.operands[in.op == Op::Select ? 1 : 0]].type.elem();
  if (ctx.mutant("const_fold.sub_reversed") && in.op == Op::Sub) std::swap(args[0], args[1]);
  eval::Scalar out;
  std::string error;
  if (!eval::eval_pure(in.op, in.type.elem(), operand_type, args, in.num_operands(), out, error)) return false;
  if (!ctx.allow_rewrite()) return false;
  DType t = in.type.elem();
  ir::SrcLoc loc = in.loc;
  uint8_t flags = in.flags;
  in = ir::Inst{};
  in.op = Op::Const;
  in.type = t;
  in.loc = loc;
  in.flags = flags;
  if (is_float(t)) in.set_float(ir::Attr::Value, out.f());
  else if (is_integer(t)) in.set(ir::Attr::Value, int64_t(out.bits));  // the canonical register; u64 keeps its bits
  else in.set(ir::Attr::Value, out.b() ? 1 : 0);
  ctx.stat("const_fold.folded");
  return true;
}

// Splices the taken arm of constant-condition ifs into their blocks.
bool fold_branches(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  // Each block is rebuilt once (splicing per if was quadratic in a long block); the spliced
  // instructions are not revisited in this run.
  bool budget = true;
  for (Id b : reachable_blocks(k)) {
    const std::vector<Id> list = k.blocks[b].insts;
    std::vector<Id> out;
    bool rebuilt = false;
    for (Id id : list) {
      const ir::Inst& in = k.insts[id];
      if (!budget || in.op != Op::If || k.insts[in.operands[0]].op != Op::Const) {
        out.push_back(id);
        continue;
      }
      if (!ctx.allow_rewrite()) {
        budget = false;
        out.push_back(id);
        continue;
      }
      Id arm = k.insts[in.operands[0]].attr(ir::Attr::Value) ? in.blocks[0] : in.blocks[1];
      if (arm != ir::kNone) out.insert(out.end(), k.blocks[arm].insts.begin(), k.blocks[arm].insts.end());
      ctx.stat("const_fold.branches");
      changed = rebuilt = true;
    }
    if (rebuilt) k.blocks[b].insts = std::move(out);
    if (!budget) break;
  }
  return changed;
}

}  // namespace

bool run_const_fold(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  std::vector<Id> ids;
  ir::walk(k, [&](Id id) { ids.push_back(id); });
  for (Id id : ids) changed |= fold_value(k, id, ctx);  // walk order: operands fold first
  changed |= fold_branches(k, ctx);
  return changed;
}

}  // namespace iron::passes
