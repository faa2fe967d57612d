// The bench math on known data (src/harness/stats.cpp, device_specs.cpp): statistics with
// nearest-rank percentiles, metrics, bottleneck verdicts, the datasheet lookup, ptxas parsing,
// the roofline guard and the sweep warnings. No device is touched.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "harness/device_specs.hpp"
#include "harness/stats.hpp"

using namespace iron;
using namespace iron::bench;

namespace {

TEST(BenchStats, OneToHundred) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  std::vector<double> shuffled(v.rbegin(), v.rend());  // order must not matter
  Stats s = compute_stats(shuffled);
  EXPECT_EQ(s.n, 100u);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.median_us, 50.5);
  EXPECT_DOUBLE_EQ(s.mean_us, 50.5);
  EXPECT_DOUBLE_EQ(s.p95_us, 95);  // rank ceil(0.95 * 100) = 95
  EXPECT_DOUBLE_EQ(s.p99_us, 99);
  // Sample standard deviation of 1..100 is sqrt(100 * 101 / 12).
  EXPECT_NEAR(s.cv, std::sqrt(100.0 * 101 / 12) / 50.5, 1e-12);
}

TEST(BenchStats, NearestRankOnSmallSets) {
  Stats s = compute_stats({5, 1, 3});
  EXPECT_DOUBLE_EQ(s.median_us, 3);
  EXPECT_DOUBLE_EQ(s.p95_us, 5);  // ceil(2.85) = 3: the largest, never an interpolation
  EXPECT_DOUBLE_EQ(s.p99_us, 5);
  std::vector<double> twenty(20);
  std::iota(twenty.begin(), twenty.end(), 1.0);
  EXPECT_DOUBLE_EQ(nearest_rank(twenty, 95), 19);
  EXPECT_DOUBLE_EQ(nearest_rank(twenty, 50), 10);
  EXPECT_DOUBLE_EQ(nearest_rank(twenty, 0), 1);
  Stats one = compute_stats({7});
  EXPECT_DOUBLE_EQ(one.median_us, 7);
  EXPECT_DOUBLE_EQ(one.cv, 0);
  EXPECT_THROW(compute_stats({}), Error);
  EXPECT_THROW(compute_stats({1, NAN}), Error);
}

TEST(BenchStats, ConstantSamplesHaveZeroCv) {
  Stats s = compute_stats({4, 4, 4, 4});
  EXPECT_DOUBLE_EQ(s.cv, 0);
  EXPECT_DOUBLE_EQ(s.p99_us, 4);
}

