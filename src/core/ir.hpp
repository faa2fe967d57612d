// Iron's IR: a kernel is flat arrays of instructions and blocks indexed by 32-bit ids.
// The entry block is blocks[0]; If/For instructions own child blocks. Every instruction defines
// at most one SSA value whose id is the instruction id. No class hierarchy: the op table in
// ops.def gives each op its mnemonic, arity and traits.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "iron/types.hpp"

namespace iron::ir {

enum class Op : uint16_t {
#define IRON_OP(name, mnemonic, arity, traits, spelling) name,
#include "core/ops.def"
#undef IRON_OP
  Count_
};

namespace trait {
constexpr uint32_t P = 1u << 0;  // pure
constexpr uint32_t C = 1u << 1;  // commutative
constexpr uint32_t S = 1u << 2;  // side effect
constexpr uint32_t B = 1u << 3;  // built-in read, gated by the mode
constexpr uint32_t L = 1u << 4;  // lane / threadgroup-wide operation
constexpr uint32_t F = 1u << 5;  // control flow, owns child blocks
constexpr uint32_t M = 1u << 6;  // reads memory
}  // namespace trait

struct OpInfo {
  const char* mnemonic;
  int arity;
  uint32_t traits;
  const char* spelling;  // the default C-like expression, %0..%2 the operands ("" if none)
};
const OpInfo& op_info(Op op);
inline const char* mnemonic(Op op) { return op_info(op).mnemonic; }
inline const char* default_spelling(Op op) { return op_info(op).spelling; }
inline bool has_trait(Op op, uint32_t t) { return (op_info(op).traits & t) != 0; }
bool op_from_mnemonic(std::string_view s, Op& out);

using Id = uint32_t;
constexpr Id kNone = UINT32_MAX;

// A DSL source location. file indexes Kernel::files; line 0 means unknown.
struct SrcLoc {
  uint32_t file = 0;
  uint32_t line = 0;
};

constexpr uint8_t kFused = 1;    // emitted inline inside its single use (set by fusion)
constexpr uint8_t kUntyped = 2;  // parsed as `: ?`; type_check infers the dtype

// Named, typed instruction attributes. Which attributes an op carries, and which of them are
// required, is declared once per op in core/op_attrs.def; the printer, the parser and the
// verifier read that schema. Kinds: Int (a plain integer), Number (an integer or a float, by
// the instruction's result type: constants), ParamRef (a kernel parameter index, printed as
// its name), String (an index into Kernel::strings, printed as an identifier).
enum class AttrKind : uint8_t { Int, Number, ParamRef, String };
enum class Attr : uint8_t {
  Axis,    // Int: built-in axis 0..2
  Param,   // ParamRef: the parameter a param/load/store names
  Name,    // String: a threadgroup allocation's name
  Count,   // Int: a threadgroup allocation's element count
  Value,   // Number: a constant's value
  Vec,     // Int: a vector group leader's width (vectorize)
  Lane,    // Int: a vector group member's lane (vectorize)
  Callee,  // String: the device function a call names
  Index,   // Int: a device function argument's index
  Align,       // Int: a threadgroup allocation's alignment in bytes (a power of two <= 1024)
  CountParam,  // ParamRef: the scalar parameter that sizes a threadgroup allocation at dispatch
               // (its element count is then count x that parameter's value)
  Row,     // Int: a tile element's row (tile_get)
  Col,     // Int: a tile element's column (tile_get)
  Swizzle,   // Int: a threadgroup tile load's XOR swizzle, 100 * bits + 10 * base + shift (swizzle_index)
  ColMajor,  // Int: 1 when a tile load reads the matrix column-major (element (r, c) at c * stride + r)
  Alias,     // String: the threadgroup allocation a threadgroup alias views (docs/semantics.md)
  Offset,    // Int: a threadgroup alias's byte offset into the allocation it views
  Async,     // Int: 1 when a warpgroup product is issued asynchronously (retired by wg_wait)
  Count_
};
struct AttrInfo {
  const char* name;
  AttrKind kind;
};
const AttrInfo& attr_info(Attr a);

// The XOR swizzle of a threadgroup tile load (docs/semantics.md "Swizzled tile loads"): `code` =
// 100 * bits + 10 * base + shift, and element index i maps to
//   i ^ (((i >> (base + shift)) & (2^bits - 1)) << base)
// (bits 1..3, base 0..7, shift bits..9: the XOR-ed bits and their source never overlap, so the
// map is a bijection that keeps every aligned run of 2^base elements together).
bool swizzle_code_valid(int64_t code);
inline uint32_t swizzle_index(uint32_t i, int64_t code) {
  const uint32_t bits = uint32_t(code / 100), base = uint32_t(code / 10 % 10), shift = uint32_t(code % 10);
  return i ^ (((i >> (base + shift)) & ((1u << bits) - 1u)) << base);
}
// The swizzles a wgmma matrix descriptor expresses (tile_wg_mma, docs/semantics.md "Warpgroup
// tiles"): the 32-, 64- and 128-byte modes move 16-byte chunks within rows of 32, 64 and 128
// bytes, which for 16-bit elements is {bits, 3, 3} (codes 133, 233, 333: rows of 16, 32 and 64
// elements) and for 8-bit (fp8) elements {bits, 4, 3} (143, 243, 343: rows of 32, 64 and 128).
// wgmma_row_bytes is 0 for any other code.
inline uint32_t wgmma_row_bytes(int64_t code) {
  return code == 133 || code == 143 ? 32u : code == 233 || code == 243 ? 64u : code == 333 || code == 343 ? 128u : 0u;
}
// The element size such a code is for: 2 (base 3) or 1 (base 4, fp8).
inline uint32_t wgmma_elem_bytes(int64_t code) { return code / 10 % 10 == 4 ? 1u : 2u; }
// The tile's row stride S in elements (0 for a code no descriptor expresses).
inline uint32_t wgmma_row_elems(int64_t code) { return wgmma_row_bytes(code) / wgmma_elem_bytes(code); }
// The product's K: 16 for 16-bit elements (m64nNk16), 32 for fp8 (m64nNk32): 32 bytes of a row.
inline uint32_t wgmma_k(int64_t code) { return 32u / wgmma_elem_bytes(code); }
// The descriptor's swizzle-mode field (bits 62-63) for such a code: 1 128B, 2 64B, 3 32B.
inline uint32_t wgmma_swizzle_mode(int64_t code) {
  const uint32_t rb = wgmma_row_bytes(code);
  return rb == 128 ? 1u : rb == 64 ? 2u : rb == 32 ? 3u : 0u;
}
// The 64-bit wgmma matrix descriptor of a K-major operand at shared address `addr` whose rows are
// wgmma_row_bytes(code) wide under that swizzle: start address >> 4 (bits 0-13), leading byte
// offset 16 (bits 16-29; unused by K-major swizzled layouts), stride byte offset 8 rows (bits
// 32-45), base offset 0 (bits 49-51), swizzle mode (bits 62-63). Every field is in bytes, so one
// 128-byte row is 64 16-bit or 128 fp8 elements. The CUDA lowering builds the same bits.
inline uint64_t wgmma_descriptor(uint32_t addr, int64_t code) {
  const uint64_t row_bytes = wgmma_row_bytes(code);
  return uint64_t((addr & 0x3ffffu) >> 4) | (uint64_t(1) << 16) | (uint64_t((8 * row_bytes) >> 4) << 32) |
         (uint64_t(wgmma_swizzle_mode(code)) << 62);
}
bool attr_from_name(std::string_view s, Attr& out);
// An op's attribute schema: the attributes it may carry, in printing order; the required ones
// print positionally inside `<...>`, the optional ones as `key=value` after them.
struct AttrSlot {
  Attr attr;
  bool required;
};
struct AttrSchema {
  AttrSlot slots[6];
  uint8_t count = 0;
};
const AttrSchema& attr_schema(Op op);

struct AttrEntry {
  Attr key;
  int64_t i = 0;  // Int, ParamRef, String, and integer Number values
  double f = 0;   // float Number values
};

// An instruction's operand list: any length; up to four live inline (no allocation).
class Operands {
 public:
  Operands() = default;
  Operands(std::initializer_list<Id> ids);
  Operands(const Operands& o);
  Operands& operator=(const Operands& o);
  ~Operands() { delete[] heap_; }
  uint32_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Id& operator[](size_t i) { return data()[i]; }
  Id operator[](size_t i) const { return data()[i]; }
  Id* begin() { return data(); }
  Id* end() { return data() + n_; }
  const Id* begin() const { return data(); }
  const Id* end() const { return data() + n_; }
  void push_back(Id id);
  void resize(uint32_t n, Id fill = UINT32_MAX);
  void clear() { n_ = 0; }

