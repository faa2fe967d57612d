// A small GEMM on cooperative tiles, the test kernel of the coop_tile_* family (docs/dsl.md
// "Cooperative tiles"): C[m, n] = A[m, k] * B[k, n] with f16/bf16 inputs and f32 accumulation.
// A is read at a_off with row stride lda, B at b_off with row stride ldb (all run-time values).
// Each threadgroup computes one 16 x 16 tile of C (tile row program_id(1), tile column
// program_id(0)). Per 16-wide K step every thread helps stage A's 16 x 16 block into threadgroup
// memory at offset 8 with row stride 24 (a barrier on each side); each lane group loads its A
// fragment from there and its B fragment straight from device memory, and accumulates in a
// FragVar. Outputs: c (row stride n, one tile_store at a run-time offset, by lane group 0);
// ct = C transposed, through a tile_store into threadgroup memory at offset 3 with row stride 17
// (by the last lane group) and a copy by every thread; corner, element (5, 11) of each tile
// through coop_tile_get.
// Dispatch: grid = {n / 16, m / 16, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width.
#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

static void tile_gemm() {
  Expr m = constexpr_("m", u32);
  Expr n = constexpr_("n", u32);
  Expr k = constexpr_("k", u32);
  Expr lda = constexpr_("lda", u32);
  Expr ldb = constexpr_("ldb", u32);
  Expr a_off = constexpr_("a_off", u32);
  Expr b_off = constexpr_("b_off", u32);
  Expr a_len = constexpr_("a_len", u32);
  Expr b_len = constexpr_("b_len", u32);
  Expr tiles = constexpr_("tiles", u32);
  Buffer a = input("a", T, {a_len});
  Buffer b = input("b", T, {b_len});
  Buffer c = output("c", f32, {m, n});
  Buffer ct = output("ct", f32, {n, m});
  Buffer corner = output("corner", f32, {tiles});

  TileShape tile = coop_tile_setup(16, 16, 16, T);
  TgBuffer as = threadgroup_alloc("as", T, 8 + 16 * 24);
  TgBuffer cs = threadgroup_alloc("cs", f32, 3 + 16 * 17);
  Expr tm = program_id(1);
  Expr tn = program_id(0);
  // Every lane group computes the tile; the first stores c and corner, the last stores the
  // copy that becomes ct. A barrier missing on either side of a K step then corrupts one of
  // them on a device that runs lane groups one after another between barriers (lavapipe).
  Expr first = simd_group_id() == 0u;
  Expr last = simd_group_id() == num_simd_groups() - 1u;
  FragVar acc(coop_tile_fill(tile, 0.0f));

  for_(0u, k / 16u, [&](Expr step) {
    Expr k0 = step * 16u;
    for_(local_id(0), 256u, group_size(0), [&](Expr e) {
      // The slot's row wraps, so a stray extra element (a row 16) overwrites a staged one.
      Expr col = e % 16u;
      as[8u + ((e / 16u) % 16u) * 24u + col] = a[a_off + (tm * 16u + e / 16u) * lda + k0 + col];
    });
    barrier();
    Frag fa = coop_tile_load_a(tile, as, 8u, 24u);
    Frag fb = coop_tile_load_b(tile, b, b_off + k0 * ldb + tn * 16u, ldb);
    acc.set(coop_tile_run(fa, fb, acc.get()));
    barrier();
  });

  if_(first, [&] {
    Frag f = acc.get();
    coop_tile_store(f, c, (tm * 16u) * n + tn * 16u, n);
    Expr v = coop_tile_get(f, 5, 11);
    if_(lane_id() == 0u, [&] { corner[tm * (n / 16u) + tn] = v; });
  });
  if_(last, [&] { coop_tile_store(acc.get(), cs, 3u, 17u); });
  barrier();
  for_(local_id(0), 256u, group_size(0), [&](Expr e) {
    Expr r = e / 16u;
    Expr col = e % 16u;
    ct[(tn * 16u + col) * m + tm * 16u + r] = cs[3u + r * 17u + col];
  });
}
IRON_KERNEL(iron_tile_gemm, tile_gemm, Reduction, f16, bf16);

