package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

func unavailableAfter(t *testing.T, err error) time.Duration {
	t.Helper()
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.Unavailable {
		t.Fatalf("got %v, want Unavailable", err)
	}
	return oe.RetryAfter
}

// TestUnknownKidRefetchAtMostEvery30s: whatever tokens arrive, the JWKS is
// fetched at most once per 30 s of the injected clock, and a new key is
// picked up by the first fetch allowed. The fetch at start does not count:
// the first unknown kid fetches at once (docs/contract.md section 17).
func TestUnknownKidRefetchAtMostEvery30s(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	iss := s.is.URL()
	if s.is.JWKSHits.Load() != 1 {
		t.Fatalf("no fetch at start")
	}
	for i := range 200 { // random kids, up to 29 s after the first one's fetch
		if i == 100 {
			s.clk.Advance(29 * time.Second)
		}
		sg := oauthtest.NewSigner(t, fmt.Sprintf("random-%d", i), jose.ES256)
		if _, err := s.v.Verify(ctx, sg.Sign(t, claims(iss, s.clk.Now(), "c"), nil)); kindOf(err) != oauth.Invalid {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if got := s.is.JWKSHits.Load(); got != 2 {
		t.Fatalf("JWKS fetched %d times within 30 s, want 2 (start, first unknown kid)", got)
	}
	// The issuer rotates in a new key; 30 s have passed: one fetch takes it.
	rotated := oauthtest.NewSigner(t, "k-rotated", jose.RS256)
	s.is.Publish(rotated.JWK(), s.signers[jose.RS256].JWK())
	s.clk.Advance(time.Second)
	for range 50 {
		if _, err := s.v.Verify(ctx, rotated.Sign(t, claims(iss, s.clk.Now(), "c"), "at+jwt")); err != nil {
			t.Fatalf("rotated key: %v", err)
		}
	}
	if got := s.is.JWKSHits.Load(); got != 3 {
		t.Fatalf("JWKS fetched %d times, want 3", got)
	}
	if got := s.v.Fetches(); got != 3 {
		t.Errorf("Fetches() = %d, want 3", got)
	}
}

// TestRemovedKeysStopAtNextFetch: a key that leaves the JWKS is refused
// once a fetch has happened: one caused by an unknown kid, or by the key
// set's age when no unknown kid comes.
func TestRemovedKeysStopAtNextFetch(t *testing.T) {
	for _, trigger := range []string{"unknown kid", "age"} {
		t.Run(trigger, func(t *testing.T) {
			s := newSetup(t)
			ctx := context.Background()
			iss := s.is.URL()
			old := s.signers[jose.RS256]
			if _, err := s.v.Verify(ctx, old.Sign(t, claims(iss, s.clk.Now(), "c"), nil)); err != nil {
				t.Fatal(err)
			}
			s.is.Publish(s.signers[jose.ES256].JWK())
			switch trigger {
			case "unknown kid":
				s.clk.Advance(30 * time.Second)
				stranger := oauthtest.NewSigner(t, "k-new", jose.ES256)
				_, _ = s.v.Verify(ctx, stranger.Sign(t, claims(iss, s.clk.Now(), "c"), nil))
			case "age":
				s.clk.Advance(oauth.DefaultMaxKeyAge - time.Second)
				if _, err := s.v.Verify(ctx, old.Sign(t, claims(iss, s.clk.Now(), "c"), nil)); err != nil {
					t.Fatalf("before the key set is old: %v", err)
				}
				s.clk.Advance(time.Second)
				// This token triggers the refresh in the background and
				// is verified with the keys in force meanwhile.
				_, _ = s.v.Verify(ctx, old.Sign(t, claims(iss, s.clk.Now(), "c"), nil))
				testkit.Eventually(t, "the background refresh", func() bool {
					_, err := s.v.Verify(ctx, old.Sign(t, claims(iss, s.clk.Now(), "c"), nil))
					return err != nil
				})
			}
			if _, err := s.v.Verify(ctx, old.Sign(t, claims(iss, s.clk.Now(), "c"), nil)); kindOf(err) != oauth.Invalid {
				t.Fatalf("removed key: got %v, want Invalid", err)
			}
			if got := s.is.JWKSHits.Load(); got != 2 {
				t.Errorf("JWKS fetched %d times, want 2", got)
			}
		})
	}
}

// TestIssuerDown: cached keys keep working; a token no cached key can
// verify gets Unavailable with the time until the next fetch may be tried.
func TestIssuerDown(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	iss := s.is.URL()
	known := s.signers[jose.EdDSA]
	s.is.Close()
	s.clk.Advance(45 * time.Second)
	stranger := oauthtest.NewSigner(t, "k-unknown", jose.RS256)
	if got := unavailableAfter(t, func() error {
		_, err := s.v.Verify(ctx, stranger.Sign(t, claims(iss, s.clk.Now(), "c"), "at+jwt"))
		return err
	}()); got != 30*time.Second {
		t.Errorf("RetryAfter %v, want 30s", got)
	}
	s.clk.Advance(10 * time.Second)
	if got := unavailableAfter(t, func() error {
		_, err := s.v.Verify(ctx, stranger.Sign(t, claims(iss, s.clk.Now(), "c"), "at+jwt"))
		return err
	}()); got != 20*time.Second {
		t.Errorf("RetryAfter %v, want 20s", got)
	}
	if _, err := s.v.Verify(ctx, known.Sign(t, claims(iss, s.clk.Now(), "c"), "at+jwt")); err != nil {
		t.Errorf("cached key while the issuer is down: %v", err)
	}
	if got := s.v.Fetches(); got != 2 {
		t.Errorf("fetches %d, want 2 (start, then one failed)", got)
	}
	// A key set past its age is still used while the issuer is down.
	s.clk.Advance(oauth.DefaultMaxKeyAge)
	if _, err := s.v.Verify(ctx, known.Sign(t, claims(iss, s.clk.Now(), "c"), "at+jwt")); err != nil {
		t.Errorf("old cached key while the issuer is down: %v", err)
	}
}

// TestStartWithoutIssuer: the verifier starts; tokens get Unavailable until
// a fetch succeeds, then verify.
func TestStartWithoutIssuer(t *testing.T) {
	clk := newClock()
	sg := oauthtest.NewSigner(t, "k1", jose.ES256)
	down := httptest.NewServer(http.NotFoundHandler())
	is := oauthtest.NewIssuer(t, sg.JWK())
	is.SetIssuerURL(down.URL) // the metadata names another issuer: discovery must fail
	v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: down.URL, Audience: testAudience, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	if v.Ready() {
		t.Fatal("ready without keys")
	}
	if got := unavailableAfter(t, func() error {
		_, err := v.Verify(context.Background(), sg.Sign(t, claims(down.URL, clk.Now(), "c"), nil))
		return err
	}()); got != 30*time.Second {
		t.Errorf("RetryAfter %v", got)
	}
	if v.Fetches() != 2 {
		t.Errorf("fetches %d, want 2 (start, then the first token's at once)", v.Fetches())
	}
}

func TestDiscovery(t *testing.T) {
	sg := oauthtest.NewSigner(t, "k1", jose.ES256)
	for _, c := range []struct {
		name     string
		oidcOnly bool
		claimed  func(*oauthtest.Issuer) string
		ok       bool
	}{
		{"RFC 8414", false, nil, true},
		{"OpenID only", true, nil, true},
		{"issuer mismatch", false, func(is *oauthtest.Issuer) string { return is.URL() + "/evil" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			is := oauthtest.NewIssuer(t, sg.JWK())
			is.SetOIDCOnly(c.oidcOnly)
			if c.claimed != nil {
				is.SetIssuerURL(c.claimed(is))
			}
			v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: is.URL(), Audience: testAudience, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			if v.Ready() != c.ok {
				t.Fatalf("ready %v, want %v", v.Ready(), c.ok)
			}
			_, err = v.Verify(context.Background(), sg.Sign(t, claims(is.URL(), clk.Now(), "c"), nil))
			if c.ok != (err == nil) {
				t.Fatalf("verify: %v", err)
			}
		})
	}
}

func TestJWKSSkipsUnusableKeys(t *testing.T) {
	clk := newClock()
	sg := oauthtest.NewSigner(t, "k1", jose.ES256)
	is := oauthtest.NewIssuer(t)
	good, _ := sg.JWK().MarshalJSON()
	is.PublishRaw([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"k1","alg":"HS256"},{"kty":"nope"},` +
		string(good) + `]}`))
	v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: is.URL(), Audience: testAudience, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), sg.Sign(t, claims(is.URL(), clk.Now(), "c"), nil)); err != nil {
		t.Fatalf("the usable key beside unusable ones: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []oauth.Config{
		{Issuer: "", Audience: testAudience},
		{Issuer: "https://idp.example.com", Audience: "api"},
		{Issuer: "ftp://idp.example.com", Audience: testAudience},
		{Issuer: "https://idp.example.com?x=1", Audience: testAudience},
	} {
		if _, err := oauth.New(context.Background(), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestConcurrentUnknownKidsShareOneFetch: many requests with unknown kids at
// once, once 30 s have passed, cause exactly one fetch; those that arrive
// during it wait for it and see its keys.
func TestConcurrentUnknownKidsShareOneFetch(t *testing.T) {
	s := newSetup(t)
	iss := s.is.URL()
	rotated := oauthtest.NewSigner(t, "k-new", jose.ES256)
	s.is.Publish(rotated.JWK())
	s.clk.Advance(30 * time.Second)
	tokens := make([]string, 40)
	for i := range tokens {
		tokens[i] = rotated.Sign(t, claims(iss, s.clk.Now(), "c"), nil)
	}
	errs := make(chan error, len(tokens))
	for _, tok := range tokens {
		go func() {
			_, err := s.v.Verify(context.Background(), tok)
			errs <- err
		}()
	}
	for range tokens {
		if err := <-errs; err != nil {
			t.Errorf("token of the new key: %v", err)
		}
	}
	if got := s.is.JWKSHits.Load(); got != 2 {
		t.Errorf("JWKS fetched %d times, want 2 (start, then one for all)", got)
	}
}

// TestHTTPSIssuerNeedsHTTPSJWKS: an https issuer whose metadata points at
// an http jwks_uri is not trusted (its keys would travel in clear).
func TestHTTPSIssuerNeedsHTTPSJWKS(t *testing.T) {
	sg := oauthtest.NewSigner(t, "k1", jose.ES256)
	plain := oauthtest.NewIssuer(t, sg.JWK())
	for _, c := range []struct {
		name string
		jwks func(tls *httptest.Server) string
		ok   bool
	}{
		{"https jwks_uri", func(tls *httptest.Server) string { return tls.URL + "/jwks" }, true},
		{"http jwks_uri", func(*httptest.Server) string { return plain.URL() + "/jwks" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tls *httptest.Server
			tls = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/.well-known/oauth-authorization-server":
					_ = json.NewEncoder(w).Encode(map[string]string{"issuer": tls.URL, "jwks_uri": c.jwks(tls)})
				case "/jwks":
					_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{sg.JWK()}})
				default:
					http.NotFound(w, r)
				}
			}))
			defer tls.Close()
			clk := newClock()
			v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: tls.URL, Audience: testAudience,
				Now: clk.Now, HTTPClient: tls.Client()})
			if err != nil {
				t.Fatal(err)
			}
			if v.Ready() != c.ok {
				t.Errorf("ready %v, want %v", v.Ready(), c.ok)
			}
		})
	}
}
