// `iron build` and `iron clean` (see build_outputs.hpp).
//
// The tree: DIR/ir/<kernel>.ir (the optimized IR), DIR/<backend>/<entry>.<ext> (sources, and
// binaries unless --no-compile), DIR/manifest.json. <entry> is the entry-point name
// (codegen::entry_name: kernel, dtype, W), so every variant (a registered kernel of its own) and
// every dtype has its own files. Nothing in the tree depends on the time, the machine or the
// output directory's name, so two builds of one source give byte-identical trees.
//
// The emission backends are the rows of the target registry (codegen/target.hpp) whose dialect
// this build has: a target's --emit name, its source and binary extensions and its offline
// compiler come from its row, so a new target needs nothing here. Sources are emitted on one
// thread; the compiles (NVRTC, glslang, clang for HIP) run on rt::compile_threads() threads and
// land in fixed slots, so the order of the tree and the messages never depends on them.
#include "harness/build_outputs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <optional>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "codegen/codegen.hpp"
#include "core/ir.hpp"
#include "harness/runner.hpp"
#include "iron/launch.hpp"
#include "iron/registry.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/disk_cache.hpp"

namespace iron::build {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr int kManifestFormat = 1;
constexpr const char* kManifestName = "manifest.json";

std::string hash_hex(const void* data, size_t bytes) {
  XXH128_hash_t h = XXH3_128bits(data, bytes);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
  return buf;
}

// One file an emission backend produced for an instantiation, or the failure to produce it.
struct Output {
  std::string target;   // "cuda", "cuda:sm_90a", "spirv"
  std::string path;     // relative to the build directory
  std::string bytes;
  bool ok = true;
  std::string message;  // compiler log or diagnostics
};

// One emission backend: a row of the target registry (codegen/target.hpp) whose dialect this
// build has. Its --emit name is also its directory ("spirv" for the Vulkan target, whose files
// are GLSL and SPIR-V); the row's offline compiler says what the binary is.
struct EmissionBackend {
  const codegen::TargetInfo* info;
  std::string name;
  // The binary is the point of the target (SPIR-V: the runtime never loads GLSL) or an extra
  // --no-compile skips (CUBIN, code objects).
  bool binary_optional() const { return info->compiler != codegen::OfflineCompiler::Glslang; }
  bool has_binary() const { return info->compiler != codegen::OfflineCompiler::HostSyntax; }
};

std::vector<EmissionBackend> emission_table() {
  std::vector<EmissionBackend> rows;
  for (size_t i = 0; i < codegen::kNumTargets; ++i) {
    const codegen::TargetInfo& t = codegen::target_infos()[i];
    if (!t.make_dialect) continue;
    rows.push_back({&t, t.target == codegen::Target::Glsl ? "spirv" : t.name});
  }
  return rows;
}

// The architectures a target's binaries are built for: --arch for CUDA, --hip-arch (a list)
// for HIP, the row's default elsewhere.
std::vector<std::string> archs_of(const EmissionBackend& b, const Request& req) {
  if (b.info->target == codegen::Target::Cuda) return {req.arch};
  if (b.info->target == codegen::Target::Hip) return req.hip_archs;
  return {b.info->default_arch};
}

struct Job {
  const ir::Kernel& optimized;
  Instantiation dtype;
  std::string stem;  // entry-point name
  const Request& req;
  const EmissionBackend& backend;
  const codegen::TargetProfile& profile;  // of the backend's first architecture
};

// A backend's work for one instantiation, in two parts: emitting the source (serial, cheap)
// and compiling it (compile(), run on several threads, rt::compile_threads()). Both go through
// the one compile path (runtime/compile.hpp): the per-target lowering, the registry's dialect
// and its offline compiler, with compile errors located in the DSL.
codegen::EmitOptions emit_options(const Job& job) {
  codegen::EmitOptions o;
  const codegen::Target t = job.backend.info->target;
  if (t == codegen::Target::Cuda || t == codegen::Target::Hip)
    for (int i = 0; i < 3; ++i) o.threadgroup[i] = job.req.threadgroup[i];
  if (t == codegen::Target::Cuda) o.cuda_mma = codegen::cuda_mma_from_env();
  return o;
}

Output emit_source(const Job& job, std::string& entry) {
  rt::Compiled c = rt::compile_optimized(job.optimized, job.dtype, job.profile, emit_options(job), false);
  entry = c.emitted.entry;
  const bool ok = c.ok() && !c.emitted.source.empty();
  Output src{job.backend.name, job.backend.name + "/" + job.stem + job.backend.info->source_ext, {}, ok, ok ? "" : c.error};
  if (ok) src.bytes = c.emitted.source;
  return src;
}

// The binary of `source` for one architecture: <stem>.<arch><ext> (SPIR-V, which has one
// target, <stem>.spv). The compile path emits again for the architecture's own profile (the
// same text where the architecture changes nothing the dialect reads) and compiles it.
Output compile(const Job& job, const Output& source, const std::string& entry, const std::string& arch) {
  (void)source;
  (void)entry;
  const codegen::TargetInfo& info = *job.backend.info;
  const std::string dir = job.backend.name + "/";
  Output bin{job.backend.name + ":" + arch, dir + job.stem + "." + arch + info.binary_ext, {}, false, {}};
  if (info.compiler == codegen::OfflineCompiler::Glslang) bin = Output{job.backend.name, dir + job.stem + info.binary_ext, {}, false, {}};
  if (info.compiler == codegen::OfflineCompiler::HostSyntax) return bin;
  try {
    rt::Compiled c = rt::compile_optimized(job.optimized, job.dtype, codegen::profile_for(info.target, arch), emit_options(job), true);
    bin.ok = c.ok() && !c.binary.empty();
    if (bin.ok) bin.bytes.assign(c.binary.begin(), c.binary.end());
    else bin.message = c.error.empty() ? c.log : c.error;
  } catch (const Error& err) {
    bin.ok = false;
    bin.message = err.what();
  }
  return bin;
}

// The reference device a backend's selector rows are planned for: its profile (the manifest
// states every field a selector reads). A target whose lane width the device chooses (Vulkan)
// is planned at 32 lanes and 48 KiB, what desktop drivers report.
DeviceInfo reference_device(const EmissionBackend& b, const codegen::TargetProfile& p) {
  DeviceInfo d;
  Backend rb = Backend::Cuda;
  if (b.info->backend) parse_backend(b.info->backend, rb);
  d.backend = rb;
  d.name = "reference " + b.name + " " + p.arch;
  d.arch = p.arch;
  d.lane_width = p.lane_width ? p.lane_width : 32;
  d.max_threads_per_group = p.max_threadgroup;
  d.shared_memory_bytes = p.static_shared_bytes ? p.static_shared_bytes : 48 * 1024;
  d.shared_memory_optin_bytes = p.max_shared_bytes > d.shared_memory_bytes ? p.max_shared_bytes : 0;
  d.f16 = p.supports(DType::F16);
  d.bf16 = p.supports(DType::BF16);
  return d;
}

// --emit: a comma-separated list; `all` is every backend, ir and manifest.
struct Selection {
  std::vector<EmissionBackend> backends;
  bool ir = false;
  std::vector<std::string> names;  // sorted, for the manifest
};

Selection parse_emit(const std::string& text) {
  Selection s;
  std::set<std::string> names;
  const std::vector<EmissionBackend> table = emission_table();
  std::string known;
  for (const EmissionBackend& b : table) known += b.name + ", ";
  known += "ir, manifest or all";
  size_t pos = 0;
  while (true) {
    size_t end = text.find(',', pos);
    std::string item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    bool found = item == "ir" || item == "manifest" || item == "all";
    for (const EmissionBackend& b : table) found = found || item == b.name;
    if (!found) throw Error("--emit takes " + known + " (or a comma-separated list), not '" + item + "'");
    if (item == "all") {
      for (const EmissionBackend& b : table) names.insert(b.name);
      names.insert("ir");
    } else if (item != "manifest") {
      names.insert(item);
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  for (const EmissionBackend& b : table)
    if (names.count(b.name)) s.backends.push_back(b);
  s.ir = names.count("ir") != 0;
  s.names.assign(names.begin(), names.end());
  s.names.push_back("manifest");
  return s;
}

bool matches(const std::string& filter, const std::string& name) {
  return filter.empty() || name.find(filter) != std::string::npos;
}

json dim_json(Dim3 d) { return json::array({d.x, d.y, d.z}); }

json variant_value_json(const VariantValue& v) {
  switch (v.kind) {
    case VariantValue::Kind::Int: return v.i;
    case VariantValue::Kind::Float: return v.f;
    case VariantValue::Kind::Type: return dtype_name(v.t);
  }
  return nullptr;
}

json scalar_json(const ScalarValue& v) { return v.text(); }

json params_json(const ir::Kernel& k) {
  json params = json::array();
  for (const ir::Param& p : k.params) {
    json j = {{"name", p.name},
              {"kind", ir::param_kind_name(p.kind)},
              {"dtype", dtype_name(p.dtype)}};
    if (p.kind == ir::ParamKind::Buffer) {
      j["access"] = ir::access_name(p.access);
      json scalars = json::array();
      for (uint32_t s : p.extent_scalars) scalars.push_back(k.params[s].name);
      j["extent"] = {{"factor", p.extent_factor}, {"scalars", scalars}};
      if (p.align) j["aligned"] = p.align;
      json aliases = json::array();
      for (uint32_t a : p.aliases) aliases.push_back(k.params[a].name);
      if (!aliases.empty()) j["aliases"] = aliases;
    } else {
      if (p.specialize) j["specialize"] = true;
      if (p.multiple_of) j["multiple_of"] = p.multiple_of;
    }
    params.push_back(j);
  }
  return params;
}

// Representative calls of a family: the calls its registered test cases make (each at each of
// its dtypes), deduplicated, in registration order.
std::vector<Call> representative_calls(const std::string& family) {
  std::vector<Call> calls;
  std::set<std::string> seen;
  for (const TestDecl* t : registered_tests()) {
    if (family != t->kernel) continue;
    for (const DtypeTolerance& dt : t->dtypes) {
      TestSetup setup = t->body(dt.dtype.t, dt.dtype.w);
      if (!setup.has_call()) continue;
      Call c{dt.dtype, setup.call_args()};
      std::string key = instantiation_name(c.dtype);
      for (const auto& [n, v] : c.args) key += " " + n + "=" + v.text();
      if (seen.insert(key).second) calls.push_back(std::move(c));
    }
  }
  return calls;
}

json plan_json(const LaunchPlan& plan) {
  json steps = json::array();
  for (const LaunchStep& st : plan.steps) {
    json sc = json::object();
    for (const auto& [n, v] : st.constexprs) sc[n] = scalar_json(v);
    json bind = json::object();
    for (const auto& [param, buffer] : st.bind) bind[param] = buffer;
    json step = {{"kernel", st.kernel}, {"grid", dim_json(st.grid)}, {"threadgroup", dim_json(st.threadgroup)},
                 {"constexprs", sc}};
    if (!bind.empty()) step["bind"] = bind;
    if (st.library) step["library"] = true;
    steps.push_back(step);
  }
  json scratch = json::array();
  for (const ScratchBuffer& b : plan.scratch)
    scratch.push_back({{"name", b.name}, {"dtype", dtype_name(b.dtype)}, {"count", b.count}});
  for (size_t i = 0; i < plan.scratch.size(); ++i)
    if (plan.scratch[i].zeroed) scratch[i]["zeroed"] = true;
  json j = {{"reason", plan.reason}, {"steps", steps}};
  if (!scratch.empty()) j["scratch"] = scratch;
  return j;
}

json profile_json(const std::string& backend, const DeviceInfo& d) {
  return {{"backend", backend},
          {"name", d.name},
          {"lane_width", d.lane_width},
          {"max_threads_per_group", d.max_threads_per_group},
          {"shared_memory_bytes", d.shared_memory_bytes},
          {"shared_memory_optin_bytes", d.shared_memory_optin_bytes},
          {"f16", d.f16},
          {"bf16", d.bf16}};
}

// A previous build's manifest: the files it owns (relative path -> content hash). Only paths
// that stay inside the directory are taken; a manifest that is not Iron's gives nothing.
std::map<std::string, std::string> owned_files(const fs::path& dir, bool* found = nullptr, std::string* why = nullptr) {
  std::map<std::string, std::string> files;
  if (found) *found = false;
  std::ifstream f(dir / kManifestName);
  if (!f) {
    if (why) *why = "has no " + std::string(kManifestName);
    return files;
  }
  json m = json::parse(f, nullptr, false);
  if (m.is_discarded() || !m.is_object() || m.value("iron_build_manifest", 0) != kManifestFormat ||
      !m.contains("files") || !m["files"].is_array()) {
    if (why) *why = "has a " + std::string(kManifestName) + " that iron build did not write";
    return files;
  }
  for (const json& e : m["files"]) {
    if (!e.is_object() || !e.contains("path") || !e["path"].is_string() || !e.contains("xxh3_128") ||
        !e["xxh3_128"].is_string())
      continue;
    const std::string p = e["path"];
    fs::path rel(p);
    bool inside = !p.empty() && rel.is_relative() && p.find('\\') == std::string::npos;
    for (const fs::path& part : rel) inside = inside && part != ".." && part != "." && !part.empty();
    if (inside && p != kManifestName) files[p] = e["xxh3_128"];
  }
  if (found) *found = true;
  return files;
}

// The content hash of the regular file `rel` under `dir`, reached without following a link
// (neither the file nor a directory between `dir` and it may be one: a link swapped in after
// the build never leads a removal out of the tree); "" when it is not such a file.
std::string file_hash(const fs::path& dir, const std::string& rel) {
  std::error_code ec;
  fs::path p = dir;
  for (const fs::path& part : fs::path(rel).parent_path()) {
    p /= part;
    if (!fs::is_directory(fs::symlink_status(p, ec)) || ec) return "";
  }
  p = dir / rel;
  fs::file_status st = fs::symlink_status(p, ec);
  if (ec || !fs::is_regular_file(st)) return "";
  std::ifstream f(p, std::ios::binary);
  if (!f) return "";
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return hash_hex(bytes.data(), bytes.size());
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec) throw Error("cannot create " + p.parent_path().string() + ": " + ec.message());
  // A link or a special file in the way is replaced, never written through.
  fs::file_status st = fs::symlink_status(p, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    if (fs::is_directory(st)) throw Error("cannot write " + p.string() + ": a directory is in the way");
    fs::remove(p, ec);
  }
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    f.flush();
    if (!f) {
      fs::remove(tmp, ec);
      throw Error("cannot write " + p.string());
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot write " + p.string() + ": " + ec.message());
  }
}

// Removes the directories under `dir` that hold nothing any more, deepest first, and `dir`
// itself when `self` and it is empty.
void remove_empty_dirs(const fs::path& dir, const std::set<std::string>& candidates) {
  std::vector<std::string> order(candidates.begin(), candidates.end());
  std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& rel : order) {
    std::error_code ec;
    fs::path p = dir / rel;
    if (fs::is_directory(fs::symlink_status(p, ec)) && fs::is_empty(p, ec) && !ec) fs::remove(p, ec);
  }
}

// Every parent directory of the relative path `rel` ("cuda/x.cu" -> {"cuda"}).
void add_parents(const std::string& rel, std::set<std::string>& dirs) {
  for (fs::path p = fs::path(rel).parent_path(); !p.empty(); p = p.parent_path()) dirs.insert(p.string());
}

}  // namespace

