// iron-runner's engine. The CLI spawns the runner and reads one JSON message per line; the
// runner links the kernel library, so its registries are populated here and only here.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "core/protocol.hpp"
#include "harness/build_outputs.hpp"
#include "harness/mutate.hpp"
#include "harness/runner.hpp"
#include "passes/pass.hpp"
#include "iron/launch.hpp"
#include "iron/registry.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"

namespace iron {

using nlohmann::json;

namespace {

void send(const json& msg) {
  std::cout << protocol::encode(msg) << "\n" << std::flush;
}

}  // namespace

std::optional<Instantiation> parse_dtype_filter(const std::string& s) {
  if (s.empty()) return std::nullopt;
  Instantiation in;
  if (!parse_instantiation(s, in)) throw Error("unknown dtype '" + s + "' (a dtype, or T,W as in f16,bf16)");
  return in;
}

bool dtype_filter_matches(const std::optional<Instantiation>& only, Instantiation in) {
  if (!only) return true;
  return only->has_w() ? *only == in : only->t == in.t;
}

std::string unsupported_dtype(const DeviceInfo& dev, Instantiation in) {
  for (DType d : {in.t, in.w})
    if (std::string why; !dtype_supported(dev, d, why))
      return "device " + dev.name + " does not support " + dtype_name(d) + " (" + why + ")";
  return "";
}

std::string dtype_label_problem(const TestDecl& decl, const ir::Kernel& k, Instantiation in) {
  const DType dtype = in.t;
  std::string label = std::string("case ") + decl.kernel + "/" + decl.name + " is labelled " + instantiation_name(in);
  // W first: a kernel with W needs a case that names it, one without W a case that does not.
  if (!k.wtypes.empty() || in.has_w()) {
    Instantiation w_check{k.dtypes.empty() ? DType::F32 : in.t, in.w};
    if (std::find(k.dtypes.begin(), k.dtypes.end(), in.t) == k.dtypes.end() && !k.dtypes.empty()) w_check.t = k.dtypes.front();
    if (std::string why; !ir::declares(k, w_check, &why)) return label + ", but " + why;
  }
  if (!k.dtypes.empty()) {
    if (std::find(k.dtypes.begin(), k.dtypes.end(), dtype) != k.dtypes.end()) return "";
    std::string list;
    for (DType d : k.dtypes) list += (list.empty() ? "" : ", ") + std::string(dtype_name(d));
    return label + ", a dtype kernel " + k.name + " is not declared for (it takes T = " + list + ")";
  }
  // Not generic: the kernel is one program whatever the label, so the label must be a dtype its
  // buffers actually have, else the case would claim coverage it does not give.
  std::set<std::string> used;
  for (const ir::Param& p : k.params)
    if (p.kind == ir::ParamKind::Buffer) {
      if (p.dtype == dtype) return "";
      used.insert(dtype_name(p.dtype));
    }
  std::string list;
  for (const std::string& d : used) list += (list.empty() ? "" : ", ") + d;
  return label + ", a dtype kernel " + k.name + " never uses (it is not generic and its buffers are " +
         (list.empty() ? "none" : list) + ")";
}

uint64_t dispatch_threadgroup_bytes(const ir::Kernel& k, Instantiation dtype, const Constexprs& scalars) {
  std::vector<uint64_t> values(k.params.size(), 0);
  for (size_t i = 0; i < k.params.size(); ++i) {
    auto it = scalars.find(k.params[i].name);
    std::string why;
    if (k.params[i].kind == ir::ParamKind::Scalar && is_integer(k.params[i].dtype) && it != scalars.end() &&
        !scalar_bits(k.params[i].dtype, it->second, values[i], why))
      values[i] = 0;  // the dispatch reports the value
  }
  return ir::threadgroup_bytes(k, dtype, values.data());
}

namespace {

// A case that sets neither a grid nor a call, or a family case that sets a grid, is a mistake
// in the case: named, nothing dispatched.
std::string setup_problem(const TestDecl& decl, const TestSetup& setup, Instantiation dtype, bool family) {
  if (setup.instantiation() != dtype)
    return "the test body built a setup for dtype " + instantiation_name(setup.instantiation()) + " when asked for " +
           instantiation_name(dtype);
  if (!setup.has_oracle()) return "the test has no oracle";
  const std::string name = std::string(decl.kernel) + "/" + decl.name;
  const bool has_grid = setup.grid_size().x != 0 || setup.threadgroup().x != 0;
  if (family && !setup.has_call())
    return "case " + name + " is registered against the family " + decl.kernel +
           " but gives no .call(...): a family's case dispatches through its selector";
  if (family && has_grid)
    return "case " + name + " sets a grid, but " + decl.kernel + " is a family: its selector chooses the grid";
  if (!family && setup.has_call())
    return "case " + name + " gives a .call(...), but no selector is registered as " + decl.kernel + " (IRON_SELECTOR)";
  return "";
}

// The comparison's figures and verdict into the outcome.
void take_correctness(TestOutcome& r, const Correctness& c) {
  r.max_error = c.max_error;
  r.tolerance = c.rule.value;
  r.ulps = c.rule.ulps;
  r.compared = c.compared;
  r.message = c.message;
  r.status = r.message.empty() ? TestOutcome::Status::Pass : TestOutcome::Status::Fail;
}

// Skips a step whose threadgroup memory or buffers this device cannot hold; "" when it can.
std::string device_limit_skip(const Context& ctx, const ir::Kernel& k, Instantiation dtype, const Constexprs& scalars,
                              const std::function<uint64_t(const std::string&)>& count_of) {
  if (ir::has_dynamic_threadgroup(k)) {
    const uint64_t need = dispatch_threadgroup_bytes(k, dtype, scalars);
    const uint64_t limit = std::max(ctx.info().shared_memory_bytes, ctx.info().shared_memory_optin_bytes);
    if (need > limit)
      return "the case needs " + std::to_string(need) + " bytes of threadgroup memory in " + k.name + "; device " +
             ctx.info().name + " allows " + std::to_string(limit);
  }
  for (const ir::Param& p : k.params) {
    if (p.kind != ir::ParamKind::Buffer) continue;
    const uint64_t bytes = num::saturating_mul(count_of(p.name), uint64_t(dtype_size(ir::resolve(p.dtype, dtype))));
    if (bytes > ctx.info().max_buffer_bytes)
      return "the case binds " + std::to_string(bytes) + " bytes to buffer '" + p.name + "' of " + k.name +
             "; device " + ctx.info().name + " binds at most " + std::to_string(ctx.info().max_buffer_bytes) +
             " (maxStorageBufferRange)";
  }
  return "";
}

size_t setup_count(const TestSetup& setup, const std::string& name) {
  if (auto in = setup.inputs().find(name); in != setup.inputs().end()) return in->second.size();
  for (const auto& [n, count] : setup.outputs())
    if (n == name) return count;
  return 0;
}

// A case of a family: the selector plans the call on this device, then every step runs in order.
// `kernel`, when given, replaces the plan's kernel of the same name (mutation testing).
// `built` is the case's setup when the caller already built it.
TestOutcome run_family_case(Context& ctx, const TestDecl& decl, Instantiation dtype, double tol, const ir::Kernel* kernel,
                            std::optional<TestSetup> built) {
  TestOutcome r;
  r.ulps = std::isnan(tol);
  r.tolerance = r.ulps ? 0.5 : tol;
  const char* stage = "building the case";
  try {
    TestSetup setup = built ? std::move(*built) : decl.body(dtype.t, dtype.w);
    if (std::string bad = setup_problem(decl, setup, dtype, true); !bad.empty()) {
      r.message = bad + "; nothing was compared";
      return r;
    }
    stage = "planning the call";
    const LaunchPlan plan = plan_launch(decl.kernel, Call{dtype, setup.call_args()}, ctx.info());
    const BufferTypes types = plan_buffer_types(plan, dtype);
    if (!setup.outputs().empty()) r.tolerance = case_tolerance(setup, tol, types(setup.outputs().front().first, "output")).value;
    for (const ScratchBuffer& b : plan.scratch)
      if (setup.inputs().count(b.name) || setup_count(setup, b.name))
        throw Error("the case names buffer '" + b.name + "', which the plan allocates as scratch");
    for (const LaunchStep& s : plan.steps) {
      if (s.library) continue;  // a library routine checks its own arguments when it runs
      const ir::Kernel& k = kernel && kernel->name == s.kernel ? *kernel : kernel_ir(s.kernel);
      std::string skip = device_limit_skip(ctx, k, dtype, s.constexprs, [&](const std::string& param) -> uint64_t {
        const std::string& buf = step_buffer(s, param);
        for (const ScratchBuffer& b : plan.scratch)
          if (b.name == buf) return b.count;
        return setup_count(setup, buf);
      });
      if (!skip.empty()) {
        r.status = TestOutcome::Status::Skip;
        r.message = skip;
        return r;
      }
    }
    stage = "preparing the buffers";
    Resident res = make_resident(ctx, types, setup);
    stage = "dispatching";
    // A plan with a library routine runs step by step (run_plan); a kernel plan as launches.
    std::vector<SequenceLaunch> seq;
    if (plan.has_library_step()) run_plan(ctx, plan, dtype, res.bindings);
    else seq = plan_launches(ctx, plan, dtype, res.bindings);
    for (size_t i = 0; i < seq.size(); ++i) {
      const SequenceLaunch& l = seq[i];
      const ir::Kernel& k = kernel && kernel->name == l.kernel->name ? *kernel : *l.kernel;
      ctx.dispatch_with_grid(k, dtype, l.buffers, l.constexprs, l.grid, l.threadgroup);
    }
    ctx.synchronize();
    stage = "checking the outputs";
    take_correctness(r, check_outputs(ctx, res, setup, tol));
    if (!r.message.empty()) r.message += " [plan: " + plan.describe() + "]";
  } catch (const std::exception& e) {
    r.status = TestOutcome::Status::Fail;
    r.message = e.what();
    if (r.compared == 0) r.message += std::string(" (while ") + stage + "; nothing was compared)";
  }
  return r;
}

}  // namespace

bool case_runs_kernel(Context& ctx, const TestDecl& decl, Instantiation dtype, std::string_view name) {
  if (!find_selector(decl.kernel)) return name == decl.kernel;
  try {
    TestSetup setup = decl.body(dtype.t, dtype.w);
    if (!setup.has_call()) return name == decl.kernel;
    const LaunchPlan plan = plan_launch(decl.kernel, Call{dtype, setup.call_args()}, ctx.info());
    for (const LaunchStep& s : plan.steps)
      if (s.kernel == name) return true;
  } catch (const std::exception&) {
  }
  return false;
}

TestOutcome run_test_case(Context& ctx, const TestDecl& decl, Instantiation dtype, double tol, const ir::Kernel* kernel) {
  // A family's case gives a call; a family may share its name with a kernel, whose own cases
  // give a grid. A name with a selector and no kernel is a family whatever the case says.
  // The setup is built once here when a selector has the name, and handed on.
  std::optional<TestSetup> built;
  if (find_selector(decl.kernel)) {
    if (!find_kernel_decl(decl.kernel)) return run_family_case(ctx, decl, dtype, tol, kernel, std::nullopt);
    try {
      built.emplace(decl.body(dtype.t, dtype.w));
    } catch (const std::exception&) {
      // The direct path below builds it again and reports it.
    }
    if (built && built->has_call()) return run_family_case(ctx, decl, dtype, tol, kernel, std::move(built));
  }
  TestOutcome r;
  r.ulps = std::isnan(tol);
  r.tolerance = r.ulps ? 0.5 : tol;
  const char* stage = "tracing the kernel";
  try {
    const ir::Kernel& k = kernel ? *kernel : kernel_ir(decl.kernel);
    stage = "checking the case";
    std::string label = dtype_label_problem(decl, k, dtype);
    if (!label.empty()) {
      r.message = label + "; nothing was compared";
      return r;
    }
    TestSetup setup = built ? std::move(*built) : decl.body(dtype.t, dtype.w);
    if (std::string bad = setup_problem(decl, setup, dtype, false); !bad.empty()) {
      r.message = bad + "; nothing was compared";
      return r;
    }
    if (!setup.outputs().empty()) {
      int idx = k.find_param(setup.outputs().front().first);
      if (idx >= 0) r.tolerance = case_tolerance(setup, tol, ir::resolve(k.params[idx].dtype, dtype)).value;
    }
    // A case may size threadgroup arrays beyond what this device offers (arrays sized at
    // dispatch) or bind a buffer larger than the device binds (Vulkan: maxStorageBufferRange):
    // skipped, naming both figures, like a dtype the device lacks.
    if (std::string skip = device_limit_skip(ctx, k, dtype, setup.scalars(),
                                             [&](const std::string& p) -> uint64_t { return setup_count(setup, p); });
        !skip.empty()) {
      r.status = TestOutcome::Status::Skip;
      r.message = skip;
      return r;
    }
    stage = "preparing the buffers";
    Resident res = make_resident(ctx, k, setup, dtype);
    stage = "dispatching";
    ctx.dispatch_with_grid(k, dtype, res.bindings, setup.scalars(), setup.grid_size(), setup.threadgroup());
    ctx.synchronize();
    stage = "checking the outputs";
    take_correctness(r, check_outputs(ctx, res, setup, tol));
  } catch (const std::exception& e) {
    r.status = TestOutcome::Status::Fail;
    r.message = e.what();
    if (r.compared == 0) r.message += std::string(" (while ") + stage + "; nothing was compared)";
  }
  return r;
}

// A value as the command line wrote it: an integer when it is one, else a float.
// `option` names the command-line option in the error ("--specialize", "--arg").
ScalarValue scalar_from_text(const char* option, const std::string& name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  if (text.find_first_of(".eEnNiI") == std::string::npos) {
    if (text[0] == '-') {
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (!*end && !errno) return ScalarValue(v);
    } else {
      const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      if (!*end && !errno && text[0] != '+') return ScalarValue(v);
    }
  } else {
    const double v = std::strtod(text.c_str(), &end);
    if (!*end && !errno) return ScalarValue(v);
  }
  throw Error(std::string(option) + " " + name + "=" + text + ": '" + text + "' is not a number");
}

json device_message(const DeviceInfo& d) {
  return {{"type", "device"},
          {"backend", backend_name(d.backend)},
          {"available", true},
          {"name", d.name},
          {"driver", d.driver},
          {"arch", d.arch},
          {"lane_width", d.lane_width},
          {"max_threads_per_group", d.max_threads_per_group},
          {"shared_memory_bytes", d.shared_memory_bytes}, {"shared_memory_optin_bytes", d.shared_memory_optin_bytes},
          {"memory_bytes", d.memory_bytes},
          {"f16", d.f16},
          {"bf16", d.bf16},
          {"int8", d.int8},
          {"int16", d.int16},
          {"int64", d.int64},
          {"int64_atomics_buffer", d.int64_atomics_buffer},
          {"int64_atomics_shared", d.int64_atomics_shared},
          {"f32_denormals", d.f32_denormals_flushed ? "flushed" : "preserved"},
          {"float_controls", d.float_controls}};
}

namespace {

struct Args {
  std::string command;
  std::vector<std::string> positional;
  std::string filter, backend, dtype, emit, out_dir, arch = "sm_90a";
  bool ir = false, no_compile = false, locations = false, resources = false;
  bool keep_cache = false;  // clean: leave the compile cache alone
  std::string hip_arch = "gfx90a,gfx940";  // build: the HIP code objects' architectures
  bool mutate = false;     // test: mutation testing instead of the corpus
  uint32_t mutate_every = 1;  // test --mutate: run every n-th mutant (a deterministic subset)
  std::string mutate_skip;    // test --mutate: leave out kernels whose name contains this
  std::vector<std::string> exclude;  // test: leave out kernel/case names containing any of these
  // Pipeline controls (inspect).
  std::string pass, stop_after;
  std::set<std::string> print_after;
  bool stats = false, verify_each = false, time_passes = false, no_opt = false;
  std::string only, mutation;
  std::string skip_through;  // test: resume after this "kernel/case/dtype" (the CLI's crash recovery)
  // inspect / build: the threadgroup shape the code is built for (--threadgroup X[xY[xZ]]), as a
  // launch fact for the pipeline and, on CUDA, __launch_bounds__; all 0 (the default): any shape.
  uint32_t threadgroup[3] = {0, 0, 0};
  std::vector<std::string> call_args;  // run: --arg NAME=VALUE
  std::string grid, tg;                 // run: --grid, --tg (an explicit launch)
  std::vector<std::string> outs;        // run: --out-file NAME=FILE.npy (the CLI's --out)
  int samples = 0;                      // run: --samples N times the plan N times after warm-up
  bool flush_l2 = false, flush_l2_read = false;  // run: the L2 flush before each timed sample
  // inspect / build: --specialize NAME=VALUE (repeatable, or comma-separated), the values a
  // dispatch bakes into a kernel's code for its scalars declared specialize().
  std::vector<std::pair<std::string, std::string>> specialize;
};

// --specialize "d=4096" or "d=4096,eps=1e-6": each a name and its value as written.
void parse_specialize(const std::string& text, std::vector<std::pair<std::string, std::string>>& out) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    const std::string item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw Error("--specialize '" + item + "': write NAME=VALUE (e.g. d=4096)");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
}

// The specialization of `k` the --specialize values give, checked as a dispatch checks them
// (the parameter's range, its declared facts). `strict` (inspect): every name must be a scalar
// of k declared specialize(). Otherwise (build) names k does not declare so are left out, and
// `used` collects the ones applied.
passes::Specialization specialization_for(const ir::Kernel& k, const std::vector<std::pair<std::string, std::string>>& values,
                                          bool strict, std::set<std::string>* used) {
  passes::Specialization spec;
  for (const auto& [name, text] : values) {
    const int idx = k.find_param(name);
    const bool ok = idx >= 0 && k.params[size_t(idx)].kind == ir::ParamKind::Scalar && k.params[size_t(idx)].specialize;
    if (!ok) {
      if (!strict) continue;
      std::string list;
      for (const ir::Param& p : k.params)
        if (p.kind == ir::ParamKind::Scalar && p.specialize) list += (list.empty() ? "" : ", ") + p.name;
      throw Error("--specialize " + name + "=" + text + ": kernel " + k.name +
                  (idx < 0 ? " has no parameter '" + name + "'" : "'s parameter '" + name + "' is not declared specialize()") +
                  " (its specializable scalars: " + (list.empty() ? "none" : list) + ")");
    }
    const ir::Param& p = k.params[size_t(idx)];
    const ScalarValue v = scalar_from_text("--specialize", name, text);
    uint64_t bits = 0;
    std::string why;
    if (!scalar_bits(p.dtype, v, bits, why)) throw Error("--specialize " + name + "=" + text + ": the value " + why);
    const std::string problem = rt::scalar_fact_problem(k, uint32_t(idx), bits, text);
    if (!problem.empty()) throw Error("--specialize " + name + "=" + text + ": " + problem);
    bool seen = false;
    for (auto& [param, b] : spec.values)
      if (param == uint32_t(idx)) b = bits, seen = true;  // the last value given wins
    if (!seen) spec.values.emplace_back(uint32_t(idx), bits);
    if (used) used->insert(name);
  }
  std::sort(spec.values.begin(), spec.values.end());
  return spec;
}

// --threadgroup: "256", "16x16" or "8x8x4" (commas also separate); each size 1..1024 and at most
// 1024 threads in all (every backend's limit), so a typo is an error rather than code for a
// shape no device runs.
void parse_threadgroup(const std::string& text, uint32_t out[3]) {
  std::string t = text;
  for (char& c : t)
    if (c == ',' || c == 'X') c = 'x';
  uint32_t dims[3] = {1, 1, 1};
  size_t axis = 0, pos = 0;
  auto bad = [&](const std::string& why) {
    return Error("--threadgroup '" + text + "': " + why + " (write X, XxY or XxYxZ, e.g. 256 or 16x16)");
  };
  while (true) {
    if (axis == 3) throw bad("at most three sizes");
    size_t end = t.find('x', pos);
    std::string part = t.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (part.empty() || part.size() > 5 || part.find_first_not_of("0123456789") != std::string::npos)
      throw bad("'" + part + "' is not a size");
    unsigned long v = std::stoul(part);
    if (v < 1 || v > 1024) throw bad("each size must be 1..1024, not " + part);
    dims[axis++] = uint32_t(v);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  if (uint64_t(dims[0]) * dims[1] * dims[2] > 1024) throw bad("more than 1024 threads");
  for (int i = 0; i < 3; ++i) out[i] = dims[i];
}

passes::LaunchFacts launch_facts(const Args& a) {
  passes::LaunchFacts f;
  for (int i = 0; i < 3; ++i) f.threadgroup[i] = a.threadgroup[i];
  return f;
}

codegen::EmitOptions cuda_emit_options(const Args& a) {
  codegen::EmitOptions o;
  o.cuda_mma = codegen::cuda_mma_from_env();
  for (int i = 0; i < 3; ++i) o.threadgroup[i] = a.threadgroup[i];
  return o;
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc > 1) a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("option " + s + " needs a value");
      return argv[++i];
    };
    if (s == "-f" || s == "--filter") a.filter = value();
    else if (s == "--exclude") a.exclude.push_back(value());
    else if (s == "--backend") a.backend = value();
    else if (s == "--dtype") a.dtype = value();
    else if (s == "--emit") a.emit = value();
    else if (s == "-o" || s == "--out") a.out_dir = value();
    else if (s == "--arch") a.arch = value();
    else if (s == "--threadgroup") parse_threadgroup(value(), a.threadgroup);
    else if (s == "--specialize") parse_specialize(value(), a.specialize);
    else if (s == "--ir") a.ir = true;
    else if (s == "--locations") a.locations = true;
    else if (s == "--resources") a.resources = true;
    else if (s == "--no-compile") a.no_compile = true;
    else if (s == "--keep-cache") a.keep_cache = true;
    else if (s == "--hip-arch") a.hip_arch = value();
    else if (s == "--pass") a.pass = value();
    else if (s == "--stop-after") a.stop_after = value();
    else if (s == "--print-after") a.print_after.insert(value());
    else if (s == "--stats") a.stats = true;
    else if (s == "--verify-each") a.verify_each = true;
    else if (s == "--time-passes") a.time_passes = true;
    else if (s == "--no-opt") a.no_opt = true;
    else if (s == "--only") a.only = value();
    else if (s == "--skip-through") a.skip_through = value();
    else if (s == "--mutation") a.mutation = value();
    else if (s == "--mutate") a.mutate = true;
    else if (s == "--arg") a.call_args.push_back(value());
    else if (s == "--grid") a.grid = value();
    else if (s == "--tg") a.tg = value();
    else if (s == "--out-file") a.outs.push_back(value());
    else if (s == "--samples") {
      std::string v = value();
      char* end = nullptr;
      unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end || n > 100000) throw Error("--samples takes a count from 0 to 100000, not '" + v + "'");
      a.samples = int(n);
    }
    else if (s == "--flush-l2") a.flush_l2 = true;
    else if (s == "--flush-l2-read") a.flush_l2_read = true;
    else if (s == "--mutate-skip") a.mutate_skip = value();
    else if (s == "--mutate-every") {
      std::string v = value();
      char* end = nullptr;
      unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end || n == 0 || n > 1000000) throw Error("--mutate-every takes a count from 1 to 1000000, not '" + v + "'");
      a.mutate_every = uint32_t(n);
    }
    else if (!s.empty() && s[0] == '-') throw Error("unknown option " + s);
    else a.positional.push_back(s);
  }
  return a;
}

