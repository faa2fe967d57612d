// Kernel registration. IRON_KERNEL records a kernel body in a static registry; the body is
// traced on first use, checked against its mode (the registry gate) and verified. A kernel
// that reads a built-in its mode does not bind is rejected with its name and DSL file:line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "iron/types.hpp"

namespace iron {
namespace ir {
struct Kernel;
}

using KernelBody = void (*)();

// Variants (seeds §2.5): one generic body expands into several concrete kernels over axes of
// integers, types and floats. Each concrete kernel is an ordinary registered kernel whose name
// is the family name, '_' and the suffix template with every {AXIS} replaced by its value; its
// body receives the variant's values as plain C++ values, so they are compile-time constants
// of the traced IR (loop bounds and sizes fold). See docs/dsl.md#variants.
struct VariantValue {
  enum class Kind : uint8_t { Int, Type, Float };
  Kind kind = Kind::Int;
  int64_t i = 0;
  DType t = DType::Void;
  double f = 0;
};
struct VariantAxis {
  const char* name;
  VariantValue::Kind kind;
  std::vector<VariantValue> values;
};
VariantAxis int_axis(const char* name, std::vector<int64_t> values);
VariantAxis type_axis(const char* name, std::vector<DType> values);
VariantAxis float_axis(const char* name, std::vector<double> values);

// One concrete kernel of a family: its entry name and one value per axis, in axis order.
struct KernelVariant {
  std::string family;
  std::string name;
  std::vector<std::pair<std::string, VariantValue>> values;
  // The value of an axis; throws iron::Error naming the family when the axis is not declared or
  // is of another kind (the tracer reports it at the family's registration).
  int64_t i(std::string_view axis) const;
  DType type(std::string_view axis) const;
  double f(std::string_view axis) const;
  // "TG=128 ACC=f32 EPS=1e-05": the values as `iron list` shows them.
  std::string describe() const;
};
using VariantBody = void (*)(const KernelVariant&);

struct VariantFamilyDecl {
  const char* family;
  VariantBody body;
  Mode mode;
  std::vector<DType> dtypes;  // what T may be (for every variant); empty when T is unused
  const char* suffix;         // e.g. "{TG}x{VEC}": the entry name is family + "_" + expansion
  std::vector<VariantAxis> axes;
  const char* file;
  int line;
  std::vector<DType> wtypes = {};
};

// A value as it appears in an entry name: 128, m3 (for -3), f16, 0p5 (for 0.5), 1em05.
std::string variant_value_text(const VariantValue& v);

// The concrete kernels of a family: the product of its axes, the first axis varying slowest.
// Throws iron::Error naming the family and its file:line for a bad declaration: no axis, an
// empty axis, two axes of one name, a placeholder that names no axis or is not closed, a
// character an entry name cannot hold, or two variants that expand to one name.
std::vector<KernelVariant> expand_variants(const VariantFamilyDecl& decl);

struct KernelDecl {
  const char* name;
  KernelBody body;
  Mode mode;
  std::vector<DType> dtypes;  // what T may be; empty for a kernel that does not use T
  const char* file;
  int line;
  std::vector<DType> wtypes = {};  // what W may be; empty for a kernel that does not use W
  // A kernel expanded from a variant family: the family's body and this kernel's values
  // (body is then null). Owned by the registry.
  VariantBody variant_body = nullptr;
  const KernelVariant* variant = nullptr;
};

// A DSL file path as Iron shows it: relative to the source tree when it lies inside it.
std::string source_path(const char* file);

// Adds a kernel to the process-wide registry; returns its index. Called from static initializers.
int register_kernel(const KernelDecl& decl);

// Expands a family and registers each of its kernels. A bad declaration, or a kernel name that
// another registered kernel already has, registers nothing and is recorded in registry_errors()
// (static initializers must not throw). Returns the family's index, or -1.
int register_variant_family(const VariantFamilyDecl& decl);

// Registered families and their expansions, in family name order.
struct VariantFamilyInfo {
  const VariantFamilyDecl* decl;
  std::vector<const KernelVariant*> variants;
};
std::vector<VariantFamilyInfo> registered_variant_families();

// Declarations the registry refused (a bad family, a name registered twice), each naming the
// kernel or family and its DSL file:line. The runner reports them and refuses to run.
std::vector<std::string> registry_errors();

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

// IRON_KERNEL_VARIANTS(iron_gemv_rows, gemv_rows, Reduction, (f32, f16, bf16), "x{VEC}",
//                      ::iron::int_axis("VEC", {1, 4, 8})):
// gemv_rows is `void gemv_rows(const iron::KernelVariant& v)`; the family registers iron_gemv_rows_x1,
// iron_gemv_rows_x4 and iron_gemv_rows_x8, each generic over the dtype list.
#define IRON_KERNEL_VARIANTS(family, body_fn, kmode, tlist, suffix_template, ...)                \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_family_reg_, family) = ::iron::register_variant_family( \
      ::iron::VariantFamilyDecl{#family, &body_fn, ::iron::Mode::kmode, {IRON_DETAIL_UNPAREN tlist}, suffix_template, \
                                {__VA_ARGS__}, __FILE__, __LINE__})

// IRON_KERNEL(iron_add, add_body, Elementwise, f32, f16, bf16)
#define IRON_KERNEL(kname, body_fn, kmode, ...)                                                   \
  [[maybe_unused]] static const int IRON_DETAIL_CAT(iron_kernel_reg_, kname) = ::iron::register_kernel( \
      ::iron::KernelDecl{#kname, &body_fn, ::iron::Mode::kmode, {__VA_ARGS__}, __FILE__, __LINE__})
