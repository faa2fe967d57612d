// Iron's C ABI (include/iron/c_api.h): opaque handles over Context, DeviceBuffer and LaunchPlan,
// JSON for everything structured, and every C++ exception turned into -1 plus a thread-local
// message. The Python package (python/iron) is its one user in the tree.
#include "iron/c_api.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ir.hpp"
#include "core/numeric.hpp"
#include "iron/dlpack.hpp"
#include "iron/launch.hpp"
#include "iron/registry.hpp"
#include "iron/runtime.hpp"

#ifndef IRON_VERSION
#define IRON_VERSION "unknown"
#endif

struct iron_context {
  std::unique_ptr<iron::Context> ctx;
  std::mutex mu;  // calls on one context are serialized
};

struct iron_buffer {
  iron::DeviceBuffer buf;
};

struct iron_plan {
  std::string family;
  iron::Instantiation dtype;
  iron::LaunchPlan plan;
  std::vector<const iron::ir::Kernel*> kernels;  // per step (registry kernels live for the process)
  std::vector<std::string> buffers;              // the call's buffers, in first-use order
  std::string json;
};

namespace {

using iron::Error;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

thread_local std::string t_error;
thread_local std::string t_kernels, t_families, t_kernel, t_devices, t_info;

int fail(const std::string& message) {
  t_error = message;
  return -1;
}

// Runs f; any exception becomes -1 with its message.
template <class F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("unknown error (a non-standard exception)");
  }
}

void need(const void* p, const char* what) {
  if (!p) throw Error(std::string(what) + " is NULL");
}

iron::Backend backend_of(const char* name) {
  need(name, "the backend name");
  iron::Backend b;
  if (!iron::parse_backend(name, b))
    throw Error("unknown backend '" + std::string(name) + "' (known: cuda, vulkan, interp, hip)");
  return b;
}

iron::DType dtype_of(const char* name, const char* what) {
  need(name, what);
  iron::DType d;
  if (!iron::parse_dtype(name, d) || iron::is_type_param(d) || d == iron::DType::Void)
    throw Error(std::string(what) + " '" + name + "' is not a dtype (f32, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, f8e4m3, f8e5m2)");
  return d;
}

ordered_json device_json(const iron::DeviceInfo& d) {
  ordered_json j;
  j["backend"] = iron::backend_name(d.backend);
  j["name"] = d.name;
  j["arch"] = d.arch;
  j["driver"] = d.driver;
  j["lane_width"] = d.lane_width;
  j["max_threads_per_group"] = d.max_threads_per_group;
  j["max_group_size"] = {d.max_group_size.x, d.max_group_size.y, d.max_group_size.z};
  j["max_grid"] = {d.max_grid.x, d.max_grid.y, d.max_grid.z};
  j["shared_memory_bytes"] = d.shared_memory_bytes;
  j["shared_memory_optin_bytes"] = d.shared_memory_optin_bytes;
  j["memory_bytes"] = d.memory_bytes;
  j["f16"] = d.f16;
  j["bf16"] = d.bf16;
  j["int8"] = d.int8;
  j["int16"] = d.int16;
  j["int64"] = d.int64;
  return j;
}

json dtype_list(const std::vector<iron::DType>& ds) {
  json a = json::array();
  for (iron::DType d : ds) a.push_back(iron::dtype_name(d));
  return a;
}

// The dtype a parameter has at an instantiation (T and W substituted).
iron::DType resolved(iron::DType d, iron::Instantiation in) {
  if (d == iron::DType::Generic) return in.t;
  if (d == iron::DType::GenericW) return in.w;
  return d;
}

// Elements of buffer parameter p that a step's launch touches (the validator's extent rule).
uint64_t step_extent(const iron::ir::Kernel& k, const iron::ir::Param& p, const iron::LaunchStep& s) {
  uint64_t extent = p.extent_factor;
  for (uint32_t idx : p.extent_scalars) {
    const std::string& name = k.params[idx].name;
    auto it = s.constexprs.find(name);
    if (it == s.constexprs.end()) throw Error("step " + s.kernel + " leaves scalar '" + name + "' unset");
    const iron::ScalarValue& v = it->second;
    uint64_t n = v.kind() == iron::ScalarValue::Kind::UInt ? v.u()
                 : v.kind() == iron::ScalarValue::Kind::Int && v.i() >= 0 ? uint64_t(v.i())
                                                                          : 0;
    if (!iron::num::checked_mul(extent, n, extent))
      throw Error("the extent of buffer '" + p.name + "' of " + s.kernel + " overflows 64 bits");
  }
  return extent;
}

