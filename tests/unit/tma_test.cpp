// Tensor-map copies (issue 13 item 1; docs/semantics.md "Tensor-map copies"): tma_load_2d and
// tma_store_2d in the text IR and the DSL, the verifier's and the dispatch's located errors, the
// interpreter's definition (the box, zero fill outside the tensor, the swizzle, the barrier's
// transaction bytes) and its errors, known-bad mutations the conformance oracle catches, the
// CUDA lowering and the other targets' refusal, and a DSL kernel on the interpreter and (where
// there is an sm_90 device) on CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "fuzz/conformance.hpp"
#include "fuzz/random_program.hpp"
#include "passes/interpreter.hpp"

namespace iron {
namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string verify_text(const std::string& text) {
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}

// 64 threads; x is a 64 x 16 bf16 tensor, the box 64 x 8 rows of 128 bytes (`align`: the array's
// declared alignment, `body` after the barrier init).
std::string kernel_text(const std::string& body, const std::string& align = "1024", const std::string& count = "1024") {
  return "kernel tk mode=Reduction {\n"
         "  param x: in buf<bf16> extent=1024\n"
         "  param map: tensormap\n"
         "  param r: out buf<bf16> extent=512\n"
         "  %a = tg_alloc<s, " + count + ", align=" + align + "> : bf16\n"
         "  %b = tg_alloc<bars, 1> : u64\n"
         "  %l = local_id<0> : u32\n"
         "  %c0 = const<0> : u32\n  %c1 = const<1> : u32\n  %c1024 = const<1024> : u32\n"
         "  %x0 = const<0> : i32\n  %y3 = const<3> : i32\n"
         "  %is0 = eq %l, %c0 : bool\n"
         "  if %is0 {\n    mbar_init %b, %c0, %c1\n  }\n  barrier\n" + body + "}\n";
}

// Runs `text` on the interpreter with a map over x (64 x 16 bf16, x[i] = i) of box 64 x 8 and
// swizzle span `span`; r gets the results.
std::string run(const std::string& text, uint32_t span, std::vector<uint16_t>& r, std::vector<uint32_t> box = {64, 8},
                std::vector<uint64_t> dims = {64, 16}) {
  try {
    ir::Kernel k = ir::parse(text);
    fuzz::RandomLaunch L;
    L.dtype = DType::F32;
    L.grid = {1, 1, 1};
    L.threadgroup = {64, 1, 1};
    std::vector<unsigned char> x(1024 * 2);
    for (uint32_t i = 0; i < 1024; ++i) {
      const uint16_t h = num::f32_to_bf16(float(i % 256));
      std::memcpy(&x[i * 2], &h, 2);
    }
    L.buffers = {x, std::vector<unsigned char>(512 * 2, 0xff)};
    L.maps.push_back({0, dims, box, span});
    std::vector<std::vector<unsigned char>> out = fuzz::run_launch(k, L, 32);
    r.resize(512);
    std::memcpy(r.data(), out[1].data(), 1024);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const std::string kLoad =
    "  if %is0 {\n"
    "    %bytes = const<1024> : u32\n"
    "    mbar_arrive_tx %b, %c0, %bytes @\"t.cpp\":20\n"
    "    tma_load_2d<map> %a, %c0, %x0, %y3, %b, %c0 @\"t.cpp\":21\n"
    "  }\n"
    "  mbar_wait %b, %c0, %c0 @\"t.cpp\":22\n";

// Every thread copies the array's elements l, l + 64, ... (512 in all) into r, unswizzled.
std::string read_all() {
  std::string s;
  for (int j = 0; j < 8; ++j) {
    const std::string J = std::to_string(j);
    s += "  %k" + J + " = const<" + std::to_string(64 * j) + "> : u32\n  %i" + J + " = add %l, %k" + J + " : u32\n";
    s += "  %v" + J + " = tg_load %a, %i" + J + " : bf16\n  store<r> %i" + J + ", %v" + J + "\n";
  }
  return s;
}

float bf(uint16_t h) { return num::bf16_to_f32(h); }

}  // namespace

// The ops print and parse back to the same text; the verifier names what is wrong.
TEST(Tma, TextIrAndVerifierRules) {
  const std::string text = kernel_text(kLoad + "  if %is0 {\n    tma_store_2d<map> %a, %c0, %x0, %c1\n    bulk_commit\n"
                                               "    bulk_wait<0>\n  }\n");
  ir::Kernel k = ir::parse(text);
  EXPECT_EQ(verify_text(text), "");
  const std::string printed = ir::print(k);
  EXPECT_TRUE(has(printed, "tma_load_2d<map> %")) << printed;
  EXPECT_TRUE(has(printed, "tma_store_2d<map> %")) << printed;
  EXPECT_EQ(ir::print(ir::parse(printed)), printed);
  EXPECT_EQ(verify_text(kernel_text(kLoad, "128")), "");
  EXPECT_TRUE(has(verify_text(kernel_text(kLoad, "64")),
                  "tma_load_2d into threadgroup array 's', which is not declared 128-byte aligned"));
  std::string bad = kLoad;
  bad.replace(bad.find("<map>"), 5, "<x>");
  EXPECT_TRUE(has(verify_text(kernel_text(bad)), "tma_load_2d names parameter 'x', which is not a tensor map"));
  bad = kLoad;
  bad.replace(bad.find("%x0, %y3"), 8, "%x0, %f");
  EXPECT_TRUE(has(verify_text(kernel_text("  %f = const<1.0> : f32\n" + bad)),
                  "the y coordinate must be i32 or u32 (read as signed), is f32"));
  bad = kLoad;
  bad.replace(bad.find("%b, %c0 @\"t.cpp\":21"), 7, "%a, %c0");
  EXPECT_TRUE(has(verify_text(kernel_text(bad)), "as an mbarrier; mbarriers are u64 elements"));
}

// The box lands at the destination, row by row; with a swizzle the 16-byte chunk c of box byte
// b sits at chunk c ^ ((b >> 7) & (span / 16 - 1)); each mode reads back through the definition.
TEST(Tma, InterpreterCopiesTheBoxWithEachSwizzle) {
  for (uint32_t span : {0u, 32u, 64u, 128u}) {
    const std::vector<uint32_t> box = {span ? span / 2 : 64, 8};
    std::vector<uint16_t> r;
    std::string load = kLoad;
    load.replace(load.find("const<1024>"), 11, "const<" + std::to_string(box[0] * 16) + ">");
    ASSERT_EQ(run(kernel_text(load + read_all()), span, r, box), "") << span;
    const uint32_t w = box[0];
    for (uint32_t o = 0; o < w * 8; ++o) {
      const uint32_t b = o * 2, s = span ? b ^ (((b >> 7) & (span / 16 - 1)) << 4) : b;
      const uint32_t row = o / w, col = o % w;
      EXPECT_EQ(bf(r[s / 2]), float(((3 + row) * 64 + col) % 256)) << "span " << span << ", box element " << o;
    }
  }
}

// A box row starts on a 16-byte boundary of the tensor or not at all: x = -5 of a bf16 tensor
// (byte -10) is an error naming the copy (on the H200 the copy engine stops the kernel with an
// illegal instruction there, session 9's tma-s9 call).
TEST(Tma, AColumnOffA16ByteBoundaryIsAnError) {
  std::string load = kLoad;
  load.replace(load.find("%x0, %y3"), 8, "%xm, %y3");
  std::vector<uint16_t> r;
  const std::string e = run(kernel_text("  %xm = const<-5> : i32\n" + load + read_all()), 0, r);
  EXPECT_TRUE(has(e, "at x = -5: the box's first column is byte -10 of its row, not a multiple of 16")) << e;
  EXPECT_TRUE(has(e, "x must be a multiple of 8 bf16 elements")) << e;
}

// A stored box starts at a non-negative column and row: a store at x = -8 or y = -1 is an error
// naming the copy (on the H200 both stop the kernel with an illegal instruction, session 10's
// tma-s10 call), while a store running past the tensor's far sides is clipped (no error).
TEST(Tma, AStoreBeforeTheOriginIsAnError) {
  const auto store_at = [](const std::string& x, const std::string& y) {
    return kernel_text(kLoad + "  %sx = const<" + x + "> : i32\n  %sy = const<" + y + "> : i32\n  fence_proxy_async\n  barrier\n"
                       "  if %is0 {\n    tma_store_2d<map> %a, %c0, %sx, %sy @\"t.cpp\":60\n    bulk_commit\n    bulk_wait<0>\n  }\n");
  };
  std::vector<uint16_t> r;
  std::string e = run(store_at("-8", "0"), 0, r);
  EXPECT_TRUE(has(e, "tma_store_2d through tensor map 'map' at (-8, 0): a stored box starts at a non-negative column and row"))
      << e;
  EXPECT_TRUE(has(e, "t.cpp:60")) << e;
  e = run(store_at("0", "-1"), 0, r);
  EXPECT_TRUE(has(e, "at (0, -1): a stored box starts at a non-negative column and row")) << e;
  EXPECT_EQ(run(store_at("0", "12"), 0, r), "");   // rows 12..19 of 16: the last four clipped
  EXPECT_EQ(run(store_at("8", "0"), 0, r), "");    // columns 8..71 of 64: the last eight clipped
}

// Outside the tensor the box reads zeros (a negative coordinate, or past the last row/column);
// a coordinate that is a runtime value is used as it is.
TEST(Tma, BoundaryBoxesZeroFill) {
  std::string load = kLoad;
  load.replace(load.find("%x0, %y3"), 8, "%xm, %ym");
  const std::string coords = "  %xm = const<-8> : i32\n  %yl = load<x> %c1 : bf16\n  %yf = cast %yl : f32\n"
                             "  %yi = cast %yf : i32\n  %c12 = const<12> : i32\n  %ym = add %yi, %c12 : i32\n";
  std::vector<uint16_t> r;
  ASSERT_EQ(run(kernel_text(coords + load + read_all()), 0, r), "");
  // x[1] = 1, so y = 13: rows 13..15 are inside, 16..20 outside; columns -8..-1 outside.
  for (uint32_t o = 0; o < 512; ++o) {
    const int row = 13 + int(o / 64), col = -8 + int(o % 64);
    const float want = row < 16 && col >= 0 ? float((row * 64 + col) % 256) : 0.0f;
    EXPECT_EQ(bf(r[o]), want) << "box element " << o;
  }
}

// The interpreter's errors: expected bytes that do not match the box, a misaligned or
// overrunning destination, an array declared less aligned than the swizzle's pattern, a map of
// another rank or element type, and a read of a map's words.
TEST(Tma, InterpreterErrors) {
  std::vector<uint16_t> r;
  std::string wrong = kLoad;
  wrong.replace(wrong.find("const<1024>"), 11, "const<512>");
  std::string e = run(kernel_text(wrong), 0, r);
  EXPECT_TRUE(has(e, "mbar_wait on mbarrier 'bars'[0] for phase 0")) << e;
  EXPECT_TRUE(has(e, "its copies delivered 512 more transaction bytes than the phase expects")) << e;
  wrong = kLoad;
  wrong.replace(wrong.find("const<1024>"), 11, "const<2048>");
  e = run(kernel_text(wrong), 0, r);
  EXPECT_TRUE(has(e, "1024 expected transaction bytes never came")) << e;
  wrong = kLoad;
  wrong.replace(wrong.find("%a, %c0, %x0"), 12, "%a, %c1, %x0");
  e = run(kernel_text(wrong), 0, r);
  EXPECT_TRUE(has(e, "tma_load_2d at index 1 of threadgroup array 's' (byte 2) is misaligned: an unswizzled box lands at "
                     "multiples of 128 bytes")) << e;
  EXPECT_TRUE(has(e, "t.cpp:21")) << e;
  e = run(kernel_text(kLoad, "1024", "500"), 0, r);
  EXPECT_TRUE(has(e, "tma_load_2d of a 64 x 8 box (512 elements) at index 0 of threadgroup array 's' overruns it: the "
                     "array has 500 elements")) << e;
  e = run(kernel_text(kLoad, "512"), 128, r);
  EXPECT_TRUE(has(e, "declared 512-byte aligned: the 128B swizzle's pattern needs 1024")) << e;
  e = run(kernel_text(kLoad), 0, r, {64, 8, 1}, {64, 16, 1});
  EXPECT_TRUE(has(e, "tma_load_2d through tensor map 'map' of 3 dimensions; a 2d copy needs 2")) << e;
  e = run(kernel_text("  %w = load<map> %c0 : u32 @\"t.cpp\":40\n"), 0, r);
  EXPECT_TRUE(has(e, "load of tensor map 'map': its words are the CUDA driver's encoding")) << e;
}

// Known-bad mutations of a tensor-map case fail the conformance oracle on the interpreter: the
// host passes another swizzle mode, the kernel drops the destination offset or a coordinate.
TEST(Tma, ConformanceCatchesKnownBadMutations) {
  const std::vector<fuzz::ConformanceCase> cases = fuzz::conformance_cases("conformance.tma_");
  ASSERT_GE(cases.size(), 10u);
  auto difference = [](const fuzz::ConformanceCase& c, const ir::Kernel& k, const fuzz::RandomLaunch& L) {
    try {
      return fuzz::conformance_difference(c, fuzz::run_launch(k, L, 32).back(), false);
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  };
  size_t checked = 0;
  for (const fuzz::ConformanceCase& c : cases) {
    EXPECT_EQ(difference(c, c.kernel, c.launch), "") << c.name;
    if (c.name.find("tma_tile") != std::string::npos) continue;
    // Another swizzle mode with the same box (the rules allow any mode the array's alignment
    // takes; the copy then lands elsewhere).
    for (uint32_t span : {0u, 32u, 64u, 128u}) {
      if (span == c.launch.maps[0].swizzle || (span && c.launch.maps[0].swizzle == 0)) continue;
      fuzz::RandomLaunch L = c.launch;
      for (fuzz::LaunchMap& m : L.maps) m.swizzle = span;
      EXPECT_NE(difference(c, c.kernel, L), "") << c.name << " with swizzle " << span;
    }
    // The destination offset dropped, a coordinate become 0 (operands 1, 2, 3 of the copy
    // replaced by the kernel's u32 constant 0).
    ir::Id zero = ir::kNone, copy = ir::kNone;
    for (ir::Id id = 0; id < ir::Id(c.kernel.insts.size()); ++id) {
      const ir::Inst& in = c.kernel.insts[id];
      if (in.op == ir::Op::Const && in.type == Type(DType::U32) && in.attr(ir::Attr::Value) == 0 && zero == ir::kNone) zero = id;
      if (in.op == c.op) copy = id;
    }
    ASSERT_NE(zero, ir::kNone) << c.name;
    ASSERT_NE(copy, ir::kNone) << c.name;
    for (size_t operand : {1, 2, 3}) {
      ir::Kernel k = c.kernel;
      k.insts[copy].operands[operand] = zero;
      EXPECT_NE(difference(c, k, c.launch), "") << c.name << ": operand " << operand << " become 0";
    }
    ++checked;
  }
  EXPECT_GE(checked, 10u);
}

// The CUDA lowering (sm_90a): the tensor copies with the map's __grid_constant__ address; below
// sm_90 and on the other targets a located "cannot express".
TEST(Tma, CudaLoweringAndOtherTargets) {
  const std::string text = kernel_text(kLoad + "  if %is0 {\n    tma_store_2d<map> %a, %c0, %x0, %c1 @\"t.cpp\":50\n"
                                               "    bulk_commit\n    bulk_wait<0>\n  }\n");
  ir::Kernel k = ir::parse(text);
  codegen::Emitted c = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_90a"));
  ASSERT_TRUE(c.ok()) << c.diags.render(k);
  EXPECT_TRUE(has(c.source, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"))
      << c.source;
  EXPECT_TRUE(has(c.source, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];")) << c.source;
  EXPECT_TRUE(has(c.source, "reinterpret_cast<unsigned long long>(&p_map_value)")) << c.source;
  // The barrier's init is fenced for the copy engine (the async proxy) before anyone uses it.
  EXPECT_TRUE(has(c.source, "mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: ")) << c.source;
  EXPECT_TRUE(has(c.source, "asm volatile(\"fence.mbarrier_init.release.cluster;\\nfence.proxy.async.shared::cta;\\n\" ::: \"memory\");"))
      << c.source;
  codegen::Emitted old = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_80"));
  EXPECT_TRUE(has(old.diags.render(k), "tma_load_2d needs CUDA sm_90 or newer; this code is built for sm_80"))
      << old.diags.render(k);
  for (codegen::Target t : {codegen::Target::Glsl, codegen::Target::Msl, codegen::Target::Hip}) {
    codegen::Emitted e = codegen::emit(k, DType::F32, t);
    ASSERT_FALSE(e.ok()) << codegen::target_name(t);
    const std::string d = e.diags.render(k);
    EXPECT_TRUE(has(d, "not expressible") || has(d, "cannot express")) << codegen::target_name(t) << ": " << d;
  }
}

namespace {
// A DSL kernel: a 64 x 16 f16 box (128-byte rows, swizzle 128B) at runtime coordinates (cx,
// cy) loaded into a 1024-aligned array (the map's tensor needs no buffer parameter of its own); lane group 0 reads the 16 x 16 fragment at box row 0,
// column 16 through TileLayout{swizzle {3, 3, 3}} and multiplies it by the identity into r.
void tma_tile_body() {
  using namespace dsl;
  Buffer id = input("id", f16, {256});
  Buffer map = tensor_map("map");
  Expr cx = constexpr_("cx", i32), cy = constexpr_("cy", i32);
  Buffer r = output("r", f32, {256});
  TgBuffer a = threadgroup_alloc("box", f16, 64 * 16, 1024);
  TgBuffer bar = mbarrier_alloc("full", 1);
  if_(local_id(0) == 0u, [&] { mbar_init(bar[0u], 1u); });
  barrier();
  if_(local_id(0) == 0u, [&] {
    mbar_arrive_tx(bar[0u], 64u * 16u * 2u);
    tma_load_2d(map, a[0u], cx, cy, bar[0u]);
  });
  mbar_wait(bar[0u], 0u);
  if_(simd_group_id() == 0u, [&] {
    TileShape t = coop_tile_setup(16, 16, 16, f16);
    Frag fa = coop_tile_load_a(t, a, 16u, 64u, TileLayout{false, Swizzle{3, 3, 3}});
    Frag fb = coop_tile_load_b(t, id, 0u, 16u);
    coop_tile_store(coop_tile_run(fa, fb, coop_tile_fill(t, 0.0f)), r, 0u, 16u);
  });
}

void not_a_map_body() {
  using namespace dsl;
  Buffer x = input("x", f16, {128});
  TgBuffer a = threadgroup_alloc("box", f16, 1024, 1024);
  TgBuffer bar = mbarrier_alloc("full", 1);
  tma_load_2d(x, a[0u], 0, 0, bar[0u]);
}

// Runs tma_tile_body on `ctx` with the map's box at (cx, cy) of a 128 x 64 tensor, x[i] = i mod
// 2048, and swizzle `sw`; returns r.
std::vector<float> run_tma_tile(Context& ctx, const ir::Kernel& k, int cx, int cy, TensorMap::Swizzle sw) {
  std::vector<uint16_t> x(128 * 64), id(256, 0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = num::f32_to_f16(float(i % 2048));
  for (int i = 0; i < 16; ++i) id[size_t(i) * 17] = num::f32_to_f16(1.0f);
  DeviceBuffer dx = ctx.alloc(DType::F16, x.size()), di = ctx.alloc(DType::F16, 256), dr = ctx.alloc(DType::F32, 256);
  ctx.upload(dx, x.data(), x.size() * 2);
  ctx.upload(di, id.data(), 512);
  TensorMap m;
  m.buffer = dx;
  m.dims = {128, 64};
  m.box = {64, 16};
  m.swizzle = sw;
  ctx.dispatch_with_grid(k, DType::F32, {{"id", di}, {"r", dr}}, {{"map", m}, {"cx", cx}, {"cy", cy}},
                         {1, 1, 1}, {64, 1, 1});
  std::vector<float> r(256);
  ctx.download(dr, r.data(), r.size() * 4);
  return r;
}

// The tensor's element the fragment's (row, col) holds: box element 16 + row * 64 + col.
float tile_want(int cx, int cy, int row, int col) {
  const int o = 16 + row * 64 + col, gx = cx + o % 64, gy = cy + o / 64;
  return gx >= 0 && gy >= 0 && gx < 128 && gy < 64 ? float((gy * 128 + gx) % 2048) : 0.0f;
}
}  // namespace

// The DSL: a non-tensor-map parameter is a trace error at its line; the kernel traces, and on
// the interpreter a 128B-swizzled box reads back through the matching TileLayout, at runtime
// coordinates inside the tensor and on its boundary; the dispatch names the copy when the
// array's alignment, box or rank does not fit the map.
TEST(Tma, DslKernelOnTheInterpreter) {
  const std::string e = message([] { trace_kernel(KernelDecl{"nm", &not_a_map_body, Mode::Reduction, {}, __FILE__, __LINE__}); });
  EXPECT_TRUE(has(e, "tma_load_2d: 'x' is not a tensor map parameter (declare it with tensor_map(name))")) << e;
  const ir::Kernel k = trace_kernel(KernelDecl{"tma_tile", &tma_tile_body, Mode::Reduction, {}, __FILE__, __LINE__});
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  for (auto [cx, cy] : {std::pair{8, 5}, std::pair{104, 56}, std::pair{-24, -3}}) {
    const std::vector<float> r = run_tma_tile(*ctx, k, cx, cy, TensorMap::Swizzle::B128);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(r[size_t(i)], tile_want(cx, cy, i / 16, i % 16)) << cx << ", " << cy << ": " << i;
  }
  // The wrong swizzle mode for the layout reads other elements.
  EXPECT_NE(run_tma_tile(*ctx, k, 8, 5, TensorMap::Swizzle::None)[16 * 1 + 0], tile_want(8, 5, 1, 0));
  // Dispatch checks.
  std::vector<uint16_t> x(128 * 64);
  DeviceBuffer dx = ctx->alloc(DType::F16, x.size());
  TensorMap m;
  m.buffer = dx;
  m.dims = {128, 64};
  m.box = {64, 32};
  m.swizzle = TensorMap::Swizzle::B128;
  auto dispatch = [&](const TensorMap& map) {
    return message([&] {
      ctx->dispatch_with_grid(k, DType::F32,
                              {{"id", ctx->alloc(DType::F16, 256)}, {"r", ctx->alloc(DType::F32, 256)}},
                              {{"map", map}, {"cx", 0}, {"cy", 0}}, {1, 1, 1}, {64, 1, 1});
    });
  };
  std::string d = dispatch(m);
  EXPECT_TRUE(has(d, "has a box of 64 x 32 = 2048 elements, but tma_load_2d at ")) << d;
  EXPECT_TRUE(has(d, "copies through threadgroup array 'box' of 1024 (the box overruns it)")) << d;
  m.box = {64, 16};
  m.dims = {128, 64, 1};
  m.box = {64, 16, 1};
  d = dispatch(m);
  EXPECT_TRUE(has(d, "has 3 dimensions, but tma_load_2d at ")) << d;
  m.dims = {128, 64};
  m.box = {32, 16};
  d = dispatch(m);
  EXPECT_TRUE(has(d, "swizzle 128B does not match the box row of 64 bytes")) << d;
  m.box = {64, 16};
  m.strides = {200};
  d = dispatch(m);
  EXPECT_TRUE(has(d, "the stride of dimension 1 is 200 bytes; TMA takes multiples of 16")) << d;
  m.strides = {};
  m.box = {64, 300};
  d = dispatch(m);
  EXPECT_TRUE(has(d, "box dimension 1 is 300 elements (1 to 256)")) << d;
}

// The same DSL kernel on CUDA (an sm_90 device; skipped elsewhere): the driver's encoding and
// the hardware's swizzle agree with the interpreter, inside the tensor and on its boundary.
TEST(TmaDevice, DslKernelOnCudaEqualsTheInterpreter) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(Backend::Cuda);
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA context: " << e.what();
  }
  if (ctx->info().arch.rfind("sm_9", 0) != 0 && ctx->info().arch.rfind("sm_1", 0) != 0)
    GTEST_SKIP() << "tensor-map copies need sm_90; this device is " << ctx->info().arch;
  const ir::Kernel k = trace_kernel(KernelDecl{"tma_tile", &tma_tile_body, Mode::Reduction, {}, __FILE__, __LINE__});
  for (auto [cx, cy] : {std::pair{8, 5}, std::pair{104, 56}, std::pair{-24, -3}}) {
    const std::vector<float> r = run_tma_tile(*ctx, k, cx, cy, TensorMap::Swizzle::B128);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(r[size_t(i)], tile_want(cx, cy, i / 16, i % 16)) << cx << ", " << cy << ": " << i;
  }
}

}  // namespace iron
