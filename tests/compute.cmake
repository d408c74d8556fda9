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

# The CUDA 12 plugin built from the CUDA 12.2 wheels (cmake/gpu_plugin_cuda12.cmake):
#  - test_ptx_kernels (unit): its launchers against a strict fake of the driver's module API,
#    which reads the embedded PTX as driver 535 would (ISA version, entries, parameter layout);
#  - gpu_plugin_cuda12 (< 30 s): the library needs libcudart.so.12, libcublasLt.so.12 and
#    libnccl.so.2 and nothing of CUDA 13, the wheels define every symbol it uses, ptxas 12.2
#    assembles its PTX for sm_80 and sm_90, and the binary loads it with the wheels on the
#    library path when the (fake) driver is 535.
# Where the wheels are missing (scripts/setup.sh --test fetches them) the tests fail.
if(TARGET clusterbench_gpu)
  if(TARGET clusterbench_gpu_cuda12)
    cb_unit_test(test_ptx_kernels)
    if(TARGET test_ptx_kernels)
      add_dependencies(test_ptx_kernels clusterbench_gpu_cuda12_ptx)
      set_source_files_properties(${CB_CUDA12_PTX_SOURCE} PROPERTIES GENERATED TRUE)
      target_sources(test_ptx_kernels PRIVATE ${CB_CUDA12_PTX_SOURCE}
        ${CMAKE_SOURCE_DIR}/bench/gpu/plugin/ptx_module.cpp
        ${CMAKE_SOURCE_DIR}/bench/gpu/plugin/ptx_compare.cpp
        ${CMAKE_SOURCE_DIR}/compute/gpu_kernels_ptx.cpp)
      target_include_directories(test_ptx_kernels BEFORE PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/bench
        ${CB_CUDA12_WHEELS}/cuda_runtime/include ${CB_CUDA12_WHEELS}/cuda_nvcc/include)
      target_compile_definitions(test_ptx_kernels PRIVATE
        CB_PTX_KERNELS_LIST="${CMAKE_SOURCE_DIR}/bench/gpu/plugin/ptx_kernels.txt")
    endif()
  endif()
  cb_integration_test(gpu_plugin_cuda12 TIMEOUT 120)
endif()

# compute.training_step's CPU proof on a two-namespace cluster (docs/training.md): timing against
# a prediction on the 2 cores, so it runs alone. Budget: about 3.5 minutes.
cb_integration_test(training_step_netns LOCKS "netns;mpirun" TIMEOUT 480)
set_tests_properties(training_step_netns PROPERTIES RUN_SERIAL TRUE)
