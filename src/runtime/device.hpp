// Internal device interface implemented by each backend (vulkan/, cuda/). Context owns one and
// does all validation before calling launch(), so devices may assume a well-formed dispatch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/ir.hpp"
#include "iron/runtime.hpp"

namespace iron::rt {

// A stream (queue) of one device: launches and copies on it run in the order issued, and
// asynchronously to the host. Owned by the device's shared state and alive as long as the device
// and every buffer of it, so BufferImpl::last_stream can point at one. Null = the device's default
// stream. Streams do not order against each other except through events.
struct StreamImpl {
  virtual ~StreamImpl() = default;
};
// A point in a stream's work (Device::record_event): done once everything issued on the stream
// before it has finished.
struct EventImpl {
  virtual ~EventImpl() = default;
};

struct BufferImpl {
  virtual ~BufferImpl() = default;
  size_t bytes = 0;
  // Who allocated this buffer, set by the device's alloc() to an object the buffer keeps alive
  // (CUDA: its context, Vulkan: its VkDevice core), so launch() can reject a foreign buffer with
  // one pointer compare instead of a dynamic_cast.
  const void* owner = nullptr;
  // The byte alignment of element 0 as a kernel sees it (a power of two): every device
  // allocates at least ir::kAllocationAlign-aligned memory (CUDA: 256) and binds a buffer from
  // its start. A view into a buffer (not built yet) would bind at an offset and carry the
  // alignment of that address. Dispatch validation checks it against every buffer's declared
  // (or assumed) alignment.
  uint64_t align = ir::kAllocationAlign;
  // The stream of the last launch or copy that used this buffer (null: the default stream or
  // none) and, where the device counts submissions (the interpreter, Vulkan), that launch's
  // ticket on it (CUDA, which counts none, sets 1 once the buffer was used). upload() and download() wait for exactly that work, and a buffer freed while
  // it is in flight waits for it before its memory goes. Written by the device at launch.
  StreamImpl* last_stream = nullptr;
  uint64_t last_ticket = 0;
};

// The declared-fact rules of dispatch validation (Context), one parameter at a time: an empty
// string when the dispatch keeps the fact, else the problem naming the parameter, the value, the
// fact and the file:line of its declaration. Scalars: `bits` are the launch bits of `value`.
std::string scalar_fact_problem(const ir::Kernel& k, uint32_t param, uint64_t bits, const std::string& value);
// Buffers: `bound_align` is the alignment of the bound address (BufferImpl::align).
std::string buffer_fact_problem(const ir::Kernel& k, uint32_t param, uint64_t bound_align);

struct CompiledKernel {
  virtual ~CompiledKernel() = default;
  // The emitted source, kept for error messages and inspection. Empty for a kernel rebuilt by
  // Device::load() from the disk cache (nothing was emitted).
  std::string source;
  // The compiled artefact as the device's load() takes it back (CUDA: CUBIN plus the ptxas log,
  // Vulkan: SPIR-V words), set by compile(); Context stores it in the disk cache. Empty where
  // the backend has nothing to cache (the interpreter).
  std::vector<char> binary;
};

constexpr uint8_t kBlobParam = 2;  // LaunchArgs::is_buffer of a blob parameter

struct LaunchArgs {
  std::vector<BufferImpl*> buffers;  // buffer parameters, in declaration order
  // The byte offset each buffer is bound at (a view: Context::view); 0 binds it from its start.
  std::vector<uint64_t> offsets;
  // The bytes each buffer is bound with (a view's own length, DeviceBuffer::bytes()); empty, or
  // shorter than `buffers`, binds the rest of the allocation. The interpreter bounds every access
  // by it, so a kernel bound to a view cannot reach the bytes after the view.
  std::vector<uint64_t> bound_bytes;
  // Each buffer's element stride (a strided view: Context::view with a stride; 1 otherwise);
  // empty, or shorter than `buffers`, means 1. bound_bytes is then the view's span. The
  // interpreter faults an access between the view's elements.
  std::vector<uint64_t> strides;
  // Scalar parameters' bit patterns, in declaration order: f32 and 32-bit integers in the low
  // 4 bytes (zero above), i64 and u64 whole. Little-endian, so a pointer to an entry is also a
  // pointer to a 4-byte parameter's value.
  std::vector<uint64_t> scalars;
  // Per kernel parameter, in declaration order: 1 a buffer, 0 a scalar, 2 a blob (kBlobParam).
  std::vector<uint8_t> is_buffer;
  // Blob parameters (by-value structures; a tensor map: the device's encoding), in declaration
  // order: blob i is blob_sizes[i] bytes of blob_data from blob_offsets[i] (a multiple of 16).
  // blob_buffers[i]: the buffer a tensor map addresses (null for a plain blob), which the launch
  // uses like a bound buffer (its last stream is noted).
  std::vector<uint8_t> blob_data;
  std::vector<uint32_t> blob_offsets, blob_sizes;
  std::vector<BufferImpl*> blob_buffers;
  // blob_maps[i]: a tensor map's logical description (the map as the caller gave it, and its
  // byte strides of dimensions 1.., packed where the map gives none), which the interpreter
  // copies through; an empty map (no buffer) for a plain blob.
  struct BlobMap {
    TensorMap map;
    std::vector<uint64_t> strides;
  };
  std::vector<BlobMap> blob_maps;
  // Threadgroup memory of this dispatch (ir::threadgroup_bytes with the scalars' values): the
  // CUDA device launches a kernel that keeps its arrays in dynamic shared memory with it.
  uint64_t threadgroup_bytes = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual std::unique_ptr<BufferImpl> alloc(size_t bytes) = 0;
  // upload: ordered after the work in flight that uses `buf` and before later work on `stream`
  // (CUDA: an asynchronous copy on the stream; the interpreter and Vulkan wait for that work on
  // the host, then copy). download: waits for the work in flight that uses `buf` (and nothing
  // else), then copies; kernel errors of that work are reported here.
  // `offset`: the first byte of the buffer copied (a view's offset). Context checked the range.
  virtual void upload(BufferImpl& buf, size_t offset, const void* data, size_t bytes, StreamImpl* stream) = 0;
  virtual void download(BufferImpl& buf, size_t offset, void* data, size_t bytes) = 0;
  void upload(BufferImpl& buf, const void* data, size_t bytes) { upload(buf, 0, data, bytes, nullptr); }
  void download(BufferImpl& buf, void* data, size_t bytes) { download(buf, 0, data, bytes); }

