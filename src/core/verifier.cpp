// The IR verifier: structure (ids, blocks, scoping) and type rules. Every problem is collected
// with the instruction's DSL location; nothing is thrown, so one run shows all of them.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/ir.hpp"
#include "core/numeric.hpp"

namespace iron::ir {
namespace {

// The integer dtypes lane operations and atomics are defined on: i32 and u32, the 32-bit words.
bool word_int(DType d) { return d == DType::I32 || d == DType::U32; }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

struct Verifier {
  const Kernel& k;
  Diagnostics& d;
  std::vector<uint8_t> visible;     // value id -> currently in scope
  std::vector<uint8_t> block_seen;  // block id -> referenced already
  std::vector<uint8_t> inst_seen;   // inst id -> placed already
  std::vector<Id> mbar_arrays;      // threadgroup arrays named by mbarrier ops

  void err(const Inst& in, const std::string& msg) {
    std::string text = std::string("'") + mnemonic(in.op) + "': " + msg;
    if (subst != DType::Void && in.type == DType::Generic) text += std::string(" (with T = ") + dtype_name(subst) + ")";
    // The per-dtype passes over a generic kernel find a dtype-independent error once each.
    for (const Diagnostic& x : d.items)
      if (x.loc.file == in.loc.file && x.loc.line == in.loc.line && x.message == text) return;
    d.error(in.loc, std::move(text));
  }

  // The dtype T stands for while the type rules run: a generic kernel is checked once per
  // declared dtype (T = i8 must obey the integer rules, T = f8e4m3 the storage-only rule);
  // Void outside that loop (T then counts as a float).
  DType subst = DType::Void;
  DType sub(DType t) const { return t == DType::Generic && subst != DType::Void ? subst : t; }
  DType ty(Id v) const { return sub(k.insts[v].type.elem()); }

  // Attributes against the op's schema (op_attrs.def): no unknown or repeated key, every
  // required one present, references in range.
  void check_attrs(const Inst& in) {
    const AttrSchema& schema = attr_schema(in.op);
    auto allowed = [&](Attr a) {
      for (uint8_t i = 0; i < schema.count; ++i)
        if (schema.slots[i].attr == a) return true;
      return false;
    };
    for (size_t i = 0; i < in.attrs.size(); ++i) {
      const AttrEntry& e = in.attrs[i];
      if (size_t(e.key) >= size_t(Attr::Count_)) {
        err(in, "carries an attribute with an invalid key");
        continue;
      }
      const AttrInfo& info = attr_info(e.key);
      if (!allowed(e.key)) err(in, std::string("takes no attribute '") + info.name + "'");
      for (size_t j = 0; j < i; ++j)
        if (in.attrs[j].key == e.key) err(in, std::string("carries attribute '") + info.name + "' twice");
      if (info.kind == AttrKind::ParamRef && (e.i < 0 || uint64_t(e.i) >= k.params.size()))
        err(in, std::string("attribute '") + info.name + "' names no parameter");
      if (info.kind == AttrKind::String && (e.i < 0 || uint64_t(e.i) >= k.strings.size()))
        err(in, std::string("attribute '") + info.name + "' names no string");
    }
    for (uint8_t i = 0; i < schema.count; ++i)
      if (schema.slots[i].required && !in.has(schema.slots[i].attr))
        err(in, std::string("needs attribute '") + attr_info(schema.slots[i].attr).name + "'");
  }

  // Every op of today's table computes on scalars: a vector, fragment or token value reaching
  // one is rejected here, before the scalar type rules run.
  // A packed 16-bit pair op: pair, pair_get, or an element-wise op whose result is a pair.
  static bool pair_op(Op op) {
    switch (op) {
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Fma: case Op::Min: case Op::Max: case Op::Neg: case Op::Abs:
        return true;
      default:
        return false;
    }
  }
  bool is_pair_inst(const Inst& in) const {
    return in.op == Op::Pair || in.op == Op::PairGet || (pair_op(in.op) && in.type.is_vector());
  }
  // The rules of the pair ops: a pair is vec2 of f16 or bf16 (T or W only when every dtype it
  // takes is one of them); element-wise ops take pairs of the result's type.
  void pair_types(const Inst& in) {
    auto pair_ok = [&](Type t, const char* what) {
      if (!t.is_vector() || t.lanes() != 2) {
        err(in, std::string(what) + " is " + type_name(t) + ", not a vec2 pair");
        return false;
      }
      const DType e = sub(t.elem());
      if (e != DType::F16 && e != DType::BF16) {
        err(in, std::string("pairs hold f16 or bf16, not ") + dtype_name(e) + " (" + type_name(t) + ")");
        return false;
      }
      return true;
    };
    if (in.op == Op::Pair) {
      if (!pair_ok(in.type, "the result")) return;
      for (int i = 0; i < 2; ++i) {
        const Type o = k.insts[in.operands[i]].type;
        if (!o.is_scalar() || o.elem() != in.type.elem())
          err(in, "operand " + std::to_string(i) + " is " + type_name(o) + ", not the pair's element " +
                      dtype_name(in.type.elem()));
      }
      return;
    }
    if (in.op == Op::PairGet) {
      const Type o = k.insts[in.operands[0]].type;
      if (!pair_ok(o, "operand 0")) return;
      if (!in.type.is_scalar() || in.type.elem() != o.elem())
        err(in, "result must be " + std::string(dtype_name(o.elem())) + ", is " + type_name(in.type));
      if (in.attr(Attr::Index) != 0 && in.attr(Attr::Index) != 1)
        err(in, "index " + std::to_string(in.attr(Attr::Index)) + " is not 0 or 1");
      return;
    }
    if (!pair_ok(in.type, "the result")) return;
    for (int i = 0; i < in.num_operands(); ++i)
      if (k.insts[in.operands[i]].type != in.type)
        err(in, "operand " + std::to_string(i) + " is " + type_name(k.insts[in.operands[i]].type) + " but the result is " +
                    type_name(in.type));
  }

  bool check_kinds(const Inst& in) {
    if (is_tile_op(in.op)) return true;  // tile_types checks every operand's kind itself
    if (in.op == Op::Var || in.op == Op::VarLoad || in.op == Op::VarStore) return check_var_kinds(in);
    if (is_pair_inst(in)) return true;  // pair_types checks them
    bool ok = true;
    if (!in.type.is_void() && !in.type.is_scalar()) {
      err(in, "produces a " + type_name(in.type) + " value; this op computes on scalars only");
      ok = false;
    }
    for (int i = 0; i < in.num_operands(); ++i) {
      Type t = k.insts[in.operands[i]].type;
      if (!t.is_void() && !t.is_scalar()) {
        err(in, "operand " + std::to_string(i) + " is a " + type_name(t) + " value; this op takes scalars only");
        ok = false;
      }
    }
    return ok;
  }

  bool numeric(DType t) const { return is_float(t) || is_integer(t); }

