// mbarriers, bulk copies, the async-proxy fence and setmaxnreg (docs/semantics.md "mbarriers"):
// the interpreter's phase and transaction tracking and the errors it reports (a wait on the wrong
// phase, a deadlock in lock step, a read before the delivering phase, a copy-engine write after
// an unfenced store), the verifier's rules, the CUDA lowering through NVRTC for sm_90a, the
// located errors of the other targets and architectures, and the same kernels run on a CUDA
// device where there is one (skipped elsewhere).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "fuzz/random_program.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace iron {
namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// 128 threads; x[j] = j + 0.25 (256 elements); thread 0 initializes barrier 0 of `bars` (two
// barriers) for `arrivals` arrivals and barrier 1 for 128, then every thread passes a barrier and
// runs `body`. %a is a 16-byte aligned f32 array of 256, %l the local id, %is0 "l == 0", and
// constants %c0 %c1 %c2 %c128 %c512 %c1024 (u32).
std::string kernel_text(const std::string& body, const std::string& arrivals = "%c1",
                        const std::string& init_barrier = "  barrier\n") {
  return "kernel mb mode=Reduction {\n"
         "  param x: in buf<f32> extent=256\n"
         "  param r: out buf<f32> extent=128\n"
         "  %a = tg_alloc<s, 256, align=16> : f32\n"
         "  %b = tg_alloc<bars, 2> : u64\n"
         "  %l = local_id<0> : u32\n"
         "  %c0 = const<0> : u32\n  %c1 = const<1> : u32\n  %c2 = const<2> : u32\n  %c128 = const<128> : u32\n"
         "  %c512 = const<512> : u32\n  %c1024 = const<1024> : u32\n"
         "  %is0 = eq %l, %c0 : bool\n"
         "  if %is0 {\n"
         "    mbar_init %b, %c0, " + arrivals + " @\"mb.cpp\":10\n"
         "    mbar_init %b, %c1, %c128 @\"mb.cpp\":11\n"
         "  }\n" + init_barrier + body + "}\n";
}

// Thread 0 expects 1024 bytes on barrier 0 and copies all of x into %a with the copy engine.
const std::string kCopy =
    "  if %is0 {\n"
    "    mbar_arrive_tx %b, %c0, %c1024 @\"mb.cpp\":20\n"
    "    bulk_copy<x, 256> %a, %c0, %c0, %b, %c0 @\"mb.cpp\":21\n"
    "  }\n";
// Every thread reads element 2l + 1 of %a into r[l].
const std::string kRead =
    "  %two = mul %l, %c2 : u32\n  %odd = add %two, %c1 : u32\n"
    "  %v = tg_load %a, %odd : f32 @\"mb.cpp\":30\n  store<r> %l, %v\n";

