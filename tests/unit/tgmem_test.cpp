// Threadgroup memory at its real width, aligned, sized at compile time or at dispatch, beyond
// 48 KiB up to the device's opt-in limit, and thread-private register arrays: the layout, the
// text IR, the verifier and tracer diagnostics, the interpreter, CUDA (compiled by NVRTC without
// a driver) and GLSL emission, dispatch validation, and runs on the interpreter and lavapipe.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "fuzz/random_program.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"
#include "ir_text.hpp"

using namespace iron;

namespace {

// --- kernels (traced with trace_kernel, never registered) -------------------------------------

// A 16-bit staging array: thread l stores h * 3 (h = x[l] rounded to f16; the product is an
// f16-typed value computed in f32, generally not an f16 value) into an f16 array, and after the
// barrier reads its neighbour's element: the store rounds to f16.
void f16_stage_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  TgBuffer stage = threadgroup_alloc("stage", f16, 64, 32);
  Expr l = local_id(0);
  stage[l] = cast<f16>(x[l]) * 3.0f;
  barrier();
  out[l] = cast<f32>(stage[l ^ 1u]);
}

// Threadgroup arrays of the element types beyond 32 bits: each thread stores into an i8, a u16,
// an i64 and an f8e4m3 array and, after the barrier, reads its neighbour's elements. The i8 and
// u16 stores wrap (the values are casts of wider products), the i64 keeps its upper half (a value
// shifted by 33), the fp8 store holds the rounded value.
void wide_types_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  TgBuffer a8 = threadgroup_alloc("a8", i8, 64);
  TgBuffer a16 = threadgroup_alloc("a16", u16, 64);
  TgBuffer a64 = threadgroup_alloc("a64", i64, 64);
  TgBuffer af8 = threadgroup_alloc("af8", f8e4m3, 64);
  Expr l = local_id(0);
  Expr v = cast<i32>(x[l]);
  a8[l] = cast<i8>(v * 37);
  a16[l] = cast<u16>(v * 1001);
  a64[l] = cast<i64>(v) << 33;
  af8[l] = cast<f8e4m3>(x[l]);
  barrier();
  Expr p = l ^ 1u;
  out[l] = cast<f32>(a8[p]) + cast<f32>(a16[p]) + cast<f32>(a64[p] >> 33) + cast<f32>(af8[p]);
}

// An array of 2 * m f32 sized at dispatch (m a scalar parameter): thread l writes elements 2l
// and 2l + 1, and after the barrier reads element 2m - 1 - 2l (another thread's).
void dynamic_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr m = constexpr_("m", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  TgBuffer fixed = threadgroup_alloc("fixed", u32, 3);  // a fixed array before the sized one
  TgBuffer sized = threadgroup_alloc_dynamic("sized", f32, m, 2, 16);
  Expr l = local_id(0);
  Expr base = program_id(0) * group_size(0);
  sized[2u * l] = x[base + l];
  sized[2u * l + 1u] = x[base + l] * 2.0f;
  if_(l < 3u, [&] { fixed[l] = l + 1u; });
  barrier();
  out[base + l] = sized[2u * m - 1u - 2u * l] + cast<f32>(fixed[l % 3u]);
}

// A register array filled and read in unrolled loops: r[j] = x * (j + 1), then s = r[3 - j] - s
// for j = 0..3 (subtractions: nothing to fuse, and any misplaced element changes the result).
void register_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer x = input("x", f32, {n});
  Buffer out = output("out", f32, {n});
  TgBuffer r = local_array("r", f32, 4);
  Expr i = thread_id(0);
  if_(i < n, [&] {
    for_(0u, 4u, [&](Expr j) { r[j] = x[i] * cast<f32>(j + 1u); });
    Var<f32> s = 0.0f;
    for_(0u, 4u, [&](Expr j) { s = r[3u - j] - s; });
    out[i] = s;
  });
}

