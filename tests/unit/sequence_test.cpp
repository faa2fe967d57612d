// Launch sequences (include/iron/runtime.hpp, LaunchSequence) on every backend: the interpreter
// and Vulkan (lavapipe) here, CUDA where a driver is (skipped without one, never passed). A
// replayed sequence must give exactly what the same launches give one by one, before and after
// rebindings, and a rebinding must reach the recording (CUDA: its graph node, in place; Vulkan:
// its descriptor set, and the barriers where the hazards moved). The kernels add whole numbers
// and scale by powers of two in f32, so every result is exact.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"

using namespace iron;

namespace {

// out[i] = a[i] + iters, one 1.0 at a time (a launch whose run time grows with iters).
void seq_spin_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr iters = constexpr_("iters", u32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Var<f32> acc = a[i];
    for_(0u, iters, [&](Expr) { acc += 1.0f; });
    out[i] = acc;
  });
}

// out[i] = a[i] * s + b[i]: two inputs, a scalar that sizes nothing.
void seq_axpy_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr s = constexpr_("s", f32);
  Buffer a = input("a", f32, {n});
  Buffer b = input("b", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] * s + b[i]; });
}

const ir::Kernel& spin_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"sequence_test_spin", &seq_spin_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}
const ir::Kernel& axpy_kernel() {
  static const ir::Kernel k = trace_kernel(KernelDecl{"sequence_test_axpy", &seq_axpy_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

constexpr Dim3 kTg{64, 1, 1};
constexpr size_t kN = 1000;
Dim3 grid_for(size_t n) { return {uint32_t((n + kTg.x - 1) / kTg.x), 1, 1}; }

// One step of a program: a kernel, its buffers by index into the program's buffer set, scalars.
struct Step {
  bool axpy = false;
  std::vector<std::pair<std::string, size_t>> buffers;
  float s = 1.0f;
  uint32_t iters = 1;
};

class Sequences : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    try {
      ctx_ = Context::create(GetParam());
    } catch (const Error& e) {
      if (GetParam() == Backend::Cuda) GTEST_SKIP() << "cuda unavailable: " << e.what();
      FAIL() << "cannot open " << backend_name(GetParam()) << ": " << e.what();
    }
  }
  Context& ctx() { return *ctx_; }

  // `count` buffers of kN elements, buffer b holding b * 100 + i % 7.
  std::vector<DeviceBuffer> buffer_set(size_t count) {
    std::vector<DeviceBuffer> out;
    for (size_t b = 0; b < count; ++b) {
      std::vector<float> v(kN);
      for (size_t i = 0; i < kN; ++i) v[i] = float(b * 100 + i % 7);
      out.push_back(ctx().alloc(DType::F32, kN));
      ctx().upload(out.back(), v.data(), kN * 4);
    }
    return out;
  }
  std::vector<float> download(const DeviceBuffer& b) {
    std::vector<float> v(b.count());
    ctx().download(b, v.data(), v.size() * 4);
    return v;
  }
  Bindings bindings(const Step& st, const std::vector<DeviceBuffer>& set) {
    Bindings out;
    for (const auto& [name, index] : st.buffers) out.emplace_back(name, set[index]);
    return out;
  }
  Constexprs scalars(const Step& st) {
    if (st.axpy) return {{"n", uint32_t(kN)}, {"s", st.s}};
    return {{"n", uint32_t(kN)}, {"iters", st.iters}};
  }
  PreparedLaunch prepare(const Step& st, const std::vector<DeviceBuffer>& set) {
    return ctx().prepare_launch(st.axpy ? axpy_kernel() : spin_kernel(), DType::F32, bindings(st, set), scalars(st),
                                grid_for(kN), kTg);
  }
  void dispatch(const Step& st, const std::vector<DeviceBuffer>& set, const Stream& s) {
    ctx().dispatch_with_grid(st.axpy ? axpy_kernel() : spin_kernel(), DType::F32, bindings(st, set), scalars(st),
                             grid_for(kN), kTg, s);
  }
  // Every buffer of both sets equal, bit for bit.
  void expect_same(const std::vector<DeviceBuffer>& got, const std::vector<DeviceBuffer>& want, const std::string& when) {
    for (size_t b = 0; b < got.size(); ++b) {
      const std::vector<float> g = download(got[b]), w = download(want[b]);
      for (size_t i = 0; i < kN; ++i)
        ASSERT_EQ(g[i], w[i]) << when << ": buffer " << b << ", element " << i << " (" << ctx().info().name << ")";
    }
  }
  std::unique_ptr<Context> ctx_;
};

// A program over 6 buffers: chains (a step reads what the one before wrote), independent steps
// side by side, a step that overwrites a buffer an earlier one read, and the two kernels in
// several steps each with different bindings.
std::vector<Step> program() {
  return {
      {false, {{"a", 0}, {"out", 1}}, 1.0f, 3},                  // 1 = 0 + 3
      {false, {{"a", 0}, {"out", 2}}, 1.0f, 5},                  // 2 = 0 + 5 (independent of step 0)
      {true, {{"a", 1}, {"b", 2}, {"out", 3}}, 2.0f, 1},         // 3 = 1 * 2 + 2 (reads both)
      {false, {{"a", 3}, {"out", 0}}, 1.0f, 7},                  // 0 = 3 + 7 (overwrites what steps 0-1 read)
      {true, {{"a", 0}, {"b", 3}, {"out", 4}}, 0.5f, 1},         // 4 = 0 * 0.5 + 3
      {false, {{"a", 5}, {"out", 1}}, 1.0f, 1},                  // 1 = 5 + 1 (overwrites what step 2 read)
      {true, {{"a", 4}, {"b", 1}, {"out", 2}}, -1.0f, 1},        // 2 = -4 + 1
  };
}

// The replay gives what launch by launch gives, after each of several rebindings, replayed
// more than once (so every replay starts from the previous replay's results).
TEST_P(Sequences, ReplaysMatchLaunchByLaunchThroughRebindings) {
  std::vector<Step> prog = program();
  std::vector<DeviceBuffer> seq_set = buffer_set(6), ref_set = buffer_set(6);
  LaunchSequence seq = ctx().create_sequence();
  for (const Step& st : prog) seq.add(prepare(st, seq_set));
  Stream s = ctx().create_stream();
  auto reference = [&] {
    for (const Step& st : prog) dispatch(st, ref_set, s);
  };
  for (int r = 0; r < 2; ++r) {
    seq.replay(s);
    reference();
  }
  expect_same(seq_set, ref_set, "two replays as recorded");
  // Rebind: a scalar, a buffer (step 1 now writes buffer 5, so step 2 reads what step 5 wrote
  // the replay before), and both kinds in one step.
  prog[0].iters = 11;
  seq.step(0).set_scalar(seq.step(0).param("iters"), 11u);
  prog[1].buffers[1].second = 5;
  seq.step(1).set_buffer(seq.step(1).param("out"), seq_set[5]);
  prog[4].s = 4.0f;
  prog[4].buffers[1].second = 2;
  seq.step(4).set_scalar(seq.step(4).param("s"), 4.0f);
  seq.step(4).set_buffer(seq.step(4).param("b"), seq_set[2]);
  for (int r = 0; r < 3; ++r) {
    seq.replay(s);
    reference();
  }
  expect_same(seq_set, ref_set, "three replays after rebinding");
  // Only buffers this time (CUDA and Vulkan take them without touching the scalars).
  prog[6].buffers[2].second = 0;
  seq.step(6).set_buffer(seq.step(6).param("out"), seq_set[0]);
  seq.replay(s);
  reference();
  expect_same(seq_set, ref_set, "a replay after rebinding an output");
  const std::string how = seq.recording();
  if (GetParam() == Backend::Cuda) {
    // Built once, then every rebound step written into its node (4 steps rebound in all).
    EXPECT_NE(how.find("a CUDA graph of kernel nodes of 7 steps; 1 built, 4 steps updated in place"), std::string::npos)
        << how;
  } else if (GetParam() == Backend::Vulkan) {
    // Recorded at first and after each of the two rebindings; the rebound buffers' bindings
    // rewritten in their steps' sets (steps 1 and 4, then step 6).
    // With update-after-bind descriptors the second rebinding (an output only) may keep the
    // recording unless it needs a new barrier: recorded 2 or 3 times, said either way.
    EXPECT_NE(how.find("one Vulkan command buffer of 7 steps"), std::string::npos) << how;
    if (how.find("update-after-bind: ") != std::string::npos) {
      EXPECT_TRUE(how.find("recorded 2 times, 3 descriptor sets rewritten in place; update-after-bind: 1 rebindings "
                           "without recording again, 1 recorded again") != std::string::npos ||
                  how.find("recorded 3 times, 3 descriptor sets rewritten in place; update-after-bind: 0 rebindings "
                           "without recording again, 2 recorded again") != std::string::npos)
          << how;
    } else {
      EXPECT_NE(how.find("recorded 3 times, 3 descriptor sets rewritten in place; no update-after-bind"), std::string::npos)
          << how;
    }
  } else {
    EXPECT_EQ(how, "launch by launch, 7 steps");
  }
}

// Vulkan places a barrier before a step only where it touches what an earlier step (since the
// last barrier) wrote, or writes what one read: independent steps share one stretch.
TEST_P(Sequences, BarriersGoWhereStepsDependOnEachOther) {
  if (GetParam() != Backend::Vulkan) GTEST_SKIP() << "barriers are Vulkan's (CUDA graphs order every step)";
  std::vector<DeviceBuffer> set = buffer_set(6), ref = buffer_set(6);
  auto barriers = [&](const std::vector<Step>& prog) {
    LaunchSequence seq = ctx().create_sequence();
    for (const Step& st : prog) seq.add(prepare(st, set));
    seq.replay();
    for (const Step& st : prog) dispatch(st, ref, {});
    expect_same(set, ref, "the program of " + std::to_string(prog.size()) + " steps");
    const std::string how = seq.recording();
    const size_t at = how.find(" barriers");
    const size_t from = how.rfind(' ', at - 1) + 1;
    return std::stoi(how.substr(from, at - from));
  };
  // Four steps reading buffer 0 into four outputs: independent, no barrier.
  EXPECT_EQ(barriers({{false, {{"a", 0}, {"out", 1}}, 1, 1},
                      {false, {{"a", 0}, {"out", 2}}, 1, 2},
                      {false, {{"a", 0}, {"out", 3}}, 1, 3},
                      {false, {{"a", 0}, {"out", 4}}, 1, 4}}),
            0);
  // A chain of four: read after write each time.
  EXPECT_EQ(barriers({{false, {{"a", 0}, {"out", 1}}, 1, 1},
                      {false, {{"a", 1}, {"out", 2}}, 1, 1},
                      {false, {{"a", 2}, {"out", 3}}, 1, 1},
                      {false, {{"a", 3}, {"out", 4}}, 1, 1}}),
            3);
  // Write after read (step 1 overwrites step 0's input) and write after write (step 2).
  EXPECT_EQ(barriers({{false, {{"a", 0}, {"out", 1}}, 1, 1},
                      {false, {{"a", 2}, {"out", 0}}, 1, 1},
                      {false, {{"a", 3}, {"out", 0}}, 1, 2}}),
            2);
  // The whole program: barriers before steps 2 (reads 1 and 2), 3 (reads 3), 4 (reads 0) and
  // 6 (reads 4). Step 5 overwrites 1, which step 2 read, but a barrier came between.
  EXPECT_EQ(barriers(program()), 4);
}

// A rebinding while the previous replay still runs: the replay in flight keeps its old
// bindings (CUDA updates the graph without waiting; Vulkan waits for its command buffer).
TEST_P(Sequences, ARebindingLeavesTheReplayInFlightAlone) {
  const uint32_t iters = GetParam() == Backend::Interp ? 300 : GetParam() == Backend::Vulkan ? 3000 : 100000;
  std::vector<DeviceBuffer> set = buffer_set(3);
  LaunchSequence seq = ctx().create_sequence();
  seq.add(prepare({false, {{"a", 0}, {"out", 1}}, 1, iters}, set));
  seq.add(prepare({true, {{"a", 1}, {"b", 0}, {"out", 2}}, 2.0f, 1}, set));  // 2 = 1 * 2 + 0
  Stream s = ctx().create_stream();
  seq.replay(s);
  DeviceBuffer other = ctx().alloc(DType::F32, kN);
  seq.step(0).set_buffer(seq.step(0).param("out"), other);
  seq.step(0).set_scalar(seq.step(0).param("iters"), 2u);
  seq.step(1).set_buffer(seq.step(1).param("a"), other);
  seq.step(1).set_buffer(seq.step(1).param("out"), set[1]);
  seq.replay(s);  // other = 0 + 2; 1 = other * 2 + 0
  const std::vector<float> one = download(set[1]), two = download(set[2]), o = download(other);
  for (size_t i = 0; i < kN; ++i) {
    const float x = float(i % 7);
    ASSERT_EQ(two[i], (x + float(iters)) * 2.0f + x) << "element " << i << ": the first replay's result";
    ASSERT_EQ(o[i], x + 2.0f) << "element " << i;
    ASSERT_EQ(one[i], (x + 2.0f) * 2.0f + x) << "element " << i << ": the second replay's result";
  }
}

// lavapipe ends long loops early; a sequence names the step whose loop was cut short.
TEST_P(Sequences, ALoopCutShortNamesItsStep) {
  if (GetParam() != Backend::Vulkan) GTEST_SKIP() << "only lavapipe limits loops";
  if (ctx().info().name.find("llvmpipe") == std::string::npos) GTEST_SKIP() << "not lavapipe: loops run to their end";
  std::vector<DeviceBuffer> set = buffer_set(3);
  LaunchSequence seq = ctx().create_sequence();
  seq.add(prepare({false, {{"a", 0}, {"out", 1}}, 1, 1}, set));
  seq.add(prepare({false, {{"a", 1}, {"out", 2}}, 1, 70000}, set));
  seq.replay();
  try {
    download(set[2]);
    FAIL() << "a loop cut short went unreported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(step 1 of a launch sequence)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stopped before its end"), std::string::npos) << e.what();
  }
  // The next replay, with the loop shortened, runs clean.
  seq.step(1).set_scalar(seq.step(1).param("iters"), 5u);
  seq.replay();
  EXPECT_EQ(download(set[2])[3], 3.0f + 1.0f + 5.0f);
}

