// The comparison core behind `iron snap`, `iron diff`, `iron ab` and `iron report`: the bootstrap
// confidence interval of a median ratio, the 3% keep-bar verdict, snapshot files, and the rules
// that pair two snapshots' results. Header-only (every definition inline): compare_cli.cpp,
// report.cpp and tests/unit/compare_test.cpp (which does not link the CLI) include it.
#ifndef IRON_CLI_BOOTSTRAP_HPP
#define IRON_CLI_BOOTSTRAP_HPP

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/protocol.hpp"

namespace iron::cli::compare {

using nlohmann::json;
namespace fs = std::filesystem;

// §6.2 of the engineering guide: a win under ~3% is inside single-launch noise.
constexpr double kKeepBar = 0.03;
constexpr int kMinResamples = 2000;
// Fixed, so the same two sample sets always give the same interval (a diff is reproducible).
constexpr uint64_t kBootstrapSeed = 0x1a2b3c4d5e6f7081ull;

// ---------------------------------------------------------------------------------------------
// Statistics

// Median of a copy (nth_element reorders); the mean of the two middle values for even sizes.
inline double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (v.size() % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return 0.5 * (lo + hi);
}

// Linear interpolation between order statistics of a sorted vector (numpy's default).
inline double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return std::nan("");
  double pos = q * double(sorted.size() - 1);
  size_t i = size_t(pos);
  if (i + 1 >= sorted.size()) return sorted.back();
  double frac = pos - double(i);
  return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

// Samples of one side, grouped by the process that produced them. `iron diff` has one group per
// side; `iron ab` has one per fresh runner process.
using Runs = std::vector<std::vector<double>>;

struct BootstrapResult {
  bool ok = false;     // false: a side has no samples or a zero median
  double ratio = 0;    // median(B) / median(A) of the pooled samples: < 1 means B is faster
  double lo = 0, hi = 0;  // the central `confidence` interval of the resampled ratio
  int resamples = 0;
};

struct BootstrapOptions {
  int resamples = kMinResamples;
  double confidence = 0.95;
  uint64_t seed = kBootstrapSeed;
};

namespace detail {
// An index in [0, n) from 64 random bits (Lemire's multiply-shift): unlike
// std::uniform_int_distribution its output is specified, so the interval is the same with every
// standard library.
inline size_t pick(std::mt19937_64& rng, size_t n) {
  return size_t((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

// One bootstrap replicate of a side: resample its runs with replacement, then samples within
// each chosen run. With a single run this is the ordinary bootstrap of the samples; with
// several, process-to-process variation (clock state, placement) widens the interval as it
// should, instead of being averaged away by pooling.
inline double resampled_median(std::mt19937_64& rng, const Runs& runs, std::vector<double>& buf) {
  buf.clear();
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::vector<double>& run = runs[runs.size() == 1 ? 0 : pick(rng, runs.size())];
    for (size_t i = 0; i < run.size(); ++i) buf.push_back(run[pick(rng, run.size())]);
  }
  if (buf.empty()) return std::nan("");
  size_t mid = buf.size() / 2;
  std::nth_element(buf.begin(), buf.begin() + mid, buf.end());
  double hi = buf[mid];
  if (buf.size() % 2) return hi;
  return 0.5 * (*std::max_element(buf.begin(), buf.begin() + mid) + hi);
}

inline Runs non_empty(const Runs& runs) {
  Runs out;
  for (const auto& r : runs)
    if (!r.empty()) out.push_back(r);
  return out;
}
}  // namespace detail

// Percentile-bootstrap confidence interval of median(B) / median(A).
inline BootstrapResult bootstrap_median_ratio(const Runs& a_runs, const Runs& b_runs, const BootstrapOptions& opt = {}) {
  BootstrapResult res;
  Runs a = detail::non_empty(a_runs), b = detail::non_empty(b_runs);
  if (a.empty() || b.empty()) return res;
  std::vector<double> pooled_a, pooled_b;
  for (const auto& r : a) pooled_a.insert(pooled_a.end(), r.begin(), r.end());
  for (const auto& r : b) pooled_b.insert(pooled_b.end(), r.begin(), r.end());
  double ma = median(pooled_a), mb = median(pooled_b);
  if (!(ma > 0) || !std::isfinite(mb)) return res;
  res.ratio = mb / ma;
  res.resamples = std::max(opt.resamples, kMinResamples);
  std::mt19937_64 rng(opt.seed);
  std::vector<double> ratios, buf;
  ratios.reserve(res.resamples);
  for (int i = 0; i < res.resamples; ++i) {
    double ra = detail::resampled_median(rng, a, buf);
    double rb = detail::resampled_median(rng, b, buf);
    if (ra > 0) ratios.push_back(rb / ra);
  }
  if (ratios.empty()) return res;
  std::sort(ratios.begin(), ratios.end());
  double alpha = 1.0 - opt.confidence;
  res.lo = quantile_sorted(ratios, alpha / 2);
  res.hi = quantile_sorted(ratios, 1.0 - alpha / 2);
  res.ok = true;
  return res;
}

inline BootstrapResult bootstrap_median_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                              const BootstrapOptions& opt = {}) {
  return bootstrap_median_ratio(Runs{a}, Runs{b}, opt);
}

// The keep bar on the time ratio B/A: "faster" only when the whole interval is at or below
// 1 - bar, "slower" only when it is at or above 1 + bar. A real but smaller difference, or an
// interval that straddles the bar, is not a documented win or loss.
enum class Verdict { Faster, Slower, Same, NoData };

inline Verdict keep_bar_verdict(const BootstrapResult& ci, double bar = kKeepBar) {
  if (!ci.ok) return Verdict::NoData;
  if (ci.hi <= 1.0 - bar) return Verdict::Faster;
  if (ci.lo >= 1.0 + bar) return Verdict::Slower;
  return Verdict::Same;
}

// ---------------------------------------------------------------------------------------------
// The between-process noise floor of `iron diff` (docs/benchmarks.md, "Verdicts across
// processes"). The samples of one process are not independent of each other: clocks, placement
// and cache state are fixed for the life of a process and move its whole distribution, so two
// processes of identical code can differ by far more than their within-process bootstrap
// interval (26 % on a 3.6 us H200 kernel). A diff therefore treats each process as one
// observation, its median: with at least two processes on a side, the spread of log process
// medians around their side's mean gives a between-process standard deviation s (pooled over
// the sides that have two or more), and a difference is only a verdict when the interval also
// clears floor = t(0.9995, df) * s * sqrt(1/n_a + 1/n_b) — a two-sample t-test on process
// medians at a two-sided 0.1 %, strict enough that a whole snapshot of ~50 rows of identical
// code stays "same" with about 95 % probability. With one process on both sides nothing
// measures the between-process variation, and the floor is kSingleProcessFloor.
constexpr double kSingleProcessFloor = 0.30;

// Two-sided 0.1 % critical values of Student's t, by degrees of freedom (rounded up: a df
// between two rows takes the smaller df's larger value).
inline double t_critical_999(int df) {
  static const std::pair<int, double> table[] = {{1, 636.6}, {2, 31.60}, {3, 12.92}, {4, 8.610}, {5, 6.869},
                                                 {6, 5.959}, {7, 5.408}, {8, 5.041}, {9, 4.781}, {10, 4.587},
                                                 {12, 4.318}, {15, 4.073}, {20, 3.850}, {30, 3.646}, {60, 3.460},
                                                 {120, 3.373}};
  if (df < 1) return std::nan("");
  double t = 3.291;  // df -> infinity
  for (auto it = std::rbegin(table); it != std::rend(table); ++it)
    if (df >= it->first) return it->second;
  return t;
}

struct NoiseFloor {
  double floor = kSingleProcessFloor;  // relative: 0.05 means +-5 %
  int processes_a = 0, processes_b = 0;
  bool measured = false;  // false: one process per side, the stated floor applies
};

inline NoiseFloor between_process_floor(const Runs& a, const Runs& b) {
  NoiseFloor nf;
  nf.processes_a = int(a.size());
  nf.processes_b = int(b.size());
  double ss = 0;
  int df = 0;
  for (const Runs* side : {&a, &b}) {
    if (side->size() < 2) continue;
    std::vector<double> logs;
    for (const auto& run : *side) {
      double m = median(run);
      if (m > 0) logs.push_back(std::log(m));
    }
    if (logs.size() < 2) continue;
    double mean = 0;
    for (double x : logs) mean += x;
    mean /= double(logs.size());
    for (double x : logs) ss += (x - mean) * (x - mean);
    df += int(logs.size()) - 1;
  }
  if (df == 0 || nf.processes_a == 0 || nf.processes_b == 0) return nf;
  double s = std::sqrt(ss / df);
  double log_floor = t_critical_999(df) * s * std::sqrt(1.0 / nf.processes_a + 1.0 / nf.processes_b);
  nf.floor = std::exp(log_floor) - 1.0;
  nf.measured = true;
  return nf;
}

// The diff verdict: the keep bar or the between-process floor, whichever is larger.
inline Verdict diff_verdict(const BootstrapResult& ci, const NoiseFloor& nf, double bar = kKeepBar) {
  return keep_bar_verdict(ci, std::max(bar, nf.floor));
}

inline std::string verdict_text(Verdict v) {
  switch (v) {
    case Verdict::Faster: return "faster";
    case Verdict::Slower: return "slower";
    case Verdict::Same: return "same (within noise)";
    case Verdict::NoData: return "n/a";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Bench records (protocol.hpp): accessors that tolerate missing or null fields, since peer files
// are written by another program.

inline std::string str_field(const json& r, const char* key, const std::string& fallback = "") {
  auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : fallback;
}

inline double num_field(const json& r, const char* key, double fallback = std::nan("")) {
  auto it = r.find(key);
  return it != r.end() && it->is_number() ? it->get<double>() : fallback;
}

inline double stat_field(const json& r, const char* key) {
  auto it = r.find("stats");
  return it != r.end() && it->is_object() ? num_field(*it, key) : std::nan("");
}

inline double metric_field(const json& r, const char* key) {
  auto it = r.find("metrics");
  return it != r.end() && it->is_object() ? num_field(*it, key) : std::nan("");
}

// The samples of a record grouped by runner process: "runs_us" (one array per process, written
// by `iron snap --processes N`) when present, else "samples_us" as one process.
inline Runs runs_of(const json& r) {
  Runs out;
  auto it = r.find("runs_us");
  if (it != r.end() && it->is_array()) {
    for (const json& run : *it) {
      if (!run.is_array()) continue;
      std::vector<double> v;
      for (const json& s : run)
        if (s.is_number() && std::isfinite(s.get<double>())) v.push_back(s.get<double>());
      if (!v.empty()) out.push_back(std::move(v));
    }
    if (!out.empty()) return out;
  }
  auto sit = r.find("samples_us");
  if (sit == r.end() || !sit->is_array()) return out;
  std::vector<double> v;
  for (const json& s : *sit)
    if (s.is_number() && std::isfinite(s.get<double>())) v.push_back(s.get<double>());
  if (!v.empty()) out.push_back(std::move(v));
  return out;
}

inline std::vector<double> samples_of(const json& r) {
  std::vector<double> out;
  auto it = r.find("samples_us");
  if (it == r.end() || !it->is_array()) return out;
  for (const json& s : *it)
    if (s.is_number() && std::isfinite(s.get<double>())) out.push_back(s.get<double>());
  return out;
}

inline bool is_ok(const json& r) { return str_field(r, "status", "ok") == "ok"; }

// The median the comparison uses: of the samples when present (the same data the interval is
// computed from), else the recorded statistic.
inline double median_of(const json& r) {
  std::vector<double> s = samples_of(r);
  return s.empty() ? stat_field(r, "median_us") : median(std::move(s));
}

inline double min_of(const json& r) {
  std::vector<double> s = samples_of(r);
  return s.empty() ? stat_field(r, "min_us") : *std::min_element(s.begin(), s.end());
}

inline std::string source_of(const json& r) { return str_field(r, "source", "iron"); }

inline std::string case_name(const json& r) { return str_field(r, "kernel", "?") + "/" + str_field(r, "bench", "?"); }

// ---------------------------------------------------------------------------------------------
// Snapshot files: {"v", "name", "created", "results": [bench records]}.

struct Snapshot {
  std::string name, created;
  fs::path path;
  std::vector<json> results;
};

inline fs::path snap_dir() {
  if (const char* env = std::getenv("IRON_SNAP_DIR"); env && *env) return env;
  return fs::path(".iron") / "snaps";
}

// Names become file names: keep them to a portable alphabet.
inline bool valid_snap_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; });
}

// A snapshot argument is a path when it names an existing file or looks like one (a slash or a
// .json suffix); otherwise it is a name in the snapshot directory.
inline fs::path resolve_snapshot(const std::string& arg) {
  std::error_code ec;
  bool looks_like_path = arg.find('/') != std::string::npos ||
                         (arg.size() > 5 && arg.compare(arg.size() - 5, 5, ".json") == 0);
  if (looks_like_path || fs::is_regular_file(arg, ec)) return arg;
  return snap_dir() / (arg + ".json");
}

inline std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A bench protocol message becomes a snapshot record: the framing fields go (the file carries
// the version once), everything else stays as the runner sent it.
inline json record_from_message(json msg) {
  msg.erase("v");
  msg.erase("type");
  return msg;
}

inline json snapshot_json(const std::string& name, const std::string& created, const std::vector<json>& results) {
  return json{{"v", iron::protocol::kVersion}, {"name", name}, {"created", created}, {"results", results}};
}

// Throws std::runtime_error naming the file and the problem.
inline Snapshot parse_snapshot(const json& j, const fs::path& path) {
  auto fail = [&](const std::string& why) { return std::runtime_error(path.string() + ": " + why); };
  if (!j.is_object()) throw fail("not a snapshot (expected a JSON object)");
  if (j.contains("v") && j["v"] != iron::protocol::kVersion)
    throw fail("snapshot format version " + j["v"].dump() + ", this iron reads " + std::to_string(iron::protocol::kVersion));
  if (!j.contains("results") || !j["results"].is_array()) throw fail("no \"results\" array");
  Snapshot s;
  s.path = path;
  s.name = str_field(j, "name", path.stem().string());
  s.created = str_field(j, "created");
  for (const json& r : j["results"]) {
    if (!r.is_object() || !r.contains("kernel") || !r.contains("bench") || !r.contains("dtype"))
      throw fail("a result without kernel, bench and dtype: " + r.dump().substr(0, 120));
    s.results.push_back(record_from_message(r));
  }
  return s;
}

inline Snapshot read_snapshot(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (no such snapshot? `iron snap --list` shows them)");
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path.string() + ": not valid JSON");
  return parse_snapshot(j, path);
}

// Written to a temporary file and renamed, so an interrupted run never leaves half a baseline.
inline void write_snapshot(const fs::path& path, const json& snapshot) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error(tmp.string() + ": cannot write");
    out << snapshot.dump(1) << "\n";
    if (!out.flush()) throw std::runtime_error(tmp.string() + ": write failed");
  }
  fs::rename(tmp, path);
}

