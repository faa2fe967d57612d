// `iron bench` and `iron calibrate`: run the runner's benchmark engine and render its results —
// one row per result, more columns with -v / -vv (seeds §4.1, §6.2), warnings in yellow, a
// progress line on stderr when it is a terminal, and "N passed, N failed" at the end.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace iron::cli {

namespace {

using nlohmann::json;

// The runner's error when no requested backend could be opened ("no backend to benchmark on: ...",
// "no backend to calibrate: ...").
bool is_backend_unavailable(const json& m) { return m.value("message", std::string()).rfind("no backend to ", 0) == 0; }

struct BenchOpts {
  std::string filter, backend, dtype, kernel_override;
  std::vector<std::string> ab;  // --ab KERNEL_A KERNEL_B
  int warmup = 20, samples = 100;
  bool flush_l2 = false, flush_l2_read = false, as_json = false;
  int verbose = 0;
  CLI::Option* warmup_opt = nullptr;
  CLI::Option* samples_opt = nullptr;
};

// Compact numbers: 3 significant digits below 10, then a fixed number of decimals.
std::string num(double v) {
  char b[32];
  if (v >= 1000) std::snprintf(b, sizeof b, "%.0f", v);
  else if (v >= 100) std::snprintf(b, sizeof b, "%.1f", v);
  else if (v >= 10) std::snprintf(b, sizeof b, "%.2f", v);
  else std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}
std::string num_or_dash(const json& v) { return v.is_number() ? num(v.get<double>()) : "-"; }
std::string pct_or_dash(const json& v) { return v.is_number() ? num(v.get<double>()) + "%" : "-"; }

std::string pad(const std::string& s, size_t w, bool left = false) {
  if (s.size() >= w) return s;
  return left ? s + std::string(w - s.size(), ' ') : std::string(w - s.size(), ' ') + s;
}

const json& field(const json& obj, const char* key) {
  static const json null;
  return obj.is_object() && obj.contains(key) ? obj[key] : null;
}

// "iron_add/n4096 [f32] vulkan", and "(as iron_mul)" when --kernel-override ran another kernel.
std::string row_name(const json& m) {
  std::string s = m.value("kernel", std::string("?")) + "/" + m.value("bench", std::string("?")) + " [" +
                  m.value("dtype", std::string("?")) + "] " + m.value("backend", std::string("?"));
  if (m.contains("kernel_override") && m["kernel_override"].is_string())
    s += " (as " + m["kernel_override"].get<std::string>() + ")";
  return s;
}

constexpr size_t kNameWidth = 40;

std::string header(int verbose) {
  std::string h = pad("bench", kNameWidth, true) + pad("median us", 11) + pad("min us", 11) + pad("GB/s", 9) +
                  pad("%peak BW", 10) + "  " + pad("bottleneck", 10, true);
  if (verbose >= 1)
    h += pad("GFLOP/s", 10) + pad("FLOP/B", 8) + pad("%peak FL", 10) + pad("%meas BW", 10) + pad("%meas FL", 10) +
         pad("regs/spill", 12);
  if (verbose >= 2) h += pad("mean us", 11) + pad("p95 us", 11) + pad("p99 us", 11) + pad("CV", 8) + pad("n", 6);
  return h;
}

std::string result_row(const json& m, int verbose) {
  const json& stats = field(m, "stats");
  const json& met = field(m, "metrics");
  std::string bottleneck = field(met, "bottleneck").is_string() ? field(met, "bottleneck").get<std::string>() : "-";
  std::string r = pad(row_name(m), kNameWidth, true) + pad(num_or_dash(field(stats, "median_us")), 11) +
                  pad(num_or_dash(field(stats, "min_us")), 11) + pad(num_or_dash(field(met, "gbps")), 9) +
                  pad(pct_or_dash(field(met, "pct_peak_bw")), 10) + "  " + pad(bottleneck, 10, true);
  if (verbose >= 1) {
    const json& res = field(m, "resources");
    std::string regs = "-";
    if (res.is_object()) {
      auto count = [&](const char* k) {
        const json& v = field(res, k);
        return v.is_number() ? std::to_string(v.get<long>()) : std::string("?");
      };
      long spills = 0;
      for (const char* k : {"spill_stores", "spill_loads"})
        if (field(res, k).is_number()) spills += field(res, k).get<long>();
      regs = count("registers") + "/" + std::to_string(spills);
    }
    r += pad(num_or_dash(field(met, "gflops")), 10) + pad(num_or_dash(field(met, "intensity")), 8) +
         pad(pct_or_dash(field(met, "pct_peak_compute")), 10) + pad(pct_or_dash(field(met, "pct_measured_bw")), 10) +
         pad(pct_or_dash(field(met, "pct_measured_compute")), 10) + pad(regs, 12);
  }
  if (verbose >= 2) {
    const json& cv = field(stats, "cv");
    r += pad(num_or_dash(field(stats, "mean_us")), 11) + pad(num_or_dash(field(stats, "p95_us")), 11) +
         pad(num_or_dash(field(stats, "p99_us")), 11) + pad(cv.is_number() ? num(100 * cv.get<double>()) + "%" : "-", 8) +
         pad(field(stats, "n").is_number() ? std::to_string(field(stats, "n").get<long>()) : "-", 6);
  }
  return r;
}

// The progress line lives on stderr and only on a terminal; it is erased before stdout output.
struct Progress {
  bool on = isatty(STDERR_FILENO) != 0;
  bool shown = false;
  void show(const std::string& s) {
    if (!on) return;
    std::cerr << "\r\033[K" << s << std::flush;
    shown = true;
  }
  void clear() {
    if (on && shown) std::cerr << "\r\033[K" << std::flush;
    shown = false;
  }
};

int run_bench(const BenchOpts& o) {
  std::vector<std::string> args{"bench"};
  auto opt = [&](const char* flag, const std::string& v) {
    if (!v.empty()) args.insert(args.end(), {flag, v});
  };
  opt("-f", o.filter);
  opt("--backend", o.backend);
  opt("--dtype", o.dtype);
  opt("--kernel-override", o.kernel_override);
  if (o.warmup_opt && o.warmup_opt->count()) opt("--warmup", std::to_string(o.warmup));
  if (o.samples_opt && o.samples_opt->count()) opt("--samples", std::to_string(o.samples));
  if (o.flush_l2_read) args.push_back("--flush-l2-read");
  else if (o.flush_l2) args.push_back("--flush-l2");

  Style st;
  Progress progress;
  int passed = 0, failed = 0, skipped = 0;
  bool summary = false, error = false, header_done = false, backend_unavailable = false;
  std::string in_flight;
  RunResult r = run_runner(args, [&](const json& m) {
    const std::string type = m.value("type", std::string());
    if (type == "bench_start") {
      in_flight = m.value("kernel", std::string()) + "/" + m.value("bench", std::string()) + " " +
                  m.value("dtype", std::string());
      progress.show("[" + std::to_string(m.value("index", 0)) + "/" + std::to_string(m.value("total", 0)) + "] " +
                    in_flight);
      return;
    }
    progress.clear();
    if (o.as_json) {
      std::cout << m.dump() << "\n" << std::flush;
    }
    if (type == "device") {
      if (!o.as_json)
        std::cout << "device: " << m.value("name", std::string()) << " (" << m.value("backend", std::string()) << ", "
                  << m.value("driver", std::string()) << ")\n";
    } else if (type == "bench") {
      in_flight.clear();
      const std::string status = m.value("status", std::string());
      (status == "ok" ? passed : failed)++;
      if (o.as_json) return;
      if (!header_done) {
        std::cout << st.dim(header(o.verbose)) << "\n";
        header_done = true;
      }
      if (status == "ok") {
        std::cout << result_row(m, o.verbose) << "\n";
      } else {
        std::string tag = status == "fail" ? st.red("FAIL ") : st.red("ERROR ");
        std::cout << tag << row_name(m) << "\n    " << m.value("message", std::string()) << "\n";
      }
    } else if (type == "warning") {
      if (!o.as_json) std::cout << st.yellow("warning: " + m.value("message", std::string())) << "\n";
    } else if (type == "summary") {
      summary = true;
      skipped = m.value("skipped", 0);
    } else if (type == "error") {
      error = true;
      backend_unavailable = backend_unavailable || is_backend_unavailable(m);
      report_error(m);
    }
    std::cout << std::flush;
  });
  progress.clear();
  failed += r.bad_lines;  // a result the CLI could not read is not a pass
  if (r.crashed) {
    ++failed;
    std::cerr << "iron: " << st.red("runner crashed") << " with " << r.crash
              << (in_flight.empty() ? std::string() : " while benchmarking " + in_flight) << "\n";
  } else if (!summary && !error) {
    ++failed;
    std::cerr << "iron: the runner exited (code " << r.exit_code << ") without a summary\n";
  }
  // A backend that cannot run is a failure (1), as it is for `iron test`, not a usage error.
  if (error && passed + failed == 0) return backend_unavailable ? 1 : 2;
  if (passed + failed == 0 && skipped > 0) {
    std::cerr << "iron: all " << skipped << " matched benchmarks were skipped on this device: nothing was run\n";
    return 2;
  }
  if (passed + failed == 0) {
    std::cerr << "iron: no benchmark matched";
    for (size_t i = 1; i + 1 < args.size(); ++i)
      if (args[i] == "-f" || args[i] == "--dtype") std::cerr << " " << args[i] << " " << args[i + 1];
    std::cerr << ": nothing was run\n";
    return 2;
  }
  std::string line = std::to_string(passed) + " passed, " + std::to_string(failed) + " failed";
  if (skipped) line += ", " + std::to_string(skipped) + " skipped";
  (o.as_json ? std::cerr : std::cout) << line << "\n";
  return failed == 0 && !error ? 0 : 1;
}

int calibrate_impl(const std::string& backend, bool as_json) {
  std::vector<std::string> args{"calibrate"};
  if (!backend.empty()) args.insert(args.end(), {"--backend", backend});
  Style st;
  bool error = false, done = false, backend_unavailable = false;
  RunResult r = run_runner(args, [&](const json& m) {
    const std::string type = m.value("type", std::string());
    if (as_json) {
      std::cout << m.dump() << "\n";
      if (type == "error") error = true, backend_unavailable = backend_unavailable || is_backend_unavailable(m);
      if (type == "calibration") done = true;
      return;
    }
    if (type == "device") {
      std::cout << "device: " << m.value("name", std::string()) << " (" << m.value("backend", std::string()) << ", "
                << m.value("driver", std::string()) << ")\n";
    } else if (type == "calibration") {
      done = true;
      auto vs_peak = [&](const char* peak_key, double v) {
        const json& p = field(m, peak_key);
        return p.is_number() ? "  (" + num(100 * v / p.get<double>()) + "% of the datasheet " + num(p.get<double>()) + ")"
                             : std::string();
      };
      double copy = m.value("copy_gbps", 0.0), fma = m.value("fma_gflops", 0.0);
      std::cout << "copy bandwidth: " << num(copy) << " GB/s best, " << num(m.value("copy_gbps_median", 0.0))
                << " median, over " << num(m.value("copy_bytes", 0.0) / (1 << 20)) << " MiB"
                << vs_peak("peak_bw_gbps", copy) << "\n";
      std::cout << "fma rate:       " << num(fma) << " GFLOP/s best, " << num(m.value("fma_gflops_median", 0.0))
                << " median" << vs_peak("peak_fp32_gflops", fma) << "\n";
      std::cout << st.dim("cached in " + m.value("path", std::string())) << "\n";
    } else if (type == "warning") {
      std::cout << st.yellow("warning: " + m.value("message", std::string())) << "\n";
    } else if (type == "error") {
      error = true;
      backend_unavailable = backend_unavailable || is_backend_unavailable(m);
      report_error(m);
    }
  });
  if (r.crashed) {
    std::cerr << "iron: " << st.red("runner crashed") << " with " << r.crash << " while calibrating\n";
    return 1;
  }
  if (error) return backend_unavailable ? 1 : 2;
  return done && r.exit_code == 0 && r.bad_lines == 0 ? 0 : 1;
}

}  // namespace

