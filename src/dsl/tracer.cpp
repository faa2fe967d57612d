// The tracer behind iron/dsl.hpp: every DSL call appends IR to the kernel being traced, through
// the trace's ir::Builder (positioned at the DSL call's source line).
// One trace is active per thread. Type errors are not thrown here: the verifier reports them
// later with the instruction's DSL location, so one trace shows every problem at once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "dsl/trace.hpp"
#include "iron/dsl.hpp"
#include "iron/registry.hpp"

namespace iron::dsl {

using ir::Id;
using ir::Inst;
using ir::Op;

namespace {

thread_local detail::Trace* g_trace = nullptr;

detail::Trace& tr() {
  if (!g_trace) throw Error("an Iron DSL operation was called outside a kernel trace");
  return *g_trace;
}

// Paths under the source tree are shown relative to it, so messages and dumps do not depend
// on where the checkout lives.
std::string relative(const char* file) {
#ifdef IRON_SOURCE_ROOT
  static const std::string root = std::string(IRON_SOURCE_ROOT) + "/";
  if (std::strncmp(file, root.c_str(), root.size()) == 0) return file + root.size();
#endif
  return file;
}

ir::SrcLoc loc_of(const char* file, uint32_t line) { return {tr().k.intern_file(relative(file)), line}; }
ir::SrcLoc loc_of(const SrcLoc& l) { return loc_of(l.file_name(), l.line()); }
ir::SrcLoc loc_of(const Operand& o) { return loc_of(o.file, o.line); }

// The trace's builder, with its location set to `l`: every DSL operation builds through it.
ir::Builder& at(ir::SrcLoc l) {
  ir::Builder& b = tr().b;
  b.set_loc(l);
  return b;
}
Expr value(Id id) { return Expr(id, tr().k.insts[id].type.elem()); }

Expr constant(DType type, int64_t i, double f, ir::SrcLoc loc) { return value(at(loc).constant(type, i, f)); }
// An instruction record filled in by hand (for ops without a typed builder constructor); it
// still goes through the builder, which places it and gives it the current location if it
// has none.
[[maybe_unused]] Expr emit(Inst in) { return value(tr().b.emit(std::move(in))); }

void error(ir::SrcLoc loc, std::string msg) { tr().diags.error(loc, std::move(msg)); }

// An operator= cannot take a source location: the instructions it emits are relocated to the
// line of the value being stored (for a literal, the line of the instruction before it).
size_t mark() { return tr().k.insts.size(); }
void relocate_since(size_t first, ir::SrcLoc l) {
  auto& insts = tr().k.insts;
  for (size_t i = first; i < insts.size(); ++i) insts[i].loc = l;
}
ir::SrcLoc loc_of_value(Expr v) {
  auto& insts = tr().k.insts;
  return v.id() < insts.size() ? insts[v.id()].loc : ir::SrcLoc{};
}
ir::SrcLoc previous_loc(size_t first) {
  auto& insts = tr().k.insts;
  return first > 0 ? insts[first - 1].loc : ir::SrcLoc{};
}

// Gives a literal the dtype of the value it meets. Float literals never turn into integers
// silently; integer literals become floats exactly.
Expr materialize(const Operand& o, DType hint) {
  switch (o.kind) {
    case Operand::Kind::Value:
      if (o.value.id() == UINT32_MAX) {
        error(loc_of(o), "use of an unset Expr");
        return constant(hint == DType::Void ? DType::U32 : hint, 0, 0, loc_of(o));
      }
      return o.value;
    case Operand::Kind::IntLit: {
      DType t = hint == DType::Void ? DType::I32 : hint;
      if (t == DType::Bool) {
        if (o.i != 0 && o.i != 1) error(loc_of(o), "integer literal used as a bool");
        return constant(t, o.i != 0, 0, loc_of(o));
      }
      // A literal takes the integer dtype it meets and must fit it (a u64 literal above 2^63-1
      // arrives as its bit pattern, which is the value).
      if (is_integer(t) && t != DType::U64 &&
          (o.i < num::int_min(t) || (o.i > 0 && uint64_t(o.i) > num::int_max(t))))
        error(loc_of(o), "literal " + std::to_string(o.i) + " does not fit " + dtype_name(t));
      return constant(t, o.i, double(o.i), loc_of(o));
    }
    case Operand::Kind::FloatLit: {
      DType t = hint == DType::Void ? DType::F32 : hint;
      if (!is_float(t)) {
        error(loc_of(o), std::string("float literal used with a ") + dtype_name(t) +
                             " value (no silent int/float mixing: cast explicitly)");
        return constant(t, 0, 0, loc_of(o));
      }
      return constant(t, 0, o.f, loc_of(o));
    }
  }
  return {};
}

DType value_type(const Operand& a, const Operand& b) {
  if (a.kind == Operand::Kind::Value) return a.value.dtype();
  if (b.kind == Operand::Kind::Value) return b.value.dtype();
  return DType::Void;
}


Expr binary(Op op, const Operand& a, const Operand& b) {
  DType hint = value_type(a, b);
  if (op == Op::Shl || op == Op::Shr) hint = a.kind == Operand::Kind::Value ? a.value.dtype() : DType::Void;
  Expr x = materialize(a, hint);
  Expr y = materialize(b, (op == Op::Shl || op == Op::Shr) && b.kind == Operand::Kind::IntLit
                              ? (is_integer(x.dtype()) ? x.dtype() : DType::U32)
                              : (hint == DType::Void ? x.dtype() : hint));
  return value(at(loc_of(a.kind == Operand::Kind::Value ? a : b)).binary(op, x.id(), y.id()));
}

Expr unary(Op op, const Operand& a) {
  Expr x = materialize(a, DType::Void);
  return value(at(loc_of(a)).unary(op, x.id()));
}

Expr builtin(Op op, int axis, const SrcLoc& l) {
  ir::SrcLoc where = loc_of(l);
  if (axis < 0 || axis > 2) error(where, std::string(ir::mnemonic(op)) + " axis must be 0, 1 or 2");
  return value(at(where).builtin(op, axis));
}

// Traces `body` into block `which` of control instruction `owner`.
template <class Fn>
void in_block(Id owner, int which, Fn&& body) {
  detail::Trace& t = tr();
  // The builder's depth counts the blocks open above the entry block, one per enclosing if_ or
  // for_ body. Past the IR's nesting limit the body is not traced (the kernel is rejected
  // anyway), so a runaway recursive body stops here instead of exhausting the stack of every
  // later stage.
  if (t.b.depth() + 1 > ir::kMaxNesting) {
    if (!t.too_deep)
      error(t.k.insts[owner].loc, "if_/for_ nested deeper than " + std::to_string(ir::kMaxNesting) +
                                      " levels (the IR's nesting limit)");
    t.too_deep = true;
    t.k.insts[owner].blocks[which] = t.k.add_block(owner);
    return;
  }
  t.b.open_block(owner, which);
  body();
  t.b.end();
}

}  // namespace

namespace detail {
Trace* set_trace(Trace* t) {
  Trace* prev = g_trace;
  g_trace = t;
  return prev;
}
}  // namespace detail

// --- Operand -------------------------------------------------------------------------------

Operand::Operand(Expr e, SrcLoc loc) : kind(Kind::Value), value(e), file(loc.file_name()), line(loc.line()) {}
Operand::Operand(int64_t v, bool, SrcLoc loc) : kind(Kind::IntLit), i(v), file(loc.file_name()), line(loc.line()) {}
Operand::Operand(double v, bool, SrcLoc loc) : kind(Kind::FloatLit), f(v), file(loc.file_name()), line(loc.line()) {}

Operand::Operand(const VarBase& v, SrcLoc loc) : kind(Kind::Value), file(loc.file_name()), line(loc.line()) {
  value = dsl::value(at(loc_of(loc)).var_load(v.id()));
}

Operand::Operand(const ElemRef& r, SrcLoc loc) : kind(Kind::Value), file(loc.file_name()), line(loc.line()) {
  value = dsl::value(at(loc_of(loc)).load(r.param(), r.dtype(), r.index().id()));
}

Operand::Operand(const TgRef& r, SrcLoc loc) : kind(Kind::Value), file(loc.file_name()), line(loc.line()) {
  Inst in;
  in.op = tr().k.insts[r.alloc()].op == Op::LocalAlloc ? Op::LocalLoad : Op::TgLoad;
  in.type = r.dtype();
  in.operands = ir::Operands{r.alloc(), r.index().id()};
  value = dsl::value(at(loc_of(loc)).emit(std::move(in)));
}

// --- Operators -----------------------------------------------------------------------------

Expr operator+(Operand a, Operand b) { return binary(Op::Add, a, b); }
Expr operator-(Operand a, Operand b) { return binary(Op::Sub, a, b); }
Expr operator*(Operand a, Operand b) { return binary(Op::Mul, a, b); }
Expr operator/(Operand a, Operand b) { return binary(Op::Div, a, b); }
Expr operator%(Operand a, Operand b) { return binary(Op::Rem, a, b); }
Expr operator&(Operand a, Operand b) { return binary(Op::And, a, b); }
Expr operator|(Operand a, Operand b) { return binary(Op::Or, a, b); }
Expr operator^(Operand a, Operand b) { return binary(Op::Xor, a, b); }
Expr operator<<(Operand a, Operand b) { return binary(Op::Shl, a, b); }
Expr operator>>(Operand a, Operand b) { return binary(Op::Shr, a, b); }
Expr operator&&(Operand a, Operand b) { return binary(Op::And, a, b); }
Expr operator||(Operand a, Operand b) { return binary(Op::Or, a, b); }
Expr operator<(Operand a, Operand b) { return binary(Op::Lt, a, b); }
Expr operator<=(Operand a, Operand b) { return binary(Op::Le, a, b); }
Expr operator>(Operand a, Operand b) { return binary(Op::Gt, a, b); }
Expr operator>=(Operand a, Operand b) { return binary(Op::Ge, a, b); }
Expr operator==(Operand a, Operand b) { return binary(Op::Eq, a, b); }
Expr operator!=(Operand a, Operand b) { return binary(Op::Ne, a, b); }
Expr operator-(Operand a) { return unary(Op::Neg, a); }
Expr operator!(Operand a) { return unary(Op::Not, a); }
Expr operator~(Operand a) { return unary(Op::Not, a); }

// Located at the definition of the left operand (these overloads cannot capture the caller).
static Operand located_at_definition(Expr v) {
  Operand o(v, SrcLoc::current());
  detail::Trace& t = tr();
  if (v.id() < t.k.insts.size()) {
    // The file pointer must outlive this call only: loc_of() interns it immediately.
    static thread_local std::string file;
    ir::SrcLoc l = t.k.insts[v.id()].loc;
    file = l.file < t.k.files.size() ? t.k.files[l.file] : "";
    o.file = file.c_str();
    o.line = l.line;
  }
  return o;
}
Expr operator&&(Expr a, Expr b) { return binary(Op::And, located_at_definition(a), Operand(b, SrcLoc::current())); }
Expr operator||(Expr a, Expr b) { return binary(Op::Or, located_at_definition(a), Operand(b, SrcLoc::current())); }
Expr operator!(Expr a) { return unary(Op::Not, located_at_definition(a)); }

Expr exp(Operand x) { return unary(Op::Exp, x); }
Expr log(Operand x) { return unary(Op::Log, x); }
Expr sqrt(Operand x) { return unary(Op::Sqrt, x); }
Expr rsqrt(Operand x) { return unary(Op::Rsqrt, x); }
Expr tanh(Operand x) { return unary(Op::Tanh, x); }
Expr abs(Operand x) { return unary(Op::Abs, x); }
Expr min(Operand a, Operand b) { return binary(Op::Min, a, b); }
Expr max(Operand a, Operand b) { return binary(Op::Max, a, b); }

namespace {
ir::SrcLoc loc_of_id(uint32_t id) {
  auto& insts = tr().k.insts;
  return id < insts.size() ? insts[id].loc : ir::SrcLoc{};
}
Pair pair_value(Id id) { return Pair(id, tr().k.insts[id].type.elem()); }
Pair pair_op(Op op, std::initializer_list<Pair> in) {
  const Pair& a = *in.begin();
  std::vector<Id> ids;
  for (const Pair& p : in) {
    if (p.id() == UINT32_MAX) error(loc_of_id(a.id()), "use of an unset Pair");
    ids.push_back(p.id());
  }
  ir::Inst i;
  i.op = op;
  i.type = Type::vector(a.elem(), 2);
  i.loc = loc_of_id(a.id());
  i.operands.resize(int(ids.size()));
  for (size_t k = 0; k < ids.size(); ++k) i.operands[int(k)] = ids[k];
  return pair_value(tr().b.emit(std::move(i)));
}
}  // namespace

Pair pair(Operand lo, Operand hi) {
  const DType hint = value_type(lo, hi);
  if (hint == DType::Void) error(loc_of(lo), "a pair of two literals has no dtype: make one operand a value");
  Expr x = materialize(lo, hint), y = materialize(hi, hint);
  ir::Inst i;
  i.op = Op::Pair;
  i.type = Type::vector(x.dtype(), 2);
  i.loc = loc_of(lo);
  i.operands.resize(2);
  i.operands[0] = x.id();
  i.operands[1] = y.id();
  return pair_value(tr().b.emit(std::move(i)));
}
Expr get(Pair p, uint32_t index, SrcLoc loc) {
  ir::Inst i;
  i.op = Op::PairGet;
  i.type = p.elem();
  i.loc = loc_of(loc);
  i.operands.resize(1);
  i.operands[0] = p.id();
  i.set(ir::Attr::Index, int64_t(index));
  return value(tr().b.emit(std::move(i)));
}
Pair operator+(Pair a, Pair b) { return pair_op(Op::Add, {a, b}); }
Pair operator-(Pair a, Pair b) { return pair_op(Op::Sub, {a, b}); }
Pair operator*(Pair a, Pair b) { return pair_op(Op::Mul, {a, b}); }
Pair operator-(Pair a) { return pair_op(Op::Neg, {a}); }
Pair fma(Pair a, Pair b, Pair c) { return pair_op(Op::Fma, {a, b, c}); }
Pair min(Pair a, Pair b) { return pair_op(Op::Min, {a, b}); }
Pair max(Pair a, Pair b) { return pair_op(Op::Max, {a, b}); }
Pair abs(Pair a) { return pair_op(Op::Abs, {a}); }

Expr fma(Operand a, Operand b, Operand c) {
  DType hint = value_type(a, b);
  if (hint == DType::Void && c.kind == Operand::Kind::Value) hint = c.value.dtype();
  Expr x = materialize(a, hint), y = materialize(b, hint), z = materialize(c, hint);
  return value(at(loc_of(a)).ternary(Op::Fma, x.id(), y.id(), z.id()));
}

Expr select(Operand cond, Operand t, Operand f) {
  Expr c = materialize(cond, DType::Bool);
  DType hint = value_type(t, f);
  Expr x = materialize(t, hint), y = materialize(f, hint == DType::Void ? x.dtype() : hint);
  return value(at(loc_of(cond)).ternary(Op::Select, c.id(), x.id(), y.id()));
}

Expr cast_to(Operand x, DType to) {
  Expr v = materialize(x, x.kind == Operand::Kind::Value ? DType::Void : to);
  if (v.dtype() == to) return v;
  return value(at(loc_of(x)).cast(v.id(), to));
}

Expr floor(Operand x) { return unary(Op::Floor, x); }
Expr ceil(Operand x) { return unary(Op::Ceil, x); }
Expr rint(Operand x) { return unary(Op::Rint, x); }
Expr trunc(Operand x) { return unary(Op::Trunc, x); }
Expr sin(Operand x) { return unary(Op::Sin, x); }
Expr cos(Operand x) { return unary(Op::Cos, x); }
Expr exp2(Operand x) { return unary(Op::Exp2, x); }
Expr log2(Operand x) { return unary(Op::Log2, x); }
Expr erf(Operand x) { return unary(Op::Erf, x); }
Expr pow(Operand x, Operand y) { return binary(Op::Pow, x, y); }
Expr mulhi(Operand a, Operand b) { return binary(Op::MulHi, a, b); }
Expr popcount(Operand x) { return unary(Op::Popcount, x); }
Expr clz(Operand x) { return unary(Op::Clz, x); }

// A literal keeps its own dtype (i32 for an integer, f32 for a float); the verifier checks the
// pair.
Expr bitcast_to(Operand x, DType to) {
  Expr v = materialize(x, DType::Void);
  if (v.dtype() == to) return v;
  return value(at(loc_of(x)).emit(Op::Bitcast, to, {v.id()}));
}

// --- Built-ins -----------------------------------------------------------------------------

Expr thread_id(int axis, SrcLoc l) { return builtin(Op::ThreadId, axis, l); }
Expr thread_id64(int axis, SrcLoc l) {
  ir::SrcLoc where = loc_of(l);
  if (axis < 0 || axis > 2) error(where, "thread_id64 axis must be 0, 1 or 2");
  return value(at(where).builtin(Op::ThreadId, axis, DType::U64));
}
Expr program_id(int axis, SrcLoc l) { return builtin(Op::ProgramId, axis, l); }
Expr local_id(int axis, SrcLoc l) { return builtin(Op::LocalId, axis, l); }
Expr group_size(int axis, SrcLoc l) { return builtin(Op::GroupSize, axis, l); }
Expr num_programs(int axis, SrcLoc l) { return builtin(Op::NumPrograms, axis, l); }
Expr lane_id(SrcLoc l) { return builtin(Op::LaneId, 0, l); }
Expr lane_width(SrcLoc l) { return builtin(Op::LaneWidth, 0, l); }
Expr simd_group_id(SrcLoc l) { return builtin(Op::SimdGroupId, 0, l); }
Expr num_simd_groups(SrcLoc l) { return builtin(Op::NumSimdGroups, 0, l); }

void barrier(SrcLoc l) { at(loc_of(l)).barrier(); }

Expr lane_sum(Operand x) { return unary(Op::LaneSum, x); }
Expr lane_max(Operand x) { return unary(Op::LaneMax, x); }

// A threadgroup-wide reduction from lane reductions: each lane group reduces its values, lane 0
// of each group publishes the partial to a scratch slot, and after a barrier every lane group
// reduces the partials itself, so every thread holds the result with no broadcast step. Each
// call site gets its own scratch array, and a closing barrier keeps a repeated execution of the
// same call (in a loop) from overwriting a slot a slower lane group is still reading.
static Expr group_reduce(const Operand& x, bool is_max) {
  Expr v = materialize(x, DType::F32);
  detail::Trace& t = tr();
  ir::Builder& b = at(loc_of(x));
  const Op lane_op = is_max ? Op::LaneMax : Op::LaneSum;
  std::string name = std::string(is_max ? "iron_group_max_" : "iron_group_sum_") + std::to_string(t.unique++);
  // Largest lane-group count: 1024 threads / lane width 4 (lavapipe with 128-bit vectors).
  constexpr uint32_t kMaxGroups = 256;

  Id partial = b.unary(lane_op, v.id());
  Id scratch = b.tg_alloc(name, v.dtype(), kMaxGroups);
  Id lane = b.builtin(Op::LaneId);
  Id group = b.builtin(Op::SimdGroupId);
  Id groups = b.builtin(Op::NumSimdGroups);
  Id width = b.builtin(Op::LaneWidth);
  Id first = b.binary(Op::Eq, lane, b.constant_int(DType::U32, 0));
  b.begin_if(first);
  b.tg_store(scratch, group, partial);
  b.end();
  b.barrier();

  double identity_f = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
  int64_t identity_i = is_max && v.dtype() == DType::I32 ? INT32_MIN : 0;
  Id acc = b.var(v.dtype(), b.constant(v.dtype(), identity_i, identity_f));
  Id slot = b.begin_for(lane, groups, width);
  Id loaded = b.tg_load(scratch, slot);
  Id sum = b.binary(is_max ? Op::Max : Op::Add, b.var_load(acc), loaded);
  b.var_store(acc, sum);
  b.end();
  Id result = b.unary(lane_op, b.var_load(acc));
  // Every lane group has read the scratch into registers before anyone may write it again: the
  // same call site runs again when it sits in a loop (seeds §8, "repeated reduction").
  b.barrier();
  return value(result);
}

Expr group_sum(Operand x) { return group_reduce(x, false); }
Expr group_max(Operand x) { return group_reduce(x, true); }

// --- Control flow --------------------------------------------------------------------------

IfChain if_(Operand cond, FnRef<void()> then_body) {
  Expr c = materialize(cond, DType::Bool);
  Id id = at(loc_of(cond)).emit(Op::If, Type(), {c.id()});
  in_block(id, 0, [&] { then_body(); });
  return IfChain(id);
}

void IfChain::else_(FnRef<void()> body) {
  detail::Trace& t = tr();
  if (t.k.insts[inst_].blocks[1] != ir::kNone) {
    error(t.k.insts[inst_].loc, "else_ given twice for one if_");
    return;
  }
  in_block(inst_, 1, [&] { body(); });
}

void for_(Operand begin, Operand end, Operand step, FnRef<void(Expr)> body) {
  DType hint = end.kind == Operand::Kind::Value ? end.value.dtype() : value_type(begin, step);
  if (hint == DType::Void) hint = DType::U32;
  Expr b = materialize(begin, hint), e = materialize(end, hint), s = materialize(step, hint);
  Id id = at(loc_of(begin)).emit(Op::For, e.dtype(), {b.id(), e.id(), s.id()});
  Expr induction = value(id);
  in_block(id, 0, [&] { body(induction); });
}

void for_(Operand begin, Operand end, FnRef<void(Expr)> body) {
  Operand one(1, SrcLoc::current());
  one.file = begin.file;
  one.line = begin.line;
  for_(begin, end, one, body);
}

// --- Variables -----------------------------------------------------------------------------

VarBase::VarBase(DType type, Operand init) : type_(type) {
  Expr v = materialize(init, type);
  id_ = at(loc_of(init)).var(type, v.id());
}

static void var_store(uint32_t var, DType type, const Operand& v) {
  Expr x = materialize(v, type);
  at(loc_of(v)).var_store(var, x.id());
}

VarBase& VarBase::operator=(const VarBase& other) {
  size_t first = mark();
  var_store(id_, type_, Operand(other));
  relocate_since(first, previous_loc(first));
  return *this;
}
void VarBase::operator=(Operand v) { var_store(id_, type_, v); }

static Operand at_ref(const ElemRef& r) {
  Operand o(r, SrcLoc::current());
  tr().k.insts[o.value.id()].loc = loc_of(r.file(), r.line());
  o.file = r.file();
  o.line = r.line();
  return o;
}
static Operand at_ref(const TgRef& r) {
  Operand o(r, SrcLoc::current());
  tr().k.insts[o.value.id()].loc = loc_of(r.file(), r.line());
  o.file = r.file();
  o.line = r.line();
  return o;
}
void VarBase::operator=(Expr v) {
  size_t first = mark();
  var_store(id_, type_, Operand(v));
  relocate_since(first, loc_of_value(v));
}
void VarBase::operator=(const ElemRef& v) { var_store(id_, type_, at_ref(v)); }
void VarBase::operator=(float v) {
  size_t first = mark();
  var_store(id_, type_, Operand(v));
  relocate_since(first, previous_loc(first));
}
void VarBase::operator=(double v) {
  size_t first = mark();
  var_store(id_, type_, Operand(v));
  relocate_since(first, previous_loc(first));
}
void VarBase::operator=(int v) {
  size_t first = mark();
  var_store(id_, type_, Operand(v));
  relocate_since(first, previous_loc(first));
}
void VarBase::operator=(unsigned v) {
  size_t first = mark();
  var_store(id_, type_, Operand(v));
  relocate_since(first, previous_loc(first));
}
// `v op= x` reads v at the caller's line, which the right-hand operand carries.
static Operand read_at(const VarBase& var, const Operand& at) {
  Operand o(var, SrcLoc::current());
  detail::Trace& t = tr();
  t.k.insts[o.value.id()].loc = loc_of(at);
  o.file = at.file;
  o.line = at.line;
  return o;
}
static Operand located_like(Expr e, const Operand& at) {
  Operand o(e, SrcLoc::current());
  o.file = at.file;
  o.line = at.line;
  return o;
}
void VarBase::operator+=(Operand v) { var_store(id_, type_, located_like(read_at(*this, v) + v, v)); }
void VarBase::operator-=(Operand v) { var_store(id_, type_, located_like(read_at(*this, v) - v, v)); }
void VarBase::operator*=(Operand v) { var_store(id_, type_, located_like(read_at(*this, v) * v, v)); }
void VarBase::operator/=(Operand v) { var_store(id_, type_, located_like(read_at(*this, v) / v, v)); }

// --- Memory --------------------------------------------------------------------------------

static void store(uint32_t param, DType type, Expr index, const Operand& v) {
  Expr x = materialize(v, type);
  at(loc_of(v)).store(param, index.id(), x.id());
}

ElemRef Buffer::operator[](Operand index) const {
  Expr i = materialize(index, DType::U32);
  return ElemRef(param_, type_, i, index.file, index.line);
}
void ElemRef::operator=(Operand v) { store(param_, type_, index_, v); }
void ElemRef::operator=(const ElemRef& v) {
  size_t first = mark();
  store(param_, type_, index_, at_ref(v));
  relocate_since(first, loc_of(file_, line_));
}
void ElemRef::operator+=(Operand v) {
  Operand cur(*this, SrcLoc::current());
  tr().k.insts[cur.value.id()].loc = loc_of(v);
  cur.file = v.file;
  cur.line = v.line;
  store(param_, type_, index_, located_like(cur + v, v));
}

static void tg_store(uint32_t alloc, DType type, Expr index, const Operand& v) {
  Expr x = materialize(v, type);
  Inst in;
  in.op = tr().k.insts[alloc].op == Op::LocalAlloc ? Op::LocalStore : Op::TgStore;
  in.operands = ir::Operands{alloc, index.id(), x.id()};
  at(loc_of(v)).emit(std::move(in));
}

TgRef TgBuffer::operator[](Operand index) const {
  Expr i = materialize(index, DType::U32);
  return TgRef(alloc_, type_, i, index.file, index.line);
}
void TgRef::operator=(Operand v) { tg_store(alloc_, type_, index_, v); }
void TgRef::operator=(const TgRef& v) {
  size_t first = mark();
  tg_store(alloc_, type_, index_, at_ref(v));
  relocate_since(first, loc_of(file_, line_));
}

// Threadgroup and register arrays are declared at function scope on every backend: the
// declaration is hoisted to the top of the entry block so it is visible in every branch. One
// name space for both kinds (names must be unique in the whole kernel).
static TgBuffer array_alloc(Op op, const char* name, DType type, uint32_t count, uint32_t align, Id size,
                            SrcLoc l) {
  detail::Trace& t = tr();
  const char* what = op == Op::LocalAlloc ? "register array '" : "threadgroup allocation '";
  for (Id id : t.k.blocks[0].insts) {
    const Inst& other = t.k.insts[id];
    if ((other.op == Op::TgAlloc || other.op == Op::LocalAlloc) &&
        t.k.strings[size_t(other.attr(ir::Attr::Name))] == name)
      error(loc_of(l), std::string(what) + name + "' declared twice (names must be unique in the whole kernel)");
  }
  Inst in;
  in.op = op;
  in.type = type;
  in.set(ir::Attr::Name, t.k.intern_string(name));
  in.set(ir::Attr::Count, count);
  if (align) in.set(ir::Attr::Align, align);
  if (size != ir::kNone) in.set(ir::Attr::CountParam, t.k.insts[size].attr(ir::Attr::Param));
  // Threadgroup memory and register arrays live at function scope on every backend: the
  // builder hoists the declaration to the top of the entry block so it is visible everywhere.
  return TgBuffer(at(loc_of(l)).emit_at_entry(std::move(in)), type);
}

TgBuffer threadgroup_alloc(const char* name, DType type, uint32_t count, SrcLoc l) {
  return array_alloc(Op::TgAlloc, name, type, count, 0, ir::kNone, l);
}

TgBuffer threadgroup_alloc(const char* name, DType type, uint32_t count, uint32_t align, SrcLoc l) {
  return array_alloc(Op::TgAlloc, name, type, count, align, ir::kNone, l);
}

TgBuffer threadgroup_alloc_dynamic(const char* name, DType type, Expr size, uint32_t per, uint32_t align, SrcLoc l) {
  detail::Trace& t = tr();
  // The size must be known before the dispatch starts (it sizes the allocation at launch), so
  // only a scalar parameter itself will do, not a value computed from one.
  if (size.id() >= t.k.insts.size() || t.k.insts[size.id()].op != Op::Param) {
    error(loc_of(l), std::string("threadgroup allocation '") + name +
                         "' is sized at dispatch by a value that is not a scalar parameter (declare it with constexpr_ "
                         "and pass it directly; the element count is per x its value)");
    return array_alloc(Op::TgAlloc, name, type, per ? per : 1, align, ir::kNone, l);
  }
  return array_alloc(Op::TgAlloc, name, type, per, align, size.id(), l);
}

TgBuffer threadgroup_alias(const char* name, const TgBuffer& base, uint32_t byte_offset, DType type, uint32_t count,
                           SrcLoc l) {
  detail::Trace& t = tr();
  const bool ok_base = base.alloc() < t.k.insts.size() && t.k.insts[base.alloc()].op == Op::TgAlloc &&
                       !t.k.insts[base.alloc()].has(ir::Attr::Alias) && !t.k.insts[base.alloc()].has(ir::Attr::CountParam);
  if (!ok_base)
    error(loc_of(l), std::string("threadgroup_alias '") + name +
                         "': the base is not a fixed-size threadgroup_alloc (an alias views one, not another alias)");
  if (byte_offset % 16 != 0)
    error(loc_of(l), std::string("threadgroup_alias '") + name + "': byte offset " + std::to_string(byte_offset) +
                         " is not a multiple of 16");
  if (ok_base) {
    const Inst& b = t.k.insts[base.alloc()];
    const DType bt = b.type.elem();
    if (!is_type_param(bt) && !is_type_param(type)) {
      const uint64_t have = uint64_t(b.attr(ir::Attr::Count)) * dtype_size(bt);
      const uint64_t end = uint64_t(byte_offset) + uint64_t(count) * dtype_size(type);
      if (end > have)
        error(loc_of(l), std::string("threadgroup_alias '") + name + "' covers bytes " + std::to_string(byte_offset) +
                             " to " + std::to_string(end) + " of '" + t.k.strings[size_t(b.attr(ir::Attr::Name))] +
                             "', which has " + std::to_string(have));
    }
  }
  TgBuffer v = array_alloc(Op::TgAlloc, name, type, count, 0, ir::kNone, l);
  if (ok_base && v.alloc() < t.k.insts.size()) {
    const int64_t base_name = t.k.insts[base.alloc()].attr(ir::Attr::Name);
    Inst& in = t.k.insts[v.alloc()];
    in.set(ir::Attr::Alias, base_name);
    in.set(ir::Attr::Offset, byte_offset);
  }
  return v;
}

TgBuffer local_array(const char* name, DType type, uint32_t count, SrcLoc l) {
  return array_alloc(Op::LocalAlloc, name, type, count, 0, ir::kNone, l);
}

// --- Parameters ----------------------------------------------------------------------------

static Buffer buffer_param(const char* name, DType type, Extent extent, ir::Access access, const SrcLoc& l,
                           BufferFacts facts = {}) {
  detail::Trace& t = tr();
  ir::Param p;
  p.name = name;
  p.kind = ir::ParamKind::Buffer;
  p.dtype = type;
  p.access = access;
  p.align = facts.align;
  p.loc = loc_of(l);
  if (t.k.find_param(name) >= 0) error(p.loc, std::string("parameter '") + name + "' declared twice");
  for (const Operand& o : extent) {
    if (o.kind == Operand::Kind::IntLit && o.i > 0) {
      if (!num::checked_mul(p.extent_factor, uint64_t(o.i), p.extent_factor))
        error(p.loc, std::string("extent of '") + name + "': the product of its literals overflows 64 bits");
    } else if (o.kind == Operand::Kind::Value && o.value.id() < t.k.insts.size() &&
               t.k.insts[o.value.id()].op == Op::Param) {
      p.extent_scalars.push_back(t.k.insts[o.value.id()].param());
    } else {
      error(p.loc, std::string("extent of '") + name +
                       "' must be a product of scalar parameters (constexpr_) and positive integer literals");
    }
  }
  if (extent.size() == 0) error(p.loc, std::string("buffer '") + name + "' needs an extent");
  t.k.params.push_back(std::move(p));
  return Buffer(uint32_t(t.k.params.size() - 1), type);
}

Buffer input(const char* name, DType type, Extent extent, SrcLoc l) {
  return buffer_param(name, type, extent, ir::Access::Read, l);
}
Buffer output(const char* name, DType type, Extent extent, SrcLoc l) {
  return buffer_param(name, type, extent, ir::Access::Write, l);
}
Buffer inout(const char* name, DType type, Extent extent, SrcLoc l) {
  return buffer_param(name, type, extent, ir::Access::ReadWrite, l);
}

// The facts' values are checked by the verifier (a power of two, in range, on the right kind
// of parameter), located at the declaration like every parameter rule.
BufferFacts aligned(uint32_t bytes) { return BufferFacts{bytes}; }
Buffer input(const char* name, DType type, Extent extent, BufferFacts facts, SrcLoc l) {
  return buffer_param(name, type, extent, ir::Access::Read, l, facts);
}
Buffer output(const char* name, DType type, Extent extent, BufferFacts facts, SrcLoc l) {
  return buffer_param(name, type, extent, ir::Access::Write, l, facts);
}
Buffer inout(const char* name, DType type, Extent extent, BufferFacts facts, SrcLoc l) {
  return buffer_param(name, type, extent, ir::Access::ReadWrite, l, facts);
}

ScalarFacts specialize() { return ScalarFacts{true, 0}; }
ScalarFacts multiple_of(uint64_t k) { return ScalarFacts{false, k}; }
ScalarFacts operator|(ScalarFacts a, ScalarFacts b) {
  // Two divisibility facts: both hold, so the larger power of two does. One that is not a power
  // of two is kept instead, so that the verifier reports it.
  auto bad = [](uint64_t m) { return m != 0 && (m & (m - 1)) != 0; };
  const uint64_t m = bad(a.multiple_of) ? a.multiple_of : bad(b.multiple_of) ? b.multiple_of
                                                                              : std::max(a.multiple_of, b.multiple_of);
  return ScalarFacts{a.specialize || b.specialize, m};
}

void aliases(const char* a, const char* b, SrcLoc l) {
  detail::Trace& t = tr();
  int ia = t.k.find_param(a), ib = t.k.find_param(b);
  for (auto [name, idx] : {std::pair{a, ia}, std::pair{b, ib}})
    if (idx < 0 || t.k.params[size_t(idx)].kind != ir::ParamKind::Buffer) {
      error(loc_of(l), std::string("aliases(\"") + a + "\", \"" + b + "\"): '" + name +
                           "' is not a buffer parameter declared before it");
      return;
    }
  if (ia == ib) {
    error(loc_of(l), std::string("aliases(\"") + a + "\", \"" + b + "\") names one parameter twice");
    return;
  }
  auto& list = t.k.params[size_t(std::max(ia, ib))].aliases;
  uint32_t earlier = uint32_t(std::min(ia, ib));
  if (std::find(list.begin(), list.end(), earlier) == list.end()) list.push_back(earlier);
}

void strided(const char* buffer, const char* stride, SrcLoc l) {
  detail::Trace& t = tr();
  const int b = t.k.find_param(buffer), s = t.k.find_param(stride);
  if (b < 0 || t.k.params[size_t(b)].kind != ir::ParamKind::Buffer) {
    error(loc_of(l), std::string("strided(\"") + buffer + "\", \"" + stride + "\"): '" + buffer +
                         "' is not a buffer parameter declared before it");
    return;
  }
  if (s < 0 || s > b || t.k.params[size_t(s)].kind != ir::ParamKind::Scalar || !is_integer(t.k.params[size_t(s)].dtype)) {
    error(loc_of(l), std::string("strided(\"") + buffer + "\", \"" + stride + "\"): '" + stride +
                         "' is not an integer constexpr declared before the buffer");
    return;
  }
  t.k.params[size_t(b)].stride_param = uint32_t(s);
}

static Buffer blob_param(const char* name, uint32_t bytes, uint32_t align, bool map, const SrcLoc& l) {
  detail::Trace& t = tr();
  ir::Param p;
  p.name = name;
  p.kind = ir::ParamKind::Blob;
  p.dtype = DType::U32;
  p.access = ir::Access::Read;
  p.blob_bytes = bytes;
  p.align = align;
  p.tensor_map = map;
  p.loc = loc_of(l);
  if (t.k.find_param(name) >= 0) error(p.loc, std::string("parameter '") + name + "' declared twice");
  t.k.params.push_back(std::move(p));
  return Buffer(uint32_t(t.k.params.size() - 1), DType::U32);
}

Buffer blob(const char* name, uint32_t bytes, uint32_t align, SrcLoc l) { return blob_param(name, bytes, align, false, l); }
Buffer tensor_map(const char* name, SrcLoc l) {
  return blob_param(name, ir::kTensorMapBytes, ir::kTensorMapAlign, true, l);
}

Expr constexpr_(const char* name, DType type, SrcLoc l) { return constexpr_(name, type, ScalarFacts{}, l); }

Expr constexpr_(const char* name, DType type, ScalarFacts facts, SrcLoc l) {
  detail::Trace& t = tr();
  ir::Param p;
  p.name = name;
  p.kind = ir::ParamKind::Scalar;
  p.dtype = type;
  p.specialize = facts.specialize;
  p.multiple_of = facts.multiple_of;
  p.loc = loc_of(l);
  if (t.k.find_param(name) >= 0) error(p.loc, std::string("parameter '") + name + "' declared twice");
  ir::SrcLoc where = p.loc;
  t.k.params.push_back(std::move(p));
  return value(at(where).param(uint32_t(t.k.params.size() - 1), type));
}

}  // namespace iron::dsl

