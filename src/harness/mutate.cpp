// The mutation catalogue (see mutate.hpp). Each mutation edits a copy of the traced IR: it adds
// instructions just before the mutated one in the same block (so every new value dominates its
// use) and never removes a value something uses.
#include "harness/mutate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "core/numeric.hpp"
#include "harness/runner.hpp"
#include "passes/eval.hpp"
#include "passes/pass.hpp"

namespace iron::mutate {
namespace {

using ir::Id;
using ir::Inst;
using ir::Kernel;
using ir::Op;

// Where an instruction sits: its block and index there.
struct Place {
  Id block = 0;
  size_t index = 0;
};
std::map<Id, Place> places(const Kernel& k) {
  std::map<Id, Place> out;
  for (Id b = 0; b < k.blocks.size(); ++b)
    for (size_t i = 0; i < k.blocks[b].insts.size(); ++i) out[k.blocks[b].insts[i]] = {b, i};
  return out;
}

// Adds `in` just before instruction `before` (same block, same location); returns its id.
Id insert_before(Kernel& k, Id before, Inst in) {
  Place p = places(k).at(before);
  in.loc = k.insts[before].loc;
  Id id = k.add_inst(in);
  auto& v = k.blocks[p.block].insts;
  v.insert(v.begin() + std::ptrdiff_t(p.index), id);
  return id;
}

Id add_const(Kernel& k, Id before, DType t, int64_t i, double f) {
  Inst c;
  c.op = Op::Const;
  c.type = t;
  c.set(ir::Attr::Value, i);
  c.set_float(ir::Attr::Value, f);
  return insert_before(k, before, c);
}

Id add_binary(Kernel& k, Id before, Op op, DType t, Id a, Id b) {
  Inst in;
  in.op = op;
  in.type = t;
  in.operands.resize(2);
  in.operands[0] = a;
  in.operands[1] = b;
  return insert_before(k, before, in);
}

bool is_int(DType t) { return t == DType::U32 || t == DType::I32; }
bool is_narrow(DType t) { return t == DType::F16 || t == DType::BF16 || is_fp8(t) || t == DType::Generic; }
bool is_wide_value(DType t) { return t == DType::F32 || t == DType::Generic; }  // computed in f32 registers

// The program order of `k` (pre-order walk) and, per instruction, whether it sits in a loop.
struct Order {
  std::vector<Id> ids;
  std::map<Id, bool> in_loop;
};
Order order_of(const Kernel& k) {
  Order o;
  std::function<void(Id, bool)> visit = [&](Id b, bool loop) {
    for (Id id : k.blocks[b].insts) {
      o.ids.push_back(id);
      o.in_loop[id] = loop;
      const Inst& in = k.insts[id];
      for (Id cb : in.blocks)
        if (cb != ir::kNone) visit(cb, loop || in.op == Op::For);
    }
  };
  visit(0, false);
  return o;
}

// A barrier orders memory accesses of different threads: an access before it and an access
// after it to the same threadgroup array or global buffer, at least one of them a write. Outside
// every loop, a barrier with no such pair between the neighbouring barriers (or the start and
// end of the kernel) orders nothing, so dropping it cannot change behaviour; the proof names the
// locations on each side.
std::string barrier_orders_nothing(const Kernel& k, Id id) {
  Order o = order_of(k);
  if (o.in_loop.at(id)) return "";
  struct Use {
    bool read = false, write = false;
  };
  auto location = [&](const Inst& in, std::string& name, bool& write) {
    switch (in.op) {
      case Op::TgLoad:
      case Op::TgStore: {
        const Inst& a = k.insts[in.operands[0]];
        name = "threadgroup array '" + (uint64_t(a.attr(ir::Attr::Name)) < k.strings.size() ? k.strings[size_t(a.attr(ir::Attr::Name))] : std::string("?")) + "'";
        write = in.op == Op::TgStore;
        return true;
      }
      case Op::Load:
      case Op::Store:
        name = "buffer '" + k.params[in.param()].name + "'";
        write = in.op == Op::Store;
        return true;
      default:
        // An atomic reads and writes its element.
        if (ir::is_global_atomic(in.op) || in.op == Op::AtomicAddPair) {
          name = "buffer '" + k.params[in.param()].name + "'";
          write = true;
          return true;
        }
        if (ir::is_tg_atomic(in.op)) {
          const Inst& a = k.insts[in.operands[0]];
          const uint64_t n = uint64_t(a.attr(ir::Attr::Name));
          name = "threadgroup array '" + (n < k.strings.size() ? k.strings[size_t(n)] : std::string("?")) + "'";
          write = true;
          return true;
        }
        return false;
    }
  };
  auto pos = std::find(o.ids.begin(), o.ids.end(), id);
  std::map<std::string, Use> before, after;
  for (auto it = pos; it != o.ids.begin();) {
    --it;
    if (k.insts[*it].op == Op::Barrier) break;
    std::string name;
    bool write = false;
    if (location(k.insts[*it], name, write)) (write ? before[name].write : before[name].read) = true;
  }
  for (auto it = pos + 1; it != o.ids.end(); ++it) {
    if (k.insts[*it].op == Op::Barrier) break;
    std::string name;
    bool write = false;
    if (location(k.insts[*it], name, write)) (write ? after[name].write : after[name].read) = true;
  }
  for (const auto& [name, b] : before) {
    auto a = after.find(name);
    if (a != after.end() && (b.write || a->second.write)) return "";
  }
  auto list = [](const std::map<std::string, Use>& m) {
    std::string s;
    for (const auto& [name, u] : m) s += (s.empty() ? "" : ", ") + name + (u.write ? " (written)" : " (read)");
    return s.empty() ? std::string("nothing") : s;
  };
  return "it is in no loop, and no location accessed before it (since the previous barrier: " + list(before) +
         ") is accessed after it (until the next barrier: " + list(after) +
         ") with a write on either side, so it orders nothing";
}

// An add, sub, mul or div on T: an op whose result the op itself rounds to T.
bool rounds_itself(const Inst& in) {
  return in.type == DType::Generic && (in.op == Op::Add || in.op == Op::Sub || in.op == Op::Mul || in.op == Op::Div);
}

// "" or why a value stored into a T buffer is a T value already, so that rounding it to T, in
// either direction, returns it unchanged: it is a constant every T holds exactly, was loaded from
// a T buffer, computed by an op on T (which rounds to T), or read from a T threadgroup array every store of which holds such a
// load (a copy, as in a transpose).
std::string already_a_t_value(const Kernel& k, Id value) {
  auto t_buffer_load = [&](Id v) {
    const Inst& in = k.insts[v];
    return in.op == Op::Load && in.param() < k.params.size() && k.params[in.param()].dtype == DType::Generic;
  };
  const Inst& in = k.insts[value];
  // A constant every dtype T may take holds exactly (0 in a zero fill): no rounding changes it.
  if (in.op == Op::Const && !k.dtypes.empty()) {
    const double v = is_float(in.type.elem()) ? in.fattr(ir::Attr::Value) : double(in.attr(ir::Attr::Value));
    bool exact = true;
    for (DType t : k.dtypes) exact = exact && fixture::round_to(t, v) == v;
    if (exact) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", v);
      return std::string("the stored value is the constant ") + text +
             ", which every dtype T takes holds exactly, so no rounding to T changes it";
    }
  }
  if (t_buffer_load(value))
    return "the stored value is loaded from T buffer '" + k.params[in.param()].name +
           "', so it is a T value already and no rounding to T changes it";
  // Every op on T gives a T value (docs/semantics.md, "16-bit float arithmetic"); the mutant
  // rounds an add, sub, mul or div itself toward zero instead (rounds_itself).
  if (in.type == DType::Generic && eval::is_pure_evaluable(in.op) && !rounds_itself(in))
    return std::string("the stored value is the result of '") + ir::mnemonic(in.op) +
           "' on T, which is a T value (an op on T rounds to T), so no rounding to T changes it";
  if (in.op != Op::TgLoad || k.insts[in.operands[0]].type != DType::Generic) return "";
  const Id alloc = in.operands[0];
  bool stored = false, all_loads = true;
  ir::walk(k, [&](Id id) {
    const Inst& s = k.insts[id];
    if (s.op != Op::TgStore || s.operands[0] != alloc) return;
    stored = true;
    all_loads = all_loads && t_buffer_load(s.operands[2]);
  });
  if (!stored || !all_loads) return "";
  const size_t name = size_t(k.insts[alloc].attr(ir::Attr::Name));
  return "the stored value is read from threadgroup array '" + (name < k.strings.size() ? k.strings[name] : "?") +
         "', every store to which holds a load from a T buffer, so it is a T value already and no rounding to T "
         "changes it";
}

struct Builder {
  const Kernel& k;
  std::vector<Mutant> out;
  std::map<Op, int> ordinal;  // per op, its occurrence number in program order
  std::map<Id, int> nth;

