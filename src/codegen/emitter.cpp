// The one C-like emitter: walks the optimized IR and prints a statement per instruction,
// asking the dialect for every spelling that differs between targets.
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <map>

#include "codegen/c_like.hpp"

namespace iron::codegen {

const char* target_name(Target t) { return t == Target::Cuda ? "cuda" : "glsl"; }

std::string entry_name(const ir::Kernel& k, DType dtype) {
  bool generic = !k.dtypes.empty();
  return generic ? k.name + "_" + dtype_name(dtype) : k.name;
}

std::string float_literal(float v, const char* suffix) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + suffix;
}

std::string Dialect::literal(EmitState& s, const ir::Inst& in) const {
  switch (s.concrete(in.type)) {
    case DType::Bool: return in.imm ? "true" : "false";
    case DType::I32: return in.imm == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(in.imm);
    case DType::U32: return std::to_string(uint32_t(in.imm)) + "u";
    default: {
      // Constants of every float dtype are f32 register values (16-bit floats compute in f32).
      float v = float(in.fimm);
      if (std::isnan(v)) return float_from_bits(0x7fc00000u);
      if (std::isinf(v)) return float_from_bits(v > 0 ? 0x7f800000u : 0xff800000u);
      return float_literal(v, float_suffix());
    }
  }
}

namespace {

struct Emitter {
  EmitState& s;
  const Dialect& d;
  std::string out;

  std::map<ir::Id, std::string> inline_expr;  // fused values: their expression text

  // A value reference: the register name, or the whole expression of a fused value.
  std::string v(ir::Id id) const {
    auto it = inline_expr.find(id);
    return it != inline_expr.end() ? it->second : "v" + std::to_string(id);
  }
  static std::string reg(ir::Id id) { return "v" + std::to_string(id); }

  void line(int depth, const std::string& text) {
    out.append(size_t(depth) * 2, ' ');
    out += text;
    out += '\n';
  }

  std::string binary(const ir::Inst& in, const std::string& a, const std::string& b) {
    DType t = s.concrete(s.k.insts[in.operands[0]].type);
    bool boolean = t == DType::Bool;
    switch (in.op) {
      case ir::Op::Add: return "(" + a + " + " + b + ")";
      case ir::Op::Sub: return "(" + a + " - " + b + ")";
      case ir::Op::Mul: return "(" + a + " * " + b + ")";
      case ir::Op::Div: return "(" + a + " / " + b + ")";
      case ir::Op::Rem: return "(" + a + " % " + b + ")";
      case ir::Op::And: return boolean ? "(" + a + " && " + b + ")" : "(" + a + " & " + b + ")";
      case ir::Op::Or: return boolean ? "(" + a + " || " + b + ")" : "(" + a + " | " + b + ")";
      case ir::Op::Xor: return boolean ? "(" + a + " != " + b + ")" : "(" + a + " ^ " + b + ")";
      case ir::Op::Shl: return "(" + a + " << " + b + ")";
      case ir::Op::Shr: return "(" + a + " >> " + b + ")";
      case ir::Op::Eq: return "(" + a + " == " + b + ")";
      case ir::Op::Ne: return "(" + a + " != " + b + ")";
      case ir::Op::Lt: return "(" + a + " < " + b + ")";
      case ir::Op::Le: return "(" + a + " <= " + b + ")";
      case ir::Op::Gt: return "(" + a + " > " + b + ")";
      case ir::Op::Ge: return "(" + a + " >= " + b + ")";
      default: return {};
    }
  }

  ir::Id group_leader = ir::kNone;
  ir::Id current_block = 0;

  void block(ir::Id b, int depth) {
    for (ir::Id id : s.k.blocks[b].insts) {
      current_block = b;
      inst(id, depth);
    }
  }

