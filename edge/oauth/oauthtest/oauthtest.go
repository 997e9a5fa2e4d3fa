// Package oauthtest is a stand-in authorization server for tests over real
// HTTP: key pairs that sign access tokens (Signer) and an issuer publishing
// its metadata and JWKS (Issuer). The tests against a real one
// (oidc-provider) are in edge/oauth_oidc_test.go. Imported by _test.go
// files only.
package oauthtest

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Signer is a freshly made key pair with its kid and algorithm.
type Signer struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// NewSigner makes a key pair for alg (RS256, PS256, ES256 or EdDSA).
func NewSigner(t testing.TB, kid string, alg jose.SignatureAlgorithm) *Signer {
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
	return &Signer{kid: kid, alg: alg, priv: priv}
}

// JWK is the public JWK of s, as an issuer publishes it.
func (s *Signer) JWK() jose.JSONWebKey {
	return jose.JSONWebKey{Key: s.priv.Public(), KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}
}

// Sign makes a compact JWS of claims with header typ (nil: no typ; a
// non-string typ is written as it is, for tests of a malformed header).
func (s *Signer) Sign(t testing.TB, claims map[string]any, typ any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader("kid", s.kid)
	if typ != nil {
		opts = opts.WithHeader(jose.HeaderType, typ)
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

// Issuer serves an authorization server's metadata (RFC 8414 and OpenID
// discovery) and its JWKS over real HTTP, counting JWKS fetches.
type Issuer struct {
	srv *httptest.Server
	// JWKSHits counts the JWKS fetches.
	JWKSHits atomic.Int64

	jwks      atomic.Pointer[[]byte] // the JWKS served
	oidcOnly  atomic.Bool            // serve only OpenID discovery, not RFC 8414
	hanging   atomic.Bool            // a JWKS request answers nothing until it ends
	issuerURL atomic.Pointer[string] // the issuer the metadata names; nil or "": the server's URL
}

// NewIssuer starts an issuer publishing keys; it stops when t ends.
func NewIssuer(t testing.TB, keys ...jose.JSONWebKey) *Issuer {
	t.Helper()
	is := &Issuer{}
	is.Publish(keys...)
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, r *http.Request) {
		iss := is.srv.URL
		if p := is.issuerURL.Load(); p != nil && *p != "" {
			iss = *p
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": is.srv.URL + "/jwks"})
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if is.oidcOnly.Load() {
			http.NotFound(w, r)
			return
		}
		meta(w, r)
	})
	mux.HandleFunc("GET /.well-known/openid-configuration", meta)
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.JWKSHits.Add(1)
		if is.hanging.Load() {
			<-r.Context().Done()
			return
		}
		_, _ = w.Write(*is.jwks.Load())
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// URL is the issuer's base URL (its identifier unless SetIssuerURL).
func (is *Issuer) URL() string { return is.srv.URL }

// Close stops the issuer's server now (an issuer gone down).
func (is *Issuer) Close() { is.srv.Close() }

// Publish replaces the published keys.
func (is *Issuer) Publish(keys ...jose.JSONWebKey) {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	is.jwks.Store(&b)
}

// PublishRaw serves b as the JWKS, whatever it holds.
func (is *Issuer) PublishRaw(b []byte) { is.jwks.Store(&b) }

// SetOIDCOnly makes the issuer answer OpenID discovery only (404 for RFC
// 8414's metadata) when on.
func (is *Issuer) SetOIDCOnly(on bool) { is.oidcOnly.Store(on) }

// SetIssuerURL makes the metadata name iss as the issuer ("": the
// server's own URL).
func (is *Issuer) SetIssuerURL(iss string) { is.issuerURL.Store(&iss) }

// Client is an HTTP client for the issuer's server.
func (is *Issuer) Client() *http.Client { return is.srv.Client() }

// KID is the key id s signs with.
func (s *Signer) KID() string { return s.kid }

// Public is the public half of s's key.
func (s *Signer) Public() crypto.PublicKey { return s.priv.Public() }

// As is s's private key under another kid and algorithm (for tokens that
// name a key the issuer does not publish, or an algorithm the key was not
// made for).
func (s *Signer) As(kid string, alg jose.SignatureAlgorithm) *Signer {
	return &Signer{kid: kid, alg: alg, priv: s.priv}
}

// SetHanging makes JWKS requests answer nothing until they end (the
// client gives up or the issuer closes) when on.
func (is *Issuer) SetHanging(on bool) { is.hanging.Store(on) }

// FromJWK signs with a private JWK's key, kid and algorithm (a key also
// given to a real authorization server).
func FromJWK(key jose.JSONWebKey) *Signer {
	return &Signer{kid: key.KeyID, alg: jose.SignatureAlgorithm(key.Algorithm), priv: key.Key.(crypto.Signer)}
}

// NeverFires is oauth.Config.After for tests whose issuer answers (or
// refuses) at once: a token waits for the fetch under way however long it
// takes, so the outcome never depends on how busy the machine is.
func NeverFires(time.Duration) <-chan time.Time { return nil }
