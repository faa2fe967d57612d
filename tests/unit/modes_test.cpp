// The five kernel modes (core/modes.cpp): the registry gate's table (every built-in at every
// axis in every mode, and the message naming the mode that binds it), the text form of each
// mode, dispatch validation per mode, one registered standard-library kernel per mode, and the
// cross-backend fuzzer's programs of every mode.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "core/modes.hpp"
#include "fuzz/random_program.hpp"
#include "ir_text.hpp"

using namespace iron;
using namespace iron::dsl;

namespace {

constexpr Mode kAllModes[] = {Mode::Elementwise, Mode::Reduction, Mode::Grid3D, Mode::Tile2D, Mode::SimdGroup2D};

// The built-in (or threadgroup / lane operation) the probe body reads, set before each trace:
// trace_kernel takes a plain function, so the choice travels through these two globals.
ir::Op g_op = ir::Op::ThreadId;
int g_axis = 0;
int g_probe_line = 0;

void probe_body() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", u32, {n});
  Expr v;
  // Each case records its own line: the diagnostic must point at the built-in's call.
  switch (g_op) {
    case ir::Op::ThreadId: g_probe_line = __LINE__, v = thread_id(g_axis); break;
    case ir::Op::ProgramId: g_probe_line = __LINE__, v = program_id(g_axis); break;
    case ir::Op::LocalId: g_probe_line = __LINE__, v = local_id(g_axis); break;
    case ir::Op::GroupSize: g_probe_line = __LINE__, v = group_size(g_axis); break;
    case ir::Op::NumPrograms: g_probe_line = __LINE__, v = num_programs(g_axis); break;
    case ir::Op::LaneId: v = lane_id(); break;
    case ir::Op::LaneWidth: v = lane_width(); break;
    case ir::Op::SimdGroupId: v = simd_group_id(); break;
    case ir::Op::NumSimdGroups: v = num_simd_groups(); break;
    case ir::Op::LaneSum: v = lane_sum(Expr(constexpr_("s", u32))); break;
    case ir::Op::Barrier: barrier(); v = constexpr_("s", u32); break;
    default: {
      TgBuffer t = threadgroup_alloc("t", u32, 4);
      v = cast<u32>(t[0u]);
      break;
    }
  }
  out[0u] = v;
}

