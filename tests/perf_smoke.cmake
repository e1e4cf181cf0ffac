# Smoke tests of tcoll-perf (tools/perf.cmake): correctness only, never a time.
# The program exits nonzero when any element is wrong or a call fails, so a
# short sweep with checking on is a test of the tool and of the public
# collective paths it drives, at least one CTest per mode. Included from
# tests/CMakeLists.txt, which defines tc_mpi_run (launcher, flags,
# environment, TCOLL_TEST_MAX_NP); needs the tools (TCOLL_BUILD_EXAMPLES).
if(TCOLL_BUILD_TESTS AND TARGET tcoll-perf)
  tc_mpi_run(mpi.tcoll_perf_smoke.np2 NP 2 TIMEOUT 120 PROGRAM $<TARGET_FILE:tcoll-perf>
    ARGS -b 8 -e 64K -f 8 -n 3 -w 1 -c 1)
  tc_mpi_run(mpi.tcoll_perf_workload_smoke.np2 NP 2 TIMEOUT 120 PROGRAM $<TARGET_FILE:tcoll-perf>
    ARGS -m workload --workload ${CMAKE_CURRENT_LIST_DIR}/data/tiny_workload.tsv -n 2 -w 1 -c 1)
  # The 16-bit integers: products with negative factors, unsigned maxima.
  tc_mpi_run(mpi.tcoll_perf_int16_smoke.np2 NP 2 TIMEOUT 120 PROGRAM $<TARGET_FILE:tcoll-perf>
    ARGS -d int16 -o prod -b 2 -e 64K -f 8 -n 3 -w 1 -c 1)
  tc_mpi_run(mpi.tcoll_perf_uint16_smoke.np3 NP 3 TIMEOUT 120 PROGRAM $<TARGET_FILE:tcoll-perf>
    ARGS -d uint16 -o max -b 2 -e 64K -f 8 -n 3 -w 1 -c 1)
  # Allgathers of 1-4 MiB outputs, freed and reused through the output pool.
  tc_mpi_run(mpi.tcoll_perf_allgather_smoke.np3 NP 3 TIMEOUT 120 PROGRAM $<TARGET_FILE:tcoll-perf>
    ARGS -m allgather -b 1M -e 4M -f 2 -n 4 -w 1 -c 1)
  # The modes for tc_reducescatter, tc_alltoall and tc_barrier; alltoall
  # also at 3 ranks, where the blocks are not powers of two.
  tc_mpi_run(mpi.tcoll_perf_reducescatter_smoke.np2 NP 2 TIMEOUT 120
    PROGRAM $<TARGET_FILE:tcoll-perf> ARGS -m reducescatter -b 8 -e 64K -f 8 -n 3 -w 1 -c 1)
  tc_mpi_run(mpi.tcoll_perf_alltoall_smoke.np2 NP 2 TIMEOUT 120
    PROGRAM $<TARGET_FILE:tcoll-perf> ARGS -m alltoall -b 8 -e 64K -f 8 -n 3 -w 1 -c 1)
  tc_mpi_run(mpi.tcoll_perf_alltoall_smoke.np3 NP 3 TIMEOUT 120
    PROGRAM $<TARGET_FILE:tcoll-perf> ARGS -m alltoall -b 12 -e 48K -f 8 -n 3 -w 1 -c 1)
  tc_mpi_run(mpi.tcoll_perf_barrier_smoke.np2 NP 2 TIMEOUT 120
    PROGRAM $<TARGET_FILE:tcoll-perf> ARGS -m barrier -n 20 -w 2 -c 1)
  # The limit columns: this machine's rates measured in the run, the
  # model's time for the algorithm tcoll reports, the fraction reached, on
  # every row of a sweep (4 B .. 1 MiB: the small-message path, the slots
  # and, where it works, the direct path) and of the workload.
  set(_tc_lnum "[0-9][0-9.]*")
  string(REPEAT " +${_tc_lnum}" 9 _tc_nine) # tcoll's and MPI's columns, the ratio
  set(_tc_limit_expect "# limit: copy, reduce, 1copy = this machine's rates@@reached  algo\n")
  foreach(size 4 64 1024 16384 262144 1048576)
    list(APPEND _tc_limit_expect "\n +${size} +[0-9]+ +float32${_tc_nine} +${_tc_lnum} +${_tc_lnum} +(${_tc_lnum}|-) +${_tc_lnum} +${_tc_lnum}  [a-z]")
  endforeach()
  string(JOIN "@@" _tc_limit_expect ${_tc_limit_expect})
  add_test(NAME mpi.tcoll_perf_limit.np2
    COMMAND ${CMAKE_COMMAND} "-DEXPECT=${_tc_limit_expect}" -DSTDOUT_ONLY=ON
            -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake --
            ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${TCOLL_MPIEXEC_PREFLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-perf> ${MPIEXEC_POSTFLAGS}
            -b 4 -e 1M -f 16 -n 3 -w 1)
  add_test(NAME mpi.tcoll_perf_workload_limit.np2
    COMMAND ${CMAKE_COMMAND} "-DEXPECT=\n limit +${_tc_lnum} +${_tc_lnum} +- +-\n"
            -DSTDOUT_ONLY=ON -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake --
            ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${TCOLL_MPIEXEC_PREFLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-perf> ${MPIEXEC_POSTFLAGS}
            -m workload --workload ${CMAKE_CURRENT_LIST_DIR}/data/tiny_workload.tsv -n 2 -w 1)
  set_tests_properties(mpi.tcoll_perf_limit.np2 mpi.tcoll_perf_workload_limit.np2 PROPERTIES
    TIMEOUT 120 LABELS mpi ENVIRONMENT "${TCOLL_MPI_TEST_ENV}")
endif()
# tcoll-name-flood (tools/name_flood.c): a few thousand first-time names, the
# other ranks in random orders; it checks every sum.
if(TCOLL_BUILD_TESTS AND TARGET tcoll-name-flood)
  tc_mpi_run(mpi.tcoll_name_flood_smoke.np3 NP 3 TIMEOUT 120
    PROGRAM $<TARGET_FILE:tcoll-name-flood> ARGS -n 500,3000 -o random -r 2)
endif()

# tools/perf_algos.sh (not installed): one tcoll-perf sweep and workload run
# per allreduce algorithm, merged into one table by tools/perf_algos.py. At 2
# ranks, with the pretend-node columns (one rank per node), tiny sizes and
# the tiny workload; the output must hold a column per algorithm and a row
# per size and for the workload, each with a time and a ratio per column. No
# time is judged. Skipped ("SKIPPED:") without a Python 3 to merge with.
if(TCOLL_BUILD_TESTS AND TARGET tcoll-perf AND TCOLL_TEST_MAX_NP GREATER_EQUAL 2)
  if(EXISTS /usr/bin/python3)
    set(_tc_algos_python /usr/bin/python3)
  else()
    find_program(_tc_algos_python NAMES python3)
  endif()
  string(JOIN " " _tc_algos_flags ${TCOLL_MPIEXEC_PREFLAGS} ${MPIEXEC_PREFLAGS})
  set(_tc_num "[0-9][0-9.-]*")
  set(_tc_cells " +${_tc_num}")
  # 6 columns x (time, ratio, lim), MPI; a lim is "-" where the run had no
  # limit for the row (a model's time below what is printed, say)
  string(REPEAT "${_tc_cells} +${_tc_num} +(${_tc_num}|-)" 6 _tc_cells)
  string(APPEND _tc_cells " +${_tc_num}")
  set(_tc_algos_expect
    "\n#  +-+ auto -+  -+ ring -+  -+ shm -+  -+ cma -+  -+ auto@1 -+  -+ ring@1 -+\n")
  foreach(size "4 B" "64 B" "1 KiB" "16 KiB" "64 KiB" "tiny_workload \\(ms\\)")
    list(APPEND _tc_algos_expect "\n +${size}${_tc_cells}\n")
  endforeach()
  string(JOIN "@@" _tc_algos_expect ${_tc_algos_expect})
  add_test(NAME mpi.perf_algos_smoke.np2
    COMMAND ${CMAKE_COMMAND} -DPYTHON=${_tc_algos_python} -DIMPORTS=json
            "-DEXPECT=${_tc_algos_expect}"
            -DSTDOUT_ONLY=ON -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake --
            bash ${PROJECT_SOURCE_DIR}/tools/perf_algos.sh -n 2
            --tcoll-perf $<TARGET_FILE:tcoll-perf>
            -b 4 -e 64K -f 16 --iters 3 --warmup 1 --nodes 1 # not -i, -w: cmake's own
            --workload ${CMAKE_CURRENT_LIST_DIR}/data/tiny_workload.tsv --steps 2
            --plot ${CMAKE_CURRENT_BINARY_DIR}/perf_algos_smoke.png)
  set(_tc_algos_env ${TCOLL_MPI_TEST_ENV} "MPIEXEC=${MPIEXEC_EXECUTABLE}"
    "MPIEXEC_FLAGS=${_tc_algos_flags}" "PYTHON=${_tc_algos_python}")
  set_tests_properties(mpi.perf_algos_smoke.np2 PROPERTIES TIMEOUT 240 LABELS mpi
    SKIP_REGULAR_EXPRESSION "SKIPPED: " ENVIRONMENT "${_tc_algos_env}")
endif()
