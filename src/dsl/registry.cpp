// The kernel registry and its gate. Declarations arrive from static initializers; tracing is
// lazy (first use) so a malformed kernel becomes a clear error at the point it is asked for,
// never a crash during static initialization.
#include "iron/launch.hpp"
#include "iron/registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "core/ir.hpp"
#include "core/modes.hpp"
#include "dsl/trace.hpp"
#include "passes/pass.hpp"

namespace iron {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<KernelDecl> decls;  // deque: pointers stay valid as kernels register
  struct Traced {
    std::once_flag once;
    std::unique_ptr<ir::Kernel> kernel;
    std::string error;
  };
  std::map<std::string, std::unique_ptr<Traced>, std::less<>> traced;
  std::deque<DeviceFunctionDecl> functions;
  std::map<std::string, std::unique_ptr<Traced>, std::less<>> traced_functions;
  std::deque<VariantFamilyDecl> families;
  std::deque<KernelVariant> variants;  // owned values of every expanded kernel (KernelDecl::variant)
  std::vector<std::string> errors;
  std::deque<SelectorDecl> selectors;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Device functions compute values only: no built-ins, memory or synchronisation, so inlining
// them is valid in any kernel of any mode.
bool function_allows(ir::Op op) {
  using ir::Op;
  if (ir::has_trait(op, ir::trait::B) || ir::has_trait(op, ir::trait::L) || ir::is_atomic(op) || op == ir::Op::AtomicAddPair) return false;
  if (op == ir::Op::FenceThreadgroup || op == ir::Op::FenceDevice || ir::is_hopper_op(op)) return false;
  switch (op) {
    case Op::Load: case Op::Store: case Op::TgAlloc: case Op::TgLoad: case Op::TgStore: case Op::Param:
    case Op::LocalAlloc: case Op::LocalLoad: case Op::LocalStore: case Op::AsyncCopy: case Op::AsyncCommit:
    case Op::AsyncWait:
      return false;
    default: return true;
  }
}

void gate(const ir::Kernel& k, ir::Diagnostics& diags) {
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if (k.is_function) {
      if (!function_allows(in.op))
        diags.error(in.loc, std::string("device function '") + k.name + "' uses " + ir::mnemonic(in.op) +
                                "; device functions compute values from their arguments only");
      return;
    }
    // The mode table (core/modes.cpp, seeds §2.5): program_id means the threadgroup index and
    // thread_id the global thread position, so a body registered under the wrong mode would
    // index the wrong elements without crashing. Reject it, naming the mode(s) that bind the op.
    const int64_t axis = in.attr(ir::Attr::Axis);  // 0 for ops without an axis
    if (!ir::mode_binds(k.mode, in.op, axis)) {
      std::string binding = ir::modes_binding(in.op, axis);
      if (binding == "none") return;  // a bad axis, which the tracer reports
      bool one = binding.find(" or ") == std::string::npos;
      std::string what = ir::builtin_text(in.op, axis);
      if (in.op == ir::Op::ThreadId && in.type.elem() == DType::U64) what = "thread_id64(" + std::to_string(axis) + ")";
      diags.error(in.loc, std::string("kernel '") + k.name + "' (mode " + mode_name(k.mode) + ") uses " +
                              what + ", which mode " + mode_name(k.mode) +
                              " does not bind; declare " + (one ? "the mode" : "a mode") + " that does (" + binding +
                              ")");
    }
  });
}


std::string where(const char* file, int line) { return source_path(file) + ":" + std::to_string(line); }

const char* kind_name(VariantValue::Kind k) {
  switch (k) {
    case VariantValue::Kind::Int: return "int";
    case VariantValue::Kind::Type: return "type";
    case VariantValue::Kind::Float: return "float";
  }
  return "?";
}

bool is_ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

