// Threadgroup-memory race detection in the SIMT interpreter. The interpreter runs a group in lock
// step, which would make a missing barrier invisible; instead every access is checked against the
// other threads' accesses since the last barrier (read after write, write after write, write
// after read), and a race is a located error naming the slot and both threads.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "passes/interpreter.hpp"
#include "ir_text.hpp"

using namespace iron;
using iron::test::parse_verified;
using iron::test::group_sum_ir;

namespace {

template <class T>
interp::BufferArg arg(std::vector<T>& v) {
  return {v.data(), v.size() * sizeof(T)};
}

std::string run_error(const ir::Kernel& k, const std::vector<interp::BufferArg>& buffers,
                      const std::vector<uint64_t>& scalars, Dim3 grid, Dim3 tg, uint32_t lane_width = 8) {
  interp::Options opts;
  opts.lane_width = lane_width;
  try {
    interp::run(k, DType::F32, buffers, scalars, grid, tg, opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A tile transpose through threadgroup memory: thread (x, y) writes tile[y * 4 + x], then reads
// tile[x * 4 + y], which another thread wrote.
std::string transpose_ir(bool with_barrier) {
  return std::string(
             "kernel transpose mode=Reduction {\n"
             "  param x: in buf<f32> extent=16\n"
             "  param out: out buf<f32> extent=16\n"
             "  %0 = tg_alloc<tile, 16> : f32\n"
             "  %1 = local_id<0> : u32\n"
             "  %2 = local_id<1> : u32\n"
             "  %3 = const<4> : u32\n"
             "  %4 = mul %2, %3 : u32\n"
             "  %5 = add %4, %1 : u32\n"
             "  %6 = load<x> %5 : f32\n"
             "  tg_store %0, %5, %6 @\"transpose.cpp\":8\n") +
         (with_barrier ? "  barrier\n" : "") +
         "  %7 = mul %1, %3 : u32\n"
         "  %8 = add %7, %2 : u32\n"
         "  %9 = tg_load %0, %8 : f32 @\"transpose.cpp\":11\n"
         "  store<out> %5, %9\n"
         "}\n";
}

}  // namespace

TEST(InterpRace, GroupSumWithoutItsBarrierIsAReadAfterWriteRace) {
  std::vector<float> x(64, 1.0f), out(1, 0.0f);
  ir::Kernel good = parse_verified(group_sum_ir(true));
  EXPECT_EQ(run_error(good, {arg(x), arg(out)}, {64}, {1, 1, 1}, {64, 1, 1}), "");
  EXPECT_EQ(out[0], 64.0f);
  ir::Kernel bad = parse_verified(group_sum_ir(false));
  std::string e = run_error(bad, {arg(x), arg(out)}, {64}, {1, 1, 1}, {64, 1, 1});
  EXPECT_NE(e.find("threadgroup memory race (read after write) on 'partials'[1]"), std::string::npos) << e;
  EXPECT_NE(e.find("at gsum.cpp:27"), std::string::npos) << e;          // the racing read
  EXPECT_NE(e.find("thread {8, 0, 0} wrote at gsum.cpp:20"), std::string::npos) << e;  // the writer
  EXPECT_NE(e.find("thread {1, 0, 0} reads"), std::string::npos) << e;
}

TEST(InterpRace, TransposeWithoutItsBarrierIsARace) {
  std::vector<float> x(16), out(16, 0.0f);
  for (int i = 0; i < 16; ++i) x[i] = float(i);
  ir::Kernel good = parse_verified(transpose_ir(true));
  EXPECT_EQ(run_error(good, {arg(x), arg(out)}, {}, {1, 1, 1}, {4, 4, 1}, 4), "");
  for (int y = 0; y < 4; ++y)
    for (int xx = 0; xx < 4; ++xx) EXPECT_EQ(out[y * 4 + xx], x[xx * 4 + y]);
  ir::Kernel bad = parse_verified(transpose_ir(false));
  std::string e = run_error(bad, {arg(x), arg(out)}, {}, {1, 1, 1}, {4, 4, 1}, 4);
  EXPECT_NE(e.find("race (read after write) on 'tile'[4]"), std::string::npos) << e;
  EXPECT_NE(e.find("at transpose.cpp:11"), std::string::npos) << e;
  EXPECT_NE(e.find("thread {1, 0, 0} reads the slot thread {0, 1, 0} wrote at transpose.cpp:8"), std::string::npos) << e;
}

TEST(InterpRace, TwoThreadsWritingOneSlotIsAWriteAfterWriteRace) {
  ir::Kernel k = parse_verified(
      "kernel waw mode=Reduction {\n"
      "  %0 = tg_alloc<flag, 1> : u32\n"
      "  %1 = const<0> : u32\n"
      "  %2 = local_id<0> : u32\n"
      "  tg_store %0, %1, %2 @\"waw.cpp\":3\n"
      "}\n");
  std::string e = run_error(k, {}, {}, {1, 1, 1}, {8, 1, 1});
  EXPECT_NE(e.find("race (write after write) on 'flag'[0]: thread {1, 0, 0} writes the slot thread {0, 0, 0} wrote"),
            std::string::npos)
      << e;
}

// Write after read: a slot overwritten while another thread may still be reading it, as in a
// group reduction called twice in a loop without its closing barrier.
TEST(InterpRace, OverwritingASlotAnotherThreadReadIsAWriteAfterReadRace) {
  auto ir_text = [](bool closing_barrier) {
    return std::string(
               "kernel war mode=Reduction {\n"
               "  param out: out buf<f32> extent=8\n"
               "  %0 = tg_alloc<s, 8> : f32\n"
               "  %1 = local_id<0> : u32\n"
               "  %2 = cast %1 : f32\n"
               "  tg_store %0, %1, %2\n"
               "  barrier\n"
               "  %3 = const<1> : u32\n"
               "  %4 = add %1, %3 : u32\n"
               "  %5 = const<7> : u32\n"
               "  %6 = and %4, %5 : u32\n"
               "  %7 = tg_load %0, %6 : f32 @\"war.cpp\":6\n") +
           (closing_barrier ? "  barrier\n" : "") +
           "  tg_store %0, %1, %7 @\"war.cpp\":7\n"
           "  store<out> %1, %7\n"
           "}\n";
  };
  std::vector<float> out(8);
  EXPECT_EQ(run_error(parse_verified(ir_text(true)), {arg(out)}, {}, {1, 1, 1}, {8, 1, 1}), "");
  std::string e = run_error(parse_verified(ir_text(false)), {arg(out)}, {}, {1, 1, 1}, {8, 1, 1});
  EXPECT_NE(e.find("race (write after read) on 's'[0]: thread {0, 0, 0} writes the slot thread {7, 0, 0} read at "
                   "war.cpp:6"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("at war.cpp:7"), std::string::npos) << e;
}

// A thread may read back its own writes without a barrier, and every thread may read a slot
// nobody writes in that phase.
TEST(InterpRace, OwnWritesAndSharedReadsAreNotRaces) {
  ir::Kernel k = parse_verified(
      "kernel own mode=Reduction {\n"
      "  param out: out buf<f32> extent=8\n"
      "  %0 = tg_alloc<s, 8> : f32\n"
      "  %1 = local_id<0> : u32\n"
      "  %2 = cast %1 : f32\n"
      "  tg_store %0, %1, %2\n"
      "  %3 = tg_load %0, %1 : f32\n"
      "  tg_store %0, %1, %3\n"
      "  barrier\n"
      "  %4 = const<0> : u32\n"
      "  %5 = tg_load %0, %4 : f32\n"
      "  %6 = add %3, %5 : f32\n"
      "  store<out> %1, %6\n"
      "}\n");
  std::vector<float> out(8);
  EXPECT_EQ(run_error(k, {arg(out)}, {}, {2, 1, 1}, {8, 1, 1}), "");
  EXPECT_EQ(out[5], 5.0f);
}

// The real group_sum of the DSL, traced, at two lane widths: no race is reported.
TEST(InterpRace, StandardLibraryReductionsAreRaceFree) {
  for (const char* name : {"iron_rmsnorm", "iron_softmax"}) {
    const ir::Kernel& k = kernel_ir(name);
    for (uint32_t w : {8u, 32u}) {
      const uint32_t rows = 2, d = 300, tg = 64;
      std::vector<float> x(rows * d, 0.5f), wts(d, 1.0f), out(rows * d);
      std::vector<interp::BufferArg> bufs = {arg(x)};
      std::vector<uint64_t> scalars = {rows, d};
      if (std::string(name) == "iron_rmsnorm") {
        bufs.push_back(arg(wts));
        float eps = 1e-6f;
        uint32_t bits;
        std::memcpy(&bits, &eps, 4);
        scalars.push_back(bits);
      }
      bufs.push_back(arg(out));
      EXPECT_EQ(run_error(k, bufs, scalars, {rows, 1, 1}, {tg, 1, 1}, w), "") << name << " at lane width " << w;
    }
  }
}
