// The cross-backend side of the random-program generator (`iron fuzz`): what its programs
// contain and never contain, and that a batch of them compiles as one CUDA module with NVRTC
// (the H200 run compiles them that way; here NVRTC works without a driver).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "fuzz/random_program.hpp"
#include "passes/eval.hpp"
#include "passes/pass.hpp"
#include "runtime/device.hpp"

using namespace iron;
using ir::Op;

namespace {

// The programs `iron fuzz` compares across interp and Vulkan: mbarriers (CUDA sm_90+) left out,
// as the fuzz runner leaves them out wherever another device takes part.
fuzz::RandomProgramOptions cross(uint32_t exclude = 0) {
  fuzz::RandomProgramOptions o;
  o.cross_backend = true;
  o.exclude = exclude | fuzz::kMbar;
  return o;
}

size_t count_ops(const ir::Kernel& k, bool (*pred)(const ir::Inst&)) {
  size_t n = 0;
  ir::walk(k, [&](ir::Id id) { n += pred(k.insts[id]); });
  return n;
}

bool is_transcendental(const ir::Inst& in) { return eval::is_bounded_math(in.op); }

}  // namespace

// Reduction programs use threadgroup memory, barriers and lane operations; no cross-backend
// program has a transcendental (not bit-exact across backends), before or after the pipeline.
TEST(FuzzCross, ProgramsHaveThreadgroupOpsAndNoTranscendentals) {
  size_t tg_store = 0, tg_load = 0, barrier = 0, lane = 0, general_transcendental = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    bool red = fuzz::reduction_seed(seed);
    ir::Kernel k = fuzz::random_program(seed, red, cross());
    ir::Diagnostics d;
    ASSERT_TRUE(ir::verify(k, d)) << "seed " << seed << ":\n" << d.render(k);
    EXPECT_EQ(count_ops(k, is_transcendental), 0u) << "seed " << seed << ":\n" << ir::print(k);
    ir::Kernel opt = passes::optimize(k);
    EXPECT_EQ(count_ops(opt, is_transcendental), 0u) << "seed " << seed << " after the pipeline";
    tg_store += count_ops(k, [](const ir::Inst& in) { return in.op == Op::TgStore; });
    tg_load += count_ops(k, [](const ir::Inst& in) { return in.op == Op::TgLoad; });
    barrier += count_ops(k, [](const ir::Inst& in) { return in.op == Op::Barrier; });
    lane += count_ops(k, [](const ir::Inst& in) { return in.op == Op::LaneSum || in.op == Op::LaneMax; });
    general_transcendental += count_ops(fuzz::random_program(seed, red), is_transcendental);
  }
  EXPECT_GT(tg_store, 100u);
  EXPECT_GT(tg_load, 20u);
  EXPECT_GT(barrier, 100u);
  EXPECT_GT(lane, 20u);
  EXPECT_GT(general_transcendental, 0u) << "the pass fuzz programs should keep their transcendentals";
}

// The lane slice's ops reach the compared programs: every shuffle, reduction, prefix sum and
// vote, threadgroup atomics and the cooperative tile ops the generator makes (fill, f16 loads
// from a buffer, f8e4m3 loads from threadgroup memory, multiply-accumulate, get), in the
// generated and in the optimized programs; the value an
// atomic returns (whose order is the hardware's) is never used.
TEST(FuzzCross, ProgramsHaveEveryLaneOpAndOrderFreeAtomics) {
  std::map<Op, size_t> generated, optimized;
  size_t atomic_uses = 0, col_major = 0, swizzled = 0;  // tile layouts that survive the pipeline
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    bool red = fuzz::reduction_seed(seed);
    ir::Kernel k = fuzz::random_program(seed, red, cross());
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      ++generated[in.op];
      for (int i = 0; i < in.num_operands(); ++i) atomic_uses += ir::is_atomic(k.insts[in.operands[i]].op);
    });
    ir::Kernel opt = passes::optimize(k);
    ir::walk(opt, [&](ir::Id id) {
      const ir::Inst& in = opt.insts[id];
      ++optimized[in.op];
      col_major += (in.op == Op::TileLoad || in.op == Op::TileTgLoad) && in.has(ir::Attr::ColMajor);
      swizzled += in.op == Op::TileTgLoad && in.has(ir::Attr::Swizzle);
    });
  }
  EXPECT_GT(col_major, 0u) << "no column-major tile load survives the pipeline";
  EXPECT_GT(swizzled, 0u) << "no swizzled tile load survives the pipeline";
  for (Op op : {Op::LaneShuffle, Op::LaneShuffleXor, Op::LaneShuffleUp, Op::LaneShuffleDown, Op::LaneBroadcast,
                Op::LaneMin, Op::LaneAnd, Op::LaneOr, Op::LaneInclusiveSum, Op::LaneExclusiveSum, Op::LaneBallot,
                Op::LaneAny, Op::LaneAll, Op::TgAtomicAdd, Op::TgAtomicMin, Op::TgAtomicMax, Op::TgAtomicAnd,
                Op::TgAtomicOr, Op::TileFill, Op::TileLoad, Op::TileTgLoad, Op::TileMma, Op::TileGet}) {
    EXPECT_GT(generated[op], 0u) << ir::mnemonic(op) << " is never generated";
    EXPECT_GT(optimized[op], 0u) << ir::mnemonic(op) << " never survives the pipeline";
  }
  EXPECT_EQ(atomic_uses, 0u) << "an atomic's returned value is used";
}

