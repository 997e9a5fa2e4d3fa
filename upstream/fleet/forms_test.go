package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/redisconn"

	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// TLS with a private CA (docs/contract.md section 16): the CA of EDGE_REDIS_CA_FILE is
// trusted for Redis alone (the process's system store stays as it is and
// does not trust it); a client certificate and an ACL user work; a wrong
// CA or password is an error that opens the way to the fallback, and the
// password is never in it.
func TestTLSPrivateCAAndACL(t *testing.T) {
	certFile, certDir := os.Getenv("SSL_CERT_FILE"), os.Getenv("SSL_CERT_DIR")
	t.Cleanup(func() {
		if os.Getenv("SSL_CERT_FILE") != certFile || os.Getenv("SSL_CERT_DIR") != certDir {
			t.Errorf("SSL_CERT_FILE or SSL_CERT_DIR changed: the system store must stay as it is")
		}
	})
	const pw = "pw-of-the-edge-user-9"
	srv := redistest.StartTLS(t, redistest.TLSOptions{ClientCerts: true, NoDefaultUser: true,
		Users: []redistest.User{{Name: "edge", Password: pw}}})
	good := redisconn.Settings{ReadFile: listener.ReadTLSFile, URL: srv.URL(), CAFile: srv.CA.File, CertFile: srv.ClientCert, KeyFile: srv.ClientKey,
		Username: "edge", Password: pw}
	client := func(t *testing.T, s redisconn.Settings) *redisconn.Client {
		cfg, err := s.Config()
		if err != nil {
			t.Fatal(err)
		}
		return newConfigClient(t, cfg)
	}

	c := client(t, good)
	if err := c.Ping(t.Context()); err != nil {
		t.Fatalf("private CA, client certificate, ACL user: %v", err)
	}
	store := NewStore(c, 0, testSecret)
	if err := store.Publish(t.Context(), SnapKey("acme", "live"), 1, []byte("payload"), time.Minute); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	if got, _, _, err := store.Fetch(t.Context(), SnapKey("acme", "live")); err != nil || string(got) != "payload" {
		t.Fatalf("fetch over TLS: %q, %v", got, err)
	}
	if n := c.Nodes(t.Context()); len(n) != 1 || n[0] != srv.Addr {
		t.Errorf("Nodes %v; want [%s]", n, srv.Addr)
	}
	if c.Form() != redisconn.FormPrimary {
		t.Errorf("Form %q", c.Form())
	}

	other := redistest.NewCA(t, t.TempDir(), "other")
	for _, tc := range []struct {
		name     string
		s        redisconn.Settings
		trust    bool   // a certificate-trust failure
		contains string // in the error
	}{
		{"system store (no CA file)", redisconn.Settings{ReadFile: listener.ReadTLSFile, URL: srv.URL(), CertFile: srv.ClientCert, KeyFile: srv.ClientKey, Username: "edge", Password: pw}, true, ""},
		{"wrong CA", redisconn.Settings{ReadFile: listener.ReadTLSFile, URL: srv.URL(), CAFile: other.File, CertFile: srv.ClientCert, KeyFile: srv.ClientKey, Username: "edge", Password: pw}, true, ""},
		{"wrong password", redisconn.Settings{ReadFile: listener.ReadTLSFile, URL: srv.URL(), CAFile: srv.CA.File, CertFile: srv.ClientCert, KeyFile: srv.ClientKey, Username: "edge", Password: "not-" + pw}, false, "WRONGPASS"},
	} {
		c := client(t, tc.s)
		err := c.Ping(t.Context()) // the first: what start-up logs
		for range redisconn.DefaultConsecutiveFailures {
			if err := c.Ping(t.Context()); !errors.Is(err, redisconn.ErrUnavailable) {
				t.Errorf("%s: later call %v; want unavailable", tc.name, err)
			}
		}
		if err == nil || redisconn.IsTLSTrust(err) != tc.trust || !strings.Contains(err.Error(), tc.contains) || !errors.Is(err, redisconn.ErrUnavailable) {
			t.Errorf("%s: %v (trust failure %v); want an unavailable error, trust failure %v, containing %q", tc.name, err, redisconn.IsTLSTrust(err), tc.trust, tc.contains)
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("%s: error %q shows the password", tc.name, err)
		}
		if st := c.State(); st != upstream.BreakerOpen {
			t.Errorf("%s: breaker %s; want open (in-process fallback)", tc.name, st)
		}
	}
}

