// Nucleus (top-p) sampling from logits [rows, vocab] (T = f32, f16 or bf16) with a caller-supplied
// uniform number u[r] per row: deterministic (the same inputs give the same index on every run
// and backend up to f32 rounding of the masses, below). One threadgroup per row (mode Reduction;
// grid = {rows, 1, 1}, threadgroup = {tg, 1, 1}, tg a multiple of the lane width). The order is
// sampling.cpp's (order_key: -0 == +0, NaN above +inf; equal logits by index, lowest first).
#include <algorithm>
#include <cmath>
#include <vector>

#include <iron/iron.hpp>

#include "sampling.hpp"

namespace iron::kernels {
using namespace iron::dsl;

// ---- top-p. With m the row's largest logit, e_j = exp(x_j - m) (f32) and S = sum e_j, walk the
// row in the order above: the nucleus is the shortest prefix whose mass reaches
// max(min(top_p, 1) * S, 1) (so at least the first logit, whose e is exactly 1); with N its
// mass, the pick is the first logit of the nucleus whose prefix mass exceeds u[r] * N (for u < 1
// one always does; u >= 1 picks the nucleus's last logit). No sort: each boundary is found by
// bisection over the 64-bit position (key, ~index) (larger = earlier), one masked mass sum per
// bit, so every mass is the same fixed-order f32 sum and grows with the prefix. The row's largest
// logit is written to max_logit[r] (f32; with the log of S it gives log-probabilities). A row whose
// largest logit is +inf, NaN or -inf has no distribution: its index is 0xFFFFFFFF. Thread t takes
// the logits t, t + tg, ...; about 130 passes over the row (no fast path: top-p has no
// performance target yet).
static void top_p() {
  Expr rows = constexpr_("rows", u32);
  Expr vocab = constexpr_("vocab", u32);
  Expr top_p = constexpr_("top_p", f32);
  Buffer logits = input("logits", T, {rows, vocab});
  Buffer u = input("u", f32, {rows});
  Buffer index = output("index", u32, {rows});
  Buffer max_logit = output("max_logit", f32, {rows});

  Expr row = program_id(0);
  Var<u32> most = order_key(cast<f32>(logits[row * vocab + min(local_id(0), vocab - 1u)]));
  for_each_strided(logits, row, vocab, [&](Expr, Expr v) { most = max(most, order_key(v)); });
  Expr top_key = group_max_u32(most, "top_key");
  Expr m = bitcast<f32>(select(top_key >= 0x80000000u, top_key ^ 0x80000000u, ~top_key));  // exact
  auto position = [&](Expr key, Expr j) { return (cast<u64>(key) << 32u) | cast<u64>(~j); };
  // The mass of the logits at or before position p.
  auto mass_from = [&](Expr p) {
    Var<f32> sum = 0.0f;
    for_each_strided(logits, row, vocab, [&](Expr j, Expr v) {
      sum += select(position(order_key(v), j) >= p, exp(v - m), 0.0f);
    });
    return group_sum(sum);
  };
  // The last position p whose mass reaches (strict: exceeds) target, bit by bit from the top;
  // 0 when even the whole row does not. The shift amount stays in [0, 63].
  auto last_position = [&](Expr target, bool strict) {
    Var<u64> p = cast<u64>(0u);
    for_(0u, 64u, 1u, [&](Expr s) {
      Expr bit = cast<u64>(1u) << cast<u64>((63u - s) & 63u);
      Expr trial = p ^ bit;
      Expr mass = mass_from(trial);
      if_(strict ? mass > target : mass >= target, [&] { p = trial; });
    });
    return cast<u64>(p);
  };
  Var<f32> all = 0.0f;
  for_each_strided(logits, row, vocab, [&](Expr, Expr v) { all += exp(v - m); });
  Expr whole = group_sum(all);
  Expr nucleus_end = last_position(max(min(top_p, 1.0f) * whole, 1.0f), false);
  Expr nucleus = mass_from(nucleus_end);
  Expr pick = max(last_position(u[row] * nucleus, true), nucleus_end);
  Expr finite = (0xFF800000u > top_key) && (top_key > 0x007FFFFFu);  // not +inf or NaN, not -inf
  if_(local_id(0) == 0u, [&] {
    index[row] = select(finite, ~cast<u32>(pick & cast<u64>(0xFFFFFFFFu)), kNone);
    max_logit[row] = m;
  });
}
IRON_KERNEL(iron_top_p, top_p, Reduction, f32, f16, bf16);

// ---- Tests: the index is exact; max_logit is a copy of the largest logit.

namespace {

// The f64 top-p of one row, and how far its two decisions are from a boundary (relative to S):
// the mass before the chosen logit must lie clearly below the target and the mass through it
// clearly above, except where the comparison is exact in f32 too (the first logit's mass is 1
// exactly; with top_p >= 1 the nucleus is the whole row, whose mass is S on both sides).
struct TopP {
  uint32_t index;
  double margin;
};
TopP top_p_oracle(const std::vector<double>& x, size_t row, uint32_t vocab, double p, double u) {
  std::vector<uint32_t> order = sorted_row(x, row, vocab);
  const double* r = x.data() + row * vocab;
  const double m = r[order[0]];
  std::vector<double> cum(vocab);
  double s = 0;
  for (uint32_t j = 0; j < vocab; ++j) s += std::exp(r[j] - m);
  for (uint32_t i = 0; i < vocab; ++i) cum[i] = (i ? cum[i - 1] : 0.0) + std::exp(r[order[i]] - m);
  const double pf = double(float(p));
  const double target = std::max(std::min(pf, 1.0) * s, 1.0);
  uint32_t end = 0;
  while (end + 1 < vocab && cum[end] < target) ++end;
  double margin = 1.0;
  if (pf < 1.0) {
    if (end > 0) margin = std::min(margin, (target - cum[end - 1]) / s);
    if (!(end == 0 && target == 1.0)) margin = std::min(margin, (cum[end] - target) / s);
  }
  const double pick_target = u * cum[end];
  uint32_t pick = 0;
  while (pick < end && cum[pick] <= pick_target) ++pick;
  if (cum[pick] > pick_target) {
    margin = std::min(margin, (cum[pick] - pick_target) / s);
    if (pick > 0) margin = std::min(margin, (pick_target - cum[pick - 1]) / s);
  }
  return {order[pick], margin};
}

// Rows of logits with u per row; the case refuses inputs whose decisions lie within 1e-4 S of a
// boundary (f32 sums could then legitimately decide otherwise than the f64 oracle).
TestSetup top_p_case(DType dt, uint32_t rows, uint32_t vocab, double p, uint32_t tg, std::vector<double> x,
                     std::vector<double> u) {
  std::vector<double> rounded(x.size());
  for (size_t i = 0; i < x.size(); ++i) rounded[i] = fixture::round_to(dt, x[i]);
  for (uint32_t r = 0; r < rows; ++r)
    if (top_p_oracle(rounded, r, vocab, p, u[r]).margin < 1e-4)
      throw Error("top-p case: row " + std::to_string(r) + " decides within 1e-4 of a boundary; pick other inputs");
  return TestSetup(dt)
      .in("logits", std::move(x))
      .in("u", std::move(u))
      .out("index", rows)
      .out("max_logit", rows)
      .constexprs({{"rows", rows}, {"vocab", vocab}, {"top_p", p}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .error_floor(0x1p-126)
      .oracle([rows, vocab, p](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < rows; ++r) {
          out.at("index")[r] = top_p_oracle(in.at("logits"), r, vocab, p, in.at("u")[r]).index;
          const double* x = in.at("logits").data() + size_t(r) * vocab;
          out.at("max_logit")[r] = *std::max_element(x, x + vocab);
        }
      });
}

}  // namespace

// Threadgroups of 64 (two lane groups at lane width 32). p = 0.9 over 96 logits and 0.5 over 101
// with u spread over [0, 1); ties (the coarse grid) decided by index; u = 0 picks the first logit.
IRON_TEST_KERNEL(iron_top_p, rows5_v96_p0p9, {f32}, {f16}, {bf16}) {
  return top_p_case(dt, 5, 96, 0.9, 64, tied_logits(5, 96, 321), {0.05, 0.37, 0.0, 0.81, 0.55});
}
IRON_TEST_KERNEL(iron_top_p, rows4_v101_p0p5, {f32}, {bf16}) {
  return top_p_case(dt, 4, 101, 0.5, 64, fixture::uniform(4 * 101, -3.0, 3.0, 322), {0.12, 0.66, 0.93, 0.3});
}
// p = 1 (the whole row) and p = 0.01 (the first logit only), on threads past the row.
IRON_TEST_KERNEL(iron_top_p, rows3_v40_p1, {f32}, {bf16}) {
  return top_p_case(dt, 3, 40, 1.0, 64, fixture::uniform(3 * 40, -2.0, 2.0, 323), {0.71, 0.23, 0.48});
}
IRON_TEST_KERNEL(iron_top_p, rows2_v40_p0p01, {f32}, {bf16}) {
  return top_p_case(dt, 2, 40, 0.01, 64, fixture::uniform(2 * 40, -2.0, 2.0, 324), {0.5, 0.99});
}
// p = 0.4 where every logit counts: the two largest logits last in the row (row 0) and at 64 and
// 65 (row 1, a thread's second logit), where a pass that missed one would move the nucleus; a
// tie of the two largest at 0 and 1 (row 2: the nucleus ends at 0, and the tie at 1 must stay
// out of its mass); u = 1 (row 3: the nucleus's last logit); row 0 again with u = 0.3 (row 4:
// the pick is the first logit, the last of the row, before the nucleus's end).
IRON_TEST_KERNEL(iron_top_p, rows5_v80_p0p4_edges, {f32}, {f16}, {bf16}) {
  std::vector<double> x = fixture::uniform(5 * 80, -3.0, 0.0, 325);
  x[79] = 3, x[78] = 2.9;
  x[80 + 64] = 3, x[80 + 65] = 2.9;
  for (uint32_t j = 0; j < 80; ++j) x[160 + j] = j < 2 ? 1.0 : -10.0;
  for (uint32_t j = 0; j < 80; ++j) x[240 + j] = x[240 + j] * 2 / 3 + 1;
  for (uint32_t j = 0; j < 80; ++j) x[320 + j] = x[j];
  return top_p_case(dt, 5, 80, 0.4, 64, std::move(x), {0.7, 0.7, 0.9, 1.0, 0.3});
}
// A threadgroup of 128 (16 lane groups at lane width 8): the largest logit owned by lane group 8
// (index 66) and by the last lane group (index 127), in rows of 200.
IRON_TEST_KERNEL(iron_top_p, rows2_v200_p0p6_tg128, {f32}) {
  std::vector<double> x = fixture::uniform(2 * 200, -2.0, 1.0, 327);
  x[66] = 2.5;
  x[200 + 127] = 2.5;
  return top_p_case(dt, 2, 200, 0.6, 128, std::move(x), {0.4, 0.6});
}

// Through the selector: p = 0.9 over 3 rows of 300.
IRON_TEST_KERNEL(iron_top_p, call_rows3_v300_p0p9, {f32}, {bf16}) {
  TestSetup t = top_p_case(dt, 3, 300, 0.9, 64, fixture::uniform(3 * 300, -3.0, 3.0, 326), {0.2, 0.5, 0.85});
  return TestSetup(dt)
      .in("logits", t.inputs().at("logits"))
      .in("u", t.inputs().at("u"))
      .out("index", 3)
      .out("max_logit", 3)
      .call({{"rows", 3}, {"vocab", 300}, {"top_p", 0.9}})
      .error_floor(t.floor())
      .oracle(t.oracle_fn());
}

// top_p_for {rows, vocab, top_p}: one threadgroup per row, a thread per logit up to 256 (the
// kernel re-reads the row about 130 times; more threads would only add reduction steps).
static LaunchPlan top_p_for(const Call& call, const DeviceInfo& dev) {
  const int64_t rows = call.size("rows"), vocab = call.size("vocab");
  const double p = call.scalar("top_p");
  if (rows < 1 || vocab < 1 || rows > int64_t(dev.max_grid.x) || uint64_t(rows) * uint64_t(vocab) > UINT32_MAX)
    throw Error("rows = " + std::to_string(rows) + ", vocab = " + std::to_string(vocab) +
                ": each must be at least 1, rows at most the device's grid and rows * vocab below 2^32");
  const DType t = call.dtype.t;
  if ((t == DType::F16 && !dev.f16) || (t == DType::BF16 && !dev.bf16))
    throw Error("device " + dev.name + " has no " + dtype_name(t) + " support");
  const uint32_t lanes = std::max(1u, dev.lane_width);
  const uint32_t most = std::max(lanes, std::min(256u, dev.max_threads_per_group) / lanes * lanes);
  const uint32_t tg = std::clamp(uint32_t((uint64_t(vocab) + lanes - 1) / lanes * lanes), lanes, most);
  LaunchPlan plan;
  plan.steps.push_back({"iron_top_p", {uint32_t(rows), 1, 1}, {tg, 1, 1},
                        {{"rows", uint32_t(rows)}, {"vocab", uint32_t(vocab)}, {"top_p", p}}, {}});
  plan.reason = "one threadgroup of " + std::to_string(tg) + " per row, bisection over the order";
  return plan;
}
IRON_SELECTOR(iron_top_p, top_p_for);

}  // namespace iron::kernels
