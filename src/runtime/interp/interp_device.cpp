// The interpreter backend: a Device whose buffers are host memory and whose "compile" keeps a
// verified copy of the IR, so the whole corpus runs without a GPU and barriers, threadgroup
// memory and lane reductions are checked exactly. The lane width comes from
// IRON_INTERP_LANE_WIDTH (4..64, default 32) so kernels can be tested at other subgroup sizes.
// Its memory (the most one allocation may take) is 1 GiB unless IRON_INTERP_MEMORY_BYTES says
// otherwise (a buffer beyond 2^32 elements needs more).
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
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
  d.compute_units = 1;
  d.f16 = true;
  d.bf16 = true;
  return d;
}

// The owner tag of every interpreter buffer (see BufferImpl::owner). Interpreter buffers are plain
// host memory, so buffers of one interpreter device work on any other.
const char kInterpOwner = 0;

// A stream of the interpreter: a worker thread running its launches in order. Tickets count
// the launches issued on it; `done` is the ticket of the last one finished.
struct InterpStream final : StreamImpl {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<uint64_t, std::function<void()>>> queue;
  uint64_t issued = 0, done = 0;
  bool stop = false;
  std::thread worker;

  InterpStream() : worker([this] { run(); }) {}
  ~InterpStream() override {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }
  uint64_t push(std::function<void()> task) {
    std::lock_guard lock(mu);
    const uint64_t ticket = ++issued;
    queue.emplace_back(ticket, std::move(task));
    cv.notify_all();
    return ticket;
  }
  void wait(uint64_t ticket) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done >= ticket; });
  }
  bool reached(uint64_t ticket) {
    std::lock_guard lock(mu);
    return done >= ticket;
  }
  void run() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and everything issued has run
      const uint64_t ticket = queue.front().first;
      std::function<void()> task = std::move(queue.front().second);
      queue.pop_front();
      lock.unlock();
      task();  // never throws: launch tasks keep their errors (InterpShared::fail)
      task = nullptr;  // what it holds goes before the ticket counts as done
      lock.lock();
      done = ticket;
      cv.notify_all();
    }
  }
};

// What the device, its buffers and its streams share: the streams (alive while any buffer may
// still name one) and the first error a launch on a stream raised, reported by the next wait.
struct InterpShared {
  std::mutex mu;
  std::vector<std::unique_ptr<InterpStream>> streams;
  std::string error;
  void fail(const std::string& what) {
    std::lock_guard lock(mu);
    if (error.empty()) error = what;
  }
  void rethrow() {
    std::string e;
    {
      std::lock_guard lock(mu);
      e.swap(error);
    }
    if (!e.empty()) throw Error(e);
  }
  ~InterpShared() {
    // Joined before the buffers' memory goes: the last owner (a buffer or the device) runs this.
    streams.clear();
  }
};

struct InterpEvent final : EventImpl {
  InterpStream* stream = nullptr;  // null: the default stream, whose work is done when recorded
  uint64_t ticket = 0;
};

struct InterpBuffer final : BufferImpl {
  std::shared_ptr<InterpShared> shared;
  std::vector<unsigned char> storage;  // its memory, unless it wraps someone else's
  unsigned char* data = nullptr;
  size_t size = 0;
  // Work in flight that uses this buffer finishes first.
  void wait_idle() {
    if (last_stream && last_ticket) static_cast<InterpStream*>(last_stream)->wait(last_ticket);
  }
  ~InterpBuffer() override { wait_idle(); }
};

struct InterpKernel final : CompiledKernel {
  ir::Kernel kernel;
  Instantiation dtype = DType::F32;
};

class InterpDevice final : public Device {
 public:
  InterpDevice() : info_(interp_info()), shared_(std::make_shared<InterpShared>()) {}
  ~InterpDevice() override {
    try {
      synchronize();
    } catch (const std::exception&) {
      // an error nobody waited for: dropped with the device
    }
  }
  using Device::download;
  using Device::launch;
  using Device::upload;

  const DeviceInfo& info() const override { return info_; }

  std::unique_ptr<BufferImpl> alloc(size_t bytes) override {
    if (bytes > info_.memory_bytes)
      throw Error("interpreter allocation of " + std::to_string(bytes) + " bytes exceeds its " +
                  std::to_string(info_.memory_bytes) + "-byte memory");
    auto b = std::make_unique<InterpBuffer>();
    b->shared = shared_;
    b->owner = &kInterpOwner;
    b->bytes = bytes;
    b->storage.assign(bytes, 0);
    b->data = b->storage.data();
    b->size = bytes;
    return b;
  }