const VariantValue& variant_lookup(const KernelVariant& v, std::string_view axis, VariantValue::Kind want) {
  for (const auto& [name, value] : v.values) {
    if (name != axis) continue;
    if (value.kind != want)
      throw Error("variant family '" + v.family + "': axis '" + std::string(axis) + "' is a " + kind_name(value.kind) +
                  " axis, read as a " + kind_name(want) + " axis");
    return value;
  }
  std::string axes;
  for (const auto& entry : v.values) axes += (axes.empty() ? "" : ", ") + entry.first;
  throw Error("variant family '" + v.family + "' has no axis '" + std::string(axis) + "' (its axes: " + axes + ")");
}

// Checks `name` against every registered kernel; the caller holds the lock.
std::string clash_with(const Registry& r, const std::string& name) {
  for (const KernelDecl& d : r.decls) {
    if (name != d.name) continue;
    std::string other = "kernel '" + name + "' registered at " + where(d.file, d.line);
    if (d.variant) other = "kernel '" + name + "' of variant family '" + d.variant->family + "' registered at " + where(d.file, d.line);
    return other;
  }
  return "";
}
}  // namespace

std::string source_path(const char* file) {
#ifdef IRON_SOURCE_ROOT
  static const std::string root = std::string(IRON_SOURCE_ROOT) + "/";
  if (std::string_view(file).substr(0, root.size()) == root) return file + root.size();
#endif
  return file;
}

int register_kernel(const KernelDecl& decl) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::string clash = clash_with(r, decl.name);
  if (!clash.empty()) {
    r.errors.push_back(where(decl.file, decl.line) + ": kernel '" + decl.name + "' is registered twice: " + clash +
                       " has that name");
    return -1;
  }
  r.decls.push_back(decl);
  return int(r.decls.size() - 1);
}

VariantAxis int_axis(const char* name, std::vector<int64_t> values) {
  VariantAxis a{name, VariantValue::Kind::Int, {}};
  for (int64_t v : values) a.values.push_back(VariantValue{VariantValue::Kind::Int, v, DType::Void, 0});
  return a;
}
VariantAxis type_axis(const char* name, std::vector<DType> values) {
  VariantAxis a{name, VariantValue::Kind::Type, {}};
  for (DType v : values) a.values.push_back(VariantValue{VariantValue::Kind::Type, 0, v, 0});
  return a;
}
VariantAxis float_axis(const char* name, std::vector<double> values) {
  VariantAxis a{name, VariantValue::Kind::Float, {}};
  for (double v : values) a.values.push_back(VariantValue{VariantValue::Kind::Float, 0, DType::Void, v});
  return a;
}

int64_t KernelVariant::i(std::string_view axis) const { return variant_lookup(*this, axis, VariantValue::Kind::Int).i; }
DType KernelVariant::type(std::string_view axis) const { return variant_lookup(*this, axis, VariantValue::Kind::Type).t; }
double KernelVariant::f(std::string_view axis) const { return variant_lookup(*this, axis, VariantValue::Kind::Float).f; }

std::string variant_value_text(const VariantValue& v) {
  switch (v.kind) {
    case VariantValue::Kind::Int: return (v.i < 0 ? "m" : "") + std::to_string(v.i < 0 ? -(v.i + 1) + uint64_t(1) : uint64_t(v.i));
    case VariantValue::Kind::Type: return dtype_name(v.t);
    case VariantValue::Kind::Float: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", v.f);
      std::string out;
      for (const char* c = buf; *c; ++c) {
        if (*c == '-') out += 'm';
        else if (*c == '.') out += 'p';
        else if (*c != '+') out += *c;
      }
      return out;
    }
  }
  return "?";
}

std::string KernelVariant::describe() const {
  std::string out;
  for (const auto& [axis, value] : values) {
    std::string text;
    if (value.kind == VariantValue::Kind::Float) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", value.f);
      text = buf;
    } else {
      text = variant_value_text(value);
    }
    out += (out.empty() ? "" : " ") + axis + "=" + text;
  }
  return out;
}