  // --- Cooperative tiles (docs/semantics.md "Cooperative tiles") ---
  // A variable may hold a scalar or a fragment (an accumulator carried across a loop).
  bool check_var_kinds(const Inst& in) {
    bool ok = true;
    auto allowed = [](Type t) { return t.is_void() || t.is_scalar() || t.is_fragment(); };
    if (!allowed(in.type)) {
      err(in, "produces a " + type_name(in.type) + " value; a variable holds a scalar or a fragment");
      ok = false;
    }
    for (int i = 0; i < in.num_operands(); ++i)
      if (!allowed(k.insts[in.operands[i]].type)) {
        err(in, "operand " + std::to_string(i) + " is a " + type_name(k.insts[in.operands[i]].type) +
                    " value; a variable holds a scalar or a fragment");
        ok = false;
      }
    return ok;
  }
  // The fragment shapes and element types every backend lowers (docs/dsl.md "Cooperative tiles").
  // `wide`: an accumulator may also be a warpgroup one, 16 x N x 16 with N a multiple of 16 up
  // to 256 (the ops that fill, store, read and wgmma-accumulate it; docs/semantics.md "Warpgroup
  // tiles"); the lane-group product (tile_mma) takes 16x16 accumulators only.
  bool tile_type_ok(const Inst& in, Type t, FragRole role, const char* what, bool wide = false) {
    static const char* roles[] = {"a", "b", "acc"};
    if (!t.is_fragment() || t.role() != role) {
      err(in, std::string(what) + " must be a frag<" + roles[int(role)] + ", ...>, is " + type_name(t));
      return false;
    }
    if (wide && role == FragRole::Acc && t.m() == 16 && (t.k() == 16 || t.k() == 32) && t.n() != 16) {
      if (t.n() % 16 != 0 || t.n() > 256) {
        err(in, std::string(what) + " has tile shape 16x" + std::to_string(t.n()) + "x" + std::to_string(t.k()) +
                    "; a warpgroup accumulator is 16xNx16 with N a multiple of 16 up to 256 (16xNx32 for fp8 products)");
        return false;
      }
      if (t.elem() != DType::F32) {
        err(in, std::string(what) + " accumulates in " + dtype_name(t.elem()) + "; accumulators are f32");
        return false;
      }
      return true;
    }
    if (t.m() != 16 || t.n() != 16 || (t.k() != 16 && t.k() != 32)) {
      err(in, std::string(what) + " has tile shape " + std::to_string(t.m()) + "x" + std::to_string(t.n()) + "x" +
                  std::to_string(t.k()) + "; cooperative tiles are 16x16x16, or 16x16x32 for f8e4m3 and f8e5m2");
      return false;
    }
    // 16x16x32 takes fp8 inputs (f8e4m3, f8e5m2), and fp8 inputs take 16x16x32.
    if (role != FragRole::Acc && (t.k() == 32) != is_fp8(t.elem())) {
      err(in, std::string(what) + " is " + type_name(t) +
                  "; fp8 tiles (f8e4m3, f8e5m2) are 16x16x32 and 16x16x32 tiles are fp8");
      return false;
    }
    if (role != FragRole::Acc && is_fp8(t.elem())) return true;
    if (role == FragRole::Acc) {
      if (t.elem() != DType::F32) {
        err(in, std::string(what) + " accumulates in " + dtype_name(t.elem()) + "; accumulators are f32");
        return false;
      }
      return true;
    }
    if (is_type_param(t.elem())) {
      const bool w = t.elem() == DType::GenericW;
      for (DType d : w ? k.wtypes : k.dtypes)
        if (d != DType::F16 && d != DType::BF16) {
          err(in, std::string(what) + " has element type " + (w ? "W" : "T") + ", which the kernel declares as " +
                      dtype_name(d) +
                      "; tile inputs are f16 or bf16");
          return false;
        }
      return true;
    }
    if (t.elem() != DType::F16 && t.elem() != DType::BF16) {
      err(in, std::string(what) + " has element type " + dtype_name(t.elem()) + "; tile inputs are f16 or bf16");
      return false;
    }
    return true;
  }
  void tile_u32(const Inst& in, int i, const char* what) {
    Type t = k.insts[in.operands[i]].type;
    if (!t.is_scalar() || t.elem() != DType::U32) err(in, std::string(what) + " must be u32, is " + type_name(t));
  }
  const Inst* tile_alloc(const Inst& in, int i) {
    const Inst& a = k.insts[in.operands[i]];
    if (a.op != Op::TgAlloc) {
      err(in, "operand " + std::to_string(i) + " is not a threadgroup allocation");
      return nullptr;
    }
    return &a;
  }
  // A threadgroup alias: a view of a fixed-size allocation's bytes [offset, offset + count *
  // size), 16-byte aligned, inside it (docs/semantics.md "Threadgroup aliases").
  void alias(const Inst& in) {
    if (!in.has(Attr::Alias)) {
      if (in.has(Attr::Offset)) err(in, "has a byte offset but views no allocation (offset goes with alias)");
      return;
    }
    const std::string name = uint64_t(in.attr(Attr::Name)) < k.strings.size() ? k.strings[size_t(in.attr(Attr::Name))] : "?";
    const std::string base_name =
        uint64_t(in.attr(Attr::Alias)) < k.strings.size() ? k.strings[size_t(in.attr(Attr::Alias))] : "?";
    const Id base = tg_alias_base(k, in);
    if (base == kNone) {
      err(in, "threadgroup alias '" + name + "' views '" + base_name +
                  "', which is no threadgroup allocation of this kernel (an alias views an allocation, not another alias)");
      return;
    }
    const Inst& b = k.insts[base];
    if (!in.has(Attr::Offset)) err(in, "threadgroup alias '" + name + "' needs a byte offset");
    if (in.has(Attr::CountParam) || b.has(Attr::CountParam))
      err(in, "threadgroup alias '" + name + "': an alias and the allocation it views have fixed sizes (not sized at dispatch)");
    if (in.has(Attr::Align)) err(in, "threadgroup alias '" + name + "' takes no alignment (its offset places it)");
    const int64_t off = in.attr(Attr::Offset);
    if (off % 16 != 0)
      err(in, "threadgroup alias '" + name + "' starts at byte " + std::to_string(off) + " of '" + base_name +
                  "', not a multiple of 16");
    const DType et = sub(in.type.elem()), bt = sub(b.type.elem());
    if (is_type_param(et) || is_type_param(bt) || et == DType::Void || bt == DType::Void) return;
    const uint64_t end = uint64_t(off) + uint64_t(std::max<int64_t>(in.attr(Attr::Count), 0)) * dtype_size(et);
    const uint64_t have = uint64_t(std::max<int64_t>(b.attr(Attr::Count), 0)) * dtype_size(bt);
    if (end > have)
      err(in, "threadgroup alias '" + name + "' covers bytes " + std::to_string(off) + " to " + std::to_string(end) +
                  " of '" + base_name + "', which has " + std::to_string(have) + " bytes");
  }

  // Every access to a threadgroup allocation with aliases, in program order (a loop body twice,
  // for its next iteration; the two arms of an if each from the state before it, merged after):
  // an access through one view that follows an access through another view of the same memory
  // since the last barrier, one of the two a write, is an error naming both. The interpreter
  // checks the same rule on the accesses a run makes (docs/semantics.md).
  struct ViewAccess {
    Id op = kNone;
    bool wrote = false;
  };
  using AliasState = std::map<Id, std::map<Id, ViewAccess>>;  // base -> view -> last access
  std::map<Id, Id> alias_group = {};                          // view (alias or base) -> base
  std::set<std::pair<Id, Id>> alias_reported = {};
  static bool writes_tg(Op op) {
    return op == Op::TgStore || op == Op::TileTgStore || op == Op::AsyncCopy || is_tg_atomic(op);
  }
  static bool accesses_tg(Op op) {
    return op == Op::TgLoad || op == Op::TileTgLoad || op == Op::TileWgMma || op == Op::TileWgMmaRs ||
           op == Op::TileScaleAdd || writes_tg(op);
  }
  void alias_block(Id b, AliasState& st, int depth) {
    if (b == kNone || b >= k.blocks.size() || depth > 64) return;
    for (Id id : k.blocks[b].insts) {
      if (id >= k.insts.size()) continue;
      const Inst& in = k.insts[id];
      if (in.op == Op::Barrier) {
        st.clear();
      } else if (in.op == Op::If) {
        AliasState t = st, e = st;
        alias_block(in.blocks[0], t, depth + 1);
        alias_block(in.blocks[1], e, depth + 1);
        st = t;
        for (auto& [g, views] : e)
          for (auto& [v, a] : views) {
            ViewAccess& x = st[g][v];
            x.wrote = x.wrote || a.wrote;
            if (x.op == kNone) x.op = a.op;
          }
      } else if (in.op == Op::For) {
        AliasState body = st;
        alias_block(in.blocks[0], body, depth + 1);
        alias_block(in.blocks[0], body, depth + 1);  // the next iteration after this one
        for (auto& [g, views] : body)
          for (auto& [v, a] : views) {
            ViewAccess& x = st[g][v];
            x.wrote = x.wrote || a.wrote;
            if (x.op == kNone) x.op = a.op;
          }
      } else if (accesses_tg(in.op) && !in.operands.empty() && alias_group.count(in.operands[0])) {
        const Id view = in.operands[0], g = alias_group[view];
        const bool wr = writes_tg(in.op);
        for (auto& [other, a] : st[g]) {
          if (other == view || !(a.wrote || wr) || !alias_reported.insert({a.op, id}).second) continue;
          const auto name = [&](Id v) { return k.strings[size_t(k.insts[v].attr(Attr::Name))]; };
          err(in, std::string(wr ? "writes" : "reads") + " threadgroup memory through '" + name(view) + "' after " +
                      (a.wrote ? "a write" : "a read") + " of it through '" + name(other) + "' at " +
                      k.where(k.insts[a.op].loc) + " with no barrier between (views of the same bytes take turns "
                      "across a barrier)");
        }
        ViewAccess& x = st[g][view];
        x.op = id;
        x.wrote = x.wrote || wr;
      }
    }
  }
  void alias_barriers() {
    for (Id a : threadgroup_aliases(k)) {
      const Id base = tg_alias_base(k, k.insts[a]);
      if (base == kNone) continue;
      alias_group[a] = base;
      alias_group[base] = base;
    }
    if (alias_group.empty()) return;
    AliasState st;
    alias_block(0, st, 0);
  }

