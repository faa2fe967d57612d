// Test cases and benchmarks of the FP8 GEMM family (gemm_fp8.cpp), through its selector.
//
// Inputs are random fp8 bytes (every finite value of the format, NaN and e5m2's infinities
// excluded: full avalanche over the format, magnitudes from 2^-9 (e4m3) or 2^-16 (e5m2) to 448
// or 57344), decoded here exactly, so the harness stores the same bytes. The oracle is the
// definition in f64 from those exact values and the scales: per-tensor
//   C[i, j] = sa * sb * sum_k A[i, k] B[j, k],
// block
//   C[i, j] = sum_blk (sa[i, blk] * sb[j / 128, blk]) * sum_{k in blk} A[i, k] B[j, k].
//
// Tolerance, derived (docs/semantics.md "Cooperative tiles"): every product of two fp8 values is
// exact, and each 32-deep tile product may differ from the definition by (32 + 1) 2^-23 times
// the sum of |accumulator| and its |products| (the tensor cores' accumulation). Let F be the
// largest scaled sum of |A[i, k] B[j, k]| over the outputs (the largest any partial sum, scaled,
// can be; the harness's error floor). An f32 ulp of F is at least 2^-24 F, so one tile product
// costs at most 66 f32 ulps of F:
//   per-tensor: 66 ceil(k / 32) for the sum, plus 2 roundings (sa * sb, then its product with the
//               sum);
//   block:      66 * 4 per 128-deep block (each block's partial sum, scaled, is at most F), one
//               fused multiply-add per block into the accumulator and one rounding of sa * sb in
//               each block's scale: (66 * 4 + 2) per block;
// then the rounding to the output dtype (half an ulp of bf16 or f32, which the harness adds).
// The warpgroup kernel's cases (wg 1: wgmma m64n128k32 on sm_90a) take the bound of the fp8
// warpgroup product instead (docs/semantics.md "Warpgroup tiles"): Hopper's fp8 tensor cores keep
// about 14 bits while they accumulate, so each 32-deep product may be off by (32 + 1) 2^-13 of
// the same sum, 2^10 times the f32 figure: 66 * 2^10 ulps of F per product. The other cases ask
// for the mma.sync kernels (wg 0), whose tight bound they keep on every device.
// Nothing here is tuned to pass.
#include <cmath>
#include <cstdint>
#include <vector>

#include <iron/iron.hpp>

#include "gemm_fp8.hpp"

