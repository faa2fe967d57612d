// Iron kernel iron_group_scan (f32), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#pragma clang fp contract(off)
float iron_fmax(float a, float b) {
  if ((as_type<uint>(a) & 0x7fffffffu) > 0x7f800000u) return b;
  if ((as_type<uint>(b) & 0x7fffffffu) > 0x7f800000u) return a;
  if (a == b) return as_type<float>(as_type<uint>(a) & as_type<uint>(b));
  return a > b ? a : b;
}
float iron_lane_inclusive_sum(float v, uint l, uint w) {
  for (uint o = 1u; o < w; o <<= 1) {
    const float t = simd_shuffle(v, ushort(l >= o ? l - o : l));
    if (l >= o) v = t + v;
  }
  return v;
}
float iron_lane_exclusive_sum(float v, uint l, uint w) {
  const float t = simd_shuffle(iron_lane_inclusive_sum(v, l, w), ushort(l > 0u ? l - 1u : 0u));
  return l > 0u ? t : 0.0f;
}
kernel void iron_group_scan(
    constant uint& p_rows [[buffer(4)]],
    constant uint& p_d [[buffer(5)]],
    device const float* p_x [[buffer(0)]],
    device float* p_inc [[buffer(1)]],
    device float* p_exc [[buffer(2)]],
    device float* p_total [[buffer(3)]],
    threadgroup uchar* iron_tg [[threadgroup(0)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_local_id [[thread_position_in_threadgroup]],
    uint3 iron_group_size [[threads_per_threadgroup]],
    uint iron_lane [[thread_index_in_simdgroup]],
    uint iron_lane_width [[threads_per_simdgroup]],
    uint iron_simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup float* const tg_iron_group_escan_1 = reinterpret_cast<threadgroup float*>(iron_tg + 0u);
  threadgroup float* const tg_iron_group_iscan_0 = reinterpret_cast<threadgroup float*>(iron_tg + 1024u);
  const uint v1 = p_d;
  const uint v2 = iron_local_id.x;
  const uint v3 = iron_group_id.x;
  const uint v5 = ((v3 * v1) + v2);
  const float v6 = 0.0f;
  float v7 = v6;
  const bool v8 = (v2 < v1);
  if (v8) {
    const float v10 = p_x[v5];
    v7 = v10;
  }
  const float v12 = v7;
  const float v14 = iron_lane_inclusive_sum(v12, iron_lane, iron_lane_width);
  const uint v15 = iron_simd_group;
  const uint v16 = iron_lane_width;
  const uint v17 = 1u;
  const uint v18 = (v16 - v17);
  const uint v19 = iron_lane;
  const bool v20 = (v19 == v18);
  if (v20) {
    tg_iron_group_iscan_0[v15] = v14;
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  float v25 = v6;
  const uint v26 = 0u;
  const uint v29 = 255u;
  for (uint v28 = v26; v28 < v15; v28 += v17) {
    const float v31 = tg_iron_group_iscan_0[min(v28, v29)];
    const float v32 = v25;
    v25 = (v32 + v31);
  }
  const float v35 = v25;
  const float v36 = (v35 + v14);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const float v38 = v7;
  const float v40 = iron_lane_inclusive_sum(v38, iron_lane, iron_lane_width);
  const float v41 = iron_lane_exclusive_sum(v38, iron_lane, iron_lane_width);
  const uint v42 = iron_simd_group;
  const uint v43 = iron_lane_width;
  const uint v46 = iron_lane;
  if (v20) {
    tg_iron_group_escan_1[v15] = v40;
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  float v52 = v6;
  const uint v56 = 255u;
  for (uint v55 = v26; v55 < v15; v55 += v17) {
    const float v58 = tg_iron_group_escan_1[min(v55, v56)];
    const float v59 = v52;
    v52 = (v59 + v58);
  }
  const float v62 = v52;
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  if (v8) {
    p_inc[v5] = v36;
    p_exc[v5] = (v62 + v41);
  }
  if ((v2 == (iron_group_size.x - v17))) {
    p_total[v3] = v36;
  }
}
