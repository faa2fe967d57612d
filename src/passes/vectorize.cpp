// vectorize: turns provably adjacent, aligned scalar loads and stores into vector groups.
// W consecutive accesses to one buffer at indices B + 0 .. B + W-1 (W = 8, 4 or 2), where B is
// provably a multiple of W, become one group: the lane-0 access is the leader (imm = W) and the
// others follow it immediately as members (imm = -lane). The IR stays scalar — the interpreter
// and every pass read a group as the scalar accesses it is — and the emitters print each group
// as real wide accesses of at most 16 bytes (float4, uint4 of halves, vec4, ...).
// Loads are gathered only from read-only buffers (moving them is then always safe); stores are
// gathered at the last store of the group when nothing between the first and the last touches
// the buffer, synchronizes, or branches into code that might. Allocations are at least 16-byte
// aligned on every backend, so an element offset that is a multiple of W is W-aligned; a buffer
// that declares a smaller alignment (aligned(bytes), checked at dispatch) gets no wider
// accesses than it allows. A base is a multiple of W through constants and arithmetic, and
// through scalar parameters declared multiple_of(k) (also checked at dispatch).
// Does not handle: loads from writable buffers, accesses split across blocks (a tail guarded
// per element stays scalar, which is exactly the tail path), strided or reversed runs, runs
// whose base is not provably aligned, buffers of 8-bit, 64-bit or fp8 elements, 64-bit indices.
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
    out = in.type == DType::U32 ? int64_t(uint32_t(in.attr(ir::Attr::Value))) : int64_t(int32_t(in.attr(ir::Attr::Value)));
    return true;
  }

  // Groups are formed over buffers of f32, f16, bf16, i32 and u32 (and T or W when every dtype
  // it may take is one of them) indexed by i32 or u32 values, the element and index types the
  // dialects' wide accesses spell; 8-bit, 64-bit and fp8 buffers and 64-bit indices stay scalar.
  static bool wide_element(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::I32 || t == DType::U32;
  }
  bool groupable(const ir::Inst& in) const {
    if (k.params[in.param()].kind != ir::ParamKind::Buffer) return false;  // a blob's words stay scalar
    DType d = k.params[in.param()].dtype;
    bool element = wide_element(d);
    if (d == DType::Generic || d == DType::GenericW) {
      const std::vector<DType>& takes = d == DType::Generic ? k.dtypes : k.wtypes;
      element = true;
      for (DType t : takes) element = element && wide_element(t);
    }
    DType index = k.insts[in.operands[0]].type.elem();
    return element && (index == DType::I32 || index == DType::U32);
  }

  // True when value v is provably a multiple of m (m a power of two), declared facts included.
  bool multiple_of(Id v, int64_t m) const { return known_multiple_of(k, v, m); }

  // Whether buffer p's alignment (declared, else the 16 bytes of every allocation) covers a
  // group of w elements: the emitters split a group into accesses of at most 16 bytes, each at
  // a multiple of its own size from a w-aligned element, so min(w x element, 16) bytes must be.
  bool align_allows(uint32_t p, int64_t w) const {
    const ir::Param& prm = k.params[p];
    const uint64_t align = ir::assumed_align(prm);
    std::vector<DType> concrete;
    if (prm.dtype == DType::Generic) concrete = k.dtypes;
    else concrete.push_back(prm.dtype);
    for (DType t : concrete)
      if (std::min<uint64_t>(uint64_t(w) * dtype_size(t), 16) > align) return false;
    return true;
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

  // Everything a group move needs is computed on the block as it stands at the start of a
  // phase (loads, then stores); the block is then rebuilt once. Linear in the block size plus
  // the size of the groups' index expressions.
  std::vector<uint32_t> pos;   // inst -> index in the block being rebuilt (UINT32_MAX: elsewhere)
  std::vector<uint32_t> dest;  // moved value -> the position it is now emitted before
  std::vector<uint8_t> used;   // access already in a group
  std::vector<uint8_t> seen;   // scratch of needed_after, cleared after each use

  // Collects, in `deps`, the in-block values after position `anchor` that `id` needs, through
  // pure values only; false when one of them is not pure (it cannot move).
  bool needed_after(Id id, uint32_t anchor, std::vector<Id>& deps, std::vector<uint8_t>& seen) const {
    const ir::Inst& in = k.insts[id];
    for (int o = 0; o < in.num_operands(); ++o) {
      Id dep = in.operands[o];
      // The lane at the anchor itself counts as after it: the moved values go before it.
      if (dep >= pos.size() || pos[dep] == UINT32_MAX || pos[dep] < anchor || seen[dep]) continue;
      if (!is_pure_value(k.insts[dep])) return false;
      seen[dep] = 1;
      if (!needed_after(dep, anchor, deps, seen)) return false;
      deps.push_back(dep);
    }
    return true;
  }

  bool touches(Id inst, uint32_t param) const {
    bool hit = false;
    const ir::Inst& in = k.insts[inst];
    auto check = [&](Id x) {
      const ir::Inst& y = k.insts[x];
      if ((y.op == Op::Load || y.op == Op::Store || y.op == Op::TileLoad || y.op == Op::TileStore ||
           ir::is_global_atomic(y.op) || y.op == Op::AtomicAddPair || y.op == Op::AsyncCopy ||
           y.op == Op::BulkCopy || y.op == Op::BulkStore) &&
          y.param() == param)
        hit = true;
      // A tensor-map copy reaches a buffer through its map, which may be any buffer of the dispatch.
      if (y.op == Op::Barrier || y.op == Op::Call || y.op == Op::FenceThreadgroup || y.op == Op::FenceDevice ||
          ir::is_mbar_op(y.op) || y.op == Op::TmaLoad2D || y.op == Op::TmaStore2D)
        hit = true;
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
    for (bool stores : {false, true}) phase(b, stores);
  }

  // Builds every group of one kind in block b, then rebuilds the block once.
  void phase(Id b, bool stores) {
    const std::vector<Id> list = k.blocks[b].insts;
    if (pos.size() < k.insts.size()) pos.resize(k.insts.size(), UINT32_MAX);
    if (dest.size() < k.insts.size()) dest.resize(k.insts.size(), UINT32_MAX);
    for (size_t p = 0; p < list.size(); ++p) pos[list[p]] = uint32_t(p);
    // (buffer, base) -> scalar accesses in program order
    std::map<std::pair<uint32_t, Id>, std::vector<Access>> runs;
    for (Id id : list) {
      const ir::Inst& in = k.insts[id];
      if (in.op != (stores ? Op::Store : Op::Load) || in.has(ir::Attr::Vec) || in.has(ir::Attr::Lane)) continue;
      if (!stores && !ir::read_only_memory(k, in.param())) continue;
      if (!groupable(in)) continue;
      Id base;
      int64_t off;
      split(in.operands[0], base, off);
      runs[{in.param(), base}].push_back({id, off});
    }
    // Stores: per buffer, the positions of the instructions that touch it (or synchronize),
    // so "nothing between the first and the last lane touches the buffer" is a count.
    std::map<uint32_t, std::vector<uint32_t>> touching;
    if (stores) {
      for (const auto& [key, accesses] : runs) touching.emplace(key.first, std::vector<uint32_t>{});
      for (size_t p = 0; p < list.size(); ++p)
        for (auto& [param, where] : touching)
          if (touches(list[p], param)) where.push_back(uint32_t(p));
    }
    if (used.size() < k.insts.size()) used.resize(k.insts.size(), 0);
    if (seen.size() < k.insts.size()) seen.resize(k.insts.size(), 0);
    std::vector<std::vector<Id>> moved_before(list.size());  // position -> what goes before it
    std::vector<uint8_t> skip(list.size(), 0);
    std::vector<std::vector<Id>> store_at(list.size());  // position of the last lane -> lanes
    bool any = false;
    for (auto& [key, accesses] : runs) {
      for (int64_t w : {8, 4, 2}) {
        if (int64_t(accesses.size()) < w) continue;
        if (!align_allows(key.first, w)) continue;
        bool aligned = multiple_of(key.second, w) || ctx.mutant("vectorize.assume_aligned");
        if (!aligned) continue;
        std::map<int64_t, std::vector<Id>> by_off;  // offset -> unused accesses in program order
        for (const Access& a : accesses)
          if (!used[a.id]) by_off[a.off].push_back(a.id);
        for (const Access& lead : accesses) {
          int64_t st = lead.off;
          if (used[lead.id] || st % w != 0) continue;
          std::vector<Id> lanes(size_t(w), ir::kNone);
          for (int64_t l = 0; l < w; ++l) {
            auto it = by_off.find(st + l);
            if (it == by_off.end()) break;
            for (Id c : it->second)
              if (!used[c]) {
                lanes[size_t(l)] = c;
                break;
              }
          }
          if (std::count(lanes.begin(), lanes.end(), ir::kNone)) continue;
          if (stores ? plan_store_group(lanes, touching[key.first], skip, store_at)
                     : plan_load_group(lanes, skip, moved_before, seen)) {
            for (Id l : lanes) used[l] = 1;
            mark(lanes);
            any = true;
          }
        }
      }
    }
    if (any) {
      std::vector<Id> out;
      out.reserve(list.size());
      for (size_t p = 0; p < list.size(); ++p) {
        for (Id x : moved_before[p]) out.push_back(x);
        if (!skip[p]) out.push_back(list[p]);
        for (Id x : store_at[p]) out.push_back(x);
      }
      k.blocks[b].insts = std::move(out);
    }
    for (Id id : list) pos[id] = UINT32_MAX;  // used[] stays set: grouped accesses are marked
  }

  // A load group goes where its earliest lane is: first the pure index computations the lanes
  // need that sit after that point, then the lanes in lane order.
  bool plan_load_group(const std::vector<Id>& lanes, std::vector<uint8_t>& skip,
                       std::vector<std::vector<Id>>& moved_before, std::vector<uint8_t>& seen) {
    uint32_t anchor = UINT32_MAX;
    for (Id l : lanes) anchor = std::min(anchor, pos[l]);
    std::vector<Id> deps;
    bool ok = true;
    for (Id l : lanes) ok = ok && needed_after(l, anchor, deps, seen);
    for (Id d : deps) seen[d] = 0;
    if (!ok || !ctx.allow_rewrite()) return false;
    std::sort(deps.begin(), deps.end(), [&](Id a, Id c) { return pos[a] < pos[c]; });
    auto& dst = moved_before[anchor];
    for (Id d : deps) {
      if (skip[pos[d]]) {
        // Moved up already, by a group whose anchor may lie after this one: take it from there.
        if (dest[d] <= anchor) continue;
        auto& from = moved_before[dest[d]];
        from.erase(std::find(from.begin(), from.end(), d));
      }
      skip[pos[d]] = 1;
      dest[d] = anchor;
      dst.push_back(d);
    }
    for (Id l : lanes) {
      skip[pos[l]] = 1;
      dst.push_back(l);
    }
    ctx.stat("vectorize.load_groups");
    ctx.stat("vectorize.lanes", int64_t(lanes.size()));
    return true;
  }

  // A store group goes where its last lane is, in lane order, when nothing between its first
  // and last lane touches the buffer or synchronizes.
  bool plan_store_group(const std::vector<Id>& lanes, const std::vector<uint32_t>& touching, std::vector<uint8_t>& skip,
                        std::vector<std::vector<Id>>& store_at) {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (Id l : lanes) {
      lo = std::min(lo, pos[l]);
      hi = std::max(hi, pos[l]);
    }
    auto first = std::lower_bound(touching.begin(), touching.end(), lo);
    auto last = std::upper_bound(touching.begin(), touching.end(), hi);
    if (size_t(last - first) != lanes.size()) return false;  // something else touches it in between
    if (!ctx.allow_rewrite()) return false;
    for (Id l : lanes) skip[pos[l]] = 1;
    store_at[hi] = lanes;
    ctx.stat("vectorize.store_groups");
    ctx.stat("vectorize.lanes", int64_t(lanes.size()));
    return true;
  }

  void mark(const std::vector<Id>& lanes) {
    k.insts[lanes[0]].set(ir::Attr::Vec, int64_t(lanes.size()));
    for (size_t i = 1; i < lanes.size(); ++i) k.insts[lanes[i]].set(ir::Attr::Lane, int64_t(i));
    changed = true;
  }
};

}  // namespace

bool run_vectorize(ir::Kernel& k, PassContext& ctx) {
  Vectorizer v{k, ctx, false, {}, {}, {}, {}};
  v.block(0);
  return v.changed;
}

}  // namespace iron::passes
