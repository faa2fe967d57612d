// Op table, dtype vocabulary and the small Kernel helpers.
#include "core/ir.hpp"
#include "core/numeric.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace iron {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::U32: return "u32";
    case DType::Bool: return "bool";
    case DType::Generic: return "T";
    case DType::Void: return "void";
    case DType::GenericW: return "W";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::I16: return "i16";
    case DType::U16: return "u16";
    case DType::I64: return "i64";
    case DType::U64: return "u64";
    case DType::F8E4M3: return "f8e4m3";
    case DType::F8E5M2: return "f8e5m2";
  }
  return "?";
}

bool parse_dtype(std::string_view s, DType& out) {
  for (size_t i = 0; i < kNumDTypes; ++i)
    if (s == dtype_name(DType(i))) {
      out = DType(i);
      return true;
    }
  return false;
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::I8: case DType::U8: case DType::F8E4M3: case DType::F8E5M2: return 1;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::I64: case DType::U64: return 8;
    case DType::Void: return 0;
    default: return 4;
  }
}

bool is_float(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || is_type_param(d) || is_fp8(d);
}
bool is_fp8(DType d) { return d == DType::F8E4M3 || d == DType::F8E5M2; }
bool is_integer(DType d) { return int_bits(d) != 0; }
bool is_signed_integer(DType d) {
  return d == DType::I8 || d == DType::I16 || d == DType::I32 || d == DType::I64;
}
unsigned int_bits(DType d) {
  switch (d) {
    case DType::I8: case DType::U8: return 8;
    case DType::I16: case DType::U16: return 16;
    case DType::I32: case DType::U32: return 32;
    case DType::I64: case DType::U64: return 64;
    default: return 0;
  }
}

std::string instantiation_name(Instantiation in) {
  std::string s = dtype_name(in.t);
  if (in.has_w()) s += std::string(",") + dtype_name(in.w);
  return s;
}

bool parse_instantiation(std::string_view s, Instantiation& out) {
  size_t comma = s.find(',');
  Instantiation r;
  if (!parse_dtype(s.substr(0, comma), r.t) || r.t == DType::Void) return false;
  if (comma != std::string_view::npos && (!parse_dtype(s.substr(comma + 1), r.w) || r.w == DType::Void)) return false;
  out = r;
  return true;
}

Type Type::vector(DType elem, uint32_t lanes) {
  Type t;
  t.kind_ = TypeKind::Vector;
  t.elem_ = elem;
  t.lanes_ = uint8_t(lanes > 255 ? 255 : lanes);
  return t;
}

Type Type::fragment(DType elem, uint32_t m, uint32_t n, uint32_t k, FragRole role) {
  Type t;
  t.kind_ = TypeKind::Fragment;
  t.elem_ = elem;
  t.role_ = role;
  t.m_ = uint16_t(m > 65535 ? 65535 : m);
  t.n_ = uint16_t(n > 65535 ? 65535 : n);
  t.k_ = uint16_t(k > 65535 ? 65535 : k);
  return t;
}

Type Type::with_elem(DType d) const {
  if (kind_ == TypeKind::Scalar || kind_ == TypeKind::Void) return Type(d);
  Type t = *this;
  if (kind_ == TypeKind::Vector || kind_ == TypeKind::Fragment) t.elem_ = d;
  return t;
}

static const char* role_name(FragRole r) { return r == FragRole::A ? "a" : r == FragRole::B ? "b" : "acc"; }

std::string type_name(Type t) {
  switch (t.kind()) {
    case TypeKind::Void: return "void";
    case TypeKind::Scalar: return dtype_name(t.elem());
    case TypeKind::Vector: return "vec" + std::to_string(t.lanes()) + "<" + dtype_name(t.elem()) + ">";
    case TypeKind::Fragment:
      return std::string("frag<") + role_name(t.role()) + ", " + dtype_name(t.elem()) + ", " + std::to_string(t.m()) +
             "x" + std::to_string(t.n()) + "x" + std::to_string(t.k()) + ">";
    case TypeKind::Token: return "token";
  }
  return "?";
}

