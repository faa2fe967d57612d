// Iron's kernel DSL: a tracing builder. A kernel is an ordinary C++ function; Iron calls it
// once with symbolic handles and every operator on a handle appends IR. Host C++ around the
// calls is compile-time meta-programming (a host `for` unrolls); device control flow is
// explicit: if_(...).else_(...), for_(...). A traced value never converts to bool, so
// `if (x < n)` on a traced value does not compile.
//
// Operators are non-template functions defined in src/dsl/tracer.cpp; each operand captures
// the DSL source line through `Operand`, so every IR op and every diagnostic names file:line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <type_traits>

#include "iron/types.hpp"

namespace iron::dsl {

using SrcLoc = std::source_location;

inline constexpr DType T = DType::Generic;  // the kernel's generic dtype
inline constexpr DType W = DType::GenericW;  // its second type parameter (weights beside T)
inline constexpr DType f32 = DType::F32;
inline constexpr DType f16 = DType::F16;
inline constexpr DType bf16 = DType::BF16;
inline constexpr DType i32 = DType::I32;
inline constexpr DType u32 = DType::U32;
inline constexpr DType boolean = DType::Bool;
inline constexpr DType i8 = DType::I8;
inline constexpr DType u8 = DType::U8;
inline constexpr DType i16 = DType::I16;
inline constexpr DType u16 = DType::U16;
inline constexpr DType i64 = DType::I64;
inline constexpr DType u64 = DType::U64;
inline constexpr DType f8e4m3 = DType::F8E4M3;  // storage only: cast to f32 to compute
inline constexpr DType f8e5m2 = DType::F8E5M2;  // storage only: cast to f32 to compute

// A traced value: the id of the IR instruction that defines it, and its dtype.
class Expr {
 public:
  Expr() = default;
  Expr(uint32_t id, DType type) : id_(id), type_(type) {}
  uint32_t id() const { return id_; }
  DType dtype() const { return type_; }
  // A device value has no host truth value: branch with if_(cond, ...) instead.
  explicit operator bool() const = delete;

 private:
  uint32_t id_ = UINT32_MAX;
  DType type_ = DType::Void;
};

class VarBase;
class ElemRef;
class TgRef;

// Anything usable as an operand: a traced value, a variable, a buffer element, or a host
// literal (which takes the dtype of the other operand). Captures the caller's source line.
class Operand {
 public:
  Operand(Expr e, SrcLoc loc = SrcLoc::current());
  Operand(const VarBase& v, SrcLoc loc = SrcLoc::current());
  Operand(const ElemRef& r, SrcLoc loc = SrcLoc::current());
  Operand(const TgRef& r, SrcLoc loc = SrcLoc::current());
  Operand(int v, SrcLoc loc = SrcLoc::current()) : Operand(int64_t(v), false, loc) {}
  Operand(unsigned v, SrcLoc loc = SrcLoc::current()) : Operand(int64_t(v), false, loc) {}
  Operand(long v, SrcLoc loc = SrcLoc::current()) : Operand(int64_t(v), false, loc) {}
  Operand(unsigned long v, SrcLoc loc = SrcLoc::current()) : Operand(int64_t(v), false, loc) {}
  Operand(long long v, SrcLoc loc = SrcLoc::current()) : Operand(int64_t(v), false, loc) {}
  Operand(unsigned long long v, SrcLoc loc = SrcLoc::current()) : Operand(int64_t(v), false, loc) {}
  Operand(float v, SrcLoc loc = SrcLoc::current()) : Operand(double(v), true, loc) {}
  Operand(double v, SrcLoc loc = SrcLoc::current()) : Operand(v, true, loc) {}

  enum class Kind : uint8_t { Value, IntLit, FloatLit };
  Kind kind;
  Expr value;
  int64_t i = 0;
  double f = 0;
  const char* file;
  uint32_t line;