// A sequence of one kernel in 50 steps, each with its own output: one replay, every step's
// bindings intact (the same kernel's descriptor sets and graph nodes do not share state).
TEST_P(Sequences, OneKernelInManyStepsKeepsEachStepsBindings) {
  const size_t steps = 50;
  std::vector<DeviceBuffer> in = buffer_set(1);
  std::vector<DeviceBuffer> outs;
  LaunchSequence seq = ctx().create_sequence();
  for (size_t i = 0; i < steps; ++i) {
    outs.push_back(ctx().alloc(DType::F32, kN));
    seq.add(ctx().prepare_launch(spin_kernel(), DType::F32, {{"a", in[0]}, {"out", outs.back()}},
                                 {{"n", uint32_t(kN)}, {"iters", uint32_t(i)}}, grid_for(kN), kTg));
  }
  seq.replay();
  for (size_t i = 0; i < steps; ++i) EXPECT_EQ(download(outs[i])[5], 5.0f + float(i)) << "step " << i;
}

// CUDA builds its graph three ways (IRON_CUDA_GRAPH, read when a sequence is recorded):
// programmatic edges where the driver and arch allow (the default), plain edges, or a stream
// capture. Each gives launch by launch's results, before and after a rebinding, and says which
// it is.
TEST_P(Sequences, EveryCudaGraphPathGivesTheSameResults) {
  if (GetParam() != Backend::Cuda) GTEST_SKIP() << "CUDA graphs";
  struct Mode {
    const char* env;
    const char* says;
  };
  const bool sm90 = ctx().info().arch.rfind("sm_9", 0) == 0 || ctx().info().arch.rfind("sm_1", 0) == 0;
  const Mode modes[] = {{"pdl", sm90 ? "; programmatic edges" : "; plain edges"},
                        {"nodes", "a CUDA graph of kernel nodes of 7 steps; 1 built, 3 steps updated in place; plain edges"},
                        {"capture", "a captured CUDA graph of 7 steps; 2 built, 0 steps updated in place"}};
  for (const Mode& m : modes) {
    setenv("IRON_CUDA_GRAPH", m.env, 1);
    std::vector<Step> prog = program();
    std::vector<DeviceBuffer> seq_set = buffer_set(6), ref_set = buffer_set(6);
    LaunchSequence seq = ctx().create_sequence();
    for (const Step& st : prog) seq.add(prepare(st, seq_set));
    Stream s = ctx().create_stream();
    for (int r = 0; r < 3; ++r) {
      seq.replay(s);
      for (const Step& st : prog) dispatch(st, ref_set, s);
    }
    prog[2].s = 0.25f;
    seq.step(2).set_scalar(seq.step(2).param("s"), 0.25f);
    prog[3].buffers[1].second = 5;
    seq.step(3).set_buffer(seq.step(3).param("out"), seq_set[5]);
    prog[6].buffers[2].second = 3;
    seq.step(6).set_buffer(seq.step(6).param("out"), seq_set[3]);
    for (int r = 0; r < 3; ++r) {
      seq.replay(s);
      for (const Step& st : prog) dispatch(st, ref_set, s);
    }
    expect_same(seq_set, ref_set, std::string("IRON_CUDA_GRAPH=") + m.env);
    EXPECT_NE(seq.recording().find(m.says), std::string::npos) << m.env << ": " << seq.recording();
  }
  unsetenv("IRON_CUDA_GRAPH");
  setenv("IRON_CUDA_GRAPH", "cuda-graph", 1);
  LaunchSequence bad = ctx().create_sequence();
  std::vector<DeviceBuffer> set = buffer_set(2);
  bad.add(prepare({false, {{"a", 0}, {"out", 1}}, 1, 1}, set));
  try {
    bad.replay();
    ADD_FAILURE() << "a bad IRON_CUDA_GRAPH was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IRON_CUDA_GRAPH=cuda-graph: expected pdl (the default), nodes or capture"),
              std::string::npos)
        << e.what();
  }
  unsetenv("IRON_CUDA_GRAPH");
}

INSTANTIATE_TEST_SUITE_P(Backends, Sequences, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(backend_name(i.param)); });

}  // namespace
