// The datasheet peak table, the calibration cache and the device lock (see device_specs.hpp).
// Peaks are the vendors' published figures; the measured ceilings come from `iron calibrate`.
#include "harness/device_specs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace iron::bench {

// Sources (vendor datasheets / whitepapers; "dense" = without structured sparsity, i.e. half the
// sparse figure the datasheets headline):
//   NVIDIA H200 Tensor Core GPU datasheet (SXM / NVL): 4.8 TB/s; FP32 67 / 60; BF16 1979 / 1671 sparse.
//   NVIDIA H100 Tensor Core GPU datasheet (SXM / NVL / PCIe): 3.35 / 3.9 / 2.0 TB/s;
//     FP32 67 / 60 / 51; BF16 1979 / 1671 / 1513 sparse.
//   NVIDIA A100 datasheet: 40 GB 1555 GB/s, 80 GB SXM 2039 GB/s; FP32 19.5; BF16 312 dense.
//   NVIDIA L40S datasheet: 864 GB/s; FP32 91.6; BF16 362.05 dense.
//   NVIDIA Ada Lovelace architecture whitepaper (RTX 4090): 1008 GB/s; FP32 82.6; FP16/BF16 tensor
//     with FP32 accumulate 165.2 dense (the accumulate mode the datacenter figures above use).
//   AMD Instinct MI300X / MI250X datasheets: 5.3 / 3.2768 TB/s; FP32 vector 81.7 / 47.9;
//     FP16/BF16 dense matrix 1307.4 / 383.
//   Apple (base chips): memory bandwidth from Apple's specs (M1 68.25, M2 100, M3 100, M4 120 GB/s);
//     FP32 2.6 (M1, 8-core GPU) and 3.6 (M2, 10-core) TFLOPS from Apple; Apple publishes no figure
//     for M3 / M4: 4.1 / 4.3 are third-party estimates for the 10-core GPU (treat as approximate).
//     FP16 = 2x FP32 on the SIMD pipe (architecture.txt's convention; Apple has no tensor cores).
// A too-low peak would make the roofline guard reject honest results, so where a family shares a
// name (A100 40/80 GB), the unqualified match takes the faster part.
const std::vector<DeviceSpec>& device_specs() {
  static const std::vector<DeviceSpec> table = {
      {"NVIDIA H200 NVL", {"H200", "NVL"}, {}, 4800, 60, 835.5, "NVIDIA H200 datasheet"},
      {"NVIDIA H200 SXM", {"H200"}, {}, 4800, 67, 989.5, "NVIDIA H200 datasheet"},
      {"NVIDIA H100 PCIe", {"H100", "PCIE"}, {}, 2000, 51, 756.5, "NVIDIA H100 datasheet"},
      {"NVIDIA H100 NVL", {"H100", "NVL"}, {}, 3900, 60, 835.5, "NVIDIA H100 datasheet"},
      {"NVIDIA H100 SXM", {"H100"}, {}, 3350, 67, 989.5, "NVIDIA H100 datasheet"},
      {"NVIDIA A100 40GB", {"A100", "40GB"}, {}, 1555, 19.5, 312, "NVIDIA A100 datasheet"},
      {"NVIDIA A100 80GB SXM", {"A100"}, {}, 2039, 19.5, 312, "NVIDIA A100 datasheet"},
      {"NVIDIA L40S", {"L40S"}, {}, 864, 91.6, 362.05, "NVIDIA L40S datasheet"},
      {"NVIDIA GeForce RTX 4090", {"RTX 4090"}, {"4090 D"}, 1008, 82.6, 165.2, "NVIDIA Ada whitepaper"},
      {"AMD Instinct MI300X", {"MI300X"}, {}, 5300, 81.7, 1307.4, "AMD MI300X datasheet"},
      {"AMD Instinct MI250X", {"MI250X"}, {}, 3276.8, 47.9, 383, "AMD MI250X datasheet"},
      {"Apple M1", {"Apple M1"}, {"Pro", "Max", "Ultra"}, 68.25, 2.6, 5.2, "Apple M1 specifications"},
      {"Apple M2", {"Apple M2"}, {"Pro", "Max", "Ultra"}, 100, 3.6, 7.2, "Apple M2 specifications"},
      {"Apple M3", {"Apple M3"}, {"Pro", "Max", "Ultra"}, 100, 4.1, 8.2, "Apple M3 specs; FLOPS estimated"},
      {"Apple M4", {"Apple M4"}, {"Pro", "Max", "Ultra"}, 120, 4.3, 8.6, "Apple M4 specs; FLOPS estimated"},
  };
  return table;
}

