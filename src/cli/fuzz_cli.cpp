// `iron fuzz`: cross-backend differential fuzzing, run by the runner's fuzz engine
// (src/fuzz/fuzz_runner.cpp). The CLI passes the options through (the runner validates them)
// and renders each mismatch and the closing `fuzz: N programs, M mismatches` line.
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace iron::cli {

namespace {

using nlohmann::json;

struct FuzzOpts {
  std::string backends, programs, seed, lane_width, exclude, batch, reports, relax;
  bool as_json = false, no_reduce = false;
  bool guard_subnormals = false;
};

std::string indent(const std::string& text, const std::string& by) {
  std::string out = by;
  for (char c : text) {
    out += c;
    if (c == '\n') out += by;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

std::string str(const json& m, const char* key) {
  if (!m.contains(key)) return "?";
  const json& v = m[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// `fuzz: N programs, M mismatches`, plus how subnormals were handled where programs guarded
// them (a device that flushes f32 subnormals, docs/semantics.md#vulkan-drivers).
std::string summary_line(const json& m) {
  std::string line = "fuzz: " + str(m, "programs") + " programs, " + str(m, "mismatches") + " mismatches";
  if (m.contains("subnormals") && m["subnormals"].is_string() && !m["subnormals"].get<std::string>().empty())
    line += " (" + m["subnormals"].get<std::string>() + ")";
  return line;
}

int run_fuzz(const FuzzOpts& o) {
  // Fuzzing compares bit for bit, and cooperative tiles are bit-exact with the interpreter only
  // down the software paths (CUDA's tensor-core paths and Vulkan's NV cooperative matrices round
  // differently, docs/semantics.md): the runner inherits IRON_CUDA_MMA=software and
  // IRON_VK_MMA=software unless the caller chose a strategy.
  setenv("IRON_CUDA_MMA", "software", 0);
  setenv("IRON_VK_MMA", "software", 0);
  std::vector<std::string> args = {"fuzz"};
  auto opt = [&](const char* flag, const std::string& v) {
    if (!v.empty()) {
      args.push_back(flag);
      args.push_back(v);
    }
  };
  opt("--backends", o.backends);
  opt("--programs", o.programs);
  opt("--seed", o.seed);
  opt("--lane-width", o.lane_width);
  opt("--exclude", o.exclude);
  opt("--batch", o.batch);
  opt("--reports", o.reports);
  opt("--relax", o.relax);
  if (o.no_reduce) args.push_back("--no-reduce");
  if (o.guard_subnormals) args.push_back("--guard-subnormals");
  Style st;
  bool summary = false, error = false;
  std::string last_line;
  RunResult r = run_runner(args, [&](const json& m) {
    std::string type = m.value("type", std::string());
    if (type == "hello") return;
    if (o.as_json) std::cout << m.dump() << "\n";
    if (type == "error") {
      error = true;
      report_error(m);
      return;
    }
    if (o.as_json) {
      if (type == "fuzz_summary") {
        summary = true;
        last_line = summary_line(m);
      }
      return;
    }
    if (type == "device") {
      std::cout << "device: " << str(m, "name") << " (" << str(m, "backend") << ", " << str(m, "driver")
                << ", lane width " << str(m, "lane_width") << ", f32 subnormals " << str(m, "f32_denormals") << ")\n";
    } else if (type == "fuzz_mismatch") {
      std::cout << st.red("MISMATCH") << " seed " << str(m, "seed") << " (" << str(m, "mode") << ", "
                << str(m, "launch") << "): " << str(m, "reference") << " vs " << str(m, "backend") << "\n"
                << indent(str(m, "difference"), "    ") << "\n"
                << "    reproduce: " << str(m, "reproduce") << "\n";
      if (m.contains("reduced") && m["reduced"].is_object()) {
        const json& red = m["reduced"];
        std::cout << "    reduced (" << str(red, "attempts") << " attempts): " << str(red, "difference") << "\n"
                  << "    ops: " << str(red, "ops") << "\n"
                  << "    reduced IR, optimized:\n" << indent(str(red, "optimized_ir"), "      ") << "\n"
                  << "    reduced " << str(m, "backend") << " source:\n" << indent(str(red, "source"), "      ") << "\n";
      }
      if (m.contains("ir")) std::cout << "    IR:\n" << indent(str(m, "ir"), "      ") << "\n";
      if (m.contains("source"))
        std::cout << "    " << str(m, "backend") << " source:\n" << indent(str(m, "source"), "      ") << "\n";
    } else if (type == "fuzz_summary") {
      summary = true;
      if (m.contains("pairs") && m["pairs"].is_array())
        for (const json& p : m["pairs"])
          std::cout << "  " << str(p, "reference") << " vs " << str(p, "backend") << ": " << str(p, "mismatches")
                    << " mismatching programs\n";
      if (m.contains("timing") && m["timing"].is_object()) {
        std::cout << "  time:";
        for (const auto& [k, v] : m["timing"].items()) {
          char b[64];
          std::snprintf(b, sizeof b, " %s %.0f ms", k.c_str(), v.is_number() ? v.get<double>() : 0.0);
          std::cout << b;
        }
        std::cout << "\n";
      }
      if (!str(m, "excluded").empty() && str(m, "excluded") != "?") {
        std::cout << "  op classes excluded: " << str(m, "excluded") << "\n";
        std::cout << "  seeds " << str(m, "first_seed") << ".." << str(m, "last_seed") << "; " << str(m, "skipped")
                  << " skipped because the pipeline brought an excluded op back\n";
      }
      if (m.value("relaxed", std::string()) == "signed-zero")
        std::cout << "  compared with -0 == +0 (--relax signed-zero); every other bit exact\n";
      last_line = summary_line(m);
    }
  });
  if (!last_line.empty()) (o.as_json ? std::cerr : std::cout) << last_line << "\n";
  if (r.crashed) {
    std::cerr << "iron: runner crashed with " << r.crash << "\n";
    return 1;
  }
  if (error) return 2;
  if (!summary) {
    std::cerr << "iron: the runner exited (code " << r.exit_code << ") without a fuzz summary\n";
    return r.exit_code == 0 ? 1 : r.exit_code;
  }
  return r.exit_code;
}

// `iron conformance`: every op at every dtype against its one definition (src/fuzz/conformance.hpp),
// on one backend. One line per failing case (every case with --verbose), then the summary.
struct ConformanceOpts {
  std::string backend, filter, out;
  bool as_json = false, verbose = false;
};

int run_conformance(const ConformanceOpts& o) {
  std::vector<std::string> args = {"conformance"};
  if (!o.backend.empty()) args.insert(args.end(), {"--backend", o.backend});
  if (!o.filter.empty()) args.insert(args.end(), {"-f", o.filter});
  if (!o.out.empty()) args.insert(args.end(), {"-o", o.out});
  Style st;
  bool summary = false, error = false;
  std::string last_line;
  RunResult r = run_runner(args, [&](const json& m) {
    const std::string type = m.value("type", std::string());
    if (type == "hello") return;
    if (o.as_json) std::cout << m.dump() << "\n";
    if (type == "error") {
      error = true;
      report_error(m);
      return;
    }
    if (type == "conformance_summary") {
      summary = true;
      if (m.contains("unavailable")) std::cerr << "iron: " << str(m, "unavailable") << "\n";
      last_line = "conformance: " + str(m, "cases") + " cases on " + str(m, "backend") + ", " + str(m, "passed") +
                  " passed, " + str(m, "failed") + " failed";
      // Cases the target's dialect cannot spell: a documented limit, named one by one above.
      if (m.value("unexpressible", 0) > 0) last_line += ", " + str(m, "unexpressible") + " not expressible";
    }
    if (o.as_json) return;
    if (type == "device") {
      std::cout << "device: " << str(m, "name") << " (" << str(m, "backend") << ", " << str(m, "driver")
                << ", lane width " << str(m, "lane_width") << ", f32 subnormals " << str(m, "f32_denormals") << ")\n";
    } else if (type == "conformance_case") {
      const bool ok = m.value("ok", false);
      if (!m.value("expressible", true))
        std::cout << "CANNOT " << str(m, "name") << " [" << str(m, "backend") << "] kernel " << str(m, "kernel") << ": "
                  << str(m, "message") << "\n";
      else if (!ok)
        std::cout << st.red("FAIL") << " " << str(m, "name") << " [" << str(m, "backend") << "] kernel " << str(m, "kernel")
                  << ": " << str(m, "message") << "\n";
      else if (o.verbose)
        std::cout << "ok   " << str(m, "name") << " [" << str(m, "backend") << "] " << str(m, "values") << " values\n";
    }
  });
  if (!last_line.empty()) (o.as_json ? std::cerr : std::cout) << last_line << "\n";
  if (r.crashed) {
    std::cerr << "iron: runner crashed with " << r.crash << "\n";
    return 1;
  }
  if (error) return 2;
  if (!summary) {
    std::cerr << "iron: the runner exited (code " << r.exit_code << ") without a conformance summary\n";
    return r.exit_code == 0 ? 1 : r.exit_code;
  }
  return r.exit_code;
}

}  // namespace

void add_fuzz_commands(CLI::App& app, Commands& out) {
  static FuzzOpts o;  // CLI11 binds to it: it must outlive parsing
  auto* fuzz = app.add_subcommand(
      "fuzz", "Run seeded random programs on several backends and compare their outputs bit for bit");
  fuzz->add_option("--backends", o.backends, "Comma-separated: interp, vulkan, cuda (default interp,vulkan)");
  fuzz->add_option("--programs", o.programs, "How many programs (default 1000)");
  fuzz->add_option("--seed", o.seed, "First seed (default 1); program i uses seed + i");
  fuzz->add_option("--lane-width", o.lane_width, "Interpreter lane width; must equal every device's (default: theirs)");
  fuzz->add_option("--exclude", o.exclude, "Op classes to leave out, comma-separated: rem, fcast, fminmax, flane, fma, fzero, fdiv, f16, zcast, nzero");
  fuzz->add_option("--batch", o.batch, "Programs generated and compiled together (default 128; CUDA splits them into one NVRTC module per CPU thread)");
  fuzz->add_option("--reports", o.reports, "Mismatches reported with IR and source (default 20; the rest in one line)");
  fuzz->add_option("--relax", o.relax, "signed-zero: count -0 and +0 as equal (a driver that does not keep the sign)");
  fuzz->add_flag("--no-reduce", o.no_reduce, "Report mismatches as generated, without cutting them down");
  fuzz->add_flag("--guard-subnormals", o.guard_subnormals,
                 "Guard f32 subnormals in every program even when no device flushes them (automatic when one does)");
  fuzz->add_flag("--json", o.as_json, "Print protocol messages as JSON lines");
  out.emplace_back(fuzz, [] { return run_fuzz(o); });

  static ConformanceOpts c;
  auto* conf = app.add_subcommand(
      "conformance", "Run every op at every dtype it takes on edge values, against the op's one definition");
  conf->add_option("--backend", c.backend,
                   "interp (default), vulkan, cuda; msl (emitted only: no Metal device here) or nvrtc (CUDA compiled "
                   "for sm_90a, no GPU needed)")
      ->check(CLI::IsMember({"interp", "vulkan", "cuda", "msl", "nvrtc"}));
  conf->add_option("-f,--filter", c.filter, "Only cases whose name contains this text (conformance.<op>.<dtype>[.<to>])");
  conf->add_option("-o,--out", c.out, "With --backend msl: write each case's MSL to DIR/msl");
  conf->add_flag("--verbose", c.verbose, "Print every case, not only the failing ones");
  conf->add_flag("--json", c.as_json, "Print protocol messages as JSON lines");
  out.emplace_back(conf, [] { return run_conformance(c); });
}

}  // namespace iron::cli
