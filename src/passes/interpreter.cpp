// The SIMT interpreter. One threadgroup at a time; inside it every instruction runs for every
// active thread before the next instruction starts (lock step), so a barrier needs no scheduling:
// all earlier writes are already visible. Because lock step would also hide a missing barrier,
// every threadgroup-memory access is checked against the accesses of other threads since the
// last barrier, and a race is an error (check_race). Values live in one flat array [value id][thread]
// of 64-bit registers (eval.hpp's canonical patterns: f32 bits, integers sign- or zero-extended);
// the active mask is a sorted list of flat local thread indices, one reusable list per nesting
// depth, so the inner loops allocate nothing.
//
// Divergent waits (docs/semantics.md "Divergent waits"): when the threads of an if split between
// its two branches and the then-branch reaches an mbar_wait whose phase is not complete, its
// threads suspend and the else-branch runs on a strand of its own (an OS thread holding the
// only baton, so exactly one strand runs at any time). Strands switch only at such waits and at
// the if's end, where the branches join, in a fixed order: every run is the same. A kernel whose
// waits all complete in lock step never makes a second strand.
#include "passes/interpreter.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <cmath>
#include <cstring>
#include <string>

#include "core/numeric.hpp"
#include "passes/eval.hpp"

namespace iron::interp {
namespace {

using eval::Scalar;
using ir::Id;
using ir::Op;
using Mask = std::vector<uint32_t>;  // active flat local indices, ascending

std::string dim_text(uint32_t x, uint32_t y, uint32_t z) {
  return "{" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + "}";
}

int block_depth(const ir::Kernel& k, Id b) {
  int d = 0;
  for (Id id : k.blocks[b].insts)
    for (Id cb : k.insts[id].blocks)
      if (cb != ir::kNone) d = std::max(d, 1 + block_depth(k, cb));
  return d;
}

struct Machine {
  const ir::Kernel& k;
  Instantiation dtype;
  const Options& opts;
  Dim3 grid, tg;
  uint32_t T = 0;  // threads per threadgroup
  uint32_t W = 0;  // lane width

  std::vector<DType> types;           // per instruction, T resolved
  std::vector<int> slot;              // per parameter: index into buffers or scalars
  std::vector<BufferArg> buffers;
  std::vector<uint64_t> scalars;
  std::vector<uint64_t> vals;         // vals[id * T + t]
  std::vector<uint32_t> lx, ly, lz;   // local id per flat index
  std::vector<uint64_t> tg_mem;       // every TgAlloc's array, one after another (one register per slot)
  std::vector<uint32_t> tg_offset;    // per instruction: TgAlloc's offset into tg_mem
  std::vector<uint64_t> tg_elems;     // per instruction: TgAlloc's element count this dispatch
  // Register arrays (local_alloc): local_mem[local_offset[alloc] + element * T + thread], and
  // per word whether the thread wrote it in this threadgroup (a read before that is an error).
  std::vector<uint64_t> local_mem;
  std::vector<uint8_t> local_written;
  std::vector<size_t> local_offset;
  // Race detection on threadgroup memory, one record per tg_mem word. A record is current only
  // while its epoch equals `epoch`, which advances at every barrier and every new threadgroup,
  // so a barrier forgets every earlier access without touching the records.
  struct SlotAccess {
    uint32_t written_group = 0;            // group_serial of the last write: 0 or stale = never written
    uint32_t write_epoch = 0, writer = 0;  // last writer thread since the last barrier
    uint32_t read_epoch = 0, reader = 0;   // a reader since the last barrier, or kManyReaders
    uint32_t atomic_epoch = 0, atomic_thread = 0;  // an atomic since the last barrier, or kManyReaders
    Id write_op = ir::kNone, read_op = ir::kNone, atomic_op = ir::kNone;
    uint64_t write_time = 0, read_time = 0;  // `clock` at the last write / read
  };
  static constexpr uint32_t kManyReaders = UINT32_MAX;
  std::vector<SlotAccess> tg_access_log;
  uint32_t epoch = 0;
  // Threadgroup aliases (docs/semantics.md "Threadgroup aliases"): each view keeps its own slots
  // (tg_mem), and one record per byte of the viewed allocation says which view touched it last
  // since the last barrier and which view wrote it last, so a run that lets two views meet
  // without a barrier, or reads bytes through a view other than the one that wrote them, is an
  // error. view_base[alloc] is the allocation an alias views (itself for one with aliases, kNone
  // otherwise), view_byte0[alloc] the view's byte offset into it.
  struct AliasByte {
    uint32_t epoch = 0, written_group = 0;
    Id last = ir::kNone, last_op = ir::kNone, writer = ir::kNone, writer_op = ir::kNone;
    bool last_wrote = false;
  };
  std::vector<Id> view_base;
  std::vector<uint64_t> view_byte0;
  std::map<Id, std::vector<AliasByte>> alias_bytes;
  uint32_t group_serial = 0;  // advances with every threadgroup
  // Asynchronous copies in flight, per thread in issue order: each element's value (read from
  // the buffer at issue) and its destination word; group -1 until async_commit numbers it.
  struct AsyncElem {
    Id op;
    int64_t group;
    uint32_t word;
    uint64_t bits;
  };
  std::vector<std::deque<AsyncElem>> async_pending;
  std::vector<int64_t> async_next_group;
  // mbarriers (docs/semantics.md "mbarriers"), by the threadgroup word of the barrier. `clock`
  // counts executed instructions; a thread's wait on a completed phase acquires the clock at
  // which that phase completed (acquired[t]), and an access another thread made before that
  // point does not race with the waiter's (check_race). seen[t] maps a barrier to the latest
  // phase the thread waited for.
  struct Mbar {
    Id init_op = ir::kNone;
    uint32_t init_thread = 0, init_epoch = 0;
    uint32_t count = 0, pending = 0;  // arrivals per phase, still to come in this one
    int64_t tx = 0;                   // transaction bytes still to come (negative: more came)
    int64_t phase = 0;                // phases completed
    uint64_t completed_at = 0;        // clock when the last phase completed
    Id copy_op = ir::kNone;           // a bulk copy that delivered bytes to the current phase
    int64_t waited = -1;              // the latest phase a thread waited for
  };
  std::unordered_map<uint32_t, Mbar> mbars;
  std::vector<std::unordered_map<uint32_t, int64_t>> seen;
  std::vector<uint64_t> acquired;
  std::vector<uint64_t> proxy_fenced_at;  // clock of the thread's last fence_proxy_async
  // Words a bulk copy wrote: the barrier word and the phase whose completion delivers them.
  struct Delivery {
    uint32_t bar;
    int64_t phase;
    Id op;
  };
  std::unordered_map<uint32_t, Delivery> delivered;
  static constexpr uint32_t kCopyEngine = UINT32_MAX - 1;  // SlotAccess::writer of a bulk copy's word
  // Bulk stores in flight, per thread in issue order (group -1 until bulk_commit numbers it),
  // and the threadgroup words they still read: no one may write those before the wait.
  struct BulkStoreRec {
    Id op;
    int64_t group;
    std::vector<uint32_t> words;
  };
  std::vector<std::deque<BulkStoreRec>> bulk_pending;
  std::vector<int64_t> bulk_next_group;
  std::unordered_map<uint32_t, std::pair<uint32_t, Id>> bulk_reading;  // word -> (stores, one store op)
  uint64_t clock = 0;
  std::vector<uint64_t> lane_a, lane_b;
  Id vec_leader[2] = {ir::kNone, ir::kNone};  // last vector group leader: [0] load, [1] store
  uint32_t group[3] = {0, 0, 0};
  uint64_t steps = 0;

  // Strands. A strand runs some threads of the threadgroup on a stack of its own: the root is
  // the calling thread and runs the kernel; another starts when a strand cannot go on and an if
  // it is inside (a fork: its then-branch is running, its else-branch has threads and has not
  // started) can give its else-branch to a new strand, which runs that branch and ends. Each
  // strand has its own masks (the depths above the fork's are unused). `self` is the running one.
  struct Strand;
  struct Fork {
    Id if_id;
    int depth;
    Strand* child = nullptr;  // the strand running the else-branch, once started
  };
  enum class Block { None, Mbar, Join };
  struct Waiter {
    uint32_t thread, word;
    int64_t phase;  // the phase the thread waits to complete
  };
  struct Strand {
    std::vector<Mask> masks;
    std::vector<Fork> forks;  // open forks on this strand's stack, outermost first
    Block block = Block::None;
    Id at = ir::kNone;             // the mbar_wait, or the if whose end it waits at
    std::vector<Waiter> waiters;   // Block::Mbar: the threads whose phase is incomplete
    const Mask* joining = nullptr;  // Block::Join: the threads waiting at the if's end
    Strand* child = nullptr;        // Block::Join: the strand running the other branch
    bool go = false, done = false;
    std::condition_variable cv;
    std::thread os;
  };
  struct Unwind {};  // unwinds a strand's stack after another strand's error
  std::vector<std::unique_ptr<Strand>> strands;  // [0]: the root
  Strand* self = nullptr;
  std::vector<Mask>* masks_of = nullptr;  // self->masks
  std::mutex baton;
  bool aborting = false;
  std::exception_ptr abort_error;

  Machine(const ir::Kernel& kernel, Instantiation d, const Options& o) : k(kernel), dtype(d), opts(o) {}
  ~Machine() { stop_strands(); }

  [[noreturn]] void fail(const ir::Inst& in, const std::string& msg) const {
    throw Error(msg + " at " + k.where(in.loc) + " (kernel " + k.name + " (" + instantiation_name(dtype) +
                "), threadgroup " + dim_text(group[0], group[1], group[2]) + ")");
  }
  std::string tg_name(const ir::Inst& alloc) const {
    const uint64_t i = uint64_t(alloc.attr(ir::Attr::Name));
    return i < k.strings.size() ? k.strings[i] : "?";
  }
  std::string thread_text(uint32_t t) const { return "thread " + dim_text(lx[t], ly[t], lz[t]); }

  uint64_t* row(Id id) { return vals.data() + size_t(id) * T; }

  // The element index an integer operand names; a negative signed index stays negative and an
  // unsigned one beyond int64 reads as INT64_MAX (both out of range).
  int64_t index_of(Id operand, uint32_t t) const {
    uint64_t bits = vals[size_t(operand) * T + t];
    if (is_signed_integer(types[operand])) return int64_t(bits);
    return bits > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(bits);
  }

  void setup(const std::vector<BufferArg>& bufs, const std::vector<uint64_t>& scals, Dim3 g, Dim3 t) {
    grid = g;
    tg = t;
    W = opts.lane_width;
    if (W == 0 || (W & (W - 1)) != 0)
      throw Error("interpreter lane width " + std::to_string(W) + " is not a power of two");
    if (grid.product() == 0 || tg.product() == 0)
      throw Error("kernel " + k.name + ": grid " + dim_text(g.x, g.y, g.z) + " or threadgroup " +
                  dim_text(t.x, t.y, t.z) + " has a zero dimension");
    if (tg.product() > (1u << 20)) throw Error("kernel " + k.name + ": threadgroup too large for the interpreter");
    T = uint32_t(tg.product());
    if (std::string why; !ir::declares(k, dtype, &why)) throw Error(why);

    size_t nb = 0, ns = 0;
    // A blob (a by-value structure) is read like a u32 buffer over its bytes: it takes a buffer slot.
    for (const ir::Param& p : k.params) slot.push_back(p.kind != ir::ParamKind::Scalar ? int(nb++) : int(ns++));
    if (bufs.size() != nb || scals.size() != ns)
      throw Error("kernel " + k.name + " takes " + std::to_string(nb) + " buffer(s) and " + std::to_string(ns) +
                  " scalar(s); the interpreter was given " + std::to_string(bufs.size()) + " and " +
                  std::to_string(scals.size()));
    buffers = bufs;
    scalars = scals;

    types.resize(k.insts.size());
    for (size_t i = 0; i < k.insts.size(); ++i) types[i] = ir::resolve(k.insts[i].type.elem(), dtype);
    vals.assign(k.insts.size() * size_t(T), 0);
    lx.resize(T);
    ly.resize(T);
    lz.resize(T);
    for (uint32_t i = 0; i < T; ++i) {
      lx[i] = i % tg.x;
      ly[i] = (i / tg.x) % tg.y;
      lz[i] = i / (tg.x * tg.y);
    }
    strands.push_back(std::make_unique<Strand>());
    self = strands[0].get();
    masks_of = &self->masks;
    std::vector<Mask>& masks = self->masks;
    masks.resize(size_t(block_depth(k, 0)) + 1);
    for (Mask& m : masks) m.reserve(T);
    for (uint32_t i = 0; i < T; ++i) masks[0].push_back(i);
    // One word per element whatever the element's width (the layout in bytes, which the
    // dispatch check and the backends use, is ir::threadgroup_bytes); arrays sized at dispatch
    // take their count from this dispatch's scalars.
    std::vector<uint64_t> by_param(k.params.size(), 0);
    for (size_t i = 0; i < k.params.size(); ++i)
      if (k.params[i].kind == ir::ParamKind::Scalar) by_param[i] = scalars[size_t(slot[i])];
    tg_offset.assign(k.insts.size(), 0);
    tg_elems.assign(k.insts.size(), 0);
    view_base.assign(k.insts.size(), ir::kNone);
    view_byte0.assign(k.insts.size(), 0);
    for (Id a : ir::threadgroup_aliases(k)) {
      const Id base = ir::tg_alias_base(k, k.insts[a]);
      if (base == ir::kNone) continue;
      view_base[a] = base;
      view_base[base] = base;
      view_byte0[a] = uint64_t(k.insts[a].attr(ir::Attr::Offset));
      alias_bytes[base].assign(size_t(uint64_t(k.insts[base].attr(ir::Attr::Count)) * dtype_size(types[base])), AliasByte{});
    }
    local_offset.assign(k.insts.size(), 0);
    uint64_t words = 0, local_words = 0;
    constexpr uint64_t kMaxWords = uint64_t(1) << 28;
    ir::walk(k, [&](Id id) {
      const ir::Inst& in = k.insts[id];
      if (in.op == Op::LocalAlloc) {
        local_offset[id] = size_t(local_words);
        local_words += uint64_t(std::max<int64_t>(in.attr(ir::Attr::Count), 0)) * T;
        return;
      }
      if (in.op != Op::TgAlloc) return;
      const uint64_t n = ir::tg_count(k, in, by_param.data());
      const ir::Param* size = in.has(ir::Attr::CountParam) ? &k.params[size_t(in.attr(ir::Attr::CountParam))] : nullptr;
      if (size && size->dtype == DType::I32 && int32_t(uint32_t(by_param[size_t(in.attr(ir::Attr::CountParam))])) < 0)
        fail(in, "threadgroup array '" + tg_name(in) + "' is sized by '" + size->name + "', which is negative");
      if (n > kMaxWords || words + n > kMaxWords)
        fail(in, "threadgroup array '" + tg_name(in) + "' of " + std::to_string(n) +
                     " elements is more than the interpreter holds (2^28 elements in all)");
      tg_offset[id] = uint32_t(words);
      tg_elems[id] = n;
      words += n;
    });
    if (local_words > kMaxWords)
      throw Error("kernel " + k.name + ": register arrays of " + std::to_string(local_words) +
                  " words in all are more than the interpreter holds");
    local_mem.assign(size_t(local_words), 0);
    local_written.assign(size_t(local_words), 0);
    tg_mem.resize(size_t(words));
    tg_access_log.assign(words, SlotAccess{});
    lane_a.resize(W);
    lane_b.resize(W);
    async_pending.assign(T, {});
    async_next_group.assign(T, 0);
    seen.assign(T, {});
    bulk_pending.assign(T, {});
    bulk_next_group.assign(T, 0);
    acquired.assign(T, 0);
    proxy_fenced_at.assign(T, 0);
  }

