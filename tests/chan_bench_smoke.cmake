# Smoke tests of tcoll-chan-bench (tools/chan_bench.cmake), label mpi: at 2
# ranks with tiny counts it must exit 0 (it exits 1 when a call fails or any
# transfer delivers wrong bytes) and print its latency row for every
# operation, a row per size in both bandwidth tables and the goals; the same
# across pretend nodes (TCOLL_RANKS_PER_NODE=1), where it must print the port
# channel and MPI rows, no memory channel row, and the port channel against
# MPI_Send/Recv in place of the goals; at 1 rank it must refuse with status
# 2. No time is judged. Included from tests/CMakeLists.txt; needs the tools
# (TCOLL_BUILD_EXAMPLES).
if(TCOLL_BUILD_TESTS AND TARGET tcoll-chan-bench)
  set(_tc_cb_num "[0-9][0-9.]*")
  set(_tc_cb_expect "\n## Ping-pong latency")
  foreach(op "memory channel: tc_memchan_signal [+] tc_memchan_wait [|] 0 B"
             "memory channel: tc_memchan_put_with_signal [+] wait [|] 8 B"
             "port channel: tc_portchan_signal [+] tc_portchan_wait [|] 0 B"
             "port channel: tc_portchan_put_with_signal [+] wait [|] 8 B"
             "MPI_Send [+] MPI_Recv [|] 0 B" "MPI_Send [+] MPI_Recv [|] 8 B"
             "MPI notification only [^|]* [|] 0 B" "MPI_Put [+] MPI_Win_flush [+] notification [|] 8 B")
    list(APPEND _tc_cb_expect "\n[|] ${op} [|] ${_tc_cb_num} [|] ${_tc_cb_num} [|]")
  endforeach()
  string(REPEAT " [|] [0-9][0-9.e+-]*x?%?" 12 _tc_cb_one) # W, rounds, 5 GB/s, 4 ratios, %
  string(REPEAT " [|] [0-9][0-9.e+-]*x?" 10 _tc_cb_two)   # W, rounds, 4 GB/s, 4 ratios
  list(APPEND _tc_cb_expect "\n## Bandwidth, one-way")
  foreach(size "4 KiB" "64 KiB")
    list(APPEND _tc_cb_expect "\n[|] ${size}${_tc_cb_one} [|]\n")
  endforeach()
  list(APPEND _tc_cb_expect "\n## Bandwidth, two-way")
  foreach(size "4 KiB" "64 KiB")
    list(APPEND _tc_cb_expect "\n[|] ${size}${_tc_cb_two} [|]\n")
  endforeach()
  list(APPEND _tc_cb_expect "\n## Goals[^\n]*\n\n- memory channel signal/wait [^\n]*: p50 ${_tc_cb_num} us")
  string(JOIN "@@" _tc_cb_expect ${_tc_cb_expect})
  if(TCOLL_TEST_MAX_NP GREATER_EQUAL 2)
    add_test(NAME mpi.tcoll_chan_bench_smoke.np2
      COMMAND ${CMAKE_COMMAND} "-DEXPECT=${_tc_cb_expect}"
              -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake --
              ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${TCOLL_MPIEXEC_PREFLAGS}
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-chan-bench> ${MPIEXEC_POSTFLAGS}
              -b 4K -e 64K -f 16 -W 4 -n 2 -r 1 -l 20 -w 2)
    set_tests_properties(mpi.tcoll_chan_bench_smoke.np2 PROPERTIES TIMEOUT 120 LABELS mpi
      ENVIRONMENT "${TCOLL_MPI_TEST_ENV}")
  endif()

  # Across pretend nodes: the rows without memory channels, 7 cells after the
  # size (W, rounds, 3 GB/s, 2 ratios) in both bandwidth tables.
  set(_tc_cb_expect "\n## Ping-pong latency"
      "\nNo memory channel rows: the ranks are on different nodes")
  foreach(op "port channel: tc_portchan_signal [+] tc_portchan_wait [|] 0 B"
             "port channel: tc_portchan_put_with_signal [+] wait [|] 8 B"
             "MPI_Send [+] MPI_Recv [|] 0 B" "MPI_Send [+] MPI_Recv [|] 8 B"
             "MPI notification only [^|]* [|] 0 B" "MPI_Put [+] MPI_Win_flush [+] notification [|] 8 B")
    list(APPEND _tc_cb_expect "\n[|] ${op} [|] ${_tc_cb_num} [|] ${_tc_cb_num} [|]")
  endforeach()
  string(REPEAT " [|] [0-9][0-9.e+-]*x?" 7 _tc_cb_row)
  foreach(table "one-way" "two-way")
    list(APPEND _tc_cb_expect "\n## Bandwidth, ${table}[^#]*\n[|] size [|] W [|] rounds [|] portchan [|]")
    foreach(size "4 KiB" "64 KiB")
      list(APPEND _tc_cb_expect "\n[|] ${size}${_tc_cb_row} [|]\n")
    endforeach()
  endforeach()
  list(APPEND _tc_cb_expect "\n## Goals[^\n]*\n\n- the in-node goals [^\n]*\n[^\n]* do not apply"
       "\n  - latency, signal [+] wait, 0 B: port channel p50 ${_tc_cb_num} us, MPI_Send/Recv p50 ${_tc_cb_num} us"
       "\n  - one-way bandwidth at 64 KiB: port channel ${_tc_cb_num} GB/s, Send/Recv ${_tc_cb_num} GB/s"
       "\n  - two-way bandwidth at 64 KiB: port channel ${_tc_cb_num} GB/s, Send/Recv ${_tc_cb_num} GB/s")
  string(JOIN "@@" _tc_cb_expect ${_tc_cb_expect})
  if(TCOLL_TEST_MAX_NP GREATER_EQUAL 2)
    add_test(NAME mpi.tcoll_chan_bench_nodes_smoke.np2
      COMMAND ${CMAKE_COMMAND} "-DEXPECT=${_tc_cb_expect}" "-DREJECT=memory channel: tc_memchan@@[|] memchan [|]"
              -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake --
              ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${TCOLL_MPIEXEC_PREFLAGS}
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-chan-bench> ${MPIEXEC_POSTFLAGS}
              -b 4K -e 64K -f 16 -W 4 -n 2 -r 1 -l 20 -w 2)
    set_tests_properties(mpi.tcoll_chan_bench_nodes_smoke.np2 PROPERTIES TIMEOUT 120 LABELS mpi
      ENVIRONMENT "${TCOLL_MPI_TEST_ENV};TCOLL_RANKS_PER_NODE=1")
  endif()
  add_test(NAME mpi.tcoll_chan_bench_refuses.np1
    COMMAND ${CMAKE_COMMAND} -DEXIT=2 "-DEXPECT=needs exactly 2 ranks"
            -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake --
            ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${TCOLL_MPIEXEC_PREFLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-chan-bench> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(mpi.tcoll_chan_bench_refuses.np1 PROPERTIES TIMEOUT 60 LABELS mpi
    ENVIRONMENT "${TCOLL_MPI_TEST_ENV}")
endif()
