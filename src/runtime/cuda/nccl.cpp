// Collectives across GPUs through NCCL (include/iron/collective.hpp). libnccl is opened with
// dlopen at first use and never linked, so Iron builds and starts where it is absent and says so.
// The few declarations used are our own, with the values of NCCL's public nccl.h (ABI, stable
// since NCCL 2.0; bf16 and ncclAvg since 2.10).
#include "iron/collective.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device.hpp"

namespace iron {
namespace {

using ncclResult_t = int;  // enum; ncclSuccess = 0
using ncclComm_t = struct ncclComm*;
using ncclDataType_t = int;
using ncclRedOp_t = int;
constexpr ncclResult_t ncclSuccess = 0;
// ncclDataType_t
constexpr ncclDataType_t ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
                         ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9;
// ncclRedOp_t
constexpr ncclRedOp_t ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4;

struct Nccl {
  NcclLibrary info;
  int code = 0;  // ncclGetVersion's number: 22703 for 2.27.3
  ncclResult_t (*GetVersion)(int*) = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  const char* (*GetLastError)(ncclComm_t) = nullptr;  // NCCL 2.13+; may be absent
  ncclResult_t (*CommInitAll)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, void*) = nullptr;
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, void*) = nullptr;

  std::string describe(ncclResult_t r, ncclComm_t comm = nullptr) const {
    std::string s = std::to_string(r);
    if (const char* t = GetErrorString ? GetErrorString(r) : nullptr) s += std::string(" (") + t + ")";
    if (const char* last = GetLastError ? GetLastError(comm) : nullptr; last && *last) s += ": " + std::string(last);
    return s;
  }
  void check(ncclResult_t r, const char* what, ncclComm_t comm = nullptr) const {
    if (r != ncclSuccess) throw Error(std::string("NCCL ") + what + " failed: " + describe(r, comm));
  }
};