iron::ScalarValue scalar_of(const std::string& name, const json& v) {
  if (v.is_number_unsigned()) return iron::ScalarValue(v.get<unsigned long long>());
  if (v.is_number_integer()) return iron::ScalarValue(v.get<long long>());
  if (v.is_number_float()) return iron::ScalarValue(v.get<double>());
  if (v.is_boolean()) return iron::ScalarValue(v.get<bool>() ? 1 : 0);
  throw Error("call argument '" + name + "' is " + std::string(v.type_name()) + ", not a number");
}

json scalar_json(const iron::ScalarValue& v) {
  switch (v.kind()) {
    case iron::ScalarValue::Kind::Int: return v.i();
    case iron::ScalarValue::Kind::UInt: return v.u();
    case iron::ScalarValue::Kind::Float: break;
    case iron::ScalarValue::Kind::Blob: case iron::ScalarValue::Kind::TensorMap: return v.text();
  }
  return v.f();
}

// Fills the plan's buffer table and JSON after plan_launch.
void describe_plan(iron_plan& p) {
  std::set<std::string> scratch;
  ordered_json scratch_j = ordered_json::array();
  for (const iron::ScratchBuffer& b : p.plan.scratch) {
    scratch.insert(b.name);
    scratch_j.push_back({{"name", b.name}, {"dtype", iron::dtype_name(b.dtype)}, {"count", b.count}});
    if (b.zeroed) scratch_j.back()["zeroed"] = true;
  }
  struct Use {
    iron::DType dtype = iron::DType::Void;
    uint64_t count = 0;
    bool read = false, written = false, output = false;
  };
  std::vector<std::pair<std::string, Use>> uses;
  ordered_json steps = ordered_json::array();
  for (size_t i = 0; i < p.plan.steps.size(); ++i) {
    const iron::LaunchStep& s = p.plan.steps[i];
    const iron::ir::Kernel& k = *p.kernels[i];
    ordered_json scalars = ordered_json::object();
    for (const auto& [name, v] : s.constexprs) scalars[name] = scalar_json(v);
    steps.push_back({{"kernel", s.kernel},
                     {"grid", {s.grid.x, s.grid.y, s.grid.z}},
                     {"threadgroup", {s.threadgroup.x, s.threadgroup.y, s.threadgroup.z}},
                     {"scalars", scalars}});
    for (const iron::ir::Param& prm : k.params) {
      if (prm.kind != iron::ir::ParamKind::Buffer) continue;
      const std::string& name = iron::step_buffer(s, prm.name);
      if (scratch.count(name)) continue;
      const iron::DType dt = resolved(prm.dtype, p.dtype);
      const uint64_t extent = step_extent(k, prm, s);
      auto it = std::find_if(uses.begin(), uses.end(), [&](const auto& u) { return u.first == name; });
      const bool first = it == uses.end();
      if (first) {
        uses.emplace_back(name, Use{});
        it = uses.end() - 1;
        it->second.dtype = dt;
        it->second.output = prm.access == iron::ir::Access::Write;
      } else if (it->second.dtype != dt) {
        throw Error("family " + p.family + ": buffer '" + name + "' is " + iron::dtype_name(it->second.dtype) +
                    " in an earlier step and " + iron::dtype_name(dt) + " in step " + std::to_string(i + 1) + " (" +
                    s.kernel + ")");
      }
      Use& u = it->second;
      u.count = std::max(u.count, extent);
      if (prm.access != iron::ir::Access::Write) u.read = true;
      if (prm.access != iron::ir::Access::Read) u.written = true;
    }
  }
  ordered_json bufs = ordered_json::array();
  for (const auto& [name, u] : uses) {
    p.buffers.push_back(name);
    bufs.push_back({{"name", name},
                    {"dtype", iron::dtype_name(u.dtype)},
                    {"count", u.count},
                    {"access", u.read && u.written ? "inout" : u.written ? "out" : "in"},
                    {"output", u.output}});
  }
  ordered_json j;
  j["family"] = p.family;
  j["dtype"] = iron::instantiation_name(p.dtype);
  j["reason"] = p.plan.reason;
  j["describe"] = p.plan.describe();
  j["steps"] = steps;
  j["buffers"] = bufs;
  j["scratch"] = scratch_j;
  p.json = j.dump();
}

}  // namespace

