// A seeded generator of random IR kernels for differential fuzzing: of the optimization pipeline
// (tests/unit/fuzz_test.cpp) and across backends (`iron fuzz`, fuzz.hpp). Every program verifies
// and is free of undefined behaviour by construction, so any difference between a program and
// its optimized form is a pass bug, and any difference between backends a backend bug. Also
// builds the launch each program runs with, runs it through the interpreter and compares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.hpp"

namespace iron::fuzz {

// The contract between the generator and random_launch. Each thread owns kSlotsPerThread
// consecutive elements of every writable buffer (flat thread index t: [8t, 8t + 8)) and writes
// nothing else, so no two threads race; `in` buffers hold kInputLength elements, enough for an
// own-slot index of any thread, and are otherwise read at indices reduced modulo their length.
constexpr uint32_t kSlotsPerThread = 8;
constexpr uint32_t kMaxThreads = 128;
constexpr uint32_t kInputLength = kSlotsPerThread * kMaxThreads;
constexpr uint32_t kMaxGroupSize = 64;  // threadgroup arrays have one slot per thread

struct RandomProgramOptions {
  // Well-conditioned float arithmetic only: positive f32 values, kept in [2^-6, 2^6] by clamps
  // after the ops that grow or shrink them (min/max: 1-Lipschitz), ops whose relative condition
  // number is at most 1 (add, mul, div, fma, min, max, sqrt, lane sums), no float comparisons,
  // no float -> int casts and no 16-bit float rounding. A one-rounding change (what fma_fusion
  // does) then stays a small relative change in every output instead of flipping a branch or an
  // integer, so the result can be checked against a tolerance.
  bool well_conditioned = false;
  // Programs compared bit for bit across backends (`iron fuzz`): no transcendental (exp, log,
  // tanh, rsqrt, sin, cos, exp2, log2, erf, pow), whose results docs/semantics.md only bounds;
  // each is replaced by abs (pow by mul). The exact math ops (floor, ceil, rint, trunc, mulhi,
  // popcount, clz, bitcast) stay.
  bool cross_backend = false;
  // Op classes kept out of the program (OpClass bits), for a backend known to differ on them.
  uint32_t exclude = 0;
  // For a device that flushes f32 subnormals to zero (DeviceInfo::f32_denormals_flushed): every
  // float value the program makes (constant, parameter, load, arithmetic, cast, lane op) goes
  // through the guard select(abs(x) < 2^-125, 0.0, x), and every f32 lane_sum operand through
  // the same guard at 2^-100, so no subnormal ever reaches an op or a store and the program
  // means the same on that device and on the interpreter (docs/semantics.md#vulkan-drivers).
  bool flush_guard = false;
};

// The guard's thresholds (RandomProgramOptions::flush_guard). 2^-125, not 2^-126: a result
// that rounds up to 2^-126 from below is 2^-126 on the interpreter but may be flushed by a
// device that detects tininess before rounding; below 2^-125 both become +0. Nonzero lane_sum
// operands of at least 2^-100 are multiples of 2^-123, so no partial sum of the butterfly
// (which the guard cannot reach) is ever subnormal.
constexpr double kFlushGuard = 0x1p-125;
constexpr double kLaneSumGuard = 0x1p-100;

// Op classes a program can be generated without (RandomProgramOptions::exclude). Each is
// replaced by an op of the same signature, so the rest of the program keeps its shape.
enum OpClass : uint32_t {
  kSignedRem = 1u << 0,    // "rem":     i32 % (replaced by /)
  kFloatToInt = 1u << 1,   // "fcast":   f32/f16/bf16 -> i32/u32 casts (cast from an integer instead)
  kFloatMinMax = 1u << 2,  // "fminmax": float min and max (replaced by add)
  kFloatLane = 1u << 3,    // "flane":   f32 lane_sum / lane_max, group reductions (i32/u32 lanes instead)
  kFma = 1u << 4,          // "fma":     fma, and float add(mul(a, b), c), which fma_fusion fuses (mul, sub instead)
  kFloatZero = 1u << 5,    // "fzero":   float constants +-0 (0.25 instead), casts of integer constant 0
  kFloatDiv = 1u << 6,     // "fdiv":    float division (replaced by mul)
  kF16 = 1u << 7,          // "f16":     f16 values, casts, variables and in_h loads (f32 instead; T is
                           //            never f16: the caller leaves it out of random_launch's dtypes)
  kZeroCast = 1u << 8,     // "zcast":   casts of an integer or bool constant 0 to a float (1 instead);
                           //            part of "fzero" too
  kNegZero = 1u << 9,      // "nzero":   the float constant -0 (+0 instead); part of "fzero" too
  kTile = 1u << 10,        // "tile":    cooperative tiles (a group reduction instead)
  kMbar = 1u << 11,        // "mbar":    an mbarrier arrival and wait ordering a threadgroup exchange (a
                           //            barrier instead); CUDA sm_90+ only: iron fuzz leaves it out
                           //            wherever another backend takes part
};
// The first excluded class (its name) that `k` still contains, "" if none. The generator keeps
// them out, but the pipeline can bring some back: const_fold can fold a float zero ("fzero",
// found as a float constant 0 operand of arithmetic), fma_fusion makes fmas ("fma").
std::string excluded_op_in(const ir::Kernel& k, uint32_t exclude);

// Parses a comma-separated list of the names above into OpClass bits; false (with `error` naming
// the unknown entry and the known ones) on a name it does not know.
bool parse_op_classes(const std::string& list, uint32_t& out, std::string& error);
std::string op_class_names(uint32_t classes);  // "rem,fcast" (in declaration order)

// Which mode a seed's program has (every second seed is a Reduction program), shared by the
// unit tests and `iron fuzz` so a reported seed means the same program in both.
inline bool reduction_seed(uint64_t seed) { return seed % 2 == 0; }
// The mode of the program random_program makes for `seed`: with threadgroups (`reduction`), a
// quarter are Tile2D (no lane operations, 2-D threadgroups) and a quarter SimdGroup2D (indices
// from lanes and lane groups); without, a quarter are Grid3D (a 3-D grid) and the rest
// Elementwise. Taken from the seed's bits, not its random stream, so the programs of the
// other seeds are the ones they always were.
inline Mode seed_mode(uint64_t seed, bool reduction) {
  const uint64_t q = (seed >> 1) % 4;
  if (reduction) return q == 1 ? Mode::Tile2D : q == 3 ? Mode::SimdGroup2D : Mode::Reduction;
  return q == 3 ? Mode::Grid3D : Mode::Elementwise;
}

// A random kernel, dtypes T {f32, f16, bf16} and W {f32, f16, bf16, u8, i16, f8e5m2}, in the mode seed_mode(seed, reduction_mode). Its parameters are
// always the same (see random_program.cpp); its body depends only on the seed and the options.
ir::Kernel random_program(uint64_t seed, bool reduction_mode, const RandomProgramOptions& opts = {});

// The value of a `tensormap` parameter in a launch: a 2-dimensional map over one of the launch's
// buffers (docs/semantics.md "Tensor-map copies"); a device run makes it a TensorMap over the
// bound buffer, the interpreter an interp::TensorMapArg over the bytes.
struct LaunchMap {
  uint32_t buffer = 0;         // index into RandomLaunch::buffers
  std::vector<uint64_t> dims;  // elements, innermost first
  std::vector<uint32_t> box;
  uint32_t swizzle = 0;        // span in bytes: 0 (none), 32, 64, 128
};

struct RandomLaunch {
  Instantiation dtype = DType::F32;  // what T (and W) stand for
  Dim3 grid, threadgroup;
  std::vector<std::vector<unsigned char>> buffers;  // one per buffer parameter, storage bytes
  std::vector<uint64_t> scalars;                    // one per scalar parameter, launch bits (LaunchArgs::scalars)
  std::vector<LaunchMap> maps;                      // one per tensormap parameter, in declaration order
  std::string describe() const;                     // dtype, geometry and scalars, for reports
};

// Geometry, T, scalars and buffer contents for a program made by random_program. Inputs mix
// ordinary values with edge cases (signed zeros, infinities, NaN, denormals, INT_MIN, ...),
// except for well-conditioned programs, whose float inputs are positive and bounded. Output
// buffers start as all-ones bytes (NaN / -1), like the harness's.
// `dtypes`: the values T may take (a device without bf16 storage, say); empty = f32, f16, bf16.
RandomLaunch random_launch(const ir::Kernel& k, uint64_t seed, const RandomProgramOptions& opts = {},
                           const std::vector<DType>& dtypes = {});

// Runs `k` on a copy of the launch's buffers and returns them after the run. Verifies `k` first
// (the interpreter trusts its input); throws iron::Error on a verifier failure or a fault.
std::vector<std::vector<unsigned char>> run_launch(const ir::Kernel& k, const RandomLaunch& launch,
                                                   uint32_t lane_width);

// The one bit-for-bit rule of every fuzz comparison: two elements of storage dtype t agree when
// their bytes are equal, or when both are NaN: NaN payloads and signs are unspecified
// (docs/semantics.md), so backends may differ in them; the one op that could observe the
// difference, bitcast, only ever sees a value whose NaN the generator replaced first. signed_zeros_equal: -0 also equals +0,
// for a driver documented not to preserve the sign of zero (`iron fuzz --relax signed-zero`).
bool same_bits(DType t, const unsigned char* a, const unsigned char* b, bool signed_zeros_equal = false);

// Compares two runs' buffers element by element in each parameter's storage dtype. tol == 0:
// same_bits. tol > 0: |a - b| <= tol * max(floor, |b|)
// on decoded values (b is `want`), exact for integers. Returns "" when they agree, otherwise
// the first differing element ("buffer 'out_f'[17]: want ..., got ...").
std::string first_difference(const ir::Kernel& k, Instantiation dtype, const std::vector<std::vector<unsigned char>>& want,
                             const std::vector<std::vector<unsigned char>>& got, double tol = 0, double floor = 1,
                             bool signed_zeros_equal = false);

}  // namespace iron::fuzz
