# Collectives (issue 4): unit tests of the arithmetic, and real MPI runs of the MPI backend.
cb_unit_test(test_collectives clusterbench_core clusterbench_reports cb_collectives)
# Budgets on 2 cores: np 2 and np 4 sweeps ~60 s; a hung rank ~40 s; netns 2 nodes ~90 s.
cb_integration_test(collectives_mpirun LOCKS mpirun TIMEOUT 240)
cb_integration_test(collectives_hang LOCKS mpirun TIMEOUT 120)
cb_integration_test(collectives_netns LOCKS "netns;mpirun" TIMEOUT 300)
