// By-value structure parameters (issue 11 item 4): `blob<bytes,align>` and `tensormap` in the
// text IR and the verifier, blob values through dispatch and prepared launches (the interpreter
// models a blob; Vulkan refuses one), the rules of a TMA tensor map checked before anything is
// encoded, CUDA source that NVRTC compiles here, and on a CUDA device a map encoded by
// cuTensorMapEncodeTiled and read back word by word by a kernel (skipped without a driver).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "ir_text.hpp"
#include "runtime/device.hpp"

using namespace iron;
using iron::test::parse_error;
using iron::test::parse_verified;

namespace {

// out[i] = word i of `cfg` for i < n: a blob read back.
const char* kBlobEcho =
    "kernel blob_echo mode=Elementwise {\n"
    "  param n: scalar<u32>\n"
    "  param cfg: blob<64,16>\n"
    "  param out: out buf<u32> extent=n\n"
    "  %0 = thread_id<0> : u32\n"
    "  %1 = param<n> : u32\n"
    "  %2 = lt %0, %1 : bool\n"
    "  if %2 {\n"
    "    %3 = load<cfg> %0 : u32 @\"blob.cpp\":9\n"
    "    store<out> %0, %3\n"
    "  }\n"
    "}\n";

// out[i] = word i of the tensor map `map` (32 words) and the scale beside it.
const char* kMapEcho =
    "kernel map_echo mode=Elementwise {\n"
    "  param map: tensormap\n"
    "  param out: out buf<u32> extent=32\n"
    "  %0 = thread_id<0> : u32\n"
    "  %1 = const<32> : u32\n"
    "  %2 = lt %0, %1 : bool\n"
    "  if %2 {\n"
    "    %3 = load<map> %0 : u32\n"
    "    store<out> %0, %3\n"
    "  }\n"
    "}\n";

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

struct alignas(16) Config {
  uint32_t w[16];
};

ScalarValue config(uint32_t seed) {
  Config c;
  for (uint32_t i = 0; i < 16; ++i) c.w[i] = seed * 1000u + i * 7u + (i == 15 ? 0x80000000u : 0u);
  return ScalarValue::blob(&c, sizeof c, alignof(Config));
}

}  // namespace

TEST(BlobParams, TextFormRoundTripsAndVerifies) {
  ir::Kernel k = parse_verified(kBlobEcho);
  ASSERT_EQ(k.params[1].kind, ir::ParamKind::Blob);
  EXPECT_EQ(k.params[1].blob_bytes, 64u);
  EXPECT_EQ(k.params[1].align, 16u);
  const std::string text = ir::print(k);
  EXPECT_NE(text.find("param cfg: blob<64,16>\n"), std::string::npos) << text;
  EXPECT_EQ(ir::print(ir::parse(text)), text);
  ir::Kernel m = parse_verified(kMapEcho);
  EXPECT_TRUE(m.params[0].tensor_map);
  EXPECT_EQ(m.params[0].blob_bytes, ir::kTensorMapBytes);
  EXPECT_EQ(m.params[0].align, ir::kTensorMapAlign);
  EXPECT_NE(ir::print(m).find("param map: tensormap\n"), std::string::npos);
  EXPECT_NE(parse_error("kernel b mode=Elementwise {\n  param c: blob<64>\n}\n").find("expected blob<bytes,align>"),
            std::string::npos);
  EXPECT_NE(parse_error("kernel b mode=Elementwise {\n  param c: blob<64,16> aligned=16\n}\n").find("unexpected 'aligned=16'"),
            std::string::npos);
}