// 64-bit indexing (docs/semantics.md, "64-bit indexing"): after the pipeline, programs still
// load and store through i64 and u64 indices, store through an own slot computed from the u64
// thread_id, compute with the u64 and i64 scalar parameters, and count some loops in 64 bits.
TEST(FuzzCross, ProgramsUseSixtyFourBitIndicesAndParameters) {
  size_t index[2] = {0, 0}, tid64_stores = 0, wide_params = 0, wide_loops = 0;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    ir::Kernel k = passes::optimize(fuzz::random_program(seed, fuzz::reduction_seed(seed), cross()));
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      if ((in.op == Op::Load || in.op == Op::Store) && int_bits(k.insts[in.operands[0]].type.elem()) == 64) {
        ++index[in.op == Op::Store];
        const ir::Inst& idx = k.insts[in.operands[0]];
        for (int i = 0; i < idx.num_operands(); ++i) {
          const ir::Inst& a = k.insts[idx.operands[i]];
          tid64_stores += in.op == Op::Store && a.op == Op::Mul && k.insts[a.operands[0]].op == Op::ThreadId &&
                          k.insts[a.operands[0]].type.elem() == DType::U64;
        }
      }
      wide_params += in.op == Op::Param && int_bits(in.type.elem()) == 64;
      wide_loops += in.op == Op::For && int_bits(in.type.elem()) == 64;
    });
  }
  EXPECT_GT(index[0], 0u) << "no load through a 64-bit index survives the pipeline";
  EXPECT_GT(index[1], 0u) << "no store through a 64-bit index survives the pipeline";
  EXPECT_GT(tid64_stores, 0u) << "no store through a slot computed from thread_id64";
  EXPECT_GT(wide_params, 0u) << "the 64-bit scalar parameters are never read";
  EXPECT_GT(wide_loops, 0u) << "no 64-bit loop survives the pipeline";
}

