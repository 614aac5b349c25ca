# Writes OUT, a header defining PIPEMARE_GIT_REV as the source tree's revision (`git describe
# --always --dirty`: the commit, "-dirty" when the tree has uncommitted changes), and rewrites it
# only when that changed. Run at every build (see the top-level CMakeLists.txt), so a run records
# the revision of the code that made it, not the one CMake was configured at.
execute_process(COMMAND git describe --always --dirty --abbrev=7 WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rev)
  set(rev "unknown")
endif()
file(WRITE "${OUT}.tmp" "#pragma once\n#define PIPEMARE_GIT_REV \"${rev}\"\n")
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
