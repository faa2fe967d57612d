// The runner's benchmark engine (`bench`; `calibrate` is in calibrate.cpp). For every registered
// bench x dtype: upload the inputs once, check one dispatch against the oracle (no PASS, no
// timing), time under the device lock, and only then derive statistics, metrics and guards
// (seeds §6, architecture.txt "Bench runner"). Streams `bench`, `warning` and `summary` messages.
#include <algorithm>
#include <functional>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "core/protocol.hpp"
#include "harness/device_specs.hpp"
#include "harness/runner.hpp"
#include "iron/launch.hpp"
#include "harness/stats.hpp"
#include "harness/vendor_bench.hpp"
#include "iron/bench.hpp"
#include "iron/registry.hpp"

namespace iron {

using nlohmann::json;
using namespace iron::bench;

namespace {

void send(const json& msg) { std::cout << protocol::encode(msg) << "\n" << std::flush; }

std::string describe(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt(const std::optional<long>& v) { return v ? json(*v) : json(nullptr); }

struct BenchArgs {
  std::string filter, backend, dtype, kernel_override;
  int warmup = 20, samples = 100;
  bool flush_l2 = false;
  bool flush_l2_read = false;  // --flush-l2-read: the flush reads (leaves the L2 clean), CUDA only
};

int parse_count(const std::string& flag, const std::string& v, int min) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < min || n > 1000000)
    throw Error(flag + " takes a whole number >= " + std::to_string(min) + ", not '" + v + "'");
  return int(n);
}

BenchArgs parse_bench_args(int argc, char** argv) {
  BenchArgs a;
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("option " + s + " needs a value");
      return argv[++i];
    };
    if (s == "-f" || s == "--filter") a.filter = value();
    else if (s == "--backend") a.backend = value();
    else if (s == "--dtype") a.dtype = value();
    // 0 is honoured when asked for explicitly (the correctness dispatch still ran first);
    // anything else is at least 1.
    else if (s == "--warmup") a.warmup = parse_count(s, value(), 0);
    else if (s == "--samples") a.samples = parse_count(s, value(), 1);
    else if (s == "--flush-l2") a.flush_l2 = true;
    else if (s == "--flush-l2-read") a.flush_l2 = a.flush_l2_read = true;
    else if (s == "--kernel-override") a.kernel_override = value();
    else throw Error("unknown bench option " + s +
                      " (use -f, --backend, --dtype, --warmup, --samples, --flush-l2, --flush-l2-read, --kernel-override)");
  }
  return a;
}

bool matches(const std::string& filter, const std::string& kernel, const std::string& name) {
  if (filter.empty()) return true;
  return kernel.find(filter) != std::string::npos || (kernel + "/" + name).find(filter) != std::string::npos;
}

json device_json(const DeviceInfo& d) {
  return {{"type", "device"}, {"backend", backend_name(d.backend)}, {"available", true}, {"name", d.name},
          {"driver", d.driver}, {"arch", d.arch}, {"lane_width", d.lane_width},
          {"max_threads_per_group", d.max_threads_per_group}, {"shared_memory_bytes", d.shared_memory_bytes},
          {"memory_bytes", d.memory_bytes}, {"f16", d.f16}, {"bf16", d.bf16}};
}

// The named backend, or the best available (CUDA, then Vulkan) as `iron test` picks it.
std::unique_ptr<Context> open_context(const std::string& name, Backend& chosen) {
  std::vector<Backend> order{Backend::Cuda, Backend::Vulkan};
  if (!name.empty()) {
    Backend b;
    if (!parse_backend(name, b)) throw Error("unknown backend '" + name + "' (use vulkan, cuda, hip or interp)");
    order = {b};
  }
  std::string why;
  for (Backend b : order) {
    try {
      auto ctx = Context::create(b);
      chosen = b;
      return ctx;
    } catch (const Error& e) {
      why += std::string(why.empty() ? "" : "; ") + backend_name(b) + ": " + e.what();
    }
  }
  throw Error("no backend to benchmark on: " + why);
}

