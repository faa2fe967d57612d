// A SIMT interpreter of verified IR: threadgroups run one after another, the threads of a group
// in lock step under an active mask. Barriers, threadgroup memory and lane reductions are exact
// (a divergent barrier or a partially active lane group is an error, not a hang), and every
// scalar op goes through eval.hpp, the semantics the constant folder shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir.hpp"

namespace iron::interp {

struct Options {
  uint32_t lane_width = 32;
  uint64_t max_steps = 1ull << 31;  // op executions x active threads, over the whole launch
  // A read of a threadgroup slot no thread of the group has written is an error (the interpreter
  // device sets it: a GPU's threadgroup memory starts undefined); otherwise such a slot reads as
  // all-ones bits, deterministically.
  bool uninitialized_tg_reads_are_errors = false;
};

// A tensor map's logical description (what the CUDA driver encodes into the 128 bytes of a
// `tensormap` parameter): tma_load_2d and tma_store_2d copy through it (docs/semantics.md
// "Tensor-map copies"). Dimension 0 is the innermost.
struct TensorMapArg {
  unsigned char* data = nullptr;  // element (0, 0, ...) of the tensor
  size_t bytes = 0;               // the bytes from data that belong to the tensor's buffer
  DType dtype = DType::F32;       // the element type
  uint32_t rank = 0;
  uint64_t dims[5] = {};
  uint64_t strides[5] = {};  // bytes from one entry of dimension d to the next (strides[0]: the element size)
  uint32_t box[5] = {};
  uint32_t swizzle = 0;  // the swizzle's span in bytes: 0 (none), 32, 64 or 128
};

struct BufferArg {
  void* data;
  size_t bytes;
  // A strided view's element stride: only indices that are multiples of it are its elements
  // (an access between them is an error, like one past the end).
  uint64_t stride = 1;
  // A tensormap parameter: its description (data/bytes are then its 128 bytes, which the
  // interpreter does not read: they are the driver's encoding).
  const TensorMapArg* map = nullptr;
};  // raw storage bytes in the parameter's concrete dtype

// Runs `k` (already verified) with T = `dtype`. buffers: one per buffer or blob parameter in
// declaration order (a blob: its bytes, read as u32 words); scalars: one bit pattern per scalar parameter in declaration order (LaunchArgs::scalars:
// f32 and 32-bit integers in the low 4 bytes, i64 and u64 whole). Throws
// iron::Error naming the op's DSL location on out-of-range accesses, misaligned or
// non-contiguous vectorize groups, divergent barriers, partially active lane groups, undefined
// integer ops, runaway loops (opts.max_steps), and threadgroup-memory races: a slot read or
// written by one thread after another thread wrote it, or written after another thread read it,
// with no barrier between (the error names the slot, both threads and both ops), and, with
// opts.uninitialized_tg_reads_are_errors, reads of a threadgroup slot no thread of the group wrote.
void run(const ir::Kernel& k, Instantiation dtype, const std::vector<BufferArg>& buffers, const std::vector<uint64_t>& scalars,
         Dim3 grid, Dim3 threadgroup, const Options& opts);

}  // namespace iron::interp
