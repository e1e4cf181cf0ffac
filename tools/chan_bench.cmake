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
# --device cuda: kernels (chan_bench/device.cu) where tcoll has CUDA and a
# CUDA compiler is found; else device_none.c, which says so.
set(_tc_cb_device ${CMAKE_CURRENT_LIST_DIR}/chan_bench/device_none.c)
# (not against the CUDA runtime stand-in, which runs no kernel of its own)
if(TCOLL_HAVE_CUDA AND NOT TCOLL_SANITIZE AND NOT TCOLL_CUDA_EMU) # nvcc takes no -fsanitize
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # this machine's first GPU, else 7.5 (machine code and PTX, which newer
    # GPUs compile); CMAKE_CUDA_ARCHITECTURES or CUDAARCHS choose otherwise
    set(_tc_cb_arch 75)
    if(CMAKE_CUDA_ARCHITECTURES)
      set(_tc_cb_arch ${CMAKE_CUDA_ARCHITECTURES})
    elseif(DEFINED ENV{CUDAARCHS} AND NOT "$ENV{CUDAARCHS}" STREQUAL "")
      set(_tc_cb_arch $ENV{CUDAARCHS})
    else()
      execute_process(COMMAND nvidia-smi --query-gpu=compute_cap --format=csv,noheader
        OUTPUT_VARIABLE _tc_cap RESULT_VARIABLE _tc_smi ERROR_QUIET)
      if(_tc_smi EQUAL 0 AND _tc_cap MATCHES "^([0-9]+)\\.([0-9]+)")
        set(_tc_cb_arch "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      endif()
    endif()
    enable_language(CUDA)
    set(_tc_cb_device ${CMAKE_CURRENT_LIST_DIR}/chan_bench/device.cu)
  endif()
endif()
target_sources(tcoll-chan-bench PRIVATE ${_tc_cb_device})
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/chan_bench/device.cu PROPERTIES
  COMPILE_DEFINITIONS "OMPI_SKIP_MPICXX=1;MPICH_SKIP_MPICXX=1")
if(_tc_cb_device MATCHES "[.]cu$")
  set_target_properties(tcoll-chan-bench PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                        CUDA_ARCHITECTURES "${_tc_cb_arch}")
  target_link_libraries(tcoll-chan-bench PRIVATE CUDA::cudart)
endif()
target_sources(tcoll-chan-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/common/tool_util.c)
target_include_directories(tcoll-chan-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/common)
target_compile_options(tcoll-chan-bench PRIVATE $<$<COMPILE_LANGUAGE:C>:${TCOLL_WARN_FLAGS}>)
target_link_libraries(tcoll-chan-bench PRIVATE tcoll MPI::MPI_C Threads::Threads)
install(TARGETS tcoll-chan-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
