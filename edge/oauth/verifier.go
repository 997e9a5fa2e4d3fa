package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Verifier verifies access tokens of one issuer for one audience. Verify is
// safe for concurrent use. Keys are fetched by New and then only on demand,
// inside Verify: when a token names a key the set lacks, or the set is older
// than MaxKeyAge; never more often than once per MinRefetch, whatever
// tokens arrive. So a Verifier starts no goroutine and needs no stopping.
type Verifier struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger

	keys atomic.Pointer[keySet] // nil until a fetch succeeded

	mu          sync.Mutex // serialises fetches; guards the fields below
	jwksURI     string     // from discovery; "" until discovery succeeded
	lastAttempt time.Time  // of the last discovery or JWKS fetch
	attempted   bool
	lastOK      bool      // the last attempt got a key set
	lastRefused bool      // the last attempt's answer was refused by policy (refusedError)
	fetchedAt   time.Time // of the key set in force
	fetches     atomic.Int64
}

// New checks cfg and fetches the issuer's keys once. Failing to reach the
// issuer is not an error: the edge starts, logs the failure, and answers
// tokens 503 SERVICE_UNAVAILABLE (with Retry-After) until a later fetch
// succeeds; API keys are unaffected. Only a bad cfg is an error.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MinRefetch <= 0 {
		cfg.MinRefetch = DefaultMinRefetch
	}
	if cfg.MaxKeyAge <= 0 {
		cfg.MaxKeyAge = DefaultMaxKeyAge
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	v := &Verifier{cfg: cfg, log: cfg.Logger}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	// A copy of the caller's client with the verifier's redirect policy:
	// safe by default, whatever client is passed (DECISIONS.md section 17).
	client := http.Client{}
	if cfg.HTTPClient != nil {
		client = *cfg.HTTPClient
	}
	client.CheckRedirect = v.checkRedirect
	v.client = &client
	v.refresh(ctx, false)
	return v, nil
}

// Fetches returns how many key fetches (discovery included) were attempted.
func (v *Verifier) Fetches() int64 { return v.fetches.Load() }

// Ready reports whether a key set is in force.
func (v *Verifier) Ready() bool { return v.keys.Load() != nil }

// refresh fetches the key set unless a fetch was attempted less than
// MinRefetch ago. Callers that arrive during a fetch wait for it and then
// use its result. With onlyIfFree, a fetch already under way is not waited
// for (the stale-set refresh: the current keys still serve meanwhile).
func (v *Verifier) refresh(ctx context.Context, onlyIfFree bool) {
	if onlyIfFree {
		if !v.mu.TryLock() {
			return
		}
	} else {
		v.mu.Lock()
	}
	defer v.mu.Unlock()
	now := v.cfg.Now()
	if v.attempted && now.Sub(v.lastAttempt) < v.cfg.MinRefetch {
		return
	}
	v.attempted, v.lastAttempt = true, now
	v.fetches.Add(1)
	// A fetch serves every waiting request, so the one that triggered it
	// going away must not cancel it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.cfg.FetchTimeout)
	defer cancel()
	set, skipped, err := v.fetch(ctx)
	v.lastOK = err == nil
	var re *refusedError
	v.lastRefused = errors.As(err, &re)
	if err != nil {
		v.log.Warn("oauth keys fetch failed; cached keys stay in force", "issuer", v.cfg.Issuer,
			"error", err.Error(), "cached_keys", len(v.keys.Load().list()))
		return
	}
	v.keys.Store(set)
	v.fetchedAt = now
	v.log.Info("oauth keys fetched", "issuer", v.cfg.Issuer, "jwks_uri", v.jwksURI,
		"keys", len(set.keys), "skipped", skipped)
}

// fetch discovers the jwks_uri (until it is known) and reads the JWKS.
func (v *Verifier) fetch(ctx context.Context) (*keySet, int, error) {
	if v.jwksURI == "" {
		uri, err := v.discover(ctx)
		if err != nil {
			return nil, 0, err
		}
		v.jwksURI = uri
	}
	data, err := v.get(ctx, v.jwksURI)
	if err != nil {
		return nil, 0, err
	}
	return parseJWKS(data)
}

// list is the set's keys; nil for no set.
func (s *keySet) list() []jose.JSONWebKey {
	if s == nil {
		return nil
	}
	return s.keys
}

// unavailable reports, after a fetch was due or attempted, whether the issuer
// could not supply keys: then a token no cached key verifies is not the
// partner's fault. An answer refused by policy (refusedError) is not
// unavailability: the token is then Invalid. It returns when a fetch may be tried again.
func (v *Verifier) unavailable() (time.Duration, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lastOK || v.lastRefused {
		return 0, false
	}
	return max(v.lastAttempt.Add(v.cfg.MinRefetch).Sub(v.cfg.Now()), time.Second), true
}

