// The op conformance suite (`iron conformance`): every computational op of the op table
// (ops.def: arithmetic, math, bitwise, comparison, select, cast, bitcast) and every lane
// operation (reductions, scans, shuffles, votes), at every dtype (and,
// for cast and bitcast, every pair of dtypes) the verifier admits, as one generated kernel per
// op and type. Each kernel applies the op element-wise to the product of its operands'
// edge values (signed zeros, infinities, NaN, subnormals, rounding ties, MIN / MAX, shift
// amounts around the width, ...); the oracle is the op's one definition, eval::eval_pure (the
// function the interpreter and the constant folder share). The launches are fuzz RandomLaunch
// values and the interpreter runs them through fuzz::run_launch: the suite is the fuzzer's
// machinery with a deterministic, exhaustive program list instead of random programs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.hpp"
#include "fuzz/random_program.hpp"

namespace iron::fuzz {

struct ConformanceCase {
  std::string name;                  // "conformance.add.f32", "conformance.cast.f32.i8"
  ir::Op op = ir::Op::Add;
  std::vector<DType> operands;       // operand dtypes, in order
  DType result = DType::F32;         // the op's result dtype (stored as u8 when bool)
  ir::Kernel kernel;                 // verified, unoptimized
  RandomLaunch launch;               // inputs (edge-value products), output initially all ones
  std::vector<unsigned char> want;   // the oracle's output buffer (storage bytes)
  std::vector<std::vector<uint64_t>> args;  // per element, the operands' register values (reports)
  // Lane operations: their result depends on the other lanes of the group and the lane width,
  // so the oracle is the interpreter (where eval_pure's lane counterparts live) run at the
  // device's lane width; `want` is empty until then.
  bool lane = false;
};

// Every case whose name contains `filter` (empty: all), in op-table order.
std::vector<ConformanceCase> conformance_cases(const std::string& filter = "");

// The text IR of the warpgroup-tile case (conformance.tile_wg_mma.<t>.swz<code>): the unit tests
// mutate it (tests/unit/wgmma_test.cpp).
// rs: A from registers (tile_wg_mma_rs); n: the accumulator's width (16, or a warpgroup
// accumulator's: conformance.tile_wg_mma.n<n>.<t>.swz<code>); async: the products issued, then
// committed and waited (conformance.tile_wg_mma.async.*).
std::string warpgroup_kernel_text(const std::string& name, DType t, int64_t code, bool rs = false, uint32_t n = 16,
                                  bool async = false);

// "" when output buffer `got` agrees with the case's oracle on every element (bit for bit with
// NaN == NaN for exact ops; the bound docs/semantics.md states for exp, log, tanh, rsqrt, sin,
// cos, exp2, log2, erf and pow), otherwise the first disagreeing element with its operands.
// skip_subnormals: leave out elements with an f32-subnormal operand or expected result (a device
// that flushes f32 subnormals, docs/semantics.md).
// `want`: the oracle's output when the case's own is computed at run time (lane operations).
std::string conformance_difference(const ConformanceCase& c, const std::vector<unsigned char>& got,
                                   bool skip_subnormals, const std::vector<unsigned char>* want = nullptr);

// `iron-runner conformance [--backend interp|vulkan|cuda|msl|nvrtc] [-f FILTER] [-o DIR]`: runs
// every case (msl: emits it, into DIR/msl when given; nvrtc: emits CUDA and compiles it for
// sm_90a, no GPU needed) and streams `device`, `conformance_case` and
// `conformance_summary` messages. Returns 0 when every case passed, 1 otherwise, 2 on bad usage.
int conformance_main(int argc, char** argv);

}  // namespace iron::fuzz