static bool parse_u32(std::string_view s, uint32_t& out) {
  if (s.empty() || s.size() > 9) return false;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint32_t(c - '0');
  }
  out = v;
  return true;
}

bool parse_type(std::string_view s, Type& out) {
  DType d;
  if (s == "token") {
    out = Type::token();
    return true;
  }
  if (parse_dtype(s, d)) {
    out = Type(d);
    return true;
  }
  if (s.size() > 5 && s.substr(0, 3) == "vec" && s.back() == '>') {
    size_t lt = s.find('<');
    uint32_t lanes = 0;
    if (lt == std::string_view::npos || !parse_u32(s.substr(3, lt - 3), lanes)) return false;
    if (!parse_dtype(s.substr(lt + 1, s.size() - lt - 2), d) || d == DType::Void) return false;
    out = Type::vector(d, lanes);
    return true;
  }
  if (s.size() > 6 && s.substr(0, 5) == "frag<" && s.back() == '>') {
    std::string_view body = s.substr(5, s.size() - 6);
    std::string_view part[3];
    for (int i = 0; i < 3; ++i) {
      size_t c = body.find(',');
      if ((c == std::string_view::npos) != (i == 2)) return false;
      part[i] = body.substr(0, c);
      while (!part[i].empty() && part[i].front() == ' ') part[i].remove_prefix(1);
      while (!part[i].empty() && part[i].back() == ' ') part[i].remove_suffix(1);
      if (c != std::string_view::npos) body = body.substr(c + 1);
    }
    FragRole role;
    if (part[0] == "a") role = FragRole::A;
    else if (part[0] == "b") role = FragRole::B;
    else if (part[0] == "acc") role = FragRole::Acc;
    else return false;
    if (!parse_dtype(part[1], d) || d == DType::Void) return false;
    size_t x1 = part[2].find('x'), x2 = x1 == std::string_view::npos ? x1 : part[2].find('x', x1 + 1);
    uint32_t m = 0, n = 0, k = 0;
    if (x2 == std::string_view::npos || !parse_u32(part[2].substr(0, x1), m) ||
        !parse_u32(part[2].substr(x1 + 1, x2 - x1 - 1), n) || !parse_u32(part[2].substr(x2 + 1), k))
      return false;
    if (m > 65535 || n > 65535 || k > 65535) return false;
    out = Type::fragment(d, m, n, k, role);
    return true;
  }
  return false;
}

size_t type_size(Type t) {
  switch (t.kind()) {
    case TypeKind::Scalar: return dtype_size(t.elem());
    case TypeKind::Vector: return dtype_size(t.elem()) * t.lanes();
    default: return 0;
  }
}