namespace iron::kernels::gemm_fp8 {
using namespace iron::dsl;
namespace {

// The exact value of an fp8 byte (e4m3: bias 7, no infinities, 0x7f NaN; e5m2: bias 15).
double decode(DType t, uint8_t byte) {
  const bool e4 = t == DType::F8E4M3;
  const int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  const int e = (byte & 0x7f) >> mbits, mant = byte & ((1 << mbits) - 1);
  const double sign = (byte & 0x80) ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(double(mant), 1 - bias - mbits);
  return sign * std::ldexp(1.0 + double(mant) / (1 << mbits), e - bias);
}
bool finite_byte(DType t, uint8_t byte) {
  return t == DType::F8E4M3 ? (byte & 0x7f) != 0x7f : ((byte & 0x7f) >> 2) != 31;
}

// `count` random finite fp8 values (splitmix64 bytes, NaN and infinities redrawn).
std::vector<double> fp8_values(DType t, size_t count, uint64_t seed) {
  std::vector<double> out(count);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (size_t i = 0; i < count; ++i) {
    uint8_t b;
    do b = uint8_t(next() >> 56);
    while (!finite_byte(t, b));
    out[i] = decode(t, b);
  }
  return out;
}

// Distinct positive scales, from 2^-3 to 2^3 with full f32 significands (exact f32 values).
std::vector<double> scales(size_t count, uint64_t seed) {
  std::vector<double> r = fixture::uniform(count, 0.0, 1.0, seed), out(count);
  for (size_t i = 0; i < count; ++i) out[i] = double(float(std::ldexp(1.0 + r[i], int(r[i] * 7000.0) % 7 - 3)));
  return out;
}

struct Fp8Shape {
  uint32_t m, n, k;
  bool block = false;
  int out = 0;      // 0 bf16, 1 f32
  uint32_t lda = 0, ldb = 0;  // 0: k
  int tile = -1;    // -1: the selector's choice
  int wg = 0;       // 1: the warpgroup kernel, 0: the mma.sync kernels
  int tma = -1;     // with wg 1: 1 or 2 the warp-specialized tensor-map kernels (-1: not asked)
};

TestSetup fp8_case(DType dt, const Fp8Shape& s) {
  const uint32_t lda = s.lda ? s.lda : s.k, ldb = s.ldb ? s.ldb : s.k;
  const uint32_t kb = s.block ? s.k / kBlockK : 1, nb = (s.n + 127) / 128;
  const size_t a_len = size_t(s.m - 1) * lda + s.k, b_len = size_t(s.n - 1) * ldb + s.k;
  std::vector<double> A = fp8_values(dt, a_len, 401 + s.m), B = fp8_values(dt, b_len, 402 + s.n);
  std::vector<double> sa = s.block ? scales(size_t(s.m) * kb, 403) : std::vector<double>{0.8125};
  std::vector<double> sb = s.block ? scales(size_t(nb) * kb, 404) : std::vector<double>{1.375};
  // F: the largest scaled sum of |products| over the outputs (the error floor).
  double F = 0;
  for (uint32_t i = 0; i < s.m; ++i)
    for (uint32_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (uint32_t kk = 0; kk < s.k; ++kk) {
        const uint32_t blk = kk / kBlockK;
        const double sc = s.block ? sa[size_t(i) * kb + blk] * sb[size_t(j / 128) * kb + blk] : sa[0] * sb[0];
        sum += std::fabs(A[size_t(i) * lda + kk] * B[size_t(j) * ldb + kk]) * sc;
      }
      F = std::max(F, sum);
    }
  Constexprs call{{"m", s.m}, {"n", s.n}, {"k", s.k}, {"lda", lda}, {"ldb", ldb}, {"scale", s.block ? 1 : 0}, {"out", s.out}};
  if (s.tile >= 0) call.emplace("tile", s.tile);
  call.emplace("wg", s.wg);
  if (s.tma >= 0) call.emplace("tma", s.tma);
  TestSetup t(dt);
  t.in("a", A).in("b", B).in("sa", sa).in("sb", sb).out("c", size_t(s.m) * s.n);
  t.call(call);
  const double per_product = s.wg == 1 ? 66.0 * 1024.0 : 66.0;
  const double roundings =
      s.block ? (per_product * (kBlockK / 32) + 2.0) * (s.k / kBlockK) : per_product * std::ceil(s.k / 32.0) + 2.0;
  t.accumulation(roundings).error_floor(F);
  const Fp8Shape sh = s;
  t.oracle([sh, lda, ldb, kb](const Tensors& in, Tensors& out) {
    const auto &a = in.at("a"), &b = in.at("b"), &xa = in.at("sa"), &xb = in.at("sb");
    auto& C = out.at("c");
    for (uint32_t i = 0; i < sh.m; ++i)
      for (uint32_t j = 0; j < sh.n; ++j) {
        double total = 0;
        for (uint32_t blk = 0; blk * kBlockK < sh.k; ++blk) {
          double part = 0;
          for (uint32_t kk = blk * kBlockK; kk < std::min(sh.k, (blk + 1) * kBlockK); ++kk)
            part += a[size_t(i) * lda + kk] * b[size_t(j) * ldb + kk];
          total += sh.block ? xa[size_t(i) * kb + blk] * xb[size_t(j / 128) * kb + blk] * part : part;
        }
        C[size_t(i) * sh.n + j] = sh.block ? total : xa[0] * xb[0] * total;
      }
  });
  return t;
}

}  // namespace

// Per-tensor: K tails (k = 200: a partial 16-byte chunk, a partial 128-deep step), strides past k,
// odd M/N tails on both tiles, both formats and both outputs.
IRON_TEST_KERNEL(iron_gemm_fp8, tensor_m37_n45_k200_strided, {f8e4m3}) {
  return fp8_case(dt, {37, 45, 200, false, 1, 208, 224});
}
IRON_TEST_KERNEL(iron_gemm_fp8, tensor_m130_n140_k256_large, {f8e4m3}) {
  return fp8_case(dt, {130, 140, 256, false, 0, 0, 0, 0});
}
IRON_TEST_KERNEL(iron_gemm_fp8, tensor_m33_n40_k96, {f8e5m2}) { return fp8_case(dt, {33, 40, 96, false, 1}); }
// Block scales: distinct scales per row, per K block and per 128-column block of B (n past 128,
// so the second column block's scales are read), every K block promoted.
IRON_TEST_KERNEL(iron_gemm_fp8, block_m45_n150_k384, {f8e4m3}) { return fp8_case(dt, {45, 150, 384, true, 1}); }
IRON_TEST_KERNEL(iron_gemm_fp8, block_m45_n150_k384_bf16, {f8e4m3}) { return fp8_case(dt, {45, 150, 384, true, 0}); }
IRON_TEST_KERNEL(iron_gemm_fp8, block_m140_n260_k256_large, {f8e4m3}) {
  return fp8_case(dt, {140, 260, 256, true, 0, 0, 0, 0});
}
IRON_TEST_KERNEL(iron_gemm_fp8, block_m70_n130_k256_large, {f8e5m2}) {
  return fp8_case(dt, {70, 130, 256, true, 1, 0, 0, 0});
}
// The warpgroup kernel (wg 1; on the interpreter its products are the definition's): per-tensor
// with M, N and K tails and strides past k (e4m3, f32 out; e5m2, bf16 out), and block scales over
// two column blocks of B and two K blocks, with an M tail. Each runs one or two threadgroups (a
// fraction of a second on the interpreter).
IRON_TEST_KERNEL(iron_gemm_fp8, wg_tensor_m100_n140_k200_strided, {f8e4m3}) {
  return fp8_case(dt, {100, 140, 200, false, 1, 208, 224, -1, 1});
}
IRON_TEST_KERNEL(iron_gemm_fp8, wg_tensor_m40_n72_k96, {f8e5m2}) { return fp8_case(dt, {40, 72, 96, false, 0, 0, 0, -1, 1}); }
IRON_TEST_KERNEL(iron_gemm_fp8, wg_block_m70_n150_k256, {f8e4m3}) {
  return fp8_case(dt, {70, 150, 256, true, 0, 0, 0, -1, 1});
}
// The warp-specialized tensor-map kernels (wg 1 with tma 2 or 1; their K loop is the warpgroup
// kernel's products, so they take its bound), with M, N and K tails (zeros from the copy engine):
// 128x256 per-tensor with strides past k (e4m3); 128x128 per-tensor with 5 K steps through the 4
// stages (the copier waits on `empty` before refilling; e5m2); 128x128 block scales over two
// column blocks of B and two K blocks. One or two threadgroups each.
IRON_TEST_KERNEL(iron_gemm_fp8, wg_ws_wide_m70_n200_k200_strided, {f8e4m3}) {
  return fp8_case(dt, {70, 200, 200, false, 0, 208, 224, -1, 1, 2});
}
IRON_TEST_KERNEL(iron_gemm_fp8, wg_ws_tensor_m100_n72_k520, {f8e5m2}) {
  return fp8_case(dt, {100, 72, 520, false, 0, 528, 528, -1, 1, 1});
}
IRON_TEST_KERNEL(iron_gemm_fp8, wg_ws_block_m70_n150_k256, {f8e4m3}) {
  return fp8_case(dt, {70, 150, 256, true, 0, 0, 0, -1, 1, 1});
}

// The production shape, 8192^3 (per-tensor and block scales, bf16 out), checked on a sample of
// outputs against the f64 definition before timing. Inputs: fp8 values of uniform(-1, 1)
// rounded to the format, scales near 1: sums of 8192 terms measured against sqrt(k).
// wg: the call's `wg` (-1: the selector's choice, the warpgroup kernel on sm_90a; 0: mma.sync);
// tma: the call's `tma` (-1: the selector's choice, the warp-specialized tensor-map kernels on
// sm_90a; 0: the cp.async warpgroup kernel).
static BenchSetup fp8_bench(DType dt, uint32_t m, uint32_t n, uint32_t k, bool block, int wg = -1, int tma = -1) {
  const uint32_t kb = block ? k / kBlockK : 1, nb = (n + 127) / 128;
  std::vector<double> sa = block ? scales(size_t(m) * kb, 503) : std::vector<double>{0.8125};
  std::vector<double> sb = block ? scales(size_t(nb) * kb, 504) : std::vector<double>{1.375};
  BenchSetup b(dt);
  b.in("a", fixture::uniform(size_t(m) * k, -1.0, 1.0, 501)).in("b", fixture::uniform(size_t(n) * k, -1.0, 1.0, 502));
  b.in("sa", sa).in("sb", sb).out("c", size_t(m) * n);
  Constexprs call{{"m", m}, {"n", n}, {"k", k}, {"scale", block ? 1 : 0}, {"out", 0}};
  if (wg >= 0) call.emplace("wg", wg);
  if (tma >= 0) call.emplace("tma", tma);
  b.call(call);
  b.sampled_oracle(2048, [n, k, kb, block](const Tensors& in, const std::string&, size_t e) {
    const auto &a = in.at("a"), &bw = in.at("b"), &xa = in.at("sa"), &xb = in.at("sb");
    const size_t i = e / n, j = e % n;
    double total = 0;
    for (uint32_t blk = 0; blk * kBlockK < k; ++blk) {
      double part = 0;
      for (uint32_t kk = blk * kBlockK; kk < std::min(k, (blk + 1) * kBlockK); ++kk) part += a[i * k + kk] * bw[j * k + kk];
      total += block ? xa[i * kb + blk] * xb[(j / 128) * kb + blk] * part : part;
    }
    return block ? total : xa[0] * xb[0] * total;
  });
  b.error_floor(std::sqrt(double(k)));
  return b.bytes(double(m) * k + double(n) * k + 2.0 * m * n).flops(2.0 * m * n * k);
}
IRON_BENCH(iron_gemm_fp8, m8192_n8192_k8192_tensor, {f8e4m3, 1e-2}) { return fp8_bench(dt, 8192, 8192, 8192, false); }
IRON_BENCH(iron_gemm_fp8, m8192_n8192_k8192_block, {f8e4m3, 1e-2}) { return fp8_bench(dt, 8192, 8192, 8192, true); }
// The mma.sync kernel at the same shape (wg 0), for the comparison.
IRON_BENCH(iron_gemm_fp8, m8192_n8192_k8192_tensor_mma, {f8e4m3, 1e-2}) {
  return fp8_bench(dt, 8192, 8192, 8192, false, 0);
}
// The cp.async warpgroup kernel (tma 0) against the tensor-map ones, and 4096^3.
IRON_BENCH(iron_gemm_fp8, m8192_n8192_k8192_tensor_wg, {f8e4m3, 1e-2}) {
  return fp8_bench(dt, 8192, 8192, 8192, false, -1, 0);
}
IRON_BENCH(iron_gemm_fp8, m8192_n8192_k8192_block_wg, {f8e4m3, 1e-2}) { return fp8_bench(dt, 8192, 8192, 8192, true, -1, 0); }
IRON_BENCH(iron_gemm_fp8, m4096_n4096_k4096_tensor, {f8e4m3, 1e-2}) { return fp8_bench(dt, 4096, 4096, 4096, false); }
IRON_BENCH(iron_gemm_fp8, m4096_n4096_k4096_tensor_wg, {f8e4m3, 1e-2}) {
  return fp8_bench(dt, 4096, 4096, 4096, false, -1, 0);
}

}  // namespace iron::kernels::gemm_fp8
