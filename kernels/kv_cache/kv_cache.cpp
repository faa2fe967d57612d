// The key/value cache of autoregressive decoding. A token's keys (and values) form one row of
// kv_heads * head_dim elements, so every kernel here copies whole rows between a token-ordered
// tensor [tokens, kv_heads, head_dim] and a cache:
//   iron_kv_append          new K/V rows into a contiguous cache [max_seq, kv_heads, head_dim] at
//                           the given positions: k_cache[positions[t]] = k[t] (and v alike);
//   iron_kv_append_paged    the same through a block table into a paged cache [num_blocks,
//                           block_size, kv_heads, head_dim]: token t of sequence s = seq_ids[t]
//                           at position p = positions[t] goes to row p % block_size of physical
//                           block block_table[s, p / block_size];
//   iron_kv_gather_paged    one sequence read back out of the paged cache: k_out[p] = row p %
//                           block_size of block block_table[p / block_size], p < seq_len.
// One thread per 8 elements of the copied rows (grid = ceil(rows * row / 8 / tg) threadgroups of
// tg threads, mode Elementwise). When a row holds a multiple of 8 elements (every real head size),
// a thread's 8 elements lie in one row at an offset that is a multiple of 8 on both sides, so the
// copy is one 16-byte load and store per buffer (two for f32); otherwise each element is copied on
// its own, guarded by the end of the rows. Pure copies: bit-exact on every backend.
// Bad indices never touch memory outside the buffers: an append skips a token whose position is
// >= max_seq, whose sequence id is >= seqs, whose logical block is >= blocks_per_seq or whose
// physical block is >= num_blocks (that row is left as it was); a gather writes zeros for a
// position whose block is out of range. Positions within one call must be distinct (two tokens
// written to one row leave either of them).
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

