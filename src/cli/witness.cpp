// Witness files and case-set digests (see witness.hpp).
#include "cli/witness.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/protocol.hpp"

namespace iron::cli::witness {

using nlohmann::json;

namespace {

constexpr const char* kKind = "iron-witness";

std::string hex128(const std::string& text) {
  XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::string bits(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(u));
  return buf;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// max_error as the runner sent it: a number, or "inf" (nothing finite to compare).
double max_error_of(const json& t) {
  auto it = t.find("max_error");
  if (it == t.end()) return std::nan("");
  if (it->is_number()) return it->get<double>();
  return HUGE_VAL;
}

// The line of a result that the digest covers.
std::string result_line(const json& r) {
  return str(r, "kernel") + "/" + str(r, "case") + "/" + str(r, "dtype") + " tol " + str(r, "tolerance_bits") + " ir " +
         str(r, "ir_hash") + " " + str(r, "status") + " err " + str(r, "max_error_bits");
}

std::string device_line(const json& d) {
  return str(d, "backend") + " | " + str(d, "name") + " | " + str(d, "driver") + " | " + str(d, "arch");
}

// The digest over a witness's device and results, recomputed from its contents.
std::string digest_of(const json& device, const json& results) {
  std::vector<std::string> lines;
  for (const json& r : results)
    if (r.is_object()) lines.push_back(result_line(r));
  std::sort(lines.begin(), lines.end());
  std::string text = "device " + device_line(device) + "\n";
  for (const std::string& l : lines) text += l + "\n";
  return hex128(text);
}

}  // namespace

std::string case_set_digest(std::vector<Case> cases) {
  std::vector<std::string> lines;
  for (const Case& c : cases) lines.push_back(c.key + " " + bits(c.tolerance));
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return hex128(text);
}

json make_witness(const json& device, const std::vector<json>& tests, const std::vector<std::string>& runner_args) {
  json results = json::array();
  std::vector<Case> cases;
  std::vector<std::string> lines;
  for (const json& t : tests) {
    double tol = t.value("tolerance", 0.0);
    double err = max_error_of(t);
    json r{{"kernel", str(t, "kernel")}, {"case", str(t, "case")}, {"dtype", str(t, "dtype")},
           {"tolerance", tol},           {"tolerance_bits", bits(tol)}, {"ir_hash", str(t, "ir_hash")},
           {"status", str(t, "status")}, {"max_error", std::isfinite(err) ? json(err) : json("inf")},
           {"max_error_bits", bits(err)}};
    cases.push_back({str(t, "kernel") + "/" + str(t, "case") + "/" + str(t, "dtype"), tol});
    lines.push_back(result_line(r));
    results.push_back(std::move(r));
  }
  json dev{{"backend", str(device, "backend")}, {"name", str(device, "name")}, {"driver", str(device, "driver")},
           {"arch", str(device, "arch")}};
  std::string args;
  for (const std::string& a : runner_args) args += (args.empty() ? "" : " ") + a;
  return json{{"v", iron::protocol::kVersion},
              {"kind", kKind},
              {"runner_args", args},
              {"device", dev},
              {"case_set", {{"count", cases.size()}, {"digest", case_set_digest(cases)}}},
              {"digest", digest_of(dev, results)},
              {"results", results}};
}

bool is_witness(const json& j) { return j.is_object() && str(j, "kind") == kKind; }

int diff_witnesses(const json& a, const json& b, const std::string& name_a, const std::string& name_b) {
  for (const auto* w : {&a, &b}) {
    if (!is_witness(*w) || !w->contains("results") || !(*w)["results"].is_array()) {
      std::cerr << "iron: " << (w == &a ? name_a : name_b) << ": not a witness file (iron test --witness)\n";
      return 2;
    }
  }
  for (const auto* w : {&a, &b}) {
    std::string recomputed = digest_of(w->value("device", json::object()), (*w)["results"]);
    if (recomputed != str(*w, "digest")) {
      std::cerr << "iron: " << (w == &a ? name_a : name_b) << ": its digest " << str(*w, "digest")
                << " does not match its contents (" << recomputed << "): the file was edited or is damaged\n";
      return 2;
    }
  }
  auto index = [](const json& w) {
    std::map<std::string, json> m;
    for (const json& r : w["results"])
      if (r.is_object()) m[str(r, "kernel") + "/" + str(r, "case") + " [" + str(r, "dtype") + "]"] = r;
    return m;
  };
  std::map<std::string, json> ra = index(a), rb = index(b);
  std::cout << "A: " << name_a << "  digest " << str(a, "digest") << "  " << ra.size() << " results on "
            << device_line(a.value("device", json::object())) << "\n"
            << "B: " << name_b << "  digest " << str(b, "digest") << "  " << rb.size() << " results on "
            << device_line(b.value("device", json::object())) << "\n";
  int changed = 0, only_a = 0, only_b = 0;
  if (device_line(a.value("device", json::object())) != device_line(b.value("device", json::object())))
    std::cout << "device differs\n";
  auto case_set = [](const json& w) {
    const json& cs = w.contains("case_set") && w["case_set"].is_object() ? w["case_set"] : json::object();
    return std::to_string(cs.value("count", 0)) + " cases, digest " + str(cs, "digest");
  };
  if (case_set(a) != case_set(b)) std::cout << "case set differs: " << case_set(a) << " vs " << case_set(b) << "\n";
  for (const auto& [key, x] : ra) {
    auto it = rb.find(key);
    if (it == rb.end()) {
      std::cout << "only in A: " << key << "\n";
      ++only_a;
      continue;
    }
    const json& y = it->second;
    std::string what;
    for (const char* f : {"status", "ir_hash", "tolerance_bits", "max_error_bits"}) {
      if (str(x, f) == str(y, f)) continue;
      std::string va = std::string(f) == "max_error_bits" ? x.value("max_error", json()).dump() : str(x, f);
      std::string vb = std::string(f) == "max_error_bits" ? y.value("max_error", json()).dump() : str(y, f);
      what += std::string(what.empty() ? "" : "; ") + (std::string(f) == "max_error_bits" ? "max_error" : f) + " " + va +
              " -> " + vb;
    }
    if (!what.empty()) {
      std::cout << "changed: " << key << ": " << what << "\n";
      ++changed;
    }
  }
  for (const auto& [key, y] : rb)
    if (!ra.count(key)) {
      std::cout << "only in B: " << key << "\n";
      ++only_b;
    }
  bool same = str(a, "digest") == str(b, "digest");
  std::cout << (same ? "same: the digests match" : "different: the digests differ") << " (" << changed << " changed, "
            << only_a << " only in A, " << only_b << " only in B)\n";
  return same ? 0 : 1;
}

}  // namespace iron::cli::witness