TEST(BenchSpecs, LookupBySubstring) {
  auto name = [](const char* device) {
    const DeviceSpec* s = lookup_device_spec(device);
    return s ? std::string(s->name) : std::string("<unknown>");
  };
  EXPECT_EQ(name("NVIDIA H200"), "NVIDIA H200 SXM");
  EXPECT_EQ(name("NVIDIA H200 NVL"), "NVIDIA H200 NVL");
  EXPECT_EQ(name("NVIDIA H100 80GB HBM3"), "NVIDIA H100 SXM");
  EXPECT_EQ(name("NVIDIA H100 PCIe"), "NVIDIA H100 PCIe");
  EXPECT_EQ(name("NVIDIA A100-SXM4-40GB"), "NVIDIA A100 40GB");
  EXPECT_EQ(name("NVIDIA A100-SXM4-80GB"), "NVIDIA A100 80GB SXM");
  EXPECT_EQ(name("NVIDIA L40S"), "NVIDIA L40S");
  EXPECT_EQ(name("NVIDIA GeForce RTX 4090"), "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(name("AMD Instinct MI300X"), "AMD Instinct MI300X");
  EXPECT_EQ(name("AMD Instinct MI250X / MI250"), "AMD Instinct MI250X");
  EXPECT_EQ(name("Apple M1"), "Apple M1");
  EXPECT_EQ(name("apple m3"), "Apple M3");  // case-insensitive
  EXPECT_EQ(name("Apple M4"), "Apple M4");
  // Only the base chips are in the table: a Pro / Max must not inherit the base bandwidth.
  EXPECT_EQ(name("Apple M1 Pro"), "<unknown>");
  EXPECT_EQ(name("Apple M2 Max"), "<unknown>");
  EXPECT_EQ(name("llvmpipe (LLVM 15.0.6, 256 bits)"), "<unknown>");
  EXPECT_EQ(name("Iron SIMT interpreter"), "<unknown>");

  const DeviceSpec* h200 = lookup_device_spec("NVIDIA H200");
  ASSERT_NE(h200, nullptr);
  EXPECT_DOUBLE_EQ(h200->bw_gbps, 4800);
  EXPECT_DOUBLE_EQ(peak_compute_gflops(*h200, DType::F32), 67000);
  EXPECT_DOUBLE_EQ(peak_compute_gflops(*h200, DType::BF16), 989500);
  EXPECT_DOUBLE_EQ(peak_compute_gflops(*h200, DType::F8E4M3), 1979000);  // the dense FP8 tensor rate
  for (const DeviceSpec& s : device_specs()) {
    EXPECT_GT(s.bw_gbps, 0) << s.name;
    EXPECT_GT(s.fp16_tflops, s.fp32_tflops) << s.name;
  }
}

TEST(BenchMetrics, RatesAndPercentages) {
  Stats s = compute_stats({1000, 1000, 1000});  // 1 ms
  const DeviceSpec* h200 = lookup_device_spec("NVIDIA H200");
  Metrics m = derive_metrics(s, 3e9, 1e9, DType::F32, h200, Ceilings{4270, 60000}, 4.0);
  EXPECT_DOUBLE_EQ(m.gbps, 3000);   // 3 GB in 1 ms
  EXPECT_DOUBLE_EQ(m.gflops, 1000);
  ASSERT_TRUE(m.intensity);
  EXPECT_DOUBLE_EQ(*m.intensity, 1.0 / 3);
  EXPECT_DOUBLE_EQ(*m.pct_peak_bw, 62.5);
  EXPECT_NEAR(*m.pct_peak_compute, 100.0 * 1000 / 67000, 1e-12);
  EXPECT_NEAR(*m.pct_measured_bw, 100.0 * 3000 / 4270, 1e-12);
  EXPECT_NEAR(*m.pct_measured_compute, 100.0 * 1000 / 60000, 1e-12);
  EXPECT_EQ(m.bottleneck, Bottleneck::Memory);
  EXPECT_STREQ(bottleneck_name(m.bottleneck), "memory");

  Metrics half = derive_metrics(s, 3e9, 1e9, DType::BF16, h200, Ceilings{}, 4.0);
  EXPECT_NEAR(*half.pct_peak_compute, 100.0 * 1000 / 989500, 1e-12);

  // Unknown device, no calibration: every percentage null, and no verdict beyond latency.
  Metrics unknown = derive_metrics(s, 3e9, 1e9, DType::F32, nullptr, Ceilings{}, 4.0);
  EXPECT_FALSE(unknown.pct_peak_bw);
  EXPECT_FALSE(unknown.pct_peak_compute);
  EXPECT_FALSE(unknown.pct_measured_bw);
  EXPECT_FALSE(unknown.pct_measured_compute);
  EXPECT_EQ(unknown.bottleneck, Bottleneck::Unknown);
  EXPECT_STREQ(bottleneck_name(unknown.bottleneck), "");

  Metrics no_bytes = derive_metrics(s, 0, 1e9, DType::F32, nullptr, Ceilings{}, 4.0);
  EXPECT_FALSE(no_bytes.intensity);
}

TEST(BenchMetrics, BottleneckVerdicts) {
  // Below 3x the launch floor: latency, whatever the fractions say.
  EXPECT_EQ(classify_bottleneck(11.9, 4.0, 0.9, 0.1), Bottleneck::Latency);
  EXPECT_EQ(classify_bottleneck(12.1, 4.0, 0.9, 0.1), Bottleneck::Memory);
  EXPECT_EQ(classify_bottleneck(100, 4.0, 0.2, 0.7), Bottleneck::Compute);
  EXPECT_EQ(classify_bottleneck(100, 4.0, 0.29, 0.1), Bottleneck::Occupancy);
  EXPECT_EQ(classify_bottleneck(100, 4.0, 0.31, 0.1), Bottleneck::Memory);
  EXPECT_EQ(classify_bottleneck(100, 4.0, std::nullopt, std::nullopt), Bottleneck::Unknown);
  EXPECT_EQ(classify_bottleneck(100, 4.0, std::nullopt, 0.5), Bottleneck::Compute);
  // The measured ceiling decides over the datasheet when both exist.
  Stats s = compute_stats({1000});
  const DeviceSpec* h200 = lookup_device_spec("NVIDIA H200");
  // 1.2 TB/s is 25% of the datasheet 4.8 TB/s but 40% of a measured 3 TB/s.
  EXPECT_EQ(derive_metrics(s, 1.2e9, 0, DType::F32, h200, Ceilings{}, 1).bottleneck, Bottleneck::Occupancy);
  EXPECT_EQ(derive_metrics(s, 1.2e9, 0, DType::F32, h200, Ceilings{3000, 0}, 1).bottleneck, Bottleneck::Memory);
  EXPECT_EQ(derive_metrics(s, 1.2e9, 0, DType::F32, h200, Ceilings{3000, 0}, 400).bottleneck, Bottleneck::Latency);
}

TEST(BenchGuards, RooflineViolations) {
  const DeviceSpec* h200 = lookup_device_spec("NVIDIA H200");
  Metrics m;
  m.gbps = 4000;
  m.gflops = 100;
  EXPECT_FALSE(roofline_violation(m, DType::F32, h200, Ceilings{}, true));
  m.gbps = 5000;  // beyond the 4.8 TB/s datasheet peak
  auto v = roofline_violation(m, DType::F32, h200, Ceilings{}, true);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rfind("above the roofline: ", 0), 0u) << *v;
  // 4.6 TB/s is under the datasheet but over 1.05 x a measured 4.27 TB/s.
  // On a known device that is a warning (the calibration is a lower bound), not an error; on an
  // unknown device the measured ceiling is the only roofline there is, so it is an error.
  m.gbps = 4600;
  EXPECT_FALSE(roofline_violation(m, DType::F32, h200, Ceilings{}, true));
  EXPECT_FALSE(roofline_violation(m, DType::F32, h200, Ceilings{4270, 0}, true));
  EXPECT_TRUE(measured_ceiling_exceeded(m, h200, Ceilings{4270, 0}, true));
  EXPECT_TRUE(roofline_violation(m, DType::F32, nullptr, Ceilings{4270, 0}, true));
  EXPECT_FALSE(roofline_violation(m, DType::F32, nullptr, Ceilings{4270, 0}, false));  // CPU devices: no measured guard
  m.gbps = 4400;  // within the 5% slack
  EXPECT_FALSE(roofline_violation(m, DType::F32, nullptr, Ceilings{4270, 0}, true));
  EXPECT_FALSE(measured_ceiling_exceeded(m, h200, Ceilings{4270, 0}, true));
  // Compute: 70 TFLOP/s beats the FP32 peak (67) but not the BF16 one.
  m.gbps = 10;
  m.gflops = 70000;
  auto c = roofline_violation(m, DType::F32, h200, Ceilings{}, true);
  ASSERT_TRUE(c);
  EXPECT_NE(c->find("GFLOP/s"), std::string::npos);
  EXPECT_FALSE(roofline_violation(m, DType::BF16, h200, Ceilings{}, true));
  // Unknown device and no calibration: nothing to compare with.
  m.gbps = 1e9;
  EXPECT_FALSE(roofline_violation(m, DType::F32, nullptr, Ceilings{}, true));
}