namespace ir {

using namespace trait;
static const OpInfo kOps[] = {
#define IRON_OP(name, mn, arity, traits, spelling) {mn, arity, traits, spelling},
#include "core/ops.def"
#undef IRON_OP
};

const OpInfo& op_info(Op op) { return kOps[size_t(op)]; }

static const AttrInfo kAttrs[] = {
    {"axis", AttrKind::Int},    {"param", AttrKind::ParamRef}, {"name", AttrKind::String},
    {"count", AttrKind::Int},   {"value", AttrKind::Number},   {"vec", AttrKind::Int},
    {"lane", AttrKind::Int},    {"callee", AttrKind::String},  {"index", AttrKind::Int},
    {"align", AttrKind::Int},   {"count_param", AttrKind::ParamRef},
    {"row", AttrKind::Int},     {"col", AttrKind::Int},
    {"swizzle", AttrKind::Int}, {"col_major", AttrKind::Int},
    {"alias", AttrKind::String}, {"offset", AttrKind::Int},
    {"async", AttrKind::Int},
};
static_assert(sizeof kAttrs / sizeof kAttrs[0] == size_t(Attr::Count_), "one AttrInfo per Attr");

const AttrInfo& attr_info(Attr a) { return kAttrs[size_t(a)]; }

bool swizzle_code_valid(int64_t code) {
  if (code < 100 || code > 999) return false;
  const int64_t bits = code / 100, shift = code % 10;
  return bits <= 3 && shift >= bits;
}

bool attr_from_name(std::string_view s, Attr& out) {
  for (size_t i = 0; i < size_t(Attr::Count_); ++i)
    if (s == kAttrs[i].name) {
      out = Attr(i);
      return true;
    }
  return false;
}

namespace {
struct SchemaTable {
  AttrSchema by_op[size_t(Op::Count_)];
  SchemaTable() {
    auto set = [&](Op op, std::initializer_list<AttrSlot> slots) {
      AttrSchema& s = by_op[size_t(op)];
      for (const AttrSlot& slot : slots) s.slots[s.count++] = slot;
    };
#define IRON_OP_ATTRS(name, ...) set(Op::name, __VA_ARGS__);
#include "core/op_attrs.def"
#undef IRON_OP_ATTRS
  }
};
}  // namespace

const AttrSchema& attr_schema(Op op) {
  static const SchemaTable table;
  return table.by_op[size_t(op)];
}

Operands::Operands(std::initializer_list<Id> ids) {
  for (Id id : ids) push_back(id);
}
Operands::Operands(const Operands& o) { *this = o; }
Operands& Operands::operator=(const Operands& o) {
  if (this == &o) return *this;
  n_ = 0;
  if (o.n_ > cap_) {
    delete[] heap_;
    heap_ = new Id[o.n_];
    cap_ = o.n_;
  }
  std::copy(o.begin(), o.end(), data());
  n_ = o.n_;
  return *this;
}
void Operands::push_back(Id id) {
  if (n_ == cap_) {
    uint32_t cap = cap_ * 2;
    Id* grown = new Id[cap];
    std::copy(begin(), end(), grown);
    delete[] heap_;
    heap_ = grown;
    cap_ = cap;
  }
  data()[n_++] = id;
}
void Operands::resize(uint32_t n, Id fill) {
  while (n_ < n) push_back(fill);
  n_ = n;
}

void Inst::erase(Attr a) {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].key == a) {
      attrs.erase(attrs.begin() + long(i));
      return;
    }
}
AttrEntry& Inst::slot(Attr a) {
  for (AttrEntry& e : attrs)
    if (e.key == a) return e;
  attrs.push_back(AttrEntry{a});
  return attrs.back();
}

bool op_from_mnemonic(std::string_view s, Op& out) {
  for (size_t i = 0; i < size_t(Op::Count_); ++i)
    if (s == kOps[i].mnemonic) {
      out = Op(i);
      return true;
    }
  return false;
}

const char* access_name(Access a) {
  switch (a) {
    case Access::Read: return "in";
    case Access::Write: return "out";
    case Access::ReadWrite: return "inout";
  }
  return "?";
}

const char* param_kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Buffer: return "buffer";
    case ParamKind::Scalar: return "scalar";
    case ParamKind::Blob: return "blob";
  }
  return "?";
}

uint32_t Kernel::intern_file(const std::string& f) {
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i] == f) return uint32_t(i);
  files.push_back(f);
  return uint32_t(files.size() - 1);
}

uint32_t Kernel::intern_string(const std::string& s) {
  for (size_t i = 0; i < strings.size(); ++i)
    if (strings[i] == s) return uint32_t(i);
  strings.push_back(s);
  return uint32_t(strings.size() - 1);
}

std::string Kernel::where(SrcLoc loc) const {
  if (loc.line == 0 || loc.file >= files.size() || files[loc.file].empty()) return "<unknown>";
  return files[loc.file] + ":" + std::to_string(loc.line);
}

