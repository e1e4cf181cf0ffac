# Smoke tests of tcoll-perf (tools/perf.cmake): correctness only, never a time.
# The program exits nonzero when any element is wrong or a call fails, so a
# short sweep with checking on is a test of the tool and of the three public
# collective paths it drives. Included from tests/CMakeLists.txt, after
# TCOLL_MPIEXEC_PREFLAGS and TCOLL_MPI_TEST_ENV are set; needs the tools
# (TCOLL_BUILD_EXAMPLES).
if(TCOLL_BUILD_TESTS AND TARGET tcoll-perf)
  add_test(NAME mpi.tcoll_perf_smoke.np2
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${TCOLL_MPIEXEC_PREFLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-perf> ${MPIEXEC_POSTFLAGS}
            -b 8 -e 64K -f 8 -n 3 -w 1 -c 1)
  add_test(NAME mpi.tcoll_perf_workload_smoke.np2
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${TCOLL_MPIEXEC_PREFLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-perf> ${MPIEXEC_POSTFLAGS}
            -m workload --workload ${CMAKE_CURRENT_LIST_DIR}/data/tiny_workload.tsv
            -n 2 -w 1 -c 1)
  # Allgathers of 1-4 MiB outputs, freed and reused through the output pool.
  add_test(NAME mpi.tcoll_perf_allgather_smoke.np3
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${TCOLL_MPIEXEC_PREFLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:tcoll-perf> ${MPIEXEC_POSTFLAGS}
            -m allgather -b 1M -e 4M -f 2 -n 4 -w 1 -c 1)
  set_tests_properties(mpi.tcoll_perf_smoke.np2 mpi.tcoll_perf_workload_smoke.np2
    mpi.tcoll_perf_allgather_smoke.np3 PROPERTIES
    TIMEOUT 120 LABELS mpi ENVIRONMENT "${TCOLL_MPI_TEST_ENV}")
endif()
