// Softmax over the last dimension, out[r, j] = exp(x[r, j] - m) / sum_k exp(x[r, k] - m) with
// m the row maximum (exp never overflows), as variant families over VEC in {1, 8}:
//  - iron_softmax_warp_x{VEC}, iron_softmax_block_x{VEC}: the row held in registers
//    (kernels/norm/rows.hpp): one lane group per row for short rows (grid = {ceil(rows / (tg /
//    lane width)), 1, 1}), one threadgroup per row otherwise (grid = {rows, 1, 1}). Three passes
//    over the registers (maximum; exp and sum, the exps kept; scale); x is read from memory once
//    while the row fits (32 elements a thread), and chunks past that are read again per pass.
//  - iron_softmax_online_x{VEC}: one threadgroup per row, one pass over x keeping a running
//    maximum m and a sum s rescaled whenever m grows (s = s * exp(m - m') + sum exp(v - m')), the
//    threads' (m, s) combined as M = max m, S = sum s * exp(m - M); then a second pass writes
//    exp(x - M) / S. Two reads of x for rows of any length. grid = {rows, 1, 1}.
//  - split rows, for few long rows (64 x 128256), two kernels run in order:
//    iron_softmax_split_partials_x{VEC} with grid = {rows, parts, 1}: threadgroup (r, c) takes
//    part c of row r (cv = ceil(dv / parts) chunks of VEC from c * cv, fewer at the end, none
//    past the row) and writes its online (m_c, s_c) to partials[r, c, 0..1] (f32): m_c the
//    maximum of the part and of x[r, 0] (the running maximum starts there, so an empty part
//    writes (x[r, 0], 0)), s_c = sum over the part of exp(x - m_c). Then iron_softmax_split_out_x{VEC} with the same grid: every
//    thread combines the row's partials in index order (M = max, S = sum s_c exp(m_c - M)) and
//    threadgroup (r, c) writes chunks c * tg + t, stepping parts * tg, of row r.
// The kernels take dv = d / VEC (rows.hpp): rows whose width is not a multiple of 8 take VEC 1.
// threadgroup = {tg, 1, 1}, tg a multiple of the lane width. Accumulation in f32; every
// reduction is a fixed tree or a fixed-order loop and no atomics are used, so results are
// bit-exact run to run on one device.
#include <algorithm>
#include <cmath>

#include <iron/iron.hpp>

#include "../norm/rows.hpp"

namespace iron::kernels {
using namespace iron::dsl;
using rows::each_element;
using rows::RowWalk;
using rows::Split;

static void softmax_rows_body(const KernelVariant& v, Split split) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr rows = constexpr_("rows", u32);
  Expr dv = constexpr_("dv", u32);
  Buffer x = input("x", T, {rows, dv, vec});
  Buffer out = output("out", T, {rows, dv, vec});

  RowWalk walk(split, rows, dv, vec, rows::row_regs("iron_softmax"));
  TgBuffer held = walk.registers("row");
  if_(walk.live(), [&] {
    Var<f32> local_max = -INFINITY;
    walk.held_chunks([&](Expr j, Expr slot) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) {
        Expr xv = cast<f32>(x[at + e]);
        held[slot + e] = xv;
        local_max = max(local_max, xv);
      });
    });
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { local_max = max(local_max, cast<f32>(x[at + e])); });
    });
    Expr row_max = walk.max(local_max);
    Var<f32> local_sum = 0.0f;
    walk.held_chunks([&](Expr, Expr slot) {
      each_element(vec, [&](Expr e) {
        Expr ev = exp(held[slot + e] - row_max);
        held[slot + e] = ev;
        local_sum += ev;
      });
    });
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { local_sum += exp(cast<f32>(x[at + e]) - row_max); });
    });
    Expr inv_sum = 1.0f / walk.sum(local_sum);
    // The chunks past the registers first: then every chunk the held loop covers is written by
    // it last.
    walk.rest_chunks([&](Expr j) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>(exp(cast<f32>(x[at + e]) - row_max) * inv_sum); });
    });
    walk.held_chunks([&](Expr j, Expr slot) {
      Expr at = walk.base() + j;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>(held[slot + e] * inv_sum); });
    });
  });
}
static void softmax_warp(const KernelVariant& v) { softmax_rows_body(v, Split::Warp); }
static void softmax_block(const KernelVariant& v) { softmax_rows_body(v, Split::Block); }
IRON_KERNEL_VARIANTS(iron_softmax_warp, softmax_warp, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 8}));
IRON_KERNEL_VARIANTS(iron_softmax_block, softmax_block, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 8}));

// One online step over a chunk of VEC values at element `at`: the chunk's maximum joins the
// running maximum, the running sum is rescaled to it, and the chunk's exps are added.
static void online_chunk(Buffer x, Expr at, uint32_t vec, Var<f32>& m, Var<f32>& s) {
  Expr vals[8];
  Expr chunk_max = cast<f32>(x[at]);
  vals[0] = chunk_max;
  for (uint32_t e = 1; e < vec; ++e) {
    vals[e] = cast<f32>(x[at + e]);
    chunk_max = max(chunk_max, vals[e]);
  }
  Expr m_new = max(m, chunk_max);
  Expr sum = s * exp(m - m_new);
  for (uint32_t e = 0; e < vec; ++e) sum = sum + exp(vals[e] - m_new);
  s = sum;
  m = m_new;
}

