// Iron kernel iron_rope (f16), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#pragma clang fp contract(off)
int iron_find_msb(uint x) { return 31 - int(clz(x)); }
uint iron_f32_to_f16(float x) {
  uint u = as_type<uint>(x);
  uint sgn = (u >> 16) & 0x8000u;
  uint a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sgn | 0x7e00u;
  if (a >= 0x477ff000u) return sgn | 0x7c00u;
  if (a >= 0x38800000u) {
    uint r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return sgn | (r >> 13);
  }
  if (a < 0x33000000u) return sgn;
  uint shift = 126u - (a >> 23);
  uint m = (a & 0x7fffffu) | 0x800000u;
  uint h = m >> shift;
  uint rest = m & ((1u << shift) - 1u);
  uint half_unit = 1u << (shift - 1u);
  if (rest > half_unit || (rest == half_unit && (h & 1u) != 0u)) h += 1u;
  return sgn | h;
}
float iron_f16_to_f32(uint h) {
  uint sgn = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu;
  uint m = h & 0x3ffu;
  if (e == 0x1fu) return as_type<float>(sgn | 0x7f800000u | (m << 13));
  if (e != 0u) return as_type<float>(sgn | ((e + 112u) << 23) | (m << 13));
  if (m == 0u) return as_type<float>(sgn);
  int top = iron_find_msb(m);
  return as_type<float>(sgn | (uint(top + 103) << 23) | ((m << uint(23 - top)) & 0x7fffffu));
}
kernel void iron_rope_f16(
    constant uint& p_tokens [[buffer(4)]],
    constant uint& p_heads [[buffer(5)]],
    constant uint& p_half [[buffer(6)]],
    device const half* p_x [[buffer(0)]],
    device const float* p_cos [[buffer(1)]],
    device const float* p_sin [[buffer(2)]],
    device half* p_out [[buffer(3)]],
    uint3 iron_thread_id [[thread_position_in_grid]]) {
  const uint v1 = p_heads;
  const uint v2 = p_half;
  const uint v3 = iron_thread_id.x;
  const uint v4 = iron_thread_id.y;
  const uint v5 = iron_thread_id.z;
  if ((((v3 < v2) && (v4 < v1)) && (v5 < p_tokens))) {
    const uint v17 = ((((v5 * v1) + v4) * (v2 * 2u)) + v3);
    const uint v18 = (v17 + v2);
    const uint v20 = ((v5 * v2) + v3);
    const float v21 = p_cos[v20];
    const float v22 = p_sin[v20];
    const float v23 = iron_f16_to_f32(uint(as_type<ushort>(p_x[v17])));
    const float v25 = iron_f16_to_f32(uint(as_type<ushort>(p_x[v18])));
    const float v24 = v23;
    const float v26 = v25;
    p_out[v17] = as_type<half>(ushort(iron_f32_to_f16(((v24 * v21) - (v26 * v22)))));
    const float v34 = fma(v26, v21, (v24 * v22));
    p_out[v18] = as_type<half>(ushort(iron_f32_to_f16(v34)));
  }
}
