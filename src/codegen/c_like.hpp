// Internal: the C-like emitter and the Dialect interface. The emitter walks verified IR once
// and prints one statement per instruction; a dialect supplies the spellings that differ per
// target (types, built-ins, memory access, math, lane operations, prelude and signature).
// An op a dialect cannot spell is reported through `unsupported`, located, and emission goes on.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.hpp"

#include "core/ir.hpp"

namespace iron::codegen {

struct EmitState {
  EmitState(const ir::Kernel& kernel, Instantiation inst) : k(kernel), dtype(inst) {}
  const ir::Kernel& k;
  Instantiation dtype;             // what T (and W) become
  ir::Diagnostics diags;
  std::vector<int> buffer_index;   // per param: index among buffers, or -1
  std::vector<int> scalar_index;   // per param: index among scalars, or -1
  bool uses_lane_ops = false;
  bool uses_16bit_storage = false;
  bool uses_f16 = false;
  bool uses_bf16 = false;
  bool uses_int8 = false;          // i8/u8 values or 8-bit storage (i8, u8, fp8 buffers)
  bool uses_8bit_storage = false;  // a buffer of 1-byte elements
  bool uses_int16 = false;         // i16/u16 values or buffers
  bool uses_int64 = false;         // i64/u64 values or buffers
  bool loop_check = false;         // EmitOptions::loop_limit_check (GLSL)
  bool emulate_fma = false;        // EmitOptions::emulate_fma (GLSL)
  bool poison_locals = false;      // EmitOptions::poison_register_arrays (GLSL)
  bool preserve_f32_specials = false;       // EmitOptions (GLSL)
  bool f16_round_to_nearest_even = false;   // EmitOptions (GLSL)
  // Vector groups (vectorize): per buffer parameter, the access widths in elements (each at
  // most 16 bytes) the dialect must be able to spell.
  std::map<uint32_t, std::set<int>> vector_chunks;
  // Memory that f32 atomics act on (compare-and-swap loops on the bits): buffer parameter
  // indices and TgAlloc ids. A dialect without float atomics declares these as 32-bit words.
  // Buffers atomic_add_pair acts on are in f32_atomic_params too: they need the same word view.
  std::set<uint32_t> f32_atomic_params;
  std::set<ir::Id> f32_atomic_allocs;
  bool uses_fence_device = false;
  bool uses_int64_atomics = false;  // an atomic on u64 memory (GLSL: GL_EXT_shader_atomic_int64)
  // Helper functions the body uses (names without the iron_ prefix, e.g. "div_i32"); the body is
  // emitted before the prelude, so begin() prints exactly these, in name order.
  std::set<std::string> helpers;
  // What the code may assume of the machine (lane width, limits, tile strategy).
  TargetProfile profile;
  CudaMma cuda_mma = CudaMma::Auto;  // the tile strategy (CUDA, HIP): EmitOptions or the profile
  uint32_t threadgroup[3] = {0, 0, 0};  // EmitOptions::threadgroup (CUDA; 0: any shape)
  bool tile_f64 = false;             // EmitOptions::tile_f64 (GLSL)
  // GLSL cooperative tiles (plan_glsl_tiles): the slot of every fragment value and fragment
  // variable in the lane group's part of the shared slot array, the number of slots per lane
  // group, and the var / var_load / var_store / tile_mma instructions whose result already is in
  // the slot it must end in (no copy emitted).
  bool tile_coopmat = false;  // GLSL: fragments are NV cooperative matrices (EmitOptions)
  std::map<ir::Id, int> tile_slot;
  int tile_slots = 0;
  std::set<ir::Id> tile_in_place;
  // The text of a value as the emitter refers to it (its register, or a fused value's whole
  // expression), for a tile op that spells parts of an operand's arithmetic itself.
  std::function<std::string(ir::Id)> value_text;
  // Set by the emitter for the async_copy being emitted: both of its addresses are provably
  // aligned to the copy's size (the arrays' alignment and the indices' known multiples), so the
  // dialect needs no run-time alignment check.
  bool async_copy_aligned = false;