  const Param* tile_buffer(const Inst& in) {
    if (in.param() >= k.params.size() || k.params[in.param()].kind != ParamKind::Buffer) {
      err(in, "names no buffer parameter");
      return nullptr;
    }
    return &k.params[in.param()];
  }
  void tile_types(const Inst& in) {
    auto op_type = [&](int i) { return k.insts[in.operands[i]].type; };
    switch (in.op) {
      case Op::TileFill:
        tile_type_ok(in, in.type, FragRole::Acc, "the result", true);
        if (op_type(0) != Type(DType::F32)) err(in, "the fill value must be f32, is " + type_name(op_type(0)));
        break;
      case Op::TileLoad: case Op::TileTgLoad: {
        const bool tg = in.op == Op::TileTgLoad;
        const FragRole role = in.type.is_fragment() && in.type.role() == FragRole::B ? FragRole::B : FragRole::A;
        if (!tile_type_ok(in, in.type, role, "the result")) break;
        DType src = DType::Void;
        std::string what;
        if (tg) {
          if (const Inst* a = tile_alloc(in, 0)) src = a->type.elem(), what = "threadgroup array";
        } else if (const Param* p = tile_buffer(in)) {
          src = p->dtype, what = "buffer '" + p->name + "'";
          if (p->access == Access::Write) err(in, "reads output-only buffer '" + p->name + "' (declare it inout)");
        }
        if (src != DType::Void && src != in.type.elem())
          err(in, "loads a " + type_name(in.type) + " from a " + dtype_name(src) + " " + what +
                      " (the memory must hold the fragment's element type)");
        tile_u32(in, tg ? 1 : 0, "the offset");
        tile_u32(in, tg ? 2 : 1, "the row stride");
        if (in.has(Attr::ColMajor) && in.attr(Attr::ColMajor) != 0 && in.attr(Attr::ColMajor) != 1)
          err(in, "col_major must be 0 or 1, is " + std::to_string(in.attr(Attr::ColMajor)));
        if (in.has(Attr::Swizzle) && !swizzle_code_valid(in.attr(Attr::Swizzle)))
          err(in, "swizzle " + std::to_string(in.attr(Attr::Swizzle)) +
                      " is not 100 * bits + 10 * base + shift with bits 1..3 and shift >= bits");
        break;
      }
      case Op::TileMma:
        tile_type_ok(in, in.type, FragRole::Acc, "the result");
        if (tile_type_ok(in, op_type(0), FragRole::A, "operand 0") &&
            tile_type_ok(in, op_type(1), FragRole::B, "operand 1") && op_type(0).elem() != op_type(1).elem())
          err(in, "multiplies " + type_name(op_type(0)) + " by " + type_name(op_type(1)) + " (one element type)");
        if (tile_type_ok(in, op_type(2), FragRole::Acc, "operand 2") && op_type(0).is_fragment() &&
            (op_type(0).k() != op_type(2).k() || in.type.k() != op_type(2).k()))
          err(in, "multiplies " + type_name(op_type(0)) + " into a " + type_name(op_type(2)) + " (one tile shape)");
        break;
      case Op::TileWgMma: case Op::TileWgMmaRs: {
        // A warpgroup's product through wgmma matrix descriptors: both operands of one type in
        // threadgroup arrays on a 1024-byte boundary, K-major under a swizzle the descriptor
        // expresses for their element size (16-bit floats: k 16; fp8: k 32) (docs/semantics.md
        // "Warpgroup tiles"); or, tile_wg_mma_rs, A the lane group's own 16-bit A fragment.
        const bool rs = in.op == Op::TileWgMmaRs;
        const int acc = rs ? 3 : 4;
        const int64_t code = in.has(Attr::Swizzle) ? in.attr(Attr::Swizzle) : 0;
        const bool valid_code = wgmma_row_bytes(code) != 0;
        const bool fp8_code = valid_code && wgmma_elem_bytes(code) == 1;
        if (!valid_code)
          err(in, "swizzle " + std::to_string(code) +
                      " is not one a wgmma matrix descriptor expresses: {1, 3, 3}, {2, 3, 3} or {3, 3, 3} for 16-bit "
                      "elements, {1, 4, 3}, {2, 4, 3} or {3, 4, 3} for fp8 (the 32-, 64- and 128-byte modes); an "
                      "unswizzled or padded tile cannot be described");
        const uint32_t K = valid_code ? wgmma_k(code) : 16;
        // The accumulator is 16 x N per lane group (m64nNkK for the warpgroup, B N x K), and the
        // result has its type.
        tile_type_ok(in, in.type, FragRole::Acc, "the result", true);
        if (tile_type_ok(in, op_type(acc), FragRole::Acc, ("operand " + std::to_string(acc)).c_str(), true)) {
          if (op_type(acc).k() != K)
            err(in, "accumulates into a " + type_name(op_type(acc)) + "; a warpgroup tile of " +
                        (fp8_code ? "fp8 A and B is k 32" : "16-bit A and B is k 16") + " (frag<acc, f32, 16xNx" +
                        std::to_string(K) + ">)");
          else if (in.type != op_type(acc))
            err(in, "produces a " + type_name(in.type) + " from a " + type_name(op_type(acc)) + " accumulator (one type)");
        }
        auto elem_ok = [&](DType e) {
          return fp8_code ? is_fp8(e) : (e == DType::F16 || e == DType::BF16 || e == DType::Generic);
        };
        const char* takes = fp8_code ? "f8e4m3 or f8e5m2 under this fp8 swizzle"
                                     : "f16 or bf16 (or T) under this swizzle; fp8 takes {bits, 4, 3}";
        DType elem[2] = {DType::Void, DType::Void};
        if (rs && tile_type_ok(in, op_type(0), FragRole::A, "operand 0")) {
          elem[0] = op_type(0).elem();
          if (is_fp8(elem[0]))
            err(in, "A is a " + type_name(op_type(0)) + "; an fp8 warpgroup product takes A from threadgroup memory "
                        "(tile_wg_mma), not from registers");
          else if (!elem_ok(elem[0]))
            err(in, "A is a " + type_name(op_type(0)) + "; wgmma operands here are " + takes);
        }
        for (int i = rs ? 1 : 0; i < 2; ++i) {
          const char* role = i == 0 ? "A" : "B";
          const int at = rs ? 1 : 2 * i;
          if (const Inst* a = tile_alloc(in, at)) {
            elem[i] = a->type.elem();
            if (valid_code && !elem_ok(elem[i]))
              err(in, std::string(role) + "'s threadgroup array holds " + dtype_name(elem[i]) + "; wgmma operands here are " +
                          takes);
            if (a->has(Attr::Alias))
              err(in, std::string(role) + "'s threadgroup array is an alias; a wgmma operand names an allocation of its own");
            else if (a->attr(Attr::Align) < 1024)
              err(in, std::string(role) + "'s threadgroup array is aligned to " + std::to_string(std::max<int64_t>(a->attr(Attr::Align), 0)) +
                          " bytes; a wgmma matrix descriptor's swizzle needs 1024 (threadgroup_alloc(name, T, count, 1024))");
          }
          tile_u32(in, at + 1, i == 0 ? "A's offset" : "B's offset");
        }
        if (elem[0] != DType::Void && elem[1] != DType::Void && elem[0] != elem[1])
          err(in, std::string("multiplies ") + dtype_name(elem[0]) + " by " + dtype_name(elem[1]) + " (one element type)");
        if (in.has(Attr::Async) && in.attr(Attr::Async) != 0 && in.attr(Attr::Async) != 1)
          err(in, "async must be 0 or 1, is " + std::to_string(in.attr(Attr::Async)));
        break;
      }
      case Op::TileStore: case Op::TileTgStore: {
        const bool tg = in.op == Op::TileTgStore;
        if (tg) {
          if (const Inst* a = tile_alloc(in, 0); a && a->type.elem() != DType::F32)
            err(in, std::string("stores an f32 accumulator into ") + dtype_name(a->type.elem()) + " threadgroup memory");
        } else if (const Param* p = tile_buffer(in)) {
          if (p->access == Access::Read) err(in, "writes input buffer '" + p->name + "' (declare it out or inout)");
          if (p->dtype != DType::F32)
            err(in, "stores an f32 accumulator into buf<" + std::string(dtype_name(p->dtype)) + "> '" + p->name + "'");
        }
        tile_type_ok(in, op_type(tg ? 1 : 0), FragRole::Acc, "the stored fragment", true);
        tile_u32(in, tg ? 2 : 1, "the offset");
        tile_u32(in, tg ? 3 : 2, "the row stride");
        break;
      }
      case Op::TileScaleAdd:
        // tile_scale_add %alloc, %off, %x, %acc: both fragments f32 accumulators of the result's
        // type (16 x 16, or a warpgroup accumulator's 16 x N), the row scales an f32 threadgroup array.
        tile_type_ok(in, in.type, FragRole::Acc, "the result", true);
        if (const Inst* a = tile_alloc(in, 0); a && a->type.elem() != DType::F32)
          err(in, std::string("reads its row scales from ") + dtype_name(a->type.elem()) +
                      " threadgroup memory (the scales are f32)");
        tile_u32(in, 1, "the offset");
        for (int i = 2; i < 4; ++i)
          if (tile_type_ok(in, op_type(i), FragRole::Acc, i == 2 ? "operand 2" : "operand 3", true) && in.type.is_fragment() &&
              op_type(i) != in.type)
            err(in, "adds a " + type_name(op_type(i)) + " into a " + type_name(in.type) + " (one accumulator type)");
        break;
      case Op::TileGet:
        if (in.type != Type(DType::F32)) err(in, "result must be f32, is " + type_name(in.type));
        if (tile_type_ok(in, op_type(0), FragRole::Acc, "operand 0", true) &&
            (in.attr(Attr::Row) < 0 || in.attr(Attr::Row) >= op_type(0).m() || in.attr(Attr::Col) < 0 ||
             in.attr(Attr::Col) >= op_type(0).n()))
          err(in, "element (" + std::to_string(in.attr(Attr::Row)) + ", " + std::to_string(in.attr(Attr::Col)) +
                      ") is outside the " + std::to_string(op_type(0).m()) + "x" + std::to_string(op_type(0).n()) +
                      " tile");
        break;
      default: break;
    }
  }

