// The versioned JSON-lines protocol between `iron` (the CLI) and `iron-runner` (which links
// the kernel library and does all GPU work). One JSON object per line on the runner's stdout;
// every object carries "v" (the protocol version) and "type":
//   hello    {runner_version}
//   device   {backend, available, why | name, driver, arch, lane_width, ...}
//   test_start {kernel, case, dtype}       (so a crash can name the case in flight)
//   test     {kernel, case, dtype, backend, status: pass|fail|skip, max_error, tolerance, message, ms, ir_hash}
//   kernel   {name, mode, dtypes, file, line}   test_case {kernel, case, dtypes: [{dtype, tolerance}]}   (list)
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
//     flush_l2_read (true: the L2 flush read a buffer, leaving the L2 clean; --flush-l2-read),
//     metrics.launch_floor_us (the measured launch latency floor of the run)
//   bench_start {kernel, bench, dtype, index, total}   (progress; names the bench in flight)
//   calibration {backend, device, copy_gbps, fma_gflops, ...}   (iron calibrate)
//   fuzz_mismatch {seed, mode, reference, backend, lane_width, launch, difference, reproduce,
//                  ir?, source?, reduced?}   fuzz_summary {programs, mismatches, pairs, ...}   (iron fuzz)
//   conformance_case {name, kernel, backend, ok, values, message?, expressible?}
//   conformance_summary {backend, cases, passed, failed, unexpressible?, ms?, unavailable?}   (iron conformance)
//   A snapshot file (.iron/snaps/NAME.json) is {"v", "name", "created", "results": [bench...]};
//   a record of `iron snap --processes P` (P >= 2) adds "processes" and "runs_us" (one samples
//   array per process; "samples_us" holds them all).
//
// Typed decoding: `decode` checks every message against the schema of its type (the table in
// protocol.cpp) before the CLI reads it, so a wrong-typed or missing field is an error naming
// the field, never an exception or an indeterminate value. A new message type or field is added
// to that table together with the code that sends it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace iron::protocol {

constexpr int kVersion = 1;
// Longest accepted line and deepest accepted nesting of arrays and objects.
constexpr size_t kMaxLineBytes = size_t(64) << 20;
constexpr int kMaxDepth = 32;

// Serializes one message (adds "v") as a single line without the newline.
std::string encode(nlohmann::json msg);
// Parses one line and checks it against its type's schema; returns false (with `why`, which
// names the field) for non-JSON, a line too long or too deeply nested, a missing type, another
// version, an unknown type, a missing required field or a field of the wrong JSON type. Never
// throws.
bool decode(const std::string& line, nlohmann::json& out, std::string& why);
// The schema check alone, on a parsed object (decode calls it).
bool check_message(const nlohmann::json& msg, std::string& why);

// The schema table, exposed for the decoder's fuzz test.
enum class Kind { String, Number, Integer, Bool, Array, StringArray, NumberArray, Object, ObjectOrNull,
                  StringOrNull, NumberOrNull, NumberOrInf };
enum class Need { Optional, Required, IfAvailable };  // IfAvailable: required when "available" is true
struct FieldSpec {
  const char* name;
  Kind kind;
  Need need;
};
struct MessageSpec {
  const char* type;
  std::vector<FieldSpec> fields;
  std::vector<const char*> statuses;  // allowed values of "status" (empty: not checked)
};
const std::vector<MessageSpec>& schema();
bool kind_matches(const nlohmann::json& v, Kind k);
const char* kind_name(Kind k);

}  // namespace iron::protocol
