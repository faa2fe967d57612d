// Our own minimal declarations of the CUDA driver API and NVRTC, plus X-macro lists of the entry
// points we load with dlsym. We never include cuda.h / nvrtc.h and never link libcuda or
// libnvrtc, so Iron builds without the SDK and starts (and says "no CUDA driver") without a GPU.
// Values below are copied from CUDA 13.0's cuda.h / nvrtc.h; they are ABI and never change.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iron::cuda {

using CUresult = int;  // an enum in cuda.h; int-sized in the ABI
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUgraphNode = struct CUgraphNode_st*;
// cuda.h: CUgraphEdgeData (CUDA 12.3+), with the values a programmatic edge between kernel nodes
// uses: the downstream kernel may launch once every block of the upstream one has begun
// (CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER) and waits for it with griddepcontrol.wait
// (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC).
struct CUgraphEdgeData {
  unsigned char from_port;
  unsigned char to_port;
  unsigned char type;
  unsigned char reserved[5];
};
constexpr unsigned char CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER = 2;
constexpr unsigned char CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1;
// cuda.h: CUDA_KERNEL_NODE_PARAMS_v2 (what cuGraphAddKernelNode_v2 and
// cuGraphExecKernelNodeSetParams_v2 take; the unsuffixed symbols take the shorter v1 layout).
struct CudaKernelNodeParams {
  struct CUfunc_st* func;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void** kernelParams;
  void** extra;
  void* kern;  // CUkernel: only read when func is null
  struct CUctx_st* ctx;
};
// cuda.h: enum CUstreamCaptureMode. Thread-local: only this thread's unsafe calls are refused
// while it captures.
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

// cuda.h: the enums cuTensorMapEncodeTiled takes (CUtensorMapDataType, ...Interleave,
// ...Swizzle, ...L2promotion, ...FloatOOBfill), the values Iron uses.
constexpr int CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1, CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
              CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4;
constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
constexpr int CU_TENSOR_MAP_SWIZZLE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_32B = 1, CU_TENSOR_MAP_SWIZZLE_64B = 2,
              CU_TENSOR_MAP_SWIZZLE_128B = 3;
constexpr int CU_TENSOR_MAP_L2_PROMOTION_NONE = 0;
constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;  // out-of-bounds elements read as zeros

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;

// cuda.h: enum CUevent_flags. Default events record timestamps (CU_EVENT_DISABLE_TIMING = 2 would
// not); the host wait in cuEventSynchronize spins, which is what a benchmark wants.
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
// cuda.h: enum CUstream_flags. A non-blocking stream does not synchronize with the legacy null
// stream (Iron's streams order against each other through events only).
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// Only the attributes we query (cuda.h: enum CUdevice_attribute).
enum CUdevice_attribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,  // static __shared__ limit (48 KiB)
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,  // bytes; sizes the L2 flush buffer of timed launches
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,  // needs dynamic smem + opt-in
};

using nvrtcResult = int;  // an enum in nvrtc.h; NVRTC_SUCCESS = 0
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

}  // namespace iron::cuda

