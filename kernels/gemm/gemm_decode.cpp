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
// aligned. m, k, ksplit, mma and epi are specialized: loop bounds are constants and the body the
// dispatch does not take is folded away. Two bodies:
//
// mma = 0, the lanes body (products in f32 on the lanes). A lane group owns kRows = 4
// consecutive rows of W (a row group) and one of `ksplit` slices of K; the ksplit lane groups of
// a row group are adjacent (num_simd_groups() / ksplit row groups per threadgroup). Lane l of
// slice s reads the chunks ((j * kUnroll + u) * ksplit + s) * lane_width + l: the slices of a row
// group read consecutive 16-byte chunks of each W row; every step a lane loads kUnroll = 2 chunks
// of each of its 4 rows (8 16-byte loads, the vectorize pass's) before it multiplies, and for
// each of the block's 16 rows of A (rows at or past m fold away) accumulates 4 x 8 products in
// f32. program_id(1) is the block of 16 rows of A (one block for m <= 16; more re-read W, correct
// for any m). Rows past n or m are clamped for the loads and never stored. Each accumulator is
// summed across its lane group by lane_sum; with ksplit > 1 lane 0 of every slice writes its sums
// to `red` (red_len = groups * 64 floats) and, after one barrier, lane 0 of slice 0 adds the
// slices in slice order.
//
// mma = 1, the tiles body (m <= 16, k a multiple of 16, n >= 16): C^T = W A^T on cooperative
// tiles. The threadgroup first stages A^T [k, 16] in `at` (at_len = 16 k; rows of A past m are
// 0), then each lane group takes 16 rows of W (a tile row; the last one moved back to end at n)
// and one of `ksplit` slices of K: per step kTileUnroll = 4 consecutive 16-deep W tiles straight
// from memory (128 bytes of each of the 16 rows) and A^T's tiles from `at`, 16 x 16 products
// summed on the tensor cores. Threadgroups are persistent: they walk the tile rows in a grid
// stride (every lane group the same number of rounds, for the barriers). The slices' 16 x 16 f32
// sums go to `red` (red_len = groups * 256) and lane group 0 of each tile row adds them in slice
// order.
//
// Then the epilogue (docs/gemm.md: none, bias, silu, gelu, residual) in f32, one rounding to OUT.
// No atomics: fixed-order sums, bit-exact run to run.
// Dispatch (gemm_for plans it): lanes: grid = {ceil(ceil(n / 4) / (groups / ksplit)), ceil(m /
// 16), 1}; tiles: grid = {at most one threadgroup per tile row group, 1, 1}; threadgroup = {groups
// * lane width, 1, 1} with groups a multiple of ksplit.
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
constexpr uint32_t kUnroll = 2;             // lanes body: chunks per lane per step
constexpr uint32_t kTileUnroll = 4;         // tiles body: consecutive K steps per slice and step

// The parameters of one dispatch, shared by the two bodies.
struct Decode {
  DType out_t;
  Expr m, n, k, lda, ldb, a_off, b_off, ksplit, epi;
  Buffer a, b, bias, res, c;
  TgBuffer red, at;

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

  // The element offsets of this lane group's W rows and of the block's A rows (clamped).
  std::vector<Expr> wrow, arow;
  for (uint32_t r = 0; r < kRows; ++r) wrow.push_back(b_off + min(row0 + r, n - 1u) * ldb);
  for (uint32_t i = 0; i < kBlock; ++i) arow.push_back(a_off + min(mb0 + i, m - 1u) * lda);

  std::vector<std::unique_ptr<Var<f32>>> acc;
  for (uint32_t e = 0; e < kRows * kBlock; ++e) acc.push_back(std::unique_ptr<Var<f32>>(new Var<f32>(0.0f)));

