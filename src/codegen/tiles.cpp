// Cooperative tiles on the C-like targets (docs/dsl.md "Cooperative tiles"): the statements of
// each tile op, and the fragment types and functions the prelude defines, per MmaStrategy.
//
// The body is the same for every strategy: a load visits the elements this lane holds
// (IRON_TILE_LD_FIRST/END/STEP), asks for each one's (row, col) (iron_tile_coord_a/_b) and sets it
// (iron_tile_set); a store visits the elements this lane writes (IRON_TILE_ST_*, iron_tile_coord_st,
// iron_tile_store_get). Only the prelude differs, so on CUDA the strategy can be chosen by the
// compiler's target architecture (__CUDA_ARCH__) when nothing forces one:
//   software  every lane holds whole fragments (A, B, acc: 256 floats each); the product sums in
//             f64 exactly as the interpreter does, so it is bit-exact with it on every input.
//   wmma      nvcuda::wmma 16x16x16 fragments; elements pass through a 1 KB per-warp staging
//             area in shared memory (any stride, offset and memory space; 32 KB for 32 warps).
//   mma       inline PTX mma.sync.aligned.m16n8k16 (two per 16x16x16 product), each lane loading
//             its 8 A, 8 B and 8 accumulator elements of the PTX fragment layout directly, or a
//             whole A / B fragment from threadgroup memory by ldmatrix.x4 (.trans for B) where
//             the rows are 16-byte aligned (docs/dsl.md "The ldmatrix rule").
// GLSL has a software path only, with fragments in shared memory (see "GLSL: fragments in
// shared memory" below): f64 sums where the device enables shaderFloat64 (EmitOptions::tile_f64),
// else f32 sums of the exact f32 products.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "codegen/c_like.hpp"