namespace {

// Where source row r goes (append) or comes from (gather), and whether that row is valid.
struct RowRoute {
  Expr row;
  Expr ok;
};
using Router = std::function<RowRoute(Expr r)>;

constexpr uint32_t kVec = 8;  // elements per thread: 16 bytes of a 16-bit dtype

// Copies `rows` rows of `row` elements for each (from, to) buffer pair. Append (gather = false):
// to[route(r).row * row + j] = from[r * row + j] where route(r).ok. Gather: to[r * row + j] =
// from[route(r).row * row + j], or 0 where !route(r).ok.
void copy_rows(Expr rows, Expr row, const std::vector<std::pair<Buffer, Buffer>>& pairs, const Router& route,
               bool gather) {
  Expr c = thread_id(0);
  Expr total = rows * row;
  if_(row % kVec == 0u, [&] {
    // The thread's 8 elements are row c / per_row, elements (c % per_row) * 8 .. + 7.
    Expr per_row = row / kVec;
    if_(c < total / kVec, [&] {
      RowRoute rr = route(c / per_row);
      Expr here = c * kVec;                                // a multiple of 8
      Expr there = (rr.row * per_row + c % per_row) * kVec;  // a multiple of 8
      if (!gather) {
        if_(rr.ok, [&] {
          for (const auto& [from, to] : pairs)
            for (uint32_t e = 0; e < kVec; ++e) to[there + e] = from[here + e];
        });
      } else {
        if_(rr.ok, [&] {
          for (const auto& [from, to] : pairs)
            for (uint32_t e = 0; e < kVec; ++e) to[here + e] = from[there + e];
        }).else_([&] {
          for (const auto& [from, to] : pairs)
            for (uint32_t e = 0; e < kVec; ++e) to[here + e] = 0;
        });
      }
    });
  }).else_([&] {
    for (uint32_t e = 0; e < kVec; ++e) {
      Expr i = c * kVec + e;
      if_(i < total, [&] {
        RowRoute rr = route(i / row);
        Expr there = rr.row * row + i % row;
        if (!gather) {
          if_(rr.ok, [&] {
            for (const auto& [from, to] : pairs) to[there] = from[i];
          });
        } else {
          if_(rr.ok, [&] {
            for (const auto& [from, to] : pairs) to[i] = from[there];
          }).else_([&] {
            for (const auto& [from, to] : pairs) to[i] = 0;
          });
        }
      });
    }
  });
}

void kv_append() {
  Expr tokens = constexpr_("tokens", u32);
  Expr max_seq = constexpr_("max_seq", u32);
  Expr kv_heads = constexpr_("kv_heads", u32);
  Expr head_dim = constexpr_("head_dim", u32);
  Buffer k = input("k", T, {tokens, kv_heads, head_dim});
  Buffer v = input("v", T, {tokens, kv_heads, head_dim});
  Buffer positions = input("positions", u32, {tokens});
  Buffer k_cache = inout("k_cache", T, {max_seq, kv_heads, head_dim});
  Buffer v_cache = inout("v_cache", T, {max_seq, kv_heads, head_dim});

  copy_rows(tokens, kv_heads * head_dim, {{k, k_cache}, {v, v_cache}},
            [&](Expr t) {
              Expr p = cast<u32>(positions[t]);
              return RowRoute{p, p < max_seq};
            },
            false);
}

void kv_append_paged() {
  Expr tokens = constexpr_("tokens", u32);
  Expr seqs = constexpr_("seqs", u32);
  Expr blocks_per_seq = constexpr_("blocks_per_seq", u32);
  Expr num_blocks = constexpr_("num_blocks", u32);
  Expr block_size = constexpr_("block_size", u32);
  Expr kv_heads = constexpr_("kv_heads", u32);
  Expr head_dim = constexpr_("head_dim", u32);
  Buffer k = input("k", T, {tokens, kv_heads, head_dim});
  Buffer v = input("v", T, {tokens, kv_heads, head_dim});
  Buffer positions = input("positions", u32, {tokens});
  Buffer seq_ids = input("seq_ids", u32, {tokens});
  Buffer block_table = input("block_table", u32, {seqs, blocks_per_seq});
  Buffer k_cache = inout("k_cache", T, {num_blocks, block_size, kv_heads, head_dim});
  Buffer v_cache = inout("v_cache", T, {num_blocks, block_size, kv_heads, head_dim});

  copy_rows(tokens, kv_heads * head_dim, {{k, k_cache}, {v, v_cache}},
            [&](Expr t) {
              Expr p = cast<u32>(positions[t]);
              Expr s = cast<u32>(seq_ids[t]);
              Expr logical = p / block_size;
              Expr in_table = (s < seqs) && (logical < blocks_per_seq);
              // Entry 0 stands in for a token outside the table, so the table is read in
              // bounds whatever the token says; in_table then discards the row.
              Expr block = cast<u32>(block_table[select(in_table, s * blocks_per_seq + logical, 0u)]);
              return RowRoute{block * block_size + p % block_size, in_table && (block < num_blocks)};
            },
            false);
}

void kv_gather_paged() {
  Expr seq_len = constexpr_("seq_len", u32);
  Expr blocks_per_seq = constexpr_("blocks_per_seq", u32);
  Expr num_blocks = constexpr_("num_blocks", u32);
  Expr block_size = constexpr_("block_size", u32);
  Expr kv_heads = constexpr_("kv_heads", u32);
  Expr head_dim = constexpr_("head_dim", u32);
  Buffer block_table = input("block_table", u32, {blocks_per_seq});
  Buffer k_cache = input("k_cache", T, {num_blocks, block_size, kv_heads, head_dim});
  Buffer v_cache = input("v_cache", T, {num_blocks, block_size, kv_heads, head_dim});
  Buffer k_out = output("k_out", T, {seq_len, kv_heads, head_dim});
  Buffer v_out = output("v_out", T, {seq_len, kv_heads, head_dim});

  copy_rows(seq_len, kv_heads * head_dim, {{k_cache, k_out}, {v_cache, v_out}},
            [&](Expr p) {
              Expr logical = p / block_size;
              Expr in_table = logical < blocks_per_seq;
              Expr block = cast<u32>(block_table[select(in_table, logical, 0u)]);
              return RowRoute{block * block_size + p % block_size, in_table && (block < num_blocks)};
            },
            true);
}

}  // namespace

