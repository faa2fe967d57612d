// Kernel-owned launch: selectors, plan checking and plan execution (include/iron/launch.hpp).
#include "iron/launch.hpp"

#include <set>

#include "core/ir.hpp"

namespace iron {

namespace {

const ScalarValue& arg_of(const Call& call, std::string_view name) {
  auto it = call.args.find(name);
  if (it == call.args.end()) {
    std::string have;
    for (const auto& [k, v] : call.args) have += (have.empty() ? "" : ", ") + k;
    throw Error("the call has no argument '" + std::string(name) + "' (it has: " + (have.empty() ? "none" : have) + ")");
  }
  return it->second;
}

std::string dim_text(Dim3 d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

std::string where(const SelectorDecl& s) {
  return source_path(s.file) + ":" + std::to_string(s.line);
}

}  // namespace

int64_t Call::size(std::string_view name) const {
  const ScalarValue& v = arg_of(*this, name);
  switch (v.kind()) {
    case ScalarValue::Kind::Int:
      if (v.i() < 0) throw Error("call argument '" + std::string(name) + "' = " + v.text() + " is negative");
      return v.i();
    case ScalarValue::Kind::UInt:
      if (v.u() > uint64_t(INT64_MAX)) throw Error("call argument '" + std::string(name) + "' = " + v.text() + " is too large");
      return int64_t(v.u());
    case ScalarValue::Kind::Float: case ScalarValue::Kind::Blob: case ScalarValue::Kind::TensorMap: break;
  }
  throw Error("call argument '" + std::string(name) + "' = " + v.text() + " is not an integer");
}

double Call::scalar(std::string_view name) const { return arg_of(*this, name).as_double(); }

int64_t Call::size_or(std::string_view name, int64_t fallback) const { return has(name) ? size(name) : fallback; }

double Call::scalar_or(std::string_view name, double fallback) const { return has(name) ? scalar(name) : fallback; }

std::string LaunchPlan::describe() const {
  std::string out;
  for (const LaunchStep& s : steps) {
    if (!out.empty()) out += "; ";
    out += s.kernel + " grid " + dim_text(s.grid) + " tg " + dim_text(s.threadgroup);
  }
  return out;
}

const std::string& step_buffer(const LaunchStep& step, const std::string& param) {
  for (const auto& [p, b] : step.bind)
    if (p == param) return b;
  return param;
}

LaunchPlan plan_launch(std::string_view family, const Call& call, const DeviceInfo& device) {
  const SelectorDecl* sel = find_selector(family);
  if (!sel) {
    std::string known;
    for (const SelectorDecl* s : registered_selectors()) known += (known.empty() ? "" : ", ") + std::string(s->family);
    throw Error("no kernel family '" + std::string(family) + "' has a selector (registered: " +
                (known.empty() ? "none" : known) + ")");
  }
  const std::string head = "family " + std::string(sel->family) + " (selector at " + where(*sel) + ")";
  LaunchPlan plan;
  try {
    plan = sel->fn(call, device);
  } catch (const Error& e) {
    throw Error(head + " cannot serve the call at " + instantiation_name(call.dtype) + ": " + e.what());
  }
  if (plan.steps.empty()) throw Error(head + " returned a plan with no step");
  std::set<std::string> scratch;
  for (const ScratchBuffer& b : plan.scratch) {
    if (b.name.empty() || !scratch.insert(b.name).second)
      throw Error(head + ": scratch buffer '" + b.name + "' is unnamed or declared twice");
    if (b.count == 0) throw Error(head + ": scratch buffer '" + b.name + "' has no elements");
    if (call.args.count(b.name)) throw Error(head + ": scratch buffer '" + b.name + "' shadows a call argument");
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const LaunchStep& s = plan.steps[i];
    const std::string at = head + ", step " + std::to_string(i + 1) + " (" + s.kernel + ")";
    if (!find_kernel_decl(s.kernel))
      throw Error(at + ": no kernel of that name was built (a combination the family never declared)");
    const ir::Kernel& k = kernel_ir(s.kernel);
    if (std::string why; !ir::declares(k, call.dtype, &why))
      throw Error(at + ": the kernel was never built for " + instantiation_name(call.dtype) + " (" + why + ")");
    for (Dim3 d : {s.grid, s.threadgroup})
      if (d.x == 0 || d.y == 0 || d.z == 0)
        throw Error(at + ": grid " + dim_text(s.grid) + ", threadgroup " + dim_text(s.threadgroup) + " has a zero axis");
    for (const auto& [name, value] : s.constexprs) {
      const int idx = k.find_param(name);
      if (idx < 0 || k.params[size_t(idx)].kind != ir::ParamKind::Scalar)
        throw Error(at + ": sets scalar '" + name + "', which the kernel does not declare");
    }
    for (const ir::Param& p : k.params)
      if (p.kind == ir::ParamKind::Scalar && !s.constexprs.count(p.name))
        throw Error(at + ": leaves the kernel's scalar '" + p.name + "' unset");
    for (const auto& [param, buffer] : s.bind) {
      const int idx = k.find_param(param);
      if (idx < 0 || k.params[size_t(idx)].kind != ir::ParamKind::Buffer)
        throw Error(at + ": binds '" + param + "', which is not a buffer parameter of the kernel");
      if (buffer.empty()) throw Error(at + ": binds '" + param + "' to an unnamed buffer");
    }
  }
  return plan;
}

std::vector<SequenceLaunch> plan_launches(Context& ctx, const LaunchPlan& plan, Instantiation dtype, const Bindings& buffers) {
  Bindings all = buffers;
  for (const ScratchBuffer& b : plan.scratch) all.emplace_back(b.name, ctx.alloc(b.dtype, b.count));
  std::vector<SequenceLaunch> out;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const LaunchStep& s = plan.steps[i];
    SequenceLaunch l;
    l.kernel = &kernel_ir(s.kernel);
    l.dtype = dtype;
    l.constexprs = s.constexprs;
    l.grid = s.grid;
    l.threadgroup = s.threadgroup;
    for (const ir::Param& p : l.kernel->params) {
      if (p.kind != ir::ParamKind::Buffer) continue;
      const std::string& want = step_buffer(s, p.name);
      bool found = false;
      for (const auto& [name, buf] : all)
        if (name == want) {
          l.buffers.emplace_back(p.name, buf);
          found = true;
          break;
        }
      if (!found)
        throw Error("step " + std::to_string(i + 1) + " (" + s.kernel + ") of the plan binds parameter '" + p.name +
                    "' to buffer '" + want + "', which the call does not pass and the plan does not allocate");
    }
    out.push_back(std::move(l));
  }
  return out;
}

void run_plan(Context& ctx, const LaunchPlan& plan, Instantiation dtype, const Bindings& buffers) {
  std::vector<SequenceLaunch> seq = plan_launches(ctx, plan, dtype, buffers);
  for (size_t i = 0; i < seq.size(); ++i) {
    const SequenceLaunch& l = seq[i];
    try {
      ctx.dispatch_with_grid(*l.kernel, l.dtype, l.buffers, l.constexprs, l.grid, l.threadgroup);
    } catch (const Error& e) {
      throw Error("step " + std::to_string(i + 1) + " of the plan: " + e.what());
    }
  }
}

Timing time_plan(Context& ctx, const LaunchPlan& plan, Instantiation dtype, const Bindings& buffers,
                 const TimingOptions& opts) {
  return ctx.time_sequence(plan_launches(ctx, plan, dtype, buffers), opts);
}

LaunchPlan launch(Context& ctx, std::string_view family, const Call& call, const Bindings& buffers) {
  LaunchPlan plan = plan_launch(family, call, ctx.info());
  run_plan(ctx, plan, call.dtype, buffers);
  return plan;
}

}  // namespace iron
