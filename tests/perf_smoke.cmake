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
endif()
