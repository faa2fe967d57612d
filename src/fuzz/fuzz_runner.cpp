// `iron fuzz`: cross-backend differential fuzzing. Each seed gives one random program and its
// launch (random_program.hpp, cross-backend options: no transcendentals); the program is
// optimized once, as every backend would, and run on every named backend; each device's output
// is compared bit for bit with the interpreter's at the device's own lane width (or, without
// the interpreter, with the first backend of the same lane width). GPU programs are compiled in
// batches (Context::precompile) so compile time stays a small part of the run.
#include "fuzz/fuzz.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "core/protocol.hpp"
#include "fuzz/random_program.hpp"
#include "iron/runtime.hpp"
#include "passes/pass.hpp"

namespace iron::fuzz {
namespace {

using nlohmann::json;
using Buffers = std::vector<std::vector<unsigned char>>;
using Clock = std::chrono::steady_clock;

void send(const json& msg) { std::cout << protocol::encode(msg) << "\n" << std::flush; }

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

constexpr uint64_t kDeviceRenewal = 512;

struct Config {
  std::vector<Backend> backends;
  uint64_t programs = 1000;
  uint64_t seed = 1;
  uint32_t lane_width = 0;  // 0: not given
  uint32_t exclude = 0;     // OpClass bits
  uint64_t batch = 128;     // programs compiled together on a GPU backend
  uint64_t reports = 20;    // mismatches reported with IR and source; the rest in one line
  bool reduce = true;       // cut the reported mismatches down (--no-reduce: off)
  bool signed_zeros_equal = false;  // --relax signed-zero
  bool guard_subnormals = false;  // guard even when no device flushes (tests the guard itself)
};

uint64_t parse_count(const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi) {
  size_t used = 0;
  unsigned long long n = 0;
  bool ok = !v.empty() && v[0] != '-';
  try {
    if (ok) n = std::stoull(v, &used, 10);
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok || used != v.size() || n < lo || n > hi)
    throw Error(flag + " takes a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not '" +
                v + "'");
  return n;
}

Config parse(int argc, char** argv) {
  Config c;
  std::string backends = "interp,vulkan";
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("option " + s + " needs a value");
      return argv[++i];
    };
    if (s == "--backends") backends = value();
    else if (s == "--programs") c.programs = parse_count(s, value(), 1, 100'000'000);
    else if (s == "--seed") c.seed = parse_count(s, value(), 0, ~0ull - 100'000'000);
    else if (s == "--lane-width") {
      c.lane_width = uint32_t(parse_count(s, value(), 1, 64));
      if (c.lane_width != 4 && c.lane_width != 8 && c.lane_width != 16 && c.lane_width != 32 && c.lane_width != 64)
        throw Error("--lane-width takes 4, 8, 16, 32 or 64, not " + std::to_string(c.lane_width));
    } else if (s == "--batch") c.batch = parse_count(s, value(), 1, 4096);
    else if (s == "--reports") c.reports = parse_count(s, value(), 0, 100'000'000);
    else if (s == "--no-reduce") c.reduce = false;
    else if (s == "--relax") {
      std::string what = value();
      if (what != "signed-zero") throw Error("--relax takes signed-zero, not '" + what + "'");
      c.signed_zeros_equal = true;
    }
    else if (s == "--guard-subnormals") c.guard_subnormals = true;
    else if (s == "--exclude") {
      std::string why;
      if (!parse_op_classes(value(), c.exclude, why)) throw Error("--exclude: " + why);
    } else throw Error("fuzz: unknown option '" + s + "'");
  }
  for (size_t pos = 0; pos <= backends.size();) {
    size_t end = backends.find(',', pos);
    if (end == std::string::npos) end = backends.size();
    std::string name = backends.substr(pos, end - pos);
    pos = end + 1;
    Backend b;
    if (!parse_backend(name, b)) throw Error("--backends: unknown backend '" + name + "' (use interp, vulkan, cuda)");
    if (std::find(c.backends.begin(), c.backends.end(), b) != c.backends.end())
      throw Error("--backends names " + name + " twice");
    c.backends.push_back(b);
  }
  if (c.backends.size() < 2) throw Error("--backends needs at least two backends to compare (e.g. interp,vulkan)");
  return c;
}

// One program of the run: the generated kernel (what a report prints and `iron opt` takes),
// its optimized form (what every backend runs) and its launch.
struct Program {
  uint64_t seed = 0;
  bool reduction = false;
  ir::Kernel kernel, optimized;
  RandomLaunch launch;
};

