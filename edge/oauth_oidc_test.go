package edge_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

// tokenEdge is the edge with tokens on, in front of a real authorization
// server (oidc-provider, oidc_server_test.go).
type tokenEdge struct {
	*harness
	oidc    *oidcServer
	clk     *testkit.Clock
	fetches *countingTransport
}

func newTokenEdge(t *testing.T, opts harnessOptions, keys ...jose.JSONWebKey) *tokenEdge {
	t.Helper()
	oidc := startOIDC(t, "0", oauthAudience, keys...)
	// The edge's clock starts at the real time: the server stamps tokens
	// with it. From then on only the test moves it.
	clk := testkit.NewClockAt(time.Now())
	opts, ct := tokenOpts(t, oidc.issuer, clk, opts)
	return &tokenEdge{harness: newHarness(t, opts), oidc: oidc, clk: clk, fetches: ct}
}

// setRecord rewrites the key file's record id with over and reloads it.
func (te *tokenEdge) setRecord(id string, over map[string]any) {
	te.t.Helper()
	b, err := os.ReadFile(te.keysFile)
	if err != nil {
		te.t.Fatal(err)
	}
	var f struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		te.t.Fatal(err)
	}
	for _, r := range f.Keys {
		if r["id"] == id {
			for k, v := range over {
				r[k] = v
			}
		}
	}
	keystest.Write(te.t, te.keysFile, f.Keys...)
	if err := te.store.Reload(); err != nil {
		te.t.Fatal(err)
	}
}

// TestOIDCProviderTokensAuthorize: tokens of a real OIDC server (oidc-provider)
// authorize a client with a key record; another audience, a missing scope, a
// client without a record, a suspended record and an expired token are refused.
func TestOIDCProviderTokensAuthorize(t *testing.T) {
	te := newTokenEdge(t, harnessOptions{}, rsaJWK(t, "k1"))
	tok := te.oidc.token("partner-a", "properties:read", "")

	req := request{path: "/v1/properties", key: tok}
	env := wantOK(t, req, te.do(req))
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(env.Data, &list); err != nil || len(list) == 0 {
		t.Fatalf("list: %v %s", err, env.Data)
	}
	req = request{path: "/v1/properties/" + list[0].ID, key: tok}
	wantOK(t, req, te.do(req))

	t.Run("another audience", func(t *testing.T) {
		other := te.oidc.token("partner-a", "properties:read", "https://api.borealis.example.com/v1")
		req := request{path: "/v1/properties", key: other}
		res := te.do(req)
		wantProblem(t, req, res, problem.InvalidAccessToken)
		wantChallenge(t, res, true)
	})
	t.Run("without properties:read", func(t *testing.T) {
		req := request{path: "/v1/properties", key: te.oidc.token("partner-noscope", "other:read", "")}
		res := te.do(req)
		wantProblem(t, req, res, problem.InsufficientScope)
		if got := res.header.Values("Www-Authenticate"); len(got) != 1 || got[0] != `Bearer error="insufficient_scope", scope="properties:read"` {
			t.Errorf("WWW-Authenticate %q", got)
		}
	})
	t.Run("client without a record", func(t *testing.T) {
		req := request{path: "/v1/properties", key: te.oidc.token("partner-unknown", "properties:read", "")}
		wantProblem(t, req, te.do(req), problem.InvalidAccessToken)
	})
	t.Run("record suspended", func(t *testing.T) {
		te.setRecord("key_live", map[string]any{"status": "suspended"})
		req := request{path: "/v1/properties", key: tok}
		wantProblem(t, req, te.do(req), problem.APIKeySuspended)
		te.setRecord("key_live", map[string]any{"status": "active"})
		wantOK(t, req, te.do(req))
	})
	t.Run("expired", func(t *testing.T) {
		// 61 s past the token's own exp (60 s of skew): the server stamps
		// it with the real time, which a busy machine moves on from the
		// edge's clock by more than the second a fixed advance would allow.
		te.clk.Set(tokenExpiry(t, tok).Add(61 * time.Second))
		req := request{path: "/v1/properties", key: tok}
		res := te.do(req)
		wantProblem(t, req, res, problem.AccessTokenExpired)
		wantChallenge(t, res, true)
	})
}

