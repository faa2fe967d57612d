// The one C-like emitter: walks the optimized IR and prints a statement per instruction,
// asking the dialect for every spelling that differs between targets.
#include <cctype>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "codegen/c_like.hpp"
#include "core/numeric.hpp"

namespace iron::codegen {

const char* const kLoopLimitText =
    "lavapipe (Mesa llvmpipe) stops every loop of a shader invocation once its loops have run "
    "65,535 iterations in total (gallivm's loop limiter, LP_MAX_TGSI_LOOP_ITERATIONS), so the "
    "results would be wrong";

std::string entry_name(const ir::Kernel& k, Instantiation dtype) {
  std::string name = k.dtypes.empty() ? k.name : k.name + "_" + dtype_name(dtype.t);
  return k.wtypes.empty() ? name : name + "_w" + dtype_name(dtype.w);
}

std::string float_literal(float v, const char* suffix) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + suffix;
}

std::string Dialect::literal(EmitState& s, const ir::Inst& in) const {
  const DType t = s.concrete(in.type);
  const int64_t value = in.attr(ir::Attr::Value);
  if (int_bits(t) == 64) return int64_literal(uint64_t(value), is_signed_integer(t));
  if (int_bits(t) == 8 || int_bits(t) == 16)
    return convert(t, is_signed_integer(t) ? std::to_string(value) : std::to_string(uint32_t(value)) + "u");
  switch (t) {
    case DType::Bool: return value ? "true" : "false";
    case DType::I32: return value == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(value);
    case DType::U32: return std::to_string(uint32_t(value)) + "u";
    default: {
      // A float constant is a value of its dtype: rounded to f32, and to f16 / bf16 for those.
      float v = float(in.fattr(ir::Attr::Value));
      if (t == DType::F16 || t == DType::BF16) v = num::round_to(t, v);
      if (std::isnan(v)) return float_from_bits(0x7fc00000u);
      if (std::isinf(v)) return float_from_bits(v > 0 ? 0x7f800000u : 0xff800000u);
      if (v == 0.0f) {
        std::string zero = float_zero(s, std::signbit(v));
        if (!zero.empty()) return zero;
      }
      return float_literal(v, float_suffix());
    }
  }
}

// --- Dialect defaults: the spellings as data (DialectSpelling) and ops.def's templates -------

std::string Dialect::reg_type(DType t) const {
  switch (t) {
    case DType::I32: return sp_.i32;
    case DType::U32: return sp_.u32;
    case DType::Bool: return sp_.boolean;
    case DType::I8: return sp_.i8;
    case DType::U8: return sp_.u8;
    case DType::I16: return sp_.i16;
    case DType::U16: return sp_.u16;
    case DType::I64: return sp_.i64;
    case DType::U64: return sp_.u64;
    default: return sp_.f32;  // every float dtype, fp8 included, is an f32 register
  }
}

std::string Dialect::convert(DType to, const std::string& x) const {
  return sp_.c_casts ? "((" + reg_type(to) + ")(" + x + "))" : reg_type(to) + "(" + x + ")";
}

std::string Dialect::int64_literal(uint64_t bits, bool is_signed) const {
  if (!is_signed) return std::to_string(bits) + sp_.u64_suffix;
  const std::string l = sp_.i64_suffix;
  if (bits == 0x8000000000000000ull) return "(-9223372036854775807" + l + " - 1" + l + ")";
  return "(" + std::to_string(int64_t(bits)) + l + ")";
}

std::string Dialect::float_from_bits(uint32_t bits) const {
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", bits);
  return std::string(sp_.bits_to_float) + "(0x" + hex + "u)";
}

std::string Dialect::float_neg(const std::string& x) const {
  return std::string(sp_.bits_to_float) + "(" + sp_.float_to_bits + "(" + x + ") ^ 0x80000000u)";
}

std::string Dialect::spell(ir::Op op, DType t, const std::vector<std::string>& a) const {
  std::string text;
  bool from_table = false;
  if (auto it = sp_.float_ops.find(op); is_float(t) && it != sp_.float_ops.end()) {
    text = it->second;
  } else if (auto jt = sp_.ops.find(op); jt != sp_.ops.end()) {
    text = jt->second;
  } else {
    text = ir::default_spelling(op);
    from_table = true;
  }
  if (text.empty()) return {};
  // A function spelled by the table: float math takes the dialect's suffix ("floor" -> "floorf").
  const size_t paren = text.find('(');
  if (from_table && is_float(t) && *sp_.float_math_suffix && paren != std::string::npos && paren > 0 &&
      std::isalpha(static_cast<unsigned char>(text[0])))
    text.insert(paren, sp_.float_math_suffix);
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '9') {
      const size_t n = size_t(text[++i] - '0');
      out += n < a.size() ? a[n] : std::string("/*missing operand*/");
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string Dialect::math(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const {
  if (is_integer(t) && int_bits(t) != 32) {
    std::string text = int_math(in.op, t, a);
    if (!text.empty()) return text;
  }
  const bool int_op = in.op == ir::Op::MulHi || in.op == ir::Op::Popcount || in.op == ir::Op::Clz;
  const bool any = in.op == ir::Op::Abs || in.op == ir::Op::Min || in.op == ir::Op::Max;
  if (int_op ? !is_integer(t) : !is_float(t) && !any) {
    s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t));
    return "0";
  }
  if ((in.op == ir::Op::Min || in.op == ir::Op::Max) && is_float(t)) return fmin_fmax(s, in.op == ir::Op::Max, a[0], a[1]);
  if (in.op == ir::Op::Abs && t == DType::U32) return a[0];
  std::string text = spell(in.op, t, a);
  if (text.empty()) {
    s.unsupported(in, name(), ir::mnemonic(in.op));
    return "0";
  }
  return text;
}

std::string Dialect::lane_reduce(EmitState& s, const ir::Inst& in, DType t, const std::string& x) const {
  if (t != DType::F32 && t != DType::I32 && t != DType::U32) {
    s.unsupported(in, name(), std::string(ir::mnemonic(in.op)) + " of " + dtype_name(t));
    return x;
  }
  return std::string(in.op == ir::Op::LaneSum ? "iron_lane_sum(" : "iron_lane_max(") + x + ")";
}

std::string Dialect::fmin_fmax(EmitState& s, bool is_max, const std::string& a, const std::string& b) const {
  s.helpers.insert(is_max ? "fmax" : "fmin");
  return std::string(is_max ? "iron_fmax(" : "iron_fmin(") + a + ", " + b + ")";
}

std::string Dialect::shift_amount(DType amount_type, const std::string& b) const {
  if (amount_type == DType::U32) return b;
  if (int_bits(amount_type) == 64)
    return "(" + convert(DType::U64, b) + " >= " + int64_literal(64, false) + " ? 64u : " + convert(DType::U32, b) + ")";
  return convert(DType::U32, b);  // a negative amount sign-extends to a huge one
}

