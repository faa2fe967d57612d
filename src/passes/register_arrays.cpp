// register_arrays: makes every index of a register array (local_alloc) a constant, so the
// array lives in registers. Runs after unroll: an index computed from a loop's induction
// variable is a tree of pure ops over constants once the loop is unrolled, and is folded here
// with the interpreter's semantics (passes/eval.hpp). An index that does not fold is a located
// error ("not constant after unrolling"), never left for the target compiler to spill to local
// memory. The folded index is a new constant placed just before the access; the old index
// chain is left for dead_store_elim.
// Does not handle: transcendental ops, casts to the generic T and values of T (an index that
// needs them is reported as not constant).
// A constant index outside the array is a located error too.
// Mutations for tests: register_arrays.keep_dynamic accepts a non-constant index silently;
// register_arrays.skip_bounds accepts an index outside the array.
#include <algorithm>
#include <unordered_map>

#include "passes/eval.hpp"
#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

constexpr int kMaxDepth = 64;  // deeper index expressions are reported as not constant

struct Folder {
  const ir::Kernel& k;
  std::unordered_map<Id, eval::Scalar> known;

  bool value(Id id, eval::Scalar& out, int depth) {
    if (auto it = known.find(id); it != known.end()) {
      out = it->second;
      return true;
    }
    const ir::Inst& in = k.insts[id];
    if (depth > kMaxDepth || in.type.elem() == DType::Generic) return false;
    if (in.op == Op::Const) {
      out = eval::const_value(in, DType::F32);
    } else {
      if (!is_pure_value(in) || !eval::is_pure_evaluable(in.op) || in.num_operands() > 3) return false;
      if (in.op == Op::Exp || in.op == Op::Log || in.op == Op::Tanh || in.op == Op::Rsqrt) return false;
      eval::Scalar args[3];
      for (int i = 0; i < in.num_operands(); ++i)
        if (!value(in.operands[i], args[i], depth + 1)) return false;
      const DType operand_type = k.insts[in.operands[in.op == Op::Select ? 1 : 0]].type.elem();
      if (operand_type == DType::Generic) return false;
      std::string error;
      if (!eval::eval_pure(in.op, in.type.elem(), operand_type, args, in.num_operands(), out, error)) return false;
    }
    known.emplace(id, out);
    return true;
  }
};

}  // namespace

bool run_register_arrays(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  Folder folder{k, {}};
  // Collected first: placing constants rebuilds block lists, which a walk must not see.
  std::vector<std::pair<Id, Id>> accesses;  // (access, block)
  std::vector<Id> work{0};
  for (size_t w = 0; w < work.size(); ++w)
    for (Id id : k.blocks[work[w]].insts) {
      const ir::Inst& in = k.insts[id];
      if (in.op == Op::LocalLoad || in.op == Op::LocalStore) accesses.emplace_back(id, work[w]);
      for (Id b : in.blocks)
        if (b != ir::kNone) work.push_back(b);
    }
  // A constant index must lie in the array: an access past its end (a loop one iteration too
  // long) is a located error, never an out-of-bounds register access for the target to drop.
  auto in_bounds = [&](Id id, const ir::Inst& alloc, int64_t value) {
    const int64_t count = alloc.attr(ir::Attr::Count);
    if ((value >= 0 && value < count) || ctx.mutant("register_arrays.skip_bounds")) return true;
    ctx.diags.error(k.insts[id].loc, std::string("register array '") + k.strings[size_t(alloc.attr(ir::Attr::Name))] +
                                         "' of " + std::to_string(count) + " elements is indexed by " +
                                         std::to_string(value) + ", outside it");
    return false;
  };
  for (auto [id, b] : accesses) {
    const Id index = k.insts[id].operands[1];
    const ir::Inst& alloc = k.insts[k.insts[id].operands[0]];
    const DType t = k.insts[index].type.elem();
    if (k.insts[index].op == Op::Const) {
      const int64_t raw = k.insts[index].attr(ir::Attr::Value);
      in_bounds(id, alloc, t == DType::I32 ? int64_t(int32_t(raw)) : int64_t(uint32_t(raw)));
      continue;
    }
    eval::Scalar v;
    if (!folder.value(index, v, 0)) {
      if (ctx.mutant("register_arrays.keep_dynamic")) continue;
      ctx.diags.error(k.insts[id].loc, std::string("register array '") + k.strings[size_t(alloc.attr(ir::Attr::Name))] +
                                           "' is indexed by a value that is not constant after unrolling (only loops "
                                           "with constant bounds and at most 16 iterations unroll); a register array "
                                           "cannot be indexed at run time");
      continue;
    }
    const int64_t value = t == DType::I32 ? int64_t(v.i()) : int64_t(v.u());
    if (!in_bounds(id, alloc, value) || !ctx.allow_rewrite()) continue;
    const Id c = make_const(k, t, value, 0.0, k.insts[index].loc);
    k.insts[c].flags = ir::kFused;
    auto& list = k.blocks[b].insts;
    list.insert(std::find(list.begin(), list.end(), id), c);
    k.insts[id].operands[1] = c;
    ctx.stat("register_arrays.folded");
    changed = true;
  }
  return changed;
}

}  // namespace iron::passes
