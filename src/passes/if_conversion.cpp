// if_conversion: turns a small if whose arms only compute pure values and assign variables
// declared outside it into straight-line code with selects:
//   if c { v = a } else { v = b }   ->   v = select(c, a, b)
// Only when both arms are free of side effects other than those assignments, and no op in
// them could fault or read memory when executed unconditionally: a select evaluates both sides,
// so it never guards a load (seeds §8) — an arm with a load, a store, a barrier, a lane
// operation, a loop, an integer division, a shift not by a constant below 32 or a variable read
// stays a real branch.
// Does not handle: nested ifs inside the arms, arms longer than kMaxArm ops.
// Mutation for tests: if_conversion.allow_loads converts arms that load (the seeds' hazard).
#include <map>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

constexpr size_t kMaxArm = 8;

struct IfConversion {
  ir::Kernel& k;
  PassContext& ctx;
  bool changed = false;

  bool convertible_arm(Id b, Id owner_block_if) const {
    if (b == ir::kNone) return true;
    const auto& insts = k.blocks[b].insts;
    if (insts.size() > kMaxArm) return false;
    for (Id id : insts) {
      const ir::Inst& in = k.insts[id];
      if (in.op == Op::VarStore) {
        // The variable must be declared outside this if.
        Id var = in.operands[0];
        bool inside = false;
        ir::walk(k, k.insts[owner_block_if].blocks[0], [&](Id x) { inside = inside || x == var; });
        if (k.insts[owner_block_if].blocks[1] != ir::kNone)
          ir::walk(k, k.insts[owner_block_if].blocks[1], [&](Id x) { inside = inside || x == var; });
        if (inside) return false;
        continue;
      }
      bool load_ok = in.op == Op::Load && ctx.mutant("if_conversion.allow_loads");
      if (!load_ok && !safe_to_speculate(k, in)) return false;
    }
    return true;
  }

  Id add(Id b, size_t& pos, ir::Inst in) {
    Id id = k.add_inst(in);
    auto& list = k.blocks[b].insts;
    list.insert(list.begin() + long(pos++), id);
    return id;
  }

  // Rewrites the if at position pos of block b; returns the number of instructions now
  // occupying its place.
  size_t convert(Id b, size_t pos) {
    Id if_id = k.blocks[b].insts[pos];
    ir::Inst cond_if = k.insts[if_id];
    Id cond = cond_if.operands[0];
    k.blocks[b].insts.erase(k.blocks[b].insts.begin() + long(pos));
    size_t at = pos;
    std::map<Id, Id> last_store[2];
    std::vector<Id> order;  // variables in first-assignment order, for deterministic output
    for (int arm = 0; arm < 2; ++arm) {
      Id blk = cond_if.blocks[arm];
      if (blk == ir::kNone) continue;
      for (Id id : k.blocks[blk].insts) {
        const ir::Inst& in = k.insts[id];
        if (in.op == Op::VarStore) {
          Id var = in.operands[0];
          if (!last_store[0].count(var) && !last_store[1].count(var)) order.push_back(var);
          last_store[arm][var] = in.operands[1];
        } else {
          auto& list = k.blocks[b].insts;
          list.insert(list.begin() + long(at++), id);
        }
      }
    }
    for (Id var : order) {
      Id vals[2];
      for (int arm = 0; arm < 2; ++arm) {
        auto it = last_store[arm].find(var);
        if (it != last_store[arm].end()) {
          vals[arm] = it->second;
        } else {
          ir::Inst load;
          load.op = Op::VarLoad;
          load.type = k.insts[var].type;
          load.num_operands = 1;
          load.operands[0] = var;
          load.loc = cond_if.loc;
          vals[arm] = add(b, at, load);
        }
      }
      ir::Inst sel;
      sel.op = Op::Select;
      sel.type = k.insts[var].type;
      sel.num_operands = 3;
      sel.operands[0] = cond;
      sel.operands[1] = vals[0];
      sel.operands[2] = vals[1];
      sel.loc = cond_if.loc;
      Id s = add(b, at, sel);
      ir::Inst st;
      st.op = Op::VarStore;
      st.num_operands = 2;
      st.operands[0] = var;
      st.operands[1] = s;
      st.loc = cond_if.loc;
      add(b, at, st);
    }
    return at - pos;
  }

  void block(Id b) {
    for (size_t pos = 0; pos < k.blocks[b].insts.size(); ++pos) {
      Id id = k.blocks[b].insts[pos];
      for (Id child : k.insts[id].blocks)
        if (child != ir::kNone) block(child);
      const ir::Inst& in = k.insts[id];
      if (in.op != Op::If) continue;
      if (!convertible_arm(in.blocks[0], id) || !convertible_arm(in.blocks[1], id)) continue;
      if (!ctx.allow_rewrite()) continue;
      size_t n = convert(b, pos);
      ctx.stat("if_conversion.converted");
      changed = true;
      pos = pos + n - 1;  // continue after the replacement (wraps to revisit 0 when n == 0 at 0)
    }
  }
};

}  // namespace

bool run_if_conversion(ir::Kernel& k, PassContext& ctx) {
  IfConversion c{k, ctx, false};
  c.block(0);
  return c.changed;
}

}  // namespace iron::passes
