# tcoll-chan-bench: channels between 2 ranks of a node (memory channels, port
# channels) side by side with MPI_Send/Recv and MPI_Put: latency, bandwidth,
# ratios, local memcpy as the reference (the comment atop chan_bench/main.c).
# Public API only; it calls MPI itself (MPI_THREAD_MULTIPLE), so it links MPI.
# The sources: tools/chan_bench/chan_bench.h says which file does what.
add_executable(tcoll-chan-bench
  ${CMAKE_CURRENT_LIST_DIR}/chan_bench/main.c
  ${CMAKE_CURRENT_LIST_DIR}/chan_bench/options.c
  ${CMAKE_CURRENT_LIST_DIR}/chan_bench/util.c
  ${CMAKE_CURRENT_LIST_DIR}/chan_bench/setup.c
  ${CMAKE_CURRENT_LIST_DIR}/chan_bench/latency.c
  ${CMAKE_CURRENT_LIST_DIR}/chan_bench/bandwidth.c
  ${CMAKE_CURRENT_LIST_DIR}/chan_bench/output.c)
target_sources(tcoll-chan-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/common/tool_util.c)
target_include_directories(tcoll-chan-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/common)
target_compile_options(tcoll-chan-bench PRIVATE ${TCOLL_WARN_FLAGS})
target_link_libraries(tcoll-chan-bench PRIVATE tcoll MPI::MPI_C Threads::Threads)
install(TARGETS tcoll-chan-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