// IRON_CUDA_FN(symbol, return type, (parameter types)). The symbol is the exact exported name:
// where cuda.h #defines a name to a versioned one (cuMemAlloc -> cuMemAlloc_v2, ...), the
// versioned symbol is listed, since the unversioned export keeps the old 32-bit ABI.
// Contexts: we use the primary context (retain + set current), which CUDA 13 still supports and
// which shares state with any runtime-API user (PyTorch) in the same process.
#define IRON_CUDA_FUNCTIONS(IRON_CUDA_FN)                                                        \
  IRON_CUDA_FN(cuInit, CUresult, (unsigned))                                                     \
  IRON_CUDA_FN(cuDriverGetVersion, CUresult, (int*))                                             \
  IRON_CUDA_FN(cuDeviceGetCount, CUresult, (int*))                                               \
  IRON_CUDA_FN(cuDeviceGet, CUresult, (CUdevice*, int))                                          \
  IRON_CUDA_FN(cuDeviceGetName, CUresult, (char*, int, CUdevice))                                \
  IRON_CUDA_FN(cuDeviceGetAttribute, CUresult, (int*, CUdevice_attribute, CUdevice))             \
  IRON_CUDA_FN(cuDeviceTotalMem_v2, CUresult, (size_t*, CUdevice))                               \
  IRON_CUDA_FN(cuDevicePrimaryCtxRetain, CUresult, (CUcontext*, CUdevice))                       \
  IRON_CUDA_FN(cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice))                               \
  IRON_CUDA_FN(cuCtxSetCurrent, CUresult, (CUcontext))                                           \
  IRON_CUDA_FN(cuCtxSynchronize, CUresult, ())                                                   \
  IRON_CUDA_FN(cuMemAlloc_v2, CUresult, (CUdeviceptr*, size_t))                                  \
  IRON_CUDA_FN(cuMemFree_v2, CUresult, (CUdeviceptr))                                            \
  IRON_CUDA_FN(cuMemcpyHtoD_v2, CUresult, (CUdeviceptr, const void*, size_t))                    \
  IRON_CUDA_FN(cuMemcpyDtoH_v2, CUresult, (void*, CUdeviceptr, size_t))                          \
  IRON_CUDA_FN(cuModuleLoadData, CUresult, (CUmodule*, const void*))                             \
  IRON_CUDA_FN(cuModuleUnload, CUresult, (CUmodule))                                             \
  IRON_CUDA_FN(cuModuleGetFunction, CUresult, (CUfunction*, CUmodule, const char*))              \
  IRON_CUDA_FN(cuFuncGetAttribute, CUresult, (int*, int, CUfunction))                            \
  IRON_CUDA_FN(cuFuncSetAttribute, CUresult, (CUfunction, int, int))                             \
  IRON_CUDA_FN(cuLaunchKernel, CUresult,                                                         \
               (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                CUstream, void**, void**))                                                        \
  /* Timing (Device::time_launches). All exist since CUDA 4.0, so requiring them costs nothing;  \
     stream 0 through the unsuffixed (not _ptsz) symbols is the legacy null stream. */          \
  IRON_CUDA_FN(cuEventCreate, CUresult, (CUevent*, unsigned))                                    \
  IRON_CUDA_FN(cuEventRecord, CUresult, (CUevent, CUstream))                                     \
  IRON_CUDA_FN(cuEventSynchronize, CUresult, (CUevent))                                          \
  IRON_CUDA_FN(cuEventDestroy_v2, CUresult, (CUevent))                                           \
  IRON_CUDA_FN(cuMemsetD32Async, CUresult, (CUdeviceptr, unsigned, size_t, CUstream))           \
  /* Streams and events (Context::create_stream, record_event). */                              \
  IRON_CUDA_FN(cuStreamCreate, CUresult, (CUstream*, unsigned))                                  \
  IRON_CUDA_FN(cuStreamDestroy_v2, CUresult, (CUstream))                                         \
  IRON_CUDA_FN(cuStreamSynchronize, CUresult, (CUstream))                                        \
  IRON_CUDA_FN(cuStreamWaitEvent, CUresult, (CUstream, CUevent, unsigned))                       \
  IRON_CUDA_FN(cuEventQuery, CUresult, (CUevent))                                                \
  IRON_CUDA_FN(cuMemcpyHtoDAsync_v2, CUresult, (CUdeviceptr, const void*, size_t, CUstream))     \
  IRON_CUDA_FN(cuMemcpyDtoHAsync_v2, CUresult, (void*, CUdeviceptr, size_t, CUstream))

