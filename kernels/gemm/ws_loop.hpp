// The warp-specialized K loop of the warpgroup GEMMs (gemm.cpp's iron_gemm_128x256x64_wg_ws,
// gemm_fp8.cpp's iron_gemm_fp8_*_wg_ws; docs/gemm.md "The warp-specialized kernel"): warpgroup 0
// copies, the warpgroups after it multiply, and each of the `stages` stages of the ring has a
// `full` barrier (the copies landed) and an `empty` one (the products that read it retired).
#pragma once

#include <cstdint>
#include <functional>

#include <iron/iron.hpp>

namespace iron::kernels::gemm {

struct WsLoop {
  uint32_t stages = 0;          // stages in the ring
  dsl::Expr steps;              // K steps
  dsl::Operand full_arrivals = 1u;  // arrivals that complete a phase of full[s] (with the copies' bytes)
  uint32_t empty_arrivals = 0;  // arrivals that complete a phase of empty[s] (lane 0 of each consumer lane group)
  // True in the threads of warpgroup 0 that run the copy loop (built where the loop is).
  std::function<dsl::Expr()> producer;
  dsl::Expr consumer;  // true in the consumer lane groups that release stages
  // Step `step` into stage `stage`, completing on full[stage] (full_arrivals arrivals).
  std::function<void(const dsl::TgBuffer& full, dsl::Expr step, dsl::Expr stage)> produce;
  // Step `step`'s products from stage `stage`, which has landed; on return every product of the
  // step before is retired (its stage is handed back next).
  std::function<void(dsl::Expr step, dsl::Expr stage)> consume;
};

// Allocates and initializes the barriers (thread 0), then runs the two roles: warpgroup 0's
// `producer` threads fill stage s from round r >= 1 once empty[s] completes its phase (r - 1) % 2;
// every other lane group waits on full[s] (parity r % 2), runs `consume`, and lane 0 of each
// `consumer` lane group then arrives on the previous step's empty barrier. After the loop the
// consumers retire every product (wg_wait(0)) and a block barrier ends both roles. The stages
// need no block barrier inside the loop.
inline void ws_loop(const WsLoop& p) {
  using namespace dsl;
  const uint32_t stages = p.stages;
  TgBuffer full_bar = mbarrier_alloc("full", stages);
  TgBuffer empty_bar = mbarrier_alloc("empty", stages);
  if_(local_id(0) == 0u, [&] {
    for (uint32_t s = 0; s < stages; ++s) {
      mbar_init(full_bar[s], p.full_arrivals);
      mbar_init(empty_bar[s], p.empty_arrivals);
    }
  });
  barrier();
  if_(simd_group_id() < 4u, [&] {
    if_(p.producer(), [&] {
      for_(0u, p.steps, [&](Expr step) {
        Expr stage = step % stages;
        if_(step >= stages, [&] { mbar_wait(empty_bar[stage], (step / stages + 1u) % 2u); });
        p.produce(full_bar, step, stage);
      });
    });
  }).else_([&] {
    for_(0u, p.steps, [&](Expr step) {
      Expr stage = step % stages;
      mbar_wait(full_bar[stage], (step / stages) % 2u);
      p.consume(step, stage);
      // (Lane groups past the consumers, in a larger threadgroup, repeat rows and do not arrive.)
      if_(step >= 1u && lane_id() == 0u && p.consumer, [&] { mbar_arrive(empty_bar[(step + stages - 1u) % stages]); });
    });
    wg_wait(0);
  });
  barrier();
}

}  // namespace iron::kernels::gemm
