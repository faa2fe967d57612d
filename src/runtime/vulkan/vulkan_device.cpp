// The Vulkan backend: one compute queue, host-visible storage buffers, one pipeline per
// (kernel, dtype, threadgroup) and synchronous dispatches. libvulkan.so.1 is dlopen'd at run
// time, so Iron builds without linking the loader and reports a missing one as a plain error.
#define VK_NO_PROTOTYPES
#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#if __has_include(<glslang/build_info.h>)
#include <glslang/build_info.h>  // GLSLANG_VERSION_*: part of the disk-cache fingerprint
#endif

#include "codegen/codegen.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"

namespace iron::rt {
namespace {

// ---------------------------------------------------------------------------------------------
// Entry points. Instance-level functions come from vkGetInstanceProcAddr, device-level ones from
// vkGetDeviceProcAddr (which skips the loader's dispatch trampoline).

#define IRON_VK_INSTANCE_FUNCTIONS(X)         \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define IRON_VK_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)                \
  X(vkGetDeviceQueue)               \
  X(vkDeviceWaitIdle)               \
  X(vkQueueSubmit)                  \
  X(vkQueueWaitIdle)                \
  X(vkCreateBuffer)                 \
  X(vkDestroyBuffer)                \
  X(vkGetBufferMemoryRequirements)  \
  X(vkAllocateMemory)               \
  X(vkFreeMemory)                   \
  X(vkBindBufferMemory)             \
  X(vkMapMemory)                    \
  X(vkUnmapMemory)                  \
  X(vkCreateShaderModule)           \
  X(vkDestroyShaderModule)          \
  X(vkCreateDescriptorSetLayout)    \
  X(vkDestroyDescriptorSetLayout)   \
  X(vkCreatePipelineLayout)         \
  X(vkDestroyPipelineLayout)        \
  X(vkCreateComputePipelines)       \
  X(vkDestroyPipeline)              \
  X(vkCreateDescriptorPool)         \
  X(vkDestroyDescriptorPool)        \
  X(vkAllocateDescriptorSets)       \
  X(vkUpdateDescriptorSets)         \
  X(vkCreateCommandPool)            \
  X(vkDestroyCommandPool)           \
  X(vkAllocateCommandBuffers)       \
  X(vkFreeCommandBuffers)           \
  X(vkResetCommandBuffer)           \
  X(vkBeginCommandBuffer)           \
  X(vkEndCommandBuffer)             \
  X(vkCmdBindPipeline)              \
  X(vkCmdBindDescriptorSets)        \
  X(vkCmdPushConstants)             \
  X(vkCmdDispatch)                  \
  X(vkCmdPipelineBarrier)           \
  X(vkCreateFence)                  \
  X(vkDestroyFence)                 \
  X(vkResetFences)                  \
  X(vkGetFenceStatus)               \
  X(vkResetDescriptorPool)          \
  X(vkWaitForFences)                \
  X(vkCreateQueryPool)              \
  X(vkDestroyQueryPool)             \
  X(vkCmdResetQueryPool)            \
  X(vkCmdWriteTimestamp)            \
  X(vkGetQueryPoolResults)          \
  X(vkCmdFillBuffer)

#define IRON_VK_DECLARE(name) PFN_##name name = nullptr;
struct InstanceFns {
  IRON_VK_INSTANCE_FUNCTIONS(IRON_VK_DECLARE)
};
struct DeviceFns {
  IRON_VK_DEVICE_FUNCTIONS(IRON_VK_DECLARE)
};
#undef IRON_VK_DECLARE

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "VkResult";
  }
}

[[noreturn]] void fail(const char* call, VkResult r, const std::string& detail = {}) {
  std::string msg =
      std::string("Vulkan: ") + call + " failed: " + result_name(r) + " (VkResult " + std::to_string(int(r)) + ")";
  if (!detail.empty()) msg += ": " + detail;
  throw Error(msg);
}

inline void check(VkResult r, const char* call, const std::string& detail = {}) {
  if (r != VK_SUCCESS) fail(call, r, detail);
}

// For calls that return a handle: on failure Vulkan leaves outputs undefined, so the handle is
// nulled before throwing; destructors then destroy exactly the non-null handles.
template <class Handle>
void check_created(VkResult r, Handle& out, const char* call, const std::string& detail = {}) {
  if (r == VK_SUCCESS) return;
  out = Handle{};
  fail(call, r, detail);
}

// Zero-initialized Vulkan struct with its sType set (brace-initializing only sType trips
// -Wmissing-field-initializers).
template <class T>
T vk_struct(VkStructureType type) {
  T s{};
  s.sType = type;
  return s;
}

std::string version_text(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

// ---------------------------------------------------------------------------------------------
// The loader. Opened once per process and never closed: drivers register atexit handlers and
// thread-local state that must not outlive their code.

struct Loader {
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  PFN_vkCreateInstance create_instance = nullptr;
  PFN_vkEnumerateInstanceVersion enumerate_instance_version = nullptr;  // null on a 1.0 loader
  std::string error;  // non-empty when the loader could not be opened
};

const Loader& loader() {
  static const Loader l = [] {
    Loader out;
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();  // the .so.1 failure is the informative one
      std::string first = why ? why : "";
      lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) {
        out.error =
            "no Vulkan loader (libvulkan.so.1): install the Vulkan loader (Debian/Ubuntu: libvulkan1) "
            "and a driver (e.g. mesa-vulkan-drivers for lavapipe)";
        if (!first.empty()) out.error += " [" + first + "]";
        return out;
      }
    }
    out.get_instance_proc_addr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (out.get_instance_proc_addr == nullptr) {
      out.error =
          "no Vulkan loader (libvulkan.so.1): the library has no vkGetInstanceProcAddr; install the "
          "Vulkan loader (Debian/Ubuntu: libvulkan1)";
      return out;
    }
    out.create_instance =
        reinterpret_cast<PFN_vkCreateInstance>(out.get_instance_proc_addr(nullptr, "vkCreateInstance"));
    out.enumerate_instance_version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
        out.get_instance_proc_addr(nullptr, "vkEnumerateInstanceVersion"));
    if (out.create_instance == nullptr) out.error = "no Vulkan loader (libvulkan.so.1): no vkCreateInstance";
    return out;
  }();
  if (!l.error.empty()) throw Error(l.error);
  return l;
}

// ---------------------------------------------------------------------------------------------
// Instance: created per Device (and per list_vulkan_devices call); destroyed last.

struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  uint32_t api_version = VK_API_VERSION_1_1;  // what this instance asked for (1.1 .. 1.3)
  InstanceFns fn;
  // VK_NV_cooperative_matrix's configuration query; null where the loader has no such function.
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV coopmat_properties = nullptr;

  Instance() = default;
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() {
    if (handle != VK_NULL_HANDLE && fn.vkDestroyInstance) fn.vkDestroyInstance(handle, nullptr);
  }
};

std::unique_ptr<Instance> create_instance() {
  const Loader& l = loader();
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (l.enumerate_instance_version) l.enumerate_instance_version(&loader_version);
  if (loader_version < VK_API_VERSION_1_1)
    throw Error("no Vulkan device: the Vulkan loader only offers API " + version_text(loader_version) +
                "; Iron needs Vulkan 1.1 (SPIR-V 1.3, subgroups, 16-bit storage)");

  auto inst = std::make_unique<Instance>();
  // Ask for the highest API the loader offers, capped at 1.3: the device's usable core version
  // is min(this, the device's own version), and 1.2/1.3 make float16 and subgroup size control core.
  inst->api_version = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);
  inst->api_version =
      VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(inst->api_version), VK_API_VERSION_MINOR(inst->api_version), 0);

  auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "iron";
  app.pEngineName = "iron";
  app.apiVersion = inst->api_version;
  auto ci = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ci.pApplicationInfo = &app;
  VkResult r = l.create_instance(&ci, nullptr, &inst->handle);
  if (r != VK_SUCCESS) inst->handle = VK_NULL_HANDLE;
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error(
        "no Vulkan device: vkCreateInstance found no compatible driver (VK_ERROR_INCOMPATIBLE_DRIVER); "
        "install a Vulkan ICD, e.g. mesa-vulkan-drivers for lavapipe");
  check(r, "vkCreateInstance");

#define IRON_VK_LOAD(name)                                                                     \
  inst->fn.name = reinterpret_cast<PFN_##name>(l.get_instance_proc_addr(inst->handle, #name)); \
  if (inst->fn.name == nullptr) throw Error("Vulkan: the loader has no " #name);
  IRON_VK_INSTANCE_FUNCTIONS(IRON_VK_LOAD)
#undef IRON_VK_LOAD
  inst->coopmat_properties = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      l.get_instance_proc_addr(inst->handle, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  return inst;
}

// ---------------------------------------------------------------------------------------------
// Physical device description: what Iron reports (DeviceInfo) and what it can enable.

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  uint32_t api_version = 0;  // min(instance, device): the core version we may use
  DeviceInfo info;
  uint32_t queue_family = UINT32_MAX;  // first family with COMPUTE; UINT32_MAX if none
  uint32_t max_push_constants = 128;
  // Timestamps (time_launches): the queue family's valid bits (0: no timestamps on it), the
  // limits' tick length in ns, and whether every compute/graphics queue has timestamps.
  uint32_t timestamp_valid_bits = 0;
  float timestamp_period = 0.0f;
  bool timestamp_compute_and_graphics = false;
  VkPhysicalDeviceMemoryProperties memory{};

  // Supported (queried) features among those Iron wants; each is enabled when true.
  bool shader_int16 = false;
  bool shader_int64 = false;
  bool shader_float64 = false;  // enabled where supported: lavapipe's fma emulation, tile sums
  // Float controls (Vulkan 1.2): SignedZeroInfNanPreserve for f32, RoundingModeRTE for f16.
  bool preserve_f32_specials = false;
  bool f16_rte = false;
  // Subgroup shuffles in compute shaders: the lane reductions' butterflies need them.
  bool subgroup_shuffle = false;
  // Ballots and votes (lane_ballot; lane_any, lane_all) in compute shaders.
  bool subgroup_ballot = false;
  bool subgroup_vote = false;
  bool storage_16bit = false;
  bool uniform_storage_16bit = false;
  bool shader_float16 = false;
  bool shader_int8 = false;      // 8-bit integer arithmetic (i8/u8 registers)
  bool storage_8bit = false;     // 8-bit buffer elements (i8, u8, fp8)
  bool need_ext_8bit_storage = false;
  bool buffer_int64_atomics = false;  // shaderBufferInt64Atomics (u64 atomics on buffers)
  bool shared_int64_atomics = false;  // shaderSharedInt64Atomics (u64 atomics on shared memory)
  bool need_ext_atomic_int64 = false;
  bool full_subgroups = false;  // computeFullSubgroups (subgroup size control)
  // lavapipe: loops end after a fixed iteration budget (codegen::kLoopLimitText), so every
  // emitted loop reports through a status buffer when the driver cut it short.
  bool loop_limited = false;
  // descriptorBindingStorageBufferUpdateAfterBind (Vulkan 1.2 descriptor indexing): a storage
  // buffer descriptor may be rewritten after its set was bound in a recorded command buffer, so
  // a launch sequence is rebound without recording it again. IRON_VULKAN_UPDATE_AFTER_BIND=0
  // turns it off (the re-recording path, for comparison).
  bool update_after_bind = false;
  // Extensions to enable because the feature is not core at api_version.
  bool need_ext_float16_int8 = false;
  bool need_ext_subgroup_size_control = false;
  // VK_NV_cooperative_matrix with f16 A and B, f32 C and D, 16x16x16 at subgroup scope (and
  // shaderFloat16): cooperative tiles may lower to it (codegen::VkMma). The extension is enabled then.
  bool coopmat_f16 = false;
  // GL_NV_cooperative_matrix shaders use the Vulkan memory model (glslang emits OpMemoryModel
  // Vulkan for them), so coopmat_f16 also needs vulkanMemoryModel, enabled with it (device scope
  // too where supported: fence_device makes buffers coherent).
  bool memory_model_device_scope = false;
  bool need_ext_memory_model = false;
};

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

