// The pipeline: runs the passes in passes.def order with the controls of `iron inspect`
// (--verify-each, --print-after, --stop-after, --time-passes, per-pass statistics).
#include <chrono>
#include <cstdlib>

#include "passes/pass.hpp"

namespace iron::passes {

namespace {
struct Entry {
  const char* name;
  bool (*fn)(ir::Kernel&, PassContext&);
};
const Entry kPasses[] = {
#define IRON_PASS(name) {#name, &run_##name},
#include "passes/passes.def"
#undef IRON_PASS
};
}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Entry& e : kPasses) v.push_back(e.name);
    return v;
  }();
  return names;
}

PipelineResult run_pipeline(ir::Kernel& k, const PipelineOptions& opts) {
  PipelineResult result;
  PassContext ctx;
  ctx.rewrite_budget = opts.rewrite_budget;
  ctx.mutation = opts.mutation;
  ctx.launch = opts.launch;
  ctx.specialize = opts.specialize;
  if (ctx.mutation.empty())
    if (const char* env = std::getenv("IRON_PASS_MUTATION")) ctx.mutation = env;
  if (ctx.rewrite_budget < 0)
    if (const char* env = std::getenv("IRON_OPT_BISECT")) ctx.rewrite_budget = std::strtoll(env, nullptr, 10);
  bool print_all = opts.print_after.count("all") != 0;
  // Every pass walks blocks recursively; the nesting limit bounds that recursion. It is checked
  // on the input (a kernel that skipped the verifier) and after each pass (inlining deepens).
  auto too_deep = [&](const char* when) {
    size_t depth = ir::nesting_depth(k);
    if (depth <= ir::kMaxNesting) return false;
    result.diags.error({}, std::string(when) + ": if/for nesting is " + std::to_string(depth) +
                               " levels deep; the IR allows at most " + std::to_string(ir::kMaxNesting));
    return true;
  };
  if (too_deep("before the pipeline")) return result;
  for (const Entry& e : kPasses) {
    PassRecord rec;
    rec.name = e.name;
    rec.ops_before = op_count(k);
    if (!opts.disabled.count(e.name)) {
      ctx.stats.clear();
      size_t diags_before = ctx.diags.items.size();
      auto start = std::chrono::steady_clock::now();
      rec.changed = e.fn(k, ctx);
      rec.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      rec.ran = true;
      rec.stats = ctx.stats;
      for (size_t i = diags_before; i < ctx.diags.items.size(); ++i) {
        ir::Diagnostic d = ctx.diags.items[i];
        d.message = std::string(e.name) + ": " + d.message;
        result.diags.items.push_back(d);
      }
      if (result.diags.empty()) too_deep((std::string("after pass ") + e.name).c_str());
      if (opts.verify_each && result.diags.empty()) {
        ir::Diagnostics v;
        if (!ir::verify(k, v))
          for (ir::Diagnostic d : v.items) {
            d.message = std::string("verifier failed after pass ") + e.name + ": " + d.message;
            result.diags.items.push_back(d);
          }
      }
    }
    rec.ops_after = op_count(k);
    if (print_all || opts.print_after.count(e.name)) rec.ir_after = ir::print(k);
    result.passes.push_back(std::move(rec));
    if (!result.diags.empty() || opts.stop_after == e.name) break;
  }
  return result;
}

ir::Kernel optimize(const ir::Kernel& k, const LaunchFacts& launch, const Specialization& spec) {
  ir::Kernel out = k;
  PipelineOptions opts;
  opts.launch = launch;
  opts.specialize = spec;
  PipelineResult r = run_pipeline(out, opts);
  if (!r.ok()) throw Error("optimization pipeline failed for kernel '" + k.name + "':\n" + r.diags.render(out));
  // A pass bug must stop here, not reach an emitter: the output is verified once, always.
  ir::Diagnostics v;
  if (!ir::verify(out, v))
    throw Error("the optimization pipeline produced invalid IR for kernel '" + k.name + "' (a pass bug; bisect with "
                "IRON_OPT_BISECT=N or iron inspect --verify-each):\n" + v.render(out));
  return out;
}

}  // namespace iron::passes