TEST(BenchResources, PtxasLines) {
  const std::string report =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'iron_rmsnorm_f32' for 'sm_90a'\n"
      "ptxas info    : Function properties for iron_rmsnorm_f32\n"
      "ptxas         .     0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 128 bytes smem, 380 bytes cmem[0]\n";
  Resources r = parse_ptxas(report);
  ASSERT_TRUE(r.registers);
  EXPECT_EQ(*r.registers, 40);
  EXPECT_EQ(*r.spill_stores, 8);
  EXPECT_EQ(*r.spill_loads, 12);
  EXPECT_EQ(*r.shared_bytes, 128);
  // No smem line: shared stays unknown; several functions: the largest of each.
  Resources two = parse_ptxas(
      "ptxas info    : Used 16 registers, used 0 barriers, 380 bytes cmem[0]\n"
      "ptxas info    : Used 24 registers, used 0 barriers, 380 bytes cmem[0]\n");
  EXPECT_EQ(*two.registers, 24);
  EXPECT_FALSE(two.shared_bytes);
  EXPECT_TRUE(parse_ptxas("").empty());
  EXPECT_TRUE(parse_ptxas("some vulkan driver text\n").empty());
}

SweepCell cell(const std::string& label, double size, double median_us, bool latency = false,
               const std::string& dtype = "f32") {
  return SweepCell{label, "add", dtype, size, median_us, size * 12, latency};
}

