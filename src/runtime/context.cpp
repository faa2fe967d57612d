// Context: device buffers, the in-memory pipeline cache and validated dispatch. Every rule in
// validate_dispatch runs before a launch; a rejected dispatch launches nothing (seeds §8: a
// wrong geometry must be an error, never a hung or corrupted GPU).
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "iron/runtime.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace iron {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Cuda: return "cuda";
    case Backend::Vulkan: return "vulkan";
    case Backend::Interp: return "interp";
  }
  return "?";
}

bool parse_backend(std::string_view s, Backend& out) {
  if (s == "cuda") out = Backend::Cuda;
  else if (s == "vulkan") out = Backend::Vulkan;
  else if (s == "interp") out = Backend::Interp;
  else return false;
  return true;
}

std::vector<DeviceInfo> list_devices(Backend backend, std::string* why) {
  switch (backend) {
    case Backend::Cuda: return rt::list_cuda_devices(why);
    case Backend::Vulkan: return rt::list_vulkan_devices(why);
    case Backend::Interp: return rt::list_interp_devices(why);
  }
  return {};
}

struct Context::Cache {
  using Key = std::tuple<uint64_t, std::string, DType, uint32_t, uint32_t, uint32_t>;
  std::mutex mu;
  std::map<Key, std::unique_ptr<rt::CompiledKernel>> pipelines;
  // Content hashes of registry kernels by object, so a repeated dispatch does not re-print the
  // IR. Only registry kernels qualify: they never change or move. Any other kernel (a test's
  // mutant, a freshly traced body) is hashed every time — an address says nothing about content.
  std::map<const ir::Kernel*, uint64_t> hashes;

  uint64_t hash_of(const ir::Kernel& k) {
    auto it = hashes.find(&k);
    if (it != hashes.end()) return it->second;
    uint64_t h = ir::content_hash(k);
    if (is_registry_kernel(&k)) hashes[&k] = h;
    return h;
  }
};

Context::Context(std::unique_ptr<rt::Device> device) : device_(std::move(device)), cache_(std::make_unique<Cache>()) {}

Context::~Context() {
  // Pipelines go before the device that created them.
  cache_.reset();
  device_.reset();
}

std::unique_ptr<Context> Context::create(Backend backend, int index) {
  std::unique_ptr<rt::Device> dev;
  switch (backend) {
    case Backend::Cuda: dev = rt::make_cuda_device(index); break;
    case Backend::Vulkan: dev = rt::make_vulkan_device(index); break;
    case Backend::Interp: dev = rt::make_interp_device(index); break;
  }
  return std::unique_ptr<Context>(new Context(std::move(dev)));
}

const DeviceInfo& Context::info() const { return device_->info(); }

DeviceBuffer Context::alloc(DType dtype, size_t count) {
  if (dtype == DType::Generic || dtype == DType::Void) throw Error(std::string("cannot allocate a buffer of dtype ") + dtype_name(dtype));
  DeviceBuffer b;
  b.dtype_ = dtype;
  b.count_ = count;
  b.impl_ = device_->alloc(count * dtype_size(dtype));
  return b;
}

void Context::upload(const DeviceBuffer& buf, const void* data, size_t bytes) {
  if (!buf) throw Error("upload to an empty DeviceBuffer");
  if (bytes > buf.bytes())
    throw Error("upload of " + std::to_string(bytes) + " bytes into a buffer of " + std::to_string(buf.bytes()) + " bytes");
  device_->upload(*buf.impl(), data, bytes);
}

void Context::download(const DeviceBuffer& buf, void* data, size_t bytes) {
  if (!buf) throw Error("download from an empty DeviceBuffer");
  if (bytes > buf.bytes())
    throw Error("download of " + std::to_string(bytes) + " bytes from a buffer of " + std::to_string(buf.bytes()) + " bytes");
  device_->download(*buf.impl(), data, bytes);
}

void Context::synchronize() { device_->synchronize(); }

size_t Context::pipeline_cache_size() const {
  std::lock_guard lock(cache_->mu);
  return cache_->pipelines.size();
}

