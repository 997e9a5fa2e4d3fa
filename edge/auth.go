package edge

import (
	"net/http"
	"strings"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/problem"
)

// KeyStore finds the key record of a presented API key. Lookup must be safe
// for concurrent use and cheap: it runs on every authenticated request. It
// reports false for an unknown key and for a key whose prefix disagrees with
// its record's mode.
type KeyStore interface {
	Lookup(token string) (*keys.Key, bool)
}

const (
	challenge        = `Bearer realm="partner-api"`
	challengeInvalid = `Bearer realm="partner-api", error="invalid_token"`
)

// authenticate refuses a client address past its failed authentications
// (quota.go), then checks the credential (401) and authorises its key
// (403; docs/contract.md sections 2 and 3); the key goes into the request
// state. A failed authentication counts against the address.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var bucket ratelimit.Key // the failed-auth throttle's bucket of the client address
		if s.hasAuthLimit {
			bucket = stateFrom(r.Context()).client.ThrottleKey()
			if s.authThrottled(w, r, bucket) {
				return
			}
		}
		key, err := s.authorise(r)
		if err != nil {
			s.addResourceMetadata(err)
			if s.hasAuthLimit {
				s.authFailed(r, bucket, err)
			}
			s.fail(w, r, err)
			return
		}
		stateFrom(r.Context()).key = key
		next.ServeHTTP(w, r)
	})
}

func (s *server) authorise(r *http.Request) (*keys.Key, error) {
	vs := r.Header["Authorization"]
	if len(vs) == 0 {
		return nil, unauthorized(problem.MissingAuthHeader, challenge,
			"Send the API key as 'Authorization: Bearer <API key>'.")
	}
	token, ok := bearerToken(vs)
	if !ok {
		c := challenge
		if sentBearerToken(vs) { // RFC 6750: say the token was refused
			c = challengeInvalid
		}
		return nil, unauthorized(problem.InvalidAuthHeader, c,
			"The Authorization header must be sent once, as 'Bearer <API key>'.")
	}
	st := stateFrom(r.Context())
	if s.oauth != nil && !keys.HasKeyPrefix(token) { // docs/contract.md section 12: a token
		st.authMethod = authMethodOAuth
		return s.authoriseToken(r, token)
	}
	st.authMethod = authMethodAPIKey
	key, found := (*keys.Key)(nil), false
	if keys.ValidFormat(token) {
		key, found = s.keys.Lookup(token)
	}
	if !found {
		return nil, unauthorized(problem.InvalidAPIKey, challengeInvalid, "The API key is malformed or unknown.")
	}
	st.keyID = key.ID
	if err := s.authoriseKey(r, key); err != nil {
		return nil, err
	}
	return key, nil
}

// authoriseKey is the one authorisation of a key record, whether an API key
// or an access token's client found it: expiry, suspension, brand, scopes,
// test mode (docs/contract.md sections 3 and 12).
func (s *server) authoriseKey(r *http.Request, key *keys.Key) error {
	switch {
	case key.Expired(stateFrom(r.Context()).start):
		return unauthorized(problem.APIKeyExpired, challengeInvalid,
			"The API key expired at "+key.ExpiresAt.UTC().Format(time.RFC3339)+".")
	case key.Suspended:
		return problem.New(problem.APIKeySuspended, "The API key is suspended.")
	case key.Brand != s.cfg.Brand:
		return problem.New(problem.BrandAccessDenied, "The API key is not valid for this brand.")
	case !key.HasScope(keys.ScopePropertiesRead):
		return problem.New(problem.InsufficientScope, "The API key lacks the scope %s.", keys.ScopePropertiesRead)
	case key.Mode == keys.ModeTest && s.catalogs.sandbox == nil:
		return problem.New(problem.TestModeUnavailable, "This deployment does not serve test-mode keys.")
	}
	return nil
}

// bearerToken extracts the token of a single "Bearer <token>" header; the
// scheme is case-insensitive (RFC 9110 section 11.1).
func bearerToken(vs []string) (string, bool) {
	if len(vs) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(vs[0], " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// sentBearerToken reports whether any header carries a Bearer scheme with
// a non-empty token: then a token was sent, even if the header is refused.
// Another scheme, or none, sent no token (RFC 6750 section 3.1).
func sentBearerToken(vs []string) bool {
	for _, v := range vs {
		scheme, token, _ := strings.Cut(v, " ")
		if strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) != "" {
			return true
		}
	}
	return false
}

func unauthorized(code problem.Code, challenge, detail string) *problem.Error {
	return &problem.Error{Code: code, Detail: detail, Header: http.Header{"Www-Authenticate": {challenge}}}
}

// requireScope refuses a key (and, for an access token, the token) without
// scope, the one a route needs besides properties:read: 403
// INSUFFICIENT_SCOPE, with authentication, before the rate limit and the
// request checks (docs/contract.md section 26).
func (s *server) requireScope(scope string) func(http.Handler) http.Handler {
	keyDetail := "The API key lacks the scope " + scope + "."
	tokenDetail := "The access token lacks the scope " + scope + "."
	tokenChallenge := `Bearer error="insufficient_scope", scope="` + scope + `"`
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := stateFrom(r.Context())
			switch {
			case !st.key.HasScope(scope):
				s.fail(w, r, problem.New(problem.InsufficientScope, "%s", keyDetail))
			case st.token != nil && !st.token.HasScope(scope):
				s.fail(w, r, &problem.Error{Code: problem.InsufficientScope, Detail: tokenDetail,
					Header: http.Header{"Www-Authenticate": {tokenChallenge}}})
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}