TEST(BlobParams, TheVerifierChecksSizeAlignmentAndUse) {
  auto errors = [](const std::string& text) {
    ir::Kernel k = ir::parse(text);
    ir::Diagnostics d;
    ir::verify(k, d);
    return d.render(k);
  };
  EXPECT_NE(errors("kernel b mode=Elementwise {\n  param c: blob<6,4>\n}\n").find("a blob is a positive multiple of 4 bytes"),
            std::string::npos);
  EXPECT_NE(errors("kernel b mode=Elementwise {\n  param c: blob<64,3>\n}\n").find("a power of two from 4 to 128"),
            std::string::npos);
  EXPECT_NE(errors("kernel b mode=Elementwise {\n  param c: blob<8,16>\n}\n").find("not a multiple of its alignment 16"),
            std::string::npos);
  // 4096 bytes of blob and one more parameter pass CUDA's 4 KiB of kernel parameters.
  EXPECT_EQ(errors("kernel b mode=Elementwise {\n  param c: blob<4096,16>\n}\n"), "");
  EXPECT_NE(errors("kernel b mode=Elementwise {\n  param n: scalar<u32>\n  param c: blob<4096,16>\n}\n")
                .find("the parameters of b take 4112 bytes"),
            std::string::npos);
  // Stored into, read as a float, read as a scalar: each refused, located.
  const std::string store = errors(
      "kernel b mode=Elementwise {\n  param c: blob<64,16>\n  %0 = thread_id<0> : u32\n  store<c> %0, %0 @\"b.cpp\":3\n}\n");
  EXPECT_NE(store.find("b.cpp:3"), std::string::npos) << store;
  EXPECT_NE(store.find("parameter 'c' is a blob (a by-value structure: only load reads it)"), std::string::npos) << store;
  const std::string as_float =
      errors("kernel b mode=Elementwise {\n  param c: blob<64,16>\n  %0 = thread_id<0> : u32\n  %1 = load<c> %0 : f32\n}\n");
  EXPECT_NE(as_float.find("u32"), std::string::npos) << as_float;
  const std::string as_scalar = errors("kernel b mode=Elementwise {\n  param c: blob<64,16>\n  %0 = param<c> : u32\n}\n");
  EXPECT_NE(as_scalar.find("parameter 'c' is a blob"), std::string::npos) << as_scalar;
}

// The interpreter models a blob (its words, bounds-checked) and Vulkan passes one as push-constant
// words after the scalars; dispatch and prepared launches check the value's size and alignment
// against the declaration, naming both and where it is declared.
TEST(BlobParams, InterpreterAndVulkanReadABlobThroughDispatchAndPreparedLaunches) {
  for (Backend backend : {Backend::Interp, Backend::Vulkan}) {
    SCOPED_TRACE(backend_name(backend));
    std::unique_ptr<Context> ctx = Context::create(backend);
    const ir::Kernel k = parse_verified(kBlobEcho);
    DeviceBuffer out = ctx->alloc(DType::U32, 16);
    auto got = [&] {
      std::vector<uint32_t> v(16);
      ctx->download(out, v.data(), 64);
      return v;
    };
    auto want = [](uint32_t seed) {
      std::vector<uint32_t> v(16);
      for (uint32_t i = 0; i < 16; ++i) v[i] = seed * 1000u + i * 7u + (i == 15 ? 0x80000000u : 0u);
      return v;
    };
    ctx->dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"n", 16u}, {"cfg", config(3)}}, {1, 1, 1}, {32, 1, 1});
    EXPECT_EQ(got(), want(3));
    PreparedLaunch p = ctx->prepare_launch(k, DType::F32, {{"out", out}}, {{"n", 16u}, {"cfg", config(4)}}, {1, 1, 1}, {32, 1, 1});
    p.launch();
    EXPECT_EQ(got(), want(4));
    p.set_scalar(p.param("cfg"), config(9));
    p.launch();
    EXPECT_EQ(got(), want(9));
    // In a sequence: a new blob reaches the replay (Vulkan records its push constants again).
    LaunchSequence seq = ctx->create_sequence();
    seq.add(std::move(p));
    seq.replay();
    EXPECT_EQ(got(), want(9));
    seq.step(0).set_scalar(seq.step(0).param("cfg"), config(12));
    seq.replay();
    EXPECT_EQ(got(), want(12));

    PreparedLaunch& q = seq.step(0);
    const uint32_t words[12] = {};
    const std::string size = message([&] { q.set_scalar(q.param("cfg"), ScalarValue::blob(words, sizeof words, 16)); });
    EXPECT_NE(size.find("blob parameter 'cfg' of blob_echo (declared at"), std::string::npos) << size;
    EXPECT_NE(size.find("is blob<64,16> but the value is a 48-byte blob (aligned to 16)"), std::string::npos) << size;
    const std::string align = message([&] {
      ctx->dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"n", 16u}, {"cfg", ScalarValue::blob(want(1).data(), 64, 4)}},
                              {1, 1, 1}, {32, 1, 1});
    });
    EXPECT_NE(align.find("is blob<64,16> but the value is a 64-byte blob (aligned to 4)"), std::string::npos) << align;
    const std::string unset =
        message([&] { ctx->dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"n", 16u}}, {1, 1, 1}, {32, 1, 1}); });
    EXPECT_NE(unset.find("blob parameter 'cfg' of blob_echo (declared at <unknown>) is not set"), std::string::npos) << unset;
    const std::string number = message([&] { q.set_scalar(q.param("cfg"), 5u); });
    EXPECT_NE(number.find("takes ScalarValue::blob(data, bytes, align), not 5"), std::string::npos) << number;
    const std::string as_blob = message([&] { q.set_scalar(q.param("n"), config(1)); });
    EXPECT_NE(as_blob.find("is a by-value structure, not a number"), std::string::npos) << as_blob;
    if (backend != Backend::Interp) continue;
    // A word past the blob is a located bounds fault, not a read of whatever follows it.
    PreparedLaunch past = ctx->prepare_launch(k, DType::F32, {{"out", ctx->alloc(DType::U32, 17)}},
                                              {{"n", 17u}, {"cfg", config(1)}}, {1, 1, 1}, {32, 1, 1});
    const std::string oob = message([&] { past.launch(); });
    EXPECT_NE(oob.find("load of blob 'cfg' at index 16 is out of range: the blob has 16 u32 words"), std::string::npos) << oob;
    EXPECT_NE(oob.find("blob.cpp:9"), std::string::npos) << oob;
  }
}

