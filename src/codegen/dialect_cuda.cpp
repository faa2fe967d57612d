// CUDA C++ dialect (dialect_cuda.hpp): the spellings as data, and the entry points.
#include "codegen/dialect_cuda.hpp"

namespace iron::codegen {

DialectSpelling CudaDialect::cuda_spelling() {
  DialectSpelling sp;  // the defaults are CUDA C++'s register types, casts and literals
  sp.name = "CUDA";
  sp.helper_prefix = "__device__ __forceinline__ ";
  sp.barrier = "__syncthreads();";
  sp.fence_threadgroup = "__threadfence_block();";
  sp.fence_device = "__threadfence();";
  // CUDA's accurate (non-intrinsic) single-precision library: floorf, sinf, ... (NVRTC gets no
  // fast-math option); rintf, floorf, ceilf, truncf are exact (cvt.rni / rmi / rpi / rzi).
  sp.float_math_suffix = "f";
  sp.float_ops = {{ir::Op::Abs, "fabsf(%0)"}};
  return sp;
}

bool cuda_dynamic_shared(const ir::Kernel& k, Instantiation dtype) {
  // A kernel with cooperative tiles may take the wmma strategy, whose prelude declares a 32 KiB
  // static staging area (tiles.cpp): its arrays go to dynamic shared memory when the two together
  // would pass the 48 KiB a kernel's static shared memory may hold.
  bool tiles = false;
  ir::walk(k, [&](ir::Id id) { tiles = tiles || ir::is_tile_op(k.insts[id].op); });
  const uint64_t wmma = tiles ? 32 * 1024 : 0;
  return ir::has_dynamic_threadgroup(k) || ir::threadgroup_bytes(k, dtype) + wmma > kCudaStaticSharedLimit;
}

std::unique_ptr<Dialect> make_cuda_dialect() { return std::make_unique<CudaDialect>(); }

}  // namespace iron::codegen
