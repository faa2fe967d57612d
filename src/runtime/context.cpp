// Context: device buffers, the pipeline caches (memory, then disk) and validated dispatch. Every rule in
// validate_dispatch runs before a launch; a rejected dispatch launches nothing (seeds §8: a
// wrong geometry must be an error, never a hung or corrupted GPU).
#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "core/ir.hpp"
#include "core/modes.hpp"
#include "core/numeric.hpp"
#include "iron/dlpack.hpp"
#include "iron/registry.hpp"
#include "iron/runtime.hpp"
#include "passes/pass.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/disk_cache.hpp"

namespace iron {

bool dtype_supported(const DeviceInfo& dev, DType d, std::string& why) {
  switch (d) {
    case DType::F16: why = "no f16 storage"; return dev.f16;
    case DType::BF16: why = "no bf16 storage"; return dev.bf16;
    case DType::I8: case DType::U8: case DType::F8E4M3: case DType::F8E5M2:
      why = "no 8-bit integers or 8-bit storage";
      return dev.int8;
    case DType::I16: case DType::U16: why = "no 16-bit integers or 16-bit storage"; return dev.int16;
    case DType::I64: case DType::U64: why = "no 64-bit integers"; return dev.int64;
    default: return true;
  }
}

// Converts a scalar value for a parameter into its launch bits (LaunchArgs::scalars: f32 and
// 32-bit integers in the low 4 bytes, zero above; 64-bit integers whole), rejecting a value the
// parameter cannot hold exactly. `why` is a static reason, set only on failure.
bool scalar_bits(DType t, const ScalarValue& v, uint64_t& bits, std::string& why) {
  if (v.kind() == ScalarValue::Kind::Blob || v.kind() == ScalarValue::Kind::TensorMap) {
    why = "is a by-value structure, not a number";
    return false;
  }
  const bool is_f = v.kind() == ScalarValue::Kind::Float;
  if (is_f && !std::isfinite(v.f())) {
    why = "is not finite";
    return false;
  }
  if (t == DType::F32) {
    const double d = v.as_double();
    if (std::fabs(d) > 3.4028234663852886e38) {
      why = "is out of f32 range";
      return false;
    }
    float f = float(d);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    bits = b;
    return true;
  }
  const char* range = nullptr;
  int64_t lo = 0;
  uint64_t hi = 0;
  switch (t) {
    case DType::U32: range = "is not a u32 (a whole number in [0, 2^32-1])"; hi = UINT32_MAX; break;
    case DType::I32: range = "is not an i32 (a whole number in [-2^31, 2^31-1])"; lo = INT32_MIN; hi = INT32_MAX; break;
    case DType::U64: range = "is not a u64 (a whole number in [0, 2^64-1])"; hi = UINT64_MAX; break;
    case DType::I64: range = "is not an i64 (a whole number in [-2^63, 2^63-1])"; lo = INT64_MIN; hi = INT64_MAX; break;
    default: why = "has an unsupported scalar dtype"; return false;
  }
  why = range;
  // The value as a sign and a magnitude: a float must be whole, and within 2^64 to convert.
  bool negative = false;
  uint64_t mag = 0;
  switch (v.kind()) {
    case ScalarValue::Kind::Float: {
      const double d = v.f();
      if (d != std::floor(d) || std::fabs(d) >= 18446744073709551616.0) return false;
      negative = d < 0;
      mag = uint64_t(std::fabs(d));
      break;
    }
    case ScalarValue::Kind::Int:
      negative = v.i() < 0;
      mag = negative ? 0 - uint64_t(v.i()) : uint64_t(v.i());
      break;
    case ScalarValue::Kind::UInt: mag = v.u(); break;
    case ScalarValue::Kind::Blob: case ScalarValue::Kind::TensorMap: return false;
  }
  if (negative ? mag > 0 - uint64_t(lo) : mag > hi) return false;
  const uint64_t pattern = negative ? 0 - mag : mag;
  bits = int_bits(t) == 32 ? uint64_t(uint32_t(pattern)) : pattern;
  why.clear();
  return true;
}

ScalarValue ScalarValue::blob(const void* data, size_t bytes, uint32_t align) {
  if (!data && bytes) throw Error("ScalarValue::blob of a null pointer");
  ScalarValue v;
  v.kind_ = Kind::Blob;
  auto b = std::make_shared<std::vector<uint8_t>>(bytes);
  if (bytes) std::memcpy(b->data(), data, bytes);
  v.blob_ = std::move(b);
  v.align_ = align;
  return v;
}

ScalarValue::ScalarValue(TensorMap map) : kind_(Kind::TensorMap), map_(std::make_shared<const TensorMap>(std::move(map))) {}

const std::vector<uint8_t>& ScalarValue::blob_bytes() const {
  static const std::vector<uint8_t> none;
  return blob_ ? *blob_ : none;
}

const char* swizzle_name(TensorMap::Swizzle s) {
  switch (s) {
    case TensorMap::Swizzle::None: return "none";
    case TensorMap::Swizzle::B32: return "32B";
    case TensorMap::Swizzle::B64: return "64B";
    case TensorMap::Swizzle::B128: return "128B";
  }
  return "?";
}

std::string ScalarValue::text() const {
  if (kind_ == Kind::Int) return std::to_string(i_);
  if (kind_ == Kind::UInt) return std::to_string(u_);
  if (kind_ == Kind::Blob)
    return "a " + std::to_string(blob_bytes().size()) + "-byte blob (aligned to " + std::to_string(align_) + ")";
  if (kind_ == Kind::TensorMap)
    return "a tensor map over " + std::to_string(map_->buffer.count()) + " " + dtype_name(map_->buffer.dtype()) + " elements";
  std::ostringstream o;
  o << f_;
  return o.str();
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Cuda: return "cuda";
    case Backend::Vulkan: return "vulkan";
    case Backend::Interp: return "interp";
    case Backend::Hip: return "hip";
  }
  return "?";
}

bool parse_backend(std::string_view s, Backend& out) {
  if (s == "cuda") out = Backend::Cuda;
  else if (s == "vulkan") out = Backend::Vulkan;
  else if (s == "interp") out = Backend::Interp;
  else if (s == "hip") out = Backend::Hip;
  else return false;
  return true;
}

std::vector<DeviceInfo> list_devices(Backend backend, std::string* why) {
  switch (backend) {
    case Backend::Cuda: return rt::list_cuda_devices(why);
    case Backend::Vulkan: return rt::list_vulkan_devices(why);
    case Backend::Interp: return rt::list_interp_devices(why);
    case Backend::Hip: return rt::list_hip_devices(why);
  }
  return {};
}

namespace {



// Whether the kernel uses lane operations (lane built-ins, lane reductions: every op with the L
// trait but barrier), which need whole lane groups. A barrier alone does not: it waits for the
// threadgroup, whatever its shape, so a Tile2D kernel's 16 x 16 threadgroup is valid anywhere.
bool uses_lane_groups(const ir::Kernel& k) {
  bool found = false;
  ir::walk(k, [&](ir::Id id) {
    ir::Op op = k.insts[id].op;
    found = found || (ir::has_trait(op, ir::trait::L) && op != ir::Op::Barrier);
  });
  return found;
}

// The thread indices a kernel reads: bit 0 the 32-bit thread_id, bit 1 thread_id64. A dispatch
// of more than 2^32 - 1 threads is valid only for a kernel that reads thread_id64 and never
// thread_id (docs/dsl.md, "64-bit indexing").
uint8_t thread_index_widths(const ir::Kernel& k) {
  uint8_t w = 0;
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if (in.op == ir::Op::ThreadId) w |= in.type.elem() == DType::U64 ? 2 : 1;
  });
  return w;
}

// What validation needs from the IR besides its params: both are whole-IR walks, so they are
// computed once per kernel (per dtype for the threadgroup bytes) and kept next to its pipelines.
struct KernelFacts {
  uint64_t hash = 0;  // ir::content_hash
  bool lane_ops = false;
  uint32_t dtypes_used = 0;  // ir::dtypes_used
  bool dynamic_tg = false;  // has threadgroup arrays sized at dispatch
  uint8_t index_widths = 0;  // thread_index_widths
  std::vector<uint32_t> spec_params;  // the scalar parameters declared specialize(), in order
  std::array<uint64_t, kNumDTypes> tg_bytes{};
  std::array<bool, kNumDTypes> tg_known{};

  static KernelFacts of(const ir::Kernel& k, uint64_t hash) {
    KernelFacts f;
    f.hash = hash;
    f.lane_ops = uses_lane_groups(k);
    f.dynamic_tg = ir::has_dynamic_threadgroup(k);
    f.dtypes_used = ir::dtypes_used(k);
    f.index_widths = thread_index_widths(k);
    for (uint32_t i = 0; i < k.params.size(); ++i)
      if (k.params[i].kind == ir::ParamKind::Scalar && k.params[i].specialize) f.spec_params.push_back(i);
    return f;
  }
  uint64_t threadgroup_bytes(const ir::Kernel& k, Instantiation d) {
    const size_t i = size_t(d.t);
    if (i >= kNumDTypes || d.has_w()) return ir::threadgroup_bytes(k, d);
    if (!tg_known[i]) {
      tg_bytes[i] = ir::threadgroup_bytes(k, d);
      tg_known[i] = true;
    }
    return tg_bytes[i];
  }
};

// The Iron build: what a cached binary may only be reused by. IRON_BUILD_ID is the project
// version (keep it in step with CMakeLists.txt) and when this file was compiled. On its own that
// would NOT be enough: editing the emitter or a pass rebuilds the runtime library without
// recompiling this file. So the linker's GNU build-id of the binary that holds this code is
// appended: ld computes it over the whole linked output (Debian's gcc always passes
// --build-id), so any change to any code in the binary — codegen, passes, a statically linked
// glslang — gives a new id, and entries of other builds are simply never looked up. Where the
// note is missing, the binary's path, size and modification time stand in for it. Each binary
// (iron-runner, the unit tests, the host bench) therefore has its own entries; that costs one
// compile per binary, never a stale kernel.
#define IRON_BUILD_ID "0.1.0-" __DATE__ " " __TIME__

struct FindSelf {
  uintptr_t addr;
  std::string id;
};

int find_build_id(dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<FindSelf*>(data);
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    mine = ph.p_type == PT_LOAD && f->addr >= lo && f->addr < lo + ph.p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((nh->n_namesz + 3) & ~3u);
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          desc + nh->n_descsz <= end) {
        static const char hex[] = "0123456789abcdef";
        f->id = "gnu-build-id:";
        for (uint32_t b = 0; b < nh->n_descsz; ++b) {
          f->id += hex[uint8_t(desc[b]) >> 4];
          f->id += hex[uint8_t(desc[b]) & 15];
        }
        return 1;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  // No build-id note: identify the file instead.
  std::string path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0)
    f->id = "file:" + path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
            std::to_string(st.st_mtim.tv_nsec);
  return 1;
}

const std::string& iron_build_id() {
  static const std::string id = [] {
    FindSelf f{reinterpret_cast<uintptr_t>(&find_build_id), {}};
    dl_iterate_phdr(&find_build_id, &f);
    // Neither a note nor a file: no way to tell builds apart, so no entry is ever shared.
    if (f.id.empty()) f.id = "unknown-binary:pid" + std::to_string(::getpid());
    return std::string(IRON_BUILD_ID) + "|" + f.id;
  }();
  return id;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

bool env_disables_disk_cache() {
  const char* off = std::getenv("IRON_NO_DISK_CACHE");
  return off && *off && std::string_view(off) != "0";
}

// The optimizer's debugging switches (docs/passes.md) change what passes::optimize produces for
// the same IR, and are read by run_pipeline on every run. While one is set the disk cache is
// bypassed both ways: a bisection or a mutation test must compile what it asks for, and its
// deliberately broken binaries must never be served to a normal run.
bool optimizer_switches_set() {
  for (const char* name : {"IRON_PASS_MUTATION", "IRON_OPT_BISECT"})
    if (const char* v = std::getenv(name); v && *v) return true;
  return false;
}

// Mutation testing of the validator: IRON_PASS_MUTATION=dispatch.skip_facts drops the checks of
// declared facts (multiple_of, aligned), so a test can show what the check prevents (a
// specialized or vectorized kernel run with a value its code was not built for). Read when a
// Context is created.
bool skip_facts_mutation() {
  const char* v = std::getenv("IRON_PASS_MUTATION");
  return v && std::string_view(v) == "dispatch.skip_facts";
}

// IRON_SPECIALIZE_LIMIT: how many specialized values a Context keeps compiled per kernel (an
// LRU; default 16). Anything but a count from 1 to 65536 is an error naming the variable.
size_t specialize_limit() {
  const char* v = std::getenv("IRON_SPECIALIZE_LIMIT");
  if (!v || !*v) return 16;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end || errno || n < 1 || n > 65536 || v[0] == '-' || v[0] == '+' || v[0] == ' ')
    throw Error(std::string("IRON_SPECIALIZE_LIMIT='") + v +
                "' is not a count from 1 to 65536 (the specialized pipelines kept per kernel; default 16)");
  return size_t(n);
}

}  // namespace

