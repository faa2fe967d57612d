// Statistics, metrics and harness checks for `bench` (see stats.hpp). No device access here:
// everything runs on finished samples, after the timed region.
#include "harness/stats.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>

namespace iron::bench {

namespace {
std::string num(double v, const char* fmt = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}
}  // namespace

double nearest_rank(const std::vector<double>& sorted, double pct) {
  if (sorted.empty()) throw Error("percentile of no samples");
  double rank = std::ceil(pct / 100.0 * double(sorted.size()));
  size_t r = size_t(std::clamp(rank, 1.0, double(sorted.size())));
  return sorted[r - 1];
}

Stats compute_stats(std::vector<double> samples) {
  if (samples.empty()) throw Error("no timing samples");
  for (double v : samples)
    if (!std::isfinite(v)) throw Error("a timing sample is not finite");
  std::sort(samples.begin(), samples.end());
  Stats s;
  s.n = samples.size();
  s.min_us = samples.front();
  size_t mid = s.n / 2;
  s.median_us = s.n % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  s.mean_us = std::accumulate(samples.begin(), samples.end(), 0.0) / double(s.n);
  s.p95_us = nearest_rank(samples, 95);
  s.p99_us = nearest_rank(samples, 99);
  if (s.n > 1 && s.mean_us > 0) {
    double ss = 0;
    for (double v : samples) ss += (v - s.mean_us) * (v - s.mean_us);
    s.cv = std::sqrt(ss / double(s.n - 1)) / s.mean_us;
  }
  return s;
}

const char* bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::Latency: return "latency";
    case Bottleneck::Memory: return "memory";
    case Bottleneck::Compute: return "compute";
    case Bottleneck::Occupancy: return "occupancy";
    default: return "";
  }
}

Bottleneck classify_bottleneck(double median_us, double launch_floor_us, std::optional<double> bw_fraction,
                               std::optional<double> compute_fraction) {
  if (launch_floor_us > 0 && median_us < kLatencyFloorMultiple * launch_floor_us) return Bottleneck::Latency;
  if (!bw_fraction && !compute_fraction) return Bottleneck::Unknown;
  double bw = bw_fraction.value_or(0), fl = compute_fraction.value_or(0);
  if (bw < kOccupancyFraction && fl < kOccupancyFraction) return Bottleneck::Occupancy;
  return bw >= fl ? Bottleneck::Memory : Bottleneck::Compute;
}

Metrics derive_metrics(const Stats& s, double bytes, double flops, DType dtype, const DeviceSpec* spec,
                       const Ceilings& measured, double launch_floor_us) {
  Metrics m;
  if (s.median_us > 0) {
    m.gbps = bytes / s.median_us / 1e3;  // bytes/us = MB/s; / 1e3 = GB/s
    m.gflops = flops / s.median_us / 1e3;
  }
  if (bytes > 0) m.intensity = flops / bytes;
  if (spec) {
    m.pct_peak_bw = 100.0 * m.gbps / spec->bw_gbps;
    m.pct_peak_compute = 100.0 * m.gflops / peak_compute_gflops(*spec, dtype);
  }
  if (measured.copy_gbps > 0) m.pct_measured_bw = 100.0 * m.gbps / measured.copy_gbps;
  if (measured.fma_gflops > 0) m.pct_measured_compute = 100.0 * m.gflops / measured.fma_gflops;
  auto fraction = [](std::optional<double> measured_pct, std::optional<double> peak_pct) -> std::optional<double> {
    if (measured_pct) return *measured_pct / 100.0;
    if (peak_pct) return *peak_pct / 100.0;
    return std::nullopt;
  };
  m.bottleneck = classify_bottleneck(s.median_us, launch_floor_us, fraction(m.pct_measured_bw, m.pct_peak_bw),
                                     fraction(m.pct_measured_compute, m.pct_peak_compute));
  return m;
}

std::optional<std::string> roofline_violation(const Metrics& m, DType dtype, const DeviceSpec* spec,
                                              const Ceilings& measured, bool guard_measured) {
  if (spec && m.gbps > spec->bw_gbps)
    return "above the roofline: " + num(m.gbps) + " GB/s exceeds the " + spec->name + " peak bandwidth of " +
           num(spec->bw_gbps) + " GB/s (" + spec->source + "); a fast wrong answer or wrong byte count, not a result";
  // The measured ceiling is the roofline only where no datasheet figure exists: Iron's copy
  // kernel is a lower bound on the device's bandwidth (on the H200 it measured 3.70 TB/s while a
  // vectorized add reached 4.1 TB/s of a 4.8 TB/s peak), so on a known device exceeding it is a
  // warning (measured_ceiling_exceeded), not an error.
  if (!spec && guard_measured && measured.copy_gbps > 0 && m.gbps > kMeasuredSlack * measured.copy_gbps)
    return "above the roofline: " + num(m.gbps) + " GB/s exceeds " + num(kMeasuredSlack, "%.2f") +
           " x the device's measured copy bandwidth of " + num(measured.copy_gbps) +
           " GB/s (iron calibrate); check the byte count, or a working set that stays in cache between samples "
           "(--flush-l2)";
  if (spec && m.gflops > peak_compute_gflops(*spec, dtype))
    return "above the roofline: " + num(m.gflops) + " GFLOP/s exceeds the " + spec->name + " peak " +
           (is_fp8(dtype) ? "FP8" : dtype == DType::F16 || dtype == DType::BF16 ? "FP16/BF16" : "FP32") + " rate of " +
           num(peak_compute_gflops(*spec, dtype)) + " GFLOP/s (" + spec->source + ")";
  return std::nullopt;
}

