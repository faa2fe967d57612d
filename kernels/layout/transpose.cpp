// Matrix transpose through threadgroup memory: out[c, r] = x[r, c] for x of shape [rows, cols].
// Mode Tile2D: each threadgroup moves one 32 x 32 tile. It reads the tile row by row (coalesced
// along x's rows), stages it in threadgroup memory, and after a barrier writes it column by
// column (coalesced along out's rows). Element (i, j) of the tile sits in slot i * 32 + (j ^ i):
// a tile row still fills 32 consecutive slots, and a tile column, which the second phase walks,
// touches 32 different banks instead of one (an XOR swizzle, so there are no pad slots). Both
// coordinates are taken modulo 32, so no index, whatever it is, can leave the array.
// Both phases loop over the tile clipped to the matrix (one shared end row and end column), so
// an edge tile needs no branch: its threads simply run fewer iterations.
// Dispatch: grid = {ceil(cols / 32), ceil(rows / 32), 1}; any 2-D threadgroup of at most
// 32 x 32 threads (the threads loop over the tile); {32, 8, 1} is the usual shape. A copy: the
// result is exact at every dtype.
#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

namespace {
constexpr uint32_t kTile = 32;
}  // namespace

static void transpose() {
  Expr rows = constexpr_("rows", u32);
  Expr cols = constexpr_("cols", u32);
  Buffer x = input("x", T, {rows, cols});
  Buffer out = output("out", T, {rows, cols});
  TgBuffer tile = threadgroup_alloc("tile", T, kTile * kTile);

  Expr row0 = program_id(1) * kTile;  // the tile's first row of x
  Expr col0 = program_id(0) * kTile;  // the tile's first column of x
  Expr row_end = min(row0 + kTile, rows), col_end = min(col0 + kTile, cols);
  Expr lx = local_id(0), ly = local_id(1);
  Expr sx = group_size(0), sy = group_size(1);
  auto slot = [&](Expr i, Expr j) { return (i & (kTile - 1u)) * kTile + ((j ^ i) & (kTile - 1u)); };
  // Phase 1: tile[r - row0][c - col0] = x[r, c], threads along c (adjacent columns of x).
  for_(row0 + ly, row_end, sy, [&](Expr r) {
    Expr i = r - row0;
    for_(col0 + lx, col_end, sx, [&](Expr c) { tile[slot(i, c - col0)] = x[r * cols + c]; });
  });
  barrier();
  // Phase 2: out[c, r] = tile[r - row0][c - col0], threads along r (adjacent columns of out).
  for_(col0 + ly, col_end, sy, [&](Expr c) {
    Expr j = c - col0;
    for_(row0 + lx, row_end, sx, [&](Expr r) { out[c * rows + r] = tile[slot(r - row0, j)]; });
  });
}
IRON_KERNEL(iron_transpose, transpose, Tile2D, f32, f16, bf16);

