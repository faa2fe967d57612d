// GLSL 450 dialect for Vulkan (compiled to SPIR-V by spirv.cpp). f16 and bf16 are stored as
// uint16_t and converted explicitly (exact widening, round-to-nearest-even narrowing: GLSL
// leaves float16_t(x) rounding to the driver). f32 division and sqrt go through the exact
// helpers of glsl_exact_math.inc (Vulkan allows 2.5 ulp division and an inexact sqrt). Lane reductions are subgroupShuffleXor
// butterflies in the interpreter's order; the subgroup size is queried from the device, never
// assumed. Ops GLSL leaves undefined (integer division by zero, shifts >= 32, out-of-range
// float->int, min/max of NaN) go through helpers with the results of docs/semantics.md.
#include <climits>
#include <cstdio>
#include <cmath>

#include "codegen/c_like.hpp"
#include "core/numeric.hpp"

namespace iron::codegen {
namespace {

// The helpers of glsl_exact_math.inc as strings (the unit tests compile the same text as C++).
#define IRON_GLSL_HELPER(name, ...) const char* const kGlsl_##name = #__VA_ARGS__;
#include "codegen/glsl_exact_math.inc"
#include "codegen/glsl_math.inc"
#undef IRON_GLSL_HELPER
#define IRON_FP8_HELPER(name, ...) const char* const kFp8_##name = #__VA_ARGS__;
#include "codegen/fp8_math.inc"
#undef IRON_FP8_HELPER

// Stringizing puts a helper on one line; this breaks it after `{`, `}` and statement `;` and
// indents by brace depth, so the generated shader stays readable.
std::string glsl_lines(const char* text) { return helper_lines(text); }

const char* axis_name(int64_t a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

DialectSpelling glsl_spelling() {
  DialectSpelling sp;
  sp.name = "GLSL";
  // 8-, 16- and 64-bit integers are the GL_EXT_shader_explicit_arithmetic_types_* types, which
  // compute in their own width (the dispatch check requires the device features).
  sp.u32 = "uint";
  sp.i8 = "int8_t";
  sp.u8 = "uint8_t";
  sp.i16 = "int16_t";
  sp.u16 = "uint16_t";
  sp.i64 = "int64_t";
  sp.u64 = "uint64_t";
  sp.c_casts = false;
  // Float values are `precise` (var_type): no contraction into fma or other reassociation the
  // IR does not say (docs/semantics.md); the execution modes in begin() keep NaN, Inf and -0.
  sp.const_decl = "";
  // `precise` only reaches operations that feed a precise variable: a float expression fused
  // into a store, a comparison or a cast would escape it (and could be contracted into an fma).
  // Every value is therefore declared; the driver's compiler fuses them again.
  sp.inline_fused = false;
  sp.float_suffix = "";
  sp.i64_suffix = "l";
  sp.u64_suffix = "ul";
  sp.float_to_bits = "floatBitsToUint";
  sp.bits_to_float = "uintBitsToFloat";
  sp.barrier = "memoryBarrierShared(); barrier();";
  sp.fence_threadgroup = "groupMemoryBarrier();";
  sp.fence_device = "memoryBarrier();";
  // Exact on every driver: SPIR-V Floor, Ceil, RoundEven, Trunc.
  sp.ops = {{ir::Op::Rint, "roundEven(%0)"}, {ir::Op::Rsqrt, "inversesqrt(%0)"}};
  return sp;
}

class GlslDialect final : public Dialect {
 public:
  GlslDialect() : Dialect(glsl_spelling()) {}

  std::string storage_type(DType t) const {
    switch (t) {
      case DType::F16: return "uint16_t";
      case DType::BF16: return "uint16_t";
      case DType::F8E4M3: case DType::F8E5M2: return "uint8_t";  // the fp8 bits
      default: return reg_type(t);
    }
  }
  std::string var_type(DType t) const override { return is_float(t) ? "precise " + reg_type(t) : reg_type(t); }

  void begin(EmitState& s, std::string& out) const override {
    const ir::Kernel& k = s.k;
    out += "#version 450\n";
    out += "// Iron kernel " + k.name + " (" + instantiation_name(s.dtype) + "), GLSL. Generated: do not edit.\n";
    if (s.uses_16bit_storage) out += "#extension GL_EXT_shader_16bit_storage : require\n";
    if (s.uses_f16 || s.uses_bf16 || s.uses_int16)
      out += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
    if (s.uses_int8) out += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
    if (s.uses_8bit_storage) out += "#extension GL_EXT_shader_8bit_storage : require\n";
    if (s.uses_int64) out += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (s.tile_coopmat) {
      out += "#extension GL_NV_cooperative_matrix : require\n";
      out += "#extension GL_KHR_memory_scope_semantics : require\n";
      out += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
    }
    if (s.uses_int64_atomics) out += "#extension GL_EXT_shader_atomic_int64 : require\n";
    if (s.uses_lane_ops) {
      out += "#extension GL_KHR_shader_subgroup_basic : require\n";
      out += "#extension GL_KHR_shader_subgroup_shuffle : require\n";
      if (s.helpers.count("lane_ballot")) out += "#extension GL_KHR_shader_subgroup_ballot : require\n";
      if (s.helpers.count("lane_vote")) out += "#extension GL_KHR_shader_subgroup_vote : require\n";
    }
    // SPIR-V float controls (SPV_KHR_float_controls), where the device supports them: f32 NaN,
    // Inf and signed zeros are exact, not subject to fast-math rewrites (SignedZeroInfNanPreserve
    // = 4461, capability 4466); f32 -> f16 conversions round to nearest even (RoundingModeRTE =
    // 4462, capability 4467).
    bool rte16 = s.f16_round_to_nearest_even && s.uses_f16;
    if (s.preserve_f32_specials || rte16) out += "#extension GL_EXT_spirv_intrinsics : require\n";
    if (s.preserve_f32_specials)
      out += "spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4466], 4461, 32);\n";
    if (rte16)
      out += "spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4467], 4462, 16);\n";
    out += "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n";
    for (size_t i = 0; i < k.params.size(); ++i) {
      const ir::Param& p = k.params[i];
      if (p.kind != ir::ParamKind::Buffer) continue;
      // An aliased buffer carries no access qualifier: another binding may write its memory.
      const char* access = ir::is_aliased(k, uint32_t(i)) ? ""
                           : p.access == ir::Access::Read ? "readonly "
                           : p.access == ir::Access::Write ? "writeonly " : "";
      int b = s.buffer_index[i];
      // fence_device publishes plain writes to other threadgroups: their buffers must be coherent.
      if (s.uses_fence_device && p.access != ir::Access::Read) access = "coherent ";
      // f32 atomics are compare-and-swap loops on a 32-bit word view of the same binding.
      if (s.f32_atomic_params.count(uint32_t(i)))
        out += "layout(std430, set = 0, binding = " + std::to_string(b) + ") " + access + "buffer IronBuffer" +
               std::to_string(b) + "bits { uint data[]; } " + param_name(p) + "_bits;\n";
      out += "layout(std430, set = 0, binding = " + std::to_string(b) + ") " + access +
             "buffer IronBuffer" + std::to_string(b) + " { " + storage_type(s.concrete(p.dtype)) + " data[]; } " +
             param_name(p) + ";\n";
      auto views = s.vector_chunks.find(uint32_t(i));
      if (views != s.vector_chunks.end())
        for (int chunk : views->second)
          out += "layout(std430, set = 0, binding = " + std::to_string(b) + ") " + access + "buffer IronBuffer" +
                 std::to_string(b) + "v" + std::to_string(chunk) + " { " + view_type(s.concrete(p.dtype), chunk) +
                 " data[]; } " + view_name(p, chunk) + ";\n";
    }
    bool any_scalar = false;
    for (const ir::Param& p : k.params) any_scalar = any_scalar || p.kind != ir::ParamKind::Buffer;
    if (any_scalar) {
      // Scalars, then blobs as u32 arrays (push_constant_layout).
      out += "layout(push_constant) uniform IronScalars {";
      std::vector<uint32_t> offsets;
      push_constant_layout(k, offsets);
      size_t si = 0;
      for (const ir::Param& p : k.params)
        if (p.kind == ir::ParamKind::Scalar)
          out += " layout(offset = " + std::to_string(offsets[si++]) + ") " + reg_type(p.dtype) + " " + param_name(p) + ";";
      for (const ir::Param& p : k.params)
        if (p.kind == ir::ParamKind::Blob)
          out += " layout(offset = " + std::to_string(offsets[si++]) + ") uint " + param_name(p) + "[" +
                 std::to_string(p.blob_bytes / 4) + "];";
      out += " } iron_scalars;\n";
    }
    // Threadgroup arrays at their real width (16-bit floats as uint16_t, like buffers). GLSL has
    // no addresses in shared memory, so an `align` attribute changes nothing here. An array sized
    // at dispatch is sized by a specialization constant holding its sizing parameter's value.
    std::set<uint32_t> spec_declared;
    for (ir::Id id : ir::threadgroup_layout(k)) {
      const ir::Inst& in = k.insts[id];
      std::string count = std::to_string(in.attr(ir::Attr::Count)) + "u";
      if (in.has(ir::Attr::CountParam)) {
        const uint32_t p = uint32_t(in.attr(ir::Attr::CountParam));
        const std::string spec = "iron_tg_size_" + k.params[p].name;
        if (spec_declared.insert(p).second)
          out += "layout(constant_id = " + std::to_string(kTgSpecBase + uint32_t(s.scalar_index[p])) + ") const uint " +
                 spec + " = 1u;\n";
        count += " * " + spec;
      }
      // An array f32 atomics act on is declared as words: compare-and-swap needs integer memory.
      const std::string storage = s.f32_atomic_allocs.count(id) ? std::string("uint") : tg_storage(s.concrete(in.type));
      out += "shared " + storage + " " + tg_name(k, in) + "[" + count + "];\n";
    }
    // A threadgroup alias is an array of its own here: GLSL cannot view one shared array's bytes
    // as another type. Programs the interpreter accepts never read bytes through a view other
    // than the one that wrote them, so they compute the same; the memory is not saved.
    for (ir::Id id : ir::threadgroup_aliases(k)) {
      const ir::Inst& in = k.insts[id];
      const std::string storage = s.f32_atomic_allocs.count(id) ? std::string("uint") : tg_storage(s.concrete(in.type));
      out += "shared " + storage + " " + tg_name(k, in) + "[" + std::to_string(in.attr(ir::Attr::Count)) + "u];\n";
    }
    if (s.uses_bf16) {
      out +=
          "float iron_bf16_to_f32(uint16_t b) { return uintBitsToFloat(uint(b) << 16); }\n"
          "uint16_t iron_f32_to_bf16(float f) {\n"
          "  uint u = floatBitsToUint(f);\n"
          "  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);\n"
          "  u += 0x7fffu + ((u >> 16) & 1u);\n"
          "  return uint16_t(u >> 16);\n"
          "}\n";
    }
    if (s.loop_check) {
      int status_binding = 0;
      for (int b : s.buffer_index) status_binding += b >= 0 ? 1 : 0;
      out += "layout(std430, set = 0, binding = " + std::to_string(status_binding) +
             ") buffer IronLoopStatus { uint data[4]; } iron_loop_status;\n"
             "void iron_loop_cut(uint line, uint file) {\n"
             "  iron_loop_status.data[0] = 1u;\n  iron_loop_status.data[1] = line;\n"
             "  iron_loop_status.data[2] = file;\n}\n";
    }
    if (s.uses_lane_ops) s.helpers.insert("fmax");  // lane_max of f32
    for (const std::string& h : s.helpers) out += helper(h);
    if (s.uses_lane_ops) {
      // Butterflies in the interpreter's order: offsets W/2 .. 1, v[l] op v[l ^ offset], so the
      // f32 rounding is the same on every backend of the same lane width.
      const char* types[] = {"float", "int", "uint"};
      for (const char* t : types) {
        std::string ty = t;
        std::string mx = ty == "float" ? "iron_fmax" : "max";
        // The butterfly loop counts against a driver loop limit too (EmitOptions).
        std::string cut = s.loop_check ? "  if (o > 0u) iron_loop_cut(0u, 0u);\n" : "";
        std::string prec = ty == "float" ? "precise " : "";
        out += ty + " iron_lane_sum(" + ty + " x) {\n"
               "  " + prec + ty + " v = x;\n"
               "  uint o = gl_SubgroupSize >> 1;\n"
               "  for (; o > 0u; o >>= 1) v = v + subgroupShuffleXor(v, o);\n" + cut +
               "  return v;\n}\n";
        out += ty + " iron_lane_max(" + ty + " v) {\n"
               "  uint o = gl_SubgroupSize >> 1;\n"
               "  for (; o > 0u; o >>= 1) v = " + mx + "(v, subgroupShuffleXor(v, o));\n" + cut +
               "  return v;\n}\n";
      }
    }
    out += lane_prelude(s);
    out += tile_prelude(s, false);
    out += "void main() {\n";
    if (s.helpers.count("zero"))
      out += "  precise float iron_zero = uintBitsToFloat(uint(gl_NumWorkGroups.x == 0u) << 31);\n";
    if (s.helpers.count("negzero"))
      out += "  precise float iron_neg_zero = uintBitsToFloat(uint(gl_NumWorkGroups.x != 0u) << 31);\n";
  }


  std::string builtin(EmitState& s, const ir::Inst& in) const override {
    std::string a = axis_name(in.attr(ir::Attr::Axis));
    switch (in.op) {
      case ir::Op::ThreadId:
        // thread_id64 (a u64 result): gl_GlobalInvocationID is 32-bit and would wrap. The
        // group size is a specialization constant, and widening one is a constant operation
        // SPIR-V 1.3 lacks, so a helper takes it as an ordinary argument.
        if (in.type.elem() == DType::U64) {
          s.helpers.insert("thread_id64");
          return "iron_thread_id64(gl_WorkGroupID." + a + ", gl_WorkGroupSize." + a + ", gl_LocalInvocationID." + a + ")";
        }
        return "gl_GlobalInvocationID." + a;
      case ir::Op::ProgramId: return "gl_WorkGroupID." + a;
      case ir::Op::LocalId: return "gl_LocalInvocationID." + a;
      case ir::Op::GroupSize: return "gl_WorkGroupSize." + a;
      case ir::Op::NumPrograms: return "gl_NumWorkGroups." + a;
      case ir::Op::LaneId: return "gl_SubgroupInvocationID";
      case ir::Op::LaneWidth: return "gl_SubgroupSize";
      case ir::Op::SimdGroupId: return "gl_SubgroupID";
      case ir::Op::NumSimdGroups: return "gl_NumSubgroups";
      default: s.unsupported(in, name(), std::string("built-in ") + ir::mnemonic(in.op)); return "0";
    }
  }

  std::string scalar(EmitState&, const ir::Param& p) const override { return "iron_scalars." + param_name(p); }

  std::string tg_storage(DType t) const { return t == DType::Bool ? "bool" : storage_type(t); }
  std::string tg_load(EmitState& s, DType t, const std::string& elem) const override {
    switch (t) {
      case DType::F16: s.helpers.insert("f16"); return "iron_f16_to_f32(uint(" + elem + "))";
      case DType::BF16: return "iron_bf16_to_f32(" + elem + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return "iron_e4m3_to_f32(uint(" + elem + "))";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return "iron_e5m2_to_f32(uint(" + elem + "))";
      default: return elem;
    }
  }
  std::string tg_store(EmitState& s, DType t, const std::string& elem, const std::string& v) const override {
    switch (t) {
      case DType::F16: s.helpers.insert("f16"); return elem + " = uint16_t(iron_f32_to_f16(" + v + "))";
      case DType::BF16: return elem + " = iron_f32_to_bf16(" + v + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return elem + " = uint8_t(iron_f32_to_e4m3(" + v + "))";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return elem + " = uint8_t(iron_f32_to_e5m2(" + v + "))";
      default: return elem + " = " + v;
    }
  }

  // GLSL indexes arrays with 32-bit integers only. A 64-bit index is narrowed: a storage buffer
  // the device can bind is at most maxStorageBufferRange (< 2^32) bytes, and threadgroup memory
  // far less, so an index the narrowing changes is out of range already. 8- and 16-bit indices
  // widen exactly.
  std::string array_index(DType t, const std::string& idx) const override {
    if (int_bits(t) == 32 || !is_integer(t)) return idx;
    return std::string(is_signed_integer(t) ? "int(" : "uint(") + idx + ")";
  }
  std::string load(EmitState& s, const ir::Param& p, const std::string& idx) const override {
    if (p.kind == ir::ParamKind::Blob) return "iron_scalars." + param_name(p) + "[" + idx + "]";  // a push-constant word
    std::string e = param_name(p) + ".data[" + idx + "]";
    switch (s.concrete(p.dtype)) {
      case DType::F16: s.helpers.insert("f16"); return "iron_f16_to_f32(uint(" + e + "))";
      case DType::BF16: return "iron_bf16_to_f32(" + e + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return "iron_e4m3_to_f32(uint(" + e + "))";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return "iron_e5m2_to_f32(uint(" + e + "))";
      default: return e;
    }
  }

  std::string store(EmitState& s, const ir::Param& p, const std::string& idx, const std::string& v) const override {
    std::string e = param_name(p) + ".data[" + idx + "] = ";
    switch (s.concrete(p.dtype)) {
      case DType::F16: s.helpers.insert("f16"); return e + "uint16_t(iron_f32_to_f16(" + v + "))";
      case DType::BF16: return e + "iron_f32_to_bf16(" + v + ")";
      case DType::F8E4M3: s.helpers.insert("e4m3"); return e + "uint8_t(iron_f32_to_e4m3(" + v + "))";
      case DType::F8E5M2: s.helpers.insert("e5m2"); return e + "uint8_t(iron_f32_to_e5m2(" + v + "))";
      default: return e + v;
    }
  }


  // ops.def's spellings (floor, exp, tanh, fma, ...; roundEven and inversesqrt in
  // DialectSpelling) for the rest; here what GLSL computes through Iron's helpers. The driver's
  // functions are within the bounds of docs/semantics.md; erf, pow, the range reduction of sin
  // and cos, the decomposition of log2's argument and exp2's subnormal range are Iron's
  // (glsl_math.inc), sqrt exact (glsl_exact_math.inc).
  std::string math(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const override {
    const bool f = is_float(t), i32 = is_integer(t);
    auto call = [&](const char* helper, const std::string& fn) {
      s.helpers.insert(helper);
      std::string args;
      for (const std::string& x : a) args += (args.empty() ? "" : ", ") + x;
      return fn + "(" + args + ")";
    };
    if (f) {
      std::string helper = iron_math_call(s, in.op, a);
      if (!helper.empty()) return helper;
    }
    switch (in.op) {
      case ir::Op::MulHi:
        if (i32) return t == DType::I32 ? call("mulhi_i32", "iron_mulhi_i32") : call("mulhi_u32", "iron_mulhi_u32");
        break;
      // bitCount and findMSB return int; findMSB of a uint 0 is -1, so 31 - findMSB is 32 there.
      case ir::Op::Popcount: if (i32) return reg_type(t) + "(bitCount(" + a[0] + "))"; break;
      case ir::Op::Clz: if (i32) return reg_type(t) + "(31 - findMSB(uint(" + a[0] + ")))"; break;
      case ir::Op::Fma:
        // f16 / bf16: one rounding of the exact a * b + c, the f32 rounded to odd then to the
        // dtype (docs/semantics.md). f16 in f32 alone; bf16 needs shaderFloat64.
        if (t == DType::F16 || t == DType::BF16) {
          const char* helper = t == DType::F16 ? "fma_odd_f16" : "fma_odd";
          s.helpers.insert(helper);
          return cast(s, in, DType::F32, t, std::string("iron_") + helper + "(" + a[0] + ", " + a[1] + ", " + a[2] + ")");
        }
        if (f && s.emulate_fma) return call("fma", "iron_fma");
        break;
      default: break;
    }
    return Dialect::math(s, in, t, a);
  }

  std::string cast(EmitState& s, const ir::Inst& in, DType from, DType to, const std::string& x) const override {
    const bool wide_or_narrow = int_bits(from) != 32 && is_integer(from);
    if (to == DType::Bool) return wide_or_narrow ? "(" + x + " != " + convert(from, "0") + ")" : "bool(" + x + ")";
    if (from == DType::Bool && is_integer(to) && int_bits(to) != 32)
      return "(" + x + " ? " + convert(to, "1") + " : " + convert(to, "0") + ")";
    // int(f) and uint(f) are undefined out of range: helpers saturate and map NaN to 0.
    if (is_float(from) && to == DType::I32) { s.helpers.insert("f2i"); return "iron_f2i(" + x + ")"; }
    if (is_float(from) && to == DType::U32) { s.helpers.insert("f2u"); return "iron_f2u(" + x + ")"; }
    // A converted integer or bool constant 0 is a constant +0.0 to the driver: spelled opaquely.
    const ir::Inst& operand = s.k.insts[in.operands[0]];
    bool zero_constant = !is_float(from) && operand.op == ir::Op::Const && operand.attr(ir::Attr::Value) == 0;
    std::string as_float = is_float(from) ? x : zero_constant ? float_zero(s, false) : "float(" + x + ")";
    std::string other = cast_new_types(s, from, to, x, as_float);
    if (!other.empty()) return other;
    switch (to) {
      case DType::F32: return as_float;
      case DType::F16: s.helpers.insert("f16"); return "iron_f16_to_f32(iron_f32_to_f16(" + as_float + "))";
      case DType::BF16: return "iron_bf16_to_f32(iron_f32_to_bf16(" + as_float + "))";
      default: return reg_type(to) + "(" + x + ")";
    }
  }

  std::string bitcast(EmitState& s, const ir::Inst& in, DType from, DType to, const std::string& x) const override {
    // 16 bits: a 16-bit float register is narrowed to its dtype for its bits (as a store would);
    // bits become a 16-bit float through its exact widening.
    if (dtype_size(from) == 2 || dtype_size(to) == 2) {
      if (from == DType::F16 || to == DType::F16) s.helpers.insert("f16");
      std::string bits = from == DType::F16    ? "uint16_t(iron_f32_to_f16(" + x + "))"
                         : from == DType::BF16 ? "iron_f32_to_bf16(" + x + ")"
                                               : "uint16_t(" + x + ")";
      if (to == DType::F16) return "iron_f16_to_f32(uint(" + bits + "))";
      if (to == DType::BF16) return "iron_bf16_to_f32(" + bits + ")";
      return reg_type(to) + "(" + bits + ")";
    }
    if (to == DType::F32) {
      // An integer constant's bits would become a float constant to the driver: a zero is spelled
      // opaquely (see float_zero).
      const ir::Inst& operand = s.k.insts[in.operands[0]];
      if (operand.op == ir::Op::Const && (uint32_t(operand.attr(ir::Attr::Value)) & 0x7fffffffu) == 0)
        return float_zero(s, uint32_t(operand.attr(ir::Attr::Value)) != 0);
      return (from == DType::I32 ? "intBitsToFloat(" : "uintBitsToFloat(") + x + ")";
    }
    if (from == DType::F32) return (to == DType::I32 ? "floatBitsToInt(" : "floatBitsToUint(") + x + ")";
    return reg_type(to) + "(" + x + ")";
  }


  // lavapipe's code generator (gallivm) folds x + 0.0 to x, 0.0 - x to -x and x * 0.0 to 0.0
  // whenever an operand is the constant +0.0, and x - (-0.0) to x, execution modes and `precise`
  // notwithstanding: wrong for x = -0, NaN, +-Inf and negative x. Zeros the driver cannot see as
  // constants (gl_NumWorkGroups.x is never 0 when the shader runs) keep those ops IEEE.
  std::string float_zero(EmitState& s, bool negative) const override {
    s.helpers.insert(negative ? "negzero" : "zero");
    return negative ? "iron_neg_zero" : "iron_zero";
  }

  std::string float_div(EmitState& s, const std::string& a, const std::string& b) const override {
    s.helpers.insert("fdiv");
    return "iron_div_f32(" + a + ", " + b + ")";
  }
  std::string helper(const std::string& name) const override {
    // The driver's own results are only the starting estimates (glsl_exact_math.inc).
    if (name == "f16") return glsl_lines(kGlsl_f16_conversions);
    if (name == "thread_id64")
      return "uint64_t iron_thread_id64(uint group, uint size, uint local) {\n"
             "  return uint64_t(group) * uint64_t(size) + uint64_t(local);\n}\n";
    if (name == "e4m3") return glsl_lines(kFp8_e4m3);
    if (name == "e5m2") return glsl_lines(kFp8_e5m2);
    if (name == "fdiv")
      return "float iron_div_estimate(float x, float y) { return x / y; }\n" + glsl_lines(kGlsl_fdiv);
    if (name == "fsqrt") return "float iron_sqrt_estimate(float x) { return sqrt(x); }\n" + glsl_lines(kGlsl_fsqrt);
    if (name == "erf") return glsl_lines(kGlsl_erf);
    if (name == "pow") return glsl_lines(kGlsl_pow);
    if (name == "log") return glsl_lines(kGlsl_log);
    if (name == "log2") return glsl_lines(kGlsl_log2);
    if (name == "exp2") return glsl_lines(kGlsl_exp2);
    if (name == "trig") return glsl_lines(kGlsl_trig);
    if (name == "mulhi_i32")
      return "int iron_mulhi_i32(int a, int b) {\n  int hi, lo;\n  imulExtended(a, b, hi, lo);\n  return hi;\n}\n";
    if (name == "mulhi_u32")
      return "uint iron_mulhi_u32(uint a, uint b) {\n  uint hi, lo;\n  umulExtended(a, b, hi, lo);\n  return hi;\n}\n";
    if (name == "f2i")
      return "int iron_f2i(float x) {\n"
             "  if ((floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u) return 0;\n"
             "  if (x >= 2147483648.0) return 2147483647;\n"
             "  if (x <= -2147483648.0) return int(0x80000000u);\n"
             "  return int(x);\n}\n";
    if (name == "f2u")
      return "uint iron_f2u(float x) {\n"
             "  if ((floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u || x <= 0.0) return 0u;\n"
             "  if (x >= 4294967296.0) return 0xffffffffu;\n"
             "  return uint(x);\n}\n";
    if (name == "pair_f16" || name == "pair_bf16") {
      const bool h = name == "pair_f16";
      return pair_helpers_via_f32(h, h ? "iron_f16_to_f32((w >> (16u * i)) & 0xffffu)" : "uintBitsToFloat((w >> (16u * i)) << 16)",
                                  h ? "(iron_f32_to_f16(x) & 0xffffu)" : "uint(iron_f32_to_bf16(x))", "precise float",
                                  h ? "iron_fma_odd_f16" : "iron_fma_odd");
    }
    if (name == "fma_odd_f16")
      // num::fma_round_odd for f16 operands without f64: their product is exact in f32 (22
      // significant bits, magnitudes 2^-48 .. 2^32) and every value involved is a multiple of
      // 2^-48, so the f32 sum's error (TwoSum) is exact and no f32 subnormal occurs. An inexact
      // sum with an even last bit moves one step toward the exact value: the odd neighbour.
      return "float iron_fma_odd_f16(float a, float b, float c) {\n"
             "  precise float p = a * b;\n"
             "  precise float s = p + c;\n"
             "  if ((floatBitsToUint(s) & 0x7f800000u) == 0x7f800000u) return s;\n"
             "  precise float v = s - p;\n"
             "  precise float err = (p - (s - v)) + (c - v);\n"
             "  uint bits = floatBitsToUint(s);\n"
             "  if (err == 0.0 || (bits & 1u) == 1u) return s;\n"
             "  if ((err > 0.0) == (s > 0.0)) bits += 1u;\n"
             "  else bits -= 1u;\n"
             "  return uintBitsToFloat(bits);\n}\n";
    if (name == "fma_odd")
      // num::fma_round_odd: a * b + c rounded to odd at f32 (exact, or truncated with the last
      // bit set), whose rounding to f16 / bf16 is the single rounding of the exact value.
      return "float iron_fma_odd(float a, float b, float c) {\n"
             "  precise double p = double(a) * double(b);\n"
             "  precise double dc = double(c);\n"
             "  precise double s = p + dc;\n"
             "  if ((unpackDouble2x32(s).y & 0x7ff00000u) == 0x7ff00000u) return float(s);\n"
             "  precise double v = s - p;\n"
             "  precise double err = (p - (s - v)) + (dc - v);\n"
             "  if (abs(s) > 3.4028234663852886e38lf) return s > 0.0lf ? uintBitsToFloat(0x7f7fffffu) : uintBitsToFloat(0xff7fffffu);\n"
             "  precise float f = float(s);\n"
             "  precise double df = double(f);\n"
             "  if (err == 0.0lf && df == s) return f;\n"
             "  uint bits = floatBitsToUint(f);\n"
             "  precise double over = (df - s) - err;\n"
             "  if ((over > 0.0lf) == (s > 0.0lf)) bits -= 1u;\n"
             "  return uintBitsToFloat(bits | 1u);\n}\n";
    if (name == "fma")
      // a * b is exact in f64 and p + c is rounded once; TwoSum gives that rounding's error, and
      // an inexact even sum moves to its odd neighbour towards the exact value (round to odd),
      // so the final f64 -> f32 rounding is the single rounding of a * b + c. Inf and NaN sums
      // are already the answer.
      return "float iron_fma(float a, float b, float c) {\n"
             "  precise double p = double(a) * double(b);\n"
             "  precise double dc = double(c);\n"
             "  precise double s = p + dc;\n"
             "  uvec2 w = unpackDouble2x32(s);\n"
             "  if ((w.y & 0x7ff00000u) == 0x7ff00000u) return float(s);\n"
             "  precise double v = s - p;\n"
             "  precise double err = (p - (s - v)) + (dc - v);\n"
             "  if (err != 0.0lf && (w.x & 1u) == 0u) {\n"
             "    if ((err > 0.0lf) == (s > 0.0lf)) {\n"
             "      w.x += 1u;\n"
             "      if (w.x == 0u) w.y += 1u;\n"
             "    } else {\n"
             "      if (w.x == 0u) w.y -= 1u;\n"
             "      w.x -= 1u;\n"
             "    }\n"
             "    s = packDouble2x32(w);\n"
             "  }\n"
             "  return float(s);\n}\n";
    std::string text = int_helper(name);
    if (text.empty()) text = f2int_helper(name, "floatBitsToUint");
    return text.empty() ? minmax_helper(name, "floatBitsToUint", "uintBitsToFloat") : text;
  }

  // Pairs: every element in f32 and rounded once, as the scalar ops (no 16-bit arithmetic types,
  // so nothing depends on a driver's f16 rounding or denormal mode); fma through
  // iron_fma_odd_f16 / iron_fma_odd, min and max through iron_fmin / iron_fmax, neg and abs on
  // the sign bits.
  std::string pair_op(EmitState& s, const ir::Inst& in, DType elem, const std::vector<std::string>& a) const override {
    for (const char* h : {"fmin", "fmax"}) s.helpers.insert(h);
    s.helpers.insert(elem == DType::F16 ? "fma_odd_f16" : "fma_odd");
    if (elem == DType::F16) s.helpers.insert("f16");
    return pair_call(s, in, elem, a);
  }


  // Lane-op helpers the body asked for. Every shuffle is subgroupShuffle from a source lane
  // computed here (a source outside the subgroup leaves the lane its own value,
  // docs/semantics.md): GLSL leaves out-of-range shuffles undefined, and one primitive keeps the
  // device requirement at VK_SUBGROUP_FEATURE_SHUFFLE_BIT. Reductions and scans run in the
  // interpreter's order, never subgroupMin/subgroupInclusiveAdd, whose order is the driver's.
  std::string lane_prelude(const EmitState& s) const {
    std::string out;
    std::string cut = s.loop_check ? "  if (o < gl_SubgroupSize) iron_loop_cut(0u, 0u);\n" : "";
    std::string cut_down = s.loop_check ? "  if (o > 0u) iron_loop_cut(0u, 0u);\n" : "";
    if (s.helpers.count("lane_src"))
      out += "uint iron_src_index(uint i) { return i < gl_SubgroupSize ? i : gl_SubgroupInvocationID; }\n"
             "uint iron_src_xor(uint m) { uint l = gl_SubgroupInvocationID; return m < gl_SubgroupSize ? (l ^ m) : l; }\n"
             "uint iron_src_up(uint d) { uint l = gl_SubgroupInvocationID; return d <= l ? l - d : l; }\n"
             "uint iron_src_down(uint d) { uint l = gl_SubgroupInvocationID; return d < gl_SubgroupSize - l ? l + d : l; }\n";
    struct Red {
      const char* name;
      const char* f, *i, *u;
    };
    const Red reds[] = {{"lane_min", "iron_fmin(v, t)", "min(v, t)", "min(v, t)"},
                        {"lane_and", nullptr, "(v & t)", "(v & t)"},
                        {"lane_or", nullptr, "(v | t)", "(v | t)"}};
    for (const Red& r : reds) {
      if (!s.helpers.count(r.name)) continue;
      const char* types[] = {"float", "int", "uint"};
      const char* combine[] = {r.f, r.i, r.u};
      for (int i = 0; i < 3; ++i) {
        if (!combine[i]) continue;
        std::string ty = types[i], prec = i == 0 ? "precise " : "";
        out += ty + " iron_" + r.name + "(" + ty + " x) {\n  " + prec + ty + " v = x;\n  uint o = gl_SubgroupSize >> 1;\n"
               "  for (; o > 0u; o >>= 1) {\n    " + prec + ty + " t = subgroupShuffleXor(v, o);\n    v = " + combine[i] +
               ";\n  }\n" + cut_down + "  return v;\n}\n";
      }
    }
    if (s.helpers.count("lane_scan")) {
      const char* types[] = {"float", "int", "uint"};
      const char* zero[] = {"0.0", "0", "0u"};
      for (int i = 0; i < 3; ++i) {
        std::string ty = types[i], prec = i == 0 ? "precise " : "";
        out += ty + " iron_lane_inclusive_sum(" + ty + " x) {\n  " + prec + ty + " v = x;\n"
               "  uint l = gl_SubgroupInvocationID;\n  uint o = 1u;\n  for (; o < gl_SubgroupSize; o <<= 1) {\n"
               "    " + prec + ty + " t = subgroupShuffle(v, l >= o ? l - o : l);\n    if (l >= o) v = t + v;\n  }\n" + cut +
               "  return v;\n}\n";
        out += ty + " iron_lane_exclusive_sum(" + ty + " x) {\n  " + prec + ty + " s = iron_lane_inclusive_sum(x);\n"
               "  uint l = gl_SubgroupInvocationID;\n  " + prec + ty + " t = subgroupShuffle(s, l > 0u ? l - 1u : 0u);\n"
               "  return l > 0u ? t : " + zero[i] + ";\n}\n";
      }
    }
    return out;
  }

  std::string lane_op(EmitState& s, const ir::Inst& in, DType, const std::vector<std::string>& a) const override {
    using ir::Op;
    auto shuffle = [&](const char* src) {
      s.helpers.insert("lane_src");
      return "subgroupShuffle(" + a[0] + ", " + src + "(" + a[1] + "))";
    };
    switch (in.op) {
      case Op::LaneShuffle: case Op::LaneBroadcast: return shuffle("iron_src_index");
      case Op::LaneShuffleXor: return shuffle("iron_src_xor");
      case Op::LaneShuffleUp: return shuffle("iron_src_up");
      case Op::LaneShuffleDown: return shuffle("iron_src_down");
      case Op::LaneMin: case Op::LaneAnd: case Op::LaneOr: {
        const char* n = in.op == Op::LaneMin ? "lane_min" : in.op == Op::LaneAnd ? "lane_and" : "lane_or";
        s.helpers.insert(n);
        if (in.op == Op::LaneMin) s.helpers.insert("fmin");
        return std::string("iron_") + n + "(" + a[0] + ")";
      }
      case Op::LaneInclusiveSum: s.helpers.insert("lane_scan"); return "iron_lane_inclusive_sum(" + a[0] + ")";
      case Op::LaneExclusiveSum: s.helpers.insert("lane_scan"); return "iron_lane_exclusive_sum(" + a[0] + ")";
      // uvec4 of subgroup bits: a lane reads the word of its own 32-lane segment.
      case Op::LaneBallot: s.helpers.insert("lane_ballot"); return "subgroupBallot(" + a[0] + ")[gl_SubgroupInvocationID >> 5]";
      case Op::LaneAny: s.helpers.insert("lane_vote"); return "subgroupAny(" + a[0] + ")";
      case Op::LaneAll: s.helpers.insert("lane_vote"); return "subgroupAll(" + a[0] + ")";
      default: s.unsupported(in, name(), ir::mnemonic(in.op)); return a[0];
    }
  }

  // Integer atomics are GLSL's own. f32 memory is a word view (a `_bits` buffer view, or a
  // `shared uint` array), and f32 add/min/max are compare-and-swap loops on it: float atomics are
  // an optional device feature, and none has the min/max rule of docs/semantics.md.
  std::string atomic(EmitState& s, const ir::Inst& in, DType t, const std::string& reg, const std::vector<std::string>& a,
                     std::vector<std::string>& lines) const override {
    using ir::Op;
    const bool global = ir::is_global_atomic(in.op);
    const bool f32 = t == DType::F32;
    std::string mem = global ? param_name(s.k.params[in.param()]) + (f32 ? "_bits" : "") + ".data[" + a[0] + "]"
                             : tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + a[0] + "]";
    const std::string& v = a.back();
    Op kind = ir::atomic_kind(in.op);
    if (f32) {
      if (kind == Op::AtomicExchange) return "uintBitsToFloat(atomicExchange(" + mem + ", floatBitsToUint(" + v + ")))";
      if (kind == Op::AtomicCas)
        return "uintBitsToFloat(atomicCompSwap(" + mem + ", floatBitsToUint(" + a[1] + "), floatBitsToUint(" + v + ")))";
      std::string next;
      if (kind == Op::AtomicAdd) next = "uintBitsToFloat(" + reg + "_seen) + " + v;
      else if (kind == Op::AtomicMin || kind == Op::AtomicMax) next = fmin_fmax(s, kind == Op::AtomicMax, "uintBitsToFloat(" + reg + "_seen)", v);
      if (next.empty()) {
        s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of f32");
        return "0.0";
      }
      lines.push_back("uint " + reg + "_old = " + mem + ";");
      lines.push_back("uint " + reg + "_seen;");
      lines.push_back("do {");
      lines.push_back("  " + reg + "_seen = " + reg + "_old;");
      lines.push_back("  precise float " + reg + "_next = " + next + ";");
      lines.push_back("  " + reg + "_old = atomicCompSwap(" + mem + ", " + reg + "_seen, floatBitsToUint(" + reg + "_next));");
      lines.push_back("} while (" + reg + "_old != " + reg + "_seen);");
      if (s.loop_check)
        lines.push_back("if (" + reg + "_old != " + reg + "_seen) iron_loop_cut(" + std::to_string(in.loc.line) + "u, " +
                        std::to_string(in.loc.file) + "u);");
      return "uintBitsToFloat(" + reg + "_old)";
    }
    if (t == DType::I32 || t == DType::U32 || t == DType::U64) {
      // u64 through GL_EXT_shader_atomic_int64 (device features shaderBufferInt64Atomics and
      // shaderSharedInt64Atomics; the dispatch check rejects a device without them); the
      // verifier allows only add, exchange and cas on it.
      switch (kind) {
        case Op::AtomicAdd: return "atomicAdd(" + mem + ", " + v + ")";
        case Op::AtomicMin: return "atomicMin(" + mem + ", " + v + ")";
        case Op::AtomicMax: return "atomicMax(" + mem + ", " + v + ")";
        case Op::AtomicAnd: return "atomicAnd(" + mem + ", " + v + ")";
        case Op::AtomicOr: return "atomicOr(" + mem + ", " + v + ")";
        case Op::AtomicExchange: return "atomicExchange(" + mem + ", " + v + ")";
        case Op::AtomicCas: return "atomicCompSwap(" + mem + ", " + a[1] + ", " + v + ")";
        default: break;
      }
    }
    s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t));
    return "0";
  }

  // GLSL has no 16-bit float atomics: a compare-and-swap loop on the pair's 32-bit word (the
  // `_bits` view), each element one rounding of its exact sum (docs/semantics.md).
  void atomic_add_pair(EmitState& s, const ir::Inst& in, const ir::Param& p, const std::string& reg,
                       const std::string& pair, const std::string& lo, const std::string& hi,
                       std::vector<std::string>& lines) const override {
    const bool f16 = s.concrete(p.dtype) == DType::F16;
    if (f16) s.helpers.insert("f16");
    auto widen = [&](const std::string& bits) {
      return f16 ? "iron_f16_to_f32(" + bits + ")" : "uintBitsToFloat((" + bits + ") << 16)";
    };
    auto narrow = [&](const std::string& x) {
      return f16 ? "iron_f32_to_f16(" + x + ")" : "uint(iron_f32_to_bf16(" + x + "))";
    };
    const std::string word = param_name(p) + "_bits.data[" + pair + "]";
    lines.push_back("precise float " + reg + "_lo = " + widen(narrow(lo)) + ";");
    lines.push_back("precise float " + reg + "_hi = " + widen(narrow(hi)) + ";");
    lines.push_back("uint " + reg + "_old = " + word + ";");
    lines.push_back("uint " + reg + "_seen;");
    lines.push_back("do {");
    lines.push_back("  " + reg + "_seen = " + reg + "_old;");
    lines.push_back("  precise float " + reg + "_a = " + widen(reg + "_seen & 0xffffu") + " + " + reg + "_lo;");
    lines.push_back("  precise float " + reg + "_b = " + widen(reg + "_seen >> 16") + " + " + reg + "_hi;");
    lines.push_back("  " + reg + "_old = atomicCompSwap(" + word + ", " + reg + "_seen, " + narrow(reg + "_a") + " | (" +
                    narrow(reg + "_b") + " << 16));");
    lines.push_back("} while (" + reg + "_old != " + reg + "_seen);");
    if (s.loop_check)
      lines.push_back("if (" + reg + "_old != " + reg + "_seen) iron_loop_cut(" + std::to_string(in.loc.line) + "u, " +
                      std::to_string(in.loc.file) + "u);");
  }


  // A shared array that f32 atomics act on is declared `shared uint`: plain accesses convert.
  std::string tg_word_load(const std::string& elem) const override { return "uintBitsToFloat(" + elem + ")"; }
  std::string tg_word_store(const std::string& elem, const std::string& v) const override {
    return elem + " = floatBitsToUint(" + v + ")";
  }

  // Wide views are extra declarations of the same binding with a vector element type (SPIR-V
  // allows aliased storage-buffer variables): vec/ivec/uvec for 32-bit elements, and uint words
  // holding two 16-bit values each for f16 (iron_f16_to_f32) and bf16 (shifts).
  static std::string view_type(DType t, int chunk) {
    if (dtype_size(t) == 2) return chunk == 8 ? "uvec4" : chunk == 4 ? "uvec2" : "uint";
    std::string base = t == DType::I32 ? "ivec" : t == DType::U32 ? "uvec" : "vec";
    return base + std::to_string(chunk);
  }
  std::string view_name(const ir::Param& p, int chunk) const { return param_name(p) + "_v" + std::to_string(chunk); }
  static int log2i(int v) { return v == 8 ? 3 : v == 4 ? 2 : v == 2 ? 1 : 0; }

  void load_group(EmitState& s, const ir::Param& p, const std::string& idx, int width, const std::string& array,
                  std::vector<std::string>& lines) const override {
    DType t = s.concrete(p.dtype);
    if (t == DType::F16) s.helpers.insert("f16");
    int chunk = chunk_elems(t, width);
    static const char* comp[] = {"x", "y", "z", "w"};
    for (int o = 0; o < width; o += chunk) {
      std::string w = view_type(t, chunk);
      std::string src = view_name(p, chunk) + ".data[(" + idx + " + " + std::to_string(o) + "u) >> " + std::to_string(log2i(chunk)) + "]";
      std::string l = "{ " + w + " t = " + src + ";";
      if (dtype_size(t) == 2) {
        int words = chunk / 2;
        for (int q = 0; q < words; ++q) {
          std::string word = words == 1 ? std::string("t") : "t." + std::string(comp[q]);
          std::string lo = array + "[" + std::to_string(o + 2 * q) + "]", hi = array + "[" + std::to_string(o + 2 * q + 1) + "]";
          if (t == DType::F16)
            l += " " + lo + " = iron_f16_to_f32(" + word + " & 0xffffu); " + hi + " = iron_f16_to_f32(" + word + " >> 16);";
          else
            l += " " + lo + " = uintBitsToFloat(" + word + " << 16); " + hi + " = uintBitsToFloat(" + word + " & 0xffff0000u);";
        }
      } else {
        for (int e = 0; e < chunk; ++e) l += " " + array + "[" + std::to_string(o + e) + "] = t." + comp[e] + ";";
      }
      lines.push_back(l + " }");
    }
  }

  void store_group(EmitState& s, const ir::Param& p, const std::string& idx, const std::vector<std::string>& values,
                   std::vector<std::string>& lines) const override {
    DType t = s.concrete(p.dtype);
    if (t == DType::F16) s.helpers.insert("f16");
    int width = int(values.size()), chunk = chunk_elems(t, width);
    for (int o = 0; o < width; o += chunk) {
      std::string w = view_type(t, chunk);
      std::string dst = view_name(p, chunk) + ".data[(" + idx + " + " + std::to_string(o) + "u) >> " + std::to_string(log2i(chunk)) + "]";
      std::string make = w + "(";
      if (dtype_size(t) == 2) {
        for (int e = 0; e < chunk; e += 2) {
          const std::string& a = values[size_t(o + e)];
          const std::string& b = values[size_t(o + e + 1)];
          make += (e ? ", " : "");
          if (t == DType::F16) make += "(iron_f32_to_f16(" + a + ") | (iron_f32_to_f16(" + b + ") << 16))";
          else make += "(uint(iron_f32_to_bf16(" + a + ")) | (uint(iron_f32_to_bf16(" + b + ")) << 16))";
        }
      } else {
        for (int e = 0; e < chunk; ++e) make += (e ? ", " : "") + values[size_t(o + e)];
      }
      lines.push_back(dst + " = " + make + ");");
    }
  }
};

}  // namespace

std::unique_ptr<Dialect> make_glsl_dialect() { return std::make_unique<GlslDialect>(); }

uint32_t push_constant_layout(const ir::Kernel& k, std::vector<uint32_t>& offsets) {
  offsets.clear();
  uint32_t at = 0;
  for (const ir::Param& p : k.params) {
    if (p.kind != ir::ParamKind::Scalar) continue;
    const uint32_t size = int_bits(p.dtype) == 64 ? 8 : 4;
    at = (at + size - 1) / size * size;
    offsets.push_back(at);
    at += size;
  }
  for (const ir::Param& p : k.params) {
    if (p.kind != ir::ParamKind::Blob) continue;
    offsets.push_back(at);  // at is a multiple of 4: the words' array stride
    at += p.blob_bytes;
  }
  return at;
}

}  // namespace iron::codegen