int run_calibrate(const std::string& backend, bool as_json) { return calibrate_impl(backend, as_json); }

void add_bench_commands(CLI::App& app, Commands& out) {
  // CLI11 binds to these: they must outlive parsing, so they live as long as the program.
  static BenchOpts o;
  auto* bench = app.add_subcommand("bench", "Benchmark the registered kernels (correctness PASS first, then timing)");
  bench->add_option("-f,--filter", o.filter, "Only kernels or kernel/bench names containing this text");
  bench->add_option("--backend", o.backend, "vulkan, cuda, hip or interp (default: the best available GPU backend)")
      ->check(CLI::IsMember(kRunBackends));
  bench->add_option("--dtype", o.dtype, "Only this dtype (f32, f16, bf16)");
  o.warmup_opt = bench->add_option("--warmup", o.warmup, "Untimed launches before sampling (default 20)")
                     ->check(CLI::Range(0, 1000000));
  o.samples_opt = bench->add_option("--samples", o.samples, "Timed launches (default 100)")->check(CLI::Range(1, 1000000));
  bench->add_flag("--flush-l2", o.flush_l2, "Flush the last-level cache before every sample (by writing a buffer)");
  bench->add_flag("--flush-l2-read", o.flush_l2_read,
                  "Flush the L2 before every sample by reading a buffer 4x its size, which leaves no dirty "
                  "line to be written back during the sample (CUDA; docs/benchmarks.md)");
  bench->add_option("--kernel-override", o.kernel_override,
                    "Run this kernel with each bench's setup (A/B; the same parameter names)");
  bench->add_flag("-v,--verbose", o.verbose, "-v: GFLOP/s, intensity, % of peak compute and measured, registers; "
                                              "-vv: mean, p95, p99, CV, samples");
  bench->add_flag("--json", o.as_json, "Print protocol messages as JSON lines");
  bench->add_option("--ab", o.ab, "A/B two kernels on KERNEL_A's benches: both orders, >= 3 fresh processes each, "
                                  "bootstrap CI and the 3% keep bar (same as `iron ab`)")
      ->expected(2);
  out.emplace_back(bench, [] {
    if (o.ab.size() == 2) {
      if (o.flush_l2_read) {
        std::cerr << "iron: --flush-l2-read is not taken by --ab (use --flush-l2)\n";
        return 2;
      }
      AbRequest r{o.ab[0], o.ab[1], o.filter, o.backend, o.dtype, o.samples, o.flush_l2, o.as_json};
      return run_ab(r);
    }
    return run_bench(o);
  });

  static std::string cal_backend;
  static bool cal_json = false;
  auto* cal = app.add_subcommand("calibrate", "Measure this device's copy bandwidth and FMA rate; cached for bench");
  cal->add_option("--backend", cal_backend, "vulkan, cuda, hip or interp (default: the best available GPU backend)")
      ->check(CLI::IsMember(kRunBackends));
  cal->add_flag("--json", cal_json, "Print protocol messages as JSON lines");
  out.emplace_back(cal, [] { return run_calibrate(cal_backend, cal_json); });
}

}  // namespace iron::cli
