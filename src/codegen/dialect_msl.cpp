// Metal Shading Language dialect (MSL 3.0; bf16 buffers need 3.1, fences 3.2). The source is
// never compiled or run on these machines: tests/msl checks every emitted file with the host
// clang against a Metal standard-library shim (docs/msl.md says what that check cannot catch).
//
// Binding conventions (what a Metal runtime must do to launch the code):
//  - one `kernel void <entry_name>(...)`; buffer parameter number i (counting buffers only, in
//    declaration order) is [[buffer(i)]], `device T*` (`device const T*` when read-only);
//    scalar parameter number j is [[buffer(B + j)]], `constant T&`, B = the number of buffers
//    (setBytes with the value);
//  - every threadgroup array lives in one region, [[threadgroup(0)]], laid out as
//    ir::threadgroup_layout / ir::threadgroup_bytes say (setThreadgroupMemoryLength with
//    threadgroup_bytes rounded up to 16); a kernel with cooperative tiles also takes
//    [[threadgroup(1)]], 1024 bytes per simdgroup of the threadgroup (the tile staging area);
//  - the grid is dispatched in threadgroups (dispatchThreadgroups), the threadgroup size a
//    multiple of the simdgroup width, as on every backend;
//  - the library is built with MTLMathModeSafe (no fast math); the source also turns floating
//    contraction off and spells every inexact library function as metal::precise::.
// Every op has the result docs/semantics.md defines: 16-bit floats live in f32 registers and are
// converted by integer helpers (no dependence on the GPU's f16 rounding or denormal mode);
// division and sqrt are the exact helpers of glsl_exact_math.inc; f32 min/max, float -> int
// casts and integer division, remainder and shifts go through the shared helpers; lane
// reductions and scans of floats are butterflies and Hillis-Steele steps in the interpreter's
// order (integer ones use the simd_* built-ins, whose result does not depend on the order).
#include <cctype>
#include <cstdio>

#include "codegen/c_like.hpp"
#include "core/numeric.hpp"