// Candidate files for libnccl.so.2 in Python's site-packages (the nvidia-nccl-cu12/cu13 wheel
// PyTorch depends on), most specific first.
std::vector<std::string> wheel_candidates() {
  std::vector<std::string> patterns;
  auto add_dir = [&](const std::string& dir) {
    if (!dir.empty()) patterns.push_back(dir + "/nvidia/nccl/lib/libnccl.so.2");
  };
  if (const char* pp = std::getenv("PYTHONPATH")) {
    std::string all = pp;
    for (size_t at = 0; at <= all.size();) {
      const size_t colon = all.find(':', at);
      add_dir(all.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
      if (colon == std::string::npos) break;
      at = colon + 1;
    }
  }
  for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* root = std::getenv(env); root && *root) add_dir(std::string(root) + "/lib/python3*/site-packages");
  if (const char* home = std::getenv("HOME"); home && *home) add_dir(std::string(home) + "/.local/lib/python3*/site-packages");
  for (const char* dir : {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                          "/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages",
                          "/opt/conda/lib/python3*/site-packages"})
    add_dir(dir);
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    glob_t g{};
    if (::glob(p.c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  return out;
}

// The directory Python itself reports for the nvidia.nccl package (a last resort: a Python the
// patterns above miss). Empty when there is no python3 or no such package.
std::string python_reported_candidate() {
  FILE* f = ::popen("python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null", "r");
  if (!f) return {};
  char line[4096] = {0};
  std::string dir;
  if (std::fgets(line, sizeof line, f)) dir = line;
  ::pclose(f);
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  return dir.empty() ? std::string() : dir + "/lib/libnccl.so.2";
}

Nccl load_nccl() {
  Nccl n;
  std::vector<std::string> tried;
  void* lib = nullptr;
  std::string path;
  auto attempt = [&](const std::string& name) {
    if (lib) return;
    lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) path = name;
    else tried.push_back(name);
  };
  const char* forced = std::getenv("IRON_NCCL_LIBRARY");
  if (forced && *forced) {
    attempt(forced);
    if (!lib) {
      const char* err = ::dlerror();
      n.info.why = "NCCL not available: IRON_NCCL_LIBRARY='" + std::string(forced) + "' cannot be opened" +
                   (err ? std::string(" (") + err + ")" : std::string());
      return n;
    }
  }
  attempt("libnccl.so.2");
  attempt("libnccl.so");
  for (const std::string& c : wheel_candidates()) attempt(c);
  if (!lib) {
    const std::string c = python_reported_candidate();
    if (!c.empty()) attempt(c);
  }
  if (!lib) {
    std::string list;
    for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
    n.info.why = "NCCL not available: no libnccl found (tried " + list +
                 "; install NCCL or the nvidia-nccl wheel, or set IRON_NCCL_LIBRARY to the library's path)";
    return n;
  }
  Dl_info where{};
  std::string missing;
  auto sym = [&](auto& fn, const char* name, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    if (!fn && required) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  sym(n.GetVersion, "ncclGetVersion", true);
  sym(n.GetErrorString, "ncclGetErrorString", true);
  sym(n.GetLastError, "ncclGetLastError", false);
  sym(n.CommInitAll, "ncclCommInitAll", true);
  sym(n.CommDestroy, "ncclCommDestroy", true);
  sym(n.GroupStart, "ncclGroupStart", true);
  sym(n.GroupEnd, "ncclGroupEnd", true);
  sym(n.AllReduce, "ncclAllReduce", true);
  sym(n.AllGather, "ncclAllGather", true);
  if (n.GetVersion && ::dladdr(reinterpret_cast<void*>(n.GetVersion), &where) && where.dli_fname) path = where.dli_fname;
  n.info.path = path;
  if (!missing.empty()) {
    n.info.why = "NCCL not available: " + path + " lacks " + missing;
    return n;
  }
  if (n.GetVersion(&n.code) != ncclSuccess) {
    n.info.why = "NCCL not available: ncclGetVersion failed in " + path;
    return n;
  }
  const int major = n.code >= 10000 ? n.code / 10000 : n.code / 1000;
  const int minor = n.code >= 10000 ? (n.code % 10000) / 100 : (n.code % 1000) / 100;
  n.info.version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(n.code % 100);
  if (n.code < 21000) {  // 2.10: bf16 and ncclAvg
    n.info.why = "NCCL not available: " + path + " is NCCL " + n.info.version + "; Iron needs 2.10 or later";
    return n;
  }
  n.info.available = true;
  return n;
}

const Nccl& nccl() {
  static const Nccl n = load_nccl();  // once per process; a library does not appear mid-run
  return n;
}

bool reducible(DType d, ncclDataType_t& out) {
  switch (d) {
    case DType::I8: out = ncclInt8; return true;
    case DType::U8: out = ncclUint8; return true;
    case DType::I32: out = ncclInt32; return true;
    case DType::U32: out = ncclUint32; return true;
    case DType::I64: out = ncclInt64; return true;
    case DType::U64: out = ncclUint64; return true;
    case DType::F16: out = ncclFloat16; return true;
    case DType::F32: out = ncclFloat32; return true;
    case DType::BF16: out = ncclBfloat16; return true;
    default: return false;
  }
}

// Whether two bound ranges share bytes.
bool overlap(const DeviceBuffer& a, const DeviceBuffer& b) {
  if (a.impl() != b.impl()) return false;
  const uint64_t a0 = a.offset_bytes(), b0 = b.offset_bytes();
  return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Avg: return "avg";
  }
  return "?";
}

const NcclLibrary& nccl_library() { return nccl().info; }

rt::Device& Collective::device_of(Context& ctx) { return *ctx.device_; }
int Collective::index_of(const Context& ctx) { return ctx.device_index_; }
rt::StreamImpl* Collective::stream_of(const Context& ctx, const Stream& s, const char* what) { return ctx.own(s, what); }

struct Collective::Impl {
  std::vector<Context*> ctxs;
  std::vector<ncclComm_t> comms;

  // One rank's operands, checked: the device pointers and the stream.
  struct Rank {
    const void* send = nullptr;
    void* recv = nullptr;
    void* stream = nullptr;
    rt::StreamImpl* iron_stream = nullptr;
  };

  [[noreturn]] static void fail(const char* op, const std::string& problem) {
    throw Error(std::string("invalid ") + op + ": " + problem);
  }

  std::vector<Rank> operands(const char* op, const std::vector<DeviceBuffer>& send, const std::vector<DeviceBuffer>& recv,
                             const std::vector<Stream>& streams, uint64_t recv_factor) const {
    const size_t n = ctxs.size();
    if (send.size() != n || recv.size() != n)
      fail(op, "one send and one recv buffer per rank: " + std::to_string(n) + " ranks, " + std::to_string(send.size()) +
                   " send and " + std::to_string(recv.size()) + " recv buffers");
    if (!streams.empty() && streams.size() != n)
      fail(op, std::to_string(streams.size()) + " streams for " + std::to_string(n) + " ranks (give one per rank, or none)");
    std::vector<Rank> out(n);
    for (size_t r = 0; r < n; ++r) {
      const std::string rank = "rank " + std::to_string(r);
      if (!send[r] || !recv[r]) fail(op, rank + ": an empty DeviceBuffer");
      if (send[r].stride() != 1 || recv[r].stride() != 1) fail(op, rank + ": a strided view (NCCL takes contiguous buffers)");
      if (send[r].dtype() != send[0].dtype() || recv[r].dtype() != send[0].dtype())
        fail(op, rank + ": buffers of " + dtype_name(send[r].dtype()) + " and " + dtype_name(recv[r].dtype()) +
                     " where rank 0 sends " + dtype_name(send[0].dtype()) + " (one dtype for every buffer)");
      if (send[r].count() != send[0].count())
        fail(op, rank + " sends " + std::to_string(send[r].count()) + " elements, rank 0 " +
                     std::to_string(send[0].count()) + " (every rank sends the same count)");
      const uint64_t need = uint64_t(send[0].count()) * recv_factor;
      if (recv[r].count() < need)
        fail(op, rank + ": recv holds " + std::to_string(recv[r].count()) + " elements; the result has " +
                     std::to_string(need));
      // In place: recv's part of this rank is send itself. Any other overlap is refused.
      const uint64_t part = recv_factor == 1 ? 0 : r * send[0].bytes();
      const bool in_place = send[r].impl() == recv[r].impl() && send[r].offset_bytes() == recv[r].offset_bytes() + part;
      if (overlap(send[r], recv[r]) && !in_place)
        fail(op, rank + ": send and recv overlap without being in place (" +
                     std::string(recv_factor == 1 ? "the same range" : "send at this rank's part of recv") + ")");
      Context& c = *ctxs[r];
      rt::Device& dev = device_of(c);
      try {
        out[r].send = static_cast<const char*>(dev.address(*send[r].impl())) + send[r].offset_bytes();
        out[r].recv = static_cast<char*>(dev.address(*recv[r].impl())) + recv[r].offset_bytes();
      } catch (const Error& e) {
        fail(op, rank + ": a buffer that is not of that rank's Context (CUDA device " + std::to_string(index_of(c)) +
                     "): " + e.what());
      }
      out[r].iron_stream = streams.empty() ? nullptr : stream_of(c, streams[r], op);
      out[r].stream = dev.native_stream(out[r].iron_stream);
    }
    return out;
  }

  // Runs one call per rank inside an NCCL group (one thread drives every device), then marks the
  // buffers as used on each rank's stream so a download waits for the collective.
  template <class Fn>
  void grouped(const char* what, const std::vector<Rank>& ranks, const std::vector<DeviceBuffer>& send,
               const std::vector<DeviceBuffer>& recv, Fn&& call) {
    const Nccl& lib = nccl();
    lib.check(lib.GroupStart(), "ncclGroupStart");
    ncclResult_t first = ncclSuccess;
    size_t bad = 0;
    for (size_t r = 0; r < ranks.size() && first == ncclSuccess; ++r) {
      first = call(r);
      bad = r;
    }
    const ncclResult_t end = lib.GroupEnd();
    if (first != ncclSuccess)
      throw Error(std::string("NCCL ") + what + " failed on rank " + std::to_string(bad) + ": " + lib.describe(first, comms[bad]));
    lib.check(end, "ncclGroupEnd", comms[0]);
    for (size_t r = 0; r < ranks.size(); ++r)
      for (rt::BufferImpl* b : {send[r].impl(), recv[r].impl()}) b->last_stream = ranks[r].iron_stream, b->last_ticket = 1;
  }
};

std::unique_ptr<Collective> Collective::create(const std::vector<Context*>& contexts) {
  const Nccl& lib = nccl();
  if (!lib.info.available) throw Error(lib.info.why);
  if (contexts.size() < 2)
    throw Error("needs two GPUs: a collective joins at least two CUDA Contexts (given " + std::to_string(contexts.size()) +
                ")");
  std::vector<int> devices;
  for (size_t r = 0; r < contexts.size(); ++r) {
    Context* c = contexts[r];
    if (!c) throw Error("Collective::create: Context " + std::to_string(r) + " is null");
    if (c->info().backend != Backend::Cuda)
      throw Error("Collective::create: Context " + std::to_string(r) + " is a " + backend_name(c->info().backend) +
                  " Context; NCCL joins CUDA devices only");
    const int d = index_of(*c);
    for (size_t q = 0; q < devices.size(); ++q)
      if (devices[q] == d)
        throw Error("Collective::create: Contexts " + std::to_string(q) + " and " + std::to_string(r) +
                    " are both CUDA device " + std::to_string(d) + " (one Context per device)");
    devices.push_back(d);
  }
  std::unique_ptr<Collective> out(new Collective());
  out->impl_ = std::make_unique<Impl>();
  out->impl_->ctxs = contexts;
  out->impl_->comms.assign(contexts.size(), nullptr);
  lib.check(lib.CommInitAll(out->impl_->comms.data(), int(devices.size()), devices.data()), "ncclCommInitAll");
  return out;
}

Collective::~Collective() {
  if (!impl_) return;
  for (ncclComm_t c : impl_->comms)
    if (c) nccl().CommDestroy(c);  // errors at teardown are ignored
}

int Collective::size() const { return int(impl_->ctxs.size()); }

void Collective::all_reduce(const std::vector<DeviceBuffer>& send, const std::vector<DeviceBuffer>& recv, ReduceOp op,
                            const std::vector<Stream>& streams) {
  std::vector<Impl::Rank> ranks = impl_->operands("all_reduce", send, recv, streams, 1);
  ncclDataType_t t = 0;
  if (!reducible(send[0].dtype(), t))
    Impl::fail("all_reduce", std::string("NCCL reduces no ") + dtype_name(send[0].dtype()) +
                                 " (f32, f16, bf16, i32, u32, i64, u64, i8 or u8)");
  const bool is_float = send[0].dtype() == DType::F32 || send[0].dtype() == DType::F16 || send[0].dtype() == DType::BF16;
  if (op == ReduceOp::Avg && !is_float)
    Impl::fail("all_reduce", std::string("avg of ") + dtype_name(send[0].dtype()) + " (avg is for float dtypes)");
  const ncclRedOp_t o = op == ReduceOp::Sum ? ncclSum : op == ReduceOp::Prod ? ncclProd : op == ReduceOp::Min ? ncclMin
                        : op == ReduceOp::Max ? ncclMax : ncclAvg;
  const size_t count = send[0].count();
  const Nccl& lib = nccl();
  impl_->grouped("ncclAllReduce", ranks, send, recv, [&](size_t r) {
    return lib.AllReduce(ranks[r].send, ranks[r].recv, count, t, o, impl_->comms[r], ranks[r].stream);
  });
}

void Collective::all_gather(const std::vector<DeviceBuffer>& send, const std::vector<DeviceBuffer>& recv,
                            const std::vector<Stream>& streams) {
  std::vector<Impl::Rank> ranks = impl_->operands("all_gather", send, recv, streams, uint64_t(impl_->ctxs.size()));
  // A gather moves bytes: any dtype, as that many u8.
  const size_t bytes = send[0].bytes();
  const Nccl& lib = nccl();
  impl_->grouped("ncclAllGather", ranks, send, recv, [&](size_t r) {
    return lib.AllGather(ranks[r].send, ranks[r].recv, bytes, ncclUint8, impl_->comms[r], ranks[r].stream);
  });
}

}  // namespace iron