struct Context::Cache {
  // Content hash, name, dtype, (where the device bakes it in) shape, and the launch bits of the
  // specialized scalars in parameter order (empty for a kernel without any).
  using Key = std::tuple<uint64_t, std::string, Instantiation, uint32_t, uint32_t, uint32_t, std::vector<uint64_t>>;
  // Guards everything below. Dispatches of one Context may come from several threads.
  mutable std::mutex mu;
  // Owns every pipeline, by Key. Shared so that a dispatch holds the pipeline it launches even
  // if another thread evicts its specialized value meanwhile.
  std::map<Key, std::shared_ptr<rt::CompiledKernel>> pipelines;
  // Specialized values per kernel (content hash, name), most recently used first; at most
  // spec_limit each: the least recently used value's pipelines (every dtype and shape) go.
  std::map<std::pair<uint64_t, std::string>, std::list<std::vector<uint64_t>>> spec_lru;
  size_t spec_limit = specialize_limit();
  bool skip_facts = skip_facts_mutation();

  // Registry kernels by object: they never change or move for the life of the process, so the
  // object's address stands for its content. A dispatch of one finds its facts and pipeline
  // with one pointer hash and a scan of a few (dtype, shape) entries: no IR print, no string
  // compare. Any other kernel (a test's mutant, a freshly traced body) is hashed every time —
  // an address says nothing about content — and finds its facts by that hash.
  struct Fast {
    Instantiation dtype;
    Dim3 shape;
    rt::CompiledKernel* compiled;
  };
  struct Registered {
    KernelFacts facts;
    std::vector<Fast> pipelines;
  };
  std::unordered_map<const ir::Kernel*, Registered> registered;
  std::unordered_map<uint64_t, KernelFacts> by_hash;

  // Disk cache: the process-wide one unless set_disk_cache_dir gave a private one.
  bool disk_off_by_env = env_disables_disk_cache();
  bool private_disk = false;
  std::unique_ptr<rt::DiskCache> own_disk;
  std::optional<std::string> fingerprint;  // the device's, asked once; "" = no disk cache
  CacheStats stats;
};

// What a dispatch learns from the cache before validation: the facts check() needs and, when
// the pipeline was built before, the pipeline itself.
struct Context::Prepared {
  uint64_t hash = 0;
  bool lane_ops = false;
  uint32_t dtypes_used = 0;
  bool dynamic_tg = false;
  uint8_t index_widths = 0;
  uint64_t shared_bytes = 0;
  bool registered = false;
  bool specialized = false;  // the kernel declares specialize() scalars: its pipeline depends on values
  bool skip_facts = false;   // the dispatch.skip_facts mutation
  rt::CompiledKernel* compiled = nullptr;
};

// The caching pool (Context::alloc_pooled). Free buffers by size class, each with the stream
// that last used it and an event done when its work is; handed out again only when that event
// is done or on that stream. Buffers of a pool that is gone (its Context destroyed) free directly.
struct Context::Pool {
  struct Entry {
    std::unique_ptr<rt::BufferImpl> buf;
    rt::StreamImpl* stream = nullptr;
    std::shared_ptr<rt::EventImpl> done;
  };
  rt::Device* device = nullptr;
  mutable std::mutex mu;
  std::map<uint64_t, std::vector<Entry>> free;  // by size class, in the order they were freed
  PoolStats stats;

  void give_back(rt::BufferImpl* raw) {
    std::unique_ptr<rt::BufferImpl> buf(raw);
    Entry e;
    e.stream = buf->last_stream;
    try {
      e.done = device->buffer_event(*buf);
    } catch (const std::exception&) {
      return;  // the device cannot say when its work is done (a faulted context): free it
    }
    const uint64_t bytes = buf->bytes;
    e.buf = std::move(buf);
    std::lock_guard lock(mu);
    stats.cached_bytes += bytes;
    free[bytes].push_back(std::move(e));
  }
};

Context::Context(std::unique_ptr<rt::Device> device)
    : device_(std::move(device)), cache_(std::make_unique<Cache>()), pool_(std::make_shared<Pool>()) {
  pool_->device = device_.get();
}

namespace {
uint64_t size_class(uint64_t bytes) {
  uint64_t c = 256;
  while (c < bytes && c < (uint64_t(1) << 62)) c <<= 1;
  return c < bytes ? bytes : c;
}
}  // namespace

DeviceBuffer Context::alloc_pooled(DType dtype, size_t count, const Stream& stream) {
  rt::StreamImpl* s = own(stream, "alloc_pooled");
  if (is_type_param(dtype) || dtype == DType::Void) throw Error(std::string("cannot allocate a buffer of dtype ") + dtype_name(dtype));
  uint64_t bytes = 0;
  if (!num::checked_mul(uint64_t(count), uint64_t(dtype_size(dtype)), bytes))
    throw Error("cannot allocate " + std::to_string(count) + " elements of " + dtype_name(dtype) + ": " +
                std::to_string(count) + " x " + std::to_string(dtype_size(dtype)) + " bytes overflows 64 bits");
  const uint64_t cls = size_class(bytes);
  std::unique_ptr<rt::BufferImpl> impl;
  {
    std::lock_guard lock(pool_->mu);
    auto it = pool_->free.find(cls);
    if (it != pool_->free.end()) {
      std::vector<Pool::Entry>& list = it->second;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i].stream != s && !device_->event_done(*list[i].done)) {
          ++pool_->stats.skipped_in_flight;
          continue;
        }
        impl = std::move(list[i].buf);
        list.erase(list.begin() + long(i));
        pool_->stats.cached_bytes -= cls;
        ++pool_->stats.reused;
        break;
      }
    }
    if (!impl) ++pool_->stats.allocated;
  }
  if (!impl) impl = device_->alloc(cls);
  DeviceBuffer b;
  b.dtype_ = dtype;
  b.count_ = count;
  std::weak_ptr<Pool> pool = pool_;
  b.impl_ = std::shared_ptr<rt::BufferImpl>(impl.release(), [pool](rt::BufferImpl* raw) {
    if (std::shared_ptr<Pool> p = pool.lock()) p->give_back(raw);
    else delete raw;
  });
  return b;
}

Context::PoolStats Context::pool_stats() const {
  std::lock_guard lock(pool_->mu);
  return pool_->stats;
}

void Context::trim_pool() {
  std::vector<std::unique_ptr<rt::BufferImpl>> gone;  // freed outside the lock
  std::lock_guard lock(pool_->mu);
  for (auto& [cls, list] : pool_->free)
    for (size_t i = 0; i < list.size();) {
      if (device_->event_done(*list[i].done)) {
        pool_->stats.cached_bytes -= cls;
        gone.push_back(std::move(list[i].buf));
        list.erase(list.begin() + long(i));
      } else {
        ++i;
      }
    }
}

Context::~Context() {
  // Nothing in flight may still use a pipeline; pipelines go before the device that created them.
  try {
    device_->synchronize();
  } catch (const std::exception&) {
    // a fault nobody waited for: dropped with the Context
  }
  pool_.reset();  // its free buffers go now; pooled buffers still held free themselves later
  cache_.reset();
  device_.reset();
}

std::unique_ptr<Context> Context::create(Backend backend) {
  int index = 0;
  if (const char* env = std::getenv("IRON_CUDA_DEVICE"); backend == Backend::Cuda && env && *env) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(env, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > 1023)
      throw Error("IRON_CUDA_DEVICE='" + std::string(env) + "' is not a CUDA device index (0, 1, ...)");
    index = int(v);
  }
  return create(backend, index);
}

std::unique_ptr<Context> Context::create(Backend backend, int index) {
  std::unique_ptr<rt::Device> dev;
  switch (backend) {
    case Backend::Cuda: dev = rt::make_cuda_device(index); break;
    case Backend::Vulkan: dev = rt::make_vulkan_device(index); break;
    case Backend::Interp: dev = rt::make_interp_device(index); break;
    case Backend::Hip: dev = rt::make_hip_device(index); break;
  }
  std::unique_ptr<Context> ctx(new Context(std::move(dev)));
  ctx->device_index_ = index;
  return ctx;
}

const DeviceInfo& Context::info() const { return device_->info(); }

DeviceBuffer Context::alloc(DType dtype, size_t count) {
  if (is_type_param(dtype) || dtype == DType::Void) throw Error(std::string("cannot allocate a buffer of dtype ") + dtype_name(dtype));
  DeviceBuffer b;
  b.dtype_ = dtype;
  uint64_t bytes = 0;
  if (!num::checked_mul(uint64_t(count), uint64_t(dtype_size(dtype)), bytes))
    throw Error("cannot allocate " + std::to_string(count) + " elements of " + dtype_name(dtype) + ": " +
                std::to_string(count) + " x " + std::to_string(dtype_size(dtype)) + " bytes overflows 64 bits");
  b.count_ = count;
  b.impl_ = device_->alloc(bytes);
  return b;
}

void Context::upload(const DeviceBuffer& buf, const void* data, size_t bytes, const Stream& stream) {
  rt::StreamImpl* s = own(stream, "upload");
  if (!buf) throw Error("upload to an empty DeviceBuffer");
  if (bytes > buf.bytes())
    throw Error("upload of " + std::to_string(bytes) + " bytes into a buffer of " + std::to_string(buf.bytes()) + " bytes");
  if (buf.stride() != 1)
    throw Error("upload into a strided view (stride " + std::to_string(buf.stride()) +
                "): upload the buffer it views, or a contiguous view");
  device_->upload(*buf.impl(), buf.offset_bytes(), data, bytes, s);
}

namespace {
// The alignment of a buffer as bound: its allocation's, or where a view starts, that of the
// view's first byte.
uint64_t bound_align(const DeviceBuffer& b) {
  const uint64_t off = b.offset_bytes();
  const uint64_t a = b.impl()->align;
  return off == 0 ? a : std::min(a, off & (~off + 1));
}
// Whether two buffers bound at once share bytes (the same allocation, overlapping ranges).
// Strided views count by their span, except two views of one stride whose elements interleave
// (the real and imaginary columns of a complex array): they share no element.
bool overlaps(const DeviceBuffer& a, const DeviceBuffer& b) {
  if (a.impl() != b.impl()) return false;
  const uint64_t a0 = a.offset_bytes(), b0 = b.offset_bytes();
  const uint64_t a1 = a0 + std::max<uint64_t>(a.span_bytes(), 1), b1 = b0 + std::max<uint64_t>(b.span_bytes(), 1);
  if (!(a0 < b1 && b0 < a1)) return false;
  const uint64_t es = dtype_size(a.dtype());
  if (a.stride() > 1 && a.stride() == b.stride() && a.dtype() == b.dtype()) {
    const uint64_t d = a0 > b0 ? a0 - b0 : b0 - a0;
    if (d % es == 0 && (d / es) % a.stride() != 0) return false;  // element-aligned, never on the same slot
  }
  return true;
}
}  // namespace

DeviceBuffer Context::view(const DeviceBuffer& buf, size_t first, size_t count) const { return view(buf, first, count, 1); }

DeviceBuffer Context::view(const DeviceBuffer& buf, size_t first, size_t count, size_t stride) const {
  if (!buf) throw Error("view of an empty DeviceBuffer");
  if (stride == 0) throw Error("view with stride 0 (a view's stride is at least 1 element)");
  // The last element the view reaches: first + (count - 1) * stride, inside the buffer.
  uint64_t last = 0;
  const bool over = count > 0 && (!num::checked_mul(uint64_t(count - 1), uint64_t(stride), last) ||
                                  !num::checked_add(last, uint64_t(first), last));
  if (stride == 1 && (first > buf.count() || count > buf.count() - first))
    throw Error("view of elements [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                std::to_string(count) + ") of a buffer of " + std::to_string(buf.count()) + " " + dtype_name(buf.dtype()) +
                " elements: the range is outside the buffer");
  if (stride != 1 && (first > buf.count() || over || (count > 0 && last >= buf.count())))
    throw Error("strided view of " + std::to_string(count) + " elements from element " + std::to_string(first) +
                " with stride " + std::to_string(stride) + " of a buffer of " + std::to_string(buf.count()) + " " +
                dtype_name(buf.dtype()) + " elements: its last element, " + std::to_string(first) + " + (" +
                std::to_string(count) + " - 1) x " + std::to_string(stride) + " = " +
                (over ? std::string("more than 2^64") : std::to_string(last)) + ", is outside the buffer");
  const uint64_t offset = buf.offset_bytes() + uint64_t(first) * buf.stride() * dtype_size(buf.dtype());
  const uint64_t need = info().min_view_offset_align;
  if (need > 1 && offset % need != 0)
    throw Error("view at byte offset " + std::to_string(offset) + " (element " + std::to_string(first) + " of " +
                dtype_name(buf.dtype()) + "): " + info().name + " binds buffers only at offsets that are multiples of " +
                std::to_string(need) + " bytes (minStorageBufferOffsetAlignment)");
  DeviceBuffer v = buf;
  v.offset_ = offset;
  v.count_ = count;
  v.stride_ = buf.stride() * stride;
  return v;
}