uint32_t g_bad_line = 0;
// Indexed by a per-thread value: not constant after unrolling.
void register_dynamic_index_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", f32, {n});
  TgBuffer r = local_array("r", f32, 4);
  Expr i = thread_id(0);
  for_(0u, 4u, [&](Expr j) { r[j] = 1.0f; });
  g_bad_line = __LINE__ + 1;
  out[i] = r[i & 3u];
}

// Sized by an i32 parameter.
void i32_sized_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr m = constexpr_("m", i32);
  Buffer out = output("out", f32, {n});
  TgBuffer t = threadgroup_alloc_dynamic("t", f32, m);
  t[local_id(0)] = 1.0f;
  barrier();
  out[local_id(0)] = t[local_id(0)];
}

// Sized by a computed value (not a scalar parameter): a trace-time error.
void dynamic_by_expression_body() {
  using namespace iron::dsl;
  Expr m = constexpr_("m", u32);
  Buffer out = output("out", f32, {m});
  TgBuffer t = threadgroup_alloc_dynamic("t", f32, m * 2u);
  t[local_id(0)] = 1.0f;
  out[local_id(0)] = t[local_id(0)];
}

// f32 arrays of the given element count (compile-time size), for the 48 KiB boundary.
uint32_t g_static_floats = 1;
void static_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer out = output("out", f32, {n});
  TgBuffer big = threadgroup_alloc("big", f32, g_static_floats);
  big[local_id(0)] = cast<f32>(local_id(0));
  barrier();
  out[local_id(0)] = big[local_id(0)];
}

ir::Kernel trace(const char* name, KernelBody body, Mode mode = Mode::Reduction) {
  return trace_kernel(KernelDecl{name, body, mode, {}, __FILE__, __LINE__});
}