IRON_KERNEL(iron_kv_append, kv_append, Elementwise, f32, f16, bf16);
IRON_KERNEL(iron_kv_append_paged, kv_append_paged, Elementwise, f32, f16, bf16);
IRON_KERNEL(iron_kv_gather_paged, kv_gather_paged, Elementwise, f32, f16, bf16);

// ---- Tests: pure copies, so every output element must be exact (the derived tolerance of a
// case with no arithmetic is the half ulp of the store, and a copied value is exact).

namespace {

uint32_t threads_groups(uint64_t elements, uint32_t tg) {
  uint64_t threads = (elements + kVec - 1) / kVec;
  return uint32_t((threads + tg - 1) / tg);
}

// Every case binds one more token than `tokens` says (an extra row of k and v and an extra,
// valid position or sequence/table entry): the kernel must copy exactly `tokens` rows, so a
// thread that strays past the end writes where the case checks.

// Contiguous append: `positions` (tokens + 1 entries) may hold out-of-range entries (>=
// max_seq), which the kernel skips. The cache starts with values of its own seed, so a skipped
// or misplaced row shows.
TestSetup append_case(DType dt, uint32_t max_seq, uint32_t heads, uint32_t dim, std::vector<double> positions,
                      uint32_t tg, uint32_t extra_groups = 0) {
  const size_t row = size_t(heads) * dim;
  const uint32_t tokens = uint32_t(positions.size()) - 1;
  return TestSetup(dt)
      .in("k", fixture::uniform((tokens + 1) * row, -4.0, 4.0, 901))
      .in("v", fixture::uniform((tokens + 1) * row, -4.0, 4.0, 902))
      .in("positions", std::move(positions))
      .in("k_cache", fixture::uniform(max_seq * row, -8.0, 8.0, 903))
      .in("v_cache", fixture::uniform(max_seq * row, -8.0, 8.0, 904))
      .out("k_cache", max_seq * row)
      .out("v_cache", max_seq * row)
      .constexprs({{"tokens", tokens}, {"max_seq", max_seq}, {"kv_heads", heads}, {"head_dim", dim}})
      .grid({threads_groups(tokens * row, tg) + extra_groups, 1, 1}, {tg, 1, 1})
      .oracle([tokens, max_seq, row](const Tensors& in, Tensors& out) {
        for (const char* name : {"k", "v"}) {
          const std::string cache = std::string(name) + "_cache";
          std::vector<double>& o = out.at(cache);
          o = in.at(cache);
          for (uint32_t t = 0; t < tokens; ++t) {
            const double p = in.at("positions")[t];
            if (p >= max_seq) continue;
            for (size_t j = 0; j < row; ++j) o[size_t(p) * row + j] = in.at(name)[t * row + j];
          }
        }
      });
}

// Rows of 2 x 128 (vector path), 3 x 10 (30 elements: the per-element path, rows straddling the
// 8-element runs), 1 x 4 (a row shorter than a run: the vector path would be wrong), 3 x 12 (36
// elements, a multiple of 9 and not of 8). Positions out of order, one equal to max_seq and one
// far beyond it (both skipped), and grids with idle threads past the end.
IRON_TEST_KERNEL(iron_kv_append, t5_h2_d128, {f32}, {f16}, {bf16}) {
  return append_case(dt, 9, 2, 128, {7, 0, 9, 3, 1000, 5}, 64, 1);
}
IRON_TEST_KERNEL(iron_kv_append, t7_h3_d10, {f32}, {f16}, {bf16}) {
  return append_case(dt, 8, 3, 10, {5, 8, 0, 7, 2, 100000, 1, 3}, 32, 1);
}
IRON_TEST_KERNEL(iron_kv_append, t6_h1_d4, {f32}, {bf16}) { return append_case(dt, 7, 1, 4, {5, 4, 6, 0, 2, 1, 3}, 32); }
IRON_TEST_KERNEL(iron_kv_append, t3_h3_d12, {f32}, {f16}) { return append_case(dt, 5, 3, 12, {4, 1, 5, 2}, 32, 2); }
// Rows of 5 elements, 1 to 7 tokens: the per-element path ends at every position of its last run
// of 8 (each element's end guard is exercised by one of them).
IRON_TEST_KERNEL(iron_kv_append, t1_h1_d5, {f32}) { return append_case(dt, 9, 1, 5, {3, 8}, 32); }
IRON_TEST_KERNEL(iron_kv_append, t2_h1_d5, {f32}) { return append_case(dt, 9, 1, 5, {3, 0, 8}, 32); }
IRON_TEST_KERNEL(iron_kv_append, t3_h1_d5, {f32}) { return append_case(dt, 9, 1, 5, {3, 0, 6, 8}, 32); }
IRON_TEST_KERNEL(iron_kv_append, t4_h1_d5, {f32}) { return append_case(dt, 9, 1, 5, {3, 0, 6, 1, 8}, 32); }
IRON_TEST_KERNEL(iron_kv_append, t5_h1_d5, {f32}) { return append_case(dt, 9, 1, 5, {3, 0, 6, 1, 7, 8}, 32); }
IRON_TEST_KERNEL(iron_kv_append, t6_h1_d5, {f32}) { return append_case(dt, 9, 1, 5, {3, 0, 6, 1, 7, 2, 8}, 32); }
IRON_TEST_KERNEL(iron_kv_append, t7_h1_d5, {f32}) { return append_case(dt, 9, 1, 5, {3, 0, 6, 1, 7, 2, 4, 8}, 32); }

// Paged append over `seqs` sequences with a block table; tokens name a sequence and a position.
// The last entry of positions and seq_ids is the extra token, and the table holds one row more
// than `seqs` (a sequence the kernel must not know).
struct PagedAppend {
  uint32_t seqs, blocks_per_seq, num_blocks, block_size, heads, dim;
  std::vector<double> table, positions, seq_ids;
};
TestSetup paged_append_case(DType dt, PagedAppend c, uint32_t tg) {
  const size_t row = size_t(c.heads) * c.dim;
  const uint32_t tokens = uint32_t(c.positions.size()) - 1;
  const size_t cache = size_t(c.num_blocks) * c.block_size * row;
  return TestSetup(dt)
      .in("k", fixture::uniform((tokens + 1) * row, -4.0, 4.0, 911))
      .in("v", fixture::uniform((tokens + 1) * row, -4.0, 4.0, 912))
      .in("positions", c.positions)
      .in("seq_ids", c.seq_ids)
      .in("block_table", c.table)
      .in("k_cache", fixture::uniform(cache, -8.0, 8.0, 913))
      .in("v_cache", fixture::uniform(cache, -8.0, 8.0, 914))
      .out("k_cache", cache)
      .out("v_cache", cache)
      .constexprs({{"tokens", tokens},
                   {"seqs", c.seqs},
                   {"blocks_per_seq", c.blocks_per_seq},
                   {"num_blocks", c.num_blocks},
                   {"block_size", c.block_size},
                   {"kv_heads", c.heads},
                   {"head_dim", c.dim}})
      .grid({threads_groups(tokens * row, tg) + 1, 1, 1}, {tg, 1, 1})
      .oracle([c, tokens, row](const Tensors& in, Tensors& out) {
        for (const char* name : {"k", "v"}) {
          const std::string cache_name = std::string(name) + "_cache";
          std::vector<double>& o = out.at(cache_name);
          o = in.at(cache_name);
          for (uint32_t t = 0; t < tokens; ++t) {
            const uint32_t p = uint32_t(in.at("positions")[t]), s = uint32_t(in.at("seq_ids")[t]);
            const uint32_t logical = p / c.block_size;
            if (s >= c.seqs || logical >= c.blocks_per_seq) continue;
            const uint32_t block = uint32_t(in.at("block_table")[s * c.blocks_per_seq + logical]);
            if (block >= c.num_blocks) continue;
            const size_t at = (size_t(block) * c.block_size + p % c.block_size) * row;
            for (size_t j = 0; j < row; ++j) o[at + j] = in.at(name)[t * row + j];
          }
        }
      });
}

// Two sequences of up to 3 blocks of 4 tokens in a pool of 7 blocks, scattered (a third table
// row, for sequence 2, holds valid blocks the kernel must not use). Tokens: a prefill of
// sequence 0 across a block boundary, decode steps of sequence 1, and four bad ones (each
// skipped): sequence id 2 (= seqs), position 12 of sequence 1 (logical block 3 = blocks_per_seq),
// a table entry of 7 (= num_blocks), and a table entry far out of range.
PagedAppend two_sequences(uint32_t heads, uint32_t dim) {
  PagedAppend c{2, 3, 7, 4, heads, dim, {}, {}, {}};
  c.table = {5, 2, 6, 100000, 7, 1, 3, 4, 0};
  c.positions = {2, 3, 4, 5, 8, 9, 3, 12, 5, 0, 6};
  c.seq_ids = {0, 0, 0, 0, 1, 1, 2, 1, 1, 1, 0};
  return c;
}
IRON_TEST_KERNEL(iron_kv_append_paged, two_seqs_h2_d64, {f32}, {f16}, {bf16}) {
  return paged_append_case(dt, two_sequences(2, 64), 64);
}
IRON_TEST_KERNEL(iron_kv_append_paged, two_seqs_h3_d10, {f32}, {f16}, {bf16}) {
  return paged_append_case(dt, two_sequences(3, 10), 32);
}
// Rows of 4 elements (the vector path would be wrong) and of 36 (a multiple of 9, not of 8).
IRON_TEST_KERNEL(iron_kv_append_paged, two_seqs_h1_d4, {f32}, {bf16}) {
  return paged_append_case(dt, two_sequences(1, 4), 32);
}
IRON_TEST_KERNEL(iron_kv_append_paged, two_seqs_h3_d12, {f32}, {f16}) {
  return paged_append_case(dt, two_sequences(3, 12), 32);
}
// Rows of 5 elements, 1 to 7 tokens (one sequence, blocks 2 and 0 of 3): every end position of
// the per-element path's last run.
PagedAppend one_sequence(uint32_t tokens) {
  PagedAppend c{1, 2, 3, 4, 1, 5, {2, 0, 1}, {}, {}};
  for (uint32_t t = 0; t <= tokens; ++t) c.positions.push_back((t * 3) % 8), c.seq_ids.push_back(0);
  return c;
}
IRON_TEST_KERNEL(iron_kv_append_paged, t1_h1_d5, {f32}) { return paged_append_case(dt, one_sequence(1), 32); }
IRON_TEST_KERNEL(iron_kv_append_paged, t2_h1_d5, {f32}) { return paged_append_case(dt, one_sequence(2), 32); }
IRON_TEST_KERNEL(iron_kv_append_paged, t3_h1_d5, {f32}) { return paged_append_case(dt, one_sequence(3), 32); }
IRON_TEST_KERNEL(iron_kv_append_paged, t4_h1_d5, {f32}) { return paged_append_case(dt, one_sequence(4), 32); }
IRON_TEST_KERNEL(iron_kv_append_paged, t5_h1_d5, {f32}) { return paged_append_case(dt, one_sequence(5), 32); }
IRON_TEST_KERNEL(iron_kv_append_paged, t6_h1_d5, {f32}) { return paged_append_case(dt, one_sequence(6), 32); }
IRON_TEST_KERNEL(iron_kv_append_paged, t7_h1_d5, {f32}) { return paged_append_case(dt, one_sequence(7), 32); }

// Gather: the sequence of `seq_len` positions through the first `bps` entries of `table`
// (entries >= num_blocks read as zeros; the table holds one valid entry more, which the kernel
// must not use), from a cache of random values.
TestSetup gather_case(DType dt, uint32_t seq_len, uint32_t num_blocks, uint32_t block_size, uint32_t heads,
                      uint32_t dim, std::vector<double> table, uint32_t tg) {
  const size_t row = size_t(heads) * dim;
  const size_t cache = size_t(num_blocks) * block_size * row;
  const uint32_t bps = uint32_t(table.size()) - 1;
  return TestSetup(dt)
      .in("block_table", std::move(table))
      .in("k_cache", fixture::uniform(cache, -8.0, 8.0, 921))
      .in("v_cache", fixture::uniform(cache, -8.0, 8.0, 922))
      .out("k_out", seq_len * row)
      .out("v_out", seq_len * row)
      .constexprs({{"seq_len", seq_len},
                   {"blocks_per_seq", bps},
                   {"num_blocks", num_blocks},
                   {"block_size", block_size},
                   {"kv_heads", heads},
                   {"head_dim", dim}})
      .grid({threads_groups(seq_len * row, tg) + 1, 1, 1}, {tg, 1, 1})
      .oracle([seq_len, num_blocks, block_size, bps, row](const Tensors& in, Tensors& out) {
        for (const char* name : {"k", "v"}) {
          const std::vector<double>& from = in.at(std::string(name) + "_cache");
          std::vector<double>& o = out.at(std::string(name) + "_out");
          for (uint32_t p = 0; p < seq_len; ++p) {
            const uint32_t logical = p / block_size;
            const uint32_t block = logical < bps ? uint32_t(in.at("block_table")[logical]) : num_blocks;
            for (size_t j = 0; j < row; ++j)
              o[p * row + j] = block < num_blocks ? from[(size_t(block) * block_size + p % block_size) * row + j] : 0.0;
          }
        }
      });
}

// 11 positions over 3 blocks of 4 (the last one partly used), scattered over a pool of 6, one
// entry equal to num_blocks (its rows read as zeros); seq_len 14 with a table of 3 blocks:
// positions 12 and 13 lie past the table (zeros).
IRON_TEST_KERNEL(iron_kv_gather_paged, s14_h2_d64, {f32}, {f16}, {bf16}) {
  return gather_case(dt, 14, 6, 4, 2, 64, {4, 6, 5, 1}, 64);
}
IRON_TEST_KERNEL(iron_kv_gather_paged, s11_h3_d10, {f32}, {f16}, {bf16}) {
  return gather_case(dt, 11, 6, 4, 3, 10, {4, 6, 1, 2}, 32);
}
IRON_TEST_KERNEL(iron_kv_gather_paged, s14_h1_d4_past_table, {f32}, {bf16}) {
  return gather_case(dt, 14, 6, 4, 1, 4, {2, 6, 3, 0}, 32);
}
IRON_TEST_KERNEL(iron_kv_gather_paged, s9_h3_d12, {f32}, {f16}) { return gather_case(dt, 9, 5, 4, 3, 12, {1, 4, 0, 2}, 32); }
// Rows of 5 elements, 1 to 7 positions: every end position of the per-element path's last run.
IRON_TEST_KERNEL(iron_kv_gather_paged, s1_h1_d5, {f32}) { return gather_case(dt, 1, 3, 2, 1, 5, {2, 0, 1, 1, 0}, 32); }
IRON_TEST_KERNEL(iron_kv_gather_paged, s2_h1_d5, {f32}) { return gather_case(dt, 2, 3, 2, 1, 5, {2, 0, 1, 1, 0}, 32); }
IRON_TEST_KERNEL(iron_kv_gather_paged, s3_h1_d5, {f32}) { return gather_case(dt, 3, 3, 2, 1, 5, {2, 0, 1, 1, 0}, 32); }
IRON_TEST_KERNEL(iron_kv_gather_paged, s4_h1_d5, {f32}) { return gather_case(dt, 4, 3, 2, 1, 5, {2, 0, 1, 1, 0}, 32); }
IRON_TEST_KERNEL(iron_kv_gather_paged, s5_h1_d5, {f32}) { return gather_case(dt, 5, 3, 2, 1, 5, {2, 0, 1, 1, 0}, 32); }
IRON_TEST_KERNEL(iron_kv_gather_paged, s6_h1_d5, {f32}) { return gather_case(dt, 6, 3, 2, 1, 5, {2, 0, 1, 1, 0}, 32); }
IRON_TEST_KERNEL(iron_kv_gather_paged, s7_h1_d5, {f32}) { return gather_case(dt, 7, 3, 2, 1, 5, {2, 0, 1, 1, 0}, 32); }

}  // namespace

