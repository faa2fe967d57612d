// `iron test --mutate`: IR-level mutation testing of the kernel library. Every registered kernel
// that has test cases is traced, each site of each mutation kind in the catalogue is enumerated
// in program order, and each mutant runs the kernel's registered cases on the selected backend.
// A mutant is killed when any case fails or errors; one that passes every case survives, which
// means the tests cannot tell the bug from the kernel. A mutant that provably cannot change
// behaviour is reported as equivalent, with the proof, and not run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/ir.hpp"
#include "iron/harness.hpp"
#include "iron/runtime.hpp"

namespace iron::mutate {

struct Mutant {
  std::string kind;        // catalogue entry, e.g. "loop_bound+1"
  std::string site;        // DSL file:line of the mutated op
  std::string detail;      // which op and what changed, e.g. "for #2: end -> end + 1"
  ir::Kernel kernel;       // the mutated traced IR
  std::string equivalent;  // non-empty: why the mutant cannot change behaviour
};

// The catalogue, in the order mutants are enumerated.
const std::vector<std::string>& catalogue();

// Every mutant of `k` (traced, before the pipeline), deterministic: catalogue order, then
// program order (pre-order walk). Structural equivalences are recognized here; the caller
// checks the remaining ones (equivalent_after_pipeline) before running a mutant.
// `lane_width` and `max_threads` are the device's: a few mutants are equivalent on one device
// only (a loop over lane groups that no lane can run twice when max_threads <= lane_width^2).
std::vector<Mutant> enumerate(const ir::Kernel& k, uint32_t lane_width, uint32_t max_threads);

// "" or the proof that `m` optimizes to the same IR as `original` (so every backend runs the
// same program).
std::string equivalent_after_pipeline(const ir::Kernel& original, const Mutant& m);

// Runs one mutant: equivalent (m.equivalent, else equivalent_after_pipeline) and not run, or
// killed by the first case x dtype that fails or errors (`by` names it), or survived.
struct Outcome {
  enum class Status { Killed, Survived, Equivalent } status = Status::Survived;
  std::string by;  // the killing case and its message, or the equivalence proof
  // Killed: the case and dtype that killed it (the caller checks the original kernel passes them).
  const TestDecl* killer = nullptr;
  DtypeTolerance killer_dtype{};
  // Killed by a sticky device error (CUDA's illegal address): the context cannot run anything
  // more, so the caller makes a new one before the next run.
  bool context_lost = false;
};
Outcome run_mutant(Context& ctx, const ir::Kernel& original, const Mutant& m, const std::vector<const TestDecl*>& cases,
                   std::optional<Instantiation> only = std::nullopt);

}  // namespace iron::mutate
