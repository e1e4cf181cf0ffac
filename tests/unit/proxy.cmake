# Unit tests of the proxy (src/proxy): the trigger FIFO, the service thread and
# its CPU binding. No MPI; all of them also run under ThreadSanitizer
# (TCOLL_SANITIZE=thread), where they shrink their iteration counts.
tc_unit_test(test_fifo test_fifo.c)
# The device push (tcoll_fifo_device.h) on the CPU; fifo_device_strict.c
# compiles the header as a strict C11 user would.
tc_unit_test(test_fifo_device test_fifo_device.c fifo_device_strict.c)
tc_unit_test(test_proxy test_proxy.c)
tc_unit_test(test_proxy_bind test_proxy_bind.c ARGS --case first)

# TCOLL_PROXY_CPUS is read once per process, so the binding test runs once per
# case: unit.test_proxy_bind binds to the first allowed CPU; the others give
# NUMA syntax, a bad list, a CPU that does not exist, and no knob at all.
# Then the binding near a PCI device (a device proxy's), and
# tc_proxy_create_device's refusals (and, with a GPU, a proxy for it).
foreach(_tc_bind_case numa garbage absent unset pci device)
  add_test(NAME unit.test_proxy_bind.${_tc_bind_case} COMMAND test_proxy_bind --case ${_tc_bind_case})
  set_tests_properties(unit.test_proxy_bind.${_tc_bind_case} PROPERTIES
    TIMEOUT 120 LABELS unit ENVIRONMENT "${TCOLL_SAN_ENV}")
endforeach()
