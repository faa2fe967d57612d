// The CUDA device: the driver API and NVRTC, both dlopen'd at run time (see cuda_api.hpp), so a
// binary built on a machine without a GPU runs unchanged on one with a driver, and says
// "no CUDA driver" cleanly where there is none. Kernels are emitted as CUDA C++, compiled by
// NVRTC straight to a CUBIN for the device's own arch, and launched on the legacy null stream.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codegen/codegen.hpp"
#include "runtime/compile.hpp"
#include "runtime/cuda/cuda_api.hpp"
#include "runtime/device.hpp"

namespace iron::rt {
namespace {

using namespace iron::cuda;

// ---------------------------------------------------------------------------------------------
// Driver loading

// Names for the codes we are likely to meet, for when cuGetErrorName is missing or (as in the
// toolkit's stub library) itself fails.
const char* known_error_name(CUresult r) {
  switch (r) {
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 600: return "CUDA_ERROR_NOT_READY";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 715: return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    case 716: return "CUDA_ERROR_MISALIGNED_ADDRESS";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return nullptr;
  }
}

// Errors raised while kernels run that leave the context unusable: every later call in this
// process fails with the same code, so say so instead of letting the next test look guilty.
bool is_sticky(CUresult r) {
  return r == 700 || r == 702 || (r >= 714 && r <= 719);
}

struct CudaDriver {
  void* lib = nullptr;  // never dlclose'd: unloading libcuda while it has threads is unsafe
  std::string path;     // the file the loader picked, for messages
#define IRON_CUDA_FN(name, ret, args) ret(*name) args = nullptr;
  IRON_CUDA_FUNCTIONS(IRON_CUDA_FN)
  IRON_CUDA_OPTIONAL_FUNCTIONS(IRON_CUDA_FN)
#undef IRON_CUDA_FN

