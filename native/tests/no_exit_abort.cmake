# Fails when an object of the static library refers to a function that ends the process
# (exit, _exit, _Exit, quick_exit, abort, or assert's __assert_fail): a library reports
# errors through mc_status and never stops its host (STYLE.md; libpq checks the same with nm).
#
#   cmake -DNM=<nm> -DLIBRARY=<libmssqlcdc.a> -P no_exit_abort.cmake
# Registered with ctest as no_exit_abort (native/tests/CMakeLists.txt), so `make native-test`
# and `make native-asan` run it.
if(NOT NM OR NOT LIBRARY)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DLIBRARY=<archive> -P no_exit_abort.cmake")
endif()
execute_process(COMMAND "${NM}" -u -A "${LIBRARY}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -u ${LIBRARY} failed: ${err}")
endif()
# -A prefixes every line with "archive:object:", so each line names the culprit object.
string(REPLACE "\n" ";" lines "${out}")
set(found "")
set(objects 0)
foreach(line IN LISTS lines)
  if(line MATCHES "[ \t]U[ \t]+(exit|_exit|_Exit|quick_exit|abort|__assert_fail)(@.*)?$")
    list(APPEND found "${line}")
  endif()
endforeach()
if(found)
  string(REPLACE ";" "\n  " shown "${found}")
  message(FATAL_ERROR "library objects call a function that ends the process:\n  ${shown}")
endif()
string(REGEX MATCHALL "[^:\n]+\\.o:" members "${out}")
list(REMOVE_DUPLICATES members)
list(LENGTH members objects)
message(STATUS "no_exit_abort: ${objects} objects of ${LIBRARY} checked, none calls exit or abort")