std::vector<std::string> emission_backends() {
  std::vector<std::string> names;
  for (const EmissionBackend& b : emission_table()) names.push_back(b.name);
  return names;
}

int run_build(const Request& req, const Send& send) {
  if (req.out_dir.empty()) throw Error("build needs -o DIR");
  const Selection sel = parse_emit(req.emit.empty() ? "all" : req.emit);
  // A filter that selects nothing builds nothing (the CLI says so and exits 2).
  bool any = false;
  for (const KernelDecl* decl : registered_kernels()) any = any || matches(req.filter, decl->name);
  if (!any) {
    send({{"type", "summary"}, {"passed", 0}, {"failed", 0}, {"skipped", 0}, {"kernels", 0}, {"pipeline_ms", 0.0}});
    return 0;
  }
  // Each backend's profile (its first architecture's); the HIP architectures of one build share
  // a wavefront width, since the source depends on it.
  std::vector<codegen::TargetProfile> profiles_of(sel.backends.size());
  for (size_t i = 0; i < sel.backends.size(); ++i) {
    const std::vector<std::string> archs = archs_of(sel.backends[i], req);
    if (archs.empty()) throw Error("--hip-arch names no architecture");
    profiles_of[i] = codegen::profile_for(sel.backends[i].info->target, archs.front());
    for (const std::string& arch : archs) {
      const codegen::TargetProfile p = codegen::profile_for(sel.backends[i].info->target, arch);
      if (p.lane_width != profiles_of[i].lane_width)
        throw Error("--hip-arch " + archs.front() + "," + arch + ": " + archs.front() + " runs " +
                    std::to_string(profiles_of[i].lane_width) + "-lane wavefronts and " + arch + " " +
                    std::to_string(p.lane_width) + "-lane ones; the source differs, so build them in two runs");
    }
  }
  const fs::path out(req.out_dir);
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw Error("build -o " + req.out_dir + ": not a directory");
  const std::map<std::string, std::string> previous = owned_files(out);

  int failures = 0, written = 0, skipped = 0, kernels = 0;
  double pipeline_ms = 0;
  std::set<std::string> specialized;     // the --specialize names some kernel declares
  std::map<std::string, std::string> files;  // relative path -> content hash, this build
  auto artifact = [&](const std::string& kernel, const std::string& dtype, const std::string& target,
                      const std::string& rel, bool ok, const std::string& message) {
    send({{"type", "artifact"}, {"kernel", kernel}, {"dtype", dtype}, {"target", target},
          {"path", (out / rel).string()}, {"ok", ok}, {"message", message}});
    (ok ? written : failures)++;
  };
  auto put = [&](const std::string& rel, const std::string& bytes) {
    write_bytes(out / rel, bytes);
    files[rel] = hash_hex(bytes.data(), bytes.size());
  };

  json manifest_kernels = json::array();
  std::set<std::string> built;  // kernel names in the manifest
  // One backend's work for one instantiation: its place in the manifest, the source, the binary.
  struct Work {
    size_t kernel, inst;
    Job job;
    Output source;
    std::string entry;
    std::vector<Output> binaries;  // one per architecture
  };
  std::deque<ir::Kernel> optimized_store;  // stable addresses for the jobs
  std::vector<Work> works;
  for (const KernelDecl* decl : registered_kernels()) {
    if (!matches(req.filter, decl->name)) continue;
    json mk = {{"name", decl->name}, {"mode", mode_name(decl->mode)}, {"file", source_path(decl->file)},
               {"line", decl->line}};
    if (decl->variant) {
      json values = json::object();
      for (const auto& [axis, v] : decl->variant->values) values[axis] = variant_value_json(v);
      mk["family"] = decl->variant->family;
      mk["variant"] = values;
    }
    const std::string ir_rel = "ir/" + std::string(decl->name) + ".ir";
    const ir::Kernel* k = nullptr;
    ir::Kernel optimized;
    try {
      k = &kernel_ir(decl->name);
      auto start = std::chrono::steady_clock::now();
      optimized = rt::optimize_kernel(*k, passes::LaunchFacts{{req.threadgroup[0], req.threadgroup[1], req.threadgroup[2]}},
                                      req.specialization(*k, &specialized));
      pipeline_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      ++kernels;
    } catch (const Error& e) {
      artifact(decl->name, "", "ir", ir_rel, false, e.what());
      mk["error"] = e.what();
      manifest_kernels.push_back(mk);
      continue;
    }
    built.insert(decl->name);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(ir::content_hash(*k)));
    mk["ir_hash"] = hex;
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(ir::content_hash(optimized)));
    mk["optimized_ir_hash"] = hex;
    mk["params"] = params_json(*k);
    mk["lane_ops"] = ir::uses_lane_ops(*k);
    if (sel.ir) {
      put(ir_rel, ir::print(optimized));
      mk["ir"] = ir_rel;
      artifact(k->name, "", "ir", ir_rel, true, "");
    }
    json insts = json::array();
    const ir::Kernel& kept = optimized_store.emplace_back(std::move(optimized));
    for (Instantiation d : ir::instantiations(*k)) {
      const std::string stem = codegen::entry_name(*k, d);
      json mi = {{"dtype", instantiation_name(d)}, {"entry", stem}};
      if (!ir::has_dynamic_threadgroup(*k)) mi["threadgroup_bytes"] = ir::threadgroup_bytes(*k, d);
      for (size_t bi = 0; bi < sel.backends.size(); ++bi) {
        // Fixed-size threadgroup memory beyond what the target gives any threadgroup (Metal's
        // 32 KiB against a GEMM tile's 64): the kernel is not expressible there, which is a
        // property of the target, not a failure of the build. Named, counted, and left out; a
        // selector never picks it on such a device (it plans from the device's limit).
        // Likewise warpgroup products (wgmma) anywhere but CUDA.
        const codegen::TargetProfile& prof = profiles_of[bi];
        const uint64_t tg = ir::has_dynamic_threadgroup(*k) ? 0 : ir::threadgroup_bytes(*k, d);
        const bool wg_elsewhere = prof.target != codegen::Target::Cuda && ir::uses_warpgroup_ops(*k);
        if ((prof.max_shared_bytes != 0 && tg > prof.max_shared_bytes) || wg_elsewhere) {
          const std::string why = "not expressible on " + std::string(sel.backends[bi].info->language) + " (" +
                                  prof.arch + "): " +
                                  (wg_elsewhere ? std::string("warpgroup products (wgmma) are CUDA's")
                                                : "needs " + std::to_string(tg) +
                                                      " bytes of threadgroup memory, the target gives a threadgroup at most " +
                                                      std::to_string(prof.max_shared_bytes));
          send({{"type", "artifact"}, {"kernel", k->name}, {"dtype", instantiation_name(d)},
                {"target", sel.backends[bi].name}, {"path", ""}, {"ok", true}, {"skipped", true}, {"message", why}});
          ++skipped;
          mi["outputs"][sel.backends[bi].name] = json::array({json{{"target", sel.backends[bi].name}, {"skipped", why}}});
          continue;
        }
        Work w{manifest_kernels.size(), insts.size(), Job{kept, d, stem, req, sel.backends[bi], profiles_of[bi]}, {}, {}, {}};
        w.source = emit_source(w.job, w.entry);
        works.push_back(std::move(w));
      }
      insts.push_back(mi);
    }
    mk["instantiations"] = insts;
    manifest_kernels.push_back(mk);
  }

  // The compiles, on several threads; results land in their work item, so the tree and the
  // messages come out in one order whatever the threads do.
  std::vector<std::pair<size_t, std::string>> to_compile;  // work item, architecture
  for (size_t i = 0; i < works.size(); ++i) {
    Work& w = works[i];
    const EmissionBackend& b = w.job.backend;
    if (!b.has_binary() || !w.source.ok || (req.no_compile && b.binary_optional())) continue;
    const std::vector<std::string> archs = archs_of(b, req);
    w.binaries.resize(archs.size());
    for (const std::string& arch : archs) to_compile.emplace_back(i, arch);
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < to_compile.size();) {
      Work& w = works[to_compile[i].first];
      const std::vector<std::string> archs = archs_of(w.job.backend, req);
      const size_t slot = size_t(std::find(archs.begin(), archs.end(), to_compile[i].second) - archs.begin());
      w.binaries[slot] = compile(w.job, w.source, w.entry, to_compile[i].second);
    }
  };
  std::vector<std::thread> threads;
  const size_t n_threads = std::min(rt::compile_threads(), to_compile.size());
  for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();

  for (Work& w : works) {
    json& mi = manifest_kernels[w.kernel]["instantiations"][w.inst];
    const std::string kernel = manifest_kernels[w.kernel]["name"], dtype = mi["dtype"];
    json list = json::array();
    std::vector<Output*> produced{&w.source};
    for (Output& b : w.binaries) produced.push_back(&b);
    for (Output* o : produced) {
      if (o->ok) put(o->path, o->bytes);
      artifact(kernel, dtype, o->target, o->path, o->ok, o->message);
      json f = {{"target", o->target}, {"path", o->path}};
      if (o->ok) f["xxh3_128"] = files[o->path];
      else f["error"] = o->message;
      list.push_back(f);
    }
    mi["outputs"][w.job.backend.name] = list;
  }
  // A name no kernel declares specialize() is a typo, not a request to build generic code.
  for (const auto& [name, text] : req.specialize)
    if (!specialized.count(name))
      throw Error("--specialize " + name + "=" + text + ": no kernel built here declares a scalar '" + name +
                  "' specialize()");

  // Variant families whose kernels were built, and the selectors of the families asked for.
  json families = json::array();
  for (const VariantFamilyInfo& f : registered_variant_families()) {
    json variants = json::array();
    for (const KernelVariant* v : f.variants)
      if (built.count(v->name)) variants.push_back(v->name);
    if (variants.empty()) continue;
    json axes = json::array();
    for (const VariantAxis& axis : f.decl->axes) {
      json values = json::array();
      for (const VariantValue& v : axis.values) values.push_back(variant_value_json(v));
      axes.push_back({{"name", axis.name}, {"values", values}});
    }
    families.push_back({{"name", f.decl->family}, {"suffix", f.decl->suffix}, {"axes", axes},
                        {"variants", variants}, {"file", source_path(f.decl->file)}, {"line", f.decl->line}});
  }
  // Selector rows: the family's plan for each representative call, on the reference device of
  // each backend built (the CUDA one for a manifest-only build).
  std::vector<std::pair<std::string, DeviceInfo>> profiles;
  for (size_t i = 0; i < sel.backends.size(); ++i)
    profiles.emplace_back(sel.backends[i].name, reference_device(sel.backends[i], profiles_of[i]));
  if (profiles.empty()) {
    const EmissionBackend cuda = emission_table().front();
    profiles.emplace_back(cuda.name, reference_device(cuda, codegen::profile_for(cuda.info->target, req.arch)));
  }
  json profiles_json = json::array();
  for (const auto& [name, dev] : profiles) profiles_json.push_back(profile_json(name, dev));
  json selectors = json::array();
  for (const SelectorDecl* s : registered_selectors()) {
    if (!matches(req.filter, s->family)) continue;
    json rows = json::array();
    for (const Call& c : representative_calls(s->family)) {
      json args = json::object();
      for (const auto& [n, v] : c.args) args[n] = scalar_json(v);
      for (const auto& [name, dev] : profiles) {
        json row = {{"dtype", instantiation_name(c.dtype)}, {"args", args}, {"profile", name}};
        try {
          row["plan"] = plan_json(plan_launch(s->family, c, dev));
        } catch (const Error& e) {
          row["error"] = e.what();
        }
        rows.push_back(row);
      }
    }
    selectors.push_back({{"family", s->family}, {"file", source_path(s->file)}, {"line", s->line}, {"rows", rows}});
  }

  // Files the previous build of this directory owned and this one did not write: removed, when
  // they still hold what that build wrote.
  std::set<std::string> dirs;
  for (const auto& [rel, hash] : previous) {
    if (files.count(rel)) continue;
    if (file_hash(out, rel) == hash) fs::remove(out / rel, ec);
    add_parents(rel, dirs);
  }
  remove_empty_dirs(out, dirs);

  json file_list = json::array();
  for (const auto& [rel, hash] : files) {
    std::error_code size_ec;
    file_list.push_back({{"path", rel}, {"bytes", fs::file_size(out / rel, size_ec)}, {"xxh3_128", hash}});
  }
  json options = {{"emit", sel.names}, {"arch", req.arch}, {"compiled", !req.no_compile}};
  if (req.threadgroup[0]) options["threadgroup"] = json::array({req.threadgroup[0], req.threadgroup[1], req.threadgroup[2]});
  if (!req.filter.empty()) options["filter"] = req.filter;
  json spec = json::object();
  for (const auto& [name, text] : req.specialize) spec[name] = text;
  if (!spec.empty()) options["specialize"] = spec;
  json manifest = {{"iron_build_manifest", kManifestFormat}, {"options", options},
                   {"profiles", profiles_json},     {"kernels", manifest_kernels},
                   {"families", families},           {"selectors", selectors},
                   {"files", file_list}};
  write_bytes(out / kManifestName, manifest.dump(1) + "\n");
  artifact("", "", "manifest", kManifestName, true, "");
  send({{"type", "summary"}, {"passed", written}, {"failed", failures}, {"skipped", skipped}, {"kernels", kernels},
        {"pipeline_ms", pipeline_ms}});
  return failures == 0 ? 0 : 1;
}