std::string trace_error(KernelBody body, Mode mode) {
  try {
    trace("tgmem_error", body, mode);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string verify_text(const ir::Kernel& k) {
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}

// Runs `k` on `ctx` with f32 x (n values) and returns out (n values).
std::vector<float> run(Context& ctx, const ir::Kernel& k, const std::vector<float>& x, const Constexprs& c, Dim3 grid,
                       Dim3 tg) {
  const size_t n = x.size();
  DeviceBuffer xb = ctx.alloc(DType::F32, n), ob = ctx.alloc(DType::F32, n);
  ctx.upload(xb, x.data(), n * 4);
  std::vector<float> nan(n, NAN);
  ctx.upload(ob, nan.data(), n * 4);
  Bindings b;
  if (k.find_param("x") >= 0) b.push_back({"x", xb});
  b.push_back({"out", ob});
  ctx.dispatch_with_grid(k, DType::F32, b, c, grid, tg);
  ctx.synchronize();
  std::vector<float> out(n);
  ctx.download(ob, out.data(), n * 4);
  return out;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (float(i) + 0.1f) * (i % 2 ? -1.0f : 1.0f) + 1.0f / 3.0f;
  return v;
}

float f16_round(float v) { return num::f16_to_f32(num::f32_to_f16(v)); }

const char* kLayoutIr =
    "kernel k mode=Reduction {\n"
    "  param n: scalar<u32>\n"
    "  param out: out buf<f32> extent=n\n"
    "  %0 = tg_alloc<c, 2, align=32, count_param=n> : bf16\n"
    "  %1 = tg_alloc<a, 3> : f16\n"
    "  %2 = tg_alloc<b, 5, align=16> : f32\n"
    "  %3 = local_alloc<r, 8> : u32\n"
    "  %4 = local_id<0> : u32\n"
    "  %5 = const<1> : u32\n"
    "  local_store %3, %5, %4\n"
    "  %6 = local_load %3, %5 : u32\n"
    "  %7 = cast %6 : f32\n"
    "  store<out> %4, %7\n"
    "}\n";

}  // namespace

// --- layout, text IR, verifier --------------------------------------------------------------

// Real widths (f16 and bf16: 2 bytes), offsets at each array's alignment, fixed arrays first and
// the dispatch-sized one last: a at 0 (6 bytes), b at 16 (20 bytes, to 36), c at 64 (2 * n * 2).
TEST(TgLayout, RealWidthAlignmentAndDispatchSize) {
  ir::Kernel k = test::parse_verified(kLayoutIr);
  EXPECT_EQ(ir::threadgroup_bytes(k, DType::F32), 36u);  // without values: the fixed arrays only
  std::vector<uint64_t> values = {10, 0};
  EXPECT_EQ(ir::threadgroup_bytes(k, DType::F32, values.data()), 64u + 40u);
  std::vector<ir::Id> order = ir::threadgroup_layout(k);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(k.strings[size_t(k.insts[order[0]].attr(ir::Attr::Name))], "a");
  EXPECT_EQ(k.strings[size_t(k.insts[order[2]].attr(ir::Attr::Name))], "c");
  EXPECT_EQ(ir::tg_alignment(k.insts[order[0]], DType::F32), 2u);  // the element size at least
  EXPECT_TRUE(ir::has_dynamic_threadgroup(k));
  // A count that overflows saturates (it must fail a limit, not wrap below it).
  values[0] = UINT32_MAX;
  k.insts[0].set(ir::Attr::Count, int64_t(UINT32_MAX));
  EXPECT_GT(ir::threadgroup_bytes(k, DType::F32, values.data()), uint64_t(1) << 60);
}

TEST(TgLayout, TextRoundTrip) {
  ir::Kernel k = test::parse_verified(kLayoutIr);
  std::string printed = ir::print(k);
  EXPECT_NE(printed.find("tg_alloc<c, 2, align=32, count_param=n> : bf16"), std::string::npos) << printed;
  EXPECT_NE(printed.find("local_alloc<r, 8> : u32"), std::string::npos) << printed;
  EXPECT_EQ(ir::print(ir::parse(printed)), printed);
}

TEST(TgLayout, VerifierAndParserRejectBadAttributes) {
  auto with = [](const std::string& line) {
    return std::string("kernel k mode=Reduction {\n  param n: scalar<u32>\n  param f: scalar<f32>\n"
                       "  param out: out buf<f32> extent=n\n") + line + "}\n";
  };
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "threadgroup alignment 24 is not a power of two from 1 to 1024 bytes",
                      verify_text(ir::parse(with("  %0 = tg_alloc<a, 4, align=24> : f32\n"))));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "threadgroup alignment 2048 is out of range",
                      test::parse_error(with("  %0 = tg_alloc<a, 4, align=2048> : f32\n")));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "sized by 'f', which is not a u32 or i32 scalar parameter",
                      verify_text(ir::parse(with("  %0 = tg_alloc<a, 4, count_param=f> : f32\n"))));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "sized by 'out', which is not a u32 or i32 scalar parameter",
                      verify_text(ir::parse(with("  %0 = tg_alloc<a, 4, count_param=out> : f32\n"))));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "register array element count 0 is out of range",
                      test::parse_error(with("  %0 = local_alloc<r, 0> : f32\n")));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "register array of 2000 elements: the count must be 1 to 1024",
                      verify_text(ir::parse(with("  %0 = local_alloc<r, 2000> : f32\n"))));
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "operand 0 is not a register array",
                      verify_text(ir::parse(with("  %0 = tg_alloc<a, 4> : f32\n  %1 = const<0> : u32\n"
                                                 "  %2 = local_load %0, %1 : f32\n"))));
}

// --- DSL ---------------------------------------------------------------------------------------

TEST(TgDsl, DispatchSizeMustBeAScalarParameter) {
  std::string e = trace_error(&dynamic_by_expression_body, Mode::Reduction);
  EXPECT_PRED_FORMAT2(testing::IsSubstring, "tgmem_test.cpp:", e);
  EXPECT_PRED_FORMAT2(testing::IsSubstring,
                      "threadgroup allocation 't' is sized at dispatch by a value that is not a scalar parameter", e);
}