  // Host memory someone else owns: the interpreter addresses it in place.
  std::unique_ptr<BufferImpl> wrap(void* ptr, size_t bytes) override {
    auto b = std::make_unique<InterpBuffer>();
    b->shared = shared_;
    b->owner = &kInterpOwner;
    b->bytes = bytes;
    b->data = static_cast<unsigned char*>(ptr);
    b->size = bytes;
    const uintptr_t at = reinterpret_cast<uintptr_t>(ptr);
    b->align = at ? std::min<uint64_t>(at & (~at + 1), 256) : 256;
    return b;
  }
  void* address(BufferImpl& buf) override { return static_cast<InterpBuffer&>(buf).data; }

  // Both wait for the launches in flight that use the buffer, then copy on the calling thread.
  void upload(BufferImpl& buf, size_t offset, const void* data, size_t bytes, StreamImpl*) override {
    auto& b = static_cast<InterpBuffer&>(buf);
    b.wait_idle();
    if (bytes && offset < b.size) std::memcpy(b.data + offset, data, std::min(bytes, b.size - offset));
  }

  void download(BufferImpl& buf, size_t offset, void* data, size_t bytes) override {
    auto& b = static_cast<InterpBuffer&>(buf);
    b.wait_idle();
    shared_->rethrow();
    if (bytes && offset < b.size) std::memcpy(data, b.data + offset, std::min(bytes, b.size - offset));
  }

  StreamImpl* create_stream() override {
    std::lock_guard lock(shared_->mu);
    shared_->streams.push_back(std::make_unique<InterpStream>());
    return shared_->streams.back().get();
  }

  std::shared_ptr<EventImpl> record_event(StreamImpl* stream) override {
    auto e = std::make_shared<InterpEvent>();
    if (auto* s = static_cast<InterpStream*>(stream)) {
      std::lock_guard lock(s->mu);
      e->stream = s;
      e->ticket = s->issued;
    }
    return e;
  }

  std::shared_ptr<EventImpl> buffer_event(BufferImpl& buf) override {
    auto e = std::make_shared<InterpEvent>();
    e->stream = static_cast<InterpStream*>(buf.last_stream);
    e->ticket = buf.last_ticket;
    return e;
  }

  void wait_event(StreamImpl* waiter, EventImpl& event) override {
    auto& e = static_cast<InterpEvent&>(event);
    if (!e.stream || e.stream == waiter) return;  // done already, or ordered by the stream itself
    if (!waiter) {
      e.stream->wait(e.ticket);  // the default stream runs on this thread: wait here
      return;
    }
    InterpStream* s = e.stream;
    const uint64_t t = e.ticket;
    static_cast<InterpStream*>(waiter)->push([s, t] { s->wait(t); });
  }

  bool event_done(EventImpl& event) override {
    auto& e = static_cast<InterpEvent&>(event);
    return !e.stream || e.stream->reached(e.ticket);
  }

  void synchronize_event(EventImpl& event) override {
    auto& e = static_cast<InterpEvent&>(event);
    if (e.stream) e.stream->wait(e.ticket);
    shared_->rethrow();
  }

