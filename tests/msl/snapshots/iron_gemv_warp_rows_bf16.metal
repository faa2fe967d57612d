// Iron kernel iron_gemv_warp_rows (bf16), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#if __METAL_VERSION__ < 310
#error "bf16 buffers need MSL 3.1 (bfloat)"
#endif
#pragma clang fp contract(off)
float iron_bf16_to_f32(uint b) { return as_type<float>(b << 16); }
uint iron_f32_to_bf16(float f) {
  uint u = as_type<uint>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
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
kernel void iron_gemv_warp_rows_bf16(
    constant uint& p_m [[buffer(3)]],
    constant uint& p_k [[buffer(4)]],
    device const bfloat* p_a [[buffer(0)]],
    device const bfloat* p_x [[buffer(1)]],
    device bfloat* p_y [[buffer(2)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_num_groups [[threadgroups_per_grid]],
    uint iron_lane [[thread_index_in_simdgroup]],
    uint iron_lane_width [[threads_per_simdgroup]],
    uint iron_simd_group [[simdgroup_index_in_threadgroup]],
    uint iron_num_simd_groups [[simdgroups_per_threadgroup]]) {
  const uint v0 = p_m;
  const uint v1 = p_k;
  const uint v2 = iron_num_simd_groups;
  const uint v3 = iron_simd_group;
  const uint v6 = ((iron_group_id.x * v2) + v3);
  const uint v8 = (iron_num_groups.x * v2);
  const uint v9 = iron_lane;
  const float v12 = 0.0f;
  const bool v28 = (v9 == 0u);
  for (uint v10 = v6; v10 < v0; v10 += v8) {
    const uint v11 = (v10 * v1);
    float v13 = v12;
    const uint v14 = iron_lane_width;
    for (uint v15 = v9; v15 < v1; v15 += v14) {
      const float v16 = iron_bf16_to_f32(uint(as_type<ushort>(p_x[v15])));
      const float v19 = iron_bf16_to_f32(uint(as_type<ushort>(p_a[(v11 + v15)])));
      const float v22 = v13;
      const float v23 = fma(v19, v16, v22);
      v13 = v23;
    }
    const float v25 = v13;
    const float v26 = iron_lane_sum(v25, iron_lane_width);
    if (v28) {
      p_y[v10] = as_type<bfloat>(ushort(iron_f32_to_bf16(v26)));
    }
  }
}
