// The runner protocol decoder (src/core/protocol.*): typed errors that name the field for
// wrong-typed, missing and unknown input, and a bounded fuzz campaign of random and mutated
// lines: the decoder never throws or crashes, and every message it accepts has every field of
// its schema readable as the schema's type.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/protocol.hpp"

namespace {

using nlohmann::json;
namespace proto = iron::protocol;

// One valid line of every message type, as the runner sends them.
std::vector<std::string> seed_lines() {
  std::vector<json> m = {
      {{"type", "hello"}, {"runner_version", "0.1.0"}},
      {{"type", "device"}, {"backend", "vulkan"}, {"available", true}, {"name", "llvmpipe"}, {"driver", "24.2"},
       {"arch", "x86"}, {"lane_width", 8}, {"max_threads_per_group", 1024}, {"shared_memory_bytes", 32768},
       {"memory_bytes", 1u << 30}, {"f16", true}, {"bf16", false}},
      {{"type", "device"}, {"backend", "cuda"}, {"available", false}, {"why", "no CUDA driver"}},
      {{"type", "test_start"}, {"kernel", "iron_add"}, {"case", "n1003"}, {"dtype", "f32"}},
      {{"type", "test"}, {"kernel", "iron_add"}, {"case", "n1003"}, {"dtype", "f32"}, {"backend", "interp"},
       {"tolerance", 1e-6}, {"status", "pass"}, {"max_error", 0.0}, {"message", ""}, {"ms", 1.5}},
      {{"type", "test"}, {"kernel", "iron_add"}, {"case", "n1003"}, {"dtype", "f16"}, {"backend", "interp"},
       {"tolerance", 1e-3}, {"status", "fail"}, {"max_error", "inf"}, {"message", "nan at 3"}, {"ms", 1.5}},
      {{"type", "kernel"}, {"name", "iron_add"}, {"mode", "elementwise"}, {"dtypes", {"f32", "f16"}},
       {"file", "kernels/elementwise/add.cpp"}, {"line", 12}},
      {{"type", "kernel"}, {"name", "iron_gemv_rows_x4"}, {"mode", "Reduction"}, {"dtypes", {"f32"}},
       {"file", "kernels/gemv/gemv_rows.cpp"}, {"line", 41}, {"family", "iron_gemv_rows"}, {"variant", "VEC=4"}},
      {{"type", "family"}, {"name", "iron_gemv_rows"}, {"suffix", "x{VEC}"},
       {"axes", {{{"name", "VEC"}, {"values", {1, 4}}}}},
       {"kernels", {{{"name", "iron_gemv_rows_x1"}, {"values", "VEC=1"}}, {{"name", "iron_gemv_rows_x4"}, {"values", "VEC=4"}}}},
       {"file", "kernels/gemv/gemv_rows.cpp"}, {"line", 41}},
      {{"type", "test_case"}, {"kernel", "iron_add"}, {"case", "n1003"}},
      {{"type", "summary"}, {"passed", 3}, {"failed", 0}, {"skipped", 0}, {"kernels", 4}, {"pipeline_ms", 2.5}},
      {{"type", "text"}, {"text", "kernel iron_add\n"}},
      {{"type", "artifact"}, {"kernel", "iron_add"}, {"dtype", "f32"}, {"target", "cuda"}, {"path", "out/a.cu"},
       {"ok", true}, {"message", ""}},
      {{"type", "error"}, {"message", "unknown kernel"}},
      {{"type", "warning"}, {"message", "flat sweep"}},
      {{"type", "bench_start"}, {"kernel", "iron_add"}, {"bench", "n4096"}, {"dtype", "f32"}, {"index", 1}, {"total", 3}},
      {{"type", "bench"}, {"kernel", "iron_add"}, {"bench", "n4096"}, {"dtype", "f32"}, {"backend", "interp"},
       {"status", "ok"}, {"device", "interp"}, {"samples_us", {1.0, 2.0}}, {"stats", {{"median_us", 1.5}}},
       {"metrics", nullptr}, {"resources", nullptr}, {"kernel_override", nullptr}},
      {{"type", "calibration"}, {"backend", "interp"}, {"copy_gbps", 1.0}, {"fma_gflops", 2.0}, {"path", "/c"}},
  };
  std::vector<std::string> out;
  for (const json& j : m) out.push_back(proto::encode(j));
  return out;
}

// Reads every field the schema promises as the schema's type; throws if the promise is broken.
void read_all_fields(const json& msg) {
  const std::string& type = msg.at("type").get_ref<const std::string&>();
  for (const proto::MessageSpec& spec : proto::schema()) {
    if (type != spec.type) continue;
    for (const proto::FieldSpec& f : spec.fields) {
      if (!msg.contains(f.name)) continue;
      const json& v = msg.at(f.name);
      switch (f.kind) {
        case proto::Kind::String: (void)v.get<std::string>(); break;
        case proto::Kind::Number: (void)v.get<double>(); break;
        case proto::Kind::Integer: (void)v.get<long long>(); break;
        case proto::Kind::Bool: (void)v.get<bool>(); break;
        case proto::Kind::StringArray: for (const json& e : v) (void)e.get<std::string>(); break;
        case proto::Kind::NumberArray: for (const json& e : v) (void)e.get<double>(); break;
        case proto::Kind::NumberOrInf: if (v.is_string()) EXPECT_EQ(v.get<std::string>(), "inf"); else (void)v.get<double>(); break;
        case proto::Kind::StringOrNull: if (!v.is_null()) (void)v.get<std::string>(); break;
        case proto::Kind::NumberOrNull: if (!v.is_null()) (void)v.get<double>(); break;
        case proto::Kind::Array: (void)v.get_ref<const json::array_t&>(); break;
        case proto::Kind::Object: (void)v.get_ref<const json::object_t&>(); break;
        case proto::Kind::ObjectOrNull: if (!v.is_null()) (void)v.get_ref<const json::object_t&>(); break;
      }
    }
    return;
  }
  ADD_FAILURE() << "accepted a message of a type outside the schema: " << type;
}

bool decodes(const std::string& line, std::string& why) {
  json out;
  return proto::decode(line, out, why);
}

TEST(Protocol, EverySeedLineDecodes) {
  for (const std::string& line : seed_lines()) {
    std::string why;
    EXPECT_TRUE(decodes(line, why)) << line << ": " << why;
  }
}

// The findings of issue 7: a wrong-typed field aborted the CLI (uncaught type_error); a test
// message without max_error was read as an indeterminate number and counted as PASS.
TEST(Protocol, WrongTypedFieldIsAnErrorNamingTheField) {
  std::string why;
  EXPECT_FALSE(decodes(R"({"v":1,"type":"test","kernel":7,"case":"c","dtype":"f32","backend":"interp","tolerance":1e-6,"status":"pass","max_error":0})", why));
  EXPECT_NE(why.find("field \"kernel\" of a \"test\" message must be a string, not number 7"), std::string::npos) << why;
  EXPECT_FALSE(decodes(R"({"v":1,"type":"kernel","name":"k","mode":"m","dtypes":["f32"],"file":"f","line":"12"})", why));
  EXPECT_NE(why.find("field \"line\" of a \"kernel\" message must be an integer"), std::string::npos) << why;
  EXPECT_FALSE(decodes(R"({"v":1,"type":"test","kernel":"k","case":"c","dtype":"f32","backend":"interp","tolerance":1e-6,"status":"pass","max_error":"abc"})", why));
  EXPECT_NE(why.find("\"max_error\""), std::string::npos) << why;
}

TEST(Protocol, MissingMaxErrorIsAnErrorNotAPass) {
  std::string why;
  EXPECT_FALSE(decodes(R"({"v":1,"type":"test","kernel":"k","case":"c","dtype":"f32","backend":"interp","tolerance":1e-6,"status":"pass"})", why));
  EXPECT_EQ(why, "a \"test\" message has no field \"max_error\" (a number or \"inf\")");
}

TEST(Protocol, UnknownTypeStatusVersionDepthAreErrors) {
  std::string why;
  EXPECT_FALSE(decodes(R"({"v":1,"type":"surprise"})", why));
  EXPECT_EQ(why, "unknown message type \"surprise\"");
  EXPECT_FALSE(decodes(R"({"v":1,"type":"test","kernel":"k","case":"c","dtype":"f32","backend":"interp","tolerance":1e-6,"status":"maybe","max_error":0})", why));
  EXPECT_NE(why.find("field \"status\" of a \"test\" message is \"maybe\""), std::string::npos) << why;
  EXPECT_FALSE(decodes(R"({"v":2,"type":"hello","runner_version":"x"})", why));
  EXPECT_NE(why.find("rebuild both binaries"), std::string::npos) << why;
  std::string deep = R"({"v":1,"type":"warning","message":"m","x":)" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  EXPECT_FALSE(decodes(deep, why));
  EXPECT_NE(why.find("nested deeper than"), std::string::npos) << why;
  // A device that is available must describe itself; an unavailable one need not.
  EXPECT_FALSE(decodes(R"({"v":1,"type":"device","backend":"cuda","available":true})", why));
  EXPECT_NE(why.find("no field \"name\""), std::string::npos) << why;
  EXPECT_TRUE(decodes(R"({"v":1,"type":"device","backend":"cuda","available":false,"why":"none"})", why)) << why;
}

// A random JSON value of any kind, shallow, to put in place of a field.
json random_value(std::mt19937_64& rng) {
  switch (rng() % 12) {
    case 0: return nullptr;
    case 1: return bool(rng() & 1);
    case 2: return int64_t(rng());
    case 3: return uint64_t(rng());
    case 4: return std::ldexp(double(int64_t(rng())), int(rng() % 2000) - 1000);
    case 5: return "inf";
    case 6: return std::string(rng() % 5, char('a' + rng() % 26));
    case 7: return json::array({1, "x", nullptr});
    case 8: return json::object({{"median_us", "x"}});
    case 9: return json::array();
    case 10: return -0.0;
    default: return std::string("\xff\xfe", 2);
  }
}

std::string mutate(std::mt19937_64& rng, const std::vector<std::string>& seeds) {
  std::string line = seeds[rng() % seeds.size()];
  int rounds = 1 + int(rng() % 3);
  for (int r = 0; r < rounds; ++r) {
    unsigned op = unsigned(rng() % 9);
    if (op < 4) {
      // Structural: drop, retype or add a field, or change the type.
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || j.empty()) continue;
      auto it = j.begin();
      std::advance(it, long(rng() % j.size()));
      std::string key = it.key();
      if (op == 0) j.erase(key);
      else if (op == 1) j[key] = random_value(rng);
      else if (op == 2) j["type"] = proto::schema()[rng() % proto::schema().size()].type;
      else j[std::string(1, char('a' + rng() % 26))] = random_value(rng);
      line = j.dump(-1, ' ', false, json::error_handler_t::replace);
    } else if (line.empty()) {
      line.push_back(char(rng()));
    } else {
      size_t pos = rng() % line.size();
      static const char kInteresting[] = "{}[]\",:\\0-eE.9 tfn";
      char c = rng() & 1 ? char(rng()) : kInteresting[rng() % (sizeof kInteresting - 1)];
      if (op == 4) line[pos] = c;                               // replace a byte
      else if (op == 5) line.insert(line.begin() + long(pos), c);  // insert one
      else if (op == 6) line.erase(pos, 1 + rng() % 8);          // delete a few
      else if (op == 7) line.resize(pos);                        // truncate
      else line.insert(pos, line.substr(rng() % line.size(), 1 + rng() % 16));  // duplicate a piece
    }
  }
  return line;
}

// Bounded campaign: 60,000 lines (about a second), fixed seed so a failure reproduces.
TEST(Protocol, FuzzedLinesNeverThrowAndAcceptedMessagesAreTyped) {
  std::vector<std::string> seeds = seed_lines();
  std::mt19937_64 rng(0x70726f746f636f6cull);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 60000; ++i) {
    std::string line = i % 10 == 9 ? std::string(rng() % 64, char(rng())) : mutate(rng, seeds);
    json out;
    std::string why;
    bool ok = false;
    try {
      ok = proto::decode(line, out, why);
    } catch (const std::exception& e) {
      FAIL() << "decode threw " << e.what() << " on line " << i << ": " << line;
    }
    if (!ok) {
      ++rejected;
      ASSERT_FALSE(why.empty()) << "rejected without a reason: " << line;
      continue;
    }
    ++accepted;
    try {
      read_all_fields(out);
      (void)out.dump();  // --json prints every accepted message
    } catch (const std::exception& e) {
      FAIL() << "an accepted message broke its schema (" << e.what() << "): " << line;
    }
  }
  // Both outcomes must be exercised, or the campaign tests nothing.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 10000);
}

}  // namespace
