// Two parameters at buffer index 0, and a built-in of a type Metal does not allow for it.
#include <metal_stdlib>
using namespace metal;
kernel void bad_attributes(device float* p_a [[buffer(0)]], device float* p_b [[buffer(0)]],
    float iron_lane [[thread_index_in_simdgroup]]) {
  p_a[0] = p_b[0] + iron_lane;
}
