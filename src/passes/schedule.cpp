// schedule: issues global loads early. Within each block, a load from a read-only (`in`)
// buffer moves up to just after the last instruction defining one of its operands, so its
// memory latency overlaps the arithmetic before it. Nothing in a kernel writes an `in` buffer,
// so only operand dependencies constrain the move. Loads keep their relative order.
// Does not handle: loads from writable buffers (a store may intervene), moves across blocks,
// register-pressure-aware ordering (the target compiler schedules registers).
// Mutation for tests: schedule.move_writable_loads also moves loads of writable buffers.
#include <vector>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

// Each block is rebuilt once. Instructions that stay are "anchors"; a moved load goes into the
// bucket that follows an anchor (or the leading bucket). A load may not pass the last load
// placed before it, so its target is the later of that floor and the last anchor defining one
// of its operands; a load whose target is the end of the list stays and becomes an anchor.
bool run_schedule(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  std::vector<int64_t> anchor_of(k.insts.size(), -1);  // inst -> its anchor index in this block
  for (Id b : reachable_blocks(k)) {
    const std::vector<Id> list = k.blocks[b].insts;
    std::vector<Id> anchors;
    std::vector<std::vector<Id>> buckets(1);  // buckets[a + 1] follows anchor a; [0] leads
    int64_t floor = -1;                       // loads go after anchor `floor` (and its bucket)
    bool moved_any = false;
    auto keep = [&](Id id) {
      anchor_of[id] = int64_t(anchors.size());
      anchors.push_back(id);
      buckets.emplace_back();
    };
    for (Id id : list) {
      const ir::Inst& in = k.insts[id];
      bool movable = in.op == Op::Load && (ir::read_only_memory(k, in.param()) || ctx.mutant("schedule.move_writable_loads"));
      if (!movable) {
        keep(id);
        continue;
      }
      int64_t target = floor;
      for (int o = 0; o < in.num_operands(); ++o) {
        Id def = in.operands[o];
        if (def < anchor_of.size() && anchor_of[def] > target) target = anchor_of[def];
      }
      if (target == int64_t(anchors.size()) - 1 || !ctx.allow_rewrite()) {
        keep(id);  // nothing to pass: it stays, and later loads may not pass it
        floor = anchor_of[id];
        continue;
      }
      buckets[size_t(target + 1)].push_back(id);
      floor = target;
      moved_any = true;
      ctx.stat("schedule.loads_moved");
      changed = true;
    }
    for (Id id : anchors) anchor_of[id] = -1;
    if (!moved_any) continue;
    std::vector<Id> out(buckets[0]);
    out.reserve(list.size());
    for (size_t a = 0; a < anchors.size(); ++a) {
      out.push_back(anchors[a]);
      out.insert(out.end(), buckets[a + 1].begin(), buckets[a + 1].end());
    }
    k.blocks[b].insts = std::move(out);
  }
  return changed;
}

}  // namespace iron::passes
