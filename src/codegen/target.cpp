// The target registry: one row per target, and the profiles of the architectures each knows.
#include "codegen/target.hpp"

#include <cstdlib>

#include "codegen/c_like.hpp"

namespace iron::codegen {

namespace {

constexpr uint32_t all_dtypes() {
  uint32_t m = 0;
  for (size_t i = 0; i < kNumDTypes; ++i)
    if (DType(i) != DType::Generic && DType(i) != DType::GenericW && DType(i) != DType::Void) m |= 1u << i;
  return m;
}

std::unique_ptr<Dialect> cuda_dialect(const TargetProfile&) { return make_cuda_dialect(); }
std::unique_ptr<Dialect> hip_dialect(const TargetProfile&) { return make_hip_dialect(); }
std::unique_ptr<Dialect> glsl_dialect(const TargetProfile&) { return make_glsl_dialect(); }
std::unique_ptr<Dialect> msl_dialect(const TargetProfile&) { return make_msl_dialect(); }

const TargetInfo kTargets[kNumTargets] = {
    {Target::Cuda, "cuda", "CUDA C++", ".cu", ".cubin", "sm_90a", OfflineCompiler::Nvrtc, "cuda", cuda_dialect},
    {Target::Hip, "hip", "HIP", ".hip", ".co", "gfx90a", OfflineCompiler::HipClang, "hip", hip_dialect},
    {Target::Glsl, "glsl", "GLSL 450", ".comp", ".spv", "vulkan1.1", OfflineCompiler::Glslang, "vulkan", glsl_dialect},
    // Metal: no code generator off Apple platforms and no runtime device; the emitted source is
    // checked by the host clang against tests/msl's shim (docs/msl.md).
    {Target::Msl, "msl", "Metal Shading Language", ".metal", "", "metal3.0", OfflineCompiler::HostSyntax, nullptr,
     msl_dialect},
};

// The number after a prefix ("sm_90a" -> 90), or -1.
int arch_number(std::string_view arch, std::string_view prefix) {
  if (arch.substr(0, prefix.size()) != prefix) return -1;
  int n = 0, digits = 0;
  for (size_t i = prefix.size(); i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i, ++digits) n = n * 10 + (arch[i] - '0');
  return digits ? n : -1;
}

}  // namespace

bool cuda_waits_for_grid_dependency(std::string_view arch) { return arch_number(arch, "sm_") >= 90; }

std::string TargetProfile::full_lane_mask() const {
  return lane_width == 64 ? "0xffffffffffffffffull" : "0xffffffffu";
}

uint32_t TargetProfile::lane_shift() const {
  uint32_t s = 0;
  while ((1u << s) < lane_width) ++s;
  return s;
}

const char* target_name(Target t) { return kTargets[size_t(t)].name; }

bool parse_target(std::string_view s, Target& out) {
  for (const TargetInfo& row : kTargets)
    if (s == row.name) {
      out = row.target;
      return true;
    }
  if (s == "spirv" || s == "vulkan") {
    out = Target::Glsl;
    return true;
  }
  return false;
}

const TargetInfo& target_info(Target t) { return kTargets[size_t(t)]; }
const TargetInfo* target_infos() { return kTargets; }

bool target_of_backend(std::string_view backend, Target& out) {
  for (const TargetInfo& row : kTargets)
    if (row.backend && backend == row.backend) {
      out = row.target;
      return true;
    }
  return false;
}

TargetProfile profile_for(Target t, std::string_view arch) {
  TargetProfile p;
  p.target = t;
  p.arch = arch.empty() ? kTargets[size_t(t)].default_arch : std::string(arch);
  p.dtypes = all_dtypes();
  switch (t) {
    case Target::Cuda: {
      // Compute capability from the name: opt-in shared memory per block by architecture.
      const int sm = arch_number(p.arch, "sm_");
      const int cc = arch_number(p.arch, "compute_");
      const int n = sm >= 0 ? sm : cc;
      if (n < 30) throw Error("unknown CUDA architecture '" + p.arch + "' (use sm_NN, e.g. sm_80 or sm_90a)");
      p.lane_width = 32;
      p.max_threadgroup = 1024;
      p.static_shared_bytes = 48 * 1024;
      p.max_shared_bytes = n >= 90 ? 227 * 1024 : n == 80 ? 163 * 1024 : n >= 86 ? 99 * 1024 : n >= 70 ? 96 * 1024 : 48 * 1024;
      p.mma = MmaStrategy::Auto;
      return p;
    }
    case Target::Hip: {
      // CDNA (gfx9xx) runs 64-lane wavefronts; RDNA (gfx10xx, gfx11xx) is built for wave32 here.
      // LDS: 64 KiB per workgroup on both.
      const int n = arch_number(p.arch, "gfx");
      if (n < 0) throw Error("unknown AMD GPU architecture '" + p.arch + "' (use gfxNNN, e.g. gfx90a or gfx940)");
      p.lane_width = n >= 1000 ? 32 : 64;
      p.max_threadgroup = 1024;
      p.static_shared_bytes = p.max_shared_bytes = 64 * 1024;
      // Tiles take the exact software path (no MFMA lowering yet).
      p.mma = MmaStrategy::Software;
      return p;
    }
    case Target::Glsl:
      if (p.arch != "vulkan1.1") throw Error("unknown Vulkan target '" + p.arch + "' (use vulkan1.1)");
      p.lane_width = 0;  // the device's subgroup size, read from gl_SubgroupSize
      p.max_threadgroup = 1024;
      p.static_shared_bytes = p.max_shared_bytes = 0;  // maxComputeSharedMemorySize, per device
      p.mma = MmaStrategy::Auto;
      return p;
    case Target::Msl:
      p.lane_width = 32;  // simdgroups on Apple GPUs
      p.max_threadgroup = 1024;
      p.static_shared_bytes = p.max_shared_bytes = 32 * 1024;
      p.mma = MmaStrategy::SimdgroupMatrix;  // dialect_msl.cpp: tiles are simdgroup_matrix 8x8 blocks
      return p;
  }
  throw Error("unknown target");
}

}  // namespace iron::codegen
