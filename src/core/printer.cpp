// Text form of the IR: a stable printer (values renumbered in program order, so two equal
// kernels print byte-identically) and the parser that reads it back. Pass tests are written in
// this form and a failing kernel can be reproduced from a dump.
//
//   kernel iron_add mode=Elementwise dtypes=f32,f16 {
//     param a: in buf<T> extent=n
//     param n: scalar<u32>
//     %0 = thread_id<0> : u32
//     %1 = param<n> : u32
//     %2 = lt %0, %1 : bool
//     if %2 {
//       %3 = load<a> %0 : T
//       store<out> %0, %3
//     }
//   }
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/ir.hpp"

namespace iron::ir {
namespace {

bool has_axis(Op op) {
  return op == Op::ThreadId || op == Op::ProgramId || op == Op::LocalId || op == Op::GroupSize ||
         op == Op::NumPrograms;
}
bool names_param(Op op) { return op == Op::Param || op == Op::Load || op == Op::Store; }

std::string format_float(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string extent_text(const Kernel& k, const Param& p) {
  std::string s;
  if (p.extent_factor != 1 || p.extent_scalars.empty()) s = std::to_string(p.extent_factor);
  for (uint32_t idx : p.extent_scalars) {
    if (!s.empty()) s += "*";
    s += idx < k.params.size() ? k.params[idx].name : "?";
  }
  return s;
}

struct Printer {
  const Kernel& k;
  const PrintOptions& opts;
  std::map<Id, uint32_t> number;
  std::ostringstream out;

  std::string ref(Id v) {
    auto it = number.find(v);
    if (it == number.end()) return "%?" + std::to_string(v);
    return "%" + std::to_string(it->second);
  }

  void block(Id b, int depth) {
    if (b >= k.blocks.size()) {
      out << std::string(depth * 2, ' ') << "; <bad block " << b << ">\n";
      return;
    }
    for (Id id : k.blocks[b].insts) inst(id, depth);
  }

  void inst(Id id, int depth) {
    std::string pad(depth * 2, ' ');
    if (id >= k.insts.size()) {
      out << pad << "; <bad instruction " << id << ">\n";
      return;
    }
    const Inst& in = k.insts[id];
    out << pad;
    if (in.type != DType::Void || (in.flags & kUntyped)) {
      uint32_t n = uint32_t(number.size());
      number[id] = n;
      out << "%" << n << " = ";
    }
    out << mnemonic(in.op);
    // Attributes
    if (in.op == Op::Const) {
      out << "<" << (is_float(in.type) ? format_float(in.fimm) : std::to_string(in.imm)) << ">";
    } else if (names_param(in.op)) {
      out << "<" << (in.sym < k.params.size() ? k.params[in.sym].name : "?");
      if (in.imm > 0) out << ", vec" << in.imm;   // vector group leader (vectorize)
      if (in.imm < 0) out << ", lane" << -in.imm;  // vector group member
      out << ">";
    } else if (has_axis(in.op)) {
      out << "<" << in.imm << ">";
    } else if (in.op == Op::TgAlloc) {
      out << "<" << (in.sym < k.strings.size() ? k.strings[in.sym] : "?") << ", " << in.imm << ">";
    } else if (in.op == Op::Call) {
      out << "<" << (in.sym < k.strings.size() ? k.strings[in.sym] : "?") << ">";
    } else if (in.op == Op::Arg) {
      out << "<" << in.imm << ">";
    }
    for (int i = 0; i < in.num_operands; ++i) out << (i ? ", " : " ") << ref(in.operands[i]);
    if (in.flags & kUntyped) out << " : ?";
    else if (in.type != DType::Void) out << " : " << dtype_name(in.type);
    if (in.flags & kFused) out << " fused";
    if (opts.locations && in.loc.line != 0) {
      out << " @\"" << (in.loc.file < k.files.size() ? k.files[in.loc.file] : "") << "\":"
          << in.loc.line;
    }
    if (in.op == Op::If) {
      out << " {\n";
      if (in.blocks[0] != kNone) block(in.blocks[0], depth + 1);
      if (in.blocks[1] != kNone) {
        out << pad << "} else {\n";
        block(in.blocks[1], depth + 1);
      }
      out << pad << "}";
    } else if (in.op == Op::For) {
      out << " {\n";
      if (in.blocks[0] != kNone) block(in.blocks[0], depth + 1);
      out << pad << "}";
    }
    out << "\n";
  }
};

}  // namespace

std::string print(const Kernel& k, const PrintOptions& opts) {
  Printer p{k, opts, {}, {}};
  p.out << (k.is_function ? "function " : "kernel ") << k.name << " mode=" << mode_name(k.mode);
  if (!k.dtypes.empty()) {
    p.out << " dtypes=";
    for (size_t i = 0; i < k.dtypes.size(); ++i) p.out << (i ? "," : "") << dtype_name(k.dtypes[i]);
  }
  p.out << " {\n";
  for (const Param& prm : k.params) {
    p.out << "  param " << prm.name << ": ";
    if (prm.kind == ParamKind::Buffer)
      p.out << access_name(prm.access) << " buf<" << dtype_name(prm.dtype)
            << "> extent=" << extent_text(k, prm) << "\n";
    else
      p.out << "scalar<" << dtype_name(prm.dtype) << ">\n";
  }
  p.block(0, 1);
  p.out << "}\n";
  return p.out.str();
}

// ---------------------------------------------------------------------------------------------
// Parser

namespace {

struct Parser {
  Kernel k;
  std::map<std::string, Id> values;  // "%N" -> id
  struct Open {
    Id inst;     // owning If/For (kNone for the kernel itself)
    Id block;
  };
  std::vector<Open> stack;
  int line_no = 0;

