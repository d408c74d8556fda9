# network/: port checks, p2p matrix, fleet outliers, tuning (issue 6).
cb_unit_test(test_ports clusterbench_core clusterbench_reports)
cb_unit_test(test_network clusterbench_core clusterbench_reports cb_network)
cb_integration_test(network_p2p_netns LOCKS "netns;mpirun" TIMEOUT 180)
# network_p2p_rails: six nodes, two rails, shaped faults located; rounds vs one pair at a time
# (~55 s). Alone: six MPI ranks on 2 cores are slowed by any other load, and MPI's path would
# then measure a rank-0 link slower for real (-14 to -25% with two CPU hogs beside it).
cb_integration_test(network_p2p_rails LOCKS "netns;mpirun" TIMEOUT 400)
set_tests_properties(network_p2p_rails PROPERTIES RUN_SERIAL TRUE)
# network_p2p_localise: one slow link (4 and 6 nodes, five runs) and one slow node located
# exactly, with two CPU hogs running (~130 s). Alone: the hogs are the load it is about.
cb_integration_test(network_p2p_localise LOCKS "netns;mpirun" TIMEOUT 400)
set_tests_properties(network_p2p_localise PROPERTIES RUN_SERIAL TRUE)
cb_integration_test(netns_cluster_down LOCKS netns TIMEOUT 60)
cb_integration_test(network_tune LOCKS "netns;sysctl" TIMEOUT 60)
cb_integration_test(network_tuning_ab LOCKS "netns;sysctl" TIMEOUT 90)
