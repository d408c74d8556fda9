/* The C interface of libclusterbench_gpu.so, the GPU plugin the core dlopens (docs/design.md "GPU
 * plugin", docs/architecture.md). Version 2: one generic operation interface; 3: cb_nccl_copy
 * takes the communicator (the copy is ordered on its stream); 4: cb_nccl_compare (the burn-in
 * checks every all_reduce).
 *
 * Return codes: CB_GPU_OK (0), or one of the codes below; after a failed call,
 * cb_gpu_last_error() holds the text on the calling thread. No exception crosses this ABI. */
#ifndef CLUSTERBENCH_GPU_PLUGIN_ABI_H
#define CLUSTERBENCH_GPU_PLUGIN_ABI_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

#define CB_GPU_ABI_VERSION 4
#define CB_GPU_OK 0
#define CB_GPU_ERROR 1               /* the call failed: the case fails */
#define CB_GPU_DRIVER_INSUFFICIENT 2 /* the driver is older than the plugin's CUDA: exit 2 */
#define CB_GPU_UNSUPPORTED 3         /* the case cannot run on this GPU (dtype, memory): waived */
#define CB_GPU_ABORTED 4 /* deadline passed or NCCL async error: the communicator was aborted */

/* --- Start-up ------------------------------------------------------------------------------ */

typedef struct {
  int device_count;    /* cudaGetDeviceCount */
  int runtime_version; /* cudaRuntimeGetVersion, e.g. 13000 */
  int driver_version;  /* cudaDriverGetVersion (highest CUDA the driver supports) */
  int built_cuda;      /* CUDART_VERSION the plugin was built with */
  int cublaslt_version;
  int nccl_version; /* 0 when built without NCCL */
} cb_gpu_info;

/* ABI version of the plugin (CB_GPU_ABI_VERSION); the loader refuses any other. */
int cb_gpu_abi_version(void);
/* CUDART_VERSION the plugin was built with (e.g. 12020); touches no CUDA. The loader picks among
 * several plugins by it (bench/gpu/loader.hpp). */
int cb_gpu_built_cuda_version(void);
/* Starts CUDA and fills `info`. The text of a failure goes to `err` (and the last error). */
int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen);
/* Selects the device of the calling thread (cudaSetDevice); a failure's text goes to `err` (and
 * the last error). */
int cb_gpu_set_device(int device, char* err, size_t errlen);
/* The text of the calling thread's last failed call ("" when none failed). Valid until the
 * thread's next failing call. */
const char* cb_gpu_last_error(void);

/* --- Operations ------------------------------------------------------------------------------
 * An operation is the unit of GPU work one benchmark case times, of a kind the plugin registers
 * by name; each kind's source file states its params and info: "gemm" (compute/gemm_gpu.cpp),
 * "device_copy" (compute/gpu_memory_bandwidth_gpu.cpp), "host_copy"
 * (compute/host_device_copy_gpu.cpp), "pinned_h2d" (io/dataloader_gpu.cpp), "device" (the
 * current device's facts, bench/gpu/plugin/op.cpp). It owns its device memory, its CUDA stream
 * and two CUDA events, on the device that was current on the creating thread. */
typedef struct cb_gpu_op cb_gpu_op;

/* Creates an operation of `kind` from `params_json` (a JSON object): allocates, fills, decides
 * (e.g. the GEMM's algorithm), runs it once and verifies the result. *out = NULL on failure.
 * CB_GPU_UNSUPPORTED: this GPU cannot run it (dtype, memory); CB_GPU_ERROR: an unknown kind, bad
 * params or a CUDA/library error. */
int cb_gpu_op_create(const char* kind, const char* params_json, cb_gpu_op** out);
/* What create measured and decided, as a JSON object: at least "device" (name), "pci_bus_id",
 * "compute_capability" and "device_bytes" (the operation's own device memory, B), plus the kind's
 * own facts (verification, algorithm, ...). Owned by the operation. */
const char* cb_gpu_op_info(const cb_gpu_op* op);
/* Runs `count` operations back to back on the operation's stream, between two CUDA events, and
 * waits for them; `seconds` = the events' elapsed time of the whole batch. */
