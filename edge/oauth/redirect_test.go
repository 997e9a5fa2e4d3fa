package oauth_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// serveOn starts h over plain http on host (a loopback address).
func serveOn(t testing.TB, host string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatalf("listen on %s (Linux routes all of 127/8 to lo): %v", host, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// jwksHandler serves a JWKS of keys.
func jwksHandler(keys ...jose.JSONWebKey) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: keys})
	})
}

// TestKeyFetchRedirects (docs/contract.md section 17): discovery and JWKS
// fetches follow a redirect only within their origin, whatever client the
// caller passes; a refused redirect is logged naming both URLs, and a
// token of the keys behind it is Invalid (401), not Unavailable.
func TestKeyFetchRedirects(t *testing.T) {
	legit := oauthtest.NewSigner(t, "legit", jose.ES256)
	attacker := oauthtest.NewSigner(t, "attacker", jose.ES256)
	evil := serveOn(t, "127.0.0.2", jwksHandler(attacker.JWK()))
	for _, c := range []struct {
		name string
		tls  bool
		// route answers the issuer's paths; base is the issuer's URL.
		route func(base string, w http.ResponseWriter, r *http.Request)
		ok    bool   // keys fetched, the legit key's token verifies
		from  string // the refused redirect's source path, when !ok
	}{
		{"https jwks_uri 302 to http on another host", true, func(base string, w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, evil.URL+"/jwks", http.StatusFound)
		}, false, "/jwks"},
		{"http jwks_uri 307 to another loopback host", false, func(base string, w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, evil.URL+"/jwks", http.StatusTemporaryRedirect)
		}, false, "/jwks"},
		{"jwks_uri 302 within its origin", true, func(base string, w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/jwks" {
				http.Redirect(w, r, "/jwks-2", http.StatusFound)
				return
			}
			jwksHandler(legit.JWK()).ServeHTTP(w, r)
		}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var srv *httptest.Server
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/.well-known/oauth-authorization-server":
					_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
				case "/.well-known/openid-configuration":
					http.NotFound(w, r)
				default:
					c.route(srv.URL, w, r)
				}
			})
			client := &http.Client{} // follows redirects: the verifier must not
			if c.tls {
				srv = httptest.NewTLSServer(h)
				client = srv.Client()
			} else {
				srv = httptest.NewServer(h)
			}
			t.Cleanup(srv.Close)
			clk := newClock()
			log, logs := testkit.NewLogger()
			v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: srv.URL, Audience: testAudience,
				Now: clk.Now, HTTPClient: client, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			_, errLegit := v.Verify(context.Background(), legit.Sign(t, claims(srv.URL, clk.Now(), "c"), nil))
			_, errForged := v.Verify(context.Background(), attacker.Sign(t, claims(srv.URL, clk.Now(), "c"), nil))
			if c.ok {
				if errLegit != nil {
					t.Fatalf("same-origin redirect: %v", errLegit)
				}
				return
			}
			if kindOf(errForged) != oauth.Invalid {
				t.Fatalf("token of the keys behind the redirect: got %v, want Invalid (401)", errForged)
			}
			if v.Ready() {
				t.Error("keys taken from behind a refused redirect")
			}
			if out := logs.String(); !strings.Contains(out, srv.URL+c.from) || !strings.Contains(out, evil.URL+"/jwks") {
				t.Errorf("the log does not name both URLs:\n%s", out)
			}
		})
	}
}

// TestDiscoveryRedirectRefused: a discovery document behind a redirect to
// another origin is not read, however valid it looks.
func TestDiscoveryRedirectRefused(t *testing.T) {
	attacker := oauthtest.NewSigner(t, "attacker", jose.ES256)
	var srv *httptest.Server
	evil := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
			return
		}
		jwksHandler(attacker.JWK()).ServeHTTP(w, r)
	}))
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			http.Redirect(w, r, evil.URL+r.URL.Path, http.StatusMovedPermanently)
			return
		}
		jwksHandler(attacker.JWK()).ServeHTTP(w, r) // would be the attacker's if discovery were believed
	}))
	t.Cleanup(srv.Close)
	clk := newClock()
	log, logs := testkit.NewLogger()
	v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: srv.URL, Audience: testAudience, Now: clk.Now, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if v.Ready() {
		t.Fatal("discovery followed a redirect to another origin")
	}
	if _, err := v.Verify(context.Background(), attacker.Sign(t, claims(srv.URL, clk.Now(), "c"), nil)); kindOf(err) != oauth.Invalid {
		t.Errorf("got %v, want Invalid", err)
	}
	if out := logs.String(); !strings.Contains(out, srv.URL+"/.well-known/openid-configuration") ||
		!strings.Contains(out, evil.URL+"/.well-known/openid-configuration") {
		t.Errorf("the log does not name both URLs:\n%s", out)
	}
}

// TestJWKSHosts: the jwks_uri must be on the issuer's host or one named in
// Config.JWKSHosts (EDGE_OAUTH_JWKS_HOSTS), and https unless on loopback
// with an http issuer.
func TestJWKSHosts(t *testing.T) {
	sg := oauthtest.NewSigner(t, "k1", jose.ES256)
	other := serveOn(t, "127.0.0.2", jwksHandler(sg.JWK()))
	for _, c := range []struct {
		name  string
		jwks  string
		hosts []string
		ok    bool
	}{
		{"another host, not named", other.URL + "/jwks", nil, false},
		{"another host, named", other.URL + "/jwks", []string{"127.0.0.2"}, true},
		{"another host, another named", other.URL + "/jwks", []string{"127.0.0.3"}, false},
		{"http off loopback, named", "http://jwks.example.com/jwks", []string{"jwks.example.com"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": c.jwks})
			}))
			t.Cleanup(srv.Close)
			clk := newClock()
			log, logs := testkit.NewLogger()
			v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: srv.URL, Audience: testAudience,
				Now: clk.Now, Logger: log, JWKSHosts: c.hosts})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(context.Background(), sg.Sign(t, claims(srv.URL, clk.Now(), "c"), nil))
			if c.ok != (err == nil) {
				t.Fatalf("verify: %v (want ok %v)", err, c.ok)
			}
			if !c.ok {
				if kindOf(err) != oauth.Invalid {
					t.Errorf("got %v, want Invalid", err)
				}
				if !strings.Contains(logs.String(), "jwks_uri") {
					t.Errorf("the refusal is not logged:\n%s", logs.String())
				}
			}
		})
	}
}