  // async_copy<buf, count> %alloc, %dst, %src, %valid: the array and the buffer hold one dtype
  // (the copy moves bytes), count elements make 4, 8 or 16 bytes at every dtype T may take, the
  // indices and the valid count are u32, the buffer is readable.
  void async_copy(const Inst& in) {
    const Inst* a = tile_alloc(in, 0);
    const Param* p = tile_buffer(in);
    if (p && p->access == Access::Write) err(in, "reads output-only buffer '" + p->name + "' (declare it inout)");
    if (a && p && a->type.elem() != p->dtype)
      err(in, std::string("copies buf<") + dtype_name(p->dtype) + "> '" + p->name + "' into " +
                  dtype_name(a->type.elem()) + " threadgroup memory (one dtype: the copy moves bytes)");
    tile_u32(in, 1, "the destination index");
    tile_u32(in, 2, "the source index");
    tile_u32(in, 3, "the valid count");
    const int64_t count = in.attr(Attr::Count);
    if (p && count > 0) {
      std::vector<DType> ds{p->dtype};
      if (is_type_param(p->dtype)) ds = p->dtype == DType::GenericW ? k.wtypes : k.dtypes;
      for (DType d : ds) {
        if (d == DType::Bool) {
          err(in, "copies bool elements, whose width differs between buffers and threadgroup memory (copy u8 or u32)");
          continue;
        }
        const int64_t bytes = count * int64_t(dtype_size(d));
        if (bytes != 4 && bytes != 8 && bytes != 16)
          err(in, "copies " + std::to_string(count) + " elements of " + dtype_name(d) + " = " + std::to_string(bytes) +
                      " bytes; an asynchronous copy moves 4, 8 or 16");
      }
    } else if (count <= 0) {
      err(in, "copies " + std::to_string(count) + " elements; an asynchronous copy moves 4, 8 or 16 bytes");
    }
  }

  // The barrier operands of an mbarrier op (operands i, i + 1; bulk_copy: 3, 4): a u64
  // threadgroup array (so 8-byte aligned: an array is aligned to at least its element) and a u32
  // index. Every array an mbarrier op names is collected for the rule that it holds only barriers.
  void mbar_operands(const Inst& in, int i) {
    const Inst& a = k.insts[in.operands[size_t(i)]];
    if (a.op != Op::TgAlloc) {
      err(in, "operand " + std::to_string(i) + " is not a threadgroup allocation (an mbarrier lives in threadgroup memory)");
    } else {
      if (a.type.elem() != DType::U64)
        err(in, std::string("names threadgroup array of ") + dtype_name(a.type.elem()) +
                    " as an mbarrier; mbarriers are u64 elements (8 bytes, 8-byte aligned)");
      if (a.has(Attr::CountParam)) err(in, "names a threadgroup array sized at dispatch as mbarriers (give it a fixed count)");
      mbar_arrays.push_back(in.operands[size_t(i)]);
    }
    tile_u32(in, i + 1, "the barrier index");
  }

  void hopper_op(const Inst& in) {
    if (!in.type.is_void()) err(in, "defines no value");
    switch (in.op) {
      case Op::MbarInit:
        mbar_operands(in, 0);
        tile_u32(in, 2, "the arrival count");
        break;
      case Op::MbarArrive: mbar_operands(in, 0); break;
      case Op::MbarArriveTx:
        mbar_operands(in, 0);
        tile_u32(in, 2, "the transaction byte count");
        break;
      case Op::MbarWait:
        mbar_operands(in, 0);
        tile_u32(in, 2, "the phase parity");
        break;
      case Op::SetMaxNRegInc: case Op::SetMaxNRegDec: {
        const int64_t n = in.attr(Attr::Count);
        if (n < 24 || n > 256 || n % 8 != 0)
          err(in, "setmaxnreg sets " + std::to_string(n) + " registers; the count is a multiple of 8 from 24 to 256");
        break;
      }
      case Op::BulkWait:
        if (in.attr(Attr::Count) < 0 || in.attr(Attr::Count) > 7)
          err(in, "bulk_wait leaves 0 to 7 groups in flight, not " + std::to_string(in.attr(Attr::Count)));
        break;
      case Op::TmaLoad2D: case Op::TmaStore2D: {
        const bool store = in.op == Op::TmaStore2D;
        const char* op = store ? "tma_store_2d" : "tma_load_2d";
        if (in.param() >= k.params.size() || !k.params[in.param()].tensor_map) {
          err(in, std::string(op) + " names " +
                      (in.param() < k.params.size() ? "parameter '" + k.params[in.param()].name + "', which is not" : std::string("no parameter:")) +
                      " a tensor map (tensor_map(name))");
        }
        const Inst* a = tile_alloc(in, 0);
        if (a && a->type.elem() == DType::Bool)
          err(in, std::string(op) + " with threadgroup array of bool, whose width differs between memories (use u8)");
        if (a && a->attr(Attr::Align) < 128)
          err(in, std::string(op) + (store ? " from" : " into") + " threadgroup array '" +
                      k.strings[size_t(a->attr(Attr::Name))] +
                      "', which is not declared 128-byte aligned; a tensor-map copy's threadgroup side is "
                      "(threadgroup_alloc(..., 128); a swizzled box also lands at a multiple of its pattern, up to 1024 bytes)");
        tile_u32(in, 1, store ? "the source index" : "the destination index");
        for (int i : {2, 3}) {
          const Type t = k.insts[in.operands[size_t(i)]].type;
          if (!t.is_scalar() || (t.elem() != DType::U32 && t.elem() != DType::I32))
            err(in, std::string(i == 2 ? "the x coordinate" : "the y coordinate") + " must be i32 or u32 (read as signed), is " +
                        type_name(t));
        }
        if (!store) mbar_operands(in, 4);
        break;
      }
      case Op::BulkCopy: case Op::BulkStore: {
        const bool store = in.op == Op::BulkStore;
        const Inst* a = tile_alloc(in, 0);
        const Param* p = tile_buffer(in);
        if (p && !store && p->access == Access::Write)
          err(in, "reads output-only buffer '" + p->name + "' (declare it inout)");
        if (p && store && p->access == Access::Read) err(in, "writes input buffer '" + p->name + "' (declare it out or inout)");
        if (a && p && a->type.elem() != p->dtype)
          err(in, std::string("copies buf<") + dtype_name(p->dtype) + "> '" + p->name + (store ? "' from " : "' into ") +
                      dtype_name(a->type.elem()) + " threadgroup memory (one dtype: the copy moves bytes)");
        if (a && a->attr(Attr::Align) < 16)  // an element is at most 8 bytes: the declared alignment decides
          err(in, std::string(store ? "copies from" : "copies into") + " threadgroup array '" +
                      k.strings[size_t(a->attr(Attr::Name))] + "', which is not declared 16-byte aligned; a bulk copy's " +
                      (store ? "source" : "destination") + " is (threadgroup_alloc(..., 16))");
        tile_u32(in, 1, store ? "the source index" : "the destination index");
        tile_u32(in, 2, store ? "the destination index" : "the source index");
        if (!store) mbar_operands(in, 3);
        const int64_t count = in.attr(Attr::Count);
        if (p && count > 0) {
          std::vector<DType> ds{p->dtype};
          if (is_type_param(p->dtype)) ds = p->dtype == DType::GenericW ? k.wtypes : k.dtypes;
          for (DType d : ds) {
            const int64_t bytes = count * int64_t(dtype_size(d));
            if (d == DType::Bool)
              err(in, "copies bool elements, whose width differs between buffers and threadgroup memory (copy u8 or u32)");
            else if (bytes % 16 != 0)
              err(in, "copies " + std::to_string(count) + " elements of " + dtype_name(d) + " = " +
                          std::to_string(bytes) + " bytes; a bulk copy moves a multiple of 16 bytes");
          }
        } else if (count <= 0) {
          err(in, "copies " + std::to_string(count) + " elements; a bulk copy moves a multiple of 16 bytes");
        }
        break;
      }
      default: break;
    }
  }

  // An array that an mbarrier op names holds barriers only: no other op reads or writes it.
  void mbar_arrays_hold_only_barriers() {
    if (mbar_arrays.empty()) return;
    std::vector<uint8_t> is_bar(k.insts.size(), 0);
    for (Id a : mbar_arrays) is_bar[a] = 1;
    walk(k, [&](Id id) {
      const Inst& in = k.insts[id];
      if (is_mbar_op(in.op)) return;
      for (size_t i = 0; i < in.operands.size(); ++i) {
        const Id o = in.operands[i];
        if (o >= k.insts.size() || !is_bar[o] || k.insts[o].op != Op::TgAlloc) continue;
        if ((in.op == Op::BulkCopy && i == 3) || (in.op == Op::TmaLoad2D && i == 4)) continue;
        err(in, std::string(mnemonic(in.op)) + " uses threadgroup array '" + k.strings[size_t(k.insts[o].attr(Attr::Name))] +
                    "', which holds mbarriers (only mbarrier ops may touch it)");
      }
    });
  }

  // fp8 is a storage format: values of it are loaded, stored, cast, selected and kept in
  // variables, but never computed with (docs/semantics.md). A T that may become fp8 is too.
  void reject_storage_only(const Inst& in, DType t) {
    if (is_fp8(t)) err(in, std::string("computes with ") + dtype_name(t) + ", a storage format (cast to f32 first)");
  }

  void check_operands(const Inst& in) {
    int arity = op_info(in.op).arity;
    if (arity >= 0 && in.num_operands() != arity) {
      err(in, "expects " + std::to_string(arity) + " operand(s), has " + std::to_string(in.num_operands()));
    }
    for (int i = 0; i < in.num_operands(); ++i) {
      Id v = in.operands[i];
      if (v >= k.insts.size()) {
        err(in, "operand " + std::to_string(i) + " is not a valid value id");
      } else if (!visible[v]) {
        err(in, "operand " + std::to_string(i) + " is used outside the scope that defines it");
      } else if (ty(v) == DType::Void) {
        err(in, "operand " + std::to_string(i) + " has no value");
      }
    }
  }

