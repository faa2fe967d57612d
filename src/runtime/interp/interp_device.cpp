// The interpreter backend: a Device whose buffers are host memory and whose "compile" keeps a
// verified copy of the IR, so the whole corpus runs without a GPU and barriers, threadgroup
// memory and lane reductions are checked exactly. The lane width comes from
// IRON_INTERP_LANE_WIDTH (4..64, default 32) so kernels can be tested at other subgroup sizes.
// Its memory (the most one allocation may take) is 1 GiB unless IRON_INTERP_MEMORY_BYTES says
// otherwise (a buffer beyond 2^32 elements needs more).
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "passes/interpreter.hpp"
#include "runtime/device.hpp"

namespace iron::rt {
namespace {

uint32_t lane_width_from_env() {
  const char* env = std::getenv("IRON_INTERP_LANE_WIDTH");
  if (!env || !*env) return 32;
  std::string s = env;
  for (uint32_t w : {4u, 8u, 16u, 32u, 64u})
    if (s == std::to_string(w)) return w;
  throw Error("IRON_INTERP_LANE_WIDTH='" + s + "' is not a supported lane width (use 4, 8, 16, 32 or 64)");
}

uint64_t memory_from_env() {
  const char* env = std::getenv("IRON_INTERP_MEMORY_BYTES");
  if (!env || !*env) return uint64_t(1) << 30;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || *end != '\0' || v == 0 || env[0] == '-')
    throw Error("IRON_INTERP_MEMORY_BYTES='" + std::string(env) + "' is not a positive whole number of bytes");
  return v;
}

DeviceInfo interp_info() {
  DeviceInfo d;
  d.backend = Backend::Interp;
  d.name = "Iron SIMT interpreter";
  d.driver = "iron-interp";
  d.arch = "simt";
  d.lane_width = lane_width_from_env();
  d.max_threads_per_group = 1024;
  d.max_group_size = {1024, 1024, 64};
  d.max_grid = {2147483647u, 65535, 65535};
  d.shared_memory_bytes = 49152;
  // Like a GPU with opt-in threadgroup memory (the H200's limit), so kernels that need more than
  // 48 KiB run here too.
  d.shared_memory_optin_bytes = 232448;
  d.memory_bytes = memory_from_env();
  d.f16 = true;
  d.bf16 = true;
  return d;
}

// The owner tag of every interpreter buffer (see BufferImpl::owner). Interpreter buffers are plain
// host memory, so buffers of one interpreter device work on any other.
const char kInterpOwner = 0;

struct InterpBuffer final : BufferImpl {
  std::vector<unsigned char> data;
};

struct InterpKernel final : CompiledKernel {
  ir::Kernel kernel;
  Instantiation dtype = DType::F32;
};

class InterpDevice final : public Device {
 public:
  InterpDevice() : info_(interp_info()) {}

  const DeviceInfo& info() const override { return info_; }

  std::unique_ptr<BufferImpl> alloc(size_t bytes) override {
    if (bytes > info_.memory_bytes)
      throw Error("interpreter allocation of " + std::to_string(bytes) + " bytes exceeds its " +
                  std::to_string(info_.memory_bytes) + "-byte memory");
    auto b = std::make_unique<InterpBuffer>();
    b->owner = &kInterpOwner;
    b->bytes = bytes;
    b->data.assign(bytes, 0);
    return b;
  }

  void upload(BufferImpl& buf, const void* data, size_t bytes) override {
    auto& b = static_cast<InterpBuffer&>(buf);
    if (bytes) std::memcpy(b.data.data(), data, std::min(bytes, b.data.size()));
  }

  void download(BufferImpl& buf, void* data, size_t bytes) override {
    auto& b = static_cast<InterpBuffer&>(buf);
    if (bytes) std::memcpy(data, b.data.data(), std::min(bytes, b.data.size()));
  }

  // The interpreter trusts its IR (ids in range, scoping, types), so it is verified once here.
  std::unique_ptr<CompiledKernel> compile(const ir::Kernel& k, Instantiation dtype, Dim3) override {
    ir::Diagnostics diags;
    if (!ir::verify(k, diags)) throw Error("kernel " + k.name + " does not verify:\n" + diags.render(k));
    auto c = std::make_unique<InterpKernel>();
    c->kernel = k;
    c->dtype = dtype;
    c->source = ir::print(k);
    return c;
  }

  bool pipeline_depends_on_threadgroup() const override { return false; }

  // No disk cache: the interpreter's "binary" is the IR itself, and reading it back (parse +
  // verify) would cost what compile() costs. The empty fingerprint tells Context so; compile()
  // leaves CompiledKernel::binary empty, and the default load() is never called.
  std::string cache_fingerprint() const override { return {}; }

  void launch(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup) override {
    auto& c = static_cast<InterpKernel&>(kernel);
    thread_local std::vector<interp::BufferArg> buffers;  // reused: launches may run on several threads
    buffers.clear();
    for (BufferImpl* b : args.buffers) {
      auto* ib = static_cast<InterpBuffer*>(b);
      buffers.push_back({ib->data.data(), ib->data.size()});
    }
    interp::Options opts;
    opts.lane_width = info_.lane_width;
    opts.uninitialized_tg_reads_are_errors = true;  // kernels run here must not read undefined memory
    interp::run(c.kernel, c.dtype, buffers, args.scalars, grid, threadgroup, opts);
  }

  void synchronize() override {}

  // The interpreter runs on the calling thread, so the host's steady clock around launch() is
  // its honest device clock: each sample covers exactly one interpreter run (buffer views and
  // options are built inside launch(), a negligible part of a run). There is no cache to flush
  // in a meaningful sense, so flush_l2 is ignored.
  std::vector<double> time_launches(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup,
                                    const TimingOptions& opts) override {
    for (int i = 0; i < opts.warmup; ++i) launch(kernel, args, grid, threadgroup);
    std::vector<double> us;
    us.reserve(size_t(opts.samples > 0 ? opts.samples : 0));
    for (int i = 0; i < opts.samples; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      launch(kernel, args, grid, threadgroup);
      const auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return us;
  }

 private:
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<Device> make_interp_device(int index) {
  if (index != 0) throw Error("no interpreter device " + std::to_string(index) + " (there is one, index 0)");
  return std::make_unique<InterpDevice>();
}

std::vector<DeviceInfo> list_interp_devices(std::string* why) {
  try {
    return {interp_info()};
  } catch (const Error& e) {
    if (why) *why = e.what();
    return {};
  }
}

}  // namespace iron::rt
