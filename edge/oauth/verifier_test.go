package oauth_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/oauth/oauthtest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// setup is a verifier in front of an issuer publishing one key of each
// allowed algorithm.
type setup struct {
	is      *oauthtest.Issuer
	v       *oauth.Verifier
	clk     *testkit.Clock
	signers map[jose.SignatureAlgorithm]*oauthtest.Signer
}

func newSetup(t testing.TB) *setup {
	t.Helper()
	s := &setup{clk: newClock(), signers: map[jose.SignatureAlgorithm]*oauthtest.Signer{}}
	var jwks []jose.JSONWebKey
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA} {
		s.signers[alg] = oauthtest.NewSigner(t, "k-"+string(alg), alg)
		jwks = append(jwks, s.signers[alg].JWK())
	}
	s.is = oauthtest.NewIssuer(t, jwks...)
	v, err := oauth.New(context.Background(), oauth.Config{After: oauthtest.NeverFires, Issuer: s.is.URL(), Audience: testAudience,
		Now: s.clk.Now, HTTPClient: s.is.Client()})
	if err != nil {
		t.Fatal(err)
	}
	s.v = v
	return s
}

func kindOf(err error) oauth.Kind {
	var oe *oauth.Error
	if errors.As(err, &oe) {
		return oe.Kind
	}
	return 0
}

func TestValidTokensOfEachAlgorithm(t *testing.T) {
	s := newSetup(t)
	for alg, sg := range s.signers {
		for _, typ := range []any{"at+jwt", "application/at+JWT", "JWT", nil} {
			tok, err := s.v.Verify(context.Background(), sg.Sign(t, claims(s.is.URL(), s.clk.Now(), "client-a"), typ))
			if err != nil {
				t.Errorf("%s typ %v: %v", alg, typ, err)
				continue
			}
			if tok.ClientID != "client-a" || !tok.HasScope("properties:read") || tok.HasScope("other") {
				t.Errorf("%s: token %+v", alg, tok)
			}
		}
	}
	if got := s.is.JWKSHits.Load(); got != 1 {
		t.Errorf("JWKS fetched %d times, want 1 (at start)", got)
	}
}