DeviceBuffer Context::wrap_external(void* ptr, DType dtype, size_t count, std::function<void()> release) {
  if (is_type_param(dtype) || dtype == DType::Void) throw Error(std::string("cannot wrap a buffer of dtype ") + dtype_name(dtype));
  if (!ptr && count) throw Error("wrap_external of a null pointer");
  uint64_t bytes = 0;
  if (!num::checked_mul(uint64_t(count), uint64_t(dtype_size(dtype)), bytes))
    throw Error("wrap_external: " + std::to_string(count) + " elements of " + dtype_name(dtype) + " overflow 64 bits");
  std::unique_ptr<rt::BufferImpl> impl = device_->wrap(ptr, bytes);
  DeviceBuffer b;
  b.dtype_ = dtype;
  b.count_ = count;
  b.impl_ = std::shared_ptr<rt::BufferImpl>(impl.release(), [release = std::move(release)](rt::BufferImpl* raw) {
    delete raw;  // waits for the buffer's work in flight first
    if (release) release();
  });
  return b;
}

namespace {

bool dtype_from_dlpack(const DLDataType& t, DType& out) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) out = DType::F32;
      else if (t.bits == 16) out = DType::F16;
      else return false;
      return true;
    case kDLBfloat:
      if (t.bits != 16) return false;
      out = DType::BF16;
      return true;
    case kDLInt:
      if (t.bits == 8) out = DType::I8;
      else if (t.bits == 16) out = DType::I16;
      else if (t.bits == 32) out = DType::I32;
      else if (t.bits == 64) out = DType::I64;
      else return false;
      return true;
    case kDLUInt:
      if (t.bits == 8) out = DType::U8;
      else if (t.bits == 16) out = DType::U16;
      else if (t.bits == 32) out = DType::U32;
      else if (t.bits == 64) out = DType::U64;
      else return false;
      return true;
    default: return false;
  }
}

DLDataType dtype_to_dlpack(DType d) {
  switch (d) {
    case DType::F32: return {kDLFloat, 32, 1};
    case DType::F16: return {kDLFloat, 16, 1};
    case DType::BF16: return {kDLBfloat, 16, 1};
    case DType::I8: return {kDLInt, 8, 1};
    case DType::I16: return {kDLInt, 16, 1};
    case DType::I32: return {kDLInt, 32, 1};
    case DType::I64: return {kDLInt, 64, 1};
    case DType::U8: return {kDLUInt, 8, 1};
    case DType::U16: return {kDLUInt, 16, 1};
    case DType::U32: return {kDLUInt, 32, 1};
    case DType::U64: return {kDLUInt, 64, 1};
    default: throw Error(std::string("DLPack has no type for ") + dtype_name(d));
  }
}

// What to_dlpack hands out: the tensor, its shape, and the buffer it keeps alive.
struct Exported {
  DLManagedTensor tensor{};
  int64_t shape[1] = {0};
  DeviceBuffer buffer;
};

}  // namespace

DeviceBuffer Context::from_dlpack(DLManagedTensor* managed) {
  if (!managed) throw Error("from_dlpack: a null DLManagedTensor");
  const DLTensor& t = managed->dl_tensor;
  const Backend backend = info().backend;
  auto reject = [&](const std::string& why) -> DeviceBuffer { throw Error("from_dlpack: " + why); };
  if (backend == Backend::Vulkan)
    return reject("a Vulkan Context cannot address another library's memory (import into a CUDA Context, or an "
                  "interpreter Context for host memory)");
  const DLDeviceType want = backend == Backend::Cuda ? kDLCUDA : kDLCPU;
  if (t.device.device_type != want || (backend == Backend::Cuda && t.device.device_id != device_index_))
    return reject("the tensor is on DLPack device " + std::to_string(int(t.device.device_type)) + ":" +
                  std::to_string(t.device.device_id) + ", this Context is " + backend_name(backend) + " device " +
                  std::to_string(device_index_) + " (DLPack " + std::to_string(int(want)) + ":" +
                  std::to_string(device_index_) + ")");
  DType dtype;
  if (!dtype_from_dlpack(t.dtype, dtype))
    return reject("DLPack dtype (code " + std::to_string(t.dtype.code) + ", " + std::to_string(t.dtype.bits) + " bits, " +
                  std::to_string(t.dtype.lanes) + " lanes) has no Iron dtype");
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) return reject("the tensor has no shape");
  uint64_t count = 1;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0) return reject("dimension " + std::to_string(d) + " has a negative size");
    if (!num::checked_mul(count, uint64_t(t.shape[d]), count)) return reject("the element count overflows 64 bits");
  }
  if (t.strides) {  // compact row-major only (a dimension of size 1 may have any stride)
    int64_t expect = 1;
    for (int32_t d = t.ndim - 1; d >= 0; --d) {
      if (t.shape[d] != 1 && t.strides[d] != expect)
        return reject("the tensor is not compact row-major (dimension " + std::to_string(d) + " has stride " +
                      std::to_string(t.strides[d]) + ", expected " + std::to_string(expect) +
                      "): make it contiguous first");
      expect *= t.shape[d];
    }
  }
  char* data = static_cast<char*>(t.data) + t.byte_offset;
  DeviceBuffer b = wrap_external(data, dtype, size_t(count), [managed] {
    if (managed->deleter) managed->deleter(managed);
  });
  return b;
}

DLManagedTensor* Context::to_dlpack(const DeviceBuffer& buf) {
  if (!buf) throw Error("to_dlpack of an empty DeviceBuffer");
  if (buf.stride() != 1)
    throw Error("to_dlpack of a strided view (stride " + std::to_string(buf.stride()) + "): export a contiguous buffer");
  const Backend backend = info().backend;
  if (backend == Backend::Vulkan)
    throw Error("to_dlpack: Vulkan buffers have no address another library could use (export from a CUDA or "
                "interpreter Context)");
  auto* e = new Exported;
  e->buffer = buf;
  e->shape[0] = int64_t(buf.count());
  DLTensor& t = e->tensor.dl_tensor;
  try {
    t.data = static_cast<char*>(device_->address(*buf.impl())) + buf.offset_bytes();
    t.dtype = dtype_to_dlpack(buf.dtype());
  } catch (...) {
    delete e;
    throw;
  }
  t.device = {backend == Backend::Cuda ? kDLCUDA : kDLCPU, backend == Backend::Cuda ? device_index_ : 0};
  t.ndim = 1;
  t.shape = e->shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  e->tensor.manager_ctx = e;
  e->tensor.deleter = [](DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); };
  return &e->tensor;
}

void rt::Device::encode_tensor_map(const TensorMap&, const std::vector<uint64_t>&, uint8_t*) const {
  throw Error(info().name + " (" + backend_name(info().backend) + ") cannot encode a TMA tensor map: only CUDA has them");
}

std::unique_ptr<rt::BufferImpl> rt::Device::wrap(void*, size_t) {
  throw Error("device '" + info().name + "' cannot wrap memory it did not allocate");
}
void* rt::Device::address(BufferImpl&) {
  throw Error("device '" + info().name + "' has no address for its buffers");
}
void* rt::Device::native_stream(StreamImpl*) {
  throw Error("device '" + info().name + "' (" + backend_name(info().backend) + ") has no native handles for a vendor library");
}
std::vector<double> rt::Device::time_native(const std::function<void(StreamImpl*)>&, const TimingOptions&) {
  throw Error("device '" + info().name + "' (" + backend_name(info().backend) + ") runs no vendor library work to time");
}

rt::StreamImpl* Context::own(const Stream& s, const char* what) const {
  if (s.owner_ && s.owner_ != this) throw Error(std::string(what) + ": the stream belongs to another Context");
  return s.impl_;
}

rt::EventImpl& Context::own(const Event& e, const char* what) const {
  if (!e.impl_) throw Error(std::string(what) + ": an empty Event (make one with record_event)");
  if (e.owner_ != this) throw Error(std::string(what) + ": the event belongs to another Context");
  return *e.impl_;
}

Stream Context::create_stream() {
  Stream s;
  s.impl_ = device_->create_stream();
  s.owner_ = this;
  return s;
}

Stream Context::wrap_stream(void* native) {
  Stream s;
  s.impl_ = device_->wrap_stream(native);
  s.owner_ = s.impl_ ? this : nullptr;
  return s;
}

rt::StreamImpl* rt::Device::wrap_stream(void* native) {
  if (native) throw Error("device '" + info().name + "' (" + backend_name(info().backend) +
                          ") has no streams of other libraries to wrap: only a CUDA Context takes a CUstream");
  return nullptr;
}

Event Context::record_event(const Stream& stream) {
  Event e;
  e.impl_ = device_->record_event(own(stream, "record_event"));
  e.owner_ = this;
  return e;
}

void Context::wait_event(const Stream& waiter, const Event& event) {
  rt::StreamImpl* s = own(waiter, "wait_event");
  device_->wait_event(s, own(event, "wait_event"));
}

bool Context::event_done(const Event& event) { return device_->event_done(own(event, "event_done")); }
void Context::synchronize(const Event& event) { device_->synchronize_event(own(event, "synchronize")); }
void Context::synchronize(const Stream& stream) { device_->synchronize_stream(own(stream, "synchronize")); }

void Context::download(const DeviceBuffer& buf, void* data, size_t bytes) {
  if (!buf) throw Error("download from an empty DeviceBuffer");
  if (bytes > buf.bytes())
    throw Error("download of " + std::to_string(bytes) + " bytes from a buffer of " + std::to_string(buf.bytes()) + " bytes");
  if (buf.stride() != 1) {
    // A strided view: its span, then its elements gathered.
    const size_t es = dtype_size(buf.dtype()), n = bytes / es;
    if (bytes % es != 0)
      throw Error("download of " + std::to_string(bytes) + " bytes from a strided view of " + dtype_name(buf.dtype()) +
                  ": a strided view is downloaded in whole elements");
    if (n == 0) return;
    std::vector<uint8_t> span(((n - 1) * buf.stride() + 1) * es);
    device_->download(*buf.impl(), buf.offset_bytes(), span.data(), span.size());
    for (size_t j = 0; j < n; ++j) std::memcpy(static_cast<uint8_t*>(data) + j * es, span.data() + j * buf.stride() * es, es);
    return;
  }
  device_->download(*buf.impl(), buf.offset_bytes(), data, bytes);
}

void Context::synchronize() { device_->synchronize(); }

size_t Context::pipeline_cache_size() const {
  std::lock_guard lock(cache_->mu);
  return cache_->pipelines.size();
}

void Context::clear_pipeline_cache() {
  device_->synchronize();  // nothing in flight may still use a pipeline
  std::lock_guard lock(cache_->mu);
  for (auto& [kernel, r] : cache_->registered) r.pipelines.clear();  // they point into `pipelines`
  cache_->pipelines.clear();
  cache_->spec_lru.clear();
}

