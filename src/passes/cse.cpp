// cse: unifies identical value computations — same op, dtype, attributes and operands (operands
// of commutative ops compared in sorted order) — when the first dominates the second, i.e.
// appears earlier in the same block or in an enclosing block. Address arithmetic is ordinary
// integer arithmetic here, so repeated `base + offset` subtrees are unified too (the seeds' CSE
// could not, which hid adjacency from vectorize). Loads from read-only (`in`) buffers are
// unified as well: nothing in a kernel can write them.
// Does not handle: values in sibling branches (neither dominates), loads from writable buffers,
// threadgroup memory, variables, and lane reductions (convergent).
// Mutation for tests: cse.ignore_scope reuses values after the block defining them ends.
#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

using Key = std::vector<uint64_t>;

struct Cse {
  ir::Kernel& k;
  PassContext& ctx;
  std::map<Key, Id> table;
  bool changed = false;

  bool candidate(const ir::Inst& in) const {
    if (in.type == DType::Void || has_trait(in.op, ir::trait::F)) return false;
    if (in.op == Op::Load) return ir::read_only_memory(k, in.param());
    // Lane built-ins are fixed per thread: safe to share. Lane reductions are not.
    if (in.op == Op::LaneId || in.op == Op::LaneWidth || in.op == Op::SimdGroupId || in.op == Op::NumSimdGroups)
      return true;
    return is_pure_value(in);
  }

  Key key(const ir::Inst& in) const {
    // op, type, operand count, operands (a commutative pair in id order), then each attribute
    // as key, integer value and float bits: equal keys mean equal computations.
    Key key{uint64_t(in.op), in.type.code(), in.type.shape(), uint64_t(in.num_operands())};
    size_t first = key.size();
    for (Id o : in.operands) key.push_back(o);
    if (has_trait(in.op, ir::trait::C) && in.num_operands() == 2 && key[first] > key[first + 1])
      std::swap(key[first], key[first + 1]);
    std::vector<ir::AttrEntry> attrs = in.attrs;
    std::sort(attrs.begin(), attrs.end(), [](const ir::AttrEntry& a, const ir::AttrEntry& b) { return a.key < b.key; });
    for (const ir::AttrEntry& a : attrs) {
      uint64_t fbits;
      std::memcpy(&fbits, &a.f, sizeof fbits);
      key.push_back(uint64_t(a.key));
      key.push_back(uint64_t(a.i));
      key.push_back(fbits);
    }
    return key;
  }

  // Unified values, rewritten lazily: every use comes after its definition in this walk, so
  // each instruction's operands are mapped when it is reached (one pass, no whole-kernel
  // replace per unified value).
  std::vector<Id> repl;

  void block(Id b) {
    std::vector<Key> added;
    for (Id id : k.blocks[b].insts) {
      ir::Inst& in = k.insts[id];
      map_operands(in, repl);
      for (Id child : in.blocks)
        if (child != ir::kNone) block(child);
      if (!candidate(in)) continue;
      Key kk = key(in);
      auto it = table.find(kk);
      if (it != table.end()) {
        if (ctx.allow_rewrite()) {
          repl[id] = it->second;
          ctx.stat("cse.unified");
          changed = true;
        }
        continue;
      }
      table.emplace(kk, id);
      added.push_back(kk);
    }
    // Values defined here do not dominate anything after this block ends.
    if (!ctx.mutant("cse.ignore_scope"))
      for (const Key& kk : added) table.erase(kk);
  }
};

}  // namespace

bool run_cse(ir::Kernel& k, PassContext& ctx) {
  Cse c{k, ctx, {}, false, std::vector<Id>(k.insts.size(), ir::kNone)};
  c.block(0);
  return c.changed;
}

}  // namespace iron::passes