static void softmax_online(const KernelVariant& v) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr rows = constexpr_("rows", u32);
  Expr dv = constexpr_("dv", u32);
  Buffer x = input("x", T, {rows, dv, vec});
  Buffer out = output("out", T, {rows, dv, vec});

  Expr row = program_id(0);
  Expr base = row * dv * vec;
  if_(row < rows, [&] {
    // The running maximum starts at the row's first element (every thread reads it): finite, so
    // m - m' never meets inf - inf, and a thread without chunks keeps (x[r, 0], 0).
    Var<f32> m = cast<f32>(x[base]);
    Var<f32> s = 0.0f;
    for_(local_id(0), dv, group_size(0), [&](Expr c) { online_chunk(x, base + c * vec, vec, m, s); });
    Expr row_max = group_max(m);
    Expr inv_sum = 1.0f / group_sum(s * exp(m - row_max));
    for_(local_id(0), dv, group_size(0), [&](Expr c) {
      Expr at = base + c * vec;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>(exp(cast<f32>(x[at + e]) - row_max) * inv_sum); });
    });
  });
}
IRON_KERNEL_VARIANTS(iron_softmax_online, softmax_online, Reduction, (f32, f16, bf16), "x{VEC}", ::iron::int_axis("VEC", {1, 8}));

// The chunks [begin, end) of row chunk `part` of `parts` (in chunks of VEC elements).
static void split_range(Expr dv, Expr parts, Expr part, Expr& begin, Expr& end) {
  Expr per = (dv + parts - 1u) / parts;
  begin = part * per;
  end = min(begin + per, dv);
}

static void softmax_split_partials(const KernelVariant& v) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr rows = constexpr_("rows", u32);
  Expr dv = constexpr_("dv", u32);
  Expr parts = constexpr_("parts", u32);
  Buffer x = input("x", T, {rows, dv, vec});
  Buffer partials = output("partials", f32, {rows, parts, 2});

  Expr row = program_id(0);
  Expr part = program_id(1);
  Expr base = row * dv * vec;
  if_(row < rows && part < parts, [&] {
    Expr begin, end;
    split_range(dv, parts, part, begin, end);
    Var<f32> m = cast<f32>(x[base]);  // as in iron_softmax_online: the row's first element
    Var<f32> s = 0.0f;
    for_(begin + local_id(0), end, group_size(0), [&](Expr c) { online_chunk(x, base + c * vec, vec, m, s); });
    Expr part_max = group_max(m);
    Expr part_sum = group_sum(s * exp(m - part_max));
    if_(local_id(0) == 0u, [&] {
      Expr at = (row * parts + part) * 2u;
      partials[at] = part_max;
      partials[at + 1u] = part_sum;
    });
  });
}
IRON_KERNEL_VARIANTS(iron_softmax_split_partials, softmax_split_partials, Reduction, (f32, f16, bf16), "x{VEC}",
                     ::iron::int_axis("VEC", {1, 8}));

static void softmax_split_out(const KernelVariant& v) {
  const uint32_t vec = uint32_t(v.i("VEC"));
  Expr rows = constexpr_("rows", u32);
  Expr dv = constexpr_("dv", u32);
  Expr parts = constexpr_("parts", u32);
  Buffer x = input("x", T, {rows, dv, vec});
  Buffer partials = input("partials", f32, {rows, parts, 2});
  Buffer out = output("out", T, {rows, dv, vec});

  Expr row = program_id(0);
  Expr part = program_id(1);
  Expr base = row * dv * vec;
  // A threadgroup past `parts` along y writes chunks of its row that a lower part writes too,
  // with the same values: only the row needs a guard.
  if_(row < rows, [&] {
    // Every thread combines the row's partials in index order: the same value everywhere.
    Expr first = row * parts * 2u;
    Var<f32> row_max = partials[first];
    for_(1u, parts, [&](Expr p) { row_max = max(row_max, partials[first + p * 2u]); });
    Var<f32> row_sum = 0.0f;
    for_(0u, parts, [&](Expr p) {
      Expr at = first + p * 2u;
      row_sum += partials[at + 1u] * exp(partials[at] - row_max);
    });
    Expr inv_sum = 1.0f / row_sum;
    // The row's chunks are shared out grid-stride (any cover of the row gives the same output).
    for_(part * group_size(0) + local_id(0), dv, parts * group_size(0), [&](Expr c) {
      Expr at = base + c * vec;
      each_element(vec, [&](Expr e) { out[at + e] = cast<T>(exp(cast<f32>(x[at + e]) - row_max) * inv_sum); });
    });
  });
}
IRON_KERNEL_VARIANTS(iron_softmax_split_out, softmax_split_out, Reduction, (f32, f16, bf16), "x{VEC}",
                     ::iron::int_axis("VEC", {1, 8}));

}  // namespace iron::kernels

