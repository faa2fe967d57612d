// fma_fusion: rewrites add(mul(a, b), c) and add(c, mul(a, b)) on floats into fma(a, b, c)
// when the multiply has no other use: one instruction and one rounding instead of two. Runs
// after type_check (it relies on checked float dtypes) and after fusion; the multiply it
// consumed is left for dead_store_elim.
// Mutation for tests: fma_fusion.integers fuses integer multiply-adds (no fma on integers).
// Not bit-exact by design: the fused result is rounded once (differential tests compare it
// within tolerance). Does not handle: sub (a*b - c would need a negation), integer multiply-add.
#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

bool run_fma_fusion(ir::Kernel& k, PassContext& ctx) {
  std::vector<uint32_t> uses = use_counts(k);
  std::vector<Id> where = block_of(k);
  std::vector<Id> ids;
  ir::walk(k, [&](Id id) { ids.push_back(id); });
  bool changed = false;
  for (Id id : ids) {
    ir::Inst& in = k.insts[id];
    if (in.op != Op::Add || (!ir::float_everywhere(k, in.type.elem()) && !ctx.mutant("fma_fusion.integers"))) continue;
    for (int side = 0; side < 2; ++side) {
      Id m = in.operands[side];
      const ir::Inst& mul = k.insts[m];
      // Same block only: the multiply must not be computed under a different condition.
      if (mul.op != Op::Mul || mul.type != in.type || uses[m] != 1 || where[m] != where[id]) continue;
      if (!ctx.allow_rewrite()) break;
      Id addend = in.operands[1 - side];
      in.op = Op::Fma;
      in.operands.resize(3);
      in.operands[0] = mul.operands[0];
      in.operands[1] = mul.operands[1];
      in.operands[2] = addend;
      in.flags = 0;
      uses[m] = 0;
      ctx.stat("fma_fusion.fused");
      changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace iron::passes