int cb_gpu_op_run(cb_gpu_op* op, long long count, double* seconds);
void cb_gpu_op_destroy(cb_gpu_op* op);
/* Re-checks the operation's current output as it stands after the last run, without computing it
 * again (the burn-in re-verifies the product it soaks: compute/burnin.cpp), and refreshes the
 * info's "verification" (cb_gpu_op_info's text is remade). CB_GPU_ERROR for a kind without a
 * check. */
int cb_gpu_op_check(cb_gpu_op* op);

/* --- Collectives over NCCL --------------------------------------------------------------------
 * collectives/nccl_backend.cpp; a plugin built without NCCL lacks these. A communicator is not an
 * operation (every rank must call together, it outlives cases), so it keeps its own entry points;
 * they return the codes above and leave their text in cb_gpu_last_error(). Buffers are device
 * memory from cb_nccl_alloc. Counts are elements: all_reduce, broadcast, reduce, sendrecv move
 * `count`; all_gather sends `block` per rank, reduce_scatter keeps `block` per rank, alltoall sends
 * `block` to each rank (grouped ncclSend/ncclRecv, as nccl-tests). Reduction op: sum. */
#define CB_NCCL_ID_BYTES 128
enum {
  CB_COLL_ALL_REDUCE = 0,
  CB_COLL_ALL_GATHER = 1,
  CB_COLL_REDUCE_SCATTER = 2,
  CB_COLL_BROADCAST = 3,
  CB_COLL_REDUCE = 4,
  CB_COLL_ALLTOALL = 5,
  CB_COLL_SENDRECV = 6
};
enum { CB_DTYPE_FLOAT = 0, CB_DTYPE_HALF = 1, CB_DTYPE_BFLOAT16 = 2 };
typedef struct cb_nccl_comm cb_nccl_comm;
/* Rank 0 creates the ncclUniqueId; the caller broadcasts its bytes (MPI) to every rank. */
int cb_nccl_unique_id(unsigned char id[CB_NCCL_ID_BYTES]);
/* ncclCommInitRankConfig, non-blocking, polled until ready or `timeout_s` (then aborted:
 * CB_GPU_ABORTED). Every later operation waits against the same `timeout_s`. */
int cb_nccl_comm_init(const unsigned char id[CB_NCCL_ID_BYTES], int nranks, int rank,
                      double timeout_s, cb_nccl_comm** out);
void cb_nccl_comm_destroy(cb_nccl_comm* c);
int cb_nccl_alloc(size_t bytes, void** dev);
void cb_nccl_free(void* dev);
/* cudaMemcpyAsync on the communicator's stream, waited for (polled against `timeout_s`) before it
 * returns, so that the next cb_nccl_run on that stream, and the caller's check of a downloaded
 * buffer, see the copy complete. `to_device` 1: host -> device, 0: device -> host. */
int cb_nccl_copy(cb_nccl_comm* c, void* dst, const void* src, size_t bytes, int to_device);
/* Enqueues `ops` operations between two CUDA events on the communicator's stream and waits,
 * polling the stop event and ncclCommGetAsyncError, until done or `timeout_s` has passed.
 * `seconds` = the events' elapsed time. On timeout or an async error the communicator is aborted
 * (ncclCommAbort) and CB_GPU_ABORTED returned with the reason; the communicator is unusable. */
int cb_nccl_run(cb_nccl_comm* c, int coll, int dtype, const void* send, void* recv, size_t count,
                size_t block, int root, long long ops, double* seconds);
/* Counts the elements of `dtype` (CB_DTYPE_*) among `count` at `a` that differ from `ref` (both
 * cb_nccl_alloc buffers), on the communicator's stream after what is queued there, waited for
 * against the deadline: the burn-in compares each all_reduce result with the first one checked.
 * `differing` receives the count. */
int cb_nccl_compare(cb_nccl_comm* c, const void* a, const void* ref, size_t count, int dtype,
                    long long* differing);
/* Makes NCCL re-read NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE from the environment
 * (ncclResetDebugInit, looked up at run time: older NCCL lacks it). The probe of
 * collectives/nccl_host.cpp turns NCCL's logging on around one untimed call and off again.
 * Returns CB_GPU_OK, or CB_GPU_ERROR when this NCCL cannot. */
int cb_nccl_reset_debug(void);

#ifdef __cplusplus
}
#endif
#endif