std::string Dialect::int_binary(EmitState& s, ir::Op op, DType t, const std::string& a, const std::string& b,
                                DType amount_type) const {
  const std::string i32 = reg_type(DType::I32), u32 = reg_type(DType::U32);
  const std::string suffix = std::string("_") + dtype_name(t);
  auto call = [&](const char* name, const std::string& y) {
    s.helpers.insert(name + suffix);
    return "iron_" + std::string(name) + suffix + "(" + a + ", " + y + ")";
  };
  switch (op) {
    case ir::Op::Add: case ir::Op::Sub: case ir::Op::Mul: {
      const char* sym = op == ir::Op::Add ? " + " : op == ir::Op::Sub ? " - " : " * ";
      // i32 arithmetic wraps: computed on u32, where wraparound is defined in C++ as in GLSL.
      if (t == DType::I32) return i32 + "(" + u32 + "(" + a + ")" + sym + u32 + "(" + b + "))";
      if (t == DType::U32 || t == DType::U64) return "(" + a + sym + b + ")";
      // Every other width: on the unsigned register type, wrapped back to the written width.
      return convert(t, widen_unsigned(t, a) + sym + widen_unsigned(t, b));
    }
    case ir::Op::Div: return call("div", b);
    case ir::Op::Rem: return call("rem", b);
    case ir::Op::Shl: return call("shl", shift_amount(amount_type, b));
    case ir::Op::Shr: return call("shr", shift_amount(amount_type, b));
    default: return {};
  }
}

std::string Dialect::int_neg(DType t, const std::string& x) const {
  const std::string u32 = reg_type(DType::U32);
  if (t == DType::I32) return reg_type(DType::I32) + "(0u - " + u32 + "(" + x + "))";
  if (t == DType::U32) return "(0u - " + x + ")";
  return convert(t, widen_unsigned(t, "0") + " - " + widen_unsigned(t, x));
}

std::string Dialect::int_helper(const std::string& name) const {
  const std::string p = helper_prefix(), i = reg_type(DType::I32), u = reg_type(DType::U32);
  // Every branch is a statement, never a ?: the division or shift on the untaken path would
  // still execute if the compiler chose a select (an x86 division by zero traps on lavapipe).
  if (name == "div_i32")
    return p + i + " iron_div_i32(" + i + " a, " + i + " b) {\n  if (b == 0) return a;\n  if (b == -1) return " + i +
           "(0u - " + u + "(a));\n  return a / b;\n}\n";
  if (name == "rem_i32")
    return p + i + " iron_rem_i32(" + i + " a, " + i + " b) {\n  if (b == 0 || b == -1) return 0;\n" +
           "  return a - (a / b) * b;\n}\n";
  if (name == "div_u32")
    return p + u + " iron_div_u32(" + u + " a, " + u + " b) {\n  if (b == 0u) return a;\n  return a / b;\n}\n";
  if (name == "rem_u32")
    return p + u + " iron_rem_u32(" + u + " a, " + u + " b) {\n  if (b == 0u) return 0u;\n  return a % b;\n}\n";
  if (name == "shl_i32")
    return p + i + " iron_shl_i32(" + i + " a, " + u + " n) {\n  if (n >= 32u) return 0;\n  return " + i + "(" + u +
           "(a) << n);\n}\n";
  if (name == "shl_u32")
    return p + u + " iron_shl_u32(" + u + " a, " + u + " n) {\n  if (n >= 32u) return 0u;\n  return a << n;\n}\n";
  if (name == "shr_i32")
    return p + i + " iron_shr_i32(" + i + " a, " + u + " n) {\n  if (n >= 32u) n = 31u;\n  return a >> n;\n}\n";
  if (name == "shr_u32")
    return p + u + " iron_shr_u32(" + u + " a, " + u + " n) {\n  if (n >= 32u) return 0u;\n  return a >> n;\n}\n";
  // The other widths: "<op>_<dtype>". Division and remainder run in the dtype itself (C's
  // promotion of 8- and 16-bit operands to int cannot overflow once MIN / -1 is excluded);
  // shifts run on the widened unsigned register and wrap back.
  const size_t cut = name.find('_');
  DType t;
  if (cut == std::string::npos || !parse_dtype(name.substr(cut + 1), t) || !is_integer(t)) return {};
  const std::string op = name.substr(0, cut), T = reg_type(t), fn = "iron_" + name;
  const std::string zero = convert(t, "0"), width = std::to_string(int_bits(t)) + "u";
  const bool sgn = is_signed_integer(t);
  if (op == "div")
    return p + T + " " + fn + "(" + T + " a, " + T + " b) {\n  if (b == " + zero + ") return a;\n" +
           (sgn ? "  if (b == " + convert(t, "-1") + ") return " + convert(t, widen_unsigned(t, "0") + " - " + widen_unsigned(t, "a")) + ";\n" : "") +
           "  return " + convert(t, "a / b") + ";\n}\n";
  if (op == "rem")
    return p + T + " " + fn + "(" + T + " a, " + T + " b) {\n  if (b == " + zero +
           (sgn ? " || b == " + convert(t, "-1") : "") + ") return " + zero + ";\n" +
           "  return " + convert(t, sgn ? "a - (a / b) * b" : "a % b") + ";\n}\n";
  if (op == "shl")
    return p + T + " " + fn + "(" + T + " a, " + u + " n) {\n  if (n >= " + width + ") return " + zero + ";\n  return " +
           convert(t, widen_unsigned(t, "a") + " << " + widen_unsigned(t, "n")) + ";\n}\n";
  if (op == "shr" && sgn)
    return p + T + " " + fn + "(" + T + " a, " + u + " n) {\n  if (n >= " + width + ") n = " + std::to_string(int_bits(t) - 1) +
           "u;\n  return " + convert(t, "a >> " + convert(t, "n")) + ";\n}\n";
  if (op == "shr")
    return p + T + " " + fn + "(" + T + " a, " + u + " n) {\n  if (n >= " + width + ") return " + zero + ";\n  return " +
           convert(t, "a >> " + convert(t, "n")) + ";\n}\n";
  return {};
}

std::string Dialect::f2int_helper(const std::string& name, const char* to_bits) const {
  DType t;
  if (name.rfind("f2", 0) != 0 || !parse_dtype(name.substr(2), t) || !is_integer(t) || int_bits(t) == 32) return {};
  const bool sgn = is_signed_integer(t);
  const int w = int(int_bits(t));
  const std::string T = reg_type(t), p = helper_prefix(), fn = "iron_" + name;
  // Bounds: the first value above the range (2^(w-1) or 2^w) and the lowest (-2^(w-1) or 0),
  // both exact in f32; min and max as literals of t.
  const std::string above = float_literal(std::ldexp(1.0f, sgn ? w - 1 : w), float_suffix());
  const std::string low = sgn ? float_literal(-std::ldexp(1.0f, w - 1), float_suffix()) : float_literal(0.0f, float_suffix());
  auto lit = [&](bool maximum) {
    if (w == 64) return int64_literal(maximum ? num::int_max(t) : uint64_t(num::int_min(t)), sgn);
    return convert(t, maximum ? std::to_string(num::int_max(t)) : std::to_string(num::int_min(t)));
  };
  // In range, the truncation goes through the 32- or 64-bit conversion every target has.
  const std::string in_range = w == 64 ? convert(t, "x") : convert(t, convert(sgn ? DType::I32 : DType::U32, "x"));
  return p + T + " " + fn + "(float x) {\n  if ((" + to_bits + "(x) & 0x7fffffffu) > 0x7f800000u) return " +
         convert(t, "0") + ";\n  if (x >= " + above + ") return " + lit(true) + ";\n  if (x <= " + low + ") return " +
         lit(false) + ";\n  return " + in_range + ";\n}\n";
}