namespace {

std::string dim_text(Dim3 d) {
  std::string s = "{";  // appended, not "{" + ...: GCC 12 -O3 reports a false -Wrestrict on the latter
  s += std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + "}";
  return s;
}

// Whether the scalar of parameter dtype `t` with launch bits `bits` is negative.
bool scalar_negative(DType t, uint64_t bits) {
  return (t == DType::I32 && int32_t(uint32_t(bits)) < 0) || (t == DType::I64 && int64_t(bits) < 0);
}

// Per-parameter working storage of check(): on the stack for kernels of up to 16 parameters
// (every kernel in the corpus), on the heap beyond.
template <class T, size_t N = 16>
class ParamArray {
 public:
  explicit ParamArray(size_t n) {
    if (n > N) heap_ = std::make_unique<T[]>(n);  // value-initialized
    else std::fill_n(inline_, n, T{});
    p_ = n > N ? heap_.get() : inline_;
  }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  T inline_[N];
  std::unique_ptr<T[]> heap_;
  T* p_ = nullptr;
};

// Facts about the kernel check() would otherwise walk the IR for (see KernelFacts).
struct CheckFacts {
  bool lane_ops = false;
  uint32_t dtypes_used = 0;    // bit d: dtype d appears (bit Generic: T does)
  uint64_t shared_bytes = 0;  // of the arrays of a fixed size
  bool dynamic_tg = false;    // arrays sized at dispatch add to it (computed from the scalars)
  uint8_t index_widths = 0;   // thread_index_widths
  bool skip_facts = false;    // the dispatch.skip_facts mutation: declared facts go unchecked
};

// The rules of a tensor map (include/iron/runtime.hpp, TensorMap), each broken one passed to
// `fail` after `what` (the parameter and its declaration); `strides` gets the byte strides of
// dimensions 1.. (packed where the map gives none). True when every rule holds.
template <class Fail>
bool tensor_map_rules(const TensorMap& m, const std::string& what, std::vector<uint64_t>& strides, Fail&& fail) {
  bool ok = true;
  auto bad = [&](const std::string& why) {
    fail(what + ": " + why);
    ok = false;
  };
  const size_t r = m.dims.size();
  if (!m.buffer) {
    bad("the map's buffer is empty");
    return false;
  }
  if (r < 1 || r > 5) {
    bad("has " + std::to_string(r) + " dimensions; a TMA tensor map has 1 to 5");
    return false;
  }
  if (m.box.size() != r) {
    bad("has " + std::to_string(r) + " dimensions but a box of " + std::to_string(m.box.size()));
    return false;
  }
  if (!m.strides.empty() && m.strides.size() != r - 1) {
    bad("has " + std::to_string(r) + " dimensions, so " + std::to_string(r - 1) + " strides (or none: packed), not " +
        std::to_string(m.strides.size()));
    return false;
  }
  const uint64_t es = dtype_size(m.buffer.dtype());
  for (size_t d = 0; d < r; ++d)
    if (m.dims[d] == 0 || m.dims[d] > (uint64_t(1) << 32))
      bad("dimension " + std::to_string(d) + " has " + std::to_string(m.dims[d]) + " elements (1 to 2^32)");
  if (!ok) return false;
  strides.assign(r - 1, 0);
  for (size_t d = 1; d < r; ++d) {
    uint64_t packed = 0;
    const bool over = d == 1 ? !num::checked_mul(m.dims[0], es, packed) : !num::checked_mul(strides[d - 2], m.dims[d - 1], packed);
    strides[d - 1] = m.strides.empty() ? (over ? UINT64_MAX : packed) : m.strides[d - 1];
    const uint64_t st = strides[d - 1];
    if (st % 16 != 0 || st >= (uint64_t(1) << 40))
      bad("the stride of dimension " + std::to_string(d) + " is " + (st == UINT64_MAX ? std::string("over 2^64") : std::to_string(st)) +
          " bytes; TMA takes multiples of 16 below 2^40");
  }
  for (size_t d = 0; d < r; ++d)
    if (m.box[d] == 0 || m.box[d] > 256)
      bad("box dimension " + std::to_string(d) + " is " + std::to_string(m.box[d]) + " elements (1 to 256)");
  const uint64_t row = uint64_t(m.box[0]) * es;
  if (row % 16 != 0)
    bad("the box row is " + std::to_string(m.box[0]) + " x " + std::to_string(es) + "-byte " + dtype_name(m.buffer.dtype()) +
        " = " + std::to_string(row) + " bytes; TMA copies rows of a multiple of 16 bytes");
  if (m.swizzle != TensorMap::Swizzle::None) {
    const uint64_t span = m.swizzle == TensorMap::Swizzle::B32 ? 32 : m.swizzle == TensorMap::Swizzle::B64 ? 64 : 128;
    if (row != span)
      bad(std::string("swizzle ") + swizzle_name(m.swizzle) + " does not match the box row of " + std::to_string(row) +
          " bytes (box[0] = " + std::to_string(m.box[0]) + " x " + std::to_string(es) + "-byte " + dtype_name(m.buffer.dtype()) +
          "): a swizzled box's row must be the swizzle span" +
          (row == 32 || row == 64 || row == 128 ? " (use " + std::to_string(row) + "B)" : std::string(" (use none, or a box row of 32, 64 or 128 bytes)")) +
          ", or the copy faults only when it completes");
  }
  if (bound_align(m.buffer) % 16 != 0)
    bad("the map's buffer starts at an address aligned to " + std::to_string(bound_align(m.buffer)) +
        " bytes; TMA needs 16");
  if (!ok) return false;
  // The last byte addressed: the far corner of the tensor.
  uint64_t last = (m.dims[0] - 1) * es + es;
  bool over = false;
  for (size_t d = 1; d < r; ++d) {
    uint64_t t = 0;
    over = over || !num::checked_mul(m.dims[d] - 1, strides[d - 1], t) || !num::checked_add(last, t, last);
  }
  if (over || last > m.buffer.bytes())
    bad("addresses " + (over ? std::string("more than 2^64") : std::to_string(last)) + " bytes but its buffer has " +
        std::to_string(m.buffer.bytes()));
  return ok;
}

// The swizzle's span in bytes (0: none) and the alignment a box it writes needs in threadgroup
// memory: the pattern repeats every 8 rows of the span (256, 512, 1024 bytes); an unswizzled box
// needs 128 (docs/semantics.md "Tensor-map copies").
uint32_t swizzle_span(TensorMap::Swizzle s) {
  return s == TensorMap::Swizzle::B32 ? 32 : s == TensorMap::Swizzle::B64 ? 64 : s == TensorMap::Swizzle::B128 ? 128 : 0;
}
uint32_t swizzle_alignment(TensorMap::Swizzle s) { return s == TensorMap::Swizzle::None ? 128 : 8 * swizzle_span(s); }

// The rules between map `m` (its own rules hold) and each tensor-map copy of kernel `k` that
// names parameter `i`: a 2-dimensional map, the threadgroup array of the map's element type (when
// the array's type is known without the instantiation), at least as large as the box, and
// declared aligned as the swizzle's pattern needs. Each broken one goes to `fail`, naming the copy.
template <class Fail>
void tensor_copy_rules(const ir::Kernel& k, uint32_t i, const TensorMap& m, const std::string& what, Fail&& fail) {
  uint64_t box_elems = 1;
  for (uint32_t b : m.box) box_elems *= b;
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if ((in.op != ir::Op::TmaLoad2D && in.op != ir::Op::TmaStore2D) || in.param() != i) return;
    const ir::Inst& a = k.insts[in.operands[0]];
    const std::string op = std::string(ir::mnemonic(in.op)) + " at " + k.where(in.loc);
    const std::string array = "threadgroup array '" + k.strings[size_t(a.attr(ir::Attr::Name))] + "'";
    if (m.dims.size() != 2) {
      fail(what + " has " + std::to_string(m.dims.size()) + " dimensions, but " + op + " copies a 2-dimensional box");
      return;
    }
    const DType at = a.type.elem();
    if (!is_type_param(at) && at != m.buffer.dtype())
      fail(what + " is a map over " + dtype_name(m.buffer.dtype()) + " elements, but " + op + " copies through " + array +
           " of " + dtype_name(at) + " (one element type on both sides)");
    else if (!is_type_param(at) && !a.has(ir::Attr::CountParam) && uint64_t(a.attr(ir::Attr::Count)) < box_elems)
      fail(what + " has a box of " + std::to_string(m.box[0]) + " x " + std::to_string(m.box[1]) + " = " +
           std::to_string(box_elems) + " elements, but " + op + " copies through " + array + " of " +
           std::to_string(a.attr(ir::Attr::Count)) + " (the box overruns it)");
    const uint32_t need = swizzle_alignment(m.swizzle);
    if (uint64_t(std::max<int64_t>(a.attr(ir::Attr::Align), 0)) < need)
      fail(what + " has swizzle " + swizzle_name(m.swizzle) + ", whose box lands at multiples of " + std::to_string(need) +
           " bytes of threadgroup memory, but " + op + " copies through " + array + ", declared " +
           std::to_string(std::max<int64_t>(a.attr(ir::Attr::Align), 0)) + "-byte aligned (threadgroup_alloc(..., " +
           std::to_string(need) + "))");
  });
}

// Whether buffer `b` may be bound to buffer parameter `i` for its stride: a strided view only
// where the parameter declares its stride scalar (strided=s), and then s (its launch bits
// `stride_bits`, null when not known) must be the view's stride. "" when it may.
std::string stride_problem(const ir::Kernel& k, uint32_t i, const DeviceBuffer& b, const uint64_t* stride_bits) {
  const ir::Param& p = k.params[i];
  if (p.stride_param == ir::kNoStride) {
    if (b.stride() == 1) return {};
    return "buffer '" + p.name + "' is bound to a strided view (stride " + std::to_string(b.stride()) + ") but kernel " +
           k.name + " needs it contiguous: the parameter (declared at " + k.where(p.loc) +
           ") declares no stride (strided=<scalar> accepts strided views)";
  }
  if (!stride_bits || *stride_bits == b.stride()) return {};
  const ir::Param& s = k.params[p.stride_param];
  const bool negative = (s.dtype == DType::I32 && int32_t(uint32_t(*stride_bits)) < 0) || (s.dtype == DType::I64 && int64_t(*stride_bits) < 0);
  return "constexpr '" + s.name + "' = " +
         (negative ? std::to_string(s.dtype == DType::I32 ? int64_t(int32_t(uint32_t(*stride_bits))) : int64_t(*stride_bits))
                   : std::to_string(*stride_bits)) +
         " but buffer '" + p.name + "' is bound with stride " + std::to_string(b.stride()) + " (strided=" + s.name +
         " declares '" + s.name + "' its element stride, at " + k.where(p.loc) + ")";
}

// The problems of `v` as the value of blob parameter `i` ("" when it fits), for a device `dev`;
// `strides` as tensor_map_rules. Every message names the parameter, the kernel and the
// parameter's declaration.
std::string blob_problem(const DeviceInfo& dev, const ir::Kernel& k, uint32_t i, const ScalarValue* v,
                         std::vector<uint64_t>& strides) {
  const ir::Param& p = k.params[i];
  const std::string what = std::string(p.tensor_map ? "tensor map" : "blob") + " parameter '" + p.name + "' of " + k.name +
                           " (declared at " + k.where(p.loc) + ")";
  const std::string shape = p.tensor_map ? std::string("tensormap")
                                         : "blob<" + std::to_string(p.blob_bytes) + "," + std::to_string(p.align) + ">";
  if (!v) return what + " is not set (pass " + (p.tensor_map ? "a TensorMap" : "ScalarValue::blob(data, bytes, align)") + ")";
  std::string out;
  auto fail = [&](const std::string& m) { out += (out.empty() ? "" : "\n  - ") + m; };
  if (p.tensor_map) {
    if (v->kind() != ScalarValue::Kind::TensorMap) return what + " takes a TensorMap, not " + v->text();
    if (tensor_map_rules(*v->tensor_map(), what, strides, fail)) tensor_copy_rules(k, i, *v->tensor_map(), what, fail);
    if (dev.backend != Backend::Cuda && dev.backend != Backend::Interp)
      fail(what + " needs CUDA or the interpreter: a TMA tensor map is encoded by the CUDA driver (the interpreter "
           "copies through its description), and " + dev.name + " (" + backend_name(dev.backend) + ") has neither");
    return out;
  }
  if (v->kind() != ScalarValue::Kind::Blob) return what + " takes ScalarValue::blob(data, bytes, align), not " + v->text();
  if (v->blob_bytes().size() != p.blob_bytes || v->blob_align() != p.align)
    fail(what + " is " + shape + " but the value is " + v->text());
  if (dev.backend != Backend::Cuda && dev.backend != Backend::Interp && dev.backend != Backend::Vulkan)
    fail(what + ": by-value structures are passed on CUDA, Vulkan and the interpreter; " + dev.name + " (" +
         backend_name(dev.backend) + ") cannot pass one");
  return out;
}

// blob_problem with the value looked up by name.
std::string blob_value_problem(const DeviceInfo& dev, const ir::Kernel& k, uint32_t i, const Constexprs& constexprs) {
  auto it = constexprs.find(k.params[i].name);
  std::vector<uint64_t> strides;
  return blob_problem(dev, k, i, it == constexprs.end() ? nullptr : &it->second, strides);
}

