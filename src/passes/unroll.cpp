// unroll: fully unrolls loops with a constant trip count. A for whose begin, end and step are
// constants, with trip count t <= kMaxTrip and t * body size <= kMaxOps, is replaced by t
// copies of its body, each with the induction variable replaced by its constant value; a loop
// that runs zero times disappears (header included). Runs after const_fold, which turns
// computed bounds into constants.
// Does not handle: partial unrolling or remainder loops, loops with unknown bounds (most
// strided kernel loops), bodies declaring threadgroup memory (hoisted already by the tracer).
// Mutation for tests: unroll.one_short emits one copy too few.
#include <map>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

constexpr int64_t kMaxTrip = 16;
constexpr int64_t kMaxOps = 512;

bool constant_int(const ir::Kernel& k, Id v, int64_t& out) {
  const ir::Inst& in = k.insts[v];
  if (in.op != Op::Const || !is_integer(in.type)) return false;
  out = in.type == DType::U32 ? int64_t(uint32_t(in.imm)) : int64_t(int32_t(in.imm));
  return true;
}

}  // namespace

bool run_unroll(ir::Kernel& k, PassContext& ctx) {
  bool changed = false;
  bool again = true;
  while (again) {
    again = false;
    for (Id b : reachable_blocks(k)) {
      auto& list = k.blocks[b].insts;
      for (size_t pos = 0; pos < list.size(); ++pos) {
        Id loop = list[pos];
        const ir::Inst lp = k.insts[loop];
        if (lp.op != Op::For) continue;
        int64_t begin, end, step;
        if (!constant_int(k, lp.operands[0], begin) || !constant_int(k, lp.operands[1], end) ||
            !constant_int(k, lp.operands[2], step) || step <= 0)
          continue;
        int64_t trip = end > begin ? (end - begin + step - 1) / step : 0;
        if (ctx.mutant("unroll.one_short") && trip > 0) --trip;
        size_t body_ops = 0;
        ir::walk(k, lp.blocks[0], [&](Id) { ++body_ops; });
        if (trip > kMaxTrip || trip * int64_t(body_ops) > kMaxOps) continue;
        if (!ctx.allow_rewrite()) return changed;
        std::vector<Id> copies;
        for (int64_t i = 0; i < trip; ++i) {
          Id c = make_const(k, lp.type, begin + i * step, 0, lp.loc);
          copies.push_back(c);
          std::map<Id, Id> map{{loop, c}};
          Id nb = clone_block(k, lp.blocks[0], ir::kNone, map);
          for (Id id : k.blocks[nb].insts) copies.push_back(id);
        }
        // Instructions spliced into this block keep their own child blocks; fix the parents.
        auto& dst = k.blocks[b].insts;
        dst.erase(dst.begin() + long(pos));
        dst.insert(dst.begin() + long(pos), copies.begin(), copies.end());
        for (Id id : copies)
          for (Id cb : k.insts[id].blocks)
            if (cb != ir::kNone) k.blocks[cb].parent = id;
        ctx.stat("unroll.loops");
        ctx.stat("unroll.copies", trip);
        changed = again = true;
        break;  // block lists changed: rescan
      }
      if (again) break;
    }
  }
  return changed;
}

}  // namespace iron::passes