namespace iron::codegen {

const char* cuda_mma_name(CudaMma m) {
  switch (m) {
    case CudaMma::Auto: return "auto";
    case CudaMma::Software: return "software";
    case CudaMma::Wmma: return "wmma";
    case CudaMma::MmaSync: return "mma";
    case MmaStrategy::Coopmat: return "coopmat";
    case MmaStrategy::SimdgroupMatrix: return "simdgroup_matrix";
    case MmaStrategy::Wgmma: return "wgmma";
  }
  return "?";
}

bool parse_cuda_mma(std::string_view s, CudaMma& out) {
  for (CudaMma m : {CudaMma::Auto, CudaMma::Software, CudaMma::Wmma, CudaMma::MmaSync, CudaMma::Wgmma})
    if (s == cuda_mma_name(m)) {
      out = m;
      return true;
    }
  return false;
}

CudaMma cuda_mma_from_env() {
  CudaMma m = CudaMma::Auto;
  if (const char* v = std::getenv("IRON_CUDA_MMA"); v && *v && !parse_cuda_mma(v, m))
    throw Error(std::string("IRON_CUDA_MMA=") + v + " names no MMA strategy (software, wmma, mma, wgmma or auto)");
  return m;
}

const char* vk_mma_name(VkMma m) {
  switch (m) {
    case VkMma::Auto: return "auto";
    case VkMma::Software: return "software";
    case VkMma::Coopmat: return "coopmat";
  }
  return "?";
}

bool parse_vk_mma(std::string_view s, VkMma& out) {
  for (VkMma m : {VkMma::Auto, VkMma::Software, VkMma::Coopmat})
    if (s == vk_mma_name(m)) {
      out = m;
      return true;
    }
  return false;
}

VkMma vk_mma_from_env() {
  VkMma m = VkMma::Auto;
  if (const char* v = std::getenv("IRON_VK_MMA"); v && *v && !parse_vk_mma(v, m))
    throw Error(std::string("IRON_VK_MMA=") + v + " names no Vulkan tile strategy (software, coopmat or auto)");
  return m;
}

// log2 of the largest power of two every value of `id` is known to be a multiple of (32: zero),
// from the u32 arithmetic that computes it (constants, products, sums, shifts by constants,
// XOR / OR / AND, selects, scalars declared multiple_of); 0 when nothing is known. Multiples
// of 2^t stay multiples under wrapping u32 arithmetic.
uint32_t known_pow2(const ir::Kernel& k, ir::Id id, int depth) {
  if (id >= k.insts.size() || depth > 24) return 0;
  const ir::Inst& in = k.insts[id];
  if (!in.type.is_scalar() || (in.type.elem() != DType::U32 && in.type.elem() != DType::I32)) return 0;
  auto at = [&](int i) { return i < int(in.operands.size()) ? known_pow2(k, in.operands[i], depth + 1) : 0u; };
  switch (in.op) {
    case ir::Op::Const: {
      const uint32_t v = uint32_t(in.attr(ir::Attr::Value));
      uint32_t t = 0;
      if (v == 0) return 32;
      while (!(v >> t & 1u)) ++t;
      return t;
    }
    case ir::Op::Mul: return std::min(32u, at(0) + at(1));
    case ir::Op::Add: case ir::Op::Sub: case ir::Op::Xor: case ir::Op::Or: return std::min(at(0), at(1));
    case ir::Op::And: return std::max(at(0), at(1));
    case ir::Op::Select: return std::min(at(1), at(2));
    case ir::Op::Shl: {
      const ir::Inst& c = k.insts[in.operands[1]];
      if (c.op != ir::Op::Const || uint64_t(c.attr(ir::Attr::Value)) >= 32) return 0;
      return std::min(32u, at(0) + uint32_t(c.attr(ir::Attr::Value)));
    }
    case ir::Op::Param: {
      const uint64_t f = in.param() < k.params.size() ? k.params[in.param()].multiple_of : 0;
      uint32_t t = 0;
      while (f && (uint64_t(2) << t) <= f) ++t;
      return f ? t : 0;
    }
    default: return 0;
  }
}

std::string tile_load_index(const ir::Inst& in, const std::string& off, const std::string& stride,
                            const std::string& r, const std::string& c, const std::string& outer) {
  const bool cm = in.has(ir::Attr::ColMajor) && in.attr(ir::Attr::ColMajor) == 1;
  std::string idx = "(" + off + " + " + (cm ? c : r) + " * " + stride + " + " + (cm ? r : c) + ")";
  if (!in.has(ir::Attr::Swizzle)) return idx;
  const int64_t code = in.attr(ir::Attr::Swizzle);
  const int64_t bits = code / 100, base = code / 10 % 10, shift = code % 10;
  const std::string swz = "(" + idx + " ^ (((" + idx + " >> " + std::to_string(base + shift) + "u) & " +
                          std::to_string((1 << bits) - 1) + "u) << " + std::to_string(base) + "u))";
  return outer.empty() ? swz : "(" + outer + " + " + swz + ")";
}

// A swizzled tile load's offset split into the terms of its sum that are multiples of the
// swizzle's period 2^(base + shift + bits) (`outer`) and the rest (`inner`). Adding such a term
// leaves the low base + shift + bits bits of the index alone, so swizzle(P + x) = P + swizzle(x)
// in wrapping u32 arithmetic: the outer terms (a stage's base, a warp tile's rows) are added
// outside the swizzle, and the swizzle of a lane's row address depends on the inner terms only,
// which a K loop usually keeps fixed (the compiler computes it once).
static void split_swizzle_offset(const ir::Kernel& k, ir::Id id, uint32_t period_log2, std::vector<ir::Id>& outer,
                                 std::vector<ir::Id>& inner, int depth) {
  const ir::Inst& in = k.insts[id];
  const bool u32_add = in.op == ir::Op::Add && in.type.is_scalar() && in.type.elem() == DType::U32 &&
                       in.operands.size() == 2 && depth < 16;
  if (u32_add) {
    split_swizzle_offset(k, in.operands[0], period_log2, outer, inner, depth + 1);
    split_swizzle_offset(k, in.operands[1], period_log2, outer, inner, depth + 1);
    return;
  }
  (known_pow2(k, id, 0) >= period_log2 ? outer : inner).push_back(id);
}

namespace {

const char* elem_suffix(DType t) {
  return t == DType::BF16 ? "bf16" : t == DType::F8E4M3 ? "e4m3" : t == DType::F8E5M2 ? "e5m2" : "f16";
}

std::string role_name(FragRole r) { return r == FragRole::A ? "a" : r == FragRole::B ? "b" : "acc"; }

// The element types the kernel's A and B fragments use (T resolved), and whether it uses
// tile_scale_add.
struct TileElems {
  bool f16 = false, bf16 = false, e4m3 = false, e5m2 = false, scale_add = false;
  bool fp8() const { return e4m3 || e5m2; }
  std::vector<const char*> fp8_suffixes() const {
    std::vector<const char*> out;
    if (e4m3) out.push_back("e4m3");
    if (e5m2) out.push_back("e5m2");
    return out;
  }
};
TileElems input_elems(const EmitState& s) {
  TileElems t;
  ir::walk(s.k, [&](ir::Id id) {
    const ir::Inst& in = s.k.insts[id];
    if (in.op == ir::Op::TileScaleAdd) t.scale_add = true;
    const Type ty = in.type;
    if (!ty.is_fragment() || ty.role() == FragRole::Acc) return;
    const DType e = s.concrete(ty);
    (e == DType::BF16 ? t.bf16 : e == DType::F8E4M3 ? t.e4m3 : e == DType::F8E5M2 ? t.e5m2 : t.f16) = true;
  });
  return t;
}

// --- CUDA preludes ---------------------------------------------------------------------------

const char* const kCudaCoordsWhole =
    "__device__ __forceinline__ void iron_tile_coord_a(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }\n"
    "__device__ __forceinline__ void iron_tile_coord_b(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }\n"
    "__device__ __forceinline__ void iron_tile_coord_st(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }\n";

// Every lane holds the whole tile; a store splits the elements between the lanes of the group
// (lane l stores elements l, l + W, ...), W the profile's lane width.
std::string cuda_software(const TileElems& te, uint32_t lanes) {
  const bool f16 = te.f16, bf16 = te.bf16;
  const std::string w = std::to_string(lanes);
  std::string out =
      "struct iron_tile_acc { float x[256]; };\n"
      "#define IRON_TILE_LDMATRIX 0\n"
      "#define IRON_TILE_LD_FIRST 0u\n#define IRON_TILE_LD_END 256u\n#define IRON_TILE_LD_STEP 1u\n"
      "#define IRON_TILE_ST_FIRST (iron_flat_local_id() & " + std::to_string(lanes - 1) + "u)\n#define IRON_TILE_ST_END 256u\n"
      "#define IRON_TILE_ST_STEP " + w + "u\n";
  out += kCudaCoordsWhole;
  out +=
      "__device__ __forceinline__ iron_tile_acc iron_tile_fill(float v) {\n"
      "  iron_tile_acc f;\n  for (int i = 0; i < 256; ++i) f.x[i] = v;\n  return f;\n}\n"
      "__device__ __forceinline__ void iron_tile_store_begin(const iron_tile_acc&) {}\n"
      "__device__ __forceinline__ float iron_tile_store_get(const iron_tile_acc& f, unsigned i) { return f.x[i]; }\n"
      "__device__ __forceinline__ void iron_tile_store_end() {}\n"
      "__device__ __forceinline__ float iron_tile_get(const iron_tile_acc& f, unsigned r, unsigned c) {\n"
      "  return f.x[r * 16u + c];\n}\n";
  for (int e = 0; e < 2; ++e) {
    if (!(e == 0 ? f16 : bf16)) continue;
    const std::string sfx = e == 0 ? "f16" : "bf16";
    for (const char* r : {"a", "b"})
      out += "struct iron_tile_" + std::string(r) + "_" + sfx + " { float x[256]; };\n"
             "__device__ __forceinline__ void iron_tile_set(iron_tile_" + r + "_" + sfx +
             "& f, unsigned i, float v) { f.x[i] = v; }\n"
             "__device__ __forceinline__ void iron_tile_finish(iron_tile_" + r + "_" + sfx + "&) {}\n";
    // Each product of two 16-bit floats is exact in f64; the sum runs in k order and is rounded
    // to f32 once (the interpreter's definition).
    out += "__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_" + sfx + "& a, const iron_tile_b_" +
           sfx + "& b, const iron_tile_acc& c) {\n"
           "  iron_tile_acc d;\n"
           "  for (int i = 0; i < 16; ++i)\n"
           "    for (int j = 0; j < 16; ++j) {\n"
           "      double s = (double)c.x[i * 16 + j];\n"
           "      for (int k = 0; k < 16; ++k) s += (double)a.x[i * 16 + k] * (double)b.x[k * 16 + j];\n"
           "      d.x[i * 16 + j] = (float)s;\n"
           "    }\n"
           "  return d;\n}\n";
  }
  if (te.fp8()) {
    // 16x32 A and 32x16 B, row-major; products of two f8e4m3 values are exact in f64 and the
    // 32-term sums span at most 36 bits of exponent, so the f64 sum is exact too (f8e5m2: the
    // products are exact, the sum is the f64 sum in k order, as the interpreter computes it).
    out += "#define IRON_TILE_LD8_FIRST 0u\n#define IRON_TILE_LD8_END 512u\n#define IRON_TILE_LD8_STEP 1u\n"
           "__device__ __forceinline__ void iron_tile_coord_a8(unsigned i, unsigned& r, unsigned& c) { r = i >> 5; c = i & 31u; }\n"
           "__device__ __forceinline__ void iron_tile_coord_b8(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }\n";
  }
  for (const std::string sfx : te.fp8_suffixes()) {
    for (const char* r : {"a", "b"})
      out += "struct iron_tile_" + std::string(r) + "_" + sfx + " { float x[512]; };\n"
             "__device__ __forceinline__ void iron_tile_set(iron_tile_" + r + "_" + sfx + "& f, unsigned i, float v) { f.x[i] = v; }\n"
             "__device__ __forceinline__ void iron_tile_finish(iron_tile_" + r + "_" + sfx + "&) {}\n";
    out += "__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_" + sfx + "& a, const iron_tile_b_" + sfx +
           "& b, const iron_tile_acc& c) {\n"
           "  iron_tile_acc d;\n"
           "  for (int i = 0; i < 16; ++i)\n"
           "    for (int j = 0; j < 16; ++j) {\n"
           "      double s = (double)c.x[i * 16 + j];\n"
           "      for (int k = 0; k < 32; ++k) s += (double)a.x[i * 32 + k] * (double)b.x[k * 16 + j];\n"
           "      d.x[i * 16 + j] = (float)s;\n"
           "    }\n"
           "  return d;\n}\n";
  }
  // tile_scale_add: element (r, c) is float r * 16 + c, its row scale s[r].
  if (te.scale_add)
    out += "__device__ __forceinline__ iron_tile_acc iron_tile_scale_add(const float* s, const iron_tile_acc& x, "
           "const iron_tile_acc& c) {\n"
           "  iron_tile_acc d;\n  for (int i = 0; i < 256; ++i) d.x[i] = fmaf(x.x[i], s[i >> 4], c.x[i]);\n  return d;\n}\n";
  return out;
}

std::string cuda_wmma(bool f16, bool bf16) {
  std::string out =
      "#include <mma.h>\n"
      "__shared__ __align__(32) float iron_tile_scratch[32 * 256];\n"
      "__device__ __forceinline__ float* iron_tile_warp_scratch() {\n"
      "  return iron_tile_scratch + (iron_flat_local_id() >> 5) * 256u;\n}\n"
      "struct iron_tile_acc { nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> f; };\n"
      "#define IRON_TILE_LDMATRIX 0\n"
      "#define IRON_TILE_LD_FIRST (iron_flat_local_id() & 31u)\n#define IRON_TILE_LD_END 256u\n"
      "#define IRON_TILE_LD_STEP 32u\n"
      "#define IRON_TILE_ST_FIRST (iron_flat_local_id() & 31u)\n#define IRON_TILE_ST_END 256u\n"
      "#define IRON_TILE_ST_STEP 32u\n";
  out += kCudaCoordsWhole;
  out +=
      "__device__ __forceinline__ iron_tile_acc iron_tile_fill(float v) {\n"
      "  iron_tile_acc f;\n  nvcuda::wmma::fill_fragment(f.f, v);\n  return f;\n}\n"
      "__device__ __forceinline__ void iron_tile_store_begin(const iron_tile_acc& f) {\n"
      "  nvcuda::wmma::store_matrix_sync(iron_tile_warp_scratch(), f.f, 16, nvcuda::wmma::mem_row_major);\n"
      "  __syncwarp();\n}\n"
      "__device__ __forceinline__ float iron_tile_store_get(const iron_tile_acc&, unsigned i) {\n"
      "  return iron_tile_warp_scratch()[i];\n}\n"
      "__device__ __forceinline__ void iron_tile_store_end() { __syncwarp(); }\n"
      "__device__ __forceinline__ float iron_tile_get(const iron_tile_acc& f, unsigned r, unsigned c) {\n"
      "  iron_tile_store_begin(f);\n  const float v = iron_tile_warp_scratch()[r * 16u + c];\n  __syncwarp();\n"
      "  return v;\n}\n";
  for (int e = 0; e < 2; ++e) {
    if (!(e == 0 ? f16 : bf16)) continue;
    const std::string sfx = e == 0 ? "f16" : "bf16";
    const std::string ty = e == 0 ? "__half" : "__nv_bfloat16";
    const std::string cvt = e == 0 ? "__float2half_rn" : "__float2bfloat16_rn";
    for (const char* r : {"a", "b"}) {
      const std::string use = std::string(r) == "a" ? "matrix_a" : "matrix_b";
      const std::string name = "iron_tile_" + std::string(r) + "_" + sfx;
      out += "struct " + name + " { nvcuda::wmma::fragment<nvcuda::wmma::" + use + ", 16, 16, 16, " + ty +
             ", nvcuda::wmma::row_major> f; };\n"
             "__device__ __forceinline__ void iron_tile_set(" + name + "&, unsigned i, float v) {\n"
             "  reinterpret_cast<" + ty + "*>(iron_tile_warp_scratch())[i] = " + cvt + "(v);\n}\n"
             "__device__ __forceinline__ void iron_tile_finish(" + name + "& f) {\n"
             "  __syncwarp();\n"
             "  nvcuda::wmma::load_matrix_sync(f.f, reinterpret_cast<const " + ty + "*>(iron_tile_warp_scratch()), 16);\n"
             "  __syncwarp();\n}\n";
    }
    out += "__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_" + sfx + "& a, const iron_tile_b_" +
           sfx + "& b, const iron_tile_acc& c) {\n"
           "  iron_tile_acc d;\n  nvcuda::wmma::mma_sync(d.f, a.f, b.f, c.f);\n  return d;\n}\n";
  }
  return out;
}

// PTX fragment layouts of mma.m16n8k16 (g = lane / 4, t = lane % 4), two n8 halves per 16x16 tile:
//   A (16x16, row): element i of 8 is (g + 8 * ((i >> 1) & 1), 2t + (i & 1) + 8 * (i >> 2)),
//                   packed in pairs into 4 registers
//   B (16x16, col): element i of 8 is (2t + (j & 1) + 8 * (j >> 1), g + 8h), h = i >> 2, j = i & 3;
//                   registers 2h and 2h + 1 feed half h
//   C (16x16, f32): element i of 8 is (g + 8 * (j >> 1), 2t + (j & 1) + 8h); floats 4h .. 4h + 3
//                   are half h's accumulator
std::string cuda_mma(const TileElems& te) {
  const bool f16 = te.f16, bf16 = te.bf16;
  std::string out =
      "struct iron_tile_acc { float x[8]; };\n"
      // ldmatrix: lane l names row (l & 7) + 8 * ((l >> 3) & 1), column 8 * (l >> 4) of the tile,
      // the first element of the 8 x 8 block (l >> 3) = 0..3 it supplies a row address of.
      "#define IRON_TILE_LDMATRIX 1\n"
      "__device__ __forceinline__ unsigned iron_tile_ldm_row() { return (iron_flat_local_id() & 7u) + ((iron_flat_local_id() >> 3) & 1u) * 8u; }\n"
      "__device__ __forceinline__ unsigned iron_tile_ldm_col() { return ((iron_flat_local_id() >> 4) & 1u) * 8u; }\n"
      // A column-major tile (memory rows are the fragment's columns): lane l names memory row
      // (l & 7) + 8 * (l >> 4), memory column 8 * ((l >> 3) & 1).
      "__device__ __forceinline__ unsigned iron_tile_ldm_row_cm() { return (iron_flat_local_id() & 7u) + ((iron_flat_local_id() >> 4) & 1u) * 8u; }\n"
      "__device__ __forceinline__ unsigned iron_tile_ldm_col_cm() { return ((iron_flat_local_id() >> 3) & 1u) * 8u; }\n"
      "__device__ __forceinline__ unsigned iron_tile_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }\n"
      "#define IRON_TILE_LD_FIRST 0u\n#define IRON_TILE_LD_END 8u\n#define IRON_TILE_LD_STEP 1u\n"
      "#define IRON_TILE_ST_FIRST 0u\n#define IRON_TILE_ST_END 8u\n#define IRON_TILE_ST_STEP 1u\n"
      "__device__ __forceinline__ void iron_tile_coord_a(unsigned i, unsigned& r, unsigned& c) {\n"
      "  const unsigned l = iron_flat_local_id() & 31u;\n"
      "  r = (l >> 2) + 8u * ((i >> 1) & 1u);\n  c = 2u * (l & 3u) + (i & 1u) + 8u * (i >> 2);\n}\n"
      "__device__ __forceinline__ void iron_tile_coord_b(unsigned i, unsigned& r, unsigned& c) {\n"
      "  const unsigned l = iron_flat_local_id() & 31u, j = i & 3u;\n"
      "  r = 2u * (l & 3u) + (j & 1u) + 8u * (j >> 1);\n  c = (l >> 2) + 8u * (i >> 2);\n}\n"
      "__device__ __forceinline__ void iron_tile_coord_st(unsigned i, unsigned& r, unsigned& c) {\n"
      "  const unsigned l = iron_flat_local_id() & 31u, j = i & 3u;\n"
      "  r = (l >> 2) + 8u * (j >> 1);\n  c = 2u * (l & 3u) + (j & 1u) + 8u * (i >> 2);\n}\n"
      "__device__ __forceinline__ iron_tile_acc iron_tile_fill(float v) {\n"
      "  iron_tile_acc f;\n  for (int i = 0; i < 8; ++i) f.x[i] = v;\n  return f;\n}\n"
      "__device__ __forceinline__ void iron_tile_store_begin(const iron_tile_acc&) {}\n"
      "__device__ __forceinline__ float iron_tile_store_get(const iron_tile_acc& f, unsigned i) { return f.x[i]; }\n"
      "__device__ __forceinline__ void iron_tile_store_end() {}\n"
      // Element (r, c) lives in lane 4 * (r % 8) + (c % 8) / 2, float 4 * (c / 8) + 2 * (r / 8) + c % 2.
      "__device__ __forceinline__ float iron_tile_get(const iron_tile_acc& f, unsigned r, unsigned c) {\n"
      "  return __shfl_sync(0xffffffffu, f.x[((c >> 3) << 2) | ((r >> 3) << 1) | (c & 1u)],\n"
      "                     (int)(((r & 7u) << 2) | ((c & 7u) >> 1)));\n}\n";
  for (int e = 0; e < 2; ++e) {
    if (!(e == 0 ? f16 : bf16)) continue;
    const std::string sfx = e == 0 ? "f16" : "bf16";
    const std::string bits = e == 0 ? "__half_as_ushort(__float2half_rn(v))" : "__bfloat16_as_ushort(__float2bfloat16_rn(v))";
    for (const char* r : {"a", "b"}) {
      const std::string name = "iron_tile_" + std::string(r) + "_" + sfx;
      out += "struct " + name + " { unsigned x[4]; };\n"
             "__device__ __forceinline__ void iron_tile_set(" + name + "& f, unsigned i, float v) {\n"
             "  const unsigned b = " + bits + ";\n"
             "  f.x[i >> 1] = (i & 1u) ? ((f.x[i >> 1] & 0xffffu) | (b << 16)) : ((f.x[i >> 1] & 0xffff0000u) | b);\n}\n"
             "__device__ __forceinline__ void iron_tile_finish(" + name + "&) {}\n";
      // The four 8 x 8 blocks in register order (A: rows 0-7 / 8-15 of columns 0-7, then of
      // columns 8-15; B, transposed as it loads: k 0-7 / 8-15 of columns n 0-7, then n 8-15).
      // iron_tile_ldmatrix_cm: the same fragment from a column-major tile (A transposed as it
      // loads, B not).
      for (int cm = 0; cm < 2; ++cm)
        out += "__device__ __forceinline__ void iron_tile_ldmatrix" + std::string(cm ? "_cm" : "") + "(" + name +
               "& f, const void* row) {\n"
               "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" + std::string((std::string(r) == "b") != (cm == 1) ? ".trans" : "") +
               ".shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
               "               : \"=r\"(f.x[0]), \"=r\"(f.x[1]), \"=r\"(f.x[2]), \"=r\"(f.x[3]) : \"r\"(iron_tile_smem(row)) : \"memory\");\n}\n";
    }
    out += "__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_" + sfx + "& a, const iron_tile_b_" +
           sfx + "& b, const iron_tile_acc& c) {\n  iron_tile_acc d;\n";
    for (int h = 0; h < 2; ++h) {
      auto n = [](int i) { return std::to_string(i); };
      out += "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." + sfx + "." + sfx +
             ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\"\n"
             "               : \"=f\"(d.x[" + n(4 * h) + "]), \"=f\"(d.x[" + n(4 * h + 1) + "]), \"=f\"(d.x[" +
             n(4 * h + 2) + "]), \"=f\"(d.x[" + n(4 * h + 3) + "])\n"
             "               : \"r\"(a.x[0]), \"r\"(a.x[1]), \"r\"(a.x[2]), \"r\"(a.x[3]), \"r\"(b.x[" + n(2 * h) +
             "]), \"r\"(b.x[" + n(2 * h + 1) + "]),\n"
             "                 \"f\"(c.x[" + n(4 * h) + "]), \"f\"(c.x[" + n(4 * h + 1) + "]), \"f\"(c.x[" +
             n(4 * h + 2) + "]), \"f\"(c.x[" + n(4 * h + 3) + "]));\n";
    }
    out += "  return d;\n}\n";
  }
  if (te.fp8()) {
    // mma.m16n8k32 with e4m3 or e5m2 A and B (sm_89+), two per 16x16x32 product; g = lane / 4, t = lane % 4:
    //   A (16x32, row): byte i of 16 (register i / 4) is (g + 8 * ((i >> 2) & 1), 4t + (i & 3) + 16 * (i >> 3))
    //   B (32x16, col): byte j of 8 in half h (registers 2h, 2h + 1) is (4t + (j & 3) + 16 * (j >> 2), g + 8h);
    //                   element i of 16 is half i >> 3, byte i & 7
    // The accumulator layout is m16n8k16's.
    // ldmatrix (b16, no .trans) reads these registers whole where the bytes run along K: register
    // i of A is the 8 x 16-byte block at rows 8 (i & 1), columns 16 (i >> 1) (lane l names row
    // (l & 7) + 8 ((l >> 3) & 1), column 16 (l >> 4)); B stored column-major (a weight [N, K],
    // memory rows are n) takes register 2h + q from memory rows 8h, columns 16q (lane l names
    // memory row (l & 7) + 8 (l >> 4), column 16 ((l >> 3) & 1)). A column-major A or a row-major
    // B would need a transpose of bytes, which ldmatrix does not do: those load element by element.
    out += "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900\n#define IRON_TILE_FP8_F16 1\n#else\n#define IRON_TILE_FP8_F16 0\n#endif\n";
    for (const std::string sfx : te.fp8_suffixes())
      out += "__device__ __forceinline__ unsigned iron_tile_cvt_" + sfx + "(unsigned pair) {\n"
             "  unsigned d;\n  asm(\"cvt.rn.f16x2." + sfx + "x2 %0, %1;\" : \"=r\"(d) : \"h\"((unsigned short)pair));\n  return d;\n}\n";
    out += "#define IRON_TILE_LD8_FIRST 0u\n#define IRON_TILE_LD8_END 16u\n#define IRON_TILE_LD8_STEP 1u\n"
           "__device__ __forceinline__ unsigned iron_tile_ldm8_col() { return ((iron_flat_local_id() >> 4) & 1u) * 16u; }\n"
           "__device__ __forceinline__ unsigned iron_tile_ldm8_col_cm() { return ((iron_flat_local_id() >> 3) & 1u) * 16u; }\n"
           "__device__ __forceinline__ void iron_tile_coord_a8(unsigned i, unsigned& r, unsigned& c) {\n"
           "  const unsigned l = iron_flat_local_id() & 31u;\n"
           "  r = (l >> 2) + 8u * ((i >> 2) & 1u);\n  c = 4u * (l & 3u) + (i & 3u) + 16u * (i >> 3);\n}\n"
           "__device__ __forceinline__ void iron_tile_coord_b8(unsigned i, unsigned& r, unsigned& c) {\n"
           "  const unsigned l = iron_flat_local_id() & 31u, j = i & 7u;\n"
           "  r = 4u * (l & 3u) + (j & 3u) + 16u * (j >> 2);\n  c = (l >> 2) + 8u * (i >> 3);\n}\n";
  }
  for (const std::string sfx : te.fp8_suffixes()) {
    for (const char* r : {"a", "b"}) {
      const std::string name = "iron_tile_" + std::string(r) + "_" + sfx;
      // sm_90 has no fp8 mma.sync of its own (ptxas composes it from f16 HMMA.16816 and
      // conversions per instruction): there the fragment is converted to f16 pairs once, when it
      // is complete (iron_tile_finish), and every product reuses them (IRON_TILE_FP8_F16 below).
      out += "struct " + name + " { unsigned x[4];\n#if IRON_TILE_FP8_F16\n  unsigned h[8];\n#endif\n};\n"
             "__device__ __forceinline__ void iron_tile_set(" + name + "& f, unsigned i, float v) {\n"
             "  const unsigned b = (unsigned)iron_f32_to_" + sfx + "(v), sh = 8u * (i & 3u);\n"
             "  f.x[i >> 2] = (f.x[i >> 2] & ~(0xffu << sh)) | (b << sh);\n}\n"
             "__device__ __forceinline__ void iron_tile_finish(" + name + "& f) {\n"
             "#if IRON_TILE_FP8_F16\n" +
             (std::string(r) == "a"
                  // A: h[4q .. 4q + 3] is the f16 A of K block q: rows g, g + 8 (registers 2q,
                  // 2q + 1), the low byte pair at k slots 2t, 2t + 1 and the high one at 2t + 8, 2t + 9.
                  ? "  for (int q = 0; q < 2; ++q) {\n"
                    "    f.h[4 * q] = iron_tile_cvt_" + sfx + "(f.x[2 * q] & 0xffffu);\n"
                    "    f.h[4 * q + 1] = iron_tile_cvt_" + sfx + "(f.x[2 * q + 1] & 0xffffu);\n"
                    "    f.h[4 * q + 2] = iron_tile_cvt_" + sfx + "(f.x[2 * q] >> 16);\n"
                    "    f.h[4 * q + 3] = iron_tile_cvt_" + sfx + "(f.x[2 * q + 1] >> 16);\n  }\n"
                  // B: register j (half j >> 1, K block j & 1) becomes h[2j] (k slots 2t, 2t + 1)
                  // and h[2j + 1] (2t + 8, 2t + 9), the same k slots as A's.
                  : "  for (int j = 0; j < 4; ++j) {\n"
                    "    f.h[2 * j] = iron_tile_cvt_" + sfx + "(f.x[j] & 0xffffu);\n"
                    "    f.h[2 * j + 1] = iron_tile_cvt_" + sfx + "(f.x[j] >> 16);\n  }\n") +
             "#else\n  (void)f;\n#endif\n}\n"
             "__device__ __forceinline__ void iron_tile_ldmatrix8(" + name + "& f, const void* row) {\n"
             "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
             "               : \"=r\"(f.x[0]), \"=r\"(f.x[1]), \"=r\"(f.x[2]), \"=r\"(f.x[3]) : \"r\"(iron_tile_smem(row)) : \"memory\");\n}\n";
    }
    out += "__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_" + sfx + "& a, const iron_tile_b_" + sfx +
           "& b, const iron_tile_acc& c) {\n  iron_tile_acc d;\n";
    // sm_90: per n8 half h, the two K blocks' f16 products (m16n8k16) on the converted pairs.
    out += "#if IRON_TILE_FP8_F16\n  d = c;\n";
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 2; ++q) {
        auto n = [](int i) { return std::to_string(i); };
        out += "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\"\n"
               "               : \"+f\"(d.x[" + n(4 * h) + "]), \"+f\"(d.x[" + n(4 * h + 1) + "]), \"+f\"(d.x[" + n(4 * h + 2) +
               "]), \"+f\"(d.x[" + n(4 * h + 3) + "])\n"
               "               : \"r\"(a.h[" + n(4 * q) + "]), \"r\"(a.h[" + n(4 * q + 1) + "]), \"r\"(a.h[" + n(4 * q + 2) +
               "]), \"r\"(a.h[" + n(4 * q + 3) + "]), \"r\"(b.h[" + n(2 * (2 * h + q)) + "]), \"r\"(b.h[" +
               n(2 * (2 * h + q) + 1) + "]));\n";
      }
    out += "#else\n";
    for (int h = 0; h < 2; ++h) {
      auto n = [](int i) { return std::to_string(i); };
      out += "  asm volatile(\"mma.sync.aligned.m16n8k32.row.col.f32." + sfx + "." + sfx + ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
             "{%10, %11, %12, %13};\"\n"
             "               : \"=f\"(d.x[" + n(4 * h) + "]), \"=f\"(d.x[" + n(4 * h + 1) + "]), \"=f\"(d.x[" + n(4 * h + 2) +
             "]), \"=f\"(d.x[" + n(4 * h + 3) + "])\n"
             "               : \"r\"(a.x[0]), \"r\"(a.x[1]), \"r\"(a.x[2]), \"r\"(a.x[3]), \"r\"(b.x[" + n(2 * h) +
             "]), \"r\"(b.x[" + n(2 * h + 1) + "]),\n"
             "                 \"f\"(c.x[" + n(4 * h) + "]), \"f\"(c.x[" + n(4 * h + 1) + "]), \"f\"(c.x[" + n(4 * h + 2) +
             "]), \"f\"(c.x[" + n(4 * h + 3) + "]));\n";
    }
    out += "#endif\n  return d;\n}\n";
  }
  // tile_scale_add: float i of a lane's accumulator is row g + 8 ((i >> 1) & 1), so its two
  // rows' scales s[g] and s[g + 8] serve all eight.
  if (te.scale_add)
    out += "__device__ __forceinline__ iron_tile_acc iron_tile_scale_add(const float* s, const iron_tile_acc& x, "
           "const iron_tile_acc& c) {\n"
           "  const unsigned g = (iron_flat_local_id() & 31u) >> 2;\n"
           "  const float s0 = s[g], s1 = s[g + 8u];\n"
           "  iron_tile_acc d;\n"
           "  for (int i = 0; i < 8; ++i) d.x[i] = fmaf(x.x[i], (i & 2) ? s1 : s0, c.x[i]);\n"
           "  return d;\n}\n";
  return out;
}

// tile_wg_mma on sm_90a (docs/dsl.md "Warpgroup tiles"): one wgmma.mma_async m64n16k16 per call,
// A and B from shared memory through 64-bit matrix descriptors (ir::wgmma_descriptor builds the
// same bits on the host; the unit tests decode them). The warpgroup's D fragment puts warp q's
// rows 16q .. 16q + 15 in its registers in mma.sync m16n8's C layout, n8 block by block, which
// is the mma strategy's iron_tile_acc: float 4h + j of the 16 x 16 accumulator is D register 4h + j.
// Fence, issue, commit and wait 0 are one asm statement, so no accumulator register is touched
// while the product is in flight. A start address off the descriptor's grid (not 16-byte aligned,
// or past the first 128-byte row of its 1024-byte swizzle atom) traps rather than computing garbage.
// A warpgroup accumulator 16 x N (N = 16 NB) is iron_tile_accw<NB>: NB 16 x 16 accumulators,
// columns 16b .. 16b + 15 in t[b]. On the mma strategy its floats are, in order, the D registers of
// wgmma m64nNk16: register i of a lane is row g + 8 ((i >> 1) & 1), column 2t + (i & 1) + 8 (i >> 2)
// of the warp's 16 rows, the m64n16 layout repeated along N, so t[b].x[j] is register 8b + j.
// With tile_scale_add: block by block, each block's rows those of the warp's 16 (the row scales
// are the same for every block).
std::string cuda_wide_acc(bool scale_add) {
  return std::string("template <unsigned NB> struct iron_tile_accw { iron_tile_acc t[NB]; };\n") +
         (scale_add ? "template <unsigned NB> __device__ __forceinline__ iron_tile_accw<NB> iron_tile_scale_add(const float* s, "
                      "const iron_tile_accw<NB>& x, const iron_tile_accw<NB>& c) {\n"
                      "  iron_tile_accw<NB> d;\n#pragma unroll\n  for (unsigned b = 0; b < NB; ++b) d.t[b] = "
                      "iron_tile_scale_add(s, x.t[b], c.t[b]);\n  return d;\n}\n"
                    : "") +
         "template <unsigned NB> __device__ __forceinline__ iron_tile_accw<NB> iron_tile_fillw(float v) {\n"
         "  iron_tile_accw<NB> f;\n#pragma unroll\n  for (unsigned b = 0; b < NB; ++b) f.t[b] = iron_tile_fill(v);\n  return f;\n}\n"
         "template <unsigned NB> __device__ __forceinline__ float iron_tile_get(const iron_tile_accw<NB>& f, unsigned r, unsigned c) {\n"
         "  return iron_tile_get(f.t[c >> 4], r, c & 15u);\n}\n";
}

// A wgmma of the accumulator width n (16: iron_tile_acc, wider: iron_tile_accw), A from shared
// memory or (rs) the warp's A fragment registers; the D registers are the accumulator's floats in
// order (iron_tile_accw: t[b].x[j] is register 8b + j). Waited (async false): fence, issue,
// commit and wait 0 in one statement, the result returned. Issued (async true): the wgmma alone,
// on the caller's registers in place ("+f"), retired by wg_commit / wg_wait (the emitter's wgmma
// group statements); wg_fence orders the registers' earlier writes.
// fp8 (sfx e4m3 or e5m2, a {bits, 4, 3} code): m64nNk32, A from shared memory only, and no
// transpose immediates (PTX has them for f16 and bf16 alone; 8-bit A and B are K-major).
std::string cuda_wgmma_fn(const std::string& sfx, int64_t code, uint32_t n, bool rs, bool async) {
  const uint32_t regs = n / 2, row_bytes = ir::wgmma_row_bytes(code), K = ir::wgmma_k(code);
  const bool fp8 = K == 32;
  auto num = [](uint32_t i) { return std::to_string(i); };
  const std::string acc_t = n > 16 ? "iron_tile_accw<" + num(n / 16) + ">" : std::string("iron_tile_acc");
  const std::string mode = std::to_string(ir::wgmma_swizzle_mode(code)) + "ull";
  std::string d = "{";
  for (uint32_t i = 0; i < regs; ++i) d += (i ? ", %" : "%") + num(i);
  d += "}";
  std::string outs;
  for (uint32_t i = 0; i < regs; ++i)
    outs += std::string(i ? ", " : "") + (i % 8 == 0 && i ? "\n                 " : "") + "\"+f\"(d." +
            (n > 16 ? "t[" + num(i / 8) + "]." : std::string()) + "x[" + num(i % 8) + "])";
  const std::string name = std::string("iron_tile_wgmma_") + (async ? "async_" : "") + (rs ? "rs_" : "") + sfx + "_" +
                           std::to_string(code) + (n > 16 ? "_n" + num(n) : std::string());
  const std::string a_param = rs ? "const iron_tile_a_" + sfx + "& a" : std::string("unsigned a");
  std::string out = "__device__ __forceinline__ " + (async ? std::string("void ") : acc_t + " ") + name + "(" + a_param +
                    ", unsigned b, " + (async ? acc_t + "& d" : "const " + acc_t + "& c") + ") {\n";
  // The waited form traps on a start off the descriptor's grid; the issued form cannot (a branch
  // between wgmma.fence and the issue makes ptxas serialize the products): there the interpreter's
  // check is the guard.
  if (!async) out += std::string("  if ((") + (rs ? "b" : "(a | b)") + " & 0x38fu) != 0u) __trap();\n";
  if (!rs) out += "  const unsigned long long da = iron_tile_wg_desc(a, " + num(8 * row_bytes) + "u, " + mode + ");\n";
  out += "  const unsigned long long db = iron_tile_wg_desc(b, " + num(8 * row_bytes) + "u, " + mode + ");\n";
  if (!async) out += "  " + acc_t + " d = c;\n";
  const uint32_t pred = rs ? regs + 5 : regs + 2;
  const std::string a_op =
      rs ? "{%" + num(regs) + ", %" + num(regs + 1) + ", %" + num(regs + 2) + ", %" + num(regs + 3) + "}" : "%" + num(regs);
  const std::string b_op = "%" + num(rs ? regs + 4 : regs + 1);
  out += "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + num(pred) + ", 0;\\n" +
         (async ? "" : "wgmma.fence.sync.aligned;\\n") + "\"\n"
         "               \"wgmma.mma_async.sync.aligned.m64n" + num(n) + "k" + num(K) + ".f32." + sfx + "." + sfx + " " + d + ", " +
         a_op + ", " + b_op + (fp8 ? ", p, 1, 1;\\n\"\n" : rs ? ", p, 1, 1, 0;\\n\"\n" : ", p, 1, 1, 0, 0;\\n\"\n") +
         (async ? "" : "               \"wgmma.commit_group.sync.aligned;\\nwgmma.wait_group.sync.aligned 0;\\n\"\n") +
         "               \"}\\n\"\n"
         "               : " + outs + "\n"
         "               : " + (rs ? "\"r\"(a.x[0]), \"r\"(a.x[1]), \"r\"(a.x[2]), \"r\"(a.x[3]), \"l\"(db)" : "\"l\"(da), \"l\"(db)") +
         ", \"r\"(1) : \"memory\");\n";
  out += async ? "}\n" : "  return d;\n}\n";
  return out;
}

// One warpgroup product form the kernel uses: swizzle, accumulator width, A from registers,
// issued asynchronously.
struct WgUse {
  int64_t code;
  uint32_t n;
  bool rs, async;
  bool operator==(const WgUse& o) const { return code == o.code && n == o.n && rs == o.rs && async == o.async; }
};

// The kernel's warpgroup products: for f16 and bf16 each 16-bit code's m64n16k16 forms (waited,
// A from shared memory or registers) and the wider or issued forms it uses; for fp8 the forms it
// uses of each fp8 code (m64nNk32).
std::string cuda_wgmma(bool f16, bool bf16, const std::vector<const char*>& fp8_sfx, const std::vector<int64_t>& codes,
                       const std::vector<WgUse>& uses) {
  std::string out =
      "#define IRON_TILE_WGMMA 1\n"
      "__device__ __forceinline__ unsigned long long iron_tile_wg_desc(unsigned addr, unsigned sbo, unsigned long long mode) {\n"
      "  return (unsigned long long)((addr & 0x3ffffu) >> 4) | (1ull << 16) | ((unsigned long long)(sbo >> 4) << 32) | (mode << 62);\n}\n";
  for (const std::string sfx : fp8_sfx)
    for (const WgUse& u : uses)
      if (ir::wgmma_elem_bytes(u.code) == 1 && !u.rs) out += cuda_wgmma_fn(sfx, u.code, u.n, false, u.async);
  for (int e = 0; e < 2; ++e) {
    if (!(e == 0 ? f16 : bf16)) continue;
    const std::string sfx = e == 0 ? "f16" : "bf16";
    for (int64_t code : codes) {
      if (ir::wgmma_elem_bytes(code) != 2) continue;
      const uint32_t row_bytes = ir::wgmma_row_bytes(code);
      out += "__device__ __forceinline__ iron_tile_acc iron_tile_wgmma_" + sfx + "_" + std::to_string(code) +
             "(unsigned a, unsigned b, const iron_tile_acc& c) {\n"
             "  if (((a | b) & 0x38fu) != 0u) __trap();\n"
             "  const unsigned long long da = iron_tile_wg_desc(a, " + std::to_string(8 * row_bytes) + "u, " +
             std::to_string(ir::wgmma_swizzle_mode(code)) + "ull), db = iron_tile_wg_desc(b, " + std::to_string(8 * row_bytes) +
             "u, " + std::to_string(ir::wgmma_swizzle_mode(code)) + "ull);\n"
             "  iron_tile_acc d = c;\n"
             "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %10, 0;\\nwgmma.fence.sync.aligned;\\n\"\n"
             "               \"wgmma.mma_async.sync.aligned.m64n16k16.f32." + sfx + "." + sfx +
             " {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\\n\"\n"
             "               \"wgmma.commit_group.sync.aligned;\\nwgmma.wait_group.sync.aligned 0;\\n}\\n\"\n"
             "               : \"+f\"(d.x[0]), \"+f\"(d.x[1]), \"+f\"(d.x[2]), \"+f\"(d.x[3]), \"+f\"(d.x[4]), \"+f\"(d.x[5]), "
             "\"+f\"(d.x[6]), \"+f\"(d.x[7])\n"
             "               : \"l\"(da), \"l\"(db), \"r\"(1) : \"memory\");\n"
             "  return d;\n}\n";
      // tile_wg_mma_rs: A from the warp's own fragment registers, which hold its 16 rows in the
      // m16n8k16 A order wgmma takes for a register A.
      out += "__device__ __forceinline__ iron_tile_acc iron_tile_wgmma_rs_" + sfx + "_" + std::to_string(code) +
             "(const iron_tile_a_" + sfx + "& a, unsigned b, const iron_tile_acc& c) {\n"
             "  if ((b & 0x38fu) != 0u) __trap();\n"
             "  const unsigned long long db = iron_tile_wg_desc(b, " + std::to_string(8 * row_bytes) + "u, " +
             std::to_string(ir::wgmma_swizzle_mode(code)) + "ull);\n"
             "  iron_tile_acc d = c;\n"
             "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %13, 0;\\nwgmma.fence.sync.aligned;\\n\"\n"
             "               \"wgmma.mma_async.sync.aligned.m64n16k16.f32." + sfx + "." + sfx +
             " {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\\n\"\n"
             "               \"wgmma.commit_group.sync.aligned;\\nwgmma.wait_group.sync.aligned 0;\\n}\\n\"\n"
             "               : \"+f\"(d.x[0]), \"+f\"(d.x[1]), \"+f\"(d.x[2]), \"+f\"(d.x[3]), \"+f\"(d.x[4]), \"+f\"(d.x[5]), "
             "\"+f\"(d.x[6]), \"+f\"(d.x[7])\n"
             "               : \"r\"(a.x[0]), \"r\"(a.x[1]), \"r\"(a.x[2]), \"r\"(a.x[3]), \"l\"(db), \"r\"(1) : \"memory\");\n"
             "  return d;\n}\n";
      // Wider accumulators and issued (asynchronous) products: the forms the kernel uses.
      for (const WgUse& u : uses)
        if (u.code == code && (u.n > 16 || u.async)) out += cuda_wgmma_fn(sfx, code, u.n, u.rs, u.async);
    }
  }
  return out;
}

}  // namespace