// Appends blob `v` (already checked) to `out`'s blob arrays; a tensor map is encoded by `device`.
void append_blob(const rt::Device* device, const ScalarValue& v, rt::LaunchArgs& out) {
  const size_t at = (out.blob_data.size() + 15) & ~size_t(15);
  if (const TensorMap* m = v.tensor_map()) {
    if (!device) throw Error("internal: a tensor map to encode without a device");
    std::vector<uint64_t> strides;
    tensor_map_rules(*m, "tensor map", strides, [](const std::string& why) { throw Error(why); });
    out.blob_data.resize(at + ir::kTensorMapBytes);
    device->encode_tensor_map(*m, strides, out.blob_data.data() + at);
    out.blob_sizes.push_back(ir::kTensorMapBytes);
    out.blob_buffers.push_back(m->buffer.impl());
    out.blob_maps.push_back({*m, strides});
  } else {
    const std::vector<uint8_t>& b = v.blob_bytes();
    out.blob_data.resize(at + b.size());
    if (!b.empty()) std::memcpy(out.blob_data.data() + at, b.data(), b.size());
    out.blob_sizes.push_back(uint32_t(b.size()));
    out.blob_buffers.push_back(nullptr);
    out.blob_maps.emplace_back();
  }
  out.blob_offsets.push_back(uint32_t(at));
}

void fill_blobs(const rt::Device* device, const ir::Kernel& k, const Constexprs& constexprs, rt::LaunchArgs& out) {
  for (const ir::Param& p : k.params)
    if (p.kind == ir::ParamKind::Blob) append_blob(device, constexprs.find(p.name)->second, out);
}

// Every dispatch rule. On success fills `out` (when given) with the launch arguments; a valid
// dispatch allocates nothing here: messages are only built for a rejected one, working storage
// is on the stack and `out` is reused (its vectors keep their capacity).
// A tensor map is encoded into `out` by `device` (required with `out` when the kernel has one).
void check(const DeviceInfo& dev, const ir::Kernel& k, const CheckFacts& facts, Instantiation dtype, const Bindings& buffers,
           const Constexprs& constexprs, Dim3 grid, Dim3 tg, rt::LaunchArgs* out, const rt::Device* device = nullptr) {
  std::vector<std::string> problems;
  auto fail = [&](std::string m) { problems.push_back(std::move(m)); };

  bool generic = !k.dtypes.empty();
  const bool t_bad = is_type_param(dtype.t) || dtype.t == DType::Void || dtype.t == DType::Bool;
  const bool w_bad = is_type_param(dtype.w) || dtype.w == DType::Bool;
  if (t_bad) fail(std::string("dtype ") + dtype_name(dtype.t) + " cannot be dispatched (use a concrete value dtype)");
  if (w_bad) fail(std::string("W = ") + dtype_name(dtype.w) + " cannot be dispatched (use a concrete value dtype)");
  bool t_ok = !t_bad;
  if (generic && !t_bad) {
    bool ok = false;
    for (DType t : k.dtypes) ok = ok || t == dtype.t;
    if (!ok) {
      std::string declared;
      for (DType t : k.dtypes) declared += (declared.empty() ? "" : ", ") + std::string(dtype_name(t));
      fail(std::string("the kernel is not declared for dtype ") + dtype_name(dtype.t) + " (declared: " + declared + ")");
      t_ok = false;
    }
  }
  // W, once T is right (a wrong T is reported above): the message names both.
  if (t_ok && !w_bad && (!k.wtypes.empty() || dtype.has_w())) {
    std::string why;
    if (!ir::declares(k, dtype, &why)) fail(why);
  }

  // Geometry. The grid counts threadgroups; total threads = grid * threadgroup.
  const size_t problems_before_geometry = problems.size();
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) fail("grid " + dim_text(grid) + " has a zero dimension");
  if (tg.x == 0 || tg.y == 0 || tg.z == 0) fail("threadgroup " + dim_text(tg) + " has a zero dimension");
  // Six 32-bit factors can exceed 64 bits (three already can): every product is checked, and
  // one that overflows counts as "more than 2^64", which fails the limit below.
  uint64_t per_group = num::saturating_mul(num::saturating_mul(tg.x, tg.y), tg.z);
  uint64_t groups = num::saturating_mul(num::saturating_mul(grid.x, grid.y), grid.z);
  uint64_t total = num::saturating_mul(groups, per_group);
  // More than 2^32 - 1 threads: only a kernel whose thread index is 64-bit (it reads
  // thread_id64 and never the u32 thread_id, which would wrap) may have them.
  if (total > 0xffffffffull && facts.index_widths != 2) {
    std::string count = total == UINT64_MAX ? "more than 2^64" : std::to_string(total);
    fail("grid " + dim_text(grid) + " x threadgroup " + dim_text(tg) + " = " + count + " threads exceeds 2^32-1, and kernel " +
         k.name + (facts.index_widths & 1 ? " reads the 32-bit thread_id" : " reads no 64-bit thread index") +
         " (the grid counts threadgroups, not threads; a dispatch of more than 2^32-1 threads needs a kernel that "
         "reads thread_id64 and never thread_id)");
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
  // (SimdGroup2D states this rule for every kernel of the mode, below.)
  if (facts.lane_ops && k.mode != Mode::SimdGroup2D && tg.x != 0 && (tg.x % dev.lane_width) != 0)
    fail("threadgroup " + dim_text(tg) + ": x = " + std::to_string(tg.x) + " is not a positive multiple of the lane width " +
         std::to_string(dev.lane_width) +
         " (the kernel uses lane operations; a partial lane group would hang or read garbage)");
  // The mode's own geometry (core/modes.cpp): Elementwise is 1-D, Tile2D 2-D, SimdGroup2D whole
  // lane groups along x. Checked on a geometry the rules above accept, so a grid the device
  // cannot launch at all is reported once, for that reason.
  if (problems.size() == problems_before_geometry) ir::check_mode_geometry(k.mode, grid, tg, dev.lane_width, problems);
  // Element types the device cannot store or compute (a Vulkan driver without shaderInt8 or
  // 8-bit storage, say): rejected here, naming the type, rather than failing in the compiler.
  uint32_t used = facts.dtypes_used;
  if (used & (1u << unsigned(DType::Generic))) used |= 1u << unsigned(dtype.t);
  if ((used & (1u << unsigned(DType::GenericW))) && dtype.has_w()) used |= 1u << unsigned(dtype.w);
  for (size_t d = 0; d < kNumDTypes; ++d) {
    if (!(used & (1u << d)) || is_type_param(DType(d))) continue;
    std::string why;
    if (!dtype_supported(dev, DType(d), why))
      fail(std::string("the kernel uses ") + dtype_name(DType(d)) + ", which " + dev.name + " does not support (" + why + ")");
  }

  // Scalars first: buffer extents are computed from them.
  const size_t np = k.params.size();
  ParamArray<uint64_t> scalar_values(np);
  ParamArray<uint8_t> scalar_ok(np);
  for (size_t i = 0; i < np; ++i) {
    const ir::Param& p = k.params[i];
    if (p.kind != ir::ParamKind::Scalar) continue;
    auto it = constexprs.find(p.name);
    if (it == constexprs.end()) {
      fail("constexpr '" + p.name + "' (" + dtype_name(p.dtype) + ") is not set");
      continue;
    }
    std::string why;  // a static reason, set only on failure
    if (!scalar_bits(p.dtype, it->second, scalar_values[i], why)) {
      fail("constexpr '" + p.name + "' = " + it->second.text() + " " + why);
      continue;
    }
    scalar_ok[i] = 1;
    // Declared facts (multiple_of): a value the code was not built for is rejected, never run.
    // (The message is built only for a breaking value: a valid dispatch allocates nothing.)
    if (p.multiple_of > 1 && (scalar_values[i] & (p.multiple_of - 1)) != 0 && !facts.skip_facts)
      fail(rt::scalar_fact_problem(k, uint32_t(i), scalar_values[i], it->second.text()));
  }
  // Threadgroup memory: the fixed arrays' bytes, plus the arrays sized by scalars at dispatch.
  // The limit is the device's opt-in maximum where it has one (CUDA: dynamic shared memory with
  // the opt-in attribute, which the CUDA device sets at launch).
  uint64_t shared = facts.shared_bytes;
  bool shared_known = true;
  if (facts.dynamic_tg) {
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      if (in.op != ir::Op::TgAlloc || !in.has(ir::Attr::CountParam)) return;
      const size_t s = size_t(in.attr(ir::Attr::CountParam));
      if (s >= np || !scalar_ok[s]) shared_known = false;
      else if (scalar_negative(k.params[s].dtype, scalar_values[s])) {
        fail("constexpr '" + k.params[s].name + "' is negative but sizes threadgroup array '" +
             k.strings[size_t(in.attr(ir::Attr::Name))] + "'");
        shared_known = false;
      }
    });
    if (shared_known) shared = ir::threadgroup_bytes(k, dtype, &scalar_values[0]);
  }
  const uint64_t shared_limit = std::max(dev.shared_memory_bytes, dev.shared_memory_optin_bytes);
  if (shared_known && shared > shared_limit)
    fail("the kernel needs " + (shared == UINT64_MAX ? std::string("more than 2^64") : std::to_string(shared)) +
         " bytes of threadgroup memory; the device allows " + std::to_string(shared_limit) +
         (dev.shared_memory_optin_bytes > dev.shared_memory_bytes
              ? " (opt-in limit; " + std::to_string(dev.shared_memory_bytes) + " without opting in)"
              : std::string()));

  for (const auto& [name, value] : constexprs) {
    int idx = k.find_param(name);
    if (idx < 0 || k.params[idx].kind == ir::ParamKind::Buffer)
      fail("constexpr '" + name + "' is set but the kernel has no scalar parameter of that name");
  }
  // By-value structures (blob, tensormap): their values come with the scalars'.
  bool any_blob = false;
  for (size_t i = 0; i < np; ++i) {
    const ir::Param& p = k.params[i];
    if (p.kind != ir::ParamKind::Blob) continue;
    any_blob = true;
    if (std::string why = blob_value_problem(dev, k, uint32_t(i), constexprs); !why.empty()) fail(why);
  }

  // Buffers, bound by name.
  ParamArray<const DeviceBuffer*> bound(np);
  for (const auto& [name, buf] : buffers) {
    int idx = k.find_param(name);
    if (idx < 0 || k.params[idx].kind != ir::ParamKind::Buffer) {
      fail("buffer '" + name + "' is bound but the kernel has no buffer parameter of that name");
      continue;
    }
    if (bound[idx]) fail("buffer parameter '" + name + "' is bound twice");
    bound[idx] = &buf;
  }
  for (size_t i = 0; i < np; ++i) {
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
    if (b->span_bytes() > dev.max_buffer_bytes)
      fail("buffer '" + p.name + "' is " + std::to_string(b->span_bytes()) + " bytes; " + dev.name + " binds at most " +
           std::to_string(dev.max_buffer_bytes) + " bytes to one buffer parameter (maxStorageBufferRange)");
    if (std::string why = stride_problem(k, uint32_t(i), *b, scalar_ok[p.stride_param == ir::kNoStride ? i : p.stride_param]
                                                              ? &scalar_values[p.stride_param == ir::kNoStride ? i : p.stride_param]
                                                              : nullptr);
        !why.empty())
      fail(why);
    if (bound_align(*b) % ir::assumed_align(p) != 0 && !facts.skip_facts)
      fail(rt::buffer_fact_problem(k, uint32_t(i), bound_align(*b)));
    DType want = ir::resolve(p.dtype, dtype);
    if (b->dtype() != want)
      fail(std::string("buffer '") + p.name + "' holds " + dtype_name(b->dtype()) + " but the parameter is buf<" +
           dtype_name(want) + ">");
    bool known = true, overflow = false;
    uint64_t extent = p.extent_factor;
    for (uint32_t s : p.extent_scalars) {
      if (!scalar_ok[s]) known = false;
      const uint64_t v = scalar_values[s];
      if (scalar_negative(k.params[s].dtype, v)) {
        fail("constexpr '" + k.params[s].name + "' is negative but sizes buffer '" + p.name + "'");
        known = false;
      }
      overflow = overflow || !num::checked_mul(extent, uint64_t(v), extent);
    }
    if (known && (overflow || b->count() < extent)) {
      // The extent as written: "n", "2*n", "4*rows*cols", or the bare factor.
      std::string formula = p.extent_factor != 1 || p.extent_scalars.empty() ? std::to_string(p.extent_factor) : "";
      for (uint32_t s : p.extent_scalars) formula += (formula.empty() ? "" : "*") + k.params[s].name;
      fail("buffer '" + p.name + "' has " + std::to_string(b->count()) + " elements but the kernel may touch " +
           (overflow ? std::string("more than 2^64") : std::to_string(extent)) + " (extent " + formula + ")");
    }
  }

  // One buffer in two parameters, either of them written: the CUDA parameters are __restrict__
  // and the passes share and reorder loads of inputs, so this is valid only where the kernel
  // declares the aliasing (aliases(a, b); see Param::aliases).
  for (size_t i = 0; i < np; ++i)
    for (size_t j = i + 1; j < np; ++j) {
      if (!bound[i] || !bound[j] || !*bound[i] || !*bound[j] || !overlaps(*bound[i], *bound[j])) continue;
      const ir::Param& a = k.params[i];
      const ir::Param& b = k.params[j];
      if (a.access == ir::Access::Read && b.access == ir::Access::Read) continue;
      if (std::find(b.aliases.begin(), b.aliases.end(), uint32_t(i)) != b.aliases.end()) continue;
      fail("buffers '" + a.name + "' (" + ir::access_name(a.access) + ") and '" + b.name + "' (" +
           ir::access_name(b.access) + ") are bound to the same DeviceBuffer, but the kernel does not declare that they alias "
           "(bind separate buffers, or declare aliases(\"" + a.name + "\", \"" + b.name + "\") in the kernel)");
    }

  if (!problems.empty()) {
    std::string msg = "invalid dispatch of " + k.name + " (" + instantiation_name(dtype) + ") on " + dev.name + ":";
    for (const std::string& p : problems) msg += "\n  - " + p;
    throw Error(msg);
  }

  if (!out) return;
  out->is_buffer.clear();
  out->buffers.clear();
  out->offsets.clear();
  out->bound_bytes.clear();
  out->strides.clear();
  out->scalars.clear();
  out->blob_data.clear();
  out->blob_offsets.clear();
  out->blob_sizes.clear();
  out->blob_buffers.clear();
  out->blob_maps.clear();
  out->threadgroup_bytes = shared;
  for (size_t i = 0; i < np; ++i) {
    const ir::ParamKind kind = k.params[i].kind;
    out->is_buffer.push_back(kind == ir::ParamKind::Buffer ? 1 : kind == ir::ParamKind::Blob ? rt::kBlobParam : 0);
    if (kind == ir::ParamKind::Buffer) {
      out->buffers.push_back(bound[i]->impl());
      out->offsets.push_back(bound[i]->offset_bytes());
      out->bound_bytes.push_back(bound[i]->span_bytes());
      out->strides.push_back(bound[i]->stride());
    }
    else if (kind == ir::ParamKind::Scalar) out->scalars.push_back(scalar_values[i]);
  }
  if (any_blob) fill_blobs(device, k, constexprs, *out);
}

}  // namespace