// tokenExpiry reads the exp claim of a token (unverified: the test's own).
func tokenExpiry(t testing.TB, tok string) time.Time {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Exp int64 `json:"exp"`
	}
	if err != nil || json.Unmarshal(b, &c) != nil || c.Exp == 0 {
		t.Fatalf("token without a readable exp: %v", err)
	}
	return time.Unix(c.Exp, 0)
}

// rogueKeys are keys no issuer published, one per kid, made once: RSA key
// generation is slow, and the tests need hundreds of such tokens.
var rogueKeys sync.Map // kid -> jose.JSONWebKey

// unknownKeyToken is a well-formed token for the right issuer and audience
// signed by a key the issuer never published.
func unknownKeyToken(t testing.TB, issuer string, now time.Time, kid string) string {
	k, ok := rogueKeys.Load(kid)
	if !ok {
		k, _ = rogueKeys.LoadOrStore(kid, rsaJWK(t, kid))
	}
	return signWith(t, k.(jose.JSONWebKey), accessClaims(issuer, "partner-a", "properties:read", now), "at+jwt")
}

// TestOIDCProviderKeyRotationAndOutage: key rotation at the real OIDC
// server, the server stopped, and the JWKS fetches counted.
func TestOIDCProviderKeyRotationAndOutage(t *testing.T) {
	k1, k2 := rsaJWK(t, "k1"), rsaJWK(t, "k2")
	te := newTokenEdge(t, harnessOptions{}, k1)
	get := func(tok string) response { return te.do(request{path: "/v1/", key: tok}) }
	t1 := te.oidc.token("partner-a", "properties:read", "")
	if res := get(t1); res.status != http.StatusOK {
		t.Fatalf("k1 token: %d %s", res.status, res.body)
	}
	if n := te.fetches.jwks.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times at start, want 1", n)
	}

	// Rotation: the server now signs with k2 and still publishes k1.
	te.oidc = te.oidc.restart(k2, k1)
	t2 := te.oidc.token("partner-a", "properties:read", "")
	te.clk.Advance(30 * time.Second)
	if res := get(t2); res.status != http.StatusOK {
		t.Fatalf("k2 token: %d %s", res.status, res.body)
	}
	if n := te.fetches.jwks.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2: the new key after one refetch", n)
	}

	// Partners send unknown kids, every second for 95 s: at most one fetch
	// per 30 s (at 30, 60 and 90 s).
	for range 95 {
		te.clk.Advance(time.Second)
		for j := range 3 {
			req := request{path: "/v1/", key: unknownKeyToken(t, te.oidc.issuer, te.clk.Now(), "rogue-"+string(rune('a'+j)))}
			wantProblem(t, req, te.do(req), problem.InvalidAccessToken)
		}
	}
	if n := te.fetches.jwks.Load(); n != 5 {
		t.Fatalf("JWKS fetched %d times after 95 s of unknown kids, want 2+3", n)
	}

	// The server stops: cached keys keep working; an unknown kid is 503.
	te.oidc.stop()
	for _, tok := range []string{t1, t2} {
		if res := get(tok); res.status != http.StatusOK {
			t.Fatalf("cached key with the server down: %d %s", res.status, res.body)
		}
	}
	te.clk.Advance(30 * time.Second)
	before := te.fetches.jwks.Load()
	for range 20 {
		req := request{path: "/v1/", key: unknownKeyToken(t, te.oidc.issuer, te.clk.Now(), "rogue-down")}
		res := te.do(req)
		wantProblem(t, req, res, problem.ServiceUnavailable)
		if ra := res.header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Fatalf("503 without Retry-After")
		}
	}
	if n := te.fetches.jwks.Load() - before; n != 1 {
		t.Errorf("%d JWKS fetch attempts with the server down within 30 s, want 1", n)
	}
	if res := get(t2); res.status != http.StatusOK {
		t.Fatalf("cached key after a failed fetch: %d %s", res.status, res.body)
	}

	// k1 leaves the JWKS: refused from the next fetch on.
	te.oidc = te.oidc.restart(k2)
	te.clk.Advance(30 * time.Second)
	req := request{path: "/v1/", key: unknownKeyToken(t, te.oidc.issuer, te.clk.Now(), "rogue-up")}
	wantProblem(t, req, te.do(req), problem.InvalidAccessToken)
	req = request{path: "/v1/", key: t1}
	wantProblem(t, req, te.do(req), problem.InvalidAccessToken)
	if res := get(t2); res.status != http.StatusOK {
		t.Fatalf("k2 token after k1 left: %d %s", res.status, res.body)
	}
}

