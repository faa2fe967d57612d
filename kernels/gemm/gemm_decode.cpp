// Decode rows of the GEMM family: C [m, n] = A [m, k] B [k, n] (+ the fused epilogue) for a few
// rows of A (m <= 16 is what it is for) against B column-major, i.e. a linear layer's weight
// W [n, k] with B = W^T. The product is bound by reading W once, so the kernel streams W: no
// staging of W, no pipeline, one kernel.
//
//   iron_gemm_decode_<OUT>   (mode Reduction; T in {f16, bf16}; OUT in {f32, f16, bf16})
//
// Element (i, kk) of A is a[a_off + i * lda + kk] (A row-major), W (j, kk) = B (kk, j) is
// b[b_off + j * ldb + kk]. k, lda, ldb, a_off and b_off are multiples of 8 (declared facts,
// checked at every dispatch), so every 8-element chunk of a row of A or W starts 16 bytes
// aligned. m, k, ksplit, mma, unroll and epi are specialized: loop bounds are constants and the
// body the dispatch does not take is folded away. Two bodies:
//
// mma = 0, the lanes body (products in f32 on the lanes). A lane group owns kRows = 4
// consecutive rows of W (a row group) and one of `ksplit` slices of K; the ksplit lane groups of
// a row group are adjacent (num_simd_groups() / ksplit row groups per threadgroup). Lane l of
// slice s reads the chunks ((j * unroll + u) * ksplit + s) * lane_width + l: the slices of a row
// group read consecutive 16-byte chunks of each W row; every step a lane loads `unroll` (1, 2 or
// 4, specialized; gemm_for's default 2) chunks of each of its 4 rows (4 x unroll 16-byte loads,
// the vectorize pass's) before it multiplies, and for
// each of the block's 16 rows of A (rows at or past m fold away) accumulates 4 x 8 products in
// f32 (a register array). program_id(1) is the block of 16 rows of A (one block for m <= 16; more
// re-read W, correct for any m). Rows past n or m are clamped for the loads and never stored.
// Each accumulator is summed across its lane group by lane_sum into `red` (red_len = groups * 64
// floats); after one barrier lane e < 64 of slice 0 adds the slices' sums of output e in slice
// order.
//
// mma = 1, the tiles body (k a multiple of 16, n >= 16): C^T = W A^T on cooperative tiles. The
// threadgroup first stages its block of 16 rows of A (program_id(1)) in `at`, row-major with the
// row stride k + 8 (at_len = 16 (k + 8); rows past m are 0; 16-byte asynchronous copies), and
// reads A^T's tiles from there column-major; then each lane group takes 16 rows of W (a tile row; the
// last one moved back to end at n) and one of `ksplit` slices of K, in blocks of kTileUnroll = 4
// K steps (64 elements of each row): it stages its blocks into its own ring of kTileStages slots
// in `ws` (ws_len = groups * kTileStages * 16 * 72) with 16-byte asynchronous copies,
// kTileStages - 1 blocks ahead, and multiplies each block's 4 W tiles (ldmatrix on CUDA) by A^T's
// tiles from `at`, 16 x 16 products summed on the tensor cores. Threadgroups are persistent: they
// walk the tile rows in a grid stride (every lane group the same number of rounds and blocks, for
// the barriers). The slices' 16 x 16 f32 sums go to `red` (red_len = groups * 256) and lane
// group 0 of each tile row adds them in slice order.
//
// Then the epilogue (docs/gemm.md: none, bias, silu, gelu, residual) in f32, one rounding to OUT.
// No atomics: fixed-order sums, bit-exact run to run.
// Dispatch (gemm_for plans it): lanes: grid = {ceil(ceil(n / 4) / (groups / ksplit)), ceil(m /
// 16), 1}; tiles: grid = {at most one threadgroup per tile row group, ceil(m / 16), 1}; threadgroup = {groups
// * lane width, 1, 1} with groups a multiple of ksplit.
//
//   iron_gemm_decode_wg_tma_<OUT>   (mode Reduction; T bf16; OUT in {f32, bf16}; CUDA sm_90a, the
//   interpreter) C^T = W A^T on the warpgroup tiles, for m <= 16: threadgroup t owns rows 64t ..
//   64t + 63 of W and all of K. Warpgroup 0 copies (its thread 0 alone): per 64-deep K step the
//   tensor maps' boxes of W (64 rows, `b_map` over b as [n, k]) and of A (16 rows, `a_map` over a
//   as [m, k]), 128-byte rows under the 128-byte swizzle, into stage step % kDecodeWgStages,
//   completing on full[s]; past n, m and k the copy engine fills zeros. Warpgroup 1 multiplies:
//   4 m64n16k16 products per step (A = the W box, B = A's box, the [N, K] layout the B descriptor
//   reads), hands each stage back on empty[s] once its products retired, and after the loop its
//   64 x 16 sums go through a threadgroup scratch to C with the epilogue. No K slices: bit-exact
//   run to run. Dispatch: grid = {ceil(n / 64), 1, 1}, threadgroup = {8 * lane width, 1, 1}.
#include <memory>
#include <vector>