std::string rt::scalar_fact_problem(const ir::Kernel& k, uint32_t param, uint64_t bits, const std::string& value) {
  const ir::Param& p = k.params[param];
  if (p.kind != ir::ParamKind::Scalar || p.multiple_of < 2 || (bits & (p.multiple_of - 1)) == 0) return {};
  return "constexpr '" + p.name + "' = " + value + " breaks the fact multiple_of(" + std::to_string(p.multiple_of) +
         ") that kernel " + k.name + " declares at " + k.where(p.loc) +
         " (its code is built on it; pass a multiple of " + std::to_string(p.multiple_of) + " or use a kernel without the fact)";
}

std::string rt::buffer_fact_problem(const ir::Kernel& k, uint32_t param, uint64_t bound_align) {
  const ir::Param& p = k.params[param];
  if (p.kind != ir::ParamKind::Buffer) return {};
  const uint64_t want = ir::assumed_align(p);
  if (bound_align != 0 && bound_align % want == 0) return {};
  const std::string fact = p.align ? "the fact aligned(" + std::to_string(p.align) + ") that kernel " + k.name +
                                         " declares at " + k.where(p.loc)
                                   : "the " + std::to_string(want) + "-byte alignment kernel " + k.name +
                                         " assumes of every buffer (declared at " + k.where(p.loc) + ")";
  return "buffer '" + p.name + "' is bound at an address aligned to " + std::to_string(bound_align) +
         " bytes, which breaks " + fact;
}

namespace {

// The launch arguments of this thread's current dispatch, reused so a dispatch allocates
// nothing once the vectors have grown. Devices only read them during launch()/time_launches().
rt::LaunchArgs& launch_scratch() {
  thread_local rt::LaunchArgs args;
  return args;
}

// The launch facts the pipeline of a dispatch with this threadgroup may assume: the shape where
// the device bakes it into the code (and so keys its caches by it), none otherwise.
passes::LaunchFacts launch_facts(const rt::Device& device, Dim3 threadgroup) {
  passes::LaunchFacts f;
  if (!device.pipeline_depends_on_threadgroup()) return f;
  f.threadgroup[0] = threadgroup.x;
  f.threadgroup[1] = threadgroup.y;
  f.threadgroup[2] = threadgroup.z;
  return f;
}

// The specialized scalars of a dispatch (Param::specialize), from its checked launch arguments:
// (parameter index, launch bits) in parameter order. Empty for a kernel without any.
std::vector<std::pair<uint32_t, uint64_t>> spec_values(const ir::Kernel& k, const rt::LaunchArgs& args) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  size_t scalar = 0;
  for (uint32_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].kind != ir::ParamKind::Scalar) continue;
    if (k.params[i].specialize && scalar < args.scalars.size()) out.emplace_back(i, args.scalars[scalar]);
    ++scalar;
  }
  return out;
}

Instantiation normalize(const ir::Kernel& kernel, Instantiation dtype) {
  // A kernel without T is the same program at every T: one pipeline, keyed as f32 (W, which
  // the kernel may still take, is kept).
  if (kernel.dtypes.empty() && !is_type_param(dtype.t) && dtype.t != DType::Void && dtype.t != DType::Bool)
    dtype.t = DType::F32;
  return dtype;
}

}  // namespace

Context::CacheStats Context::cache_stats() const {
  std::lock_guard lock(cache_->mu);
  return cache_->stats;
}

void Context::set_disk_cache_dir(const std::string& dir) {
  std::lock_guard lock(cache_->mu);
  cache_->private_disk = true;
  cache_->own_disk = std::make_unique<rt::DiskCache>(dir);
}

// Facts for validation and, when this Context built it before, the pipeline. A registry kernel
// seen before costs one lock and one pointer look-up; a registry kernel seen for the first time
// and every other kernel cost an IR print (the content hash) and, for a new hash, the walks.
Context::Prepared Context::prepare(const ir::Kernel& kernel, Instantiation dtype, Dim3 threadgroup, bool want_pipeline) const {
  Cache& c = *cache_;
  const Dim3 shape = device_->pipeline_depends_on_threadgroup() ? threadgroup : Dim3{0, 0, 0};
  Prepared p;
  auto from_registered = [&](Cache::Registered& r) {
    p.registered = true;
    p.hash = r.facts.hash;
    p.lane_ops = r.facts.lane_ops;
    p.dtypes_used = r.facts.dtypes_used;
    p.dynamic_tg = r.facts.dynamic_tg;
    p.index_widths = r.facts.index_widths;
    p.shared_bytes = r.facts.threadgroup_bytes(kernel, dtype);
    p.specialized = !r.facts.spec_params.empty();
    p.skip_facts = c.skip_facts;
    if (!want_pipeline || p.specialized) return;  // a specialized pipeline is found by its values
    for (const Cache::Fast& f : r.pipelines)
      if (f.dtype == dtype && f.shape.x == shape.x && f.shape.y == shape.y && f.shape.z == shape.z) {
        p.compiled = f.compiled;
        ++c.stats.memory_hits;
        break;
      }
  };
  {
    std::lock_guard lock(c.mu);
    auto it = c.registered.find(&kernel);
    if (it != c.registered.end()) {
      from_registered(it->second);
      return p;
    }
  }
  // Not known by address: print and hash outside the lock (a registry kernel's facts too: once).
  const bool reg = is_registry_kernel(&kernel);
  const uint64_t hash = ir::content_hash(kernel);
  std::optional<KernelFacts> reg_facts;
  if (reg) reg_facts = KernelFacts::of(kernel, hash);
  std::lock_guard lock(c.mu);
  if (reg) {
    auto it = c.registered.try_emplace(&kernel, Cache::Registered{*reg_facts, {}}).first;
    from_registered(it->second);
    return p;
  }
  auto it = c.by_hash.find(hash);
  if (it == c.by_hash.end()) it = c.by_hash.emplace(hash, KernelFacts::of(kernel, hash)).first;
  p.hash = hash;
  p.lane_ops = it->second.lane_ops;
  p.dtypes_used = it->second.dtypes_used;
  p.dynamic_tg = it->second.dynamic_tg;
  p.index_widths = it->second.index_widths;
  p.shared_bytes = it->second.threadgroup_bytes(kernel, dtype);
  p.specialized = !it->second.spec_params.empty();
  p.skip_facts = c.skip_facts;
  return p;
}

std::vector<uint8_t> Context::encode_tensor_map(const TensorMap& map, const std::string& what) const {
  std::vector<uint64_t> strides;
  std::string problems;
  tensor_map_rules(map, what, strides, [&](const std::string& m) { problems += "\n  - " + m; });
  if (!problems.empty()) throw Error("invalid tensor map on " + info().name + ":" + problems);
  std::vector<uint8_t> out(ir::kTensorMapBytes);
  device_->encode_tensor_map(map, strides, out.data());
  return out;
}

void Context::validate_dispatch(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                                const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) const {
  Prepared p = prepare(kernel, dtype, threadgroup, false);
  check(device_->info(), kernel, CheckFacts{p.lane_ops, p.dtypes_used, p.shared_bytes, p.dynamic_tg, p.index_widths, p.skip_facts}, dtype, buffers, constexprs, grid, threadgroup,
        nullptr);
}

void Context::dispatch_with_grid(std::string_view kernel, Instantiation dtype, const Bindings& buffers,
                                 const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) {
  dispatch_with_grid(kernel_ir(kernel), dtype, buffers, constexprs, grid, threadgroup);
}

// A pipeline not found by prepare(): from the memory cache (a kernel prepare() could not look up
// by address, or a specialized one), else the disk cache, else compiled. Registry kernels without
// specialized scalars get a fast-path entry; a specialized kernel keeps its spec_limit most
// recently used values (each value's pipelines at every dtype and shape).
std::shared_ptr<rt::CompiledKernel> Context::pipeline(const ir::Kernel& kernel, Instantiation dtype, Dim3 threadgroup,
                                                      const Prepared& p, const SpecValues& spec) {
  Cache& c = *cache_;
  std::lock_guard lock(c.mu);
  Dim3 shape = device_->pipeline_depends_on_threadgroup() ? threadgroup : Dim3{0, 0, 0};
  std::vector<uint64_t> values;
  for (const auto& [param, bits] : spec) values.push_back(bits);
  Cache::Key key{p.hash, kernel.name, dtype, shape.x, shape.y, shape.z, values};
  auto it = c.pipelines.find(key);
  if (it == c.pipelines.end()) {
    ++c.stats.memory_misses;
    it = c.pipelines.emplace(key, std::shared_ptr<rt::CompiledKernel>(build(kernel, dtype, threadgroup, p.hash, spec))).first;
  } else {
    ++c.stats.memory_hits;
  }
  std::shared_ptr<rt::CompiledKernel> out = it->second;
  if (p.specialized) {
    auto& lru = c.spec_lru[{p.hash, kernel.name}];
    auto at = std::find(lru.begin(), lru.end(), values);
    if (at != lru.end()) lru.splice(lru.begin(), lru, at);
    else lru.push_front(values);
    while (lru.size() > c.spec_limit) {
      // Nothing in flight may still run an evicted pipeline (a caller holding one keeps it).
      device_->synchronize();
      const std::vector<uint64_t>& old = lru.back();
      for (auto e = c.pipelines.begin(); e != c.pipelines.end();) {
        if (std::get<0>(e->first) == p.hash && std::get<1>(e->first) == kernel.name && std::get<6>(e->first) == old) {
          e = c.pipelines.erase(e);
          ++c.stats.specialized_evictions;
        } else {
          ++e;
        }
      }
      lru.pop_back();
    }
  } else if (p.registered) {
    auto r = c.registered.find(&kernel);
    if (r != c.registered.end() &&
        std::none_of(r->second.pipelines.begin(), r->second.pipelines.end(), [&](const Cache::Fast& f) {
          return f.compiled == out.get();
        }))
      r->second.pipelines.push_back({dtype, shape, out.get()});
  }
  return out;
}

