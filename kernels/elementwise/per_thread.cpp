// The elementwise families' launch (per_thread.hpp): one step, ceil(n / 8) threads.
#include "per_thread.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace iron::kernels {

namespace {
// A dtype the device cannot hold in buffers: 16-bit floats without f16 / bf16 support, fp8
// without 8-bit storage.
bool stores(const DeviceInfo& dev, DType t) {
  if (t == DType::F16) return dev.f16;
  if (t == DType::BF16) return dev.bf16;
  if (t == DType::F8E4M3 || t == DType::F8E5M2) return dev.int8;
  return true;
}
}  // namespace

LaunchPlan per_thread_plan(const char* family, const char* kernel, const Call& call, const DeviceInfo& dev) {
  const int64_t n = call.size("n");
  const std::string who = std::string(family) + ": n = " + std::to_string(n);
  if (n == 0 || n > int64_t(UINT32_MAX)) throw Error(who + ": needs 1 <= n < 2^32 (a 32-bit element index)");
  for (DType t : {call.dtype.t, call.dtype.w})
    if (t != DType::Void && !stores(dev, t))
      throw Error(std::string(family) + ": the device " + dev.name + " has no " + dtype_name(t) + " buffers");
  const uint32_t tg = std::min<uint32_t>(256, dev.max_threads_per_group);
  const uint32_t groups = groups_for(uint32_t(n), tg);
  if (groups > dev.max_grid.x)
    throw Error(who + ": needs " + std::to_string(groups) + " threadgroups of " + std::to_string(tg) +
                " (8 elements per thread), more than the device's grid width " + std::to_string(dev.max_grid.x));
  LaunchPlan plan;
  plan.steps.push_back({kernel, {groups, 1, 1}, {tg, 1, 1}, {{"n", uint32_t(n)}}, {}});
  plan.reason = "8 elements per thread (16-byte accesses), " + std::to_string(tg) + " threads per threadgroup";
  return plan;
}

void host_ranges(size_t n, const std::function<void(size_t, size_t)>& range) {
  const size_t workers = std::min<size_t>(16, std::max(1u, std::thread::hardware_concurrency()));
  if (n < (size_t(1) << 22) || workers == 1) return range(0, n);
  const size_t chunk = (n + workers - 1) / workers;
  std::vector<std::thread> pool;
  for (size_t begin = 0; begin < n; begin += chunk) pool.emplace_back(range, begin, std::min(n, begin + chunk));
  for (std::thread& t : pool) t.join();
}

}  // namespace iron::kernels