  explicit Builder(const Kernel& kernel) : k(kernel) {
    for (Id id : order_of(k).ids) nth[id] = ++ordinal[k.insts[id].op];
  }
  std::string name(Id id) const {
    return std::string(ir::mnemonic(k.insts[id].op)) + " #" + std::to_string(nth.at(id));
  }
  Mutant& add(const std::string& kind, Id id, const std::string& what) {
    Mutant m;
    m.kind = kind;
    m.site = k.where(k.insts[id].loc);
    m.detail = name(id) + ": " + what;
    m.kernel = k;
    out.push_back(std::move(m));
    return out.back();
  }
};

}  // namespace

const std::vector<std::string>& catalogue() {
  static const std::vector<std::string> c = {"loop_bound+1", "loop_bound-1", "dropped_barrier", "reduction_init",
                                             "swapped_operands", "rounding_toward_zero", "tail_guard", "stride"};
  return c;
}

// "" or why a stride or bound change of loop `id` cannot matter on this device: the group
// reductions' loop over the lane-group partials (begin lane_id, end num_simd_groups, step
// lane_width) runs at most once per lane when there are no more lane groups than lanes.
std::string single_trip_partials_loop(const Kernel& k, Id id, uint32_t lane_width, uint32_t max_threads) {
  const Inst& in = k.insts[id];
  if (k.insts[in.operands[0]].op != Op::LaneId || k.insts[in.operands[1]].op != Op::NumSimdGroups ||
      k.insts[in.operands[2]].op != Op::LaneWidth || lane_width == 0)
    return "";
  uint64_t groups = (uint64_t(max_threads) + lane_width - 1) / lane_width;
  if (groups > lane_width) return "";
  return "the loop runs from lane_id to num_simd_groups by lane_width, and this device has at most " +
         std::to_string(groups) + " lane groups (" + std::to_string(max_threads) + " threads / lane width " +
         std::to_string(lane_width) + "), no more than its lanes, so no lane runs it twice";
}

