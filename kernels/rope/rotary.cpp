// Rotary position embedding over x and out of shape [tokens, heads, HD], token t at position
// p = pos_offset + t, pair i < h = HD / 2 rotated by the angle p * w_i, w_i = theta^(-2 i / HD):
//   NeoX (split halves):  (x[i], x[i + h])   -> (x[i] c - x[i + h] s, x[i + h] c + x[i] s)
//   GPT-J (interleaved):  (x[2i], x[2i + 1]) -> (x[2i] c - x[2i + 1] s, x[2i + 1] c + x[2i] s)
// with c = cos(p w_i), s = sin(p w_i). Two sources of c and s:
//   iron_rope_{neox,gptj}_d{HD}        f32 tables cos, sin of shape [max_pos, h], row p (the
//                                      caller's cache: any frequencies, any scaling)
//   iron_rope_{neox,gptj}_theta_d{HD}  on the fly from the scalar theta (the frequency base):
//                                      w_i = exp2(-(2 i / HD) log2(theta)), angle = f32(p) * w_i,
//                                      then sin and cos, all in f32 (error in the tests' derivation)
// HD (64 or 128) is a variant axis: the row length and the pair layout are compile-time facts.
// Thread mapping (mode Reduction, for its grid built-ins; no lane operations): x counts
// (token, chunk of 8 pairs j .. j + 7, j a multiple of 8), y the head groups: a thread owns its 8
// pairs for the heads y, y + Y, ... below heads (Y = the grid's height: ceil(heads / 4), at most
// 4 heads each, or heads for a small call; see the selectors). It gets the 8 angles' c and s
// once (8 + 8 table loads, or 8 exp2, sin and cos) and applies them to each of its heads, so
// each head costs the 16 elements it moves: NeoX reads x[j .. j + 7] and x[h + j .. h + j + 7],
// GPT-J x[2j .. 2j + 15], all loads before any store, and writes them back in the same groups:
// 16-byte accesses at 16 bits. The loop over heads ends at `heads`; there is no other tail (HD
// is a multiple of 16). Any grid height is correct (1: one thread walks every head).
// Dispatch: grid = {ceil(tokens * (h / 8) / tg), Y, 1} threadgroups of {tg, 1, 1}.
// tokens * heads * HD must be below 2^32, and for the tables pos_offset + tokens <= max_pos (a
// row past the table would be read out of range). f32 arithmetic, one rounding to T per output;
// no reduction, bit-exact run to run.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <iron/iron.hpp>

