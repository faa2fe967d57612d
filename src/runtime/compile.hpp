// The one compile path: trace -> optimize (the backend-neutral passes) -> lower (the target's
// stage) -> emit (its dialect) -> compile (its offline compiler), with the target's row of the
// registry (codegen/target.hpp) choosing dialect and compiler. Context and the devices, `iron
// build` and `iron inspect` all go through it; a failure at any step is one located message.
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "passes/pass.hpp"

namespace iron::rt {

struct Compiled {
  ir::Kernel kernel;          // what was emitted: optimized and lowered
  codegen::Emitted emitted;   // source, entry name, line -> DSL location map
  std::vector<char> binary;   // CUBIN (CUDA), SPIR-V words (Vulkan), code object (HIP); empty
                              // when not compiled or the target has no compiler here
  std::string log;            // the compiler's messages, errors located in the DSL
  std::string error;          // why a step failed (located where it can be); empty on success
  bool ok() const { return error.empty(); }
};

// Optimize: the default pipeline with the launch facts and specialized values.
ir::Kernel optimize_kernel(const ir::Kernel& traced, const passes::LaunchFacts& launch = {},
                           const passes::Specialization& spec = {});

// Lower, emit and (with `compile`) compile an optimized kernel for one instantiation. Never
// throws for a kernel the target cannot take or a compiler error: `error` says it; throws
// iron::Error only when the compiler itself cannot be loaded (NVRTC missing).
Compiled compile_optimized(const ir::Kernel& optimized, Instantiation dtype, const codegen::TargetProfile& profile,
                           const codegen::EmitOptions& options = {}, bool compile = true);

// Every step from the traced kernel.
Compiled compile_kernel(const ir::Kernel& traced, Instantiation dtype, const codegen::TargetProfile& profile,
                        const codegen::EmitOptions& options = {}, const passes::LaunchFacts& launch = {},
                        const passes::Specialization& spec = {}, bool compile = true);

}  // namespace iron::rt
