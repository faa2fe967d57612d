// Iron kernel iron_tile_fp8_gemm (f32), MSL. Generated: do not edit.
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
uint iron_f32_to_e4m3(float x) {
  uint u = as_type<uint>(x);
  uint sgn = (u >> 24) & 0x80u;
  uint a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sgn | 0x7fu;
  if (a >= 0x43e00000u) return sgn | 0x7eu;
  if (a >= 0x3c800000u) {
    uint r = a - 0x3c000000u;
    r += 0x7ffffu + ((r >> 20) & 1u);
    return sgn | (r >> 20);
  }
  if (a < 0x3a000000u) return sgn;
  uint shift = 141u - (a >> 23);
  uint m = (a & 0x7fffffu) | 0x800000u;
  uint h = m >> shift;
  uint rest = m & ((1u << shift) - 1u);
  uint half_unit = 1u << (shift - 1u);
  if (rest > half_unit || (rest == half_unit && (h & 1u) != 0u)) h += 1u;
  return sgn | h;
}
float iron_e4m3_to_f32(uint c) {
  uint sgn = (c & 0x80u) << 24;
  uint e = (c >> 3) & 0xfu;
  uint m = c & 7u;
  if ((c & 0x7fu) == 0x7fu) return as_type<float>(sgn | 0x7fc00000u);
  if (e != 0u) return as_type<float>(sgn | ((e + 120u) << 23) | (m << 20));
  return as_type<float>(sgn | as_type<uint>(float(m) * as_type<float>(0x3b000000u)));
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
struct iron_tile_a_e4m3 { simdgroup_half8x8 m[8]; };
void iron_tile_stage(thread iron_tile_a_e4m3&, threadgroup float* sc, uint i, float v) {
  reinterpret_cast<threadgroup half*>(sc)[i] = as_type<half>(ushort(iron_f32_to_f16(v)));
}
void iron_tile_finish(thread iron_tile_a_e4m3& f, threadgroup float* sc) {
  simdgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup half* e = reinterpret_cast<threadgroup half*>(sc);
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 4u; ++j) simdgroup_load(f.m[4u * i + j], e + i * 8u * 32u + j * 8u, 32);
  simdgroup_barrier(mem_flags::mem_threadgroup);
}
struct iron_tile_b_e4m3 { simdgroup_half8x8 m[8]; };
void iron_tile_stage(thread iron_tile_b_e4m3&, threadgroup float* sc, uint i, float v) {
  reinterpret_cast<threadgroup half*>(sc)[i] = as_type<half>(ushort(iron_f32_to_f16(v)));
}
void iron_tile_finish(thread iron_tile_b_e4m3& f, threadgroup float* sc) {
  simdgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup half* e = reinterpret_cast<threadgroup half*>(sc);
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 2u; ++j) simdgroup_load(f.m[2u * i + j], e + i * 8u * 16u + j * 8u, 16);
  simdgroup_barrier(mem_flags::mem_threadgroup);
}
iron_tile_acc iron_tile_mma(iron_tile_a_e4m3 a, iron_tile_b_e4m3 b, iron_tile_acc c) {
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j)
      for (uint k = 0u; k < 4u; ++k)
        simdgroup_multiply_accumulate(c.m[2u * i + j], a.m[4u * i + k], b.m[2u * k + j], c.m[2u * i + j]);
  return c;
}
kernel void iron_tile_fp8_gemm(
    constant uint& p_n [[buffer(4)]],
    constant uint& p_k [[buffer(5)]],
    constant uint& p_lda [[buffer(6)]],
    constant uint& p_ldb [[buffer(7)]],
    constant uint& p_a_off [[buffer(8)]],
    constant uint& p_b_stage [[buffer(9)]],
    constant uint& p_a_len [[buffer(10)]],
    constant uint& p_b_len [[buffer(11)]],
    device const uchar* p_a [[buffer(0)]],
    device const uchar* p_b [[buffer(1)]],
    device float* p_c [[buffer(2)]],
    device float* p_c_last [[buffer(3)]],
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
  threadgroup uchar* const tg_bs = reinterpret_cast<threadgroup uchar*>(iron_tg + 0u);
  const uint v0 = p_n;
  const uint v2 = p_lda;
  const uint v3 = p_ldb;
  const uint v4 = p_a_off;
  const uint v5 = p_b_stage;
  const uint v9 = iron_group_id.x;
  iron_tile_acc v11 = iron_tile_fill(0.0f);
  iron_tile_acc v12 = v11;
  const uint v13 = 32u;
  const uint v14 = iron_div_u32(p_k, v13);
  const uint v15 = 0u;
  const uint v16 = 1u;
  const uint v20 = iron_group_size.x;
  const uint v21 = iron_local_id.x;
  const uint v22 = 512u;
  const uint v24 = 16u;
  const uint v29 = (v9 * v24);
  const uint v37 = 24u;
  const uint v45 = 24u;
  for (uint v17 = v15; v17 < v14; v17 += v16) {
    const uint v19 = (v17 * v13);
    for (uint v23 = v21; v23 < v22; v23 += v20) {
      const uint v25 = iron_div_u32(v23, v24);
      const uint v27 = iron_rem_u32(v23, v24);
      const float v34 = iron_e4m3_to_f32(uint(p_b[((((v19 + v25) * v3) + v29) + v27)]));
      tg_bs[((v5 + (iron_rem_u32(v25, v13) * v37)) + v27)] = uchar(iron_f32_to_e4m3(v34));
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    iron_tile_a_e4m3 v44;
    for (uint i = iron_lane; i < 512u; i += iron_lane_width) {
      const uint r = i >> 5u, c = i & 31u;
      iron_tile_stage(v44, iron_tile_sc, i, iron_e4m3_to_f32(iron_f32_to_e4m3(iron_e4m3_to_f32(uint(p_a[((v4 + v19) + r * v2 + c)])))));
    }
    iron_tile_finish(v44, iron_tile_sc);
    iron_tile_b_e4m3 v46;
    for (uint i = iron_lane; i < 512u; i += iron_lane_width) {
      const uint r = i >> 4u, c = i & 15u;
      iron_tile_stage(v46, iron_tile_sc, i, iron_e4m3_to_f32(iron_f32_to_e4m3(iron_e4m3_to_f32(uint(tg_bs[(v5 + r * v45 + c)])))));
    }
    iron_tile_finish(v46, iron_tile_sc);
    iron_tile_acc v47 = v12;
    iron_tile_acc v48 = iron_tile_mma(v44, v46, v47);
    v12 = v48;
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  }
  const uint v51 = iron_simd_group;
  if ((v51 == v15)) {
    iron_tile_acc v57 = v12;
    iron_tile_store_begin(v57, iron_tile_sc);
    for (uint i = iron_lane; i < 256u; i += iron_lane_width) {
      const uint r = i >> 4u, c = i & 15u;
      p_c[((v9 * 16u) + r * v0 + c)] = iron_tile_sc[i];
    }
    iron_tile_store_end();
  }
  const uint v59 = iron_num_simd_groups;
  const uint v62 = iron_simd_group;
  if ((v51 == (v59 - v16))) {
    iron_tile_acc v67 = v12;
    iron_tile_store_begin(v67, iron_tile_sc);
    for (uint i = iron_lane; i < 256u; i += iron_lane_width) {
      const uint r = i >> 4u, c = i & 15u;
      p_c_last[((v9 * 16u) + r * v0 + c)] = iron_tile_sc[i];
    }
    iron_tile_store_end();
  }
}
