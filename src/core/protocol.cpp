// JSON-lines framing and typed decoding for the CLI <-> runner protocol (see protocol.hpp).
#include "core/protocol.hpp"

#include <algorithm>

namespace iron::protocol {

using nlohmann::json;

std::string encode(json msg) {
  msg["v"] = kVersion;
  return msg.dump(-1, ' ', false, json::error_handler_t::replace);
}

const std::vector<MessageSpec>& schema() {
  using K = Kind;
  constexpr Need R = Need::Required, O = Need::Optional, A = Need::IfAvailable;
  static const std::vector<MessageSpec> table = {
      {"hello", {{"runner_version", K::String, R}}, {}},
      {"device",
       {{"backend", K::String, R}, {"available", K::Bool, R}, {"why", K::String, O}, {"name", K::String, A},
        {"driver", K::String, A}, {"arch", K::String, A}, {"lane_width", K::Integer, A},
        {"max_threads_per_group", K::Integer, O}, {"shared_memory_bytes", K::Integer, O},
        {"shared_memory_optin_bytes", K::Integer, O}, {"memory_bytes", K::Number, O},
        {"f16", K::Bool, O}, {"bf16", K::Bool, O}, {"f32_denormals", K::String, O}, {"float_controls", K::String, O}},
       {}},
      {"test_start", {{"kernel", K::String, R}, {"case", K::String, R}, {"dtype", K::String, R}}, {}},
      {"test",
       {{"kernel", K::String, R}, {"case", K::String, R}, {"dtype", K::String, R}, {"backend", K::String, R},
        {"status", K::String, R}, {"max_error", K::NumberOrInf, R}, {"tolerance", K::Number, R},
        {"message", K::String, O}, {"ms", K::Number, O}, {"ir_hash", K::String, O}, {"tolerance_unit", K::String, O},
        {"compared", K::Integer, O}},
       {"pass", "fail", "skip"}},
      {"kernel",
       {{"name", K::String, R}, {"mode", K::String, R}, {"dtypes", K::StringArray, R}, {"file", K::String, R},
        {"line", K::Integer, R}, {"family", K::String, O}, {"variant", K::String, O}},
       {}},
      {"family",
       {{"name", K::String, R}, {"suffix", K::String, R}, {"axes", K::Array, R}, {"kernels", K::Array, R},
        {"file", K::String, R}, {"line", K::Integer, R}},
       {}},
      {"selector", {{"name", K::String, R}, {"file", K::String, R}, {"line", K::Integer, R}}, {}},
      {"plan",
       {{"family", K::String, R}, {"dtype", K::String, R}, {"reason", K::String, R}, {"steps", K::Array, R}}, {}},
      {"run_output",
       {{"name", K::String, R}, {"dtype", K::String, R}, {"count", K::Integer, R}, {"sum", K::Number, R},
        {"min", K::NumberOrNull, R}, {"max", K::NumberOrNull, R}, {"nonfinite", K::Integer, R}},
       {}},
      {"run_timing", {{"samples", K::Integer, R}, {"min_us", K::Number, R}, {"median_us", K::Number, R}}, {}},
      {"test_case", {{"kernel", K::String, R}, {"case", K::String, R}, {"dtypes", K::Array, O}}, {}},
      {"summary",
       {{"passed", K::Integer, R}, {"failed", K::Integer, R}, {"skipped", K::Integer, O}, {"kernels", K::Integer, O},
        {"pipeline_ms", K::Number, O}},
       {}},
      {"text", {{"text", K::String, R}}, {}},
      {"artifact",
       {{"kernel", K::String, R}, {"dtype", K::String, R}, {"target", K::String, R}, {"path", K::String, R},
        {"ok", K::Bool, R}, {"message", K::String, O}},
       {}},
      {"fuzz_mismatch",
       {{"seed", K::Integer, R}, {"mode", K::String, R}, {"reference", K::String, R}, {"backend", K::String, R},
        {"lane_width", K::Integer, O}, {"launch", K::String, O}, {"difference", K::String, R},
        {"reproduce", K::String, O}, {"ir", K::String, O}, {"source", K::String, O}, {"reduced", K::Object, O}},
       {}},
      {"fuzz_summary",
       {{"programs", K::Integer, R}, {"mismatches", K::Integer, R}, {"first_seed", K::Integer, O},
        {"last_seed", K::Integer, O}, {"skipped", K::Integer, O}, {"backends", K::String, O},
        {"excluded", K::String, O}, {"relaxed", K::String, O}, {"subnormals", K::String, O}, {"pairs", K::Array, O},
        {"timing", K::Object, O}},
       {}},
      {"conformance_case",
       {{"name", K::String, R}, {"kernel", K::String, R}, {"backend", K::String, R}, {"ok", K::Bool, R},
        {"values", K::Integer, R}, {"message", K::String, O}, {"expressible", K::Bool, O}},
       {}},
      {"conformance_summary",
       {{"backend", K::String, R}, {"cases", K::Integer, R}, {"passed", K::Integer, R}, {"failed", K::Integer, R},
        {"ms", K::Number, O}, {"unavailable", K::String, O}, {"unexpressible", K::Integer, O}},
       {}},
      {"error", {{"message", K::String, R}}, {}},
      {"warning", {{"message", K::String, R}}, {}},
      {"bench_start",
       {{"kernel", K::String, R}, {"bench", K::String, R}, {"dtype", K::String, R}, {"index", K::Integer, R},
        {"total", K::Integer, R}},
       {}},
      {"bench",
       {{"kernel", K::String, R}, {"bench", K::String, R}, {"dtype", K::String, R}, {"backend", K::String, R},
        {"status", K::String, R}, {"message", K::String, O}, {"device", K::String, O}, {"source", K::String, O},
        {"kernel_override", K::StringOrNull, O}, {"plan", K::String, O}, {"samples_us", K::NumberArray, O}, {"stats", K::ObjectOrNull, O},
        {"metrics", K::ObjectOrNull, O}, {"resources", K::ObjectOrNull, O}, {"correctness", K::ObjectOrNull, O}},
       {"ok", "fail", "error"}},
      {"calibration",
       {{"backend", K::String, O}, {"device", K::String, O}, {"driver", K::String, O}, {"copy_gbps", K::Number, R},
        {"fma_gflops", K::Number, R}, {"copy_gbps_median", K::Number, O}, {"fma_gflops_median", K::Number, O},
        {"copy_bytes", K::Number, O}, {"path", K::String, O}},
       {}},
  };
  return table;
}

bool kind_matches(const json& v, Kind k) {
  switch (k) {
    case Kind::String: return v.is_string();
    case Kind::Number: return v.is_number();
    case Kind::Integer: return v.is_number_integer();
    case Kind::Bool: return v.is_boolean();
    case Kind::Array: return v.is_array();
    case Kind::StringArray:
      return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
    case Kind::NumberArray:
      return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number(); });
    case Kind::Object: return v.is_object();
    case Kind::ObjectOrNull: return v.is_object() || v.is_null();
    case Kind::StringOrNull: return v.is_string() || v.is_null();
    case Kind::NumberOrNull: return v.is_number() || v.is_null();
    case Kind::NumberOrInf: return v.is_number() || (v.is_string() && v.get_ref<const std::string&>() == "inf");
  }
  return false;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::String: return "a string";
    case Kind::Number: return "a number";
    case Kind::Integer: return "an integer";
    case Kind::Bool: return "true or false";
    case Kind::Array: return "an array";
    case Kind::StringArray: return "an array of strings";
    case Kind::NumberArray: return "an array of numbers";
    case Kind::Object: return "an object";
    case Kind::ObjectOrNull: return "an object or null";
    case Kind::StringOrNull: return "a string or null";
    case Kind::NumberOrNull: return "a number or null";
    case Kind::NumberOrInf: return "a number or \"inf\"";
  }
  return "?";
}

