// The runtime: a Context owns one device (Vulkan or CUDA), device buffers, and validated
// dispatch. dispatch_with_grid binds buffers by parameter name and counts the grid in
// threadgroups, not threads; every dispatch is checked before launch (see context.cpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iron/types.hpp"

struct DLManagedTensor;  // include/iron/dlpack.hpp

namespace iron {
namespace ir {
struct Kernel;
}
namespace rt {
class Device;
struct BufferImpl;
struct CompiledKernel;
struct StreamImpl;
struct EventImpl;
struct ContextAccess;
}  // namespace rt
class Context;

// Interp is Iron's SIMT IR interpreter: exact barriers, threadgroup memory and lane reductions
// on the host, with a configurable lane width (IRON_INTERP_LANE_WIDTH, default 32).
// Hip runs AMD GPUs through the HIP runtime (libamdhip64, opened at run time).
enum class Backend : uint8_t { Vulkan, Cuda, Interp, Hip };
const char* backend_name(Backend b);
bool parse_backend(std::string_view s, Backend& out);

struct DeviceInfo {
  Backend backend = Backend::Vulkan;
  std::string name;
  std::string driver;              // driver / API version text
  std::string arch;                // e.g. "sm_90a"; Vulkan: device type
  uint32_t lane_width = 32;        // warp / subgroup size, queried from the device
  uint32_t max_threads_per_group = 1024;
  Dim3 max_group_size{1024, 1024, 64};
  Dim3 max_grid{65535, 65535, 65535};
  uint64_t shared_memory_bytes = 0;  // per threadgroup, available to every kernel
  // The most threadgroup memory a kernel may opt in to (CUDA: the dynamic shared memory limit
  // with cuFuncSetAttribute, 227 KiB on the H200); 0 = no opt-in beyond shared_memory_bytes.
  // Dispatch validation allows the larger of the two.
  uint64_t shared_memory_optin_bytes = 0;
  uint64_t memory_bytes = 0;
  // Compute units (CUDA: streaming multiprocessors; the interpreter: 1); 0 = unknown (Vulkan has
  // no portable query). Selectors size split-K and grids from it (iron_gemm's gemm_for).
  uint32_t compute_units = 0;
  // The most bytes one buffer parameter may be bound with (Vulkan: maxStorageBufferRange; CUDA
  // and the interpreter address any allocation). Dispatch validation rejects a larger buffer.
  uint64_t max_buffer_bytes = UINT64_MAX;
  // The alignment, in bytes, of the offset a buffer view may start at (Vulkan:
  // minStorageBufferOffsetAlignment; 1 where any offset binds). Context::view checks it.
  uint64_t min_view_offset_align = 1;
  bool f16 = false;
  bool bf16 = false;               // bf16 storage (computed through f32 where not native)
  // 8-bit integers (and fp8 storage, held as 8-bit integers), 16-bit integers and 64-bit
  // integers in buffers and registers. Vulkan: shaderInt8 + storageBuffer8BitAccess,
  // shaderInt16 + storageBuffer16BitAccess, shaderInt64.
  bool int8 = true;
  bool int16 = true;
  bool int64 = true;
  // 64-bit (u64) atomics on buffers and on threadgroup memory. Vulkan: shaderBufferInt64Atomics
  // and shaderSharedInt64Atomics (VK_KHR_shader_atomic_int64, core in 1.2); CUDA: always.
  bool int64_atomics_buffer = true;
  bool int64_atomics_shared = true;
  // f32 subnormals in shaders: false = preserved (IEEE, docs/semantics.md), true = flushed to
  // zero. Vulkan measures it once per opened device with a probe shader: the float-controls
  // properties say what a shader may request, not what it gets by default (lavapipe reports no
  // preserve and preserves; NVIDIA reports no preserve and flushes).
  bool f32_denormals_flushed = false;
  std::string float_controls;      // Vulkan: the driver's float-controls properties and the probe
};

// A device allocation with a dtype and an element count. Copyable handle; freed with the last copy.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DType dtype() const { return dtype_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * dtype_size(dtype_); }
  // Where this buffer starts in its allocation, in bytes: 0 unless it is a view (Context::view).
  uint64_t offset_bytes() const { return offset_; }
  // Elements of the allocation from one element of this buffer to the next: 1 unless it is a
  // strided view (Context::view with a stride), whose element j is element j * stride() of the
  // memory from offset_bytes().
  uint64_t stride() const { return stride_; }
  // The bytes from the first element to the end of the last: bytes() for a contiguous buffer.
  uint64_t span_bytes() const { return count_ == 0 ? 0 : ((count_ - 1) * stride_ + 1) * dtype_size(dtype_); }
  rt::BufferImpl* impl() const { return impl_.get(); }
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  friend class Context;
  std::shared_ptr<rt::BufferImpl> impl_;
  DType dtype_ = DType::F32;
  size_t count_ = 0;
  uint64_t offset_ = 0;
  uint64_t stride_ = 1;
};

