# tcoll-proxy-bench: throughput and latency of the proxy's trigger FIFO, side by
# side with a mutex+condvar queue (see docs/proxy.md). Public API only.
add_executable(tcoll-proxy-bench ${CMAKE_CURRENT_LIST_DIR}/bench_proxy.c)
target_compile_options(tcoll-proxy-bench PRIVATE ${TCOLL_WARN_FLAGS})
target_link_libraries(tcoll-proxy-bench PRIVATE tcoll Threads::Threads)
install(TARGETS tcoll-proxy-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
