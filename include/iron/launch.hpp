// Kernel-owned launch (seeds §2.5): a kernel family declares, beside its kernels, how a logical
// call — named sizes and scalars, the dtype, the device — maps to concrete kernels, grids and
// threadgroups. That mapping is the family's selector, conventionally `<family>_for`, registered
// with IRON_SELECTOR. Tests, benchmarks and `iron run` dispatch a family by logical shape through
// it and never assemble a grid by hand; a plan that names a kernel or dtype that was never built
// is refused with the family, the step and what is missing.
//
// A plan is one or more steps run in order on one Context (a split-row softmax writes partials
// in step 1 and combines them in step 2); scratch buffers between steps are the plan's own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iron/registry.hpp"
#include "iron/runtime.hpp"
#include "iron/types.hpp"

namespace iron {

// A logical call of a family: what the caller knows (sizes, scalars such as eps, the dtype).
struct Call {
  Instantiation dtype;
  Constexprs args;
  // An integer argument; throws iron::Error naming the argument when it is absent, not an
  // integer, or negative.
  int64_t size(std::string_view name) const;
  // A float (or integer) argument as a double; throws when absent.
  double scalar(std::string_view name) const;
  // The argument when present, else `fallback`.
  int64_t size_or(std::string_view name, int64_t fallback) const;
  double scalar_or(std::string_view name, double fallback) const;
  bool has(std::string_view name) const { return args.find(name) != args.end(); }
};

struct LaunchStep {
  std::string kernel;     // a registered concrete kernel (a variant's entry name), or the library routine
  Dim3 grid{0, 0, 0};     // counted in threadgroups
  Dim3 threadgroup{0, 0, 0};
  Constexprs constexprs;  // every scalar parameter the kernel declares
  // Kernel buffer parameter -> the call's buffer or a scratch buffer; a parameter not listed
  // binds the call's buffer of its own name.
  std::vector<std::pair<std::string, std::string>> bind;
  // A library step: not a kernel but a vendor routine on the call's buffers. The one routine is
  // "blas.gemm", iron::blas::gemm (cuBLASLt, include/iron/blas.hpp; CUDA only): C [m, n] row-major
  // = A B with the constexprs m, n, k, a_col (0 A row-major, 1 column-major), lda, a_off, b_col,
  // ldb, b_off, out (C's dtype: 0 T, 1 f32, 2 f16, 3 bf16), and the buffers a, b, c (bind renames
  // them as for a kernel). grid and threadgroup are {1, 1, 1}. run_plan and time_plan run it;
  // plan_launches (a kernel sequence) refuses it.
  bool library = false;
  // Tensor-map parameters (`tensor_map` in the DSL) the step builds at dispatch over one of the
  // call's (or the plan's scratch) buffers: the parameter gets TensorMap{that buffer, dims,
  // strides, box, swizzle} (include/iron/runtime.hpp), checked like any tensor map at dispatch.
  struct Map {
    std::string param;              // the kernel's tensor-map parameter
    std::string buffer;             // the buffer it maps, by the name a bind would use
    std::vector<uint64_t> dims;     // elements per dimension, innermost first
    std::vector<uint64_t> strides;  // byte strides of dimensions 1.. (empty: packed)
    std::vector<uint32_t> box;
    TensorMap::Swizzle swizzle = TensorMap::Swizzle::None;
  };
  std::vector<Map> maps{};
};

struct ScratchBuffer {
  std::string name;
  DType dtype = DType::F32;
  size_t count = 0;
  // Set: every plan runner (run_plan, plan_launches, time_plan, the C API's pooled buffers)
  // clears the buffer to zero bytes when it allocates it for a call, before the first step. The
  // plan's kernels must then leave it zero when they finish (counters that reset themselves), so
  // launches repeated on one allocation (timing, a recorded sequence) find it zero too. Unset: its
  // contents are unspecified until a step writes them.
  bool zeroed = false;
};

struct LaunchPlan {
  std::vector<LaunchStep> steps;
  std::vector<ScratchBuffer> scratch;
  std::string reason;  // why these kernels: "d = 4096 <= 8192: the row in registers (VEC 8)"
  // "iron_rms_norm_r8 grid 4096x1x1 tg 256x1x1" per step, "; "-separated: what `iron run` and
  // the selector tests print.
  std::string describe() const;
  bool has_library_step() const;
};

using SelectorFn = LaunchPlan (*)(const Call& call, const DeviceInfo& device);

struct SelectorDecl {
  const char* family;
  SelectorFn fn;
  const char* file;
  int line;
};

// Adds a selector to the registry (static initializers). A family name registered twice is
// recorded in registry_errors() and the later one is dropped. A family may share its name with
// one of its kernels (iron_rmsnorm the family, iron_rmsnorm the generic kernel): a case that
// gives a .call(...) goes through the selector, one that gives a .grid(...) runs the kernel.
int register_selector(const SelectorDecl& decl);
std::vector<const SelectorDecl*> registered_selectors();  // in family name order
const SelectorDecl* find_selector(std::string_view family);

// Runs the family's selector and checks the plan it returns: at least one step; every step names
// a registered kernel declared for call.dtype, a threadgroup and grid with no zero axis, and only
// scalars the kernel declares; every bind names a buffer parameter of the kernel; scratch names
// are unique and do not shadow each other. Throws iron::Error naming the family, its
// declaration's file:line and the step (an unknown family lists the registered ones).
LaunchPlan plan_launch(std::string_view family, const Call& call, const DeviceInfo& device);

// The buffer a step binds to kernel parameter `param` (the bind entry, else `param`).
const std::string& step_buffer(const LaunchStep& step, const std::string& param);

// A step's scalar arguments at dispatch: its constexprs plus each of its tensor maps built over
// the buffer of `buffers` it names (an error naming the step when that buffer is missing).
Constexprs step_scalars(const LaunchStep& step, const Bindings& buffers);

// A library step's buffer parameters and their dtypes at `dtype` ("a" and "b": T; "c": the
// step's `out`), in binding order.
std::vector<std::pair<std::string, DType>> library_step_buffers(const LaunchStep& step, Instantiation dtype);

// Clears `buf` to zero bytes (an upload of zeros, ordered on `stream` like Context::upload): what
// the plan runners do to a ScratchBuffer marked `zeroed` when they allocate it.
void zero_scratch(Context& ctx, const DeviceBuffer& buf, const Stream& stream = {});

// Runs a checked plan on `ctx`: allocates the scratch buffers, then dispatches every step with
// dispatch_with_grid (so every step is validated before it launches; a library step runs its
// routine, which validates its own arguments). `buffers` are the call's buffers by name. Does not
// synchronize.
void run_plan(Context& ctx, const LaunchPlan& plan, Instantiation dtype, const Bindings& buffers);

// The launches of a checked plan with their buffers bound (scratch buffers allocated on `ctx`),
// for callers that time or record them. A plan with a library step is refused (it is no kernel
// sequence): run it with run_plan, time it with time_plan.
std::vector<SequenceLaunch> plan_launches(Context& ctx, const LaunchPlan& plan, Instantiation dtype, const Bindings& buffers);
// Times the whole plan as one sample (Context::time_sequence; a plan of one library step: the
// routine's own timing, iron::blas::time_gemm, with the same options).
Timing time_plan(Context& ctx, const LaunchPlan& plan, Instantiation dtype, const Bindings& buffers,
                 const TimingOptions& opts);

// Plans and runs a family in one call: what an inference engine does per layer.
LaunchPlan launch(Context& ctx, std::string_view family, const Call& call, const Bindings& buffers);

}  // namespace iron

// IRON_SELECTOR(iron_rms_norm, rms_norm_for): rms_norm_for is
// `iron::LaunchPlan rms_norm_for(const iron::Call&, const iron::DeviceInfo&)`.
#define IRON_SELECTOR(family, fn)                                                                 \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_selector_reg_, family) =                 \
      ::iron::register_selector(::iron::SelectorDecl{#family, &fn, __FILE__, __LINE__})
