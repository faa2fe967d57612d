// Iron kernel iron_transpose (f32), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#pragma clang fp contract(off)
float iron_fmax(float a, float b) {
  if ((as_type<uint>(a) & 0x7fffffffu) > 0x7f800000u) return b;
  if ((as_type<uint>(b) & 0x7fffffffu) > 0x7f800000u) return a;
  if (a == b) return as_type<float>(as_type<uint>(a) & as_type<uint>(b));
  return a > b ? a : b;
}
kernel void iron_transpose_f32(
    constant uint& p_rows [[buffer(2)]],
    constant uint& p_cols [[buffer(3)]],
    device const float* p_x [[buffer(0)]],
    device float* p_out [[buffer(1)]],
    threadgroup uchar* iron_tg [[threadgroup(0)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_local_id [[thread_position_in_threadgroup]],
    uint3 iron_group_size [[threads_per_threadgroup]]) {
  threadgroup float* const tg_tile = reinterpret_cast<threadgroup float*>(iron_tg + 0u);
  const uint v0 = p_rows;
  const uint v1 = p_cols;
  const uint v4 = 32u;
  const uint v5 = (iron_group_id.y * v4);
  const uint v8 = (iron_group_id.x * v4);
  const uint v11 = min((v5 + v4), v0);
  const uint v14 = min((v8 + v4), v1);
  const uint v15 = iron_local_id.x;
  const uint v16 = iron_local_id.y;
  const uint v17 = iron_group_size.x;
  const uint v18 = iron_group_size.y;
  const uint v19 = (v5 + v16);
  const uint v22 = (v8 + v15);
  const uint v29 = 31u;
  for (uint v20 = v19; v20 < v11; v20 += v18) {
    const uint v21 = (v20 - v5);
    const uint v24 = (v20 * v1);
    const uint v34 = ((v21 & v29) * v4);
    for (uint v23 = v22; v23 < v14; v23 += v17) {
      const float v26 = p_x[(v24 + v23)];
      tg_tile[(v34 + (((v23 - v8) ^ v21) & v29))] = v26;
    }
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const uint v38 = (v8 + v16);
  const uint v41 = (v5 + v15);
  const uint v45 = 31u;
  for (uint v39 = v38; v39 < v14; v39 += v18) {
    const uint v40 = (v39 - v8);
    const uint v53 = (v39 * v0);
    for (uint v42 = v41; v42 < v11; v42 += v17) {
      const uint v43 = (v42 - v5);
      const float v52 = tg_tile[(((v43 & v45) * v4) + ((v40 ^ v43) & v45))];
      p_out[(v53 + v42)] = v52;
    }
  }
}
