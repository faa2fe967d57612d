// A function the Metal standard library does not have (CUDA's spelling).
#include <metal_stdlib>
using namespace metal;
kernel void unknown_function(device float* p_out [[buffer(0)]], uint iron_lane [[thread_index_in_simdgroup]]) {
  p_out[iron_lane] = __shfl_xor_sync(0xffffffffu, p_out[iron_lane], 1);
}
