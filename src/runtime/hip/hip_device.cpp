// The HIP device (AMD GPUs): libamdhip64 opened at run time, so a binary built anywhere runs
// unchanged on a machine with ROCm, and says "no AMD GPU" cleanly where there is none. Kernels
// go through the compile path (lower, emit HIP for the GPU's own gfx architecture, clang++
// offline to a code object), are loaded with hipModuleLoadData and launched with
// hipModuleLaunchKernel on the null stream. The HIP 5 ABI (libamdhip64.so.5) is the one Iron
// is built against: its attribute numbers and hipDeviceProp_t layout.
#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "codegen/codegen.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"

namespace iron::rt {
namespace {

using hipError_t = int;
constexpr hipError_t kHipSuccess = 0;
constexpr hipError_t kHipErrorNoDevice = 100;
// hipDeviceAttribute_t values of HIP 5 (hip_runtime_api.h).
constexpr int kAttrMaxBlockDimX = 26, kAttrMaxGridDimX = 29, kAttrMaxThreadsPerBlock = 56,
              kAttrMultiprocessorCount = 63, kAttrMaxSharedMemoryPerBlock = 74, kAttrWarpSize = 87;
constexpr int kMemcpyHostToDevice = 1, kMemcpyDeviceToHost = 2;
constexpr size_t kPropsGcnArchName = 396, kPropsSize = 792;  // hipDeviceProp_t of HIP 5

struct HipApi {
  void* lib = nullptr;  // never dlclose'd (the runtime keeps threads)
  std::string path;
  hipError_t (*hipInit)(unsigned) = nullptr;
  hipError_t (*hipGetDeviceCount)(int*) = nullptr;
  hipError_t (*hipDeviceGetName)(char*, int, int) = nullptr;
  hipError_t (*hipDeviceGetAttribute)(int*, int, int) = nullptr;
  hipError_t (*hipGetDeviceProperties)(void*, int) = nullptr;
  hipError_t (*hipDriverGetVersion)(int*) = nullptr;
  hipError_t (*hipSetDevice)(int) = nullptr;
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;
  hipError_t (*hipFree)(void*) = nullptr;
  hipError_t (*hipMemcpy)(void*, const void*, size_t, int) = nullptr;
  hipError_t (*hipMemset)(void*, int, size_t) = nullptr;
  hipError_t (*hipDeviceSynchronize)() = nullptr;
  const char* (*hipGetErrorString)(hipError_t) = nullptr;
  hipError_t (*hipModuleLoadData)(void**, const void*) = nullptr;
  hipError_t (*hipModuleUnload)(void*) = nullptr;
  hipError_t (*hipModuleGetFunction)(void**, void*, const char*) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      void*, void**, void**) = nullptr;
  hipError_t (*hipEventCreate)(void**) = nullptr;
  hipError_t (*hipEventRecord)(void*, void*) = nullptr;
  hipError_t (*hipEventSynchronize)(void*) = nullptr;
  hipError_t (*hipEventElapsedTime)(float*, void*, void*) = nullptr;
  hipError_t (*hipEventDestroy)(void*) = nullptr;