// TestOIDCProviderForgedTokensRefused: forged tokens built from a real one of the server, and from its real keys.
func TestOIDCProviderForgedTokensRefused(t *testing.T) {
	k1 := rsaJWK(t, "k1")
	te := newTokenEdge(t, harnessOptions{}, k1)
	real := te.oidc.token("partner-a", "properties:read", "")
	parts := strings.Split(real, ".")
	var header, payload map[string]any
	decode := func(s string, v any) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || json.Unmarshal(b, v) != nil {
			t.Fatalf("decode token part: %v", err)
		}
	}
	decode(parts[0], &header)
	decode(parts[1], &payload)
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range m {
			out[kk] = vv
		}
		out[k] = v
		return out
	}
	hs256 := func(secret []byte) string {
		signing := enc(with(header, "alg", "HS256")) + "." + parts[1]
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(signing))
		return signing + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	}
	// The server's public key as published at its jwks_uri, and as PEM.
	res, err := http.Get(te.oidc.issuer + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	published, _ := io.ReadAll(res.Body)
	res.Body.Close()
	der, err := x509.MarshalPKIXPublicKey(k1.Public().Key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})

	now := te.clk.Now()
	forged := []struct{ name, token string }{
		{"alg none", enc(with(header, "alg", "none")) + "." + parts[1] + "."},
		{"HS256 with the RSA public key (PEM)", hs256(pemKey)},
		{"HS256 with the RSA public key (JWKS)", hs256(published)},
		{"valid signature from an unknown key", unknownKeyToken(t, te.oidc.issuer, now, "k1-lookalike")},
		{"valid signature from an unknown key with the server's kid", unknownKeyToken(t, te.oidc.issuer, now, "k1")},
		{"modified payload", parts[0] + "." + enc(with(payload, "client_id", "partner-b")) + "." + parts[2]},
		{"ID token typ, signed by the server's key", signWith(t, k1, payload, "id_token+jwt")},
		{"1 MB token", parts[0] + "." + strings.Repeat("A", 1_000_000) + "." + parts[2]},
	}
	before := te.fetches.all.Load()
	for _, f := range forged {
		t.Run(f.name, func(t *testing.T) {
			req := request{path: "/v1/properties", key: f.token}
			res := te.do(req)
			wantProblem(t, req, res, problem.InvalidAccessToken)
			wantChallenge(t, res, true)
			if strings.Contains(string(res.body), parts[2]) {
				t.Error("the body quotes the token")
			}
		})
	}
	// The genuine token, still fine; the forgeries caused one key fetch
	// between them: the fetch at start is not a refetch, so the first
	// unknown kid fetches at once, and the others fall within the 30 s
	// that follow it (docs/contract.md section 17).
	req := request{path: "/v1/properties", key: real}
	wantOK(t, req, te.do(req))
	if n := te.fetches.all.Load() - before; n != 1 {
		t.Errorf("%d requests to the issuer caused by forged tokens, want 1", n)
	}
	if strings.Contains(te.logs.String(), parts[2]) {
		t.Error("a token reached the log")
	}
}