std::vector<KernelVariant> expand_variants(const VariantFamilyDecl& decl) {
  const std::string family = decl.family ? decl.family : "";
  auto fail = [&](const std::string& why) {
    throw Error(where(decl.file, decl.line) + ": variant family '" + family + "': " + why);
  };
  if (family.empty() || !std::all_of(family.begin(), family.end(), is_ident_char)) fail("the family name must be an identifier");
  if (!decl.body) fail("no body");
  if (decl.axes.empty()) fail("declares no axis (a kernel without variants is an IRON_KERNEL)");
  for (size_t a = 0; a < decl.axes.size(); ++a) {
    const VariantAxis& axis = decl.axes[a];
    const std::string name = axis.name ? axis.name : "";
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_ident_char))
      fail("axis " + std::to_string(a) + " is named '" + name + "'; an axis name is an identifier");
    for (size_t b = 0; b < a; ++b)
      if (name == decl.axes[b].name) fail("two axes are named '" + name + "'");
    if (axis.values.empty()) fail("axis '" + name + "' is empty; give it at least one value");
    for (const VariantValue& v : axis.values) {
      if (v.kind != axis.kind) fail("axis '" + name + "' mixes value kinds");
      if (v.kind == VariantValue::Kind::Float && !std::isfinite(v.f)) fail("axis '" + name + "' has a value that is not finite");
      if (v.kind == VariantValue::Kind::Type && (v.t == DType::Void || v.t == DType::Generic || v.t == DType::GenericW))
        fail("axis '" + name + "' has the value " + dtype_name(v.t) + "; a type axis takes concrete dtypes");
    }
  }
  // The suffix template: literal identifier characters and {AXIS} placeholders.
  struct Piece {
    std::string text;
    int axis = -1;
  };
  std::vector<Piece> pieces;
  const std::string suffix = decl.suffix ? decl.suffix : "";
  if (suffix.empty()) fail("the suffix template is empty; two or more variants need distinct names");
  for (size_t i = 0; i < suffix.size();) {
    if (suffix[i] == '{') {
      size_t close = suffix.find('}', i);
      if (close == std::string::npos) fail("the suffix template \"" + suffix + "\" has an unclosed '{'");
      std::string placeholder = suffix.substr(i + 1, close - i - 1);
      int found = -1;
      for (size_t a = 0; a < decl.axes.size(); ++a)
        if (placeholder == decl.axes[a].name) found = int(a);
      if (found < 0) {
        std::string axes;
        for (const VariantAxis& axis : decl.axes) axes += (axes.empty() ? "" : ", ") + std::string(axis.name);
        fail("the suffix template \"" + suffix + "\" names {" + placeholder + "}, which is not an axis (its axes: " + axes + ")");
      }
      pieces.push_back({"", found});
      i = close + 1;
    } else {
      if (!is_ident_char(suffix[i]))
        fail("the suffix template \"" + suffix + "\" has '" + std::string(1, suffix[i]) +
             "'; an entry name holds letters, digits and '_'");
      if (pieces.empty() || pieces.back().axis >= 0) pieces.push_back({"", -1});
      pieces.back().text += suffix[i++];
    }
  }
  // The product of the axes, the first axis varying slowest.
  size_t total = 1;
  for (const VariantAxis& axis : decl.axes) {
    total *= axis.values.size();
    if (total > 4096) fail("expands to more than 4096 kernels");
  }
  std::vector<KernelVariant> out;
  std::map<std::string, size_t> seen;
  for (size_t n = 0; n < total; ++n) {
    KernelVariant v;
    v.family = family;
    size_t rest = n;
    std::vector<size_t> index(decl.axes.size());
    for (size_t a = decl.axes.size(); a-- > 0;) {
      index[a] = rest % decl.axes[a].values.size();
      rest /= decl.axes[a].values.size();
    }
    for (size_t a = 0; a < decl.axes.size(); ++a) v.values.emplace_back(decl.axes[a].name, decl.axes[a].values[index[a]]);
    v.name = family + "_";
    for (const Piece& p : pieces) v.name += p.axis < 0 ? p.text : variant_value_text(v.values[size_t(p.axis)].second);
    auto [it, fresh] = seen.emplace(v.name, out.size());
    if (!fresh)
      fail("two variants have the name '" + v.name + "' (" + out[it->second].describe() + " and " + v.describe() +
           "); put every axis with more than one value into the suffix template");
    out.push_back(std::move(v));
  }
  return out;
}

