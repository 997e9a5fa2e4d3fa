package edge_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

// hydraRun is what one run of ORY Hydra published and minted (testdata/hydra/
// fixture.json; docs/oauth.md says how it was made).
type hydraRun struct {
	Settings      string          `json:"settings"`
	ClientID      string          `json:"client_id"`
	Discovery     json.RawMessage `json:"openid_configuration"`
	JWKS          json.RawMessage `json:"jwks"`
	TokenAudience string          `json:"token_audience"`
	TokenResource string          `json:"token_resource"`
}

type hydraFixture struct {
	Audience string   `json:"audience"`
	Both     hydraRun `json:"scope_claim_both"`
	List     hydraRun `json:"scope_claim_list"`
}

// fixtureIssuer answers the verifier's fetches from a captured run: the
// OpenID discovery document and the JWKS at the URLs Hydra served them at;
// anything else (the RFC 8414 document, which Hydra does not serve) is 404.
type fixtureIssuer map[string][]byte

func (f fixtureIssuer) RoundTrip(r *http.Request) (*http.Response, error) {
	body, ok := f[r.URL.String()]
	status := http.StatusOK
	if !ok {
		status, body = http.StatusNotFound, []byte(`{"error":"not found"}`)
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// issuedAt reads a token's iat without verifying it: the fixture's clock
// starts there.
func issuedAt(t *testing.T, token string) time.Time {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("fixture token is not a compact JWS")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		IAT int64 `json:"iat"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.IAT == 0 {
		t.Fatalf("fixture token has no iat: %v", err)
	}
	return time.Unix(c.IAT, 0)
}

// hydraHarness is the edge with tokens of the captured run on, its clock a
// few seconds after the token was minted, the "live" record acting for
// the run's client.
func hydraHarness(t *testing.T, audience string, run hydraRun) *harness {
	t.Helper()
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(run.Discovery, &disc); err != nil {
		t.Fatal(err)
	}
	issuer := fixtureIssuer{
		strings.TrimSuffix(disc.Issuer, "/") + "/.well-known/openid-configuration": run.Discovery,
		disc.JWKSURI: run.JWKS,
	}
	clk := testkit.NewClockAt(issuedAt(t, run.TokenAudience).Add(5 * time.Second))
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: disc.Issuer, Audience: audience,
		Now: clk.Now, HTTPClient: &http.Client{Transport: issuer}})
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, harnessOptions{now: clk.Now,
		oauth:   &edge.OAuth{Issuer: disc.Issuer, Audience: audience, Verifier: v},
		keyOver: map[string]map[string]any{"live": {"clientId": run.ClientID}}})
}

// TestHydraTokensAsDocumented checks docs/oauth.md's steps against tokens
// ORY Hydra v2 really minted (captured in testdata/hydra/fixture.json):
// with audience= and strategies.jwt.scope_claim=both a partner's token is
// accepted; sent with resource= (which Hydra ignores) it names no audience
// and is refused 401; with Hydra's default scope_claim (list: scp only) it
// carries no scope and is refused 403.
func TestHydraTokensAsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "hydra", "fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx hydraFixture
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}

	h := hydraHarness(t, fx.Audience, fx.Both)
	req := request{path: "/v1/properties", key: fx.Both.TokenAudience}
	wantOK(t, req, h.do(req))
	req = request{path: "/v1/properties", key: fx.Both.TokenResource}
	wantProblem(t, req, h.do(req), problem.InvalidAccessToken)

	h = hydraHarness(t, fx.Audience, fx.List)
	req = request{path: "/v1/properties", key: fx.List.TokenAudience}
	wantProblem(t, req, h.do(req), problem.InsufficientScope)
}
