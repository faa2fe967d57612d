// Shared shape of the elementwise kernels: each thread owns kElementsPerThread consecutive
// elements. A full run takes an unguarded path, which the vectorize pass turns into 128-bit
// accesses (8 halves, or 2 x 4 floats); the one partial run at the end of the buffer takes a
// scalar loop to n. Dispatch: threads = ceil(n / 8).
#pragma once

#include <functional>

#include <iron/iron.hpp>

namespace iron::kernels {

constexpr uint32_t kElementsPerThread = 8;

// Calls body(i) for each element index i this thread owns. No index arithmetic can wrap for any
// n < 2^32: thread t owns a full run only when t < n / 8 (so t * 8 + 7 < n), the one thread
// t == n / 8 owns the n % 8 tail elements from base, and threads past it do nothing even when
// the grid overshoots. The full run is a loop with constant bounds, which the unroll pass
// flattens into 8 adjacent accesses at base + 0 .. base + 7 (vectorize makes them wide); the
// tail is a plain loop of n % 8 steps, which stays scalar. The traced body appears twice, not 15 times, so
// a kernel has few mutants; a case per tail length 0..7 still checks every tail.
inline void for_each_owned_element(dsl::Expr n, dsl::FnRef<void(dsl::Expr)> body) {
  using namespace iron::dsl;
  Expr tid = thread_id(0);
  Expr full_runs = n / kElementsPerThread;
  Expr base = tid * kElementsPerThread;  // a multiple of 8: the vector groups are aligned
  if_(tid < full_runs, [&] {
    for_(0u, kElementsPerThread, [&](Expr e) { body(base + e); });
  }).else_([&] {
    if_(tid == full_runs, [&] { for_(0u, n % kElementsPerThread, [&](Expr e) { body(base + e); }); });
  });
}

// The launch of the elementwise kernel `kernel` for a logical call {n}: ceil(n / 8) threads in
// threadgroups of 256 (or the device's limit). Refuses, naming the family and the value, n = 0
// or n >= 2^32 (the 32-bit index), a grid wider than the device's, and a 16-bit or fp8 dtype of
// the call (T, or W) that the device does not store. `family` is the selector's name.
LaunchPlan per_thread_plan(const char* family, const char* kernel, const Call& call, const DeviceInfo& dev);

// Host side, for the oracles of the 1 Gi element benches: calls range(begin, end) over [0, n) in
// chunks on up to 16 threads when n is large (2^22 and up), else once on this thread. Every
// output element is computed by one call, so the result does not depend on the split.
void host_ranges(size_t n, const std::function<void(size_t begin, size_t end)>& range);

// Threadgroups for n elements at `tg` threads each.
inline uint32_t groups_for(uint32_t n, uint32_t tg) {
  uint32_t threads = (n + kElementsPerThread - 1) / kElementsPerThread;
  return (threads + tg - 1) / tg;
}

}  // namespace iron::kernels