  void run() {
    for (uint32_t z = 0; z < grid.z; ++z)
      for (uint32_t y = 0; y < grid.y; ++y)
        for (uint32_t x = 0; x < grid.x; ++x) {
          group[0] = x;
          group[1] = y;
          group[2] = z;
          // All-ones bits: an unwritten slot reads as NaN / -1 / UINT_MAX, deterministically (or is
          // an error with opts.uninitialized_tg_reads_are_errors, see check_race).
          std::fill(tg_mem.begin(), tg_mem.end(), ~uint64_t(0));
          std::fill(local_written.begin(), local_written.end(), 0);
          next_epoch();
          if (++group_serial == 0) {  // wrapped: old records could look current again
            std::fill(tg_access_log.begin(), tg_access_log.end(), SlotAccess{});
            for (auto& [base, bytes] : alias_bytes) std::fill(bytes.begin(), bytes.end(), AliasByte{});
            group_serial = 1;
          }
          for (auto& q : async_pending) q.clear();
          std::fill(async_next_group.begin(), async_next_group.end(), 0);
          mbars.clear();
          delivered.clear();
          bulk_reading.clear();
          for (auto& q : bulk_pending) q.clear();
          std::fill(bulk_next_group.begin(), bulk_next_group.end(), 0);
          for (auto& m : seen) m.clear();
          std::fill(acquired.begin(), acquired.end(), 0);
          std::fill(proxy_fenced_at.begin(), proxy_fenced_at.end(), 0);
          wg_frag.clear();
          wg_inflight.clear();
          wg_commits.clear();
          wg_fenced_at.clear();
          try {
            block(0, 0);
          } catch (...) {
            stop_strands();
            if (abort_error) std::rethrow_exception(std::exchange(abort_error, nullptr));
            throw;
          }
          for (uint32_t t = 0; t < T; ++t)
            if (!bulk_pending[t].empty())
              fail(k.insts[bulk_pending[t].front().op],
                   "bulk_store whose group no bulk_wait completed before the threadgroup ended (" + thread_text(t) +
                       "; the copy engine may still be reading threadgroup memory)");
          for (const auto& [word, m] : mbars)
            if (m.copy_op != ir::kNone)
              fail(k.insts[m.copy_op], "bulk_copy into a phase of mbarrier " + bar_text(word) +
                                           " that never completed before the threadgroup ended (" +
                                           pending_text(m) + " outstanding; the copy engine may still be writing)");
          for (uint32_t t = 0; t < T; ++t)
            if (!async_pending[t].empty())
              fail(k.insts[async_pending[t].front().op],
                   "async_copy whose group no async_wait completed before the kernel ended (" + thread_text(t) +
                       "; its elements never reach threadgroup memory)");
        }
  }

  void block(Id b, int depth) {
    for (Id id : k.blocks[b].insts) inst(id, depth);
  }

  void inst(Id id, int depth) {
    const Mask& active = (*masks_of)[depth];
    const ir::Inst& in = k.insts[id];
    steps += active.size();
    ++clock;
    if (steps > opts.max_steps) fail(in, "kernel exceeded " + std::to_string(opts.max_steps) + " steps (infinite loop?)");
    uint64_t* out = row(id);
    auto fill = [&](uint64_t v) {
      for (uint32_t t : active) out[t] = v;
    };
    const uint32_t axis = uint32_t(std::clamp<int64_t>(in.attr(ir::Attr::Axis), 0, 2));
    const uint32_t tg_dim[3] = {tg.x, tg.y, tg.z};
    const uint32_t grid_dim[3] = {grid.x, grid.y, grid.z};
    const std::vector<uint32_t>* local[3] = {&lx, &ly, &lz};

    switch (in.op) {
      case Op::Const: fill(eval::const_value(in, dtype).bits); return;
      case Op::Param: fill(num::int_wrap(types[id], scalars[size_t(slot[in.param()])])); return;  // i32 sign-extends
      case Op::ThreadId: {
        const std::vector<uint32_t>& l = *local[axis];
        if (types[id] == DType::U64) {  // thread_id64: computed in 64 bits, never wraps
          const uint64_t base = uint64_t(group[axis]) * tg_dim[axis];
          for (uint32_t t : active) out[t] = base + l[t];
          return;
        }
        uint32_t base = group[axis] * tg_dim[axis];  // u32 arithmetic, wraps like the GPU's
        for (uint32_t t : active) out[t] = uint32_t(base + l[t]);
        return;
      }
      case Op::ProgramId: fill(group[axis]); return;
      case Op::LocalId: {
        const std::vector<uint32_t>& l = *local[axis];
        for (uint32_t t : active) out[t] = l[t];
        return;
      }
      case Op::GroupSize: fill(tg_dim[axis]); return;
      case Op::NumPrograms: fill(grid_dim[axis]); return;
      case Op::LaneId: for (uint32_t t : active) out[t] = t % W; return;
      case Op::LaneWidth: fill(W); return;
      case Op::SimdGroupId: for (uint32_t t : active) out[t] = t / W; return;
      case Op::NumSimdGroups: fill((T + W - 1) / W); return;
      case Op::Load:
        if (in.attr(ir::Attr::Vec) >= 2 || in.has(ir::Attr::Lane)) check_vector(id, in, active);
        load(in, out, active);
        return;
      case Op::Store:
        if (in.attr(ir::Attr::Vec) >= 2 || in.has(ir::Attr::Lane)) check_vector(id, in, active);
        store(in, active);
        return;
      case Op::TileFill: case Op::TileLoad: case Op::TileTgLoad: case Op::TileMma: case Op::TileStore:
      case Op::TileTgStore: case Op::TileGet: case Op::TileScaleAdd:
        tile(id, in, out, active);
        return;
      case Op::TileWgMma: case Op::TileWgMmaRs: wg_mma(id, in, active); return;
      case Op::WgFence: case Op::WgCommit: case Op::WgWait: wg_sync(in, active); return;
      case Op::Var:
        if (in.type.is_fragment()) return frag_copy(in, id, in.operands[0], active);
        {
        const uint64_t* init = row(in.operands[0]);
        for (uint32_t t : active) out[t] = init[t];
        return;
        }
      case Op::VarLoad: {
        if (in.type.is_fragment()) return frag_copy(in, id, in.operands[0], active);
        const uint64_t* var = row(in.operands[0]);
        for (uint32_t t : active) out[t] = var[t];
        return;
      }
      case Op::VarStore: {
        if (k.insts[in.operands[0]].type.is_fragment()) return frag_copy(in, in.operands[0], in.operands[1], active);
        uint64_t* var = row(in.operands[0]);
        const uint64_t* v = row(in.operands[1]);
        for (uint32_t t : active) var[t] = v[t];
        return;
      }
      case Op::TgAlloc: return;  // storage exists for the whole threadgroup (set up in run())
      case Op::TgLoad:
      case Op::TgStore: tg_access(in, out, active); return;
      case Op::LocalAlloc: return;  // storage exists for every thread (set up in setup())
      case Op::LocalLoad:
      case Op::LocalStore: local_access(in, out, active); return;
      case Op::Barrier:
        if (active.size() != T)
          fail(in, "barrier reached by " + std::to_string(active.size()) + " of " + std::to_string(T) +
                       " threads (divergent barrier" + others_waiting(self) + ")");
        next_epoch();
        return;
      case Op::LaneSum:
      case Op::LaneMax: lane_reduce(in, out, active); return;
      case Op::LaneMin: case Op::LaneAnd: case Op::LaneOr: case Op::LaneShuffle: case Op::LaneShuffleXor:
      case Op::LaneShuffleUp: case Op::LaneShuffleDown: case Op::LaneBroadcast: case Op::LaneInclusiveSum:
      case Op::LaneExclusiveSum: case Op::LaneBallot: case Op::LaneAny: case Op::LaneAll:
        lane_op(in, out, active);
        return;
      case Op::AtomicAdd: case Op::AtomicMin: case Op::AtomicMax: case Op::AtomicAnd: case Op::AtomicOr:
      case Op::AtomicExchange: case Op::AtomicCas:
        global_atomic(in, out, active);
        return;
      case Op::TgAtomicAdd: case Op::TgAtomicMin: case Op::TgAtomicMax: case Op::TgAtomicAnd: case Op::TgAtomicOr:
      case Op::TgAtomicExchange: case Op::TgAtomicCas:
        tg_access(in, out, active);
        return;
      case Op::AtomicAddPair: atomic_add_pair(in, active); return;
      // Lock step is sequentially consistent: every access is visible to every thread before
      // the next instruction, so a fence has nothing left to order. Fences are not barriers:
      // the race detector still reports plain accesses a fence does not synchronize.
      case Op::FenceThreadgroup: case Op::FenceDevice: return;
      case Op::AsyncCopy: async_copy(in, active); return;
      case Op::AsyncCommit:
        for (uint32_t t : active) {
          for (auto it = async_pending[t].rbegin(); it != async_pending[t].rend() && it->group < 0; ++it)
            it->group = async_next_group[t];
          ++async_next_group[t];
        }
        return;
      case Op::AsyncWait:
        for (uint32_t t : active) {
          const int64_t limit = async_next_group[t] - in.attr(ir::Attr::Count);
          auto& q = async_pending[t];
          while (!q.empty() && q.front().group >= 0 && q.front().group < limit) {
            const AsyncElem& e = q.front();
            check_race(k.insts[e.op], e.word, true, t);
            tg_mem[e.word] = e.bits;
            q.pop_front();
          }
        }
        return;
      case Op::MbarInit: case Op::MbarArrive: case Op::MbarArriveTx: case Op::MbarWait:
        mbar(in, active);
        return;
      case Op::BulkCopy: bulk_copy(in, active); return;
      case Op::TmaLoad2D: case Op::TmaStore2D: tma_copy(in, active); return;
      case Op::BulkStore: bulk_store(in, active); return;
      case Op::BulkCommit:
        for (uint32_t t : active) {
          for (auto it = bulk_pending[t].rbegin(); it != bulk_pending[t].rend() && it->group < 0; ++it)
            it->group = bulk_next_group[t];
          ++bulk_next_group[t];
        }
        return;
      case Op::BulkWait:
        for (uint32_t t : active) {
          const int64_t limit = bulk_next_group[t] - in.attr(ir::Attr::Count);
          auto& q = bulk_pending[t];
          while (!q.empty() && q.front().group >= 0 && q.front().group < limit) {
            for (uint32_t w : q.front().words) {
              auto it = bulk_reading.find(w);
              if (it != bulk_reading.end() && --it->second.first == 0) bulk_reading.erase(it);
            }
            q.pop_front();
          }
        }
        return;
      case Op::FenceProxyAsync:
        for (uint32_t t : active) proxy_fenced_at[t] = clock;
        return;
      case Op::SetMaxNRegInc: case Op::SetMaxNRegDec: {
        // Registers are not modelled; the op's contract is: every thread of each warpgroup (four
        // lane groups) that reaches it reaches it together.
        const uint32_t wg = 4 * W;
        for (size_t i = 0; i < active.size();) {
          const uint32_t g = active[i] / wg;
          size_t j = i;
          while (j < active.size() && active[j] / wg == g) ++j;
          if (j - i != wg)
            fail(in, std::string(ir::mnemonic(in.op)) + " reached by " + std::to_string(j - i) + " of the " +
                         std::to_string(wg) + " threads of warpgroup " + std::to_string(g) +
                         " (every thread of a warpgroup runs it together; a warpgroup is 4 lane groups of " +
                         std::to_string(W) + ")");
          i = j;
        }
        return;
      }
      case Op::If: run_if(in, depth); return;
      case Op::For: run_for(id, in, depth); return;
      default: break;
    }
    // Packed 16-bit pairs: the two 16-bit patterns in the low 32 bits of the register.
    if (in.op == Op::Pair || in.op == Op::PairGet || in.type.is_vector()) {
      const DType elem = in.op == Op::PairGet ? types[in.operands[0]] : types[id];
      const int n = in.num_operands();
      Scalar args[3], r;
      std::string error;
      for (uint32_t t : active) {
        for (int i = 0; i < n; ++i) args[i].bits = row(in.operands[i])[t];
        if (!eval::eval_pair(in.op, elem, in.attr(ir::Attr::Index), args, n, r, error))
          fail(in, std::string("'") + ir::mnemonic(in.op) + "': " + error + " (" + thread_text(t) + ")");
        out[t] = r.bits;
      }
      return;
    }
    if (!eval::is_pure_evaluable(in.op)) fail(in, std::string("the interpreter cannot execute '") + ir::mnemonic(in.op) + "'");

    const int n = in.num_operands();
    const uint64_t* src[3] = {nullptr, nullptr, nullptr};
    for (int i = 0; i < n; ++i) src[i] = row(in.operands[i]);
    DType rt = types[id];
    DType ot = types[in.operands[in.op == Op::Select ? 1 : 0]];
    Scalar args[3], r;
    std::string error;
    for (uint32_t t : active) {
      for (int i = 0; i < n; ++i) args[i].bits = src[i][t];
      if (!eval::eval_pure(in.op, rt, ot, args, n, r, error))
        fail(in, std::string("'") + ir::mnemonic(in.op) + "': " + error + " (" + thread_text(t) + ")");
      out[t] = r.bits;
    }
  }

