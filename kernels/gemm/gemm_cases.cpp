// Test cases of the GEMM family, through its selector (gemm_select.cpp): every case is a logical
// call, so the route (tile, split count, fused or reduced epilogue) is the one gemm_for takes on
// the device the case runs on. The oracle is the unfused composition in f64: the exact product
// sum_k A[i, kk] B[kk, j], then the epilogue's formula, then the rounding to the output dtype.
//
// Tolerance (derived, docs/semantics.md "Cooperative tiles"): each 16-deep product may differ
// from the exact sum by 17 f32 ulps of the largest partial sum, k / 16 of them per split; the
// split-K reduce adds `splits` serial f32 additions; every partial sum is at most k (inputs in
// [-1, 1]), the error floor. The epilogue adds its f32 operations (bias or residual add, and for
// silu/gelu/swiglu one exp or erf and up to four more roundings). Small-integer inputs make
// every product and sum exact on every path: those cases demand the exact result.
#include <cmath>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "gemm.hpp"

namespace iron::kernels::gemm {
using namespace iron::dsl;

namespace {

struct Shape {
  uint32_t m, n, k;
  bool a_trans = false, b_trans = false;
  uint32_t lda = 0, ldb = 0;  // 0: packed
  uint32_t a_off = 0, b_off = 0;
  Epi epi = Epi::None;
  int out = 0;       // the call's `out` code: 0 T, 1 f32, 2 f16, 3 bf16
  int splits = 0;    // 0: the selector's choice
  int tile = -1;     // -1: the selector's choice
  int stages = 0;    // 0: the tile's default
  bool small_integers = false;
  int ksplit = 0;    // decode rows: 0 the selector's choice
  int mma = -1;      // decode rows: -1 the selector's choice, 0 lanes, 1 tiles, 2 tiles where they fit
  int unroll = 0;    // decode rows, lanes: 0 the selector's choice (2), else 1, 2 or 4 chunks per step
  int wg = -1;       // the 128x128 tile: -1 the selector's choice, 1 the warpgroup kernel, 0 mma.sync
  int sk = -1;       // split-K: -1 the selector's choice (two launches), 0 two launches, 1 one launch
  int tma = -1;      // the warpgroup kernel's tensor-map copies: -1 the selector's choice, 0 off, 1/2 the tiles
  int ws = -1;       // with tma 2: 1 the warp-specialized kernel
};

std::vector<double> values(size_t count, uint64_t seed, bool small_integers) {
  std::vector<double> v = fixture::uniform(count, -1.0, 1.0, seed);
  if (small_integers)
    for (double& x : v) x = double(int(x * 4.5));
  return v;
}

TestSetup gemm_case(DType dt, const Shape& s) {
  const uint32_t lda = s.lda ? s.lda : (s.a_trans ? s.m : s.k);
  const uint32_t ldb = s.ldb ? s.ldb : (s.b_trans ? s.k : s.n);
  const size_t a_len = s.a_off + size_t(s.a_trans ? s.k - 1 : s.m - 1) * lda + (s.a_trans ? s.m : s.k);
  const size_t b_len = s.b_off + size_t(s.b_trans ? s.n - 1 : s.k - 1) * ldb + (s.b_trans ? s.k : s.n);
  const size_t mn = size_t(s.m) * s.n;
  Constexprs call{{"m", s.m}, {"n", s.n}, {"k", s.k}, {"a_trans", s.a_trans ? 1 : 0}, {"b_trans", s.b_trans ? 1 : 0},
                  {"lda", lda}, {"ldb", ldb}, {"a_off", s.a_off}, {"b_off", s.b_off}, {"epi", int(s.epi)},
                  {"out", s.out}};
  if (s.splits) call.emplace("splits", s.splits);
  if (s.tile >= 0) call.emplace("tile", s.tile);
  if (s.stages) call.emplace("stages", s.stages);
  if (s.ksplit) call.emplace("ksplit", s.ksplit);
  if (s.mma >= 0) call.emplace("mma", s.mma);
  if (s.unroll) call.emplace("unroll", s.unroll);
  if (s.wg >= 0) call.emplace("wg", s.wg);
  if (s.sk >= 0) call.emplace("sk", s.sk);
  if (s.tma >= 0) call.emplace("tma", s.tma);
  if (s.ws >= 0) call.emplace("ws", s.ws);
  if (s.tile == 0) call.emplace("vendor", 0);  // the 128x128 tile's cases: Iron's kernels on any device
  TestSetup t(dt);
  t.in("a", values(a_len, 301, s.small_integers)).in("b", values(b_len, 302, s.small_integers));
  if (s.epi == Epi::Swiglu) t.in("b2", values(b_len, 303, s.small_integers));
  if (s.epi == Epi::Bias || s.epi == Epi::Silu || s.epi == Epi::Gelu) t.in("bias", values(s.n, 304, s.small_integers));
  if (s.epi == Epi::Residual) t.in("residual", values(mn, 305, s.small_integers));
  t.out("c", mn);
  t.call(call);
  // Splits the selector may take: at most one per 16 elements of K (k / 64 or forced).
  const double splits = s.splits ? s.splits : std::max(1.0, std::ceil(s.k / 64.0));
  const double products = 17.0 * std::ceil(s.k / 16.0);
  double roundings = products + splits, math = 0;
  switch (s.epi) {
    case Epi::None: break;
    case Epi::Bias: case Epi::Residual: roundings += 1; break;
    case Epi::Silu: roundings += 4, math = 1; break;
    case Epi::Gelu: roundings += 5, math = 1; break;
    case Epi::Swiglu: roundings = 2 * roundings + 4, math = 1; break;
  }
  if (s.small_integers && s.epi == Epi::None) t.accumulation(0);
  else t.accumulation(roundings).math_ops(math).error_floor(s.k);
  const Shape sh = s;
  t.oracle([sh, lda, ldb](const Tensors& in, Tensors& out) {
    const auto& A = in.at("a");
    auto product = [&](const std::vector<double>& B, uint32_t i, uint32_t j) {
      double sum = 0;
      for (uint32_t kk = 0; kk < sh.k; ++kk) {
        const double x = A[sh.a_off + (sh.a_trans ? size_t(kk) * lda + i : size_t(i) * lda + kk)];
        const double y = B[sh.b_off + (sh.b_trans ? size_t(j) * ldb + kk : size_t(kk) * ldb + j)];
        sum += x * y;
      }
      return sum;
    };
    auto& C = out.at("c");
    for (uint32_t i = 0; i < sh.m; ++i)
      for (uint32_t j = 0; j < sh.n; ++j) {
        const double v = product(in.at("b"), i, j);
        double r = v;
        switch (sh.epi) {
          case Epi::None: break;
          case Epi::Bias: r = v + in.at("bias")[j]; break;
          case Epi::Silu: {
            const double u = v + in.at("bias")[j];
            r = u / (1 + std::exp(-u));
            break;
          }
          case Epi::Gelu: {
            const double u = v + in.at("bias")[j];
            r = 0.5 * u * (1 + std::erf(u / std::sqrt(2.0)));
            break;
          }
          case Epi::Residual: r = v + in.at("residual")[size_t(i) * sh.n + j]; break;
          case Epi::Swiglu: r = v / (1 + std::exp(-v)) * product(in.at("b2"), i, j); break;
        }
        C[size_t(i) * sh.n + j] = r;
      }
  });
  return t;
}

}  // namespace

// Exact (small integers): row-major, packed; odd M/N/K tails on every side of a block, more
// K steps than stages.
IRON_TEST_KERNEL(iron_gemm, int_m37_n45_k170, {f16}, {bf16}) {
  return gemm_case(dt, {37, 45, 170, false, false, 0, 0, 0, 0, Epi::None, 1, 1, -1, 0, true});
}
// Full-avalanche inputs; A column-major, B column-major (a linear layer's weight), strides not
// a multiple of 8 and non-zero offsets.
IRON_TEST_KERNEL(iron_gemm, avalanche_m33_n40_k150_strided, {f16}, {bf16}) {
  return gemm_case(dt, {33, 40, 150, true, true, 37, 153, 5, 3, Epi::None, 1, 1, -1, 0, false});
}
// A row-major at a stride of 101 and an offset of 7 (16-byte copies fall back to bytes on CUDA),
// B row-major at 77; C in T.
IRON_TEST_KERNEL(iron_gemm, avalanche_m20_n70_k96_lda101_out_t, {f16}, {bf16}) {
  return gemm_case(dt, {20, 70, 96, false, false, 101, 77, 7, 0, Epi::None, 0, 1, -1, 0, false});
}
// Decode rows (m <= 16) with k = 300, not a multiple of 8: the 32x32 tile, split-K and the reduce.
IRON_TEST_KERNEL(iron_gemm, decode_m3_n70_k300, {f16}, {bf16}) {
  return gemm_case(dt, {3, 70, 300, false, true, 0, 0, 0, 0, Epi::None, 0, 0, -1, 0, false});
}
// Decode rows against a [n, k] weight (iron_gemm_decode): strides and offsets multiples of 8
// but not of the chunk walk, n not a multiple of the 4 rows of a lane group, the bias epilogue
// at f32; K sliced 4 ways through threadgroup memory with SiLU at T; m = 20 forced onto the
// decode kernel (two blocks of A's rows, the second partial) with the residual; exact small
// integers at 16 rows with GELU-free output.
IRON_TEST_KERNEL(iron_gemm, decode_rows_m5_n70_k320_strided_bias, {f16}, {bf16}) {
  return gemm_case(dt, {5, 70, 320, false, true, 328, 336, 8, 16, Epi::Bias, 1, 0, -1, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, decode_rows_m3_n37_k1024_ksplit4_silu, {bf16}) {
  return gemm_case(dt, {3, 37, 1024, false, true, 0, 0, 0, 0, Epi::Silu, 0, 0, -1, 0, false, 4});
}
IRON_TEST_KERNEL(iron_gemm, decode_rows_m20_n9_k256_tile3_residual, {f16}) {
  return gemm_case(dt, {20, 9, 256, false, true, 0, 0, 0, 0, Epi::Residual, 1, 0, 3, 0, false, 2, 0});
}
IRON_TEST_KERNEL(iron_gemm, decode_rows_m16_n33_k200_int, {bf16}) {
  return gemm_case(dt, {16, 33, 200, false, true, 0, 0, 0, 0, Epi::None, 1, 0, -1, 0, true});
}
// The lanes' other chunk counts per step: 4 chunks of each row per step (k = 1032: 129 chunks, the
// last step holds one, the clamped loads of the rest not multiplied), 2 K slices, the bias; 1
// chunk per step with exact small integers and an offset weight.
IRON_TEST_KERNEL(iron_gemm, decode_rows_m6_n21_k1032_unroll4_bias, {bf16}, {f16}) {
  return gemm_case(dt, {6, 21, 1032, false, true, 0, 0, 0, 0, Epi::Bias, 1, 0, -1, 0, false, 2, 0, 4});
}
IRON_TEST_KERNEL(iron_gemm, decode_rows_m11_n10_k264_unroll1_int, {bf16}) {
  return gemm_case(dt, {11, 10, 264, false, true, 0, 272, 0, 8, Epi::None, 1, 0, -1, 0, true, 0, 0, 1});
}
// Decode rows on tiles (mma 2: the tiles body where the device has room, A^T staged in threadgroup
// memory, 16 rows of W per lane group):
// n = 40 (the last tile row moved back to end at n), K sliced 2 ways, GELU at T; exact small
// integers at m = 16 with an offset weight; m = 9 with 4 slices and a residual. (Devices with under
// 64 KiB of threadgroup memory, lavapipe, run these on the lanes body.)
IRON_TEST_KERNEL(iron_gemm, decode_tiles_m12_n40_k256_ksplit2_gelu, {bf16}, {f16}) {
  return gemm_case(dt, {12, 40, 256, false, true, 264, 0, 8, 0, Epi::Gelu, 0, 0, -1, 0, false, 2, 2});
}
IRON_TEST_KERNEL(iron_gemm, decode_tiles_m16_n48_k160_int, {f16}) {
  return gemm_case(dt, {16, 48, 160, false, true, 0, 168, 0, 8, Epi::None, 1, 0, -1, 0, true, 0, 2});
}
// m = 20 forced onto decode rows (tile 3) on tiles where they fit (not on lavapipe): two blocks of
// 16 rows of A, the second partial.
IRON_TEST_KERNEL(iron_gemm, decode_tiles_m20_n24_k96_tile3, {f16}) {
  return gemm_case(dt, {20, 24, 96, false, true, 0, 0, 0, 0, Epi::None, 1, 0, 3, 0, false, 0, 2});
}
// 5 tile rows, 8 K slices: one tile row per round on the interpreter's one threadgroup, 5 rounds.
IRON_TEST_KERNEL(iron_gemm, decode_tiles_m10_n80_k512_ksplit8_rounds, {bf16}) {
  return gemm_case(dt, {10, 80, 512, false, true, 0, 0, 0, 0, Epi::Bias, 1, 0, -1, 0, false, 8, 2});
}
IRON_TEST_KERNEL(iron_gemm, decode_tiles_m9_n17_k128_ksplit4_residual, {bf16}) {
  return gemm_case(dt, {9, 17, 128, false, true, 0, 0, 0, 0, Epi::Residual, 1, 0, -1, 0, false, 4, 2});
}
// The warpgroup decode kernel (gemm_decode.cpp, iron_gemm_decode_wg_tma; tma 1: on CUDA and the
// interpreter, the older decode bodies elsewhere): m = 1, 8 and 16 rows of A (the rest of the
// activations' 16-row box zero-filled by the copy engine), n past the last 64-row box, k a
// multiple of 8 but not of 64 (the last box's K tail zero-filled); the bias + SiLU epilogue
// rounded to bf16, exact small integers over 10 K steps (the 8-stage ring wraps: every barrier's
// parity flips), the residual.
static Shape decode_wg_shape(uint32_t m, uint32_t n, uint32_t k, Epi epi, int out, bool ints) {
  Shape s{m, n, k, false, true};
  s.epi = epi, s.out = out, s.small_integers = ints, s.tma = 1;
  return s;
}
IRON_TEST_KERNEL(iron_gemm, decode_wg_m1_n200_k1000_silu_bf16out, {bf16}) {
  return gemm_case(dt, decode_wg_shape(1, 200, 1000, Epi::Silu, 3, false));
}
IRON_TEST_KERNEL(iron_gemm, decode_wg_m8_n72_k584_int, {bf16}) {
  return gemm_case(dt, decode_wg_shape(8, 72, 584, Epi::None, 1, true));
}
IRON_TEST_KERNEL(iron_gemm, decode_wg_m16_n136_k200_residual, {bf16}) {
  return gemm_case(dt, decode_wg_shape(16, 136, 200, Epi::Residual, 1, false));
}
// Every epilogue fused into one kernel (one split), at f32 and 16-bit outputs, both layouts.
IRON_TEST_KERNEL(iron_gemm, epi_bias_fused, {f16}, {bf16}) {
  return gemm_case(dt, {40, 40, 100, false, false, 0, 0, 0, 0, Epi::Bias, 1, 1, -1, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_silu_fused, {bf16}) {
  return gemm_case(dt, {40, 40, 100, false, true, 0, 0, 0, 0, Epi::Silu, 1, 1, -1, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_gelu_fused, {f16}) {
  return gemm_case(dt, {40, 40, 100, true, false, 0, 0, 0, 0, Epi::Gelu, 1, 1, -1, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_residual_fused, {bf16}) {
  return gemm_case(dt, {40, 40, 100, false, false, 0, 0, 0, 0, Epi::Residual, 1, 1, -1, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_swiglu_fused, {f16}) {
  return gemm_case(dt, {40, 40, 100, false, true, 0, 0, 0, 0, Epi::Swiglu, 0, 1, 1, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_gelu_fused_bf16out, {f16}) {
  return gemm_case(dt, {40, 40, 100, false, false, 0, 0, 0, 0, Epi::Gelu, 3, 1, -1, 0, false});
}
// Every epilogue through the reduce (split-K on the 32x32 tile).
IRON_TEST_KERNEL(iron_gemm, epi_bias_split3, {bf16}) {
  return gemm_case(dt, {21, 35, 96, false, false, 0, 0, 0, 0, Epi::Bias, 1, 3, 2, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_silu_split2, {f16}) {
  return gemm_case(dt, {21, 35, 64, false, false, 0, 0, 0, 0, Epi::Silu, 1, 2, 2, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_gelu_split2, {f16}) {
  return gemm_case(dt, {21, 35, 64, false, false, 0, 0, 0, 0, Epi::Gelu, 1, 2, 2, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_residual_split2, {bf16}) {
  return gemm_case(dt, {21, 35, 64, true, false, 0, 0, 0, 0, Epi::Residual, 1, 2, 2, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_swiglu_split2, {bf16}) {
  return gemm_case(dt, {21, 35, 64, false, true, 0, 0, 0, 0, Epi::Swiglu, 1, 2, 2, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, epi_none_split2_f16out, {bf16}) {
  return gemm_case(dt, {21, 35, 64, false, false, 0, 0, 0, 0, Epi::None, 2, 2, 2, 0, false});
}
// One-launch split-K (the last threadgroup of each tile sums the partials in split order) on both
// tiles it serves: tails in M and N on every side, several splits, a partial last split, full
// avalanche inputs and every non-SwiGLU epilogue (sk 1: the selector's default is two launches).
static Shape sk_shape(uint32_t m, uint32_t n, uint32_t k, bool b_trans, Epi epi, int out, int splits, int tile, int sk,
                      bool ints = false) {
  Shape s{m, n, k, false, b_trans};
  s.epi = epi, s.out = out, s.splits = splits, s.tile = tile, s.sk = sk, s.small_integers = ints;
  return s;
}
IRON_TEST_KERNEL(iron_gemm, sk_small_m37_n45_k300_split5, {bf16}, {f16}) {
  return gemm_case(dt, sk_shape(37, 45, 300, true, Epi::None, 1, 5, 2, 1));
}
IRON_TEST_KERNEL(iron_gemm, sk_small_m33_n70_k256_split4_int, {f16}) {
  return gemm_case(dt, sk_shape(33, 70, 256, false, Epi::None, 1, 4, 2, 1, true));
}
IRON_TEST_KERNEL(iron_gemm, sk_small_m21_n35_k192_split3_gelu_bf16out, {bf16}) {
  return gemm_case(dt, sk_shape(21, 35, 192, true, Epi::Gelu, 3, 3, 2, 1));
}
IRON_TEST_KERNEL(iron_gemm, sk_small_m40_n33_k128_split4_residual_t, {f16}) {
  return gemm_case(dt, sk_shape(40, 33, 128, false, Epi::Residual, 0, 4, 2, 1));
}
IRON_TEST_KERNEL(iron_gemm, sk_medium_m70_n75_k320_split3_bias, {bf16}) {
  return gemm_case(dt, sk_shape(70, 75, 320, true, Epi::Bias, 1, 3, 1, 1));
}
IRON_TEST_KERNEL(iron_gemm, sk_medium_m65_n130_k256_split8_silu_t, {f16}) {
  return gemm_case(dt, sk_shape(65, 130, 256, false, Epi::Silu, 0, 8, 1, 1));
}
// The pipeline depths of the 64x64 tile (2 to 4 stages) with more K steps than stages, both
// layouts; the 128x128 tile with 8 lane groups, both layouts, and its SwiGLU kernel.
IRON_TEST_KERNEL(iron_gemm, stages2_int, {bf16}) {
  return gemm_case(dt, {70, 72, 160, false, true, 0, 0, 0, 0, Epi::None, 1, 1, 1, 2, true});
}
IRON_TEST_KERNEL(iron_gemm, stages3_int, {f16}) {
  return gemm_case(dt, {70, 72, 170, true, false, 0, 0, 0, 0, Epi::None, 1, 1, 1, 3, true});
}
IRON_TEST_KERNEL(iron_gemm, stages4_int, {f16}) {
  return gemm_case(dt, {70, 72, 200, false, false, 0, 0, 0, 0, Epi::None, 1, 1, 1, 4, true});
}
IRON_TEST_KERNEL(iron_gemm, large_tile_m130_n136_k150, {bf16}) {
  return gemm_case(dt, {130, 136, 150, false, true, 0, 0, 0, 0, Epi::None, 1, 1, 0, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, large_tile_m130_n136_k150_colmajor_a, {f16}) {
  return gemm_case(dt, {130, 136, 150, true, false, 0, 0, 0, 0, Epi::None, 1, 1, 0, 0, false});
}
// Whole aligned blocks (gemm_for's `full`: no tails, strides and offsets multiples of 8): the
// copies' unguarded path with its split index arithmetic, on every tile and both B layouts,
// one split and two (k0 = split * kc inside the copies' K offset).
IRON_TEST_KERNEL(iron_gemm, full_large_m128_n256_k64_weight_strided, {bf16}) {
  return gemm_case(dt, {128, 256, 64, false, true, 72, 80, 8, 16, Epi::Bias, 3, 1, 0, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, full_large_m128_n128_k64_strided, {f16}) {
  return gemm_case(dt, {128, 128, 64, false, false, 72, 136, 16, 8, Epi::None, 1, 1, 0, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, full_medium_m64_n64_k128_split2, {bf16}) {
  return gemm_case(dt, {64, 64, 128, false, true, 0, 0, 0, 0, Epi::None, 1, 2, 1, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, full_small_m32_n64_k192_split3_strided, {f16}) {
  return gemm_case(dt, {32, 64, 192, false, false, 200, 72, 8, 24, Epi::Residual, 1, 3, 2, 0, false});
}
IRON_TEST_KERNEL(iron_gemm, full_small_m32_n32_k128_weight_split2, {bf16}) {
  return gemm_case(dt, {32, 32, 128, false, true, 0, 0, 0, 0, Epi::None, 1, 2, 2, 0, false});
}
// The warpgroup kernel (wg 1: on CUDA and the interpreter; the mma.sync tile elsewhere): a weight
// B with M, N and K tails (one full and one partial block column, three K steps, the last
// partial) at f32; the bias epilogue rounded to bf16 with A column-major (staged element by
// element); exact small integers at 4 stages' worth of K steps (more steps than stages).
IRON_TEST_KERNEL(iron_gemm, wg_m70_n136_k150_weight, {bf16}) {
  return gemm_case(dt, {70, 136, 150, false, true, 0, 0, 0, 0, Epi::None, 1, 1, 0, 0, false, 0, -1, 0, 1});
}
IRON_TEST_KERNEL(iron_gemm, wg_m33_n40_k100_colmajor_a_bias_bf16out, {f16}) {
  return gemm_case(dt, {33, 40, 100, true, true, 0, 0, 0, 0, Epi::Bias, 3, 1, 0, 0, false, 0, -1, 0, 1});
}
// Its 4-stage pipeline (one step's products in flight across the next step's staging), 6 K steps.
IRON_TEST_KERNEL(iron_gemm, wg_stages4_m70_n136_k330_weight, {bf16}) {
  return gemm_case(dt, {70, 136, 330, false, true, 0, 0, 0, 0, Epi::None, 3, 1, 0, 4, false, 0, -1, 0, 1});
}
IRON_TEST_KERNEL(iron_gemm, wg_int_m20_n24_k320_weight, {bf16}) {
  return gemm_case(dt, {20, 24, 320, false, true, 0, 0, 0, 0, Epi::None, 1, 1, 0, 0, true, 0, -1, 0, 1});
}

// The tensor-map kernels (gemm.cpp, `_wg_tma`): tails in m, n and k left to the copy engine's
// zero fill, more K steps than stages (the barriers' parity wraps), and split-K partials (ws 0:
// the 128x256 tile without warp specialization on every backend).
IRON_TEST_KERNEL(iron_gemm, wg_tma_m70_n120_k520_weight, {bf16}) {
  return gemm_case(dt, {70, 120, 520, false, true, 0, 0, 0, 0, Epi::None, 1, 1, 0, 0, false, 0, -1, 0, 1, -1, 1});
}
IRON_TEST_KERNEL(iron_gemm, wg_tma_wide_m70_n200_k328_weight_bias_bf16out, {f16}) {
  return gemm_case(dt, {70, 200, 328, false, true, 0, 0, 0, 0, Epi::Bias, 3, 1, 0, 0, false, 0, -1, 0, 1, -1, 2, 0});
}
IRON_TEST_KERNEL(iron_gemm, wg_tma_wide_s4_int_m20_n136_k328_weight_split2, {bf16}) {
  return gemm_case(dt, {20, 136, 328, false, true, 0, 0, 0, 0, Epi::None, 1, 2, 0, 4, true, 0, -1, 0, 1, -1, 2, 0});
}
// The warp-specialized kernel: 9 K steps through 4 stages (every stage handed back and refilled
// twice), tails in m, n and k.
IRON_TEST_KERNEL(iron_gemm, wg_ws_m70_n200_k520_weight, {bf16}) {
  return gemm_case(dt, {70, 200, 520, false, true, 0, 0, 0, 0, Epi::None, 1, 1, 0, 0, false, 0, -1, 0, 1, -1, 2, 1});
}

// The large tile's fused SwiGLU kernel (two products per 64x32 warp tile), B a weight.
IRON_TEST_KERNEL(iron_gemm, large_tile_swiglu_m130_n260_k70, {bf16}) {
  return gemm_case(dt, {130, 260, 70, false, true, 0, 0, 0, 0, Epi::Swiglu, 0, 1, 0, 0, false});
}

// ---- Benchmarks: issue 12's shapes (the names bench/peers/gemm_peers.py and the cublaslt_gemm
// rows use), through gemm_for. The large shapes multiply C [M, N] = A [M, K] x B [K, N], both
// row-major as the issue writes them (the layout whose rows the tiles stage with 16-byte
// asynchronous copies); the decode and small shapes multiply by a linear layer's weight W [N, K]
// (B column-major, b_trans 1), the layout the peers (torch.matmul with W^T, cuBLASLt) use and
// the one decode reads: the decode rows kernel streams it. A full f64
// oracle at these shapes would take minutes on the CPU, so B is rank one with power-of-two
// factors, B[k, j] = u[k] * v[j] (exact in bf16 and f16), and the
// oracle is C[i, j] = (sum_k A[i, k] u[k]) v[j] in f64, O(MK + MN): every element still depends
// on its whole row of A (random), u's random signs and exponents catch a wrong K stride of
// either operand and v catches a wrong column. The kernels' arithmetic is checked on full-rank
// inputs by the cases above. Bytes: A, W and C once; FLOPs 2 M N K.
static std::vector<double> powers_of_two(size_t count, uint64_t seed) {
  std::vector<double> r = fixture::uniform(count, 0.0, 1.0, seed), out(count);
  for (size_t i = 0; i < count; ++i) {
    const int e = int(r[i] * 7.0) - 4;                 // 2^-4 .. 2^2
    const double sign = (int(r[i] * 1000.0) & 1) ? -1.0 : 1.0;
    out[i] = sign * std::ldexp(1.0, e);
  }
  return out;
}
static BenchSetup gemm_bench(DType dt, uint32_t m, uint32_t n, uint32_t k, bool weight = false, bool routed = false,
                             uint32_t wg_stages = 0, int tma = -1, bool ws = false) {
  const std::vector<double> u = powers_of_two(k, 311), v = powers_of_two(n, 312);
  std::vector<double> w(size_t(n) * k);
  for (uint32_t kk = 0; kk < k; ++kk)
    for (uint32_t j = 0; j < n; ++j) w[weight ? size_t(j) * k + kk : size_t(kk) * n + j] = u[kk] * v[j];
  BenchSetup b(dt);
  b.in("a", fixture::uniform(size_t(m) * k, -1.0, 1.0, 313)).in("b", std::move(w)).out("c", size_t(m) * n);
  // vendor 0: these rows time Iron's own kernels (gemm_for routes the large shapes to cuBLASLt
  // on CUDA; the cublaslt_gemm rows time that path, and the _routed row the family's own route).
  Constexprs call{{"m", m}, {"n", n}, {"k", k}, {"b_trans", weight ? 1 : 0}, {"vendor", routed ? 1 : 0}};
  if (wg_stages) call.insert({{"wg", 1}, {"stages", wg_stages}, {"tile", 0}});  // the warpgroup kernel at that depth
  // 0: the warpgroup kernel's per-thread copies (decode rows: the older bodies); 1, 2: the tensor-map tiles.
  if (tma >= 0) call.insert({"tma", tma});
  if (tma >= 0) call.insert({"ws", ws ? 1 : 0});  // 1: the warp-specialized 128x256 kernel (decode rows: not read)
  b.call(call);
  b.oracle([m, n, k, u, v](const Tensors& in, Tensors& out) {
    const auto& A = in.at("a");
    auto& C = out.at("c");
    for (uint32_t i = 0; i < m; ++i) {
      double s = 0;
      for (uint32_t kk = 0; kk < k; ++kk) s += A[size_t(i) * k + kk] * u[kk];
      for (uint32_t j = 0; j < n; ++j) C[size_t(i) * n + j] = s * v[j];
    }
  });
  // Sums of k terms of size up to 4: measured against sqrt(k) (the typical size of such a sum).
  b.error_floor(std::sqrt(double(k)));
  return b.bytes((double(m) * k + double(n) * k + double(m) * n) * dtype_size(dt)).flops(2.0 * m * n * k);
}
IRON_BENCH(iron_gemm, m96_n512_k2048, {bf16, 1e-2}, {f16, 2e-3}) { return gemm_bench(dt, 96, 512, 2048, true); }
IRON_BENCH(iron_gemm, m256_n512_k2048, {bf16, 1e-2}, {f16, 2e-3}) { return gemm_bench(dt, 256, 512, 2048, true); }
IRON_BENCH(iron_gemm, m1_n96_k5120, {bf16, 1e-2}) { return gemm_bench(dt, 1, 96, 5120, true); }
IRON_BENCH(iron_gemm, m26_n96_k5120, {bf16, 1e-2}) { return gemm_bench(dt, 26, 96, 5120, true); }
IRON_BENCH(iron_gemm, m49_n96_k5120, {bf16, 1e-2}) { return gemm_bench(dt, 49, 96, 5120, true); }
IRON_BENCH(iron_gemm, m256_n96_k5120, {bf16, 1e-2}) { return gemm_bench(dt, 256, 96, 5120, true); }
IRON_BENCH(iron_gemm, m1_n14336_k4096, {bf16, 1e-2}) { return gemm_bench(dt, 1, 14336, 4096, true); }
IRON_BENCH(iron_gemm, m2_n14336_k4096, {bf16, 1e-2}) { return gemm_bench(dt, 2, 14336, 4096, true); }
IRON_BENCH(iron_gemm, m4_n14336_k4096, {bf16, 1e-2}) { return gemm_bench(dt, 4, 14336, 4096, true); }
IRON_BENCH(iron_gemm, m8_n14336_k4096, {bf16, 1e-2}) { return gemm_bench(dt, 8, 14336, 4096, true); }
IRON_BENCH(iron_gemm, m16_n14336_k4096, {bf16, 1e-2}) { return gemm_bench(dt, 16, 14336, 4096, true); }
// The same decode rows on the older bodies (tma 0; the rows above take gemm_for's default: on the
// H200 the warpgroup decode kernel, iron_gemm_decode_wg_tma).
IRON_BENCH(iron_gemm, m1_n14336_k4096_tma0, {bf16, 1e-2}) { return gemm_bench(dt, 1, 14336, 4096, true, false, 0, 0); }
IRON_BENCH(iron_gemm, m4_n14336_k4096_tma0, {bf16, 1e-2}) { return gemm_bench(dt, 4, 14336, 4096, true, false, 0, 0); }
IRON_BENCH(iron_gemm, m8_n14336_k4096_tma0, {bf16, 1e-2}) { return gemm_bench(dt, 8, 14336, 4096, true, false, 0, 0); }
IRON_BENCH(iron_gemm, m16_n14336_k4096_tma0, {bf16, 1e-2}) { return gemm_bench(dt, 16, 14336, 4096, true, false, 0, 0); }
IRON_BENCH(iron_gemm, m2048_n14336_k4096, {bf16, 1e-2}) { return gemm_bench(dt, 2048, 14336, 4096); }
IRON_BENCH(iron_gemm, m4096_n4096_k4096, {bf16, 1e-2}, {f16, 2e-3}) { return gemm_bench(dt, 4096, 4096, 4096); }
// The large shapes against a linear layer's weight W [N, K] (B column-major, staged as BN rows of
// BK), and 8192^3 (B row-major).
IRON_BENCH(iron_gemm, m2048_n14336_k4096_wt, {bf16, 1e-2}) { return gemm_bench(dt, 2048, 14336, 4096, true); }
IRON_BENCH(iron_gemm, m4096_n4096_k4096_wt, {bf16, 1e-2}) { return gemm_bench(dt, 4096, 4096, 4096, true); }
IRON_BENCH(iron_gemm, m8192_n8192_k8192, {bf16, 1e-2}) { return gemm_bench(dt, 8192, 8192, 8192); }
IRON_BENCH(iron_gemm, m8192_n8192_k8192_wt, {bf16, 1e-2}) { return gemm_bench(dt, 8192, 8192, 8192, true); }
// The warpgroup kernel's 4-stage pipeline with per-thread copies (iron_gemm_128x128x64_wg_stages_s4)
// on the same rows, and each tensor-map kernel (the _wt rows take gemm_for's default: on the
// H200 the 128x256 tile at 4 stages, warp-specialized; _tma2 the same tile without).
IRON_BENCH(iron_gemm, m4096_n4096_k4096_wt_wg_s4, {bf16, 1e-2}) { return gemm_bench(dt, 4096, 4096, 4096, true, false, 4, 0); }
IRON_BENCH(iron_gemm, m2048_n14336_k4096_wt_wg_s4, {bf16, 1e-2}) { return gemm_bench(dt, 2048, 14336, 4096, true, false, 4, 0); }
IRON_BENCH(iron_gemm, m4096_n4096_k4096_wt_tma1, {bf16, 1e-2}) { return gemm_bench(dt, 4096, 4096, 4096, true, false, 4, 1); }
IRON_BENCH(iron_gemm, m2048_n14336_k4096_wt_tma1, {bf16, 1e-2}) { return gemm_bench(dt, 2048, 14336, 4096, true, false, 4, 1); }
IRON_BENCH(iron_gemm, m4096_n4096_k4096_wt_ws, {bf16, 1e-2}) { return gemm_bench(dt, 4096, 4096, 4096, true, false, 4, 2, true); }
IRON_BENCH(iron_gemm, m2048_n14336_k4096_wt_ws, {bf16, 1e-2}) { return gemm_bench(dt, 2048, 14336, 4096, true, false, 4, 2, true); }
IRON_BENCH(iron_gemm, m4096_n4096_k4096_wt_tma2, {bf16, 1e-2}) { return gemm_bench(dt, 4096, 4096, 4096, true, false, 4, 2); }
IRON_BENCH(iron_gemm, m2048_n14336_k4096_wt_tma2, {bf16, 1e-2}) { return gemm_bench(dt, 2048, 14336, 4096, true, false, 4, 2); }
IRON_BENCH(iron_gemm, m8192_n8192_k8192_wt_tma2, {bf16, 1e-2}) { return gemm_bench(dt, 8192, 8192, 8192, true, false, 4, 2); }
IRON_BENCH(iron_gemm, m8192_n8192_k8192_wt_ws, {bf16, 1e-2}) { return gemm_bench(dt, 8192, 8192, 8192, true, false, 4, 2, true); }
IRON_BENCH(iron_gemm, m8192_n8192_k8192_wt_tma1, {bf16, 1e-2}) { return gemm_bench(dt, 8192, 8192, 8192, true, false, 4, 1); }
// The same call as gemm_for serves it by default: on CUDA with cuBLASLt, the library step.
IRON_BENCH(iron_gemm, m4096_n4096_k4096_routed, {bf16, 1e-2}) { return gemm_bench(dt, 4096, 4096, 4096, false, true); }

}  // namespace iron::kernels::gemm
