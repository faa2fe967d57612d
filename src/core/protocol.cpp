// JSON-lines framing for the CLI <-> runner protocol (see protocol.hpp).
#include "core/protocol.hpp"

namespace iron::protocol {

std::string encode(nlohmann::json msg) {
  msg["v"] = kVersion;
  return msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool decode(const std::string& line, nlohmann::json& out, std::string& why) {
  out = nlohmann::json::parse(line, nullptr, false);
  if (out.is_discarded() || !out.is_object()) {
    why = "not a JSON object";
    return false;
  }
  if (!out.contains("type") || !out["type"].is_string()) {
    why = "message has no type";
    return false;
  }
  if (!out.contains("v") || out["v"] != kVersion) {
    why = "protocol version mismatch (runner speaks " + (out.contains("v") ? out["v"].dump() : std::string("?")) +
          ", CLI speaks " + std::to_string(kVersion) + "): rebuild both binaries";
    return false;
  }
  return true;
}

}  // namespace iron::protocol
