// The scalar semantics of every pure IR op, shared by the SIMT interpreter and the constant
// folder so that folding and interpretation agree bit for bit. A value is a 64-bit register
// pattern read through its dtype: every float dtype (f32, f16, bf16, the fp8 formats) is an
// IEEE f32 register in the low 32 bits (an f16 or bf16 register always holds a value of its
// dtype: arithmetic on them rounds after every op); an integer of any width is its value in two's
// complement, sign-extended (signed dtypes) or zero-extended (unsigned) to 64 bits
// (num::int_wrap); bool is 0 or 1.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "core/ir.hpp"

namespace iron::eval {

struct Scalar {
  uint64_t bits = 0;

  static Scalar of_f32(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return Scalar{u};
  }
  static Scalar of_i32(int32_t i) { return Scalar{uint64_t(int64_t(i))}; }
  static Scalar of_u32(uint32_t u) { return Scalar{u}; }
  static Scalar of_i64(int64_t i) { return Scalar{uint64_t(i)}; }
  static Scalar of_u64(uint64_t u) { return Scalar{u}; }
  static Scalar of_bool(bool b) { return Scalar{b ? 1u : 0u}; }

  float f() const {
    uint32_t u = uint32_t(bits);
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  }
  int32_t i() const { return int32_t(bits); }
  uint32_t u() const { return uint32_t(bits); }
  int64_t i64() const { return int64_t(bits); }
  uint64_t u64() const { return bits; }
  bool b() const { return bits != 0; }
};

// The register value of a Const instruction. `concrete` substitutes T. A float constant is a
// value of its dtype: rounded to f32, then to f16 / bf16 for those (the emitters print the same).
Scalar const_value(const ir::Inst& in, Instantiation concrete);

// True for the ops eval_pure computes (arithmetic, math, logic, comparison, select, cast).
bool is_pure_evaluable(ir::Op op);

// True for the ops whose results docs/semantics.md bounds rather than fixes (exp, log, tanh,
// rsqrt, sin, cos, exp2, log2, erf, pow): const_fold leaves them alone.
bool is_bounded_math(ir::Op op);

// Evaluates one pure op on `n` operand values. `result_type` is the instruction's dtype;
// `operand_type` is the dtype of operand 0 (for Select: of operand 1, the selected values).
// Generic (T) counts as a float register, except that a Cast to T is rejected: its rounding
// depends on the concrete dtype. Every op is defined on every input of the dtypes the verifier
// admits (docs/semantics.md); returns false with `error` set only for an op/dtype it does not
// evaluate.
bool eval_pure(ir::Op op, DType result_type, DType operand_type, const Scalar* args, int n, Scalar& out,
               std::string& error);

// Packed 16-bit pairs (vec2<f16>, vec2<bf16>): a register holds the two elements' 16-bit
// patterns in its low 32 bits, element 0 in bits 0..15 (docs/semantics.md "Packed 16-bit
// pairs"). eval_pair computes pair (two f32 registers holding values of `elem`), pair_get
// (operand: a pair; `index` 0 or 1) and the element-wise add, sub, mul, fma, min, max, neg and
// abs, each element exactly as the scalar op on `elem`.
bool eval_pair(ir::Op op, DType elem, int64_t index, const Scalar* args, int n, Scalar& out, std::string& error);

// f32 min and max with an order on signed zeros (-0 < +0) and NaN ignored when the other
// operand is a number: the result does not depend on operand order (cse relies on min and max
// being commutative). Both NaN gives NaN. The dialects emit the same rule explicitly.
float fmin_ordered(float x, float y);
float fmax_ordered(float x, float y);

}  // namespace iron::eval
