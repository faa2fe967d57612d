// schedule: issues global loads early. Within each block, a load from a read-only (`in`)
// buffer moves up to just after the last instruction defining one of its operands, so its
// memory latency overlaps the arithmetic before it. Nothing in a kernel writes an `in` buffer,
// so only operand dependencies constrain the move. Loads keep their relative order.
// Does not handle: loads from writable buffers (a store may intervene), moves across blocks,
// register-pressure-aware ordering (the target compiler schedules registers).
// Mutation for tests: schedule.move_writable_loads also moves loads of writable buffers.
#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

bool run_schedule(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  for (Id b : reachable_blocks(k)) {
    auto& list = k.blocks[b].insts;
    size_t floor = 0;  // loads never pass an earlier load: keeps their order
    for (size_t pos = 0; pos < list.size(); ++pos) {
      Id id = list[pos];
      const ir::Inst& in = k.insts[id];
      if (in.op != Op::Load) continue;
      if (!ir::read_only_memory(k, in.sym) && !ctx.mutant("schedule.move_writable_loads")) continue;
      size_t target = floor;
      for (size_t j = pos; j-- > floor;) {
        Id prev = list[j];
        bool defines = false;
        for (int o = 0; o < in.num_operands; ++o) defines = defines || in.operands[o] == prev;
        if (defines) {
          target = j + 1;
          break;
        }
      }
      if (target < pos && ctx.allow_rewrite()) {
        list.erase(list.begin() + long(pos));
        list.insert(list.begin() + long(target), id);
        ctx.stat("schedule.loads_moved");
        changed = true;
        floor = target + 1;
      } else {
        floor = pos + 1;
      }
    }
  }
  return changed;
}

}  // namespace iron::passes
