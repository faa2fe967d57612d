// Host benchmarks (Google Benchmark, one binary). See bench/README.md for what each one measures
// and how to run it on the GPU machine.
//
//   BM_Codegen/<kernel>/<cuda|glsl>   passes::optimize + codegen::emit (f16 where declared)
//   BM_GlslToSpirv/<kernel>           codegen::compile_glsl (glslang + spirv-val)
//   BM_NvrtcCompile/<kernel>          rt::nvrtc_compile for sm_90a
//   BM_DispatchValidate/iron_add      Context::validate_dispatch alone (the checking half)
//   BM_Dispatch/<iron|raw|raw_resubmit>/<vulkan|cuda>
//                                     host cost per launch of iron_add at n = 8
//   BM_Prepared/iron/<vulkan|cuda>    the same launch through a PreparedLaunch (validated once)
//   BM_Sequence200/iron/<vulkan|cuda> a LaunchSequence of 200 such launches replayed and waited
//                                     for (CUDA: one graph launch; Vulkan: one submit of a
//                                     pre-recorded command buffer); the summary divides by 200
//   BM_Sequence<N>/iron/cuda          the same for N = 1, 20 (with 200: the fixed cost of a
//                                     replay and wait, and the cost per kernel, by a line fit)
//   BM_SequenceReplay200/iron/<b>     the replay call alone (host issue cost; a wait every 16;
//                                     Vulkan waits for the previous replay in it)
//   BM_SequenceRebind200/iron/<b>     one step's output rebound, then replay and wait (CUDA: the
//                                     node updated in place; Vulkan: its set rewritten, recorded)
//   BM_Launches200/iron/<b>           the same 200 prepared launches one by one, then a wait
//   BM_Sequence200/raw_graph/cuda     a graph of 200 kernel nodes built with the raw driver API
//                                     from the same CUBIN, plain edges, launched and waited for
//   BM_Sequence200/iron_<plain_edges|captured>/cuda
//                                     BM_Sequence200 with IRON_CUDA_GRAPH=nodes / capture
//   BM_DiskCache<Hit|Miss>/<backend>  what a fresh Context's first dispatch costs on top of a
//                                     steady-state dispatch, with the disk cache warm / empty
//
// After the run a summary prints iron/raw dispatch ratios (target on the H200: <= 1.1x for CUDA;
// <= 1.05x for a prepared launch)
// and the disk-cache hit time (target: <= 1 ms).
#define VK_NO_PROTOTYPES
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "iron/registry.hpp"
#include "iron/runtime.hpp"
#include "passes/pass.hpp"
#include "runtime/cuda/cuda_api.hpp"  // types only; the raw loop loads its own entry points
#include "runtime/device.hpp"         // rt::nvrtc_compile
#include "runtime/disk_cache.hpp"

namespace {

using namespace iron;
using Clock = std::chrono::steady_clock;

// Both sides of every dispatch comparison synchronize every kSyncEvery launches and once after
// the timed loop (outside it), never per launch: the figure is the host issue cost per launch.
constexpr uint64_t kSyncEvery = 1024;

// The dispatch under test: iron_add, f32, n = 8. iron_add gives each thread 8 elements
// (kernels/elementwise/per_thread.hpp), so n = 8 needs ceil(8 / 8) = 1 thread: one threadgroup of
// 32 threads (groups_for(8, 32) = 1), with 31 threads past the end taking the guarded path.
constexpr uint32_t kN = 8;
constexpr Dim3 kGrid{1, 1, 1};
constexpr Dim3 kThreadgroup{32, 1, 1};
const char* const kDispatchKernel = "iron_add";

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The instantiation BM_Codegen and friends use: T = f16 where the kernel declares it, else its
// first dtype, else f32 (a kernel without T).
// A kernel with W takes W's first dtype beside it.
Instantiation bench_dtype(const ir::Kernel& k) {
  const std::vector<Instantiation> all = ir::instantiations(k);
  for (Instantiation in : all)
    if (in.t == DType::F16) return in;
  return all.front();
}

// The optimized IR every backend compiles (Context::pipeline does the same).
const ir::Kernel& optimized(const std::string& name) {
  static std::map<std::string, ir::Kernel> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, passes::optimize(kernel_ir(name))).first;
  return it->second;
}

// =============================================================================================
// Codegen

