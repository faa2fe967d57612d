// The fused epilogue of the GEMM family's kernels (gemm.cpp, gemm_decode.cpp): one element's
// f32 product `v` in, the epilogue's f32 value out (docs/gemm.md "The call").
#pragma once

#include <functional>

#include <iron/iron.hpp>

namespace iron::kernels::gemm {

// SwiGLU kernels (`up` set) compute silu(v) * up(); the others branch on `epi` (0 none, 1 bias,
// 2 silu, 3 gelu, 4 residual), a specialized scalar, so each dispatch's code keeps one branch.
// `bias_at` / `res_at` read the output-typed bias and residual as f32, only where the epilogue
// uses them.
dsl::Expr apply_epilogue(dsl::Expr epi, dsl::Expr v, const std::function<dsl::Expr()>* up,
                         const std::function<dsl::Expr()>& bias_at, const std::function<dsl::Expr()>& res_at);

}  // namespace iron::kernels::gemm