// The second type parameter W, the element types u8, i16, u64 and f8e5m2, the 16- and 64-bit
// bitcasts and the u64 and packed 16-bit atomics are in the cross-backend programs, in forms
// whose results do not depend on the order of the atomics: u64 adds only into acc_u64, pair adds
// into acc_f2 / acc_b2 of +0 or one fixed value per element (1 even, -0.75 odd); every bitcast of
// a 16-bit float reads a value whose NaN was replaced. Launches take every W and start the
// accumulators at 0.
TEST(FuzzCross, ProgramsHaveWTheNewElementTypesAndTheWideAtomics) {
  std::map<std::string, size_t> stores, loads;
  size_t u64_atomics = 0, tg_u64_atomics = 0, pair_adds = 0, bad_addends = 0, bits16 = 0, bits64 = 0, unguarded = 0;
  std::map<DType, size_t> ws;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    ir::Kernel k = fuzz::random_program(seed, fuzz::reduction_seed(seed), cross());
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      if (in.op == Op::Store) ++stores[k.params[in.param()].name];
      if (in.op == Op::Load) ++loads[k.params[in.param()].name];
      if (in.op == Op::AtomicAdd && in.type == DType::U64) {
        ++u64_atomics;
        EXPECT_EQ(k.params[in.param()].name, "acc_u64");
      }
      if (in.op == Op::TgAtomicAdd && in.type == DType::U64) ++tg_u64_atomics;
      if (in.op == Op::AtomicAddPair) {
        ++pair_adds;
        for (int i = 1; i <= 2; ++i) {
          const ir::Inst& sel = k.insts[in.operands[i]];
          const double nonzero = i == 1 ? 1.0 : -0.75;
          if (sel.op != Op::Select || k.insts[sel.operands[1]].fattr(ir::Attr::Value) != nonzero ||
              k.insts[sel.operands[2]].fattr(ir::Attr::Value) != 0.0 ||
              std::signbit(k.insts[sel.operands[2]].fattr(ir::Attr::Value)))
            ++bad_addends;
        }
      }
      if (in.op == Op::Bitcast) {
        const DType from = k.insts[in.operands[0]].type.elem();
        if (dtype_size(from) == 2 && dtype_size(in.type.elem()) == 2) {
          ++bits16;
          if (is_float(from) && k.insts[in.operands[0]].op != Op::Select) ++unguarded;
        }
        if (dtype_size(from) == 8) ++bits64;
      }
    });
    for (const ir::Inst& in : k.insts)
      for (int i = 0; i < in.num_operands(); ++i)
        if (ir::is_atomic(k.insts[in.operands[i]].op) && k.insts[in.operands[i]].type == DType::U64)
          ADD_FAILURE() << "seed " << seed << ": a u64 atomic's returned value is used";
    fuzz::RandomLaunch l = fuzz::random_launch(k, seed, cross());
    ASSERT_TRUE(l.dtype.has_w());
    ++ws[l.dtype.w];
    size_t b = 0;
    for (const ir::Param& p : k.params) {
      if (p.kind != ir::ParamKind::Buffer) continue;
      if (p.name.rfind("acc_", 0) == 0) {
        for (unsigned char c : l.buffers[b]) ASSERT_EQ(c, 0) << p.name;
      }
      ++b;
    }
  }
  for (const char* out : {"out_u8", "out_i16", "out_u64", "out_q5", "out_w"}) EXPECT_GT(stores[out], 10u) << out;
  EXPECT_GT(loads["in_w"], 10u);
  EXPECT_GT(u64_atomics, 10u);
  EXPECT_GT(tg_u64_atomics, 10u);
  EXPECT_GT(pair_adds, 10u);
  EXPECT_EQ(bad_addends, 0u);
  EXPECT_GT(bits16, 10u);
  EXPECT_GT(bits64, 10u);
  EXPECT_EQ(unguarded, 0u);
  for (DType w : {DType::F32, DType::F16, DType::BF16, DType::U8, DType::I16, DType::F8E5M2})
    EXPECT_GT(ws[w], 20u) << dtype_name(w);
}

// The exact math ops (docs/semantics.md) are compared bit for bit across backends, so the
// cross-backend programs contain each of them; every bitcast of an f32 reads a value whose NaN
// was replaced first (the bits of a NaN are not specified).
TEST(FuzzCross, ProgramsHaveTheExactMathOps) {
  std::map<Op, size_t> seen;
  size_t unguarded = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    ir::Kernel k = fuzz::random_program(seed, fuzz::reduction_seed(seed), cross());
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      ++seen[in.op];
      if (in.op == Op::Bitcast && k.insts[in.operands[0]].type == DType::F32 &&
          k.insts[in.operands[0]].op != Op::Select)
        ++unguarded;
    });
  }
  for (Op op : {Op::Floor, Op::Ceil, Op::Rint, Op::Trunc, Op::MulHi, Op::Popcount, Op::Clz, Op::Bitcast})
    EXPECT_GT(seen[op], 5u) << ir::mnemonic(op);
  EXPECT_EQ(unguarded, 0u);
}

// Packed 16-bit pairs join the programs: pair, pair_get and every element-wise pair op, on f16
// and on bf16.
TEST(FuzzCross, ProgramsHavePackedPairs) {
  std::map<Op, size_t> seen;
  std::map<DType, size_t> elems;
  // 600 seeds: over the first 300, pair subtraction appears exactly 5 times.
  for (uint64_t seed = 0; seed < 600; ++seed) {
    ir::Kernel k = fuzz::random_program(seed, fuzz::reduction_seed(seed), cross());
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      if (!in.type.is_vector() && in.op != Op::PairGet) return;
      ++seen[in.op];
      ++elems[in.type.elem()];
    });
  }
  for (Op op : {Op::Pair, Op::PairGet, Op::Add, Op::Sub, Op::Mul, Op::Fma, Op::Min, Op::Max, Op::Neg, Op::Abs})
    EXPECT_GT(seen[op], 5u) << ir::mnemonic(op);
  EXPECT_GT(elems[DType::F16], 5u);
  EXPECT_GT(elems[DType::BF16], 5u);
}

