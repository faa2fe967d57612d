// `iron run NAME ...` (runner.hpp: RunRequest): one kernel or family on the user's data.
//
// The launch comes from the family's selector (a logical call: sizes and scalars by name), or,
// with --grid and --tg, the kernel runs with exactly that launch. Every buffer is sized from the
// extents the launched kernels declare. Inputs come from .npy files, converted to the buffer's
// dtype (the conversion is stated on stderr); outputs are written as .npy through temporary
// names renamed only once every output is written, so a failed run leaves no partial file.
// Without any file or output named, the inputs are a deterministic pattern and the outputs are
// only summarized (what `iron run FAMILY --arg ...` always did).
//
// Every problem with the request is an iron::Error (exit 2) raised before anything is written:
// an unknown name, a missing or malformed file, a shape or dtype that does not fit, a value out
// of range, an output that cannot be written.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/ir.hpp"
#include "core/npy.hpp"
#include "core/numeric.hpp"
#include "harness/runner.hpp"
#include "iron/launch.hpp"
#include "iron/registry.hpp"

namespace iron {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool ends_with_npy(const std::string& s) {
  if (s.size() < 4) return false;
  std::string tail = s.substr(s.size() - 4);
  std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return tail == ".npy";
}

// "64", "64x2" or "64x2x1" (',' also separates): each axis 1..2^32-1; the dispatch checks the
// device's limits.
Dim3 parse_dims(const char* option, const std::string& text) {
  uint32_t d[3] = {1, 1, 1};
  size_t axis = 0, pos = 0;
  auto bad = [&](const std::string& why) {
    return Error(std::string(option) + " '" + text + "': " + why + " (write X, XxY or XxYxZ, e.g. 64 or 16x16)");
  };
  while (true) {
    if (axis == 3) throw bad("at most three sizes");
    size_t end = text.find_first_of("xX,", pos);
    std::string part = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    uint64_t v = 0;
    if (!num::parse_uint64(part, v) || part.empty()) throw bad("'" + part + "' is not a size");
    if (v == 0 || v > UINT32_MAX) throw bad("each size must be 1..4294967295, not " + part);
    d[axis++] = uint32_t(v);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return {d[0], d[1], d[2]};
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  npy::Array a;
  a.shape = shape;
  return a.shape_text();
}

// A call buffer: what the launched kernels declare for it.
struct CallBuffer {
  DType dtype = DType::F32;
  uint64_t count = 0;
  bool written = false, read = false;
  std::vector<uint64_t> dims;  // the declared extent's sizes where count was set
  std::string declared;        // "[rows, d] at rows=13 d=1000" for messages
};

// The scalar values of a step as the integer bits the extents use.
std::vector<uint64_t> step_values(const ir::Kernel& k, const LaunchStep& st) {
  std::vector<uint64_t> values(k.params.size(), 0);
  for (size_t i = 0; i < k.params.size(); ++i) {
    auto it = st.constexprs.find(k.params[i].name);
    if (it == st.constexprs.end() || k.params[i].kind != ir::ParamKind::Scalar) continue;
    std::string why;
    if (is_integer(k.params[i].dtype) && !scalar_bits(k.params[i].dtype, it->second, values[i], why))
      throw Error(k.name + ": scalar '" + k.params[i].name + "' = " + it->second.text() + " " + why);
  }
  return values;
}

// The call's arguments a family's registered cases name: the names a call of it takes.
std::set<std::string> family_call_names(const std::string& family) {
  std::set<std::string> names;
  for (const TestDecl* t : registered_tests()) {
    if (family != t->kernel || t->dtypes.empty()) continue;
    TestSetup setup = t->body(t->dtypes.front().dtype.t, t->dtypes.front().dtype.w);
    if (!setup.has_call()) continue;
    for (const auto& [n, v] : setup.call_args()) names.insert(n);
  }
  return names;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "none" : out;
}

// Output files: written under temporary names, renamed into place together at the end.
class OutputFiles {
 public:
  ~OutputFiles() { discard(); }
  void write(const std::string& path, const std::string& bytes) {
    const std::string tmp = path + ".iron-tmp." + std::to_string(::getpid());
    temps_.emplace_back(tmp, path);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    bool ok = fd >= 0;
    const char* p = bytes.data();
    size_t left = bytes.size();
    while (ok && left > 0) {
      ssize_t put = ::write(fd, p, left);
      if (put < 0 && errno == EINTR) continue;
      ok = put > 0;
      if (ok) p += put, left -= size_t(put);
    }
    if (fd >= 0) ok = ::close(fd) == 0 && ok;
    if (!ok) throw Error("cannot write " + path + " (" + std::strerror(errno) + "); no output was written");
  }
  void commit() {
    for (const auto& [tmp, path] : temps_) {
      std::error_code ec;
      fs::rename(tmp, path, ec);
      if (ec) throw Error("cannot write " + path + ": " + ec.message());
    }
    temps_.clear();
  }
  void discard() {
    for (const auto& [tmp, path] : temps_) {
      std::error_code ec;
      fs::remove(tmp, ec);
    }
    temps_.clear();
  }

 private:
  std::vector<std::pair<std::string, std::string>> temps_;
};

}  // namespace

int run_kernel(const RunRequest& r, const std::function<void(const json&)>& send) {
  const std::string& name = r.name;
  const SelectorDecl* selector = find_selector(name);
  const KernelDecl* decl = find_kernel_decl(name);
  const bool explicit_launch = !r.grid.empty() || !r.tg.empty();
  if (explicit_launch && (r.grid.empty() || r.tg.empty()))
    throw Error("--grid and --tg go together: give both (the launch in threadgroups and the threadgroup shape)");
  if (!selector && !decl) throw Error("unknown kernel or family '" + name + "' (iron list shows them)");
  if (explicit_launch && !decl)
    throw Error("'" + name + "' is a family, not a kernel: drop --grid and --tg and its selector plans the launch");
  if (!explicit_launch && !selector)
    throw Error("kernel " + name + " has no selector (no family of that name): give the launch with --grid and --tg");
  const bool direct = explicit_launch;

  // NAME=VALUE: a .npy file for a buffer, else a scalar (direct) or call argument (family).
  std::map<std::string, std::string> files, scalars;
  for (const std::string& kv : r.assignments) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      throw Error("'" + kv + "': write NAME=VALUE for a scalar or NAME=FILE.npy for an input buffer");
    const std::string n = kv.substr(0, eq), v = kv.substr(eq + 1);
    auto& into = ends_with_npy(v) ? files : scalars;
    if (files.count(n) || scalars.count(n)) throw Error("'" + n + "' is given twice");
    into[n] = v;
  }
  std::map<std::string, std::string> outs;
  for (const std::string& kv : r.outs) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      throw Error("--out '" + kv + "': write NAME=FILE.npy");
    if (!outs.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second) throw Error("--out " + kv.substr(0, eq) + " is given twice");
  }
  const bool user_data = !files.empty() || !outs.empty() || !r.out_dir.empty();

  // The dtype.
  Instantiation dtype;
  if (direct) {
    const ir::Kernel& k = kernel_ir(name);
    if (r.dtype.empty()) {
      if (!k.dtypes.empty() || !k.wtypes.empty()) {
        std::string list;
        for (Instantiation in : ir::instantiations(k)) list += (list.empty() ? "" : ", ") + instantiation_name(in);
        throw Error("kernel " + name + " is generic: give --dtype (one of " + list + ")");
      }
      dtype = ir::instantiations(k).front();
    } else {
      if (!parse_instantiation(r.dtype, dtype)) throw Error("unknown dtype '" + r.dtype + "' (a dtype, or T,W as in f16,bf16)");
      if (!dtype.has_w() && !k.wtypes.empty()) dtype.w = k.wtypes.front();
      if (std::string why; !ir::declares(k, dtype, &why)) throw Error(why);
    }
  } else {
    if (r.dtype.empty()) throw Error("run " + name + " needs --dtype (the call's T, or T,W)");
    if (!parse_instantiation(r.dtype, dtype)) throw Error("unknown dtype '" + r.dtype + "' (a dtype, or T,W as in f16,bf16)");
  }

  Backend backend = Backend::Interp;
  if (!r.backend.empty() && !parse_backend(r.backend, backend))
    throw Error("unknown backend '" + r.backend + "' (use vulkan, cuda, hip or interp)");

  // The plan: the family's selector, or one step with the given launch. The scalars are checked
  // against their parameters before any device work.
  LaunchPlan plan;
  Call call{dtype, {}};
  if (direct) {
    const ir::Kernel& k = kernel_ir(name);
    LaunchStep st;
    st.kernel = name;
    st.grid = parse_dims("--grid", r.grid);
    st.threadgroup = parse_dims("--tg", r.tg);
    std::set<std::string> scalar_names, buffer_names;
    for (const ir::Param& p : k.params) (p.kind == ir::ParamKind::Scalar ? scalar_names : buffer_names).insert(p.name);
    for (const auto& [n, text] : scalars) {
      const int idx = k.find_param(n);
      if (idx < 0 || k.params[size_t(idx)].kind != ir::ParamKind::Scalar)
        throw Error("unknown parameter '" + n + "': kernel " + name + "'s scalars are " + join(scalar_names) +
                    (idx >= 0 ? " ('" + n + "' is a buffer: give " + n + "=FILE.npy)" : "") + ", its buffers " +
                    join(buffer_names));
      const ir::Param& p = k.params[size_t(idx)];
      const ScalarValue v = scalar_from_text("run", n, text);
      uint64_t bits = 0;
      std::string why;
      if (!scalar_bits(p.dtype, v, bits, why)) throw Error(n + "=" + text + ": the value " + why);
      st.constexprs[n] = v;
    }
    for (const ir::Param& p : k.params)
      if (p.kind == ir::ParamKind::Scalar && !scalars.count(p.name))
        throw Error("scalar '" + p.name + "' of kernel " + name + " is not set: give " + p.name + "=VALUE");
    plan.steps.push_back(st);
    plan.reason = "the launch given with --grid and --tg";
  } else {
    const std::set<std::string> known = family_call_names(name);
    for (const auto& [n, text] : scalars) {
      if (!known.empty() && !known.count(n))
        throw Error("unknown argument '" + n + "': a call of family " + name + " names " + join(known));
      call.args[n] = scalar_from_text("run", n, text);
    }
  }

  // A backend that cannot run here is a failure (1), as for test and bench, not bad input.
  std::unique_ptr<Context> ctx;
  try {
    ctx = Context::create(backend);
  } catch (const Error& e) {
    std::cerr << "iron: error: backend " << backend_name(backend) << " unavailable: " << e.what() << "\n";
    return 1;
  }
  send(device_message(ctx->info()));
  if (!direct) plan = plan_launch(name, call, ctx->info());
  json steps = json::array();
  for (const LaunchStep& st : plan.steps) {
    json sc = json::object();
    for (const auto& [n, v] : st.constexprs) sc[n] = v.text();
    steps.push_back({{"kernel", st.kernel},
                     {"grid", {st.grid.x, st.grid.y, st.grid.z}},
                     {"threadgroup", {st.threadgroup.x, st.threadgroup.y, st.threadgroup.z}},
                     {"constexprs", sc}});
  }
  send({{"type", "plan"}, {"family", name}, {"dtype", instantiation_name(dtype)}, {"reason", plan.reason}, {"steps", steps}});

  // Call buffers: the largest extent any step declares for them; written by a step = output.
  std::map<std::string, CallBuffer> buffers;
  std::vector<std::string> order;  // call buffers in the order the steps' parameters name them
  for (const LaunchStep& st : plan.steps) {
    if (st.library) {
      // A library routine (blas.gemm): a [m, k] and b [k, n] in T as laid out by the step's
      // strides, c [m, n] written.
      auto v = [&](const char* n) { return uint64_t(st.constexprs.at(n).as_double()); };
      const uint64_t m = v("m"), n = v("n"), k = v("k");
      auto span = [&](const char* col, const char* ld, const char* off, uint64_t rows, uint64_t cols) {
        return v(off) + ((v(col) ? cols : rows) - 1) * v(ld) + (v(col) ? rows : cols);
      };
      for (const auto& [param, dt] : library_step_buffers(st, dtype)) {
        const std::string& bname = step_buffer(st, param);
        const uint64_t extent = param == "a" ? span("a_col", "lda", "a_off", m, k)
                                : param == "b" ? span("b_col", "ldb", "b_off", k, n)
                                               : m * n;
        if (!buffers.count(bname)) order.push_back(bname);
        CallBuffer& cb = buffers[bname];
        cb.dtype = dt;
        if (extent > cb.count || cb.dims.empty()) {
          cb.count = extent;
          cb.dims = param == "c" ? std::vector<uint64_t>{m, n} : std::vector<uint64_t>{extent};
          cb.declared = st.kernel + " reads " + bname + " of " + std::to_string(extent) + " elements";
        }
        cb.written = cb.written || param == "c";
        cb.read = cb.read || param != "c";
      }
      continue;
    }
    const ir::Kernel& k = kernel_ir(st.kernel);
    const std::vector<uint64_t> values = step_values(k, st);
    for (const ir::Param& p : k.params) {
      if (p.kind != ir::ParamKind::Buffer) continue;
      const std::string& bname = step_buffer(st, p.name);
      bool scratch = false;
      for (const ScratchBuffer& b : plan.scratch) scratch = scratch || b.name == bname;
      if (scratch) continue;
      uint64_t extent = p.extent_factor;
      std::vector<uint64_t> dims;
      std::string declared;
      for (uint32_t si : p.extent_scalars) {
        extent = num::saturating_mul(extent, values[si]);
        dims.push_back(values[si]);
        declared += (declared.empty() ? "" : " x ") + k.params[si].name + " (" + std::to_string(values[si]) + ")";
      }
      if (p.extent_factor != 1 || dims.empty()) {
        dims.push_back(p.extent_factor);
        declared += (declared.empty() ? "" : " x ") + std::to_string(p.extent_factor);
      }
      if (!buffers.count(bname)) order.push_back(bname);
      CallBuffer& cb = buffers[bname];
      cb.dtype = ir::resolve(p.dtype, dtype);
      if (extent > cb.count || cb.dims.empty()) {
        cb.count = std::max<uint64_t>(extent, 1);
        cb.dims = dims;
        cb.declared = st.kernel + " declares " + bname + " of " + declared;
      }
      cb.written = cb.written || p.access != ir::Access::Read;
      cb.read = cb.read || p.access != ir::Access::Write;
    }
  }
  std::set<std::string> inputs_named;
  for (const auto& [n, cb] : buffers)
    if (cb.read) inputs_named.insert(n);
  std::set<std::string> written_names;
  for (const auto& [n, cb] : buffers)
    if (cb.written) written_names.insert(n);

  // Files and destinations, all checked before anything is read or written.
  for (const auto& [n, path] : files) {
    auto it = buffers.find(n);
    if (it == buffers.end())
      throw Error("unknown parameter '" + n + "': " + name + " reads the buffers " + join(inputs_named) +
                  (direct ? "" : " (sizes and scalars of a call are NAME=VALUE)"));
    if (!it->second.read)
      throw Error("'" + n + "' is an output of " + name + ", not an input: name its file with --out " + n +
                  "=FILE.npy or -o DIR");
  }
  if (user_data)
    for (const auto& [n, cb] : buffers)
      if (cb.read && !files.count(n))
        throw Error("input '" + n + "' has no data: give " + n + "=FILE.npy (" + cb.declared + ")");
  std::map<std::string, std::string> dest;  // buffer -> file
  for (const auto& [n, path] : outs) {
    if (!written_names.count(n))
      throw Error("--out " + n + ": " + name + " writes no buffer '" + n + "' (its outputs: " + join(written_names) + ")");
    dest[n] = path;
  }
  bool made_dir = false;
  if (!r.out_dir.empty()) {
    std::error_code ec;
    if (fs::exists(r.out_dir, ec) && !fs::is_directory(r.out_dir, ec))
      throw Error("-o " + r.out_dir + ": not a directory");
    if (fs::is_directory(r.out_dir, ec) && ::access(r.out_dir.c_str(), W_OK) != 0)
      throw Error("-o " + r.out_dir + ": the directory is not writable");
    for (const std::string& n : written_names)
      if (!dest.count(n)) dest[n] = (fs::path(r.out_dir) / (n + ".npy")).string();
  }
  {
    std::set<std::string> seen;
    for (const auto& [n, path] : dest) {
      if (!seen.insert(fs::absolute(path).lexically_normal().string()).second)
        throw Error("two outputs are written to " + path);
      std::error_code ec;
      if (fs::is_directory(path, ec)) throw Error("cannot write " + path + ": it is a directory");
      fs::path parent = fs::path(path).parent_path();
      if (parent.empty()) parent = ".";
      if (r.out_dir.empty() || parent != fs::path(r.out_dir)) {
        if (!fs::is_directory(parent, ec)) throw Error("cannot write " + path + ": no directory " + parent.string());
        if (::access(parent.c_str(), W_OK) != 0) throw Error("cannot write " + path + ": " + parent.string() + " is not writable");
      }
    }
  }

  // Inputs: read and converted (or the deterministic pattern).
  std::map<std::string, std::vector<unsigned char>> input_bytes;
  std::map<std::string, std::vector<uint64_t>> input_shapes;
  uint64_t seed = 1;
  for (const auto& [n, cb] : buffers) {
    std::vector<unsigned char> bytes(cb.count * dtype_size(cb.dtype));
    if (auto f = files.find(n); f != files.end()) {
      npy::Array a = npy::read(f->second);
      if (a.count() != cb.count)
        throw Error(f->second + ": holds " + std::to_string(a.count()) + " values (shape " + a.shape_text() + "), " +
                    n + " takes " + std::to_string(cb.count) + " (" + cb.declared + ")");
      npy::Conversion conv;
      npy::to_dtype(a, cb.dtype, bytes.data(), conv, f->second);
      const bool same = npy::saved_type(cb.dtype) == a.type_name() && cb.dtype != DType::BF16 && !is_fp8(cb.dtype);
      std::cerr << "iron: " << n << " <- " << f->second << ": " << a.type_name() << " " << a.shape_text()
                << (same ? ", as it is" : " converted to " + std::string(dtype_name(cb.dtype)) +
                                              (is_float(cb.dtype) ? " (rounded to nearest even" : " (exact") +
                                              (conv.inexact ? "; " + std::to_string(conv.inexact) + " of " +
                                                                  std::to_string(a.count()) + " values changed)"
                                                            : "; every value exact)"))
                << "\n";
      input_shapes[n] = a.shape;
    } else if (cb.read) {
      std::vector<double> values(cb.count, 0.0);
      if (!is_integer(cb.dtype)) values = fixture::uniform(cb.count, -1.0, 1.0, seed++);
      num::encode(cb.dtype, values.data(), bytes.data(), cb.count);
    }
    input_bytes[n] = std::move(bytes);
  }

  Bindings bindings;
  for (const auto& [n, cb] : buffers) {
    DeviceBuffer buf = ctx->alloc(cb.dtype, cb.count);
    ctx->upload(buf, input_bytes[n].data(), input_bytes[n].size());
    bindings.emplace_back(n, buf);
  }
  run_plan(*ctx, plan, dtype, bindings);
  ctx->synchronize();

  std::map<std::string, std::vector<unsigned char>> results;
  for (const auto& [n, buf] : bindings) {
    const CallBuffer& cb = buffers.at(n);
    if (!cb.written) continue;
    std::vector<unsigned char> bytes(buf.bytes());
    ctx->download(buf, bytes.data(), bytes.size());
    std::vector<double> v(buf.count());
    num::decode(buf.dtype(), bytes.data(), v.data(), v.size());
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    size_t nonfinite = 0;
    for (double x : v) {
      if (!std::isfinite(x)) {
        ++nonfinite;
        continue;
      }
      sum += x, lo = std::min(lo, x), hi = std::max(hi, x);
    }
    send({{"type", "run_output"}, {"name", n}, {"dtype", dtype_name(buf.dtype())}, {"count", v.size()},
          {"sum", sum}, {"min", std::isfinite(lo) ? json(lo) : json(nullptr)},
          {"max", std::isfinite(hi) ? json(hi) : json(nullptr)}, {"nonfinite", nonfinite}});
    results[n] = std::move(bytes);
  }
  if (r.samples > 0) {
    TimingOptions o;
    o.warmup = std::min(20, r.samples);
    o.samples = r.samples;
    o.flush_l2 = r.flush_l2 || r.flush_l2_read;
    o.flush_l2_read = r.flush_l2_read;
    Timing t = time_plan(*ctx, plan, dtype, bindings, o);
    std::vector<double> s = t.samples_us;
    std::sort(s.begin(), s.end());
    send({{"type", "run_timing"}, {"samples", s.size()}, {"min_us", s.front()}, {"median_us", s[s.size() / 2]}});
  }

  // Outputs: an output takes the shape of the first input file (in parameter order) with as
  // many elements, else the sizes of its declared extent.
  if (!dest.empty()) {
    if (!r.out_dir.empty() && !fs::exists(r.out_dir)) {
      std::error_code ec;
      fs::create_directories(r.out_dir, ec);
      if (ec) throw Error("cannot create " + r.out_dir + ": " + ec.message());
      made_dir = true;
    }
    OutputFiles out;
    try {
      for (const auto& [n, path] : dest) {
        const CallBuffer& cb = buffers.at(n);
        std::vector<uint64_t> shape = cb.dims;
        for (const std::string& in : order)
          if (auto s = input_shapes.find(in); s != input_shapes.end() && buffers.at(in).count == cb.count) {
            shape = s->second;
            break;
          }
        npy::Array a = npy::from_dtype(cb.dtype, results.at(n).data(), cb.count, shape);
        out.write(path, npy::serialize(a));
        std::cerr << "iron: " << n << " -> " << path << ": " << a.type_name() << " " << shape_text(shape)
                  << (npy::saved_type(cb.dtype) == dtype_name(cb.dtype)
                          ? ""
                          : std::string(" (") + dtype_name(cb.dtype) + " widened to f32, exact)")
                  << "\n";
      }
      out.commit();
    } catch (...) {
      out.discard();
      std::error_code ec;
      if (made_dir) fs::remove(r.out_dir, ec);  // only while empty
      throw;
    }
  }
  return 0;
}

}  // namespace iron
