// Iron kernel iron_gemm_128x128x64_wg_s3_bf16 (bf16), CUDA. Generated: do not edit.
#include <cuda_bf16.h>
__device__ __forceinline__ unsigned iron_div_u32(unsigned a, unsigned b) {
  if (b == 0u) return a;
  return a / b;
}
__device__ __forceinline__ float iron_fmax(float a, float b) {
  if (a != a) return b;
  if (a == b) return __uint_as_float(__float_as_uint(a) & __float_as_uint(b));
  return fmaxf(a, b);
}
__device__ __forceinline__ unsigned iron_rem_u32(unsigned a, unsigned b) {
  if (b == 0u) return 0u;
  return a % b;
}
__device__ __forceinline__ unsigned iron_shl_u32(unsigned a, unsigned n) {
  if (n >= 32u) return 0u;
  return a << n;
}
__device__ __forceinline__ unsigned iron_shr_u32(unsigned a, unsigned n) {
  if (n >= 32u) return 0u;
  return a >> n;
}
__device__ __forceinline__ unsigned iron_flat_local_id() {
  return threadIdx.x + 256u * (threadIdx.y + 1u * threadIdx.z);
}
__device__ __forceinline__ float iron_lane_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float iron_lane_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = iron_fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ int iron_lane_sum(int v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ int iron_lane_max(int v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ unsigned iron_lane_sum(unsigned v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ unsigned iron_lane_max(unsigned v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Cooperative tiles: MmaStrategy auto
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
struct iron_tile_acc { float x[8]; };
#define IRON_TILE_LDMATRIX 1
__device__ __forceinline__ unsigned iron_tile_ldm_row() { return (iron_flat_local_id() & 7u) + ((iron_flat_local_id() >> 3) & 1u) * 8u; }
__device__ __forceinline__ unsigned iron_tile_ldm_col() { return ((iron_flat_local_id() >> 4) & 1u) * 8u; }
__device__ __forceinline__ unsigned iron_tile_ldm_row_cm() { return (iron_flat_local_id() & 7u) + ((iron_flat_local_id() >> 4) & 1u) * 8u; }
__device__ __forceinline__ unsigned iron_tile_ldm_col_cm() { return ((iron_flat_local_id() >> 3) & 1u) * 8u; }
__device__ __forceinline__ unsigned iron_tile_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
#define IRON_TILE_LD_FIRST 0u
#define IRON_TILE_LD_END 8u
#define IRON_TILE_LD_STEP 1u
#define IRON_TILE_ST_FIRST 0u
#define IRON_TILE_ST_END 8u
#define IRON_TILE_ST_STEP 1u
__device__ __forceinline__ void iron_tile_coord_a(unsigned i, unsigned& r, unsigned& c) {
  const unsigned l = iron_flat_local_id() & 31u;
  r = (l >> 2) + 8u * ((i >> 1) & 1u);
  c = 2u * (l & 3u) + (i & 1u) + 8u * (i >> 2);
}
__device__ __forceinline__ void iron_tile_coord_b(unsigned i, unsigned& r, unsigned& c) {
  const unsigned l = iron_flat_local_id() & 31u, j = i & 3u;
  r = 2u * (l & 3u) + (j & 1u) + 8u * (j >> 1);
  c = (l >> 2) + 8u * (i >> 2);
}
__device__ __forceinline__ void iron_tile_coord_st(unsigned i, unsigned& r, unsigned& c) {
  const unsigned l = iron_flat_local_id() & 31u, j = i & 3u;
  r = (l >> 2) + 8u * (j >> 1);
  c = 2u * (l & 3u) + (j & 1u) + 8u * (i >> 2);
}
__device__ __forceinline__ iron_tile_acc iron_tile_fill(float v) {
  iron_tile_acc f;
  for (int i = 0; i < 8; ++i) f.x[i] = v;
  return f;
}
__device__ __forceinline__ void iron_tile_store_begin(const iron_tile_acc&) {}
__device__ __forceinline__ float iron_tile_store_get(const iron_tile_acc& f, unsigned i) { return f.x[i]; }
__device__ __forceinline__ void iron_tile_store_end() {}
__device__ __forceinline__ float iron_tile_get(const iron_tile_acc& f, unsigned r, unsigned c) {
  return __shfl_sync(0xffffffffu, f.x[((c >> 3) << 2) | ((r >> 3) << 1) | (c & 1u)],
                     (int)(((r & 7u) << 2) | ((c & 7u) >> 1)));
}
struct iron_tile_a_bf16 { unsigned x[4]; };
__device__ __forceinline__ void iron_tile_set(iron_tile_a_bf16& f, unsigned i, float v) {
  const unsigned b = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  f.x[i >> 1] = (i & 1u) ? ((f.x[i >> 1] & 0xffffu) | (b << 16)) : ((f.x[i >> 1] & 0xffff0000u) | b);
}
__device__ __forceinline__ void iron_tile_finish(iron_tile_a_bf16&) {}
__device__ __forceinline__ void iron_tile_ldmatrix(iron_tile_a_bf16& f, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(iron_tile_smem(row)) : "memory");
}
__device__ __forceinline__ void iron_tile_ldmatrix_cm(iron_tile_a_bf16& f, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(iron_tile_smem(row)) : "memory");
}
struct iron_tile_b_bf16 { unsigned x[4]; };
__device__ __forceinline__ void iron_tile_set(iron_tile_b_bf16& f, unsigned i, float v) {
  const unsigned b = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  f.x[i >> 1] = (i & 1u) ? ((f.x[i >> 1] & 0xffffu) | (b << 16)) : ((f.x[i >> 1] & 0xffff0000u) | b);
}
__device__ __forceinline__ void iron_tile_finish(iron_tile_b_bf16&) {}
__device__ __forceinline__ void iron_tile_ldmatrix(iron_tile_b_bf16& f, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(iron_tile_smem(row)) : "memory");
}
__device__ __forceinline__ void iron_tile_ldmatrix_cm(iron_tile_b_bf16& f, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(iron_tile_smem(row)) : "memory");
}
__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_bf16& a, const iron_tile_b_bf16& b, const iron_tile_acc& c) {
  iron_tile_acc d;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
               : "=f"(d.x[0]), "=f"(d.x[1]), "=f"(d.x[2]), "=f"(d.x[3])
               : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]),
                 "f"(c.x[0]), "f"(c.x[1]), "f"(c.x[2]), "f"(c.x[3]));
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
               : "=f"(d.x[4]), "=f"(d.x[5]), "=f"(d.x[6]), "=f"(d.x[7])
               : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[2]), "r"(b.x[3]),
                 "f"(c.x[4]), "f"(c.x[5]), "f"(c.x[6]), "f"(c.x[7]));
  return d;
}
template <unsigned NB> struct iron_tile_accw { iron_tile_acc t[NB]; };
template <unsigned NB> __device__ __forceinline__ iron_tile_accw<NB> iron_tile_fillw(float v) {
  iron_tile_accw<NB> f;
#pragma unroll
  for (unsigned b = 0; b < NB; ++b) f.t[b] = iron_tile_fill(v);
  return f;
}
template <unsigned NB> __device__ __forceinline__ float iron_tile_get(const iron_tile_accw<NB>& f, unsigned r, unsigned c) {
  return iron_tile_get(f.t[c >> 4], r, c & 15u);
}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define IRON_TILE_WGMMA 1
__device__ __forceinline__ unsigned long long iron_tile_wg_desc(unsigned addr, unsigned sbo, unsigned long long mode) {
  return (unsigned long long)((addr & 0x3ffffu) >> 4) | (1ull << 16) | ((unsigned long long)(sbo >> 4) << 32) | (mode << 62);
}
__device__ __forceinline__ iron_tile_acc iron_tile_wgmma_bf16_333(unsigned a, unsigned b, const iron_tile_acc& c) {
  if (((a | b) & 0x38fu) != 0u) __trap();
  const unsigned long long da = iron_tile_wg_desc(a, 1024u, 1ull), db = iron_tile_wg_desc(b, 1024u, 1ull);
  iron_tile_acc d = c;
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\nwgmma.fence.sync.aligned;\n"
               "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n"
               "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n}\n"
               : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3]), "+f"(d.x[4]), "+f"(d.x[5]), "+f"(d.x[6]), "+f"(d.x[7])
               : "l"(da), "l"(db), "r"(1) : "memory");
  return d;
}
__device__ __forceinline__ iron_tile_acc iron_tile_wgmma_rs_bf16_333(const iron_tile_a_bf16& a, unsigned b, const iron_tile_acc& c) {
  if ((b & 0x38fu) != 0u) __trap();
  const unsigned long long db = iron_tile_wg_desc(b, 1024u, 1ull);
  iron_tile_acc d = c;
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\nwgmma.fence.sync.aligned;\n"
               "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n"
               "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n}\n"
               : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3]), "+f"(d.x[4]), "+f"(d.x[5]), "+f"(d.x[6]), "+f"(d.x[7])
               : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "l"(db), "r"(1) : "memory");
  return d;
}
__device__ __forceinline__ void iron_tile_wgmma_async_bf16_333_n128(unsigned a, unsigned b, iron_tile_accw<8>& d) {
  const unsigned long long da = iron_tile_wg_desc(a, 1024u, 1ull);
  const unsigned long long db = iron_tile_wg_desc(b, 1024u, 1ull);
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n"
               "}\n"
               : "+f"(d.t[0].x[0]), "+f"(d.t[0].x[1]), "+f"(d.t[0].x[2]), "+f"(d.t[0].x[3]), "+f"(d.t[0].x[4]), "+f"(d.t[0].x[5]), "+f"(d.t[0].x[6]), "+f"(d.t[0].x[7]), 
                 "+f"(d.t[1].x[0]), "+f"(d.t[1].x[1]), "+f"(d.t[1].x[2]), "+f"(d.t[1].x[3]), "+f"(d.t[1].x[4]), "+f"(d.t[1].x[5]), "+f"(d.t[1].x[6]), "+f"(d.t[1].x[7]), 
                 "+f"(d.t[2].x[0]), "+f"(d.t[2].x[1]), "+f"(d.t[2].x[2]), "+f"(d.t[2].x[3]), "+f"(d.t[2].x[4]), "+f"(d.t[2].x[5]), "+f"(d.t[2].x[6]), "+f"(d.t[2].x[7]), 
                 "+f"(d.t[3].x[0]), "+f"(d.t[3].x[1]), "+f"(d.t[3].x[2]), "+f"(d.t[3].x[3]), "+f"(d.t[3].x[4]), "+f"(d.t[3].x[5]), "+f"(d.t[3].x[6]), "+f"(d.t[3].x[7]), 
                 "+f"(d.t[4].x[0]), "+f"(d.t[4].x[1]), "+f"(d.t[4].x[2]), "+f"(d.t[4].x[3]), "+f"(d.t[4].x[4]), "+f"(d.t[4].x[5]), "+f"(d.t[4].x[6]), "+f"(d.t[4].x[7]), 
                 "+f"(d.t[5].x[0]), "+f"(d.t[5].x[1]), "+f"(d.t[5].x[2]), "+f"(d.t[5].x[3]), "+f"(d.t[5].x[4]), "+f"(d.t[5].x[5]), "+f"(d.t[5].x[6]), "+f"(d.t[5].x[7]), 
                 "+f"(d.t[6].x[0]), "+f"(d.t[6].x[1]), "+f"(d.t[6].x[2]), "+f"(d.t[6].x[3]), "+f"(d.t[6].x[4]), "+f"(d.t[6].x[5]), "+f"(d.t[6].x[6]), "+f"(d.t[6].x[7]), 
                 "+f"(d.t[7].x[0]), "+f"(d.t[7].x[1]), "+f"(d.t[7].x[2]), "+f"(d.t[7].x[3]), "+f"(d.t[7].x[4]), "+f"(d.t[7].x[5]), "+f"(d.t[7].x[6]), "+f"(d.t[7].x[7])
               : "l"(da), "l"(db), "r"(1) : "memory");
}
#else
#define IRON_TILE_WGMMA 0
#endif
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#include <mma.h>
__shared__ __align__(32) float iron_tile_scratch[32 * 256];
__device__ __forceinline__ float* iron_tile_warp_scratch() {
  return iron_tile_scratch + (iron_flat_local_id() >> 5) * 256u;
}
struct iron_tile_acc { nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> f; };
#define IRON_TILE_LDMATRIX 0
#define IRON_TILE_LD_FIRST (iron_flat_local_id() & 31u)
#define IRON_TILE_LD_END 256u
#define IRON_TILE_LD_STEP 32u
#define IRON_TILE_ST_FIRST (iron_flat_local_id() & 31u)
#define IRON_TILE_ST_END 256u
#define IRON_TILE_ST_STEP 32u
__device__ __forceinline__ void iron_tile_coord_a(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }
__device__ __forceinline__ void iron_tile_coord_b(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }
__device__ __forceinline__ void iron_tile_coord_st(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }
__device__ __forceinline__ iron_tile_acc iron_tile_fill(float v) {
  iron_tile_acc f;
  nvcuda::wmma::fill_fragment(f.f, v);
  return f;
}
__device__ __forceinline__ void iron_tile_store_begin(const iron_tile_acc& f) {
  nvcuda::wmma::store_matrix_sync(iron_tile_warp_scratch(), f.f, 16, nvcuda::wmma::mem_row_major);
  __syncwarp();
}
__device__ __forceinline__ float iron_tile_store_get(const iron_tile_acc&, unsigned i) {
  return iron_tile_warp_scratch()[i];
}
__device__ __forceinline__ void iron_tile_store_end() { __syncwarp(); }
__device__ __forceinline__ float iron_tile_get(const iron_tile_acc& f, unsigned r, unsigned c) {
  iron_tile_store_begin(f);
  const float v = iron_tile_warp_scratch()[r * 16u + c];
  __syncwarp();
  return v;
}
struct iron_tile_a_bf16 { nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> f; };
__device__ __forceinline__ void iron_tile_set(iron_tile_a_bf16&, unsigned i, float v) {
  reinterpret_cast<__nv_bfloat16*>(iron_tile_warp_scratch())[i] = __float2bfloat16_rn(v);
}
__device__ __forceinline__ void iron_tile_finish(iron_tile_a_bf16& f) {
  __syncwarp();
  nvcuda::wmma::load_matrix_sync(f.f, reinterpret_cast<const __nv_bfloat16*>(iron_tile_warp_scratch()), 16);
  __syncwarp();
}
struct iron_tile_b_bf16 { nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> f; };
__device__ __forceinline__ void iron_tile_set(iron_tile_b_bf16&, unsigned i, float v) {
  reinterpret_cast<__nv_bfloat16*>(iron_tile_warp_scratch())[i] = __float2bfloat16_rn(v);
}
__device__ __forceinline__ void iron_tile_finish(iron_tile_b_bf16& f) {
  __syncwarp();
  nvcuda::wmma::load_matrix_sync(f.f, reinterpret_cast<const __nv_bfloat16*>(iron_tile_warp_scratch()), 16);
  __syncwarp();
}
__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_bf16& a, const iron_tile_b_bf16& b, const iron_tile_acc& c) {
  iron_tile_acc d;
  nvcuda::wmma::mma_sync(d.f, a.f, b.f, c.f);
  return d;
}
template <unsigned NB> struct iron_tile_accw { iron_tile_acc t[NB]; };
template <unsigned NB> __device__ __forceinline__ iron_tile_accw<NB> iron_tile_fillw(float v) {
  iron_tile_accw<NB> f;
#pragma unroll
  for (unsigned b = 0; b < NB; ++b) f.t[b] = iron_tile_fill(v);
  return f;
}
template <unsigned NB> __device__ __forceinline__ float iron_tile_get(const iron_tile_accw<NB>& f, unsigned r, unsigned c) {
  return iron_tile_get(f.t[c >> 4], r, c & 15u);
}
#define IRON_TILE_WGMMA 0
#else
struct iron_tile_acc { float x[256]; };
#define IRON_TILE_LDMATRIX 0
#define IRON_TILE_LD_FIRST 0u
#define IRON_TILE_LD_END 256u
#define IRON_TILE_LD_STEP 1u
#define IRON_TILE_ST_FIRST (iron_flat_local_id() & 31u)
#define IRON_TILE_ST_END 256u
#define IRON_TILE_ST_STEP 32u
__device__ __forceinline__ void iron_tile_coord_a(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }
__device__ __forceinline__ void iron_tile_coord_b(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }
__device__ __forceinline__ void iron_tile_coord_st(unsigned i, unsigned& r, unsigned& c) { r = i >> 4; c = i & 15u; }
__device__ __forceinline__ iron_tile_acc iron_tile_fill(float v) {
  iron_tile_acc f;
  for (int i = 0; i < 256; ++i) f.x[i] = v;
  return f;
}
__device__ __forceinline__ void iron_tile_store_begin(const iron_tile_acc&) {}
__device__ __forceinline__ float iron_tile_store_get(const iron_tile_acc& f, unsigned i) { return f.x[i]; }
__device__ __forceinline__ void iron_tile_store_end() {}
__device__ __forceinline__ float iron_tile_get(const iron_tile_acc& f, unsigned r, unsigned c) {
  return f.x[r * 16u + c];
}
struct iron_tile_a_bf16 { float x[256]; };
__device__ __forceinline__ void iron_tile_set(iron_tile_a_bf16& f, unsigned i, float v) { f.x[i] = v; }
__device__ __forceinline__ void iron_tile_finish(iron_tile_a_bf16&) {}
struct iron_tile_b_bf16 { float x[256]; };
__device__ __forceinline__ void iron_tile_set(iron_tile_b_bf16& f, unsigned i, float v) { f.x[i] = v; }
__device__ __forceinline__ void iron_tile_finish(iron_tile_b_bf16&) {}
__device__ __forceinline__ iron_tile_acc iron_tile_mma(const iron_tile_a_bf16& a, const iron_tile_b_bf16& b, const iron_tile_acc& c) {
  iron_tile_acc d;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double s = (double)c.x[i * 16 + j];
      for (int k = 0; k < 16; ++k) s += (double)a.x[i * 16 + k] * (double)b.x[k * 16 + j];
      d.x[i * 16 + j] = (float)s;
    }
  return d;
}
template <unsigned NB> struct iron_tile_accw { iron_tile_acc t[NB]; };
template <unsigned NB> __device__ __forceinline__ iron_tile_accw<NB> iron_tile_fillw(float v) {
  iron_tile_accw<NB> f;
#pragma unroll
  for (unsigned b = 0; b < NB; ++b) f.t[b] = iron_tile_fill(v);
  return f;
}
template <unsigned NB> __device__ __forceinline__ float iron_tile_get(const iron_tile_accw<NB>& f, unsigned r, unsigned c) {
  return iron_tile_get(f.t[c >> 4], r, c & 15u);
}
#define IRON_TILE_WGMMA 0
#endif
extern "C" __global__ void __launch_bounds__(256) iron_gemm_128x128x64_wg_s3_bf16_bf16(unsigned p_m, unsigned p_n, unsigned p_k, unsigned p_a_off, unsigned p_a_rs, unsigned p_a_cs, unsigned p_b_off, unsigned p_b_rs, unsigned p_b_cs, unsigned p_a_len, unsigned p_b_len, unsigned p_splits, unsigned p_kc, unsigned p_b_col, unsigned p_full, const __nv_bfloat16* __restrict__ p_a, const __nv_bfloat16* __restrict__ p_b, unsigned p_epi, unsigned p_bias_len, unsigned p_res_len, const __nv_bfloat16* __restrict__ p_bias, const __nv_bfloat16* __restrict__ p_residual, __nv_bfloat16* __restrict__ p_c) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  extern __shared__ __align__(1024) unsigned char iron_tg[];
  __nv_bfloat16* const tg_st = reinterpret_cast<__nv_bfloat16*>(iron_tg + 0u);
  float* const tg_cs = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(tg_st) + 0u);
  const unsigned v0 = p_m;
  const unsigned v1 = p_n;
  const unsigned v3 = p_a_off;
  const unsigned v4 = p_a_rs;
  const unsigned v6 = p_b_off;
  const unsigned v7 = p_b_rs;
  const unsigned v8 = p_b_cs;
  const unsigned v12 = p_kc;
  const unsigned v13 = 1u;
  const unsigned v15 = 0u;
  const unsigned v20 = gridDim.x;
  const unsigned v25 = ((blockIdx.y * v20) + blockIdx.x);
  const unsigned v26 = 16u;
  const unsigned v27 = (v26 * v20);
  const unsigned v30 = (iron_div_u32(v25, v27) * v26);
  const unsigned v33 = min((gridDim.y - v30), v26);
  const unsigned v36 = iron_rem_u32(v25, v27);
  const unsigned v40 = blockIdx.z;
  const unsigned v41 = 128u;
  const unsigned v42 = ((v30 + iron_rem_u32(v36, v33)) * v41);
  const unsigned v44 = (iron_div_u32(v36, v33) * v41);
  const unsigned v45 = (v40 * v12);
  const unsigned v48 = max(min(p_k, (v45 + v12)), v45);
  const unsigned v52 = 64u;
  const unsigned v53 = iron_div_u32(((v48 - v45) + 63u), v52);
  const unsigned v54 = (iron_flat_local_id() >> 5);
  const unsigned v55 = 8u;
  const unsigned v57 = 4u;
  const unsigned v59 = 2u;
  const unsigned v60 = iron_rem_u32(iron_div_u32(v54, v57), v59);
  const float v61 = 0.0f;
  iron_tile_accw<8> v62 = iron_tile_fillw<8>(v61);
  iron_tile_accw<8> v63 = v62;
  if ((v15 < v53)) {
    const unsigned v78 = 256u;
    const unsigned v80 = 1024u;
    const unsigned v90 = threadIdx.x;
    const unsigned v1230 = 0u;
    const unsigned v1232 = (v90 + (v1230 * v78));
    if ((v1232 < v80)) {
      const unsigned v1236 = iron_div_u32(v1232, v55);
      const unsigned v1240 = (iron_rem_u32(v1232, v55) * v55);
      const unsigned v1250 = ((v1236 * v52) + v1240);
      const unsigned v1257 = (v1250 ^ iron_shl_u32((iron_shr_u32(v1250, 6u) & 7u), 3u));
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[v1257];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1236) * v4)) + v1240) & 4294967288u) + v45) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v1261 = 1u;
    const unsigned v1263 = (v90 + (v1261 * v78));
    if ((v1263 < v80)) {
      const unsigned v1267 = iron_div_u32(v1263, v55);
      const unsigned v1271 = (iron_rem_u32(v1263, v55) * v55);
      const unsigned v1281 = ((v1267 * v52) + v1271);
      const unsigned v1288 = (v1281 ^ iron_shl_u32((iron_shr_u32(v1281, 6u) & 7u), 3u));
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[v1288];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1267) * v4)) + v1271) & 4294967288u) + v45) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v1292 = 2u;
    const unsigned v1294 = (v90 + (v1292 * v78));
    if ((v1294 < v80)) {
      const unsigned v1298 = iron_div_u32(v1294, v55);
      const unsigned v1302 = (iron_rem_u32(v1294, v55) * v55);
      const unsigned v1312 = ((v1298 * v52) + v1302);
      const unsigned v1319 = (v1312 ^ iron_shl_u32((iron_shr_u32(v1312, 6u) & 7u), 3u));
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[v1319];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1298) * v4)) + v1302) & 4294967288u) + v45) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v1323 = 3u;
    const unsigned v1325 = (v90 + (v1323 * v78));
    if ((v1325 < v80)) {
      const unsigned v1329 = iron_div_u32(v1325, v55);
      const unsigned v1333 = (iron_rem_u32(v1325, v55) * v55);
      const unsigned v1343 = ((v1329 * v52) + v1333);
      const unsigned v1350 = (v1343 ^ iron_shl_u32((iron_shr_u32(v1343, 6u) & 7u), 3u));
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[v1350];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1329) * v4)) + v1333) & 4294967288u) + v45) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v200 = 24576u;
    if (true) {
      const unsigned v217 = threadIdx.x;
      const unsigned v1478 = 0u;
      const unsigned v1480 = (v217 + (v1478 * v78));
      if ((v1480 < v80)) {
        const unsigned v1484 = iron_div_u32(v1480, v55);
        const unsigned v1488 = (iron_rem_u32(v1480, v55) * v55);
        const unsigned v1498 = ((v1484 * v52) + v1488);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v200 + (v1498 ^ iron_shl_u32((iron_shr_u32(v1498, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1484) * v8)) + v1488) & 4294967288u) + v45) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1509 = 1u;
      const unsigned v1511 = (v217 + (v1509 * v78));
      if ((v1511 < v80)) {
        const unsigned v1515 = iron_div_u32(v1511, v55);
        const unsigned v1519 = (iron_rem_u32(v1511, v55) * v55);
        const unsigned v1529 = ((v1515 * v52) + v1519);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v200 + (v1529 ^ iron_shl_u32((iron_shr_u32(v1529, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1515) * v8)) + v1519) & 4294967288u) + v45) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1540 = 2u;
      const unsigned v1542 = (v217 + (v1540 * v78));
      if ((v1542 < v80)) {
        const unsigned v1546 = iron_div_u32(v1542, v55);
        const unsigned v1550 = (iron_rem_u32(v1542, v55) * v55);
        const unsigned v1560 = ((v1546 * v52) + v1550);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v200 + (v1560 ^ iron_shl_u32((iron_shr_u32(v1560, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1546) * v8)) + v1550) & 4294967288u) + v45) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1571 = 3u;
      const unsigned v1573 = (v217 + (v1571 * v78));
      if ((v1573 < v80)) {
        const unsigned v1577 = iron_div_u32(v1573, v55);
        const unsigned v1581 = (iron_rem_u32(v1573, v55) * v55);
        const unsigned v1591 = ((v1577 * v52) + v1581);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v200 + (v1591 ^ iron_shl_u32((iron_shr_u32(v1591, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1577) * v8)) + v1581) & 4294967288u) + v45) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
    } else {
      const unsigned v73 = 8192u;
      if ((v7 == v13)) {
        const unsigned v252 = threadIdx.x;
        const unsigned v277 = 6u;
        const unsigned v279 = 7u;
        const unsigned v281 = 3u;
        for (unsigned v254 = v252; v254 < v80; v254 += v78) {
          const unsigned v256 = iron_div_u32(v254, v55);
          const unsigned v260 = (iron_rem_u32(v254, v55) * v55);
          const unsigned v261 = (v44 + v256);
          const unsigned v262 = (v45 + v260);
          const unsigned v276 = ((v256 * v52) + v260);
          {
            const unsigned iron_n = ((((v261 < v1) && (v262 < v48)) ? min((v48 - v262), v55) : v15) < 8u ? (((v261 < v1) && (v262 < v48)) ? min((v48 - v262), v55) : v15) : 8u) * 2u;
            unsigned char* iron_d = (unsigned char*)&tg_st[(v200 + (v276 ^ iron_shl_u32((iron_shr_u32(v276, v277) & v279), v281)))];
            const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((v6 + (v261 * v8)) + v262) : 0u));
          #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            if ((((unsigned long long)iron_d | (unsigned long long)iron_s) & 15ull) == 0ull) {
              asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
            } else
          #endif
            {
              for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
            }
          }
        }
      } else {
        const unsigned v287 = threadIdx.x;
        const unsigned v313 = 6u;
        const unsigned v315 = 7u;
        const unsigned v317 = 3u;
        for (unsigned v289 = v287; v289 < v73; v289 += v78) {
          const unsigned v291 = iron_rem_u32(v289, v41);
          const unsigned v293 = iron_div_u32(v289, v41);
          const unsigned v294 = (v44 + v291);
          const unsigned v295 = (v45 + v293);
          const bool v298 = ((v294 < v1) && (v295 < v48));
          const float v305 = __bfloat162float(p_b[(v298 ? ((v6 + (v294 * v8)) + (v295 * v7)) : v15)]);
          const unsigned v312 = ((v291 * v52) + v293);
          tg_st[(v200 + (v312 ^ iron_shl_u32((iron_shr_u32(v312, v313) & v315), v317)))] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn((v298 ? v305 : v61))));
        }
      }
    }
    #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    #endif
  } else {
    #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    #endif
  }
  if ((v13 < v53)) {
    const unsigned v410 = (v45 + v52);
    const unsigned v411 = 8192u;
    const unsigned v416 = 256u;
    const unsigned v418 = 1024u;
    const unsigned v428 = threadIdx.x;
    const unsigned v1354 = 0u;
    const unsigned v1356 = (v428 + (v1354 * v416));
    if ((v1356 < v418)) {
      const unsigned v1360 = iron_div_u32(v1356, v55);
      const unsigned v1364 = (iron_rem_u32(v1356, v55) * v55);
      const unsigned v1374 = ((v1360 * v52) + v1364);
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[(v411 + (v1374 ^ iron_shl_u32((iron_shr_u32(v1374, 6u) & 7u), 3u)))];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1360) * v4)) + v1364) & 4294967288u) + v410) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v1385 = 1u;
    const unsigned v1387 = (v428 + (v1385 * v416));
    if ((v1387 < v418)) {
      const unsigned v1391 = iron_div_u32(v1387, v55);
      const unsigned v1395 = (iron_rem_u32(v1387, v55) * v55);
      const unsigned v1405 = ((v1391 * v52) + v1395);
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[(v411 + (v1405 ^ iron_shl_u32((iron_shr_u32(v1405, 6u) & 7u), 3u)))];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1391) * v4)) + v1395) & 4294967288u) + v410) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v1416 = 2u;
    const unsigned v1418 = (v428 + (v1416 * v416));
    if ((v1418 < v418)) {
      const unsigned v1422 = iron_div_u32(v1418, v55);
      const unsigned v1426 = (iron_rem_u32(v1418, v55) * v55);
      const unsigned v1436 = ((v1422 * v52) + v1426);
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[(v411 + (v1436 ^ iron_shl_u32((iron_shr_u32(v1436, 6u) & 7u), 3u)))];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1422) * v4)) + v1426) & 4294967288u) + v410) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v1447 = 3u;
    const unsigned v1449 = (v428 + (v1447 * v416));
    if ((v1449 < v418)) {
      const unsigned v1453 = iron_div_u32(v1449, v55);
      const unsigned v1457 = (iron_rem_u32(v1449, v55) * v55);
      const unsigned v1467 = ((v1453 * v52) + v1457);
      {
        const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
        unsigned char* iron_d = (unsigned char*)&tg_st[(v411 + (v1467 ^ iron_shl_u32((iron_shr_u32(v1467, 6u) & 7u), 3u)))];
        const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1453) * v4)) + v1457) & 4294967288u) + v410) : 0u));
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
      #else
        for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
      #endif
      }
    }
    const unsigned v539 = (24576u + v411);
    if (true) {
      const unsigned v555 = threadIdx.x;
      const unsigned v1602 = 0u;
      const unsigned v1604 = (v555 + (v1602 * v416));
      if ((v1604 < v418)) {
        const unsigned v1608 = iron_div_u32(v1604, v55);
        const unsigned v1612 = (iron_rem_u32(v1604, v55) * v55);
        const unsigned v1622 = ((v1608 * v52) + v1612);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v539 + (v1622 ^ iron_shl_u32((iron_shr_u32(v1622, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1608) * v8)) + v1612) & 4294967288u) + v410) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1633 = 1u;
      const unsigned v1635 = (v555 + (v1633 * v416));
      if ((v1635 < v418)) {
        const unsigned v1639 = iron_div_u32(v1635, v55);
        const unsigned v1643 = (iron_rem_u32(v1635, v55) * v55);
        const unsigned v1653 = ((v1639 * v52) + v1643);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v539 + (v1653 ^ iron_shl_u32((iron_shr_u32(v1653, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1639) * v8)) + v1643) & 4294967288u) + v410) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1664 = 2u;
      const unsigned v1666 = (v555 + (v1664 * v416));
      if ((v1666 < v418)) {
        const unsigned v1670 = iron_div_u32(v1666, v55);
        const unsigned v1674 = (iron_rem_u32(v1666, v55) * v55);
        const unsigned v1684 = ((v1670 * v52) + v1674);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v539 + (v1684 ^ iron_shl_u32((iron_shr_u32(v1684, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1670) * v8)) + v1674) & 4294967288u) + v410) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1695 = 3u;
      const unsigned v1697 = (v555 + (v1695 * v416));
      if ((v1697 < v418)) {
        const unsigned v1701 = iron_div_u32(v1697, v55);
        const unsigned v1705 = (iron_rem_u32(v1697, v55) * v55);
        const unsigned v1715 = ((v1701 * v52) + v1705);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v539 + (v1715 ^ iron_shl_u32((iron_shr_u32(v1715, 6u) & 7u), 3u)))];
          const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1701) * v8)) + v1705) & 4294967288u) + v410) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
    } else {
      if ((v7 == v13)) {
        const unsigned v590 = threadIdx.x;
        const unsigned v615 = 6u;
        const unsigned v617 = 7u;
        const unsigned v619 = 3u;
        for (unsigned v592 = v590; v592 < v418; v592 += v416) {
          const unsigned v594 = iron_div_u32(v592, v55);
          const unsigned v598 = (iron_rem_u32(v592, v55) * v55);
          const unsigned v599 = (v44 + v594);
          const unsigned v600 = (v410 + v598);
          const unsigned v614 = ((v594 * v52) + v598);
          {
            const unsigned iron_n = ((((v599 < v1) && (v600 < v48)) ? min((v48 - v600), v55) : v15) < 8u ? (((v599 < v1) && (v600 < v48)) ? min((v48 - v600), v55) : v15) : 8u) * 2u;
            unsigned char* iron_d = (unsigned char*)&tg_st[(v539 + (v614 ^ iron_shl_u32((iron_shr_u32(v614, v615) & v617), v619)))];
            const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((v6 + (v599 * v8)) + v600) : 0u));
          #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            if ((((unsigned long long)iron_d | (unsigned long long)iron_s) & 15ull) == 0ull) {
              asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
            } else
          #endif
            {
              for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
            }
          }
        }
      } else {
        const unsigned v625 = threadIdx.x;
        const unsigned v651 = 6u;
        const unsigned v653 = 7u;
        const unsigned v655 = 3u;
        for (unsigned v627 = v625; v627 < v411; v627 += v416) {
          const unsigned v629 = iron_rem_u32(v627, v41);
          const unsigned v631 = iron_div_u32(v627, v41);
          const unsigned v632 = (v44 + v629);
          const unsigned v633 = (v410 + v631);
          const bool v636 = ((v632 < v1) && (v633 < v48));
          const float v643 = __bfloat162float(p_b[(v636 ? ((v6 + (v632 * v8)) + (v633 * v7)) : v15)]);
          const unsigned v650 = ((v629 * v52) + v631);
          tg_st[(v539 + (v650 ^ iron_shl_u32((iron_shr_u32(v650, v651) & v653), v655)))] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn((v636 ? v643 : v61))));
        }
      }
    }
    #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    #endif
  } else {
    #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    #endif
  }
  const unsigned v1085 = 3u;
  const unsigned v1089 = 8192u;
  const unsigned v1091 = 24576u;
  const unsigned v1095 = 4096u;
  const unsigned v1096 = (v60 * v1095);
  const unsigned v1125 = 32u;
  const unsigned v1141 = 48u;
  for (unsigned v742 = v15; v742 < v53; v742 += v13) {
    #if IRON_TILE_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    #endif
    #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    #endif
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const unsigned v748 = (v742 + v59);
    if ((v748 < v53)) {
      const unsigned v751 = 3u;
      const unsigned v752 = iron_rem_u32(v748, v751);
      const unsigned v755 = (v45 + (v748 * v52));
      const unsigned v756 = 8192u;
      const unsigned v757 = (v752 * v756);
      const unsigned v761 = 256u;
      const unsigned v763 = 1024u;
      const unsigned v773 = threadIdx.x;
      const unsigned v1726 = 0u;
      const unsigned v1728 = (v773 + (v1726 * v761));
      if ((v1728 < v763)) {
        const unsigned v1732 = iron_div_u32(v1728, v55);
        const unsigned v1736 = (iron_rem_u32(v1728, v55) * v55);
        const unsigned v1746 = ((v1732 * v52) + v1736);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v757 + (v1746 ^ iron_shl_u32((iron_shr_u32(v1746, 6u) & 7u), v751)))];
          const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1732) * v4)) + v1736) & 4294967288u) + v755) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1757 = 1u;
      const unsigned v1759 = (v773 + (v1757 * v761));
      if ((v1759 < v763)) {
        const unsigned v1763 = iron_div_u32(v1759, v55);
        const unsigned v1767 = (iron_rem_u32(v1759, v55) * v55);
        const unsigned v1777 = ((v1763 * v52) + v1767);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v757 + (v1777 ^ iron_shl_u32((iron_shr_u32(v1777, 6u) & 7u), v751)))];
          const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1763) * v4)) + v1767) & 4294967288u) + v755) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1788 = 2u;
      const unsigned v1790 = (v773 + (v1788 * v761));
      if ((v1790 < v763)) {
        const unsigned v1794 = iron_div_u32(v1790, v55);
        const unsigned v1798 = (iron_rem_u32(v1790, v55) * v55);
        const unsigned v1808 = ((v1794 * v52) + v1798);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v757 + (v1808 ^ iron_shl_u32((iron_shr_u32(v1808, 6u) & 7u), v751)))];
          const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1794) * v4)) + v1798) & 4294967288u) + v755) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v1819 = 3u;
      const unsigned v1821 = (v773 + (v1819 * v761));
      if ((v1821 < v763)) {
        const unsigned v1825 = iron_div_u32(v1821, v55);
        const unsigned v1829 = (iron_rem_u32(v1821, v55) * v55);
        const unsigned v1839 = ((v1825 * v52) + v1829);
        {
          const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
          unsigned char* iron_d = (unsigned char*)&tg_st[(v757 + (v1839 ^ iron_shl_u32((iron_shr_u32(v1839, 6u) & 7u), v751)))];
          const unsigned char* iron_s = (const unsigned char*)(p_a + (iron_n ? ((((v3 + ((v42 + v1825) * v4)) + v1829) & 4294967288u) + v755) : 0u));
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
        #else
          for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
        #endif
        }
      }
      const unsigned v884 = (24576u + v757);
      if (true) {
        const unsigned v900 = threadIdx.x;
        const unsigned v1850 = 0u;
        const unsigned v1852 = (v900 + (v1850 * v761));
        if ((v1852 < v763)) {
          const unsigned v1856 = iron_div_u32(v1852, v55);
          const unsigned v1860 = (iron_rem_u32(v1852, v55) * v55);
          const unsigned v1870 = ((v1856 * v52) + v1860);
          {
            const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
            unsigned char* iron_d = (unsigned char*)&tg_st[(v884 + (v1870 ^ iron_shl_u32((iron_shr_u32(v1870, 6u) & 7u), v751)))];
            const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1856) * v8)) + v1860) & 4294967288u) + v755) : 0u));
          #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
          #else
            for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
          #endif
          }
        }
        const unsigned v1881 = 1u;
        const unsigned v1883 = (v900 + (v1881 * v761));
        if ((v1883 < v763)) {
          const unsigned v1887 = iron_div_u32(v1883, v55);
          const unsigned v1891 = (iron_rem_u32(v1883, v55) * v55);
          const unsigned v1901 = ((v1887 * v52) + v1891);
          {
            const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
            unsigned char* iron_d = (unsigned char*)&tg_st[(v884 + (v1901 ^ iron_shl_u32((iron_shr_u32(v1901, 6u) & 7u), v751)))];
            const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1887) * v8)) + v1891) & 4294967288u) + v755) : 0u));
          #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
          #else
            for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
          #endif
          }
        }
        const unsigned v1912 = 2u;
        const unsigned v1914 = (v900 + (v1912 * v761));
        if ((v1914 < v763)) {
          const unsigned v1918 = iron_div_u32(v1914, v55);
          const unsigned v1922 = (iron_rem_u32(v1914, v55) * v55);
          const unsigned v1932 = ((v1918 * v52) + v1922);
          {
            const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
            unsigned char* iron_d = (unsigned char*)&tg_st[(v884 + (v1932 ^ iron_shl_u32((iron_shr_u32(v1932, 6u) & 7u), v751)))];
            const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1918) * v8)) + v1922) & 4294967288u) + v755) : 0u));
          #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
          #else
            for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
          #endif
          }
        }
        const unsigned v1943 = 3u;
        const unsigned v1945 = (v900 + (v1943 * v761));
        if ((v1945 < v763)) {
          const unsigned v1949 = iron_div_u32(v1945, v55);
          const unsigned v1953 = (iron_rem_u32(v1945, v55) * v55);
          const unsigned v1963 = ((v1949 * v52) + v1953);
          {
            const unsigned iron_n = (v55 < 8u ? v55 : 8u) * 2u;
            unsigned char* iron_d = (unsigned char*)&tg_st[(v884 + (v1963 ^ iron_shl_u32((iron_shr_u32(v1963, 6u) & 7u), v751)))];
            const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((((v6 + ((v44 + v1949) * v8)) + v1953) & 4294967288u) + v755) : 0u));
          #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
          #else
            for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
          #endif
          }
        }
      } else {
        if ((v7 == v13)) {
          const unsigned v935 = threadIdx.x;
          const unsigned v960 = 6u;
          const unsigned v962 = 7u;
          for (unsigned v937 = v935; v937 < v763; v937 += v761) {
            const unsigned v939 = iron_div_u32(v937, v55);
            const unsigned v943 = (iron_rem_u32(v937, v55) * v55);
            const unsigned v944 = (v44 + v939);
            const unsigned v945 = (v755 + v943);
            const unsigned v959 = ((v939 * v52) + v943);
            {
              const unsigned iron_n = ((((v944 < v1) && (v945 < v48)) ? min((v48 - v945), v55) : v15) < 8u ? (((v944 < v1) && (v945 < v48)) ? min((v48 - v945), v55) : v15) : 8u) * 2u;
              unsigned char* iron_d = (unsigned char*)&tg_st[(v884 + (v959 ^ iron_shl_u32((iron_shr_u32(v959, v960) & v962), v751)))];
              const unsigned char* iron_s = (const unsigned char*)(p_b + (iron_n ? ((v6 + (v944 * v8)) + v945) : 0u));
            #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
              if ((((unsigned long long)iron_d | (unsigned long long)iron_s) & 15ull) == 0ull) {
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"((unsigned)__cvta_generic_to_shared(iron_d)), "l"(iron_s), "r"(iron_n) : "memory");
              } else
            #endif
              {
                for (unsigned iron_b = 0u; iron_b < 16u; ++iron_b) iron_d[iron_b] = iron_b < iron_n ? iron_s[iron_b] : (unsigned char)0;
              }
            }
          }
        } else {
          const unsigned v970 = threadIdx.x;
          const unsigned v996 = 6u;
          const unsigned v998 = 7u;
          for (unsigned v972 = v970; v972 < v756; v972 += v761) {
            const unsigned v974 = iron_rem_u32(v972, v41);
            const unsigned v976 = iron_div_u32(v972, v41);
            const unsigned v977 = (v44 + v974);
            const unsigned v978 = (v755 + v976);
            const bool v981 = ((v977 < v1) && (v978 < v48));
            const float v988 = __bfloat162float(p_b[(v981 ? ((v6 + (v977 * v8)) + (v978 * v7)) : v15)]);
            const unsigned v995 = ((v974 * v52) + v976);
            tg_st[(v884 + (v995 ^ iron_shl_u32((iron_shr_u32(v995, v996) & v998), v751)))] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn((v981 ? v988 : v61))));
          }
        }
      }
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      asm volatile("cp.async.commit_group;\n" ::: "memory");
      #endif
    } else {
      #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      asm volatile("cp.async.commit_group;\n" ::: "memory");
      #endif
    }
    const unsigned v1086 = iron_rem_u32(v742, v1085);
    #if IRON_TILE_WGMMA
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    #endif
    iron_tile_accw<8> v1088 = v63;
    const unsigned v1090 = (v1086 * v1089);
    const unsigned v1092 = (v1091 + v1090);
    const unsigned v1099 = (v1090 + v1096);
    iron_tile_accw<8> v1102 = v1088;
    #if IRON_TILE_WGMMA
    iron_tile_wgmma_async_bf16_333_n128(iron_tile_smem(&tg_st[v1099]), iron_tile_smem(&tg_st[v1092]), v1102);
    #else
    {
      const unsigned iron_wq = (iron_flat_local_id() >> 5) & 3u;
      v1102 = v1088;
      iron_tile_a_bf16 iron_wa = {};
      for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
        unsigned r, c;
        iron_tile_coord_a(i, r, c);
        iron_tile_set(iron_wa, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[((v1099 + (16u * iron_wq + r) * 64u + c) ^ ((((v1099 + (16u * iron_wq + r) * 64u + c) >> 6u) & 7u) << 3u))]))));
      }
      iron_tile_finish(iron_wa);
    #pragma unroll
      for (unsigned iron_nb = 0u; iron_nb < 8u; ++iron_nb) {
        iron_tile_b_bf16 iron_wb = {};
        for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
          unsigned r, c;
          iron_tile_coord_b(i, r, c);
          iron_tile_set(iron_wb, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[((v1092 + (16u * iron_nb + c) * 64u + r) ^ ((((v1092 + (16u * iron_nb + c) * 64u + r) >> 6u) & 7u) << 3u))]))));
        }
        iron_tile_finish(iron_wb);
        v1102.t[iron_nb] = iron_tile_mma(iron_wa, iron_wb, v1102.t[iron_nb]);
      }
    }
    #endif
    v63 = v1102;
    iron_tile_accw<8> v1118 = v1102;
    #if IRON_TILE_WGMMA
    iron_tile_wgmma_async_bf16_333_n128(iron_tile_smem(&tg_st[(v1099 + v26)]), iron_tile_smem(&tg_st[(v1092 + v26)]), v1118);
    #else
    {
      const unsigned iron_wq = (iron_flat_local_id() >> 5) & 3u;
      v1118 = v1102;
      iron_tile_a_bf16 iron_wa = {};
      for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
        unsigned r, c;
        iron_tile_coord_a(i, r, c);
        iron_tile_set(iron_wa, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[(((v1099 + v26) + (16u * iron_wq + r) * 64u + c) ^ (((((v1099 + v26) + (16u * iron_wq + r) * 64u + c) >> 6u) & 7u) << 3u))]))));
      }
      iron_tile_finish(iron_wa);
    #pragma unroll
      for (unsigned iron_nb = 0u; iron_nb < 8u; ++iron_nb) {
        iron_tile_b_bf16 iron_wb = {};
        for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
          unsigned r, c;
          iron_tile_coord_b(i, r, c);
          iron_tile_set(iron_wb, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[(((v1092 + v26) + (16u * iron_nb + c) * 64u + r) ^ (((((v1092 + v26) + (16u * iron_nb + c) * 64u + r) >> 6u) & 7u) << 3u))]))));
        }
        iron_tile_finish(iron_wb);
        v1118.t[iron_nb] = iron_tile_mma(iron_wa, iron_wb, v1118.t[iron_nb]);
      }
    }
    #endif
    v63 = v1118;
    iron_tile_accw<8> v1134 = v1118;
    #if IRON_TILE_WGMMA
    iron_tile_wgmma_async_bf16_333_n128(iron_tile_smem(&tg_st[(v1099 + v1125)]), iron_tile_smem(&tg_st[(v1092 + v1125)]), v1134);
    #else
    {
      const unsigned iron_wq = (iron_flat_local_id() >> 5) & 3u;
      v1134 = v1118;
      iron_tile_a_bf16 iron_wa = {};
      for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
        unsigned r, c;
        iron_tile_coord_a(i, r, c);
        iron_tile_set(iron_wa, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[(((v1099 + v1125) + (16u * iron_wq + r) * 64u + c) ^ (((((v1099 + v1125) + (16u * iron_wq + r) * 64u + c) >> 6u) & 7u) << 3u))]))));
      }
      iron_tile_finish(iron_wa);
    #pragma unroll
      for (unsigned iron_nb = 0u; iron_nb < 8u; ++iron_nb) {
        iron_tile_b_bf16 iron_wb = {};
        for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
          unsigned r, c;
          iron_tile_coord_b(i, r, c);
          iron_tile_set(iron_wb, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[(((v1092 + v1125) + (16u * iron_nb + c) * 64u + r) ^ (((((v1092 + v1125) + (16u * iron_nb + c) * 64u + r) >> 6u) & 7u) << 3u))]))));
        }
        iron_tile_finish(iron_wb);
        v1134.t[iron_nb] = iron_tile_mma(iron_wa, iron_wb, v1134.t[iron_nb]);
      }
    }
    #endif
    v63 = v1134;
    iron_tile_accw<8> v1150 = v1134;
    #if IRON_TILE_WGMMA
    iron_tile_wgmma_async_bf16_333_n128(iron_tile_smem(&tg_st[(v1099 + v1141)]), iron_tile_smem(&tg_st[(v1092 + v1141)]), v1150);
    #else
    {
      const unsigned iron_wq = (iron_flat_local_id() >> 5) & 3u;
      v1150 = v1134;
      iron_tile_a_bf16 iron_wa = {};
      for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
        unsigned r, c;
        iron_tile_coord_a(i, r, c);
        iron_tile_set(iron_wa, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[(((v1099 + v1141) + (16u * iron_wq + r) * 64u + c) ^ (((((v1099 + v1141) + (16u * iron_wq + r) * 64u + c) >> 6u) & 7u) << 3u))]))));
      }
      iron_tile_finish(iron_wa);
    #pragma unroll
      for (unsigned iron_nb = 0u; iron_nb < 8u; ++iron_nb) {
        iron_tile_b_bf16 iron_wb = {};
        for (unsigned i = IRON_TILE_LD_FIRST; i < IRON_TILE_LD_END; i += IRON_TILE_LD_STEP) {
          unsigned r, c;
          iron_tile_coord_b(i, r, c);
          iron_tile_set(iron_wb, i, __bfloat162float(__float2bfloat16_rn(__bfloat162float(tg_st[(((v1092 + v1141) + (16u * iron_nb + c) * 64u + r) ^ (((((v1092 + v1141) + (16u * iron_nb + c) * 64u + r) >> 6u) & 7u) << 3u))]))));
        }
        iron_tile_finish(iron_wb);
        v1150.t[iron_nb] = iron_tile_mma(iron_wa, iron_wb, v1150.t[iron_nb]);
      }
    }
    #endif
    v63 = v1150;
    #if IRON_TILE_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    #endif
  }
  #if IRON_TILE_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  #endif
  #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  #endif
  __syncthreads();
  if ((v54 < v55)) {
    iron_tile_accw<8> v1159 = v63;
    #pragma unroll
    for (unsigned iron_nb = 0u; iron_nb < 8u; ++iron_nb) {
      iron_tile_store_begin(v1159.t[iron_nb]);
      for (unsigned i = IRON_TILE_ST_FIRST; i < IRON_TILE_ST_END; i += IRON_TILE_ST_STEP) {
        unsigned r, c;
        iron_tile_coord_st(i, r, c);
        tg_cs[((v54 * 2048u) + 16u * iron_nb + r * v41 + c)] = iron_tile_store_get(v1159.t[iron_nb], i);
      }
      iron_tile_store_end();
    }
  }
  __syncthreads();
  const unsigned v1163 = 256u;
  const unsigned v1164 = threadIdx.x;
  const unsigned v1165 = 16384u;
  for (unsigned v1166 = v1164; v1166 < v1165; v1166 += v1163) {
    const unsigned v1169 = (v42 + iron_div_u32(v1166, v41));
    const unsigned v1172 = (v44 + iron_rem_u32(v1166, v41));
    if (((v1169 < v0) && (v1172 < v1))) {
      const float v1177 = tg_cs[v1166];
      p_c[((((v40 * v0) + v1169) * v1) + v1172)] = __float2bfloat16_rn(v1177);
    }
  }
}
