// The runner engine behind `iron-runner`: executes test / inspect / build / device / list and
// streams protocol messages (core/protocol.hpp) to stdout.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "iron/harness.hpp"
#include "iron/launch.hpp"
#include "iron/runtime.hpp"

namespace iron {
namespace ir {
struct Kernel;
}

struct TestOutcome {
  enum class Status { Pass, Fail, Skip } status = Status::Fail;
  double max_error = 0;   // largest element error, in the unit of `tolerance`
  double tolerance = 0;   // the rule applied (ulps of the output dtype when derived)
  bool ulps = true;       // the unit of max_error and tolerance: ulps, or relative
  size_t compared = 0;    // output elements compared with the oracle; 0 when the case failed before
  std::string message;    // why it failed (first mismatch, dispatch error, ...)
};

// One case's buffers on a device: inputs rounded to their buffer dtype once (device and oracle
// see the same values) and uploaded, outputs pre-filled with all-ones bytes (NaN) so an element
// the kernel never writes fails, and the oracle's answer. Every buffer is allocated
// kGuardElements longer than the case declares, with that guard band filled with a sentinel
// (a NaN in every float format, different for inputs and outputs, so a kernel copying past the
// end of an input into past the end of an output still changes a guard); check_outputs fails
// the case when a guard changed (a write past the end). Shared by `test` and `bench`.
constexpr size_t kGuardElements = 64;
constexpr uint32_t kGuardWord[2] = {0x7fa5a5a5u, 0x7fb4b4b4u};  // [input, output], 32-bit dtypes
constexpr uint16_t kGuardHalf[2] = {0x7fa5u, 0x7fb4u};          // [input, output], f16 and bf16
// The guard pattern of one element of `size` bytes (1, 2, 4 or 8): the low bytes of the 16- or
// 32-bit pattern, the 32-bit one twice for 64-bit elements.
inline void guard_element(size_t size, bool output, unsigned char* out) {
  if (size == 2) {
    __builtin_memcpy(out, &kGuardHalf[output], 2);
    return;
  }
  for (size_t at = 0; at < size; at += 4) __builtin_memcpy(out + at, &kGuardWord[output], size < 4 ? size : 4);
}
struct GuardedBuffer {
  std::string name;
  DeviceBuffer buffer;
  size_t count = 0;  // elements the case declared; the guard band follows them
  bool output = false;
};
struct Resident {
  Bindings bindings;
  std::vector<GuardedBuffer> outputs;
  std::vector<GuardedBuffer> inputs;
  Tensors expected;
  // Outputs checked by a sampled oracle: the flat indices checked, in the order of expected[name]
  // (which then holds one value per index); every other element must be finite.
  std::map<std::string, std::vector<size_t>> sampled;
};
// Threadgroup bytes a dispatch of `k` with these scalars needs (ir::threadgroup_bytes with the
// integer scalars' values; arrays sized at dispatch included).
uint64_t dispatch_threadgroup_bytes(const ir::Kernel& k, Instantiation dtype, const Constexprs& scalars);
// Throws iron::Error naming a setup that does not match the kernel's parameters.
Resident make_resident(Context& ctx, const ir::Kernel& k, const TestSetup& setup, Instantiation dtype);
// The same for buffers whose dtypes come from elsewhere (a family's plan): `types(name, role)`
// returns the dtype of the named input or output ("input"/"output") or throws naming it.
using BufferTypes = std::function<DType(const std::string& name, const char* role)>;
Resident make_resident(Context& ctx, const BufferTypes& types, const TestSetup& setup);
// The buffer dtypes of a plan: a buffer's dtype is that of the first step parameter bound to it.
BufferTypes plan_buffer_types(const LaunchPlan& plan, Instantiation dtype);

struct Correctness {
  bool pass = false;
  double max_error = 0;  // largest element error in the rule's unit
  Tolerance rule;        // the rule of the first output (the one reported)
  size_t compared = 0;   // elements compared
  std::string message;   // the first mismatch, or the first changed guard element
};
// Downloads the outputs, compares them with the oracle under case_tolerance(setup, declared,
// output dtype), and checks every guard band (inputs' and outputs').
Correctness check_outputs(Context& ctx, const Resident& r, const TestSetup& setup, double declared);
// The same with an explicit relative tolerance (benchmark declarations).
Correctness check_outputs(Context& ctx, const Resident& r, double floor, double tol);

// What is wrong with running `decl` at `dtype` ("" when nothing): a dtype the kernel never uses.
std::string dtype_label_problem(const TestDecl& decl, const ir::Kernel& k, Instantiation dtype);

// `--dtype` as given: "" selects every instantiation, a dtype ("f16") every one whose T it is
// (whatever W), T,W ("f16,bf16") that pair only. Throws iron::Error on an unknown name.
std::optional<Instantiation> parse_dtype_filter(const std::string& s);
bool dtype_filter_matches(const std::optional<Instantiation>& only, Instantiation in);
// "" when the device stores every dtype of `in`; else "device X does not support f16".
std::string unsupported_dtype(const DeviceInfo& dev, Instantiation in);

// Runs one registered case at one dtype on `ctx`. Never throws: every problem is a Fail.
// `tol` is the declared tolerance (NaN: derived from the case). `kernel` replaces the registered
// kernel of that name (mutation tests, A/B runs); it must have the same parameters.
TestOutcome run_test_case(Context& ctx, const TestDecl& decl, Instantiation dtype, double tol,
                          const ir::Kernel* kernel = nullptr);

// Whether running `decl` at `dtype` on `ctx` dispatches kernel `name`: its own kernel for a
// direct case, a step of the plan for a case of a family. False when the case cannot be planned.
bool case_runs_kernel(Context& ctx, const TestDecl& decl, Instantiation dtype, std::string_view name);

int runner_main(int argc, char** argv);

// A value as the command line wrote it: an integer when it is one, else a float. `option` names
// the command-line option in the error ("--specialize", "--arg"). Throws iron::Error.
ScalarValue scalar_from_text(const char* option, const std::string& name, const std::string& text);
// The `device` protocol message of a device.
nlohmann::json device_message(const DeviceInfo& d);

// `iron run NAME [NAME=VALUE|NAME=FILE.npy]...` (run_kernel.cpp): a family through its selector,
// or a kernel with an explicit --grid/--tg, on the user's .npy inputs (or, with no file and no
// output named, on a deterministic pattern), outputs summarized and written as .npy.
struct RunRequest {
  std::string name;
  std::vector<std::string> assignments;  // NAME=VALUE (a scalar or call argument), NAME=FILE.npy
  std::string dtype, backend;
  std::string grid, tg;                  // both or neither
  std::string out_dir;                   // -o DIR: every output as DIR/NAME.npy
  std::vector<std::string> outs;         // --out NAME=FILE.npy
  int samples = 0;
  bool flush_l2 = false, flush_l2_read = false;  // the timing's L2 flush (TimingOptions)
};
int run_kernel(const RunRequest& r, const std::function<void(const nlohmann::json&)>& send);

// `bench` and `calibrate` (bench_runner.cpp): argv as given to the runner.
int bench_main(int argc, char** argv);

}  // namespace iron
