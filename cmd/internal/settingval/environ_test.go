package settingval

import (
	"strings"
	"testing"
)

// A variable of the program's prefixes that no row names is refused with
// the setting it probably means; others, and the rows, pass.
func TestCheckEnviron(t *testing.T) {
	table := []*Setting{{Env: "EDGE_TLS_CERT"}, {Env: "EDGE_REDIS_URL"}, {Env: "EDGE_REDIS_TLS"}, {Env: "PMS_BASE_URL"}}
	ok := []string{"EDGE_TLS_CERT=x", "PMS_BASE_URL=y", "PATH=/bin", "EDGEX=1", "PMS_SERVICE_HOST=10.0.0.1"}
	if err := CheckEnviron(ok, []string{"EDGE_", "PMS_"}, table, "edge"); err != nil {
		t.Fatalf("known environment refused: %v", err)
	}
	err := CheckEnviron(append(ok, "EDGE_TLS_CERT_FILE=x", "EDGE_REDIS_ULR=r", "PMS_FROB=1"), []string{"EDGE_", "PMS_"}, table, "edge")
	for _, want := range []string{"unknown setting EDGE_TLS_CERT_FILE: did you mean EDGE_TLS_CERT?",
		"unknown setting EDGE_REDIS_ULR: did you mean EDGE_REDIS_URL?",
		"unknown setting PMS_FROB: the edge reads no such variable (edge --help lists its settings)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