 private:
  static constexpr uint32_t kInline = 4;
  Id* data() { return heap_ ? heap_ : inline_; }
  const Id* data() const { return heap_ ? heap_ : inline_; }
  uint32_t n_ = 0, cap_ = kInline;
  Id inline_[kInline] = {};
  Id* heap_ = nullptr;
};

struct Inst {
  Op op = Op::Const;
  Type type;                  // result type; void when the op defines no value
  Operands operands;
  Id blocks[2] = {kNone, kNone};  // If: then, else (else may be kNone); For: body
  std::vector<AttrEntry> attrs;   // named attributes, at most one per key (see op_attrs.def)
  uint8_t flags = 0;           // kFused | kUntyped
  SrcLoc loc;

  Id operand(int i) const { return operands[size_t(i)]; }
  int num_operands() const { return int(operands.size()); }

  bool has(Attr a) const { return find(a) != nullptr; }
  // The attribute's integer value (the index for ParamRef and String); 0 when absent — the
  // verifier rejects an instruction that lacks a required attribute.
  int64_t attr(Attr a) const {
    const AttrEntry* e = find(a);
    return e ? e->i : 0;
  }
  double fattr(Attr a) const {
    const AttrEntry* e = find(a);
    return e ? e->f : 0.0;
  }
  uint32_t param() const { return uint32_t(attr(Attr::Param)); }
  void set(Attr a, int64_t v) { slot(a).i = v; }
  void set_float(Attr a, double v) { slot(a).f = v; }
  void erase(Attr a);