TEST(TgDsl, RegisterArrayIndicesBecomeConstants) {
  ir::Kernel k = passes::optimize(trace("tgmem_register", &register_body, Mode::Elementwise));
  int accesses = 0;
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if (in.op != ir::Op::LocalLoad && in.op != ir::Op::LocalStore) return;
    ++accesses;
    EXPECT_EQ(k.insts[in.operands[1]].op, ir::Op::Const) << ir::print(k);
  });
  EXPECT_EQ(accesses, 8);
}

// On lavapipe register arrays start as a poison pattern (EmitOptions::poison_register_arrays): a
// read of a slot nobody wrote gives NaN instead of what an earlier invocation left on the CPU
// stack (which let a mutant that skips every other register store survive on lavapipe).
TEST(TgDsl, RegisterArraysArePoisonedWhereAsked) {
  ir::Kernel k = passes::optimize(trace("tgmem_register", &register_body, Mode::Elementwise));
  codegen::EmitOptions poisoned;
  poisoned.poison_register_arrays = true;
  const std::string g = codegen::emit(k, DType::F32, codegen::Target::Glsl, poisoned).source;
  size_t stores = 0;
  for (size_t at = g.find("= float(uintBitsToFloat(0x7fa5a5a5u));"); at != std::string::npos;
       at = g.find("= float(uintBitsToFloat(0x7fa5a5a5u));", at + 1))
    ++stores;
  EXPECT_EQ(stores, 4u) << g;  // one per slot of the 4-slot array
  EXPECT_TRUE(codegen::compile_glsl(g, "tgmem_register").ok) << g;
  const std::string plain = codegen::emit(k, DType::F32, codegen::Target::Glsl).source;
  EXPECT_EQ(plain.find("0x7fa5a5a5u"), std::string::npos);
  const std::string cuda = codegen::emit(k, DType::F32, codegen::Target::Cuda, poisoned).source;
  EXPECT_EQ(cuda.find("0x7fa5a5a5u"), std::string::npos);  // GLSL only
}

TEST(TgDsl, RegisterArrayIndexNotConstantAfterUnrollingIsALocatedError) {
  ir::Kernel k = trace("tgmem_register_bad", &register_dynamic_index_body, Mode::Elementwise);
  try {
    passes::optimize(k);
    FAIL() << "a register array indexed by thread_id & 3 was compiled";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_PRED_FORMAT2(testing::IsSubstring, "tgmem_test.cpp:" + std::to_string(g_bad_line) + ": error: register_arrays: ",
                        msg);
    EXPECT_PRED_FORMAT2(testing::IsSubstring,
                        "register array 'r' is indexed by a value that is not constant after unrolling", msg);
  }
}

// --- emission ----------------------------------------------------------------------------------

TEST(TgCuda, StaticArraysAtRealWidthAndAlignment) {
  ir::Kernel k = passes::optimize(trace("tgmem_f16", &f16_stage_body));
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(e.ok()) << e.diags.render(k);
  EXPECT_NE(e.source.find("__shared__ __align__(32) __half tg_stage[64];"), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("= __float2half_rn("), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("__half2float(tg_stage["), std::string::npos) << e.source;
  EXPECT_FALSE(codegen::cuda_dynamic_shared(k, DType::F32));
}

TEST(TgCuda, DispatchSizedArraysLiveInDynamicSharedMemory) {
  ir::Kernel k = passes::optimize(trace("tgmem_dynamic", &dynamic_body));
  EXPECT_TRUE(codegen::cuda_dynamic_shared(k, DType::F32));
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(e.ok()) << e.diags.render(k);
  EXPECT_NE(e.source.find("extern __shared__ __align__(128) unsigned char iron_tg[];"), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("unsigned* const tg_fixed = reinterpret_cast<unsigned*>(iron_tg + 0u);"), std::string::npos)
      << e.source;
  EXPECT_NE(e.source.find("float* const tg_sized = reinterpret_cast<float*>(iron_tg + 16u);"), std::string::npos)
      << e.source;
  EXPECT_NE(e.source.find("iron_tg_at += 8u * unsigned(p_m);"), std::string::npos) << e.source;
}