// MSL and HIP have no by-value structure parameter in Iron: the emitter says so, located; a
// tensor map is CUDA's alone (GLSL refuses it too).
TEST(BlobParams, MslHipAndGlslTensorMapsAreRefusedByName) {
  const ir::Kernel k = parse_verified(kBlobEcho);
  for (codegen::Target t : {codegen::Target::Msl, codegen::Target::Hip}) {
    codegen::Emitted e = codegen::emit(k, DType::F32, t);
    ASSERT_FALSE(e.diags.empty());
    EXPECT_NE(e.diags.items[0].message.find("blob parameter 'cfg' (a by-value structure) is not expressible on"),
              std::string::npos)
        << e.diags.items[0].message;
  }
  codegen::Emitted g = codegen::emit(parse_verified(kMapEcho), DType::F32, codegen::Target::Glsl);
  ASSERT_FALSE(g.diags.empty());
  EXPECT_NE(g.diags.items[0].message.find("is not expressible on GLSL 450; a tensor map is CUDA's"), std::string::npos)
      << g.diags.items[0].message;
}

// The rules of a tensor map are checked before anything is encoded, each naming the parameter;
// the interpreter "encodes" a map as 128 zero bytes (it copies through the map's description)
// and refuses a kernel that reads a map's words, which are the CUDA driver's encoding.
TEST(TensorMaps, TheRulesAreCheckedBeforeEncoding) {
  std::unique_ptr<Context> ctx = Context::create(Backend::Interp);
  DeviceBuffer a = ctx->alloc(DType::BF16, 64 * 64);
  TensorMap m;
  m.buffer = a;
  m.dims = {64, 64};
  m.box = {32, 8};  // rows of 64 bytes
  m.swizzle = TensorMap::Swizzle::B128;
  const std::string sw = message([&] { ctx->encode_tensor_map(m, "map"); });
  EXPECT_NE(sw.find("swizzle 128B does not match the box row of 64 bytes (box[0] = 32 x 2-byte bf16)"), std::string::npos) << sw;
  EXPECT_NE(sw.find("(use 64B)"), std::string::npos) << sw;
  m.swizzle = TensorMap::Swizzle::B64;
  EXPECT_EQ(ctx->encode_tensor_map(m, "map"), std::vector<uint8_t>(ir::kTensorMapBytes, 0));
  TensorMap bad = m;
  bad.strides = {100};
  const std::string stride = message([&] { ctx->encode_tensor_map(bad, "map"); });
  EXPECT_NE(stride.find("the stride of dimension 1 is 100 bytes; TMA takes multiples of 16 below 2^40"), std::string::npos) << stride;
  bad = m;
  bad.dims = {64, 65};
  const std::string span = message([&] { ctx->encode_tensor_map(bad, "map"); });
  EXPECT_NE(span.find("addresses 8320 bytes but its buffer has 8192"), std::string::npos) << span;
  bad = m;
  bad.box = {4, 8};
  bad.swizzle = TensorMap::Swizzle::None;
  const std::string row = message([&] { ctx->encode_tensor_map(bad, "map"); });
  EXPECT_NE(row.find("the box row is 4 x 2-byte bf16 = 8 bytes; TMA copies rows of a multiple of 16 bytes"), std::string::npos)
      << row;
  bad = m;
  bad.buffer = ctx->view(a, 4, 64 * 64 - 4);  // 8 bytes in
  bad.dims = {60, 64};
  const std::string addr = message([&] { ctx->encode_tensor_map(bad, "map"); });
  EXPECT_NE(addr.find("aligned to 8 bytes; TMA needs 16"), std::string::npos) << addr;
  // Through a dispatch: the parameter and its declaration are named, and the interpreter
  // cannot run a kernel with a tensor map.
  const ir::Kernel k = parse_verified(kMapEcho);
  m.swizzle = TensorMap::Swizzle::B128;
  const std::string e = message([&] {
    ctx->dispatch_with_grid(k, DType::F32, {{"out", ctx->alloc(DType::U32, 32)}}, {{"map", m}}, {1, 1, 1}, {32, 1, 1});
  });
  EXPECT_NE(e.find("tensor map parameter 'map' of map_echo (declared at <unknown>): swizzle 128B does not match"),
            std::string::npos) << e;
  m.swizzle = TensorMap::Swizzle::B64;
  const std::string words = message([&] {
    ctx->dispatch_with_grid(k, DType::F32, {{"out", ctx->alloc(DType::U32, 32)}}, {{"map", m}}, {1, 1, 1}, {32, 1, 1});
    ctx->synchronize();
  });
  EXPECT_NE(words.find("load of tensor map 'map': its words are the CUDA driver's encoding, which the interpreter does not "
                       "model"),
            std::string::npos)
      << words;
}

