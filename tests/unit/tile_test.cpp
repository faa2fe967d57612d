// Cooperative tiles: the DSL's trace-time errors, the verifier's fragment rules, the
// interpreter's definition (one rounding per multiply-accumulate, lane-group rules, races), the
// CUDA lowerings compiling through NVRTC for sm_80 and sm_90 under every MmaStrategy, and the
// GLSL fragments in shared-memory slots (bit-exact with the interpreter on lavapipe; slots past
// the device's shared memory are rejected naming the figures).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "iron/iron.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

using namespace iron;
using namespace iron::dsl;

namespace {

std::string trace_error(KernelBody body, Mode mode = Mode::Reduction, std::vector<DType> dtypes = {}) {
  try {
    trace_kernel(KernelDecl{"tile_kernel", body, mode, std::move(dtypes), __FILE__, __LINE__});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ir::Kernel traced(KernelBody body, std::vector<DType> dtypes = {}) {
  return trace_kernel(KernelDecl{"tile_kernel", body, Mode::Reduction, std::move(dtypes), __FILE__, __LINE__});
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

int g_get_line = 0;
void get_with_traced_row() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", f32, {n});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag acc = coop_tile_fill(t, 1.0f);
  g_get_line = __LINE__ + 1;
  Expr v = coop_tile_get(acc, lane_id(), 3);
  out[local_id(0)] = v;
}

void unsupported_shape() {
  TileShape t = coop_tile_setup(16, 8, 16, f16);
  (void)t;
}

void tiles_in_elementwise() {
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", f32, {n});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag acc = coop_tile_fill(t, 1.0f);
  coop_tile_store(acc, out, 0u, 16u);
}

void load_from_f32_buffer() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag a = coop_tile_load_a(t, x, 0u, 16u);
  Frag b = coop_tile_load_b(t, x, 0u, 16u);
  coop_tile_store(coop_tile_run(a, b, coop_tile_fill(t, 0.0f)), out, 0u, 16u);
}

void signed_stride_and_f16_store() {
  Expr n = constexpr_("n", u32);
  Expr s = constexpr_("s", i32);
  Buffer x = input("x", f16, {n});
  Buffer out = output("out", f16, {n});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag a = coop_tile_load_a(t, x, 0u, s);
  Frag b = coop_tile_load_b(t, x, 0u, 16u);
  coop_tile_store(coop_tile_run(b, a, coop_tile_fill(t, 0.0f)), out, 0u, 16u);
}

void tiles_over_f32_t() {
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", T, {n});
  Buffer out = output("out", f32, {n});
  TileShape t = coop_tile_setup(16, 16, 16, T);
  Frag a = coop_tile_load_a(t, x, 0u, 16u);
  coop_tile_store(coop_tile_run(a, coop_tile_load_b(t, x, 0u, 16u), coop_tile_fill(t, 0.0f)), out, 0u, 16u);
}

void fp8_at_k16() { (void)coop_tile_setup(16, 16, 16, f8e4m3); }
void f16_at_k32() { (void)coop_tile_setup(16, 16, 32, f16); }

}  // namespace

TEST(DslTiles, ARowOrColumnThatIsNotALiteralIsALocatedTraceError) {
  std::string e = trace_error(&get_with_traced_row);
  EXPECT_TRUE(has(e, "coop_tile_get: the row must be an integer literal")) << e;
  EXPECT_TRUE(has(e, "tile_test.cpp:" + std::to_string(g_get_line))) << e;
}

TEST(DslTiles, UnsupportedShapesAndModesAreRejected) {
  std::string e = trace_error(&unsupported_shape);
  EXPECT_TRUE(has(e, "tile shape 16x8x16 is not supported")) << e;
  e = trace_error(&tiles_in_elementwise, Mode::Elementwise);
  EXPECT_TRUE(has(e, "tile_fill, which mode Elementwise does not bind")) << e;
  EXPECT_EQ(trace_error(&tiles_in_elementwise), "");
  // f8e4m3 tiles are 16x16x32, and 16x16x32 tiles are f8e4m3 (at the call, and in the verifier).
  e = trace_error(&fp8_at_k16);
  EXPECT_TRUE(has(e, "tile shape 16x16x16 is not supported for f8e4m3 (fp8 tiles are 16x16x32)")) << e;
  EXPECT_TRUE(has(e, "tile_test.cpp:")) << e;
  e = trace_error(&f16_at_k32);
  EXPECT_TRUE(has(e, "tile shape 16x16x32 is not supported (cooperative tiles are 16x16x16, or 16x16x32 for f8e4m3 and f8e5m2)")) << e;
  ir::Kernel k = ir::parse(
      "kernel bad mode=Reduction {\n"
      "  param x: in buf<f16> extent=1024\n"
      "  %0 = const<0> : u32\n"
      "  %1 = const<32> : u32\n"
      "  %2 = tile_load<x> %0, %1 : frag<a, f16, 16x16x32>\n"
      "}\n");
  ir::Diagnostics d;
  EXPECT_FALSE(ir::verify(k, d));
  EXPECT_TRUE(has(d.render(k), "fp8 tiles (f8e4m3, f8e5m2) are 16x16x32 and 16x16x32 tiles are fp8")) << d.render(k);
}

TEST(VerifierTiles, FragmentRulesAreCheckedAndLocated) {
  std::string e = trace_error(&load_from_f32_buffer);
  EXPECT_TRUE(has(e, "loads a frag<a, f16, 16x16x16> from a f32 buffer 'x'")) << e;
  EXPECT_TRUE(has(e, "tile_test.cpp:")) << e;
  e = trace_error(&signed_stride_and_f16_store);
  EXPECT_TRUE(has(e, "the row stride must be u32, is i32")) << e;
  EXPECT_TRUE(has(e, "stores an f32 accumulator into buf<f16> 'out'")) << e;
  EXPECT_TRUE(has(e, "operand 0 must be a frag<a, ...>, is frag<b, f16, 16x16x16>")) << e;
  e = trace_error(&tiles_over_f32_t, Mode::Reduction, {DType::F32});
  EXPECT_TRUE(has(e, "which the kernel declares as f32; tile inputs are f16 or bf16")) << e;
  EXPECT_EQ(trace_error(&tiles_over_f32_t, Mode::Reduction, {DType::F16, DType::BF16}), "");
}

TEST(VerifierTiles, FragmentsReachNoScalarOpAndTextRoundTrips) {
  ir::Kernel k = traced(&tiles_over_f32_t, {DType::F16});
  std::string text = ir::print(k);
  EXPECT_TRUE(has(text, "tile_mma")) << text;
  EXPECT_TRUE(has(text, "frag<acc, f32, 16x16x16>")) << text;
  ir::Kernel back = ir::parse(text);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(back, d)) << d.render(back);
  EXPECT_EQ(ir::print(back), text);
  // A fragment used as a scalar operand is rejected.
  std::string bad = text;
  size_t mma = bad.find(" = tile_mma");
  ASSERT_NE(mma, std::string::npos);
  size_t name_start = bad.rfind('%', mma);
  std::string value = bad.substr(name_start, mma - name_start);
  bad.insert(bad.rfind("\n}") + 1, "  %bogus = add " + value + ", " + value + " : f32\n");
  try {
    ir::Kernel kb = ir::parse(bad);
    ir::Diagnostics db;
    EXPECT_FALSE(ir::verify(kb, db));
    EXPECT_TRUE(has(db.render(kb), "this op takes scalars only")) << db.render(kb);
  } catch (const Error& err) {
    ADD_FAILURE() << err.what() << "\n" << bad;
  }
}

