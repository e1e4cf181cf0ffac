# cmake -DNEGSIM=<tcoll-negsim> -DRANKS=n -DTENSORS=t -DSTEPS=s -DSEED=x -P negsim_check.cmake
# Runs tcoll-negsim --json and fails unless every simulated rank ran the same
# collectives in the same order and, in the steady state, no rank sent plus
# received more than 2 * (ceil(log2 n) + 1) messages per cycle on average (one
# part out and one in per exchange round; a host also an extra rank's
# snapshot in and its result out).
execute_process(COMMAND ${NEGSIM} --ranks ${RANKS} --tensors ${TENSORS} --steps ${STEPS}
                        --seed ${SEED} --json
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "tcoll-negsim exited with ${rc}")
endif()
if(NOT out MATCHES "\"order_agrees\": true")
  message(FATAL_ERROR "the simulated ranks did not run the same collectives in the same order")
endif()
string(REGEX MATCH "\"max_msgs_per_rank_per_cycle\": ([0-9.]+)" _ "${out}")
set(msgs ${CMAKE_MATCH_1})
set(log 0)
set(p 1)
while(p LESS RANKS)
  math(EXPR p "${p} * 2")
  math(EXPR log "${log} + 1")
endwhile()
math(EXPR bound "2 * (${log} + 1)")
if(msgs GREATER bound)
  message(FATAL_ERROR "${msgs} messages per rank per cycle, more than 2 * (log2 n + 1) = ${bound}")
endif()