std::vector<Mutant> enumerate(const Kernel& k, uint32_t lane_width, uint32_t max_threads) {
  Builder b(k);
  const std::vector<Id> ids = order_of(k).ids;

  // Loop bound +-1: for i in [begin, end) becomes [begin, end + 1) / [begin, end - 1).
  for (int delta : {+1, -1})
    for (Id id : ids) {
      const Inst& in = k.insts[id];
      if (in.op != Op::For) continue;
      Mutant& m = b.add(delta > 0 ? "loop_bound+1" : "loop_bound-1", id,
                        delta > 0 ? "end -> end + 1" : "end -> end - 1");
      DType t = in.type.elem();
      Id one = add_const(m.kernel, id, t, 1, 1.0);
      Id end = add_binary(m.kernel, id, delta > 0 ? Op::Add : Op::Sub, t, in.operands[1], one);
      m.kernel.insts[id].operands[1] = end;
    }

  // Dropped barrier.
  for (Id id : ids) {
    if (k.insts[id].op != Op::Barrier) continue;
    Mutant& m = b.add("dropped_barrier", id, "removed");
    Place p = places(m.kernel).at(id);
    auto& v = m.kernel.blocks[p.block].insts;
    v.erase(v.begin() + std::ptrdiff_t(p.index));
    m.equivalent = barrier_orders_nothing(k, id);
    // A barrier between the views of a threadgroup alias (docs/semantics.md "Threadgroup
    // aliases") cannot be dropped unseen: the verifier rejects the program, so it is no mutant
    // that runs.
    if (!ir::threadgroup_aliases(k).empty()) {
      ir::Diagnostics d;
      if (!ir::verify(m.kernel, d)) b.out.pop_back();
    }
  }

  // Reduction init: a var initialized with a constant (an accumulator's identity) starts from
  // the wrong value: -inf / +inf -> 0, 0 -> 1, anything else + 1.
  for (Id id : ids) {
    const Inst& in = k.insts[id];
    if (in.op != Op::Var) continue;
    const Inst& init = k.insts[in.operands[0]];
    if (init.op != Op::Const) continue;
    double f = init.fattr(ir::Attr::Value);
    int64_t i = init.attr(ir::Attr::Value);
    std::string what;
    if (is_float(init.type)) {
      double to = std::isinf(f) ? 0.0 : f == 0.0 ? 1.0 : f + 1.0;
      what = "init " + std::to_string(f) + " -> " + std::to_string(to);
      f = to;
    } else {
      // + 1 in the variable's own width: the largest value wraps to the smallest, as integer
      // arithmetic does (an accumulator of a minimum starts at 0xFFFFFFFF).
      const DType t = init.type.elem();
      const int64_t next = uint64_t(i) >= num::int_max(t) && i >= 0 ? num::int_min(t) : i + 1;
      what = "init " + std::to_string(i) + " -> " + std::to_string(next);
      i = next;
    }
    Mutant& m = b.add("reduction_init", id, what);
    Id c = add_const(m.kernel, id, init.type.elem(), i, f);
    m.kernel.insts[id].operands[0] = c;
  }

  // Swapped operands of a non-commutative binary op.
  for (Id id : ids) {
    const Inst& in = k.insts[id];
    static const Op kOps[] = {Op::Sub, Op::Div, Op::Rem, Op::Shl, Op::Shr, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Pow};
    if (std::find(std::begin(kOps), std::end(kOps), in.op) == std::end(kOps)) continue;
    Mutant& m = b.add("swapped_operands", id, "a, b -> b, a");
    std::swap(m.kernel.insts[id].operands[0], m.kernel.insts[id].operands[1]);
    if (in.operands[0] == in.operands[1]) m.equivalent = "both operands are the same value";
  }

  // Rounding toward zero of a narrowing conversion (an f32 value cast to, or stored into, a
  // 16-bit or T-typed destination), built from IR ops so it works at every T: r = the value
  // rounded to T (to nearest even); where |r| > |value| the rounding went away from zero, and
  // the result is r's neighbour toward zero, r * (1 - 2^-p) rounded to T, with p the precision
  // of T found by probing it (1 + 2^-10 rounds to 1 only in bf16, 1 + 2^-20 survives only in
  // f32). At T = f32 nothing is narrowed and the mutant computes the kernel's own values.
  auto narrow = [&](Id id, Id value, int operand, bool result_generic, DType target) {
    Mutant& m = b.add("rounding_toward_zero", id, "round to nearest even -> toward zero");
    Kernel& mk = m.kernel;
    auto un = [&](Op op, DType t, Id a) {
      Inst in;
      in.op = op;
      in.type = t;
      in.operands.resize(1);
      in.operands[0] = a;
      return insert_before(mk, id, in);
    };
    auto f32c = [&](double v) { return add_const(mk, id, DType::F32, 0, v); };
    // The destination's dtype: T itself where it is generic (probed below), else the concrete
    // 16-bit or fp8 dtype (a kernel without T must not gain a use of it).
    const DType T = target;
    // An add, sub, mul or div on T rounds to T itself (docs/semantics.md): the mutant computes it
    // in f32 and rounds that toward zero instead.
    Id v = k.insts[value].type == DType::F32 ? value : un(Op::Cast, DType::F32, value);
    if (const Inst& op = k.insts[value]; rounds_itself(op))
      v = add_binary(mk, id, op.op, DType::F32, un(Op::Cast, DType::F32, op.operands[0]),
                     un(Op::Cast, DType::F32, op.operands[1]));
    Id r = un(Op::Cast, DType::F32, un(Op::Cast, T, v));
    Id is_bf16 = add_binary(mk, id, Op::Eq, DType::Bool, un(Op::Cast, DType::F32, un(Op::Cast, T, f32c(1.0 + 0x1p-10))), f32c(1.0));
    Id is_f32 = add_binary(mk, id, Op::Ne, DType::Bool, un(Op::Cast, DType::F32, un(Op::Cast, T, f32c(1.0 + 0x1p-20))), f32c(1.0));
    auto select = [&](Id c, Id a, Id bb) {
      Inst in;
      in.op = Op::Select;
      in.type = DType::F32;
      in.operands.resize(3);
      in.operands[0] = c;
      in.operands[1] = a;
      in.operands[2] = bb;
      return insert_before(mk, id, in);
    };
    // fp8: 1 + 2^-4 rounds to 1 in both formats (not in bf16), 1 + 2^-3 only in e5m2.
    Id is_fp8 = add_binary(mk, id, Op::Eq, DType::Bool, un(Op::Cast, DType::F32, un(Op::Cast, T, f32c(1.0 + 0x1p-4))), f32c(1.0));
    Id is_e5m2 = add_binary(mk, id, Op::Eq, DType::Bool, un(Op::Cast, DType::F32, un(Op::Cast, T, f32c(1.0 + 0x1p-3))), f32c(1.0));
    Id below_one = select(is_f32, f32c(1.0 - 0x1p-24),
                          select(is_e5m2, f32c(1.0 - 0x1p-3),
                                 select(is_fp8, f32c(1.0 - 0x1p-4),
                                        select(is_bf16, f32c(1.0 - 0x1p-8), f32c(1.0 - 0x1p-11)))));
    Id toward = un(Op::Cast, DType::F32, un(Op::Cast, T, add_binary(mk, id, Op::Mul, DType::F32, r, below_one)));
    Id away = add_binary(mk, id, Op::Gt, DType::Bool, un(Op::Abs, DType::F32, r), un(Op::Abs, DType::F32, v));
    Id result = select(away, toward, r);
    mk.insts[id].operands[operand] = result_generic ? un(Op::Cast, k.insts[value].type.elem(), result) : result;
  };
  for (Id id : ids) {
    const Inst& in = k.insts[id];
    // A T that may be an integer is not rounded (a float -> integer cast truncates by definition).
    auto narrowable = [&](DType t) { return is_narrow(t) && ir::float_everywhere(k, t); };
    if (in.op == Op::Cast && narrowable(in.type.elem()) && k.insts[in.operands[0]].type.elem() == DType::F32)
      narrow(id, in.operands[0], 0, false, in.type.elem());
    if (in.op == Op::Store && narrowable(k.params[in.param()].dtype) && is_wide_value(k.insts[in.operands[1]].type.elem()) &&
        k.insts[in.operands[1]].op != Op::Cast) {
      narrow(id, in.operands[1], 1, k.insts[in.operands[1]].type != DType::F32, k.params[in.param()].dtype);
      b.out.back().equivalent = already_a_t_value(k, in.operands[1]);
    }
  }

  // Tail guard: a < b becomes a <= b.
  for (Id id : ids) {
    if (k.insts[id].op != Op::Lt) continue;
    Mutant& m = b.add("tail_guard", id, "a < b -> a <= b");
    m.kernel.insts[id].op = Op::Le;
  }

  // Stride: an integer index multiplier or offset that is a constant is off by one, and a loop
  // step grows by one.
  for (Id id : ids) {
    const Inst& in = k.insts[id];
    if ((in.op == Op::Mul || in.op == Op::Add) && is_int(in.type.elem())) {
      for (int o = 0; o < 2; ++o) {
        const Inst& c = k.insts[in.operands[o]];
        if (c.op != Op::Const) continue;
        Mutant& m = b.add("stride", id, "constant " + std::to_string(c.attr(ir::Attr::Value)) + " -> " + std::to_string(c.attr(ir::Attr::Value) + 1));
        Id nc = add_const(m.kernel, id, c.type.elem(), c.attr(ir::Attr::Value) + 1, double(c.attr(ir::Attr::Value) + 1));
        m.kernel.insts[id].operands[o] = nc;
        break;
      }
    }
    if (in.op == Op::For) {
      Mutant& m = b.add("stride", id, "step -> step + 1");
      m.equivalent = single_trip_partials_loop(k, id, lane_width, max_threads);
      Id one = add_const(m.kernel, id, in.type.elem(), 1, 1.0);
      Id step = add_binary(m.kernel, id, Op::Add, in.type.elem(), in.operands[2], one);
      m.kernel.insts[id].operands[2] = step;
    }
  }
  return std::move(b.out);
}