// --- Tile layouts (column-major, swizzle) --------------------------------------------------

namespace {

void swizzled_buffer_load() {
  Buffer x = input("x", f16, {1024});
  Buffer out = output("out", f32, {256});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag a = coop_tile_load_a(t, x, 0u, 32u, TileLayout{false, Swizzle{2, 3, 3}});
  coop_tile_store(coop_tile_run(a, coop_tile_load_b(t, x, 0u, 16u), coop_tile_fill(t, 0.0f)), out, 0u, 16u);
}
void malformed_swizzle() {
  Buffer out = output("out", f32, {256});
  TgBuffer s = threadgroup_alloc("s", f16, 1024, 16);
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag a = coop_tile_load_a(t, s, 0u, 32u, TileLayout{false, Swizzle{3, 3, 2}});
  coop_tile_store(coop_tile_run(a, coop_tile_load_b(t, s, 0u, 16u), coop_tile_fill(t, 0.0f)), out, 0u, 16u);
}
// B staged as a weight [16, 32] (rows of K) into a swizzled array, read back column-major.
void weight_through_swizzle() {
  Buffer w = input("w", f16, {512});
  Buffer out = output("out", f32, {256});
  TgBuffer s = threadgroup_alloc("s", f16, 512, 16);
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  const Swizzle sw{2, 3, 3};
  for_(local_id(0), 64u, group_size(0), [&](Expr c) { async_copy(s[swizzle(sw, c * 8u)], w[c * 8u], 8, 8u); });
  async_commit();
  async_wait(0);
  barrier();
  Frag b = coop_tile_load_b(t, s, 16u, 32u, TileLayout{true, sw});
  Frag a = coop_tile_load_a(t, w, 0u, 32u);
  if_(simd_group_id() == 0u, [&] { coop_tile_store(coop_tile_run(a, b, coop_tile_fill(t, 0.0f)), out, 0u, 16u); });
}

}  // namespace

// --- The interpreter's definition ------------------------------------------------------------

namespace {

// C = 1 + A * B on one tile: A's row 0 is 2^-12, B's column 0 is 2^-13, so d[0][0] is 1 plus
// sixteen products of 2^-25, each below half an f32 ulp of 1. A sum rounded per term stays 1;
// the definition (exact sum, one rounding) gives 1 + 2^-21.
void one_mma() {
  Buffer a = input("a", f16, {256});
  Buffer b = input("b", f16, {256});
  Buffer out = output("out", f32, {256});
  Buffer got = output("got", f32, {32});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag acc = coop_tile_run(coop_tile_load_a(t, a, 0u, 16u), coop_tile_load_b(t, b, 0u, 16u), coop_tile_fill(t, 1.0f));
  if_(simd_group_id() == 0u, [&] { coop_tile_store(acc, out, 0u, 16u); });
  got[local_id(0)] = coop_tile_get(acc, 0, 0);
}

std::vector<uint16_t> halves(size_t n, float v) { return std::vector<uint16_t>(n, num::f32_to_f16(v)); }

void run(const ir::Kernel& k, std::vector<interp::BufferArg> bufs, std::vector<uint64_t> scalars, uint32_t threads,
         uint32_t lane_width) {
  interp::Options o;
  o.lane_width = lane_width;
  o.uninitialized_tg_reads_are_errors = true;
  interp::run(k, DType::F32, bufs, scalars, {1, 1, 1}, {threads, 1, 1}, o);
}

}  // namespace

