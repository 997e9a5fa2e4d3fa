package edge_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

// oauthAudience is the resource identifier of the token tests' edge.
const oauthAudience = "https://api.aurora.example.com/v1"

// wantMetadataURL is where every 401 points while tokens are on: the
// audience's scheme and host, the RFC 9728 well-known path.
const wantMetadataURL = "https://api.aurora.example.com/.well-known/oauth-protected-resource/v1"

// countingTransport counts the verifier's requests to the issuer: all of
// them, and those for the JWKS (failed attempts included).
type countingTransport struct{ all, jwks atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.all.Add(1)
	if strings.HasSuffix(r.URL.Path, "/jwks") {
		c.jwks.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// tokenOpts turns tokens on in a harness for issuer, with its own fake
// clock: the "live" record acts for partner-a, the "test" one for
// partner-noscope.
func tokenOpts(t testing.TB, issuer string, clk *testkit.Clock, opts harnessOptions) (harnessOptions, *countingTransport) {
	t.Helper()
	ct := &countingTransport{}
	v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: issuer, Audience: oauthAudience,
		Now: clk.Now, HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	opts.now = clk.Now
	opts.oauth = &edge.OAuth{Issuer: issuer, Audience: oauthAudience, Verifier: v}
	opts.keyOver = map[string]map[string]any{"live": {"clientId": "partner-a"}, "test": {"clientId": "partner-noscope"}}
	return opts, ct
}

// newLocalIssuer is a stand-in authorization server over real HTTP
// publishing one RS256 key, and that key (private) for the test to sign
// with. The tests against the real one (oidc-provider) are in
// oauth_oidc_test.go; these run without node.
func newLocalIssuer(t testing.TB) (*oauthtest.Issuer, jose.JSONWebKey) {
	t.Helper()
	key := rsaJWK(t, "local-1")
	return oauthtest.NewIssuer(t, key.Public()), key
}

// signWith signs claims with the private key as a JWS with header typ
// ("": none).
func signWith(t testing.TB, key jose.JSONWebKey, claims map[string]any, typ string) string {
	t.Helper()
	var ty any
	if typ != "" {
		ty = typ
	}
	return oauthtest.FromJWK(key).Sign(t, claims, ty)
}

func accessClaims(iss, client, scope string, now time.Time) map[string]any {
	return map[string]any{"iss": iss, "aud": oauthAudience, "sub": client, "client_id": client,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": "t1", "scope": scope}
}

// wantChallenge checks a 401's WWW-Authenticate: RFC 6750's invalid_token
// and, while tokens are on, RFC 9728's resource_metadata.
func wantChallenge(t testing.TB, res response, invalidToken bool) {
	t.Helper()
	c := res.header.Values("Www-Authenticate")
	want := `Bearer realm="partner-api"`
	if invalidToken {
		want += `, error="invalid_token"`
	}
	want += `, resource_metadata="` + wantMetadataURL + `"`
	if len(c) != 1 || c[0] != want {
		t.Errorf("WWW-Authenticate %q, want %q", c, want)
	}
}

// TestTokensBesideKeys runs the token path against a local issuer: one
// authorisation path for keys and tokens, the codes and headers of
// docs/contract.md section 12.
func TestTokensBesideKeys(t *testing.T) {
	li, liKey := newLocalIssuer(t)
	clk := testkit.NewClockAt(time.Now())
	opts, fetches := tokenOpts(t, li.URL(), clk, harnessOptions{})
	h := newHarness(t, opts)
	now := clk.Now()
	good := signWith(t, liKey, accessClaims(li.URL(), "partner-a", "properties:read other", now), "at+jwt")

	req := request{path: "/v1/properties", key: good}
	wantOK(t, req, h.do(req))
	req = request{path: "/v1/properties", key: "live"} // the record's API key, beside
	wantOK(t, req, h.do(req))

	for _, c := range []struct {
		name  string
		token string
		code  problem.Code
	}{
		{"unknown client", signWith(t, liKey, accessClaims(li.URL(), "partner-x", "properties:read", now), "at+jwt"), problem.InvalidAccessToken},
		{"expired", signWith(t, liKey, func() map[string]any {
			c := accessClaims(li.URL(), "partner-a", "properties:read", now)
			c["exp"] = now.Add(-2 * time.Minute).Unix()
			return c
		}(), "at+jwt"), problem.AccessTokenExpired},
		{"opaque", "an-opaque-token", problem.InvalidAccessToken},
		{"malformed key", "svc_live_short", problem.InvalidAPIKey},
	} {
		req := request{path: "/v1/properties", key: c.token}
		res := h.do(req)
		wantProblem(t, req, res, c.code)
		wantChallenge(t, res, true)
	}
	req = request{path: "/v1/properties"}
	res := h.do(req)
	wantProblem(t, req, res, problem.MissingAuthHeader)
	wantChallenge(t, res, false)

	noScope := signWith(t, liKey, accessClaims(li.URL(), "partner-noscope", "other:read", now), "at+jwt")
	req = request{path: "/v1/properties", key: noScope}
	res = h.do(req)
	wantProblem(t, req, res, problem.InsufficientScope)
	if got := res.header.Get("Www-Authenticate"); got != `Bearer error="insufficient_scope", scope="properties:read"` {
		t.Errorf("insufficient scope challenge %q", got)
	}
	if n := fetches.jwks.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times, want 1", n)
	}
}

// TestTokensOff: without OAuth settings a JWT is just a malformed API key,
// 401s carry no resource_metadata, and the metadata route does not exist.
func TestTokensOff(t *testing.T) {
	li, liKey := newLocalIssuer(t)
	h := newHarness(t, harnessOptions{})
	tok := signWith(t, liKey, accessClaims(li.URL(), "partner-a", "properties:read", time.Now()), "at+jwt")
	req := request{path: "/v1/properties", key: tok}
	res := h.do(req)
	wantProblem(t, req, res, problem.InvalidAPIKey)
	if got := res.header.Get("Www-Authenticate"); got != `Bearer realm="partner-api", error="invalid_token"` {
		t.Errorf("WWW-Authenticate %q", got)
	}
	r, err := http.Get(h.srv.URL + "/.well-known/oauth-protected-resource/v1")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("metadata with tokens off: %d, want 404", r.StatusCode)
	}
}

// TestTokenFailuresThrottled: INVALID_ACCESS_TOKEN and ACCESS_TOKEN_EXPIRED
// count toward the failed-authentication throttle like INVALID_API_KEY.
func TestTokenFailuresThrottled(t *testing.T) {
	li, liKey := newLocalIssuer(t)
	clk := testkit.NewClockAt(time.Now())
	opts, _ := tokenOpts(t, li.URL(), clk, harnessOptions{authFailLimit: 3})
	h := newHarness(t, opts)
	expired := accessClaims(li.URL(), "partner-a", "properties:read", clk.Now())
	expired["exp"] = clk.Now().Add(-time.Hour).Unix()
	bad := []string{"not-a-token", signWith(t, liKey, expired, ""), "x.y.z"}
	for _, tok := range bad {
		req := request{path: "/v1/", key: tok}
		if res := h.do(req); res.status != http.StatusUnauthorized {
			t.Fatalf("status %d", res.status)
		}
	}
	req := request{path: "/v1/", key: "still-not-a-token"}
	wantProblem(t, req, h.do(req), problem.RateLimited)
}

// TestStartWithIssuerDown: tokens get 503 with Retry-After (never 401)
// while no key was ever had; API keys are served meanwhile.
func TestStartWithIssuerDown(t *testing.T) {
	li, liKey := newLocalIssuer(t)
	issuer := li.URL()
	tok := signWith(t, liKey, accessClaims(issuer, "partner-a", "properties:read", time.Now()), "at+jwt")
	li.Close()
	clk := testkit.NewClockAt(time.Now())
	opts, _ := tokenOpts(t, issuer, clk, harnessOptions{})
	h := newHarness(t, opts)
	req := request{path: "/v1/properties", key: tok}
	res := h.do(req)
	wantProblem(t, req, res, problem.ServiceUnavailable)
	if res.header.Get("Retry-After") != "30" {
		t.Errorf("Retry-After %q, want 30", res.header.Get("Retry-After"))
	}
	req = request{path: "/v1/properties", key: "live"}
	wantOK(t, req, h.do(req))
	if out := h.logs.String(); strings.Contains(out, tok) {
		t.Error("the token reached the log")
	}
}
