// Warpgroup tiles (tile_wg_mma, docs/semantics.md "Warpgroup tiles"): the DSL's located errors,
// the verifier's descriptor rules, the interpreter's definition and the rules it checks (the
// warpgroup alignment, the async-proxy fence, the descriptor's start-address grid), the matrix
// descriptor's bits against the PTX swizzle modes, the CUDA lowering (wgmma on sm_90a through
// NVRTC, with HGMMA in the SASS where cuobjdump is installed; mma.sync elsewhere) and the other
// targets' refusal by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <iron/iron.hpp>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "fuzz/conformance.hpp"
#include "fuzz/random_program.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

namespace iron {
using namespace dsl;
namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// which: "bf16.swz333"; rs: the A-from-registers case (tile_wg_mma_rs).
fuzz::ConformanceCase wg_case(const std::string& which, bool rs = false) {
  std::vector<fuzz::ConformanceCase> cs =
      fuzz::conformance_cases(std::string(rs ? "conformance.tile_wg_mma_rs." : "conformance.tile_wg_mma.") + which);
  if (cs.size() != 1) throw Error("no single warpgroup case " + which);
  return std::move(cs[0]);
}

// The case's kernel as the suite writes it (named values, so a test can mutate it).
std::string wg_text(const std::string& which, bool rs = false) {
  const DType t = which.rfind("bf16", 0) == 0 ? DType::BF16 : DType::F16;
  return fuzz::warpgroup_kernel_text("wg", t, std::stoll(which.substr(which.find("swz") + 3)), rs);
}

void replace(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) throw Error("no '" + from + "' in the kernel text");
  text.replace(at, from.size(), to);
}