// --- GLSL: fragments in shared memory ------------------------------------------------------
//
// Every fragment value and fragment variable owns a slot of 256 floats (element e = r * 16 + c)
// in the lane group's part of one shared array, iron_tile_mem; lane l of the subgroup handles the
// elements e = l, l + W, l + 2W, ... (W = gl_SubgroupSize) in a loop, so the code per tile op is a
// few lines whatever the tile size (straight-line code over 256 private elements took lavapipe
// seconds to compile per shader). A 16-bit A or B element is held as its exact f32 value.
//
// Synchronisation: an op that writes a slot starts and ends with a subgroup barrier on shared
// memory (iron_tile_sync): before, so that no lane still reads what the slot held (another value
// whose life ended, or the old contents of a variable); after, so that every lane sees the whole
// fragment (an mma reads rows and columns other lanes wrote, a get reads any element). An op that
// only reads slots (store, get) needs neither.
//
// Slots are assigned like registers (plan_glsl_tiles): each fragment value and variable is live
// over a closed interval of program positions (pre-order; a use inside a loop that does not hold
// the definition extends the interval to that loop's end), and two classes share a slot only when
// no intervals of theirs meet. Copies are elided where the value already is where it must end:
//   var X = v          v joins X's class when v is a value whose life ends at the var;
//   v = var_load X     v joins X's class when no var_store X lies in v's interval;
//   d = mma(a, b, c)   d joins c's class when c is a value whose life ends at the mma (d[e]
//                      depends on c[e] alone, read before it is written by the same lane), and
//                      when c = var_load X is used only by the mma and d only by a later
//                      var_store X in the same block with no other access to X in between and no
//                      other value of X's class live at the mma (X is updated in place).
//   var_store X, v     no copy when v is in X's class.

