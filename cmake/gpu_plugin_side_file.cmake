# cb_gpu_plugin_side_file(TARGET CUDA_VERSION): writes FILE.cuda beside the GPU plugin TARGET,
# "clusterbench-gpu-plugin abi=N cuda=NNNNN" (CB_GPU_ABI_VERSION of bench/gpu/plugin_abi.h, the
# CUDA version it is built with as CUDART_VERSION, e.g. 13000), so that the loader chooses among
# plugins without loading any of them (both NCCL builds are libnccl.so.2).
set(_cb_plugin_abi_header ${CMAKE_CURRENT_LIST_DIR}/../bench/gpu/plugin_abi.h)

function(cb_gpu_plugin_side_file target cuda_version)
  file(STRINGS ${_cb_plugin_abi_header} _abi REGEX "^#define CB_GPU_ABI_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+).*" "\\1" _abi "${_abi}")
  file(GENERATE OUTPUT $<TARGET_FILE:${target}>.cuda
       CONTENT "clusterbench-gpu-plugin abi=${_abi} cuda=${cuda_version}\n")
endfunction()

# CUDART_VERSION of a "major.minor[.patch]" toolkit version: 13.0.88 -> 13000.
function(cb_cudart_version out version)
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _m "${version}")
  math(EXPR _v "${CMAKE_MATCH_1} * 1000 + ${CMAKE_MATCH_2} * 10")
  set(${out} ${_v} PARENT_SCOPE)
endfunction()