namespace {
std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
bool contains(const std::string& hay, const char* needle) { return hay.find(upper(needle)) != std::string::npos; }
}  // namespace

const DeviceSpec* lookup_device_spec(std::string_view device_name) {
  std::string name = upper(device_name);
  for (const DeviceSpec& s : device_specs()) {
    bool ok = true;
    for (const char* p : s.all_of)
      if (p && !contains(name, p)) ok = false;
    for (const char* p : s.none_of)
      if (p && contains(name, p)) ok = false;
    if (ok) return &s;
  }
  return nullptr;
}

double peak_compute_gflops(const DeviceSpec& spec, DType dtype) {
  // fp8 (A and B of an fp8 GEMM): twice the FP16/BF16 tensor figure, the datasheets' dense FP8
  // rate on Hopper (1979), Ada (L40S 733, RTX 4090 330.3) and MI300X (2614.9); an upper bound
  // on parts without fp8 tensor cores, so the roofline guard never rejects an honest result.
  if (is_fp8(dtype)) return 2 * spec.fp16_tflops * 1e3;
  bool half = dtype == DType::F16 || dtype == DType::BF16;
  return (half ? spec.fp16_tflops : spec.fp32_tflops) * 1e3;
}

// ---- calibration cache ----

std::string calibration_cache_path() {
  namespace fs = std::filesystem;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  fs::path base;
  if (xdg && *xdg) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = fs::path(home) / ".cache";
  else base = "/tmp";
  return (base / "iron" / "calibration.json").string();
}

std::string calibration_key(const DeviceInfo& info) {
  return std::string(backend_name(info.backend)) + "|" + info.name + "|" + info.driver;
}

namespace {
nlohmann::json read_cache() {
  std::ifstream f(calibration_cache_path());
  if (!f) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}
}  // namespace

Ceilings load_calibration(const DeviceInfo& info) {
  Ceilings c;
  nlohmann::json j = read_cache();
  if (!j.contains("entries") || !j["entries"].is_object()) return c;
  auto it = j["entries"].find(calibration_key(info));
  if (it == j["entries"].end() || !it->is_object()) return c;
  if (it->contains("copy_gbps") && (*it)["copy_gbps"].is_number()) c.copy_gbps = (*it)["copy_gbps"].get<double>();
  if (it->contains("fma_gflops") && (*it)["fma_gflops"].is_number()) c.fma_gflops = (*it)["fma_gflops"].get<double>();
  return c;
}

void store_calibration(const DeviceInfo& info, const Ceilings& c, const std::string& details_json) {
  namespace fs = std::filesystem;
  nlohmann::json j = read_cache();
  j["version"] = 1;
  if (!j.contains("entries") || !j["entries"].is_object()) j["entries"] = nlohmann::json::object();
  nlohmann::json entry = nlohmann::json::parse(details_json, nullptr, false);
  if (!entry.is_object()) entry = nlohmann::json::object();
  entry["backend"] = backend_name(info.backend);
  entry["device"] = info.name;
  entry["driver"] = info.driver;
  entry["copy_gbps"] = c.copy_gbps;
  entry["fma_gflops"] = c.fma_gflops;
  j["entries"][calibration_key(info)] = entry;
  fs::path path = calibration_cache_path();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // Write then rename: a concurrent reader never sees half a file.
  fs::path tmp = path.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    f << j.dump(2) << "\n";
    if (!f) throw Error("cannot write the calibration cache " + tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) throw Error("cannot write the calibration cache " + path.string() + ": " + ec.message());
}

// ---- device lock ----

std::string DeviceLock::path_for(Backend backend) {
  const char* dir = std::getenv("IRON_BENCH_LOCK_DIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/iron-bench-" + backend_name(backend) + ".lock";
}

DeviceLock::DeviceLock(Backend backend, void (*on_wait)(const std::string& path)) {
  std::string path = path_for(backend);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error("cannot open the bench lock " + path + ": " + std::strerror(errno));
  fchmod(fd_, 0666);  // best effort: other users' runs must be able to take the same lock
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (on_wait) on_wait(path);
  while (flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error("cannot lock " + path + ": " + std::strerror(e));
  }
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) {
    flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace iron::bench