using Bindings = std::vector<std::pair<std::string, DeviceBuffer>>;

struct TimingOptions {
  int warmup = 20;
  int samples = 100;
  bool flush_l2 = false;
  // With flush_l2: evict the L2 by reading a buffer several times its size instead of writing
  // one, so the sample starts with no dirty line in the L2 (a written flush leaves the cache
  // full of dirty lines, which are written back while the timed kernel runs). CUDA only; other
  // backends refuse it by name (the interpreter, which has no cache, ignores both).
  bool flush_l2_read = false;
};

// The raw result of a timed dispatch: per-sample device times (microseconds) and the compiler's
// resource report. Statistics and metrics are derived afterwards, never inside the timed loop.
struct Timing {
  std::vector<double> samples_us;
  std::string compile_report;
};
// The value of a `tensormap` parameter (docs/runtime-memory in architecture.md, "By-value
// structure arguments"): a TMA tensor map over `buffer`, which the CUDA device encodes at dispatch
// with cuTensorMapEncodeTiled (interleave none, no L2 promotion, out-of-bounds elements filled
// with zeros). Dimension 0 is the innermost (contiguous) one. Dispatch validation checks, naming
// the parameter and its declaration: 1 to 5 dimensions, each of 1 to 2^32 elements; strides
// (bytes from one entry of dimension d to the next, for d >= 1; empty: packed) multiples of 16
// and below 2^40; box entries 1 to 256, the box row (box[0] x element size) a multiple of 16
// bytes; the buffer's address 16-byte aligned; every addressed byte inside the buffer; and a
// swizzle whose span equals the box row (B32: 32 bytes, B64: 64, B128: 128), since a swizzle
// that does not match the row faults only when the copy completes (seeds §8).
struct TensorMap {
  enum class Swizzle : uint8_t { None, B32, B64, B128 };
  DeviceBuffer buffer;            // the global memory; its dtype is the element type
  std::vector<uint64_t> dims;     // elements per dimension, innermost first
  std::vector<uint64_t> strides;  // byte strides of dimensions 1.. (dims.size() - 1 entries), or empty
  std::vector<uint32_t> box;      // the box one copy moves, per dimension
  Swizzle swizzle = Swizzle::None;
};
const char* swizzle_name(TensorMap::Swizzle s);  // "none", "32B", "64B", "128B"

// The value of one scalar ("constexpr") parameter at a dispatch: a float or an integer as the
// caller wrote it. Integers are kept exactly (a u64 beyond 2^53 has no double), so the dispatch
// check sees the caller's number: an integer parameter takes a whole value in its range, an f32
// parameter a finite value in f32's range (an integer there is converted to the nearest f32).
// A by-value structure parameter takes its value here too: ScalarValue::blob (a `blob<size,
// align>` parameter: the bytes, passed whole) or a TensorMap (a `tensormap` parameter).
class ScalarValue {
 public:
  enum class Kind : uint8_t { Float, Int, UInt, Blob, TensorMap };
  // `bytes` bytes copied from `data`, of a structure aligned to `align` bytes (alignof of the
  // caller's type): the parameter must declare the same size and alignment.
  static ScalarValue blob(const void* data, size_t bytes, uint32_t align);
  ScalarValue(TensorMap map);  // NOLINT: implicit by design
  ScalarValue() = default;
  ScalarValue(double v) : kind_(Kind::Float), f_(v) {}  // NOLINT: implicit by design
  ScalarValue(float v) : kind_(Kind::Float), f_(v) {}  // NOLINT
  ScalarValue(int v) : kind_(Kind::Int), i_(v) {}  // NOLINT
  ScalarValue(long v) : kind_(Kind::Int), i_(v) {}  // NOLINT
  ScalarValue(long long v) : kind_(Kind::Int), i_(v) {}  // NOLINT
  ScalarValue(unsigned v) : kind_(Kind::UInt), u_(v) {}  // NOLINT
  ScalarValue(unsigned long v) : kind_(Kind::UInt), u_(v) {}  // NOLINT
  ScalarValue(unsigned long long v) : kind_(Kind::UInt), u_(v) {}  // NOLINT
  Kind kind() const { return kind_; }
  double f() const { return f_; }
  int64_t i() const { return i_; }
  uint64_t u() const { return u_; }
  // The value as a double (rounded for an integer beyond 2^53).
  double as_double() const { return kind_ == Kind::Float ? f_ : kind_ == Kind::Int ? double(i_) : double(u_); }
  // The value as written: "3", "-2", "18446744073709551615", "0.5", "nan"; "a 64-byte blob",
  // "a tensor map over 4096 bf16 elements".
  std::string text() const;
  // Kind::Blob: the bytes and their alignment (else empty / 0). Kind::TensorMap: the map (else null).
  const std::vector<uint8_t>& blob_bytes() const;
  uint32_t blob_align() const { return align_; }
  const TensorMap* tensor_map() const { return map_.get(); }