  // External memory (Context::wrap_external, DLPack). wrap: a buffer over `bytes` at `ptr`, which
  // someone else owns (CUDA: a device pointer of this device's context; the interpreter: host
  // memory); the buffer never frees it. address: where a buffer's memory is, for export. Both
  // throw on a device whose memory has no such address (Vulkan).
  virtual std::unique_ptr<BufferImpl> wrap(void* ptr, size_t bytes);
  virtual void* address(BufferImpl& buf);

  // Streams and events (Context::create_stream, record_event, ...). create_stream's stream is
  // owned by the device and lives as long as it (and its buffers).
  virtual StreamImpl* create_stream() = 0;
  // A stream someone else created (Context::wrap_stream), owned by the device like create_stream's
  // but never destroyed by it; the same handle gives the same StreamImpl. The default accepts
  // only null and returns the default stream (nullptr); CUDA wraps null (the legacy null stream)
  // like any other handle.
  virtual StreamImpl* wrap_stream(void* native);
  virtual std::shared_ptr<EventImpl> record_event(StreamImpl* stream) = 0;
  // Later work on `waiter` starts only after `event` is done (the host does not wait where the
  // device can order it; the interpreter's default stream, which runs on the calling thread, waits).
  virtual void wait_event(StreamImpl* waiter, EventImpl& event) = 0;
  virtual bool event_done(EventImpl& event) = 0;
  // An event done once the work in flight that uses `buf` is done (the buffer pool's test for
  // handing a freed buffer out again).
  virtual std::shared_ptr<EventImpl> buffer_event(BufferImpl& buf) = 0;
  virtual void synchronize_event(EventImpl& event) = 0;
  virtual void synchronize_stream(StreamImpl* stream) = 0;
  // Emits and compiles `k` for `dtype` and one threadgroup shape. Vulkan bakes the shape into
  // the pipeline (specialization constants), CUDA into the source (__launch_bounds__, group_size
  // constants); both then refuse a launch with another shape. The interpreter ignores it
  // (pipeline_depends_on_threadgroup() false). Throws iron::Error with the compiler log.
  virtual std::unique_ptr<CompiledKernel> compile(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup) = 0;
  virtual bool pipeline_depends_on_threadgroup() const = 0;
  // compile() for several kernels (Context::precompile); entry i is null where kernel i failed.
  // The default compiles each in turn; CUDA builds one module for all of them.
  virtual std::vector<std::unique_ptr<CompiledKernel>> compile_many(const std::vector<const ir::Kernel*>& ks,
                                                                    const std::vector<Instantiation>& dtypes,
                                                                    const std::vector<Dim3>& threadgroups);