// What one backend produced for one program: the output buffers, or the error it raised.
struct Outcome {
  bool failed = false;
  std::string error;
  Buffers out;
};

// A backend as the run uses it: the interpreter at one lane width, or an open device.
struct Runner {
  Backend backend;
  std::string label;  // "interp@8", "vulkan"
  uint32_t lane_width = 32;
  std::unique_ptr<Context> ctx;  // null for the interpreter
  double compile_ms = 0, run_ms = 0;
};

Constexprs constexprs_of(const ir::Kernel& k, const RandomLaunch& L) {
  Constexprs c;
  size_t si = 0;
  for (const ir::Param& p : k.params) {
    if (p.kind != ir::ParamKind::Scalar) continue;
    const uint64_t bits = L.scalars[si++];
    switch (p.dtype) {
      case DType::I32: c[p.name] = int32_t(uint32_t(bits)); break;
      case DType::I64: c[p.name] = (long long)(int64_t(bits)); break;
      case DType::U64: c[p.name] = (unsigned long long)bits; break;
      case DType::F32: {
        float f;
        const uint32_t b = uint32_t(bits);
        std::memcpy(&f, &b, 4);
        c[p.name] = f;
        break;
      }
      default: c[p.name] = uint32_t(bits); break;
    }
  }
  return c;
}

Outcome run_on_device(Context& ctx, const Program& p) {
  Outcome r;
  try {
    const ir::Kernel& k = p.kernel;
    const RandomLaunch& L = p.launch;
    Bindings bindings;
    size_t bi = 0;
    for (const ir::Param& prm : k.params) {
      if (prm.kind != ir::ParamKind::Buffer) continue;
      DType t = ir::resolve(prm.dtype, L.dtype);
      const std::vector<unsigned char>& bytes = L.buffers[bi++];
      DeviceBuffer b = ctx.alloc(t, bytes.size() / dtype_size(t));
      ctx.upload(b, bytes.data(), bytes.size());
      bindings.emplace_back(prm.name, b);
    }
    ctx.dispatch_with_grid(k, L.dtype, bindings, constexprs_of(k, L), L.grid, L.threadgroup);
    for (auto& [name, b] : bindings) {
      r.out.emplace_back(b.bytes());
      ctx.download(b, r.out.back().data(), b.bytes());
    }
  } catch (const std::exception& e) {
    r.failed = true;
    r.error = e.what();
  }
  return r;
}

Outcome run_on_interp(const Program& p, uint32_t lane_width) {
  Outcome r;
  try {
    r.out = run_launch(p.optimized, p.launch, lane_width);
  } catch (const std::exception& e) {
    r.failed = true;
    r.error = e.what();
  }
  return r;
}

// "" when both agree: the same bytes in every element, or NaN in both (first_difference).
std::string compare(const Program& p, const Outcome& want, const Outcome& got, const Runner& ref, const Runner& dev,
                    bool signed_zeros_equal) {
  if (want.failed || got.failed) {
    if (want.failed && got.failed && want.error == got.error) return "";
    std::string s;
    if (want.failed) s += ref.label + " failed: " + want.error;
    if (got.failed) s += std::string(s.empty() ? "" : "; ") + dev.label + " failed: " + got.error;
    return s;
  }
  return first_difference(p.kernel, p.launch.dtype, want.out, got.out, 0, 1, signed_zeros_equal);
}

// Fault injection for the engine's own test (CTest fuzz.catches_an_injected_difference):
// IRON_FUZZ_FLIP_SEED=S flips the lowest bit of out_i[0] in every device's result for seed S
// (reductions of it included), which the comparison must report. Like IRON_RUNNER_CRASH_ON,
// never set outside that test.
uint64_t flip_seed() {
  static const uint64_t seed = [] {
    const char* v = std::getenv("IRON_FUZZ_FLIP_SEED");
    return v && *v ? uint64_t(std::strtoull(v, nullptr, 10)) : ~0ull;
  }();
  return seed;
}

void flip_one_bit(const Program& p, Outcome& o) {
  if (o.failed) return;
  size_t bi = 0;
  for (const ir::Param& prm : p.kernel.params) {
    if (prm.kind != ir::ParamKind::Buffer) continue;
    if (prm.name == "out_i" && bi < o.out.size() && !o.out[bi].empty()) o.out[bi][0] ^= 1;
    ++bi;
  }
}