func TestClientIDFallsBackToAzpThenSub(t *testing.T) {
	s := newSetup(t)
	sg := s.signers[jose.ES256]
	c := claims(s.is.URL(), s.clk.Now(), "from-sub")
	delete(c, "client_id")
	c["azp"] = "from-azp"
	tok, err := s.v.Verify(context.Background(), sg.Sign(t, c, "at+jwt"))
	if err != nil || tok.ClientID != "from-azp" {
		t.Fatalf("azp: %+v, %v", tok, err)
	}
	delete(c, "azp")
	tok, err = s.v.Verify(context.Background(), sg.Sign(t, c, "at+jwt"))
	if err != nil || tok.ClientID != "from-sub" {
		t.Fatalf("sub: %+v, %v", tok, err)
	}
	delete(c, "sub")
	if _, err = s.v.Verify(context.Background(), sg.Sign(t, c, "at+jwt")); kindOf(err) != oauth.Invalid {
		t.Fatalf("no client: %v", err)
	}
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestForgedTokensRefused is acceptance 3's unit half: tokens the real
// authorization server will not produce, signed here with fresh keys.
func TestForgedTokensRefused(t *testing.T) {
	s := newSetup(t)
	iss := s.is.URL()
	now := s.clk.Now()
	rs := s.signers[jose.RS256]
	good := rs.Sign(t, claims(iss, now, "client-a"), "at+jwt")
	parts := strings.Split(good, ".")

	// HS256 with the RSA public key (PEM and raw modulus) as the secret.
	der, err := x509.MarshalPKIXPublicKey(rs.Public())
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hs := func(secret []byte) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret},
			(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", rs.KID()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := jwt.Signed(sig).Claims(claims(iss, now, "client-a")).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	stranger := oauthtest.NewSigner(t, "k-stranger", jose.RS256) // unknown kid
	impostor := oauthtest.NewSigner(t, rs.KID(), jose.RS256)     // a known kid, another key
	withClaims := func(edit func(map[string]any)) string {
		c := claims(iss, now, "client-a")
		edit(c)
		return rs.Sign(t, c, "at+jwt")
	}
	modified := parts[0] + "." + b64(func() map[string]any {
		c := claims(iss, now, "client-a")
		c["client_id"] = "client-admin"
		return c
	}()) + "." + parts[2]
	huge := parts[0] + "." + strings.Repeat("A", 1<<20) + "." + parts[2]

	cases := []struct {
		name  string
		token string
		want  oauth.Kind
	}{
		{"alg none", b64(map[string]any{"alg": "none", "typ": "at+jwt", "kid": rs.KID()}) + "." + parts[1] + ".", oauth.Invalid},
		{"alg none with signature", b64(map[string]any{"alg": "none", "kid": rs.KID()}) + "." + parts[1] + "." + parts[2], oauth.Invalid},
		{"HS256 with the PEM public key", hs(pemKey), oauth.Invalid},
		{"HS256 with the DER public key", hs(der), oauth.Invalid},
		{"unknown key", stranger.Sign(t, claims(iss, now, "client-a"), "at+jwt"), oauth.Invalid},
		{"known kid, another key", impostor.Sign(t, claims(iss, now, "client-a"), "at+jwt"), oauth.Invalid},
		{"modified payload", modified, oauth.Invalid},
		{"signature cut off", parts[0] + "." + parts[1] + ".", oauth.Invalid},
		{"ID token typ", rs.Sign(t, claims(iss, now, "client-a"), "id_token+jwt"), oauth.Invalid},
		{"logout token typ", rs.Sign(t, claims(iss, now, "client-a"), "logout+jwt"), oauth.Invalid},
		{"future nbf", withClaims(func(c map[string]any) { c["nbf"] = now.Add(2 * time.Minute).Unix() }), oauth.Invalid},
		{"future iat", withClaims(func(c map[string]any) { c["iat"] = now.Add(2 * time.Minute).Unix() }), oauth.Invalid},
		{"missing aud", withClaims(func(c map[string]any) { delete(c, "aud") }), oauth.Invalid},
		{"other aud", withClaims(func(c map[string]any) { c["aud"] = []string{"https://other.example.com/v1"} }), oauth.Invalid},
		{"other iss", withClaims(func(c map[string]any) { c["iss"] = iss + "/other" }), oauth.Invalid},
		{"missing exp", withClaims(func(c map[string]any) { delete(c, "exp") }), oauth.Invalid},
		{"scope not a string", withClaims(func(c map[string]any) { c["scope"] = []string{"properties:read"} }), oauth.Invalid},
		{"expired", withClaims(func(c map[string]any) { c["exp"] = now.Add(-61 * time.Second).Unix() }), oauth.Expired},
		{"1 MB token", huge, oauth.Invalid},
		{"JWE shape", "a.b.c.d.e", oauth.Invalid},
		{"not a JWT", "opaque-token-value", oauth.Invalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.v.Verify(context.Background(), c.token)
			if kindOf(err) != c.want {
				t.Fatalf("got %v, want kind %d", err, c.want)
			}
			if strings.Contains(err.Error(), c.token) || strings.Contains(err.Error(), parts[1]) {
				t.Errorf("error quotes the token: %v", err)
			}
		})
	}
	// Inside the leeway, nbf and exp still pass.
	if _, err := s.v.Verify(context.Background(), withClaims(func(c map[string]any) {
		c["nbf"] = now.Add(59 * time.Second).Unix()
		c["exp"] = now.Add(-59 * time.Second).Unix()
	})); err != nil {
		t.Errorf("within 60 s of skew: %v", err)
	}
	// The unknown kids above caused one fetch between them: the first
	// after start may fetch at once, the others fall within the 30 s that
	// follow it (docs/contract.md section 17).
	if got := s.is.JWKSHits.Load(); got != 2 {
		t.Errorf("JWKS fetched %d times, want 2", got)
	}
}

// TestHugeTokenBoundedWork: a 1 MB token is refused by its length alone,
// with no decoding (a constant, tiny number of allocations).
func TestHugeTokenBoundedWork(t *testing.T) {
	s := newSetup(t)
	huge := "eyJhbGciOiJSUzI1NiJ9." + strings.Repeat("A", 1<<20) + ".sig"
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := s.v.Verify(context.Background(), huge); kindOf(err) != oauth.Invalid {
			t.Fatal(err)
		}
	})
	if allocs > 5 {
		t.Errorf("%v allocations to refuse a 1 MB token: it was decoded", allocs)
	}
}

func TestAlgorithmMustMatchKey(t *testing.T) {
	s := newSetup(t)
	iss, now := s.is.URL(), s.clk.Now()
	// An ES256 token naming the RSA key's kid: no RSA key fits ES256.
	es := oauthtest.NewSigner(t, s.signers[jose.RS256].KID(), jose.ES256)
	if _, err := s.v.Verify(context.Background(), es.Sign(t, claims(iss, now, "c"), "at+jwt")); kindOf(err) != oauth.Invalid {
		t.Errorf("ES256 on an RSA kid: %v", err)
	}
	// An RS256 token by the key published for PS256 (its JWK alg says PS256).
	ps := s.signers[jose.PS256]
	rsByPS := ps.As(ps.KID(), jose.RS256)
	if _, err := s.v.Verify(context.Background(), rsByPS.Sign(t, claims(iss, now, "c"), "at+jwt")); kindOf(err) != oauth.Invalid {
		t.Errorf("RS256 by a PS256 key: %v", err)
	}
}
