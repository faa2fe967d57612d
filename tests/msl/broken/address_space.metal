// A threadgroup pointer passed where a device pointer is expected: Metal rejects it.
#include <metal_stdlib>
using namespace metal;
float first(device const float* p) { return p[0]; }
kernel void address_space(device float* p_out [[buffer(0)]], threadgroup float* iron_tg [[threadgroup(0)]]) {
  p_out[0] = first(iron_tg);
}
