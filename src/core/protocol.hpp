// The versioned JSON-lines protocol between `iron` (the CLI) and `iron-runner` (which links
// the kernel library and does all GPU work). One JSON object per line on the runner's stdout;
// every object carries "v" (the protocol version) and "type":
//   hello    {runner_version}
//   device   {backend, available, why | name, driver, arch, lane_width, ...}
//   test_start {kernel, case, dtype}       (so a crash can name the case in flight)
//   test     {kernel, case, dtype, backend, status: pass|fail|skip, max_error, tolerance, message, ms}
//   kernel   {name, mode, dtypes, file, line}   test_case {kernel, case}   (list)
//   summary  {passed, failed, skipped}
//   text     {text}                      (inspect output)
//   artifact {kernel, dtype, target, path, ok, message}
//   error    {message}
//   warning  {message}                   (harness warnings: flat sweep, first cell slowest, ...)
//   bench    one benchmark result, also the record format of snapshots and peer files:
//     {kernel, bench, dtype, backend, device, source ("iron", "torch-eager", "torch-compile",
//      "torch-rms_norm", "cublas", ...), status ("ok" | "fail" | "error"), message,
//      correctness {status, max_error, tolerance}, warmup, flush_l2, samples_us [...],
//      stats {n, min_us, median_us, mean_us, p95_us, p99_us, cv}, bytes, flops, sweep, size,
//      metrics {gbps, gflops, intensity, pct_peak_bw, pct_peak_compute, pct_measured_bw,
//               pct_measured_compute, bottleneck ("memory" | "compute" | "latency" | "occupancy")}
//               (percentages null where the device is unknown),
//      resources {registers, spill_stores, spill_loads, shared_bytes} or null}
//     optional: kernel_override (the kernel actually run with this bench's setup, for A/B),
//     metrics.launch_floor_us (the measured launch latency floor of the run)
//   bench_start {kernel, bench, dtype, index, total}   (progress; names the bench in flight)
//   calibration {backend, device, copy_gbps, fma_gflops, ...}   (iron calibrate)
//   fuzz_mismatch {seed, mode, reference, backend, lane_width, launch, difference, reproduce,
//                  ir?, source?, reduced?}   fuzz_summary {programs, mismatches, pairs, ...}   (iron fuzz)
//   A snapshot file (.iron/snaps/NAME.json) is {"v", "name", "created", "results": [bench...]}.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace iron::protocol {

constexpr int kVersion = 1;

// Serializes one message (adds "v") as a single line without the newline.
std::string encode(nlohmann::json msg);
// Parses one line; returns false (with `why`) for non-JSON, a missing type, or another version.
bool decode(const std::string& line, nlohmann::json& out, std::string& why);

}  // namespace iron::protocol
