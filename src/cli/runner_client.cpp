// The CLI's runner client: finds iron-runner, rebuilds it when stale, spawns it and decodes its
// protocol stream. Shared by every command file of the CLI.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/cli.hpp"

extern char** environ;

namespace iron::cli {

namespace fs = std::filesystem;

fs::path self_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : p.parent_path();
}

fs::path runner_path() {
  if (const char* env = std::getenv("IRON_RUNNER")) return env;
  return self_dir() / "iron-runner";
}

namespace {
// The build tree this CLI rebuilds the runner in: $IRON_BUILD_DIR, else the one it was built in.
std::string build_dir() {
  if (const char* env = std::getenv("IRON_BUILD_DIR"); env && *env) return env;
#ifdef IRON_BUILD_DIR
  return IRON_BUILD_DIR;
#else
  return "";
#endif
}

// The runner executes all codegen: a stale one would run old code (seeds §8). When this CLI
// lives in its own build tree, rebuild the runner target first; ninja makes a no-op cheap. A
// failed rebuild ends the command: the compiler's output goes to stderr and iron exits with 2,
// never running the binary that is still there. Done once per CLI process.
void rebuild_runner_if_in_build_tree() {
  static bool done = false;
  if (done || std::getenv("IRON_NO_REBUILD")) return;
  done = true;
  std::string dir = build_dir();
  if (dir.empty()) return;
  fs::path build(dir);
  std::error_code ec;
  if (!fs::exists(build / "build.ninja", ec) || !fs::equivalent(self_dir(), build / "bin", ec)) return;
  std::string cmd = "cmake --build '" + build.string() + "' --target iron-runner 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string output;
  int status = -1;
  if (p) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    status = pclose(p);
  }
  if (status == 0) return;
  std::cout << std::flush;
  std::cerr << output;
  if (!output.empty() && output.back() != '\n') std::cerr << "\n";
  std::cerr << "iron: error: rebuilding iron-runner in " << build.string()
            << " failed (output above); not running the stale binary. Fix the build, or set IRON_NO_REBUILD=1 to run "
               "the existing runner on purpose\n";
  std::exit(2);
}
}  // namespace

RunResult run_runner(const std::vector<std::string>& args, const std::function<void(const nlohmann::json&)>& on_message) {
  rebuild_runner_if_in_build_tree();
  fs::path runner = runner_path();
  RunResult result;
  if (!fs::exists(runner)) {
    std::cerr << "iron: runner not found at " << runner << " (build it, or set IRON_RUNNER)\n";
    result.exit_code = 2;
    return result;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("iron: pipe");
    result.exit_code = 2;
    return result;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::vector<std::string> argv_s{runner.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, runner.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    std::cerr << "iron: cannot start " << runner << ": " << std::strerror(rc) << "\n";
    close(fds[0]);
    result.exit_code = 2;
    return result;
  }
  FILE* in = fdopen(fds[0], "r");
  // Every line is decoded against the protocol schema before a command sees it: a malformed
  // line is reported with its number and the reason, counted in bad_lines, and skipped. A
  // handler that still throws (it reads a field the schema does not promise) is reported the
  // same way, never an abort.
  std::string line;
  char buf[65536];
  size_t line_no = 0;
  bool overlong = false;
  auto bad = [&](const std::string& why, const std::string& text) {
    ++result.bad_lines;
    std::cerr << "iron: runner output line " << line_no << ": " << why;
    if (!text.empty()) std::cerr << ": " << text.substr(0, 200) << (text.size() > 200 ? "..." : "");
    std::cerr << "\n";
  };
  auto handle = [&](const std::string& text) {
    nlohmann::json msg;
    std::string why;
    if (!iron::protocol::decode(text, msg, why)) return bad(why, text);
    try {
      on_message(msg);
    } catch (const std::exception& e) {
      bad(std::string("message not understood (") + e.what() + ")", text);
    }
  };
  while (fgets(buf, sizeof buf, in)) {
    size_t n = std::strlen(buf);
    bool complete = n > 0 && buf[n - 1] == '\n';
    if (!overlong) line.append(buf, complete ? n - 1 : n);
    if (line.size() > iron::protocol::kMaxLineBytes) {
      overlong = true;
      line.clear();
    }
    if (!complete) continue;
    ++line_no;
    if (overlong) bad("line longer than " + std::to_string(iron::protocol::kMaxLineBytes) + " bytes", "");
    else handle(line);
    overlong = false;
    line.clear();
  }
  if (!line.empty() || overlong) {
    ++line_no;
    bad("the runner's output ends inside a line (no newline)", line);
  }
  fclose(in);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    result.crashed = true;
    result.crash = std::string("signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    result.exit_code = 1;
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

int report_error(const nlohmann::json& msg) {
  std::cerr << "iron: error: " << msg.value("message", std::string("?")) << "\n";
  return 2;
}

}  // namespace iron::cli