  [[noreturn]] void fail(const std::string& msg) {
    throw Error("IR parse error at line " + std::to_string(line_no) + ": " + msg);
  }

  static std::string trim(std::string_view s) {
    size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    size_t e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
  }

  DType dtype(const std::string& s) {
    DType d;
    if (!parse_dtype(s, d)) fail("unknown dtype '" + s + "'");
    return d;
  }

  Id value(const std::string& tok) {
    auto it = values.find(tok);
    if (it == values.end()) fail("use of undefined value " + tok);
    return it->second;
  }

  void header(const std::string& line) {
    // kernel NAME mode=M [dtypes=a,b] {
    std::istringstream is(line);
    std::string kw, tok;
    is >> kw >> k.name;
    if ((kw != "kernel" && kw != "function") || k.name.empty()) fail("expected 'kernel NAME ...' or 'function NAME ...'");
    k.is_function = kw == "function";
    bool open = false;
    while (is >> tok) {
      if (tok == "{") {
        open = true;
      } else if (tok.rfind("mode=", 0) == 0) {
        std::string m = tok.substr(5);
        if (m == "Elementwise") k.mode = Mode::Elementwise;
        else if (m == "Reduction") k.mode = Mode::Reduction;
        else fail("unknown mode '" + m + "'");
      } else if (tok.rfind("dtypes=", 0) == 0) {
        std::string list = tok.substr(7);
        size_t pos = 0;
        while (pos <= list.size()) {
          size_t c = list.find(',', pos);
          std::string d = list.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
          if (!d.empty()) k.dtypes.push_back(dtype(d));
          if (c == std::string::npos) break;
          pos = c + 1;
        }
      } else {
        fail("unexpected '" + tok + "' in kernel header");
      }
    }
    if (!open) fail("kernel header must end with '{'");
    stack.push_back({kNone, 0});
  }

