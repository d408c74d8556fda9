# Install layout and the Debian package (docs/install.md).
#   bin/clusterbench
#   lib/clusterbench/               the GPU plugin(s) and their .cuda side files (env/paths.hpp)
#   share/clusterbench/specs/       the spec tables shipped with clusterbench (reports/specs)
#   share/clusterbench/profiles/    the fio job files (io/profiles)
#   share/clusterbench/scripts/     tune.sh, launch/ (the netns cluster scripts are for the tests
#                                   and a source checkout: not installed)
#   share/doc/clusterbench/         README.md, docs/, CHANGELOG.md, copyright, changelog.gz
# The installed binary finds them relative to its own directory, never through the source tree.
set(CLUSTERBENCH_PACKAGE_CONTACT "clusterbench maintainers <clusterbench@localhost>")
install(TARGETS clusterbench RUNTIME DESTINATION bin)
if(TARGET clusterbench_gpu)
  # The CUDA libraries come from the CUDA installation (or the pip wheels' LD_LIBRARY_PATH): the
  # plugin keeps the toolkit's library directory as its run path and the package does not depend
  # on them.
  set_target_properties(clusterbench_gpu PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  install(TARGETS clusterbench_gpu LIBRARY DESTINATION lib/clusterbench)
  install(FILES $<TARGET_FILE:clusterbench_gpu>.cuda DESTINATION lib/clusterbench)
  if(TARGET clusterbench_gpu_cuda12 AND NOT CLUSTERBENCH_CUDA12_ROOT)  # from the wheels
    install(TARGETS clusterbench_gpu_cuda12 LIBRARY DESTINATION lib/clusterbench)
    install(FILES $<TARGET_FILE:clusterbench_gpu_cuda12>.cuda DESTINATION lib/clusterbench)
  elseif(CLUSTERBENCH_CUDA12_ROOT)
    install(FILES ${CMAKE_BINARY_DIR}/libclusterbench_gpu_cuda12.so
                  ${CMAKE_BINARY_DIR}/libclusterbench_gpu_cuda12.so.cuda
            DESTINATION lib/clusterbench)
  endif()
endif()
install(DIRECTORY reports/specs/ DESTINATION share/clusterbench/specs FILES_MATCHING PATTERN "*.json")
install(DIRECTORY io/profiles/ DESTINATION share/clusterbench/profiles FILES_MATCHING PATTERN "*.fio")
install(PROGRAMS scripts/tune.sh DESTINATION share/clusterbench/scripts)
install(PROGRAMS scripts/launch/slurm.sbatch DESTINATION share/clusterbench/scripts/launch)
install(PROGRAMS scripts/launch/mpijob-entry.sh DESTINATION share/clusterbench/scripts/launch)
install(FILES scripts/launch/mpijob.yaml scripts/launch/mpijob-results.yaml
        DESTINATION share/clusterbench/scripts/launch)
install(FILES README.md CHANGELOG.md cmake/debian/copyright DESTINATION share/doc/clusterbench)
install(DIRECTORY docs/ DESTINATION share/doc/clusterbench/docs)
# changelog.gz (Debian's format, gzip -9n): made at install time, so that its version is the
# package's (cmake/package_version.cmake), not the one CMake was configured at.
install(CODE "
  include(${CMAKE_SOURCE_DIR}/cmake/package_version.cmake)
  cb_package_version(_v ${CMAKE_SOURCE_DIR} ${PROJECT_VERSION})
  cb_write_changelog(${CMAKE_BINARY_DIR}/changelog ${CMAKE_SOURCE_DIR} \${_v}
                     \"${CLUSTERBENCH_PACKAGE_CONTACT}\")
  execute_process(COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/changelog RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR \"gzip -9n ${CMAKE_BINARY_DIR}/changelog failed\")
  endif()
  file(INSTALL ${CMAKE_BINARY_DIR}/changelog.gz
       DESTINATION \${CMAKE_INSTALL_PREFIX}/share/doc/clusterbench)
")

# The Debian package: `cpack -G DEB` in the build directory (scripts/package.sh, make package).
# Its version (0.1.0~git<N>.<sha>) and its description (which driver the GPU plugins need) are
# set when cpack runs, by cmake/cpack_project.cmake. Depends: the Debian
# libraries the binary and the plugin link (dpkg-shlibdeps), plus the programs the binary runs
# (mpirun/orted, fio). The CUDA libraries are private to the CUDA installation: not dependencies.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME clusterbench)
set(CPACK_PACKAGE_VENDOR clusterbench)
set(CPACK_PACKAGE_CONTACT "${CLUSTERBENCH_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU cluster acceptance benchmarks: measured verdicts against a hardware spec")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(_cb_private_dirs)
if(TARGET clusterbench_gpu)
  list(APPEND _cb_private_dirs ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_LIBRARY)
    get_filename_component(_cb_nccl_dir ${NCCL_LIBRARY} DIRECTORY)
    list(APPEND _cb_private_dirs ${_cb_nccl_dir})
  endif()
  if(CLUSTERBENCH_CUDA12_ROOT)
    list(APPEND _cb_private_dirs ${CLUSTERBENCH_CUDA12_ROOT}/lib64 ${CLUSTERBENCH_CUDA12_ROOT}/lib)
  elseif(TARGET clusterbench_gpu_cuda12)  # the wheels it was built from
    list(APPEND _cb_private_dirs ${CB_CUDA12_WHEELS}/cuda_runtime/lib ${CB_CUDA12_WHEELS}/cublas/lib
         ${CB_CUDA12_WHEELS}/nccl/lib)
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${_cb_private_dirs})
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin, fio")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox, hwloc, iproute2")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "gnupg")  # archive --sign, and verify of a signed archive
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_SOURCE_DIR}/cmake/cpack_project.cmake)
set(CPACK_CB_SOURCE_DIR ${CMAKE_SOURCE_DIR})
set(CPACK_CB_BINARY_DIR ${CMAKE_BINARY_DIR})
set(CPACK_STRIP_FILES ON)  # debug symbols stay in the build tree
include(CPack)