 private:
  Kind kind_ = Kind::Float;
  double f_ = 0;
  int64_t i_ = 0;
  uint64_t u_ = 0;
  uint32_t align_ = 0;
  std::shared_ptr<const std::vector<uint8_t>> blob_;
  std::shared_ptr<const TensorMap> map_;
};
// Scalar ("constexpr") values by parameter name. Integers must be exact and in range.
using Constexprs = std::map<std::string, ScalarValue, std::less<>>;

// A stream (queue) of one Context: launches and copies issued on it run in order and
// asynchronously to the host. A default-constructed Stream is the Context's default stream.
// Streams order against each other only through events (record_event + wait_event); a buffer
// used on two streams needs one between the uses. A stream lives as long as its Context.
// CUDA: a non-blocking CUstream (the default stream is the legacy null stream). Vulkan: every
// stream submits to the device's one compute queue, whose submissions run in order, so streams
// are points on one timeline. Interpreter: a worker thread per stream; the default stream runs
// each launch on the calling thread.
class Stream {
 public:
  Stream() = default;
  bool is_default() const { return impl_ == nullptr; }
  rt::StreamImpl* impl() const { return impl_; }

 private:
  friend class Context;
  rt::StreamImpl* impl_ = nullptr;
  const Context* owner_ = nullptr;  // null for the default stream (of any Context)
};

// A point in one stream's work: done when everything issued on the stream before it is done.
class Event {
 public:
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  friend class Context;
  std::shared_ptr<rt::EventImpl> impl_;
  const Context* owner_ = nullptr;
};

// A launch validated once (every rule of Context::validate_dispatch) and then re-issued at the
// cost of the device's launch call alone. Parameters are rebound by index (the kernel's
// declaration order; param() finds one by name) with buffers and scalars of the same shapes:
// a buffer of the parameter's dtype holding at least the validated extent, on the same device,
// aligned as the kernel assumes, not aliasing another parameter unless declared; a scalar in its
// type's range keeping its declared facts. A scalar that sizes a buffer or threadgroup memory, or
// is specialized, keeps its validated value (prepare another launch for another value). Each
// rejected rebinding throws iron::Error naming the kernel, the parameter and the rule, and
// leaves the launch as it was. Must not be used after its Context is destroyed.
class PreparedLaunch {
 public:
  PreparedLaunch();
  PreparedLaunch(PreparedLaunch&&) noexcept;
  PreparedLaunch& operator=(PreparedLaunch&&) noexcept;
  ~PreparedLaunch();
  explicit operator bool() const { return impl_ != nullptr; }

  // The index of parameter `name`; throws naming the kernel's parameters when there is none.
  uint32_t param(std::string_view name) const;
  void set_buffer(uint32_t param, const DeviceBuffer& buffer);
  void set_scalar(uint32_t param, const ScalarValue& value);
  // A blob or tensormap parameter takes a new value through set_scalar (ScalarValue::blob, a
  // TensorMap), checked like a dispatch's (size, alignment; a map's rules, then encoded again).
  // Enqueues the launch on `stream` and returns.
  void launch(const Stream& stream = {});

