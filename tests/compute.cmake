# compute/ tests (included by tests/CMakeLists.txt). Budgets: unit tests < 5 s each;
# compute_gemm_cpu (the real ci run of compute.gemm on OpenBLAS) < 60 s on 2 cores;
# compute_gpu_check (scripts/gpu-check.sh rehearsed without a GPU) < 30 s.
# cb_compute holds compute/burnin.cpp, whose core side (bench/burnin.cpp) calls collectives/:
# the unit tests link cb_collectives too.
cb_unit_test(test_gemm clusterbench_core cb_compute cb_collectives cb_io)
cb_unit_test(test_training_model clusterbench_core cb_compute cb_collectives cb_io)
cb_unit_test(test_compute_gpu_memory_bandwidth clusterbench_core cb_compute cb_collectives cb_io)
cb_unit_test(test_host_device_copy clusterbench_core cb_compute cb_collectives cb_io)
# test_gemm_no_openblas (< 5 s): compute/ as the -DCLUSTERBENCH_GPU_CHECK=ON build makes it, no
# OpenBLAS linked (compute/openblas_none.cpp): the CPU GEMM and burn-in are waived naming the option.
if(NOT CLUSTERBENCH_GPU_CHECK)
  cb_compute_library(cb_compute_no_openblas NO_OPENBLAS)
  cb_unit_test(test_gemm_no_openblas clusterbench_core cb_compute_no_openblas cb_collectives cb_io)
endif()
cb_integration_test(compute_gemm_cpu TIMEOUT 120)
cb_integration_test(compute_gpu_check TIMEOUT 120)
# compute_gpu_fake: the GPU cases end to end through the fake NVML and the fake plugin (telemetry
# rows, host copies) < 60 s.
cb_integration_test(compute_gpu_fake TIMEOUT 120)
# gpu_bundle_rehearsal (issue 18): scripts/gpu-check.sh --bundle (<= 48 MiB), unpacked and run in
# a chroot of a bare Debian root with CUDA's libraries in the pip-wheel layout. Its first run
# builds the -DCLUSTERBENCH_GPU_CHECK=ON binary and plugin (build/gpu-bundle, minutes on 2 cores;
# kept); then < 3 min. Root only (skipped otherwise). Its build is also the -DCLUSTERBENCH_MPI=OFF
# binary that single_process_nompi runs (one MPI-less build in make test, not two).
cb_integration_test(gpu_bundle_rehearsal LOCKS chroot TIMEOUT 2400 FIXTURES_SETUP nompi_build)
cb_integration_test(single_process_nompi TIMEOUT 120 FIXTURES_REQUIRED nompi_build)

# --- GPU plugin choice and the CUDA 12 host check (issue 3, CUDA versions) ------------------------
# Fake plugins that say they were built with CUDA 13.0 and 12.2, named as the real ones, each in a
# folder of its own (tests/fake_plugins/cudaNNNNN/). test_gpu_plugin (the choice function and the
# loader, < 5 s) and gpu_plugin_choice (the binary picks by the fake NVML's driver version, exit 2
# when none fits, < 30 s) use them. Each links a stand-in libnccl.so.2 of its own
# (tests/fake_nccl/cudaNNNNN/, issue 18 item 5) and has the side file FILE.cuda a real plugin has.
if(TARGET fake_gpu_plugin)
  include(${CMAKE_SOURCE_DIR}/cmake/gpu_plugin_side_file.cmake)
  foreach(_v 13000 12020)
    add_library(fake_nccl_${_v} SHARED fake_plugin/fake_nccl.cpp)
    target_compile_definitions(fake_nccl_${_v} PRIVATE FAKE_NCCL_IDENTITY="nccl-for-cuda${_v}")
    set_target_properties(fake_nccl_${_v} PROPERTIES OUTPUT_NAME nccl SOVERSION 2
      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake_nccl/cuda${_v})
    add_library(fake_gpu_plugin_${_v} SHARED fake_plugin/fake_plugin.cpp)
    target_include_directories(fake_gpu_plugin_${_v} PRIVATE ${CMAKE_SOURCE_DIR}/bench ${CMAKE_SOURCE_DIR})
    target_link_libraries(fake_gpu_plugin_${_v} PRIVATE nlohmann_json::nlohmann_json)
    target_link_libraries(fake_gpu_plugin_${_v} PRIVATE fake_nccl_${_v})
    target_compile_definitions(fake_gpu_plugin_${_v} PRIVATE FAKE_BUILT_CUDA=${_v} FAKE_NCCL=1)
    set_target_properties(fake_gpu_plugin_${_v} PROPERTIES
      OUTPUT_NAME $<IF:$<EQUAL:${_v},13000>,clusterbench_gpu,clusterbench_gpu_cuda12>
      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake_plugins/cuda${_v})
    cb_gpu_plugin_side_file(fake_gpu_plugin_${_v} ${_v})
  endforeach()
  cb_unit_test(test_gpu_plugin clusterbench_core cb_compute cb_collectives cb_io)
  if(TARGET test_gpu_plugin)
    add_dependencies(test_gpu_plugin fake_gpu_plugin_13000 fake_gpu_plugin_12020)
  endif()
  cb_integration_test(gpu_plugin_choice TIMEOUT 120)