#include <iron/iron.hpp>

#include "epilogue.hpp"
#include "gemm.hpp"

namespace iron::kernels::gemm {
using namespace iron::dsl;

namespace {

constexpr uint32_t kRows = kDecodeRows;      // rows of W per lane group
constexpr uint32_t kBlock = kDecodeBlock;    // rows of A per pass
constexpr uint32_t kUnrollMax = kDecodeUnrollMax;  // lanes body: the most chunks per lane per step
constexpr uint32_t kTileUnroll = 4;          // tiles body: K steps per staged block
constexpr uint32_t kTileStages = kDecodeTileStages;  // tiles body: staged blocks per lane group
constexpr uint32_t kTileLd = kDecodeTileLd;  // tiles body: staged row stride (64 + 8 elements)

// The parameters of one dispatch, shared by the two bodies.
struct Decode {
  DType out_t;
  Expr m, n, k, lda, ldb, a_off, b_off, ksplit, epi, unroll;
  Buffer a, b, bias, res, c;
  TgBuffer red, at, ws;

  // The epilogue of element (gi, gj), v its f32 sum, stored to C when both are in range.
  void store(Expr gi, Expr gj, Expr v) const {
    if_((gi < m) && (gj < n), [&] {
      Expr out = apply_epilogue(
          epi, v, nullptr, [&] { return cast<f32>(bias[gj]); }, [&] { return cast<f32>(res[gi * n + gj]); });
      c[gi * n + gj] = cast_to(out, out_t);
    });
  }
  void lanes_body() const;
  void tiles_body() const;
};

void Decode::lanes_body() const {
  Expr lanes = lane_width();
  Expr w = simd_group_id();
  Expr lane = lane_id();
  Expr slice = w % ksplit;
  Expr group = program_id(0) * (num_simd_groups() / ksplit) + w / ksplit;
  Expr row0 = group * kRows;
  Expr mb0 = program_id(1) * kBlock;
  Expr chunks = k / 8u;
  Expr per_step = ksplit * lanes;
  Expr steps = (chunks + per_step - 1u) / per_step;

  // Register arrays (every index a constant once the loops of at most 16 steps unroll): the
  // 4 x 16 sums (W row r, A row i at r * 16 + i), a step's W chunks (`unroll` of each row), one
  // A chunk.
  TgBuffer acc = local_array("acc", f32, kRows * kBlock);
  TgBuffer wv = local_array("wv", f32, kUnrollMax * kRows * 8);
  TgBuffer av = local_array("av", f32, 8);
  for_(0u, kBlock, [&](Expr i) { for_(0u, kRows, [&](Expr r) { acc[r * kBlock + i] = 0.0f; }); });
  Expr ur = min(max(unroll, 1u), kUnrollMax);  // the call's unroll (gemm_for passes 1, 2 or 4)
  auto chunk_of = [&](Expr j, Expr u) { return ((j * ur + u) * ksplit + slice) * lanes + lane; };

  // `unroll` chunks per step (1, 2 or 4; specialized, so the loops over kUnrollMax keep that
  // many and the register indices stay constants): their W loads (clamped to the last chunk, so
  // unconditional) are issued before any product, then each row of A's chunks and the products
  // of the chunks that exist. The rows of A are host copies (the sums' register indices), the
  // rest loops.
  for_(0u, (steps + ur - 1u) / ur, [&](Expr j) {
    for_(0u, kUnrollMax, [&](Expr u) {
      if_(u < ur, [&] {
        Expr kk = min(chunk_of(j, u), chunks - 1u) * 8u;
        for_(0u, kRows, [&](Expr r) {
          Expr row = b_off + min(row0 + r, n - 1u) * ldb;
          for_(0u, 8u, [&](Expr e) { wv[(u * kRows + r) * 8u + e] = cast<f32>(b[row + kk + e]); });
        });
      });
    });
    for (uint32_t i = 0; i < kBlock; ++i)
      if_(m > i, [&] {  // folds when m is specialized: rows of A the call does not have vanish
        Expr arow = a_off + min(mb0 + i, m - 1u) * lda;
        for_(0u, kUnrollMax, [&](Expr u) {
          Expr ch = chunk_of(j, u);
          if_((u < ur) && (ch < chunks), [&] {
            for_(0u, 8u, [&](Expr e) { av[e] = cast<f32>(a[arow + ch * 8u + e]); });
            for_(0u, kRows, [&](Expr r) {
              for_(0u, 8u, [&](Expr e) {
                acc[r * kBlock + i] = acc[r * kBlock + i] + wv[(u * kRows + r) * 8u + e] * av[e];
              });
            });
          });
        });
      });
  });

  // Each sum across the lane group, into threadgroup memory; after one barrier the 64 lanes of
  // slice 0's lane group (a loop at narrower widths) add the slices in slice order and store.
  for (uint32_t i = 0; i < kBlock; ++i)
    if_(m > i, [&] {
      for_(0u, kRows, [&](Expr r) {
        Expr total = lane_sum(Operand(acc[r * kBlock + i]).value);
        if_(lane == 0u, [&] { red[w * (kRows * kBlock) + r * kBlock + i] = total; });
      });
    });
  barrier();
  if_(slice == 0u, [&] {
    for_(lane, kRows * kBlock, lanes, [&](Expr e) {
      Expr r = e / kBlock;
      Expr i = e % kBlock;
      if_(mb0 + i < m, [&] {
        Var<f32> v = 0.0f;
        for_(0u, ksplit, [&](Expr q) { v += red[(w + q) * (kRows * kBlock) + e]; });
        store(mb0 + i, row0 + r, Operand(v).value);
      });
    });
  });
}

void Decode::tiles_body() const {
  // A [16, k] (this threadgroup's block of 16 rows of A) into `at` once, row-major with the row
  // stride k + 8: 16-byte asynchronous copies, rows past m zero-filled by the copies themselves,
  // every copy in flight at once (one commit group, the oldest of every thread). The B operand of
  // a tile is then A^T read column-major (ldmatrix without .trans on CUDA), and the 8-element pad
  // puts the eight rows one ldmatrix phase reads in eight distinct 16-byte bank quads.
  Expr chunks = k / 8u;               // per row of A
  Expr mb0 = program_id(1) * kBlock;  // this threadgroup's block of 16 rows of A
  Expr lda_t = k + 8u;                // the staged rows' stride
  for_(local_id(0), chunks * kBlock, group_size(0), [&](Expr e) {
    Expr i = e / chunks;
    Expr kk = (e % chunks) * 8u;
    Expr valid = select(mb0 + i < m, cast<u32>(8u), cast<u32>(0u));
    async_copy(at[i * lda_t + kk], a[a_off + min(mb0 + i, m - 1u) * lda + kk], 8, valid);
  });
  async_commit();
  // No wait or barrier here: the K block loop's first wait (below) completes this group, the
  // oldest, and its barrier comes before any tile load of A.

  // Lane group w: K slice w % ksplit of the tile row (16 rows of W) it is on. The threadgroup
  // walks the tile rows in a grid stride, every lane group the same number of rounds and K
  // blocks (the barriers), idle past the last tile row. A K block is kTileUnroll = 4 K steps,
  // 64 elements of each of the 16 rows: the lane group stages its blocks into its own ring of
  // kTileStages slots in `ws` with 16-byte asynchronous copies, kTileStages - 1 blocks ahead,
  // and multiplies each from there (ldmatrix on CUDA).
  TileShape tile = coop_tile_setup(16, 16, 16, T);
  Expr w = simd_group_id();
  Expr lane = lane_id();
  Expr slice = w % ksplit;
  Expr per_group = num_simd_groups() / ksplit;  // tile rows per threadgroup and round
  Expr tiles = (n + 15u) / 16u;
  Expr stride = num_programs(0) * per_group;
  Expr rounds = (tiles + stride - 1u) / stride;
  Expr ksteps = k / 16u;
  Expr blocks = (ksteps + (kTileUnroll - 1)) / kTileUnroll;
  Expr mine = (blocks + ksplit - 1u) / ksplit;  // K blocks per slice (the last may be past k)
  constexpr uint32_t kSlot = 16 * kTileLd;      // one block's staged elements
  for_(0u, rounds, [&](Expr round) {
    Expr t = round * stride + program_id(0) * per_group + w / ksplit;
    Expr live = t < tiles;
    // The last tile row is moved back to end at n (n >= 16): its rows before t * 16 belong to the
    // previous tile row and are not stored twice.
    Expr n0 = min(t * 16u, n - 16u);
    auto stage_block = [&](Expr jb, Expr slot) {
      Expr kb = (jb * ksplit + slice) * (16u * kTileUnroll);
      for_(lane, 16u * (16u * kTileUnroll / 8u), lane_width(), [&](Expr c) {
        Expr r = c / (16u * kTileUnroll / 8u);
        Expr kk = (c % (16u * kTileUnroll / 8u)) * 8u;
        Expr gk = kb + kk;
        Expr valid = select(live && (gk < k), min(k - gk, 8u), 0u);
        async_copy(ws[(w * kTileStages + slot) * kSlot + r * kTileLd + kk], b[b_off + (n0 + r) * ldb + min(gk, k - 8u)], 8,
                   valid);
      });
      async_commit();
    };
    for (uint32_t s = 0; s + 1 < kTileStages; ++s) {
      Expr at_s = mine * 0u + s;  // the constant s as a u32 value
      if_(at_s < mine, [&] { stage_block(at_s, at_s); }).else_([&] { async_commit(); });
    }
    FragVar acc(coop_tile_fill(tile, 0.0f));
    for_(0u, mine, [&](Expr jb) {
      // This lane group's copies of block jb have landed (every commit group before the last
      // kTileStages - 2); after the barrier every lane group is past block jb - 1, whose slot the
      // next copy overwrites.
      async_wait(kTileStages - 2);
      barrier();
      Expr next = jb + (kTileStages - 1);
      if_(next < mine, [&] { stage_block(next, next % kTileStages); }).else_([&] { async_commit(); });
      if_(live, [&] {
        Expr base = (w * kTileStages + jb % kTileStages) * kSlot;
        for (uint32_t u = 0; u < kTileUnroll; ++u) {
          Expr step = (jb * ksplit + slice) * kTileUnroll + u;
          if_(step < ksteps, [&] {
            Frag fw = coop_tile_load_a(tile, ws, base + u * 16u, kTileLd);
            Frag fa = coop_tile_load_b(tile, at, step * 16u, lda_t, TileLayout{true, {}});
            acc.set(coop_tile_run(fw, fa, acc.get()));
          });
        }
      });
    });
    async_wait(0);
    if_(live, [&] { coop_tile_store(acc.get(), red, w * 256u, 16u); });
    barrier();
    // Slice 0's lanes add the slices in order and store: element (r, i) of the tile is W row
    // n0 + r times A row i; lanes walk r fastest, so each row of C gets 16 adjacent outputs.
    if_(live && (slice == 0u), [&] {
      for_(lane, 256u, lane_width(), [&](Expr e) {
        Expr r = e % 16u;
        Expr i = e / 16u;
        Var<f32> v = 0.0f;
        for_(0u, ksplit, [&](Expr q) { v += red[(w + q) * 256u + r * 16u + i]; });
        Expr gj = n0 + r;
        if_((mb0 + i < m) && (gj >= t * 16u), [&] { store(mb0 + i, gj, Operand(v).value); });
      });
    });
    // No barrier at the round's end: the next round's K block loop passes one before any lane
    // group stores its sums into `red` again or copies into a slot.
  });
}

void gemm_decode(const KernelVariant& var) {
  const DType out_t = var.type("OUT");
  Expr m = constexpr_("m", u32, specialize());
  Expr n = constexpr_("n", u32);
  Expr k = constexpr_("k", u32, specialize() | multiple_of(8));
  Expr lda = constexpr_("lda", u32, multiple_of(8));
  Expr ldb = constexpr_("ldb", u32, multiple_of(8));
  Expr a_off = constexpr_("a_off", u32, multiple_of(8));
  Expr b_off = constexpr_("b_off", u32, multiple_of(8));
  Expr a_len = constexpr_("a_len", u32);
  Expr b_len = constexpr_("b_len", u32);
  Expr ksplit = constexpr_("ksplit", u32, specialize());
  Expr mma = constexpr_("mma", u32, specialize());  // 0: products on the lanes, 1: on tiles
  Expr epi = constexpr_("epi", u32, specialize());
  // Lanes body: 16-byte chunks of each W row per lane and step (1, 2 or 4; 1 in the tiles body).
  Expr unroll = constexpr_("unroll", u32, specialize());
  Expr red_len = constexpr_("red_len", u32);  // the combine's threadgroup floats (1 when unused)
  Expr at_len = constexpr_("at_len", u32);    // tiles: 16 * (k + 8) elements of A, else 1
  Expr ws_len = constexpr_("ws_len", u32);    // tiles: groups * stages * 16 * 72 staged W, else 1
  Expr bias_len = constexpr_("bias_len", u32);  // n with a bias, else 1 (the buffer is not read)
  Expr res_len = constexpr_("res_len", u32);    // m * n with a residual, else 1
  Buffer a = input("a", T, {a_len});
  Buffer b = input("b", T, {b_len});
  Buffer bias = input("bias", out_t, {bias_len});
  Buffer res = input("residual", out_t, {res_len});
  Buffer c = output("c", out_t, {m, n});
  TgBuffer red = threadgroup_alloc_dynamic("red", f32, red_len, 1, 16);
  TgBuffer at = threadgroup_alloc_dynamic("at", T, at_len, 1, 16);
  TgBuffer ws = threadgroup_alloc_dynamic("ws", T, ws_len, 1, 16);
  const Decode d{out_t, m, n, k, lda, ldb, a_off, b_off, ksplit, epi, unroll, a, b, bias, res, c, red, at, ws};
  // Tested as != 0: Metal's clang warns of `((p == v))` on a parameter as a possible assignment.
  if_(mma != 0u, [&] { d.tiles_body(); }).else_([&] { d.lanes_body(); });
}


// The warpgroup decode kernel (the header's iron_gemm_decode_wg_tma_<OUT>): C^T = W A^T, 64 rows
// of W per threadgroup, all of K, by tensor-map copies into a ring of kDecodeWgStages stages.
void gemm_decode_wg(const KernelVariant& var) {
  const DType out_t = var.type("OUT");
  constexpr uint32_t kRowsW = kDecodeWgRows;       // rows of W per threadgroup (one warpgroup's)
  constexpr uint32_t kStages = kDecodeWgStages;    // the ring's stages
  constexpr uint32_t kBk = 64;                     // K elements per step: one 128-byte row
  constexpr uint32_t kWStage = kRowsW * kBk;       // a stage's W box, elements
  constexpr uint32_t kAStage = kBlock * kBk;       // a stage's activations box (16 rows of A)
  constexpr uint32_t kStage = kWStage + kAStage;   // 10 KiB: a multiple of the 1024-byte atom
  Expr m = constexpr_("m", u32, specialize());
  Expr n = constexpr_("n", u32);
  Expr k = constexpr_("k", u32);
  Expr a_len = constexpr_("a_len", u32);
  Expr b_len = constexpr_("b_len", u32);
  Expr epi = constexpr_("epi", u32, specialize());
  Expr bias_len = constexpr_("bias_len", u32);  // n with a bias, else 1 (the buffer is not read)
  Expr res_len = constexpr_("res_len", u32);    // m * n with a residual, else 1
  // A and W are read only through the maps (A as [m, k], W as [n, k], K innermost, boxes of 64 K
  // elements by 16 and 64 rows under the 128-byte swizzle, zeros outside); a and b stay declared
  // so a call binds the same buffers to every kernel of the family.
  Buffer a = input("a", T, {a_len});
  Buffer b = input("b", T, {b_len});
  Buffer a_map = tensor_map("a_map");
  Buffer w_map = tensor_map("b_map");
  Buffer bias = input("bias", out_t, {bias_len});
  Buffer res = input("residual", out_t, {res_len});
  Buffer c = output("c", out_t, {m, n});
  (void)a;
  (void)b;
  // Stage s: W's 64 x 64 box at element s * kStage, then A's 16 x 64 box (both 1024-byte aligned).
  TgBuffer st = threadgroup_alloc("st", T, kStages * kStage, 1024);
  TgBuffer cs = threadgroup_alloc("cs", f32, kRowsW * kBlock, 16);  // the 64 x 16 sums
  TgBuffer full_bar = mbarrier_alloc("full", kStages);
  TgBuffer empty_bar = mbarrier_alloc("empty", kStages);
  const Swizzle sw{3, 3, 3};
  Expr n0 = program_id(0) * kRowsW;
  Expr steps = (k + (kBk - 1)) / kBk;
  // Lane groups 0..3 (warpgroup 0) copy: its thread 0 alone. Lane groups 4..7 (warpgroup 1)
  // multiply; further lane groups (a larger threadgroup) repeat warpgroup 1's products and
  // neither arrive nor store.
  Expr consumer = simd_group_id() >= 4u && simd_group_id() < 8u;
  if_(local_id(0) == 0u, [&] {
    for (uint32_t s = 0; s < kStages; ++s) {
      mbar_init(full_bar[s], 1u);
      mbar_init(empty_bar[s], 4u);  // lane 0 of each consumer lane group
    }
  });
  barrier();
  FragVar acc(coop_tile_wg_fill(kBlock, 0.0f));
  if_(simd_group_id() < 4u, [&] {
    // Step t into stage t % S, from the second round on once the consumers handed the stage back
    // (parity of the round before); both boxes complete on full[s], zeros past n, m and k.
    if_(local_id(0) == 0u, [&] {
      for_(0u, steps, [&](Expr step) {
        Expr stage = step % kStages;
        if_(step >= kStages, [&] { mbar_wait(empty_bar[stage], (step / kStages + 1u) % 2u); });
        Expr kb = step * kBk;
        mbar_arrive_tx(full_bar[stage], kStage * 2u);
        tma_load_2d(w_map, st[stage * kStage], kb, n0, full_bar[stage]);
        tma_load_2d(a_map, st[stage * kStage + kWStage], kb, 0u, full_bar[stage]);
      });
    });
  }).else_([&] {
    // Per step: wait for the stage, issue its 4 k16 products (m64n16k16: A = the W box, B = the
    // activations' box, a [16, 64] K-major tile), keep them in flight across the next step, and
    // once wg_wait(1) retired the previous step's products hand that step's stage back.
    for_(0u, steps, [&](Expr step) {
      Expr stage = step % kStages;
      mbar_wait(full_bar[stage], (step / kStages) % 2u);
      wg_fence();
      for (uint32_t ks = 0; ks < kBk / 16; ++ks)
        acc.set(coop_tile_wg_issue(st, stage * kStage + ks * 16, st, stage * kStage + kWStage + ks * 16, acc.get(), sw));
      wg_commit();
      wg_wait(1);
      if_(step >= 1u && lane_id() == 0u && consumer,
          [&] { mbar_arrive(empty_bar[(step + kStages - 1u) % kStages]); });
    });
    wg_wait(0);
    // Lane group q of warpgroup 1 holds W rows 16q .. 16q + 15 by the 16 rows of A: row-major
    // 64 x 16 in the scratch (element (r, i) at r * 16 + i).
    if_(consumer, [&] { coop_tile_store(acc.get(), cs, (simd_group_id() - 4u) * 256u, 16u); });
  });
  barrier();
  // C[i, n0 + r] = the sum (r, i), consecutive threads along r (a row of C), over the rows of A
  // the call has (m is specialized: a constant trip count); rows past n not stored.
  for_(local_id(0), min(m, kBlock) * kRowsW, group_size(0), [&](Expr e) {
    Expr r = e % kRowsW;
    Expr i = e / kRowsW;
    Expr gj = n0 + r;
    if_((i < m) && (gj < n), [&] {
      Expr v = Operand(cs[r * kBlock + i]).value;
      Expr out = apply_epilogue(
          epi, v, nullptr, [&] { return cast<f32>(bias[gj]); }, [&] { return cast<f32>(res[i * n + gj]); });
      c[i * n + gj] = cast_to(out, out_t);
    });
  });
}

}  // namespace

static void gemm_decode_rows(const KernelVariant& v) { gemm_decode(v); }
static void gemm_decode_wg_tma(const KernelVariant& v) { gemm_decode_wg(v); }

IRON_KERNEL_VARIANTS(iron_gemm_decode, gemm_decode_rows, Reduction, (f16, bf16), "{OUT}",
                     ::iron::type_axis("OUT", {::iron::DType::F32, ::iron::DType::F16, ::iron::DType::BF16}));
// The warpgroup decode kernel: bf16 A and W, C in f32 or bf16 (gemm_for routes CUDA sm_90a decode
// calls of that kind to it).
IRON_KERNEL_VARIANTS(iron_gemm_decode_wg_tma, gemm_decode_wg_tma, Reduction, (bf16), "{OUT}",
                     ::iron::type_axis("OUT", {::iron::DType::F32, ::iron::DType::BF16}));

}  // namespace iron::kernels::gemm