bool matches(const std::string& filter, const std::string& kernel, const std::string& name) {
  if (filter.empty()) return true;
  return kernel.find(filter) != std::string::npos || (kernel + "/" + name).find(filter) != std::string::npos;
}

int cmd_device() {
  for (Backend b : {Backend::Vulkan, Backend::Cuda, Backend::Interp, Backend::Hip}) {
    std::string why;
    std::vector<DeviceInfo> devs = list_devices(b, &why);
    if (devs.empty())
      send({{"type", "device"}, {"backend", backend_name(b)}, {"available", false}, {"why", why}});
    for (const DeviceInfo& d : devs) send(device_message(d));
  }
  return 0;
}

int cmd_list() {
  // KernelVariant families first: each with its axes, suffix template and the kernels it expands to.
  for (const VariantFamilyInfo& f : registered_variant_families()) {
    json axes = json::array();
    for (const VariantAxis& axis : f.decl->axes) {
      json values = json::array();
      for (const VariantValue& v : axis.values) {
        if (v.kind == VariantValue::Kind::Int) values.push_back(v.i);
        else if (v.kind == VariantValue::Kind::Float) values.push_back(v.f);
        else values.push_back(dtype_name(v.t));
      }
      axes.push_back({{"name", axis.name}, {"values", values}});
    }
    json kernels = json::array();
    for (const KernelVariant* v : f.variants) kernels.push_back({{"name", v->name}, {"values", v->describe()}});
    send({{"type", "family"}, {"name", f.decl->family}, {"suffix", f.decl->suffix}, {"axes", axes},
          {"kernels", kernels}, {"file", source_path(f.decl->file)}, {"line", f.decl->line}});
  }
  for (const SelectorDecl* sel : registered_selectors())
    send({{"type", "selector"}, {"name", sel->family}, {"file", source_path(sel->file)}, {"line", sel->line}});
  for (const KernelDecl* d : registered_kernels()) {
    // A kernel with W lists its T,W pairs ("f16,bf16"), one without W its dtypes as before.
    json dtypes = json::array();
    if (d->wtypes.empty()) {
      for (DType t : d->dtypes) dtypes.push_back(dtype_name(t));
    } else {
      ir::Kernel declared;
      declared.dtypes = d->dtypes;
      declared.wtypes = d->wtypes;
      for (Instantiation in : ir::instantiations(declared)) dtypes.push_back(instantiation_name(in));
    }
    json kernel = {{"type", "kernel"}, {"name", d->name}, {"mode", mode_name(d->mode)}, {"dtypes", dtypes},
                   {"file", source_path(d->file)}, {"line", d->line}};
    if (d->variant) {
      kernel["family"] = d->variant->family;
      kernel["variant"] = d->variant->describe();
    }
    send(kernel);
  }
  for (const TestDecl* t : registered_tests()) {
    json dtypes = json::array();
    for (const DtypeTolerance& dt : t->dtypes) {
      // A derived tolerance is part of the case's identity too: report it in ulps of the case's
      // dtype, computed from the accumulation and math ops the case declares.
      if (std::isnan(dt.tol)) {
        // In ulps of the first output's dtype, as run_test_case measures it (an f32 output of a
        // kernel run at T = f16 is measured in f32 ulps).
        TestSetup setup = t->body(dt.dtype.t, dt.dtype.w);
        DType out = dt.dtype.t;
        try {
          if (find_selector(t->kernel) && setup.has_call() && !setup.outputs().empty()) {
            // A family's case: the output's dtype is the one its plan binds (the interpreter's
            // plan; a family's output dtype follows the call, not the device).
            const std::vector<DeviceInfo> devs = list_devices(Backend::Interp);
            if (!devs.empty()) {
              const LaunchPlan plan = plan_launch(t->kernel, Call{dt.dtype, setup.call_args()}, devs.front());
              out = plan_buffer_types(plan, dt.dtype)(setup.outputs().front().first, "output");
            }
          } else {
            const ir::Kernel& k = kernel_ir(t->kernel);
            const int idx = setup.outputs().empty() ? -1 : k.find_param(setup.outputs().front().first);
            if (idx >= 0) out = ir::resolve(k.params[size_t(idx)].dtype, dt.dtype);
          }
        } catch (const Error&) {
          // A kernel that does not trace is reported when it runs; list it at its dtype.
        }
        Tolerance rule = case_tolerance(setup, dt.tol, out);
        dtypes.push_back({{"dtype", instantiation_name(dt.dtype)}, {"tolerance", rule.value}, {"tolerance_unit", "ulp"}});
      } else {
        dtypes.push_back({{"dtype", instantiation_name(dt.dtype)}, {"tolerance", dt.tol}, {"tolerance_unit", "relative"}});
      }
    }
    send({{"type", "test_case"}, {"kernel", t->kernel}, {"case", t->name}, {"dtypes", dtypes}});
  }
  return 0;
}