// --- Device functions ----------------------------------------------------------------------

namespace iron::dsl {

Expr arg(int index, DType type, SrcLoc l) {
  detail::Trace& t = tr();
  if (!t.k.is_function) error(loc_of(l), "arg() is only valid inside a device function");
  Inst in;
  in.op = Op::Arg;
  in.type = type;
  in.set(ir::Attr::Index, index);
  return value(at(loc_of(l)).emit(std::move(in)));
}

void ret(Operand value) {
  detail::Trace& t = tr();
  if (!t.k.is_function) error(loc_of(value), "ret() is only valid inside a device function");
  Expr v = materialize(value, DType::Void);
  at(loc_of(value)).emit(Op::Return, Type(), {v.id()});
}

Expr call(const char* function, std::initializer_list<Operand> args, SrcLoc l) {
  detail::Trace& t = tr();
  ir::SrcLoc where = loc_of(l);
  const ir::Kernel* callee = nullptr;
  try {
    callee = device_function_ir(function);
    if (!callee) error(where, std::string("call to unknown device function '") + function + "'");
  } catch (const Error& e) {
    error(where, std::string("device function '") + function + "' is malformed: " + e.what());
  }
  if (!callee) return constant(DType::F32, 0, 0, where);
  if (args.size() > 3) error(where, std::string("device function calls take at most 3 arguments ('") + function + "')");
  // Argument dtypes come from the callee's arg() declarations; literals adopt them.
  std::vector<DType> want(args.size(), DType::Void);
  ir::walk(*callee, [&](Id id) {
    const Inst& in = callee->insts[id];
    const int64_t index = in.attr(ir::Attr::Index);
    if (in.op == Op::Arg && index >= 0 && size_t(index) < want.size()) want[size_t(index)] = in.type.elem();
  });
  Inst in;
  in.op = Op::Call;
  in.set(ir::Attr::Callee, t.k.intern_string(function));
  in.loc = where;
  int i = 0;
  for (const Operand& a : args) {
    if (i == 3) break;
    in.operands.push_back(materialize(a, want[size_t(i)]).id());
    ++i;
  }
  const auto& entry = callee->blocks[0].insts;
  in.type = entry.empty() ? Type() : callee->insts[callee->insts[entry.back()].operands[0]].type;
  return dsl::value(at(where).emit(std::move(in)));
}

}  // namespace iron::dsl

