// Internal header of the `iron` CLI: the runner client and the hooks through which each command
// file adds its subcommands. The CLI does no GPU work: every command talks to iron-runner.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/protocol.hpp"

namespace iron::cli {

// The backends a command that runs kernels accepts (one list, so `hip` is everywhere or nowhere);
// one that cannot start here says why ("backend unavailable: ...").
inline const std::vector<std::string> kRunBackends = {"vulkan", "cuda", "hip", "interp"};

// Colours only on a terminal.
struct Style {
  bool tty = isatty(STDOUT_FILENO) != 0;
  std::string green(const std::string& s) const { return tty ? "\033[32m" + s + "\033[0m" : s; }
  std::string red(const std::string& s) const { return tty ? "\033[31m" + s + "\033[0m" : s; }
  std::string yellow(const std::string& s) const { return tty ? "\033[33m" + s + "\033[0m" : s; }
  std::string dim(const std::string& s) const { return tty ? "\033[2m" + s + "\033[0m" : s; }
};

struct RunResult {
  int exit_code = 0;
  bool crashed = false;
  std::string crash;  // "signal 11 (Segmentation fault)"
  int bad_lines = 0;  // runner lines that failed protocol decoding (each reported on stderr)
};

std::filesystem::path self_dir();
std::filesystem::path runner_path();
// Spawns iron-runner with `args` and hands each decoded protocol message to `on_message`.
RunResult run_runner(const std::vector<std::string>& args, const std::function<void(const nlohmann::json&)>& on_message);
// Prints an `error` message to stderr; returns 2.
int report_error(const nlohmann::json& msg);

// A subcommand and the function that runs it when it was selected.
using Commands = std::vector<std::pair<CLI::App*, std::function<int()>>>;
void add_bench_commands(CLI::App& app, Commands& out);    // bench_cli.cpp: bench, calibrate
void add_compare_commands(CLI::App& app, Commands& out);  // compare_cli.cpp: snap, diff, ab, report
void add_fuzz_commands(CLI::App& app, Commands& out);     // fuzz_cli.cpp: fuzz, conformance

// Shared entry points, so `iron bench --ab A B` and `iron device --calibrate` reach the same code
// as `iron ab` and `iron calibrate`.
struct AbRequest {
  std::string kernel_a, kernel_b, filter, backend, dtype;
  int samples = 0;
  bool flush_l2 = false, as_json = false;
};
int run_ab(const AbRequest& r);                              // compare_cli.cpp
int run_calibrate(const std::string& backend, bool as_json);  // bench_cli.cpp

}  // namespace iron::cli
