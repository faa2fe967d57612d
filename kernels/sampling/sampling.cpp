// Sampling from logits [rows, vocab] (T = f32, f16 or bf16), one threadgroup per row (mode
// Reduction; grid = {rows, 1, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width,
// at most 1024):
//   iron_argmax   index[r] = the index of the largest logit of row r (few long rows: the split
//                 pair iron_argmax_parts + iron_argmax_combine below, grid {rows, parts, 1});
//   iron_topk     the k largest logits of each row, sorted: values[r, i] (T) and indices[r, i]
//                 (u32) for i < k, largest first (and found[r], below); few long rows: the split
//                 pair iron_topk_parts + iron_topk_merge below.
// The order. Logits are compared through an order-preserving u32 key (order_key): -0 and +0 are
// equal, -inf is the smallest value and a NaN is larger than every number (as torch.argmax and
// torch.topk treat it; every NaN is equal). Equal logits are ordered by index, lowest first: that
// is the tie rule of both kernels (argmax returns the lowest index of the maximum; top-k lists
// equal values by increasing index and cuts a run of equal values at the k-th by index).
// Reading: argmax's thread t takes the chunks of 8 logits t, t + tg, ... (16-byte loads when
// vocab is a multiple of 8; otherwise element by element, and thread 0 also takes the last
// vocab % 8); top-k's thread t takes the logits t, t + tg, ... (coalesced 4-byte loads). Either
// way each thread sees its logits in increasing index order.
// Determinism: keys and indices are integers and reduce exactly; the candidate slots of top-k
// depend on the order of atomic increments, but its output does not (each candidate's rank is
// counted). Results are the same on every backend and run.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include <iron/iron.hpp>

#include "sampling.hpp"

