// Kernel-owned launch: selectors, plan checking and plan execution (include/iron/launch.hpp).
#include "iron/launch.hpp"

#include <set>
#include <vector>

#include "iron/blas.hpp"

#include "core/ir.hpp"

namespace iron {

void zero_scratch(Context& ctx, const DeviceBuffer& buf, const Stream& stream) {
  const std::vector<unsigned char> zeros(buf.bytes(), 0);
  ctx.upload(buf, zeros.data(), zeros.size(), stream);
}

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

constexpr const char* kBlasGemm = "blas.gemm";
constexpr const char* kBlasGemmScalars[] = {"m", "n", "k", "a_col", "lda", "a_off", "b_col", "ldb", "b_off", "out"};

int64_t step_int(const LaunchStep& s, const char* name) {
  auto it = s.constexprs.find(name);
  if (it == s.constexprs.end()) throw Error("library step " + s.kernel + " has no scalar '" + name + "'");
  return int64_t(it->second.as_double());
}

DType out_dtype(int64_t code, DType t) {
  return code == 0 ? t : code == 1 ? DType::F32 : code == 2 ? DType::F16 : DType::BF16;
}

const DeviceBuffer& find_buffer(const Bindings& all, const std::string& name, const LaunchStep& s, size_t i) {
  for (const auto& [n, b] : all)
    if (n == name) return b;
  throw Error("step " + std::to_string(i + 1) + " (" + s.kernel + ") of the plan binds buffer '" + name +
              "', which the call does not pass and the plan does not allocate");
}

Bindings with_scratch(Context& ctx, const LaunchPlan& plan, const Bindings& buffers) {
  Bindings all = buffers;
  for (const ScratchBuffer& b : plan.scratch) {
    all.emplace_back(b.name, ctx.alloc(b.dtype, b.count));
    if (b.zeroed) zero_scratch(ctx, all.back().second);
  }
  return all;
}

// The iron::blas::gemm arguments of a "blas.gemm" step: A and B views from their offsets.
blas::GemmArgs gemm_args(Context& ctx, const LaunchStep& s, const Bindings& all, size_t i) {
  blas::GemmArgs g;
  g.m = step_int(s, "m"), g.n = step_int(s, "n"), g.k = step_int(s, "k");
  auto operand = [&](const char* param, const char* col, const char* ld, const char* off, int64_t rows, int64_t cols) {
    const DeviceBuffer& buf = find_buffer(all, step_buffer(s, param), s, i);
    const bool cm = step_int(s, col) != 0;
    const int64_t stride = step_int(s, ld), first = step_int(s, off);
    const uint64_t span = uint64_t(first) + uint64_t((cm ? cols : rows) - 1) * uint64_t(stride) + uint64_t(cm ? rows : cols);
    if (span > buf.count())
      throw Error("step " + std::to_string(i + 1) + " (" + s.kernel + "): " + param + " needs " + std::to_string(span) +
                  " elements but its buffer holds " + std::to_string(buf.count()));
    return blas::Matrix{first == 0 && span == buf.count() ? buf : ctx.view(buf, size_t(first), size_t(span - first)),
                        cm ? blas::Order::ColMajor : blas::Order::RowMajor, stride};
  };
  g.a = operand("a", "a_col", "lda", "a_off", g.m, g.k);
  g.b = operand("b", "b_col", "ldb", "b_off", g.k, g.n);
  g.c = {find_buffer(all, step_buffer(s, "c"), s, i), blas::Order::RowMajor, g.n};
  return g;
}

}  // namespace

bool LaunchPlan::has_library_step() const {
  for (const LaunchStep& s : steps)
    if (s.library) return true;
  return false;
}

std::vector<std::pair<std::string, DType>> library_step_buffers(const LaunchStep& step, Instantiation dtype) {
  if (step.kernel != kBlasGemm) throw Error("no library routine '" + step.kernel + "' (the one routine is blas.gemm)");
  return {{"a", dtype.t}, {"b", dtype.t}, {"c", out_dtype(step_int(step, "out"), dtype.t)}};
}

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
    if (s.library) out += s.kernel + " (library) " + std::to_string(step_int(s, "m")) + "x" + std::to_string(step_int(s, "n")) +
                          "x" + std::to_string(step_int(s, "k"));
    else out += s.kernel + " grid " + dim_text(s.grid) + " tg " + dim_text(s.threadgroup);
  }
  return out;
}

const std::string& step_buffer(const LaunchStep& step, const std::string& param) {
  for (const auto& [p, b] : step.bind)
    if (p == param) return b;
  return param;
}

