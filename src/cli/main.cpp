// iron: the command-line front end. It does no GPU work itself: it spawns iron-runner (which
// links the kernel library), reads its JSON-lines protocol and renders the results. A runner
// that crashes fails the test it was running and the run reports it; the CLI never hangs on it.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "cli/cli.hpp"
#include "cli/witness.hpp"

namespace {

using nlohmann::json;
using iron::cli::report_error;
using iron::cli::run_runner;
using iron::cli::RunResult;
using iron::cli::Style;

// " -f X --dtype Y" from a runner argument list, for "nothing matched" messages.
std::string what_was_asked(const std::vector<std::string>& args) {
  std::string s;
  for (size_t i = 1; i + 1 < args.size(); ++i)
    if (args[i] == "-f" || args[i] == "--dtype" || args[i] == "--backend") s += " " + args[i] + " " + args[i + 1];
  return s.empty() ? std::string() : " (" + s.substr(1) + ")";
}

std::string fmt_sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

// Writes `j` to `path` through a temporary file and a rename; false (with a message) on failure.
bool write_json_file(const std::string& path, const json& j) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out || !(out << j.dump(1) << "\n") || !out.flush()) {
      std::cerr << "iron: cannot write " << tmp << "\n";
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::cerr << "iron: cannot write " << path << ": " << ec.message() << "\n";
    return false;
  }
  return true;
}