namespace {

// A short rendering of an offending value for an error message.
std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return std::string(v.type_name()) + " " + s;
}

// Nesting depth of arrays and objects outside strings, without parsing (the parser and dump()
// must never see a line nested deeper than kMaxDepth).
bool nesting_within(const std::string& line, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : line) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace

bool check_message(const json& msg, std::string& why) {
  if (!msg.is_object()) {
    why = "not a JSON object";
    return false;
  }
  auto type_it = msg.find("type");
  if (type_it == msg.end() || !type_it->is_string()) {
    why = "message has no type";
    return false;
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  const auto& table = schema();
  auto spec = std::find_if(table.begin(), table.end(), [&](const MessageSpec& m) { return type == m.type; });
  if (spec == table.end()) {
    why = "unknown message type \"" + type.substr(0, 40) + "\"";
    return false;
  }
  auto avail = msg.find("available");
  bool available = avail != msg.end() && avail->is_boolean() && avail->get<bool>();
  for (const FieldSpec& f : spec->fields) {
    auto it = msg.find(f.name);
    bool needed = f.need == Need::Required || (f.need == Need::IfAvailable && available);
    if (it == msg.end()) {
      if (!needed) continue;
      why = std::string("a \"") + type + "\" message has no field \"" + f.name + "\" (" + kind_name(f.kind) + ")";
      return false;
    }
    if (!kind_matches(*it, f.kind)) {
      why = std::string("field \"") + f.name + "\" of a \"" + type + "\" message must be " + kind_name(f.kind) +
            ", not " + show(*it);
      return false;
    }
  }
  if (!spec->statuses.empty()) {
    const std::string& status = msg.find("status")->get_ref<const std::string&>();
    if (std::find(spec->statuses.begin(), spec->statuses.end(), status) == spec->statuses.end()) {
      why = "field \"status\" of a \"" + type + "\" message is \"" + status.substr(0, 40) + "\"; expected one of";
      for (size_t i = 0; i < spec->statuses.size(); ++i) why += std::string(i ? ", " : " ") + spec->statuses[i];
      return false;
    }
  }
  return true;
}

bool decode(const std::string& line, json& out, std::string& why) {
  out = json();
  if (line.size() > kMaxLineBytes) {
    why = "line of " + std::to_string(line.size()) + " bytes is longer than the limit of " +
          std::to_string(kMaxLineBytes);
    return false;
  }
  if (!nesting_within(line, kMaxDepth)) {
    why = "nested deeper than " + std::to_string(kMaxDepth) + " levels";
    return false;
  }
  out = json::parse(line, nullptr, false);
  if (out.is_discarded() || !out.is_object()) {
    why = "not a JSON object";
    out = json();
    return false;
  }
  if (!out.contains("type") || !out["type"].is_string()) {
    why = "message has no type";
    return false;
  }
  if (!out.contains("v") || out["v"] != kVersion) {
    why = "protocol version mismatch (runner speaks " + (out.contains("v") ? show(out["v"]) : std::string("?")) +
          ", CLI speaks " + std::to_string(kVersion) + "): rebuild both binaries";
    return false;
  }
  return check_message(out, why);
}

}  // namespace iron::protocol
