// Differential testing of the optimization pipeline on the kernel corpus: every registered test
// case, at every declared dtype, runs through the SIMT interpreter as traced (after kernel_inline
// only, the baseline), after every pipeline prefix (a case's later dtypes and lane width 8: the
// last exact prefix, walking every prefix only when it or the full pipeline differs) and after
// the full pipeline. Prefixes before fma_fusion must reproduce the baseline bit for bit; from
// fma_fusion on (one rounding instead of two, by design) within the case's tolerance. The full pipeline must also pass the case's oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <iron/iron.hpp>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "passes/interpreter.hpp"
#include "passes/pass.hpp"

using namespace iron;

namespace {

using Bytes = std::vector<unsigned char>;

// A case made concrete: the kernel's buffers in parameter order (inputs encoded into the
// parameter's dtype, outputs all-ones bytes like run_test_case), the scalars as register bits.
struct Case {
  const TestDecl* decl = nullptr;
  Instantiation dtype = DType::F32;
  double tol = 0;
  TestSetup setup{DType::F32};
  std::vector<Bytes> buffers;           // one per buffer parameter
  std::vector<uint64_t> scalars;        // one per scalar parameter
  std::vector<std::string> buffer_name; // per buffer parameter
  std::vector<DType> buffer_type;       // concrete storage dtype, per buffer parameter
  std::vector<int> output;              // indices into buffers of the case's outputs
  Tensors rounded;                      // the inputs as the kernel sees them, for the oracle
  std::string label;                    // "kernel/case (dtype)"
  std::string kernel;                   // the kernel the case runs (a family case: its plan's one step)
  Dim3 grid{0, 0, 0}, threadgroup{0, 0, 0};
};

// The kernel, scalars and geometry a case runs: its own, or for a case of a family the plan its
// selector makes for the interpreter. A plan of several steps (scratch between kernels) or with
// tensor maps is outside this test: "" with `skip` set; the harness runs it (and each step's kernel keeps
// direct cases of its own).
std::string resolve_case(const TestDecl* decl, const TestSetup& setup, Instantiation dtype, Case& c, bool& skip) {
  skip = false;
  c.kernel = decl->kernel;
  c.grid = setup.grid_size();
  c.threadgroup = setup.threadgroup();
  if (!setup.has_call()) return "";
  static const DeviceInfo interp = [] {
    std::vector<DeviceInfo> d = list_devices(Backend::Interp);
    return d.empty() ? DeviceInfo{} : d.front();
  }();
  LaunchPlan plan;
  try {
    plan = plan_launch(decl->kernel, Call{dtype, setup.call_args()}, interp);
  } catch (const Error& e) {
    return e.what();
  }
  // (A step with tensor maps, built over the call's buffers at dispatch, is the harness's too.)
  if (plan.steps.size() != 1 || !plan.scratch.empty() || !plan.steps[0].bind.empty() || !plan.steps[0].maps.empty()) {
    skip = true;
    return "";
  }
  c.kernel = plan.steps[0].kernel;
  c.grid = plan.steps[0].grid;
  c.threadgroup = plan.steps[0].threadgroup;
  c.setup.constexprs(plan.steps[0].constexprs);
  return "";
}

// Builds the case's launch; returns "" or what is wrong with the case.
// `skip` is set for a family case whose plan has several steps.
std::string make_case(const TestDecl* decl, const DtypeTolerance& dt, Case& c, bool* skip = nullptr) {
  c.decl = decl;
  c.dtype = dt.dtype;
  c.tol = dt.tol;
  c.label = std::string(decl->kernel) + "/" + decl->name + " (" + instantiation_name(dt.dtype) + ")";
  c.setup = decl->body(dt.dtype.t, dt.dtype.w);
  if (!c.setup.oracle_fn()) return "the case has no oracle";
  bool multi = false;
  if (std::string bad = resolve_case(decl, c.setup, dt.dtype, c, multi); !bad.empty()) return bad;
  if (skip) *skip = multi;
  if (multi) return "";
  const ir::Kernel& k = kernel_ir(c.kernel);
  for (const ir::Param& p : k.params) {
    if (p.kind == ir::ParamKind::Scalar) {
      auto it = c.setup.scalars().find(p.name);
      uint64_t bits = 0;
      std::string why;
      if (it == c.setup.scalars().end()) return "constexpr '" + p.name + "' is not set";
      if (!scalar_bits(p.dtype, it->second, bits, why)) return "constexpr '" + p.name + "' " + why;
      c.scalars.push_back(bits);
      continue;
    }
    DType t = ir::resolve(p.dtype, dt.dtype);
    c.buffer_name.push_back(p.name);
    c.buffer_type.push_back(t);
    auto in = c.setup.inputs().find(p.name);
    if (in != c.setup.inputs().end()) {
      Bytes bytes(in->second.size() * dtype_size(t));
      num::encode(t, in->second.data(), bytes.data(), in->second.size());
      std::vector<double> back(in->second.size());
      num::decode(t, bytes.data(), back.data(), back.size());
      c.rounded[p.name] = std::move(back);
      c.buffers.push_back(std::move(bytes));
      continue;
    }
    auto out = std::find_if(c.setup.outputs().begin(), c.setup.outputs().end(),
                            [&](const auto& o) { return o.first == p.name; });
    if (out == c.setup.outputs().end()) return "buffer '" + p.name + "' is neither an input nor an output";
    c.output.push_back(int(c.buffers.size()));
    c.buffers.push_back(Bytes(out->second * dtype_size(t), 0xff));
  }
  return "";
}

// Runs one variant of the kernel; returns the output buffers (in c.output order).
std::vector<Bytes> execute(const ir::Kernel& k, const Case& c, uint32_t lane_width) {
  ir::Diagnostics d;
  if (!ir::verify(k, d)) throw Error("does not verify:\n" + d.render(k));
  std::vector<Bytes> bufs = c.buffers;
  std::vector<interp::BufferArg> args;
  for (Bytes& b : bufs) args.push_back({b.data(), b.size()});
  interp::Options o;
  o.lane_width = lane_width;
  interp::run(k, c.dtype, args, c.scalars, c.grid, c.threadgroup, o);
  std::vector<Bytes> out;
  for (int i : c.output) out.push_back(std::move(bufs[size_t(i)]));
  return out;
}

std::string text(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// "" when `got` matches the baseline `want`: bit-exact (NaN == NaN) when exact, otherwise
// |got - want| <= tol * max(floor, |want|) on decoded values (NaN only matches NaN).
std::string compare(const Case& c, const std::vector<Bytes>& want, const std::vector<Bytes>& got, bool exact) {
  for (size_t o = 0; o < c.output.size(); ++o) {
    DType t = c.buffer_type[size_t(c.output[o])];
    // Two results that are each within the case's tolerance of the exact value may differ by twice it.
    const Tolerance rule = case_tolerance(c.setup, c.tol, t);
    size_t es = dtype_size(t), n = want[o].size() / es;
    std::vector<double> w(n), g(n);
    num::decode(t, want[o].data(), w.data(), n);
    num::decode(t, got[o].data(), g.data(), n);
    for (size_t i = 0; i < n; ++i) {
      bool same;
      if (is_float(t) && (std::isnan(w[i]) || std::isnan(g[i]))) same = std::isnan(w[i]) && std::isnan(g[i]);
      else if (exact) same = std::memcmp(want[o].data() + i * es, got[o].data() + i * es, es) == 0;
      else same = element_error(rule, t, g[i], w[i], c.setup.floor()) <= 2 * rule.value;
      if (!same)
        return "output '" + c.buffer_name[size_t(c.output[o])] + "'[" + std::to_string(i) + "] = " + text(g[i]) +
               ", baseline " + text(w[i]) + (exact ? " (bit-exact expected)" : " (twice the tolerance " + text(rule.value) + ")");
    }
  }
  return "";
}

// The harness's oracle check (run_test_case): the case's derived tolerance and floor.
std::string check_oracle(const Case& c, const std::vector<Bytes>& got) {
  Tensors expected;
  for (const auto& [name, count] : c.setup.outputs()) expected[name].assign(count, 0.0);
  c.setup.oracle_fn()(c.rounded, expected);
  for (size_t o = 0; o < c.output.size(); ++o) {
    const std::string& name = c.buffer_name[size_t(c.output[o])];
    DType t = c.buffer_type[size_t(c.output[o])];
    const Tolerance rule = case_tolerance(c.setup, c.tol, t);
    std::vector<double> g(got[o].size() / dtype_size(t));
    num::decode(t, got[o].data(), g.data(), g.size());
    const std::vector<double>& want = expected.at(name);
    for (size_t i = 0; i < g.size() && i < want.size(); ++i) {
      double err = element_error(rule, t, g[i], want[i], c.setup.floor());
      if (err > rule.value)
        return "output '" + name + "'[" + std::to_string(i) + "] = " + text(g[i]) + ", oracle " + text(want[i]) +
               " (error " + text(err) + " > tolerance " + text(rule.value) + ")";
    }
  }
  return "";
}

struct Variant {
  std::string after;  // the last pass run ("" for the full pipeline)
  ir::Kernel kernel;
  uint64_t hash = 0;
};

// The baseline (stop after kernel_inline, which calls need), every prefix, and the full pipeline.
// Returns "" or the diagnostics of the first pipeline run that failed.
std::string build_variants(const ir::Kernel& traced, std::vector<Variant>& out) {
  std::vector<std::string> stops = passes::pass_names();
  stops.push_back("");
  for (const std::string& stop : stops) {
    Variant v{stop, traced, 0};
    passes::PipelineOptions o;
    o.stop_after = stop;
    o.verify_each = true;
    passes::PipelineResult r = passes::run_pipeline(v.kernel, o);
    if (!r.ok()) return "pipeline " + (stop.empty() ? std::string("(full)") : "up to " + stop) + " fails:\n" +
                        r.diags.render(v.kernel);
    v.hash = ir::content_hash(v.kernel);
    out.push_back(std::move(v));
  }
  return "";
}

size_t index_of(const std::string& pass) {
  const auto& names = passes::pass_names();
  return size_t(std::find(names.begin(), names.end(), pass) - names.begin());
}

}  // namespace

TEST(Differential, EveryPrefixMatchesTheTracedKernelAndTheOracle) {
  auto start = std::chrono::steady_clock::now();
  const size_t fma_at = index_of("fma_fusion");
  ASSERT_LT(fma_at, passes::pass_names().size()) << "the pipeline has no fma_fusion pass";
  size_t cases = 0, runs = 0, compared = 0;
  std::vector<const TestDecl*> tests = registered_tests();
  ASSERT_FALSE(tests.empty()) << "no registered test cases";
  size_t multi_step = 0;
  std::map<std::string, std::vector<Variant>> built;  // per kernel: baseline, prefixes, full
  for (const TestDecl* decl : tests) {
    for (size_t dt_index = 0; dt_index < decl->dtypes.size(); ++dt_index) {
      const DtypeTolerance& dt = decl->dtypes[dt_index];
      Case c;
      bool skip = false;
      std::string bad = make_case(decl, dt, c, &skip);
      if (!bad.empty()) {
        ADD_FAILURE() << c.label << ": " << bad;
        continue;
      }
      if (skip) {
        ++multi_step;
        continue;
      }
      const ir::Kernel& traced = kernel_ir(c.kernel);
      auto found = built.find(c.kernel);
      if (found == built.end()) {
        std::vector<Variant> v;
        std::string failed = build_variants(traced, v);
        if (!failed.empty()) {
          ADD_FAILURE() << c.kernel << " (" << c.label << "): " << failed;
          continue;
        }
        found = built.emplace(c.kernel, std::move(v)).first;
      }
      const std::vector<Variant>& variants = found->second;
      ++cases;
      // Lane width only matters to lane and threadgroup operations: the Reduction kernels run
      // again at 8, where the reduction trees (and their f32 rounding) differ.
      std::vector<uint32_t> widths{32};
      if (traced.mode == Mode::Reduction) widths.push_back(8);
      for (uint32_t lw : widths) {
        const std::string where = c.label + ", lane width " + std::to_string(lw);
        try {
          std::vector<Bytes> baseline = execute(variants[0].kernel, c, lw);  // stop after kernel_inline
          ++runs;
          // A case's first dtype at lane width 32 walks every prefix. Its other dtypes and lane
          // width 8 run the last prefix before fma_fusion (exact) and the full pipeline
          // (tolerant) only, and walk every prefix when either differs, to name the pass (a pass
          // that changes one dtype's result and not the first's still changes one of these two).
          std::vector<size_t> walk;
          std::map<size_t, std::vector<Bytes>> ran;  // the two runs below, reused by the walk
          for (size_t i = 1; i < variants.size(); ++i) walk.push_back(i);
          if (dt_index > 0 || lw != 32) {
            size_t before_fma = 0;
            for (size_t i = 1; i < variants.size(); ++i)
              if (!variants[i].after.empty() && index_of(variants[i].after) < fma_at) before_fma = i;
            std::vector<size_t> two{variants.size() - 1};
            if (before_fma > 0) two.insert(two.begin(), before_fma);
            bool differs = false;
            for (size_t i : two) {
              const Variant& v = variants[i];
              const bool exact = !v.after.empty() && index_of(v.after) < fma_at;
              std::vector<Bytes>& got = ran[i] = v.hash == variants[0].hash ? baseline : execute(v.kernel, c, lw);
              ++runs;
              if (!compare(c, baseline, got, exact).empty()) differs = true;
            }
            if (!differs) walk = two;
          }
          std::vector<Bytes> last = baseline;
          uint64_t last_hash = variants[0].hash;
          std::string first_change;
          for (size_t i : walk) {
            const Variant& v = variants[i];
            // An unchanged kernel gives unchanged bytes: reuse the previous run.
            if (auto r = ran.find(i); r != ran.end()) {
              last = r->second;
              last_hash = v.hash;
            } else if (v.hash != last_hash) {
              last = execute(v.kernel, c, lw);
              last_hash = v.hash;
              ++runs;
            }
            // The full pipeline (after == "") has run fma_fusion; prefixes before it are exact.
            bool exact = !v.after.empty() && index_of(v.after) < fma_at;
            std::string why = compare(c, baseline, last, exact);
            ++compared;
            if (!why.empty() && first_change.empty()) {
              first_change = why;
              ADD_FAILURE() << where << ": the prefix ending with "
                            << (v.after.empty() ? std::string("the full pipeline") : v.after)
                            << " is the first to change the result: " << why << "\n--- IR after it:\n"
                            << ir::print(v.kernel);
            }
          }
          std::string oracle = check_oracle(c, last);  // `last` is the full pipeline's output
          EXPECT_EQ(oracle, "") << where << ": the fully optimized kernel fails the oracle";
        } catch (const std::exception& e) {
          ADD_FAILURE() << where << ": " << e.what();
        }
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[differential] " << cases << " case/dtype pairs, " << compared << " comparisons, " << runs
            << " interpreter runs, " << multi_step << " multi-step family cases left to the harness, " << secs << " s\n";
  EXPECT_GT(cases, 0u);
}

// The comparisons have teeth: one changed bit fails the exact check; a change far inside the
// tolerance passes the tolerant one, a change past it fails it; NaN matches only NaN.
TEST(Differential, ComparisonRules) {
  const TestDecl* add = nullptr;
  for (const TestDecl* t : registered_tests())
    if (std::string(t->kernel) == "iron_add") add = t;
  ASSERT_NE(add, nullptr);
  Case c;
  ASSERT_EQ(make_case(add, {DType::F32, 1e-6}, c), "");
  std::vector<Bytes> want = execute(kernel_ir("iron_add"), c, 32);
  ASSERT_EQ(check_oracle(c, want), "");
  auto with = [&](float v) {
    std::vector<Bytes> got = want;
    std::memcpy(got[0].data(), &v, 4);
    return got;
  };
  float w0;
  std::memcpy(&w0, want[0].data(), 4);
  ASSERT_NE(w0, 0.0f);
  EXPECT_EQ(compare(c, want, want, true), "");
  EXPECT_NE(compare(c, want, with(std::nextafter(w0, INFINITY)), true), "");
  EXPECT_EQ(compare(c, want, with(std::nextafter(w0, INFINITY)), false), "");
  EXPECT_NE(compare(c, want, with(w0 + 0.01f), false), "");
  EXPECT_NE(compare(c, want, with(NAN), false), "");
  std::vector<Bytes> nan_a = with(NAN), nan_b = with(-NAN);
  EXPECT_EQ(compare(c, nan_a, nan_b, true), "");
  EXPECT_NE(check_oracle(c, with(w0 + 0.01f)), "");
}
