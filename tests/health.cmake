# Tests of issue 8: burn-in (part 2) and health counters (part 1).
# Burn-in (docs/burnin.md): test_burnin < 5 s; burnin_cpu, burnin_corrupt and burnin_slow run
# `clusterbench burnin` under mpirun -np 2 for real (each < 40 s on 2 cores); burnin_signal (one
# process, SIGTERM mid-soak) < 30 s; burnin_gpu_rules (fake NVML, no plugin) < 15 s.
cb_unit_test(test_burnin clusterbench_reports clusterbench_core cb_compute cb_collectives cb_io)
cb_integration_test(burnin_cpu LOCKS mpirun TIMEOUT 120)
cb_integration_test(burnin_corrupt LOCKS mpirun TIMEOUT 120)
cb_integration_test(burnin_slow LOCKS mpirun TIMEOUT 120)
cb_integration_test(burnin_signal TIMEOUT 120)
# burnin_rank_death: two mpirun -np 2 soaks cut by kill -9 of a rank (< 40 s on 2 cores).
cb_integration_test(burnin_rank_death LOCKS mpirun TIMEOUT 120)
cb_integration_test(burnin_gpu_rules TIMEOUT 120)

# Part 1, health counters (docs/health.md). Budgets: test_health < 5 s, test_health_report
# < 2 s, health_run < 60 s (single-process ci runs of one no-op case, plus `report`).
# The benchmark objects too: the core archive holds burnin.cpp, which needs them.
cb_unit_test(test_health clusterbench_core clusterbench_reports ${CLUSTERBENCH_BENCHMARK_OBJECTS})
if(TARGET test_health AND TARGET fake_nvml)
  add_dependencies(test_health fake_nvml)
endif()
cb_unit_test(test_health_report clusterbench_reports)
target_sources(clusterbench_testbin PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support/health_inject.cpp)
cb_integration_test(health_run TIMEOUT 120)
# Issue 25: the software stack with stand-ins (nvidia-ctk, python3 with torch, a kubelet, a DCGM
# exporter on 127.0.0.1), its rows PASS and WARN/FAIL without them.
cb_integration_test(software_stack TIMEOUT 120)
