// simd_shuffle of a bool: not one of Metal's SIMD element types.
#include <metal_stdlib>
using namespace metal;
kernel void bool_shuffle(device int* p_out [[buffer(0)]], uint iron_lane [[thread_index_in_simdgroup]]) {
  const bool b = simd_shuffle(iron_lane == 0u, ushort(1));
  p_out[iron_lane] = b ? 1 : 0;
}
