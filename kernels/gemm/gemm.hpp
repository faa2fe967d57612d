// The iron_gemm family (kernels/gemm/): shared between the kernels (gemm.cpp), the selector
// (gemm_select.cpp) and the tests. See gemm.cpp for the kernels' contract.
#pragma once

#include <cstdint>
#include <string>

namespace iron::kernels::gemm {

// Fused epilogues, in the order of the `epi` call argument (0 .. 5).
enum class Epi : uint8_t { None, Bias, Silu, Gelu, Residual, Swiglu };
constexpr int kEpis = 6;
const char* epi_name(Epi e);  // "none", "bias", "silu", "gelu", "residual", "swiglu"

// A block tile of bm x bn outputs, bk-deep K steps, computed by (bm / wm) x (bn / wn) lane
// groups of wm x wn outputs each (16 x 16 fragments).
struct Config {
  uint32_t bm, bn, bk, wm, wn;
  uint32_t warps() const { return (bm / wm) * (bn / wn); }
  std::string name() const;  // "128x128x64_w64x32"
};

// The staged A and B tiles are unpadded rows in threadgroup memory under an XOR swizzle of
// their 16-byte chunks (gemm.cpp, staged_swizzle), which the copies write through and the
// fragment loads read through.

// The decode kernel (gemm_decode.cpp): rows of W per lane group (lanes body) and rows of A per
// pass (both bodies; the tiles body's A^T is 16 wide).
constexpr uint32_t kDecodeRows = 4;
constexpr uint32_t kDecodeBlock = 16;
constexpr uint32_t kDecodeUnroll = 2;       // lanes body: 16-byte chunks of each W row per step (default)
constexpr uint32_t kDecodeUnrollMax = 4;    // lanes body: the most the `unroll` call argument takes
constexpr uint32_t kDecodeTileStages = 4;   // tiles body: staged 16 x 64 W blocks per lane group
constexpr uint32_t kDecodeTileLd = 72;      // tiles body: their row stride (64 + 8 elements)
// The warpgroup decode kernel (iron_gemm_decode_wg_tma): rows of W per threadgroup (one
// consumer warpgroup) and the stages of its ring (10 KiB each: a 64 x 64 W box and A's 16 x 64).
constexpr uint32_t kDecodeWgRows = 64;
constexpr uint32_t kDecodeWgStages = 8;

// Threadgroup bytes of one kernel of the family (staging for `stages` K steps, two B tiles for
// SwiGLU, the per-lane-group epilogue scratch).
uint64_t threadgroup_bytes(const Config& c, uint32_t stages, bool swiglu);

}  // namespace iron::kernels::gemm