int cmd_test(const Args& a) {
  std::optional<Backend> want;
  if (!a.backend.empty()) {
    Backend b;
    if (!parse_backend(a.backend, b)) throw Error("unknown backend '" + a.backend + "' (use vulkan, cuda, hip or interp)");
    want = b;
  }
  const std::optional<Instantiation> only = parse_dtype_filter(a.dtype);
  // Best available backend when none is named: CUDA, then Vulkan.
  std::unique_ptr<Context> ctx;
  std::string unavailable;
  Backend backend = want.value_or(Backend::Cuda);
  std::vector<Backend> order = want ? std::vector<Backend>{*want} : std::vector<Backend>{Backend::Cuda, Backend::Vulkan};
  for (Backend b : order) {
    try {
      ctx = Context::create(b);
      backend = b;
      break;
    } catch (const Error& e) {
      unavailable += std::string(unavailable.empty() ? "" : "; ") + backend_name(b) + ": " + e.what();
    }
  }
  if (ctx) send(device_message(ctx->info()));

  int passed = 0, failed = 0, skipped = 0, excluded = 0;
  bool skipping = !a.skip_through.empty();
  // Fault injection for the CLI's crash handling tests: abort while running this case.
  const char* crash_on = std::getenv("IRON_RUNNER_CRASH_ON");
  for (const TestDecl* t : registered_tests()) {
    if (!matches(a.filter, t->kernel, t->name)) continue;
    const bool leave_out = std::any_of(a.exclude.begin(), a.exclude.end(), [&](const std::string& x) {
      return !x.empty() && matches(x, t->kernel, t->name);
    });
    for (const DtypeTolerance& dt : t->dtypes) {
      if (!dtype_filter_matches(only, dt.dtype)) continue;
      if (leave_out) {
        if (!skipping) ++excluded;
        continue;
      }
      std::string key = std::string(t->kernel) + "/" + t->name + "/" + instantiation_name(dt.dtype);
      if (skipping) {
        skipping = key != a.skip_through;
        continue;
      }
      json msg = {{"type", "test"}, {"kernel", t->kernel}, {"case", t->name}, {"dtype", instantiation_name(dt.dtype)},
                  {"backend", ctx ? backend_name(backend) : (want ? backend_name(*want) : "none")},
                  {"tolerance", dt.tol}};
      send({{"type", "test_start"}, {"kernel", t->kernel}, {"case", t->name}, {"dtype", instantiation_name(dt.dtype)}});
      if (crash_on && key == crash_on) std::abort();
      auto start = std::chrono::steady_clock::now();
      TestOutcome r;
      if (!ctx) {
        // A backend that cannot run the test fails it: a missing device is never a pass.
        r.message = "backend unavailable: " + unavailable;
      } else if (std::string lacks = unsupported_dtype(ctx->info(), dt.dtype); !lacks.empty()) {
        r.message = lacks;
        if (!want) r.status = TestOutcome::Status::Skip;
      } else {
        r = run_test_case(*ctx, *t, dt.dtype, dt.tol);
      }
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      const char* status = r.status == TestOutcome::Status::Pass ? "pass" : r.status == TestOutcome::Status::Skip ? "skip" : "fail";
      (r.status == TestOutcome::Status::Pass ? passed : r.status == TestOutcome::Status::Skip ? skipped : failed)++;
      // The witness (`iron test --witness`) records which program each result came from.
      try {
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(ir::content_hash(kernel_ir(t->kernel))));
        msg["ir_hash"] = hex;
      } catch (const std::exception&) {
      }
      msg["status"] = status;
      msg["max_error"] = std::isfinite(r.max_error) ? json(r.max_error) : json("inf");
      msg["tolerance"] = r.tolerance;
      msg["tolerance_unit"] = r.ulps ? "ulp" : "relative";
      msg["compared"] = r.compared;
      msg["message"] = r.message;
      msg["ms"] = ms;
      send(msg);
    }
  }
  if (excluded) {
    std::string names;
    for (const std::string& x : a.exclude) names += " --exclude " + x;
    send({{"type", "warning"}, {"message", std::to_string(excluded) + " cases left out by" + names}});
  }
  send({{"type", "summary"}, {"passed", passed}, {"failed", failed}, {"skipped", skipped}});
  return failed == 0 ? 0 : 1;
}

