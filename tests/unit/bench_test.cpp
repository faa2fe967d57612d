// The bench engine end to end on the SIMT interpreter, in process (runner_main with stdout
// captured): the `bench` record's fields, a failing oracle is never timed, the calibration
// cache feeds pct_measured_*, and the device lock excludes a second holder. Tiny benches only.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device_specs.hpp"
#include "harness/runner.hpp"

using namespace iron;
using nlohmann::json;

namespace {

// A private calibration cache and lock directory, so the developer's own files never leak in.
class BenchEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("iron_bench_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
    setenv("IRON_BENCH_LOCK_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("XDG_CACHE_HOME");
    unsetenv("IRON_BENCH_LOCK_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs the runner's engine with `args` and returns the exit code and every message.
  int run(std::vector<std::string> args, std::vector<json>& out) {
    args.insert(args.begin(), "iron-runner");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::ostringstream captured;
    std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
    int rc = runner_main(int(args.size()), argv.data());
    std::cout.rdbuf(old);
    std::istringstream lines(captured.str());
    for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line));
    return rc;
  }

  static std::vector<json> of_type(const std::vector<json>& msgs, const std::string& type) {
    std::vector<json> r;
    for (const json& m : msgs)
      if (m["type"] == type) r.push_back(m);
    return r;
  }

  std::filesystem::path dir_;
};

TEST_F(BenchEngine, RecordFieldsOnInterp) {
  std::vector<json> msgs;
  int rc = run({"bench", "--backend", "interp", "-f", "iron_add/n4096", "--dtype", "f32", "--samples", "5",
                "--warmup", "1"},
               msgs);
  EXPECT_EQ(rc, 0);
  auto benches = of_type(msgs, "bench");
  ASSERT_EQ(benches.size(), 1u);
  const json& b = benches[0];
  EXPECT_EQ(b["kernel"], "iron_add");
  EXPECT_EQ(b["bench"], "n4096");
  EXPECT_EQ(b["dtype"], "f32");
  EXPECT_EQ(b["backend"], "interp");
  EXPECT_EQ(b["device"], "Iron SIMT interpreter");
  EXPECT_EQ(b["source"], "iron");
  EXPECT_EQ(b["status"], "ok");
  EXPECT_EQ(b["correctness"]["status"], "pass");
  EXPECT_LE(b["correctness"]["max_error"].get<double>(), 1e-6);
  EXPECT_EQ(b["warmup"], 1);
  EXPECT_EQ(b["flush_l2"], false);
  ASSERT_EQ(b["samples_us"].size(), 5u);
  EXPECT_EQ(b["stats"]["n"], 5);
  double median = b["stats"]["median_us"];
  EXPECT_GT(median, 0);
  EXPECT_LE(b["stats"]["min_us"].get<double>(), median);
  EXPECT_LE(median, b["stats"]["p95_us"].get<double>());
  EXPECT_LE(b["stats"]["p95_us"].get<double>(), b["stats"]["p99_us"].get<double>());
  EXPECT_TRUE(b["stats"]["cv"].is_number());
  EXPECT_DOUBLE_EQ(b["bytes"].get<double>(), 3.0 * 4096 * 4);
  EXPECT_DOUBLE_EQ(b["flops"].get<double>(), 4096);
  EXPECT_EQ(b["sweep"], "iron_add");
  EXPECT_DOUBLE_EQ(b["size"].get<double>(), 4096);
  const json& m = b["metrics"];
  EXPECT_NEAR(m["gbps"].get<double>(), 3.0 * 4096 * 4 / median / 1e3, 1e-9);
  EXPECT_NEAR(m["gflops"].get<double>(), 4096 / median / 1e3, 1e-9);
  EXPECT_NEAR(m["intensity"].get<double>(), 4096 / (3.0 * 4096 * 4), 1e-12);
  // The interpreter is in no datasheet and not calibrated here: null percentages.
  for (const char* k : {"pct_peak_bw", "pct_peak_compute", "pct_measured_bw", "pct_measured_compute"})
    EXPECT_TRUE(m[k].is_null()) << k;
  EXPECT_TRUE(b["resources"].is_null());  // the interpreter has no ptxas report
  auto summary = of_type(msgs, "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0]["passed"], 1);
  EXPECT_EQ(summary[0]["failed"], 0);
  // Progress markers precede the record.
  ASSERT_EQ(of_type(msgs, "bench_start").size(), 1u);
  EXPECT_EQ(of_type(msgs, "bench_start")[0]["total"], 1);
}

// iron_mul takes iron_add's parameters, so the override dispatches fine and computes products
// where the oracle wants sums: a FAIL with the first mismatch, and no samples at all.
TEST_F(BenchEngine, FailingOracleIsNeverTimed) {
  std::vector<json> msgs;
  int rc = run({"bench", "--backend", "interp", "-f", "iron_add/n4096", "--kernel-override", "iron_mul",
                "--samples", "3"},
               msgs);
  EXPECT_EQ(rc, 1);
  auto benches = of_type(msgs, "bench");
  ASSERT_EQ(benches.size(), 3u);  // f32, f16, bf16
  for (const json& b : benches) {
    EXPECT_EQ(b["status"], "fail") << b.dump();
    EXPECT_EQ(b["kernel"], "iron_add");
    EXPECT_EQ(b["kernel_override"], "iron_mul");
    EXPECT_EQ(b["correctness"]["status"], "fail");
    EXPECT_NE(b["message"].get<std::string>().find("output 'out'[0]"), std::string::npos) << b["message"];
    EXPECT_TRUE(b["samples_us"].empty());
    EXPECT_TRUE(b["stats"].is_null());
    EXPECT_TRUE(b["metrics"].is_null());
  }
  EXPECT_EQ(of_type(msgs, "summary")[0]["failed"], 3);
}

TEST_F(BenchEngine, OverrideWithOtherParametersFails) {
  std::vector<json> msgs;
  EXPECT_EQ(run({"bench", "--backend", "interp", "-f", "iron_add/n4096", "--dtype", "f32", "--kernel-override",
                 "iron_silu"},
                msgs),
            1);
  auto benches = of_type(msgs, "bench");
  ASSERT_EQ(benches.size(), 1u);
  EXPECT_EQ(benches[0]["status"], "fail");
  EXPECT_NE(benches[0]["message"].get<std::string>().find("same names"), std::string::npos);
  EXPECT_TRUE(benches[0]["samples_us"].empty());
}

TEST_F(BenchEngine, UsageErrors) {
  std::vector<json> msgs;
  EXPECT_EQ(run({"bench", "--backend", "interp", "-f", "no_such_bench"}, msgs), 2);
  ASSERT_EQ(of_type(msgs, "error").size(), 1u);
  EXPECT_NE(of_type(msgs, "error")[0]["message"].get<std::string>().find("no benchmark matches"), std::string::npos);
  msgs.clear();
  EXPECT_EQ(run({"bench", "--backend", "interp", "--samples", "0"}, msgs), 2);
  msgs.clear();
  EXPECT_EQ(run({"bench", "--backend", "interp", "--kernel-override", "no_such_kernel"}, msgs), 2);
}

TEST_F(BenchEngine, CalibrationCacheFeedsMeasuredPercentages) {
  std::vector<DeviceInfo> devs = list_devices(Backend::Interp);
  ASSERT_EQ(devs.size(), 1u);
  bench::store_calibration(devs[0], bench::Ceilings{0.5, 0.25}, "{}");
  EXPECT_EQ(bench::load_calibration(devs[0]).copy_gbps, 0.5);
  std::vector<json> msgs;
  ASSERT_EQ(run({"bench", "--backend", "interp", "-f", "iron_silu/t1_h11008", "--dtype", "f32", "--samples", "3",
                 "--warmup", "1"},
                msgs),
            0);
  const json m = of_type(msgs, "bench").at(0)["metrics"];
  EXPECT_NEAR(m["pct_measured_bw"].get<double>(), 100 * m["gbps"].get<double>() / 0.5, 1e-9);
  EXPECT_NEAR(m["pct_measured_compute"].get<double>(), 100 * m["gflops"].get<double>() / 0.25, 1e-9);
  EXPECT_TRUE(m["bottleneck"].is_string());  // with ceilings there is always a verdict
}

std::atomic<bool> g_waited{false};
void note_wait(const std::string&) { g_waited = true; }

TEST_F(BenchEngine, DeviceLockExcludesASecondHolder) {
  std::atomic<bool> acquired{false};
  std::thread second;
  {
    bench::DeviceLock first(Backend::Interp);
    g_waited = false;
    second = std::thread([&] {
      bench::DeviceLock again(Backend::Interp, &note_wait);
      acquired = true;
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!g_waited && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(g_waited.load());
    EXPECT_FALSE(acquired.load());
  }
  second.join();
  EXPECT_TRUE(acquired.load());
  EXPECT_EQ(bench::DeviceLock::path_for(Backend::Vulkan), dir_.string() + "/iron-bench-vulkan.lock");
}

}  // namespace