int Kernel::find_param(std::string_view n) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == n) return int(i);
  return -1;
}

std::string Diagnostics::render(const Kernel& k) const {
  std::string out;
  for (const Diagnostic& d : items) {
    out += k.where(d.loc);
    out += ": error: ";
    out += d.message;
    out += " [kernel " + k.name + "]\n";
  }
  return out;
}

uint64_t content_hash(const Kernel& k) {
  std::string text = print(k);
  return XXH3_64bits(text.data(), text.size());
}

size_t nesting_depth(const Kernel& k) {
  if (k.blocks.empty()) return 0;
  std::vector<uint8_t> seen(k.blocks.size(), 0);
  std::vector<std::pair<Id, size_t>> todo{{0, 0}};
  seen[0] = 1;
  size_t deepest = 0;
  while (!todo.empty()) {
    auto [b, depth] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, depth);
    for (Id id : k.blocks[b].insts) {
      if (id >= k.insts.size()) continue;
      for (Id cb : k.insts[id].blocks)
        if (cb < k.blocks.size() && !seen[cb]) {
          seen[cb] = 1;
          todo.push_back({cb, depth + 1});
        }
    }
  }
  return deepest;
}

bool is_aliased(const Kernel& k, uint32_t p) {
  if (p >= k.params.size()) return false;
  if (!k.params[p].aliases.empty()) return true;
  for (const Param& q : k.params)
    for (uint32_t a : q.aliases)
      if (a == p) return true;
  return false;
}

bool read_only_memory(const Kernel& k, uint32_t p) {
  if (p >= k.params.size() || k.params[p].access != Access::Read) return false;
  auto writable = [&](uint32_t i) { return i < k.params.size() && k.params[i].access != Access::Read; };
  for (uint32_t a : k.params[p].aliases)
    if (writable(a)) return false;
  for (size_t i = 0; i < k.params.size(); ++i)
    for (uint32_t a : k.params[i].aliases)
      if (a == p && writable(uint32_t(i))) return false;
  return true;
}

bool float_everywhere(const Kernel& k, DType t) {
  if (!is_float(t)) return false;
  if (!is_type_param(t)) return true;
  for (DType d : t == DType::Generic ? k.dtypes : k.wtypes)
    if (!is_float(d)) return false;
  return true;
}

uint32_t dtypes_used(const Kernel& k) {
  static_assert(kNumDTypes <= 32, "dtypes_used is a 32-bit mask");
  uint32_t mask = 0;
  for (const Param& p : k.params) mask |= 1u << unsigned(p.dtype);
  walk(k, [&](Id id) { mask |= 1u << unsigned(k.insts[id].type.elem()); });
  return mask;
}

bool is_global_atomic(Op op) {
  switch (op) {
    case Op::AtomicAdd: case Op::AtomicMin: case Op::AtomicMax: case Op::AtomicAnd: case Op::AtomicOr:
    case Op::AtomicExchange: case Op::AtomicCas:
      return true;
    default: return false;
  }
}

bool is_tg_atomic(Op op) {
  switch (op) {
    case Op::TgAtomicAdd: case Op::TgAtomicMin: case Op::TgAtomicMax: case Op::TgAtomicAnd: case Op::TgAtomicOr:
    case Op::TgAtomicExchange: case Op::TgAtomicCas:
      return true;
    default: return false;
  }
}

bool is_mbar_op(Op op) {
  return op == Op::MbarInit || op == Op::MbarArrive || op == Op::MbarArriveTx || op == Op::MbarWait;
}

bool is_hopper_op(Op op) {
  return is_mbar_op(op) || op == Op::BulkCopy || op == Op::FenceProxyAsync || op == Op::SetMaxNRegInc ||
         op == Op::SetMaxNRegDec || op == Op::BulkStore || op == Op::BulkCommit || op == Op::BulkWait ||
         op == Op::TmaLoad2D || op == Op::TmaStore2D;
}