  std::string describe(hipError_t r) const {
    const char* s = hipGetErrorString ? hipGetErrorString(r) : nullptr;
    return std::to_string(r) + (s ? std::string(" ") + s : std::string());
  }
  void check(hipError_t r, const std::string& what) const {
    if (r != kHipSuccess) throw Error("HIP: " + what + " failed: " + describe(r));
  }
};

// The HIP runtime, loaded once; throws iron::Error with a plain reason when it cannot be.
std::shared_ptr<HipApi> hip_api() {
  static std::shared_ptr<HipApi> api;
  static std::string error;
  static bool tried = false;
  if (tried) {
    if (!api) throw Error(error);
    return api;
  }
  tried = true;
  auto a = std::make_shared<HipApi>();
  for (const char* name : {"libamdhip64.so.5"}) {
    a->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (a->lib) {
      a->path = name;
      break;
    }
  }
  if (!a->lib) {
    error = "no AMD GPU: the HIP runtime (libamdhip64.so.5, HIP 5) cannot be loaded: " + std::string(dlerror());
    throw Error(error);
  }
  bool missing = false;
  std::string which;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(a->lib, name));
    if (!fn) missing = true, which += std::string(which.empty() ? "" : ", ") + name;
  };
  sym(a->hipInit, "hipInit");
  sym(a->hipGetDeviceCount, "hipGetDeviceCount");
  sym(a->hipDeviceGetName, "hipDeviceGetName");
  sym(a->hipDeviceGetAttribute, "hipDeviceGetAttribute");
  sym(a->hipGetDeviceProperties, "hipGetDeviceProperties");
  sym(a->hipDriverGetVersion, "hipDriverGetVersion");
  sym(a->hipSetDevice, "hipSetDevice");
  sym(a->hipMalloc, "hipMalloc");
  sym(a->hipFree, "hipFree");
  sym(a->hipMemcpy, "hipMemcpy");
  sym(a->hipMemset, "hipMemset");
  sym(a->hipDeviceSynchronize, "hipDeviceSynchronize");
  sym(a->hipGetErrorString, "hipGetErrorString");
  sym(a->hipModuleLoadData, "hipModuleLoadData");
  sym(a->hipModuleUnload, "hipModuleUnload");
  sym(a->hipModuleGetFunction, "hipModuleGetFunction");
  sym(a->hipModuleLaunchKernel, "hipModuleLaunchKernel");
  sym(a->hipEventCreate, "hipEventCreate");
  sym(a->hipEventRecord, "hipEventRecord");
  sym(a->hipEventSynchronize, "hipEventSynchronize");
  sym(a->hipEventElapsedTime, "hipEventElapsedTime");
  sym(a->hipEventDestroy, "hipEventDestroy");
  if (missing) {
    error = "no AMD GPU: " + a->path + " lacks " + which;
    throw Error(error);
  }
  api = a;
  return api;
}

// The devices the runtime reports, or why there are none ("no AMD GPU: ...").
int device_count(const HipApi& api) {
  const hipError_t init = api.hipInit(0);
  int count = 0;
  const hipError_t r = init == kHipSuccess ? api.hipGetDeviceCount(&count) : init;
  if (r == kHipErrorNoDevice || (r == kHipSuccess && count == 0))
    throw Error("no AMD GPU: the HIP runtime (" + api.path + ") reports no device");
  if (r != kHipSuccess)
    throw Error("no AMD GPU: the HIP runtime (" + api.path + ") cannot start: " + api.describe(r));
  return count;
}

DeviceInfo query_info(const HipApi& api, int dev) {
  DeviceInfo d;
  d.backend = Backend::Hip;
  char name[256] = {};
  api.check(api.hipDeviceGetName(name, sizeof name, dev), "hipDeviceGetName");
  d.name = name;
  std::vector<char> props(kPropsSize + 256, 0);
  api.check(api.hipGetDeviceProperties(props.data(), dev), "hipGetDeviceProperties");
  std::string arch(props.data() + kPropsGcnArchName, strnlen(props.data() + kPropsGcnArchName, 255));
  d.arch = arch.substr(0, arch.find(':'));  // "gfx90a:sramecc+:xnack-" -> "gfx90a"
  int version = 0;
  api.hipDriverGetVersion(&version);
  d.driver = "HIP " + std::to_string(version) + " (" + api.path + ")";
  auto attr = [&](int a) {
    int v = 0;
    api.check(api.hipDeviceGetAttribute(&v, a, dev), "hipDeviceGetAttribute(" + std::to_string(a) + ")");
    return v;
  };
  d.lane_width = uint32_t(attr(kAttrWarpSize));
  d.max_threads_per_group = uint32_t(attr(kAttrMaxThreadsPerBlock));
  d.max_group_size = {uint32_t(attr(kAttrMaxBlockDimX)), uint32_t(attr(kAttrMaxBlockDimX + 1)),
                      uint32_t(attr(kAttrMaxBlockDimX + 2))};
  d.max_grid = {uint32_t(attr(kAttrMaxGridDimX)), uint32_t(attr(kAttrMaxGridDimX + 1)), uint32_t(attr(kAttrMaxGridDimX + 2))};
  d.shared_memory_bytes = uint64_t(attr(kAttrMaxSharedMemoryPerBlock));
  (void)attr(kAttrMultiprocessorCount);
  d.f16 = d.bf16 = true;
  return d;
}

struct HipBuffer final : BufferImpl {
  std::shared_ptr<HipApi> api;
  void* ptr = nullptr;
  ~HipBuffer() override {
    if (ptr) api->hipFree(ptr);
  }
};

