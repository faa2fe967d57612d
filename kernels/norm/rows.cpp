// Host side of kernels/norm/rows.hpp: launch geometry and tolerance accounting of the row
// families (RMSNorm, fused residual-add RMSNorm, LayerNorm, softmax).
#include "rows.hpp"

#include <algorithm>
#include <cmath>

namespace iron::kernels::rows {

uint32_t row_vec(uint64_t d) { return d % 8 == 0 ? 8 : 1; }

RowLaunch row_launch(const std::string& family, Split split, uint32_t vec, uint64_t rows, uint64_t d, uint32_t tg,
                     uint32_t lane_width) {
  if (vec == 0 || d % vec != 0 || d / vec > UINT32_MAX || rows == 0 || rows > UINT32_MAX || tg == 0)
    throw Error(family + ": no " + split_name(split) + " launch for rows " + std::to_string(rows) + ", d " +
                std::to_string(d) + " at VEC " + std::to_string(vec) + " and threadgroup " + std::to_string(tg));
  RowLaunch l;
  l.kernel = family + "_" + split_name(split) + "_x" + std::to_string(vec);
  l.split = split;
  l.vec = vec;
  l.dv = uint32_t(d / vec);
  uint64_t per_group = split == Split::Warp ? std::max<uint32_t>(1, tg / lane_width) : 1;
  l.grid = {uint32_t((rows + per_group - 1) / per_group), 1, 1};
  l.threadgroup = {tg, 1, 1};
  return l;
}

RowLaunch pick_row_launch(const std::string& family, uint64_t rows, uint64_t d, uint32_t lane_width,
                          uint32_t max_threads) {
  const uint32_t vec = row_vec(d);
  const uint64_t dv = d / vec;
  const uint64_t held = held_chunks_of(vec, row_regs(family));
  if (dv <= uint64_t(lane_width) * held) return row_launch(family, Split::Warp, vec, rows, d, 256, lane_width);
  const uint64_t cap = std::max<uint32_t>(lane_width, max_threads / lane_width * lane_width);
  uint64_t threads = (dv + held - 1) / held;  // enough to hold the row
  if (rows < 128) threads *= 4;               // few rows: more threads per row, each holding less
  threads = (threads + lane_width - 1) / lane_width * lane_width;
  threads = std::clamp<uint64_t>(threads, lane_width, cap);
  return row_launch(family, Split::Block, vec, rows, d, uint32_t(threads), lane_width);
}

void check_row_call(const std::string& family, const Call& call, const DeviceInfo& dev) {
  const int64_t rows = call.size("rows"), d = call.size("d");
  if (rows < 1 || d < 1 || rows > int64_t(UINT32_MAX) || d > int64_t(UINT32_MAX) || uint64_t(rows) * uint64_t(d) > UINT32_MAX)
    throw Error(family + ": rows = " + std::to_string(rows) + ", d = " + std::to_string(d) +
                " is not a shape this family runs (1 <= rows, d and rows * d < 2^32: 32-bit element indices)");
  const DType t = call.dtype.t;
  if ((t == DType::F16 && !dev.f16) || (t == DType::BF16 && !dev.bf16))
    throw Error(family + ": the device " + dev.name + " has no " + dtype_name(t) + " storage; call it with f32");
}

LaunchPlan row_family_plan(const std::string& family, const Call& call, const DeviceInfo& dev, bool eps) {
  check_row_call(family, call, dev);
  const uint64_t rows = uint64_t(call.size("rows")), d = uint64_t(call.size("d"));
  RowLaunch l = pick_row_launch(family, rows, d, dev.lane_width, dev.max_threads_per_group);
  LaunchPlan plan;
  LaunchStep step{l.kernel, l.grid, l.threadgroup, {{"rows", uint32_t(rows)}, {"dv", l.dv}}, {}};
  if (eps) step.constexprs["eps"] = call.scalar("eps");
  plan.steps.push_back(std::move(step));
  const uint64_t per_thread = (uint64_t(l.dv) + (l.split == Split::Warp ? dev.lane_width : l.threadgroup.x) - 1) /
                              (l.split == Split::Warp ? dev.lane_width : l.threadgroup.x) * l.vec;
  plan.reason = std::string(l.split == Split::Warp ? "a lane group per row" : "a threadgroup per row") + ", VEC " +
                std::to_string(l.vec) + (d % 8 ? " (d is not a multiple of 8)" : "") + ", " + std::to_string(per_thread) +
                " elements a thread" + (per_thread <= uint64_t(held_chunks_of(l.vec, row_regs(family))) * l.vec ? " (in registers)" : " (past the registers: re-read)");
  return plan;
}

void rms_norm_oracle(const std::vector<double>& h, const std::vector<double>& w, uint32_t rows, uint32_t d, double eps,
                     std::vector<double>& out) {
  for (uint32_t r = 0; r < rows; ++r) {
    const size_t at = size_t(r) * d;
    double ss = 0;
    for (uint32_t j = 0; j < d; ++j) ss += h[at + j] * h[at + j];
    const double scale = 1.0 / std::sqrt(ss / d + double(float(eps)));
    for (uint32_t j = 0; j < d; ++j) out[at + j] = h[at + j] * scale * w[j];
  }
}

double row_sum_rounding(Split split, uint64_t dv, uint32_t vec, uint32_t tg) {
  if (split == Split::Warp) return double((dv + 3) / 4 * vec) + 6;
  return group_sum_rounding(dv, tg) - double((dv + tg - 1) / tg) + double((dv + tg - 1) / tg * vec);
}

double call_sum_rounding(uint64_t d) {
  const uint32_t vec = row_vec(d);
  const uint64_t dv = d / vec;
  const uint64_t chunks = std::max<uint64_t>(kRowRegs / vec, (dv + 255) / 256);
  return double(chunks * vec) + 30;
}

}  // namespace iron::kernels::rows
