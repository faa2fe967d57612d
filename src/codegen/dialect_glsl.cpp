// GLSL 450 dialect for Vulkan (compiled to SPIR-V by spirv.cpp). f16 uses 16-bit storage with
// float16_t; bf16 has no GLSL type, so it is stored as uint16_t and converted explicitly
// (exact widening, round-to-nearest-even narrowing). Lane reductions are subgroup operations;
// the subgroup size is queried from the device, never assumed.
#include <climits>
#include <cmath>

#include "codegen/c_like.hpp"
#include "core/numeric.hpp"

namespace iron::codegen {
namespace {

const char* axis_name(int64_t a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

class GlslDialect final : public Dialect {
 public:
  const char* name() const override { return "GLSL"; }

  std::string reg_type(DType t) const override {
    switch (t) {
      case DType::I32: return "int";
      case DType::U32: return "uint";
      case DType::Bool: return "bool";
      default: return "float";
    }
  }
  static std::string storage_type(DType t) {
    switch (t) {
      case DType::F16: return "float16_t";
      case DType::BF16: return "uint16_t";
      case DType::I32: return "int";
      case DType::U32: return "uint";
      default: return "float";
    }
  }
  std::string decl(DType t) const override { return reg_type(t) + " "; }

  void begin(EmitState& s, std::string& out) const override {
    const ir::Kernel& k = s.k;
    out += "#version 450\n";
    out += "// Iron kernel " + k.name + " (" + dtype_name(s.dtype) + "), GLSL. Generated: do not edit.\n";
    if (s.uses_16bit_storage) out += "#extension GL_EXT_shader_16bit_storage : require\n";
    if (s.uses_f16) out += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
    if (s.uses_bf16) out += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
    if (s.uses_lane_ops) {
      out += "#extension GL_KHR_shader_subgroup_basic : require\n";
      out += "#extension GL_KHR_shader_subgroup_arithmetic : require\n";
    }
    out += "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n";
    for (size_t i = 0; i < k.params.size(); ++i) {
      const ir::Param& p = k.params[i];
      if (p.kind != ir::ParamKind::Buffer) continue;
      const char* access = p.access == ir::Access::Read ? "readonly " : p.access == ir::Access::Write ? "writeonly " : "";
      int b = s.buffer_index[i];
      out += "layout(std430, set = 0, binding = " + std::to_string(b) + ") restrict " + access +
             "buffer IronBuffer" + std::to_string(b) + " { " + storage_type(s.concrete(p.dtype)) + " data[]; } " +
             param_name(p) + ";\n";
    }
    bool any_scalar = false;
    for (const ir::Param& p : k.params) any_scalar = any_scalar || p.kind == ir::ParamKind::Scalar;
    if (any_scalar) {
      out += "layout(push_constant) uniform IronScalars {";
      for (const ir::Param& p : k.params)
        if (p.kind == ir::ParamKind::Scalar) out += " " + reg_type(p.dtype) + " " + param_name(p) + ";";
      out += " } iron_scalars;\n";
    }
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      if (in.op == ir::Op::TgAlloc)
        out += "shared " + reg_type(s.concrete(in.type)) + " " + tg_name(k, in) + "[" + std::to_string(in.imm) + "];\n";
    });
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
    out += "void main() {\n";
  }

  void end(EmitState&, std::string& out) const override { out += "}\n"; }

  std::string builtin(EmitState& s, const ir::Inst& in) const override {
    std::string a = axis_name(in.imm);
    switch (in.op) {
      case ir::Op::ThreadId: return "gl_GlobalInvocationID." + a;
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

  std::string load(EmitState& s, const ir::Param& p, const std::string& idx) const override {
    std::string e = param_name(p) + ".data[" + idx + "]";
    switch (s.concrete(p.dtype)) {
      case DType::F16: return "float(" + e + ")";
      case DType::BF16: return "iron_bf16_to_f32(" + e + ")";
      default: return e;
    }
  }

  std::string store(EmitState& s, const ir::Param& p, const std::string& idx, const std::string& v) const override {
    std::string e = param_name(p) + ".data[" + idx + "] = ";
    switch (s.concrete(p.dtype)) {
      case DType::F16: return e + "float16_t(" + v + ")";
      case DType::BF16: return e + "iron_f32_to_bf16(" + v + ")";
      default: return e + v;
    }
  }

  std::string literal(EmitState& s, const ir::Inst& in) const override {
    DType t = s.concrete(in.type);
    switch (t) {
      case DType::Bool: return in.imm ? "true" : "false";
      case DType::I32: return in.imm == INT_MIN ? "(-2147483647 - 1)" : std::to_string(in.imm);
      case DType::U32: return std::to_string(uint32_t(in.imm)) + "u";
      default: {
        float v = num::round_to(t, float(in.fimm));
        if (std::isnan(v)) return "uintBitsToFloat(0x7fc00000u)";
        if (std::isinf(v)) return v > 0 ? "uintBitsToFloat(0x7f800000u)" : "uintBitsToFloat(0xff800000u)";
        return float_literal(v, "");
      }
    }
  }

  std::string math(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const override {
    if (!is_float(t) && in.op != ir::Op::Abs && in.op != ir::Op::Min && in.op != ir::Op::Max) {
      s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t));
      return "0";
    }
    switch (in.op) {
      case ir::Op::Exp: return "exp(" + a[0] + ")";
      case ir::Op::Log: return "log(" + a[0] + ")";
      case ir::Op::Sqrt: return "sqrt(" + a[0] + ")";
      case ir::Op::Rsqrt: return "inversesqrt(" + a[0] + ")";
      case ir::Op::Tanh: return "tanh(" + a[0] + ")";
      case ir::Op::Abs: return t == DType::U32 ? a[0] : "abs(" + a[0] + ")";
      case ir::Op::Min: return "min(" + a[0] + ", " + a[1] + ")";
      case ir::Op::Max: return "max(" + a[0] + ", " + a[1] + ")";
      case ir::Op::Fma: return "fma(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
      default: s.unsupported(in, name(), ir::mnemonic(in.op)); return "0";
    }
  }

  std::string cast(EmitState&, const ir::Inst&, DType from, DType to, const std::string& x) const override {
    if (to == DType::Bool) return "bool(" + x + ")";
    std::string as_float = is_float(from) ? x : "float(" + x + ")";
    switch (to) {
      case DType::F32: return as_float;
      case DType::F16: return "float(float16_t(" + as_float + "))";
      case DType::BF16: return "iron_bf16_to_f32(iron_f32_to_bf16(" + as_float + "))";
      default: return reg_type(to) + "(" + x + ")";
    }
  }

  std::string lane_reduce(EmitState& s, const ir::Inst& in, DType t, const std::string& x) const override {
    if (t != DType::F32 && t != DType::I32 && t != DType::U32) {
      s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t));
      return x;
    }
    return std::string(in.op == ir::Op::LaneSum ? "subgroupAdd(" : "subgroupMax(") + x + ")";
  }

  std::string barrier() const override { return "memoryBarrierShared(); barrier();"; }
};

}  // namespace

std::unique_ptr<Dialect> make_glsl_dialect() { return std::make_unique<GlslDialect>(); }

}  // namespace iron::codegen