// --- Lane operations, atomics and fences ---------------------------------------------------

namespace iron::dsl {

namespace {

// A lane op on `x` with an optional u32 lane operand (shuffles); the result has x's dtype
// (the votes: u32 for a ballot, bool for any/all).
Expr lane_inst(Op op, const Operand& x, const Operand* lane, DType result = DType::Void) {
  Expr v = materialize(x, op == Op::LaneBallot || op == Op::LaneAny || op == Op::LaneAll ? DType::Bool : DType::Void);
  Inst in;
  in.op = op;
  in.type = result == DType::Void ? v.dtype() : result;
  in.operands.push_back(v.id());
  if (lane) in.operands.push_back(materialize(*lane, DType::U32).id());
  in.loc = loc_of(x);
  return emit(in);
}

// An atomic on `memory` (a buffer parameter, or a TgAlloc when `alloc` is set) in the operand
// layout of ir::atomic_operands: [alloc,] index, [expected,] value.
Expr atomic_inst(Op op, DType type, uint32_t param, Id alloc, Expr index, const Operand* expected, const Operand& v,
                 ir::SrcLoc l) {
  Expr e = expected ? materialize(*expected, type) : Expr();
  Expr x = materialize(v, type);
  Inst in;
  in.op = op;
  in.type = type;
  in.loc = l;
  if (alloc != ir::kNone) in.operands.push_back(alloc);
  else in.set(ir::Attr::Param, param);
  in.operands.push_back(index.id());
  if (expected) in.operands.push_back(e.id());
  in.operands.push_back(x.id());
  return emit(in);
}

Expr buffer_atomic(Op op, const ElemRef& at, const Operand* expected, const Operand& v) {
  return atomic_inst(op, at.dtype(), at.param(), ir::kNone, at.index(), expected, v, loc_of(at.file(), at.line()));
}
Expr tg_atomic(Op op, const TgRef& at, const Operand* expected, const Operand& v) {
  return atomic_inst(op, at.dtype(), 0, at.alloc(), at.index(), expected, v, loc_of(at.file(), at.line()));
}

// A threadgroup prefix sum written with the DSL itself: each lane group scans its lanes; the
// last lane of each group publishes the group's total to a scratch slot; after a barrier every
// thread adds the totals of the lane groups before its own, in group order, to its lane scan.
// The order of every f32 addition is fixed by the threadgroup size and the lane width. A closing
// barrier lets the same call run again (in a loop) without overwriting a slot still being read.
Expr group_scan(const Operand& x, bool inclusive) {
  const size_t first = mark();
  const ir::SrcLoc l = loc_of(x);
  Expr v = materialize(x, DType::F32);
  detail::Trace& t = tr();
  std::string name = std::string(inclusive ? "iron_group_iscan_" : "iron_group_escan_") + std::to_string(t.unique++);
  // Largest lane-group count: 1024 threads / lane width 4.
  TgBuffer totals = threadgroup_alloc(name.c_str(), v.dtype(), 256);
  Expr inc = lane_inclusive_sum(v);
  Expr mine = inclusive ? inc : lane_exclusive_sum(v);
  Expr group = simd_group_id();
  if_(lane_id() == lane_width() - 1u, [&] { totals[group] = inc; });
  barrier();
  VarBase offset(v.dtype(), 0);
  // The index is clamped to the array: a loop bound that went wrong (a mutant: group - 1 at
  // group 0 wraps to 2^32 - 1) must not read past it on a GPU, which has no bounds check.
  for_(0u, group, [&](Expr g) { offset = offset + totals[min(g, 255u)]; });
  Expr result = offset + mine;
  barrier();
  relocate_since(first, l);
  return result;
}

}  // namespace

Expr lane_shuffle(Operand x, Operand src) { return lane_inst(Op::LaneShuffle, x, &src); }
Expr lane_shuffle_xor(Operand x, Operand mask) { return lane_inst(Op::LaneShuffleXor, x, &mask); }
Expr lane_shuffle_up(Operand x, Operand delta) { return lane_inst(Op::LaneShuffleUp, x, &delta); }
Expr lane_shuffle_down(Operand x, Operand delta) { return lane_inst(Op::LaneShuffleDown, x, &delta); }
Expr lane_broadcast(Operand x, Operand lane) { return lane_inst(Op::LaneBroadcast, x, &lane); }
Expr lane_min(Operand x) { return lane_inst(Op::LaneMin, x, nullptr); }
Expr lane_and(Operand x) { return lane_inst(Op::LaneAnd, x, nullptr); }
Expr lane_or(Operand x) { return lane_inst(Op::LaneOr, x, nullptr); }
Expr lane_inclusive_sum(Operand x) { return lane_inst(Op::LaneInclusiveSum, x, nullptr); }
Expr lane_exclusive_sum(Operand x) { return lane_inst(Op::LaneExclusiveSum, x, nullptr); }
Expr lane_ballot(Operand c) { return lane_inst(Op::LaneBallot, c, nullptr, DType::U32); }
Expr lane_any(Operand c) { return lane_inst(Op::LaneAny, c, nullptr, DType::Bool); }
Expr lane_all(Operand c) { return lane_inst(Op::LaneAll, c, nullptr, DType::Bool); }
Expr group_inclusive_sum(Operand x) { return group_scan(x, true); }
Expr group_exclusive_sum(Operand x) { return group_scan(x, false); }

Expr atomic_add(const ElemRef& at, Operand v) { return buffer_atomic(Op::AtomicAdd, at, nullptr, v); }
Expr atomic_min(const ElemRef& at, Operand v) { return buffer_atomic(Op::AtomicMin, at, nullptr, v); }
Expr atomic_max(const ElemRef& at, Operand v) { return buffer_atomic(Op::AtomicMax, at, nullptr, v); }
Expr atomic_and(const ElemRef& at, Operand v) { return buffer_atomic(Op::AtomicAnd, at, nullptr, v); }
Expr atomic_or(const ElemRef& at, Operand v) { return buffer_atomic(Op::AtomicOr, at, nullptr, v); }
Expr atomic_exchange(const ElemRef& at, Operand v) { return buffer_atomic(Op::AtomicExchange, at, nullptr, v); }
Expr atomic_cas(const ElemRef& at, Operand expected, Operand v) { return buffer_atomic(Op::AtomicCas, at, &expected, v); }
Expr atomic_add(const TgRef& at, Operand v) { return tg_atomic(Op::TgAtomicAdd, at, nullptr, v); }
Expr atomic_min(const TgRef& at, Operand v) { return tg_atomic(Op::TgAtomicMin, at, nullptr, v); }
Expr atomic_max(const TgRef& at, Operand v) { return tg_atomic(Op::TgAtomicMax, at, nullptr, v); }
Expr atomic_and(const TgRef& at, Operand v) { return tg_atomic(Op::TgAtomicAnd, at, nullptr, v); }
Expr atomic_or(const TgRef& at, Operand v) { return tg_atomic(Op::TgAtomicOr, at, nullptr, v); }
Expr atomic_exchange(const TgRef& at, Operand v) { return tg_atomic(Op::TgAtomicExchange, at, nullptr, v); }
Expr atomic_cas(const TgRef& at, Operand expected, Operand v) { return tg_atomic(Op::TgAtomicCas, at, &expected, v); }

void fence_threadgroup(SrcLoc l) {
  Inst in;
  in.op = Op::FenceThreadgroup;
  in.loc = loc_of(l);
  emit(in);
}
void atomic_add_pair(const ElemRef& pair, Operand lo, Operand hi) {
  Expr l = materialize(lo, pair.dtype());
  Expr h = materialize(hi, pair.dtype());
  Inst in;
  in.op = Op::AtomicAddPair;
  in.loc = loc_of(pair.file(), pair.line());
  in.set(ir::Attr::Param, pair.param());
  in.operands.push_back(pair.index().id());
  in.operands.push_back(l.id());
  in.operands.push_back(h.id());
  emit(in);
}

void async_copy(const TgRef& dst, const ElemRef& src, uint32_t count, Operand valid) {
  Expr v = materialize(valid, DType::U32);
  Inst in;
  in.op = Op::AsyncCopy;
  in.loc = loc_of(dst.file(), dst.line());
  in.set(ir::Attr::Param, src.param());
  in.set(ir::Attr::Count, int64_t(count));
  in.operands.push_back(dst.alloc());
  in.operands.push_back(dst.index().id());
  in.operands.push_back(src.index().id());
  in.operands.push_back(v.id());
  emit(in);
}
void async_copy(const TgRef& dst, const ElemRef& src, uint32_t count, SrcLoc loc) {
  async_copy(dst, src, count, Operand(count, loc));  // the whole count valid, at the caller's line
}
void async_commit(SrcLoc l) {
  Inst in;
  in.op = Op::AsyncCommit;
  in.loc = loc_of(l);
  emit(in);
}
void async_wait(uint32_t pending, SrcLoc l) {
  Inst in;
  in.op = Op::AsyncWait;
  in.loc = loc_of(l);
  in.set(ir::Attr::Count, int64_t(pending));
  emit(in);
}

TgBuffer mbarrier_alloc(const char* name, uint32_t count, SrcLoc loc) {
  return threadgroup_alloc(name, DType::U64, count, 8, loc);
}

namespace {
void mbar_op(Op op, const TgRef& bar, const Operand* extra) {
  Expr x = extra ? materialize(*extra, DType::U32) : Expr();
  Inst in;
  in.op = op;
  in.loc = loc_of(bar.file(), bar.line());
  in.operands.push_back(bar.alloc());
  in.operands.push_back(bar.index().id());
  if (extra) in.operands.push_back(x.id());
  emit(in);
}
void simple_op(Op op, SrcLoc l, int64_t count = -1) {
  Inst in;
  in.op = op;
  in.loc = loc_of(l);
  if (count >= 0) in.set(ir::Attr::Count, count);
  emit(in);
}
}  // namespace

void mbar_init(const TgRef& bar, Operand arrivals) { mbar_op(Op::MbarInit, bar, &arrivals); }
void mbar_arrive(const TgRef& bar) { mbar_op(Op::MbarArrive, bar, nullptr); }
void mbar_arrive_tx(const TgRef& bar, Operand bytes) { mbar_op(Op::MbarArriveTx, bar, &bytes); }
void mbar_wait(const TgRef& bar, Operand parity) { mbar_op(Op::MbarWait, bar, &parity); }
void fence_proxy_async(SrcLoc l) { simple_op(Op::FenceProxyAsync, l); }
void setmaxnreg_inc(uint32_t registers, SrcLoc l) { simple_op(Op::SetMaxNRegInc, l, registers); }
void setmaxnreg_dec(uint32_t registers, SrcLoc l) { simple_op(Op::SetMaxNRegDec, l, registers); }
void bulk_store(const ElemRef& dst, const TgRef& src, uint32_t count) {
  Inst in;
  in.op = Op::BulkStore;
  in.loc = loc_of(src.file(), src.line());
  in.set(ir::Attr::Param, dst.param());
  in.set(ir::Attr::Count, int64_t(count));
  in.operands.push_back(src.alloc());
  in.operands.push_back(src.index().id());
  in.operands.push_back(dst.index().id());
  emit(in);
}
void bulk_commit(SrcLoc l) { simple_op(Op::BulkCommit, l); }
void bulk_wait(uint32_t pending, SrcLoc l) { simple_op(Op::BulkWait, l, pending); }
void bulk_copy(const TgRef& dst, const ElemRef& src, uint32_t count, const TgRef& bar) {
  Inst in;
  in.op = Op::BulkCopy;
  in.loc = loc_of(dst.file(), dst.line());
  in.set(ir::Attr::Param, src.param());
  in.set(ir::Attr::Count, int64_t(count));
  in.operands.push_back(dst.alloc());
  in.operands.push_back(dst.index().id());
  in.operands.push_back(src.index().id());
  in.operands.push_back(bar.alloc());
  in.operands.push_back(bar.index().id());
  emit(in);
}

namespace {
// A tensor-map copy's map must be a tensor_map parameter, and its coordinates i32 or u32 values
// (a literal becomes an i32 constant; any other value is kept as it is, never replaced).
void tma_op(Op op, const Buffer& map, const TgRef& tg, const Operand& x, const Operand& y, const TgRef* bar) {
  detail::Trace& t = tr();
  const ir::SrcLoc loc = loc_of(tg.file(), tg.line());
  const char* name = op == Op::TmaLoad2D ? "tma_load_2d" : "tma_store_2d";
  if (map.param() >= t.k.params.size() || !t.k.params[map.param()].tensor_map)
    error(loc, std::string(name) + ": '" + (map.param() < t.k.params.size() ? t.k.params[map.param()].name : "?") +
                   "' is not a tensor map parameter (declare it with tensor_map(name))");
  Expr ex = materialize(x, DType::I32), ey = materialize(y, DType::I32);
  for (const Expr* e : {&ex, &ey}) {
    const DType d = t.k.insts[e->id()].type.elem();
    if (d != DType::I32 && d != DType::U32)
      error(loc, std::string(name) + ": the " + (e == &ex ? "x" : "y") + " coordinate is " + dtype_name(d) +
                     "; it must be i32 or u32 (cast it)");
  }
  Inst in;
  in.op = op;
  in.loc = loc;
  in.set(ir::Attr::Param, map.param());
  in.operands.push_back(tg.alloc());
  in.operands.push_back(tg.index().id());
  in.operands.push_back(ex.id());
  in.operands.push_back(ey.id());
  if (bar) {
    in.operands.push_back(bar->alloc());
    in.operands.push_back(bar->index().id());
  }
  emit(in);
}
}  // namespace

void tma_load_2d(const Buffer& map, const TgRef& dst, Operand x, Operand y, const TgRef& bar) {
  tma_op(Op::TmaLoad2D, map, dst, x, y, &bar);
}
void tma_store_2d(const Buffer& map, const TgRef& src, Operand x, Operand y) {
  tma_op(Op::TmaStore2D, map, src, x, y, nullptr);
}

void fence_device(SrcLoc l) {
  Inst in;
  in.op = Op::FenceDevice;
  in.loc = loc_of(l);
  emit(in);
}

}  // namespace iron::dsl