void warn_lock_wait(const std::string& path) {
  send({{"type", "warning"}, {"message", "waiting for the device lock " + path + " (another bench run holds it)"}});
}

// The launch floor: an empty dispatch (iron_calib_copy with n = 0, one thread) timed on the
// same context, so "latency-bound" is judged against this device's own per-launch cost. It is
// timed the way the benches are (flush_l2 as they have it): with the flush, each sample's
// launch is queued behind the flush, so the figure is the device's time for an empty kernel and
// not the host's submission latency, which a bench with the flush does not see either.
double measure_launch_floor(Context& ctx, Backend backend, bool flush_l2, bool flush_l2_read) {
  const ir::Kernel& k = kernel_ir("iron_calib_copy");
  Bindings b{{"x", ctx.alloc(DType::F32, 1)}, {"out", ctx.alloc(DType::F32, 1)}};
  Constexprs n0{{"n", 0}};
  ctx.dispatch_with_grid(k, DType::F32, b, n0, {1, 1, 1}, {1, 1, 1});  // compile outside the lock
  ctx.synchronize();
  // An empty launch is cheap everywhere; 50 samples steady its median on a noisy host (lavapipe).
  TimingOptions o;
  o.warmup = 10;
  o.samples = 50;
  o.flush_l2 = flush_l2;
  o.flush_l2_read = flush_l2_read;
  Timing t;
  {
    DeviceLock lock(backend, &warn_lock_wait);
    t = ctx.time_dispatch(k, DType::F32, b, n0, {1, 1, 1}, {1, 1, 1}, o);
  }
  return compute_stats(t.samples_us).median_us;
}

