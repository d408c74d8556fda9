# The CUDA 12 plugin built from PyPI's CUDA 12.2 wheels in .deps/cuda12 (scripts/setup.sh --test or
# --package), where no CUDA 12 toolkit is given (CLUSTERBENCH_CUDA12_ROOT: the nvcc build of
# bench/gpu/standalone instead). PyPI has no CUDA 12 nvcc, so:
#  - the plugin's host sources (the clusterbench_gpu target's .cpp files) are compiled by the C++
#    compiler against the wheels' CUDA runtime 12.2, cuBLAS 12.2 and NCCL 2.18 headers and linked
#    against their libraries;
#  - its kernels (the .cuh files of bench/gpu/plugin/ptx_kernels.txt) are compiled to PTX at build
#    time by cb_ptxgen with the CUDA 12.2 NVRTC wheel (ISA 8.2, compute_80: what driver 535 reads)
#    and launched from that PTX through the driver's module API (bench/gpu/plugin/ptx_module.hpp).
# Output: libclusterbench_gpu_cuda12.so and its side file (cuda=12020) beside the binary, where the
# loader chooses between the two plugins by the driver's CUDA version.
set(CB_CUDA12_WHEELS ${CMAKE_SOURCE_DIR}/.deps/cuda12/nvidia)
if(NOT TARGET clusterbench_gpu OR CLUSTERBENCH_CUDA12_ROOT)
  return()
endif()
foreach(_f cuda_runtime/lib/libcudart.so.12 cuda_runtime/include/cuda.h cublas/lib/libcublasLt.so.12
           cuda_nvrtc/lib/libnvrtc.so.12 cuda_nvrtc/include/nvrtc.h cuda_nvcc/include/crt/host_config.h)
  if(NOT EXISTS ${CB_CUDA12_WHEELS}/${_f})
    message(STATUS "clusterbench: no CUDA 12 plugin (${CB_CUDA12_WHEELS}/${_f} missing: "
                   "scripts/setup.sh --package fetches the wheels)")
    return()
  endif()
endforeach()

add_executable(cb_ptxgen ${CMAKE_SOURCE_DIR}/bench/gpu/ptxgen/ptxgen.cpp)
target_include_directories(cb_ptxgen PRIVATE ${CB_CUDA12_WHEELS}/cuda_nvrtc/include)
target_link_libraries(cb_ptxgen PRIVATE ${CB_CUDA12_WHEELS}/cuda_nvrtc/lib/libnvrtc.so.12)
set_target_properties(cb_ptxgen PROPERTIES BUILD_RPATH ${CB_CUDA12_WHEELS}/cuda_nvrtc/lib)