namespace {

struct TileClass {
  std::vector<std::pair<size_t, size_t>> live;  // closed [first, last] program positions
  bool has_var = false;
  int slot = -1;
};

bool meets(const TileClass& a, const TileClass& b) {
  for (const auto& x : a.live)
    for (const auto& y : b.live)
      if (x.first <= y.second && y.first <= x.second) return true;
  return false;
}

}  // namespace

void plan_glsl_tiles(EmitState& s) {
  const ir::Kernel& k = s.k;
  const size_t n = k.insts.size();
  std::vector<size_t> pos(n, 0), last(n, 0);  // pre-order position; end of an If/For's subtree
  std::vector<ir::Id> block_of(n, 0);
  size_t next = 0;
  std::vector<ir::Id> order;
  // Pre-order positions, and each control instruction's last position (iterative: the nesting
  // is bounded, but the walk needs the end of each subtree).
  struct Frame { ir::Id block; size_t i; ir::Id owner; };
  std::vector<Frame> stack{{0, 0, ir::kNone}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    const std::vector<ir::Id>& insts = k.blocks[f.block].insts;
    if (f.i == insts.size()) {
      const ir::Id owner = f.owner;
      stack.pop_back();
      if (owner != ir::kNone) last[owner] = next - 1;
      continue;
    }
    const ir::Id id = insts[f.i++];
    block_of[id] = f.block;
    pos[id] = last[id] = next++;
    order.push_back(id);
    const ir::Inst& in = k.insts[id];
    // Both child blocks of an If are pushed so that the then block is visited first.
    if (in.blocks[1] != ir::kNone) stack.push_back({in.blocks[1], 0, id});
    if (in.blocks[0] != ir::kNone) stack.push_back({in.blocks[0], 0, in.blocks[1] != ir::kNone ? ir::kNone : id});
  }
  auto is_frag_var = [&](ir::Id id) { return k.insts[id].op == ir::Op::Var && k.insts[id].type.is_fragment(); };
  // The position a use at `u` keeps `def` live to: u, or the end of the outermost loop that
  // holds u but not def.
  auto reach = [&](ir::Id def, ir::Id u) {
    size_t p = pos[u];
    for (ir::Id b = block_of[u]; b != 0;) {
      const ir::Id owner = k.blocks[b].parent;
      if (pos[owner] < pos[def] && pos[def] <= last[owner]) break;
      if (k.insts[owner].op == ir::Op::For) p = std::max(p, last[owner]);
      b = block_of[owner];
    }
    return p;
  };
  // Live intervals of fragment values and variables; the uses of each.
  std::map<ir::Id, std::pair<size_t, size_t>> live;
  std::map<ir::Id, std::vector<ir::Id>> uses;
  for (ir::Id id : order) {
    const ir::Inst& in = k.insts[id];
    if (in.type.is_fragment()) live[id] = {pos[id], pos[id]};
    for (ir::Id o : in.operands)
      if (o < n && k.insts[o].type.is_fragment()) uses[o].push_back(id);
  }
  for (auto& [id, range] : live)
    for (ir::Id u : uses[id]) range.second = std::max(range.second, reach(id, u));

  std::vector<TileClass> classes;
  std::map<ir::Id, size_t> cls;
  auto join = [&](ir::Id id, size_t c) {
    cls[id] = c;
    classes[c].live.push_back(live[id]);
  };
  auto only_values_ending_at = [&](size_t c, size_t p) {
    if (classes[c].has_var) return false;
    for (const auto& r : classes[c].live)
      if (r.second > p) return false;
    return true;
  };
  for (ir::Id id : order) {
    auto it = live.find(id);
    if (it == live.end()) continue;
    const ir::Inst& in = k.insts[id];
    if (in.op == ir::Op::Var && in.num_operands() == 1 && cls.count(in.operands[0]) &&
        only_values_ending_at(cls[in.operands[0]], pos[id])) {
      join(id, cls[in.operands[0]]);
      classes[cls[id]].has_var = true;
      s.tile_in_place.insert(id);
      continue;
    }
    if (in.op == ir::Op::VarLoad && cls.count(in.operands[0])) {
      const ir::Id x = in.operands[0];
      bool stored = false;
      for (ir::Id u : uses[x])
        if (k.insts[u].op == ir::Op::VarStore && pos[u] > it->second.first && pos[u] <= it->second.second) stored = true;
      if (!stored) {
        join(id, cls[x]);
        s.tile_in_place.insert(id);
        continue;
      }
    }
    if (in.op == ir::Op::TileMma && cls.count(in.operands[2])) {
      const ir::Id c = in.operands[2];
      const size_t cc = cls[c];
      if (only_values_ending_at(cc, pos[id])) {
        join(id, cc);
        s.tile_in_place.insert(id);
        continue;
      }
      // c = var_load X (in X's class), used only here; d used only by var_store X, d.
      const ir::Inst& load = k.insts[c];
      const std::vector<ir::Id>& du = uses[id];
      if (load.op == ir::Op::VarLoad && s.tile_in_place.count(c) && uses[c].size() == 1 && du.size() == 1) {
        const ir::Id x = load.operands[0], st = du[0];
        const ir::Inst& store = k.insts[st];
        bool ok = store.op == ir::Op::VarStore && store.operands[0] == x && block_of[st] == block_of[id] &&
                  block_of[c] == block_of[id] && pos[st] > pos[id];
        for (ir::Id u : uses[x])
          if (u != c && u != st && pos[u] >= pos[c] && pos[u] <= pos[st]) ok = false;
        // No other value held in X's slot may be live at the mma.
        for (const auto& [other, oc] : cls)
          if (ok && oc == cc && other != c && other != x && live[other].first <= pos[id] && pos[id] <= live[other].second)
            ok = false;
        if (ok) {
          join(id, cc);
          s.tile_in_place.insert(id);
          s.tile_in_place.insert(st);
          continue;
        }
      }
    }
    classes.emplace_back();
    classes.back().has_var = is_frag_var(id);
    join(id, classes.size() - 1);
  }
  // A var_store of a value already in the variable's class copies nothing.
  for (ir::Id id : order) {
    const ir::Inst& in = k.insts[id];
    if (in.op == ir::Op::VarStore && in.num_operands() == 2 && cls.count(in.operands[0]) && cls.count(in.operands[1]) &&
        cls[in.operands[0]] == cls[in.operands[1]])
      s.tile_in_place.insert(id);
  }
  // Slots: the lowest one no class already in it meets, in order of first position.
  std::vector<std::vector<size_t>> slots;
  for (size_t c = 0; c < classes.size(); ++c) {
    size_t chosen = 0;
    for (; chosen < slots.size(); ++chosen) {
      bool free = true;
      for (size_t other : slots[chosen]) free = free && !meets(classes[c], classes[other]);
      if (free) break;
    }
    if (chosen == slots.size()) slots.emplace_back();
    slots[chosen].push_back(c);
    classes[c].slot = int(chosen);
  }
  s.tile_slots = int(slots.size());
  for (const auto& [id, c] : cls) s.tile_slot[id] = classes[c].slot;
}

