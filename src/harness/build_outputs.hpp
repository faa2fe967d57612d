// `iron build` and `iron clean` in the runner: the build tree (sources and binaries per kernel,
// per variant, per dtype, one directory per emission backend), its manifest.json, and removing
// exactly what a build wrote plus the compile cache's entries. See docs/cli.md.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "passes/pass.hpp"

namespace iron::build {

// What `build` was asked for (the runner's parsed arguments).
struct Request {
  std::string emit;      // comma-separated: a backend of emission_backends(), ir, manifest, all
  std::string out_dir;
  std::string arch;      // CUDA architecture for NVRTC
  std::vector<std::string> hip_archs;  // AMD GPU architectures for the HIP code objects
  std::string filter;    // only kernels whose name contains it
  bool no_compile = false;
  uint32_t threadgroup[3] = {0, 0, 0};
  std::vector<std::pair<std::string, std::string>> specialize;  // NAME=VALUE as written
  // The specialization of a kernel the --specialize values give (names it does not declare are
  // left out and the applied ones added to `used`); throws iron::Error on a bad value.
  std::function<passes::Specialization(const ir::Kernel&, std::set<std::string>* used)> specialization;
};

using Send = std::function<void(const nlohmann::json&)>;

// The names `--emit` takes for code: one per target of the registry whose dialect this build has,
// in Target order ("cuda", "hip", "spirv", "msl").
std::vector<std::string> emission_backends();

// Writes the tree under req.out_dir and its manifest.json last; files a previous build of that
// directory wrote (its manifest lists them) and this one does not are removed. One `artifact`
// message per file or failure, then a `summary`. Returns 0, or 1 when an artifact failed.
int run_build(const Request& req, const Send& send);

// `clean [DIR...]`: removes the compile cache's entries (unless keep_cache) and, in each DIR, the
// files its manifest.json lists that still hold the bytes the build wrote, the directories the
// build created once they are empty, and the manifest. Anything else (a foreign file, a file
// changed since the build, the calibration cache) is left where it is and named. Throws
// iron::Error when a DIR has no manifest Iron wrote.
int run_clean(const std::vector<std::string>& dirs, bool keep_cache, const Send& send);

}  // namespace iron::build