std::string Dialect::int_math(ir::Op op, DType t, const std::vector<std::string>& a) const {
  switch (op) {
    case ir::Op::Min: return "(" + a[0] + " < " + a[1] + " ? " + a[0] + " : " + a[1] + ")";
    case ir::Op::Max: return "(" + a[0] + " > " + a[1] + " ? " + a[0] + " : " + a[1] + ")";
    case ir::Op::Abs:
      if (!is_signed_integer(t)) return a[0];
      {
        // abs(MIN) wraps to MIN: (x ^ m) - m on the unsigned register, m = x >> (W - 1) (all
        // ones for a negative x); no comparison (lavapipe answered x < 0 wrongly for an i64 -1).
        const std::string m = widen_unsigned(t, a[0] + " >> " + convert(t, std::to_string(int_bits(t) - 1)));
        return convert(t, "(" + widen_unsigned(t, a[0]) + " ^ " + m + ") - " + m);
      }
    default: return {};
  }
}

std::string Dialect::fp8_round(EmitState& s, DType to, const std::string& f32) const {
  const std::string fmt = to == DType::F8E4M3 ? "e4m3" : "e5m2";
  s.helpers.insert(fmt);
  return "iron_" + fmt + "_to_f32(iron_f32_to_" + fmt + "(" + f32 + "))";
}

std::string Dialect::cast_new_types(EmitState& s, DType from, DType to, const std::string& x,
                                    const std::string& as_float) const {
  if (is_fp8(to)) return fp8_round(s, to, as_float);
  if (!is_integer(to)) return {};
  if (is_float(from)) {
    if (int_bits(to) == 32) return {};
    const std::string name = std::string("f2") + dtype_name(to);
    s.helpers.insert(name);
    return "iron_" + name + "(" + x + ")";
  }
  if (is_integer(from) && (int_bits(to) != 32 || int_bits(from) != 32)) return convert(to, x);
  return {};
}

std::string Dialect::minmax_helper(const std::string& name, const char* to_bits, const char* from_bits) const {
  if (name != "fmin" && name != "fmax") return {};
  const std::string tb = to_bits, fb = from_bits;
  bool is_max = name == "fmax";
  // One NaN operand loses, two give NaN (the second operand's); equal operands are equal bits
  // except for -0 and +0, where OR of the bits picks -0 for min and AND picks +0 for max.
  // NaN is tested on the bits so that no fast-math assumption can remove the test.
  return std::string(helper_prefix()) + "float iron_" + name + "(float a, float b) {\n" +
         "  if ((" + tb + "(a) & 0x7fffffffu) > 0x7f800000u) return b;\n" +
         "  if ((" + tb + "(b) & 0x7fffffffu) > 0x7f800000u) return a;\n" +
         "  if (a == b) return " + fb + "(" + tb + "(a) " + (is_max ? "&" : "|") + " " + tb + "(b));\n" +
         "  return a " + (is_max ? ">" : "<") + " b ? a : b;\n}\n";
}

std::string Dialect::pair_helpers_via_f32(bool f16, const std::string& get, const std::string& to16, const char* value,
                                          const std::string& fma_odd) const {
  const std::string sfx = f16 ? "_f16" : "_bf16";
  std::string decl = "  ";  // an indented element declaration
  decl += value;
  std::string t;
  t += "float iron_pair_get" + sfx + "(uint w, uint i) { return " + get + "; }\n";
  t += "uint iron_pair_half" + sfx + "(float x) { return " + to16 + "; }\n";
  t += "uint iron_pair_pair" + sfx + "(float a, float b) { return iron_pair_half" + sfx + "(a) | (iron_pair_half" + sfx +
       "(b) << 16); }\n";
  // `f` spells one element's result from p#, q#, r# (the operands' element #).
  auto each = [&](const std::string& op, int n, const std::string& f) {
    std::string params = "uint a";
    std::string vals = decl + " p0 = iron_pair_get" + sfx + "(a, 0u), p1 = iron_pair_get" + sfx + "(a, 1u);\n";
    if (n >= 2) {
      params += ", uint b";
      vals += decl + " q0 = iron_pair_get" + sfx + "(b, 0u), q1 = iron_pair_get" + sfx + "(b, 1u);\n";
    }
    if (n >= 3) {
      params += ", uint c";
      vals += decl + " r0 = iron_pair_get" + sfx + "(c, 0u), r1 = iron_pair_get" + sfx + "(c, 1u);\n";
    }
    auto at = [&](char lane) {
      std::string x = f;
      for (size_t i = 0; i + 1 < x.size(); ++i)
        if (x[i + 1] == '#' && (x[i] == 'p' || x[i] == 'q' || x[i] == 'r')) x[i + 1] = lane;
      return x;
    };
    std::string body = "uint iron_pair_" + op + sfx + "(" + params + ") {\n" + vals;
    body += decl + " x0 = " + at('0') + ";\n";
    body += decl + " x1 = " + at('1') + ";\n";
    return body + "  return iron_pair_pair" + sfx + "(x0, x1);\n}\n";
  };
  t += each("add", 2, "p# + q#") + each("sub", 2, "p# - q#") + each("mul", 2, "p# * q#") +
       each("fma", 3, fma_odd + "(p#, q#, r#)") + each("min", 2, "iron_fmin(p#, q#)") + each("max", 2, "iron_fmax(p#, q#)");
  t += "uint iron_pair_neg" + sfx + "(uint a) { return a ^ 0x80008000u; }\n";
  t += "uint iron_pair_abs" + sfx + "(uint a) { return a & 0x7fff7fffu; }\n";
  return t;
}

std::string Dialect::pair_call(EmitState& s, const ir::Inst& in, DType elem, const std::vector<std::string>& a) const {
  const std::string e = elem == DType::F16 ? "f16" : "bf16";
  s.helpers.insert("pair_" + e);
  if (in.op == ir::Op::PairGet) return "iron_pair_get_" + e + "(" + a[0] + ", " + std::to_string(in.attr(ir::Attr::Index)) + "u)";
  std::string args;
  for (const std::string& x : a) args += (args.empty() ? "" : ", ") + x;
  return "iron_pair_" + std::string(ir::mnemonic(in.op)) + "_" + e + "(" + args + ")";
}