namespace {

std::string glsl_prelude(const EmitState& s) {
  // iron_tile_slots counts KiB per lane group (what the runtime checks): one per slot.
  const std::string slots = std::to_string(s.tile_slots);
  return "layout(constant_id = " + std::to_string(kTileGroupsSpec) + ") const uint iron_tile_groups = 1u;\n"
         "layout(constant_id = " + std::to_string(kTileSlotsSpec) + ") const uint iron_tile_slots = " + slots + "u;\n"
         "shared uint iron_tile_mem[iron_tile_slots * 256u * iron_tile_groups];\n"
         "void iron_tile_sync() {\n  subgroupMemoryBarrierShared();\n  subgroupBarrier();\n}\n"
         "uint iron_tile_slot(uint s) { return (gl_SubgroupID * iron_tile_slots + s) * 256u; }\n";
}

// The first index of a fragment's slot in iron_tile_mem.
std::string slot_of(const EmitState& s, ir::Id id) {
  auto it = s.tile_slot.find(id);
  return "iron_tile_slot(" + std::to_string(it == s.tile_slot.end() ? 0 : it->second) + "u)";
}

// `body` for each element e (iron_e) this lane handles, r = e / 16 and c = e % 16 (iron_r,
// iron_c); with `sync`, between subgroup barriers. Under a loop limit the loop reports a cut
// (at most 256 / W iterations each; lavapipe counts them against its per-invocation budget).
void lane_loop(const EmitState& s, const ir::Inst& in, bool sync, const std::vector<std::string>& body,
               std::vector<std::string>& lines) {
  if (sync) lines.push_back("iron_tile_sync();");
  lines.push_back("{");
  lines.push_back("  uint iron_e = gl_SubgroupInvocationID;");
  lines.push_back("  for (; iron_e < 256u; iron_e += gl_SubgroupSize) {");
  lines.push_back("    const uint iron_r = iron_e >> 4, iron_c = iron_e & 15u;");
  for (const std::string& b : body) lines.push_back("    " + b);
  lines.push_back("  }");
  if (s.loop_check)
    lines.push_back("  if (iron_e < 256u) iron_loop_cut(" + std::to_string(in.loc.line) + "u, " +
                    std::to_string(in.loc.file) + "u);");
  lines.push_back("}");
  if (sync) lines.push_back("iron_tile_sync();");
}

// Every slot is 256 words (an f8e4m3 A or B fragment packs two elements per word): a copy moves
// the words as they are.
void copy_slot(const EmitState& s, const ir::Inst& in, const std::string& to, const std::string& from,
               std::vector<std::string>& lines) {
  lines.push_back("{");
  lines.push_back("  const uint iron_to = " + to + ", iron_from = " + from + ";");
  std::vector<std::string> inner;
  lane_loop(s, in, true, {"iron_tile_mem[iron_to + iron_e] = iron_tile_mem[iron_from + iron_e];"}, inner);
  for (const std::string& l : inner) lines.push_back("  " + l);
  lines.push_back("}");
}

}  // namespace

void glsl_tile_var_op(EmitState& s, const Dialect&, ir::Id id, std::vector<std::string>& lines) {
  const ir::Inst& in = s.k.insts[id];
  if (s.tile_in_place.count(id)) return;
  switch (in.op) {
    case ir::Op::Var: case ir::Op::VarLoad: copy_slot(s, in, slot_of(s, id), slot_of(s, in.operands[0]), lines); return;
    case ir::Op::VarStore: copy_slot(s, in, slot_of(s, in.operands[0]), slot_of(s, in.operands[1]), lines); return;
    default: s.unsupported(in, "GLSL", std::string("'") + ir::mnemonic(in.op) + "' on a fragment"); return;
  }
}

