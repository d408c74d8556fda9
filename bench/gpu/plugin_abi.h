/* The C interface of libclusterbench_gpu.so, the GPU plugin the core dlopens (DESIGN.md).
 * Every function returns 0 on success, CB_GPU_ERROR with a message in `err`, or
 * CB_GPU_DRIVER_INSUFFICIENT when the driver is older than the CUDA the plugin was built for. */
#ifndef CLUSTERBENCH_GPU_PLUGIN_ABI_H
#define CLUSTERBENCH_GPU_PLUGIN_ABI_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

#define CB_GPU_ABI_VERSION 1
#define CB_GPU_OK 0
#define CB_GPU_ERROR 1
#define CB_GPU_DRIVER_INSUFFICIENT 2
#define CB_GPU_UNSUPPORTED 3 /* the case cannot run on this GPU (reason in `err`): waived */

typedef struct {
  int device_count;    /* cudaGetDeviceCount */
  int runtime_version; /* cudaRuntimeGetVersion, e.g. 13000 */
  int driver_version;  /* cudaDriverGetVersion (highest CUDA the driver supports) */
  int built_cuda;      /* CUDART_VERSION the plugin was built with */
  int cublaslt_version;
  int nccl_version;    /* 0 when built without NCCL */
} cb_gpu_info;

/* ABI version of the plugin; the loader refuses a mismatch. */
int cb_gpu_abi_version(void);
/* CUDART_VERSION the plugin was built with (e.g. 12020); touches no CUDA. The loader picks among
 * several plugins by it (bench/gpu_plugin.hpp); additive to ABI version 1. */
int cb_gpu_built_cuda_version(void);
/* Starts CUDA and fills `info`. */
int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen);
/* Selects the device for this process (cudaSetDevice). */
int cb_gpu_set_device(int device, char* err, size_t errlen);

/* compute.gemm through cuBLASLt (compute/gemm_gpu.cpp; additive to ABI version 1: the core looks
 * these up with dlsym and fails the case when a plugin lacks them). D (M x N, column-major) =
 * op(A) B with A stored K x M (op = transpose, the "TN" layout FP8 requires), B K x N; FP32
 * accumulation; beta = 0. Inputs are random, magnitude in [0.25, 1) with a random sign. */
typedef struct cb_gemm cb_gemm;
typedef struct {
  const char* dtype;  /* "fp16", "bf16", "tf32", "fp32", "fp8_e4m3" */
  long long m, n, k;
  int max_algos;        /* top-N heuristic algorithms timed; the fastest is kept */
  int verify_samples;   /* sampled output elements checked against a double reference */
  unsigned long long seed;
} cb_gemm_params;
typedef struct {
  char input_type[16], output_type[16], compute_type[32];
  char device_name[256], pci_bus_id[32];
  int sm_major, sm_minor;
  int algos_returned, algos_tried;
  long long algo_id, algo_tile, algo_stages, algo_splitk, algo_swizzle, algo_reduction;
  double algo_best_seconds;  /* best algorithm's seconds per product during the selection */
  long long workspace_bytes;
  int samples_checked;
  double max_rel_error;      /* max |d - ref| / sum_p |a_ip b_pj| over the samples */
  long long worst_i, worst_j;
} cb_gemm_info;
/* Allocates, fills, selects the algorithm, runs the kept one once and verifies the samples.
 * CB_GPU_UNSUPPORTED: no algorithm for this shape/dtype, or the GPU lacks the dtype. */
int cb_gpu_gemm_create(const cb_gemm_params* p, cb_gemm** out, cb_gemm_info* info, char* err,
                       size_t errlen);
/* Runs `count` products back to back; `seconds` = CUDA-event time of the whole batch. */
int cb_gpu_gemm_run(cb_gemm* g, long long count, double* seconds, char* err, size_t errlen);
void cb_gpu_gemm_destroy(cb_gemm* g);

/* compute.gpu_memory_bandwidth (compute/gpu_memory_bandwidth_gpu.cpp; additive like the GEMM
 * entry points): copies `bytes` from one device buffer to another on the current device, by the
 * plugin's own kernel (method 0: 16-byte loads and stores, grid-stride) or by cudaMemcpyAsync
 * device-to-device (method 1). */
typedef struct cb_dcopy cb_dcopy;
typedef struct {
  long long bytes; /* 0: max(16 x L2, 1 GiB), capped at a quarter of the free memory */
  int method;      /* 0 kernel, 1 cudaMemcpyAsync */
} cb_dcopy_params;
typedef struct {
  char device_name[256], pci_bus_id[32];
  long long l2_bytes, bytes;
  int blocks, threads; /* kernel launch (method 0) */
  long long mismatches; /* 16-byte words wrong among those checked after one copy */
  long long checked;
} cb_dcopy_info;
int cb_gpu_dcopy_create(const cb_dcopy_params* p, cb_dcopy** out, cb_dcopy_info* info, char* err,
                        size_t errlen);