// ---- Kernel-owned launch: each kernel is its own family, called by its logical sizes; 256
// threads per threadgroup (fewer where the device allows fewer), one thread per 8 elements.
namespace {
uint32_t copy_threads(const DeviceInfo& dev) {
  const uint32_t lanes = std::max(1u, dev.lane_width);
  return std::max(lanes, std::min(256u, dev.max_threads_per_group) / lanes * lanes);
}
// The grid for `rows` rows of `row` elements, checked against u32 indexing and the grid limit.
Dim3 copy_grid(const DeviceInfo& dev, uint64_t rows, uint64_t row, uint64_t cache_rows, uint32_t tg) {
  if (rows < 1 || row < 1 || rows * row > UINT32_MAX || cache_rows * row > UINT32_MAX)
    throw Error("the copied rows (" + std::to_string(rows) + " x " + std::to_string(row) + ") and the cache (" +
                std::to_string(cache_rows) + " rows) must be non-empty and index in u32");
  const uint64_t groups = ((rows * row + kVec - 1) / kVec + tg - 1) / tg;
  if (groups > dev.max_grid.x)
    throw Error(std::to_string(groups) + " threadgroups exceed the device's grid limit " + std::to_string(dev.max_grid.x));
  return {uint32_t(groups), 1, 1};
}
Constexprs u32_args(const Call& call, std::initializer_list<const char*> names) {
  Constexprs out;
  for (const char* n : names) {
    const int64_t v = call.size(n);
    if (v > int64_t(UINT32_MAX)) throw Error(std::string(n) + " = " + std::to_string(v) + " does not fit u32");
    out[n] = uint32_t(v);
  }
  return out;
}
}  // namespace