namespace iron::kernels {
using namespace iron::dsl;

namespace {

constexpr uint32_t kVec = 8;


// visit(j, value) for the logits of row `row` this thread owns, in increasing index order: the
// chunks of 8 c0 + t, c0 + t + tg, ... below c1 (t = local_id, tg = group_size), and thread 0
// also the vocab % 8 logits past the row's last chunk where `tail` holds (nullptr: always).
void for_each_owned(Buffer logits, Expr row, Expr vocab, Operand c0, Expr c1, const Expr* tail,
                    const std::function<void(Expr, Expr)>& visit) {
  Expr t = local_id(0);
  Expr tg = group_size(0);
  Expr chunks = vocab / kVec;
  if_((vocab & (kVec - 1)) == 0u, [&] {
    Expr row_chunks = row * chunks;
    for_(t + c0, c1, tg, [&](Expr c) {
      Expr at = (row_chunks + c) * kVec;  // a multiple of 8: one 16-byte load at 16 bits
      Expr v[kVec];
      for (uint32_t e = 0; e < kVec; ++e) v[e] = cast<f32>(logits[at + e]);
      for (uint32_t e = 0; e < kVec; ++e) visit(c * kVec + e, v[e]);
    });
  }).else_([&] {
    Expr base = row * vocab;
    for_(t + c0, c1, tg, [&](Expr c) {
      for (uint32_t e = 0; e < kVec; ++e) visit(c * kVec + e, cast<f32>(logits[base + c * kVec + e]));
    });
    if_(tail ? *tail && t == 0u : t == 0u, [&] {
      for_(chunks * kVec, vocab, 1u, [&](Expr j) { visit(j, cast<f32>(logits[base + j])); });
    });
  });
}

// Folds the logits this thread owns (for_each_owned's walk) into its largest key `best` and the
// first index holding it `best_at` (a later equal key does not replace it). Starting from (0,
// kNone), a thread that owns nothing keeps them: 0 is below every logit's key (-inf's is
// 0x007FFFFF).
void best_owned(Buffer logits, Expr row, Expr vocab, Operand c0, Expr c1, const Expr* tail, Var<u32>& best,
                Var<u32>& best_at) {
  for_each_owned(logits, row, vocab, c0, c1, tail, [&](Expr j, Expr v) {
    Expr key = order_key(v);
    Expr better = key > best;
    best_at = select(better, j, best_at);
    best = select(better, key, best);
  });
}

}  // namespace

// The threadgroup's largest key `top` over the threads' (best, best_at), and the lowest index
// holding it `lowest` (the largest complement ~index among the threads whose best is top).
static void group_best(const Var<u32>& best, const Var<u32>& best_at, Expr& top, Expr& lowest) {
  top = group_max_u32(best, "top_key");
  lowest = ~group_max_u32(select(best == top, ~best_at, 0u), "top_at");
}

// ---- argmax: each thread keeps its largest key and the first index holding it (best_owned);
// group_max finds the largest key, then the lowest index holding it (the largest complement
// ~index). Dispatch: grid = {rows, 1, 1}.
static void argmax() {
  Expr rows = constexpr_("rows", u32);
  Expr vocab = constexpr_("vocab", u32);
  Buffer logits = input("logits", T, {rows, vocab});
  Buffer index = output("index", u32, {rows});

  Expr row = program_id(0);
  // A thread starts from its first own logit (index 8 t), or the row's last when it owns none (a
  // repeat of a logit some thread owns, harmless for a maximum).
  Expr first = min(local_id(0) * kVec, vocab - 1u);
  Var<u32> best = order_key(cast<f32>(logits[row * vocab + first]));
  Var<u32> best_at = first;
  best_owned(logits, row, vocab, 0u, vocab / kVec, nullptr, best, best_at);
  Expr top, lowest;
  group_best(best, best_at, top, lowest);
  if_(local_id(0) == 0u, [&] { index[row] = lowest; });
}
IRON_KERNEL(iron_argmax, argmax, Reduction, f32, f16, bf16);

// ---- split argmax, for few rows of many logits: two kernels run in order.
//   iron_argmax_parts    grid = {rows, parts, 1}: threadgroup (r, p) takes the chunks of 8
//                        [p * per, min((p + 1) * per, chunks)) of row r, per = ceil(chunks /
//                        parts), and the last part also the vocab % 8 tail; it writes best[r, p, 0]
//                        = its largest key and best[r, p, 1] = the lowest index holding it
//                        ((0, 0xFFFFFFFF) for a part past the row's end).
//   iron_argmax_combine  grid = {rows, 1, 1}: thread t takes the parts t, t + tg, ... in order,
//                        keeping the first largest key as argmax's threads do; the threadgroup
//                        then picks the largest key and the lowest index holding it. The parts
//                        hold increasing index ranges, so this is the row's argmax, tie rule
//                        included.
static void argmax_parts() {
  Expr rows = constexpr_("rows", u32);
  Expr vocab = constexpr_("vocab", u32);
  Expr parts = constexpr_("parts", u32);
  Buffer logits = input("logits", T, {rows, vocab});
  Buffer best_out = output("best", u32, {rows, parts, 2});

  Expr row = program_id(0);
  Expr part = program_id(1);
  Expr chunks = vocab / kVec;
  Expr per = (chunks + parts - 1u) / parts;
  Expr c0 = min(part * per, chunks);
  Expr c1 = min(c0 + per, chunks);
  Var<u32> best = 0u;
  Var<u32> best_at = kNone;
  Expr last = part == parts - 1u;
  best_owned(logits, row, vocab, c0, c1, &last, best, best_at);
  Expr top, lowest;
  group_best(best, best_at, top, lowest);
  if_(local_id(0) == 0u, [&] {
    Expr at = (row * parts + part) * 2u;
    best_out[at] = top;
    best_out[at + 1u] = lowest;
  });
}
IRON_KERNEL(iron_argmax_parts, argmax_parts, Reduction, f32, f16, bf16);

static void argmax_combine() {
  Expr rows = constexpr_("rows", u32);
  Expr parts = constexpr_("parts", u32);
  Buffer best_in = input("best", u32, {rows, parts, 2});
  Buffer index = output("index", u32, {rows});

  Expr row = program_id(0);
  Var<u32> best = 0u;
  Var<u32> best_at = kNone;
  for_(local_id(0), parts, group_size(0), [&](Expr p) {
    Expr at = (row * parts + p) * 2u;
    Expr key = cast<u32>(best_in[at]);
    Expr better = key > best;
    best_at = select(better, cast<u32>(best_in[at + 1u]), best_at);
    best = select(better, key, best);
  });
  Expr top, lowest;
  group_best(best, best_at, top, lowest);
  if_(local_id(0) == 0u, [&] { index[row] = lowest; });
}
IRON_KERNEL(iron_argmax_combine, argmax_combine, Reduction, f32, f16, bf16);

// ---- top-k: exact, in two phases. Thread t takes the logits t, t + tg, ... of its row.
// 1. A threshold: each thread's largest key is stored (0 for a thread that owns nothing), and the
//    k-th largest of them, tau, is found by counting (tau = 0 when k > tg): k
//    threads own a logit with a key >= tau, so at least k logits reach it, and usually few more.
// 2. Candidates: every logit with key >= tau is appended (an atomic slot counter) to threadgroup
//    arrays of `cap` entries; found[r] reports how many reached tau. When they fit, each
//    candidate's rank in the order (key descending, index ascending; unique) is counted against
//    all candidates and ranks < k are written: the slot order does not matter. When more than
//    `cap` reach tau (many equal logits), the exact fallback runs instead: k rounds, each a pass
//    over the row for the first logit after the previous pick in the order.
// A k larger than the row: positions past the vocabulary get index 0xFFFFFFFF and value 0.
// Threadgroup memory: 4 KiB of thread maxima, 8 * cap bytes of candidates, 24 bytes, and 1 KiB
// for the fallback's group maximum.
// The selection above over the n logits src[base], ..., src[base + n - 1] (a row, or a part of
// one): emit(pos, at) writes output `pos` as logit `at` (relative to base), emit_none(pos) an
// output past the n logits; returns the count of logits that reached tau (found).
static Expr select_topk(Buffer src, Expr base, Expr n, Expr k, Expr cap, const std::function<void(Expr, Expr)>& emit,
                        const std::function<void(Expr)>& emit_none) {
  TgBuffer maxima = threadgroup_alloc("maxima", u32, 1024);
  // [0] tau, [1] candidates, [2..3] the fallback's last pick, [4..5] its index slots (by round parity)
  TgBuffer state = threadgroup_alloc("state", u32, 6);
  TgBuffer cand_key = threadgroup_alloc_dynamic("cand_key", u32, cap);
  TgBuffer cand_at = threadgroup_alloc_dynamic("cand_at", u32, cap);
  Expr t = local_id(0);
  Expr tg = group_size(0);
  // visit(j, value) for the logits j = t, t + tg, ... (coalesced 4-byte loads).
  auto each_strided = [&](const std::function<void(Expr, Expr)>& visit) {
    for_(t, n, tg, [&](Expr j) { visit(j, cast<f32>(src[base + j])); });
  };

  // Thread t starts its maximum from its own logit t; a thread past the logits reads logit 0 and
  // then reports 0 (it owns nothing).
  Expr owns = t < n;
  Var<u32> most = order_key(cast<f32>(src[base + select(owns, t, 0u)]));
  each_strided([&](Expr, Expr v) { most = max(most, order_key(v)); });
  maxima[t] = select(owns, most, 0u);
  if_(t == 0u, [&] {
    state[0u] = 0xFFFFFFFFu;  // atomic_min below
    state[1u] = 0u;
    state[2u] = 0u;
    state[3u] = 0u;
    state[4u] = 0xFFFFFFFFu;
    state[5u] = 0xFFFFFFFFu;
  });
  barrier();
  // tau: the smallest maximum with fewer than k maxima above it, which is the k-th largest.
  Expr mine = cast<u32>(maxima[t]);
  Var<u32> above = 0u;
  for_(0u, tg, 1u, [&](Expr j) { above += cast<u32>(cast<u32>(maxima[j]) > mine); });
  if_(above < k, [&] { atomic_min(state[0u], mine); });
  barrier();
  Expr tau = select(k > tg, 0u, cast<u32>(state[0u]));  // k > tg: every logit is a candidate
  each_strided([&](Expr j, Expr v) {
    Expr key = order_key(v);
    if_(key >= tau, [&] {
      Expr slot = atomic_add(state[1u], 1u);
      if_(cap > slot, [&] {  // beyond cap: counted (the fallback runs), not stored
        cand_key[slot] = key;
        cand_at[slot] = j;
      });
    });
  });
  barrier();
  Expr found = cast<u32>(state[1u]);
  if_(found <= cap, [&] {
    for_(t, found, tg, [&](Expr i) {
      Expr key = cast<u32>(cand_key[i]);
      Expr at = cast<u32>(cand_at[i]);
      Var<u32> rank = 0u;
      for_(0u, found, 1u, [&](Expr j) {
        Expr other = cast<u32>(cand_key[j]);
        rank += cast<u32>((other > key) || ((other == key) && (cast<u32>(cand_at[j]) < at)));
      });
      if_(rank < k, [&] { emit(cast<u32>(rank), at); });
    });
    for_(found + t, k, tg, [&](Expr pos) { emit_none(pos); });  // k > n
  }).else_([&] {
    for_(0u, k, 1u, [&](Expr pos) {
      Expr last_key = cast<u32>(state[2u]);
      Expr last_at = cast<u32>(state[3u]);
      // The complement of the best key left (0xFFFFFFFF: none, which reads as key 0, below
      // every logit's key) and its index.
      Var<u32> least = 0xFFFFFFFFu;
      Var<u32> best_at = n;
      each_strided([&](Expr j, Expr v) {
        Expr key = order_key(v);
        Expr left = (pos == 0u) || (key < last_key) || ((key == last_key) && (j > last_at));
        Expr better = left && (~key < least);
        best_at = select(better, j, best_at);
        least = select(better, ~key, least);
      });
      // The round's largest key, then the lowest index holding it: an atomic minimum into this
      // round's slot (the other slot, read last round, is reset for the next one).
      Expr top = group_max_u32(~least, "round_key");
      Expr slot = 4u + (pos & 1u);
      if_(~least == top, [&] { atomic_min(state[slot], best_at); });
      barrier();
      Expr at = cast<u32>(state[slot]);
      if_(t == 0u, [&] { if_(at < n, [&] { emit(pos, at); }).else_([&] { emit_none(pos); }); });
      if_(t == tg - 1u, [&] {  // the last thread: the others must wait for it (barrier below)
        state[2u] = top;
        state[3u] = at;
        state[slot ^ 1u] = 0xFFFFFFFFu;  // the other parity's slot
      });
      barrier();
    });
  });
  return found;
}

static void topk() {
  Expr rows = constexpr_("rows", u32);
  Expr vocab = constexpr_("vocab", u32);
  Expr k = constexpr_("k", u32);
  Expr cap = constexpr_("cap", u32);
  Buffer logits = input("logits", T, {rows, vocab});
  Buffer values = output("values", T, {rows, k});
  Buffer indices = output("indices", u32, {rows, k});
  Buffer found_out = output("found", u32, {rows});

  Expr row = program_id(0);
  Expr base = row * vocab;
  Expr found = select_topk(
      logits, base, vocab, k, cap,
      [&](Expr pos, Expr at) {
        indices[row * k + pos] = at;
        values[row * k + pos] = logits[base + at];
      },
      [&](Expr pos) {
        indices[row * k + pos] = kNone;
        values[row * k + pos] = 0;
      });
  if_(local_id(0) == 0u, [&] { found_out[row] = found; });
}
IRON_KERNEL(iron_topk, topk, Reduction, f32, f16, bf16);

// ---- split top-k, for few rows of many logits: two kernels run in order.
//   iron_topk_parts  grid = {rows, parts, 1}: threadgroup (r, p) selects the top k of the logits
//                    [p * vocab / parts, (p + 1) * vocab / parts) of row r as iron_topk does and
//                    writes them in order to cand_values[r, p * k + i] (T) and cand_index[r, p *
//                    k + i] (the logit's index in the row); a part of fewer than k logits pads
//                    with -inf and 0xFFFFFFFF; part_found[r, p] is the part's found.
//   iron_topk_merge  grid = {rows, 1, 1}: iron_topk over the m = parts * k candidates of each row,
//                    writing values, indices (through cand_index) and found (the candidates
//                    that reached the merge's threshold).
// When every part holds at least k logits (the selector makes it so), the merge's result is the
// row's top k, tie rule included: a logit of the row's top k is in its part's top k; and equal
// values sit in the candidate row in increasing index order (parts in order, each part's
// candidates sorted with ties by index), which the merge's own tie rule keeps.
static void topk_parts() {
  Expr rows = constexpr_("rows", u32);
  Expr vocab = constexpr_("vocab", u32);
  Expr parts = constexpr_("parts", u32);
  Expr k = constexpr_("k", u32);
  Expr cap = constexpr_("cap", u32);
  Buffer logits = input("logits", T, {rows, vocab});
  Buffer cand_values = output("cand_values", T, {rows, parts, k});
  Buffer cand_index = output("cand_index", u32, {rows, parts, k});
  Buffer part_found = output("part_found", u32, {rows, parts});

  Expr row = program_id(0);
  Expr part = program_id(1);
  Expr begin = part * vocab / parts;
  Expr n = (part + 1u) * vocab / parts - begin;
  Expr base = row * vocab + begin;
  Expr out = (row * parts + part) * k;
  Expr found = select_topk(
      logits, base, n, k, cap,
      [&](Expr pos, Expr at) {
        cand_index[out + pos] = begin + at;
        cand_values[out + pos] = logits[base + at];
      },
      [&](Expr pos) {
        cand_index[out + pos] = kNone;
        cand_values[out + pos] = -INFINITY;
      });
  if_(local_id(0) == 0u, [&] { part_found[row * parts + part] = found; });
}
IRON_KERNEL(iron_topk_parts, topk_parts, Reduction, f32, f16, bf16);

static void topk_merge() {
  Expr rows = constexpr_("rows", u32);
  Expr m = constexpr_("m", u32);
  Expr k = constexpr_("k", u32);
  Expr cap = constexpr_("cap", u32);
  Buffer cand_values = input("cand_values", T, {rows, m});
  Buffer cand_index = input("cand_index", u32, {rows, m});
  Buffer values = output("values", T, {rows, k});
  Buffer indices = output("indices", u32, {rows, k});
  Buffer found_out = output("found", u32, {rows});

  Expr row = program_id(0);
  Expr base = row * m;
  Expr found = select_topk(
      cand_values, base, m, k, cap,
      [&](Expr pos, Expr at) {
        indices[row * k + pos] = cand_index[base + at];
        values[row * k + pos] = cand_values[base + at];
      },
      [&](Expr pos) {
        indices[row * k + pos] = kNone;
        values[row * k + pos] = 0;
      });
  if_(local_id(0) == 0u, [&] { found_out[row] = found; });
}
IRON_KERNEL(iron_topk_merge, topk_merge, Reduction, f32, f16, bf16);


// ---- Tests. Oracles sort in f64 by (value descending, index ascending); indices are exact.

namespace {

TestSetup argmax_case(DType dt, uint32_t rows, uint32_t vocab, uint32_t tg, std::vector<double> x) {
  return TestSetup(dt)
      .in("logits", std::move(x))
      .out("index", rows)
      .constexprs({{"rows", rows}, {"vocab", vocab}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .oracle([rows, vocab](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < rows; ++r) out.at("index")[r] = sorted_row(in.at("logits"), r, vocab)[0];
      });
}

}  // namespace

// vocab 1000 (a multiple of 8: the 16-byte path) and 1003 (element path with a tail of 3); 5 and
// 3 elements (fewer than one chunk; threads that own nothing); ties everywhere.
IRON_TEST_KERNEL(iron_argmax, rows6_v1000_ties, {f32}, {f16}, {bf16}) {
  return argmax_case(dt, 6, 1000, 64, tied_logits(6, 1000, 301));
}
IRON_TEST_KERNEL(iron_argmax, rows6_v1003_ties, {f32}, {f16}, {bf16}) {
  return argmax_case(dt, 6, 1003, 64, tied_logits(6, 1003, 302));
}
IRON_TEST_KERNEL(iron_argmax, rows4_v777, {f32}, {f16}, {bf16}) {
  return argmax_case(dt, 4, 777, 32, fixture::uniform(4 * 777, -30.0, 30.0, 303));
}
// The maximum (5, repeated at a later index, which must lose) at chosen places: every position
// within a chunk of 8, a thread's second chunk, the first and last logits, the first tail logit;
// the background is a coarse grid in [-4, 4] with ties of its own. No thread is idle (vocab >=
// 8 tg), so only the owner of a logit can report it.
static std::vector<double> positioned(uint32_t vocab, const std::vector<uint32_t>& at, uint64_t seed,
                                      bool tied_background = true) {
  const uint32_t rows = uint32_t(at.size());
  std::vector<double> x = fixture::uniform(size_t(rows) * vocab, -4.0, 4.0, seed);
  if (tied_background)
    for (double& v : x) v = std::round(v * 2) / 2;
  for (uint32_t r = 0; r < rows; ++r) {
    x[size_t(r) * vocab + at[r]] = 5;
    if (at[r] + 1 < vocab) x[size_t(r) * vocab + at[r] + 1] = 5;
  }
  return x;
}
static const std::vector<uint32_t> kAlignedAt = {8, 41, 74, 107, 140, 173, 206, 239, 263, 256, 0, 100};
static const std::vector<uint32_t> kTailAt = {8, 41, 74, 107, 140, 173, 206, 239, 256, 264, 266, 0};
IRON_TEST_KERNEL(iron_argmax, rows12_v264_positions, {f32}, {bf16}) {
  return argmax_case(dt, 12, 264, 32, positioned(264, kAlignedAt, 305));
}
IRON_TEST_KERNEL(iron_argmax, rows12_v267_positions, {f32}, {bf16}) {
  return argmax_case(dt, 12, 267, 32, positioned(267, kTailAt, 306));
}
// The maximum in the last lane group of a threadgroup of 64 (thread 63 owns logits 504..511) at
// every lane width.
IRON_TEST_KERNEL(iron_argmax, rows4_v1000_last_group, {f32}, {bf16}) {
  return argmax_case(dt, 4, 1000, 64, positioned(1000, {505, 510, 504, 511}, 307));
}
IRON_TEST_KERNEL(iron_argmax, rows4_v1003_last_group, {f32}, {bf16}) {
  return argmax_case(dt, 4, 1003, 64, positioned(1003, {505, 510, 504, 511}, 308));
}
// A threadgroup of 128: at lane width 8 its 16 lane groups outnumber the lanes, so the fold over
// the partials takes two steps; the maximum sits in lane group 8 (logits 512..575, threads 64..71).
IRON_TEST_KERNEL(iron_argmax, rows3_v1000_tg128, {f32}) {
  return argmax_case(dt, 3, 1000, 128, positioned(1000, {515, 540, 575}, 309));
}
IRON_TEST_KERNEL(iron_argmax, rows3_v5_ties, {f32}, {bf16}) {
  return argmax_case(dt, 3, 5, 32, {1, 4, 4, -2, 4, -1, -1, -3, -1, -5, 0, 2, 7, 7, 6});
}
// The maximum at the last element of each row's tail, and in the first element.
IRON_TEST_KERNEL(iron_argmax, rows2_v19_edges, {f32}, {bf16}) {
  std::vector<double> x = fixture::uniform(2 * 19, -4.0, 4.0, 304);
  x[18] = 5;
  x[19] = 5;
  x[20] = 5;
  return argmax_case(dt, 2, 19, 32, std::move(x));
}

namespace {

// The number of logits that reach tau (the kernel's `found`): thread t of tg owns the logits
// t, t + tg, ...; tau is the k-th largest of the threads' maxima (a thread owning nothing counts
// below every logit; with k > tg tau is that too, and every logit reaches it).
uint32_t expected_found(const double* r, uint32_t vocab, uint32_t k, uint32_t tg) {
  const double below = -std::numeric_limits<double>::infinity();
  std::vector<double> maxima(tg, below);
  std::vector<bool> owns(tg, false);
  for (uint32_t j = 0; j < vocab; ++j) {
    const uint32_t t = j % tg;
    maxima[t] = owns[t] ? std::max(maxima[t], r[j]) : r[j];
    owns[t] = true;
  }
  if (k == 0 || k > tg) return vocab;
  std::vector<std::pair<bool, double>> order;  // (owns, max): a thread owning nothing sorts last
  for (uint32_t t = 0; t < tg; ++t) order.push_back({owns[t], maxima[t]});
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first : a.second > b.second;
  });
  if (!order[k - 1].first) return vocab;
  const double tau = order[k - 1].second;
  uint32_t n = 0;
  for (uint32_t j = 0; j < vocab; ++j) n += r[j] >= tau;
  return n;
}

TestSetup topk_case(DType dt, uint32_t rows, uint32_t vocab, uint32_t k, uint32_t cap, uint32_t tg,
                    std::vector<double> x) {
  return TestSetup(dt)
      .in("logits", std::move(x))
      .out("values", size_t(rows) * k)
      .out("indices", size_t(rows) * k)
      .out("found", rows)
      .constexprs({{"rows", rows}, {"vocab", vocab}, {"k", k}, {"cap", cap}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .error_floor(0x1p-126)
      .oracle([rows, vocab, k, tg](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < rows; ++r) {
          std::vector<uint32_t> order = sorted_row(in.at("logits"), r, vocab);
          for (uint32_t i = 0; i < k; ++i) {
            const bool real = i < vocab;
            out.at("indices")[size_t(r) * k + i] = real ? order[i] : double(kNone);
            out.at("values")[size_t(r) * k + i] = real ? in.at("logits")[size_t(r) * vocab + order[i]] : 0.0;
          }
          out.at("found")[r] = expected_found(in.at("logits").data() + size_t(r) * vocab, vocab, k, tg);
        }
      });
}

}  // namespace

// The candidate path: random rows (few logits reach tau) at k = 50 and 7, vocab a multiple of 8
// and not; ties cut at the k-th (the coarse grid of tied_logits; cap 1024 holds them all).
IRON_TEST_KERNEL(iron_topk, rows3_v1000_k50, {f32}, {f16}, {bf16}) {
  return topk_case(dt, 3, 1000, 50, 256, 64, fixture::uniform(3 * 1000, -20.0, 20.0, 311));
}
IRON_TEST_KERNEL(iron_topk, rows4_v1003_k7_ties, {f32}, {f16}, {bf16}) {
  return topk_case(dt, 4, 1003, 7, 1024, 64, tied_logits(4, 1003, 312));
}
// The fallback: cap 4 is too small for the ties at the threshold.
IRON_TEST_KERNEL(iron_topk, rows3_v203_k6_fallback, {f32}, {f16}, {bf16}) {
  return topk_case(dt, 3, 203, 6, 4, 32, tied_logits(3, 203, 313));
}
// k larger than the row (positions past it are none), and k larger than the threadgroup.
IRON_TEST_KERNEL(iron_topk, rows2_v5_k9, {f32}, {bf16}) {
  return topk_case(dt, 2, 5, 9, 16, 32, {3, -1, 3, 2, 0, -4, 8, 8, -4, 1});
}
IRON_TEST_KERNEL(iron_topk, rows2_v5_k40, {f32}, {bf16}) {
  return topk_case(dt, 2, 5, 40, 16, 32, {3, -1, 3, 2, 0, -4, 8, 8, -4, 1});
}
// A threadgroup of 128 (16 lane groups at lane width 8), the maxima owned by threads 64..71; k =
// 2 in the fallback (cap 1).
IRON_TEST_KERNEL(iron_topk, rows3_v300_k2_tg128_fallback, {f32}) {
  return topk_case(dt, 3, 300, 2, 1, 128, positioned(300, {66, 70, 64}, 318, false));
}
IRON_TEST_KERNEL(iron_topk, rows2_v5_k9_fallback, {f32}, {bf16}) {
  return topk_case(dt, 2, 5, 9, 2, 32, {3, -1, 3, 2, 0, -4, 8, 8, -4, 1});
}
// The places of argmax's positioned rows (the top two are the maximum and its later repeat, the
// third the best of a tied background); and the maximum in the first logit of a row's tail
// (every thread but 0 and 1 idle).
IRON_TEST_KERNEL(iron_topk, rows12_v264_k3_positions, {f32}, {bf16}) {
  return topk_case(dt, 12, 264, 3, 256, 32, positioned(264, kAlignedAt, 315, false));
}
IRON_TEST_KERNEL(iron_topk, rows12_v267_k3_positions_fallback, {f32}, {bf16}) {
  return topk_case(dt, 12, 267, 3, 1, 64, positioned(267, kTailAt, 316, false));
}
IRON_TEST_KERNEL(iron_topk, rows2_v19_k2_tail, {f32}, {bf16}) {
  std::vector<double> x = fixture::uniform(2 * 19, -4.0, 4.0, 317);
  x[16] = 5;
  x[19 + 18] = 5;
  return topk_case(dt, 2, 19, 2, 16, 32, std::move(x));
}
IRON_TEST_KERNEL(iron_topk, rows2_v300_k40_tg32, {f32}, {bf16}) {
  return topk_case(dt, 2, 300, 40, 512, 32, fixture::uniform(2 * 300, -3.0, 3.0, 314));
}

// ---- The split argmax's kernels, directly. The oracle keys a logit as order_key does (on its
// f32 value: -0 as +0, NaN above everything).
namespace {
double host_key(double v) {
  float f = float(v);
  if (std::isnan(f)) return double(0xFFFFFFFFu);
  if (f == 0.0f) f = 0.0f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return double(bits >= 0x80000000u ? ~bits : bits | 0x80000000u);
}
TestSetup argmax_parts_case(DType dt, uint32_t rows, uint32_t vocab, uint32_t parts, uint32_t tg, std::vector<double> x) {
  return TestSetup(dt)
      .in("logits", std::move(x))
      .out("best", size_t(rows) * parts * 2)
      .constexprs({{"rows", rows}, {"vocab", vocab}, {"parts", parts}})
      .grid({rows, parts, 1}, {tg, 1, 1})
      .oracle([rows, vocab, parts](const Tensors& in, Tensors& out) {
        const uint32_t chunks = vocab / 8, per = (chunks + parts - 1) / parts;
        for (uint32_t r = 0; r < rows; ++r)
          for (uint32_t p = 0; p < parts; ++p) {
            const uint32_t c0 = std::min(p * per, chunks), c1 = std::min(c0 + per, chunks);
            double best = 0, at = double(kNone);
            auto visit = [&](uint32_t j) {
              const double key = host_key(in.at("logits")[size_t(r) * vocab + j]);
              if (key > best) best = key, at = j;
            };
            for (uint32_t j = c0 * 8; j < c1 * 8; ++j) visit(j);
            if (p == parts - 1)
              for (uint32_t j = chunks * 8; j < vocab; ++j) visit(j);
            out.at("best")[(size_t(r) * parts + p) * 2] = best;
            out.at("best")[(size_t(r) * parts + p) * 2 + 1] = at;
          }
      });
}
}  // namespace
// 3 rows of 1000 in 5 parts of 25 chunks; tied rows of 1003 in 4 parts (the tail in the last);
// 40 logits in 8 parts of one chunk (the last 3 empty), and 43 (the last part empty but for the
// tail); a threadgroup of 32 walking 25 chunks.
IRON_TEST_KERNEL(iron_argmax_parts, rows3_v1000_p5, {f32}, {f16}, {bf16}) {
  return argmax_parts_case(dt, 3, 1000, 5, 64, fixture::uniform(3 * 1000, -30.0, 30.0, 351));
}
IRON_TEST_KERNEL(iron_argmax_parts, rows2_v1003_p4_ties, {f32}, {bf16}) {
  return argmax_parts_case(dt, 2, 1003, 4, 32, tied_logits(2, 1003, 352));
}
IRON_TEST_KERNEL(iron_argmax_parts, rows3_v40_p8_empty, {f32}, {bf16}) {
  return argmax_parts_case(dt, 3, 40, 8, 32, tied_logits(3, 40, 353));
}
IRON_TEST_KERNEL(iron_argmax_parts, rows3_v43_p8_tail, {f32}, {bf16}) {
  std::vector<double> x = fixture::uniform(3 * 43, -4.0, 4.0, 354);
  x[42] = 9;           // row 0: the maximum in the tail (the last part)
  x[43 + 40] = 9;      // row 1: the tail's first logit
  x[86 + 3] = 9;       // row 2: the first part
  return argmax_parts_case(dt, 3, 43, 8, 32, std::move(x));
}
// Parts longer than the threadgroup (500 chunks on 64 threads: every thread walks 8): the
// maximum at chunk 64 of a part (thread 0's second), in the second lane group (thread 40), and in
// the tail's middle logit (vocab 8003, the element path).
IRON_TEST_KERNEL(iron_argmax_parts, rows3_v8000_p2_walk, {f32}, {bf16}) {
  std::vector<double> x = fixture::uniform(3 * 8000, -4.0, 4.0, 355);
  x[0 * 8000 + 500 * 8 + 64 * 8 + 3] = 9;   // row 0, part 1: chunk 564
  x[1 * 8000 + 40 * 8 + 5] = 9;             // row 1, part 0: chunk 40 (thread 40)
  x[2 * 8000 + 500 * 8 + 104 * 8] = 9;      // row 2, part 1: chunk 604 (thread 40's second)
  return argmax_parts_case(dt, 3, 8000, 2, 64, std::move(x));
}
IRON_TEST_KERNEL(iron_argmax_parts, rows3_v8003_p2_walk_tail, {f32}, {bf16}) {
  std::vector<double> x = fixture::uniform(3 * 8003, -4.0, 4.0, 356);
  x[0 * 8003 + 64 * 8 + 1] = 9;             // row 0, part 0: chunk 64
  x[1 * 8003 + 8001] = 9;                   // row 1: the tail's middle logit
  x[2 * 8003 + 500 * 8 + 40 * 8 + 7] = 9;   // row 2, part 1: thread 40
  return argmax_parts_case(dt, 3, 8003, 2, 64, std::move(x));
}
static TestSetup argmax_combine_case(DType dt, uint32_t rows, uint32_t parts, uint32_t tg, std::vector<double> best);
// The combine over given parts: ties of keys across parts (the lower part's index wins), more
// parts than threads, and an empty part's (0, none).
IRON_TEST_KERNEL(iron_argmax_combine, rows3_p40_tg32, {f32}) {
  const uint32_t rows = 3, parts = 40;
  std::vector<double> best(size_t(rows) * parts * 2);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t p = 0; p < parts; ++p) {
      const uint32_t key = 0x80000000u + ((p * 2654435761u + r * 97u) % 1000u);
      best[(size_t(r) * parts + p) * 2] = key;
      best[(size_t(r) * parts + p) * 2 + 1] = p * 100 + r;
    }
  for (uint32_t p : {7u, 19u, 33u}) best[(size_t(0) * parts + p) * 2] = 0x80001000u;  // row 0: three tied maxima
  best[(size_t(1) * parts + 39) * 2] = 0x80001000u;                                   // row 1: the last part
  best[(size_t(2) * parts + 0) * 2] = 0;                                               // row 2: an empty part first
  best[(size_t(2) * parts + 0) * 2 + 1] = double(kNone);
  best[(size_t(2) * parts + 32) * 2] = 0x80001000u;                                   // and the maximum at part 32
  return argmax_combine_case(dt, rows, parts, 32, std::move(best));
}
// Threadgroups of 64 (two lane groups at lane width 32): the maximum in the second (part 45);
// a row of empty parts but one whose key is 1 (below every logit's key, above an empty part's);
// a row of empty parts only (none).
IRON_TEST_KERNEL(iron_argmax_combine, rows3_p50_tg64, {f32}) {
  const uint32_t rows = 3, parts = 50;
  std::vector<double> best(size_t(rows) * parts * 2);
  for (uint32_t p = 0; p < parts; ++p) {
    best[size_t(p) * 2] = 0x80000000u + p % 7;
    best[size_t(p) * 2 + 1] = 3 * p;
    best[(size_t(parts) + p) * 2] = 0;
    best[(size_t(parts) + p) * 2 + 1] = double(kNone);
    best[(size_t(2 * parts) + p) * 2] = 0;
    best[(size_t(2 * parts) + p) * 2 + 1] = double(kNone);
  }
  best[size_t(45) * 2] = 0x90000000u;
  best[(size_t(parts) + 17) * 2] = 1;
  best[(size_t(parts) + 17) * 2 + 1] = 17;
  return argmax_combine_case(dt, rows, parts, 64, std::move(best));
}
// Threadgroups of 128 (16 lane groups at lane width 8, more than its lanes: the fold over the
// partials takes two steps): the maximum in lane group 8 (part 67) and in the last (part 127).
IRON_TEST_KERNEL(iron_argmax_combine, rows2_p130_tg128, {f32}) {
  const uint32_t rows = 2, parts = 130;
  std::vector<double> best(size_t(rows) * parts * 2);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t p = 0; p < parts; ++p) {
      best[(size_t(r) * parts + p) * 2] = 0x80000000u + (p * 7 + r) % 50;
      best[(size_t(r) * parts + p) * 2 + 1] = 10 * p;
    }
  best[size_t(67) * 2] = 0x80000100u;
  best[(size_t(parts) + 127) * 2] = 0x80000100u;
  return argmax_combine_case(dt, rows, parts, 128, std::move(best));
}
static TestSetup argmax_combine_case(DType dt, uint32_t rows, uint32_t parts, uint32_t tg, std::vector<double> best) {
  return TestSetup(dt)
      .in("best", best)
      .out("index", rows)
      .constexprs({{"rows", rows}, {"parts", parts}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .oracle([rows, parts](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < rows; ++r) {
          double key = 0, at = double(kNone);
          for (uint32_t p = 0; p < parts; ++p)
            if (in.at("best")[(size_t(r) * parts + p) * 2] > key)
              key = in.at("best")[(size_t(r) * parts + p) * 2], at = in.at("best")[(size_t(r) * parts + p) * 2 + 1];
          out.at("index")[r] = at;
        }
      });
}

// ---- The split top-k's kernels, directly. The host's candidate row: each part's top k (value
// descending, index ascending), padded with (-inf, none) past a part's logits.
namespace {
void part_candidates(const double* row, uint32_t vocab, uint32_t parts, uint32_t k, double* values, double* index) {
  for (uint32_t p = 0; p < parts; ++p) {
    const uint32_t b = uint32_t(uint64_t(p) * vocab / parts), e = uint32_t(uint64_t(p + 1) * vocab / parts);
    std::vector<double> part(row + b, row + e);
    std::vector<uint32_t> order = sorted_row(part, 0, e - b);
    for (uint32_t i = 0; i < k; ++i) {
      const bool real = i < e - b;
      values[size_t(p) * k + i] = real ? part[order[i]] : -INFINITY;
      index[size_t(p) * k + i] = real ? double(b + order[i]) : double(kNone);
    }
  }
}
TestSetup topk_parts_case(DType dt, uint32_t rows, uint32_t vocab, uint32_t parts, uint32_t k, uint32_t cap, uint32_t tg,
                          std::vector<double> x) {
  const size_t m = size_t(parts) * k;
  return TestSetup(dt)
      .in("logits", std::move(x))
      .out("cand_values", rows * m)
      .out("cand_index", rows * m)
      .out("part_found", size_t(rows) * parts)
      .constexprs({{"rows", rows}, {"vocab", vocab}, {"parts", parts}, {"k", k}, {"cap", cap}})
      .grid({rows, parts, 1}, {tg, 1, 1})
      .error_floor(0x1p-126)
      .oracle([rows, vocab, parts, k, m, tg](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < rows; ++r) {
          const double* row = in.at("logits").data() + size_t(r) * vocab;
          part_candidates(row, vocab, parts, k, out.at("cand_values").data() + r * m, out.at("cand_index").data() + r * m);
          for (uint32_t p = 0; p < parts; ++p) {
            const uint32_t b = uint32_t(uint64_t(p) * vocab / parts), e = uint32_t(uint64_t(p + 1) * vocab / parts);
            out.at("part_found")[size_t(r) * parts + p] = expected_found(row + b, e - b, k, tg);
          }
        }
      });
}
// The merge over the host's candidate rows of `x` (rows of `vocab` in `parts` parts): the rows'
// top k, and found as the merge's threshold counts it over the candidates.
TestSetup topk_merge_case(DType dt, uint32_t rows, uint32_t vocab, uint32_t parts, uint32_t k, uint32_t cap, uint32_t tg,
                          std::vector<double> x) {
  const uint32_t m = parts * k;
  for (double& v : x) v = fixture::round_to(dt, v);  // the logits as the dtype holds them
  std::vector<double> values(size_t(rows) * m), index(size_t(rows) * m);
  for (uint32_t r = 0; r < rows; ++r)
    part_candidates(x.data() + size_t(r) * vocab, vocab, parts, k, values.data() + size_t(r) * m, index.data() + size_t(r) * m);
  return TestSetup(dt)
      .in("cand_values", values)
      .in("cand_index", index)
      .out("values", size_t(rows) * k)
      .out("indices", size_t(rows) * k)
      .out("found", rows)
      .constexprs({{"rows", rows}, {"m", m}, {"k", k}, {"cap", cap}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .error_floor(0x1p-126)
      .oracle([rows, vocab, m, k, tg, x](const Tensors& in, Tensors& out) {
        for (uint32_t r = 0; r < rows; ++r) {
          std::vector<uint32_t> order = sorted_row(x, r, vocab);
          for (uint32_t i = 0; i < k; ++i) {
            out.at("indices")[size_t(r) * k + i] = order[i];
            out.at("values")[size_t(r) * k + i] = x[size_t(r) * vocab + order[i]];
          }
          out.at("found")[r] = expected_found(in.at("cand_values").data() + size_t(r) * m, m, k, tg);
        }
      });
}
}  // namespace
// Tied rows of 1000 in 3 parts at k = 7; rows of 203 in 4 parts of 50 and 51 at k = 60 (each part
// padded); the fallback (cap 4 below the ties at the threshold).
IRON_TEST_KERNEL(iron_topk_parts, rows2_v1000_p3_k7_ties, {f32}, {f16}, {bf16}) {
  return topk_parts_case(dt, 2, 1000, 3, 7, 1024, 64, tied_logits(2, 1000, 361));
}
IRON_TEST_KERNEL(iron_topk_parts, rows2_v203_p4_k60_padded, {f32}, {bf16}) {
  return topk_parts_case(dt, 2, 203, 4, 60, 256, 64, fixture::uniform(2 * 203, -5.0, 5.0, 362));
}
IRON_TEST_KERNEL(iron_topk_parts, rows2_v600_p3_k6_fallback, {f32}, {bf16}) {
  return topk_parts_case(dt, 2, 600, 3, 6, 4, 32, tied_logits(2, 600, 363));
}
// The merge: tied rows of 1000 from 5 parts at k = 9 (ties across parts: the lower index first);
// random rows of 4096 from 8 parts at k = 50 on 416 threads; the fallback.
IRON_TEST_KERNEL(iron_topk_merge, rows3_v1000_p5_k9_ties, {f32}, {f16}, {bf16}) {
  return topk_merge_case(dt, 3, 1000, 5, 9, 1024, 64, tied_logits(3, 1000, 364));
}
IRON_TEST_KERNEL(iron_topk_merge, rows2_v4096_p8_k50, {f32}, {bf16}) {
  return topk_merge_case(dt, 2, 4096, 8, 50, 2048, 416, fixture::uniform(2 * 4096, -20.0, 20.0, 365));
}
IRON_TEST_KERNEL(iron_topk_merge, rows2_v1000_p4_k5_fallback, {f32}, {bf16}) {
  return topk_merge_case(dt, 2, 1000, 4, 5, 2, 32, tied_logits(2, 1000, 366));
}

// Twins of iron_topk's cases: iron_topk_parts with one part selects a row's top k (padded past
// the row), and iron_topk_merge over a row with the identity as candidate indices is iron_topk on
// that row, found included. The same fixtures reach both kernels' walks, ties and fallbacks.
static TestSetup topk_merge_twin(DType dt, uint32_t rows, uint32_t vocab, uint32_t k, uint32_t cap, uint32_t tg,
                                 std::vector<double> x) {
  TestSetup t = topk_case(dt, rows, vocab, k, cap, tg, x);
  std::vector<double> identity(size_t(rows) * vocab);
  for (size_t i = 0; i < identity.size(); ++i) identity[i] = double(i % vocab);
  return TestSetup(dt)
      .in("cand_values", std::move(x))
      .in("cand_index", std::move(identity))
      .out("values", size_t(rows) * k)
      .out("indices", size_t(rows) * k)
      .out("found", rows)
      .constexprs({{"rows", rows}, {"m", vocab}, {"k", k}, {"cap", cap}})
      .grid({rows, 1, 1}, {tg, 1, 1})
      .error_floor(t.floor())
      .oracle([t](const Tensors& in, Tensors& out) {
        Tensors as_row{{"logits", in.at("cand_values")}};
        t.oracle_fn()(as_row, out);
      });
}
#define IRON_TOPK_TWINS(name, rows, vocab, k, cap, tg, ...)                                                          \
  IRON_TEST_KERNEL(iron_topk_parts, name, {f32}, {bf16}) { return topk_parts_case(dt, rows, vocab, 1, k, cap, tg, __VA_ARGS__); } \
  IRON_TEST_KERNEL(iron_topk_merge, name, {f32}, {bf16}) { return topk_merge_twin(dt, rows, vocab, k, cap, tg, __VA_ARGS__); }
IRON_TOPK_TWINS(rows3_v1000_k50, 3, 1000, 50, 256, 64, fixture::uniform(3 * 1000, -20.0, 20.0, 311))
IRON_TOPK_TWINS(rows4_v1003_k7_ties, 4, 1003, 7, 1024, 64, tied_logits(4, 1003, 312))
IRON_TOPK_TWINS(rows3_v203_k6_fallback, 3, 203, 6, 4, 32, tied_logits(3, 203, 313))
IRON_TOPK_TWINS(rows2_v5_k9, 2, 5, 9, 16, 32, {3, -1, 3, 2, 0, -4, 8, 8, -4, 1})
IRON_TOPK_TWINS(rows2_v5_k40, 2, 5, 40, 16, 32, {3, -1, 3, 2, 0, -4, 8, 8, -4, 1})
IRON_TOPK_TWINS(rows3_v300_k2_tg128_fallback, 3, 300, 2, 1, 128, positioned(300, {66, 70, 64}, 318, false))
IRON_TOPK_TWINS(rows2_v5_k9_fallback, 2, 5, 9, 2, 32, {3, -1, 3, 2, 0, -4, 8, 8, -4, 1})
IRON_TOPK_TWINS(rows12_v264_k3_positions, 12, 264, 3, 256, 32, positioned(264, kAlignedAt, 315, false))
IRON_TOPK_TWINS(rows12_v267_k3_positions_fallback, 12, 267, 3, 1, 64, positioned(267, kTailAt, 316, false))
IRON_TOPK_TWINS(rows2_v300_k40_tg32, 2, 300, 40, 512, 32, fixture::uniform(2 * 300, -3.0, 3.0, 314))
static std::vector<double> tail_logits() {  // rows2_v19_k2_tail's: the maximum in the last logits
  std::vector<double> x = fixture::uniform(2 * 19, -4.0, 4.0, 317);
  x[16] = 5;
  x[19 + 18] = 5;
  return x;
}
IRON_TOPK_TWINS(rows2_v19_k2_tail, 2, 19, 2, 16, 32, tail_logits())
#undef IRON_TOPK_TWINS

// ---- Kernel-owned launch. The families share their kernels' names (iron_argmax, iron_topk).
namespace {
uint32_t round_up(uint64_t v, uint32_t to) { return uint32_t((v + to - 1) / to * to); }
// Threads for a row that gives each `per` logits per step: enough to cover the row once, a
// multiple of the lane width, at most 1024 and the device's limit.
uint32_t row_threads(const DeviceInfo& dev, uint64_t need) {
  const uint32_t lanes = std::max(1u, dev.lane_width);
  const uint32_t most = std::max(lanes, std::min(1024u, dev.max_threads_per_group) / lanes * lanes);
  return std::clamp(round_up(std::max<uint64_t>(need, 1), lanes), lanes, most);
}
void check_rows(const DeviceInfo& dev, DType t, int64_t rows, int64_t vocab) {
  if (rows < 1 || vocab < 1 || rows > int64_t(dev.max_grid.x) || uint64_t(rows) * uint64_t(vocab) > UINT32_MAX)
    throw Error("rows = " + std::to_string(rows) + ", vocab = " + std::to_string(vocab) +
                ": each must be at least 1, rows at most the device's grid (" + std::to_string(dev.max_grid.x) +
                ") and rows * vocab below 2^32");
  if ((t == DType::F16 && !dev.f16) || (t == DType::BF16 && !dev.bf16))
    throw Error("device " + dev.name + " has no " + dtype_name(t) + " support");
}
}  // namespace

// argmax_for {rows, vocab}: few rows of many logits (rows * parts threadgroups, parts =
// ceil(1024 / rows), at least 2 and at most one per 128 chunks of 8) take the split argmax:
// iron_argmax_parts with threadgroups of 128 (rounded to the lane width), then
// iron_argmax_combine with a thread per part. Otherwise one threadgroup per row, enough threads
// for one chunk of 8 logits each (up to 1024).
static LaunchPlan argmax_for(const Call& call, const DeviceInfo& dev) {
  const int64_t rows = call.size("rows"), vocab = call.size("vocab");
  check_rows(dev, call.dtype.t, rows, vocab);
  const uint64_t chunks = uint64_t(vocab) / kVec;
  const uint64_t parts = std::min<uint64_t>({(1024 + uint64_t(rows) - 1) / uint64_t(rows), chunks / 128, dev.max_grid.y});
  LaunchPlan plan;
  if (parts >= 2) {
    const Constexprs scalars{{"rows", uint32_t(rows)}, {"vocab", uint32_t(vocab)}, {"parts", uint32_t(parts)}};
    const uint32_t tg = row_threads(dev, 128), combine_tg = row_threads(dev, parts);
    plan.scratch.push_back({"argmax_best", DType::U32, size_t(rows) * parts * 2});
    plan.steps.push_back({"iron_argmax_parts", {uint32_t(rows), uint32_t(parts), 1}, {tg, 1, 1}, scalars, {{"best", "argmax_best"}}});
    plan.steps.push_back({"iron_argmax_combine", {uint32_t(rows), 1, 1}, {combine_tg, 1, 1},
                          {{"rows", uint32_t(rows)}, {"parts", uint32_t(parts)}}, {{"best", "argmax_best"}}});
    plan.reason = "split: " + std::to_string(parts) + " parts a row in threadgroups of " + std::to_string(tg) +
                  ", then a combine of " + std::to_string(combine_tg);
    return plan;
  }
  const uint32_t tg = row_threads(dev, (uint64_t(vocab) + kVec - 1) / kVec);
  plan.steps.push_back({"iron_argmax", {uint32_t(rows), 1, 1}, {tg, 1, 1},
                        {{"rows", uint32_t(rows)}, {"vocab", uint32_t(vocab)}}, {}});
  plan.reason = "one threadgroup of " + std::to_string(tg) + " per row";
  return plan;
}
IRON_SELECTOR(iron_argmax, argmax_for);

// topk_for {rows, vocab, k} (the family's outputs: values and indices; found stays in the plan's
// scratch): few rows of many logits take the split top-k (below); otherwise one
// threadgroup per row with a thread per logit up to 1024 (and at least k, rounded to the lane
// width, so tau comes from k thread maxima). The candidate
// capacity is 2048, or what the device's threadgroup memory leaves beside the kernel's fixed
// 4 KiB + 24 bytes + 1 KiB.
static LaunchPlan topk_for(const Call& call, const DeviceInfo& dev) {
  const int64_t rows = call.size("rows"), vocab = call.size("vocab"), k = call.size("k");
  check_rows(dev, call.dtype.t, rows, vocab);
  if (k < 1 || k > 1024) throw Error("k = " + std::to_string(k) + ": top-k takes k in 1..1024");
  const uint64_t memory = std::max(dev.shared_memory_bytes, dev.shared_memory_optin_bytes);
  const uint64_t fixed = 4096 + 24 + 1024;
  if (memory < fixed + 8 * 64)
    throw Error("device " + dev.name + " has " + std::to_string(memory) + " bytes of threadgroup memory; top-k needs " +
                std::to_string(fixed + 8 * 64));
  const uint32_t cap = uint32_t(std::min<uint64_t>(2048, (memory - fixed) / 8));
  LaunchPlan plan;
  // Few rows of many logits: parts of at least max(2048, k) logits, about 512 threadgroups in
  // all, at most 1024 / k parts (the merge takes a thread per candidate), and parts * vocab
  // below 2^32 (the kernel's part bounds).
  const uint64_t parts = std::min<uint64_t>({(512 + uint64_t(rows) - 1) / uint64_t(rows),
                                              uint64_t(vocab) / std::max<uint64_t>(2048, uint64_t(k)),
                                              1024 / uint64_t(k), dev.max_grid.y, UINT32_MAX / uint64_t(vocab)});
  if (parts >= 2) {
    const uint32_t m = uint32_t(parts * uint64_t(k));
    const uint32_t tg = row_threads(dev, std::max<uint64_t>(256, uint64_t(k))), merge_tg = row_threads(dev, m);
    plan.scratch.push_back({"topk_cand_values", call.dtype.t, size_t(rows) * m});
    plan.scratch.push_back({"topk_cand_index", DType::U32, size_t(rows) * m});
    plan.scratch.push_back({"topk_part_found", DType::U32, size_t(rows) * parts});
    plan.scratch.push_back({"topk_found", DType::U32, size_t(rows)});
    std::vector<std::pair<std::string, std::string>> bind{{"cand_values", "topk_cand_values"}, {"cand_index", "topk_cand_index"}};
    std::vector<std::pair<std::string, std::string>> parts_bind = bind;
    parts_bind.push_back({"part_found", "topk_part_found"});
    std::vector<std::pair<std::string, std::string>> merge_bind = bind;
    merge_bind.push_back({"found", "topk_found"});
    plan.steps.push_back({"iron_topk_parts", {uint32_t(rows), uint32_t(parts), 1}, {tg, 1, 1},
                          {{"rows", uint32_t(rows)}, {"vocab", uint32_t(vocab)}, {"parts", uint32_t(parts)}, {"k", uint32_t(k)}, {"cap", cap}},
                          parts_bind});
    plan.steps.push_back({"iron_topk_merge", {uint32_t(rows), 1, 1}, {merge_tg, 1, 1},
                          {{"rows", uint32_t(rows)}, {"m", m}, {"k", uint32_t(k)}, {"cap", cap}}, merge_bind});
    plan.reason = "split: " + std::to_string(parts) + " parts a row in threadgroups of " + std::to_string(tg) + ", a merge of " +
                  std::to_string(m) + " candidates on " + std::to_string(merge_tg) + " threads; " + std::to_string(cap) +
                  " candidates";
    return plan;
  }
  const uint32_t tg = row_threads(dev, std::max<uint64_t>(uint64_t(vocab), uint64_t(k)));
  plan.scratch.push_back({"topk_found", DType::U32, size_t(rows)});
  plan.steps.push_back({"iron_topk", {uint32_t(rows), 1, 1}, {tg, 1, 1},
                        {{"rows", uint32_t(rows)}, {"vocab", uint32_t(vocab)}, {"k", uint32_t(k)}, {"cap", cap}},
                        {{"found", "topk_found"}}});
  plan.reason = "one threadgroup of " + std::to_string(tg) + " per row, " + std::to_string(cap) + " candidates";
  return plan;
}
IRON_SELECTOR(iron_topk, topk_for);

// Through the selectors: a row of 1000 with ties, and 3 rows of 5000 (more logits than threads).
IRON_TEST_KERNEL(iron_argmax, call_rows6_v1000_ties, {f32}, {f16}, {bf16}) {
  TestSetup t = argmax_case(dt, 6, 1000, 64, tied_logits(6, 1000, 341));
  return TestSetup(dt).in("logits", t.inputs().at("logits")).out("index", 6).call({{"rows", 6}, {"vocab", 1000}}).oracle(t.oracle_fn());
}
// 2 tied rows of 20003 logits: 512 parts of 5 chunks would be too small, so 19 parts of 132
// chunks (the tail in the last); the maximum repeated at a part boundary.
IRON_TEST_KERNEL(iron_argmax, call_rows2_v20003_split_ties, {f32}, {bf16}) {
  std::vector<double> x = tied_logits(2, 20003, 345);
  x[20003 + 132 * 8 * 3 - 1] = x[20003 + 132 * 8 * 3] = 12;  // row 1: the last logit of part 2 and the first of part 3
  TestSetup t = argmax_case(dt, 2, 20003, 64, x);
  return TestSetup(dt).in("logits", x).out("index", 2).call({{"rows", 2}, {"vocab", 20003}}).oracle(t.oracle_fn());
}
IRON_TEST_KERNEL(iron_argmax, call_rows3_v5000, {f32}, {bf16}) {
  TestSetup t = argmax_case(dt, 3, 5000, 64, fixture::uniform(3 * 5000, -10.0, 10.0, 342));
  return TestSetup(dt).in("logits", t.inputs().at("logits")).out("index", 3).call({{"rows", 3}, {"vocab", 5000}}).oracle(t.oracle_fn());
}
// Top-k through the selector: k = 50 over 3 rows of 320, k = 7 over tied rows of 256, and the
// split: 2 tied rows of 20000 at k = 64 (9 parts of 2222 logits, a merge of 576 candidates). The
// family's outputs are values and indices; each plan keeps found in its scratch.
static std::function<void(const Tensors&, Tensors&)> without_found(std::function<void(const Tensors&, Tensors&)> oracle,
                                                                    uint32_t rows) {
  return [oracle, rows](const Tensors& in, Tensors& out) {
    out.emplace("found", std::vector<double>(rows));
    oracle(in, out);
    out.erase("found");
  };
}
static TestSetup topk_call_case(DType dt, uint32_t rows, uint32_t vocab, uint32_t k, std::vector<double> x) {
  TestSetup t = topk_case(dt, rows, vocab, k, 2048, 1024, std::move(x));
  return TestSetup(dt)
      .in("logits", t.inputs().at("logits"))
      .out("values", size_t(rows) * k)
      .out("indices", size_t(rows) * k)
      .call({{"rows", rows}, {"vocab", vocab}, {"k", k}})
      .error_floor(t.floor())
      .oracle(without_found(t.oracle_fn(), rows));
}
IRON_TEST_KERNEL(iron_topk, call_rows3_v320_k50, {f32}, {f16}, {bf16}) {
  return topk_call_case(dt, 3, 320, 50, fixture::uniform(3 * 320, -10.0, 10.0, 343));
}
IRON_TEST_KERNEL(iron_topk, call_rows4_v256_k7_ties, {f32}, {bf16}) {
  return topk_call_case(dt, 4, 256, 7, tied_logits(4, 256, 344));
}
IRON_TEST_KERNEL(iron_topk, call_rows2_v20000_k64_split, {f32}, {bf16}) {
  return topk_call_case(dt, 2, 20000, 64, tied_logits(2, 20000, 346));
}

// Through the selectors (BENCH-NAMES): argmax rows1_v128256, rows64_v128256; top-k k = 50
// rows1_v128256_k50, rows64_v128256_k50 (f32 logits; bf16 too). Bytes: the logits once.
static BenchSetup sampling_call_bench(DType dt, uint32_t rows, uint32_t k, uint64_t seed) {
  const uint32_t vocab = 128256;
  BenchSetup b(dt);
  b.in("logits", fixture::uniform(size_t(rows) * vocab, -20.0, 20.0, seed));
  if (k == 0) {
    b.out("index", rows).call({{"rows", rows}, {"vocab", vocab}});
    b.oracle(argmax_case(dt, rows, vocab, 1024, {}).oracle_fn());
  } else {
    b.out("values", size_t(rows) * k).out("indices", size_t(rows) * k);
    b.call({{"rows", rows}, {"vocab", vocab}, {"k", k}});
    b.oracle(without_found(topk_case(dt, rows, vocab, k, 2048, 1024, {}).oracle_fn(), rows)).error_floor(0x1p-126);
  }
  return b.bytes(double(rows) * vocab * dtype_size(dt));
}
IRON_BENCH(iron_argmax, rows1_v128256, {f32, 0}, {bf16, 0}) { return sampling_call_bench(dt, 1, 0, 331); }
IRON_BENCH(iron_argmax, rows64_v128256, {f32, 0}, {bf16, 0}) { return sampling_call_bench(dt, 64, 0, 332); }
IRON_BENCH(iron_topk, rows1_v128256_k50, {f32, 0}, {bf16, 0}) { return sampling_call_bench(dt, 1, 50, 333); }
IRON_BENCH(iron_topk, rows64_v128256_k50, {f32, 0}, {bf16, 0}) { return sampling_call_bench(dt, 64, 50, 334); }

}  // namespace iron::kernels
