// Packed 16-bit pairs (docs/semantics.md "Packed 16-bit pairs"): vec2<f16> / vec2<bf16> values
// made by `pair`, read by `pair_get`, and add, sub, mul, fma, min, max, neg, abs element by
// element with the scalar rules. The text IR round trip, the verifier's located rules, the
// interpreter against the scalar ops, the dialects' spellings (CUDA __hadd2_rn / __hfma2 ...,
// compiled through NVRTC; GLSL through glslang) and a conformance kernel on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "ir_text.hpp"
#include "passes/eval.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"
#include "device_run.hpp"

namespace iron {
namespace {

using test::parse_error;
using test::parse_verified;

// Every pair op on the elements of a and b (and c for fma), each result stored through
// pair_get, next to the same ops on the scalars: the two must agree bit for bit.
const char* const kPairIr =
    "kernel pairs mode=Elementwise dtypes=f16,bf16 {\n"
    "  param a: in buf<T> extent=2048\n  param b: in buf<T> extent=2048\n  param c: in buf<T> extent=2048\n"
    "  param packed: out buf<T> extent=16384\n  param scalar: out buf<T> extent=16384\n"
    "  %0 = thread_id<0> : u32\n  %1 = const<2> : u32\n  %2 = mul %0, %1 : u32\n  %3 = const<1> : u32\n"
    "  %4 = add %2, %3 : u32\n"
    "  %5 = load<a> %2 : T\n  %6 = load<a> %4 : T\n  %7 = load<b> %2 : T\n  %8 = load<b> %4 : T\n"
    "  %9 = load<c> %2 : T\n  %10 = load<c> %4 : T\n"
    "  %11 = pair %5, %6 : vec2<T>\n  %12 = pair %7, %8 : vec2<T>\n  %13 = pair %9, %10 : vec2<T>\n"
    "  %14 = add %11, %12 : vec2<T>\n  %15 = sub %11, %12 : vec2<T>\n  %16 = mul %11, %12 : vec2<T>\n"
    "  %17 = fma %11, %12, %13 : vec2<T>\n  %18 = min %11, %12 : vec2<T>\n  %19 = max %11, %12 : vec2<T>\n"
    "  %20 = neg %11 : vec2<T>\n  %21 = abs %12 : vec2<T>\n"
    "  %22 = const<8> : u32\n  %23 = mul %2, %22 : u32\n"
    // packed[8 * 2t + 2k + lane] = element lane of op k's result
    "  %24 = pair_get<0> %14 : T\n  %25 = pair_get<1> %14 : T\n  %26 = pair_get<0> %15 : T\n  %27 = pair_get<1> %15 : T\n"
    "  %28 = pair_get<0> %16 : T\n  %29 = pair_get<1> %16 : T\n  %30 = pair_get<0> %17 : T\n  %31 = pair_get<1> %17 : T\n"
    "  %32 = pair_get<0> %18 : T\n  %33 = pair_get<1> %18 : T\n  %34 = pair_get<0> %19 : T\n  %35 = pair_get<1> %19 : T\n"
    "  %36 = pair_get<0> %20 : T\n  %37 = pair_get<1> %20 : T\n  %38 = pair_get<0> %21 : T\n  %39 = pair_get<1> %21 : T\n"
    "@STORES@"
    "}\n";

std::string pair_ir() {
  std::string stores;
  // Element k of the 16 results goes to packed[t * 16 + k]; the scalar op to scalar[t * 16 + k].
  const char* scal[16][2] = {{"add", "a0 b0"}, {"add", "a1 b1"}, {"sub", "a0 b0"}, {"sub", "a1 b1"},
                             {"mul", "a0 b0"}, {"mul", "a1 b1"}, {"fma", "a0 b0 c0"}, {"fma", "a1 b1 c1"},
                             {"min", "a0 b0"}, {"min", "a1 b1"}, {"max", "a0 b0"}, {"max", "a1 b1"},
                             {"neg", "a0"}, {"neg", "a1"}, {"abs", "b0"}, {"abs", "b1"}};
  auto reg = [](const std::string& n) {
    const char lane = n[1];
    const int base = n[0] == 'a' ? 5 : n[0] == 'b' ? 7 : 9;
    std::string r = std::to_string(base + (lane == '1' ? 1 : 0));
    r.insert(r.begin(), '%');
    return r;
  };
  int next = 40;
  stores += "  %" + std::to_string(next) + " = const<16> : u32\n";
  const int sixteen = next++;
  stores += "  %" + std::to_string(next) + " = mul %0, %" + std::to_string(sixteen) + " : u32\n";
  const int base = next++;
  for (int k = 0; k < 16; ++k) {
    const int kc = next++;
    stores += "  %" + std::to_string(kc) + " = const<" + std::to_string(k) + "> : u32\n";
    const int at = next++;
    stores += "  %" + std::to_string(at) + " = add %" + std::to_string(base) + ", %" + std::to_string(kc) + " : u32\n";
    stores += "  store<packed> %" + std::to_string(at) + ", %" + std::to_string(24 + k) + "\n";
    std::string ops, text = scal[k][1];
    for (size_t i = 0; i < text.size(); i += 3) ops += (ops.empty() ? "" : ", ") + reg(text.substr(i, 2));
    const int v = next++;
    stores += "  %" + std::to_string(v) + " = " + scal[k][0] + " " + ops + " : T\n";
    stores += "  store<scalar> %" + std::to_string(at) + ", %" + std::to_string(v) + "\n";
  }
  std::string s = kPairIr;
  s.replace(s.find("@STORES@"), 8, stores);
  return s;
}

TEST(Pair, TextIrRoundTripsAndTheVerifierLocatesMisuse) {
  ir::Kernel k = parse_verified(pair_ir());
  const std::string printed = ir::print(k);
  EXPECT_NE(printed.find("pair %5, %6 : vec2<T>"), std::string::npos) << printed;
  EXPECT_NE(printed.find("pair_get<1> %14 : T"), std::string::npos) << printed;
  EXPECT_EQ(ir::print(parse_verified(printed)), printed);

  auto verify_error = [](const std::string& text) {
    ir::Kernel k = ir::parse(text);
    ir::Diagnostics d;
    ir::verify(k, d);
    return d.render(k);
  };
  const std::string head = "kernel v mode=Elementwise {\n  param a: in buf<f16> extent=4\n  param o: out buf<f16> extent=4\n"
                           "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : f16\n";
  std::string e = verify_error(head + "  %2 = cast %1 : f32\n  %3 = pair %2, %2 : vec2<f32>\n}\n");
  EXPECT_NE(e.find("pairs hold f16 or bf16, not f32"), std::string::npos) << e;
  e = verify_error(head + "  %2 = pair %1, %1 : vec2<f16>\n  %3 = pair_get<2> %2 : f16\n}\n");
  EXPECT_NE(e.find("index 2 is not 0 or 1"), std::string::npos) << e;
  e = verify_error(head + "  %2 = pair %1, %1 : vec2<f16>\n  %3 = div %2, %2 : vec2<f16>\n}\n");
  EXPECT_NE(e.find("takes scalars only"), std::string::npos) << e;  // no pair division
  e = verify_error(head + "  %2 = pair %1, %1 : vec2<f16>\n  store<o> %0, %2\n}\n");
  EXPECT_NE(e.find("takes scalars only"), std::string::npos) << e;
  e = verify_error(head + "  %2 = pair %1, %1 : vec2<f16>\n  %3 = cast %1 : bf16\n  %4 = pair %3, %3 : vec2<bf16>\n"
                          "  %5 = add %2, %4 : vec2<f16>\n}\n");
  EXPECT_NE(e.find("operand 1 is vec2<bf16> but the result is vec2<f16>"), std::string::npos) << e;
  // A T pair needs every dtype of T to be 16-bit.
  e = verify_error("kernel g mode=Elementwise dtypes=f32,f16 {\n  param a: in buf<T> extent=4\n"
                   "  %0 = thread_id<0> : u32\n  %1 = load<a> %0 : T\n  %2 = pair %1, %1 : vec2<T>\n}\n");
  EXPECT_NE(e.find("pairs hold f16 or bf16, not f32"), std::string::npos) << e;
}

TEST(Pair, EvalIsTheScalarRulePerElement) {
  std::mt19937 rng(5);
  for (DType d : {DType::F16, DType::BF16}) {
    for (int i = 0; i < 20000; ++i) {
      eval::Scalar v[6];
      for (auto& x : v) {
        const uint16_t h = uint16_t(rng());
        x = eval::Scalar::of_f32(d == DType::F16 ? num::f16_to_f32(h) : num::bf16_to_f32(h));
      }
      std::string error;
      eval::Scalar pa, pb, pc, r;
      ASSERT_TRUE(eval::eval_pair(ir::Op::Pair, d, 0, &v[0], 2, pa, error)) << error;
      ASSERT_TRUE(eval::eval_pair(ir::Op::Pair, d, 0, &v[2], 2, pb, error)) << error;
      ASSERT_TRUE(eval::eval_pair(ir::Op::Pair, d, 0, &v[4], 2, pc, error)) << error;
      for (ir::Op op : {ir::Op::Add, ir::Op::Sub, ir::Op::Mul, ir::Op::Fma, ir::Op::Min, ir::Op::Max, ir::Op::Neg, ir::Op::Abs}) {
        const int n = ir::op_info(op).arity;
        eval::Scalar args[3] = {pa, pb, pc};
        ASSERT_TRUE(eval::eval_pair(op, d, 0, args, n, r, error)) << error;
        for (int lane = 0; lane < 2; ++lane) {
          eval::Scalar sargs[3] = {v[lane], v[2 + lane], v[4 + lane]}, want, got;
          ASSERT_TRUE(eval::eval_pure(op, d, d, sargs, n, want, error)) << error;
          ASSERT_TRUE(eval::eval_pair(ir::Op::PairGet, d, lane, &r, 1, got, error)) << error;
          const bool both_nan = std::isnan(want.f()) && std::isnan(got.f());
          ASSERT_TRUE(both_nan || want.bits == got.bits) << ir::mnemonic(op) << " " << dtype_name(d) << " lane " << lane;
        }
      }
    }
  }
}

TEST(Pair, DialectsSpellPackedOpsAndTheSourceCompiles) {
  ir::Kernel k = parse_verified(pair_ir());
  for (DType t : {DType::F16, DType::BF16}) {
    codegen::Emitted cuda = codegen::emit(k, t, codegen::Target::Cuda);
    ASSERT_TRUE(cuda.ok()) << cuda.diags.render(k);
    for (const char* s : {"__hadd2_rn(", "__hsub2_rn(", "__hmul2_rn(", "__hfma2(", "a ^ 0x80008000u"})
      EXPECT_NE(cuda.source.find(s), std::string::npos) << s << "\n" << cuda.source;
    for (const char* arch : {"sm_75", "sm_80", "sm_90a"}) {
      rt::NvrtcResult r = rt::nvrtc_compile(cuda.source, "pairs", arch);
      EXPECT_TRUE(r.ok) << arch << ": " << r.log.substr(0, 4000);
    }
    codegen::Emitted glsl = codegen::emit(k, t, codegen::Target::Glsl);
    ASSERT_TRUE(glsl.ok()) << glsl.diags.render(k);
    EXPECT_EQ(glsl.source.find("f16vec2"), std::string::npos);  // words, not 16-bit arithmetic types
    codegen::Spirv spv = codegen::compile_glsl(glsl.source, "pairs");
    EXPECT_TRUE(spv.ok) << spv.log << glsl.source;
  }
}

// The DSL spelling: pairs of T loaded from two buffers, every pair op, the elements stored; and
// the same arithmetic on scalars, which the pair kernel must equal bit for bit.
template <bool kPacked>
void dsl_pair_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", T, {n});
  Buffer b = input("b", T, {n});
  Buffer out = output("out", T, {n});
  Expr i = thread_id(0) * 2u;
  if_(i + 1u < n, [&] {
    if (kPacked) {
      Pair x = pair(a[i], a[i + 1u]), y = pair(b[i], b[i + 1u]);
      Pair r = max(fma(x, y, x) - abs(-y), min(x * y, x + y));
      out[i] = get(r, 0);
      out[i + 1u] = get(r, 1);
    } else {
      for (uint32_t l = 0; l < 2; ++l) {
        ElemRef x = a[i + l], y = b[i + l];
        out[i + l] = max(fma(x, y, x) - abs(-y), min(x * y, x + y));
      }
    }
  });
}
int g_pair_bad_line = 0;
void dsl_pair_bad_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  g_pair_bad_line = __LINE__ + 1;
  Pair p = pair(a[i], a[i]);
  out[i] = get(p, 0);
}