std::string probe(Mode m, ir::Op op, int axis) {
  g_op = op;
  g_axis = axis;
  try {
    trace_kernel(KernelDecl{"probe", &probe_body, m, {}, __FILE__, __LINE__});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The expected table, written out independently of core/modes.cpp (seeds §2.5): the highest
// axis + 1 each mode binds for the per-axis built-ins.
int expected_axes(Mode m, ir::Op op) {
  switch (op) {
    case ir::Op::ThreadId: return m == Mode::Elementwise ? 1 : m == Mode::Grid3D ? 3 : 0;
    case ir::Op::ProgramId: case ir::Op::NumPrograms:
      return m == Mode::Reduction || m == Mode::SimdGroup2D ? 3 : m == Mode::Tile2D ? 2 : 0;
    case ir::Op::LocalId: case ir::Op::GroupSize: return m == Mode::Reduction ? 3 : m == Mode::Tile2D ? 2 : 0;
    default: return -1;
  }
}

}  // namespace

TEST(Modes, NamesRoundTrip) {
  for (Mode m : kAllModes) {
    Mode back = Mode::Elementwise;
    ASSERT_TRUE(parse_mode(mode_name(m), back)) << mode_name(m);
    EXPECT_EQ(back, m);
  }
  Mode out;
  EXPECT_FALSE(parse_mode("Grid2D", out));
  EXPECT_FALSE(parse_mode("tile2d", out));
}

TEST(ModeGate, EveryPerAxisBuiltinInEveryModeFollowsTheTable) {
  for (ir::Op op : {ir::Op::ThreadId, ir::Op::ProgramId, ir::Op::LocalId, ir::Op::GroupSize, ir::Op::NumPrograms})
    for (Mode m : kAllModes)
      for (int axis = 0; axis < 3; ++axis) {
        std::string e = probe(m, op, axis);
        bool bound = axis < expected_axes(m, op);
        std::string what = std::string(ir::mnemonic(op)) + "(" + std::to_string(axis) + ") in " + mode_name(m);
        EXPECT_EQ(e.empty(), bound) << what << ": " << e;
        if (bound) continue;
        EXPECT_NE(e.find("uses " + std::string(ir::mnemonic(op)) + "(" + std::to_string(axis) + ")"), std::string::npos)
            << what << ": " << e;
        EXPECT_NE(e.find("which mode " + std::string(mode_name(m)) + " does not bind"), std::string::npos) << e;
        EXPECT_NE(e.find("modes_test.cpp:" + std::to_string(g_probe_line)), std::string::npos) << e;
        // Every mode that binds it is named.
        for (Mode other : kAllModes) {
          if (axis >= expected_axes(other, op)) continue;
          EXPECT_NE(e.find(mode_name(other)), std::string::npos) << what << " should name " << mode_name(other) << ": " << e;
        }
      }
}

TEST(ModeGate, LaneAndThreadgroupOperationsFollowTheTable) {
  // Lane built-ins and reductions: Reduction and SimdGroup2D. Barriers and threadgroup memory:
  // those two and Tile2D.
  for (ir::Op op : {ir::Op::LaneId, ir::Op::LaneWidth, ir::Op::SimdGroupId, ir::Op::NumSimdGroups, ir::Op::LaneSum})
    for (Mode m : kAllModes) {
      std::string e = probe(m, op, 0);
      bool bound = m == Mode::Reduction || m == Mode::SimdGroup2D;
      EXPECT_EQ(e.empty(), bound) << ir::mnemonic(op) << " in " << mode_name(m) << ": " << e;
      if (!bound) {
        EXPECT_NE(e.find("declare a mode that does (Reduction or SimdGroup2D)"), std::string::npos) << e;
      }
    }
  for (ir::Op op : {ir::Op::Barrier, ir::Op::TgAlloc})
    for (Mode m : kAllModes) {
      std::string e = probe(m, op, 0);
      bool bound = m == Mode::Reduction || m == Mode::Tile2D || m == Mode::SimdGroup2D;
      EXPECT_EQ(e.empty(), bound) << ir::mnemonic(op) << " in " << mode_name(m) << ": " << e;
      if (!bound) {
        EXPECT_NE(e.find("declare a mode that does (Reduction, Tile2D or SimdGroup2D)"), std::string::npos) << e;
      }
    }
}

TEST(ModeGate, MessagesNameTheOneModeThatBindsIt) {
  std::string e = probe(Mode::Elementwise, ir::Op::ThreadId, 2);
  EXPECT_NE(e.find("kernel 'probe' (mode Elementwise) uses thread_id(2), which mode Elementwise does not bind; "
                   "declare the mode that does (Grid3D)"),
            std::string::npos)
      << e;
  e = probe(Mode::Grid3D, ir::Op::LocalId, 0);
  EXPECT_NE(e.find("declare a mode that does (Reduction or Tile2D)"), std::string::npos) << e;
  e = probe(Mode::Tile2D, ir::Op::ThreadId, 0);
  EXPECT_NE(e.find("declare a mode that does (Elementwise or Grid3D)"), std::string::npos) << e;
}

TEST(ModeText, EveryModePrintsAndParses) {
  for (Mode m : kAllModes) {
    std::string text = std::string("kernel k mode=") + mode_name(m) + " {\n  param n: scalar<u32>\n}\n";
    ir::Kernel k = test::parse_verified(text);
    EXPECT_EQ(k.mode, m);
    EXPECT_EQ(ir::print(k), text);
  }
  std::string e = test::parse_error("kernel k mode=Grid2D {\n}\n");
  EXPECT_NE(e.find("unknown mode 'Grid2D' (Elementwise, Reduction, Grid3D, Tile2D or SimdGroup2D)"), std::string::npos)
      << e;
  EXPECT_NE(e.find("1:"), std::string::npos) << e;  // located: line 1
}

TEST(ModeKernels, EveryModeHasARegisteredKernelWithTestCases) {
  for (Mode m : kAllModes) {
    int kernels = 0;
    for (const KernelDecl* d : registered_kernels()) {
      if (d->mode != m) continue;
      for (const TestDecl* t : registered_tests())
        if (std::strcmp(t->kernel, d->name) == 0) {
          ++kernels;
          break;
        }
    }
    EXPECT_GT(kernels, 0) << "no kernel with test cases in mode " << mode_name(m);
  }
  EXPECT_EQ(find_kernel_decl("iron_transpose")->mode, Mode::Tile2D);
  EXPECT_EQ(find_kernel_decl("iron_rope")->mode, Mode::Grid3D);
  EXPECT_EQ(find_kernel_decl("iron_gemv_warp_rows")->mode, Mode::SimdGroup2D);
}

// Dispatch validation per mode, on the interpreter device (no GPU needed): the rule of core/
// modes.cpp rejects the geometry with the mode's reason, and the same kernel dispatches with a
// valid one.
class ModeDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = Context::create(Backend::Interp);
    ASSERT_TRUE(ctx_);
  }
  std::string dispatch(std::string_view kernel, const Bindings& b, const Constexprs& c, Dim3 grid, Dim3 tg) {
    try {
      ctx_->dispatch_with_grid(kernel, DType::F32, b, c, grid, tg);
      ctx_->synchronize();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::unique_ptr<Context> ctx_;
};

TEST_F(ModeDispatch, ElementwiseIsOneDimensional) {
  Bindings b = {{"a", ctx_->alloc(DType::F32, 64)}, {"b", ctx_->alloc(DType::F32, 64)}, {"out", ctx_->alloc(DType::F32, 64)}};
  EXPECT_EQ(dispatch("iron_add", b, {{"n", 64}}, {1, 1, 1}, {8, 1, 1}), "");
  std::string e = dispatch("iron_add", b, {{"n", 64}}, {1, 2, 1}, {8, 1, 1});
  EXPECT_NE(e.find("mode Elementwise indexes threads by the flat thread_id(0) alone"), std::string::npos) << e;
  EXPECT_NE(e.find("declare Grid3D"), std::string::npos) << e;
  e = dispatch("iron_add", b, {{"n", 64}}, {1, 1, 1}, {8, 1, 2});
  EXPECT_NE(e.find("mode Elementwise"), std::string::npos) << e;
}

TEST_F(ModeDispatch, Tile2DIsTwoDimensionalAndNeedsNoWholeLaneGroups) {
  Bindings b = {{"x", ctx_->alloc(DType::F32, 40 * 40)}, {"out", ctx_->alloc(DType::F32, 40 * 40)}};
  Constexprs c = {{"rows", 40}, {"cols", 40}};
  // x = 16 and x = 8 are not multiples of the interpreter's 32 lanes: a barrier does not care.
  EXPECT_EQ(dispatch("iron_transpose", b, c, {2, 2, 1}, {16, 16, 1}), "");
  EXPECT_EQ(dispatch("iron_transpose", b, c, {2, 2, 1}, {8, 4, 1}), "");
  std::string e = dispatch("iron_transpose", b, c, {2, 2, 2}, {16, 16, 1});
  EXPECT_NE(e.find("mode Tile2D binds axes 0 and 1 only"), std::string::npos) << e;
  e = dispatch("iron_transpose", b, c, {2, 2, 1}, {16, 8, 2});
  EXPECT_NE(e.find("mode Tile2D"), std::string::npos) << e;
}

TEST_F(ModeDispatch, SimdGroup2DWorksInWholeLaneGroups) {
  const uint32_t w = ctx_->info().lane_width;
  Bindings b = {{"a", ctx_->alloc(DType::F32, 8 * 8)}, {"x", ctx_->alloc(DType::F32, 8)}, {"y", ctx_->alloc(DType::F32, 8)}};
  Constexprs c = {{"m", 8}, {"k", 8}};
  EXPECT_EQ(dispatch("iron_gemv_warp_rows", b, c, {1, 1, 1}, {w, 1, 1}), "");
  EXPECT_EQ(dispatch("iron_gemv_warp_rows", b, c, {1, 1, 1}, {w, 2, 1}), "");  // lane groups in rows
  std::string e = dispatch("iron_gemv_warp_rows", b, c, {1, 1, 1}, {w + w / 2, 1, 1});
  EXPECT_NE(e.find("mode SimdGroup2D works in whole lane groups"), std::string::npos) << e;
  // One message, not the generic lane rule as well.
  EXPECT_EQ(e.find("the kernel uses lane operations"), std::string::npos) << e;
}

TEST_F(ModeDispatch, Grid3DTakesAnyThreeDimensionalGeometry) {
  const size_t n = 3 * 2 * 4 * 2;
  Bindings b = {{"x", ctx_->alloc(DType::F32, n)},
                {"cos", ctx_->alloc(DType::F32, 3 * 4)},
                {"sin", ctx_->alloc(DType::F32, 3 * 4)},
                {"out", ctx_->alloc(DType::F32, n)}};
  Constexprs c = {{"tokens", 3}, {"heads", 2}, {"half", 4}};
  EXPECT_EQ(dispatch("iron_rope", b, c, {1, 1, 3}, {4, 2, 1}), "");
  EXPECT_EQ(dispatch("iron_rope", b, c, {2, 2, 2}, {3, 1, 2}), "");
}

TEST(ModeGeometry, ReductionAndGrid3DAddNoRule) {
  std::vector<std::string> problems;
  for (Mode m : {Mode::Reduction, Mode::Grid3D}) ir::check_mode_geometry(m, {3, 5, 7}, {6, 2, 3}, 32, problems);
  EXPECT_TRUE(problems.empty());
}

// The cross-backend fuzzer makes programs of all five modes; each reads only what its mode
// binds (the registry gate's table) and gets a launch its mode accepts at every lane width the
// backends here have.
TEST(ModeFuzz, ProgramsKeepToTheirModesTable) {
  std::map<Mode, int> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const bool red = fuzz::reduction_seed(seed);
    ir::Kernel k = fuzz::random_program(seed, red);
    ASSERT_EQ(k.mode, fuzz::seed_mode(seed, red)) << seed;
    ++seen[k.mode];
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      const int64_t axis = in.attr(ir::Attr::Axis);
      EXPECT_TRUE(ir::mode_binds(k.mode, in.op, axis))
          << "seed " << seed << " (" << mode_name(k.mode) << ") uses " << ir::builtin_text(in.op, axis);
    });
    fuzz::RandomLaunch launch = fuzz::random_launch(k, seed);
    for (uint32_t lanes : {8u, 32u}) {
      std::vector<std::string> problems;
      ir::check_mode_geometry(k.mode, launch.grid, launch.threadgroup, lanes, problems);
      EXPECT_TRUE(problems.empty()) << "seed " << seed << ": " << problems[0];
    }
  }
  for (Mode m : kAllModes) EXPECT_GT(seen[m], 20) << mode_name(m);
}