 private:
  friend class Context;
  friend class LaunchSequence;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Prepared launches replayed as one unit, in order, on one stream: what an engine issues per
// decode step. A kernel may appear in many steps with different bindings. CUDA builds a CUDA
// graph of the steps (one cuGraphLaunch per replay); Vulkan records them once into one command
// buffer (a descriptor set per step; a barrier only before a step that uses a buffer written
// since the last barrier, or writes one read since), replayed by one submit; the interpreter
// replays launch by launch. Steps are rebound between replays through step(i) (the
// PreparedLaunch rules); the next replay takes the new bindings in place where it can: CUDA
// rewrites the step's graph node (cuGraphExecKernelNodeSetParams) without waiting for a replay
// in flight; Vulkan waits for the sequence's previous replay and rewrites the changed bindings
// of the step's own descriptor set, then replays the command buffer as recorded where the
// device has update-after-bind descriptors (unless new scalars or a new barrier need the
// commands recorded again), else records the commands again (nothing is allocated). A Vulkan
// replay also waits for the previous replay of the same sequence.
// Must not be used after its Context is destroyed, nor outlive it.
class LaunchSequence {
 public:
  LaunchSequence();
  LaunchSequence(LaunchSequence&&) noexcept;
  LaunchSequence& operator=(LaunchSequence&&) noexcept;
  ~LaunchSequence();
  // Appends a step (taken over); returns its index. The recording is rebuilt at the next replay.
  size_t add(PreparedLaunch step);
  size_t size() const;
  PreparedLaunch& step(size_t index);
  // Enqueues every step on `stream` and returns.
  void replay(const Stream& stream = {});
  // How the sequence is recorded on its device, and how often it was recorded and updated in
  // place ("not recorded" before the first replay).
  std::string recording() const;

 private:
  friend class Context;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One launch of a timed sequence (Context::time_sequence).
struct SequenceLaunch {
  const ir::Kernel* kernel = nullptr;
  Instantiation dtype;
  Bindings buffers;
  Constexprs constexprs;
  Dim3 grid, threadgroup;
};

class Context {
 public:
  // Opens device `index` of the backend; throws iron::Error ("no CUDA driver", "no Vulkan
  // device", ...) when it cannot.
  static std::unique_ptr<Context> create(Backend backend, int index);
  // Device 0, except for CUDA where IRON_CUDA_DEVICE (a device index) names another: every tool
  // (iron test, bench, run, fuzz, conformance) and test that opens "the" CUDA device can so be
  // pointed at any GPU of a machine. A value that is not an index is an error naming it.
  static std::unique_ptr<Context> create(Backend backend);
  ~Context();

  const DeviceInfo& info() const;
  DeviceBuffer alloc(DType dtype, size_t count);
  // upload: ordered after the work in flight that uses `buf` and before later work on `stream`.
  // download: waits for the work in flight that uses `buf` (its last stream, up to that use) and
  // nothing else; errors of that work are thrown here.
  void upload(const DeviceBuffer& buf, const void* data, size_t bytes, const Stream& stream = {});
  void download(const DeviceBuffer& buf, void* data, size_t bytes);

  // A view: `count` elements of `buf` from element `first`, sharing its memory (a launch binds
  // it at that offset; an upload or download copies that range). Its alignment, for the kernels'
  // aligned() facts, is that of its address. Throws when the range is outside `buf` or the
  // offset breaks the device's min_view_offset_align.
  DeviceBuffer view(const DeviceBuffer& buf, size_t first, size_t count) const;
  // A strided view: `count` elements of `buf`, element j being buf's element first + j * stride
  // (stride >= 1; a view of a strided view composes the strides). The whole extent, element
  // first + (count - 1) * stride, must lie inside `buf`. Only a kernel whose buffer parameter
  // declares its stride scalar (strided=s in the IR, dsl strided(buf, s)) takes one, with s set
  // to the view's stride; every other parameter refuses it by name. download gathers its
  // elements; upload to a strided view is refused (upload the buffer it views).
  DeviceBuffer view(const DeviceBuffer& buf, size_t first, size_t count, size_t stride) const;

  // External memory. wrap_external: `count` elements of `dtype` at `ptr`, memory someone else
  // owns (CUDA: a device pointer in this device's primary context, e.g. a torch tensor's; the
  // interpreter: host memory); `release` runs when the last copy of the buffer goes. No copy.
  // Vulkan cannot wrap memory (an error says so).
  DeviceBuffer wrap_external(void* ptr, DType dtype, size_t count, std::function<void()> release = {});
  // DLPack (include/iron/dlpack.hpp): import a compact (C-contiguous) tensor of this device
  // (kDLCUDA with this Context's device index, kDLCPU for the interpreter) without copying; its
  // deleter runs when the buffer's last copy goes. Throws naming what does not fit, and then
  // leaves `tensor` to the caller.
  DeviceBuffer from_dlpack(DLManagedTensor* tensor);
  // Export: a 1-D tensor over the buffer's memory that keeps the buffer alive until its deleter
  // runs. CUDA and the interpreter (Vulkan memory has no address another library could use).
  DLManagedTensor* to_dlpack(const DeviceBuffer& buf);

