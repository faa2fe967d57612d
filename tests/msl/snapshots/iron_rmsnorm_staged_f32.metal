// Iron kernel iron_rmsnorm_staged (f32), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#pragma clang fp contract(off)
int iron_find_msb(uint x) { return 31 - int(clz(x)); }
float iron_div_estimate(float x, float y) { return precise::divide(x, y); }
float iron_div_f32(float a, float b) {
  uint ua = as_type<uint>(a);
  uint ub = as_type<uint>(b);
  uint sgn = (ua ^ ub) & 0x80000000u;
  uint xa = ua & 0x7fffffffu;
  uint xb = ub & 0x7fffffffu;
  uint nan_bits = 0x7fc00000u;
  if (xa > 0x7f800000u || xb > 0x7f800000u) return as_type<float>(nan_bits);
  if (xa == 0x7f800000u) return as_type<float>(xb == 0x7f800000u ? nan_bits : (sgn | 0x7f800000u));
  if (xb == 0x7f800000u) return as_type<float>(sgn);
  if (xb == 0u) return as_type<float>(xa == 0u ? nan_bits : (sgn | 0x7f800000u));
  if (xa == 0u) return as_type<float>(sgn);
  int ea = int(xa >> 23);
  int eb = int(xb >> 23);
  uint ma = xa & 0x7fffffu;
  uint mb = xb & 0x7fffffu;
  if (ea == 0) {
    int s = 23 - iron_find_msb(ma);
    ma <<= uint(s);
    ea = 1 - s;
  }
  else {
    ma |= 0x800000u;
  }
  if (eb == 0) {
    int s = 23 - iron_find_msb(mb);
    mb <<= uint(s);
    eb = 1 - s;
  }
  else {
    mb |= 0x800000u;
  }
  int p = ma < mb ? 24 : 23;
  int be = ea - eb - p + 150;
  if (be >= 255) return as_type<float>(sgn | 0x7f800000u);
  int d = be >= 1 ? 0 : 1 - be;
  if (d > 25) return as_type<float>(sgn);
  int q = p - d;
  int up_shift = q > 0 ? q : 0;
  uint den = mb << uint(q < 0 ? -q : 0);
  float scale = as_type<float>(uint(up_shift + 127) << 23);
  uint k = uint(iron_div_estimate(float(ma), float(den)) * scale);
  int r = int((ma << uint(up_shift)) - den * k);
  if (r < 0) {
    uint steps = (uint(-r) + den - 1u) / den;
    k -= steps;
    r += int(steps * den);
  }
  else if (uint(r) >= den) {
    uint steps = uint(r) / den;
    k += steps;
    r -= int(steps * den);
  }
  uint twice = 2u * uint(r);
  if (twice > den || (twice == den && (k & 1u) != 0u)) k += 1u;
  uint field = uint(be >= 1 ? be - 1 : 0);
  return as_type<float>(sgn | ((field << 23) + k));
}
float iron_fmax(float a, float b) {
  if ((as_type<uint>(a) & 0x7fffffffu) > 0x7f800000u) return b;
  if ((as_type<uint>(b) & 0x7fffffffu) > 0x7f800000u) return a;
  if (a == b) return as_type<float>(as_type<uint>(a) & as_type<uint>(b));
  return a > b ? a : b;
}
float iron_lane_sum(float v, uint w) {
  for (uint o = w >> 1; o > 0u; o >>= 1) v = v + simd_shuffle_xor(v, ushort(o));
  return v;
}
kernel void iron_rmsnorm_staged_f32(
    constant uint& p_rows [[buffer(3)]],
    constant uint& p_d [[buffer(4)]],
    constant float& p_eps [[buffer(5)]],
    device const float* p_x [[buffer(0)]],
    device const float* p_w [[buffer(1)]],
    device float* p_out [[buffer(2)]],
    threadgroup uchar* iron_tg [[threadgroup(0)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_local_id [[thread_position_in_threadgroup]],
    uint3 iron_group_size [[threads_per_threadgroup]],
    uint iron_lane [[thread_index_in_simdgroup]],
    uint iron_lane_width [[threads_per_simdgroup]],
    uint iron_simd_group [[simdgroup_index_in_threadgroup]],
    uint iron_num_simd_groups [[simdgroups_per_threadgroup]]) {
  threadgroup float* const tg_iron_group_sum_0 = reinterpret_cast<threadgroup float*>(iron_tg + 0u);
  threadgroup float* const tg_row = reinterpret_cast<threadgroup float*>(iron_tg + 1024u);
  uint iron_tg_at = 1024u;
  iron_tg_at += 4u * uint(p_d);
  const uint v1 = p_d;
  const uint v5 = (iron_group_id.x * v1);
  const float v6 = 0.0f;
  float v7 = v6;
  const uint v8 = iron_group_size.x;
  const uint v9 = iron_local_id.x;
  for (uint v10 = v9; v10 < v1; v10 += v8) {
    const float v12 = p_x[(v5 + v10)];
    tg_row[v10] = v12;
    const float v14 = tg_row[v10];
    const float v15 = v14;
    const float v17 = v7;
    const float v18 = fma(v15, v15, v17);
    v7 = v18;
  }
  const float v21 = v7;
  const float v22 = iron_lane_sum(v21, iron_lane_width);
  const uint v24 = iron_lane;
  const uint v25 = iron_simd_group;
  const uint v26 = iron_num_simd_groups;
  const uint v27 = iron_lane_width;
  if ((v24 == 0u)) {
    tg_iron_group_sum_0[v25] = v22;
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  float v34 = v6;
  for (uint v35 = v24; v35 < v26; v35 += v27) {
    const float v36 = tg_iron_group_sum_0[v35];
    const float v37 = v34;
    v34 = (v37 + v36);
  }
  const float v40 = v34;
  const float v41 = iron_lane_sum(v40, iron_lane_width);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const float v45 = precise::rsqrt((iron_div_f32(v41, float(v1)) + p_eps));
  for (uint v48 = v9; v48 < v1; v48 += v8) {
    const float v49 = p_w[v48];
    const float v51 = tg_row[v48];
    p_out[(v5 + v48)] = ((v51 * v45) * v49);
  }
}