// ---------------------------------------------------------------------------------------------
// Diff: pairing the results of A and B.
//
// Results are matched by (kernel, bench, dtype). Within one case, each B result is paired with
// the A result of the same source and backend, else the same source, else A's Iron result (same
// backend first), else A's only result. So a snapshot diffed against a peer file shows one row
// per peer source (torch-eager, torch-compile, ...) against Iron, and two snapshots of the same
// sources pair like with like. B results with no partner, and A results no B result chose, are
// one-sided rows.

struct DiffRow {
  std::string kernel, bench, dtype;
  bool has_a = false, has_b = false;
  json a, b;  // the records (null on the missing side)
  double median_a = std::nan(""), median_b = std::nan(""), min_a = std::nan(""), min_b = std::nan("");
  double delta_pct = std::nan("");  // (median B / median A - 1) * 100
  BootstrapResult ci;
  NoiseFloor noise;  // the between-process floor the verdict had to clear (with the keep bar)
  Verdict verdict = Verdict::NoData;
  std::string note;  // why there is no verdict, or a caveat (backends differ, ...)
};

using CaseKey = std::tuple<std::string, std::string, std::string>;

inline CaseKey case_key(const json& r) {
  return {str_field(r, "kernel"), str_field(r, "bench"), str_field(r, "dtype")};
}

