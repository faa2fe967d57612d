// Shared structural helpers for passes: one canonical way to reach every block, count uses,
// replace values and copy blocks, so no pass grows its own walker (rust-efficiency.txt).
#include <functional>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::kNone;

std::vector<Id> reachable_blocks(const ir::Kernel& k) {
  std::vector<Id> out{0};
  for (size_t i = 0; i < out.size(); ++i)
    for (Id id : k.blocks[out[i]].insts)
      for (Id b : k.insts[id].blocks)
        if (b != kNone) out.push_back(b);
  return out;
}

std::vector<Id> block_of(const ir::Kernel& k) {
  std::vector<Id> where(k.insts.size(), kNone);
  for (Id b : reachable_blocks(k))
    for (Id id : k.blocks[b].insts) where[id] = b;
  return where;
}

std::vector<uint32_t> use_counts(const ir::Kernel& k) {
  std::vector<uint32_t> uses(k.insts.size(), 0);
  ir::walk(k, [&](Id id) {
    const ir::Inst& in = k.insts[id];
    for (int i = 0; i < in.num_operands(); ++i)
      if (in.operands[i] < uses.size()) ++uses[in.operands[i]];
  });
  return uses;
}

size_t replace_all_uses(ir::Kernel& k, Id from, Id to) {
  size_t n = 0;
  std::vector<Id> ids;
  ir::walk(k, [&](Id id) { ids.push_back(id); });
  for (Id id : ids) {
    ir::Inst& in = k.insts[id];
    for (int i = 0; i < in.num_operands(); ++i)
      if (in.operands[i] == from) {
        in.operands[i] = to;
        ++n;
      }
  }
  return n;
}

void map_operands(ir::Inst& in, const std::vector<Id>& repl) {
  for (int i = 0; i < in.num_operands(); ++i)
    if (in.operands[i] < repl.size() && repl[in.operands[i]] != kNone) in.operands[i] = repl[in.operands[i]];
}

size_t op_count(const ir::Kernel& k) {
  size_t n = 0;
  ir::walk(k, [&](Id) { ++n; });
  return n;
}

bool is_pure_value(const ir::Inst& in) {
  return ir::has_trait(in.op, ir::trait::P) && !ir::has_trait(in.op, ir::trait::L) && in.type != DType::Void;
}

bool safe_to_speculate(const ir::Kernel& k, const ir::Inst& in) {
  if (!is_pure_value(in)) return false;
  if (is_integer(in.type) && (in.op == ir::Op::Div || in.op == ir::Op::Rem)) return false;
  if (in.op == ir::Op::Shl || in.op == ir::Op::Shr) {
    const ir::Inst& amount = k.insts[in.operands[1]];
    return amount.op == ir::Op::Const && uint32_t(amount.attr(ir::Attr::Value)) < 32;
  }
  return true;
}

Id parent_block(const ir::Kernel& k, const std::vector<Id>& where, Id b) {
  Id owner = k.blocks[b].parent;
  return owner == kNone || owner >= where.size() ? kNone : where[owner];
}

bool block_within(const ir::Kernel& k, const std::vector<Id>& where, Id inner, Id outer) {
  for (Id b = inner; b != kNone; b = parent_block(k, where, b))
    if (b == outer) return true;
  return false;
}

size_t remove_insts(ir::Kernel& k, const std::vector<uint8_t>& drop) {
  size_t n = 0;
  for (Id b : reachable_blocks(k)) {
    auto& insts = k.blocks[b].insts;
    size_t before = insts.size();
    std::erase_if(insts, [&](Id id) { return id < drop.size() && drop[id]; });
    n += before - insts.size();
  }
  return n;
}

Id clone_block(ir::Kernel& k, Id b, Id new_parent, std::map<Id, Id>& map) {
  Id nb = k.add_block(new_parent);
  std::vector<Id> src = k.blocks[b].insts;  // copy: add_inst may grow the arrays
  for (Id id : src) {
    ir::Inst in = k.insts[id];
    for (int i = 0; i < in.num_operands(); ++i) {
      auto it = map.find(in.operands[i]);
      if (it != map.end()) in.operands[i] = it->second;
    }
    in.blocks[0] = in.blocks[1] = kNone;
    Id nid = k.add_inst(in);
    map[id] = nid;
    k.blocks[nb].insts.push_back(nid);
    const ir::Inst& orig = k.insts[id];
    Id children[2] = {orig.blocks[0], orig.blocks[1]};
    for (int c = 0; c < 2; ++c)
      if (children[c] != kNone) {
        Id copy = clone_block(k, children[c], nid, map);
        k.insts[nid].blocks[c] = copy;
      }
  }
  return nb;
}

Id make_const(ir::Kernel& k, DType type, int64_t i, double f, ir::SrcLoc loc) {
  ir::Inst c;
  c.op = ir::Op::Const;
  c.type = type;
  // A T constant carries both readings: T may become a float or an integer dtype.
  if (type == DType::Generic) c.set(ir::Attr::Value, i), c.set_float(ir::Attr::Value, f);
  else if (is_float(type)) c.set_float(ir::Attr::Value, f);
  else c.set(ir::Attr::Value, i);
  c.loc = loc;
  return k.add_inst(c);
}

}  // namespace iron::passes