std::optional<std::string> measured_ceiling_exceeded(const Metrics& m, const DeviceSpec* spec, const Ceilings& measured,
                                                     bool guard_measured) {
  if (!spec || !guard_measured || measured.copy_gbps <= 0 || m.gbps <= kMeasuredSlack * measured.copy_gbps)
    return std::nullopt;
  return num(m.gbps) + " GB/s is above the calibrated copy bandwidth of " + num(measured.copy_gbps) +
         " GB/s (but under the " + spec->name + " peak of " + num(spec->bw_gbps) +
         " GB/s): the calibration underestimates the device, or the working set stays in cache (--flush-l2)";
}

namespace {
// The unsigned integer that ends just before `pos` (spaces skipped); nullopt if none.
std::optional<long> number_before(const std::string& line, size_t pos) {
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end) return std::nullopt;
  return std::strtol(line.c_str() + begin, nullptr, 10);
}
void keep_max(std::optional<long>& slot, std::optional<long> v) {
  if (v && (!slot || *v > *slot)) slot = v;
}
}  // namespace

Resources parse_ptxas(const std::string& report) {
  Resources r;
  size_t start = 0;
  while (start < report.size()) {
    size_t end = report.find('\n', start);
    if (end == std::string::npos) end = report.size();
    std::string line = report.substr(start, end - start);
    start = end + 1;
    if (size_t p = line.find(" registers"); p != std::string::npos && line.find("Used ") != std::string::npos)
      keep_max(r.registers, number_before(line, p));
    if (size_t p = line.find("bytes spill stores"); p != std::string::npos) keep_max(r.spill_stores, number_before(line, p));
    if (size_t p = line.find("bytes spill loads"); p != std::string::npos) keep_max(r.spill_loads, number_before(line, p));
    if (size_t p = line.find("bytes smem"); p != std::string::npos) keep_max(r.shared_bytes, number_before(line, p));
  }
  return r;
}

std::vector<std::string> sweep_warnings(const std::vector<SweepCell>& cells) {
  std::vector<std::string> out;
  std::map<std::pair<std::string, std::string>, std::vector<const SweepCell*>> groups;
  for (const SweepCell& c : cells)
    if (!c.sweep.empty()) groups[{c.sweep, c.dtype}].push_back(&c);

  for (const auto& [key, g] : groups) {
    if (g.size() < 2) continue;
    // min_element / max_element keep the first of equal sizes: deterministic.
    const SweepCell* small = *std::min_element(g.begin(), g.end(), [](auto* a, auto* b) { return a->size < b->size; });
    const SweepCell* large = *std::max_element(g.begin(), g.end(), [](auto* a, auto* b) { return a->size < b->size; });
    if (small->size > 0 && large->size >= 4 * small->size && !large->latency_bound &&
        large->median_us < kFlatGrowth * small->median_us)
      out.push_back("flat latency across the sweep: the harness may be measuring itself (sweep " + key.first + " [" +
                    key.second + "]: size " + num(small->size, "%.6g") + " -> " + num(large->size, "%.6g") + " (" +
                    num(large->size / small->size, "%.3g") + "x), median " + num(small->median_us) + " -> " +
                    num(large->median_us) + " us)");
  }

  if (!cells.empty() && !cells[0].sweep.empty() && cells[0].bytes > 0) {
    const SweepCell& first = cells[0];
    const auto& g = groups[{first.sweep, first.dtype}];
    bool smallest = true, slowest = g.size() >= 2;
    double next = 0;
    for (const SweepCell* c : g) {
      if (c == &first) continue;
      if (c->size < first.size) smallest = false;
      if (c->bytes <= 0) { slowest = false; continue; }
      double per_byte = c->median_us / c->bytes;
      next = std::max(next, per_byte);
      if (per_byte >= first.median_us / first.bytes) slowest = false;
    }
    if (slowest && !smallest)
      out.push_back("first cell slowest: warm-up may be too short (" + first.label +
                    " was timed first and is the slowest per byte of sweep " + first.sweep + " [" + first.dtype +
                    "]: " + num(first.median_us / first.bytes * 1e6) + " us/MB, the others at most " +
                    num(next * 1e6) + " us/MB; raise --warmup)");
  }
  return out;
}

}  // namespace iron::bench
