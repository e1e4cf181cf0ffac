# cmake -DEXPECT=<regex>[@@<regex>...] [-DREJECT=<regex>[@@<regex>...]] [-DEXIT=<status>]
#       [-DSTDOUT_ONLY=ON] [-DPYTHON=<python> -DIMPORTS=<module>[,<module>...]]
#       -P run_expect.cmake -- <command...>
# The smoke tests of tcoll's tools and benchmarks: runs the command, echoes
# its output, and fails when its exit status is not EXIT (default 0), when
# its output (standard output, then standard error; with STDOUT_ONLY the
# standard output alone) misses one of the EXPECT regexes, or when it
# matches one of the REJECT regexes. With PYTHON and IMPORTS, it first says
# "SKIPPED:" (for the test's SKIP_REGULAR_EXPRESSION) and stops when PYTHON
# cannot import the modules. No time is judged.
set(cmd)
set(after_dashes OFF)
foreach(i RANGE 1 ${CMAKE_ARGC})
  if(i LESS CMAKE_ARGC)
    if(after_dashes)
      list(APPEND cmd "${CMAKE_ARGV${i}}")
    elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
      set(after_dashes ON)
    endif()
  endif()
endforeach()
if(DEFINED PYTHON AND DEFINED IMPORTS)
  execute_process(COMMAND ${PYTHON} -c "import ${IMPORTS}" RESULT_VARIABLE rc
                  OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message("SKIPPED: ${PYTHON} cannot import ${IMPORTS}:\n${err}")
    return()
  endif()
endif()
if(NOT DEFINED EXIT)
  set(EXIT 0)
endif()
execute_process(COMMAND ${cmd} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc STREQUAL "${EXIT}")
  message(FATAL_ERROR "exit status ${rc}, expected ${EXIT}: ${cmd}")
endif()
if(STDOUT_ONLY)
  set(text "${out}")
else()
  set(text "${out}${err}")
endif()
string(REPLACE "@@" ";" expect "${EXPECT}")
foreach(re IN LISTS expect)
  if(NOT "${text}" MATCHES "${re}")
    message(FATAL_ERROR "the output does not match '${re}'")
  endif()
endforeach()
string(REPLACE "@@" ";" reject "${REJECT}")
foreach(re IN LISTS reject)
  if("${text}" MATCHES "${re}")
    message(FATAL_ERROR "the output matches '${re}', which it must not")
  endif()
endforeach()
