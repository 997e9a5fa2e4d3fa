package edge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// docs/contract.md section 3.
func TestAuthentication(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	live := h.keys["live"]
	const plain = `Bearer realm="partner-api"`
	const invalid = `Bearer realm="partner-api", error="invalid_token"`
	for _, tc := range []struct {
		name      string
		auth      []string // nil: no header
		key       string   // or a key name
		code      problem.Code
		challenge string
	}{
		{name: "missing", code: problem.MissingAuthHeader, challenge: plain},
		{name: "other scheme", auth: []string{"Basic " + live}, code: problem.InvalidAuthHeader, challenge: plain},
		{name: "empty token", auth: []string{"Bearer "}, code: problem.InvalidAuthHeader, challenge: plain},
		{name: "scheme only", auth: []string{"Bearer"}, code: problem.InvalidAuthHeader, challenge: plain},
		{name: "empty header", auth: []string{""}, code: problem.InvalidAuthHeader, challenge: plain},
		{name: "two headers", auth: []string{"Bearer " + live, "Bearer " + live}, code: problem.InvalidAuthHeader, challenge: invalid},
		{name: "token with space", auth: []string{"Bearer " + live + " extra"}, code: problem.InvalidAuthHeader, challenge: invalid},
		{name: "not key format", auth: []string{"Bearer abc"}, code: problem.InvalidAPIKey, challenge: invalid},
		{name: "short key", auth: []string{"Bearer svc_live_abc123"}, code: problem.InvalidAPIKey, challenge: invalid},
		{name: "bad characters", auth: []string{"Bearer svc_live_" + strings.Repeat("a", 23) + "!"}, code: problem.InvalidAPIKey, challenge: invalid},
		{name: "unknown key", auth: []string{"Bearer svc_live_" + strings.Repeat("Zz9", 10)}, code: problem.InvalidAPIKey, challenge: invalid},
		{name: "prefix disagrees with mode", auth: []string{"Bearer svc_test_" + strings.TrimPrefix(live, "svc_live_")}, code: problem.InvalidAPIKey, challenge: invalid},
		{name: "expired", key: "expired", code: problem.APIKeyExpired, challenge: invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request{path: "/v1/properties", key: tc.key}
			if tc.auth != nil {
				req.headers = map[string][]string{"Authorization": tc.auth}
			}
			res := h.do(req)
			wantProblem(t, req, res, tc.code)
			if got := res.header.Values("Www-Authenticate"); len(got) != 1 || got[0] != tc.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tc.challenge)
			}
		})
	}

	t.Run("scheme is case-insensitive", func(t *testing.T) {
		for _, scheme := range []string{"bearer", "BEARER", "BeArEr"} {
			req := request{path: "/v1/", headers: map[string][]string{"Authorization": {scheme + " " + live}}}
			wantOK(t, req, h.do(req))
		}
	})
	t.Run("future expiry is fine", func(t *testing.T) {
		req := request{path: "/v1/", key: "future"}
		wantOK(t, req, h.do(req))
	})
	t.Run("absent scopes mean all", func(t *testing.T) {
		req := request{path: "/v1/properties", key: "noscopes"}
		wantOK(t, req, h.do(req))
	})
}

func TestKeyAuthorisation(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct {
		key  string
		code problem.Code
	}{
		{"suspended", problem.APIKeySuspended},
		{"otherbrand", problem.BrandAccessDenied},
		{"noscope", problem.InsufficientScope},
	} {
		for _, path := range []string{"/v1/", "/v1/properties", "/v1/properties/" + activeIDs(t, h.live, testBrand)[0]} {
			req := request{path: path, key: tc.key}
			res := h.do(req)
			wantProblem(t, req, res, tc.code)
			if res.header.Get("Www-Authenticate") != "" {
				t.Errorf("403 carries WWW-Authenticate")
			}
		}
	}
	t.Run("test mode unavailable without a sandbox", func(t *testing.T) {
		h := newHarness(t, harnessOptions{noSandbox: true})
		for _, path := range []string{"/v1/", "/v1/properties"} {
			req := request{path: path, key: "test"}
			wantProblem(t, req, h.do(req), problem.TestModeUnavailable)
		}
		if n := h.live.Requests(); n != 0 {
			t.Errorf("a test key reached the live PMS (%d requests)", n)
		}
	})
}

