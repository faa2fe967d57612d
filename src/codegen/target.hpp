// Targets: one enum naming every language Iron emits, the profile of the machine code is built
// for, and one registry row per target tying it to its dialect, its offline compiler and the
// runtime backend that runs it. Light on purpose: no IR, no dialect definitions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "iron/types.hpp"

namespace iron::codegen {

// Glsl is the Vulkan target: GLSL 450 source compiled to SPIR-V.
enum class Target : uint8_t { Cuda, Hip, Glsl, Msl };
constexpr size_t kNumTargets = 4;

// How cooperative tiles lower (docs/dsl.md "Cooperative tiles"). Auto lets the architecture
// choose; Software keeps fragments in registers / shared memory with exact arithmetic; Wmma and
// MmaSync are CUDA's (sm_70+ / sm_80+), Coopmat Vulkan's NV cooperative matrices,
// SimdgroupMatrix Metal's simdgroup_matrix.
// Wgmma (CUDA sm_90a): the mma strategy for the per-lane-group tile ops, and tile_wg_mma (a
// warpgroup's product) as wgmma.mma_async through matrix descriptors (docs/dsl.md "Warpgroup tiles").
enum class MmaStrategy : uint8_t { Auto, Software, Wmma, MmaSync, Coopmat, SimdgroupMatrix, Wgmma };

// What emission may assume about the machine the code is built for. The defaults of each
// target come from its registry row (profile_for); a runtime device narrows them to itself.
struct TargetProfile {
  Target target = Target::Cuda;
  std::string arch;                   // "sm_90a", "gfx90a", "vulkan1.1", "metal3.0"
  // Lanes per lane group (warp, wavefront, simdgroup). 0: chosen by the device at run time and
  // read from a built-in (Vulkan subgroups: 8 on lavapipe, 32 on NVIDIA).
  uint32_t lane_width = 32;
  uint32_t max_threadgroup = 1024;    // threads per threadgroup
  uint64_t static_shared_bytes = 48 * 1024;  // threadgroup memory without an opt-in
  uint64_t max_shared_bytes = 48 * 1024;     // threadgroup memory with one (0: the device says)
  MmaStrategy mma = MmaStrategy::Auto;
  // The dtypes the target computes or stores: bit i for DType(i).
  uint32_t dtypes = 0;

  bool supports(DType d) const { return (dtypes >> unsigned(d)) & 1u; }
  // The lane mask of a whole lane group as a literal of the target's C-like dialects
  // ("0xffffffffu", "0xffffffffffffffffull"); for lane widths 32 and 64.
  std::string full_lane_mask() const;
  // log2(lane_width), for lane-id and group-id arithmetic; lane_width must be a power of two.
  uint32_t lane_shift() const;
};

const char* target_name(Target t);  // "cuda", "hip", "glsl", "msl"
// The target a name selects: a target name, or "spirv" / "vulkan" for Glsl. False otherwise.
bool parse_target(std::string_view s, Target& out);

enum class OfflineCompiler : uint8_t {
  Nvrtc,       // CUDA C++ -> PTX / CUBIN, libnvrtc opened at run time (rt::nvrtc_compile)
  Glslang,     // GLSL -> SPIR-V through glslang's C API, then spirv-val (compile_glsl)
  HipClang,    // HIP -> an AMDGPU code object with clang++ (hip_compile); no GPU needed
  HostSyntax,  // no code generator on this platform: a host clang syntax and type check
};

class Dialect;

// One row per target. The runtime backend is named ("cuda", "vulkan", "hip"), or nullptr where
// Iron has no device for the target on any platform it builds for here.
struct TargetInfo {
  Target target;
  const char* name;            // target_name()
  const char* language;        // "CUDA C++", "HIP", "GLSL 450", "Metal Shading Language"
  const char* source_ext;      // ".cu", ".hip", ".comp", ".metal"
  const char* binary_ext;      // ".cubin", ".co", ".spv"; "" without a code generator here
  const char* default_arch;    // "sm_90a", "gfx90a", "vulkan1.1", "metal3.0"
  OfflineCompiler compiler;
  const char* backend;
  // The dialect that spells the target; nullptr while this build has none (emit reports it).
  std::unique_ptr<Dialect> (*make_dialect)(const TargetProfile&);
};
const TargetInfo& target_info(Target t);
// The registry's rows in Target order.
const TargetInfo* target_infos();
// The target a runtime backend name runs ("cuda", "vulkan", "hip"); false for a backend without
// one (the interpreter).
bool target_of_backend(std::string_view backend, Target& out);

// The profile of `t` for architecture `arch` ("" = the row's default). Throws iron::Error naming
// an architecture the target does not know.
TargetProfile profile_for(Target t, std::string_view arch = {});

}  // namespace iron::codegen
