// Package oauth verifies OAuth 2.0 JWT access tokens (RFC 9068) as RFC 8725
// advises, against the signing keys an authorization server publishes
// (docs/contract.md section 12). JOSE itself (JWS parsing, signature
// verification, JWK decoding, claim checks) is github.com/go-jose/go-jose/v4;
// this package decides which keys to trust, when to fetch them, and what a
// token must carry.
package oauth

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultMinRefetch is the least time between two fetches of the key
	// set: a token with an unknown kid causes at most one fetch per period,
	// whatever partners send (docs/contract.md section 12).
	DefaultMinRefetch = 30 * time.Second
	// DefaultMaxKeyAge is how long a fetched key set is used before the
	// next token refreshes it, so keys removed at the issuer stop working
	// even when no token names an unknown kid.
	DefaultMaxKeyAge = 10 * time.Minute
	// DefaultFetchTimeout bounds one fetch: discovery and JWKS together.
	DefaultFetchTimeout = 5 * time.Second
	// DefaultMaxWait is the longest a token waits for a key fetch under
	// way before it is answered 503 with Retry-After, and the longest New
	// waits for the start's fetch (docs/contract.md section 17).
	DefaultMaxWait = time.Second
	// MaxTokenSize is the largest token examined at all: RFC 9068 tokens
	// are a few hundred bytes to a couple of kilobytes; anything larger is
	// refused before it is decoded, so a huge header costs no crypto.
	MaxTokenSize = 8 << 10
	// Leeway is the clock skew allowed on exp, nbf and iat.
	Leeway = 60 * time.Second
)

// maxDocumentSize bounds a discovery document or JWKS read from the issuer.
const maxDocumentSize = 1 << 20

// Config configures a Verifier.
type Config struct {
	// Issuer is the authorization server's issuer identifier (EDGE_OAUTH_ISSUER):
	// the iss every token must carry exactly, and the base of discovery.
	// Required: an absolute http or https URL without query or fragment.
	Issuer string
	// Audience is this deployment's resource identifier (EDGE_OAUTH_AUDIENCE):
	// every token's aud must contain it. Required.
	Audience string
	// JWKSHosts are the hosts besides the issuer's that the jwks_uri may
	// name (EDGE_OAUTH_JWKS_HOSTS): host names or IP addresses, no port.
	// Nil or empty: only the issuer's host.
	JWKSHosts []string
	// HTTPClient fetches the discovery document and the JWKS, with the
	// verifier's redirect policy in place of its CheckRedirect. Nil means a
	// client of its own (FetchTimeout bounds each fetch).
	HTTPClient *http.Client
	// Now is the clock for claim checks and fetch pacing. Nil means time.Now.
	Now func() time.Time
	// Logger receives key fetch outcomes (never a token). Nil discards.
	Logger *slog.Logger
	// MinRefetch, MaxKeyAge, FetchTimeout and MaxWait replace
	// DefaultMinRefetch, DefaultMaxKeyAge, DefaultFetchTimeout and
	// DefaultMaxWait, which say what each bounds. Zero means the default.
	MinRefetch, MaxKeyAge, FetchTimeout, MaxWait time.Duration
	// After is the timer of MaxWait, as time.After: tests inject one they
	// fire themselves. Nil means time.After.
	After func(time.Duration) <-chan time.Time
}

// Validate checks the settings that must be right before the edge starts.
func (c Config) Validate() error {
	var errs []error
	if err := checkURL(c.Issuer); err != nil {
		errs = append(errs, fmt.Errorf("issuer: %w", err))
	}
	if err := checkURL(c.Audience); err != nil {
		errs = append(errs, fmt.Errorf("audience: %w", err))
	}
	for _, h := range c.JWKSHosts {
		if err := checkHost(h); err != nil {
			errs = append(errs, fmt.Errorf("JWKS host %q: %w", clip(h), err))
		}
	}
	return errors.Join(errs...)
}

// ParseHosts reads a comma-separated list of hosts (EDGE_OAUTH_JWKS_HOSTS)
// for Config.JWKSHosts: empty gives nil; blanks around entries are ignored;
// an entry with a scheme, port or path is an error naming it.
func ParseHosts(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var hosts []string
	var errs []error
	for h := range strings.SplitSeq(s, ",") {
		h = strings.TrimSpace(h)
		if err := checkHost(h); err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", clip(h), err))
			continue
		}
		hosts = append(hosts, h)
	}
	return hosts, errors.Join(errs...)
}

// checkHost accepts a bare host name or IP address (IPv6 with or without
// brackets): what a URL's Hostname() gives.
func checkHost(h string) error {
	u, err := url.Parse("https://" + h)
	bad := err != nil || h == "" || u.Host != h || u.Port() != "" || u.Path != "" || u.User != nil
	if bad && net.ParseIP(h) == nil { // a bare IPv6 address is not bad
		return errors.New("want a host name or IP address without scheme, port or path")
	}
	return nil
}

// normHost is a host as compared: lower case, without IPv6 brackets.
func normHost(h string) string { return strings.ToLower(strings.Trim(h, "[]")) }

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an absolute http or https URL")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("want a URL without query, fragment or user information")
	}
	return nil
}

// Token is what the edge learns from a verified access token. It never
// holds the token itself.
type Token struct {
	// ClientID is the token's client_id claim, else azp, else sub: the
	// client whose key-file record the token acts as.
	ClientID string
	// Expiry is the token's exp.
	Expiry time.Time
	scopes []string
}

// HasScope reports whether the token's scope claim lists scope.
func (t *Token) HasScope(scope string) bool { return slices.Contains(t.scopes, scope) }

// Kind classifies a verification failure.
type Kind int

const (
	// Invalid: malformed, badly signed, wrong issuer or audience, not yet
	// valid, of an unknown key while the key set is fresh (401
	// INVALID_ACCESS_TOKEN).
	Invalid Kind = iota + 1
	// Expired: a genuine token past exp plus leeway (401 ACCESS_TOKEN_EXPIRED).
	Expired
	// Unavailable: no key could be had from the issuer to verify the token;
	// the token is not at fault (503 with Retry-After).
	Unavailable
)

// Error is a refused token. Reason is for logs: it describes the check that
// failed and never quotes the token.
type Error struct {
	Kind   Kind
	Reason string
	// RetryAfter is when a new key fetch may be tried (Unavailable only).
	RetryAfter time.Duration
	// ClientID is the client of an Expired token, whose signature did
	// verify: the edge names its record in the access log (docs/contract.md
	// section 17). Empty for every other failure.
	ClientID string
}

func (e *Error) Error() string { return "access token refused: " + e.Reason }

// refusedError is an issuer's answer the key-fetch policy refuses (a redirect
// to another origin, a jwks_uri off the allowed hosts or over http) rather
// than an issuer out of reach: a token no cached key verifies is then Invalid
// (401), not Unavailable, since a 503 would invite the attacker to retry.
type refusedError struct{ reason string }

func (e *refusedError) Error() string { return e.reason }

func refused(format string, args ...any) error {
	return &refusedError{reason: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *Error {
	return &Error{Kind: Invalid, Reason: fmt.Sprintf(format, args...)}
}