  void param(const std::string& line) {
    // param NAME: in buf<T> extent=4*n   |   param NAME: scalar<u32>
    size_t colon = line.find(':');
    if (colon == std::string::npos) fail("expected 'param NAME: ...'");
    Param p;
    p.name = trim(line.substr(6, colon - 6));
    std::istringstream is(line.substr(colon + 1));
    std::string a, b, c;
    is >> a >> b >> c;
    auto inner = [&](const std::string& s, const std::string& pre) {
      if (s.rfind(pre + "<", 0) != 0 || s.back() != '>') fail("expected " + pre + "<dtype>");
      return s.substr(pre.size() + 1, s.size() - pre.size() - 2);
    };
    if (a.rfind("scalar<", 0) == 0) {
      p.kind = ParamKind::Scalar;
      p.dtype = dtype(inner(a, "scalar"));
    } else {
      p.kind = ParamKind::Buffer;
      if (a == "in") p.access = Access::Read;
      else if (a == "out") p.access = Access::Write;
      else if (a == "inout") p.access = Access::ReadWrite;
      else fail("expected in|out|inout, got '" + a + "'");
      p.dtype = dtype(inner(b, "buf"));
      if (c.rfind("extent=", 0) != 0) fail("buffer parameter needs extent=");
      std::string ext = c.substr(7);
      size_t pos = 0;
      while (pos <= ext.size()) {
        size_t star = ext.find('*', pos);
        std::string t = ext.substr(pos, star == std::string::npos ? std::string::npos : star - pos);
        if (t.empty()) fail("empty extent term");
        if (std::isdigit(static_cast<unsigned char>(t[0]))) {
          p.extent_factor *= std::strtoull(t.c_str(), nullptr, 10);
        } else {
          int idx = k.find_param(t);
          if (idx < 0) fail("extent names unknown scalar '" + t + "' (declare it before the buffer)");
          p.extent_scalars.push_back(uint32_t(idx));
        }
        if (star == std::string::npos) break;
        pos = star + 1;
      }
    }
    if (k.find_param(p.name) >= 0) fail("duplicate parameter '" + p.name + "'");
    k.params.push_back(std::move(p));
  }

