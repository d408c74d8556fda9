# cb_gpu_plugin_side_file(TARGET CUDA_VERSION [ptx]): writes FILE.cuda beside the GPU plugin TARGET,
# "clusterbench-gpu-plugin abi=N cuda=NNNNN" (CB_GPU_ABI_VERSION of bench/gpu/plugin_abi.h, the
# CUDA version it is built with as CUDART_VERSION, e.g. 13000), plus " kernels=ptx driver=B" when
# its kernels are PTX the driver compiles (the wheel-built CUDA 12 plugin: a driver older than its
# CUDA cannot read them, so no minor-version compatibility; B: the first driver branch of that
# CUDA, which package.sh and the package's description quote), so that the loader chooses among
# plugins without loading any of them (both NCCL builds are libnccl.so.2).
set(_cb_plugin_abi_header ${CMAKE_CURRENT_LIST_DIR}/../bench/gpu/plugin_abi.h)

function(cb_gpu_plugin_side_file target cuda_version)
  file(STRINGS ${_cb_plugin_abi_header} _abi REGEX "^#define CB_GPU_ABI_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+).*" "\\1" _abi "${_abi}")
  set(_kernels "")
  if(ARGV2 STREQUAL "ptx")
    # The first driver branch of its exact CUDA (bench/gpu/loader.cpp min_driver_branch).
    set(_first 12000:525 12010:530 12020:535 12030:545 12040:550 12050:555 12060:560 12080:570
               12090:575 13000:580)
    set(_driver "")
    foreach(_pair IN LISTS _first)
      string(REPLACE ":" ";" _pair "${_pair}")
      list(GET _pair 0 _cuda)
      list(GET _pair 1 _branch)
      math(EXPR _cuda_major "${_cuda} / 1000")
      math(EXPR _built_major "${cuda_version} / 1000")
      if(_cuda LESS_EQUAL cuda_version AND _cuda_major EQUAL _built_major)
        set(_driver ${_branch})
      endif()
    endforeach()
    set(_kernels " kernels=ptx driver=${_driver}")
  endif()
  file(GENERATE OUTPUT $<TARGET_FILE:${target}>.cuda
       CONTENT "clusterbench-gpu-plugin abi=${_abi} cuda=${cuda_version}${_kernels}\n")
endfunction()

# CUDART_VERSION of a "major.minor[.patch]" toolkit version: 13.0.88 -> 13000.
function(cb_cudart_version out version)
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _m "${version}")
  math(EXPR _v "${CMAKE_MATCH_1} * 1000 + ${CMAKE_MATCH_2} * 10")
  set(${out} ${_v} PARENT_SCOPE)
endfunction()
