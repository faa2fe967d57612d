// dead_store_elim: removes what no result depends on, to a fixed point: unused pure values and
// unused memory reads, stores to variables that are never read, variables with no reads, stores
// to threadgroup and register arrays that are never read (and then the arrays), ifs whose arms are empty,
// and loops whose body is empty — header and all, so no `for (...) { }` survives (seeds §8).
// Runs last: every earlier pass may leave dead values behind. A vector group losing a lane is
// dissolved back into scalar accesses.
// Does not handle: stores to global buffers (always observable), barriers (kept even when no
// threadgroup memory remains: removing one is a scheduling decision, not dead code), a variable
// stored in a loop and read only by that store's own value chain (kept).
// Mutation for tests: dead_store_elim.drop_var_stores removes stores to variables that are read.
#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

bool run_dead_store_elim(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  while (true) {
    std::vector<uint32_t> uses = use_counts(k);
    std::vector<uint8_t> var_read(k.insts.size(), 0), tg_read(k.insts.size(), 0);
    ir::walk(k, [&](Id id) {
      const ir::Inst& in = k.insts[id];
      if (in.op == Op::VarLoad) var_read[in.operands[0]] = 1;
      // A tile load from threadgroup memory reads its allocation as a scalar load does, and so
      // does a bulk store (the copy engine reads the array it stores to a buffer).
      if (in.op == Op::TgLoad || in.op == Op::TileTgLoad || in.op == Op::TileScaleAdd || in.op == Op::LocalLoad || in.op == Op::BulkStore ||
          in.op == Op::TmaStore2D || ir::is_tg_atomic(in.op))
        tg_read[in.operands[0]] = 1;
      if (in.op == Op::TileWgMma) tg_read[in.operands[0]] = tg_read[in.operands[2]] = 1;  // both operands' arrays
      if (in.op == Op::TileWgMmaRs) tg_read[in.operands[1]] = 1;                         // B's array
    });
    // An allocation a threadgroup alias views lives while the alias does (the alias has no memory
    // of its own).
    for (Id a : ir::threadgroup_aliases(k))
      if (Id base = ir::tg_alias_base(k, k.insts[a]); base != ir::kNone && uses[a] > 0) ++uses[base];
    std::vector<uint8_t> drop(k.insts.size(), 0);
    size_t found = 0;
    std::vector<Id> dropped;
    // What dies once nothing uses it; a dropped instruction releases its operands, which are
    // dropped in the same round when this makes them dead (a dead chain goes in one round, not
    // one round per link).
    auto dead_by_uses = [&](const ir::Inst& in, Id id) {
      switch (in.op) {
        case Op::Load: case Op::VarLoad: case Op::TgLoad: case Op::LocalLoad: case Op::LaneSum: case Op::LaneMax:
          return uses[id] == 0;
        case Op::Var: return !var_read[id] && uses[id] == 0;
        case Op::TgAlloc: case Op::LocalAlloc: return uses[id] == 0;
        case Op::VarStore: case Op::TgStore: case Op::LocalStore: case Op::If: case Op::For: return false;
        default:
          // An unused lane op (a shuffle, scan or vote) computes nothing: all lanes drop it alike.
          if (ir::has_trait(in.op, ir::trait::L) && in.type != DType::Void && !ir::has_trait(in.op, ir::trait::P))
            return uses[id] == 0;
          return is_pure_value(in) && uses[id] == 0;
      }
    };
    ir::walk(k, [&](Id id) {
      const ir::Inst& in = k.insts[id];
      bool dead = false;
      switch (in.op) {
        case Op::Load: case Op::VarLoad: case Op::TgLoad: case Op::LocalLoad: case Op::LaneSum: case Op::LaneMax:
          dead = uses[id] == 0;
          break;
        case Op::VarStore: dead = !var_read[in.operands[0]] || ctx.mutant("dead_store_elim.drop_var_stores"); break;
        case Op::Var: dead = !var_read[id] && uses[id] == 0; break;
        case Op::TgStore: case Op::LocalStore: dead = !tg_read[in.operands[0]]; break;
        case Op::TgAlloc: case Op::LocalAlloc: dead = uses[id] == 0; break;
        case Op::If:
          dead = k.blocks[in.blocks[0]].insts.empty() &&
                 (in.blocks[1] == ir::kNone || k.blocks[in.blocks[1]].insts.empty());
          break;
        case Op::For: dead = k.blocks[in.blocks[0]].insts.empty(); break;
        default:
          dead = ((ir::has_trait(in.op, ir::trait::L) && in.type != DType::Void && !ir::has_trait(in.op, ir::trait::P)) ||
                  is_pure_value(in)) &&
                 uses[id] == 0;
          break;
      }
      if (dead && ctx.allow_rewrite()) {
        drop[id] = 1;
        dropped.push_back(id);
        ++found;
      }
    });
    for (size_t i = 0; i < dropped.size(); ++i) {
      const ir::Inst& in = k.insts[dropped[i]];
      for (int o = 0; o < in.num_operands(); ++o) {
        Id v = in.operands[o];
        if (v >= uses.size() || uses[v] == 0 || --uses[v] != 0 || drop[v]) continue;
        if (dead_by_uses(k.insts[v], v) && ctx.allow_rewrite()) {
          drop[v] = 1;
          dropped.push_back(v);
          ++found;
        }
      }
    }
    if (found == 0) break;
    // A vector group (vectorize) is all-or-nothing: when one lane dies, the survivors go back to
    // being scalar accesses rather than leave a group with a missing lane.
    for (Id b : reachable_blocks(k)) {
      const auto& list = k.blocks[b].insts;
      for (size_t p = 0; p < list.size(); ++p) {
        const ir::Inst& lead = k.insts[list[p]];
        if ((lead.op != Op::Load && lead.op != Op::Store) || lead.attr(ir::Attr::Vec) <= 0) continue;
        size_t width = size_t(lead.attr(ir::Attr::Vec));
        bool broken = false;
        for (size_t lane = 0; lane < width && p + lane < list.size(); ++lane) broken = broken || drop[list[p + lane]];
        if (broken)
          for (size_t lane = 0; lane < width && p + lane < list.size(); ++lane) {
            k.insts[list[p + lane]].erase(ir::Attr::Vec);
            k.insts[list[p + lane]].erase(ir::Attr::Lane);
          }
        p += width - 1;
      }
    }
    size_t removed = remove_insts(k, drop);
    ctx.stat("dead_store_elim.removed", int64_t(removed));
    changed = true;
  }
  return changed;
}

}  // namespace iron::passes