TEST(Pair, DslTracesPairsAndLocatesAMisuse) {
  const std::vector<DType> dts = {DType::F16, DType::BF16};
  ir::Kernel packed = trace_kernel(KernelDecl{"dsl_pairs", &dsl_pair_body<true>, Mode::Elementwise, dts, __FILE__, __LINE__});
  ir::Kernel scalar = trace_kernel(KernelDecl{"dsl_scalars", &dsl_pair_body<false>, Mode::Elementwise, dts, __FILE__, __LINE__});
  const std::string text = ir::print(packed);
  for (const char* m : {" = pair ", " = pair_get<1> ", " = fma ", " = abs ", " = neg ", ": vec2<T>"})
    EXPECT_NE(text.find(m), std::string::npos) << m << " in\n" << text;
  const uint32_t n = 4096;
  std::mt19937 rng(9);
  for (DType d : dts) {
    std::vector<uint16_t> a(n), b(n);
    for (uint32_t i = 0; i < n; ++i) a[i] = uint16_t(rng()), b[i] = uint16_t(rng());
    auto run = [&](const ir::Kernel& k) {
      std::vector<uint16_t> out(n);
      std::vector<interp::BufferArg> args = {{a.data(), n * 2}, {b.data(), n * 2}, {out.data(), n * 2}};
      interp::run(passes::optimize(k), d, args, {n}, {n / 2 / 64, 1, 1}, {64, 1, 1}, interp::Options{});
      return out;
    };
    const std::vector<uint16_t> p = run(packed), q = run(scalar);
    auto nan16 = [&](uint16_t h) { return d == DType::F16 ? (h & 0x7fffu) > 0x7c00u : (h & 0x7fffu) > 0x7f80u; };
    int bad = 0;
    for (uint32_t i = 0; i < n; ++i) bad += !(p[i] == q[i] || (nan16(p[i]) && nan16(q[i])));
    EXPECT_EQ(bad, 0) << dtype_name(d);
  }
  std::string error;
  try {
    trace_kernel(KernelDecl{"dsl_pair_bad", &dsl_pair_bad_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("pair_test.cpp:" + std::to_string(g_pair_bad_line)), std::string::npos) << error;
  EXPECT_NE(error.find("pairs hold f16 or bf16, not f32"), std::string::npos) << error;
}

class PairConformance : public test::DeviceTest {};

// The packed ops agree with the scalar ops bit for bit (NaNs as NaNs), on the interpreter
// (lane widths 8 and 32, unoptimized and optimized) and the device, over random 16-bit patterns
// (every class: subnormals, infinities, NaNs, signed zeros).
TEST_P(PairConformance, PackedOpsEqualTheScalarOpsOnEveryBackend) {
  ir::Kernel k = parse_verified(pair_ir());
  Context& ctx = this->ctx();
  const uint32_t n = 2048, threads = n / 2, outs = threads * 16;
  for (DType d : {DType::F16, DType::BF16}) {
    std::mt19937 rng(d == DType::F16 ? 3 : 4);
    std::vector<uint16_t> in[3];
    for (auto& v : in) {
      v.resize(n);
      for (auto& x : v) x = uint16_t(rng());
    }
    auto run = [&](const ir::Kernel& kk, bool device, uint32_t lanes) {
      std::vector<uint16_t> packed(outs), scalar(outs);
      if (!device) {
        std::vector<interp::BufferArg> args = {{in[0].data(), n * 2}, {in[1].data(), n * 2}, {in[2].data(), n * 2},
                                               {packed.data(), outs * 2}, {scalar.data(), outs * 2}};
        interp::Options opts;
        opts.lane_width = lanes;
        interp::run(kk, d, args, {}, {threads / 64, 1, 1}, {64, 1, 1}, opts);
      } else {
        const char* names[] = {"a", "b", "c", "packed", "scalar"};
        Bindings bind;
        for (int i = 0; i < 5; ++i) {
          DeviceBuffer b = ctx.alloc(d, i < 3 ? n : outs);
          if (i < 3) ctx.upload(b, in[i].data(), n * 2);
          bind.push_back({names[i], b});
        }
        ctx.dispatch_with_grid(kk, d, bind, {}, {threads / 64, 1, 1}, {64, 1, 1});
        ctx.synchronize();
        ctx.download(bind[3].second, packed.data(), outs * 2);
        ctx.download(bind[4].second, scalar.data(), outs * 2);
      }
      return std::make_pair(packed, scalar);
    };
    auto nan16 = [&](uint16_t h) {
      return d == DType::F16 ? (h & 0x7fffu) > 0x7c00u : (h & 0x7fffu) > 0x7f80u;
    };
    const bool flushes = ctx.info().f32_denormals_flushed;
    auto sub16 = [&](uint16_t h) { return d == DType::BF16 && (h & 0x7f80u) == 0 && (h & 0x7fu) != 0; };
    const std::vector<std::pair<std::string, std::pair<std::vector<uint16_t>, std::vector<uint16_t>>>> runs = {
        {"interpreter", run(k, false, 32)},
        {"interpreter, lane width 8", run(k, false, 8)},
        {"optimized interpreter", run(passes::optimize(k), false, 32)},
        {ctx.info().name, run(k, true, 0)}};
    for (const auto& [where, got] : runs) {
      int failures = 0;
      for (uint32_t i = 0; i < outs && failures < 8; ++i) {
        const uint16_t p = got.first[i], s = got.second[i];
        if (p == s || (nan16(p) && nan16(s))) continue;
        // A device that flushes f32 subnormals: bf16 rows with a subnormal operand or result.
        const uint32_t t = i / 16, lane = i % 2;
        if (flushes && where == ctx.info().name &&
            (sub16(in[0][2 * t + lane]) || sub16(in[1][2 * t + lane]) || sub16(in[2][2 * t + lane]) || sub16(s) || sub16(p)))
          continue;
        ++failures;
        ADD_FAILURE() << dtype_name(d) << " on " << where << ": packed op " << (i % 16) / 2 << " lane " << lane
                      << " of thread " << t << " is 0x" << std::hex << p << ", the scalar op gives 0x" << s << std::dec;
      }
      // And the scalar ops are the interpreter's on every backend.
      for (uint32_t i = 0; i < outs && failures < 8; ++i) {
        const uint16_t w = runs[0].second.second[i], s = got.second[i];
        if (w == s || (nan16(w) && nan16(s))) continue;
        const uint32_t t = i / 16, lane = i % 2;
        if (flushes && where == ctx.info().name &&
            (sub16(in[0][2 * t + lane]) || sub16(in[1][2 * t + lane]) || sub16(in[2][2 * t + lane]) || sub16(s) || sub16(w)))
          continue;
        ++failures;
        ADD_FAILURE() << dtype_name(d) << " on " << where << ": scalar op " << (i % 16) / 2 << " of thread " << t
                      << " is 0x" << std::hex << s << ", the interpreter gives 0x" << w << std::dec;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PairConformance, ::testing::Values(Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) {
                           return std::string(i.param == Backend::Vulkan ? "Vulkan" : "Cuda");
                         });

}  // namespace
}  // namespace iron