std::string Dialect::iron_math_call(EmitState& s, ir::Op op, const std::vector<std::string>& a) const {
  const char* helper = nullptr;
  const char* fn = nullptr;
  switch (op) {
    case ir::Op::Sin: helper = "trig"; fn = "iron_sin"; break;
    case ir::Op::Cos: helper = "trig"; fn = "iron_cos"; break;
    case ir::Op::Exp2: helper = "exp2"; fn = "iron_exp2"; break;
    case ir::Op::Log2: helper = "log2"; fn = "iron_log2"; break;
    case ir::Op::Erf: helper = "erf"; fn = "iron_erf"; break;
    case ir::Op::Pow: helper = "pow"; fn = "iron_pow"; break;
    case ir::Op::Log: helper = "log"; fn = "iron_log"; break;
    case ir::Op::Sqrt: helper = "fsqrt"; fn = "iron_sqrt_f32"; break;
    default: return {};
  }
  s.helpers.insert(helper);
  std::string args;
  for (const std::string& x : a) args += (args.empty() ? "" : ", ") + x;
  return std::string(fn) + "(" + args + ")";
}

std::string helper_lines(const std::string& text) {
  std::string out;
  int depth = 0, parens = 0;
  bool line_start = true;
  for (char c : text) {
    if (line_start && c == ' ') continue;
    if (c == '}') --depth;
    if (line_start) out.append(size_t(depth < 0 ? 0 : depth) * 2, ' ');
    line_start = false;
    out += c;
    if (c == '(') ++parens;
    if (c == ')') --parens;
    if (c == '{') ++depth;
    if (c == '{' || c == '}' || (c == ';' && parens == 0)) {
      out += '\n';
      line_start = true;
    }
  }
  if (!line_start) out += '\n';
  return out;
}

// The source line a compiler message names: glslang "ERROR: 0:12: ...", NVRTC "name(12): error
// ...", clang "path:12:5: error: ..."; 0 when the message names none.
static size_t message_line(const std::string& m) {
  auto digits = [&](size_t at, size_t& end) {
    size_t n = 0;
    end = at;
    while (end < m.size() && std::isdigit(static_cast<unsigned char>(m[end]))) n = n * 10 + size_t(m[end++] - '0');
    return end > at ? n : 0;
  };
  size_t end = 0;
  for (const char* tag : {"ERROR: 0:", "WARNING: 0:"})
    if (m.rfind(tag, 0) == 0) return digits(std::strlen(tag), end);
  for (const char* kind : {"): error", "): warning"}) {
    const size_t close = m.find(kind);
    const size_t open = close == std::string::npos ? close : m.rfind('(', close);
    if (open != std::string::npos && m.find(' ') > open) {
      const size_t n = digits(open + 1, end);
      if (n && end == close) return n;
    }
  }
  for (const char* kind : {": error:", ": warning:", ": note:"}) {
    const size_t at = m.find(kind);
    if (at == std::string::npos) continue;
    // path:LINE:COL before it
    const size_t col_colon = m.rfind(':', at - 1);
    if (col_colon == std::string::npos || col_colon == 0) continue;
    const size_t line_colon = m.rfind(':', col_colon - 1);
    if (line_colon == std::string::npos) continue;
    const size_t n = digits(line_colon + 1, end);
    if (n && end == col_colon) return n;
  }
  return 0;
}

std::string locate_compile_log(const std::string& log, const Emitted& e, const ir::Kernel& k) {
  std::string out;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t nl = log.find('\n', pos);
    if (nl == std::string::npos) nl = log.size();
    const std::string m = log.substr(pos, nl - pos);
    out += m;
    const size_t n = message_line(m);
    const bool error = m.find("error") != std::string::npos || m.rfind("ERROR", 0) == 0;
    if (n && error) {
      const ir::SrcLoc loc = e.dsl_loc(n);
      if (loc.line != 0) out += "\n  = emitted for " + k.where(loc) + " (kernel " + k.name + ", source line " + std::to_string(n) + ")";
      else out += "\n  = in Iron's generated prelude of " + e.entry + " (source line " + std::to_string(n) + "), not from a DSL line";
    }
    out += '\n';
    pos = nl + 1;
  }
  return out;
}

namespace {

struct Emitter {
  EmitState& s;
  const Dialect& d;
  std::string out;

  std::map<ir::Id, std::string> inline_expr;  // fused values: their expression text
  // 16-bit ops whose one use is a store into a buffer of their dtype: the store's rounding is
  // the op's own, so rounded() leaves them to it (one rounding in the source, the same value).
  std::set<ir::Id> rounded_by_store;

  // A value reference: the register name, or the whole expression of a fused value.
  std::string v(ir::Id id) const {
    auto it = inline_expr.find(id);
    return it != inline_expr.end() ? it->second : reg(id);
  }
  static std::string reg(ir::Id id) {
    std::string r = std::to_string(id);
    r.insert(r.begin(), 'v');
    return r;
  }

  // The DSL location of each line printed so far (the instruction being emitted: `where`).
  std::vector<ir::SrcLoc> locs;
  ir::SrcLoc where;
  std::string break_after;  // EmitOptions::test_break_after_op, cleared once used

  void line(int depth, const std::string& text) {
    out.append(size_t(depth) * 2, ' ');
    out += text;
    out += '\n';
    for (char c : text) if (c == '\n') locs.push_back(where);
    locs.push_back(where);
  }

  std::string binary(const ir::Inst& in, const std::string& a, const std::string& b) {
    DType t = s.concrete(s.k.insts[in.operands[0]].type);
    bool boolean = t == DType::Bool;
    if (is_integer(t)) {
      std::string text = d.int_binary(s, in.op, t, a, b, s.concrete(s.k.insts[in.operands[1]].type));
      if (!text.empty()) return text;
    }
    // Division of floats may need a helper (GLSL: Vulkan's `/` is not exact); bool and/or/xor
    // are the logical forms; every other binary op is the dialect's spelling of ops.def's.
    if (in.op == ir::Op::Div && is_float(t)) return d.float_div(s, a, b);
    if (boolean && in.op == ir::Op::And) return "(" + a + " && " + b + ")";
    if (boolean && in.op == ir::Op::Or) return "(" + a + " || " + b + ")";
    if (boolean && in.op == ir::Op::Xor) return "(" + a + " != " + b + ")";
    return d.spell(in.op, t, {a, b});
  }

  // The value a store writes. A cast to the buffer's own 16-bit float or fp8 dtype rounds, and
  // the store would round its (now exact) result again: the store rounds the cast's f32 operand
  // instead, once (the same value: rounding is idempotent). Only where the cast's text is not
  // needed elsewhere: it is fused into this store, or, on a dialect that declares every value,
  // its register is simply left unused.
  std::string stored_value(ir::Id value, DType buffer_type) const {
    const ir::Inst& c = s.k.insts[value];
    if (c.op != ir::Op::Cast || s.concrete(c.type) != buffer_type) return v(value);
    if (buffer_type != DType::F16 && buffer_type != DType::BF16 && !is_fp8(buffer_type)) return v(value);
    if (!is_float(s.concrete(s.k.insts[c.operands[0]].type))) return v(value);
    if (d.inline_fused() && !(c.flags & ir::kFused)) return v(value);
    return v(c.operands[0]);
  }

