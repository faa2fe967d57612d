// ir::Builder (see builder.hpp).
#include "core/builder.hpp"

namespace iron::ir {

Id Builder::emit(Op op, Type type, std::initializer_list<Id> operands) {
  Inst in;
  in.op = op;
  in.type = type;
  in.operands = Operands(operands);
  return emit(std::move(in));
}

Id Builder::emit(Inst in) {
  if (in.loc.line == 0 && in.loc.file == 0) in.loc = loc_;
  Id id = k_.add_inst(in);
  k_.blocks[open_.back()].insts.push_back(id);
  return id;
}

Id Builder::emit_at_entry(Inst in) {
  if (in.loc.line == 0 && in.loc.file == 0) in.loc = loc_;
  Id id = k_.add_inst(in);
  auto& entry = k_.blocks[0].insts;
  entry.insert(entry.begin(), id);
  return id;
}

Id Builder::constant(DType type, int64_t i, double f) {
  Inst in;
  in.op = Op::Const;
  in.type = type;
  // A T constant carries both readings: T may become a float or an integer dtype. A u64
  // constant keeps its bit pattern in the integer field.
  if (type == DType::Generic) in.set(Attr::Value, i), in.set_float(Attr::Value, f);
  else if (is_float(type)) in.set_float(Attr::Value, f);
  else in.set(Attr::Value, i);
  return emit(std::move(in));
}
Id Builder::constant_int(DType type, int64_t value) { return constant(type, value, double(value)); }
Id Builder::constant_float(DType type, double value) { return constant(type, 0, value); }

Id Builder::param(uint32_t index, DType type) {
  Inst in;
  in.op = Op::Param;
  in.type = type;
  in.set(Attr::Param, index);
  return emit(std::move(in));
}

Id Builder::builtin(Op op, int axis) { return builtin(op, axis, DType::U32); }

Id Builder::builtin(Op op, int axis, DType type) {
  Inst in;
  in.op = op;
  in.type = type;
  const AttrSchema& schema = attr_schema(op);
  for (uint8_t i = 0; i < schema.count; ++i)
    if (schema.slots[i].attr == Attr::Axis) in.set(Attr::Axis, axis);
  return emit(std::move(in));
}

static bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

Id Builder::unary(Op op, Id a) { return emit(op, type_of(a), {a}); }
Id Builder::binary(Op op, Id a, Id b) { return emit(op, is_comparison(op) ? Type(DType::Bool) : type_of(a), {a, b}); }
Id Builder::ternary(Op op, Id a, Id b, Id c) { return emit(op, op == Op::Select ? type_of(b) : type_of(a), {a, b, c}); }
Id Builder::cast(Id v, Type to) { return emit(Op::Cast, to, {v}); }

Id Builder::load(uint32_t param, Type type, Id index) {
  Inst in;
  in.op = Op::Load;
  in.type = type;
  in.operands = Operands{index};
  in.set(Attr::Param, param);
  return emit(std::move(in));
}

Id Builder::store(uint32_t param, Id index, Id value) {
  Inst in;
  in.op = Op::Store;
  in.operands = Operands{index, value};
  in.set(Attr::Param, param);
  return emit(std::move(in));
}

Id Builder::tg_alloc(const std::string& name, Type type, uint64_t count) {
  Inst in;
  in.op = Op::TgAlloc;
  in.type = type;
  in.set(Attr::Name, k_.intern_string(name));
  in.set(Attr::Count, int64_t(count));
  return emit_at_entry(std::move(in));
}

Id Builder::tg_load(Id alloc, Id index) { return emit(Op::TgLoad, type_of(alloc), {alloc, index}); }
Id Builder::tg_store(Id alloc, Id index, Id value) { return emit(Op::TgStore, Type(), {alloc, index, value}); }
Id Builder::var(Type type, Id init) { return emit(Op::Var, type, {init}); }
Id Builder::var_load(Id v) { return emit(Op::VarLoad, type_of(v), {v}); }
Id Builder::var_store(Id v, Id value) { return emit(Op::VarStore, Type(), {v, value}); }
Id Builder::barrier() { return emit(Op::Barrier, Type()); }

Id Builder::open_block(Id owner, int which) {
  Id b = k_.add_block(owner);
  k_.insts[owner].blocks[which] = b;
  open_.push_back(b);
  return b;
}

Id Builder::begin_if(Id cond) {
  Id id = emit(Op::If, Type(), {cond});
  open_block(id, 0);
  return id;
}

void Builder::begin_else(Id if_inst) {
  end();
  open_block(if_inst, 1);
}

Id Builder::begin_for(Id begin, Id end_value, Id step) {
  Id id = emit(Op::For, type_of(end_value), {begin, end_value, step});
  open_block(id, 0);
  return id;
}

void Builder::end() {
  if (open_.size() > 1) open_.pop_back();
}

}  // namespace iron::ir
