// Shared shape of the elementwise kernels: each thread owns kElementsPerThread consecutive
// elements. A full run takes an unguarded path, which the vectorize pass turns into 128-bit
// accesses (8 halves, or 2 x 4 floats); the one partial run at the end of the buffer takes a
// per-element guarded path, which stays scalar. Dispatch: threads = ceil(n / 8).
#pragma once

#include <iron/iron.hpp>

namespace iron::kernels {

constexpr uint32_t kElementsPerThread = 8;

// Calls body(i) for each element index i this thread owns (host loop: unrolled at trace time).
// No index arithmetic can wrap for any n < 2^32: thread t owns a full run only when t < n / 8
// (so t * 8 + 7 < n), the one thread t == n / 8 owns the tail (guarded by e < n - base, with
// base <= n), and threads past it do nothing even when the grid overshoots. Test every tail
// length 0..7 (kTailCases): each guard `e < left` is only exercised by a tail longer than e.
inline void for_each_owned_element(dsl::Expr n, dsl::FnRef<void(dsl::Expr)> body) {
  using namespace iron::dsl;
  Expr tid = thread_id(0);
  Expr full_runs = n / kElementsPerThread;
  Expr base = tid * kElementsPerThread;  // a multiple of 8: the vector groups are aligned
  if_(tid < full_runs, [&] {
    for (uint32_t e = 0; e < kElementsPerThread; ++e) body(base + e);
  }).else_([&] {
    if_(tid == full_runs, [&] {
      Expr left = n - base;
      // left = n % 8 <= 7, so the tail has at most 7 elements: an eighth guard could never pass
      // (mutation testing found it as dead code).
      for (uint32_t e = 0; e + 1 < kElementsPerThread; ++e) if_(e < left, [&] { body(base + e); });
    });
  });
}

// Threadgroups for n elements at `tg` threads each.
inline uint32_t groups_for(uint32_t n, uint32_t tg) {
  uint32_t threads = (n + kElementsPerThread - 1) / kElementsPerThread;
  return (threads + tg - 1) / tg;
}

}  // namespace iron::kernels