// The oracle: exact sums in f64. Each 16-wide K step is one mma, whose sum is exact in f64 and
// rounded to f32 once (docs/semantics.md), so the interpreter and the f64 software paths round
// k/16 times; the f32 software path and the tensor-core paths may lose up to one f32 ulp of the
// largest partial sum per addition, 17 per step (docs/semantics.md "Cooperative tiles"). Every
// partial sum is at most k * max|a| * max|b| = k with inputs in [-1, 1], so the error is measured
// against that scale (error_floor k) and allowed 17 * k / 16 ulps.
static TestSetup gemm_setup(DType dt, uint32_t m, uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb, uint32_t a_off,
                            uint32_t b_off, uint32_t tg, bool small_integers) {
  const uint32_t a_len = a_off + m * lda, b_len = b_off + k * ldb, tiles = (m / 16) * (n / 16);
  auto values = [&](size_t count, uint64_t seed) {
    std::vector<double> v = fixture::uniform(count, -1.0, 1.0, seed);
    // Small integers: every product and every partial sum is exact in f32 and in f16 inputs.
    if (small_integers)
      for (double& x : v) x = double(int(x * 4.5));
    return v;
  };
  TestSetup t(dt);
  t.in("a", values(a_len, 71)).in("b", values(b_len, 72));
  t.out("c", size_t(m) * n).out("ct", size_t(n) * m).out("corner", tiles);
  t.constexprs({{"m", m}, {"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"a_off", a_off}, {"b_off", b_off},
                {"a_len", a_len}, {"b_len", b_len}, {"tiles", tiles}});
  t.grid({n / 16, m / 16, 1}, {tg, 1, 1});
  if (small_integers) {
    t.accumulation(0);  // exact: any difference is at least one ulp
  } else {
    t.accumulation(17.0 * k / 16).error_floor(k);
  }
  t.oracle([=](const Tensors& in, Tensors& out) {
    const auto& A = in.at("a");
    const auto& B = in.at("b");
    auto& C = out.at("c");
    auto& CT = out.at("ct");
    auto& corner = out.at("corner");
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t j = 0; j < n; ++j) {
        double s = 0;
        for (uint32_t kk = 0; kk < k; ++kk) s += A[a_off + size_t(i) * lda + kk] * B[b_off + size_t(kk) * ldb + j];
        C[size_t(i) * n + j] = s;
        CT[size_t(j) * m + i] = s;
        if (i % 16 == 5 && j % 16 == 11) corner[(i / 16) * (n / 16) + j / 16] = s;
      }
  });
  return t;
}

// Small-integer inputs: bit-exact on every path. Offsets and strides are not multiples of 8, the
// rows are padded (lda > k, ldb > n), and three K steps accumulate.
IRON_TEST_KERNEL(iron_tile_gemm, small_int_m32_n64_k48, {f16}, {bf16}) {
  return gemm_setup(dt, 32, 64, 48, 53, 67, 5, 3, 64, true);
}
// Full-avalanche inputs (every element uniform in [-1, 1]): within the derived tolerance.
IRON_TEST_KERNEL(iron_tile_gemm, uniform_m48_n32_k64, {f16}, {bf16}) {
  return gemm_setup(dt, 48, 32, 64, 71, 37, 11, 29, 32, false);
}
// One K step, one lane group per threadgroup at lane width 32.
IRON_TEST_KERNEL(iron_tile_gemm, uniform_m16_n32_k16, {f16}, {bf16}) {
  return gemm_setup(dt, 16, 32, 16, 16, 32, 0, 0, 32, false);
}

}  // namespace iron::kernels