// `test --mutate`: every mutant of every kernel with test cases (mutate.hpp) runs the kernel's
// cases on the backend; one text line per mutant and the summary
// "mutate: N mutants, K killed, S survivors, E equivalent". Exit 1 when any mutant survives.
int cmd_mutate(const Args& a) {
  if (a.backend.empty()) throw Error("test --mutate needs --backend (interp, vulkan or cuda)");
  Backend backend;
  if (!parse_backend(a.backend, backend)) throw Error("unknown backend '" + a.backend + "' (use vulkan, cuda, hip or interp)");
  std::unique_ptr<Context> ctx = Context::create(backend);
  ctx->set_disk_cache_dir("");  // hundreds of one-off mutants: keep them out of the compile cache
  const std::optional<Instantiation> only = parse_dtype_filter(a.dtype);
  auto text = [](const std::string& line) { send({{"type", "text"}, {"text", line + "\n"}}); };
  text("mutate: backend " + std::string(backend_name(backend)) + " (" + ctx->info().name + ")" +
       (a.mutate_every > 1 ? ", every " + std::to_string(a.mutate_every) + "th mutant" : ""));
  size_t total = 0, killed = 0, survived = 0, equivalent = 0, index = 0;
  auto start = std::chrono::steady_clock::now();
  for (const KernelDecl* kd : registered_kernels()) {
    std::vector<const TestDecl*> cases;
    for (const TestDecl* t : registered_tests())
      if (std::string_view(t->kernel) == kd->name) {
        cases.push_back(t);
      } else if (find_selector(t->kernel)) {
        // A family's case counts for the kernels its plan dispatches on this device.
        for (const DtypeTolerance& dt : t->dtypes)
          if (dtype_filter_matches(only, dt.dtype) && case_runs_kernel(*ctx, *t, dt.dtype, kd->name)) {
            cases.push_back(t);
            break;
          }
      }
    if (cases.empty() || !matches(a.filter, kd->name, "")) continue;
    if (!a.mutate_skip.empty() && std::string_view(kd->name).find(a.mutate_skip) != std::string_view::npos) continue;
    const ir::Kernel& original = kernel_ir(kd->name);
    // The deterministic subset (--mutate-every) counts mutants across kernels; a kernel none of
    // whose mutants is picked runs nothing (not even its own cases: the corpus runs those).
    std::vector<mutate::Mutant> picked;
    for (mutate::Mutant& m : mutate::enumerate(original, ctx->info().lane_width, ctx->info().max_threads_per_group))
      if (index++ % a.mutate_every == 0) picked.push_back(std::move(m));
    // A kill means something only where the kernel itself passes the killing case: each case
    // and dtype that kills a mutant runs once on the original kernel (the first time it kills).
    std::set<std::pair<const TestDecl*, std::string>> original_passes;
    for (const mutate::Mutant& m : picked) {
      ++total;
      std::string head = std::string(kd->name) + "  " + m.kind + "  " + m.site + "  (" + m.detail + ")";
      mutate::Outcome o = mutate::run_mutant(*ctx, original, m, cases, only);
      if (o.context_lost) {
        // Released first: CUDA's primary context is made anew only once nothing holds it.
        ctx.reset();
        ctx = Context::create(backend);
        ctx->set_disk_cache_dir("");
      }
      if (o.status == mutate::Outcome::Status::Killed &&
          original_passes.emplace(o.killer, instantiation_name(o.killer_dtype.dtype)).second) {
        TestOutcome r = run_test_case(*ctx, *o.killer, o.killer_dtype.dtype, o.killer_dtype.tol);
        if (r.status == TestOutcome::Status::Fail)
          throw Error(std::string("kernel ") + kd->name + " fails its own case " + o.killer->name + " [" +
                      instantiation_name(o.killer_dtype.dtype) + "]: " + r.message);
      }
      switch (o.status) {
        case mutate::Outcome::Status::Equivalent: ++equivalent, text("EQUIVALENT " + head + ": " + o.by); break;
        case mutate::Outcome::Status::Killed: ++killed, text("killed " + head + " by " + o.by); break;
        case mutate::Outcome::Status::Survived: ++survived, text("SURVIVED " + head); break;
      }
    }
  }
  if (total == 0) throw Error("test --mutate selected no kernel with test cases");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", s);
  text("mutate: " + std::to_string(total) + " mutants, " + std::to_string(killed) + " killed, " +
       std::to_string(survived) + " survivors, " + std::to_string(equivalent) + " equivalent (" + secs + ")");
  return survived == 0 ? 0 : 1;
}