Constexprs step_scalars(const LaunchStep& step, const Bindings& buffers) {
  Constexprs out = step.constexprs;
  for (const LaunchStep::Map& mp : step.maps) {
    const DeviceBuffer* buf = nullptr;
    for (const auto& [name, b] : buffers)
      if (name == mp.buffer) buf = &b;
    if (!buf)
      throw Error("step " + step.kernel + " maps tensor-map parameter '" + mp.param + "' over buffer '" + mp.buffer +
                  "', which the call does not pass and the plan does not allocate");
    TensorMap m;
    m.buffer = *buf;
    m.dims = mp.dims;
    m.strides = mp.strides;
    m.box = mp.box;
    m.swizzle = mp.swizzle;
    out.insert_or_assign(mp.param, ScalarValue(std::move(m)));
  }
  return out;
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
    if (s.library) {
      if (s.kernel != kBlasGemm) throw Error(at + ": no library routine of that name (the one routine is blas.gemm)");
      for (const char* name : kBlasGemmScalars)
        if (!s.constexprs.count(name)) throw Error(at + ": leaves the routine's scalar '" + name + "' unset");
      for (const auto& [name, value] : s.constexprs) {
        bool known = false;
        for (const char* want : kBlasGemmScalars) known = known || name == want;
        if (!known) throw Error(at + ": sets scalar '" + name + "', which the routine does not take");
      }
      for (const auto& [param, buffer] : s.bind) {
        if (param != "a" && param != "b" && param != "c")
          throw Error(at + ": binds '" + param + "', which is not a buffer of the routine (a, b, c)");
        if (buffer.empty()) throw Error(at + ": binds '" + param + "' to an unnamed buffer");
      }
      continue;
    }
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
    std::set<std::string> mapped;
    for (const LaunchStep::Map& mp : s.maps) {
      const int idx = k.find_param(mp.param);
      if (idx < 0 || k.params[size_t(idx)].kind != ir::ParamKind::Blob || !k.params[size_t(idx)].tensor_map)
        throw Error(at + ": maps '" + mp.param + "', which is not a tensor-map parameter of the kernel");
      if (s.constexprs.count(mp.param) || !mapped.insert(mp.param).second)
        throw Error(at + ": sets tensor-map parameter '" + mp.param + "' twice");
      if (mp.buffer.empty()) throw Error(at + ": maps '" + mp.param + "' over an unnamed buffer");
    }
    for (const ir::Param& p : k.params)
      if ((p.kind == ir::ParamKind::Scalar || p.kind == ir::ParamKind::Blob) && !s.constexprs.count(p.name) &&
          !mapped.count(p.name))
        throw Error(at + ": leaves the kernel's " + (p.tensor_map ? "tensor map '" : p.kind == ir::ParamKind::Blob ? "blob '" : "scalar '") +
                    p.name + "' unset");
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
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].library)
      throw Error("step " + std::to_string(i + 1) + " of the plan runs the library routine " + plan.steps[i].kernel +
                  ", not a kernel: a launch sequence cannot hold it (run the plan with run_plan, time it with time_plan)");
  Bindings all = with_scratch(ctx, plan, buffers);
  std::vector<SequenceLaunch> out;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const LaunchStep& s = plan.steps[i];
    SequenceLaunch l;
    l.kernel = &kernel_ir(s.kernel);
    l.dtype = dtype;
    l.constexprs = step_scalars(s, all);
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
  if (plan.has_library_step()) {
    // Step by step: kernels through dispatch_with_grid, library routines on the default stream.
    Bindings all = with_scratch(ctx, plan, buffers);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const LaunchStep& s = plan.steps[i];
      try {
        if (s.library) {
          blas::gemm(ctx, gemm_args(ctx, s, all, i));
          continue;
        }
        LaunchPlan one;
        one.steps.push_back(s);
        for (const SequenceLaunch& l : plan_launches(ctx, one, dtype, all))
          ctx.dispatch_with_grid(*l.kernel, l.dtype, l.buffers, l.constexprs, l.grid, l.threadgroup);
      } catch (const Error& e) {
        throw Error("step " + std::to_string(i + 1) + " of the plan: " + e.what());
      }
    }
    return;
  }
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
  if (plan.has_library_step()) {
    if (plan.steps.size() != 1)
      throw Error("time_plan: a plan that mixes a library routine with kernels cannot be timed as one sample (" +
                  plan.describe() + ")");
    const Bindings all = with_scratch(ctx, plan, buffers);
    return blas::time_gemm(ctx, gemm_args(ctx, plan.steps.front(), all, 0), opts);
  }
  return ctx.time_sequence(plan_launches(ctx, plan, dtype, buffers), opts);
}

LaunchPlan launch(Context& ctx, std::string_view family, const Call& call, const Bindings& buffers) {
  LaunchPlan plan = plan_launch(family, call, ctx.info());
  run_plan(ctx, plan, call.dtype, buffers);
  return plan;
}

}  // namespace iron
