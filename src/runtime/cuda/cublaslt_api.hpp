// Our own minimal declarations of the cuBLASLt API (the vendor GEMM path, src/runtime/blas.cpp),
// plus an X-macro list of the entry points loaded with dlsym. Like cuda_api.hpp we never include
// cublasLt.h and never link libcublasLt: Iron builds without the SDK and reports "cuBLASLt not
// found" cleanly where the library is absent. Values are copied from CUDA 13.0's cublasLt.h,
// cublas_api.h and library_types.h; they are ABI (the same in CUDA 12).
#pragma once

#include <cstddef>
#include <cstdint>

namespace iron::cublaslt {

using cublasStatus_t = int;  // enums in the headers; int-sized in the ABI
using cublasLtHandle_t = struct cublasLtContext*;
// The descriptors are pointers to opaque structs the library allocates (the *Create calls).
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque*;
using cudaStream_t = struct CUstream_st*;  // the driver's CUstream

// cublasLt.h: semi-opaque, passed by value in the heuristic results.
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;

// library_types.h: cudaDataType
constexpr int CUDA_R_32F = 0;
constexpr int CUDA_R_16F = 2;
constexpr int CUDA_R_16BF = 14;
// cublas_api.h: cublasComputeType_t, cublasOperation_t
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int CUBLAS_OP_N = 0;
constexpr int CUBLAS_OP_T = 1;

// cublasLtMatmulDescAttributes_t (int32_t values)
constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;
constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;

// cublasLtMatmulPreferenceAttributes_t
constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;   // uint64_t
constexpr int CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3;  // uint32_t
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5;  // uint32_t, B/C/D follow
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6;
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7;
constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8;

// cublasLtReductionScheme_t: how split-K partial sums are combined. INPLACE accumulates into the
// output buffer with counters in the workspace (arrival order decides the summation order);
// COMPUTE_TYPE and OUTPUT_TYPE store the partials in the workspace and reduce them in a separate
// step in a fixed order.
constexpr uint32_t CUBLASLT_REDUCTION_SCHEME_NONE = 0;
constexpr uint32_t CUBLASLT_REDUCTION_SCHEME_INPLACE = 1;
constexpr uint32_t CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE = 2;
constexpr uint32_t CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE = 4;
constexpr uint32_t CUBLASLT_REDUCTION_SCHEME_MASK = 7;

// cublasLtMatmulAlgoCapAttributes_t
constexpr int CUBLASLT_ALGO_CAP_SPLITK_SUPPORT = 0;          // int32_t
constexpr int CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK = 1;   // uint32_t
// cublasLtMatmulAlgoConfigAttributes_t
constexpr int CUBLASLT_ALGO_CONFIG_ID = 0;                // int32_t
constexpr int CUBLASLT_ALGO_CONFIG_TILE_ID = 1;           // uint32_t
constexpr int CUBLASLT_ALGO_CONFIG_SPLITK_NUM = 2;        // int32_t
constexpr int CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME = 3;  // uint32_t
constexpr int CUBLASLT_ALGO_CONFIG_STAGES_ID = 6;         // uint32_t

}  // namespace iron::cublaslt

// IRON_CUBLASLT_FN(symbol, return type, (parameter types))
#define IRON_CUBLASLT_FUNCTIONS(IRON_CUBLASLT_FN)                                                           \
  IRON_CUBLASLT_FN(cublasLtGetVersion, size_t, ())                                                         \
  IRON_CUBLASLT_FN(cublasLtGetStatusName, const char*, (cublasStatus_t))                                   \
  IRON_CUBLASLT_FN(cublasLtGetStatusString, const char*, (cublasStatus_t))                                 \
  IRON_CUBLASLT_FN(cublasLtCreate, cublasStatus_t, (cublasLtHandle_t*))                                    \
  IRON_CUBLASLT_FN(cublasLtDestroy, cublasStatus_t, (cublasLtHandle_t))                                    \
  IRON_CUBLASLT_FN(cublasLtMatmulDescCreate, cublasStatus_t, (cublasLtMatmulDesc_t*, int, int))           \
  IRON_CUBLASLT_FN(cublasLtMatmulDescDestroy, cublasStatus_t, (cublasLtMatmulDesc_t))                      \
  IRON_CUBLASLT_FN(cublasLtMatmulDescSetAttribute, cublasStatus_t,                                         \
                   (cublasLtMatmulDesc_t, int, const void*, size_t))                                       \
  IRON_CUBLASLT_FN(cublasLtMatrixLayoutCreate, cublasStatus_t,                                             \
                   (cublasLtMatrixLayout_t*, int, uint64_t, uint64_t, int64_t))                            \
  IRON_CUBLASLT_FN(cublasLtMatrixLayoutDestroy, cublasStatus_t, (cublasLtMatrixLayout_t))                  \
  IRON_CUBLASLT_FN(cublasLtMatmulPreferenceCreate, cublasStatus_t, (cublasLtMatmulPreference_t*))          \
  IRON_CUBLASLT_FN(cublasLtMatmulPreferenceDestroy, cublasStatus_t, (cublasLtMatmulPreference_t))          \
  IRON_CUBLASLT_FN(cublasLtMatmulPreferenceSetAttribute, cublasStatus_t,                                   \
                   (cublasLtMatmulPreference_t, int, const void*, size_t))                                 \
  IRON_CUBLASLT_FN(cublasLtMatmulAlgoGetHeuristic, cublasStatus_t,                                         \
                   (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, \
                    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,        \
                    cublasLtMatmulHeuristicResult_t*, int*))                                               \
  IRON_CUBLASLT_FN(cublasLtMatmulAlgoCapGetAttribute, cublasStatus_t,                                      \
                   (const cublasLtMatmulAlgo_t*, int, void*, size_t, size_t*))                             \
  IRON_CUBLASLT_FN(cublasLtMatmulAlgoConfigGetAttribute, cublasStatus_t,                                   \
                   (const cublasLtMatmulAlgo_t*, int, void*, size_t, size_t*))                             \
  IRON_CUBLASLT_FN(cublasLtMatmul, cublasStatus_t,                                                         \
                   (cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t, \
                    const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t,  \
                    void*, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t))