namespace iron::kernels {
using namespace iron::dsl;

constexpr uint32_t kHeadsPerThread = 4;
constexpr uint32_t kPairsPerThread = 8;

enum class RopeStyle { NeoX, GptJ };
enum class RopeAngles { Table, Theta };

static void rope_body(const KernelVariant& v, RopeStyle style, RopeAngles angles) {
  const uint32_t hd = uint32_t(v.i("HD")), half = hd / 2, chunks = half / kPairsPerThread;
  Expr tokens = constexpr_("tokens", u32);
  Expr heads = constexpr_("heads", u32);
  Expr offset = constexpr_("pos_offset", u32);
  Buffer x = input("x", T, {tokens, heads, hd});
  Expr max_pos, theta;
  std::optional<Buffer> cos_table, sin_table;
  if (angles == RopeAngles::Table) {
    max_pos = constexpr_("max_pos", u32);
    cos_table.emplace(input("cos", f32, {max_pos, half}));
    sin_table.emplace(input("sin", f32, {max_pos, half}));
  } else {
    theta = constexpr_("theta", f32);
  }
  Buffer out = output("out", T, {tokens, heads, hd});
  // Per thread, in registers: the 8 angles' cos and sin, and one head's 8 pairs.
  TgBuffer c = local_array("c", f32, kPairsPerThread), s = local_array("s", f32, kPairsPerThread);
  TgBuffer a = local_array("a", f32, kPairsPerThread), b = local_array("b", f32, kPairsPerThread);  // NeoX
  TgBuffer xv = local_array("xv", f32, 2 * kPairsPerThread), r = local_array("r", f32, 2 * kPairsPerThread);  // GPT-J

  // The loops over pairs have constant bounds: the unroll pass unrolls them, so every register
  // array index is a constant and the 8 (16) accesses of each loop sit side by side for vectorize.
  // x: (token, chunk of 8 pairs); y: the group of heads; the loop over heads steps by the
  // grid's y size, so any grid height from 1 up covers every head once.
  Expr tx = program_id(0) * group_size(0) + local_id(0);
  Expr chunk = tx % chunks;
  Expr t = tx / chunks;
  if_(t < tokens, [&] {
    Expr pos = offset + t;
    Expr j = chunk * kPairsPerThread;  // a multiple of 8
    if (angles == RopeAngles::Table) {
      Expr row = pos * half + j;
      for_(0u, kPairsPerThread, [&](Expr e) { c[e] = (*cos_table)[row + e]; });
      for_(0u, kPairsPerThread, [&](Expr e) { s[e] = (*sin_table)[row + e]; });
    } else {
      Expr l = log2(theta) * (-2.0f / float(hd));  // exact scaling by a power of two
      Expr p = cast<f32>(pos);
      for_(0u, kPairsPerThread, [&](Expr e) {
        Expr angle = p * exp2(cast<f32>(j + e) * l);
        c[e] = cos(angle);
        s[e] = sin(angle);
      });
    }
    // This thread's heads: program_id(1), + num_programs(1), ... below heads.
    for_(program_id(1), heads, num_programs(1), [&](Expr head) {
      Expr row = (t * heads + head) * hd;
      if (style == RopeStyle::NeoX) {  // two runs of 8: x[j ..] and x[h + j ..]
        Expr lo = row + j, hi = row + half + j;  // multiples of 8
        for_(0u, kPairsPerThread, [&](Expr e) { a[e] = cast<f32>(x[lo + e]); });
        for_(0u, kPairsPerThread, [&](Expr e) { b[e] = cast<f32>(x[hi + e]); });
        for_(0u, kPairsPerThread, [&](Expr e) { out[lo + e] = cast<T>(a[e] * c[e] - b[e] * s[e]); });
        for_(0u, kPairsPerThread, [&](Expr e) { out[hi + e] = cast<T>(b[e] * c[e] + a[e] * s[e]); });
      } else {  // one run of 16: x[2j ..], pair e at 2e and 2e + 1
        Expr base = row + j * 2u;  // a multiple of 16
        for_(0u, 2 * kPairsPerThread, [&](Expr q) { xv[q] = cast<f32>(x[base + q]); });
        for_(0u, kPairsPerThread, [&](Expr e) {
          Expr ea = e * 2u, eb = e * 2u + 1u;
          r[ea] = xv[ea] * c[e] - xv[eb] * s[e];
          r[eb] = xv[eb] * c[e] + xv[ea] * s[e];
        });
        for_(0u, 2 * kPairsPerThread, [&](Expr q) { out[base + q] = cast<T>(r[q]); });
      }
    });
  });
}

static void rope_neox(const KernelVariant& v) { rope_body(v, RopeStyle::NeoX, RopeAngles::Table); }
static void rope_gptj(const KernelVariant& v) { rope_body(v, RopeStyle::GptJ, RopeAngles::Table); }
static void rope_neox_theta(const KernelVariant& v) { rope_body(v, RopeStyle::NeoX, RopeAngles::Theta); }
static void rope_gptj_theta(const KernelVariant& v) { rope_body(v, RopeStyle::GptJ, RopeAngles::Theta); }
IRON_KERNEL_VARIANTS(iron_rope_neox, rope_neox, Reduction, (f32, f16, bf16), "d{HD}", ::iron::int_axis("HD", {64, 128}));
IRON_KERNEL_VARIANTS(iron_rope_gptj, rope_gptj, Reduction, (f32, f16, bf16), "d{HD}", ::iron::int_axis("HD", {64, 128}));
IRON_KERNEL_VARIANTS(iron_rope_neox_theta, rope_neox_theta, Reduction, (f32, f16, bf16), "d{HD}",
                     ::iron::int_axis("HD", {64, 128}));
IRON_KERNEL_VARIANTS(iron_rope_gptj_theta, rope_gptj_theta, Reduction, (f32, f16, bf16), "d{HD}",
                     ::iron::int_axis("HD", {64, 128}));

// Selectors: the logical call {tokens, heads, head_dim, pos_offset (default 0)} and max_pos (the
// tables' rows) or theta. head_dim picks the variant (64 or 128; anything else is refused, naming
// the ones built). x covers tokens * (head_dim / 16) threads in threadgroups of 256 (fewer for a
// small call: a whole number of lane groups); y is ceil(heads / 4), four heads per thread, or
// heads for a call with under 2^14 threads that way (decode: one head per thread, more threads).
namespace {
Dim3 rope_grid(uint32_t tokens, uint32_t heads, uint32_t hd, uint32_t tg);

LaunchPlan rope_plan(const char* family, RopeAngles angles, const Call& call, const DeviceInfo& dev) {
  const int64_t tokens = call.size("tokens"), heads = call.size("heads"), hd = call.size("head_dim");
  const int64_t offset = call.size_or("pos_offset", 0);
  const std::string who = std::string(family) + ": ";
  if (hd != 64 && hd != 128)
    throw Error(who + "head_dim = " + std::to_string(hd) + " has no kernel (built: 64 and 128)");
  if (tokens == 0 || heads == 0) throw Error(who + "tokens and heads must be at least 1");
  if (uint64_t(tokens) * uint64_t(heads) * uint64_t(hd) > UINT32_MAX || offset > int64_t(UINT32_MAX))
    throw Error(who + "tokens * heads * head_dim = " + std::to_string(tokens) + " * " + std::to_string(heads) + " * " +
                std::to_string(hd) + " needs a 64-bit index (the kernels index with 32 bits)");
  for (DType t : {DType::F16, DType::BF16})
    if (call.dtype.t == t && !(t == DType::F16 ? dev.f16 : dev.bf16))
      throw Error(who + "the device " + dev.name + " has no " + dtype_name(t) + " buffers");
  Constexprs scalars = {{"tokens", uint32_t(tokens)}, {"heads", uint32_t(heads)}, {"pos_offset", uint32_t(offset)}};
  if (angles == RopeAngles::Table) {
    const int64_t max_pos = call.size("max_pos");
    if (offset + tokens > max_pos)
      throw Error(who + "pos_offset + tokens = " + std::to_string(offset + tokens) + " exceeds max_pos = " +
                  std::to_string(max_pos) + " (the cos/sin tables have max_pos rows)");
    scalars["max_pos"] = uint32_t(max_pos);
  } else {
    const double theta = call.scalar("theta");
    if (!(theta > 1.0) || !std::isfinite(theta))
      throw Error(who + "theta = " + std::to_string(theta) + ": the frequency base must be a finite value above 1");
    scalars["theta"] = theta;
  }
  const uint64_t x_threads = uint64_t(tokens) * uint64_t(hd / 16);
  const uint32_t lanes = std::max<uint32_t>(dev.lane_width, 1);
  uint32_t tg = x_threads >= 256 ? 256u : uint32_t((x_threads + lanes - 1) / lanes * lanes);
  tg = std::min(tg, dev.max_threads_per_group);
  Dim3 grid = rope_grid(uint32_t(tokens), uint32_t(heads), uint32_t(hd), tg);
  const bool small = uint64_t(grid.x) * tg * grid.y < (1u << 14);
  if (small) grid.y = uint32_t(heads);
  if (grid.x > dev.max_grid.x || grid.y > dev.max_grid.y)
    throw Error(who + "grid " + std::to_string(grid.x) + " x " + std::to_string(grid.y) + " exceeds the device's " +
                std::to_string(dev.max_grid.x) + " x " + std::to_string(dev.max_grid.y));
  LaunchPlan plan;
  plan.steps.push_back({std::string(family) + "_d" + std::to_string(hd), grid, {tg, 1, 1}, scalars, {}});
  plan.reason = "head_dim " + std::to_string(hd) + ", 8 pairs per thread, " +
                (small ? std::string("one head per thread (a small call)") : std::string("up to 4 heads per thread"));
  return plan;
}
}  // namespace

static LaunchPlan rope_neox_for(const Call& c, const DeviceInfo& d) { return rope_plan("iron_rope_neox", RopeAngles::Table, c, d); }
static LaunchPlan rope_gptj_for(const Call& c, const DeviceInfo& d) { return rope_plan("iron_rope_gptj", RopeAngles::Table, c, d); }
static LaunchPlan rope_neox_theta_for(const Call& c, const DeviceInfo& d) {
  return rope_plan("iron_rope_neox_theta", RopeAngles::Theta, c, d);
}
static LaunchPlan rope_gptj_theta_for(const Call& c, const DeviceInfo& d) {
  return rope_plan("iron_rope_gptj_theta", RopeAngles::Theta, c, d);
}
IRON_SELECTOR(iron_rope_neox, rope_neox_for);
IRON_SELECTOR(iron_rope_gptj, rope_gptj_for);
IRON_SELECTOR(iron_rope_neox_theta, rope_neox_theta_for);
IRON_SELECTOR(iron_rope_gptj_theta, rope_gptj_theta_for);

namespace {

// The grid for a call at tg threads (the dispatch rule of the header comment).
Dim3 rope_grid(uint32_t tokens, uint32_t heads, uint32_t hd, uint32_t tg) {
  const uint64_t x = uint64_t(tokens) * (hd / 2 / kPairsPerThread);
  return {uint32_t((x + tg - 1) / tg), (heads + kHeadsPerThread - 1) / kHeadsPerThread, 1};
}

struct RopeShape {
  RopeStyle style;
  RopeAngles angles;
  uint32_t tokens, heads, hd, offset;
  double theta = 10000.0;
};

double exact_angle(const RopeShape& r, uint32_t pos, uint32_t i) {
  return double(pos) * std::pow(r.theta, -2.0 * i / r.hd);
}

// Tolerances (derived; outputs measured against a floor of 1, inputs |x| <= 4, so |a| + |b| <= 8).
// Tables: two products and a sum (or an fma and a product) in f32: at most 3 u (|a c| + |b s|)
// <= 24 u = 12 ulps of the floor; the table values are the oracle's too.
// Theta: w = exp2(q l), l = log2(theta) * (-2 / HD): log2 (16 u, the allowance of a
// transcendental) and the exact scaling by a power of two; q l rounds once (q = j + e is exact);
// exp2 adds 16 u and turns the argument's error of 17 u |q l| into ln 2 * 17 u |q l| <= 12 * 17 u
// (|q l| < log2(theta) < 14 for theta = 10^4); the product f32(p) * w rounds once: the angle's
// relative error is at most (16 + 165 + 1) u < 184 u, so its absolute error is 184 u * p. sin
// and cos are within 16 u absolutely (the allowance; Iron's bound is 2^-20 = 16 u), and the
// rotation adds its 3 roundings. |error| <= (|a| + |b|) (16 u + 184 u * pmax + 3 u)
// = 4 (3 + 184 pmax) + 4 * 16 ulps of 1: accumulation 4 (3 + 184 pmax), 4 transcendentals.
TestSetup rope_setup(DType dt, const RopeShape& r, std::vector<double> x) {
  const uint32_t half = r.hd / 2, max_pos = r.offset + r.tokens + 2;  // two rows past the last one read
  const size_t n = size_t(r.tokens) * r.heads * r.hd;
  TestSetup t(dt);
  t.in("x", std::move(x)).out("out", n);
  Constexprs scalars = {{"tokens", r.tokens}, {"heads", r.heads}, {"pos_offset", r.offset}};
  if (r.angles == RopeAngles::Table) {
    std::vector<double> cos_t(size_t(max_pos) * half), sin_t(size_t(max_pos) * half);
    for (uint32_t p = 0; p < max_pos; ++p)
      for (uint32_t i = 0; i < half; ++i) {
        cos_t[size_t(p) * half + i] = double(float(std::cos(exact_angle(r, p, i))));
        sin_t[size_t(p) * half + i] = double(float(std::sin(exact_angle(r, p, i))));
      }
    t.in("cos", std::move(cos_t)).in("sin", std::move(sin_t));
    scalars["max_pos"] = max_pos;
    t.accumulation(12);
  } else {
    scalars["theta"] = r.theta;
    const double pmax = r.offset + r.tokens - 1;
    t.accumulation(4 * (3 + 184 * pmax)).math_ops(4);
  }
  return t.constexprs(scalars)
      .grid(rope_grid(r.tokens, r.heads, r.hd, 64), {64, 1, 1})
      .oracle([r](const Tensors& in, Tensors& out) {
        const auto& xv = in.at("x");
        auto& o = out.at("out");
        const uint32_t h = r.hd / 2;
        const bool table = r.angles == RopeAngles::Table;
        const std::vector<double>* cos_t = table ? &in.at("cos") : nullptr;
        const std::vector<double>* sin_t = table ? &in.at("sin") : nullptr;
        for (uint32_t tk = 0; tk < r.tokens; ++tk)
          for (uint32_t hh = 0; hh < r.heads; ++hh)
            for (uint32_t i = 0; i < h; ++i) {
              const size_t row = (size_t(tk) * r.heads + hh) * r.hd;
              const size_t lo = r.style == RopeStyle::NeoX ? row + i : row + 2 * i;
              const size_t hi = r.style == RopeStyle::NeoX ? row + i + h : row + 2 * i + 1;
              const uint32_t p = r.offset + tk;
              double c, s;
              if (table) {
                c = (*cos_t)[size_t(p) * h + i], s = (*sin_t)[size_t(p) * h + i];
              } else {
                c = std::cos(exact_angle(r, p, i)), s = std::sin(exact_angle(r, p, i));
              }
              o[lo] = xv[lo] * c - xv[hi] * s;
              o[hi] = xv[hi] * c + xv[lo] * s;
            }
      });
}
TestSetup rope_case(DType dt, const RopeShape& r) {
  return rope_setup(dt, r, fixture::uniform(size_t(r.tokens) * r.heads * r.hd, -4.0, 4.0, 101 + r.hd + r.heads));
}
// Inputs in [1, 4] of one sign per half: the second half's two products add, so most outputs are
// above 1, where a 16-bit store that rounds toward zero is off by more than the tolerance.
TestSetup rope_positive_case(DType dt, const RopeShape& r) {
  auto x = fixture::uniform(size_t(r.tokens) * r.heads * r.hd, 1.0, 4.0, 102 + r.hd);
  return rope_setup(dt, r, std::move(x));
}

}  // namespace

// Per kernel: 5 tokens at offset 7 with 3 heads (one thread walks 3 heads), 3 tokens at offset 0
// with 6 heads (two head groups of 3: position 0, angle 0), 4 tokens with 5 heads (groups of 3
// and 2), each grid ending in threads past the last token; and 8 tokens of 8 heads (two groups
// of 4, the grid filled exactly).
IRON_TEST_KERNEL(iron_rope_neox_d64, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 5, 3, 64, 7}); }
IRON_TEST_KERNEL(iron_rope_neox_d64, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 3, 6, 64, 0}); }
IRON_TEST_KERNEL(iron_rope_neox_d64, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 8, 8, 64, 1}); }
IRON_TEST_KERNEL(iron_rope_neox_d64, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 4, 5, 64, 2});
}
IRON_TEST_KERNEL(iron_rope_neox_d128, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 5, 3, 128, 7}); }
IRON_TEST_KERNEL(iron_rope_neox_d128, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 3, 6, 128, 0}); }
IRON_TEST_KERNEL(iron_rope_neox_d128, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 8, 8, 128, 1}); }
IRON_TEST_KERNEL(iron_rope_neox_d128, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 4, 5, 128, 2});
}
IRON_TEST_KERNEL(iron_rope_gptj_d64, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 5, 3, 64, 7}); }
IRON_TEST_KERNEL(iron_rope_gptj_d64, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 3, 6, 64, 0}); }
IRON_TEST_KERNEL(iron_rope_gptj_d64, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 8, 8, 64, 1}); }
IRON_TEST_KERNEL(iron_rope_gptj_d64, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 4, 5, 64, 2});
}
IRON_TEST_KERNEL(iron_rope_gptj_d128, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 5, 3, 128, 7}); }
IRON_TEST_KERNEL(iron_rope_gptj_d128, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 3, 6, 128, 0}); }
IRON_TEST_KERNEL(iron_rope_gptj_d128, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 8, 8, 128, 1}); }
IRON_TEST_KERNEL(iron_rope_gptj_d128, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 4, 5, 128, 2});
}
IRON_TEST_KERNEL(iron_rope_neox_theta_d64, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 5, 3, 64, 7}); }
IRON_TEST_KERNEL(iron_rope_neox_theta_d64, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 3, 6, 64, 0}); }
IRON_TEST_KERNEL(iron_rope_neox_theta_d64, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 8, 8, 64, 1}); }
IRON_TEST_KERNEL(iron_rope_neox_theta_d64, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 4, 5, 64, 2});
}
IRON_TEST_KERNEL(iron_rope_neox_theta_d128, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 5, 3, 128, 7}); }
IRON_TEST_KERNEL(iron_rope_neox_theta_d128, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 3, 6, 128, 0}); }
IRON_TEST_KERNEL(iron_rope_neox_theta_d128, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 8, 8, 128, 1}); }
IRON_TEST_KERNEL(iron_rope_neox_theta_d128, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 4, 5, 128, 2});
}
IRON_TEST_KERNEL(iron_rope_gptj_theta_d64, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 5, 3, 64, 7}); }
IRON_TEST_KERNEL(iron_rope_gptj_theta_d64, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 3, 6, 64, 0}); }
IRON_TEST_KERNEL(iron_rope_gptj_theta_d64, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 8, 8, 64, 1}); }
IRON_TEST_KERNEL(iron_rope_gptj_theta_d64, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 4, 5, 64, 2});
}
IRON_TEST_KERNEL(iron_rope_gptj_theta_d128, t5_h3_off7, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 5, 3, 128, 7}); }
IRON_TEST_KERNEL(iron_rope_gptj_theta_d128, t3_h6_off0, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 3, 6, 128, 0}); }
IRON_TEST_KERNEL(iron_rope_gptj_theta_d128, t8_h8_off1, {f32}, {f16}, {bf16}) { return rope_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 8, 8, 128, 1}); }
IRON_TEST_KERNEL(iron_rope_gptj_theta_d128, t4_h5_off2_positive, {f32}, {f16}, {bf16}) {
  return rope_positive_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 4, 5, 128, 2});
}