  bool ok_operands(const Inst& in) const {
    for (int i = 0; i < in.num_operands(); ++i)
      if (in.operands[i] >= k.insts.size() || !visible[in.operands[i]] || ty(in.operands[i]) == DType::Void)
        return false;
    return op_info(in.op).arity < 0 || in.num_operands() == op_info(in.op).arity;
  }

  // Type rules of the ops, on scalar values (check_kinds has rejected every other kind first).
  void types(const Inst& in) {
    const DType rt = sub(in.type.elem());
    auto o = [&](int i) { return ty(in.operands[i]); };
    auto need_result = [&](DType want) {
      if (rt != sub(want))
        err(in, std::string("result must be ") + dtype_name(want) + ", is " + dtype_name(rt));
    };
    auto same_as_result = [&](int i) {
      if (o(i) != rt)
        err(in, std::string("operand ") + std::to_string(i) + " is " + dtype_name(o(i)) +
                    " but the result is " + dtype_name(rt) + " (insert a cast)");
    };
    auto integer_operand = [&](int i, const char* what) {
      if (!is_integer(o(i))) err(in, std::string(what) + " must be an integer, is " + dtype_name(o(i)));
    };
    auto param_ok = [&](ParamKind kind) -> const Param* {
      if (in.param() >= k.params.size()) {
        err(in, "names no parameter");
        return nullptr;
      }
      const Param& p = k.params[in.param()];
      if (p.kind != kind) {
        err(in, "parameter '" + p.name + "' is a " + param_kind_name(p.kind) +
                    (p.kind == ParamKind::Blob ? " (a by-value structure: only load reads it)" : ""));
        return nullptr;
      }
      return &p;
    };

    const int64_t value = in.attr(Attr::Value);
    switch (in.op) {
      case Op::Const:
        if (rt == DType::Void) err(in, "constant needs a dtype");
        // Integer immediates are kept in their dtype's range; one outside it would be read
        // differently by the backends (truncated) and by range checks on the 64-bit value.
        // A u64 constant keeps its 64-bit pattern in Value, so every integer value is one.
        if (is_integer(rt) && rt != DType::U64 &&
            (value < num::int_min(rt) || (value > 0 && uint64_t(value) > num::int_max(rt))))
          err(in, std::string(dtype_name(rt)) + " constant " + std::to_string(value) + " is out of range");
        // An fp8 register always holds an fp8 value: a constant must be one exactly.
        if (const double fv = in.fattr(Attr::Value);
            is_fp8(rt) && !std::isnan(fv) && double(num::round_to(rt, float(fv))) != fv)
          err(in, std::string(dtype_name(rt)) + " constant " + std::to_string(fv) + " is not an " +
                      dtype_name(rt) + " value");
        if (rt == DType::Bool && value != 0 && value != 1) err(in, "bool constant must be 0 or 1");
        // A T constant used as an integer dtype must be a whole number that fits it.
        if (in.type == DType::Generic && is_integer(rt) && double(value) != in.fattr(Attr::Value))
          err(in, "T constant " + std::to_string(in.fattr(Attr::Value)) +
                      " is not an integer (a float literal meets an integer T)");
        break;
      case Op::Param:
        if (const Param* p = param_ok(ParamKind::Scalar)) need_result(p->dtype);
        break;
      case Op::ThreadId:
        // u32, or u64 for the 64-bit thread index (thread_id64) that dispatches of more than
        // 2^32 - 1 threads need.
        if (in.attr(Attr::Axis) < 0 || in.attr(Attr::Axis) > 2) err(in, "axis must be 0, 1 or 2");
        if (rt != DType::U64) need_result(DType::U32);
        break;
      case Op::ProgramId: case Op::LocalId: case Op::GroupSize: case Op::NumPrograms:
        if (in.attr(Attr::Axis) < 0 || in.attr(Attr::Axis) > 2) err(in, "axis must be 0, 1 or 2");
        need_result(DType::U32);
        break;
      case Op::LaneId: case Op::LaneWidth: case Op::SimdGroupId: case Op::NumSimdGroups:
        need_result(DType::U32);
        break;
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Min: case Op::Max:
        if (!numeric(rt)) err(in, std::string("needs numeric operands, not ") + dtype_name(rt));
        reject_storage_only(in, rt);
        same_as_result(0);
        same_as_result(1);
        break;
      case Op::Rem:
        if (!is_integer(rt)) err(in, "needs integer operands");
        same_as_result(0);
        same_as_result(1);
        break;
      case Op::Neg: case Op::Abs:
        if (!numeric(rt)) err(in, "needs a numeric operand");
        reject_storage_only(in, rt);
        same_as_result(0);
        break;
      case Op::Fma:
        if (!is_float(rt)) err(in, "needs float operands");
        reject_storage_only(in, rt);
        same_as_result(0); same_as_result(1); same_as_result(2);
        break;
      case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Rsqrt: case Op::Tanh:
        if (!is_float(rt)) err(in, std::string("is defined on floats only, not ") + dtype_name(rt));
        reject_storage_only(in, rt);
        same_as_result(0);
        break;
      case Op::And: case Op::Or: case Op::Xor:
        if (!is_integer(rt) && rt != DType::Bool) err(in, "needs integer or bool operands");
        same_as_result(0); same_as_result(1);
        break;
      case Op::Not:
        if (!is_integer(rt) && rt != DType::Bool) err(in, "needs an integer or bool operand");
        same_as_result(0);
        break;
      case Op::Shl: case Op::Shr:
        if (!is_integer(rt)) err(in, "needs integer operands");
        same_as_result(0);
        integer_operand(1, "shift amount");
        break;
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
        need_result(DType::Bool);
        if (o(0) != o(1))
          err(in, std::string("compares ") + dtype_name(o(0)) + " with " + dtype_name(o(1)) + " (insert a cast)");
        else if (o(0) == DType::Bool && in.op != Op::Eq && in.op != Op::Ne)
          err(in, std::string(mnemonic(in.op)) + " orders bool values; only eq and ne compare bools (cast to u32 first)");
        else
          reject_storage_only(in, o(0));
        break;
      case Op::Select:
        if (o(0) != DType::Bool) err(in, "condition must be bool");
        same_as_result(1); same_as_result(2);
        break;
      case Op::Cast:
        if (!numeric(rt) && rt != DType::Bool) err(in, "cast target must be a value dtype");
        break;
      case Op::Load:
        if (in.param() < k.params.size() && k.params[in.param()].kind == ParamKind::Blob) {
          // A word of a by-value structure (docs/semantics.md): u32, never vectorized.
          need_result(DType::U32);
          if (in.attr(Attr::Vec) > 0 || in.has(Attr::Lane)) err(in, "a load of blob '" + k.params[in.param()].name + "' cannot be vectorized");
          integer_operand(0, "index");
          break;
        }
        if (const Param* p = param_ok(ParamKind::Buffer)) {
          need_result(p->dtype);
          if (p->access == Access::Write) err(in, "reads output-only buffer '" + p->name + "' (declare it inout)");
        }
        integer_operand(0, "index");
        break;
      case Op::Store:
        if (const Param* p = param_ok(ParamKind::Buffer)) {
          if (p->access == Access::Read) err(in, "writes input buffer '" + p->name + "' (declare it out or inout)");
          if (o(1) != sub(p->dtype))
            err(in, std::string("stores ") + dtype_name(o(1)) + " into buf<" + dtype_name(p->dtype) + "> '" +
                        p->name + "' (insert a cast)");
        }
        integer_operand(0, "index");
        break;
      case Op::Var:
        if (rt == DType::Void) err(in, "variable needs a dtype");
        if (in.type.is_fragment() || k.insts[in.operands[0]].type.is_fragment()) {
          if (in.type != k.insts[in.operands[0]].type)
            err(in, "initial value is " + type_name(k.insts[in.operands[0]].type) + " but the variable is " +
                        type_name(in.type));
        } else {
          same_as_result(0);
        }
        break;
      case Op::VarLoad:
        if (k.insts[in.operands[0]].op != Op::Var) err(in, "operand is not a variable");
        else if (in.type.is_fragment() || k.insts[in.operands[0]].type.is_fragment()) {
          if (in.type != k.insts[in.operands[0]].type)
            err(in, "reads a " + type_name(k.insts[in.operands[0]].type) + " variable as " + type_name(in.type));
        } else {
          same_as_result(0);
        }
        break;
      case Op::VarStore:
        if (k.insts[in.operands[0]].op != Op::Var) err(in, "operand 0 is not a variable");
        else if (k.insts[in.operands[1]].type != k.insts[in.operands[0]].type &&
                 (o(1) != o(0) || k.insts[in.operands[0]].type.is_fragment() ||
                  k.insts[in.operands[1]].type.is_fragment()))
          err(in, "stores " + type_name(k.insts[in.operands[1]].type) + " into a " +
                      type_name(k.insts[in.operands[0]].type) + " variable");
        break;
      case Op::TileFill: case Op::TileLoad: case Op::TileTgLoad: case Op::TileMma: case Op::TileStore:
      case Op::TileTgStore: case Op::TileGet: case Op::TileWgMma: case Op::TileWgMmaRs: case Op::TileScaleAdd:
        tile_types(in);
        break;
      case Op::WgFence: case Op::WgCommit:
        if (rt != DType::Void) err(in, "defines no value");
        break;
      case Op::WgWait:
        if (rt != DType::Void) err(in, "defines no value");
        if (in.attr(Attr::Count) < 0 || in.attr(Attr::Count) > 7)
          err(in, "wg_wait leaves 0 to 7 groups in flight, not " + std::to_string(in.attr(Attr::Count)));
        break;
      case Op::TgAlloc:
        if (uint64_t(in.attr(Attr::Name)) < k.strings.size() && !is_identifier(k.strings[size_t(in.attr(Attr::Name))]))
          err(in, "threadgroup allocation name '" + k.strings[size_t(in.attr(Attr::Name))] + "' is not an identifier");
        if (in.attr(Attr::Count) <= 0) err(in, "threadgroup allocation needs a positive element count");
        else if (in.attr(Attr::Count) > int64_t(UINT32_MAX))
          err(in, "threadgroup allocation of " + std::to_string(in.attr(Attr::Count)) + " elements exceeds 2^32-1");
        if (in.has(Attr::Align)) {
          const int64_t a = in.attr(Attr::Align);
          if (a <= 0 || a > int64_t(kMaxThreadgroupAlign) || (a & (a - 1)) != 0)
            err(in, "threadgroup alignment " + std::to_string(a) + " is not a power of two from 1 to " +
                        std::to_string(kMaxThreadgroupAlign) + " bytes");
        }
        if (in.has(Attr::CountParam) && uint64_t(in.attr(Attr::CountParam)) < k.params.size()) {
          const Param& p = k.params[size_t(in.attr(Attr::CountParam))];
          if (p.kind != ParamKind::Scalar || (p.dtype != DType::U32 && p.dtype != DType::I32))
            err(in, "threadgroup allocation is sized by '" + p.name + "', which is not a u32 or i32 scalar parameter");
        }
        alias(in);
        break;
      case Op::LocalAlloc:
        if (uint64_t(in.attr(Attr::Name)) < k.strings.size() && !is_identifier(k.strings[size_t(in.attr(Attr::Name))]))
          err(in, "register array name '" + k.strings[size_t(in.attr(Attr::Name))] + "' is not an identifier");
        if (in.attr(Attr::Count) <= 0 || in.attr(Attr::Count) > int64_t(kMaxRegisterArray))
          err(in, "register array of " + std::to_string(in.attr(Attr::Count)) + " elements: the count must be 1 to " +
                      std::to_string(kMaxRegisterArray));
        if (rt == DType::Void) err(in, "register array needs a dtype");
        break;
      case Op::LocalLoad:
        if (k.insts[in.operands[0]].op != Op::LocalAlloc) err(in, "operand 0 is not a register array");
        else same_as_result(0);
        integer_operand(1, "index");
        break;
      case Op::LocalStore:
        if (k.insts[in.operands[0]].op != Op::LocalAlloc) err(in, "operand 0 is not a register array");
        else if (o(2) != o(0))
          err(in, std::string("stores ") + dtype_name(o(2)) + " into a " + dtype_name(o(0)) + " register array");
        integer_operand(1, "index");
        break;
      case Op::TgLoad:
        if (k.insts[in.operands[0]].op != Op::TgAlloc) err(in, "operand 0 is not a threadgroup allocation");
        else same_as_result(0);
        integer_operand(1, "index");
        break;
      case Op::TgStore:
        if (k.insts[in.operands[0]].op != Op::TgAlloc) err(in, "operand 0 is not a threadgroup allocation");
        else if (o(2) != o(0))
          err(in, std::string("stores ") + dtype_name(o(2)) + " into " + dtype_name(o(0)) + " threadgroup memory");
        integer_operand(1, "index");
        break;
      case Op::Barrier:
        break;
      case Op::LaneSum: case Op::LaneMax:
        if (rt != DType::F32 && rt != DType::I32 && rt != DType::U32)
          err(in, std::string("lane reductions take f32, i32 or u32, not ") + dtype_name(rt) +
                      " (accumulate in f32)");
        same_as_result(0);
        break;
      case Op::LaneShuffle: case Op::LaneShuffleXor: case Op::LaneShuffleUp: case Op::LaneShuffleDown:
      case Op::LaneBroadcast:
        same_as_result(0);
        if (is_fp8(rt) || (is_integer(rt) && !word_int(rt)))
          err(in, std::string("shuffles move f32, f16, bf16, i32, u32 or bool values, not ") + dtype_name(rt) +
                      " (cast first)");
        if (o(1) != DType::U32) err(in, std::string("the source lane operand must be u32, is ") + dtype_name(o(1)));
        break;
      case Op::LaneMin: case Op::LaneInclusiveSum: case Op::LaneExclusiveSum:
        if (rt != DType::F32 && !word_int(rt))
          err(in, std::string("takes f32, i32 or u32, not ") + dtype_name(rt) + " (accumulate in f32)");
        same_as_result(0);
        break;
      case Op::LaneAnd: case Op::LaneOr:
        if (!word_int(rt)) err(in, std::string("takes i32 or u32, not ") + dtype_name(rt));
        same_as_result(0);
        break;
      case Op::LaneBallot:
        need_result(DType::U32);
        if (o(0) != DType::Bool) err(in, std::string("votes on a bool, not ") + dtype_name(o(0)));
        break;
      case Op::LaneAny: case Op::LaneAll:
        need_result(DType::Bool);
        if (o(0) != DType::Bool) err(in, std::string("votes on a bool, not ") + dtype_name(o(0)));
        break;
      case Op::AtomicAdd: case Op::AtomicMin: case Op::AtomicMax: case Op::AtomicAnd: case Op::AtomicOr:
      case Op::AtomicExchange: case Op::AtomicCas:
      case Op::TgAtomicAdd: case Op::TgAtomicMin: case Op::TgAtomicMax: case Op::TgAtomicAnd: case Op::TgAtomicOr:
      case Op::TgAtomicExchange: case Op::TgAtomicCas: {
        AtomicOperands a = atomic_operands(in);
        DType memory = DType::Void;
        if (is_global_atomic(in.op)) {
          if (const Param* p = param_ok(ParamKind::Buffer)) {
            memory = p->dtype;
            if (p->access != Access::ReadWrite)
              err(in, "needs an inout buffer ('" + p->name + "' is " + access_name(p->access) +
                          "): an atomic reads and writes");
          }
        } else if (k.insts[a.alloc].op != Op::TgAlloc) {
          err(in, "operand 0 is not a threadgroup allocation");
        } else {
          memory = ty(a.alloc);
        }
        if (memory == DType::Void) break;
        Op kind = atomic_kind(in.op);
        if (memory == DType::U64) {
          // u64: add, exchange and compare-and-swap (CUDA's unsigned long long atomics, GLSL's
          // GL_EXT_shader_atomic_int64); the order-dependent rest stays on the 32-bit words.
          if (kind != Op::AtomicAdd && kind != Op::AtomicExchange && kind != Op::AtomicCas)
            err(in, "on u64 memory only add, exchange and cas are defined, not " + std::string(mnemonic(kind)));
        } else if (memory != DType::F32 && !word_int(memory)) {
          err(in, std::string("atomics act on f32, i32 or u32 memory (u64: add, exchange and cas), not ") +
                      dtype_name(memory));
        }
        if ((kind == Op::AtomicAnd || kind == Op::AtomicOr) && !word_int(memory) && memory != DType::U64)
          err(in, std::string("is defined on i32 and u32 memory only, not ") + dtype_name(memory));
        need_result(memory);
        if (!is_integer(ty(a.index))) err(in, std::string("index must be i32 or u32, is ") + dtype_name(ty(a.index)));
        if (ty(a.value) != memory)
          err(in, std::string("value is ") + dtype_name(ty(a.value)) + " but the memory holds " + dtype_name(memory) +
                      " (insert a cast)");
        if (a.expected != kNone && ty(a.expected) != memory)
          err(in, std::string("expected value is ") + dtype_name(ty(a.expected)) + " but the memory holds " +
                      dtype_name(memory) + " (insert a cast)");
        break;
      }
      case Op::AtomicAddPair:
        if (const Param* p = param_ok(ParamKind::Buffer)) {
          const DType memory = sub(p->dtype);
          if (p->access != Access::ReadWrite)
            err(in, "needs an inout buffer ('" + p->name + "' is " + access_name(p->access) + "): an atomic reads and writes");
          if (memory != DType::F16 && memory != DType::BF16)
            err(in, std::string("adds a pair into an f16 or bf16 buffer, not ") + dtype_name(memory));
          else
            for (int i = 1; i <= 2; ++i)
              if (o(i) != memory)
                err(in, std::string(i == 1 ? "lo" : "hi") + " is " + dtype_name(o(i)) + " but the buffer holds " +
                            dtype_name(memory) + " (insert a cast)");
        }
        integer_operand(0, "pair index");
        if (rt != DType::Void) err(in, "defines no value");
        break;
      case Op::FenceThreadgroup: case Op::FenceDevice:
        break;
      case Op::AsyncCopy: async_copy(in); break;
      case Op::MbarInit: case Op::MbarArrive: case Op::MbarArriveTx: case Op::MbarWait: case Op::SetMaxNRegInc:
      case Op::SetMaxNRegDec: case Op::BulkCopy: case Op::FenceProxyAsync: case Op::BulkStore: case Op::BulkCommit:
      case Op::BulkWait: case Op::TmaLoad2D: case Op::TmaStore2D:
        hopper_op(in);
        break;
      case Op::AsyncCommit: break;
      case Op::AsyncWait:
        if (in.attr(Attr::Count) < 0 || in.attr(Attr::Count) > 7)
          err(in, "async_wait leaves 0 to 7 groups in flight, not " + std::to_string(in.attr(Attr::Count)));
        break;
      case Op::Pair: case Op::PairGet:  // pair_types
        break;
      case Op::If:
        if (o(0) != DType::Bool) err(in, "condition must be bool");
        break;
      case Op::Call:
        if (rt == DType::Void) err(in, "a call needs a result dtype");
        break;
      case Op::Arg:
        if (!k.is_function) err(in, "arg outside a device function");
        if (rt == DType::Void) err(in, "arg needs a dtype");
        break;
      case Op::Return:
        if (!k.is_function) err(in, "ret outside a device function");
        break;
      case Op::For: {
        if (rt != DType::I32 && rt != DType::U32 && rt != DType::I64 && rt != DType::U64)
          err(in, "induction variable must be i32, u32, i64 or u64");
        same_as_result(0); same_as_result(1); same_as_result(2);
        const Inst& step = k.insts[in.operands[2]];
        // The step is read as the loop's type, as every backend does: a constant whose 64-bit
        // immediate is nonzero but whose low 32 bits are zero is a zero step of a 32-bit loop.
        if (step.op == Op::Const) {
          const int64_t imm = step.attr(Attr::Value);
          int64_t read = rt == DType::U32 ? int64_t(uint32_t(imm)) : rt == DType::I32 ? int64_t(int32_t(imm)) : imm;
          if (rt == DType::U64 && imm != 0) read = 1;  // any nonzero u64 step is positive
          if (read <= 0)
            err(in, "loop step is " + std::to_string(read) +
                        (read != imm ? " (constant " + std::to_string(imm) + " read as " + dtype_name(rt) + ")" : "") +
                        "; it must be positive (the loop would never end)");
        }
        break;
      }
      case Op::Floor: case Op::Ceil: case Op::Rint: case Op::Trunc:
      case Op::Sin: case Op::Cos: case Op::Exp2: case Op::Log2: case Op::Erf: case Op::Pow:
      case Op::MulHi: case Op::Popcount: case Op::Clz: case Op::Bitcast:
        math_types(in);
        break;
      case Op::Count_:
        break;
    }
    // Lane operations and atomics are side effects that define a value (convergent, or memory).
    if (has_trait(in.op, trait::S) && in.op != Op::Var && in.op != Op::TgAlloc && in.op != Op::LocalAlloc &&
        !has_trait(in.op, trait::L) && !is_atomic(in.op) && in.op != Op::For && in.op != Op::Call && rt != DType::Void)
      err(in, "a side-effect op defines no value");
  }