std::string run(const std::string& text, std::vector<float>& out, uint32_t threads = 128) {
  try {
    ir::Kernel k = ir::parse(text);
    ir::Diagnostics d;
    if (!ir::verify(k, d)) return "verify: " + d.render(k);
    std::vector<float> x(256);
    for (size_t j = 0; j < x.size(); ++j) x[j] = float(j) + 0.25f;
    out.assign(128, -7.0f);
    std::vector<interp::BufferArg> args{{x.data(), x.size() * 4}, {out.data(), out.size() * 4}};
    interp::Options o;
    o.lane_width = 32;
    o.uninitialized_tg_reads_are_errors = true;
    interp::run(k, DType::F32, args, {}, {1, 1, 1}, {threads, 1, 1}, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A bulk copy completes its bytes on an mbarrier; every thread waits and reads; a second round
// flips the parity.
TEST(Mbarrier, BulkCopyLandsOnTheBarrierAndWaitersReadIt) {
  std::vector<float> out;
  ASSERT_EQ(run(kernel_text(kCopy + "  mbar_wait %b, %c0, %c0\n" + kRead), out), "");
  for (uint32_t l = 0; l < 128; ++l) EXPECT_EQ(out[l], float(2 * l + 1) + 0.25f) << l;
  // Two rounds through one barrier: the parity flips (0, then 1), and a barrier() before the
  // second copy orders the first round's reads before the copy engine overwrites.
  const std::string round2 =
      "  barrier\n"
      "  if %is0 {\n"
      "    mbar_arrive_tx %b, %c0, %c512\n"
      "    bulk_copy<x, 128> %a, %c0, %c128, %b, %c0\n"
      "  }\n"
      "  mbar_wait %b, %c0, %c1\n"
      "  %w = tg_load %a, %l : f32\n  store<r> %l, %w\n";
  ASSERT_EQ(run(kernel_text(kCopy + "  mbar_wait %b, %c0, %c0\n" + kRead + round2), out), "");
  for (uint32_t l = 0; l < 128; ++l) EXPECT_EQ(out[l], float(128 + l) + 0.25f) << l;
}

// Waits on the wrong phase: a parity that passes at once on a GPU, or names a phase the thread
// already waited for, is a located error naming the barrier, the thread and the line.
TEST(Mbarrier, WaitOnTheWrongPhaseIsALocatedError) {
  std::vector<float> out;
  // Parity 1 before the first phase completes names the phase before it, which a GPU counts as
  // complete: the wait passes at once and the read sees memory the copy has not delivered.
  std::string e = run(kernel_text("  mbar_wait %b, %c0, %c1\n" + kCopy + kRead), out);
  EXPECT_TRUE(has(e, "reads threadgroup slot 's'[1], which the bulk_copy at mb.cpp:21 delivers in phase 0 of mbarrier "
                     "'bars'[0], before thread {0, 0, 0} waited for that phase (mbar_wait with parity 0)"))
      << e;
  EXPECT_TRUE(has(e, "at mb.cpp:30")) << e;
  // Parity 1 once phase 0 has completed in lock step names phase 1, which nothing completes.
  e = run(kernel_text(kCopy + "  mbar_wait %b, %c0, %c1 @\"mb.cpp\":35\n" + kRead), out);
  EXPECT_TRUE(has(e, "mbar_wait on mbarrier 'bars'[0] for phase 1 (parity 1), which has 1 of 1 arrivals and 0 "
                     "transaction bytes outstanding")) << e;
  EXPECT_TRUE(has(e, "a deadlock, or a wait on the wrong phase at mb.cpp:35")) << e;
  // No wait at all: the same error.
  e = run(kernel_text(kCopy + kRead), out);
  EXPECT_TRUE(has(e, "before thread {0, 0, 0} waited for that phase")) << e;
  // The second round waits on parity 0 again while its copy's bytes are still outstanding: on a
  // GPU the wait returns at once (phase 0 is complete). The thread already waited for phase 0.
  e = run(kernel_text(kCopy + "  mbar_wait %b, %c0, %c0\n" + kRead +
                      "  barrier\n  if %is0 {\n    mbar_arrive_tx %b, %c0, %c512\n  }\n"
                      "  mbar_wait %b, %c0, %c0 @\"mb.cpp\":40\n"),
          out);
  EXPECT_TRUE(has(e, "mbar_wait on mbarrier 'bars'[0] with parity 0 names phase 0, which thread {0, 0, 0} already "
                     "waited for: on a GPU this wait passes at once, before phase 1 completes (a wait on the wrong "
                     "phase: flip the parity after each wait) at mb.cpp:40"))
      << e;
  // A parity other than 0 or 1.
  e = run(kernel_text(kCopy + "  mbar_wait %b, %c0, %c2\n"), out);
  EXPECT_TRUE(has(e, "with parity 2; the parity is 0 or 1")) << e;
}

// A wait no thread can end in lock step (missing arrivals, unbalanced bytes) is an error, never a
// hang; so is a copy whose phase never completes and an arrival past the count.
TEST(Mbarrier, AnIncompletePhaseIsADeadlockNotAHang) {
  std::vector<float> out;
  // Two arrivals expected, one made: every thread waits and none can arrive.
  std::string e = run(kernel_text(kCopy + "  mbar_wait %b, %c0, %c0 @\"mb.cpp\":50\n", "%c2"), out);
  EXPECT_TRUE(has(e, "mbar_wait on mbarrier 'bars'[0] for phase 0 (parity 0), which has 1 of 2 arrivals and 0 "
                     "transaction bytes outstanding")) << e;
  EXPECT_TRUE(has(e, "a deadlock, or a wait on the wrong phase at mb.cpp:50")) << e;
  // The copy moves 1024 bytes where 512 were expected: the phase never balances.
  e = run(kernel_text("  if %is0 {\n    mbar_arrive_tx %b, %c0, %c512\n    bulk_copy<x, 256> %a, %c0, %c0, %b, %c0\n"
                      "  }\n  mbar_wait %b, %c0, %c0\n"),
          out);
  EXPECT_TRUE(has(e, "1 of 1 arrivals and -512 transaction bytes outstanding") ||
              has(e, "0 of 1 arrivals and -512 transaction bytes outstanding"))
      << e;
  // A copy whose phase never completes before the threadgroup ends (no arrival on it).
  e = run(kernel_text("  if %is0 {\n    bulk_copy<x, 256> %a, %c0, %c0, %b, %c0 @\"mb.cpp\":60\n  }\n"), out);
  EXPECT_TRUE(has(e, "bulk_copy into a phase of mbarrier 'bars'[0] that never completed before the threadgroup ended")) << e;
  EXPECT_TRUE(has(e, "mb.cpp:60")) << e;
  // More arrivals than the count while the phase waits for bytes.
  e = run(kernel_text("  if %is0 {\n    mbar_arrive_tx %b, %c0, %c512\n    mbar_arrive %b, %c0 @\"mb.cpp\":70\n  }\n"), out);
  EXPECT_TRUE(has(e, "more arrivals than its count")) << e;
}

// An mbarrier is initialized once, before a barrier that orders the init before its other users.
TEST(Mbarrier, InitIsOrderedByABarrierAndHappensOnce) {
  std::vector<float> out;
  std::string e = run(kernel_text("  mbar_arrive %b, %c1 @\"mb.cpp\":80\n", "%c1", ""), out);
  EXPECT_TRUE(has(e, "mbar_arrive on mbarrier 'bars'[1], which thread {0, 0, 0} initialized at mb.cpp:11 with no barrier "
                     "between (thread {1, 0, 0})")) << e;
  e = run(kernel_text("  if %is0 {\n    mbar_init %b, %c0, %c1\n  }\n"), out);
  EXPECT_TRUE(has(e, "which thread {0, 0, 0} already initialized at mb.cpp:10")) << e;
  e = run(kernel_text("  %ix = const<2> : u32\n  mbar_arrive %b, %ix\n"), out);
  EXPECT_TRUE(has(e, "mbar_arrive of mbarrier array 'bars' at index 2 is out of range: the array has 2 barriers")) << e;
  e = run("kernel mb mode=Reduction {\n  param x: in buf<f32> extent=256\n  param r: out buf<f32> extent=128\n  %b = tg_alloc<bars, 1> : u64\n"
          "  %c0 = const<0> : u32\n  mbar_arrive %b, %c0 @\"mb.cpp\":90\n}\n",
          out);
  EXPECT_TRUE(has(e, "mbar_arrive on mbarrier 'bars'[0], which no mbar_init of this threadgroup initialized")) << e;
}

// Ordinary stores, then an arrival of every thread, a wait, and reads of another thread's slot:
// the completed phase orders them (no barrier() needed); without the wait it is a race.
TEST(Mbarrier, ACompletedPhaseOrdersOrdinaryAccesses) {
  std::vector<float> out;
  const std::string store =
      "  %f = cast %l : f32\n  tg_store %a, %l, %f\n  mbar_arrive %b, %c1\n";
  const std::string read = "  %p = xor %l, %c1 : u32\n  %g = tg_load %a, %p : f32\n  store<r> %l, %g\n";
  ASSERT_EQ(run(kernel_text(store + "  mbar_wait %b, %c1, %c0\n" + read), out), "");
  for (uint32_t l = 0; l < 128; ++l) EXPECT_EQ(out[l], float(l ^ 1u)) << l;
  std::string e = run(kernel_text(store + read), out);
  EXPECT_TRUE(has(e, "threadgroup memory race (read after write) on 's'[1]")) << e;
}

// A bulk copy into words an ordinary store wrote needs fence_proxy_async by the writer.
TEST(Mbarrier, CopyEngineWritesAfterOrdinaryStoresNeedTheProxyFence) {
  std::vector<float> out;
  const std::string zero_store = "  %z = const<0.0> : f32\n  tg_store %a, %l, %z @\"mb.cpp\":100\n";
  std::string e = run(kernel_text(zero_store + "  barrier\n" + kCopy + "  mbar_wait %b, %c0, %c0\n" + kRead), out);
  EXPECT_TRUE(has(e, "bulk_copy overwrites threadgroup slot 's'[0], which thread {0, 0, 0} stored to at mb.cpp:100 with "
                     "no fence_proxy_async after the store")) << e;
  ASSERT_EQ(run(kernel_text(zero_store + "  fence_proxy_async\n  barrier\n" + kCopy + "  mbar_wait %b, %c0, %c0\n" + kRead),
                out),
            "");
  for (uint32_t l = 0; l < 128; ++l) EXPECT_EQ(out[l], float(2 * l + 1) + 0.25f) << l;
}

// The copy engine's store: ordinary stores, their writers' fence_proxy_async, a barrier, one
// thread's bulk_store, commit and wait; each missing piece is a located error.
TEST(Mbarrier, BulkStoreNeedsTheFenceAndTheWait) {
  std::vector<float> out;
  const std::string fill = "  %f = cast %l : f32\n  %f2 = add %f, %f : f32\n  tg_store %a, %l, %f2 @\"mb.cpp\":150\n";
  const std::string store = "  if %is0 {\n    bulk_store<r, 128> %a, %c0, %c0 @\"mb.cpp\":160\n    bulk_commit\n";
  ASSERT_EQ(run(kernel_text(fill + "  fence_proxy_async\n  barrier\n" + store + "    bulk_wait<0>\n  }\n"), out), "");
  for (uint32_t l = 0; l < 128; ++l) EXPECT_EQ(out[l], float(2 * l)) << l;
  std::string e = run(kernel_text(fill + "  barrier\n" + store + "    bulk_wait<0>\n  }\n"), out);
  EXPECT_TRUE(has(e, "bulk_store reads threadgroup slot 's'[0], which thread {0, 0, 0} stored to at mb.cpp:150 with no "
                     "fence_proxy_async after the store")) << e;
  EXPECT_TRUE(has(e, "at mb.cpp:160")) << e;
  // The array overwritten while the store may still read it.
  e = run(kernel_text(fill + "  fence_proxy_async\n  barrier\n" + store + "  }\n  barrier\n" +
                      "  tg_store %a, %l, %f @\"mb.cpp\":170\n  if %is0 {\n    bulk_wait<0>\n  }\n"),
          out);
  EXPECT_TRUE(has(e, "writes threadgroup slot 's'[0], which the bulk_store at mb.cpp:160 may still be reading")) << e;
  EXPECT_TRUE(has(e, "at mb.cpp:170")) << e;
  e = run(kernel_text(fill + "  fence_proxy_async\n  barrier\n" + store + "  }\n"), out);
  EXPECT_TRUE(has(e, "bulk_store whose group no bulk_wait completed before the threadgroup ended")) << e;
  e = run(kernel_text("  if %is0 {\n    bulk_store<x, 128> %a, %c0, %c0\n  }\n"), out);
  EXPECT_TRUE(has(e, "writes input buffer 'x' (declare it out or inout)")) << e;
}

// Bulk copies are 16-byte aligned at both ends and in range: located errors otherwise.
TEST(Mbarrier, BulkCopyAlignmentAndRange) {
  std::vector<float> out;
  std::string e = run(kernel_text("  if %is0 {\n    mbar_arrive_tx %b, %c0, %c512\n"
                                  "    bulk_copy<x, 128> %a, %c2, %c0, %b, %c0 @\"mb.cpp\":110\n  }\n"),
                      out);
  EXPECT_TRUE(has(e, "bulk_copy from index 0 of buffer 'x' to index 2 of 's': both must be 16-byte aligned (multiples of "
                     "4 elements")) << e;
  e = run(kernel_text("  if %is0 {\n    mbar_arrive_tx %b, %c0, %c512\n"
                      "    bulk_copy<x, 128> %a, %c0, %c2, %b, %c0\n  }\n"),
          out);
  EXPECT_TRUE(has(e, "both must be 16-byte aligned")) << e;
  e = run(kernel_text("  if %is0 {\n    mbar_arrive_tx %b, %c0, %c512\n"
                      "    bulk_copy<x, 128> %a, %c0, %c512, %b, %c0\n  }\n"),
          out);
  EXPECT_TRUE(has(e, "bulk_copy of buffer 'x' at index 512 is out of range")) << e;
  e = run(kernel_text("  if %is0 {\n    mbar_arrive_tx %b, %c0, %c512\n"
                      "    bulk_copy<x, 128> %a, %c512, %c0, %b, %c0\n  }\n"),
          out);
  EXPECT_TRUE(has(e, "bulk_copy of 128 elements into threadgroup array 's' at index 512 is out of range")) << e;
}

// setmaxnreg is run by every thread of each warpgroup that runs it, or it is a located error.
TEST(Mbarrier, SetMaxNRegIsAWholeWarpgroupOp) {
  std::vector<float> out;
  ASSERT_EQ(run(kernel_text("  setmaxnreg_dec<40>\n"), out), "");
  std::string e = run(kernel_text("  %lt = lt %l, %c2 : bool\n  if %lt {\n    setmaxnreg_inc<232> @\"mb.cpp\":120\n  }\n"), out);
  EXPECT_TRUE(has(e, "setmaxnreg_inc reached by 2 of the 128 threads of warpgroup 0")) << e;
  EXPECT_TRUE(has(e, "mb.cpp:120")) << e;
  // 96 threads: warpgroup 0 is incomplete.
  e = run(kernel_text("  setmaxnreg_dec<40>\n"), out, 96);
  EXPECT_TRUE(has(e, "setmaxnreg_dec reached by 96 of the 128 threads of warpgroup 0")) << e;
}

// The verifier: mbarriers are u64 threadgroup elements used by mbarrier ops only; bulk copies move
// multiples of 16 bytes into 16-byte aligned arrays; setmaxnreg counts are multiples of 8.
TEST(Mbarrier, VerifierRules) {
  auto verify_error = [](const std::string& body, const std::string& decl) {
    ir::Kernel k = ir::parse("kernel v mode=Reduction {\n  param x: in buf<f32> extent=256\n" + decl +
                             "  %c0 = const<0> : u32\n  %c1 = const<1> : u32\n" + body + "}\n");
    ir::Diagnostics d;
    ir::verify(k, d);
    return d.render(k);
  };
  const std::string bars = "  %a = tg_alloc<s, 256, align=16> : f32\n  %b = tg_alloc<bars, 2> : u64\n";
  EXPECT_EQ(verify_error("  mbar_init %b, %c0, %c1\n  mbar_arrive_tx %b, %c0, %c1\n  mbar_wait %b, %c0, %c0\n"
                         "  bulk_copy<x, 4> %a, %c0, %c0, %b, %c0\n  fence_proxy_async\n  setmaxnreg_inc<240>\n",
                         bars),
            "");
  EXPECT_TRUE(has(verify_error("  mbar_arrive %a, %c0\n", bars),
                  "names threadgroup array of f32 as an mbarrier; mbarriers are u64 elements"));
  EXPECT_TRUE(has(verify_error("  %v = tg_load %b, %c0 : u64\n  mbar_arrive %b, %c0\n", bars),
                  "tg_load uses threadgroup array 'bars', which holds mbarriers (only mbarrier ops may touch it)"));
  EXPECT_TRUE(has(verify_error("  %i = const<0> : i32\n  mbar_arrive %b, %i\n", bars), "the barrier index must be u32"));
  EXPECT_TRUE(has(verify_error("  bulk_copy<x, 3> %a, %c0, %c0, %b, %c0\n", bars),
                  "copies 3 elements of f32 = 12 bytes; a bulk copy moves a multiple of 16 bytes"));
  EXPECT_TRUE(has(verify_error("  bulk_copy<x, 4> %a, %c0, %c0, %b, %c0\n",
                               "  %a = tg_alloc<s, 256> : f32\n  %b = tg_alloc<bars, 2> : u64\n"),
                  "copies into threadgroup array 's', which is not declared 16-byte aligned"));
  EXPECT_TRUE(has(verify_error("  setmaxnreg_inc<100>\n", bars), "the count is a multiple of 8 from 24 to 256"));
}

// The new ops print and parse back to the same text.
TEST(Mbarrier, TextRoundTrip) {
  const std::string text = kernel_text(kCopy + "  mbar_wait %b, %c0, %c0\n  fence_proxy_async\n  setmaxnreg_dec<40>\n" +
                                       kRead);
  ir::Kernel k = ir::parse(text);
  const std::string printed = ir::print(k);
  EXPECT_TRUE(has(printed, "bulk_copy<x, 256> ")) << printed;
  EXPECT_TRUE(has(printed, "setmaxnreg_dec<40>")) << printed;
  EXPECT_EQ(ir::print(ir::parse(printed)), printed);
}

// The fuzzer orders some threadgroup exchanges with an all-thread arrival and wait (op class
// "mbar"): such programs exist, run on the interpreter before and after the pipeline with the
// same results, and the class can be left out.
TEST(Mbarrier, FuzzProgramsOrderExchangesWithMbarriers) {
  size_t with = 0;
  for (uint64_t seed = 0; seed < 400 && with < 12; seed += 2) {
    ir::Kernel k = fuzz::random_program(seed, true);
    size_t waits = 0;
    ir::walk(k, [&](ir::Id id) { waits += k.insts[id].op == ir::Op::MbarWait; });
    if (waits == 0) continue;
    ++with;
    const fuzz::RandomLaunch launch = fuzz::random_launch(k, seed);
    const auto want = fuzz::run_launch(k, launch, 32);
    const auto got = fuzz::run_launch(passes::optimize(k), launch, 32);
    ASSERT_EQ(want.size(), got.size());
    for (size_t b = 0; b < want.size(); ++b) EXPECT_EQ(want[b], got[b]) << "seed " << seed << ", buffer " << b;
    fuzz::RandomProgramOptions o;
    o.exclude = fuzz::kMbar;
    ir::Kernel without = fuzz::random_program(seed, true, o);
    ir::walk(without, [&](ir::Id id) { EXPECT_FALSE(ir::is_mbar_op(without.insts[id].op)) << "seed " << seed; });
  }
  EXPECT_GE(with, 12u);
}

// --- Lowering --------------------------------------------------------------------------------

ir::Kernel optimized(const std::string& body) { return passes::optimize(ir::parse(kernel_text(body))); }

// The CUDA lowering is inline PTX (mbarrier.init/arrive/expect_tx/try_wait.parity, the bulk copy
// and store, the proxy fence) that NVRTC compiles for sm_90a and sm_90.
TEST(MbarrierCodegen, CudaLowersToInlinePtxAndCompilesForSm90a) {
  const std::string body = kCopy + "  mbar_wait %b, %c0, %c0\n" + kRead +
                           "  fence_proxy_async\n  mbar_arrive %b, %c1\n  mbar_wait %b, %c1, %c0\n"
                           "  if %is0 {\n    bulk_store<r, 128> %a, %c0, %c0\n    bulk_commit\n    bulk_wait<0>\n  }\n";
  ir::Kernel k = optimized(body);
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(e.ok()) << e.diags.render(k);
  for (const char* want : {"mbarrier.init.shared::cta.b64 [%0], %1;", "mbarrier.arrive.expect_tx.shared::cta.b64",
                           "mbarrier.arrive.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;",
                           "} while (!iron_done);", "fence.proxy.async.shared::cta;",
                           "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];",
                           "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 512;", "cp.async.bulk.commit_group;",
                           "cp.async.bulk.wait_group 0;"})
    EXPECT_TRUE(has(e.source, want)) << want << "\n" << e.source;
  rt::NvrtcResult r = rt::nvrtc_compile(e.source, "mb", "sm_90a");
  if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
  EXPECT_TRUE(r.ok) << r.log.substr(0, 3000);
  // Plain sm_90 takes every op but setmaxnreg.
  r = rt::nvrtc_compile(e.source, "mb", "sm_90");
  EXPECT_TRUE(r.ok) << r.log.substr(0, 3000);
}

// setmaxnreg needs sm_90a and a kernel built for one threadgroup shape (__launch_bounds__(n, 1)).
TEST(MbarrierCodegen, SetMaxNRegNeedsSm90aAndARegisterCap) {
  ir::Kernel k = optimized("  setmaxnreg_dec<40> @\"mb.cpp\":130\n");
  codegen::EmitOptions o;
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Cuda, o);
  EXPECT_TRUE(has(e.diags.render(k), "setmaxnreg_dec takes effect only under a register cap at entry")) << e.diags.render(k);
  EXPECT_TRUE(has(e.diags.render(k), "mb.cpp:130")) << e.diags.render(k);
  o.threadgroup[0] = 128;
  o.threadgroup[1] = o.threadgroup[2] = 1;
  e = codegen::emit(k, DType::F32, codegen::Target::Cuda, o);
  ASSERT_TRUE(e.ok()) << e.diags.render(k);
  EXPECT_TRUE(has(e.source, "__launch_bounds__(128, 1)")) << e.source;
  EXPECT_TRUE(has(e.source, "setmaxnreg.dec.sync.aligned.u32 40;")) << e.source;
  rt::NvrtcResult r = rt::nvrtc_compile(e.source, "mb", "sm_90a");
  if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
  EXPECT_TRUE(r.ok) << r.log.substr(0, 3000);
  // Plain sm_90: a located error at emission, before NVRTC.
  e = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_90"), o);
  EXPECT_TRUE(has(e.diags.render(k), "setmaxnreg_dec needs the arch-specific target sm_90a; this code is built for sm_90"))
      << e.diags.render(k);
}

// GLSL, MSL, HIP and CUDA below sm_90 report the ops as located "cannot express" errors.
TEST(MbarrierCodegen, OtherTargetsAndOlderArchitecturesSayWhy) {
  ir::Kernel k = optimized(kCopy + "  mbar_wait %b, %c0, %c0 @\"mb.cpp\":140\n" + kRead);
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_80"));
  EXPECT_TRUE(has(e.diags.render(k), "mbar_wait needs CUDA sm_90 or newer; this code is built for sm_80")) << e.diags.render(k);
  EXPECT_TRUE(has(e.diags.render(k), "mb.cpp:140")) << e.diags.render(k);
  for (codegen::Target t : {codegen::Target::Glsl, codegen::Target::Msl, codegen::Target::Hip}) {
    e = codegen::emit(k, DType::F32, t);
    const std::string d = e.diags.render(k);
    EXPECT_TRUE(has(d, "dialect cannot express mbar_wait (mbarriers, the copy engine, tensor maps and setmaxnreg are CUDA sm_90 "
                       "features with no equivalent here)")) << codegen::target_name(t) << ": " << d;
    EXPECT_TRUE(has(d, "mb.cpp:140")) << d;
  }
}

// --- On a device ------------------------------------------------------------------------------

// The bulk copy + mbarrier kernel on CUDA (an sm_90 device; skipped without one): the results
// equal the interpreter's, word for word, over a grid of 4 threadgroups with two rounds each.
TEST(MbarrierDevice, BulkCopyAndPhasesOnCuda) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(Backend::Cuda);
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA context: " << e.what();
  }
  if (ctx->info().arch.rfind("sm_9", 0) != 0 && ctx->info().arch.rfind("sm_1", 0) != 0)
    GTEST_SKIP() << "mbarrier ops need sm_90; this device is " << ctx->info().arch;
  const std::string round2 =
      "  barrier\n"
      "  if %is0 {\n"
      "    mbar_arrive_tx %b, %c0, %c512\n"
      "    bulk_copy<x, 128> %a, %c0, %c128, %b, %c0\n"
      "  }\n"
      "  mbar_wait %b, %c0, %c1\n"
      "  %w = tg_load %a, %l : f32\n  %sum = add %w, %v : f32\n  store<r> %l, %sum\n"
      "  %f = cast %l : f32\n  tg_store %a, %l, %f\n  mbar_arrive %b, %c1\n  mbar_wait %b, %c1, %c0\n"
      "  %p = xor %l, %c1 : u32\n  %g = tg_load %a, %p : f32\n  %h = add %sum, %g : f32\n  store<r> %l, %h\n";
  ir::Kernel k = ir::parse(kernel_text(kCopy + "  mbar_wait %b, %c0, %c0\n" + kRead + round2));
  std::vector<float> x(256), want(128, 0.0f), got(128, -1.0f);
  for (size_t j = 0; j < x.size(); ++j) x[j] = float(j) + 0.25f;
  {
    std::vector<interp::BufferArg> args{{x.data(), x.size() * 4}, {want.data(), want.size() * 4}};
    interp::Options o;
    o.lane_width = 32;
    interp::run(k, DType::F32, args, {}, {1, 1, 1}, {128, 1, 1}, o);
  }
  for (uint32_t l = 0; l < 128; ++l)
    ASSERT_EQ(want[l], float(2 * l + 1) + 0.25f + float(128 + l) + 0.25f + float(l ^ 1u)) << l;
  DeviceBuffer dx = ctx->alloc(DType::F32, 256), dr = ctx->alloc(DType::F32, 128);
  ctx->upload(dx, x.data(), x.size() * 4);
  ctx->upload(dr, got.data(), got.size() * 4);
  for (int rep = 0; rep < 20; ++rep) {
    ctx->dispatch_with_grid(k, DType::F32, {{"x", dx}, {"r", dr}}, {}, {1, 1, 1}, {128, 1, 1});
    ctx->synchronize();
    ctx->download(dr, got.data(), got.size() * 4);
    for (uint32_t l = 0; l < 128; ++l) ASSERT_EQ(got[l], want[l]) << "run " << rep << ", thread " << l;
  }
}