// `--dtype` of inspect: a dtype ("f16": T, and W's first dtype where the kernel has W) or T,W.
Instantiation pick_dtype(const ir::Kernel& k, const std::string& requested) {
  if (!requested.empty()) {
    Instantiation in;
    if (!parse_instantiation(requested, in)) throw Error("unknown dtype '" + requested + "' (a dtype, or T,W as in f16,bf16)");
    if (!in.has_w() && !k.wtypes.empty()) in.w = k.wtypes.front();
    if (std::string why; !ir::declares(k, in, &why)) throw Error(why);
    return in;
  }
  return ir::instantiations(k).front();
}

void check_pass_name(const std::string& name) {
  if (name.empty() || name == "all") return;
  const auto& names = passes::pass_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw Error("unknown pass '" + name + "' (passes: " + list + ")");
  }
}

int cmd_inspect(const Args& a) {
  if (a.positional.empty()) throw Error("inspect needs a kernel name");
  const ir::Kernel& original = kernel_ir(a.positional[0]);
  check_pass_name(a.pass);
  check_pass_name(a.stop_after);
  for (const std::string& p : a.print_after) check_pass_name(p);
  bool pipeline_flags = !a.pass.empty() || a.stats || !a.print_after.empty() || !a.stop_after.empty() ||
                        a.verify_each || a.time_passes;
  if (a.ir && !pipeline_flags) {
    // --ir alone: the traced IR, before any pass.
    send({{"type", "text"}, {"text", ir::print(original, {a.locations})}});
    return 0;
  }
  ir::Kernel k = original;
  passes::PipelineOptions opts;
  opts.verify_each = a.verify_each;
  opts.time_passes = a.time_passes;
  opts.stop_after = a.stop_after;
  opts.print_after = a.print_after;
  if (!a.pass.empty()) opts.print_after.insert(a.pass);
  opts.launch = launch_facts(a);
  opts.specialize = specialization_for(original, a.specialize, true, nullptr);
  passes::PipelineResult r;
  if (!a.no_opt) r = passes::run_pipeline(k, opts);
  for (const passes::PassRecord& rec : r.passes) {
    if (!rec.ir_after.empty())
      send({{"type", "text"}, {"text", "; IR after " + rec.name + "\n" + rec.ir_after}});
  }
  if (a.stats || a.time_passes) {
    std::string table = "; pass                 ops before -> after   time ms   statistics\n";
    for (const passes::PassRecord& rec : r.passes) {
      char row[160];
      std::snprintf(row, sizeof row, "; %-20s %6zu -> %-6zu %+5ld  %8.3f   ", rec.name.c_str(), rec.ops_before,
                    rec.ops_after, long(rec.ops_after) - long(rec.ops_before), rec.ms);
      std::string stats;
      for (const auto& [key, n] : rec.stats) stats += (stats.empty() ? "" : ", ") + key + "=" + std::to_string(n);
      table += row + stats + "\n";
    }
    send({{"type", "text"}, {"text", table}});
  }
  if (!r.ok()) throw Error("pipeline failed:\n" + r.diags.render(k));
  if (a.ir || !a.pass.empty() || !a.print_after.empty() || a.stats) {
    // --ir with pipeline flags: the IR where the pipeline stopped (after --stop-after, or all).
    if (a.ir && a.pass.empty() && a.print_after.empty()) send({{"type", "text"}, {"text", ir::print(k, {a.locations})}});
    return 0;
  }
  Instantiation d = pick_dtype(k, a.dtype);
  codegen::Target target = codegen::Target::Cuda;
  if (!a.backend.empty() && !codegen::parse_target(a.backend, target))
    throw Error("unknown backend '" + a.backend + "' (use cuda, hip, vulkan or msl)");
  // --arch names the target's architecture; CUDA's default (sm_90a) means "the default" elsewhere.
  const std::string arch = target == codegen::Target::Cuda || a.arch.rfind("sm_", 0) != 0 ? a.arch : "";
  const codegen::TargetProfile profile = codegen::profile_for(target, arch);
  const bool c_like = target == codegen::Target::Cuda || target == codegen::Target::Hip;
  // The compile path from here (runtime/compile.hpp): lower, emit, and with --resources compile.
  rt::Compiled c = rt::compile_optimized(k, d, profile, c_like ? cuda_emit_options(a) : codegen::EmitOptions{},
                                         a.resources && target == codegen::Target::Hip);
  if (!c.ok()) throw Error(c.error);
  const codegen::Emitted& e = c.emitted;
  if (!a.resources) {
    send({{"type", "text"}, {"text", e.source}});
    return 0;
  }
  // --resources: what the code object says the kernel uses (AMDGPU metadata notes).
  if (target != codegen::Target::Hip)
    throw Error("--resources reads an AMDGPU code object: use it with --backend hip");
  std::string why;
  std::vector<codegen::HipKernelResources> rs = codegen::hip_resources(c.binary, why);
  if (rs.empty()) throw Error(why);
  std::string table = "; " + e.entry + " for " + profile.arch + " (" + std::to_string(c.binary.size()) + "-byte code object)\n";
  for (const codegen::HipKernelResources& r : rs) {
    char row[320];
    std::snprintf(row, sizeof row,
                  "%s: VGPRs %u, SGPRs %u, AGPRs %u, LDS %u bytes, scratch %u bytes per lane, spills %u VGPR / %u SGPR, "
                  "wavefront %u\n",
                  r.name.c_str(), r.vgprs, r.sgprs, r.agprs, r.lds_bytes, r.scratch_bytes, r.vgpr_spills, r.sgpr_spills,
                  r.wavefront);
    table += row;
  }
  send({{"type", "text"}, {"text", table}});
  return 0;
}

