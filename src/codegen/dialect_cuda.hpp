// The CUDA C++ dialect (compiled by NVRTC), in a header so that a dialect of the same language
// family (HIP: dialect_hip.cpp) is this class plus the overrides where its spelling differs.
// 16-bit floats are stored as __half / __nv_bfloat16 and computed in f32 registers; lane
// operations are shuffle butterflies over the profile's lane width (32 on NVIDIA), which the
// dispatch validator guarantees are full (threadgroup size a multiple of the lane width).
#pragma once

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cmath>
#include <set>

#include "codegen/c_like.hpp"
#include "core/numeric.hpp"

namespace iron::codegen {
namespace cuda_detail {

// The fp8 helpers of fp8_math.inc as strings, renamed to CUDA's spellings by cuda_text().
#define IRON_FP8_HELPER(name, ...) const char* const kFp8_##name = #__VA_ARGS__;
#include "codegen/fp8_math.inc"
#undef IRON_FP8_HELPER

// GLSL's uint and bit casts in CUDA's words; each function becomes a __device__ one.
inline std::string cuda_text(std::string text) {
  auto replace_all = [&](const std::string& from, const std::string& to, bool whole_word) {
    size_t at = 0;
    while ((at = text.find(from, at)) != std::string::npos) {
      auto word = [&](size_t i) { return i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'); };
      if (whole_word && ((at > 0 && word(at - 1)) || word(at + from.size()))) {
        at += from.size();
        continue;
      }
      text.replace(at, from.size(), to);
      at += to.size();
    }
  };
  replace_all("floatBitsToUint", "__float_as_uint", false);
  replace_all("uintBitsToFloat", "__uint_as_float", false);
  replace_all("uint", "unsigned", true);
  replace_all("unsigned iron_", "\n__device__ __forceinline__ unsigned iron_", false);
  replace_all("float iron_", "\n__device__ __forceinline__ float iron_", false);
  return text + "\n";
}

inline const char* axis_name(int64_t a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

}  // namespace cuda_detail

class CudaDialect : public Dialect {
 public:
  CudaDialect() : Dialect(cuda_spelling()) {}
  explicit CudaDialect(DialectSpelling sp) : Dialect(std::move(sp)) {}
  // CUDA C++'s spellings (dialect_cuda.cpp): a dialect of the family starts from these.
  static DialectSpelling cuda_spelling();

  // --- What a dialect of the family overrides (HIP: dialect_hip.cpp) -------------------------
  // The includes for the kernel's types.
  virtual std::string headers(const EmitState& s) const {
    std::string out;
    if (s.uses_f16) out += "#include <cuda_fp16.h>\n";
    if (s.uses_bf16) out += "#include <cuda_bf16.h>\n";
    return out;
  }
  // Lane-group primitives over the profile's lane width W: value v from lane src, from lane
  // l ^ o, from lane l - d (the lane's own value where l < d); the u32 ballot of the lane's
  // 32-lane half (docs/semantics.md); any / all as an int. CUDA: the *_sync forms with the full mask.
  virtual std::string shfl(const EmitState& s, const std::string& v, const std::string& src) const {
    return "__shfl_sync(" + s.profile.full_lane_mask() + ", " + v + ", " + src + ")";
  }
  virtual std::string shfl_xor(const EmitState& s, const std::string& v, const std::string& o) const {
    return "__shfl_xor_sync(" + s.profile.full_lane_mask() + ", " + v + ", " + o + ")";
  }
  virtual std::string shfl_up(const EmitState& s, const std::string& v, const std::string& d) const {
    return "__shfl_up_sync(" + s.profile.full_lane_mask() + ", " + v + ", " + d + ")";
  }
  virtual std::string ballot(const EmitState& s, const std::string& c) const {
    return "__ballot_sync(" + s.profile.full_lane_mask() + ", " + c + ")";
  }
  virtual std::string vote(const EmitState& s, bool all, const std::string& c) const {
    return std::string(all ? "__all_sync(" : "__any_sync(") + s.profile.full_lane_mask() + ", " + c + ")";
  }
  static uint32_t W(const EmitState& s) { return s.profile.lane_width; }
  // The name of one of CUDA's bf16 types or functions (cuda_bf16.h) in this language: HIP 5
  // has no such header and uses Iron's own (dialect_hip.cpp).
  virtual std::string bf16_name(const char* cuda) const { return cuda; }

  // Fixed-width register types (DialectSpelling): char 8, short 16, int 32, long long 64 bits.
  virtual std::string storage_type(DType t) const {
    switch (t) {
      case DType::F16: return "__half";
      case DType::BF16: return bf16_name("__nv_bfloat16");
      case DType::F8E4M3: case DType::F8E5M2: return "unsigned char";  // the fp8 bits
      default: return reg_type(t);
    }
  }

  // A blob parameter's by-value structure type and the kernel parameter holding it; the word
  // pointer param_name(p) reads it. A TMA copy takes the map's address: &cuda_blob_param(p).
  static std::string blob_struct(const ir::Param& p) {
    return p.tensor_map ? std::string("iron_tensor_map")
                        : "iron_blob_" + std::to_string(p.blob_bytes) + "_" + std::to_string(p.align);
  }
  std::string cuda_blob_param(const ir::Param& p) const { return param_name(p) + "_value"; }
  static std::string blob_structs(const ir::Kernel& k) {
    std::set<std::string> seen;
    std::string out;
    for (const ir::Param& p : k.params) {
      if (p.kind != ir::ParamKind::Blob || !seen.insert(blob_struct(p)).second) continue;
      out += p.tensor_map ? "struct __align__(64) iron_tensor_map { unsigned long long opaque[16]; };  // CUtensorMap\n"
                          : "struct __align__(" + std::to_string(p.align) + ") " + blob_struct(p) + " { unsigned w[" +
                                std::to_string(p.blob_bytes / 4) + "]; };\n";
    }
    return out;
  }

  void begin(EmitState& s, std::string& out) const override {
    const ir::Kernel& k = s.k;
    out += "// Iron kernel " + k.name + " (" + instantiation_name(s.dtype) + "), " + name() + ". Generated: do not edit.\n";
    out += headers(s);
    if (s.uses_lane_ops) s.helpers.insert("fmax");  // lane_max of f32
    if (s.helpers.count("lane_min")) s.helpers.insert("fmin");
    // Atomic helpers call iron_fmin/iron_fmax: print them after every other helper.
    for (const std::string& h : s.helpers)
      if (h.rfind("atomic_", 0) != 0) out += helper(h);
    for (const std::string& h : s.helpers)
      if (h.rfind("atomic_", 0) == 0) out += helper(h);
    if (s.uses_lane_ops) {
      // Built for one threadgroup shape: its sizes are constants here too.
      const bool fixed = s.threadgroup[0] != 0;
      const std::string bx = fixed ? std::to_string(s.threadgroup[0]) + "u" : "blockDim.x";
      const std::string by = fixed ? std::to_string(s.threadgroup[1]) + "u" : "blockDim.y";
      out += "__device__ __forceinline__ unsigned iron_flat_local_id() {\n"
             "  return threadIdx.x + " + bx + " * (threadIdx.y + " + by + " * threadIdx.z);\n"
             "}\n";
      // Butterflies in the interpreter's order: offsets W/2 .. 1, v[l] op v[l ^ offset].
      const std::string half = std::to_string(s.profile.lane_width / 2);
      const char* types[] = {"float", "int", "unsigned"};
      for (const char* t : types) {
        std::string ty = t;
        std::string mx = ty == "float" ? "iron_fmax" : "max";
        out += "__device__ __forceinline__ " + ty + " iron_lane_sum(" + ty + " v) {\n"
               "  for (int o = " + half + "; o > 0; o >>= 1) v += " + shfl_xor(s, "v", "o") + ";\n  return v;\n}\n";
        out += "__device__ __forceinline__ " + ty + " iron_lane_max(" + ty + " v) {\n"
               "  for (int o = " + half + "; o > 0; o >>= 1) v = " + mx + "(v, " + shfl_xor(s, "v", "o") + ");\n"
               "  return v;\n}\n";
      }
      out += lane_prelude(s);
    }
    out += tile_prelude(s, true);
    // Built for one threadgroup shape: the compiler may budget registers for exactly that many
    // threads (and group_size is a constant, see builtin()).
    const uint64_t tg_threads = uint64_t(s.threadgroup[0]) * s.threadgroup[1] * s.threadgroup[2];
    out += blob_structs(k);
    out += "extern \"C\" __global__ void ";
    // setmaxnreg moves registers between warpgroups only under a cap at entry: one block per
    // multiprocessor, so the compiler budgets the whole register file for it.
    bool setmaxnreg = false;
    ir::walk(k, [&](ir::Id id) {
      setmaxnreg = setmaxnreg || k.insts[id].op == ir::Op::SetMaxNRegInc || k.insts[id].op == ir::Op::SetMaxNRegDec;
    });
    if (s.threadgroup[0] != 0)
      out += "__launch_bounds__(" + std::to_string(tg_threads) + (setmaxnreg ? ", 1" : "") + ") ";
    out += entry_name(k, s.dtype) + "(";
    for (size_t i = 0; i < k.params.size(); ++i) {
      const ir::Param& p = k.params[i];
      DType c = s.concrete(p.dtype);
      out += i ? ", " : "";
      if (p.kind == ir::ParamKind::Buffer)
        // A parameter declared to alias another (aliases(a, b)) must not promise __restrict__.
        out += std::string(p.access == ir::Access::Read ? "const " : "") + storage_type(c) +
               (ir::is_aliased(k, uint32_t(i)) ? "* " : "* __restrict__ ") + param_name(p);
      else if (p.kind == ir::ParamKind::Blob)
        // A by-value structure stays in the kernel's parameter space (__grid_constant__), so its
        // address is valid for the whole grid (what a TMA copy takes: cuda_blob_address).
        out += "const __grid_constant__ " + blob_struct(p) + " " + cuda_blob_param(p);
      else
        out += reg_type(c) + " " + param_name(p);
    }
    out += ") {\n";
    // A blob's words, read by load like a buffer's elements.
    for (const ir::Param& p : k.params)
      if (p.kind == ir::ParamKind::Blob)
        out += "  const unsigned* " + param_name(p) + " = reinterpret_cast<const unsigned*>(&" + cuda_blob_param(p) + ");\n";
    // A launch with a programmatic dependency waits here for the grid it depends on
    // (cuda_waits_for_grid_dependency: compiled in for sm_90 and later, so the source stays the
    // same for every arch); HIP has no such launch.
    if (s.profile.target == Target::Cuda)
      out += "#if __CUDA_ARCH__ >= 900\n  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n#endif\n";
    declare_threadgroup(s, out);
  }

  // Threadgroup aliases: typed pointers into the bytes of the arrays they view.
  void declare_aliases(EmitState& s, std::string& out) const {
    const ir::Kernel& k = s.k;
    for (ir::Id id : ir::threadgroup_aliases(k)) {
      const ir::Inst& in = k.insts[id];
      const ir::Id base = ir::tg_alias_base(k, in);
      if (base == ir::kNone) continue;
      const std::string ty = tg_storage(s.concrete(in.type));
      out += "  " + ty + "* const " + tg_name(k, in) + " = reinterpret_cast<" + ty + "*>(reinterpret_cast<unsigned char*>(" +
             tg_name(k, k.insts[base]) + ") + " + std::to_string(in.attr(ir::Attr::Offset)) + "u);\n";
    }
  }

  // Threadgroup arrays at their real width (cuda_dynamic_shared says where they live).
  void declare_threadgroup(EmitState& s, std::string& out) const {
    const ir::Kernel& k = s.k;
    const std::vector<ir::Id> layout = ir::threadgroup_layout(k);
    if (layout.empty()) return;
    if (!cuda_dynamic_shared(k, s.dtype)) {
      for (ir::Id id : layout) {
        const ir::Inst& in = k.insts[id];
        const uint64_t align = ir::tg_alignment(in, s.dtype);
        out += "  __shared__ " + (align > ir::tg_elem_bytes(in, s.dtype) ? "__align__(" + std::to_string(align) + ") " : std::string()) +
               tg_storage(s.concrete(in.type)) + " " + tg_name(k, in) + "[" + std::to_string(in.attr(ir::Attr::Count)) + "];\n";
      }
      declare_aliases(s, out);
      return;
    }
    // One region; byte offsets follow ir::threadgroup_bytes. Fixed-size arrays come first, so
    // their offsets are constants; the offset after an array sized at dispatch is computed from
    // the sizing parameter (the dispatch check has bounded the total, so 32 bits suffice).
    // Aligned to 128 bytes, or more where an array asks for it (a swizzled TMA box: up to 1024).
    uint64_t region_align = 128;
    for (ir::Id id : layout) region_align = std::max<uint64_t>(region_align, ir::tg_alignment(k.insts[id], s.dtype));
    out += "  extern __shared__ __align__(" + std::to_string(region_align) + ") unsigned char iron_tg[];\n";
    uint64_t at = 0;
    bool dynamic = false;
    for (ir::Id id : layout) {
      const ir::Inst& in = k.insts[id];
      const uint64_t align = ir::tg_alignment(in, s.dtype), elem = ir::tg_elem_bytes(in, s.dtype);
      const std::string ty = tg_storage(s.concrete(in.type));
      std::string offset;
      if (!dynamic) {
        at = (at + align - 1) / align * align;
        offset = std::to_string(at) + "u";
      } else {
        out += "  iron_tg_at = (iron_tg_at + " + std::to_string(align - 1) + "u) & ~" + std::to_string(align - 1) + "u;\n";
        offset = "iron_tg_at";
      }
      out += "  " + ty + "* const " + tg_name(k, in) + " = reinterpret_cast<" + ty + "*>(iron_tg + " + offset + ");\n";
      if (!in.has(ir::Attr::CountParam)) {
        at += elem * uint64_t(in.attr(ir::Attr::Count));
        continue;
      }
      const ir::Param& p = k.params[size_t(in.attr(ir::Attr::CountParam))];
      if (!dynamic) out += "  unsigned iron_tg_at = " + offset + ";\n";
      dynamic = true;
      out += "  iron_tg_at += " + std::to_string(elem * uint64_t(in.attr(ir::Attr::Count))) + "u * unsigned(" +
             param_name(p) + ");\n";
    }
    declare_aliases(s, out);
  }

  // cp.async on sm_80+ when both addresses are aligned to the copy's size (16 bytes: .cg, which
  // bypasses L1; 4 or 8: .ca), with the source size min(valid, count) elements so the rest is
  // zero-filled; otherwise, and below sm_80 (and on HIP), a byte copy now, which is complete
  // before any wait.
  bool async_copy(EmitState& s, const std::string& tg, const std::string& dst, const ir::Param& p, const std::string& src,
                  const std::string& valid, int64_t count, size_t elem_bytes,
                  std::vector<std::string>& lines) const override {
    const std::string c = std::to_string(count), bytes = std::to_string(uint64_t(count) * elem_bytes);
    lines.push_back("{");
    lines.push_back("  const unsigned iron_n = (" + valid + " < " + c + "u ? " + valid + " : " + c + "u) * " +
                    std::to_string(elem_bytes) + "u;");
    lines.push_back("  unsigned char* iron_d = (unsigned char*)&" + tg + "[" + dst + "];");
    lines.push_back("  const unsigned char* iron_s = (const unsigned char*)(" + param_name(p) + " + (iron_n ? " + src +
                    " : 0u));");
    const std::string cp = "asm volatile(\"cp.async." + std::string(bytes == "16" ? "cg" : "ca") +
                           ".shared.global [%0], [%1], " + bytes +
                           ", %2;\\n\" :: \"r\"((unsigned)__cvta_generic_to_shared(iron_d)), \"l\"(iron_s), "
                           "\"r\"(iron_n) : \"memory\");";
    if (s.async_copy_aligned) {
      // Both addresses provably aligned (EmitState::async_copy_aligned): no run-time check.
      lines.push_back("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800");
      lines.push_back("  " + cp);
      lines.push_back("#else");
      lines.push_back("  for (unsigned iron_b = 0u; iron_b < " + bytes +
                      "u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;");
      lines.push_back("#endif");
      lines.push_back("}");
      return true;
    }
    lines.push_back("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800");
    lines.push_back("  if ((((unsigned long long)iron_d | (unsigned long long)iron_s) & " +
                    std::to_string(uint64_t(count) * elem_bytes - 1) + "ull) == 0ull) {");
    lines.push_back("    " + cp);
    lines.push_back("  } else");
    lines.push_back("#endif");
    lines.push_back("  {");
    lines.push_back("    for (unsigned iron_b = 0u; iron_b < " + bytes +
                    "u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;");
    lines.push_back("  }");
    lines.push_back("}");
    return true;
  }
  // mbarriers, the copy engine, the proxy fence and setmaxnreg as inline PTX (docs/semantics.md
  // "mbarriers"). sm_90 and newer (try_wait, expect_tx and the bulk copy are Hopper's); setmaxnreg
  // needs the arch-specific sm_90a (or a later "a" target). HIP has none of them.
  bool hopper_op(EmitState& s, const ir::Inst& in, const std::string& bar, const std::string& dst,
                 const std::string& src, const std::string& extra, std::vector<std::string>& lines) const override {
    if (s.profile.target != Target::Cuda) return false;
    const std::string& arch = s.profile.arch;
    int n = 0;
    size_t i = arch.rfind("sm_", 0) == 0 ? 3 : arch.rfind("compute_", 0) == 0 ? 8 : arch.size();
    for (; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) n = n * 10 + (arch[i] - '0');
    const bool arch_specific = !arch.empty() && arch.back() == 'a';
    const char* what = ir::mnemonic(in.op);
    if (n < 90) {
      s.diags.error(in.loc, std::string(what) + " needs CUDA sm_90 or newer; this code is built for " + arch);
      return true;
    }
    const bool setmaxnreg = in.op == ir::Op::SetMaxNRegInc || in.op == ir::Op::SetMaxNRegDec;
    if (setmaxnreg && !arch_specific) {
      s.diags.error(in.loc, std::string(what) + " needs the arch-specific target sm_90a; this code is built for " + arch);
      return true;
    }
    if (setmaxnreg && s.threadgroup[0] == 0) {
      s.diags.error(in.loc, std::string(what) +
                                " takes effect only under a register cap at entry (__launch_bounds__(threads, 1)): build the "
                                "kernel for one threadgroup shape");
      return true;
    }
    const auto smem = [](const std::string& elem) { return "(unsigned)__cvta_generic_to_shared(&" + elem + ")"; };
    switch (in.op) {
      case ir::Op::MbarInit:
        // The init is an ordinary (generic-proxy) write: the fences make it visible to the copy
        // engine (the async proxy) that completes transaction bytes on the barrier, as the CUDA
        // programming guide's TMA example and the PTX memory model ask; the barrier() after the
        // init then publishes it to the other threads.
        lines.push_back("asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: \"r\"(" + smem(bar) + "), \"r\"(" +
                        extra + ") : \"memory\");");
        lines.push_back("asm volatile(\"fence.mbarrier_init.release.cluster;\\nfence.proxy.async.shared::cta;\\n\" ::: \"memory\");");
        return true;
      case ir::Op::MbarArrive:
        lines.push_back("asm volatile(\"{\\n.reg .b64 iron_state;\\nmbarrier.arrive.shared::cta.b64 iron_state, [%0];\\n}\\n\" :: \"r\"(" +
                        smem(bar) + ") : \"memory\");");
        return true;
      case ir::Op::MbarArriveTx:
        lines.push_back("asm volatile(\"{\\n.reg .b64 iron_state;\\nmbarrier.arrive.expect_tx.shared::cta.b64 iron_state, [%0], %1;\\n}\\n\" :: \"r\"(" +
                        smem(bar) + "), \"r\"(" + extra + ") : \"memory\");");
        return true;
      case ir::Op::MbarWait:
        // The unbounded wait: try_wait suspends the thread for a system-dependent time and
        // returns false if the phase has not completed by then; loop until it has.
        lines.push_back("{");
        lines.push_back("  const unsigned iron_bar = " + smem(bar) + ", iron_parity = " + extra + ";");
        lines.push_back("  unsigned iron_done = 0u;");
        lines.push_back("  do {");
        lines.push_back("    asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}\\n\" "
                        ": \"=r\"(iron_done) : \"r\"(iron_bar), \"r\"(iron_parity) : \"memory\");");
        lines.push_back("  } while (!iron_done);");
        lines.push_back("}");
        return true;
      case ir::Op::FenceProxyAsync:
        lines.push_back("asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");");
        return true;
      case ir::Op::SetMaxNRegInc: case ir::Op::SetMaxNRegDec:
        lines.push_back(std::string("asm volatile(\"setmaxnreg.") + (in.op == ir::Op::SetMaxNRegInc ? "inc" : "dec") +
                        ".sync.aligned.u32 " + std::to_string(in.attr(ir::Attr::Count)) + ";\\n\" ::: \"memory\");");
        return true;
      case ir::Op::BulkCopy: {
        const ir::Param& p = s.k.params[in.param()];
        const uint64_t bytes = uint64_t(in.attr(ir::Attr::Count)) * dtype_size(s.concrete(p.dtype));
        lines.push_back("asm volatile(\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], " +
                        std::to_string(bytes) + ", [%2];\\n\" :: \"r\"(" + smem(dst) + "), \"l\"(" + param_name(p) + " + " +
                        src + "), \"r\"(" + smem(bar) + ") : \"memory\");");
        return true;
      }
      case ir::Op::BulkStore: {
        const ir::Param& p = s.k.params[in.param()];
        const uint64_t bytes = uint64_t(in.attr(ir::Attr::Count)) * dtype_size(s.concrete(p.dtype));
        lines.push_back("asm volatile(\"cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], " + std::to_string(bytes) +
                        ";\\n\" :: \"l\"(" + param_name(p) + " + " + src + "), \"r\"(" + smem(dst) + ") : \"memory\");");
        return true;
      }
      case ir::Op::TmaLoad2D: case ir::Op::TmaStore2D: {
        // The map is the kernel's __grid_constant__ parameter: its generic address is what the
        // tensor copies take. Coordinates are signed (column first); `src` is x and `extra` y.
        const std::string map = "reinterpret_cast<unsigned long long>(&" + cuda_blob_param(s.k.params[in.param()]) + ")";
        if (in.op == ir::Op::TmaLoad2D)
          lines.push_back("asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\\n\" "
                          ":: \"r\"(" + smem(dst) + "), \"l\"(" + map + "), \"r\"((int)(" + src + ")), \"r\"((int)(" + extra +
                          ")), \"r\"(" + smem(bar) + ") : \"memory\");");
        else
          lines.push_back("asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\\n\" "
                          ":: \"l\"(" + map + "), \"r\"((int)(" + src + ")), \"r\"((int)(" + extra + ")), \"r\"(" +
                          smem(dst) + ") : \"memory\");");
        return true;
      }
      case ir::Op::BulkCommit:
        lines.push_back("asm volatile(\"cp.async.bulk.commit_group;\\n\" ::: \"memory\");");
        return true;
      case ir::Op::BulkWait:
        lines.push_back("asm volatile(\"cp.async.bulk.wait_group " + std::to_string(in.attr(ir::Attr::Count)) +
                        ";\\n\" ::: \"memory\");");
        return true;
      default: return false;
    }
  }

  void async_commit(std::vector<std::string>& lines) const override {
    lines.push_back("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800");
    lines.push_back("asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");");
    lines.push_back("#endif");
  }
  void async_wait(int64_t pending, std::vector<std::string>& lines) const override {
    lines.push_back("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800");
    lines.push_back("asm volatile(\"cp.async.wait_group " + std::to_string(pending) + ";\\n\" ::: \"memory\");");
    lines.push_back("#endif");
  }

  std::string tg_storage(DType t) const { return t == DType::Bool ? "bool" : storage_type(t); }
  std::string tg_load(EmitState& s, DType t, const std::string& elem) const override {
    switch (t) {
      case DType::F16: return "__half2float(" + elem + ")";
      case DType::BF16: return (bf16_name("__bfloat162float") + "(") + elem + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return "iron_e4m3_to_f32(" + elem + ")";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return "iron_e5m2_to_f32(" + elem + ")";
      default: return elem;
    }
  }
  std::string tg_store(EmitState& s, DType t, const std::string& elem, const std::string& v) const override {
    switch (t) {
      case DType::F16: return elem + " = __float2half_rn(" + v + ")";
      case DType::BF16: return elem + (" = " + bf16_name("__float2bfloat16_rn") + "(") + v + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return elem + " = (unsigned char)iron_f32_to_e4m3(" + v + ")";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return elem + " = (unsigned char)iron_f32_to_e5m2(" + v + ")";
      default: return elem + " = " + v;
    }
  }


  std::string builtin(EmitState& s, const ir::Inst& in) const override {
    std::string a = cuda_detail::axis_name(in.attr(ir::Attr::Axis));
    // Code built for one threadgroup shape: its sizes are constants (what const_fold folds
    // group_size to with the same launch facts; these cover what the pipeline left).
    const bool fixed = s.threadgroup[0] != 0;
    const int64_t ax = in.attr(ir::Attr::Axis);
    const std::string dim = fixed && ax >= 0 && ax <= 2 ? std::to_string(s.threadgroup[ax]) + "u" : "blockDim." + a;
    if (fixed) {
      const uint64_t n = uint64_t(s.threadgroup[0]) * s.threadgroup[1] * s.threadgroup[2];
      if (in.op == ir::Op::NumSimdGroups) return std::to_string((n + W(s) - 1) / W(s)) + "u";
      if (in.op == ir::Op::GroupSize) return dim;
      if (in.op == ir::Op::ThreadId) {
        if (in.type.elem() == DType::U64)
          return "((unsigned long long)blockIdx." + a + " * " + dim + " + threadIdx." + a + ")";
        return "(blockIdx." + a + " * " + dim + " + threadIdx." + a + ")";
      }
    }
    switch (in.op) {
      case ir::Op::ThreadId:
        // thread_id64 (a u64 result): the product in 64 bits, so it never wraps.
        if (in.type.elem() == DType::U64)
          return "((unsigned long long)blockIdx." + a + " * blockDim." + a + " + threadIdx." + a + ")";
        return "(blockIdx." + a + " * blockDim." + a + " + threadIdx." + a + ")";
      case ir::Op::ProgramId: return "blockIdx." + a;
      case ir::Op::LocalId: return "threadIdx." + a;
      case ir::Op::GroupSize: return "blockDim." + a;
      case ir::Op::NumPrograms: return "gridDim." + a;
      case ir::Op::LaneId: return "(iron_flat_local_id() & " + std::to_string(W(s) - 1) + "u)";
      case ir::Op::LaneWidth: return std::to_string(W(s)) + "u";
      case ir::Op::SimdGroupId: return "(iron_flat_local_id() >> " + std::to_string(s.profile.lane_shift()) + ")";
      case ir::Op::NumSimdGroups:
        return "((blockDim.x * blockDim.y * blockDim.z + " + std::to_string(W(s) - 1) + "u) >> " +
               std::to_string(s.profile.lane_shift()) + ")";
      default: s.unsupported(in, name(), std::string("built-in ") + ir::mnemonic(in.op)); return "0";
    }
  }


  std::string load(EmitState& s, const ir::Param& p, const std::string& idx) const override {
    std::string e = param_name(p) + "[" + idx + "]";
    switch (s.concrete(p.dtype)) {
      case DType::F16: return "__half2float(" + e + ")";
      case DType::BF16: return (bf16_name("__bfloat162float") + "(") + e + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return "iron_e4m3_to_f32(" + e + ")";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return "iron_e5m2_to_f32(" + e + ")";
      default: return e;
    }
  }

  std::string store(EmitState& s, const ir::Param& p, const std::string& idx, const std::string& v) const override {
    std::string e = param_name(p) + "[" + idx + "] = ";
    switch (s.concrete(p.dtype)) {
      case DType::F16: return e + "__float2half_rn(" + v + ")";
      case DType::BF16: return e + (bf16_name("__float2bfloat16_rn") + "(") + v + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return e + "(unsigned char)iron_f32_to_e4m3(" + v + ")";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return e + "(unsigned char)iron_f32_to_e5m2(" + v + ")";
      default: return e + v;
    }
  }


  // ops.def's spellings with CUDA's float suffix (floorf, sinf, ..., fabsf: DialectSpelling);
  // here the integer intrinsics and the 16-bit fma.
  std::string math(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const override {
    if (is_integer(t)) {
      switch (in.op) {
        case ir::Op::MulHi:
          return t == DType::I32 ? "__mulhi(" + a[0] + ", " + a[1] + ")" : "__umulhi(" + a[0] + ", " + a[1] + ")";
        case ir::Op::Popcount: return "(" + reg_type(t) + ")__popc((unsigned)(" + a[0] + "))";
        case ir::Op::Clz: return "(" + reg_type(t) + ")__clz((int)(" + a[0] + "))";  // __clz(0) = 32
        default: break;
      }
    }
    // f16 / bf16: one rounding of the exact a * b + c, a value of the dtype: fma.rn.f16 /
    // fma.rn.bf16.
    if (in.op == ir::Op::Fma && (t == DType::F16 || t == DType::BF16)) {
      s.helpers.insert(t == DType::F16 ? "fma_f16" : "fma_bf16");
      s.helpers.insert("fma_odd");
      return std::string(t == DType::F16 ? "iron_fma_f16(" : "iron_fma_bf16(") + a[0] + ", " + a[1] + ", " + a[2] + ")";
    }
    // exp(x) = 2^(x log2 e) on the special-function unit (docs/semantics.md#transcendentals).
    if (in.op == ir::Op::Exp && is_float(t)) {
      s.helpers.insert("exp");
      return "iron_exp(" + a[0] + ")";
    }
    return Dialect::math(s, in, t, a);
  }

  std::string cast(EmitState& s, const ir::Inst&, DType from, DType to, const std::string& x) const override {
    if (to == DType::Bool) return "(" + x + " != 0)";
    if (from == DType::Bool) return is_float(to) ? "(" + x + " ? 1.0f : 0.0f)" : convert(to, x);
    // An integer of any width converts to f32 in one rounding (cvt.rn.f32.s64 for 64 bits).
    std::string as_float = is_float(from) ? x : "(float)(" + x + ")";
    std::string other = cast_new_types(s, from, to, x, as_float);
    if (!other.empty()) return other;
    switch (to) {
      case DType::F32: return as_float;
      // Narrowing to a 16-bit float rounds (to nearest even) even though registers stay f32.
      case DType::F16: return "__half2float(__float2half_rn(" + as_float + "))";
      case DType::BF16: return (bf16_name("__bfloat162float") + "(" + bf16_name("__float2bfloat16_rn") + "(") + as_float + "))";
      // cvt.rzi.s32.f32 / .u32.f32: truncating, saturating, NaN -> 0 (docs/semantics.md).
      case DType::I32: return is_float(from) ? "__float2int_rz(" + x + ")" : "(int)(" + x + ")";
      case DType::U32: return is_float(from) ? "__float2uint_rz(" + x + ")" : "(unsigned)(" + x + ")";
      default: return "(" + reg_type(to) + ")(" + x + ")";
    }
  }

  std::string bitcast(EmitState&, const ir::Inst&, DType from, DType to, const std::string& x) const override {
    // 16 bits: a 16-bit float register is narrowed to its dtype for its bits (as a store would);
    // bits become a 16-bit float through its exact widening.
    if (dtype_size(from) == 2 || dtype_size(to) == 2) {
      std::string bits = from == DType::F16    ? "__half_as_ushort(__float2half_rn(" + x + "))"
                         : from == DType::BF16 ? (bf16_name("__bfloat16_as_ushort") + "(" + bf16_name("__float2bfloat16_rn") + "(") + x + "))"
                                               : "(unsigned short)(" + x + ")";
      if (to == DType::F16) return "__half2float(__ushort_as_half(" + bits + "))";
      if (to == DType::BF16) return (bf16_name("__bfloat162float") + "(" + bf16_name("__ushort_as_bfloat16") + "(") + bits + "))";
      return "(" + reg_type(to) + ")(" + bits + ")";
    }
    if (to == DType::F32) return (from == DType::I32 ? "__int_as_float(" : "__uint_as_float(") + x + ")";
    if (from == DType::F32) return (to == DType::I32 ? "__float_as_int(" : "__float_as_uint(") + x + ")";
    return "(" + reg_type(to) + ")(" + x + ")";
  }

  // Pairs: add, sub, mul and fma on __half2 / __nv_bfloat162 (add.rn / sub.rn / mul.rn / fma.rn
  // .f16x2 and .bf16x2: sm_53+ and sm_80+), min and max per element through iron_fmin /
  // iron_fmax (the f32 rule, exact on 16-bit values), neg and abs on the sign bits.
  std::string pair_op(EmitState& s, const ir::Inst& in, DType elem, const std::vector<std::string>& a) const override {
    for (const char* h : {"fmin", "fmax", "fma_odd"}) s.helpers.insert(h);  // the pair helpers call them
    return pair_call(s, in, elem, a);
  }

  std::string helper(const std::string& name) const override {
    if (name == "e4m3") return cuda_detail::cuda_text(cuda_detail::kFp8_e4m3);
    // CUDA: ex2.approx.f32 (relative error 2^-22, subnormal results kept) of the rounded product
    // x * log2(e): the product's rounding error, at most |x log2 e| 2^-24 in the exponent, keeps
    // the result within 2^-17.4 relative for every x with a normal result (|x log2 e| < 128),
    // inside the 2^-16 bound. exp(-inf) = 0, exp(+inf) = +inf, NaN stays NaN. Elsewhere (HIP)
    // the library's expf.
    if (name == "exp")
      return "__device__ __forceinline__ float iron_exp(float x) {\n"
             "#if defined(__CUDA_ARCH__)\n"
             "  float y;\n"
             "  asm(\"ex2.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.4426950408889634f));\n"
             "  return y;\n"
             "#else\n"
             "  return expf(x);\n"
             "#endif\n"
             "}\n";
    // min / max (docs/semantics.md): fminf / fmaxf (IEEE minNum / maxNum, one instruction)
    // already let a single NaN operand lose; a NaN first operand returns the second one's bits
    // (two NaNs give the second), and equal operands combine their bits so -0 < +0.
    if (name == "fmin" || name == "fmax") {
      const bool is_max = name == "fmax";
      return "__device__ __forceinline__ float iron_" + name + "(float a, float b) {\n"
             "  if (a != a) return b;\n"
             "  if (a == b) return __uint_as_float(__float_as_uint(a) " + (is_max ? "&" : "|") + " __float_as_uint(b));\n"
             "  return " + (is_max ? "fmaxf" : "fminf") + "(a, b);\n}\n";
    }
    // One rounding of the exact a * b + c to f16 / bf16 (docs/semantics.md). The registers hold
    // values of the dtype, so the conversions to __half / __nv_bfloat16 are exact; where the
    // arch has no native 16-bit fma, iron_fma_odd (num::fma_round_odd: round to odd at f32)
    // followed by the dtype's rounding is the same single rounding.
    if (name == "fma_f16")
      return "__device__ __forceinline__ float iron_fma_odd(float a, float b, float c);\n"
             "__device__ __forceinline__ float iron_fma_f16(float a, float b, float c) {\n"
             "#if __CUDA_ARCH__ >= 530\n"
             "  return __half2float(__hfma(__float2half_rn(a), __float2half_rn(b), __float2half_rn(c)));\n"
             "#else\n"
             "  return __half2float(__float2half_rn(iron_fma_odd(a, b, c)));\n"
             "#endif\n}\n";
    if (name == "fma_bf16")
      return std::string("__device__ __forceinline__ float iron_fma_odd(float a, float b, float c);\n") +
             "__device__ __forceinline__ float iron_fma_bf16(float a, float b, float c) {\n"
             "#if __CUDA_ARCH__ >= 800\n"
             "  return __bfloat162float(__hfma(__float2bfloat16_rn(a), __float2bfloat16_rn(b), __float2bfloat16_rn(c)));\n"
             "#else\n"
             "  return " + bf16_name("__bfloat162float") + "(" + bf16_name("__float2bfloat16_rn") + "(iron_fma_odd(a, b, c)));\n"
             "#endif\n}\n";
    if (name == "pair_f16" || name == "pair_bf16") {
      const bool h = name == "pair_f16";
      const std::string P = "__device__ __forceinline__ ", sfx = h ? "_f16" : "_bf16";
      const std::string v2 = h ? "__half2" : bf16_name("__nv_bfloat162"), arch = h ? "530" : "800";
      const std::string to16 = h ? "__float2half_rn" : bf16_name("__float2bfloat16_rn");
      const std::string as_us = h ? "__half_as_ushort" : bf16_name("__bfloat16_as_ushort");
      const std::string us_as = h ? "__ushort_as_half" : bf16_name("__ushort_as_bfloat16");
      const std::string to32 = h ? "__half2float" : bf16_name("__bfloat162float");
      std::string t;
      // Words <-> native pairs, and the elements as f32 values.
      t += P + v2 + " iron_pair_native" + sfx + "(unsigned w) {\n  return " + (h ? "__halves2half2" : bf16_name("__halves2bfloat162")) +
           "(" + us_as + "((unsigned short)(w & 0xffffu)), " + us_as + "((unsigned short)(w >> 16)));\n}\n";
      t += P + "unsigned iron_pair_word" + sfx + "(" + v2 + " v) {\n  return (unsigned)" + as_us + "(" +
           (h ? "__low2half" : bf16_name("__low2bfloat16")) + "(v)) | ((unsigned)" + as_us + "(" + (h ? "__high2half" : bf16_name("__high2bfloat16")) +
           "(v)) << 16);\n}\n";
      t += P + "float iron_pair_get" + sfx + "(unsigned w, unsigned i) {\n  return " + to32 + "(" + us_as +
           "((unsigned short)(w >> (16u * i))));\n}\n";
      t += P + "unsigned iron_pair_pair" + sfx + "(float a, float b) {\n  return (unsigned)" + as_us + "(" + to16 +
           "(a)) | ((unsigned)" + as_us + "(" + to16 + "(b)) << 16);\n}\n";
      // Per element in f32, each result rounded once: the arch without the packed instruction.
      auto each = [&](const std::string& op, const std::string& f) {
        return P + "unsigned iron_pair_" + op + sfx + "_each(unsigned a, unsigned b, unsigned c) {\n" +
               "  float x[2];\n  for (unsigned i = 0; i < 2u; ++i) {\n" +
               "    const float p = iron_pair_get" + sfx + "(a, i), q = iron_pair_get" + sfx + "(b, i), r = iron_pair_get" + sfx + "(c, i);\n" +
               "    (void)q; (void)r;\n    x[i] = " + f + ";\n  }\n  return iron_pair_pair" + sfx + "(x[0], x[1]);\n}\n";
      };
      t += "__device__ __forceinline__ float iron_fma_odd(float a, float b, float c);\n";
      t += each("add", "__fadd_rn(p, q)") + each("sub", "__fsub_rn(p, q)") + each("mul", "__fmul_rn(p, q)") +
           each("fma", "iron_fma_odd(p, q, r)");
      const char* ops[][2] = {{"add", "__hadd2_rn"}, {"sub", "__hsub2_rn"}, {"mul", "__hmul2_rn"}};
      for (auto& o : ops)
        t += P + "unsigned iron_pair_" + o[0] + sfx + "(unsigned a, unsigned b) {\n#if __CUDA_ARCH__ >= " + arch +
             "\n  return iron_pair_word" + sfx + "(" + o[1] + "(iron_pair_native" + sfx + "(a), iron_pair_native" + sfx +
             "(b)));\n#else\n  return iron_pair_" + o[0] + sfx + "_each(a, b, 0u);\n#endif\n}\n";
      t += P + "unsigned iron_pair_fma" + sfx + "(unsigned a, unsigned b, unsigned c) {\n#if __CUDA_ARCH__ >= " + arch +
           "\n  return iron_pair_word" + sfx + "(__hfma2(iron_pair_native" + sfx + "(a), iron_pair_native" + sfx +
           "(b), iron_pair_native" + sfx + "(c)));\n#else\n  return iron_pair_fma" + sfx + "_each(a, b, c);\n#endif\n}\n";
      for (const char* mm : {"min", "max"})
        t += P + "unsigned iron_pair_" + mm + sfx + "(unsigned a, unsigned b) {\n  return iron_pair_pair" + sfx +
             "(iron_f" + mm + "(iron_pair_get" + sfx + "(a, 0u), iron_pair_get" + sfx + "(b, 0u)), iron_f" + mm +
             "(iron_pair_get" + sfx + "(a, 1u), iron_pair_get" + sfx + "(b, 1u)));\n}\n";
      t += P + "unsigned iron_pair_neg" + sfx + "(unsigned a) { return a ^ 0x80008000u; }\n";
      t += P + "unsigned iron_pair_abs" + sfx + "(unsigned a) { return a & 0x7fff7fffu; }\n";
      return t;
    }
    if (name == "fma_odd")
      return "__device__ __forceinline__ float iron_fma_odd(float a, float b, float c) {\n"
             "  const double p = (double)a * (double)b;\n"
             "  const double dc = (double)c;\n"
             "  const double s = __dadd_rn(p, dc);\n"
             "  if (!isfinite(s)) return (float)s;\n"
             "  const double v = s - p;\n"
             "  const double err = (p - (s - v)) + (dc - v);\n"
             "  if (fabs(s) > 3.4028234663852886e38) return s > 0.0 ? 3.402823466e38f : -3.402823466e38f;\n"
             "  const float f = __double2float_rn(s);\n"
             "  const double df = (double)f;\n"
             "  if (err == 0.0 && df == s) return f;\n"
             "  unsigned bits = __float_as_uint(f);\n"
             "  const double over = (df - s) - err;\n"
             "  if ((over > 0.0) == (s > 0.0)) bits -= 1u;\n"
             "  return __uint_as_float(bits | 1u);\n}\n";
    if (name == "e5m2") return cuda_detail::cuda_text(cuda_detail::kFp8_e5m2);
    if (name == "atomic_add_pair_f16" || name == "atomic_add_pair_bf16") {
      const bool f16 = name == "atomic_add_pair_f16";
      const std::string e = f16 ? "__half" : bf16_name("__nv_bfloat16"), e2 = f16 ? "__half2" : bf16_name("__nv_bfloat162");
      const std::string to_bits = f16 ? "__half_as_ushort" : bf16_name("__bfloat16_as_ushort");
      const std::string from_bits = f16 ? "__ushort_as_half" : bf16_name("__ushort_as_bfloat16");
      const std::string widen = f16 ? "__half2float" : bf16_name("__bfloat162float");
      const std::string narrow = f16 ? "__float2half_rn" : bf16_name("__float2bfloat16_rn");
      return "__device__ __forceinline__ void iron_atomic_add_pair_" + std::string(f16 ? "f16" : "bf16") + "(" + e +
             "* p, float lo, float hi) {\n"
             "#if __CUDA_ARCH__ >= " + (f16 ? "600" : "800") + "\n"
             "  atomicAdd(reinterpret_cast<" + e2 + "*>(p), " + (f16 ? "__floats2half2_rn" : bf16_name("__floats2bfloat162_rn")) +
             "(lo, hi));\n"
             "#else\n"
             "  const float l = " + widen + "(" + narrow + "(lo)), h = " + widen + "(" + narrow + "(hi));\n"
             "  unsigned* q = reinterpret_cast<unsigned*>(p);\n"
             "  unsigned old = *q, seen;\n"
             "  do {\n"
             "    seen = old;\n"
             "    const unsigned a = " + to_bits + "(" + narrow + "(" + widen + "(" + from_bits +
             "((unsigned short)(seen & 0xffffu))) + l));\n"
             "    const unsigned b = " + to_bits + "(" + narrow + "(" + widen + "(" + from_bits +
             "((unsigned short)(seen >> 16))) + h));\n"
             "    old = atomicCAS(q, seen, a | (b << 16));\n"
             "  } while (old != seen);\n"
             "#endif\n"
             "}\n";
    }
    if (name == "atomic_f32_add" || name == "atomic_f32_min" || name == "atomic_f32_max") {
      std::string op = name.substr(11);
      std::string next = op == "add" ? "__uint_as_float(seen) + v" : "iron_f" + op + "(__uint_as_float(seen), v)";
      return "__device__ __forceinline__ float iron_atomic_" + op + "_f32(float* p, float v) {\n"
             "  unsigned* q = reinterpret_cast<unsigned*>(p);\n  unsigned seen, old = *q;\n"
             "  do {\n    seen = old;\n    old = atomicCAS(q, seen, __float_as_uint(" + next + "));\n"
             "  } while (old != seen);\n  return __uint_as_float(old);\n}\n";
    }
    std::string text = int_helper(name);
    if (text.empty()) text = f2int_helper(name, "__float_as_uint");
    return text;
  }


  // The lane-op helpers a kernel uses (recorded in s.helpers by lane_op; helper() prints none of
  // them: they need iron_flat_local_id, which begin() defines first). A source lane outside
  // 0..31 leaves the lane its own value (docs/semantics.md); __shfl_sync then only ever sees a
  // source in range, where its result is documented.
  std::string lane_prelude(const EmitState& s) const {
    std::string out;
    const std::string w = std::to_string(W(s)) + "u";
    const std::string p = "__device__ __forceinline__ ";
    if (s.helpers.count("lane_src"))
      out += p + "unsigned iron_lane() { return iron_flat_local_id() & " + std::to_string(W(s) - 1) + "u; }\n" +
             p + "unsigned iron_src_index(unsigned i) { return i < " + w + " ? i : iron_lane(); }\n" +
             p + "unsigned iron_src_xor(unsigned m) { return m < " + w + " ? (iron_lane() ^ m) : iron_lane(); }\n" +
             p + "unsigned iron_src_up(unsigned d) { const unsigned l = iron_lane(); return d <= l ? l - d : l; }\n" +
             p + "unsigned iron_src_down(unsigned d) { const unsigned l = iron_lane(); return d < " + w + " - l ? l + d : l; }\n";
    struct Red {
      const char* name;
      const char* f, *i, *u;  // combine(v, t) for float, int, unsigned
    };
    const Red reds[] = {{"lane_min", "iron_fmin(v, t)", "min(v, t)", "min(v, t)"},
                        {"lane_and", nullptr, "(v & t)", "(v & t)"},
                        {"lane_or", nullptr, "(v | t)", "(v | t)"}};
    for (const Red& r : reds) {
      if (!s.helpers.count(r.name)) continue;
      const char* types[] = {"float", "int", "unsigned"};
      const char* combine[] = {r.f, r.i, r.u};
      for (int i = 0; i < 3; ++i) {
        if (!combine[i]) continue;
        std::string ty = types[i];
        out += p + ty + " iron_" + r.name + "(" + ty + " v) {\n  for (int o = " + std::to_string(W(s) / 2) +
               "; o > 0; o >>= 1) {\n    const " + ty + " t = " + shfl_xor(s, "v", "o") + ";\n    v = " + combine[i] +
               ";\n  }\n  return v;\n}\n";
      }
    }
    if (s.helpers.count("lane_scan")) {
      // Hillis-Steele in the interpreter's order: offsets 1 .. 16, lane l adds lane l - offset.
      // i32 adds on unsigned (wrapping, no C++ overflow).
      const char* types[] = {"float", "int", "unsigned"};
      for (const char* t : types) {
        std::string ty = t;
        std::string add = ty == "int" ? "int(unsigned(t) + unsigned(v))" : "t + v";
        const std::string lane = "  const unsigned l = iron_flat_local_id() & " + std::to_string(W(s) - 1) + "u;\n";
        out += p + ty + " iron_lane_inclusive_sum(" + ty + " v) {\n" + lane + "  for (unsigned o = 1u; o < " + w +
               "; o <<= 1) {\n    const " + ty + " t = " + shfl_up(s, "v", "o") + ";\n    if (l >= o) v = " + add +
               ";\n  }\n  return v;\n}\n";
        out += p + ty + " iron_lane_exclusive_sum(" + ty + " v) {\n" + lane + "  const " + ty + " t = " +
               shfl_up(s, "iron_lane_inclusive_sum(v)", "1u") + ";\n"
               "  return l == 0u ? " + ty + "(0) : t;\n}\n";
      }
    }
    return out;
  }

  std::string lane_op(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const override {
    using ir::Op;
    auto shuffle = [&](const char* src) {
      s.helpers.insert("lane_src");
      std::string from = std::string(src) + "(" + a[1] + ")";
      if (t == DType::Bool) return "(" + shfl(s, "int(" + a[0] + ")", from) + " != 0)";
      return shfl(s, a[0], from);
    };
    switch (in.op) {
      case Op::LaneShuffle: case Op::LaneBroadcast: return shuffle("iron_src_index");
      case Op::LaneShuffleXor: return shuffle("iron_src_xor");
      case Op::LaneShuffleUp: return shuffle("iron_src_up");
      case Op::LaneShuffleDown: return shuffle("iron_src_down");
      case Op::LaneMin: case Op::LaneAnd: case Op::LaneOr: {
        const char* n = in.op == Op::LaneMin ? "lane_min" : in.op == Op::LaneAnd ? "lane_and" : "lane_or";
        s.helpers.insert(n);
        return std::string("iron_") + n + "(" + a[0] + ")";
      }
      case Op::LaneInclusiveSum: s.helpers.insert("lane_scan"); return "iron_lane_inclusive_sum(" + a[0] + ")";
      case Op::LaneExclusiveSum: s.helpers.insert("lane_scan"); return "iron_lane_exclusive_sum(" + a[0] + ")";
      // A lane group is one warp of 32 lanes: the ballot is the whole mask.
      case Op::LaneBallot: return ballot(s, a[0]);
      case Op::LaneAny: return "(" + vote(s, false, a[0]) + " != 0)";
      case Op::LaneAll: return "(" + vote(s, true, a[0]) + " != 0)";
      default: s.unsupported(in, name(), ir::mnemonic(in.op)); return a[0];
    }
  }

  // Integer atomics are CUDA's own. f32 add/min/max are compare-and-swap loops on the bits:
  // atom.add.f32 flushes subnormal inputs and results to zero, and there is no float min/max
  // atomic with the NaN and signed-zero rule of docs/semantics.md.
  std::string atomic(EmitState& s, const ir::Inst& in, DType t, const std::string&, const std::vector<std::string>& a,
                     std::vector<std::string>&) const override {
    using ir::Op;
    std::string mem = ir::is_global_atomic(in.op) ? param_name(s.k.params[in.param()]) + "[" + a[0] + "]"
                                                  : tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + a[0] + "]";
    std::string at = "&" + mem;
    const std::string& v = a.back();
    Op kind = ir::atomic_kind(in.op);
    if (t == DType::F32) {
      switch (kind) {
        case Op::AtomicAdd: s.helpers.insert("atomic_f32_add"); return "iron_atomic_add_f32(" + at + ", " + v + ")";
        case Op::AtomicMin: s.helpers.insert("atomic_f32_min"); s.helpers.insert("fmin"); return "iron_atomic_min_f32(" + at + ", " + v + ")";
        case Op::AtomicMax: s.helpers.insert("atomic_f32_max"); s.helpers.insert("fmax"); return "iron_atomic_max_f32(" + at + ", " + v + ")";
        case Op::AtomicExchange: return "atomicExch(" + at + ", " + v + ")";
        case Op::AtomicCas:
          return "__uint_as_float(atomicCAS(reinterpret_cast<unsigned*>(" + at + "), __float_as_uint(" + a[1] +
                 "), __float_as_uint(" + v + ")))";
        default: break;
      }
    } else if (t == DType::I32 || t == DType::U32 || t == DType::U64) {
      // u64 is unsigned long long (every architecture Iron targets); the verifier allows only
      // add, exchange and cas on it.
      switch (kind) {
        case Op::AtomicAdd: return "atomicAdd(" + at + ", " + v + ")";
        case Op::AtomicMin: return "atomicMin(" + at + ", " + v + ")";
        case Op::AtomicMax: return "atomicMax(" + at + ", " + v + ")";
        case Op::AtomicAnd: return "atomicAnd(" + at + ", " + v + ")";
        case Op::AtomicOr: return "atomicOr(" + at + ", " + v + ")";
        case Op::AtomicExchange: return "atomicExch(" + at + ", " + v + ")";
        case Op::AtomicCas: return "atomicCAS(" + at + ", " + a[1] + ", " + v + ")";
        default: break;
      }
    }
    s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t));
    return "0";
  }

  // __half2 atomicAdd (sm_60+) and __nv_bfloat162 atomicAdd (sm_80+): one rounding of each
  // element's exact sum, as docs/semantics.md defines; below those architectures a
  // compare-and-swap loop on the 32-bit word computes the same (iron_atomic_add_pair_*).
  void atomic_add_pair(EmitState& s, const ir::Inst&, const ir::Param& p, const std::string&, const std::string& pair,
                       const std::string& lo, const std::string& hi, std::vector<std::string>& lines) const override {
    const bool f16 = s.concrete(p.dtype) == DType::F16;
    s.helpers.insert(f16 ? "atomic_add_pair_f16" : "atomic_add_pair_bf16");
    lines.push_back(std::string(f16 ? "iron_atomic_add_pair_f16(" : "iron_atomic_add_pair_bf16(") + param_name(p) +
                    " + 2ull * (unsigned long long)(" + pair + "), " + lo + ", " + hi + ");");
  }


  // Wide types: 32-bit elements as float4/int4/uint4 (or 2-wide); 16-bit elements as raw
  // 32/64/128-bit words holding __half2 / __nv_bfloat162 pairs.
  static std::string word_type(DType t, int chunk) {
    if (dtype_size(t) == 2) return chunk == 8 ? "uint4" : chunk == 4 ? "uint2" : "unsigned";
    std::string base = t == DType::I32 ? "int" : t == DType::U32 ? "uint" : "float";
    return base + std::to_string(chunk);
  }
  std::string pair_type(DType t) const { return t == DType::F16 ? "__half2" : bf16_name("__nv_bfloat162"); }

  void load_group(EmitState& s, const ir::Param& p, const std::string& idx, int width, const std::string& array,
                  std::vector<std::string>& lines) const override {
    DType t = s.concrete(p.dtype);
    int chunk = chunk_elems(t, width);
    static const char* comp[] = {"x", "y", "z", "w"};
    for (int o = 0; o < width; o += chunk) {
      std::string w = word_type(t, chunk);
      std::string src = "*reinterpret_cast<const " + w + "*>(" + param_name(p) + " + " + idx + " + " + std::to_string(o) + "u)";
      std::string l = "{ const " + w + " t = " + src + ";";
      if (dtype_size(t) == 2) {
        l += " const " + pair_type(t) + "* h = reinterpret_cast<const " + pair_type(t) + "*>(&t);";
        for (int e = 0; e < chunk; ++e)
          l += " " + array + "[" + std::to_string(o + e) + "] = " + (t == DType::BF16 ? bf16_name(e % 2 ? "__high2float" : "__low2float") : std::string(e % 2 ? "__high2float" : "__low2float")) + "(h[" +
               std::to_string(e / 2) + "]);";
      } else {
        for (int e = 0; e < chunk; ++e) l += " " + array + "[" + std::to_string(o + e) + "] = t." + comp[e] + ";";
      }
      lines.push_back(l + " }");
    }
  }

  void store_group(EmitState& s, const ir::Param& p, const std::string& idx, const std::vector<std::string>& values,
                   std::vector<std::string>& lines) const override {
    DType t = s.concrete(p.dtype);
    int width = int(values.size()), chunk = chunk_elems(t, width);
    for (int o = 0; o < width; o += chunk) {
      std::string w = word_type(t, chunk);
      std::string dst = "*reinterpret_cast<" + w + "*>(" + param_name(p) + " + " + idx + " + " + std::to_string(o) + "u)";
      if (dtype_size(t) == 2) {
        std::string pack = t == DType::F16 ? "__floats2half2_rn" : bf16_name("__floats2bfloat162_rn");
        std::string l = "{ " + w + " t; " + pair_type(t) + "* h = reinterpret_cast<" + pair_type(t) + "*>(&t);";
        for (int e = 0; e < chunk; e += 2)
          l += " h[" + std::to_string(e / 2) + "] = " + pack + "(" + values[size_t(o + e)] + ", " + values[size_t(o + e + 1)] + ");";
        lines.push_back(l + " " + dst + " = t; }");
      } else {
        std::string make = "make_" + w + "(";
        for (int e = 0; e < chunk; ++e) make += (e ? ", " : "") + values[size_t(o + e)];
        lines.push_back(dst + " = " + make + ");");
      }
    }
  }
};


}  // namespace iron::codegen