  // Global memory. 16-bit floats and fp8 are stored rounded to nearest even (fp8 saturating)
  // and widened exactly on load (__float2half_rn / __half2float); integers are stored as the low
  // bytes of their register and read back into canonical form; f32 as its bits.
  struct View {
    unsigned char* data;
    uint64_t count;
    DType storage;
    uint64_t stride = 1;  // a strided view's (BufferArg::stride)
  };
  View view(const ir::Inst& in) const {
    const ir::Param& p = k.params[in.param()];
    const BufferArg& b = buffers[size_t(slot[in.param()])];
    DType st = ir::resolve(p.dtype, dtype);
    return {static_cast<unsigned char*>(b.data), b.bytes / dtype_size(st), st, b.stride};
  }
  void check_index(const ir::Inst& in, const View& v, int64_t idx, uint32_t t) const {
    if (idx < 0 || uint64_t(idx) >= v.count || !v.data) {
      const bool blob = k.params[in.param()].kind == ir::ParamKind::Blob;
      fail(in, std::string(ir::mnemonic(in.op)) + (blob ? " of blob '" : " of buffer '") + k.params[in.param()].name +
                   "' at index " + std::to_string(idx) + " is out of range: the " + (blob ? "blob" : "buffer") + " has " +
                   std::to_string(v.count) + (blob ? " u32 words (" : " elements (") + thread_text(t) + ")");
    }
    if (v.stride > 1 && uint64_t(idx) % v.stride != 0)
      fail(in, std::string(ir::mnemonic(in.op)) + " of buffer '" + k.params[in.param()].name + "' at index " +
                   std::to_string(idx) + " is not an element of its strided view (stride " + std::to_string(v.stride) +
                   ", " + std::to_string(v.count / v.stride + 1) + " elements at indices 0, " + std::to_string(v.stride) +
                   ", ..., " + std::to_string(v.count - 1) + ") (" + thread_text(t) + ")");
  }

  // vectorize groups stay scalar here, but the GPU runs a group as one wide access at the
  // leader's index: check the pass's contract per thread (leader index a multiple of W, member
  // lane L at leader + L), so a bad grouping fails here instead of faulting or miscomputing on
  // a GPU. Members immediately follow their leader in the same block, so its index row is live.
  void check_vector(Id id, const ir::Inst& in, const Mask& active) {
    const int is_store = in.op == Op::Store;
    if (const int64_t width = in.attr(ir::Attr::Vec); width >= 2) {
      vec_leader[is_store] = id;
      for (uint32_t t : active) {
        int64_t idx = index_of(in.operands[0], t);
        if (idx % width != 0)
          fail(in, std::string("vector ") + ir::mnemonic(in.op) + " of " + std::to_string(width) +
                       " elements of buffer '" + k.params[in.param()].name + "' at index " + std::to_string(idx) +
                       ", which is not a multiple of " + std::to_string(width) + " (misaligned; " + thread_text(t) + ")");
      }
      return;
    }
    const Id leader = vec_leader[is_store];
    const int64_t lane = in.attr(ir::Attr::Lane);
    if (leader == ir::kNone || k.insts[leader].param() != in.param() || lane >= k.insts[leader].attr(ir::Attr::Vec))
      fail(in, std::string("vector group member ") + ir::mnemonic(in.op) + " (lane " + std::to_string(lane) +
                   ") of buffer '" + k.params[in.param()].name + "' does not follow a matching group leader");
    for (uint32_t t : active) {
      int64_t idx = index_of(in.operands[0], t);
      int64_t want = index_of(k.insts[leader].operands[0], t) + lane;
      if (idx != want)
        fail(in, std::string("vector group member ") + ir::mnemonic(in.op) + " (lane " + std::to_string(lane) +
                     ") of buffer '" + k.params[in.param()].name + "' is at index " + std::to_string(idx) + ", not " +
                     std::to_string(want) + " (the group is not contiguous; " + thread_text(t) + ")");
    }
  }

  // Element idx of a buffer as a register (checked by the caller).
  static uint64_t read_elem(const View& v, int64_t idx) {
    const size_t size = dtype_size(v.storage);
    const unsigned char* p = v.data + size_t(idx) * size;
    if (v.storage == DType::F16 || v.storage == DType::BF16) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return Scalar::of_f32(v.storage == DType::F16 ? num::f16_to_f32(h) : num::bf16_to_f32(h)).bits;
    }
    if (is_fp8(v.storage)) return Scalar::of_f32(num::fp8_to_f32(v.storage, *p)).bits;
    uint64_t raw = 0;
    std::memcpy(&raw, p, size);  // little-endian: the low bytes
    if (v.storage == DType::Bool) raw = raw != 0;
    else if (is_integer(v.storage)) raw = num::int_wrap(v.storage, raw);
    return raw;
  }

  void load(const ir::Inst& in, uint64_t* out, const Mask& active) {
    if (buffers[size_t(slot[in.param()])].map)
      fail(in, "load of tensor map '" + k.params[in.param()].name +
                   "': its words are the CUDA driver's encoding, which the interpreter does not model (it copies "
                   "through the map's description)");
    View v = view(in);
    for (uint32_t t : active) {
      int64_t idx = index_of(in.operands[0], t);
      check_index(in, v, idx, t);
      out[t] = read_elem(v, idx);
    }
  }

  // async_copy: the source elements are read now (those past `valid` are 0) and land in the
  // array when an async_wait completes their group (docs/semantics.md "Asynchronous copies").
  void async_copy(const ir::Inst& in, const Mask& active) {
    View v = view(in);
    const Id self = Id(&in - k.insts.data());
    const Id alloc = in.operands[0];
    const uint64_t count = uint64_t(in.attr(ir::Attr::Count));
    const uint64_t elems = tg_elems[alloc];
    const uint64_t* valid = row(in.operands[3]);
    for (uint32_t t : active) {
      const int64_t dst = index_of(in.operands[1], t), src = index_of(in.operands[2], t);
      if (dst < 0 || uint64_t(dst) + count > elems)
        fail(in, "async_copy of " + std::to_string(count) + " elements into threadgroup array '" +
                     tg_name(k.insts[alloc]) + "' at index " + std::to_string(dst) + " is out of range: the array has " +
                     std::to_string(elems) + " elements (" + thread_text(t) + ")");
      const uint64_t n = std::min<uint64_t>(uint32_t(valid[t]), count);
      for (uint64_t e = 0; e < count; ++e) {
        uint64_t bits = 0;
        if (e < n) {
          check_index(in, v, src + int64_t(e), t);
          bits = read_elem(v, src + int64_t(e));
        } else {
          bits = is_float(v.storage) ? Scalar::of_f32(0.0f).bits : 0;
        }
        async_pending[t].push_back({self, -1, tg_offset[alloc] + uint32_t(dst + int64_t(e)), bits});
      }
    }
  }

  void store(const ir::Inst& in, const Mask& active) {
    View v = view(in);
    const size_t size = dtype_size(v.storage);
    const uint64_t* val = row(in.operands[1]);
    for (uint32_t t : active) {
      int64_t idx = index_of(in.operands[0], t);
      check_index(in, v, idx, t);
      unsigned char* p = v.data + size_t(idx) * size;
      if (v.storage == DType::F16 || v.storage == DType::BF16) {
        float f = Scalar{val[t]}.f();
        uint16_t h = v.storage == DType::F16 ? num::f32_to_f16(f) : num::f32_to_bf16(f);
        std::memcpy(p, &h, 2);
      } else if (is_fp8(v.storage)) {
        *p = num::f32_to_fp8(v.storage, Scalar{val[t]}.f());
      } else {
        std::memcpy(p, &val[t], size);  // little-endian: the low bytes
      }
    }
  }

  void tg_access(const ir::Inst& in, uint64_t* out, const Mask& active) {
    const Id alloc = in.operands[0];
    const ir::Inst& a = k.insts[alloc];
    uint64_t* mem = tg_mem.data() + tg_offset[alloc];
    const uint64_t count = tg_elems[alloc];
    const bool is_store = in.op == Op::TgStore;
    const DType storage = types[alloc];
    const bool is_bool = storage == DType::Bool;
    const bool is_atomic = ir::is_tg_atomic(in.op);
    const ir::AtomicOperands ao = is_atomic ? ir::atomic_operands(in) : ir::AtomicOperands{};
    const uint64_t* val = is_store ? row(in.operands[2]) : is_atomic ? row(ao.value) : nullptr;
    const uint64_t* expected = ao.expected != ir::kNone ? row(ao.expected) : nullptr;
    for (uint32_t t : active) {
      int64_t idx = index_of(in.operands[1], t);
      if (idx < 0 || uint64_t(idx) >= count)
        fail(in, std::string(ir::mnemonic(in.op)) + " of threadgroup array '" +
                     tg_name(a) + "' at index " + std::to_string(idx) +
                     " is out of range: the array has " + std::to_string(count) + " elements (" + thread_text(t) + ")");
      if (is_atomic) {
        check_atomic_race(in, tg_offset[alloc] + uint32_t(idx), t);
        const uint64_t old = word_register(storage, mem[idx]);
        out[t] = old;
        mem[idx] = atomic_update(ir::atomic_kind(in.op), storage, old, val[t], expected ? expected[t] : 0);
        continue;
      }
      check_race(in, tg_offset[alloc] + uint32_t(idx), is_store, t);
      // An array holds values of its dtype: a store to a 16-bit float or fp8 array rounds to
      // nearest even (fp8 saturating), like a store to such a buffer (the register value may
      // carry f32 precision), and a load widens exactly; integers keep their canonical register.
      // The all-ones filler reads as true, NaN, -1 or the integer type's maximum.
      if (is_store) {
        mem[idx] = is_integer(storage) ? num::int_wrap(storage, val[t])
                   : is_float(storage) ? Scalar::of_f32(num::round_to(storage, Scalar{val[t]}.f())).bits
                                       : val[t];
      } else {
        out[t] = is_bool ? uint64_t(mem[idx] != 0)
                 : is_integer(storage) ? num::int_wrap(storage, mem[idx])
                 : is_float(storage)   ? Scalar::of_f32(Scalar{mem[idx]}.f()).bits
                                       : mem[idx];
      }
    }
  }

  // Register arrays: one copy per thread, no sharing, so no race rules; every index must be in
  // range and a read must follow the thread's own write of that element.
  void local_access(const ir::Inst& in, uint64_t* out, const Mask& active) {
    const Id alloc = in.operands[0];
    const ir::Inst& a = k.insts[alloc];
    const uint64_t count = uint64_t(std::max<int64_t>(a.attr(ir::Attr::Count), 0));
    const bool is_store = in.op == Op::LocalStore;
    const uint64_t* val = is_store ? row(in.operands[2]) : nullptr;
    for (uint32_t t : active) {
      int64_t idx = index_of(in.operands[1], t);
      if (idx < 0 || uint64_t(idx) >= count)
        fail(in, std::string(ir::mnemonic(in.op)) + " of register array '" + tg_name(a) + "' at index " +
                     std::to_string(idx) + " is out of range: the array has " + std::to_string(count) + " elements (" +
                     thread_text(t) + ")");
      const size_t w = local_offset[alloc] + size_t(idx) * T + t;
      if (is_store) {
        local_mem[w] = val[t];
        local_written[w] = 1;
      } else {
        if (!local_written[w])
          fail(in, "local_load of register array '" + tg_name(a) + "' element " + std::to_string(idx) +
                       " before the thread wrote it (" + thread_text(t) + ")");
        out[t] = local_mem[w];
      }
    }
  }

  // --- Cooperative tiles (docs/semantics.md "Cooperative tiles") ---------------------------
  // A fragment belongs to a lane group, so its elements live in a side table keyed by value id
  // and lane group: frags[id][group * elements + e], row-major (A: M x K, B: K x N, acc: M x N).
  // A and B elements are held as the f32 values of their f16/bf16 inputs (exact).
  std::vector<std::vector<float>> frags;

  static uint32_t frag_elements(Type t) {
    switch (t.role()) {
      case FragRole::A: return t.m() * t.k();
      case FragRole::B: return t.k() * t.n();
      case FragRole::Acc: return t.m() * t.n();
    }
    return 0;
  }
  float* frag_data(Id id, uint32_t g) {
    if (frags.size() < k.insts.size()) frags.resize(k.insts.size());
    const uint32_t e = frag_elements(k.insts[id].type);
    std::vector<float>& f = frags[id];
    if (f.empty()) f.assign(size_t((T + W - 1) / W) * e, 0.0f);
    return f.data() + size_t(g) * e;
  }

  // Calls fn(group) for every lane group of `active`; each must be complete (a tile op is a
  // lane-group operation, like a lane reduction).
  template <class Fn>
  void each_group(const ir::Inst& in, const Mask& active, Fn&& fn) {
    for_each_lane_group(in, active, [&](uint32_t base) { fn(base / W); });
  }
  // The value of a scalar operand that every lane of group g must agree on.
  uint32_t uniform(const ir::Inst& in, int operand, uint32_t g, const char* what) {
    const uint64_t* v = row(in.operands[operand]);
    for (uint32_t l = 1; l < W; ++l)
      if (v[g * W + l] != v[g * W])
        fail(in, std::string(ir::mnemonic(in.op)) + ": " + what + " differs across lane group " + std::to_string(g) +
                     " (lane 0: " + std::to_string(v[g * W]) + ", lane " + std::to_string(l) + ": " +
                     std::to_string(v[g * W + l]) + "); a tile operand must be the same in every lane");
    return uint32_t(v[g * W]);
  }

  // A copy (var, var_load, var_store) moves the registers as they are: a product in flight in
  // them stays in flight in the copy, retired by the same wg_wait.
  void frag_copy(const ir::Inst& in, Id to, Id from, const Mask& active) {
    const uint32_t e = frag_elements(k.insts[to].type);
    each_group(in, active, [&](uint32_t g) {
      std::copy_n(frag_data(from, g), e, frag_data(to, g));
      const WgFrag src = wgf(from, g);
      wgf(to, g) = src;
      std::vector<Id>& fl = wg_inflight_of(g);
      if (src.pending && std::find(fl.begin(), fl.end(), to) == fl.end()) fl.push_back(to);
    });
  }