// Builds a pipeline; cache_->mu is held. Disk first: a hit skips passes::optimize, emission and
// the compiler, and only asks the device to load the stored binary.
std::unique_ptr<rt::CompiledKernel> Context::build(const ir::Kernel& kernel, Instantiation dtype, Dim3 threadgroup,
                                                   uint64_t hash, const SpecValues& spec) {
  Cache& c = *cache_;
  rt::DiskCache* disk = nullptr;
  if (!c.disk_off_by_env && !optimizer_switches_set()) {
    if (!c.fingerprint) {
      try {
        c.fingerprint = device_->cache_fingerprint();
      } catch (const std::exception&) {
        c.fingerprint = std::string();  // e.g. NVRTC missing: compile() will say so
      }
    }
    if (!c.fingerprint->empty()) disk = c.private_disk ? c.own_disk.get() : &rt::DiskCache::instance();
    if (disk && !disk->enabled()) disk = nullptr;
  }

  std::string key;
  if (disk) {
    // Everything the binary depends on. Constexprs are absent except the specialized ones:
    // other scalar parameters are runtime arguments (CUDA kernel parameters, Vulkan push
    // constants), never baked into the binary; a specialized one's value is (name=bits, in
    // parameter order; version 3 added them). The threadgroup shape is part of it wherever the device bakes it in: Vulkan
    // (specialization constants) and CUDA (__launch_bounds__ and group_size as constants);
    // both also optimize with it as a launch fact.
    const bool by_shape = device_->pipeline_depends_on_threadgroup();
    const std::string shape = by_shape ? std::to_string(threadgroup.x) + "x" + std::to_string(threadgroup.y) + "x" +
                                             std::to_string(threadgroup.z)
                                       : "any";
    const std::string ir_hash = hex64(hash);
    std::string baked = "none";
    if (!spec.empty()) {
      baked.clear();
      for (const auto& [param, bits] : spec) baked += (baked.empty() ? "" : ",") + kernel.params[param].name + "=" + hex64(bits);
    }
    key = rt::cache_key({"iron-pipeline-3", backend_name(device_->info().backend), *c.fingerprint, ir_hash,
                         kernel.name, instantiation_name(dtype), shape, baked, iron_build_id()});
    const uint64_t corrupt_before = disk->stats().corrupt;
    std::optional<std::vector<char>> bytes = disk->load(key);
    c.stats.disk_corrupt += disk->stats().corrupt - corrupt_before;
    if (bytes) {
      try {
        std::unique_ptr<rt::CompiledKernel> loaded = device_->load(kernel, dtype, threadgroup, *bytes);
        if (loaded) {
          ++c.stats.disk_hits;
          return loaded;
        }
      } catch (const std::exception&) {
        // The bytes passed the checksum but the device refused them (a driver that no longer
        // accepts the format, say): rebuild, and the store below replaces the entry.
      }
      ++c.stats.disk_rejected;
    }
    ++c.stats.disk_misses;
  }

  // Every backend runs the same passes (the pipeline is backend-neutral); where the device
  // builds one pipeline per threadgroup shape (CUDA, Vulkan) the shape enters as a launch fact.
  // Specialized scalars enter on every backend, the interpreter included.
  passes::Specialization specialization;
  specialization.values = spec;
  ir::Kernel optimized = rt::optimize_kernel(kernel, launch_facts(*device_, threadgroup), specialization);
  std::unique_ptr<rt::CompiledKernel> compiled = device_->compile(optimized, dtype, threadgroup);
  if (disk && !compiled->binary.empty()) {
    const uint64_t writes_before = disk->stats().writes;
    disk->store(key, compiled->binary.data(), compiled->binary.size());
    c.stats.disk_writes += disk->stats().writes - writes_before;
  }
  return compiled;
}

std::vector<double> rt::Device::time_sequence(const std::vector<TimedLaunch>& seq, const TimingOptions& opts) {
  if (seq.empty()) throw Error("timing of an empty launch sequence");
  if (seq.size() == 1) return time_launches(*seq[0].kernel, *seq[0].args, seq[0].grid, seq[0].threadgroup, opts);
  auto all = [&] {
    for (const TimedLaunch& l : seq) launch(*l.kernel, *l.args, l.grid, l.threadgroup);
    synchronize();
  };
  for (int i = 0; i < opts.warmup; ++i) all();
  std::vector<double> us;
  for (int i = 0; i < opts.samples; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    all();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return us;
}

std::vector<std::unique_ptr<rt::CompiledKernel>> rt::Device::compile_many(const std::vector<const ir::Kernel*>& ks,
                                                                        const std::vector<Instantiation>& dtypes,
                                                                        const std::vector<Dim3>& threadgroups) {
  std::vector<std::unique_ptr<CompiledKernel>> out(ks.size());
  for (size_t i = 0; i < ks.size(); ++i) {
    try {
      out[i] = compile(*ks[i], dtypes[i], threadgroups[i]);
    } catch (const std::exception&) {
      // Left out: the kernel's dispatch compiles it again and reports why.
    }
  }
  return out;
}

void Context::precompile(const std::vector<const ir::Kernel*>& kernels, const std::vector<Instantiation>& dtypes,
                         const std::vector<Dim3>& threadgroups) {
  if (dtypes.size() != kernels.size() || threadgroups.size() != kernels.size())
    throw Error("precompile: " + std::to_string(kernels.size()) + " kernels, " + std::to_string(dtypes.size()) +
                " dtypes and " + std::to_string(threadgroups.size()) + " threadgroups");
  const bool by_shape = device_->pipeline_depends_on_threadgroup();
  std::vector<Cache::Key> keys;
  std::vector<ir::Kernel> optimized;
  std::vector<Instantiation> ds;
  std::vector<Dim3> tgs;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const ir::Kernel& k = *kernels[i];
    // A kernel with specialized scalars is built per value: its dispatches compile it.
    if (std::any_of(k.params.begin(), k.params.end(), [](const ir::Param& prm) { return prm.specialize; })) continue;
    const Instantiation d = normalize(k, dtypes[i]);
    const Dim3 shape = by_shape ? threadgroups[i] : Dim3{0, 0, 0};
    Cache::Key key{ir::content_hash(k), k.name, d, shape.x, shape.y, shape.z, {}};
    {
      std::lock_guard lock(cache_->mu);
      if (cache_->pipelines.count(key)) continue;
    }
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    try {
      optimized.push_back(rt::optimize_kernel(k, launch_facts(*device_, threadgroups[i])));
    } catch (const std::exception&) {
      continue;  // the dispatch reports it
    }
    keys.push_back(key);
    ds.push_back(d);
    tgs.push_back(threadgroups[i]);
  }
  if (keys.empty()) return;
  std::vector<const ir::Kernel*> ptrs;
  for (const ir::Kernel& k : optimized) ptrs.push_back(&k);
  std::vector<std::unique_ptr<rt::CompiledKernel>> built = device_->compile_many(ptrs, ds, tgs);
  std::lock_guard lock(cache_->mu);
  for (size_t i = 0; i < keys.size() && i < built.size(); ++i)
    if (built[i]) cache_->pipelines.emplace(keys[i], std::shared_ptr<rt::CompiledKernel>(std::move(built[i])));
}

void Context::dispatch_with_grid(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                                 const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) {
  dispatch_with_grid(kernel, dtype, buffers, constexprs, grid, threadgroup, Stream{});
}

void Context::dispatch_with_grid(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                                 const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup, const Stream& stream) {
  rt::StreamImpl* s = own(stream, "dispatch_with_grid");
  dtype = normalize(kernel, dtype);
  Prepared p = prepare(kernel, dtype, threadgroup, true);
  rt::LaunchArgs& args = launch_scratch();
  check(device_->info(), kernel, CheckFacts{p.lane_ops, p.dtypes_used, p.shared_bytes, p.dynamic_tg, p.index_widths, p.skip_facts}, dtype, buffers, constexprs, grid, threadgroup,
        &args, device_.get());
  std::shared_ptr<rt::CompiledKernel> held;
  rt::CompiledKernel& compiled = p.compiled ? *p.compiled : *(held = pipeline(kernel, dtype, threadgroup, p, spec_values(kernel, args)));
  device_->launch(compiled, args, grid, threadgroup, s);
}

// ---------------------------------------------------------------------------------------------
// Prepared launches

namespace {

// The device's default prepared launch: the checked arguments, kept and passed to launch().
struct GenericPrepared final : rt::Device::Prepared {
  rt::Device* device = nullptr;
  rt::CompiledKernel* kernel = nullptr;
  rt::LaunchArgs args;
  Dim3 grid, tg;
  void set_buffer(size_t slot, rt::BufferImpl* buf, uint64_t offset) override {
    args.buffers[slot] = buf;
    if (slot < args.offsets.size()) args.offsets[slot] = offset;
  }
  void set_buffer_bytes(size_t slot, uint64_t bytes) override {
    if (slot < args.bound_bytes.size()) args.bound_bytes[slot] = bytes;
  }
  void set_scalar(size_t slot, uint64_t bits) override { args.scalars[slot] = bits; }
  void set_blob(size_t slot, const uint8_t* bytes, size_t size, rt::BufferImpl* buf) override {
    std::memcpy(args.blob_data.data() + args.blob_offsets[slot], bytes, size);
    args.blob_buffers[slot] = buf;
  }
  void set_blob_map(size_t slot, const rt::LaunchArgs::BlobMap& map) override {
    if (slot < args.blob_maps.size()) args.blob_maps[slot] = map;
  }
  void launch(rt::StreamImpl* stream) override { device->launch(*kernel, args, grid, tg, stream); }
};

}  // namespace

std::unique_ptr<rt::Device::Prepared> rt::Device::prepare(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid,
                                                          Dim3 threadgroup) {
  auto p = std::make_unique<GenericPrepared>();
  p->device = this;
  p->kernel = &kernel;
  p->args = args;
  p->grid = grid;
  p->tg = threadgroup;
  return p;
}

struct PreparedLaunch::Impl {
  Context* ctx = nullptr;
  const ir::Kernel* kernel = nullptr;
  Instantiation dtype;
  std::shared_ptr<rt::CompiledKernel> compiled;  // kept alive while the launch exists
  std::unique_ptr<rt::Device::Prepared> device;
  std::vector<DeviceBuffer> bound;  // per parameter; empty for a scalar
  std::vector<uint32_t> slot;       // per parameter: its index among the buffers or the scalars
  std::vector<uint64_t> extent;     // per buffer parameter: the elements it must hold
  std::vector<uint64_t> bits;       // per scalar parameter: the launch bits now bound
  std::vector<std::string> fixed;   // per scalar parameter: why its value is fixed ("" if free)
  std::vector<ScalarValue> blobs;   // per blob parameter: the value bound (keeps a map's buffer)
  uint64_t version = 0;             // counts rebindings (a LaunchSequence re-records after one)

  [[noreturn]] void reject(const std::string& problem) const {
    throw Error("invalid rebinding of the prepared launch of " + kernel->name + " (" + instantiation_name(dtype) +
                ") on " + ctx->info().name + ":\n  - " + problem);
  }
  const ir::Param& param(uint32_t i, ir::ParamKind kind) const {
    if (i >= kernel->params.size())
      reject("parameter index " + std::to_string(i) + " is out of range (the kernel has " +
             std::to_string(kernel->params.size()) + " parameters)");
    const ir::Param& p = kernel->params[i];
    if (p.kind != kind)
      reject("parameter " + std::to_string(i) + " ('" + p.name + "') is a " + ir::param_kind_name(p.kind) +
             " parameter, not a " + ir::param_kind_name(kind) + " one");
    return p;
  }
};

PreparedLaunch::PreparedLaunch() = default;
PreparedLaunch::PreparedLaunch(PreparedLaunch&&) noexcept = default;
PreparedLaunch& PreparedLaunch::operator=(PreparedLaunch&&) noexcept = default;
PreparedLaunch::~PreparedLaunch() = default;

uint32_t PreparedLaunch::param(std::string_view name) const {
  if (!impl_) throw Error("param() of an empty PreparedLaunch");
  const int i = impl_->kernel->find_param(std::string(name));
  if (i < 0) {
    std::string all;
    for (const ir::Param& p : impl_->kernel->params) all += (all.empty() ? "" : ", ") + p.name;
    throw Error("kernel " + impl_->kernel->name + " has no parameter '" + std::string(name) + "' (its parameters: " + all + ")");
  }
  return uint32_t(i);
}