bool is_tile_op(Op op) {
  switch (op) {
    case Op::TileFill: case Op::TileLoad: case Op::TileTgLoad: case Op::TileMma: case Op::TileStore:
    case Op::TileTgStore: case Op::TileGet: case Op::TileWgMma: case Op::TileWgMmaRs: case Op::TileScaleAdd:
    case Op::WgFence: case Op::WgCommit: case Op::WgWait:
      return true;
    default: return false;
  }
}

bool is_atomic_cas(Op op) { return op == Op::AtomicCas || op == Op::TgAtomicCas; }

Op atomic_kind(Op op) {
  switch (op) {
    case Op::TgAtomicAdd: return Op::AtomicAdd;
    case Op::TgAtomicMin: return Op::AtomicMin;
    case Op::TgAtomicMax: return Op::AtomicMax;
    case Op::TgAtomicAnd: return Op::AtomicAnd;
    case Op::TgAtomicOr: return Op::AtomicOr;
    case Op::TgAtomicExchange: return Op::AtomicExchange;
    case Op::TgAtomicCas: return Op::AtomicCas;
    default: return op;
  }
}

AtomicOperands atomic_operands(const Inst& in) {
  AtomicOperands a;
  int i = 0;
  if (is_tg_atomic(in.op)) a.alloc = in.operands[i++];
  a.index = in.operands[i++];
  if (is_atomic_cas(in.op)) a.expected = in.operands[i++];
  a.value = in.operands[i];
  return a;
}

bool is_lane_shuffle(Op op) {
  return op == Op::LaneShuffle || op == Op::LaneShuffleXor || op == Op::LaneShuffleUp || op == Op::LaneShuffleDown ||
         op == Op::LaneBroadcast;
}

bool uses_lane_ops(const Kernel& k) {
  bool found = false;
  walk(k, [&](Id id) { found = found || has_trait(k.insts[id].op, trait::L); });
  return found;
}

bool uses_warpgroup_ops(const Kernel& k) {
  bool found = false;
  walk(k, [&](Id id) {
    const Inst& in = k.insts[id];
    found = found || in.op == Op::TileWgMma || in.op == Op::TileWgMmaRs || in.op == Op::WgFence || in.op == Op::WgCommit ||
            in.op == Op::WgWait || (in.type.is_fragment() && in.type.role() == FragRole::Acc && in.type.n() > 16);
  });
  return found;
}

uint64_t tg_elem_bytes(const Inst& alloc, Instantiation concrete) {
  return dtype_size(resolve(alloc.type.elem(), concrete));
}

uint64_t tg_alignment(const Inst& alloc, Instantiation concrete) {
  return std::max<uint64_t>(uint64_t(std::max<int64_t>(alloc.attr(Attr::Align), 1)), tg_elem_bytes(alloc, concrete));
}

bool has_dynamic_threadgroup(const Kernel& k) {
  bool found = false;
  walk(k, [&](Id id) { found = found || (k.insts[id].op == Op::TgAlloc && k.insts[id].has(Attr::CountParam)); });
  return found;
}

std::vector<Id> threadgroup_layout(const Kernel& k) {
  std::vector<Id> fixed, sized;
  walk(k, [&](Id id) {
    const Inst& in = k.insts[id];
    if (in.op == Op::TgAlloc && !in.has(Attr::Alias)) (in.has(Attr::CountParam) ? sized : fixed).push_back(id);
  });
  fixed.insert(fixed.end(), sized.begin(), sized.end());
  return fixed;
}