inline DiffRow compare_records(const json& a, const json& b, const BootstrapOptions& opt, double bar) {
  DiffRow row;
  std::tie(row.kernel, row.bench, row.dtype) = case_key(a);
  row.has_a = row.has_b = true;
  row.a = a;
  row.b = b;
  row.median_a = median_of(a);
  row.median_b = median_of(b);
  row.min_a = min_of(a);
  row.min_b = min_of(b);
  if (row.median_a > 0 && std::isfinite(row.median_b)) row.delta_pct = (row.median_b / row.median_a - 1.0) * 100.0;
  std::vector<std::string> notes;
  if (!is_ok(a)) notes.push_back("A " + str_field(a, "status") + ": " + str_field(a, "message"));
  if (!is_ok(b)) notes.push_back("B " + str_field(b, "status") + ": " + str_field(b, "message"));
  if (notes.empty()) {
    Runs ra = runs_of(a), rb = runs_of(b);
    if (ra.empty() || rb.empty()) notes.push_back("no samples_us: no interval");
    else {
      row.ci = bootstrap_median_ratio(ra, rb, opt);
      row.noise = between_process_floor(ra, rb);
      row.verdict = diff_verdict(row.ci, row.noise, bar);
    }
  }
  std::string ba = str_field(a, "backend"), bb = str_field(b, "backend");
  if (ba != bb) notes.push_back("backends differ (" + ba + " vs " + bb + ")");
  std::string da = str_field(a, "device"), db = str_field(b, "device");
  if (da != db) notes.push_back("devices differ (" + da + " vs " + db + ")");
  for (size_t i = 0; i < notes.size(); ++i) row.note += (i ? "; " : "") + notes[i];
  return row;
}