extern "C" {

int iron_api_version(void) { return IRON_C_API_VERSION; }

const char* iron_version(void) { return IRON_VERSION; }

const char* iron_last_error(void) { return t_error.c_str(); }

const char* iron_kernels_json(void) {
  json a = json::array();
  for (const iron::KernelDecl* d : iron::registered_kernels()) {
    json k;
    k["name"] = d->name;
    k["mode"] = iron::mode_name(d->mode);
    k["dtypes"] = dtype_list(d->dtypes);
    k["wtypes"] = dtype_list(d->wtypes);
    k["family"] = d->variant ? json(d->variant->family) : json(nullptr);
    k["variant"] = d->variant ? d->variant->describe() : std::string();
    k["file"] = iron::source_path(d->file);
    k["line"] = d->line;
    a.push_back(std::move(k));
  }
  t_kernels = a.dump();
  return t_kernels.c_str();
}

const char* iron_families_json(void) {
  json a = json::array();
  for (const iron::SelectorDecl* s : iron::registered_selectors())
    a.push_back({{"family", s->family}, {"file", iron::source_path(s->file)}, {"line", s->line}});
  t_families = a.dump();
  return t_families.c_str();
}

int iron_kernel_json(const char* name, const char** out) {
  return guarded([&] {
    need(name, "the kernel name");
    need(out, "out");
    const iron::KernelDecl* d = iron::find_kernel_decl(name);
    if (!d) throw Error("no kernel named '" + std::string(name) + "' (iron_kernels_json lists them)");
    const iron::ir::Kernel& k = iron::kernel_ir(name);
    ordered_json j;
    j["name"] = k.name;
    j["mode"] = iron::mode_name(k.mode);
    j["dtypes"] = dtype_list(k.dtypes);
    j["wtypes"] = dtype_list(k.wtypes);
    ordered_json params = ordered_json::array();
    for (const iron::ir::Param& p : k.params) {
      ordered_json pj;
      pj["name"] = p.name;
      pj["kind"] = iron::ir::param_kind_name(p.kind);
      pj["dtype"] = iron::dtype_name(p.dtype);
      if (p.kind == iron::ir::ParamKind::Buffer) {
        pj["access"] = iron::ir::access_name(p.access);
        std::string extent = p.extent_factor != 1 || p.extent_scalars.empty() ? std::to_string(p.extent_factor) : "";
        for (uint32_t s : p.extent_scalars) extent += (extent.empty() ? "" : "*") + k.params[s].name;
        pj["extent"] = extent;
      }
      params.push_back(std::move(pj));
    }
    j["params"] = params;
    t_kernel = j.dump();
    *out = t_kernel.c_str();
  });
}

int iron_devices_json(const char* backend, const char** out) {
  return guarded([&] {
    need(out, "out");
    std::string why;
    std::vector<iron::DeviceInfo> devs = iron::list_devices(backend_of(backend), &why);
    ordered_json a = ordered_json::array();
    for (const iron::DeviceInfo& d : devs) a.push_back(device_json(d));
    t_devices = a.dump();
    t_error = devs.empty() ? why : std::string();
    *out = t_devices.c_str();
  });
}

int iron_context_create(const char* backend, int index, iron_context** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    auto c = std::make_unique<iron_context>();
    c->ctx = iron::Context::create(backend_of(backend), index);
    *out = c.release();
  });
}

void iron_context_destroy(iron_context* ctx) { delete ctx; }

int iron_context_info_json(iron_context* ctx, const char** out) {
  return guarded([&] {
    need(ctx, "the context");
    need(out, "out");
    t_info = device_json(ctx->ctx->info()).dump();
    *out = t_info.c_str();
  });
}

int iron_context_synchronize(iron_context* ctx) {
  return guarded([&] {
    need(ctx, "the context");
    std::lock_guard lock(ctx->mu);
    ctx->ctx->synchronize();
  });
}