int register_variant_family(const VariantFamilyDecl& decl) {
  Registry& r = registry();
  std::vector<KernelVariant> variants;
  try {
    variants = expand_variants(decl);
  } catch (const Error& e) {
    std::lock_guard lock(r.mu);
    r.errors.push_back(e.what());
    return -1;
  }
  std::lock_guard lock(r.mu);
  for (const KernelVariant& v : variants) {
    std::string clash = clash_with(r, v.name);
    if (!clash.empty()) {
      r.errors.push_back(where(decl.file, decl.line) + ": variant family '" + decl.family + "': its kernel '" + v.name +
                         "' (" + v.describe() + ") clashes with the " + clash);
      return -1;
    }
  }
  r.families.push_back(decl);
  for (KernelVariant& v : variants) {
    r.variants.push_back(std::move(v));
    const KernelVariant& owned = r.variants.back();
    KernelDecl kd{owned.name.c_str(), nullptr, decl.mode, decl.dtypes, decl.file, decl.line, decl.wtypes};
    kd.variant_body = decl.body;
    kd.variant = &owned;
    r.decls.push_back(std::move(kd));
  }
  return int(r.families.size() - 1);
}

std::vector<VariantFamilyInfo> registered_variant_families() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<VariantFamilyInfo> out;
  for (const VariantFamilyDecl& f : r.families) {
    VariantFamilyInfo info{&f, {}};
    for (const KernelVariant& v : r.variants)
      if (v.family == f.family) info.variants.push_back(&v);
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::string_view(a.decl->family) < b.decl->family; });
  return out;
}

std::vector<std::string> registry_errors() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.errors;
}

int register_selector(const SelectorDecl& decl) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const SelectorDecl& s : r.selectors)
    if (std::string_view(s.family) == decl.family) {
      r.errors.push_back(where(decl.file, decl.line) + ": selector '" + decl.family + "' is already registered at " +
                         where(s.file, s.line));
      return -1;
    }
  if (!decl.fn) {
    r.errors.push_back(where(decl.file, decl.line) + ": selector '" + decl.family + "' has no function");
    return -1;
  }
  r.selectors.push_back(decl);
  return int(r.selectors.size() - 1);
}

std::vector<const SelectorDecl*> registered_selectors() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<const SelectorDecl*> out;
  for (const SelectorDecl& s : r.selectors) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return std::string_view(a->family) < b->family; });
  return out;
}

const SelectorDecl* find_selector(std::string_view family) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const SelectorDecl& s : r.selectors)
    if (family == s.family) return &s;
  return nullptr;
}

std::vector<const KernelDecl*> registered_kernels() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<const KernelDecl*> out;
  for (const KernelDecl& d : r.decls) out.push_back(&d);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return std::string_view(a->name) < b->name; });
  return out;
}

const KernelDecl* find_kernel_decl(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const KernelDecl& d : r.decls)
    if (name == d.name) return &d;
  return nullptr;
}

