// The GLSL built-ins the emitted helper texts use (src/codegen/*.inc), as C++, so unit tests can
// compile those very texts on the host: a test opens a namespace, brings these in with
// `using namespace iron::test::glsl_cpu;`, adds what its helpers need besides, and includes
// the .inc file there.
#pragma once

#include <cstdint>
#include <cstring>

namespace iron::test::glsl_cpu {

using uint = uint32_t;
inline uint floatBitsToUint(float f) {
  uint u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float uintBitsToFloat(uint u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline int findMSB(uint v) { return v == 0 ? -1 : 31 - __builtin_clz(v); }

}  // namespace iron::test::glsl_cpu
