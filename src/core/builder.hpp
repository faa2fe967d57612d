// ir::Builder: the one way new IR is assembled. It keeps an insertion point (a stack of open
// blocks) and a current source location, and appends instructions with their operands,
// attributes and result types filled in. Structured control flow opens and closes blocks:
//
//   Builder b(kernel);
//   Id c = b.binary(Op::Lt, tid, n);
//   Id iff = b.begin_if(c);          // instructions now go to the then block
//   ...
//   b.begin_else(iff);               // ... and now to the else block
//   ...
//   b.end();                         // back after the if
//   Id i = b.begin_for(begin, end, step);   // the for's value is its induction variable
//   ...
//   b.end();
//
// The builder checks nothing beyond its own bookkeeping: the verifier judges the result.
// Instructions are appended in call order; C++ does not specify the order in which nested
// argument calls run (b.binary(Op::Add, b.var_load(v), b.load(...))), so build one value per
// statement wherever the order matters to a reader or to a snapshot.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "core/ir.hpp"

namespace iron::ir {

class Builder {
 public:
  explicit Builder(Kernel& k) : k_(k), open_{0} {}

  Kernel& kernel() { return k_; }
  Inst& inst(Id id) { return k_.insts[id]; }
  Type type_of(Id v) const { return k_.insts[v].type; }

  // Location given to every instruction created from now on.
  void set_loc(SrcLoc loc) { loc_ = loc; }
  SrcLoc loc() const { return loc_; }

  // The block receiving new instructions, and how many blocks are open above the entry block.
  Id block() const { return open_.back(); }
  size_t depth() const { return open_.size() - 1; }

  // Appends `op` to the current block. Returns its id (its value, when it defines one).
  Id emit(Op op, Type type, std::initializer_list<Id> operands = {});
  Id emit(Inst in);  // in.loc is kept when set, else the current location is used
  // Places an instruction at the top of the entry block (threadgroup allocations are hoisted
  // to function scope on every backend).
  Id emit_at_entry(Inst in);

  // Values.
  Id constant_int(DType type, int64_t value);
  Id constant_float(DType type, double value);
  Id constant(DType type, int64_t i, double f);  // i for integer and bool dtypes, f for floats
  Id param(uint32_t index, DType type);
  Id builtin(Op op, int axis = 0);  // the axis attribute only where the op has one
  Id builtin(Op op, int axis, DType type);  // the same with a result dtype other than u32 (thread_id64: u64)

  // Arithmetic: the result type is the first operand's (bool for comparisons).
  Id unary(Op op, Id a);
  Id binary(Op op, Id a, Id b);
  Id ternary(Op op, Id a, Id b, Id c);  // fma; select takes its type from operand 1
  Id cast(Id v, Type to);

  // Memory.
  Id load(uint32_t param, Type type, Id index);
  Id store(uint32_t param, Id index, Id value);
  Id tg_alloc(const std::string& name, Type type, uint64_t count);
  Id tg_load(Id alloc, Id index);
  Id tg_store(Id alloc, Id index, Id value);
  Id var(Type type, Id init);
  Id var_load(Id var);
  Id var_store(Id var, Id value);
  Id barrier();

  // Control flow. begin_* opens a block; end() closes the innermost one.
  Id begin_if(Id cond);
  void begin_else(Id if_inst);  // closes the then block and opens the else block
  Id begin_for(Id begin, Id end, Id step);  // the loop's type is `end`'s
  void end();
  // Opens block `which` (0 or 1) of control instruction `owner`, creating it; for callers that
  // trace a body themselves (the DSL) and close it with end().
  Id open_block(Id owner, int which);

 private:
  Kernel& k_;
  std::vector<Id> open_;
  SrcLoc loc_;
};

}  // namespace iron::ir
