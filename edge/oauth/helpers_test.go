package oauth_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

const testAudience = "https://api.aurora.example.com/v1"

// neverFires is Config.After for tests whose issuer answers at once: a
// token waits for the fetch under way however long it takes, so the
// outcome never depends on how busy the machine is.
func neverFires(time.Duration) <-chan time.Time { return nil }

// newClock is the oauth tests' clock, at a fixed instant.
func newClock() *testkit.Clock {
	return testkit.NewClockAt(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
}

// signer is a freshly made key pair with its kid and algorithm.
type signer struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newSigner(t testing.TB, kid string, alg jose.SignatureAlgorithm) *signer {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256, jose.PS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key type for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &signer{kid: kid, alg: alg, priv: priv}
}

// jwk is the public JWK of s, as an issuer publishes it.
func (s *signer) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: s.priv.Public(), KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}
}

// sign makes a compact JWS of claims with header typ (nil: no typ).
func (s *signer) sign(t testing.TB, claims map[string]any, typ any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader("kid", s.kid)
	if typ != nil {
		opts = opts.WithType(jose.ContentType(typ.(string)))
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: s.priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// issuer is a minimal authorization server's metadata and JWKS endpoints
// over real HTTP, counting fetches. The tests of the edge against a real
// authorization server (oidc-provider) live in package edge; this one lets
// the verifier's own tests publish any key set they like.
type issuer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	keys      []jose.JSONWebKey
	raw       []byte // when set, served as the JWKS instead of keys
	jwksHits  atomic.Int64
	oidcOnly  bool   // serve only OpenID discovery, not RFC 8414
	issuerURL string // the issuer the metadata names; "" means srv.URL
}

func newIssuer(t testing.TB, keys ...jose.JSONWebKey) *issuer {
	is := &issuer{keys: keys}
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, r *http.Request) {
		iss := is.issuerURL
		if iss == "" {
			iss = is.srv.URL
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": is.srv.URL + "/jwks"})
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if is.oidcOnly {
			http.NotFound(w, r)
			return
		}
		meta(w, r)
	})
	mux.HandleFunc("GET /.well-known/openid-configuration", meta)
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		if is.raw != nil {
			_, _ = w.Write(is.raw)
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: is.keys})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) publish(keys ...jose.JSONWebKey) {
	is.mu.Lock()
	is.keys = keys
	is.mu.Unlock()
}

// claims are valid access-token claims at now for client.
func claims(iss string, now time.Time, client string) map[string]any {
	return map[string]any{
		"iss": iss, "aud": testAudience, "sub": client, "client_id": client,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": "j1", "scope": "properties:read",
	}
}