struct HipKernel final : CompiledKernel {
  std::shared_ptr<HipApi> api;
  void* module = nullptr;
  void* fn = nullptr;
  std::string entry;
  bool dynamic_shared = false;
  Dim3 built_for;
  ~HipKernel() override {
    if (module) api->hipModuleUnload(module);
  }
};

class HipDevice final : public Device {
 public:
  explicit HipDevice(int index) : api_(hip_api()) {
    const int count = device_count(*api_);
    if (index < 0 || index >= count)
      throw Error("HIP device index " + std::to_string(index) + " out of range: the runtime reports " +
                  std::to_string(count) + " AMD GPU(s)");
    index_ = index;
    api_->check(api_->hipSetDevice(index), "hipSetDevice");
    info_ = query_info(*api_, index);
    profile_ = codegen::profile_for(codegen::Target::Hip, info_.arch);
    profile_.lane_width = info_.lane_width;  // the device's own wavefront size
  }
  const DeviceInfo& info() const override { return info_; }

  std::unique_ptr<BufferImpl> alloc(size_t bytes) override {
    auto b = std::make_unique<HipBuffer>();
    b->api = api_;
    b->bytes = bytes;
    b->owner = this;
    api_->check(api_->hipMalloc(&b->ptr, bytes ? bytes : 1), "hipMalloc(" + std::to_string(bytes) + " bytes)");
    return b;
  }
  // Every stream of the HIP device is the null stream: work runs in issue order, which orders
  // any two streams (stricter than the Device contract asks, never looser). Copies are
  // hipMemcpy, which waits for the null stream's work.
  void upload(BufferImpl& buf, size_t offset, const void* data, size_t bytes, StreamImpl*) override {
    if (offset > buf.bytes || bytes > buf.bytes - offset)
      throw Error("HIP upload of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " into a " +
                  std::to_string(buf.bytes) + "-byte buffer");
    api_->check(api_->hipMemcpy(static_cast<char*>(own(buf).ptr) + offset, data, bytes, kMemcpyHostToDevice), "hipMemcpy (upload)");
  }
  void download(BufferImpl& buf, size_t offset, void* data, size_t bytes) override {
    if (offset > buf.bytes || bytes > buf.bytes - offset)
      throw Error("HIP download of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " from a " +
                  std::to_string(buf.bytes) + "-byte buffer");
    api_->check(api_->hipMemcpy(data, static_cast<char*>(own(buf).ptr) + offset, bytes, kMemcpyDeviceToHost), "hipMemcpy (download)");
  }
  StreamImpl* create_stream() override {
    streams_.push_back(std::make_unique<StreamImpl>());
    return streams_.back().get();
  }
  // An event is a point in the null stream's work: it is done once the device is idle.
  std::shared_ptr<EventImpl> record_event(StreamImpl*) override { return std::make_shared<EventImpl>(); }
  std::shared_ptr<EventImpl> buffer_event(BufferImpl&) override { return std::make_shared<EventImpl>(); }
  void wait_event(StreamImpl*, EventImpl&) override {}  // one stream: already ordered
  bool event_done(EventImpl&) override {
    synchronize();
    return true;
  }
  void synchronize_event(EventImpl&) override { synchronize(); }
  void synchronize_stream(StreamImpl*) override { synchronize(); }

  // The compile path for this GPU's architecture; the threadgroup shape is baked in as on CUDA.
  std::unique_ptr<CompiledKernel> compile(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup) override {
    codegen::EmitOptions options;
    options.threadgroup[0] = threadgroup.x;
    options.threadgroup[1] = threadgroup.y;
    options.threadgroup[2] = threadgroup.z;
    Compiled c = compile_optimized(k, dtype, profile_, options);
    if (!c.ok()) throw Error(c.error);
    auto out = std::make_unique<HipKernel>();
    out->api = api_;
    out->entry = c.emitted.entry;
    out->source = std::move(c.emitted.source);
    out->binary = std::move(c.binary);
    out->dynamic_shared = codegen::cuda_dynamic_shared(k, dtype);
    out->built_for = threadgroup;
    api_->check(api_->hipModuleLoadData(&out->module, out->binary.data()), "hipModuleLoadData(" + out->entry + ", " + info_.arch + ")");
    api_->check(api_->hipModuleGetFunction(&out->fn, out->module, out->entry.c_str()), "hipModuleGetFunction(" + out->entry + ")");
    return out;
  }
  bool pipeline_depends_on_threadgroup() const override { return true; }

