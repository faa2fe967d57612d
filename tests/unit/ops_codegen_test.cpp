// What makes the elementwise, cast and RoPE kernels memory-bound-fast, pinned in their emitted
// CUDA: every full run of 8 elements (or 8 pairs) is one 16-byte access at 16 bits (two at f32),
// so a change that breaks adjacency or alignment shows here rather than only as a slower bench.
#include <gtest/gtest.h>

#include <string>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "passes/pass.hpp"

namespace iron {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string cuda(const char* kernel, Instantiation dtype) {
  return codegen::emit(passes::optimize(kernel_ir(kernel)), dtype, codegen::Target::Cuda).source;
}

// guards: the activations and SwiGLU read and write each full run as one uint4 at 16 bits, and the casts as wide words on both sides (two float4 of f32 in, one uint4 of bf16 out; eight fp8 bytes stay byte stores)
TEST(OpsCodegen, ElementwiseRunsAreSixteenByteAccesses) {
  for (const char* k : {"iron_gelu_tanh", "iron_gelu_erf"}) {
    const std::string s = cuda(k, DType::BF16);
    EXPECT_EQ(count(s, "*reinterpret_cast<const uint4*>(p_x"), 1u) << k << "\n" << s;
    EXPECT_EQ(count(s, "*reinterpret_cast<uint4*>(p_out"), 1u) << k << "\n" << s;
  }
  const std::string swiglu = cuda("iron_swiglu", DType::F16);
  EXPECT_EQ(count(swiglu, "*reinterpret_cast<const uint4*>(p_a"), 1u) << swiglu;
  EXPECT_EQ(count(swiglu, "*reinterpret_cast<const uint4*>(p_b"), 1u) << swiglu;
  EXPECT_EQ(count(swiglu, "*reinterpret_cast<uint4*>(p_out"), 1u) << swiglu;
  const std::string cast = cuda("iron_cast", Instantiation(DType::F32, DType::BF16));
  EXPECT_EQ(count(cast, "*reinterpret_cast<const float4*>(p_x"), 2u) << cast;
  EXPECT_EQ(count(cast, "*reinterpret_cast<uint4*>(p_out"), 1u) << cast;
  const std::string to_fp8 = cuda("iron_cast_to_fp8", DType::BF16);
  EXPECT_EQ(count(to_fp8, "*reinterpret_cast<const uint4*>(p_x"), 1u) << to_fp8;
  const std::string from_fp8 = cuda("iron_cast_from_fp8", DType::F32);
  EXPECT_EQ(count(from_fp8, "*reinterpret_cast<float4*>(p_out"), 2u) << from_fp8;
}

// guards: RoPE reads and writes a head's 8 pairs as 16-byte groups (NeoX: the run in each half; GPT-J: the interleaved run of 16 as two) and its table rows as float4s, at head_dim 64 and 128
TEST(OpsCodegen, RopeRowsAreSixteenByteAccesses) {
  for (const char* k : {"iron_rope_neox_d64", "iron_rope_neox_d128", "iron_rope_gptj_d64", "iron_rope_gptj_d128"}) {
    const std::string s = cuda(k, DType::BF16);
    EXPECT_EQ(count(s, "*reinterpret_cast<const uint4*>(p_x"), 2u) << k << "\n" << s;
    EXPECT_EQ(count(s, "*reinterpret_cast<uint4*>(p_out"), 2u) << k << "\n" << s;
    EXPECT_EQ(count(s, "*reinterpret_cast<const float4*>(p_cos"), 2u) << k << "\n" << s;
    EXPECT_EQ(count(s, "*reinterpret_cast<const float4*>(p_sin"), 2u) << k << "\n" << s;
    EXPECT_EQ(count(s, "p_x["), 0u) << k << ": a scalar load of x\n" << s;
  }
  const std::string theta = cuda("iron_rope_gptj_theta_d128", DType::F16);
  EXPECT_EQ(count(theta, "*reinterpret_cast<const uint4*>(p_x"), 2u) << theta;
}

}  // namespace
}  // namespace iron