namespace {
// The statements of one tile op on GLSL (see "GLSL: fragments in shared memory" above).
void glsl_tile_op(EmitState& s, const Dialect& d, ir::Id id, const std::vector<std::string>& a,
                  std::vector<std::string>& lines) {
  const ir::Inst& in = s.k.insts[id];
  // Slots hold words: an f32 element as its bits; an f8e4m3 A or B fragment (16 x 32, 32 x 16)
  // two elements per word as f16 halves (every f8e4m3 value is exact in f16), e = 2w low.
  auto mem = [](const std::string& base, const std::string& e) {
    return "uintBitsToFloat(iron_tile_mem[" + base + " + " + e + "])";
  };
  auto set = [](const std::string& base, const std::string& e, const std::string& v) {
    return "iron_tile_mem[" + base + " + " + e + "] = floatBitsToUint(" + v + ");";
  };
  switch (in.op) {
    case ir::Op::TileFill:
      lines.push_back("{");
      lines.push_back("  const uint iron_d = " + slot_of(s, id) + ";");
      {
        std::vector<std::string> inner;
        lane_loop(s, in, true, {set("iron_d", "iron_e", a[0])}, inner);
        for (const std::string& l : inner) lines.push_back("  " + l);
      }
      lines.push_back("}");
      return;
    case ir::Op::TileMma: {
      // d[e] = c[e] + sum_k a[r][k] * b[k][c], summed in k order from c[e] and rounded once: in
      // f64 where the device has it (each product of 16-bit floats is exact there), bit-exact
      // with the interpreter; else in f32 (docs/semantics.md bounds the difference).
      const std::string acc = s.tile_f64 ? "double" : "float";
      const uint32_t K = s.k.insts[in.operands[0]].type.k();
      std::string sum = acc + "(" + mem("iron_cs", "iron_e") + ")";
      for (uint32_t kk = 0; kk < K; ++kk) {
        std::string av, bv;
        if (K == 32) {  // packed f8e4m3 values: A (r, kk) in word r * 16 + kk / 2, B (kk, c) in kk * 8 + c / 2
          av = "unpackHalf2x16(iron_tile_mem[iron_as + iron_r * 16u + " + std::to_string(kk / 2) + "u])." + (kk % 2 ? "y" : "x");
          bv = "unpackHalf2x16(iron_tile_mem[iron_bs + " + std::to_string(kk * 8) + "u + (iron_c >> 1)])[iron_c & 1u]";
        } else {
          av = mem("iron_as", "iron_r * 16u + " + std::to_string(kk) + "u");
          bv = mem("iron_bs", std::to_string(kk * 16) + "u + iron_c");
        }
        sum = "(" + sum + " + " + acc + "(" + av + ") * " + acc + "(" + bv + "))";
      }
      lines.push_back("{");
      lines.push_back("  const uint iron_d = " + slot_of(s, id) + ", iron_as = " + slot_of(s, in.operands[0]) +
                      ", iron_bs = " + slot_of(s, in.operands[1]) + ", iron_cs = " + slot_of(s, in.operands[2]) + ";");
      std::vector<std::string> inner;
      lane_loop(s, in, true, {"precise " + acc + " iron_s = " + sum + ";", set("iron_d", "iron_e", "float(iron_s)")}, inner);
      for (const std::string& l : inner) lines.push_back("  " + l);
      lines.push_back("}");
      return;
    }
    case ir::Op::TileScaleAdd: {
      // d[e] = fma(x[e], scales[off + r], acc[e]), one rounding: GLSL's fma may round twice
      // (lavapipe's does), so where the emitter emulates fma (EmitOptions::emulate_fma) it is
      // iron_fma, the f64 product and sum rounded to odd, then to f32.
      const std::string at = d.tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + a[1] + " + iron_r]";
      const std::string sc = s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_load(at) : d.tg_load(s, DType::F32, at);
      if (s.emulate_fma) s.helpers.insert("fma");
      const std::string fma = s.emulate_fma ? "iron_fma(" : "fma(";
      lines.push_back("{");
      lines.push_back("  const uint iron_d = " + slot_of(s, id) + ", iron_xs = " + slot_of(s, in.operands[2]) +
                      ", iron_cs = " + slot_of(s, in.operands[3]) + ";");
      std::vector<std::string> inner;
      lane_loop(s, in, true,
                {"precise float iron_s = " + fma + mem("iron_xs", "iron_e") + ", " + sc + ", " + mem("iron_cs", "iron_e") + ");",
                 set("iron_d", "iron_e", "iron_s")},
                inner);
      for (const std::string& l : inner) lines.push_back("  " + l);
      lines.push_back("}");
      return;
    }
    case ir::Op::TileGet:
      lines.push_back(d.decl(DType::F32) + "v" + std::to_string(id) + " = " +
                      mem(slot_of(s, in.operands[0]), std::to_string(in.attr(ir::Attr::Row) * 16 + in.attr(ir::Attr::Col)) + "u") +
                      ";");
      return;
    case ir::Op::TileLoad: case ir::Op::TileTgLoad: {
      const bool tg = in.op == ir::Op::TileTgLoad;
      const std::string off = a[tg ? 1 : 0], stride = a[tg ? 2 : 1];
      auto value_at = [&](const std::string& r, const std::string& c) {
        const std::string at = tile_load_index(in, off, stride, r, c);
        // A buffer of the input type holds exact values of it.
        if (!tg) return d.load(s, s.k.params[in.param()], at);
        // A threadgroup element reads as a TgLoad does, rounded to the input type as the
        // interpreter rounds it (a no-op on an array of that type, which holds its values).
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string e = d.tg_name(s.k, alloc) + "[" + at + "]";
        const std::string v =
            s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_load(e) : d.tg_load(s, s.concrete(alloc.type), e);
        return d.cast(s, in, DType::F32, s.concrete(in.type), v);
      };
      std::vector<std::string> body;
      if (in.type.k() == 32) {
        // Word w holds elements 2w and 2w + 1 (one row: A has 32 columns, B 16).
        const bool a_role = in.type.role() == FragRole::A;
        body.push_back(std::string("const uint iron_pr = iron_e >> ") + (a_role ? "4" : "3") + ", iron_pc = (iron_e & " +
                       (a_role ? "15u" : "7u") + ") * 2u;");
        body.push_back("iron_tile_mem[iron_d + iron_e] = packHalf2x16(vec2(" + value_at("iron_pr", "iron_pc") + ", " +
                       value_at("iron_pr", "(iron_pc + 1u)") + "));");
      } else {
        body.push_back(set("iron_d", "iron_e", value_at("iron_r", "iron_c")));
      }
      lines.push_back("{");
      lines.push_back("  const uint iron_d = " + slot_of(s, id) + ";");
      std::vector<std::string> inner;
      lane_loop(s, in, true, body, inner);
      for (const std::string& l : inner) lines.push_back("  " + l);
      lines.push_back("}");
      return;
    }
    case ir::Op::TileStore: case ir::Op::TileTgStore: {
      // Element e is written by lane e mod W (docs/semantics.md "Race rules"); it reads only its
      // own elements of the slot, which it wrote itself or saw after a barrier.
      const bool tg = in.op == ir::Op::TileTgStore;
      const ir::Id frag = in.operands[tg ? 1 : 0];
      const std::string off = a[tg ? 2 : 1], stride = a[tg ? 3 : 2];
      const std::string at = "(" + off + " + iron_r * " + stride + " + iron_c)";
      const std::string v = mem("iron_f", "iron_e");
      std::string w;
      if (!tg) {
        w = d.store(s, s.k.params[in.param()], at, v);
      } else {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string e = d.tg_name(s.k, alloc) + "[" + at + "]";
        w = s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_store(e, v) : d.tg_store(s, s.concrete(alloc.type), e, v);
      }
      lines.push_back("{");
      lines.push_back("  const uint iron_f = " + slot_of(s, frag) + ";");
      std::vector<std::string> inner;
      lane_loop(s, in, false, {w + ";"}, inner);
      for (const std::string& l : inner) lines.push_back("  " + l);
      lines.push_back("}");
      return;
    }
    default: s.unsupported(in, d.name(), std::string("'") + ir::mnemonic(in.op) + "' as a tile op"); return;
  }
}

// --- GLSL: NV cooperative matrices --------------------------------------------------------
//
// With EmitOptions::tile_coopmat (f16 tiles on a device that reports f16 16x16x16 with f32
// accumulation at subgroup scope), a fragment is a GLSL value of type fcoopmatNV: A and B
// fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>, the accumulator fcoopmatNV<32, ...>. Fill, mma,
// var, var_load and var_store are plain value operations. coopMatLoadNV / coopMatStoreNV need
// every row 16-byte aligned (VK_NV_cooperative_matrix), so a buffer is read or written directly
// when offset and stride are multiples of 8 (f16) or 4 (f32) elements (a binding starts at the
// buffer's start), and otherwise, like every threadgroup array (whose addresses the shader cannot
// see), through the lane group's staging area iron_tile_stage (1 KiB of uvec4, 16-byte aligned by
// its type): lanes copy elements in or out, between subgroup barriers. A get reads the staged
// accumulator. The multiply-accumulate is the hardware's (docs/semantics.md bounds it).

const char* const kCoopA = "fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>";
const char* const kCoopAcc = "fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>";

std::string coopmat_prelude() {
  return "layout(constant_id = " + std::to_string(kTileGroupsSpec) + ") const uint iron_tile_groups = 1u;\n"
         "layout(constant_id = " + std::to_string(kTileSlotsSpec) + ") const uint iron_tile_slots = 1u;\n"
         "shared uvec4 iron_tile_stage[iron_tile_slots * 64u * iron_tile_groups];\n"
         "void iron_tile_sync() {\n  subgroupMemoryBarrierShared();\n  subgroupBarrier();\n}\n"
         "uint iron_tile_stage_at() { return gl_SubgroupID * 64u; }\n";
}

// A loop of this lane over `count` items (iron_p = lane, lane + W, ...), with the loop-limit report.
void stage_loop(const EmitState& s, const ir::Inst& in, uint32_t count, const std::vector<std::string>& body,
                std::vector<std::string>& lines) {
  const std::string n = std::to_string(count) + "u";
  lines.push_back("{");
  lines.push_back("  uint iron_p = gl_SubgroupInvocationID;");
  lines.push_back("  for (; iron_p < " + n + "; iron_p += gl_SubgroupSize) {");
  for (const std::string& b : body) lines.push_back("    " + b);
  lines.push_back("  }");
  if (s.loop_check)
    lines.push_back("  if (iron_p < " + n + ") iron_loop_cut(" + std::to_string(in.loc.line) + "u, " +
                    std::to_string(in.loc.file) + "u);");
  lines.push_back("}");
}

void glsl_coopmat_op(EmitState& s, const Dialect& d, ir::Id id, const std::vector<std::string>& a,
                     std::vector<std::string>& lines, std::string& value) {
  const ir::Inst& in = s.k.insts[id];
  const std::string reg = "v" + std::to_string(id);
  // The accumulator `frag` into the staging area (every lane then sees every element).
  auto stage_acc = [&](const std::string& frag) {
    lines.push_back("iron_tile_sync();");
    lines.push_back("coopMatStoreNV(" + frag + ", iron_tile_stage, iron_tile_stage_at(), 4u, false);");
    lines.push_back("iron_tile_sync();");
  };
  auto staged = [](const std::string& e) {
    return "uintBitsToFloat(iron_tile_stage[iron_tile_stage_at() + (" + e + ") / 4u][(" + e + ") % 4u])";
  };
  switch (in.op) {
    case ir::Op::TileFill: value = std::string(kCoopAcc) + "(" + a[0] + ")"; return;
    case ir::Op::TileMma: value = "coopMatMulAddNV(" + a[0] + ", " + a[1] + ", " + a[2] + ")"; return;
    case ir::Op::TileGet: {
      stage_acc(a[0]);
      const std::string e = std::to_string(in.attr(ir::Attr::Row) * 16 + in.attr(ir::Attr::Col)) + "u";
      lines.push_back(d.decl(DType::F32) + reg + " = " + staged(e) + ";");
      return;
    }
    case ir::Op::TileLoad: case ir::Op::TileTgLoad: {
      const bool tg = in.op == ir::Op::TileTgLoad;
      const std::string off = a[tg ? 1 : 0], stride = a[tg ? 2 : 1];
      // The 16-bit pattern of element (r, c): buffers and threadgroup arrays of f16 hold them.
      auto bits = [&](const std::string& at) {
        if (!tg) return "uint(" + d.param_name(s.k.params[in.param()]) + ".data[" + at + "])";
        return "uint(" + d.tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + at + "])";
      };
      lines.push_back(std::string(kCoopA) + " " + reg + ";");
      const bool plain = !in.has(ir::Attr::ColMajor) || in.attr(ir::Attr::ColMajor) == 0;
      if (!tg && plain) {
        lines.push_back("if (((" + off + " | " + stride + ") & 7u) == 0u) {");
        lines.push_back("  coopMatLoadNV(" + reg + ", " + d.param_name(s.k.params[in.param()]) + ".data, " + off + ", " +
                        stride + ", false);");
        lines.push_back("} else {");
      } else {
        lines.push_back("{");
      }
      // Pair p holds elements 2p and 2p + 1 (one row), packed low then high, as f16 in memory.
      std::vector<std::string> body = {
          "const uint iron_r = iron_p >> 3, iron_c = (iron_p & 7u) * 2u;",
          "iron_tile_stage[iron_tile_stage_at() + iron_p / 4u][iron_p % 4u] = " +
              bits(tile_load_index(in, off, stride, "iron_r", "iron_c")) + " | (" +
              bits(tile_load_index(in, off, stride, "iron_r", "(iron_c + 1u)")) + " << 16);"};
      std::vector<std::string> inner = {"iron_tile_sync();"};
      stage_loop(s, in, 128, body, inner);
      inner.push_back("iron_tile_sync();");
      inner.push_back("coopMatLoadNV(" + reg + ", iron_tile_stage, iron_tile_stage_at(), 2u, false);");
      for (const std::string& l : inner) lines.push_back("  " + l);
      lines.push_back("}");
      return;
    }
    case ir::Op::TileStore: case ir::Op::TileTgStore: {
      const bool tg = in.op == ir::Op::TileTgStore;
      const std::string frag = a[tg ? 1 : 0], off = a[tg ? 2 : 1], stride = a[tg ? 3 : 2];
      const std::string at = "(" + off + " + iron_r * " + stride + " + iron_c)";
      const std::string v = staged("iron_p");
      std::string w;
      if (!tg) {
        w = d.store(s, s.k.params[in.param()], at, v);
        lines.push_back("if (((" + off + " | " + stride + ") & 3u) == 0u) {");
        lines.push_back("  coopMatStoreNV(" + frag + ", " + d.param_name(s.k.params[in.param()]) + ".data, " + off + ", " +
                        stride + ", false);");
        lines.push_back("} else {");
      } else {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string e = d.tg_name(s.k, alloc) + "[" + at + "]";
        w = s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_store(e, v) : d.tg_store(s, s.concrete(alloc.type), e, v);
        lines.push_back("{");
      }
      // Element e = p is written by lane e mod W, as on the software path.
      std::vector<std::string> inner;
      inner.push_back("iron_tile_sync();");
      inner.push_back("coopMatStoreNV(" + frag + ", iron_tile_stage, iron_tile_stage_at(), 4u, false);");
      inner.push_back("iron_tile_sync();");
      stage_loop(s, in, 256, {"const uint iron_r = iron_p >> 4, iron_c = iron_p & 15u;", w + ";"}, inner);
      for (const std::string& l : inner) lines.push_back("  " + l);
      lines.push_back("}");
      return;
    }
    default: s.unsupported(in, d.name(), std::string("'") + ir::mnemonic(in.op) + "' as a tile op"); return;
  }
}

}  // namespace