  // --- Asynchronous warpgroup products (docs/semantics.md "Asynchronous warpgroup products") --
  // Per fragment value or variable and lane group: the group serial of the asynchronous
  // tile_wg_mma whose result the registers will hold (kOpen until wg_commit numbers it; 0: none
  // in flight), the op that issued it, and the clock of the last ordinary write (fill, load,
  // lane-group product, waited product), which a wg_fence must follow before an issue reads it.
  struct WgFrag {
    uint32_t pending = 0;
    Id issue = ir::kNone;
    uint64_t written = 0;
  };
  static constexpr uint32_t kOpen = UINT32_MAX;
  std::vector<std::vector<WgFrag>> wg_frag;        // [id][lane group]
  std::vector<std::vector<Id>> wg_inflight;       // per lane group: ids with pending != 0
  std::vector<uint32_t> wg_commits;               // per lane group: wg_commit count
  std::vector<uint64_t> wg_fenced_at;             // per lane group: clock of its last wg_fence
  WgFrag& wgf(Id id, uint32_t g) {
    if (wg_frag.size() < k.insts.size()) wg_frag.resize(k.insts.size());
    std::vector<WgFrag>& v = wg_frag[id];
    if (v.size() <= g) v.resize(size_t((T + W - 1) / W));
    return v[g];
  }
  std::vector<Id>& wg_inflight_of(uint32_t g) {
    if (wg_inflight.size() <= g) {
      const size_t n = size_t((T + W - 1) / W);
      wg_inflight.resize(n);
      wg_commits.resize(n, 0);
      wg_fenced_at.resize(n, 0);
    }
    return wg_inflight[g];
  }
  // An ordinary write of fragment `id` by lane group g.
  void frag_written(Id id, uint32_t g) { wgf(id, g) = WgFrag{0, ir::kNone, clock}; }
  // A read of fragment `id` by lane group g other than an issue chaining onto it: an error while
  // a product is still in flight in it.
  void frag_read(const ir::Inst& in, Id id, uint32_t g) {
    const WgFrag& f = wgf(id, g);
    if (!f.pending) return;
    fail(in, std::string(ir::mnemonic(in.op)) + " reads a warpgroup accumulator while the asynchronous " +
                 ir::mnemonic(k.insts[f.issue].op) + " issued at " + k.where(k.insts[f.issue].loc) +
                 " is still in flight in it (lane group " + std::to_string(g) + "; " +
                 (f.pending == kOpen ? "its group was never committed: wg_commit, then wg_wait"
                                     : "no wg_wait retired its group") +
                 ")");
  }
  void wg_sync(const ir::Inst& in, const Mask& active) {
    each_group(in, active, [&](uint32_t g) {
      std::vector<Id>& fl = wg_inflight_of(g);
      if (in.op == Op::WgFence) {
        wg_fenced_at[g] = clock;
      } else if (in.op == Op::WgCommit) {
        ++wg_commits[g];
        for (Id id : fl)
          if (wgf(id, g).pending == kOpen) wgf(id, g).pending = wg_commits[g];
      } else {
        // Retire every committed group but the newest n.
        const int64_t limit = int64_t(wg_commits[g]) - in.attr(ir::Attr::Count);
        std::vector<Id> keep;
        for (Id id : fl) {
          WgFrag& f = wgf(id, g);
          if (f.pending != kOpen && int64_t(f.pending) <= limit) f.pending = 0;
          else if (f.pending) keep.push_back(id);
        }
        fl.swap(keep);
      }
    });
  }

  // Rounds a loaded element to the fragment's input type (values already of that type are kept).
  float to_input(DType elem, float v) const {
    if (is_fp8(elem)) return num::fp8_to_f32(elem, num::f32_to_fp8(elem, v));
    return elem == DType::BF16 ? num::bf16_to_f32(num::f32_to_bf16(v)) : num::f16_to_f32(num::f32_to_f16(v));
  }

  void tile(Id id, const ir::Inst& in, uint64_t* out, const Mask& active) {
    switch (in.op) {
      case Op::TileFill:
        each_group(in, active, [&](uint32_t g) {
          const float v = Scalar{uniform(in, 0, g, "the fill value")}.f();
          std::fill_n(frag_data(id, g), frag_elements(in.type), v);
          frag_written(id, g);
        });
        return;
      case Op::TileLoad: case Op::TileTgLoad: {
        const bool tg = in.op == Op::TileTgLoad;
        const Type ft = in.type;
        const DType elem = types[id];
        const uint32_t rows = ft.role() == FragRole::A ? ft.m() : ft.k();
        const uint32_t cols = ft.role() == FragRole::A ? ft.k() : ft.n();
        each_group(in, active, [&](uint32_t g) {
          const uint32_t off = uniform(in, tg ? 1 : 0, g, "the offset");
          const uint32_t stride = uniform(in, tg ? 2 : 1, g, "the row stride");
          float* f = frag_data(id, g);
          frag_written(id, g);
          // Column-major: element (r, c) at off + c * stride + r. A swizzle maps the whole index
          // (the offset folded in first), docs/semantics.md "Tile layouts".
          const bool col_major = in.has(ir::Attr::ColMajor) && in.attr(ir::Attr::ColMajor) == 1;
          const int64_t swz = in.has(ir::Attr::Swizzle) ? in.attr(ir::Attr::Swizzle) : 0;
          for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < cols; ++c) {
              // u32 arithmetic, as every backend computes it
              uint32_t idx = col_major ? off + c * stride + r : off + r * stride + c;
              if (swz) idx = ir::swizzle_index(idx, swz);
              f[r * cols + c] = to_input(elem, Scalar{tg ? tile_tg_read(in, idx, g) : tile_read(in, idx, g)}.f());
            }
        });
        return;
      }
      case Op::TileMma: {
        const Type at = k.insts[in.operands[0]].type;
        const uint32_t M = at.m(), N = at.n(), K = at.k();
        each_group(in, active, [&](uint32_t g) {
          for (int o = 0; o < 3; ++o) frag_read(in, in.operands[size_t(o)], g);
          frag_written(id, g);
          const float* a = frag_data(in.operands[0], g);
          const float* b = frag_data(in.operands[1], g);
          const float* c = frag_data(in.operands[2], g);
          float* d = frag_data(id, g);
          // Each product of two f16/bf16/f8e4m3 values is exact in f64; the sum runs in k order
          // in f64 and is rounded to f32 once.
          for (uint32_t i = 0; i < M; ++i)
            for (uint32_t j = 0; j < N; ++j) {
              double sum = double(c[i * N + j]);
              for (uint32_t kk = 0; kk < K; ++kk) sum += double(a[i * K + kk]) * double(b[kk * N + j]);
              d[i * N + j] = float(sum);
            }
        });
        return;
      }
      case Op::TileStore: case Op::TileTgStore: {
        const bool tg = in.op == Op::TileTgStore;
        const Id src = in.operands[tg ? 1 : 0];
        const Type ft = k.insts[src].type;
        each_group(in, active, [&](uint32_t g) {
          frag_read(in, src, g);
          const uint32_t off = uniform(in, tg ? 2 : 1, g, "the offset");
          const uint32_t stride = uniform(in, tg ? 3 : 2, g, "the row stride");
          const float* f = frag_data(src, g);
          for (uint32_t r = 0; r < ft.m(); ++r)
            for (uint32_t c = 0; c < ft.n(); ++c) {
              const uint32_t e = r * ft.n() + c;
              const uint32_t idx = off + r * stride + c;
              const uint32_t bits = uint32_t(Scalar::of_f32(f[e]).bits);
              // Element e counts as written by lane e mod W (the race detector's view).
              if (tg) tile_tg_write(in, idx, bits, g * W + e % W);
              else tile_write(in, idx, bits, g * W + e % W);
            }
        });
        return;
      }
      case Op::TileScaleAdd: {
        // d(r, c) = fma(x(r, c), scales[off + r], acc(r, c)) in f32, one rounding. Both operands
        // may be warpgroup accumulators: a product still in flight in either is an error.
        const Type ft = in.type;
        each_group(in, active, [&](uint32_t g) {
          const uint32_t off = uniform(in, 1, g, "the offset");
          for (int o = 2; o < 4; ++o) frag_read(in, in.operands[size_t(o)], g);
          frag_written(id, g);
          const float* x = frag_data(in.operands[2], g);
          const float* c = frag_data(in.operands[3], g);
          float* d = frag_data(id, g);
          for (uint32_t r = 0; r < ft.m(); ++r) {
            const float sc = Scalar{tile_tg_read(in, off + r, g)}.f();
            for (uint32_t j = 0; j < ft.n(); ++j) d[r * ft.n() + j] = std::fma(x[r * ft.n() + j], sc, c[r * ft.n() + j]);
          }
        });
        return;
      }
      case Op::TileGet: {
        const Type ft = k.insts[in.operands[0]].type;
        const uint32_t e = uint32_t(in.attr(ir::Attr::Row)) * ft.n() + uint32_t(in.attr(ir::Attr::Col));
        each_group(in, active, [&](uint32_t g) {
          frag_read(in, in.operands[0], g);
          const uint64_t bits = Scalar::of_f32(frag_data(in.operands[0], g)[e]).bits;
          for (uint32_t l = 0; l < W; ++l) out[g * W + l] = bits;
        });
        return;
      }
      default: return;
    }
  }

  // tile_wg_mma (docs/semantics.md "Warpgroup tiles"): every lane group of a warpgroup (4
  // consecutive lane groups from a multiple of 4) runs it together with the same operands; lane
  // group q of the warpgroup gets acc + A[16q .., 0 .. K - 1] x B (K 16, or 32 for fp8). Each operand starts 16-byte
  // aligned in the first 128 bytes of a 1024-byte swizzle atom, and an ordinary store to an
  // element it reads needs its writer's fence_proxy_async (wgmma reads through the async proxy).
  // tile_wg_mma_rs: A is lane group q's own A fragment (rows 16q .. of the warpgroup's A).
  void wg_mma(Id id, const ir::Inst& in, const Mask& active) {
    const bool rs = in.op == Op::TileWgMmaRs;
    const std::string name = ir::mnemonic(in.op);
    std::vector<uint32_t> groups;
    each_group(in, active, [&](uint32_t g) { groups.push_back(g); });
    const uint32_t n_groups = (T + W - 1) / W;
    const int64_t swz = in.attr(ir::Attr::Swizzle);
    // S elements per row; K elements of each row per product (16 16-bit, 32 fp8: 32 bytes).
    const uint32_t S = ir::wgmma_row_elems(swz), K = ir::wgmma_k(swz), eb = ir::wgmma_elem_bytes(swz);
    for (size_t i = 0; i < groups.size(); ++i) {
      const uint32_t g = groups[i], first = g / 4 * 4;
      bool whole = first + 3 < n_groups;
      for (uint32_t q = 0; q < 4 && whole; ++q)
        whole = std::find(groups.begin(), groups.end(), first + q) != groups.end();
      if (!whole) {
        std::string who;
        for (uint32_t x : groups) who += (who.empty() ? "" : ", ") + std::to_string(x);
        fail(in, name + " reached by lane groups " + who + " of " + std::to_string(n_groups) +
                     ": a warpgroup is 4 consecutive lane groups of " + std::to_string(W) +
                     " starting at a multiple of 4, and all 4 run it together (lane group " + std::to_string(g) +
                     "'s warpgroup is lane groups " + std::to_string(first) + " .. " + std::to_string(first + 3) + ")");
      }
    }
    // An asynchronous issue may chain onto an accumulator in flight (wgmma keeps products of one
    // shape on the same registers in order); registers the lane group wrote otherwise need a
    // wg_fence after the write. A waited product reads no register in flight.
    const bool async = in.attr(ir::Attr::Async) == 1;
    const Id acc_id = in.operands[rs ? 3 : 4];
    for (uint32_t g : groups) {
      for (Id o : {acc_id, rs ? in.operands[0] : ir::kNone}) {
        if (o == ir::kNone) continue;
        if (!async || (o != acc_id && wgf(o, g).pending)) {
          frag_read(in, o, g);
          continue;
        }
        const WgFrag& f = wgf(o, g);
        wg_inflight_of(g);
        if (!f.pending && f.written >= wg_fenced_at[g])
          fail(in, name + " (async) reads " + (o == acc_id ? "an accumulator" : "an A fragment") + " lane group " +
                       std::to_string(g) + " wrote at " + k.where(k.insts[o].loc) +
                       " with no wg_fence after the write (wgmma reads registers asynchronously: wg_fence, then issue)");
      }
      if (async) {
        wgf(id, g) = WgFrag{kOpen, id, 0};
        std::vector<Id>& fl = wg_inflight_of(g);
        if (std::find(fl.begin(), fl.end(), id) == fl.end()) fl.push_back(id);
      } else {
        frag_written(id, g);
      }
    }
    for (uint32_t g : groups) {
      const uint32_t first = g / 4 * 4, q = g % 4;
      uint32_t off[2] = {0, 0};
      for (int o = rs ? 1 : 0; o < 2; ++o) {
        const char* what = o == 0 ? "A's offset" : "B's offset";
        const int operand = rs ? 2 : 2 * o + 1;
        off[o] = uniform(in, operand, g, what);
        const uint32_t lead = uniform(in, operand, first, what);
        if (off[o] != lead)
          fail(in, name + ": " + what + " differs across the warpgroup (lane group " + std::to_string(first) +
                       ": " + std::to_string(lead) + ", lane group " + std::to_string(g) + ": " + std::to_string(off[o]) +
                       "); a warpgroup's operands are one descriptor");
        const uint64_t bytes = uint64_t(off[o]) * eb;
        if (bytes % 16 != 0 || bytes % 1024 >= 128)
          fail(in, name + ": " + what + " " + std::to_string(off[o]) +
                       " does not start a wgmma operand: its byte offset (" + std::to_string(bytes) +
                       ") must be a multiple of 16 within the first 128 bytes of a 1024-byte swizzle atom");
      }
      // The 64 x K A of the warpgroup (this lane group's 16 rows) and the K x N B (N the
      // accumulator's width: 16, or a warpgroup accumulator's up to 256), read through the
      // swizzle as every lane of the group; fp8 elements decode exactly.
      const int bi = rs ? 1 : 2;
      const DType ea = types[in.operands[0]], eb_t = types[in.operands[size_t(bi)]];
      const uint32_t N = in.type.n();
      std::vector<double> a(size_t(16) * K), b(size_t(K) * N);
      const float* fa = rs ? frag_data(in.operands[0], g) : nullptr;
      for (uint32_t r = 0; r < 16; ++r)
        for (uint32_t c = 0; c < K; ++c)
          a[r * K + c] = rs ? double(fa[r * K + c])
                            : double(to_input(ea, Scalar{wg_read(in, 0, ir::swizzle_index(off[0] + (16 * q + r) * S + c, swz), g)}.f()));
      // B(k = r, n = c) is column-major: element (r, c) at c * S + r.
      for (uint32_t r = 0; r < K; ++r)
        for (uint32_t c = 0; c < N; ++c)
          b[r * N + c] = double(to_input(eb_t, Scalar{wg_read(in, bi, ir::swizzle_index(off[1] + c * S + r, swz), g)}.f()));
      // The multiply-accumulate definition: the exact products summed in f64 in k order from
      // the accumulator, rounded to f32 once.
      const float* cin = frag_data(in.operands[rs ? 3 : 4], g);
      float* d = frag_data(id, g);
      for (uint32_t i = 0; i < 16; ++i)
        for (uint32_t j = 0; j < N; ++j) {
          double sum = double(cin[i * N + j]);
          for (uint32_t kk = 0; kk < K; ++kk) sum += a[i * K + kk] * b[kk * N + j];
          d[i * N + j] = float(sum);
        }
    }
  }
  // An element of tile_wg_mma's operand array (operand `o`) at idx, read by lane group g.
  uint32_t wg_read(const ir::Inst& in, int o, uint32_t idx, uint32_t g) {
    const Id alloc = in.operands[size_t(o)];
    const uint64_t count = tg_elems[alloc];
    if (idx >= count)
      fail(in, std::string(ir::mnemonic(in.op)) + " reads " + (o == 0 ? "A" : "B") + "'s threadgroup array '" + tg_name(k.insts[alloc]) +
                   "' at index " + std::to_string(idx) + ", out of range: the array has " + std::to_string(count) +
                   " elements (" + thread_text(g * W) + ")");
    const uint32_t word = tg_offset[alloc] + idx;
    const SlotAccess& s = tg_access_log[word];
    if (s.written_group == group_serial && s.writer != kCopyEngine && s.writer < T && proxy_fenced_at[s.writer] < s.write_time)
      fail(in, std::string(ir::mnemonic(in.op)) + " reads threadgroup slot '" + tg_name(k.insts[alloc]) + "'[" + std::to_string(idx) + "], which " +
                   thread_text(s.writer) + " stored to at " + k.where(k.insts[s.write_op].loc) +
                   " with no fence_proxy_async after the store (wgmma reads shared memory through the async proxy; " +
                   thread_text(g * W) + ")");
    for (uint32_t l = 0; l < W; ++l) check_race(in, word, false, g * W + l);
    return uint32_t(tg_mem[word]);
  }

