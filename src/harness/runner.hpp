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

// One case's buffers on a device: inputs rounded to their buffer dtype once (device and oracle
// see the same values) and uploaded, outputs pre-filled with all-ones bytes (NaN) so an element
// the kernel never writes fails, and the oracle's answer. Shared by `test` and `bench`.
struct Resident {
  Bindings bindings;
  std::vector<std::pair<std::string, DeviceBuffer>> outputs;
  Tensors expected;
};
// Throws iron::Error naming a setup that does not match the kernel's parameters.
Resident make_resident(Context& ctx, const ir::Kernel& k, const TestSetup& setup, DType dtype);

struct Correctness {
  bool pass = false;
  double max_error = 0;  // largest |device - oracle| / max(floor, |oracle|)
  std::string message;   // the first mismatch
};
// Downloads the outputs and compares them with the oracle.
Correctness check_outputs(Context& ctx, const Resident& r, double floor, double tol);

// Runs one registered case at one dtype on `ctx`. Never throws: every problem is a Fail.
// `kernel` replaces the registered kernel of that name (mutation tests, A/B runs); it must have
// the same parameters.
TestOutcome run_test_case(Context& ctx, const TestDecl& decl, DType dtype, double tol,
                          const ir::Kernel* kernel = nullptr);

int runner_main(int argc, char** argv);

// `bench` and `calibrate` (bench_runner.cpp): argv as given to the runner.
int bench_main(int argc, char** argv);

}  // namespace iron