  // Disk cache (Context::pipeline). cache_fingerprint() names everything about this device and
  // its toolchain that changes compile()'s binary (CUDA: arch, NVRTC version and options;
  // Vulkan: SPIR-V target, glslang version, and the device features the pipeline depends on);
  // it goes into the cache key. Empty means "this device does not use the disk cache".
  // May throw iron::Error (e.g. NVRTC missing); Context then leaves the disk cache alone.
  virtual std::string cache_fingerprint() const { return {}; }
  // Rebuilds a kernel from the bytes a compile() of the same kernel / dtype / threadgroup left
  // in CompiledKernel::binary. `k` is the traced (unoptimized) kernel: its name, params, entry
  // name and ir::uses_lane_ops are what the optimizing pipeline leaves unchanged, and all that
  // binding needs. Throws iron::Error when the bytes are unusable (Context then recompiles).
  virtual std::unique_ptr<CompiledKernel> load(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup,
                                               const std::vector<char>& binary) {
    throw Error("this device cannot load cached binaries");
  }
  // Enqueues a launch on `stream` (null: the default stream) and returns without waiting for it.
  // Errors the kernel raises while it runs (a Vulkan loop limit, an interpreter bounds fault, a
  // CUDA fault) are reported by the next wait: synchronize, download, an event's synchronize.
  virtual void launch(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup, StreamImpl* stream) = 0;
  void launch(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup) {
    launch(kernel, args, grid, threadgroup, nullptr);
  }
  // Waits for every stream.
  virtual void synchronize() = 0;

  // The 128 bytes a `tensormap` parameter receives for `map` (Context checked its rules;
  // `strides` are its byte strides, packed where the map gives none). CUDA:
  // cuTensorMapEncodeTiled. The default throws: only CUDA has TMA tensor maps.
  virtual void encode_tensor_map(const TensorMap& map, const std::vector<uint64_t>& strides, uint8_t* out) const;

  // A launch validated once and then re-issued (Context::prepare_launch): the device keeps what
  // it can precompute (CUDA: the kernelParams array). Buffers and scalars are rebound by slot
  // (their index in LaunchArgs::buffers / scalars); Context has checked them.
  struct Prepared {
    virtual ~Prepared() = default;
    virtual void set_buffer(size_t slot, BufferImpl* buf, uint64_t offset) = 0;
    // The byte length the buffer of `slot` is now bound with (LaunchArgs::bound_bytes), called
    // after set_buffer; devices that do not bound accesses by it ignore it.
    virtual void set_buffer_bytes(size_t slot, uint64_t bytes) {}
    virtual void set_scalar(size_t slot, uint64_t bits) = 0;
    // Blob `slot` (its index among the blobs) takes new bytes of the same size; `buf` is the
    // buffer a tensor map addresses (null otherwise).
    virtual void set_blob(size_t slot, const uint8_t* bytes, size_t size, BufferImpl* buf) = 0;
    // Blob `slot`'s new tensor-map description (LaunchArgs::blob_maps), after set_blob; devices
    // that copy through the encoding alone ignore it.
    virtual void set_blob_map(size_t slot, const LaunchArgs::BlobMap& map) {}
    virtual void launch(StreamImpl* stream) = 0;
  };
  // The default keeps a copy of the arguments and calls launch().
  virtual std::unique_ptr<Prepared> prepare(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup);

  // Prepared launches replayed as one unit (Context::create_sequence). `update` is called
  // before a replay with the indices of the steps rebound since the last one (Context has
  // checked the new bindings); the recording takes them in place where it can, else records
  // again. The default replays launch by launch; CUDA launches a graph of the steps, Vulkan
  // submits one command buffer that holds them all. describe() says which, and how often the
  // recording was made and updated in place (LaunchSequence::recording).
  struct Recorded {
    virtual ~Recorded() = default;
    virtual void update(const std::vector<size_t>& changed) = 0;
    virtual void replay(StreamImpl* stream) = 0;
    virtual std::string describe() const = 0;
  };
  virtual std::unique_ptr<Recorded> record(const std::vector<Prepared*>& steps);

