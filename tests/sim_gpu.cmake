# The strict simulated GPU node (docs/simulated-gpu.md), included by tests/CMakeLists.txt:
#  - cbsim: a simulated CUDA runtime, cuBLASLt, NCCL and the plugin's kernel launchers, as a
#    static PIC library;
#  - the real plugin's host sources (the clusterbench_gpu target's .cpp files, compiled against
#    the CUDA toolkit's headers) linked with cbsim into tests/sim_gpu/libclusterbench_gpu.so,
#    with its side file; -Wl,--no-undefined makes an entry point the plugin uses but the
#    simulation lacks a build error;
#  - test_sim_gpu and test_sim_gpu_nccl (unit, < 10 s each) and sim_gpu_smoke (the real binary on the simulated node,
#    < 90 s).
# Built only where the GPU plugin is (the CUDA toolkit found).
if(NOT TARGET clusterbench_gpu)
  return()
endif()

file(GLOB CBSIM_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/sim_gpu/*.cpp)
add_library(cbsim STATIC ${CBSIM_SOURCES})
set_target_properties(cbsim PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(cbsim PUBLIC ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/bench
                           ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(cbsim PUBLIC nlohmann_json::nlohmann_json Threads::Threads ${CMAKE_DL_LIBS})

# The plugin's host sources, include directories and definitions, as its target has them (every
# folder has added its GPU sources by now); the kernels (.cu) are cbsim's launchers.
get_target_property(_cbsim_gpu_sources clusterbench_gpu SOURCES)
get_target_property(_cbsim_gpu_dir clusterbench_gpu SOURCE_DIR)
set(_cbsim_plugin_sources)
foreach(_s IN LISTS _cbsim_gpu_sources)
  cmake_path(ABSOLUTE_PATH _s BASE_DIRECTORY ${_cbsim_gpu_dir} OUTPUT_VARIABLE _abs)
  if(_abs MATCHES "\\.cpp$")
    list(APPEND _cbsim_plugin_sources ${_abs})
  endif()
endforeach()
get_target_property(_cbsim_gpu_includes clusterbench_gpu INCLUDE_DIRECTORIES)
get_target_property(_cbsim_gpu_defs clusterbench_gpu COMPILE_DEFINITIONS)
if(NOT _cbsim_gpu_defs)
  set(_cbsim_gpu_defs "")
endif()

add_library(cbsim_gpu_plugin SHARED ${_cbsim_plugin_sources})
target_include_directories(cbsim_gpu_plugin PRIVATE ${_cbsim_gpu_includes} ${CUDAToolkit_INCLUDE_DIRS})
target_compile_definitions(cbsim_gpu_plugin PRIVATE ${_cbsim_gpu_defs})
target_link_libraries(cbsim_gpu_plugin PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,cbsim>"
                      nlohmann_json::nlohmann_json)
target_link_options(cbsim_gpu_plugin PRIVATE -Wl,--no-undefined)
set_target_properties(cbsim_gpu_plugin PROPERTIES
  OUTPUT_NAME clusterbench_gpu
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim_gpu)
include(${CMAKE_SOURCE_DIR}/cmake/gpu_plugin_side_file.cmake)
cb_gpu_plugin_side_file(cbsim_gpu_plugin 13000)

cb_unit_test(test_sim_gpu "$<LINK_LIBRARY:WHOLE_ARCHIVE,cbsim>")
cb_unit_test(test_sim_gpu_nccl "$<LINK_LIBRARY:WHOLE_ARCHIVE,cbsim>")
if(TARGET test_sim_gpu_nccl)
  # The real libraries' error texts are compared where the toolkit ships them.
  target_compile_definitions(test_sim_gpu_nccl PRIVATE CB_CUDA_LIB_DIR="${CUDAToolkit_LIBRARY_DIR}")
endif()

# The real binary on a simulated 8x H100 node (tests/fixtures/nvml/h100x8-healthy.json).
cb_integration_test(sim_gpu_smoke LOCKS mpirun TIMEOUT 300)
if(TEST sim_gpu_smoke)
  set_property(TEST sim_gpu_smoke APPEND PROPERTY ENVIRONMENT
    "CB_SIM_PLUGIN=$<TARGET_FILE:cbsim_gpu_plugin>")
endif()

# The 8-GPU node end to end on the simulated node (tests/integration/sim_node.sh): a healthy
# node's quick run and burn-in under mpirun -np 8, then each fault injected by name. 8 ranks on 2
# cores: run alone. Budget: about 6 minutes.
cb_integration_test(sim_node LOCKS "mpirun;netns" TIMEOUT 900)
if(TEST sim_node)
  set_tests_properties(sim_node PROPERTIES RUN_SERIAL TRUE)
  set_property(TEST sim_node APPEND PROPERTY DEPENDS sim_gpu_smoke)
endif()
