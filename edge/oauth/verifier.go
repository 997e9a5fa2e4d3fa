package oauth

import (
	"cmp"
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
// safe for concurrent use. Keys are fetched at New, then when a token names a
// key the set lacks (at most once per MinRefetch after the first such fetch)
// or the set is older than MaxKeyAge (docs/oauth.md, "Signing keys: fetching,
// caching, outages"). One fetch at a time runs in its own goroutine, bounded
// by FetchTimeout and New's context; a token, and New, wait for it at most
// MaxWait, so a hanging issuer holds no request longer.
type Verifier struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	ctx    context.Context // New's: ends every fetch

	keys    atomic.Pointer[keySet] // nil until a fetch succeeded
	fetches atomic.Int64

	mu        sync.Mutex // guards the fields below
	jwksURI   string     // from discovery; "" until discovery succeeded
	inflight  *fetchCall // the fetch under way; nil for none
	nextFetch time.Time  // the earliest start of the next paced fetch; zero before the first
	down      bool       // the last fetch that ended failed, not refused by policy (refusedError)
	fetchedAt time.Time  // of the key set in force
}

// fetchCall is one fetch: done is closed when it has ended and its outcome
// is in the Verifier.
type fetchCall struct {
	done     chan struct{}
	deadline time.Time // when it gives up (Config.Now's clock)
}

// New checks cfg and starts fetching the issuer's keys, waiting at most
// MaxWait for them (docs/contract.md section 17). Only a bad cfg is an error:
// an issuer out of reach is logged, and tokens are answered 503 with
// Retry-After until a later fetch succeeds. ctx bounds the Verifier's life:
// once it ends, no fetch runs (tokens verify with the keys already fetched).
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	// Zero or negative durations take their defaults.
	cfg.MinRefetch = cmp.Or(max(cfg.MinRefetch, 0), DefaultMinRefetch)
	cfg.MaxKeyAge = cmp.Or(max(cfg.MaxKeyAge, 0), DefaultMaxKeyAge)
	cfg.FetchTimeout = cmp.Or(max(cfg.FetchTimeout, 0), DefaultFetchTimeout)
	cfg.MaxWait = cmp.Or(max(cfg.MaxWait, 0), DefaultMaxWait)
	v := &Verifier{cfg: cfg, log: cfg.Logger, ctx: ctx}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	// A copy of the caller's client with the verifier's redirect policy:
	// safe by default, whatever client is passed (docs/contract.md section 17).
	client := *cmp.Or(cfg.HTTPClient, &http.Client{})
	client.CheckRedirect = v.checkRedirect
	v.client = &client
	v.mu.Lock()
	call := v.startLocked(cfg.Now(), false) // the start's: not a refetch
	v.mu.Unlock()
	if call != nil {
		select {
		case <-call.done:
		case <-cfg.After(cfg.MaxWait):
			v.log.Warn("oauth keys not fetched within the start-up wait; fetching in the background",
				"issuer", cfg.Issuer, "wait", cfg.MaxWait.String())
		case <-ctx.Done():
		}
	}
	return v, nil
}

// Fetches returns how many key fetches (discovery included) were started.
func (v *Verifier) Fetches() int64 { return v.fetches.Load() }

// Ready reports whether a key set is in force.
func (v *Verifier) Ready() bool { return v.keys.Load() != nil }

// startLocked starts a fetch in the background and returns it, or returns
// the one under way; nil when none may start (within MinRefetch of the last
// paced one, or the Verifier's context has ended). paced says whether this
// fetch counts toward MinRefetch: all do but the start's. Called with mu.
func (v *Verifier) startLocked(now time.Time, paced bool) *fetchCall {
	if v.inflight != nil {
		return v.inflight
	}
	if v.ctx.Err() != nil || (paced && now.Before(v.nextFetch)) {
		return nil
	}
	if paced {
		v.nextFetch = now.Add(v.cfg.MinRefetch)
	}
	call := &fetchCall{done: make(chan struct{}), deadline: now.Add(v.cfg.FetchTimeout)}
	v.inflight = call
	v.fetches.Add(1)
	go v.run(call, v.jwksURI)
	return call
}

// run is one fetch's goroutine: it ends within FetchTimeout, or when the
// Verifier's context does, whichever is first. It serves every waiting
// request, so no request's context bounds it.
func (v *Verifier) run(call *fetchCall, jwksURI string) {
	ctx, cancel := context.WithTimeout(v.ctx, v.cfg.FetchTimeout)
	defer cancel()
	set, skipped, uri, err := v.fetch(ctx, jwksURI)
	var re *refusedError
	v.mu.Lock()
	v.inflight = nil
	v.down = err != nil && !errors.As(err, &re)
	if err == nil {
		v.jwksURI = uri
		v.keys.Store(set)
		v.fetchedAt = v.cfg.Now()
	}
	v.mu.Unlock()
	close(call.done)
	if err != nil {
		msg := "oauth keys fetch failed; cached keys stay in force" // the issuer cannot be reached; such tokens get 503
		if re != nil {
			msg = "oauth keys fetch refused by policy; cached keys stay in force" // the issuer answered; they get 401
		}
		cached := 0
		if set := v.keys.Load(); set != nil {
			cached = len(set.keys)
		}
		v.log.Warn(msg, "issuer", v.cfg.Issuer, "error", err.Error(), "cached_keys", cached)
		return
	}
	v.log.Info("oauth keys fetched", "issuer", v.cfg.Issuer, "jwks_uri", uri,
		"keys", len(set.keys), "skipped", skipped)
}