Outcome run_on(Runner& r, const Program& p) {
  if (!r.ctx) return run_on_interp(p, r.lane_width);
  Outcome o = run_on_device(*r.ctx, p);
  if (p.seed == flip_seed()) flip_one_bit(p, o);
  return o;
}

// A mismatching program cut down to what still shows the mismatch: stores, variable stores and
// whole if / for statements are removed in chunks that halve in size (a greedy delta
// debugging), keeping a removal when both backends still run cleanly and still differ. Loads,
// arithmetic and threadgroup stores are never removed directly (a value's uses would dangle, and
// a missing threadgroup store would read memory nothing wrote); the pipeline's dead-code passes
// drop what no remaining store needs.
struct Reduction {
  ir::Kernel kernel, optimized;
  std::string difference;
  std::string ops;  // the ops of the reduced, optimized program
  int attempts = 0;
};

constexpr int kMaxReductionAttempts = 160;
// Wall-clock budgets: a reduction recompiles the program at every attempt (an NVRTC compile is
// about half a second), so one reduction stops after 20 s and reductions stop after 180 s a run.
constexpr double kReductionSeconds = 20, kReductionRunSeconds = 180;

ir::Kernel without(const ir::Kernel& k, const std::vector<uint8_t>& removed) {
  ir::Kernel c = k;
  for (ir::Block& b : c.blocks) {
    std::vector<ir::Id> kept;
    for (ir::Id id : b.insts)
      if (!removed[id]) kept.push_back(id);
    b.insts = std::move(kept);
  }
  return ir::parse(ir::print(c));  // compact: what no block reaches is gone
}

Reduction reduce(const Program& p, Runner& ref, Runner& dev, const std::string& first_why, bool signed_zeros_equal) {
  Reduction red{p.kernel, p.optimized, first_why, "", 0};
  const auto start = Clock::now();
  auto out_of_time = [&] { return red.attempts >= kMaxReductionAttempts || ms_since(start) > kReductionSeconds * 1000; };
  std::vector<ir::Id> cands;
  ir::walk(p.kernel, [&](ir::Id id) {
    ir::Op o = p.kernel.insts[id].op;
    // Atomics are statements too: their returned values are never used (random_program.cpp).
    if (o == ir::Op::Store || o == ir::Op::VarStore || o == ir::Op::If || o == ir::Op::For || ir::is_atomic(o) ||
        o == ir::Op::AtomicAddPair)
      cands.push_back(id);
  });
  std::vector<uint8_t> removed(p.kernel.insts.size(), 0);
  size_t chunk = std::max<size_t>(cands.size() / 2, 1);
  while (!cands.empty() && !out_of_time()) {
    bool progress = false;
    for (size_t i = 0; i < cands.size() && !out_of_time();) {
      const size_t end = std::min(cands.size(), i + chunk);
      std::vector<uint8_t> trial = removed;
      for (size_t j = i; j < end; ++j) trial[cands[j]] = 1;
      ++red.attempts;
      Program c;
      c.seed = p.seed;
      c.launch = p.launch;
      std::string why;
      try {
        c.kernel = without(p.kernel, trial);
        c.optimized = passes::optimize(c.kernel);
        Outcome want = run_on(ref, c), got = run_on(dev, c);
        if (!want.failed && !got.failed)
          why = first_difference(c.kernel, c.launch.dtype, want.out, got.out, 0, 1, signed_zeros_equal);
      } catch (const std::exception&) {
        why.clear();
      }
      if (why.empty()) {
        i = end;
        continue;
      }
      removed = std::move(trial);
      cands.erase(cands.begin() + long(i), cands.begin() + long(end));
      red.kernel = std::move(c.kernel);
      red.optimized = std::move(c.optimized);
      red.difference = why;
      progress = true;
    }
    if (!progress) {
      if (chunk == 1) break;
      chunk = std::max<size_t>(chunk / 2, 1);
    }
    chunk = std::min(chunk, std::max<size_t>(cands.size(), 1));
  }
  std::vector<std::string> ops;
  ir::walk(red.optimized, [&](ir::Id id) {
    const ir::Inst& in = red.optimized.insts[id];
    std::string name = std::string(ir::mnemonic(in.op)) + (in.type.elem() == DType::Void ? "" : std::string(":") + dtype_name(in.type.elem()));
    if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
  });
  for (const std::string& o : ops) red.ops += (red.ops.empty() ? "" : " ") + o;
  return red;
}

