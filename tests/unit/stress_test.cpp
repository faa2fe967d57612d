// Stress under contention (seeds §5.3): every registered kernel's first test case, at the first
// dtype the device supports, launched again and again on one stream while another thread drives
// a background load on a second Context of the same backend. Each launch runs on fresh buffers
// from the caching pool (the previous launch's buffers just went back to it), rebound into
// launches prepared once, with the case's inputs and output fill uploaded on the stream; its
// outputs (guard bands included) must equal the first launch's byte for byte. A kernel whose
// float atomics make the summation order part of the result is checked against its oracle each
// time instead. A mismatch there means a race: in a kernel, in the stream order, or a pooled
// buffer handed out while a launch still wrote it (a stale payload).
//
// CI runs IRON_STRESS_LAUNCHES (default 3) launches of every kernel on the interpreter and on
// lavapipe (IRON_STRESS_EVERY=k takes every k-th kernel only); the full run is
//   IRON_STRESS_LAUNCHES=300 IRON_STRESS_EVERY=1 build/tests/iron_unit_tests --gtest_filter='*Stress*/cuda'
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "harness/runner.hpp"

using namespace iron;

namespace {

size_t env_count(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*end || n == 0) throw Error(std::string(name) + "='" + v + "' is not a positive count");
  return n;
}

// out[i] = a[i] + iters: the background load.
void load_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr iters = constexpr_("iters", u32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] {
    Var<f32> acc = a[i];
    for_(0u, iters, [&](Expr) { acc += 1.0f; });
    out[i] = acc;
  });
}

// Launches on its own Context and thread until stopped; counts rounds and keeps its first error.
class BackgroundLoad {
 public:
  explicit BackgroundLoad(Backend b) {
    worker_ = std::thread([this, b] {
      try {
        std::unique_ptr<Context> ctx = Context::create(b);
        static const ir::Kernel k = trace_kernel(KernelDecl{"stress_load", &load_body, Mode::Elementwise, {}, __FILE__, __LINE__});
        // A GPU gets a load that keeps it busy; a CPU device (the interpreter, lavapipe) one
        // that takes its turn without starving the stress loop of the machine's cores.
        const bool cpu = b == Backend::Interp || ctx->info().arch == "cpu";
        const uint32_t n = cpu ? 2048 : 1u << 18;
        const uint32_t iters = cpu ? 20 : 2000;
        Stream s = ctx->create_stream();
        DeviceBuffer a = ctx->alloc(DType::F32, n), out = ctx->alloc(DType::F32, n);
        std::vector<float> zeros(n, 0.0f);
        ctx->upload(a, zeros.data(), n * 4, s);
        PreparedLaunch p = ctx->prepare_launch(k, DType::F32, {{"a", a}, {"out", out}}, {{"n", n}, {"iters", iters}},
                                               {(n + 255) / 256, 1, 1}, {256, 1, 1});
        while (!stop_.load()) {
          for (int i = 0; i < 8; ++i) p.launch(s);
          ctx->synchronize(s);
          ++rounds_;
        }
      } catch (const std::exception& e) {
        error_ = e.what();
      }
    });
  }
  ~BackgroundLoad() { stop(); }
  void stop() {
    stop_ = true;
    if (worker_.joinable()) worker_.join();
  }
  uint64_t rounds() const { return rounds_.load(); }
  const std::string& error() const { return error_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  std::string error_;
  std::thread worker_;
};

// Whether a float atomic makes the result depend on the order lanes arrive in.
bool order_dependent(const ir::Kernel& k, Instantiation dtype) {
  bool found = false;
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if (!ir::is_atomic(in.op)) return;
    const DType t = ir::resolve(in.type.elem(), dtype);
    found = found || t == DType::F32 || t == DType::F16 || t == DType::BF16;
  });
  return found;
}

std::vector<unsigned char> bytes_of(Context& ctx, const DeviceBuffer& b) {
  std::vector<unsigned char> v(b.bytes());
  ctx.download(b, v.data(), v.size());
  return v;
}

