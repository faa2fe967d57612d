// The runner engine behind `iron-runner`: executes test / inspect / build / device / list and
// streams protocol messages (core/protocol.hpp) to stdout.
#pragma once

#include <optional>
#include <string>

#include "iron/harness.hpp"
#include "iron/runtime.hpp"

namespace iron {
namespace ir {
struct Kernel;
}

struct TestOutcome {
  enum class Status { Pass, Fail, Skip } status = Status::Fail;
  double max_error = 0;   // largest |device - oracle| / max(floor, |oracle|)
  std::string message;    // why it failed (first mismatch, dispatch error, ...)
};

// Runs one registered case at one dtype on `ctx`. Never throws: every problem is a Fail.
// `kernel` replaces the registered kernel of that name (mutation tests, A/B runs); it must have
// the same parameters.
TestOutcome run_test_case(Context& ctx, const TestDecl& decl, DType dtype, double tol,
                          const ir::Kernel* kernel = nullptr);

int runner_main(int argc, char** argv);

// `bench` and `calibrate` (bench_runner.cpp): argv as given to the runner.
int bench_main(int argc, char** argv);

}  // namespace iron
