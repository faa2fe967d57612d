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
#include "dsl/trace.hpp"

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
};

Registry& registry() {
  static Registry r;
  return r;
}

// Which built-ins and threadgroup operations each mode binds (seeds §2.5). program_id means
// the threadgroup index in Reduction mode; Elementwise has only the flat thread index, so a
// Reduction-style body registered as Elementwise would index garbage: reject it.
bool mode_allows(Mode mode, ir::Op op) {
  using ir::Op;
  switch (op) {
    case Op::ThreadId: return mode == Mode::Elementwise;
    case Op::ProgramId: case Op::LocalId: case Op::GroupSize: case Op::NumPrograms:
    case Op::LaneId: case Op::LaneWidth: case Op::SimdGroupId: case Op::NumSimdGroups:
    case Op::Barrier: case Op::TgAlloc: case Op::TgLoad: case Op::TgStore:
    case Op::LaneSum: case Op::LaneMax:
      return mode == Mode::Reduction;
    default: return true;
  }
}

void gate(const ir::Kernel& k, ir::Diagnostics& diags) {
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if (!mode_allows(k.mode, in.op))
      diags.error(in.loc, std::string("kernel '") + k.name + "' (mode " + mode_name(k.mode) + ") uses " +
                              ir::mnemonic(in.op) + ", which mode " + mode_name(k.mode) +
                              " does not bind; declare the mode that does (" +
                              (k.mode == Mode::Elementwise ? "Reduction" : "Elementwise") + ")");
  });
}

}  // namespace

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

ir::Kernel trace_kernel(const KernelDecl& decl) {
  dsl::detail::Trace t;
  t.k.name = decl.name;
  t.k.mode = decl.mode;
  t.k.dtypes = decl.dtypes;
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
    std::string where = std::string(" (registered at ") + decl.file + ":" + std::to_string(decl.line) + ")";
    throw Error("kernel '" + std::string(decl.name) + "' is malformed" + where + ":\n" + t.diags.render(t.k));
  }
  return std::move(t.k);
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
