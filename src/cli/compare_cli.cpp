// `iron snap`, `iron diff`, `iron ab`, `iron report`: saved benchmark results, their comparison
// under the engineering guide's A/B protocol (§6: both orders, fresh processes, min and median,
// a 3% keep bar checked with a bootstrap interval), and a self-contained HTML report.
// The statistics and file formats live in bootstrap.hpp; the HTML in report.cpp.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/bootstrap.hpp"
#include "cli/cli.hpp"
#include "cli/witness.hpp"

namespace iron::cli {

// report.cpp
std::string render_report(const std::vector<compare::Snapshot>& snaps, const std::string& chart_js, const std::string& title);

namespace {

using nlohmann::json;
namespace cmp = iron::cli::compare;
namespace fs = std::filesystem;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string fmt_us(double us) {
  if (!std::isfinite(us)) return "-";
  if (us >= 1e5) return fmt("%.2f ms", us / 1000);
  return fmt(us < 10 ? "%.3f us" : us < 1000 ? "%.2f us" : "%.1f us", us);
}

std::string fmt_pct(double pct) { return std::isfinite(pct) ? fmt("%+.1f%%", pct) : "-"; }

std::string fmt_ci(const cmp::BootstrapResult& ci) {
  if (!ci.ok) return "-";
  return "[" + fmt("%+.1f%%", (ci.lo - 1) * 100) + ", " + fmt("%+.1f%%", (ci.hi - 1) * 100) + "]";
}

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }
std::string lpad(const std::string& s, size_t w) { return s.size() >= w ? " " + s : std::string(w - s.size(), ' ') + s; }

std::string coloured_verdict(const Style& st, const std::string& v) {
  if (v == "faster") return st.green(v);
  if (v == "slower") return st.red(v);
  if (v.rfind("inconclusive", 0) == 0) return st.yellow(v);
  return v;
}

// Options shared by snap and ab, forwarded to `iron-runner bench`.
struct BenchArgs {
  std::string filter, backend, dtype;
  int samples = 0;
  bool flush_l2 = false;

  std::vector<std::string> runner_args(const std::string& f) const {
    std::vector<std::string> a{"bench"};
    if (!f.empty()) a.insert(a.end(), {"-f", f});
    if (!backend.empty()) a.insert(a.end(), {"--backend", backend});
    if (!dtype.empty()) a.insert(a.end(), {"--dtype", dtype});
    if (samples > 0) a.insert(a.end(), {"--samples", std::to_string(samples)});
    if (flush_l2) a.push_back("--flush-l2");
    return a;
  }
};

void add_bench_options(CLI::App* c, BenchArgs& b) {
  c->add_option("--backend", b.backend, "vulkan, cuda, hip or interp (default: the runner's best GPU backend)")
      ->check(CLI::IsMember(kRunBackends));
  c->add_option("--dtype", b.dtype, "Only this dtype (f32, f16, bf16, ...)");
  c->add_option("--samples", b.samples, "Timed samples per benchmark (default: the runner's)")->check(CLI::PositiveNumber);
  c->add_flag("--flush-l2", b.flush_l2, "Flush the L2 cache between samples");
}

// One runner process: its bench records, and whatever went wrong.
struct BenchRun {
  std::vector<json> records;
  std::vector<std::string> problems;  // runner errors, a crash, an exit without results
};

BenchRun run_bench(const std::vector<std::string>& args, const std::function<void(const json&)>& on_message = {}) {
  BenchRun run;
  RunResult r = run_runner(args, [&](const json& m) {
    std::string type = m.value("type", std::string());
    if (type == "bench") run.records.push_back(cmp::record_from_message(m));
    else if (type == "error") run.problems.push_back(m.value("message", std::string("runner error")));
    if (on_message) on_message(m);
  });
  if (r.bad_lines)
    run.problems.push_back("runner sent " + std::to_string(r.bad_lines) + " unreadable line(s) (reported above)");
  if (r.crashed) run.problems.push_back("runner crashed with " + r.crash);
  else if (r.exit_code != 0 && run.problems.empty() && run.records.empty())
    run.problems.push_back("runner exited with code " + std::to_string(r.exit_code));
  return run;
}

// ---------------------------------------------------------------------------------------------
// iron snap

struct SnapOptions {
  std::string name;
  BenchArgs bench;
  int processes = 3;
  bool list = false, force = false;
};

int snap_list() {
  fs::path dir = cmp::snap_dir();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::cout << "no snapshots in " << dir.string() << "\n";
    return 0;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::cout << pad("name", 24) << pad("created", 22) << lpad("results", 8) << "  devices / sources\n";
  for (const fs::path& p : files) {
    try {
      cmp::Snapshot s = cmp::read_snapshot(p);
      std::set<std::string> devices, sources;
      for (const json& r : s.results) {
        devices.insert(cmp::str_field(r, "device", "?") + " (" + cmp::str_field(r, "backend", "?") + ")");
        sources.insert(cmp::source_of(r));
      }
      std::string d, src;
      for (const auto& x : devices) d += (d.empty() ? "" : ", ") + x;
      for (const auto& x : sources) src += (src.empty() ? "" : ", ") + x;
      std::cout << pad(p.stem().string(), 24) << pad(s.created, 22) << lpad(std::to_string(s.results.size()), 8) << "  "
                << d << " / " << src << "\n";
    } catch (const std::exception& e) {
      std::cout << pad(p.stem().string(), 24) << "unreadable: " << e.what() << "\n";
    }
  }
  return 0;
}

// Nearest-rank percentile of a sorted vector (the runner's rule, stats.cpp).
double nearest_rank(const std::vector<double>& sorted, double q) {
  size_t k = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::min(sorted.size() - 1, k == 0 ? 0 : k - 1)];
}