int run_clean(const std::vector<std::string>& dirs, bool keep_cache, const Send& send) {
  auto text = [&](const std::string& line) { send({{"type", "text"}, {"text", line + "\n"}}); };
  // Every directory is checked before anything is removed: a wrong name removes nothing.
  std::vector<std::map<std::string, std::string>> owned;
  for (const std::string& d : dirs) {
    bool found = false;
    std::string why;
    owned.push_back(owned_files(d, &found, &why));
    if (!found) throw Error("clean " + d + ": " + why + " (only a directory iron build wrote can be cleaned)");
  }
  for (size_t i = 0; i < dirs.size(); ++i) {
    const fs::path dir(dirs[i]);
    std::set<std::string> parents;
    int n = 0, kept = 0;
    for (const auto& [rel, hash] : owned[i]) {
      add_parents(rel, parents);
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(dir / rel, ec))) continue;
      if (file_hash(dir, rel) != hash) {
        ++kept;
        text("kept " + (dir / rel).string() + ": not the file iron build wrote (changed since, or behind a link)");
        continue;
      }
      if (fs::remove(dir / rel, ec)) ++n;
    }
    std::error_code ec;
    fs::remove(dir / kManifestName, ec);
    remove_empty_dirs(dir, parents);
    if (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)) fs::remove(dir, ec);
    text("removed " + std::to_string(n) + " files iron build wrote in " + dir.string() +
         (kept ? " (" + std::to_string(kept) + (kept == 1 ? " changed file" : " changed files") + " kept)" : ""));
  }
  if (!keep_cache) {
    rt::DiskCache& cache = rt::DiskCache::instance();
    if (!cache.enabled()) {
      text("compile cache: off (IRON_NO_DISK_CACHE), nothing to remove");
    } else {
      rt::DiskCache::Cleared c = cache.clear();
      text("compile cache " + cache.dir() + ": removed " + std::to_string(c.entries) + " entries (" +
           std::to_string(c.bytes) + " bytes)" +
           (c.others ? ", left " + std::to_string(c.others) + " other files" : ""));
    }
  }
  return 0;
}

}  // namespace iron::build