static Dim3 transpose_grid(uint32_t rows, uint32_t cols) {
  return {(cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile, 1};
}

static TestSetup transpose_setup(DType dt, uint32_t rows, uint32_t cols, Dim3 tg, std::vector<double> x) {
  return TestSetup(dt)
      .in("x", std::move(x))
      .out("out", size_t(rows) * cols)
      .constexprs({{"rows", rows}, {"cols", cols}})
      .grid(transpose_grid(rows, cols), tg)
      .accumulation(0)  // a copy: exact
      .oracle([rows, cols](const Tensors& in, Tensors& out) {
        const auto& x = in.at("x");
        auto& o = out.at("out");
        for (uint32_t r = 0; r < rows; ++r)
          for (uint32_t c = 0; c < cols; ++c) o[size_t(c) * rows + r] = x[size_t(r) * cols + c];
      });
}
static TestSetup transpose_case(DType dt, uint32_t rows, uint32_t cols, Dim3 tg) {
  return transpose_setup(dt, rows, cols, tg, fixture::uniform(size_t(rows) * cols, -8.0, 8.0, 51));
}

// 37 x 45: partial tiles in both directions (5 and 13 left over), a 2 x 2 grid of tiles.
IRON_TEST_KERNEL(iron_transpose, rows37_cols45, {f32}, {f16}, {bf16}) { return transpose_case(dt, 37, 45, {32, 8, 1}); }
// A 16 x 16 threadgroup: every thread moves two columns and two rows of the tile (the inner and
// outer loops both run twice), and x = 16 is not a multiple of a 32-wide lane group, which a
// Tile2D kernel does not need.
IRON_TEST_KERNEL(iron_transpose, rows70_cols33_tg16x16, {f32}, {f16}, {bf16}) {
  return transpose_case(dt, 70, 33, {16, 16, 1});
}
// Degenerate shapes: one row (a column vector out) and one column, with a thin 8 x 4 group.
IRON_TEST_KERNEL(iron_transpose, rows1_cols100, {f32}, {f16}, {bf16}) { return transpose_case(dt, 1, 100, {8, 4, 1}); }
IRON_TEST_KERNEL(iron_transpose, rows67_cols1, {f32}, {f16}, {bf16}) { return transpose_case(dt, 67, 1, {32, 8, 1}); }
// Selector: the logical call {rows, cols}. One 32 x 32 tile per threadgroup; a {32, 8, 1}
// threadgroup (each thread moves four elements per phase) where the device allows 256 threads
// in a group, else the largest {32, y, 1} it allows. Rows and columns must fit in u32.
static LaunchPlan transpose_for(const Call& call, const DeviceInfo& dev) {
  const int64_t rows = call.size("rows"), cols = call.size("cols");
  if (rows == 0 || cols == 0 || rows > int64_t(UINT32_MAX) || cols > int64_t(UINT32_MAX))
    throw Error("rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols) + ": each must be in 1..2^32-1");
  uint32_t y = 8;
  while (y > 1 && kTile * y > dev.max_threads_per_group) y /= 2;
  LaunchPlan plan;
  plan.steps.push_back({"iron_transpose", transpose_grid(uint32_t(rows), uint32_t(cols)), {kTile, y, 1},
                        {{"rows", uint32_t(rows)}, {"cols", uint32_t(cols)}}, {}});
  plan.reason = "one 32x32 tile per threadgroup, 32x" + std::to_string(y) + " threads";
  return plan;
}
IRON_SELECTOR(iron_transpose, transpose_for);

// Through the selector: partial tiles both ways (33 x 65).
IRON_TEST_KERNEL(iron_transpose, call_rows33_cols65, {f32}, {f16}, {bf16}) {
  TestSetup t = transpose_setup(dt, 33, 65, {1, 1, 1}, fixture::uniform(33 * 65, -8.0, 8.0, 53));
  return TestSetup(dt)
      .in("x", t.inputs().at("x"))
      .out("out", 33 * 65)
      .call({{"rows", 33}, {"cols", 65}})
      .accumulation(0)
      .oracle(t.oracle_fn());
}

// Exact tiles (64 x 96) with magnitudes over the dtype's range: a copy keeps every bit.
IRON_TEST_KERNEL(iron_transpose, rows64_cols96_extreme, {f32}, {f16}, {bf16}) {
  const int e = dt == DType::F16 ? 14 : 100;
  return transpose_setup(dt, 64, 96, {32, 8, 1}, fixture::magnitudes(64 * 96, -e, e, 52)).error_floor(0x1p-126);
}

}  // namespace iron::kernels

// Benchmarks: a square 4096 x 4096 activation and a [tokens, hidden] -> [hidden, tokens] weight
// layout change (11008 x 4096). Memory bound: every element is read once and written once.
namespace iron::kernels {
static BenchSetup transpose_bench(DType dt, uint32_t rows, uint32_t cols) {
  TestSetup t = transpose_case(dt, rows, cols, {32, 8, 1});
  BenchSetup b(dt);
  b.in("x", t.inputs().at("x")).out("out", size_t(rows) * cols).call({{"rows", rows}, {"cols", cols}});
  b.oracle(t.oracle_fn());
  return b.bytes(2.0 * rows * cols * dtype_size(dt)).flops(0).sweep("iron_transpose", double(rows) * cols);
}
IRON_BENCH(iron_transpose, r4096_c4096, {f32, 0}, {f16, 0}, {bf16, 0}) { return transpose_bench(dt, 4096, 4096); }
IRON_BENCH(iron_transpose, r11008_c4096, {f32, 0}, {f16, 0}, {bf16, 0}) { return transpose_bench(dt, 11008, 4096); }
}  // namespace iron::kernels