  void inst(ir::Id id, int depth) {
    const ir::Inst& in = s.k.insts[id];
    DType t = s.concrete(in.type);
    auto arg = [&](int i) { return v(in.operands[i]); };
    auto def = [&](const std::string& expr) {
      if (in.flags & ir::kFused) inline_expr[id] = expr;  // printed at its single use
      else line(depth, d.decl(t) + reg(id) + " = " + expr + ";");
    };
    using ir::Op;
    switch (in.op) {
      case Op::Const: def(d.literal(s, in)); break;
      case Op::Param: def(d.scalar(s, s.k.params[in.sym])); break;
      case Op::ThreadId: case Op::ProgramId: case Op::LocalId: case Op::GroupSize: case Op::NumPrograms:
      case Op::LaneId: case Op::LaneWidth: case Op::SimdGroupId: case Op::NumSimdGroups:
        def(d.builtin(s, in));
        break;
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::And: case Op::Or:
      case Op::Xor: case Op::Shl: case Op::Shr: case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le:
      case Op::Gt: case Op::Ge:
        def(binary(in, arg(0), arg(1)));
        break;
      case Op::Neg:
        def(t == DType::U32 ? "(0u - " + arg(0) + ")" : "(-" + arg(0) + ")");
        break;
      case Op::Not:
        def(t == DType::Bool ? "(!" + arg(0) + ")" : "(~" + arg(0) + ")");
        break;
      case Op::Min: case Op::Max: case Op::Abs: case Op::Fma: case Op::Exp: case Op::Log: case Op::Sqrt:
      case Op::Rsqrt: case Op::Tanh: {
        std::vector<std::string> a;
        for (int i = 0; i < in.num_operands; ++i) a.push_back(arg(i));
        def(d.math(s, in, t, a));
        break;
      }
      case Op::Select: def("(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")"); break;
      case Op::Cast: def(d.cast(s, in, s.concrete(s.k.insts[in.operands[0]].type), t, arg(0))); break;
      case Op::Load:
        if (in.imm > 0) {
          // Vector group leader: one wide load into an array; the members read its lanes.
          std::string array = reg(id) + "_lanes";
          line(depth, d.reg_type(t) + " " + array + "[" + std::to_string(in.imm) + "];");
          std::vector<std::string> lines;
          d.load_group(s, s.k.params[in.sym], arg(0), int(in.imm), array, lines);
          for (const std::string& l : lines) line(depth, l);
          group_leader = id;
          def(array + "[0]");
        } else if (in.imm < 0) {
          def(reg(group_leader) + "_lanes[" + std::to_string(-in.imm) + "]");
        } else {
          def(d.load(s, s.k.params[in.sym], arg(0)));
        }
        break;
      case Op::Store:
        if (in.imm > 0) {
          // Vector group leader: the members follow it in this block and carry the other lanes.
          const auto& list = s.k.blocks[current_block].insts;
          size_t pos = size_t(std::find(list.begin(), list.end(), id) - list.begin());
          std::vector<std::string> values;
          for (int64_t lane = 0; lane < in.imm; ++lane) values.push_back(v(s.k.insts[list[pos + size_t(lane)]].operands[1]));
          std::vector<std::string> lines;
          d.store_group(s, s.k.params[in.sym], arg(0), values, lines);
          for (const std::string& l : lines) line(depth, l);
        } else if (in.imm == 0) {
          line(depth, d.store(s, s.k.params[in.sym], arg(0), arg(1)) + ";");
        }
        break;
      case Op::Var: line(depth, d.reg_type(t) + " " + reg(id) + " = " + arg(0) + ";"); break;
      case Op::VarLoad: def(arg(0)); break;
      case Op::VarStore: line(depth, arg(0) + " = " + arg(1) + ";"); break;
      case Op::TgAlloc: break;  // declared by the dialect at function or module scope
      case Op::TgLoad: def(d.tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + arg(1) + "]"); break;
      case Op::TgStore:
        line(depth, d.tg_name(s.k, s.k.insts[in.operands[0]]) + "[" + arg(1) + "] = " + arg(2) + ";");
        break;
      case Op::Barrier: line(depth, d.barrier()); break;
      case Op::LaneSum: case Op::LaneMax: def(d.lane_reduce(s, in, t, arg(0))); break;
      case Op::If:
        line(depth, "if (" + arg(0) + ") {");
        block(in.blocks[0], depth + 1);
        if (in.blocks[1] != ir::kNone) {
          line(depth, "} else {");
          block(in.blocks[1], depth + 1);
        }
        line(depth, "}");
        break;
      case Op::For:
        line(depth, "for (" + d.reg_type(t) + " " + reg(id) + " = " + arg(0) + "; " + reg(id) + " < " + arg(1) + "; " +
                        reg(id) + " += " + arg(2) + ") {");
        block(in.blocks[0], depth + 1);
        line(depth, "}");
        break;
      case Op::Call:
        s.unsupported(in, d.name(), "a call to '" + s.k.strings[in.sym] + "' (kernel_inline must inline it first)");
        break;
      case Op::Arg: case Op::Return:
        s.unsupported(in, d.name(), std::string(ir::mnemonic(in.op)) + " outside a device function");
        break;
      case Op::Count_:
        s.unsupported(in, d.name(), "an invalid op");
        break;
    }
  }
};

}  // namespace

Emitted emit(const ir::Kernel& k, DType dtype, Target target) {
  Emitted result;
  result.entry = target == Target::Cuda ? entry_name(k, dtype) : "main";
  if (!k.dtypes.empty()) {
    bool declared = false;
    for (DType t : k.dtypes) declared = declared || t == dtype;
    if (!declared) {
      result.diags.error({}, std::string("kernel '") + k.name + "' is not declared for dtype " + dtype_name(dtype));
      return result;
    }
  }
  EmitState s{k, dtype, {}, {}, {}};
  int buffers = 0, scalars = 0;
  for (const ir::Param& p : k.params) {
    bool buf = p.kind == ir::ParamKind::Buffer;
    s.buffer_index.push_back(buf ? buffers++ : -1);
    s.scalar_index.push_back(buf ? -1 : scalars++);
    DType c = ir::resolve(p.dtype, dtype);
    if (buf && dtype_size(c) == 2) s.uses_16bit_storage = true;
    if (buf && c == DType::F16) s.uses_f16 = true;
    if (buf && c == DType::BF16) s.uses_bf16 = true;
  }
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    DType c = ir::resolve(in.type, dtype);
    if (c == DType::F16) s.uses_f16 = true;
    if (c == DType::BF16) s.uses_bf16 = true;
    if (ir::has_trait(in.op, ir::trait::L)) s.uses_lane_ops = true;
    if ((in.op == ir::Op::Load || in.op == ir::Op::Store) && in.imm > 0)
      s.vector_chunks[in.sym].insert(chunk_elems(ir::resolve(k.params[in.sym].dtype, dtype), int(in.imm)));
  });

  std::unique_ptr<Dialect> d = target == Target::Cuda ? make_cuda_dialect() : make_glsl_dialect();
  Emitter e{s, *d, {}};
  d->begin(s, e.out);
  e.block(0, 1);
  d->end(s, e.out);
  result.source = std::move(e.out);
  result.diags = std::move(s.diags);
  return result;
}

}  // namespace iron::codegen
