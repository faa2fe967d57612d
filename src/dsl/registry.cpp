// The kernel registry and its gate. Declarations arrive from static initializers; tracing is
// lazy (first use) so a malformed kernel becomes a clear error at the point it is asked for,
// never a crash during static initialization.
#include "iron/registry.hpp"

#include <algorithm>
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
  if (op == ir::Op::FenceThreadgroup || op == ir::Op::FenceDevice) return false;
  switch (op) {
    case Op::Load: case Op::Store: case Op::TgAlloc: case Op::TgLoad: case Op::TgStore: case Op::Param:
    case Op::LocalAlloc: case Op::LocalLoad: case Op::LocalStore:
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
  r.decls.push_back(decl);
  return int(r.decls.size() - 1);
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
    decl.body();
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
  if (!decl) throw Error("unknown kernel '" + std::string(name) + "'");
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