  // Benchmark timing: `warmup` untimed launches, then `samples` launches each timed on the
  // device's own clock (CUDA events, Vulkan timestamp queries; the host clock for the
  // interpreter). Returns one figure per sample in microseconds. With flush_l2, a write of a
  // buffer larger than the last-level cache runs (untimed) before every sample.
  virtual std::vector<double> time_launches(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup,
                                            const TimingOptions& opts) = 0;
  // Benchmark timing of a sequence of launches (a multi-step plan): each sample is the whole
  // sequence, launched back to back in order. The default times one launch with
  // time_launches() and a longer sequence on the host clock around launch() of every step and
  // synchronize() (Vulkan and the interpreter wait per launch anyway); CUDA brackets the
  // sequence with events on its stream.
  struct TimedLaunch {
    CompiledKernel* kernel;
    const LaunchArgs* args;
    Dim3 grid, threadgroup;
  };
  virtual std::vector<double> time_sequence(const std::vector<TimedLaunch>& seq, const TimingOptions& opts);
  // What the compiler reported for this kernel (CUDA: ptxas -v registers / spills / shared
  // memory lines); empty where the backend reports nothing.
  virtual std::string compile_report(const CompiledKernel& kernel) const { return {}; }

  // Native access for a vendor library working on this device's buffers (src/runtime/blas.cpp,
  // NCCL in src/runtime/cuda/nccl.cpp):
  // makes the device's context current on the calling thread and returns the native handle of
  // `stream` (CUDA: its CUstream; the default stream is the legacy null stream, nullptr). Buffer
  // addresses come from address(). The default throws: the device has no such handles.
  virtual void* native_stream(StreamImpl* stream);
  // Benchmark timing of work a library enqueues: `issue(stream)` enqueues one call on the
  // device's default stream; warmup calls, then samples each timed like time_launches (CUDA:
  // events around each call, the L2 flush enqueued before the start event). The default throws,
  // like native_stream().
  virtual std::vector<double> time_native(const std::function<void(StreamImpl*)>& issue, const TimingOptions& opts);
  // Per-device state of a vendor library (blas.cpp: the cuBLASLt handle, workspaces and the
  // algorithm cache), created on first use under library_mu and destroyed with the device.
  std::shared_ptr<void> library_state;
  std::mutex library_mu;
};

// The parts of a Context that runtime code outside context.cpp needs (blas.cpp).
struct ContextAccess {
  static Device& device(Context& ctx) { return *ctx.device_; }
  // The stream's implementation, after checking it belongs to `ctx` (throws otherwise).
  static StreamImpl* stream(const Context& ctx, const Stream& s, const char* what) { return ctx.own(s, what); }
};

// Vulkan: why `dev` cannot run the u64 atomics of `k` (instantiated as `dtype`), naming the
// kernel, the memory and the missing feature (shaderBufferInt64Atomics for buffers,
// shaderSharedInt64Atomics for threadgroup memory); "" when it can or there are none.
std::string vulkan_u64_atomics_problem(const ir::Kernel& k, Instantiation dtype, const DeviceInfo& dev);

// Factories; each throws iron::Error with a plain reason when the backend is unavailable.
std::unique_ptr<Device> make_vulkan_device(int index);
std::unique_ptr<Device> make_cuda_device(int index);
std::unique_ptr<Device> make_interp_device(int index);
std::unique_ptr<Device> make_hip_device(int index);
std::vector<DeviceInfo> list_hip_devices(std::string* why);
std::vector<DeviceInfo> list_interp_devices(std::string* why);
std::vector<DeviceInfo> list_vulkan_devices(std::string* why);
std::vector<DeviceInfo> list_cuda_devices(std::string* why);

// NVRTC without a device: compiles CUDA source for `arch` (e.g. "sm_90a"). Used by the CUDA
// device and by the CI check that every kernel compiles for the H200. Throws iron::Error when
// libnvrtc cannot be loaded.
struct NvrtcResult {
  bool ok = false;
  std::string log;             // compiler log, including ptxas -v lines
  std::vector<char> cubin;
};
NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch);

// One CUDA translation unit from several emitted kernels (Device::compile_many): the #include
// lines of all of them once at the top, then each source in a namespace of its own, so their
// helper functions do not collide; the extern "C" entry points keep their names.
std::string combine_cuda_sources(const std::vector<std::string>& sources);
// How many NVRTC compiles CudaDevice::compile_many runs at once: IRON_COMPILE_THREADS (1..1024)
// when set, else the machine's hardware threads.
size_t compile_threads();

}  // namespace iron::rt