  void synchronize_stream(StreamImpl* stream) override {
    if (auto* s = static_cast<InterpStream*>(stream)) {
      uint64_t t;
      {
        std::lock_guard lock(s->mu);
        t = s->issued;
      }
      s->wait(t);
    }
    shared_->rethrow();
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

  // The default stream runs the kernel now, on the calling thread (errors are thrown here); a
  // created stream queues it for its worker, with copies of the arguments.
  void launch(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup, StreamImpl* stream) override {
    auto& c = static_cast<InterpKernel&>(kernel);
    if (!stream) {
      for (BufferImpl* b : args.buffers) static_cast<InterpBuffer*>(b)->wait_idle();
      for (BufferImpl* b : args.blob_buffers)  // a tensor map's buffer is used like a bound one
        if (b) static_cast<InterpBuffer*>(b)->wait_idle();
      run(c, args, grid, threadgroup);
      for (BufferImpl* b : args.buffers) b->last_stream = nullptr, b->last_ticket = 0;
      for (BufferImpl* b : args.blob_buffers)
        if (b) b->last_stream = nullptr, b->last_ticket = 0;
      return;
    }
    auto* s = static_cast<InterpStream*>(stream);
    // A buffer last used on another stream: that work must be ordered by an event (as on every
    // backend); the launch does not wait for it.
    // The device, its kernels and shared_ outlive every task: Context and ~InterpDevice wait.
    InterpShared* shared = shared_.get();
    const uint64_t ticket = s->push([this, &c, shared, copy = args, grid, threadgroup] {
      try {
        run(c, copy, grid, threadgroup);
      } catch (const std::exception& e) {
        shared->fail(e.what());
      }
    });
    for (BufferImpl* b : args.buffers) b->last_stream = s, b->last_ticket = ticket;
    for (BufferImpl* b : args.blob_buffers)
      if (b) b->last_stream = s, b->last_ticket = ticket;
  }

  // A tensor map's description over the interpreter's memory of its buffer (Context checked
  // the map's rules; a view starts at its offset and ends with its bytes).
  static interp::TensorMapArg map_arg(const LaunchArgs::BlobMap& b) {
    const TensorMap& m = b.map;
    auto* ib = static_cast<InterpBuffer*>(m.buffer.impl());
    if (m.buffer.stride() != 1) throw Error("a tensor map over a strided view (the interpreter copies contiguous tensors)");
    interp::TensorMapArg a;
    const size_t off = std::min<size_t>(m.buffer.offset_bytes(), ib->size);
    a.data = ib->data + off;
    a.bytes = std::min<size_t>(ib->size - off, m.buffer.bytes());
    a.dtype = m.buffer.dtype();
    a.rank = uint32_t(std::min<size_t>(m.dims.size(), 5));
    for (uint32_t d = 0; d < a.rank; ++d) {
      a.dims[d] = m.dims[d];
      a.box[d] = d < m.box.size() ? m.box[d] : 1;
      a.strides[d] = d == 0 ? dtype_size(a.dtype) : b.strides[d - 1];
    }
    a.swizzle = m.swizzle == TensorMap::Swizzle::B32 ? 32 : m.swizzle == TensorMap::Swizzle::B64 ? 64
              : m.swizzle == TensorMap::Swizzle::B128 ? 128 : 0;
    return a;
  }

  // The interpreter has no driver to encode a map: its 128 bytes are zeros (a kernel reading
  // them is an error there), and the description travels beside them (LaunchArgs::blob_maps).
  void encode_tensor_map(const TensorMap&, const std::vector<uint64_t>&, uint8_t* out) const override {
    std::memset(out, 0, ir::kTensorMapBytes);
  }

  // Each buffer is bound from its offset for its bound length (a view's own bytes), so an access
  // past a view is a bounds fault even where the allocation goes on. A blob parameter is bound
  // to its bytes (the interpreter reads its u32 words).
  void run(InterpKernel& c, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup) const {
    thread_local std::vector<interp::BufferArg> buffers;  // reused: launches may run on several threads
    thread_local std::vector<interp::TensorMapArg> maps;
    buffers.clear();
    maps.assign(args.blob_maps.size(), {});
    size_t bi = 0, li = 0;
    for (uint8_t kind : args.is_buffer) {
      if (kind == kBlobParam) {
        buffers.push_back({const_cast<uint8_t*>(args.blob_data.data()) + args.blob_offsets[li], args.blob_sizes[li]});
        if (li < args.blob_maps.size() && args.blob_maps[li].map.buffer) buffers.back().map = &(maps[li] = map_arg(args.blob_maps[li]));
        ++li;
        continue;
      }
      if (!kind) continue;
      const size_t i = bi++;
      auto* ib = static_cast<InterpBuffer*>(args.buffers[i]);
      const size_t off = i < args.offsets.size() ? std::min<size_t>(args.offsets[i], ib->size) : 0;
      size_t len = ib->size - off;
      if (i < args.bound_bytes.size()) len = std::min<size_t>(len, args.bound_bytes[i]);
      buffers.push_back({ib->data + off, len, i < args.strides.size() ? args.strides[i] : 1});
    }
    interp::Options opts;
    opts.lane_width = info_.lane_width;
    opts.uninitialized_tg_reads_are_errors = true;  // kernels run here must not read undefined memory
    interp::run(c.kernel, c.dtype, buffers, args.scalars, grid, threadgroup, opts);
  }

  void synchronize() override {
    std::vector<InterpStream*> streams;
    {
      std::lock_guard lock(shared_->mu);
      for (auto& st : shared_->streams) streams.push_back(st.get());
    }
    for (InterpStream* st : streams) synchronize_stream(st);
    shared_->rethrow();
  }

  // The interpreter runs on the calling thread, so the host's steady clock around launch() is
  // its honest device clock: each sample covers exactly one interpreter run (buffer views and
  // options are built inside launch(), a negligible part of a run). There is no cache to flush
  // in a meaningful sense, so flush_l2 is ignored.
  std::vector<double> time_launches(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup,
                                    const TimingOptions& opts) override {
    synchronize();
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
  std::shared_ptr<InterpShared> shared_;
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