namespace iron::codegen {
namespace {

#define IRON_GLSL_HELPER(name, ...) const char* const kText_##name = #__VA_ARGS__;
#include "codegen/glsl_exact_math.inc"
#include "codegen/glsl_math.inc"
#undef IRON_GLSL_HELPER
#define IRON_FP8_HELPER(name, ...) const char* const kFp8_##name = #__VA_ARGS__;
#include "codegen/fp8_math.inc"
#undef IRON_FP8_HELPER
#define IRON_MSL_HELPER(name, ...) const char* const kMsl_##name = #__VA_ARGS__;
#include "codegen/msl_math.inc"
#undef IRON_MSL_HELPER

// The shared GLSL-subset helper text in MSL's words: bit casts are as_type<>, `precise` goes
// (contraction is off for the whole file), the driver's inexact functions are
// metal::precise ones, findMSB and umulExtended are small helpers defined in the prelude, and the
// one array parameter becomes a thread pointer. Then one statement per line, indented by depth.
std::string msl_text(std::string text) {
  auto word = [&](size_t i) { return i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'); };
  auto replace_all = [&](const std::string& from, const std::string& to, bool whole_word) {
    size_t at = 0;
    while ((at = text.find(from, at)) != std::string::npos) {
      const bool alnum_end = std::isalnum(static_cast<unsigned char>(from.back())) || from.back() == '_';
      if (whole_word && ((at > 0 && (word(at - 1) || text[at - 1] == ':')) || (alnum_end && word(at + from.size())))) {
        at += from.size();
        continue;
      }
      text.replace(at, from.size(), to);
      at += to.size();
    }
  };
  replace_all("floatBitsToUint(", "as_type<uint>(", true);
  replace_all("uintBitsToFloat(", "as_type<float>(", true);
  replace_all("precise ", "", true);
  replace_all("findMSB(", "iron_find_msb(", true);
  replace_all("umulExtended(", "iron_umul_extended(", true);
  replace_all("uint c[11]", "thread const uint* c", true);
  for (const char* f : {"sqrt(", "sin(", "cos(", "exp2(", "log2(", "exp(", "log(", "pow("})
    replace_all(f, std::string("precise::") + f, true);
  return helper_lines(text);
}

const char* axis_name(int64_t a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

// Kernel-parameter built-ins the body used (recorded in EmitState::helpers as "@name"; begin()
// declares exactly these).
struct Builtin {
  const char* name;
  const char* type;
  const char* attribute;
};
const Builtin kBuiltins[] = {
    {"iron_thread_id", "uint3", "thread_position_in_grid"},
    {"iron_group_id", "uint3", "threadgroup_position_in_grid"},
    {"iron_local_id", "uint3", "thread_position_in_threadgroup"},
    {"iron_group_size", "uint3", "threads_per_threadgroup"},
    {"iron_num_groups", "uint3", "threadgroups_per_grid"},
    {"iron_lane", "uint", "thread_index_in_simdgroup"},
    {"iron_lane_width", "uint", "threads_per_simdgroup"},
    {"iron_simd_group", "uint", "simdgroup_index_in_threadgroup"},
    {"iron_num_simd_groups", "uint", "simdgroups_per_threadgroup"},
};

// MSL's spellings as data: its register types, bit casts, literals, barrier and fences; Metal's
// precise library for the bounded functions ops.def spells plainly (exp, rsqrt, tanh); fabs for
// a float abs; mulhi. ops.def's defaults (floor, ceil, rint, trunc, fma, min, max, abs) are
// Metal's own names.
DialectSpelling msl_spelling() {
  DialectSpelling sp;
  sp.name = "MSL";
  sp.u32 = "uint";
  sp.i8 = "char";  // MSL's char is signed
  sp.u8 = "uchar";
  sp.u16 = "ushort";
  sp.i64 = "long";  // 64 bits in MSL
  sp.u64 = "ulong";
  sp.i64_suffix = "l";
  sp.u64_suffix = "ul";
  sp.float_to_bits = "as_type<uint>";
  sp.bits_to_float = "as_type<float>";
  sp.barrier = "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);";
  sp.fence_threadgroup = "atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_threadgroup);";
  sp.fence_device = "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);";
  sp.float_ops = {{ir::Op::Exp, "precise::exp(%0)"},
                  {ir::Op::Rsqrt, "precise::rsqrt(%0)"},
                  {ir::Op::Tanh, "precise::tanh(%0)"},
                  {ir::Op::Abs, "fabs(%0)"}};
  sp.ops = {{ir::Op::MulHi, "mulhi(%0, %1)"}};
  return sp;
}

class MslDialect final : public Dialect {
 public:
  MslDialect() : Dialect(msl_spelling()) {}

  // Buffers and threadgroup arrays at their real width: half and bfloat for the 16-bit floats
  // (moved by their bits), the fp8 bits as uchar, registers otherwise.
  std::string storage_type(DType t) const {
    switch (t) {
      case DType::F16: return "half";
      case DType::BF16: return "bfloat";
      case DType::F8E4M3: case DType::F8E5M2: return "uchar";
      default: return reg_type(t);
    }
  }

  static void use(EmitState& s, const char* builtin) { s.helpers.insert(std::string("@") + builtin); }

  void begin(EmitState& s, std::string& out) const override {
    const ir::Kernel& k = s.k;
    bool tiles = false;
    ir::walk(k, [&](ir::Id id) { tiles = tiles || k.insts[id].type.is_fragment(); });
    out += "// Iron kernel " + k.name + " (" + instantiation_name(s.dtype) + "), MSL. Generated: do not edit.\n";
    out += "#include <metal_stdlib>\nusing namespace metal;\n";
    if (s.uses_bf16) out += "#if __METAL_VERSION__ < 310\n#error \"bf16 buffers need MSL 3.1 (bfloat)\"\n#endif\n";
    bool fences = false;
    ir::walk(k, [&](ir::Id id) {
      fences = fences || k.insts[id].op == ir::Op::FenceDevice || k.insts[id].op == ir::Op::FenceThreadgroup;
    });
    if (fences)
      out += "#if __METAL_VERSION__ < 320\n#error \"fences need MSL 3.2 (atomic_thread_fence)\"\n#endif\n";
    out += "#pragma clang fp contract(off)\n";
    // Helpers: the bit-level building blocks first (others call them), then the rest by name.
    std::string body;
    if (s.uses_lane_ops) s.helpers.insert("fmax");  // lane_max of f32
    if (s.helpers.count("lane_min")) s.helpers.insert("fmin");
    if (tiles) {
      // f16 and fp8 inputs are staged as half bits (iron_f32_to_f16; every fp8 value is a half).
      ir::walk(k, [&](ir::Id id) {
        const Type t = k.insts[id].type;
        if (t.is_fragment() && t.role() != FragRole::Acc && s.concrete(t) != DType::BF16) s.helpers.insert("f16");
      });
    }
    if (s.uses_bf16 || s.helpers.count("fma_odd_bf16")) body += bf16_helpers();
    for (const char* first : {"f16", "e4m3", "e5m2"})
      if (s.helpers.count(first)) body += helper(first);
    for (const std::string& h : s.helpers)
      if (h[0] != '@' && h.rfind("lane_", 0) != 0 && h != "f16" && h != "e4m3" && h != "e5m2") body += helper(h);
    body += lane_prelude(s);
    if (tiles) body += tile_prelude_msl(s);
    std::string pre;
    if (body.find("iron_find_msb(") != std::string::npos)
      pre += "int iron_find_msb(uint x) { return 31 - int(clz(x)); }\n";
    if (body.find("iron_umul_extended(") != std::string::npos)
      pre += "void iron_umul_extended(uint a, uint b, thread uint& hi, thread uint& lo) {\n"
             "  hi = mulhi(a, b);\n  lo = a * b;\n}\n";
    out += pre + body;

    out += "kernel void " + entry_name(k, s.dtype) + "(";
    std::vector<std::string> params;
    int buffers = 0;
    for (int b : s.buffer_index) buffers += b >= 0 ? 1 : 0;
    for (size_t i = 0; i < k.params.size(); ++i) {
      const ir::Param& p = k.params[i];
      DType c = s.concrete(p.dtype);
      if (p.kind == ir::ParamKind::Buffer) {
        // A written buffer another threadgroup reads after fence_device is coherent(device).
        const bool coherent = s.uses_fence_device && p.access != ir::Access::Read;
        params.push_back(std::string("device ") + (coherent ? "coherent(device) " : "") +
                         (p.access == ir::Access::Read ? "const " : "") + storage_type(c) + "* " + param_name(p) +
                         " [[buffer(" + std::to_string(s.buffer_index[i]) + ")]]");
      } else {
        params.push_back("constant " + reg_type(c) + "& " + param_name(p) + " [[buffer(" +
                         std::to_string(buffers + s.scalar_index[i]) + ")]]");
      }
    }
    const bool tg = !ir::threadgroup_layout(k).empty();
    if (tg) params.push_back("threadgroup uchar* iron_tg [[threadgroup(0)]]");
    if (tiles) {
      params.push_back("threadgroup float* iron_tile_scratch [[threadgroup(1)]]");
      use(s, "iron_simd_group");
      use(s, "iron_lane");
      use(s, "iron_lane_width");
    }
    for (const Builtin& b : kBuiltins)
      if (s.helpers.count(std::string("@") + b.name))
        params.push_back(std::string(b.type) + " " + b.name + " [[" + b.attribute + "]]");
    for (size_t i = 0; i < params.size(); ++i) out += std::string(i ? ",\n    " : "\n    ") + params[i];
    out += ") {\n";
    if (tiles) out += "  threadgroup float* const iron_tile_sc = iron_tile_scratch + iron_simd_group * 256u;\n";
    if (tg) declare_threadgroup(s, out);
  }

  // Threadgroup arrays at their real width, at the offsets of ir::threadgroup_bytes in the one
  // [[threadgroup(0)]] region (an array sized at dispatch moves the ones after it).
  void declare_threadgroup(EmitState& s, std::string& out) const {
    const ir::Kernel& k = s.k;
    uint64_t at = 0;
    bool dynamic = false;
    for (ir::Id id : ir::threadgroup_layout(k)) {
      const ir::Inst& in = k.insts[id];
      const uint64_t align = ir::tg_alignment(in, s.dtype), elem = ir::tg_elem_bytes(in, s.dtype);
      // An array f32 atomics act on holds words: atomics need integer memory.
      const std::string ty = "threadgroup " + (s.f32_atomic_allocs.count(id) ? std::string("uint") : storage_type(s.concrete(in.type)));
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
      if (!dynamic) out += "  uint iron_tg_at = " + offset + ";\n";
      dynamic = true;
      out += "  iron_tg_at += " + std::to_string(elem * uint64_t(in.attr(ir::Attr::Count))) + "u * uint(" + param_name(p) + ");\n";
    }
    // Threadgroup aliases: typed pointers into the bytes of the arrays they view.
    for (ir::Id id : ir::threadgroup_aliases(k)) {
      const ir::Inst& in = k.insts[id];
      const ir::Id base = ir::tg_alias_base(k, in);
      if (base == ir::kNone) continue;
      const std::string ty = "threadgroup " + (s.f32_atomic_allocs.count(id) ? std::string("uint") : storage_type(s.concrete(in.type)));
      out += "  " + ty + "* const " + tg_name(k, in) + " = reinterpret_cast<" + ty + "*>(reinterpret_cast<threadgroup uchar*>(" +
             tg_name(k, k.insts[base]) + ") + " + std::to_string(in.attr(ir::Attr::Offset)) + "u);\n";
    }
  }

  std::string builtin(EmitState& s, const ir::Inst& in) const override {
    const std::string a = axis_name(in.attr(ir::Attr::Axis));
    switch (in.op) {
      case ir::Op::ThreadId:
        // thread_id64 (a u64 result): the product in 64 bits, so it never wraps.
        if (in.type.elem() == DType::U64) {
          use(s, "iron_group_id");
          use(s, "iron_group_size");
          use(s, "iron_local_id");
          return "((ulong)iron_group_id." + a + " * (ulong)iron_group_size." + a + " + (ulong)iron_local_id." + a + ")";
        }
        use(s, "iron_thread_id");  // group * size + local, in 32 bits (the grid is dispatched in threadgroups)
        return "iron_thread_id." + a;
      case ir::Op::ProgramId: use(s, "iron_group_id"); return "iron_group_id." + a;
      case ir::Op::LocalId: use(s, "iron_local_id"); return "iron_local_id." + a;
      case ir::Op::GroupSize: use(s, "iron_group_size"); return "iron_group_size." + a;
      case ir::Op::NumPrograms: use(s, "iron_num_groups"); return "iron_num_groups." + a;
      case ir::Op::LaneId: use(s, "iron_lane"); return "iron_lane";
      case ir::Op::LaneWidth: use(s, "iron_lane_width"); return "iron_lane_width";
      case ir::Op::SimdGroupId: use(s, "iron_simd_group"); return "iron_simd_group";
      case ir::Op::NumSimdGroups: use(s, "iron_num_simd_groups"); return "iron_num_simd_groups";
      default: s.unsupported(in, name(), std::string("built-in ") + ir::mnemonic(in.op)); return "0";
    }
  }

  // An element of 16-bit or fp8 storage as its exact f32 value, and an f32 value rounded to it
  // (integer helpers: nothing depends on the GPU's own conversions).
  std::string widen(EmitState& s, DType t, const std::string& e) const {
    switch (t) {
      case DType::F16: s.helpers.insert("f16"); return "iron_f16_to_f32(uint(as_type<ushort>(" + e + ")))";
      case DType::BF16: return "iron_bf16_to_f32(uint(as_type<ushort>(" + e + ")))";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return "iron_e4m3_to_f32(uint(" + e + "))";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return "iron_e5m2_to_f32(uint(" + e + "))";
      default: return e;
    }
  }
  std::string narrow(EmitState& s, DType t, const std::string& v) const {
    switch (t) {
      case DType::F16: s.helpers.insert("f16"); return "as_type<half>(ushort(iron_f32_to_f16(" + v + ")))";
      case DType::BF16: return "as_type<bfloat>(ushort(iron_f32_to_bf16(" + v + ")))";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return "uchar(iron_f32_to_e4m3(" + v + "))";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return "uchar(iron_f32_to_e5m2(" + v + "))";
      default: return v;
    }
  }

  std::string load(EmitState& s, const ir::Param& p, const std::string& idx) const override {
    return widen(s, s.concrete(p.dtype), param_name(p) + "[" + idx + "]");
  }
  std::string store(EmitState& s, const ir::Param& p, const std::string& idx, const std::string& v) const override {
    return param_name(p) + "[" + idx + "] = " + narrow(s, s.concrete(p.dtype), v);
  }
  std::string tg_load(EmitState& s, DType t, const std::string& elem) const override { return widen(s, t, elem); }
  std::string tg_store(EmitState& s, DType t, const std::string& elem, const std::string& v) const override {
    return elem + " = " + narrow(s, t, v);
  }
  // A threadgroup array that f32 atomics act on is declared as words: plain accesses convert.
  std::string tg_word_load(const std::string& elem) const override { return "as_type<float>(" + elem + ")"; }
  std::string tg_word_store(const std::string& elem, const std::string& v) const override {
    return elem + " = as_type<uint>(" + v + ")";
  }

  // What MSL computes through Iron's helpers; the rest from the spellings (Dialect::math). Iron's
  // range reduction, decomposition and polynomials (glsl_math.inc) as on Vulkan for sin, cos,
  // exp2, log2, erf, pow and a subnormal log; sqrt exact (glsl_exact_math.inc); Metal's precise
  // functions elsewhere, within the bounds of docs/semantics.md.
  std::string math(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const override {
    const bool f = is_float(t), i32 = is_integer(t) && int_bits(t) == 32;
    if (f) {
      std::string helper = iron_math_call(s, in.op, a);
      if (!helper.empty()) return helper;
    }
    switch (in.op) {
      // Metal's popcount and clz return the argument's type; clz(0u) = 32.
      case ir::Op::Popcount: if (i32) return "((" + reg_type(t) + ")popcount((uint)(" + a[0] + ")))"; break;
      case ir::Op::Clz: if (i32) return "((" + reg_type(t) + ")clz((uint)(" + a[0] + ")))"; break;
      case ir::Op::Fma:
        // f16 / bf16: one rounding of the exact a * b + c, through f32 rounded to odd
        // (msl_math.inc; Metal has no f64). f32: Metal's fma, one rounding.
        if (t == DType::F16 || t == DType::BF16) {
          const char* h = t == DType::F16 ? "fma_odd_f16" : "fma_odd_bf16";
          s.helpers.insert(h);
          return cast(s, in, DType::F32, t, std::string("iron_") + h + "(" + a[0] + ", " + a[1] + ", " + a[2] + ")");
        }
        break;
      default: break;
    }
    return Dialect::math(s, in, t, a);
  }

  std::string cast(EmitState& s, const ir::Inst&, DType from, DType to, const std::string& x) const override {
    if (to == DType::Bool) return "(" + x + " != 0)";
    if (from == DType::Bool) return is_float(to) ? "(" + x + " ? 1.0f : 0.0f)" : convert(to, x);
    // MSL's float -> int conversion is undefined out of range: helpers saturate, NaN -> 0.
    if (is_float(from) && to == DType::I32) { s.helpers.insert("f2i"); return "iron_f2i(" + x + ")"; }
    if (is_float(from) && to == DType::U32) { s.helpers.insert("f2u"); return "iron_f2u(" + x + ")"; }
    const std::string as_float = is_float(from) ? x : "float(" + x + ")";
    std::string other = cast_new_types(s, from, to, x, as_float);
    if (!other.empty()) return other;
    switch (to) {
      case DType::F32: return as_float;
      case DType::F16: s.helpers.insert("f16"); return "iron_f16_to_f32(iron_f32_to_f16(" + as_float + "))";
      case DType::BF16: return "iron_bf16_to_f32(iron_f32_to_bf16(" + as_float + "))";
      default: return convert(to, x);
    }
  }

  std::string bitcast(EmitState& s, const ir::Inst&, DType from, DType to, const std::string& x) const override {
    // 16 bits: a 16-bit float register is narrowed to its dtype for its bits (as a store would);
    // bits become a 16-bit float through its exact widening.
    if (dtype_size(from) == 2 || dtype_size(to) == 2) {
      if (from == DType::F16 || to == DType::F16) s.helpers.insert("f16");
      const std::string bits = from == DType::F16    ? "(iron_f32_to_f16(" + x + ") & 0xffffu)"
                               : from == DType::BF16 ? "iron_f32_to_bf16(" + x + ")"
                                                     : "uint(ushort(" + x + "))";
      if (to == DType::F16) return "iron_f16_to_f32(" + bits + ")";
      if (to == DType::BF16) return "iron_bf16_to_f32(" + bits + ")";
      return convert(to, bits);
    }
    if (to == DType::F32) return "as_type<float>(" + x + ")";
    if (from == DType::F32) return (to == DType::I32 ? "as_type<int>(" : "as_type<uint>(") + x + ")";
    return convert(to, x);
  }

  // Correctly rounded whatever the GPU's division (glsl_exact_math.inc; precise::divide is only
  // the estimate).
  std::string float_div(EmitState& s, const std::string& a, const std::string& b) const override {
    s.helpers.insert("fdiv");
    return "iron_div_f32(" + a + ", " + b + ")";
  }

  static std::string bf16_helpers() {
    return "float iron_bf16_to_f32(uint b) { return as_type<float>(b << 16); }\n"
           "uint iron_f32_to_bf16(float f) {\n"
           "  uint u = as_type<uint>(f);\n"
           "  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;\n"
           "  u += 0x7fffu + ((u >> 16) & 1u);\n"
           "  return u >> 16;\n}\n";
  }

  std::string helper(const std::string& name) const override {
    if (name == "f16") return msl_text(kText_f16_conversions);
    if (name == "e4m3") return msl_text(kFp8_e4m3);
    if (name == "e5m2") return msl_text(kFp8_e5m2);
    if (name == "fdiv")
      return "float iron_div_estimate(float x, float y) { return precise::divide(x, y); }\n" + msl_text(kText_fdiv);
    if (name == "fsqrt") return "float iron_sqrt_estimate(float x) { return precise::sqrt(x); }\n" + msl_text(kText_fsqrt);
    if (name == "erf") return msl_text(kText_erf);
    if (name == "pow") return msl_text(kText_pow);
    if (name == "log") return msl_text(kText_log);
    if (name == "log2") return msl_text(kText_log2);
    if (name == "exp2") return msl_text(kText_exp2);
    if (name == "trig") return msl_text(kText_trig);
    if (name == "fma_odd_f16") return msl_text(kMsl_fma_odd_f16);
    if (name == "fma_odd_bf16") return msl_text(kMsl_fma_odd_bf16);
    if (name == "f2i")
      return "int iron_f2i(float x) {\n"
             "  if ((as_type<uint>(x) & 0x7fffffffu) > 0x7f800000u) return 0;\n"
             "  if (x >= 2147483648.0f) return 2147483647;\n"
             "  if (x <= -2147483648.0f) return int(0x80000000u);\n"
             "  return int(x);\n}\n";
    if (name == "f2u")
      return "uint iron_f2u(float x) {\n"
             "  if ((as_type<uint>(x) & 0x7fffffffu) > 0x7f800000u || x <= 0.0f) return 0u;\n"
             "  if (x >= 4294967296.0f) return 0xffffffffu;\n"
             "  return uint(x);\n}\n";
    if (name == "pair_f16" || name == "pair_bf16") {
      const bool h = name == "pair_f16";
      return pair_helpers_via_f32(h, h ? "iron_f16_to_f32((w >> (16u * i)) & 0xffffu)" : "as_type<float>((w >> (16u * i)) << 16)",
                                  h ? "(iron_f32_to_f16(x) & 0xffffu)" : "iron_f32_to_bf16(x)", "const float",
                                  h ? "iron_fma_odd_f16" : "iron_fma_odd_bf16");
    }
    std::string text = int_helper(name);
    if (text.empty()) text = f2int_helper(name, "as_type<uint>");
    return text.empty() ? minmax_helper(name, "as_type<uint>", "as_type<float>") : text;
  }

  // Pairs: every element in f32 and rounded once, as the scalar ops; fma through the round-to-odd
  // helpers, min and max through iron_fmin / iron_fmax, neg and abs on the sign bits.
  std::string pair_op(EmitState& s, const ir::Inst& in, DType elem, const std::vector<std::string>& a) const override {
    for (const char* h : {"fmin", "fmax"}) s.helpers.insert(h);
    s.helpers.insert(elem == DType::F16 ? "fma_odd_f16" : "fma_odd_bf16");
    if (elem == DType::F16) s.helpers.insert("f16");
    return pair_call(s, in, elem, a);
  }

  std::string lane_reduce(EmitState& s, const ir::Inst& in, DType t, const std::string& x) const override {
    if (t != DType::F32 && t != DType::I32 && t != DType::U32) {
      s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t));
      return x;
    }
    const bool sum = in.op == ir::Op::LaneSum;
    if (t == DType::F32) {
      use(s, "iron_lane_width");
      s.helpers.insert(sum ? "lane_sum_f32" : "lane_max_f32");
      return std::string(sum ? "iron_lane_sum(" : "iron_lane_max(") + x + ", iron_lane_width)";
    }
    // Integer sums wrap and maxima are exact: any order gives the interpreter's result.
    if (!sum) return "simd_max(" + x + ")";
    return t == DType::I32 ? "as_type<int>(simd_sum(as_type<uint>(" + x + ")))" : "simd_sum(" + x + ")";
  }

  // Lane helpers: float butterflies in the interpreter's order (offsets W/2 .. 1, v[l] op
  // v[l ^ offset]) and Hillis-Steele scans (offsets 1 .. W/2), so f32 rounding matches every
  // backend of the same lane width; the source-lane helpers keep a lane's own value for a source
  // outside the simdgroup (docs/semantics.md), so simd_shuffle only ever sees one in range.
  std::string lane_prelude(const EmitState& s) const {
    std::string out;
    if (s.helpers.count("lane_sum_f32"))
      out += "float iron_lane_sum(float v, uint w) {\n"
             "  for (uint o = w >> 1; o > 0u; o >>= 1) v = v + simd_shuffle_xor(v, ushort(o));\n  return v;\n}\n";
    if (s.helpers.count("lane_max_f32"))
      out += "float iron_lane_max(float v, uint w) {\n"
             "  for (uint o = w >> 1; o > 0u; o >>= 1) v = iron_fmax(v, simd_shuffle_xor(v, ushort(o)));\n  return v;\n}\n";
    if (s.helpers.count("lane_min_f32"))
      out += "float iron_lane_min(float v, uint w) {\n"
             "  for (uint o = w >> 1; o > 0u; o >>= 1) v = iron_fmin(v, simd_shuffle_xor(v, ushort(o)));\n  return v;\n}\n";
    if (s.helpers.count("lane_src"))
      out += "ushort iron_src_index(uint i, uint l, uint w) { return ushort(i < w ? i : l); }\n"
             "ushort iron_src_xor(uint m, uint l, uint w) { return ushort(m < w ? (l ^ m) : l); }\n"
             "ushort iron_src_up(uint d, uint l, uint w) { return ushort(d <= l ? l - d : l); }\n"
             "ushort iron_src_down(uint d, uint l, uint w) { return ushort(d < w - l ? l + d : l); }\n";
    if (s.helpers.count("lane_scan_f32"))
      out += "float iron_lane_inclusive_sum(float v, uint l, uint w) {\n"
             "  for (uint o = 1u; o < w; o <<= 1) {\n"
             "    const float t = simd_shuffle(v, ushort(l >= o ? l - o : l));\n"
             "    if (l >= o) v = t + v;\n  }\n  return v;\n}\n"
             "float iron_lane_exclusive_sum(float v, uint l, uint w) {\n"
             "  const float t = simd_shuffle(iron_lane_inclusive_sum(v, l, w), ushort(l > 0u ? l - 1u : 0u));\n"
             "  return l > 0u ? t : 0.0f;\n}\n";
    return out;
  }

  std::string lane_op(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const override {
    using ir::Op;
    auto shuffle = [&](const char* src) {
      s.helpers.insert("lane_src");
      use(s, "iron_lane");
      use(s, "iron_lane_width");
      const std::string from = std::string(src) + "(" + a[1] + ", iron_lane, iron_lane_width)";
      if (t == DType::Bool) return "(simd_shuffle(int(" + a[0] + "), " + from + ") != 0)";
      return "simd_shuffle(" + a[0] + ", " + from + ")";
    };
    const bool f32 = t == DType::F32;
    switch (in.op) {
      case Op::LaneShuffle: case Op::LaneBroadcast: return shuffle("iron_src_index");
      case Op::LaneShuffleXor: return shuffle("iron_src_xor");
      case Op::LaneShuffleUp: return shuffle("iron_src_up");
      case Op::LaneShuffleDown: return shuffle("iron_src_down");
      case Op::LaneMin:
        if (f32) {
          use(s, "iron_lane_width");
          s.helpers.insert("lane_min_f32");
          s.helpers.insert("fmin");
          return "iron_lane_min(" + a[0] + ", iron_lane_width)";
        }
        return "simd_min(" + a[0] + ")";
      case Op::LaneAnd: return "simd_and(" + a[0] + ")";
      case Op::LaneOr: return "simd_or(" + a[0] + ")";
      case Op::LaneInclusiveSum: case Op::LaneExclusiveSum: {
        const bool inclusive = in.op == Op::LaneInclusiveSum;
        if (f32) {
          use(s, "iron_lane");
          use(s, "iron_lane_width");
          s.helpers.insert("lane_scan_f32");
          return std::string(inclusive ? "iron_lane_inclusive_sum(" : "iron_lane_exclusive_sum(") + a[0] +
                 ", iron_lane, iron_lane_width)";
        }
        const std::string f = inclusive ? "simd_prefix_inclusive_sum(" : "simd_prefix_exclusive_sum(";
        return t == DType::I32 ? "as_type<int>(" + f + "as_type<uint>(" + a[0] + ")))" : f + a[0] + ")";
      }
      // A lane reads the 32-bit word of its own 32-lane segment of the simdgroup's vote.
      case Op::LaneBallot:
        use(s, "iron_lane");
        return "uint(static_cast<simd_vote::vote_t>(simd_ballot(" + a[0] + ")) >> (32u * (iron_lane >> 5)))";
      case Op::LaneAny: return "simd_any(" + a[0] + ")";
      case Op::LaneAll: return "simd_all(" + a[0] + ")";
      default: s.unsupported(in, name(), ir::mnemonic(in.op)); return a[0];
    }
  }

  // Integer atomics are Metal's own (relaxed). f32 memory is read as 32-bit words, and f32
  // add/min/max are compare-and-swap loops on them: Metal's float atomics add only, and none
  // has the min/max rule of docs/semantics.md. Metal has no 64-bit add, exchange or cas.
  std::string atomic(EmitState& s, const ir::Inst& in, DType t, const std::string& reg, const std::vector<std::string>& a,
                     std::vector<std::string>& lines) const override {
    using ir::Op;
    const bool global = ir::is_global_atomic(in.op);
    const std::string space = global ? "device" : "threadgroup";
    const std::string elem = global ? param_name(s.k.params[in.param()]) + "[" + a[0] + "]"
                                    : tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + a[0] + "]";
    const std::string& v = a.back();
    const Op kind = ir::atomic_kind(in.op);
    const std::string relaxed = "memory_order_relaxed";
    if (t == DType::F32 || t == DType::I32 || t == DType::U32) {
      const bool f32 = t == DType::F32;
      const std::string atom = f32 || t == DType::U32 ? "atomic_uint" : "atomic_int";
      const std::string word = f32 || t == DType::U32 ? "uint" : "int";
      const std::string ptr = reg + "_at";
      lines.push_back(space + " " + atom + "* " + ptr + " = reinterpret_cast<" + space + " " + atom + "*>(&" + elem + ");");
      auto bits = [&](const std::string& x) { return f32 ? "as_type<uint>(" + x + ")" : x; };
      auto value = [&](const std::string& x) { return f32 ? "as_type<float>(" + x + ")" : x; };
      if (kind == Op::AtomicExchange) return value("atomic_exchange_explicit(" + ptr + ", " + bits(v) + ", " + relaxed + ")");
      if (kind == Op::AtomicCas) {
        // The old value: a weak compare-and-swap retried while it failed spuriously.
        lines.push_back(word + " " + reg + "_old = " + bits(a[1]) + ";");
        lines.push_back("while (!atomic_compare_exchange_weak_explicit(" + ptr + ", &" + reg + "_old, " + bits(v) + ", " +
                        relaxed + ", " + relaxed + ") && " + reg + "_old == " + bits(a[1]) + ") {}");
        return value(reg + "_old");
      }
      if (!f32) {
        const char* fn = kind == Op::AtomicAdd   ? "atomic_fetch_add_explicit("
                         : kind == Op::AtomicMin ? "atomic_fetch_min_explicit("
                         : kind == Op::AtomicMax ? "atomic_fetch_max_explicit("
                         : kind == Op::AtomicAnd ? "atomic_fetch_and_explicit("
                         : kind == Op::AtomicOr  ? "atomic_fetch_or_explicit("
                                                 : nullptr;
        if (fn) return std::string(fn) + ptr + ", " + v + ", " + relaxed + ")";
      } else {
        std::string next;
        if (kind == Op::AtomicAdd) next = "as_type<float>(" + reg + "_old) + " + v;
        else if (kind == Op::AtomicMin || kind == Op::AtomicMax)
          next = fmin_fmax(s, kind == Op::AtomicMax, "as_type<float>(" + reg + "_old)", v);
        if (!next.empty()) {
          // On failure the compare-and-swap writes the value it saw into _old.
          lines.push_back("uint " + reg + "_old = atomic_load_explicit(" + ptr + ", " + relaxed + ");");
          lines.push_back("while (!atomic_compare_exchange_weak_explicit(" + ptr + ", &" + reg + "_old, as_type<uint>(" + next +
                          "), " + relaxed + ", " + relaxed + ")) {}");
          return "as_type<float>(" + reg + "_old)";
        }
      }
    }
    s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t) +
                                  (t == DType::U64 ? " (Metal's 64-bit atomics are min and max only)" : ""));
    return "0";
  }

  // No 16-bit float atomics: a compare-and-swap loop on the pair's 32-bit word, each element one
  // rounding of its exact sum (docs/semantics.md).
  void atomic_add_pair(EmitState& s, const ir::Inst&, const ir::Param& p, const std::string& reg, const std::string& pair,
                       const std::string& lo, const std::string& hi, std::vector<std::string>& lines) const override {
    const bool f16 = s.concrete(p.dtype) == DType::F16;
    if (f16) s.helpers.insert("f16");
    auto widen16 = [&](const std::string& bits) {
      return f16 ? "iron_f16_to_f32(" + bits + ")" : "as_type<float>((" + bits + ") << 16)";
    };
    auto narrow16 = [&](const std::string& x) {
      return f16 ? "(iron_f32_to_f16(" + x + ") & 0xffffu)" : "iron_f32_to_bf16(" + x + ")";
    };
    const std::string ptr = reg + "_at", relaxed = "memory_order_relaxed";
    lines.push_back("device atomic_uint* " + ptr + " = reinterpret_cast<device atomic_uint*>(" + param_name(p) +
                    " + 2ul * (ulong)(" + pair + "));");
    lines.push_back("const float " + reg + "_lo = " + widen16(narrow16(lo)) + ";");
    lines.push_back("const float " + reg + "_hi = " + widen16(narrow16(hi)) + ";");
    lines.push_back("uint " + reg + "_old = atomic_load_explicit(" + ptr + ", " + relaxed + ");");
    lines.push_back("while (!atomic_compare_exchange_weak_explicit(" + ptr + ", &" + reg + "_old, " +
                    narrow16(widen16(reg + "_old & 0xffffu") + " + " + reg + "_lo") + " | (" +
                    narrow16(widen16(reg + "_old >> 16") + " + " + reg + "_hi") + " << 16), " + relaxed + ", " + relaxed +
                    ")) {}");
  }

  // Wide accesses: 32-bit elements as float4/int4/uint4 (or 2-wide); 16-bit elements as uint
  // words holding two values each (element 0 in the low half).
  static std::string word_type(DType t, int chunk) {
    if (dtype_size(t) == 2) return chunk == 8 ? "uint4" : chunk == 4 ? "uint2" : "uint";
    const std::string base = t == DType::I32 ? "int" : t == DType::U32 ? "uint" : "float";
    return base + std::to_string(chunk);
  }

  void load_group(EmitState& s, const ir::Param& p, const std::string& idx, int width, const std::string& array,
                  std::vector<std::string>& lines) const override {
    const DType t = s.concrete(p.dtype);
    if (t == DType::F16) s.helpers.insert("f16");
    const int chunk = chunk_elems(t, width);
    static const char* comp[] = {"x", "y", "z", "w"};
    for (int o = 0; o < width; o += chunk) {
      const std::string w = word_type(t, chunk);
      std::string l = "{ const " + w + " t = *reinterpret_cast<device const " + w + "*>(" + param_name(p) + " + " + idx +
                      " + " + std::to_string(o) + "u);";
      if (dtype_size(t) == 2) {
        const int words = chunk / 2;
        for (int q = 0; q < words; ++q) {
          const std::string word = words == 1 ? std::string("t") : "t." + std::string(comp[q]);
          const std::string lo = array + "[" + std::to_string(o + 2 * q) + "]", hi = array + "[" + std::to_string(o + 2 * q + 1) + "]";
          if (t == DType::F16)
            l += " " + lo + " = iron_f16_to_f32(" + word + " & 0xffffu); " + hi + " = iron_f16_to_f32(" + word + " >> 16);";
          else
            l += " " + lo + " = as_type<float>(" + word + " << 16); " + hi + " = as_type<float>(" + word + " & 0xffff0000u);";
        }
      } else {
        for (int e = 0; e < chunk; ++e) l += " " + array + "[" + std::to_string(o + e) + "] = t." + comp[e] + ";";
      }
      lines.push_back(l + " }");
    }
  }

  void store_group(EmitState& s, const ir::Param& p, const std::string& idx, const std::vector<std::string>& values,
                   std::vector<std::string>& lines) const override {
    const DType t = s.concrete(p.dtype);
    if (t == DType::F16) s.helpers.insert("f16");
    const int width = int(values.size()), chunk = chunk_elems(t, width);
    for (int o = 0; o < width; o += chunk) {
      const std::string w = word_type(t, chunk);
      std::string make = w + "(";
      for (int e = 0; e < chunk; e += dtype_size(t) == 2 ? 2 : 1) {
        make += e ? ", " : "";
        if (dtype_size(t) != 2) {
          make += values[size_t(o + e)];
          continue;
        }
        const std::string& a = values[size_t(o + e)];
        const std::string& b = values[size_t(o + e + 1)];
        if (t == DType::F16) make += "((iron_f32_to_f16(" + a + ") & 0xffffu) | (iron_f32_to_f16(" + b + ") << 16))";
        else make += "(iron_f32_to_bf16(" + a + ") | (iron_f32_to_bf16(" + b + ") << 16))";
      }
      lines.push_back("*reinterpret_cast<device " + w + "*>(" + param_name(p) + " + " + idx + " + " + std::to_string(o) +
                      "u) = " + make + ");");
    }
  }

  // --- Cooperative tiles: simdgroup_matrix ------------------------------------------------
  // A 16x16 fragment is four 8x8 simdgroup matrices (block (i, j) at m[2i + j]); f8e4m3 A is
  // 16x32 (m[4i + k]) and B 32x16 (m[2k + j]). Elements pass through the simdgroup's 1 KiB of
  // the staging area (iron_tile_sc): a load has each lane write the elements it visits (rounded
  // to the input type, as the interpreter rounds them), then simdgroup_load reads the blocks; a
  // store or get goes the other way through simdgroup_store. f16 and f8e4m3 inputs are half
  // matrices (every f8e4m3 value is a half), bf16 inputs float matrices (every bf16 value is an
  // f32); the accumulator is float. simdgroup_multiply_accumulate sums in f32 in the hardware's
  // order: within the bound docs/semantics.md gives tensor-core products.
  static std::string tile_prelude_msl(const EmitState& s) {
    bool f16 = false, bf16 = false, fp8 = false, fp8_e5 = false, scale_add = false;
    ir::walk(s.k, [&](ir::Id id) {
      if (s.k.insts[id].op == ir::Op::TileScaleAdd) scale_add = true;
      const Type t = s.k.insts[id].type;
      if (!t.is_fragment() || t.role() == FragRole::Acc) return;
      const DType e = s.concrete(t);
      (e == DType::BF16 ? bf16 : e == DType::F8E4M3 ? fp8 : e == DType::F8E5M2 ? fp8_e5 : f16) = true;
    });
    const std::string sync = "  simdgroup_barrier(mem_flags::mem_threadgroup);\n";
    std::string out = "// Cooperative tiles: simdgroup_matrix 8x8 blocks\n";
    out += "struct iron_tile_acc { simdgroup_float8x8 m[4]; };\n";
    out += "iron_tile_acc iron_tile_fill(float v) {\n  iron_tile_acc f;\n"
           "  for (uint i = 0u; i < 4u; ++i) f.m[i] = make_filled_simdgroup_matrix<float, 8, 8>(v);\n  return f;\n}\n";
    out += "void iron_tile_store_begin(iron_tile_acc f, threadgroup float* sc) {\n" + sync +
           "  for (uint i = 0u; i < 2u; ++i)\n    for (uint j = 0u; j < 2u; ++j) simdgroup_store(f.m[2u * i + j], sc + i * 128u + j * 8u, 16);\n" +
           sync + "}\n";
    out += "void iron_tile_store_end() {\n" + sync + "}\n";
    out += "float iron_tile_get(iron_tile_acc f, threadgroup float* sc, uint r, uint c) {\n"
           "  iron_tile_store_begin(f, sc);\n  const float v = sc[r * 16u + c];\n" + sync + "  return v;\n}\n";
    struct Input {
      bool used;
      const char* sfx;
      const char* matrix;  // the simdgroup matrix type of A and B
      const char* elem;    // its element type in the staging area
    };
    const Input inputs[] = {{f16, "f16", "simdgroup_half8x8", "half"},
                            {bf16, "bf16", "simdgroup_float8x8", "float"},
                            {fp8, "e4m3", "simdgroup_half8x8", "half"},
                            {fp8_e5, "e5m2", "simdgroup_half8x8", "half"}};
    for (const Input& in : inputs) {
      if (!in.used) continue;
      const bool wide = std::string(in.sfx) == "e4m3" || std::string(in.sfx) == "e5m2";
      const std::string blocks = wide ? "8" : "4", sfx = in.sfx, elem = in.elem;
      for (const char* r : {"a", "b"}) {
        const std::string name = "iron_tile_" + std::string(r) + "_" + sfx;
        const bool a = std::string(r) == "a";
        // Rows x columns of the fragment: 16x16, or 16x32 (A) / 32x16 (B) for f8e4m3.
        const std::string cols = wide && a ? "32u" : "16u";
        const std::string rows_blocks = wide && !a ? "4u" : "2u", cols_blocks = wide && a ? "4u" : "2u";
        out += "struct " + name + " { " + in.matrix + " m[" + blocks + "]; };\n";
        // The value already is of the input type: its half (or f32) bits are exact.
        const std::string bits = elem == "half" ? "as_type<half>(ushort(iron_f32_to_f16(v)))" : "v";
        out += "void iron_tile_stage(thread " + name + "&, threadgroup float* sc, uint i, float v) {\n"
               "  reinterpret_cast<threadgroup " + elem + "*>(sc)[i] = " + bits + ";\n}\n";
        out += "void iron_tile_finish(thread " + name + "& f, threadgroup float* sc) {\n" + sync +
               "  threadgroup " + elem + "* e = reinterpret_cast<threadgroup " + elem + "*>(sc);\n"
               "  for (uint i = 0u; i < " + rows_blocks + "; ++i)\n"
               "    for (uint j = 0u; j < " + cols_blocks + "; ++j) simdgroup_load(f.m[" + cols_blocks +
               " * i + j], e + i * 8u * " + cols + " + j * 8u, " + cols.substr(0, 2) + ");\n" + sync + "}\n";
      }
      const std::string ksteps = wide ? "4u" : "2u";
      out += "iron_tile_acc iron_tile_mma(iron_tile_a_" + sfx + " a, iron_tile_b_" + sfx + " b, iron_tile_acc c) {\n"
             "  for (uint i = 0u; i < 2u; ++i)\n    for (uint j = 0u; j < 2u; ++j)\n      for (uint k = 0u; k < " + ksteps +
             "; ++k)\n        simdgroup_multiply_accumulate(c.m[2u * i + j], a.m[" + ksteps + " * i + k], b.m[2u * k + j], c.m[2u * i + j]);\n"
             "  return c;\n}\n";
    }
    // tile_scale_add: c + diag(s) x, the diagonal's two 8 x 8 blocks staged in the scratch
    // (zeros off the diagonal, so each element's sum has one nonzero product).
    if (scale_add)
      out += "iron_tile_acc iron_tile_scale_add(threadgroup const float* s, iron_tile_acc x, iron_tile_acc c, "
             "threadgroup float* sc, uint lane, uint width) {\n" + sync +
             "  for (uint i = lane; i < 128u; i += width) {\n"
             "    const uint r = (i >> 3) & 7u;\n    sc[i] = r == (i & 7u) ? s[(i >> 6) * 8u + r] : 0.0f;\n  }\n" + sync +
             "  simdgroup_float8x8 d[2];\n  simdgroup_load(d[0], sc, 8);\n  simdgroup_load(d[1], sc + 64u, 8);\n" + sync +
             "  for (uint i = 0u; i < 2u; ++i)\n    for (uint j = 0u; j < 2u; ++j)\n"
             "      simdgroup_multiply_accumulate(c.m[2u * i + j], d[i], x.m[2u * i + j], c.m[2u * i + j]);\n"
             "  return c;\n}\n";
    return out;
  }
};

}  // namespace

// The statements of one tile op on MSL (tiles.cpp dispatches here): the element loop over the
// lanes of the simdgroup, the staging helpers of tile_prelude_msl around it.
void msl_tile_op(EmitState& s, const Dialect& d, ir::Id id, const std::vector<std::string>& a, std::vector<std::string>& lines,
                 std::string& value) {
  const ir::Inst& in = s.k.insts[id];
  const std::string reg = "v" + std::to_string(id);
  switch (in.op) {
    case ir::Op::TileFill: value = "iron_tile_fill(" + a[0] + ")"; return;
    case ir::Op::TileMma: value = "iron_tile_mma(" + a[0] + ", " + a[1] + ", " + a[2] + ")"; return;
    case ir::Op::TileScaleAdd:
      value = "iron_tile_scale_add(&" + d.tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + a[1] + "], " + a[2] + ", " + a[3] +
              ", iron_tile_sc, iron_lane, iron_lane_width)";
      return;
    case ir::Op::TileGet:
      value = "iron_tile_get(" + a[0] + ", iron_tile_sc, " + std::to_string(in.attr(ir::Attr::Row)) + "u, " +
              std::to_string(in.attr(ir::Attr::Col)) + "u)";
      return;
    case ir::Op::TileLoad: case ir::Op::TileTgLoad: {
      const bool tg = in.op == ir::Op::TileTgLoad;
      const std::string off = a[tg ? 1 : 0], stride = a[tg ? 2 : 1];
      const DType elem = s.concrete(in.type);
      const std::string idx = tile_load_index(in, off, stride, "r", "c");
      std::string read;
      if (!tg) {
        read = d.load(s, s.k.params[in.param()], idx);
      } else {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string at = d.tg_name(s.k, alloc) + "[" + idx + "]";
        read = s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_load(at) : d.tg_load(s, s.concrete(alloc.type), at);
      }
      const bool a_role = in.type.role() == FragRole::A;
      // fp8: A is 16x32 and B 32x16 (512 elements); 16x16 otherwise.
      const bool wide = is_fp8(elem);
      const std::string end = wide ? "512u" : "256u";
      const std::string rc = wide && a_role ? "const uint r = i >> 5u, c = i & 31u;" : "const uint r = i >> 4u, c = i & 15u;";
      lines.push_back(tile_type(s, in.type) + " " + reg + ";");
      lines.push_back("for (uint i = iron_lane; i < " + end + "; i += iron_lane_width) {");
      lines.push_back("  " + rc);
      lines.push_back("  iron_tile_stage(" + reg + ", iron_tile_sc, i, " + d.cast(s, in, DType::F32, elem, read) + ");");
      lines.push_back("}");
      lines.push_back("iron_tile_finish(" + reg + ", iron_tile_sc);");
      return;
    }
    case ir::Op::TileStore: case ir::Op::TileTgStore: {
      const bool tg = in.op == ir::Op::TileTgStore;
      const std::string frag = a[tg ? 1 : 0], off = a[tg ? 2 : 1], stride = a[tg ? 3 : 2];
      const std::string idx = "(" + off + " + r * " + stride + " + c)";
      const std::string v = "iron_tile_sc[i]";
      std::string write;
      if (!tg) {
        write = d.store(s, s.k.params[in.param()], idx, v);
      } else {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string elem = d.tg_name(s.k, alloc) + "[" + idx + "]";
        write = s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_store(elem, v) : d.tg_store(s, s.concrete(alloc.type), elem, v);
      }
      lines.push_back("iron_tile_store_begin(" + frag + ", iron_tile_sc);");
      lines.push_back("for (uint i = iron_lane; i < 256u; i += iron_lane_width) {");
      lines.push_back("  const uint r = i >> 4u, c = i & 15u;");
      lines.push_back("  " + write + ";");
      lines.push_back("}");
      lines.push_back("iron_tile_store_end();");
      return;
    }
    default: s.unsupported(in, d.name(), std::string("'") + ir::mnemonic(in.op) + "' as a tile op"); return;
  }
}

std::unique_ptr<Dialect> make_msl_dialect() { return std::make_unique<MslDialect>(); }

}  // namespace iron::codegen