  // Named by instruction id too: unroll copies a loop body's register array once per iteration,
  // and each copy is an array of its own.
  std::string local_name(const ir::Inst& alloc) const {
    return "la" + std::to_string(&alloc - s.k.insts.data()) + "_" + s.k.strings[size_t(alloc.attr(ir::Attr::Name))];
  }

  ir::Id group_leader = ir::kNone;
  ir::Id current_block = 0;

  void block(ir::Id b, int depth) {
    for (ir::Id id : s.k.blocks[b].insts) {
      current_block = b;
      inst(id, depth);
    }
  }

  // f16 and bf16 arithmetic rounds to its dtype after every op (docs/semantics.md): the f32
  // result of an op that can leave the dtype's values is rounded by the dialect's narrowing cast.
  // neg, abs, min, max, floor, ceil, rint and trunc of a 16-bit value stay 16-bit values; the
  // dialects' 16-bit fma returns a value of the dtype (one rounding of the exact result).
  std::string rounded(const ir::Inst& in, DType t, const std::string& expr) {
    if (t != DType::F16 && t != DType::BF16) return expr;
    switch (in.op) {
      case ir::Op::Add: case ir::Op::Sub: case ir::Op::Mul: case ir::Op::Div: case ir::Op::Exp:
      case ir::Op::Log: case ir::Op::Sqrt: case ir::Op::Rsqrt: case ir::Op::Tanh: case ir::Op::Sin: case ir::Op::Cos:
      case ir::Op::Exp2: case ir::Op::Log2: case ir::Op::Erf: case ir::Op::Pow:
        if (rounded_by_store.count(ir::Id(&in - s.k.insts.data()))) return expr;
        return d.cast(s, in, DType::F32, t, expr);
      default:
        return expr;
    }
  }

  void inst(ir::Id id, int depth) {
    const ir::SrcLoc outer = where;
    where = s.k.insts[id].loc;
    inst_body(id, depth);
    if (!break_after.empty() && break_after == ir::mnemonic(s.k.insts[id].op)) {
      line(depth, "iron_test_broken_line = ;");  // EmitOptions::test_break_after_op
      break_after.clear();
    }
    where = outer;  // an If or For prints its closing brace under its own location
  }

