/* Iron's C ABI (libiron_c.so): the registry, contexts, buffers and kernel families behind
 * opaque handles and plain C types, for callers that cannot link C++ (the Python package loads
 * it with ctypes: docs/python.md).
 *
 * Errors: a function that can fail returns 0 on success and -1 on failure; iron_last_error()
 * then returns the message (what and where, as Iron's C++ API words it) until the next call that
 * fails on the same thread. Strings returned by the library are owned by it: a JSON text stays
 * valid until the next call of the same function on the same thread (or, for iron_plan_json,
 * until the plan is destroyed).
 *
 * Handles: a buffer keeps its memory alive by itself (it may outlive the call that used it);
 * a plan is plain data; a context must outlive the buffers and plans used with it only in the
 * sense that every call taking both takes that context. A context may be used from several
 * threads (calls on one context are serialized).
 */
#ifndef IRON_C_API_H
#define IRON_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function's signature or meaning changes. */
#define IRON_C_API_VERSION 1

typedef struct iron_context iron_context;
typedef struct iron_buffer iron_buffer;
typedef struct iron_plan iron_plan;

int iron_api_version(void);
/* "0.1.0": the version of the Iron build the library comes from. */
const char* iron_version(void);
/* The message of this thread's last failure ("" when there was none). */
const char* iron_last_error(void);

/* The registry, as JSON.
 * kernels:  [{"name", "mode", "dtypes": [...], "wtypes": [...], "family" (a variant's family or
 *           null), "variant" ("VEC=8", or ""), "file", "line"}, ...] in name order.
 * families: [{"family", "file", "line"}, ...]: every kernel family with a selector, callable
 *           through iron_plan_create, in name order.
 * kernel:   one kernel traced, with its parameters: {"name", "mode", "dtypes", "wtypes",
 *           "params": [{"name", "kind": "buffer"|"scalar", "dtype", "access", "extent"}]}.
 * devices:  [{"backend", "name", "arch", "driver", "lane_width", ...}] of one backend
 *           ("cuda", "vulkan", "interp", "hip"); an empty list when it has none (the reason is
 *           then iron_last_error(), and the call still succeeds). */
const char* iron_kernels_json(void);
const char* iron_families_json(void);
int iron_kernel_json(const char* name, const char** out);
int iron_devices_json(const char* backend, const char** out);

/* A Context of one device of a backend ("cuda", "vulkan", "interp", "hip"). */
int iron_context_create(const char* backend, int index, iron_context** out);
void iron_context_destroy(iron_context* ctx);
/* The device as JSON: {"backend", "name", "arch", "driver", "lane_width", "max_threads_per_group",
 * "shared_memory_bytes", "memory_bytes", "f16", "bf16", ...}. */
int iron_context_info_json(iron_context* ctx, const char** out);
/* Waits for every stream of the context; errors of work in flight are reported here. */
int iron_context_synchronize(iron_context* ctx);

/* Buffers. dtype: "f32", "f16", "bf16", "i32", "u32", "i8", ... (docs/semantics.md). */
int iron_buffer_alloc(iron_context* ctx, const char* dtype, uint64_t count, iron_buffer** out);
/* Imports a DLPack tensor (a DLManagedTensor*, include/iron/dlpack.hpp) without copying: CUDA
 * memory into a CUDA context of its device, host memory into an interpreter context. On success
 * the buffer owns the tensor (its deleter runs when the buffer's last use is released); on
 * failure the tensor stays the caller's. */
int iron_buffer_from_dlpack(iron_context* ctx, void* dl_managed_tensor, iron_buffer** out);
/* Copies `bytes` (exactly the buffer's size) to or from host memory. A download waits for the
 * work that uses the buffer. */
int iron_buffer_upload(iron_context* ctx, iron_buffer* buf, const void* data, uint64_t bytes);
int iron_buffer_download(iron_context* ctx, iron_buffer* buf, void* data, uint64_t bytes);
uint64_t iron_buffer_count(const iron_buffer* buf);
const char* iron_buffer_dtype(const iron_buffer* buf);
void iron_buffer_release(iron_buffer* buf);

/* A family called through its selector (include/iron/launch.hpp: plan_launch).
 * args_json: the logical call's sizes and scalars, {"rows": 4, "d": 4096, "eps": 1e-6}.
 * dtype: the instantiation, "f16" or "f32,bf16" (T, then W); NULL or "" infers T from the
 * first entry of buffer_dtypes_json, [["x", "f16"], ["w", "f16"]] (the caller's buffers in the
 * order given; may be NULL when dtype is set).
 * The plan as JSON (iron_plan_json): {"family", "dtype", "reason", "describe",
 * "steps": [{"kernel", "grid", "threadgroup", "scalars"}],
 * "buffers": [{"name", "dtype", "count", "access": "in"|"out"|"inout", "output"}],
 * "scratch": [{"name", "dtype", "count", "zeroed" (only when true: cleared on the run's stream
 * each iron_plan_run)}]}: every buffer of the call in first-use order, with
 * the elements the plan touches; "output" is true when its first use only writes it (the caller
 * may leave it out and have it allocated). */
int iron_plan_create(iron_context* ctx, const char* family, const char* dtype, const char* args_json,
                     const char* buffer_dtypes_json, iron_plan** out);
const char* iron_plan_json(const iron_plan* plan);
/* Runs the plan's steps in order on `stream` and returns without waiting: every step is
 * validated (Context::dispatch_with_grid) before it launches. names[i] binds buffers[i]; every
 * buffer of the plan must be bound and every name must be one of the plan's. stream: a native
 * stream handle (CUDA: a CUstream, e.g. torch.cuda.current_stream().cuda_stream); 0 is the
 * context's default stream (CUDA: the legacy null stream, PyTorch's default stream). Scratch
 * buffers come from the context's stream-ordered pool. */
int iron_plan_run(iron_context* ctx, const iron_plan* plan, size_t n, const char* const* names,
                  iron_buffer* const* buffers, uint64_t stream);
void iron_plan_destroy(iron_plan* plan);

#ifdef __cplusplus
}
#endif

#endif /* IRON_C_API_H */
