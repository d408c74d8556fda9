# Tests of reports/ for issue 7: compare, fleet view, HTML report, launch recipes.
# Budgets: each unit test file < 5 s; reports_cli < 30 s; reports_html < 60 s (gnuplot,
# headless Chromium when installed); reports_launch < 10 s.
cb_unit_test(test_compare clusterbench_reports)
cb_unit_test(test_fleet clusterbench_reports)
cb_unit_test(test_html clusterbench_reports)
cb_integration_test(reports_cli TIMEOUT 120)
cb_integration_test(reports_html TIMEOUT 180)
cb_integration_test(reports_launch TIMEOUT 60)