// Same parameter names and kinds: the override runs this bench's setup unchanged (for A/B).
void check_override_params(const ir::Kernel& bench_kernel, const ir::Kernel& other) {
  auto names = [](const ir::Kernel& k) {
    std::set<std::string> s;
    for (const ir::Param& p : k.params) s.insert(p.name + (p.kind == ir::ParamKind::Buffer ? "[]" : ""));
    return s;
  };
  auto a = names(bench_kernel), b = names(other);
  if (a == b) return;
  auto list = [](const std::set<std::string>& s) {
    std::string out;
    for (const std::string& n : s) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  throw Error("--kernel-override " + other.name + " has parameters (" + list(b) + ") but " + bench_kernel.name +
              " has (" + list(a) + "): the override must take the same names");
}

json stats_json(const Stats& s) {
  return {{"n", s.n}, {"min_us", s.min_us}, {"median_us", s.median_us}, {"mean_us", s.mean_us},
          {"p95_us", s.p95_us}, {"p99_us", s.p99_us}, {"cv", s.cv}};
}

json metrics_json(const Metrics& m, double launch_floor_us) {
  const char* b = bottleneck_name(m.bottleneck);
  return {{"gbps", m.gbps}, {"gflops", m.gflops}, {"intensity", opt(m.intensity)},
          {"pct_peak_bw", opt(m.pct_peak_bw)}, {"pct_peak_compute", opt(m.pct_peak_compute)},
          {"pct_measured_bw", opt(m.pct_measured_bw)}, {"pct_measured_compute", opt(m.pct_measured_compute)},
          {"bottleneck", *b ? json(b) : json(nullptr)},
          // Not in the core schema: the floor the latency verdict was judged against.
          {"launch_floor_us", launch_floor_us}};
}

json resources_json(const Resources& r) {
  if (r.empty()) return nullptr;
  return {{"registers", opt(r.registers)}, {"spill_stores", opt(r.spill_stores)},
          {"spill_loads", opt(r.spill_loads)}, {"shared_bytes", opt(r.shared_bytes)}};
}

struct Job {
  const BenchDecl* decl;
  DtypeTolerance dt;
};

int cmd_bench(int argc, char** argv) {
  BenchArgs a = parse_bench_args(argc, argv);
  const std::optional<Instantiation> only = parse_dtype_filter(a.dtype);
  const ir::Kernel* override_kernel = a.kernel_override.empty() ? nullptr : &kernel_ir(a.kernel_override);

  std::vector<Job> jobs;
  for (const BenchDecl* d : registered_benches()) {
    if (!matches(a.filter, d->kernel, d->name)) continue;
    for (const DtypeTolerance& dt : d->dtypes)
      if (dtype_filter_matches(only, dt.dtype)) jobs.push_back({d, dt});
  }
  // The vendor GEMM rows (cuBLASLt through Iron, bf16 only): not with a kernel override.
  std::vector<vendor::Job> vjobs;
  if (!override_kernel && dtype_filter_matches(only, DType::BF16)) vjobs = vendor::jobs(a.filter);
  if (jobs.empty() && vjobs.empty())
    throw Error("no benchmark matches" + (a.filter.empty() ? std::string() : " -f " + a.filter) +
                (a.dtype.empty() ? std::string() : " --dtype " + a.dtype));

  Backend backend = Backend::Cuda;
  std::unique_ptr<Context> ctx = open_context(a.backend, backend);
  Context& c = *ctx;
  const DeviceInfo& info = c.info();
  send(device_json(info));

  const DeviceSpec* spec = lookup_device_spec(info.name);
  const Ceilings measured = load_calibration(info);
  // A CPU "device" (lavapipe, the interpreter) has caches as large as a small bench's working
  // set, so its measured DRAM copy rate is no ceiling for it: only real GPUs get that guard.
  const bool guard_measured = backend != Backend::Interp && info.arch != "cpu";
  double floor_us = 0;
  try {
    floor_us = measure_launch_floor(c, backend, a.flush_l2, a.flush_l2_read);
  } catch (const std::exception& e) {
    send({{"type", "warning"}, {"message", std::string("could not measure the launch floor (no latency verdicts): ") + e.what()}});
  }

  TimingOptions topts;
  topts.warmup = a.warmup;
  topts.samples = a.samples;
  topts.flush_l2 = a.flush_l2;
  topts.flush_l2_read = a.flush_l2_read;

  int passed = 0, failed = 0, skipped = 0;
  std::vector<SweepCell> cells;
  // cuBLASLt runs on CUDA only: elsewhere its rows are left out, with a warning when the filter
  // asked for them.
  if (backend != Backend::Cuda && !vjobs.empty()) {
    if (!a.filter.empty())
      for (const vendor::Job& j : vjobs) {
        ++skipped;
        send({{"type", "warning"}, {"message", std::string("skipped ") + vendor::kKernel + "/" + j.name +
                                                   " [bf16]: cuBLASLt runs on the CUDA backend"}});
      }
    vjobs.clear();
  }
  const size_t total = jobs.size() + vjobs.size();
  for (size_t index = 0; index < jobs.size(); ++index) {
    const BenchDecl& decl = *jobs[index].decl;
    const Instantiation dtype = jobs[index].dt.dtype;
    const double tol = jobs[index].dt.tol;
    const std::string dn = instantiation_name(dtype);
    send({{"type", "bench_start"}, {"kernel", decl.kernel}, {"bench", decl.name}, {"dtype", dn},
          {"index", index + 1}, {"total", total}});

    json rec = {{"type", "bench"}, {"kernel", decl.kernel}, {"bench", decl.name}, {"dtype", dn},
                {"backend", backend_name(backend)}, {"device", info.name}, {"source", "iron"},
                {"status", "error"}, {"message", ""}, {"correctness", nullptr}, {"warmup", a.warmup},
                {"flush_l2", a.flush_l2}, {"flush_l2_read", a.flush_l2_read}, {"samples_us", json::array()}, {"stats", nullptr}, {"bytes", 0},
                {"flops", 0}, {"sweep", ""}, {"size", 0}, {"metrics", nullptr}, {"resources", nullptr}};
    if (override_kernel) rec["kernel_override"] = override_kernel->name;

    if (std::string why = unsupported_dtype(info, dtype); !why.empty()) {
      if (a.backend.empty() && !only) {
        ++skipped;
        send({{"type", "warning"}, {"message", "skipped " + std::string(decl.kernel) + "/" + decl.name + " [" + dn + "]: " + why}});
        continue;
      }
      rec["status"] = "fail";
      rec["message"] = why;
      ++failed;
      send(rec);
      continue;
    }

    // 1. Setup, resident inputs, one checked dispatch: the PASS receipt (seeds §6.1). Anything
    //    that goes wrong before a PASS is a "fail": the bench is never timed.
    std::optional<BenchSetup> setup;
    const ir::Kernel* kernel = nullptr;
    std::optional<LaunchPlan> plan;  // a family's bench: the selector's plan on this device
    Resident res;
    try {
      setup.emplace(decl.body(dtype.t, dtype.w));
      const TestSetup& t = setup->test();
      rec["bytes"] = setup->bytes();
      rec["flops"] = setup->flops();
      rec["sweep"] = setup->sweep_name();
      rec["size"] = setup->sweep_size();
      if (t.instantiation() != dtype)
        throw Error("the bench body built a setup for dtype " + instantiation_name(t.instantiation()));
      if (!t.has_oracle()) throw Error("the bench has no oracle: it cannot be timed without a PASS");
      if (t.has_call()) {
        // A family's bench: the logical call, planned by the family's selector on this device.
        if (override_kernel) throw Error("--kernel replaces one kernel; " + std::string(decl.kernel) + "/" + decl.name +
                                         " runs a family's plan");
        plan = plan_launch(decl.kernel, Call{dtype, t.call_args()}, info);
        for (const LaunchStep& st : plan->steps)  // the first kernel (none in a library routine's plan)
          if (!kernel && !st.library) kernel = &kernel_ir(st.kernel);
        rec["plan"] = plan->describe();
        res = make_resident(c, plan_buffer_types(*plan, dtype), t);
        run_plan(c, *plan, dtype, res.bindings);
      } else {
        kernel = &kernel_ir(decl.kernel);
        if (override_kernel) {
          check_override_params(*kernel, *override_kernel);
          kernel = override_kernel;
        }
        res = make_resident(c, *kernel, t, dtype);
        c.dispatch_with_grid(*kernel, dtype, res.bindings, t.scalars(), t.grid_size(), t.threadgroup());
      }
      c.synchronize();
      Correctness ok = check_outputs(c, res, t.floor(), tol);
      res.expected.clear();  // the oracle's copy is not needed while timing
      rec["correctness"] = {{"status", ok.pass ? "pass" : "fail"},
                            {"max_error", std::isfinite(ok.max_error) ? json(ok.max_error) : json("inf")},
                            {"tolerance", tol}};
      if (!ok.pass) {
        rec["status"] = "fail";
        rec["message"] = ok.message;
        ++failed;
        send(rec);
        continue;
      }
    } catch (const std::exception& e) {
      rec["status"] = "fail";
      rec["message"] = e.what();
      if (rec["correctness"].is_null()) rec["correctness"] = {{"status", "fail"}, {"max_error", nullptr}, {"tolerance", tol}};
      ++failed;
      send(rec);
      continue;
    }

    // 2. The timed region: the device lock and time_dispatch, nothing else.
    Timing timing;
    try {
      const TestSetup& t = setup->test();
      if (plan) {
        // The plan's launches are bound (scratch allocated) before the lock: only timing inside.
        if (plan->has_library_step()) {  // the routine's own timing (the same events and L2 flush)
          DeviceLock lock(backend, &warn_lock_wait);
          timing = time_plan(c, *plan, dtype, res.bindings, topts);
        } else {
          std::vector<SequenceLaunch> seq = plan_launches(c, *plan, dtype, res.bindings);
          DeviceLock lock(backend, &warn_lock_wait);
          timing = c.time_sequence(seq, topts);
        }
      } else {
        DeviceLock lock(backend, &warn_lock_wait);
        timing = c.time_dispatch(*kernel, dtype, res.bindings, t.scalars(), t.grid_size(), t.threadgroup(), topts);
      }
    } catch (const std::exception& e) {
      rec["status"] = "error";
      rec["message"] = std::string("timing failed: ") + e.what();
      ++failed;
      send(rec);
      continue;
    }

    // 3. After timing: statistics, metrics, resources and the roofline guard.
    try {
      const Stats s = compute_stats(timing.samples_us);
      const Metrics m = derive_metrics(s, setup->bytes(), setup->flops(), dtype.t, spec, measured, floor_us);
      if (auto bad = roofline_violation(m, dtype.t, spec, measured, guard_measured)) {
        // Not a result: no samples, stats or metrics are recorded, only why.
        rec["status"] = "error";
        rec["message"] = *bad + " (median " + describe(s.median_us) + " us)";
        ++failed;
        send(rec);
        continue;
      }
      if (auto note = measured_ceiling_exceeded(m, spec, measured, guard_measured))
        send({{"type", "warning"}, {"message", std::string(decl.kernel) + "/" + decl.name + " [" + dn + "]: " + *note}});
      rec["status"] = "ok";
      rec["samples_us"] = timing.samples_us;
      rec["stats"] = stats_json(s);
      rec["metrics"] = metrics_json(m, floor_us);
      Resources resources = parse_ptxas(timing.compile_report);
      // ptxas counts static shared memory only: a kernel keeping its arrays in dynamic shared
      // memory (sized at dispatch, or over 48 KiB) reports what this dispatch allocated.
      if (kernel && resources.shared_bytes && codegen::cuda_dynamic_shared(*kernel, dtype))
        resources.shared_bytes = long(dispatch_threadgroup_bytes(
            *kernel, dtype, plan ? plan->steps.front().constexprs : setup->test().scalars()));
      rec["resources"] = resources_json(resources);
      ++passed;
      send(rec);
      cells.push_back({std::string(decl.kernel) + "/" + decl.name + " [" + dn + "]", setup->sweep_name(), dn,
                       setup->sweep_size(), s.median_us, setup->bytes(), m.bottleneck == Bottleneck::Latency});
    } catch (const std::exception& e) {
      rec["status"] = "error";
      rec["message"] = e.what();
      ++failed;
      send(rec);
    }
  }

  for (size_t v = 0; v < vjobs.size(); ++v) {
    const vendor::Job& job = vjobs[v];
    const std::string label = std::string(vendor::kKernel) + "/" + job.name + " [bf16]";
    send({{"type", "bench_start"}, {"kernel", vendor::kKernel}, {"bench", job.name}, {"dtype", "bf16"},
          {"index", jobs.size() + v + 1}, {"total", total}});
    json rec = {{"type", "bench"}, {"kernel", vendor::kKernel}, {"bench", job.name}, {"dtype", "bf16"},
                {"backend", backend_name(backend)}, {"device", info.name}, {"source", "iron"},
                {"status", "error"}, {"message", ""}, {"correctness", nullptr}, {"warmup", a.warmup},
                {"flush_l2", a.flush_l2}, {"flush_l2_read", a.flush_l2_read}, {"samples_us", json::array()}, {"stats", nullptr},
                {"bytes", double(job.m * job.k + job.n * job.k + job.m * job.n) * 2.0},
                {"flops", 2.0 * double(job.m) * double(job.n) * double(job.k)}, {"sweep", job.sweep},
                {"size", double(job.m)}, {"metrics", nullptr}, {"resources", nullptr}};
    std::unique_ptr<vendor::Run> run;
    try {  // 1. inputs, one call, the sampled oracle's PASS
      run = std::make_unique<vendor::Run>(c, job);
      rec["plan"] = run->report();
      const Correctness ok = run->check();
      rec["correctness"] = {{"status", ok.pass ? "pass" : "fail"},
                            {"max_error", std::isfinite(ok.max_error) ? json(ok.max_error) : json("inf")},
                            {"tolerance", 1e-2}};
      if (!ok.pass) {
        rec["status"] = "fail";
        rec["message"] = ok.message;
        ++failed;
        send(rec);
        continue;
      }
    } catch (const std::exception& e) {
      rec["status"] = "fail";
      rec["message"] = e.what();
      if (rec["correctness"].is_null()) rec["correctness"] = {{"status", "fail"}, {"max_error", nullptr}, {"tolerance", 1e-2}};
      ++failed;
      send(rec);
      continue;
    }
    try {  // 2. timing under the device lock; 3. statistics and metrics after it
      Timing timing;
      {
        DeviceLock lock(backend, &warn_lock_wait);
        timing = run->time(topts);
      }
      const Stats s = compute_stats(timing.samples_us);
      const Metrics m = derive_metrics(s, run->bytes(), run->flops(), DType::BF16, spec, measured, floor_us);
      if (auto bad = roofline_violation(m, DType::BF16, spec, measured, guard_measured)) {
        rec["status"] = "error";
        rec["message"] = *bad + " (median " + describe(s.median_us) + " us)";
        ++failed;
        send(rec);
        continue;
      }
      rec["status"] = "ok";
      rec["message"] = run->report();
      rec["samples_us"] = timing.samples_us;
      rec["stats"] = stats_json(s);
      rec["metrics"] = metrics_json(m, floor_us);
      ++passed;
      send(rec);
      cells.push_back({label, job.sweep, "bf16", double(job.m), s.median_us, run->bytes(), m.bottleneck == Bottleneck::Latency});
    } catch (const std::exception& e) {
      rec["status"] = "error";
      rec["message"] = std::string("timing failed: ") + e.what();
      ++failed;
      send(rec);
    }
  }

  for (const std::string& w : sweep_warnings(cells)) send({{"type", "warning"}, {"message", w}});
  send({{"type", "summary"}, {"passed", passed}, {"failed", failed}, {"skipped", skipped}});
  return failed == 0 ? 0 : 1;
}

}  // namespace