PhysicalDevice describe(const Instance& inst, VkPhysicalDevice handle) {
  const InstanceFns& fn = inst.fn;
  PhysicalDevice pd;
  pd.handle = handle;

  VkPhysicalDeviceProperties props{};
  fn.vkGetPhysicalDeviceProperties(handle, &props);
  pd.api_version = std::min(props.apiVersion, inst.api_version);
  bool v11 = pd.api_version >= VK_API_VERSION_1_1;
  bool v12 = pd.api_version >= VK_API_VERSION_1_2;
  bool v13 = pd.api_version >= VK_API_VERSION_1_3;

  uint32_t ext_count = 0;
  fn.vkEnumerateDeviceExtensionProperties(handle, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  fn.vkEnumerateDeviceExtensionProperties(handle, nullptr, &ext_count, exts.data());
  bool ext_f16 = has_extension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  bool ext_8bit = has_extension(exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  bool ext_sgsc = has_extension(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  bool ext_atomic64 = has_extension(exts, VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
  bool ext_driver = has_extension(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  bool ext_coopmat = has_extension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  bool ext_memory_model = has_extension(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);

  // Properties: the chained structs are only legal for a 1.1+ device (or with their extension).
  auto subgroup =
      vk_struct<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto driver = vk_struct<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto float_controls =
      vk_struct<VkPhysicalDeviceFloatControlsProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES);
  bool have_driver = false;
  const bool have_floats = v12;
  if (v11) {
    auto props2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &subgroup;
    if (v12 || ext_driver) {
      subgroup.pNext = &driver;
      have_driver = true;
    }
    if (v12) (have_driver ? driver.pNext : subgroup.pNext) = &float_controls;
    fn.vkGetPhysicalDeviceProperties2(handle, &props2);
  }
  pd.subgroup_shuffle = v11 && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
                        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  const bool compute_subgroups = v11 && (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  pd.subgroup_ballot = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);
  pd.subgroup_vote = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_VOTE_BIT);
  pd.preserve_f32_specials = v12 && float_controls.shaderSignedZeroInfNanPreserveFloat32;
  pd.f16_rte = v12 && float_controls.shaderRoundingModeRTEFloat16;
  pd.loop_limited = have_driver && driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE;

  // Features.
  auto features2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  auto storage16 =
      vk_struct<VkPhysicalDevice16BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  auto f16i8 = vk_struct<VkPhysicalDeviceShaderFloat16Int8Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  auto sgsc = vk_struct<VkPhysicalDeviceSubgroupSizeControlFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
  auto storage8 =
      vk_struct<VkPhysicalDevice8BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  auto coopmat = vk_struct<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  auto memory_model = vk_struct<VkPhysicalDeviceVulkanMemoryModelFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES);
  auto atomic64 = vk_struct<VkPhysicalDeviceShaderAtomicInt64Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES);
  auto indexing = vk_struct<VkPhysicalDeviceDescriptorIndexingFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES);
  if (v11) {
    void** tail = &features2.pNext;
    *tail = &storage16;
    tail = &storage16.pNext;
    if (v12 || ext_f16) {
      *tail = &f16i8;
      tail = &f16i8.pNext;
    }
    if (v12 || ext_8bit) {
      *tail = &storage8;
      tail = &storage8.pNext;
    }
    if (v13 || ext_sgsc) {
      *tail = &sgsc;
      tail = &sgsc.pNext;
    }
    if (ext_coopmat) {
      *tail = &coopmat;
      tail = &coopmat.pNext;
    }
    if (v12 || ext_memory_model) {
      *tail = &memory_model;
      tail = &memory_model.pNext;
    }
    if (v12 || ext_atomic64) {
      *tail = &atomic64;
      tail = &atomic64.pNext;
    }
    if (v12) {
      *tail = &indexing;
      tail = &indexing.pNext;
    }
    fn.vkGetPhysicalDeviceFeatures2(handle, &features2);
  }
  pd.shader_int16 = features2.features.shaderInt16;
  pd.shader_int64 = features2.features.shaderInt64;
  pd.shader_float64 = features2.features.shaderFloat64;
  pd.storage_16bit = storage16.storageBuffer16BitAccess;
  pd.uniform_storage_16bit = storage16.uniformAndStorageBuffer16BitAccess;
  pd.shader_float16 = f16i8.shaderFloat16;
  pd.shader_int8 = f16i8.shaderInt8;
  pd.storage_8bit = storage8.storageBuffer8BitAccess;
  pd.need_ext_8bit_storage = pd.storage_8bit && !v12;
  pd.full_subgroups = sgsc.computeFullSubgroups;
  pd.buffer_int64_atomics = pd.shader_int64 && atomic64.shaderBufferInt64Atomics;
  pd.shared_int64_atomics = pd.shader_int64 && atomic64.shaderSharedInt64Atomics;
  pd.need_ext_atomic_int64 = (pd.buffer_int64_atomics || pd.shared_int64_atomics) && !v12;
  pd.need_ext_float16_int8 = (pd.shader_float16 || pd.shader_int8) && !v12;
  pd.need_ext_subgroup_size_control = pd.full_subgroups && !v13;
  {
    const char* env = std::getenv("IRON_VULKAN_UPDATE_AFTER_BIND");
    pd.update_after_bind = v12 && indexing.descriptorBindingStorageBufferUpdateAfterBind && !(env && std::string(env) == "0");
  }
  if (ext_coopmat && coopmat.cooperativeMatrix && pd.shader_float16 && memory_model.vulkanMemoryModel &&
      inst.coopmat_properties) {
    uint32_t n = 0;
    if (inst.coopmat_properties(handle, &n, nullptr) == VK_SUCCESS && n > 0) {
      std::vector<VkCooperativeMatrixPropertiesNV> configs(
          n, vk_struct<VkCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
      if (inst.coopmat_properties(handle, &n, configs.data()) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; ++i) {
          const VkCooperativeMatrixPropertiesNV& c = configs[i];
          if (c.MSize == 16 && c.NSize == 16 && c.KSize == 16 && c.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
              c.BType == VK_COMPONENT_TYPE_FLOAT16_NV && c.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
              c.DType == VK_COMPONENT_TYPE_FLOAT32_NV && c.scope == VK_SCOPE_SUBGROUP_NV)
            pd.coopmat_f16 = true;
        }
    }
  }
  pd.memory_model_device_scope = pd.coopmat_f16 && memory_model.vulkanMemoryModelDeviceScope;
  pd.need_ext_memory_model = pd.coopmat_f16 && !v12;

  uint32_t family_count = 0;
  fn.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  fn.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, families.data());
  for (uint32_t i = 0; i < family_count; ++i) {
    if (families[i].queueCount > 0 && (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
      pd.queue_family = i;
      pd.timestamp_valid_bits = families[i].timestampValidBits;
      break;
    }
  }

  fn.vkGetPhysicalDeviceMemoryProperties(handle, &pd.memory);
  uint64_t largest_local_heap = 0;
  for (uint32_t i = 0; i < pd.memory.memoryHeapCount; ++i)
    if (pd.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      largest_local_heap = std::max<uint64_t>(largest_local_heap, pd.memory.memoryHeaps[i].size);

  const VkPhysicalDeviceLimits& lim = props.limits;
  pd.max_push_constants = lim.maxPushConstantsSize;
  pd.timestamp_period = lim.timestampPeriod;
  pd.timestamp_compute_and_graphics = lim.timestampComputeAndGraphics;
  DeviceInfo& info = pd.info;
  info.backend = Backend::Vulkan;
  info.name = props.deviceName;
  // driverVersion's packing is vendor-specific, so the driver's own name/info text is preferred.
  info.driver = "Vulkan " + version_text(props.apiVersion);
  if (have_driver && driver.driverInfo[0] != '\0')
    info.driver += ", " + std::string(driver.driverName) + " " + driver.driverInfo;
  else
    info.driver += ", driver " + version_text(props.driverVersion);
  info.arch = device_type_name(props.deviceType);
  // A 1.0 device has no subgroup query; it cannot run Iron (make_vulkan_device refuses it),
  // so the lane width of 1 only keeps the listing honest.
  info.lane_width = v11 ? subgroup.subgroupSize : 1;
  info.max_threads_per_group = lim.maxComputeWorkGroupInvocations;
  info.max_group_size = {lim.maxComputeWorkGroupSize[0], lim.maxComputeWorkGroupSize[1],
                         lim.maxComputeWorkGroupSize[2]};
  info.max_grid = {lim.maxComputeWorkGroupCount[0], lim.maxComputeWorkGroupCount[1],
                   lim.maxComputeWorkGroupCount[2]};
  info.shared_memory_bytes = lim.maxComputeSharedMemorySize;
  info.memory_bytes = largest_local_heap;
  info.max_buffer_bytes = lim.maxStorageBufferRange;
  info.min_view_offset_align = std::max<uint64_t>(1, lim.minStorageBufferOffsetAlignment);
  info.f16 = pd.shader_float16 && pd.storage_16bit;
  // bf16 has no Vulkan arithmetic type: it is stored as 16 bits and computed in f32.
  info.bf16 = pd.storage_16bit;
  info.int8 = pd.shader_int8 && pd.storage_8bit;
  info.int16 = pd.shader_int16 && pd.storage_16bit;
  info.int64 = pd.shader_int64;
  info.int64_atomics_buffer = pd.buffer_int64_atomics;
  info.int64_atomics_shared = pd.shared_int64_atomics;
  if (have_floats) {
    auto yn = [](VkBool32 b) { return b ? "yes" : "no"; };
    info.float_controls = std::string("f32 denorm preserve ") + yn(float_controls.shaderDenormPreserveFloat32) +
                          ", f32 denorm flush-to-zero " + yn(float_controls.shaderDenormFlushToZeroFloat32) +
                          ", f32 signed-zero/inf/nan preserve " + yn(float_controls.shaderSignedZeroInfNanPreserveFloat32) +
                          ", f32 round-to-nearest-even " + yn(float_controls.shaderRoundingModeRTEFloat32) +
                          ", f16 denorm preserve " + yn(float_controls.shaderDenormPreserveFloat16);
  } else {
    info.float_controls = "float-controls properties not reported";
  }
  return pd;
}

std::vector<VkPhysicalDevice> enumerate(const Instance& inst) {
  uint32_t count = 0;
  check(inst.fn.vkEnumeratePhysicalDevices(inst.handle, &count, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> out(count);
  if (count > 0) {
    VkResult r = inst.fn.vkEnumeratePhysicalDevices(inst.handle, &count, out.data());
    if (r != VK_INCOMPLETE) check(r, "vkEnumeratePhysicalDevices");
    out.resize(count);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Core: the instance and logical device, shared by the Device, its buffers and its kernels, so
// none of them can outlive the VkDevice whatever order the owners release them in.

struct Core {
  std::unique_ptr<Instance> instance;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  DeviceFns fn;
  // Submissions: every vkQueueSubmit and vkQueueWaitIdle holds queue_mu (a queue is externally
  // synchronized). Each submission has a ticket (1, 2, ...); `completed` is the highest ticket
  // known finished, read by buffers that must not free memory still in flight.
  std::mutex queue_mu;
  std::atomic<uint64_t> completed{0};

  Core() = default;
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;
  ~Core() {
    if (device != VK_NULL_HANDLE) {
      // Function loading may have failed part-way; vkDestroyDevice is loaded first.
      if (fn.vkDeviceWaitIdle) fn.vkDeviceWaitIdle(device);
      if (fn.vkDestroyDevice) fn.vkDestroyDevice(device, nullptr);
    }
    // `instance` is destroyed after the device by member destruction order.
  }
};

std::shared_ptr<Core> create_core(std::unique_ptr<Instance> inst, const PhysicalDevice& pd) {
  auto core = std::make_shared<Core>();
  core->instance = std::move(inst);
  const InstanceFns& ifn = core->instance->fn;

  float priority = 1.0f;
  auto qci = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qci.queueFamilyIndex = pd.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;

  // Enable exactly the supported subset of what emitted shaders may use. The per-feature structs
  // (not VkPhysicalDeviceVulkan12Features) keep one code path for 1.1, 1.2 and 1.3 devices.
  auto features2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  features2.features.shaderInt16 = pd.shader_int16;
  features2.features.shaderInt64 = pd.shader_int64;
  // f64: lavapipe's fma emulation, every device's bf16 fma (iron_fma_odd), and cooperative-tile
  // sums on every device that has it.
  features2.features.shaderFloat64 = pd.shader_float64;
  auto storage16 =
      vk_struct<VkPhysicalDevice16BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  storage16.storageBuffer16BitAccess = pd.storage_16bit;
  storage16.uniformAndStorageBuffer16BitAccess = pd.uniform_storage_16bit;
  auto f16i8 = vk_struct<VkPhysicalDeviceShaderFloat16Int8Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  f16i8.shaderFloat16 = pd.shader_float16;
  f16i8.shaderInt8 = pd.shader_int8;
  auto storage8 =
      vk_struct<VkPhysicalDevice8BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  storage8.storageBuffer8BitAccess = pd.storage_8bit;
  auto sgsc = vk_struct<VkPhysicalDeviceSubgroupSizeControlFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
  sgsc.computeFullSubgroups = pd.full_subgroups;
  auto atomic64 = vk_struct<VkPhysicalDeviceShaderAtomicInt64Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES);
  atomic64.shaderBufferInt64Atomics = pd.buffer_int64_atomics;
  atomic64.shaderSharedInt64Atomics = pd.shared_int64_atomics;

  void** tail = &features2.pNext;
  *tail = &storage16;
  tail = &storage16.pNext;
  if (pd.shader_float16 || pd.shader_int8) {
    *tail = &f16i8;
    tail = &f16i8.pNext;
  }
  if (pd.storage_8bit) {
    *tail = &storage8;
    tail = &storage8.pNext;
  }
  if (pd.full_subgroups) {
    *tail = &sgsc;
    tail = &sgsc.pNext;
  }
  auto coopmat = vk_struct<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  coopmat.cooperativeMatrix = pd.coopmat_f16;
  auto memory_model = vk_struct<VkPhysicalDeviceVulkanMemoryModelFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES);
  memory_model.vulkanMemoryModel = pd.coopmat_f16;
  memory_model.vulkanMemoryModelDeviceScope = pd.memory_model_device_scope;
  if (pd.coopmat_f16) {
    *tail = &coopmat;
    tail = &coopmat.pNext;
    *tail = &memory_model;
    tail = &memory_model.pNext;
  }
  if (pd.buffer_int64_atomics || pd.shared_int64_atomics) {
    *tail = &atomic64;
    tail = &atomic64.pNext;
  }
  auto indexing = vk_struct<VkPhysicalDeviceDescriptorIndexingFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES);
  indexing.descriptorBindingStorageBufferUpdateAfterBind = pd.update_after_bind;
  if (pd.update_after_bind) {
    *tail = &indexing;
    tail = &indexing.pNext;
  }

  std::vector<const char*> extensions;
  if (pd.coopmat_f16) extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (pd.need_ext_memory_model) extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  if (pd.need_ext_float16_int8) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (pd.need_ext_8bit_storage) extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (pd.need_ext_subgroup_size_control) extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  if (pd.need_ext_atomic_int64) extensions.push_back(VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);

  auto dci = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  dci.pNext = &features2;  // pEnabledFeatures must stay null when Features2 is chained
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = uint32_t(extensions.size());
  dci.ppEnabledExtensionNames = extensions.empty() ? nullptr : extensions.data();
  check_created(ifn.vkCreateDevice(pd.handle, &dci, nullptr, &core->device), core->device, "vkCreateDevice",
                pd.info.name);

#define IRON_VK_LOAD(name)                                                                    \
  core->fn.name = reinterpret_cast<PFN_##name>(ifn.vkGetDeviceProcAddr(core->device, #name)); \
  if (core->fn.name == nullptr) throw Error("Vulkan: the driver has no " #name);
  IRON_VK_DEVICE_FUNCTIONS(IRON_VK_LOAD)
#undef IRON_VK_LOAD
  core->fn.vkGetDeviceQueue(core->device, pd.queue_family, 0, &core->queue);
  return core;
}

// ---------------------------------------------------------------------------------------------
// Buffers: one VkBuffer + one allocation each, persistently mapped. Fine for the sizes Iron
// tests and benchmarks with; a sub-allocator would matter only for thousands of small buffers.

// Every buffer gets a process-unique serial. Descriptor sets remember the serials they point at:
// VkBuffer handles are not enough, since a freed buffer's handle (on lavapipe, an address) is
// soon reused by a new buffer, and a descriptor written for the old one must not be kept.
std::atomic<uint64_t> g_buffer_serial{0};

struct VulkanBuffer : BufferImpl {
  std::shared_ptr<Core> core;
  uint64_t serial = 0;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDeviceSize capacity = 0;  // bytes, rounded up to a multiple of 4 and at least 4

  ~VulkanBuffer() override {
    // Work in flight may still use this buffer: its memory goes only after that work.
    if (last_ticket > core->completed.load()) {
      std::lock_guard lock(core->queue_mu);
      core->fn.vkQueueWaitIdle(core->queue);  // errors at teardown are ignored
    }
    if (mapped) core->fn.vkUnmapMemory(core->device, memory);
    if (buffer) core->fn.vkDestroyBuffer(core->device, buffer, nullptr);
    if (memory) core->fn.vkFreeMemory(core->device, memory, nullptr);
  }
};

// ---------------------------------------------------------------------------------------------
// Compiled kernels: layout and pipeline. Launches take their descriptor sets from the submission
// that carries them (Submission), so a kernel may be in flight many times with different
// buffers; `set` is the one timed launches (which wait for themselves) rewrite.

struct VulkanKernel : CompiledKernel {
  std::shared_ptr<Core> core;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;  // null when the kernel has no buffer parameters
  uint32_t num_buffers = 0;
  uint32_t num_scalars = 0;
  uint32_t num_blobs = 0;  // blob parameters: push-constant words after the scalars
  std::vector<uint8_t> buffer_writes;  // per buffer parameter: the kernel may write it
  // Push constants (codegen::push_constant_layout): each scalar's byte offset, the block's size,
  // and whether it is 8 bytes wide; the block is assembled per launch in push_data.
  std::vector<uint32_t> push_offsets;
  std::vector<uint8_t> push_wide;
  uint32_t push_bytes = 0;
  mutable std::vector<uint8_t> push_data;
  std::string name;
  // Serials of the buffers `set` points at, per binding (0: nothing written yet). A launch that
  // binds the same buffers as the last one skips vkUpdateDescriptorSets.
  std::vector<uint64_t> bound;
  // On a loop-limited driver: the loop status buffer (binding num_buffers, 4 words, zeroed
  // before each launch) and the kernel's DSL file names for the error.
  std::unique_ptr<BufferImpl> loop_status;
  std::vector<std::string> files;
  // Threadgroup arrays sized at dispatch: the scalar parameters (indices among the scalars)
  // whose values are specialization constants kTgSpecBase + index. `pipeline` is then the one
  // for the values of the current launch, chosen from `sized` (one per set of values, built on
  // first use from the kept shader module).
  std::vector<uint32_t> size_scalars;
  VkShaderModule module = VK_NULL_HANDLE;
  Dim3 threadgroup;
  bool full_subgroups = false;
  std::map<std::vector<uint32_t>, VkPipeline> sized;
  // Cooperative tiles (codegen::kTileGroupsSpec): the lane groups of a threadgroup and the bytes
  // of their fragment slots, which every dispatch adds to its threadgroup arrays' bytes.
  uint32_t tile_groups = 0;
  uint64_t tile_bytes = 0;

  ~VulkanKernel() override {
    const DeviceFns& f = core->fn;
    for (const auto& [values, p] : sized)
      if (p != pipeline) f.vkDestroyPipeline(core->device, p, nullptr);
    if (module) f.vkDestroyShaderModule(core->device, module, nullptr);
    if (pipeline) f.vkDestroyPipeline(core->device, pipeline, nullptr);
    if (pool) f.vkDestroyDescriptorPool(core->device, pool, nullptr);  // frees `set` too
    if (pipeline_layout) f.vkDestroyPipelineLayout(core->device, pipeline_layout, nullptr);
    if (set_layout) f.vkDestroyDescriptorSetLayout(core->device, set_layout, nullptr);
  }
};

std::string numbered(const std::string& source) {
  std::string out;
  int line = 1;
  size_t start = 0;
  while (start <= source.size()) {
    size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    if (start == source.size() && end == start) break;  // no empty line after a trailing newline
    std::string num = std::to_string(line++);
    out += std::string(num.size() < 4 ? 4 - num.size() : 0, ' ') + num + " | " +
           source.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

// A stream: Vulkan work of every stream goes to the device's one compute queue, in submission
// order, and every submission ends with a barrier that orders it before the next one's shaders,
// so the queue's timeline orders all streams' work; a stream is the last ticket issued on it, and
// an event a ticket.
struct VulkanStream final : StreamImpl {
  uint64_t last = 0;
};
struct VulkanEvent final : EventImpl {
  uint64_t ticket = 0;
};

// One submission in flight: its command buffer, fence and descriptor pool (reset when it is
// reused), and on a loop-limited driver its own loop status buffer (checked when it retires).
struct Submission {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  uint32_t pool_bindings = 0;
  std::unique_ptr<BufferImpl> loop_status;
  uint64_t ticket = 0;
  std::string kernel;               // for a loop status error
  std::vector<std::string> files;   // the kernel's DSL files, likewise
  // The submission of a recorded sequence: owned by it (never on the free list). Step i's loop
  // status is at byte i * status_stride of loop_status, and step_kernels[i] names its kernel.
  bool owned = false;
  uint32_t status_stride = 0;
  std::vector<const VulkanKernel*> step_kernels;
};

class VulkanDevice final : public Device {
 public:
  VulkanDevice(std::shared_ptr<Core> core, PhysicalDevice pd) : core_(std::move(core)), pd_(std::move(pd)) {}
  using Device::download;
  using Device::launch;
  using Device::upload;

  // Separate from the constructor so a failure half-way still runs the destructor.
  void init() {
    const DeviceFns& f = core_->fn;
    auto pci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = pd_.queue_family;
    check_created(f.vkCreateCommandPool(core_->device, &pci, nullptr, &command_pool_), command_pool_,
                  "vkCreateCommandPool");

    auto cai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = command_pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check_created(f.vkAllocateCommandBuffers(core_->device, &cai, &command_buffer_), command_buffer_,
                  "vkAllocateCommandBuffers");

    auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check_created(f.vkCreateFence(core_->device, &fci, nullptr, &fence_), fence_, "vkCreateFence");
  }

  ~VulkanDevice() override {
    const DeviceFns& f = core_->fn;
    {
      std::lock_guard lock(core_->queue_mu);
      f.vkQueueWaitIdle(core_->queue);
    }
    for (auto& sub : submissions_) {
      if (sub->fence) f.vkDestroyFence(core_->device, sub->fence, nullptr);
      if (sub->pool) f.vkDestroyDescriptorPool(core_->device, sub->pool, nullptr);
    }
    if (fence_) f.vkDestroyFence(core_->device, fence_, nullptr);
    if (query_pool_) f.vkDestroyQueryPool(core_->device, query_pool_, nullptr);
    if (flush_buffer_) f.vkDestroyBuffer(core_->device, flush_buffer_, nullptr);
    if (flush_memory_) f.vkFreeMemory(core_->device, flush_memory_, nullptr);
    if (command_pool_) f.vkDestroyCommandPool(core_->device, command_pool_, nullptr);
    // core_ (VkDevice, VkInstance) goes when the last buffer / kernel holding it is gone.
  }

  const DeviceInfo& info() const override { return pd_.info; }

  // Whether shaders flush f32 subnormals by default (DeviceInfo::f32_denormals_flushed),
  // measured: 2^-70 * 2^-70 (a subnormal product) and 2^-140 + 2^-140 (subnormal operands), on
  // values loaded at run time so that no compiler can fold them. Either giving 0 is a flush.
  void probe_denormals() {
    ir::Kernel k = ir::parse(
        "kernel iron_denormal_probe mode=Elementwise {\n"
        "  param x: in buf<f32> extent=3\n"
        "  param y: out buf<f32> extent=2\n"
        "  %0 = const<0> : u32\n"
        "  %1 = const<1> : u32\n"
        "  %2 = const<2> : u32\n"
        "  %3 = load<x> %0 : f32\n"
        "  %4 = load<x> %1 : f32\n"
        "  %5 = load<x> %2 : f32\n"
        "  %6 = mul %3, %4 : f32\n"
        "  store<y> %0, %6\n"
        "  %7 = add %5, %5 : f32\n"
        "  store<y> %1, %7\n"
        "}\n");
    const float in[3] = {0x1p-70f, 0x1p-70f, 0x1p-140f};
    float out[2] = {-1.0f, -1.0f};
    std::unique_ptr<CompiledKernel> kern = compile(k, DType::F32, {1, 1, 1});
    std::unique_ptr<BufferImpl> x = alloc(sizeof in), y = alloc(sizeof out);
    upload(*x, in, sizeof in);
    upload(*y, out, sizeof out);
    LaunchArgs args;
    args.buffers = {x.get(), y.get()};
    args.is_buffer = {1, 1};
    launch(*kern, args, {1, 1, 1}, {1, 1, 1});
    download(*y, out, sizeof out);
    bool flushed = out[0] == 0.0f || out[1] == 0.0f;
    bool preserved = out[0] == 0x1p-140f && out[1] == 0x1p-139f;
    if (!flushed && !preserved)
      throw Error("Vulkan device '" + pd_.info.name + "': the f32 denormal probe computed " + std::to_string(out[0]) +
                  " and " + std::to_string(out[1]) + ", neither the IEEE results nor zero");
    pd_.info.f32_denormals_flushed = flushed;
    pd_.info.float_controls += std::string("; probe: f32 subnormals ") + (flushed ? "flushed to zero" : "preserved");
  }

  std::unique_ptr<BufferImpl> alloc(size_t bytes) override {
    const DeviceFns& f = core_->fn;
    auto buf = std::make_unique<VulkanBuffer>();
    buf->core = core_;
    buf->owner = core_.get();  // kept alive by buf->core
    buf->serial = ++g_buffer_serial;
    buf->bytes = bytes;
    // Zero-sized buffers are legal in Iron but not in Vulkan; storage buffer ranges are also
    // cleaner as whole words.
    buf->capacity = std::max<VkDeviceSize>(4, (VkDeviceSize(bytes) + 3) & ~VkDeviceSize(3));

    auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bci.size = buf->capacity;
    bci.usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check_created(f.vkCreateBuffer(core_->device, &bci, nullptr, &buf->buffer), buf->buffer, "vkCreateBuffer",
                  std::to_string(bytes) + " bytes");

    VkMemoryRequirements req{};
    f.vkGetBufferMemoryRequirements(core_->device, buf->buffer, &req);

    // Host-visible memory lets upload/download be plain memcpy. Device-local + host-visible
    // (lavapipe: all memory; NVIDIA: resizable-BAR VRAM) keeps kernels at full bandwidth; plain
    // host-visible system memory is the fallback, also when the first choice runs out.
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags preferences[] = {host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, host};
    VkResult last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    uint32_t tried = 0;  // memory types already tried (and out of memory)
    for (VkMemoryPropertyFlags want : preferences) {
      for (uint32_t i = 0; i < pd_.memory.memoryTypeCount && buf->memory == VK_NULL_HANDLE; ++i) {
        if (!(req.memoryTypeBits & (1u << i)) || (tried & (1u << i))) continue;
        if ((pd_.memory.memoryTypes[i].propertyFlags & want) != want) continue;
        tried |= 1u << i;
        auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
        mai.allocationSize = req.size;
        mai.memoryTypeIndex = i;
        last = f.vkAllocateMemory(core_->device, &mai, nullptr, &buf->memory);
        if (last != VK_SUCCESS) buf->memory = VK_NULL_HANDLE;
        if (last != VK_SUCCESS && last != VK_ERROR_OUT_OF_DEVICE_MEMORY && last != VK_ERROR_OUT_OF_HOST_MEMORY)
          fail("vkAllocateMemory", last, std::to_string(req.size) + " bytes");
      }
      if (buf->memory != VK_NULL_HANDLE) break;
    }
    if (tried == 0)
      throw Error("Vulkan: device '" + pd_.info.name +
                  "' has no host-visible, host-coherent memory type for a storage buffer");
    if (buf->memory == VK_NULL_HANDLE) fail("vkAllocateMemory", last, std::to_string(req.size) + " bytes");

    check(f.vkBindBufferMemory(core_->device, buf->buffer, buf->memory, 0), "vkBindBufferMemory");
    check_created(f.vkMapMemory(core_->device, buf->memory, 0, VK_WHOLE_SIZE, 0, &buf->mapped), buf->mapped,
                  "vkMapMemory");
    return buf;
  }

  // Both wait for the submissions in flight that use the buffer (its last ticket), then copy
  // through the host-coherent mapping; vkQueueSubmit makes host writes visible to later work.
  void upload(BufferImpl& buf, size_t offset, const void* data, size_t bytes, StreamImpl*) override {
    auto& b = static_cast<VulkanBuffer&>(buf);
    if (offset > b.bytes || bytes > b.bytes - offset)
      throw Error("Vulkan upload of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                  " into a buffer of " + std::to_string(b.bytes) + " bytes");
    wait_ticket(b.last_ticket, false);
    if (bytes) std::memcpy(static_cast<char*>(b.mapped) + offset, data, bytes);
  }

  void download(BufferImpl& buf, size_t offset, void* data, size_t bytes) override {
    auto& b = static_cast<VulkanBuffer&>(buf);
    if (offset > b.bytes || bytes > b.bytes - offset)
      throw Error("Vulkan download of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                  " from a buffer of " + std::to_string(b.bytes) + " bytes");
    wait_ticket(b.last_ticket, true);
    if (bytes) std::memcpy(data, static_cast<const char*>(b.mapped) + offset, bytes);
  }

  StreamImpl* create_stream() override {
    std::lock_guard lock(mutex_);
    streams_.push_back(std::make_unique<VulkanStream>());
    return streams_.back().get();
  }
  VulkanStream& stream_of(StreamImpl* s) { return s ? static_cast<VulkanStream&>(*s) : default_stream_; }

  std::shared_ptr<EventImpl> record_event(StreamImpl* stream) override {
    auto e = std::make_shared<VulkanEvent>();
    std::lock_guard lock(mutex_);
    e->ticket = stream_of(stream).last;
    return e;
  }
  std::shared_ptr<EventImpl> buffer_event(BufferImpl& buf) override {
    auto e = std::make_shared<VulkanEvent>();
    e->ticket = buf.last_ticket;
    return e;
  }
  // The queue runs submissions in order (see VulkanStream): later work on any stream already
  // follows the event's work.
  void wait_event(StreamImpl*, EventImpl&) override {}
  bool event_done(EventImpl& event) override {
    std::lock_guard lock(mutex_);
    retire(false);
    return core_->completed.load() >= static_cast<VulkanEvent&>(event).ticket;
  }
  void synchronize_event(EventImpl& event) override { wait_ticket(static_cast<VulkanEvent&>(event).ticket, true); }
  void synchronize_stream(StreamImpl* stream) override {
    uint64_t t;
    {
      std::lock_guard lock(mutex_);
      t = stream_of(stream).last;
    }
    wait_ticket(t, true);
  }

  std::unique_ptr<CompiledKernel> compile(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup) override {
    if (ir::uses_lane_ops(k) && !pd_.subgroup_shuffle)
      throw Error("kernel '" + k.name + "' uses lane reductions, which are subgroup shuffle butterflies on Vulkan; device '" +
                  pd_.info.name + "' does not support subgroup shuffles in compute shaders (VK_SUBGROUP_FEATURE_SHUFFLE_BIT)");
    bool ballot = false, vote = false;
    ir::walk(k, [&](ir::Id id) {
      ballot = ballot || k.insts[id].op == ir::Op::LaneBallot;
      vote = vote || k.insts[id].op == ir::Op::LaneAny || k.insts[id].op == ir::Op::LaneAll;
    });
    if (ballot && !pd_.subgroup_ballot)
      throw Error("kernel '" + k.name + "' uses lane_ballot; device '" + pd_.info.name +
                  "' does not support subgroup ballots in compute shaders (VK_SUBGROUP_FEATURE_BALLOT_BIT)");
    if (vote && !pd_.subgroup_vote)
      throw Error("kernel '" + k.name + "' uses lane_any or lane_all; device '" + pd_.info.name +
                  "' does not support subgroup votes in compute shaders (VK_SUBGROUP_FEATURE_VOTE_BIT)");
    if (std::string why = vulkan_u64_atomics_problem(k, dtype, pd_.info); !why.empty()) throw Error(why);
    // bf16 fma is one rounding of the exact a * b + c, computed through f64 (iron_fma_odd; f16's
    // needs only f32).
    bool fma_bf16 = false;
    ir::walk(k, [&](ir::Id id) {
      fma_bf16 = fma_bf16 || (k.insts[id].op == ir::Op::Fma && ir::resolve(k.insts[id].type.elem(), dtype) == DType::BF16);
    });
    if (fma_bf16 && !pd_.shader_float64)
      throw Error("kernel '" + k.name + "' (" + instantiation_name(dtype) + ") uses fma on bf16, which Vulkan " +
                  "computes through f64 (one rounding of the exact result); device '" + pd_.info.name +
                  "' does not support f64 in shaders (shaderFloat64)");
    codegen::EmitOptions options;
    options.loop_limit_check = pd_.loop_limited;
    // lavapipe's fma is a multiply and an add (two roundings): emulated with one.
    options.emulate_fma = pd_.loop_limited && pd_.shader_float64;
    options.poison_register_arrays = pd_.loop_limited;  // lavapipe: see EmitOptions
    options.preserve_f32_specials = pd_.preserve_f32_specials;
    options.f16_round_to_nearest_even = pd_.f16_rte;
    options.tile_f64 = pd_.shader_float64;
    options.tile_coopmat = tile_coopmat(k, dtype);
    // The compile path (runtime/compile.hpp): lower, emit GLSL, glslang and spirv-val.
    std::string label = codegen::entry_name(k, dtype);
    Compiled c = compile_optimized(k, dtype, codegen::profile_for(codegen::Target::Glsl), options);
    if (!c.ok()) {
      if (c.emitted.source.empty()) throw Error(c.error);
      throw Error(c.error + "--- GLSL source (" + label + ") ---\n" + numbered(c.emitted.source));
    }
    codegen::Emitted emitted = std::move(c.emitted);
    codegen::Spirv spirv;
    spirv.words.resize(c.binary.size() / sizeof(uint32_t));
    std::memcpy(spirv.words.data(), c.binary.data(), spirv.words.size() * sizeof(uint32_t));

    std::unique_ptr<VulkanKernel> kern =
        make_kernel(k, dtype, threadgroup, spirv.words.data(), spirv.words.size(), std::move(label));
    kern->source = std::move(emitted.source);
    kern->binary.resize(spirv.words.size() * sizeof(uint32_t));
    std::memcpy(kern->binary.data(), spirv.words.data(), kern->binary.size());
    return kern;
  }

  // The SPIR-V depends on the compiler (glslang, its SPIR-V 1.3 / Vulkan 1.1 target, and Iron's
  // build, covered by Context's key), not on the device. The device's identity, API version,
  // subgroup size and the features the pipeline enables go in anyway: cheap, and it keeps one
  // cache directory shared by two GPUs from ever serving a module across them.
  std::string cache_fingerprint() const override {
    std::string fp = "spirv 1.3 vulkan 1.1";
#ifdef GLSLANG_VERSION_MAJOR
    fp += "; glslang " + std::to_string(GLSLANG_VERSION_MAJOR) + "." + std::to_string(GLSLANG_VERSION_MINOR) + "." +
          std::to_string(GLSLANG_VERSION_PATCH) + GLSLANG_VERSION_FLAVOR;
#endif
    const DeviceInfo& i = pd_.info;
    fp += "; device " + i.name + " (" + i.arch + "); " + i.driver + "; api " + version_text(pd_.api_version) +
          "; subgroup " + std::to_string(i.lane_width) + "; features";
    for (bool b : {pd_.shader_int16, pd_.shader_int64, pd_.storage_16bit, pd_.uniform_storage_16bit,
                   pd_.shader_float16, pd_.full_subgroups, pd_.shader_int8, pd_.storage_8bit,
                   pd_.buffer_int64_atomics, pd_.shared_int64_atomics, pd_.shader_float64})
      fp += b ? " 1" : " 0";
    if (pd_.loop_limited) fp += "; loop status binding; poisoned register arrays";  // a different module and layout
    if (pd_.loop_limited && pd_.shader_float64) fp += "; f64 fma";
    if (pd_.shader_float64) fp += "; f64 tiles";
    // The tile strategy changes the source of kernels with f16 fragments (a bad IRON_VK_MMA
    // throws: no disk cache, and compile() reports it).
    const codegen::VkMma mma = codegen::vk_mma_from_env();
    fp += std::string("; tiles ") + codegen::vk_mma_name(mma) + (pd_.coopmat_f16 ? " (nv coopmat f16)" : "");
    fp += std::string("; float controls ") + (pd_.preserve_f32_specials ? "1" : "0") + (pd_.f16_rte ? "1" : "0");
    return fp;
  }

  // `binary` holds the SPIR-V words compile() produced. Its checksum already matched; the magic
  // number and word alignment are checked here, and the driver validates the rest.
  std::unique_ptr<CompiledKernel> load(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup,
                                       const std::vector<char>& binary) override {
    const std::string label = codegen::entry_name(k, dtype);
    if (binary.size() < 20 || binary.size() % sizeof(uint32_t) != 0)
      throw Error("cached SPIR-V for " + label + " has " + std::to_string(binary.size()) + " bytes");
    std::vector<uint32_t> words(binary.size() / sizeof(uint32_t));
    std::memcpy(words.data(), binary.data(), binary.size());
    if (words[0] != 0x07230203u) throw Error("cached SPIR-V for " + label + " lacks the SPIR-V magic number");
    return make_kernel(k, dtype, threadgroup, words.data(), words.size(), label);
  }

  // Layout, pipeline and descriptor set for SPIR-V `words` of kernel `k` (the optimized kernel
  // from compile(), the traced one from load(): params and lane-op use are the same).
  std::unique_ptr<VulkanKernel> make_kernel(const ir::Kernel& k, Instantiation dtype, Dim3 threadgroup, const uint32_t* words,
                                            size_t num_words, std::string label) {
    auto kern = std::make_unique<VulkanKernel>();
    kern->core = core_;
    kern->name = label;
    for (const ir::Param& p : k.params) {
      if (p.kind == ir::ParamKind::Buffer) {
        ++kern->num_buffers;
        kern->buffer_writes.push_back(p.access != ir::Access::Read);
      } else if (p.kind == ir::ParamKind::Blob) {
        ++kern->num_blobs;
      } else {
        ++kern->num_scalars;
      }
    }
    kern->push_bytes = codegen::push_constant_layout(k, kern->push_offsets);
    for (const ir::Param& p : k.params)
      if (p.kind == ir::ParamKind::Scalar) kern->push_wide.push_back(int_bits(p.dtype) == 64);
    kern->push_data.assign(kern->push_bytes, 0);
    if (kern->push_bytes > pd_.max_push_constants)
      throw Error("kernel '" + k.name + "' has " + std::to_string(kern->num_scalars) + " scalar parameters" +
                  (kern->num_blobs ? " and " + std::to_string(kern->num_blobs) + " blob parameters" : std::string()) + " (" +
                  std::to_string(kern->push_bytes) + " bytes of push constants); device '" + pd_.info.name +
                  "' allows " + std::to_string(pd_.max_push_constants) + " bytes (maxPushConstantsSize)");

    const DeviceFns& f = core_->fn;
    VkDevice dev = core_->device;

    // A loop-limited driver gets one more binding, the loop status buffer, whether or not this
    // module uses it (a cached module of the traced kernel may have loops unroll removed).
    const uint32_t num_bindings = kern->num_buffers + (pd_.loop_limited ? 1 : 0);
    std::vector<VkDescriptorSetLayoutBinding> bindings(num_bindings);
    for (uint32_t i = 0; i < num_bindings; ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    auto dslci = vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    dslci.bindingCount = num_bindings;
    dslci.pBindings = bindings.data();
    // With update-after-bind every binding may be rewritten while a recorded command buffer
    // binds the set (a launch sequence's rebinding); such sets come from update-after-bind pools.
    std::vector<VkDescriptorBindingFlags> binding_flags(num_bindings, VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT);
    auto flags_ci = vk_struct<VkDescriptorSetLayoutBindingFlagsCreateInfo>(
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO);
    if (pd_.update_after_bind && num_bindings > 0) {
      flags_ci.bindingCount = num_bindings;
      flags_ci.pBindingFlags = binding_flags.data();
      dslci.pNext = &flags_ci;
      dslci.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT;
    }
    check_created(f.vkCreateDescriptorSetLayout(dev, &dslci, nullptr, &kern->set_layout), kern->set_layout,
                  "vkCreateDescriptorSetLayout", label);

    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kern->push_bytes};
    auto plci = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &kern->set_layout;
    plci.pushConstantRangeCount = kern->push_bytes ? 1 : 0;
    plci.pPushConstantRanges = kern->push_bytes ? &push : nullptr;
    check_created(f.vkCreatePipelineLayout(dev, &plci, nullptr, &kern->pipeline_layout), kern->pipeline_layout,
                  "vkCreatePipelineLayout", label);

    auto smci = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    smci.codeSize = num_words * sizeof(uint32_t);
    smci.pCode = words;
    VkShaderModule module = VK_NULL_HANDLE;
    check_created(f.vkCreateShaderModule(dev, &smci, nullptr, &module), module, "vkCreateShaderModule", label);

    // Lane ops assume every subgroup is full (a reduction's per-lane partials would otherwise mix
    // with inactive lanes). The flag is only valid when the x size is a multiple of the subgroup
    // size; Context already requires the group to be a multiple of the lane width.
    kern->full_subgroups = pd_.full_subgroups && ir::uses_lane_ops(k) && pd_.info.lane_width > 0 &&
                           threadgroup.x % pd_.info.lane_width == 0;
    kern->threadgroup = threadgroup;
    // Cooperative tiles keep their fragments in shared memory: `slots` KiB per lane group (the
    // constant counts KiB: a slot is 1 KiB, or 2 KiB where f8e4m3 fragments live), one
    // lane group per subgroup (its size is the device's subgroupSize: no size control is used).
    if (const uint32_t slots = codegen::glsl_tile_slots(words, num_words)) {
      const uint64_t threads = uint64_t(threadgroup.x) * threadgroup.y * threadgroup.z;
      const uint64_t width = std::max<uint32_t>(pd_.info.lane_width, 1);
      kern->tile_groups = uint32_t(std::max<uint64_t>((threads + width - 1) / width, 1));
      kern->tile_bytes = uint64_t(slots) * 1024 * kern->tile_groups;
      const uint64_t arrays = ir::threadgroup_bytes(k, dtype);  // without the arrays sized at dispatch
      if (arrays + kern->tile_bytes > pd_.info.shared_memory_bytes)
        throw Error(tile_memory_message(label, kern->tile_bytes, kern->tile_groups, arrays));
    }
    int scalar = 0;
    std::vector<int> scalar_index(k.params.size(), -1);
    for (size_t i = 0; i < k.params.size(); ++i)
      if (k.params[i].kind == ir::ParamKind::Scalar) scalar_index[i] = scalar++;
    for (ir::Id id : ir::threadgroup_layout(k))
      if (k.insts[id].has(ir::Attr::CountParam)) {
        const uint32_t si = uint32_t(scalar_index[size_t(k.insts[id].attr(ir::Attr::CountParam))]);
        if (std::find(kern->size_scalars.begin(), kern->size_scalars.end(), si) == kern->size_scalars.end())
          kern->size_scalars.push_back(si);
      }
    // The pipeline for sizes of 1 until a launch names its own (the module is kept for those).
    std::vector<uint32_t> ones(kern->size_scalars.size(), 1u);
    VkResult r = create_pipeline(*kern, module, ones, kern->pipeline);
    if (kern->size_scalars.empty()) f.vkDestroyShaderModule(dev, module, nullptr);  // the pipeline no longer needs it
    else kern->module = module;
    check_created(r, kern->pipeline, "vkCreateComputePipelines", label);
    if (!kern->size_scalars.empty()) kern->sized.emplace(ones, kern->pipeline);

    if (num_bindings > 0) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, num_bindings};
      auto dpci = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      dpci.maxSets = 1;
      dpci.flags = pool_flags();
      dpci.poolSizeCount = 1;
      dpci.pPoolSizes = &size;
      check_created(f.vkCreateDescriptorPool(dev, &dpci, nullptr, &kern->pool), kern->pool,
                    "vkCreateDescriptorPool", label);
      auto dsai = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
      dsai.descriptorPool = kern->pool;
      dsai.descriptorSetCount = 1;
      dsai.pSetLayouts = &kern->set_layout;
      check_created(f.vkAllocateDescriptorSets(dev, &dsai, &kern->set), kern->set, "vkAllocateDescriptorSets",
                    label);
    }
    kern->bound.assign(kern->num_buffers, 0);
    if (pd_.loop_limited) {
      kern->loop_status = alloc(16);
      kern->files = k.files;
      VkDescriptorBufferInfo info{static_cast<VulkanBuffer&>(*kern->loop_status).buffer, 0, VK_WHOLE_SIZE};
      auto w = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      w.dstSet = kern->set;
      w.dstBinding = kern->num_buffers;
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = &info;
      f.vkUpdateDescriptorSets(dev, 1, &w, 0, nullptr);
    }
    return kern;
  }

  // The threadgroup shape is baked in through specialization constants 0..2 (local_size_*_id);
  // the values of the scalars that size threadgroup arrays follow (codegen::kTgSpecBase).
  VkResult create_pipeline(const VulkanKernel& kern, VkShaderModule module, const std::vector<uint32_t>& sizes,
                           VkPipeline& out) {
    std::vector<uint32_t> data = {kern.threadgroup.x, kern.threadgroup.y, kern.threadgroup.z};
    std::vector<VkSpecializationMapEntry> entries = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
    if (kern.tile_groups) {
      entries.push_back({codegen::kTileGroupsSpec, uint32_t(4 * data.size()), 4});
      data.push_back(kern.tile_groups);
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      entries.push_back({codegen::kTgSpecBase + kern.size_scalars[i], uint32_t(4 * data.size()), 4});
      data.push_back(sizes[i]);
    }
    VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(), 4 * data.size(), data.data()};
    auto cpci = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = module;
    cpci.stage.pName = "main";
    cpci.stage.pSpecializationInfo = &spec;
    if (kern.full_subgroups) cpci.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
    cpci.layout = kern.pipeline_layout;
    return core_->fn.vkCreateComputePipelines(core_->device, VK_NULL_HANDLE, 1, &cpci, nullptr, &out);
  }

  // Points kern.pipeline at the pipeline for this launch's array sizes; mutex_ held.
  void select_sized_pipeline(VulkanKernel& kern, const LaunchArgs& args) {
    if (kern.size_scalars.empty()) return;
    std::vector<uint32_t> sizes;
    for (uint32_t si : kern.size_scalars) sizes.push_back(si < args.scalars.size() ? uint32_t(args.scalars[si]) : 1u);
    auto it = kern.sized.find(sizes);
    if (it == kern.sized.end()) {
      VkPipeline p = VK_NULL_HANDLE;
      VkResult r = create_pipeline(kern, kern.module, sizes, p);
      check_created(r, p, "vkCreateComputePipelines", kern.name);
      it = kern.sized.emplace(sizes, p).first;
    }
    kern.pipeline = it->second;
  }

  bool pipeline_depends_on_threadgroup() const override { return true; }

  // The pipeline is built for one threadgroup shape (specialization constants, and the
  // pipeline's launch facts); Context keys its caches by it, so a mismatch is a caller that
  // bypassed them.
  static void check_shape(const VulkanKernel& kern, Dim3 tg) {
    const Dim3 b = kern.threadgroup;
    if (b.x == tg.x && b.y == tg.y && b.z == tg.z) return;
    throw Error("Vulkan pipeline of kernel '" + kern.name + "' was built for threadgroup " + std::to_string(b.x) + "x" +
                std::to_string(b.y) + "x" + std::to_string(b.z) + " and cannot be dispatched with threadgroup " +
                std::to_string(tg.x) + "x" + std::to_string(tg.y) + "x" + std::to_string(tg.z) +
                "; build it for that shape");
  }

  // Records the dispatch into a submission of its own (descriptor set from the submission's
  // pool, so the same kernel may be in flight many times with different buffers), submits it
  // with its fence and returns. The buffers remember the ticket.
  void launch(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup, StreamImpl* stream) override {
    VulkanKernel& kern = checked(kernel, args);
    check_shape(kern, threadgroup);
    for (uint32_t i = 0; i < kern.num_buffers; ++i)
      if (args.buffers[i]->owner != core_.get())
        throw Error("Vulkan launch of " + kern.name + ": buffer " + std::to_string(i) + " is from another device");
    std::lock_guard<std::mutex> lock(mutex_);
    select_sized_pipeline(kern, args);
    Submission& sub = acquire(kern.num_buffers + (pd_.loop_limited ? 1 : 0));
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (kern.num_buffers + (pd_.loop_limited ? 1 : 0) > 0) set = submission_set(sub, kern, args);
    if (sub.loop_status) std::memset(static_cast<VulkanBuffer&>(*sub.loop_status).mapped, 0, 16);
    sub.kernel = kern.name;
    if (pd_.loop_limited) sub.files = kern.files;
    const DeviceFns& f = core_->fn;
    check(f.vkResetCommandBuffer(sub.cb, 0), "vkResetCommandBuffer");
    auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(f.vkBeginCommandBuffer(sub.cb, &begin), "vkBeginCommandBuffer");
    record_dispatch(sub.cb, set, kern, args, grid);
    record_visibility_barrier(sub.cb);
    check(f.vkEndCommandBuffer(sub.cb), "vkEndCommandBuffer");
    auto submit = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &sub.cb;
    {
      std::lock_guard qlock(core_->queue_mu);
      check(f.vkQueueSubmit(core_->queue, 1, &submit, sub.fence), "vkQueueSubmit", kern.name);
    }
    sub.ticket = ++issued_;
    in_flight_.push_back(&sub);
    stream_of(stream).last = sub.ticket;
    for (uint32_t i = 0; i < kern.num_buffers; ++i) {
      args.buffers[i]->last_ticket = sub.ticket;
      args.buffers[i]->last_stream = stream;
    }
  }

  // A prepared launch keeps its arguments; launch() is an ordinary launch of them. Its type
  // lets record() reach the steps' kernels and arguments.
  struct VulkanPrepared final : Prepared {
    VulkanDevice* dev = nullptr;
    VulkanKernel* kern = nullptr;
    LaunchArgs args;
    Dim3 grid, tg;
    void set_buffer(size_t slot, BufferImpl* buf, uint64_t offset) override {
      args.buffers[slot] = buf;
      args.offsets[slot] = offset;
    }
    void set_scalar(size_t slot, uint64_t bits) override { args.scalars[slot] = bits; }
    void set_blob(size_t slot, const uint8_t* bytes, size_t size, BufferImpl*) override {
      std::memcpy(args.blob_data.data() + args.blob_offsets[slot], bytes, size);
    }
    void launch(StreamImpl* stream) override { dev->launch(*kern, args, grid, tg, stream); }
  };

  std::unique_ptr<Prepared> prepare(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 tg) override {
    VulkanKernel& kern = checked(kernel, args);
    check_shape(kern, tg);
    for (uint32_t i = 0; i < kern.num_buffers; ++i)
      if (args.buffers[i]->owner != core_.get())
        throw Error("Vulkan prepared launch of " + kern.name + ": buffer " + std::to_string(i) + " is from another device");
    auto p = std::make_unique<VulkanPrepared>();
    p->dev = this;
    p->kern = &kern;
    p->args = args;
    p->args.offsets.resize(args.buffers.size(), 0);
    p->grid = grid;
    p->tg = tg;
    return p;
  }

  // A sequence recorded once into one command buffer and replayed by one vkQueueSubmit. Each
  // step has a descriptor set of its own (from the sequence's pool), so one kernel may appear
  // in many steps with different buffers; its scalars are push constants recorded with it. A
  // barrier goes before a step only where it reads or writes a buffer that a step since the
  // last barrier wrote, or writes one such a step read (the steps' buffers compared by
  // allocation, whatever their views); the command buffer ends with the barrier every launch
  // ends with. A replay first waits for the previous replay of the same sequence (the command
  // buffer and its sets are in use until then). A rebinding rewrites only the changed bindings
  // of the step's own set; with update-after-bind descriptors the recording stays valid and is
  // replayed as it is, unless the rebound steps' scalars changed (push constants) or a barrier
  // is needed where there is none; otherwise the commands are recorded again (without
  // update-after-bind a set bound in a recorded command buffer may not change under it;
  // recording allocates nothing). On a loop-limited driver (lavapipe) each step has its own 16-byte loop
  // status slot in one buffer, checked when the replay retires.
  struct VulkanRecorded final : Recorded {
    VulkanDevice* dev = nullptr;
    std::vector<VulkanPrepared*> steps;
    Submission sub;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    std::vector<VkDescriptorSet> sets;  // per step; null where the step binds nothing
    // What each step's set and commands hold now: buffers and offsets, scalars, and whether a
    // barrier goes before it.
    std::vector<std::vector<BufferImpl*>> buffers;
    std::vector<std::vector<uint64_t>> offsets, scalars;
    std::vector<std::vector<uint8_t>> blobs;  // per step: its blobs' bytes (push constants too)
    std::vector<uint8_t> barriers;
    std::vector<BufferImpl*> touched;  // every buffer of every step, once
    uint64_t recordings = 0, sets_rewritten = 0;
    // Rebindings taken without recording again (update-after-bind), and rebindings that had to
    // record again although the device has it (new scalars, or a barrier the recording lacked).
    uint64_t updated_in_place = 0, rerecorded_after_bind = 0;

    ~VulkanRecorded() override {
      const DeviceFns& f = dev->core_->fn;
      std::lock_guard lock(dev->mutex_);
      try {
        dev->wait_for(sub);
      } catch (const Error&) {
        // a failed wait at teardown: the device is lost; release what we can
      }
      if (sub.cb) f.vkFreeCommandBuffers(dev->core_->device, dev->command_pool_, 1, &sub.cb);
      if (sub.fence) f.vkDestroyFence(dev->core_->device, sub.fence, nullptr);
      if (pool) f.vkDestroyDescriptorPool(dev->core_->device, pool, nullptr);
    }
    // A rebinding waits for the last replay, rewrites the changed bindings of the steps' sets,
    // and records the commands again only where it must: without update-after-bind (the sets
    // are bound in the command buffer), when a step's scalars changed (push constants are in
    // the commands), or when the new bindings need a barrier the recording lacks.
    void update(const std::vector<size_t>& changed) override {
      std::lock_guard lock(dev->mutex_);
      dev->wait_for(sub);
      bool scalars_changed = false;
      for (size_t i : changed) {
        dev->write_step_set(*this, i);
        scalars_changed = scalars_changed || scalars[i] != steps[i]->args.scalars || blobs[i] != steps[i]->args.blob_data;
        scalars[i] = steps[i]->args.scalars;
        blobs[i] = steps[i]->args.blob_data;
      }
      std::vector<uint8_t> needed;
      dev->place_barriers(*this, needed);
      bool covered = true;
      for (size_t i = 0; i < needed.size(); ++i) covered = covered && (!needed[i] || barriers[i]);
      if (dev->pd_.update_after_bind && !scalars_changed && covered) {
        ++updated_in_place;
        return;
      }
      if (dev->pd_.update_after_bind) ++rerecorded_after_bind;
      dev->record_steps(*this);
    }
    void replay(StreamImpl* stream) override {
      std::lock_guard lock(dev->mutex_);
      dev->submit_recorded(*this, stream);
    }
    std::string describe() const override {
      size_t n = 0;
      for (uint8_t b : barriers) n += b;
      return "one Vulkan command buffer of " + std::to_string(steps.size()) + " steps and " + std::to_string(n) +
             " barriers between them; recorded " + std::to_string(recordings) + " times, " +
             std::to_string(sets_rewritten) + " descriptor sets rewritten in place; " +
             (dev->pd_.update_after_bind
                  ? "update-after-bind: " + std::to_string(updated_in_place) + " rebindings without recording again, " +
                        std::to_string(rerecorded_after_bind) + " recorded again (new scalars or barriers)"
                  : std::string("no update-after-bind descriptors: every rebinding records again"));
    }
  };

  std::unique_ptr<Recorded> record(const std::vector<Prepared*>& steps) override {
    auto r = std::make_unique<VulkanRecorded>();
    r->dev = this;
    for (Prepared* p : steps) r->steps.push_back(static_cast<VulkanPrepared*>(p));  // prepare() made every one
    const size_t n = steps.size();
    r->sets.assign(n, VK_NULL_HANDLE);
    r->buffers.resize(n);
    r->offsets.resize(n);
    r->scalars.resize(n);
    r->blobs.resize(n);
    r->sub.owned = true;
    const DeviceFns& f = core_->fn;
    std::lock_guard lock(mutex_);
    auto cai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = command_pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check_created(f.vkAllocateCommandBuffers(core_->device, &cai, &r->sub.cb), r->sub.cb, "vkAllocateCommandBuffers");
    auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check_created(f.vkCreateFence(core_->device, &fci, nullptr, &r->sub.fence), r->sub.fence, "vkCreateFence");
    const uint32_t loop = pd_.loop_limited ? 1 : 0;
    if (loop) {
      const uint64_t align = std::max<uint64_t>(pd_.info.min_view_offset_align, 16);
      r->sub.status_stride = uint32_t((16 + align - 1) / align * align);
      r->sub.loop_status = alloc(size_t(r->sub.status_stride) * n);
      for (VulkanPrepared* p : r->steps) r->sub.step_kernels.push_back(p->kern);
    }
    uint32_t descriptors = 0, with_set = 0;
    for (VulkanPrepared* p : r->steps) {
      descriptors += p->kern->num_buffers + loop;
      with_set += p->kern->num_buffers + loop > 0;
    }
    if (with_set > 0) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
      auto dpci = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      dpci.maxSets = with_set;
      dpci.flags = pool_flags();
      dpci.poolSizeCount = 1;
      dpci.pPoolSizes = &size;
      check_created(f.vkCreateDescriptorPool(core_->device, &dpci, nullptr, &r->pool), r->pool, "vkCreateDescriptorPool",
                    "a launch sequence of " + std::to_string(n) + " steps");
    }
    for (size_t i = 0; i < n; ++i) {
      VulkanKernel& kern = *r->steps[i]->kern;
      if (kern.num_buffers + loop > 0) {
        auto dsai = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
        dsai.descriptorPool = r->pool;
        dsai.descriptorSetCount = 1;
        dsai.pSetLayouts = &kern.set_layout;
        check_created(f.vkAllocateDescriptorSets(core_->device, &dsai, &r->sets[i]), r->sets[i],
                      "vkAllocateDescriptorSets", kern.name);
      }
      r->buffers[i].assign(kern.num_buffers, nullptr);
      r->offsets[i].assign(kern.num_buffers, 0);
      write_step_set(*r, i, true);
      r->scalars[i] = r->steps[i]->args.scalars;
      r->blobs[i] = r->steps[i]->args.blob_data;
    }
    r->sets_rewritten = 0;
    record_steps(*r);
    return r;
  }

  // Points step i's descriptor set at its buffers now, writing only the bindings that changed
  // (all of them, and the loop status slot, with `all`); mutex_ held, the set not in use.
  void write_step_set(VulkanRecorded& r, size_t i, bool all = false) {
    const VulkanPrepared& p = *r.steps[i];
    const VulkanKernel& kern = *p.kern;
    const uint32_t n = kern.num_buffers + (all && r.sub.loop_status ? 1 : 0);
    if (desc_infos_.size() < n) {
      desc_infos_.resize(n);
      desc_writes_.resize(n);
    }
    uint32_t w = 0;
    for (uint32_t b = 0; b < n; ++b) {
      VkDescriptorBufferInfo info{};
      if (b < kern.num_buffers) {
        if (!all && r.buffers[i][b] == p.args.buffers[b] && r.offsets[i][b] == p.args.offsets[b]) continue;
        if (p.args.buffers[b]->owner != core_.get())
          throw Error("Vulkan launch sequence, step " + std::to_string(i) + " (" + kern.name + "): buffer " +
                      std::to_string(b) + " is from another device");
        info = {static_cast<const VulkanBuffer*>(p.args.buffers[b])->buffer, p.args.offsets[b], VK_WHOLE_SIZE};
        r.buffers[i][b] = p.args.buffers[b];
        r.offsets[i][b] = p.args.offsets[b];
      } else {
        info = {static_cast<const VulkanBuffer&>(*r.sub.loop_status).buffer, VkDeviceSize(i) * r.sub.status_stride, 16};
      }
      desc_infos_[w] = info;
      VkWriteDescriptorSet& wr = desc_writes_[w];
      wr = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      wr.dstSet = r.sets[i];
      wr.dstBinding = b;
      wr.descriptorCount = 1;
      wr.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      wr.pBufferInfo = &desc_infos_[w];
      ++w;
    }
    if (w == 0) return;
    core_->fn.vkUpdateDescriptorSets(core_->device, w, desc_writes_.data(), 0, nullptr);
    ++r.sets_rewritten;
  }

  // Where the barriers go for the steps' bindings now (see VulkanRecorded), and the steps'
  // buffers once (r.touched).
  void place_barriers(VulkanRecorded& r, std::vector<uint8_t>& barriers) {
    const size_t n = r.steps.size();
    barriers.assign(n, 0);
    r.touched.clear();
    std::vector<const BufferImpl*> read, written;  // since the last barrier
    auto has = [](const std::vector<const BufferImpl*>& v, const BufferImpl* b) {
      return std::find(v.begin(), v.end(), b) != v.end();
    };
    for (size_t i = 0; i < n; ++i) {
      const VulkanPrepared& p = *r.steps[i];
      bool hazard = false;
      for (uint32_t b = 0; b < p.kern->num_buffers && !hazard; ++b)
        hazard = has(written, p.args.buffers[b]) || (p.kern->buffer_writes[b] && has(read, p.args.buffers[b]));
      if (hazard) {
        barriers[i] = 1;
        read.clear();
        written.clear();
      }
      for (uint32_t b = 0; b < p.kern->num_buffers; ++b) {
        (p.kern->buffer_writes[b] ? written : read).push_back(p.args.buffers[b]);
        if (std::find(r.touched.begin(), r.touched.end(), p.args.buffers[b]) == r.touched.end())
          r.touched.push_back(p.args.buffers[b]);
      }
    }
  }

  // The barriers for the bindings now, then the commands. mutex_ held, the command buffer not in use.
  void record_steps(VulkanRecorded& r) {
    const size_t n = r.steps.size();
    place_barriers(r, r.barriers);
    const DeviceFns& f = core_->fn;
    VkCommandBuffer cb = r.sub.cb;
    check(f.vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
    auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    check(f.vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
    for (size_t i = 0; i < n; ++i) {
      VulkanPrepared& p = *r.steps[i];
      if (r.barriers[i]) record_visibility_barrier(cb);
      select_sized_pipeline(*p.kern, p.args);
      record_dispatch(cb, r.sets[i], *p.kern, p.args, p.grid);
    }
    record_visibility_barrier(cb);
    check(f.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    ++r.recordings;
  }

  // The flags of every descriptor pool: update-after-bind where the device has it (the sets'
  // layouts ask for it then).
  VkDescriptorPoolCreateFlags pool_flags() const {
    return pd_.update_after_bind ? VkDescriptorPoolCreateFlags(VK_DESCRIPTOR_POOL_CREATE_UPDATE_AFTER_BIND_BIT) : 0;
  }

  // Waits for the sequence's last replay (its command buffer and sets are free after); mutex_ held.
  void wait_for(Submission& sub) {
    if (sub.ticket > core_->completed.load()) retire_through(sub.ticket);
  }

  // One submit of the recorded command buffer; mutex_ held.
  void submit_recorded(VulkanRecorded& r, StreamImpl* stream) {
    Submission& sub = r.sub;
    wait_for(sub);
    if (sub.loop_status)
      std::memset(static_cast<VulkanBuffer&>(*sub.loop_status).mapped, 0, size_t(sub.status_stride) * r.steps.size());
    const DeviceFns& f = core_->fn;
    auto submit = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &sub.cb;
    {
      std::lock_guard qlock(core_->queue_mu);
      check(f.vkQueueSubmit(core_->queue, 1, &submit, sub.fence), "vkQueueSubmit",
            "a launch sequence of " + std::to_string(r.steps.size()) + " steps");
    }
    sub.ticket = ++issued_;
    in_flight_.push_back(&sub);
    stream_of(stream).last = sub.ticket;
    for (BufferImpl* b : r.touched) {
      b->last_ticket = sub.ticket;
      b->last_stream = stream;
    }
  }

  // Each sample is one command buffer, submitted and fence-waited before the next, so samples
  // never overlap: [reset the 2 queries] [untimed L2 flush + barrier] timestamp 0 (TOP_OF_PIPE)
  // bind + push constants + dispatch, timestamp 1 (BOTTOM_OF_PIPE: after the dispatch has fully
  // completed). The interval between the two GPU timestamps holds the dispatch alone; descriptor
  // writes, recording, submission and the fence wait are host work outside it. Buffers stay
  // resident (nothing is uploaded), and descriptors are written once since every launch binds
  // the same buffers.
  std::vector<double> time_launches(CompiledKernel& kernel, const LaunchArgs& args, Dim3 grid, Dim3 threadgroup,
                                    const TimingOptions& opts) override {
    VulkanKernel& kern = checked(kernel, args);
    check_shape(kern, threadgroup);
    // timestampValidBits of our queue family is the authority: timestampComputeAndGraphics only
    // promises timestamps on *every* compute/graphics family, and is reported for context.
    if (pd_.timestamp_valid_bits == 0 || !(pd_.timestamp_period > 0.0f))
      throw Error("Vulkan device '" + pd_.info.name +
                  "' cannot time compute work (no timestamp support): queue family " +
                  std::to_string(pd_.queue_family) + " has timestampValidBits = " +
                  std::to_string(pd_.timestamp_valid_bits) + ", timestampPeriod = " +
                  std::to_string(pd_.timestamp_period) + " ns, timestampComputeAndGraphics = " +
                  (pd_.timestamp_compute_and_graphics ? "true" : "false"));
    const DeviceFns& f = core_->fn;
    VkDevice dev = core_->device;
    wait_ticket(UINT64_MAX, true);  // nothing else in flight while timing
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_query_pool();
    if (opts.flush_l2) ensure_flush_buffer();
    select_sized_pipeline(kern, args);
    write_descriptors(kern, args);
    clear_loop_status(kern);

    for (int i = 0; i < opts.warmup; ++i) {  // untimed, like launch()
      begin_commands();
      record_dispatch(command_buffer_, kern.set, kern, args, grid);
      record_visibility_barrier(command_buffer_);
      submit_and_wait(kern.name);
    }

    // Timestamps carry only timestampValidBits meaningful bits; masking the difference also
    // makes a counter wrap between the two stamps come out right.
    const uint64_t mask =
        pd_.timestamp_valid_bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << pd_.timestamp_valid_bits) - 1;
    std::vector<double> us;
    us.reserve(size_t(opts.samples > 0 ? opts.samples : 0));
    for (int i = 0; i < opts.samples; ++i) {
      begin_commands();
      f.vkCmdResetQueryPool(command_buffer_, query_pool_, 0, 2);  // query commands run in submission order
      if (opts.flush_l2) {
        // Untimed: a different value each sample so every line is really rewritten. The barrier
        // makes everything after it (the start timestamp included: ALL_COMMANDS) wait until the
        // fill has finished, so none of the fill lands inside the interval.
        f.vkCmdFillBuffer(command_buffer_, flush_buffer_, 0, VK_WHOLE_SIZE, uint32_t(i));
        auto fill_done = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
        fill_done.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        fill_done.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        f.vkCmdPipelineBarrier(command_buffer_, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                               &fill_done, 0, nullptr, 0, nullptr);
      }
      f.vkCmdWriteTimestamp(command_buffer_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, query_pool_, 0);
      record_dispatch(command_buffer_, kern.set, kern, args, grid);
      f.vkCmdWriteTimestamp(command_buffer_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_, 1);
      record_visibility_barrier(command_buffer_);
      submit_and_wait(kern.name);

      uint64_t stamps[2] = {0, 0};
      check(f.vkGetQueryPoolResults(dev, query_pool_, 0, 2, sizeof stamps, stamps, sizeof(uint64_t),
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
            "vkGetQueryPoolResults", kern.name);
      const uint64_t ticks = ((stamps[1] & mask) - (stamps[0] & mask)) & mask;
      us.push_back(double(ticks) * double(pd_.timestamp_period) / 1000.0);  // ticks * ns/tick -> us
    }
    check_loop_status(kern);
    return us;
  }

  void synchronize() override { wait_ticket(UINT64_MAX, true); }

 private:
  // Whether this kernel's tiles lower to NV cooperative matrices (codegen::VkMma): by default
  // where the device has them and the tiles are f16; IRON_VK_MMA=coopmat insists (an error
  // where it cannot), software never uses them.
  bool tile_coopmat(const ir::Kernel& k, Instantiation dtype) const {
    bool frags = false, f16 = false, other = false;
    ir::walk(k, [&](ir::Id id) {
      const Type t = k.insts[id].type;
      if (!t.is_fragment()) return;
      frags = true;
      if (t.role() != FragRole::Acc) (ir::resolve(t.elem(), dtype) == DType::F16 ? f16 : other) = true;
    });
    if (!frags) return false;
    const codegen::VkMma mma = codegen::vk_mma_from_env();
    if (mma == codegen::VkMma::Software) return false;
    const bool can = pd_.coopmat_f16 && f16 && !other;
    if (mma == codegen::VkMma::Coopmat && !can)
      throw Error("kernel '" + k.name + "' (" + instantiation_name(dtype) + "): IRON_VK_MMA=coopmat, but " +
                  (!pd_.coopmat_f16 ? "device '" + pd_.info.name +
                                          "' does not report VK_NV_cooperative_matrix with f16 A and B, f32 C and D, "
                                          "16x16x16 at subgroup scope"
                                    : std::string("its tiles are not f16 (NV cooperative matrices take f16 tiles only)")) +
                  "; IRON_VK_MMA=software or auto runs the software path");
    return can;
  }

  std::string tile_memory_message(const std::string& kernel, uint64_t tile_bytes, uint32_t groups, uint64_t arrays) const {
    return "kernel " + kernel + ": its cooperative tiles need " + std::to_string(tile_bytes) +
           " bytes of threadgroup memory on Vulkan (" + std::to_string(tile_bytes / 1024 / groups) +
           " KiB of fragment slots for each of " + std::to_string(groups) + " lane groups of " +
           std::to_string(pd_.info.lane_width) + " lanes) besides " + std::to_string(arrays) +
           " bytes of threadgroup arrays; device '" + pd_.info.name + "' allows " +
           std::to_string(pd_.info.shared_memory_bytes) +
           " (maxComputeSharedMemorySize): use a smaller threadgroup or fewer live fragments";
  }

  VulkanKernel& checked(CompiledKernel& kernel, const LaunchArgs& args) const {
    auto& kern = static_cast<VulkanKernel&>(kernel);
    if (args.buffers.size() != kern.num_buffers || args.scalars.size() != kern.num_scalars)
      throw Error("Vulkan launch of " + kern.name + ": expected " + std::to_string(kern.num_buffers) +
                  " buffers and " + std::to_string(kern.num_scalars) + " scalars, got " +
                  std::to_string(args.buffers.size()) + " and " + std::to_string(args.scalars.size()));
    if (kern.tile_bytes && args.threadgroup_bytes + kern.tile_bytes > pd_.info.shared_memory_bytes)
      throw Error(tile_memory_message(kern.name, kern.tile_bytes, kern.tile_groups, args.threadgroup_bytes));
    return kern;
  }

  void clear_loop_status(VulkanKernel& kern) {
    if (kern.loop_status) std::memset(static_cast<VulkanBuffer&>(*kern.loop_status).mapped, 0, 16);
  }

  // A loop the driver ended while its condition still held (EmitOptions::loop_limit_check).
  void check_loop_status(VulkanKernel& kern) {
    if (kern.loop_status) check_loop_status(kern.loop_status.get(), kern.name, kern.files);
  }
  void check_loop_status(BufferImpl* status_buffer, const std::string& name, const std::vector<std::string>& files,
                         size_t offset = 0) {
    uint32_t status[4];
    std::memcpy(status, static_cast<const char*>(static_cast<VulkanBuffer&>(*status_buffer).mapped) + offset, sizeof status);
    if (status[0] == 0) return;
    std::string where = "a lane reduction's butterfly loop";
    if (status[1] != 0) {
      where = "the loop at ";
      if (status[2] != 0 && status[2] < files.size()) where += files[status[2]] + ":";
      else where += "line ";
      where += std::to_string(status[1]);
    }
    throw Error("kernel " + name + " on Vulkan device '" + pd_.info.name + "': " + where +
                " stopped before its end: " + codegen::kLoopLimitText +
                ". Split the iterations over more threads or dispatches, or run on another backend.");
  }

  // Points the kernel's descriptor set at args' buffers, writing only the bindings whose buffer
  // changed since the last launch (usually none). Needs mutex_ held: the set is shared by every
  // launch of the kernel and no submitted work may still be using it.
  void write_descriptors(VulkanKernel& kern, const LaunchArgs& args) {
    if (kern.num_buffers == 0) return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < kern.num_buffers; ++i) {
      if (args.buffers[i]->owner != core_.get())
        throw Error("Vulkan launch of " + kern.name + ": buffer " + std::to_string(i) + " is from another device");
      const auto* b = static_cast<const VulkanBuffer*>(args.buffers[i]);
      const VkDeviceSize offset = i < args.offsets.size() ? args.offsets[i] : 0;
      if (kern.bound[i] == b->serial && offset == 0) continue;
      if (desc_infos_.size() < kern.num_buffers) {  // grown once; the writes point into infos
        desc_infos_.resize(kern.num_buffers);
        desc_writes_.resize(kern.num_buffers);
      }
      // Whole-buffer bindings: Context rejects a buffer beyond maxStorageBufferRange
      // (DeviceInfo::max_buffer_bytes) before a launch.
      desc_infos_[n] = {b->buffer, offset, VK_WHOLE_SIZE};
      VkWriteDescriptorSet& w = desc_writes_[n];
      w = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      w.dstSet = kern.set;
      w.dstBinding = i;
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = &desc_infos_[n];
      ++n;
    }
    if (n == 0) return;
    core_->fn.vkUpdateDescriptorSets(core_->device, n, desc_writes_.data(), 0, nullptr);
    for (uint32_t i = 0; i < kern.num_buffers; ++i) {
      const bool whole = i >= args.offsets.size() || args.offsets[i] == 0;
      kern.bound[i] = whole ? static_cast<const VulkanBuffer*>(args.buffers[i])->serial : 0;  // a view: rewritten next time
    }
  }

  void begin_commands() {
    const DeviceFns& f = core_->fn;
    check(f.vkResetCommandBuffer(command_buffer_, 0), "vkResetCommandBuffer");
    auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(f.vkBeginCommandBuffer(command_buffer_, &begin), "vkBeginCommandBuffer");
  }

  void record_dispatch(VkCommandBuffer command_buffer_, VkDescriptorSet set, const VulkanKernel& kern,
                       const LaunchArgs& args, Dim3 grid) {
    const DeviceFns& f = core_->fn;
    f.vkCmdBindPipeline(command_buffer_, VK_PIPELINE_BIND_POINT_COMPUTE, kern.pipeline);
    if (set != VK_NULL_HANDLE)
      f.vkCmdBindDescriptorSets(command_buffer_, VK_PIPELINE_BIND_POINT_COMPUTE, kern.pipeline_layout, 0, 1, &set, 0,
                                nullptr);
    if (kern.push_bytes > 0) {
      for (uint32_t i = 0; i < kern.num_scalars; ++i)  // little-endian: the low 4 or all 8 bytes
        std::memcpy(kern.push_data.data() + kern.push_offsets[i], &args.scalars[i], kern.push_wide[i] ? 8 : 4);
      for (uint32_t i = 0; i < kern.num_blobs && i < args.blob_sizes.size(); ++i)  // a blob's words follow
        std::memcpy(kern.push_data.data() + kern.push_offsets[kern.num_scalars + i], args.blob_data.data() + args.blob_offsets[i],
                    args.blob_sizes[i]);
      f.vkCmdPushConstants(command_buffer_, kern.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kern.push_bytes,
                           kern.push_data.data());
    }
    f.vkCmdDispatch(command_buffer_, grid.x, grid.y, grid.z);
  }

  // A fence wait alone does not make shader writes visible to the host. This barrier does, and
  // since barriers order against everything later in submission order, it also makes them
  // visible to the next launch's shaders.
  void record_visibility_barrier(VkCommandBuffer command_buffer_) {
    auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    core_->fn.vkCmdPipelineBarrier(command_buffer_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                   VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier,
                                   0, nullptr, 0, nullptr);
  }

  // Ends the command buffer, submits it and waits for it to finish (timed launches only; the
  // queue holds nothing else then).
  void submit_and_wait(const std::string& name) {
    const DeviceFns& f = core_->fn;
    VkDevice dev = core_->device;
    check(f.vkEndCommandBuffer(command_buffer_), "vkEndCommandBuffer");
    auto submit = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &command_buffer_;
    {
      std::lock_guard qlock(core_->queue_mu);
      check(f.vkQueueSubmit(core_->queue, 1, &submit, fence_), "vkQueueSubmit", name);
    }
    VkResult r = f.vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX);
    // Reset even after a failed wait so the next launch does not submit with a signaled fence.
    VkResult reset = f.vkResetFences(dev, 1, &fence_);
    check(r, "vkWaitForFences", name);
    check(reset, "vkResetFences");
  }

  // At most this many submissions in flight; a launch beyond it first waits for the oldest.
  static constexpr size_t kMaxInFlight = 64;

  // A free submission with a pool for `bindings` storage buffers; mutex_ held.
  Submission& acquire(uint32_t bindings) {
    retire(false);
    if (free_.empty() && in_flight_.size() >= kMaxInFlight) retire_through(in_flight_.front()->ticket);
    Submission* sub = nullptr;
    if (!free_.empty()) {
      sub = free_.back();
      free_.pop_back();
    } else {
      submissions_.push_back(std::make_unique<Submission>());
      sub = submissions_.back().get();
      const DeviceFns& f = core_->fn;
      auto cai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
      cai.commandPool = command_pool_;
      cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      cai.commandBufferCount = 1;
      check_created(f.vkAllocateCommandBuffers(core_->device, &cai, &sub->cb), sub->cb, "vkAllocateCommandBuffers");
      auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
      check_created(f.vkCreateFence(core_->device, &fci, nullptr, &sub->fence), sub->fence, "vkCreateFence");
      if (pd_.loop_limited) sub->loop_status = alloc(16);
    }
    if (bindings > sub->pool_bindings) {
      const DeviceFns& f = core_->fn;
      if (sub->pool) f.vkDestroyDescriptorPool(core_->device, sub->pool, nullptr);
      sub->pool = VK_NULL_HANDLE;
      sub->pool_bindings = 0;
      const uint32_t n = std::max<uint32_t>(bindings, 16);
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n};
      auto dpci = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      dpci.maxSets = 1;
      dpci.flags = pool_flags();
      dpci.poolSizeCount = 1;
      dpci.pPoolSizes = &size;
      check_created(f.vkCreateDescriptorPool(core_->device, &dpci, nullptr, &sub->pool), sub->pool,
                    "vkCreateDescriptorPool");
      sub->pool_bindings = n;
    } else if (sub->pool) {
      check(core_->fn.vkResetDescriptorPool(core_->device, sub->pool, 0), "vkResetDescriptorPool");
    }
    return *sub;
  }

  // The submission's descriptor set for this launch: every buffer binding, and the submission's
  // own loop status buffer after them on a loop-limited driver; mutex_ held.
  VkDescriptorSet submission_set(Submission& sub, const VulkanKernel& kern, const LaunchArgs& args) {
    const DeviceFns& f = core_->fn;
    VkDescriptorSet set = VK_NULL_HANDLE;
    auto dsai = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    dsai.descriptorPool = sub.pool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &kern.set_layout;
    check_created(f.vkAllocateDescriptorSets(core_->device, &dsai, &set), set, "vkAllocateDescriptorSets", kern.name);
    const uint32_t n = kern.num_buffers + (sub.loop_status ? 1 : 0);
    if (desc_infos_.size() < n) {
      desc_infos_.resize(n);
      desc_writes_.resize(n);
    }
    for (uint32_t i = 0; i < n; ++i) {
      const auto* b = static_cast<const VulkanBuffer*>(i < kern.num_buffers ? args.buffers[i] : sub.loop_status.get());
      const VkDeviceSize offset = i < kern.num_buffers && i < args.offsets.size() ? args.offsets[i] : 0;
      desc_infos_[i] = {b->buffer, offset, VK_WHOLE_SIZE};
      VkWriteDescriptorSet& w = desc_writes_[i];
      w = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      w.dstSet = set;
      w.dstBinding = i;
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = &desc_infos_[i];
    }
    f.vkUpdateDescriptorSets(core_->device, n, desc_writes_.data(), 0, nullptr);
    return set;
  }

  // Retires finished submissions in order (all up to and including `through` with a wait, else
  // only those whose fences have signalled); mutex_ held. A loop the driver cut short is kept as
  // the device's pending error.
  void retire(bool wait, uint64_t through = 0) {
    const DeviceFns& f = core_->fn;
    while (!in_flight_.empty()) {
      Submission& sub = *in_flight_.front();
      if (wait && sub.ticket <= through) {
        VkResult r = f.vkWaitForFences(core_->device, 1, &sub.fence, VK_TRUE, UINT64_MAX);
        if (r != VK_SUCCESS) fail("vkWaitForFences", r, sub.kernel);
      } else if (f.vkGetFenceStatus(core_->device, sub.fence) != VK_SUCCESS) {
        break;
      }
      check(f.vkResetFences(core_->device, 1, &sub.fence), "vkResetFences");
      if (sub.loop_status && pending_error_.empty()) {
        try {
          if (sub.step_kernels.empty()) check_loop_status(sub.loop_status.get(), sub.kernel, sub.files);
          for (size_t i = 0; i < sub.step_kernels.size(); ++i)
            check_loop_status(sub.loop_status.get(), sub.step_kernels[i]->name + " (step " + std::to_string(i) +
                              " of a launch sequence)", sub.step_kernels[i]->files, i * sub.status_stride);
        } catch (const Error& e) {
          pending_error_ = e.what();
        }
      }
      core_->completed.store(sub.ticket);
      in_flight_.pop_front();
      if (!sub.owned) free_.push_back(&sub);
    }
  }
  void retire_through(uint64_t ticket) { retire(true, ticket); }

  // Waits until the submission with `ticket` (and every earlier one) has finished; with
  // `report`, throws the pending error of a finished launch.
  void wait_ticket(uint64_t ticket, bool report) {
    std::string error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (ticket > core_->completed.load()) retire_through(std::min(ticket, issued_));
      if (report) error.swap(pending_error_);
    }
    if (!error.empty()) throw Error(error);
  }

  // Two timestamp queries, reused by every sample (read back before the next one is recorded).
  void ensure_query_pool() {
    if (query_pool_ != VK_NULL_HANDLE) return;
    auto qpci = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpci.queryCount = 2;
    check_created(core_->fn.vkCreateQueryPool(core_->device, &qpci, nullptr, &query_pool_), query_pool_,
                  "vkCreateQueryPool", "2 timestamp queries");
  }

  // The L2 flush target: allocated on first use, kept for the device's life. Vulkan does not
  // report the cache size, so it is 128 MiB: over twice the L2 of an H100/H200 (50 MiB), and
  // larger than the last-level cache of most CPUs lavapipe runs on. Device-local where possible
  // (the host never touches it).
  void ensure_flush_buffer() {
    if (flush_buffer_ != VK_NULL_HANDLE) return;
    constexpr VkDeviceSize kFlushBytes = VkDeviceSize(128) << 20;
    const DeviceFns& f = core_->fn;
    auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bci.size = kFlushBytes;
    bci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check_created(f.vkCreateBuffer(core_->device, &bci, nullptr, &flush_buffer_), flush_buffer_, "vkCreateBuffer",
                  "L2 flush buffer");
    VkMemoryRequirements req{};
    f.vkGetBufferMemoryRequirements(core_->device, flush_buffer_, &req);
    VkResult last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    const VkMemoryPropertyFlags preferences[] = {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0};
    for (VkMemoryPropertyFlags want : preferences) {
      for (uint32_t i = 0; i < pd_.memory.memoryTypeCount && flush_memory_ == VK_NULL_HANDLE; ++i) {
        if (!(req.memoryTypeBits & (1u << i)) || (pd_.memory.memoryTypes[i].propertyFlags & want) != want) continue;
        auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
        mai.allocationSize = req.size;
        mai.memoryTypeIndex = i;
        last = f.vkAllocateMemory(core_->device, &mai, nullptr, &flush_memory_);
        if (last != VK_SUCCESS) flush_memory_ = VK_NULL_HANDLE;
      }
      if (flush_memory_ != VK_NULL_HANDLE) break;
    }
    if (flush_memory_ == VK_NULL_HANDLE) {
      f.vkDestroyBuffer(core_->device, flush_buffer_, nullptr);
      flush_buffer_ = VK_NULL_HANDLE;
      fail("vkAllocateMemory", last, "L2 flush buffer, " + std::to_string(req.size) + " bytes");
    }
    if (VkResult r = f.vkBindBufferMemory(core_->device, flush_buffer_, flush_memory_, 0); r != VK_SUCCESS) {
      f.vkDestroyBuffer(core_->device, flush_buffer_, nullptr);
      f.vkFreeMemory(core_->device, flush_memory_, nullptr);
      flush_buffer_ = VK_NULL_HANDLE;
      flush_memory_ = VK_NULL_HANDLE;
      fail("vkBindBufferMemory", r, "L2 flush buffer");
    }
  }

  std::shared_ptr<Core> core_;
  PhysicalDevice pd_;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool query_pool_ = VK_NULL_HANDLE;      // time_launches, created on first use
  VkBuffer flush_buffer_ = VK_NULL_HANDLE;       // time_launches with flush_l2, created on first use
  VkDeviceMemory flush_memory_ = VK_NULL_HANDLE;
  // write_descriptors' scratch, under mutex_: no allocation per launch.
  std::vector<VkDescriptorBufferInfo> desc_infos_;
  std::vector<VkWriteDescriptorSet> desc_writes_;
  // Streams and submissions, under mutex_ (see Submission, VulkanStream).
  VulkanStream default_stream_;
  std::vector<std::unique_ptr<VulkanStream>> streams_;
  std::vector<std::unique_ptr<Submission>> submissions_;
  std::deque<Submission*> in_flight_;  // oldest first
  std::vector<Submission*> free_;
  uint64_t issued_ = 0;
  std::string pending_error_;
  std::mutex mutex_;
};

}  // namespace

std::string vulkan_u64_atomics_problem(const ir::Kernel& k, Instantiation dtype, const DeviceInfo& dev) {
  bool buffer = false, shared = false;
  ir::walk(k, [&](ir::Id id) {
    const ir::Inst& in = k.insts[id];
    if (!ir::is_atomic(in.op) || ir::resolve(in.type.elem(), dtype) != DType::U64) return;
    (ir::is_global_atomic(in.op) ? buffer : shared) = true;
  });
  if (buffer && !dev.int64_atomics_buffer)
    return "kernel '" + k.name + "' uses u64 atomics on a buffer; device '" + dev.name +
           "' does not support them (shaderBufferInt64Atomics, VK_KHR_shader_atomic_int64)";
  if (shared && !dev.int64_atomics_shared)
    return "kernel '" + k.name + "' uses u64 atomics on threadgroup memory; device '" + dev.name +
           "' does not support them (shaderSharedInt64Atomics, VK_KHR_shader_atomic_int64)";
  return "";
}

std::unique_ptr<Device> make_vulkan_device(int index) {
  std::unique_ptr<Instance> inst = create_instance();
  std::vector<VkPhysicalDevice> devices = enumerate(*inst);
  if (devices.empty())
    throw Error(
        "no Vulkan device: the Vulkan loader found no physical device (install a driver, e.g. "
        "mesa-vulkan-drivers for lavapipe)");
  if (index < 0 || size_t(index) >= devices.size())
    throw Error("no Vulkan device with index " + std::to_string(index) + " (" + std::to_string(devices.size()) +
                " device" + (devices.size() == 1 ? "" : "s") + " found)");
  PhysicalDevice pd = describe(*inst, devices[size_t(index)]);
  if (pd.api_version < VK_API_VERSION_1_1)
    throw Error("Vulkan device '" + pd.info.name + "' supports only API " + version_text(pd.api_version) +
                "; Iron needs Vulkan 1.1");
  if (pd.queue_family == UINT32_MAX) throw Error("Vulkan device '" + pd.info.name + "' has no compute queue");

  std::shared_ptr<Core> core = create_core(std::move(inst), pd);
  auto device = std::make_unique<VulkanDevice>(std::move(core), std::move(pd));
  device->init();
  device->probe_denormals();
  return device;
}

std::vector<DeviceInfo> list_vulkan_devices(std::string* why) {
  try {
    std::unique_ptr<Instance> inst = create_instance();
    std::vector<DeviceInfo> out;
    std::vector<VkPhysicalDevice> devices = enumerate(*inst);
    for (size_t i = 0; i < devices.size(); ++i) {
      // Opening the device runs the denormal probe; a device that cannot be opened is still
      // listed, as described.
      try {
        out.push_back(make_vulkan_device(int(i))->info());
      } catch (const Error& e) {
        out.push_back(describe(*inst, devices[i]).info);
        out.back().float_controls += std::string("; not probed: ") + e.what();
      }
    }
    if (out.empty() && why) *why = "no Vulkan device: the Vulkan loader found no physical device";
    return out;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return {};
  }
}

}  // namespace iron::rt
