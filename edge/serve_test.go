package edge_test

import ()
