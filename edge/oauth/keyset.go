package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// allowedAlgs are the only signature algorithms accepted (docs/contract.md
// section 12): asymmetric, so the public JWKS can never be used as a MAC
// secret, and "none" is impossible.
var allowedAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}

// minRSABits refuses RSA keys too short to trust (RFC 7518 section 3.3).
const minRSABits = 2048

// keySet is one fetched JWKS, reduced to the keys a token may be verified
// with. Immutable once built.
type keySet struct {
	keys []jose.JSONWebKey
}

// candidates returns the keys that may verify a token of alg with kid: the
// kid must match when the token names one; the key's type must fit alg, and
// its own alg, when published, must agree (RFC 8725 section 3.1). known
// reports whether the token names a kid that is in the set, fit or not.
func (s *keySet) candidates(kid string, alg jose.SignatureAlgorithm) (out []jose.JSONWebKey, known bool) {
	if s == nil {
		return nil, false
	}
	for _, k := range s.keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		known = kid != ""
		if (k.Algorithm == "" || k.Algorithm == string(alg)) && fits(k.Key, alg) {
			out = append(out, k)
		}
	}
	return out, known
}

// fits reports whether key is of the type alg signs with.
func fits(key any, alg jose.SignatureAlgorithm) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return alg == jose.RS256 || alg == jose.PS256
	case *ecdsa.PublicKey:
		return alg == jose.ES256 && k.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	}
	return false
}

// parseJWKS decodes a JWKS document with go-jose, keeping only public
// signature keys of the allowed types. Keys it cannot use (another kty,
// use "enc", a short RSA modulus, a malformed entry) are skipped, not fatal:
// an issuer may publish keys for other purposes beside its signing keys.
func parseJWKS(data []byte) (*keySet, int, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, 0, errors.New("JWKS is not a JSON object with a keys list")
	}
	set := &keySet{}
	skipped := 0
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil || !k.Valid() {
			skipped++
			continue
		}
		if !k.IsPublic() {
			k = k.Public() // an issuer publishing private keys is misconfigured; use the public half only
		}
		rk, isRSA := k.Key.(*rsa.PublicKey)
		if k.Use != "" && k.Use != "sig" || isRSA && rk.N.BitLen() < minRSABits ||
			!slices.ContainsFunc(allowedAlgs, func(alg jose.SignatureAlgorithm) bool { return fits(k.Key, alg) }) {
			skipped++
			continue
		}
		set.keys = append(set.keys, k)
	}
	return set, skipped, nil
}

// discover finds the issuer's jwks_uri: first the RFC 8414 document
// (/.well-known/oauth-authorization-server inserted before the issuer's
// path), then the OpenID Connect Discovery one (appended to the issuer).
// The document's issuer must equal the configured one (RFC 8414 section
// 3.3), or a misrouted document could hand over another server's keys.
func (v *Verifier) discover(ctx context.Context) (string, error) {
	u, _ := url.Parse(v.cfg.Issuer) // New's Validate checked it
	path := strings.TrimSuffix(u.Path, "/")
	rfc8414 := *u
	rfc8414.Path = "/.well-known/oauth-authorization-server" + path
	oidc := *u
	oidc.Path = path + "/.well-known/openid-configuration"
	var errs []error
	for _, loc := range []string{rfc8414.String(), oidc.String()} {
		if ctx.Err() != nil {
			break // the fetch's time is up: no second request to a hanging issuer
		}
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		data, err := v.get(ctx, loc)
		if err == nil {
			if json.Unmarshal(data, &doc) != nil {
				err = errors.New("not a JSON object")
			} else if doc.Issuer != v.cfg.Issuer {
				err = fmt.Errorf("its issuer %q is not %q", clip(doc.Issuer), v.cfg.Issuer)
			} else if checkURL(doc.JWKSURI) != nil {
				err = errors.New("jwks_uri is missing or not an absolute http(s) URL")
			} else {
				err = v.checkJWKSURI(u, doc.JWKSURI)
			}
		}
		if err == nil {
			return doc.JWKSURI, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", loc, err))
	}
	if len(errs) == 0 {
		errs = append(errs, ctx.Err())
	}
	return "", errors.Join(errs...)
}

// checkJWKSURI applies docs/contract.md section 17 to a discovered jwks_uri,
// so that a discovery document cannot send the key fetch anywhere it likes:
// https (http only on loopback with an http issuer), on the issuer's host or
// one of Config.JWKSHosts.
func (v *Verifier) checkJWKSURI(issuer *url.URL, raw string) error {
	j, err := url.Parse(raw)
	if err != nil {
		return refused("jwks_uri %q does not parse", clip(raw))
	}
	switch {
	case j.Scheme == "https":
	case j.Scheme == "http" && issuer.Scheme == "http" && isLoopback(j.Hostname()):
	default:
		v.log.Warn("oauth: jwks_uri refused: not https", "jwks_uri", clip(raw), "issuer", v.cfg.Issuer)
		return refused("jwks_uri %s refused: not https (http only on loopback with an http issuer)", clip(raw))
	}
	host := normHost(j.Hostname())
	if host == normHost(issuer.Hostname()) || slices.ContainsFunc(v.cfg.JWKSHosts, func(h string) bool { return normHost(h) == host }) {
		return nil
	}
	v.log.Warn("oauth: jwks_uri refused: host neither the issuer's nor in EDGE_OAUTH_JWKS_HOSTS",
		"jwks_uri", clip(raw), "issuer", v.cfg.Issuer)
	return refused("jwks_uri %s refused: its host is neither the issuer's nor one of EDGE_OAUTH_JWKS_HOSTS", clip(raw))
}

// isLoopback reports whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	return strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback() // a nil IP is no loopback
}

// maxRedirects bounds the same-origin redirects of one fetch.
const maxRedirects = 5

// checkRedirect is the CheckRedirect of the verifier's client: a fetch
// follows redirects only within its origin (scheme, host and port), where
// net/http's default would follow any, https to http included: the
// forged-key attack of docs/contract.md section 17.
func (v *Verifier) checkRedirect(req *http.Request, via []*http.Request) error {
	from := via[len(via)-1].URL
	if !sameOrigin(from, req.URL) {
		v.log.Warn("oauth: redirect to another origin refused", "from", clip(from.String()),
			"to", clip(req.URL.String()), "issuer", v.cfg.Issuer)
		return refused("redirect from %s to %s refused: another origin", clip(from.String()), clip(req.URL.String()))
	}
	if len(via) >= maxRedirects {
		return refused("more than %d redirects from %s", maxRedirects, clip(via[0].URL.String()))
	}
	return nil
}

// sameOrigin compares scheme, host and port (RFC 6454), default ports
// filled in.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && normHost(a.Hostname()) == normHost(b.Hostname()) &&
		portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// get fetches one document from the issuer: 200 only, bounded in size.
func (v *Verifier) get(ctx context.Context, loc string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxDocumentSize+1)) // read, whatever the status, so the connection is reused
	switch {
	case res.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("status %d", res.StatusCode)
	case err != nil:
		return nil, err
	case len(data) > maxDocumentSize:
		return nil, fmt.Errorf("larger than %d bytes", maxDocumentSize)
	}
	return data, nil
}

// clip shortens a value from the issuer for a log message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
