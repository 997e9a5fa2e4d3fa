package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// docs/contract.md section 12: one OAuth setting without the other stops start-up with a
// message naming the missing one.
func TestOAuthSettingsBothOrNeither(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"EDGE_OAUTH_ISSUER": "https://idp.example.com/"}, []string{"EDGE_OAUTH_AUDIENCE is required"}},
		{map[string]string{"EDGE_OAUTH_AUDIENCE": "https://api.aurora.example.com/v1"}, []string{"EDGE_OAUTH_ISSUER is required"}},
		{map[string]string{"EDGE_OAUTH_ISSUER": "idp.example.com", "EDGE_OAUTH_AUDIENCE": "https://api.aurora.example.com/v1"},
			[]string{"EDGE_OAUTH_ISSUER", `"idp.example.com"`}},
		{map[string]string{"EDGE_OAUTH_ISSUER": "https://idp.example.com", "EDGE_OAUTH_AUDIENCE": "https://api.example.com/v1?x=1"},
			[]string{"EDGE_OAUTH_AUDIENCE"}},
	} {
		err := run(context.Background(), []string{"edge"}, mapEnv(deployed(tc.env)), io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%v: started", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not say %s", tc.env, err, w)
			}
		}
	}
	// The issuer is kept exactly, trailing slash included: iss is compared
	// character for character.
	s, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_OAUTH_ISSUER": "https://idp.example.com/",
		"EDGE_OAUTH_AUDIENCE": "https://api.aurora.example.com/v1"})), io.Discard)
	if err != nil || s.OAuthIssuer != "https://idp.example.com/" {
		t.Errorf("issuer %q, %v", s.OAuthIssuer, err)
	}
}

// testIssuer is an authorization server over real HTTP publishing one
// ES256 key, and that key to sign access tokens with.
type testIssuer struct {
	*oauthtest.Issuer
	signer *oauthtest.Signer
}

func newTestIssuer(t *testing.T) *testIssuer {
	s := oauthtest.NewSigner(t, "e1", jose.ES256)
	return &testIssuer{Issuer: oauthtest.NewIssuer(t, s.JWK()), signer: s}
}

// token signs an access token claiming iss (the test issuer's URL when "").
func (ti *testIssuer) token(t *testing.T, iss, client, audience string) string {
	if iss == "" {
		iss = ti.URL()
	}
	now := time.Now()
	return ti.signer.Sign(t, map[string]any{"iss": iss, "aud": audience, "sub": client,
		"client_id": client, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "scope": "properties:read"}, "at+jwt")
}

// The program with tokens on: a record with a clientId and no sha256 acts
// for the client; the RFC 9728 document is served; API keys keep working.
// With the issuer down at start, the edge still starts and tokens get 503.
func TestRunWithOAuth(t *testing.T) {
	const audience = "https://api.aurora.example.com/v1"
	ti := newTestIssuer(t)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5}))
	defer sim.Close()
	apiKey, apiRec := keystest.Mint(t, "aurora", keys.ModeLive)
	tokenRec := apiRec
	tokenRec.ID, tokenRec.SHA256, tokenRec.ClientID = "key_oauthOnly", "", "partner-a"
	keysFile := keystest.File(t, apiRec, tokenRec)

	for _, issuer := range []string{ti.URL(), down.URL} {
		s := start(t, map[string]string{
			"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "", "EDGE_BRAND": "aurora",
			"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": sim.URL, "EDGE_DOCS_URL": testDocsURL,
			"EDGE_OAUTH_ISSUER": issuer, "EDGE_OAUTH_AUDIENCE": audience,
		})
		addr := waitListening(t, s)
		base := "http://" + addr + "/v1/"
		waitHealthy(t, base)
		tok := ti.token(t, issuer, "partner-a", audience)
		if issuer == down.URL {
			res, _ := getWithKey(t, base+"properties", tok)
			if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
				t.Errorf("issuer down at start: token answered %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
			}
			if got := call(t, base+"properties", apiKey); got != 200 {
				t.Errorf("API key with the issuer down: %d", got)
			}
			continue
		}
		if got := call(t, base+"properties", tok); got != 200 {
			t.Errorf("token: %d", got)
		}
		if got := call(t, base+"properties", apiKey); got != 200 {
			t.Errorf("API key beside tokens: %d", got)
		}
		res, body := getWithKey(t, base+"properties", ti.token(t, "", "partner-a", "https://elsewhere.example.com/v1"))
		if res.StatusCode != 401 || !strings.Contains(string(body), "INVALID_ACCESS_TOKEN") ||
			!strings.Contains(res.Header.Get("Www-Authenticate"), `resource_metadata="https://api.aurora.example.com/.well-known/oauth-protected-resource/v1"`) {
			t.Errorf("other audience: %d %s %q", res.StatusCode, body, res.Header.Get("Www-Authenticate"))
		}
		md, err := http.Get("http://" + addr + "/.well-known/oauth-protected-resource/v1")
		if err != nil {
			t.Fatal(err)
		}
		mdBody, _ := io.ReadAll(md.Body)
		md.Body.Close()
		if md.StatusCode != 200 || !strings.Contains(string(mdBody), `"authorization_servers":["`+ti.URL()+`"]`) {
			t.Errorf("metadata: %d %s", md.StatusCode, mdBody)
		}
		if strings.Contains(s.stderr.String(), tok) {
			t.Error("a token reached the log")
		}
	}
}