// One record per case from N processes: the first process's record, with "runs_us" (each
// process's samples), "samples_us" (all of them), "processes" and statistics of the pooled
// samples. A case that failed in any process keeps that process's failed record. A case
// missing from some process is a problem (the set would not be comparable).
BenchRun merge_processes(const std::vector<BenchRun>& runs) {
  BenchRun out;
  for (const BenchRun& r : runs) out.problems.insert(out.problems.end(), r.problems.begin(), r.problems.end());
  if (runs.empty()) return out;
  if (runs.size() == 1) {
    out.records = runs[0].records;
    return out;
  }
  auto key = [](const json& r) {
    return cmp::str_field(r, "kernel") + "/" + cmp::str_field(r, "bench") + "/" + cmp::str_field(r, "dtype") + "/" +
           cmp::source_of(r) + "/" + cmp::str_field(r, "backend");
  };
  for (const json& first : runs[0].records) {
    json merged = first;
    json runs_us = json::array();
    std::vector<double> pooled;
    bool complete = true;
    for (const BenchRun& r : runs) {
      const json* match = nullptr;
      for (const json& rec : r.records)
        if (key(rec) == key(first)) match = &rec;
      if (!match) {
        complete = false;
        continue;
      }
      if (!cmp::is_ok(*match) && cmp::is_ok(merged)) merged = *match;
      std::vector<double> s = cmp::samples_of(*match);
      pooled.insert(pooled.end(), s.begin(), s.end());
      runs_us.push_back(s);
    }
    if (!complete) out.problems.push_back(key(first) + ": missing from some processes");
    merged["processes"] = runs_us.size();
    if (cmp::is_ok(merged) && !pooled.empty()) {
      merged["runs_us"] = runs_us;
      merged["samples_us"] = pooled;
      std::vector<double> sorted = pooled;
      std::sort(sorted.begin(), sorted.end());
      double mean = 0;
      for (double x : sorted) mean += x;
      mean /= double(sorted.size());
      double var = 0;
      for (double x : sorted) var += (x - mean) * (x - mean);
      double sd = sorted.size() > 1 ? std::sqrt(var / double(sorted.size() - 1)) : 0;
      json stats = merged.contains("stats") && merged["stats"].is_object() ? merged["stats"] : json::object();
      stats["n"] = sorted.size();
      stats["min_us"] = sorted.front();
      stats["median_us"] = cmp::median(sorted);
      stats["mean_us"] = mean;
      stats["p95_us"] = nearest_rank(sorted, 0.95);
      stats["p99_us"] = nearest_rank(sorted, 0.99);
      stats["cv"] = mean > 0 ? sd / mean : 0;
      merged["stats"] = stats;
    }
    out.records.push_back(std::move(merged));
  }
  return out;
}

