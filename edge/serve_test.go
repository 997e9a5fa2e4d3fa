package edge_test