  void launch(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 tg, StreamImpl*) override {
    HipKernel& kk = static_cast<HipKernel&>(kernel);
    if (kk.built_for.x != tg.x || kk.built_for.y != tg.y || kk.built_for.z != tg.z)
      throw Error("HIP kernel " + kk.entry + " was built for another threadgroup shape; build it for this one");
    std::vector<void*> ptrs;
    std::vector<void*> params;
    ptrs.reserve(args.buffers.size());
    size_t bi = 0, si = 0;
    for (uint8_t is_buffer : args.is_buffer) {
      if (is_buffer) {
        if (bi >= args.buffers.size()) throw Error("HIP launch of " + kk.entry + ": too few buffers");
        const uint64_t offset = bi < args.offsets.size() ? args.offsets[bi] : 0;  // a view's offset
        ptrs.push_back(static_cast<char*>(own(*args.buffers[bi]).ptr) + offset);
        ++bi;
        params.push_back(&ptrs.back());
      } else {
        if (si >= args.scalars.size()) throw Error("HIP launch of " + kk.entry + ": too few scalars");
        params.push_back(const_cast<uint64_t*>(&args.scalars[si++]));
      }
    }
    const unsigned shared = kk.dynamic_shared ? unsigned(args.threadgroup_bytes) : 0u;
    api_->check(api_->hipModuleLaunchKernel(kk.fn, grid.x, grid.y, grid.z, tg.x, tg.y, tg.z, shared, nullptr,
                                            params.data(), nullptr),
                "hipModuleLaunchKernel(" + kk.entry + ")");
  }
  void synchronize() override { api_->check(api_->hipDeviceSynchronize(), "hipDeviceSynchronize"); }

  std::vector<double> time_launches(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 tg,
                                    const TimingOptions& opts) override {
    for (int i = 0; i < opts.warmup; ++i) launch(kernel, args, grid, tg, nullptr);
    synchronize();
    void *start = nullptr, *stop = nullptr;
    api_->check(api_->hipEventCreate(&start), "hipEventCreate");
    api_->check(api_->hipEventCreate(&stop), "hipEventCreate");
    std::vector<double> out;
    for (int i = 0; i < opts.samples; ++i) {
      if (opts.flush_l2) flush_l2();
      api_->check(api_->hipEventRecord(start, nullptr), "hipEventRecord");
      launch(kernel, args, grid, tg, nullptr);
      api_->check(api_->hipEventRecord(stop, nullptr), "hipEventRecord");
      api_->check(api_->hipEventSynchronize(stop), "hipEventSynchronize");
      float ms = 0;
      api_->check(api_->hipEventElapsedTime(&ms, start, stop), "hipEventElapsedTime");
      out.push_back(double(ms) * 1000.0);
    }
    api_->hipEventDestroy(start);
    api_->hipEventDestroy(stop);
    return out;
  }

 private:
  // A write of 512 MiB (more than any AMD GPU's last-level cache: 256 MiB Infinity Cache on
  // MI300X) before a timed sample, untimed.
  void flush_l2() {
    if (!flush_) flush_ = alloc(512u << 20);
    api_->check(api_->hipMemset(static_cast<HipBuffer&>(*flush_).ptr, int(++flush_value_), flush_->bytes), "hipMemset (L2 flush)");
  }
  std::unique_ptr<BufferImpl> flush_;
  unsigned char flush_value_ = 0;

  HipBuffer& own(BufferImpl& b) const {
    if (b.owner != this) throw Error("HIP use of a buffer from another device");
    return static_cast<HipBuffer&>(b);
  }

  std::shared_ptr<HipApi> api_;
  int index_ = 0;
  DeviceInfo info_;
  codegen::TargetProfile profile_;
  std::vector<std::unique_ptr<StreamImpl>> streams_;  // create_stream(): handles, all the null stream
};

}  // namespace

std::unique_ptr<Device> make_hip_device(int index) { return std::make_unique<HipDevice>(index); }

std::vector<DeviceInfo> list_hip_devices(std::string* why) {
  std::vector<DeviceInfo> out;
  try {
    std::shared_ptr<HipApi> api = hip_api();
    const int count = device_count(*api);
    for (int i = 0; i < count; ++i) out.push_back(query_info(*api, i));
  } catch (const Error& e) {
    if (why) *why = e.what();
    return {};
  }
  if (why) why->clear();
  return out;
}

}  // namespace iron::rt