int cmd_snap(const SnapOptions& o) {
  Style st;
  if (o.list) return snap_list();
  if (!cmp::valid_snap_name(o.name)) {
    std::cerr << "iron: snapshot name '" << o.name << "' must be letters, digits, '-', '_' or '.' (not starting with '.')\n";
    return 2;
  }
  fs::path path = cmp::snap_dir() / (o.name + ".json");
  std::error_code ec;
  if (fs::exists(path, ec) && !o.force) {
    std::cerr << "iron: snapshot " << path.string() << " exists; pass --force to replace it\n";
    return 2;
  }
  // --processes N: N fresh runner processes, one after another; each record keeps its samples
  // per process ("runs_us") so `iron diff` can measure the between-process variation.
  std::vector<BenchRun> runs;
  for (int p = 0; p < o.processes; ++p) {
    if (o.processes > 1) std::cout << st.dim("process " + std::to_string(p + 1) + "/" + std::to_string(o.processes)) << "\n";
    runs.push_back(run_bench(o.bench.runner_args(o.bench.filter), [&](const json& m) {
      std::string type = m.value("type", std::string());
      if (type == "device" && m.value("available", false) && p == 0) {
        std::cout << "device: " << m.value("name", std::string()) << " (" << m.value("backend", std::string()) << ")\n";
      } else if (type == "warning" && p == 0) {
        std::cout << st.yellow("warning: ") << m.value("message", std::string()) << "\n";
      } else if (type == "error") {
        report_error(m);
      }
    }));
    if (!runs.back().problems.empty()) break;
  }
  BenchRun run = merge_processes(runs);
  int failed = 0;
  for (const json& m : run.records) {
    bool ok = cmp::is_ok(m);
    if (!ok) ++failed;
    std::cout << (ok ? st.green("ok  ") : st.red("FAIL")) << " " << pad(cmp::case_name(m), 34)
              << pad("[" + cmp::str_field(m, "dtype") + "]", 7);
    if (ok) std::cout << "median " << lpad(fmt_us(cmp::median_of(m)), 12) << "  min " << lpad(fmt_us(cmp::min_of(m)), 12);
    else std::cout << cmp::str_field(m, "message");
    std::cout << "\n";
  }
  bool crashed = false;
  for (const std::string& p : run.problems) {
    if (p.rfind("runner", 0) == 0) std::cerr << "iron: " << st.red(p) << "\n";  // errors were printed as they came
    crashed = crashed || p.rfind("runner crashed", 0) == 0 || p.rfind("runner sent", 0) == 0;
  }
  // A crash mid-run leaves a partial set: not a baseline anyone should compare against.
  if (crashed || (!run.problems.empty() && run.records.empty())) {
    std::cerr << "iron: snapshot not written\n";
    return run.records.empty() ? 2 : 1;
  }
  if (run.records.empty()) {
    std::cerr << "iron: no benchmark matched" << (o.bench.filter.empty() ? "" : " '" + o.bench.filter + "'")
              << "; snapshot not written\n";
    return 2;
  }
  try {
    cmp::write_snapshot(path, cmp::snapshot_json(o.name, cmp::utc_now_iso8601(), run.records));
  } catch (const std::exception& e) {
    std::cerr << "iron: " << e.what() << "\n";
    return 2;
  }
  std::cout << "saved " << run.records.size() << " results to " << path.string();
  if (failed) std::cout << " (" << failed << " failed)";
  std::cout << "\n";
  return failed ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// iron diff

struct DiffOptions {
  std::string a, b;
  bool as_json = false;
  int resamples = cmp::kMinResamples;
};

int cmd_diff(const DiffOptions& o) {
  Style st;
  // Two witness files (iron test --witness) compare case by case.
  {
    json ja, jb;
    for (auto [arg, out] : {std::pair{&o.a, &ja}, std::pair{&o.b, &jb}}) {
      std::ifstream in(cmp::resolve_snapshot(*arg));
      if (in) *out = json::parse(in, nullptr, false);
    }
    if (witness::is_witness(ja) || witness::is_witness(jb)) return witness::diff_witnesses(ja, jb, o.a, o.b);
  }
  cmp::Snapshot sa, sb;
  try {
    sa = cmp::read_snapshot(cmp::resolve_snapshot(o.a));
    sb = cmp::read_snapshot(cmp::resolve_snapshot(o.b));
  } catch (const std::exception& e) {
    std::cerr << "iron: " << e.what() << "\n";
    return 2;
  }
  cmp::BootstrapOptions bo;
  bo.resamples = o.resamples;
  std::vector<cmp::DiffRow> rows = cmp::diff_results(sa.results, sb.results, bo);

  if (o.as_json) {
    json out{{"a", {{"name", sa.name}, {"created", sa.created}, {"path", sa.path.string()}}},
             {"b", {{"name", sb.name}, {"created", sb.created}, {"path", sb.path.string()}}},
             {"keep_bar", cmp::kKeepBar},
             {"confidence", 0.95},
             {"rows", json::array()}};
    for (const auto& r : rows) out["rows"].push_back(cmp::diff_row_json(r));
    std::cout << out.dump(1) << "\n";
    return 0;
  }

  std::cout << "A: " << sa.name << " (" << sa.created << ", " << sa.results.size() << " results)\n"
            << "B: " << sb.name << " (" << sb.created << ", " << sb.results.size() << " results)\n"
            << st.dim("delta = median B / median A - 1; CI: 95% bootstrap of that ratio over processes and samples (" +
                      std::to_string(std::max(o.resamples, cmp::kMinResamples)) +
                      " resamples); faster/slower only when the whole CI clears the 3% keep bar and the floor: the "
                      "between-process noise measured from the snapshots' processes (p = processes A/B), or +-30% "
                      "with one process per side (docs/benchmarks.md)")
            << "\n\n";
  std::cout << pad("case", 34) << pad("dtype", 6) << pad("A source", 15) << pad("B source", 15) << lpad("median A", 12)
            << lpad("median B", 12) << lpad("delta", 9) << "  " << pad("95% CI", 18) << pad("floor (p)", 15) << "verdict\n";
  int faster = 0, slower = 0, same = 0, nodata = 0;
  std::vector<const cmp::DiffRow*> only_a, only_b;
  for (const auto& r : rows) {
    if (!r.has_a) {
      only_b.push_back(&r);
      continue;
    }
    if (!r.has_b) {
      only_a.push_back(&r);
      continue;
    }
    std::string v = cmp::verdict_text(r.verdict);
    (r.verdict == cmp::Verdict::Faster ? faster : r.verdict == cmp::Verdict::Slower ? slower
                                                : r.verdict == cmp::Verdict::Same   ? same
                                                                                    : nodata)++;
    std::cout << pad(r.kernel + "/" + r.bench, 34) << pad(r.dtype, 6) << pad(cmp::source_of(r.a), 15)
              << pad(cmp::source_of(r.b), 15) << lpad(fmt_us(r.median_a), 12) << lpad(fmt_us(r.median_b), 12)
              << lpad(fmt_pct(r.delta_pct), 9) << "  " << pad(fmt_ci(r.ci), 18)
              << pad(r.ci.ok ? fmt("%.1f%%", 100 * std::max(cmp::kKeepBar, r.noise.floor)) + " (" +
                                   std::to_string(r.noise.processes_a) + "/" + std::to_string(r.noise.processes_b) + ")"
                             : "-",
                     15)
              << coloured_verdict(st, v);
    if (!r.note.empty()) std::cout << "  " << st.dim(r.note);
    std::cout << "\n";
  }
  auto list_side = [&](const char* title, const std::vector<const cmp::DiffRow*>& side, bool is_a) {
    if (side.empty()) return;
    std::cout << "\n" << title << " (" << side.size() << "):\n";
    for (const auto* r : side) {
      const json& rec = is_a ? r->a : r->b;
      std::cout << "  " << pad(r->kernel + "/" + r->bench, 34) << pad(r->dtype, 6) << pad(cmp::source_of(rec), 15)
                << lpad(fmt_us(is_a ? r->median_a : r->median_b), 12);
      if (!cmp::is_ok(rec)) std::cout << "  " << cmp::str_field(rec, "status") << ": " << cmp::str_field(rec, "message");
      else if (!cmp::str_field(rec, "message").empty()) std::cout << "  " << st.dim(cmp::str_field(rec, "message"));
      std::cout << "\n";
    }
  };
  list_side("only in A", only_a, true);
  list_side("only in B", only_b, false);
  std::cout << "\n"
            << faster << " faster, " << slower << " slower, " << same << " same (within noise), " << nodata
            << " without a verdict; " << only_a.size() << " only in A, " << only_b.size() << " only in B\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// iron ab

struct AbOptions {
  std::string kernel_a, kernel_b;
  BenchArgs bench;
  int runs = 3;
  int resamples = cmp::kMinResamples;
  bool as_json = false;
};

// Samples of one (bench, dtype), by side (0 = KERNEL_A, 1 = KERNEL_B) and order (0 = AB, 1 = BA);
// one inner vector per runner process.
struct AbCell {
  cmp::Runs runs[2][2];
  std::vector<std::string> problems;
};

// The benches of KERNEL_A whose names start with `filter`. `iron-runner list` names them when it
// emits bench entries ({"type": "bench_case", "kernel", "bench"}); otherwise one discovery run of
// `bench -f KERNEL_A/FILTER` does (its timings are discarded: all benches in one process is
// exactly what the protocol avoids).
std::vector<std::string> discover_benches(const AbOptions& o, std::set<std::string>& kernels, std::string& why) {
  std::set<std::string> benches;
  auto take = [&](const std::string& kernel, const std::string& bench) {
    if (kernel == o.kernel_a && !bench.empty() && bench.rfind(o.bench.filter, 0) == 0) benches.insert(bench);
  };
  RunResult lr = run_runner({"list"}, [&](const json& m) {
    std::string type = m.value("type", std::string());
    if (type == "kernel") kernels.insert(m.value("name", std::string()));
    else if (type == "bench_case" || type == "bench_decl")
      take(m.value("kernel", std::string()), m.value("bench", m.value("name", std::string())));
  });
  if (lr.crashed || lr.exit_code != 0 || lr.bad_lines) {
    why = "iron-runner list failed";
    return {};
  }
  if (!kernels.count(o.kernel_a) || !kernels.count(o.kernel_b)) return {};
  if (benches.empty()) {
    (o.as_json ? std::cerr : std::cout) << "discovering the benches of " << o.kernel_a << " (one run; its timings are not used)\n";
    // The runner's -f matches "kernel/bench" substrings: KERNEL_A/FILTER selects the benches
    // whose names start with FILTER. One sample, no warm-up: only the names are wanted.
    BenchArgs quick = o.bench;
    quick.samples = 1;
    std::vector<std::string> args = quick.runner_args(o.kernel_a + "/" + o.bench.filter);
    args.insert(args.end(), {"--warmup", "0"});
    BenchRun d = run_bench(args);
    for (const json& r : d.records) take(cmp::str_field(r, "kernel"), cmp::str_field(r, "bench"));
    if (benches.empty() && !d.problems.empty()) why = d.problems.front();
  }
  return {benches.begin(), benches.end()};
}

json ab_side_json(const cmp::Runs& runs) {
  std::vector<double> all;
  for (const auto& r : runs) all.insert(all.end(), r.begin(), r.end());
  json j{{"processes", runs.size()}, {"samples", all.size()}};
  j["min_us"] = all.empty() ? json(nullptr) : json(*std::min_element(all.begin(), all.end()));
  j["median_us"] = all.empty() ? json(nullptr) : json(cmp::median(all));
  return j;
}

int cmd_ab(const AbOptions& o) {
  Style st;
  // An A/A run (the same kernel on both sides) is a harness check: it must come out "same".
  if (o.kernel_a == o.kernel_b)
    (o.as_json ? std::cerr : std::cout) << "A/A run: " << o.kernel_a << " against itself checks the harness; expect \"same\"\n";
  std::set<std::string> kernels;
  std::string why;
  std::vector<std::string> benches = discover_benches(o, kernels, why);
  for (const std::string& k : {o.kernel_a, o.kernel_b})
    if (!kernels.empty() && !kernels.count(k)) {
      std::cerr << "iron: unknown kernel '" << k << "' (`iron list` shows them)\n";
      return 2;
    }
  if (benches.empty()) {
    std::cerr << "iron: no bench of " << o.kernel_a << (o.bench.filter.empty() ? "" : " matches '" + o.bench.filter + "'")
              << (why.empty() ? "" : " (" + why + ")") << "\n";
    return 2;
  }

  // Progress goes to stderr under --json, so stdout stays one JSON document.
  std::ostream& progress = o.as_json ? std::cerr : std::cout;
  int processes = 0, total = int(benches.size()) * 4 * o.runs;
  bool any_problem = false;
  json out_json = json::array();
  for (const std::string& bench : benches) {
    std::map<std::string, AbCell> cells;  // by dtype
    std::vector<std::string> bench_problems;
    // One process: KERNEL_A's bench, run as itself or with KERNEL_B swapped in.
    auto one = [&](int side, int order) {
      std::vector<std::string> args = o.bench.runner_args(o.kernel_a + "/" + bench);
      if (side == 1) args.insert(args.end(), {"--kernel-override", o.kernel_b});
      ++processes;
      progress << st.dim("  [" + std::to_string(processes) + "/" + std::to_string(total) + "] " +
                          (side ? o.kernel_b : o.kernel_a) + " on " + o.kernel_a + "/" + bench + " (order " +
                          (order ? "BA" : "AB") + ")")
                << "\n"
                << std::flush;
      BenchRun run = run_bench(args);
      for (const std::string& p : run.problems) bench_problems.push_back(p);
      std::set<std::string> seen;
      for (const json& r : run.records) {
        // The filter is a substring match: keep only this exact bench (n4 must not pull in n4096).
        if (cmp::str_field(r, "bench") != bench) continue;
        std::string k = cmp::str_field(r, "kernel");
        if (k != o.kernel_a && k != o.kernel_b) continue;
        std::string dt = cmp::str_field(r, "dtype");
        AbCell& cell = cells[dt];
        if (!cmp::is_ok(r)) {
          cell.problems.push_back((side ? o.kernel_b : o.kernel_a) + " " + cmp::str_field(r, "status") + ": " +
                                  cmp::str_field(r, "message"));
          continue;
        }
        std::vector<double> s = cmp::samples_of(r);
        if (s.empty()) {
          cell.problems.push_back("a result without samples_us");
          continue;
        }
        if (!seen.insert(dt).second) continue;  // one result per dtype and process
        cell.runs[side][order].push_back(std::move(s));
      }
    };
    // ABBA per round: order AB (A then B), then order BA (B then A), each a fresh process.
    // A side that fails the oracle (KERNEL_B computing something else) will fail every round:
    // stop after the first.
    for (int i = 0; i < o.runs; ++i) {
      one(0, 0);
      one(1, 0);
      one(1, 1);
      one(0, 1);
      bool failing = !bench_problems.empty();
      for (auto& [dt, cell] : cells) failing = failing || !cell.problems.empty();
      if (failing) {
        if (i + 1 < o.runs) progress << "  stopping " << o.kernel_a << "/" << bench << " after round 1: see the problems below\n";
        break;
      }
    }
    if (cells.empty()) {
      any_problem = true;
      std::cout << st.red("FAIL") << " " << o.kernel_a << "/" << bench << ": no results";
      if (!bench_problems.empty()) std::cout << " (" << bench_problems.front() << ")";
      std::cout << "\n";
      out_json.push_back({{"kernel_a", o.kernel_a}, {"kernel_b", o.kernel_b}, {"bench", bench}, {"error", bench_problems}});
      continue;
    }
    for (auto& [dtype, cell] : cells) {
      cmp::Runs pooled[2];
      for (int s = 0; s < 2; ++s)
        for (int ord = 0; ord < 2; ++ord) pooled[s].insert(pooled[s].end(), cell.runs[s][ord].begin(), cell.runs[s][ord].end());
      size_t expected = size_t(o.runs);
      bool complete = true;
      for (int s = 0; s < 2; ++s)
        for (int ord = 0; ord < 2; ++ord) complete = complete && cell.runs[s][ord].size() == expected;
      // The same failure from every process is one problem, with its count.
      std::vector<std::string> problems;
      {
        std::vector<std::string> all = cell.problems;
        all.insert(all.end(), bench_problems.begin(), bench_problems.end());
        std::map<std::string, int> count;
        for (const std::string& p : all)
          if (count[p]++ == 0) problems.push_back(p);
        for (std::string& p : problems)
          if (count[p] > 1) p += " (x" + std::to_string(count[p]) + ")";
      }
      if (!complete && problems.empty())
        problems.push_back("missing results: every side and order needs " + std::to_string(expected) + " processes");

      cmp::BootstrapOptions bo;
      bo.resamples = o.resamples;
      cmp::BootstrapResult ci = cmp::bootstrap_median_ratio(pooled[0], pooled[1], bo);
      double order_ratio[2];
      for (int ord = 0; ord < 2; ++ord) {
        std::vector<double> a, b;
        for (const auto& r : cell.runs[0][ord]) a.insert(a.end(), r.begin(), r.end());
        for (const auto& r : cell.runs[1][ord]) b.insert(b.end(), r.begin(), r.end());
        order_ratio[ord] = a.empty() || b.empty() ? std::nan("") : cmp::median(b) / cmp::median(a);
      }
      bool both_orders = std::isfinite(order_ratio[0]) && std::isfinite(order_ratio[1]);
      bool agree = !both_orders || (order_ratio[0] < 1) == (order_ratio[1] < 1) || order_ratio[0] == 1 || order_ratio[1] == 1;
      cmp::Verdict v = complete ? cmp::keep_bar_verdict(ci) : cmp::Verdict::NoData;
      std::string verdict = cmp::verdict_text(v);
      // A win that flips sign under reordering is a harness effect (§6.3), not a result to keep.
      if (!agree && (v == cmp::Verdict::Faster || v == cmp::Verdict::Slower)) verdict = "inconclusive (orders disagree)";
      if (!problems.empty()) any_problem = true;

      json j{{"kernel_a", o.kernel_a}, {"kernel_b", o.kernel_b}, {"bench", bench}, {"dtype", dtype}, {"runs", o.runs}};
      const char* order_names[2] = {"ab", "ba"};
      for (int ord = 0; ord < 2; ++ord) {
        j["order_" + std::string(order_names[ord])] = {{"a", ab_side_json(cell.runs[0][ord])},
                                                        {"b", ab_side_json(cell.runs[1][ord])},
                                                        {"ratio", cmp::nullable(order_ratio[ord])}};
      }
      j["pooled"] = {{"a", ab_side_json(pooled[0])}, {"b", ab_side_json(pooled[1])}};
      j["orders_agree"] = both_orders ? json(agree) : json(nullptr);
      j["ci95_ratio"] = ci.ok ? json{{"lo", ci.lo}, {"hi", ci.hi}, {"point", ci.ratio}, {"resamples", ci.resamples}} : json(nullptr);
      j["delta_pct"] = ci.ok ? json((ci.ratio - 1) * 100) : json(nullptr);
      j["verdict"] = verdict;
      j["problems"] = problems;
      out_json.push_back(j);
      if (o.as_json) continue;

      std::cout << "\n" << o.kernel_a << "/" << bench << " [" << dtype << "]: A = " << o.kernel_a << ", B = " << o.kernel_b
                << " (with " << o.kernel_a << "'s setup); " << o.runs << " fresh processes per side and order\n";
      const size_t w = std::max<size_t>(12, 3 + std::max(o.kernel_a.size(), o.kernel_b.size()));
      std::cout << "  " << pad("", w) << pad("order AB (A first)", 28) << pad("order BA (B first)", 28) << "pooled\n";
      std::cout << "  " << pad("", w);
      for (int c = 0; c < 3; ++c) std::cout << pad(lpad("min", 12) + lpad("median", 13), 28);
      std::cout << "\n";
      for (int s = 0; s < 2; ++s) {
        std::cout << "  " << pad(s ? "B " + o.kernel_b : "A " + o.kernel_a, w);
        for (int c = 0; c < 3; ++c) {
          const json& side = c < 2 ? j[c == 0 ? "order_ab" : "order_ba"][s ? "b" : "a"] : j["pooled"][s ? "b" : "a"];
          double mn = side["min_us"].is_number() ? side["min_us"].get<double>() : std::nan("");
          double md = side["median_us"].is_number() ? side["median_us"].get<double>() : std::nan("");
          std::cout << pad(lpad(fmt_us(mn), 12) + lpad(fmt_us(md), 13), 28);
        }
        std::cout << "\n";
      }
      std::cout << "  " << pad("B/A median", w) << pad(lpad(fmt_pct((order_ratio[0] - 1) * 100), 25), 28)
                << pad(lpad(fmt_pct((order_ratio[1] - 1) * 100), 25), 28) << lpad(fmt_pct(ci.ok ? (ci.ratio - 1) * 100 : NAN), 25)
                << "\n";
      std::cout << "  orders " << (!both_orders ? "not comparable" : agree ? "agree in direction" : st.yellow("disagree in direction"));
      if (ci.ok) std::cout << "; 95% CI of B/A " << fmt_ci(ci) << " (" << ci.resamples << " resamples of processes and samples)";
      std::cout << "; verdict: " << coloured_verdict(st, verdict) << " (3% keep bar)\n";
      if (!agree)
        std::cout << "  " << st.yellow("harness warning:") << " order AB says " << fmt_pct((order_ratio[0] - 1) * 100)
                  << ", order BA says " << fmt_pct((order_ratio[1] - 1) * 100)
                  << ": a result that changes under reordering points at the harness (thermal drift, cache or clock "
                     "warm-up), not the kernel\n";
      for (const std::string& p : problems) std::cout << "  " << st.red("problem: ") << p << "\n";
    }
  }
  if (o.as_json) std::cout << out_json.dump(1) << "\n";
  return any_problem ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// iron report

struct ReportOptions {
  std::vector<std::string> snaps;
  std::string out = "report.html", chart_js, title = "Iron benchmark report";
};

// --chartjs, then $IRON_CHARTJS, then a copy next to the iron binary (the GPU bundle,
// scripts/gpu-bundle.sh), then Debian's libjs-chart.js (3.x installs chart.min.js; 4.x names
// its UMD build chart.umd.js).
std::string find_chart_js(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("IRON_CHARTJS"); env && *env) return env;
  for (const char* name : {"chart.umd.min.js", "chart.umd.js", "chart.min.js", "chart.js"}) {
    std::error_code ec;
    fs::path p = self_dir() / name;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  for (const char* p : {"/usr/share/javascript/chart.js/chart.umd.min.js", "/usr/share/javascript/chart.js/chart.umd.js",
                        "/usr/share/javascript/chart.js/chart.min.js", "/usr/share/javascript/chart.js/chart.js"}) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return "";
}

int cmd_report(const ReportOptions& o) {
  std::vector<std::string> args = o.snaps;
  if (args.empty()) {
    std::error_code ec;
    fs::path dir = cmp::snap_dir();
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".json") args.push_back(e.path().string());
    std::sort(args.begin(), args.end());
    if (args.empty()) {
      std::cerr << "iron: no snapshots in " << dir.string() << " (name some, or run `iron snap NAME`)\n";
      return 2;
    }
  }
  std::vector<cmp::Snapshot> snaps;
  try {
    for (const std::string& a : args) snaps.push_back(cmp::read_snapshot(cmp::resolve_snapshot(a)));
  } catch (const std::exception& e) {
    std::cerr << "iron: " << e.what() << "\n";
    return 2;
  }
  std::string js_path = find_chart_js(o.chart_js);
  std::ifstream js_in(js_path);
  if (js_path.empty() || !js_in) {
    std::cerr << "iron: Chart.js not found" << (js_path.empty() ? "" : " at " + js_path)
              << ": install Debian's libjs-chart.js (scripts/install-deps.sh does), put chart.umd.min.js next to the "
                 "iron binary (make gpu-bundle does), set IRON_CHARTJS, or pass --chartjs FILE\n";
    return 2;
  }
  std::stringstream js;
  js << js_in.rdbuf();
  std::string html = render_report(snaps, js.str(), o.title);
  std::ofstream out(o.out);
  if (!(out << html)) {
    std::cerr << "iron: cannot write " << o.out << "\n";
    return 2;
  }
  size_t n = 0;
  for (const auto& s : snaps) n += s.results.size();
  std::cout << "wrote " << o.out << " (" << n << " results from " << snaps.size() << " snapshot"
            << (snaps.size() == 1 ? "" : "s") << ", " << html.size() / 1024 << " KiB, Chart.js inlined from " << js_path << ")\n";
  return 0;
}

}  // namespace

int run_ab(const AbRequest& r) {
  AbOptions o;
  o.kernel_a = r.kernel_a;
  o.kernel_b = r.kernel_b;
  o.bench.filter = r.filter;
  o.bench.backend = r.backend;
  o.bench.dtype = r.dtype;
  o.bench.samples = r.samples;
  o.bench.flush_l2 = r.flush_l2;
  o.as_json = r.as_json;
  return cmd_ab(o);
}

void add_compare_commands(CLI::App& app, Commands& out) {
  // Options live as long as the App: main() parses, then calls the selected run function.
  static SnapOptions snap_o;
  static DiffOptions diff_o;
  static AbOptions ab_o;
  static ReportOptions report_o;

  auto* snap = app.add_subcommand("snap", "Run the benchmarks and save the results as a named snapshot");
  snap->add_option("name", snap_o.name, "Snapshot name: saved as NAME.json in $IRON_SNAP_DIR (default .iron/snaps)");
  snap->add_option("-f,--filter", snap_o.bench.filter, "Only kernels or kernel/bench names containing this text");
  add_bench_options(snap, snap_o.bench);
  snap->add_option("--processes", snap_o.processes,
                   "Fresh runner processes, one after another (default 3); iron diff needs >= 2 per side to measure "
                   "between-process noise")
      ->check(CLI::Range(1, 100));
  snap->add_flag("--force", snap_o.force, "Replace an existing snapshot of that name");
  snap->add_flag("--list", snap_o.list, "List the saved snapshots");
  out.emplace_back(snap, [snap] {
    if (!snap_o.list && snap_o.name.empty()) {
      std::cerr << "iron: snap needs a NAME (or --list)\n" << snap->help();
      return 2;
    }
    return cmd_snap(snap_o);
  });

  auto* diff = app.add_subcommand("diff", "Compare two snapshots or peer files: medians, bootstrap CI, 3% keep bar");
  diff->add_option("a", diff_o.a, "Baseline: a snapshot name or a JSON file")->required();
  diff->add_option("b", diff_o.b, "Candidate: a snapshot name or a JSON file (e.g. a torch_peers.py result)")->required();
  diff->add_flag("--json", diff_o.as_json, "Print the rows as JSON");
  diff->add_option("--resamples", diff_o.resamples, "Bootstrap resamples (at least 2000)")->check(CLI::Range(2000, 1000000));
  out.emplace_back(diff, [] { return cmd_diff(diff_o); });

  auto* ab = app.add_subcommand("ab", "A/B two kernels on KERNEL_A's benches: both orders, fresh processes, 3% keep bar");
  ab->add_option("kernel_a", ab_o.kernel_a, "Baseline kernel (its benches define the setups)")->required();
  ab->add_option("kernel_b", ab_o.kernel_b, "Candidate kernel, run with KERNEL_A's setup (--kernel-override)")->required();
  ab->add_option("-f,--filter", ab_o.bench.filter, "Only KERNEL_A's benches whose names start with this text");
  add_bench_options(ab, ab_o.bench);
  ab->add_option("--runs", ab_o.runs, "Fresh processes per side and order (4 x runs processes per bench)")
      ->check(CLI::Range(3, 1000));
  ab->add_option("--resamples", ab_o.resamples, "Bootstrap resamples (at least 2000)")->check(CLI::Range(2000, 1000000));
  ab->add_flag("--json", ab_o.as_json, "Print the results as JSON");
  out.emplace_back(ab, [] { return cmd_ab(ab_o); });

  auto* report = app.add_subcommand("report", "Write one self-contained HTML report: rooflines, latency sweeps, table");
  report->add_option("snaps", report_o.snaps, "Snapshot names or JSON files (default: every saved snapshot)");
  report->add_option("-o,--out", report_o.out, "Output HTML file (default report.html)");
  report->add_option("--chartjs", report_o.chart_js, "Chart.js UMD file to inline (default: Debian's libjs-chart.js)");
  report->add_option("--title", report_o.title, "Page title");
  out.emplace_back(report, [] { return cmd_report(report_o); });
}

}  // namespace iron::cli
