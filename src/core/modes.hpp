// The five kernel modes (seeds §2.5): which built-ins and threadgroup operations each binds, and
// the dispatch geometry each accepts. One table, read by the registry gate (src/dsl/registry.cpp)
// and by dispatch validation (src/runtime/context.cpp), so the two never disagree.
#pragma once

#include <string>
#include <vector>

#include "core/ir.hpp"

namespace iron::ir {

// Whether kernels of mode `m` may use `op` (for the per-axis built-ins, at `axis`). Ops that are
// neither built-ins nor lane or threadgroup operations are bound by every mode.
bool mode_binds(Mode m, Op op, int64_t axis);

// The modes that bind `op` at `axis`, as a message fragment: "Grid3D", "Reduction or
// SimdGroup2D", "Reduction, Tile2D or SimdGroup2D".
std::string modes_binding(Op op, int64_t axis);

// How the op reads in a diagnostic: "thread_id(1)" for a per-axis built-in, else its mnemonic.
std::string builtin_text(Op op, int64_t axis);

// The geometry rule of mode `m` for a dispatch of `grid` threadgroups of `tg` threads on a device
// of `lane_width` lanes; appends one message per violation to `problems`. The rules common to
// every mode (no zero dimension, the thread-count limit, device limits) are not repeated here.
void check_mode_geometry(Mode m, Dim3 grid, Dim3 tg, uint32_t lane_width, std::vector<std::string>& problems);

}  // namespace iron::ir
