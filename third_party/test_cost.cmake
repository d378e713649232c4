# ctest's start order. Without a cost history (a clean clone has none) ctest
# starts tests in the order they were added, and the long Python and Xvfb
# tests, added last, ran at the end of `ctest -j2` with one core idle while
# the last of them finished. COST (seconds in the last clean-clone CI run,
# docs/RELIABILITY.md) starts the longest first; later runs in the same build
# folder use ctest's own measured history instead.
#
#   attnscope_test_cost(<seconds> <seconds sanitized> <test>...)
function(attnscope_test_cost seconds sanitized_seconds)
  if(ATTNSCOPE_SANITIZE)
    set(seconds ${sanitized_seconds})
  endif()
  foreach(test IN LISTS ARGN)
    if(TEST ${test})
      set_tests_properties(${test} PROPERTIES COST ${seconds})
    endif()
  endforeach()
endfunction()
