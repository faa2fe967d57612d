// value_sink: moves a pure value whose every use lies inside one arm of a later if into that
// arm, so it is computed only on the path that needs it. Values sink in order, so a chain of
// values used only in one arm moves as a whole.
// Does not handle: sinking into loop bodies (it would be recomputed per iteration), loads (a
// store between the definition and the if could change the value read), values used in both
// arms or after the if, lane operations (convergent).
// Mutation for tests: value_sink.first_arm sinks a value used in both arms into the first.
#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;

namespace {

struct Sink {
  ir::Kernel& k;
  PassContext& ctx;
  bool changed = false;

  void block(Id b) {
    for (Id id : std::vector<Id>(k.blocks[b].insts))
      for (Id child : k.insts[id].blocks)
        if (child != ir::kNone) block(child);
    sink_in(b);
  }

  // For each value in block b (last first), the arm all of its uses are in, if there is one.
  void sink_in(Id b) {
    std::vector<Id> where = block_of(k);
    auto& list = k.blocks[b].insts;
    for (size_t i = list.size(); i-- > 0;) {
      Id id = list[i];
      const ir::Inst& in = k.insts[id];
      if (!is_pure_value(in)) continue;
      Id target = ir::kNone;
      bool ok = true, any = false;
      ir::walk(k, b, [&](Id user) {
        const ir::Inst& u = k.insts[user];
        for (int o = 0; o < u.num_operands; ++o) {
          if (u.operands[o] != id) continue;
          any = true;
          // The arm of an if directly in b that contains this use.
          Id ub = where[user], arm = ir::kNone;
          for (Id cur = ub; cur != ir::kNone && cur != b; cur = parent_block(k, where, cur)) arm = cur;
          if (arm == ir::kNone || k.insts[k.blocks[arm].parent].op != ir::Op::If) ok = false;
          else if (target == ir::kNone) target = arm;
          else if (target != arm && !ctx.mutant("value_sink.first_arm")) ok = false;
        }
      });
      if (!any || !ok || target == ir::kNone || !ctx.allow_rewrite()) continue;
      list.erase(list.begin() + long(i));
      auto& dst = k.blocks[target].insts;
      dst.insert(dst.begin(), id);
      where[id] = target;
      ctx.stat("value_sink.sunk");
      changed = true;
    }
  }
};

}  // namespace

bool run_value_sink(ir::Kernel& k, PassContext& ctx) {
  Sink s{k, ctx, false};
  s.block(0);
  return s.changed;
}

}  // namespace iron::passes