namespace {
ir::Kernel trace(const KernelDecl& decl, bool is_function) {
  dsl::detail::Trace t;
  t.k.is_function = is_function;
  t.k.name = decl.name;
  t.k.mode = decl.mode;
  t.k.dtypes = decl.dtypes;
  t.k.wtypes = decl.wtypes;
  dsl::detail::Trace* prev = dsl::detail::set_trace(&t);
  try {
    if (decl.variant_body && decl.variant)
      decl.variant_body(*decl.variant);
    else if (decl.body)
      decl.body();
    else
      t.diags.error({}, "the declaration has no body");
  } catch (const std::exception& e) {
    t.diags.error({}, std::string("tracing threw: ") + e.what());
  }
  dsl::detail::set_trace(prev);
  gate(t.k, t.diags);
  if (t.diags.empty()) ir::verify(t.k, t.diags);
  if (!t.diags.empty()) {
    std::string where = " (registered at " + source_path(decl.file) + ":" + std::to_string(decl.line) + ")";
    throw Error(std::string(is_function ? "device function '" : "kernel '") + decl.name + "' is malformed" + where +
                ":\n" + t.diags.render(t.k));
  }
  return std::move(t.k);
}

const ir::Kernel* resolve_function(std::string_view name) { return device_function_ir(name); }
}  // namespace

ir::Kernel trace_kernel(const KernelDecl& decl) { return trace(decl, false); }

int register_device_function(const DeviceFunctionDecl& decl) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.functions.push_back(decl);
  // kernel_inline finds callees through this hook; the passes library cannot see the registry.
  passes::set_function_resolver(&resolve_function);
  return int(r.functions.size() - 1);
}

std::vector<const DeviceFunctionDecl*> registered_device_functions() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<const DeviceFunctionDecl*> out;
  for (const DeviceFunctionDecl& d : r.functions) out.push_back(&d);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return std::string_view(a->name) < b->name; });
  return out;
}

const ir::Kernel* device_function_ir(std::string_view name) {
  Registry& r = registry();
  const DeviceFunctionDecl* decl = nullptr;
  Registry::Traced* slot;
  {
    std::lock_guard lock(r.mu);
    for (const DeviceFunctionDecl& d : r.functions)
      if (name == d.name) decl = &d;
    if (!decl) return nullptr;
    auto it = r.traced_functions.find(name);
    if (it == r.traced_functions.end())
      it = r.traced_functions.emplace(std::string(name), std::make_unique<Registry::Traced>()).first;
    slot = it->second.get();
  }
  std::call_once(slot->once, [&] {
    try {
      slot->kernel = std::make_unique<ir::Kernel>(
          trace(KernelDecl{decl->name, decl->body, Mode::Elementwise, {}, decl->file, decl->line}, true));
    } catch (const Error& e) {
      slot->error = e.what();
    }
  });
  if (!slot->kernel) throw Error(slot->error);
  return slot->kernel.get();
}

bool is_registry_kernel(const ir::Kernel* k) {
  if (!k) return false;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.traced.find(k->name);
  return it != r.traced.end() && it->second->kernel.get() == k;
}

const ir::Kernel& kernel_ir(std::string_view name) {
  const KernelDecl* decl = find_kernel_decl(name);
  if (!decl) {
    // A refused declaration may be why: say so rather than only "unknown".
    std::string why;
    for (const std::string& e : registry_errors()) why += "\n  " + e;
    throw Error("unknown kernel '" + std::string(name) + "'" + (why.empty() ? "" : "; the registry refused:" + why));
  }
  Registry& r = registry();
  Registry::Traced* slot;
  {
    std::lock_guard lock(r.mu);
    auto it = r.traced.find(name);
    if (it == r.traced.end()) it = r.traced.emplace(std::string(name), std::make_unique<Registry::Traced>()).first;
    slot = it->second.get();
  }
  std::call_once(slot->once, [&] {
    try {
      slot->kernel = std::make_unique<ir::Kernel>(trace_kernel(*decl));
    } catch (const Error& e) {
      slot->error = e.what();
    }
  });
  if (!slot->kernel) throw Error(slot->error);
  return *slot->kernel;
}

}  // namespace iron
