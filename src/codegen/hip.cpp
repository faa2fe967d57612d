// HIP's offline compiler: clang++ with HIP support turns emitted HIP into an AMDGPU code object
// (no AMD GPU needed), and llvm-readelf reads the kernels' resources from its metadata note.
// hipRTC is not used: it crashes on the machines Iron is built on (HIP 5.2).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/codegen.hpp"

namespace iron::codegen {

namespace {

namespace fs = std::filesystem;

bool on_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return access(exe.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/" + exe).c_str(), X_OK) == 0) return true;
  return false;
}

// Runs argv with stdout and stderr into `log`; the exit status, or -1 when it cannot start.
int run(const std::vector<std::string>& argv, std::string& log) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    log.append(buf, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// A private scratch directory per compile (several threads and processes compile at once).
fs::path scratch_dir() {
  static std::atomic<unsigned> counter{0};
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  fs::path dir = fs::temp_directory_path() /
                 ("iron-hip-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(stamp));
  fs::create_directories(dir);
  return dir;
}

}  // namespace

HipToolchain hip_toolchain() {
  HipToolchain t;
  t.clang = env_or("IRON_HIP_CLANG", "clang++-15");
  t.readelf = env_or("IRON_HIP_READELF", "llvm-readelf-15");
  t.rocm_path = env_or("IRON_ROCM_PATH", "/usr");
  // Debian's rocm-device-libs put the bitcode here; a ROCm install under /opt/rocm elsewhere.
  const char* device_libs[] = {"/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/opt/rocm/amdgcn/bitcode",
                               "/usr/lib/amdgcn/bitcode"};
  t.device_lib_path = env_or("IRON_HIP_DEVICE_LIB_PATH", "");
  for (const char* p : device_libs)
    if (t.device_lib_path.empty() && fs::exists(fs::path(p) / "ocml.bc")) t.device_lib_path = p;
  if (!on_path(t.clang)) {
    t.why = "no HIP compiler: '" + t.clang + "' is not on PATH (install Debian's hipcc, or set IRON_HIP_CLANG)";
  } else if (!fs::exists(fs::path(t.rocm_path) / "include/hip/hip_runtime.h")) {
    t.why = "no HIP headers under " + t.rocm_path + "/include/hip (install Debian's hipcc, or set IRON_ROCM_PATH)";
  } else if (t.device_lib_path.empty()) {
    t.why = "no AMDGPU device libraries (ocml.bc; install Debian's rocm-device-libs, or set IRON_HIP_DEVICE_LIB_PATH)";
  }
  return t;
}

HipObject compile_hip(const std::string& source, const std::string& arch, const std::string& name) {
  HipObject out;
  const HipToolchain tc = hip_toolchain();
  if (!tc.ok()) {
    out.log = tc.why;
    return out;
  }
  const fs::path dir = scratch_dir();
  const fs::path src = dir / (name + ".hip"), obj = dir / (name + ".co");
  {
    std::ofstream f(src, std::ios::binary);
    f << source;
  }
  const int rc = run({tc.clang, "-x", "hip", "-std=c++17", "--rocm-path=" + tc.rocm_path,
                      "--hip-device-lib-path=" + tc.device_lib_path, "--cuda-device-only", "--no-gpu-bundle-output",
                      "-O3", "-Wno-unused-command-line-argument", "--offload-arch=" + arch, src.string(), "-o", obj.string()},
                     out.log);
  if (rc == 0) {
    std::ifstream f(obj, std::ios::binary);
    out.code.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    out.ok = !out.code.empty();
    if (!out.ok) out.log += "\n" + tc.clang + " wrote no code object";
  } else if (rc < 0 || rc == 127) {
    out.log = "cannot run " + tc.clang + "\n" + out.log;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

std::vector<HipKernelResources> hip_resources(const std::vector<char>& code, std::string& why) {
  std::vector<HipKernelResources> out;
  const HipToolchain tc = hip_toolchain();
  const fs::path dir = scratch_dir();
  const fs::path obj = dir / "k.co";
  {
    std::ofstream f(obj, std::ios::binary);
    f.write(code.data(), std::streamsize(code.size()));
  }
  std::string text;
  const int rc = run({tc.readelf, "--notes", obj.string()}, text);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (rc != 0) {
    why = "cannot read the code object's notes with " + tc.readelf + ": " + text;
    return out;
  }
  // The AMDGPU metadata note is YAML: one "- .agpr_count" / ".args" block per kernel, its keys
  // indented under it. The keys Iron reports are scalars on one line.
  std::stringstream lines(text);
  HipKernelResources* k = nullptr;
  for (std::string line; std::getline(lines, line);) {
    const size_t key = line.find_first_not_of(" -");
    if (key == std::string::npos || line[key] != '.') continue;
    if (line.find("- .") != std::string::npos && line.find("- .") + 2 == key && key == 4) {
      out.emplace_back();  // a new kernel's first key (at the kernels list's indentation)
      k = &out.back();
    }
    if (!k || key != 4) continue;  // a kernel's own keys, not those of its arguments
    const size_t colon = line.find(':', key);
    if (colon == std::string::npos) continue;
    const std::string name = line.substr(key, colon - key);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    auto number = [&] { return uint32_t(std::strtoul(value.c_str(), nullptr, 10)); };
    if (name == ".name") k->name = value;
    else if (name == ".vgpr_count") k->vgprs = number();
    else if (name == ".sgpr_count") k->sgprs = number();
    else if (name == ".agpr_count") k->agprs = number();
    else if (name == ".group_segment_fixed_size") k->lds_bytes = number();
    else if (name == ".private_segment_fixed_size") k->scratch_bytes = number();
    else if (name == ".wavefront_size") k->wavefront = number();
    else if (name == ".vgpr_spill_count") k->vgpr_spills = number();
    else if (name == ".sgpr_spill_count") k->sgpr_spills = number();
  }
  if (out.empty()) why = "the code object has no AMDGPU kernel metadata";
  return out;
}

}  // namespace iron::codegen
