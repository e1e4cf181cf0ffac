# tcoll-perf: the benchmark users run first (docs/perf.md). tcoll's collectives
# through the public async API, side by side with MPI_Allreduce/Allgather/Bcast/
# Reduce_scatter_block/Alltoallv/Barrier on the same buffers, plus a workload
# mode that replays data/resnet50.tsv.
# It calls MPI itself (MPI_THREAD_MULTIPLE), so it links MPI directly.
# The sources: tools/perf/perf.h says which file does what.
add_executable(tcoll-perf
  ${CMAKE_CURRENT_LIST_DIR}/perf/main.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/options.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/util.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/dtype.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/data.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/sweep.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/mode_reduce.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/mode_copy.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/mode_barrier.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/workload.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/limit.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/limit_model.c
  ${CMAKE_CURRENT_LIST_DIR}/perf/output.c)
target_sources(tcoll-perf PRIVATE ${CMAKE_CURRENT_LIST_DIR}/common/tool_util.c)
target_include_directories(tcoll-perf PRIVATE ${CMAKE_CURRENT_LIST_DIR}/common)
target_compile_options(tcoll-perf PRIVATE ${TCOLL_WARN_FLAGS})
target_link_libraries(tcoll-perf PRIVATE tcoll MPI::MPI_C Threads::Threads m)
# --device cuda (mode_device.c) in a CUDA build: the CUDA runtime, for the
# device buffers and the same-run copy bandwidth.
if(TCOLL_HAVE_CUDA)
  target_sources(tcoll-perf PRIVATE ${CMAKE_CURRENT_LIST_DIR}/perf/mode_device.c)
  target_compile_definitions(tcoll-perf PRIVATE TCOLL_PERF_CUDA=1)
  target_link_libraries(tcoll-perf PRIVATE ${TCOLL_CUDART})
endif()

# The default workload file: installed under <datadir>/tcoll, found from the
# executable's directory; a build tree uses the source copy.
file(RELATIVE_PATH _tc_perf_rel_datadir ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_DATADIR}/tcoll)
target_compile_definitions(tcoll-perf PRIVATE
  TCOLL_PERF_REL_DATADIR="${_tc_perf_rel_datadir}"
  TCOLL_PERF_SOURCE_WORKLOAD="${PROJECT_SOURCE_DIR}/data/resnet50.tsv")

install(TARGETS tcoll-perf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/data/resnet50.tsv DESTINATION ${CMAKE_INSTALL_DATADIR}/tcoll)