struct CaseRun {
  std::string name;
  size_t launches = 0, mismatches = 0;
  std::string first_problem;
  bool skipped = false;
};

// One case: prepared once, then `launches` launches on fresh pooled buffers on `s`.
CaseRun stress_case(Context& ctx, const TestDecl& decl, Instantiation dtype, size_t launches, const Stream& s) {
  CaseRun run;
  run.name = std::string(decl.kernel) + "/" + decl.name + " [" + instantiation_name(dtype) + "]";
  // The case must pass on its own first; a skip (a device limit) is a skip here too.
  TestOutcome plain = run_test_case(ctx, decl, dtype, std::numeric_limits<double>::quiet_NaN());
  if (plain.status == TestOutcome::Status::Skip) {
    run.skipped = true;
    return run;
  }
  if (plain.status != TestOutcome::Status::Pass) {
    run.mismatches = 1;
    run.first_problem = "fails its oracle before any stress: " + plain.message;
    return run;
  }
  TestSetup setup = decl.body(dtype.t, dtype.w);
  Resident res;
  std::vector<SequenceLaunch> seq;
  if (find_selector(decl.kernel) && setup.has_call()) {
    const LaunchPlan plan = plan_launch(decl.kernel, Call{dtype, setup.call_args()}, ctx.info());
    res = make_resident(ctx, plan_buffer_types(plan, dtype), setup);
    seq = plan_launches(ctx, plan, dtype, res.bindings);
  } else {
    const ir::Kernel& k = kernel_ir(decl.kernel);
    res = make_resident(ctx, k, setup, dtype);
    seq.push_back(SequenceLaunch{&k, dtype, res.bindings, setup.scalars(), setup.grid_size(), setup.threadgroup()});
  }
  bool by_oracle = false;
  std::vector<PreparedLaunch> prepared;
  for (const SequenceLaunch& l : seq) {
    by_oracle = by_oracle || order_dependent(*l.kernel, dtype);
    prepared.push_back(ctx.prepare_launch(*l.kernel, dtype, l.buffers, l.constexprs, l.grid, l.threadgroup));
  }
  // Every buffer the launches bind (the case's and the plan's scratch), with its first contents.
  std::vector<DeviceBuffer> originals;
  std::vector<std::vector<unsigned char>> initial;
  std::map<const rt::BufferImpl*, size_t> index;
  for (const SequenceLaunch& l : seq)
    for (const auto& [name, b] : l.buffers)
      if (index.emplace(b.impl(), originals.size()).second) {
        originals.push_back(b);
        initial.push_back(bytes_of(ctx, b));
      }
  std::vector<std::vector<unsigned char>> reference;
  for (size_t launch = 0; launch < launches; ++launch) {
    std::vector<DeviceBuffer> fresh;
    for (size_t i = 0; i < originals.size(); ++i) {
      fresh.push_back(ctx.alloc_pooled(originals[i].dtype(), originals[i].count(), s));
      ctx.upload(fresh.back(), initial[i].data(), initial[i].size(), s);
    }
    auto now = [&](const DeviceBuffer& b) { return fresh[index.at(b.impl())]; };
    for (size_t j = 0; j < seq.size(); ++j) {
      for (const auto& [name, b] : seq[j].buffers) prepared[j].set_buffer(prepared[j].param(name), now(b));
      prepared[j].launch(s);
    }
    if (by_oracle) {
      Resident cur = res;
      for (auto& [name, b] : cur.bindings) b = now(b);
      for (GuardedBuffer& g : cur.outputs) g.buffer = now(g.buffer);
      for (GuardedBuffer& g : cur.inputs) g.buffer = now(g.buffer);
      Correctness c = check_outputs(ctx, cur, setup, std::numeric_limits<double>::quiet_NaN());
      if (!c.pass) {
        if (run.first_problem.empty()) run.first_problem = "launch " + std::to_string(launch + 1) + ": " + c.message;
        ++run.mismatches;
      }
    } else {
      std::vector<std::vector<unsigned char>> got;
      for (const GuardedBuffer& g : res.outputs) got.push_back(bytes_of(ctx, now(g.buffer)));
      if (launch == 0) {
        reference = std::move(got);
      } else if (got != reference) {
        if (run.first_problem.empty()) {
          for (size_t o = 0; o < got.size(); ++o)
            for (size_t byte = 0; byte < got[o].size() && run.first_problem.empty(); ++byte)
              if (got[o][byte] != reference[o][byte])
                run.first_problem = "launch " + std::to_string(launch + 1) + ": output '" + res.outputs[o].name +
                                    "' differs from launch 1 first at byte " + std::to_string(byte);
        }
        ++run.mismatches;
      }
    }
    ++run.launches;
  }
  return run;
}

}  // namespace

