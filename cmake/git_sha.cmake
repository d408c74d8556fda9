# Writes OUT (a header defining CLUSTERBENCH_GIT_SHA: `git describe --always --dirty` of SRC) at
# every build, touching it only when the text changes, so that the version in records, run.json
# and --version is the build's, not the configure's.
execute_process(COMMAND git -C ${SRC} describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT sha)
  set(sha unknown)
endif()
file(WRITE ${OUT}.tmp "// Generated at build time by cmake/git_sha.cmake.\n#define CLUSTERBENCH_GIT_SHA \"${sha}\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
file(REMOVE ${OUT}.tmp)