int cmd_test(const std::vector<std::string>& base_args, bool as_json, const std::string& witness_path) {
  Style st;
  json device_msg = json::object();
  std::vector<json> results;  // for --witness
  int passed = 0, failed = 0, skipped = 0;
  bool summary = false, error = false;
  // A test that crashes the runner fails alone: the CLI starts a fresh runner that resumes
  // after it, so one faulting kernel never hides the results of the others.
  std::string resume_after;
  for (int attempt = 0;; ++attempt) {
    std::vector<std::string> args = base_args;
    if (!resume_after.empty()) {
      args.push_back("--skip-through");
      args.push_back(resume_after);
    }
    std::string in_flight, in_flight_key;
    summary = false;
    RunResult r = run_runner(args, [&](const json& m) {
      std::string type = m["type"];
      if (as_json && type != "test_start") std::cout << m.dump() << "\n";
      if (type == "device") device_msg = m;
      if (type == "test") results.push_back(m);
      if (type == "device" && !as_json) {
        if (attempt == 0)
          std::cout << "device: " << m.value("name", std::string()) << " (" << m.value("backend", std::string())
                    << ", " << m.value("driver", std::string()) << ", lane width " << m.value("lane_width", 0) << ")\n";
      } else if (type == "test_start") {
        in_flight = m["kernel"].get<std::string>() + "/" + m["case"].get<std::string>() + " [" +
                    m["dtype"].get<std::string>() + "]";
        in_flight_key = m["kernel"].get<std::string>() + "/" + m["case"].get<std::string>() + "/" +
                        m["dtype"].get<std::string>();
      } else if (type == "test") {
        in_flight.clear();
        std::string status = m["status"];
        std::string name = m["kernel"].get<std::string>() + "/" + m["case"].get<std::string>();
        if (!as_json) {
          std::string tag = status == "pass" ? st.green("PASS") : status == "skip" ? st.yellow("SKIP") : st.red("FAIL");
          std::string err = m["max_error"].is_number() ? fmt_sci(m["max_error"].get<double>()) : "inf";
          char ms[32];
          std::snprintf(ms, sizeof ms, "%.1f ms", m.value("ms", 0.0));
          // A case that failed before its outputs were compared has no error to show.
          bool none = status != "pass" && m.contains("compared") && m["compared"].is_number() && m["compared"] == 0;
          std::string unit = m.value("tolerance_unit", std::string()) == "ulp" ? " ulp" : "";
          std::string measured = none ? std::string("nothing compared")
                                      : "max error " + err + unit + " (tol " + fmt_sci(m.value("tolerance", 0.0)) + unit + ")";
          std::cout << tag << " " << name << " [" << m["dtype"].get<std::string>() << "] on "
                    << m["backend"].get<std::string>() << "  " << measured << "  " << st.dim(ms) << "\n";
          std::string msg = m.value("message", std::string());
          if (!msg.empty() && status != "pass") {
            std::string indented = "    " + msg;
            for (size_t p = indented.find('\n'); p != std::string::npos; p = indented.find('\n', p + 1))
              indented.insert(p + 1, "    ");
            std::cout << indented << "\n";
          }
        }
        (status == "pass" ? passed : status == "skip" ? skipped : failed)++;
      } else if (type == "summary") {
        summary = true;
      } else if (type == "warning" && !as_json) {
        std::cout << m["message"].get<std::string>() << "\n";
      } else if (type == "error") {
        error = true;
        report_error(m);
      }
    });
    failed += r.bad_lines;  // a result the CLI could not read is not a pass
    if (r.crashed && !in_flight.empty() && attempt < 1000) {
      ++failed;
      std::cerr << "iron: " << st.red("runner crashed") << " with " << r.crash << " while running " << in_flight
                << "; that test fails, the run goes on\n";
      if (as_json)
        std::cout << json{{"v", iron::protocol::kVersion}, {"type", "test"}, {"status", "fail"},
                          {"message", "runner crashed with " + r.crash}, {"case_key", in_flight_key}}
                         .dump()
                  << "\n";
      results.push_back({{"kernel", in_flight_key.substr(0, in_flight_key.find('/'))},
                         {"case", in_flight_key.substr(in_flight_key.find('/') + 1,
                                                       in_flight_key.rfind('/') - in_flight_key.find('/') - 1)},
                         {"dtype", in_flight_key.substr(in_flight_key.rfind('/') + 1)},
                         {"status", "fail"},
                         {"max_error", "inf"}});
      resume_after = in_flight_key;
      continue;
    }
    if (r.crashed) {
      ++failed;
      std::cerr << "iron: " << st.red("runner crashed") << " with " << r.crash << "\n";
    } else if (!summary && !error) {
      ++failed;
      std::cerr << "iron: the runner exited (code " << r.exit_code << ") without a summary\n";
    }
    break;
  }
  if (error && passed + failed + skipped == 0) return 2;
  if (passed + failed + skipped == 0) {
    std::cerr << "iron: no test case matched" << what_was_asked(base_args) << ": nothing was run\n";
    return 2;
  }
  std::string line = std::to_string(passed) + " passed, " + std::to_string(failed) + " failed";
  if (skipped) line += ", " + std::to_string(skipped) + " skipped";
  if (as_json) std::cerr << line << "\n";
  else std::cout << line << "\n";
  bool nothing_ran = passed + failed == 0;  // every matched case was skipped
  if (nothing_ran)
    std::cerr << "iron: all " << skipped << " matched test cases were skipped on this device: nothing was run\n";
  if (!witness_path.empty()) {
    json w = iron::cli::witness::make_witness(device_msg, results, base_args);
    if (!write_json_file(witness_path, w)) return 2;
    (as_json ? std::cerr : std::cout) << "witness: " << w["digest"].get<std::string>() << " (" << results.size()
                                      << " results, case set " << w["case_set"]["count"] << " cases " << w["case_set"]["digest"].get<std::string>()
                                      << ") written to " << witness_path << "\n";
  }
  if (nothing_ran && !error) return 2;
  return failed == 0 && !error ? 0 : 1;
}

// `iron list --case-set`: the count and digest of the registered case set (kernel/case/dtype
// and tolerance bits), pinned in docs/test-inventory.md.
int cmd_case_set() {
  std::vector<iron::cli::witness::Case> cases;
  bool error = false;
  RunResult r = run_runner({"list"}, [&](const json& m) {
    std::string type = m["type"];
    if (type == "error") {
      error = true;
      report_error(m);
    }
    if (type != "test_case" || !m.contains("dtypes")) return;
    for (const json& d : m["dtypes"]) {
      if (!d.is_object() || !d.contains("dtype") || !d["dtype"].is_string() || !d.contains("tolerance") ||
          !d["tolerance"].is_number())
        throw std::runtime_error("a test_case dtype entry without a string dtype and a numeric tolerance");
      cases.push_back({m["kernel"].get<std::string>() + "/" + m["case"].get<std::string>() + "/" +
                           d["dtype"].get<std::string>(),
                       d["tolerance"].get<double>()});
    }
  });
  if (error) return 2;
  if (r.crashed || r.bad_lines || r.exit_code != 0) {
    std::cerr << "iron: iron-runner list failed\n";
    return 1;
  }
  if (cases.empty()) {
    std::cerr << "iron: the runner lists no test case with dtypes: nothing to digest\n";
    return 2;
  }
  std::cout << cases.size() << " cases, digest " << iron::cli::witness::case_set_digest(cases) << "\n";
  return 0;
}

