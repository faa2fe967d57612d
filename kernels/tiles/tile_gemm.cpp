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
