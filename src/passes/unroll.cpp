// unroll: fully unrolls loops with a constant trip count. A for whose begin, end and step are
// constants, with trip count t <= kMaxTrip and t * body size <= kMaxOps, is replaced by t
// copies of its body, each with the induction variable replaced by its constant value; a loop
// that runs zero times disappears (header included). Runs after const_fold, which turns
// computed bounds into constants.
// A loop whose induction variable would wrap around its 32-bit type before reaching the end is
// left alone (it does not run `trip` times).
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
  out = in.type == DType::U32 ? int64_t(uint32_t(in.attr(ir::Attr::Value))) : int64_t(int32_t(in.attr(ir::Attr::Value)));
  return true;
}

}  // namespace

// Each block is rebuilt once: its instructions are taken from a stack, an unrolled loop pushes
// its copies back on it (so a loop inside the body, now at this level, is considered next), and
// kept instructions queue their child blocks. Linear in the size of the result.
bool run_unroll(ir::Kernel& k, PassContext& ctx) {
  bool changed = false, budget_left = true;
  std::vector<Id> work{0};
  for (size_t w = 0; w < work.size(); ++w) {
    const Id b = work[w];
    std::vector<Id> todo(k.blocks[b].insts.rbegin(), k.blocks[b].insts.rend());
    std::vector<Id> out;
    out.reserve(todo.size());
    bool rebuilt = false;
    while (!todo.empty()) {
      Id loop = todo.back();
      todo.pop_back();
      const ir::Inst lp = k.insts[loop];
      int64_t begin, end, step, trip = -1;
      // 64-bit loops stay loops (their bounds are not read as 32-bit constants here).
      if (budget_left && lp.op == Op::For && int_bits(lp.type.elem()) == 32 && constant_int(k, lp.operands[0], begin) &&
          constant_int(k, lp.operands[1], end) && constant_int(k, lp.operands[2], step) && step > 0) {
        trip = end > begin ? (end - begin + step - 1) / step : 0;
        // The induction variable is 32-bit and wraps: if it would pass the type's maximum
        // before reaching `end` (begin + trip * step overflows the dtype), the loop starts
        // over from a small value instead of stopping, and its trip count is not `trip`.
        // (No 64-bit overflow here: every term is below 2^32 and trip is small when kept.)
        const int64_t type_max = lp.type == DType::U32 ? int64_t(UINT32_MAX) : int64_t(INT32_MAX);
        if (trip > kMaxTrip || begin + trip * step > type_max) trip = -1;
      }
      if (trip >= 0) {
        if (ctx.mutant("unroll.one_short") && trip > 0) --trip;
        size_t body_ops = 0;
        ir::walk(k, lp.blocks[0], [&](Id) { ++body_ops; });
        if (trip * int64_t(body_ops) > kMaxOps) trip = -1;
      }
      if (trip >= 0 && !ctx.allow_rewrite()) {
        budget_left = false;
        trip = -1;
      }
      if (trip < 0) {
        out.push_back(loop);
        for (Id cb : k.insts[loop].blocks)
          if (cb != ir::kNone) work.push_back(cb);
        continue;
      }
      std::vector<Id> copies;
      for (int64_t i = 0; i < trip; ++i) {
        Id c = make_const(k, lp.type.elem(), begin + i * step, 0, lp.loc);
        copies.push_back(c);
        std::map<Id, Id> map{{loop, c}};
        Id nb = clone_block(k, lp.blocks[0], ir::kNone, map);
        for (Id id : k.blocks[nb].insts) copies.push_back(id);
      }
      // Instructions spliced into this block keep their own child blocks; fix the parents.
      for (Id id : copies)
        for (Id cb : k.insts[id].blocks)
          if (cb != ir::kNone) k.blocks[cb].parent = id;
      todo.insert(todo.end(), copies.rbegin(), copies.rend());
      ctx.stat("unroll.loops");
      ctx.stat("unroll.copies", trip);
      changed = rebuilt = true;
    }
    if (rebuilt) k.blocks[b].insts = std::move(out);
  }
  return changed;
}

}  // namespace iron::passes