// fetch discovers the jwks_uri (unless known) and reads the JWKS.
func (v *Verifier) fetch(ctx context.Context, jwksURI string) (*keySet, int, string, error) {
	if jwksURI == "" {
		uri, err := v.discover(ctx)
		if err != nil {
			return nil, 0, "", err
		}
		jwksURI = uri
	}
	data, err := v.get(ctx, jwksURI)
	if err != nil {
		return nil, 0, "", err
	}
	set, skipped, err := parseJWKS(data)
	return set, skipped, jwksURI, err
}

// refreshIfStale starts a fetch, without waiting for it, when the key set
// in force is older than MaxKeyAge: the current keys serve meanwhile.
func (v *Verifier) refreshIfStale(now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keys.Load() != nil && now.Sub(v.fetchedAt) >= v.cfg.MaxKeyAge {
		v.startLocked(now, true)
	}
}

// waitHookKey carries the function BeforeWait registers.
type waitHookKey struct{}

// BeforeWait returns a context carrying f: Verify calls f once, in its
// caller's goroutine, just before it waits for a key fetch, and never when
// it does not wait. The edge gives up its load-shedding slot there, so
// requests waiting on a slow issuer hold no one else up (docs/contract.md
// section 17).
func BeforeWait(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, waitHookKey{}, f)
}

// awaitKeys is the unknown-kid path: it starts a fetch if one may start,
// or joins the one under way, and waits for it at most MaxWait. It reports
// an *Error (Unavailable) when the wait ran out or the request ended first.
func (v *Verifier) awaitKeys(ctx context.Context, now time.Time) *Error {
	v.mu.Lock()
	call := v.startLocked(now, true)
	v.mu.Unlock()
	if call == nil {
		return nil
	}
	select {
	case <-call.done:
		return nil // its outcome is in v
	default:
	}
	if f, ok := ctx.Value(waitHookKey{}).(func()); ok {
		f()
	}
	select {
	case <-call.done:
		return nil
	case <-v.cfg.After(v.cfg.MaxWait):
	case <-ctx.Done():
	}
	return &Error{Kind: Unavailable, RetryAfter: max(call.deadline.Sub(v.cfg.Now()), time.Second),
		Reason: "the signing keys did not arrive from the issuer within " + v.cfg.MaxWait.String()}
}

// unavailable reports, after a fetch was due or attempted, whether the issuer
// could not supply keys: then a token no cached key verifies is not the
// partner's fault. An answer refused by policy (refusedError) is not
// unavailability: the token is then Invalid. It returns when a fetch may be
// tried again.
func (v *Verifier) unavailable(now time.Time) (time.Duration, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.inflight != nil {
		return max(v.inflight.deadline.Sub(now), time.Second), true
	}
	if !v.down {
		return 0, false
	}
	return max(v.nextFetch.Sub(now), time.Second), true
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
	v.refreshIfStale(now)
	alg := jose.SignatureAlgorithm(h.Algorithm)
	keys, known := v.keys.Load().candidates(h.KeyID, alg)
	if len(keys) == 0 && !known {
		// An unknown kid: perhaps a new key (paced, docs/contract.md section 17).
		if err := v.awaitKeys(ctx, now); err != nil {
			return nil, err
		}
		keys, _ = v.keys.Load().candidates(h.KeyID, alg)
	}
	if len(keys) == 0 {
		if wait, down := v.unavailable(v.cfg.Now()); down {
			return nil, &Error{Kind: Unavailable, RetryAfter: wait,
				Reason: "no signing key could be fetched from the issuer"}
		}
		return nil, invalid("no key of the issuer's JWKS matches kid and alg %s", alg)
	}
	var claims jwt.Claims
	var extra extraClaims
	for i := 0; ; i++ {
		if i == len(keys) {
			return nil, invalid("signature does not verify")
		}
		claims, extra = jwt.Claims{}, extraClaims{}
		if tok.Claims(keys[i].Key, &claims, &extra) == nil {
			break
		}
	}
	if claims.Expiry == nil {
		return nil, invalid("no exp claim")
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer,
		AnyAudience: jwt.Audience{v.cfg.Audience}, Time: now}, Leeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		// The signature verified: the client it names is who sent it.
		return nil, &Error{Kind: Expired, Reason: "exp has passed", ClientID: clientOf(claims, extra)}
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("aud does not contain the audience")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, invalid("nbf is in the future")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, invalid("iat is in the future")
	case err != nil:
		return nil, invalid("claims refused: %v", err)
	}
	t := &Token{ClientID: clientOf(claims, extra), Expiry: claims.Expiry.Time()}
	if t.ClientID == "" {
		return nil, invalid("no client_id, azp or sub claim")
	}
	if t.scopes, err = parseScope(extra.Scope); err != nil {
		return nil, invalid("scope: %v", err)
	}
	return t, nil
}

// clientOf is a token's client: client_id, else azp, else sub.
func clientOf(claims jwt.Claims, extra extraClaims) string {
	return cmp.Or(extra.ClientID, extra.AZP, claims.Subject)
}

// typeAllowed: RFC 9068 section 2.1 says at+jwt (application/at+jwt in
// full, case-insensitive, RFC 7515 section 4.1.9); docs/contract.md section 12
// also accepts JWT and no typ, which issuers that predate RFC 9068 send.
// Anything else (an ID token's or a logout token's type) is refused.
func typeAllowed(typ any) bool {
	s, ok := typ.(string)
	s = strings.ToLower(s)
	return typ == nil || ok && (s == "at+jwt" || s == "application/at+jwt" || s == "jwt")
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
	return strings.Fields(s), nil // RFC 6749: space-delimited
}
