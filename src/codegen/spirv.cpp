// GLSL 450 compute source -> SPIR-V 1.3 for Vulkan 1.1, through glslang's C API (not libshaderc:
// Debian 12's build of it is underlinked and crashes against glslang 12), then validated with
// SPIRV-Tools. Every message names the shader, so a failure in a batch build is attributable.
#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>

#include <mutex>
#include <spirv-tools/libspirv.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/codegen.hpp"

namespace iron::codegen {
namespace {

// glslang keeps process-wide state (symbol tables, the pool allocator): it is initialized once
// and compiles are serialized. At ~2 ms per shader the lock is never the bottleneck.
std::once_flag glslang_once;
std::mutex glslang_mutex;

// Appends a glslang log with its trailing blank lines trimmed to exactly one newline.
void append_log(std::string& out, const char* text) {
  if (text == nullptr) return;
  std::string_view t(text);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\r')) t.remove_suffix(1);
  if (t.empty()) return;
  out += t;
  out += '\n';
}

// RAII for the two glslang handles, so every early return frees them.
struct GlslangHandles {
  glslang_shader_t* shader = nullptr;
  glslang_program_t* program = nullptr;
  ~GlslangHandles() {
    if (program) glslang_program_delete(program);
    if (shader) glslang_shader_delete(shader);
  }
};

// Runs glslang; on failure returns false with the info and debug logs appended to `log`.
bool glslang_compile(const std::string& source, const std::string& name, std::vector<uint32_t>& words,
                     std::string& log) {
  std::call_once(glslang_once, [] { glslang_initialize_process(); });
  std::lock_guard<std::mutex> lock(glslang_mutex);

  glslang_input_t input{};
  input.language = GLSLANG_SOURCE_GLSL;
  input.stage = GLSLANG_STAGE_COMPUTE;
  input.client = GLSLANG_CLIENT_VULKAN;
  input.client_version = GLSLANG_TARGET_VULKAN_1_1;
  input.target_language = GLSLANG_TARGET_SPV;
  input.target_language_version = GLSLANG_TARGET_SPV_1_3;
  input.code = source.c_str();
  input.default_version = 450;
  input.default_profile = GLSLANG_NO_PROFILE;
  input.force_default_version_and_profile = 0;
  input.forward_compatible = 0;
  input.messages = static_cast<glslang_messages_t>(GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT);
  input.resource = glslang_default_resource();

  GlslangHandles h;
  h.shader = glslang_shader_create(&input);
  if (h.shader == nullptr) {
    log += name + ": glslang could not create a shader object\n";
    return false;
  }
  auto shader_failure = [&](const char* stage) {
    log += name + ": GLSL " + stage + " failed (glslang):\n";
    append_log(log, glslang_shader_get_info_log(h.shader));
    append_log(log, glslang_shader_get_info_debug_log(h.shader));
    return false;
  };
  if (!glslang_shader_preprocess(h.shader, &input)) return shader_failure("preprocessing");
  if (!glslang_shader_parse(h.shader, &input)) return shader_failure("compilation");

  h.program = glslang_program_create();
  glslang_program_add_shader(h.program, h.shader);
  if (!glslang_program_link(h.program, GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT)) {
    log += name + ": GLSL link failed (glslang):\n";
    append_log(log, glslang_program_get_info_log(h.program));
    append_log(log, glslang_program_get_info_debug_log(h.program));
    return false;
  }

  glslang_program_SPIRV_generate(h.program, GLSLANG_STAGE_COMPUTE);
  // Generator messages are warnings (e.g. unsupported extension behaviour); keep them, they
  // explain a later validation failure if there is one.
  const char* gen_messages = glslang_program_SPIRV_get_messages(h.program);
  if (gen_messages && *gen_messages) {
    log += name + ": glslang SPIR-V generator:\n";
    append_log(log, gen_messages);
  }
  size_t count = glslang_program_SPIRV_get_size(h.program);
  if (count == 0) {
    log += name + ": glslang produced an empty SPIR-V module\n";
    return false;
  }
  words.resize(count);
  glslang_program_SPIRV_get(h.program, words.data());
  return true;
}

const char* level_name(spv_message_level_t level) {
  switch (level) {
    case SPV_MSG_FATAL:
    case SPV_MSG_INTERNAL_ERROR:
    case SPV_MSG_ERROR: return "error";
    case SPV_MSG_WARNING: return "warning";
    default: return "info";
  }
}

}  // namespace

std::string validate_spirv(const std::vector<uint32_t>& words) {
  // The validator is stateless per call; a fresh SpirvTools keeps this thread-safe.
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string messages;
  tools.SetMessageConsumer(
      [&messages](spv_message_level_t level, const char*, const spv_position_t& pos, const char* message) {
        messages += level_name(level);
        messages += ": word " + std::to_string(pos.index) + ": ";
        messages += message ? message : "";
        messages += '\n';
      });
  if (tools.Validate(words)) return {};
  return messages.empty() ? std::string("error: invalid SPIR-V module (no validator message)\n") : messages;
}

Spirv compile_glsl(const std::string& source, const std::string& name) {
  Spirv out;
  if (!glslang_compile(source, name, out.words, out.log)) {
    out.words.clear();
    return out;
  }
  std::string val = validate_spirv(out.words);
  if (!val.empty()) {
    out.log += name + ": SPIR-V validation failed (spirv-val, Vulkan 1.1):\n" + val;
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace iron::codegen
