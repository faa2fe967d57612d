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
#include <vector>

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
        // A select chooses between scalars only: a fragment variable keeps its if.
        Id var = in.operands[0];
        if (!k.insts[var].type.is_scalar()) return false;
        // The variable must be declared outside this if.
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

  Id add(std::vector<Id>& out, const ir::Inst& in) {
    Id id = k.add_inst(in);
    out.push_back(id);
    return id;
  }

  // Appends to `out` the straight-line code that replaces if `if_id`.
  void convert(Id if_id, std::vector<Id>& out) {
    ir::Inst cond_if = k.insts[if_id];
    Id cond = cond_if.operands[0];
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
          out.push_back(id);
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
          load.operands.resize(1);
          load.operands[0] = var;
          load.loc = cond_if.loc;
          vals[arm] = add(out, load);
        }
      }
      ir::Inst sel;
      sel.op = Op::Select;
      sel.type = k.insts[var].type;
      sel.operands.resize(3);
      sel.operands[0] = cond;
      sel.operands[1] = vals[0];
      sel.operands[2] = vals[1];
      sel.loc = cond_if.loc;
      Id s = add(out, sel);
      ir::Inst st;
      st.op = Op::VarStore;
      st.operands.resize(2);
      st.operands[0] = var;
      st.operands[1] = s;
      st.loc = cond_if.loc;
      add(out, st);
    }
  }

  // Each block is rebuilt once (inserting the replacement into the block per if was
  // quadratic in a block with many ifs); replacements are not revisited.
  void block(Id b) {
    const std::vector<Id> list = k.blocks[b].insts;
    std::vector<Id> out;
    out.reserve(list.size());
    bool rebuilt = false;
    for (Id id : list) {
      // A copy: converting an if inside a child adds instructions, which may move k.insts (and
      // the child list of this one with it) while the loop runs.
      const Id children[2] = {k.insts[id].blocks[0], k.insts[id].blocks[1]};
      for (Id child : children)
        if (child != ir::kNone) block(child);
      const ir::Inst& in = k.insts[id];
      if (in.op != Op::If || !convertible_arm(in.blocks[0], id) || !convertible_arm(in.blocks[1], id) ||
          !ctx.allow_rewrite()) {
        out.push_back(id);
        continue;
      }
      convert(id, out);
      ctx.stat("if_conversion.converted");
      changed = rebuilt = true;
    }
    if (rebuilt) k.blocks[b].insts = std::move(out);
  }
};

}  // namespace

bool run_if_conversion(ir::Kernel& k, PassContext& ctx) {
  IfConversion c{k, ctx, false};
  c.block(0);
  return c.changed;
}

}  // namespace iron::passes