// Runs the text of a case's kernel with the case's buffers on the interpreter; "" or the error.
std::string run_text(const fuzz::ConformanceCase& c, const std::string& text, std::vector<unsigned char>& out,
                     uint32_t lanes = 32) {
  try {
    ir::Kernel k = ir::parse(text);
    out = fuzz::run_launch(k, c.launch, lanes).back();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// --- The DSL ---------------------------------------------------------------------------------

int g_line = 0;
void wg_product(Swizzle sw) {
  Buffer out = output("out", f32, {2048});
  TgBuffer a = threadgroup_alloc("a", bf16, 128 * 64, 1024);
  TgBuffer b = threadgroup_alloc("b", bf16, 16 * 64, 1024);
  TileShape t = coop_tile_setup(16, 16, 16, bf16);
  g_line = __LINE__ + 1;
  Frag acc = coop_tile_wg_run(a, 0u, b, 0u, coop_tile_fill(t, 0.0f), sw);
  coop_tile_store(acc, out, simd_group_id() * 256u, 16u);
}
void wg_128() { wg_product(Swizzle{3, 3, 3}); }
void wg_shift4() { wg_product(Swizzle{3, 3, 4}); }
void wg_none() { wg_product(Swizzle{}); }

std::string trace_error(KernelBody body) {
  try {
    trace_kernel(KernelDecl{"wg_kernel", body, Mode::Reduction, {}, __FILE__, __LINE__});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// coop_tile_wg_run traces to tile_wg_mma<333> on 1024-byte aligned arrays; a swizzle no wgmma
// descriptor expresses, or none, is a trace-time error located at the call.
TEST(WarpgroupTiles, TheDslRefusesLayoutsNoDescriptorExpressesAtTheCall) {
  ir::Kernel k = trace_kernel(KernelDecl{"wg_kernel", &wg_128, Mode::Reduction, {}, __FILE__, __LINE__});
  const std::string text = ir::print(k);
  EXPECT_TRUE(has(text, "tile_wg_mma<333>")) << text;
  EXPECT_TRUE(has(text, "align=1024")) << text;
  std::string e = trace_error(&wg_shift4);
  EXPECT_TRUE(has(e, "swizzle {bits 3, base 3, shift 4} is not one a wgmma matrix descriptor expresses")) << e;
  EXPECT_TRUE(has(e, "wgmma_test.cpp:" + std::to_string(g_line))) << e;
  e = trace_error(&wg_none);
  EXPECT_TRUE(has(e, "an unswizzled tile cannot be described to wgmma")) << e;
}

// --- The verifier ----------------------------------------------------------------------------

// The text form round-trips; the verifier names a swizzle the descriptor cannot express, an array
// aligned below 1024 bytes and mixed element types.
TEST(WarpgroupTiles, TextRoundTripsAndTheVerifierNamesWhatADescriptorCannotExpress) {
  const fuzz::ConformanceCase c = wg_case("bf16.swz333");
  const std::string printed = ir::print(c.kernel);
  EXPECT_TRUE(has(printed, "tile_wg_mma<333> %")) << printed;
  ir::Kernel back = ir::parse(printed);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(back, d)) << d.render(back);
  EXPECT_EQ(ir::print(back), printed);
  const std::string text = wg_text("bf16.swz333");
  struct Bad {
    std::string from, to, says;
  };
  const std::vector<Bad> bads = {
      {"tile_wg_mma<333> %A, %ao0", "tile_wg_mma<334> %A, %ao0", "swizzle 334 is not one a wgmma matrix descriptor expresses"},
      {"tile_wg_mma<333> %A, %ao0", "tile_wg_mma<323> %A, %ao0", "swizzle 323 is not one a wgmma matrix descriptor expresses"},
      {"%A = tg_alloc<wa, 8192, align=1024>", "%A = tg_alloc<wa, 8192, align=128>",
       "A's threadgroup array is aligned to 128 bytes; a wgmma matrix descriptor's swizzle needs 1024"},
      {"%B = tg_alloc<wb, 1024, align=1024> : bf16", "%B = tg_alloc<wb, 1024, align=1024> : f16", "multiplies bf16 by f16"},
      // tile_wg_mma_rs: A's fragment and B's array of one type, and B on a 1024-byte boundary.
      {"tile_wg_mma_rs<333> %fa0", "tile_wg_mma_rs<334> %fa0", "swizzle 334 is not one a wgmma matrix descriptor expresses"},
      {"%fa0 = tile_tg_load<swizzle=333> %A, %fo0, %cS : frag<a, bf16, 16x16x16>",
       "%fa0 = tile_tg_load<swizzle=333> %A, %fo0, %cS : frag<a, f16, 16x16x16>", "multiplies f16 by bf16"},
  };
  for (const Bad& b : bads) {
    std::string t2 = b.from.find("%fa0") != std::string::npos ? wg_text("bf16.swz333", true) : text;
    replace(t2, b.from, b.to);
    try {
      ir::Kernel kb = ir::parse(t2);
      ir::Diagnostics db;
      EXPECT_FALSE(ir::verify(kb, db)) << b.to;
      EXPECT_TRUE(has(db.render(kb), b.says)) << db.render(kb);
    } catch (const Error& err) {
      ADD_FAILURE() << b.to << ": " << err.what();
    }
  }
}

// --- The interpreter -------------------------------------------------------------------------

// Every case (A from shared memory and from registers, f16 and bf16, each swizzle) matches the
// definition computed in the suite, at lane width 32 (two warpgroups) and 8 (lane groups 0 .. 7,
// two warpgroups of 32 threads).
TEST(WarpgroupTiles, TheInterpreterComputesTheDefinition) {
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma");
  // 12 at N = 16, 12 warpgroup accumulators (N 64, 128, 256), 4 issued; fp8: 4 at N = 16 (e4m3
  // under each fp8 swizzle, e5m2 under the 64-byte one), issued N 128 e5m2 (32-byte).
  ASSERT_EQ(cs.size(), 33u);
  for (const fuzz::ConformanceCase& c : cs)
    for (uint32_t lanes : {32u, 8u}) {
      std::vector<unsigned char> out;
      ASSERT_EQ(run_text(c, ir::print(c.kernel), out, lanes), "") << c.name;
      if (lanes == 32) {
        EXPECT_EQ(fuzz::conformance_difference(c, out, false), "") << c.name;
        continue;
      }
      // At lane width 8 the 8 lane groups hold rows 0 .. 127 the same way (warpgroup g / 4, 16
      // rows each): the same 128 x 16 answer.
      EXPECT_EQ(fuzz::conformance_difference(c, out, false), "") << c.name << " lanes 8";
    }
}

// Known-bad mutations the interpreter catches: staging under another swizzle than the one the
// descriptor describes (a wrong answer), a missing fence_proxy_async after the staging stores, a
// warpgroup that is not 4 consecutive lane groups from a multiple of 4, an operand start off the
// descriptor's grid.
TEST(WarpgroupTiles, AStagingSwizzleTheDescriptorDoesNotDescribeIsAWrongAnswer) {
  const fuzz::ConformanceCase c = wg_case("bf16.swz333");
  std::string text = wg_text("bf16.swz333");
  replace(text, "%cm = const<7> : u32", "%cm = const<3> : u32");  // the 64-byte pattern under a 128-byte descriptor
  std::vector<unsigned char> out;
  ASSERT_EQ(run_text(c, text, out), "");
  EXPECT_NE(fuzz::conformance_difference(c, out, false), "");
}

// Staging stores without fence_proxy_async before the barrier: the interpreter names the slot,
// the storing thread and its line.
TEST(WarpgroupTiles, AMissingAsyncProxyFenceIsALocatedError) {
  const fuzz::ConformanceCase c = wg_case("f16.swz233");
  std::string text = wg_text("f16.swz233");
  replace(text, "  fence_proxy_async\n", "");
  std::vector<unsigned char> out;
  const std::string e = run_text(c, text, out);
  EXPECT_TRUE(has(e, "tile_wg_mma reads threadgroup slot 'wa'[")) << e;
  EXPECT_TRUE(has(e, "with no fence_proxy_async after the store (wgmma reads shared memory through the async proxy")) << e;
  // A from registers: B still goes through the async proxy.
  text = wg_text("bf16.swz133", true);
  replace(text, "  fence_proxy_async\n", "");
  const std::string e2 = run_text(wg_case("bf16.swz133", true), text, out);
  EXPECT_TRUE(has(e2, "tile_wg_mma_rs reads threadgroup slot 'wb'[")) << e2;
}

// Lane groups 2 .. 5 running the op, and a 96-thread group, break the warpgroup rule: the
// interpreter names the lane groups.
TEST(WarpgroupTiles, AWarpgroupIsFourLaneGroupsFromAMultipleOfFour) {
  const fuzz::ConformanceCase c = wg_case("bf16.swz133");
  const std::string text = wg_text("bf16.swz133");
  // Lane groups 2 .. 5 run it: two half warpgroups.
  std::string t2 = text;
  replace(t2, "%run = lt %g, %c8 : bool", "%g2 = sub %g, %c2sh : u32\n  %c4w = const<4> : u32\n  %run = lt %g2, %c4w : bool");
  std::vector<unsigned char> out;
  std::string e = run_text(c, t2, out);
  EXPECT_TRUE(has(e, "tile_wg_mma reached by lane groups 2, 3, 4, 5 of 8")) << e;
  EXPECT_TRUE(has(e, "a warpgroup is 4 consecutive lane groups of 32 starting at a multiple of 4")) << e;
  // 96 threads: the last warpgroup is three lane groups.
  fuzz::ConformanceCase small = c;
  small.launch.threadgroup = {96, 1, 1};
  e = run_text(small, text, out);
  EXPECT_TRUE(has(e, "tile_wg_mma reached by lane groups 0, 1, 2 of 3")) << e;
}

// An operand start past the first 128-byte row of its swizzle atom, or not 16-byte aligned, is an
// error (a descriptor with base offset 0 would read another layout).
TEST(WarpgroupTiles, AnOperandStartOffTheDescriptorGridIsAnError) {
  const fuzz::ConformanceCase c = wg_case("bf16.swz333");
  const std::string text = wg_text("bf16.swz333");
  for (const char* k : {"%k0 = const<64> : u32", "%k0 = const<4> : u32"}) {
    std::string t2 = text;
    replace(t2, "%k0 = const<0> : u32", k);
    std::vector<unsigned char> out;
    const std::string e = run_text(c, t2, out);
    EXPECT_TRUE(has(e, "does not start a wgmma operand")) << k << ": " << e;
  }
}

// --- The matrix descriptor ---------------------------------------------------------------------

// The PTX ISA's K-major swizzled layouts, decoded from the descriptor as the tensor cores read
// them: row m, element k of an operand is at start + (m / 8) * SBO + (m % 8) * R + 2k bytes,
// and the swizzle XORs address bits [4, 4 + b) with bits [7, 7 + b), R = 128, 64, 32 bytes for
// modes 1, 2, 3 (b = 3, 2, 1). With the array on a 1024-byte boundary, every operand start the
// interpreter admits reads the element the DSL's swizzle_index names.
TEST(WarpgroupTiles, TheDescriptorReadsWhatTheSwizzledTileHolds) {
  struct SwzMode {
    int64_t code;
    uint64_t field, row_bytes;
  };
  // fp8 (codes {bits, 4, 3}): the same byte layouts with 1-byte elements, K 32 per product.
  for (const SwzMode& m : {SwzMode{333, 1, 128}, SwzMode{233, 2, 64}, SwzMode{133, 3, 32}, SwzMode{343, 1, 128},
                           SwzMode{243, 2, 64}, SwzMode{143, 3, 32}}) {
    const uint32_t S = ir::wgmma_row_elems(m.code), eb = ir::wgmma_elem_bytes(m.code), K = ir::wgmma_k(m.code);
    ASSERT_EQ(S * eb, m.row_bytes);
    ASSERT_EQ(K * eb, 32u);
    for (uint32_t off : {0u, 16u, 32u, 48u, 64u * S, 128u * S + 8u, 128u * S + 96u}) {
      if ((off * eb) % 16 != 0 || (off * eb) % 1024 >= 128) continue;  // the interpreter's grid
      const uint64_t d = ir::wgmma_descriptor(off * eb, m.code);
      EXPECT_EQ(d >> 62, m.field) << m.code;
      EXPECT_EQ((d >> 16) & 0x3fff, 1u);           // leading byte offset 16 (unused, K-major swizzled)
      EXPECT_EQ((d >> 49) & 7, 0u);                // base offset 0
      const uint64_t start = (d & 0x3fff) << 4, sbo = ((d >> 32) & 0x3fff) << 4;
      const uint64_t mask = m.row_bytes / 16 - 1;
      for (uint32_t row = 0; row < 256; ++row)  // A's 64 rows, a warpgroup accumulator's B up to 256
        for (uint32_t k = 0; k < K; ++k) {
          const uint64_t pre = start + (row / 8) * sbo + (row % 8) * m.row_bytes + eb * k;
          const uint64_t hw = pre ^ (((pre >> 7) & mask) << 4);
          const uint64_t dsl = eb * uint64_t(ir::swizzle_index(off + row * S + k, m.code));
          ASSERT_EQ(hw, dsl) << m.code << " off " << off << " row " << row << " k " << k;
        }
    }
  }
}

// --- CUDA ------------------------------------------------------------------------------------

namespace {

std::string cuda(const fuzz::ConformanceCase& c, codegen::CudaMma m, const char* arch = "sm_90a") {
  const ir::Kernel k = passes::optimize(c.kernel);
  codegen::EmitOptions o;
  o.cuda_mma = m;
  codegen::Emitted e = codegen::emit(k, DType::F32, codegen::profile_for(codegen::Target::Cuda, arch), o);
  EXPECT_TRUE(e.ok()) << e.diags.render(k);
  return e.source;
}

// The SASS of a CUBIN by cuobjdump (IRON_CUOBJDUMP, else /opt/cudabin/cuobjdump, else on PATH);
// "" with `why` set when there is none.
std::string sass(const std::vector<char>& cubin, std::string& why) {
  std::string tool;
  if (const char* t = std::getenv("IRON_CUOBJDUMP"); t && *t) tool = t;
  else if (std::filesystem::exists("/opt/cudabin/cuobjdump")) tool = "/opt/cudabin/cuobjdump";
  else if (std::system("command -v cuobjdump > /dev/null 2>&1") == 0) tool = "cuobjdump";
  if (tool.empty()) {
    why = "cuobjdump not found (IRON_CUOBJDUMP, /opt/cudabin/cuobjdump or PATH; scripts/install-deps.sh does not install it)";
    return "";
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("iron_wgmma_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string bin = (dir / "k.cubin").string(), txt = (dir / "k.sass").string();
  std::ofstream(bin, std::ios::binary).write(cubin.data(), std::streamsize(cubin.size()));
  const int rc = std::system((tool + " -sass " + bin + " > " + txt + " 2>&1").c_str());
  std::ifstream in(txt);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  if (rc != 0) {
    why = tool + " failed: " + out.substr(0, 500);
    return "";
  }
  return out;
}

}  // namespace

// auto on sm_90a: one wgmma.mma_async m64n16k16 per call through descriptors with the mode's
// bits (PTX: 128B = 1, 64B = 2, 32B = 3; stride byte offset = 8 rows), fenced, committed and
// waited in one asm statement; NVRTC compiles it and the SASS shows HGMMA. On sm_90 (no "a")
// auto takes mma.sync (HMMA, no HGMMA); forcing wgmma there is a compile error naming sm_90a.
TEST(WarpgroupTiles, NvrtcCompilesWgmmaForSm90aAndTheSassShowsHgmma) {
  struct Want {
    const char* which;
    const char* desc;
  };
  for (const Want& w : {Want{"bf16.swz333", "iron_tile_wg_desc(a, 1024u, 1ull)"}, Want{"f16.swz233", "iron_tile_wg_desc(a, 512u, 2ull)"},
                        Want{"bf16.swz133", "iron_tile_wg_desc(a, 256u, 3ull)"}}) {
    const fuzz::ConformanceCase c = wg_case(w.which);
    const std::string src = cuda(c, codegen::CudaMma::Auto);
    const std::string elem = has(w.which, "bf16") ? "bf16" : "f16";
    EXPECT_TRUE(has(src, "wgmma.mma_async.sync.aligned.m64n16k16.f32." + elem + "." + elem)) << src;
    EXPECT_TRUE(has(src, "wgmma.fence.sync.aligned")) << src;
    EXPECT_TRUE(has(src, "wgmma.commit_group.sync.aligned")) << src;
    EXPECT_TRUE(has(src, "wgmma.wait_group.sync.aligned 0")) << src;
    EXPECT_TRUE(has(src, w.desc)) << w.which << "\n" << src;
    EXPECT_TRUE(has(src, "__align__(1024)")) << src;
    rt::NvrtcResult r;
    try {
      r = rt::nvrtc_compile(src, c.kernel.name, "sm_90a");
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
    if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
    ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
    std::string why;
    const std::string s = sass(r.cubin, why);
    if (s.empty()) {
      GTEST_SKIP() << "NVRTC compiled the sm_90a wgmma kernels; the SASS check is skipped: " << why;
    }
    EXPECT_TRUE(has(s, "HGMMA.64x16x16.F32")) << w.which << "\n" << s.substr(0, 6000);
  }
  // A from registers: the fragment's four registers go to wgmma, B through its descriptor.
  {
    const fuzz::ConformanceCase c = wg_case("bf16.swz233", true);
    const std::string src = cuda(c, codegen::CudaMma::Auto);
    EXPECT_TRUE(has(src, "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
                         "{%8, %9, %10, %11}, %12, p, 1, 1, 0;"))
        << src;
    EXPECT_TRUE(has(src, "iron_tile_wgmma_rs_bf16_233(")) << src;
    rt::NvrtcResult r = rt::nvrtc_compile(src, c.kernel.name, "sm_90a");
    ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
    std::string why;
    const std::string s = sass(r.cubin, why);
    if (!s.empty()) {
      EXPECT_TRUE(has(s, "HGMMA.64x16x16.F32.BF16 R")) << s.substr(0, 6000);
      EXPECT_TRUE(has(s, ", R")) << s.substr(0, 6000);
    }
    for (codegen::CudaMma m : {codegen::CudaMma::MmaSync, codegen::CudaMma::Wmma, codegen::CudaMma::Software}) {
      r = rt::nvrtc_compile(cuda(c, m), c.kernel.name, "sm_90a");
      EXPECT_TRUE(r.ok) << codegen::cuda_mma_name(m) << "\n" << r.log.substr(0, 3000);
    }
  }
  // sm_90: auto falls back to mma.sync; forced wgmma names sm_90a.
  const fuzz::ConformanceCase c = wg_case("bf16.swz333");
  rt::NvrtcResult r = rt::nvrtc_compile(cuda(c, codegen::CudaMma::Auto, "sm_90"), c.kernel.name, "sm_90");
  ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
  std::string why;
  const std::string s = sass(r.cubin, why);
  if (!s.empty()) {
    EXPECT_FALSE(has(s, "HGMMA")) << s.substr(0, 4000);
    EXPECT_TRUE(has(s, "HMMA")) << s.substr(0, 4000);
  }
  r = rt::nvrtc_compile(cuda(c, codegen::CudaMma::Wgmma, "sm_90"), c.kernel.name, "sm_90");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.log, "IRON_CUDA_MMA=wgmma needs sm_90a")) << r.log.substr(0, 2000);
  // Forced mma on sm_90a: the composition through mma.sync, no wgmma.
  const std::string mma = cuda(c, codegen::CudaMma::MmaSync);
  EXPECT_TRUE(has(mma, "#define IRON_TILE_WGMMA 0")) << mma;
  EXPECT_FALSE(has(mma, "wgmma.mma_async")) << mma;
  r = rt::nvrtc_compile(mma, c.kernel.name, "sm_90a");
  ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
  // wmma and software compose too (and compile for sm_90a).
  for (codegen::CudaMma m : {codegen::CudaMma::Wmma, codegen::CudaMma::Software}) {
    r = rt::nvrtc_compile(cuda(c, m), c.kernel.name, "sm_90a");
    EXPECT_TRUE(r.ok) << codegen::cuda_mma_name(m) << "\n" << r.log.substr(0, 3000);
  }
}

// --- A small GEMM down the warpgroup op ---------------------------------------------------------

namespace {

// C[256, 32] = A[256, 256] x W[32, 256]^T in bf16 with f32 accumulation: one 128 x 16 block of C
// per threadgroup of 256 threads (two warpgroups, 8 warps of 16 rows), K in stages of 64 staged
// by 16-byte asynchronous copies into 128-byte swizzled rows, then fence_proxy_async and a
// barrier, then four tile_wg_mma (k 0, 16, 32, 48) per stage: the shape a wgmma GEMM kernel has.
constexpr uint32_t kGm = 256, kGn = 32, kGk = 256;

template <bool kRegisterA>
void wg_gemm() {
  Buffer a = input("a", bf16, {kGm * kGk});
  Buffer w = input("w", bf16, {kGn * kGk});
  Buffer c = output("c", f32, {kGm * kGn});
  const Swizzle sw{3, 3, 3};
  TgBuffer as = threadgroup_alloc("as", bf16, 128 * 64, 1024);
  TgBuffer bs = threadgroup_alloc("bs", bf16, 16 * 64, 1024);
  TileShape t = coop_tile_setup(16, 16, 16, bf16);
  Expr m0 = (program_id(0) / (kGn / 16)) * 128u;
  Expr n0 = (program_id(0) % (kGn / 16)) * 16u;
  Expr g = simd_group_id();
  Expr abase = (g / 4u) * (64u * 64u);  // the warpgroup's 64 rows of the staged A
  FragVar acc(coop_tile_fill(t, 0.0f));
  for_(0u, kGk / 64, [&](Expr kb) {
    for_(local_id(0), 128u * 8u, group_size(0), [&](Expr ch) {
      Expr r = ch / 8u, i = (ch % 8u) * 8u;
      async_copy(as[swizzle(sw, r * 64u + i)], a[(m0 + r) * kGk + kb * 64u + i], 8);
    });
    for_(local_id(0), 16u * 8u, group_size(0), [&](Expr ch) {
      Expr r = ch / 8u, i = (ch % 8u) * 8u;
      async_copy(bs[swizzle(sw, r * 64u + i)], w[(n0 + r) * kGk + kb * 64u + i], 8);
    });
    async_commit();
    async_wait(0);
    fence_proxy_async();
    barrier();
    for (uint32_t k0 = 0; k0 < 64; k0 += 16) {
      if (kRegisterA) {  // the warp's own 16 rows as a fragment (ldmatrix on the mma strategy)
        Frag fa = coop_tile_load_a(t, as, g * (16u * 64u) + k0, 64u, TileLayout{false, sw});
        acc.set(coop_tile_wg_run(fa, bs, k0, acc.get(), sw));
      } else {
        acc.set(coop_tile_wg_run(as, abase + k0, bs, k0, acc.get(), sw));
      }
    }
    barrier();
  });
  coop_tile_store(acc.get(), c, (m0 + g * 16u) * kGn + n0, kGn);
}

struct GemmData {
  std::vector<uint16_t> a, w;
  std::vector<double> want, mag;  // the f64 product and sum_k |a w| per element
};

GemmData gemm_data() {
  GemmData d;
  d.a.resize(kGm * kGk);
  d.w.resize(kGn * kGk);
  uint32_t x = 12345;
  auto next = [&] {
    x = x * 1664525u + 1013904223u;
    return float(int(x >> 9) % 2001 - 1000) / 997.0f;  // in (-1.01, 1.01), then rounded to bf16
  };
  for (uint16_t& v : d.a) v = num::f32_to_bf16(next());
  for (uint16_t& v : d.w) v = num::f32_to_bf16(next());
  d.want.assign(kGm * kGn, 0.0);
  d.mag.assign(kGm * kGn, 0.0);
  for (uint32_t m = 0; m < kGm; ++m)
    for (uint32_t n = 0; n < kGn; ++n)
      for (uint32_t k = 0; k < kGk; ++k) {
        const double p = double(num::bf16_to_f32(d.a[m * kGk + k])) * double(num::bf16_to_f32(d.w[n * kGk + k]));
        d.want[m * kGn + n] += p;
        d.mag[m * kGn + n] += std::fabs(p);
      }
  return d;
}

// The largest |got - want| / bound over C; <= 1 passes. The bound is docs/semantics.md's: per
// multiply-accumulate (k 16) one f32 rounding of the partial sum for the definition
// (2^-24 each), (16 + 1) f32 ulps of the largest partial sum for tensor cores (2^-23 each).
double worst(const GemmData& d, const std::vector<float>& got, bool tensor_cores) {
  const double steps = kGk / 16, per = tensor_cores ? 17.0 * std::ldexp(1.0, -23) : std::ldexp(1.0, -24);
  double w = 0;
  for (size_t i = 0; i < got.size(); ++i)
    w = std::max(w, std::fabs(double(got[i]) - d.want[i]) / (steps * per * d.mag[i] + 1e-30));
  return w;
}

}  // namespace

// The GEMM (A from shared memory, and A from registers) on the interpreter against the f64
// product (each element within the definition's rounding bound), compiled for sm_90a with HGMMA
// in the SASS (where cuobjdump is), and on a CUDA sm_90a device (skipped without one) down wgmma
// and down the forced mma.sync composition, each within the tensor cores' bound of the f64
// product and each repeatable bit for bit.
TEST(WarpgroupTiles, ASmallGemmMatchesTheF64ProductOnEveryPath) {
 std::string skipped;  // why the device part did not run
 for (int register_a = 0; register_a < 2; ++register_a) {
  ir::Kernel k = trace_kernel(KernelDecl{register_a ? "wg_gemm_rs" : "wg_gemm", register_a ? &wg_gemm<true> : &wg_gemm<false>,
                                         Mode::Reduction, {}, __FILE__, __LINE__});
  const GemmData d = gemm_data();
  const uint32_t grid = (kGm / 128) * (kGn / 16);
  std::vector<float> got(kGm * kGn, -1.0f);
  {
    std::vector<uint16_t> a = d.a, w = d.w;
    std::vector<interp::BufferArg> args{{a.data(), a.size() * 2}, {w.data(), w.size() * 2}, {got.data(), got.size() * 4}};
    interp::Options o;
    o.lane_width = 32;
    o.uninitialized_tg_reads_are_errors = true;
    interp::run(k, DType::F32, args, {}, {grid, 1, 1}, {256, 1, 1}, o);
  }
  EXPECT_LE(worst(d, got, false), 1.0) << k.name;
  const std::vector<float> interp_result = got;
  // NVRTC, sm_90a: wgmma in the PTX and HGMMA in the SASS.
  const ir::Kernel opt = passes::optimize(k);
  codegen::Emitted e = codegen::emit(opt, DType::F32, codegen::profile_for(codegen::Target::Cuda, "sm_90a"));
  ASSERT_TRUE(e.ok()) << e.diags.render(opt);
  EXPECT_TRUE(has(e.source, "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16")) << e.source;
  try {
    rt::NvrtcResult r = rt::nvrtc_compile(e.source, e.entry, "sm_90a");
    ASSERT_TRUE(r.ok || has(r.log, "libnvrtc")) << r.log.substr(0, 4000);
    std::string why;
    if (r.ok) {
      const std::string s = sass(r.cubin, why);
      if (!s.empty()) {
        EXPECT_TRUE(has(s, "HGMMA.64x16x16.F32.BF16")) << s.substr(0, 4000);
      }
    }
  } catch (const Error&) {
    // no libnvrtc here: the device part below says the same
  }
  // On a CUDA sm_90a device: auto (wgmma), then IRON_CUDA_MMA=mma in a fresh context.
  for (const char* strategy : {"", "mma"}) {
    if (*strategy) setenv("IRON_CUDA_MMA", strategy, 1);
    std::unique_ptr<Context> ctx;
    try {
      ctx = Context::create(Backend::Cuda);
    } catch (const Error& err) {
      skipped = std::string("no CUDA context: ") + err.what();
    }
    if (ctx && ctx->info().arch != "sm_90a") skipped = "wgmma needs sm_90a; this device is " + ctx->info().arch;
    if (!skipped.empty()) {
      unsetenv("IRON_CUDA_MMA");
      break;
    }
    DeviceBuffer da = ctx->alloc(DType::BF16, d.a.size()), dw = ctx->alloc(DType::BF16, d.w.size());
    DeviceBuffer dc = ctx->alloc(DType::F32, got.size());
    ctx->upload(da, d.a.data(), d.a.size() * 2);
    ctx->upload(dw, d.w.data(), d.w.size() * 2);
    std::vector<float> first;
    for (int rep = 0; rep < 3; ++rep) {
      std::fill(got.begin(), got.end(), -1.0f);
      ctx->upload(dc, got.data(), got.size() * 4);
      ctx->dispatch_with_grid(k, DType::F32, {{"a", da}, {"w", dw}, {"c", dc}}, {}, {grid, 1, 1}, {256, 1, 1});
      ctx->synchronize();
      ctx->download(dc, got.data(), got.size() * 4);
      if (rep == 0) first = got;
      else EXPECT_EQ(got, first) << "run " << rep << (*strategy ? " (mma)" : " (wgmma)");
    }
    unsetenv("IRON_CUDA_MMA");
    const double wv = worst(d, got, true);
    size_t same = 0;
    for (size_t i = 0; i < got.size(); ++i) same += got[i] == interp_result[i];
    std::printf("%s on %s, %s: worst error / bound %.3g, %zu of %zu elements equal to the interpreter's\n",
                k.name.c_str(), ctx->info().name.c_str(), *strategy ? "IRON_CUDA_MMA=mma" : "auto (wgmma)", wv, same,
                got.size());
    EXPECT_LE(wv, 1.0) << k.name << (*strategy ? " mma" : " wgmma");
  }
 }
 if (!skipped.empty()) GTEST_SKIP() << "the interpreter and NVRTC parts passed; the device part: " << skipped;
}

// --- Warpgroup accumulators (16 x N per lane group, one m64nNk16 per call) ---------------------

namespace {

std::string wide_text(uint32_t n, DType t, bool rs = false) { return fuzz::warpgroup_kernel_text("wg", t, 333, rs, n); }

void wide_24() {
  Buffer out = output("out", f32, {16 * 32});
  g_line = __LINE__ + 1;
  Frag acc = coop_tile_wg_fill(24, 0.0f);
  coop_tile_store(acc, out, 0u, 32u);
}

}  // namespace

// coop_tile_wg_fill(n) traces to a frag<acc, f32, 16xnx16> fill and the text form round-trips; the
// DSL names a width that is not a multiple of 16 up to 256 at the call, and the verifier names a
// lane-group product into a warpgroup accumulator, a width it does not take and a result whose
// type is not the accumulator's.
TEST(WarpgroupTiles, AWarpgroupAccumulatorIsCheckedAtTheCallAndByTheVerifier) {
  std::string e = trace_error(&wide_24);
  EXPECT_TRUE(has(e, "coop_tile_wg_fill: a warpgroup accumulator is 16 x N with N a multiple of 16 up to 256, not 24")) << e;
  EXPECT_TRUE(has(e, "wgmma_test.cpp:" + std::to_string(g_line))) << e;
  const std::string text = wide_text(128, DType::BF16);
  ir::Kernel k = ir::parse(text);
  const std::string printed = ir::print(k);
  EXPECT_TRUE(has(printed, ": frag<acc, f32, 16x128x16>")) << printed;
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(k, d)) << d.render(k);
  EXPECT_EQ(ir::print(ir::parse(printed)), printed);
  struct Bad {
    std::string from, to, says;
  };
  const std::vector<Bad> bads = {
      {"%acc0 = tile_fill %zf : frag<acc, f32, 16x128x16>", "%acc0 = tile_fill %zf : frag<acc, f32, 16x120x16>",
       "has tile shape 16x120x16; a warpgroup accumulator is 16xNx16 with N a multiple of 16 up to 256"},
      {"%acc0 = tile_fill %zf : frag<acc, f32, 16x128x16>", "%acc0 = tile_fill %zf : frag<acc, f32, 16x272x16>",
       "a warpgroup accumulator is 16xNx16 with N a multiple of 16 up to 256"},
      {"%acc1 = tile_wg_mma<333> %A, %ao0, %B, %k0, %acc0 : frag<acc, f32, 16x128x16>",
       "%acc1 = tile_wg_mma<333> %A, %ao0, %B, %k0, %acc0 : frag<acc, f32, 16x64x16>",
       "produces a frag<acc, f32, 16x64x16> from a frag<acc, f32, 16x128x16> accumulator (one type)"},
      {"%acc1 = tile_wg_mma<333> %A, %ao0, %B, %k0, %acc0 : frag<acc, f32, 16x128x16>",
       "%fa = tile_tg_load<swizzle=333> %A, %ao0, %rows : frag<a, bf16, 16x16x16>\n"
       "    %fb = tile_tg_load<swizzle=333> %B, %ao0, %rows : frag<b, bf16, 16x16x16>\n"
       "    %acc1 = tile_mma %fa, %fb, %acc0 : frag<acc, f32, 16x128x16>",
       "has tile shape 16x128x16; cooperative tiles are 16x16x16"},
  };
  for (const Bad& b : bads) {
    std::string t2 = text;
    replace(t2, b.from, b.to);
    std::string got;
    try {
      ir::Kernel bad = ir::parse(t2);
      ir::Diagnostics dd;
      if (!ir::verify(bad, dd)) got = dd.render(bad);
    } catch (const Error& err) {
      got = err.what();
    }
    EXPECT_TRUE(has(got, b.says)) << b.to << "\n" << got;
  }
}

// The interpreter's definition at N 64, 128, 256 is checked by TheInterpreterComputesTheDefinition
// (the conformance cases); a known-bad staging (the 64-byte swizzle pattern under the 128-byte
// descriptor) is a wrong answer at N = 128 too, and an operand start off the grid an error.
TEST(WarpgroupTiles, AWarpgroupAccumulatorsKnownBadStagingIsCaught) {
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma.n128.bf16.swz333");
  ASSERT_EQ(cs.size(), 1u);
  std::vector<unsigned char> out;
  ASSERT_EQ(run_text(cs[0], wide_text(128, DType::BF16), out), "");
  EXPECT_EQ(fuzz::conformance_difference(cs[0], out, false), "");
  std::string text = wide_text(128, DType::BF16);
  replace(text, "%cm = const<7> : u32", "%cm = const<3> : u32");
  ASSERT_EQ(run_text(cs[0], text, out), "");
  EXPECT_NE(fuzz::conformance_difference(cs[0], out, false), "");
  text = wide_text(128, DType::BF16);
  replace(text, "%k0 = const<0> : u32", "%k0 = const<4> : u32");
  EXPECT_TRUE(has(run_text(cs[0], text, out), "does not start a wgmma operand"));
}

// On sm_90a one wgmma.mma_async m64nNk16 per call, its N / 2 D registers the accumulator's floats
// in order; NVRTC compiles it and the SASS shows HGMMA.64xNx16 (where cuobjdump is). The mma and
// wmma strategies (and software at N = 64) compose it from N / 16 products per warp and compile.
TEST(WarpgroupTiles, AWarpgroupAccumulatorIsOneWgmmaOfItsWidth) {
  struct Want {
    uint32_t n;
    bool rs;
    DType t;
  };
  for (const Want& w : {Want{128, false, DType::BF16}, Want{256, false, DType::F16}, Want{64, true, DType::BF16}}) {
    const std::string which = std::string(w.rs ? "conformance.tile_wg_mma_rs.n" : "conformance.tile_wg_mma.n") +
                              std::to_string(w.n) + "." + dtype_name(w.t) + ".swz333";
    const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases(which);
    ASSERT_EQ(cs.size(), 1u) << which;
    const fuzz::ConformanceCase& c = cs[0];
    const std::string src = cuda(c, codegen::CudaMma::Auto);
    const std::string elem = dtype_name(w.t), N = std::to_string(w.n);
    EXPECT_TRUE(has(src, "wgmma.mma_async.sync.aligned.m64n" + N + "k16.f32." + elem + "." + elem + " {%0, %1,")) << src;
    EXPECT_TRUE(has(src, ", %" + std::to_string(w.n / 2 - 1) + "}, ")) << src;
    EXPECT_TRUE(has(src, "iron_tile_accw<" + std::to_string(w.n / 16) + ">")) << src;
    EXPECT_TRUE(has(src, "\"+f\"(d.t[" + std::to_string(w.n / 16 - 1) + "].x[7])")) << src;
    rt::NvrtcResult r;
    try {
      r = rt::nvrtc_compile(src, c.kernel.name, "sm_90a");
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
    if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
    ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
    for (codegen::CudaMma m : {codegen::CudaMma::MmaSync, codegen::CudaMma::Wmma, codegen::CudaMma::Software}) {
      if (m == codegen::CudaMma::Software && w.n > 64) continue;  // 256 floats per 16 columns per lane: slow to compile
      const std::string other = cuda(c, m);
      EXPECT_FALSE(has(other, "wgmma.mma_async")) << other;
      const rt::NvrtcResult r2 = rt::nvrtc_compile(other, c.kernel.name, "sm_90a");
      EXPECT_TRUE(r2.ok) << codegen::cuda_mma_name(m) << "\n" << r2.log.substr(0, 3000);
    }
    std::string why;
    const std::string s = sass(r.cubin, why);
    if (s.empty()) GTEST_SKIP() << "NVRTC compiled the sm_90a kernels; the SASS check is skipped: " << why;
    EXPECT_TRUE(has(s, "HGMMA.64x" + N + "x16.F32")) << which << "\n" << s.substr(0, 6000);
  }
}

// --- Issued (asynchronous) products ------------------------------------------------------------

// The issued cases compute the definition (TheInterpreterComputesTheDefinition); known-bad
// programs are located errors naming the issue: the wait dropped or waiting for one group fewer
// (the store reads the accumulator in flight), the commit dropped (never committed, so never
// waited), and the fence dropped (the issue reads registers the fill or a load wrote).
TEST(WarpgroupTiles, AnAccumulatorReadBeforeItsWaitIsALocatedError) {
  struct Bad {
    bool rs;
    std::string from, to, says;
  };
  const std::vector<Bad> bads = {
      {false, "    wg_wait<0>\n", "",
       "tile_store reads a warpgroup accumulator while the asynchronous tile_wg_mma issued at"},
      {false, "    wg_wait<0>\n", "    wg_wait<1>\n", "no wg_wait retired its group"},
      {false, "    wg_commit\n", "", "its group was never committed: wg_commit, then wg_wait"},
      {false, "    wg_fence\n", "", "tile_wg_mma (async) reads an accumulator lane group 0 wrote at"},
      {true, "    wg_fence\n", "", "tile_wg_mma_rs (async) reads an accumulator lane group 0 wrote at"},
  };
  for (const Bad& b : bads) {
    const std::string which = std::string(b.rs ? "conformance.tile_wg_mma_rs.async.n128.f16" : "conformance.tile_wg_mma.async.n128.bf16") +
                              ".swz333";
    const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases(which);
    ASSERT_EQ(cs.size(), 1u) << which;
    std::string text = fuzz::warpgroup_kernel_text("wg", b.rs ? DType::F16 : DType::BF16, 333, b.rs, 128, true);
    std::vector<unsigned char> out;
    ASSERT_EQ(run_text(cs[0], text, out), "") << which;
    EXPECT_EQ(fuzz::conformance_difference(cs[0], out, false), "") << which;
    replace(text, b.from, b.to);
    const std::string e = run_text(cs[0], text, out);
    EXPECT_TRUE(has(e, b.says)) << b.from << " -> " << b.to << ": " << e;
  }
  // A product chained onto one in flight is no error (one shape, the same registers).
  std::string chain = fuzz::warpgroup_kernel_text("wg", DType::BF16, 333, false, 16, true);
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma.async.bf16.swz333");
  ASSERT_EQ(cs.size(), 1u);
  std::vector<unsigned char> out;
  EXPECT_EQ(run_text(cs[0], chain, out), "");
  EXPECT_TRUE(has(chain, "tile_wg_mma<333, async=1> %A, %ao1, %B, %k1, %acc1")) << chain;
}

// On sm_90a an issued product is the wgmma alone on the result's registers ("+f", no fence, commit
// or wait in its statement), the three group ops are their own statements, NVRTC compiles it and
// the SASS shows the HGMMA; forced mma.sync composes it and the group ops emit nothing.
TEST(WarpgroupTiles, AnIssuedProductIsTheWgmmaAloneAndTheGroupOpsTheirOwnStatements) {
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma.async.n128.bf16.swz333");
  ASSERT_EQ(cs.size(), 1u);
  const fuzz::ConformanceCase& c = cs[0];
  const std::string src = cuda(c, codegen::CudaMma::Auto);
  EXPECT_TRUE(has(src, "__device__ __forceinline__ void iron_tile_wgmma_async_bf16_333_n128(unsigned a, unsigned b, iron_tile_accw<8>& d)"))
      << src;
  const size_t fn = src.find("iron_tile_wgmma_async_bf16_333_n128(unsigned");
  ASSERT_NE(fn, std::string::npos);
  const std::string body = src.substr(fn, src.find("\n}\n", fn) - fn);
  EXPECT_TRUE(has(body, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16")) << body;
  EXPECT_FALSE(has(body, "wgmma.fence")) << body;
  EXPECT_FALSE(has(body, "wait_group")) << body;
  EXPECT_TRUE(has(src, "asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");")) << src;
  EXPECT_TRUE(has(src, "asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");")) << src;
  EXPECT_TRUE(has(src, "asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");")) << src;
  const std::string mma = cuda(c, codegen::CudaMma::MmaSync);  // the group statements under IRON_TILE_WGMMA 0
  EXPECT_FALSE(has(mma, "wgmma.mma_async")) << mma;
  EXPECT_TRUE(has(mma, "#define IRON_TILE_WGMMA 0")) << mma;
  rt::NvrtcResult r;
  try {
    r = rt::nvrtc_compile(src, c.kernel.name, "sm_90a");
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
  ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
  EXPECT_TRUE(rt::nvrtc_compile(mma, c.kernel.name, "sm_90a").ok);
  std::string why;
  const std::string s = sass(r.cubin, why);
  if (s.empty()) GTEST_SKIP() << "NVRTC compiled the sm_90a kernels; the SASS check is skipped: " << why;
  EXPECT_TRUE(has(s, "HGMMA.64x128x16.F32.BF16")) << s.substr(0, 6000);
}

// --- The GEMM kernel ------------------------------------------------------------------------------

// iron_gemm_128x128x64_wg (kernels/gemm/gemm.cpp) on sm_90a: issued m64n128k16 products, the group
// statements, NVRTC compiles it (with `full` and B a weight specialized, as gemm_for dispatches it)
// and the SASS shows HGMMA.64x128x16 where cuobjdump is.
TEST(WarpgroupTiles, TheGemmKernelCompilesForSm90aWithHgmma) {
  ir::Kernel k = kernel_ir("iron_gemm_128x128x64_wg_s3_bf16");
  EXPECT_TRUE(ir::uses_warpgroup_ops(k));
  ir::Kernel spec = passes::optimize(k);
  codegen::Emitted e = codegen::emit(spec, DType::BF16, codegen::profile_for(codegen::Target::Cuda, "sm_90a"));
  ASSERT_TRUE(e.ok()) << e.diags.render(spec);
  EXPECT_TRUE(has(e.source, "iron_tile_wgmma_async_bf16_333_n128(")) << e.source.substr(0, 4000);
  EXPECT_TRUE(has(e.source, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16")) << e.source.substr(0, 4000);
  EXPECT_TRUE(has(e.source, "wgmma.wait_group.sync.aligned 0;")) << e.source.substr(0, 4000);
  EXPECT_TRUE(has(e.source, "__align__(1024)")) << e.source.substr(0, 4000);
  rt::NvrtcResult r;
  try {
    r = rt::nvrtc_compile(e.source, e.entry, "sm_90a");
  } catch (const Error& err) {
    GTEST_SKIP() << err.what();
  }
  if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
  ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
  std::string why;
  const std::string s = sass(r.cubin, why);
  if (s.empty()) GTEST_SKIP() << "NVRTC compiled the kernel for sm_90a; the SASS check is skipped: " << why;
  EXPECT_TRUE(has(s, "HGMMA.64x128x16.F32.BF16")) << s.substr(0, 6000);
}

// A tensor-map kernel on sm_90a: its boxes by `cp.async.bulk.tensor.2d` completing on mbarriers,
// the map a __grid_constant__ parameter, no per-thread copies, `wgmma` of the given shape; NVRTC
// compiles it and the SASS (where cuobjdump is) shows the copy engine's loads (UTMALDG) and `hgmma`.
static void expect_tensor_map_kernel(const std::string& name, const std::string& wgmma, const std::string& hgmma) {
  ir::Kernel k = kernel_ir(name);
  EXPECT_TRUE(ir::uses_warpgroup_ops(k));
  ir::Kernel spec = passes::optimize(k);
  codegen::Emitted e = codegen::emit(spec, DType::BF16, codegen::profile_for(codegen::Target::Cuda, "sm_90a"));
  ASSERT_TRUE(e.ok()) << e.diags.render(spec);
  EXPECT_TRUE(has(e.source, wgmma)) << e.source.substr(0, 4000);
  EXPECT_TRUE(has(e.source, "cp.async.bulk.tensor.2d.shared::cluster.global")) << e.source.substr(0, 4000);
  EXPECT_TRUE(has(e.source, "mbarrier.try_wait.parity.shared::cta.b64")) << e.source.substr(0, 4000);
  EXPECT_TRUE(has(e.source, "__grid_constant__")) << e.source.substr(0, 4000);
  EXPECT_FALSE(has(e.source, "cp.async.cg")) << name << " issues no per-thread copies";
  rt::NvrtcResult r;
  try {
    r = rt::nvrtc_compile(e.source, e.entry, "sm_90a");
  } catch (const Error& err) {
    GTEST_SKIP() << err.what();
  }
  if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
  ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
  std::string why;
  const std::string s = sass(r.cubin, why);
  if (s.empty()) GTEST_SKIP() << "NVRTC compiled the kernel for sm_90a; the SASS check is skipped: " << why;
  EXPECT_TRUE(has(s, hgmma)) << s.substr(0, 6000);
  EXPECT_TRUE(has(s, "UTMALDG.2D")) << s.substr(0, 6000);
}

// The tensor-map GEMM (128x256 tile): one m64n256k16 per k16 step and warpgroup.
TEST(WarpgroupTiles, TheTensorMapGemmKernelCompilesForSm90aWithHgmmaAndTensorCopies) {
  expect_tensor_map_kernel("iron_gemm_128x256x64_wg_tma_s4_bf16", "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
                           "HGMMA.64x256x16.F32.BF16");
}

// The warpgroup decode kernel (kernels/gemm/gemm_decode.cpp): one m64n16k16 per k16 step (A = 64
// rows of W, B = the activations' 16 x 16).
TEST(WarpgroupTiles, TheDecodeKernelCompilesForSm90aWithHgmmaN16AndTensorCopies) {
  expect_tensor_map_kernel("iron_gemm_decode_wg_tma_bf16", "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16",
                           "HGMMA.64x16x16.F32.BF16");
}

// GLSL, MSL and HIP have no warpgroups: the op is refused by name, located.
TEST(WarpgroupTiles, OtherTargetsRefuseTheOpByName) {
  for (int rs = 0; rs < 2; ++rs) {
    const fuzz::ConformanceCase c = wg_case("f16.swz333", rs == 1);
    const ir::Kernel k = passes::optimize(c.kernel);
    for (codegen::Target t : {codegen::Target::Glsl, codegen::Target::Msl, codegen::Target::Hip}) {
      codegen::Emitted e = codegen::emit(k, DType::F32, t);
      ASSERT_FALSE(e.ok());
      EXPECT_TRUE(has(e.diags.render(k), std::string("cannot express ") + (rs ? "tile_wg_mma_rs" : "tile_wg_mma") +
                                             " (a warpgroup's product"))
          << e.diags.render(k);
    }
  }
  // A warpgroup accumulator: its fill is refused by name too.
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma.n64.f16.swz333");
  ASSERT_EQ(cs.size(), 1u);
  const ir::Kernel k = passes::optimize(cs[0].kernel);
  for (codegen::Target t : {codegen::Target::Glsl, codegen::Target::Msl, codegen::Target::Hip}) {
    codegen::Emitted e = codegen::emit(k, DType::F32, t);
    ASSERT_FALSE(e.ok());
    EXPECT_TRUE(has(e.diags.render(k), "cannot express tile_fill of a warpgroup accumulator frag<acc, f32, 16x64x16>"))
        << e.diags.render(k);
  }
}

// --- fp8 (wgmma m64nNk32 e4m3 / e5m2) -------------------------------------------------------------

namespace {
int g_fp8_line = 0;
// An fp8 warpgroup product traced through the DSL: arrays of f8e4m3, `sw`, a k 32 accumulator of
// width 128 (or, k16, the 16-bit coop_tile_wg_fill).
void wg_fp8_product(Swizzle sw, bool k16) {
  Buffer out = output("out", f32, {128 * 128});
  TgBuffer a = threadgroup_alloc("a", DType::F8E4M3, 128 * 128, 1024);
  TgBuffer b = threadgroup_alloc("b", DType::F8E4M3, 128 * 128, 1024);
  Frag acc0 = k16 ? coop_tile_wg_fill(128, 0.0f) : coop_tile_wg_fill(128, 0.0f, DType::F8E4M3);
  g_fp8_line = __LINE__ + 1;
  Frag acc = coop_tile_wg_run(a, (simd_group_id() / 4u) * (64u * 128u) + 32u, b, 32u, acc0, sw);
  coop_tile_store(acc, out, simd_group_id() * (16u * 128u), 128u);
}
void wg_fp8_128() { wg_fp8_product(Swizzle{3, 4, 3}, false); }
void wg_fp8_16bit_swizzle() { wg_fp8_product(Swizzle{3, 3, 3}, false); }
void wg_fp8_none() { wg_fp8_product(Swizzle{}, false); }
void wg_fp8_k16() { wg_fp8_product(Swizzle{3, 4, 3}, true); }
void wg_bf16_fp8_swizzle() {
  TgBuffer a = threadgroup_alloc("a", bf16, 128 * 64, 1024);
  TgBuffer b = threadgroup_alloc("b", bf16, 16 * 64, 1024);
  g_fp8_line = __LINE__ + 1;
  Frag acc = coop_tile_wg_run(a, 0u, b, 0u, coop_tile_wg_fill(16, 0.0f), Swizzle{3, 4, 3});
  (void)acc;
}

std::string fp8_text(DType t, int64_t code, uint32_t n = 16) { return fuzz::warpgroup_kernel_text("wg8", t, code, false, n); }
}  // namespace

// fp8 arrays take the {bits, 4, 3} swizzles (rows of 32, 64, 128 elements) and a k 32
// accumulator (coop_tile_wg_fill(n, v, fp8 type)); the 16-bit modes on fp8 arrays, an fp8 mode on
// bf16 arrays and no swizzle are located trace-time errors; a k 16 accumulator is the verifier's.
TEST(WarpgroupTiles, Fp8OperandsTakeTheirOwnSwizzlesAndAK32Accumulator) {
  ir::Kernel k = trace_kernel(KernelDecl{"wg8_kernel", &wg_fp8_128, Mode::Reduction, {}, __FILE__, __LINE__});
  const std::string text = ir::print(k);
  EXPECT_TRUE(has(text, "tile_wg_mma<343>")) << text;
  EXPECT_TRUE(has(text, "frag<acc, f32, 16x128x32>")) << text;
  std::string e = trace_error(&wg_fp8_16bit_swizzle);
  EXPECT_TRUE(has(e, "swizzle {bits 3, base 3, shift 3} is not one a wgmma matrix descriptor expresses ({1, 4, 3}, "
                     "{2, 4, 3} or {3, 4, 3} for fp8"))
      << e;
  EXPECT_TRUE(has(e, "wgmma_test.cpp:" + std::to_string(g_fp8_line))) << e;
  e = trace_error(&wg_fp8_none);
  EXPECT_TRUE(has(e, "Swizzle{3, 4, 3} (rows of 128 fp8 elements)")) << e;
  e = trace_error(&wg_bf16_fp8_swizzle);
  EXPECT_TRUE(has(e, "swizzle {bits 3, base 4, shift 3} is not one a wgmma matrix descriptor expresses ({1, 3, 3}")) << e;
  // A 16-bit accumulator (k 16) under fp8 operands: the verifier names it.
  try {
    ir::Kernel k16 = trace_kernel(KernelDecl{"wg8_k16", &wg_fp8_k16, Mode::Reduction, {}, __FILE__, __LINE__});
    ir::Diagnostics d;
    if (!ir::verify(k16, d)) e = d.render(k16);
    else e = "";
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_TRUE(has(e, "a warpgroup tile of fp8 A and B is k 32 (frag<acc, f32, 16xNx32>)")) << e;
}

// The fp8 case's text round-trips; the verifier names a 16-bit swizzle on fp8 arrays, a k 16
// accumulator, mixed formats, and fp8 A from registers (tile_wg_mma_rs takes 16-bit A only).
TEST(WarpgroupTiles, Fp8TextRoundTripsAndTheVerifierNamesItsRules) {
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma.f8e4m3.swz343");
  ASSERT_EQ(cs.size(), 1u);
  const std::string printed = ir::print(cs[0].kernel);
  EXPECT_TRUE(has(printed, "tile_wg_mma<343> %")) << printed;
  EXPECT_TRUE(has(printed, ": frag<acc, f32, 16x16x32>")) << printed;
  ir::Kernel back = ir::parse(printed);
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(back, d)) << d.render(back);
  EXPECT_EQ(ir::print(back), printed);
  const std::string text = fp8_text(DType::F8E4M3, 343);
  struct Bad {
    std::string from, to, says;
  };
  const std::vector<Bad> bads = {
      {"tile_wg_mma<343> %A, %ao0", "tile_wg_mma<333> %A, %ao0",
       "A's threadgroup array holds f8e4m3; wgmma operands here are f16 or bf16 (or T) under this swizzle"},
      {"tile_wg_mma<343> %A, %ao0", "tile_wg_mma<344> %A, %ao0", "swizzle 344 is not one a wgmma matrix descriptor expresses"},
      {"%B = tg_alloc<wb, 2048, align=1024> : f8e4m3", "%B = tg_alloc<wb, 2048, align=1024> : f8e5m2",
       "multiplies f8e4m3 by f8e5m2"},
      {"%acc0 = tile_fill %zf : frag<acc, f32, 16x16x32>", "%acc0 = tile_fill %zf : frag<acc, f32, 16x16x16>",
       "a warpgroup tile of fp8 A and B is k 32"},
  };
  for (const Bad& b : bads) {
    std::string t2 = text;
    replace(t2, b.from, b.to);
    try {
      ir::Kernel kb = ir::parse(t2);
      ir::Diagnostics db;
      EXPECT_FALSE(ir::verify(kb, db)) << b.to;
      EXPECT_TRUE(has(db.render(kb), b.says)) << db.render(kb);
    } catch (const Error& err) {
      ADD_FAILURE() << b.to << ": " << err.what();
    }
  }
}

// The interpreter decodes fp8 exactly: an fp8 case whose values are not small integers (every
// finite e4m3 byte pattern, NaN redrawn) matches the definition (exact products, f64 sum in k
// order, one rounding) computed here from the decoded bytes; staging under the 64-byte swizzle
// while the products read the 128-byte one is a wrong answer.
TEST(WarpgroupTiles, Fp8ProductsMatchTheDefinitionOverTheFormat) {
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma.f8e4m3.swz343");
  ASSERT_EQ(cs.size(), 1u);
  fuzz::ConformanceCase c = cs[0];
  const uint32_t S = 128, N = 16;
  uint32_t state = 12345;
  auto byte = [&] {
    uint8_t b;
    do {
      state = state * 1664525u + 1013904223u;
      b = uint8_t(state >> 24);
    } while ((b & 0x7f) == 0x7f);
    return b;
  };
  for (auto& v : c.launch.buffers[0]) v = byte();
  for (auto& v : c.launch.buffers[1]) v = byte();
  std::vector<unsigned char> out;
  ASSERT_EQ(run_text(c, ir::print(c.kernel), out), "");
  ASSERT_EQ(out.size(), size_t(128) * N * 4);
  for (uint32_t m = 0; m < 128; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      double sum = 0;
      for (uint32_t k = 0; k < S; k += 32) {
        double part = 0;  // one product of 32: exact in f64 (e4m3), rounded to f32 once per product
        for (uint32_t kk = k; kk < k + 32; ++kk)
          part += double(num::fp8_to_f32(DType::F8E4M3, c.launch.buffers[0][m * S + kk])) *
                  double(num::fp8_to_f32(DType::F8E4M3, c.launch.buffers[1][n * S + kk]));
        sum = double(float(sum + part));
      }
      float got;
      std::memcpy(&got, &out[(size_t(m) * N + n) * 4], 4);
      ASSERT_EQ(got, float(sum)) << m << ", " << n;
    }
  std::string text = fp8_text(DType::F8E4M3, 343);
  replace(text, "%cm = const<7> : u32", "%cm = const<3> : u32");  // the 64-byte pattern under a 128-byte descriptor
  ASSERT_EQ(run_text(c, text, out), "");
  bool differs = false;
  for (uint32_t m = 0; m < 128 && !differs; ++m)
    for (uint32_t n = 0; n < N && !differs; ++n) {
      double sum = 0;
      for (uint32_t k = 0; k < S; k += 32) {
        double part = 0;
        for (uint32_t kk = k; kk < k + 32; ++kk)
          part += double(num::fp8_to_f32(DType::F8E4M3, c.launch.buffers[0][m * S + kk])) *
                  double(num::fp8_to_f32(DType::F8E4M3, c.launch.buffers[1][n * S + kk]));
        sum = double(float(sum + part));
      }
      float got;
      std::memcpy(&got, &out[(size_t(m) * N + n) * 4], 4);
      differs = got != float(sum);
    }
  EXPECT_TRUE(differs);
}

// The interpreter checks an fp8 operand's start on the descriptor's grid in bytes (an fp8
// element is one): element 48 of a row is on it, element 136 (past the first 128 bytes of its
// 1024-byte swizzle atom) is a located error naming the byte offset.
TEST(WarpgroupTiles, AnFp8OperandStartIsCheckedInBytes) {
  const std::vector<fuzz::ConformanceCase> cs = fuzz::conformance_cases("conformance.tile_wg_mma.f8e4m3.swz343");
  ASSERT_EQ(cs.size(), 1u);
  std::string text = fp8_text(DType::F8E4M3, 343);
  replace(text, "%k1 = const<32> : u32", "%k1 = const<48> : u32");  // byte 48 of the row: on the grid
  std::vector<unsigned char> out;
  EXPECT_EQ(run_text(cs[0], text, out), "");
  text = fp8_text(DType::F8E4M3, 343);
  replace(text, "%k1 = const<32> : u32", "%k1 = const<136> : u32");  // byte 136: past the first 128 bytes of the atom
  const std::string e = run_text(cs[0], text, out);
  EXPECT_TRUE(has(e, "does not start a wgmma operand: its byte offset (")) << e;
  EXPECT_TRUE(has(e, "(136) must be a multiple of 16")) << e;
}

// auto on sm_90a: one wgmma.mma_async m64nNk32 .e4m3 / .e5m2 per call (no transpose immediates),
// descriptors in bytes (stride byte offset 1024 for the 128-byte mode, as for 16-bit elements);
// NVRTC compiles it and the SASS shows QGMMA where cuobjdump is. Forced mma.sync composes it from
// m16n8k32 products with no wgmma.
TEST(WarpgroupTiles, Fp8IsWgmmaK32OnSm90aAndTheSassShowsQgmma) {
  std::string no_sass;
  struct Want {
    const char* which;
    const char* ptx;
    const char* desc;
    const char* sass;
  };
  for (const Want& w : {Want{"f8e4m3.swz343", "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, "
                                                "%7}, %8, %9, p, 1, 1;",
                             "iron_tile_wg_desc(a, 1024u, 1ull)", "QGMMA.64x16x32.F32.E4M3"},
                        Want{"f8e4m3.swz143", "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3", "iron_tile_wg_desc(a, 256u, 3ull)",
                             "QGMMA.64x16x32.F32.E4M3"},
                        Want{"async.n128.f8e5m2.swz143", "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2",
                             "iron_tile_wg_desc(a, 256u, 3ull)", "QGMMA.64x128x32.F32.E5M2"}}) {
    const fuzz::ConformanceCase c = wg_case(w.which);
    const std::string src = cuda(c, codegen::CudaMma::Auto);
    EXPECT_TRUE(has(src, w.ptx)) << w.which << "\n" << src;
    EXPECT_TRUE(has(src, w.desc)) << w.which << "\n" << src;
    EXPECT_FALSE(has(src, "k16.f32.e")) << src;
    // The composed path (forced mma.sync): fp8 fragments loaded element by element, no wgmma.
    const std::string mma = cuda(c, codegen::CudaMma::MmaSync);
    EXPECT_FALSE(has(mma, "wgmma.mma_async")) << mma;
    EXPECT_TRUE(has(mma, "iron_tile_coord_a8(")) << mma;
    rt::NvrtcResult r;
    try {
      r = rt::nvrtc_compile(src, c.kernel.name, "sm_90a");
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
    if (!r.ok && has(r.log, "libnvrtc")) GTEST_SKIP() << r.log;
    ASSERT_TRUE(r.ok) << r.log.substr(0, 4000);
    if (std::string(w.which) == "f8e4m3.swz343") {  // the composition compiles too (once: it is slow to compile)
      const rt::NvrtcResult rm = rt::nvrtc_compile(mma, c.kernel.name, "sm_90a");
      ASSERT_TRUE(rm.ok) << "mma.sync\n" << rm.log.substr(0, 4000);
    }
    std::string why;
    const std::string s = sass(r.cubin, why);
    if (s.empty()) {
      no_sass = why;
      continue;
    }
    EXPECT_TRUE(has(s, w.sass)) << w.which << "\n" << s.substr(0, 6000);
  }
  if (!no_sass.empty()) GTEST_SKIP() << "NVRTC compiled the sm_90a fp8 wgmma kernels; the SASS check is skipped: " << no_sass;
}

// GLSL, MSL and HIP refuse the fp8 product by name, as the 16-bit one.
TEST(WarpgroupTiles, OtherTargetsRefuseTheFp8OpByName) {
  const fuzz::ConformanceCase c = wg_case("f8e4m3.swz343");
  const ir::Kernel k = passes::optimize(c.kernel);
  for (codegen::Target t : {codegen::Target::Glsl, codegen::Target::Msl, codegen::Target::Hip}) {
    codegen::Emitted e = codegen::emit(k, DType::F32, t);
    ASSERT_FALSE(e.ok());
    EXPECT_TRUE(has(e.diags.render(k), "cannot express tile_wg_mma (a warpgroup's product")) << e.diags.render(k);
  }
}

}  // namespace iron
