// copy_prop: forwards the value last stored into a mutable local to the loads that read it.
// A variable that is never stored after its declaration is replaced by its initial value
// everywhere. Otherwise, within straight-line code, a load that follows a store (or the
// declaration) with no intervening control flow that may store the variable reads the stored
// value directly. Entering an if arm keeps what is known; entering a loop body forgets every
// variable the body stores (the previous iteration may have changed it).
// Does not handle: merging values from both arms of an if (that is if_conversion's select),
// loop-carried values, threadgroup memory.
// Mutation for tests: copy_prop.keep_across_loops forgets that a loop body may store.
#include <map>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

struct CopyProp {
  ir::Kernel& k;
  PassContext& ctx;
  std::vector<uint8_t> stored_in;  // scratch
  bool changed = false;

  // Variables stored anywhere inside block b (nested blocks included).
  void stores_within(Id b, std::vector<Id>& out) {
    ir::walk(k, b, [&](Id id) {
      if (k.insts[id].op == Op::VarStore) out.push_back(k.insts[id].operands[0]);
    });
  }

  std::vector<Id> repl;  // forwarded loads, applied as the walk reaches each use (map_operands)

  void forward(Id id, Id value) {
    if (!ctx.allow_rewrite()) return;
    repl[id] = value;
    ctx.stat("copy_prop.forwarded");
    changed = true;
  }

  void block(Id b, std::map<Id, Id> known) {
    for (Id id : k.blocks[b].insts) {
      map_operands(k.insts[id], repl);
      const ir::Inst& in = k.insts[id];
      switch (in.op) {
        case Op::Var: known[id] = in.operands[0]; break;
        case Op::VarStore: known[in.operands[0]] = in.operands[1]; break;
        case Op::VarLoad: {
          auto it = known.find(in.operands[0]);
          if (it != known.end()) forward(id, it->second);
          break;
        }
        case Op::If: {
          for (Id child : in.blocks)
            if (child != ir::kNone) block(child, known);
          std::vector<Id> killed;
          for (Id child : in.blocks)
            if (child != ir::kNone) stores_within(child, killed);
          for (Id v : killed) known.erase(v);
          break;
        }
        case Op::For: {
          std::vector<Id> killed;
          stores_within(in.blocks[0], killed);
          if (!ctx.mutant("copy_prop.keep_across_loops"))
            for (Id v : killed) known.erase(v);
          block(in.blocks[0], known);
          break;
        }
        default: break;
      }
    }
  }
};

}  // namespace

bool run_copy_prop(ir::Kernel& k, PassContext& ctx) {
  CopyProp cp{k, ctx, {}, false, std::vector<Id>(k.insts.size(), ir::kNone)};
  cp.block(0, {});
  return cp.changed;
}

}  // namespace iron::passes
