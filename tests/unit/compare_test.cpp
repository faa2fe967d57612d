// Tests of the comparison core behind `iron diff` / `iron ab` (src/cli/bootstrap.hpp): the
// bootstrap interval of a median ratio (determinism, coverage), the 3% keep-bar verdicts, the
// snapshot file round trip, and the rules that pair two snapshots' results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

// The CLI is not a library the unit tests link; its comparison core is written to be included.
#include "cli/bootstrap.hpp"

namespace {

using nlohmann::json;
namespace cmp = iron::cli::compare;
namespace fs = std::filesystem;

std::vector<double> lognormal(std::mt19937_64& rng, size_t n, double median, double sigma) {
  std::normal_distribution<double> z(0.0, sigma);
  std::vector<double> v(n);
  for (double& x : v) x = median * std::exp(z(rng));
  return v;
}

json record(const std::string& kernel, const std::string& bench, const std::string& dtype, const std::string& source,
            const std::string& backend, std::vector<double> samples, const std::string& status = "ok") {
  return json{{"kernel", kernel},   {"bench", bench},   {"dtype", dtype},     {"source", source},
              {"backend", backend}, {"device", "dev"},  {"status", status},   {"message", status == "ok" ? "" : "oracle mismatch"},
              {"samples_us", samples}, {"stats", {{"median_us", cmp::median(samples)}}}};
}

TEST(CompareStats, MedianOfOddAndEvenSizes) {
  EXPECT_EQ(cmp::median({3, 1, 2}), 2);
  EXPECT_EQ(cmp::median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(cmp::median({})));
  EXPECT_DOUBLE_EQ(cmp::quantile_sorted({1, 2, 3, 4, 5}, 0.5), 3);
  EXPECT_DOUBLE_EQ(cmp::quantile_sorted({1, 2}, 0.25), 1.25);
}

TEST(CompareBootstrap, IsDeterministicForAFixedSeed) {
  std::mt19937_64 rng(1);
  auto a = lognormal(rng, 80, 100, 0.05), b = lognormal(rng, 80, 95, 0.05);
  cmp::BootstrapResult r1 = cmp::bootstrap_median_ratio(a, b), r2 = cmp::bootstrap_median_ratio(a, b);
  ASSERT_TRUE(r1.ok);
  EXPECT_EQ(r1.lo, r2.lo);
  EXPECT_EQ(r1.hi, r2.hi);
  EXPECT_EQ(r1.resamples, cmp::kMinResamples);
  EXPECT_DOUBLE_EQ(r1.ratio, cmp::median(b) / cmp::median(a));
  EXPECT_LE(r1.lo, r1.ratio);
  EXPECT_GE(r1.hi, r1.ratio);
  cmp::BootstrapOptions other;
  other.seed = 7;
  cmp::BootstrapResult r3 = cmp::bootstrap_median_ratio(a, b, other);
  EXPECT_TRUE(r3.lo != r1.lo || r3.hi != r1.hi);
  // Fewer resamples than the protocol's minimum are raised to it.
  cmp::BootstrapOptions few;
  few.resamples = 10;
  EXPECT_EQ(cmp::bootstrap_median_ratio(a, b, few).resamples, cmp::kMinResamples);
}

TEST(CompareBootstrap, NinetyFivePercentIntervalCoversTheTrueRatio) {
  // Log-normal latencies have median exp(mu), so the true ratio of medians is known exactly.
  const double truth = 1.05;
  const int trials = 200;
  int covered = 0;
  double width_small = 0, width_large = 0;
  std::mt19937_64 rng(2024);
  for (int t = 0; t < trials; ++t) {
    auto a = lognormal(rng, 101, 100.0, 0.05), b = lognormal(rng, 101, 100.0 * truth, 0.05);
    cmp::BootstrapResult r = cmp::bootstrap_median_ratio(a, b);
    ASSERT_TRUE(r.ok);
    covered += r.lo <= truth && truth <= r.hi;
    width_small += r.hi - r.lo;
  }
  for (int t = 0; t < 20; ++t) {
    auto a = lognormal(rng, 801, 100.0, 0.05), b = lognormal(rng, 801, 100.0 * truth, 0.05);
    cmp::BootstrapResult r = cmp::bootstrap_median_ratio(a, b);
    width_large += r.hi - r.lo;
  }
  double coverage = double(covered) / trials;
  // The percentile bootstrap of a median under-covers slightly at n ~ 100; 200 trials give a
  // binomial standard error of 1.5 points, so [0.88, 0.995] fails only for a real defect.
  EXPECT_GE(coverage, 0.88) << "coverage " << coverage;
  EXPECT_LE(coverage, 0.995) << "coverage " << coverage;
  // Eight times the samples: about a third of the width (1/sqrt(8) = 0.35).
  EXPECT_LT(width_large / 20, 0.5 * width_small / trials);
}

TEST(CompareBootstrap, ProcessGroupsWidenTheIntervalWhenProcessesDiffer) {
  // Each process has its own offset (a clock state): pooling the samples as if independent
  // would make the interval too narrow; resampling processes keeps that variation.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> offset(0.0, 0.03);
  cmp::Runs a, b;
  std::vector<double> pooled_a, pooled_b;
  for (int p = 0; p < 6; ++p) {
    a.push_back(lognormal(rng, 100, 100.0 * std::exp(offset(rng)), 0.01));
    b.push_back(lognormal(rng, 100, 100.0 * std::exp(offset(rng)), 0.01));
    pooled_a.insert(pooled_a.end(), a.back().begin(), a.back().end());
    pooled_b.insert(pooled_b.end(), b.back().begin(), b.back().end());
  }
  cmp::BootstrapResult grouped = cmp::bootstrap_median_ratio(a, b), flat = cmp::bootstrap_median_ratio(pooled_a, pooled_b);
  ASSERT_TRUE(grouped.ok && flat.ok);
  EXPECT_DOUBLE_EQ(grouped.ratio, flat.ratio);
  EXPECT_GT(grouped.hi - grouped.lo, 2 * (flat.hi - flat.lo));
}

TEST(CompareBootstrap, EmptyOrZeroSidesGiveNoInterval) {
  EXPECT_FALSE(cmp::bootstrap_median_ratio(std::vector<double>{}, std::vector<double>{1, 2}).ok);
  EXPECT_FALSE(cmp::bootstrap_median_ratio(std::vector<double>{0, 0, 0}, std::vector<double>{1, 2}).ok);
  EXPECT_FALSE(cmp::bootstrap_median_ratio(cmp::Runs{{}, {}}, cmp::Runs{{1.0}}).ok);
}

TEST(CompareVerdict, KeepBarNeedsTheWholeIntervalPastThreePercent) {
  auto ci = [](double lo, double hi) {
    cmp::BootstrapResult r;
    r.ok = true, r.lo = lo, r.hi = hi, r.ratio = 0.5 * (lo + hi);
    return r;
  };
  EXPECT_EQ(cmp::keep_bar_verdict(ci(0.90, 0.969)), cmp::Verdict::Faster);
  EXPECT_EQ(cmp::keep_bar_verdict(ci(0.90, 0.97)), cmp::Verdict::Faster);
  EXPECT_EQ(cmp::keep_bar_verdict(ci(0.95, 0.975)), cmp::Verdict::Same);  // real, but under the bar
  EXPECT_EQ(cmp::keep_bar_verdict(ci(0.96, 1.04)), cmp::Verdict::Same);
  EXPECT_EQ(cmp::keep_bar_verdict(ci(1.029, 1.10)), cmp::Verdict::Same);  // straddles the bar
  EXPECT_EQ(cmp::keep_bar_verdict(ci(1.031, 1.10)), cmp::Verdict::Slower);
  EXPECT_EQ(cmp::keep_bar_verdict(cmp::BootstrapResult{}), cmp::Verdict::NoData);
  EXPECT_EQ(cmp::verdict_text(cmp::Verdict::Same), "same (within noise)");
}

TEST(CompareVerdict, EndToEndOnSyntheticSamples) {
  std::mt19937_64 rng(11);
  auto base = lognormal(rng, 200, 100, 0.02);
  auto scaled = [&](double f) {
    auto v = lognormal(rng, 200, 100 * f, 0.02);
    return cmp::keep_bar_verdict(cmp::bootstrap_median_ratio(base, v));
  };
  EXPECT_EQ(scaled(0.90), cmp::Verdict::Faster);
  EXPECT_EQ(scaled(1.10), cmp::Verdict::Slower);
  EXPECT_EQ(scaled(1.00), cmp::Verdict::Same);
  EXPECT_EQ(scaled(0.99), cmp::Verdict::Same);  // a 1% change is noise by policy, however tight
}

TEST(CompareSnapshot, WriteThenReadRoundTrips) {
  fs::path dir = fs::temp_directory_path() / ("iron_compare_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::vector<json> results{record("iron_add", "n4096", "f32", "iron", "cuda", {1.0, 2.0, 3.0})};
  // A bench protocol message as the runner sends it: framing fields are dropped on the way in.
  json msg = results[0];
  msg["type"] = "bench";
  msg["v"] = 1;
  EXPECT_EQ(cmp::record_from_message(msg), results[0]);

  fs::path path = dir / "snaps" / "base.json";
  cmp::write_snapshot(path, cmp::snapshot_json("base", "2026-11-29T00:00:00Z", results));
  cmp::Snapshot s = cmp::read_snapshot(path);
  EXPECT_EQ(s.name, "base");
  EXPECT_EQ(s.created, "2026-11-29T00:00:00Z");
  ASSERT_EQ(s.results.size(), 1u);
  EXPECT_EQ(s.results[0], results[0]);
  json raw = json::parse(std::ifstream(path));
  EXPECT_EQ(raw["v"], iron::protocol::kVersion);
  EXPECT_TRUE(raw["results"].is_array());
  for (const auto& e : fs::directory_iterator(path.parent_path()))  // the temporary was renamed away
    EXPECT_EQ(e.path().filename(), "base.json");

  std::ofstream(dir / "bad.json") << "{not json";
  EXPECT_THROW(cmp::read_snapshot(dir / "bad.json"), std::runtime_error);
  std::ofstream(dir / "v2.json") << R"({"v": 2, "results": []})";
  try {
    cmp::read_snapshot(dir / "v2.json");
    ADD_FAILURE() << "a newer format version was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("v2.json"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "nokey.json") << R"({"v": 1, "results": [{"kernel": "k"}]})";
  EXPECT_THROW(cmp::read_snapshot(dir / "nokey.json"), std::runtime_error);
  EXPECT_THROW(cmp::read_snapshot(dir / "missing.json"), std::runtime_error);
  fs::remove_all(dir);
}

TEST(CompareSnapshot, NamesAndPaths) {
  EXPECT_TRUE(cmp::valid_snap_name("base-2026.11_a"));
  EXPECT_FALSE(cmp::valid_snap_name(""));
  EXPECT_FALSE(cmp::valid_snap_name("../x"));
  EXPECT_FALSE(cmp::valid_snap_name(".hidden"));
  EXPECT_FALSE(cmp::valid_snap_name("a b"));
  setenv("IRON_SNAP_DIR", "/tmp/some/snaps", 1);
  EXPECT_EQ(cmp::resolve_snapshot("base"), fs::path("/tmp/some/snaps/base.json"));
  EXPECT_EQ(cmp::resolve_snapshot("peers/torch.json"), fs::path("peers/torch.json"));
  EXPECT_EQ(cmp::resolve_snapshot("torch.json"), fs::path("torch.json"));
  unsetenv("IRON_SNAP_DIR");
  EXPECT_EQ(cmp::snap_dir(), fs::path(".iron/snaps"));
}

std::vector<double> around(double median) {
  std::vector<double> v;
  for (int i = 0; i < 41; ++i) v.push_back(median * (1 + 0.002 * ((i * 17) % 11 - 5)));
  return v;
}

// A record of `processes` fresh processes ("runs_us"), each `around(median * (1 + offset_i))`.
json multi(const std::string& source, double median, std::vector<double> offsets) {
  json r = record("iron_add", "n16m", "f32", source, "cuda", {});
  json runs = json::array();
  std::vector<double> pooled;
  for (double off : offsets) {
    std::vector<double> s = around(median * (1 + off));
    runs.push_back(s);
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  r["runs_us"] = runs;
  r["samples_us"] = pooled;
  return r;
}

TEST(CompareDiff, PeerSourcesEachGetARowAgainstIron) {
  std::vector<json> a{multi("iron", 100, {0, 0.004, -0.003})};
  std::vector<json> b{multi("torch-eager", 120, {0.002, -0.002, 0}), multi("torch-compile", 90, {0, 0.003, -0.001})};
  auto rows = cmp::diff_results(a, b);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(cmp::source_of(rows[0].b), "torch-eager");
  EXPECT_EQ(cmp::source_of(rows[0].a), "iron");
  EXPECT_EQ(rows[0].verdict, cmp::Verdict::Slower);
  EXPECT_NEAR(rows[0].delta_pct, 20.0, 0.5);
  EXPECT_EQ(cmp::source_of(rows[1].b), "torch-compile");
  EXPECT_EQ(rows[1].verdict, cmp::Verdict::Faster);
  EXPECT_TRUE(rows[1].note.empty()) << rows[1].note;
}

TEST(CompareDiff, LikeSourcesPairAndUnpairedRowsAreListed) {
  std::vector<json> a{record("iron_add", "n4096", "f32", "iron", "cuda", around(10)),
                      record("iron_add", "n4096", "f32", "torch-eager", "cuda", around(12)),
                      record("iron_add", "n4096", "f16", "iron", "cuda", around(8)),
                      record("iron_mul", "n16m", "f32", "iron", "cuda", around(100))};
  std::vector<json> b{record("iron_add", "n4096", "f32", "torch-eager", "cuda", around(12)),
                      record("iron_add", "n4096", "f32", "iron", "cuda", around(10.1)),
                      record("iron_add", "n4096", "f16", "iron", "cuda", around(8)),
                      record("gemm", "m4096_n4096_k4096", "bf16", "cublas", "cuda", around(200))};
  auto rows = cmp::diff_results(a, b);
  ASSERT_EQ(rows.size(), 5u);
  // Paired rows first, in A's order; the dtype is part of the case.
  EXPECT_EQ(cmp::source_of(rows[0].a), "torch-eager");
  EXPECT_EQ(cmp::source_of(rows[0].b), "torch-eager");
  EXPECT_EQ(cmp::source_of(rows[1].a), "iron");
  EXPECT_EQ(cmp::source_of(rows[1].b), "iron");
  EXPECT_EQ(rows[1].verdict, cmp::Verdict::Same);
  EXPECT_EQ(rows[2].dtype, "f16");
  // Then the one-sided rows: A's iron_mul, B's peer-only GEMM.
  EXPECT_TRUE(rows[3].has_a && !rows[3].has_b);
  EXPECT_EQ(rows[3].kernel, "iron_mul");
  EXPECT_EQ(rows[3].note, "only in A");
  EXPECT_TRUE(!rows[4].has_a && rows[4].has_b);
  EXPECT_EQ(rows[4].kernel, "gemm");
  EXPECT_EQ(cmp::diff_row_json(rows[4])["side"], "b_only");
  EXPECT_TRUE(cmp::diff_row_json(rows[4])["verdict"].is_null());
}

TEST(CompareDiff, PrefersTheSameBackendAndFlagsDifferences) {
  std::vector<json> a{record("iron_add", "n4m", "f32", "iron", "vulkan", around(50)),
                      record("iron_add", "n4m", "f32", "iron", "cuda", around(40))};
  std::vector<json> b{record("iron_add", "n4m", "f32", "torch-eager", "cuda", around(41))};
  auto rows = cmp::diff_results(a, b);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(cmp::str_field(rows[0].a, "backend"), "cuda");
  EXPECT_TRUE(rows[0].note.empty());
  EXPECT_EQ(cmp::str_field(rows[1].a, "backend"), "vulkan");
  EXPECT_EQ(rows[1].note, "only in A");

  std::vector<json> only_vulkan{a[0]};
  rows = cmp::diff_results(only_vulkan, b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].note.find("backends differ"), std::string::npos);
}

TEST(CompareDiff, FailedOrSamplelessResultsHaveNoVerdict) {
  std::vector<json> a{record("iron_add", "n4m", "f32", "iron", "cuda", around(50), "fail")};
  std::vector<json> b{record("iron_add", "n4m", "f32", "iron", "cuda", around(40))};
  auto rows = cmp::diff_results(a, b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].verdict, cmp::Verdict::NoData);
  EXPECT_NE(rows[0].note.find("A fail: oracle mismatch"), std::string::npos) << rows[0].note;

  json no_samples = b[0];
  no_samples.erase("samples_us");
  rows = cmp::diff_results({no_samples}, b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].verdict, cmp::Verdict::NoData);
  EXPECT_DOUBLE_EQ(rows[0].median_a, cmp::median(around(40)));  // from stats.median_us
  EXPECT_TRUE(cmp::diff_row_json(rows[0])["ci95_ratio"].is_null());
}

}  // namespace