// `opt FILE`: runs the pipeline (or one pass with --only) on text IR and prints the result, so
// a failing pass can be reproduced from a dump.
int cmd_opt(const Args& a) {
  if (a.positional.empty()) throw Error("opt needs a text IR file");
  std::ifstream f(a.positional[0]);
  if (!f) throw Error("cannot read " + a.positional[0]);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ir::Kernel k = ir::parse(text);
  check_pass_name(a.only);
  check_pass_name(a.stop_after);
  passes::PipelineOptions opts;
  opts.verify_each = a.verify_each;
  opts.stop_after = a.stop_after;
  opts.mutation = a.mutation;
  opts.specialize = specialization_for(k, a.specialize, true, nullptr);
  if (!a.only.empty())
    for (const std::string& n : passes::pass_names())
      if (n != a.only) opts.disabled.insert(n);
  passes::PipelineResult r = passes::run_pipeline(k, opts);
  if (a.stats) {
    std::string table;
    for (const passes::PassRecord& rec : r.passes) {
      if (!rec.ran) continue;
      table += "; " + rec.name + ": " + std::to_string(rec.ops_before) + " -> " + std::to_string(rec.ops_after);
      for (const auto& [key, n] : rec.stats) table += ", " + key + "=" + std::to_string(n);
      table += "\n";
    }
    send({{"type", "text"}, {"text", table}});
  }
  if (!r.ok()) throw Error("pipeline failed:\n" + r.diags.render(k));
  send({{"type", "text"}, {"text", ir::print(k, {a.locations})}});
  return 0;
}

