// The thread geometry shared by the row kernels of kernels/norm and kernels/softmax: which row
// a thread works on, which parts of it, and the row held in registers.
//
// A row of d = dv * VEC elements is cut into dv chunks of VEC adjacent elements; the kernels
// take dv (the scalar "dv") rather than d, so every row starts at a multiple of VEC elements
// (row * dv * VEC) and every chunk's accesses are provably VEC-aligned: the vectorize pass turns
// each chunk into 16-byte loads and stores. A row whose width is not a multiple of VEC takes the
// VEC = 1 kernel of the family (the selectors pick the largest VEC dividing d).
//
// Two ways to spread rows over threads, both in mode Reduction:
//  - Split::Warp: one lane group per row, num_simd_groups() rows per threadgroup. Lane l takes
//    chunks l, l + W, l + 2W, ... (W the lane width); reductions are lane_sum / lane_max.
//  - Split::Block: one threadgroup per row. Thread t takes chunks t, t + tg, ...; reductions are
//    group_sum / group_max.
// Each thread keeps its first held = min(16, kRowRegs / VEC) chunks in a register array (f32),
// so a row of up to held * VEC elements per thread is read from memory once; chunks past that capacity are
// visited by a strided loop that reads them again in every pass. The kernels are correct for
// every dv and every threadgroup; the selectors choose the geometry that keeps rows in
// registers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include <iron/iron.hpp>

namespace iron::kernels::rows {
using namespace iron::dsl;

// Row elements each thread keeps in registers (f32): up to 32 registers, in at most 16 chunks
// (the unroll pass unrolls 16 iterations at most): 32 elements at VEC 8, 16 at VEC 1.
constexpr uint32_t kRowRegs = 32;
constexpr uint32_t kMaxHeld = 16;

enum class Split { Warp, Block };

// Row elements a thread of the family keeps in registers (every family keeps kRowRegs).
inline uint32_t row_regs(const std::string&) { return kRowRegs; }
// The chunks a thread keeps in registers: regs / VEC, at most kMaxHeld.
inline uint32_t held_chunks_of(uint32_t vec, uint32_t regs) { return std::min(kMaxHeld, regs / vec); }

// The suffix of a family's kernels for a split: "warp" or "block".
inline const char* split_name(Split s) { return s == Split::Warp ? "warp" : "block"; }

// body(e) for the VEC elements of a chunk, e = 0 .. VEC - 1: a device loop of a constant trip
// count, which the unroll pass unrolls (so register indices and the chunk's adjacent accesses
// come out as constants, as a host loop would trace them, with one copy of the body in the IR).
inline void each_element(uint32_t vec, FnRef<void(Expr)> body) { for_(0u, vec, body); }

class RowWalk {
 public:
  // `rows` and `dv` are the kernel's scalars; `vec` the family's VEC; `regs` the row elements a
  // thread keeps in registers (row_regs of the family).
  RowWalk(Split split, Expr rows, Expr dv, uint32_t vec, uint32_t regs)
      : split_(split), dv_(dv), vec_(vec), held_(held_chunks_of(vec, regs)) {
    if (split == Split::Warp) {
      row_ = program_id(0) * num_simd_groups() + simd_group_id();
      first_ = lane_id();
      stride_ = lane_width();
    } else {
      row_ = program_id(0);
      first_ = local_id(0);
      stride_ = group_size(0);
    }
    live_ = row_ < rows;
    base_ = row_ * dv * vec;  // a multiple of VEC: every chunk below is VEC-aligned
  }

  Expr row() const { return row_; }
  // True for the threads of a row that exists: uniform over a lane group (Warp) or the whole
  // threadgroup (Block), so reductions may sit inside an if_ on it.
  Expr live() const { return live_; }
  // The element index of the row's first element.
  Expr base() const { return base_; }
  uint32_t vec() const { return vec_; }
  uint32_t held() const { return held_; }
  // The register array a kernel keeps its held chunks in: held() * VEC f32 elements.
  TgBuffer registers(const char* name) const { return local_array(name, f32, held_ * vec_); }