Id tg_alias_base(const Kernel& k, const Inst& alloc) {
  if (alloc.op != Op::TgAlloc || !alloc.has(Attr::Alias)) return kNone;
  const int64_t name = alloc.attr(Attr::Alias);
  if (name < 0 || uint64_t(name) >= k.strings.size()) return kNone;
  Id found = kNone;
  walk(k, [&](Id id) {
    const Inst& in = k.insts[id];
    if (found == kNone && in.op == Op::TgAlloc && &in != &alloc && !in.has(Attr::Alias) &&
        uint64_t(in.attr(Attr::Name)) < k.strings.size() && k.strings[size_t(in.attr(Attr::Name))] == k.strings[size_t(name)])
      found = id;
  });
  return found;
}

std::vector<Id> threadgroup_aliases(const Kernel& k) {
  std::vector<Id> out;
  walk(k, [&](Id id) {
    if (k.insts[id].op == Op::TgAlloc && k.insts[id].has(Attr::Alias)) out.push_back(id);
  });
  return out;
}

uint64_t tg_count(const Kernel& k, const Inst& alloc, const uint64_t* param_values) {
  const uint64_t count = uint64_t(std::max<int64_t>(alloc.attr(Attr::Count), 0));
  if (!alloc.has(Attr::CountParam)) return count;
  const uint64_t p = uint64_t(alloc.attr(Attr::CountParam));
  if (!param_values || p >= k.params.size()) return UINT64_MAX;
  // A negative i32 size is rejected by the dispatch check; here it reads as huge (never small).
  return num::saturating_mul(count, param_values[p]);
}

uint64_t threadgroup_bytes(const Kernel& k, Instantiation concrete, const uint64_t* param_values) {
  // Saturating: a count that overflows the total must fail the shared-memory check, not wrap
  // to a small number that passes it.
  uint64_t bytes = 0;
  for (Id id : threadgroup_layout(k)) {
    const Inst& in = k.insts[id];
    if (in.has(Attr::CountParam) && !param_values) continue;
    const uint64_t align = tg_alignment(in, concrete);
    if (bytes % align) bytes = num::saturating_add(bytes, align - bytes % align);
    bytes = num::saturating_add(bytes, num::saturating_mul(tg_count(k, in, param_values), tg_elem_bytes(in, concrete)));
  }
  return bytes;
}

static std::string dtype_list(const std::vector<DType>& ds) {
  std::string s;
  for (DType d : ds) s += (s.empty() ? "" : ", ") + std::string(dtype_name(d));
  return s;
}

bool declares(const Kernel& k, Instantiation in, std::string* why) {
  auto listed = [](const std::vector<DType>& ds, DType d) { return std::find(ds.begin(), ds.end(), d) != ds.end(); };
  std::string problem;
  if (!k.dtypes.empty() && !listed(k.dtypes, in.t))
    problem = "T takes " + dtype_list(k.dtypes);
  else if (k.wtypes.empty() && in.has_w())
    problem = "it has no W";
  else if (!k.wtypes.empty() && !in.has_w())
    problem = "it takes W = " + dtype_list(k.wtypes) + ": name W after T, as in " + dtype_name(in.t) + "," +
              dtype_name(k.wtypes.front());
  else if (!k.wtypes.empty() && !listed(k.wtypes, in.w))
    problem = "W takes " + dtype_list(k.wtypes);
  if (problem.empty()) return true;
  const std::string asked = in.has_w() ? std::string("T = ") + dtype_name(in.t) + ", W = " + dtype_name(in.w)
                                       : std::string("dtype ") + dtype_name(in.t);
  if (why) *why = "kernel " + k.name + " is not declared for " + asked + " (" + problem + ")";
  return false;
}

std::vector<Instantiation> instantiations(const Kernel& k) {
  std::vector<DType> ts = k.dtypes.empty() ? std::vector<DType>{DType::F32} : k.dtypes;
  std::vector<Instantiation> out;
  for (DType t : ts) {
    if (k.wtypes.empty()) out.push_back(Instantiation(t));
    for (DType w : k.wtypes) out.push_back(Instantiation(t, w));
  }
  return out;
}

}  // namespace ir
}  // namespace iron