// TestOIDCProviderMetadataAndNoTokenLeaks: the RFC 9728 document, resource_metadata on every 401, and no token in logs or traces
// (the real OTel SDK's in-memory exporter).
func TestOIDCProviderMetadataAndNoTokenLeaks(t *testing.T) {
	tel, simTel, exp := newTelemetry(t)
	// A tiny quota: the metadata route must never be rate-limited.
	te := newTokenEdge(t, harnessOptions{tel: tel, simTel: simTel,
		rateLimit: ratelimit.Limit{PerSecond: 0.001, Burst: 1}}, rsaJWK(t, "k1"))

	for range 5 {
		res, err := http.Get(te.srv.URL + "/.well-known/oauth-protected-resource/v1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("metadata: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		var md map[string]any
		if err := json.Unmarshal(body, &md); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"resource":                 oauthAudience,
			"authorization_servers":    []any{te.oidc.issuer},
			"scopes_supported":         []any{"properties:read", "webhooks:manage"},
			"bearer_methods_supported": []any{"header"},
			"resource_documentation":   testDocsURL,
		}
		if !reflect.DeepEqual(md, want) {
			t.Fatalf("metadata %v, want %v", md, want)
		}
	}

	good := te.oidc.token("partner-a", "properties:read", "")
	noScope := te.oidc.token("partner-noscope", "other:read", "")
	otherAud := te.oidc.token("partner-a", "properties:read", "https://api.borealis.example.com/v1")
	unknown := te.oidc.token("partner-unknown", "properties:read", "")
	tokens := []string{good, noScope, otherAud, unknown}

	exp.Reset()
	req := request{path: "/v1/properties", key: good}
	wantOK(t, req, te.do(req))
	req = request{path: "/v1/", key: noScope}
	wantProblem(t, req, te.do(req), problem.InsufficientScope)

	// Every 401 carries resource_metadata.
	for _, c := range []struct {
		req   request
		code  problem.Code
		token bool
	}{
		{request{path: "/v1/"}, problem.MissingAuthHeader, false},
		{request{path: "/v1/", headers: map[string][]string{"Authorization": {"Basic dXNlcjpwYXNz"}}}, problem.InvalidAuthHeader, false},
		{request{path: "/v1/", key: "svc_live_" + strings.Repeat("x", 30)}, problem.InvalidAPIKey, true},
		{request{path: "/v1/", key: "expired"}, problem.APIKeyExpired, true},
		{request{path: "/v1/", key: otherAud}, problem.InvalidAccessToken, true},
		{request{path: "/v1/", key: unknown}, problem.InvalidAccessToken, true},
	} {
		res := te.do(c.req)
		wantProblem(t, c.req, res, c.code)
		wantChallenge(t, res, c.token)
	}
	te.clk.Advance(10 * time.Minute)
	req = request{path: "/v1/", key: good}
	res := te.do(req)
	wantProblem(t, req, res, problem.AccessTokenExpired)
	wantChallenge(t, res, true)

	// Nothing of any token in the logs or the spans; the record's id and
	// the method are there.
	logs := te.logs.String()
	spans := exp.GetSpans()
	dump, err := json.Marshal(spans.Snapshots())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		for i, part := range strings.Split(tok, ".") {
			if i == 0 {
				continue // the header ({"alg":"RS256","typ":"at+jwt","kid":"k1"}) is common to all
			}
			if strings.Contains(logs, part) {
				t.Errorf("a token's part %d is in the log", i)
			}
			if strings.Contains(string(dump), part) {
				t.Errorf("a token's part %d is in a span", i)
			}
		}
	}
	if !strings.Contains(logs, `"key_id":"key_live"`) || !strings.Contains(logs, `"auth_method":"oauth"`) {
		t.Errorf("the access log lacks the record's id or the method:\n%s", short([]byte(logs)))
	}
	var oauthSpan bool
	for _, s := range spans {
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.String()
		}
		if attrs["partner_edge.auth.method"] == "oauth" && attrs["partner_edge.key_id"] == "key_live" {
			oauthSpan = true
		}
	}
	if !oauthSpan {
		t.Error("no server span with partner_edge.auth.method=oauth and the record's key id")
	}
	// An API key request is marked api_key.
	req = request{path: "/v1/", key: "test"}
	te.do(req)
	if !strings.Contains(te.logs.String(), `"auth_method":"api_key"`) {
		t.Error("no api_key auth_method in the log")
	}
}
