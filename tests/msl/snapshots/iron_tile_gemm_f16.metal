// Iron kernel iron_tile_gemm (f16), MSL. Generated: do not edit.
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
float iron_fmax(float a, float b) {
  if ((as_type<uint>(a) & 0x7fffffffu) > 0x7f800000u) return b;
  if ((as_type<uint>(b) & 0x7fffffffu) > 0x7f800000u) return a;
  if (a == b) return as_type<float>(as_type<uint>(a) & as_type<uint>(b));
  return a > b ? a : b;
}
uint iron_rem_u32(uint a, uint b) {
  if (b == 0u) return 0u;
  return a % b;
}
// Cooperative tiles: simdgroup_matrix 8x8 blocks
struct iron_tile_acc { simdgroup_float8x8 m[4]; };
iron_tile_acc iron_tile_fill(float v) {
  iron_tile_acc f;
  for (uint i = 0u; i < 4u; ++i) f.m[i] = make_filled_simdgroup_matrix<float, 8, 8>(v);
  return f;
}
void iron_tile_store_begin(iron_tile_acc f, threadgroup float* sc) {
  simdgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) simdgroup_store(f.m[2u * i + j], sc + i * 128u + j * 8u, 16);
  simdgroup_barrier(mem_flags::mem_threadgroup);
}
void iron_tile_store_end() {
  simdgroup_barrier(mem_flags::mem_threadgroup);
}
float iron_tile_get(iron_tile_acc f, threadgroup float* sc, uint r, uint c) {
  iron_tile_store_begin(f, sc);
  const float v = sc[r * 16u + c];
  simdgroup_barrier(mem_flags::mem_threadgroup);
  return v;
}
struct iron_tile_a_f16 { simdgroup_half8x8 m[4]; };
void iron_tile_stage(thread iron_tile_a_f16&, threadgroup float* sc, uint i, float v) {
  reinterpret_cast<threadgroup half*>(sc)[i] = as_type<half>(ushort(iron_f32_to_f16(v)));
}
void iron_tile_finish(thread iron_tile_a_f16& f, threadgroup float* sc) {
  simdgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup half* e = reinterpret_cast<threadgroup half*>(sc);
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) simdgroup_load(f.m[2u * i + j], e + i * 8u * 16u + j * 8u, 16);
  simdgroup_barrier(mem_flags::mem_threadgroup);
}
struct iron_tile_b_f16 { simdgroup_half8x8 m[4]; };
void iron_tile_stage(thread iron_tile_b_f16&, threadgroup float* sc, uint i, float v) {
  reinterpret_cast<threadgroup half*>(sc)[i] = as_type<half>(ushort(iron_f32_to_f16(v)));
}
void iron_tile_finish(thread iron_tile_b_f16& f, threadgroup float* sc) {
  simdgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup half* e = reinterpret_cast<threadgroup half*>(sc);
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) simdgroup_load(f.m[2u * i + j], e + i * 8u * 16u + j * 8u, 16);
  simdgroup_barrier(mem_flags::mem_threadgroup);
}
iron_tile_acc iron_tile_mma(iron_tile_a_f16 a, iron_tile_b_f16 b, iron_tile_acc c) {
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j)
      for (uint k = 0u; k < 2u; ++k)
        simdgroup_multiply_accumulate(c.m[2u * i + j], a.m[2u * i + k], b.m[2u * k + j], c.m[2u * i + j]);
  return c;
}
kernel void iron_tile_gemm_f16(
    constant uint& p_m [[buffer(5)]],
    constant uint& p_n [[buffer(6)]],
    constant uint& p_k [[buffer(7)]],
    constant uint& p_lda [[buffer(8)]],
    constant uint& p_ldb [[buffer(9)]],
    constant uint& p_a_off [[buffer(10)]],
    constant uint& p_b_off [[buffer(11)]],
    constant uint& p_a_len [[buffer(12)]],
    constant uint& p_b_len [[buffer(13)]],
    constant uint& p_tiles [[buffer(14)]],
    device const half* p_a [[buffer(0)]],
    device const half* p_b [[buffer(1)]],
    device float* p_c [[buffer(2)]],
    device float* p_ct [[buffer(3)]],
    device float* p_corner [[buffer(4)]],
    threadgroup uchar* iron_tg [[threadgroup(0)]],
    threadgroup float* iron_tile_scratch [[threadgroup(1)]],
    uint3 iron_group_id [[threadgroup_position_in_grid]],
    uint3 iron_local_id [[thread_position_in_threadgroup]],
    uint3 iron_group_size [[threads_per_threadgroup]],
    uint iron_lane [[thread_index_in_simdgroup]],
    uint iron_lane_width [[threads_per_simdgroup]],
    uint iron_simd_group [[simdgroup_index_in_threadgroup]],
    uint iron_num_simd_groups [[simdgroups_per_threadgroup]]) {
  threadgroup float* const iron_tile_sc = iron_tile_scratch + iron_simd_group * 256u;
  threadgroup float* const tg_cs = reinterpret_cast<threadgroup float*>(iron_tg + 0u);
  threadgroup half* const tg_as = reinterpret_cast<threadgroup half*>(iron_tg + 1104u);
  const uint v0 = p_m;
  const uint v3 = p_lda;
  const uint v4 = p_ldb;
  const uint v5 = p_a_off;
  const uint v6 = p_b_off;
  const uint v12 = iron_group_id.y;
  const uint v13 = iron_group_id.x;
  const uint v14 = iron_simd_group;
  const uint v15 = 0u;
  const uint v17 = iron_num_simd_groups;
  const uint v18 = 1u;
  const uint v20 = iron_simd_group;
  iron_tile_acc v23 = iron_tile_fill(0.0f);
  iron_tile_acc v24 = v23;
  const uint v25 = 16u;
  const uint v26 = iron_div_u32(p_k, v25);
  const uint v32 = iron_group_size.x;
  const uint v33 = iron_local_id.x;
  const uint v34 = 256u;
  const uint v41 = (v12 * v25);
  const uint v52 = 24u;
  const uint v54 = 8u;
  const uint v59 = 8u;
  const uint v60 = 24u;
  const uint v63 = (v13 * v25);
  for (uint v29 = v15; v29 < v26; v29 += v18) {
    const uint v31 = (v29 * v25);
    for (uint v35 = v33; v35 < v34; v35 += v32) {
      const uint v37 = iron_rem_u32(v35, v25);
      const uint v39 = iron_div_u32(v35, v25);
      const float v47 = iron_f16_to_f32(uint(as_type<ushort>(p_a[(((v5 + ((v41 + v39) * v3)) + v31) + v37)])));
      tg_as[((v54 + (iron_rem_u32(v39, v25) * v52)) + v37)] = as_type<half>(ushort(iron_f32_to_f16(v47)));
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    iron_tile_a_f16 v61;
    for (uint i = iron_lane; i < 256u; i += iron_lane_width) {
      const uint r = i >> 4u, c = i & 15u;
      iron_tile_stage(v61, iron_tile_sc, i, iron_f16_to_f32(iron_f32_to_f16(iron_f16_to_f32(uint(as_type<ushort>(tg_as[(v59 + r * v60 + c)]))))));
    }
    iron_tile_finish(v61, iron_tile_sc);
    iron_tile_b_f16 v67;
    for (uint i = iron_lane; i < 256u; i += iron_lane_width) {
      const uint r = i >> 4u, c = i & 15u;
      iron_tile_stage(v67, iron_tile_sc, i, iron_f16_to_f32(iron_f32_to_f16(iron_f16_to_f32(uint(as_type<ushort>(p_b[(((v6 + (v31 * v4)) + v63) + r * v4 + c)]))))));
    }
    iron_tile_finish(v67, iron_tile_sc);
    iron_tile_acc v68 = v24;
    iron_tile_acc v69 = iron_tile_mma(v61, v67, v68);
    v24 = v69;
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  }
  if ((v14 == v15)) {
    const uint v1 = p_n;
    iron_tile_acc v73 = v24;
    iron_tile_store_begin(v73, iron_tile_sc);
    for (uint i = iron_lane; i < 256u; i += iron_lane_width) {
      const uint r = i >> 4u, c = i & 15u;
      p_c[((((v12 * v25) * v1) + (v13 * v25)) + r * v1 + c)] = iron_tile_sc[i];
    }
    iron_tile_store_end();
    const float v81 = iron_tile_get(v73, iron_tile_sc, 5u, 11u);
    const uint v82 = iron_lane;
    if ((v82 == v15)) {
      p_corner[((v12 * iron_div_u32(v1, v25)) + v13)] = v81;
    }
  }
  if ((v14 == (v17 - v18))) {
    iron_tile_acc v92 = v24;
    iron_tile_store_begin(v92, iron_tile_sc);
    for (uint i = iron_lane; i < 256u; i += iron_lane_width) {
      const uint r = i >> 4u, c = i & 15u;
      tg_cs[(3u + r * 17u + c)] = iron_tile_sc[i];
    }
    iron_tile_store_end();
  }
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  const uint v97 = iron_group_size.x;
  const uint v98 = iron_local_id.x;
  const uint v99 = 256u;
  const uint v105 = 17u;
  const uint v107 = 3u;
  const uint v112 = (v12 * v25);
  const uint v114 = (v13 * v25);
  for (uint v100 = v98; v100 < v99; v100 += v97) {
    const uint v102 = iron_div_u32(v100, v25);
    const uint v104 = iron_rem_u32(v100, v25);
    const float v110 = tg_cs[((v107 + (v102 * v105)) + v104)];
    p_ct[((((v114 + v104) * v0) + v112) + v102)] = v110;
  }
}