 private:
  Operand(int64_t v, bool, SrcLoc loc);
  Operand(double v, bool, SrcLoc loc);
};

// Arithmetic, bitwise, logical and comparison operators.
Expr operator+(Operand a, Operand b);
Expr operator-(Operand a, Operand b);
Expr operator*(Operand a, Operand b);
Expr operator/(Operand a, Operand b);
Expr operator%(Operand a, Operand b);
Expr operator&(Operand a, Operand b);
Expr operator|(Operand a, Operand b);
Expr operator^(Operand a, Operand b);
Expr operator<<(Operand a, Operand b);
Expr operator>>(Operand a, Operand b);
Expr operator&&(Operand a, Operand b);
Expr operator||(Operand a, Operand b);
Expr operator<(Operand a, Operand b);
Expr operator<=(Operand a, Operand b);
Expr operator>(Operand a, Operand b);
Expr operator>=(Operand a, Operand b);
Expr operator==(Operand a, Operand b);
Expr operator!=(Operand a, Operand b);
Expr operator-(Operand a);
Expr operator!(Operand a);
Expr operator~(Operand a);
// Exact-match forms: with two traced values the built-in &&, || and ! would otherwise compete
// (through the deleted conversion to bool) and make the call ambiguous.
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

// Math. exp/log/sqrt/rsqrt/tanh take floats; min/max/abs any numeric dtype.
Expr exp(Operand x);
Expr log(Operand x);
Expr sqrt(Operand x);
Expr rsqrt(Operand x);
Expr tanh(Operand x);
Expr abs(Operand x);
Expr min(Operand a, Operand b);
Expr max(Operand a, Operand b);
Expr fma(Operand a, Operand b, Operand c);
// Both sides are evaluated: a select never guards a load (put loads behind if_ instead).
Expr select(Operand cond, Operand if_true, Operand if_false);

// Packed 16-bit pairs (docs/dsl.md "Packed pairs"): two f16 or bf16 values (or T, when every
// dtype of T is one of them) computed together, element by element with the scalar rules:
// CUDA's __half2 / __nv_bfloat162 instructions where the arch has them.
class Pair {
 public:
  Pair() = default;
  Pair(uint32_t id, DType elem) : id_(id), elem_(elem) {}
  uint32_t id() const { return id_; }
  DType elem() const { return elem_; }

