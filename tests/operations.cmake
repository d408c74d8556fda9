# Tests of issue 9 (operations), tests/CMakeLists.txt includes this file.
# Issue 9 parts 1-2 (procurement evidence, fleet uniformity). Budgets: each unit test file < 5 s;
# operations_evidence < 30 s.
find_package(LibArchive REQUIRED)
cb_unit_test(test_procurement clusterbench_core clusterbench_reports ${CLUSTERBENCH_BENCHMARK_OBJECTS})
cb_unit_test(test_uniformity clusterbench_reports)
cb_unit_test(test_archive clusterbench_reports LibArchive::LibArchive)
cb_unit_test(test_signature clusterbench_reports)
cb_integration_test(operations_evidence TIMEOUT 60)
cb_integration_test(archive_signature TIMEOUT 60)
# Issue 9 parts 3-5 (resumable and bounded runs, busy GPUs and files, no shared filesystem).
cb_unit_test(test_open_writers clusterbench_core cb_io)
cb_integration_test(ops_resume TIMEOUT 180)
cb_integration_test(ops_resume_live TIMEOUT 120)
# Timing (a case's time against the limit): alone. Beside other tests a CI run once crowded out
# the GEMM cases in all four tries (the first STREAM case took 2.3x its estimate).
cb_integration_test(ops_time_limit TIMEOUT 240)
set_tests_properties(ops_time_limit PROPERTIES RUN_SERIAL TRUE)
cb_integration_test(ops_rounds TIMEOUT 180)
cb_integration_test(ops_dry_run TIMEOUT 120)
# The ci suite against its --dry-run estimates, alone on the machine (the calibration's terms).
cb_integration_test(ops_estimates TIMEOUT 300)
if(TEST ops_estimates)
  set_tests_properties(ops_estimates PROPERTIES RUN_SERIAL TRUE)
endif()
cb_integration_test(ops_busy_gpu TIMEOUT 120)
cb_integration_test(ops_fio_busy LOCKS fio TIMEOUT 120)
cb_integration_test(ops_netns_private LOCKS "netns;mpirun" TIMEOUT 400)
if(TARGET fake_nvml)
  add_dependencies(clusterbench_testbin fake_nvml)
endif()