namespace {

std::string dim_text(Dim3 d) {
  return "{" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + "}";
}

// Converts a scalar value for a parameter, rejecting inexact or out-of-range integers.
bool scalar_bits(DType t, double v, uint32_t& bits, std::string& why) {
  if (!std::isfinite(v)) {
    why = "is not finite";
    return false;
  }
  switch (t) {
    case DType::F32: {
      if (std::fabs(v) > 3.4028234663852886e38) {
        why = "is out of f32 range";
        return false;
      }
      float f = float(v);
      std::memcpy(&bits, &f, 4);
      return true;
    }
    case DType::U32:
      if (v != std::floor(v) || v < 0 || v > 4294967295.0) {
        why = "is not a u32 (a whole number in [0, 2^32-1])";
        return false;
      }
      bits = uint32_t(v);
      return true;
    case DType::I32:
      if (v != std::floor(v) || v < -2147483648.0 || v > 2147483647.0) {
        why = "is not an i32 (a whole number in [-2^31, 2^31-1])";
        return false;
      }
      {
        int32_t i = int32_t(v);
        std::memcpy(&bits, &i, 4);
      }
      return true;
    default:
      why = "has an unsupported scalar dtype";
      return false;
  }
}

struct Validated {
  rt::LaunchArgs args;
};

Validated check(const DeviceInfo& dev, const ir::Kernel& k, DType dtype, const Bindings& buffers,
                const Constexprs& constexprs, Dim3 grid, Dim3 tg) {
  std::vector<std::string> problems;
  auto fail = [&](std::string m) { problems.push_back(std::move(m)); };

  bool generic = !k.dtypes.empty();
  if (dtype == DType::Generic || dtype == DType::Void || dtype == DType::Bool)
    fail(std::string("dtype ") + dtype_name(dtype) + " cannot be dispatched (use a concrete value dtype)");
  if (generic) {
    bool ok = false;
    std::string declared;
    for (DType t : k.dtypes) {
      ok = ok || t == dtype;
      declared += (declared.empty() ? "" : ", ") + std::string(dtype_name(t));
    }
    if (!ok) fail(std::string("the kernel is not declared for dtype ") + dtype_name(dtype) + " (declared: " + declared + ")");
  }

  // Geometry. The grid counts threadgroups; total threads = grid * threadgroup.
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) fail("grid " + dim_text(grid) + " has a zero dimension");
  if (tg.x == 0 || tg.y == 0 || tg.z == 0) fail("threadgroup " + dim_text(tg) + " has a zero dimension");
  uint64_t per_group = tg.product();
  // Six 32-bit factors can exceed 64 bits: multiply in 128.
  unsigned __int128 total = (unsigned __int128)grid.product() * per_group;
  if (total > 0xffffffffull) {
    std::string count = total > ~uint64_t(0) ? "more than 2^64" : std::to_string(uint64_t(total));
    fail("grid " + dim_text(grid) + " x threadgroup " + dim_text(tg) + " = " + count +
         " threads exceeds 2^32-1 (thread ids are u32; the grid counts threadgroups, not threads)");
  }
  if (per_group > dev.max_threads_per_group)
    fail("threadgroup " + dim_text(tg) + " has " + std::to_string(per_group) + " threads; the device allows " +
         std::to_string(dev.max_threads_per_group));
  if (tg.x > dev.max_group_size.x || tg.y > dev.max_group_size.y || tg.z > dev.max_group_size.z)
    fail("threadgroup " + dim_text(tg) + " exceeds the device's per-axis limit " + dim_text(dev.max_group_size));
  if (grid.x > dev.max_grid.x || grid.y > dev.max_grid.y || grid.z > dev.max_grid.z)
    fail("grid " + dim_text(grid) + " exceeds the device's per-axis limit " + dim_text(dev.max_grid));
  // Lane groups are formed along x first; Vulkan guarantees full subgroups only when x itself is
  // a multiple of the subgroup size, so that is the rule (it implies the total is one too).
  if (ir::uses_lane_ops(k) && tg.x != 0 && (tg.x % dev.lane_width) != 0)
    fail("threadgroup " + dim_text(tg) + ": x = " + std::to_string(tg.x) + " is not a positive multiple of the lane width " +
         std::to_string(dev.lane_width) +
         " (the kernel uses lane or threadgroup operations; a partial lane group would hang or read garbage)");
  uint64_t shared = ir::threadgroup_bytes(k, dtype);
  if (shared > dev.shared_memory_bytes)
    fail("the kernel needs " + std::to_string(shared) + " bytes of threadgroup memory; the device allows " +
         std::to_string(dev.shared_memory_bytes));

