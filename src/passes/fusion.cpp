// fusion: builds fused elementwise chains. A pure value with exactly one use, in the same
// block, is marked kFused: the emitter prints it inline inside its consumer, so a chain such as
// cast(mul(cast(load), scale)) becomes one expression instead of a register per step.
// Marking never changes what is computed: a fused value only reads SSA values, which cannot
// change between its definition and its single use.
// Does not handle: values used by a loop header (they would be re-evaluated per iteration),
// values used in a nested block (the use would move into a loop or branch), loads and variable
// reads (memory may change between definition and use), lane operations.
// Chains are capped at 16 nested values; the next value is a register again.
// Mutation for tests: fusion.fuse_loads fuses loads too.
#include <algorithm>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

bool run_fusion(ir::Kernel& k, PassContext& ctx) {
  std::vector<uint32_t> uses = use_counts(k);
  std::vector<Id> where = block_of(k);
  std::vector<Id> user(k.insts.size(), ir::kNone);
  ir::walk(k, [&](Id id) {
    const ir::Inst& in = k.insts[id];
    for (int i = 0; i < in.num_operands(); ++i) user[in.operands[i]] = id;
  });
  bool changed = false;
  int64_t fused = 0, roots = 0;
  // Nesting of each fused value's inline expression (0: not fused). Operands are decided before
  // their user in this walk. A chain deeper than kMaxChain starts a new register, so an
  // expression never nests without bound: the emitter builds it as a string (quadratic in its
  // depth) and a GPU compiler parses it recursively.
  constexpr uint32_t kMaxChain = 16;
  std::vector<uint32_t> chain(k.insts.size(), 0);
  ir::walk(k, [&](Id id) {
    ir::Inst& in = k.insts[id];
    uint32_t depth = 1;
    for (int i = 0; i < in.num_operands(); ++i)
      if (in.operands[i] < chain.size()) depth = std::max(depth, chain[in.operands[i]] + 1);
    bool can = (is_pure_value(in) || (in.op == Op::Load && ctx.mutant("fusion.fuse_loads"))) && uses[id] == 1 && user[id] != ir::kNone && where[user[id]] == where[id] &&
               k.insts[user[id]].op != Op::For && depth <= kMaxChain;
    if ((in.flags & ir::kFused) && depth > kMaxChain) {
      in.flags &= uint8_t(~ir::kFused);  // fused by an earlier run or in the input text: too deep
      changed = true;
    }
    if (can || (in.flags & ir::kFused)) chain[id] = depth;
    if (can && !(in.flags & ir::kFused) && ctx.allow_rewrite()) {
      in.flags |= ir::kFused;
      ++fused;
      changed = true;
    }
  });
  // A chain root is a non-fused consumer of at least one fused value.
  ir::walk(k, [&](Id id) {
    const ir::Inst& in = k.insts[id];
    if (in.flags & ir::kFused) return;
    for (int i = 0; i < in.num_operands(); ++i)
      if (k.insts[in.operands[i]].flags & ir::kFused) {
        ++roots;
        break;
      }
  });
  if (fused) ctx.stat("fusion.fused_ops", fused);
  if (roots) ctx.stat("fusion.chains", roots);
  return changed;
}

}  // namespace iron::passes