// Operator files (docs/contract.md section 15): the CA bundle and the client certificate
// are read only when regular and small; a file without a certificate, or
// a certificate without its key, is refused naming the setting.
func TestLoadTLSRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	ca := redistest.NewCA(t, dir, "ca")
	cert, key := ca.Issue(t, "client")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tc, err := redisconn.LoadTLS(listener.ReadTLSFile, ca.File, cert, key); err != nil || tc.RootCAs == nil || len(tc.Certificates) != 1 {
		t.Fatalf("good files: %v, %v", tc, err)
	}
	if tc, err := redisconn.LoadTLS(listener.ReadTLSFile, "", "", ""); tc != nil || err != nil {
		t.Errorf("no files: %v, %v; want nil, nil", tc, err)
	}
	for _, bad := range []struct{ ca, cert, key, named string }{
		{dir, "", "", "EDGE_REDIS_CA_FILE"},
		{"/dev/zero", "", "", "EDGE_REDIS_CA_FILE"},
		{junk, "", "", "EDGE_REDIS_CA_FILE"},
		{"", cert, ca.File, "EDGE_REDIS_CERT_FILE"},
		{"", cert, filepath.Join(dir, "missing.pem"), "EDGE_REDIS_KEY_FILE"},
	} {
		if _, err := redisconn.LoadTLS(listener.ReadTLSFile, bad.ca, bad.cert, bad.key); err == nil || !strings.Contains(err.Error(), bad.named) {
			t.Errorf("%+v: %v; want an error naming %s", bad, err, bad.named)
		}
	}
}

// The Cluster form with an ACL user (EDGE_REDIS_USERNAME/_PASSWORD): the
// user's calls work on every node, Nodes lists the three primaries, a
// wrong password is an unavailable error that does not show it; Describe
// names the form and seeds without a credential.
func TestClusterFormWithACLUser(t *testing.T) {
	const pw = "pw-of-the-cluster-user-3"
	c := redistest.StartCluster(t)
	for _, n := range c.Nodes {
		if _, err := redistest.Query(n, nil, "ACL", "SETUSER", "edge", "on", ">"+pw, "~*", "&*", "+@all"); err != nil {
			t.Fatal(err)
		}
	}
	s := redisconn.Settings{Cluster: c.Seeds(), Username: "edge", Password: pw}
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	client := newConfigClient(t, cfg)
	store := NewStore(client, 0, testSecret)
	for _, brand := range []string{"acme", "globex", "initech", "umbrella"} { // keys over several slots
		if err := store.Publish(t.Context(), SnapKey(brand, "live"), 1, []byte(brand), time.Minute); err != nil {
			t.Fatalf("publish %s: %v", brand, err)
		}
		if got, _, _, err := store.Fetch(t.Context(), SnapKey(brand, "live")); err != nil || string(got) != brand {
			t.Fatalf("fetch %s: %q, %v", brand, got, err)
		}
	}
	if n := client.Nodes(t.Context()); len(n) != 3 || client.Form() != redisconn.FormCluster {
		t.Errorf("form %s, nodes %v; want cluster and three primaries", client.Form(), n)
	}
	if d := s.Describe(); !strings.Contains(d, "cluster") || !strings.Contains(d, c.Nodes[0]) || strings.Contains(d, pw) {
		t.Errorf("Describe %q", d)
	}
	s.Password = "not-" + pw
	cfg, _ = s.Config()
	err = newConfigClient(t, cfg).Ping(t.Context())
	if err == nil || !errors.Is(err, redisconn.ErrUnavailable) || !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), pw) {
		t.Errorf("wrong password: %v; want WRONGPASS, unavailable, no password", err)
	}
}