inline std::vector<DiffRow> diff_results(const std::vector<json>& a, const std::vector<json>& b,
                                         const BootstrapOptions& opt = {}, double bar = kKeepBar) {
  std::map<CaseKey, std::vector<const json*>> by_a, by_b;
  for (const json& r : a) by_a[case_key(r)].push_back(&r);
  for (const json& r : b) by_b[case_key(r)].push_back(&r);
  // Cases in the order A lists them (the runner's: kernel, bench, dtype as declared), then B's new ones.
  std::vector<CaseKey> keys;
  std::map<CaseKey, bool> seen;
  for (const auto* side : {&a, &b})
    for (const json& r : *side)
      if (!seen[case_key(r)]) seen[case_key(r)] = true, keys.push_back(case_key(r));

  std::vector<DiffRow> rows, one_sided;
  for (const CaseKey& key : keys) {
    std::vector<const json*>& as = by_a[key];
    std::vector<const json*>& bs = by_b[key];
    std::vector<bool> used(as.size(), false);
    auto find_a = [&](const json& rb) -> int {
      std::string src = source_of(rb), be = str_field(rb, "backend");
      auto first = [&](auto pred) -> int {
        for (size_t i = 0; i < as.size(); ++i)
          if (pred(*as[i])) return int(i);
        return -1;
      };
      int i = first([&](const json& r) { return source_of(r) == src && str_field(r, "backend") == be; });
      if (i < 0) i = first([&](const json& r) { return source_of(r) == src; });
      if (i < 0) i = first([&](const json& r) { return source_of(r) == "iron" && str_field(r, "backend") == be; });
      if (i < 0) i = first([&](const json& r) { return source_of(r) == "iron"; });
      if (i < 0 && as.size() == 1) i = 0;
      return i;
    };
    for (const json* rb : bs) {
      int i = find_a(*rb);
      if (i < 0) {
        DiffRow row;
        std::tie(row.kernel, row.bench, row.dtype) = key;
        row.has_b = true;
        row.b = *rb;
        row.median_b = median_of(*rb);
        row.min_b = min_of(*rb);
        row.note = "only in B";
        one_sided.push_back(std::move(row));
        continue;
      }
      used[i] = true;
      rows.push_back(compare_records(*as[i], *rb, opt, bar));
    }
    for (size_t i = 0; i < as.size(); ++i) {
      if (used[i]) continue;
      DiffRow row;
      std::tie(row.kernel, row.bench, row.dtype) = key;
      row.has_a = true;
      row.a = *as[i];
      row.median_a = median_of(*as[i]);
      row.min_a = min_of(*as[i]);
      row.note = "only in A";
      one_sided.push_back(std::move(row));
    }
  }
  rows.insert(rows.end(), one_sided.begin(), one_sided.end());
  return rows;
}