  void inst_body(ir::Id id, int depth) {
    const ir::Inst& in = s.k.insts[id];
    DType t = s.concrete(in.type);
    auto arg = [&](int i) { return v(in.operands[i]); };
    // A fragment value is declared with its tile type (never const: loads fill it in place).
    const std::string decl = in.type.is_fragment() ? tile_type(s, in.type) + " " : d.decl(t);
    // An operand used as an array index, in the form the target indexes with (GLSL: 32 bits).
    auto index = [&](ir::Id operand) { return d.array_index(s.concrete(s.k.insts[operand].type), v(operand)); };
    auto def = [&](const std::string& expr) {
      if ((in.flags & ir::kFused) && d.inline_fused()) inline_expr[id] = expr;  // printed at its single use
      else line(depth, decl + reg(id) + " = " + expr + ";");
    };
    using ir::Op;
    if (in.op == Op::Pair || in.op == Op::PairGet || in.type.is_vector()) {
      // A pair is a u32 word on every dialect; pair_get gives the element's f32 register.
      std::vector<std::string> a;
      for (int i = 0; i < in.num_operands(); ++i) a.push_back(arg(i));
      const DType elem = s.concrete(in.op == Op::PairGet ? s.k.insts[in.operands[0]].type : in.type);
      const std::string expr = d.pair_op(s, in, elem, a);
      const DType reg_dtype = in.op == Op::PairGet ? elem : DType::U32;
      if ((in.flags & ir::kFused) && d.inline_fused()) inline_expr[id] = expr;
      else line(depth, d.decl(reg_dtype) + reg(id) + " = " + expr + ";");
      return;
    }
    switch (in.op) {
      case Op::Const: def(d.literal(s, in)); break;
      case Op::Param: def(d.scalar(s, s.k.params[in.param()])); break;
      case Op::ThreadId: case Op::ProgramId: case Op::LocalId: case Op::GroupSize: case Op::NumPrograms:
      case Op::LaneId: case Op::LaneWidth: case Op::SimdGroupId: case Op::NumSimdGroups:
        def(d.builtin(s, in));
        break;
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::And: case Op::Or:
      case Op::Xor: case Op::Shl: case Op::Shr: case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le:
      case Op::Gt: case Op::Ge:
        def(rounded(in, t, binary(in, arg(0), arg(1))));
        break;
      case Op::Neg:
        def(is_integer(t) ? d.int_neg(t, arg(0)) : d.float_neg(arg(0)));
        break;
      case Op::Not:
        if (t == DType::Bool) def("(!" + arg(0) + ")");
        else if (int_bits(t) < 32) def(d.convert(t, "~" + arg(0)));  // C promotes: wrap back
        else def(d.spell(in.op, t, {arg(0)}));
        break;
      case Op::Min: case Op::Max: case Op::Abs: case Op::Fma: case Op::Exp: case Op::Log: case Op::Sqrt:
      case Op::Rsqrt: case Op::Tanh: case Op::Floor: case Op::Ceil: case Op::Rint: case Op::Trunc: case Op::Sin:
      case Op::Cos: case Op::Exp2: case Op::Log2: case Op::Erf: case Op::Pow: case Op::MulHi: case Op::Popcount:
      case Op::Clz: {
        std::vector<std::string> a;
        for (int i = 0; i < in.num_operands(); ++i) a.push_back(arg(i));
        def(rounded(in, t, d.math(s, in, t, a)));
        break;
      }
      case Op::Select: def(d.spell(in.op, t, {arg(0), arg(1), arg(2)})); break;
      case Op::Cast: def(d.cast(s, in, s.concrete(s.k.insts[in.operands[0]].type), t, arg(0))); break;
      case Op::Bitcast: def(d.bitcast(s, in, s.concrete(s.k.insts[in.operands[0]].type), t, arg(0))); break;
      case Op::Load:
        if (const int64_t width = in.attr(ir::Attr::Vec); width > 0) {
          // Vector group leader: one wide load into an array; the members read its lanes.
          std::string array = reg(id) + "_lanes";
          line(depth, d.reg_type(t) + " " + array + "[" + std::to_string(width) + "];");
          std::vector<std::string> lines;
          d.load_group(s, s.k.params[in.param()], index(in.operands[0]), int(width), array, lines);
          for (const std::string& l : lines) line(depth, l);
          group_leader = id;
          def(array + "[0]");
        } else if (in.has(ir::Attr::Lane)) {
          def(reg(group_leader) + "_lanes[" + std::to_string(in.attr(ir::Attr::Lane)) + "]");
        } else {
          def(d.load(s, s.k.params[in.param()], index(in.operands[0])));
        }
        break;
      case Op::Store:
        if (const int64_t width = in.attr(ir::Attr::Vec); width > 0) {
          // Vector group leader: the members follow it in this block and carry the other lanes.
          const auto& list = s.k.blocks[current_block].insts;
          size_t pos = size_t(std::find(list.begin(), list.end(), id) - list.begin());
          std::vector<std::string> values;
          const DType bt = s.concrete(s.k.params[in.param()].dtype);
          for (int64_t lane = 0; lane < width; ++lane)
            values.push_back(stored_value(s.k.insts[list[pos + size_t(lane)]].operands[1], bt));
          std::vector<std::string> lines;
          d.store_group(s, s.k.params[in.param()], index(in.operands[0]), values, lines);
          for (const std::string& l : lines) line(depth, l);
        } else if (!in.has(ir::Attr::Lane)) {
          line(depth, d.store(s, s.k.params[in.param()], index(in.operands[0]), stored_value(in.operands[1], s.concrete(s.k.params[in.param()].dtype))) + ";");
        }
        break;
      case Op::Var: case Op::VarLoad: case Op::VarStore: {
        // GLSL keeps fragments in shared-memory slots (tiles.cpp): a copy between slots, or none.
        const bool frag = in.op == Op::VarStore ? s.k.insts[in.operands[1]].type.is_fragment() : in.type.is_fragment();
        if (frag && s.tile_slots > 0) {
          std::vector<std::string> lines;
          glsl_tile_var_op(s, d, id, lines);
          for (const std::string& l : lines) line(depth, l);
        } else if (in.op == Op::Var) {
          line(depth, (frag ? tile_type(s, in.type) : d.var_type(t)) + " " + reg(id) + " = " + arg(0) + ";");
        } else if (in.op == Op::VarLoad) {
          def(arg(0));
        } else {
          line(depth, arg(0) + " = " + arg(1) + ";");
        }
        break;
      }
      case Op::TgAlloc: break;  // declared by the dialect at function or module scope
      case Op::TgLoad: {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string elem = d.tg_name(s.k, alloc) + "[" + index(in.operands[1]) + "]";
        // An array f32 atomics act on may be a word array on the target (tg_word_load).
        def(s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_load(elem) : d.tg_load(s, s.concrete(alloc.type), elem));
        break;
      }
      case Op::TgStore: {
        const ir::Inst& alloc = s.k.insts[in.operands[0]];
        const std::string elem = d.tg_name(s.k, alloc) + "[" + index(in.operands[1]) + "]";
        line(depth, (s.f32_atomic_allocs.count(in.operands[0]) ? d.tg_word_store(elem, arg(2))
                                                               : d.tg_store(s, s.concrete(alloc.type), elem, arg(2))) +
                        ";");
        break;
      }
      // Register arrays: an array of register values, every index a constant (register_arrays).
      case Op::LocalAlloc: {
        const std::string name = local_name(in), count = std::to_string(in.attr(ir::Attr::Count));
        line(depth, d.var_type(t) + " " + name + "[" + count + "];");
        if (s.poison_locals) {  // EmitOptions::poison_register_arrays
          // Straight-line stores, no loop: lavapipe's loop budget is shared by all loops of a
          // shader (kLoopLimitText), and these must not spend it.
          std::string type = d.var_type(t);  // the constructor's type, without a qualifier
          if (type.rfind("precise ", 0) == 0) type = type.substr(8);
          const std::string poison = type + "(" + (is_float(t) ? "uintBitsToFloat(0x7fa5a5a5u)" : "0xa5a5a5a5u") + ")";
          for (uint64_t i = 0; i < uint64_t(in.attr(ir::Attr::Count)); ++i)
            line(depth, name + "[" + std::to_string(i) + "] = " + poison + ";");
        }
        break;
      }
      case Op::LocalLoad: def(local_name(s.k.insts[in.operands[0]]) + "[" + arg(1) + "]"); break;
      case Op::LocalStore: line(depth, local_name(s.k.insts[in.operands[0]]) + "[" + arg(1) + "] = " + arg(2) + ";"); break;
      case Op::LaneShuffle: case Op::LaneShuffleXor: case Op::LaneShuffleUp: case Op::LaneShuffleDown:
      case Op::LaneBroadcast: case Op::LaneMin: case Op::LaneAnd: case Op::LaneOr: case Op::LaneInclusiveSum:
      case Op::LaneExclusiveSum: case Op::LaneBallot: case Op::LaneAny: case Op::LaneAll: {
        std::vector<std::string> a;
        for (int i = 0; i < in.num_operands(); ++i) a.push_back(arg(i));
        def(d.lane_op(s, in, s.concrete(s.k.insts[in.operands[0]].type), a));
        break;
      }
      case Op::AtomicAdd: case Op::AtomicMin: case Op::AtomicMax: case Op::AtomicAnd: case Op::AtomicOr:
      case Op::AtomicExchange: case Op::AtomicCas: case Op::TgAtomicAdd: case Op::TgAtomicMin:
      case Op::TgAtomicMax: case Op::TgAtomicAnd: case Op::TgAtomicOr: case Op::TgAtomicExchange:
      case Op::TgAtomicCas: {
        ir::AtomicOperands ao = ir::atomic_operands(in);
        std::vector<std::string> a{index(ao.index)};
        if (ao.expected != ir::kNone) a.push_back(v(ao.expected));
        a.push_back(v(ao.value));
        std::vector<std::string> lines;
        std::string expr = d.atomic(s, in, t, reg(id), a, lines);
        for (const std::string& l : lines) line(depth, l);
        line(depth, d.decl(t) + reg(id) + " = " + expr + ";");  // never fused: it has a side effect
        break;
      }
      case Op::AtomicAddPair: {
        std::vector<std::string> lines;
        d.atomic_add_pair(s, in, s.k.params[in.param()], reg(id), index(in.operands[0]), arg(1), arg(2), lines);
        for (const std::string& l : lines) line(depth, l);
        break;
      }
      case Op::AsyncCopy: {
        const ir::Param& p = s.k.params[in.param()];
        const DType et = s.concrete(p.dtype);
        const int64_t count = in.attr(ir::Attr::Count);
        const std::string tg = d.tg_name(s.k, s.k.insts[in.operands[0]]);
        std::vector<std::string> lines;
        {
          // Both addresses provably aligned to the copy's size: the array's alignment and the
          // buffer's (assumed_align: checked at dispatch), and the indices' known multiples.
          const uint64_t bytes = uint64_t(count) * dtype_size(et);
          uint32_t need = 0;
          while ((uint64_t(1) << need) < bytes) ++need;
          uint32_t elem_log2 = 0;
          while ((size_t(1) << elem_log2) < dtype_size(et)) ++elem_log2;
          const ir::Inst& alloc = s.k.insts[in.operands[0]];
          const uint64_t tg_align = alloc.has(ir::Attr::Align) ? uint64_t(alloc.attr(ir::Attr::Align)) : 0;
          s.async_copy_aligned = tg_align >= bytes && ir::assumed_align(p) >= bytes &&
                                 known_pow2(s.k, in.operands[1]) + elem_log2 >= need &&
                                 known_pow2(s.k, in.operands[2]) + elem_log2 >= need;
        }
        if (!d.async_copy(s, tg, index(in.operands[1]), p, index(in.operands[2]), arg(3), count, dtype_size(et), lines)) {
          // A plain copy: element e from the buffer when e < valid, else 0.
          const std::string zero = is_float(et) ? std::string("0.0") + d.float_suffix() : d.convert(et, "0");
          // An f32 array that atomics act on may be a word array on the target (tg_word_store).
          const bool words = s.f32_atomic_allocs.count(in.operands[0]) != 0;
          auto put = [&](const std::string& elem, const std::string& v) {
            return words ? d.tg_word_store(elem, v) : d.tg_store(s, et, elem, v);
          };
          for (int64_t e = 0; e < count; ++e) {
            const std::string off = " + " + std::to_string(e) + "u)";
            const std::string elem = tg + "[(" + index(in.operands[1]) + off + "]";
            lines.push_back("if (" + std::to_string(e) + "u < " + arg(3) + ") " +
                            put(elem, d.load(s, p, "(" + index(in.operands[2]) + off)) + ";");
            lines.push_back("else " + put(elem, zero) + ";");
          }
        }
        for (const std::string& l : lines) line(depth, l);
        break;
      }
      case Op::AsyncCommit: case Op::AsyncWait: {
        std::vector<std::string> lines;
        if (in.op == Op::AsyncCommit) d.async_commit(lines);
        else d.async_wait(in.attr(ir::Attr::Count), lines);
        for (const std::string& l : lines) line(depth, l);
        break;
      }
      case Op::MbarInit: case Op::MbarArrive: case Op::MbarArriveTx: case Op::MbarWait: case Op::FenceProxyAsync:
      case Op::SetMaxNRegInc: case Op::SetMaxNRegDec: case Op::BulkCopy: case Op::BulkStore: case Op::BulkCommit:
      case Op::BulkWait: case Op::TmaLoad2D: case Op::TmaStore2D: {
        std::string bar, dst, src, extra;
        const auto elem = [&](ir::Id alloc, ir::Id idx) {
          return d.tg_name(s.k, s.k.insts[alloc]) + "[" + index(idx) + "]";
        };
        if (ir::is_mbar_op(in.op)) {
          bar = elem(in.operands[0], in.operands[1]);
          if (in.num_operands() > 2) extra = arg(2);
        } else if (in.op == Op::BulkCopy) {
          dst = elem(in.operands[0], in.operands[1]);
          src = index(in.operands[2]);
          bar = elem(in.operands[3], in.operands[4]);
        } else if (in.op == Op::BulkStore) {
          dst = elem(in.operands[0], in.operands[1]);  // the array's first element read
          src = index(in.operands[2]);                 // the buffer's first element written
        } else if (in.op == Op::TmaLoad2D || in.op == Op::TmaStore2D) {
          dst = elem(in.operands[0], in.operands[1]);  // the array's first element of the box
          src = arg(2);                                // the box's column (x)
          extra = arg(3);                              // and row (y)
          if (in.op == Op::TmaLoad2D) bar = elem(in.operands[4], in.operands[5]);
        }
        std::vector<std::string> lines;
        if (!d.hopper_op(s, in, bar, dst, src, extra, lines))
          s.unsupported(in, d.name(), std::string(ir::mnemonic(in.op)) +
                                          " (mbarriers, the copy engine, tensor maps and setmaxnreg are CUDA sm_90 features with no "
                                          "equivalent here)");
        for (const std::string& l : lines) line(depth, l);
        break;
      }
      case Op::FenceThreadgroup: case Op::FenceDevice: line(depth, d.fence(in.op)); break;
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
      case Op::For: {
        // The step wraps (docs/semantics.md), so a signed induction variable steps on the
        // unsigned type of its width.
        const DType ut = int_bits(t) == 64 ? DType::U64 : DType::U32;
        std::string step = is_signed_integer(t)
                               ? reg(id) + " = " + d.convert(t, d.convert(ut, reg(id)) + " + " + d.convert(ut, arg(2)))
                               : reg(id) + " += " + arg(2);
        if (!s.loop_check) {
          line(depth, "for (" + d.reg_type(t) + " " + reg(id) + " = " + arg(0) + "; " + reg(id) + " < " + arg(1) + "; " +
                          step + ") {");
          block(in.blocks[0], depth + 1);
          line(depth, "}");
          break;
        }
        // The induction variable outlives the loop: a loop that ended while its condition still
        // held was cut short by the driver, and says so in the status buffer.
        std::string end = reg(id) + "_end";
        line(depth, d.reg_type(t) + " " + end + " = " + arg(1) + ";");
        line(depth, d.reg_type(t) + " " + reg(id) + " = " + arg(0) + ";");
        line(depth, "for (; " + reg(id) + " < " + end + "; " + step + ") {");
        block(in.blocks[0], depth + 1);
        line(depth, "}");
        line(depth, "if (" + reg(id) + " < " + end + ") iron_loop_cut(" + std::to_string(in.loc.line) + "u, " +
                        std::to_string(in.loc.file) + "u);");
        break;
      }
      case Op::TileFill: case Op::TileLoad: case Op::TileTgLoad: case Op::TileMma: case Op::TileStore:
      case Op::TileTgStore: case Op::TileGet: case Op::TileWgMma: case Op::TileWgMmaRs: case Op::TileScaleAdd:
      case Op::WgFence: case Op::WgCommit: case Op::WgWait: {
        std::vector<std::string> a, lines;
        for (int i = 0; i < in.num_operands(); ++i) a.push_back(arg(i));
        std::string value;
        tile_op(s, d, id, a, lines, value);
        for (const std::string& l : lines) line(depth, l);
        if (!value.empty()) def(value);
        break;
      }
      case Op::Call:
        s.unsupported(in, d.name(), "a call to '" + s.k.strings[size_t(in.attr(ir::Attr::Callee))] + "' (kernel_inline must inline it first)");
        break;
      case Op::Arg: case Op::Return:
        s.unsupported(in, d.name(), std::string(ir::mnemonic(in.op)) + " outside a device function");
        break;
      case Op::Pair: case Op::PairGet: break;  // handled above
      case Op::Count_:
        s.unsupported(in, d.name(), "an invalid op");
        break;
    }
  }
};

}  // namespace