  // Slot k of this thread holds chunk first + k * stride, when that is below dv. Calls
  // body(j, slot) inside if_(chunk < dv) for every slot, j the chunk's first element relative
  // to the row start (a multiple of VEC) and slot its first register (k * VEC). The slots are a
  // device loop of a constant trip count (at most 16), which the unroll pass unrolls, so every
  // register index is a constant, as register arrays require.
  void held_chunks(const std::function<void(Expr j, Expr slot)>& body) const {
    for_(0u, held_, [&](Expr k) {
      Expr c = first_ + stride_ * k;
      if_(c < dv_, [&] { body(c * vec_, k * vec_); });
    });
  }
  // Loads the held chunks: slot k gets load(j + e) for e < VEC when its chunk is below dv, and
  // `neutral` otherwise (a loop of loads alone, so every slot's load is issued before any is
  // used). A pass over the registers may then run over every slot unguarded (all_slots) when
  // `neutral` leaves its result unchanged.
  void load_held(TgBuffer regs, const std::function<Expr(Expr i)>& load, float neutral) const {
    for_(0u, held_, [&](Expr k) {
      Expr c = first_ + stride_ * k;
      Expr slot = k * vec_;
      if_(c < dv_, [&] {
        Expr at = base_ + c * vec_;
        for_(0u, vec_, [&](Expr e) { regs[slot + e] = load(at + e); });
      }).else_([&] { for_(0u, vec_, [&](Expr e) { regs[slot + e] = neutral; }); });
    });
  }
  // Calls body(slot) for every held slot, valid or not (after load_held).
  void all_slots(const std::function<void(Expr slot)>& body) const {
    for_(0u, held_, [&](Expr k) { body(k * vec_); });
  }
  // Calls body(j) for this thread's chunks past the register capacity (a strided device loop).
  void rest_chunks(const std::function<void(Expr j)>& body) const {
    for_(first_ + stride_ * held_, dv_, stride_, [&](Expr c) { body(c * vec_); });
  }

  // The reductions of this split, over the threads of one row.
  Expr sum(Operand v) const { return split_ == Split::Warp ? lane_sum(v) : group_sum(v); }
  Expr max(Operand v) const { return split_ == Split::Warp ? lane_max(v) : group_max(v); }

 private:
  Split split_;
  Expr dv_;
  uint32_t vec_, held_;
  Expr row_{}, first_{}, stride_{}, live_{}, base_{};
};

// Host side: the launch geometry of a row family's kernels. A family F has the concrete
// kernels F_warp_x{VEC} and F_block_x{VEC}, VEC in {1, 8}.
struct RowLaunch {
  std::string kernel;  // the concrete kernel
  Split split = Split::Block;
  uint32_t vec = 1;    // elements per chunk
  uint32_t dv = 0;     // chunks per row (the kernel's "dv")
  Dim3 grid, threadgroup;
};
// The largest VEC of the families (8, then 1) that divides d.
uint32_t row_vec(uint64_t d);
// A given split and threadgroup size: grid = rows (block) or enough threadgroups for `rows`
// lane groups at lane width `lane_width` (warp). Tests pass the widest lane width a device may
// have (64), so their grid covers every row wherever they run.
RowLaunch row_launch(const std::string& family, Split split, uint32_t vec, uint64_t rows, uint64_t d, uint32_t tg,
                     uint32_t lane_width);
// The geometry a selector picks: a row a lane group holds in registers takes a lane group (warp) in threadgroups of 256 threads, a longer row a threadgroup of just enough threads
// (a multiple of the lane width, at most max_threads) to hold it in registers; few rows (under
// 128) get threadgroups of up to 4 times more threads, holding less of the row each.
RowLaunch pick_row_launch(const std::string& family, uint64_t rows, uint64_t d, uint32_t lane_width,
                          uint32_t max_threads);

// A selector's plan of one step for a row family (RMSNorm, fused RMSNorm, LayerNorm, softmax
// rows): the call's {rows, d} (and eps when `eps`), pick_row_launch on the device. Throws
// iron::Error naming the family for an empty or oversized shape, and for a 16-bit dtype the
// device cannot hold.
LaunchPlan row_family_plan(const std::string& family, const Call& call, const DeviceInfo& dev, bool eps);
// The checks row_family_plan makes, for selectors that plan otherwise: rows and d in [1, 2^32),
// the dtype's storage on the device.
void check_row_call(const std::string& family, const Call& call, const DeviceInfo& dev);

// Tolerance accounting (docs/writing-a-kernel.md#6): the f32 roundings of one reduction over a
// row of dv chunks of VEC: each thread's serial sum (ceil(dv / threads) chunks of VEC terms)
// plus the tree. Warp rows: every lane width from 4 to 64 (the interpreter's range) is allowed
// for, so the serial part assumes 4 lanes and the tree 6 levels. Block rows: tg threads, at
// most 3 ceil(log2 tg) tree levels (group_sum).
double row_sum_rounding(Split split, uint64_t dv, uint32_t vec, uint32_t tg);

// The f64 RMSNorm oracle every RMSNorm case shares: out[r, j] = h[r, j] * w[j] /
// sqrt(mean_j h[r, j]^2 + eps) over `rows` rows of `d`, with eps rounded to f32 as the kernels
// take it.
void rms_norm_oracle(const std::vector<double>& h, const std::vector<double>& w, uint32_t rows, uint32_t d, double eps,
                     std::vector<double>& out);
// The most roundings of one reduction in any plan pick_row_launch makes for a row of d on a
// device of at least 256 threads a threadgroup and any lane width up to 64: a thread's terms
// are at most its registers' worth or ceil(dv / 256) chunks, plus at most 30 tree levels.
double call_sum_rounding(uint64_t d);

}  // namespace iron::kernels::rows
