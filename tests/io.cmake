# io/ tests: the fio parser and scratch safety (units), fio and the dataloader for real (integration).
cb_unit_test(test_fio_parser clusterbench_core cb_io)
cb_unit_test(test_fio_scratch clusterbench_core cb_io)
cb_unit_test(test_dataloader clusterbench_core cb_io)
cb_integration_test(io_fio LOCKS fio TIMEOUT 180)
cb_integration_test(io_fio_failures LOCKS fio TIMEOUT 120)
cb_integration_test(io_fio_bytes LOCKS "fio;mpirun" TIMEOUT 300)
cb_integration_test(io_dataloader TIMEOUT 120)
cb_integration_test(io_abort_cleanup LOCKS fio TIMEOUT 120)