TEST(InterpTiles, AMultiplyAccumulateRoundsItsExactSumOnce) {
  ir::Kernel k = traced(&one_mma);
  for (uint32_t w : {8u, 32u}) {
    std::vector<uint16_t> a(256, 0), b(256, 0);
    for (int kk = 0; kk < 16; ++kk) {
      a[size_t(kk)] = num::f32_to_f16(0x1p-12f);        // row 0
      b[size_t(kk) * 16] = num::f32_to_f16(0x1p-13f);   // column 0
    }
    std::vector<float> out(256, -1.0f), got(32, -1.0f);
    run(k, {{a.data(), 512}, {b.data(), 512}, {out.data(), 1024}, {got.data(), 128}}, {}, 32, w);
    EXPECT_EQ(out[0], 1.0f + 0x1p-21f) << "lane width " << w;
    EXPECT_EQ(out[1], 1.0f);
    EXPECT_EQ(out[255], 1.0f);
    for (float g : got) EXPECT_EQ(g, 1.0f + 0x1p-21f);
  }
}

namespace {
void stride_per_lane() {
  Buffer a = input("a", f16, {1024});
  Buffer out = output("out", f32, {1024});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag fa = coop_tile_load_a(t, a, 0u, 16u + lane_id() % 2u);
  Frag fb = coop_tile_load_b(t, a, 0u, 16u);
  if_(simd_group_id() == 0u, [&] { coop_tile_store(coop_tile_run(fa, fb, coop_tile_fill(t, 0.0f)), out, 0u, 16u); });
}
void divergent_tile() {
  Buffer a = input("a", f16, {1024});
  Buffer out = output("out", f32, {1024});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  if_(lane_id() < 4u, [&] { coop_tile_store(coop_tile_fill(t, 0.0f), out, 0u, 16u); });
  (void)a;
}
// Threads stage A into threadgroup memory and the lane groups read it with no barrier between.
void missing_barrier(bool with_barrier) {
  Buffer a = input("a", f16, {256});
  Buffer out = output("out", f32, {256});
  TgBuffer as = threadgroup_alloc("as", f16, 256);
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  for_(local_id(0), 256u, group_size(0), [&](Expr e) { as[e] = a[e]; });
  if (with_barrier) barrier();
  Frag fa = coop_tile_load_a(t, as, 0u, 16u);
  Frag fb = coop_tile_load_b(t, as, 0u, 16u);
  if_(simd_group_id() == 0u, [&] { coop_tile_store(coop_tile_run(fa, fb, coop_tile_fill(t, 0.0f)), out, 0u, 16u); });
}
void no_barrier() { missing_barrier(false); }
void with_barrier() { missing_barrier(true); }
}  // namespace

