# CPACK_PROJECT_CONFIG_FILE: read by cpack when it makes the package (cmake/install.cmake sets
# CPACK_CB_SOURCE_DIR and CPACK_CB_BINARY_DIR). Sets the package version from git
# (cmake/package_version.cmake) and says in the package's description which NVIDIA driver its GPU
# plugin(s) need, from their .cuda side files (CUDA 13.x: >= 580; 12.x: >= 525; PTX kernels: the
# side file's driver, 535 for 12.2).
include(${CPACK_CB_SOURCE_DIR}/cmake/package_version.cmake)
cb_package_version(_cb_version ${CPACK_CB_SOURCE_DIR} ${CPACK_PACKAGE_VERSION})
set(CPACK_DEBIAN_PACKAGE_VERSION ${_cb_version})

set(_cb_plugins "")
file(GLOB _cb_side_files ${CPACK_CB_BINARY_DIR}/libclusterbench_gpu*.so.cuda)
foreach(_f IN LISTS _cb_side_files)
  file(READ ${_f} _side)
  if(_side MATCHES "cuda=([0-9]+)")
    math(EXPR _major "${CMAKE_MATCH_1} / 1000")
    math(EXPR _minor "(${CMAKE_MATCH_1} % 1000) / 10")
    if(_major GREATER_EQUAL 13)
      set(_driver 580)
    else()
      set(_driver 525)
    endif()
    if(_side MATCHES "kernels=ptx driver=([0-9]+)")  # PTX kernels: its own CUDA's driver
      set(_driver ${CMAKE_MATCH_1})
    endif()
    get_filename_component(_name ${_f} NAME_WLE)
    string(APPEND _cb_plugins "\n${_name}: CUDA ${_major}.${_minor}, NVIDIA driver >= ${_driver}.")
  endif()
endforeach()
if(_cb_plugins STREQUAL "")
  set(_cb_plugins "\nNo GPU plugin (built without nvcc): GPU cases fail on a node with GPUs.")
endif()
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION_SUMMARY}\n"
       "One binary, launched by mpirun, Slurm or a Kubernetes MPIJob, measures GPU nodes and "
       "judges them against a spec table.\nGPU plugin(s) in this package:${_cb_plugins}")
