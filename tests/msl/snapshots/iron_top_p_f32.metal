// Iron kernel iron_top_p (f32), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#pragma clang fp contract(off)
float iron_fmax(float a, float b) {
  if ((as_type<uint>(a) & 0x7fffffffu) > 0x7f800000u) return b;
  if ((as_type<uint>(b) & 0x7fffffffu) > 0x7f800000u) return a;
  if (a == b) return as_type<float>(as_type<uint>(a) & as_type<uint>(b));
  return a > b ? a : b;
}
float iron_fmin(float a, float b) {
  if ((as_type<uint>(a) & 0x7fffffffu) > 0x7f800000u) return b;
  if ((as_type<uint>(b) & 0x7fffffffu) > 0x7f800000u) return a;
  if (a == b) return as_type<float>(as_type<uint>(a) | as_type<uint>(b));
  return a < b ? a : b;
}
ulong iron_shl_u64(ulong a, uint n) {
  if (n >= 64u) return ((ulong)(0));
  return ((ulong)(((ulong)(a)) << ((ulong)(n))));
}
float iron_lane_sum(float v, uint w) {
  for (uint o = w >> 1; o > 0u; o >>= 1) v = v + simd_shuffle_xor(v, ushort(o));
  return v;
}
kernel void iron_top_p_f32(
    constant uint& p_rows [[buffer(4)]],
    constant uint& p_vocab [[buffer(5)]],
    constant float& p_top_p [[buffer(6)]],
    device const float* p_logits [[buffer(0)]],
    device const float* p_u [[buffer(1)]],
    device uint* p_index [[buffer(2)]],
    device float* p_max_logit [[buffer(3)]],
    threadgroup uchar* iron_tg [[threadgroup(0)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_local_id [[thread_position_in_threadgroup]],
    uint3 iron_group_size [[threads_per_threadgroup]],
    uint iron_lane [[thread_index_in_simdgroup]],
    uint iron_lane_width [[threads_per_simdgroup]],
    uint iron_simd_group [[simdgroup_index_in_threadgroup]],
    uint iron_num_simd_groups [[simdgroups_per_threadgroup]]) {
  threadgroup float* const tg_iron_group_sum_3 = reinterpret_cast<threadgroup float*>(iron_tg + 0u);
  threadgroup float* const tg_iron_group_sum_2 = reinterpret_cast<threadgroup float*>(iron_tg + 1024u);
  threadgroup float* const tg_iron_group_sum_1 = reinterpret_cast<threadgroup float*>(iron_tg + 2048u);
  threadgroup float* const tg_iron_group_sum_0 = reinterpret_cast<threadgroup float*>(iron_tg + 3072u);
  threadgroup uint* const tg_top_key = reinterpret_cast<threadgroup uint*>(iron_tg + 4096u);
  const uint v1 = p_vocab;
  const uint v3 = iron_group_id.x;
  const uint v4 = 1u;
  const uint v6 = iron_local_id.x;
  const uint v8 = (v3 * v1);
  const float v10 = p_logits[(v8 + min(v6, (v1 - v4)))];
  const float v261 = p_u[v3];
  const float v11 = v10;
  const float v12 = 0.0f;
  const uint v16 = as_type<uint>(((v11 == v12) ? v12 : v11));
  const uint v17 = 2147483648u;
  const uint v24 = 4294967295u;
  uint v26 = ((v11 != v11) ? v24 : ((v16 >= v17) ? (~v16) : (v16 | v17)));
  const uint v28 = iron_group_size.x;
  for (uint v30 = v6; v30 < v1; v30 += v28) {
    const float v32 = p_logits[(v8 + v30)];
    const float v33 = v32;
    const uint v38 = as_type<uint>(((v33 == v12) ? v12 : v33));
    const uint v48 = v26;
    v26 = max(v48, ((v33 != v33) ? v24 : ((v38 >= v17) ? (~v38) : (v38 | v17))));
  }
  const uint v51 = v26;
  const uint v53 = simd_max(v51);
  const uint v54 = iron_lane;
  const uint v55 = 0u;
  const bool v56 = (v54 == v55);
  if (v56) {
    const uint v59 = iron_simd_group;
    tg_top_key[v59] = (~v53);
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const uint v63 = tg_top_key[v55];
  uint v64 = v63;
  const uint v65 = iron_lane_width;
  const uint v66 = iron_num_simd_groups;
  const uint v67 = iron_lane;
  for (uint v68 = v54; v68 < v66; v68 += v65) {
    const uint v69 = tg_top_key[v68];
    const uint v70 = v64;
    v64 = min(v70, v69);
  }
  const uint v73 = v64;
  const uint v75 = simd_max((~v73));
  const float v82 = as_type<float>(((v75 >= v17) ? (v75 ^ v17) : (~v75)));
  float v84 = v12;
  for (uint v88 = v6; v88 < v1; v88 += v28) {
    const float v90 = p_logits[(v8 + v88)];
    const float v94 = v84;
    v84 = (v94 + precise::exp((v90 - v82)));
  }
  const float v97 = v84;
  const float v98 = iron_lane_sum(v97, iron_lane_width);
  const uint v100 = iron_lane;
  const uint v101 = iron_simd_group;
  const uint v102 = iron_num_simd_groups;
  const uint v103 = iron_lane_width;
  if (v56) {
    tg_iron_group_sum_0[v101] = v98;
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  float v110 = v12;
  for (uint v111 = v54; v111 < v66; v111 += v65) {
    const float v112 = tg_iron_group_sum_0[v111];
    const float v113 = v110;
    v110 = (v113 + v112);
  }
  const float v116 = v110;
  const float v117 = iron_lane_sum(v116, iron_lane_width);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const float v119 = 1.0f;
  const float v123 = iron_fmax((iron_fmin(p_top_p, v119) * v117), v119);
  const ulong v124 = 0ul;
  ulong v125 = v124;
  const uint v127 = 64u;
  const ulong v130 = 1ul;
  const uint v131 = 63u;
  const ulong v167 = 32ul;
  for (uint v129 = v55; v129 < v127; v129 += v4) {
    const ulong v137 = v125;
    const ulong v138 = (v137 ^ iron_shl_u64(v130, (((ulong)(((ulong)(((v131 - v129) & v131))))) >= 64ul ? 64u : ((uint)(((ulong)(((v131 - v129) & v131))))))));
    float v140 = v12;
    for (uint v144 = v6; v144 < v1; v144 += v28) {
      const float v146 = p_logits[(v8 + v144)];
      const float v147 = v146;
      const uint v154 = as_type<uint>(((v147 == v12) ? v12 : v147));
      const float v173 = v140;
      v140 = (v173 + (((iron_shl_u64(((ulong)(((v147 != v147) ? v24 : ((v154 >= v17) ? (~v154) : (v154 | v17))))), (((ulong)(v167)) >= 64ul ? 64u : ((uint)(v167)))) | ((ulong)((~v144)))) >= v138) ? precise::exp((v147 - v82)) : v12));
    }
    const float v176 = v140;
    const float v177 = iron_lane_sum(v176, iron_lane_width);
    const uint v179 = iron_lane;
    const uint v180 = iron_simd_group;
    const uint v181 = iron_num_simd_groups;
    const uint v182 = iron_lane_width;
    if (v56) {
      tg_iron_group_sum_1[v101] = v177;
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    float v189 = v12;
    for (uint v190 = v54; v190 < v66; v190 += v65) {
      const float v191 = tg_iron_group_sum_1[v190];
      const float v192 = v189;
      v189 = (v192 + v191);
    }
    const float v195 = v189;
    const float v196 = iron_lane_sum(v195, iron_lane_width);
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    const ulong v359 = v125;
    v125 = ((v196 >= v123) ? v138 : v359);
  }
  const ulong v201 = v125;
  float v203 = v12;
  const ulong v230 = 32ul;
  for (uint v207 = v6; v207 < v1; v207 += v28) {
    const float v209 = p_logits[(v8 + v207)];
    const float v210 = v209;
    const uint v217 = as_type<uint>(((v210 == v12) ? v12 : v210));
    const float v236 = v203;
    v203 = (v236 + (((iron_shl_u64(((ulong)(((v210 != v210) ? v24 : ((v217 >= v17) ? (~v217) : (v217 | v17))))), (((ulong)(v230)) >= 64ul ? 64u : ((uint)(v230)))) | ((ulong)((~v207)))) >= v201) ? precise::exp((v210 - v82)) : v12));
  }
  const float v239 = v203;
  const float v240 = iron_lane_sum(v239, iron_lane_width);
  const uint v242 = iron_lane;
  const uint v243 = iron_simd_group;
  const uint v244 = iron_num_simd_groups;
  const uint v245 = iron_lane_width;
  if (v56) {
    tg_iron_group_sum_2[v101] = v240;
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  float v252 = v12;
  for (uint v253 = v54; v253 < v66; v253 += v65) {
    const float v254 = tg_iron_group_sum_2[v253];
    const float v255 = v252;
    v252 = (v255 + v254);
  }
  const float v258 = v252;
  const float v259 = iron_lane_sum(v258, iron_lane_width);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const float v262 = (v261 * v259);
  ulong v264 = v124;
  const ulong v269 = 1ul;
  const uint v270 = 63u;
  const ulong v306 = 32ul;
  for (uint v268 = v55; v268 < v127; v268 += v4) {
    const ulong v276 = v264;
    const ulong v277 = (v276 ^ iron_shl_u64(v269, (((ulong)(((ulong)(((v270 - v268) & v270))))) >= 64ul ? 64u : ((uint)(((ulong)(((v270 - v268) & v270))))))));
    float v279 = v12;
    for (uint v283 = v6; v283 < v1; v283 += v28) {
      const float v285 = p_logits[(v8 + v283)];
      const float v286 = v285;
      const uint v293 = as_type<uint>(((v286 == v12) ? v12 : v286));
      const float v312 = v279;
      v279 = (v312 + (((iron_shl_u64(((ulong)(((v286 != v286) ? v24 : ((v293 >= v17) ? (~v293) : (v293 | v17))))), (((ulong)(v306)) >= 64ul ? 64u : ((uint)(v306)))) | ((ulong)((~v283)))) >= v277) ? precise::exp((v286 - v82)) : v12));
    }
    const float v315 = v279;
    const float v316 = iron_lane_sum(v315, iron_lane_width);
    const uint v318 = iron_lane;
    const uint v319 = iron_simd_group;
    const uint v320 = iron_num_simd_groups;
    const uint v321 = iron_lane_width;
    if (v56) {
      tg_iron_group_sum_3[v101] = v316;
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    float v328 = v12;
    for (uint v329 = v54; v329 < v66; v329 += v65) {
      const float v330 = tg_iron_group_sum_3[v329];
      const float v331 = v328;
      v328 = (v331 + v330);
    }
    const float v334 = v328;
    const float v335 = iron_lane_sum(v334, iron_lane_width);
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    const ulong v362 = v264;
    v264 = ((v335 > v262) ? v277 : v362);
  }
  const ulong v340 = v264;
  if ((v6 == v55)) {
    p_index[v3] = (((4286578688u > v75) && (v75 > 8388607u)) ? (~((uint)(((v340 > v201 ? v340 : v201) & 4294967295ul)))) : v24);
    p_max_logit[v3] = v82;
  }
}