std::string equivalent_after_pipeline(const Kernel& original, const Mutant& m) {
  try {
    Kernel a = passes::optimize(original);
    Kernel b = passes::optimize(m.kernel);
    if (ir::print(a) == ir::print(b))
      return "the pipeline turns it into the same optimized IR as the original, so every backend runs the same "
             "program";
  } catch (const std::exception&) {
  }
  return "";
}

Outcome run_mutant(Context& ctx, const Kernel& original, const Mutant& m, const std::vector<const TestDecl*>& cases,
                   std::optional<Instantiation> only) {
  Outcome o;
  o.by = m.equivalent.empty() ? equivalent_after_pipeline(original, m) : m.equivalent;
  if (!o.by.empty()) {
    o.status = Outcome::Status::Equivalent;
    return o;
  }
  for (const TestDecl* t : cases)
    for (const DtypeTolerance& dt : t->dtypes) {
      if (!dtype_filter_matches(only, dt.dtype)) continue;
      TestOutcome r = run_test_case(ctx, *t, dt.dtype, dt.tol, &m.kernel);
      // A case this device cannot run (it needs more threadgroup memory) neither kills nor passes.
      if (r.status == TestOutcome::Status::Pass || r.status == TestOutcome::Status::Skip) continue;
      std::string msg = r.message.substr(0, r.message.find('\n'));
      if (msg.size() > 160) msg = msg.substr(0, 157) + "...";
      o.status = Outcome::Status::Killed;
      o.by = std::string(t->name) + " [" + instantiation_name(dt.dtype) + "]: " + msg;
      o.killer = t;
      o.killer_dtype = dt;
      o.context_lost = r.message.find("this error is sticky") != std::string::npos;
      return o;
    }
  o.status = Outcome::Status::Survived;
  return o;
}

}  // namespace iron::mutate