std::string tile_type(const EmitState& s, Type t) {
  if (s.tile_coopmat) return t.role() == FragRole::Acc ? kCoopAcc : kCoopA;
  if (t.role() == FragRole::Acc && t.n() > 16) return "iron_tile_accw<" + std::to_string(t.n() / 16) + ">";
  if (t.role() == FragRole::Acc) return "iron_tile_acc";
  return "iron_tile_" + role_name(t.role()) + "_" + elem_suffix(s.concrete(t));
}

std::string tile_prelude(const EmitState& s, bool cuda) {
  bool uses = false;
  ir::walk(s.k, [&](ir::Id id) { uses = uses || s.k.insts[id].type.is_fragment(); });
  if (!uses) return {};
  if (!cuda) return s.tile_coopmat ? coopmat_prelude() : glsl_prelude(s);
  TileElems te = input_elems(s);
  bool& f16 = te.f16;
  bool& bf16 = te.bf16;
  // tile_wg_mma: its arrays' element types and swizzles (input_elems sees fragments only).
  std::vector<int64_t> wg_codes;
  std::vector<WgUse> wg_uses;
  ir::walk(s.k, [&](ir::Id id) {
    const ir::Inst& in = s.k.insts[id];
    if (in.op != ir::Op::TileWgMma && in.op != ir::Op::TileWgMmaRs) return;
    const ir::Id b = in.operands[in.op == ir::Op::TileWgMma ? 2 : 1];
    const DType e = s.concrete(s.k.insts[b].type);
    (e == DType::BF16 ? bf16 : e == DType::F8E4M3 ? te.e4m3 : e == DType::F8E5M2 ? te.e5m2 : f16) = true;
    if (std::find(wg_codes.begin(), wg_codes.end(), in.attr(ir::Attr::Swizzle)) == wg_codes.end())
      wg_codes.push_back(in.attr(ir::Attr::Swizzle));
    const WgUse u{in.attr(ir::Attr::Swizzle), uint32_t(in.type.n()), in.op == ir::Op::TileWgMmaRs, in.attr(ir::Attr::Async) == 1};
    if (std::find(wg_uses.begin(), wg_uses.end(), u) == wg_uses.end()) wg_uses.push_back(u);
  });
  const bool fp8 = te.fp8();
  // Warpgroup accumulators (16 x N, N > 16): iron_tile_accw on every strategy.
  bool any_wide = false;
  ir::walk(s.k, [&](ir::Id id) {
    const Type t = s.k.insts[id].type;
    any_wide = any_wide || (t.is_fragment() && t.role() == FragRole::Acc && t.n() > 16);
  });
  const std::string wide = any_wide ? cuda_wide_acc(te.scale_add) : "";
  const bool wg = !wg_codes.empty();
  const std::string no_wg = wide + (wg ? "#define IRON_TILE_WGMMA 0\n" : "");
  std::string out = "// Cooperative tiles: MmaStrategy " + std::string(cuda_mma_name(s.cuda_mma)) + "\n";
  // wmma takes f16 from sm_70 and bf16 from sm_80, never fp8; mma.sync m16n8k16 takes f16
  // and bf16 from sm_80, m16n8k32 takes e4m3 and e5m2 from sm_89. tile_scale_add needs each
  // lane's accumulator elements in a known place, which wmma's fragments do not promise.
  const std::string wmma_arch = bf16 ? "800" : "700", mma_arch = fp8 ? "890" : "800";
  switch (s.cuda_mma) {
    case CudaMma::Software: return out + cuda_software(te, s.profile.lane_width) + no_wg;
    case CudaMma::Wmma:
      if (fp8) return out + "#error \"IRON_CUDA_MMA=wmma has no fp8 tiles (wmma takes f16 and bf16 only)\"\n";
      if (te.scale_add)
        return out + "#error \"IRON_CUDA_MMA=wmma has no tile_scale_add (a wmma accumulator's element layout is unspecified)\"\n";
      return out + "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < " + wmma_arch +
             "\n#error \"IRON_CUDA_MMA=wmma needs sm_" + wmma_arch.substr(0, 2) + " or newer for these tiles\"\n#endif\n" +
             cuda_wmma(f16, bf16) + no_wg;
    case CudaMma::MmaSync:
      return out + "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < " + mma_arch + "\n#error \"IRON_CUDA_MMA=mma needs sm_" +
             mma_arch.substr(0, 2) + " or newer" + (fp8 ? " for fp8 tiles" : "") + "\"\n#endif\n" +
             cuda_mma(te) + no_wg;
    case CudaMma::Wgmma:
      // The lane-group tile ops take mma.sync; tile_wg_mma takes wgmma (sm_90a only).
      return out + "#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#error \"IRON_CUDA_MMA=wgmma needs "
             "sm_90a (wgmma is an arch-specific sm_90a instruction)\"\n#endif\n" +
             cuda_mma(te) + wide + (wg ? cuda_wgmma(f16, bf16, te.fp8_suffixes(), wg_codes, wg_uses) : std::string());
    case CudaMma::Auto: break;
    case MmaStrategy::Coopmat: case MmaStrategy::SimdgroupMatrix:
      return out + "#error \"the " + std::string(cuda_mma_name(s.cuda_mma)) + " tile strategy is not a CUDA one\"\n";
  }
  // Chosen by the architecture NVRTC compiles for: mma.sync where it takes every input type of
  // the kernel (and wgmma for tile_wg_mma on sm_90a), wmma where it does (never with fp8 or
  // tile_scale_add), the software path below that.
  out += "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= " + mma_arch + "\n" + cuda_mma(te) + wide;
  if (wg)
    out += "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n" + cuda_wgmma(f16, bf16, te.fp8_suffixes(), wg_codes, wg_uses) +
           "#else\n#define IRON_TILE_WGMMA 0\n#endif\n";
  if (!fp8 && !te.scale_add)
    out += "#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= " + wmma_arch + "\n" + cuda_wmma(f16, bf16) + no_wg;
  return out + "#else\n" + cuda_software(te, s.profile.lane_width) + no_wg + "#endif\n";
}

