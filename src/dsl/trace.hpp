// Internal: the state of one kernel trace (see tracer.cpp) and the hooks the registry uses.
#pragma once

#include <vector>

#include "core/ir.hpp"

namespace iron::dsl::detail {

struct Trace {
  ir::Kernel k;
  std::vector<ir::Id> open{0};  // stack of blocks receiving new instructions
  ir::Diagnostics diags;
  int unique = 0;               // counter for generated names
  bool too_deep = false;        // the nesting limit was reported (once per trace)
};

// Makes `t` the active trace of this thread; returns the previous one.
Trace* set_trace(Trace* t);

}  // namespace iron::dsl::detail