 private:
  const AttrEntry* find(Attr a) const {
    for (const AttrEntry& e : attrs)
      if (e.key == a) return &e;
    return nullptr;
  }
  AttrEntry& slot(Attr a);
};

struct Block {
  std::vector<Id> insts;  // instruction ids, in program order
  Id parent = kNone;      // the If/For instruction owning this block; kNone for the entry block
};

// Buffer: device memory bound at dispatch. Scalar: a number passed by value. Blob: an opaque
// by-value structure of `blob_bytes` bytes aligned to `align` (docs/semantics.md, "By-value
// structure parameters"), read as u32 words by `load`; a tensor map (tensor_map) is the blob a
// TMA copy names (kTensorMapBytes, kTensorMapAlign), encoded from a buffer at dispatch.
enum class ParamKind : uint8_t { Buffer, Scalar, Blob };
const char* param_kind_name(ParamKind k);  // "buffer", "scalar", "blob"
constexpr uint32_t kTensorMapBytes = 128;   // CUtensorMap
constexpr uint32_t kTensorMapAlign = 64;
constexpr uint32_t kMaxBlobBytes = 4096;    // CUDA's classic kernel-parameter space
enum class Access : uint8_t { Read, Write, ReadWrite };
const char* access_name(Access a);

struct Param {
  std::string name;
  ParamKind kind = ParamKind::Buffer;
  DType dtype = DType::F32;
  Access access = Access::Read;
  // Buffers: the element count the kernel may touch = extent_factor * product of the named
  // scalar parameters. Checked against the bound buffer's size before every dispatch.
  std::vector<uint32_t> extent_scalars;
  uint64_t extent_factor = 1;
  // Buffers: earlier buffer parameters this one is declared to share memory with (the DSL's
  // aliases(a, b), the text form's `aliases=a,b`). Undeclared, two parameters bound to one
  // buffer are rejected at dispatch when either is written (CUDA declares them __restrict__).
  std::vector<uint32_t> aliases;
  // Declared facts (docs/semantics.md, "Declared facts"); the dispatch validator checks every
  // one and the pipeline may rely on them. Scalars: `specialize` bakes the dispatch's value into
  // the compiled code (one pipeline per value, text `specialize`); `multiple_of` (a power of
  // two >= 2 on an integer scalar, 0: none; text `multiple_of=8`) says every dispatch value is
  // a multiple of it. Buffers: `align` (a power of two from the element size to
  // kMaxDeclaredAlign, 0: none; text `aligned=16`) is the byte alignment of the bound element 0.
  // Undeclared, a buffer is still kAllocationAlign-aligned: every allocation is.
  bool specialize = false;
  uint64_t multiple_of = 0;
  uint32_t align = 0;
  // Blobs: the size in bytes (a multiple of 4, at most kMaxBlobBytes; its alignment is `align`,
  // a power of two from 4 to 128) and whether it is a TMA tensor map (128 bytes, 64-aligned,
  // encoded at dispatch from a TensorMap value). A blob's dtype is u32 (its words) and it is Read.
  uint32_t blob_bytes = 0;
  bool tensor_map = false;
  // Buffers: the integer scalar parameter that carries the element stride of the view bound
  // here (text `strided=s`; kNoStride: none). Without it the parameter needs a contiguous
  // buffer and dispatch refuses a strided view; with it, element j of the view is at index
  // j * s, and dispatch checks that s is the bound view's stride (docs/semantics.md, "Strided
  // views").
  uint32_t stride_param = UINT32_MAX;
  SrcLoc loc;
};
constexpr uint32_t kNoStride = UINT32_MAX;
// Every backend's allocations start at a multiple of 16 bytes (CUDA: 256), and a buffer is
// bound from its start, so 16 is the alignment a buffer parameter may always assume.
constexpr uint32_t kAllocationAlign = 16;
constexpr uint32_t kMaxDeclaredAlign = 256;
// The alignment of buffer parameter p the passes may assume: its declared align, else
// kAllocationAlign.
inline uint32_t assumed_align(const Param& p) { return p.align ? p.align : kAllocationAlign; }

struct Kernel {
  std::string name;
  bool is_function = false;           // a device function (args + ret), inlined into kernels
  Mode mode = Mode::Elementwise;
  std::vector<DType> dtypes;          // the concrete dtypes T may take (empty: not generic)
  std::vector<DType> wtypes;          // the concrete dtypes W may take (empty: no W); every
                                      // T x W pair of the two lists is a supported instantiation
  std::vector<Param> params;
  std::vector<Inst> insts;
  std::vector<Block> blocks;          // blocks[0] is the entry block
  std::vector<std::string> strings;   // names of threadgroup allocations
  std::vector<std::string> files;     // files[0] is "" (unknown)

