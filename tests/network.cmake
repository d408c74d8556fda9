# network/: port checks, p2p matrix, fleet outliers, tuning (issue 6).
cb_unit_test(test_ports clusterbench_core clusterbench_reports)
cb_unit_test(test_network clusterbench_core clusterbench_reports cb_network)
cb_integration_test(network_p2p_netns LOCKS "netns;mpirun" TIMEOUT 180)
cb_integration_test(network_tune LOCKS "netns;sysctl" TIMEOUT 60)
cb_integration_test(network_tuning_ab LOCKS "netns;sysctl" TIMEOUT 90)