// Dead-store elimination keeps threadgroup stores whose only reader is a bulk store (it once
// dropped them, and the copy engine stored whatever the array held).
TEST(MbarrierPasses, StoresABulkStoreReadsSurviveTheOptimizer) {
  ir::Kernel k = ir::parse(kernel_text(
      "  %xv = load<x> %l : f32\n  tg_store %a, %l, %xv\n  fence_proxy_async\n  barrier\n"
      "  if %is0 {\n    bulk_store<r, 128> %a, %c0, %c0\n    bulk_commit\n    bulk_wait<0>\n  }\n"));
  const std::string text = ir::print(passes::optimize(k));
  EXPECT_NE(text.find("tg_store"), std::string::npos) << text;
  EXPECT_NE(text.find("bulk_store"), std::string::npos) << text;
}

// The copy engine's store on CUDA: each thread doubles its element of x into the array, fences
// the async proxy, a barrier, thread 0 bulk-stores the array to r, commits and waits.
TEST(MbarrierDevice, BulkStoreOnCuda) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(Backend::Cuda);
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA context: " << e.what();
  }
  if (ctx->info().arch.rfind("sm_9", 0) != 0 && ctx->info().arch.rfind("sm_1", 0) != 0)
    GTEST_SKIP() << "bulk stores need sm_90; this device is " << ctx->info().arch;
  ir::Kernel k = ir::parse(kernel_text(
      "  %xv = load<x> %l : f32\n  %x2 = add %xv, %xv : f32\n  tg_store %a, %l, %x2\n  fence_proxy_async\n  barrier\n"
      "  if %is0 {\n    bulk_store<r, 128> %a, %c0, %c0\n    bulk_commit\n    bulk_wait<0>\n  }\n"));
  std::vector<float> x(256), got(128, -1.0f);
  for (size_t j = 0; j < x.size(); ++j) x[j] = float(j) + 0.25f;
  DeviceBuffer dx = ctx->alloc(DType::F32, 256), dr = ctx->alloc(DType::F32, 128);
  ctx->upload(dx, x.data(), x.size() * 4);
  for (int rep = 0; rep < 20; ++rep) {
    ctx->upload(dr, got.data(), got.size() * 4);
    ctx->dispatch_with_grid(k, DType::F32, {{"x", dx}, {"r", dr}}, {}, {1, 1, 1}, {128, 1, 1});
    ctx->synchronize();
    std::vector<float> r(128);
    ctx->download(dr, r.data(), r.size() * 4);
    for (uint32_t l = 0; l < 128; ++l) ASSERT_EQ(r[l], 2.0f * (float(l) + 0.25f)) << "run " << rep << ", thread " << l;
  }
}

}  // namespace
}  // namespace iron