  // kUnroll chunks per step: their W loads (clamped to the last chunk, so unconditional) are
  // issued before any product, then each row of A's chunks and the products of the chunks that
  // exist.
  for_(0u, (steps + (kUnroll - 1)) / kUnroll, [&](Expr j) {
    std::vector<Expr> kk, ok, wv;
    for (uint32_t u = 0; u < kUnroll; ++u) {
      Expr ch = ((j * kUnroll + u) * ksplit + slice) * lanes + lane;
      ok.push_back(ch < chunks);
      kk.push_back(min(ch, chunks - 1u) * 8u);
      for (uint32_t r = 0; r < kRows; ++r)
        for (uint32_t e = 0; e < 8; ++e) wv.push_back(cast<f32>(b[wrow[r] + kk[u] + e]));
    }
    for (uint32_t i = 0; i < kBlock; ++i)
      if_(m > i, [&] {  // folds when m is specialized: rows of A the call does not have vanish
        std::vector<Expr> av;
        for (uint32_t u = 0; u < kUnroll; ++u)
          for (uint32_t e = 0; e < 8; ++e) av.push_back(cast<f32>(a[arow[i] + kk[u] + e]));
        for (uint32_t u = 0; u < kUnroll; ++u)
          if_(ok[u], [&] {
            for (uint32_t r = 0; r < kRows; ++r) {
              Var<f32>& s = *acc[r * kBlock + i];
              for (uint32_t e = 0; e < 8; ++e) s += wv[(u * kRows + r) * 8 + e] * av[u * 8 + e];
            }
          });
      });
  });

  // Each sum across the lane group; with K slices, through threadgroup memory in slice order.
  for (uint32_t i = 0; i < kBlock; ++i)
    if_(m > i, [&] {
      for (uint32_t r = 0; r < kRows; ++r) {
        Var<f32>& s = *acc[r * kBlock + i];
        s = lane_sum(Operand(s).value);
        if_((ksplit > 1u) && (lane == 0u), [&] { red[w * (kRows * kBlock) + (r * kBlock + i)] = Operand(s).value; });
      }
    });
  if_(ksplit > 1u, [&] { barrier(); });
  if_((slice == 0u) && (lane == 0u), [&] {
    for (uint32_t i = 0; i < kBlock; ++i)
      if_(m > i, [&] {
        for (uint32_t r = 0; r < kRows; ++r) {
          Var<f32>& s = *acc[r * kBlock + i];
          if_(ksplit > 1u, [&] {
            s = 0.0f;
            for_(0u, ksplit, [&](Expr q) { s += red[(w + q) * (kRows * kBlock) + (r * kBlock + i)]; });
          });
          store(mb0 + i, row0 + r, Operand(s).value);
        }
      });
  });
}

