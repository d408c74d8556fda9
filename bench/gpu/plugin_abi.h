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
/* Starts CUDA and fills `info`. */
int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen);
/* Selects the device for this process (cudaSetDevice). */
int cb_gpu_set_device(int device, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
