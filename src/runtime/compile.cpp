// The one compile path (compile.hpp).
#include "runtime/compile.hpp"

#include <cstring>

#include "runtime/device.hpp"

namespace iron::rt {

ir::Kernel optimize_kernel(const ir::Kernel& traced, const passes::LaunchFacts& launch, const passes::Specialization& spec) {
  return passes::optimize(traced, launch, spec);
}

Compiled compile_optimized(const ir::Kernel& optimized, Instantiation dtype, const codegen::TargetProfile& profile,
                           const codegen::EmitOptions& options, bool compile) {
  Compiled out;
  out.kernel = optimized;
  const codegen::TargetInfo& info = codegen::target_info(profile.target);
  const std::string what = "kernel '" + optimized.name + "' (" + instantiation_name(dtype) + ")";
  if (ir::Diagnostics d = codegen::lower_for_target(out.kernel, dtype, profile); !d.empty()) {
    out.error = d.render(out.kernel);
    return out;
  }
  out.emitted = codegen::emit(out.kernel, dtype, profile, options);
  if (!out.emitted.ok()) {
    out.error = what + " cannot be emitted as " + info.language + ":\n" + out.emitted.diags.render(out.kernel);
    return out;
  }
  if (!compile) return out;
  const std::string& src = out.emitted.source;
  switch (info.compiler) {
    case codegen::OfflineCompiler::Nvrtc: {
      NvrtcResult r = nvrtc_compile(src, out.emitted.entry, profile.arch);
      out.log = r.ok ? r.log : codegen::locate_compile_log(r.log, out.emitted, out.kernel);
      if (!r.ok) out.error = "NVRTC failed to compile " + what + " for " + profile.arch + ":\n" + out.log;
      else out.binary = std::move(r.cubin);
      break;
    }
    case codegen::OfflineCompiler::Glslang: {
      codegen::Spirv s = codegen::compile_glsl(src, codegen::entry_name(out.kernel, dtype));
      out.log = s.ok ? s.log : codegen::locate_compile_log(s.log, out.emitted, out.kernel);
      if (!s.ok) {
        out.error = "GLSL -> SPIR-V failed for " + what + ":\n" + out.log;
      } else {
        out.binary.resize(s.words.size() * sizeof(uint32_t));
        std::memcpy(out.binary.data(), s.words.data(), out.binary.size());
      }
      break;
    }
    case codegen::OfflineCompiler::HipClang: {
      codegen::HipObject o = codegen::compile_hip(src, profile.arch, out.emitted.entry);
      out.log = o.ok ? o.log : codegen::locate_compile_log(o.log, out.emitted, out.kernel);
      if (!o.ok) out.error = "the HIP compile of " + what + " for " + profile.arch + " failed:\n" + out.log;
      else out.binary = std::move(o.code);
      break;
    }
    case codegen::OfflineCompiler::HostSyntax:
      break;  // no code generator on this platform: the source is the artefact
  }
  return out;
}

Compiled compile_kernel(const ir::Kernel& traced, Instantiation dtype, const codegen::TargetProfile& profile,
                        const codegen::EmitOptions& options, const passes::LaunchFacts& launch,
                        const passes::Specialization& spec, bool compile) {
  return compile_optimized(optimize_kernel(traced, launch, spec), dtype, profile, options, compile);
}

}  // namespace iron::rt
