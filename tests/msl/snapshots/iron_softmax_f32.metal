// Iron kernel iron_softmax (f32), MSL. Generated: do not edit.
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
float iron_lane_max(float v, uint w) {
  for (uint o = w >> 1; o > 0u; o >>= 1) v = iron_fmax(v, simd_shuffle_xor(v, ushort(o)));
  return v;
}
kernel void iron_softmax_f32(
    constant uint& p_rows [[buffer(2)]],
    constant uint& p_d [[buffer(3)]],
    device const float* p_x [[buffer(0)]],
    device float* p_out [[buffer(1)]],
    threadgroup uchar* iron_tg [[threadgroup(0)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_local_id [[thread_position_in_threadgroup]],
    uint3 iron_group_size [[threads_per_threadgroup]],
    uint iron_lane [[thread_index_in_simdgroup]],
    uint iron_lane_width [[threads_per_simdgroup]],
    uint iron_simd_group [[simdgroup_index_in_threadgroup]],
    uint iron_num_simd_groups [[simdgroups_per_threadgroup]]) {
  threadgroup float* const tg_iron_group_sum_1 = reinterpret_cast<threadgroup float*>(iron_tg + 0u);
  threadgroup float* const tg_iron_group_max_0 = reinterpret_cast<threadgroup float*>(iron_tg + 1024u);
  const uint v1 = p_d;
  const uint v3 = (iron_group_id.x * v1);
  const float v4 = as_type<float>(0xff800000u);
  float v5 = v4;
  const uint v6 = iron_group_size.x;
  const uint v7 = iron_local_id.x;
  for (uint v8 = v7; v8 < v1; v8 += v6) {
    const float v10 = p_x[(v3 + v8)];
    const float v12 = v5;
    v5 = iron_fmax(v12, v10);
  }
  const float v15 = v5;
  const float v16 = iron_lane_max(v15, iron_lane_width);
  const uint v18 = iron_lane;
  const uint v19 = iron_simd_group;
  const uint v20 = iron_num_simd_groups;
  const uint v21 = iron_lane_width;
  const uint v22 = 0u;
  const bool v23 = (v18 == v22);
  if (v23) {
    tg_iron_group_max_0[v19] = v16;
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  float v28 = v4;
  for (uint v29 = v18; v29 < v20; v29 += v21) {
    const float v30 = tg_iron_group_max_0[v29];
    const float v31 = v28;
    v28 = iron_fmax(v31, v30);
  }
  const float v34 = v28;
  const float v35 = iron_lane_max(v34, iron_lane_width);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const float v37 = 0.0f;
  float v38 = v37;
  for (uint v41 = v7; v41 < v1; v41 += v6) {
    const float v43 = p_x[(v3 + v41)];
    const float v47 = v38;
    v38 = (v47 + precise::exp((v43 - v35)));
  }
  const float v50 = v38;
  const float v51 = iron_lane_sum(v50, iron_lane_width);
  const uint v53 = iron_lane;
  const uint v54 = iron_simd_group;
  const uint v55 = iron_num_simd_groups;
  const uint v56 = iron_lane_width;
  if (v23) {
    tg_iron_group_sum_1[v19] = v51;
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  float v63 = v37;
  for (uint v64 = v18; v64 < v20; v64 += v21) {
    const float v65 = tg_iron_group_sum_1[v64];
    const float v66 = v63;
    v63 = (v66 + v65);
  }
  const float v69 = v63;
  const float v70 = iron_lane_sum(v69, iron_lane_width);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const float v73 = iron_div_f32(1.0f, v70);
  for (uint v76 = v7; v76 < v1; v76 += v6) {
    const uint v77 = (v3 + v76);
    const float v78 = p_x[v77];
    p_out[v77] = (precise::exp((v78 - v35)) * v73);
  }
}