int bench_main(int argc, char** argv) {
  send({{"type", "hello"}, {"runner_version", "0.1.0"}});
  if (argc > 1 && std::string(argv[1]) == "calibrate") return calibrate_main(argc, argv);
  // As for every command on kernels (runner_main): a refused declaration stops the run.
  std::vector<std::string> refused = registry_errors();
  for (const std::string& e : refused) send({{"type", "error"}, {"message", e}});
  if (!refused.empty()) return 2;
  return cmd_bench(argc, argv);
}

namespace {
// Fills the guard band of a buffer of `count` elements, after `bytes` holds its body.
void fill_guard(DType t, std::vector<unsigned char>& bytes, size_t count, bool output) {
  size_t es = dtype_size(t);
  bytes.resize((count + kGuardElements) * es);
  for (size_t i = count; i < count + kGuardElements; ++i) {
    guard_element(es, output, bytes.data() + i * es);
  }
}

// "" when the guard band of `g` (its bytes downloaded in `bytes`) is intact.
std::string guard_problem(const GuardedBuffer& g, const std::vector<unsigned char>& bytes, const char* role) {
  size_t es = dtype_size(g.buffer.dtype());
  for (size_t i = g.count; i < g.count + kGuardElements; ++i) {
    unsigned char want[8];
    guard_element(es, g.output, want);
    bool intact = std::memcmp(bytes.data() + i * es, want, es) == 0;
    if (!intact)
      return std::string("write outside the declared extent: ") + role + " '" + g.name + "' has " +
             std::to_string(g.count) + " elements and its guard element [" + std::to_string(i) +
             "] (past the end) was overwritten";
  }
  return "";
}

// An integer buffer takes integer values in its range: a fraction or an out-of-range value
// would otherwise be rounded or wrapped silently by the encoding.
void check_integer_input(const std::string& name, DType t, const std::vector<double>& values) {
  if (!is_integer(t) && t != DType::Bool) return;
  double lo = double(num::int_min(t));
  double hi = t == DType::Bool ? 1.0 : double(num::int_max(t));
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    if (!std::isfinite(v) || v != std::floor(v) || v < lo || v > hi)
      throw Error("input '" + name + "'[" + std::to_string(i) + "] = " + describe(v) + " is not " +
                  (v == std::floor(v) ? "in the range of " : "an integer, as ") + dtype_name(t) +
                  " requires (fixture error: integer buffers take exact values)");
  }
}
}  // namespace

