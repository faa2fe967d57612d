// The vendor GEMM path (include/iron/blas.hpp): cuBLASLt, opened with dlopen, on a CUDA
// Context's buffers and streams. The library is found once per process; each CUDA device keeps a
// handle, one workspace per stream and the algorithm candidates per problem (Device::
// library_state), so a problem runs the same algorithm every time and its results repeat bit
// for bit.
#include "iron/blas.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/cuda/cublaslt_api.hpp"
#include "runtime/device.hpp"

namespace iron::blas {
namespace {

using namespace iron::cublaslt;

// ---------------------------------------------------------------------------------------------
// Loading

struct Lib {
  void* handle = nullptr;  // never dlclose'd
  std::string path;
  size_t version = 0;
#define IRON_CUBLASLT_FN(name, ret, args) ret(*name) args = nullptr;
  IRON_CUBLASLT_FUNCTIONS(IRON_CUBLASLT_FN)
#undef IRON_CUBLASLT_FN

  std::string describe(cublasStatus_t s) const {
    std::string out = std::to_string(s);
    if (const char* n = cublasLtGetStatusName(s)) out += std::string(" ") + n;
    if (const char* t = cublasLtGetStatusString(s)) out += std::string(": ") + t;
    return out;
  }
  void check(cublasStatus_t s, const std::string& what) const {
    if (s != CUBLAS_STATUS_SUCCESS) throw Error("cuBLASLt " + what + " failed: " + describe(s));
  }
};

struct LibLoad {
  std::unique_ptr<Lib> lib;
  std::string error;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Files matching `pattern`, in glob's (sorted) order.
std::vector<std::string> glob_files(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

// Where to look, in order: the sonames (the loader's own search: LD_LIBRARY_PATH, the cache, a
// copy already loaded by PyTorch), the CUDA toolkit, then the nvidia wheels PyTorch installs
// (nvidia/cublas/lib for CUDA 12, nvidia/cu13/lib for CUDA 13) in the usual site-packages.
std::vector<std::string> candidates() {
  std::vector<std::string> c = {"libcublasLt.so.13", "libcublasLt.so.12"};
  for (const std::string& home : {env("CUDA_HOME"), env("CUDA_PATH"), std::string("/usr/local/cuda")})
    if (!home.empty())
      for (const char* v : {"13", "12"}) c.push_back(home + "/lib64/libcublasLt.so." + v);
  std::vector<std::string> sites;
  for (const std::string& prefix : {env("VIRTUAL_ENV"), env("CONDA_PREFIX"), std::string("/usr/local"),
                                    std::string("/usr"), std::string("/opt/conda"), env("HOME") + "/.local"})
    if (!prefix.empty())
      for (const char* kind : {"site-packages", "dist-packages"}) sites.push_back(prefix + "/lib/python3*/" + kind);
  sites.push_back("/usr/lib/python3/dist-packages");
  const std::string pythonpath = env("PYTHONPATH");
  for (size_t at = 0; at <= pythonpath.size();) {
    size_t colon = pythonpath.find(':', at);
    if (colon == std::string::npos) colon = pythonpath.size();
    if (colon > at) sites.push_back(pythonpath.substr(at, colon - at));
    at = colon + 1;
  }
  for (const std::string& site : sites)
    for (const char* dir : {"cu13/lib", "cublas/lib", "cu12/lib"})
      for (const std::string& f : glob_files(site + "/nvidia/" + dir + "/libcublasLt.so.1[23]")) c.push_back(f);
  return c;
}

LibLoad load() {
  LibLoad out;
  const std::string pinned = env("IRON_CUBLASLT_PATH");
  std::vector<std::string> tries = pinned.empty() ? candidates() : std::vector<std::string>{pinned};
  void* h = nullptr;
  std::string tried;
  for (const std::string& c : tries) {
    if (h) break;
    h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = dlerror();
      tried += "\n  " + (err ? std::string(err) : c + ": not found");
    }
  }
  if (!h) {
    out.error = pinned.empty()
                    ? "cuBLASLt not found: tried" + tried +
                          "\n(install the CUDA toolkit or PyTorch's nvidia-cublas wheel, or set IRON_CUBLASLT_PATH)"
                    : "cuBLASLt not found: IRON_CUBLASLT_PATH=" + pinned + " could not be loaded:" + tried;
    return out;
  }
  auto lib = std::make_unique<Lib>();
  lib->handle = h;
  std::string missing;
#define IRON_CUBLASLT_FN(name, ret, args)                              \
  lib->name = reinterpret_cast<ret(*) args>(dlsym(h, #name));          \
  if (!lib->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  IRON_CUBLASLT_FUNCTIONS(IRON_CUBLASLT_FN)
#undef IRON_CUBLASLT_FN
  Dl_info where{};
  lib->path = (lib->cublasLtCreate && dladdr(reinterpret_cast<void*>(lib->cublasLtCreate), &where) && where.dli_fname)
                  ? where.dli_fname
                  : (pinned.empty() ? "libcublasLt" : pinned);
  if (!missing.empty()) {
    out.error = "unusable cuBLASLt: " + lib->path + " lacks " + missing;
    return out;
  }
  lib->version = lib->cublasLtGetVersion();
  if (lib->version < 120000) {
    out.error = "unusable cuBLASLt: " + lib->path + " is version " + std::to_string(lib->version) + " (12.0 or later needed)";
    return out;
  }
  out.lib = std::move(lib);
  return out;
}

const Lib& lib() {
  static const LibLoad loaded = load();
  if (!loaded.lib) throw Error(loaded.error);
  return *loaded.lib;
}

// ---------------------------------------------------------------------------------------------
// Problems

const char* order_name(Order o) { return o == Order::RowMajor ? "row-major" : "col-major"; }

int64_t compact_ld(const Matrix& x, int64_t rows, int64_t cols) { return x.order == Order::RowMajor ? cols : rows; }
int64_t ld_of(const Matrix& x, int64_t rows, int64_t cols) { return x.ld ? x.ld : compact_ld(x, rows, cols); }
// Elements from the first to one past the last the matrix touches.
uint64_t extent(const Matrix& x, int64_t rows, int64_t cols) {
  const int64_t ld = ld_of(x, rows, cols);
  return x.order == Order::RowMajor ? uint64_t(rows - 1) * uint64_t(ld) + uint64_t(cols)
                                    : uint64_t(cols - 1) * uint64_t(ld) + uint64_t(rows);
}

int cuda_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: return -1;
  }
}

// One operand as cuBLASLt sees it: column-major storage of `rows x cols` elements and the op that
// makes the logical matrix out of it.
struct Operand {
  int op = CUBLAS_OP_N;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
};

// Logical matrix `rows x cols` stored as `order` with `ld`: column-major storage is the matrix
// itself; row-major storage, read column-major, is its transpose (cols x rows).
Operand as_col_major(Order order, int64_t rows, int64_t cols, int64_t ld) {
  if (order == Order::ColMajor) return {CUBLAS_OP_N, uint64_t(rows), uint64_t(cols), ld};
  return {CUBLAS_OP_T, uint64_t(cols), uint64_t(rows), ld};
}
Order flip(Order o) { return o == Order::RowMajor ? Order::ColMajor : Order::RowMajor; }

uint32_t address_align(const void* p) {
  const uint64_t a = uint64_t(reinterpret_cast<uintptr_t>(p));
  const uint64_t low = a ? (a & (~a + 1)) : 256;
  return uint32_t(std::min<uint64_t>(low, 256));
}

std::string problem_text(const GemmArgs& g) {
  return "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) + ", " +
         dtype_name(g.a.buffer.dtype()) + " x " + dtype_name(g.b.buffer.dtype()) + " -> " +
         dtype_name(g.c.buffer.dtype()) + ", A " + order_name(g.a.order) + ", B " + order_name(g.b.order) + ", C " +
         order_name(g.c.order);
}

// A candidate algorithm and what cuBLASLt says about it.
struct Candidate {
  cublasLtMatmulAlgo_t algo{};
  GemmReport info;
};

// The descriptors of one problem (shape, types, layouts, alignments, policy) and its candidates.
struct Plan {
  const Lib* lib = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  std::vector<Candidate> candidates;
  ~Plan() {
    if (la) lib->cublasLtMatrixLayoutDestroy(la);
    if (lb) lib->cublasLtMatrixLayoutDestroy(lb);
    if (lc) lib->cublasLtMatrixLayoutDestroy(lc);
    if (desc) lib->cublasLtMatmulDescDestroy(desc);
  }
};

constexpr uint64_t kWorkspaceBytes = 32ull << 20;  // what cuBLAS uses on Hopper
constexpr int kHeuristicResults = 32;

struct State {
  const Lib* lib = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::map<rt::StreamImpl*, DeviceBuffer> workspaces;
  std::map<std::string, std::unique_ptr<Plan>> plans;
  ~State() {
    plans.clear();
    if (handle) lib->cublasLtDestroy(handle);
  }
};

// The device's state, created on first use (the caller holds library_mu).
State& state_of(rt::Device& dev) {
  if (!dev.library_state) {
    const Lib& l = lib();
    dev.native_stream(nullptr);  // our context current: the handle binds to its device
    auto st = std::make_shared<State>();
    st->lib = &l;
    l.check(l.cublasLtCreate(&st->handle), "cublasLtCreate");
    dev.library_state = st;
  }
  return *static_cast<State*>(dev.library_state.get());
}

template <typename T>
T config(const Lib& l, const cublasLtMatmulAlgo_t& a, int attr) {
  T v{};
  size_t written = 0;
  if (l.cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS) return T{};
  return v;
}

void set_pref(const Lib& l, cublasLtMatmulPreference_t p, int attr, const void* v, size_t n, const char* name) {
  l.check(l.cublasLtMatmulPreferenceSetAttribute(p, attr, v, n), std::string("cublasLtMatmulPreferenceSetAttribute(") + name + ")");
}

// A call checked and resolved: the plan, the candidate and the addresses.
struct Bound {
  State* st = nullptr;
  Plan* plan = nullptr;
  const Candidate* cand = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  // cuBLASLt's operand order: first and second (B and A when C is row-major, see bind()).
  const void* first = nullptr;
  const void* second = nullptr;
  float alpha = 1, beta = 0;
  std::vector<rt::BufferImpl*> buffers;
};

char* address_of(rt::Device& dev, const DeviceBuffer& b, const char* which) {
  if (b.stride() != 1)
    throw Error(std::string("iron::blas::gemm: GemmArgs.") + which + " is a strided view (stride " + std::to_string(b.stride()) +
                "); cuBLASLt takes contiguous matrices (give the leading dimension instead)");
  try {
    return static_cast<char*>(dev.address(*b.impl())) + b.offset_bytes();
  } catch (const Error& e) {
    throw Error(std::string("iron::blas::gemm: GemmArgs.") + which + ": " + e.what());
  }
}

Bound bind(Context& ctx, rt::Device& dev, const GemmArgs& g, const Policy& policy) {
  if (std::string problem = check_args(g); !problem.empty()) throw Error("iron::blas::gemm: " + problem);
  if (ctx.info().backend != Backend::Cuda)
    throw Error(std::string("iron::blas::gemm: cuBLASLt runs on a CUDA Context; this one is ") +
                backend_name(ctx.info().backend) + " (" + ctx.info().name + ")");
  if (policy.algo < -1) throw Error("iron::blas::gemm: Policy.algo " + std::to_string(policy.algo) + " is below -1");
  const Lib& l = lib();
  Bound out;
  char* pa = address_of(dev, g.a.buffer, "a");
  char* pb = address_of(dev, g.b.buffer, "b");
  char* pc = address_of(dev, g.c.buffer, "c");
  // The output must not overlap an input: cuBLASLt reads A and B while it writes C.
  auto span = [](char* p, const Matrix& x, int64_t r, int64_t c) {
    return std::make_pair(p, p + extent(x, r, c) * dtype_size(x.buffer.dtype()));
  };
  const auto sc = span(pc, g.c, g.m, g.n);
  for (auto [p, x, r, c, name] : {std::make_tuple(pa, &g.a, g.m, g.k, "a"), std::make_tuple(pb, &g.b, g.k, g.n, "b")}) {
    const auto s = span(p, *x, r, c);
    if (s.first < sc.second && sc.first < s.second)
      throw Error(std::string("iron::blas::gemm: GemmArgs.c overlaps GemmArgs.") + name +
                  " (the output is written while the inputs are read; use separate memory)");
  }

  // C row-major: compute C^T = B^T A^T in column-major terms. Transposing a logical matrix is
  // reading its storage in the other order with the same ld.
  const bool c_row = g.c.order == Order::RowMajor;
  const int64_t lda = ld_of(g.a, g.m, g.k), ldb = ld_of(g.b, g.k, g.n), ldc = ld_of(g.c, g.m, g.n);
  Operand first, second, out_op;
  int first_type = cuda_type(g.a.buffer.dtype()), second_type = cuda_type(g.b.buffer.dtype());
  if (c_row) {
    first = as_col_major(flip(g.b.order), g.n, g.k, ldb);
    second = as_col_major(flip(g.a.order), g.k, g.m, lda);
    out_op = as_col_major(Order::ColMajor, g.n, g.m, ldc);
    std::swap(first_type, second_type);
    out.first = pb, out.second = pa;
  } else {
    first = as_col_major(g.a.order, g.m, g.k, lda);
    second = as_col_major(g.b.order, g.k, g.n, ldb);
    out_op = as_col_major(Order::ColMajor, g.m, g.n, ldc);
    out.first = pa, out.second = pb;
  }
  const int c_type = cuda_type(g.c.buffer.dtype());
  const uint32_t align_first = address_align(out.first), align_second = address_align(out.second),
                 align_c = address_align(pc);

  State& st = state_of(dev);
  std::string key = problem_text(g) + " lda " + std::to_string(lda) + " ldb " + std::to_string(ldb) + " ldc " +
                    std::to_string(ldc) + " align " + std::to_string(align_first) + "/" + std::to_string(align_second) +
                    "/" + std::to_string(align_c) + (policy.allow_atomics ? " atomics" : " no-atomics");
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    auto plan = std::make_unique<Plan>();
    plan->lib = &l;
    l.check(l.cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const int32_t ta = first.op, tb = second.op;
    l.check(l.cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "set TRANSA");
    l.check(l.cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "set TRANSB");
    l.check(l.cublasLtMatrixLayoutCreate(&plan->la, first_type, first.rows, first.cols, first.ld), "cublasLtMatrixLayoutCreate(A)");
    l.check(l.cublasLtMatrixLayoutCreate(&plan->lb, second_type, second.rows, second.cols, second.ld), "cublasLtMatrixLayoutCreate(B)");
    l.check(l.cublasLtMatrixLayoutCreate(&plan->lc, c_type, out_op.rows, out_op.cols, out_op.ld), "cublasLtMatrixLayoutCreate(C)");

    struct Pref {
      const Lib& l;
      cublasLtMatmulPreference_t p = nullptr;
      ~Pref() {
        if (p) l.cublasLtMatmulPreferenceDestroy(p);
      }
    } pref{l};
    l.check(l.cublasLtMatmulPreferenceCreate(&pref.p), "cublasLtMatmulPreferenceCreate");
    const uint64_t ws = kWorkspaceBytes;
    set_pref(l, pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws, "MAX_WORKSPACE_BYTES");
    // The atomics policy: without IRON_GEMM_ATOMICS=1, only split-K whose partials are reduced in
    // a separate fixed-order pass (or no split-K) is offered.
    const uint32_t mask = policy.allow_atomics ? CUBLASLT_REDUCTION_SCHEME_MASK
                                               : (CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
    set_pref(l, pref.p, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask, "REDUCTION_SCHEME_MASK");
    set_pref(l, pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first, sizeof align_first, "MIN_ALIGNMENT_A_BYTES");
    set_pref(l, pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second, sizeof align_second, "MIN_ALIGNMENT_B_BYTES");
    set_pref(l, pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof align_c, "MIN_ALIGNMENT_C_BYTES");
    set_pref(l, pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof align_c, "MIN_ALIGNMENT_D_BYTES");

    std::vector<cublasLtMatmulHeuristicResult_t> results(kHeuristicResults);
    int returned = 0;
    dev.native_stream(nullptr);
    const cublasStatus_t s = l.cublasLtMatmulAlgoGetHeuristic(st.handle, plan->desc, plan->la, plan->lb, plan->lc,
                                                              plan->lc, pref.p, kHeuristicResults, results.data(), &returned);
    if (s != CUBLAS_STATUS_SUCCESS && returned == 0)
      throw Error("iron::blas::gemm: cuBLASLt has no algorithm for " + problem_text(g) + " (cublasLtMatmulAlgoGetHeuristic: " +
                  l.describe(s) + ")");
    for (int i = 0; i < returned; ++i) {
      const cublasLtMatmulHeuristicResult_t& r = results[size_t(i)];
      if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > kWorkspaceBytes) continue;
      Candidate c;
      c.algo = r.algo;
      c.info.algo_id = config<int32_t>(l, r.algo, CUBLASLT_ALGO_CONFIG_ID);
      c.info.tile_id = int(config<uint32_t>(l, r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
      c.info.stages_id = int(config<uint32_t>(l, r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
      c.info.splitk = std::max(1, int(config<int32_t>(l, r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)));
      c.info.reduction = config<uint32_t>(l, r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
      c.info.workspace_bytes = r.workspaceSize;
      c.info.deterministic = c.info.splitk <= 1 || (c.info.reduction & CUBLASLT_REDUCTION_SCHEME_INPLACE) == 0;
      // Belt and braces: the preference mask already excludes the in-place reduction.
      if (!policy.allow_atomics && !c.info.deterministic) continue;
      plan->candidates.push_back(c);
    }
    if (plan->candidates.empty())
      throw Error("iron::blas::gemm: cuBLASLt offers no algorithm for " + problem_text(g) + " under the atomics policy (" +
                  (policy.allow_atomics ? "IRON_GEMM_ATOMICS=1" : "atomic split-K forbidden") + "; " +
                  std::to_string(returned) + " heuristic result(s))");
    const int total = int(plan->candidates.size());
    for (int i = 0; i < total; ++i) plan->candidates[size_t(i)].info.candidate = i, plan->candidates[size_t(i)].info.candidates = total;
    it = st.plans.emplace(key, std::move(plan)).first;
  }
  Plan& plan = *it->second;
  const int pick = policy.algo < 0 ? 0 : policy.algo;
  if (pick >= int(plan.candidates.size()))
    throw Error("iron::blas::gemm: IRON_GEMM_ALGO=" + std::to_string(policy.algo) + " but cuBLASLt offers " +
                std::to_string(plan.candidates.size()) + " candidate(s) (0.." + std::to_string(plan.candidates.size() - 1) +
                ") for " + problem_text(g) + " under the atomics policy");
  out.st = &st;
  out.plan = &plan;
  out.cand = &plan.candidates[size_t(pick)];
  out.a = pa, out.b = pb, out.c = pc;
  out.alpha = g.alpha, out.beta = g.beta;
  out.buffers = {g.a.buffer.impl(), g.b.buffer.impl(), g.c.buffer.impl()};
  return out;
}

// Enqueues the bound call on `stream` (the caller holds library_mu).
void enqueue(Context& ctx, rt::Device& dev, const Bound& b, rt::StreamImpl* stream) {
  State& st = *b.st;
  const Lib& l = *st.lib;
  DeviceBuffer& ws = st.workspaces[stream];
  if (!ws) ws = ctx.alloc(DType::U8, kWorkspaceBytes);
  void* wsp = dev.address(*ws.impl());
  void* s = dev.native_stream(stream);  // also makes the context current
  const cublasStatus_t r =
      l.cublasLtMatmul(st.handle, b.plan->desc, &b.alpha, b.first, b.plan->la, b.second, b.plan->lb, &b.beta, b.c,
                       b.plan->lc, b.c, b.plan->lc, &b.cand->algo, wsp, kWorkspaceBytes, static_cast<cudaStream_t>(s));
  if (r != CUBLAS_STATUS_SUCCESS) throw Error("iron::blas::gemm: cublasLtMatmul failed: " + l.describe(r) + " (" + b.cand->info.text() + ")");
  for (rt::BufferImpl* buf : b.buffers) buf->last_stream = stream, buf->last_ticket = 1;
  ws.impl()->last_stream = stream, ws.impl()->last_ticket = 1;
}

bool parse_index(const std::string& s, int& out) {
  if (s.empty() || s.size() > 6) return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  out = std::stoi(s);
  return true;
}

}  // namespace

std::string GemmReport::text() const {
  const char* red = reduction == 0 ? "none"
                    : (reduction & cublaslt::CUBLASLT_REDUCTION_SCHEME_INPLACE) ? "in place (atomic)"
                    : (reduction & cublaslt::CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) ? "f32 partials"
                                                                                      : "output-type partials";
  return "cuBLASLt algo " + std::to_string(algo_id) + " tile " + std::to_string(tile_id) + " stages " +
         std::to_string(stages_id) + " split-K " + std::to_string(splitk) + " (reduction " + red + "), workspace " +
         std::to_string(workspace_bytes) + " B, candidate " + std::to_string(candidate) + " of " +
         std::to_string(candidates) + (deterministic ? ", deterministic" : ", NOT deterministic (atomic split-K)");
}

Policy Policy::from_env() {
  Policy p;
  const std::string atomics = env("IRON_GEMM_ATOMICS");
  if (atomics == "1")
    p.allow_atomics = true;
  else if (!atomics.empty() && atomics != "0")
    throw Error("IRON_GEMM_ATOMICS='" + atomics + "' is not 0 or 1 (1 allows cuBLASLt's atomic split-K reduction)");
  const std::string algo = env("IRON_GEMM_ALGO");
  if (!algo.empty() && !parse_index(algo, p.algo))
    throw Error("IRON_GEMM_ALGO='" + algo +
                "' is not a non-negative integer (the index of a candidate in cuBLASLt's heuristic list, 0 = its first choice)");
  return p;
}

std::string library() {
  const Lib& l = lib();
  return l.path + " (version " + std::to_string(l.version) + ")";
}

bool available(Context& ctx, std::string* why) {
  if (ctx.info().backend != Backend::Cuda) {
    if (why) *why = std::string("cuBLASLt runs on a CUDA Context; this one is ") + backend_name(ctx.info().backend);
    return false;
  }
  try {
    lib();
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
  return true;
}

std::string check_args(const GemmArgs& g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    return "m, n and k must be positive (m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) + ")";
  const int64_t kMax = int64_t(1) << 31;
  if (g.m >= kMax || g.n >= kMax || g.k >= kMax) return "m, n and k must be below 2^31";
  struct Side {
    const Matrix* x;
    const char* name;
    int64_t rows, cols;
  };
  for (const Side& s : {Side{&g.a, "a", g.m, g.k}, Side{&g.b, "b", g.k, g.n}, Side{&g.c, "c", g.m, g.n}}) {
    const std::string where = std::string("GemmArgs.") + s.name + " (" + std::to_string(s.rows) + " x " +
                              std::to_string(s.cols) + ", " + order_name(s.x->order) + ")";
    if (!s.x->buffer) return where + ": no buffer";
    const DType t = s.x->buffer.dtype();
    const bool is_c = s.x == &g.c;
    if (!is_c && t != DType::F16 && t != DType::BF16)
      return where + ": dtype " + dtype_name(t) + " (A and B must be f16 or bf16)";
    if (is_c && t != DType::F32 && t != DType::F16 && t != DType::BF16)
      return where + ": dtype " + dtype_name(t) + " (C must be f32, f16 or bf16)";
    const int64_t need = compact_ld(*s.x, s.rows, s.cols);
    const char* dim = s.x->order == Order::RowMajor ? "columns" : "rows";
    if (s.x->ld < 0) return where + ": ld " + std::to_string(s.x->ld) + " is negative";
    if (s.x->ld != 0 && s.x->ld < need)
      return where + ": ld " + std::to_string(s.x->ld) + " < " + std::to_string(need) + " " + dim +
             " (a row-major matrix needs ld >= its columns, a col-major one ld >= its rows)";
    if (s.x->ld >= (int64_t(1) << 40)) return where + ": ld " + std::to_string(s.x->ld) + " is beyond 2^40";
    const uint64_t ext = extent(*s.x, s.rows, s.cols);
    if (ext > s.x->buffer.count())
      return where + ": needs " + std::to_string(ext) + " elements with ld " + std::to_string(ld_of(*s.x, s.rows, s.cols)) +
             " but the buffer holds " + std::to_string(s.x->buffer.count());
  }
  if (g.a.buffer.dtype() != g.b.buffer.dtype())
    return std::string("GemmArgs.a is ") + dtype_name(g.a.buffer.dtype()) + " but GemmArgs.b is " +
           dtype_name(g.b.buffer.dtype()) + " (A and B must have one dtype)";
  // cuBLASLt's f32-compute GEMMs take a 16-bit C only of the inputs' own type (measured on the
  // H200: bf16 x bf16 -> f16 has no algorithm, CUBLAS_STATUS_NOT_SUPPORTED).
  const DType in = g.a.buffer.dtype(), out = g.c.buffer.dtype();
  if (out != DType::F32 && out != in)
    return std::string("GemmArgs.c is ") + dtype_name(out) + " but A and B are " + dtype_name(in) + " (C must be f32 or " +
           dtype_name(in) + ": cuBLASLt has no " + dtype_name(in) + " x " + dtype_name(in) + " -> " + dtype_name(out) + " GEMM)";
  return "";
}

GemmReport gemm(Context& ctx, const GemmArgs& args, const Stream& stream, const Policy& policy) {
  rt::Device& dev = rt::ContextAccess::device(ctx);
  rt::StreamImpl* s = rt::ContextAccess::stream(ctx, stream, "iron::blas::gemm");
  std::lock_guard lock(dev.library_mu);
  Bound b = bind(ctx, dev, args, policy);
  enqueue(ctx, dev, b, s);
  return b.cand->info;
}

Timing time_gemm(Context& ctx, const GemmArgs& args, const TimingOptions& opts, const Policy& policy, GemmReport* report) {
  rt::Device& dev = rt::ContextAccess::device(ctx);
  Bound b;
  {
    std::lock_guard lock(dev.library_mu);
    b = bind(ctx, dev, args, policy);
  }
  if (report) *report = b.cand->info;
  Timing t;
  t.samples_us = dev.time_native(
      [&](rt::StreamImpl* s) {
        std::lock_guard lock(dev.library_mu);
        enqueue(ctx, dev, b, s);
      },
      opts);
  t.compile_report = b.cand->info.text();
  return t;
}

}  // namespace iron::blas
