// Codegen entry points: emit CUDA C++ or GLSL 450 from verified IR for one concrete dtype,
// and compile GLSL to validated SPIR-V. Emission is deterministic: same kernel, same bytes.
//
// Binding conventions the runtime relies on:
//  CUDA:  extern "C" __global__ void <entry>(...) with every kernel parameter in declaration
//         order: buffers as device pointers, scalars by value (u32 / i32 / f32).
//  GLSL:  buffer parameter number i (counting buffers only, in declaration order) is
//         `layout(set = 0, binding = i) buffer`; scalars live in one push-constant block, 4 bytes
//         each, in declaration order (offset 4 * scalar index); the threadgroup size comes from
//         specialization constants 0, 1, 2 (local_size_x_id/y_id/z_id). With
//         EmitOptions::loop_limit_check, binding <number of buffers> is the loop status buffer.
//  Both:  every op has the result docs/semantics.md defines, on every input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/target.hpp"
#include "core/ir.hpp"

namespace iron::codegen {

struct Emitted {
  std::string source;
  std::string entry;        // entry-point name (CUDA, MSL) / "main" (GLSL)
  ir::Diagnostics diags;    // ops the dialect cannot express, located; empty on success
  // The DSL location of every line of `source` (index = line number - 1): the instruction whose
  // statement the emitter printed there; {0, 0} for the prelude, helpers and closing lines.
  std::vector<ir::SrcLoc> line_locs;
  bool ok() const { return diags.empty(); }
  ir::SrcLoc dsl_loc(size_t line) const {
    return line >= 1 && line <= line_locs.size() ? line_locs[line - 1] : ir::SrcLoc{};
  }
};

// A compiler's messages about emitted source with each located message (NVRTC "name(12): error",
// glslang "ERROR: 0:12:", clang "file.hip:12:5: error") followed by the DSL file:line whose
// instruction produced source line 12, or by a note that the line is Iron's generated prelude.
// `k` is the kernel `e` was emitted from (its file table names the DSL files).
std::string locate_compile_log(const std::string& log, const Emitted& e, const ir::Kernel& k);

// How cooperative tiles lower on CUDA (the MmaStrategy, docs/dsl.md "Cooperative tiles"). Auto
// lets the architecture NVRTC compiles for choose: mma.sync m16n8k16 on sm_80+, wmma 16x16x16 on
// sm_70+ (f16 only below sm_80), the software path otherwise. A forced strategy the
// architecture cannot run is a compile error naming it. IRON_CUDA_MMA=software|wmma|mma sets it.
// The CUDA values of MmaStrategy (target.hpp).
using CudaMma = MmaStrategy;
const char* cuda_mma_name(CudaMma m);           // "auto", "software", "wmma", "mma"
bool parse_cuda_mma(std::string_view s, CudaMma& out);
// The strategy IRON_CUDA_MMA names (Auto when unset); throws iron::Error naming a bad value.
CudaMma cuda_mma_from_env();

// How cooperative tiles lower on Vulkan: the software path (fragments in shared-memory slots,
// bit-exact with the interpreter) or NV cooperative matrices (GL_NV_cooperative_matrix: f16
// inputs, 16x16x16, f32 accumulation, where the device reports that configuration; bf16 tiles
// always take the software path). Auto picks coopmat where the device has it.
// IRON_VK_MMA=software|coopmat forces one; forcing coopmat where the device or the kernel's
// element type cannot take it is an error naming why.
enum class VkMma : uint8_t { Auto, Software, Coopmat };
const char* vk_mma_name(VkMma m);  // "auto", "software", "coopmat"
bool parse_vk_mma(std::string_view s, VkMma& out);
VkMma vk_mma_from_env();  // throws iron::Error naming a bad value

// Target-specific emission choices, from the device that will run the code.
struct EmitOptions {
  // GLSL only: the driver ends loops early after a fixed iteration budget (lavapipe: 65,535 per
  // subgroup, over all loops; see kLoopLimitText). Each loop then checks, after it ends, that its
  // condition really failed; if not it sets a status buffer at binding = number of buffer
  // parameters: `IronLoopStatus { uint data[4]; }` with data[0] = 1, data[1] = the loop's DSL
  // line, data[2] = its file index (Kernel::files). The runtime turns that into an error.
  bool loop_limit_check = false;
  // GLSL only: the driver's fma rounds twice (lavapipe: a multiply and an add). `fma` is then
  // emulated with one rounding through f64 (needs shaderFloat64): the exact product plus the
  // addend, rounded to odd in f64, then to f32.
  bool emulate_fma = false;
  // GLSL only: every register array is filled with a poison pattern where it is declared (floats
  // a NaN, integers 0xA5A5A5A5), so a read of a slot nobody wrote shows in the result. lavapipe
  // keeps register arrays on its CPU stack and reuses the stack between invocations, so such a
  // read would otherwise often see the value an earlier run of the same shader left there (the
  // interpreter reports the read itself). Set for lavapipe; real GPUs leave it off (no cost).
  bool poison_register_arrays = false;
  // GLSL only: SPIR-V float-controls execution modes (SPV_KHR_float_controls), each for a device
  // that reports support (VkPhysicalDeviceFloatControlsProperties): SignedZeroInfNanPreserve for
  // f32 (no fast-math on NaN, Inf, -0) and RoundingModeRTE for f16 (f32 -> f16 conversions
  // round to nearest even, which Vulkan otherwise leaves to the driver).
  bool preserve_f32_specials = true;
  bool f16_round_to_nearest_even = false;
  // CUDA only: the cooperative-tile strategy.
  CudaMma cuda_mma = CudaMma::Auto;
  // CUDA only: the threadgroup shape the code is built for (x, y, z; all 0: any shape). When
  // set, the entry carries __launch_bounds__(x*y*z) and group_size (and the built-ins derived
  // from it) are constants; the code may then only be launched with that shape (the CUDA
  // device checks). Vulkan takes the shape as specialization constants instead.
  uint32_t threadgroup[3] = {0, 0, 0};
  // GLSL only: the device enabled shaderFloat64, so cooperative-tile multiply-accumulates sum
  // in f64 and round once, bit-exact with the interpreter; otherwise they sum in f32.
  bool tile_f64 = false;
  // GLSL only: lower f16 cooperative tiles to NV cooperative matrices (VkMma above).
  bool tile_coopmat = false;
  // Tests only: after the statement of the first instruction with this mnemonic (e.g. "store"),
  // a line no compiler accepts, so the located compile errors can be checked on every backend.
  std::string test_break_after_op;
};

// What lavapipe does to loops, for the error the runtime gives when a loop hit the limit.
extern const char* const kLoopLimitText;

// `dtype` substitutes the generic T. Diagnostics are collected, never thrown. The profile says
// what the code may assume of the machine (lane width, limits, tile strategy); the Target form
// takes the target's default profile (profile_for).
Emitted emit(const ir::Kernel& k, Instantiation dtype, const TargetProfile& profile, const EmitOptions& options = {});
Emitted emit(const ir::Kernel& k, Instantiation dtype, Target target, const EmitOptions& options = {});

// The per-target lowering stage (lower.cpp), run on the optimized kernel before emission by the
// compile path (runtime/compile.hpp): folds lane_width where the profile fixes the lane width,
// and reports, located and naming the kernel, a dtype the target lacks or fixed-size threadgroup
// memory beyond the profile's limit.
ir::Diagnostics lower_for_target(ir::Kernel& k, Instantiation dtype, const TargetProfile& profile);

// Threadgroup memory on CUDA: static `__shared__` arrays while the kernel's arrays all have a
// fixed size and fit the static limit (48 KiB); otherwise every array lives in one `extern
// __shared__` region (dynamic shared memory), laid out as ir::threadgroup_bytes says, and the
// launch passes the dispatch's byte count (opting in beyond 48 KiB with cuFuncSetAttribute).
constexpr uint64_t kCudaStaticSharedLimit = 48 * 1024;
bool cuda_dynamic_shared(const ir::Kernel& k, Instantiation dtype);
// Whether CUDA code compiled for `arch` ("sm_90a") begins with griddepcontrol.wait (sm_90 and
// later; the emitted source holds it under #if __CUDA_ARCH__ >= 900, the same for every arch):
// launched with a programmatic dependency (a LaunchSequence's graph edges, docs/architecture.md)
// a kernel may start before the kernel it depends on has finished, and waits there, before
// touching memory, until that kernel has completed and its writes are visible. Launched
// without one, the wait returns at once. The CUDA device uses programmatic edges only between
// kernels built with it.
bool cuda_waits_for_grid_dependency(std::string_view arch);
// Vulkan: an array sized at dispatch is declared with a specialization constant holding the
// value of its sizing scalar parameter: constant_id = kTgSpecBase + that parameter's index among
// the scalar parameters (the ids before it are the threadgroup size).
constexpr uint32_t kTgSpecBase = 3;
// Vulkan cooperative tiles: fragments (the GLSL software path) or a staging area (NV cooperative
// matrices) live in a shared array of `kib` KiB per lane group (subgroup), sized
// `kib * 256 * groups` floats. constant_id kTileGroupsSpec holds the number of lane groups (set
// by the runtime to the threadgroup's thread count divided by the subgroup size, rounded up);
// constant_id kTileSlotsSpec's default value is `kib`, which the runtime reads back from the
// SPIR-V to check the array against the device's shared-memory limit (glsl_tile_slots).
constexpr uint32_t kTileGroupsSpec = 1000;
constexpr uint32_t kTileSlotsSpec = 1001;
// The default value of constant_id kTileSlotsSpec in a SPIR-V module: the KiB per lane group of
// its tile array; 0 when the module has no tiles.
uint32_t glsl_tile_slots(const uint32_t* words, size_t count);

// Vulkan push constants: the scalar parameters in declaration order, each at the next multiple
// of its own size (4 bytes for f32, i32 and u32; 8 for i64 and u64, which need shaderInt64), as
// the GLSL block declares them with explicit offsets. `offsets` gets one entry per scalar
// parameter; the result is the block's size in bytes (a multiple of 4). Blob parameters (by-value
// structures, docs/semantics.md) follow the scalars, each as a u32 array at the next multiple of
// 4 bytes: their offsets come after the scalars' in `offsets`, in declaration order.
uint32_t push_constant_layout(const ir::Kernel& k, std::vector<uint32_t>& offsets);

// Mangled entry-point name: <kernel>_<dtype>, e.g. iron_add_f16.
std::string entry_name(const ir::Kernel& k, Instantiation dtype);

struct Spirv {
  std::vector<uint32_t> words;
  std::string log;          // compiler / validator messages
  bool ok = false;
};
// GLSL 450 compute source -> SPIR-V 1.3 (Vulkan 1.1) through glslang's C API, then validated
// with SPIRV-Tools. `name` labels messages.
Spirv compile_glsl(const std::string& source, const std::string& name);
// Validates an existing module (spirv-val) and returns the messages; empty when valid.
std::string validate_spirv(const std::vector<uint32_t>& words);

// HIP -> AMDGPU code object, offline, with clang++ (hip.cpp). The toolchain: IRON_HIP_CLANG
// (default clang++-15), IRON_ROCM_PATH (default /usr: Debian's hipcc), the device bitcode
// (IRON_HIP_DEVICE_LIB_PATH, else Debian's or ROCm's place), IRON_HIP_READELF (llvm-readelf-15).
struct HipToolchain {
  std::string clang, readelf, rocm_path, device_lib_path;
  std::string why;  // why HIP cannot compile here; empty when it can
  bool ok() const { return why.empty(); }
};
HipToolchain hip_toolchain();
struct HipObject {
  std::vector<char> code;  // the ELF code object (hipModuleLoadData takes it)
  std::string log;         // the compiler's messages, or why it could not run
  bool ok = false;
};
// `arch` is an AMD GPU architecture (gfx90a, gfx940, gfx1030, ...); `name` labels files.
HipObject compile_hip(const std::string& source, const std::string& arch, const std::string& name);
// What the code object's AMDGPU metadata says of each kernel.
struct HipKernelResources {
  std::string name;
  uint32_t vgprs = 0, sgprs = 0, agprs = 0, vgpr_spills = 0, sgpr_spills = 0;
  uint32_t lds_bytes = 0;      // .group_segment_fixed_size: static LDS
  uint32_t scratch_bytes = 0;  // .private_segment_fixed_size: per-lane scratch
  uint32_t wavefront = 0;
};
std::vector<HipKernelResources> hip_resources(const std::vector<char>& code, std::string& why);

}  // namespace iron::codegen