// Encodes inputs exactly as run_test_case does (rounded to the buffer dtype once, so device and
// oracle see the same values); outputs start as all-ones bytes (NaN), so an unwritten element
// fails; every buffer carries a guard band after its declared elements.
Resident make_resident(Context& ctx, const ir::Kernel& k, const TestSetup& setup, Instantiation dtype) {
  for (const auto& [name, count] : setup.outputs()) {
    const int idx = k.find_param(name);
    if (setup.inputs().count(name) && idx >= 0 && k.params[idx].access != ir::Access::ReadWrite)
      throw Error("'" + name + "' is given as an input and an output, but " + k.name + " does not declare it inout");
  }
  return make_resident(ctx, [&](const std::string& name, const char* role) {
    int idx = k.find_param(name);
    if (idx < 0 || k.params[idx].kind != ir::ParamKind::Buffer)
      throw Error(std::string(role) + " '" + name + "' names no buffer parameter of " + k.name);
    return ir::resolve(k.params[idx].dtype, dtype);
  }, setup);
}

BufferTypes plan_buffer_types(const LaunchPlan& plan, Instantiation dtype) {
  return [plan, dtype](const std::string& name, const char* role) {
    for (const LaunchStep& s : plan.steps) {
      if (s.library) {
        for (const auto& [param, dt] : library_step_buffers(s, dtype))
          if (step_buffer(s, param) == name) return dt;
        continue;
      }
      const ir::Kernel& k = kernel_ir(s.kernel);
      for (const ir::Param& p : k.params)
        if (p.kind == ir::ParamKind::Buffer && step_buffer(s, p.name) == name) return ir::resolve(p.dtype, dtype);
    }
    throw Error(std::string(role) + " '" + name + "' is bound by no step of the plan (" + plan.describe() + ")");
  };
}

