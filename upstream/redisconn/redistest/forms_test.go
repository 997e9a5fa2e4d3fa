package redistest

import (
	"crypto/tls"
	"strings"
	"testing"
)

// The TLS-only server answers over TLS with its CA trusted, refuses a
// client that trusts another CA, and serves nothing in clear text; its ACL
// user works and the default user is off.
func TestStartTLS(t *testing.T) {
	u := User{Name: "edge", Password: "pw-of-the-edge"}
	s := StartTLS(t, TLSOptions{Users: []User{u}, NoDefaultUser: true})
	tc := &tls.Config{RootCAs: s.CA.Pool(), MinVersion: tls.VersionTLS12}
	if got, err := Query(s.Addr, tc, "AUTH", u.Name, u.Password); err != nil || got != "OK" {
		t.Fatalf("AUTH over TLS with the CA: %q, %v", got, err)
	}
	if _, err := Query(s.Addr, tc, "PING"); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Errorf("PING as the default user: %v; want NOAUTH (default user off)", err)
	}
	other := NewCA(t, t.TempDir(), "other")
	if _, err := Query(s.Addr, &tls.Config{RootCAs: other.Pool(), MinVersion: tls.VersionTLS12}, "PING"); err == nil {
		t.Errorf("a client trusting another CA got an answer")
	}
	if _, err := Query(s.Addr, nil, "PING"); err == nil {
		t.Errorf("clear-text PING answered on the TLS-only port")
	}
}

// Three primaries share the 16384 slots and say cluster_state:ok.
func TestStartCluster(t *testing.T) {
	c := StartCluster(t)
	info, err := Query(c.Nodes[0], nil, "CLUSTER", "INFO")
	if err != nil || !strings.Contains(info, "cluster_slots_assigned:16384") || !strings.Contains(info, "cluster_known_nodes:3") {
		t.Fatalf("CLUSTER INFO: %q, %v", info, err)
	}
	if c.Seeds() != strings.Join(c.Nodes, ",") || len(c.Nodes) != 3 {
		t.Errorf("Seeds %q", c.Seeds())
	}
}