static LaunchPlan kv_append_for(const Call& call, const DeviceInfo& dev) {
  Constexprs args = u32_args(call, {"tokens", "max_seq", "kv_heads", "head_dim"});
  const uint64_t row = call.size("kv_heads") * call.size("head_dim");
  const uint32_t tg = copy_threads(dev);
  LaunchPlan plan;
  plan.steps.push_back({"iron_kv_append", copy_grid(dev, call.size("tokens"), row, call.size("max_seq"), tg), {tg, 1, 1}, args, {}});
  plan.reason = row % kVec == 0 ? "rows of a multiple of 8 elements: 16-byte copies" : "element-by-element copies";
  return plan;
}
IRON_SELECTOR(iron_kv_append, kv_append_for);

static LaunchPlan kv_append_paged_for(const Call& call, const DeviceInfo& dev) {
  Constexprs args =
      u32_args(call, {"tokens", "seqs", "blocks_per_seq", "num_blocks", "block_size", "kv_heads", "head_dim"});
  const uint64_t row = call.size("kv_heads") * call.size("head_dim");
  const uint32_t tg = copy_threads(dev);
  LaunchPlan plan;
  plan.steps.push_back({"iron_kv_append_paged",
                        copy_grid(dev, call.size("tokens"), row, call.size("num_blocks") * call.size("block_size"), tg),
                        {tg, 1, 1}, args, {}});
  plan.reason = row % kVec == 0 ? "rows of a multiple of 8 elements: 16-byte copies" : "element-by-element copies";
  return plan;
}
IRON_SELECTOR(iron_kv_append_paged, kv_append_paged_for);

