// vectorize: turns provably adjacent, aligned scalar loads and stores into vector groups.
// W consecutive accesses to one buffer at indices B + 0 .. B + W-1 (W = 8, 4 or 2), where B is
// provably a multiple of W, become one group: the lane-0 access is the leader (imm = W) and the
// others follow it immediately as members (imm = -lane). The IR stays scalar — the interpreter
// and every pass read a group as the scalar accesses it is — and the emitters print each group
// as real wide accesses of at most 16 bytes (float4, uint4 of halves, vec4, ...).
// Loads are gathered only from read-only buffers (moving them is then always safe); stores are
// gathered at the last store of the group when nothing between the first and the last touches
// the buffer, synchronizes, or branches into code that might. Allocations are at least 16-byte
// aligned on every backend, so an element offset that is a multiple of W is W-aligned.
// Does not handle: loads from writable buffers, accesses split across blocks (a tail guarded
// per element stays scalar, which is exactly the tail path), strided or reversed runs, runs
// whose base is not provably aligned.
// Mutation for tests: vectorize.assume_aligned groups runs whose base is not provably aligned.
#include <algorithm>
#include <map>

#include "passes/pass.hpp"

namespace iron::passes {

using ir::Id;
using ir::Op;

namespace {

struct Vectorizer {
  ir::Kernel& k;
  PassContext& ctx;
  bool changed = false;

  bool const_u(Id v, int64_t& out) const {
    const ir::Inst& in = k.insts[v];
    if (in.op != Op::Const || !is_integer(in.type)) return false;
    out = in.type == DType::U32 ? int64_t(uint32_t(in.imm)) : int64_t(int32_t(in.imm));
    return true;
  }

  // True when value v is provably a multiple of m (m a power of two).
  bool multiple_of(Id v, int64_t m, int depth = 0) const {
    if (depth > 8) return false;
    const ir::Inst& in = k.insts[v];
    int64_t c;
    if (const_u(v, c)) return c % m == 0;
    switch (in.op) {
      case Op::Mul:
        return multiple_of(in.operands[0], m, depth + 1) || multiple_of(in.operands[1], m, depth + 1);
      case Op::Shl:
        return const_u(in.operands[1], c) && c < 31 && ((int64_t(1) << c) % m == 0 || multiple_of(in.operands[0], m, depth + 1));
      case Op::Add: case Op::Sub:
        return multiple_of(in.operands[0], m, depth + 1) && multiple_of(in.operands[1], m, depth + 1);
      case Op::And:  // x & ~(m-1)
        return (const_u(in.operands[1], c) && (c & (m - 1)) == 0) || (const_u(in.operands[0], c) && (c & (m - 1)) == 0);
      default: return false;
    }
  }

  // Splits an index into base + constant offset.
  void split(Id idx, Id& base, int64_t& off) const {
    const ir::Inst& in = k.insts[idx];
    int64_t c;
    if (in.op == Op::Add && const_u(in.operands[1], c)) {
      base = in.operands[0];
      off = c;
    } else if (in.op == Op::Add && const_u(in.operands[0], c)) {
      base = in.operands[1];
      off = c;
    } else {
      base = idx;
      off = 0;
    }
  }

  // Moves instruction `id` of block b (at index `from`) to index `to` (< from), first moving
  // the pure operands it needs that sit in between. Returns false (nothing moved) if a needed
  // operand is not pure.
  bool hoist(Id b, Id id, size_t& to) {
    auto& list = k.blocks[b].insts;
    for (int o = 0; o < k.insts[id].num_operands; ++o) {
      Id dep = k.insts[id].operands[o];
      auto it = std::find(list.begin() + long(to), list.end(), dep);
      if (it == list.end()) continue;  // defined before `to` or in an outer block
      if (!is_pure_value(k.insts[dep])) return false;
      if (!hoist(b, dep, to)) return false;
    }
    auto it = std::find(list.begin() + long(to), list.end(), id);
    list.erase(it);
    list.insert(list.begin() + long(to), id);
    ++to;
    return true;
  }

  bool touches(Id inst, uint32_t param) const {
    bool hit = false;
    const ir::Inst& in = k.insts[inst];
    auto check = [&](Id x) {
      const ir::Inst& y = k.insts[x];
      if ((y.op == Op::Load || y.op == Op::Store) && y.sym == param) hit = true;
      if (y.op == Op::Barrier || y.op == Op::Call) hit = true;
    };
    check(inst);
    for (Id cb : in.blocks)
      if (cb != ir::kNone) ir::walk(k, cb, check);
    return hit;
  }

  struct Access {
    Id id;
    int64_t off;
  };