  // The math ops of issue 8 (docs/semantics.md): float rounding and transcendentals on float
  // dtypes, mulhi/popcount/clz on i32/u32 (result in the operand's dtype), bitcast between
  // dtypes of one width (num::bitcast_width).
  void math_types(const Inst& in) {
    const DType rt = sub(in.type.elem());
    auto o = [&](int i) { return ty(in.operands[i]); };
    for (int i = 0; i < in.num_operands() && in.op != Op::Bitcast; ++i)
      if (o(i) != rt)
        err(in, std::string("operand ") + std::to_string(i) + " is " + dtype_name(o(i)) + " but the result is " +
                    dtype_name(rt) + " (insert a cast)");
    switch (in.op) {
      case Op::MulHi: case Op::Popcount: case Op::Clz:
        if (rt != DType::I32 && rt != DType::U32) err(in, std::string("is defined on i32 and u32 only, not ") + dtype_name(rt));
        break;
      case Op::Bitcast: {
        if (num::bitcast_width(rt) == 0 || num::bitcast_width(rt) != num::bitcast_width(o(0)))
          err(in, std::string("bitcast converts between dtypes of one width (f32, i32, u32; f16, bf16, i16, u16; "
                              "i64, u64), not ") + dtype_name(o(0)) + " to " + dtype_name(rt));
        break;
      }
      default:
        if (!is_float(rt)) err(in, std::string("is defined on floats only, not ") + dtype_name(rt));
        reject_storage_only(in, rt);
        break;
    }
  }

