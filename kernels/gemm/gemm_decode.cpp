// Decode rows of the GEMM family: C [m, n] = A [m, k] B [k, n] (+ the fused epilogue) for a few
// rows of A (m <= 16 is what it is for) against B column-major, i.e. a linear layer's weight
// W [n, k] with B = W^T. The product is bound by reading W once, so the kernel is a streaming
// dot-product engine, not a tiled GEMM: no threadgroup staging, no tensor cores.
//
//   iron_gemm_decode_<OUT>   (mode Reduction; T in {f16, bf16}; OUT in {f32, f16, bf16})
//
// Element (i, kk) of A is a[a_off + i * lda + kk] (A row-major), W (j, kk) = B (kk, j) is
// b[b_off + j * ldb + kk]. k, lda, ldb, a_off and b_off are multiples of 8 (declared facts,
// checked at every dispatch), so every 8-element chunk of a row of A or W starts 16 bytes
// aligned and its loads become one 16-byte access (the vectorize pass). m, k and ksplit are
// specialized: the loops over A's rows and over a lane's chunks have constant bounds.
//
// Work split: a lane group owns kRows = 4 consecutive rows of W (a row group) and one of the
// `ksplit` slices of K; the ksplit lane groups of a row group are adjacent in the threadgroup
// (num_simd_groups() / ksplit row groups per threadgroup). Lane l of slice s reads chunks c =
// (j * ksplit + s) * lane_width + l, j = 0, 1, ...: the lane groups of a row group read
// consecutive 16-byte chunks of each W row; every step a lane loads kUnroll = 2 chunks of each of
// its 4 W rows (8 16-byte loads in flight) before it multiplies. Per W chunk it accumulates, for each of the block's 16 rows of A (the rows
// at or past m fold away when m is specialized), 4 x 8 products in f32: 4 * 16 accumulators.
// program_id(1) is the block of 16 rows of A (one block for m <= 16; more blocks re-read W,
// which is correct for any m). Rows past n or m are clamped for the loads (so every load stays
// in bounds and unconditional) and never stored.
// Reduction, fixed order: each accumulator is summed across its lane group by lane_sum; with
// ksplit > 1 lane 0 of every slice writes its sums to threadgroup memory and, after one barrier,
// lane 0 of slice 0 adds the slices in slice order. Then the epilogue (docs/gemm.md: none, bias,
// silu, gelu, residual; `epi` specialized) in f32, one rounding to OUT. No atomics: bit-exact
// run to run.
// Dispatch (the selector gemm_for plans it): grid = {ceil(ceil(n / 4) / (groups / ksplit)),
// ceil(m / 16), 1}, threadgroup = {groups * lane width, 1, 1} with groups a multiple of ksplit
// and at most kMaxGroups = 32 lane groups (the threadgroup array holds 32 slots; lane groups past
// it would leave their rows out).
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
constexpr uint32_t kMaxGroups = kDecodeMaxGroups;
constexpr uint32_t kUnroll = 2;             // chunks per lane per step

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
  Expr epi = constexpr_("epi", u32, specialize());
  Expr bias_len = constexpr_("bias_len", u32);  // n with a bias, else 1 (the buffer is not read)
  Expr res_len = constexpr_("res_len", u32);    // m * n with a residual, else 1
  Buffer a = input("a", T, {a_len});
  Buffer b = input("b", T, {b_len});
  Buffer bias = input("bias", out_t, {bias_len});
  Buffer res = input("residual", out_t, {res_len});
  Buffer c = output("c", out_t, {m, n});
  TgBuffer red = threadgroup_alloc("red", f32, kMaxGroups * kRows * kBlock, 16);

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
          Expr gi = mb0 + i;
          Expr gj = row0 + r;
          if_((gi < m) && (gj < n), [&] {
            Expr out = apply_epilogue(
                epi, Operand(s).value, nullptr, [&] { return cast<f32>(bias[gj]); },
                [&] { return cast<f32>(res[gi * n + gj]); });
            c[gi * n + gj] = cast_to(out, out_t);
          });
        }
      });
  });
}

}  // namespace

static void gemm_decode_rows(const KernelVariant& v) { gemm_decode(v); }

IRON_KERNEL_VARIANTS(iron_gemm_decode, gemm_decode_rows, Reduction, (f16, bf16), "{OUT}",
                     ::iron::type_axis("OUT", {::iron::DType::F32, ::iron::DType::F16, ::iron::DType::BF16}));

}  // namespace iron::kernels::gemm