namespace iron::kernels {
using namespace iron::dsl;

// One 16 x 16 x 16 product with A and B both staged in threadgroup memory, at run-time offsets
// (a_stage, b_stage) and row strides (lds_a, lds_b), in 16-byte aligned arrays: on CUDA's mma
// strategy an aligned offset and stride (multiples of 8 elements) load through ldmatrix (.trans
// for B), any other through the element path (docs/dsl.md "MmaStrategy"). Every thread stages
// elements; lane group 0 stores C (row stride 16). Dispatch: grid {1, 1, 1}, threadgroup {64, 1, 1}.
static void tile_tg_product() {
  Expr a_stage = constexpr_("a_stage", u32);
  Expr b_stage = constexpr_("b_stage", u32);
  Expr lds_a = constexpr_("lds_a", u32);
  Expr lds_b = constexpr_("lds_b", u32);
  Buffer a = input("a", T, {256});
  Buffer b = input("b", T, {256});
  Buffer c = output("c", f32, {256});
  TgBuffer as = threadgroup_alloc("as", T, 8 + 16 * 24, 16);
  TgBuffer bs = threadgroup_alloc("bs", T, 8 + 16 * 24, 16);
  for_(local_id(0), 256u, group_size(0), [&](Expr e) {
    Expr r = e / 16u;
    Expr col = e % 16u;
    as[a_stage + r * lds_a + col] = a[e];
    bs[b_stage + r * lds_b + col] = b[e];
  });
  barrier();
  TileShape tile = coop_tile_setup(16, 16, 16, T);
  Frag f = coop_tile_run(coop_tile_load_a(tile, as, a_stage, lds_a), coop_tile_load_b(tile, bs, b_stage, lds_b),
                         coop_tile_fill(tile, 0.0f));
  if_(simd_group_id() == 0u, [&] { coop_tile_store(f, c, 0u, 16u); });
}
IRON_KERNEL(iron_tile_tg_product, tile_tg_product, Reduction, f16, bf16);

static TestSetup tg_product_setup(DType dt, uint32_t a_stage, uint32_t lds_a, uint32_t b_stage, uint32_t lds_b,
                                  bool small_integers) {
  auto values = [&](uint64_t seed) {
    std::vector<double> v = fixture::uniform(256, -1.0, 1.0, seed);
    if (small_integers)
      for (double& x : v) x = double(int(x * 4.5));
    return v;
  };
  TestSetup t(dt);
  t.in("a", values(81)).in("b", values(82));
  t.out("c", 256);
  t.constexprs({{"a_stage", a_stage}, {"b_stage", b_stage}, {"lds_a", lds_a}, {"lds_b", lds_b}});
  t.grid({1, 1, 1}, {64, 1, 1});
  if (small_integers) t.accumulation(0);
  else t.accumulation(17.0).error_floor(16);  // as iron_tile_gemm with k = 16
  t.oracle([](const Tensors& in, Tensors& out) {
    const auto& A = in.at("a");
    const auto& B = in.at("b");
    auto& C = out.at("c");
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        double s = 0;
        for (int k = 0; k < 16; ++k) s += A[size_t(i * 16 + k)] * B[size_t(k * 16 + j)];
        C[size_t(i * 16 + j)] = s;
      }
  });
  return t;
}

// Both fragments through ldmatrix on CUDA's mma strategy (offsets and strides multiples of 8).
IRON_TEST_KERNEL(iron_tile_tg_product, aligned_int, {f16}, {bf16}) { return tg_product_setup(dt, 8, 24, 0, 16, true); }
IRON_TEST_KERNEL(iron_tile_tg_product, aligned_uniform, {f16}, {bf16}) {
  return tg_product_setup(dt, 0, 16, 8, 24, false);
}
// A aligned (ldmatrix), B not (stride 20: the element path); then neither (odd offsets).
IRON_TEST_KERNEL(iron_tile_tg_product, b_unaligned_int, {f16}, {bf16}) { return tg_product_setup(dt, 0, 16, 8, 20, true); }
IRON_TEST_KERNEL(iron_tile_tg_product, unaligned_int, {f16}, {bf16}) { return tg_product_setup(dt, 3, 17, 5, 24, true); }

}  // namespace iron::kernels