  // Vector groups (vectorize): a leader (vec=W, W in {2,4,8}) followed immediately by its W-1
  // members (lane=1 .. lane=W-1, in order) of the same op and buffer.
  void check_vector_groups(Id b) {
    const auto& list = k.blocks[b].insts;
    for (size_t p = 0; p < list.size(); ++p) {
      if (list[p] >= k.insts.size()) continue;
      const Inst& in = k.insts[list[p]];
      if (in.op != Op::Load && in.op != Op::Store) continue;
      if (in.has(Attr::Vec) && in.has(Attr::Lane)) {
        err(in, "an access is either a vector group leader (vec=) or a member (lane=), not both");
        continue;
      }
      if (in.has(Attr::Lane)) {
        err(in, "vector group member without its leader");
        continue;
      }
      if (!in.has(Attr::Vec)) continue;
      const int64_t width = in.attr(Attr::Vec);
      if (width != 2 && width != 4 && width != 8) {
        err(in, "vector group width must be 2, 4 or 8");
        continue;
      }
      for (int64_t lane = 1; lane < width; ++lane) {
        size_t q = p + size_t(lane);
        if (q >= list.size() || list[q] >= k.insts.size() || k.insts[list[q]].op != in.op ||
            k.insts[list[q]].param() != in.param() || k.insts[list[q]].attr(Attr::Lane) != lane ||
            k.insts[list[q]].has(Attr::Vec)) {
          err(in, "vector group of " + std::to_string(width) + " is missing lane " + std::to_string(lane));
          break;
        }
      }
      p += size_t(width) - 1;
    }
  }

  void block(Id b, Id owner) {
    if (b >= k.blocks.size()) {
      d.error({}, "reference to block " + std::to_string(b) + ", which does not exist");
      return;
    }
    if (block_seen[b]) {
      d.error({}, "block " + std::to_string(b) + " is owned by more than one instruction");
      return;
    }
    block_seen[b] = 1;
    if (k.blocks[b].parent != owner)
      d.error({}, "block " + std::to_string(b) + " records the wrong parent instruction");
    std::vector<Id> defined;
    check_vector_groups(b);
    for (Id id : k.blocks[b].insts) {
      if (id >= k.insts.size()) {
        d.error({}, "block " + std::to_string(b) + " lists instruction " + std::to_string(id) + ", which does not exist");
        continue;
      }
      if (inst_seen[id]) {
        d.error(k.insts[id].loc, "instruction placed in more than one position");
        continue;
      }
      inst_seen[id] = 1;
      const Inst& in = k.insts[id];
      if (in.flags & kUntyped) err(in, "result dtype was never inferred (run type_check)");
      check_operands(in);
      check_attrs(in);
      if (ok_operands(in) && check_kinds(in)) {
        // A generic kernel: the rules for each dtype T may take (T as a float when none).
        auto rules = [&] { is_pair_inst(in) ? pair_types(in) : types(in); };
        if (k.dtypes.empty()) {
          rules();
        } else {
          for (DType t : k.dtypes) {
            subst = t;
            rules();
          }
          subst = DType::Void;
        }
      }
      bool control = has_trait(in.op, trait::F);
      if (!control && (in.blocks[0] != kNone || in.blocks[1] != kNone)) err(in, "only if/for own blocks");
      if (control) {
        if (in.blocks[0] == kNone) err(in, "missing body block");
        if (in.op == Op::For && in.blocks[1] != kNone) err(in, "a loop owns one block");
        if (in.op == Op::For) visible[id] = 1;  // the induction variable, inside the body only
        for (Id cb : in.blocks)
          if (cb != kNone) block(cb, id);
        if (in.op == Op::For) visible[id] = 0;
      }
      if (!control && !in.type.is_void()) {
        visible[id] = 1;
        defined.push_back(id);
      }
    }
    for (Id v : defined) visible[v] = 0;  // values do not escape their block
  }

