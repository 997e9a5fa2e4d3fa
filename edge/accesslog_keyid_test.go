package edge_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

// accessLine finds the access-log line of the request answered with
// requestID in logs, as a decoded JSON object.
func accessLine(t testing.TB, logs *testkit.LogBuffer, requestID string) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		if line["msg"] == "request" && line["request_id"] == requestID {
			return line
		}
	}
	t.Fatalf("no access-log line for request %s in:\n%s", requestID, logs.String())
	return nil
}

// TestRefusalsLogKeyID: every access-log line of a request whose key or
// token was identified names the key, refusals included (docs/contract.md
// section 17): after a key is suspended, the log says which key still
// calls. Requests whose credential was not identified name none.
func TestRefusalsLogKeyID(t *testing.T) {
	li, liKey := newLocalIssuer(t)
	clk := testkit.NewClockAt(time.Now())
	now := clk.Now()
	token := func(client, scope string) string {
		return signWith(t, liKey, accessClaims(li.URL(), client, scope, now), "at+jwt")
	}
	type refusal struct {
		name, key string
		code      problem.Code // "" for a 200
		keyID     string       // "" when no key_id may be logged
	}
	// The harness gives token clients to two records only ("live" and
	// "test"): each round makes them refusable in its own way.
	for _, round := range []struct {
		name  string
		over  map[string]map[string]any
		cases []refusal
	}{
		{"keys", nil, []refusal{
			{"key suspended", "suspended", problem.APIKeySuspended, "key_suspended"},
			{"key without the scope", "noscope", problem.InsufficientScope, "key_noscope"},
			{"key of another brand", "otherbrand", problem.BrandAccessDenied, "key_otherbrand"},
			{"key expired", "expired", problem.APIKeyExpired, "key_expired"},
			{"test key, no sandbox", "test", problem.TestModeUnavailable, "key_test"},
			{"key allowed", "live", "", "key_live"},
			{"key over its quota", "live", problem.RateLimited, "key_live"},
			{"unknown key", "svc_live_" + strings.Repeat("Q", 32), problem.InvalidAPIKey, ""},
			{"token without the scope", token("partner-a", "other:read"), problem.InsufficientScope, "key_live"},
			{"token of a test client, no sandbox", token("partner-noscope", "properties:read"), problem.TestModeUnavailable, "key_test"},
			{"token of an unknown client", token("partner-x", "properties:read"), problem.InvalidAccessToken, ""},
			{"forged token", "eyJhbGciOiJub25lIn0.e30.", problem.InvalidAccessToken, ""},
		}},
		{"suspended and other brand", map[string]map[string]any{
			"live": {"clientId": "partner-a", "status": "suspended"},
			"test": {"clientId": "partner-noscope", "brand": "borealis"},
		}, []refusal{
			{"token of a suspended client", token("partner-a", "properties:read"), problem.APIKeySuspended, "key_live"},
			{"token of another brand's client", token("partner-noscope", "properties:read"), problem.BrandAccessDenied, "key_test"},
		}},
		{"expired", map[string]map[string]any{
			"live": {"clientId": "partner-a", "expiresAt": "2020-01-01T00:00:00Z"},
		}, []refusal{
			{"token of an expired client", token("partner-a", "properties:read"), problem.APIKeyExpired, "key_live"},
		}},
	} {
		t.Run(round.name, func(t *testing.T) {
			opts, _ := tokenOpts(t, li.URL(), clk, harnessOptions{noSandbox: true,
				rateLimit: ratelimit.Limit{PerSecond: 0.001, Burst: 1}})
			for name, over := range round.over {
				opts.keyOver[name] = over
			}
			h := newHarness(t, opts)
			for _, c := range round.cases {
				t.Run(c.name, func(t *testing.T) {
					req := request{path: "/v1/properties", key: c.key}
					res := h.do(req)
					if c.code == "" {
						wantOK(t, req, res)
					} else {
						wantProblem(t, req, res, c.code)
					}
					line := accessLine(t, h.logs, res.header.Get("Svc-Request-Id"))
					got, has := line["key_id"]
					switch {
					case c.keyID == "" && has:
						t.Errorf("%d %s logged key_id %v for an unidentified credential", res.status, c.code, got)
					case c.keyID != "" && got != c.keyID:
						t.Errorf("%d %s logged key_id %v, want %q: %v", res.status, c.code, got, c.keyID, line)
					}
				})
			}
		})
	}
}