  uint32_t tile_read(const ir::Inst& in, uint32_t idx, uint32_t g) {
    View v = view(in);
    check_index(in, v, idx, g * W);
    const unsigned char* p = v.data + size_t(idx) * dtype_size(v.storage);
    if (v.storage == DType::F16 || v.storage == DType::BF16) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return uint32_t(Scalar::of_f32(v.storage == DType::F16 ? num::f16_to_f32(h) : num::bf16_to_f32(h)).bits);
    }
    if (v.storage == DType::F8E4M3) return uint32_t(Scalar::of_f32(num::fp8_to_f32(v.storage, *p)).bits);
    uint32_t bits;
    std::memcpy(&bits, p, 4);
    return bits;
  }
  void tile_write(const ir::Inst& in, uint32_t idx, uint32_t bits, uint32_t t) {
    View v = view(in);
    check_index(in, v, idx, t);
    std::memcpy(v.data + size_t(idx) * 4, &bits, 4);
  }
  void tile_tg_check(const ir::Inst& in, uint32_t idx, uint32_t t) const {
    const ir::Inst& a = k.insts[in.operands[0]];
    const uint64_t count = tg_elems[in.operands[0]];  // sized at dispatch
    if (idx >= count)
      fail(in, std::string(ir::mnemonic(in.op)) + " of threadgroup array '" + tg_name(a) + "' at index " +
                   std::to_string(idx) + " is out of range: the array has " + std::to_string(count) + " elements (" +
                   thread_text(t) + ")");
  }
  // A tile read counts as a read by every lane of the group (the race detector's view).
  uint32_t tile_tg_read(const ir::Inst& in, uint32_t idx, uint32_t g) {
    tile_tg_check(in, idx, g * W);
    const uint32_t word = tg_offset[in.operands[0]] + idx;
    for (uint32_t l = 0; l < W; ++l) check_race(in, word, false, g * W + l);
    return uint32_t(tg_mem[word]);  // a float slot holds its f32 bits
  }
  void tile_tg_write(const ir::Inst& in, uint32_t idx, uint32_t bits, uint32_t t) {
    tile_tg_check(in, idx, t);
    const uint32_t word = tg_offset[in.operands[0]] + idx;
    check_race(in, word, true, t);
    tg_mem[word] = bits;
  }

  void next_epoch() {
    if (++epoch == 0) {  // wrapped: old records could look current again
      for (auto& [base, bytes] : alias_bytes) std::fill(bytes.begin(), bytes.end(), AliasByte{});
      std::fill(tg_access_log.begin(), tg_access_log.end(), SlotAccess{});
      epoch = 1;
    }
  }

  // A GPU runs the threads of a group in no fixed order between barriers, so an access to a
  // slot another thread wrote since the last barrier (read after write, write after write), or
  // a write to a slot another thread read since then (write after read), has no defined result
  // even though the lock-step interpreter would compute one. Each is an error naming both ops.
  void check_alias(const ir::Inst& in, uint32_t word, bool is_store, uint32_t t) {
    const Id view = in.operands[0], base = view_base[view];
    auto& bytes = alias_bytes[base];
    const uint64_t size = dtype_size(types[view]), slot = word - tg_offset[view];
    const uint64_t first = view_byte0[view] + slot * size;
    const Id self = Id(&in - k.insts.data());
    auto name = [&](Id v) { return tg_name(k.insts[v]); };
    for (uint64_t b = first; b < first + size && b < bytes.size(); ++b) {
      AliasByte& r = bytes[size_t(b)];
      if (r.epoch == epoch && r.last != view && (r.last_wrote || is_store))
        fail(in, "threadgroup alias: " + thread_text(t) + (is_store ? " writes" : " reads") + " byte " + std::to_string(b) +
                     " of '" + name(base) + "' through '" + name(view) + "' after " + (r.last_wrote ? "a write" : "a read") +
                     " of it through '" + name(r.last) + "' at " + k.where(k.insts[r.last_op].loc) +
                     " with no barrier between");
      if (!is_store && r.written_group == group_serial && r.writer != view)
        fail(in, "threadgroup alias: " + thread_text(t) + " reads byte " + std::to_string(b) + " of '" + name(base) +
                     "' through '" + name(view) + "', last written through '" + name(r.writer) + "' at " +
                     k.where(k.insts[r.writer_op].loc) + " (a view reads only what was written through it)");
      if (r.epoch != epoch || r.last != view) r.last_wrote = false;
      r.epoch = epoch;
      r.last = view;
      r.last_op = self;
      r.last_wrote = r.last_wrote || is_store;
      if (is_store) {
        r.written_group = group_serial;
        r.writer = view;
        r.writer_op = self;
      }
    }
  }

  void check_race(const ir::Inst& in, uint32_t word, bool is_store, uint32_t t) {
    if (view_base[in.operands[0]] != ir::kNone) check_alias(in, word, is_store, t);
    SlotAccess& s = tg_access_log[word];
    const Id self = Id(&in - k.insts.data());
    if (!delivered.empty()) check_delivered(in, word, is_store, t);
    if (is_store && !bulk_reading.empty()) check_bulk_reading(in, word, t);
    auto race = [&](const char* kind, uint32_t other, Id other_op, const char* other_did) {
      const ir::Inst& a = k.insts[in.operands[0]];
      const std::string name = tg_name(a);
      const uint32_t slot = word - tg_offset[in.operands[0]];
      std::string other_text = other == kManyReaders ? "other threads" : thread_text(other);
      std::string where = other_op == ir::kNone ? "" : " at " + k.where(k.insts[other_op].loc);
      fail(in, std::string("threadgroup memory race (") + kind + ") on '" + name + "'[" + std::to_string(slot) +
                   "]: " + thread_text(t) + (is_store ? " writes" : " reads") + " the slot " + other_text + " " +
                   other_did + where + " with no barrier between");
    };
    if (!is_store && s.written_group != group_serial && opts.uninitialized_tg_reads_are_errors) {
      const ir::Inst& a = k.insts[in.operands[0]];
      fail(in, "read of threadgroup slot '" + tg_name(a) + "'[" +
                   std::to_string(word - tg_offset[in.operands[0]]) + "] that no thread of this threadgroup has written (" +
                   thread_text(t) + "; threadgroup memory starts undefined)");
    }
    // An access before the completion of an mbarrier phase this thread has since waited for is
    // ordered before this one (acquired[t]).
    if (s.write_epoch == epoch && s.writer != t && s.write_time >= acquired[t])
      race(is_store ? "write after write" : "read after write", s.writer, s.write_op, "wrote");
    if (s.atomic_epoch == epoch && s.atomic_thread != t)
      race(is_store ? "write after atomic" : "read after atomic", s.atomic_thread, s.atomic_op, "updated atomically");
    if (is_store) {
      s.written_group = group_serial;
      if (s.read_epoch == epoch && s.reader != t && s.read_time >= acquired[t])
        race("write after read", s.reader, s.read_op, "read");
      s.write_epoch = epoch;
      s.writer = t;
      s.write_op = self;
      s.write_time = clock;
    } else if (s.read_epoch != epoch) {
      s.read_epoch = epoch;
      s.reader = t;
      s.read_op = self;
      s.read_time = clock;
    } else {
      if (s.reader != t) s.reader = kManyReaders;
      s.read_time = clock;
    }
  }

  // --- mbarriers and bulk copies (docs/semantics.md "mbarriers") -----------------------------
  std::string bar_text(uint32_t word) const {
    // The array whose words hold `word`: the TgAlloc with the greatest offset not past it.
    Id best = ir::kNone;
    for (Id id = 0; id < Id(k.insts.size()); ++id)
      if (k.insts[id].op == Op::TgAlloc && tg_elems[id] > 0 && tg_offset[id] <= word &&
          word - tg_offset[id] < tg_elems[id])
        best = id;
    if (best == ir::kNone) return "?";
    return "'" + tg_name(k.insts[best]) + "'[" + std::to_string(word - tg_offset[best]) + "]";
  }
  static std::string pending_text(const Mbar& m) {
    return std::to_string(m.pending) + " of " + std::to_string(m.count) + " arrivals and " + std::to_string(m.tx) +
           " transaction bytes";
  }
  // Counts `arrivals` and `bytes` against the barrier's phase; completes it when both are in.
  void mbar_progress(Mbar& m, uint32_t arrivals, int64_t bytes) {
    m.pending -= arrivals;
    m.tx -= bytes;
    if (m.pending == 0 && m.tx == 0) {
      ++m.phase;
      m.pending = m.count;
      m.completed_at = clock;
      m.copy_op = ir::kNone;
    }
  }
  Mbar& mbar_state(const ir::Inst& in, uint32_t word, uint32_t t) {
    auto it = mbars.find(word);
    if (it == mbars.end())
      fail(in, std::string(ir::mnemonic(in.op)) + " on mbarrier " + bar_text(word) +
                   ", which no mbar_init of this threadgroup initialized (" + thread_text(t) + ")");
    Mbar& m = it->second;
    if (m.init_epoch == epoch && m.init_thread != t)
      fail(in, std::string(ir::mnemonic(in.op)) + " on mbarrier " + bar_text(word) + ", which " +
                   thread_text(m.init_thread) + " initialized at " + k.where(k.insts[m.init_op].loc) +
                   " with no barrier between (" + thread_text(t) + ")");
    return m;
  }
  uint32_t mbar_word(const ir::Inst& in, Id alloc, Id index, uint32_t t) {
    const int64_t idx = index_of(index, t);
    if (idx < 0 || uint64_t(idx) >= tg_elems[alloc])
      fail(in, std::string(ir::mnemonic(in.op)) + " of mbarrier array '" + tg_name(k.insts[alloc]) + "' at index " +
                   std::to_string(idx) + " is out of range: the array has " + std::to_string(tg_elems[alloc]) +
                   " barriers (" + thread_text(t) + ")");
    return tg_offset[alloc] + uint32_t(idx);
  }

  void mbar(const ir::Inst& in, const Mask& active) {
    const Id self = Id(&in - k.insts.data());
    const uint64_t* extra = in.num_operands() > 2 ? row(in.operands[2]) : nullptr;
    if (in.op == Op::MbarWait) mbar_block(in, active, extra);
    for (uint32_t t : active) {
      const uint32_t word = mbar_word(in, in.operands[0], in.operands[1], t);
      if (in.op == Op::MbarInit) {
        const uint64_t n = uint32_t(extra[t]);
        if (n == 0 || n >= (1u << 20))
          fail(in, "mbar_init of mbarrier " + bar_text(word) + " with " + std::to_string(n) +
                       " arrivals; the count is 1 to 2^20 - 1 (" + thread_text(t) + ")");
        if (auto it = mbars.find(word); it != mbars.end())
          fail(in, "mbar_init of mbarrier " + bar_text(word) + ", which " + thread_text(it->second.init_thread) +
                       " already initialized at " + k.where(k.insts[it->second.init_op].loc) + " (" + thread_text(t) + ")");
        Mbar m;
        m.init_op = self;
        m.init_thread = t;
        m.init_epoch = epoch;
        m.count = m.pending = uint32_t(n);
        mbars.emplace(word, m);
        continue;
      }
      Mbar& m = mbar_state(in, word, t);
      if (in.op == Op::MbarArrive || in.op == Op::MbarArriveTx) {
        const int64_t bytes = in.op == Op::MbarArriveTx ? int64_t(uint32_t(extra[t])) : 0;
        if (m.pending == 0)
          fail(in, std::string(ir::mnemonic(in.op)) + " on mbarrier " + bar_text(word) + " in phase " +
                       std::to_string(m.phase) + ", whose " + std::to_string(m.count) +
                       " arrivals are all in (it waits for transaction bytes only): more arrivals than its count (" +
                       thread_text(t) + ")");
        if (bytes >= (int64_t(1) << 20))
          fail(in, "mbar_arrive_tx of " + std::to_string(bytes) + " bytes on mbarrier " + bar_text(word) +
                       "; a phase expects at most 2^20 - 1 (" + thread_text(t) + ")");
        mbar_progress(m, 1, -bytes);
        continue;
      }
      // mbar_wait: the phase of this parity that the barrier is in or last completed.
      const uint64_t parity = uint32_t(extra[t]);
      if (parity > 1)
        fail(in, "mbar_wait on mbarrier " + bar_text(word) + " with parity " + std::to_string(parity) +
                     "; the parity is 0 or 1 (" + thread_text(t) + ")");
      const int64_t target = m.phase - 1;  // -1: the phase before the first, which counts as done
      auto [it, fresh] = seen[t].emplace(word, target);
      if (!fresh) {
        if (it->second >= target)
          fail(in, "mbar_wait on mbarrier " + bar_text(word) + " with parity " + std::to_string(parity) +
                       " names phase " + std::to_string(target) + ", which " + thread_text(t) +
                       " already waited for: on a GPU this wait passes at once, before phase " +
                       std::to_string(m.phase) + " completes (a wait on the wrong phase: flip the parity after each wait)");
        it->second = target;
      }
      if (target >= 0) acquired[t] = std::max(acquired[t], m.completed_at);
      m.waited = std::max(m.waited, target);
    }
  }

  // Before an mbar_wait's bookkeeping: while the phase some thread of `active` waits for is
  // incomplete, the strand waits and others run (a deadlock when none can). A phase that
  // completed and was followed by the next one's completion before the waiting threads saw it
  // is an error: on a GPU the wait could miss it.
  void mbar_block(const ir::Inst& in, const Mask& active, const uint64_t* parity_of) {
    Strand* me = self;
    me->waiters.clear();
    for (uint32_t t : active) {
      const uint32_t word = mbar_word(in, in.operands[0], in.operands[1], t);
      const Mbar& m = mbar_state(in, word, t);
      const uint64_t parity = uint32_t(parity_of[t]);
      if (parity > 1)
        fail(in, "mbar_wait on mbarrier " + bar_text(word) + " with parity " + std::to_string(parity) +
                     "; the parity is 0 or 1 (" + thread_text(t) + ")");
      if (uint64_t(m.phase & 1) == parity) me->waiters.push_back(Waiter{t, word, m.phase});
    }
    if (me->waiters.empty()) return;
    me->block = Block::Mbar;
    me->at = Id(&in - k.insts.data());
    yield(me);  // returns with every waiter's phase complete
    for (const Waiter& w : me->waiters)
      if (const Mbar& m = mbars.at(w.word); m.phase > w.phase + 1)
        fail(in, "mbar_wait on mbarrier " + bar_text(w.word) + " with parity " + std::to_string(w.phase & 1) +
                     ": phase " + std::to_string(w.phase) + " and then phase " + std::to_string(w.phase + 1) +
                     " completed while " + thread_text(w.thread) +
                     " waited for the first (on a GPU the wait may miss it and wait on: arrivals run a phase ahead of "
                     "the waiters, or a wait on the wrong phase)");
  }

  // A copy-engine write is ordered after other threads' accesses as an ordinary store is: by a
  // barrier, or by an mbarrier phase that completed after them and that the issuing thread waited
  // for. Overwriting a word another thread read since (a refill before the readers released the
  // stage) is a race; so is overwriting a word an earlier copy delivers in a phase no thread has
  // waited for yet (nobody can have read it).
  void check_copy_overwrite(const ir::Inst& in, const char* op, uint32_t word, uint32_t t) {
    const SlotAccess& s = tg_access_log[word];
    if (s.read_epoch == epoch && s.reader != t && s.read_time >= acquired[t])
      fail(in, std::string("threadgroup memory race (copy-engine write after read) on ") + bar_text(word) + ": the " +
                   op + " issued by " + thread_text(t) + " overwrites the slot " +
                   (s.reader == kManyReaders ? std::string("other threads") : thread_text(s.reader)) + " read at " +
                   k.where(k.insts[s.read_op].loc) +
                   " with no barrier or awaited mbarrier phase between (the issuer waits for the readers' release, "
                   "e.g. an 'empty' barrier, before it refills)");
    if (auto it = delivered.find(word); it != delivered.end()) {
      const Delivery& d = it->second;
      if (auto m = mbars.find(d.bar); m != mbars.end() && m->second.waited < d.phase)
        fail(in, std::string("threadgroup memory race (copy-engine write after write) on ") + bar_text(word) + ": the " +
                     op + " issued by " + thread_text(t) + " overwrites the slot, which the copy at " +
                     k.where(k.insts[d.op].loc) + " delivers in phase " + std::to_string(d.phase) + " of mbarrier " +
                     bar_text(d.bar) + ", before any thread waited for that phase (nobody has read the data: a refill "
                     "that did not wait for the stage to be released)");
    }
  }

  // A word a bulk copy delivered: a thread reads or overwrites it only after waiting for the
  // phase that delivers it; the first ordinary store by such a thread makes it an ordinary word.
  void check_delivered(const ir::Inst& in, uint32_t word, bool is_store, uint32_t t) {
    auto it = delivered.find(word);
    if (it == delivered.end()) return;
    const Delivery& d = it->second;
    auto s = seen[t].find(d.bar);
    if (s == seen[t].end() || s->second < d.phase)
      fail(in, std::string(is_store ? "writes" : "reads") + " threadgroup slot " + bar_text(word) +
                   ", which the bulk_copy at " + k.where(k.insts[d.op].loc) + " delivers in phase " +
                   std::to_string(d.phase) + " of mbarrier " + bar_text(d.bar) + ", before " + thread_text(t) +
                   " waited for that phase (mbar_wait with parity " + std::to_string(d.phase & 1) + ")");
    if (is_store) delivered.erase(it);
  }

  // A word a bulk store still reads: overwriting it before the issuer's bulk_wait (and a barrier
  // after that wait) would change what the copy engine writes.
  void check_bulk_reading(const ir::Inst& in, uint32_t word, uint32_t t) {
    auto it = bulk_reading.find(word);
    if (it == bulk_reading.end()) return;
    fail(in, "writes threadgroup slot " + bar_text(word) + ", which the bulk_store at " +
                 k.where(k.insts[it->second.second].loc) + " may still be reading (" + thread_text(t) +
                 "; its issuer's bulk_wait, then a barrier, must come first)");
  }

  // The span a bulk copy (into the array, `into`) or bulk store (out of it) moves for thread t:
  // count elements from index `tg` of the threadgroup array inside it, and both `tg` and the
  // buffer index `buf` 16 bytes apart from element 0.
  void check_bulk_span(const ir::Inst& in, const View& v, bool into, int64_t tg, int64_t buf, uint32_t t) {
    const Id alloc = in.operands[0];
    const uint64_t count = uint64_t(in.attr(ir::Attr::Count));
    const uint64_t elems = tg_elems[alloc];
    const uint64_t align = 16 / std::min<size_t>(dtype_size(v.storage), 16);
    const std::string op = into ? "bulk_copy" : "bulk_store", array = "'" + tg_name(k.insts[alloc]) + "'",
                      buffer = "buffer '" + k.params[in.param()].name + "'";
    if (tg < 0 || uint64_t(tg) + count > elems)
      fail(in, op + " of " + std::to_string(count) + " elements " + (into ? "into" : "from") + " threadgroup array " +
                   array + " at index " + std::to_string(tg) + " is out of range: the array has " +
                   std::to_string(elems) + " elements (" + thread_text(t) + ")");
    if (uint64_t(tg) % align != 0 || (buf >= 0 && uint64_t(buf) % align != 0)) {
      const std::string from = into ? std::to_string(buf) + " of " + buffer : std::to_string(tg) + " of " + array;
      const std::string to = into ? std::to_string(tg) + " of " + array : std::to_string(buf) + " of " + buffer;
      fail(in, op + " from index " + from + " to index " + to + ": both must be 16-byte aligned (multiples of " +
                   std::to_string(align) + " elements; " + thread_text(t) + ")");
    }
  }

  // bulk_store: the copy engine reads the array (ordinary stores to it need their writer's
  // fence_proxy_async) and writes the buffer at once; the words stay in use until the issuer's
  // bulk_wait retires the store's group.
  void bulk_store(const ir::Inst& in, const Mask& active) {
    View v = view(in);
    const Id self = Id(&in - k.insts.data());
    const Id alloc = in.operands[0];
    const uint64_t count = uint64_t(in.attr(ir::Attr::Count));
    for (uint32_t t : active) {
      const int64_t src = index_of(in.operands[1], t), dst = index_of(in.operands[2], t);
      check_bulk_span(in, v, false, src, dst, t);
      BulkStoreRec rec{self, -1, {}};
      for (uint64_t e = 0; e < count; ++e) {
        check_index(in, v, dst + int64_t(e), t);
        const uint32_t word = tg_offset[alloc] + uint32_t(src + int64_t(e));
        SlotAccess& s = tg_access_log[word];
        if (s.written_group == group_serial && s.writer < T && proxy_fenced_at[s.writer] < s.write_time)
          fail(in, "bulk_store reads threadgroup slot '" + tg_name(k.insts[alloc]) + "'[" +
                       std::to_string(src + int64_t(e)) + "], which " + thread_text(s.writer) + " stored to at " +
                       k.where(k.insts[s.write_op].loc) +
                       " with no fence_proxy_async after the store (the copy engine may read the old value; " +
                       thread_text(t) + ")");
        check_race(in, word, false, t);
        write_elem(v, dst + int64_t(e), tg_mem[word]);
        rec.words.push_back(word);
        auto [it, fresh] = bulk_reading.emplace(word, std::make_pair(1u, self));
        if (!fresh) ++it->second.first;
      }
      bulk_pending[t].push_back(std::move(rec));
    }
  }

  // Element idx of a buffer from a register value, moving the bits a copy moves: as a store
  // rounds, except that e5m2's infinities stay infinities (a store saturates them).
  static void write_elem(const View& v, int64_t idx, uint64_t bits) {
    const size_t size = dtype_size(v.storage);
    unsigned char* p = v.data + size_t(idx) * size;
    if (v.storage == DType::F16 || v.storage == DType::BF16) {
      const float f = Scalar{bits}.f();
      const uint16_t h = v.storage == DType::F16 ? num::f32_to_f16(f) : num::f32_to_bf16(f);
      std::memcpy(p, &h, 2);
    } else if (is_fp8(v.storage)) {
      const float f = Scalar{bits}.f();
      *p = v.storage == DType::F8E5M2 && std::isinf(f) ? uint8_t(f < 0 ? 0xfc : 0x7c) : num::f32_to_fp8(v.storage, f);
    } else {
      std::memcpy(p, &bits, size);  // little-endian: the low bytes
    }
  }

  // bulk_copy: the copy engine reads the source and writes the array at once, and completes
  // the bytes on the barrier's current phase; the words belong to that phase (check_delivered).
  void bulk_copy(const ir::Inst& in, const Mask& active) {
    View v = view(in);
    const Id self = Id(&in - k.insts.data());
    const Id alloc = in.operands[0];
    const uint64_t count = uint64_t(in.attr(ir::Attr::Count));
    for (uint32_t t : active) {
      const int64_t dst = index_of(in.operands[1], t), src = index_of(in.operands[2], t);
      check_bulk_span(in, v, true, dst, src, t);
      const uint32_t bar = mbar_word(in, in.operands[3], in.operands[4], t);
      Mbar& m = mbar_state(in, bar, t);
      for (uint64_t e = 0; e < count; ++e) {
        check_index(in, v, src + int64_t(e), t);
        const uint32_t word = tg_offset[alloc] + uint32_t(dst + int64_t(e));
        if (!bulk_reading.empty()) check_bulk_reading(in, word, t);
        check_copy_overwrite(in, "bulk_copy", word, t);
        SlotAccess& s = tg_access_log[word];
        // An ordinary store to this slot must be ordered before the copy engine's by a
        // fence_proxy_async of its writer.
        if (s.written_group == group_serial && s.writer != kCopyEngine && s.writer < T &&
            proxy_fenced_at[s.writer] < s.write_time)
          fail(in, "bulk_copy overwrites threadgroup slot '" + tg_name(k.insts[alloc]) + "'[" +
                       std::to_string(dst + int64_t(e)) + "], which " + thread_text(s.writer) +
                       " stored to at " + k.where(k.insts[s.write_op].loc) +
                       " with no fence_proxy_async after the store (ordinary and copy-engine accesses are ordered only "
                       "by that fence; " + thread_text(t) + ")");
        tg_mem[word] = read_elem(v, src + int64_t(e));
        s.written_group = group_serial;
        s.writer = kCopyEngine;
        s.write_epoch = 0;
        s.write_op = self;
        delivered[word] = {bar, m.phase, self};
      }
      m.copy_op = self;
      mbar_progress(m, 0, int64_t(count * dtype_size(v.storage)));
    }
  }

  // tma_load_2d / tma_store_2d (docs/semantics.md "Tensor-map copies"): box element (r, c), at
  // byte o = (r * box[0] + c) * size of the box, lives in the array at byte o ^ (((o >> 7) &
  // (span / 16 - 1)) << 4) from the box's first element (no swizzle: at o). A load reads
  // tensor element (x + c, y + r), or 0 outside the tensor, and completes the box's bytes on the
  // barrier; a store writes the elements inside the tensor and is a bulk store of the thread's
  // group. The checks and the bookkeeping are bulk_copy's and bulk_store's.
  static uint64_t swizzled_byte(uint64_t o, uint32_t span) { return span ? o ^ (((o >> 7) & (span / 16 - 1)) << 4) : o; }
  void tma_copy(const ir::Inst& in, const Mask& active) {
    const bool load = in.op == Op::TmaLoad2D;
    const std::string op = load ? "tma_load_2d" : "tma_store_2d";
    const Id self = Id(&in - k.insts.data());
    const Id alloc = in.operands[0];
    const std::string map_name = "tensor map '" + k.params[in.param()].name + "'";
    const std::string array = "threadgroup array '" + tg_name(k.insts[alloc]) + "'";
    const TensorMapArg* m = buffers[size_t(slot[in.param()])].map;
    if (!m)
      fail(in, op + " through " + map_name +
                   ", which has no description: set it with a TensorMap at dispatch (the interpreter copies through it)");
    if (m->rank != 2)
      fail(in, op + " through " + map_name + " of " + std::to_string(m->rank) + " dimensions; a 2d copy needs 2");
    const DType at = types[alloc];
    if (at != m->dtype)
      fail(in, op + " through " + map_name + " of " + dtype_name(m->dtype) + " elements with " + array + " of " +
                   dtype_name(at) + " (one element type on both sides)");
    const uint64_t es = dtype_size(at), w = m->box[0], h = m->box[1], n = w * h;
    const uint64_t need = m->swizzle ? 8 * uint64_t(m->swizzle) : 128;
    const uint64_t declared = uint64_t(std::max<int64_t>(k.insts[alloc].attr(ir::Attr::Align), 0));
    const std::string sw = m->swizzle ? "the " + std::to_string(m->swizzle) + "B swizzle's pattern" : std::string("an unswizzled box");
    if (declared < need)
      fail(in, op + " with " + array + ", declared " + std::to_string(declared) + "-byte aligned: " + sw + " needs " +
                   std::to_string(need) + " (threadgroup_alloc(..., " + std::to_string(need) + "))");
    View g{m->data, m->bytes / es, m->dtype, 1};
    for (uint32_t t : active) {
      const int64_t first = index_of(in.operands[1], t);
      if (first < 0 || uint64_t(first) + n > tg_elems[alloc])
        fail(in, op + " of a " + std::to_string(w) + " x " + std::to_string(h) + " box (" + std::to_string(n) +
                     " elements) at index " + std::to_string(first) + " of " + array + " overruns it: the array has " +
                     std::to_string(tg_elems[alloc]) + " elements (" + thread_text(t) + ")");
      if ((uint64_t(first) * es) % need != 0)
        fail(in, op + " at index " + std::to_string(first) + " of " + array + " (byte " + std::to_string(uint64_t(first) * es) +
                     ") is misaligned: " + sw + " lands at multiples of " + std::to_string(need) + " bytes (" +
                     thread_text(t) + ")");
      const int64_t x = int32_t(uint32_t(row(in.operands[2])[t])), y = int32_t(uint32_t(row(in.operands[3])[t]));
      // The copy engine starts a box row only on a 16-byte boundary of the tensor: on the H200 a
      // box at x = 12 of a bf16 tensor (byte 24) stops the kernel with an illegal instruction.
      if (((x * int64_t(es)) % 16 + 16) % 16 != 0)
        fail(in, op + " through " + map_name + " at x = " + std::to_string(x) + ": the box's first column is byte " +
                     std::to_string(x * int64_t(es)) + " of its row, not a multiple of 16 (the copy engine faults on "
                     "it; x must be a multiple of " + std::to_string(16 / es) + " " + dtype_name(at) + " elements; " +
                     thread_text(t) + ")");
      // A tensor store starts inside the tensor: on the H200 a store box at a negative x or y
      // stops the kernel with an illegal instruction (session 10, tma-s10), while one that runs
      // past the last column or row is clipped there, and loads zero-fill on every side.
      if (!load && (x < 0 || y < 0))
        fail(in, op + " through " + map_name + " at (" + std::to_string(x) + ", " + std::to_string(y) +
                     "): a stored box starts at a non-negative column and row (the copy engine faults on a "
                     "negative coordinate of a store; only its far sides may pass the tensor's edge; " +
                     thread_text(t) + ")");
      Mbar* mb = nullptr;
      uint32_t bar = 0;
      if (load) {
        bar = mbar_word(in, in.operands[4], in.operands[5], t);
        mb = &mbar_state(in, bar, t);
      }
      BulkStoreRec rec{self, -1, {}};
      for (uint64_t r = 0; r < h; ++r)
        for (uint64_t c = 0; c < w; ++c) {
          const uint64_t e = swizzled_byte((r * w + c) * es, m->swizzle) / es;
          const uint32_t word = tg_offset[alloc] + uint32_t(uint64_t(first) + e);
          const int64_t gx = x + int64_t(c), gy = y + int64_t(r);
          const bool inside = gx >= 0 && gy >= 0 && uint64_t(gx) < m->dims[0] && uint64_t(gy) < m->dims[1];
          const int64_t gi = inside ? int64_t((uint64_t(gy) * m->strides[1] + uint64_t(gx) * es) / es) : -1;
          if (inside && uint64_t(gi) >= g.count)
            fail(in, op + " through " + map_name + " reaches element (" + std::to_string(gx) + ", " + std::to_string(gy) +
                         "), past the end of its buffer (" + std::to_string(m->bytes) + " bytes; " + thread_text(t) + ")");
          SlotAccess& s = tg_access_log[word];
          if (load) {
            if (!bulk_reading.empty()) check_bulk_reading(in, word, t);
            check_copy_overwrite(in, "tma_load_2d", word, t);
            if (s.written_group == group_serial && s.writer != kCopyEngine && s.writer < T &&
                proxy_fenced_at[s.writer] < s.write_time)
              fail(in, op + " overwrites threadgroup slot '" + tg_name(k.insts[alloc]) + "'[" +
                           std::to_string(uint64_t(first) + e) + "], which " + thread_text(s.writer) + " stored to at " +
                           k.where(k.insts[s.write_op].loc) +
                           " with no fence_proxy_async after the store (ordinary and copy-engine accesses are ordered "
                           "only by that fence; " + thread_text(t) + ")");
            tg_mem[word] = inside ? read_elem(g, gi) : is_float(at) ? Scalar::of_f32(0.0f).bits : 0;
            s.written_group = group_serial;
            s.writer = kCopyEngine;
            s.write_epoch = 0;
            s.write_op = self;
            delivered[word] = {bar, mb->phase, self};
          } else {
            if (s.written_group == group_serial && s.writer < T && proxy_fenced_at[s.writer] < s.write_time)
              fail(in, op + " reads threadgroup slot '" + tg_name(k.insts[alloc]) + "'[" +
                           std::to_string(uint64_t(first) + e) + "], which " + thread_text(s.writer) + " stored to at " +
                           k.where(k.insts[s.write_op].loc) +
                           " with no fence_proxy_async after the store (the copy engine may read the old value; " +
                           thread_text(t) + ")");
            check_race(in, word, false, t);
            if (inside) write_elem(g, gi, tg_mem[word]);
            rec.words.push_back(word);
            auto [it, fresh] = bulk_reading.emplace(word, std::make_pair(1u, self));
            if (!fresh) ++it->second.first;
          }
        }
      if (load) {
        mb->copy_op = self;
        mbar_progress(*mb, 0, int64_t(n * es));
      } else {
        bulk_pending[t].push_back(std::move(rec));
      }
    }
  }

  // Calls fn(base) for each lane group of the active list (lanes base .. base + W - 1), after
  // checking that every lane of it is active: on a GPU a lane operation with inactive lanes
  // reads undefined values or hangs.
  template <class Fn>
  void for_each_lane_group(const ir::Inst& in, const Mask& active, Fn&& fn) {
    size_t i = 0;
    while (i < active.size()) {
      const uint32_t g = active[i] / W;
      size_t j = i;
      while (j < active.size() && active[j] / W == g) ++j;
      if (j - i != W)
        fail(in, std::string(ir::mnemonic(in.op)) + " with a partially active lane group (" + std::to_string(j - i) +
                     " of " + std::to_string(W) + " lanes of lane group " + std::to_string(g) + ")");
      fn(g * W);
      i = j;
    }
  }

  // The source lane of a shuffle as docs/semantics.md defines it: exact arithmetic on the lane
  // index and the u32 operand, and a source outside 0 .. W-1 means the lane keeps its own value.
  uint32_t shuffle_source(ir::Op op, uint32_t lane, uint32_t arg) const {
    uint64_t src = W;  // out of range
    switch (op) {
      case Op::LaneShuffle: case Op::LaneBroadcast: src = arg; break;
      case Op::LaneShuffleXor: src = uint64_t(lane ^ arg); break;
      case Op::LaneShuffleUp: src = arg <= lane ? lane - arg : W; break;
      case Op::LaneShuffleDown: src = uint64_t(lane) + arg; break;
      default: break;
    }
    return src < W ? uint32_t(src) : lane;
  }

  // Shuffles, the reductions lane_min/and/or, prefix sums and votes. Reductions use the xor
  // butterfly of lane_reduce; prefix sums a Hillis-Steele scan (offsets 1, 2, .., W/2, lane l
  // adding lane l - offset), which every dialect emits in the same order.
  void lane_op(const ir::Inst& in, uint64_t* out, const Mask& active) {
    const uint64_t* src = row(in.operands[0]);
    const DType t = types[in.operands[0]];
    for_each_lane_group(in, active, [&](uint32_t base) {
      for (uint32_t l = 0; l < W; ++l) lane_a[l] = src[base + l];
      switch (in.op) {
        case Op::LaneShuffle: case Op::LaneShuffleXor: case Op::LaneShuffleUp: case Op::LaneShuffleDown:
        case Op::LaneBroadcast: {
          const uint64_t* arg = row(in.operands[1]);  // u32: zero-extended
          if (in.op == Op::LaneBroadcast)
            for (uint32_t l = 1; l < W; ++l)
              if (arg[base + l] != arg[base])
                fail(in, "lane_broadcast from a lane that differs across the lane group (lane 0 names lane " +
                             std::to_string(arg[base]) + ", lane " + std::to_string(l) + " names lane " +
                             std::to_string(arg[base + l]) + "; use lane_shuffle for per-lane sources)");
          for (uint32_t l = 0; l < W; ++l) out[base + l] = lane_a[shuffle_source(in.op, l, uint32_t(arg[base + l]))];
          return;
        }
        case Op::LaneMin: case Op::LaneAnd: case Op::LaneOr:
          for (uint32_t off = W / 2; off >= 1; off >>= 1) {
            for (uint32_t l = 0; l < W; ++l) lane_b[l] = combine2(in.op, t, lane_a[l], lane_a[l ^ off]);
            lane_a.swap(lane_b);
          }
          break;
        case Op::LaneInclusiveSum: case Op::LaneExclusiveSum: {
          for (uint32_t off = 1; off < W; off <<= 1) {
            for (uint32_t l = 0; l < W; ++l) lane_b[l] = l >= off ? combine(t, true, lane_a[l - off], lane_a[l]) : lane_a[l];
            lane_a.swap(lane_b);
          }
          if (in.op == Op::LaneExclusiveSum) {
            // Lane l receives the inclusive sum of lane l - 1; lane 0 the identity (+0.0 or 0).
            for (uint32_t l = W - 1; l >= 1; --l) lane_a[l] = lane_a[l - 1];
            lane_a[0] = 0;
          }
          break;
        }
        case Op::LaneBallot:
          // Bit i of lane l's result: lane 32 * (l / 32) + i voted true. For W <= 32 that is
          // the whole group; a 64-wide group gives each 32-lane half its own mask.
          for (uint32_t l = 0; l < W; ++l) {
            uint32_t seg = l & ~31u, bits = 0;
            for (uint32_t i = 0; i < 32 && seg + i < W; ++i) bits |= uint32_t(src[base + seg + i] != 0) << i;
            lane_b[l] = bits;  // u32: zero-extended
          }
          lane_a.swap(lane_b);
          break;
        case Op::LaneAny: case Op::LaneAll: {
          bool any = false, all = true;
          for (uint32_t l = 0; l < W; ++l) {
            any = any || lane_a[l] != 0;
            all = all && lane_a[l] != 0;
          }
          for (uint32_t l = 0; l < W; ++l) lane_a[l] = uint64_t(in.op == Op::LaneAny ? any : all);
          break;
        }
        default: fail(in, std::string("the interpreter cannot execute '") + ir::mnemonic(in.op) + "'");
      }
      for (uint32_t l = 0; l < W; ++l) out[base + l] = lane_a[l];
    });
  }

  // lane_min / lane_and / lane_or of two lanes, on canonical registers (i32 sign-extended, u32
  // and f32 zero-extended: and/or of two canonical registers is canonical).
  static uint64_t combine2(ir::Op op, DType t, uint64_t a, uint64_t b) {
    if (op == Op::LaneAnd) return a & b;
    if (op == Op::LaneOr) return a | b;
    if (t == DType::F32) return Scalar::of_f32(eval::fmin_ordered(Scalar{a}.f(), Scalar{b}.f())).bits;
    if (t == DType::I32) return int64_t(a) < int64_t(b) ? a : b;
    return a < b ? a : b;
  }

  // The canonical register of a memory word of an atomic's dtype (i32, u32 or f32, or u64; the
  // verifier allows no other): i32 sign-extended, u32 and f32 zero-extended, u64 as it is.
  static uint64_t word_register(DType t, uint64_t word) {
    if (t == DType::U64) return word;
    return t == DType::I32 ? uint64_t(int64_t(int32_t(uint32_t(word)))) : uint64_t(uint32_t(word));
  }

  // The new value of memory holding `old` after an atomic of kind `op` (the global form) with
  // operand `v` (and `expected` for cas) on dtype t. f32 add rounds once per atomic, like a
  // plain add; f32 min/max follow eval's ordered min/max; cas and exchange compare and move
  // bits (a NaN can be swapped out, -0 is not +0).
  // Operands and result are canonical registers (word_register).
  static uint64_t atomic_update(ir::Op op, DType t, uint64_t old, uint64_t v, uint64_t expected) {
    switch (op) {
      case Op::AtomicAdd:
        return t == DType::F32 ? Scalar::of_f32(Scalar{old}.f() + Scalar{v}.f()).bits : word_register(t, old + v);
      case Op::AtomicMin:
        if (t == DType::F32) return Scalar::of_f32(eval::fmin_ordered(Scalar{old}.f(), Scalar{v}.f())).bits;
        return t == DType::I32 ? (int64_t(v) < int64_t(old) ? v : old) : (v < old ? v : old);
      case Op::AtomicMax:
        if (t == DType::F32) return Scalar::of_f32(eval::fmax_ordered(Scalar{old}.f(), Scalar{v}.f())).bits;
        return t == DType::I32 ? (int64_t(v) > int64_t(old) ? v : old) : (v > old ? v : old);
      case Op::AtomicAnd: return old & v;
      case Op::AtomicOr: return old | v;
      case Op::AtomicExchange: return v;
      case Op::AtomicCas: return old == expected ? v : old;
      default: return old;
    }
  }

  // Global atomics run one active thread after another in ascending order: one valid order of
  // the many a GPU may pick. Only what is order-free (integer add/min/max/and/or totals, f32
  // min/max) is the same on every backend; returned values and f32 sums are not.
  void global_atomic(const ir::Inst& in, uint64_t* out, const Mask& active) {
    ir::AtomicOperands a = ir::atomic_operands(in);
    View v = view(in);
    const ir::Op kind = ir::atomic_kind(in.op);
    const uint64_t* val = row(a.value);
    const uint64_t* expected = a.expected != ir::kNone ? row(a.expected) : nullptr;
    for (uint32_t t : active) {
      int64_t idx = index_of(a.index, t);
      check_index(in, v, idx, t);
      // A 32-bit word, or a 64-bit one for u64 (the verifier's atomic dtypes); little-endian.
      const size_t size = v.storage == DType::U64 ? 8 : 4;
      unsigned char* p = v.data + size_t(idx) * size;
      uint64_t word = 0;
      std::memcpy(&word, p, size);
      const uint64_t old = word_register(v.storage, word);
      const uint64_t now = atomic_update(kind, v.storage, old, val[t], expected ? expected[t] : 0);
      std::memcpy(p, &now, size);
      out[t] = old;
    }
  }

  // Packed 16-bit add: lo and hi are narrowed to the buffer's dtype (as a store does; exact for
  // the values of that dtype a 16-bit register holds), then
  // element 2p becomes round(element + lo) and element 2p + 1 round(element + hi), each one
  // rounding of the exact sum (the f32 sum of two 16-bit values rounded again to 16 bits is
  // that: 24 >= 2 * 11 + 2). Threads run in ascending order, like the other global atomics.
  void atomic_add_pair(const ir::Inst& in, const Mask& active) {
    View v = view(in);
    const uint64_t* lo = row(in.operands[1]);
    const uint64_t* hi = row(in.operands[2]);
    auto add = [&](unsigned char* p, uint64_t x) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      const bool f16 = v.storage == DType::F16;
      const float old = f16 ? num::f16_to_f32(h) : num::bf16_to_f32(h);
      const float sum = old + num::round_to(v.storage, Scalar{x}.f());
      h = f16 ? num::f32_to_f16(sum) : num::f32_to_bf16(sum);
      std::memcpy(p, &h, 2);
    };
    for (uint32_t t : active) {
      const int64_t pair = index_of(in.operands[0], t);
      if (pair < 0 || uint64_t(pair) >= v.count / 2 || !v.data)
        fail(in, std::string("atomic_add_pair of buffer '") + k.params[in.param()].name + "' at pair " +
                     std::to_string(pair) + " (elements " + std::to_string(2 * pair) + " and " + std::to_string(2 * pair + 1) +
                     ") is out of range: the buffer has " + std::to_string(v.count) + " elements (" + thread_text(t) + ")");
      add(v.data + size_t(pair) * 4, lo[t]);
      add(v.data + size_t(pair) * 4 + 2, hi[t]);
    }
  }

  // Atomics on one slot never race with each other: the hardware serializes them in some order.
  // A plain read or write of the slot by another thread in the same barrier interval does race
  // with them (it sees the slot before or after any number of the atomics), in either order.
  // An atomic reads the slot, so the slot must have been written first.
  void check_atomic_race(const ir::Inst& in, uint32_t word, uint32_t t) {
    if (view_base[in.operands[0]] != ir::kNone) check_alias(in, word, true, t);
    SlotAccess& s = tg_access_log[word];
    const ir::Inst& a = k.insts[in.operands[0]];
    const uint64_t name_index = uint64_t(a.attr(ir::Attr::Name));
    const std::string name = name_index < k.strings.size() ? k.strings[size_t(name_index)] : "?";
    const uint32_t slot = word - tg_offset[in.operands[0]];
    auto race = [&](const char* kind, uint32_t other, Id other_op, const char* other_did) {
      std::string other_text = other == kManyReaders ? "other threads" : thread_text(other);
      std::string where = other_op == ir::kNone ? "" : " at " + k.where(k.insts[other_op].loc);
      fail(in, std::string("threadgroup memory race (") + kind + ") on '" + name + "'[" + std::to_string(slot) +
                   "]: " + thread_text(t) + " updates the slot atomically; " + other_text + " " + other_did + where +
                   " with no barrier between (atomics do not race with each other, plain accesses do)");
    };
    if (s.written_group != group_serial && opts.uninitialized_tg_reads_are_errors)
      fail(in, "atomic on threadgroup slot '" + name + "'[" + std::to_string(slot) +
                   "] that no thread of this threadgroup has written (" + thread_text(t) +
                   "; threadgroup memory starts undefined)");
    if (s.write_epoch == epoch && s.writer != t) race("atomic after write", s.writer, s.write_op, "wrote it");
    if (s.read_epoch == epoch && s.reader != t) race("atomic after read", s.reader, s.read_op, "read it");
    s.written_group = group_serial;
    if (s.atomic_epoch != epoch) {
      s.atomic_epoch = epoch;
      s.atomic_thread = t;
      s.atomic_op = Id(&in - k.insts.data());
    } else if (s.atomic_thread != t) {
      s.atomic_thread = kManyReaders;
    }
  }

  // Butterfly in the CUDA order: for offset = W/2 .. 1, every lane l takes v[l] op v[l ^ offset]
  // at once, so the f32 rounding matches the warp's shuffle tree exactly.
  void lane_reduce(const ir::Inst& in, uint64_t* out, const Mask& active) {
    const uint64_t* src = row(in.operands[0]);
    const DType t = types[in.operands[0]];
    const bool is_sum = in.op == Op::LaneSum;
    if (t != DType::F32 && t != DType::I32 && t != DType::U32)
      fail(in, std::string("'") + ir::mnemonic(in.op) + "' of " + dtype_name(t) + " is not supported");
    size_t i = 0;
    while (i < active.size()) {
      const uint32_t g = active[i] / W;
      size_t j = i;
      while (j < active.size() && active[j] / W == g) ++j;
      if (j - i != W)
        fail(in, std::string(ir::mnemonic(in.op)) + " with a partially active lane group (" + std::to_string(j - i) +
                     " of " + std::to_string(W) + " lanes of lane group " + std::to_string(g) + ")");
      const uint32_t base = g * W;
      for (uint32_t l = 0; l < W; ++l) lane_a[l] = src[base + l];
      for (uint32_t off = W / 2; off >= 1; off >>= 1) {
        for (uint32_t l = 0; l < W; ++l) lane_b[l] = combine(t, is_sum, lane_a[l], lane_a[l ^ off]);
        lane_a.swap(lane_b);
      }
      for (uint32_t l = 0; l < W; ++l) out[base + l] = lane_a[l];
      i = j;
    }
  }

  static uint64_t combine(DType t, bool is_sum, uint64_t a, uint64_t b) {
    if (t == DType::F32) {
      float x = Scalar{a}.f(), y = Scalar{b}.f();
      return Scalar::of_f32(is_sum ? x + y : eval::fmax_ordered(x, y)).bits;
    }
    if (is_sum) return num::int_wrap(t, a + b);
    if (t == DType::I32) return int64_t(a) > int64_t(b) ? a : b;  // canonical: sign-extended
    return a > b ? a : b;
  }

  // The branches run one after the other. When both have threads, the if is a fork while its
  // then-branch runs: a wait there that cannot complete may start the else-branch on a strand of
  // its own, and the then-branch's threads then wait at the if's end for that strand to finish.
  void run_if(const ir::Inst& in, int depth) {
    Strand* me = self;
    const Mask& active = me->masks[size_t(depth)];
    Mask& sub = me->masks[size_t(depth) + 1];
    const uint64_t* cond = row(in.operands[0]);
    for (int branch = 0; branch < 2; ++branch) {
      Id b = in.blocks[branch];
      if (b == ir::kNone) continue;
      const uint32_t want = branch == 0 ? 1u : 0u;
      sub.clear();
      for (uint32_t t : active)
        if (uint32_t(cond[t] != 0) == want) sub.push_back(t);
      if (sub.empty()) continue;
      const bool fork = branch == 0 && in.blocks[1] != ir::kNone && sub.size() != active.size();
      if (!fork) {
        block(b, depth + 1);
        continue;
      }
      const Id if_id = Id(&in - k.insts.data());
      me->forks.push_back(Fork{if_id, depth});
      block(b, depth + 1);
      Strand* child = me->forks.back().child;
      me->forks.pop_back();
      if (!child) continue;
      if (!child->done) {
        me->block = Block::Join;
        me->at = if_id;
        me->joining = &sub;
        me->child = child;
        yield(me);
      }
      end_strand(child);
      return;
    }
  }

  // --- Strands --------------------------------------------------------------------------------
  bool ready(const Strand& s) const {
    if (s.block == Block::Join) return s.child->done;
    for (const Waiter& w : s.waiters)
      if (mbars.at(w.word).phase <= w.phase) return false;
    return true;
  }

  // The strand to run next when `me` cannot go on (or has finished): the first waiting strand
  // whose wait is over, else a new strand for the innermost unstarted fork of `me`, then of the
  // other strands in order; null when there is none (a deadlock).
  Strand* pick(Strand* me) {
    for (auto& s : strands)
      if (s.get() != me && !s->done && s->block != Block::None && ready(*s)) return s.get();
    auto start = [&](Strand* owner) -> Strand* {
      for (auto f = owner->forks.rbegin(); f != owner->forks.rend(); ++f)
        if (!f->child) return start_strand(owner, *f);
      return nullptr;
    };
    if (!me->done)
      if (Strand* s = start(me)) return s;
    for (size_t i = 0; i < strands.size(); ++i)
      if (strands[i].get() != me && !strands[i]->done)
        if (Strand* s = start(strands[i].get())) return s;
    return nullptr;
  }

  Strand* start_strand(Strand* owner, Fork& f) {
    const ir::Inst& in = k.insts[f.if_id];
    auto s = std::make_unique<Strand>();
    s->masks.resize(owner->masks.size());
    Mask& sub = s->masks[size_t(f.depth) + 1];
    sub.reserve(T);
    const uint64_t* cond = row(in.operands[0]);
    for (uint32_t t : owner->masks[size_t(f.depth)])
      if (cond[t] == 0) sub.push_back(t);
    for (size_t d = size_t(f.depth) + 2; d < s->masks.size(); ++d) s->masks[d].reserve(T);
    Strand* p = s.get();
    f.child = p;
    {
      std::lock_guard<std::mutex> lock(baton);
      strands.push_back(std::move(s));
    }
    const Id b = in.blocks[1];
    const int depth = f.depth + 1;
    p->os = std::thread([this, p, b, depth] { strand_main(p, b, depth); });
    return p;
  }

  void strand_main(Strand* me, Id b, int depth) {
    try {
      {
        std::unique_lock<std::mutex> lock(baton);
        me->cv.wait(lock, [&] { return me->go || aborting; });
        if (aborting) return;
      }
      self = me;
      masks_of = &me->masks;
      block(b, depth);
      me->done = true;
      yield(me);
    } catch (const Unwind&) {
    } catch (...) {
      std::lock_guard<std::mutex> lock(baton);
      if (!abort_error) abort_error = std::current_exception();
      aborting = true;
      for (auto& s : strands) s->cv.notify_all();
    }
  }

  // Hands the baton to the next strand and, unless `me` has finished, waits for it to come back
  // (with me's wait over). No next strand is a deadlock, reported here.
  void yield(Strand* me) {
    Strand* next = pick(me);
    if (!next) deadlock(me);
    std::unique_lock<std::mutex> lock(baton);
    me->go = false;
    next->go = true;
    next->cv.notify_all();
    if (me->done) return;
    me->cv.wait(lock, [&] { return me->go || aborting; });
    if (aborting) {
      if (me == strands[0].get()) std::rethrow_exception(abort_error);
      throw Unwind{};
    }
    lock.unlock();
    self = me;
    masks_of = &me->masks;
    me->block = Block::None;
  }

  // Joins a finished strand's OS thread and forgets it.
  void end_strand(Strand* s) {
    if (s->os.joinable()) s->os.join();
    std::lock_guard<std::mutex> lock(baton);
    for (size_t i = 0; i < strands.size(); ++i)
      if (strands[i].get() == s) {
        strands.erase(strands.begin() + std::ptrdiff_t(i));
        break;
      }
  }

  // After an error: every other strand unwinds its stack and its OS thread ends; the root stays.
  void stop_strands() {
    if (strands.size() <= 1) return;
    {
      std::lock_guard<std::mutex> lock(baton);
      aborting = true;
      for (auto& s : strands) s->cv.notify_all();
    }
    for (size_t i = 1; i < strands.size(); ++i)
      if (strands[i]->os.joinable()) strands[i]->os.join();
    strands.resize(1);
    aborting = false;
    self = strands[0].get();
    masks_of = &self->masks;
    self->forks.clear();
    self->block = Block::None;
    self->go = false;
  }

  std::string threads_text(const Mask& m) const {
    return m.size() == 1 ? thread_text(m[0])
                         : std::to_string(m.size()) + " threads from " + thread_text(m[0]);
  }
  std::string wait_text(const Strand& s) const {
    if (s.block == Block::Join)
      return threads_text(*s.joining) + " at the end of the if at " + k.where(k.insts[s.at].loc) +
             " (waiting for its other branch)";
    const Waiter& w = s.waiters[0];
    const Mbar& m = mbars.at(w.word);
    std::string who = s.waiters.size() == 1 ? thread_text(w.thread)
                                            : std::to_string(s.waiters.size()) + " threads from " + thread_text(w.thread);
    return who + " in mbar_wait at " + k.where(k.insts[s.at].loc) + " for phase " + std::to_string(w.phase) +
           " of mbarrier " + bar_text(w.word) + " (" + pending_text(m) + " outstanding)";
  }
  // The waits of the strands other than `me`, for an error message ("" when there are none).
  std::string others_waiting(const Strand* me) const {
    std::string r;
    for (const auto& s : strands)
      if (s.get() != me && !s->done && s->block != Block::None) r += (r.empty() ? "" : "; ") + wait_text(*s);
    return r.empty() ? r : "; the other threads wait: " + r;
  }

  // Every strand waits and none can go on. The error is located at `me`'s wait, or (when `me`
  // has finished or waits at an if's end) at the first strand's mbar_wait.
  [[noreturn]] void deadlock(Strand* me) {
    const Strand* at = me->block == Block::Mbar ? me : nullptr;
    for (size_t i = 0; !at && i < strands.size(); ++i)
      if (!strands[i]->done && strands[i]->block == Block::Mbar) at = strands[i].get();
    if (!at) throw Error("kernel " + k.name + ": the interpreter's strands deadlocked with no mbar_wait pending");
    const Waiter& w = at->waiters[0];
    const Mbar& m = mbars.at(w.word);
    std::string others;
    for (const auto& s : strands)
      if (s.get() != at && !s->done && s->block != Block::None) others += "; " + wait_text(*s);
    fail(k.insts[at->at],
         "mbar_wait on mbarrier " + bar_text(w.word) + " for phase " + std::to_string(w.phase) + " (parity " +
             std::to_string(w.phase & 1) + "), which has " + pending_text(m) +
             " outstanding when the waiting threads reach it (" + thread_text(w.thread) +
             (at->waiters.size() > 1 ? " and " + std::to_string(at->waiters.size() - 1) + " more" : std::string()) +
             "); no other thread can arrive while they wait" +
             (others.empty() ? std::string(" (every other thread has finished or waits at the same point)")
                             : " (the other threads wait too" + others + ")") +
             ": a deadlock, or a wait on the wrong phase" +
             (m.tx < 0 ? std::string(" (its copies delivered ") + std::to_string(-m.tx) +
                             " more transaction bytes than the phase expects: the expected bytes do not match the copies)"
              : m.pending == 0 && m.tx > 0 ? std::string(" (its arrivals are in; ") + std::to_string(m.tx) +
                             " expected transaction bytes never came: the expected bytes do not match the copies)"
              : std::string()));
  }

  // A thread leaves the loop the first time its i < end fails and never re-enters, even if i
  // later wraps around: the body mask only ever shrinks.
  void run_for(Id id, const ir::Inst& in, int depth) {
    const Mask& active = (*masks_of)[depth];
    Mask& body = (*masks_of)[size_t(depth) + 1];
    uint64_t* iv = row(id);
    const uint64_t* begin = row(in.operands[0]);
    const uint64_t* end = row(in.operands[1]);
    const uint64_t* step = row(in.operands[2]);
    const DType type = types[id];
    const bool is_signed = is_signed_integer(type);
    body.clear();
    for (uint32_t t : active) {
      iv[t] = begin[t];
      body.push_back(t);
    }
    for (;;) {
      size_t kept = 0;
      for (uint32_t t : body) {
        bool go = is_signed ? int64_t(iv[t]) < int64_t(end[t]) : iv[t] < end[t];
        if (go) body[kept++] = t;
      }
      body.resize(kept);
      if (body.empty()) return;
      steps += body.size();  // the loop test itself: an empty body still makes progress towards the guard
      if (steps > opts.max_steps)
        fail(in, "kernel exceeded " + std::to_string(opts.max_steps) + " steps (infinite loop?)");
      block(in.blocks[0], depth + 1);
      for (uint32_t t : body) iv[t] = num::int_wrap(type, iv[t] + step[t]);  // the step wraps at the type's width
    }
  }
};

}  // namespace

void run(const ir::Kernel& k, Instantiation dtype, const std::vector<BufferArg>& buffers, const std::vector<uint64_t>& scalars,
         Dim3 grid, Dim3 threadgroup, const Options& opts) {
  Machine m(k, dtype, opts);
  m.setup(buffers, scalars, grid, threadgroup);
  m.run();
}

}  // namespace iron::interp
