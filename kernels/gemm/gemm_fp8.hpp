// The FP8 GEMM family (kernels/gemm/gemm_fp8.cpp): what its tests share with the kernels.
#pragma once

#include <cstdint>

#include <iron/iron.hpp>

namespace iron::kernels::gemm_fp8 {

// K elements per staged step, and the depth of one block scale (DeepSeek's 1 x 128 and 128 x 128).
constexpr uint32_t kBlockK = 128;

// Known-bad versions of the kernel for the mutation test (tests/unit/gemm_fp8_test.cpp), each
// with one defect of the block scaling (or, Wg*, of the warpgroup body's products); every
// registered kernel is Defect::None.
enum class Defect {
  None,
  ScaleRow,        // each fragment promoted with the next 16 rows' scales
  ScaleKBlock,     // A's scale of the next K block
  ScaleBColumn,    // B's scale of the first 128-column block, whatever the tile's column
  ScaleOnceAtEnd,  // no per-block promotion: the unscaled sum times the last block's scales
  KBlockBoundary,  // scales indexed by 256-deep K blocks (two blocks share one)
  WgKStep16,       // the warpgroup products step K by 16 elements (the 16-bit k16 stride), not 32
  WgSwizzle64,     // the products read the stages under the 64-byte swizzle, not the 128-byte one
  WgNoWait,        // the step's product promoted with no wg_wait: read while in flight
};

// The body of the 32x32 tile (iron_gemm_fp8_32x32x128_w32x16_s2_<AB>_<OUT>) with `defect`.
void gemm_fp8_small_kernel(const KernelVariant& v, Defect defect);
// The body of the warpgroup kernel (iron_gemm_fp8_128x128x128_wg_s3_<AB>_<OUT>) with `defect`.
void gemm_fp8_wg_kernel(const KernelVariant& v, Defect defect);
// The body of a warp-specialized kernel (wide: iron_gemm_fp8_128x256x128_wg_ws_s4_<AB>_bf16, else
// iron_gemm_fp8_128x128x128_wg_ws_s4_<AB>_bf16) with `defect`.
void gemm_fp8_ws_kernel(const KernelVariant& v, bool wide, Defect defect);

}  // namespace iron::kernels::gemm_fp8
