# Tests of reports/ for issue 7: compare, fleet view, HTML report, launch recipes, Google
# Benchmark JSON, Prometheus textfile, Slurm end to end.
# Budgets: each unit test file < 5 s; reports_cli < 30 s; reports_html < 60 s (gnuplot,
# headless Chromium when installed); reports_launch < 10 s; reports_gbench < 30 s (two ci runs of
# STREAM + compare.py); reports_prometheus < 20 s; reports_slurm < 90 s (about 15 s here).
cb_unit_test(test_compare clusterbench_reports)
cb_unit_test(test_fleet clusterbench_reports)
cb_unit_test(test_html clusterbench_reports)
cb_unit_test(test_prometheus clusterbench_reports)
cb_integration_test(reports_cli TIMEOUT 120)
cb_integration_test(reports_html TIMEOUT 180)
# report --alert-rules: promtool check rules and promtool test rules (< 15 s).
cb_integration_test(alert_rules TIMEOUT 120)
cb_integration_test(reports_launch TIMEOUT 60)
cb_integration_test(reports_gbench TIMEOUT 120)
cb_integration_test(reports_prometheus TIMEOUT 120)
# Slurm's srun starts MPI ranks: hold the mpirun lock like the other MPI tests.
cb_integration_test(reports_slurm LOCKS mpirun TIMEOUT 180)
# The renovation's guard (issue 17): report.json of every fixture run equals its golden file
# (tests/fixtures/golden, written before the renovation). < 20 s.
cb_integration_test(report_golden TIMEOUT 60)
# No benchmark id in reports/*.cpp (issue 17): what the reports know about a benchmark is in the
# spec tables' families. < 5 s.
cb_integration_test(reports_no_benchmark_ids TIMEOUT 60)
# Issue 19: back-to-back ci runs compare clean; a slowed STREAM and dataloader regress. Timing:
# alone.
cb_integration_test(compare_noise LOCKS mpirun TIMEOUT 1200)
set_tests_properties(compare_noise PROPERTIES RUN_SERIAL TRUE)
# A cluster case carries its ranks' least CPU share (other work on rank 1's core). ~15 s, alone.
cb_integration_test(rank_cpu_share LOCKS mpirun TIMEOUT 120)
set_tests_properties(rank_cpu_share PROPERTIES RUN_SERIAL TRUE)
# Spec rows that say what was measured (issue 19): select.require, unmet and describe (< 1 s),
# and the seed's storage rows over io.fio records whose extra.scratch_device comes from the
# fixture tree tests/fixtures/fsroot-scratch (< 5 s).
cb_unit_test(test_select_require clusterbench_reports)
cb_unit_test(test_relative_rows clusterbench_reports)
cb_unit_test(test_mfu clusterbench_reports)
cb_unit_test(test_rank_pool clusterbench_reports)
cb_unit_test(test_extra_keys clusterbench_reports)
cb_unit_test(test_compare_reduce clusterbench_reports)
# Prometheus alerting rules from the tables (report --alert-rules): < 1 s.
cb_unit_test(test_alert_rules clusterbench_reports)
# The guide's memory type, CPU base clock and host:GPU memory rows (< 1 s).
cb_unit_test(test_host_rows clusterbench_reports)
cb_unit_test(test_select clusterbench_reports)
cb_unit_test(test_storage_rows clusterbench_reports clusterbench_core cb_io)