// Tests: every concrete kernel on direct dispatches with tails, odd shapes and extreme rows,
// against f64 oracles.
namespace iron::kernels {
using rows::RowLaunch;

static void softmax_oracle(const double* x, double* o, uint32_t d) {
  double m = x[0];
  for (uint32_t j = 1; j < d; ++j) m = std::max(m, x[j]);
  double s = 0;
  for (uint32_t j = 0; j < d; ++j) s += std::exp(x[j] - m);
  for (uint32_t j = 0; j < d; ++j) o[j] = std::exp(x[j] - m) / s;
}
static TestSetup softmax_rows_setup(DType dt, uint32_t rows, uint32_t d, std::vector<double> x) {
  return TestSetup(dt)
      .in("x", std::move(x))
      .out("out", size_t(rows) * d)
      .error_floor(1e-4)  // probabilities: relative error down to 1e-4, absolute below
      .oracle([rows, d](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < rows; ++r)
          softmax_oracle(in.at("x").data() + size_t(r) * d, out.at("out").data() + size_t(r) * d, d);
      });
}
// Row-in-register kernels. Tolerance (derived): as iron_softmax, the row sum's roundings
// (row_sum_rounding) plus a subtract, the reciprocal, a multiply and the store's argument; two
// transcendentals (the exp of each term and of the output).
static TestSetup softmax_rows_case(DType dt, rows::Split split, uint32_t vec, uint32_t rows, uint32_t d, uint32_t tg,
                                   std::vector<double> x) {
  RowLaunch l = rows::row_launch("iron_softmax", split, vec, rows, d, tg, 64);
  return softmax_rows_setup(dt, rows, d, std::move(x))
      .constexprs({{"rows", rows}, {"dv", l.dv}})
      .grid(l.grid, l.threadgroup)
      .accumulation(rows::row_sum_rounding(split, l.dv, vec, tg) + 4)
      .math_ops(2);
}
static std::vector<double> spread(uint32_t rows, uint32_t d, double s) { return fixture::uniform(size_t(rows) * d, -s, s, 41); }
// Extreme rows (as iron_softmax/rows8_d777_extreme): all logits below -88, huge magnitudes with
// the maximum last, tiny ones, exact ties, two tied maxima, and rows far below zero with one
// logit at 0 at element 64, 128 or 127.
static std::vector<double> softmax_extreme_rows(uint32_t d) {
  const uint32_t rows = 8;
  std::vector<double> x(size_t(rows) * d);
  auto u = fixture::uniform(x.size(), 0.0, 1.0, 42);
  for (uint32_t j = 0; j < d; ++j) {
    x[j] = -120.0 + 30.0 * u[j];
    x[d + j] = -3e4 + 6e4 * u[d + j];
    x[2 * d + j] = 1e-6 * (u[2 * d + j] - 0.5);
    x[3 * d + j] = -100.5;
    x[4 * d + j] = -8.0 + 12.0 * u[4 * d + j];
  }
  x[4 * d + 17] = x[4 * d + 600] = 6.0;
  x[2 * d - 1] = 3.5e4;
  const uint32_t peak[3] = {64, 128, 127};
  for (uint32_t r = 5; r < 8; ++r) {
    for (uint32_t j = 0; j < d; ++j) x[r * d + j] = -200.0 + 50.0 * u[r * d + j];
    x[r * d + peak[r - 5]] = 0.0;
  }
  return x;
}
constexpr auto kSmWarp = rows::Split::Warp;
constexpr auto kSmBlock = rows::Split::Block;