void Decode::tiles_body() const {
  // A^T [k, 16] into threadgroup memory once: element (kk, i) at at[kk * 16 + i], 0 for i >= m.
  // Thread t takes 8-element chunks of A's rows (16-byte loads) and scatters them.
  Expr chunks = k / 8u;  // per row of A
  for_(local_id(0), chunks * kBlock, group_size(0), [&](Expr e) {
    Expr i = e / chunks;
    Expr kk = (e % chunks) * 8u;
    Expr row = a_off + min(i, m - 1u) * lda;
    Expr keep = i < m;
    for (uint32_t q = 0; q < 8; ++q)
      at[(kk + q) * kBlock + i] = cast<T>(select(keep, cast<f32>(a[row + kk + q]), 0.0f));
  });
  barrier();

  // Lane group w: K slice w % ksplit of the tile rows (16 rows of W) it is on; the threadgroup
  // walks the tile rows in a grid stride, every lane group the same number of iterations (the
  // barriers of the combine), idle past the last tile row.
  TileShape tile = coop_tile_setup(16, 16, 16, T);
  Expr w = simd_group_id();
  Expr slice = w % ksplit;
  Expr per_group = num_simd_groups() / ksplit;  // tile rows per threadgroup and iteration
  Expr tiles = (n + 15u) / 16u;
  Expr stride = num_programs(0) * per_group;
  Expr rounds = (tiles + stride - 1u) / stride;
  Expr ksteps = k / 16u;
  for_(0u, rounds, [&](Expr round) {
    Expr t = round * stride + program_id(0) * per_group + w / ksplit;
    Expr live = t < tiles;
    // The last tile row is moved back to end at n (n >= 16): its rows before t * 16 belong to the
    // previous tile row and are not stored twice.
    Expr n0 = min(t * 16u, n - 16u);
    FragVar acc(coop_tile_fill(tile, 0.0f));
    if_(live, [&] {
      // Each iteration: kTileUnroll consecutive K steps of the slice (128 bytes of each W row),
      // their W tiles loaded before any product.
      for_(0u, (ksteps + ksplit * kTileUnroll - 1u) / (ksplit * kTileUnroll), [&](Expr j) {
        std::vector<Frag> fw;
        std::vector<Expr> ks;
        for (uint32_t u = 0; u < kTileUnroll; ++u) {
          Expr step = (j * ksplit + slice) * kTileUnroll + u;
          ks.push_back(step);
          Expr at_step = min(step, ksteps - 1u);
          fw.push_back(coop_tile_load_a(tile, b, b_off + n0 * ldb + at_step * 16u, ldb));
        }
        for (uint32_t u = 0; u < kTileUnroll; ++u)
          if_(ks[u] < ksteps, [&] {
            Frag fa = coop_tile_load_b(tile, at, ks[u] * (16u * kBlock), kBlock);
            acc.set(coop_tile_run(fw[u], fa, acc.get()));
          });
      });
      coop_tile_store(acc.get(), red, w * 256u, 16u);
    });
    barrier();
    // Slice 0's lanes add the slices in order and store: element (r, i) of the tile is W row
    // n0 + r times A row i; lanes walk r fastest, so each row of C gets 16 adjacent outputs.
    if_(live && (slice == 0u), [&] {
      for_(lane_id(), 256u, lane_width(), [&](Expr e) {
        Expr r = e % 16u;
        Expr i = e / 16u;
        Var<f32> v = 0.0f;
        for_(0u, ksplit, [&](Expr q) { v += red[(w + q) * 256u + r * 16u + i]; });
        Expr gj = n0 + r;
        if_((i < m) && (gj >= t * 16u), [&] { store(i, gj, Operand(v).value); });
      });
    });
    barrier();
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
  Expr red_len = constexpr_("red_len", u32);  // the combine's threadgroup floats (1 when unused)
  Expr at_len = constexpr_("at_len", u32);    // tiles: k * 16 elements of A^T, else 1
  Expr bias_len = constexpr_("bias_len", u32);  // n with a bias, else 1 (the buffer is not read)
  Expr res_len = constexpr_("res_len", u32);    // m * n with a residual, else 1
  Buffer a = input("a", T, {a_len});
  Buffer b = input("b", T, {b_len});
  Buffer bias = input("bias", out_t, {bias_len});
  Buffer res = input("residual", out_t, {res_len});
  Buffer c = output("c", out_t, {m, n});
  TgBuffer red = threadgroup_alloc_dynamic("red", f32, red_len, 1, 16);
  TgBuffer at = threadgroup_alloc_dynamic("at", T, at_len, 1, 16);
  const Decode d{out_t, m, n, k, lda, ldb, a_off, b_off, ksplit, epi, a, b, bias, res, c, red, at};
  if_(mma == 0u, [&] { d.lanes_body(); }).else_([&] { d.tiles_body(); });
}


}  // namespace

static void gemm_decode_rows(const KernelVariant& v) { gemm_decode(v); }

IRON_KERNEL_VARIANTS(iron_gemm_decode, gemm_decode_rows, Reduction, (f16, bf16), "{OUT}",
                     ::iron::type_axis("OUT", {::iron::DType::F32, ::iron::DType::F16, ::iron::DType::BF16}));

}  // namespace iron::kernels::gemm