  Kernel() { blocks.emplace_back(); files.emplace_back(); }

  Id add_inst(const Inst& in) {
    insts.push_back(in);
    return Id(insts.size() - 1);
  }
  Id add_block(Id parent) {
    blocks.emplace_back();
    blocks.back().parent = parent;
    return Id(blocks.size() - 1);
  }
  uint32_t intern_file(const std::string& f);
  uint32_t intern_string(const std::string& s);
  std::string where(SrcLoc loc) const;  // "file:line", or "<unknown>"
  int find_param(std::string_view name) const;
};

// The deepest if/for nesting the IR accepts (a body inside 256 nested ifs and loops). The text
// parser and the DSL tracer refuse deeper programs, the verifier rejects them and the pipeline
// checks it after every pass, so the recursive walks below and in the printer, the passes, the
// emitter and the interpreter are bounded by it on every legal program.
constexpr size_t kMaxNesting = 256;
// Depth of the deepest block reachable from the entry block (0: no if/for), computed without
// recursion and safe on malformed kernels (bad ids, shared blocks).
size_t nesting_depth(const Kernel& k);

// Walks every instruction reachable from `block`, entry and child blocks alike, in program
// order (pre-order: an If/For is visited before its children). The one structural walker every
// pass, the verifier, the printer and the emitters share.
template <class Fn>
void walk(const Kernel& k, Id block, Fn&& fn) {
  for (Id id : k.blocks[block].insts) {
    fn(id);
    const Inst& in = k.insts[id];
    for (Id b : in.blocks)
      if (b != kNone) walk(k, b, fn);
  }
}
template <class Fn>
void walk(const Kernel& k, Fn&& fn) {
  walk(k, 0, fn);
}

// Diagnostics are collected, never thrown one at a time: a run shows every problem.
struct Diagnostic {
  std::string message;
  SrcLoc loc;
};
struct Diagnostics {
  std::vector<Diagnostic> items;
  void error(SrcLoc loc, std::string msg) { items.push_back({std::move(msg), loc}); }
  bool empty() const { return items.empty(); }
  std::string render(const Kernel& k) const;  // one "file:line: error: message" per line
};

// Structure and type rules; appends to diags and returns true when the kernel is well formed.
bool verify(const Kernel& k, Diagnostics& diags);

// Text form. print() renumbers values in program order so equal kernels print equally.
struct PrintOptions {
  bool locations = false;
};
std::string print(const Kernel& k, const PrintOptions& opts = {});
// Parses the printed form; throws iron::Error naming the line on malformed text.
Kernel parse(std::string_view text);

// Stable 64-bit content hash of the printed kernel (locations excluded).
uint64_t content_hash(const Kernel& k);

// True if any instruction uses lane or threadgroup-wide operations (the dispatch must then use
// a threadgroup size that is a positive multiple of the lane width).
bool uses_lane_ops(const Kernel& k);
// True if the kernel uses warpgroup products (tile_wg_mma[_rs], wg_fence, wg_commit, wg_wait) or
// a warpgroup accumulator (frag<acc, f32, 16xNx16>, N > 16): CUDA only, the other targets refuse
// them by name (docs/semantics.md "Warpgroup tiles").
bool uses_warpgroup_ops(const Kernel& k);
// Bit d set when dtype d is the dtype of a parameter or an instruction (bit Generic: T is used).
uint32_t dtypes_used(const Kernel& k);
// True when buffer parameter `p` is declared to alias another buffer parameter (either side).
bool is_aliased(const Kernel& k, uint32_t p);
// True when no store of the kernel can change buffer parameter `p`'s memory: it is `in` and no
// parameter declared to alias it is writable. Passes reorder and share loads only from these.
bool read_only_memory(const Kernel& k, uint32_t p);
// Threadgroup memory layout (docs/semantics.md, "Threadgroup memory"): every allocation at its
// real element width (bool: 4 bytes), at an offset that is a multiple of its alignment (the
// larger of its `align` attribute and its element size). Arrays of a fixed size come first, in
// program order, then the arrays sized at dispatch (count_param), in program order.
// 1024: a 128B-swizzled TMA box repeats every 1024 bytes, and a wgmma operand's swizzle atom
// (tile_wg_mma) starts on a 1024-byte boundary.
constexpr uint64_t kMaxThreadgroupAlign = 1024;
constexpr uint64_t kMaxRegisterArray = 1024;  // elements of one register array (local_alloc)
uint64_t tg_elem_bytes(const Inst& alloc, Instantiation concrete);
uint64_t tg_alignment(const Inst& alloc, Instantiation concrete);
// The allocations reachable from the entry block, in layout order.
std::vector<Id> threadgroup_layout(const Kernel& k);
// Threadgroup aliases (a TgAlloc with an `alias` attribute: a typed view of another allocation's
// bytes from byte `offset`, no memory of its own; threadgroup_layout leaves them out). The
// allocation an alias views (kNone when `alloc` is no alias or names none), and every alias.
Id tg_alias_base(const Kernel& k, const Inst& alloc);
std::vector<Id> threadgroup_aliases(const Kernel& k);
bool has_dynamic_threadgroup(const Kernel& k);
// Bytes of threadgroup memory the kernel allocates for the given concrete dtype, alignment
// padding included. `param_values` (indexed by parameter, the bit patterns of the scalar
// parameters) sizes the arrays sized at dispatch; without it they count as 0 bytes.
// Saturates at UINT64_MAX.
uint64_t threadgroup_bytes(const Kernel& k, Instantiation concrete, const uint64_t* param_values = nullptr);
// The element count of one allocation (count x the sizing parameter's value, if any);
// UINT64_MAX when a dispatch-sized array has no values given, or the product overflows.
uint64_t tg_count(const Kernel& k, const Inst& alloc, const uint64_t* param_values);

// True when values of dtype t are floats at every dtype the kernel may be emitted for: a float
// dtype, or T (W) when every dtype T (W) may take is a float (a T over integers is not).
bool float_everywhere(const Kernel& k, DType t);

// Atomics. Global atomics name their buffer by the Param attribute and take index, value (cas:
// index, expected, value); threadgroup atomics take the allocation as operand 0 instead. These
// accessors are the one place that knows the operand layout.
bool is_global_atomic(Op op);
bool is_tg_atomic(Op op);
inline bool is_atomic(Op op) { return is_global_atomic(op) || is_tg_atomic(op); }
// The cooperative tile ops (tile_fill .. tile_get).
bool is_tile_op(Op op);
// The mbarrier ops (mbar_init, mbar_arrive, mbar_arrive_tx, mbar_wait): operand 0 is the u64
// threadgroup array of barriers and operand 1 the barrier's index. bulk_copy names its barrier
// with operands 3 and 4.
bool is_mbar_op(Op op);
// Ops only CUDA sm_90 and later expresses (the mbarrier ops, bulk_copy, bulk_store and its
// commit and wait, fence_proxy_async, setmaxnreg): GLSL, MSL and HIP report them as not expressible.
bool is_hopper_op(Op op);
bool is_atomic_cas(Op op);
// The global form of an atomic (TgAtomicAdd -> AtomicAdd): what it computes, wherever it acts.
Op atomic_kind(Op op);
struct AtomicOperands {
  Id alloc = kNone;     // threadgroup atomics: the TgAlloc
  Id index = kNone;
  Id expected = kNone;  // cas only
  Id value = kNone;
};
AtomicOperands atomic_operands(const Inst& in);
// True for the lane ops that move a value between lanes (operand 1 names the source lane).
bool is_lane_shuffle(Op op);


// Resolves the type parameters: Generic -> concrete.t, GenericW -> concrete.w, anything else
// unchanged.
inline DType resolve(DType d, Instantiation concrete) {
  return d == DType::Generic ? concrete.t : d == DType::GenericW ? concrete.w : d;
}
inline Type resolve(Type t, Instantiation concrete) {
  return is_type_param(t.elem()) ? t.with_elem(resolve(t.elem(), concrete)) : t;
}
// Whether the kernel is declared for `in` (T and W each in their declared lists; a parameter
// the kernel does not have must be left Void, except that a kernel without T accepts any T).
// On false, `why` names what the dispatch asked for and what the kernel declares.
bool declares(const Kernel& k, Instantiation in, std::string* why = nullptr);
// Every instantiation the kernel declares, T-major (a kernel without T: {f32}).
std::vector<Instantiation> instantiations(const Kernel& k);

}  // namespace iron::ir
