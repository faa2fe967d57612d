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
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

#include "core/ir.hpp"
#include "core/numeric.hpp"

namespace iron::ir {
namespace {

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

  std::string attr_text(const Inst& in, const AttrEntry& e) {
    switch (attr_info(e.key).kind) {
      case AttrKind::Int: return std::to_string(e.i);
      // A u64 constant keeps its bit pattern in the integer field: printed unsigned.
      case AttrKind::Number:
        return is_float(in.type)            ? format_float(e.f)
               : in.type == DType::U64 ? std::to_string(uint64_t(e.i))
                                       : std::to_string(e.i);
      case AttrKind::ParamRef: return e.i >= 0 && uint64_t(e.i) < k.params.size() ? k.params[size_t(e.i)].name : "?";
      case AttrKind::String: return e.i >= 0 && uint64_t(e.i) < k.strings.size() ? k.strings[size_t(e.i)] : "?";
    }
    return "?";
  }

  // `<required, ..., key=optional, ...>`: the schema's required attributes positionally, then
  // every other attribute the instruction carries as key=value.
  void attributes(const Inst& in) {
    const AttrSchema& schema = attr_schema(in.op);
    std::vector<std::string> parts;
    std::vector<uint8_t> shown(in.attrs.size(), 0);
    for (uint8_t s = 0; s < schema.count; ++s)
      for (size_t i = 0; i < in.attrs.size(); ++i)
        if (in.attrs[i].key == schema.slots[s].attr && !shown[i]) {
          shown[i] = 1;
          parts.push_back(schema.slots[s].required ? attr_text(in, in.attrs[i])
                                                   : std::string(attr_info(in.attrs[i].key).name) + "=" +
                                                         attr_text(in, in.attrs[i]));
          break;
        }
    for (size_t i = 0; i < in.attrs.size(); ++i)
      if (!shown[i] && size_t(in.attrs[i].key) < size_t(Attr::Count_))
        parts.push_back(std::string(attr_info(in.attrs[i].key).name) + "=" + attr_text(in, in.attrs[i]));
    if (parts.empty()) return;
    out << "<";
    for (size_t i = 0; i < parts.size(); ++i) out << (i ? ", " : "") << parts[i];
    out << ">";
  }