// Looked up but allowed to be missing. cuGetError*: only used to make error messages readable.
// cuEventElapsedTime: CUDA 13's cuda.h #defines it to cuEventElapsedTime_v2, which drivers export
// only since 12.8; older drivers (and JetPack 6) have just the unversioned symbol, same
// signature. Timing uses _v2 when present, else the unversioned one, and fails (only timing,
// not the whole backend) when neither exists.
#define IRON_CUDA_OPTIONAL_FUNCTIONS(IRON_CUDA_FN)                           \
  IRON_CUDA_FN(cuGetErrorName, CUresult, (CUresult, const char**))           \
  IRON_CUDA_FN(cuGetErrorString, CUresult, (CUresult, const char**))         \
  IRON_CUDA_FN(cuEventElapsedTime_v2, CUresult, (float*, CUevent, CUevent))  \
  IRON_CUDA_FN(cuEventElapsedTime, CUresult, (float*, CUevent, CUevent))      \
  /* Graphs (LaunchSequence); without them a sequence replays launch by launch. */       \
  IRON_CUDA_FN(cuStreamBeginCapture_v2, CUresult, (CUstream, int))           \
  IRON_CUDA_FN(cuStreamEndCapture, CUresult, (CUstream, CUgraph*))           \
  IRON_CUDA_FN(cuGraphInstantiateWithFlags, CUresult, (CUgraphExec*, CUgraph, unsigned long long)) \
  IRON_CUDA_FN(cuGraphLaunch, CUresult, (CUgraphExec, CUstream))             \
  IRON_CUDA_FN(cuGraphExecDestroy, CUresult, (CUgraphExec))                  \
  IRON_CUDA_FN(cuGraphDestroy, CUresult, (CUgraph))                         \
  /* Graphs built node by node and updated in place (CUDA 12.0+): a rebinding rewrites one   \
     kernel node of the executable graph instead of capturing and instantiating it again. */  \
  IRON_CUDA_FN(cuGraphCreate, CUresult, (CUgraph*, unsigned))                 \
  IRON_CUDA_FN(cuGraphAddKernelNode_v2, CUresult,                              \
               (CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CudaKernelNodeParams*)) \
  IRON_CUDA_FN(cuGraphExecKernelNodeSetParams_v2, CUresult,                    \
               (CUgraphExec, CUgraphNode, const CudaKernelNodeParams*))        \
  IRON_CUDA_FN(cuGraphUpload, CUresult, (CUgraphExec, CUstream))            \
  /* Programmatic edges (CUDA 12.3+): a kernel launches before the one it depends on is done. */ \
  IRON_CUDA_FN(cuGraphAddDependencies_v2, CUresult,                            \
               (CUgraph, const CUgraphNode*, const CUgraphNode*, const CUgraphEdgeData*, size_t)) \
  /* TMA tensor maps (CUDA 12.0+): a `tensormap` parameter's value. */         \
  IRON_CUDA_FN(cuTensorMapEncodeTiled, CUresult,                               \
               (void*, int, unsigned, void*, const unsigned long long*, const unsigned long long*, \
                const unsigned*, const unsigned*, int, int, int, int))

#define IRON_NVRTC_FUNCTIONS(IRON_NVRTC_FN)                                                       \
  IRON_NVRTC_FN(nvrtcVersion, nvrtcResult, (int*, int*))                                          \
  IRON_NVRTC_FN(nvrtcGetErrorString, const char*, (nvrtcResult))                                  \
  IRON_NVRTC_FN(nvrtcCreateProgram, nvrtcResult,                                                  \
                (nvrtcProgram*, const char*, const char*, int, const char* const*,                \
                 const char* const*))                                                             \
  IRON_NVRTC_FN(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram*))                                \
  IRON_NVRTC_FN(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram, int, const char* const*))        \
  IRON_NVRTC_FN(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t*))                     \
  IRON_NVRTC_FN(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char*))                           \
  IRON_NVRTC_FN(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram, size_t*))                          \
  IRON_NVRTC_FN(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram, char*))