void tile_op(EmitState& s, const Dialect& d, ir::Id id, const std::vector<std::string>& a,
             std::vector<std::string>& lines, std::string& value) {
  const ir::Inst& in = s.k.insts[id];
  if ((in.op == ir::Op::TileWgMma || in.op == ir::Op::TileWgMmaRs || in.op == ir::Op::WgFence || in.op == ir::Op::WgCommit ||
       in.op == ir::Op::WgWait) &&
      s.profile.target != Target::Cuda)
    return s.unsupported(in, d.name(),
                         std::string(ir::mnemonic(in.op)) + " (a warpgroup's product, wgmma on CUDA: this target has no warpgroups; use the "
                         "lane-group tile ops)");
  // A warpgroup accumulator (16 x N, N > 16) exists on CUDA only: the other targets' tile types
  // are 16 x 16 (and have no warpgroups to fill it).
  auto wide = [&](ir::Id v) {
    const Type t = s.k.insts[v].type;
    return t.is_fragment() && t.role() == FragRole::Acc && t.n() > 16;
  };
  ir::Id wide_id = wide(id) ? id : ir::kNone;
  for (ir::Id o : in.operands)
    if (wide_id == ir::kNone && o < s.k.insts.size() && wide(o)) wide_id = o;
  if (wide_id != ir::kNone && s.profile.target != Target::Cuda)
    return s.unsupported(in, d.name(),
                         std::string(ir::mnemonic(in.op)) + " of a warpgroup accumulator " + type_name(s.k.insts[wide_id].type) +
                             " (wgmma's, CUDA only: this target's tiles are 16x16)");
  if (s.profile.target == Target::Msl) return msl_tile_op(s, d, id, a, lines, value);
  if (s.profile.target == Target::Glsl)
    return s.tile_coopmat ? glsl_coopmat_op(s, d, id, a, lines, value) : glsl_tile_op(s, d, id, a, lines);
  const std::string U = d.reg_type(DType::U32);
  const std::string reg = "v" + std::to_string(id);
  switch (in.op) {
    case ir::Op::TileFill:
      value = wide(id) ? "iron_tile_fillw<" + std::to_string(in.type.n() / 16) + ">(" + a[0] + ")" : "iron_tile_fill(" + a[0] + ")";
      return;
    case ir::Op::TileMma: value = "iron_tile_mma(" + a[0] + ", " + a[1] + ", " + a[2] + ")"; return;
    case ir::Op::TileScaleAdd:
      // The row scales from the f32 array (an array f32 atomics act on holds the same bits).
      value = "iron_tile_scale_add(reinterpret_cast<const float*>(&" + d.tg_name(s.k, s.k.insts[in.operands[0]]) + "[" +
              a[1] + "]), " + a[2] + ", " + a[3] + ")";
      return;
    case ir::Op::TileGet:
      value = "iron_tile_get(" + a[0] + ", " + std::to_string(in.attr(ir::Attr::Row)) + "u, " +
              std::to_string(in.attr(ir::Attr::Col)) + "u)";
      return;
    case ir::Op::TileLoad: case ir::Op::TileTgLoad: {
      const bool tg = in.op == ir::Op::TileTgLoad;
      const std::string off = a[tg ? 1 : 0], stride = a[tg ? 2 : 1];
      const DType elem = s.concrete(in.type);
      // A threadgroup element reads as a TgLoad does: a 16-bit array holds 16-bit values (widened
      // exactly), an array f32 atomics act on holds words.
      // A swizzled threadgroup load adds the offset's terms that are multiples of the swizzle's
      // period outside it (split_swizzle_offset).
      std::string inner_off = off, outer_off;
      if (tg && in.has(ir::Attr::Swizzle) && s.value_text) {
        const int64_t code = in.attr(ir::Attr::Swizzle);
        std::vector<ir::Id> outer, inner;
        split_swizzle_offset(s.k, in.operands[1], uint32_t(code / 100 + code / 10 % 10 + code % 10), outer, inner, 0);
        if (!outer.empty()) {
          auto sum = [&](const std::vector<ir::Id>& ids) {
            if (ids.empty()) return std::string("0u");
            std::string t = "(";
            for (size_t i = 0; i < ids.size(); ++i) t += (i ? " + " : "") + s.value_text(ids[i]);
            return t + ")";
          };
          outer_off = sum(outer);
          inner_off = sum(inner);
        }
      }
      const std::string idx = tile_load_index(in, inner_off, stride, "r", "c", outer_off);
      std::string read;
      if (!tg) {
        read = d.load(s, s.k.params[in.param()], idx);
      } else {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string at = d.tg_name(s.k, alloc) + "[" + idx + "]";
        read = s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_load(at) : d.tg_load(s, s.concrete(alloc.type), at);
      }
      const std::string role = in.type.role() == FragRole::A ? "a" : "b";
      const bool col_major = in.has(ir::Attr::ColMajor) && in.attr(ir::Attr::ColMajor) == 1;
      // A swizzle that moves runs of fewer than 16 bytes (8 16-bit, 16 fp8 elements) would split
      // ldmatrix's 16-byte rows.
      const bool fp8 = is_fp8(elem);
      const bool swz_ok = !in.has(ir::Attr::Swizzle) || in.attr(ir::Attr::Swizzle) / 10 % 10 >= (fp8 ? 4 : 3);
      // Every element is rounded to the input type, as the interpreter rounds it (a no-op on values
      // that already are of it: 16-bit threadgroup arrays hold 16-bit values).
      const std::string v = d.cast(s, in, DType::F32, elem, read);
      lines.push_back(tile_type(s, in.type) + " " + reg + " = {};");
      // ldmatrix (the mma strategy) where the array holds the fragment's own 16-bit type and every
      // row of the tile starts 16-byte aligned: offset and stride multiples of 8 elements and the
      // array's base address a multiple of 16 (checked at run time; literals fold). Otherwise,
      // and on the other strategies, the element loop.
      // Each lane's row address goes through the same index map (column-major: the lane names a
      // memory row of the transposed tile; a swizzle maps the row's first element, and its 8
      // elements stay together).
      // fp8 fragments: ldmatrix where the bytes run along K in memory (A row-major, B
      // column-major), 16 elements per 16-byte row (cuda_mma).
      bool static_ldm = false;
      const bool fp8_ldm_layout = fp8 && ((in.type.role() == FragRole::A) != col_major);
      const bool ldm = tg && swz_ok && !s.f32_atomic_allocs.count(in.operands[0]) &&
                       s.concrete(s.k.insts[in.operands[0]].type) == elem &&
                       (elem == DType::F16 || elem == DType::BF16 || fp8_ldm_layout);
      if (ldm) {
        const std::string arr = d.tg_name(s.k, s.k.insts[in.operands[0]]);
        const std::string sfx = col_major ? "_cm" : "";
        ir::Inst plain = in;  // the lane's row address: memory row and column, never transposed again
        plain.attrs.clear();
        if (in.has(ir::Attr::Swizzle)) plain.set(ir::Attr::Swizzle, in.attr(ir::Attr::Swizzle));
        const std::string call = (fp8 ? "iron_tile_ldmatrix8(" : "iron_tile_ldmatrix" + sfx + "(") + reg + ", &" + arr + "[" +
                                 tile_load_index(plain, inner_off, stride, "iron_tile_ldm_row" + sfx + "()",
                                                 (fp8 ? "iron_tile_ldm8_col" : "iron_tile_ldm_col") + sfx + "()", outer_off) +
                                 "]);";
        // Offset and stride provably multiples of 16 bytes (the arithmetic computing them,
        // known_pow2) in an array declared 16-byte aligned: ldmatrix with no run-time check.
        const uint32_t align_log2 = fp8 ? 4 : 3;
        static_ldm = s.k.insts[in.operands[0]].attr(ir::Attr::Align) >= 16 && known_pow2(s.k, in.operands[1], 0) >= align_log2 &&
                     known_pow2(s.k, in.operands[2], 0) >= align_log2;
        lines.push_back("#if IRON_TILE_LDMATRIX");
        if (static_ldm) {
          lines.push_back(call);
          lines.push_back("#else");
        } else {
          lines.push_back("if (((" + off + " | " + stride + ") & " + (fp8 ? "15u" : "7u") + ") == 0u && (iron_tile_smem(" + arr +
                          ") & 15u) == 0u) {");
          lines.push_back("  " + call);
          lines.push_back("} else");
          lines.push_back("#endif");
        }
      }
      // fp8 fragments (16x32 A, 32x16 B) have their own element walk and coordinates.
      const std::string ld = fp8 ? "IRON_TILE_LD8_" : "IRON_TILE_LD_";
      const std::string coord = "iron_tile_coord_" + role + (fp8 ? "8" : "");
      if (fp8) s.helpers.insert(elem_suffix(elem));  // iron_tile_set packs the bits
      lines.push_back("{");
      lines.push_back("  for (" + U + " i = " + ld + "FIRST; i < " + ld + "END; i += " + ld + "STEP) {");
      lines.push_back("    " + U + " r, c;");
      lines.push_back("    " + coord + "(i, r, c);");
      lines.push_back("    iron_tile_set(" + reg + ", i, " + v + ");");
      lines.push_back("  }");
      lines.push_back("}");
      if (static_ldm) lines.push_back("#endif");
      lines.push_back("iron_tile_finish(" + reg + ");");
      return;
    }
    case ir::Op::TileWgMma: case ir::Op::TileWgMmaRs: {
      // wgmma where the prelude defines IRON_TILE_WGMMA 1 (sm_90a); otherwise each warp loads its
      // 16 rows of A (tile_wg_mma; tile_wg_mma_rs has them in its fragment) and the B through the
      // same swizzle and runs the strategy's 16x16x16 product (docs/dsl.md "Warpgroup tiles").
      const bool rs = in.op == ir::Op::TileWgMmaRs;
      const ir::Inst& ba = s.k.insts[in.operands[rs ? 1 : 2]];
      const ir::Inst& aa = rs ? ba : s.k.insts[in.operands[0]];
      const DType elem = s.concrete(ba.type);
      const bool fp8 = is_fp8(elem) && !rs;
      if ((elem != DType::F16 && elem != DType::BF16 && !fp8) || s.concrete(rs ? s.k.insts[in.operands[0]].type : aa.type) != elem)
        return s.unsupported(in, d.name(), std::string(ir::mnemonic(in.op)) + " on " + dtype_name(elem) +
                                               " (f16 or bf16; f8e4m3 or f8e5m2 with A from threadgroup memory)");
      if (fp8) s.helpers.insert(elem_suffix(elem));  // the composed path's iron_tile_set packs the bits
      const int64_t code = in.attr(ir::Attr::Swizzle);
      const std::string S = std::to_string(ir::wgmma_row_elems(code)) + "u";
      const std::string sfx = elem_suffix(elem), an = d.tg_name(s.k, aa), bn = d.tg_name(s.k, ba);
      const std::string b_off = a[rs ? 2 : 3], acc = a[rs ? 3 : 4];
      // A warpgroup accumulator 16 x N: one m64nNkK (wgmma; K 16, or 32 for fp8), or N / 16
      // products of 16 x 16 x K (elsewhere).
      const uint32_t N = in.type.n();
      const std::string wsfx = N > 16 ? "_n" + std::to_string(N) : "";
      // Issued (async): the wgmma runs on the result's registers in place, a copy of the
      // accumulator's (the compiler keeps them one set of registers along a chain).
      const bool async = in.attr(ir::Attr::Async) == 1;
      lines.push_back(tile_type(s, in.type) + " " + reg + (async ? " = " + acc : std::string()) + ";");
      lines.push_back("#if IRON_TILE_WGMMA");
      if (async)
        lines.push_back("iron_tile_wgmma_async_" + std::string(rs ? "rs_" : "") + sfx + "_" + std::to_string(code) + wsfx + "(" +
                        (rs ? a[0] : "iron_tile_smem(&" + an + "[" + a[1] + "])") + ", iron_tile_smem(&" + bn + "[" + b_off + "]), " +
                        reg + ");");
      else if (rs)
        lines.push_back(reg + " = iron_tile_wgmma_rs_" + sfx + "_" + std::to_string(code) + wsfx + "(" + a[0] + ", iron_tile_smem(&" +
                        bn + "[" + b_off + "]), " + acc + ");");
      else
        lines.push_back(reg + " = iron_tile_wgmma_" + sfx + "_" + std::to_string(code) + wsfx + "(iron_tile_smem(&" + an + "[" + a[1] +
                        "]), iron_tile_smem(&" + bn + "[" + b_off + "]), " + acc + ");");
      lines.push_back("#else");
      lines.push_back("{");
      lines.push_back("  const " + U + " iron_wq = (iron_flat_local_id() >> 5) & 3u;");
      if (rs) lines.push_back("  (void)iron_wq;");
      if (N > 16) lines.push_back("  " + reg + " = " + acc + ";");
      std::string ind = "  ";
      for (int o = rs ? 1 : 0; o < 2; ++o) {
        const ir::Inst& arr = o == 0 ? aa : ba;
        const std::string f = o == 0 ? "iron_wa" : "iron_wb";
        if (o == 1 && N > 16) {
          // B's columns 16 nb .. 16 nb + 15, one 16 x 16 product per block of the accumulator.
          lines.push_back("#pragma unroll");
          lines.push_back("  for (" + U + " iron_nb = 0u; iron_nb < " + std::to_string(N / 16) + "u; ++iron_nb) {");
          ind = "    ";
        }
        // A (r, c): row 16q + r of the warpgroup's row-major A; B (r, c) = (k, n), column-major.
        const std::string at = o == 0 ? tile_load_index(in, a[1], S, "(16u * iron_wq + r)", "c")
                                      : tile_load_index(in, b_off, S, N > 16 ? "(16u * iron_nb + c)" : "c", "r");
        const std::string v = d.cast(s, in, DType::F32, elem, d.tg_load(s, s.concrete(arr.type), (o == 0 ? an : bn) + "[" + at + "]"));
        // fp8 fragments (16 x 32 A, 32 x 16 B) have their own element walk and coordinates.
        const std::string ld = fp8 ? "IRON_TILE_LD8_" : "IRON_TILE_LD_";
        lines.push_back(ind + "iron_tile_" + std::string(o == 0 ? "a_" : "b_") + sfx + " " + f + " = {};");
        lines.push_back(ind + "for (" + U + " i = " + ld + "FIRST; i < " + ld + "END; i += " + ld + "STEP) {");
        lines.push_back(ind + "  " + U + " r, c;");
        lines.push_back(ind + "  iron_tile_coord_" + std::string(o == 0 ? "a" : "b") + (fp8 ? "8" : "") + "(i, r, c);");
        lines.push_back(ind + "  iron_tile_set(" + f + ", i, " + v + ");");
        lines.push_back(ind + "}");
        lines.push_back(ind + "iron_tile_finish(" + f + ");");
      }
      const std::string fa = rs ? a[0] : std::string("iron_wa");
      if (N > 16) {
        lines.push_back("    " + reg + ".t[iron_nb] = iron_tile_mma(" + fa + ", iron_wb, " + reg + ".t[iron_nb]);");
        lines.push_back("  }");
      } else {
        lines.push_back("  " + reg + " = iron_tile_mma(" + fa + ", iron_wb, " + acc + ");");
      }
      lines.push_back("}");
      lines.push_back("#endif");
      return;
    }
    case ir::Op::WgFence: case ir::Op::WgCommit: case ir::Op::WgWait:
      // wgmma's own group statements where products are issued (sm_90a); the composed products
      // elsewhere are complete when they return, so there is nothing to order or wait for.
      lines.push_back("#if IRON_TILE_WGMMA");
      lines.push_back(in.op == ir::Op::WgFence    ? "asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");"
                      : in.op == ir::Op::WgCommit ? "asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");"
                                                  : "asm volatile(\"wgmma.wait_group.sync.aligned " +
                                                        std::to_string(in.attr(ir::Attr::Count)) + ";\\n\" ::: \"memory\");");
      lines.push_back("#endif");
      return;
    case ir::Op::TileStore: case ir::Op::TileTgStore: {
      const bool tg = in.op == ir::Op::TileTgStore;
      // A warpgroup accumulator stores block by block: columns 16 nb .. 16 nb + 15 from t[nb].
      const bool w = wide(in.operands[tg ? 1 : 0]);
      const std::string frag = a[tg ? 1 : 0] + (w ? ".t[iron_nb]" : ""), off = a[tg ? 2 : 1], stride = a[tg ? 3 : 2];
      const std::string idx = "(" + off + (w ? " + 16u * iron_nb" : "") + " + r * " + stride + " + c)";
      const std::string v = "iron_tile_store_get(" + frag + ", i)";
      std::string write;
      if (!tg) {
        write = d.store(s, s.k.params[in.param()], idx, v);
      } else {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string elem = d.tg_name(s.k, alloc) + "[" + idx + "]";
        write = s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_store(elem, v)
                                                           : d.tg_store(s, s.concrete(alloc.type), elem, v);
      }
      std::vector<std::string> body = {
          "iron_tile_store_begin(" + frag + ");",
          "for (" + U + " i = IRON_TILE_ST_FIRST; i < IRON_TILE_ST_END; i += IRON_TILE_ST_STEP) {",
          "  " + U + " r, c;",
          "  iron_tile_coord_st(i, r, c);",
          "  " + write + ";",
          "}",
          "iron_tile_store_end();"};
      if (w) {
        lines.push_back("#pragma unroll");
        lines.push_back("for (" + U + " iron_nb = 0u; iron_nb < " + std::to_string(s.k.insts[in.operands[tg ? 1 : 0]].type.n() / 16) +
                        "u; ++iron_nb) {");
      }
      for (const std::string& l : body) lines.push_back((w ? "  " : "") + l);
      if (w) lines.push_back("}");
      return;
    }
    default: s.unsupported(in, d.name(), std::string("'") + ir::mnemonic(in.op) + "' as a tile op"); return;
  }
}

// glsl_tile_slots: the default of the OpSpecConstant decorated SpecId kTileSlotsSpec.
uint32_t glsl_tile_slots(const uint32_t* words, size_t count) {
  constexpr uint32_t kOpDecorate = 71, kDecorationSpecId = 1, kOpSpecConstant = 50;
  uint32_t target = 0;
  bool found = false;
  for (size_t i = 5; i < count;) {
    const uint32_t len = words[i] >> 16, op = words[i] & 0xffffu;
    if (len == 0 || i + len > count) return 0;
    if (op == kOpDecorate && len >= 4 && words[i + 2] == kDecorationSpecId && words[i + 3] == kTileSlotsSpec) {
      target = words[i + 1];
      found = true;
    }
    if (op == kOpSpecConstant && len >= 4 && found && words[i + 2] == target) return words[i + 3];
    i += len;
  }
  return 0;
}

}  // namespace iron::codegen
