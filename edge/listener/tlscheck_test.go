package listener_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// CheckTLSPair refuses what Serve would refuse, saying which file: a
// missing or unreadable certificate, a missing key, a key of another pair;
// a good pair passes.
func TestCheckTLSPairSaysWhichFile(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	testkit.WriteCertPair(t, cert, key, 1)
	other := filepath.Join(dir, "other")
	testkit.WriteCertPair(t, other+".crt", other+".key", 2)
	unreadable := filepath.Join(dir, "unreadable.crt")
	if err := os.WriteFile(unreadable, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"good pair", cert, key, ""},
		{"no certificate file", filepath.Join(dir, "missing.crt"), key, listener.TLSCertificate},
		{"a directory for the certificate", dir, key, listener.TLSCertificate},
		{"an empty certificate", unreadable, key, listener.TLSCertificate},
		{"no key file", cert, filepath.Join(dir, "missing.key"), listener.TLSKey},
		{"another pair's key", cert, other + ".key", listener.TLSPair},
	} {
		err := listener.CheckTLSPair(tc.cert, tc.key)
		if got := listener.RefusedTLSFile(err); got != tc.want || (tc.want == "") != (err == nil) {
			t.Errorf("%s: %v (refused %q), want refused %q", tc.name, err, got, tc.want)
		}
	}
}
