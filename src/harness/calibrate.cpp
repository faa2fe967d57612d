// `calibrate`: measures the device's own ceilings — copy bandwidth (iron_calib_copy) and f32
// FMA rate (iron_calib_fma, kernels/calibrate/) — checks each kernel's output before timing it,
// and caches the best sustained figures (device_specs.hpp) for bench's pct_measured_* columns.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <iostream>

#include "core/protocol.hpp"
#include "harness/device_specs.hpp"
#include "harness/stats.hpp"
#include "iron/registry.hpp"

namespace iron::bench {

using nlohmann::json;

namespace {

void send(const json& msg) { std::cout << protocol::encode(msg) << "\n" << std::flush; }

void warn_lock_wait(const std::string& path) {
  send({{"type", "warning"}, {"message", "waiting for the device lock " + path + " (another bench run holds it)"}});
}

// How big and how long: a real GPU streams 1 GiB (far beyond any last-level cache) and runs
// ~1M threads of fma chains; lavapipe and the interpreter run on this CPU, so smaller sizes
// keep a calibration to seconds.
struct Plan {
  size_t copy_bytes;   // bytes of the source buffer (the same again are written)
  int copy_samples;
  uint32_t fma_threads, fma_iters;
  int fma_samples;
};
Plan plan_for(const DeviceInfo& d) {
  if (d.backend == Backend::Interp) return {8u << 20, 3, 256, 64, 3};
  if (d.arch == "cpu") return {64u << 20, 5, 16384, 1024, 5};
  return {1u << 30, 20, 1u << 20, 4096, 10};
}

// Per-sample rates from a timing; best = at the fastest sample, median = at the median one.
struct Rate {
  double best = 0, median = 0;
};
Rate rate(const Timing& t, double units) {
  Stats s = compute_stats(t.samples_us);
  return {units / s.min_us / 1e3, units / s.median_us / 1e3};
}

Rate calibrate_copy(Context& ctx, const Plan& plan, size_t& bytes_out) {
  const DeviceInfo& d = ctx.info();
  const ir::Kernel& k = kernel_ir("iron_calib_copy");
  // 8 floats per thread (kernels/elementwise/per_thread.hpp); grow the threadgroup, then shrink
  // the buffer, until the grid fits the device's x limit. Never more than a quarter of memory.
  size_t bytes = plan.copy_bytes;
  if (d.memory_bytes) bytes = std::min<size_t>(bytes, d.memory_bytes / 4);
  uint32_t tg = 256;
  auto groups = [&](size_t b) { return ((b / 4 + 7) / 8 + tg - 1) / tg; };
  while (groups(bytes) > d.max_grid.x && tg * 2 <= d.max_threads_per_group) tg *= 2;
  while (groups(bytes) > d.max_grid.x) bytes /= 2;
  const uint32_t n = uint32_t(bytes / 4);
  std::vector<float> host(n);
  for (uint32_t i = 0; i < n; ++i) host[i] = float(i % 4093) * 0.25f - 511.0f;  // exact in f32
  DeviceBuffer x = ctx.alloc(DType::F32, n), out = ctx.alloc(DType::F32, n);
  ctx.upload(x, host.data(), size_t(n) * 4);
  Bindings b{{"x", x}, {"out", out}};
  Constexprs sc{{"n", n}};
  Dim3 grid{uint32_t(groups(bytes)), 1, 1}, group{tg, 1, 1};
  // The PASS receipt: one dispatch, every element compared, before anything is timed.
  ctx.dispatch_with_grid(k, DType::F32, b, sc, grid, group);
  ctx.synchronize();
  std::vector<float> back(n);
  ctx.download(out, back.data(), size_t(n) * 4);
  if (std::memcmp(back.data(), host.data(), size_t(n) * 4) != 0)
    throw Error("iron_calib_copy produced a wrong copy on " + d.name + ": not timed");
  host = {};
  back = {};
  TimingOptions o;
  o.warmup = 3;
  o.samples = plan.copy_samples;
  Timing t;
  {
    DeviceLock lock(d.backend, &warn_lock_wait);
    t = ctx.time_dispatch(k, DType::F32, b, sc, grid, group, o);
  }
  bytes_out = size_t(n) * 4;
  return rate(t, 2.0 * double(n) * 4);  // read + write
}

Rate calibrate_fma(Context& ctx, const Plan& plan, double& flops_out) {
  const DeviceInfo& d = ctx.info();
  const ir::Kernel& k = kernel_ir("iron_calib_fma");
  constexpr uint32_t kChains = 8, kRounds = 4;  // as in kernels/calibrate/calibrate.cpp
  const uint32_t n = plan.fma_threads, iters = plan.fma_iters, tg = 256;
  const double a = 1.0 - 1.0 / 1024, bb = 1.0 / 1024;
  DeviceBuffer out = ctx.alloc(DType::F32, n);
  Bindings b{{"out", out}};
  Constexprs sc{{"n", n}, {"iters", iters}, {"a", a}, {"b", bb}};
  Dim3 grid{(n + tg - 1) / tg, 1, 1}, group{tg, 1, 1};
  ctx.dispatch_with_grid(k, DType::F32, b, sc, grid, group);
  ctx.synchronize();
  // The output depends only on t mod 16: sixteen f64 oracles cover every thread.
  double want[16];
  for (uint32_t r = 0; r < 16; ++r) {
    want[r] = 0;
    for (uint32_t c = 0; c < kChains; ++c) {
      double acc = r * 0.0625 + c * 0.125;
      for (uint32_t s = 0; s < iters * kRounds; ++s) acc = acc * a + bb;
      want[r] += acc;
    }
  }
  std::vector<float> got(n);
  ctx.download(out, got.data(), size_t(n) * 4);
  // Tolerance 1e-4: each chain converges to b / (1 - a) = 1, and in f32 the iteration stalls once
  // the step (1 - acc) * 2^-10 falls below half an ulp of acc, i.e. about 2^-15 short of 1 per
  // chain (measured on the H200: 7.999756 for 8 chains vs 7.999999 in f64). That is correct f32
  // arithmetic, not a wrong kernel; a wrong chain is off by far more.
  for (uint32_t t = 0; t < n; ++t)
    if (!(std::fabs(got[t] - want[t & 15]) <= 1e-4 * std::fabs(want[t & 15])))
      throw Error("iron_calib_fma output " + std::to_string(t) + " = " + std::to_string(got[t]) + ", oracle " +
                  std::to_string(want[t & 15]) + " on " + d.name + ": not timed");
  TimingOptions o;
  o.warmup = 3;
  o.samples = plan.fma_samples;
  Timing t;
  {
    DeviceLock lock(d.backend, &warn_lock_wait);
    t = ctx.time_dispatch(k, DType::F32, b, sc, grid, group, o);
  }
  flops_out = 2.0 * kChains * kRounds * double(iters) * n;
  return rate(t, flops_out);
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

int calibrate_main(int argc, char** argv) {
  std::string backend_arg;
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--backend" && i + 1 < argc) backend_arg = argv[++i];
    else throw Error("unknown calibrate option " + s + " (use --backend vulkan|cuda|interp)");
  }
  std::vector<Backend> order{Backend::Cuda, Backend::Vulkan};
  if (!backend_arg.empty()) {
    Backend b;
    if (!parse_backend(backend_arg, b)) throw Error("unknown backend '" + backend_arg + "' (use vulkan, cuda, hip or interp)");
    order = {b};
  }
  std::unique_ptr<Context> ctx;
  std::string why;
  for (Backend b : order) {
    try {
      ctx = Context::create(b);
      break;
    } catch (const Error& e) {
      why += std::string(why.empty() ? "" : "; ") + backend_name(b) + ": " + e.what();
    }
  }
  if (!ctx) throw Error("no backend to calibrate: " + why);
  const DeviceInfo& d = ctx->info();
  send({{"type", "device"}, {"backend", backend_name(d.backend)}, {"available", true}, {"name", d.name},
        {"driver", d.driver}, {"arch", d.arch}, {"lane_width", d.lane_width}});

  const Plan plan = plan_for(d);
  size_t copy_bytes = 0;
  double fma_flops = 0;
  Rate copy = calibrate_copy(*ctx, plan, copy_bytes);
  Rate fma = calibrate_fma(*ctx, plan, fma_flops);

  Ceilings c{copy.best, fma.best};
  json details = {{"created", now_utc()},
                  {"copy_bytes", copy_bytes},
                  {"copy_samples", plan.copy_samples},
                  {"copy_gbps_median", copy.median},
                  {"fma_flops_per_launch", fma_flops},
                  {"fma_samples", plan.fma_samples},
                  {"fma_gflops_median", fma.median}};
  store_calibration(d, c, details.dump());
  json msg = {{"type", "calibration"}, {"backend", backend_name(d.backend)}, {"device", d.name}, {"driver", d.driver},
              {"copy_gbps", copy.best}, {"copy_gbps_median", copy.median}, {"copy_bytes", copy_bytes},
              {"fma_gflops", fma.best}, {"fma_gflops_median", fma.median}, {"path", calibration_cache_path()},
              {"peak_bw_gbps", nullptr}, {"peak_fp32_gflops", nullptr}};
  if (const DeviceSpec* s = lookup_device_spec(d.name)) {
    msg["peak_bw_gbps"] = s->bw_gbps;
    msg["peak_fp32_gflops"] = s->fp32_tflops * 1e3;
  }
  send(msg);
  send({{"type", "summary"}, {"passed", 1}, {"failed", 0}, {"skipped", 0}});
  return 0;
}

}  // namespace iron::bench