static LaunchPlan kv_gather_paged_for(const Call& call, const DeviceInfo& dev) {
  Constexprs args = u32_args(call, {"seq_len", "blocks_per_seq", "num_blocks", "block_size", "kv_heads", "head_dim"});
  const uint64_t row = call.size("kv_heads") * call.size("head_dim");
  const uint32_t tg = copy_threads(dev);
  LaunchPlan plan;
  plan.steps.push_back({"iron_kv_gather_paged",
                        copy_grid(dev, call.size("seq_len"), row, call.size("num_blocks") * call.size("block_size"), tg),
                        {tg, 1, 1}, args, {}});
  plan.reason = row % kVec == 0 ? "rows of a multiple of 8 elements: 16-byte copies" : "element-by-element copies";
  return plan;
}
IRON_SELECTOR(iron_kv_gather_paged, kv_gather_paged_for);

namespace {
// A case's setup run through the family's selector instead of its own grid.
TestSetup through_selector(const TestSetup& t) {
  TestSetup c(t.dtype());
  for (const auto& [name, values] : t.inputs()) c.in(name, values);
  for (const auto& [name, count] : t.outputs()) c.out(name, count);
  return c.call(t.scalars()).oracle(t.oracle_fn());
}
}  // namespace
IRON_TEST_KERNEL(iron_kv_append, call_t5_h2_d128, {f32}, {f16}, {bf16}) {
  return through_selector(append_case(dt, 9, 2, 128, {7, 0, 9, 3, 1000, 5}, 64));
}
IRON_TEST_KERNEL(iron_kv_append_paged, call_two_seqs_h3_d10, {f32}, {bf16}) {
  return through_selector(paged_append_case(dt, two_sequences(3, 10), 32));
}
IRON_TEST_KERNEL(iron_kv_gather_paged, call_s14_h2_d64, {f32}, {bf16}) {
  return through_selector(gather_case(dt, 14, 6, 4, 2, 64, {4, 6, 5, 1}, 64));
}

