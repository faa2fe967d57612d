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

namespace iron::passes {

namespace {
bool multiple_at(const ir::Kernel& k, Id v, uint64_t m, int depth) {
  if (depth > 8 || v >= k.insts.size()) return false;
  const ir::Inst& in = k.insts[v];
  if (!is_integer(in.type)) return false;
  switch (in.op) {
    case ir::Op::Const: return (uint64_t(in.attr(ir::Attr::Value)) & (m - 1)) == 0;
    case ir::Op::Param: {
      // A declared fact: every dispatch value is a multiple of it (Context checks each one).
      const uint32_t p = in.param();
      return p < k.params.size() && k.params[p].multiple_of != 0 && k.params[p].multiple_of % m == 0;
    }
    case ir::Op::Mul:
      return multiple_at(k, in.operands[0], m, depth + 1) || multiple_at(k, in.operands[1], m, depth + 1);
    case ir::Op::Shl: {
      const ir::Inst& c = k.insts[in.operands[1]];
      if (c.op != ir::Op::Const) return false;
      const uint64_t s = uint64_t(c.attr(ir::Attr::Value));
      if (s >= int_bits(in.type.elem()) - 1) return false;
      return (s < 63 && ((uint64_t(1) << s) % m) == 0) || multiple_at(k, in.operands[0], m, depth + 1);
    }
    case ir::Op::Add: case ir::Op::Sub: case ir::Op::Min: case ir::Op::Max:
      return multiple_at(k, in.operands[0], m, depth + 1) && multiple_at(k, in.operands[1], m, depth + 1);
    case ir::Op::Select:
      return multiple_at(k, in.operands[1], m, depth + 1) && multiple_at(k, in.operands[2], m, depth + 1);
    case ir::Op::And:  // x & ~(m-1): either side with its low bits clear clears them
      return multiple_at(k, in.operands[0], m, depth + 1) || multiple_at(k, in.operands[1], m, depth + 1);
    case ir::Op::Cast:  // integer to integer keeps the low bits (a narrowed multiple is still one)
      return is_integer(k.insts[in.operands[0]].type) && multiple_at(k, in.operands[0], m, depth + 1);
    default: return false;
  }
}
}  // namespace

bool known_multiple_of(const ir::Kernel& k, Id v, int64_t m) {
  if (m <= 0 || (m & (m - 1)) != 0) return false;
  return m == 1 || multiple_at(k, v, uint64_t(m), 0);
}

}  // namespace iron::passes