TEST(BenchSweep, FlatLatencyWarns) {
  // 4096x the work, the same time, and the largest is not latency-bound: the harness is timing itself.
  auto w = sweep_warnings({cell("small", 4096, 200), cell("mid", 262144, 205), cell("large", 16777216, 210)});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("flat latency across the sweep: the harness may be measuring itself", 0), 0u) << w[0];
  // A healthy curve: time grows with size.
  EXPECT_TRUE(sweep_warnings({cell("small", 4096, 10), cell("large", 16777216, 4000)}).empty());
  // Flat but the largest is latency-bound: launch cost dominates everywhere, physics allows it.
  EXPECT_TRUE(sweep_warnings({cell("small", 4096, 5, true), cell("large", 65536, 5, true)}).empty());
  // Less than 4x growth in size: not enough to judge.
  EXPECT_TRUE(sweep_warnings({cell("small", 4096, 200), cell("large", 8192, 201)}).empty());
  // Different dtypes are different sweeps.
  EXPECT_TRUE(sweep_warnings({cell("small", 4096, 200, false, "f32"), cell("large", 16777216, 200, false, "f16")}).empty());
}

TEST(BenchSweep, FirstCellSlowestWarns) {
  // The first timed cell (a large one) is slower per byte than every other cell, the small,
  // naturally slow one included: a cold clock charged to whoever ran first.
  std::vector<SweepCell> cells = {cell("n16m", 16777216, 900000), cell("n4096", 4096, 10),
                                  cell("n64m", 67108864, 16000)};
  auto w = sweep_warnings(cells);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("first cell slowest: warm-up may be too short", 0), 0u) << w[0];
  EXPECT_NE(w[0].find("n16m"), std::string::npos);
  // The same cell not first: no warning.
  EXPECT_TRUE(sweep_warnings({cells[1], cells[0], cells[2]}).empty());
  // The first cell is the sweep's smallest: slowest per byte is what physics predicts.
  EXPECT_TRUE(sweep_warnings({cell("n4096", 4096, 10), cell("n16m", 16777216, 4000)}).empty());
  // Alone in its sweep: nothing to compare with.
  EXPECT_TRUE(sweep_warnings({cell("n16m", 16777216, 900000)}).empty());
}

}  // namespace
