// value_sink: moves a pure value whose every use lies inside one arm of a later if into that
// arm, so it is computed only on the path that needs it. Values sink in order, so a chain of
// values used only in one arm moves as a whole.
// Does not handle: sinking into loop bodies (it would be recomputed per iteration), loads (a
// store between the definition and the if could change the value read), values used in both
// arms or after the if, lane operations (convergent).
// Mutation for tests: value_sink.first_arm sinks a value used in both arms into the first.
#include <cstdint>
#include <utility>
#include <vector>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;

namespace {

constexpr Id kMany = ir::kNone - 1;  // uses in more than one arm

// Linear in the size of each block's subtree: one walk classifies every use of the values
// defined in the block (directly in it or in a loop body: cannot sink; in an arm of an if
// directly in it: that arm), then the values are visited last first, and a sunk value's
// operands inherit its arm instead of a direct use. Depth is bounded by ir::kMaxNesting.
struct Sink {
  ir::Kernel& k;
  PassContext& ctx;
  bool changed = false;
  std::vector<Id> where;       // inst -> block holding it
  std::vector<uint32_t> direct;  // value -> uses that keep it in its block
  std::vector<Id> arm;         // value -> the one arm holding its other uses (kNone, an arm, kMany)
  std::vector<uint32_t> slot;  // arm block -> index in sink_in's `sunk` (UINT32_MAX: none)

  void block(Id b) {
    for (Id id : std::vector<Id>(k.blocks[b].insts))
      for (Id child : k.insts[id].blocks)
        if (child != ir::kNone) block(child);
    sink_in(b);
  }

  void merge(Id v, Id target) {
    if (arm[v] == ir::kNone) arm[v] = target;
    else if (arm[v] != target && !ctx.mutant("value_sink.first_arm")) arm[v] = kMany;
  }
  // Records the uses by `user` of values defined in b; `in_arm` is the arm holding the user, or
  // kNone when the use keeps the value where it is.
  void note_uses(Id user, Id b, Id in_arm) {
    const ir::Inst& u = k.insts[user];
    for (int o = 0; o < u.num_operands(); ++o) {
      Id v = u.operands[o];
      if (v >= k.insts.size() || where[v] != b) continue;
      if (in_arm == ir::kNone) ++direct[v];
      else merge(v, in_arm);
    }
  }

  void sink_in(Id b) {
    const std::vector<Id> list = k.blocks[b].insts;
    for (Id id : list) {
      note_uses(id, b, ir::kNone);
      const ir::Inst& in = k.insts[id];
      for (Id child : in.blocks) {
        if (child == ir::kNone) continue;
        Id tag = in.op == ir::Op::If ? child : ir::kNone;  // a loop body recomputes per iteration
        ir::walk(k, child, [&](Id user) { note_uses(user, b, tag); });
      }
    }
    std::vector<uint8_t> removed(list.size(), 0);
    std::vector<std::pair<Id, std::vector<Id>>> sunk;  // arm -> values moved into it, last first
    for (size_t i = list.size(); i-- > 0;) {
      Id id = list[i];
      const ir::Inst& in = k.insts[id];
      if (!is_pure_value(in)) continue;
      Id target = arm[id];
      if (direct[id] != 0 || target == ir::kNone || target == kMany) continue;
      if (k.insts[k.blocks[target].parent].op != ir::Op::If || !ctx.allow_rewrite()) continue;
      removed[i] = 1;
      if (slot[target] == UINT32_MAX) {
        slot[target] = uint32_t(sunk.size());
        sunk.push_back({target, {}});
      }
      sunk[slot[target]].second.push_back(id);
      where[id] = target;
      // Its operands are now used inside the arm, not here.
      for (int o = 0; o < in.num_operands(); ++o) {
        Id v = in.operands[o];
        if (v >= k.insts.size() || where[v] != b) continue;
        --direct[v];
        merge(v, target);
      }
      ctx.stat("value_sink.sunk");
      changed = true;
    }
    for (Id id : list) {
      direct[id] = 0;
      arm[id] = ir::kNone;
    }
    for (const auto& e : sunk) slot[e.first] = UINT32_MAX;
    if (sunk.empty()) return;
    auto& dst = k.blocks[b].insts;
    dst.clear();
    for (size_t i = 0; i < list.size(); ++i)
      if (!removed[i]) dst.push_back(list[i]);
    // Sunk values go to the front of their arm, in program order.
    for (auto& [target, ids] : sunk) {
      auto& arm_list = k.blocks[target].insts;
      arm_list.insert(arm_list.begin(), ids.rbegin(), ids.rend());
    }
  }
};

}  // namespace

bool run_value_sink(ir::Kernel& k, PassContext& ctx) {
  Sink s{k, ctx, false, {}, {}, {}, {}};
  s.where = block_of(k);
  s.direct.assign(k.insts.size(), 0);
  s.arm.assign(k.insts.size(), ir::kNone);
  s.slot.assign(k.blocks.size(), UINT32_MAX);
  s.block(0);
  return s.changed;
}

}  // namespace iron::passes