  // A buffer from this Context's caching pool, for use on `stream`: a freed pooled buffer (its
  // last handle gone) is kept and handed out again for the same size class (a power of two of at
  // least 256 bytes), but only when the work in flight that used it is done, or when it is asked
  // for on the stream that last used it (whose later work runs after that work anyway). So a
  // launch still running on another stream can never write into a buffer's new owner. The
  // contents of a pooled buffer are unspecified (a previous owner's) until written.
  DeviceBuffer alloc_pooled(DType dtype, size_t count, const Stream& stream = {});
  struct PoolStats {
    uint64_t reused = 0;          // handed out from the pool
    uint64_t allocated = 0;       // allocated from the device (nothing suitable was free)
    uint64_t skipped_in_flight = 0;  // free buffers passed over because work on them was in flight
    uint64_t cached_bytes = 0;    // bytes held free in the pool now
  };
  PoolStats pool_stats() const;
  // Frees the pooled buffers whose work is done.
  void trim_pool();

  // Streams and events (see Stream). Every call checks that the stream or event is this Context's.
  Stream create_stream();
  // A stream another library created and owns (CUDA: a CUstream such as PyTorch's
  // torch.cuda.current_stream().cuda_stream). Work issued on it runs in that stream's order with
  // the owner's own work; Iron never destroys it, and one handle always gives one Stream. A null
  // handle is the legacy null stream (the queue of this Context's default stream, and PyTorch's
  // default stream), wrapped as the other library's too. Wrapped memory (wrap_external,
  // from_dlpack) last used on a wrapped stream is released without waiting: its owner reuses it
  // in that stream's order, as PyTorch's caching allocator does. Only CUDA has such streams:
  // elsewhere null gives the default stream and any other handle throws.
  Stream wrap_stream(void* native);
  Event record_event(const Stream& stream = {});
  // Work issued on `waiter` after this call starts after `event` is done.
  void wait_event(const Stream& waiter, const Event& event);
  bool event_done(const Event& event);
  void synchronize(const Event& event);
  void synchronize(const Stream& stream);

  // Validates, compiles (cached per kernel / dtype / threadgroup shape) and launches.
  // Throws iron::Error naming the rule, the kernel and the offending value on a bad dispatch;
  // nothing is launched then.
  void dispatch_with_grid(std::string_view kernel, Instantiation dtype, const Bindings& buffers,
                          const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup);
  void dispatch_with_grid(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                          const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup);
  // The same, enqueued on `stream` (the calls above use the default stream). Returns once the
  // launch is enqueued; a fault while it runs is reported by the next wait.
  void dispatch_with_grid(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                          const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup, const Stream& stream);
  // Validates (throwing like dispatch_with_grid) and compiles once; see PreparedLaunch. `kernel`
  // must outlive the result (registry kernels live for the process).
  PreparedLaunch prepare_launch(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                                const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup);
  // An empty sequence of this Context (see LaunchSequence).
  LaunchSequence create_sequence();
  // The bytes a `tensormap` parameter bound to `map` receives (CUDA: cuTensorMapEncodeTiled's
  // CUtensorMap, 128 bytes), after the checks of a dispatch (which name `what` as the parameter).
  // Throws on a device that cannot encode one (only CUDA can) or a map that breaks a rule.
  std::vector<uint8_t> encode_tensor_map(const TensorMap& map, const std::string& what = "tensor map") const;
  // Only the validation half of a dispatch; throws like dispatch_with_grid.
  void validate_dispatch(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                         const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) const;
  // Waits for every stream.
  void synchronize();
  size_t pipeline_cache_size() const;
  // Drops every pipeline of the memory cache (a long run of one-off kernels, as `iron fuzz`
  // makes, would otherwise keep them all). Later dispatches rebuild what they need.
  void clear_pipeline_cache();