// stale reports whether the key set in force is older than MaxKeyAge (or
// there is none). While a fetch is under way it reports false: that fetch
// is the refresh.
func (v *Verifier) stale(now time.Time) bool {
	if !v.mu.TryLock() {
		return false // a fetch is under way
	}
	defer v.mu.Unlock()
	return v.keys.Load() == nil || now.Sub(v.fetchedAt) >= v.cfg.MaxKeyAge
}

// extraClaims are the RFC 9068 claims go-jose's jwt.Claims lacks.
type extraClaims struct {
	ClientID string          `json:"client_id"`
	AZP      string          `json:"azp"`
	Scope    json.RawMessage `json:"scope"`
}

// Verify checks raw as an access token of this issuer for this audience
// and returns what it says. Failures are *Error: Invalid, Expired or
// Unavailable. The checks run cheapest first: size, then structure and
// header, then the unverified issuer (another issuer's token never causes a
// key fetch), then the signature, then the claims.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Token, error) {
	if len(raw) > MaxTokenSize {
		return nil, invalid("token of %d bytes, more than %d", len(raw), MaxTokenSize)
	}
	if strings.Count(raw, ".") != 2 {
		return nil, invalid("not a JWS in compact serialisation")
	}
	tok, err := jwt.ParseSigned(raw, allowedAlgs)
	if err != nil {
		return nil, invalid("not a JWS signed with RS256, PS256, ES256 or EdDSA")
	}
	if len(tok.Headers) != 1 {
		return nil, invalid("not exactly one signature")
	}
	h := tok.Headers[0]
	if !typeAllowed(h.ExtraHeaders[jose.HeaderType]) {
		return nil, invalid("header typ is not at+jwt, JWT or absent")
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, invalid("payload is not a JSON claims set")
	}
	if unverified.Issuer != v.cfg.Issuer {
		return nil, invalid("iss is not the configured issuer")
	}
	now := v.cfg.Now()
	if v.stale(now) {
		v.refresh(ctx, true)
	}
	alg := jose.SignatureAlgorithm(h.Algorithm)
	keys := v.keys.Load().candidates(h.KeyID, alg)
	if len(keys) == 0 && (h.KeyID == "" || !v.keys.Load().hasKID(h.KeyID)) {
		v.refresh(ctx, false) // an unknown kid: perhaps a new key (paced)
		keys = v.keys.Load().candidates(h.KeyID, alg)
	}
	if len(keys) == 0 {
		if wait, down := v.unavailable(); down {
			return nil, &Error{Kind: Unavailable, RetryAfter: wait,
				Reason: "no signing key could be fetched from the issuer"}
		}
		return nil, invalid("no key of the issuer's JWKS matches kid and alg %s", alg)
	}
	var claims jwt.Claims
	var extra extraClaims
	verified := false
	for _, k := range keys {
		claims, extra = jwt.Claims{}, extraClaims{}
		if tok.Claims(k.Key, &claims, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, invalid("signature does not verify")
	}
	if claims.Expiry == nil {
		return nil, invalid("no exp claim")
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer,
		AnyAudience: jwt.Audience{v.cfg.Audience}, Time: now}, Leeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return nil, &Error{Kind: Expired, Reason: "exp has passed"}
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("aud does not contain the audience")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, invalid("nbf is in the future")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, invalid("iat is in the future")
	case err != nil:
		return nil, invalid("claims refused: %v", err)
	}
	t := &Token{ClientID: extra.ClientID, Expiry: claims.Expiry.Time()}
	if t.ClientID == "" {
		t.ClientID = extra.AZP
	}
	if t.ClientID == "" {
		t.ClientID = claims.Subject
	}
	if t.ClientID == "" {
		return nil, invalid("no client_id, azp or sub claim")
	}
	if t.scopes, err = parseScope(extra.Scope); err != nil {
		return nil, invalid("scope: %v", err)
	}
	return t, nil
}

// typeAllowed: RFC 9068 section 2.1 says at+jwt (application/at+jwt in
// full, case-insensitive, RFC 7515 section 4.1.9); DECISIONS.md section 12
// also accepts JWT and no typ, which issuers that predate RFC 9068 send.
// Anything else (an ID token's or a logout token's type) is refused.
func typeAllowed(typ any) bool {
	if typ == nil {
		return true
	}
	s, ok := typ.(string)
	if !ok {
		return false
	}
	s = strings.ToLower(s)
	return s == "at+jwt" || s == "application/at+jwt" || s == "jwt"
}

// parseScope reads scope: an RFC 6749 space-delimited string; absent means
// no scope.
func parseScope(raw json.RawMessage) ([]string, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("not a string")
	}
	return scopesOf(s), nil
}