// TestRunOAuthJWKSHosts (docs/contract.md section 17) runs the program with
// an issuer on 127.0.0.1 whose keys are elsewhere. A jwks_uri on another
// host (127.0.0.2) is refused unless EDGE_OAUTH_JWKS_HOSTS names it; a
// jwks_uri on the issuer's host that redirects to another host serving the
// attacker's keys is refused whatever the setting, and the attacker's
// token answers 401, with both URLs in the log.
func TestRunOAuthJWKSHosts(t *testing.T) {
	const audience = "https://api.aurora.example.com/v1"
	legit := newTestIssuer(t) // its key signs the legitimate tokens
	attacker := newTestIssuer(t)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.2 (Linux routes all of 127/8 to lo): %v", err)
	}
	elsewhere := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := legit.signer.JWK()
		if r.URL.Path == "/evil" {
			k = attacker.signer.JWK()
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k}})
	}))
	elsewhere.Listener.Close()
	elsewhere.Listener = ln
	elsewhere.Start()
	t.Cleanup(elsewhere.Close)
	var issuer *httptest.Server
	jwksURI := ""
	issuer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer.URL, "jwks_uri": jwksURI})
		case "/jwks":
			http.Redirect(w, r, elsewhere.URL+"/evil", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(issuer.Close)
	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5}))
	defer sim.Close()
	_, apiRec := keystest.Mint(t, "aurora", keys.ModeLive)
	apiRec.ClientID = "partner-a"
	keysFile := keystest.File(t, apiRec)

	for _, c := range []struct {
		name, jwksURI, hosts string
		signer               *testIssuer
		want                 int
		log                  []string
	}{
		{"another host, not named", elsewhere.URL + "/keys", "", legit, 401, []string{elsewhere.URL + "/keys", "EDGE_OAUTH_JWKS_HOSTS"}},
		{"another host, named", elsewhere.URL + "/keys", "127.0.0.2", legit, 200, nil},
		{"redirect to another host", issuer.URL + "/jwks", "127.0.0.2", attacker, 401, []string{issuer.URL + "/jwks", elsewhere.URL + "/evil"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			jwksURI = c.jwksURI
			s := start(t, map[string]string{
				"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "", "EDGE_BRAND": "aurora",
				"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": sim.URL, "EDGE_DOCS_URL": testDocsURL,
				"EDGE_OAUTH_ISSUER": issuer.URL, "EDGE_OAUTH_AUDIENCE": audience, "EDGE_OAUTH_JWKS_HOSTS": c.hosts,
			})
			base := "http://" + waitListening(t, s) + "/v1/"
			waitHealthy(t, base)
			if got := call(t, base+"properties", c.signer.token(t, issuer.URL, "partner-a", audience)); got != c.want {
				t.Errorf("token: got %d, want %d", got, c.want)
			}
			for _, w := range c.log {
				if !strings.Contains(s.stderr.String(), w) {
					t.Errorf("the log does not name %s:\n%s", w, s.stderr.String())
				}
			}
		})
	}
	if _, err := parseSettings(nil, mapEnv(map[string]string{"EDGE_OAUTH_JWKS_HOSTS": "keys.example.com, https://x.example.com"}), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "EDGE_OAUTH_JWKS_HOSTS") || !strings.Contains(err.Error(), "https://x.example.com") {
		t.Errorf("a URL in EDGE_OAUTH_JWKS_HOSTS: %v", err)
	}
}

// TestRunWithHangingIssuer (docs/contract.md section 17): an issuer that
// accepts the connection and never answers does not hold start-up for its
// 5 s fetch: the edge serves after the 1 s start-up wait, logs that keys
// are fetched in the background, and answers a token 503 with Retry-After
// and an API key 200 while the fetch hangs.
func TestRunWithHangingIssuer(t *testing.T) {
	t.Parallel()
	const audience = "https://api.aurora.example.com/v1"
	var hanging atomic.Int64
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		<-r.Context().Done()
	}))
	t.Cleanup(issuer.Close)
	ti := newTestIssuer(t)
	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5}))
	defer sim.Close()
	apiKey, apiRec := keystest.Mint(t, "aurora", keys.ModeLive)
	apiRec.ClientID = "partner-a"
	keysFile := keystest.File(t, apiRec)
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": sim.URL, "EDGE_DOCS_URL": testDocsURL,
		"EDGE_OAUTH_ISSUER": issuer.URL, "EDGE_OAUTH_AUDIENCE": audience,
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	if !strings.Contains(s.stderr.String(), "fetching in the background") {
		t.Errorf("start-up did not move the key fetch to the background:\n%s", s.stderr.String())
	}
	res, body := getWithKey(t, base+"properties", ti.token(t, issuer.URL, "partner-a", audience))
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("token while the issuer hangs: %d Retry-After %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	if got := call(t, base+"properties", apiKey); got != 200 {
		t.Errorf("API key while the issuer hangs: %d", got)
	}
	if hanging.Load() > 2 {
		t.Errorf("%d fetches reached the issuer, want at most 2 (start, first token)", hanging.Load())
	}
}
