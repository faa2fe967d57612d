// Device ceilings for the bench metrics: the datasheet peak table (device_specs.cpp), the
// device's own measured ceilings cached by `calibrate` (calibrate.cpp), and the exclusive
// per-backend device lock held around every timed region (seeds §6.2: runs never overlap).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "iron/runtime.hpp"
#include "iron/types.hpp"

namespace iron::bench {

// One datasheet row. A device matches when its name contains every `all_of` substring and none
// of the `none_of` ones (case-insensitive); the table is ordered most specific first.
struct DeviceSpec {
  const char* name;              // the part, e.g. "NVIDIA H200 SXM"
  const char* all_of[3];         // nullptr-terminated
  const char* none_of[4];        // nullptr-terminated
  double bw_gbps;                // peak memory bandwidth, GB/s (1e9 bytes/s)
  double fp32_tflops;            // FP32 on the SIMT / vector pipe (no tensor or matrix cores)
  double fp16_tflops;            // FP16/BF16 dense (no sparsity), tensor / matrix cores where present
  const char* source;
};

const std::vector<DeviceSpec>& device_specs();
// nullptr for an unknown device: its percentages of peak are then null, never guessed.
const DeviceSpec* lookup_device_spec(std::string_view device_name);
// The compute ceiling for kernels of `dtype`, GFLOP/s: the FP16/BF16 figure for 16-bit floats,
// twice it for the fp8 formats (the dense FP8 tensor rate), the FP32 figure otherwise.
double peak_compute_gflops(const DeviceSpec& spec, DType dtype);

// The device's own measured ceilings (0 = not measured).
struct Ceilings {
  double copy_gbps = 0;   // copy kernel, bytes read + written per second
  double fma_gflops = 0;  // independent f32 fma chains, 2 FLOPs per fma
};

// $XDG_CACHE_HOME/iron/calibration.json, else ~/.cache/iron/calibration.json.
std::string calibration_cache_path();
// The cache key: backend + device name + driver (a new driver re-measures).
std::string calibration_key(const DeviceInfo& info);
// The cached ceilings for this device; zeros when absent or unreadable.
Ceilings load_calibration(const DeviceInfo& info);
// Adds or replaces this device's entry; throws iron::Error when the file cannot be written.
void store_calibration(const DeviceInfo& info, const Ceilings& c, const std::string& details_json);

// An exclusive flock on /tmp/iron-bench-<backend>.lock (IRON_BENCH_LOCK_DIR overrides /tmp):
// /tmp, not $XDG_RUNTIME_DIR, because the device is shared by every user of the machine.
// Blocks until acquired; `on_wait` is called once if another process holds it.
class DeviceLock {
 public:
  DeviceLock(Backend backend, void (*on_wait)(const std::string& path) = nullptr);
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;
  static std::string path_for(Backend backend);

 private:
  int fd_ = -1;
};

// `calibrate [--backend B]` (calibrate.cpp): argv as given to the runner.
int calibrate_main(int argc, char** argv);

}  // namespace iron::bench