// The wide cases spread x over [-100, 100] (exp overflows f32 past 88.7 without the maximum).
// Block: 5 x 1000 on 64 threads (all held); 3 x 4096 on 64 threads (256 of 512 chunks held, the
// rest looped); 3 x 4097 (VEC 1) on 64 threads (2048 held, the rest looped).
IRON_TEST_KERNEL(iron_softmax_block_x8, rows5_d1000, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 8, 5, 1000, 64, spread(5, 1000, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_block_x8, rows3_d4096_wide, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 8, 3, 4096, 64, spread(3, 4096, 100.0)); }
IRON_TEST_KERNEL(iron_softmax_block_x1, rows3_d4097_wide, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 1, 3, 4097, 64, spread(3, 4097, 100.0)); }
IRON_TEST_KERNEL(iron_softmax_block_x1, rows8_d777_extreme, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 1, 8, 777, 128, softmax_extreme_rows(777)); }
// Rows in steps: row r has its maximum 200 r at chunk dv - 1 - 3r (or at peaks[r] when given,
// the last chunk for a larger value), element VEC - 1 - r % VEC, its first element 200 r - 100 and the rest in [200 r - 200, 200 r - 150]. A
// pass that skips or misreads the maximum takes one 100 below it and overflows exp; a pass that
// reads one element past its row takes the next row's first, 100 above the maximum, and every
// exp underflows (0 / 0).
static std::vector<double> softmax_step_rows(uint32_t rows, uint32_t d, uint32_t vec, std::vector<uint32_t> peaks = {}) {
  std::vector<double> x = fixture::uniform(size_t(rows) * d, -200.0, -150.0, 43);
  for (uint32_t r = 0; r < rows; ++r) {
    double* row = x.data() + size_t(r) * d;
    for (uint32_t j = 0; j < d; ++j) row[j] += 200.0 * r;
    row[0] = 200.0 * r - 100.0;
    const uint32_t chunk = r < peaks.size() ? std::min(peaks[r], d / vec - 1) : d / vec - 1 - 3 * r;
    row[chunk * vec + (vec - 1 - r % vec)] = 200.0 * r;
  }
  return x;
}
// Maxima where a wrong loop misses them: at the first chunk past the registers (start = held x
// threads per row) and at start + threads per row (thread 0's second chunk there, which a loop
// with step + 1 skips), at lane widths 32 and 8 for warp rows; at chunk 64 (lane group 8 at
// lane width 8, which a partials loop with step + 1 skips) and 248 (lane group 31, which one
// that stops one short skips) for 256 threads; and at the last element of the last chunk.
static std::vector<uint32_t> past_register_peaks(rows::Split split, uint32_t vec, uint32_t tg) {
  const uint32_t held = rows::held_chunks_of(vec, rows::kRowRegs);
  std::vector<uint32_t> p{UINT32_MAX};  // the last chunk, its last element (row 0)
  for (uint32_t w : split == rows::Split::Warp ? std::vector<uint32_t>{32, 8} : std::vector<uint32_t>{tg}) {
    p.push_back(held * w);
    p.push_back(held * w + w);
  }
  return p;
}
// Moderate rows filling every register slot with the loop past them (a sum pass that drops a
// slot or a chunk is off by a visible part of the sum), rows in steps past the registers and
// within them, a grid past the last row on 256 threads (group reductions take two steps over the
// partials at lane width 8), and the extreme rows.
IRON_TEST_KERNEL(iron_softmax_block_x8, rows4_d1000_steps, {f32}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 8, 4, 1000, 64, softmax_step_rows(4, 1000, 8)); }
IRON_TEST_KERNEL(iron_softmax_block_x1, rows4_d1000_steps, {f32}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 1, 4, 1000, 64, softmax_step_rows(4, 1000, 1)); }
IRON_TEST_KERNEL(iron_softmax_warp_x8, rows4_d96_steps, {f32}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 8, 4, 96, 64, softmax_step_rows(4, 96, 8)); }
IRON_TEST_KERNEL(iron_softmax_warp_x1, rows4_d100_steps, {f32}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 1, 4, 100, 64, softmax_step_rows(4, 100, 1)); }
IRON_TEST_KERNEL(iron_softmax_block_x8, rows2_d2056, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 8, 2, 2056, 64, spread(2, 2056, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_block_x1, rows2_d1100, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 1, 2, 1100, 64, spread(2, 1100, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_block_x8, rows3_d2640_steps, {f32}, {bf16}) {
  return softmax_rows_case(dt, kSmBlock, 8, 3, 2640, 64, softmax_step_rows(3, 2640, 8, past_register_peaks(kSmBlock, 8, 64)));
}
IRON_TEST_KERNEL(iron_softmax_block_x1, rows3_d1100_steps, {f32}, {bf16}) {
  return softmax_rows_case(dt, kSmBlock, 1, 3, 1100, 64, softmax_step_rows(3, 1100, 1, past_register_peaks(kSmBlock, 1, 64)));
}
IRON_TEST_KERNEL(iron_softmax_block_x8, rows8_d776_extreme, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmBlock, 8, 8, 776, 128, softmax_extreme_rows(776)); }
static TestSetup softmax_past_rows(DType dt, rows::Split split, uint32_t vec) {
  TestSetup t = softmax_rows_case(dt, split, vec, 3, 300 * vec, 256, softmax_step_rows(3, 300 * vec, vec, {64, 248, 80}));
  return t.grid({t.grid_size().x + 1, 1, 1}, t.threadgroup());
}
IRON_TEST_KERNEL(iron_softmax_block_x8, rows3_d2400_grid4, {f32}) { return softmax_past_rows(dt, kSmBlock, 8); }
IRON_TEST_KERNEL(iron_softmax_block_x1, rows3_d300_grid4, {f32}) { return softmax_past_rows(dt, kSmBlock, 1); }
// Warp: short rows a lane group holds at lane widths 8 and 32 (every slot's tail test reached),
// rows past the registers of 64 lanes, rows in steps there.
IRON_TEST_KERNEL(iron_softmax_warp_x8, rows5_d96, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 8, 5, 96, 64, spread(5, 96, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_warp_x1, rows5_d100, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 1, 5, 100, 64, spread(5, 100, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_warp_x8, rows3_d2056, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 8, 3, 2056, 64, spread(3, 2056, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_warp_x1, rows2_d1100, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 1, 2, 1100, 64, spread(2, 1100, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_warp_x8, rows5_d2400_steps, {f32}, {bf16}) {
  return softmax_rows_case(dt, kSmWarp, 8, 5, 2400, 64, softmax_step_rows(5, 2400, 8, past_register_peaks(kSmWarp, 8, 64)));
}
IRON_TEST_KERNEL(iron_softmax_warp_x1, rows5_d1100_steps, {f32}, {bf16}) {
  return softmax_rows_case(dt, kSmWarp, 1, 5, 1100, 64, softmax_step_rows(5, 1100, 1, past_register_peaks(kSmWarp, 1, 64)));
}
// Warp: 7 x 1000, 9 x 999 (VEC 1: past 16 elements a lane at lane width 32 or less), the extreme rows.
IRON_TEST_KERNEL(iron_softmax_warp_x8, rows7_d1000, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 8, 7, 1000, 128, spread(7, 1000, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_warp_x8, rows8_d776_extreme, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 8, 8, 776, 128, softmax_extreme_rows(776)); }
IRON_TEST_KERNEL(iron_softmax_warp_x1, rows9_d999_wide, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 1, 9, 999, 128, spread(9, 999, 100.0)); }
IRON_TEST_KERNEL(iron_softmax_warp_x1, rows8_d777_extreme, {f32}, {f16}, {bf16}) { return softmax_rows_case(dt, kSmWarp, 1, 8, 777, 64, softmax_extreme_rows(777)); }

// The online kernel. Tolerance (derived): each thread's running sum takes ceil(dv / tg) chunks,
// each a rescaling multiply and VEC adds, and each rescaling multiplies by one more exp; then
// the tree, the combining multiply and exp, and the output's subtract, exp, reciprocal and
// multiply.
static TestSetup softmax_online_case(DType dt, uint32_t vec, uint32_t rows, uint32_t d, uint32_t tg, std::vector<double> x) {
  const uint32_t dv = d / vec, chunks = (dv + tg - 1) / tg;
  return softmax_rows_setup(dt, rows, d, std::move(x))
      .constexprs({{"rows", rows}, {"dv", dv}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .accumulation(double(chunks) * (vec + 1) + group_sum_rounding(tg, tg) + 4)
      .math_ops(double(chunks) + 3);
}
IRON_TEST_KERNEL(iron_softmax_online_x8, rows5_d1000, {f32}, {f16}, {bf16}) { return softmax_online_case(dt, 8, 5, 1000, 64, spread(5, 1000, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_online_x8, rows3_d4096_wide, {f32}, {f16}, {bf16}) { return softmax_online_case(dt, 8, 3, 4096, 64, spread(3, 4096, 100.0)); }
IRON_TEST_KERNEL(iron_softmax_online_x1, rows3_d4097_wide, {f32}, {f16}, {bf16}) { return softmax_online_case(dt, 1, 3, 4097, 64, spread(3, 4097, 100.0)); }
IRON_TEST_KERNEL(iron_softmax_online_x1, rows8_d777_extreme, {f32}, {f16}, {bf16}) { return softmax_online_case(dt, 1, 8, 777, 128, softmax_extreme_rows(777)); }
IRON_TEST_KERNEL(iron_softmax_online_x8, rows8_d2400_steps, {f32}, {bf16}) { return softmax_online_case(dt, 8, 8, 2400, 64, softmax_step_rows(8, 2400, 8)); }
IRON_TEST_KERNEL(iron_softmax_online_x1, rows3_d1100_steps, {f32}, {bf16}) { return softmax_online_case(dt, 1, 3, 1100, 64, softmax_step_rows(3, 1100, 1)); }
static TestSetup softmax_online_past_rows(DType dt, uint32_t vec) {
  TestSetup t = softmax_online_case(dt, vec, 3, 300 * vec, 256, softmax_step_rows(3, 300 * vec, vec, {64, 248, 80}));
  return t.grid({t.grid_size().x + 1, 1, 1}, t.threadgroup());
}
IRON_TEST_KERNEL(iron_softmax_online_x8, rows3_d2400_grid4, {f32}) { return softmax_online_past_rows(dt, 8); }
IRON_TEST_KERNEL(iron_softmax_online_x1, rows3_d300_grid4, {f32}) { return softmax_online_past_rows(dt, 1); }
IRON_TEST_KERNEL(iron_softmax_online_x8, rows8_d776_extreme, {f32}, {f16}, {bf16}) { return softmax_online_case(dt, 8, 8, 776, 64, softmax_extreme_rows(776)); }

// Split rows: the chunk range of part c as the kernels compute it, and each part's exact
// (m_c, s_c): m_c the maximum of the part and of the row's first element.
static void split_bounds(uint32_t dv, uint32_t parts, uint32_t c, uint32_t& begin, uint32_t& end) {
  uint32_t per = (dv + parts - 1) / parts;
  begin = c * per;
  end = std::min(begin + per, dv);
}
static std::vector<double> split_partials_of(const std::vector<double>& x, uint32_t rows, uint32_t d, uint32_t vec,
                                             uint32_t parts) {
  std::vector<double> p(size_t(rows) * parts * 2);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < parts; ++c) {
      uint32_t b, e;
      split_bounds(d / vec, parts, c, b, e);
      double m = x[size_t(r) * d], s = 0;
      for (uint32_t j = b * vec; j < e * vec; ++j) m = std::max(m, x[size_t(r) * d + j]);
      for (uint32_t j = b * vec; j < e * vec; ++j) s += std::exp(x[size_t(r) * d + j] - m);
      p[(size_t(r) * parts + c) * 2] = m;
      p[(size_t(r) * parts + c) * 2 + 1] = s;
    }
  return p;
}
// Step 1. Tolerance (derived): the part's sum as the online kernel's, over ceil(part / tg)
// chunks a thread; the maximum is exact. The output is f32.
static TestSetup softmax_partials_case(DType dt, uint32_t vec, uint32_t rows, uint32_t d, uint32_t parts, uint32_t tg,
                                       std::vector<double> x) {
  const uint32_t dv = d / vec, per = (dv + parts - 1) / parts, chunks = (per + tg - 1) / tg;
  return TestSetup(dt)
      .in("x", x)
      .out("partials", size_t(rows) * parts * 2)
      .constexprs({{"rows", rows}, {"dv", dv}, {"parts", parts}})
      .grid({rows, parts, 1}, {tg, 1, 1})
      .accumulation(double(chunks) * (vec + 1) + group_sum_rounding(tg, tg) + 1)
      .math_ops(double(chunks) + 2)
      .oracle([rows, d, vec, parts](const Tensors& in, Tensors& out) {
        out.at("partials") = split_partials_of(in.at("x"), rows, d, vec, parts);
      });
}
// 3 x 4096 in 5 parts of 103 chunks (the last 100); 2 x 40 in 8 parts of one chunk, the last 3
// empty; 3 x 4097 (VEC 1) in 4 parts; the extreme rows in 3 parts.
IRON_TEST_KERNEL(iron_softmax_split_partials_x8, rows3_d4096_p5, {f32}, {f16}, {bf16}) {
  return softmax_partials_case(dt, 8, 3, 4096, 5, 64, spread(3, 4096, 100.0));
}
IRON_TEST_KERNEL(iron_softmax_split_partials_x8, rows2_d40_p8_empty, {f32}, {bf16}) {
  return softmax_partials_case(dt, 8, 2, 40, 8, 64, spread(2, 40, 4.0));
}
IRON_TEST_KERNEL(iron_softmax_split_partials_x1, rows3_d4097_p4, {f32}, {f16}, {bf16}) {
  return softmax_partials_case(dt, 1, 3, 4097, 4, 64, spread(3, 4097, 100.0));
}
IRON_TEST_KERNEL(iron_softmax_split_partials_x1, rows8_d777_extreme_p3, {f32}, {f16}, {bf16}) {
  return softmax_partials_case(dt, 1, 8, 777, 3, 64, softmax_extreme_rows(777));
}
IRON_TEST_KERNEL(iron_softmax_split_partials_x8, rows8_d776_extreme_p3, {f32}, {f16}, {bf16}) {
  return softmax_partials_case(dt, 8, 8, 776, 3, 64, softmax_extreme_rows(776));
}
// Parts of 550 chunks on 256 threads (every thread sums two or three; group reductions take two
// steps over the partials at lane width 8), with each part's maximum in lane group 8.
static TestSetup softmax_partials_wide(DType dt, uint32_t vec) {
  const uint32_t d = 1100 * vec;
  std::vector<double> x = spread(2, d, 4.0);
  x[64 * vec] = 10.0;
  x[d + (550 + 64) * vec] = 10.0;
  return softmax_partials_case(dt, vec, 2, d, 2, 256, std::move(x));
}
IRON_TEST_KERNEL(iron_softmax_split_partials_x8, rows2_d8800_p2_tg256, {f32}, {bf16}) { return softmax_partials_wide(dt, 8); }
IRON_TEST_KERNEL(iron_softmax_split_partials_x1, rows2_d1100_p2_tg256, {f32}, {bf16}) { return softmax_partials_wide(dt, 1); }
// A grid past the last row and the last part, on 256 threads.
static TestSetup softmax_split_past(TestSetup t) {
  Dim3 g = t.grid_size();
  return t.grid({g.x + 1, g.y + 1, 1}, t.threadgroup());
}
IRON_TEST_KERNEL(iron_softmax_split_partials_x8, rows3_d1000_p2_grid4x3, {f32}) {
  return softmax_split_past(softmax_partials_case(dt, 8, 3, 1000, 2, 256, spread(3, 1000, 4.0)));
}
IRON_TEST_KERNEL(iron_softmax_split_partials_x1, rows3_d1000_p2_grid4x3, {f32}) {
  return softmax_split_past(softmax_partials_case(dt, 1, 3, 1000, 2, 256, spread(3, 1000, 4.0)));
}
// Step 2 from exact partials (rounded to f32 as the buffer holds them). Tolerance (derived): the
// row sum is `parts` multiply-adds of the partial sums (each rounded once to f32), one exp each;
// then the output's subtract, exp, reciprocal and multiply.
static TestSetup softmax_split_out_case(DType dt, uint32_t vec, uint32_t rows, uint32_t d, uint32_t parts, uint32_t tg,
                                        std::vector<double> x) {
  const std::vector<double> rounded = [&] {
    std::vector<double> r(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = fixture::round_to(dt, x[i]);
    return r;
  }();
  return softmax_rows_setup(dt, rows, d, x)
      .in("partials", split_partials_of(rounded, rows, d, vec, parts))
      .constexprs({{"rows", rows}, {"dv", d / vec}, {"parts", parts}})
      .grid({rows, parts, 1}, {tg, 1, 1})
      .accumulation(3.0 * parts + 4)
      .math_ops(2);
}
IRON_TEST_KERNEL(iron_softmax_split_out_x8, rows3_d4096_p5, {f32}, {f16}, {bf16}) {
  return softmax_split_out_case(dt, 8, 3, 4096, 5, 64, spread(3, 4096, 100.0));
}
IRON_TEST_KERNEL(iron_softmax_split_out_x8, rows2_d40_p8_empty, {f32}, {bf16}) {
  return softmax_split_out_case(dt, 8, 2, 40, 8, 64, spread(2, 40, 4.0));
}
IRON_TEST_KERNEL(iron_softmax_split_out_x1, rows3_d4097_p4, {f32}, {f16}, {bf16}) {
  return softmax_split_out_case(dt, 1, 3, 4097, 4, 64, spread(3, 4097, 100.0));
}
IRON_TEST_KERNEL(iron_softmax_split_out_x1, rows8_d777_extreme_p3, {f32}, {f16}, {bf16}) {
  return softmax_split_out_case(dt, 1, 8, 777, 3, 64, softmax_extreme_rows(777));
}

IRON_TEST_KERNEL(iron_softmax_split_out_x8, rows8_d776_extreme_p3, {f32}, {f16}, {bf16}) {
  return softmax_split_out_case(dt, 8, 8, 776, 3, 64, softmax_extreme_rows(776));
}
IRON_TEST_KERNEL(iron_softmax_split_out_x8, rows3_d1000_p2_grid4x3, {f32}) {
  return softmax_split_past(softmax_split_out_case(dt, 8, 3, 1000, 2, 256, spread(3, 1000, 4.0)));
}
IRON_TEST_KERNEL(iron_softmax_split_out_x1, rows3_d1000_p2_grid4x3, {f32}) {
  return softmax_split_past(softmax_split_out_case(dt, 1, 3, 1000, 2, 256, spread(3, 1000, 4.0)));
}

}  // namespace iron::kernels

namespace iron::kernels {
// Selectors: the logical call {rows, d}.
//  - iron_softmax: a row that fits the registers of a lane group or of one threadgroup of the
//    device's largest size takes the row kernels (rows::pick_row_launch); a longer row takes
//    the online kernel when there are 128 rows or more (enough threadgroups to fill the device),
//    else the split-row plan.
//  - iron_softmax_online, iron_softmax_split: always that route (for benchmarks and tests).
// Online: a threadgroup of the device's largest size a row. Split: threadgroups of 256, parts =
// ceil(1024 / rows) (about a thousand threadgroups), at most one per 256 chunks, at most 65535.
enum class SoftmaxRoute { Auto, Online, Split };
static LaunchPlan softmax_plan(const char* family, const Call& call, const DeviceInfo& dev, SoftmaxRoute route) {
  rows::check_row_call(family, call, dev);
  const uint64_t rows = uint64_t(call.size("rows")), d = uint64_t(call.size("d"));
  const uint32_t vec = rows::row_vec(d), dv = uint32_t(d / vec), lanes = dev.lane_width;
  const uint32_t cap = std::max(lanes, dev.max_threads_per_group / lanes * lanes);
  const uint64_t held = rows::held_chunks_of(vec, rows::kRowRegs);
  if (route == SoftmaxRoute::Auto && dv <= cap * held) return rows::row_family_plan("iron_softmax", call, dev, false);
  const std::string x = "_x" + std::to_string(vec);
  LaunchPlan plan;
  if (route == SoftmaxRoute::Online || (route == SoftmaxRoute::Auto && rows >= 128)) {
    plan.steps.push_back({"iron_softmax_online" + x, {uint32_t(rows), 1, 1}, {cap, 1, 1}, {{"rows", uint32_t(rows)}, {"dv", dv}}, {}});
    plan.reason = "online: one pass with a running maximum and a rescaled sum, a threadgroup of " + std::to_string(cap) +
                  " a row, VEC " + std::to_string(vec);
    return plan;
  }
  const uint32_t tg = std::max(lanes, std::min<uint32_t>(256, cap) / lanes * lanes);
  const uint64_t parts = std::clamp<uint64_t>((1024 + rows - 1) / rows, 1, std::max<uint64_t>(1, std::min<uint64_t>(dv / tg, 65535)));
  plan.scratch.push_back({"softmax_partials", DType::F32, size_t(rows * parts * 2)});
  const Constexprs scalars{{"rows", uint32_t(rows)}, {"dv", dv}, {"parts", uint32_t(parts)}};
  const Dim3 grid{uint32_t(rows), uint32_t(parts), 1};
  plan.steps.push_back({"iron_softmax_split_partials" + x, grid, {tg, 1, 1}, scalars, {{"partials", "softmax_partials"}}});
  plan.steps.push_back({"iron_softmax_split_out" + x, grid, {tg, 1, 1}, scalars, {{"partials", "softmax_partials"}}});
  plan.reason = "split rows: " + std::to_string(parts) + " parts a row, per-part (max, sum), then a fixed-order combine; VEC " +
                std::to_string(vec);
  return plan;
}
static LaunchPlan softmax_for(const Call& call, const DeviceInfo& dev) { return softmax_plan("iron_softmax", call, dev, SoftmaxRoute::Auto); }
IRON_SELECTOR(iron_softmax, softmax_for);
static LaunchPlan softmax_online_for(const Call& call, const DeviceInfo& dev) {
  return softmax_plan("iron_softmax_online", call, dev, SoftmaxRoute::Online);
}
IRON_SELECTOR(iron_softmax_online, softmax_online_for);
static LaunchPlan softmax_split_for(const Call& call, const DeviceInfo& dev) {
  return softmax_plan("iron_softmax_split", call, dev, SoftmaxRoute::Split);
}
IRON_SELECTOR(iron_softmax_split, softmax_split_for);

// Family cases. Tolerance (derived): the most of the three routes' accounts (row kernels as
// rows::call_sum_rounding; online and split with threadgroups of at least 256, as on every
// device here; the split's combine over at most ceil(dv / 256) + 1 parts).
static TestSetup softmax_call_case(DType dt, uint32_t rows, uint32_t d, std::vector<double> x) {
  const uint32_t vec = rows::row_vec(d), dv = d / vec;
  const double chunks = double((dv + 255) / 256);
  const double row = rows::call_sum_rounding(d) + 4;
  const double online = chunks * (vec + 1) + 30 + 4;
  const double split = chunks * (vec + 1) + 30 + 1 + 3.0 * (chunks + 1) + 4;
  return softmax_rows_setup(dt, rows, d, std::move(x))
      .call({{"rows", rows}, {"d", d}})
      .accumulation(std::max({row, online, split}))
      .math_ops(chunks + 3);
}
// Through the selector: 7 x 4095 (a threadgroup a row, VEC 1), 13 x 1000 (a lane group a row at
// lane width 32), 2 x 33000 and 2 x 16501 (past one threadgroup's registers on a device of 1024
// threads a threadgroup, few rows: the split plan, VEC 8 and 1), the extreme rows.
IRON_TEST_KERNEL(iron_softmax, call_rows7_d4095, {f32}, {f16}, {bf16}) { return softmax_call_case(dt, 7, 4095, spread(7, 4095, 4.0)); }
IRON_TEST_KERNEL(iron_softmax, call_rows13_d1000, {f32}, {f16}, {bf16}) { return softmax_call_case(dt, 13, 1000, spread(13, 1000, 4.0)); }
IRON_TEST_KERNEL(iron_softmax, call_rows2_d33000, {f32}, {bf16}) { return softmax_call_case(dt, 2, 33000, spread(2, 33000, 4.0)); }
IRON_TEST_KERNEL(iron_softmax, call_rows2_d16501, {f32}, {bf16}) { return softmax_call_case(dt, 2, 16501, spread(2, 16501, 4.0)); }
IRON_TEST_KERNEL(iron_softmax, call_rows8_d777_extreme, {f32}, {f16}, {bf16}) { return softmax_call_case(dt, 8, 777, softmax_extreme_rows(777)); }
IRON_TEST_KERNEL(iron_softmax_online, call_rows3_d4095, {f32}, {f16}, {bf16}) { return softmax_call_case(dt, 3, 4095, spread(3, 4095, 4.0)); }
IRON_TEST_KERNEL(iron_softmax_online, call_rows8_d776_extreme, {f32}, {bf16}) { return softmax_call_case(dt, 8, 776, softmax_extreme_rows(776)); }
IRON_TEST_KERNEL(iron_softmax_split, call_rows3_d4096, {f32}, {f16}, {bf16}) { return softmax_call_case(dt, 3, 4096, spread(3, 4096, 100.0)); }
IRON_TEST_KERNEL(iron_softmax_split, call_rows8_d777_extreme, {f32}, {f16}, {bf16}) { return softmax_call_case(dt, 8, 777, softmax_extreme_rows(777)); }

// Benchmarks at the shapes through the selectors: iron_softmax at 4096 and 32768 rows of
// 4096 (row kernels) and 64 x 128256 (split rows); the online and split routes forced at 64 x
// 128256 and the online one at 4096 x 4096. Bytes: x read once and out written once.
static BenchSetup softmax_bench(DType dt, uint32_t rows, uint32_t d) {
  TestSetup t = softmax_call_case(dt, rows, d, spread(rows, d, 4.0));
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).out("out", size_t(rows) * d).call({{"rows", rows}, {"d", d}});
  b.oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes(2.0 * rows * d * dtype_size(dt)).flops(5.0 * rows * d);
}
IRON_BENCH(iron_softmax, rows4096_d4096, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 4096, 4096).sweep("iron_softmax_d4096", 4096); }
IRON_BENCH(iron_softmax, rows32768_d4096, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 32768, 4096).sweep("iron_softmax_d4096", 32768); }
IRON_BENCH(iron_softmax, rows64_d128256, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 64, 128256); }
IRON_BENCH(iron_softmax_online, rows64_d128256, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 64, 128256); }
IRON_BENCH(iron_softmax_online, rows4096_d4096, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 4096, 4096); }
IRON_BENCH(iron_softmax_split, rows64_d128256, {f32, 1e-5}, {f16, 1.5e-3}, {bf16, 8e-3}) { return softmax_bench(dt, 64, 128256); }
}  // namespace iron::kernels
