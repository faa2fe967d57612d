// kernel_inline: replaces every call to a registered device function with the function's body:
// the callee's instructions (nested ifs and loops included) are copied into the caller at the
// call, its args become the call's operands and its ret value replaces the call's result.
// Callees calling other functions are inlined transitively; a call chain deeper than
// kMaxDepth is reported as recursion. A call to an unknown function, or with arguments whose
// count or dtypes differ from the callee's args, is a located diagnostic.
// Does not handle: functions with buffers or built-ins (the registry gate rejects them), a
// callee whose ret sits inside control flow (the verifier requires it last in the entry block).
// Mutation for tests: kernel_inline.reverse_args binds the arguments in reverse order.
#include <map>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

FunctionResolver g_resolver = nullptr;
constexpr int kMaxDepth = 16;

struct Inliner {
  ir::Kernel& k;
  PassContext& ctx;

  // Copies callee block `b` into the caller as a new block owned by `parent`.
  Id import_block(const ir::Kernel& callee, Id b, Id parent, std::map<Id, Id>& map) {
    Id nb = k.add_block(parent);
    for (Id id : callee.blocks[b].insts) {
      Id nid = import_inst(callee, id, map);
      if (nid != ir::kNone) k.blocks[nb].insts.push_back(nid);
    }
    return nb;
  }

  Id import_inst(const ir::Kernel& callee, Id id, std::map<Id, Id>& map) {
    const ir::Inst& src = callee.insts[id];
    if (src.op == Op::Arg || src.op == Op::Return) return ir::kNone;
    ir::Inst in = src;
    for (int i = 0; i < in.num_operands; ++i) in.operands[i] = map.at(src.operands[i]);
    in.blocks[0] = in.blocks[1] = ir::kNone;
    if (src.loc.file < callee.files.size()) in.loc.file = k.intern_file(callee.files[src.loc.file]);
    if (src.op == Op::Call) in.sym = k.intern_string(callee.strings[src.sym]);
    Id nid = k.add_inst(in);
    map[id] = nid;
    for (int c = 0; c < 2; ++c)
      if (src.blocks[c] != ir::kNone) {
        Id nb = import_block(callee, src.blocks[c], nid, map);
        k.insts[nid].blocks[c] = nb;
      }
    return nid;
  }

  // Inlines the call at position pos of block b. Returns false (with a diagnostic) on error.
  bool inline_call(Id b, size_t pos) {
    Id call_id = k.blocks[b].insts[pos];
    const ir::Inst call = k.insts[call_id];
    const std::string& name = k.strings[call.sym];
    const ir::Kernel* callee = nullptr;
    try {
      callee = g_resolver ? g_resolver(name) : nullptr;
    } catch (const Error& e) {
      ctx.diags.error(call.loc, "device function '" + name + "' is malformed: " + e.what());
      return false;
    }
    if (!callee) {
      ctx.diags.error(call.loc, "call to unknown device function '" + name + "'");
      return false;
    }
    std::map<Id, Id> map;
    int args = 0;
    ir::walk(*callee, [&](Id id) {
      const ir::Inst& in = callee->insts[id];
      if (in.op != Op::Arg) return;
      ++args;
      if (in.imm < 0 || in.imm >= call.num_operands) return;
      int64_t which = ctx.mutant("kernel_inline.reverse_args") ? call.num_operands - 1 - in.imm : in.imm;
      Id actual = call.operands[which];
      if (k.insts[actual].type != in.type)
        ctx.diags.error(call.loc, "argument " + std::to_string(in.imm) + " of '" + name + "' is " +
                                      dtype_name(k.insts[actual].type) + ", the function takes " + dtype_name(in.type));
      map[id] = actual;
    });
    if (args != call.num_operands) {
      ctx.diags.error(call.loc, "'" + name + "' takes " + std::to_string(args) + " argument(s), the call passes " +
                                    std::to_string(call.num_operands));
      return false;
    }
    if (!ctx.diags.empty()) return false;
    std::vector<Id> body;
    for (Id id : callee->blocks[0].insts) {
      Id nid = import_inst(*callee, id, map);
      if (nid != ir::kNone) body.push_back(nid);
    }
    Id result = map.at(callee->insts[callee->blocks[0].insts.back()].operands[0]);
    auto& list = k.blocks[b].insts;
    list.erase(list.begin() + long(pos));
    list.insert(list.begin() + long(pos), body.begin(), body.end());
    replace_all_uses(k, call_id, result);
    return true;
  }
};

}  // namespace

void set_function_resolver(FunctionResolver fn) { g_resolver = fn; }
FunctionResolver function_resolver() { return g_resolver; }

bool run_kernel_inline(ir::Kernel& k, PassContext& ctx) {
  Inliner in{k, ctx};
  bool changed = false;
  for (int round = 0;; ++round) {
    bool found = false;
    for (Id b : reachable_blocks(k)) {
      for (size_t pos = 0; pos < k.blocks[b].insts.size(); ++pos) {
        if (k.insts[k.blocks[b].insts[pos]].op != Op::Call) continue;
        found = true;
        if (round >= kMaxDepth) {
          ctx.diags.error(k.insts[k.blocks[b].insts[pos]].loc,
                          "device function calls nest deeper than " + std::to_string(kMaxDepth) + " (recursion?)");
          return changed;
        }
        if (!ctx.allow_rewrite()) return changed;
        if (!in.inline_call(b, pos)) return changed;
        ctx.stat("kernel_inline.inlined");
        changed = true;
      }
    }
    if (!found) break;
  }
  return changed;
}

}  // namespace iron::passes