// `run KERNEL`: a kernel or family on the user's data (run_kernel.cpp).
int cmd_run(const Args& a) {
  if (a.positional.empty()) throw Error("run needs a kernel or a kernel family (iron list shows them)");
  RunRequest r;
  r.name = a.positional[0];
  r.assignments.assign(a.positional.begin() + 1, a.positional.end());
  r.assignments.insert(r.assignments.end(), a.call_args.begin(), a.call_args.end());
  r.dtype = a.dtype;
  r.backend = a.backend;
  r.grid = a.grid;
  r.tg = a.tg;
  r.out_dir = a.out_dir;
  r.outs = a.outs;
  r.samples = a.samples;
  r.flush_l2 = a.flush_l2;
  r.flush_l2_read = a.flush_l2_read;
  return run_kernel(r, send);
}

// `build`: the tree and its manifest (build_outputs.cpp).
int cmd_build(const Args& a) {
  build::Request r;
  r.emit = a.emit;
  r.out_dir = a.out_dir;
  r.arch = a.arch;
  for (size_t pos = 0;;) {
    const size_t end = a.hip_arch.find(',', pos);
    r.hip_archs.push_back(a.hip_arch.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  r.filter = a.filter;
  r.no_compile = a.no_compile;
  for (int i = 0; i < 3; ++i) r.threadgroup[i] = a.threadgroup[i];
  r.specialize = a.specialize;
  r.specialization = [&a](const ir::Kernel& k, std::set<std::string>* used) {
    return specialization_for(k, a.specialize, false, used);
  };
  return build::run_build(r, send);
}

}  // namespace

int runner_main(int argc, char** argv) {
  try {
    if (argc > 1 && (std::string(argv[1]) == "bench" || std::string(argv[1]) == "calibrate"))
      return bench_main(argc, argv);
    Args a = parse_args(argc, argv);
    send({{"type", "hello"}, {"runner_version", "0.1.0"}});
    // A refused declaration (a bad variant family, a kernel name registered twice) stops every
    // command that works on kernels: running the rest would hide it.
    if (a.command != "device" && a.command != "opt" && a.command != "clean") {
      std::vector<std::string> refused = registry_errors();
      for (const std::string& e : refused) send({{"type", "error"}, {"message", e}});
      if (!refused.empty()) return 2;
    }
    if (a.command == "test") return a.mutate ? cmd_mutate(a) : cmd_test(a);
    if (a.command == "inspect") return cmd_inspect(a);
    if (a.command == "build") return cmd_build(a);
    if (a.command == "clean") return build::run_clean(a.positional, a.keep_cache, send);
    if (a.command == "device") return cmd_device();
    if (a.command == "list") return cmd_list();
    if (a.command == "run") return cmd_run(a);
    if (a.command == "opt") return cmd_opt(a);
    throw Error("unknown runner command '" + a.command + "' (test, inspect, build, clean, opt, device, list, run, bench, calibrate)");
  } catch (const std::exception& e) {
    send({{"type", "error"}, {"message", e.what()}});
    return 2;
  }
}

}  // namespace iron