int iron_buffer_alloc(iron_context* ctx, const char* dtype, uint64_t count, iron_buffer** out) {
  return guarded([&] {
    need(ctx, "the context");
    need(out, "out");
    *out = nullptr;
    const iron::DType d = dtype_of(dtype, "buffer dtype");
    std::lock_guard lock(ctx->mu);
    *out = new iron_buffer{ctx->ctx->alloc(d, size_t(count))};
  });
}

int iron_buffer_from_dlpack(iron_context* ctx, void* dl_managed_tensor, iron_buffer** out) {
  return guarded([&] {
    need(ctx, "the context");
    need(out, "out");
    *out = nullptr;
    std::lock_guard lock(ctx->mu);
    iron::DeviceBuffer b = ctx->ctx->from_dlpack(static_cast<DLManagedTensor*>(dl_managed_tensor));
    *out = new iron_buffer{std::move(b)};
  });
}

int iron_buffer_upload(iron_context* ctx, iron_buffer* buf, const void* data, uint64_t bytes) {
  return guarded([&] {
    need(ctx, "the context");
    need(buf, "the buffer");
    if (bytes) need(data, "the data");
    if (bytes != buf->buf.bytes())
      throw Error("upload of " + std::to_string(bytes) + " bytes into a buffer of " + std::to_string(buf->buf.bytes()) +
                  " bytes (" + std::to_string(buf->buf.count()) + " " + iron::dtype_name(buf->buf.dtype()) + ")");
    std::lock_guard lock(ctx->mu);
    ctx->ctx->upload(buf->buf, data, size_t(bytes));
  });
}

int iron_buffer_download(iron_context* ctx, iron_buffer* buf, void* data, uint64_t bytes) {
  return guarded([&] {
    need(ctx, "the context");
    need(buf, "the buffer");
    if (bytes) need(data, "the data");
    if (bytes != buf->buf.bytes())
      throw Error("download of " + std::to_string(bytes) + " bytes from a buffer of " + std::to_string(buf->buf.bytes()) +
                  " bytes (" + std::to_string(buf->buf.count()) + " " + iron::dtype_name(buf->buf.dtype()) + ")");
    std::lock_guard lock(ctx->mu);
    ctx->ctx->download(buf->buf, data, size_t(bytes));
  });
}

uint64_t iron_buffer_count(const iron_buffer* buf) { return buf ? buf->buf.count() : 0; }

const char* iron_buffer_dtype(const iron_buffer* buf) { return buf ? iron::dtype_name(buf->buf.dtype()) : ""; }

void iron_buffer_release(iron_buffer* buf) { delete buf; }

int iron_plan_create(iron_context* ctx, const char* family, const char* dtype, const char* args_json,
                     const char* buffer_dtypes_json, iron_plan** out) {
  return guarded([&] {
    need(ctx, "the context");
    need(family, "the family name");
    need(out, "out");
    *out = nullptr;
    auto p = std::make_unique<iron_plan>();
    p->family = family;
    iron::Call call;
    if (args_json && *args_json) {
      json args;
      try {
        args = json::parse(args_json);
      } catch (const json::exception& e) {
        throw Error(std::string("the call's arguments are not JSON: ") + e.what());
      }
      if (!args.is_object()) throw Error("the call's arguments must be a JSON object of names to numbers");
      for (const auto& [name, v] : args.items()) call.args[name] = scalar_of(name, v);
    }
    std::string inferred;  // how the dtype was found, for errors
    if (dtype && *dtype) {
      if (!iron::parse_instantiation(dtype, call.dtype) || iron::is_type_param(call.dtype.t) ||
          call.dtype.t == iron::DType::Void)
        throw Error("dtype '" + std::string(dtype) + "' is not an instantiation ('f16', or 'f32,bf16' for T and W)");
    } else {
      ordered_json bufs;
      if (buffer_dtypes_json && *buffer_dtypes_json) {
        try {
          bufs = ordered_json::parse(buffer_dtypes_json);
        } catch (const ordered_json::exception& e) {
          throw Error(std::string("the buffer dtypes are not JSON: ") + e.what());
        }
      }
      if (!bufs.is_array() || bufs.empty() || !bufs[0].is_array() || bufs[0].size() != 2 || !bufs[0][0].is_string() ||
          !bufs[0][1].is_string())
        throw Error("family " + p->family + ": no dtype given and no buffer to infer it from (pass a dtype, e.g. 'f16')");
      const std::string first = bufs[0][0].get<std::string>(), dt = bufs[0][1].get<std::string>();
      call.dtype = iron::Instantiation(dtype_of(dt.c_str(), ("the dtype of buffer '" + first + "'").c_str()));
      inferred = " (dtype " + dt + " inferred from buffer '" + first +
                 "'; pass dtype to choose T, or 'T,W' for a family generic over two types)";
    }
    p->dtype = call.dtype;
    {
      std::lock_guard lock(ctx->mu);
      try {
        p->plan = iron::plan_launch(family, call, ctx->ctx->info());
      } catch (const Error& e) {
        throw Error(e.what() + inferred);
      }
    }
    for (const iron::LaunchStep& s : p->plan.steps) {
      if (s.library)
        throw Error("the plan of " + std::string(family) + " runs the library routine " + s.kernel + " (" +
                    p->plan.reason + "), which the C API does not run: pass vendor=0 in the call or set IRON_GEMM_VENDOR=0");
      p->kernels.push_back(&iron::kernel_ir(s.kernel));
    }
    describe_plan(*p);
    *out = p.release();
  });
}

