// The second type parameter W (DType::GenericW) beside T: text IR, verifier, dispatch checks,
// pipeline cache keys, emission and the harness records of a kernel generic over both
// (iron_scale_by_weight, kernels/elementwise/scale_by_weight.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "harness/runner.hpp"
#include "ir_text.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

using namespace iron;

namespace {

const char* kScaleIr =
    "kernel scale_w mode=Elementwise dtypes=f32,f16 wtypes=bf16,f32 {\n"
    "  param n: scalar<u32>\n"
    "  param x: in buf<T> extent=n\n"
    "  param w: in buf<W> extent=n\n"
    "  param out: out buf<T> extent=n\n"
    "  %0 = param<n> : u32\n"
    "  %1 = thread_id<0> : u32\n"
    "  %2 = lt %1, %0 : bool\n"
    "  if %2 {\n"
    "    %3 = load<x> %1 : T\n"
    "    %4 = load<w> %1 : W\n"
    "    %5 = cast %4 : T\n"
    "    %6 = mul %3, %5 : T\n"
    "    store<out> %1, %6\n"
    "  }\n"
    "}\n";

std::string verify_error(const std::string& text) {
  ir::Kernel k = ir::parse(text);
  ir::Diagnostics d;
  ir::verify(k, d);
  return d.render(k);
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST(TypeParams, InstantiationNamesParseAndPrint) {
  Instantiation in;
  ASSERT_TRUE(parse_instantiation("f16,bf16", in));
  EXPECT_EQ(in, Instantiation(DType::F16, DType::BF16));
  EXPECT_EQ(instantiation_name(in), "f16,bf16");
  ASSERT_TRUE(parse_instantiation("f32", in));
  EXPECT_FALSE(in.has_w());
  EXPECT_EQ(instantiation_name(in), "f32");  // a T-only instantiation prints as its dtype, as before W
  EXPECT_FALSE(parse_instantiation("f16,", in));
  EXPECT_FALSE(parse_instantiation("f16,q7", in));
  EXPECT_FALSE(parse_instantiation("void", in));
  EXPECT_EQ(ir::resolve(DType::GenericW, Instantiation(DType::F16, DType::BF16)), DType::BF16);
  EXPECT_EQ(ir::resolve(DType::Generic, Instantiation(DType::F16, DType::BF16)), DType::F16);
}

TEST(TypeParams, TextIrRoundTripsWtypes) {
  ir::Kernel k = test::parse_verified(kScaleIr);
  EXPECT_EQ(k.wtypes, (std::vector<DType>{DType::BF16, DType::F32}));
  const std::string printed = ir::print(k);
  EXPECT_NE(printed.find("dtypes=f32,f16 wtypes=bf16,f32 {"), std::string::npos) << printed;
  EXPECT_EQ(ir::print(ir::parse(printed)), printed);
  EXPECT_NE(test::parse_error(replace(kScaleIr, "wtypes=bf16,f32", "wtypes=bf16 wtypes=f32")).find("duplicate wtypes="),
            std::string::npos);
  EXPECT_NE(test::parse_error(replace(kScaleIr, "wtypes=bf16,f32", "wtypes=bf16,,f32")).find("empty entry in wtypes="),
            std::string::npos);
  // Every T x W pair, T-major.
  std::vector<Instantiation> all = ir::instantiations(k);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[1], Instantiation(DType::F32, DType::F32));
  EXPECT_EQ(all[2], Instantiation(DType::F16, DType::BF16));
}

TEST(TypeParams, VerifierWantsWsListAndOnlyConcreteDtypesInIt) {
  std::string e = verify_error(replace(kScaleIr, " wtypes=bf16,f32", ""));
  EXPECT_NE(e.find("kernel uses W but declares no wtypes for it"), std::string::npos) << e;
  e = verify_error(replace(kScaleIr, "wtypes=bf16,f32", "wtypes=bf16,W"));
  EXPECT_NE(e.find("dtype W cannot substitute W"), std::string::npos) << e;
  e = verify_error(replace(kScaleIr, "wtypes=bf16,f32", "wtypes=bf16,T"));
  EXPECT_NE(e.find("dtype T cannot substitute W"), std::string::npos) << e;
  e = verify_error(replace(kScaleIr, "dtypes=f32,f16", "dtypes=f32,W"));
  EXPECT_NE(e.find("dtype W cannot substitute T"), std::string::npos) << e;
  e = verify_error(replace(kScaleIr, "wtypes=bf16,f32", "wtypes=f32,f32"));
  EXPECT_NE(e.find("wtypes lists f32 twice"), std::string::npos) << e;
}

TEST(TypeParams, DeclaresNamesBothParameters) {
  ir::Kernel k = test::parse_verified(kScaleIr);
  std::string why;
  EXPECT_TRUE(ir::declares(k, Instantiation(DType::F16, DType::F32), &why)) << why;
  EXPECT_FALSE(ir::declares(k, Instantiation(DType::F16, DType::F16), &why));
  EXPECT_EQ(why, "kernel scale_w is not declared for T = f16, W = f16 (W takes bf16, f32)");
  EXPECT_FALSE(ir::declares(k, Instantiation(DType::F16), &why));
  EXPECT_NE(why.find("it takes W = bf16, f32: name W after T, as in f16,bf16"), std::string::npos) << why;
  EXPECT_FALSE(ir::declares(kernel_ir("iron_add"), Instantiation(DType::F16, DType::F32), &why));
  EXPECT_EQ(why, "kernel iron_add is not declared for T = f16, W = f32 (it has no W)");
}

TEST(TypeParams, DispatchChecksWAndCachesEachPairApart) {
  auto ctx = Context::create(Backend::Interp);
  const ir::Kernel& k = kernel_ir("iron_scale_by_weight");
  const uint32_t rows = 2, d = 3;
  auto bind = [&](DType t, DType w) {
    return Bindings{{"x", ctx->alloc(t, rows * d)}, {"w", ctx->alloc(w, d)}, {"out", ctx->alloc(t, rows * d)}};
  };
  const Constexprs c{{"rows", rows}, {"d", d}};
  EXPECT_THROW(ctx->alloc(DType::GenericW, 4), Error);  // W is no storage dtype
  auto error_of = [&](Instantiation in, const Bindings& b) {
    try {
      ctx->dispatch_with_grid(k, in, b, c, {1, 1, 1}, {64, 1, 1});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(Instantiation(DType::F16, DType::BF16), bind(DType::F16, DType::BF16)), "");
  EXPECT_EQ(error_of(Instantiation(DType::F16, DType::F32), bind(DType::F16, DType::F32)), "");
  EXPECT_EQ(ctx->pipeline_cache_size(), 2u);  // one pipeline per T,W pair
  EXPECT_EQ(error_of(Instantiation(DType::F16, DType::BF16), bind(DType::F16, DType::BF16)), "");
  EXPECT_EQ(ctx->pipeline_cache_size(), 2u);

  std::string e = error_of(Instantiation(DType::F16, DType::I32), bind(DType::F16, DType::I32));
  EXPECT_NE(e.find("invalid dispatch of iron_scale_by_weight (f16,i32)"), std::string::npos) << e;
  EXPECT_NE(e.find("kernel iron_scale_by_weight is not declared for T = f16, W = i32 (W takes f32, f16, bf16)"),
            std::string::npos)
      << e;
  e = error_of(Instantiation(DType::F16), bind(DType::F16, DType::F16));
  EXPECT_NE(e.find("it takes W = f32, f16, bf16"), std::string::npos) << e;
  // The weights buffer must hold what W resolves to.
  e = error_of(Instantiation(DType::F16, DType::BF16), bind(DType::F16, DType::F16));
  EXPECT_NE(e.find("buffer 'w' holds f16 but the parameter is buf<bf16>"), std::string::npos) << e;
  // A kernel without W is never dispatched with one.
  e = error_of(Instantiation(DType::F16, DType::F16), {});
  EXPECT_NE(e.find("(f16,f16)"), std::string::npos) << e;
  try {
    ctx->dispatch_with_grid(kernel_ir("iron_add"), Instantiation(DType::F16, DType::F16),
                            {{"a", ctx->alloc(DType::F16, 8)}, {"b", ctx->alloc(DType::F16, 8)}, {"out", ctx->alloc(DType::F16, 8)}},
                            {{"n", 8}}, {1, 1, 1}, {32, 1, 1});
    ADD_FAILURE() << "a W given to a kernel without W was dispatched";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("(it has no W)"), std::string::npos) << err.what();
  }
}

TEST(TypeParams, EmissionResolvesWOnBothTargetsAndCompilesThroughNvrtc) {
  const ir::Kernel k = passes::optimize(kernel_ir("iron_scale_by_weight"));
  const Instantiation in(DType::F16, DType::BF16);
  EXPECT_EQ(codegen::entry_name(k, in), "iron_scale_by_weight_f16_wbf16");
  EXPECT_EQ(codegen::entry_name(kernel_ir("iron_add"), DType::F16), "iron_add_f16");  // unchanged without W
  codegen::Emitted cu = codegen::emit(k, in, codegen::Target::Cuda);
  ASSERT_TRUE(cu.ok()) << cu.diags.render(k);
  EXPECT_NE(cu.source.find("const __nv_bfloat16* __restrict__"), std::string::npos) << cu.source;
  EXPECT_NE(cu.source.find("__half* __restrict__"), std::string::npos) << cu.source;
  codegen::Emitted gl = codegen::emit(k, in, codegen::Target::Glsl);
  ASSERT_TRUE(gl.ok()) << gl.diags.render(k);
  EXPECT_NE(gl.source.find("(f16,bf16)"), std::string::npos);
  codegen::Emitted none = codegen::emit(k, DType::F16, codegen::Target::Cuda);
  EXPECT_FALSE(none.ok());
  try {
    rt::NvrtcResult r = rt::nvrtc_compile(cu.source, "scale_w", "sm_90a");
    EXPECT_TRUE(r.ok) << r.log;
  } catch (const Error& e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
}

TEST(TypeParams, DtypeFilterSelectsByTOrByPair) {
  auto only = parse_dtype_filter("f16");
  EXPECT_TRUE(dtype_filter_matches(only, Instantiation(DType::F16, DType::BF16)));
  EXPECT_TRUE(dtype_filter_matches(only, DType::F16));
  EXPECT_FALSE(dtype_filter_matches(only, Instantiation(DType::BF16, DType::F16)));
  only = parse_dtype_filter("f16,bf16");
  EXPECT_TRUE(dtype_filter_matches(only, Instantiation(DType::F16, DType::BF16)));
  EXPECT_FALSE(dtype_filter_matches(only, Instantiation(DType::F16, DType::F32)));
  EXPECT_FALSE(dtype_filter_matches(only, DType::F16));
  EXPECT_FALSE(parse_dtype_filter("").has_value());
  EXPECT_THROW(parse_dtype_filter("f16,x"), Error);
}

// A case labelled with a W its kernel lacks, or without the W its kernel needs, is rejected.
TEST(TypeParams, CaseLabelsMustNameWExactlyWhenTheKernelHasIt) {
  const TestDecl* scale = nullptr;
  const TestDecl* add = nullptr;
  for (const TestDecl* t : registered_tests()) {
    if (std::string(t->kernel) == "iron_scale_by_weight" && !scale) scale = t;
    if (std::string(t->kernel) == "iron_add" && !add) add = t;
  }
  ASSERT_TRUE(scale && add);
  const ir::Kernel& k = kernel_ir("iron_scale_by_weight");
  EXPECT_EQ(dtype_label_problem(*scale, k, Instantiation(DType::BF16, DType::F16)), "");
  EXPECT_NE(dtype_label_problem(*scale, k, DType::BF16).find("it takes W"), std::string::npos);
  EXPECT_NE(dtype_label_problem(*add, kernel_ir("iron_add"), Instantiation(DType::F16, DType::F16)).find("it has no W"),
            std::string::npos);
}