// The CUDA source of both kinds: a __grid_constant__ structure parameter, read through a word
// pointer; NVRTC compiles it for the H200 here (the driver is not needed to compile).
TEST(BlobParams, CudaSourceCompilesWithNvrtc) {
  for (const char* text : {kBlobEcho, kMapEcho}) {
    const ir::Kernel k = parse_verified(text);
    codegen::Emitted c = codegen::emit(k, DType::F32, codegen::Target::Cuda);
    ASSERT_TRUE(c.diags.empty()) << c.diags.render(k);
    EXPECT_NE(c.source.find("const __grid_constant__ "), std::string::npos) << c.source;
    rt::NvrtcResult r;
    try {
      r = rt::nvrtc_compile(c.source, k.name, "sm_90a");
    } catch (const Error& e) {
      GTEST_SKIP() << "NVRTC unavailable: " << e.what();
    }
    EXPECT_TRUE(r.ok) << r.log << "\n" << c.source;
  }
}

// On a CUDA device: a plain blob reaches the kernel whole, and a tensor map encoded at dispatch
// (cuTensorMapEncodeTiled) reaches it byte for byte as Context::encode_tensor_map gives it, by
// dispatch and when a prepared launch is rebound to another map.
TEST(TensorMaps, CudaPassesTheEncodedMapToTheKernel) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(Backend::Cuda);
  } catch (const Error& e) {
    GTEST_SKIP() << "cuda unavailable: " << e.what();
  }
  const ir::Kernel blob = parse_verified(kBlobEcho);
  DeviceBuffer out = ctx->alloc(DType::U32, 32);
  const ScalarValue cfg = config(7);  // owns the bytes compared below
  ctx->dispatch_with_grid(blob, DType::F32, {{"out", out}}, {{"n", 16u}, {"cfg", cfg}}, {1, 1, 1}, {32, 1, 1});
  std::vector<uint32_t> got(32);
  ctx->download(out, got.data(), 64);
  const std::vector<uint8_t>& want_blob = cfg.blob_bytes();
  EXPECT_EQ(std::memcmp(got.data(), want_blob.data(), 64), 0);

  const ir::Kernel k = parse_verified(kMapEcho);
  DeviceBuffer a = ctx->alloc(DType::BF16, 128 * 64);
  TensorMap m;
  m.buffer = a;
  m.dims = {64, 128};
  m.box = {64, 16};  // rows of 128 bytes
  m.swizzle = TensorMap::Swizzle::B128;
  const std::vector<uint8_t> enc = ctx->encode_tensor_map(m);
  ctx->dispatch_with_grid(k, DType::F32, {{"out", out}}, {{"map", m}}, {1, 1, 1}, {32, 1, 1});
  ctx->download(out, got.data(), 128);
  EXPECT_EQ(std::memcmp(got.data(), enc.data(), 128), 0);
  PreparedLaunch p = ctx->prepare_launch(k, DType::F32, {{"out", out}}, {{"map", m}}, {1, 1, 1}, {32, 1, 1});
  TensorMap m2 = m;
  m2.box = {32, 8};
  m2.swizzle = TensorMap::Swizzle::B64;
  const std::vector<uint8_t> enc2 = ctx->encode_tensor_map(m2);
  EXPECT_NE(enc, enc2);
  p.set_scalar(p.param("map"), m2);
  p.launch();
  ctx->download(out, got.data(), 128);
  EXPECT_EQ(std::memcmp(got.data(), enc2.data(), 128), 0);
}