TEST(InterpTiles, LaneGroupRulesAndRacesAreLocatedErrors) {
  std::vector<uint16_t> a = halves(1024, 1.0f);
  std::vector<float> out(1024, 0.0f);
  auto error_of = [&](KernelBody body, uint32_t w) -> std::string {
    try {
      run(traced(body), {{a.data(), a.size() * 2}, {out.data(), out.size() * 4}}, {}, 32, w);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  for (uint32_t w : {8u, 32u}) {
    std::string e = error_of(&stride_per_lane, w);
    EXPECT_TRUE(has(e, "tile_load: the row stride differs across lane group 0 (lane 0: 16, lane 1: 17)")) << e;
    EXPECT_TRUE(has(e, "tile_test.cpp:")) << e;
    e = error_of(&divergent_tile, w);
    EXPECT_TRUE(has(e, "with a partially active lane group (4 of " + std::to_string(w))) << e;
    e = error_of(&no_barrier, w);
    EXPECT_TRUE(has(e, "threadgroup memory race (read after write) on 'as'")) << e;
    EXPECT_EQ(error_of(&with_barrier, w), "");
    EXPECT_EQ(out[17], 16.0f);  // sixteen products of 1 * 1
  }
}

// --- CUDA lowerings through NVRTC ------------------------------------------------------------

namespace {
std::string cuda_source(codegen::CudaMma m, DType t, const char* kernel = "iron_tile_gemm") {
  const KernelDecl* decl = find_kernel_decl(kernel);
  EXPECT_NE(decl, nullptr);
  ir::Kernel k = passes::optimize(trace_kernel(*decl));
  codegen::EmitOptions o;
  o.cuda_mma = m;
  codegen::Emitted e = codegen::emit(k, t, codegen::Target::Cuda, o);
  EXPECT_TRUE(e.ok()) << e.diags.render(k);
  return e.source;
}
}  // namespace

TEST(TileLayouts, SwizzleAndColumnMajorAreCheckedRoundTripAndLower) {
  std::string e = trace_error(&swizzled_buffer_load);
  EXPECT_TRUE(has(e, "coop_tile_load_a: a swizzle applies to threadgroup memory only")) << e;
  EXPECT_TRUE(has(e, "tile_test.cpp:")) << e;
  e = trace_error(&malformed_swizzle);
  EXPECT_TRUE(has(e, "swizzle {bits 3, base 3, shift 2} is not one")) << e;
  ir::Kernel k = traced(&weight_through_swizzle);
  const std::string text = ir::print(k);
  EXPECT_TRUE(has(text, "tile_tg_load<swizzle=233, col_major=1>")) << text;
  ir::Kernel back = ir::parse(text);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(back, d)) << d.render(back);
  EXPECT_EQ(ir::print(back), text);
  // The parser and the verifier reject malformed codes, naming them.
  for (const char* bad : {"swizzle=231", "swizzle=433", "col_major=2"}) {
    std::string t2 = text;
    t2.replace(t2.find("swizzle=233, col_major=1"), 24, bad);
    try {
      ir::parse(t2);
      ADD_FAILURE() << bad << " parsed";
    } catch (const Error& err) {
      EXPECT_TRUE(has(err.what(), std::string(bad).substr(std::string(bad).find('=') + 1))) << err.what();
    }
  }
  // The interpreter reads through the map: B = W^T, so C = W[:, 0:16] x W^T[16:32, :] ...
  std::vector<uint16_t> w(512);
  for (int i = 0; i < 512; ++i) w[size_t(i)] = num::f32_to_f16(float(i % 7) - 3.0f);
  std::vector<float> out(256, -1.0f);
  run(k, {{w.data(), w.size() * 2}, {out.data(), out.size() * 4}}, {}, 64, 32);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double want = 0;  // A(i, kk) = w[i * 32 + kk], B(kk, j) = W[j, 16 + kk] = w[j * 32 + 16 + kk]
      for (int kk = 0; kk < 16; ++kk) want += (double((i * 32 + kk) % 7) - 3.0) * (double((j * 32 + 16 + kk) % 7) - 3.0);
      EXPECT_EQ(out[size_t(i * 16 + j)], float(want)) << i << "," << j;
    }
  // ... and CUDA's mma strategy loads it by ldmatrix without .trans, compiled by NVRTC.
  codegen::EmitOptions o;
  o.cuda_mma = codegen::CudaMma::MmaSync;
  ir::Kernel opt = passes::optimize(k);
  codegen::Emitted em = codegen::emit(opt, DType::F16, codegen::Target::Cuda, o);
  ASSERT_TRUE(em.ok()) << em.diags.render(opt);
  const std::string& src = em.source;
  EXPECT_TRUE(has(src, "iron_tile_ldmatrix_cm(")) << src;
  EXPECT_TRUE(has(src, "iron_tile_ldm_row_cm()")) << src;
  rt::NvrtcResult r = rt::nvrtc_compile(src, "tile_kernel", "sm_90");
  EXPECT_TRUE(r.ok) << r.log.substr(0, 3000);
}