  void inst(std::string line) {
    Inst in;
    std::string result;
    // Location suffix: @"file":line
    size_t at = line.rfind(" @\"");
    bool opens = false;
    if (!line.empty() && line.back() == '{') {
      opens = true;
      line = trim(line.substr(0, line.size() - 1));
    }
    if (at != std::string::npos && at < line.size()) {
      size_t q = line.find("\":", at + 3);
      if (q == std::string::npos) fail("malformed location");
      in.loc.file = k.intern_file(line.substr(at + 3, q - at - 3));
      in.loc.line = uint32_t(std::strtoul(line.c_str() + q + 2, nullptr, 10));
      line = trim(line.substr(0, at));
    }
    // Result
    if (line[0] == '%') {
      size_t eq = line.find(" = ");
      if (eq == std::string::npos) fail("expected '%N = ...'");
      result = line.substr(0, eq);
      line = line.substr(eq + 3);
    }
    // Type suffix
    std::string type_text;
    size_t colon = line.rfind(" : ");
    if (colon != std::string::npos) {
      type_text = trim(line.substr(colon + 3));
      line = line.substr(0, colon);
    }
    // Mnemonic and attributes
    size_t end = line.find_first_of(" <");
    std::string mn = line.substr(0, end);
    if (!op_from_mnemonic(mn, in.op)) fail("unknown op '" + mn + "'");
    std::string rest = end == std::string::npos ? "" : line.substr(end);
    std::vector<std::string> attrs;
    if (!rest.empty() && rest[0] == '<') {
      size_t close = rest.find('>');
      if (close == std::string::npos) fail("unterminated '<'");
      std::string a = rest.substr(1, close - 1);
      size_t pos = 0;
      while (true) {
        size_t c = a.find(',', pos);
        attrs.push_back(trim(a.substr(pos, c == std::string::npos ? std::string::npos : c - pos)));
        if (c == std::string::npos) break;
        pos = c + 1;
      }
      rest = rest.substr(close + 1);
    }
    // Operands
    std::string ops = trim(rest);
    if (!ops.empty()) {
      size_t pos = 0;
      while (true) {
        size_t c = ops.find(',', pos);
        std::string t = trim(ops.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
        if (in.num_operands == 3) fail("too many operands");
        in.operands[in.num_operands++] = value(t);
        if (c == std::string::npos) break;
        pos = c + 1;
      }
    }
    if (type_text.size() >= 6 && type_text.compare(type_text.size() - 6, 6, " fused") == 0) {
      in.flags |= kFused;
      type_text = trim(type_text.substr(0, type_text.size() - 6));
    }
    if (type_text == "?") in.flags |= kUntyped;
    else if (!type_text.empty()) in.type = dtype(type_text);
    if (result.empty() != (in.type == DType::Void && !(in.flags & kUntyped)))
      fail("a value-defining op needs '%N = ... : dtype' (or ': ?' for type_check to infer)");

    auto want_attrs = [&](size_t n) {
      if (attrs.size() != n) fail(std::string("'") + mn + "' takes " + std::to_string(n) + " attribute(s)");
    };
    if (in.op == Op::Const) {
      want_attrs(1);
      if (is_float(in.type)) in.fimm = std::strtod(attrs[0].c_str(), nullptr);
      else in.imm = std::strtoll(attrs[0].c_str(), nullptr, 10);
    } else if (names_param(in.op)) {
      if (attrs.size() == 2 && in.op != Op::Param) {
        if (attrs[1].rfind("vec", 0) == 0) in.imm = std::strtoll(attrs[1].c_str() + 3, nullptr, 10);
        else if (attrs[1].rfind("lane", 0) == 0) in.imm = -std::strtoll(attrs[1].c_str() + 4, nullptr, 10);
        else fail("expected vecN or laneN, got '" + attrs[1] + "'");
        attrs.pop_back();
      }
      want_attrs(1);
      int idx = k.find_param(attrs[0]);
      if (idx < 0) fail("unknown parameter '" + attrs[0] + "'");
      in.sym = uint32_t(idx);
    } else if (has_axis(in.op)) {
      want_attrs(1);
      in.imm = std::strtoll(attrs[0].c_str(), nullptr, 10);
    } else if (in.op == Op::TgAlloc) {
      want_attrs(2);
      in.sym = k.intern_string(attrs[0]);
      in.imm = std::strtoll(attrs[1].c_str(), nullptr, 10);
    } else if (in.op == Op::Call) {
      want_attrs(1);
      in.sym = k.intern_string(attrs[0]);
    } else if (in.op == Op::Arg) {
      want_attrs(1);
      in.imm = std::strtoll(attrs[0].c_str(), nullptr, 10);
    } else if (!attrs.empty()) {
      fail(std::string("'") + mn + "' takes no attributes");
    }

    bool control = in.op == Op::If || in.op == Op::For;
    if (control != opens) fail(control ? "expected '{' after if/for" : "unexpected '{'");
    Id id = k.add_inst(in);
    k.blocks[stack.back().block].insts.push_back(id);
    if (!result.empty()) {
      if (values.count(result)) fail("value " + result + " defined twice");
      values[result] = id;
    }
    if (control) {
      Id b = k.add_block(id);
      k.insts[id].blocks[0] = b;
      stack.push_back({id, b});
    }
  }

  Kernel run(std::string_view text) {
    std::istringstream is{std::string(text)};
    std::string raw;
    bool done = false;
    while (std::getline(is, raw)) {
      ++line_no;
      std::string line = trim(raw);
      size_t semi = line.find(';');
      if (semi == 0) continue;  // comment line
      if (line.empty()) continue;
      if (done) fail("text after the kernel's closing '}'");
      if (stack.empty()) {
        header(line);
      } else if (line.rfind("param ", 0) == 0) {
        param(line);
      } else if (line == "}") {
        stack.pop_back();
        if (stack.empty()) done = true;
      } else if (line == "} else {") {
        Open top = stack.back();
        if (top.inst == kNone || k.insts[top.inst].op != Op::If || k.insts[top.inst].blocks[1] != kNone)
          fail("'else' without a matching 'if'");
        stack.pop_back();
        Id b = k.add_block(top.inst);
        k.insts[top.inst].blocks[1] = b;
        stack.push_back({top.inst, b});
      } else {
        inst(line);
      }
    }
    if (!done) fail("unexpected end of text (missing '}')");
    return std::move(k);
  }
};

}  // namespace

Kernel parse(std::string_view text) { return Parser{}.run(text); }

}  // namespace iron::ir