Emitted emit(const ir::Kernel& k, Instantiation dtype, Target target, const EmitOptions& options) {
  return emit(k, dtype, profile_for(target), options);
}

Emitted emit(const ir::Kernel& k, Instantiation dtype, const TargetProfile& profile, const EmitOptions& options) {
  const Target target = profile.target;
  const TargetInfo& info = target_info(target);
  const bool c_like = target == Target::Cuda || target == Target::Hip;  // CUDA C++ and its HIP variant
  Emitted result;
  result.entry = target == Target::Glsl ? "main" : entry_name(k, dtype);
  if (std::string why; !ir::declares(k, dtype, &why)) {
    result.diags.error({}, why);
    return result;
  }
  if (!info.make_dialect) {
    result.diags.error({}, std::string("this build has no ") + info.language + " dialect (target '" + info.name + "')");
    return result;
  }
  // By-value structures: CUDA passes them as __grid_constant__ parameters, GLSL as push-constant
  // words after the scalars (a plain blob; a tensor map is CUDA's alone). MSL and HIP have no
  // such parameter in Iron (docs/semantics.md).
  if (target != Target::Cuda) {
    for (const ir::Param& p : k.params)
      if (p.kind == ir::ParamKind::Blob && (p.tensor_map || target != Target::Glsl))
        result.diags.error(p.loc, "kernel " + k.name + ": " + (p.tensor_map ? "tensor map" : "blob") + " parameter '" + p.name +
                                      "' (a by-value structure) is not expressible on " + info.language + "; " +
                                      (p.tensor_map ? "a tensor map is CUDA's" : "blobs run on CUDA, Vulkan and the interpreter"));
    if (!result.diags.empty()) return result;
  }
  EmitState s(k, dtype);  // every other member starts at its default
  s.profile = profile;
  s.preserve_f32_specials = options.preserve_f32_specials;
  s.f16_round_to_nearest_even = options.f16_round_to_nearest_even;
  s.loop_check = options.loop_limit_check && target == Target::Glsl;
  s.emulate_fma = options.emulate_fma && target == Target::Glsl;
  s.poison_locals = options.poison_register_arrays && target == Target::Glsl;
  // A forced CUDA strategy wins on CUDA; otherwise the profile's (HIP: the software path).
  s.cuda_mma = target == Target::Cuda && options.cuda_mma != MmaStrategy::Auto ? options.cuda_mma : profile.mma;
  if (c_like && options.threadgroup[0] != 0)
    for (int a = 0; a < 3; ++a) s.threadgroup[a] = options.threadgroup[a] ? options.threadgroup[a] : 1;
  s.tile_f64 = options.tile_f64 && target == Target::Glsl;
  int buffers = 0, scalars = 0;
  for (const ir::Param& p : k.params) {
    bool buf = p.kind == ir::ParamKind::Buffer;
    s.buffer_index.push_back(buf ? buffers++ : -1);
    s.scalar_index.push_back(p.kind == ir::ParamKind::Scalar ? scalars++ : -1);
    DType c = ir::resolve(p.dtype, dtype);
    if (buf && dtype_size(c) == 2) s.uses_16bit_storage = true;
    if (buf && dtype_size(c) == 1) s.uses_8bit_storage = s.uses_int8 = true;
    if (int_bits(c) == 16) s.uses_int16 = true;
    if (int_bits(c) == 64) s.uses_int64 = true;
    if (buf && c == DType::F16) s.uses_f16 = true;
    if (buf && c == DType::BF16) s.uses_bf16 = true;
  }
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    DType c = ir::resolve(in.type.elem(), dtype);
    if (c == DType::F16) s.uses_f16 = true;
    if (c == DType::BF16) s.uses_bf16 = true;
    if (int_bits(c) == 8) s.uses_int8 = true;
    if (in.op == ir::Op::TgAlloc && dtype_size(c) == 1) s.uses_int8 = true;  // fp8 arrays hold uint8_t
    if (int_bits(c) == 16) s.uses_int16 = true;
    if (int_bits(c) == 64) s.uses_int64 = true;
    if (ir::has_trait(in.op, ir::trait::L)) s.uses_lane_ops = true;
    if (ir::is_atomic(in.op) && ir::resolve(in.type.elem(), dtype) == DType::F32) {
      if (ir::is_global_atomic(in.op)) s.f32_atomic_params.insert(in.param());
      else s.f32_atomic_allocs.insert(in.operands[0]);
    }
    if (ir::is_atomic(in.op) && ir::resolve(in.type.elem(), dtype) == DType::U64) s.uses_int64_atomics = true;
    if (in.op == ir::Op::AtomicAddPair) s.f32_atomic_params.insert(in.param());
    if (in.op == ir::Op::FenceDevice) s.uses_fence_device = true;
    if ((in.op == ir::Op::Load || in.op == ir::Op::Store) && in.attr(ir::Attr::Vec) > 0)
      s.vector_chunks[in.param()].insert(
          chunk_elems(ir::resolve(k.params[in.param()].dtype, dtype), int(in.attr(ir::Attr::Vec))));
  });

  std::unique_ptr<Dialect> d = info.make_dialect(profile);
  if (target == Target::Glsl) {
    // Cooperative matrices take f16 tiles only; any bf16 or fp8 fragment keeps the software
    // path, and so does tile_scale_add (a cooperative matrix's rows are not addressable).
    bool f16_tiles = false, other = false;
    ir::walk(k, [&](ir::Id id) {
      if (k.insts[id].op == ir::Op::TileScaleAdd) other = true;
      const Type t = k.insts[id].type;
      if (!t.is_fragment() || t.role() == FragRole::Acc) return;
      (ir::resolve(t.elem(), dtype) == DType::F16 ? f16_tiles : other) = true;
    });
    s.tile_coopmat = options.tile_coopmat && f16_tiles && !other;
    if (!s.tile_coopmat) plan_glsl_tiles(s);
  }
  // The body first: it records the helpers the prelude must define.
  Emitter e{s, *d, {}, {}, {}, {}, {}, {}};
  s.value_text = [&e](ir::Id id) { return e.v(id); };
  {
    std::vector<uint32_t> uses(k.insts.size(), 0);
    ir::walk(k, [&](ir::Id id) {
      for (int i = 0; i < k.insts[id].num_operands(); ++i)
        if (k.insts[id].operands[i] < uses.size()) ++uses[k.insts[id].operands[i]];
    });
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      if (in.op != ir::Op::Store) return;
      const ir::Id v = in.operands[1];
      const DType bt = s.concrete(k.params[in.param()].dtype);
      if ((bt == DType::F16 || bt == DType::BF16) && uses[v] == 1 && s.concrete(k.insts[v].type) == bt)
        e.rounded_by_store.insert(v);
    });
  }
  e.break_after = options.test_break_after_op;
  e.block(0, 1);
  d->end(s, e.out);
  std::string prelude;
  d->begin(s, prelude);
  result.source = prelude + e.out;
  result.line_locs.assign(size_t(std::count(prelude.begin(), prelude.end(), '\n')), ir::SrcLoc{});
  result.line_locs.insert(result.line_locs.end(), e.locs.begin(), e.locs.end());
  result.diags = std::move(s.diags);
  return result;
}

}  // namespace iron::codegen