  void inst(Id id, int depth) {
    std::string pad(depth * 2, ' ');
    if (id >= k.insts.size()) {
      out << pad << "; <bad instruction " << id << ">\n";
      return;
    }
    const Inst& in = k.insts[id];
    out << pad;
    if (!in.type.is_void() || (in.flags & kUntyped)) {
      uint32_t n = uint32_t(number.size());
      number[id] = n;
      out << "%" << n << " = ";
    }
    out << mnemonic(in.op);
    attributes(in);
    for (int i = 0; i < in.num_operands(); ++i) out << (i ? ", " : " ") << ref(in.operands[i]);
    if (in.flags & kUntyped) out << " : ?";
    else if (!in.type.is_void()) out << " : " << type_name(in.type);
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
  // The printer recurses per block: refuse what no legal kernel holds instead of overflowing.
  if (size_t depth = nesting_depth(k); depth > kMaxNesting)
    throw Error("cannot print kernel '" + k.name + "': if/for nesting is " + std::to_string(depth) +
                " levels deep; the IR allows at most " + std::to_string(kMaxNesting));
  Printer p{k, opts, {}, {}};
  p.out << (k.is_function ? "function " : "kernel ") << k.name << " mode=" << mode_name(k.mode);
  if (!k.dtypes.empty()) {
    p.out << " dtypes=";
    for (size_t i = 0; i < k.dtypes.size(); ++i) p.out << (i ? "," : "") << dtype_name(k.dtypes[i]);
  }
  if (!k.wtypes.empty()) {
    p.out << " wtypes=";
    for (size_t i = 0; i < k.wtypes.size(); ++i) p.out << (i ? "," : "") << dtype_name(k.wtypes[i]);
  }
  p.out << " {\n";
  for (const Param& prm : k.params) {
    p.out << "  param " << prm.name << ": ";
    if (prm.kind == ParamKind::Buffer)
    {
      p.out << access_name(prm.access) << " buf<" << dtype_name(prm.dtype) << "> extent=" << extent_text(k, prm);
      if (prm.align) p.out << " aligned=" << prm.align;
      if (prm.stride_param != kNoStride)
        p.out << " strided=" << (prm.stride_param < k.params.size() ? k.params[prm.stride_param].name : "?");
      for (size_t i = 0; i < prm.aliases.size(); ++i)
        p.out << (i ? "," : " aliases=") << (prm.aliases[i] < k.params.size() ? k.params[prm.aliases[i]].name : "?");
      p.out << "\n";
    }
    else if (prm.kind == ParamKind::Blob) {
      if (prm.tensor_map) p.out << "tensormap\n";
      else p.out << "blob<" << prm.blob_bytes << "," << prm.align << ">\n";
    }
    else {
      p.out << "scalar<" << dtype_name(prm.dtype) << ">";
      if (prm.specialize) p.out << " specialize";
      if (prm.multiple_of) p.out << " multiple_of=" << prm.multiple_of;
      p.out << "\n";
    }
  }
  p.block(0, 1);
  p.out << "}\n";
  return p.out.str();
}

// ---------------------------------------------------------------------------------------------
// Parser. Every error names the line and column and quotes the offending text; nothing is
// read leniently (a literal that is not a number, or does not fit its dtype, is an error, not
// a zero or a clamp). Nesting deeper than kMaxNesting is refused before anything recurses.

namespace {

bool is_identifier_text(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

struct Parser {
  Kernel k;
  std::map<std::string, Id> values;  // "%N" -> id
  struct Open {
    Id inst;     // owning If/For (kNone for the kernel itself)
    Id block;
  };
  std::vector<Open> stack;
  int line_no = 0;
  std::string raw;  // the current line as written, for columns

  // Column of `what` in the current line (its first occurrence), 1-based; the first
  // non-blank column when it does not occur literally.
  size_t column_of(std::string_view what) const {
    size_t at = what.empty() ? std::string::npos : raw.find(what);
    if (at == std::string::npos) at = raw.find_first_not_of(" \t");
    return (at == std::string::npos ? 0 : at) + 1;
  }

  [[noreturn]] void fail(const std::string& msg, std::string_view what = {}) {
    std::string quoted(what.substr(0, 80));
    if (quoted.empty()) quoted = trim(raw).substr(0, 80);
    throw Error("IR parse error at " + std::to_string(line_no) + ":" + std::to_string(column_of(what)) + ": " +
                msg + " (at '" + quoted + "')");
  }

  static std::string trim(std::string_view s) {
    size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    size_t e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
  }

  Type type(const std::string& s) {
    Type t;
    if (!parse_type(s, t)) fail("unknown type '" + s + "'", s);
    return t;
  }

  // The value of one attribute, read strictly for its kind (and its range, where it has one).
  void attribute(Inst& in, Attr a, const std::string& text) {
    switch (a) {
      case Attr::Value: constant(in, text); return;
      case Attr::Param:
      case Attr::CountParam: {
        int idx = k.find_param(text);
        if (idx < 0) fail("unknown parameter '" + text + "'", text);
        in.set(a, idx);
        return;
      }
      case Attr::Alias:
        if (!is_identifier_text(text)) fail("threadgroup alias base '" + text + "' is not an identifier", text);
        in.set(a, k.intern_string(text));
        return;
      case Attr::Offset: in.set(a, integer(text, 0, int64_t(UINT32_MAX), "threadgroup alias byte offset")); return;
      case Attr::Name:
      case Attr::Callee:
        if (!is_identifier_text(text))
          fail(std::string(a == Attr::Name ? "threadgroup allocation name '" : "function name '") + text +
                   "' is not an identifier",
               text);
        in.set(a, k.intern_string(text));
        return;
      case Attr::Axis: in.set(a, integer(text, 0, 2, "axis")); return;
      case Attr::Count:
        if (in.op == Op::AsyncWait) in.set(a, integer(text, 0, 7, "async_wait group count"));
        else if (in.op == Op::AsyncCopy) in.set(a, integer(text, 1, 16, "async_copy element count"));
        else if (in.op == Op::SetMaxNRegInc || in.op == Op::SetMaxNRegDec)
          in.set(a, integer(text, 24, 256, "setmaxnreg register count"));
        else if (in.op == Op::BulkCopy || in.op == Op::BulkStore)
          in.set(a, integer(text, 1, 1 << 20, in.op == Op::BulkCopy ? "bulk_copy element count" : "bulk_store element count"));
        else if (in.op == Op::BulkWait) in.set(a, integer(text, 0, 7, "bulk_wait group count"));
        else if (in.op == Op::WgWait) in.set(a, integer(text, 0, 7, "wg_wait group count"));
        else
          in.set(a, integer(text, 1, UINT32_MAX,
                            in.op == Op::LocalAlloc ? "register array element count" : "threadgroup element count"));
        return;
      case Attr::Align: in.set(a, integer(text, 1, int64_t(kMaxThreadgroupAlign), "threadgroup alignment")); return;
      case Attr::Vec: in.set(a, integer(text, 2, 8, "vector group width")); return;
      case Attr::Lane: in.set(a, integer(text, 1, 7, "vector group lane")); return;
      case Attr::Index: in.set(a, integer(text, 0, 2, "argument index")); return;
      case Attr::Row: in.set(a, integer(text, 0, 255, "tile row")); return;
      case Attr::Col: in.set(a, integer(text, 0, 255, "tile column")); return;
      case Attr::Swizzle: {
        const int64_t code = integer(text, 100, 999, "tile swizzle (100 * bits + 10 * base + shift)");
        if (!swizzle_code_valid(code))
          fail("tile swizzle " + text + " is not 100 * bits + 10 * base + shift with bits 1..3 and shift >= bits", text);
        in.set(a, code);
        return;
      }
      case Attr::ColMajor: in.set(a, integer(text, 0, 1, "tile col_major flag")); return;
      case Attr::Async: in.set(a, integer(text, 0, 1, "warpgroup product async flag")); return;
      case Attr::Count_: break;
    }
    fail("unknown attribute", text);
  }

  // `<v1, v2, key=v3>`: positional values fill the op's required attributes in schema order;
  // key=value names any attribute of its schema.
  void attributes(Inst& in, const std::string& mn, const std::vector<std::string>& list) {
    const AttrSchema& schema = attr_schema(in.op);
    uint8_t next = 0;  // the next schema slot a positional value may fill
    size_t required = 0;
    for (uint8_t s = 0; s < schema.count; ++s) required += schema.slots[s].required;
    for (const std::string& item : list) {
      size_t eq = item.find('=');
      Attr a;
      std::string text;
      if (eq != std::string::npos) {
        std::string key = trim(item.substr(0, eq));
        if (!attr_from_name(key, a)) fail("unknown attribute '" + key + "'", key);
        bool in_schema = false;
        for (uint8_t s = 0; s < schema.count; ++s) in_schema = in_schema || schema.slots[s].attr == a;
        if (!in_schema) fail("'" + mn + "' takes no attribute '" + key + "'", key);
        text = trim(item.substr(eq + 1));
      } else {
        while (next < schema.count && !schema.slots[next].required) ++next;
        if (next == schema.count)
          fail("'" + mn + "' takes " + std::to_string(required) + " attribute(s)", item.empty() ? mn : item);
        a = schema.slots[next++].attr;
        text = item;
      }
      if (in.has(a)) fail("attribute '" + std::string(attr_info(a).name) + "' given twice", item);
      attribute(in, a, text);
    }
    for (uint8_t s = 0; s < schema.count; ++s)
      if (schema.slots[s].required && !in.has(schema.slots[s].attr))
        fail("'" + mn + "' takes " + std::to_string(required) + " attribute(s)", mn);
  }

  DType dtype(const std::string& s) {
    DType d;
    if (!parse_dtype(s, d)) fail("unknown dtype '" + s + "'", s);
    return d;
  }

  Id value(const std::string& tok) {
    auto it = values.find(tok);
    if (it == values.end()) fail("use of undefined value " + (tok.empty() ? std::string("(empty operand)") : tok), tok);
    return it->second;
  }

  // A whole decimal integer in [lo, hi]; `what` names it in the message.
  int64_t integer(const std::string& text, int64_t lo, int64_t hi, const std::string& what) {
    int64_t v = 0;
    if (!num::parse_int64(text, v)) {
      bool digits = !text.empty() && text.find_first_not_of("-0123456789") == std::string::npos;
      fail(digits ? what + " " + text + " overflows 64 bits" : what + " '" + text + "' is not an integer", text);
    }
    if (v < lo || v > hi)
      fail(what + " " + text + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", text);
    return v;
  }

  void header(const std::string& line) {
    // kernel NAME mode=M [dtypes=a,b] [wtypes=c,d] {
    std::istringstream is(line);
    std::string kw, tok;
    is >> kw >> k.name;
    if ((kw != "kernel" && kw != "function") || k.name.empty())
      fail("expected 'kernel NAME ...' or 'function NAME ...'", kw);
    if (!is_identifier_text(k.name)) fail("kernel name '" + k.name + "' is not an identifier", k.name);
    k.is_function = kw == "function";
    bool open = false;
    while (is >> tok) {
      if (open) fail("unexpected '" + tok + "' after '{' in the kernel header", tok);
      if (tok == "{") {
        open = true;
      } else if (tok.rfind("mode=", 0) == 0) {
        std::string m = tok.substr(5);
        if (!parse_mode(m, k.mode))
          fail("unknown mode '" + m + "' (Elementwise, Reduction, Grid3D, Tile2D or SimdGroup2D)", tok);
      } else if (tok.rfind("dtypes=", 0) == 0 || tok.rfind("wtypes=", 0) == 0) {
        const bool w = tok[0] == 'w';
        std::vector<DType>& out = w ? k.wtypes : k.dtypes;
        if (!out.empty()) fail(std::string("duplicate ") + (w ? "wtypes=" : "dtypes=") + " in the kernel header", tok);
        std::string list = tok.substr(7);
        size_t pos = 0;
        while (true) {
          size_t c = list.find(',', pos);
          std::string d = list.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
          if (d.empty()) fail(std::string("empty entry in ") + (w ? "wtypes=" : "dtypes="), tok);
          out.push_back(dtype(d));
          if (c == std::string::npos) break;
          pos = c + 1;
        }
      } else {
        fail("unexpected '" + tok + "' in kernel header", tok);
      }
    }
    if (!open) fail("kernel header must end with '{'");
    stack.push_back({kNone, 0});
  }

  void param(const std::string& line) {
    // param NAME: in buf<T> extent=4*n [aligned=16] [aliases=a,b]
    // param NAME: scalar<u32> [specialize] [multiple_of=8]
    if (stack.size() != 1) fail("'param' inside an if or for block (parameters belong to the kernel)", "param");
    if (!k.blocks[0].insts.empty()) fail("'param' after the first instruction (declare parameters first)", "param");
    size_t colon = line.find(':');
    if (colon == std::string::npos) fail("expected 'param NAME: ...'");
    Param p;
    p.name = trim(line.substr(6, colon - 6));
    if (!is_identifier_text(p.name)) fail("parameter name '" + p.name + "' is not an identifier", p.name);
    std::istringstream is(line.substr(colon + 1));
    std::string a;
    is >> a;
    std::vector<std::string> rest;
    for (std::string t; is >> t;) rest.push_back(t);
    auto inner = [&](const std::string& s, const std::string& pre) {
      if (s.rfind(pre + "<", 0) != 0 || s.back() != '>') fail("expected " + pre + "<dtype>", s);
      return s.substr(pre.size() + 1, s.size() - pre.size() - 2);
    };
    // Each optional fact at most once.
    auto once = [&](bool& seen, const std::string& t) {
      if (seen) fail("'" + t.substr(0, t.find('=')) + "' given twice", t);
      seen = true;
    };
    if (a == "tensormap" || a.rfind("blob<", 0) == 0) {
      // A by-value structure: blob<bytes,align>, or a TMA tensor map (128 bytes, 64-aligned).
      p.kind = ParamKind::Blob;
      p.dtype = DType::U32;
      p.access = Access::Read;
      if (a == "tensormap") {
        p.tensor_map = true;
        p.blob_bytes = kTensorMapBytes;
        p.align = kTensorMapAlign;
      } else {
        const std::string in = inner(a, "blob");
        const size_t comma = in.find(',');
        if (comma == std::string::npos) fail("expected blob<bytes,align>", a);
        p.blob_bytes = uint32_t(integer(in.substr(0, comma), 1, kMaxBlobBytes, "blob size"));
        p.align = uint32_t(integer(in.substr(comma + 1), 1, 4096, "blob alignment"));
      }
      if (!rest.empty()) fail("unexpected '" + rest[0] + "' after a blob parameter", rest[0]);
    } else if (a.rfind("scalar<", 0) == 0) {
      p.kind = ParamKind::Scalar;
      p.dtype = dtype(inner(a, "scalar"));
      bool spec = false, mult = false;
      for (const std::string& t : rest) {
        if (t == "specialize") {
          once(spec, t);
          p.specialize = true;
        } else if (t.rfind("multiple_of=", 0) == 0) {
          once(mult, t);
          p.multiple_of = uint64_t(integer(t.substr(12), 1, INT64_MAX, "multiple_of"));
        } else {
          fail("unexpected '" + t + "' after a scalar parameter (expected specialize or multiple_of=K)", t);
        }
      }
    } else {
      p.kind = ParamKind::Buffer;
      if (a == "in") p.access = Access::Read;
      else if (a == "out") p.access = Access::Write;
      else if (a == "inout") p.access = Access::ReadWrite;
      else fail("expected in|out|inout, got '" + a + "'", a);
      if (rest.empty()) fail("expected buf<dtype> after '" + a + "'", a);
      p.dtype = dtype(inner(rest[0], "buf"));
      if (rest.size() < 2 || rest[1].rfind("extent=", 0) != 0) fail("buffer parameter needs extent=", rest.size() < 2 ? a : rest[1]);
      const std::string c = rest[1];
      bool al = false, ali = false, str = false;
      for (size_t r = 2; r < rest.size(); ++r) {
        const std::string& extra = rest[r];
        if (extra.rfind("aligned=", 0) == 0) {
          once(al, extra);
          p.align = uint32_t(integer(extra.substr(8), 1, UINT32_MAX, "aligned"));
          continue;
        }
        if (extra.rfind("strided=", 0) == 0) {
          once(str, extra);
          const std::string t = extra.substr(8);
          const int idx = k.find_param(t);
          if (idx < 0 || k.params[size_t(idx)].kind != ParamKind::Scalar || !is_integer(k.params[size_t(idx)].dtype))
            fail("strided= names '" + t + "', which is not an earlier integer scalar parameter", t.empty() ? extra : t);
          p.stride_param = uint32_t(idx);
          continue;
        }
        if (extra.rfind("aliases=", 0) != 0) fail("unexpected '" + extra + "' after the extent", extra);
        once(ali, extra);
        std::string list = extra.substr(8);
        size_t pos = 0;
        while (true) {
          size_t c = list.find(',', pos);
          std::string t = list.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
          int idx = k.find_param(t);
          if (idx < 0 || k.params[size_t(idx)].kind != ParamKind::Buffer)
            fail("aliases= names '" + t + "', which is not an earlier buffer parameter", t.empty() ? extra : t);
          p.aliases.push_back(uint32_t(idx));
          if (c == std::string::npos) break;
          pos = c + 1;
        }
      }
      std::string ext = c.substr(7);
      size_t pos = 0;
      while (true) {
        size_t star = ext.find('*', pos);
        std::string t = ext.substr(pos, star == std::string::npos ? std::string::npos : star - pos);
        if (t.empty()) fail("empty extent term", c);
        if (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-') {
          int64_t f = integer(t, 1, INT64_MAX, "extent factor");
          if (!num::checked_mul(p.extent_factor, uint64_t(f), p.extent_factor))
            fail("extent factor product overflows 64 bits", c);
        } else {
          int idx = k.find_param(t);
          if (idx < 0) fail("extent names unknown scalar '" + t + "' (declare it before the buffer)", t);
          if (k.params[size_t(idx)].kind != ParamKind::Scalar || !is_integer(k.params[size_t(idx)].dtype))
            fail("extent names '" + t + "', which is not an integer scalar parameter", t);
          p.extent_scalars.push_back(uint32_t(idx));
        }
        if (star == std::string::npos) break;
        pos = star + 1;
      }
    }
    if (k.find_param(p.name) >= 0) fail("duplicate parameter '" + p.name + "'", p.name);
    k.params.push_back(std::move(p));
  }

  // The literal of a `const<...>`, read strictly for its dtype.
  void constant(Inst& in, const std::string& text) {
    if (in.flags & kUntyped) {
      double f = 0;
      int64_t i = 0;
      if (num::parse_int64(text, i)) in.set(Attr::Value, i);
      else if (num::parse_double(text, f)) in.set_float(Attr::Value, f);
      else fail("constant '" + text + "' is not a number", text);
      return;
    }
    if (!in.type.is_scalar()) fail("a constant must have a scalar dtype, not " + type_name(in.type));
    const DType ct = in.type.elem();
    if (ct == DType::U64) {
      uint64_t u = 0;
      if (!num::parse_uint64(text, u)) fail("u64 constant '" + text + "' is not an integer in [0, 2^64-1]", text);
      in.set(Attr::Value, int64_t(u));  // the bit pattern
      return;
    }
    if (is_integer(ct)) {
      const std::string what = std::string(dtype_name(ct)) + " constant";
      in.set(Attr::Value, integer(text, num::int_min(ct), int64_t(num::int_max(ct)), what));
      return;
    }
    if (ct == DType::Bool) {
      in.set(Attr::Value, integer(text, 0, 1, "bool constant"));
      return;
    }
    double f = 0;
    if (!num::parse_double(text, f)) fail("float constant '" + text + "' is not a number (or overflows)", text);
    // Every float dtype is computed in f32 registers: a finite literal beyond the f32 range
    // would silently become infinity.
    if (std::isfinite(f) && std::fabs(f) > double(std::numeric_limits<float>::max()))
      fail("float constant " + text + " overflows f32", text);
    in.set_float(Attr::Value, f);
    // A T constant may become an integer: an integral literal keeps that reading too.
    if (in.type == DType::Generic && std::trunc(f) == f && std::fabs(f) < 0x1p63) in.set(Attr::Value, int64_t(f));
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
      at = line.rfind(" @\"");
    }
    if (at != std::string::npos) {
      size_t q = line.find("\":", at + 3);
      if (q == std::string::npos) fail("malformed location (expected @\"file\":line)", line.substr(at + 1));
      in.loc.file = k.intern_file(line.substr(at + 3, q - at - 3));
      in.loc.line = uint32_t(integer(trim(line.substr(q + 2)), 0, UINT32_MAX, "location line"));
      line = trim(line.substr(0, at));
    }
    if (line.empty()) fail("expected an instruction");
    // Result
    if (line[0] == '%') {
      size_t eq = line.find(" = ");
      if (eq == std::string::npos) fail("expected '%N = ...'", line);
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
    if (!op_from_mnemonic(mn, in.op)) fail("unknown op '" + mn + "'", mn);
    std::string rest = end == std::string::npos ? "" : line.substr(end);
    std::vector<std::string> attrs;
    if (!rest.empty() && rest[0] == '<') {
      size_t close = rest.find('>');
      if (close == std::string::npos) fail("unterminated '<'", rest);
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
        in.operands.push_back(value(t));
        if (c == std::string::npos) break;
        pos = c + 1;
      }
    }
    if (type_text.size() >= 6 && type_text.compare(type_text.size() - 6, 6, " fused") == 0) {
      in.flags |= kFused;
      type_text = trim(type_text.substr(0, type_text.size() - 6));
    }
    if (type_text == "?") in.flags |= kUntyped;
    else if (!type_text.empty()) in.type = type(type_text);
    if (result.empty() != (in.type.is_void() && !(in.flags & kUntyped)))
      fail("a value-defining op needs '%N = ... : dtype' (or ': ?' for type_check to infer)", mn);

    attributes(in, mn, attrs);

    bool control = in.op == Op::If || in.op == Op::For;
    if (control != opens) fail(control ? "expected '{' after if/for" : "unexpected '{'", control ? mn : "{");
    if (control && stack.size() > kMaxNesting)
      fail("if/for nested deeper than " + std::to_string(kMaxNesting) + " levels (the IR's nesting limit)", mn);
    Id id = k.add_inst(in);
    k.blocks[stack.back().block].insts.push_back(id);
    if (!result.empty()) {
      if (values.count(result)) fail("value " + result + " defined twice", result);
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
    bool done = false;
    while (std::getline(is, raw)) {
      ++line_no;
      std::string line = trim(raw);
      if (line.empty() || line[0] == ';') continue;  // blank or comment line
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
          fail("'else' without a matching 'if'", "else");
        stack.pop_back();
        Id b = k.add_block(top.inst);
        k.insts[top.inst].blocks[1] = b;
        stack.push_back({top.inst, b});
      } else {
        inst(line);
      }
    }
    raw.clear();
    if (!done) fail(stack.empty() ? "no kernel in the text" : "unexpected end of text (missing '}')");
    return std::move(k);
  }
};

}  // namespace

Kernel parse(std::string_view text) { return Parser{}.run(text); }

}  // namespace iron::ir