void PreparedLaunch::set_buffer(uint32_t index, const DeviceBuffer& b) {
  if (!impl_) throw Error("set_buffer() of an empty PreparedLaunch");
  Impl& m = *impl_;
  const ir::Param& p = m.param(index, ir::ParamKind::Buffer);
  if (!b) m.reject("buffer parameter '" + p.name + "' is bound to an empty DeviceBuffer");
  const DType want = ir::resolve(p.dtype, m.dtype);
  if (b.dtype() != want)
    m.reject(std::string("buffer '") + p.name + "' holds " + dtype_name(b.dtype()) + " but the parameter is buf<" +
             dtype_name(want) + ">");
  if (b.impl()->owner != m.bound[index].impl()->owner) m.reject("buffer '" + p.name + "' is from another device");
  if (b.count() < m.extent[index])
    m.reject("buffer '" + p.name + "' has " + std::to_string(b.count()) + " elements but the kernel may touch " +
             std::to_string(m.extent[index]) + " (the extent validated when the launch was prepared)");
  // The stride scalar keeps its value (fixed), so the view's stride must stay what it was.
  if (std::string why = stride_problem(*m.kernel, index, b, p.stride_param == ir::kNoStride ? nullptr : &m.bits[p.stride_param]);
      !why.empty())
    m.reject(why);
  const DeviceInfo& dev = m.ctx->info();
  if (b.span_bytes() > dev.max_buffer_bytes)
    m.reject("buffer '" + p.name + "' is " + std::to_string(b.span_bytes()) + " bytes; " + dev.name + " binds at most " +
             std::to_string(dev.max_buffer_bytes) + " bytes to one buffer parameter (maxStorageBufferRange)");
  if (std::string why = rt::buffer_fact_problem(*m.kernel, index, bound_align(b)); !why.empty()) m.reject(why);
  for (uint32_t j = 0; j < m.bound.size(); ++j) {
    if (j == index || !m.bound[j] || !overlaps(m.bound[j], b)) continue;
    const ir::Param& o = m.kernel->params[j];
    if (p.access == ir::Access::Read && o.access == ir::Access::Read) continue;
    const ir::Param& later = j > index ? o : p;
    const uint32_t earlier = j > index ? index : j;
    if (std::find(later.aliases.begin(), later.aliases.end(), earlier) != later.aliases.end()) continue;
    m.reject("buffers '" + p.name + "' (" + ir::access_name(p.access) + ") and '" + o.name + "' (" +
             ir::access_name(o.access) + ") would be bound to the same DeviceBuffer, but the kernel does not declare "
             "that they alias");
  }
  m.device->set_buffer(m.slot[index], b.impl(), b.offset_bytes());
  m.device->set_buffer_bytes(m.slot[index], b.span_bytes());
  m.bound[index] = b;
  ++m.version;
}

void PreparedLaunch::set_scalar(uint32_t index, const ScalarValue& v) {
  if (!impl_) throw Error("set_scalar() of an empty PreparedLaunch");
  Impl& m = *impl_;
  if (index < m.kernel->params.size() && m.kernel->params[index].kind == ir::ParamKind::Blob) {
    // A by-value structure: the dispatch's checks, then the new bytes (a map encoded again).
    std::vector<uint64_t> strides;
    if (std::string why = blob_problem(m.ctx->info(), *m.kernel, index, &v, strides); !why.empty()) m.reject(why);
    rt::LaunchArgs one;
    append_blob(m.ctx->device_.get(), v, one);
    m.device->set_blob(m.slot[index], one.blob_data.data() + one.blob_offsets[0], one.blob_sizes[0], one.blob_buffers[0]);
    m.device->set_blob_map(m.slot[index], one.blob_maps[0]);
    m.blobs[index] = v;
    ++m.version;
    return;
  }
  const ir::Param& p = m.param(index, ir::ParamKind::Scalar);
  uint64_t bits = 0;
  std::string why;
  if (!scalar_bits(p.dtype, v, bits, why)) m.reject("constexpr '" + p.name + "' = " + v.text() + " " + why);
  if (std::string fact = rt::scalar_fact_problem(*m.kernel, index, bits, v.text()); !fact.empty()) m.reject(fact);
  if (!m.fixed[index].empty() && bits != m.bits[index])
    m.reject("constexpr '" + p.name + "' = " + v.text() + ": " + m.fixed[index] +
             ", so a prepared launch keeps the value it was validated with (prepare another launch for this value)");
  m.device->set_scalar(m.slot[index], bits);
  m.bits[index] = bits;
  ++m.version;
}

void PreparedLaunch::launch(const Stream& stream) {
  if (!impl_) throw Error("launch() of an empty PreparedLaunch");
  impl_->device->launch(impl_->ctx->own(stream, "PreparedLaunch::launch"));
}

namespace {
struct GenericRecorded final : rt::Device::Recorded {
  std::vector<rt::Device::Prepared*> steps;
  void update(const std::vector<size_t>&) override {}
  void replay(rt::StreamImpl* stream) override {
    for (rt::Device::Prepared* p : steps) p->launch(stream);
  }
  std::string describe() const override { return "launch by launch, " + std::to_string(steps.size()) + " steps"; }
};
}  // namespace

std::unique_ptr<rt::Device::Recorded> rt::Device::record(const std::vector<Prepared*>& steps) {
  auto r = std::make_unique<GenericRecorded>();
  r->steps = steps;
  return r;
}

struct LaunchSequence::Impl {
  Context* ctx = nullptr;
  std::vector<PreparedLaunch> steps;
  std::vector<uint64_t> versions;  // each step's rebinding count when recorded
  std::vector<size_t> changed;     // scratch of replay(): the steps rebound since the last one
  std::unique_ptr<rt::Device::Recorded> recorded;
};

LaunchSequence::LaunchSequence() = default;
LaunchSequence::LaunchSequence(LaunchSequence&&) noexcept = default;
LaunchSequence& LaunchSequence::operator=(LaunchSequence&&) noexcept = default;
LaunchSequence::~LaunchSequence() {
  if (impl_) impl_->recorded.reset();  // before the steps it points into
}

LaunchSequence Context::create_sequence() {
  LaunchSequence s;
  s.impl_ = std::make_unique<LaunchSequence::Impl>();
  s.impl_->ctx = this;
  return s;
}

size_t LaunchSequence::add(PreparedLaunch step) {
  if (!impl_) throw Error("add() to an empty LaunchSequence (make one with Context::create_sequence)");
  if (!step) throw Error("LaunchSequence::add: an empty PreparedLaunch");
  if (step.impl_->ctx != impl_->ctx) throw Error("LaunchSequence::add: the launch was prepared on another Context");
  impl_->recorded.reset();
  impl_->steps.push_back(std::move(step));
  return impl_->steps.size() - 1;
}

size_t LaunchSequence::size() const { return impl_ ? impl_->steps.size() : 0; }

PreparedLaunch& LaunchSequence::step(size_t index) {
  if (!impl_ || index >= impl_->steps.size())
    throw Error("LaunchSequence::step(" + std::to_string(index) + "): the sequence has " + std::to_string(size()) +
                " steps");
  return impl_->steps[index];
}

void LaunchSequence::replay(const Stream& stream) {
  if (!impl_) throw Error("replay() of an empty LaunchSequence");
  Impl& m = *impl_;
  rt::StreamImpl* s = m.ctx->own(stream, "LaunchSequence::replay");
  if (m.steps.empty()) return;
  if (!m.recorded) {
    std::vector<rt::Device::Prepared*> steps;
    m.versions.clear();
    for (PreparedLaunch& p : m.steps) {
      steps.push_back(p.impl_->device.get());
      m.versions.push_back(p.impl_->version);
    }
    m.recorded = m.ctx->device_->record(steps);
  } else {
    m.changed.clear();
    for (size_t i = 0; i < m.steps.size(); ++i)
      if (m.steps[i].impl_->version != m.versions[i]) {
        m.changed.push_back(i);
        m.versions[i] = m.steps[i].impl_->version;
      }
    if (!m.changed.empty()) m.recorded->update(m.changed);
  }
  m.recorded->replay(s);
}

std::string LaunchSequence::recording() const {
  if (!impl_ || !impl_->recorded) return "not recorded";
  return impl_->recorded->describe();
}

PreparedLaunch Context::prepare_launch(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                                       const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup) {
  dtype = normalize(kernel, dtype);
  Prepared p = prepare(kernel, dtype, threadgroup, false);
  rt::LaunchArgs args;
  check(device_->info(), kernel, CheckFacts{p.lane_ops, p.dtypes_used, p.shared_bytes, p.dynamic_tg, p.index_widths, p.skip_facts},
        dtype, buffers, constexprs, grid, threadgroup, &args, device_.get());
  auto m = std::make_unique<PreparedLaunch::Impl>();
  m->ctx = this;
  m->kernel = &kernel;
  m->dtype = dtype;
  m->compiled = pipeline(kernel, dtype, threadgroup, p, spec_values(kernel, args));
  const size_t np = kernel.params.size();
  m->bound.resize(np);
  m->slot.resize(np);
  m->extent.assign(np, 0);
  m->bits.assign(np, 0);
  m->fixed.assign(np, "");
  m->blobs.resize(np);
  uint32_t bi = 0, si = 0, li = 0;
  for (size_t i = 0; i < np; ++i) {
    const ir::Param& prm = kernel.params[i];
    if (prm.kind == ir::ParamKind::Buffer) {
      m->slot[i] = bi++;
      for (const auto& [name, buf] : buffers)
        if (name == prm.name) m->bound[i] = buf;
    } else if (prm.kind == ir::ParamKind::Blob) {
      m->slot[i] = li++;
      m->blobs[i] = constexprs.find(prm.name)->second;
    } else {
      m->slot[i] = si;
      m->bits[i] = args.scalars[si++];
      if (prm.specialize) m->fixed[i] = "its value is specialized into the kernel's code";
    }
  }
  for (size_t i = 0; i < np; ++i) {
    const ir::Param& prm = kernel.params[i];
    if (prm.kind != ir::ParamKind::Buffer) continue;
    uint64_t e = prm.extent_factor;
    for (uint32_t sc : prm.extent_scalars) {
      e *= m->bits[sc];  // validated: no overflow, no negative value
      if (m->fixed[sc].empty()) m->fixed[sc] = "it sizes buffer '" + prm.name + "'";
    }
    m->extent[i] = e;
    if (prm.stride_param != ir::kNoStride && m->fixed[prm.stride_param].empty())
      m->fixed[prm.stride_param] = "it is the element stride of buffer '" + prm.name + "'";
  }
  ir::walk(kernel, [&](ir::Id id) {
    const ir::Inst& in = kernel.insts[id];
    if (in.op != ir::Op::TgAlloc || !in.has(ir::Attr::CountParam)) return;
    const size_t sc = size_t(in.attr(ir::Attr::CountParam));
    if (sc < np && m->fixed[sc].empty())
      m->fixed[sc] = "it sizes threadgroup array '" + kernel.strings[size_t(in.attr(ir::Attr::Name))] + "'";
  });
  m->device = device_->prepare(*m->compiled, args, grid, threadgroup);
  PreparedLaunch out;
  out.impl_ = std::move(m);
  return out;
}

Timing Context::time_sequence(const std::vector<SequenceLaunch>& seq, const TimingOptions& opts) {
  if (opts.warmup < 0 || opts.samples <= 0)
    throw Error("timing needs warmup >= 0 and samples > 0 (got " + std::to_string(opts.warmup) + ", " +
                std::to_string(opts.samples) + ")");
  if (seq.empty()) throw Error("timing of an empty launch sequence");
  if (opts.flush_l2_read && device_->info().backend != Backend::Cuda && device_->info().backend != Backend::Interp)
    throw Error(std::string("timing with the read L2 flush (--flush-l2-read) is implemented on CUDA only, not on ") +
                backend_name(device_->info().backend) + " (use --flush-l2, the written flush)");
  // Every launch is validated (and its pipeline built) before the first one is timed.
  std::vector<rt::LaunchArgs> args(seq.size());
  std::vector<rt::Device::TimedLaunch> timed;
  std::vector<std::shared_ptr<rt::CompiledKernel>> held;  // keeps every pipeline alive while timing
  std::string report;
  for (size_t i = 0; i < seq.size(); ++i) {
    const SequenceLaunch& l = seq[i];
    if (!l.kernel) throw Error("timing: launch " + std::to_string(i + 1) + " of the sequence names no kernel");
    const Instantiation dtype = normalize(*l.kernel, l.dtype);
    Prepared p = prepare(*l.kernel, dtype, l.threadgroup, true);
    check(device_->info(), *l.kernel,
          CheckFacts{p.lane_ops, p.dtypes_used, p.shared_bytes, p.dynamic_tg, p.index_widths, p.skip_facts}, dtype,
          l.buffers, l.constexprs, l.grid, l.threadgroup, &args[i], device_.get());
    if (!p.compiled) held.push_back(pipeline(*l.kernel, dtype, l.threadgroup, p, spec_values(*l.kernel, args[i])));
    rt::CompiledKernel& compiled = p.compiled ? *p.compiled : *held.back();
    timed.push_back({&compiled, &args[i], l.grid, l.threadgroup});
    std::string r = device_->compile_report(compiled);
    if (!r.empty()) report += (report.empty() ? "" : "\n") + r;
  }
  Timing t;
  t.samples_us = device_->time_sequence(timed, opts);
  t.compile_report = report;
  return t;
}

Timing Context::time_dispatch(const ir::Kernel& kernel, Instantiation dtype, const Bindings& buffers,
                              const Constexprs& constexprs, Dim3 grid, Dim3 threadgroup, const TimingOptions& opts) {
  return time_sequence({SequenceLaunch{&kernel, dtype, buffers, constexprs, grid, threadgroup}}, opts);
}

}  // namespace iron