// Threadgroup memory starts undefined on a GPU: every array is written by every thread, then a
// barrier, before anything can read it (the first threadgroup op on each array is that store,
// and a barrier precedes the first load, tile loads included).
TEST(FuzzCross, ThreadgroupArraysAreWrittenBeforeAnyRead) {
  size_t checked = 0;
  for (uint64_t seed = 0; seed < 200; seed += 2) {
    ir::Kernel k = fuzz::random_program(seed, true, cross());
    std::vector<ir::Id> arrays;
    for (ir::Id id : k.blocks[0].insts)
      if (k.insts[id].op == Op::TgAlloc) arrays.push_back(id);
    ASSERT_FALSE(arrays.empty()) << "seed " << seed;
    std::vector<bool> stored(k.insts.size(), false);
    bool barrier_after_stores = false;
    ir::walk(k, [&](ir::Id id) {
      const ir::Inst& in = k.insts[id];
      if (in.op == Op::TgStore && !barrier_after_stores) {
        // The flat local index: local_id in Reduction programs; y * size.x + x (Tile2D) or
        // simd_group_id * lane_width + lane_id (SimdGroup2D), an add, in the others. The
        // f8e4m3 tile array (1024 elements) is filled by a loop that starts there and steps by
        // the group size.
        ir::Id index = in.operands[1];
        if (k.insts[index].op == Op::For) {
          EXPECT_EQ(k.strings[size_t(k.insts[in.operands[0]].attr(ir::Attr::Name))], "tg_fp8") << "seed " << seed;
          EXPECT_EQ(k.insts[k.insts[index].operands[1]].attr(ir::Attr::Value), 1024) << "seed " << seed;
          index = k.insts[index].operands[0];
        }
        EXPECT_EQ(k.insts[index].op, k.mode == Mode::Reduction ? Op::LocalId : Op::Add)
            << "seed " << seed << ": the first stores fill each thread's slot";
        stored[in.operands[0]] = true;
      }
      if (in.op == Op::Barrier) {
        for (ir::Id a : arrays) EXPECT_TRUE(stored[a]) << "seed " << seed << ": a barrier before array %" << a << " is filled";
        barrier_after_stores = true;
      }
      if (in.op == Op::TgLoad || in.op == Op::TileTgLoad) {
        EXPECT_TRUE(barrier_after_stores) << "seed " << seed << ": a load before the first barrier";
      }
    });
    ++checked;
  }
  EXPECT_EQ(checked, 100u);
}

// Each excluded op class is really absent, and the names parse; an unknown name is an error
// that names the known ones.
TEST(FuzzCross, ExcludedOpClassesAreAbsent) {
  uint32_t all = 0;
  std::string why;
  ASSERT_TRUE(fuzz::parse_op_classes("rem,fcast,fminmax,flane,fma,fzero,fdiv,f16,zcast,nzero", all, why)) << why;
  EXPECT_EQ(fuzz::op_class_names(all), "rem,fcast,fminmax,flane,fma,fzero,fdiv,f16,zcast,nzero");
  uint32_t bad = 0;
  EXPECT_FALSE(fuzz::parse_op_classes("rem,modulo", bad, why));
  EXPECT_NE(why.find("'modulo'"), std::string::npos) << why;
  EXPECT_NE(why.find("fminmax"), std::string::npos) << why;
  size_t fmas_without = 0, fmas_with = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    bool red = fuzz::reduction_seed(seed);
    ir::Kernel k = fuzz::random_program(seed, red, cross(all));
    ir::Kernel opt = passes::optimize(k);
    for (const ir::Kernel* p : {&k, &opt}) {
      ir::walk(*p, [&](ir::Id id) {
        const ir::Inst& in = p->insts[id];
        const bool fl = is_float(in.type) || in.type == DType::Generic;
        auto src_float = [&](int i) {
          DType t = p->insts[in.operands[i]].type.elem();
          return is_float(t) || t == DType::Generic;
        };
        EXPECT_FALSE(in.op == Op::Rem && in.type == DType::I32) << "seed " << seed;
        EXPECT_FALSE(in.op == Op::Cast && (in.type == DType::I32 || in.type == DType::U32) && src_float(0))
            << "seed " << seed;
        EXPECT_FALSE(fl && (in.op == Op::Min || in.op == Op::Max || in.op == Op::Div)) << "seed " << seed;
        EXPECT_FALSE((in.op == Op::LaneSum || in.op == Op::LaneMax) && fl) << "seed " << seed;
        EXPECT_FALSE(in.type == DType::F16) << "seed " << seed;
        EXPECT_FALSE(in.op == Op::Const && fl && in.fattr(ir::Attr::Value) == 0 && p == &k) << "seed " << seed;
        fmas_without += in.op == Op::Fma;
      });
    }
    fmas_with += count_ops(passes::optimize(fuzz::random_program(seed, red, cross())),
                           [](const ir::Inst& in) { return in.op == Op::Fma; });
  }
  EXPECT_EQ(fmas_without, 0u);
  EXPECT_GT(fmas_with, 0u) << "without the exclusion the pipeline should fuse some multiply-adds";
}