namespace {

// Samples of one process: the process draws an offset (clock, placement) that moves its whole
// distribution, then log-normal samples around it, quantized to a 32 ns timer like the H200's.
std::vector<double> process_samples(std::mt19937_64& rng, double median, double process_sigma, size_t n) {
  std::normal_distribution<double> off(0.0, process_sigma);
  std::vector<double> v = lognormal(rng, n, median * std::exp(off(rng)), 0.03);
  for (double& x : v) x = std::round(x / 0.032) * 0.032;
  return v;
}

json snapshot_record(std::mt19937_64& rng, double median, double process_sigma, int processes) {
  json r = record("iron_add", "n4096", "f32", "iron", "cuda", {});
  json runs = json::array();
  std::vector<double> pooled;
  for (int p = 0; p < processes; ++p) {
    std::vector<double> s = process_samples(rng, median, process_sigma, 100);
    runs.push_back(s);
    pooled.insert(pooled.end(), s.begin(), s.end());
  }
  if (processes > 1) r["runs_us"] = runs;
  r["samples_us"] = pooled;
  return r;
}

}  // namespace

// Issue 7: two back-to-back snapshots of identical code said "slower" (+26 %) on a 3.6 us case,
// because the within-process bootstrap ignores that a process moves its whole distribution.
// Same distribution, a process-level offset of 6 % (sd; a 26 % gap is a 3-sigma pair): one process per side must be "same"
// (the stated floor), and three processes per side must be "same" (the measured floor).
TEST(CompareDiff, IdenticalCodeWithProcessOffsetsIsSame) {
  std::mt19937_64 rng(7);
  int single_slower_or_faster_under_old_rule = 0;
  for (int trial = 0; trial < 50; ++trial) {
    json a = snapshot_record(rng, 3.6, 0.06, 1), b = snapshot_record(rng, 3.6, 0.06, 1);
    auto rows = cmp::diff_results({a}, {b});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].verdict, cmp::Verdict::Same) << "trial " << trial << ": delta " << rows[0].delta_pct << "%, CI ["
                                                   << rows[0].ci.lo << ", " << rows[0].ci.hi << "]";
    EXPECT_FALSE(rows[0].noise.measured);
    EXPECT_DOUBLE_EQ(rows[0].noise.floor, cmp::kSingleProcessFloor);
    // The keep bar alone (the rule before the floor) calls many of these pairs a change.
    if (cmp::keep_bar_verdict(rows[0].ci) != cmp::Verdict::Same) ++single_slower_or_faster_under_old_rule;

    json a3 = snapshot_record(rng, 3.6, 0.06, 3), b3 = snapshot_record(rng, 3.6, 0.06, 3);
    auto rows3 = cmp::diff_results({a3}, {b3});
    ASSERT_EQ(rows3.size(), 1u);
    EXPECT_EQ(rows3[0].verdict, cmp::Verdict::Same) << "trial " << trial << ": delta " << rows3[0].delta_pct
                                                    << "%, floor " << rows3[0].noise.floor;
    EXPECT_TRUE(rows3[0].noise.measured);
    EXPECT_EQ(rows3[0].noise.processes_a, 3);
  }
  EXPECT_GT(single_slower_or_faster_under_old_rule, 10);
}

