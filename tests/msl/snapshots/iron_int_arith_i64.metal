// Iron kernel iron_int_arith (i64), MSL. Generated: do not edit.
#include <metal_stdlib>
using namespace metal;
#pragma clang fp contract(off)
long iron_div_i64(long a, long b) {
  if (b == ((long)(0))) return a;
  if (b == ((long)(-1))) return ((long)(((ulong)(0)) - ((ulong)(a))));
  return ((long)(a / b));
}
long iron_rem_i64(long a, long b) {
  if (b == ((long)(0)) || b == ((long)(-1))) return ((long)(0));
  return ((long)(a - (a / b) * b));
}
long iron_shl_i64(long a, uint n) {
  if (n >= 64u) return ((long)(0));
  return ((long)(((ulong)(a)) << ((ulong)(n))));
}
long iron_shr_i64(long a, uint n) {
  if (n >= 64u) n = 63u;
  return ((long)(a >> ((long)(n))));
}
kernel void iron_int_arith_i64(
    constant uint& p_n [[buffer(7)]],
    device const long* p_a [[buffer(0)]],
    device const long* p_b [[buffer(1)]],
    device long* p_sum [[buffer(2)]],
    device long* p_quot [[buffer(3)]],
    device long* p_rest [[buffer(4)]],
    device long* p_shifts [[buffer(5)]],
    device long* p_widen [[buffer(6)]],
    uint3 iron_thread_id [[thread_position_in_grid]]) {
  const uint v1 = iron_thread_id.x;
  if ((v1 < p_n)) {
    const long v4 = p_a[v1];
    const long v5 = p_b[v1];
    p_sum[v1] = ((long)(((ulong)(((long)(((ulong)(v4)) * ((ulong)(v5)))))) + ((ulong)(v4))));
    p_quot[v1] = iron_div_i64(v4, v5);
    p_rest[v1] = iron_rem_i64(v4, v5);
    const long v14 = (v5 & (7l));
    p_shifts[v1] = (iron_shl_i64(v4, (((ulong)(v14)) >= 64ul ? 64u : ((uint)(v14)))) ^ iron_shr_i64(v4, (((ulong)(v14)) >= 64ul ? 64u : ((uint)(v14)))));
    p_widen[v1] = ((long)(((ulong)(((long)(v4)))) - ((ulong)(((long)(v5))))));
  }
}
