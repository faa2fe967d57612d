// iron_collective_bench: NCCL all-reduce and all-gather across the CUDA devices of this machine,
// on Iron buffers and Iron streams (include/iron/collective.hpp). First a check: every GPU runs
// an Iron kernel, and its output is all-reduced (sum, then max in place) and all-gathered; the
// results are compared exactly with the host's. Then bus bandwidth over a range of sizes, as
// nccl-tests defines it: algbw = bytes / time, busbw = algbw * 2(n-1)/n for all-reduce and
// algbw * (n-1)/n for all-gather (bytes: the buffer's size; for all-gather, the gathered result).
//
//   iron_collective_bench [--devices N] [--sizes B,B,...] [--iters N] [--warmup N] [--json FILE]
//
// Exit status: 0 measured, 1 a result was wrong or NCCL failed, 2 bad usage, 3 cannot run here
// ("NCCL not available: ..." or "needs two GPUs: ..." on the first line of output).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/ir.hpp"
#include "iron/collective.hpp"
#include "iron/dsl.hpp"
#include "iron/registry.hpp"
#include "iron/runtime.hpp"

using namespace iron;

namespace {

// out[i] = a[i] + r: rank r's contribution, whole numbers (exact in f32 for the sizes checked).
void contribution_body() {
  using namespace iron::dsl;
  Expr n = constexpr_("n", u32);
  Expr r = constexpr_("r", f32);
  Buffer a = input("a", f32, {n});
  Buffer out = output("out", f32, {n});
  Expr i = thread_id(0);
  if_(i < n, [&] { out[i] = a[i] + r; });
}

const ir::Kernel& contribution_kernel() {
  static const ir::Kernel k =
      trace_kernel(KernelDecl{"collective_contribution", &contribution_body, Mode::Elementwise, {}, __FILE__, __LINE__});
  return k;
}

struct Options {
  int devices = 0;  // 0: every CUDA device
  std::vector<uint64_t> sizes;
  int iters = 20, warmup = 5;
  std::string json;
};

bool parse_u64_list(const std::string& s, std::vector<uint64_t>& out) {
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    const std::string item = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v % 4 != 0) return false;
    out.push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return !out.empty();
}

int usage(const std::string& why) {
  std::fprintf(stderr,
               "iron_collective_bench: %s\nusage: iron_collective_bench [--devices N] [--sizes B,B,...] [--iters N] "
               "[--warmup N] [--json FILE]\n  sizes in bytes, multiples of 4 (f32 elements)\n",
               why.c_str());
  return 2;
}