/* Runs `count` copies back to back; `seconds` = CUDA-event time of the whole batch. */
int cb_gpu_dcopy_run(cb_dcopy* c, long long count, double* seconds, char* err, size_t errlen);
void cb_gpu_dcopy_destroy(cb_dcopy* c);

/* compute.host_device_copy (compute/host_device_copy_gpu.cpp; additive like the GEMM entry
 * points). The caller owns the host buffers (allocated and NUMA-bound by the core with hwloc);
 * the plugin pins them with cudaHostRegister when `pinned` (unregistered at destroy) and copies
 * between them and its own device buffers on the current device. */
typedef struct {
  char device_name[256], pci_bus_id[32]; /* of the current device (cudaGetDevice) */
} cb_gpu_device_info;
int cb_gpu_current_device(cb_gpu_device_info* info, char* err, size_t errlen);

enum { CB_HCOPY_H2D = 0, CB_HCOPY_D2H = 1, CB_HCOPY_BIDIR = 2 };
typedef struct cb_hcopy cb_hcopy;
typedef struct {
  long long bytes; /* per direction, a multiple of 16 */
  int direction;   /* CB_HCOPY_*: bidir = an H2D and a D2H of `bytes` each, on two streams */
  int pinned;      /* 1: cudaHostRegister the host buffers; 0: pageable */
  void* host_src;  /* `bytes`: the source of H2D (and the reference of every check) */
  void* host_dst;  /* `bytes`: the destination of D2H (unused by h2d) */
} cb_hcopy_params;
typedef struct {
  char device_name[256], pci_bus_id[32];
  long long mismatches; /* 16-byte words wrong among those checked after one copy each way */
  long long checked;
} cb_hcopy_info;
int cb_gpu_hcopy_create(const cb_hcopy_params* p, cb_hcopy** out, cb_hcopy_info* info, char* err,
                        size_t errlen);
/* Runs `count` copies (bidir: `count` of each direction) back to back; `seconds` = CUDA-event
 * time of the whole batch. */
int cb_gpu_hcopy_run(cb_hcopy* c, long long count, double* seconds, char* err, size_t errlen);
void cb_gpu_hcopy_destroy(cb_hcopy* c);

/* Collectives over NCCL (collectives/nccl_backend.cpp; additive to ABI version 1: the core looks
 * these up with dlsym; a plugin built without NCCL lacks them). Buffers are device memory from
 * cb_nccl_alloc. Counts are elements: all_reduce, broadcast, reduce, sendrecv move `count`;
 * all_gather sends `block` per rank, reduce_scatter keeps `block` per rank, alltoall sends `block`
 * to each rank (grouped ncclSend/ncclRecv, as nccl-tests). Reduction op: sum. */
#define CB_GPU_ABORTED 4 /* deadline passed or NCCL async error: the communicator was aborted */
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
int cb_nccl_unique_id(unsigned char id[CB_NCCL_ID_BYTES], char* err, size_t errlen);
/* ncclCommInitRankConfig, non-blocking, polled until ready or `timeout_s` (then aborted:
 * CB_GPU_ABORTED). Every later operation waits against the same `timeout_s`. */
int cb_nccl_comm_init(const unsigned char id[CB_NCCL_ID_BYTES], int nranks, int rank,
                      double timeout_s, cb_nccl_comm** out, char* err, size_t errlen);
void cb_nccl_comm_destroy(cb_nccl_comm* c);
int cb_nccl_alloc(size_t bytes, void** dev, char* err, size_t errlen);
void cb_nccl_free(void* dev);
/* cudaMemcpy; `to_device` 1: host -> device, 0: device -> host. */
int cb_nccl_copy(void* dst, const void* src, size_t bytes, int to_device, char* err,
                 size_t errlen);
/* Enqueues `ops` operations between two CUDA events on the communicator's stream and waits,
 * polling the stop event and ncclCommGetAsyncError, until done or `timeout_s` has passed.
 * `seconds` = the events' elapsed time. On timeout or an async error the communicator is aborted
 * (ncclCommAbort) and CB_GPU_ABORTED returned with the reason; the communicator is unusable. */
int cb_nccl_run(cb_nccl_comm* c, int coll, int dtype, const void* send, void* recv,
                size_t count, size_t block, int root, long long ops, double* seconds, char* err,
                size_t errlen);
/* Makes NCCL re-read NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE from the environment
 * (ncclResetDebugInit, looked up at run time: older NCCL lacks it). The probe of
 * collectives/nccl_host.cpp turns NCCL's logging on around one untimed call and off again.
 * Returns CB_GPU_OK, or CB_GPU_ERROR when this NCCL cannot. */
int cb_nccl_reset_debug(void);

#ifdef __cplusplus
}
#endif
#endif