// docs/contract.md section 3: grants, and modes kept apart.
func TestPropertyAuthorisation(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	all := activeIDs(t, h.live, testBrand)
	granted := all[:3]

	req := request{path: "/v1/properties", key: "granted"}
	env := wantOK(t, req, h.do(req))
	if got := dataIDs(t, env); !equal(got, granted) {
		t.Errorf("granted key lists %v, want %v", got, granted)
	}
	if env.Meta.Pagination.Total != len(granted) {
		t.Errorf("total %d, want %d", env.Meta.Pagination.Total, len(granted))
	}
	req = request{path: "/v1/properties?page=2&perPage=2", key: "granted"}
	env = wantOK(t, req, h.do(req))
	if got := dataIDs(t, env); !equal(got, granted[2:]) || env.Meta.Pagination.Total != 3 {
		t.Errorf("granted page 2 = %v (total %d), want %v", got, env.Meta.Pagination.Total, granted[2:])
	}
	for _, id := range granted {
		req := request{path: "/v1/properties/" + id, key: "granted"}
		wantOK(t, req, h.do(req))
	}
	before := h.live.Requests()
	for _, id := range all[3:6] {
		req := request{path: "/v1/properties/" + id, key: "granted"}
		wantProblem(t, req, h.do(req), problem.PropertyNotFound)
	}
	if h.live.Requests() != before {
		t.Errorf("an ungranted id was fetched from the PMS")
	}
	t.Run("Svc-Property-Id is ignored", func(t *testing.T) {
		req := request{path: "/v1/properties", key: "granted", headers: map[string][]string{"Svc-Property-Id": {all[5]}}}
		env := wantOK(t, req, h.do(req))
		if got := dataIDs(t, env); !equal(got, granted) {
			t.Errorf("with Svc-Property-Id: %v", got)
		}
	})

	t.Run("test keys never reach the live PMS, nor live keys the sandbox", func(t *testing.T) {
		liveBefore, sbBefore := h.live.Requests(), h.sandbox.Requests()
		req := request{path: "/v1/properties?perPage=100", key: "test"}
		env := wantOK(t, req, h.do(req))
		if got, want := dataIDs(t, env), activeIDs(t, h.sandbox, testBrand); !equal(got, want) {
			t.Errorf("test key lists %v, want the sandbox's %v", got, want)
		}
		sbID := activeIDs(t, h.sandbox, testBrand)[0]
		req = request{path: "/v1/properties/" + sbID, key: "test"}
		wantOK(t, req, h.do(req))
		if h.live.Requests() != liveBefore {
			t.Errorf("test key reached the live PMS")
		}
		req = request{path: "/v1/properties/" + sbID, key: "live"}
		wantProblem(t, req, h.do(req), problem.PropertyNotFound)
		req = request{path: "/v1/properties?perPage=100", key: "live"}
		env = wantOK(t, req, h.do(req))
		if got := dataIDs(t, env); !equal(got, all) {
			t.Errorf("live key lists %d ids, want the live %d", len(got), len(all))
		}
		if h.sandbox.Requests() != sbBefore+2 {
			t.Errorf("sandbox requests %d, want %d: a live key reached it", h.sandbox.Requests(), sbBefore+2)
		}
	})
}

// Keys never appear in logs; their public ids do.
func TestKeysNotLogged(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, name := range []string{"live", "test", "granted", "suspended", "expired", "otherbrand"} {
		req := request{path: "/v1/properties", key: name}
		h.do(req)
	}
	req := request{path: "/v1/", headers: map[string][]string{"Authorization": {"Bearer svc_live_" + strings.Repeat("Q", 30)}}}
	h.do(req)
	logs := h.logs.String()
	for name, token := range h.keys {
		if strings.Contains(logs, token) || strings.Contains(logs, token[9:]) {
			t.Errorf("key %s appears in logs", name)
		}
	}
	if strings.Contains(logs, strings.Repeat("Q", 30)) {
		t.Errorf("an unknown presented key appears in logs")
	}
	if !strings.Contains(logs, `"key_id":"key_live"`) {
		t.Errorf("access log lacks the key id: %s", logs)
	}
}

func dataIDs(t testing.TB, env envelope) []string {
	t.Helper()
	var props []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(env.Data, &props); err != nil {
		t.Fatalf("data: %v", err)
	}
	ids := make([]string, len(props))
	for i, p := range props {
		ids[i] = p.ID
	}
	return ids
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var _ = http.StatusOK
