// Benchmark statistics, metrics, bottleneck verdicts, ptxas resource parsing and the harness
// sanity checks (roofline guard, flat sweep, first cell slowest; seeds §6). Pure functions over
// finished samples: the bench runner calls them only after the timed region has ended.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/device_specs.hpp"
#include "iron/types.hpp"

namespace iron::bench {

struct Stats {
  size_t n = 0;
  double min_us = 0, median_us = 0, mean_us = 0, p95_us = 0, p99_us = 0;
  double cv = 0;  // sample standard deviation / mean
};
// Throws iron::Error on an empty sample set or a non-finite sample.
Stats compute_stats(std::vector<double> samples_us);
// Nearest-rank percentile of sorted samples: the value at 1-based rank ceil(pct/100 * n).
double nearest_rank(const std::vector<double>& sorted, double pct);

enum class Bottleneck { Unknown, Latency, Memory, Compute, Occupancy };
const char* bottleneck_name(Bottleneck b);  // "memory", ...; "" for Unknown

// A median below this multiple of the launch floor is launch / latency bound.
constexpr double kLatencyFloorMultiple = 3.0;
// Both roofline fractions below this: neither memory nor compute limits; too little parallelism.
constexpr double kOccupancyFraction = 0.30;
// The measured copy ceiling may be beaten by this much before a result is rejected.
constexpr double kMeasuredSlack = 1.05;

// Fractions are achieved / ceiling (nullopt when no ceiling is known). Unknown when the kernel is
// not latency-bound and no fraction is known.
Bottleneck classify_bottleneck(double median_us, double launch_floor_us, std::optional<double> bw_fraction,
                               std::optional<double> compute_fraction);

struct Metrics {
  double gbps = 0;    // bytes / median
  double gflops = 0;  // flops / median
  std::optional<double> intensity;  // flops / bytes; nullopt when no bytes are declared
  std::optional<double> pct_peak_bw, pct_peak_compute;          // against the datasheet (spec)
  std::optional<double> pct_measured_bw, pct_measured_compute;  // against the calibration cache
  Bottleneck bottleneck = Bottleneck::Unknown;
};
// `spec` may be null (unknown device); zero `measured` fields are unknown. The bottleneck uses
// the device's measured ceilings where present (what it can really sustain), else the datasheet.
// The measured compute ceiling is the f32 FMA rate for every dtype: the DSL computes 16-bit
// dtypes through f32.
Metrics derive_metrics(const Stats& s, double bytes, double flops, DType dtype, const DeviceSpec* spec,
                       const Ceilings& measured, double launch_floor_us);

// The roofline guard (seeds §6.1): a message starting "above the roofline: " when the result
// beats the datasheet bandwidth or compute peak, or (with guard_measured) the measured copy
// ceiling x kMeasuredSlack; nullopt when it is physically plausible.
// On a device with a datasheet entry: a result above its measured (calibrated) copy bandwidth,
// which is a warning rather than an error (the calibration kernel is a lower bound).
std::optional<std::string> measured_ceiling_exceeded(const Metrics& m, const DeviceSpec* spec, const Ceilings& measured,
                                                     bool guard_measured);
std::optional<std::string> roofline_violation(const Metrics& m, DType dtype, const DeviceSpec* spec,
                                              const Ceilings& measured, bool guard_measured);

// From ptxas -v lines: "Used N registers", "N bytes spill stores", "N bytes spill loads",
// "N bytes smem". Several entry functions: the largest figure of each.
struct Resources {
  std::optional<long> registers, spill_stores, spill_loads, shared_bytes;
  bool empty() const { return !registers && !spill_stores && !spill_loads && !shared_bytes; }
};
Resources parse_ptxas(const std::string& report);

// One timed result, for the sweep checks.
struct SweepCell {
  std::string label;  // "iron_add/n4096 [f32]"
  std::string sweep;  // empty: in no sweep
  std::string dtype;
  double size = 0;
  double median_us = 0;
  double bytes = 0;
  bool latency_bound = false;
};
// A sweep "does not grow" when its largest cell is under this multiple of its smallest.
constexpr double kFlatGrowth = 1.2;
// Harness warnings over all ok results, in timing order (cells[0] is the run's first timed bench):
// per sweep and dtype, "flat latency across the sweep" when the size grew >= 4x, the largest cell
// is not latency-bound and its median is < kFlatGrowth x the smallest's; and "first cell slowest"
// when cells[0] takes the most time per byte of its sweep. The smallest cell of a sweep is
// naturally the slowest per byte (the launch cost is spread over the fewest bytes), so the second
// check only fires when the first cell is not the sweep's smallest.
std::vector<std::string> sweep_warnings(const std::vector<SweepCell>& cells);

}  // namespace iron::bench
