# The Debian package's version and changelog, computed when the package is made (cpack), not when
# CMake is configured, so that a package made after a new commit carries that commit.
#
#   0.1.0~git<N>.<sha>[.dirty]
#
# N is the number of commits (`git rev-list --count HEAD`) and sha the 12 hex digits
# `clusterbench --version` shows after the "+". Debian orders "~" before anything, even the end
# of the string, so every snapshot sorts below the release 0.1.0 and a later commit above an
# earlier one: apt upgrades a package made from a newer checkout. (A shallow clone counts only
# the commits it has.) Without git (a source tarball, the image's build context): the
# CLUSTERBENCH_PACKAGE_VERSION given, else 0.1.0~git0.unknown, below every snapshot.

# cb_package_version(OUT SRC PROJECT_VERSION): sets OUT in the caller.
function(cb_package_version out src project_version)
  if(DEFINED ENV{CLUSTERBENCH_PACKAGE_VERSION} AND NOT "$ENV{CLUSTERBENCH_PACKAGE_VERSION}" STREQUAL "")
    set(${out} "$ENV{CLUSTERBENCH_PACKAGE_VERSION}" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND git -C ${src} rev-list --count HEAD OUTPUT_VARIABLE n
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc1)
  execute_process(COMMAND git -C ${src} describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc2)
  if(rc1 EQUAL 0 AND rc2 EQUAL 0 AND n MATCHES "^[0-9]+$" AND sha MATCHES "^[0-9a-f]+(-dirty)?$")
    string(REPLACE "-dirty" ".dirty" sha "${sha}")
    set(${out} "${project_version}~git${n}.${sha}" PARENT_SCOPE)
  else()
    set(${out} "${project_version}~git0.unknown" PARENT_SCOPE)
  endif()
endfunction()

# cb_write_changelog(FILE SRC VERSION MAINTAINER): FILE in Debian's changelog format (what
# `dpkg-parsechangelog -l FILE` reads), one entry for this snapshot, dated by its commit.
function(cb_write_changelog file src version maintainer)
  execute_process(COMMAND git -C ${src} log -1 --format=%aD OUTPUT_VARIABLE date
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND git -C ${src} log -1 --format=%s OUTPUT_VARIABLE subject
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT date)
    execute_process(COMMAND date -R OUTPUT_VARIABLE date OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(subject)
    string(LENGTH "${subject}" len)
    if(len GREATER 120)
      string(SUBSTRING "${subject}" 0 117 subject)
      string(APPEND subject "...")
    endif()
    set(subject "\n  * Last change: ${subject}")
  endif()
  file(WRITE ${file}
       "clusterbench (${version}) unstable; urgency=medium\n\n"
       "  * Snapshot ${version} of clusterbench. The project's history is CHANGELOG.md in\n"
       "    /usr/share/doc/clusterbench.${subject}\n\n"
       " -- ${maintainer}  ${date}\n")
endfunction()
