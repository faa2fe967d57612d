// HIP dialect: the CUDA C++ dialect plus the overrides where HIP's spelling differs. Compiled
// offline by clang++ for AMD GPUs (hip_compile). What differs:
//  - lane groups are the profile's wavefronts: 64 lanes on CDNA (gfx9xx), 32 on RDNA; the
//    shuffles take no mask (__shfl, __shfl_xor, __shfl_up over the whole wavefront) and the
//    ballot is 64 bits wide: lane_ballot is the u32 mask of the lane's 32-lane half
//    (docs/semantics.md), the ballot shifted right by 32 for the upper half;
//  - the includes are HIP's (hip_runtime.h, hip_fp16.h); HIP 5 has no cuda_bf16.h equivalent,
//    so bf16 is Iron's own 16-bit storage type with the same round-to-nearest-even narrowing
//    as the interpreter (num::f32_to_bf16) and an exact widening;
//  - __CUDA_ARCH__ is not defined in a HIP device compile, so every helper takes its portable
//    branch (16-bit fma and pair ops through iron_fma_odd, pair atomics as a compare-and-swap
//    loop), the same results docs/semantics.md defines.
#include <map>

#include "codegen/dialect_cuda.hpp"

namespace iron::codegen {
namespace {

class HipDialect final : public CudaDialect {
 public:
  HipDialect() : CudaDialect(hip_spelling()) {}

  static DialectSpelling hip_spelling() {
    DialectSpelling sp = cuda_spelling();
    sp.name = "HIP";
    return sp;
  }

  std::string headers(const EmitState& s) const override {
    std::string out = "#include <hip/hip_runtime.h>\n";
    if (s.uses_f16) out += "#include <hip/hip_fp16.h>\n";
    if (s.uses_bf16) out += kBf16;
    return out;
  }

  std::string shfl(const EmitState&, const std::string& v, const std::string& src) const override {
    return "__shfl(" + v + ", (int)(" + src + "))";
  }
  std::string shfl_xor(const EmitState&, const std::string& v, const std::string& o) const override {
    return "__shfl_xor(" + v + ", " + o + ")";
  }
  std::string shfl_up(const EmitState&, const std::string& v, const std::string& d) const override {
    return "__shfl_up(" + v + ", " + d + ")";
  }
  std::string ballot(const EmitState& s, const std::string& c) const override {
    if (s.profile.lane_width <= 32) return "((unsigned)__ballot(" + c + "))";
    return "((unsigned)(__ballot(" + c + ") >> (iron_flat_local_id() & 32u)))";
  }
  std::string vote(const EmitState&, bool all, const std::string& c) const override {
    return std::string(all ? "__all(" : "__any(") + c + ")";
  }

  std::string bf16_name(const char* cuda) const override {
    static const std::map<std::string, std::string> names = {
        {"__nv_bfloat16", "iron_bf16"},
        {"__nv_bfloat162", "iron_bf16x2"},
        {"__bfloat162float", "iron_bf16_to_f32"},
        {"__float2bfloat16_rn", "iron_f32_to_bf16"},
        {"__bfloat16_as_ushort", "iron_bf16_bits"},
        {"__ushort_as_bfloat16", "iron_bf16_from_bits"},
        {"__halves2bfloat162", "iron_bf16x2_make"},
        {"__low2bfloat16", "iron_bf16x2_low"},
        {"__high2bfloat16", "iron_bf16x2_high"},
        {"__floats2bfloat162_rn", "iron_f32x2_to_bf16x2"},
        {"__low2float", "iron_bf16x2_low_f32"},
        {"__high2float", "iron_bf16x2_high_f32"},
    };
    auto it = names.find(cuda);
    return it != names.end() ? it->second : cuda;
  }

 private:
  // Iron's bf16 for HIP: the bits of a bf16 in 16-bit storage, a pair of them in 32 bits.
  static constexpr const char* kBf16 =
      "struct iron_bf16 { unsigned short x; };\n"
      "struct iron_bf16x2 { iron_bf16 lo, hi; };\n"
      "__device__ __forceinline__ unsigned short iron_bf16_bits(iron_bf16 h) { return h.x; }\n"
      "__device__ __forceinline__ iron_bf16 iron_bf16_from_bits(unsigned short b) { iron_bf16 h; h.x = b; return h; }\n"
      "__device__ __forceinline__ float iron_bf16_to_f32(iron_bf16 h) { return __uint_as_float((unsigned)h.x << 16); }\n"
      "__device__ __forceinline__ iron_bf16 iron_f32_to_bf16(float f) {\n"
      "  unsigned u = __float_as_uint(f);\n"
      "  if ((u & 0x7fffffffu) > 0x7f800000u) return iron_bf16_from_bits((unsigned short)((u >> 16) | 0x40u));\n"
      "  u += 0x7fffu + ((u >> 16) & 1u);\n"
      "  return iron_bf16_from_bits((unsigned short)(u >> 16));\n"
      "}\n"
      "__device__ __forceinline__ iron_bf16x2 iron_bf16x2_make(iron_bf16 lo, iron_bf16 hi) { iron_bf16x2 p; p.lo = lo; p.hi = hi; return p; }\n"
      "__device__ __forceinline__ iron_bf16 iron_bf16x2_low(iron_bf16x2 p) { return p.lo; }\n"
      "__device__ __forceinline__ iron_bf16 iron_bf16x2_high(iron_bf16x2 p) { return p.hi; }\n"
      "__device__ __forceinline__ float iron_bf16x2_low_f32(iron_bf16x2 p) { return iron_bf16_to_f32(p.lo); }\n"
      "__device__ __forceinline__ float iron_bf16x2_high_f32(iron_bf16x2 p) { return iron_bf16_to_f32(p.hi); }\n"
      "__device__ __forceinline__ iron_bf16x2 iron_f32x2_to_bf16x2(float lo, float hi) {\n"
      "  return iron_bf16x2_make(iron_f32_to_bf16(lo), iron_f32_to_bf16(hi));\n"
      "}\n";
};

}  // namespace

std::unique_ptr<Dialect> make_hip_dialect() { return std::make_unique<HipDialect>(); }

}  // namespace iron::codegen