endif()

# PyPI's cu12 wheels cannot build the CUDA 12 plugin: nvidia-cuda-nvcc-cu12 (every 12.x version)
# ships ptxas, libnvvm and the crt headers but no nvcc, cicc, cudafe++, fatbinary or nvlink, so the
# kernels (.cu) cannot be compiled. What they can check, they do: the plugin's host sources (.cpp:
# every CUDA runtime, cuBLASLt and NCCL call) are compiled against CUDA 12.2 runtime 12.2.140,
# cuBLAS 12.2.5.6 and NCCL 2.18.3 headers from .deps/cuda12 (scripts/setup.sh) and linked against
# their libraries; gpu_plugin_cuda12_host (< 10 s) checks that it needs libcudart.so.12,
# libcublasLt.so.12 and libnccl.so.2 and that those define every symbol it uses except the kernel
# launchers of the .cu files. Not a plugin: it is never put where the loader looks.
set(CB_CUDA12_WHEELS ${CMAKE_SOURCE_DIR}/.deps/cuda12/nvidia)
if(TARGET clusterbench_gpu AND EXISTS ${CB_CUDA12_WHEELS}/cuda_runtime/lib/libcudart.so.12
   AND EXISTS ${CB_CUDA12_WHEELS}/cublas/lib/libcublasLt.so.12
   AND EXISTS ${CB_CUDA12_WHEELS}/cuda_nvcc/include/crt/host_config.h)
  get_target_property(_gpu_sources clusterbench_gpu SOURCES)
  get_target_property(_gpu_dir clusterbench_gpu SOURCE_DIR)
  set(_host_sources ${CMAKE_CURRENT_SOURCE_DIR}/cuda12_host/versions.cpp)
  set(_have_nccl 0)
  if(EXISTS ${CB_CUDA12_WHEELS}/nccl/include/nccl.h AND EXISTS ${CB_CUDA12_WHEELS}/nccl/lib/libnccl.so.2)
    set(_have_nccl 1)
  endif()
  foreach(_s IN LISTS _gpu_sources)
    cmake_path(ABSOLUTE_PATH _s BASE_DIRECTORY ${_gpu_dir} OUTPUT_VARIABLE _abs)
    if(_abs MATCHES "\\.cpp$" AND (_have_nccl OR NOT _abs MATCHES "nccl_backend\\.cpp$"))
      list(APPEND _host_sources ${_abs})
    endif()
  endforeach()
  add_library(cb_cuda12_hostcheck SHARED ${_host_sources})
  get_target_property(_gpu_includes clusterbench_gpu INCLUDE_DIRECTORIES)
  target_include_directories(cb_cuda12_hostcheck PRIVATE ${_gpu_includes}
    ${CB_CUDA12_WHEELS}/cuda_runtime/include ${CB_CUDA12_WHEELS}/cuda_nvcc/include
    ${CB_CUDA12_WHEELS}/cublas/include ${CB_CUDA12_WHEELS}/nccl/include)
  target_compile_definitions(cb_cuda12_hostcheck PRIVATE CLUSTERBENCH_HAVE_NCCL=${_have_nccl})
  target_link_libraries(cb_cuda12_hostcheck PRIVATE
    ${CB_CUDA12_WHEELS}/cuda_runtime/lib/libcudart.so.12
    ${CB_CUDA12_WHEELS}/cublas/lib/libcublasLt.so.12
    $<${_have_nccl}:${CB_CUDA12_WHEELS}/nccl/lib/libnccl.so.2>)
  set_target_properties(cb_cuda12_hostcheck PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/cuda12_host)
  cb_integration_test(gpu_plugin_cuda12_host TIMEOUT 60)
else()
  message(STATUS "clusterbench: CUDA 12 host check off (no .deps/cuda12 wheels or no GPU plugin)")
endif()

# compute.training_step's CPU proof on a two-namespace cluster (docs/training.md): timing against
# a prediction on the 2 cores, so it runs alone. Budget: about 3.5 minutes.
cb_integration_test(training_step_netns LOCKS "netns;mpirun" TIMEOUT 480)
set_tests_properties(training_step_netns PROPERTIES RUN_SERIAL TRUE)
