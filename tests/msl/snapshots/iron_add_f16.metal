// Iron kernel iron_add (f16), MSL. Generated: do not edit.
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
uint iron_div_u32(uint a, uint b) {
  if (b == 0u) return a;
  return a / b;
}
uint iron_rem_u32(uint a, uint b) {
  if (b == 0u) return 0u;
  return a % b;
}
kernel void iron_add_f16(
    constant uint& p_n [[buffer(3)]],
    device const half* p_a [[buffer(0)]],
    device const half* p_b [[buffer(1)]],
    device half* p_out [[buffer(2)]],
    uint3 iron_thread_id [[thread_position_in_grid]]) {
  const uint v0 = p_n;
  const uint v1 = iron_thread_id.x;
  const uint v2 = 8u;
  const uint v3 = iron_div_u32(v0, v2);
  const uint v5 = (v1 * v2);
  if ((v1 < v3)) {
    const uint v29 = 0u;
    const uint v30 = (v5 + v29);
    const uint v35 = 1u;
    const uint v36 = (v5 + v35);
    const uint v41 = 2u;
    const uint v42 = (v5 + v41);
    const uint v47 = 3u;
    const uint v48 = (v5 + v47);
    const uint v53 = 4u;
    const uint v54 = (v5 + v53);
    const uint v59 = 5u;
    const uint v60 = (v5 + v59);
    const uint v65 = 6u;
    const uint v66 = (v5 + v65);
    const uint v71 = 7u;
    const uint v72 = (v5 + v71);
    float v31_lanes[8];
    { const uint4 t = *reinterpret_cast<device const uint4*>(p_b + v30 + 0u); v31_lanes[0] = iron_f16_to_f32(t.x & 0xffffu); v31_lanes[1] = iron_f16_to_f32(t.x >> 16); v31_lanes[2] = iron_f16_to_f32(t.y & 0xffffu); v31_lanes[3] = iron_f16_to_f32(t.y >> 16); v31_lanes[4] = iron_f16_to_f32(t.z & 0xffffu); v31_lanes[5] = iron_f16_to_f32(t.z >> 16); v31_lanes[6] = iron_f16_to_f32(t.w & 0xffffu); v31_lanes[7] = iron_f16_to_f32(t.w >> 16); }
    const float v31 = v31_lanes[0];
    const float v37 = v31_lanes[1];
    const float v43 = v31_lanes[2];
    const float v49 = v31_lanes[3];
    const float v55 = v31_lanes[4];
    const float v61 = v31_lanes[5];
    const float v67 = v31_lanes[6];
    const float v73 = v31_lanes[7];
    float v32_lanes[8];
    { const uint4 t = *reinterpret_cast<device const uint4*>(p_a + v30 + 0u); v32_lanes[0] = iron_f16_to_f32(t.x & 0xffffu); v32_lanes[1] = iron_f16_to_f32(t.x >> 16); v32_lanes[2] = iron_f16_to_f32(t.y & 0xffffu); v32_lanes[3] = iron_f16_to_f32(t.y >> 16); v32_lanes[4] = iron_f16_to_f32(t.z & 0xffffu); v32_lanes[5] = iron_f16_to_f32(t.z >> 16); v32_lanes[6] = iron_f16_to_f32(t.w & 0xffffu); v32_lanes[7] = iron_f16_to_f32(t.w >> 16); }
    const float v32 = v32_lanes[0];
    const float v38 = v32_lanes[1];
    const float v44 = v32_lanes[2];
    const float v50 = v32_lanes[3];
    const float v56 = v32_lanes[4];
    const float v62 = v32_lanes[5];
    const float v68 = v32_lanes[6];
    const float v74 = v32_lanes[7];
    *reinterpret_cast<device uint4*>(p_out + v30 + 0u) = uint4(((iron_f32_to_f16((v32 + v31)) & 0xffffu) | (iron_f32_to_f16((v38 + v37)) << 16)), ((iron_f32_to_f16((v44 + v43)) & 0xffffu) | (iron_f32_to_f16((v50 + v49)) << 16)), ((iron_f32_to_f16((v56 + v55)) & 0xffffu) | (iron_f32_to_f16((v62 + v61)) << 16)), ((iron_f32_to_f16((v68 + v67)) & 0xffffu) | (iron_f32_to_f16((v74 + v73)) << 16)));
  } else {
    if ((v1 == v3)) {
      const uint v20 = iron_rem_u32(v0, v2);
      const uint v21 = 0u;
      const uint v22 = 1u;
      for (uint v23 = v21; v23 < v20; v23 += v22) {
        const uint v24 = (v5 + v23);
        const float v25 = iron_f16_to_f32(uint(as_type<ushort>(p_b[v24])));
        const float v26 = iron_f16_to_f32(uint(as_type<ushort>(p_a[v24])));
        p_out[v24] = as_type<half>(ushort(iron_f32_to_f16((v26 + v25))));
      }
    }
  }
}
