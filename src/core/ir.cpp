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
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::Generic || is_fp8(d);
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

const char* mode_name(Mode m) { return m == Mode::Elementwise ? "Elementwise" : "Reduction"; }

namespace ir {

using namespace trait;
static const OpInfo kOps[] = {
#define IRON_OP(name, mn, arity, traits) {mn, arity, traits},
#include "core/ops.def"
#undef IRON_OP
};

const OpInfo& op_info(Op op) { return kOps[size_t(op)]; }

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
  if (t != DType::Generic) return true;
  for (DType d : k.dtypes)
    if (!is_float(d)) return false;
  return true;
}

uint32_t dtypes_used(const Kernel& k) {
  static_assert(kNumDTypes <= 32, "dtypes_used is a 32-bit mask");
  uint32_t mask = 0;
  for (const Param& p : k.params) mask |= 1u << unsigned(p.dtype);
  walk(k, [&](Id id) { mask |= 1u << unsigned(k.insts[id].type); });
  return mask;
}

bool uses_lane_ops(const Kernel& k) {
  bool found = false;
  walk(k, [&](Id id) { found = found || has_trait(k.insts[id].op, trait::L); });
  return found;
}

uint64_t threadgroup_bytes(const Kernel& k, DType concrete) {
  uint64_t bytes = 0;
  walk(k, [&](Id id) {
    const Inst& in = k.insts[id];
    // Threadgroup arrays hold register values: 8 bytes for i64/u64, 4 for every other dtype
    // (16-bit floats and fp8 are held in f32, 8- and 16-bit integers in 32-bit registers).
    // Saturating: a count that overflows the total must fail the shared-memory check, not wrap
    // to a small number that passes it.
    if (in.op != Op::TgAlloc) return;
    const uint64_t slot = int_bits(resolve(in.type, concrete)) == 64 ? 8 : 4;
    bytes = num::saturating_add(bytes, num::saturating_mul(uint64_t(std::max<int64_t>(in.imm, 0)), slot));
  });
  return bytes;
}

}  // namespace ir
}  // namespace iron