Resident make_resident(Context& ctx, const BufferTypes& param_dtype, const TestSetup& setup) {
  Resident r;
  // A name given both as an input and as an output is an inout buffer: it starts with the input's
  // values, is checked against the oracle as an output and carries the output guard pattern.
  auto is_output = [&](const std::string& name) {
    for (const auto& o : setup.outputs())
      if (o.first == name) return true;
    return false;
  };
  Tensors rounded;
  for (const auto& [name, values] : setup.inputs()) {
    DType t = param_dtype(name, "input");
    check_integer_input(name, t, values);
    std::vector<unsigned char> bytes(values.size() * dtype_size(t));
    num::encode(t, values.data(), bytes.data(), values.size());
    std::vector<double> back(values.size());
    num::decode(t, bytes.data(), back.data(), values.size());
    for (double v : back)
      if (!std::isfinite(v))
        throw Error("input '" + name + "' is not finite after rounding to " + dtype_name(t) + " (fixture out of range)");
    const bool inout = is_output(name);
    fill_guard(t, bytes, values.size(), inout);
    DeviceBuffer buf = ctx.alloc(t, values.size() + kGuardElements);
    ctx.upload(buf, bytes.data(), bytes.size());
    r.bindings.emplace_back(name, buf);
    (inout ? r.outputs : r.inputs).push_back({name, buf, values.size(), inout});
    rounded[name] = std::move(back);
  }
  for (const auto& [name, count] : setup.outputs()) {
    if (auto in = rounded.find(name); in != rounded.end()) {  // inout: bound above
      if (in->second.size() != count)
        throw Error("inout buffer '" + name + "' is given " + std::to_string(in->second.size()) +
                    " input values but " + std::to_string(count) + " output elements");
      r.expected[name].assign(count, 0.0);
      continue;
    }
    DType t = param_dtype(name, "output");
    std::vector<unsigned char> fill(count * dtype_size(t), 0xff);
    fill_guard(t, fill, count, true);
    DeviceBuffer buf = ctx.alloc(t, count + kGuardElements);
    ctx.upload(buf, fill.data(), fill.size());
    r.bindings.emplace_back(name, buf);
    r.outputs.push_back({name, buf, count, true});
    r.expected[name].assign(count, 0.0);
  }
  if (setup.element_oracle()) {
    for (const auto& [name, count] : setup.outputs()) {
      std::vector<size_t> at = oracle_sample_indices(name, count, setup.oracle_sample());
      std::vector<double>& want = r.expected[name];
      want.resize(at.size());
      for (size_t j = 0; j < at.size(); ++j) want[j] = setup.element_oracle()(rounded, name, at[j]);
      r.sampled[name] = std::move(at);
    }
    return r;
  }
  setup.oracle_fn()(rounded, r.expected);
  return r;
}

