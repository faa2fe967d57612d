// Warp-specialized kernels on the interpreter (docs/semantics.md "Divergent waits"): a producer
// warp and four consumer warps split at an if/else and hand a ring of stages back and forth
// through mbarriers. The interpreter suspends a branch at a wait whose phase is incomplete and
// runs the other branch until it completes the phase; the result is exact and the same on every
// run. Known-bad variants are located errors: a wrong parity and a missing arrival (deadlocks
// naming every blocked wait), a refill without waiting for the stage's release and a release
// before the reads (races), a barrier() inside one branch.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"

namespace iron {
namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

constexpr uint32_t kStages = 2, kSteps = 6, kBox = 128;  // kBox: f32 elements per stage
constexpr uint32_t kThreads = 32 + 128;                  // one producer warp, four consumer warps

enum class Bad { None, Parity, MissingArrival, NoEmptyWait, EarlyRelease, BarrierInBranch };
Bad g_bad = Bad::None;
bool g_tma = false;   // the producer fills a stage by one tensor-map copy (else: plain stores)
bool g_swap = false;  // the consumers are the then-branch
uint32_t g_groups = 1;

// x: kSteps boxes of kBox elements (plain stores read it; the tensor map views it as 32 x 4kSteps,
// box 32 x 4). Step k fills stage k mod 2; consumer c (local id 32 + c) adds element c ^ 1 of
// each stage it consumes: r[c] = sum over k of x[k kBox + (c ^ 1)].
void ring_body() {
  using namespace dsl;
  Buffer src = g_tma ? tensor_map("map") : input("x", f32, {kSteps * kBox});
  Buffer r = output("r", f32, {128});
  TgBuffer stage = threadgroup_alloc("stage", f32, kStages * kBox, 128);
  TgBuffer full = mbarrier_alloc("full", kStages);
  TgBuffer empty = mbarrier_alloc("empty", kStages);
  Expr l = local_id(0);
  if_(l == 0u, [&] {
    for_(0u, kStages, [&](Expr s) {
      mbar_init(full[s], g_tma ? 1u : 32u);
      mbar_init(empty[s], 128u);
    });
  });
  barrier();
  std::function<void()> producer = [&] {  // the producer warp
    for_(0u, kSteps, [&](Expr k) {
      Expr s = k % kStages, ph = (k / kStages) & 1u;
      if (g_bad != Bad::NoEmptyWait) mbar_wait(empty[s], ph ^ 1u);  // parity 1 first: the stage starts empty
      if (g_tma) {
        if_(l == 0u, [&] {
          mbar_arrive_tx(full[s], kBox * 4u);
          tma_load_2d(src, stage[s * kBox], 0, k * 4u, full[s]);
        });
      } else {
        for_(0u, 4u, [&](Expr j) {
          Expr e = l * 4u + j;
          stage[s * kBox + e] = src[k * kBox + e];
        });
        mbar_arrive(full[s]);
      }
    });
  };
  std::function<void()> consumers = [&] {  // four consumer warps
    Expr c = l - 32u;
    Var<f32> acc = 0.0f;
    for_(0u, kSteps, [&](Expr k) {
      Expr s = k % kStages, ph = (k / kStages) & 1u;
      mbar_wait(full[s], g_bad == Bad::Parity ? ph ^ 1u : ph);
      if (g_bad == Bad::BarrierInBranch) barrier();
      if (g_bad == Bad::EarlyRelease) mbar_arrive(empty[s]);
      acc += stage[s * kBox + (c ^ 1u)];
      if (g_bad == Bad::MissingArrival) {
        if_(c != 127u, [&] { mbar_arrive(empty[s]); });
      } else if (g_bad != Bad::EarlyRelease) {
        mbar_arrive(empty[s]);
      }
    });
    r[c] = acc;
  };
  if (g_swap)
    if_(l >= 32u, consumers).else_(producer);
  else
    if_(l < 32u, producer).else_(consumers);
}

float x_at(uint32_t i) { return float(int(i % 61) - 30); }

// Traces ring_body for (tma, bad) and runs it on the interpreter: r, or the error's message.
std::string run_ring(bool tma, Bad bad, std::vector<float>& r) {
  g_tma = tma;
  g_bad = bad;
  try {
    const ir::Kernel k = trace_kernel(KernelDecl{"ring", &ring_body, Mode::Reduction, {}, __FILE__, __LINE__});
    std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
    std::vector<float> x(kSteps * kBox);
    for (uint32_t i = 0; i < x.size(); ++i) x[i] = x_at(i);
    DeviceBuffer dx = ctx->alloc(DType::F32, x.size()), dr = ctx->alloc(DType::F32, 128);
    ctx->upload(dx, x.data(), x.size() * 4);
    if (tma) {
      TensorMap m;
      m.buffer = dx;
      m.dims = {32, 4 * kSteps};
      m.box = {32, 4};
      ctx->dispatch_with_grid(k, DType::F32, {{"r", dr}}, {{"map", m}}, {g_groups, 1, 1}, {kThreads, 1, 1});
    } else {
      ctx->dispatch_with_grid(k, DType::F32, {{"x", dx}, {"r", dr}}, {}, {g_groups, 1, 1}, {kThreads, 1, 1});
    }
    r.assign(128, 0.0f);
    ctx->download(dr, r.data(), r.size() * 4);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Plain stores and tensor-map copies: the consumers' sums are exact, and three runs agree; so do
// the arms in the other order and two threadgroups (each starts its strands afresh).
TEST(WarpSpecialize, ProducerAndConsumersShareARingOfStages) {
  for (bool tma : {false, true}) {
    std::vector<float> r, again;
    ASSERT_EQ(run_ring(tma, Bad::None, r), "") << (tma ? "tma" : "plain");
    for (uint32_t c = 0; c < 128; ++c) {
      float want = 0.0f;
      for (uint32_t k = 0; k < kSteps; ++k) want += x_at(k * kBox + (c ^ 1u));
      ASSERT_EQ(r[c], want) << (tma ? "tma" : "plain") << ", consumer " << c;
    }
    for (int run = 0; run < 2; ++run) {
      ASSERT_EQ(run_ring(tma, Bad::None, again), "");
      EXPECT_EQ(again, r);
    }
    g_swap = true;
    g_groups = 2;
    const std::string e = run_ring(tma, Bad::None, again);
    g_swap = false;
    g_groups = 1;
    ASSERT_EQ(e, "");
    EXPECT_EQ(again, r);
  }
}

// The consumers wait on parity 1 first: phase 1 of full[0], which the producer (waiting for the
// consumers to release stage 0) never starts. The error names both waits.
TEST(WarpSpecialize, AWrongParityIsADeadlockNamingEveryWait) {
  std::vector<float> r;
  for (bool tma : {false, true}) {
    const std::string e = run_ring(tma, Bad::Parity, r);
    EXPECT_TRUE(has(e, "mbar_wait on mbarrier 'full'[0] for phase 1 (parity 1), which has ")) << e;
    EXPECT_TRUE(has(e, "(thread {32, 0, 0} and 127 more); no other thread can arrive while they wait")) << e;
    EXPECT_TRUE(has(e, "(the other threads wait too; 32 threads from thread {0, 0, 0} in mbar_wait at ")) << e;
    EXPECT_TRUE(has(e, "for phase 0 of mbarrier 'empty'[0] (128 of 128 arrivals and 0 transaction bytes outstanding)"))
        << e;
    EXPECT_TRUE(has(e, "a deadlock, or a wait on the wrong phase at ")) << e;
    EXPECT_TRUE(has(e, "warp_specialize_test.cpp:")) << e;
  }
}

// Consumer 127 never releases a stage: the producer's second wait on empty[0] lacks its arrival.
TEST(WarpSpecialize, AMissingArrivalIsADeadlockNamingEveryWait) {
  std::vector<float> r;
  const std::string e = run_ring(false, Bad::MissingArrival, r);
  EXPECT_TRUE(has(e, "mbar_wait on mbarrier 'full'[0] for phase 1 (parity 1), which has 32 of 32 arrivals")) << e;
  EXPECT_TRUE(has(e, "32 threads from thread {0, 0, 0} in mbar_wait at ")) << e;
  EXPECT_TRUE(has(e, "for phase 0 of mbarrier 'empty'[0] (1 of 128 arrivals and 0 transaction bytes outstanding)")) << e;
}

// The producer refills stage 0 without waiting for its release: the copy engine overwrites data
// no consumer has waited for. Releasing a stage before reading it lets the producer refill it
// under the consumers' reads: a copy-engine write after read (tensor-map copies), or an ordinary
// one (plain stores).
TEST(WarpSpecialize, ARefillBeforeTheReleaseIsARace) {
  std::vector<float> r;
  std::string e = run_ring(true, Bad::NoEmptyWait, r);
  EXPECT_TRUE(has(e, "threadgroup memory race (copy-engine write after write) on 'stage'[0]: the tma_load_2d issued by "
                     "thread {0, 0, 0} overwrites the slot, which the copy at ")) << e;
  EXPECT_TRUE(has(e, "delivers in phase 0 of mbarrier 'full'[0], before any thread waited for that phase")) << e;
  e = run_ring(true, Bad::EarlyRelease, r);
  EXPECT_TRUE(has(e, "threadgroup memory race (copy-engine write after read) on 'stage'[0]: the tma_load_2d issued by "
                     "thread {0, 0, 0} overwrites the slot thread {33, 0, 0} read at ")) << e;
  e = run_ring(false, Bad::EarlyRelease, r);
  EXPECT_TRUE(has(e, "threadgroup memory race (write after read) on 'stage'[0]: thread {0, 0, 0} writes the slot")) << e;
}

// A block barrier() in one branch while the other waits on an mbarrier.
TEST(WarpSpecialize, ABarrierInOneBranchIsAnError) {
  std::vector<float> r;
  const std::string e = run_ring(false, Bad::BarrierInBranch, r);
  EXPECT_TRUE(has(e, "barrier reached by 128 of 160 threads (divergent barrier; the other threads wait: 32 threads from "
                     "thread {0, 0, 0} in mbar_wait at ")) << e;
  EXPECT_TRUE(has(e, "for phase 0 of mbarrier 'empty'[0]")) << e;
}

}  // namespace
}  // namespace iron
