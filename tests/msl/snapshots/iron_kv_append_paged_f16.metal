// Iron kernel iron_kv_append_paged (f16), MSL. Generated: do not edit.
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
kernel void iron_kv_append_paged_f16(
    constant uint& p_tokens [[buffer(7)]],
    constant uint& p_seqs [[buffer(8)]],
    constant uint& p_blocks_per_seq [[buffer(9)]],
    constant uint& p_num_blocks [[buffer(10)]],
    constant uint& p_block_size [[buffer(11)]],
    constant uint& p_kv_heads [[buffer(12)]],
    constant uint& p_head_dim [[buffer(13)]],
    device const half* p_k [[buffer(0)]],
    device const half* p_v [[buffer(1)]],
    device const uint* p_positions [[buffer(2)]],
    device const uint* p_seq_ids [[buffer(3)]],
    device const uint* p_block_table [[buffer(4)]],
    device half* p_k_cache [[buffer(5)]],
    device half* p_v_cache [[buffer(6)]],
    uint3 iron_thread_id [[thread_position_in_grid]]) {
  const uint v1 = p_seqs;
  const uint v2 = p_blocks_per_seq;
  const uint v3 = p_num_blocks;
  const uint v4 = p_block_size;
  const uint v7 = (p_kv_heads * p_head_dim);
  const uint v8 = iron_thread_id.x;
  const uint v9 = (p_tokens * v7);
  const uint v10 = 8u;
  const uint v12 = 0u;
  if ((iron_rem_u32(v7, v10) == v12)) {
    if ((v8 < iron_div_u32(v9, v10))) {
      const uint v16 = iron_div_u32(v7, v10);
      const uint v21 = iron_div_u32(v8, v16);
      const uint v22 = p_positions[v21];
      const uint v23 = p_seq_ids[v21];
      const uint v24 = iron_div_u32(v22, v4);
      const bool v27 = ((v23 < v1) && (v24 < v2));
      const uint v32 = p_block_table[(v27 ? ((v23 * v2) + v24) : v12)];
      if ((v27 && (v32 < v3))) {
        const uint v39 = (v8 * v10);
        const uint v52 = 1u;
        const uint v53 = (v39 + v52);
        const uint v58 = 2u;
        const uint v59 = (v39 + v58);
        const uint v64 = 3u;
        const uint v65 = (v39 + v64);
        const uint v70 = 4u;
        const uint v71 = (v39 + v70);
        const uint v76 = 5u;
        const uint v77 = (v39 + v76);
        const uint v82 = 6u;
        const uint v83 = (v39 + v82);
        const uint v88 = 7u;
        const uint v89 = (v39 + v88);
        float v50_lanes[8];
        { const uint4 t = *reinterpret_cast<device const uint4*>(p_k + v39 + 0u); v50_lanes[0] = iron_f16_to_f32(t.x & 0xffffu); v50_lanes[1] = iron_f16_to_f32(t.x >> 16); v50_lanes[2] = iron_f16_to_f32(t.y & 0xffffu); v50_lanes[3] = iron_f16_to_f32(t.y >> 16); v50_lanes[4] = iron_f16_to_f32(t.z & 0xffffu); v50_lanes[5] = iron_f16_to_f32(t.z >> 16); v50_lanes[6] = iron_f16_to_f32(t.w & 0xffffu); v50_lanes[7] = iron_f16_to_f32(t.w >> 16); }
        const float v50 = v50_lanes[0];
        const float v56 = v50_lanes[1];
        const float v62 = v50_lanes[2];
        const float v68 = v50_lanes[3];
        const float v74 = v50_lanes[4];
        const float v80 = v50_lanes[5];
        const float v86 = v50_lanes[6];
        const float v92 = v50_lanes[7];
        const uint v44 = (((((v32 * v4) + iron_rem_u32(v22, v4)) * v16) + iron_rem_u32(v8, v16)) * v10);
        const uint v55 = (v44 + v52);
        const uint v61 = (v44 + v58);
        const uint v67 = (v44 + v64);
        const uint v73 = (v44 + v70);
        const uint v79 = (v44 + v76);
        const uint v85 = (v44 + v82);
        float v98_lanes[8];
        { const uint4 t = *reinterpret_cast<device const uint4*>(p_v + v39 + 0u); v98_lanes[0] = iron_f16_to_f32(t.x & 0xffffu); v98_lanes[1] = iron_f16_to_f32(t.x >> 16); v98_lanes[2] = iron_f16_to_f32(t.y & 0xffffu); v98_lanes[3] = iron_f16_to_f32(t.y >> 16); v98_lanes[4] = iron_f16_to_f32(t.z & 0xffffu); v98_lanes[5] = iron_f16_to_f32(t.z >> 16); v98_lanes[6] = iron_f16_to_f32(t.w & 0xffffu); v98_lanes[7] = iron_f16_to_f32(t.w >> 16); }
        const float v98 = v98_lanes[0];
        const float v104 = v98_lanes[1];
        const float v110 = v98_lanes[2];
        const float v116 = v98_lanes[3];
        const float v122 = v98_lanes[4];
        const float v128 = v98_lanes[5];
        const float v134 = v98_lanes[6];
        const float v140 = v98_lanes[7];
        const uint v91 = (v44 + v88);
        *reinterpret_cast<device uint4*>(p_k_cache + v44 + 0u) = uint4(((iron_f32_to_f16(v50) & 0xffffu) | (iron_f32_to_f16(v56) << 16)), ((iron_f32_to_f16(v62) & 0xffffu) | (iron_f32_to_f16(v68) << 16)), ((iron_f32_to_f16(v74) & 0xffffu) | (iron_f32_to_f16(v80) << 16)), ((iron_f32_to_f16(v86) & 0xffffu) | (iron_f32_to_f16(v92) << 16)));
        *reinterpret_cast<device uint4*>(p_v_cache + v44 + 0u) = uint4(((iron_f32_to_f16(v98) & 0xffffu) | (iron_f32_to_f16(v104) << 16)), ((iron_f32_to_f16(v110) & 0xffffu) | (iron_f32_to_f16(v116) << 16)), ((iron_f32_to_f16(v122) & 0xffffu) | (iron_f32_to_f16(v128) << 16)), ((iron_f32_to_f16(v134) & 0xffffu) | (iron_f32_to_f16(v140) << 16)));
      }
    }
  } else {
    const uint v143 = (v8 * v10);
    if ((v143 < v9)) {
      const uint v148 = iron_div_u32(v143, v7);
      const uint v149 = p_positions[v148];
      const uint v150 = p_seq_ids[v148];
      const uint v151 = iron_div_u32(v149, v4);
      const bool v154 = ((v150 < v1) && (v151 < v2));
      const uint v159 = p_block_table[(v154 ? ((v150 * v2) + v151) : v12)];
      if ((v154 && (v159 < v3))) {
        const float v169 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v143])));
        const float v171 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v143])));
        const uint v167 = ((((v159 * v4) + iron_rem_u32(v149, v4)) * v7) + iron_rem_u32(v143, v7));
        p_k_cache[v167] = as_type<half>(ushort(iron_f32_to_f16(v169)));
        p_v_cache[v167] = as_type<half>(ushort(iron_f32_to_f16(v171)));
      }
    }
    const uint v176 = (v143 + 1u);
    if ((v176 < v9)) {
      const uint v179 = iron_div_u32(v176, v7);
      const uint v180 = p_positions[v179];
      const uint v181 = p_seq_ids[v179];
      const uint v182 = iron_div_u32(v180, v4);
      const bool v185 = ((v181 < v1) && (v182 < v2));
      const uint v190 = p_block_table[(v185 ? ((v181 * v2) + v182) : v12)];
      if ((v185 && (v190 < v3))) {
        const float v200 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v176])));
        const float v202 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v176])));
        const uint v198 = ((((v190 * v4) + iron_rem_u32(v180, v4)) * v7) + iron_rem_u32(v176, v7));
        p_k_cache[v198] = as_type<half>(ushort(iron_f32_to_f16(v200)));
        p_v_cache[v198] = as_type<half>(ushort(iron_f32_to_f16(v202)));
      }
    }
    const uint v207 = (v143 + 2u);
    if ((v207 < v9)) {
      const uint v210 = iron_div_u32(v207, v7);
      const uint v211 = p_positions[v210];
      const uint v212 = p_seq_ids[v210];
      const uint v213 = iron_div_u32(v211, v4);
      const bool v216 = ((v212 < v1) && (v213 < v2));
      const uint v221 = p_block_table[(v216 ? ((v212 * v2) + v213) : v12)];
      if ((v216 && (v221 < v3))) {
        const float v231 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v207])));
        const float v233 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v207])));
        const uint v229 = ((((v221 * v4) + iron_rem_u32(v211, v4)) * v7) + iron_rem_u32(v207, v7));
        p_k_cache[v229] = as_type<half>(ushort(iron_f32_to_f16(v231)));
        p_v_cache[v229] = as_type<half>(ushort(iron_f32_to_f16(v233)));
      }
    }
    const uint v238 = (v143 + 3u);
    if ((v238 < v9)) {
      const uint v241 = iron_div_u32(v238, v7);
      const uint v242 = p_positions[v241];
      const uint v243 = p_seq_ids[v241];
      const uint v244 = iron_div_u32(v242, v4);
      const bool v247 = ((v243 < v1) && (v244 < v2));
      const uint v252 = p_block_table[(v247 ? ((v243 * v2) + v244) : v12)];
      if ((v247 && (v252 < v3))) {
        const float v262 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v238])));
        const float v264 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v238])));
        const uint v260 = ((((v252 * v4) + iron_rem_u32(v242, v4)) * v7) + iron_rem_u32(v238, v7));
        p_k_cache[v260] = as_type<half>(ushort(iron_f32_to_f16(v262)));
        p_v_cache[v260] = as_type<half>(ushort(iron_f32_to_f16(v264)));
      }
    }
    const uint v269 = (v143 + 4u);
    if ((v269 < v9)) {
      const uint v272 = iron_div_u32(v269, v7);
      const uint v273 = p_positions[v272];
      const uint v274 = p_seq_ids[v272];
      const uint v275 = iron_div_u32(v273, v4);
      const bool v278 = ((v274 < v1) && (v275 < v2));
      const uint v283 = p_block_table[(v278 ? ((v274 * v2) + v275) : v12)];
      if ((v278 && (v283 < v3))) {
        const float v293 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v269])));
        const float v295 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v269])));
        const uint v291 = ((((v283 * v4) + iron_rem_u32(v273, v4)) * v7) + iron_rem_u32(v269, v7));
        p_k_cache[v291] = as_type<half>(ushort(iron_f32_to_f16(v293)));
        p_v_cache[v291] = as_type<half>(ushort(iron_f32_to_f16(v295)));
      }
    }
    const uint v300 = (v143 + 5u);
    if ((v300 < v9)) {
      const uint v303 = iron_div_u32(v300, v7);
      const uint v304 = p_positions[v303];
      const uint v305 = p_seq_ids[v303];
      const uint v306 = iron_div_u32(v304, v4);
      const bool v309 = ((v305 < v1) && (v306 < v2));
      const uint v314 = p_block_table[(v309 ? ((v305 * v2) + v306) : v12)];
      if ((v309 && (v314 < v3))) {
        const float v324 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v300])));
        const float v326 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v300])));
        const uint v322 = ((((v314 * v4) + iron_rem_u32(v304, v4)) * v7) + iron_rem_u32(v300, v7));
        p_k_cache[v322] = as_type<half>(ushort(iron_f32_to_f16(v324)));
        p_v_cache[v322] = as_type<half>(ushort(iron_f32_to_f16(v326)));
      }
    }
    const uint v331 = (v143 + 6u);
    if ((v331 < v9)) {
      const uint v334 = iron_div_u32(v331, v7);
      const uint v335 = p_positions[v334];
      const uint v336 = p_seq_ids[v334];
      const uint v337 = iron_div_u32(v335, v4);
      const bool v340 = ((v336 < v1) && (v337 < v2));
      const uint v345 = p_block_table[(v340 ? ((v336 * v2) + v337) : v12)];
      if ((v340 && (v345 < v3))) {
        const float v355 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v331])));
        const float v357 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v331])));
        const uint v353 = ((((v345 * v4) + iron_rem_u32(v335, v4)) * v7) + iron_rem_u32(v331, v7));
        p_k_cache[v353] = as_type<half>(ushort(iron_f32_to_f16(v355)));
        p_v_cache[v353] = as_type<half>(ushort(iron_f32_to_f16(v357)));
      }
    }
    const uint v362 = (v143 + 7u);
    if ((v362 < v9)) {
      const uint v365 = iron_div_u32(v362, v7);
      const uint v366 = p_positions[v365];
      const uint v367 = p_seq_ids[v365];
      const uint v368 = iron_div_u32(v366, v4);
      const bool v371 = ((v367 < v1) && (v368 < v2));
      const uint v376 = p_block_table[(v371 ? ((v367 * v2) + v368) : v12)];
      if ((v371 && (v376 < v3))) {
        const float v386 = iron_f16_to_f32(uint(as_type<ushort>(p_k[v362])));
        const float v388 = iron_f16_to_f32(uint(as_type<ushort>(p_v[v362])));
        const uint v384 = ((((v376 * v4) + iron_rem_u32(v366, v4)) * v7) + iron_rem_u32(v362, v7));
        p_k_cache[v384] = as_type<half>(ushort(iron_f32_to_f16(v386)));
        p_v_cache[v384] = as_type<half>(ushort(iron_f32_to_f16(v388)));
      }
    }
  }
}
