// The pass interface, the pipeline and the shared rewrite helpers every pass uses. A pass is
// a free function `bool run_<name>(ir::Kernel&, PassContext&)` returning whether it changed
// the kernel; it walks the entry block and every child block through the helpers below.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir.hpp"

namespace iron::passes {

// Launch facts: what the pipeline may assume about the launch the code is built for. They
// enter through PipelineOptions::launch (from Context, which builds one pipeline per
// threadgroup shape where the device bakes the shape in: CUDA and Vulkan) and reach the passes
// through PassContext::launch. threadgroup[axis] is the threadgroup size along that axis, 0
// when unknown (the interpreter, `iron opt` without --threadgroup): const_fold then leaves
// group_size alone.
struct LaunchFacts {
  uint32_t threadgroup[3] = {0, 0, 0};
  bool known() const { return threadgroup[0] != 0; }
};

// Specialization: scalar parameters whose dispatch value is baked into the code (Param::
// specialize; Context passes the values of a dispatch, `iron inspect --specialize d=4096` its
// own). Each entry is a parameter index and its launch bits (f32 and 32-bit integers in the low
// 4 bytes, as rt::LaunchArgs::scalars). const_fold rewrites every read of such a parameter into
// the constant first, so loops bounded by it get constant trip counts. The parameter stays in
// the kernel's signature: the launch still passes it, the code no longer reads it.
struct Specialization {
  std::vector<std::pair<uint32_t, uint64_t>> values;
  bool empty() const { return values.empty(); }
  // The bits of parameter p; false when p is not specialized.
  bool find(uint32_t p, uint64_t& bits) const {
    for (const auto& [param, b] : values)
      if (param == p) return bits = b, true;
    return false;
  }
};

struct PassContext {
  LaunchFacts launch;  // see LaunchFacts
  Specialization specialize;  // see Specialization
  std::map<std::string, int64_t> stats;  // "cse.unified" -> count, for --stats
  ir::Diagnostics diags;                 // errors a pass found (type_check, kernel_inline)
  // Bisection: the number of rewrites still allowed (-1: unlimited). IRON_OPT_BISECT=N stops
  // every pass after N rewrites in total, so a miscompile can be narrowed to one rewrite.
  int64_t rewrite_budget = -1;
  // Mutation testing: the name of one known-bad behaviour to switch on (e.g. "cse.ignore_scope";
  // each pass documents its own). Tests enable it to prove they catch a broken pass; it is
  // also read from IRON_PASS_MUTATION. Empty in normal use.
  std::string mutation;

  bool mutant(const char* name) const { return !mutation.empty() && mutation == name; }
  void stat(const std::string& key, int64_t n = 1) { stats[key] += n; }
  bool allow_rewrite() {
    if (rewrite_budget == 0) return false;
    if (rewrite_budget > 0) --rewrite_budget;
    return true;
  }
};

#define IRON_PASS(name) bool run_##name(ir::Kernel& k, PassContext& ctx);
#include "passes/passes.def"
#undef IRON_PASS

const std::vector<std::string>& pass_names();

struct PipelineOptions {
  bool verify_each = false;              // run the verifier after every pass
  std::set<std::string> print_after;     // pass names, or "all"
  std::string stop_after;                // last pass to run ("" = all)
  std::set<std::string> disabled;        // passes to skip (differential testing)
  bool time_passes = false;
  int64_t rewrite_budget = -1;
  std::string mutation;  // see PassContext::mutation
  LaunchFacts launch;    // see LaunchFacts
  Specialization specialize;  // see Specialization
};

struct PassRecord {
  std::string name;
  double ms = 0;
  size_t ops_before = 0, ops_after = 0;
  bool changed = false;
  bool ran = false;
  std::map<std::string, int64_t> stats;
  std::string ir_after;  // filled for passes named in print_after
};

struct PipelineResult {
  std::vector<PassRecord> passes;
  ir::Diagnostics diags;  // pass errors and verifier failures, naming the pass
  bool ok() const { return diags.empty(); }
};

// Runs the pipeline in place. Never throws for a malformed kernel: problems land in diags.
PipelineResult run_pipeline(ir::Kernel& k, const PipelineOptions& opts = {});
// The default pipeline on a copy; throws iron::Error with the diagnostics on failure.
ir::Kernel optimize(const ir::Kernel& k, const LaunchFacts& launch = {}, const Specialization& spec = {});

// kernel_inline's view of the device-function registry (which lives above this layer).
using FunctionResolver = const ir::Kernel* (*)(std::string_view name);
void set_function_resolver(FunctionResolver fn);
FunctionResolver function_resolver();

// ---- Shared rewrite helpers (rewrite.cpp) -------------------------------------------------

// Every block reachable from the entry block, parents before children.
std::vector<ir::Id> reachable_blocks(const ir::Kernel& k);
// For each instruction id: the block that holds it, or kNone when unreachable.
std::vector<ir::Id> block_of(const ir::Kernel& k);
// Operand uses per value, counted over reachable instructions.
std::vector<uint32_t> use_counts(const ir::Kernel& k);
// Rewrites every operand `from` into `to` in reachable instructions; returns the count.
size_t replace_all_uses(ir::Kernel& k, ir::Id from, ir::Id to);
// Maps the operands of `in` through `repl` (kNone: keep). A pass that replaces many values in
// one program-order walk records each replacement in `repl` and maps every instruction's
// operands when it reaches it (uses follow their definitions): linear, where replace_all_uses
// per value is quadratic.
void map_operands(ir::Inst& in, const std::vector<ir::Id>& repl);
// Reachable instruction count (the "op count" of --stats).
size_t op_count(const ir::Kernel& k);
// Pure in the sense of a rewrite: no side effect, no memory read, not a built-in whose value
// depends on where it executes (lane ops are convergent and are not pure).
bool is_pure_value(const ir::Inst& in);
// The block holding the If/For that owns block `b` (kNone for the entry block), using block_of().
ir::Id parent_block(const ir::Kernel& k, const std::vector<ir::Id>& where, ir::Id b);
// True when `in` may run where the original program would not have run it (hoisted out of a loop
// that might run zero times, or out of an untaken branch): a pure value that cannot fault or be
// undefined — no integer division or remainder, no shift unless by a constant below 32.
bool safe_to_speculate(const ir::Kernel& k, const ir::Inst& in);
// True when block `inner` is `outer` or nested (through If/For) inside it.
bool block_within(const ir::Kernel& k, const std::vector<ir::Id>& where, ir::Id inner, ir::Id outer);
// Rebuilds every reachable block without the instructions for which `drop(id)` is true.
size_t remove_insts(ir::Kernel& k, const std::vector<uint8_t>& drop);
// Deep-copies block `b` (and its children) into new blocks owned by `new_parent`, remapping
// operands through `map` (value ids defined inside the copy are added to it). Returns the new block.
ir::Id clone_block(ir::Kernel& k, ir::Id b, ir::Id new_parent, std::map<ir::Id, ir::Id>& map);
// True when value v is provably a multiple of m (a power of two) in its integer type's
// arithmetic: constants, products, sums and shifts of such values, x & ~(m-1), and scalar
// parameters that declare multiple_of(m') with m' a multiple of m (their dispatches are checked).
bool known_multiple_of(const ir::Kernel& k, ir::Id v, int64_t m);
// Builds a constant instruction (not placed in any block).
ir::Id make_const(ir::Kernel& k, DType type, int64_t i, double f, ir::SrcLoc loc);

}  // namespace iron::passes