namespace {
Correctness check(Context& ctx, const Resident& r, double floor, const std::function<Tolerance(DType)>& rule_for) {
  Correctness c;
  bool first = true;
  for (const GuardedBuffer& g : r.outputs) {
    const DeviceBuffer& buf = g.buffer;
    std::vector<unsigned char> bytes(buf.bytes());
    ctx.download(buf, bytes.data(), bytes.size());
    std::vector<double> got(g.count);
    num::decode(buf.dtype(), bytes.data(), got.data(), got.size());
    const std::vector<double>& want = r.expected.at(g.name);
    Tolerance rule = rule_for(buf.dtype());
    if (first) c.rule = rule, first = false;
    const char* unit = rule.ulps ? " ulp" : "";
    const auto sampled = r.sampled.find(g.name);
    if (sampled != r.sampled.end()) {
      // Sampled oracle: the sampled elements against it, every element finite (NaN = unwritten).
      for (size_t i = 0; i < g.count && c.message.empty(); ++i)
        if (!std::isfinite(got[i]))
          c.message = "output '" + g.name + "'[" + std::to_string(i) + "] = " + describe(got[i]) +
                      " (not finite: unwritten? the sampled oracle checks every element for that)";
      const std::vector<size_t>& at = sampled->second;
      for (size_t j = 0; j < at.size(); ++j) {
        const size_t i = at[j];
        double err = element_error(rule, buf.dtype(), got[i], want[j], floor);
        c.max_error = std::max(c.max_error, err);
        ++c.compared;
        if (err > rule.value && c.message.empty())
          c.message = "output '" + g.name + "'[" + std::to_string(i) + "] = " + describe(got[i]) + ", oracle " +
                      describe(want[j]) + " (error " + describe(err) + unit + " > tolerance " + describe(rule.value) +
                      unit + "; sampled oracle, " + std::to_string(at.size()) + " of " + std::to_string(g.count) + " elements)";
      }
      std::string guard = guard_problem(g, bytes, "output");
      if (!guard.empty()) c.message = guard + (c.message.empty() ? "" : "; " + c.message);
      continue;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      double err = element_error(rule, buf.dtype(), got[i], want[i], floor);
      c.max_error = std::max(c.max_error, err);
      ++c.compared;
      if (err > rule.value && c.message.empty())
        c.message = "output '" + g.name + "'[" + std::to_string(i) + "] = " + describe(got[i]) + ", oracle " +
                    describe(want[i]) + " (error " + describe(err) + unit + " > tolerance " + describe(rule.value) +
                    unit + ")";
    }
    std::string guard = guard_problem(g, bytes, "output");
    if (!guard.empty()) c.message = guard + (c.message.empty() ? "" : "; " + c.message);
  }
  for (const GuardedBuffer& g : r.inputs) {
    std::vector<unsigned char> bytes(g.buffer.bytes());
    ctx.download(g.buffer, bytes.data(), bytes.size());
    std::string guard = guard_problem(g, bytes, "input");
    if (!guard.empty()) c.message = guard + (c.message.empty() ? "" : "; " + c.message);
  }
  c.pass = c.message.empty();
  return c;
}
}  // namespace

Correctness check_outputs(Context& ctx, const Resident& r, const TestSetup& setup, double declared) {
  return check(ctx, r, setup.floor(), [&](DType t) { return case_tolerance(setup, declared, t); });
}

Correctness check_outputs(Context& ctx, const Resident& r, double floor, double tol) {
  return check(ctx, r, floor, [&](DType) { return Tolerance{false, tol}; });
}

}  // namespace iron