TEST(TgCuda, StaticArraysOver48KiBMoveToDynamicSharedMemory) {
  g_static_floats = 12 * 1024;  // exactly 48 KiB: static
  ir::Kernel at = trace("tgmem_static", &static_body);
  EXPECT_FALSE(codegen::cuda_dynamic_shared(at, DType::F32));
  g_static_floats = 12 * 1024 + 1;
  ir::Kernel over = trace("tgmem_static", &static_body);
  EXPECT_TRUE(codegen::cuda_dynamic_shared(over, DType::F32));
  codegen::Emitted e = codegen::emit(passes::optimize(over), DType::F32, codegen::Target::Cuda);
  ASSERT_TRUE(e.ok());
  EXPECT_NE(e.source.find("extern __shared__"), std::string::npos) << e.source;
}

TEST(TgCuda, CompilesThroughNvrtcForSm80AndSm90) {
  g_static_floats = 20 * 1024;
  const ir::Kernel kernels[] = {trace("tgmem_f16", &f16_stage_body), trace("tgmem_dynamic", &dynamic_body),
                                trace("tgmem_static", &static_body),
                                trace("tgmem_register", &register_body, Mode::Elementwise),
                                trace("tgmem_wide_types", &wide_types_body)};
  for (const ir::Kernel& k : kernels) {
    codegen::Emitted e = codegen::emit(passes::optimize(k), DType::F32, codegen::Target::Cuda);
    ASSERT_TRUE(e.ok()) << k.name;
    for (const char* arch : {"sm_80", "sm_90a"}) {
      rt::NvrtcResult r = rt::nvrtc_compile(e.source, e.entry, arch);
      EXPECT_TRUE(r.ok) << k.name << " for " << arch << ":\n" << r.log.substr(0, 3000) << "\n" << e.source;
    }
  }
}

TEST(TgGlsl, ArraysAtRealWidthAndSizedBySpecializationConstants) {
  ir::Kernel f16 = passes::optimize(trace("tgmem_f16", &f16_stage_body));
  codegen::Emitted e = codegen::emit(f16, DType::F32, codegen::Target::Glsl);
  ASSERT_TRUE(e.ok()) << e.diags.render(f16);
  EXPECT_NE(e.source.find("shared uint16_t tg_stage[64u];"), std::string::npos) << e.source;
  EXPECT_TRUE(codegen::compile_glsl(e.source, "tgmem_f16").ok);
  ir::Kernel dyn = passes::optimize(trace("tgmem_dynamic", &dynamic_body));
  e = codegen::emit(dyn, DType::F32, codegen::Target::Glsl);
  ASSERT_TRUE(e.ok()) << e.diags.render(dyn);
  // m is scalar 1 (after n): specialization constant 3 + 1.
  EXPECT_NE(e.source.find("layout(constant_id = 4) const uint iron_tg_size_m = 1u;"), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("shared float tg_sized[2u * iron_tg_size_m];"), std::string::npos) << e.source;
  codegen::Spirv spv = codegen::compile_glsl(e.source, "tgmem_dynamic");
  EXPECT_TRUE(spv.ok) << spv.log << e.source;
}

// --- runs: the interpreter and lavapipe ---------------------------------------------------------

class TgRun : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    try {
      ctx_ = Context::create(GetParam());
    } catch (const Error& e) {
      FAIL() << "no " << backend_name(GetParam()) << " context: " << e.what();
    }
  }
  std::unique_ptr<Context> ctx_;
};

// A store into an f16 array rounds to nearest even; the load widens exactly.
TEST_P(TgRun, SixteenBitArrayHoldsSixteenBitValues) {
  ir::Kernel k = trace("tgmem_f16", &f16_stage_body);
  std::vector<float> x = ramp(64, 1.0009765625f);
  std::vector<float> out = run(*ctx_, k, x, {{"n", 64}}, {1, 1, 1}, {64, 1, 1});
  int rounded = 0;
  for (uint32_t l = 0; l < 64; ++l) {
    const float product = f16_round(x[l ^ 1u]) * 3.0f;  // exact in f32
    EXPECT_EQ(out[l], f16_round(product)) << "element " << l;
    rounded += f16_round(product) != product;
  }
  EXPECT_GT(rounded, 32);  // the fixture really needs the rounding
}