// --- Cooperative tiles ---------------------------------------------------------------------

namespace iron::dsl {

namespace {

Frag emit_frag(Inst in) {
  Expr e = emit(in);
  return Frag(e.id(), in.type);
}

bool frag_ok(const Frag& f, ir::SrcLoc l, const char* what) {
  if (f.id() == UINT32_MAX || f.id() >= tr().k.insts.size()) {
    error(l, std::string(what) + ": use of an unset fragment");
    return false;
  }
  return true;
}

// Offsets and strides are u32 element counts; literals become u32 constants, traced values are
// taken as they are (the verifier rejects a non-u32 one, located).
Id tile_index(const Operand& o) { return materialize(o, DType::U32).id(); }

// A Swizzle as the IR's attribute code (0: none); a malformed one is reported at `l`.
int64_t swizzle_code(const Swizzle& sw, ir::SrcLoc l, const char* fn) {
  if (sw.bits == 0) return 0;
  const int64_t code = int64_t(sw.bits) * 100 + int64_t(sw.base) * 10 + int64_t(sw.shift);
  if (sw.bits > 3 || sw.base > 7 || sw.shift > 9 || sw.shift < sw.bits || !ir::swizzle_code_valid(code)) {
    error(l, std::string(fn) + ": swizzle {bits " + std::to_string(sw.bits) + ", base " + std::to_string(sw.base) +
                 ", shift " + std::to_string(sw.shift) + "} is not one (bits 1..3, base 0..7, shift bits..9)");
    return 0;
  }
  return code;
}

Frag tile_load(const TileShape& tile, FragRole role, bool tg, uint32_t source, DType, const Operand& offset,
               const Operand& stride, const TileLayout& layout) {
  Inst in;
  in.op = tg ? Op::TileTgLoad : Op::TileLoad;
  in.type = Type::fragment(tile.in, tile.m, tile.n, tile.k, role);
  in.loc = loc_of(offset);
  const char* fn = role == FragRole::A ? "coop_tile_load_a" : "coop_tile_load_b";
  if (layout.col_major) in.set(ir::Attr::ColMajor, 1);
  if (layout.swizzle.bits != 0 && !tg)
    error(in.loc, std::string(fn) + ": a swizzle applies to threadgroup memory only (this load reads a buffer)");
  else if (const int64_t code = swizzle_code(layout.swizzle, in.loc, fn)) in.set(ir::Attr::Swizzle, code);
  if (tg) in.operands.push_back(source);
  else in.set(ir::Attr::Param, source);
  in.operands.push_back(tile_index(offset));
  in.operands.push_back(tile_index(stride));
  return emit_frag(in);
}

void tile_store(const Frag& acc, bool tg, uint32_t dest, const Operand& offset, const Operand& stride) {
  const ir::SrcLoc l = loc_of(offset);
  if (!frag_ok(acc, l, "coop_tile_store")) return;
  Inst in;
  in.op = tg ? Op::TileTgStore : Op::TileStore;
  in.loc = l;
  if (tg) in.operands.push_back(dest);
  else in.set(ir::Attr::Param, dest);
  in.operands.push_back(acc.id());
  in.operands.push_back(tile_index(offset));
  in.operands.push_back(tile_index(stride));
  emit(in);
}

// An argument that selects something at compile time must be an integer literal: a traced
// value is reported here, located, and never lowered to a default.
bool literal_arg(const Operand& o, const char* fn, const char* what, int64_t& out) {
  if (o.kind == Operand::Kind::IntLit) {
    out = o.i;
    return true;
  }
  error(loc_of(o), std::string(fn) + ": " + what + " must be an integer literal (it selects a register at " +
                       "compile time), not a " + (o.kind == Operand::Kind::FloatLit ? "float literal" : "traced value"));
  return false;
}

}  // namespace

TileShape coop_tile_setup(uint32_t m, uint32_t n, uint32_t k, DType in, SrcLoc l) {
  // 16x16x16 with f16, bf16 or T; 16x16x32 with f8e4m3 or f8e5m2 (docs/dsl.md "Cooperative tiles").
  const bool fp8 = is_fp8(in);
  if (m != 16 || n != 16 || k != (fp8 ? 32u : 16u))
    error(loc_of(l), "coop_tile_setup: tile shape " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                         std::to_string(k) + " is not supported" +
                         (fp8 ? std::string(" for ") + dtype_name(in) + " (fp8 tiles are 16x16x32)"
                              : std::string(" (cooperative tiles are 16x16x16, or 16x16x32 for f8e4m3 and f8e5m2)")));
  if (in != DType::F16 && in != DType::BF16 && in != DType::Generic && !fp8)
    error(loc_of(l), std::string("coop_tile_setup: input element type ") + dtype_name(in) +
                         " is not supported (f16, bf16 or T at 16x16x16, f8e4m3 or f8e5m2 at 16x16x32; accumulation is f32)");
  return TileShape{m, n, k, in};
}

Frag coop_tile_fill(const TileShape& tile, Operand value) {
  Expr v = materialize(value, DType::F32);
  Inst in;
  in.op = Op::TileFill;
  in.type = Type::fragment(DType::F32, tile.m, tile.n, tile.k, FragRole::Acc);
  in.operands.push_back(v.id());
  in.loc = loc_of(value);
  return emit_frag(in);
}

Frag coop_tile_load_a(const TileShape& t, const Buffer& src, Operand offset, Operand stride, TileLayout layout) {
  return tile_load(t, FragRole::A, false, src.param(), src.dtype(), offset, stride, layout);
}
Frag coop_tile_load_a(const TileShape& t, const TgBuffer& src, Operand offset, Operand stride, TileLayout layout) {
  return tile_load(t, FragRole::A, true, src.alloc(), src.dtype(), offset, stride, layout);
}
Frag coop_tile_load_b(const TileShape& t, const Buffer& src, Operand offset, Operand stride, TileLayout layout) {
  return tile_load(t, FragRole::B, false, src.param(), src.dtype(), offset, stride, layout);
}
Frag coop_tile_load_b(const TileShape& t, const TgBuffer& src, Operand offset, Operand stride, TileLayout layout) {
  return tile_load(t, FragRole::B, true, src.alloc(), src.dtype(), offset, stride, layout);
}

Expr swizzle(const Swizzle& sw, Operand index) {
  const ir::SrcLoc l = loc_of(index);
  Expr i = materialize(index, DType::U32);
  if (swizzle_code(sw, l, "swizzle") == 0) return i;
  // i ^ (((i >> (base + shift)) & mask) << base), the map a swizzled tile load applies, every op
  // at the caller's line.
  auto k = [&](uint32_t v) { return constant(DType::U32, v, 0, l).id(); };
  auto op = [&](Op o, Id x, Id y) { return at(l).binary(o, x, y); };
  const Id hi = op(Op::Shr, i.id(), k(sw.base + sw.shift));
  const Id bits = op(Op::And, hi, k((1u << sw.bits) - 1u));
  return value(op(Op::Xor, i.id(), op(Op::Shl, bits, k(sw.base))));
}

Frag coop_tile_run(const Frag& a, const Frag& b, const Frag& acc, SrcLoc loc) {
  const ir::SrcLoc l = loc_of(loc);
  Inst in;
  in.op = Op::TileMma;
  in.loc = l;
  if (!frag_ok(a, l, "coop_tile_run") || !frag_ok(b, l, "coop_tile_run") || !frag_ok(acc, l, "coop_tile_run"))
    return acc;
  in.type = acc.type();
  in.operands.push_back(a.id());
  in.operands.push_back(b.id());
  in.operands.push_back(acc.id());
  return emit_frag(in);
}

Frag coop_tile_scale_add(const TgBuffer& scales, Operand offset, const Frag& x, const Frag& acc, SrcLoc loc) {
  const ir::SrcLoc l = loc_of(loc);
  if (!frag_ok(x, l, "coop_tile_scale_add") || !frag_ok(acc, l, "coop_tile_scale_add")) return acc;
  Inst in;
  in.op = Op::TileScaleAdd;
  in.loc = l;
  in.type = acc.type();
  in.operands.push_back(scales.alloc());
  in.operands.push_back(tile_index(offset));
  in.operands.push_back(x.id());
  in.operands.push_back(acc.id());
  return emit_frag(in);
}

namespace {
Frag wg_fill(uint32_t n, Operand value, uint32_t k, ir::SrcLoc l) {
  const bool ok = n != 0 && n % 16 == 0 && n <= 256;
  if (!ok)
    error(l, "coop_tile_wg_fill: a warpgroup accumulator is 16 x N with N a multiple of 16 up to 256, not " +
                 std::to_string(n));
  Expr v = materialize(value, DType::F32);
  Inst in;
  in.op = Op::TileFill;
  in.type = Type::fragment(DType::F32, 16, ok ? n : 16, k, FragRole::Acc);
  in.operands.push_back(v.id());
  in.loc = l;
  return emit_frag(in);
}
}  // namespace

Frag coop_tile_wg_fill(uint32_t n, Operand value, SrcLoc loc) { return wg_fill(n, value, 16, loc_of(loc)); }
Frag coop_tile_wg_fill(uint32_t n, Operand value, DType in, SrcLoc loc) {
  return wg_fill(n, value, is_fp8(in) ? 32 : 16, loc_of(loc));
}

namespace {
// The swizzle of a warpgroup tile op on arrays of `elem`, or a located error naming why no
// descriptor expresses it: the 32-, 64- and 128-byte modes are {bits, 3, 3} for 16-bit elements
// and {bits, 4, 3} for fp8 (16-byte chunks either way).
int64_t wg_swizzle(const Swizzle& sw, DType elem, ir::SrcLoc l) {
  const int64_t code = swizzle_code(sw, l, "coop_tile_wg_run");
  const bool fp8 = is_fp8(elem);
  const char* modes = fp8 ? "{1, 4, 3}, {2, 4, 3} or {3, 4, 3} for fp8" : "{1, 3, 3}, {2, 3, 3} or {3, 3, 3}";
  if (code != 0 && (ir::wgmma_row_bytes(code) == 0 || (ir::wgmma_elem_bytes(code) == 1) != fp8))
    error(l, "coop_tile_wg_run: swizzle {bits " + std::to_string(sw.bits) + ", base " + std::to_string(sw.base) +
                 ", shift " + std::to_string(sw.shift) + "} is not one a wgmma matrix descriptor expresses (" + modes +
                 ": the 32-, 64- and 128-byte modes)");
  else if (sw.bits == 0)
    error(l, std::string("coop_tile_wg_run: an unswizzled tile cannot be described to wgmma here; stage A and B under ") +
                 (fp8 ? "Swizzle{3, 4, 3} (rows of 128 fp8 elements), {2, 4, 3} (64) or {1, 4, 3} (32)"
                      : "Swizzle{3, 3, 3} (rows of 64 elements), {2, 3, 3} (32) or {1, 3, 3} (16)"));
  return code ? code : fp8 ? 343 : 333;
}
}  // namespace

namespace {
Frag wg_run(const TgBuffer& a, Operand a_offset, const TgBuffer& b, Operand b_offset, const Frag& acc, Swizzle sw, SrcLoc loc,
            bool async) {
  const ir::SrcLoc l = loc_of(loc);
  if (!frag_ok(acc, l, async ? "coop_tile_wg_issue" : "coop_tile_wg_run")) return acc;
  const int64_t code = wg_swizzle(sw, b.dtype(), l);
  Inst in;
  in.op = Op::TileWgMma;
  in.loc = l;
  in.type = acc.type();
  in.set(ir::Attr::Swizzle, code);
  if (async) in.set(ir::Attr::Async, 1);
  in.operands.push_back(a.alloc());
  in.operands.push_back(tile_index(a_offset));
  in.operands.push_back(b.alloc());
  in.operands.push_back(tile_index(b_offset));
  in.operands.push_back(acc.id());
  return emit_frag(in);
}

Frag wg_run_rs(const Frag& a, const TgBuffer& b, Operand b_offset, const Frag& acc, Swizzle sw, SrcLoc loc, bool async) {
  const ir::SrcLoc l = loc_of(loc);
  const char* fn = async ? "coop_tile_wg_issue" : "coop_tile_wg_run";
  if (!frag_ok(a, l, fn) || !frag_ok(acc, l, fn)) return acc;
  const int64_t code = wg_swizzle(sw, b.dtype(), l);
  Inst in;
  in.op = Op::TileWgMmaRs;
  in.loc = l;
  in.type = acc.type();
  in.set(ir::Attr::Swizzle, code);
  if (async) in.set(ir::Attr::Async, 1);
  in.operands.push_back(a.id());
  in.operands.push_back(b.alloc());
  in.operands.push_back(tile_index(b_offset));
  in.operands.push_back(acc.id());
  return emit_frag(in);
}
}  // namespace

Frag coop_tile_wg_run(const TgBuffer& a, Operand a_offset, const TgBuffer& b, Operand b_offset, const Frag& acc,
                      Swizzle sw, SrcLoc loc) {
  return wg_run(a, a_offset, b, b_offset, acc, sw, loc, false);
}
Frag coop_tile_wg_run(const Frag& a, const TgBuffer& b, Operand b_offset, const Frag& acc, Swizzle sw, SrcLoc loc) {
  return wg_run_rs(a, b, b_offset, acc, sw, loc, false);
}
Frag coop_tile_wg_issue(const TgBuffer& a, Operand a_offset, const TgBuffer& b, Operand b_offset, const Frag& acc,
                        Swizzle sw, SrcLoc loc) {
  return wg_run(a, a_offset, b, b_offset, acc, sw, loc, true);
}
Frag coop_tile_wg_issue(const Frag& a, const TgBuffer& b, Operand b_offset, const Frag& acc, Swizzle sw, SrcLoc loc) {
  return wg_run_rs(a, b, b_offset, acc, sw, loc, true);
}
void wg_fence(SrcLoc l) { simple_op(Op::WgFence, l); }
void wg_commit(SrcLoc l) { simple_op(Op::WgCommit, l); }
void wg_wait(uint32_t pending, SrcLoc l) { simple_op(Op::WgWait, l, pending); }

void coop_tile_store(const Frag& acc, const Buffer& dst, Operand offset, Operand stride) {
  tile_store(acc, false, dst.param(), offset, stride);
}
void coop_tile_store(const Frag& acc, const TgBuffer& dst, Operand offset, Operand stride) {
  tile_store(acc, true, dst.alloc(), offset, stride);
}

Expr coop_tile_get(const Frag& acc, Operand row, Operand col) {
  const ir::SrcLoc l = loc_of(row);
  int64_t r = 0, c = 0;
  const bool ok_r = literal_arg(row, "coop_tile_get", "the row", r);
  const bool ok_c = literal_arg(col, "coop_tile_get", "the column", c);
  if (!ok_r || !ok_c || !frag_ok(acc, l, "coop_tile_get")) return constant(DType::F32, 0, 0, l);
  Inst in;
  in.op = Op::TileGet;
  in.type = DType::F32;
  in.operands.push_back(acc.id());
  in.set(ir::Attr::Row, r);
  in.set(ir::Attr::Col, c);
  in.loc = l;
  return emit(in);
}

FragVar::FragVar(const Frag& init, SrcLoc loc) : id_(UINT32_MAX), type_(init.type()) {
  const ir::SrcLoc l = loc_of(loc);
  if (!frag_ok(init, l, "FragVar")) return;
  Inst in;
  in.op = Op::Var;
  in.type = init.type();
  in.operands.push_back(init.id());
  in.loc = l;
  id_ = emit(in).id();
}

Frag FragVar::get(SrcLoc loc) const {
  const ir::SrcLoc l = loc_of(loc);
  if (id_ == UINT32_MAX) {
    error(l, "FragVar: read of a variable that was never initialized");
    return Frag();
  }
  Inst in;
  in.op = Op::VarLoad;
  in.type = type_;
  in.operands.push_back(id_);
  in.loc = l;
  return emit_frag(in);
}

void FragVar::set(const Frag& value, SrcLoc loc) {
  const ir::SrcLoc l = loc_of(loc);
  if (id_ == UINT32_MAX || !frag_ok(value, l, "FragVar::set")) return;
  Inst in;
  in.op = Op::VarStore;
  in.operands.push_back(id_);
  in.operands.push_back(value.id());
  in.loc = l;
  emit(in);
}

}  // namespace iron::dsl
