// The per-target lowering stage: after the backend-neutral pipeline, before emission. It rewrites
// what the target's profile fixes and reports, located, what the target cannot run.
#include "codegen/codegen.hpp"

namespace iron::codegen {

ir::Diagnostics lower_for_target(ir::Kernel& k, Instantiation dtype, const TargetProfile& p) {
  ir::Diagnostics diags;
  const TargetInfo& info = target_info(p.target);
  // Dtypes the target neither computes nor stores: named with the first op that uses one.
  ir::walk(k, [&](ir::Id id) {
    ir::Inst& in = k.insts[id];
    const DType d = ir::resolve(in.type.elem(), dtype);
    if (d != DType::Void && !p.supports(d) && diags.empty())
      diags.error(in.loc, std::string("the ") + info.language + " target (" + p.arch + ") has no " + dtype_name(d) +
                              " values, which '" + ir::mnemonic(in.op) + "' in kernel " + k.name + " uses");
    // A lane width the profile fixes is a constant of the code: lane_width folds to it.
    if (in.op == ir::Op::LaneWidth && p.lane_width != 0) {
      in.op = ir::Op::Const;
      in.attrs.clear();
      in.set(ir::Attr::Value, int64_t(p.lane_width));
    }
  });
  for (size_t i = 0; i < k.params.size() && diags.empty(); ++i) {
    const DType d = ir::resolve(k.params[i].dtype, dtype);
    if (!p.supports(d))
      diags.error({}, std::string("the ") + info.language + " target (" + p.arch + ") has no " + dtype_name(d) +
                          " buffers or scalars, which parameter '" + k.params[i].name + "' of kernel " + k.name + " is");
  }
  // Threadgroup memory of fixed size beyond what the target gives a threadgroup even with an
  // opt-in: named with the largest array (arrays sized at dispatch are checked per dispatch).
  if (p.max_shared_bytes != 0) {
    const uint64_t bytes = ir::threadgroup_bytes(k, dtype);
    if (bytes > p.max_shared_bytes) {
      ir::Id largest = ir::kNone;
      uint64_t most = 0;
      for (ir::Id id : ir::threadgroup_layout(k)) {
        const uint64_t b = ir::tg_elem_bytes(k.insts[id], dtype) * uint64_t(k.insts[id].attr(ir::Attr::Count));
        if (b > most) most = b, largest = id;
      }
      diags.error(largest == ir::kNone ? ir::SrcLoc{} : k.insts[largest].loc,
                  "kernel " + k.name + " (" + instantiation_name(dtype) + ") needs " + std::to_string(bytes) +
                      " bytes of threadgroup memory; " + info.language + " on " + p.arch + " gives a threadgroup at most " +
                      std::to_string(p.max_shared_bytes));
    }
  }
  return diags;
}

}  // namespace iron::codegen