// Arrays of i8, u16, i64 and f8e4m3 hold values of their dtype (host oracle in the same order).
TEST_P(TgRun, ArraysOfTheNarrowAndWideElementTypes) {
  ir::Kernel k = trace("tgmem_wide_types", &wide_types_body);
  std::vector<float> x(64);
  for (uint32_t l = 0; l < 64; ++l) x[l] = (float(l) - 20.0f) * 3.37f + 0.21f;
  std::vector<float> out = run(*ctx_, k, x, {{"n", 64}}, {1, 1, 1}, {64, 1, 1});
  for (uint32_t l = 0; l < 64; ++l) {
    const float xp = x[l ^ 1u];
    const int32_t v = int32_t(xp);
    const float want = float(int8_t(uint8_t(uint32_t(v) * 37u))) + float(uint16_t(uint32_t(v) * 1001u)) +
                       float(v) + num::round_to(DType::F8E4M3, xp);
    EXPECT_EQ(out[l], want) << "element " << l;
  }
}

// Two dispatches of one kernel with different sizes (two Vulkan pipelines from one module).
TEST_P(TgRun, ArraySizedAtDispatch) {
  ir::Kernel k = trace("tgmem_dynamic", &dynamic_body);
  for (uint32_t tg : {32u, 64u}) {
    const uint32_t groups = 3, n = groups * tg;
    std::vector<float> x = ramp(n, 0.5f);
    std::vector<float> out = run(*ctx_, k, x, {{"n", n}, {"m", tg}}, {groups, 1, 1}, {tg, 1, 1});
    for (uint32_t g = 0; g < groups; ++g)
      for (uint32_t l = 0; l < tg; ++l) {
        // Element 2m - 1 - 2l of the staged pairs is the odd one of thread m - 1 - l.
        const float want = x[g * tg + tg - 1 - l] * 2.0f + float(l % 3 + 1);
        ASSERT_EQ(out[g * tg + l], want) << "tg " << tg << " group " << g << " thread " << l;
      }
  }
}

TEST_P(TgRun, RegisterArray) {
  ir::Kernel k = trace("tgmem_register", &register_body, Mode::Elementwise);
  std::vector<float> x = ramp(100, 0.37f);
  std::vector<float> out = run(*ctx_, k, x, {{"n", 100}}, {2, 1, 1}, {64, 1, 1});
  for (size_t i = 0; i < x.size(); ++i) {
    float s = 0.0f;
    for (int j = 3; j >= 0; --j) s = x[i] * float(j + 1) - s;
    ASSERT_EQ(out[i], s) << "element " << i;
  }
}

// The limit is the larger of the device's plain and opt-in threadgroup memory.
TEST_P(TgRun, DispatchOverTheThreadgroupLimitIsRejected) {
  const DeviceInfo& d = ctx_->info();
  const uint64_t limit = std::max(d.shared_memory_bytes, d.shared_memory_optin_bytes);
  ir::Kernel k = trace("tgmem_dynamic", &dynamic_body);
  // 16 bytes of `fixed` (padded to `sized`'s 16-byte alignment), then 8 bytes per unit of m.
  const uint32_t fits = uint32_t((limit - 16) / 8), over = fits + 1;
  std::vector<float> x(64, 1.0f);
  try {
    run(*ctx_, k, x, {{"n", 64}, {"m", over}}, {1, 1, 1}, {64, 1, 1});
    FAIL() << "a dispatch needing " << 16 + 8 * uint64_t(over) << " bytes was accepted";
  } catch (const Error& e) {
    EXPECT_PRED_FORMAT2(testing::IsSubstring,
                        "the kernel needs " + std::to_string(16 + 8 * uint64_t(over)) +
                            " bytes of threadgroup memory; the device allows " + std::to_string(limit),
                        std::string(e.what()));
  }
  // Exactly at the limit the dispatch is valid.
  EXPECT_NO_THROW(ctx_->validate_dispatch(k, DType::F32,
                                          {{"x", ctx_->alloc(DType::F32, 64)}, {"out", ctx_->alloc(DType::F32, 64)}},
                                          {{"n", 64}, {"m", fits}}, {1, 1, 1}, {64, 1, 1}));
}

