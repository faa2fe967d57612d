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
//             its 8 A, 8 B and 8 accumulator elements of the PTX fragment layout directly.
// GLSL has the software path only: f64 sums where the device enables shaderFloat64
// (EmitOptions::tile_f64), else f32 sums of the exact f32 products.
#include <cstdlib>
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
  }
  return "?";
}

bool parse_cuda_mma(std::string_view s, CudaMma& out) {
  for (CudaMma m : {CudaMma::Auto, CudaMma::Software, CudaMma::Wmma, CudaMma::MmaSync})
    if (s == cuda_mma_name(m)) {
      out = m;
      return true;
    }
  return false;
}

CudaMma cuda_mma_from_env() {
  CudaMma m = CudaMma::Auto;
  if (const char* v = std::getenv("IRON_CUDA_MMA"); v && *v && !parse_cuda_mma(v, m))
    throw Error(std::string("IRON_CUDA_MMA=") + v + " names no MMA strategy (software, wmma, mma or auto)");
  return m;
}

namespace {

const char* elem_suffix(DType t) { return t == DType::BF16 ? "bf16" : "f16"; }

std::string role_name(FragRole r) { return r == FragRole::A ? "a" : r == FragRole::B ? "b" : "acc"; }

// The f16/bf16 element types the kernel's A and B fragments use (T resolved).
void input_elems(const EmitState& s, bool& f16, bool& bf16) {
  f16 = bf16 = false;
  ir::walk(s.k, [&](ir::Id id) {
    const Type t = s.k.insts[id].type;
    if (!t.is_fragment() || t.role() == FragRole::Acc) return;
    (s.concrete(t) == DType::BF16 ? bf16 : f16) = true;
  });
}

// --- CUDA preludes ---------------------------------------------------------------------------

const char* const kCudaCoordsWhole =
    "__device__ __forceinline__ void iron_tile_coord_a(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }\n"
    "__device__ __forceinline__ void iron_tile_coord_b(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }\n"
    "__device__ __forceinline__ void iron_tile_coord_st(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }\n";

std::string cuda_software(bool f16, bool bf16) {
  std::string out =
      "struct iron_tile_acc { float x[256]; };\n"
      "#define IRON_TILE_LD_FIRST 0u\n#define IRON_TILE_LD_END 256u\n#define IRON_TILE_LD_STEP 1u\n"
      "#define IRON_TILE_ST_FIRST (iron_flat_local_id() & 31u)\n#define IRON_TILE_ST_END 256u\n"
      "#define IRON_TILE_ST_STEP 32u\n";
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
  return out;
}

std::string cuda_wmma(bool f16, bool bf16) {
  std::string out =
      "#include <mma.h>\n"
      "__shared__ __align__(32) float iron_tile_scratch[32 * 256];\n"
      "__device__ __forceinline__ float* iron_tile_warp_scratch() {\n"
      "  return iron_tile_scratch + (iron_flat_local_id() >> 5) * 256u;\n}\n"
      "struct iron_tile_acc { nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> f; };\n"
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
std::string cuda_mma(bool f16, bool bf16) {
  std::string out =
      "struct iron_tile_acc { float x[8]; };\n"
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
  return out;
}

// --- GLSL prelude ----------------------------------------------------------------------------

// Straight-line code with constant indices only: a GPU compiler keeps each fragment element in
// a register, where a loop indexing a 256-element private array would be lowered to memory (or,
// on lavapipe, to a 256-way branch per access, minutes of compile time).
std::string glsl_software(const EmitState& s, bool f16, bool bf16) {
  const bool f64 = s.tile_f64;  // the device enabled shaderFloat64
  std::string out = "struct iron_tile_acc { float x[256]; };\niron_tile_acc iron_tile_fill(float v) {\n  return iron_tile_acc(float[256](";
  for (int e = 0; e < 256; ++e) out += e ? ", v" : "v";
  out += "));\n}\n";
  for (int el = 0; el < 2; ++el) {
    if (!(el == 0 ? f16 : bf16)) continue;
    const std::string sfx = el == 0 ? "f16" : "bf16";
    out += "struct iron_tile_a_" + sfx + " { float x[256]; };\n";
    out += "struct iron_tile_b_" + sfx + " { float x[256]; };\n";
    const std::string acc = f64 ? "double" : "float";
    out += "iron_tile_acc iron_tile_mma(iron_tile_a_" + sfx + " a, iron_tile_b_" + sfx + " b, iron_tile_acc c) {\n"
           "  iron_tile_acc d;\n";
    // The sum runs in k order from c; `precise` keeps the order and the single final rounding.
    for (int e = 0; e < 256; ++e) {
      const int i = e / 16, j = e % 16;
      std::string sum = acc + "(c.x[" + std::to_string(e) + "])";
      for (int kk = 0; kk < 16; ++kk)
        sum = "(" + sum + " + " + acc + "(a.x[" + std::to_string(i * 16 + kk) + "]) * " + acc + "(b.x[" +
              std::to_string(kk * 16 + j) + "]))";
      out += "  { precise " + acc + " s = " + sum + "; d.x[" + std::to_string(e) + "] = float(s); }\n";
    }
    out += "  return d;\n}\n";
  }
  return out;
}

}  // namespace

std::string tile_type(const EmitState& s, Type t) {
  if (t.role() == FragRole::Acc) return "iron_tile_acc";
  return "iron_tile_" + role_name(t.role()) + "_" + elem_suffix(s.concrete(t));
}

std::string tile_prelude(const EmitState& s, bool cuda) {
  bool uses = false;
  ir::walk(s.k, [&](ir::Id id) { uses = uses || s.k.insts[id].type.is_fragment(); });
  if (!uses) return {};
  bool f16 = false, bf16 = false;
  input_elems(s, f16, bf16);
  if (!cuda) return glsl_software(s, f16, bf16);
  std::string out = "// Cooperative tiles: MmaStrategy " + std::string(cuda_mma_name(s.cuda_mma)) + "\n";
  // wmma takes f16 from sm_70 and bf16 from sm_80; mma.sync m16n8k16 takes both from sm_80.
  const std::string wmma_arch = bf16 ? "800" : "700";
  switch (s.cuda_mma) {
    case CudaMma::Software: return out + cuda_software(f16, bf16);
    case CudaMma::Wmma:
      return out + "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < " + wmma_arch +
             "\n#error \"IRON_CUDA_MMA=wmma needs sm_" + wmma_arch.substr(0, 2) + " or newer for these tiles\"\n#endif\n" +
             cuda_wmma(f16, bf16);
    case CudaMma::MmaSync:
      return out + "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\n"
                   "#error \"IRON_CUDA_MMA=mma needs sm_80 or newer\"\n#endif\n" +
             cuda_mma(f16, bf16);
    case CudaMma::Auto: break;
  }
  // Chosen by the architecture NVRTC compiles for: mma.sync on sm_80+, wmma where it takes the
  // kernel's input types, the software path below that.
  return out + "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n" + cuda_mma(f16, bf16) +
         "#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= " + wmma_arch + "\n" + cuda_wmma(f16, bf16) + "#else\n" +
         cuda_software(f16, bf16) + "#endif\n";
}

void tile_op(EmitState& s, const Dialect& d, ir::Id id, const std::vector<std::string>& a,
             std::vector<std::string>& lines, std::string& value) {
  const ir::Inst& in = s.k.insts[id];
  const bool cuda = std::string(d.name()) == "CUDA";
  const std::string U = d.reg_type(DType::U32);
  const std::string reg = "v" + std::to_string(id);
  ir::Inst lane_inst;
  lane_inst.op = ir::Op::LaneId;
  ir::Inst width_inst;
  width_inst.op = ir::Op::LaneWidth;
  switch (in.op) {
    case ir::Op::TileFill: value = "iron_tile_fill(" + a[0] + ")"; return;
    case ir::Op::TileMma: value = "iron_tile_mma(" + a[0] + ", " + a[1] + ", " + a[2] + ")"; return;
    case ir::Op::TileGet: {
      const std::string r = std::to_string(in.attr(ir::Attr::Row)), c = std::to_string(in.attr(ir::Attr::Col));
      value = cuda ? "iron_tile_get(" + a[0] + ", " + r + "u, " + c + "u)"
                   : a[0] + ".x[" + std::to_string(in.attr(ir::Attr::Row) * 16 + in.attr(ir::Attr::Col)) + "]";
      return;
    }
    case ir::Op::TileLoad: case ir::Op::TileTgLoad: {
      const bool tg = in.op == ir::Op::TileTgLoad;
      const std::string off = a[tg ? 1 : 0], stride = a[tg ? 2 : 1];
      const DType elem = s.concrete(in.type);
      // A threadgroup element reads as a TgLoad does: a 16-bit array holds 16-bit values (widened
      // exactly), an array f32 atomics act on holds words.
      auto read = [&](const std::string& idx) {
        if (!tg) return d.load(s, s.k.params[in.param()], idx);
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string at = d.tg_name(s.k, alloc) + "[" + idx + "]";
        return s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_load(at) : d.tg_load(s, s.concrete(alloc.type), at);
      };
      const std::string role = in.type.role() == FragRole::A ? "a" : "b";
      const std::string idx = "(" + off + " + r * " + stride + " + c)";
      // Every element is rounded to the input type, as the interpreter rounds it (a no-op on values
      // that already are of it: 16-bit threadgroup arrays hold 16-bit values).
      const std::string v = d.cast(s, in, DType::F32, elem, read(idx));
      lines.push_back(tile_type(s, in.type) + " " + reg + (cuda ? " = {};" : ";"));
      if (cuda) {
        lines.push_back("for (" + U + " i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {");
        lines.push_back("  " + U + " r, c;");
        lines.push_back("  iron_tile_coord_" + role + "(i, r, c);");
        lines.push_back("  iron_tile_set(" + reg + ", i, " + v + ");");
        lines.push_back("}");
        lines.push_back("iron_tile_finish(" + reg + ");");
      } else {
        // Every element at a constant index (see glsl_software).
        for (int e = 0; e < 256; ++e) {
          const std::string at = "(" + off + " + " + std::to_string(e / 16) + "u * " + stride + " + " +
                                 std::to_string(e % 16) + "u)";
          // A buffer of the input type holds exact values; threadgroup reads are rounded as above.
          lines.push_back(reg + ".x[" + std::to_string(e) + "] = " + (tg ? d.cast(s, in, DType::F32, elem, read(at)) : read(at)) + ";");
        }
      }
      return;
    }
    case ir::Op::TileStore: case ir::Op::TileTgStore: {
      const bool tg = in.op == ir::Op::TileTgStore;
      const std::string frag = a[tg ? 1 : 0], off = a[tg ? 2 : 1], stride = a[tg ? 3 : 2];
      const std::string idx = "(" + off + " + r * " + stride + " + c)";
      auto write_at = [&](const std::string& at, const std::string& v) {
        if (!tg) return d.store(s, s.k.params[in.param()], at, v);
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string elem = d.tg_name(s.k, alloc) + "[" + at + "]";
        return s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_store(elem, v)
                                                          : d.tg_store(s, s.concrete(alloc.type), elem, v);
      };
      auto write = [&](const std::string& v) { return write_at(idx, v); };
      if (cuda) {
        lines.push_back("iron_tile_store_begin(" + frag + ");");
        lines.push_back("for (" + U + " i = IRON_TILE_ST_FIRST; i < IRON_TILE_ST_END; i += IRON_TILE_ST_STEP) {");
        lines.push_back("  " + U + " r, c;");
        lines.push_back("  iron_tile_coord_st(i, r, c);");
        lines.push_back("  " + write("iron_tile_store_get(" + frag + ", i)") + ";");
        lines.push_back("}");
        lines.push_back("iron_tile_store_end();");
      } else {
        // Every lane holds the whole tile; lane l of the subgroup writes the elements e with
        // e mod W = l (W, the subgroup size, is a power of two), each at a constant index.
        const std::string lane = "iron_tile_lane_" + std::to_string(id);
        lines.push_back(U + " " + lane + " = " + d.builtin(s, lane_inst) + ";");
        lines.push_back(U + " " + lane + "_mask = " + d.builtin(s, width_inst) + " - 1u;");
        for (int e = 0; e < 256; ++e) {
          const std::string at = "(" + off + " + " + std::to_string(e / 16) + "u * " + stride + " + " +
                                 std::to_string(e % 16) + "u)";
          lines.push_back("if ((" + std::to_string(e) + "u & " + lane + "_mask) == " + lane + ") " +
                          write_at(at, frag + ".x[" + std::to_string(e) + "]") + ";");
        }
      }
      return;
    }
    default: s.unsupported(in, d.name(), std::string("'") + ir::mnemonic(in.op) + "' as a tile op"); return;
  }
}

}  // namespace iron::codegen
