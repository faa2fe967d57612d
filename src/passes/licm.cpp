// licm: hoists loop-invariant pure values out of loop bodies. A value in a for body whose
// operands are all defined outside the loop (and is not the induction variable) moves to just
// before the loop, keeping the relative order of everything hoisted. Inner loops are processed
// first, so invariants climb out of nests one level per pass run.
// Does not handle: loads (a loop that runs zero times must not read memory it never touched),
// integer division, remainder and shifts not by a constant below 32 (they may fault or be undefined when the
// loop would not have run), values inside ifs within the loop, lane operations (convergent).
// Mutation for tests: licm.hoist_loads hoists loads as well.
#include <set>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

bool hoistable(const ir::Kernel& k, const ir::Inst& in, const PassContext& ctx) {
  if (in.op == Op::Load && ctx.mutant("licm.hoist_loads")) return true;
  return safe_to_speculate(k, in);
}

struct Licm {
  ir::Kernel& k;
  PassContext& ctx;
  bool changed = false;

  // Each block is rebuilt once: hoisted values go into the new list just before their loop
  // (inserting into the block per loop was quadratic in a block with many loops).
  void block(Id b) {
    const std::vector<Id> list = k.blocks[b].insts;
    std::vector<Id> out;
    out.reserve(list.size());
    bool moved_any = false;
    for (Id id : list) {
      for (Id child : k.insts[id].blocks)
        if (child != ir::kNone) block(child);
      if (k.insts[id].op == Op::For) moved_any = hoist_from(id, out) || moved_any;
      out.push_back(id);
    }
    if (moved_any) k.blocks[b].insts = std::move(out);
  }

  // Appends the invariants of `loop` to `out` (removing them from its body); returns whether
  // any moved.
  bool hoist_from(Id loop, std::vector<Id>& out) {
    Id body = k.insts[loop].blocks[0];
    std::set<Id> inside;  // values defined in the loop, induction variable included
    inside.insert(loop);
    ir::walk(k, body, [&](Id id) { inside.insert(id); });
    std::vector<Id> moved, kept;
    for (Id id : k.blocks[body].insts) {
      const ir::Inst& in = k.insts[id];
      bool invariant = hoistable(k, in, ctx);
      for (int o = 0; invariant && o < in.num_operands(); ++o) invariant = !inside.count(in.operands[o]);
      if (invariant && ctx.allow_rewrite()) {
        moved.push_back(id);
        inside.erase(id);
        continue;
      }
      kept.push_back(id);
    }
    if (moved.empty()) return false;
    k.blocks[body].insts = std::move(kept);
    out.insert(out.end(), moved.begin(), moved.end());
    ctx.stat("licm.hoisted", int64_t(moved.size()));
    changed = true;
    return true;
  }
};

}  // namespace

bool run_licm(ir::Kernel& k, PassContext& ctx) {
  Licm l{k, ctx, false};
  l.block(0);
  return l.changed;
}

}  // namespace iron::passes