// Benchmarks: a decode step of a Llama-3-8B layer (32 sequences append one token each, 8 KV
// heads of 128, bf16) into paged caches, and a prefill of 4096 tokens into a contiguous cache;
// the gather reads a 4096-token sequence back. Bytes: each K/V row read once and written once
// (plus the index buffers).
namespace {
BenchSetup from_test(const TestSetup& t, double bytes) {
  BenchSetup b(t.dtype());
  for (const auto& [name, values] : t.inputs()) b.in(name, values);
  for (const auto& [name, count] : t.outputs()) b.out(name, count);
  b.constexprs(t.scalars()).grid(t.grid_size(), t.threadgroup()).oracle(t.oracle_fn()).error_floor(t.floor());
  return b.bytes(bytes);
}
std::vector<double> iota(uint32_t n, uint32_t start = 0) {
  std::vector<double> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = start + i;
  return v;
}
}  // namespace
// Through the selector (BENCH-NAMES): 1 and 512 tokens of 8 KV heads of 128 into a cache of
// 4096 positions.
static BenchSetup kv_append_call_bench(DType dt, uint32_t tokens) {
  std::vector<double> positions = iota(tokens + 1, 3000);
  TestSetup t = through_selector(append_case(dt, 4096, 8, 128, std::move(positions), 256));
  BenchSetup b(dt);
  for (const auto& [name, values] : t.inputs()) b.in(name, values);
  for (const auto& [name, count] : t.outputs()) b.out(name, count);
  b.call(t.scalars()).oracle(t.oracle_fn());
  return b.bytes(4.0 * tokens * 8 * 128 * dtype_size(dt) + 4.0 * tokens);
}
IRON_BENCH(iron_kv_append, t1_h8_d128_seq4096, {f32, 0}, {f16, 0}, {bf16, 0}) { return kv_append_call_bench(dt, 1); }
IRON_BENCH(iron_kv_append, t512_h8_d128_seq4096, {f32, 0}, {f16, 0}, {bf16, 0}) { return kv_append_call_bench(dt, 512); }
IRON_BENCH(iron_kv_append_paged, decode_s32_h8_d128, {f32, 0}, {f16, 0}, {bf16, 0}) {
  // 32 sequences of up to 8 blocks of 16 tokens; each appends its token at position 100 + s.
  PagedAppend c{32, 8, 32 * 8, 16, 8, 128, iota(33 * 8), {}, {}};
  for (uint32_t s = 0; s <= 32; ++s) c.positions.push_back(100 + s), c.seq_ids.push_back(s);
  return from_test(paged_append_case(dt, c, 128), 4.0 * 32 * 8 * 128 * dtype_size(dt));
}
IRON_BENCH(iron_kv_gather_paged, s4096_h8_d128, {f32, 0}, {f16, 0}, {bf16, 0}) {
  std::vector<double> table(257);
  for (uint32_t b = 0; b < 257; ++b) table[b] = (b * 37) % 256;  // scattered blocks
  return from_test(gather_case(dt, 4096, 256, 16, 8, 128, std::move(table), 256), 4.0 * 4096 * 8 * 128 * dtype_size(dt));
}

}  // namespace iron::kernels