int cmd_passthrough(const std::vector<std::string>& args, bool as_json) {
  int failures = 0, written = 0, summary_total = -1;
  bool error = false;
  Style st;
  RunResult r = run_runner(args, [&](const json& m) {
    std::string type = m["type"];
    if (type == "hello") return;
    if (as_json) {
      std::cout << m.dump() << "\n";
      if (type == "error") error = true;
      return;
    }
    if (type == "text") {
      std::cout << m["text"].get<std::string>();
    } else if (type == "device") {
      if (m.value("available", false)) {
        double gib = m.value("memory_bytes", 0.0) / (1024.0 * 1024 * 1024);
        char mem[32];
        std::snprintf(mem, sizeof mem, "%.1f GiB", gib);
        std::cout << m["backend"].get<std::string>() << ": " << m["name"].get<std::string>() << "\n"
                  << "  driver " << m["driver"].get<std::string>() << ", arch " << m["arch"].get<std::string>()
                  << ", lane width " << m["lane_width"] << ", max threadgroup " << m.value("max_threads_per_group", 0)
                  << ", threadgroup memory " << m.value("shared_memory_bytes", 0) << " B"
                  << (m.value("shared_memory_optin_bytes", uint64_t(0)) > m.value("shared_memory_bytes", uint64_t(0))
                          ? " (opt-in " + std::to_string(m.value("shared_memory_optin_bytes", uint64_t(0))) + " B)"
                          : std::string())
                  << ", memory " << mem
                  << ", f16 " << (m.value("f16", false) ? "yes" : "no") << ", bf16 " << (m.value("bf16", false) ? "yes" : "no")
                  << "\n";
        if (m.contains("int8")) {
          auto yn = [&](const char* key) { return m.value(key, false) ? "yes" : "no"; };
          std::cout << "  int8 " << yn("int8") << ", int16 " << yn("int16") << ", int64 " << yn("int64")
                    << ", u64 atomics on buffers " << yn("int64_atomics_buffer") << ", on threadgroup memory "
                    << yn("int64_atomics_shared") << "\n";
        }
        if (m.contains("f32_denormals") && m["f32_denormals"].is_string()) {
          bool has_fc = m.contains("float_controls") && m["float_controls"].is_string();
          std::string fc = has_fc ? m["float_controls"].get<std::string>() : std::string();
          std::cout << "  f32 subnormals " << m["f32_denormals"].get<std::string>() << (fc.empty() ? "" : " (" + fc + ")")
                    << "\n";
        }
      } else {
        std::cout << m["backend"].get<std::string>() << ": unavailable (" << m.value("why", std::string()) << ")\n";
      }
    } else if (type == "artifact" && m.value("skipped", false)) {
      // Not expressible on the target (beyond its limits): named, neither written nor failed.
      std::cout << st.dim("skip") << " " << m["target"].get<std::string>() << " " << m["kernel"].get<std::string>()
                << " (" << m["dtype"].get<std::string>() << "): " << m.value("message", std::string()) << "\n";
    } else if (type == "artifact") {
      bool ok = m["ok"];
      (ok ? written : failures)++;
      std::cout << (ok ? st.green("ok  ") : st.red("FAIL")) << " " << m["target"].get<std::string>() << " "
                << m["path"].get<std::string>() << "\n";
      if (!ok) std::cout << "    " << m.value("message", std::string()) << "\n";
    } else if (type == "family") {
      // A variant family and its expansion: the axes, then one line per concrete kernel.
      std::string axes;
      for (const json& axis : m["axes"]) axes += (axes.empty() ? "" : " ") + axis["name"].get<std::string>() + "=" + axis["values"].dump();
      std::cout << "family " << m["name"].get<std::string>() << "_" << m["suffix"].get<std::string>() << "  " << axes
                << "  " << st.dim(m["file"].get<std::string>() + ":" + std::to_string(m["line"].get<int>())) << "\n";
      for (const json& k : m["kernels"])
        std::cout << "  variant " << k["name"].get<std::string>() << "  " << k["values"].get<std::string>() << "\n";
    } else if (type == "selector") {
      std::cout << "selector " << m["name"].get<std::string>() << "_for  "
                << st.dim(m["file"].get<std::string>() + ":" + std::to_string(m["line"].get<int>())) << "\n";
    } else if (type == "plan") {
      std::cout << "plan " << m["family"].get<std::string>() << " [" << m["dtype"].get<std::string>() << "]: "
                << m["reason"].get<std::string>() << "\n";
      for (const json& step : m["steps"]) {
        std::string sc;
        for (auto it = step["constexprs"].begin(); it != step["constexprs"].end(); ++it)
          sc += (sc.empty() ? "" : " ") + it.key() + "=" + it.value().get<std::string>();
        auto dim = [](const json& d) { return std::to_string(d[0].get<uint32_t>()) + "x" + std::to_string(d[1].get<uint32_t>()) + "x" + std::to_string(d[2].get<uint32_t>()); };
        std::cout << "  " << step["kernel"].get<std::string>() << "  grid " << dim(step["grid"]) << "  threadgroup "
                  << dim(step["threadgroup"]) << "  " << sc << "\n";
      }
    } else if (type == "run_output") {
      auto num = [](const json& v) { return v.is_null() ? std::string("-") : v.dump(); };
      std::cout << "output " << m["name"].get<std::string>() << " [" << m["dtype"].get<std::string>() << " x "
                << m["count"] << "]: sum " << num(m["sum"]) << ", min " << num(m["min"]) << ", max " << num(m["max"])
                << ", non-finite " << m["nonfinite"] << "\n";
    } else if (type == "run_timing") {
      char t[96];
      std::snprintf(t, sizeof t, "min %.2f us, median %.2f us", m["min_us"].get<double>(), m["median_us"].get<double>());
      std::cout << "timing over " << m["samples"] << " runs: " << t << "\n";
    } else if (type == "kernel") {
      std::cout << m["name"].get<std::string>() << "  " << m["mode"].get<std::string>() << "  " << m["dtypes"].dump();
      if (m.contains("family")) std::cout << "  (" << m["family"].get<std::string>() << ": " << m["variant"].get<std::string>() << ")";
      std::cout << "  " << st.dim(m["file"].get<std::string>() + ":" + std::to_string(m["line"].get<int>())) << "\n";
    } else if (type == "test_case") {
      std::cout << "  test " << m["kernel"].get<std::string>() << "/" << m["case"].get<std::string>() << "\n";
    } else if (type == "summary") {
      summary_total = m.value("passed", 0) + m.value("failed", 0);
      if (m.contains("pipeline_ms")) {
        char t[64];
        std::snprintf(t, sizeof t, "%.2f ms", m["pipeline_ms"].get<double>());
        std::cout << "pipeline: " << t << " over " << m.value("kernels", 0) << " kernels\n";
      }
      std::cout << m["passed"] << " written, " << m["failed"] << " failed";
      if (m.value("skipped", 0) > 0) std::cout << ", " << m["skipped"] << " not expressible on the target";
      std::cout << "\n";
    } else if (type == "error") {
      error = true;
      report_error(m);
    }
  });
  if (r.crashed) {
    std::cerr << "iron: runner crashed with " << r.crash << "\n";
    return 1;
  }
  if (error) return 2;
  if (r.bad_lines) return 1;
  if (args[0] == "build" && summary_total == 0 && r.exit_code == 0) {
    std::cerr << "iron: no kernel matched" << what_was_asked(args) << ": nothing was built\n";
    return 2;
  }
  // The runner's codes are the convention's (0, 1, 2); anything else is a failure.
  return r.exit_code == 0 || r.exit_code == 2 ? r.exit_code : 1;
}

}  // namespace

