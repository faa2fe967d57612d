// Kernel registration. IRON_KERNEL records a kernel body in a static registry; the body is
// traced on first use, checked against its mode (the registry gate) and verified. A kernel
// that reads a built-in its mode does not bind is rejected with its name and DSL file:line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "iron/types.hpp"

namespace iron {
namespace ir {
struct Kernel;
}

using KernelBody = void (*)();

struct KernelDecl {
  const char* name;
  KernelBody body;
  Mode mode;
  std::vector<DType> dtypes;  // what T may be; empty for a kernel that does not use T
  const char* file;
  int line;
  std::vector<DType> wtypes = {};  // what W may be; empty for a kernel that does not use W
};

// A DSL file path as Iron shows it: relative to the source tree when it lies inside it.
std::string source_path(const char* file);

// Adds a kernel to the process-wide registry; returns its index. Called from static initializers.
int register_kernel(const KernelDecl& decl);

// Every registered kernel, in name order.
std::vector<const KernelDecl*> registered_kernels();
const KernelDecl* find_kernel_decl(std::string_view name);

// The traced, gated and verified IR of a registered kernel (cached, thread-safe). Throws
// iron::Error with every diagnostic when the kernel is unknown or malformed.
const ir::Kernel& kernel_ir(std::string_view name);

// True when `k` is the registry's own traced kernel (as returned by kernel_ir): such a kernel
// never changes or moves for the life of the process, so per-object caches may key on it.
bool is_registry_kernel(const ir::Kernel* k);

// Traces a body without registering it (tests, tools). Throws iron::Error on diagnostics.
ir::Kernel trace_kernel(const KernelDecl& decl);

// Device functions (see dsl.hpp: arg, ret, call). Registered like kernels, traced on first use.
struct DeviceFunctionDecl {
  const char* name;
  KernelBody body;
  const char* file;
  int line;
};
int register_device_function(const DeviceFunctionDecl& decl);
std::vector<const DeviceFunctionDecl*> registered_device_functions();
// The traced and verified IR of a device function; nullptr when no function has that name.
// Throws iron::Error when the function is malformed.
const ir::Kernel* device_function_ir(std::string_view name);

}  // namespace iron

#define IRON_DETAIL_CAT2(a, b) a##b
// IRON_DEVICE_FN(iron_sigmoid, sigmoid_body)
#define IRON_DEVICE_FN(fname, body_fn)                                                           \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_fn_reg_, fname) =                        \
      ::iron::register_device_function(::iron::DeviceFunctionDecl{#fname, &body_fn, __FILE__, __LINE__})

#define IRON_DETAIL_CAT(a, b) IRON_DETAIL_CAT2(a, b)

#define IRON_DETAIL_UNPAREN(...) __VA_ARGS__

// IRON_KERNEL_TW(iron_scale_by_weight, body, Elementwise, (f32, f16, bf16), (f32, f16, bf16)):
// a kernel generic over T and W; every T x W pair of the two lists is an instantiation.
#define IRON_KERNEL_TW(kname, body_fn, kmode, tlist, wlist)                                       \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_kernel_reg_, kname) = ::iron::register_kernel( \
      ::iron::KernelDecl{#kname, &body_fn, ::iron::Mode::kmode, {IRON_DETAIL_UNPAREN tlist}, __FILE__, __LINE__, \
                         {IRON_DETAIL_UNPAREN wlist}})

// IRON_KERNEL(iron_add, add_body, Elementwise, f32, f16, bf16)
#define IRON_KERNEL(kname, body_fn, kmode, ...)                                                   \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_kernel_reg_, kname) = ::iron::register_kernel( \
      ::iron::KernelDecl{#kname, &body_fn, ::iron::Mode::kmode, {__VA_ARGS__}, __FILE__, __LINE__})