set(_list ${CMAKE_SOURCE_DIR}/bench/gpu/plugin/ptx_kernels.txt)
file(GLOB _kernel_headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/compute/*.cuh
     ${CMAKE_SOURCE_DIR}/bench/gpu/plugin/*.cuh)
set(_ptx_cpp ${CMAKE_BINARY_DIR}/gpu-cuda12/ptx_kernels_gen.cpp)
add_custom_command(OUTPUT ${_ptx_cpp}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/gpu-cuda12
  COMMAND cb_ptxgen ${_list} ${_ptx_cpp} compute_80 -I${CMAKE_SOURCE_DIR}
          -I${CMAKE_SOURCE_DIR}/bench -I${CB_CUDA12_WHEELS}/cuda_runtime/include
  DEPENDS cb_ptxgen ${_list} ${_kernel_headers}
  COMMENT "clusterbench: the CUDA 12 plugin's kernels as PTX (NVRTC 12.2)")
# A target of its own: the plugin and the unit test of its launchers (tests/compute.cmake) both
# compile the generated source, so both wait for it.
add_custom_target(clusterbench_gpu_cuda12_ptx DEPENDS ${_ptx_cpp})
set(CB_CUDA12_PTX_SOURCE ${_ptx_cpp})

get_target_property(_gpu_sources clusterbench_gpu SOURCES)
get_target_property(_gpu_dir clusterbench_gpu SOURCE_DIR)
set(_sources ${_ptx_cpp} ${CMAKE_SOURCE_DIR}/bench/gpu/plugin/ptx_module.cpp
    ${CMAKE_SOURCE_DIR}/bench/gpu/plugin/ptx_compare.cpp ${CMAKE_SOURCE_DIR}/compute/gpu_kernels_ptx.cpp)
set(_have_nccl 0)
if(EXISTS ${CB_CUDA12_WHEELS}/nccl/include/nccl.h AND EXISTS ${CB_CUDA12_WHEELS}/nccl/lib/libnccl.so.2)
  set(_have_nccl 1)
endif()
foreach(_s IN LISTS _gpu_sources)
  cmake_path(ABSOLUTE_PATH _s BASE_DIRECTORY ${_gpu_dir} OUTPUT_VARIABLE _abs)
  if(_abs MATCHES "\\.cpp$" AND (_have_nccl OR NOT _abs MATCHES "nccl_backend\\.cpp$"))
    list(APPEND _sources ${_abs})
  endif()
endforeach()
add_library(clusterbench_gpu_cuda12 SHARED ${_sources})
add_dependencies(clusterbench_gpu_cuda12 clusterbench_gpu_cuda12_ptx)
get_target_property(_gpu_includes clusterbench_gpu INCLUDE_DIRECTORIES)
get_target_property(_gpu_defs clusterbench_gpu COMPILE_DEFINITIONS)
if(NOT _gpu_defs)
  set(_gpu_defs "")
endif()
list(REMOVE_ITEM _gpu_defs CLUSTERBENCH_HAVE_NCCL=1)
target_include_directories(clusterbench_gpu_cuda12 PRIVATE ${_gpu_includes}
  ${CB_CUDA12_WHEELS}/cuda_runtime/include ${CB_CUDA12_WHEELS}/cuda_nvcc/include
  ${CB_CUDA12_WHEELS}/cublas/include ${CB_CUDA12_WHEELS}/nccl/include)
target_compile_definitions(clusterbench_gpu_cuda12 PRIVATE ${_gpu_defs}
                           CLUSTERBENCH_HAVE_NCCL=${_have_nccl} CLUSTERBENCH_PTX_KERNELS=1)
target_link_libraries(clusterbench_gpu_cuda12 PRIVATE nlohmann_json::nlohmann_json
  ${CB_CUDA12_WHEELS}/cuda_runtime/lib/libcudart.so.12
  ${CB_CUDA12_WHEELS}/cublas/lib/libcublasLt.so.12
  $<${_have_nccl}:${CB_CUDA12_WHEELS}/nccl/lib/libnccl.so.2>)
target_link_options(clusterbench_gpu_cuda12 PRIVATE -Wl,--no-undefined)
# Run path: a CUDA 12 installation's usual places (an NGC image's /usr/local/cuda is 12.x; a
# node with CUDA 13 there has no libcudart.so.12 in it), else LD_LIBRARY_PATH (the pip wheels).
set_target_properties(clusterbench_gpu_cuda12 PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
  CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON
  SKIP_BUILD_RPATH ON
  INSTALL_RPATH "/usr/local/cuda-12/lib64:/usr/local/cuda/lib64")
include(${CMAKE_SOURCE_DIR}/cmake/gpu_plugin_side_file.cmake)
file(STRINGS ${CB_CUDA12_WHEELS}/cuda_runtime/include/cuda_runtime_api.h _cudart
     REGEX "^#define CUDART_VERSION +[0-9]+")
string(REGEX REPLACE ".* ([0-9]+).*" "\\1" _cudart "${_cudart}")
cb_gpu_plugin_side_file(clusterbench_gpu_cuda12 ${_cudart} ptx)
add_dependencies(clusterbench clusterbench_gpu_cuda12)
set(CLUSTERBENCH_CUDA12_PLUGIN ON)
message(STATUS "clusterbench: CUDA 12 plugin from the CUDA 12 wheels (CUDART_VERSION ${_cudart}, kernels as PTX)")
