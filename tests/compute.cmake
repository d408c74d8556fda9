# compute/ tests (included by tests/CMakeLists.txt). Budgets: unit tests < 5 s each;
# compute_gemm_cpu (the real ci run of compute.gemm on OpenBLAS) < 60 s on 2 cores;
# compute_gpu_check (scripts/gpu-check.sh rehearsed without a GPU) < 30 s.
cb_unit_test(test_gemm clusterbench_core cb_compute)
cb_unit_test(test_compute_gpu_memory_bandwidth clusterbench_core cb_compute)
cb_integration_test(compute_gemm_cpu TIMEOUT 120)
cb_integration_test(compute_gpu_check TIMEOUT 120)