  void block(Id b) {
    for (Id id : std::vector<Id>(k.blocks[b].insts))
      for (Id cb : k.insts[id].blocks)
        if (cb != ir::kNone) block(cb);
    for (bool stores : {false, true}) {
      bool again = true;
      while (again) again = group_once(b, stores);
    }
  }

  // Finds and builds one group in block b; returns true when it did.
  bool group_once(Id b, bool stores) {
    auto& list = k.blocks[b].insts;
    // (buffer, base) -> scalar accesses in program order
    std::map<std::pair<uint32_t, Id>, std::vector<Access>> runs;
    for (Id id : list) {
      const ir::Inst& in = k.insts[id];
      if (in.op != (stores ? Op::Store : Op::Load) || in.imm != 0) continue;
      if (!stores && !ir::read_only_memory(k, in.sym)) continue;
      Id base;
      int64_t off;
      split(in.operands[0], base, off);
      runs[{in.sym, base}].push_back({id, off});
    }
    for (auto& [key, accesses] : runs) {
      for (int64_t w : {8, 4, 2}) {
        if (int64_t(accesses.size()) < w) continue;
        // Lane offsets 0..w-1 relative to a start s that is a multiple of w, with the base aligned.
        for (const Access& lead : accesses) {
          int64_t s = lead.off;
          bool aligned = multiple_of(key.second, w) || ctx.mutant("vectorize.assume_aligned");
          if (s % w != 0 || !aligned) continue;
          std::vector<Id> lanes(size_t(w), ir::kNone);
          for (const Access& a : accesses)
            if (a.off >= s && a.off < s + w && lanes[size_t(a.off - s)] == ir::kNone) lanes[size_t(a.off - s)] = a.id;
          if (std::count(lanes.begin(), lanes.end(), ir::kNone)) continue;
          if (stores ? build_store_group(b, key.first, lanes) : build_load_group(b, lanes)) return true;
        }
      }
    }
    return false;
  }

  bool build_load_group(Id b, const std::vector<Id>& lanes) {
    auto& list = k.blocks[b].insts;
    // The earliest lane's position is where the group goes.
    size_t first = list.size();
    for (Id l : lanes) first = std::min(first, size_t(std::find(list.begin(), list.end(), l) - list.begin()));
    if (!ctx.allow_rewrite()) return false;
    std::vector<Id> saved = list;
    // First every lane's index computation moves above the group, then the lanes line up.
    size_t to = first;
    for (Id l : lanes)
      for (int o = 0; o < k.insts[l].num_operands; ++o) {
        Id dep = k.insts[l].operands[o];
        if (std::find(list.begin() + long(to), list.end(), dep) == list.end()) continue;
        if (!is_pure_value(k.insts[dep]) || !hoist(b, dep, to)) {
          list = saved;
          return false;
        }
      }
    for (Id l : lanes) {
      list.erase(std::find(list.begin(), list.end(), l));
      list.insert(list.begin() + long(to++), l);
    }
    mark(lanes);
    ctx.stat("vectorize.load_groups");
    ctx.stat("vectorize.lanes", int64_t(lanes.size()));
    return true;
  }

  bool build_store_group(Id b, uint32_t param, const std::vector<Id>& lanes) {
    auto& list = k.blocks[b].insts;
    size_t lo = list.size(), hi = 0;
    for (Id l : lanes) {
      size_t p = size_t(std::find(list.begin(), list.end(), l) - list.begin());
      lo = std::min(lo, p);
      hi = std::max(hi, p);
    }
    for (size_t p = lo; p <= hi; ++p) {
      Id x = list[p];
      if (std::find(lanes.begin(), lanes.end(), x) != lanes.end()) continue;
      if (touches(x, param)) return false;
    }
    if (!ctx.allow_rewrite()) return false;
    // Remove the lanes, then reinsert them in lane order where the last one was.
    std::vector<Id> rest;
    for (Id x : list)
      if (std::find(lanes.begin(), lanes.end(), x) == lanes.end()) rest.push_back(x);
    size_t at = hi + 1 - lanes.size();
    rest.insert(rest.begin() + long(at), lanes.begin(), lanes.end());
    list = rest;
    mark(lanes);
    ctx.stat("vectorize.store_groups");
    ctx.stat("vectorize.lanes", int64_t(lanes.size()));
    return true;
  }

  void mark(const std::vector<Id>& lanes) {
    k.insts[lanes[0]].imm = int64_t(lanes.size());
    for (size_t i = 1; i < lanes.size(); ++i) k.insts[lanes[i]].imm = -int64_t(i);
    changed = true;
  }
};

}  // namespace

bool run_vectorize(ir::Kernel& k, PassContext& ctx) {
  Vectorizer v{k, ctx, false};
  v.block(0);
  return v.changed;
}

}  // namespace iron::passes