namespace {
// The grid case for `r` as a call through the family's selector.
TestSetup rope_call_case(DType dt, const RopeShape& r) {
  TestSetup g = rope_case(dt, r);
  TestSetup c(dt);
  for (const auto& [name, values] : g.inputs()) c.in(name, values);
  Constexprs args = {{"tokens", r.tokens}, {"heads", r.heads}, {"head_dim", r.hd}, {"pos_offset", r.offset}};
  if (r.angles == RopeAngles::Table) args["max_pos"] = g.scalars().at("max_pos");
  else args["theta"] = r.theta;
  return c.out("out", size_t(r.tokens) * r.heads * r.hd)
      .call(args)
      .accumulation(g.accumulation_roundings())
      .math_ops(g.math_op_count())
      .oracle(g.oracle_fn());
}
}  // namespace
// guards: each family's selector routes head_dim 64 and 128 to their kernels, with an offset, a head count no group size divides and one head per thread (a small call)
IRON_TEST_KERNEL(iron_rope_neox, call_t7_h5_d64_off3, {f32}, {f16}, {bf16}) {
  return rope_call_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 7, 5, 64, 3});
}
IRON_TEST_KERNEL(iron_rope_neox, call_t3_h9_d128, {f32}, {bf16}) { return rope_call_case(dt, {RopeStyle::NeoX, RopeAngles::Table, 3, 9, 128, 0}); }
IRON_TEST_KERNEL(iron_rope_gptj, call_t7_h5_d64_off3, {f32}, {f16}, {bf16}) {
  return rope_call_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 7, 5, 64, 3});
}
IRON_TEST_KERNEL(iron_rope_gptj, call_t3_h9_d128, {f32}, {bf16}) { return rope_call_case(dt, {RopeStyle::GptJ, RopeAngles::Table, 3, 9, 128, 0}); }
IRON_TEST_KERNEL(iron_rope_neox_theta, call_t7_h5_d64_off3, {f32}, {f16}, {bf16}) {
  return rope_call_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 7, 5, 64, 3});
}
IRON_TEST_KERNEL(iron_rope_neox_theta, call_t3_h9_d128, {f32}, {bf16}) {
  return rope_call_case(dt, {RopeStyle::NeoX, RopeAngles::Theta, 3, 9, 128, 0});
}
IRON_TEST_KERNEL(iron_rope_gptj_theta, call_t7_h5_d64_off3, {f32}, {f16}, {bf16}) {
  return rope_call_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 7, 5, 64, 3});
}
IRON_TEST_KERNEL(iron_rope_gptj_theta, call_t3_h9_d128, {f32}, {bf16}) {
  return rope_call_case(dt, {RopeStyle::GptJ, RopeAngles::Theta, 3, 9, 128, 0});
}

