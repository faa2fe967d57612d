// Collectives across the GPUs of one process: NCCL, opened at run time (never linked), over one
// CUDA Context per device. A Collective joins the Contexts it is given as ranks 0..n-1 (rank r
// is contexts[r]); each operation takes one buffer (or view) and one stream per rank, enqueues
// on those streams and returns, like a launch: a download of a result waits for it, and work on
// another stream needs an event first (include/iron/runtime.hpp, Stream).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "iron/runtime.hpp"

namespace iron {

enum class ReduceOp : uint8_t { Sum, Prod, Min, Max, Avg };
const char* reduce_op_name(ReduceOp op);

// Where libnccl was found and its version ("2.27.3"), or why it cannot be used: `why` then
// starts with "NCCL not available: ". Searched: $IRON_NCCL_LIBRARY (a path), libnccl.so.2 and
// libnccl.so on the loader's path, then nvidia/nccl/lib/libnccl.so.2 under the Python
// site-packages directories (the nvidia-nccl wheel that PyTorch installs).
struct NcclLibrary {
  bool available = false;
  std::string path;
  std::string version;
  std::string why;
};
const NcclLibrary& nccl_library();

class Collective {
 public:
  // A communicator over `contexts`: CUDA Contexts of distinct devices, at least two. Throws
  // iron::Error starting "NCCL not available: " when the library cannot be used, "needs two
  // GPUs: " for fewer than two Contexts, and naming the problem for a Context that is not CUDA,
  // two Contexts of one device, or an NCCL error.
  static std::unique_ptr<Collective> create(const std::vector<Context*>& contexts);
  ~Collective();
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  int size() const;

  // recv[r] = op over every rank q of send[q], element by element, on every rank r. All buffers
  // hold the same dtype (f32, f16, bf16, i32, u32, i64, u64, i8, u8) and recv[r] at least as many
  // elements as send[r]; send and recv of a rank may be the same buffer (in place). `streams`:
  // one per rank, of that rank's Context (empty: the default streams).
  void all_reduce(const std::vector<DeviceBuffer>& send, const std::vector<DeviceBuffer>& recv, ReduceOp op,
                  const std::vector<Stream>& streams = {});
  // recv[r] = the concatenation of send[0], ..., send[n-1] (each of the same count c) on every
  // rank r: rank q's part at elements [q * c, (q + 1) * c).
  void all_gather(const std::vector<DeviceBuffer>& send, const std::vector<DeviceBuffer>& recv,
                  const std::vector<Stream>& streams = {});

 private:
  Collective() = default;
  // What the implementation needs of a Context (Collective is its friend).
  static rt::Device& device_of(Context& ctx);
  static int index_of(const Context& ctx);
  static rt::StreamImpl* stream_of(const Context& ctx, const Stream& s, const char* what);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace iron
