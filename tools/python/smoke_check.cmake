# cmake -DPYTHON=<python> -DIMPORTS=<module>[,<module>...] -DEXPECT=<regex>[@@<regex>...]
#       -P smoke_check.cmake -- <command...>
# The benchmarks' smoke tests (tools/python/CMakeLists.txt): says "SKIPPED:"
# (the tests' SKIP_REGULAR_EXPRESSION) when PYTHON cannot import the modules;
# otherwise runs the command, echoes its output, and fails when it exits
# nonzero or its standard output misses one of the regexes. No times judged.
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
execute_process(COMMAND ${PYTHON} -c "import ${IMPORTS}" RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc STREQUAL "0")
  message("SKIPPED: ${PYTHON} cannot import ${IMPORTS}:\n${err}")
  return()
endif()
execute_process(COMMAND ${cmd} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "exit status ${rc}: ${cmd}")
endif()
string(REPLACE "@@" ";" expect "${EXPECT}")
foreach(re IN LISTS expect)
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "the output does not match '${re}'")
  endif()
endforeach()
