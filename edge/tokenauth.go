package edge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/problem"
)

// OAuth turns on OAuth 2.0 access tokens beside API keys (docs/contract.md
// section 12).
type OAuth struct {
	// Issuer is the authorization server's issuer URL, listed in the
	// protected-resource metadata. Required.
	Issuer string
	// Audience is this deployment's resource identifier: the metadata's
	// resource, and (scheme and host) the base of its URL. Required.
	Audience string
	// Verifier checks a token and says which client it belongs to. Required.
	Verifier TokenVerifier
	// Clients finds the key-file record of a client. Required.
	Clients ClientStore
}

// TokenVerifier verifies an access token. Errors are *oauth.Error (Invalid,
// Expired or Unavailable); *oauth.Verifier is the implementation.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*oauth.Token, error)
}

// ClientStore finds the key record whose clientId is a token's client
// (keys.Store). Safe for concurrent use and cheap, as KeyStore.Lookup.
type ClientStore interface {
	LookupClient(clientID string) (*keys.Key, bool)
}

// resourceMetadataPath is where the RFC 9728 document of /v1 is served:
// the well-known prefix inserted before the resource identifier's path.
const resourceMetadataPath = "/.well-known/oauth-protected-resource/v1"

// Authentication methods, as logged (auth_method) and traced
// (partner_edge.auth.method).
const (
	authMethodAPIKey = "api_key"
	authMethodOAuth  = "oauth"
)

// oauthState is what NewServer derives from Config.OAuth once.
type oauthState struct {
	cfg         OAuth
	metadataURL string // absolute URL of the RFC 9728 document
	metadata    []byte // the document, encoded once
	// challenge401 is appended to every 401's WWW-Authenticate.
	challenge401 string
}

// newOAuthState builds the metadata and its URL, from the audience's scheme
// and host (what partners' tokens name), never from the caller's Host
// header (RFC 9728 section 3.3).
func newOAuthState(cfg *OAuth, docsURL string) *oauthState {
	if cfg == nil {
		return nil
	}
	u, err := url.Parse(cfg.Audience)
	if err != nil || u.Host == "" {
		// cmd/edge validated it (oauth.Config.Validate); a bad one here
		// gives a URL that plainly names no real host.
		u = &url.URL{Scheme: "https", Host: "invalid"}
	}
	st := &oauthState{cfg: *cfg,
		metadataURL: (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: resourceMetadataPath}).String()}
	st.challenge401 = `, resource_metadata="` + st.metadataURL + `"`
	st.metadata, _ = json.Marshal(struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceDocumentation  string   `json:"resource_documentation"`
	}{cfg.Audience, []string{cfg.Issuer}, []string{keys.ScopePropertiesRead, keys.ScopeWebhooksManage}, []string{"header"}, docsURL})
	return st
}

// handleResourceMetadata answers the RFC 9728 protected-resource metadata:
// unauthenticated, never rate-limited, the same for everyone.
func (s *server) handleResourceMetadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.oauth.metadata)
	})
}

// insufficientScopeChallenge is RFC 6750 section 3.1's answer to a token
// lacking the scope the routes need.
const insufficientScopeChallenge = `Bearer error="insufficient_scope", scope="` + keys.ScopePropertiesRead + `"`

// authoriseToken identifies the client of an access token and returns its
// key-file record, then authorised as an API key is. The token itself goes
// nowhere: not into errors, logs or traces. A token waiting for a key fetch
// gives up its shedding slot meanwhile (oauth.BeforeWait; docs/contract.md
// section 17); a verified one takes a slot again or is shed.
func (s *server) authoriseToken(r *http.Request, token string) (*keys.Key, error) {
	st := stateFrom(r.Context())
	t, err := s.oauth.cfg.Verifier.Verify(oauth.BeforeWait(r.Context(), st.slot.release), token)
	if err == nil && !st.slot.reacquire() {
		return nil, s.shedError(r)
	}
	if err != nil {
		var oe *oauth.Error
		errors.As(err, &oe)
		switch {
		case oe != nil && oe.Kind == oauth.Expired:
			// A verified signature: the access line names the record of
			// its client, as for every identified refusal
			// (docs/contract.md section 17).
			if key, ok := s.oauth.cfg.Clients.LookupClient(oe.ClientID); ok && oe.ClientID != "" {
				st.keyID = key.ID
			}
			return nil, withCause(unauthorized(problem.AccessTokenExpired, challengeInvalid,
				"The access token has expired. Get a new one from the authorization server."), err)
		case oe != nil && oe.Kind == oauth.Unavailable:
			return nil, &problem.Error{Code: problem.ServiceUnavailable, RetryAfter: oe.RetryAfter, Err: err,
				Detail: "The signing keys of the authorization server cannot be had at the moment. Retry after the number of seconds in Retry-After."}
		}
		return nil, withCause(unauthorized(problem.InvalidAccessToken, challengeInvalid,
			"The access token is malformed, not signed by the authorization server, or not issued for this API."), err)
	}
	key, ok := s.oauth.cfg.Clients.LookupClient(t.ClientID)
	if !ok {
		return nil, withCause(unauthorized(problem.InvalidAccessToken, challengeInvalid,
			"The access token's client is not registered with this API."), errors.New("access token of a client without a key-file record"))
	}
	st.keyID, st.token = key.ID, t
	if err := s.authoriseKey(r, key); err != nil {
		return nil, err
	}
	if !t.HasScope(keys.ScopePropertiesRead) {
		return nil, &problem.Error{Code: problem.InsufficientScope,
			Detail: "The access token lacks the scope " + keys.ScopePropertiesRead + ".",
			Header: http.Header{"Www-Authenticate": {insufficientScopeChallenge}}}
	}
	return key, nil
}

func withCause(pe *problem.Error, err error) *problem.Error {
	pe.Err = err
	return pe
}

// addResourceMetadata adds resource_metadata to a 401's challenge while
// tokens are on (RFC 9728 section 5.1).
func (s *server) addResourceMetadata(err error) {
	var pe *problem.Error
	if s.oauth == nil || !errors.As(err, &pe) || pe.Status() != http.StatusUnauthorized {
		return
	}
	if c := pe.Header.Get("Www-Authenticate"); c != "" {
		pe.Header = http.Header{"Www-Authenticate": {c + s.oauth.challenge401}}
	}
}

// NewOAuth turns access tokens on (docs/contract.md section 12) for cfg's
// issuer and audience, with clients found in clients. The issuer's keys are
// fetched now, waiting at most 1 s, then in the background until ctx ends;
// an unreachable issuer is logged as a warning and does not stop the edge
// (tokens get 503 until a fetch succeeds).
func NewOAuth(ctx context.Context, cfg oauth.Config, clients ClientStore) (*OAuth, error) {
	v, err := oauth.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if !v.Ready() && cfg.Logger != nil {
		cfg.Logger.Warn("oauth: no signing keys yet; access tokens get 503 until the issuer answers",
			"issuer", cfg.Issuer)
	}
	return &OAuth{Issuer: cfg.Issuer, Audience: cfg.Audience, Verifier: v, Clients: clients}, nil
}