inline json nullable(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

inline json diff_row_json(const DiffRow& r) {
  json j{{"kernel", r.kernel}, {"bench", r.bench}, {"dtype", r.dtype}};
  j["side"] = r.has_a && r.has_b ? "both" : r.has_a ? "a_only" : "b_only";
  j["source_a"] = r.has_a ? json(source_of(r.a)) : json(nullptr);
  j["source_b"] = r.has_b ? json(source_of(r.b)) : json(nullptr);
  j["backend_a"] = r.has_a ? json(str_field(r.a, "backend")) : json(nullptr);
  j["backend_b"] = r.has_b ? json(str_field(r.b, "backend")) : json(nullptr);
  j["median_a_us"] = nullable(r.median_a);
  j["median_b_us"] = nullable(r.median_b);
  j["min_a_us"] = nullable(r.min_a);
  j["min_b_us"] = nullable(r.min_b);
  j["delta_pct"] = nullable(r.delta_pct);
  if (r.ci.ok)
    j["ci95_ratio"] = {{"lo", r.ci.lo}, {"hi", r.ci.hi}, {"point", r.ci.ratio}, {"resamples", r.ci.resamples}};
  else
    j["ci95_ratio"] = nullptr;
  if (r.ci.ok)
    j["noise_floor"] = {{"floor", r.noise.floor}, {"measured", r.noise.measured}, {"processes_a", r.noise.processes_a},
                        {"processes_b", r.noise.processes_b}};
  else
    j["noise_floor"] = nullptr;
  j["verdict"] = r.has_a && r.has_b ? json(verdict_text(r.verdict)) : json(nullptr);
  j["note"] = r.note;
  return j;
}

}  // namespace iron::cli::compare

#endif  // IRON_CLI_BOOTSTRAP_HPP