std::string backend_list(const std::vector<Backend>& bs) {
  std::string s;
  for (Backend b : bs) {
    if (!s.empty()) s += ',';
    s += backend_name(b);
  }
  return s;
}

}  // namespace

int fuzz_main(int argc, char** argv) {
  Config cfg;
  try {
    cfg = parse(argc, argv);
  } catch (const std::exception& e) {
    send({{"type", "hello"}, {"runner_version", "0.1.0"}});
    send({{"type", "error"}, {"message", e.what()}});
    return 2;
  }
  send({{"type", "hello"}, {"runner_version", "0.1.0"}});
  const auto start = Clock::now();

  // Open the devices; each names its lane width, and the interpreter runs at every one of them.
  std::vector<std::unique_ptr<Runner>> devices;
  bool with_interp = false;
  bool f16 = true, bf16 = true;
  std::string flushing;  // the devices that flush f32 subnormals ("vulkan")
  try {
    for (Backend b : cfg.backends) {
      if (b == Backend::Interp) {
        with_interp = true;
        continue;
      }
      auto r = std::make_unique<Runner>();
      r->backend = b;
      r->label = backend_name(b);
      try {
        r->ctx = Context::create(b);
      } catch (const std::exception& e) {
        throw Error(std::string("cannot open ") + backend_name(b) + ": " + e.what());
      }
      r->ctx->set_disk_cache_dir("");  // thousands of one-off programs: keep them out of the cache
      const DeviceInfo& info = r->ctx->info();
      r->lane_width = info.lane_width;
      f16 = f16 && info.f16;
      bf16 = bf16 && info.bf16;
      if (info.f32_denormals_flushed) flushing += (flushing.empty() ? "" : ",") + std::string(backend_name(b));
      if (cfg.lane_width && cfg.lane_width != info.lane_width)
        throw Error("--lane-width " + std::to_string(cfg.lane_width) + " differs from the lane width " +
                    std::to_string(info.lane_width) + " of " + info.name + " (" + backend_name(b) +
                    "): the interpreter must run at the device's lane width");
      send({{"type", "device"}, {"backend", backend_name(b)}, {"available", true}, {"name", info.name},
            {"driver", info.driver}, {"arch", info.arch}, {"lane_width", info.lane_width},
            {"max_threads_per_group", info.max_threads_per_group}, {"shared_memory_bytes", info.shared_memory_bytes},
            {"memory_bytes", info.memory_bytes}, {"f16", info.f16}, {"bf16", info.bf16},
            {"f32_denormals", info.f32_denormals_flushed ? "flushed" : "preserved"},
            {"float_controls", info.float_controls}});
      devices.push_back(std::move(r));
    }
    if (!f16) throw Error("a device without f16 storage cannot run the fuzz programs (their in_h buffer is f16)");
  } catch (const std::exception& e) {
    send({{"type", "error"}, {"message", e.what()}});
    return 2;
  }

  // The comparisons: each device against the interpreter at its lane width, or without the
  // interpreter against the first device of the same lane width.
  std::vector<std::unique_ptr<Runner>> interps;
  auto interp_at = [&](uint32_t w) -> Runner* {
    for (auto& r : interps)
      if (r->lane_width == w) return r.get();
    auto r = std::make_unique<Runner>();
    r->backend = Backend::Interp;
    r->lane_width = w;
    r->label = "interp@" + std::to_string(w);
    interps.push_back(std::move(r));
    return interps.back().get();
  };
  struct Pair {
    Runner* ref;
    Runner* dev;
    uint64_t mismatches = 0;
  };
  std::vector<Pair> pairs;
  if (devices.empty()) {  // interp only was rejected by parse(); unreachable, kept as a guard
    send({{"type", "error"}, {"message", "--backends needs a GPU backend (vulkan or cuda) next to interp"}});
    return 2;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    Runner* d = devices[i].get();
    if (with_interp) {
      pairs.push_back({interp_at(d->lane_width), d});
      continue;
    }
    if (i == 0) continue;
    if (devices[0]->lane_width != d->lane_width) {
      send({{"type", "error"},
            {"message", std::string(backend_name(d->backend)) + " has lane width " + std::to_string(d->lane_width) +
                            " and " + backend_name(devices[0]->backend) + " " +
                            std::to_string(devices[0]->lane_width) +
                            ": their lane reductions differ by design; add interp to compare each with it"}});
      return 2;
    }
    pairs.push_back({devices[0].get(), d});
  }

  RandomProgramOptions opts;
  opts.cross_backend = true;
  opts.exclude = cfg.exclude;
  // mbarriers exist on CUDA sm_90+ only (docs/semantics.md): left out when any other device runs.
  for (const auto& d : devices) {
    const std::string arch = d->ctx ? d->ctx->info().arch : std::string();
    const bool sm90 = d->backend == Backend::Cuda && arch.size() >= 5 && arch.rfind("sm_", 0) == 0 &&
                      std::atoi(arch.c_str() + 3) >= 90;
    if (!sm90) opts.exclude |= kMbar;
  }
  // A device that flushes f32 subnormals cannot compute what docs/semantics.md defines for
  // them; the programs then guard every float value so that none ever arises, and the summary
  // says so (docs/testing.md#cross-backend-fuzzing).
  opts.flush_guard = cfg.guard_subnormals || !flushing.empty();
  std::string guarded;
  if (!flushing.empty()) guarded = flushing + " flushes f32 subnormals: programs guard them";
  else if (opts.flush_guard) guarded = "--guard-subnormals: programs guard f32 subnormals";
  std::vector<DType> dtypes = {DType::F32};
  if (!(cfg.exclude & kF16)) dtypes.push_back(DType::F16);
  if (bf16) dtypes.push_back(DType::BF16);

  std::string repro = "iron fuzz --backends " + backend_list(cfg.backends);
  if (cfg.exclude) repro += " --exclude " + op_class_names(cfg.exclude);
  if (cfg.lane_width) repro += " --lane-width " + std::to_string(cfg.lane_width);
  if (cfg.signed_zeros_equal) repro += " --relax signed-zero";
  if (cfg.guard_subnormals) repro += " --guard-subnormals";

  uint64_t mismatching_programs = 0, reported = 0, skipped = 0, next_seed = cfg.seed;
  double generate_ms = 0, reduce_ms = 0;
  std::vector<Runner*> all;
  for (auto& r : interps) all.push_back(r.get());
  for (auto& r : devices) all.push_back(r.get());

  for (uint64_t first = 0; first < cfg.programs; first += cfg.batch) {
    const uint64_t n = std::min<uint64_t>(cfg.batch, cfg.programs - first);
    auto t0 = Clock::now();
    std::vector<Program> progs(n);
    std::vector<std::string> gen_error(n);
    for (uint64_t i = 0; i < n;) {
      Program& p = progs[i];
      p.seed = next_seed++;
      p.reduction = reduction_seed(p.seed);
      p.kernel = random_program(p.seed, p.reduction, opts);
      p.launch = random_launch(p.kernel, p.seed, opts, dtypes);
      gen_error[i].clear();
      try {
        p.optimized = passes::optimize(p.kernel);
        // The pipeline can make what the generator left out (const_fold a float zero,
        // fma_fusion an fma): such a program is skipped, and the next seed takes its place.
        if (!excluded_op_in(p.optimized, cfg.exclude).empty()) {
          ++skipped;
          continue;
        }
      } catch (const std::exception& e) {
        gen_error[i] = std::string("the pipeline fails on it: ") + e.what();
      }
      ++i;
    }
    generate_ms += ms_since(t0);

    // outcome[r][i]: runner r (index into `all`), program i.
    std::vector<std::vector<Outcome>> outcome(all.size(), std::vector<Outcome>(n));
    for (size_t ri = 0; ri < all.size(); ++ri) {
      Runner& r = *all[ri];
      if (r.ctx) {
        auto tc = Clock::now();
        std::vector<const ir::Kernel*> ks;
        std::vector<Instantiation> ds;
        std::vector<Dim3> tgs;
        for (uint64_t i = 0; i < n; ++i)
          if (gen_error[i].empty()) {
            ks.push_back(&progs[i].kernel);
            ds.push_back(progs[i].launch.dtype);
            tgs.push_back(progs[i].launch.threadgroup);
          }
        try {
          r.ctx->precompile(ks, ds, tgs);
        } catch (const std::exception&) {
          // e.g. a module the driver refuses: each program's dispatch compiles it alone and
          // reports its own error as that program's result
        }
        r.compile_ms += ms_since(tc);
      }
      auto tr = Clock::now();
      for (uint64_t i = 0; i < n; ++i) {
        if (!gen_error[i].empty()) continue;
        outcome[ri][i] = run_on(r, progs[i]);
      }
      r.run_ms += ms_since(tr);
    }

    for (uint64_t i = 0; i < n; ++i) {
      const Program& p = progs[i];
      bool bad = false;
      for (Pair& pair : pairs) {
        size_t ri = std::find(all.begin(), all.end(), pair.ref) - all.begin();
        size_t di = std::find(all.begin(), all.end(), pair.dev) - all.begin();
        std::string why = gen_error[i].empty() ? compare(p, outcome[ri][i], outcome[di][i], *pair.ref, *pair.dev, cfg.signed_zeros_equal)
                                               : gen_error[i];
        if (why.empty()) continue;
        ++pair.mismatches;
        bad = true;
        json m = {{"type", "fuzz_mismatch"},
                  {"seed", p.seed},
                  {"mode", mode_name(p.kernel.mode)},
                  {"reference", pair.ref->label},
                  {"backend", pair.dev->label},
                  {"lane_width", pair.dev->lane_width},
                  {"launch", p.launch.describe()},
                  {"difference", why},
                  {"reproduce", repro + " --seed " + std::to_string(p.seed) + " --programs 1"}};
        if (reported < cfg.reports) {
          codegen::Target target = codegen::Target::Glsl;  // the registry's, for a device backend
          codegen::target_of_backend(backend_name(pair.dev->backend), target);
          m["ir"] = ir::print(p.kernel);
          codegen::Emitted e = codegen::emit(p.optimized, p.launch.dtype, target);
          m["source"] = e.ok() ? e.source : e.diags.render(p.optimized);
          if (gen_error[i].empty() && cfg.reduce && reduce_ms < kReductionRunSeconds * 1000) {
            auto tr = Clock::now();
            Reduction red = reduce(p, *pair.ref, *pair.dev, why, cfg.signed_zeros_equal);
            reduce_ms += ms_since(tr);
            if (red.kernel.insts.size() < p.kernel.insts.size()) {
              codegen::Emitted re = codegen::emit(red.optimized, p.launch.dtype, target);
              m["reduced"] = {{"difference", red.difference},
                              {"ops", red.ops},
                              {"attempts", red.attempts},
                              {"ir", ir::print(red.kernel)},
                              {"optimized_ir", ir::print(red.optimized)},
                              {"source", re.ok() ? re.source : re.diags.render(red.optimized)}};
            }
          }
        }
        ++reported;
        send(m);
      }
      mismatching_programs += bad;
    }
    for (Runner* r : all) {
      if (!r->ctx) continue;
      r->ctx->clear_pipeline_cache();  // this batch's programs never run again
      // A fresh device every kDeviceRenewal programs: lavapipe's dispatches slow down about 50
      // times once one VkDevice has created about a thousand pipelines (measured 2026-11-30).
      if ((first + n) / kDeviceRenewal != first / kDeviceRenewal) {
        r->ctx = Context::create(r->backend);
        r->ctx->set_disk_cache_dir("");
      }
    }
  }

  json pair_list = json::array();
  for (const Pair& p : pairs)
    pair_list.push_back({{"reference", p.ref->label}, {"backend", p.dev->label}, {"lane_width", p.dev->lane_width},
                         {"mismatches", p.mismatches}});
  json timing = {{"generate_and_optimize_ms", generate_ms}, {"reduce_ms", reduce_ms}};
  for (Runner* r : all) {
    timing[r->label + "_run_ms"] = r->run_ms;
    if (r->ctx) timing[r->label + "_compile_ms"] = r->compile_ms;
  }
  send({{"type", "fuzz_summary"},
        {"programs", cfg.programs},
        {"mismatches", mismatching_programs},
        {"first_seed", cfg.seed},
        {"last_seed", next_seed - 1},
        {"skipped", skipped},
        {"backends", backend_list(cfg.backends)},
        {"excluded", op_class_names(cfg.exclude)},
        {"relaxed", cfg.signed_zeros_equal ? "signed-zero" : ""},
        {"subnormals", guarded},
        {"pairs", pair_list},
        {"timing", timing},
        {"seconds", ms_since(start) / 1000}});
  return mismatching_programs == 0 ? 0 : 1;
}

}  // namespace iron::fuzz
