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
#include <vector>

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
    for (int i = 0; i < in.num_operands(); ++i) in.operands[i] = map.at(src.operands[i]);
    in.blocks[0] = in.blocks[1] = ir::kNone;
    if (src.loc.file < callee.files.size()) in.loc.file = k.intern_file(callee.files[src.loc.file]);
    if (src.op == Op::Call) in.set(ir::Attr::Callee, k.intern_string(callee.strings[size_t(src.attr(ir::Attr::Callee))]));
    Id nid = k.add_inst(in);
    map[id] = nid;
    for (int c = 0; c < 2; ++c)
      if (src.blocks[c] != ir::kNone) {
        Id nb = import_block(callee, src.blocks[c], nid, map);
        k.insts[nid].blocks[c] = nb;
      }
    return nid;
  }

  // Copies the body of call `call_id` into new instructions (appended to `body`) and sets
  // `result` to the value that replaces the call. Returns false (with a diagnostic) on error.
  bool expand(Id call_id, std::vector<Id>& body, Id& result) {
    const ir::Inst call = k.insts[call_id];
    const std::string name = k.strings[size_t(call.attr(ir::Attr::Callee))];
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
      const int64_t index = in.attr(ir::Attr::Index);
      if (index < 0 || index >= call.num_operands()) return;
      int64_t which = ctx.mutant("kernel_inline.reverse_args") ? call.num_operands() - 1 - index : index;
      Id actual = call.operands[size_t(which)];
      if (k.insts[actual].type != in.type)
        ctx.diags.error(call.loc, "argument " + std::to_string(index) + " of '" + name + "' is " +
                                      type_name(k.insts[actual].type) + ", the function takes " + type_name(in.type));
      map[id] = actual;
    });
    if (args != call.num_operands()) {
      ctx.diags.error(call.loc, "'" + name + "' takes " + std::to_string(args) + " argument(s), the call passes " +
                                    std::to_string(call.num_operands()));
      return false;
    }
    if (!ctx.diags.empty()) return false;
    for (Id id : callee->blocks[0].insts) {
      Id nid = import_inst(*callee, id, map);
      if (nid != ir::kNone) body.push_back(nid);
    }
    result = map.at(callee->insts[callee->blocks[0].insts.back()].operands[0]);
    return true;
  }
};

}  // namespace

void set_function_resolver(FunctionResolver fn) { g_resolver = fn; }
FunctionResolver function_resolver() { return g_resolver; }

// One round inlines every call present at its start: each block is rebuilt once, and the calls'
// results are redirected in one walk at the end of the round (a call's own operands first, so
// an argument that was an earlier call's result is already its value). Linear per round; the
// rounds are bounded by kMaxDepth.
bool run_kernel_inline(ir::Kernel& k, PassContext& ctx) {
  Inliner in{k, ctx};
  bool changed = false;
  for (int round = 0;; ++round) {
    bool found = false, stop = false;
    std::vector<Id> repl(k.insts.size(), ir::kNone);
    for (Id b : reachable_blocks(k)) {
      const std::vector<Id> src = k.blocks[b].insts;
      std::vector<Id> out;
      bool rebuilt = false;
      for (size_t pos = 0; pos < src.size(); ++pos) {
        Id id = src[pos];
        if (stop || k.insts[id].op != Op::Call) {
          out.push_back(id);
          continue;
        }
        found = true;
        if (round >= kMaxDepth) {
          ctx.diags.error(k.insts[id].loc,
                          "device function calls nest deeper than " + std::to_string(kMaxDepth) + " (recursion?)");
          stop = true;
        } else if (!ctx.allow_rewrite()) {
          stop = true;
        }
        map_operands(k.insts[id], repl);
        std::vector<Id> body;
        Id result = ir::kNone;
        if (stop || !in.expand(id, body, result)) {
          stop = true;
          out.push_back(id);
          continue;
        }
        out.insert(out.end(), body.begin(), body.end());
        repl[id] = result;
        rebuilt = true;
        ctx.stat("kernel_inline.inlined");
        changed = true;
      }
      if (rebuilt) k.blocks[b].insts = std::move(out);
      if (stop) break;
    }
    if (changed) ir::walk(k, [&](Id id) { map_operands(k.insts[id], repl); });
    if (!found || stop) break;
  }
  return changed;
}

}  // namespace iron::passes