TEST(CodegenTiles, EveryMmaStrategyCompilesThroughNvrtcForSm80AndSm90) {
  struct Case {
    codegen::CudaMma m;
    const char* marker;
  } cases[] = {{codegen::CudaMma::Software, "(double)a.x[i * 16 + k] * (double)b.x[k * 16 + j]"},
               {codegen::CudaMma::Wmma, "nvcuda::wmma::mma_sync(d.f, a.f, b.f, c.f)"},
               {codegen::CudaMma::MmaSync, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}};
  for (const Case& c : cases)
    for (const char* arch : {"sm_80", "sm_90"}) {
      std::string src = cuda_source(c.m, DType::F16);
      EXPECT_TRUE(has(src, c.marker)) << codegen::cuda_mma_name(c.m);
      rt::NvrtcResult r = rt::nvrtc_compile(src, "tile_gemm", arch);
      EXPECT_TRUE(r.ok) << codegen::cuda_mma_name(c.m) << " " << arch << ":\n" << r.log.substr(0, 3000);
    }
  // bf16 down the hardware paths, and auto (the architecture chooses) for both input types, two
  // kernels in one module as CudaDevice::compile_many batches them.
  for (codegen::CudaMma m : {codegen::CudaMma::Wmma, codegen::CudaMma::MmaSync}) {
    std::string src = cuda_source(m, DType::BF16);
    rt::NvrtcResult r = rt::nvrtc_compile(src, "tile_gemm_bf16", "sm_90");
    EXPECT_TRUE(r.ok) << codegen::cuda_mma_name(m) << ":\n" << r.log.substr(0, 3000);
  }
  std::string f16 = cuda_source(codegen::CudaMma::Auto, DType::F16), bf16 = cuda_source(codegen::CudaMma::Auto, DType::BF16);
  EXPECT_TRUE(has(bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  rt::NvrtcResult r = rt::nvrtc_compile(rt::combine_cuda_sources({f16, bf16}), "tile_gemm_batch", "sm_80");
  EXPECT_TRUE(r.ok) << r.log.substr(0, 3000);
}

// ldmatrix on the mma strategy: A plain, B transposed, each behind the run-time alignment check
// (offset and stride multiples of 8 elements, a 16-byte aligned array) with the element loop as
// the fallback; the other strategies keep the element loop only. Compiled for sm_80 and sm_90.
TEST(CodegenTiles, ThreadgroupFragmentsLoadThroughLdmatrixWhenRowsAreAligned) {
  for (DType t : {DType::F16, DType::BF16}) {
    const std::string src = cuda_source(codegen::CudaMma::MmaSync, t, "iron_tile_tg_product");
    EXPECT_TRUE(has(src, "#define IRON_TILE_LDMATRIX 1")) << src;
    EXPECT_TRUE(has(src, "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\"")) << src;
    EXPECT_TRUE(has(src, "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\"")) << src;
    // Both loads check offset, stride and the array's address before using it.
    size_t checks = 0;
    for (size_t at = src.find(") & 7u) == 0u && (iron_tile_smem(tg_"); at != std::string::npos;
         at = src.find(") & 7u) == 0u && (iron_tile_smem(tg_", at + 1))
      ++checks;
    EXPECT_EQ(checks, 2u) << src;
    EXPECT_TRUE(has(src, "& 15u) == 0u) {")) << src;
    for (const char* arch : {"sm_80", "sm_90"}) {
      rt::NvrtcResult r = rt::nvrtc_compile(src, "tile_tg_product", arch);
      EXPECT_TRUE(r.ok) << dtype_name(t) << " " << arch << ":\n" << r.log.substr(0, 3000);
    }
    for (codegen::CudaMma m : {codegen::CudaMma::Software, codegen::CudaMma::Wmma}) {
      const std::string other = cuda_source(m, t, "iron_tile_tg_product");
      EXPECT_FALSE(has(other, "ldmatrix.sync")) << codegen::cuda_mma_name(m);
      EXPECT_TRUE(has(other, "#define IRON_TILE_LDMATRIX 0")) << codegen::cuda_mma_name(m);
      rt::NvrtcResult r = rt::nvrtc_compile(other, "tile_tg_product", "sm_90");
      EXPECT_TRUE(r.ok) << codegen::cuda_mma_name(m) << ":\n" << r.log.substr(0, 3000);
    }
  }
  // iron_tile_gemm's A (a 16-byte aligned f16/bf16 array, offset 8, stride 24) takes it too.
  EXPECT_TRUE(has(cuda_source(codegen::CudaMma::MmaSync, DType::F16), "  iron_tile_ldmatrix(v"));
  // Auto holds all three preludes; sm_80 picks the mma one, ldmatrix included.
  rt::NvrtcResult r = rt::nvrtc_compile(cuda_source(codegen::CudaMma::Auto, DType::F16, "iron_tile_tg_product"),
                                        "tile_tg_product", "sm_80");
  EXPECT_TRUE(r.ok) << r.log.substr(0, 3000);
}

// f8e4m3 tiles (16x16x32): mma.sync m16n8k32 e4m3 on sm_89+ (forced or auto), the software
// path below (auto on sm_80) and when forced; wmma has no f8e4m3 and says so; mma below sm_89 too.
TEST(CodegenTiles, Fp8TilesCompileDownMmaAndSoftware) {
  const std::string mma = cuda_source(codegen::CudaMma::MmaSync, DType::F32, "iron_tile_fp8_gemm");
  EXPECT_TRUE(has(mma, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")) << mma;
  for (const char* arch : {"sm_89", "sm_90"}) {
    rt::NvrtcResult r = rt::nvrtc_compile(mma, "tile_fp8", arch);
    EXPECT_TRUE(r.ok) << arch << ":\n" << r.log.substr(0, 3000);
  }
  rt::NvrtcResult old = rt::nvrtc_compile(mma, "tile_fp8", "sm_80");
  EXPECT_FALSE(old.ok);
  EXPECT_TRUE(has(old.log, "IRON_CUDA_MMA=mma needs sm_89 or newer for fp8 tiles")) << old.log.substr(0, 2000);
  const std::string sw = cuda_source(codegen::CudaMma::Software, DType::F32, "iron_tile_fp8_gemm");
  EXPECT_TRUE(has(sw, "for (int k = 0; k < 32; ++k) s += (double)a.x[i * 32 + k] * (double)b.x[k * 16 + j];")) << sw;
  EXPECT_TRUE(rt::nvrtc_compile(sw, "tile_fp8", "sm_80").ok);
  const std::string autos = cuda_source(codegen::CudaMma::Auto, DType::F32, "iron_tile_fp8_gemm");
  EXPECT_TRUE(has(autos, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890")) << autos;
  EXPECT_FALSE(has(autos, "nvcuda::wmma")) << autos;
  for (const char* arch : {"sm_80", "sm_90"}) EXPECT_TRUE(rt::nvrtc_compile(autos, "tile_fp8", arch).ok) << arch;
  rt::NvrtcResult w = rt::nvrtc_compile(cuda_source(codegen::CudaMma::Wmma, DType::F32, "iron_tile_fp8_gemm"), "tile_fp8", "sm_90");
  EXPECT_FALSE(w.ok);
  EXPECT_TRUE(has(w.log, "IRON_CUDA_MMA=wmma has no fp8 tiles")) << w.log.substr(0, 2000);
}

TEST(CodegenTiles, AForcedStrategyTheArchitectureCannotRunIsACompileErrorNamingIt) {
  rt::NvrtcResult r = rt::nvrtc_compile(cuda_source(codegen::CudaMma::MmaSync, DType::F16), "tile_gemm", "sm_75");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.log, "IRON_CUDA_MMA=mma needs sm_80 or newer")) << r.log.substr(0, 2000);
  codegen::CudaMma m = codegen::CudaMma::Auto;
  EXPECT_TRUE(codegen::parse_cuda_mma("wmma", m));
  EXPECT_EQ(m, codegen::CudaMma::Wmma);
  EXPECT_FALSE(codegen::parse_cuda_mma("tensor", m));
}

// --- GLSL: fragments in shared-memory slots (lavapipe) ---------------------------------------

namespace {

// Every case the slot plan must get right (codegen/tiles.cpp), in each lane group at its own
// offsets: a value loaded from a variable and live across a store to it (`before`: no alias), an
// accumulator value used by two multiply-accumulates (`c`: the first result may not take its
// slot), a product whose accumulator operand is read later (`p`), an in-place update (`other`),
// a variable whose initial value stays live (`z`), loads
// from a buffer and from threadgroup memory, and element reads (get) from several of them.
void slot_patterns() {
  Expr reps = constexpr_("reps", u32);  // a run-time trip count: the loops stay loops
  Buffer x = input("x", f16, {1024});
  Buffer out = output("out", f32, {32 * 1536});
  Buffer got = output("got", f32, {1024});
  TgBuffer ts = threadgroup_alloc("ts", f16, 512);
  for_(local_id(0), 512u, group_size(0), [&](Expr e) { ts[e] = x[e + 512u]; });
  barrier();
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Expr g = simd_group_id();
  Frag a = coop_tile_load_a(t, x, g * 16u, 32u);
  Frag b = coop_tile_load_b(t, ts, g * 8u, 16u);
  Frag b2 = coop_tile_load_b(t, x, 3u + g, 17u);
  FragVar acc(coop_tile_fill(t, 0.5f));
  FragVar other(coop_tile_fill(t, -1.0f));
  for_(0u, reps - 1u, [&](Expr) { acc.set(coop_tile_run(a, b2, acc.get())); });
  Frag before = acc.get();
  Frag z = coop_tile_fill(t, 2.0f);
  FragVar w(z);
  for_(0u, reps, [&](Expr) {
    Frag c = acc.get();
    Frag d = coop_tile_run(a, b, c);
    Frag e = coop_tile_run(a, b2, c);
    acc.set(d);
    // b's last use in the body was d, but the next iteration reads it again: f may not take it.
    Frag f = coop_tile_load_b(t, x, 7u + g, 19u);
    other.set(coop_tile_run(a, f, other.get()));
    w.set(coop_tile_run(a, b2, e));
  });
  // `before` is read again after this product: p may not take its slot.
  Frag p = coop_tile_run(a, b2, before);
  Expr base = g * 1536u;
  coop_tile_store(before, out, base, 16u);
  coop_tile_store(acc.get(), out, base + 256u, 16u);
  coop_tile_store(other.get(), out, base + 512u, 16u);
  coop_tile_store(z, out, base + 768u, 16u);
  coop_tile_store(w.get(), out, base + 1024u, 16u);
  coop_tile_store(p, out, base + 1280u, 16u);
  got[local_id(0)] = coop_tile_get(w.get(), 3, 14) + coop_tile_get(before, 15, 0);
}

// The same fragments at a threadgroup of 1024 threads: lavapipe's 32 KiB cannot hold the slots.
void many_lane_groups() {
  Buffer x = input("x", f16, {1024});
  Buffer out = output("out", f32, {256});
  TileShape t = coop_tile_setup(16, 16, 16, f16);
  Frag acc = coop_tile_run(coop_tile_load_a(t, x, 0u, 16u), coop_tile_load_b(t, x, 0u, 16u), coop_tile_fill(t, 0.0f));
  if_(simd_group_id() == 0u, [&] { coop_tile_store(acc, out, 0u, 16u); });
}

// These tests check the software path's slot plan against the interpreter bit for bit; a device
// with cooperative matrices (NVIDIA) would take them under IRON_VK_MMA=auto.
struct SoftwareVulkanTiles {
  SoftwareVulkanTiles() {
    if (const char* v = std::getenv("IRON_VK_MMA")) saved = v, had = true;
    ::setenv("IRON_VK_MMA", "software", 1);
  }
  ~SoftwareVulkanTiles() {
    if (had) ::setenv("IRON_VK_MMA", saved.c_str(), 1);
    else ::unsetenv("IRON_VK_MMA");
  }
  std::string saved;
  bool had = false;
};

std::unique_ptr<Context> vulkan_or_skip(std::string& why) {
  try {
    return Context::create(Backend::Vulkan);
  } catch (const Error& e) {
    why = e.what();
  }
  return nullptr;
}

}  // namespace

TEST(GlslTiles, SlotsAreSharedOnlyByFragmentsThatAreNeverLiveTogether) {
  SoftwareVulkanTiles software;
  std::string why;
  std::unique_ptr<Context> ctx = vulkan_or_skip(why);
  if (!ctx) GTEST_SKIP() << "no Vulkan device: " << why;
  const ir::Kernel k = traced(&slot_patterns);
  // Values that round differently in every order of the sums (f16 of 1/(i+3) and friends).
  std::vector<uint16_t> x(1024);
  for (size_t i = 0; i < x.size(); ++i) x[i] = num::f32_to_f16((float(int(i * 37 % 201) - 100) / 64.0f) + 1.0f / float(i + 3));
  // Two lane groups at lavapipe's width of 8 (ten slots of 1 KiB each).
  const uint32_t lanes = ctx->info().lane_width, threads = std::max(16u, lanes);
  std::vector<float> want(32 * 1536, 0.0f), want_got(1024, 0.0f);
  run(k, {{x.data(), 2048}, {want.data(), want.size() * 4}, {want_got.data(), want_got.size() * 4}}, {3}, threads, lanes);
  Bindings bind;
  DeviceBuffer bx = ctx->alloc(DType::F16, x.size());
  ctx->upload(bx, x.data(), x.size() * 2);
  DeviceBuffer bo = ctx->alloc(DType::F32, want.size());
  DeviceBuffer bg = ctx->alloc(DType::F32, want_got.size());
  std::vector<float> zero(want.size(), 0.0f);
  ctx->upload(bo, zero.data(), want.size() * 4);
  ctx->upload(bg, zero.data(), want_got.size() * 4);
  ctx->dispatch_with_grid(k, DType::F32, {{"x", bx}, {"out", bo}, {"got", bg}}, {{"reps", 3}}, {1, 1, 1}, {threads, 1, 1});
  ctx->synchronize();
  std::vector<float> out(want.size()), got(want_got.size());
  ctx->download(bo, out.data(), out.size() * 4);
  ctx->download(bg, got.data(), got.size() * 4);
  int bad = 0;
  for (size_t i = 0; i < out.size() && bad < 8; ++i)
    if (std::memcmp(&out[i], &want[i], 4) != 0) {
      ++bad;
      ADD_FAILURE() << "out[" << i << "] (lane group " << i / 1536 << ", fragment " << i % 1536 / 256 << ") is "
                    << out[i] << ", the interpreter gives " << want[i];
    }
  for (size_t i = 0; i < threads && bad < 16; ++i)
    if (std::memcmp(&got[i], &want_got[i], 4) != 0) {
      ++bad;
      ADD_FAILURE() << "got[" << i << "] is " << got[i] << ", the interpreter gives " << want_got[i];
    }
  // Not all zeros: the comparison saw real results.
  EXPECT_NE(want[256 + 17], 0.0f);
  // The plan: ten slots (a, b, b2, before, z, w, e, acc, other, and d then f; other is updated in place,
  // w's mma result takes e's slot, the fills and final reads share their variables' slots, and
  // p takes a slot of a value dead by then).
  codegen::Emitted e = codegen::emit(passes::optimize(k), DType::F32, codegen::Target::Glsl);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(has(e.source, "const uint iron_tile_slots = 10u;")) << e.source;
}

TEST(GlslTiles, SlotsBeyondTheDevicesSharedMemoryAreRejectedNamingTheFigures) {
  SoftwareVulkanTiles software;
  std::string why;
  std::unique_ptr<Context> ctx = vulkan_or_skip(why);
  if (!ctx) GTEST_SKIP() << "no Vulkan device: " << why;
  const uint32_t lanes = ctx->info().lane_width;
  const uint64_t limit = ctx->info().shared_memory_bytes;
  // Three slots of 1 KiB per lane group: a threadgroup with more lane groups than fit.
  const uint32_t threads = 1024;
  if (3ull * 1024 * (threads / lanes) <= limit) GTEST_SKIP() << "the device holds 3 KiB for each of " << threads / lanes << " lane groups";
  const ir::Kernel k = traced(&many_lane_groups);
  DeviceBuffer bx = ctx->alloc(DType::F16, 1024);
  DeviceBuffer bo = ctx->alloc(DType::F32, 256);
  std::string e;
  try {
    ctx->dispatch_with_grid(k, DType::F32, {{"x", bx}, {"out", bo}}, {}, {1, 1, 1}, {threads, 1, 1});
    ctx->synchronize();
  } catch (const Error& err) {
    e = err.what();
  }
  const std::string groups = std::to_string(threads / lanes);
  EXPECT_TRUE(has(e, "its cooperative tiles need " + std::to_string(3 * 1024 * (threads / lanes)) + " bytes")) << e;
  EXPECT_TRUE(has(e, "3 KiB of fragment slots for each of " + groups + " lane groups")) << e;
  EXPECT_TRUE(has(e, "allows " + std::to_string(limit) + " (maxComputeSharedMemorySize)")) << e;
  // At 64 threads it fits and computes.
  ctx->dispatch_with_grid(k, DType::F32, {{"x", bx}, {"out", bo}}, {}, {1, 1, 1}, {64, 1, 1});
  ctx->synchronize();
}

// --- GLSL: NV cooperative matrices (compiled and validated here; run on the H200) -----------

namespace {
codegen::Emitted glsl_source(const char* kernel, DType t, bool coopmat, bool loop_check = false) {
  const KernelDecl* decl = find_kernel_decl(kernel);
  EXPECT_NE(decl, nullptr);
  ir::Kernel k = passes::optimize(trace_kernel(*decl));
  codegen::EmitOptions o;
  o.tile_coopmat = coopmat;
  o.tile_f64 = true;
  o.loop_limit_check = loop_check;
  codegen::Emitted e = codegen::emit(k, t, codegen::Target::Glsl, o);
  EXPECT_TRUE(e.ok()) << e.diags.render(k);
  return e;
}
}  // namespace

// The coopmat lowering of both tile kernels compiles to SPIR-V that spirv-val accepts (Vulkan
// 1.1), with the direct loads and stores behind their alignment checks and the staged fallbacks;
// bf16 tiles keep the software path; the strategy names parse.
TEST(GlslTiles, CooperativeMatrixLoweringCompilesAndValidates) {
  for (const char* kernel : {"iron_tile_gemm", "iron_tile_tg_product"}) {
    codegen::Emitted e = glsl_source(kernel, DType::F16, true);
    EXPECT_TRUE(has(e.source, "#extension GL_NV_cooperative_matrix : require")) << e.source;
    EXPECT_TRUE(has(e.source, "coopMatMulAddNV(")) << e.source;
    EXPECT_TRUE(has(e.source, "fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(")) << e.source;
    EXPECT_FALSE(has(e.source, "iron_tile_mem")) << e.source;
    codegen::Spirv spv = codegen::compile_glsl(e.source, kernel);
    EXPECT_TRUE(spv.ok) << kernel << ":\n" << spv.log << "\n" << e.source;
    EXPECT_EQ(codegen::glsl_tile_slots(spv.words.data(), spv.words.size()), 1u) << kernel;  // the staging area
    // glslang puts cooperative-matrix shaders under the Vulkan memory model (OpMemoryModel
    // Logical Vulkan): the device enables vulkanMemoryModel with the extension.
    bool vulkan_model = false;
    for (size_t i = 5; i < spv.words.size() && i + 2 < spv.words.size();) {
      const uint32_t len = spv.words[i] >> 16, opcode = spv.words[i] & 0xffffu;
      if (opcode == 14) vulkan_model = spv.words[i + 2] == 3;  // OpMemoryModel: addressing, memory model
      if (len == 0) break;
      i += len;
    }
    EXPECT_TRUE(vulkan_model) << kernel;
  }
  codegen::Emitted gemm = glsl_source("iron_tile_gemm", DType::F16, true);
  // B from a buffer: direct when aligned, else staged; A from threadgroup memory: staged.
  EXPECT_TRUE(has(gemm.source, ") & 7u) == 0u) {\n")) << gemm.source;
  EXPECT_TRUE(has(gemm.source, ".data, ")) << gemm.source;
  EXPECT_TRUE(has(gemm.source, "coopMatLoadNV(")) << gemm.source;
  EXPECT_TRUE(has(gemm.source, "coopMatLoadNV(v")) << gemm.source;
  EXPECT_TRUE(has(gemm.source, ", iron_tile_stage, iron_tile_stage_at(), 2u, false);")) << gemm.source;
  EXPECT_TRUE(has(gemm.source, ") & 3u) == 0u) {\n")) << gemm.source;
  // Under lavapipe's loop limit the staging loops report a cut like every other loop.
  codegen::Emitted limited = glsl_source("iron_tile_gemm", DType::F16, true, true);
  EXPECT_TRUE(has(limited.source, "if (iron_p < 128u) iron_loop_cut(")) << limited.source;
  EXPECT_TRUE(codegen::compile_glsl(limited.source, "limited").ok);
  codegen::Emitted bf16 = glsl_source("iron_tile_gemm", DType::BF16, true);
  EXPECT_FALSE(has(bf16.source, "cooperative_matrix")) << bf16.source;
  EXPECT_TRUE(has(bf16.source, "iron_tile_mem")) << bf16.source;
  codegen::VkMma m = codegen::VkMma::Auto;
  EXPECT_TRUE(codegen::parse_vk_mma("coopmat", m));
  EXPECT_EQ(m, codegen::VkMma::Coopmat);
  EXPECT_TRUE(codegen::parse_vk_mma("software", m));
  EXPECT_EQ(m, codegen::VkMma::Software);
  EXPECT_FALSE(codegen::parse_vk_mma("khr", m));
}

// IRON_VK_MMA=coopmat on a device without NV cooperative matrices (lavapipe) is an error naming
// the device and the configuration; software runs there. A bad value names the choices.
TEST(GlslTiles, ForcingCooperativeMatricesWhereTheDeviceLacksThemIsAnErrorNamingIt) {
  std::string why;
  std::unique_ptr<Context> ctx = vulkan_or_skip(why);
  if (!ctx) GTEST_SKIP() << "no Vulkan device: " << why;
  const ir::Kernel k = traced(&many_lane_groups);
  DeviceBuffer bx = ctx->alloc(DType::F16, 1024);
  DeviceBuffer bo = ctx->alloc(DType::F32, 256);
  auto dispatch_with = [&](const char* mma) -> std::string {
    setenv("IRON_VK_MMA", mma, 1);
    std::string e;
    try {
      ctx->dispatch_with_grid(k, DType::F32, {{"x", bx}, {"out", bo}}, {}, {1, 1, 1}, {32, 1, 1});
      ctx->synchronize();
    } catch (const Error& err) {
      e = err.what();
    }
    unsetenv("IRON_VK_MMA");
    ctx->clear_pipeline_cache();
    return e;
  };
  const std::string bad = dispatch_with("tensor");
  EXPECT_TRUE(has(bad, "IRON_VK_MMA=tensor names no Vulkan tile strategy (software, coopmat or auto)")) << bad;
  EXPECT_EQ(dispatch_with("software"), "");
  const std::string forced = dispatch_with("coopmat");
  if (forced.empty()) GTEST_SKIP() << ctx->info().name << " runs NV cooperative matrices";
  EXPECT_TRUE(has(forced, "IRON_VK_MMA=coopmat, but device '" + ctx->info().name +
                              "' does not report VK_NV_cooperative_matrix with f16 A and B, f32 C and D, 16x16x16")) << forced;
}