const char* iron_plan_json(const iron_plan* plan) { return plan ? plan->json.c_str() : ""; }

int iron_plan_run(iron_context* ctx, const iron_plan* plan, size_t n, const char* const* names,
                  iron_buffer* const* buffers, uint64_t stream) {
  return guarded([&] {
    need(ctx, "the context");
    need(plan, "the plan");
    if (n) {
      need(names, "the buffer names");
      need(buffers, "the buffers");
    }
    const std::string head = "family " + plan->family + " at " + iron::instantiation_name(plan->dtype);
    iron::Bindings call;
    for (size_t i = 0; i < n; ++i) {
      need(names[i], "a buffer name");
      if (!buffers[i]) throw Error(head + ": buffer '" + std::string(names[i]) + "' is NULL");
      const std::string name = names[i];
      if (std::find(plan->buffers.begin(), plan->buffers.end(), name) == plan->buffers.end()) {
        std::string have;
        for (const std::string& b : plan->buffers) have += (have.empty() ? "" : ", ") + b;
        throw Error(head + ": the call passes buffer '" + name + "', which no step of the plan binds (it binds: " + have + ")");
      }
      for (const auto& [other, b] : call)
        if (other == name) throw Error(head + ": the call passes buffer '" + name + "' twice");
      call.emplace_back(name, buffers[i]->buf);
    }
    for (const std::string& b : plan->buffers) {
      bool found = false;
      for (const auto& [name, buf] : call) found = found || name == b;
      if (!found) throw Error(head + ": the call does not pass buffer '" + b + "', which the plan binds");
    }
    std::lock_guard lock(ctx->mu);
    iron::Context& c = *ctx->ctx;
    const iron::Stream s = c.wrap_stream(reinterpret_cast<void*>(uintptr_t(stream)));
    iron::Bindings all = call;
    // A pooled buffer holds a previous owner's bytes: a scratch buffer the plan needs zero is
    // cleared on the call's stream each call.
    for (const iron::ScratchBuffer& b : plan->plan.scratch) {
      all.emplace_back(b.name, c.alloc_pooled(b.dtype, b.count, s));
      if (b.zeroed) iron::zero_scratch(c, all.back().second, s);
    }
    for (size_t i = 0; i < plan->plan.steps.size(); ++i) {
      const iron::LaunchStep& st = plan->plan.steps[i];
      const iron::ir::Kernel& k = *plan->kernels[i];
      const std::string at = head + ", step " + std::to_string(i + 1) + " (" + st.kernel + ")";
      iron::Bindings bind;
      for (const iron::ir::Param& prm : k.params) {
        if (prm.kind != iron::ir::ParamKind::Buffer) continue;
        const std::string& want = iron::step_buffer(st, prm.name);
        for (const auto& [name, buf] : all)
          if (name == want) {
            bind.emplace_back(prm.name, buf);
            break;
          }
      }
      try {
        c.dispatch_with_grid(k, plan->dtype, bind, iron::step_scalars(st, all), st.grid, st.threadgroup, s);
      } catch (const Error& e) {
        throw Error(at + ": " + e.what());
      }
    }
  });
}

void iron_plan_destroy(iron_plan* plan) { delete plan; }

}  // extern "C"