namespace iron::kernels {
using namespace iron::dsl;

// f8e4m3 tiles (16 x 16 x 32): C[16, n] = A[16, k] * B[k, n] with A read from a buffer at a_off
// (row stride lda) and B's 32 x 16 block of each K step staged in threadgroup memory at offset
// b_stage with row stride 24, then loaded from there; every lane group accumulates in a FragVar,
// the first stores its tile into c and the last into c_last (row stride n). On CUDA: mma.sync m16n8k32 e4m3 on sm_89+,
// the software path elsewhere; on Vulkan the software path (docs/dsl.md "MmaStrategy").
// Dispatch: grid = {n / 16, 1, 1}, threadgroup = {tg, 1, 1} with tg a multiple of the lane width.
static void tile_fp8_gemm() {
  Expr n = constexpr_("n", u32);
  Expr k = constexpr_("k", u32);
  Expr lda = constexpr_("lda", u32);
  Expr ldb = constexpr_("ldb", u32);
  Expr a_off = constexpr_("a_off", u32);
  Expr b_stage = constexpr_("b_stage", u32);
  Expr a_len = constexpr_("a_len", u32);
  Expr b_len = constexpr_("b_len", u32);
  Buffer a = input("a", f8e4m3, {a_len});
  Buffer b = input("b", f8e4m3, {b_len});
  Buffer c = output("c", f32, {16, n});
  Buffer c_last = output("c_last", f32, {16, n});
  TgBuffer bs = threadgroup_alloc("bs", f8e4m3, 8 + 32 * 24, 16);
  TileShape tile = coop_tile_setup(16, 16, 32, f8e4m3);
  Expr tn = program_id(0);
  FragVar acc(coop_tile_fill(tile, 0.0f));
  for_(0u, k / 32u, [&](Expr step) {
    Expr k0 = step * 32u;
    for_(local_id(0), 512u, group_size(0), [&](Expr e) {
      // The slot's row wraps, so a stray extra element (a row 32) overwrites a staged one.
      Expr r = e / 16u;
      Expr col = e % 16u;
      bs[b_stage + (r % 32u) * 24u + col] = b[(k0 + r) * ldb + tn * 16u + col];
    });
    barrier();
    Frag fa = coop_tile_load_a(tile, a, a_off + k0, lda);
    Frag fb = coop_tile_load_b(tile, bs, b_stage, 24u);
    acc.set(coop_tile_run(fa, fb, acc.get()));
    barrier();
  });
  // The first lane group stores c, the last c_last: a barrier dropped on either side of a K step
  // corrupts one of them on a device that runs lane groups one after another (lavapipe).
  if_(simd_group_id() == 0u, [&] { coop_tile_store(acc.get(), c, tn * 16u, n); });
  if_(simd_group_id() == num_simd_groups() - 1u, [&] { coop_tile_store(acc.get(), c_last, tn * 16u, n); });
}
IRON_KERNEL(iron_tile_fp8_gemm, tile_fp8_gemm, Reduction);

static TestSetup fp8_setup(uint32_t n, uint32_t k, uint32_t lda, uint32_t a_off, uint32_t b_stage, uint32_t tg,
                           bool small_integers) {
  const uint32_t a_len = a_off + 16 * lda, b_len = k * n;
  auto values = [&](size_t count, uint64_t seed) {
    std::vector<double> v = fixture::uniform(count, -1.0, 1.0, seed);
    // Small integers (|x| <= 4): exact in f8e4m3, every product and partial sum exact in f32.
    if (small_integers)
      for (double& x : v) x = double(int(x * 4.5));
    return v;
  };
  TestSetup t(DType::F32);
  t.in("a", values(a_len, 91)).in("b", values(b_len, 92));
  t.out("c", size_t(16) * n).out("c_last", size_t(16) * n);
  t.constexprs({{"n", n}, {"k", k}, {"lda", lda}, {"ldb", n}, {"a_off", a_off}, {"b_stage", b_stage},
                {"a_len", a_len}, {"b_len", b_len}});
  t.grid({n / 16, 1, 1}, {tg, 1, 1});
  // Tensor cores may lose one f32 ulp of the largest partial sum per addition, 33 per 32-wide
  // step (docs/semantics.md); partial sums are at most k with inputs in [-1, 1].
  if (small_integers) t.accumulation(0);
  else t.accumulation(33.0 * k / 32).error_floor(k);
  t.oracle([=](const Tensors& in, Tensors& out) {
    const auto& A = in.at("a");
    const auto& B = in.at("b");
    auto& C = out.at("c");
    auto& CL = out.at("c_last");
    for (uint32_t i = 0; i < 16; ++i)
      for (uint32_t j = 0; j < n; ++j) {
        double s = 0;
        for (uint32_t kk = 0; kk < k; ++kk) s += A[a_off + size_t(i) * lda + kk] * B[size_t(kk) * n + j];
        C[size_t(i) * n + j] = s;
        CL[size_t(i) * n + j] = s;
      }
  });
  return t;
}

// Two K steps, offsets and strides that are no multiple of 8.
IRON_TEST_KERNEL(iron_tile_fp8_gemm, small_int_n32_k64, {f32}) { return fp8_setup(32, 64, 71, 5, 3, 64, true); }
IRON_TEST_KERNEL(iron_tile_fp8_gemm, uniform_n48_k96, {f32}) { return fp8_setup(48, 96, 101, 7, 8, 32, false); }

}  // namespace iron::kernels