// A real 10 % slowdown measured with five processes per side and a small between-process
// spread must still be "slower" (and the reverse "faster").
TEST(CompareDiff, RealTenPercentChangeIsSlowerWithProcesses) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    json a = snapshot_record(rng, 50.0, 0.005, 5), b = snapshot_record(rng, 55.0, 0.005, 5);
    auto rows = cmp::diff_results({a}, {b});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].verdict, cmp::Verdict::Slower) << "trial " << trial << ": delta " << rows[0].delta_pct
                                                     << "%, CI [" << rows[0].ci.lo << ", " << rows[0].ci.hi
                                                     << "], floor " << rows[0].noise.floor;
    EXPECT_LT(rows[0].noise.floor, 0.07);
    auto back = cmp::diff_results({b}, {a});
    EXPECT_EQ(back[0].verdict, cmp::Verdict::Faster);
  }
}

TEST(CompareDiff, NoiseFloorIsATTestOnProcessMedians) {
  // Process medians 100, 102, 98 on A and 100, 101, 99 on B: pooled df 4.
  cmp::Runs a{{100}, {102}, {98}}, b{{100}, {101}, {99}};
  cmp::NoiseFloor nf = cmp::between_process_floor(a, b);
  ASSERT_TRUE(nf.measured);
  double ss = 0;
  for (double m : {100.0, 102.0, 98.0}) ss += std::pow(std::log(m) - (std::log(100.0) + std::log(102.0) + std::log(98.0)) / 3, 2);
  for (double m : {100.0, 101.0, 99.0}) ss += std::pow(std::log(m) - (std::log(100.0) + std::log(101.0) + std::log(99.0)) / 3, 2);
  double expect = std::exp(8.610 * std::sqrt(ss / 4) * std::sqrt(2.0 / 3)) - 1;
  EXPECT_NEAR(nf.floor, expect, 1e-12);
  // One process on each side: nothing measures the between-process variation.
  EXPECT_FALSE(cmp::between_process_floor({{1, 2}}, {{1, 2}}).measured);
  EXPECT_EQ(cmp::t_critical_999(4), 8.610);
  EXPECT_EQ(cmp::t_critical_999(11), 4.587);
  EXPECT_EQ(cmp::t_critical_999(1000), 3.373);
}
