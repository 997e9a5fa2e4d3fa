package edge_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

// attackerJWKS serves the JWKS of a key the attacker holds over plain http
// on 127.0.0.2: another loopback host than the issuer's.
func attackerJWKS(t testing.TB) (*httptest.Server, jose.JSONWebKey) {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key := jose.JSONWebKey{Key: priv, KeyID: "attacker-1", Algorithm: "RS256", Use: "sig"}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.2 (Linux routes all of 127/8 to lo): %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key.Public()}})
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, key
}

// TestForgedTokenBehindRedirect (docs/contract.md section
// 17): a hostile https issuer whose jwks_uri answers 302 to a plain-http
// URL on another host serving the attacker's keys. The edge must not
// follow it: a token signed by the attacker's key answers 401
// INVALID_ACCESS_TOKEN, and the log names both URLs of the refused
// redirect. The issuer's client is the caller's (trusting the test
// certificate); the verifier enforces the policy on it anyway.
func TestForgedTokenBehindRedirect(t *testing.T) {
	evil, key := attackerJWKS(t)
	var issuer *httptest.Server
	issuer = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer.URL, "jwks_uri": issuer.URL + "/jwks"})
		case "/jwks":
			http.Redirect(w, r, evil.URL+"/jwks", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(issuer.Close)
	clk := testkit.NewClockAt(time.Now())
	log, logs := testkit.NewLogger()
	v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: issuer.URL, Audience: oauthAudience,
		Now: clk.Now, HTTPClient: issuer.Client(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{now: clk.Now,
		oauth:   &edge.OAuth{Issuer: issuer.URL, Audience: oauthAudience, Verifier: v},
		keyOver: map[string]map[string]any{"live": {"clientId": "partner-a"}}})
	forged := signWith(t, key, accessClaims(issuer.URL, "partner-a", "properties:read", clk.Now()), "at+jwt")
	req := request{path: "/v1/properties", key: forged}
	res := h.do(req)
	if res.status != http.StatusUnauthorized {
		t.Fatalf("forged token behind a redirect: got %d, want 401", res.status)
	}
	wantProblem(t, req, res, problem.InvalidAccessToken)
	out := logs.String()
	if !strings.Contains(out, issuer.URL+"/jwks") || !strings.Contains(out, evil.URL+"/jwks") {
		t.Errorf("the log does not name both URLs of the redirect (%s, %s):\n%s", issuer.URL+"/jwks", evil.URL+"/jwks", out)
	}
}
