// Iron kernel iron_gelu_erf (bf16), MSL. Generated: do not edit.
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
uint iron_div_u32(uint a, uint b) {
  if (b == 0u) return a;
  return a / b;
}
float iron_erf_poly11(float t, thread const uint* c) {
  float r = as_type<float>(c[10]);
  r = r * t + as_type<float>(c[9]);
  r = r * t + as_type<float>(c[8]);
  r = r * t + as_type<float>(c[7]);
  r = r * t + as_type<float>(c[6]);
  r = r * t + as_type<float>(c[5]);
  r = r * t + as_type<float>(c[4]);
  r = r * t + as_type<float>(c[3]);
  r = r * t + as_type<float>(c[2]);
  r = r * t + as_type<float>(c[1]);
  r = r * t + as_type<float>(c[0]);
  return r;
}
float iron_erf(float x) {
  uint u = as_type<uint>(x);
  uint sgn = u & 0x80000000u;
  float a = as_type<float>(u & 0x7fffffffu);
  uint au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return x;
  if (au < 0x3f000000u) {
    float s = x * x;
    float p = as_type<float>(0x38e2f825u);
    p = p * s + as_type<float>(0xba5effe9u);
    p = p * s + as_type<float>(0x3bab2803u);
    p = p * s + as_type<float>(0xbcdc1651u);
    p = p * s + as_type<float>(0x3de71790u);
    p = p * s + as_type<float>(0xbec093a3u);
    p = p * s + as_type<float>(0x3f906ebbu);
    float r = x * p;
    return r;
  }
  if (au >= 0x407c0000u) return as_type<float>(sgn | 0x3f800000u);
  uint c1[11] = {
    0x3de494b6u, 0xbea2f4cdu, 0x3eb75368u, 0xbe265a13u, 0xbce529a0u, 0x3d7b387au, 0xbc7e66d4u, 0xbc1e5644u, 0x3bc3d145u, 0x3a07849du, 0xba844013u}
  ;
  uint c2[11] = {
    0x3a4d3e18u, 0xbb8348cdu, 0x3c1be66du, 0xbc60f550u, 0x3c572c4bu, 0xbc08f7bbu, 0x3b4c2c87u, 0xb8e4a2d9u, 0xba1ddc3cu, 0x399e2395u, 0xb80d0200u}
  ;
  uint c3[11] = {
    0x357a160cu, 0xb6e14167u, 0x37c356b5u, 0xb8587983u, 0x38ab7257u, 0xb8cd6966u, 0x38bfc50eu, 0xb88d2503u, 0x3822fcdau, 0xb78d90a4u, 0x369372d9u}
  ;
  float e;
  if (au < 0x3fe00000u) e = iron_erf_poly11(a - as_type<float>(0x3f900000u), c1);
  else if (au < 0x40400000u) e = iron_erf_poly11(a - as_type<float>(0x40180000u), c2);
  else e = iron_erf_poly11(a - as_type<float>(0x405e0000u), c3);
  float r = as_type<float>(0x3f800000u) - e;
  return as_type<float>(sgn | as_type<uint>(r));
}
uint iron_rem_u32(uint a, uint b) {
  if (b == 0u) return 0u;
  return a % b;
}
kernel void iron_gelu_erf_bf16(
    constant uint& p_n [[buffer(2)]],
    device const bfloat* p_x [[buffer(0)]],
    device bfloat* p_out [[buffer(1)]],
    uint3 iron_thread_id [[thread_position_in_grid]]) {
  const uint v0 = p_n;
  const uint v1 = iron_thread_id.x;
  const uint v2 = 8u;
  const uint v3 = iron_div_u32(v0, v2);
  const uint v5 = (v1 * v2);
  if ((v1 < v3)) {
    const float v15 = 0.707106769f;
    const float v18 = 1.0f;
    const float v20 = 0.5f;
    const uint v45 = 0u;
    const uint v46 = (v5 + v45);
    const uint v56 = 1u;
    const uint v57 = (v5 + v56);
    const uint v67 = 2u;
    const uint v68 = (v5 + v67);
    const uint v78 = 3u;
    const uint v79 = (v5 + v78);
    const uint v89 = 4u;
    const uint v90 = (v5 + v89);
    const uint v100 = 5u;
    const uint v101 = (v5 + v100);
    const uint v111 = 6u;
    const uint v112 = (v5 + v111);
    const uint v122 = 7u;
    const uint v123 = (v5 + v122);
    float v47_lanes[8];
    { const uint4 t = *reinterpret_cast<device const uint4*>(p_x + v46 + 0u); v47_lanes[0] = as_type<float>(t.x << 16); v47_lanes[1] = as_type<float>(t.x & 0xffff0000u); v47_lanes[2] = as_type<float>(t.y << 16); v47_lanes[3] = as_type<float>(t.y & 0xffff0000u); v47_lanes[4] = as_type<float>(t.z << 16); v47_lanes[5] = as_type<float>(t.z & 0xffff0000u); v47_lanes[6] = as_type<float>(t.w << 16); v47_lanes[7] = as_type<float>(t.w & 0xffff0000u); }
    const float v47 = v47_lanes[0];
    const float v58 = v47_lanes[1];
    const float v69 = v47_lanes[2];
    const float v80 = v47_lanes[3];
    const float v91 = v47_lanes[4];
    const float v102 = v47_lanes[5];
    const float v113 = v47_lanes[6];
    const float v124 = v47_lanes[7];
    const float v48 = v47;
    const float v59 = v58;
    const float v70 = v69;
    const float v81 = v80;
    const float v92 = v91;
    const float v103 = v102;
    const float v114 = v113;
    const float v125 = v124;
    *reinterpret_cast<device uint4*>(p_out + v46 + 0u) = uint4((iron_f32_to_bf16(((v20 * v48) * (v18 + iron_erf((v48 * v15))))) | (iron_f32_to_bf16(((v20 * v59) * (v18 + iron_erf((v59 * v15))))) << 16)), (iron_f32_to_bf16(((v20 * v70) * (v18 + iron_erf((v70 * v15))))) | (iron_f32_to_bf16(((v20 * v81) * (v18 + iron_erf((v81 * v15))))) << 16)), (iron_f32_to_bf16(((v20 * v92) * (v18 + iron_erf((v92 * v15))))) | (iron_f32_to_bf16(((v20 * v103) * (v18 + iron_erf((v103 * v15))))) << 16)), (iron_f32_to_bf16(((v20 * v114) * (v18 + iron_erf((v114 * v15))))) | (iron_f32_to_bf16(((v20 * v125) * (v18 + iron_erf((v125 * v15))))) << 16)));
  } else {
    if ((v1 == v3)) {
      const uint v28 = iron_rem_u32(v0, v2);
      const uint v29 = 0u;
      const uint v30 = 1u;
      const float v35 = 0.707106769f;
      const float v38 = 1.0f;
      const float v40 = 0.5f;
      for (uint v31 = v29; v31 < v28; v31 += v30) {
        const uint v32 = (v5 + v31);
        const float v33 = iron_bf16_to_f32(uint(as_type<ushort>(p_x[v32])));
        const float v34 = v33;
        p_out[v32] = as_type<bfloat>(ushort(iron_f32_to_bf16(((v40 * v34) * (v38 + iron_erf((v34 * v35)))))));
      }
    }
  }
}