  // Scalars first: buffer extents are computed from them.
  std::vector<uint32_t> scalar_values(k.params.size(), 0);
  std::vector<uint8_t> scalar_ok(k.params.size(), 0);
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ir::Param& p = k.params[i];
    if (p.kind != ir::ParamKind::Scalar) continue;
    auto it = constexprs.find(p.name);
    if (it == constexprs.end()) {
      fail("constexpr '" + p.name + "' (" + dtype_name(p.dtype) + ") is not set");
      continue;
    }
    std::string why;
    if (!scalar_bits(p.dtype, it->second, scalar_values[i], why)) {
      std::ostringstream v;
      v << it->second;
      fail("constexpr '" + p.name + "' = " + v.str() + " " + why);
      continue;
    }
    scalar_ok[i] = 1;
  }
  for (const auto& [name, value] : constexprs) {
    int idx = k.find_param(name);
    if (idx < 0 || k.params[idx].kind != ir::ParamKind::Scalar)
      fail("constexpr '" + name + "' is set but the kernel has no scalar parameter of that name");
  }

  // Buffers, bound by name.
  std::vector<const DeviceBuffer*> bound(k.params.size(), nullptr);
  for (const auto& [name, buf] : buffers) {
    int idx = k.find_param(name);
    if (idx < 0 || k.params[idx].kind != ir::ParamKind::Buffer) {
      fail("buffer '" + name + "' is bound but the kernel has no buffer parameter of that name");
      continue;
    }
    if (bound[idx]) fail("buffer parameter '" + name + "' is bound twice");
    bound[idx] = &buf;
  }
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ir::Param& p = k.params[i];
    if (p.kind != ir::ParamKind::Buffer) continue;
    const DeviceBuffer* b = bound[i];
    if (!b) {
      fail("buffer parameter '" + p.name + "' is not bound");
      continue;
    }
    if (!*b) {
      fail("buffer parameter '" + p.name + "' is bound to an empty DeviceBuffer");
      continue;
    }
    DType want = ir::resolve(p.dtype, dtype);
    if (b->dtype() != want)
      fail(std::string("buffer '") + p.name + "' holds " + dtype_name(b->dtype()) + " but the parameter is buf<" +
           dtype_name(want) + ">");
    bool known = true;
    uint64_t extent = p.extent_factor;
    std::string formula = p.extent_factor != 1 || p.extent_scalars.empty() ? std::to_string(p.extent_factor) : "";
    for (uint32_t s : p.extent_scalars) {
      if (!scalar_ok[s]) known = false;
      uint32_t v = scalar_values[s];
      if (k.params[s].dtype == DType::I32 && int32_t(v) < 0) {
        fail("constexpr '" + k.params[s].name + "' is negative but sizes buffer '" + p.name + "'");
        known = false;
      }
      extent *= v;
      formula += (formula.empty() ? "" : "*") + k.params[s].name;
    }
    if (known && b->count() < extent)
      fail("buffer '" + p.name + "' has " + std::to_string(b->count()) + " elements but the kernel may touch " +
           std::to_string(extent) + " (extent " + formula + ")");
  }

  if (!problems.empty()) {
    std::string msg = "invalid dispatch of " + k.name + " (" + dtype_name(dtype) + ") on " + dev.name + ":";
    for (const std::string& p : problems) msg += "\n  - " + p;
    throw Error(msg);
  }

  Validated v;
  for (size_t i = 0; i < k.params.size(); ++i) {
    bool buf = k.params[i].kind == ir::ParamKind::Buffer;
    v.args.is_buffer.push_back(buf);
    if (buf) v.args.buffers.push_back(bound[i]->impl());
    else v.args.scalars.push_back(scalar_values[i]);
  }
  return v;
}

}  // namespace

void Context::validate_dispatch(const ir::Kernel& kernel, DType dtype, const Bindings& buffers,
                                const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) const {
  check(device_->info(), kernel, dtype, buffers, constexprs, grid, threadgroup);
}

void Context::dispatch_with_grid(std::string_view kernel, DType dtype, const Bindings& buffers,
                                 const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) {
  dispatch_with_grid(kernel_ir(kernel), dtype, buffers, constexprs, grid, threadgroup);
}

namespace {
DType normalize(const ir::Kernel& kernel, DType dtype) {
  // A kernel without T is the same program at every dtype: one pipeline, keyed as f32.
  if (kernel.dtypes.empty() && dtype != DType::Generic && dtype != DType::Void && dtype != DType::Bool) return DType::F32;
  return dtype;
}
}  // namespace

rt::CompiledKernel& Context::pipeline(const ir::Kernel& kernel, DType dtype, Dim3 threadgroup) {
  std::lock_guard lock(cache_->mu);
  Dim3 shape = device_->pipeline_depends_on_threadgroup() ? threadgroup : Dim3{0, 0, 0};
  Cache::Key key{cache_->hash_of(kernel), kernel.name, dtype, shape.x, shape.y, shape.z};
  auto it = cache_->pipelines.find(key);
  if (it == cache_->pipelines.end()) {
    // Every backend runs the same optimized IR: the pipeline is backend-neutral.
    ir::Kernel optimized = passes::optimize(kernel);
    it = cache_->pipelines.emplace(key, device_->compile(optimized, dtype, threadgroup)).first;
  }
  return *it->second;
}

void Context::dispatch_with_grid(const ir::Kernel& kernel, DType dtype, const Bindings& buffers,
                                 const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) {
  dtype = normalize(kernel, dtype);
  Validated v = check(device_->info(), kernel, dtype, buffers, constexprs, grid, threadgroup);
  device_->launch(pipeline(kernel, dtype, threadgroup), v.args, grid, threadgroup);
}

Timing Context::time_dispatch(const ir::Kernel& kernel, DType dtype, const Bindings& buffers,
                              const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup, const TimingOptions& opts) {
  if (opts.warmup < 0 || opts.samples <= 0)
    throw Error("timing needs warmup >= 0 and samples > 0 (got " + std::to_string(opts.warmup) + ", " +
                std::to_string(opts.samples) + ")");
  dtype = normalize(kernel, dtype);
  Validated v = check(device_->info(), kernel, dtype, buffers, constexprs, grid, threadgroup);
  rt::CompiledKernel& compiled = pipeline(kernel, dtype, threadgroup);
  Timing t;
  t.samples_us = device_->time_launches(compiled, v.args, grid, threadgroup, opts);
  t.compile_report = device_->compile_report(compiled);
  return t;
}

}  // namespace iron