  // "700 CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
  std::string describe(CUresult r) const {
    std::string s = std::to_string(r);
    const char* name = nullptr;
    if (!cuGetErrorName || cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = known_error_name(r);
    if (name) s += std::string(" ") + name;
    const char* text = nullptr;
    if (cuGetErrorString && cuGetErrorString(r, &text) == CUDA_SUCCESS && text) s += std::string(": ") + text;
    return s;
  }
  void check(CUresult r, const std::string& what) const {
    if (r != CUDA_SUCCESS) throw Error(what + " failed: " + describe(r));
  }
};

struct DriverLoad {
  std::shared_ptr<const CudaDriver> driver;
  std::string error;
};

DriverLoad load_driver() {
  DriverLoad out;
  // Only the versioned soname: the unversioned libcuda.so is a development symlink, and on
  // toolkit-only machines it may be the stub.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    out.error = "no CUDA driver: libcuda.so.1 not found (this machine has no NVIDIA driver)";
    return out;
  }
  auto drv = std::make_shared<CudaDriver>();
  drv->lib = lib;
  std::string missing;
#define IRON_CUDA_FN(name, ret, args)                                   \
  drv->name = reinterpret_cast<ret(*) args>(dlsym(lib, #name));         \
  if (!drv->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  IRON_CUDA_FUNCTIONS(IRON_CUDA_FN)
#undef IRON_CUDA_FN
#define IRON_CUDA_FN(name, ret, args) drv->name = reinterpret_cast<ret(*) args>(dlsym(lib, #name));
  IRON_CUDA_OPTIONAL_FUNCTIONS(IRON_CUDA_FN)
#undef IRON_CUDA_FN
  Dl_info where{};
  drv->path = (drv->cuInit && dladdr(reinterpret_cast<void*>(drv->cuInit), &where) && where.dli_fname)
                  ? where.dli_fname
                  : "libcuda.so.1";
  if (!missing.empty()) {
    out.error = "no usable CUDA driver: " + drv->path + " lacks " + missing + " (driver too old?)";
    return out;
  }
  if (CUresult r = drv->cuInit(0); r != CUDA_SUCCESS) {
    if (r == 100)
      out.error = "no CUDA device: cuInit failed with " + drv->describe(r);
    else if (r == CUDA_ERROR_STUB_LIBRARY)
      out.error = "no CUDA driver: cuInit failed with " + drv->describe(r) + " (" + drv->path +
                  " is the CUDA toolkit's stub library, not an NVIDIA driver)";
    else
      out.error = "no usable CUDA driver: cuInit failed with " + drv->describe(r) + " (" + drv->path + ")";
    return out;
  }
  out.driver = std::move(drv);
  return out;
}

// Loaded once per process; a failure is remembered too (a driver does not appear mid-run).
std::shared_ptr<const CudaDriver> cuda_driver() {
  static const DriverLoad load = load_driver();
  if (!load.driver) throw Error(load.error);
  return load.driver;
}

// ---------------------------------------------------------------------------------------------
// NVRTC loading

struct Nvrtc {
  void* lib = nullptr;  // never dlclose'd
  std::string path;
  std::string include_dir;  // CUDA headers (cuda_fp16.h ...); empty when none was found
  int major = 0, minor = 0;
#define IRON_NVRTC_FN(name, ret, args) ret(*name) args = nullptr;
  IRON_NVRTC_FUNCTIONS(IRON_NVRTC_FN)
#undef IRON_NVRTC_FN
};

struct NvrtcLoad {
  std::unique_ptr<Nvrtc> nvrtc;
  std::string error;
};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool file_exists(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

NvrtcLoad load_nvrtc() {
  NvrtcLoad out;
  const std::string cuda_home = env_or_empty("CUDA_HOME");
  std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  if (!cuda_home.empty()) candidates.push_back(cuda_home + "/lib64/libnvrtc.so.13");
  candidates.push_back("/usr/local/cuda/lib64/libnvrtc.so.13");

  void* lib = nullptr;
  std::string tried;
  for (size_t i = 0; i < candidates.size() && !lib; ++i) {
    const std::string& c = candidates[i];
    if (std::find(candidates.begin(), candidates.begin() + long(i), c) != candidates.begin() + long(i)) continue;
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = dlerror();
      tried += "\n  " + (err ? std::string(err) : c + ": not found");
    }
  }
  if (!lib) {
    out.error = "NVRTC not found: tried" + tried + "\n(install the CUDA toolkit or set CUDA_HOME)";
    return out;
  }
  auto nv = std::make_unique<Nvrtc>();
  nv->lib = lib;
  std::string missing;
#define IRON_NVRTC_FN(name, ret, args)                                \
  nv->name = reinterpret_cast<ret(*) args>(dlsym(lib, #name));        \
  if (!nv->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  IRON_NVRTC_FUNCTIONS(IRON_NVRTC_FN)
#undef IRON_NVRTC_FN
  Dl_info where{};
  nv->path = (nv->nvrtcVersion && dladdr(reinterpret_cast<void*>(nv->nvrtcVersion), &where) && where.dli_fname)
                 ? where.dli_fname
                 : "libnvrtc";
  if (!missing.empty()) {
    out.error = "NVRTC not found: " + nv->path + " lacks " + missing;
    return out;
  }
  nv->nvrtcVersion(&nv->major, &nv->minor);

  // NVRTC dlopens libnvrtc-builtins.so.<major>.<minor> by soname at compile time, through the
  // loader path, not from its own folder. When we found libnvrtc by absolute path only, that
  // fails (NVRTC_ERROR_BUILTIN_OPERATION_FAILURE); loading the builtins from libnvrtc's folder
  // first makes the soname lookup find the loaded copy. Best effort: a failure shows in the log.
  const std::string lib_dir = dir_of(nv->path);
  const std::string builtins =
      lib_dir + "/libnvrtc-builtins.so." + std::to_string(nv->major) + "." + std::to_string(nv->minor);
  if (file_exists(builtins)) dlopen(builtins.c_str(), RTLD_NOW | RTLD_GLOBAL);

  // NVRTC has no default include path: cuda_fp16.h / cuda_bf16.h come from the toolkit.
  std::vector<std::string> include_dirs;
  if (!cuda_home.empty()) include_dirs.push_back(cuda_home + "/include");
  if (std::string p = env_or_empty("CUDA_PATH"); !p.empty()) include_dirs.push_back(p + "/include");
  include_dirs.push_back(lib_dir + "/../include");  // <toolkit>/lib64/../include, targets/<arch>/...
  include_dirs.push_back("/usr/local/cuda/include");
  for (const std::string& d : include_dirs)
    if (file_exists(d + "/cuda_fp16.h")) {
      nv->include_dir = d;
      break;
    }
  out.nvrtc = std::move(nv);
  return out;
}

const Nvrtc& nvrtc() {
  static const NvrtcLoad load = load_nvrtc();
  if (!load.nvrtc) throw Error(load.error);
  return *load.nvrtc;
}

std::string numbered_source(const std::string& source) {
  std::string out;
  int line = 0;
  for (size_t start = 0; start < source.size();) {
    size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    char num[16];
    std::snprintf(num, sizeof num, "%5d | ", ++line);
    out += num;
    out.append(source, start, end - start);
    out += '\n';
    start = end + 1;
  }
  return out;
}

// The options every NVRTC compile gets (nvrtc_compile), also part of the disk-cache fingerprint.
// No --use_fast_math: expf, division and sqrt stay IEEE-accurate, so CUDA results match the
// other backends within the conformance tolerances. --fmad=false: no a * b + c is contracted
// into an fma the IR does not contain (docs/semantics.md; fma_fusion makes the fmas it wants
// explicit). -default-device makes helper functions without __device__ compile for the GPU.
std::vector<std::string> nvrtc_options(const Nvrtc& nv, const std::string& arch) {
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-std=c++17", "--ptxas-options=-v",
                                   "--fmad=false", "-default-device"};
  if (!nv.include_dir.empty()) opts.push_back("--include-path=" + nv.include_dir);
  return opts;
}

// ---------------------------------------------------------------------------------------------
// Disk-cache binaries: "IRONCUB1", the ptxas log's size (u64), the log, zero padding to a multiple
// of 16 bytes, then the CUBIN, so the CUBIN starts 16-byte aligned in a buffer from operator new
// and compile_report() of a loaded kernel is the same as of a compiled one.

constexpr char kBinaryMagic[8] = {'I', 'R', 'O', 'N', 'C', 'U', 'B', '1'};

std::vector<char> pack_binary(const std::string& log, const std::vector<char>& cubin) {
  const size_t log_end = 16 + log.size();
  const size_t cubin_at = (log_end + 15) / 16 * 16;
  std::vector<char> out(cubin_at + cubin.size(), 0);
  std::memcpy(out.data(), kBinaryMagic, 8);
  const uint64_t n = log.size();
  std::memcpy(out.data() + 8, &n, 8);
  std::memcpy(out.data() + 16, log.data(), log.size());
  std::memcpy(out.data() + cubin_at, cubin.data(), cubin.size());
  return out;
}

// Splits a packed binary; false when it is not one (or holds no ELF image).
bool unpack_binary(const std::vector<char>& bin, std::string& log, const char*& cubin, size_t& cubin_size) {
  if (bin.size() < 16 || std::memcmp(bin.data(), kBinaryMagic, 8) != 0) return false;
  uint64_t n = 0;
  std::memcpy(&n, bin.data() + 8, 8);
  if (n > bin.size() - 16) return false;
  const size_t cubin_at = (16 + size_t(n) + 15) / 16 * 16;
  if (cubin_at + 4 > bin.size() || std::memcmp(bin.data() + cubin_at, "\x7f" "ELF", 4) != 0) return false;
  log.assign(bin.data() + 16, size_t(n));
  cubin = bin.data() + cubin_at;
  cubin_size = bin.size() - cubin_at;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Device objects

// The context this thread last made current through Iron. launch() skips cuCtxSetCurrent when it
// is ours; since another library (PyTorch, another Iron device) may switch contexts behind our
// back, a launch that fails after skipping it is retried once with the context set (a failed
// cuLaunchKernel enqueues nothing, so the retry cannot launch twice). Everything else (alloc,
// copies, synchronize, module loads) still sets the context every time.
thread_local CUcontext t_current = nullptr;

// A stream of the device (cuStreamCreate, non-blocking): owned by the CudaContext, destroyed with it.
// A foreign stream (Device::wrap_stream) is another library's: kept, never destroyed.
struct CudaStream final : StreamImpl {
  CUstream s = nullptr;
  bool foreign = false;
};
inline CUstream cu_stream(StreamImpl* s) { return s ? static_cast<CudaStream*>(s)->s : nullptr; }

// The device's primary context, shared by the device, its buffers and its modules: the context
// is released only when the last of them goes, so a buffer that outlives its Context still
// frees cleanly instead of touching a destroyed context.
struct CudaContext {
  std::shared_ptr<const CudaDriver> drv;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  std::mutex mu;  // guards streams
  std::vector<std::unique_ptr<CudaStream>> streams;

  ~CudaContext() {
    if (ctx && drv->cuCtxSetCurrent(ctx) == CUDA_SUCCESS)
      for (auto& st : streams)
        if (!st->foreign) drv->cuStreamDestroy_v2(st->s);  // waits for nothing; work already finished
    if (ctx) drv->cuDevicePrimaryCtxRelease_v2(device);  // errors at teardown are ignored
    if (t_current == ctx) t_current = nullptr;
  }
  // Contexts are per thread: make ours current on whichever thread calls us. Correct even if
  // another library switched contexts in between.
  void make_current() const {
    drv->check(drv->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    t_current = ctx;
  }
  // Sets the context only when this thread's last Iron-made switch was not to it; a stale
  // answer (someone else switched) is caught by launch()'s retry.
  bool likely_current() const { return t_current == ctx; }
  // For destructors: no throwing; false when the context could not be made current.
  bool set_current_quietly() const {
    if (drv->cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return false;
    t_current = ctx;
    return true;
  }
};

struct CudaBuffer final : BufferImpl {
  std::shared_ptr<CudaContext> ctx;
  CUdeviceptr ptr = 0;
  CUdeviceptr external = 0;  // wrapped memory (Device::wrap): its owner frees it, not Iron
  ~CudaBuffer() override {
    // No throwing from a destructor; a failing free (e.g. after a sticky kernel error) leaks.
    // Work in flight on the buffer's last stream finishes before its memory goes (back to its
    // owner, for wrapped memory). Except wrapped memory last used on a foreign stream: memory
    // and stream are then another library's, whose allocator reuses the memory in that stream's
    // order (PyTorch's caching allocator does), so waiting here would only stall the host.
    if (ptr && ctx->set_current_quietly()) {
      const bool owner_orders = external && last_stream && static_cast<CudaStream*>(last_stream)->foreign;
      if (last_stream && !owner_orders) ctx->drv->cuStreamSynchronize(cu_stream(last_stream));
      if (!external) ctx->drv->cuMemFree_v2(ptr);
    }
  }
};

struct CudaEvent final : EventImpl {
  std::shared_ptr<CudaContext> ctx;
  CUevent e = nullptr;
  ~CudaEvent() override {
    if (e && ctx->set_current_quietly()) ctx->drv->cuEventDestroy_v2(e);
  }
};

struct CudaKernel final : CompiledKernel {
  std::shared_ptr<CudaContext> ctx;
  CUmodule module = nullptr;
  // Set for a kernel of a module that holds several (compile_many): the module is unloaded when
  // the last of its kernels goes, not by this one.
  std::shared_ptr<CUmod_st> shared_module;
  CUfunction fn = nullptr;
  std::string entry;
  std::string ptxas_log;  // NVRTC's program log: registers, spills, shared memory (ptxas -v)
  // Threadgroup memory in dynamic shared memory (codegen::cuda_dynamic_shared): each launch
  // passes the dispatch's byte count; beyond 48 KiB the function must first opt in
  // (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), done once per larger size.
  bool dynamic_shared = false;
  mutable uint64_t opted_in_bytes = 0;
  // The threadgroup shape the code was built for (__launch_bounds__, group_size constants):
  // launching it with another shape is an error (check_shape).
  Dim3 built_for{0, 0, 0};
  ~CudaKernel() override {
    if (module && !shared_module && ctx->set_current_quietly()) ctx->drv->cuModuleUnload(module);
  }
};

int attribute(const CudaDriver& drv, CUdevice dev, CUdevice_attribute a, const char* name) {
  int v = 0;
  drv.check(drv.cuDeviceGetAttribute(&v, a, dev), std::string("cuDeviceGetAttribute(") + name + ")");
  return v;
}

// The arch NVRTC compiles for. Hopper and Blackwell datacenter parts get the arch-specific
// "a" variant so wgmma / tcgen05 are available; a CUBIN for sm_90a runs only on 9.0 devices,
// which is what we want for a device-specific compile.
std::string arch_name(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if ((major == 9 || major == 10) && minor == 0) arch += "a";
  return arch;
}

DeviceInfo query_info(const CudaDriver& drv, CUdevice dev) {
  DeviceInfo info;
  info.backend = Backend::Cuda;
  char name[256] = {};
  drv.check(drv.cuDeviceGetName(name, int(sizeof name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  int version = 0;
  drv.check(drv.cuDriverGetVersion(&version), "cuDriverGetVersion");
  info.driver = "CUDA driver " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
#define IRON_ATTR(a) attribute(drv, dev, a, #a)
  const int major = IRON_ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = IRON_ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.arch = arch_name(major, minor);
  info.lane_width = uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  info.max_threads_per_group = uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  info.max_group_size = {uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)),
                         uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)),
                         uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z))};
  info.max_grid = {uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)),
                   uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)),
                   uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z))};
  // The static __shared__ limit (48 KiB) every kernel gets, and the opt-in maximum (227 KiB on
  // the H200) a kernel reaches with dynamic shared memory and a function attribute, which the
  // emitter (codegen::cuda_dynamic_shared) and launch arrange beyond 48 KiB.
  info.shared_memory_bytes = uint64_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  info.shared_memory_optin_bytes = uint64_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  info.compute_units = uint32_t(IRON_ATTR(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
#undef IRON_ATTR
  size_t total = 0;
  drv.check(drv.cuDeviceTotalMem_v2(&total, dev), "cuDeviceTotalMem_v2");
  info.memory_bytes = total;
  info.f16 = true;
  info.bf16 = major >= 8;
  return info;
}

std::string dims(Dim3 d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index) {
    auto drv = cuda_driver();
    int count = 0;
    drv->check(drv->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) throw Error("no CUDA device: the CUDA driver reports 0 devices");
    if (index < 0 || index >= count)
      throw Error("CUDA device index " + std::to_string(index) + " out of range: the driver reports " +
                  std::to_string(count) + " device(s)");
    CUdevice dev = 0;
    drv->check(drv->cuDeviceGet(&dev, index), "cuDeviceGet(" + std::to_string(index) + ")");
    info_ = query_info(*drv, dev);
    auto ctx = std::make_shared<CudaContext>();
    ctx->drv = drv;
    ctx->device = dev;
    drv->check(drv->cuDevicePrimaryCtxRetain(&ctx->ctx, dev), "cuDevicePrimaryCtxRetain");
    ctx_ = std::move(ctx);
    ctx_->make_current();
  }

  using Device::download;
  using Device::launch;
  using Device::upload;
  const DeviceInfo& info() const override { return info_; }

  std::unique_ptr<BufferImpl> alloc(size_t bytes) override {
    ctx_->make_current();
    auto buf = std::make_unique<CudaBuffer>();
    buf->ctx = ctx_;
    buf->owner = ctx_.get();  // kept alive by buf->ctx, so no other live object has this address
    buf->bytes = bytes;
    buf->align = 256;  // cuMemAlloc's guarantee
    // Never a zero-byte allocation: cuMemAlloc rejects it, and an empty buffer still binds.
    const size_t n = bytes < 4 ? 4 : bytes;
    drv().check(drv().cuMemAlloc_v2(&buf->ptr, n), "cuMemAlloc_v2(" + std::to_string(n) + " bytes)");
    return buf;
  }

  // A copy on `stream` (from pageable memory: the data has been taken when the call returns).
  // Work on another stream that last used the buffer is waited for first.
  void upload(BufferImpl& buf, size_t offset, const void* data, size_t bytes, StreamImpl* stream) override {
    CudaBuffer& b = own(buf, "upload");
    if (offset > b.bytes || bytes > b.bytes - offset)
      throw Error("CUDA upload of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " into a " +
                  std::to_string(b.bytes) + "-byte buffer");
    if (bytes == 0) return;
    ctx_->make_current();
    // last_ticket is 1 once anything used the buffer (CUDA counts no tickets): work on another
    // stream, the legacy null stream included, finishes before the copy may overwrite its input.
    if (b.last_ticket && b.last_stream != stream) wait_stream(b.last_stream);
    drv().check(drv().cuMemcpyHtoDAsync_v2(b.ptr + offset, data, bytes, cu_stream(stream)), "cuMemcpyHtoDAsync_v2");
    b.last_stream = stream;
    b.last_ticket = 1;
  }

  // Waits for the stream that last used the buffer (the legacy null stream when that was the
  // default stream) and nothing else, then copies on it.
  void download(BufferImpl& buf, size_t offset, void* data, size_t bytes) override {
    CudaBuffer& b = own(buf, "download");
    if (offset > b.bytes || bytes > b.bytes - offset)
      throw Error("CUDA download of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                  " from a " + std::to_string(b.bytes) + "-byte buffer");
    ctx_->make_current();
    // Synchronize first so a failed kernel is reported as such, not as a failed copy.
    wait_stream(b.last_stream);
    if (bytes == 0) return;
    CUstream s = cu_stream(b.last_stream);
    drv().check(drv().cuMemcpyDtoHAsync_v2(data, b.ptr + offset, bytes, s), "cuMemcpyDtoHAsync_v2");
    drv().check(drv().cuStreamSynchronize(s), "cuStreamSynchronize(download)");
  }

  // A device pointer someone else owns (a torch tensor's, ...): never freed by Iron.
  std::unique_ptr<BufferImpl> wrap(void* ptr, size_t bytes) override {
    auto buf = std::make_unique<CudaBuffer>();
    buf->ctx = ctx_;
    buf->owner = ctx_.get();
    buf->bytes = bytes;
    buf->external = reinterpret_cast<CUdeviceptr>(ptr);
    const uint64_t at = uint64_t(buf->external);
    buf->align = at ? std::min<uint64_t>(at & (~at + 1), 256) : 256;
    buf->ptr = buf->external;
    return buf;
  }
  void* address(BufferImpl& buf) override { return reinterpret_cast<void*>(own(buf, "export").ptr); }
  // A vendor library (blas.cpp) enqueues on our streams with our context current.
  void* native_stream(StreamImpl* stream) override {
    ctx_->make_current();
    return cu_stream(stream);
  }

  StreamImpl* create_stream() override {
    ctx_->make_current();
    auto st = std::make_unique<CudaStream>();
    drv().check(drv().cuStreamCreate(&st->s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    std::lock_guard lock(ctx_->mu);
    ctx_->streams.push_back(std::move(st));
    return ctx_->streams.back().get();
  }

  // Null wraps the legacy null stream (the default stream's queue, PyTorch's default stream) as a
  // foreign stream too, so the owner's memory used on it is not waited for on release.
  StreamImpl* wrap_stream(void* native) override {
    const CUstream want = static_cast<CUstream>(native);
    std::lock_guard lock(ctx_->mu);
    for (auto& st : ctx_->streams)
      if (st->foreign && st->s == want) return st.get();
    auto st = std::make_unique<CudaStream>();
    st->s = want;
    st->foreign = true;
    ctx_->streams.push_back(std::move(st));
    return ctx_->streams.back().get();
  }

  std::shared_ptr<EventImpl> record_event(StreamImpl* stream) override {
    ctx_->make_current();
    auto e = std::make_shared<CudaEvent>();
    e->ctx = ctx_;
    drv().check(drv().cuEventCreate(&e->e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    drv().check(drv().cuEventRecord(e->e, cu_stream(stream)), "cuEventRecord");
    return e;
  }
  std::shared_ptr<EventImpl> buffer_event(BufferImpl& buf) override { return record_event(buf.last_stream); }
  void wait_event(StreamImpl* waiter, EventImpl& event) override {
    ctx_->make_current();
    drv().check(drv().cuStreamWaitEvent(cu_stream(waiter), static_cast<CudaEvent&>(event).e, 0), "cuStreamWaitEvent");
  }
  bool event_done(EventImpl& event) override {
    ctx_->make_current();
    CUresult r = drv().cuEventQuery(static_cast<CudaEvent&>(event).e);
    if (r == CUDA_ERROR_NOT_READY) return false;
    if (r != CUDA_SUCCESS) fault(r, "cuEventQuery");
    return true;
  }
  void synchronize_event(EventImpl& event) override {
    ctx_->make_current();
    if (CUresult r = drv().cuEventSynchronize(static_cast<CudaEvent&>(event).e); r != CUDA_SUCCESS)
      fault(r, "cuEventSynchronize");
  }
  void synchronize_stream(StreamImpl* stream) override {
    ctx_->make_current();
    wait_stream(stream);
  }

  // The emission options for code built for `tg` (EmitOptions::threadgroup).
  static codegen::EmitOptions emit_options(Dim3 tg) {
    codegen::EmitOptions options;
    options.cuda_mma = codegen::cuda_mma_from_env();
    options.threadgroup[0] = tg.x;
    options.threadgroup[1] = tg.y;
    options.threadgroup[2] = tg.z;
    return options;
  }

  // Code is built for one threadgroup shape; Context keys its caches by the shape, so a
  // mismatch here is a caller that bypassed them.
  static void check_shape(const CudaKernel& kk, Dim3 tg) {
    const Dim3 b = kk.built_for;
    if (b.x == tg.x && b.y == tg.y && b.z == tg.z) return;
    throw Error("CUDA kernel " + kk.entry + " was built for threadgroup " + std::to_string(b.x) + "x" +
                std::to_string(b.y) + "x" + std::to_string(b.z) + " (its __launch_bounds__ and group_size) and cannot be "
                "launched with threadgroup " + std::to_string(tg.x) + "x" + std::to_string(tg.y) + "x" +
                std::to_string(tg.z) + "; build it for that shape");
  }

  // The compile path (runtime/compile.hpp): lower, emit, NVRTC for this device's arch.
  std::unique_ptr<CompiledKernel> compile(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup) override {
    Compiled c = compile_optimized(k, dtype, codegen::profile_for(codegen::Target::Cuda, info_.arch), emit_options(threadgroup));
    if (!c.ok()) {
      if (c.emitted.source.empty()) throw Error(c.error);
      throw Error(c.error + "\nsource:\n" + numbered_source(c.emitted.source));
    }
    codegen::Emitted emitted = std::move(c.emitted);
    NvrtcResult nv;
    nv.log = std::move(c.log);
    nv.cubin = std::move(c.binary);
    auto out = std::make_unique<CudaKernel>();
    out->ctx = ctx_;
    out->source = std::move(emitted.source);
    out->entry = emitted.entry;
    out->binary = pack_binary(nv.log, nv.cubin);
    out->ptxas_log = std::move(nv.log);
    out->dynamic_shared = codegen::cuda_dynamic_shared(k, dtype);
    out->built_for = threadgroup;
    load_module(*out, nv.cubin.data());
    return out;
  }

  // The kernels are split into as many groups as there are CPU threads (compile_threads(); at
  // least 4 kernels a group); each group is one NVRTC compile, run in parallel, and one module. A group whose
  // compile fails is compiled kernel by kernel, so only the failing kernels are left out (their
  // dispatch reports the error).
  std::vector<std::unique_ptr<CompiledKernel>> compile_many(const std::vector<const ir::Kernel*>& ks,
                                                            const std::vector<Instantiation>& dtypes,
                                                            const std::vector<Dim3>& threadgroups) override {
    const size_t n = ks.size();
    std::vector<std::unique_ptr<CompiledKernel>> out(n);
    std::vector<codegen::Emitted> emitted;
    const codegen::TargetProfile profile = codegen::profile_for(codegen::Target::Cuda, info_.arch);
    for (size_t i = 0; i < n; ++i)  // lowered and emitted by the compile path, compiled here in batches
      emitted.push_back(compile_optimized(*ks[i], dtypes[i], profile, emit_options(threadgroups[i]), false).emitted);
    // One module cannot hold two entries of one name: a kernel and dtype asked for at several
    // threadgroup shapes (code is built per shape) batches once, and its other shapes compile
    // on their own.
    std::vector<size_t> batched, alone;
    {
      std::set<std::string> entries;
      for (size_t i = 0; i < n; ++i) (entries.insert(emitted[i].entry).second ? batched : alone).push_back(i);
    }
    auto compile_alone = [&](size_t i) {
      try {
        out[i] = compile(*ks[i], dtypes[i], threadgroups[i]);
      } catch (const std::exception&) {
        // left out: the dispatch compiles it again and reports why
      }
    };
    const size_t nb = batched.size();
    const size_t threads = compile_threads();
    const size_t groups = std::max<size_t>(1, std::min(threads, nb / 4));
    std::vector<size_t> begin(groups + 1);
    for (size_t g = 0; g <= groups; ++g) begin[g] = nb * g / groups;
    std::vector<NvrtcResult> results(groups);
    std::vector<std::thread> workers;
    for (size_t g = 0; g < groups; ++g) {
      bool all_ok = begin[g + 1] - begin[g] > 1;
      std::vector<std::string> sources;
      for (size_t j = begin[g]; j < begin[g + 1]; ++j) {
        all_ok = all_ok && emitted[batched[j]].ok();
        sources.push_back(emitted[batched[j]].source);
      }
      if (!all_ok) continue;
      workers.emplace_back([this, &results, g, src = combine_cuda_sources(sources)] {
        try {
          results[g] = nvrtc_compile(src, "iron_batch_" + std::to_string(g), info_.arch);
        } catch (const std::exception& e) {
          results[g].ok = false;
          results[g].log = e.what();
        }
      });
    }
    for (std::thread& t : workers) t.join();
    for (size_t g = 0; g < groups; ++g) {
      if (!results[g].ok) {
        for (size_t j = begin[g]; j < begin[g + 1]; ++j) compile_alone(batched[j]);
        continue;
      }
      ctx_->make_current();
      CUmodule module = nullptr;
      drv().check(drv().cuModuleLoadData(&module, results[g].cubin.data()),
                  "cuModuleLoadData(batch of " + std::to_string(begin[g + 1] - begin[g]) + " kernels, " + info_.arch + ")");
      std::shared_ptr<CudaContext> ctx = ctx_;
      std::shared_ptr<CUmod_st> shared(module, [ctx](CUmodule m) {
        if (ctx->set_current_quietly()) ctx->drv->cuModuleUnload(m);
      });
      for (size_t j = begin[g]; j < begin[g + 1]; ++j) {
        const size_t i = batched[j];
        auto k = std::make_unique<CudaKernel>();
        k->ctx = ctx_;
        k->module = module;
        k->shared_module = shared;
        k->entry = emitted[i].entry;
        k->source = std::move(emitted[i].source);
        k->ptxas_log = results[g].log;
        k->dynamic_shared = codegen::cuda_dynamic_shared(*ks[i], dtypes[i]);
        k->built_for = threadgroups[i];
        if (drv().cuModuleGetFunction(&k->fn, module, k->entry.c_str()) != CUDA_SUCCESS) continue;
        out[i] = std::move(k);
      }
    }
    for (size_t i : alone) compile_alone(i);
    return out;
  }

  // The CUBIN depends on the arch, the compiler and its options (the emitted source is covered
  // by the IR hash and Iron's build id in Context's key), not on this particular device.
  std::string cache_fingerprint() const override {
    const Nvrtc& nv = nvrtc();  // throws when NVRTC is missing: no disk cache then
    std::string fp = "cubin " + info_.arch + "; nvrtc " + std::to_string(nv.major) + "." + std::to_string(nv.minor) +
                     "; options:";
    for (const std::string& o : nvrtc_options(nv, info_.arch)) fp += " " + o;
    // The tile strategy changes the source of every kernel with fragments (a bad value throws:
    // no disk cache, and compile() reports it).
    fp += std::string("; mma ") + codegen::cuda_mma_name(codegen::cuda_mma_from_env());
    return fp;
  }

  std::unique_ptr<CompiledKernel> load(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup,
                                       const std::vector<char>& binary) override {
    std::string log;
    const char* cubin = nullptr;
    size_t cubin_size = 0;
    if (!unpack_binary(binary, log, cubin, cubin_size))
      throw Error("cached CUDA binary for '" + k.name + "' (" + instantiation_name(dtype) + ") is malformed");
    auto out = std::make_unique<CudaKernel>();
    out->ctx = ctx_;
    out->entry = codegen::entry_name(k, dtype);  // what emit() names the entry of the optimized kernel too
    out->ptxas_log = std::move(log);
    // `k` is the traced kernel: the pipeline only removes arrays, so where the optimized kernel
    // kept static arrays this may still say dynamic, and the launch then reserves dynamic bytes
    // the kernel does not use (harmless; never too few).
    out->dynamic_shared = codegen::cuda_dynamic_shared(k, dtype);
    out->built_for = threadgroup;  // the disk cache keys by the shape: the binary was built for it
    load_module(*out, cubin);
    return out;
  }

  // The code is emitted for one threadgroup shape (__launch_bounds__, group_size constants).
  bool pipeline_depends_on_threadgroup() const override { return true; }

  void launch(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 tg, StreamImpl* stream) override {
    CudaKernel& kk = own_kernel(kernel, "launch");
    check_shape(kk, tg);
    marshal(kk, args);
    const CUstream s = cu_stream(stream);
    const bool assumed = ctx_->likely_current();
    if (!assumed) ctx_->make_current();
    CUresult r = issue(kk, grid, tg, s);
    if (r != CUDA_SUCCESS && assumed) {  // maybe another library switched contexts: set ours, retry once
      ctx_->make_current();
      r = issue(kk, grid, tg, s);
    }
    if (r != CUDA_SUCCESS) drv().check(r, "cuLaunchKernel(" + last_launch() + ")");
    for (BufferImpl* b : args.buffers) b->last_stream = stream, b->last_ticket = 1;
    for (BufferImpl* b : args.blob_buffers)
      if (b) b->last_stream = stream, b->last_ticket = 1;
  }

  // cuTensorMapEncodeTiled with the map's rules already checked (Context): the element type by
  // its size (a TMA copy moves bits; zeros fill out of bounds for every type), interleave none,
  // element strides 1, no L2 promotion.
  void encode_tensor_map(const TensorMap& m, const std::vector<uint64_t>& strides, uint8_t* out) const override {
    const CudaDriver& d = drv();
    if (!d.cuTensorMapEncodeTiled)
      throw Error("this CUDA driver has no cuTensorMapEncodeTiled (TMA tensor maps need CUDA 12.0 or later)");
    const size_t es = dtype_size(m.buffer.dtype());
    const int type = es == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : es == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                     : es == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_UINT64;
    const int swizzle = m.swizzle == TensorMap::Swizzle::B32 ? CU_TENSOR_MAP_SWIZZLE_32B
                        : m.swizzle == TensorMap::Swizzle::B64 ? CU_TENSOR_MAP_SWIZZLE_64B
                        : m.swizzle == TensorMap::Swizzle::B128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
    const CUdeviceptr base = const_cast<CudaDevice*>(this)->own(*m.buffer.impl(), "tensor map").ptr + m.buffer.offset_bytes();
    unsigned long long dims[5] = {}, st[5] = {};
    unsigned box[5] = {}, elem[5] = {1, 1, 1, 1, 1};
    for (size_t i = 0; i < m.dims.size(); ++i) dims[i] = m.dims[i], box[i] = m.box[i];
    for (size_t i = 0; i < strides.size(); ++i) st[i] = strides[i];
    alignas(64) uint8_t map[128] = {};
    ctx_->make_current();
    d.check(d.cuTensorMapEncodeTiled(map, type, unsigned(m.dims.size()), reinterpret_cast<void*>(base), dims, st, box, elem,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            "cuTensorMapEncodeTiled");
    std::memcpy(out, map, sizeof map);
  }

  // The kernelParams array built once: a launch is cuLaunchKernel with it (and the buffers'
  // stream noted). Rebinding rewrites one pointer or one scalar in place.
  struct CudaPrepared final : Prepared {
    CudaDevice* dev = nullptr;
    CudaKernel* kk = nullptr;
    std::vector<CUdeviceptr> ptrs;
    std::vector<uint64_t> scalars;
    std::vector<void*> params;
    std::vector<BufferImpl*> buffers;
    std::vector<uint8_t> blob_data;  // the blobs' bytes (LaunchArgs' layout); params point into it
    std::vector<uint32_t> blob_offsets;
    std::vector<BufferImpl*> blob_buffers;
    unsigned shared = 0;
    Dim3 grid, tg;
    void set_buffer(size_t slot, BufferImpl* buf, uint64_t offset) override {
      ptrs[slot] = dev->own(*buf, "prepared launch").ptr + offset;
      buffers[slot] = buf;
    }
    void set_scalar(size_t slot, uint64_t bits) override { scalars[slot] = bits; }
    void set_blob(size_t slot, const uint8_t* bytes, size_t size, BufferImpl* buf) override {
      std::memcpy(blob_data.data() + blob_offsets[slot], bytes, size);
      blob_buffers[slot] = buf;
    }
    void launch(StreamImpl* stream) override {
      const CUstream s = cu_stream(stream);
      const CudaDriver& d = dev->drv();
      const bool assumed = dev->ctx_->likely_current();
      if (!assumed) dev->ctx_->make_current();
      CUresult r = d.cuLaunchKernel(kk->fn, grid.x, grid.y, grid.z, tg.x, tg.y, tg.z, shared, s, params.data(), nullptr);
      if (r != CUDA_SUCCESS && assumed) {
        dev->ctx_->make_current();
        r = d.cuLaunchKernel(kk->fn, grid.x, grid.y, grid.z, tg.x, tg.y, tg.z, shared, s, params.data(), nullptr);
      }
      if (r != CUDA_SUCCESS) d.check(r, "cuLaunchKernel(" + kk->entry + " grid " + dims(grid) + " threadgroup " + dims(tg) + ", prepared)");
      for (BufferImpl* b : buffers) b->last_stream = stream, b->last_ticket = 1;
      for (BufferImpl* b : blob_buffers)
        if (b) b->last_stream = stream, b->last_ticket = 1;
    }
  };

  // A sequence as a CUDA graph, launched with one cuGraphLaunch per replay on the caller's
  // stream. The graph is built node by node: one kernel node per step, each depending on the
  // one before (the steps run in order, as launches on one stream do), instantiated and uploaded
  // once. On sm_90 and later the edges are programmatic: a kernel may launch as soon as every
  // block of the one before has begun, and waits in its first instruction (griddepcontrol.wait,
  // codegen::cuda_waits_for_grid_dependency) until that kernel has completed and its writes are
  // visible, so the launch latency of each kernel hides behind the one before while the memory
  // order stays that of a stream. A rebound step is written into its node of the executable
  // graph in place (cuGraphExecKernelNodeSetParams): no new graph, no instantiation, and no wait
  // for a replay in flight, since an update applies to later launches only. Where the driver
  // lacks programmatic edges the edges are plain; where it lacks node-by-node graphs (before
  // CUDA 12.0) the steps are captured from a stream and a rebinding captures them again after
  // the last replay has finished; without graphs at all, a replay is launch by launch.
  // IRON_CUDA_GRAPH=nodes (plain edges) or capture picks a path, for comparison; read when a
  // sequence is recorded.
  struct CudaRecorded final : Recorded {
    CudaDevice* dev = nullptr;
    std::vector<CudaPrepared*> steps;
    CudaStream capture;  // private: capture, and the graph's upload
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    std::vector<CUgraphNode> nodes;  // the kernel node of each step (built graphs only)
    std::vector<BufferImpl*> touched;  // every buffer of every step, once
    StreamImpl* last = nullptr;  // the stream of the last replay
    bool replayed = false;
    uint64_t updates_in_place = 0, rebuilds = 0;
    ~CudaRecorded() override {
      const CudaDriver& d = dev->drv();
      if (!dev->ctx_->set_current_quietly()) return;
      if (replayed) d.cuStreamSynchronize(cu_stream(last));
      destroy();
      if (capture.s) d.cuStreamDestroy_v2(capture.s);
    }
    void destroy() {
      const CudaDriver& d = dev->drv();
      if (exec) d.cuGraphExecDestroy(exec);
      if (graph) d.cuGraphDestroy(graph);
      exec = nullptr;
      graph = nullptr;
      nodes.clear();
    }
    static bool have_graphs(const CudaDriver& d) {
      return d.cuStreamBeginCapture_v2 && d.cuStreamEndCapture && d.cuGraphInstantiateWithFlags && d.cuGraphLaunch &&
             d.cuGraphExecDestroy && d.cuGraphDestroy;
    }
    // IRON_CUDA_GRAPH: "" or "pdl" (the default: the best the driver and arch allow), "nodes",
    // "capture".
    std::string mode;
    bool programmatic = false;  // the graph's edges are programmatic
    static std::string graph_mode() {
      const char* v = std::getenv("IRON_CUDA_GRAPH");
      const std::string m = v ? v : "";
      if (m.empty() || m == "pdl" || m == "nodes" || m == "capture") return m.empty() ? "pdl" : m;
      throw Error("IRON_CUDA_GRAPH=" + m + ": expected pdl (the default), nodes or capture");
    }
    bool can_build(const CudaDriver& d) const {
      return mode != "capture" && d.cuGraphCreate && d.cuGraphAddKernelNode_v2 && d.cuGraphExecKernelNodeSetParams_v2;
    }
    bool can_link_programmatically(const CudaDriver& d) const {
      return mode == "pdl" && d.cuGraphAddDependencies_v2 && codegen::cuda_waits_for_grid_dependency(dev->info_.arch);
    }
    // The graph of kernel nodes, with programmatic edges or plain ones; false (nothing kept) when
    // the driver refuses programmatic edges.
    bool build_nodes(bool link_programmatically) {
      const CudaDriver& d = dev->drv();
      d.check(d.cuGraphCreate(&graph, 0), "cuGraphCreate");
      nodes.resize(steps.size());
      for (size_t i = 0; i < steps.size(); ++i) {
        const CudaKernelNodeParams np = node_params(*steps[i]);
        const bool chain = i > 0 && !link_programmatically;
        d.check(d.cuGraphAddKernelNode_v2(&nodes[i], graph, chain ? &nodes[i - 1] : nullptr, chain ? 1 : 0, &np),
                "cuGraphAddKernelNode(step " + std::to_string(i) + ", " + steps[i]->kk->entry + ")");
        if (i == 0 || !link_programmatically) continue;
        CUgraphEdgeData edge{};
        edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER;
        edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        if (d.cuGraphAddDependencies_v2(graph, &nodes[i - 1], &nodes[i], &edge, 1) != CUDA_SUCCESS) {
          destroy();
          return false;
        }
      }
      if (d.cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS && link_programmatically) {
        destroy();
        return false;
      }
      programmatic = link_programmatically;
      return true;
    }
    static CudaKernelNodeParams node_params(const CudaPrepared& p) {
      CudaKernelNodeParams np{};
      np.func = p.kk->fn;
      np.gridDimX = p.grid.x, np.gridDimY = p.grid.y, np.gridDimZ = p.grid.z;
      np.blockDimX = p.tg.x, np.blockDimY = p.tg.y, np.blockDimZ = p.tg.z;
      np.sharedMemBytes = p.shared;
      np.kernelParams = const_cast<void**>(p.params.data());
      return np;
    }
    void note_buffers() {
      touched.clear();
      for (CudaPrepared* p : steps)
        for (BufferImpl* b : p->buffers)
          if (std::find(touched.begin(), touched.end(), b) == touched.end()) touched.push_back(b);
    }
    // A new executable graph for the steps as they are bound now; the context is current.
    void build() {
      const CudaDriver& d = dev->drv();
      if (replayed) dev->wait_stream(last);  // nothing may still run the old graph
      destroy();
      ++rebuilds;
      note_buffers();
      if (!have_graphs(d)) return;
      if (!capture.s) d.check(d.cuStreamCreate(&capture.s, CU_STREAM_NON_BLOCKING), "cuStreamCreate(graph)");
      programmatic = false;
      if (can_build(d)) {
        if (!(can_link_programmatically(d) && build_nodes(true))) build_nodes(false);
      } else {
        d.check(d.cuStreamBeginCapture_v2(capture.s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
        CUresult failed = CUDA_SUCCESS;
        std::string what;
        for (CudaPrepared* p : steps) {
          failed = d.cuLaunchKernel(p->kk->fn, p->grid.x, p->grid.y, p->grid.z, p->tg.x, p->tg.y, p->tg.z, p->shared,
                                    capture.s, p->params.data(), nullptr);
          if (failed != CUDA_SUCCESS) {
            what = "cuLaunchKernel(" + p->kk->entry + ", captured)";
            break;
          }
        }
        CUresult ended = d.cuStreamEndCapture(capture.s, &graph);
        if (failed != CUDA_SUCCESS) d.check(failed, what);
        d.check(ended, "cuStreamEndCapture");
      }
      if (!exec)
        d.check(d.cuGraphInstantiateWithFlags(&exec, graph, 0),
                "cuGraphInstantiateWithFlags(" + std::to_string(steps.size()) + " kernels)");
      // The executable graph goes to the device now rather than at the first replay.
      // (Waited for here, off the replay path, so no replay on another stream can overtake it.)
      if (d.cuGraphUpload) {
        d.check(d.cuGraphUpload(exec, capture.s), "cuGraphUpload");
        d.check(d.cuStreamSynchronize(capture.s), "cuStreamSynchronize(graph upload)");
      }
    }
    void update(const std::vector<size_t>& changed) override {
      const CudaDriver& d = dev->drv();
      dev->ctx_->make_current();
      if (!exec || nodes.empty()) return build();
      for (size_t i : changed) {
        const CudaKernelNodeParams np = node_params(*steps[i]);
        if (d.cuGraphExecKernelNodeSetParams_v2(exec, nodes[i], &np) != CUDA_SUCCESS) return build();
      }
      updates_in_place += changed.size();
      note_buffers();
    }
    void replay(StreamImpl* stream) override {
      const CudaDriver& d = dev->drv();
      if (!exec) {
        for (CudaPrepared* p : steps) p->launch(stream);
        return;
      }
      if (!dev->ctx_->likely_current()) dev->ctx_->make_current();
      CUresult r = d.cuGraphLaunch(exec, cu_stream(stream));
      if (r != CUDA_SUCCESS) {
        dev->ctx_->make_current();
        r = d.cuGraphLaunch(exec, cu_stream(stream));
      }
      d.check(r, "cuGraphLaunch(" + std::to_string(steps.size()) + " kernels)");
      last = stream;
      replayed = true;
      for (BufferImpl* b : touched) b->last_stream = stream, b->last_ticket = 1;
    }
    std::string describe() const override {
      if (!exec) return "launch by launch (the CUDA driver has no graphs)";
      return std::string(nodes.empty() ? "a captured CUDA graph" : "a CUDA graph of kernel nodes") + " of " +
             std::to_string(steps.size()) + " steps; " + std::to_string(rebuilds) + " built, " +
             std::to_string(updates_in_place) + " steps updated in place; " +
             (programmatic ? "programmatic edges (each kernel launches early and waits for the one before)"
                           : "plain edges");
    }
  };

  std::unique_ptr<Recorded> record(const std::vector<Prepared*>& steps) override {
    auto r = std::make_unique<CudaRecorded>();
    r->dev = this;
    r->mode = CudaRecorded::graph_mode();
    for (Prepared* p : steps) r->steps.push_back(static_cast<CudaPrepared*>(p));  // prepare() made every one
    ctx_->make_current();
    r->build();
    return r;
  }

  std::unique_ptr<Prepared> prepare(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 tg) override {
    CudaKernel& kk = own_kernel(kernel, "prepared launch");
    check_shape(kk, tg);
    auto p = std::make_unique<CudaPrepared>();
    p->dev = this;
    p->kk = &kk;
    p->grid = grid;
    p->tg = tg;
    p->scalars = args.scalars;
    p->buffers = args.buffers;
    for (size_t i = 0; i < args.buffers.size(); ++i)
      p->ptrs.push_back(own(*args.buffers[i], "prepared launch").ptr + (i < args.offsets.size() ? args.offsets[i] : 0));
    p->blob_data = args.blob_data;
    p->blob_offsets = args.blob_offsets;
    p->blob_buffers = args.blob_buffers;
    size_t bi = 0, si = 0, li = 0;
    for (uint8_t is_buf : args.is_buffer)
      p->params.push_back(is_buf == kBlobParam ? static_cast<void*>(p->blob_data.data() + p->blob_offsets[li++])
                          : is_buf         ? static_cast<void*>(&p->ptrs[bi++])
                                           : &p->scalars[si++]);
    p->shared = kk.dynamic_shared ? unsigned(std::min<uint64_t>(args.threadgroup_bytes, UINT32_MAX)) : 0u;
    ctx_->make_current();
    // Opted in at any size, not only past 48 KiB: a kernel with cooperative tiles may also hold
    // the wmma strategy's 32 KiB of static shared memory, and static + dynamic must fit the limit
    // the attribute raises (codegen::cuda_dynamic_shared).
    if (p->shared > kk.opted_in_bytes) {
      constexpr int kMaxDynamicSharedSizeBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
      drv().check(drv().cuFuncSetAttribute(kk.fn, kMaxDynamicSharedSizeBytes, int(p->shared)),
                  "cuFuncSetAttribute(" + kk.entry + ", max dynamic shared memory)");
      kk.opted_in_bytes = p->shared;
    }
    return p;
  }

  // Each sample is bracketed by two events on the null stream: start, the kernel, stop. The
  // events take their timestamps on the GPU when the stream reaches them, so the interval holds
  // the kernel alone: the L2 flush is enqueued before `start` (the null stream runs it to
  // completion before `start` fires), the parameters are marshalled before `start` is recorded,
  // and the host waits on `stop` before the next sample, so samples never overlap. What remains
  // is cuLaunchKernel's own submission latency when the GPU idles at `start` (a few us; matters
  // only for the tiniest kernels).
  std::vector<double> time_launches(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 tg,
                                    const TimingOptions& opts) override {
    return time_sequence({TimedLaunch{&kernel, &args, grid, tg}}, opts);
  }

  // One sample = every launch of `seq` in order between two events on the null stream. A single
  // launch has its parameters marshalled once; a sequence marshals each launch as it is issued
  // (the host cost an engine without graphs also pays between kernels).
  std::vector<double> time_sequence(const std::vector<TimedLaunch>& seq, const TimingOptions& opts) override {
    if (seq.empty()) throw Error("CUDA timing of an empty launch sequence");
    std::vector<CudaKernel*> kks;
    for (const TimedLaunch& l : seq) {
      kks.push_back(&own_kernel(*l.kernel, "timing"));
      check_shape(*kks.back(), l.threadgroup);
    }
    const bool single = seq.size() == 1;
    if (single) marshal(*kks[0], *seq[0].args);  // every launch below passes the same values
    return time_between_events(
        [&] {
          for (size_t j = 0; j < seq.size(); ++j) {
            if (!single) marshal(*kks[j], *seq[j].args);
            enqueue(*kks[j], seq[j].grid, seq[j].threadgroup);
          }
        },
        opts, [&] { return "timing kernels (cuEventSynchronize; last launch: " + last_launch() + ")"; });
  }

  // Library work timed like time_sequence: one sample = issue(null stream) between two events.
  std::vector<double> time_native(const std::function<void(StreamImpl*)>& issue, const TimingOptions& opts) override {
    return time_between_events([&] { issue(nullptr); }, opts,
                               [] { return std::string("timing library work (cuEventSynchronize)"); });
  }

  // The timing loop of time_sequence and time_native: `warmup` untimed calls of `issue`, then per
  // sample (the context made current again, since library work may change it) the L2 flush
  // enqueued ahead of the start event, issue() between two events on the null stream, and the
  // host waiting on the stop event; a fault there is reported with `doing()`.
  std::vector<double> time_between_events(const std::function<void()>& issue, const TimingOptions& opts,
                                          const std::function<std::string()>& doing) {
    const CudaDriver& d = drv();
    // _v2 where the driver has it (CUDA 12.8+; what cuda.h maps cuEventElapsedTime to).
    auto* elapsed_time = d.cuEventElapsedTime_v2 ? d.cuEventElapsedTime_v2 : d.cuEventElapsedTime;
    const char* elapsed_name = d.cuEventElapsedTime_v2 ? "cuEventElapsedTime_v2" : "cuEventElapsedTime";
    if (!elapsed_time)
      throw Error("CUDA timing needs cuEventElapsedTime_v2 or cuEventElapsedTime, and " + d.path + " has neither");
    ctx_->make_current();
    const CudaBuffer* flush = opts.flush_l2 && !opts.flush_l2_read ? &flush_buffer() : nullptr;
    const bool flush_read = opts.flush_l2 && opts.flush_l2_read;
    if (flush_read) flush_reader();  // compiled and its buffer allocated before the first sample

    // Created once per call, destroyed on every path out (errors at teardown are ignored).
    struct Events {
      const CudaDriver& d;
      CUevent start = nullptr, stop = nullptr;
      ~Events() {
        if (start) d.cuEventDestroy_v2(start);
        if (stop) d.cuEventDestroy_v2(stop);
      }
    } ev{d};
    d.check(d.cuEventCreate(&ev.start, CU_EVENT_DEFAULT), "cuEventCreate");
    d.check(d.cuEventCreate(&ev.stop, CU_EVENT_DEFAULT), "cuEventCreate");
    for (int i = 0; i < opts.warmup; ++i) issue();

    std::vector<double> us;
    us.reserve(size_t(opts.samples));
    for (int i = 0; i < opts.samples; ++i) {
      ctx_->make_current();
      if (flush)  // untimed: enqueued ahead of `start`; a different value each time, so every line is rewritten
        d.check(d.cuMemsetD32Async(flush->ptr, unsigned(i), flush->bytes / 4, nullptr),
                "cuMemsetD32Async(L2 flush, " + std::to_string(flush->bytes) + " bytes)");
      if (flush_read) read_flush();  // untimed likewise: a read of 4x the L2, which leaves it clean
      d.check(d.cuEventRecord(ev.start, nullptr), "cuEventRecord(start)");
      issue();
      d.check(d.cuEventRecord(ev.stop, nullptr), "cuEventRecord(stop)");
      // A kernel fault surfaces here; report it like synchronize() does.
      if (CUresult r = d.cuEventSynchronize(ev.stop); r != CUDA_SUCCESS) {
        std::string msg = "CUDA error while " + doing() + ": " + d.describe(r);
        if (is_sticky(r)) msg += " (this error is sticky: the CUDA context cannot be used again in this process)";
        throw Error(msg);
      }
      float ms = 0.0f;
      d.check(elapsed_time(&ms, ev.start, ev.stop), elapsed_name);
      us.push_back(double(ms) * 1000.0);
    }
    return us;
  }

  // The ptxas -v part of the NVRTC log: "ptxas info : Used N registers, ... smem ..." lines plus
  // the "N bytes stack frame, N bytes spill stores, N bytes spill loads" line, which ptxas prints
  // without the "ptxas info" prefix. Trimmed, one per line; the "Compile time = ..." line is left
  // out so reports of the same kernel compare equal.
  std::string compile_report(const CompiledKernel& kernel) const override {
    const auto* kk = dynamic_cast<const CudaKernel*>(&kernel);
    if (!kk) return {};
    std::string out;
    const std::string& log = kk->ptxas_log;
    for (size_t start = 0; start < log.size();) {
      size_t end = log.find('\n', start);
      if (end == std::string::npos) end = log.size();
      std::string line = log.substr(start, end - start);
      start = end + 1;
      if (line.find("ptxas info") == std::string::npos && line.find("bytes spill stores") == std::string::npos)
        continue;
      if (line.find("Compile time") != std::string::npos) continue;  // varies run to run; not a resource
      const size_t first = line.find_first_not_of(" \t\r");
      const size_t last = line.find_last_not_of(" \t\r");
      if (first == std::string::npos) continue;
      if (!out.empty()) out += '\n';
      out.append(line, first, last - first + 1);
    }
    // NVRTC does not always print the ptxas report (seen on the H200: a program compiled before
    // on that machine came back with a log lacking it). The loaded function's attributes are the
    // authoritative figures for registers and static shared memory; spills are then unknown.
    if (out.find(" registers") == std::string::npos && kk->fn) {
      constexpr int kSharedSizeBytes = 1, kLocalSizeBytes = 3, kNumRegs = 4;  // CUfunction_attribute
      int regs = -1, smem = -1, lmem = -1;
      ctx_->make_current();
      if (drv().cuFuncGetAttribute(&regs, kNumRegs, kk->fn) == CUDA_SUCCESS &&
          drv().cuFuncGetAttribute(&smem, kSharedSizeBytes, kk->fn) == CUDA_SUCCESS &&
          drv().cuFuncGetAttribute(&lmem, kLocalSizeBytes, kk->fn) == CUDA_SUCCESS) {
        if (!out.empty()) out += '\n';
        out += "function attributes: Used " + std::to_string(regs) + " registers, " + std::to_string(smem) +
               " bytes smem, " + std::to_string(lmem) + " bytes lmem (no ptxas report in the NVRTC log)";
      }
    }
    return out;
  }

  void synchronize() override {
    ctx_->make_current();
    if (CUresult r = drv().cuCtxSynchronize(); r != CUDA_SUCCESS) fault(r, "cuCtxSynchronize");
  }

  // A wait that failed: a kernel fault, reported with the last launch.
  [[noreturn]] void fault(CUresult r, const char* call) const {
    std::string msg = std::string("CUDA error while running kernels (") + call;
    if (!last_entry_.empty()) msg += "; last launch: " + last_launch();
    msg += "): " + drv().describe(r);
    if (is_sticky(r)) msg += " (this error is sticky: the CUDA context cannot be used again in this process)";
    throw Error(msg);
  }
  // Waits for one stream (null: the legacy null stream); the context is current.
  void wait_stream(StreamImpl* stream) {
    if (CUresult r = drv().cuStreamSynchronize(cu_stream(stream)); r != CUDA_SUCCESS)
      fault(r, stream ? "cuStreamSynchronize" : "cuStreamSynchronize(null stream)");
  }

 private:
  const CudaDriver& drv() const { return *ctx_->drv; }

  // Only this device's alloc() sets owner to our context (which every CudaBuffer of ours keeps
  // alive), so the tag identifies our buffers without a dynamic_cast.
  CudaBuffer& own(BufferImpl& buf, const char* what) const {
    if (buf.owner != ctx_.get()) throw Error(std::string("CUDA ") + what + " of a buffer from another device");
    return static_cast<CudaBuffer&>(buf);
  }

  // Kernels reach launch() only from the Context that owns this device and its pipeline cache,
  // which holds nothing but what compile()/load() returned; the context check stays as a guard.
  CudaKernel& own_kernel(CompiledKernel& kernel, const char* what) const {
    auto& kk = static_cast<CudaKernel&>(kernel);
    if (kk.ctx != ctx_) throw Error(std::string("CUDA ") + what + " of a kernel compiled by another device");
    return kk;
  }

  void load_module(CudaKernel& out, const void* cubin) {
    ctx_->make_current();
    drv().check(drv().cuModuleLoadData(&out.module, cubin), "cuModuleLoadData(" + out.entry + ", " + info_.arch + ")");
    drv().check(drv().cuModuleGetFunction(&out.fn, out.module, out.entry.c_str()),
                "cuModuleGetFunction(" + out.entry + ")");
  }

  // Fills scratch_params_ for `args`. kernelParams holds one pointer per kernel parameter, in
  // declaration order, to the parameter's value: the CUdeviceptr of a buffer (in scratch_ptrs_),
  // the 4 bytes of a scalar (in args). The driver copies the values during cuLaunchKernel, so
  // they need to live only until the last enqueue() that uses them.
  void marshal(const CudaKernel& kk, const LaunchArgs& args) {
    const size_t n = args.is_buffer.size();
    std::vector<CUdeviceptr>& ptrs = scratch_ptrs_;  // reused: no allocation per launch
    std::vector<void*>& params = scratch_params_;
    ptrs.assign(args.buffers.size(), 0);
    params.assign(n, nullptr);
    size_t bi = 0, si = 0, li = 0;
    for (size_t i = 0; i < n; ++i) {
      if (args.is_buffer[i] == kBlobParam) {
        // A by-value structure: the driver copies its bytes from here during cuLaunchKernel.
        if (li >= args.blob_offsets.size()) throw Error("CUDA launch of " + kk.entry + ": too few blobs");
        params[i] = const_cast<uint8_t*>(args.blob_data.data() + args.blob_offsets[li++]);
      } else if (args.is_buffer[i]) {
        if (bi >= args.buffers.size()) throw Error("CUDA launch of " + kk.entry + ": too few buffers");
        ptrs[bi] = own(*args.buffers[bi], "launch").ptr;  // a pointer compare, no dynamic_cast
        if (bi < args.offsets.size()) ptrs[bi] += args.offsets[bi];
        params[i] = &ptrs[bi];
        ++bi;
      } else {
        if (si >= args.scalars.size()) throw Error("CUDA launch of " + kk.entry + ": too few scalars");
        params[i] = const_cast<uint64_t*>(&args.scalars[si]);  // a 4-byte parameter reads the low half
        ++si;
      }
    }
    if (bi != args.buffers.size() || si != args.scalars.size())
      throw Error("CUDA launch of " + kk.entry + ": " + std::to_string(args.buffers.size()) + " buffers and " +
                  std::to_string(args.scalars.size()) + " scalars for " + std::to_string(n) + " parameters");
    scratch_shared_ = kk.dynamic_shared ? unsigned(std::min<uint64_t>(args.threadgroup_bytes, UINT32_MAX)) : 0u;
  }

  // Launches with the parameters of the last marshal(); the context must be current.
  CUresult issue(const CudaKernel& kk, Dim3 grid, Dim3 tg, CUstream stream = nullptr) {
    // Dynamic shared memory: the bytes marshal() took from the dispatch (0 for a kernel with
    // static __shared__ arrays only), opted in to (Context checked the device's opt-in limit).
    // Stream 0 is the legacy null stream, which orders launches and copies without explicit
    // events.
    if (scratch_shared_ > kk.opted_in_bytes) {  // at any size: see prepare()
      constexpr int kMaxDynamicSharedSizeBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
      if (CUresult r = drv().cuFuncSetAttribute(kk.fn, kMaxDynamicSharedSizeBytes, int(scratch_shared_));
          r != CUDA_SUCCESS)
        return r;
      kk.opted_in_bytes = scratch_shared_;
    }
    CUresult r = drv().cuLaunchKernel(kk.fn, grid.x, grid.y, grid.z, tg.x, tg.y, tg.z, scratch_shared_, stream,
                                      scratch_params_.data(), nullptr);
    // For synchronize()'s message, formatted only on error. The entry name is copied only when
    // the kernel changes, not per launch.
    if (last_kernel_ != &kk) {
      last_kernel_ = &kk;
      last_entry_ = kk.entry;
    }
    last_grid_ = grid;
    last_tg_ = tg;
    return r;
  }
  void enqueue(const CudaKernel& kk, Dim3 grid, Dim3 tg) {
    if (CUresult r = issue(kk, grid, tg); r != CUDA_SUCCESS) drv().check(r, "cuLaunchKernel(" + last_launch() + ")");
  }

  // The L2 flush target of timed launches, allocated on first use and kept for the device's
  // life: twice the L2 (H200: 50 MiB -> 100 MiB), at least 64 MiB, rounded up to 64 MiB, so
  // writing it all evicts every line a previous sample left in the cache.
  const CudaBuffer& flush_buffer() {
    if (!flush_) {
      const int l2 = attribute(drv(), ctx_->device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                               "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE");
      constexpr size_t kChunk = size_t(64) << 20;
      size_t bytes = std::max(kChunk, 2 * size_t(l2 > 0 ? l2 : 0));
      bytes = (bytes + kChunk - 1) / kChunk * kChunk;
      flush_ = alloc(bytes);
    }
    return static_cast<const CudaBuffer&>(*flush_);
  }

  // The read L2 flush (TimingOptions::flush_l2_read): a kernel that reads a buffer of 4x the L2,
  // at least 256 MiB, in 16-byte loads. Each line it brings in is clean, and the lines it evicts
  // (the previous sample's output, any dirty line) are written back during the flush, not during
  // the timed work. The buffer is zeroed once; the kernel stores only if the XOR of everything it
  // read has one particular value, which zeros never give, so the loads cannot be dropped and
  // nothing is written. Built from this fixed source by NVRTC on first use.
  struct FlushReader {
    CudaKernel kernel;
    std::unique_ptr<BufferImpl> buffer;
    unsigned long long vectors = 0;  // 16-byte elements of the buffer
    unsigned blocks = 0;
  };
  FlushReader& flush_reader() {
    if (flush_reader_) return *flush_reader_;
    static const char* kSource =
        "extern \"C\" __global__ void __launch_bounds__(256) iron_l2_flush_read(const uint4* p, unsigned long long n,\n"
        "                                                                        unsigned* sink) {\n"
        "  unsigned acc = 0;\n"
        "  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n"
        "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {\n"
        "    const uint4 v = p[i];\n"
        "    acc ^= v.x ^ v.y ^ v.z ^ v.w;\n"
        "  }\n"
        "  if (acc == 0x2545f491u) sink[0] = acc;\n"
        "}\n";
    NvrtcResult built = nvrtc_compile(kSource, "iron_l2_flush_read", info_.arch);
    if (!built.ok) throw Error("CUDA read L2 flush: NVRTC could not build its kernel: " + built.log);
    auto r = std::make_unique<FlushReader>();
    r->kernel.ctx = ctx_;
    r->kernel.entry = "iron_l2_flush_read";
    load_module(r->kernel, built.cubin.data());
    const int l2 = attribute(drv(), ctx_->device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE");
    const size_t bytes = std::max(size_t(256) << 20, 4 * size_t(l2 > 0 ? l2 : 0));
    r->buffer = alloc(bytes);
    const auto& buf = static_cast<const CudaBuffer&>(*r->buffer);
    drv().check(drv().cuMemsetD32Async(buf.ptr, 0u, bytes / 4, nullptr), "cuMemsetD32Async(read L2 flush buffer)");
    r->vectors = bytes / 16;
    const int sms = attribute(drv(), ctx_->device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                              "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT");
    r->blocks = unsigned(std::max(1, sms) * 8);
    flush_reader_ = std::move(r);
    return *flush_reader_;
  }
  void read_flush() {
    FlushReader& r = flush_reader();
    CUdeviceptr ptr = static_cast<const CudaBuffer&>(*r.buffer).ptr;
    unsigned long long n = r.vectors;
    void* params[] = {&ptr, &n, &ptr};
    drv().check(drv().cuLaunchKernel(r.kernel.fn, r.blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
                "cuLaunchKernel(iron_l2_flush_read, the read L2 flush)");
  }

  std::string last_launch() const {
    return last_entry_ + " grid " + dims(last_grid_) + " threadgroup " + dims(last_tg_);
  }

  std::shared_ptr<CudaContext> ctx_;
  DeviceInfo info_;
  const CudaKernel* last_kernel_ = nullptr;  // identifies last_entry_; compared, never dereferenced
  std::string last_entry_;
  Dim3 last_grid_, last_tg_;
  std::vector<CUdeviceptr> scratch_ptrs_;
  std::vector<void*> scratch_params_;
  unsigned scratch_shared_ = 0;  // dynamic shared memory bytes of the marshalled launch
  std::unique_ptr<BufferImpl> flush_;  // see flush_buffer(); frees itself (CudaBuffer holds the context)
  std::unique_ptr<FlushReader> flush_reader_;  // see flush_reader()
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int index) { return std::make_unique<CudaDevice>(index); }

std::vector<DeviceInfo> list_cuda_devices(std::string* why) {
  std::vector<DeviceInfo> out;
  try {
    auto drv = cuda_driver();
    int count = 0;
    drv->check(drv->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) {
      if (why) *why = "no CUDA device: the CUDA driver reports 0 devices";
      return out;
    }
    for (int i = 0; i < count; ++i) {
      CUdevice dev = 0;
      drv->check(drv->cuDeviceGet(&dev, i), "cuDeviceGet(" + std::to_string(i) + ")");
      out.push_back(query_info(*drv, dev));
    }
  } catch (const Error& e) {
    if (why) *why = e.what();
    return {};
  }
  if (why) why->clear();
  return out;
}

size_t compile_threads() {
  if (const char* v = std::getenv("IRON_COMPILE_THREADS"); v && *v) {
    const long n = std::strtol(v, nullptr, 10);
    if (n >= 1 && n <= 1024) return size_t(n);
  }
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

std::string combine_cuda_sources(const std::vector<std::string>& sources) {
  std::string includes, body;
  std::vector<std::string> seen;
  for (size_t i = 0; i < sources.size(); ++i) {
    body += "namespace iron_batch_" + std::to_string(i) + " {\n";
    const std::string& src = sources[i];
    for (size_t pos = 0; pos < src.size();) {
      size_t end = src.find('\n', pos);
      if (end == std::string::npos) end = src.size();
      std::string line = src.substr(pos, end - pos);
      pos = end + 1;
      if (line.rfind("#include", 0) == 0) {
        if (std::find(seen.begin(), seen.end(), line) == seen.end()) {
          seen.push_back(line);
          includes += line + "\n";
        }
        continue;
      }
      body += line + "\n";
    }
    body += "}  // namespace iron_batch_" + std::to_string(i) + "\n";
  }
  return includes + body;
}

NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch) {
  const Nvrtc& nv = nvrtc();
  NvrtcResult res;
  // A CUBIN needs a real architecture; compute_XX would only give PTX.
  if (arch.rfind("sm_", 0) != 0) {
    res.log = "nvrtc_compile: arch '" + arch + "' is not a real GPU architecture (expected sm_XX, e.g. sm_90a)";
    return res;
  }
  const std::string file = name.size() > 3 && name.compare(name.size() - 3, 3, ".cu") == 0 ? name : name + ".cu";
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r = nv.nvrtcCreateProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    res.log = std::string("nvrtcCreateProgram failed: ") + nv.nvrtcGetErrorString(r);
    return res;
  }
  struct Guard {
    const Nvrtc& nv;
    nvrtcProgram& p;
    ~Guard() { nv.nvrtcDestroyProgram(&p); }
  } guard{nv, prog};

  const std::vector<std::string> opts = nvrtc_options(nv, arch);
  std::vector<const char*> copts;
  for (const std::string& o : opts) copts.push_back(o.c_str());

  nvrtcResult r = nv.nvrtcCompileProgram(prog, int(copts.size()), copts.data());
  size_t log_size = 0;
  if (nv.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    res.log.resize(log_size);
    nv.nvrtcGetProgramLog(prog, res.log.data());
    res.log.resize(std::strlen(res.log.c_str()));  // drop the terminating NUL
  }
  if (r != NVRTC_SUCCESS) {
    if (!res.log.empty() && res.log.back() != '\n') res.log += '\n';
    res.log += std::string("nvrtcCompileProgram: ") + nv.nvrtcGetErrorString(r);
    if (nv.include_dir.empty())
      res.log += "\nnote: no CUDA include directory with cuda_fp16.h was found (set CUDA_HOME)";
    return res;
  }
  size_t cubin_size = 0;
  if (nvrtcResult c = nv.nvrtcGetCUBINSize(prog, &cubin_size); c != NVRTC_SUCCESS || cubin_size == 0) {
    res.log += std::string("nvrtcGetCUBINSize: ") + nv.nvrtcGetErrorString(c) + " (no CUBIN for " + arch + ")";
    return res;
  }
  res.cubin.resize(cubin_size);
  if (nvrtcResult c = nv.nvrtcGetCUBIN(prog, res.cubin.data()); c != NVRTC_SUCCESS) {
    res.cubin.clear();
    res.log += std::string("nvrtcGetCUBIN: ") + nv.nvrtcGetErrorString(c);
    return res;
  }
  res.ok = true;
  return res;
}

}  // namespace iron::rt