void BM_Codegen(benchmark::State& state, std::string name, codegen::Target target) {
  try {
    const ir::Kernel& k = kernel_ir(name);  // traced once (cached by the registry), not timed
    const Instantiation dt = bench_dtype(k);
    state.SetLabel(instantiation_name(dt));
    for (auto _ : state) {
      ir::Kernel opt = passes::optimize(k);
      codegen::Emitted e = codegen::emit(opt, dt, target);
      if (!e.ok()) {
        state.SkipWithError(("emit failed: " + e.diags.render(opt)).c_str());
        break;
      }
      benchmark::DoNotOptimize(e.source.data());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_GlslToSpirv(benchmark::State& state, std::string name) {
  try {
    const ir::Kernel& k = optimized(name);
    const Instantiation dt = bench_dtype(k);
    state.SetLabel(instantiation_name(dt));
    const codegen::Emitted e = codegen::emit(k, dt, codegen::Target::Glsl);
    if (!e.ok()) return state.SkipWithError("GLSL emission failed");
    const std::string label = codegen::entry_name(k, dt);
    // One untimed compile: glslang's process-wide initialization happens on first use.
    if (codegen::Spirv s = codegen::compile_glsl(e.source, label); !s.ok)
      return state.SkipWithError(("GLSL -> SPIR-V failed: " + s.log).c_str());
    for (auto _ : state) {
      codegen::Spirv s = codegen::compile_glsl(e.source, label);
      if (!s.ok) {
        state.SkipWithError(("GLSL -> SPIR-V failed: " + s.log).c_str());
        break;
      }
      benchmark::DoNotOptimize(s.words.data());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_NvrtcCompile(benchmark::State& state, std::string name) {
  try {
    const ir::Kernel& k = optimized(name);
    const Instantiation dt = bench_dtype(k);
    state.SetLabel(instantiation_name(dt) + " sm_90a");
    const codegen::Emitted e = codegen::emit(k, dt, codegen::Target::Cuda);
    if (!e.ok()) return state.SkipWithError("CUDA emission failed");
    // One untimed compile: NVRTC's library load and first-use setup are not per kernel.
    if (rt::NvrtcResult r = rt::nvrtc_compile(e.source, e.entry, "sm_90a"); !r.ok)
      return state.SkipWithError(("NVRTC failed: " + r.log).c_str());
    for (auto _ : state) {
      rt::NvrtcResult r = rt::nvrtc_compile(e.source, e.entry, "sm_90a");
      benchmark::DoNotOptimize(r.cubin.data());
    }
  } catch (const std::exception& e) {  // libnvrtc absent: nvrtc_compile throws
    state.SkipWithError(e.what());
  }
}

// =============================================================================================
// Iron dispatch fixture: one Context per backend, kept for the whole run (Google Benchmark calls
// a benchmark function several times while it sizes the iteration count).

struct IronDispatch {
  std::unique_ptr<Context> ctx;
  const ir::Kernel* kernel = nullptr;
  DeviceBuffer a, b, out;
  Bindings bindings;
  Constexprs constexprs;
  std::string error;  // non-empty: the backend is unavailable here
};

std::map<Backend, IronDispatch>& iron_fixtures() {
  static std::map<Backend, IronDispatch> fixtures;
  return fixtures;
}

IronDispatch& iron_dispatch(Backend backend) {
  auto [it, fresh] = iron_fixtures().try_emplace(backend);
  IronDispatch& f = it->second;
  if (!fresh) return f;
  try {
    f.ctx = Context::create(backend);
    f.kernel = &kernel_ir(kDispatchKernel);  // looked up once
    f.a = f.ctx->alloc(DType::F32, kN);
    f.b = f.ctx->alloc(DType::F32, kN);
    f.out = f.ctx->alloc(DType::F32, kN);
    std::vector<float> ones(kN, 1.0f);
    f.ctx->upload(f.a, ones.data(), kN * sizeof(float));
    f.ctx->upload(f.b, ones.data(), kN * sizeof(float));
    f.bindings = {{"a", f.a}, {"b", f.b}, {"out", f.out}};
    f.constexprs = {{"n", double(kN)}};
    // Compile and check the result once, untimed.
    f.ctx->dispatch_with_grid(*f.kernel, DType::F32, f.bindings, f.constexprs, kGrid, kThreadgroup);
    std::vector<float> got(kN, 0.0f);
    f.ctx->download(f.out, got.data(), kN * sizeof(float));
    for (float v : got)
      if (v != 2.0f) throw Error(std::string("iron_add produced a wrong result on ") + backend_name(backend));
  } catch (const std::exception& e) {
    f.error = std::string(backend_name(backend)) + " unavailable: " + e.what();
    f.ctx.reset();
  }
  return f;
}

// Iron, per iteration: Context::dispatch_with_grid(kernel, f32, bindings by name, {n}, grid, tg),
// i.e. validation (check(): dtype, geometry, constexprs, buffer binding by name and extents), the
// pipeline-cache lookup (mutex + hash + map), then the device's launch():
//   CUDA:   marshal the parameter array, cuCtxSetCurrent, cuLaunchKernel on the null stream
//   Vulkan: take a free submission (retiring finished ones), allocate and write its descriptor
//           set, reset + begin its command buffer, bind pipeline, bind descriptor set, push
//           constants, dispatch, memory barrier, end, vkQueueSubmit with its fence (no wait)
// plus Context::synchronize every kSyncEvery launches.
void BM_DispatchIron(benchmark::State& state, Backend backend) {
  IronDispatch& f = iron_dispatch(backend);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  state.SetLabel(f.ctx->info().name);
  try {
    uint64_t launches = 0;
    for (auto _ : state) {
      f.ctx->dispatch_with_grid(*f.kernel, DType::F32, f.bindings, f.constexprs, kGrid, kThreadgroup);
      if (++launches % kSyncEvery == 0) f.ctx->synchronize();
    }
    f.ctx->synchronize();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// Iron's prepared launch, per iteration: PreparedLaunch::launch() on the default stream, i.e. the
// device's launch of arguments validated once (CUDA: cuLaunchKernel with the kernelParams array
// built at prepare time; Vulkan: the submission launch() records), plus Context::synchronize
// every kSyncEvery launches, as in the raw loops.
void BM_PreparedIron(benchmark::State& state, Backend backend) {
  IronDispatch& f = iron_dispatch(backend);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  state.SetLabel(f.ctx->info().name);
  try {
    PreparedLaunch p = f.ctx->prepare_launch(*f.kernel, DType::F32, f.bindings, f.constexprs, kGrid, kThreadgroup);
    uint64_t launches = 0;
    for (auto _ : state) {
      p.launch();
      if (++launches % kSyncEvery == 0) f.ctx->synchronize();
    }
    f.ctx->synchronize();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// A LaunchSequence of `steps` prepared launches of the same dispatch, per iteration one replay
// on the default stream and a Context::synchronize: host issue and device time of a
// decode-step-sized batch of small kernels (CUDA: one cuGraphLaunch of a graph of kernel nodes;
// Vulkan: one submit of a pre-recorded command buffer). Every step writes `out`, so each depends
// on the one before (Vulkan puts a barrier between every two; the graph is a chain anyway).
constexpr int kSequenceSteps = 200;
LaunchSequence make_sequence(IronDispatch& f, int steps) {
  LaunchSequence seq = f.ctx->create_sequence();
  for (int i = 0; i < steps; ++i)
    seq.add(f.ctx->prepare_launch(*f.kernel, DType::F32, f.bindings, f.constexprs, kGrid, kThreadgroup));
  seq.replay();  // records (CUDA: builds and instantiates the graph) outside the timing
  f.ctx->synchronize();
  return seq;
}

// `graph`: IRON_CUDA_GRAPH while the sequence is recorded ("" leaves the default: programmatic
// edges where the arch allows).
void BM_SequenceIron(benchmark::State& state, Backend backend, int steps, std::string graph) {
  IronDispatch& f = iron_dispatch(backend);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  try {
    if (!graph.empty()) setenv("IRON_CUDA_GRAPH", graph.c_str(), 1);
    LaunchSequence seq = make_sequence(f, steps);
    unsetenv("IRON_CUDA_GRAPH");
    state.SetLabel(f.ctx->info().name + "; " + seq.recording());
    for (auto _ : state) {
      seq.replay();
      f.ctx->synchronize();
    }
    state.counters["kernels"] = steps;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The replay call alone: what the host spends issuing a replay, with a wait every 16 replays
// (amortized, as in the dispatch loops). CUDA queues graph launches back to back; a Vulkan replay
// first waits for the sequence's previous replay, so there it is replay and wait again.
void BM_SequenceReplayIron(benchmark::State& state, Backend backend) {
  IronDispatch& f = iron_dispatch(backend);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  try {
    LaunchSequence seq = make_sequence(f, kSequenceSteps);
    state.SetLabel(f.ctx->info().name);
    uint64_t replays = 0;
    for (auto _ : state) {
      seq.replay();
      if (++replays % 16 == 0) f.ctx->synchronize();
    }
    f.ctx->synchronize();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// Per iteration: step 100's output rebound (alternating between two buffers), then replay and
// wait. Against BM_Sequence200 this is the cost of a rebinding reaching the recording.
void BM_SequenceRebindIron(benchmark::State& state, Backend backend) {
  IronDispatch& f = iron_dispatch(backend);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  try {
    LaunchSequence seq = make_sequence(f, kSequenceSteps);
    DeviceBuffer other = f.ctx->alloc(DType::F32, kN);
    PreparedLaunch& step = seq.step(kSequenceSteps / 2);
    const uint32_t out = step.param("out");
    bool flip = false;
    for (auto _ : state) {
      step.set_buffer(out, (flip = !flip) ? other : f.out);
      seq.replay();
      f.ctx->synchronize();
    }
    state.SetLabel(f.ctx->info().name + "; " + seq.recording());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The same 200 launches issued one by one (prepared, so no validation), then a wait: what the
// sequence saves.
void BM_LaunchesIron(benchmark::State& state, Backend backend) {
  IronDispatch& f = iron_dispatch(backend);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  state.SetLabel(f.ctx->info().name);
  try {
    PreparedLaunch p = f.ctx->prepare_launch(*f.kernel, DType::F32, f.bindings, f.constexprs, kGrid, kThreadgroup);
    for (auto _ : state) {
      for (int i = 0; i < kSequenceSteps; ++i) p.launch();
      f.ctx->synchronize();
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The checking half of a dispatch alone, on the interpreter (validation only reads DeviceInfo,
// so any backend gives the same cost); shows how much of the Iron figure is validation.
void BM_DispatchValidate(benchmark::State& state) {
  IronDispatch& f = iron_dispatch(Backend::Interp);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  try {
    for (auto _ : state)
      f.ctx->validate_dispatch(*f.kernel, DType::F32, f.bindings, f.constexprs, kGrid, kThreadgroup);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// =============================================================================================
// Raw CUDA: our own dlopen of libcuda.so.1 (cuda_api.hpp provides only the types), the primary
// context, and the SAME cubin Iron launches: iron_add f32 optimized + emitted as CUDA, compiled
// by rt::nvrtc_compile for the device's own arch.

namespace raw_cuda {
using namespace iron::cuda;

struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**) = nullptr;
  // Graphs (BM_Sequence200/raw_graph); optional: that row is skipped without them.
  CUresult (*cuGraphCreate)(CUgraph*, unsigned) = nullptr;
  CUresult (*cuGraphAddKernelNode_v2)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                      const CudaKernelNodeParams*) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
};

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(std::string("raw CUDA: ") + what + " failed with CUresult " + std::to_string(r));
}

struct Loop {
  Driver d;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  std::string arch, entry;
  std::vector<CUdeviceptr> buffers;  // a, b, out
  uint32_t n = kN;
  std::vector<void*> params;         // built once; one pointer per kernel parameter
  std::string error;

  void init() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);  // never closed
    if (!lib) throw Error("no CUDA driver: libcuda.so.1 not found");
    auto load = [&](auto& fp, const char* sym) {
      fp = reinterpret_cast<std::remove_reference_t<decltype(fp)>>(dlsym(lib, sym));
      if (!fp) throw Error(std::string("libcuda.so.1 lacks ") + sym);
    };
#define RAW_LOAD(name) load(d.name, #name)
    RAW_LOAD(cuInit); RAW_LOAD(cuDeviceGet); RAW_LOAD(cuDeviceGetAttribute); RAW_LOAD(cuDevicePrimaryCtxRetain);
    RAW_LOAD(cuDevicePrimaryCtxRelease_v2); RAW_LOAD(cuCtxSetCurrent); RAW_LOAD(cuCtxSynchronize);
    RAW_LOAD(cuMemAlloc_v2); RAW_LOAD(cuMemFree_v2); RAW_LOAD(cuMemcpyHtoD_v2); RAW_LOAD(cuModuleLoadData);
    RAW_LOAD(cuModuleUnload); RAW_LOAD(cuModuleGetFunction); RAW_LOAD(cuLaunchKernel);
#undef RAW_LOAD
    auto optional = [&](auto& fp, const char* sym) {
      fp = reinterpret_cast<std::remove_reference_t<decltype(fp)>>(dlsym(lib, sym));
    };
    optional(d.cuGraphCreate, "cuGraphCreate");
    optional(d.cuGraphAddKernelNode_v2, "cuGraphAddKernelNode_v2");
    optional(d.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    optional(d.cuGraphLaunch, "cuGraphLaunch");
    optional(d.cuGraphExecDestroy, "cuGraphExecDestroy");
    optional(d.cuGraphDestroy, "cuGraphDestroy");
    check(d.cuInit(0), "cuInit");
    check(d.cuDeviceGet(&dev, 0), "cuDeviceGet(0)");
    int major = 0, minor = 0;
    check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
    check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
    // The same rule as Iron's CUDA device: sm_90 and sm_100 get the arch-specific "a" variant.
    arch = "sm_" + std::to_string(major) + std::to_string(minor) + ((major == 9 || major == 10) && minor == 0 ? "a" : "");
    check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

    const ir::Kernel& k = optimized(kDispatchKernel);
    codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Cuda);
    if (!e.ok()) throw Error("raw CUDA: emission of iron_add failed");
    rt::NvrtcResult nv = rt::nvrtc_compile(e.source, e.entry, arch);
    if (!nv.ok) throw Error("raw CUDA: NVRTC failed for " + arch + ":\n" + nv.log);
    entry = e.entry;
    check(d.cuModuleLoadData(&module, nv.cubin.data()), "cuModuleLoadData");
    check(d.cuModuleGetFunction(&fn, module, entry.c_str()), "cuModuleGetFunction");

    // Parameters in declaration order (iron_add: n, a, b, out): buffers as device pointers,
    // scalars by value. The array lives as long as the loop: built once, passed to every launch.
    size_t buffer_count = 0;
    for (const ir::Param& p : k.params) buffer_count += p.kind == ir::ParamKind::Buffer;
    buffers.assign(buffer_count, 0);
    std::vector<float> ones(kN, 1.0f);
    for (CUdeviceptr& b : buffers) {
      check(d.cuMemAlloc_v2(&b, kN * sizeof(float)), "cuMemAlloc_v2");
      check(d.cuMemcpyHtoD_v2(b, ones.data(), kN * sizeof(float)), "cuMemcpyHtoD_v2");
    }
    size_t bi = 0;
    for (const ir::Param& p : k.params) {
      if (p.kind == ir::ParamKind::Buffer) params.push_back(&buffers[bi++]);
      else if (p.name == "n") params.push_back(&n);
      else throw Error("raw CUDA: unexpected scalar parameter '" + p.name + "'");
    }
    check(d.cuLaunchKernel(fn, kGrid.x, kGrid.y, kGrid.z, kThreadgroup.x, kThreadgroup.y, kThreadgroup.z, 0, nullptr,
                           params.data(), nullptr),
          "cuLaunchKernel");
    check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  }

  ~Loop() {
    if (!ctx) return;
    d.cuCtxSetCurrent(ctx);
    d.cuCtxSynchronize();
    for (CUdeviceptr b : buffers)
      if (b) d.cuMemFree_v2(b);
    if (module) d.cuModuleUnload(module);
    d.cuDevicePrimaryCtxRelease_v2(dev);
  }
};

std::unique_ptr<Loop>& instance() {
  static std::unique_ptr<Loop> loop;
  return loop;
}

Loop& get() {
  auto& loop = instance();
  if (!loop) {
    loop = std::make_unique<Loop>();
    try {
      loop->init();
    } catch (const std::exception& e) {
      loop->error = std::string("cuda unavailable: ") + e.what();
    }
  }
  return *loop;
}
}  // namespace raw_cuda

// Raw CUDA, per iteration: cuLaunchKernel(fn, grid, tg, 0 shared bytes, null stream, the
// prebuilt params array) and a check of its CUresult; cuCtxSynchronize every kSyncEvery launches.
// No cuCtxSetCurrent per launch (the context is made current once).
void BM_DispatchRawCuda(benchmark::State& state) {
  raw_cuda::Loop& L = raw_cuda::get();
  if (!L.error.empty()) return state.SkipWithError(L.error.c_str());
  state.SetLabel(L.arch);
  L.d.cuCtxSetCurrent(L.ctx);  // once, outside the loop (Iron may have run on this thread)
  uint64_t launches = 0;
  for (auto _ : state) {
    iron::cuda::CUresult r = L.d.cuLaunchKernel(L.fn, kGrid.x, kGrid.y, kGrid.z, kThreadgroup.x, kThreadgroup.y,
                                                kThreadgroup.z, 0, nullptr, L.params.data(), nullptr);
    if (r != iron::cuda::CUDA_SUCCESS) {
      state.SkipWithError(("cuLaunchKernel failed with CUresult " + std::to_string(r)).c_str());
      break;
    }
    if (++launches % kSyncEvery == 0) L.d.cuCtxSynchronize();
  }
  L.d.cuCtxSynchronize();
}

// Raw CUDA graph, per iteration: cuGraphLaunch of a chain of kSequenceSteps kernel nodes (each
// the raw loop's launch: same function, grid and parameters), then cuCtxSynchronize. The
// graph is built and instantiated once, outside the timing.
void BM_SequenceRawGraph(benchmark::State& state) {
  raw_cuda::Loop& L = raw_cuda::get();
  if (!L.error.empty()) return state.SkipWithError(L.error.c_str());
  const raw_cuda::Driver& d = L.d;
  if (!d.cuGraphCreate || !d.cuGraphAddKernelNode_v2 || !d.cuGraphInstantiateWithFlags || !d.cuGraphLaunch ||
      !d.cuGraphExecDestroy || !d.cuGraphDestroy)
    return state.SkipWithError("the CUDA driver lacks the graph calls (cuGraphAddKernelNode_v2, ...)");
  state.SetLabel(L.arch);
  d.cuCtxSetCurrent(L.ctx);
  iron::cuda::CUgraph graph = nullptr;
  iron::cuda::CUgraphExec exec = nullptr;
  try {
    raw_cuda::check(d.cuGraphCreate(&graph, 0), "cuGraphCreate");
    std::vector<iron::cuda::CUgraphNode> nodes(kSequenceSteps);
    iron::cuda::CudaKernelNodeParams np{};
    np.func = L.fn;
    np.gridDimX = kGrid.x, np.gridDimY = kGrid.y, np.gridDimZ = kGrid.z;
    np.blockDimX = kThreadgroup.x, np.blockDimY = kThreadgroup.y, np.blockDimZ = kThreadgroup.z;
    np.kernelParams = L.params.data();
    for (int i = 0; i < kSequenceSteps; ++i)
      raw_cuda::check(d.cuGraphAddKernelNode_v2(&nodes[size_t(i)], graph, i ? &nodes[size_t(i) - 1] : nullptr, i ? 1 : 0, &np),
                      "cuGraphAddKernelNode_v2");
    raw_cuda::check(d.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
    raw_cuda::check(d.cuGraphLaunch(exec, nullptr), "cuGraphLaunch");
    raw_cuda::check(d.cuCtxSynchronize(), "cuCtxSynchronize");
    for (auto _ : state) {
      d.cuGraphLaunch(exec, nullptr);
      d.cuCtxSynchronize();
    }
    raw_cuda::check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  if (exec) d.cuGraphExecDestroy(exec);
  if (graph) d.cuGraphDestroy(graph);
}

// =============================================================================================
// Raw Vulkan: our own minimal path. dlopen libvulkan.so.1, an instance (API 1.1: SPIR-V 1.3),
// physical device 0 (what Context::create(Vulkan) opens), the first compute queue family, three
// host-visible storage buffers, one descriptor set layout (binding i = buffer i), push constants
// (4 bytes per scalar), and a pipeline from the SPIR-V Iron emits for iron_add f32 with the
// workgroup size in specialization constants 0..2, exactly as VulkanDevice::compile builds it.

namespace raw_vk {

#define RAW_VK_INSTANCE_FNS(X)                \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define RAW_VK_DEVICE_FNS(X)       \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkDeviceWaitIdle)              \
  X(vkQueueSubmit)                 \
  X(vkQueueWaitIdle)               \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)             \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkAllocateDescriptorSets)      \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkResetCommandBuffer)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCmdPipelineBarrier)          \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkResetFences)                 \
  X(vkWaitForFences)

#define RAW_VK_DECLARE(name) PFN_##name name = nullptr;
struct Fns {
  RAW_VK_INSTANCE_FNS(RAW_VK_DECLARE)
  RAW_VK_DEVICE_FNS(RAW_VK_DECLARE)
};
#undef RAW_VK_DECLARE

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw Error(std::string("raw Vulkan: ") + what + " failed with VkResult " + std::to_string(int(r)));
}

template <class T>
T vk(VkStructureType type) {
  T s{};
  s.sType = type;
  return s;
}

struct Loop {
  Fns f;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  std::vector<VkBuffer> buffers;
  std::vector<VkDeviceMemory> memories;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;       // re-recorded per launch
  VkCommandBuffer prerecorded = VK_NULL_HANDLE;  // recorded once, re-submitted per launch
  VkFence fence = VK_NULL_HANDLE;
  std::vector<uint32_t> push;  // scalar bit patterns in declaration order (iron_add: n)
  std::string device_name;
  std::string error;

  void init() {
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);  // never closed
    if (!lib) throw Error("no Vulkan loader (libvulkan.so.1)");
    auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!gipa) throw Error("libvulkan.so.1 has no vkGetInstanceProcAddr");
    auto create_instance = reinterpret_cast<PFN_vkCreateInstance>(gipa(nullptr, "vkCreateInstance"));
    if (!create_instance) throw Error("no vkCreateInstance");

    auto app = vk<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "iron_host_bench raw";
    app.apiVersion = VK_API_VERSION_1_1;
    auto ici = vk<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ici.pApplicationInfo = &app;
    if (VkResult r = create_instance(&ici, nullptr, &instance); r != VK_SUCCESS) {
      instance = VK_NULL_HANDLE;
      check(r, "vkCreateInstance");
    }
#define RAW_VK_LOAD_I(name)                                                   \
  f.name = reinterpret_cast<PFN_##name>(gipa(instance, #name));               \
  if (!f.name) throw Error("raw Vulkan: no " #name);
    RAW_VK_INSTANCE_FNS(RAW_VK_LOAD_I)
#undef RAW_VK_LOAD_I

    uint32_t count = 0;
    check(f.vkEnumeratePhysicalDevices(instance, &count, nullptr), "vkEnumeratePhysicalDevices");
    if (count == 0) throw Error("no Vulkan device");
    std::vector<VkPhysicalDevice> devices(count);
    VkResult er = f.vkEnumeratePhysicalDevices(instance, &count, devices.data());
    if (er != VK_INCOMPLETE) check(er, "vkEnumeratePhysicalDevices");
    physical = devices[0];
    VkPhysicalDeviceProperties props{};
    f.vkGetPhysicalDeviceProperties(physical, &props);
    device_name = props.deviceName;
    if (props.apiVersion < VK_API_VERSION_1_1) throw Error("device '" + device_name + "' is not Vulkan 1.1");

    uint32_t nfam = 0;
    f.vkGetPhysicalDeviceQueueFamilyProperties(physical, &nfam, nullptr);
    std::vector<VkQueueFamilyProperties> fams(nfam);
    f.vkGetPhysicalDeviceQueueFamilyProperties(physical, &nfam, fams.data());
    uint32_t family = UINT32_MAX;
    for (uint32_t i = 0; i < nfam && family == UINT32_MAX; ++i)
      if (fams[i].queueCount > 0 && (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) family = i;
    if (family == UINT32_MAX) throw Error("no compute queue");

    // No optional features: the f32 shader needs none.
    float priority = 1.0f;
    auto qci = vk<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    auto dci = vk<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    if (VkResult r = f.vkCreateDevice(physical, &dci, nullptr, &device); r != VK_SUCCESS) {
      device = VK_NULL_HANDLE;
      check(r, "vkCreateDevice");
    }
#define RAW_VK_LOAD_D(name)                                                          \
  f.name = reinterpret_cast<PFN_##name>(f.vkGetDeviceProcAddr(device, #name));       \
  if (!f.name) throw Error("raw Vulkan: no " #name);
    RAW_VK_DEVICE_FNS(RAW_VK_LOAD_D)
#undef RAW_VK_LOAD_D
    f.vkGetDeviceQueue(device, family, 0, &queue);

    // The shader: the same optimized IR, GLSL and SPIR-V as VulkanDevice::compile.
    const ir::Kernel& k = optimized(kDispatchKernel);
    codegen::Emitted e = codegen::emit(k, DType::F32, codegen::Target::Glsl);
    if (!e.ok()) throw Error("raw Vulkan: GLSL emission of iron_add failed");
    codegen::Spirv spirv = codegen::compile_glsl(e.source, codegen::entry_name(k, DType::F32));
    if (!spirv.ok) throw Error("raw Vulkan: GLSL -> SPIR-V failed:\n" + spirv.log);

    uint32_t num_buffers = 0;
    for (const ir::Param& p : k.params) {
      if (p.kind == ir::ParamKind::Buffer) ++num_buffers;
      else if (p.name == "n") push.push_back(kN);
      else throw Error("raw Vulkan: unexpected scalar parameter '" + p.name + "'");
    }

    // Buffers: host-visible + coherent, device-local where possible (Iron's first choice too).
    VkPhysicalDeviceMemoryProperties mem{};
    f.vkGetPhysicalDeviceMemoryProperties(physical, &mem);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < num_buffers; ++i) {
      auto bci = vk<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
      bci.size = kN * sizeof(float);
      bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
      bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
      VkBuffer buf = VK_NULL_HANDLE;
      check(f.vkCreateBuffer(device, &bci, nullptr, &buf), "vkCreateBuffer");
      buffers.push_back(buf);
      VkMemoryRequirements req{};
      f.vkGetBufferMemoryRequirements(device, buf, &req);
      uint32_t type = UINT32_MAX;
      for (VkMemoryPropertyFlags want : {host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, host})
        for (uint32_t t = 0; t < mem.memoryTypeCount && type == UINT32_MAX; ++t)
          if ((req.memoryTypeBits & (1u << t)) && (mem.memoryTypes[t].propertyFlags & want) == want) type = t;
      if (type == UINT32_MAX) throw Error("raw Vulkan: no host-visible memory type");
      auto mai = vk<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
      mai.allocationSize = req.size;
      mai.memoryTypeIndex = type;
      VkDeviceMemory m = VK_NULL_HANDLE;
      check(f.vkAllocateMemory(device, &mai, nullptr, &m), "vkAllocateMemory");
      memories.push_back(m);
      check(f.vkBindBufferMemory(device, buf, m, 0), "vkBindBufferMemory");
      void* mapped = nullptr;
      check(f.vkMapMemory(device, m, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
      std::vector<float> ones(kN, 1.0f);
      std::memcpy(mapped, ones.data(), kN * sizeof(float));  // stays mapped; freed with the memory
    }

    std::vector<VkDescriptorSetLayoutBinding> bindings(num_buffers);
    for (uint32_t i = 0; i < num_buffers; ++i)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    auto dslci = vk<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    dslci.bindingCount = num_buffers;
    dslci.pBindings = bindings.data();
    check(f.vkCreateDescriptorSetLayout(device, &dslci, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(4 * push.size())};
    auto plci = vk<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &set_layout;
    plci.pushConstantRangeCount = push.empty() ? 0 : 1;
    plci.pPushConstantRanges = push.empty() ? nullptr : &range;
    check(f.vkCreatePipelineLayout(device, &plci, nullptr, &pipeline_layout), "vkCreatePipelineLayout");

    auto smci = vk<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    smci.codeSize = spirv.words.size() * sizeof(uint32_t);
    smci.pCode = spirv.words.data();
    VkShaderModule module = VK_NULL_HANDLE;
    check(f.vkCreateShaderModule(device, &smci, nullptr, &module), "vkCreateShaderModule");
    const uint32_t tg[3] = {kThreadgroup.x, kThreadgroup.y, kThreadgroup.z};
    const VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
    VkSpecializationInfo spec{3, entries, sizeof tg, tg};
    auto cpci = vk<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = module;
    cpci.stage.pName = "main";
    cpci.stage.pSpecializationInfo = &spec;
    cpci.layout = pipeline_layout;
    VkResult pr = f.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline);
    f.vkDestroyShaderModule(device, module, nullptr);
    if (pr != VK_SUCCESS) pipeline = VK_NULL_HANDLE;
    check(pr, "vkCreateComputePipelines");

    // The descriptor set is written once: every launch binds the same buffers.
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, num_buffers};
    auto dpci = vk<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    dpci.maxSets = 1;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &size;
    check(f.vkCreateDescriptorPool(device, &dpci, nullptr, &pool), "vkCreateDescriptorPool");
    auto dsai = vk<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    dsai.descriptorPool = pool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &set_layout;
    check(f.vkAllocateDescriptorSets(device, &dsai, &set), "vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos(num_buffers);
    std::vector<VkWriteDescriptorSet> writes(num_buffers);
    for (uint32_t i = 0; i < num_buffers; ++i) {
      infos[i] = {buffers[i], 0, VK_WHOLE_SIZE};
      writes[i] = vk<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      writes[i].dstSet = set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    f.vkUpdateDescriptorSets(device, num_buffers, writes.data(), 0, nullptr);

    auto pci = vk<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = family;
    check(f.vkCreateCommandPool(device, &pci, nullptr, &command_pool), "vkCreateCommandPool");
    auto cai = vk<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = command_pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check(f.vkAllocateCommandBuffers(device, &cai, &cmd), "vkAllocateCommandBuffers");
    check(f.vkAllocateCommandBuffers(device, &cai, &prerecorded), "vkAllocateCommandBuffers");
    auto fci = vk<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check(f.vkCreateFence(device, &fci, nullptr, &fence), "vkCreateFence");

    auto begin = vk<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    check(f.vkBeginCommandBuffer(prerecorded, &begin), "vkBeginCommandBuffer");
    record(prerecorded);
    check(f.vkEndCommandBuffer(prerecorded), "vkEndCommandBuffer");

    launch_recorded();  // one check-free warm-up launch through each path
    submit_and_wait(prerecorded);
  }

  // The commands of one launch, as VulkanDevice::launch records them: bind pipeline, bind the
  // descriptor set, push constants, dispatch, and the shader-write -> host/shader visibility barrier.
  void record(VkCommandBuffer cb) const {
    f.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    f.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout, 0, 1, &set, 0, nullptr);
    if (!push.empty())
      f.vkCmdPushConstants(cb, pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(4 * push.size()), push.data());
    f.vkCmdDispatch(cb, kGrid.x, kGrid.y, kGrid.z);
    auto barrier = vk<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    f.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0,
                           nullptr, 0, nullptr);
  }

  void submit_and_wait(VkCommandBuffer cb) {
    auto submit = vk<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cb;
    check(f.vkQueueSubmit(queue, 1, &submit, fence), "vkQueueSubmit");
    VkResult r = f.vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
    VkResult reset = f.vkResetFences(device, 1, &fence);
    check(r, "vkWaitForFences");
    check(reset, "vkResetFences");
  }

  // Re-record, then submit and wait: what VulkanDevice::launch does, minus its per-launch
  // vkUpdateDescriptorSets (a raw loop that always binds the same buffers writes them once).
  void launch_recorded() {
    check(f.vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    auto begin = vk<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(f.vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    record(cmd);
    check(f.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    submit_and_wait(cmd);
  }

  ~Loop() {
    if (device && f.vkDestroyDevice) {  // loaded first; every later handle exists only once all loaded
      if (f.vkDeviceWaitIdle) f.vkDeviceWaitIdle(device);
      if (fence) f.vkDestroyFence(device, fence, nullptr);
      if (command_pool) f.vkDestroyCommandPool(device, command_pool, nullptr);
      if (pool) f.vkDestroyDescriptorPool(device, pool, nullptr);
      if (pipeline) f.vkDestroyPipeline(device, pipeline, nullptr);
      if (pipeline_layout) f.vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
      if (set_layout) f.vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
      for (VkBuffer b : buffers) f.vkDestroyBuffer(device, b, nullptr);
      for (VkDeviceMemory m : memories) f.vkFreeMemory(device, m, nullptr);
      f.vkDestroyDevice(device, nullptr);
    }
    if (instance && f.vkDestroyInstance) f.vkDestroyInstance(instance, nullptr);
  }
};

std::unique_ptr<Loop>& instance() {
  static std::unique_ptr<Loop> loop;
  return loop;
}

Loop& get() {
  auto& loop = instance();
  if (!loop) {
    loop = std::make_unique<Loop>();
    try {
      loop->init();
    } catch (const std::exception& e) {
      loop->error = std::string("vulkan unavailable: ") + e.what();
    }
  }
  return *loop;
}
}  // namespace raw_vk

// Raw Vulkan, per iteration (resubmit = false; like for like with Iron): vkResetCommandBuffer,
// vkBeginCommandBuffer (one-time submit), bind pipeline, bind the descriptor set, push constants,
// dispatch, the same memory barrier, vkEndCommandBuffer, vkQueueSubmit with a fence,
// vkWaitForFences, vkResetFences. The descriptor set is written once, before the loop; Iron
// rewrites it on every launch, so that write counts as Iron overhead.
// resubmit = true: the command buffer is recorded once; per iteration only submit + wait + reset
// fence (a lower bound for any API-level path). Both: vkQueueWaitIdle every kSyncEvery launches
// (a no-op in practice, since every launch already waited), mirroring Context::synchronize.
void BM_DispatchRawVulkan(benchmark::State& state, bool resubmit) {
  raw_vk::Loop& L = raw_vk::get();
  if (!L.error.empty()) return state.SkipWithError(L.error.c_str());
  state.SetLabel(L.device_name);
  try {
    uint64_t launches = 0;
    for (auto _ : state) {
      if (resubmit) L.submit_and_wait(L.prerecorded);
      else L.launch_recorded();
      if (++launches % kSyncEvery == 0) L.f.vkQueueWaitIdle(L.queue);
    }
    L.f.vkQueueWaitIdle(L.queue);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// =============================================================================================
// Disk cache: what a fresh Context's first dispatch costs on top of a steady-state one.
//
// Per iteration (manual time): [untimed] create a Context, allocate and upload the buffers;
// [t0] dispatch iron_add + synchronize [t1] dispatch again + synchronize [t2]. The reported time
// is (t1 - t0) - (t2 - t1): the pipeline-cache miss path of Context::pipeline (passes::optimize,
// codegen::emit, the disk-cache load on a hit or the full compile + store on a miss, the device
// load: cuModuleLoadData / vkCreateComputePipelines) plus any first-launch cost (CUDA lazy module
// loading), without the launch itself. Context creation is reported separately as the counter
// create_ms (CUDA: with the primary context already held by another Context). disk_hits /
// disk_misses count DiskCache::instance() look-ups per iteration: 0 hits means the device does
// not use the disk cache (yet).
// Hit: the cache is warmed once before the loop. Miss: the cache directory is emptied before
// every iteration (untimed), so every first dispatch compiles and stores.

std::string g_cache_dir;  // set in main, before anything touches DiskCache::instance()

void clear_cache_dir() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(g_cache_dir, ec))
    std::filesystem::remove_all(entry.path(), ec);
}

struct FreshContext {
  std::unique_ptr<Context> ctx;
  Bindings bindings;
};

FreshContext fresh_context(Backend backend) {
  FreshContext f;
  f.ctx = Context::create(backend);
  std::vector<float> ones(kN, 1.0f);
  for (const char* name : {"a", "b", "out"}) {
    DeviceBuffer b = f.ctx->alloc(DType::F32, kN);
    f.ctx->upload(b, ones.data(), kN * sizeof(float));
    f.bindings.emplace_back(name, b);
  }
  return f;
}

void BM_DiskCache(benchmark::State& state, Backend backend, bool hit) {
  const Constexprs constexprs{{"n", double(kN)}};
  try {
    const ir::Kernel& kernel = kernel_ir(kDispatchKernel);
    rt::DiskCache& cache = rt::DiskCache::instance();
    if (!cache.enabled()) return state.SkipWithError("the disk cache is disabled (IRON_NO_DISK_CACHE?)");
    // CUDA: one Context stays open across the loop, so the device's primary context is not torn
    // down and rebuilt with every fresh Context (that would be process start-up, not kernel load).
    std::unique_ptr<Context> keeper;
    if (backend == Backend::Cuda) keeper = Context::create(backend);
    if (hit) {  // warm: one compile that stores into the cache
      FreshContext w = fresh_context(backend);
      w.ctx->dispatch_with_grid(kernel, DType::F32, w.bindings, constexprs, kGrid, kThreadgroup);
      w.ctx->synchronize();
    }
    double create_s = 0, first_s = 0, steady_s = 0;
    uint64_t hits = 0, misses = 0;
    for (auto _ : state) {
      if (!hit) clear_cache_dir();
      const rt::DiskCache::Stats before = cache.stats();
      const auto c0 = Clock::now();
      FreshContext f = fresh_context(backend);
      const auto t0 = Clock::now();
      f.ctx->dispatch_with_grid(kernel, DType::F32, f.bindings, constexprs, kGrid, kThreadgroup);
      f.ctx->synchronize();
      const auto t1 = Clock::now();
      f.ctx->dispatch_with_grid(kernel, DType::F32, f.bindings, constexprs, kGrid, kThreadgroup);
      f.ctx->synchronize();
      const auto t2 = Clock::now();
      const rt::DiskCache::Stats after = cache.stats();
      hits += after.hits - before.hits;
      misses += after.misses - before.misses;
      create_s += seconds(t0 - c0);
      first_s += seconds(t1 - t0);
      steady_s += seconds(t2 - t1);
      state.SetIterationTime(std::max(0.0, seconds(t1 - t0) - seconds(t2 - t1)));
    }
    const double n = double(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["create_ms"] = 1e3 * create_s / n;
    state.counters["first_dispatch_ms"] = 1e3 * first_s / n;
    state.counters["steady_dispatch_us"] = 1e6 * steady_s / n;
    state.counters["disk_hits"] = double(hits) / n;
    state.counters["disk_misses"] = double(misses) / n;
    if (hits == 0) state.SetLabel("NO disk-cache hits: the device does not use DiskCache yet");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    state.SkipWithError((std::string(backend_name(backend)) + " unavailable: " + what).c_str());
  }
}

// =============================================================================================
// Reporting: the console output as usual, plus a summary that compares across benchmarks.

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const std::string name = r.run_name.function_name;
      if (r.error_occurred) {
        errors_[name] = r.error_message;
        continue;
      }
      // With --benchmark_repetitions the median stands for the family (robust on a noisy host),
      // else the mean; without repetitions, the one run.
      int rank = 0;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") rank = 2;
        else if (r.aggregate_name == "mean") rank = 1;
        else continue;
      }
      Result& res = results_[name];
      if (rank < res.rank) continue;
      res.rank = rank;
      res.seconds = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      res.cpu_seconds = r.GetAdjustedCPUTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      res.counters.clear();
      for (const auto& [k, c] : r.counters) res.counters[k] = c.value;
    }
  }

  // printf only: libbenchmark has its own (shared) libstdc++, this binary a static one.
  void print_summary() const {
    if (results_.empty() && errors_.empty()) return;  // nothing ran (--benchmark_list_tests, ...)
    std::printf("\n==== summary ====\n");
    bool any = false;
    for (const char* backend : {"cuda", "vulkan"}) {
      const std::string iron = std::string("BM_Dispatch/iron/") + backend;
      const std::string raw = std::string("BM_Dispatch/raw/") + backend;
      const Result* a = find(iron);
      const Result* b = find(raw);
      if (a && b && b->seconds > 0) {
        any = true;
        const double ratio = a->seconds / b->seconds;
        std::printf("dispatch overhead iron/raw = %.2fx (%s): iron %.2f us, raw %.2f us per launch, %+.2f us",
                    ratio, backend, a->seconds * 1e6, b->seconds * 1e6, (a->seconds - b->seconds) * 1e6);
        if (std::string(backend) == "cuda") std::printf("  [target <= 1.10x: %s]", ratio <= 1.10 ? "PASS" : "FAIL");
        std::printf("\n  (process CPU time per launch: iron %.2f us, raw %.2f us)\n", a->cpu_seconds * 1e6,
                    b->cpu_seconds * 1e6);
        const Result* r2 = find(std::string("BM_Dispatch/raw_resubmit/") + backend);
        if (r2 && r2->seconds > 0)
          std::printf("  (vs pre-recorded resubmit loop: %.2fx, %.2f us)\n", a->seconds / r2->seconds, r2->seconds * 1e6);
      } else if (find(iron) || find(raw) || errors_.count(iron) || errors_.count(raw)) {
        std::string why = missing(iron) + missing(raw);
        std::printf("dispatch overhead iron/raw (%s): not measured%s\n", backend, why.c_str());
      }
    }
    for (const char* backend : {"cuda", "vulkan"}) {
      const std::string prep = std::string("BM_Prepared/iron/") + backend;
      const std::string raw = std::string("BM_Dispatch/raw/") + backend;
      const Result* a = find(prep);
      const Result* b = find(raw);
      if (a && b && b->seconds > 0) {
        const double ratio = a->seconds / b->seconds;
        std::printf("prepared launch iron/raw = %.2fx (%s): iron %.2f us, raw %.2f us per launch, %+.2f us", ratio,
                    backend, a->seconds * 1e6, b->seconds * 1e6, (a->seconds - b->seconds) * 1e6);
        if (std::string(backend) == "cuda") std::printf("  [target <= 1.05x: %s]", ratio <= 1.05 ? "PASS" : "FAIL");
        std::printf("\n");
      } else if (a || b || errors_.count(prep) || errors_.count(raw)) {
        std::string why = missing(prep) + missing(raw);
        std::printf("prepared launch iron/raw (%s): not measured%s\n", backend, why.c_str());
      }
    }
    for (const char* backend : {"cuda", "vulkan"}) {
      const std::string bn = backend;
      const Result* q = find("BM_Sequence200/iron/" + bn);
      if (!q) continue;
      const double per = q->seconds * 1e6 / kSequenceSteps;
      std::printf("sequence of %d launches (%s): %.3f us per kernel, replay and wait", kSequenceSteps, backend, per);
      if (bn == "cuda") std::printf("  [target <= 0.6 us: %s]", per <= 0.6 ? "PASS" : "FAIL");
      std::printf("\n");
      if (const Result* l = find("BM_Launches200/iron/" + bn))
        std::printf("  the same %d launches one by one: %.3f us per kernel (the sequence: %.2fx faster)\n",
                    kSequenceSteps, l->seconds * 1e6 / kSequenceSteps, l->seconds / q->seconds);
      if (const Result* r = find("BM_SequenceReplay200/iron/" + bn))
        std::printf("  the replay call alone: %.2f us (%.3f us per kernel)\n", r->seconds * 1e6,
                    r->seconds * 1e6 / kSequenceSteps);
      if (const Result* r = find("BM_SequenceRebind200/iron/" + bn))
        std::printf("  one step rebound before each replay: %+.2f us per replay\n", (r->seconds - q->seconds) * 1e6);
      if (const Result* p = find("BM_Sequence200/iron_plain_edges/" + bn))
        std::printf("  the graph with plain edges (no early launch): %.3f us per kernel\n", p->seconds * 1e6 / kSequenceSteps);
      if (const Result* c = find("BM_Sequence200/iron_captured/" + bn))
        std::printf("  the graph captured from a stream (last session's path): %.3f us per kernel\n",
                    c->seconds * 1e6 / kSequenceSteps);
      if (const Result* g = find("BM_Sequence200/raw_graph/" + bn))
        std::printf("  raw driver graph of the same %d kernels: %.3f us per kernel (iron/raw %.2fx)\n", kSequenceSteps,
                    g->seconds * 1e6 / kSequenceSteps, q->seconds / g->seconds);
      const Result* one = find("BM_Sequence1/iron/" + bn);
      const Result* twenty = find("BM_Sequence20/iron/" + bn);
      if (one && twenty) {
        // Least squares over (1, 20, 200): time = fixed + kernels * slope.
        const double xs[3] = {1, 20, double(kSequenceSteps)};
        const double ys[3] = {one->seconds * 1e6, twenty->seconds * 1e6, q->seconds * 1e6};
        double mx = 0, my = 0;
        for (int i = 0; i < 3; ++i) mx += xs[i] / 3, my += ys[i] / 3;
        double sxy = 0, sxx = 0;
        for (int i = 0; i < 3; ++i) sxy += (xs[i] - mx) * (ys[i] - my), sxx += (xs[i] - mx) * (xs[i] - mx);
        const double slope = sxy / sxx;
        std::printf("  line fit over 1, 20, %d kernels: %.2f us per replay and wait + %.3f us per kernel\n",
                    kSequenceSteps, my - slope * mx, slope);
      }
    }
    if (const Result* v = find("BM_DispatchValidate/iron_add"))
      std::printf("validation alone (Context::validate_dispatch): %.2f us per dispatch\n", v->seconds * 1e6);
    for (const char* backend : {"cuda", "vulkan"}) {
      const Result* h = find(std::string("BM_DiskCacheHit/") + backend);
      const Result* m = find(std::string("BM_DiskCacheMiss/") + backend);
      if (!h && !m) continue;
      any = true;
      std::printf("first-dispatch compile+load (%s):", backend);
      if (h)
        std::printf(" disk-cache hit %.3f ms (%.1f disk hits/load) [target <= 1 ms: %s]", h->seconds * 1e3,
                    h->counter("disk_hits"),
                    h->counter("disk_hits") < 1 ? "n/a, no disk-cache hits"
                                                 : (h->seconds <= 1e-3 ? "PASS" : "FAIL"));
      if (m) std::printf("%s miss %.3f ms", h ? ";" : "", m->seconds * 1e3);
      std::printf("\n");
    }
    (void)any;
    std::fflush(stdout);
  }

 private:
  struct Result {
    double seconds = 0;      // wall time per iteration
    double cpu_seconds = 0;  // this process's CPU time per iteration (all threads)
    int rank = -1;  // 0: a single run, 1: mean, 2: median
    std::map<std::string, double> counters;
    double counter(const std::string& k) const {
      auto it = counters.find(k);
      return it == counters.end() ? 0.0 : it->second;
    }
  };
  const Result* find(const std::string& name) const {
    auto it = results_.find(name);
    return it == results_.end() ? nullptr : &it->second;
  }
  std::string missing(const std::string& name) const {
    auto it = errors_.find(name);
    if (it != errors_.end()) return "; " + name + ": " + first_line(it->second);
    if (!find(name)) return "; " + name + " did not run";
    return "";
  }
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

  std::map<std::string, Result> results_;
  std::map<std::string, std::string> errors_;
};

void register_benchmarks() {
  using benchmark::RegisterBenchmark;
  std::vector<std::string> kernels;
  for (const KernelDecl* d : registered_kernels()) kernels.push_back(d->name);

  for (const std::string& k : kernels) {
    RegisterBenchmark(("BM_Codegen/" + k + "/cuda").c_str(), BM_Codegen, k, codegen::Target::Cuda)
        ->Unit(benchmark::kMicrosecond);
    RegisterBenchmark(("BM_Codegen/" + k + "/glsl").c_str(), BM_Codegen, k, codegen::Target::Glsl)
        ->Unit(benchmark::kMicrosecond);
  }
  for (const std::string& k : kernels)
    RegisterBenchmark(("BM_GlslToSpirv/" + k).c_str(), BM_GlslToSpirv, k)->Unit(benchmark::kMicrosecond);
  for (const std::string& k : kernels)
    RegisterBenchmark(("BM_NvrtcCompile/" + k).c_str(), BM_NvrtcCompile, k)->Unit(benchmark::kMillisecond);

  RegisterBenchmark("BM_DispatchValidate/iron_add", BM_DispatchValidate)->Unit(benchmark::kMicrosecond);
  for (Backend b : {Backend::Vulkan, Backend::Cuda}) {
    const std::string bn = backend_name(b);
    RegisterBenchmark(("BM_Dispatch/iron/" + bn).c_str(), BM_DispatchIron, b)->Unit(benchmark::kMicrosecond);
    RegisterBenchmark(("BM_Prepared/iron/" + bn).c_str(), BM_PreparedIron, b)->Unit(benchmark::kMicrosecond);
    RegisterBenchmark(("BM_Sequence200/iron/" + bn).c_str(), BM_SequenceIron, b, kSequenceSteps, std::string())
        ->Unit(benchmark::kMicrosecond);
    RegisterBenchmark(("BM_SequenceReplay200/iron/" + bn).c_str(), BM_SequenceReplayIron, b)
        ->Unit(benchmark::kMicrosecond);
    RegisterBenchmark(("BM_SequenceRebind200/iron/" + bn).c_str(), BM_SequenceRebindIron, b)
        ->Unit(benchmark::kMicrosecond);
    RegisterBenchmark(("BM_Launches200/iron/" + bn).c_str(), BM_LaunchesIron, b)->Unit(benchmark::kMicrosecond);
    if (b == Backend::Cuda) {
      RegisterBenchmark("BM_Dispatch/raw/cuda", BM_DispatchRawCuda)->Unit(benchmark::kMicrosecond);
      RegisterBenchmark("BM_Sequence200/raw_graph/cuda", BM_SequenceRawGraph)->Unit(benchmark::kMicrosecond);
      RegisterBenchmark("BM_Sequence1/iron/cuda", BM_SequenceIron, b, 1, std::string())->Unit(benchmark::kMicrosecond);
      RegisterBenchmark("BM_Sequence20/iron/cuda", BM_SequenceIron, b, 20, std::string())->Unit(benchmark::kMicrosecond);
      RegisterBenchmark("BM_Sequence200/iron_plain_edges/cuda", BM_SequenceIron, b, kSequenceSteps, std::string("nodes"))
          ->Unit(benchmark::kMicrosecond);
      RegisterBenchmark("BM_Sequence200/iron_captured/cuda", BM_SequenceIron, b, kSequenceSteps, std::string("capture"))
          ->Unit(benchmark::kMicrosecond);
    } else {
      RegisterBenchmark("BM_Dispatch/raw/vulkan", BM_DispatchRawVulkan, false)->Unit(benchmark::kMicrosecond);
      RegisterBenchmark("BM_Dispatch/raw_resubmit/vulkan", BM_DispatchRawVulkan, true)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  // A fresh Context per iteration (a Vulkan instance + device each time) is slow next to the
  // measured part, so these run a fixed number of iterations instead of following min_time.
  for (Backend b : {Backend::Vulkan, Backend::Cuda}) {
    const std::string bn = backend_name(b);
    RegisterBenchmark(("BM_DiskCacheHit/" + bn).c_str(), BM_DiskCache, b, true)
        ->UseManualTime()
        ->Iterations(20)
        ->Unit(benchmark::kMillisecond);
    RegisterBenchmark(("BM_DiskCacheMiss/" + bn).c_str(), BM_DiskCache, b, false)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The disk cache must point at a private, initially empty directory before anything calls
  // DiskCache::instance() (it reads IRON_CACHE_DIR once).
  {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/iron_host_bench.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
      std::perror("iron_host_bench: mkdtemp");
      return 1;
    }
    g_cache_dir = buf.data();
    setenv("IRON_CACHE_DIR", g_cache_dir.c_str(), 1);
    unsetenv("IRON_NO_DISK_CACHE");
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_benchmarks();
  SummaryReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color
                                                 : benchmark::ConsoleReporter::OO_None);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();

  // Device objects go before process exit (driver atexit handlers must not see them).
  raw_cuda::instance().reset();
  raw_vk::instance().reset();
  iron_fixtures().clear();
  std::error_code ec;
  std::filesystem::remove_all(g_cache_dir, ec);
  return 0;
}
