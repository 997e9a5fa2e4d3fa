package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// DECISIONS 12: one OAuth setting without the other stops start-up with a
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
		err := run(context.Background(), []string{"edge"}, mapEnv(tc.env), io.Discard, io.Discard)
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
	s, err := parseSettings(nil, mapEnv(map[string]string{"EDGE_OAUTH_ISSUER": "https://idp.example.com/",
		"EDGE_OAUTH_AUDIENCE": "https://api.aurora.example.com/v1"}), io.Discard)
	if err != nil || s.OAuthIssuer != "https://idp.example.com/" {
		t.Errorf("issuer %q, %v", s.OAuthIssuer, err)
	}
}

// testIssuer serves OpenID discovery and a JWKS of one ES256 key.
type testIssuer struct {
	srv *httptest.Server
	key jose.JSONWebKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ti := &testIssuer{key: jose.JSONWebKey{Key: priv, KeyID: "e1", Algorithm: "ES256", Use: "sig"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/keys"})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{ti.key.Public()}})
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

// token signs an access token claiming iss (the test issuer's URL when "").
func (ti *testIssuer) token(t *testing.T, iss, client, audience string) string {
	if iss == "" {
		iss = ti.srv.URL
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: ti.key.Key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", ti.key.KeyID))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(map[string]any{"iss": iss, "aud": audience, "sub": client,
		"client_id": client, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "scope": "properties:read"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
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
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	apiKey, apiRec := mint(t, keys.ModeLive)
	tokenRec := apiRec
	tokenRec.ID, tokenRec.SHA256, tokenRec.ClientID = "key_oauthOnly", "", "partner-a"
	writeKeys(t, keysFile, apiRec, tokenRec)

	for _, issuer := range []string{ti.srv.URL, down.URL} {
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
		if md.StatusCode != 200 || !strings.Contains(string(mdBody), `"authorization_servers":["`+ti.srv.URL+`"]`) {
			t.Errorf("metadata: %d %s", md.StatusCode, mdBody)
		}
		if strings.Contains(s.stderr.String(), tok) {
			t.Error("a token reached the log")
		}
	}
}