int run_main(int argc, char** argv) {
  CLI::App app{"iron: write GPU kernels once in C++, test them against CPU oracles on Vulkan and CUDA\n"
               "exit status: 0 success, 1 failures found, 2 bad usage or input (nothing matched, nothing run)"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("iron ") + IRON_VERSION + " (runner protocol " +
                                        std::to_string(iron::protocol::kVersion) + ")");
  bool as_json = false;
  std::string filter, backend, dtype, emit = "all", out, arch = "sm_90a", kernel;
  bool ir = false, locations = false, no_compile = false, resources = false;
  std::string pass, stop_after;
  std::vector<std::string> print_after;
  bool stats = false, verify_each = false, time_passes = false, no_opt = false;

  auto* test = app.add_subcommand("test", "Run the kernel corpus against CPU oracles");
  test->add_option("-f,--filter", filter, "Only kernels or kernel/case names containing this text");
  std::vector<std::string> exclude;
  test->add_option("--exclude", exclude,
                   "Leave out kernels or kernel/case names containing this text (repeatable; the run says how many)");
  test->add_option("--backend", backend, "vulkan, cuda, hip or interp (default: the best available GPU backend)")
      ->check(CLI::IsMember(iron::cli::kRunBackends));
  test->add_option("--dtype", dtype, "Only this dtype (f32, f16, bf16, ...)");
  test->add_flag("--json", as_json, "Print protocol messages as JSON lines");
  std::string witness_path;
  test->add_option("--witness", witness_path,
                   "Write a witness of the run (results, kernel IR hashes, device, digests) to FILE; compare two with "
                   "iron diff");
  bool mutate = false;
  std::string mutate_every;
  test->add_flag("--mutate", mutate, "Mutation testing: run every IR mutant of every kernel against its cases");
  test->add_option("--mutate-every", mutate_every, "With --mutate: run every n-th mutant only");
  std::string mutate_skip;
  test->add_option("--mutate-skip", mutate_skip,
                   "With --mutate: leave out kernels whose name contains this text (a family another run samples)");

  auto* inspect = app.add_subcommand("inspect", "Print a kernel's IR or emitted source");
  inspect->add_option("kernel", kernel, "Kernel name")->required();
  inspect->add_flag("--ir", ir, "Print the IR instead of source");
  inspect->add_flag("--locations", locations, "With --ir: show each op's DSL file:line");
  inspect->add_flag("--resources", resources,
                    "With --backend hip: compile and print VGPRs, SGPRs and LDS from the code object");
  inspect->add_option("--arch", arch, "The target's architecture (CUDA sm_90a, HIP gfx90a, gfx940, gfx1030)");
  inspect->add_option("--backend", backend, "cuda (CUDA C++), hip (HIP), vulkan (GLSL) or msl (Metal)")
      ->check(CLI::IsMember({"vulkan", "cuda", "hip", "msl"}));
  inspect->add_option("--dtype", dtype, "Substitute T with this dtype");
  inspect->add_option("--pass", pass, "Print the IR after this pass, or after each with 'all'");
  inspect->add_flag("--stats", stats, "Print each pass's op-count delta, time and statistics");
  inspect->add_flag("--verify-each", verify_each, "Run the verifier after every pass");
  inspect->add_flag("--time-passes", time_passes, "Print the time each pass took");
  inspect->add_option("--stop-after", stop_after, "Run the pipeline up to this pass");
  inspect->add_option("--print-after", print_after, "Print the IR after this pass (repeatable)");
  inspect->add_flag("--no-opt", no_opt, "Emit without running the pipeline");
  std::string threadgroup;
  inspect->add_option("--threadgroup", threadgroup,
                      "Build for this threadgroup shape (X, XxY or XxYxZ): group_size folds, CUDA gets "
                      "__launch_bounds__ (default: none, code for any shape)");
  std::vector<std::string> specialize;
  inspect->add_option("--specialize", specialize,
                      "Bake NAME=VALUE into the code, as a dispatch of the scalar declared specialize() does "
                      "(repeatable; default: code for any value)");
  inspect->add_flag("--json", as_json, "Print protocol messages as JSON lines");

  auto* device = app.add_subcommand("device", "Show the Vulkan, CUDA and interpreter devices");
  device->add_flag("--json", as_json, "Print protocol messages as JSON lines");
  bool calibrate = false;
  device->add_flag("--calibrate", calibrate, "Measure the device's copy bandwidth and FMA rate (cached for bench)");
  device->add_option("--backend", backend, "With --calibrate: vulkan, cuda, hip or interp")
      ->check(CLI::IsMember(iron::cli::kRunBackends));

  auto* build = app.add_subcommand("build", "Emit (and compile) every kernel");
  build->add_option("--emit", emit,
                    "What to write: cuda, hip, spirv, msl (where this build has the target), ir, manifest or all "
                    "(default), or a comma-separated list; "
                    "manifest.json is always written");
  build->add_option("-o,--out", out, "Output directory")->required();
  build->add_option("--arch", arch, "CUDA architecture for NVRTC (default sm_90a)");
  std::string hip_arch;
  build->add_option("--hip-arch", hip_arch,
                    "AMD GPU architectures of the HIP code objects, comma-separated, of one wavefront width "
                    "(default gfx90a,gfx940)");
  build->add_option("-f,--filter", filter, "Only kernels whose name contains this text");
  build->add_flag("--no-compile", no_compile, "Write sources only; skip NVRTC");
  build->add_option("--threadgroup", threadgroup,
                    "Build every kernel for this threadgroup shape (X, XxY or XxYxZ; default: none, code for any "
                    "shape)");
  build->add_option("--specialize", specialize,
                    "Bake NAME=VALUE into every kernel that declares NAME specialize() (repeatable)");
  build->add_flag("--json", as_json, "Print protocol messages as JSON lines");

  auto* clean = app.add_subcommand("clean", "Remove the compile cache's entries and the files iron build wrote in DIR");
  std::vector<std::string> clean_dirs;
  bool keep_cache = false;
  clean->add_option("dirs", clean_dirs, "Build directories (each must hold the manifest.json iron build wrote)");
  clean->add_flag("--keep-cache", keep_cache, "Leave the compile cache alone");
  clean->add_flag("--json", as_json, "Print protocol messages as JSON lines");

  std::string ir_file, only, mutation;
  auto* optc = app.add_subcommand("opt", "Run the pipeline (or one pass) on a text IR file and print the result");
  optc->add_option("file", ir_file, "Text IR (as printed by inspect --ir)")->required();
  optc->add_option("--only", only, "Run only this pass");
  optc->add_option("--stop-after", stop_after, "Run the pipeline up to this pass");
  optc->add_flag("--verify-each", verify_each, "Run the verifier after every pass");
  optc->add_flag("--stats", stats, "Print each pass's op counts and statistics");
  optc->add_flag("--locations", locations, "Print DSL locations");
  optc->add_option("--specialize", specialize,
                   "Bake NAME=VALUE in for a scalar the IR declares specialize (repeatable)");
  optc->add_option("--mutation", mutation, "Switch on a pass's known-bad behaviour (mutation testing)");

  auto* list = app.add_subcommand("list", "List registered kernels and test cases");
  list->add_flag("--json", as_json, "Print protocol messages as JSON lines");
  bool case_set = false;
  list->add_flag("--case-set", case_set, "Print the count and digest of the registered case set (kernel/case/dtype, tolerance)");

  auto* runc = app.add_subcommand(
      "run", "Run a kernel family (through its selector) or a kernel (--grid/--tg) on .npy inputs or a test pattern");
  std::string family, samples, grid, tg, run_out;
  std::vector<std::string> call_args, assignments, run_outs;
  runc->add_option("name", family, "Kernel family, or kernel with --grid and --tg (iron list shows them)")->required();
  runc->add_option("assignments", assignments,
                   "NAME=VALUE: a size or scalar; NAME=FILE.npy: an input buffer's data (converted to its dtype)");
  runc->add_option("--dtype", dtype, "The dtype (T, or T,W); needed unless the kernel is not generic");
  // One value per occurrence: a vector option would otherwise swallow the NAME=VALUE positionals after it.
  runc->add_option("--arg", call_args, "A logical size or scalar, NAME=VALUE (repeatable): --arg rows=7 --arg d=4096")
      ->allow_extra_args(false);
  runc->add_option("--backend", backend, "interp (default), vulkan, cuda or hip")->check(CLI::IsMember(iron::cli::kRunBackends));
  runc->add_option("--grid", grid, "Run the kernel with this grid of threadgroups (X, XxY or XxYxZ), with --tg");
  runc->add_option("--tg", tg, "The threadgroup shape (X, XxY or XxYxZ), with --grid");
  runc->add_option("-o,--out-dir", run_out, "Write every output buffer as DIR/NAME.npy");
  runc->add_option("--out", run_outs, "Write output NAME to FILE.npy: --out out=y.npy (repeatable)")->allow_extra_args(false);
  runc->add_option("--samples", samples, "Also time the plan this many times (after warm-up)");
  bool run_flush = false, run_flush_read = false;
  runc->add_flag("--flush-l2", run_flush, "With --samples: write a buffer larger than the L2 before every sample");
  runc->add_flag("--flush-l2-read", run_flush_read,
                 "With --samples: read a buffer 4x the L2 before every sample (leaves it clean; CUDA)");
  runc->add_flag("--json", as_json, "Print protocol messages as JSON lines");

  iron::cli::Commands extra;
  iron::cli::add_bench_commands(app, extra);
  iron::cli::add_compare_commands(app, extra);
  iron::cli::add_fuzz_commands(app, extra);

  // Exit codes: --help and --version 0; every usage error (unknown flag, bad value, missing
  // argument) 2, whatever CLI11's own code for it is.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  // Bare `iron`: the help, exit 0 (it is a request for help, like --help).
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return 0;
  }
  for (auto& [sub, run] : extra)
    if (*sub) return run();

  std::vector<std::string> args;
  auto opt = [&](const char* flag, const std::string& v) {
    if (!v.empty()) {
      args.push_back(flag);
      args.push_back(v);
    }
  };
  if (*test) {
    args = {"test"};
    opt("-f", filter);
    for (const std::string& x : exclude) opt("--exclude", x);
    opt("--backend", backend);
    opt("--dtype", dtype);
    if (mutate) {
      args.push_back("--mutate");
      opt("--mutate-every", mutate_every);
      opt("--mutate-skip", mutate_skip);
      return cmd_passthrough(args, as_json);
    }
    return cmd_test(args, as_json, witness_path);
  }
  if (*inspect) {
    args = {"inspect", kernel};
    opt("--backend", backend);
    if (resources) args.push_back("--resources");
    if (arch != "sm_90a") opt("--arch", arch);
    opt("--dtype", dtype);
    if (ir) args.push_back("--ir");
    if (locations) args.push_back("--locations");
    opt("--pass", pass);
    opt("--stop-after", stop_after);
    for (const std::string& p : print_after) opt("--print-after", p);
    if (stats) args.push_back("--stats");
    if (verify_each) args.push_back("--verify-each");
    if (time_passes) args.push_back("--time-passes");
    if (no_opt) args.push_back("--no-opt");
    opt("--threadgroup", threadgroup);
    for (const std::string& s : specialize) opt("--specialize", s);
  } else if (*device) {
    if (calibrate) return iron::cli::run_calibrate(backend, as_json);
    args = {"device"};
  } else if (*build) {
    args = {"build"};
    opt("--emit", emit);
    opt("-o", out);
    opt("--arch", arch);
    opt("--hip-arch", hip_arch);
    opt("-f", filter);
    if (no_compile) args.push_back("--no-compile");
    opt("--threadgroup", threadgroup);
    for (const std::string& s : specialize) opt("--specialize", s);
  } else if (*clean) {
    args = {"clean"};
    args.insert(args.end(), clean_dirs.begin(), clean_dirs.end());
    if (keep_cache) args.push_back("--keep-cache");
  } else if (*optc) {
    if (!mutation.empty()) {
      // The pass mutations are a closed list: an unknown name would otherwise run the
      // unmutated pipeline and look like a surviving mutant.
      static const char* const known[] = {
#define IRON_PASS_MUTATION(name) name,
#include "passes/mutations.def"
#undef IRON_PASS_MUTATION
      };
      bool found = false;
      std::string list;
      for (const char* m : known) {
        found = found || mutation == m;
        list += std::string("\n  ") + m;
      }
      if (!found) {
        std::fprintf(stderr, "iron: unknown mutation '%s'; the known mutations are:%s\n", mutation.c_str(), list.c_str());
        return 2;
      }
    }
    args = {"opt", ir_file};
    opt("--only", only);
    for (const std::string& s : specialize) opt("--specialize", s);
    opt("--stop-after", stop_after);
    opt("--mutation", mutation);
    if (verify_each) args.push_back("--verify-each");
    if (stats) args.push_back("--stats");
    if (locations) args.push_back("--locations");
  } else if (*list) {
    if (case_set) return cmd_case_set();
    args = {"list"};
  } else if (*runc) {
    args = {"run", family};
    args.insert(args.end(), assignments.begin(), assignments.end());
    opt("--dtype", dtype);
    opt("--backend", backend);
    opt("--samples", samples);
    if (run_flush) args.push_back("--flush-l2");
    if (run_flush_read) args.push_back("--flush-l2-read");
    opt("--grid", grid);
    opt("--tg", tg);
    opt("-o", run_out);
    for (const std::string& a : call_args) opt("--arg", a);
    for (const std::string& o : run_outs) opt("--out-file", o);
  }
  return cmd_passthrough(args, as_json);
}

// Nothing escapes as an abort: an exception no command handled (a file with unexpected content,
// a filesystem error) is reported as an error of the input, exit 2.
int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "iron: error: " << e.what() << "\n";
    return 2;
  }
}
