// Iron kernel iron_tg_histogram (f32), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#pragma clang fp contract(off)
float iron_fmax(float a, float b) {
  if ((as_type<uint>(a) & 0x7fffffffu) > 0x7f800000u) return b;
  if ((as_type<uint>(b) & 0x7fffffffu) > 0x7f800000u) return a;
  if (a == b) return as_type<float>(as_type<uint>(a) & as_type<uint>(b));
  return a > b ? a : b;
}
kernel void iron_tg_histogram(
    constant uint& p_rows [[buffer(2)]],
    constant uint& p_d [[buffer(3)]],
    device const uint* p_x [[buffer(0)]],
    device uint* p_hist [[buffer(1)]],
    threadgroup uchar* iron_tg [[threadgroup(0)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_local_id [[thread_position_in_threadgroup]],
    uint3 iron_group_size [[threads_per_threadgroup]]) {
  threadgroup uint* const tg_counts = reinterpret_cast<threadgroup uint*>(iron_tg + 0u);
  const uint v1 = p_d;
  const uint v3 = iron_local_id.x;
  tg_counts[v3] = 0u;
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const uint v7 = iron_group_id.x;
  const uint v8 = (v7 * v1);
  const uint v9 = iron_group_size.x;
  const uint v13 = 63u;
  const uint v15 = 1u;
  for (uint v10 = v3; v10 < v1; v10 += v9) {
    const uint v12 = p_x[(v8 + v10)];
    threadgroup atomic_uint* v16_at = reinterpret_cast<threadgroup atomic_uint*>(&tg_counts[(v12 & v13)]);
    const uint v16 = atomic_fetch_add_explicit(v16_at, v15, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const uint v18 = tg_counts[v3];
  p_hist[((v7 * 64u) + v3)] = v18;
}