// `iron fuzz --backends ...,cuda` compiles its programs in batches, one NVRTC module each
// (rt::combine_cuda_sources). A batch of 48 must compile for sm_90a and keep every entry point.
TEST(FuzzCross, CudaBatchOfRandomProgramsCompilesAsOneModule) {
  std::vector<std::string> sources, entries;
  for (uint64_t seed = 1; seed <= 48; ++seed) {
    ir::Kernel k = passes::optimize(fuzz::random_program(seed, fuzz::reduction_seed(seed), cross()));
    DType t = seed % 3 == 0 ? DType::F32 : seed % 3 == 1 ? DType::F16 : DType::BF16;
    const Instantiation tw{t, k.wtypes[seed % k.wtypes.size()]};  // every W the generator takes
    codegen::Emitted e = codegen::emit(k, tw, codegen::Target::Cuda);
    ASSERT_TRUE(e.ok()) << "seed " << seed << ":\n" << e.diags.render(k);
    sources.push_back(e.source);
    entries.push_back(e.entry);
  }
  std::string combined = rt::combine_cuda_sources(sources);
  for (const std::string& entry : entries) EXPECT_NE(combined.find("void " + entry + "("), std::string::npos) << entry;
  // Two halves compiled at once, as CudaDevice::compile_many runs its groups in parallel.
  const size_t half = sources.size() / 2;
  std::vector<std::string> first(sources.begin(), sources.begin() + long(half)), second(sources.begin() + long(half), sources.end());
  rt::NvrtcResult r1, r2;
  std::thread t([&] { r1 = rt::nvrtc_compile(rt::combine_cuda_sources(first), "fuzz_batch_a", "sm_90a"); });
  r2 = rt::nvrtc_compile(rt::combine_cuda_sources(second), "fuzz_batch_b", "sm_90a");
  t.join();
  ASSERT_TRUE(r1.ok) << r1.log.substr(0, 4000);
  ASSERT_TRUE(r2.ok) << r2.log.substr(0, 4000);
  const std::string cubins = std::string(r1.cubin.begin(), r1.cubin.end()) + std::string(r2.cubin.begin(), r2.cubin.end());
  for (const std::string& entry : entries) EXPECT_NE(cubins.find(entry), std::string::npos) << entry << " is not in a CUBIN";
}

// The one comparison rule: equal bytes, or NaN on both sides (any payload, either sign); -0 and
// +0 differ unless the run relaxes signed zeros; integers compare by their bits alone.
TEST(FuzzCross, SameBitsRule) {
  auto f32 = [](float v) {
    std::vector<unsigned char> b(4);
    std::memcpy(b.data(), &v, 4);
    return b;
  };
  auto same = [](DType t, const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, bool relax = false) {
    return fuzz::same_bits(t, a.data(), b.data(), relax);
  };
  EXPECT_TRUE(same(DType::F32, f32(1.5f), f32(1.5f)));
  EXPECT_FALSE(same(DType::F32, f32(1.5f), f32(std::nextafter(1.5f, 2.0f))));
  EXPECT_TRUE(same(DType::F32, f32(std::nanf("1")), f32(-std::nanf("7"))));
  EXPECT_FALSE(same(DType::F32, f32(std::nanf("")), f32(INFINITY)));
  EXPECT_FALSE(same(DType::F32, f32(-0.0f), f32(0.0f)));
  EXPECT_TRUE(same(DType::F32, f32(-0.0f), f32(0.0f), true));
  EXPECT_FALSE(same(DType::F32, f32(-0.0f), f32(1e-45f), true));
  const std::vector<unsigned char> h_nan_a = {0x01, 0x7c}, h_nan_b = {0x00, 0xfe}, h_inf = {0x00, 0x7c};
  EXPECT_TRUE(same(DType::F16, h_nan_a, h_nan_b));
  EXPECT_FALSE(same(DType::F16, h_nan_a, h_inf));
  const std::vector<unsigned char> bf_neg0 = {0x00, 0x80}, bf_pos0 = {0x00, 0x00};
  EXPECT_FALSE(same(DType::BF16, bf_neg0, bf_pos0));
  EXPECT_TRUE(same(DType::BF16, bf_neg0, bf_pos0, true));
  // 0x7fc00000 as an i32 is a number, not a NaN: integers never get the NaN rule.
  EXPECT_FALSE(same(DType::I32, f32(std::nanf("1")), f32(std::nanf("2"))));
  EXPECT_FALSE(same(DType::U32, f32(-0.0f), f32(0.0f), true));
}