 private:
  uint32_t id_ = UINT32_MAX;
  DType elem_ = DType::Void;
};
// A pair of two values of one dtype (a literal takes the other operand's dtype).
Pair pair(Operand lo, Operand hi);
// Element 0 (lo) or 1 (hi) of a pair, as a scalar of its dtype.
Expr get(Pair p, uint32_t index, SrcLoc loc = SrcLoc::current());
Pair operator+(Pair a, Pair b);
Pair operator-(Pair a, Pair b);
Pair operator*(Pair a, Pair b);
Pair operator-(Pair a);
Pair fma(Pair a, Pair b, Pair c);
Pair min(Pair a, Pair b);
Pair max(Pair a, Pair b);
Pair abs(Pair a);

Expr cast_to(Operand x, DType to);
template <DType D>
Expr cast(Operand x) {
  return cast_to(x, D);
}

// More math (docs/semantics.md). floor, ceil, rint (round half to even), trunc: exact, on
// floats. sin, cos, exp2, log2, erf, pow: on floats, within the bounds docs/semantics.md states.
// mulhi (the high 32 bits of the 64-bit product), popcount, clz (clz(0) = 32): on i32 and u32.
// bitcast<D>(x): the same bits read as D, between dtypes of one width: f32, i32, u32 (32 bits);
// f16, bf16, i16, u16 (16 bits: a 16-bit float gives the bits of its f16 or bf16 value);
// i64, u64 (64 bits).
Expr floor(Operand x);
Expr ceil(Operand x);
Expr rint(Operand x);
Expr trunc(Operand x);
Expr sin(Operand x);
Expr cos(Operand x);
Expr exp2(Operand x);
Expr log2(Operand x);
Expr erf(Operand x);
Expr pow(Operand x, Operand y);
Expr mulhi(Operand a, Operand b);
Expr popcount(Operand x);
Expr clz(Operand x);
Expr bitcast_to(Operand x, DType to);
template <DType D>
Expr bitcast(Operand x) {
  return bitcast_to(x, D);
}

// Built-ins. Which ones a kernel may read depends on its mode (checked at registration; the
// table is in docs/dsl.md "Modes"): Elementwise binds thread_id(0) (the flat global thread
// index), Grid3D thread_id(0..2); Reduction binds program_id (threadgroup index), local_id,
// group_size, num_programs and the lane built-ins; Tile2D the first four in 2-D; SimdGroup2D
// program_id, num_programs and the lane built-ins.
Expr thread_id(int axis = 0, SrcLoc loc = SrcLoc::current());
// thread_id's value as a u64, computed in 64 bits (it never wraps). A kernel that reads it and
// never the 32-bit thread_id may be dispatched with more than 2^32 - 1 threads (docs/dsl.md,
// "64-bit indexing"); the modes that bind thread_id bind it.
Expr thread_id64(int axis = 0, SrcLoc loc = SrcLoc::current());
Expr program_id(int axis = 0, SrcLoc loc = SrcLoc::current());
Expr local_id(int axis = 0, SrcLoc loc = SrcLoc::current());
Expr group_size(int axis = 0, SrcLoc loc = SrcLoc::current());
Expr num_programs(int axis = 0, SrcLoc loc = SrcLoc::current());
Expr lane_id(SrcLoc loc = SrcLoc::current());
Expr lane_width(SrcLoc loc = SrcLoc::current());
Expr simd_group_id(SrcLoc loc = SrcLoc::current());
Expr num_simd_groups(SrcLoc loc = SrcLoc::current());

// Synchronisation and reductions: barrier and threadgroup memory in Reduction, Tile2D and
// SimdGroup2D; lane_* and group_* in Reduction and SimdGroup2D. lane_* reduce across one lane group
// (warp / subgroup); group_* across the whole threadgroup, every thread receiving the result.
// Every thread of the threadgroup must reach them (no divergent calls).
void barrier(SrcLoc loc = SrcLoc::current());
Expr lane_sum(Operand x);
Expr lane_max(Operand x);
Expr group_sum(Operand x);
Expr group_max(Operand x);

// A non-owning reference to a callable, so control-flow helpers need no std::function.
template <class Sig>
class FnRef;
template <class R, class... A>
class FnRef<R(A...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FnRef>>>
  FnRef(F&& f)  // NOLINT: implicit by design
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, A... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(a...); }) {}
  R operator()(A... a) const { return call_(obj_, a...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

class IfChain {
 public:
  explicit IfChain(uint32_t inst) : inst_(inst) {}
  void else_(FnRef<void()> body);

 private:
  uint32_t inst_;
};
IfChain if_(Operand cond, FnRef<void()> then_body);
// for (i = begin; i < end; i += step); the body receives i.
void for_(Operand begin, Operand end, Operand step, FnRef<void(Expr)> body);
void for_(Operand begin, Operand end, FnRef<void(Expr)> body);

// A mutable local. `Var<f32> acc = 0.0f;` then `acc += x;`.
class VarBase {
 public:
  VarBase(DType type, Operand init);
  VarBase(const VarBase&) = delete;
  VarBase& operator=(const VarBase& other);
  // Exact-match overloads keep `v = expr` unambiguous next to Var's converting constructors.
  // The store takes the location of the value it stores.
  void operator=(Expr v);
  void operator=(const ElemRef& v);
  void operator=(float v);
  void operator=(double v);
  void operator=(int v);
  void operator=(unsigned v);
  void operator=(Operand v);
  void operator+=(Operand v);
  void operator-=(Operand v);
  void operator*=(Operand v);
  void operator/=(Operand v);
  uint32_t id() const { return id_; }
  DType dtype() const { return type_; }

 private:
  uint32_t id_;
  DType type_;
};
template <DType D>
class Var : public VarBase {
 public:
  Var(Expr init, SrcLoc loc = SrcLoc::current()) : VarBase(D, Operand(init, loc)) {}
  Var(const ElemRef& init, SrcLoc loc = SrcLoc::current()) : VarBase(D, Operand(init, loc)) {}
  Var(int init, SrcLoc loc = SrcLoc::current()) : VarBase(D, Operand(init, loc)) {}
  Var(unsigned init, SrcLoc loc = SrcLoc::current()) : VarBase(D, Operand(init, loc)) {}
  Var(float init, SrcLoc loc = SrcLoc::current()) : VarBase(D, Operand(init, loc)) {}
  Var(double init, SrcLoc loc = SrcLoc::current()) : VarBase(D, Operand(init, loc)) {}
  using VarBase::operator=;
  Var& operator=(const Var& other) {
    VarBase::operator=(static_cast<const VarBase&>(other));
    return *this;
  }
};

// Global memory: a kernel parameter, indexed with [] to load or store one element.
class Buffer;
class ElemRef {
 public:
  ElemRef(uint32_t param, DType type, Expr index, const char* file, uint32_t line)
      : param_(param), type_(type), index_(index), file_(file), line_(line) {}
  void operator=(Operand v);
  void operator=(const ElemRef& v);
  void operator+=(Operand v);
  uint32_t param() const { return param_; }
  DType dtype() const { return type_; }
  Expr index() const { return index_; }
  const char* file() const { return file_; }
  uint32_t line() const { return line_; }

 private:
  uint32_t param_;
  DType type_;
  Expr index_;
  const char* file_;
  uint32_t line_;
};
class Buffer {
 public:
  Buffer(uint32_t param, DType type) : param_(param), type_(type) {}
  ElemRef operator[](Operand index) const;
  DType dtype() const { return type_; }
  uint32_t param() const { return param_; }

 private:
  uint32_t param_;
  DType type_;
};

// Threadgroup (shared) memory: `threadgroup_alloc` names must be unique in the kernel.
class TgRef {
 public:
  TgRef(uint32_t alloc, DType type, Expr index, const char* file, uint32_t line)
      : alloc_(alloc), type_(type), index_(index), file_(file), line_(line) {}
  void operator=(Operand v);
  void operator=(const TgRef& v);
  uint32_t alloc() const { return alloc_; }
  DType dtype() const { return type_; }
  Expr index() const { return index_; }
  const char* file() const { return file_; }
  uint32_t line() const { return line_; }

 private:
  uint32_t alloc_;
  DType type_;
  Expr index_;
  const char* file_;
  uint32_t line_;
};
class TgBuffer {
 public:
  TgBuffer(uint32_t alloc, DType type) : alloc_(alloc), type_(type) {}
  TgRef operator[](Operand index) const;
  DType dtype() const { return type_; }
  uint32_t alloc() const { return alloc_; }

 private:
  uint32_t alloc_;
  DType type_;
};
TgBuffer threadgroup_alloc(const char* name, DType type, uint32_t count, SrcLoc loc = SrcLoc::current());
// The same at an alignment of `align` bytes (a power of two, at most 1024: a wgmma operand's
// swizzle atom needs that much; the element size is the least alignment an array gets).
TgBuffer threadgroup_alloc(const char* name, DType type, uint32_t count, uint32_t align,
                           SrcLoc loc = SrcLoc::current());
// Sized at dispatch: `per` x the value of scalar parameter `size` (a u32 or i32 constexpr_)
// elements. CUDA allocates it in dynamic shared memory, Vulkan sizes it with a specialization
// constant, the interpreter per dispatch; the dispatch check adds it to the kernel's total.
TgBuffer threadgroup_alloc_dynamic(const char* name, DType type, Expr size, uint32_t per = 1, uint32_t align = 0,
                                   SrcLoc loc = SrcLoc::current());
// A view of `base`'s bytes from byte `byte_offset` (a multiple of 16) as `count` elements of
// `type`, with no memory of its own: a phase of the kernel that is done with `base` (a GEMM's
// staging tiles) reuses its memory (the epilogue's scratch). The views take turns: a barrier
// separates the last access through one from the first through another when either writes, and
// a view reads only what was written through it (docs/semantics.md "Threadgroup aliases"; the
// verifier and the interpreter check both). CUDA and MSL point into the base's bytes; GLSL,
// which cannot view a shared array as another type, gives the alias an array of its own.
TgBuffer threadgroup_alias(const char* name, const TgBuffer& base, uint32_t byte_offset, DType type, uint32_t count,
                           SrcLoc loc = SrcLoc::current());
// A thread-private register array of `count` elements (at most 1024), indexed like a
// threadgroup array (`a[i] = v`, `a[i]` as an operand). Every index must be a constant once
// loops with constant trip counts are unrolled; one that is not is a located error at
// compilation, never a silent spill to memory. Elements start undefined (the interpreter
// reports a read before the thread's first write). Names are unique in the kernel.
TgBuffer local_array(const char* name, DType type, uint32_t count, SrcLoc loc = SrcLoc::current());

// Parameters, declared in the body in binding order. A buffer's extent (the elements the kernel
// may touch) is the product of the listed scalar parameters and integer literals; it is checked
// against the bound buffer before every dispatch.
using Extent = std::initializer_list<Operand>;
Buffer input(const char* name, DType type, Extent extent, SrcLoc loc = SrcLoc::current());
Buffer output(const char* name, DType type, Extent extent, SrcLoc loc = SrcLoc::current());
Buffer inout(const char* name, DType type, Extent extent, SrcLoc loc = SrcLoc::current());
// Declared facts (docs/dsl.md#specialization). A buffer may declare the byte alignment of its
// bound element 0, `input("x", T, {n}, aligned(16))`: a power of two from one element to 256;
// every dispatch checks it, and vectorize forms accesses no wider than it (undeclared: 16, the
// alignment of every allocation).
struct BufferFacts {
  uint32_t align = 0;
};
BufferFacts aligned(uint32_t bytes);
Buffer input(const char* name, DType type, Extent extent, BufferFacts facts, SrcLoc loc = SrcLoc::current());
Buffer output(const char* name, DType type, Extent extent, BufferFacts facts, SrcLoc loc = SrcLoc::current());
Buffer inout(const char* name, DType type, Extent extent, BufferFacts facts, SrcLoc loc = SrcLoc::current());
// Declares that buffer parameters `a` and `b` (both declared already) may be bound to the same
// buffer. Without it a dispatch binding one buffer to two parameters, either of them written,
// is rejected; with it the CUDA parameters lose __restrict__ and passes stop treating an `input`
// among them as read-only memory.
void aliases(const char* a, const char* b, SrcLoc loc = SrcLoc::current());
// Declares that buffer parameter `buffer` accepts a strided view (Context::view with a stride)
// whose element stride is the integer constexpr `stride` (declared before it): element j of
// the view is buffer[j * stride], and dispatch checks that `stride` is the view's stride.
// Without it the parameter needs a contiguous buffer and a strided view is refused by name.
void strided(const char* buffer, const char* stride, SrcLoc loc = SrcLoc::current());
// A by-value structure parameter (a `blob<bytes,align>`): `bytes` bytes (a multiple of 4)
// aligned to `align` (a power of two from 4 to 128), passed whole at dispatch
// (ScalarValue::blob) and read as u32 words: blob[i]. CUDA (__grid_constant__), Vulkan (push
// constants) and the interpreter run it; MSL and HIP refuse it by name.
Buffer blob(const char* name, uint32_t bytes, uint32_t align, SrcLoc loc = SrcLoc::current());
// A TMA tensor map parameter (128 bytes, 64-aligned), encoded at dispatch from a TensorMap
// value by the CUDA driver; CUDA only. Its words read like a blob's (the driver's encoding).
Buffer tensor_map(const char* name, SrcLoc loc = SrcLoc::current());
// A scalar set per dispatch (a "constexpr" of the dispatch call).
Expr constexpr_(const char* name, DType type, SrcLoc loc = SrcLoc::current());
// The same with declared facts, combined with |: `constexpr_("d", u32, specialize() |
// multiple_of(8))`. specialize(): each dispatch's value is baked into the code compiled for it
// (loops bounded by it fold and unroll; one pipeline per value, a bounded number kept per
// kernel). multiple_of(k): every dispatch value is a multiple of k (a power of two, integer
// scalars), which the passes use and every dispatch checks (a breaking one is rejected naming
// this declaration).
struct ScalarFacts {
  bool specialize = false;
  uint64_t multiple_of = 0;
};
ScalarFacts specialize();
ScalarFacts multiple_of(uint64_t k);
ScalarFacts operator|(ScalarFacts a, ScalarFacts b);
Expr constexpr_(const char* name, DType type, ScalarFacts facts, SrcLoc loc = SrcLoc::current());

// Device functions: reusable bodies registered with IRON_DEVICE_FN and inlined into the kernels
// that call them by the kernel_inline pass. Inside a function, arg(i, dtype) reads argument i
// and ret(value) returns (the last statement). Functions read no buffers and no built-ins.
Expr arg(int index, DType type, SrcLoc loc = SrcLoc::current());
void ret(Operand value);
Expr call(const char* function, std::initializer_list<Operand> args, SrcLoc loc = SrcLoc::current());

// Lane operations (Reduction, SimdGroup2D), across one lane group: every lane of the group must reach
// them. Shuffles return `x` of a source lane: lane `src` (shuffle), lane_id ^ mask (xor),
// lane_id - delta (up), lane_id + delta (down); the lane index is u32, and a source outside the
// lane group leaves each lane its own `x` (docs/semantics.md). lane_broadcast's lane must be the
// same in every lane of the group.
Expr lane_shuffle(Operand x, Operand src_lane);
Expr lane_shuffle_xor(Operand x, Operand lane_mask);
Expr lane_shuffle_up(Operand x, Operand delta);
Expr lane_shuffle_down(Operand x, Operand delta);
Expr lane_broadcast(Operand x, Operand lane);
// Reductions (every lane receives the result): min of f32/i32/u32, bitwise and/or of integers.
Expr lane_min(Operand x);
Expr lane_and(Operand x);
Expr lane_or(Operand x);
// Prefix sums over the lane group in lane order (f32, i32, u32): lane l receives x[0] + .. +
// x[l] (inclusive) or x[0] + .. + x[l-1], 0 in lane 0 (exclusive).
Expr lane_inclusive_sum(Operand x);
Expr lane_exclusive_sum(Operand x);
// Votes on a bool: ballot is a u32 with bit i set when lane i voted true (a 64-wide lane group
// gives each 32-lane half its own mask); any / all are bool.
Expr lane_ballot(Operand cond);
Expr lane_any(Operand cond);
Expr lane_all(Operand cond);
// Prefix sums over the whole threadgroup, in flat local-id order (Reduction, SimdGroup2D; every thread
// must reach the call): built from the lane prefix sums, a threadgroup array of per-lane-group
// totals and two barriers.
Expr group_inclusive_sum(Operand x);
Expr group_exclusive_sum(Operand x);

// Atomics on an element of an `inout` buffer or of threadgroup memory holding f32, i32 or u32
// (and/or: integers only), or u64 (add, exchange and cas only). Each returns the value the element held before. They never race with
// each other; a plain access to the same element by another thread needs a barrier between.
Expr atomic_add(const ElemRef& at, Operand v);
Expr atomic_min(const ElemRef& at, Operand v);
Expr atomic_max(const ElemRef& at, Operand v);
Expr atomic_and(const ElemRef& at, Operand v);
Expr atomic_or(const ElemRef& at, Operand v);
Expr atomic_exchange(const ElemRef& at, Operand v);
// Writes `v` when the element holds `expected` (compared bit for bit); returns the old value.
Expr atomic_cas(const ElemRef& at, Operand expected, Operand v);
Expr atomic_add(const TgRef& at, Operand v);
Expr atomic_min(const TgRef& at, Operand v);
Expr atomic_max(const TgRef& at, Operand v);
Expr atomic_and(const TgRef& at, Operand v);
Expr atomic_or(const TgRef& at, Operand v);
Expr atomic_exchange(const TgRef& at, Operand v);
Expr atomic_cas(const TgRef& at, Operand expected, Operand v);
// Packed 16-bit add into an `inout` f16 or bf16 buffer: atomic_add_pair(buf[p], lo, hi) adds lo
// to buf[2p] and hi to buf[2p + 1] as one atomic update of their 32-bit word (the index counts
// pairs, so a pair is always at an even element). Each element is rounded as a scalar add of
// the value (of the buffer's dtype). Returns nothing (docs/semantics.md).
void atomic_add_pair(const ElemRef& pair, Operand lo, Operand hi);
// Memory fences: other threads of the threadgroup (or of the device) observe this thread's
// memory accesses before the fence before those after it. A fence is not a barrier: it makes
// no thread wait and does not make a plain access race-free.
void fence_threadgroup(SrcLoc loc = SrcLoc::current());
void fence_device(SrcLoc loc = SrcLoc::current());

// Asynchronous copies into threadgroup memory (docs/dsl.md "Asynchronous copies"; Reduction,
// Tile2D and SimdGroup2D): async_copy(tg[i], buf[j], count, valid) starts copying `count`
// elements buf[j ..] to tg[i ..] (count x the element size = 4, 8 or 16 bytes; the array and the
// buffer hold one dtype); the first min(valid, count) come from the buffer, the rest are 0 (a
// tail), and buf[j] is not read when valid is 0. async_commit() closes this thread's group of
// copies issued since the last commit; async_wait(n) waits until at most n of this thread's
// committed groups are in flight. A copy's elements are in the array once a wait has completed
// its group; other threads see them after a barrier that follows that wait. CUDA sm_80+:
// cp.async (16-byte copies bypass L1); elsewhere a plain copy.
void async_copy(const TgRef& dst, const ElemRef& src, uint32_t count, Operand valid);
void async_copy(const TgRef& dst, const ElemRef& src, uint32_t count, SrcLoc loc = SrcLoc::current());
void async_commit(SrcLoc loc = SrcLoc::current());
void async_wait(uint32_t pending, SrcLoc loc = SrcLoc::current());

// mbarriers and the copy engine (docs/dsl.md "mbarriers"; Reduction, Tile2D, SimdGroup2D; CUDA
// sm_90+, elsewhere a located "not expressible" error). mbarrier_alloc makes `count` barriers (u64,
// 8-byte aligned, used by these calls only). mbar_init(bar[i], n): phase 0, n arrivals expected
// (one thread inits, a barrier() before others use it). mbar_arrive(bar[i]): this thread's
// arrival. mbar_arrive_tx(bar[i], bytes): the phase also waits for `bytes` transaction bytes,
// then this thread arrives. mbar_wait(bar[i], parity): waits (an unbounded try_wait loop) until
// the phase of that parity completes: start at 0, flip after each wait. fence_proxy_async():
// this thread's ordinary threadgroup stores are ordered before later copy-engine accesses.
// bulk_copy(tg[i], buf[j], count, bar[b]): the copy engine copies count elements (a multiple of
// 16 bytes; i and j 16-byte aligned) and completes their bytes on bar[b]. setmaxnreg_inc/dec(n):
// the warpgroup's registers per thread become n (24..256, a multiple of 8; CUDA sm_90a only;
// every thread of each warpgroup that runs it runs it).
TgBuffer mbarrier_alloc(const char* name, uint32_t count, SrcLoc loc = SrcLoc::current());
void mbar_init(const TgRef& bar, Operand arrivals);
void mbar_arrive(const TgRef& bar);
void mbar_arrive_tx(const TgRef& bar, Operand bytes);
void mbar_wait(const TgRef& bar, Operand parity);
void fence_proxy_async(SrcLoc loc = SrcLoc::current());
void bulk_copy(const TgRef& dst, const ElemRef& src, uint32_t count, const TgRef& bar);
void setmaxnreg_inc(uint32_t registers, SrcLoc loc = SrcLoc::current());
void setmaxnreg_dec(uint32_t registers, SrcLoc loc = SrcLoc::current());
// The copy engine's store: bulk_store(buf[j], tg[i], count) copies count elements (a multiple of
// 16 bytes, i and j 16-byte aligned) of the array to the buffer; bulk_commit() closes this
// thread's group of bulk stores; bulk_wait(n) waits until at most n of its groups are in flight
// (the array may then be overwritten; the buffer holds the data). Ordinary stores to the array
// need fence_proxy_async() by their writer before the bulk store reads them.
void bulk_store(const ElemRef& dst, const TgRef& src, uint32_t count);
// Tensor-map copies (docs/dsl.md "Tensor-map copies"; CUDA sm_90+). tma_load_2d(map, tg[i], x,
// y, bar[b]): the copy engine copies the box of tensor map `map` (a tensor_map parameter; its
// box, swizzle and tensor come with the TensorMap at dispatch) whose first element is column x,
// row y (i32 or u32 values read as signed; elements outside the tensor read as 0) into the
// array from element i (an array declared 128-byte aligned; a swizzled box at a multiple of its
// pattern, 256/512/1024 bytes) and completes the box's bytes on bar[b] (expect them with
// mbar_arrive_tx). tma_store_2d(map, tg[i], x, y): the box goes back out (elements outside the
// tensor are not written), a bulk store of this thread's group (bulk_commit, bulk_wait).
void tma_load_2d(const Buffer& map, const TgRef& dst, Operand x, Operand y, const TgRef& bar);
void tma_store_2d(const Buffer& map, const TgRef& src, Operand x, Operand y);
void bulk_commit(SrcLoc loc = SrcLoc::current());
void bulk_wait(uint32_t pending, SrcLoc loc = SrcLoc::current());

// --- Cooperative tiles (docs/dsl.md "Cooperative tiles") ----------------------------------
// A lane group (warp / subgroup / simdgroup) computes C += A * B on M x N x K tiles: A is M x K
// and B is K x N, both f16 or bf16 (or T, declared as f16/bf16) or fp8 (f8e4m3 or f8e5m2), C is M x N in f32.
// Fragments are values that belong to the whole lane group: every call must be reached by every lane of it, with
// the same offset and stride in every lane. Memory is row-major: element (r, c) of a tile loaded
// at `offset` with row stride `stride` is memory[offset + r * stride + c]; offset and stride are
// u32 and may be run-time values. Supported shapes: 16 x 16 x 16 (f16, bf16, T) and 16 x 16 x 32
// (f8e4m3, f8e5m2: A is 16 x 32, B 32 x 16).
struct TileShape {
  uint32_t m = 16, n = 16, k = 16;
  DType in = DType::F16;
};
TileShape coop_tile_setup(uint32_t m, uint32_t n, uint32_t k, DType in, SrcLoc loc = SrcLoc::current());

// A traced fragment: the IR value and its type (frag<a|b|acc, elem, MxNxK>).
class Frag {
 public:
  Frag() = default;
  Frag(uint32_t id, Type type) : id_(id), type_(type) {}
  uint32_t id() const { return id_; }
  Type type() const { return type_; }

 private:
  uint32_t id_ = UINT32_MAX;
  Type type_;
};

// An XOR swizzle of threadgroup element indices (docs/semantics.md "Tile layouts"): index i maps to
//   i ^ (((i >> (base + shift)) & (2^bits - 1)) << base)
// bits 1..3, base 0..7, shift bits..9. For 16-bit elements, base 3 moves whole 16-byte chunks:
// {3, 3, 3} is the TMA's 128-byte swizzle (rows of 64 elements), {2, 3, 3} the 64-byte one (rows
// of 32), {3, 3, 4} spreads rows of 128 elements. bits == 0: no swizzle.
struct Swizzle {
  uint32_t bits = 0, base = 0, shift = 0;
};
// The swizzled index of `index` (u32 arithmetic): the destination a staging copy writes so that a
// tile load with the same Swizzle reads it back.
Expr swizzle(const Swizzle& sw, Operand index);
// How a tile load reads memory: column-major (element (r, c) at offset + c * stride + r: A stored
// K-major, B stored N-major as a linear layer's weight [N, K]) and, in threadgroup memory only, a
// swizzle applied to the whole index (offset folded in first).
struct TileLayout {
  bool col_major = false;
  Swizzle swizzle;
};

Frag coop_tile_fill(const TileShape& tile, Operand value);  // an accumulator with every element = value
Frag coop_tile_load_a(const TileShape& tile, const Buffer& src, Operand offset, Operand stride, TileLayout layout = {});
Frag coop_tile_load_a(const TileShape& tile, const TgBuffer& src, Operand offset, Operand stride, TileLayout layout = {});
Frag coop_tile_load_b(const TileShape& tile, const Buffer& src, Operand offset, Operand stride, TileLayout layout = {});
Frag coop_tile_load_b(const TileShape& tile, const TgBuffer& src, Operand offset, Operand stride, TileLayout layout = {});
// acc + a * b (docs/semantics.md: each element's sum is exact, rounded to f32 once per call).
Frag coop_tile_run(const Frag& a, const Frag& b, const Frag& acc, SrcLoc loc = SrcLoc::current());
// acc(r, c) + x(r, c) * scales[offset + r] for every element, one f32 fused multiply-add each
// (docs/semantics.md "Cooperative tiles"): x and acc are accumulators, scales an f32 threadgroup
// array holding the tile's 16 row scales from `offset` (uniform in the lane group). A block-scaled
// GEMM promotes each K block's partial product into its main accumulator this way.
Frag coop_tile_scale_add(const TgBuffer& scales, Operand offset, const Frag& x, const Frag& acc,
                         SrcLoc loc = SrcLoc::current());
void coop_tile_store(const Frag& acc, const Buffer& dst, Operand offset, Operand stride);
void coop_tile_store(const Frag& acc, const TgBuffer& dst, Operand offset, Operand stride);
// Element (row, col) of an accumulator, in every lane. row and col must be integer literals: a
// traced value is a located trace-time error.
Expr coop_tile_get(const Frag& acc, Operand row, Operand col);

// A warpgroup accumulator: 16 x n f32 per lane group (frag<acc, f32, 16xnx16>), every element =
// value; n a multiple of 16 up to 256 (a trace-time error otherwise). coop_tile_wg_run on it is one
// m64nNk16 wgmma per call (B is n x 16); coop_tile_store and coop_tile_get take it like a 16 x 16
// accumulator (row stride >= n); the lane-group product coop_tile_run does not. CUDA only.
Frag coop_tile_wg_fill(uint32_t n, Operand value, SrcLoc loc = SrcLoc::current());
// The accumulator of products of `in` operands: 16 x n x 16 for f16 and bf16 (as above), 16 x n x
// 32 for f8e4m3 and f8e5m2 (wgmma m64nNk32: fp8 A and B from threadgroup memory under a {bits, 4,
// 3} swizzle, 32 elements of K per product).
Frag coop_tile_wg_fill(uint32_t n, Operand value, DType in, SrcLoc loc = SrcLoc::current());

// A warpgroup's product (docs/dsl.md "Warpgroup tiles"; CUDA sm_90a lowers it to one wgmma):
// lane group q of each warpgroup (4 consecutive lane groups from a multiple of 4, all running it
// together) gets acc + A[16q .. 16q + 15, 0 .. 15] x B. A (64 x 16, row-major) starts at element
// a_offset of `a`, B (16 x N, N the accumulator's width: 16, or a coop_tile_wg_fill one's;
// column-major: element (k, n) at n * row + k, a weight [N, K]) at b_offset of `b`; both
// arrays are 1024-byte aligned and staged under `swizzle`, {1, 3, 3}, {2, 3, 3} or {3, 3, 3}
// (rows of 16, 32 or 64 elements: the row stride). The stores that staged them need
// fence_proxy_async() before the barrier. fp8 arrays (f8e4m3 or f8e5m2, both one format) take
// {1, 4, 3}, {2, 4, 3} or {3, 4, 3} (rows of 32, 64 or 128 elements) and a k 32 accumulator
// (coop_tile_wg_fill(n, v, fp8 type)): A is 64 x 32 and B 32 x N per call (wgmma m64nNk32).
Frag coop_tile_wg_run(const TgBuffer& a, Operand a_offset, const TgBuffer& b, Operand b_offset, const Frag& acc,
                      Swizzle swizzle, SrcLoc loc = SrcLoc::current());
// The same with A from registers: `a` is each lane group's own 16 x 16 A fragment (rows 16q ..
// 16q + 15 of the warpgroup's A, loaded from any layout); only B goes through a descriptor.
Frag coop_tile_wg_run(const Frag& a, const TgBuffer& b, Operand b_offset, const Frag& acc, Swizzle swizzle,
                      SrcLoc loc = SrcLoc::current());

// Asynchronous warpgroup products (docs/dsl.md "Asynchronous warpgroup products"; wgmma's own
// pipeline on sm_90a): coop_tile_wg_issue is coop_tile_wg_run issued and not waited for. Its
// result is pending until wg_wait retires its group: another coop_tile_wg_issue may accumulate
// into it (a chain of k steps), FragVar may carry it, anything else that reads it before then
// (a store, a get, a waited product) is an error. wg_fence() before the first issue after the
// lane group wrote an accumulator or A fragment by other means (a fill, a load, a waited
// product); wg_commit() closes the group of products issued since the last commit; wg_wait(n)
// waits until at most n committed groups are in flight (0: all retired). All warpgroup-wide.
Frag coop_tile_wg_issue(const TgBuffer& a, Operand a_offset, const TgBuffer& b, Operand b_offset, const Frag& acc,
                        Swizzle swizzle, SrcLoc loc = SrcLoc::current());
Frag coop_tile_wg_issue(const Frag& a, const TgBuffer& b, Operand b_offset, const Frag& acc, Swizzle swizzle,
                        SrcLoc loc = SrcLoc::current());
void wg_fence(SrcLoc loc = SrcLoc::current());
void wg_commit(SrcLoc loc = SrcLoc::current());
void wg_wait(uint32_t pending, SrcLoc loc = SrcLoc::current());

// A mutable fragment: an accumulator carried across for_ iterations.
class FragVar {
 public:
  explicit FragVar(const Frag& init, SrcLoc loc = SrcLoc::current());
  FragVar(const FragVar&) = delete;
  Frag get(SrcLoc loc = SrcLoc::current()) const;
  void set(const Frag& value, SrcLoc loc = SrcLoc::current());

 private:
  uint32_t id_;
  Type type_;
};

}  // namespace iron::dsl