class Stress : public ::testing::TestWithParam<Backend> {};

// Every kernel's first case, launched IRON_STRESS_LAUNCHES times on one stream on pooled buffers
// while a second Context on another thread keeps its device busy: outputs bit-exact (the oracle
// for order-dependent float atomics), the background load error-free, the pool reusing buffers.
TEST_P(Stress, EveryKernelRepeatsBitExactUnderLoad) {
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(GetParam());
  } catch (const Error& e) {
    if (GetParam() == Backend::Cuda) {
      GTEST_SKIP() << "cuda unavailable: " << e.what();
    }
    FAIL() << "cannot open " << backend_name(GetParam()) << ": " << e.what();
  }
  const size_t launches = env_count("IRON_STRESS_LAUNCHES", 3);
  const size_t every = env_count("IRON_STRESS_EVERY", 1);
  BackgroundLoad load(GetParam());
  Stream s = ctx->create_stream();
  std::set<std::string> seen;
  size_t kernels = 0, ran = 0, skipped = 0, mismatches = 0;
  for (const TestDecl* decl : registered_tests()) {
    if (!seen.insert(decl->kernel).second) continue;  // the first case of each kernel
    if (kernels++ % every != 0) continue;
    Instantiation dtype = DType::F32;
    bool found = false;
    for (const DtypeTolerance& d : decl->dtypes)
      if (!found && unsupported_dtype(ctx->info(), d.dtype).empty()) dtype = d.dtype, found = true;
    if (!found) {
      ++skipped;
      continue;
    }
    CaseRun r;
    try {
      r = stress_case(*ctx, *decl, dtype, launches, s);
    } catch (const std::exception& e) {
      r.name = std::string(decl->kernel) + "/" + decl->name;
      r.mismatches = 1;
      r.first_problem = e.what();
    }
    if (r.skipped) {
      ++skipped;
      continue;
    }
    ++ran;
    mismatches += r.mismatches;
    EXPECT_EQ(r.mismatches, 0u) << r.name << ": " << r.mismatches << " of " << r.launches << " launches differ; "
                                << r.first_problem;
  }
  load.stop();
  EXPECT_EQ(load.error(), "") << "the background load failed";
  const Context::PoolStats pool = ctx->pool_stats();
  std::printf("stress: %zu kernels x %zu launches on %s (%s), %zu skipped, %zu mismatches; background load: %llu "
              "rounds; pool: %llu reused, %llu allocated, %llu passed over in flight\n",
              ran, launches, ctx->info().name.c_str(), backend_name(GetParam()), skipped, mismatches,
              (unsigned long long)load.rounds(), (unsigned long long)pool.reused, (unsigned long long)pool.allocated,
              (unsigned long long)pool.skipped_in_flight);
  EXPECT_GT(ran, 0u);
  EXPECT_GT(pool.reused, 0u) << "the pool never handed a buffer out again";
}

INSTANTIATE_TEST_SUITE_P(Backends, Stress, ::testing::Values(Backend::Interp, Backend::Vulkan, Backend::Cuda),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(backend_name(i.param)); });