  DType concrete(DType t) const { return ir::resolve(t, dtype); }
  // Emission is scalar: the verifier has rejected vector, fragment and token values.
  DType concrete(Type t) const { return ir::resolve(t.elem(), dtype); }
  void unsupported(const ir::Inst& in, const std::string& dialect, const std::string& what) {
    diags.error(in.loc, std::string("the ") + dialect + " dialect cannot express " + what);
  }
};

// The spellings a dialect is made of, as data: the shared defaults of Dialect read them, so a
// dialect is one of these plus overrides where a spelling differs in shape, not just in name.
struct DialectSpelling {
  const char* name = "";              // "CUDA", for messages
  // Register types (every float dtype, fp8 included, is an f32 register).
  const char* f32 = "float";
  const char* i32 = "int";
  const char* u32 = "unsigned";
  const char* boolean = "bool";
  const char* i8 = "signed char";
  const char* u8 = "unsigned char";
  const char* i16 = "short";
  const char* u16 = "unsigned short";
  const char* i64 = "long long";
  const char* u64 = "unsigned long long";
  bool c_casts = true;                // convert(): C's "((T)(x))"; false: a constructor "T(x)"
  const char* const_decl = "const ";  // what precedes an SSA value's register type
  bool inline_fused = true;           // fused values printed at their use (else declared)
  const char* float_suffix = "f";     // of an f32 literal
  const char* i64_suffix = "ll";      // of a 64-bit integer literal
  const char* u64_suffix = "ull";
  const char* float_to_bits = "__float_as_uint";  // f32 -> u32 bits
  const char* bits_to_float = "__uint_as_float";  // u32 bits -> f32
  const char* helper_prefix = "";     // before a helper function's return type
  const char* barrier = "";           // the threadgroup barrier statement
  const char* fence_threadgroup = "";
  const char* fence_device = "";
  // Appended to the name of a float math function spelled from ops.def ("floor" -> "floorf").
  const char* float_math_suffix = "";
  // Spellings that replace ops.def's default (%0.. are the operands): for every dtype, and for
  // float dtypes only (checked first).
  std::map<ir::Op, std::string> ops;
  std::map<ir::Op, std::string> float_ops;
};

class Dialect {
 public:
  explicit Dialect(DialectSpelling spelling) : sp_(std::move(spelling)) {}
  virtual ~Dialect() = default;
  const DialectSpelling& spelling() const { return sp_; }
  virtual const char* name() const { return sp_.name; }
  // Register type. 16-bit floats live in f32 registers on every dialect, holding values of their
  // dtype: the emitter rounds each 16-bit op's result through cast() (docs/semantics.md).
  virtual std::string reg_type(DType t) const;
  // Prefix of an SSA value declaration, e.g. "const float ".
  virtual std::string decl(DType t) const { return sp_.const_decl + var_type(t) + " "; }
  // Type of a mutable variable (Var) declaration.
  virtual std::string var_type(DType t) const { return reg_type(t); }
  // Whether values the fusion pass marked are printed inline at their use (else declared).
  virtual bool inline_fused() const { return sp_.inline_fused; }
  // Everything before the body statements (includes, helpers, signature, shared arrays).
  virtual void begin(EmitState& s, std::string& out) const = 0;
  virtual void end(EmitState&, std::string& out) const { out += "}\n"; }
  virtual std::string builtin(EmitState& s, const ir::Inst& in) const = 0;
  virtual std::string scalar(EmitState&, const ir::Param& p) const { return param_name(p); }
  virtual std::string load(EmitState& s, const ir::Param& p, const std::string& idx) const = 0;
  // An integer value of dtype `t` used as an element index of a buffer or threadgroup array.
  virtual std::string array_index(DType /*t*/, const std::string& idx) const { return idx; }
  virtual std::string store(EmitState& s, const ir::Param& p, const std::string& idx, const std::string& v) const = 0;
  // Constants: shared spelling; dialects supply the float suffix and how to write a float by its
  // bits (for infinities and NaN, which have no decimal literal).
  std::string literal(EmitState& s, const ir::Inst& in) const;
  virtual const char* float_suffix() const { return sp_.float_suffix; }
  // The spelling of an f32 +0.0 or -0.0 constant where the literal would not be exact ("" otherwise).
  virtual std::string float_zero(EmitState&, bool /*negative*/) const { return {}; }
  virtual std::string float_from_bits(uint32_t bits) const;
  // An op spelled from its template: the dialect's override, else ops.def's default (with the
  // float math suffix on a float function); "" when neither has one. %0.. take `a`.
  std::string spell(ir::Op op, DType t, const std::vector<std::string>& a) const;
  // Unary and ternary math and min/max/abs for one concrete dtype. The default: the shared
  // integer forms of the 8-, 16- and 64-bit dtypes, a located error for an op the dtype does
  // not take, f32 min/max through fmin_fmax, and otherwise spell(). A dialect overrides the ops
  // it computes differently and calls this for the rest.
  virtual std::string math(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const;
  virtual std::string cast(EmitState& s, const ir::Inst& in, DType from, DType to, const std::string& x) const = 0;
  // The same 32 bits read as another of f32, i32, u32 (the verifier admits nothing else).
  virtual std::string bitcast(EmitState& s, const ir::Inst& in, DType from, DType to, const std::string& x) const = 0;
  // lane_sum / lane_max of f32, i32, u32 through the dialect's iron_lane_sum / iron_lane_max
  // helpers (a located error for another dtype).
  virtual std::string lane_reduce(EmitState& s, const ir::Inst& in, DType t, const std::string& x) const;
  // f32 min/max (docs/semantics.md: one NaN operand loses, -0 < +0) and float -> i32/u32 casts
  // (truncating, saturating, NaN -> 0): helpers or built-ins, whichever is exact on the target.
  // The default calls the shared iron_fmin / iron_fmax helpers (minmax_helper).
  virtual std::string fmin_fmax(EmitState& s, bool is_max, const std::string& a, const std::string& b) const;
  // f32 division (IEEE, correctly rounded): the `/` operator, or a helper where the target's
  // `/` is not exact (GLSL: Vulkan allows 2.5 ulp).
  virtual std::string float_div(EmitState&, const std::string& a, const std::string& b) const {
    return "(" + a + " / " + b + ")";
  }
  // Definition of helper `name` (one of EmitState::helpers).
  virtual std::string helper(const std::string& name) const = 0;
  // "__device__ __forceinline__ " or "": what precedes a helper function's return type.
  virtual const char* helper_prefix() const { return sp_.helper_prefix; }
  // Integer ops with defined results on every input (division by zero, INT_MIN / -1, shifts by
  // 32 or more, signed wraparound), spelled through the shared helpers below.
  std::string int_binary(EmitState& s, ir::Op op, DType t, const std::string& a, const std::string& b,
                         DType amount_type) const;
  std::string int_neg(DType t, const std::string& x) const;
  // Float negation as a flip of the sign bit (docs/semantics.md), never an arithmetic `-x`: a
  // compiler that rewrites `-(c ? 1.0f : 0.0f)` into a conversion of `-c` turns -0 into +0
  // (seen with NVRTC on sm_90a).
  virtual std::string float_neg(const std::string& x) const;
  // The shared integer helpers (div/rem/shl/shr for every integer dtype, e.g. "div_i8"), empty
  // for another name.
  std::string int_helper(const std::string& name) const;
  // A value conversion to register type `to`: C's cast on CUDA, a constructor in GLSL. Between
  // integers it keeps the value modulo 2^bits(to) (two's complement), as docs/semantics.md says.
  virtual std::string convert(DType to, const std::string& x) const;
  // A 64-bit integer literal (suffix ll/ull on CUDA, l/ul in GLSL).
  virtual std::string int64_literal(uint64_t bits, bool is_signed) const;
  // The operands of a narrow or 64-bit integer op, widened to the unsigned register type the
  // dialects compute them in (u32 up to 32 bits, u64 for 64), so no C promotion or signed
  // overflow decides a result; convert() to the op's dtype wraps it back.
  std::string widen_unsigned(DType t, const std::string& x) const {
    return convert(int_bits(t) == 64 ? DType::U64 : DType::U32, x);
  }
  // A shift amount of any integer dtype as the u32 the shift helpers take: an amount >= 2^32
  // (a 64-bit one) becomes 64, which shifts everything out like the amount itself would.
  std::string shift_amount(DType amount_type, const std::string& b) const;
  // Float -> integer helpers for the 8-, 16- and 64-bit dtypes ("f2i8", "f2u64", ...): NaN -> 0,
  // truncate, saturate to the dtype's range (docs/semantics.md), given the target's f32 -> bits
  // spelling; empty for another name.
  std::string f2int_helper(const std::string& name, const char* to_bits) const;
  // min, max and abs of the 8-, 16- and 64-bit integer dtypes, the same text on every dialect.
  std::string int_math(ir::Op op, DType t, const std::vector<std::string>& a) const;
  // A cast between two dtypes neither of which is one of the five original ones' special cases:
  // fp8 narrowing, integers of other widths (shared by both dialects); empty when not handled.
  std::string cast_new_types(EmitState& s, DType from, DType to, const std::string& x, const std::string& as_float) const;
  // fp8 conversions: the helper call that rounds an f32 expression to fp8 and widens it back.
  std::string fp8_round(EmitState& s, DType to, const std::string& f32) const;
  // The shared f32 min/max helpers ("fmin", "fmax"), given the target's bit-cast spellings.
  std::string minmax_helper(const std::string& name, const char* to_bits, const char* from_bits) const;
  // Packed pairs where the target has no 16-bit pair arithmetic Iron trusts (GLSL, MSL): the
  // helpers of "pair_f16" / "pair_bf16", every element widened to f32, computed there and
  // narrowed once, as the scalar ops. `get` reads element i of word w, `to16` narrows float x to
  // its 16 bits (as a uint), `value` declares an element ("precise float", "const float"), and
  // `fma_odd` names the round-to-odd fma helper of the element type.
  std::string pair_helpers_via_f32(bool f16, const std::string& get, const std::string& to16, const char* value,
                                   const std::string& fma_odd) const;
  // A pair op as the call of its helper (iron_pair_<mnemonic>_<f16|bf16>, pair_get with its
  // index), recording "pair_<e>"; the dialect records the helpers those call.
  std::string pair_call(EmitState& s, const ir::Inst& in, DType elem, const std::vector<std::string>& a) const;
  // sin, cos, exp2, log2, erf, pow, log and sqrt of f32 through Iron's own helpers
  // (glsl_math.inc, glsl_exact_math.inc: the GLSL and MSL dialects), recording the helper; empty
  // for another op.
  std::string iron_math_call(EmitState& s, ir::Op op, const std::vector<std::string>& a) const;
  // Packed 16-bit pairs (docs/semantics.md "Packed 16-bit pairs"): a pair register is a u32 word
  // holding the two 16-bit patterns, element 0 in the low half. `elem` is f16 or bf16; `a` the
  // operand spellings (f32 registers for pair, words otherwise). Returns a word for pair and the
  // element-wise ops, an f32 register value for pair_get.
  virtual std::string pair_op(EmitState& s, const ir::Inst& in, DType elem, const std::vector<std::string>& a) const = 0;
  virtual std::string barrier() const { return sp_.barrier; }
  // Lane operations other than lane_sum/lane_max: shuffles (a = value, source lane), lane_min/
  // and/or, prefix sums and votes, with the results of docs/semantics.md for any lane width.
  virtual std::string lane_op(EmitState& s, const ir::Inst& in, DType t, const std::vector<std::string>& a) const = 0;
  // An atomic; `a` is index, [expected,] value. Returns the old value; statements it needs
  // before that expression (a compare-and-swap loop) go to `lines`. `reg` names the result.
  virtual std::string atomic(EmitState& s, const ir::Inst& in, DType t, const std::string& reg,
                             const std::vector<std::string>& a, std::vector<std::string>& lines) const = 0;
  // atomic_add_pair (docs/semantics.md) on buffer `p` (f16 or bf16) at pair index `pair`: the
  // statements go to `lines`; `reg` is a fresh name for temporaries.
  virtual void atomic_add_pair(EmitState& s, const ir::Inst& in, const ir::Param& p, const std::string& reg,
                               const std::string& pair, const std::string& lo, const std::string& hi,
                               std::vector<std::string>& lines) const = 0;
  // fence_threadgroup / fence_device as a statement.
  virtual std::string fence(ir::Op op) const {
    return op == ir::Op::FenceDevice ? sp_.fence_device : sp_.fence_threadgroup;
  }
  // An element of an f32 threadgroup array that f32 atomics act on (EmitState::f32_atomic_allocs)
  // as a register value, and its store: a target whose atomics need integer memory declares
  // such an array as 32-bit words and converts here.
  virtual std::string tg_word_load(const std::string& elem) const { return elem; }
  virtual std::string tg_word_store(const std::string& elem, const std::string& v) const { return elem + " = " + v; }
  // A vector group: fills `array[0..width)` (register type) from buffer elements idx..idx+width,
  // or stores `values` there; idx is a multiple of width. Accesses are split into chunks of
  // chunk_elems(dtype, width) elements (16 bytes at most).
  virtual void load_group(EmitState& s, const ir::Param& p, const std::string& idx, int width,
                          const std::string& array, std::vector<std::string>& lines) const = 0;
  virtual void store_group(EmitState& s, const ir::Param& p, const std::string& idx,
                           const std::vector<std::string>& values, std::vector<std::string>& lines) const = 0;
  // A threadgroup element `elem` of an array of dtype t as a register value, and the statement
  // storing register value v into it: 16-bit arrays hold 16-bit values (a store rounds to
  // nearest even, a load widens exactly), like 16-bit buffers.
  virtual std::string tg_load(EmitState&, DType /*t*/, const std::string& elem) const { return elem; }
  virtual std::string tg_store(EmitState&, DType /*t*/, const std::string& elem, const std::string& v) const {
    return elem + " = " + v;
  }
  // Asynchronous copies (docs/dsl.md "Asynchronous copies"): a dialect that spells them itself
  // (CUDA: cp.async) fills `lines` and returns true; otherwise the emitter writes a plain copy
  // of the count elements (0 past `valid`), and commit and wait are nothing.
  virtual bool async_copy(EmitState&, const std::string& /*tg*/, const std::string& /*dst*/, const ir::Param& /*p*/,
                          const std::string& /*src*/, const std::string& /*valid*/, int64_t /*count*/,
                          size_t /*elem_bytes*/, std::vector<std::string>& /*lines*/) const {
    return false;
  }
  // mbarriers, bulk copies, the proxy fence and setmaxnreg (ir::is_hopper_op): a dialect that
  // expresses them fills `lines` and returns true; otherwise the emitter reports the op as one
  // the dialect cannot express. `bar` is the barrier's element ("tg_b[i]"; bulk_copy: operands
  // 3 and 4), `dst` the copy's first destination element, `src` its source index (bulk_store:
  // `dst` the array element it reads first, `src` the buffer index it writes first), `extra` the
  // third operand (the arrival count, byte count or parity). tma_load_2d / tma_store_2d: `dst`
  // the array's first box element, `src` the x coordinate, `extra` the y, `bar` (load) the barrier.
  virtual bool hopper_op(EmitState&, const ir::Inst& /*in*/, const std::string& /*bar*/, const std::string& /*dst*/,
                         const std::string& /*src*/, const std::string& /*extra*/,
                         std::vector<std::string>& /*lines*/) const {
    return false;
  }
  virtual void async_commit(std::vector<std::string>& /*lines*/) const {}
  virtual void async_wait(int64_t /*pending*/, std::vector<std::string>& /*lines*/) const {}
  virtual std::string tg_name(const ir::Kernel& k, const ir::Inst& alloc) const { return "tg_" + k.strings[size_t(alloc.attr(ir::Attr::Name))]; }
  virtual std::string param_name(const ir::Param& p) const { return "p_" + p.name; }

 protected:
  DialectSpelling sp_;
};

// Cooperative tiles (tiles.cpp). The C or GLSL type of a fragment value; the fragment types and
// functions a kernel with tiles needs, printed before its entry point (empty without tiles); the
// statements of one tile op (`lines`, declaring v<id> for loads) or its value expression (`value`:
// fill, mma, get), given the spellings of its operands.
std::string tile_type(const EmitState& s, Type t);
std::string tile_prelude(const EmitState& s, bool cuda);
void tile_op(EmitState& s, const Dialect& d, ir::Id id, const std::vector<std::string>& operands,
             std::vector<std::string>& lines, std::string& value);
// GLSL: assigns the shared-memory slots of the kernel's fragments (tiles.cpp); called once before
// the body is emitted. And the statements of a var / var_load / var_store of fragment type.
void plan_glsl_tiles(EmitState& s);
// The element index a tile load reads for element (r, c) of its fragment (row and column
// spellings), with its column-major flag and swizzle applied (docs/semantics.md "Tile layouts").
// log2 of the largest power of two every value of `id` is known to be a multiple of (32: zero),
// from the u32 arithmetic that computes it; 0 when nothing is known (tiles.cpp).
uint32_t known_pow2(const ir::Kernel& k, ir::Id id, int depth = 0);
// `outer`, when given, is a part of the offset that is a multiple of the swizzle's period
// 2^(base + shift + bits), added outside the swizzle: swizzle(P + x) = P + swizzle(x) for such P.
std::string tile_load_index(const ir::Inst& in, const std::string& off, const std::string& stride,
                            const std::string& r, const std::string& c, const std::string& outer = {});
void glsl_tile_var_op(EmitState& s, const Dialect& d, ir::Id id, std::vector<std::string>& lines);

std::unique_ptr<Dialect> make_cuda_dialect();
std::unique_ptr<Dialect> make_hip_dialect();
std::unique_ptr<Dialect> make_glsl_dialect();
std::unique_ptr<Dialect> make_msl_dialect();
// MSL tile ops (simdgroup_matrix; dialect_msl.cpp), reached through tile_op.
void msl_tile_op(EmitState& s, const Dialect& d, ir::Id id, const std::vector<std::string>& operands,
                 std::vector<std::string>& lines, std::string& value);

// Elements per wide access for a group of `width` elements of dtype d: 16 bytes at most.
inline int chunk_elems(DType d, int width) {
  int max_elems = 16 / int(dtype_size(d));
  return width < max_elems ? width : max_elems;
}

// Shared literal spelling: exact decimal for f32 with a float suffix where the dialect wants one.
std::string float_literal(float v, const char* suffix);
// A helper given as one stringized line (the .inc files) broken after `{`, `}` and statement
// `;` and indented by brace depth, so the generated source stays readable (GLSL, MSL).
std::string helper_lines(const std::string& text);

}  // namespace iron::codegen