struct Row {
  std::string op;
  uint64_t bytes;
  double us, algbw, busbw;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& v) {
      if (i + 1 >= argc) return false;
      v = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--devices" && value(v)) o.devices = std::atoi(v.c_str());
    else if (a == "--sizes" && value(v)) {
      if (!parse_u64_list(v, o.sizes)) return usage("--sizes '" + v + "' is not a list of positive multiples of 4");
    } else if (a == "--iters" && value(v)) o.iters = std::atoi(v.c_str());
    else if (a == "--warmup" && value(v)) o.warmup = std::atoi(v.c_str());
    else if (a == "--json" && value(v)) o.json = v;
    else return usage("unknown or incomplete argument '" + a + "'");
  }
  if (o.iters < 1 || o.warmup < 0) return usage("--iters must be >= 1 and --warmup >= 0");
  if (o.devices == 1 || o.devices < 0) return usage("--devices must be at least 2");
  if (o.sizes.empty())
    for (uint64_t b = 8 << 10; b <= (uint64_t(256) << 20); b *= 4) o.sizes.push_back(b);

  const NcclLibrary& lib = nccl_library();
  if (!lib.available) {
    std::printf("collective: %s\n", lib.why.c_str());
    return 3;
  }
  std::string why;
  const std::vector<DeviceInfo> gpus = list_devices(Backend::Cuda, &why);
  if (gpus.size() < 2 || (o.devices && int(gpus.size()) < o.devices)) {
    std::printf("collective: needs two GPUs: %zu CUDA device(s)%s\n", gpus.size(),
                why.empty() ? "" : (" (" + why + ")").c_str());
    std::printf("collective: NCCL %s at %s\n", lib.version.c_str(), lib.path.c_str());
    return 3;
  }
  const int n = o.devices ? o.devices : int(gpus.size());
  std::printf("collective: NCCL %s at %s; %d CUDA devices:", lib.version.c_str(), lib.path.c_str(), n);
  for (int r = 0; r < n; ++r) std::printf(" [%d] %s", r, gpus[size_t(r)].name.c_str());
  std::printf("\n");

  try {
    std::vector<std::unique_ptr<Context>> owned;
    std::vector<Context*> ctxs;
    std::vector<Stream> streams;
    for (int r = 0; r < n; ++r) {
      owned.push_back(Context::create(Backend::Cuda, r));
      ctxs.push_back(owned.back().get());
      streams.push_back(owned.back()->create_stream());
    }
    std::unique_ptr<Collective> coll = Collective::create(ctxs);

    // The check: a kernel's output on every rank, reduced and gathered.
    const uint32_t count = 1u << 20;
    std::vector<float> a(count);
    for (uint32_t i = 0; i < count; ++i) a[i] = float(i % 1000);
    const size_t ranks = size_t(n);
    std::vector<DeviceBuffer> out(ranks), sum(ranks), gathered(ranks);
    for (int r = 0; r < n; ++r) {
      Context& c = *ctxs[size_t(r)];
      DeviceBuffer in = c.alloc(DType::F32, count);
      c.upload(in, a.data(), count * 4, streams[size_t(r)]);
      out[size_t(r)] = c.alloc(DType::F32, count);
      sum[size_t(r)] = c.alloc(DType::F32, count);
      gathered[size_t(r)] = c.alloc(DType::F32, uint64_t(count) * uint64_t(n));
      c.dispatch_with_grid(contribution_kernel(), DType::F32, {{"a", in}, {"out", out[size_t(r)]}},
                           {{"n", count}, {"r", float(r + 1)}}, {count / 256, 1, 1}, {256, 1, 1}, streams[size_t(r)]);
    }
    coll->all_reduce(out, sum, ReduceOp::Sum, streams);
    coll->all_gather(out, gathered, streams);
    coll->all_reduce(out, out, ReduceOp::Max, streams);  // in place, after the gather read it
    const float rank_sum = float(n * (n + 1) / 2);
    size_t bad = 0;
    for (int r = 0; r < n && bad == 0; ++r) {
      std::vector<float> s(count), g(size_t(count) * size_t(n)), m(count);
      ctxs[size_t(r)]->download(sum[size_t(r)], s.data(), s.size() * 4);
      ctxs[size_t(r)]->download(gathered[size_t(r)], g.data(), g.size() * 4);
      ctxs[size_t(r)]->download(out[size_t(r)], m.data(), m.size() * 4);
      for (uint32_t i = 0; i < count && bad == 0; ++i) {
        if (s[i] != float(n) * a[i] + rank_sum) {
          std::printf("collective: all_reduce(sum) wrong on rank %d at %u: %g, want %g\n", r, i, double(s[i]),
                      double(float(n) * a[i] + rank_sum));
          ++bad;
        }
        if (m[i] != a[i] + float(n)) {
          std::printf("collective: all_reduce(max, in place) wrong on rank %d at %u: %g, want %g\n", r, i,
                      double(m[i]), double(a[i] + float(n)));
          ++bad;
        }
        for (int q = 0; q < n && bad == 0; ++q)
          if (g[size_t(q) * count + i] != a[i] + float(q + 1)) {
            std::printf("collective: all_gather wrong on rank %d, part %d, at %u: %g, want %g\n", r, q, i,
                        double(g[size_t(q) * count + i]), double(a[i] + float(q + 1)));
            ++bad;
          }
      }
    }
    if (bad) return 1;
    std::printf("collective: check ok: an Iron kernel's output on %d GPUs, all_reduce(sum), all_reduce(max) in place "
                "and all_gather, %u f32 each, exact\n",
                n, count);

    // Bus bandwidth.
    std::vector<Row> rows;
    std::printf("%-10s %14s %12s %12s %12s\n", "op", "bytes", "time_us", "algbw_GB/s", "busbw_GB/s");
    for (const char* op : {"all_reduce", "all_gather"}) {
      const bool reduce = std::string(op) == "all_reduce";
      for (uint64_t bytes : o.sizes) {
        // all_gather: `bytes` is the gathered result, so each rank sends bytes / n.
        const uint64_t send_elems = reduce ? bytes / 4 : bytes / 4 / uint64_t(n);
        if (send_elems == 0) continue;
        std::vector<DeviceBuffer> send, recv;
        for (int r = 0; r < n; ++r) {
          send.push_back(ctxs[size_t(r)]->alloc(DType::F32, send_elems));
          recv.push_back(ctxs[size_t(r)]->alloc(DType::F32, reduce ? send_elems : send_elems * uint64_t(n)));
        }
        auto once = [&] {
          if (reduce) coll->all_reduce(send, recv, ReduceOp::Sum, streams);
          else coll->all_gather(send, recv, streams);
        };
        auto wait_all = [&] {
          for (int r = 0; r < n; ++r) ctxs[size_t(r)]->synchronize(streams[size_t(r)]);
        };
        for (int w = 0; w < o.warmup; ++w) once();
        wait_all();
        const auto t0 = std::chrono::steady_clock::now();
        for (int it = 0; it < o.iters; ++it) once();
        wait_all();
        const auto t1 = std::chrono::steady_clock::now();
        const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / o.iters;
        const uint64_t moved = reduce ? send_elems * 4 : send_elems * 4 * uint64_t(n);
        const double algbw = double(moved) / (us * 1e-6) / 1e9;
        const double factor = reduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
        rows.push_back({op, moved, us, algbw, algbw * factor});
        std::printf("%-10s %14llu %12.2f %12.2f %12.2f\n", op, (unsigned long long)moved, us, algbw, algbw * factor);
      }
    }
    if (!o.json.empty()) {
      std::ofstream f(o.json);
      f << "{\"benchmark\": \"iron_collective_bench\", \"nccl\": \"" << lib.version << "\", \"devices\": " << n
        << ", \"device\": \"" << gpus[0].name << "\", \"iters\": " << o.iters << ", \"rows\": [";
      for (size_t i = 0; i < rows.size(); ++i)
        f << (i ? ", " : "") << "{\"op\": \"" << rows[i].op << "\", \"bytes\": " << rows[i].bytes
          << ", \"time_us\": " << rows[i].us << ", \"algbw_GBps\": " << rows[i].algbw
          << ", \"busbw_GBps\": " << rows[i].busbw << "}";
      f << "]}\n";
      if (!f) {
        std::printf("collective: cannot write %s\n", o.json.c_str());
        return 1;
      }
    }
  } catch (const Error& e) {
    std::printf("collective: %s\n", e.what());
    return 1;
  }
  return 0;
}