  // Declared facts (Param::specialize, multiple_of, align): each on the kind of parameter it
  // describes, with a value it can mean.
  void facts(const Param& p) {
    auto pow2 = [](uint64_t v) { return v != 0 && (v & (v - 1)) == 0; };
    if (p.kind == ParamKind::Buffer && (p.specialize || p.multiple_of))
      d.error(p.loc, "buffer parameter '" + p.name + "' cannot be " +
                         (p.specialize ? std::string("specialized") : std::string("multiple_of")) +
                         " (scalar facts; a buffer declares aligned(bytes))");
    if (p.kind == ParamKind::Scalar && p.align)
      d.error(p.loc, "scalar parameter '" + p.name + "' cannot be aligned (a buffer fact)");
    if (p.kind == ParamKind::Blob) {
      if (p.specialize || p.multiple_of || !p.extent_scalars.empty() || p.extent_factor != 1 || !p.aliases.empty())
        d.error(p.loc, "blob parameter '" + p.name + "' takes no extent, aliases or scalar facts");
      if (p.dtype != DType::U32 || p.access != Access::Read)
        d.error(p.loc, "blob parameter '" + p.name + "' must be read-only u32 words");
      if (p.blob_bytes == 0 || p.blob_bytes % 4 != 0 || p.blob_bytes > kMaxBlobBytes)
        d.error(p.loc, "blob parameter '" + p.name + "' is " + std::to_string(p.blob_bytes) +
                           " bytes; a blob is a positive multiple of 4 bytes up to " + std::to_string(kMaxBlobBytes));
      if (!pow2(p.align) || p.align < 4 || p.align > 128)
        d.error(p.loc, "blob parameter '" + p.name + "' has alignment " + std::to_string(p.align) +
                           "; a blob's alignment is a power of two from 4 to 128 bytes");
      else if (p.blob_bytes % p.align != 0)
        d.error(p.loc, "blob parameter '" + p.name + "' is " + std::to_string(p.blob_bytes) +
                           " bytes, not a multiple of its alignment " + std::to_string(p.align));
      if (p.tensor_map && (p.blob_bytes != kTensorMapBytes || p.align != kTensorMapAlign))
        d.error(p.loc, "tensor map parameter '" + p.name + "' must be 128 bytes aligned to 64");
      return;
    }
    if (p.tensor_map) d.error(p.loc, "parameter '" + p.name + "' is marked a tensor map but is not a blob");
    if (p.multiple_of && p.kind == ParamKind::Scalar) {
      const uint64_t limit = int_bits(p.dtype) == 64 ? uint64_t(1) << 63 : uint64_t(1) << 31;
      if (!is_integer(p.dtype))
        d.error(p.loc, "multiple_of(" + std::to_string(p.multiple_of) + ") on '" + p.name + "', a " +
                           dtype_name(p.dtype) + " scalar (only integer scalars have divisibility facts)");
      else if (!pow2(p.multiple_of) || p.multiple_of < 2 || p.multiple_of > limit)
        d.error(p.loc, "multiple_of(" + std::to_string(p.multiple_of) + ") on '" + p.name +
                           "' must be a power of two from 2 to " + std::to_string(limit));
    }
    if (p.align && p.kind == ParamKind::Buffer) {
      if (!pow2(p.align) || p.align > kMaxDeclaredAlign) {
        d.error(p.loc, "aligned(" + std::to_string(p.align) + ") on '" + p.name + "' must be a power of two up to " +
                           std::to_string(kMaxDeclaredAlign) + " bytes");
        return;
      }
      // At least one element: a narrower fact would say the elements themselves are misaligned.
      std::vector<DType> concrete;
      if (p.dtype == DType::Generic) concrete = k.dtypes;
      else if (p.dtype == DType::GenericW) concrete = k.wtypes;
      else concrete.push_back(p.dtype);
      for (DType t : concrete)
        if (!is_type_param(t) && t != DType::Void && p.align < dtype_size(t)) {
          d.error(p.loc, "aligned(" + std::to_string(p.align) + ") on '" + p.name + "' is less than one " +
                             dtype_name(t) + " element (" + std::to_string(dtype_size(t)) + " bytes)");
          break;
        }
    }
  }

  void run() {
    if (k.blocks.empty()) {
      d.error({}, "kernel has no entry block");
      return;
    }
    if (k.name.empty()) d.error({}, "kernel has no name");
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Param& p = k.params[i];
      if (p.name.empty()) d.error(p.loc, "parameter " + std::to_string(i) + " has no name");
      for (size_t j = 0; j < i; ++j)
        if (k.params[j].name == p.name) d.error(p.loc, "duplicate parameter name '" + p.name + "'");
      if (!is_identifier(p.name)) d.error(p.loc, "parameter name '" + p.name + "' is not an identifier");
      if (p.kind == ParamKind::Scalar && p.dtype != DType::F32 && p.dtype != DType::I32 && p.dtype != DType::U32 &&
          p.dtype != DType::I64 && p.dtype != DType::U64)
        d.error(p.loc, "scalar parameter '" + p.name + "' must be f32, i32, u32, i64 or u64");
      if (p.kind == ParamKind::Buffer && !is_float(p.dtype) && !is_integer(p.dtype))
        d.error(p.loc, "buffer parameter '" + p.name + "' must hold a float or integer dtype, T or W, not " +
                           dtype_name(p.dtype));
      for (uint32_t a : p.aliases)
        if (a >= i || k.params[a].kind != ParamKind::Buffer || p.kind != ParamKind::Buffer)
          d.error(p.loc, "aliases of '" + p.name + "' must name earlier buffer parameters");
      if (p.stride_param != kNoStride &&
          (p.kind != ParamKind::Buffer || p.stride_param >= i || k.params[p.stride_param].kind != ParamKind::Scalar ||
           !is_integer(k.params[p.stride_param].dtype)))
        d.error(p.loc, "strided= of '" + p.name + "' must be on a buffer and name an earlier integer scalar parameter");
      if (p.kind == ParamKind::Buffer && p.extent_factor == 0)
        d.error(p.loc, "extent of '" + p.name + "' is 0 (a buffer parameter's extent must be positive)");
      for (uint32_t s : p.extent_scalars)
        if (s >= k.params.size() || k.params[s].kind != ParamKind::Scalar || !is_integer(k.params[s].dtype))
          d.error(p.loc, "extent of '" + p.name + "' must name integer scalar parameters");
      facts(p);
    }
    // The parameters together, as CUDA lays them out (pointers 8 bytes, scalars 4 or 8, blobs at
    // their alignment), fit its classic 4 KiB of kernel parameters.
    {
      uint64_t bytes = 0;
      const Param* last = nullptr;
      for (const Param& p : k.params) {
        const uint64_t size = p.kind == ParamKind::Blob ? p.blob_bytes
                              : p.kind == ParamKind::Buffer || int_bits(p.dtype) == 64 ? 8 : 4;
        const uint64_t align = p.kind == ParamKind::Blob && p.align ? p.align : size;
        if (align) bytes = (bytes + align - 1) / align * align;
        bytes += size;
        last = &p;
      }
      if (bytes > kMaxBlobBytes && last)
        d.error(last->loc, "the parameters of " + k.name + " take " + std::to_string(bytes) + " bytes; a kernel's parameters "
                           "(buffers 8 bytes, scalars 4 or 8, blobs their size at their alignment) fit in " +
                           std::to_string(kMaxBlobBytes));
    }
    bool generic = false, uses_w = false;
    SrcLoc w_at{};
    for (const Inst& in : k.insts) {
      generic = generic || in.type.elem() == DType::Generic;
      if (in.type.elem() == DType::GenericW && !uses_w) uses_w = true, w_at = in.loc;
    }
    for (const Param& p : k.params) {
      generic = generic || p.dtype == DType::Generic;
      if (p.dtype == DType::GenericW && !uses_w) uses_w = true, w_at = p.loc;
    }
    if (generic && k.dtypes.empty()) d.error({}, "kernel uses T but declares no dtypes for it");
    if (uses_w && k.wtypes.empty()) d.error(w_at, "kernel uses W but declares no wtypes for it");
    for (DType t : k.dtypes)
      if (is_type_param(t) || (!is_float(t) && !is_integer(t))) d.error({}, std::string("dtype ") + dtype_name(t) + " cannot substitute T");
    for (DType t : k.wtypes)
      if (is_type_param(t) || (!is_float(t) && !is_integer(t))) d.error({}, std::string("dtype ") + dtype_name(t) + " cannot substitute W");
    for (size_t i = 0; i < k.wtypes.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (k.wtypes[i] == k.wtypes[j]) d.error({}, std::string("wtypes lists ") + dtype_name(k.wtypes[i]) + " twice");
    visible.assign(k.insts.size(), 0);
    block_seen.assign(k.blocks.size(), 0);
    inst_seen.assign(k.insts.size(), 0);
    if (k.blocks[0].parent != kNone) d.error({}, "entry block has a parent");
    // Checked before the recursive walk below, which is bounded by it.
    if (size_t depth = nesting_depth(k); depth > kMaxNesting) {
      d.error({}, "if/for nesting is " + std::to_string(depth) + " levels deep; the IR allows at most " +
                      std::to_string(kMaxNesting));
      return;
    }
    const size_t before_blocks = d.items.size();
    block(0, kNone);
    mbar_arrays_hold_only_barriers();
    if (d.items.size() == before_blocks) alias_barriers();
    if (k.is_function) {
      const auto& entry = k.blocks[0].insts;
      if (entry.empty() || entry.back() >= k.insts.size() || k.insts[entry.back()].op != Op::Return)
        d.error({}, "device function '" + k.name + "' must end with ret");
      int returns = 0;
      walk(k, [&](Id id) { returns += id < k.insts.size() && k.insts[id].op == Op::Return; });
      if (returns != 1) d.error({}, "device function '" + k.name + "' must have exactly one ret, at the end");
      if (!k.params.empty()) d.error({}, "device function '" + k.name + "' cannot declare buffer or scalar parameters");
    }
  }
};

}  // namespace

bool verify(const Kernel& k, Diagnostics& diags) {
  size_t before = diags.items.size();
  Verifier v{k, diags, {}, {}, {}, {}};
  v.run();
  return diags.items.size() == before;
}

}  // namespace iron::ir
