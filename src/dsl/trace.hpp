// Internal: the state of one kernel trace (see tracer.cpp) and the hooks the registry uses.
#pragma once

#include <vector>

#include "core/builder.hpp"
#include "core/ir.hpp"

namespace iron::dsl::detail {

struct Trace {
  Trace() = default;
  Trace(const Trace&) = delete;  // the builder refers to k
  Trace& operator=(const Trace&) = delete;

  ir::Kernel k;
  ir::Builder b{k};             // every instruction of the trace is built through it
  ir::Diagnostics diags;
  int unique = 0;               // counter for generated names
  bool too_deep = false;        // the nesting limit was reported (once per trace)
};

// Makes `t` the active trace of this thread; returns the previous one.
Trace* set_trace(Trace* t);

}  // namespace iron::dsl::detail