  // Builds the pipelines of several kernels at once (kernel i at dtypes[i] and threadgroups[i])
  // into the memory cache, so their dispatches find them there. A device that can put many
  // entry points into one module does (CUDA: one NVRTC compile for all); the others compile each
  // in turn. A kernel that fails here is left out: its dispatch compiles it again and reports
  // the error. Bypasses the disk cache (for many one-off kernels, as `iron fuzz` runs).
  void precompile(const std::vector<const ir::Kernel*>& kernels, const std::vector<Instantiation>& dtypes,
                  const std::vector<Dim3>& threadgroups);

  // Compile cache counters of this Context. Memory: pipeline look-ups by dispatch_with_grid and
  // time_dispatch (a hit reuses a pipeline this Context built). Disk: look-ups after a memory miss;
  // a hit loads the stored binary and skips optimize, emission and the compiler. disk_corrupt
  // counts entries the disk cache found truncated or corrupt (removed and rebuilt),
  // disk_rejected entries whose bytes the device refused to load (rebuilt); both are also
  // counted as misses.
  struct CacheStats {
    uint64_t memory_hits = 0, memory_misses = 0;
    uint64_t disk_hits = 0, disk_misses = 0, disk_corrupt = 0, disk_rejected = 0, disk_writes = 0;
    // Pipelines dropped because their kernel had more specialized values than the limit (an LRU
    // of IRON_SPECIALIZE_LIMIT values per kernel, default 16; docs/dsl.md#specialization).
    uint64_t specialized_evictions = 0;
  };
  CacheStats cache_stats() const;
  // Uses a private on-disk cache in `dir` instead of the process-wide one ($IRON_CACHE_DIR, else
  // $XDG_CACHE_HOME/iron, else ~/.cache/iron); an empty `dir` turns the disk cache off for this
  // Context. IRON_NO_DISK_CACHE=1 (read when the Context is created) turns it off regardless.
  void set_disk_cache_dir(const std::string& dir);

  // Validates like dispatch_with_grid, compiles (cached), then times warmup + samples launches
  // with the device's clock. The inputs stay resident: nothing is uploaded inside the timing.
  Timing time_dispatch(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers, const Constexprs& constexprs,
                       Dim3 grid, Dim3 threadgroup, const TimingOptions& opts);
  // Times a sequence of launches as one sample (a multi-step plan), each launch validated and
  // compiled first like dispatch_with_grid. CUDA: events around the whole sequence; Vulkan and
  // the interpreter: the host clock around launching all and waiting. compile_report joins the
  // launches' reports.
  Timing time_sequence(const std::vector<SequenceLaunch>& seq, const TimingOptions& opts);

 private:
  explicit Context(std::unique_ptr<rt::Device> device);
  friend class PreparedLaunch;
  friend class LaunchSequence;
  friend class Collective;  // iron/collective.hpp: the device, its index and its streams
  friend struct rt::ContextAccess;
  rt::StreamImpl* own(const Stream& s, const char* what) const;
  rt::EventImpl& own(const Event& e, const char* what) const;
  struct Prepared;
  // Specialized values of a dispatch: (parameter index, launch bits), in parameter order.
  using SpecValues = std::vector<std::pair<uint32_t, uint64_t>>;
  Prepared prepare(const ir::Kernel& kernel, Instantiation dtype, Dim3 threadgroup, bool want_pipeline) const;
  std::shared_ptr<rt::CompiledKernel> pipeline(const ir::Kernel& kernel, Instantiation dtype, Dim3 threadgroup,
                                               const Prepared& p, const SpecValues& spec);
  std::unique_ptr<rt::CompiledKernel> build(const ir::Kernel& kernel, Instantiation dtype, Dim3 threadgroup, uint64_t hash,
                                            const SpecValues& spec);
  struct Cache;
  struct Pool;
  std::unique_ptr<rt::Device> device_;
  std::unique_ptr<Cache> cache_;
  std::shared_ptr<Pool> pool_;
  int device_index_ = 0;
};

// The launch bits of scalar value `v` for a parameter of dtype `t` (f32 and 32-bit integers in
// the low 4 bytes, i64 and u64 whole), as every dispatch converts it; false, with `why` ("is not
// a u32 (...)"), when the parameter cannot hold the value exactly.
bool scalar_bits(DType t, const ScalarValue& v, uint64_t& bits, std::string& why);

// Whether the device can run kernels that use dtype d; `why` names the missing feature.
bool dtype_supported(const DeviceInfo& dev, DType d, std::string& why);

// Devices visible to a backend, without opening a Context. Empty when the driver is absent;
// `why` then says what was missing.
std::vector<DeviceInfo> list_devices(Backend backend, std::string* why = nullptr);

}  // namespace iron