INSTANTIATE_TEST_SUITE_P(Backends, TgRun, testing::Values(Backend::Interp, Backend::Vulkan),
                         [](const testing::TestParamInfo<Backend>& p) { return std::string(backend_name(p.param)); });

// The interpreter allocates per dispatch: an array sized too small for the kernel's accesses is
// an out-of-range error naming the array and its size this dispatch.
TEST(TgInterp, SizedArrayBoundsFollowTheDispatch) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  ir::Kernel k = trace("tgmem_dynamic", &dynamic_body);
  std::vector<float> x(64, 1.0f);
  try {
    run(*ctx, k, x, {{"n", 64}, {"m", 16}}, {1, 1, 1}, {64, 1, 1});
    FAIL() << "out-of-range threadgroup store was not reported";
  } catch (const Error& e) {
    EXPECT_PRED_FORMAT2(testing::IsSubstring, "of threadgroup array 'sized' at index 32 is out of range: the array has 32 elements",
                        std::string(e.what()));
  }
}

TEST(TgInterp, DeviceReportsOptInLimit) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  EXPECT_EQ(ctx->info().shared_memory_optin_bytes, 232448u);  // 227 KiB, like the H200
}

// The cross-backend fuzzer generates the new arrays (drawn from their own random stream, so the
// programs without them are the ones it generated before): register arrays with loop-written
// elements and computed indices, f32 arrays sized at dispatch, aligned arrays and 16-bit arrays.
TEST(TgFuzz, ProgramsUseTheNewArrays) {
  fuzz::RandomProgramOptions o;
  o.cross_backend = true;
  size_t local = 0, sized = 0, aligned = 0, half = 0, folded = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    ir::Kernel k = fuzz::random_program(seed, fuzz::reduction_seed(seed), o);
    bool has_local = false, has_sized = false, has_aligned = false, has_half = false;
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      has_local = has_local || in.op == ir::Op::LocalAlloc;
      if (in.op != ir::Op::TgAlloc) return;
      has_sized = has_sized || in.has(ir::Attr::CountParam);
      has_aligned = has_aligned || in.has(ir::Attr::Align);
      has_half = has_half || ir::tg_elem_bytes(in, DType::F32) == 2;
    });
    local += has_local, sized += has_sized, aligned += has_aligned, half += has_half;
    if (has_local && folded < 5) {
      passes::PipelineResult r = passes::run_pipeline(k);
      ASSERT_TRUE(r.ok()) << "seed " << seed << ":\n" << r.diags.render(k);
      for (const passes::PassRecord& p : r.passes) folded += p.stats.count("register_arrays.folded") ? 1 : 0;
    }
  }
  EXPECT_GT(local, 40u);
  EXPECT_GT(sized, 20u);
  EXPECT_GT(aligned, 40u);
  EXPECT_GT(half, 20u);
  EXPECT_GT(folded, 0u);
}

// A negative i32 size is rejected at dispatch, naming the parameter and the array.
TEST(TgDispatch, NegativeSizeIsRejected) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  ir::Kernel k = trace("tgmem_i32_sized", &i32_sized_body);
  std::vector<float> x(64, 1.0f);
  try {
    run(*ctx, k, x, {{"n", 64}, {"m", -64}}, {1, 1, 1}, {64, 1, 1});
    FAIL() << "a negative size was accepted";
  } catch (const Error& e) {
    EXPECT_PRED_FORMAT2(testing::IsSubstring, "constexpr 'm' is negative but sizes threadgroup array 't'",
                        std::string(e.what()));
  }
  EXPECT_EQ(run(*ctx, k, x, {{"n", 64}, {"m", 64}}, {1, 1, 1}, {64, 1, 1}), x);
}