// Benchmarks, by the families' selectors: NeoX [T, 32, 128] at T = 4096 and 32768 (issue 9),
// decode (T = 1). Bytes: x read and out written once, and the tables' rows read once per token
// (2 * 64 f32; the tables have T + 2 rows, the last two unread); nothing more for theta.
namespace {
BenchSetup rope_bench(DType dt, RopeStyle style, RopeAngles angles, uint32_t tokens) {
  const RopeShape r{style, angles, tokens, 32, 128, 0};
  TestSetup t = rope_call_case(dt, r);
  BenchSetup b(dt);
  for (const auto& [name, values] : t.inputs()) b.in(name, values);
  const size_t n = size_t(tokens) * 32 * 128;
  b.out("out", n).call(t.call_args()).oracle(t.oracle_fn());
  const double table = angles == RopeAngles::Table ? 2.0 * tokens * 64 * 4 : 0.0;
  return b.bytes(2.0 * n * dtype_size(dt) + table).flops(3.0 * n);
}
}  // namespace
IRON_BENCH(iron_rope_neox, t1_h32_d128, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rope_bench(dt, RopeStyle::NeoX, RopeAngles::Table, 1); }
IRON_BENCH(iron_rope_neox, t4096_h32_d128, {f32, 1e-5}, {f16, 2e-3}, {bf16, 1e-2}) { return rope_bench(dt, RopeStyle::NeoX, RopeAngles::Table, 4096); }
IRON_BENCH(iron_rope_neox, t32768_h32_d128, {bf16, 1e-2}) { return rope_bench(dt, RopeStyle::NeoX, RopeAngles::Table, 32768); }
IRON_BENCH(iron_rope_gptj, t4096_h32_d128, {bf16, 1e-2}) { return rope_bench(dt, RopeStyle::GptJ, RopeAngles::Table, 4096); }
// The angles computed on the fly carry an f32 error that grows with the position (the
// derivation above: (|a| + |b|) (19 + 184 pmax) u absolutely, 0.36 of the floor at pmax = 4095
// with |x| <= 4, plus bf16's rounding), so this check only catches gross errors; at 32768 tokens
// the bound exceeds the outputs themselves and no check would mean anything: not benched there.
IRON_BENCH(iron_rope_neox_theta, t4096_h32_d128, {bf16, 0.37}) { return rope_bench(dt, RopeStyle::NeoX, RopeAngles::Theta, 4096); }

}  // namespace iron::kernels
